//===- Cache.h - compile cache on a shared filesystem -----------*- C++ -*-===//
//
// The compile cache shared by every process and node that points at one
// directory (local disk, NFS, Lustre). The protocol (docs/cache.md):
//
//  * Readers never lock. An entry is a directory published by renaming a
//    fully written and fsynced temporary directory into place, so a reader
//    sees a whole entry or none. Every file of an entry is listed with its
//    XXH3-128 checksum in the entry's manifest, and every read verifies it: a
//    corrupt entry is reported once, moved to `quarantine/` and treated as a
//    miss.
//  * Locks exist only to avoid compiling one key twice at once: one lock file
//    per key, created atomically with link(2), holding the owner (host, pid,
//    process start time, nonce). The holder refreshes the file's mtime (the
//    heartbeat); a waiter takes over a lock whose heartbeat has not moved for
//    the lease (measured on the waiter's own monotonic clock, so clock skew
//    between nodes does not matter), and at once when the holder is on the
//    same host and its process is gone. Where link(2) is not supported,
//    compiles proceed without a lock: duplicate work, same result.
//  * A deterministic compile error is cached with its diagnostic; a compile
//    killed by a signal, out of memory, past its timeout or out of disk is
//    not recorded and is retried by the next request.
//
// No MLIR or LLVM dependency; no exceptions escape.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_CACHE_CACHE_H
#define TRN_CACHE_CACHE_H

#include "trn/Cache/Key.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::trn::cache {

/// Version of the on-disk layout (root marker, manifest, metadata). Readers
/// refuse entries and roots written with a newer format.
constexpr int kFormatVersion = 1;

/// The default root when neither --cache-dir nor TRN_CACHE_DIR is given.
constexpr const char *kDefaultRoot = "/var/tmp/trn-compile-cache";

/// Resolves the cache root: `cliDir` if non-empty, else $TRN_CACHE_DIR if set
/// and non-empty, else kDefaultRoot.
std::string resolveRoot(const std::string &cliDir);

/// A result that is either a value or a one-line error message.
template <typename T> struct Result {
  std::optional<T> value;
  std::string error;
  explicit operator bool() const { return value.has_value(); }
  T &operator*() { return *value; }
  T *operator->() { return &*value; }
  static Result failure(std::string message) {
    Result result;
    result.error = std::move(message);
    return result;
  }
  static Result success(T v) {
    Result result;
    result.value = std::move(v);
    return result;
  }
};
struct Unit {};

namespace detail {
struct CacheState;
struct CacheAccess;
} // namespace detail

struct CacheOptions {
  std::string root;              ///< already resolved (resolveRoot)
  double leaseSeconds = 300;     ///< a heartbeat older than this is stale
  double heartbeatSeconds = 10;  ///< how often a holder refreshes its lock
  double lockWaitSeconds = 3600; ///< longest wait for another's compile
  double pollSeconds = 0.25;     ///< how often a waiter looks again
  bool retryFailed = false;      ///< recompile cached deterministic failures
  /// Create the root (and its marker) if it does not exist. Maintenance
  /// commands open with false so that a typo is an error, not a new cache.
  bool create = true;
  /// Never write to the cache: hits are served, a miss compiles without a
  /// lock and without publishing, nothing is touched, quarantined or
  /// removed. open() also sets it when $TRN_CACHE_READ_ONLY is 1 and when
  /// the OS says the cache cannot be written (a read-only mount: EROFS;
  /// EACCES), as for a cluster's shared cache that a CI job fills.
  bool readOnly = false;
  /// Where diagnostics that are not errors go (corrupt entry quarantined,
  /// waiting for a lock, lockless mode); defaults to stderr.
  std::function<void(const std::string &)> warn;
};

/// Why a compile failed. Only CompileError is deterministic and cached.
enum class FailureKind {
  None,
  CompileError, ///< the compiler rejected the graph: cached with diagnostic
  Killed,       ///< the compile process died on a signal: not cached
  OutOfMemory,  ///< not cached
  Timeout,      ///< not cached
  OutOfDisk,    ///< not cached
};
const char *failureKindName(FailureKind kind);
std::optional<FailureKind> parseFailureKind(const std::string &name);
bool isCacheable(FailureKind kind);

/// flags.json of an entry.
struct EntryMetadata {
  std::vector<std::string> flags; ///< as given by the user
  std::string normalizedFlags;    ///< NormalizedFlags::canonical()
  std::string target;
  std::string compilerVersion;
  std::string host;
  std::string graphName; ///< e.g. the entry function or model name
  double compileSeconds = 0;
  int64_t peakMemoryBytes = 0;
  int64_t createdUnix = 0; ///< set by publish
};

/// What a compile step returns to getOrCompile.
struct CompileOutput {
  FailureKind failure = FailureKind::None; ///< None means success
  std::string diagnostic;                  ///< for failures: the message
  std::vector<uint8_t> artifact;           ///< for success
  std::string log;                         ///< compiler log (both cases)
  EntryMetadata metadata;
};

enum class EntryStatus { Done, Failed };

/// A published, verified entry.
struct Entry {
  CacheKey key;
  std::string path; ///< the entry directory
  EntryStatus status = EntryStatus::Done;
  FailureKind failure = FailureKind::None;
  std::string diagnostic;
  EntryMetadata metadata;
  int64_t sizeBytes = 0;        ///< on disk, all files
  int64_t graphBytes = 0;       ///< uncompressed graph text
  int64_t storedGraphBytes = 0; ///< compressed graph file
  int64_t lastUsedUnix = 0;
};

/// A lock file and what its owner wrote in it.
struct LockInfo {
  CacheKey key;
  std::string path;
  std::string host;
  int64_t pid = 0;
  int64_t startedUnix = 0; ///< when the owner took the lock
  double heartbeatAgeSeconds = 0;
  bool stale = false;      ///< heartbeat past the lease, or owner known dead
  std::string staleReason; ///< e.g. "pid 123 on this host is gone"
};

/// Outcome of getOrCompile.
struct CompileResult {
  enum class Source { Hit, Compiled, CachedFailure, Failed } source;
  /// Hit, CachedFailure, Compiled (unless the cache is read-only)
  std::optional<Entry> entry;
  FailureKind failure = FailureKind::None;
  std::string diagnostic;   ///< CachedFailure, Failed
  double waitedSeconds = 0; ///< time spent waiting for another's lock
};

/// Per-entry state for `trn-cache list`.
struct EntryListing {
  CacheKey key;
  std::string path;
  std::string status; ///< "done", "failed", "incomplete" (temp dir), "corrupt"
  std::optional<Entry> entry; ///< for done/failed
  std::string problem;        ///< for corrupt: why
  int64_t sizeBytes = 0;
  int64_t createdUnix = 0;
  int64_t lastUsedUnix = 0;
  bool locked = false;
};

/// A statistics counter (trn/Cache/Counters.def; docs/cache.md,
/// "Statistics").
enum class Counter {
#define TRN_CACHE_COUNTER(Name, key, zeroable, description) Name,
#include "trn/Cache/Counters.def"
};
constexpr size_t kCounterCount = 0
#define TRN_CACHE_COUNTER(Name, key, zeroable, description) +1
#include "trn/Cache/Counters.def"
    ;
struct CounterInfo {
  const char *key; ///< in the shard files and `trn-cache stats --json`
  bool zeroable;   ///< zeroed by `trn-cache stats --zero`
  const char *description;
};
const CounterInfo &counterInfo(Counter counter);

/// Counters of one compiler version's tree (summed over its shard files).
struct Statistics {
  std::array<int64_t, kCounterCount> values{};
  int64_t zeroedUnix = 0; ///< when `stats --zero` last ran; 0 if never
  int64_t &operator[](Counter counter) {
    return values[static_cast<size_t>(counter)];
  }
  int64_t operator[](Counter counter) const {
    return values[static_cast<size_t>(counter)];
  }
  Statistics &operator+=(const Statistics &other);
  bool empty() const;
  /// Hits (cached compile errors included) and misses.
  int64_t requests() const;
  /// Hits over requests; std::nullopt before the first request.
  std::optional<double> hitRate() const;
};

/// One compiler version's tree under the root: `trncc-<version>`.
struct VersionTree {
  std::string version;
  std::string path;
  bool current = false; ///< this trn's compiler version
  Statistics statistics;
  int64_t entries = 0, bytes = 0; ///< by a scan of its entries
  int64_t lastUsedUnix = 0;       ///< of its most recently used entry
  /// A lock whose heartbeat is within the lease: a compile in progress.
  bool compiling = false;
};

/// Settings kept in the cache itself (`<root>/config.json`), so every
/// process and node that shares the cache obeys them (`trn-cache config`).
struct CacheConfig {
  /// The entries of all compiler versions together are kept at most this
  /// large: the store that crosses it evicts the least recently used ones
  /// down to kEvictToFraction of it. std::nullopt: no limit.
  std::optional<int64_t> maxSizeBytes;
};
/// After crossing the limit, evict down to this fraction of it, so that the
/// next stores do not each evict again.
constexpr double kEvictToFraction = 0.9;

class Cache {
public:
  /// Opens (and with options.create, creates) the cache at options.root.
  /// Errors: missing root (create=false), not a directory, unreadable, an
  /// unwritable directory that holds no cache yet, a directory that is not a
  /// trn cache (non-empty without our marker), a cache written by a newer
  /// format version, a $TRN_CACHE_READ_ONLY that is not 0 or 1. A cache
  /// that cannot be written opens read-only.
  static Result<Cache> open(CacheOptions options);
  /// The last copy of an opened cache stores what it counted and has not
  /// stored yet (hits are stored at most once a second).
  ~Cache();
  Cache(const Cache &) = default;
  Cache(Cache &&) = default;
  Cache &operator=(const Cache &) = default;
  Cache &operator=(Cache &&) = default;

  const CacheOptions &options() const { return opts; }
  /// Whether this cache is used read-only (CacheOptions::readOnly), and why:
  /// "TRN_CACHE_READ_ONLY=1", "read-only file system", ...
  bool readOnly() const { return opts.readOnly; }
  const std::string &readOnlyReason() const;
  /// `<root>/trncc-<compiler version>`.
  std::string versionDir() const;

  /// Looks up a published entry; verifies its manifest and metadata. A
  /// corrupt entry is reported through options.warn, quarantined and
  /// reported as a miss (std::nullopt). Touches the last-use time on a hit.
  std::optional<Entry> lookup(const CacheKey &key);

  /// Reads and verifies the artifact / the graph text / the log of an entry.
  Result<std::vector<uint8_t>> readArtifact(const Entry &entry);
  Result<std::string> readGraph(const Entry &entry);
  Result<std::string> readLog(const Entry &entry);

  /// Looks `key` up; on a miss (or a cached failure with retryFailed) takes
  /// the key's lock (waiting while another process compiles it, bounded by
  /// lockWaitSeconds, then compiling anyway with a warning naming the
  /// holder), checks again, runs `compile`, and publishes the result when it
  /// is a success or a deterministic failure. The lock is heartbeated while
  /// `compile` runs and released afterwards. On a read-only cache a miss
  /// runs `compile` without a lock, publishes nothing and warns once
  /// (through options.warn); a success is then Compiled without `entry`.
  CompileResult getOrCompile(const CacheKey &key, const std::string &graphText,
                             const std::function<CompileOutput()> &compile);

  /// Publishes an entry atomically (used by getOrCompile). Publishing a key
  /// that another process published meanwhile is success (their entry wins);
  /// a failed entry is replaced by a successful one.
  Result<Entry> publish(const CacheKey &key, const std::string &graphText,
                        const CompileOutput &output);

  // Maintenance (trn-cache). All are safe while other processes use the cache.
  std::vector<EntryListing> list();
  /// One entry as list() reports it, without side effects: the one at
  /// `path` if given (an entry directory, perhaps of another compiler
  /// version's tree), else `key`'s in versionDir(). std::nullopt if none.
  std::optional<EntryListing> inspect(const CacheKey &key,
                                      const std::string &path = "");
  std::vector<LockInfo> locks();
  /// Why `key` missed when the same graph is cached with other flags (the
  /// key's flags half differs): "the graph is cached with other flags
  /// (auto-cast: matmul there, none here; trn-cache explain A B)". Its own
  /// flags are `normalizedFlags`. std::nullopt when no entry has the graph,
  /// or the cache is on FUSE (sshfs), whose directory listings are cached.
  std::optional<std::string> nearMiss(const CacheKey &key,
                                      const std::string &normalizedFlags);
  // Those that change the cache (clearLocks, clean, verify with `fix`,
  // prune) change nothing on a read-only cache and warn.
  /// Removes stale locks (all locks with `all`); returns what was removed.
  std::vector<LockInfo> clearLocks(bool all);
  struct CleanReport {
    int64_t removedEntries = 0, removedBytes = 0;
    std::vector<std::string> removed; ///< paths
    /// What was kept although asked for: "<path>: <why>".
    std::vector<std::string> skipped;
  };
  /// Removes failed entries, incomplete temporaries older than an hour, and
  /// the quarantine; with `all`, every entry; with olderThanSeconds >= 0 only
  /// what was last used longer ago than that.
  CleanReport clean(bool all, double olderThanSeconds);
  struct VerifyReport {
    int64_t checked = 0;
    std::vector<std::pair<std::string, std::string>> corrupt; ///< path, why
    int64_t quarantined = 0;
  };
  /// Verifies every checksum; with `fix`, quarantines corrupt entries.
  VerifyReport verify(bool fix);
  /// Verifies every checksum of one entry (what `list` reads checks sizes
  /// only): why it is corrupt or unreadable, or nothing when it is sound
  /// or gone.
  std::optional<std::string> checkEntry(const Entry &entry);
  /// Evicts least-recently-used entries, of every compiler version's tree,
  /// until their total is at most maxBytes; never an entry that is locked or
  /// being written. Sets each tree's size counter to what it found.
  CleanReport prune(int64_t maxBytes);
  /// Removes the trees of other compiler versions (`trncc-*`), except one
  /// where a compile holds a live lock (in `skipped`).
  CleanReport pruneVersions();
  /// Removes the entries of `keys` from this version's tree.
  CleanReport remove(const std::vector<CacheKey> &keys);

  // Statistics (docs/cache.md, "Statistics"). getOrCompile and publish count
  // what they do; every process adds to shard files under short locks, so no
  // update is lost on a shared filesystem. A read-only cache counts nothing.
  /// This compiler version's counters.
  Statistics statistics();
  /// Adds to this version's counters: for a caller that answers requests
  /// with lookup() (trn-parallel-compile's cached graphs).
  void addStatistics(const Statistics &delta);
  /// Zeroes the zeroable counters of every version's tree; false (after a
  /// warning) if some could not be.
  bool zeroStatistics();
  /// Every version's tree: counters, and a scan of its entries. Without
  /// `scanCurrent` this version's tree is not scanned (entries, bytes and
  /// compiling unset), for a caller that has list()ed it.
  std::vector<VersionTree> versions(bool scanCurrent = true);

  /// The settings stored in the cache; an error if config.json is damaged.
  Result<CacheConfig> config();
  /// Stores the size limit (std::nullopt removes it). Enforced by the next
  /// store; prune(*bytes) enforces it at once.
  Result<Unit> setMaxSize(std::optional<int64_t> bytes);

private:
  explicit Cache(CacheOptions options) : opts(std::move(options)) {}
  CacheOptions opts;
  /// Shared by copies: lockless mode, corruption already reported.
  std::shared_ptr<detail::CacheState> state;
  friend struct detail::CacheAccess;
};

/// For tests only: replaces link(2) when locks are created (an empty
/// function restores it), to simulate a filesystem without hard links.
void setLinkFunctionForTesting(
    std::function<int(const char *from, const char *to)> link);

} // namespace mlir::trn::cache

#endif // TRN_CACHE_CACHE_H
