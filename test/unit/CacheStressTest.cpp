//===- CacheStressTest.cpp - the compile cache under many processes ------===//
//
// Forked processes hammer one cache directory with a fake compile step:
//
//  * 8 processes x N requests over 64 keys: every key compiled exactly once
//    (counted by O_APPEND writes to a per-key file), 0 corrupt reads;
//  * kill -9 at random points of compile and publish: afterwards verify() is
//    clean, every lock is recovered (at once on this host, after the lease
//    for a simulated other host) and every key compiles or hits;
//  * maintenance (list, verify, clean, prune, clear-locks) running while
//    others compile: nothing corrupt, nothing crashes.
//
// The default counts keep the suite fast (N = 200, 40 kills); the bar counts
// of the design (N = 1000, 200 kills) run with TRN_STRESS_FULL=1.
//
//===----------------------------------------------------------------------===//

#include "CacheTestSupport.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <thread>

using namespace trn_cache_test;

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void sleepFor(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

/// Memory shared with forked children.
template <typename T> T *sharedMemory(size_t count = 1) {
  void *memory = mmap(nullptr, sizeof(T) * count, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    return nullptr;
  T *objects = static_cast<T *>(memory);
  for (size_t i = 0; i < count; ++i)
    new (&objects[i]) T();
  return objects;
}

template <typename T> void freeShared(T *objects, size_t count = 1) {
  munmap(objects, sizeof(T) * count);
}

/// Forks `count` children, each exiting with what `work` returns; stops at
/// the first fork that fails (the caller checks how many started).
template <typename Work>
std::vector<pid_t> forkChildren(int count, const Work &work) {
  std::vector<pid_t> children;
  for (int p = 0; p < count; ++p) {
    pid_t child = fork();
    if (child < 0)
      break;
    if (child == 0)
      _exit(work());
    children.push_back(child);
  }
  return children;
}

struct Counters {
  std::atomic<int64_t> requests{0}, hits{0}, compiled{0}, cachedFailures{0},
      freshFailures{0}, corruptReads{0}, vanishedReads{0}, errors{0},
      warnings{0};
  std::atomic<int64_t> hitNanos[1 << 14]; ///< a sample of hit latencies
  std::atomic<int64_t> hitSamples{0};
};

/// Keys whose index is 15 mod 16 fail deterministically.
bool failsToCompile(int index) { return index % 16 == 15; }

std::string graphFor(const std::string &prefix, int index) {
  return prefix + "-" + std::to_string(index);
}

void appendLine(const std::string &path, const std::string &line) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  if (write(fd, line.data(), line.size()) < 0) {
  }
  close(fd);
}

size_t countLines(const std::string &path) {
  std::string text = readText(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// One worker process: `requests` random getOrCompile calls over `keys`.
int runWorker(const std::string &root, const std::string &countsDir,
              int requests, int keys, size_t artifactSize, Counters &counters) {
  CacheOptions options;
  options.root = root;
  options.pollSeconds = 0.005;
  options.heartbeatSeconds = 1;
  options.leaseSeconds = 60;
  options.warn = [&counters](const std::string &message) {
    // Waiting notices are expected under contention; anything else is not.
    if (message.rfind("waiting for", 0) != 0) {
      ++counters.warnings;
      std::fprintf(stderr, "[pid %d] warning: %s\n", getpid(), message.c_str());
    }
  };
  Result<Cache> cache = Cache::open(options);
  if (!cache) {
    std::fprintf(stderr, "[pid %d] %s\n", getpid(), cache.error.c_str());
    ++counters.errors;
    return 1;
  }
  std::vector<std::vector<uint8_t>> expected(keys);
  for (int k = 0; k < keys; ++k)
    expected[k] = artifactFor(graphFor("graph", k), artifactSize);
  std::mt19937 random(getpid() * 7919u + static_cast<unsigned>(now() * 1e6));
  for (int r = 0; r < requests; ++r) {
    int k = static_cast<int>(random() % keys);
    std::string graph = graphFor("graph", k);
    CacheKey key = makeKey(graph);
    auto compile = [&] {
      appendLine(countsDir + "/" + std::to_string(k),
                 std::to_string(getpid()) + "\n");
      sleepFor((1 + random() % 5) * 1e-3);
      if (failsToCompile(k))
        return failureOutput(FailureKind::CompileError, "error: " + graph);
      return successOutput(graph, artifactSize);
    };
    double start = now();
    CompileResult result = cache->getOrCompile(key, graph, compile);
    double elapsed = now() - start;
    ++counters.requests;
    switch (result.source) {
    case CompileResult::Source::Hit:
    case CompileResult::Source::Compiled: {
      if (result.source == CompileResult::Source::Hit) {
        ++counters.hits;
        // Lookup latency: hits that did not wait for another's compile.
        int64_t sample =
            result.waitedSeconds == 0 ? counters.hitSamples++ : (1 << 14);
        if (sample < (1 << 14))
          counters.hitNanos[sample] = static_cast<int64_t>(elapsed * 1e9);
      } else {
        ++counters.compiled;
      }
      if (failsToCompile(k) || !result.entry) {
        ++counters.errors;
        break;
      }
      Result<std::vector<uint8_t>> artifact =
          cache->readArtifact(*result.entry);
      if (!artifact &&
          artifact.error.find("no longer exists") != std::string::npos) {
        ++counters.vanishedReads; // pruned meanwhile: a miss, not corruption
        break;
      }
      if (!artifact || *artifact != expected[k]) {
        std::fprintf(stderr, "[pid %d] corrupt read of %s: %s\n", getpid(),
                     graph.c_str(), artifact.error.c_str());
        ++counters.corruptReads;
      }
      break;
    }
    case CompileResult::Source::CachedFailure:
    case CompileResult::Source::Failed:
      if (result.source == CompileResult::Source::Failed)
        ++counters.freshFailures;
      else
        ++counters.cachedFailures;
      if (!failsToCompile(k) || result.failure != FailureKind::CompileError ||
          result.diagnostic != "error: " + graph) {
        std::fprintf(stderr, "[pid %d] unexpected failure of %s: %s\n",
                     getpid(), graph.c_str(), result.diagnostic.c_str());
        ++counters.errors;
      }
      break;
    }
  }
  return 0;
}

double percentile(std::vector<int64_t> values, double fraction) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t index = std::min(values.size() - 1,
                          static_cast<size_t>(fraction * values.size()));
  return values[index] * 1e-6;
}

TEST(CacheStressTest, EightProcessesCompileEveryKeyExactlyOnce) {
  const int processes = 8, keys = 64;
  const int requests = fullStress() ? 1000 : 200;
  const size_t artifactSize = 16384;
  ScratchDir scratch;
  std::string root = scratch / "cache", countsDir = scratch / "counts";
  ASSERT_EQ(mkdir(countsDir.c_str(), 0755), 0);
  Counters *counters = sharedMemory<Counters>();
  ASSERT_NE(counters, nullptr);

  double start = now();
  std::vector<pid_t> children = forkChildren(processes, [&] {
    return runWorker(root, countsDir, requests, keys, artifactSize, *counters);
  });
  ASSERT_EQ(int(children.size()), processes);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << child << " ended with status " << status;
  }
  double elapsed = now() - start;

  size_t compiledOnce = 0;
  for (int k = 0; k < keys; ++k) {
    size_t compiles = countLines(countsDir + "/" + std::to_string(k));
    EXPECT_EQ(compiles, 1u)
        << "key " << k << " compiled " << compiles << " times";
    compiledOnce += compiles == 1;
  }
  EXPECT_EQ(counters->requests, processes * requests);
  EXPECT_EQ(counters->corruptReads, 0);
  EXPECT_EQ(counters->errors, 0);
  EXPECT_EQ(counters->warnings, 0);

  CacheOptions options;
  options.root = root;
  Result<Cache> cache = Cache::open(options);
  ASSERT_TRUE(cache) << cache.error;
  Cache::VerifyReport report = cache->verify(false);
  EXPECT_EQ(report.checked, keys);
  EXPECT_TRUE(report.corrupt.empty());
  EXPECT_TRUE(cache->locks().empty());

  // The statistics every process kept in the shared shards lost nothing:
  // each request counted once, as what it was, and the size counter is the
  // size of what is stored.
  Statistics statistics = cache->statistics();
  EXPECT_EQ(statistics.requests(), processes * requests);
  EXPECT_EQ(statistics[Counter::Hits], counters->hits.load());
  EXPECT_EQ(statistics[Counter::FailureHits], counters->cachedFailures.load());
  EXPECT_EQ(statistics[Counter::Misses], keys);
  EXPECT_EQ(statistics[Counter::CompileErrors], keys / 16);
  int64_t stored = 0;
  for (const EntryListing &listing : cache->list())
    stored += listing.sizeBytes;
  EXPECT_EQ(statistics[Counter::StoredBytes], stored);

  std::vector<int64_t> samples;
  for (int64_t i = 0; i < std::min<int64_t>(counters->hitSamples, 1 << 14); ++i)
    samples.push_back(counters->hitNanos[i]);
  std::printf("[stress] %d processes x %d requests over %d keys in %.2f s: "
              "%zu/%d keys compiled exactly once, %lld hits, %lld compiled, "
              "%lld cached failures, %lld corrupt reads; latency of hits "
              "without a wait p50 %.3f ms, p99 %.3f ms\n",
              processes, requests, keys, elapsed, compiledOnce, keys,
              static_cast<long long>(counters->hits.load()),
              static_cast<long long>(counters->compiled.load()),
              static_cast<long long>(counters->cachedFailures.load()),
              static_cast<long long>(counters->corruptReads.load()),
              percentile(samples, 0.5), percentile(samples, 0.99));
  freeShared(counters);
}

//===----------------------------------------------------------------------===//
// kill -9
//===----------------------------------------------------------------------===//

enum Phase : int {
  Starting = 0,   ///< forked, opening the cache
  Looking = 1,    ///< in getOrCompile before compiling (lookup, lock)
  Compiling = 2,  ///< in the compile step
  Publishing = 3, ///< compile returned: publishing and releasing
  Finished = 4,   ///< getOrCompile returned
};

TEST(CacheStressTest, ConcurrentStatisticsUpdatesLoseNothing) {
  // Every update stored at once, by 8 processes: two that pick one shard
  // at the same moment would lose one's update without the shard's lock.
  const int processes = 8, updates = fullStress() ? 2000 : 400;
  ScratchDir scratch;
  std::string root = scratch / "cache";
  std::vector<pid_t> children = forkChildren(processes, [&] {
    CacheOptions options;
    options.root = root;
    int warnings = 0;
    options.warn = [&warnings](const std::string &message) {
      ++warnings;
      std::fprintf(stderr, "[pid %d] warning: %s\n", getpid(), message.c_str());
    };
    Result<Cache> cache = Cache::open(options);
    if (!cache)
      return 1;
    Statistics delta;
    delta[Counter::Hits] = 1;
    delta[Counter::CompileMilliseconds] = 3;
    for (int i = 0; i < updates; ++i)
      cache->addStatistics(delta);
    return warnings == 0 ? 0 : 1;
  });
  ASSERT_EQ(int(children.size()), processes);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CacheOptions options;
  options.root = root;
  Result<Cache> cache = Cache::open(options);
  ASSERT_TRUE(cache) << cache.error;
  Statistics statistics = cache->statistics();
  EXPECT_EQ(statistics[Counter::Hits], processes * updates);
  EXPECT_EQ(statistics[Counter::CompileMilliseconds], 3 * processes * updates);
  EXPECT_TRUE(cache->locks().empty());
}

TEST(CacheStressTest, KillNineDuringCompileAndPublishLosesNothing) {
  const int injections = fullStress() ? 200 : 40;
  // Two children per key, started together: one compiles while the other
  // waits on its lock, and either may be killed.
  const int keys = injections / 2;
  const int parallel = 4;
  const size_t artifactSize = 256 * 1024; // makes publishing take a while
  ScratchDir scratch;
  std::string root = scratch / "cache";
  std::atomic<int> *phases = sharedMemory<std::atomic<int>>(injections);
  std::atomic<int> *corruptReports = sharedMemory<std::atomic<int>>();
  ASSERT_TRUE(phases && corruptReports);

  std::mt19937 random(12345);
  for (int first = 0; first < injections; first += parallel) {
    int last = std::min(injections, first + parallel);
    // Each child gets a phase to be killed in and a random offset into it
    // (the compile sleeps 2-20 ms; publishing 256 KiB with fsyncs takes a
    // few ms), so that the kills spread over lock waits, compiles and every
    // step of publishing.
    struct Victim {
      pid_t pid;
      int index;
      int target;
      double offset, armedAt = -1;
      bool killed = false;
    };
    std::vector<Victim> victims;
    for (int i = first; i < last; ++i) {
      pid_t child = fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        std::atomic<int> &phase = phases[i];
        CacheOptions options;
        options.root = root;
        options.pollSeconds = 0.002;
        // A torn entry would be quarantined by the next child and vanish
        // from the final verify: count every report instead.
        options.warn = [corruptReports](const std::string &message) {
          if (message.find("corrupt") != std::string::npos) {
            ++*corruptReports;
            std::fprintf(stderr, "[crash child] %s\n", message.c_str());
          }
        };
        Result<Cache> cache = Cache::open(options);
        if (!cache)
          _exit(1);
        std::string graph = graphFor("crash", i / 2);
        std::mt19937 childRandom(getpid());
        phase = Looking;
        cache->getOrCompile(makeKey(graph), graph, [&] {
          phase = Compiling;
          sleepFor((2 + childRandom() % 18) * 1e-3);
          CompileOutput output = successOutput(graph, artifactSize);
          phase = Publishing;
          return output;
        });
        phase = Finished;
        _exit(0);
      }
      int roll = static_cast<int>(random() % 10);
      int target = roll < 2 ? Looking : roll < 6 ? Compiling : Publishing;
      double span = target == Looking     ? 5e-3
                    : target == Compiling ? 20e-3
                                          : 8e-3;
      victims.push_back({child, i, target, span * (random() % 1000) / 1000.0});
    }
    double deadline = now() + 1.0;
    for (size_t alive = victims.size(); alive > 0;) {
      for (Victim &victim : victims) {
        if (victim.killed)
          continue;
        int phase = phases[victim.index];
        if (victim.armedAt < 0 && phase >= victim.target)
          victim.armedAt = now() + victim.offset;
        if ((victim.armedAt >= 0 && now() >= victim.armedAt) ||
            phase == Finished || now() > deadline) {
          kill(victim.pid, SIGKILL);
          int status = 0;
          waitpid(victim.pid, &status, 0);
          victim.killed = true;
          --alive;
        }
      }
      sleepFor(100e-6);
    }
  }
  std::map<int, int> killedIn;
  for (int i = 0; i < injections; ++i)
    ++killedIn[phases[i].load()];
  freeShared(phases, injections);
  EXPECT_EQ(corruptReports->load(), 0);
  freeShared(corruptReports);

  // 0 corrupt entries.
  Warnings warnings;
  CacheOptions options;
  options.root = root;
  options.leaseSeconds = 0.5;
  options.heartbeatSeconds = 0.1;
  options.pollSeconds = 0.01;
  options.warn = warnings.sink();
  Result<Cache> cache = Cache::open(options);
  ASSERT_TRUE(cache) << cache.error;
  Cache::VerifyReport report = cache->verify(false);
  EXPECT_TRUE(report.corrupt.empty())
      << report.corrupt.size()
      << " corrupt, first: " << report.corrupt.front().first << ": "
      << report.corrupt.front().second;
  int64_t entriesAfterKills = report.checked;
  EXPECT_EQ(
      std::distance(fs::directory_iterator(cache->versionDir() + "/quarantine"),
                    fs::directory_iterator()),
      0);

  // Every lock left by a killed process is stale at once on this host.
  std::vector<LockInfo> leftover = cache->locks();
  for (const LockInfo &lock : leftover)
    EXPECT_TRUE(lock.stale) << lock.path << " held by pid " << lock.pid;

  // Pretend half of them (and two locks of keys never compiled) were left
  // by processes on another node: only the lease can free those.
  std::set<std::string> remoteKeys;
  FakeOwner remote;
  remote.host = "crashed-node";
  remote.bootId = "remote-boot";
  remote.pid = 777;
  for (size_t i = 0; i < leftover.size(); i += 2) {
    writeLock(leftover[i].path, remote);
    remoteKeys.insert(leftover[i].key.dirName());
  }
  std::vector<std::string> graphs;
  for (int k = 0; k < keys; ++k)
    graphs.push_back(graphFor("crash", k));
  for (int k = keys; k < keys + 2; ++k) {
    graphs.push_back(graphFor("crash", k));
    CacheKey key = makeKey(graphs.back());
    writeLock(cache->versionDir() + "/locks/" + key.dirName() + ".lock",
              remote);
    remoteKeys.insert(key.dirName());
  }

  // Every key now compiles or hits, concurrently.
  double recoveryStart = now();
  std::vector<CompileResult> results(graphs.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < graphs.size(); ++k)
    threads.emplace_back([&, k] {
      results[k] = cache->getOrCompile(makeKey(graphs[k]), graphs[k], [&] {
        return successOutput(graphs[k], artifactSize);
      });
    });
  for (std::thread &thread : threads)
    thread.join();
  double recoverySeconds = now() - recoveryStart;
  double sameHostWaitMax = 0, remoteWaitMin = 1e9;
  for (size_t k = 0; k < graphs.size(); ++k) {
    SCOPED_TRACE(graphs[k]);
    const CompileResult &result = results[k];
    ASSERT_TRUE(result.source == CompileResult::Source::Hit ||
                result.source == CompileResult::Source::Compiled)
        << result.diagnostic;
    ASSERT_TRUE(result.entry);
    Result<std::vector<uint8_t>> artifact = cache->readArtifact(*result.entry);
    ASSERT_TRUE(artifact) << artifact.error;
    EXPECT_EQ(*artifact, artifactFor(graphs[k], artifactSize));
    bool remoteLock = remoteKeys.count(makeKey(graphs[k]).dirName());
    if (result.source == CompileResult::Source::Compiled && remoteLock) {
      remoteWaitMin = std::min(remoteWaitMin, result.waitedSeconds);
      EXPECT_GE(result.waitedSeconds, options.leaseSeconds - 0.01);
    } else if (result.source == CompileResult::Source::Compiled) {
      sameHostWaitMax = std::max(sameHostWaitMax, result.waitedSeconds);
      EXPECT_LT(result.waitedSeconds, options.leaseSeconds);
    }
  }

  // Locks of keys that were already published: clear-locks frees them, the
  // same-host ones at once and the remote ones once past the lease.
  for (const LockInfo &lock : cache->locks()) {
    if (!remoteKeys.count(lock.key.dirName())) {
      EXPECT_TRUE(lock.stale) << lock.path;
    }
  }
  cache->clearLocks(false);
  for (const LockInfo &lock : cache->locks())
    EXPECT_TRUE(remoteKeys.count(lock.key.dirName())) << lock.path;
  sleepFor(options.leaseSeconds + 0.1);
  cache->clearLocks(false);
  EXPECT_TRUE(cache->locks().empty());

  report = cache->verify(false);
  EXPECT_TRUE(report.corrupt.empty());
  EXPECT_EQ(report.checked, static_cast<int64_t>(graphs.size()));

  // Half-written temporaries of killed publishers go with clean once they
  // are old enough to be surely abandoned.
  size_t incomplete = 0;
  for (const EntryListing &listing : cache->list())
    incomplete += listing.status == "incomplete";
  std::string tmp = cache->versionDir() + "/tmp";
  size_t temporaries = 0;
  for (auto &item : fs::directory_iterator(tmp)) {
    backdate(item.path().string(), 7200);
    ++temporaries;
  }
  cache->clean(false, -1);
  EXPECT_EQ(
      std::distance(fs::directory_iterator(tmp), fs::directory_iterator()), 0);
  EXPECT_EQ(cache->verify(false).checked, static_cast<int64_t>(graphs.size()));

  std::printf("[crash] %d kill -9 injections over %d keys: killed while "
              "starting %d, looking/locking %d, compiling %d, publishing %d, "
              "after finishing %d; %lld entries survived, 0 corrupt; %zu "
              "stale locks left (%zu simulated remote); recovery of %zu keys "
              "in %.2f s (same-host waits <= %.3f s, remote waits >= %.3f s "
              "with a %.1f s lease); %zu incomplete temporaries, %zu "
              "temporary files cleaned\n",
              injections, keys, killedIn[Starting], killedIn[Looking],
              killedIn[Compiling], killedIn[Publishing], killedIn[Finished],
              static_cast<long long>(entriesAfterKills), leftover.size(),
              remoteKeys.size(), graphs.size(), recoverySeconds,
              sameHostWaitMax, remoteWaitMin, options.leaseSeconds, incomplete,
              temporaries);
  EXPECT_GT(killedIn[Compiling] + killedIn[Publishing], 0);
}

//===----------------------------------------------------------------------===//
// Maintenance under traffic
//===----------------------------------------------------------------------===//

TEST(CacheStressTest, MaintenanceWhileOthersCompileIsSafe) {
  const int workers = 4, keys = 32, requests = fullStress() ? 600 : 150;
  const size_t artifactSize = 16384;
  ScratchDir scratch;
  std::string root = scratch / "cache", countsDir = scratch / "counts";
  ASSERT_EQ(mkdir(countsDir.c_str(), 0755), 0);
  Counters *counters = sharedMemory<Counters>();
  std::atomic<int64_t> *maintenance = sharedMemory<std::atomic<int64_t>>(3);
  std::atomic<bool> *stop = sharedMemory<std::atomic<bool>>();
  ASSERT_TRUE(counters && maintenance && stop);

  std::vector<pid_t> children = forkChildren(workers, [&] {
    return runWorker(root, countsDir, requests, keys, artifactSize, *counters);
  });
  ASSERT_EQ(int(children.size()), workers);
  pid_t maintainer = fork();
  ASSERT_GE(maintainer, 0);
  if (maintainer == 0) {
    CacheOptions options;
    options.root = root;
    options.warn = [](const std::string &message) {
      std::fprintf(stderr, "[maintainer] warning: %s\n", message.c_str());
    };
    Result<Cache> cache = Cache::open(options);
    if (!cache)
      _exit(1);
    while (!*stop) {
      int64_t total = 0;
      for (const EntryListing &listing : cache->list())
        total += listing.sizeBytes;
      cache->locks();
      Cache::VerifyReport report = cache->verify(false);
      maintenance[1] += static_cast<int64_t>(report.corrupt.size());
      for (auto &[path, why] : report.corrupt)
        std::fprintf(stderr, "[maintainer] corrupt %s: %s\n", path.c_str(),
                     why.c_str());
      cache->clearLocks(false);
      cache->clean(false, -1);
      maintenance[2] += cache->prune(total / 2).removedEntries;
      ++maintenance[0];
    }
    _exit(0);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  *stop = true;
  int status = 0;
  ASSERT_EQ(waitpid(maintainer, &status, 0), maintainer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  EXPECT_EQ(counters->requests, workers * requests);
  EXPECT_EQ(counters->corruptReads, 0);
  EXPECT_EQ(counters->errors, 0);
  EXPECT_EQ(counters->warnings, 0);
  EXPECT_EQ(maintenance[1], 0); // verify never saw a corrupt entry
  EXPECT_GT(maintenance[0], 0);

  CacheOptions options;
  options.root = root;
  Result<Cache> cache = Cache::open(options);
  ASSERT_TRUE(cache) << cache.error;
  EXPECT_TRUE(cache->verify(false).corrupt.empty());
  EXPECT_TRUE(cache->locks().empty());
  std::printf("[maintenance] %d workers x %d requests with %lld maintenance "
              "rounds (%lld entries pruned) alongside: %lld reads found "
              "their entry pruned, 0 corrupt\n",
              workers, requests, static_cast<long long>(maintenance[0].load()),
              static_cast<long long>(maintenance[2].load()),
              static_cast<long long>(counters->vanishedReads.load()));
  freeShared(counters);
  freeShared(maintenance, 3);
  freeShared(stop);
}

} // namespace
