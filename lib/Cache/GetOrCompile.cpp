//===- GetOrCompile.cpp - compiling each key once -------------------------===//
//
// Cache::getOrCompile: a lookup, then the key's lock (waiting while another
// process compiles it, taking over a lock whose heartbeat stopped), a second
// lookup, the compile and the publish. Lock.cpp holds the lock-file
// mechanics; this is the waiting policy.
//
//===----------------------------------------------------------------------===//

#include "CacheAccess.h"
#include "Lock.h"

#include <fcntl.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>

namespace mlir::trn::cache {

using namespace detail;

static CompileResult resultFromEntry(const Entry &entry, double waited) {
  CompileResult result;
  result.waitedSeconds = waited;
  result.entry = entry;
  if (entry.status == EntryStatus::Done) {
    result.source = CompileResult::Source::Hit;
  } else {
    result.source = CompileResult::Source::CachedFailure;
    result.failure = entry.failure;
    result.diagnostic = entry.diagnostic;
  }
  return result;
}

static std::string describeHolder(const LockSnapshot &snapshot) {
  if (!snapshot.owner)
    return "an unreadable lock file";
  std::string text = snapshot.owner->describe();
  double age =
      nowUnixSeconds() - (static_cast<double>(snapshot.info.st_mtim.tv_sec) +
                          snapshot.info.st_mtim.tv_nsec * 1e-9);
  return text + " (heartbeat " + formatSeconds(std::max(0.0, age)) + " ago)";
}

CompileResult
CacheAccess::getOrCompile(const CacheKey &key, const std::string &graphText,
                          const std::function<CompileOutput()> &compile) {
  const CacheOptions &options = opts();
  std::string name = key.dirName();

  std::string retriedPublisher;
  if (std::optional<LoadedEntry> found = lookup(key)) {
    if (found->entry.status == EntryStatus::Done || !options.retryFailed)
      return resultFromEntry(found->entry, 0);
    retriedPublisher = found->manifest.publisher;
  }
  // With --retry-failed, a failed entry counts only if someone published it
  // after we asked (they retried it while we waited).
  auto settles = [&](const LoadedEntry &loaded) {
    return loaded.entry.status == EntryStatus::Done || !options.retryFailed ||
           loaded.manifest.publisher != retriedPublisher;
  };

  std::unique_ptr<HeldLock> held;
  double waitStart = steadySeconds();
  // A read-only cache takes no lock: creating one would need a write.
  if (!state.lockless && !readOnly()) {
    std::string tmpDir = dir(kTmpDir), lockFile = lockPath(name);
    makeDirectories(tmpDir);
    makeDirectory(dir(kLocksDir));
    LeaseWatch watch;
    double backoff = std::min(0.002, options.pollSeconds);
    bool announced = false, attempt = true;
    while (true) {
      if (attempt) {
        int err = 0;
        LockAttempt outcome = tryLock(lockFile, tmpDir, name, held, err);
        if (outcome == LockAttempt::Acquired)
          break;
        if (outcome == LockAttempt::Unsupported) {
          state.lockless = true;
          if (!state.warnedLockless.exchange(true))
            warn("the filesystem of " + cache.versionDir() +
                 " does not support hard links (link: " + errnoText(err) +
                 "); compiling without locks: concurrent requests for one "
                 "graph may compile it twice, with the same result");
          break;
        }
        if (outcome == LockAttempt::Failed) {
          warnOnce("cannot create locks in " + dir(kLocksDir) + " (" +
                   errnoText(err) +
                   "); compiling without a lock: concurrent requests for one "
                   "graph may compile it twice");
          break;
        }
      }
      LockSnapshot snapshot = readLock(lockFile);
      if (!snapshot.exists) {
        attempt = true; // released meanwhile: try again at once
        continue;
      }
      attempt = false;
      std::optional<std::string> staleReason;
      if (snapshot.owner)
        staleReason = ownerGoneReason(*snapshot.owner);
      double quiet = watch.quietSeconds(snapshot);
      if (!staleReason && quiet >= options.leaseSeconds)
        staleReason = "no heartbeat for " + formatSeconds(quiet) + " (lease " +
                      formatSeconds(options.leaseSeconds) + ")";
      if (staleReason) {
        if (breakLock(lockFile, tmpDir, name, snapshot))
          warn("took over the stale lock on " + name + " held by " +
               (snapshot.owner ? snapshot.owner->describe()
                               : std::string("an unknown owner")) +
               ": " + *staleReason);
        attempt = true;
        continue;
      }
      if (std::optional<LoadedEntry> found = lookup(key);
          found && settles(*found))
        return resultFromEntry(found->entry, steadySeconds() - waitStart);
      double waited = steadySeconds() - waitStart;
      if (waited >= options.lockWaitSeconds) {
        warn("gave up waiting for the lock on " + name + " after " +
             formatSeconds(waited) + ": it is held by " +
             describeHolder(snapshot) +
             "; compiling it anyway (raise the lock wait, or run trn-cache "
             "clear-locks if that process is gone)");
        break;
      }
      if (!announced && waited >= 1.0) {
        announced = true;
        warn("waiting for " + name + ": " + describeHolder(snapshot) +
             " is compiling it; waiting up to " +
             formatSeconds(options.lockWaitSeconds));
      }
      // Jittered exponential backoff up to the poll interval, so that many
      // waiters do not hit the file server in lockstep.
      double jitter = 0.75 + 0.5 * randomUnit();
      sleepSeconds(
          std::min(backoff * jitter, options.lockWaitSeconds - waited + 0.001));
      backoff = std::min(backoff * 2, options.pollSeconds);
    }
  }
  double waited = steadySeconds() - waitStart;

  // Whoever held the lock may have published while we took it over. After a
  // wait, reopen the version directory first: on NFS that revalidates it and
  // drops a cached "no such entry" (negative dentry) from before the publish.
  if (waited > 0.0005)
    FileDescriptor(
        ::open(cache.versionDir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (std::optional<LoadedEntry> found = lookup(key); found && settles(*found))
    return resultFromEntry(found->entry, waited);

  if (held)
    held->startHeartbeat(options.heartbeatSeconds, options.warn);
  CompileOutput output;
  double compileStart = steadySeconds();
  bool threw = false;
  try {
    output = compile();
  } catch (const std::exception &exception) {
    threw = true;
    output.diagnostic =
        std::string("the compile step threw: ") + exception.what();
  } catch (...) {
    threw = true;
    output.diagnostic = "the compile step threw an unknown exception";
  }

  CompileResult result;
  result.waitedSeconds = waited;
  if (threw) {
    result.source = CompileResult::Source::Failed;
    result.diagnostic = output.diagnostic;
    return result;
  }
  if (output.metadata.compileSeconds == 0)
    output.metadata.compileSeconds = steadySeconds() - compileStart;
  count(Counter::CompileMilliseconds,
        std::llround(output.metadata.compileSeconds * 1000));

  if (output.failure != FailureKind::None && !isCacheable(output.failure)) {
    result.source = CompileResult::Source::Failed;
    result.failure = output.failure;
    result.diagnostic =
        output.diagnostic.empty()
            ? std::string("the compile failed (") +
                  failureKindName(output.failure) +
                  "); not cached, the next request compiles it again"
            : output.diagnostic;
    return result;
  }

  if (readOnly()) {
    // Compiled, not stored: say so once, and give the result to the caller.
    warnOnce(readOnlyText() + ": compiled without storing the result");
    if (output.failure == FailureKind::None) {
      result.source = CompileResult::Source::Compiled;
    } else {
      result.source = CompileResult::Source::Failed;
      result.failure = output.failure;
      result.diagnostic = output.diagnostic;
    }
    return result;
  }

  int error = 0;
  Result<Entry> published = publish(key, graphText, output, error);
  held.reset(); // release only after publishing: waiters then find the entry
  if (!published) {
    warn(published.error);
    result.source = CompileResult::Source::Failed;
    if (output.failure != FailureKind::None) {
      result.failure = output.failure;
      result.diagnostic = output.diagnostic;
    } else {
      result.failure =
          isOutOfDisk(error) ? FailureKind::OutOfDisk : FailureKind::None;
      result.diagnostic =
          "the compile succeeded but its result could not be stored: " +
          published.error;
    }
    return result;
  }
  result.entry = *published;
  if (published->status == EntryStatus::Done) {
    result.source = output.failure == FailureKind::None
                        ? CompileResult::Source::Compiled
                        : CompileResult::Source::Hit;
  } else {
    result.source = CompileResult::Source::Failed;
    result.failure = published->failure;
    result.diagnostic = published->diagnostic;
  }
  return result;
}

/// Counts a request by its outcome (docs/cache.md, "Statistics").
static void countRequest(CacheAccess &access, const CompileResult &result) {
  access.count(Counter::WaitMilliseconds,
               std::llround(result.waitedSeconds * 1000));
  switch (result.source) {
  case CompileResult::Source::Hit:
    access.count(Counter::Hits);
    return;
  case CompileResult::Source::CachedFailure:
    access.count(Counter::FailureHits);
    return;
  case CompileResult::Source::Compiled:
    access.count(Counter::Misses);
    return;
  case CompileResult::Source::Failed:
    access.count(Counter::Misses);
    access.count(result.failure == FailureKind::CompileError
                     ? Counter::CompileErrors
                     : Counter::UncachedFailures);
    return;
  }
}

CompileResult
Cache::getOrCompile(const CacheKey &key, const std::string &graphText,
                    const std::function<CompileOutput()> &compile) {
  try {
    CacheAccess access(*this);
    CompileResult result = access.getOrCompile(key, graphText, compile);
    countRequest(access, result);
    access.flushStatistics();
    return result;
  } catch (const std::exception &exception) {
    CompileResult result;
    result.source = CompileResult::Source::Failed;
    result.diagnostic =
        "compile cache error for " + key.dirName() + ": " + exception.what();
    return result;
  }
}

void setLinkFunctionForTesting(
    std::function<int(const char *from, const char *to)> link) {
  setLinkFunction(std::move(link));
}

} // namespace mlir::trn::cache
