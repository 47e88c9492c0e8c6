//===- Maintenance.cpp - trn-cache's operations on a cache ----------------===//
//
// Listing entries and locks, clearing stale locks, cleaning, verifying and
// pruning. Each is safe while other processes use the cache: what vanishes
// meanwhile is skipped, and entries are moved aside before they are deleted.
//
//===----------------------------------------------------------------------===//

#include "CacheAccess.h"
#include "Lock.h"

#include "trn/Cache/Text.h"

#include <sys/stat.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace mlir::trn::cache {

using namespace detail;

namespace {

/// Temporaries older than this belong to a dead publisher.
constexpr double kStaleTemporarySeconds = 3600;

/// A directory under the version dir that is an entry, by name.
std::optional<CacheKey> entryKey(const std::string &name) {
  if (name.rfind("MODULE_", 0) != 0)
    return std::nullopt;
  return CacheKey::parse(name);
}

/// `<key>.<kind>.<unique>` names in tmp/: the kind, or "" if not ours.
std::string temporaryKind(const std::string &name, std::string &keyPart) {
  size_t first = name.find('.');
  if (first == std::string::npos)
    return "";
  size_t second = name.find('.', first + 1);
  if (second == std::string::npos)
    return "";
  keyPart = name.substr(0, first);
  return name.substr(first + 1, second - first - 1);
}

int64_t mtimeOf(const std::string &path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0 ? static_cast<int64_t>(info.st_mtime)
                                         : -1;
}

bool isDirectory(const std::string &path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

/// The directory holding `path`.
std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// An entry directory as list() reports it (its manifest, metadata and file
/// sizes checked; nothing moved), or std::nullopt if there is none.
std::optional<EntryListing> listEntry(const std::string &path,
                                      const CacheKey &key) {
  LoadedEntry loaded = loadEntry(path, key, VerifyLevel::Sizes);
  if (loaded.state == LoadState::Missing)
    return std::nullopt;
  EntryListing listing;
  listing.key = key;
  listing.path = path;
  // The lock of an entry of a version tree is in that tree's locks/.
  std::string lockPath =
      joinPath(joinPath(parentOf(path), kLocksDir), key.dirName() + ".lock");
  struct stat lockInfo;
  listing.locked = stat(lockPath.c_str(), &lockInfo) == 0;
  if (loaded.state == LoadState::Ok) {
    listing.status = statusName(loaded.entry.status);
    listing.sizeBytes = loaded.entry.sizeBytes;
    listing.createdUnix = loaded.manifest.createdUnix;
    listing.lastUsedUnix = loaded.entry.lastUsedUnix;
    listing.entry = std::move(loaded.entry);
  } else {
    listing.status = "corrupt";
    listing.problem = loaded.problem;
    listing.sizeBytes = treeSize(path);
    listing.createdUnix = listing.lastUsedUnix = mtimeOf(path);
  }
  return listing;
}

LockInfo describeLock(const CacheKey &key, const std::string &path,
                      const LockSnapshot &snapshot, double leaseSeconds) {
  LockInfo lock;
  lock.key = key;
  lock.path = path;
  double mtime = static_cast<double>(snapshot.info.st_mtim.tv_sec) +
                 snapshot.info.st_mtim.tv_nsec * 1e-9;
  lock.heartbeatAgeSeconds = std::max(0.0, nowUnixSeconds() - mtime);
  if (snapshot.owner) {
    lock.host = snapshot.owner->host;
    lock.pid = snapshot.owner->pid;
    lock.startedUnix = snapshot.owner->createdUnix;
    if (std::optional<std::string> gone = ownerGoneReason(*snapshot.owner)) {
      lock.stale = true;
      lock.staleReason = *gone;
      return lock;
    }
  } else {
    lock.host = "?";
  }
  // One look cannot use the waiter's monotonic clock: compare the heartbeat
  // with this host's clock instead (the lease dwarfs usual clock skew).
  if (lock.heartbeatAgeSeconds >= leaseSeconds) {
    lock.stale = true;
    lock.staleReason = "no heartbeat for " +
                       formatSeconds(lock.heartbeatAgeSeconds) + " (lease " +
                       formatSeconds(leaseSeconds) + ")";
  } else if (!snapshot.owner) {
    lock.staleReason = "unreadable lock file";
  }
  return lock;
}

/// The entries of a version tree, and with `withIncomplete` the entries
/// being published in its tmp/, sorted by path.
std::vector<EntryListing> listTree(const std::string &tree,
                                   bool withIncomplete) {
  std::vector<EntryListing> listings;
  for (const std::string &name : listDirectory(tree)) {
    std::optional<CacheKey> key = entryKey(name);
    if (!key)
      continue;
    if (std::optional<EntryListing> listing =
            listEntry(joinPath(tree, name), *key))
      listings.push_back(std::move(*listing));
  }
  std::string tmp = joinPath(tree, kTmpDir);
  for (const std::string &name :
       withIncomplete ? listDirectory(tmp) : std::vector<std::string>()) {
    std::string keyPart;
    std::string path = joinPath(tmp, name);
    if (temporaryKind(name, keyPart) != "publish" || !isDirectory(path))
      continue;
    std::optional<CacheKey> key = entryKey(keyPart);
    if (!key)
      continue;
    EntryListing listing;
    listing.key = *key;
    listing.path = path;
    listing.status = "incomplete";
    listing.sizeBytes = treeSize(path);
    listing.createdUnix = listing.lastUsedUnix = mtimeOf(path);
    struct stat lockInfo;
    listing.locked =
        stat(joinPath(joinPath(tree, kLocksDir), keyPart + ".lock").c_str(),
             &lockInfo) == 0;
    listings.push_back(std::move(listing));
  }
  std::sort(listings.begin(), listings.end(),
            [](const EntryListing &a, const EntryListing &b) {
              return a.path < b.path;
            });
  return listings;
}

/// The key locks of a version tree, sorted by path.
std::vector<LockInfo> treeLocks(const std::string &tree, double leaseSeconds) {
  std::vector<LockInfo> result;
  std::string locksDir = joinPath(tree, kLocksDir);
  for (const std::string &name : listDirectory(locksDir)) {
    const std::string suffix = ".lock";
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix))
      continue;
    std::optional<CacheKey> key =
        entryKey(name.substr(0, name.size() - suffix.size()));
    if (!key)
      continue;
    std::string path = joinPath(locksDir, name);
    LockSnapshot snapshot = readLock(path);
    if (!snapshot.exists)
      continue;
    result.push_back(describeLock(*key, path, snapshot, leaseSeconds));
  }
  std::sort(
      result.begin(), result.end(),
      [](const LockInfo &a, const LockInfo &b) { return a.path < b.path; });
  return result;
}

} // namespace

bool CacheAccess::removeEntryDirectory(const std::string &path,
                                       const std::string &dirName) {
  std::string aside =
      joinPath(dir(kTmpDir), dirName + ".deleting." + uniqueSuffix());
  makeDirectory(dir(kTmpDir));
  if (rename(path.c_str(), aside.c_str()) != 0)
    return false;
  removeTree(aside);
  return true;
}

std::vector<EntryListing> Cache::list() {
  try {
    return listTree(versionDir(), /*withIncomplete=*/true);
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("listing the cache failed: ") + error.what());
  }
  return {};
}

std::optional<EntryListing> Cache::inspect(const CacheKey &key,
                                           const std::string &path) {
  try {
    return listEntry(
        path.empty() ? joinPath(versionDir(), key.dirName()) : path, key);
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn("inspecting " + key.dirName() + " failed: " + error.what());
  }
  return std::nullopt;
}

std::optional<std::string> Cache::nearMiss(const CacheKey &key,
                                           const std::string &normalizedFlags) {
  // Not on FUSE (sshfs): a listing there is cached (sshfs's dir_cache) and
  // would hide entries other hosts publish from later listings for a while.
  struct statfs fs;
  constexpr decltype(fs.f_type) kFuseMagic = 0x65735546;
  if (statfs(versionDir().c_str(), &fs) == 0 && fs.f_type == kFuseMagic)
    return std::nullopt;
  try {
    CacheAccess access(*this);
    std::vector<std::string> names = listDirectory(versionDir());
    std::sort(names.begin(), names.end());
    for (const std::string &name : names) {
      std::optional<CacheKey> other = entryKey(name);
      if (!other || other->graph != key.graph || other->flags == key.flags)
        continue;
      std::optional<EntryListing> listing = inspect(*other);
      if (!listing || !listing->entry)
        continue;
      std::map<std::string, std::string> here =
          parseNormalizedFlags(normalizedFlags);
      std::map<std::string, std::string> there =
          parseNormalizedFlags(listing->entry->metadata.normalizedFlags);
      std::string differences;
      auto valueIn = [](const std::map<std::string, std::string> &flags,
                        const std::string &name) {
        auto found = flags.find(name);
        return found == flags.end() ? std::string("(unset)") : found->second;
      };
      std::map<std::string, std::string> names = here;
      names.insert(there.begin(), there.end());
      for (const auto &[flag, ignored] : names)
        if (valueIn(here, flag) != valueIn(there, flag))
          differences += (differences.empty() ? "" : ", ") + flag + ": " +
                         valueIn(there, flag) + " there, " +
                         valueIn(here, flag) + " here";
      return "the graph is cached with other flags (" +
             (differences.empty() ? std::string("the flags' hashes differ")
                                  : differences) +
             "; trn-cache explain " + other->dirName() + " " + key.dirName() +
             " compares them)";
    }
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("looking for the graph in the cache failed: ") +
                error.what());
  }
  return std::nullopt;
}

std::vector<LockInfo> Cache::locks() {
  try {
    return treeLocks(versionDir(), opts.leaseSeconds);
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("listing the locks failed: ") + error.what());
  }
  return {};
}

std::vector<LockInfo> Cache::clearLocks(bool all) {
  std::vector<LockInfo> removed;
  try {
    if (CacheAccess(*this).refusesWrites("clearing locks"))
      return removed;
    std::string tmpDir = joinPath(versionDir(), kTmpDir);
    makeDirectory(tmpDir);
    for (const LockInfo &lock : locks()) {
      if (!all && !lock.stale)
        continue;
      // Judge the very file we remove: breakLock removes it only if it is
      // unchanged since this look.
      LockSnapshot snapshot = readLock(lock.path);
      if (!snapshot.exists)
        continue;
      LockInfo current =
          describeLock(lock.key, lock.path, snapshot, opts.leaseSeconds);
      if (!all && !current.stale)
        continue;
      if (breakLock(lock.path, tmpDir, lock.key.dirName(), snapshot))
        removed.push_back(current);
    }
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("clearing locks failed: ") + error.what());
  }
  return removed;
}

Cache::CleanReport Cache::clean(bool all, double olderThanSeconds) {
  CleanReport report;
  try {
    CacheAccess access(*this);
    if (access.refusesWrites("cleaning"))
      return report;
    int64_t now = nowUnix();
    bool byAge = olderThanSeconds >= 0;
    auto oldEnough = [&](int64_t lastUsed) {
      return !byAge || static_cast<double>(now - lastUsed) > olderThanSeconds;
    };
    auto removed = [&](const std::string &path, int64_t bytes) {
      ++report.removedEntries;
      report.removedBytes += bytes;
      report.removed.push_back(path);
    };

    std::string root = versionDir();
    for (const std::string &name : listDirectory(root)) {
      std::optional<CacheKey> key = entryKey(name);
      if (!key)
        continue;
      std::string path = joinPath(root, name);
      LoadedEntry loaded = loadEntry(path, *key, VerifyLevel::Sizes);
      bool remove = false;
      int64_t lastUsed = mtimeOf(path);
      switch (loaded.state) {
      case LoadState::Missing:
      case LoadState::NewerFormat:
      case LoadState::Unreadable:
        continue;
      case LoadState::Corrupt:
        remove = true;
        break;
      case LoadState::Ok:
        lastUsed = loaded.entry.lastUsedUnix;
        // --older-than removes every entry unused for that long.
        remove = all || byAge || loaded.entry.status == EntryStatus::Failed;
        break;
      }
      if (!remove || !oldEnough(lastUsed))
        continue;
      int64_t bytes = loaded.state == LoadState::Ok ? loaded.entry.sizeBytes
                                                    : treeSize(path);
      loaded.dirFd = FileDescriptor();
      if (access.removeEntryDirectory(path, name)) {
        removed(path, bytes);
        access.count(Counter::StoredBytes, -bytes);
      }
    }

    // Temporaries: half-published entries and lock files of dead processes
    // (only when surely abandoned), and leftovers of removals.
    std::string tmp = access.dir(kTmpDir);
    for (const std::string &name : listDirectory(tmp)) {
      std::string keyPart;
      std::string kind = temporaryKind(name, keyPart);
      std::string path = joinPath(tmp, name);
      int64_t mtime = mtimeOf(path);
      if (mtime < 0)
        continue;
      bool leftover = kind == "deleting" || kind == "replaced";
      bool abandoned =
          static_cast<double>(now - mtime) > kStaleTemporarySeconds &&
          oldEnough(mtime);
      if (!leftover && !abandoned)
        continue;
      int64_t bytes = treeSize(path);
      removeTree(path);
      if (kind == "publish")
        removed(path, bytes);
    }

    std::string quarantine = access.dir(kQuarantineDir);
    for (const std::string &name : listDirectory(quarantine)) {
      std::string path = joinPath(quarantine, name);
      int64_t mtime = mtimeOf(path);
      if (mtime < 0 || !oldEnough(mtime))
        continue;
      int64_t bytes = treeSize(path);
      std::string aside =
          joinPath(tmp, "quarantined.deleting." + uniqueSuffix());
      if (rename(path.c_str(), aside.c_str()) != 0)
        continue;
      removeTree(aside);
      removed(path, bytes);
    }
    access.flushStatistics();
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("cleaning the cache failed: ") + error.what());
  }
  return report;
}

std::optional<std::string> Cache::checkEntry(const Entry &entry) {
  LoadedEntry loaded =
      loadEntry(entry.path, entry.key, VerifyLevel::Everything);
  if (loaded.state == LoadState::Corrupt)
    return loaded.problem;
  if (loaded.state == LoadState::Unreadable)
    return "unreadable: " + loaded.problem;
  return std::nullopt;
}

Cache::VerifyReport Cache::verify(bool fix) {
  VerifyReport report;
  try {
    CacheAccess access(*this);
    if (fix && access.refusesWrites("verify's fix"))
      fix = false;
    std::string root = versionDir();
    for (const std::string &name : listDirectory(root)) {
      std::optional<CacheKey> key = entryKey(name);
      if (!key)
        continue;
      std::string path = joinPath(root, name);
      LoadedEntry loaded = loadEntry(path, *key, VerifyLevel::Everything);
      if (loaded.state == LoadState::Missing)
        continue;
      ++report.checked;
      if (loaded.state == LoadState::NewerFormat) {
        access.warn("skipping " + path + ": " + loaded.problem);
        continue;
      }
      if (loaded.state == LoadState::Unreadable) {
        report.corrupt.emplace_back(path, "unreadable: " + loaded.problem);
        continue;
      }
      if (loaded.state != LoadState::Corrupt)
        continue;
      report.corrupt.emplace_back(path, loaded.problem);
      if (!fix)
        continue;
      std::string destination;
      int error = 0;
      CacheAccess::QuarantineOutcome outcome = access.quarantine(
          path, loaded.dirInfo, loaded.problem, destination, error);
      if (outcome != CacheAccess::QuarantineOutcome::Failed)
        ++report.quarantined;
      else
        access.warn("cannot move " + path +
                    " to the quarantine: " + errnoText(error));
    }
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("verifying the cache failed: ") + error.what());
  }
  return report;
}

Cache::CleanReport Cache::prune(int64_t maxBytes) {
  CleanReport report;
  try {
    CacheAccess access(*this);
    if (access.refusesWrites("pruning"))
      return report;
    std::vector<EntryListing> entries;
    std::map<std::string, int64_t> treeBytes;
    int64_t total = 0;
    for (const std::string &tree : versionTrees(opts.root)) {
      int64_t &bytes = treeBytes[tree];
      // Entries being written are never evicted, nor counted.
      for (EntryListing &listing : listTree(tree, /*withIncomplete=*/false)) {
        total += listing.sizeBytes;
        bytes += listing.sizeBytes;
        entries.push_back(std::move(listing));
      }
    }
    // Corrupt entries go first, then the least recently used (of any
    // compiler version: an old version's entries are used no more).
    std::sort(entries.begin(), entries.end(),
              [](const EntryListing &a, const EntryListing &b) {
                bool aCorrupt = a.status == "corrupt",
                     bCorrupt = b.status == "corrupt";
                if (aCorrupt != bCorrupt)
                  return aCorrupt;
                if (a.lastUsedUnix != b.lastUsedUnix)
                  return a.lastUsedUnix < b.lastUsedUnix;
                return a.path < b.path;
              });
    for (const EntryListing &listing : entries) {
      if (total <= maxBytes)
        break;
      std::string name = listing.key.dirName();
      std::string tree = parentOf(listing.path);
      struct stat lockInfo;
      if (stat(joinPath(joinPath(tree, kLocksDir), name + ".lock").c_str(),
               &lockInfo) == 0)
        continue; // its key is being compiled right now
      if (!access.removeEntryDirectory(listing.path, name))
        continue;
      total -= listing.sizeBytes;
      treeBytes[tree] -= listing.sizeBytes;
      ++report.removedEntries;
      report.removedBytes += listing.sizeBytes;
      report.removed.push_back(listing.path);
    }
    access.count(Counter::EvictedEntries, report.removedEntries);
    access.count(Counter::EvictedBytes, report.removedBytes);
    // The scan is the truth: set each tree's size counter to it (stores
    // that raced with the scan leave a small error, set right next time).
    for (const auto &[tree, bytes] : treeBytes) {
      int64_t correction =
          bytes - readTreeStatistics(tree)[Counter::StoredBytes];
      if (tree == versionDir()) {
        access.count(Counter::StoredBytes, correction);
      } else if (correction != 0) {
        Statistics delta;
        delta[Counter::StoredBytes] = correction;
        access.addToTree(tree, delta);
      }
    }
    access.flushStatistics();
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("pruning the cache failed: ") + error.what());
  }
  return report;
}

namespace {
/// Who holds a live lock in a version tree ("pid 12 on node-3"), if anyone:
/// a compile is in progress there.
std::optional<std::string> liveLockHolder(const std::string &tree,
                                          double leaseSeconds) {
  for (const LockInfo &lock : treeLocks(tree, leaseSeconds))
    if (!lock.stale)
      return "pid " + std::to_string(lock.pid) + " on " + lock.host;
  return std::nullopt;
}
} // namespace

Cache::CleanReport Cache::pruneVersions() {
  CleanReport report;
  try {
    CacheAccess access(*this);
    if (access.refusesWrites("pruning old versions"))
      return report;
    std::string tmp = access.dir(kTmpDir);
    makeDirectory(tmp);
    for (const std::string &tree : versionTrees(opts.root)) {
      if (tree == versionDir())
        continue;
      if (std::optional<std::string> holder =
              liveLockHolder(tree, opts.leaseSeconds)) {
        report.skipped.push_back(tree + ": " + *holder +
                                 " is compiling into it");
        continue;
      }
      int64_t entries = 0;
      for (const std::string &name : listDirectory(tree))
        entries += entryKey(name).has_value();
      int64_t bytes = treeSize(tree);
      // No dots in the name: tmp/'s names are <name>.<kind>.<unique>.
      std::string name = tree.substr(tree.find_last_of('/') + 1);
      std::replace(name.begin(), name.end(), '.', '_');
      std::string aside = joinPath(tmp, name + ".deleting." + uniqueSuffix());
      if (rename(tree.c_str(), aside.c_str()) != 0) {
        report.skipped.push_back(tree + ": cannot move it aside (" +
                                 errnoText(errno) + ")");
        continue;
      }
      removeTree(aside);
      report.removedEntries += entries;
      report.removedBytes += bytes;
      report.removed.push_back(tree);
    }
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("pruning old versions failed: ") + error.what());
  }
  return report;
}

Cache::CleanReport Cache::remove(const std::vector<CacheKey> &keys) {
  CleanReport report;
  try {
    CacheAccess access(*this);
    if (access.refusesWrites("removing entries"))
      return report;
    for (const CacheKey &key : keys) {
      std::string path = access.entryPath(key);
      std::optional<EntryListing> listing = listEntry(path, key);
      if (!listing) {
        report.skipped.push_back(key.dirName() + ": no such entry");
        continue;
      }
      if (!access.removeEntryDirectory(path, key.dirName())) {
        report.skipped.push_back(key.dirName() + ": removed meanwhile");
        continue;
      }
      ++report.removedEntries;
      report.removedBytes += listing->sizeBytes;
      report.removed.push_back(path);
      access.count(Counter::StoredBytes, -listing->sizeBytes);
    }
    access.flushStatistics();
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("removing entries failed: ") + error.what());
  }
  return report;
}

std::vector<VersionTree> Cache::versions(bool scanCurrent) {
  std::vector<VersionTree> trees;
  try {
    for (const std::string &path : versionTrees(opts.root)) {
      VersionTree tree;
      tree.path = path;
      tree.version = path.substr(path.find_last_of('/') + 1 + 6);
      tree.current = path == versionDir();
      tree.statistics = readTreeStatistics(path);
      if (tree.current && !scanCurrent) {
        trees.push_back(std::move(tree));
        continue;
      }
      for (const EntryListing &listing :
           listTree(path, /*withIncomplete=*/false)) {
        ++tree.entries;
        tree.bytes += listing.sizeBytes;
        tree.lastUsedUnix = std::max(tree.lastUsedUnix, listing.lastUsedUnix);
      }
      tree.compiling = liveLockHolder(path, opts.leaseSeconds).has_value();
      trees.push_back(std::move(tree));
    }
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("listing the version trees failed: ") +
                error.what());
  }
  return trees;
}

} // namespace mlir::trn::cache
