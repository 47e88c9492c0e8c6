//===- CacheStoreTest.cpp - the compile-cache store, locks, maintenance --===//
//
// Single-process tests of include/trn/Cache/Cache.h: opening, publishing and
// reading entries, checksums and quarantine, cached failures, the lock
// protocol (stale owners on this host and on others, heartbeats, bounded
// waits, lockless mode) and the maintenance operations. The multi-process and
// crash tests are in CacheStressTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "CacheTestSupport.h"
// The lock mechanics themselves (breakLock, readLock) are internal.
#include "../../lib/Cache/Lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <set>
#include <thread>

using namespace trn_cache_test;

namespace {

class CacheStoreTest : public ::testing::Test {
protected:
  ScratchDir scratch;
  Warnings warnings;

  std::string root() const { return scratch / "cache"; }

  CacheOptions options() {
    CacheOptions o;
    o.root = root();
    o.warn = warnings.sink();
    o.pollSeconds = 0.01;
    // A broken lock takeover fails a test in seconds instead of hanging.
    o.lockWaitSeconds = 5;
    return o;
  }

  static std::string entryDir(Cache &cache, const CacheKey &key) {
    return cache.versionDir() + "/" + key.dirName();
  }
  static std::string lockPath(Cache &cache, const CacheKey &key) {
    return cache.versionDir() + "/locks/" + key.dirName() + ".lock";
  }
  static size_t countNames(const std::string &dir) {
    std::error_code ignored;
    size_t count = 0;
    for (auto it = fs::directory_iterator(dir, ignored);
         it != fs::directory_iterator(); it.increment(ignored))
      ++count;
    return count;
  }
};

std::function<CompileOutput()> counting(std::atomic<int> &compiles,
                                        CompileOutput output,
                                        double sleepSeconds = 0) {
  return [&compiles, output, sleepSeconds] {
    ++compiles;
    if (sleepSeconds > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(sleepSeconds));
    return output;
  };
}

void flipByte(const std::string &path) {
  std::string data = readText(path);
  ASSERT_FALSE(data.empty()) << path;
  data[data.size() / 2] ^= 0x40;
  writeText(path, data);
}

void truncateHalf(const std::string &path) {
  std::string data = readText(path);
  writeText(path, data.substr(0, data.size() / 2));
}

//===----------------------------------------------------------------------===//
// Opening
//===----------------------------------------------------------------------===//

TEST_F(CacheStoreTest, OpenMissingRootWithoutCreateIsAnErrorAndCreatesNothing) {
  CacheOptions o = options();
  o.create = false;
  Result<Cache> cache = Cache::open(o);
  ASSERT_FALSE(cache);
  EXPECT_NE(cache.error.find(root()), std::string::npos) << cache.error;
  EXPECT_NE(cache.error.find("does not exist"), std::string::npos);
  EXPECT_EQ(cache.error.find('\n'), std::string::npos);
  EXPECT_FALSE(fs::exists(root()));
}

TEST_F(CacheStoreTest, OpenCreatesRootMarkerTagAndDirectories) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  std::string marker = readText(root() + "/trn-cache.json");
  EXPECT_NE(marker.find("\"format\": " + std::to_string(kFormatVersion)),
            std::string::npos)
      << marker;
  EXPECT_EQ(readText(root() + "/CACHEDIR.TAG")
                .rfind("Signature: 8a477f597d28d172789f06886806bc55", 0),
            0u);
  EXPECT_EQ(cache->versionDir(),
            root() + "/trncc-" + std::string(compilerVersion()));
  for (const char *dir : {"tmp", "locks", "quarantine"})
    EXPECT_TRUE(fs::is_directory(cache->versionDir() + "/" + dir)) << dir;

  // Reopening for maintenance works and changes nothing.
  CacheOptions o = options();
  o.create = false;
  EXPECT_TRUE(Cache::open(o));
}

TEST_F(CacheStoreTest, OpenRejectsAFile) {
  writeText(root(), "hello\n");
  Result<Cache> cache = Cache::open(options());
  ASSERT_FALSE(cache);
  EXPECT_NE(cache.error.find("is not a directory"), std::string::npos)
      << cache.error;
  EXPECT_NE(cache.error.find(root()), std::string::npos);
}

TEST_F(CacheStoreTest, OpenRejectsAForeignDirectoryAndLeavesItAlone) {
  fs::create_directory(root());
  writeText(root() + "/thesis.tex", "data\n");
  for (bool create : {true, false}) {
    CacheOptions o = options();
    o.create = create;
    Result<Cache> cache = Cache::open(o);
    ASSERT_FALSE(cache);
    EXPECT_NE(cache.error.find("not a trn compile cache"), std::string::npos)
        << cache.error;
    EXPECT_NE(cache.error.find(root()), std::string::npos);
  }
  EXPECT_EQ(countNames(root()), 1u);
  EXPECT_EQ(readText(root() + "/thesis.tex"), "data\n");
}

TEST_F(CacheStoreTest, OpenTakesAFilesystemsHiddenRenamesForNothingForeign) {
  // Two processes writing the marker at once over sshfs or NFS while a third
  // reads it leave the replaced one as .fuse_hidden* / .nfs*: not foreign.
  fs::create_directory(root());
  writeText(root() + "/.fuse_hidden0000000500000001", "{}\n");
  writeText(root() + "/.nfs000000000123", "{}\n");
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  EXPECT_TRUE(fs::exists(root() + "/trn-cache.json"));
}

TEST_F(CacheStoreTest, OpenRejectsANewerFormatAndADamagedMarker) {
  fs::create_directory(root());
  writeText(root() + "/trn-cache.json", "{\"format\": 99}\n");
  Result<Cache> cache = Cache::open(options());
  ASSERT_FALSE(cache);
  EXPECT_NE(cache.error.find("newer trn"), std::string::npos) << cache.error;
  EXPECT_NE(cache.error.find("format 99"), std::string::npos) << cache.error;

  writeText(root() + "/trn-cache.json", "{\"format\": ");
  cache = Cache::open(options());
  ASSERT_FALSE(cache);
  EXPECT_NE(cache.error.find("not a valid trn cache marker"), std::string::npos)
      << cache.error;
}

TEST_F(CacheStoreTest, OpenEmptyDirectoryForMaintenanceCreatesNothing) {
  fs::create_directory(root());
  CacheOptions o = options();
  o.create = false;
  Result<Cache> cache = Cache::open(o);
  ASSERT_TRUE(cache) << cache.error;
  EXPECT_TRUE(cache->list().empty());
  EXPECT_TRUE(cache->locks().empty());
  EXPECT_EQ(cache->verify(false).checked, 0);
  EXPECT_EQ(countNames(root()), 0u);
}

/// Opens the cache as a user who cannot write a 0555 directory: as root, an
/// unprivileged user in a child process. Returns "OPENED read-only: <why>",
/// "OPENED" or the error, or std::nullopt if no such user can be had.
std::optional<std::string> openUnprivileged(const CacheOptions &o) {
  auto describe = [](Result<Cache> &cache) {
    if (!cache)
      return cache.error;
    return cache->readOnly() ? "OPENED read-only: " + cache->readOnlyReason()
                             : std::string("OPENED");
  };
  if (geteuid() != 0) {
    if (access(o.root.c_str(), W_OK) == 0)
      return std::nullopt; // this user can write a 0555 directory
    Result<Cache> cache = Cache::open(o);
    return describe(cache);
  }
  // Root writes anywhere: ask as an unprivileged user, in a child.
  int pipeFds[2];
  if (pipe(pipeFds) != 0)
    return std::nullopt;
  pid_t child = fork();
  if (child == 0) {
    close(pipeFds[0]);
    if (setgid(65534) != 0 || setuid(65534) != 0)
      _exit(3);
    Result<Cache> cache = Cache::open(o);
    std::string text = describe(cache);
    if (write(pipeFds[1], text.data(), text.size()) < 0)
      _exit(4);
    _exit(0);
  }
  close(pipeFds[1]);
  std::string message;
  char buffer[4096];
  ssize_t got;
  while ((got = read(pipeFds[0], buffer, sizeof(buffer))) > 0)
    message.append(buffer, got);
  close(pipeFds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
    return std::nullopt;
  return message;
}

TEST_F(CacheStoreTest, OpenUnwritableDirectoryWithoutACacheIsAnError) {
  std::string dir = scratch / "readonly";
  ASSERT_EQ(mkdir(dir.c_str(), 0555), 0);
  CacheOptions o = options();
  o.root = dir;
  o.warn = nullptr;
  std::optional<std::string> message = openUnprivileged(o);
  if (!message)
    GTEST_SKIP() << "no user here who cannot write a 0555 directory";
  EXPECT_NE(message->find("is read-only (not writable: Permission denied) "
                          "and holds no trn cache"),
            std::string::npos)
      << *message;
  EXPECT_NE(message->find(dir), std::string::npos) << *message;
}

TEST_F(CacheStoreTest, OpenUnwritableCacheIsReadOnly) {
  {
    Result<Cache> cache = Cache::open(options());
    ASSERT_TRUE(cache) << cache.error;
    ASSERT_TRUE(cache->publish(makeKey("ro"), "g", successOutput("ro")));
    EXPECT_FALSE(cache->readOnly());
  }
  ASSERT_EQ(chmod(root().c_str(), 0555), 0);
  std::optional<std::string> message = openUnprivileged(options());
  chmod(root().c_str(), 0755);
  if (!message)
    GTEST_SKIP() << "no user here who cannot write a 0555 directory";
  EXPECT_EQ(*message, "OPENED read-only: not writable: Permission denied");
}

TEST_F(CacheStoreTest, OpenRejectsAHeartbeatNotShorterThanTheLease) {
  CacheOptions o = options();
  o.leaseSeconds = 5;
  o.heartbeatSeconds = 5;
  Result<Cache> cache = Cache::open(o);
  ASSERT_FALSE(cache);
  EXPECT_NE(cache.error.find("shorter than the lease"), std::string::npos)
      << cache.error;
}

TEST_F(CacheStoreTest, ConcurrentOpensOfANewRootAllSucceed) {
  std::vector<std::thread> threads;
  std::atomic<int> opened{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      CacheOptions o = options();
      if (Cache::open(o))
        ++opened;
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(opened, 8);
  EXPECT_EQ(warnings.all(), "");
}

TEST(CacheRootTest, ResolveRootPrefersFlagThenEnvironmentThenDefault) {
  const char *saved = std::getenv("TRN_CACHE_DIR");
  std::string savedValue = saved ? saved : "";
  setenv("TRN_CACHE_DIR", "/from/env", 1);
  EXPECT_EQ(resolveRoot("/from/flag"), "/from/flag");
  EXPECT_EQ(resolveRoot(""), "/from/env");
  setenv("TRN_CACHE_DIR", "", 1);
  EXPECT_EQ(resolveRoot(""), kDefaultRoot);
  unsetenv("TRN_CACHE_DIR");
  EXPECT_EQ(resolveRoot(""), kDefaultRoot);
  if (saved)
    setenv("TRN_CACHE_DIR", savedValue.c_str(), 1);
}

//===----------------------------------------------------------------------===//
// Publishing and reading
//===----------------------------------------------------------------------===//

TEST_F(CacheStoreTest, PublishThenLookupRoundTrips) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("graph-1");
  std::string graph;
  for (int i = 0; i < 200; ++i)
    graph += "%" + std::to_string(i) + " = trn.add %a, %b : tensor<4x4xf32>\n";
  CompileOutput output = successOutput("graph-1");
  int64_t before = time(nullptr);

  Result<Entry> published = cache->publish(key, graph, output);
  ASSERT_TRUE(published) << published.error;
  EXPECT_EQ(published->path, entryDir(*cache, key));
  EXPECT_EQ(published->status, EntryStatus::Done);

  std::optional<Entry> entry = cache->lookup(key);
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->key, key);
  EXPECT_EQ(entry->path, entryDir(*cache, key));
  EXPECT_EQ(entry->status, EntryStatus::Done);
  EXPECT_EQ(entry->failure, FailureKind::None);
  EXPECT_EQ(entry->metadata.flags, output.metadata.flags);
  EXPECT_EQ(entry->metadata.normalizedFlags, "opt-level=2");
  EXPECT_EQ(entry->metadata.target, "trn1");
  EXPECT_EQ(entry->metadata.graphName, "graph-1");
  EXPECT_EQ(entry->metadata.compilerVersion, compilerVersion());
  EXPECT_EQ(entry->metadata.host, thisHost());
  EXPECT_DOUBLE_EQ(entry->metadata.compileSeconds, 0.5);
  EXPECT_EQ(entry->metadata.peakMemoryBytes, 1 << 20);
  EXPECT_GE(entry->metadata.createdUnix, before);
  EXPECT_LE(entry->metadata.createdUnix, time(nullptr));
  EXPECT_EQ(entry->graphBytes, static_cast<int64_t>(graph.size()));
  EXPECT_LT(entry->storedGraphBytes, entry->graphBytes / 4); // zstd
  EXPECT_GT(entry->sizeBytes, static_cast<int64_t>(output.artifact.size()) +
                                  entry->storedGraphBytes);
  EXPECT_GE(entry->lastUsedUnix, before);

  Result<std::vector<uint8_t>> artifact = cache->readArtifact(*entry);
  ASSERT_TRUE(artifact) << artifact.error;
  EXPECT_EQ(*artifact, output.artifact);
  Result<std::string> storedGraph = cache->readGraph(*entry);
  ASSERT_TRUE(storedGraph) << storedGraph.error;
  EXPECT_EQ(*storedGraph, graph);
  Result<std::string> log = cache->readLog(*entry);
  ASSERT_TRUE(log) << log.error;
  EXPECT_EQ(*log, output.log);

  for (const char *file : {"manifest.json", "artifact.bin", "graph.mlir.zst",
                           "flags.json", "compile.log", "last_used"})
    EXPECT_TRUE(fs::is_regular_file(entry->path + "/" + file)) << file;
  EXPECT_EQ(countNames(cache->versionDir() + "/tmp"), 0u);
  EXPECT_FALSE(cache->lookup(makeKey("graph-2")));
  EXPECT_EQ(warnings.all(), "");
}

TEST_F(CacheStoreTest, EmptyArtifactAndGraphRoundTrip) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("");
  CompileOutput output = successOutput("empty", 0);
  output.log.clear();
  ASSERT_TRUE(cache->publish(key, "", output));
  std::optional<Entry> entry = cache->lookup(key);
  ASSERT_TRUE(entry);
  EXPECT_TRUE(cache->readArtifact(*entry)->empty());
  EXPECT_EQ(*cache->readGraph(*entry), "");
  EXPECT_EQ(*cache->readLog(*entry), "");
}

TEST_F(CacheStoreTest, HitRefreshesTheLastUseTimeAtMostOncePerMinute) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("graph-lru");
  ASSERT_TRUE(cache->publish(key, "g", successOutput("graph-lru")));
  std::string lastUsed = entryDir(*cache, key) + "/last_used";

  backdate(lastUsed, 7200);
  std::optional<Entry> entry = cache->lookup(key);
  ASSERT_TRUE(entry);
  EXPECT_GE(entry->lastUsedUnix, time(nullptr) - 5);
  struct stat info;
  ASSERT_EQ(stat(lastUsed.c_str(), &info), 0);
  EXPECT_GE(info.st_mtime, time(nullptr) - 5);

  backdate(lastUsed, 10); // within the throttle: not touched again
  ASSERT_TRUE(cache->lookup(key));
  ASSERT_EQ(stat(lastUsed.c_str(), &info), 0);
  EXPECT_LE(info.st_mtime, time(nullptr) - 9);
}

TEST_F(CacheStoreTest, ReadsVerifyChecksumsAndQuarantineOnMismatch) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  struct Case {
    const char *file;
    std::function<bool(Cache &, const Entry &, std::string &)> read;
  };
  std::vector<Case> cases = {
      {"artifact.bin",
       [](Cache &c, const Entry &e, std::string &error) {
         auto r = c.readArtifact(e);
         error = r.error;
         return bool(r);
       }},
      {"graph.mlir.zst",
       [](Cache &c, const Entry &e, std::string &error) {
         auto r = c.readGraph(e);
         error = r.error;
         return bool(r);
       }},
      {"compile.log", [](Cache &c, const Entry &e, std::string &error) {
         auto r = c.readLog(e);
         error = r.error;
         return bool(r);
       }}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.file);
    CacheKey key = makeKey(std::string("read-") + c.file);
    ASSERT_TRUE(
        cache->publish(key, std::string(1000, 'g'), successOutput(c.file)));
    std::optional<Entry> entry = cache->lookup(key);
    ASSERT_TRUE(entry);
    // Damaged after the lookup: the read itself must notice.
    flipByte(entry->path + "/" + c.file);
    std::string error;
    EXPECT_FALSE(c.read(*cache, *entry, error));
    EXPECT_NE(error.find("corrupt"), std::string::npos) << error;
    EXPECT_NE(error.find("quarantine"), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(entry->path));
    EXPECT_FALSE(cache->lookup(key));
  }
  EXPECT_EQ(warnings.count("corrupt cache entry"), cases.size());
  EXPECT_EQ(countNames(cache->versionDir() + "/quarantine"), cases.size());
}

TEST_F(CacheStoreTest, ReadOfARemovedEntrySaysSo) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("removed");
  ASSERT_TRUE(cache->publish(key, "g", successOutput("removed")));
  std::optional<Entry> entry = cache->lookup(key);
  ASSERT_TRUE(entry);
  ASSERT_EQ(cache->clean(true, -1).removedEntries, 1);
  Result<std::vector<uint8_t>> artifact = cache->readArtifact(*entry);
  ASSERT_FALSE(artifact);
  EXPECT_NE(artifact.error.find("no longer exists"), std::string::npos)
      << artifact.error;
  EXPECT_EQ(warnings.all(), "");
}

TEST_F(CacheStoreTest, ConcurrentPublishersOfOneKeyAllSucceedWithOneEntry) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("raced");
  // Sequential: the second publisher's entry does not replace the first.
  ASSERT_TRUE(cache->publish(key, "g", successOutput("first")));
  Result<Entry> second = cache->publish(key, "g", successOutput("second"));
  ASSERT_TRUE(second) << second.error;
  EXPECT_EQ(*cache->readArtifact(*second), artifactFor("first"));

  // Concurrent: every publisher succeeds and all see the same winner.
  CacheKey racedKey = makeKey("raced-concurrently");
  std::vector<std::thread> threads;
  std::vector<Result<Entry>> results(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      results[i] = cache->publish(racedKey, "g",
                                  successOutput("writer-" + std::to_string(i)));
    });
  for (std::thread &thread : threads)
    thread.join();
  std::optional<Entry> winner = cache->lookup(racedKey);
  ASSERT_TRUE(winner);
  std::vector<uint8_t> winnerBytes = *cache->readArtifact(*winner);
  for (Result<Entry> &result : results) {
    ASSERT_TRUE(result) << result.error;
    EXPECT_EQ(*cache->readArtifact(*result), winnerBytes);
  }
  EXPECT_EQ(countNames(cache->versionDir() + "/tmp"), 0u);
  EXPECT_EQ(warnings.all(), "");
}

TEST_F(CacheStoreTest, SuccessReplacesAFailedEntryButNotTheReverse) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("flaky");
  Result<Entry> failed = cache->publish(
      key, "g", failureOutput(FailureKind::CompileError, "error: nope"));
  ASSERT_TRUE(failed) << failed.error;
  EXPECT_EQ(failed->status, EntryStatus::Failed);

  Result<Entry> done = cache->publish(key, "g", successOutput("flaky"));
  ASSERT_TRUE(done) << done.error;
  EXPECT_EQ(done->status, EntryStatus::Done);
  EXPECT_EQ(cache->lookup(key)->status, EntryStatus::Done);

  Result<Entry> again = cache->publish(
      key, "g", failureOutput(FailureKind::CompileError, "error: nope"));
  ASSERT_TRUE(again) << again.error;
  EXPECT_EQ(again->status, EntryStatus::Done);
  EXPECT_EQ(cache->lookup(key)->status, EntryStatus::Done);
  EXPECT_EQ(countNames(cache->versionDir() + "/tmp"), 0u);
}

//===----------------------------------------------------------------------===//
// Failures
//===----------------------------------------------------------------------===//

TEST_F(CacheStoreTest, CompileErrorIsCachedAndRetriedOnlyOnRequest) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("bad-graph");
  std::atomic<int> compiles{0};
  const std::string diagnostic = "error: op 'trn.foo' cannot be lowered";
  auto failing =
      counting(compiles, failureOutput(FailureKind::CompileError, diagnostic));

  CompileResult first = cache->getOrCompile(key, "g", failing);
  EXPECT_EQ(first.source, CompileResult::Source::Failed);
  EXPECT_EQ(first.failure, FailureKind::CompileError);
  EXPECT_EQ(first.diagnostic, diagnostic);
  ASSERT_TRUE(first.entry);
  EXPECT_EQ(first.entry->status, EntryStatus::Failed);

  CompileResult second = cache->getOrCompile(key, "g", failing);
  EXPECT_EQ(second.source, CompileResult::Source::CachedFailure);
  EXPECT_EQ(second.failure, FailureKind::CompileError);
  EXPECT_EQ(second.diagnostic, diagnostic);
  EXPECT_EQ(compiles, 1);

  std::optional<Entry> entry = cache->lookup(key);
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->status, EntryStatus::Failed);
  EXPECT_EQ(entry->failure, FailureKind::CompileError);
  EXPECT_EQ(entry->diagnostic, diagnostic);
  Result<std::vector<uint8_t>> artifact = cache->readArtifact(*entry);
  ASSERT_FALSE(artifact);
  EXPECT_NE(artifact.error.find("failed compile"), std::string::npos)
      << artifact.error;
  EXPECT_NE(cache->readLog(*entry)->find(diagnostic), std::string::npos);

  // --retry-failed: compiled again; a new failure replaces the old one...
  CacheOptions retrying = options();
  retrying.retryFailed = true;
  Result<Cache> retryCache = Cache::open(retrying);
  ASSERT_TRUE(retryCache) << retryCache.error;
  CompileResult third = retryCache->getOrCompile(
      key, "g",
      counting(compiles,
               failureOutput(FailureKind::CompileError, "error: still bad")));
  EXPECT_EQ(third.source, CompileResult::Source::Failed);
  EXPECT_EQ(compiles, 2);
  EXPECT_EQ(cache->lookup(key)->diagnostic, "error: still bad");

  // ...and a success replaces it for everyone.
  CompileResult fourth = retryCache->getOrCompile(
      key, "g", counting(compiles, successOutput("bad-graph")));
  EXPECT_EQ(fourth.source, CompileResult::Source::Compiled);
  EXPECT_EQ(compiles, 3);
  CompileResult fifth = cache->getOrCompile(key, "g", failing);
  EXPECT_EQ(fifth.source, CompileResult::Source::Hit);
  EXPECT_EQ(compiles, 3);
  EXPECT_EQ(*cache->readArtifact(*fifth.entry), artifactFor("bad-graph"));
}

TEST_F(CacheStoreTest, TransientFailuresAreNotRecorded) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  for (FailureKind kind : {FailureKind::Killed, FailureKind::OutOfMemory,
                           FailureKind::Timeout, FailureKind::OutOfDisk}) {
    SCOPED_TRACE(failureKindName(kind));
    EXPECT_FALSE(isCacheable(kind));
    CacheKey key = makeKey(std::string("transient-") + failureKindName(kind));
    std::atomic<int> compiles{0};
    auto failing = counting(compiles, failureOutput(kind, "it died"));
    CompileResult first = cache->getOrCompile(key, "g", failing);
    EXPECT_EQ(first.source, CompileResult::Source::Failed);
    EXPECT_EQ(first.failure, kind);
    EXPECT_EQ(first.diagnostic, "it died");
    EXPECT_FALSE(first.entry);
    EXPECT_FALSE(cache->lookup(key));
    CompileResult second = cache->getOrCompile(key, "g", failing);
    EXPECT_EQ(second.source, CompileResult::Source::Failed);
    EXPECT_EQ(compiles, 2);

    Result<Entry> published =
        cache->publish(key, "g", failureOutput(kind, "it died"));
    ASSERT_FALSE(published);
    EXPECT_NE(published.error.find("not cached"), std::string::npos)
        << published.error;
  }
  EXPECT_TRUE(cache->list().empty());
  EXPECT_TRUE(cache->locks().empty());
}

TEST(CacheFailureKindTest, NamesRoundTrip) {
  for (FailureKind kind :
       {FailureKind::None, FailureKind::CompileError, FailureKind::Killed,
        FailureKind::OutOfMemory, FailureKind::Timeout, FailureKind::OutOfDisk})
    EXPECT_EQ(parseFailureKind(failureKindName(kind)), kind);
  EXPECT_EQ(std::string(failureKindName(FailureKind::CompileError)),
            "compile-error");
  EXPECT_FALSE(parseFailureKind("segfault"));
  EXPECT_TRUE(isCacheable(FailureKind::CompileError));
  EXPECT_FALSE(isCacheable(FailureKind::None));
}

//===----------------------------------------------------------------------===//
// Corruption: detected on lookup, quarantined once, rebuilt
//===----------------------------------------------------------------------===//

struct Damage {
  const char *file;
  bool truncate;
};

class CacheCorruptionTest : public CacheStoreTest,
                            public ::testing::WithParamInterface<Damage> {};

TEST_P(CacheCorruptionTest, IsQuarantinedReportedOnceAndRebuilt) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("victim");
  std::atomic<int> compiles{0};
  auto compile = counting(compiles, successOutput("victim"));
  ASSERT_EQ(cache->getOrCompile(key, std::string(4000, 'v'), compile).source,
            CompileResult::Source::Compiled);

  std::string damaged = entryDir(*cache, key) + "/" + GetParam().file;
  if (GetParam().truncate)
    truncateHalf(damaged);
  else
    flipByte(damaged);

  EXPECT_FALSE(cache->lookup(key));
  EXPECT_EQ(warnings.count("corrupt cache entry"), 1u) << warnings.all();
  EXPECT_NE(warnings.all().find(GetParam().file), std::string::npos)
      << warnings.all();
  EXPECT_FALSE(fs::exists(entryDir(*cache, key)));
  std::string quarantine = cache->versionDir() + "/quarantine";
  ASSERT_EQ(countNames(quarantine), 1u);
  std::string moved = fs::directory_iterator(quarantine)->path().string();
  EXPECT_TRUE(fs::exists(moved + "/" + GetParam().file)); // moved, not deleted
  EXPECT_NE(readText(moved + "/QUARANTINE_REASON.txt").find(GetParam().file),
            std::string::npos);

  EXPECT_FALSE(cache->lookup(key));
  EXPECT_EQ(warnings.count("corrupt cache entry"), 1u); // reported once

  CompileResult rebuilt =
      cache->getOrCompile(key, std::string(4000, 'v'), compile);
  EXPECT_EQ(rebuilt.source, CompileResult::Source::Compiled);
  EXPECT_EQ(compiles, 2);
  ASSERT_TRUE(rebuilt.entry);
  EXPECT_EQ(*cache->readArtifact(*rebuilt.entry), artifactFor("victim"));
  Cache::VerifyReport report = cache->verify(false);
  EXPECT_EQ(report.checked, 1);
  EXPECT_TRUE(report.corrupt.empty());
}

INSTANTIATE_TEST_SUITE_P(
    EveryFile, CacheCorruptionTest,
    ::testing::Values(
        Damage{"artifact.bin", true}, Damage{"artifact.bin", false},
        Damage{"manifest.json", true}, Damage{"manifest.json", false},
        Damage{"graph.mlir.zst", true}, Damage{"graph.mlir.zst", false},
        Damage{"flags.json", true}, Damage{"flags.json", false},
        Damage{"compile.log", true}, Damage{"compile.log", false}),
    [](const ::testing::TestParamInfo<Damage> &info) {
      std::string name = info.param.file;
      for (char &c : name)
        if (!isalnum(static_cast<unsigned char>(c)))
          c = '_';
      return name + (info.param.truncate ? "_truncated" : "_bitflip");
    });

TEST_F(CacheStoreTest, MissingManifestAndMalformedButChecksummedManifest) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;

  CacheKey missing = makeKey("no-manifest");
  ASSERT_TRUE(cache->publish(missing, "g", successOutput("no-manifest")));
  fs::remove(entryDir(*cache, missing) + "/manifest.json");
  EXPECT_FALSE(cache->lookup(missing));
  EXPECT_EQ(warnings.count("manifest.json is missing"), 1u) << warnings.all();

  // A flipped letter in a failure's diagnostic: only the manifest's own
  // checksum covers it.
  CacheKey diagnosed = makeKey("diagnosed");
  ASSERT_TRUE(cache->publish(
      diagnosed, "g",
      failureOutput(FailureKind::CompileError, "error: shape AAAA")));
  std::string manifestPath = entryDir(*cache, diagnosed) + "/manifest.json";
  std::string manifest = readText(manifestPath);
  manifest.replace(manifest.find("AAAA"), 4, "AAAB");
  writeText(manifestPath, manifest);
  EXPECT_FALSE(cache->lookup(diagnosed));
  EXPECT_EQ(warnings.count("manifest.json checksum mismatch"), 1u)
      << warnings.all();

  // A manifest whose checksum is right but whose fields have wrong types
  // (as a buggy or hostile writer might leave): an error, never a throw.
  CacheKey malformed = makeKey("malformed");
  ASSERT_TRUE(cache->publish(malformed, "g", successOutput("malformed")));
  std::string path = entryDir(*cache, malformed) + "/manifest.json";
  std::string text = readText(path);
  size_t field = text.find("\"graph_bytes\": ");
  ASSERT_NE(field, std::string::npos);
  size_t end = text.find_first_of(",\n", field);
  text.replace(field, end - field, "\"graph_bytes\": \"many\"");
  const std::string checksumField = "\"manifest_xxh3\": \"";
  size_t at = text.find(checksumField) + checksumField.size();
  text.replace(at, 32, std::string(32, '0'));
  text.replace(at, 32, hashBytes(text).hex());
  writeText(path, text);
  EXPECT_FALSE(cache->lookup(malformed));
  EXPECT_EQ(warnings.count("manifest.json is malformed"), 1u) << warnings.all();
}

//===----------------------------------------------------------------------===//
// Locks
//===----------------------------------------------------------------------===//

TEST_F(CacheStoreTest, CompileHoldsTheLockAndReleasesIt) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("locked");
  std::string lock = lockPath(*cache, key);
  bool sawLock = false;
  CompileResult result = cache->getOrCompile(key, "g", [&] {
    std::string content = readText(lock);
    sawLock = content.find("\"pid\":" + std::to_string(getpid())) !=
                  std::string::npos &&
              content.find(thisHost()) != std::string::npos;
    std::vector<LockInfo> locks = cache->locks();
    EXPECT_EQ(locks.size(), 1u);
    if (!locks.empty()) {
      EXPECT_EQ(locks[0].key, key);
      EXPECT_EQ(locks[0].pid, getpid());
      EXPECT_EQ(locks[0].host, thisHost());
      EXPECT_FALSE(locks[0].stale) << locks[0].staleReason;
      EXPECT_LT(locks[0].heartbeatAgeSeconds, 5);
      EXPECT_GE(locks[0].startedUnix, time(nullptr) - 5);
    }
    std::vector<EntryListing> listing = cache->list();
    EXPECT_TRUE(listing.empty()); // nothing published yet
    return successOutput("locked");
  });
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  EXPECT_TRUE(sawLock);
  EXPECT_FALSE(fs::exists(lock));
  EXPECT_TRUE(cache->locks().empty());
  EXPECT_EQ(countNames(cache->versionDir() + "/tmp"), 0u);
  EXPECT_EQ(warnings.all(), "");
}

TEST_F(CacheStoreTest, StaleLockOfADeadProcessOnThisHostIsTakenAtOnce) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("dead-owner");
  FakeOwner owner;
  owner.pid = deadPid();
  writeLock(lockPath(*cache, key), owner);

  std::vector<LockInfo> locks = cache->locks();
  ASSERT_EQ(locks.size(), 1u);
  EXPECT_TRUE(locks[0].stale);
  EXPECT_NE(locks[0].staleReason.find("is gone"), std::string::npos)
      << locks[0].staleReason;

  CompileResult result =
      cache->getOrCompile(key, "g", [] { return successOutput("dead-owner"); });
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  EXPECT_LT(result.waitedSeconds, 1.0); // the lease (300 s) did not matter
  EXPECT_EQ(warnings.count("took over the stale lock"), 1u) << warnings.all();
  EXPECT_EQ(warnings.count("pid " + std::to_string(owner.pid)), 1u);
  EXPECT_TRUE(cache->locks().empty());
}

TEST_F(CacheStoreTest, StaleLockWhosePidWasReusedIsTakenAtOnce) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("reused-pid");
  FakeOwner owner;           // this very process...
  owner.startTicks += 12345; // ...but started at another time
  writeLock(lockPath(*cache, key), owner);
  CompileResult result =
      cache->getOrCompile(key, "g", [] { return successOutput("reused"); });
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  EXPECT_LT(result.waitedSeconds, 1.0);
  EXPECT_EQ(warnings.count("another process"), 1u) << warnings.all();
}

TEST_F(CacheStoreTest, StaleLockOfAnotherHostIsTakenAfterTheLease) {
  CacheOptions o = options();
  o.leaseSeconds = 0.4;
  o.heartbeatSeconds = 0.1;
  Result<Cache> cache = Cache::open(o);
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("other-host-owner");
  FakeOwner owner;
  owner.host = "other-node.cluster";
  owner.bootId = "00000000-0000-0000-0000-000000000000";
  owner.pid = 4242;
  writeLock(lockPath(*cache, key), owner);
  std::vector<LockInfo> locks = cache->locks();
  ASSERT_EQ(locks.size(), 1u);
  EXPECT_FALSE(locks[0].stale); // its heartbeat is fresh

  CompileResult result =
      cache->getOrCompile(key, "g", [] { return successOutput("other"); });
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  EXPECT_GE(result.waitedSeconds, 0.39);
  EXPECT_LT(result.waitedSeconds, 5.0);
  EXPECT_EQ(warnings.count("took over the stale lock"), 1u) << warnings.all();
  EXPECT_EQ(warnings.count("pid 4242 on other-node.cluster"), 1u);
  EXPECT_EQ(warnings.count("no heartbeat"), 1u);
}

TEST_F(CacheStoreTest, ALiveHeartbeatKeepsTheLockPastTheLease) {
  CacheOptions o = options();
  o.leaseSeconds = 0.4;
  o.heartbeatSeconds = 0.05;
  Result<Cache> cache = Cache::open(o);
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("slow");
  std::atomic<int> compiles{0};
  auto slowCompile = counting(compiles, successOutput("slow"), 1.0);
  CompileResult holderResult;
  std::thread holder(
      [&] { holderResult = cache->getOrCompile(key, "g", slowCompile); });
  while (!fs::exists(lockPath(*cache, key)) && compiles == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CompileResult waiter = cache->getOrCompile(key, "g", slowCompile);
  holder.join();
  EXPECT_EQ(holderResult.source, CompileResult::Source::Compiled);
  EXPECT_EQ(waiter.source, CompileResult::Source::Hit);
  EXPECT_GT(waiter.waitedSeconds, 0.6); // well past the 0.4 s lease
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(warnings.count("took over"), 0u) << warnings.all();
}

TEST_F(CacheStoreTest, WaitingIsBoundedAndNamesTheHolder) {
  CacheOptions o = options();
  o.lockWaitSeconds = 0.3;
  Result<Cache> cache = Cache::open(o);
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("held-forever");
  std::string lock = lockPath(*cache, key);
  writeLock(lock, FakeOwner()); // alive: this process
  std::string before = readText(lock);

  CompileResult result =
      cache->getOrCompile(key, "g", [] { return successOutput("held"); });
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  EXPECT_GE(result.waitedSeconds, 0.3);
  EXPECT_LT(result.waitedSeconds, 5.0);
  EXPECT_EQ(warnings.count("gave up waiting"), 1u) << warnings.all();
  EXPECT_EQ(
      warnings.count("pid " + std::to_string(getpid()) + " on " + thisHost()),
      1u)
      << warnings.all();
  EXPECT_EQ(readText(lock), before); // someone else's lock is left alone
  EXPECT_TRUE(cache->lookup(key));
}

TEST_F(CacheStoreTest, WithoutHardLinksCompilesLocklessAndWarnsOnce) {
  setLinkFunctionForTesting([](const char *, const char *) {
    errno = EPERM;
    return -1;
  });
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  std::atomic<int> compiles{0};
  CacheKey first = makeKey("lockless-1"), second = makeKey("lockless-2");
  EXPECT_EQ(
      cache->getOrCompile(first, "g", counting(compiles, successOutput("1")))
          .source,
      CompileResult::Source::Compiled);
  EXPECT_EQ(
      cache->getOrCompile(second, "g", counting(compiles, successOutput("2")))
          .source,
      CompileResult::Source::Compiled);
  EXPECT_EQ(
      cache->getOrCompile(first, "g", counting(compiles, successOutput("1")))
          .source,
      CompileResult::Source::Hit);

  // Concurrent requests may compile twice but all get the same artifact.
  CacheKey shared = makeKey("lockless-shared");
  std::vector<std::thread> threads;
  std::vector<CompileResult> results(4);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      results[i] = cache->getOrCompile(
          shared, "g", counting(compiles, successOutput("shared"), 0.05));
    });
  for (std::thread &thread : threads)
    thread.join();
  setLinkFunctionForTesting(nullptr);

  for (CompileResult &result : results) {
    ASSERT_TRUE(result.entry);
    EXPECT_EQ(*cache->readArtifact(*result.entry), artifactFor("shared"));
  }
  EXPECT_EQ(warnings.count("does not support hard links"), 1u)
      << warnings.all();
  EXPECT_EQ(countNames(cache->versionDir() + "/locks"), 0u);
  EXPECT_EQ(countNames(cache->versionDir() + "/tmp"), 0u);
}

//===----------------------------------------------------------------------===//
// Read-only caches
//===----------------------------------------------------------------------===//

/// Sets TRN_CACHE_READ_ONLY for the scope.
struct ReadOnlyEnvironment {
  explicit ReadOnlyEnvironment(const char *value) {
    setenv("TRN_CACHE_READ_ONLY", value, 1);
  }
  ~ReadOnlyEnvironment() { unsetenv("TRN_CACHE_READ_ONLY"); }
};

TEST_F(CacheStoreTest, ReadOnlyCacheServesHitsAndCompilesMissesWithoutWriting) {
  CacheKey stored = makeKey("ro-stored"), corrupt = makeKey("ro-corrupt"),
           missing = makeKey("ro-missing");
  std::string lastUsed, corruptDir;
  {
    Result<Cache> writable = Cache::open(options());
    ASSERT_TRUE(writable) << writable.error;
    ASSERT_TRUE(writable->publish(stored, "g", successOutput("ro-stored")));
    ASSERT_TRUE(writable->publish(corrupt, "g", successOutput("ro-corrupt")));
    lastUsed = entryDir(*writable, stored) + "/last_used";
    corruptDir = entryDir(*writable, corrupt);
    flipByte(corruptDir + "/artifact.bin");
    writeLock(lockPath(*writable, missing), FakeOwner());
  }
  backdate(lastUsed, 7200);
  struct stat before, after;
  ASSERT_EQ(stat(lastUsed.c_str(), &before), 0);

  ReadOnlyEnvironment readOnly("1");
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  EXPECT_TRUE(cache->readOnly());
  EXPECT_EQ(cache->readOnlyReason(), "TRN_CACHE_READ_ONLY=1");
  std::string versionDir = cache->versionDir();
  auto snapshot = [&] {
    std::vector<std::string> names;
    for (const auto &item : fs::recursive_directory_iterator(root()))
      names.push_back(
          item.path().string() + " " +
          std::to_string(
              fs::last_write_time(item.path()).time_since_epoch().count()));
    std::sort(names.begin(), names.end());
    return names;
  };
  std::vector<std::string> untouched = snapshot();

  // A hit: served, its last use not recorded.
  std::atomic<int> compiles{0};
  CompileResult hit = cache->getOrCompile(
      stored, "g", counting(compiles, successOutput("ro-stored")));
  EXPECT_EQ(hit.source, CompileResult::Source::Hit);
  ASSERT_TRUE(hit.entry);
  EXPECT_EQ(*cache->readArtifact(*hit.entry), artifactFor("ro-stored"));
  ASSERT_EQ(stat(lastUsed.c_str(), &after), 0);
  EXPECT_EQ(after.st_mtime, before.st_mtime);

  // Misses compile without a lock (another's lock is not waited for) and
  // store nothing; the warning comes once.
  for (CacheKey key : {missing, makeKey("ro-other")}) {
    CompileResult miss = cache->getOrCompile(
        key, "g", counting(compiles, successOutput("ro-miss")));
    EXPECT_EQ(miss.source, CompileResult::Source::Compiled);
    EXPECT_FALSE(miss.entry);
    EXPECT_LT(miss.waitedSeconds, 0.5);
  }
  EXPECT_EQ(compiles, 2);
  EXPECT_EQ(warnings.count("cache " + root() +
                           " is read-only (TRN_CACHE_READ_ONLY=1): compiled "
                           "without storing the result"),
            1u)
      << warnings.all();
  CompileResult error = cache->getOrCompile(
      makeKey("ro-error"), "g",
      counting(compiles, failureOutput(FailureKind::CompileError, "bad op")));
  EXPECT_EQ(error.source, CompileResult::Source::Failed);
  EXPECT_EQ(error.failure, FailureKind::CompileError);
  EXPECT_EQ(error.diagnostic, "bad op");
  Result<Entry> published =
      cache->publish(makeKey("ro-publish"), "g", successOutput("p"));
  ASSERT_FALSE(published);
  EXPECT_NE(published.error.find("is read-only"), std::string::npos);

  // A corrupt entry is a miss and stays where it is.
  EXPECT_FALSE(cache->lookup(corrupt));
  EXPECT_EQ(warnings.count("(artifact.bin checksum mismatch); cache " + root() +
                           " is read-only"),
            1u)
      << warnings.all();

  // Inspection works; maintenance that writes changes nothing and says so.
  EXPECT_EQ(cache->list().size(), 2u);
  EXPECT_EQ(cache->locks().size(), 1u);
  Cache::VerifyReport verified = cache->verify(true);
  EXPECT_EQ(verified.checked, 2);
  EXPECT_EQ(verified.corrupt.size(), 1u);
  EXPECT_EQ(verified.quarantined, 0);
  EXPECT_EQ(cache->clean(true, -1).removedEntries, 0);
  EXPECT_EQ(cache->prune(0).removedEntries, 0);
  EXPECT_TRUE(cache->clearLocks(true).empty());
  for (const char *what :
       {"verify's fix", "cleaning", "pruning", "clearing locks"})
    EXPECT_EQ(warnings.count(std::string(what) + " changes nothing"), 1u)
        << what << "\n"
        << warnings.all();
  EXPECT_EQ(snapshot(), untouched);
}

TEST_F(CacheStoreTest, ReadOnlyOpenErrors) {
  {
    ReadOnlyEnvironment readOnly("maybe");
    Result<Cache> cache = Cache::open(options());
    ASSERT_FALSE(cache);
    EXPECT_EQ(cache.error, "TRN_CACHE_READ_ONLY='maybe' is neither 1 nor 0 "
                           "(1 uses the cache without writing to it)");
  }
  ReadOnlyEnvironment readOnly("yes");
  Result<Cache> missing = Cache::open(options());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error.find("does not exist, and a read-only cache "
                               "(TRN_CACHE_READ_ONLY=1) is never created"),
            std::string::npos)
      << missing.error;
  EXPECT_FALSE(fs::exists(root()));
  fs::create_directory(root());
  Result<Cache> empty = Cache::open(options());
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error.find("holds no trn cache"), std::string::npos)
      << empty.error;
  EXPECT_EQ(countNames(root()), 0u);
  setenv("TRN_CACHE_READ_ONLY", "0", 1);
  EXPECT_TRUE(Cache::open(options()));
}

//===----------------------------------------------------------------------===//
// Lock identity: the nonce in the lock file, never its inode
//===----------------------------------------------------------------------===//

/// Replaces `path` by a copy of itself: the same bytes and mtime under a new
/// inode, as FUSE filesystems (sshfs) present one file under another name.
void replaceByCopy(const std::string &path) {
  struct stat before, after;
  ASSERT_EQ(stat(path.c_str(), &before), 0);
  std::string copy = path + ".copy";
  writeText(copy, readText(path));
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, copy.c_str(), times, 0), 0);
  ASSERT_EQ(rename(copy.c_str(), path.c_str()), 0);
  ASSERT_EQ(stat(path.c_str(), &after), 0);
  ASSERT_NE(after.st_ino, before.st_ino);
}

/// Replaces `path` by the lock of another acquisition (another nonce).
void replaceByOtherLock(const std::string &path, const std::string &nonce) {
  FakeOwner other;
  other.host = "node-9";
  other.bootId = "other-boot";
  other.nonce = nonce;
  writeLock(path + ".other", other);
  ASSERT_EQ(rename((path + ".other").c_str(), path.c_str()), 0);
}

TEST_F(CacheStoreTest, ReleaseRemovesOurLockEvenUnderAnotherInode) {
  CacheOptions o = options();
  o.heartbeatSeconds = 0.02; // heartbeats run while the copy is in place
  Result<Cache> cache = Cache::open(o);
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("copied-lock");
  std::string lock = lockPath(*cache, key);
  CompileResult result = cache->getOrCompile(key, "g", [&] {
    replaceByCopy(lock);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return successOutput("copied-lock");
  });
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  EXPECT_FALSE(fs::exists(lock));
  EXPECT_TRUE(cache->locks().empty());
  EXPECT_EQ(countNames(cache->versionDir() + "/tmp"), 0u);
  EXPECT_EQ(warnings.all(), ""); // in particular no "lost the lock"
}

TEST_F(CacheStoreTest, ALockTakenOverMeanwhileIsLeftToItsNewHolder) {
  CacheOptions o = options();
  o.heartbeatSeconds = 0.02;
  Result<Cache> cache = Cache::open(o);
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("taken-over");
  std::string lock = lockPath(*cache, key);
  CompileResult result = cache->getOrCompile(key, "g", [&] {
    replaceByOtherLock(lock, "someone-elses-nonce");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return successOutput("taken-over");
  });
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  ASSERT_TRUE(fs::exists(lock));
  EXPECT_NE(readText(lock).find("someone-elses-nonce"), std::string::npos);
  EXPECT_EQ(warnings.count("lost the lock on " + key.dirName()), 1u)
      << warnings.all();
  EXPECT_EQ(countNames(cache->versionDir() + "/tmp"), 0u);
}

TEST_F(CacheStoreTest, BreakingAStaleLockJudgesItsContentNotItsInode) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("break-by-nonce");
  std::string lock = lockPath(*cache, key);
  std::string tmp = cache->versionDir() + "/tmp";
  FakeOwner dead;
  dead.pid = deadPid();
  dead.nonce = "dead-owners-nonce";

  // The lock judged stale, seen again under another inode: removed.
  writeLock(lock, dead);
  detail::LockSnapshot judged = detail::readLock(lock);
  replaceByCopy(lock);
  EXPECT_TRUE(detail::breakLock(lock, tmp, key.dirName(), judged));
  EXPECT_FALSE(fs::exists(lock));

  // Another acquisition took the name after the judgement: put back.
  writeLock(lock, dead);
  judged = detail::readLock(lock);
  replaceByOtherLock(lock, "a-new-acquisition");
  EXPECT_FALSE(detail::breakLock(lock, tmp, key.dirName(), judged));
  EXPECT_NE(readText(lock).find("a-new-acquisition"), std::string::npos);

  // Its holder heartbeated after the judgement: put back.
  judged = detail::readLock(lock);
  backdate(lock, 5);
  EXPECT_FALSE(detail::breakLock(lock, tmp, key.dirName(), judged));
  EXPECT_NE(readText(lock).find("a-new-acquisition"), std::string::npos);
  EXPECT_EQ(countNames(tmp), 0u);

  // Through the store: a dead owner's lock presented as a copy is taken
  // over at once.
  writeLock(lock, dead);
  replaceByCopy(lock);
  CompileResult result = cache->getOrCompile(
      key, "g", [] { return successOutput("break-by-nonce"); });
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  EXPECT_LT(result.waitedSeconds, 1.0);
  EXPECT_EQ(warnings.count("took over the stale lock"), 1u) << warnings.all();
  EXPECT_FALSE(fs::exists(lock));
}

TEST_F(CacheStoreTest, SshfsLinkOntoAHeldLockIsNotTakenForNoHardLinks) {
  // sshfs answers a link onto an existing name with EPERM: while one
  // request holds the lock, another must wait for it, not conclude that the
  // filesystem has no hard links and compile again without a lock.
  setLinkFunctionForTesting([](const char *from, const char *to) {
    if (fs::exists(to)) {
      errno = EPERM;
      return -1;
    }
    return link(from, to);
  });
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  std::atomic<int> compiles{0};
  CacheKey key = makeKey("sshfs-held");
  std::vector<CompileResult> results(2);
  std::thread first([&] {
    results[0] = cache->getOrCompile(
        key, "g", counting(compiles, successOutput("held"), 0.3));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  results[1] = cache->getOrCompile(
      key, "g", counting(compiles, successOutput("held"), 0.3));
  first.join();
  setLinkFunctionForTesting(nullptr);
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(results[0].source, CompileResult::Source::Compiled);
  EXPECT_EQ(results[1].source, CompileResult::Source::Hit);
  EXPECT_EQ(warnings.count("does not support hard links"), 0u)
      << warnings.all();
}

TEST_F(CacheStoreTest, ALostLinkReplyIsRecognisedByOurNonce) {
  // The link happens but reports EEXIST, as a retransmission does on NFS
  // after a lost reply; FUSE filesystems also misreport link counts.
  setLinkFunctionForTesting([](const char *from, const char *to) {
    if (link(from, to) == 0)
      errno = EEXIST;
    return -1;
  });
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey key = makeKey("lost-reply");
  std::string lock = lockPath(*cache, key);
  bool sawOurLock = false;
  CompileResult result = cache->getOrCompile(key, "g", [&] {
    sawOurLock = readText(lock).find("\"pid\":" + std::to_string(getpid())) !=
                 std::string::npos;
    return successOutput("lost-reply");
  });
  setLinkFunctionForTesting(nullptr);
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  EXPECT_TRUE(sawOurLock);
  EXPECT_LT(result.waitedSeconds, 1.0);
  EXPECT_EQ(warnings.all(), "");
  EXPECT_FALSE(fs::exists(lock));
}

//===----------------------------------------------------------------------===//
// Maintenance
//===----------------------------------------------------------------------===//

TEST_F(CacheStoreTest, ListShowsEveryStateAndLocks) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey done = makeKey("l-done"), failed = makeKey("l-failed"),
           corrupt = makeKey("l-corrupt"), incomplete = makeKey("l-tmp");
  ASSERT_TRUE(cache->publish(done, "g", successOutput("l-done")));
  ASSERT_TRUE(cache->publish(
      failed, "g", failureOutput(FailureKind::CompileError, "error: x")));
  ASSERT_TRUE(cache->publish(corrupt, "g", successOutput("l-corrupt")));
  flipByte(entryDir(*cache, corrupt) + "/flags.json");
  std::string tmpEntry = cache->versionDir() + "/tmp/" + incomplete.dirName() +
                         ".publish.host.1.abcd";
  fs::create_directory(tmpEntry);
  writeText(tmpEntry + "/artifact.bin", "partial");
  writeLock(lockPath(*cache, done), FakeOwner());

  std::map<std::string, EntryListing> byGraph;
  for (EntryListing &listing : cache->list())
    byGraph[listing.key.dirName()] = listing;
  ASSERT_EQ(byGraph.size(), 4u);
  EXPECT_EQ(byGraph[done.dirName()].status, "done");
  EXPECT_TRUE(byGraph[done.dirName()].locked);
  ASSERT_TRUE(byGraph[done.dirName()].entry);
  EXPECT_EQ(byGraph[done.dirName()].entry->metadata.graphName, "l-done");
  EXPECT_GT(byGraph[done.dirName()].sizeBytes, 8192);
  EXPECT_GT(byGraph[done.dirName()].createdUnix, 0);
  EXPECT_GT(byGraph[done.dirName()].lastUsedUnix, 0);
  EXPECT_EQ(byGraph[failed.dirName()].status, "failed");
  EXPECT_FALSE(byGraph[failed.dirName()].locked);
  EXPECT_EQ(byGraph[corrupt.dirName()].status, "corrupt");
  EXPECT_FALSE(byGraph[corrupt.dirName()].entry);
  EXPECT_EQ(byGraph[incomplete.dirName()].status, "incomplete");
  EXPECT_EQ(byGraph[incomplete.dirName()].sizeBytes, 7);
  // Listing reports; it never quarantines.
  EXPECT_TRUE(fs::exists(entryDir(*cache, corrupt)));
}

TEST_F(CacheStoreTest, InspectReportsOneEntryWithoutSideEffects) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey done = makeKey("i-done"), corrupt = makeKey("i-corrupt");
  ASSERT_TRUE(cache->publish(done, "g", successOutput("i-done")));
  ASSERT_TRUE(cache->publish(corrupt, "g", successOutput("i-corrupt")));
  flipByte(entryDir(*cache, corrupt) + "/flags.json");

  std::optional<EntryListing> found = cache->inspect(done);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->status, "done");
  EXPECT_EQ(found->path, entryDir(*cache, done));
  ASSERT_TRUE(found->entry);
  EXPECT_EQ(found->entry->metadata.graphName, "i-done");
  EXPECT_FALSE(cache->inspect(makeKey("i-missing")));
  std::optional<EntryListing> bad = cache->inspect(corrupt);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, "corrupt");
  EXPECT_NE(bad->problem.find("flags.json"), std::string::npos) << bad->problem;
  EXPECT_TRUE(fs::exists(entryDir(*cache, corrupt))); // not quarantined

  // An entry directory elsewhere (another compiler version's tree).
  std::string elsewhere = root() + "/trncc-0.0.1/" + done.dirName();
  fs::create_directories(root() + "/trncc-0.0.1");
  fs::copy(entryDir(*cache, done), elsewhere);
  std::optional<EntryListing> other = cache->inspect(done, elsewhere);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->path, elsewhere);
  EXPECT_EQ(other->status, "done");
  EXPECT_EQ(warnings.all(), "");
}

TEST_F(CacheStoreTest, ClearLocksRemovesOnlyStaleLocksUnlessAll) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey dead = makeKey("c-dead"), live = makeKey("c-live"),
           silent = makeKey("c-silent"), remote = makeKey("c-remote");
  FakeOwner deadOwner;
  deadOwner.pid = deadPid();
  writeLock(lockPath(*cache, dead), deadOwner);
  writeLock(lockPath(*cache, live), FakeOwner());
  FakeOwner remoteOwner;
  remoteOwner.host = "node-17";
  remoteOwner.bootId = "other-boot";
  writeLock(lockPath(*cache, silent), remoteOwner);
  backdate(lockPath(*cache, silent), 1000); // lease is 300 s
  writeLock(lockPath(*cache, remote), remoteOwner);

  std::map<std::string, LockInfo> byKey;
  for (LockInfo &lock : cache->locks())
    byKey[lock.key.dirName()] = lock;
  ASSERT_EQ(byKey.size(), 4u);
  EXPECT_TRUE(byKey[dead.dirName()].stale);
  EXPECT_FALSE(byKey[live.dirName()].stale);
  EXPECT_TRUE(byKey[silent.dirName()].stale);
  EXPECT_NE(byKey[silent.dirName()].staleReason.find("no heartbeat"),
            std::string::npos);
  EXPECT_GE(byKey[silent.dirName()].heartbeatAgeSeconds, 999);
  EXPECT_EQ(byKey[silent.dirName()].host, "node-17");
  EXPECT_FALSE(byKey[remote.dirName()].stale);

  std::vector<LockInfo> removed = cache->clearLocks(false);
  ASSERT_EQ(removed.size(), 2u);
  std::set<std::string> removedKeys;
  for (const LockInfo &lock : removed)
    removedKeys.insert(lock.key.dirName());
  EXPECT_TRUE(removedKeys.count(dead.dirName()));
  EXPECT_TRUE(removedKeys.count(silent.dirName()));
  EXPECT_TRUE(fs::exists(lockPath(*cache, live)));
  EXPECT_TRUE(fs::exists(lockPath(*cache, remote)));

  EXPECT_EQ(cache->clearLocks(true).size(), 2u);
  EXPECT_TRUE(cache->locks().empty());
  EXPECT_EQ(countNames(cache->versionDir() + "/tmp"), 0u);
}

TEST_F(CacheStoreTest, CleanRemovesFailuresQuarantineAndAbandonedTemporaries) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey done = makeKey("k-done"), failed = makeKey("k-failed"),
           corrupt = makeKey("k-corrupt");
  ASSERT_TRUE(cache->publish(done, "g", successOutput("k-done")));
  ASSERT_TRUE(cache->publish(
      failed, "g", failureOutput(FailureKind::CompileError, "error: x")));
  ASSERT_TRUE(cache->publish(corrupt, "g", successOutput("k-corrupt")));
  flipByte(entryDir(*cache, corrupt) + "/artifact.bin");
  ASSERT_FALSE(cache->lookup(corrupt)); // now in the quarantine
  std::string tmp = cache->versionDir() + "/tmp/";
  std::string fresh = tmp + makeKey("k-fresh").dirName() + ".publish.h.1.aa";
  std::string old = tmp + makeKey("k-old").dirName() + ".publish.h.2.bb";
  std::string oldLockTemp = tmp + done.dirName() + ".lock.h.3.cc";
  fs::create_directory(fresh);
  fs::create_directory(old);
  writeText(old + "/artifact.bin", "partial");
  backdate(old, 7200);
  writeText(oldLockTemp, "{}");
  backdate(oldLockTemp, 7200);

  Cache::CleanReport report = cache->clean(false, -1);
  EXPECT_EQ(report.removedEntries, 3)
      << ::testing::PrintToString(report.removed);
  EXPECT_GT(report.removedBytes, 0);
  EXPECT_FALSE(fs::exists(entryDir(*cache, failed)));
  EXPECT_FALSE(fs::exists(old));
  EXPECT_FALSE(fs::exists(oldLockTemp));
  EXPECT_EQ(countNames(cache->versionDir() + "/quarantine"), 0u);
  EXPECT_TRUE(fs::exists(fresh)); // may belong to a live publisher
  EXPECT_TRUE(cache->lookup(done));

  // --older-than: every entry unused for that long, and nothing newer.
  CacheKey recent = makeKey("k-recent");
  ASSERT_TRUE(cache->publish(recent, "g", successOutput("k-recent")));
  backdate(entryDir(*cache, done) + "/last_used", 7200);
  report = cache->clean(false, 3600);
  EXPECT_EQ(report.removedEntries, 1);
  EXPECT_FALSE(fs::exists(entryDir(*cache, done)));
  EXPECT_TRUE(fs::exists(entryDir(*cache, recent)));

  report = cache->clean(true, -1);
  EXPECT_EQ(report.removedEntries, 1);
  EXPECT_FALSE(fs::exists(entryDir(*cache, recent)));
  EXPECT_TRUE(fs::exists(fresh));
  // Still a cache: marker and directories stay.
  EXPECT_TRUE(fs::exists(root() + "/trn-cache.json"));
  EXPECT_TRUE(fs::is_directory(cache->versionDir() + "/locks"));
}

TEST_F(CacheStoreTest, VerifyFindsCorruptionAndFixQuarantinesIt) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  CacheKey good = makeKey("v-good"), bad = makeKey("v-bad");
  ASSERT_TRUE(cache->publish(good, "g", successOutput("v-good")));
  ASSERT_TRUE(cache->publish(bad, "g", successOutput("v-bad")));
  flipByte(entryDir(*cache, bad) + "/artifact.bin");

  Cache::VerifyReport report = cache->verify(false);
  EXPECT_EQ(report.checked, 2);
  ASSERT_EQ(report.corrupt.size(), 1u);
  EXPECT_EQ(report.corrupt[0].first, entryDir(*cache, bad));
  EXPECT_NE(report.corrupt[0].second.find("artifact.bin"), std::string::npos);
  EXPECT_EQ(report.quarantined, 0);
  EXPECT_TRUE(fs::exists(entryDir(*cache, bad)));

  report = cache->verify(true);
  EXPECT_EQ(report.corrupt.size(), 1u);
  EXPECT_EQ(report.quarantined, 1);
  EXPECT_FALSE(fs::exists(entryDir(*cache, bad)));
  EXPECT_EQ(countNames(cache->versionDir() + "/quarantine"), 1u);

  report = cache->verify(false);
  EXPECT_EQ(report.checked, 1);
  EXPECT_TRUE(report.corrupt.empty());
}

TEST_F(CacheStoreTest, PruneEvictsLeastRecentlyUsedButNeverLockedEntries) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  std::vector<CacheKey> keys;
  int64_t entrySize = 0, total = 0;
  for (int i = 0; i < 4; ++i) {
    keys.push_back(makeKey("p-" + std::to_string(i)));
    Result<Entry> entry =
        cache->publish(keys[i], "g", successOutput("p-" + std::to_string(i)));
    ASSERT_TRUE(entry) << entry.error;
    entrySize = std::max(entrySize, entry->sizeBytes);
    total += entry->sizeBytes;
    // p-0 is the least recently used, p-3 the most.
    backdate(entry->path + "/last_used", 4000 - 1000 * i);
  }
  writeLock(lockPath(*cache, keys[0]), FakeOwner()); // being recompiled

  Cache::CleanReport report = cache->prune(total - entrySize - entrySize / 2);
  EXPECT_EQ(report.removedEntries, 2);
  EXPECT_TRUE(fs::exists(entryDir(*cache, keys[0])));
  EXPECT_FALSE(fs::exists(entryDir(*cache, keys[1])));
  EXPECT_FALSE(fs::exists(entryDir(*cache, keys[2])));
  EXPECT_TRUE(fs::exists(entryDir(*cache, keys[3])));

  report = cache->prune(0);
  EXPECT_EQ(report.removedEntries, 1);
  EXPECT_TRUE(fs::exists(entryDir(*cache, keys[0])));
  EXPECT_EQ(cache->prune(1LL << 40).removedEntries, 0);
}

//===----------------------------------------------------------------------===//
// Statistics, the size limit, remove and old versions
//===----------------------------------------------------------------------===//

int64_t storedSize(Cache &cache) {
  int64_t total = 0;
  for (const EntryListing &listing : cache.list())
    total += listing.sizeBytes;
  return total;
}

TEST_F(CacheStoreTest, StatisticsCountEveryRequestAsWhatItWas) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  std::atomic<int> compiles{0};
  CacheKey good = makeKey("s-good"), bad = makeKey("s-bad"),
           killed = makeKey("s-killed");
  auto ok = counting(compiles, successOutput("s-good"));
  auto error =
      counting(compiles, failureOutput(FailureKind::CompileError, "error: no"));
  auto oom = counting(compiles, failureOutput(FailureKind::OutOfMemory, ""));
  cache->getOrCompile(good, "g", ok);    // miss
  cache->getOrCompile(good, "g", ok);    // hit
  cache->getOrCompile(good, "g", ok);    // hit
  cache->getOrCompile(bad, "g", error);  // miss, compile error
  cache->getOrCompile(bad, "g", error);  // cached compile error
  cache->getOrCompile(killed, "g", oom); // miss, not cached
  Statistics statistics = cache->statistics();
  EXPECT_EQ(statistics[Counter::Hits], 2);
  EXPECT_EQ(statistics[Counter::FailureHits], 1);
  EXPECT_EQ(statistics[Counter::Misses], 3);
  EXPECT_EQ(statistics[Counter::CompileErrors], 1);
  EXPECT_EQ(statistics[Counter::UncachedFailures], 1);
  EXPECT_EQ(statistics.requests(), 6);
  ASSERT_TRUE(statistics.hitRate());
  EXPECT_DOUBLE_EQ(*statistics.hitRate(), 0.5);
  EXPECT_EQ(statistics[Counter::StoredBytes], storedSize(*cache));
  EXPECT_GT(statistics[Counter::StoredBytes], 0);

  // Zeroing keeps the size: the limit is enforced against it.
  ASSERT_TRUE(cache->zeroStatistics()) << warnings.all();
  Statistics zeroed = cache->statistics();
  EXPECT_EQ(zeroed.requests(), 0);
  EXPECT_FALSE(zeroed.hitRate());
  EXPECT_GT(zeroed.zeroedUnix, 0);
  EXPECT_EQ(zeroed[Counter::StoredBytes], storedSize(*cache));
  cache->getOrCompile(good, "g", ok);
  EXPECT_EQ(cache->statistics()[Counter::Hits], 1);
  EXPECT_EQ(cache->statistics().zeroedUnix, zeroed.zeroedUnix);
  EXPECT_EQ(warnings.all(), "");
}

TEST_F(CacheStoreTest, AShardLockedByADeadProcessIsBrokenAndABusyOneSkipped) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  std::string stats = cache->versionDir() + "/stats";
  ASSERT_TRUE(fs::is_directory(stats)); // open makes it
  // Every shard but one is held by a live process on another host, the last
  // by a process of this host that is gone: the update breaks that lock.
  FakeOwner live;
  live.host = "other-host";
  live.bootId = "other-boot";
  FakeOwner dead;
  dead.pid = deadPid();
  for (int shard = 0; shard < 16; ++shard)
    writeLock(stats + "/shard-" + std::to_string(shard) + ".lock",
              shard == 7 ? dead : live);
  std::atomic<int> compiles{0};
  cache->getOrCompile(makeKey("busy"), "g",
                      counting(compiles, successOutput("busy")));
  EXPECT_EQ(cache->statistics()[Counter::Misses], 1) << warnings.all();
  EXPECT_FALSE(fs::exists(stats + "/shard-7.lock"));
  EXPECT_TRUE(fs::exists(stats + "/shard-7.json"));
  EXPECT_EQ(warnings.all(), "");
}

TEST_F(CacheStoreTest, AStoreThatCrossesTheMaxSizeEvictsTheLeastRecentlyUsed) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  std::vector<CacheKey> keys;
  std::vector<std::string> paths;
  int64_t entrySize = 0;
  for (int i = 0; i < 3; ++i) {
    keys.push_back(makeKey("m-" + std::to_string(i)));
    Result<Entry> entry =
        cache->publish(keys[i], "g", successOutput("m-" + std::to_string(i)));
    ASSERT_TRUE(entry) << entry.error;
    entrySize = entry->sizeBytes;
    paths.push_back(entry->path);
    backdate(entry->path + "/last_used", 4000 - 1000 * i); // m-0 the oldest
  }
  // Room for two and a half entries, set when there are three: the fourth
  // store finds the limit crossed and evicts down to 90% of it (2.25
  // entries), so the two oldest go.
  ASSERT_TRUE(cache->setMaxSize(entrySize * 5 / 2));
  ASSERT_TRUE(cache->config());
  EXPECT_EQ(cache->config()->maxSizeBytes, entrySize * 5 / 2);
  keys.push_back(makeKey("m-3"));
  ASSERT_TRUE(cache->publish(keys[3], "g", successOutput("m-3")));
  EXPECT_FALSE(fs::exists(paths[0]));
  EXPECT_FALSE(fs::exists(paths[1]));
  EXPECT_TRUE(fs::exists(paths[2]));
  EXPECT_TRUE(fs::exists(entryDir(*cache, keys[3])));
  Statistics statistics = cache->statistics();
  EXPECT_EQ(statistics[Counter::EvictedEntries], 2);
  EXPECT_EQ(statistics[Counter::EvictedBytes], 2 * entrySize);
  EXPECT_EQ(statistics[Counter::StoredBytes], storedSize(*cache));
  EXPECT_LE(storedSize(*cache), entrySize * 5 / 2 * 9 / 10);

  // Without a limit nothing is evicted.
  ASSERT_TRUE(cache->setMaxSize(std::nullopt));
  EXPECT_FALSE(cache->config()->maxSizeBytes);
  for (int i = 4; i < 8; ++i)
    ASSERT_TRUE(cache->publish(makeKey("m-" + std::to_string(i)), "g",
                               successOutput("m-" + std::to_string(i))));
  EXPECT_EQ(cache->list().size(), 6u); // m-2 to m-7
  EXPECT_EQ(warnings.all(), "");
}

TEST_F(CacheStoreTest, TheMaxSizeCountsOtherVersionsAndEvictsTheirOldEntries) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  // An older compiler's tree, filled before there were statistics.
  Result<Entry> old = cache->publish(makeKey("old"), "g", successOutput("o"));
  ASSERT_TRUE(old) << old.error;
  std::string oldTree = root() + "/trncc-0.0.1";
  ASSERT_TRUE(fs::create_directories(oldTree));
  fs::rename(old->path, oldTree + "/" + old->key.dirName());
  backdate(oldTree + "/" + old->key.dirName() + "/last_used", 100000);
  int64_t entrySize = old->sizeBytes;
  fs::remove_all(cache->versionDir() + "/stats");

  ASSERT_TRUE(cache->setMaxSize(entrySize * 5 / 2));
  ASSERT_TRUE(cache->publish(makeKey("new-1"), "g", successOutput("n1")));
  EXPECT_TRUE(fs::exists(oldTree + "/" + old->key.dirName()));
  // The third entry of all versions crosses the limit: the old one goes.
  ASSERT_TRUE(cache->publish(makeKey("new-2"), "g", successOutput("n2")));
  EXPECT_FALSE(fs::exists(oldTree + "/" + old->key.dirName()));
  EXPECT_EQ(cache->list().size(), 2u);
  std::vector<VersionTree> versions = cache->versions();
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0].version, "0.0.1");
  EXPECT_FALSE(versions[0].current);
  EXPECT_EQ(versions[0].entries, 0);
  EXPECT_EQ(versions[0].statistics[Counter::StoredBytes], 0);
  EXPECT_TRUE(versions[1].current);
  EXPECT_EQ(versions[1].entries, 2);
  EXPECT_EQ(versions[1].statistics[Counter::StoredBytes], versions[1].bytes);
  EXPECT_EQ(warnings.all(), "");
}

TEST_F(CacheStoreTest, PruneVersionsKeepsOnlyATreeBeingCompiledInto) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  ASSERT_TRUE(cache->publish(makeKey("current"), "g", successOutput("c")));
  for (const char *version : {"0.0.1", "0.0.2"}) {
    std::string tree = root() + "/trncc-" + version;
    Result<Entry> entry =
        cache->publish(makeKey(version), "g", successOutput(version));
    ASSERT_TRUE(entry) << entry.error;
    ASSERT_TRUE(fs::create_directories(tree + "/locks"));
    fs::rename(entry->path, tree + "/" + entry->key.dirName());
  }
  // A live compile in 0.0.2's tree (this process, as far as the lock says).
  writeLock(root() + "/trncc-0.0.2/locks/" + makeKey("x").dirName() + ".lock",
            FakeOwner());
  Cache::CleanReport report = cache->pruneVersions();
  EXPECT_EQ(report.removed, std::vector<std::string>{root() + "/trncc-0.0.1"});
  EXPECT_EQ(report.removedEntries, 1);
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(report.skipped[0].find("trncc-0.0.2: pid "), std::string::npos)
      << report.skipped[0];
  EXPECT_FALSE(fs::exists(root() + "/trncc-0.0.1"));
  EXPECT_TRUE(fs::exists(root() + "/trncc-0.0.2"));
  EXPECT_EQ(cache->list().size(), 1u);
  EXPECT_EQ(countNames(cache->versionDir() + "/tmp"), 0u);
}

TEST_F(CacheStoreTest, RemoveDeletesTheNamedEntriesAndTheirBytes) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  std::vector<CacheKey> keys = {makeKey("r-0"), makeKey("r-1"), makeKey("r-2")};
  for (const CacheKey &key : keys)
    ASSERT_TRUE(cache->publish(key, "g", successOutput(key.dirName())));
  Cache::CleanReport report =
      cache->remove({keys[0], keys[2], makeKey("r-none")});
  EXPECT_EQ(report.removedEntries, 2);
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(report.skipped[0].find("no such entry"), std::string::npos);
  EXPECT_FALSE(fs::exists(entryDir(*cache, keys[0])));
  EXPECT_TRUE(fs::exists(entryDir(*cache, keys[1])));
  EXPECT_FALSE(fs::exists(entryDir(*cache, keys[2])));
  EXPECT_EQ(cache->statistics()[Counter::StoredBytes], storedSize(*cache));
}

TEST_F(CacheStoreTest, ADamagedConfigIsAnErrorThatStopsNoCompile) {
  Result<Cache> cache = Cache::open(options());
  ASSERT_TRUE(cache) << cache.error;
  EXPECT_FALSE(cache->config()->maxSizeBytes);
  writeText(root() + "/config.json", "{\"max_size\": \"lots\"}");
  Result<CacheConfig> config = cache->config();
  ASSERT_FALSE(config);
  EXPECT_NE(config.error.find("config.json are damaged"), std::string::npos)
      << config.error;
  std::atomic<int> compiles{0};
  CompileResult result = cache->getOrCompile(
      makeKey("c"), "g", counting(compiles, successOutput("c")));
  EXPECT_EQ(result.source, CompileResult::Source::Compiled);
  EXPECT_EQ(warnings.count("the size limit is not enforced"), 1u);
  // A root holding only the settings is still a cache's, not foreign.
  ScratchDir other;
  writeText(other / "config.json", "{}");
  CacheOptions o = options();
  o.root = other / "";
  EXPECT_TRUE(Cache::open(o)) << "config.json taken for a foreign file";
}

} // namespace
