//===- Statistics.cpp - counters and the size limit -----------------------===//
//
// Every process that uses the cache adds what it did (hits, misses, compile
// time, stored bytes, ...) to the counters of its compiler version's tree,
// as ccache does: the counters are spread over kShards small JSON files in
// `stats/`, each replaced by rename under a short link(2) lock (the lock
// recipe of Lock.cpp, atomic on NFS too). A writer that finds a shard locked
// tries the next, so concurrent processes rarely wait, and no update is lost.
// After a store that grows the cache past the configured limit
// (`config.json`), that writer evicts the least recently used entries.
//
//===----------------------------------------------------------------------===//

#include "CacheAccess.h"
#include "Lock.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>

namespace mlir::trn::cache {

using namespace detail;
using json = nlohmann::json;

namespace {

constexpr int kShards = 16;
/// A statistics lock is held for a read and a write; one older than this
/// (by this host's clock) belongs to a process that died holding it.
constexpr double kStatsLockStaleSeconds = 60;
/// The longest a process waits for a free shard before it drops its update
/// (with a warning): only when every shard stays locked.
constexpr double kStatsWaitSeconds = 2;
constexpr const char *kEvictLockName = "evict";

const CounterInfo kCounters[] = {
#define TRN_CACHE_COUNTER(Name, key, zeroable, description)                    \
  {key, zeroable, description},
#include "trn/Cache/Counters.def"
};

std::string shardName(int shard) { return "shard-" + std::to_string(shard); }

Statistics statisticsFromJson(const json &object) {
  Statistics statistics;
  if (!object.is_object())
    return statistics;
  for (size_t i = 0; i < kCounterCount; ++i) {
    auto found = object.find(kCounters[i].key);
    if (found != object.end() && found->is_number_integer())
      statistics.values[i] = found->get<int64_t>();
  }
  auto zeroed = object.find("zeroed_unix");
  if (zeroed != object.end() && zeroed->is_number_integer())
    statistics.zeroedUnix = zeroed->get<int64_t>();
  return statistics;
}

json statisticsToJson(const Statistics &statistics) {
  json object = {{"format", kFormatVersion}};
  for (size_t i = 0; i < kCounterCount; ++i)
    object[kCounters[i].key] = statistics.values[i];
  object["zeroed_unix"] = statistics.zeroedUnix;
  return object;
}

/// A shard's counters; a missing or damaged shard counts as zero (the next
/// update replaces a damaged one).
Statistics readShard(const std::string &path) {
  std::string text;
  if (readFile(path, text) != 0)
    return {};
  return statisticsFromJson(json::parse(text, nullptr, false));
}

enum class ShardUpdate { Done, Busy, Failed };

/// Applies `change` to one shard of `tree` under the shard's lock. A lock
/// held by a dead process is broken (Busy this time, free the next).
ShardUpdate updateShard(const std::string &tree, int shard,
                        const std::function<void(Statistics &)> &change,
                        int &error) {
  std::string statsDir = joinPath(tree, kStatsDir);
  std::string name = shardName(shard);
  std::string lockFile = joinPath(statsDir, name + ".lock");
  std::unique_ptr<HeldLock> held;
  switch (tryLock(lockFile, joinPath(tree, kTmpDir), name, held, error)) {
  case LockAttempt::Acquired:
  case LockAttempt::Unsupported: // no hard links: unlocked, may lose a race
    break;
  case LockAttempt::Held: {
    LockSnapshot snapshot = readLock(lockFile);
    double age =
        nowUnixSeconds() - (static_cast<double>(snapshot.info.st_mtim.tv_sec) +
                            snapshot.info.st_mtim.tv_nsec * 1e-9);
    bool dead = snapshot.exists &&
                ((snapshot.owner && ownerGoneReason(*snapshot.owner)) ||
                 age > kStatsLockStaleSeconds);
    if (dead)
      breakLock(lockFile, joinPath(tree, kTmpDir), name, snapshot);
    return ShardUpdate::Busy;
  }
  case LockAttempt::Failed:
    return ShardUpdate::Failed;
  }
  std::string file = name + ".json";
  Statistics statistics = readShard(joinPath(statsDir, file));
  change(statistics);
  error = replaceFile(statsDir, file.c_str(),
                      statisticsToJson(statistics).dump() + "\n",
                      /*sync=*/false);
  return error ? ShardUpdate::Failed : ShardUpdate::Done;
}

/// The bytes of the entries in `tree`, by a scan.
int64_t scanEntryBytes(const std::string &tree) {
  int64_t total = 0;
  for (const std::string &name : listDirectory(tree))
    if (name.rfind("MODULE_", 0) == 0)
      total += treeSize(joinPath(tree, name));
  return total;
}

} // namespace

const CounterInfo &counterInfo(Counter counter) {
  return kCounters[static_cast<size_t>(counter)];
}

Statistics &Statistics::operator+=(const Statistics &other) {
  for (size_t i = 0; i < kCounterCount; ++i)
    values[i] += other.values[i];
  zeroedUnix = std::max(zeroedUnix, other.zeroedUnix);
  return *this;
}

bool Statistics::empty() const {
  return std::all_of(values.begin(), values.end(),
                     [](int64_t value) { return value == 0; });
}

int64_t Statistics::requests() const {
  return (*this)[Counter::Hits] + (*this)[Counter::FailureHits] +
         (*this)[Counter::Misses];
}

std::optional<double> Statistics::hitRate() const {
  if (requests() <= 0)
    return std::nullopt;
  return double((*this)[Counter::Hits] + (*this)[Counter::FailureHits]) /
         double(requests());
}

namespace detail {

std::vector<std::string> versionTrees(const std::string &root) {
  std::vector<std::string> trees;
  for (const std::string &name : listDirectory(root)) {
    struct stat info;
    std::string path = joinPath(root, name);
    if (name.rfind("trncc-", 0) == 0 && lstat(path.c_str(), &info) == 0 &&
        S_ISDIR(info.st_mode))
      trees.push_back(path);
  }
  std::sort(trees.begin(), trees.end());
  return trees;
}

Statistics readTreeStatistics(const std::string &tree) {
  Statistics sum;
  std::string statsDir = joinPath(tree, kStatsDir);
  for (const std::string &name : listDirectory(statsDir))
    if (name.rfind("shard-", 0) == 0 && name.size() > 5 &&
        name.compare(name.size() - 5, 5, ".json") == 0)
      sum += readShard(joinPath(statsDir, name));
  return sum;
}

} // namespace detail

void CacheAccess::count(Counter counter, int64_t amount) {
  if (readOnly() || amount == 0)
    return;
  std::lock_guard<std::mutex> guard(state.mutex);
  state.pending[counter] += amount;
}

bool CacheAccess::ensureStatsDirectory(const std::string &tree) {
  std::string statsDir = joinPath(tree, kStatsDir);
  if (::mkdir(statsDir.c_str(), 0777) != 0) {
    if (errno == EEXIST)
      return true;
    warnOnce("cannot keep the cache statistics in " + statsDir + " (" +
             errnoText(errno) + "); the size limit is not enforced");
    return false;
  }
  // The first counters of a tree filled before there were any (an older
  // trn): its size so far, so that the limit counts it. Only the process
  // whose mkdir made the directory scans. (Open makes it for a new tree, so
  // that no store can race with the scan.)
  Statistics baseline;
  baseline[Counter::StoredBytes] = scanEntryBytes(tree);
  return baseline.empty() || addToTree(tree, baseline);
}

bool CacheAccess::addToTree(const std::string &tree, const Statistics &delta) {
  std::string statsDir = joinPath(tree, kStatsDir);
  if (!ensureStatsDirectory(tree))
    return false;
  makeDirectory(joinPath(tree, kTmpDir));
  auto add = [&](Statistics &shard) { shard += delta; };
  // Start at a random shard, so that concurrent writers rarely meet.
  int start = static_cast<int>(randomUnit() * kShards) % kShards;
  double deadline = steadySeconds() + kStatsWaitSeconds;
  double backoff = 0.001;
  while (true) {
    for (int i = 0; i < kShards; ++i) {
      int error = 0;
      switch (updateShard(tree, (start + i) % kShards, add, error)) {
      case ShardUpdate::Done:
        return true;
      case ShardUpdate::Busy:
        continue;
      case ShardUpdate::Failed:
        warnOnce("cannot update the cache statistics in " + statsDir + " (" +
                 errnoText(error) + ")");
        return false;
      }
    }
    if (steadySeconds() > deadline) {
      warnOnce("cache statistics not recorded: every shard in " + statsDir +
               " stayed locked for " + formatSeconds(kStatsWaitSeconds));
      return false;
    }
    sleepSeconds(backoff * (0.75 + 0.5 * randomUnit()));
    backoff = std::min(backoff * 2, 0.05);
  }
}

void CacheAccess::flushStatistics(bool force) {
  Statistics delta;
  {
    std::lock_guard<std::mutex> guard(state.mutex);
    if (state.pending.empty())
      return;
    Statistics compileWork = state.pending;
    for (Counter cheap :
         {Counter::Hits, Counter::FailureHits, Counter::WaitMilliseconds})
      compileWork[cheap] = 0;
    double now = steadySeconds();
    if (!force && compileWork.empty() && now - state.lastFlushSeconds < 1)
      return;
    state.lastFlushSeconds = now;
    std::swap(delta, state.pending);
  }
  if (readOnly())
    return;
  if (addToTree(cache.versionDir(), delta) && delta[Counter::StoredBytes] > 0)
    enforceMaxSize();
}

void CacheAccess::enforceMaxSize() {
  Result<CacheConfig> config = cache.config();
  if (!config) {
    warnOnce(config.error + "; the size limit is not enforced");
    return;
  }
  if (!config->maxSizeBytes)
    return;
  int64_t total = 0;
  for (const std::string &tree : versionTrees(cache.opts.root)) {
    if (tree != cache.versionDir() &&
        ::access(joinPath(tree, kStatsDir).c_str(), F_OK) != 0)
      addToTree(tree, Statistics()); // its first counters: its size so far
    total += readTreeStatistics(tree)[Counter::StoredBytes];
  }
  if (total <= *config->maxSizeBytes)
    return;
  // One evicter at a time; the others' stores go on meanwhile.
  std::string tree = cache.versionDir();
  std::string lockFile = joinPath(joinPath(tree, kStatsDir),
                                  std::string(kEvictLockName) + ".lock");
  std::unique_ptr<HeldLock> held;
  int error = 0;
  LockAttempt attempt =
      tryLock(lockFile, joinPath(tree, kTmpDir), kEvictLockName, held, error);
  if (attempt == LockAttempt::Held) {
    LockSnapshot snapshot = readLock(lockFile);
    if (snapshot.owner && ownerGoneReason(*snapshot.owner))
      breakLock(lockFile, joinPath(tree, kTmpDir), kEvictLockName, snapshot);
    return;
  }
  if (attempt == LockAttempt::Failed)
    return;
  cache.prune(static_cast<int64_t>(
      std::floor(*config->maxSizeBytes * kEvictToFraction)));
}

Cache::~Cache() {
  if (!state || state.use_count() != 1)
    return;
  try {
    CacheAccess(*this).flushStatistics(/*force=*/true);
  } catch (const std::exception &) {
    // Statistics are not worth failing the process for.
  }
}

Statistics Cache::statistics() {
  try {
    CacheAccess(*this).flushStatistics(/*force=*/true); // our own counts too
    return readTreeStatistics(versionDir());
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("reading the cache statistics failed: ") +
                error.what());
    return {};
  }
}

void Cache::addStatistics(const Statistics &delta) {
  try {
    CacheAccess access(*this);
    for (size_t i = 0; i < kCounterCount; ++i)
      access.count(static_cast<Counter>(i), delta.values[i]);
    access.flushStatistics(/*force=*/true);
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("updating the cache statistics failed: ") +
                error.what());
  }
}

bool Cache::zeroStatistics() {
  try {
    CacheAccess store(*this);
    if (store.refusesWrites("zeroing the statistics"))
      return false;
    int64_t now = nowUnix();
    auto zero = [&](Statistics &shard) {
      for (size_t i = 0; i < kCounterCount; ++i)
        if (kCounters[i].zeroable)
          shard.values[i] = 0;
      shard.zeroedUnix = now;
    };
    bool complete = true;
    for (const std::string &tree : versionTrees(opts.root)) {
      std::string statsDir = joinPath(tree, kStatsDir);
      if (::access(statsDir.c_str(), F_OK) != 0)
        continue; // never counted: nothing to zero
      for (int shard = 0; shard < kShards; ++shard) {
        // A shard is locked for a moment only: wait for it.
        double deadline = steadySeconds() + kStatsWaitSeconds;
        int error = 0;
        ShardUpdate outcome;
        while ((outcome = updateShard(tree, shard, zero, error)) ==
                   ShardUpdate::Busy &&
               steadySeconds() < deadline)
          sleepSeconds(0.005);
        if (outcome != ShardUpdate::Done) {
          complete = false;
          store.warn("cannot zero " +
                     joinPath(statsDir, shardName(shard) + ".json") + " (" +
                     (outcome == ShardUpdate::Busy ? "it stayed locked"
                                                   : errnoText(error)) +
                     ")");
        }
      }
    }
    return complete;
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("zeroing the cache statistics failed: ") +
                error.what());
    return false;
  }
}

Result<CacheConfig> Cache::config() {
  using R = Result<CacheConfig>;
  std::string path = joinPath(opts.root, kConfigFile);
  std::string text, problem;
  int err = readFile(path, text, kMaxSmallFileBytes, &problem);
  if (isVanished(err))
    return R::success(CacheConfig());
  if (err)
    return R::failure("cannot read the cache settings " + path + ": " +
                      (problem.empty() ? errnoText(err) : problem));
  json object = json::parse(text, nullptr, false);
  CacheConfig config;
  auto maxSize = object.is_object() ? object.find("max_size") : object.end();
  if (!object.is_object() ||
      (maxSize != object.end() &&
       !(maxSize->is_null() ||
         (maxSize->is_number_integer() && maxSize->get<int64_t>() > 0))))
    return R::failure("the cache settings " + path +
                      " are damaged; set them again with trn-cache config");
  if (maxSize != object.end() && !maxSize->is_null())
    config.maxSizeBytes = maxSize->get<int64_t>();
  return R::success(config);
}

Result<Unit> Cache::setMaxSize(std::optional<int64_t> bytes) {
  using R = Result<Unit>;
  if (readOnly())
    return R::failure("cache " + opts.root + " is read-only (" +
                      readOnlyReason() + "): its settings cannot change");
  json object = {{"format", kFormatVersion}};
  object["max_size"] = bytes ? json(*bytes) : json(nullptr);
  if (int err =
          replaceFile(opts.root, kConfigFile, object.dump(2) + "\n", true))
    return R::failure("cannot write " + joinPath(opts.root, kConfigFile) +
                      ": " + errnoText(err));
  return R::success(Unit());
}

} // namespace mlir::trn::cache
