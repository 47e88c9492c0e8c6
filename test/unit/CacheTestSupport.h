//===- CacheTestSupport.h - helpers for the compile-cache tests -*- C++ -*-===//
//
// Scratch directories, keys, fake artifacts and hand-written lock files for
// CacheStoreTest and CacheStressTest. The lock-file format written here is
// the one docs/cache.md documents, so tests can fake owners on other hosts.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_TEST_UNIT_CACHETESTSUPPORT_H
#define TRN_TEST_UNIT_CACHETESTSUPPORT_H

#include "trn/Cache/Cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace trn_cache_test {

using namespace mlir::trn::cache;
using mlir::trn::Hash128;
using mlir::trn::hashBytes;
namespace fs = std::filesystem;

/// A fresh directory under /tmp, removed with everything in it.
class ScratchDir {
public:
  ScratchDir() {
    std::string pattern =
        (fs::temp_directory_path() / "trn-cache-test-XXXXXX").string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    path = mkdtemp(buffer.data());
    chmod(path.c_str(), 0755); // reachable by the unprivileged-open test
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string operator/(const std::string &name) const {
    return path + "/" + name;
  }
  std::string path;
};

inline CacheKey makeKey(const std::string &graph,
                        const std::string &flags = "-O2") {
  return CacheKey{hashBytes(graph), hashBytes(flags)};
}

/// Artifact bytes that depend on `seed` everywhere, so that a mix-up of two
/// entries or a torn write is always visible.
inline std::vector<uint8_t> artifactFor(const std::string &seed,
                                        size_t size = 8192) {
  std::vector<uint8_t> bytes(size);
  Hash128 h = hashBytes(seed);
  uint64_t state = h.high ^ h.low;
  for (size_t i = 0; i < size; ++i) {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    bytes[i] = static_cast<uint8_t>(z ^ (z >> 31));
  }
  return bytes;
}

inline CompileOutput successOutput(const std::string &seed,
                                   size_t size = 8192) {
  CompileOutput output;
  output.artifact = artifactFor(seed, size);
  output.log = "compiled " + seed + "\n";
  output.metadata.flags = {"-O2"};
  output.metadata.normalizedFlags = "opt-level=2";
  output.metadata.target = "trn1";
  output.metadata.graphName = seed;
  output.metadata.compileSeconds = 0.5;
  output.metadata.peakMemoryBytes = 1 << 20;
  return output;
}

inline CompileOutput failureOutput(FailureKind kind,
                                   const std::string &diagnostic) {
  CompileOutput output;
  output.failure = kind;
  output.diagnostic = diagnostic;
  output.log = "log: " + diagnostic + "\n";
  output.metadata.graphName = "failing";
  return output;
}

inline std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

inline std::string thisHost() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

inline std::string thisBootId() {
  return trimmed(readText("/proc/sys/kernel/random/boot_id"));
}

inline std::string thisPidNamespace() {
  char buffer[128] = {};
  ssize_t n = readlink("/proc/self/ns/pid", buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, n) : "";
}

/// Field 22 of /proc/<pid>/stat: the process start time in clock ticks.
inline long long startTicksOf(pid_t pid) {
  std::string stat = readText("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos)
    return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22)
      return std::atoll(field.c_str());
  return 0;
}

struct FakeOwner {
  std::string host = thisHost();
  std::string bootId = thisBootId();
  std::string pidNamespace = thisPidNamespace();
  long long pid = getpid();
  long long startTicks = startTicksOf(getpid());
  std::string nonce = "fake-owner-nonce";
};

/// Writes a lock file as another process would have (docs/cache.md).
inline void writeLock(const std::string &path, const FakeOwner &owner) {
  std::ostringstream json;
  json << "{\"format\":1,\"host\":\"" << owner.host << "\",\"boot_id\":\""
       << owner.bootId << "\",\"pid_ns\":\"" << owner.pidNamespace
       << "\",\"pid\":" << owner.pid << ",\"start_ticks\":" << owner.startTicks
       << ",\"created_unix\":" << time(nullptr) << ",\"nonce\":\""
       << owner.nonce << "\"}\n";
  writeText(path, json.str());
}

/// Sets a file's mtime `secondsAgo` in the past.
inline void backdate(const std::string &path, double secondsAgo) {
  struct timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= static_cast<time_t>(secondsAgo);
  times[1] = times[0];
  utimensat(AT_FDCWD, path.c_str(), times, 0);
}

/// A pid that certainly does not run: a child that has exited and was reaped.
inline pid_t deadPid() {
  pid_t child = fork();
  if (child == 0)
    _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

/// Collects warnings from CacheOptions::warn (thread-safe).
struct Warnings {
  std::mutex mutex;
  std::vector<std::string> messages;
  std::function<void(const std::string &)> sink() {
    return [this](const std::string &message) {
      std::lock_guard<std::mutex> guard(mutex);
      messages.push_back(message);
    };
  }
  size_t count(const std::string &needle) {
    std::lock_guard<std::mutex> guard(mutex);
    size_t n = 0;
    for (const std::string &message : messages)
      n += message.find(needle) != std::string::npos;
    return n;
  }
  std::string all() {
    std::lock_guard<std::mutex> guard(mutex);
    std::string text;
    for (const std::string &message : messages)
      text += message + "\n";
    return text;
  }
};

inline bool fullStress() {
  const char *value = std::getenv("TRN_STRESS_FULL");
  return value && *value && std::string(value) != "0";
}

} // namespace trn_cache_test

#endif // TRN_TEST_UNIT_CACHETESTSUPPORT_H
