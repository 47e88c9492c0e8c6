//===- CacheAccess.h - the store's operations on an opened cache -*- C++
//-*-===//
//
// What the public operations of Cache share: the layout of the version
// directory, the state shared by all copies of one opened Cache, and
// CacheAccess, the internal operations that need that state. Store.cpp reads,
// quarantines and publishes entries, GetOrCompile.cpp waits for locks and
// compiles, Maintenance.cpp lists, cleans and prunes.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_CACHE_CACHEACCESS_H
#define TRN_LIB_CACHE_CACHEACCESS_H

#include "trn/Cache/Cache.h"

#include "Support.h"
#include "VerifyEntry.h"

#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlir::trn::cache::detail {

/// Directories of the version directory besides the entries.
constexpr const char *kTmpDir = "tmp";
constexpr const char *kLocksDir = "locks";
constexpr const char *kQuarantineDir = "quarantine";
constexpr const char *kStatsDir = "stats";

/// State shared by all copies of one opened Cache.
struct CacheState {
  std::atomic<bool> lockless{false};
  std::atomic<bool> warnedLockless{false};
  std::mutex mutex;
  /// Problems already reported, so that one that cannot be fixed (e.g. a
  /// read-only cache) is not repeated on every lookup.
  std::set<std::string> reported;
  /// Why the cache is read-only ("" when it is not).
  std::string readOnlyReason;
  /// Counted by this process and not yet added to a shard, and when the
  /// last flush was (steadySeconds); both under `mutex`.
  Statistics pending;
  double lastFlushSeconds = 0;
};

/// The version trees (`trncc-*` directories) under `root`, sorted.
std::vector<std::string> versionTrees(const std::string &root);
/// A tree's counters: the sum of its shard files (none: all zero).
Statistics readTreeStatistics(const std::string &tree);
/// The config file in the cache root.
constexpr const char *kConfigFile = "config.json";

struct CacheAccess {
  Cache &cache;
  CacheState &state;
  explicit CacheAccess(Cache &cache) : cache(cache), state(*cache.state) {}

  const CacheOptions &opts() const { return cache.opts; }
  std::string dir(const char *name) const {
    return joinPath(cache.versionDir(), name);
  }
  std::string entryPath(const CacheKey &key) const {
    return joinPath(cache.versionDir(), key.dirName());
  }
  std::string lockPath(const std::string &dirName) const {
    return joinPath(dir(kLocksDir), dirName + ".lock");
  }
  void warn(const std::string &message) const {
    if (cache.opts.warn)
      cache.opts.warn(message);
  }
  bool readOnly() const { return cache.opts.readOnly; }
  /// "cache <root> is read-only (<why>)".
  std::string readOnlyText() const {
    return "cache " + cache.opts.root + " is read-only (" +
           state.readOnlyReason + ")";
  }
  /// For maintenance that writes: true (after a warning) if the cache is
  /// read-only and `what` must not run.
  bool refusesWrites(const std::string &what) const {
    if (!readOnly())
      return false;
    warn(readOnlyText() + ": " + what + " changes nothing");
    return true;
  }
  /// Warns about `message` once per opened cache.
  void warnOnce(const std::string &message) {
    {
      std::lock_guard<std::mutex> guard(state.mutex);
      if (!state.reported.insert(message).second)
        return;
    }
    warn(message);
  }

  static std::string vanishedEntryText(const std::string &path) {
    return "cache entry " + path +
           " no longer exists (removed by trn-cache clean or prune?); run "
           "again to compile it";
  }

  enum class QuarantineOutcome { Moved, Gone, Failed };

  /// Moves a corrupt entry (the directory `info` identifies) into
  /// quarantine/, where `trn-cache clean` deletes it.
  QuarantineOutcome quarantine(const std::string &path, const struct stat &info,
                               const std::string &reason,
                               std::string &destination, int &error);
  /// Quarantines and reports a corrupt entry; returns the user's message.
  std::string handleCorrupt(const LoadedEntry &loaded);

  /// Refreshes the entry's last-use time (at most once a minute).
  void touchLastUsed(LoadedEntry &loaded);

  /// A verified entry, or std::nullopt for a miss (corrupt entries are
  /// quarantined on the way).
  std::optional<LoadedEntry> lookup(const CacheKey &key);

  /// Reads one file of an entry and verifies it against the manifest.
  Result<std::string> readEntryFile(const Entry &entry, const char *name,
                                    const char *what);

  Result<Entry> publish(const CacheKey &key, const std::string &graphText,
                        const CompileOutput &output, int &error);
  CompileResult getOrCompile(const CacheKey &key, const std::string &graphText,
                             const std::function<CompileOutput()> &compile);
  // Statistics (Statistics.cpp).
  /// Adds `amount` to a counter; flushStatistics() stores it.
  void count(Counter counter, int64_t amount = 1);
  /// Adds what was counted to a shard of this version's tree, then enforces
  /// the size limit if the stored bytes grew. Hits alone wait for a second
  /// since the last flush (or `force`), so that a hit costs no file writes.
  void flushStatistics(bool force = false);
  /// Makes `tree`'s stats/ directory; the process that makes it counts the
  /// tree's entries so far (an older trn's). False after a warning.
  bool ensureStatsDirectory(const std::string &tree);
  /// Adds `delta` to a shard of `tree` (its stats/ made first); false after
  /// a warning if no shard could be updated.
  bool addToTree(const std::string &tree, const Statistics &delta);
  /// Evicts down to kEvictToFraction of the configured limit when the
  /// stored bytes of all trees exceed it (one process at a time).
  void enforceMaxSize();

  /// Moves a directory out of the way and deletes it; false if it vanished.
  bool removeEntryDirectory(const std::string &path,
                            const std::string &dirName);
};

} // namespace mlir::trn::cache::detail

#endif // TRN_LIB_CACHE_CACHEACCESS_H
