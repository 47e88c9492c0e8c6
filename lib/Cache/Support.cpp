//===- Support.cpp - POSIX helpers for the compile cache ------------------===//

#include "Support.h"

#include "trnrt/File.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

namespace mlir::trn::cache::detail {

std::string errnoText(int err) {
  char buffer[256];
  // GNU strerror_r may return a static string instead of filling `buffer`.
  return strerror_r(err, buffer, sizeof(buffer));
}

bool isVanished(int err) { return err == ENOENT || err == ESTALE; }

bool isOutOfDisk(int err) { return err == ENOSPC || err == EDQUOT; }

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  if (dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

int64_t nowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double nowUnixSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double steadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void sleepSeconds(double seconds) {
  if (seconds > 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

static std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

const std::string &hostName() {
  static const std::string name = [] {
    char buffer[256] = {};
    if (gethostname(buffer, sizeof(buffer) - 1) != 0 || !buffer[0])
      return std::string("unknown-host");
    return std::string(buffer);
  }();
  return name;
}

const std::string &bootId() {
  static const std::string id = [] {
    std::string text;
    if (readFile("/proc/sys/kernel/random/boot_id", text) != 0)
      return std::string();
    return trimmed(text);
  }();
  return id;
}

const std::string &pidNamespace() {
  static const std::string ns = [] {
    char buffer[128] = {};
    ssize_t length = readlink("/proc/self/ns/pid", buffer, sizeof(buffer) - 1);
    return length > 0 ? std::string(buffer, length) : std::string();
  }();
  return ns;
}

std::optional<int64_t> processStartTicks(int64_t pid) {
  if (pid <= 0)
    return std::nullopt;
  std::string text;
  if (readFile("/proc/" + std::to_string(pid) + "/stat", text) != 0)
    return std::nullopt;
  // The command name (field 2) may contain spaces and parentheses: fields
  // are counted after the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string::npos)
    return std::nullopt;
  const char *cursor = text.c_str() + close + 1;
  // Field 3 is the state; a zombie has exited and only waits to be reaped.
  while (*cursor == ' ')
    ++cursor;
  if (*cursor == 'Z' || *cursor == 'X' || *cursor == 'x')
    return std::nullopt;
  for (int field = 3; field < 22; ++field) {
    cursor = std::strchr(cursor, ' ');
    if (!cursor)
      return std::nullopt;
    ++cursor;
  }
  char *end = nullptr;
  long long ticks = std::strtoll(cursor, &end, 10);
  if (end == cursor)
    return std::nullopt;
  return ticks;
}

int64_t selfStartTicks() {
  static std::mutex mutex;
  static pid_t cachedPid = 0;
  static int64_t cachedTicks = 0;
  std::lock_guard<std::mutex> guard(mutex);
  pid_t pid = getpid();
  if (pid != cachedPid) {
    cachedTicks = processStartTicks(pid).value_or(0);
    cachedPid = pid;
  }
  return cachedTicks;
}

std::string randomHex(int bytes) {
  std::vector<unsigned char> buffer(bytes);
  ssize_t got = getrandom(buffer.data(), buffer.size(), 0);
  if (got != static_cast<ssize_t>(buffer.size())) {
    // getrandom cannot fail for small requests on Linux >= 3.17; this is a
    // fallback that still differs between forked children.
    std::random_device device;
    std::mt19937_64 engine(device() ^ (uint64_t(getpid()) << 32) ^
                           uint64_t(steadySeconds() * 1e9));
    for (auto &byte : buffer)
      byte = static_cast<unsigned char>(engine());
  }
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : buffer) {
    hex.push_back(digits[byte >> 4]);
    hex.push_back(digits[byte & 15]);
  }
  return hex;
}

double randomUnit() {
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof(bits), 0) != sizeof(bits))
    bits = static_cast<uint64_t>(steadySeconds() * 1e9) * 0x9e3779b97f4a7c15ull;
  return static_cast<double>(bits >> 11) / 9007199254740992.0;
}

std::string uniqueSuffix() {
  // Dots separate the fields of a temporary name, so the host name (often a
  // dotted FQDN) keeps only characters that cannot be confused with them.
  std::string host;
  for (char c : hostName())
    host.push_back(
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_');
  return host + "." + std::to_string(getpid()) + "." + randomHex(8);
}

/// A failed trnrt read as the cache reports it: errno, or one of our codes.
static int readErrorCode(const trnrt::ReadFailure &failure,
                         const std::string &error, std::string *problem) {
  if (failure.kind == trnrt::ReadFailure::Open ||
      failure.kind == trnrt::ReadFailure::Read)
    return failure.err ? failure.err : EIO;
  if (problem)
    *problem = error;
  return failure.kind == trnrt::ReadFailure::NotRegular ? kNotRegularFile
                                                        : kFileTooLarge;
}

int readFile(const std::string &path, std::string &out, uint64_t maxBytes,
             std::string *problem) {
  return readFileAt(AT_FDCWD, path.c_str(), out, maxBytes, problem);
}

int readFileAt(int dirFd, const char *name, std::string &out, uint64_t maxBytes,
               std::string *problem) {
  std::string error;
  trnrt::ReadFailure failure;
  if (trnrt::readRegularFile(name, maxBytes, out, error, &failure, dirFd))
    return 0;
  return readErrorCode(failure, error, problem);
}

int openRegularFileAt(int dirFd, const char *name, uint64_t maxBytes, int &fd,
                      std::string *problem) {
  std::string error;
  trnrt::ReadFailure failure;
  fd = trnrt::openRegularFile(name, maxBytes, error, &failure, dirFd);
  if (fd >= 0)
    return 0;
  return readErrorCode(failure, error, problem);
}

int writeNewFileAt(int dirFd, const char *name, std::string_view data,
                   bool sync) {
  int fd = openat(dirFd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    return errno;
  size_t written = 0;
  while (written < data.size()) {
    ssize_t put = write(fd, data.data() + written, data.size() - written);
    if (put < 0) {
      if (errno == EINTR)
        continue;
      int err = errno;
      close(fd);
      return err;
    }
    written += static_cast<size_t>(put);
  }
  if (sync && fsync(fd) != 0) {
    int err = errno;
    close(fd);
    return err;
  }
  if (close(fd) != 0)
    return errno;
  return 0;
}

int syncDirectory(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  int err = 0;
  // Some filesystems refuse fsync on a directory; their renames are already
  // as durable as they can be.
  if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
    err = errno;
  close(fd);
  return err;
}

int makeDirectory(const std::string &path) {
  if (mkdir(path.c_str(), 0777) == 0)
    return 0;
  int err = errno;
  struct stat info;
  if (err == EEXIST && stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return 0;
  return err == EEXIST ? ENOTDIR : err;
}

int makeDirectories(const std::string &path) {
  int err = makeDirectory(path);
  if (err != ENOENT)
    return err;
  size_t slash = path.find_last_of('/', path.size() - 2);
  if (slash == std::string::npos || slash == 0)
    return err;
  if (int parentErr = makeDirectories(path.substr(0, slash)))
    return parentErr;
  return makeDirectory(path);
}

std::vector<std::string> listDirectory(const std::string &path, int *error) {
  std::vector<std::string> names;
  if (error)
    *error = 0;
  DIR *dir = opendir(path.c_str());
  if (!dir) {
    if (error && !isVanished(errno))
      *error = errno;
    return names;
  }
  while (struct dirent *entry = readdir(dir)) {
    if (!std::strcmp(entry->d_name, ".") || !std::strcmp(entry->d_name, ".."))
      continue;
    names.emplace_back(entry->d_name);
  }
  closedir(dir);
  return names;
}

int replaceFile(const std::string &dir, const char *name,
                const std::string &content, bool sync) {
  std::string tmpName = std::string(".") + name + "." + uniqueSuffix();
  FileDescriptor dirFd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirFd.valid())
    return errno;
  if (int err = writeNewFileAt(dirFd.get(), tmpName.c_str(), content, sync)) {
    unlinkat(dirFd.get(), tmpName.c_str(), 0);
    return err;
  }
  if (renameat(dirFd.get(), tmpName.c_str(), dirFd.get(), name) != 0) {
    int err = errno;
    unlinkat(dirFd.get(), tmpName.c_str(), 0);
    return err;
  }
  return 0;
}

void removeTree(const std::string &path) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0)
    return;
  if (S_ISDIR(info.st_mode)) {
    for (const std::string &name : listDirectory(path))
      removeTree(joinPath(path, name));
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

int64_t treeSize(const std::string &path) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0)
    return 0;
  if (!S_ISDIR(info.st_mode))
    return S_ISREG(info.st_mode) ? static_cast<int64_t>(info.st_size) : 0;
  int64_t total = 0;
  for (const std::string &name : listDirectory(path))
    total += treeSize(joinPath(path, name));
  return total;
}

FileDescriptor &FileDescriptor::operator=(FileDescriptor &&other) noexcept {
  if (this != &other) {
    if (fd >= 0)
      close(fd);
    fd = other.release();
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (fd >= 0)
    close(fd);
}

bool sameFile(const struct stat &a, const struct stat &b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

} // namespace mlir::trn::cache::detail
