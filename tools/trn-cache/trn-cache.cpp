//===- trn-cache.cpp - inspect and maintain the trn compile cache --------===//
//
//   trn-cache <command> [--cache-dir DIR] [--json] [options]
//
// Commands: list, stats, show KEY, explain KEY1 KEY2, remove KEY..., clean,
// clear-locks, verify, prune, config. Every command is safe while other
// processes compile into and read from the cache.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Cache.h"
#include "trn/Cache/Text.h"
#include "trn/Driver/ToolCommandLine.h"
#include "trn/Support/CommandLineValues.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace mlir::trn::cache;
using json = nlohmann::json;

namespace {

const char *kUsage = R"(usage: trn-cache <command> [options]

Inspect and maintain the trn compile cache. Every command is safe while other
processes use the cache.

commands:
  list          entries: key, status (done, failed, compiling, stale-lock,
                incomplete, corrupt), size, created, last used, graph
                  --failed   only failed entries     --locked   only locked keys
  stats         entries by status, bytes, compression ratio, age, locks;
                requests, hits and misses (hit rate), compile and wait time,
                evictions, for this compiler version and every other one
                  --zero     zero the counters (not the size) of every version
  show KEY      one entry: flags, metadata, diagnostic and compile log
                  (KEY may be any unique prefix of MODULE_<graph>+<flags>)
  explain KEY1 KEY2
                why two keys differ: the graph (and the first line where the
                stored graph texts differ), the flags (which normalised flag
                values), the target, the compiler version. A KEY is
                MODULE_<graph>+<flags>, <graph>+<flags>, a unique prefix of a
                key in the cache, or an entry's path. For a key without an
                entry, says what the keys alone tell; exit status 1 then
  remove KEY... remove these entries (each KEY as for show); nothing is
                removed if one matches no entry or several
  clean         remove failed and incomplete entries and the quarantine
                  --older-than DURATION   only entries unused for that long (30m, 12h, 7d)
                  --all --yes             empty the cache
  clear-locks   remove stale locks and say whose they were
                  --all      remove every lock, also live ones (warns)
  verify        check every checksum; exit status 1 if anything is corrupt
                  --fix      move corrupt entries to the quarantine
  prune         evict least recently used entries (of every compiler
                version), never locked ones, down to the configured max-size
                  --max-size SIZE         this size instead (e.g. 500M, 20G)
                  --versions              remove other compiler versions' trees
  config [max-size [SIZE|none]]
                show or set the settings stored in the cache: with max-size
                set, the store that crosses it evicts least recently used
                entries down to 90% of it

options for every command:
  --cache-dir DIR   the cache root (default: $TRN_CACHE_DIR, else /var/tmp/trn-compile-cache)
  --json            machine-readable output on stdout
  -h, --help        this help
  --version         versions (trn, the compiler's cache keys, LLVM)

A cache on a read-only mount, or with TRN_CACHE_READ_ONLY=1, is read-only:
list, stats, show, config and verify work; what would change it (clean,
clear-locks, prune, remove, stats --zero, verify --fix, setting config) is
refused.
)";

/// An error with the cache or an entry: exit status 1, as in every trn tool.
int fail(const std::string &message) {
  std::cerr << "trn-cache: error: " << message << "\n";
  return mlir::trn::kExitFailure;
}

/// A bad command line: exit status 2.
int usageError(const std::string &message) {
  return mlir::trn::usageError("trn-cache", message);
}

std::string humanTime(int64_t unixSeconds) {
  if (unixSeconds <= 0)
    return "-";
  std::time_t time = unixSeconds;
  std::tm local{};
  localtime_r(&time, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M", &local);
  return text;
}

std::string shortKey(const CacheKey &key) {
  return key.graph.hex().substr(0, 16) + "+" + key.flags.hex().substr(0, 8);
}

const char *statusName(EntryStatus status) {
  return status == EntryStatus::Done ? "done" : "failed";
}

json metadataJson(const EntryMetadata &m) {
  return {{"flags", m.flags},
          {"normalized_flags", m.normalizedFlags},
          {"target", m.target},
          {"compiler_version", m.compilerVersion},
          {"host", m.host},
          {"graph_name", m.graphName},
          {"compile_seconds", m.compileSeconds},
          {"peak_memory_bytes", m.peakMemoryBytes},
          {"created_unix", m.createdUnix}};
}

json lockJson(const LockInfo &lock) {
  return {{"key", lock.key.dirName()},
          {"host", lock.host},
          {"pid", lock.pid},
          {"started_unix", lock.startedUnix},
          {"heartbeat_age_seconds", lock.heartbeatAgeSeconds},
          {"stale", lock.stale},
          {"stale_reason", lock.staleReason}};
}

std::string describeLock(const LockInfo &lock) {
  std::string text = lock.key.dirName() + " held by pid " +
                     std::to_string(lock.pid) + " on " + lock.host + " since " +
                     humanTime(lock.startedUnix);
  if (lock.stale)
    text += " (stale: " + lock.staleReason + ")";
  return text;
}

/// The parsed command line.
struct Options {
  std::string command;
  std::vector<std::string> positional;
  std::string cacheDir;
  bool json = false, failed = false, locked = false, all = false, yes = false,
       fix = false, zero = false, versions = false;
  std::optional<double> olderThan;
  std::optional<int64_t> maxSize;
};

/// Options each command accepts (besides --cache-dir, --json, --help).
const std::map<std::string, std::set<std::string>> kCommandOptions = {
    {"list", {"--failed", "--locked"}},
    {"stats", {"--zero"}},
    {"show", {}},
    {"clean", {"--all", "--yes", "--older-than"}},
    {"clear-locks", {"--all"}},
    {"verify", {"--fix"}},
    {"prune", {"--max-size", "--versions"}},
    {"explain", {}},
    {"remove", {}},
    {"config", {}},
};

enum FlagId {
  CacheDir,
  Json,
  Failed,
  Locked,
  All,
  Yes,
  OlderThan,
  Fix,
  MaxSize,
  Zero,
  Versions
};

const mlir::trn::ToolCommandLine &commandLine() {
  static const mlir::trn::ToolCommandLine line = [] {
    mlir::trn::ToolCommandLine line;
    line.tool = "trn-cache";
    line.notOurs = "it is a compile flag: trn-cache maintains the cache";
    line.flags = {{"cache-dir", true, 0, CacheDir},
                  {"json", false, 0, Json},
                  {"failed", false, 0, Failed},
                  {"locked", false, 0, Locked},
                  {"all", false, 0, All},
                  {"yes", false, 0, Yes},
                  {"older-than", true, 0, OlderThan},
                  {"fix", false, 0, Fix},
                  {"max-size", true, 0, MaxSize},
                  {"zero", false, 0, Zero},
                  {"versions", false, 0, Versions}};
    return line;
  }();
  return line;
}

std::optional<std::string> parseArgs(int argc, char **argv, Options &options) {
  auto onFlag =
      [&](const mlir::trn::ToolFlagUse &use) -> std::optional<std::string> {
    const std::string value = use.value.value_or("");
    switch (use.flag->id) {
    case CacheDir:
      if (value.empty())
        return mlir::trn::badValue(use, "a directory");
      options.cacheDir = value;
      break;
    case OlderThan:
      options.olderThan = mlir::trn::parseDuration(value);
      if (!options.olderThan)
        return mlir::trn::badValue(use, "a duration (e.g. 90s, 30m, 12h, 7d)");
      break;
    case MaxSize:
      options.maxSize = mlir::trn::parseSize(value);
      if (!options.maxSize)
        return mlir::trn::badValue(use, "a size (e.g. 4096, 500M, 20G)");
      break;
    case Json:
      options.json = true;
      break;
    case Failed:
      options.failed = true;
      break;
    case Locked:
      options.locked = true;
      break;
    case All:
      options.all = true;
      break;
    case Yes:
      options.yes = true;
      break;
    case Fix:
      options.fix = true;
      break;
    case Zero:
      options.zero = true;
      break;
    case Versions:
      options.versions = true;
      break;
    }
    return std::nullopt;
  };
  mlir::trn::ParsedToolArgs parsed;
  if (auto problem = mlir::trn::parseToolArgs(
          std::vector<std::string>(argv + 1, argv + argc), commandLine(),
          onFlag, parsed))
    return problem;
  if (parsed.help || parsed.version) {
    options.command = parsed.help ? "help" : "version";
    return std::nullopt;
  }
  if (!parsed.positionals.empty()) {
    const std::string &command = parsed.positionals.front();
    std::vector<std::string_view> commands;
    for (const auto &[name, flags] : kCommandOptions)
      commands.push_back(name);
    if (!kCommandOptions.count(command)) {
      std::string suggestion = mlir::trn::didYouMean(command, commands);
      return "unknown command '" + command + "'" +
             (suggestion.empty() ? " (see trn-cache --help)" : suggestion);
    }
    options.command = command;
    options.positional.assign(parsed.positionals.begin() + 1,
                              parsed.positionals.end());
  }
  if (options.command.empty())
    return "no command given; one of list, stats, show, explain, remove, "
           "clean, clear-locks, verify, prune, config (see trn-cache --help)";
  // Reject options that belong to another command, so a mistyped command
  // line never silently does something else.
  const std::set<std::string> &allowed = kCommandOptions.at(options.command);
  std::vector<std::pair<bool, std::string>> given = {
      {options.failed, "--failed"},
      {options.locked, "--locked"},
      {options.all, "--all"},
      {options.yes, "--yes"},
      {options.fix, "--fix"},
      {options.olderThan.has_value(), "--older-than"},
      {options.maxSize.has_value(), "--max-size"},
      {options.zero, "--zero"},
      {options.versions, "--versions"}};
  for (const auto &[isSet, name] : given)
    if (isSet && !allowed.count(name))
      return "option '" + name + "' does not apply to '" + options.command +
             "'";
  if (options.command == "show" && options.positional.size() != 1)
    return "show needs exactly one KEY (see trn-cache list)";
  if (options.command == "explain" && options.positional.size() != 2)
    return "explain needs two KEYs: trn-cache explain KEY1 KEY2";
  if (options.command == "remove" && options.positional.empty())
    return "remove needs at least one KEY (see trn-cache list)";
  if (options.command == "config" && options.positional.size() > 2)
    return "config takes a setting and a value: trn-cache config max-size 50G";
  if (options.command == "config" && !options.positional.empty() &&
      options.positional.front() != "max-size")
    return "unknown setting '" + options.positional.front() + "'" +
           mlir::trn::didYouMean(options.positional.front(), {"max-size"}) +
           " (the settings: max-size)";
  if (options.command != "show" && options.command != "explain" &&
      options.command != "remove" && options.command != "config" &&
      !options.positional.empty())
    return "unexpected argument '" + options.positional.front() + "'";
  if (options.command == "clean" && options.all && !options.yes)
    return "clean --all deletes every entry; add --yes to confirm";
  if (options.command == "clean" && options.all && options.olderThan)
    return "clean takes --all or --older-than, not both";
  return std::nullopt;
}

int runList(Cache &cache, const Options &options) {
  std::vector<EntryListing> listings = cache.list();
  // A key compiled for the first time has a lock but no entry yet: show it
  // as "compiling" (or "stale-lock" when its holder is gone), so that
  // `list --locked` answers "what is being compiled right now?".
  std::set<std::string> listed;
  for (const EntryListing &l : listings)
    listed.insert(l.key.dirName());
  std::map<std::string, LockInfo> holders;
  for (LockInfo &lock : cache.locks()) {
    std::string name = lock.key.dirName();
    if (!listed.count(name)) {
      EntryListing pending;
      pending.key = lock.key;
      pending.path = lock.path;
      pending.status = lock.stale ? "stale-lock" : "compiling";
      pending.createdUnix = pending.lastUsedUnix = lock.startedUnix;
      pending.locked = true;
      listings.push_back(std::move(pending));
    }
    holders.emplace(name, std::move(lock));
  }
  std::vector<EntryListing> shown;
  for (EntryListing &listing : listings) {
    if (options.failed && listing.status != "failed")
      continue;
    if (options.locked && !listing.locked)
      continue;
    shown.push_back(std::move(listing));
  }
  if (options.json) {
    json out = json::array();
    for (const EntryListing &l : shown)
      out.push_back({{"key", l.key.dirName()},
                     {"status", l.status},
                     {"size_bytes", l.sizeBytes},
                     {"created_unix", l.createdUnix},
                     {"last_used_unix", l.lastUsedUnix},
                     {"locked", l.locked},
                     {"graph_name", l.entry ? l.entry->metadata.graphName : ""},
                     {"path", l.path}});
    for (json &row : out) {
      auto holder = holders.find(row["key"].get<std::string>());
      if (holder != holders.end())
        row["lock"] = lockJson(holder->second);
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (shown.empty()) {
    std::cout << "no entries in " << cache.versionDir() << "\n";
    return 0;
  }
  std::printf("%-25s  %-11s  %10s  %-16s  %-16s  %s\n", "KEY", "STATUS", "SIZE",
              "CREATED", "LAST USED", "GRAPH");
  for (const EntryListing &l : shown) {
    std::string status = l.status + (l.locked ? "*" : "");
    std::printf(
        "%-25s  %-10s  %10s  %-16s  %-16s  %s\n", shortKey(l.key).c_str(),
        status.c_str(), formatSize(l.sizeBytes).c_str(),
        humanTime(l.createdUnix).c_str(), humanTime(l.lastUsedUnix).c_str(),
        l.entry ? l.entry->metadata.graphName.c_str() : "");
  }
  if (std::any_of(shown.begin(), shown.end(),
                  [](const EntryListing &l) { return l.locked; }))
    std::cout << "* a compile of this key holds a lock (trn-cache clear-locks "
                 "removes stale ones)\n";
  return 0;
}

json statisticsJson(const Statistics &statistics) {
  json out = json::object();
  for (size_t i = 0; i < kCounterCount; ++i)
    out[counterInfo(static_cast<Counter>(i)).key] = statistics.values[i];
  out["zeroed_unix"] = statistics.zeroedUnix;
  out["requests"] = statistics.requests();
  std::optional<double> rate = statistics.hitRate();
  out["hit_rate"] = rate ? json(*rate) : json(nullptr);
  return out;
}

std::string percent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.1f%%", 100 * fraction);
  return text;
}

/// "80.0% of 100 requests", or "no requests".
std::string hitRateText(const Statistics &statistics) {
  std::optional<double> rate = statistics.hitRate();
  if (!rate)
    return "no requests";
  return percent(*rate) + " of " + countOf(statistics.requests(), "request");
}

int runZeroStatistics(Cache &cache, const Options &options) {
  bool zeroed = cache.zeroStatistics();
  if (options.json)
    std::cout << json{{"zeroed", zeroed}}.dump(2) << "\n";
  else if (zeroed)
    std::cout << "statistics zeroed (the size counters are kept)\n";
  return zeroed ? 0 : 1;
}

int runStats(Cache &cache, const Options &options) {
  if (options.zero)
    return runZeroStatistics(cache, options);
  std::vector<EntryListing> listings = cache.list();
  std::vector<LockInfo> locks = cache.locks();
  // list() scanned this version's tree already: versions() scans the others.
  std::vector<VersionTree> versions = cache.versions(/*scanCurrent=*/false);
  Statistics counters = cache.statistics();
  Result<CacheConfig> config = cache.config();
  if (!config)
    std::cerr << "trn-cache: warning: " << config.error << "\n";
  // 0: no limit (a limit is positive).
  int64_t maxSize = config ? config->maxSizeBytes.value_or(0) : 0;
  std::map<std::string, int64_t> byStatus;
  int64_t bytes = 0, graphBytes = 0, storedGraphBytes = 0;
  int64_t oldest = 0, newest = 0;
  for (const EntryListing &l : listings) {
    ++byStatus[l.status];
    bytes += l.sizeBytes;
    if (l.entry) {
      graphBytes += l.entry->graphBytes;
      storedGraphBytes += l.entry->storedGraphBytes;
    }
    if (l.createdUnix > 0) {
      oldest = oldest ? std::min(oldest, l.createdUnix) : l.createdUnix;
      newest = std::max(newest, l.createdUnix);
    }
  }
  int64_t allBytes = 0;
  for (const VersionTree &tree : versions)
    allBytes += tree.current ? bytes : tree.bytes;
  int64_t stale = std::count_if(locks.begin(), locks.end(),
                                [](const LockInfo &l) { return l.stale; });
  double ratio = storedGraphBytes ? double(graphBytes) / storedGraphBytes : 0;
  if (options.json) {
    json others = json::array();
    for (const VersionTree &tree : versions)
      if (!tree.current)
        others.push_back({{"version", tree.version},
                          {"path", tree.path},
                          {"entries", tree.entries},
                          {"bytes", tree.bytes},
                          {"last_used_unix", tree.lastUsedUnix},
                          {"compiling", tree.compiling},
                          {"statistics", statisticsJson(tree.statistics)}});
    json out = {{"root", cache.options().root},
                {"version_dir", cache.versionDir()},
                {"entries", listings.size()},
                {"by_status", byStatus},
                {"bytes", bytes},
                {"all_versions_bytes", allBytes},
                {"max_size_bytes", maxSize ? json(maxSize) : json(nullptr)},
                {"graph_bytes", graphBytes},
                {"stored_graph_bytes", storedGraphBytes},
                {"graph_compression_ratio", ratio},
                {"oldest_unix", oldest},
                {"newest_unix", newest},
                {"locks_held", locks.size() - stale},
                {"locks_stale", stale},
                {"statistics", statisticsJson(counters)},
                {"other_versions", others},
                {"read_only", cache.readOnly()},
                {"read_only_reason", cache.readOnlyReason()}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "cache:        " << cache.versionDir() << "\n";
  if (cache.readOnly())
    std::cout << "read-only:    " << cache.readOnlyReason() << "\n";
  std::cout << "entries:      " << listings.size();
  const char *separator = " (";
  for (const auto &[status, count] : byStatus) {
    std::cout << separator << count << " " << status;
    separator = ", ";
  }
  std::cout << (byStatus.empty() ? "" : ")") << "\n";
  std::cout << "size:         " << formatSize(bytes);
  if (allBytes != bytes)
    std::cout << " (" << formatSize(allBytes) << " with other versions)";
  std::cout << "\n";
  std::cout << "max-size:     "
            << (maxSize ? formatSize(maxSize) + " (all versions)"
                        : std::string("none (trn-cache config max-size SIZE "
                                      "sets one)"))
            << "\n";
  if (storedGraphBytes) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.1fx (%s of graphs in %s)", ratio,
                  formatSize(graphBytes).c_str(),
                  formatSize(storedGraphBytes).c_str());
    std::cout << "compression:  " << text << "\n";
  }
  std::cout << "oldest:       " << humanTime(oldest) << "\n";
  std::cout << "newest:       " << humanTime(newest) << "\n";
  std::cout << "locks:        " << locks.size() - stale << " held, " << stale
            << " stale\n";
  const Statistics &c = counters;
  std::cout << "requests:     " << c.requests();
  if (c.zeroedUnix)
    std::cout << " since the counters were zeroed at "
              << humanTime(c.zeroedUnix);
  std::cout << "\n";
  int64_t hits = c[Counter::Hits] + c[Counter::FailureHits];
  std::cout << "hits:         " << hits;
  if (std::optional<double> rate = c.hitRate())
    std::cout << " (" << percent(*rate) << ")";
  if (c[Counter::FailureHits])
    std::cout << ", "
              << countOf(c[Counter::FailureHits], "cached compile error")
              << " among them";
  std::cout << "\n";
  std::cout << "misses:       " << c[Counter::Misses];
  std::vector<std::string> failures;
  if (c[Counter::CompileErrors])
    failures.push_back(countOf(c[Counter::CompileErrors], "compile error"));
  if (c[Counter::UncachedFailures])
    failures.push_back(std::to_string(c[Counter::UncachedFailures]) +
                       " killed, out of memory or not stored");
  for (size_t i = 0; i < failures.size(); ++i)
    std::cout << (i ? ", " : " (") << failures[i]
              << (i + 1 == failures.size() ? ")" : "");
  std::cout << "\n";
  std::cout << "compiling:    "
            << mlir::trn::formatSeconds(c[Counter::CompileMilliseconds] / 1e3)
            << "; waiting for other processes' compiles: "
            << mlir::trn::formatSeconds(c[Counter::WaitMilliseconds] / 1e3)
            << "\n";
  std::cout << "evicted:      "
            << countOf(c[Counter::EvictedEntries], "entry", "entries") << " ("
            << formatSize(c[Counter::EvictedBytes]) << ")\n";
  std::cout << "quarantined:  "
            << countOf(c[Counter::Quarantined], "corrupt entry",
                       "corrupt entries")
            << "\n";
  bool headed = false;
  for (const VersionTree &tree : versions) {
    if (tree.current)
      continue;
    if (!headed)
      std::cout << "other compiler versions (trn-cache prune --versions "
                   "removes them):\n";
    headed = true;
    std::cout << "  " << tree.version << ": "
              << countOf(tree.entries, "entry", "entries") << ", "
              << formatSize(tree.bytes) << ", last used "
              << humanTime(tree.lastUsedUnix) << ", hit rate "
              << hitRateText(tree.statistics)
              << (tree.compiling ? "; a compile is in progress" : "") << "\n";
  }
  return 0;
}

/// The entries of `listings` whose key starts with `wanted` (MODULE_
/// optional), written in full or in list's short form (16 + 8 hex digits).
std::vector<EntryListing>
entriesMatching(const std::vector<EntryListing> &listings, std::string wanted) {
  if (wanted.rfind("MODULE_", 0) == 0)
    wanted = wanted.substr(7);
  std::vector<EntryListing> matches;
  for (const EntryListing &l : listings) {
    std::string name = l.key.graph.hex() + "+" + l.key.flags.hex();
    if (name.rfind(wanted, 0) == 0 || shortKey(l.key).rfind(wanted, 0) == 0)
      matches.push_back(l);
  }
  return matches;
}
std::vector<EntryListing> entriesMatching(Cache &cache,
                                          const std::string &wanted) {
  return entriesMatching(cache.list(), wanted);
}

int runShow(Cache &cache, const Options &options) {
  std::vector<EntryListing> matches =
      entriesMatching(cache, options.positional.front());
  if (matches.empty())
    return fail("no entry matches '" + options.positional.front() + "' in " +
                cache.versionDir() + " (see trn-cache list)");
  if (matches.size() > 1) {
    // The candidates, so that the next try can be one of them.
    std::string candidates;
    constexpr size_t kShown = 5;
    for (size_t i = 0; i < std::min(matches.size(), kShown); ++i)
      candidates += (i ? ", " : "") + shortKey(matches[i].key);
    if (matches.size() > kShown)
      candidates += ", ...";
    return fail("'" + options.positional.front() + "' matches " +
                countOf(matches.size(), "entry", "entries") + " (" +
                candidates + "); give more of the key");
  }
  EntryListing &listing = matches.front();
  if (!listing.entry)
    return fail(listing.key.dirName() + " is " + listing.status +
                "; nothing to show (trn-cache clean removes it)");
  const Entry &entry = *listing.entry;
  Result<std::string> log = cache.readLog(entry);
  // Listing checks sizes only: a damaged artifact would show as "done".
  std::optional<std::string> corrupt = cache.checkEntry(entry);
  if (options.json) {
    json out = {{"key", entry.key.dirName()},
                {"path", entry.path},
                {"status", statusName(entry.status)},
                {"failure", failureKindName(entry.failure)},
                {"diagnostic", entry.diagnostic},
                {"size_bytes", entry.sizeBytes},
                {"last_used_unix", entry.lastUsedUnix},
                {"locked", listing.locked},
                {"metadata", metadataJson(entry.metadata)},
                {"log", log ? *log : ""}};
    if (!log)
      out["log_error"] = log.error;
    if (corrupt)
      out["corrupt"] = *corrupt;
    std::cout << out.dump(2) << "\n";
    return log && !corrupt ? 0 : 1;
  }
  const EntryMetadata &m = entry.metadata;
  std::cout << "key:          " << entry.key.dirName() << "\n";
  std::cout << "path:         " << entry.path << "\n";
  std::cout << "status:       "
            << (corrupt ? "corrupt" : statusName(entry.status));
  if (!corrupt && entry.status == EntryStatus::Failed)
    std::cout << " (" << failureKindName(entry.failure) << ")";
  std::cout << "\n";
  if (!entry.diagnostic.empty())
    std::cout << "diagnostic:   " << entry.diagnostic << "\n";
  std::cout << "graph:        " << m.graphName << "\n";
  std::string flags;
  for (const std::string &flag : m.flags)
    flags += (flags.empty() ? "" : " ") + flag;
  std::cout << "flags:        " << flags << "\n";
  std::cout << "normalized:   " << m.normalizedFlags << "\n";
  std::cout << "target:       " << m.target << "\n";
  std::cout << "compiler:     " << m.compilerVersion << "\n";
  std::cout << "host:         " << m.host << "\n";
  std::printf("compile time: %.3f s\n", m.compileSeconds);
  std::cout << "peak memory:  " << formatSize(m.peakMemoryBytes) << "\n";
  std::cout << "created:      " << humanTime(m.createdUnix) << "\n";
  std::cout << "last used:    " << humanTime(entry.lastUsedUnix) << "\n";
  std::cout << "size:         " << formatSize(entry.sizeBytes) << "\n";
  if (corrupt)
    return fail(entry.path + " is corrupt: " + *corrupt +
                "; trn-cache verify --fix quarantines it and the next "
                "compile of this graph replaces it");
  if (!log)
    return fail(log.error);
  std::cout << "--- compile log ---\n" << *log;
  if (!log->empty() && log->back() != '\n')
    std::cout << "\n";
  return 0;
}

json cleanReportJson(const Cache::CleanReport &report) {
  return {{"removed_entries", report.removedEntries},
          {"removed_bytes", report.removedBytes},
          {"removed", report.removed},
          {"skipped", report.skipped}};
}

/// `what` removed: each path, what was kept and why, and the total.
void printRemoved(const Cache::CleanReport &report, const char *verb) {
  for (const std::string &path : report.removed)
    std::cout << verb << " " << path << "\n";
  for (const std::string &why : report.skipped)
    std::cout << "kept " << why << "\n";
  std::cout << verb << " " << countOf(report.removedEntries, "entry", "entries")
            << ", " << formatSize(report.removedBytes) << "\n";
}

int printCleanReport(const Cache::CleanReport &report, const Options &options,
                     const char *verb) {
  if (options.json)
    std::cout << cleanReportJson(report).dump(2) << "\n";
  else
    printRemoved(report, verb);
  return 0;
}

int runRemove(Cache &cache, const Options &options) {
  // Every KEY must name one entry before anything is removed. One listing
  // serves every KEY.
  std::vector<EntryListing> listings = cache.list();
  std::vector<CacheKey> keys;
  for (const std::string &wanted : options.positional) {
    std::vector<EntryListing> matches = entriesMatching(listings, wanted);
    if (matches.size() != 1)
      return fail("'" + wanted + "' matches " +
                  (matches.empty()
                       ? std::string("no entry in ") + cache.versionDir()
                       : countOf(matches.size(), "entry", "entries")) +
                  "; nothing removed (give a key as trn-cache list shows it)");
    keys.push_back(matches.front().key);
  }
  return printCleanReport(cache.remove(keys), options, "removed");
}

int runPrune(Cache &cache, const Options &options) {
  std::optional<int64_t> maxSize = options.maxSize;
  if (!maxSize && !options.versions) {
    Result<CacheConfig> config = cache.config();
    if (!config)
      return fail(config.error);
    maxSize = config->maxSizeBytes;
    if (!maxSize)
      return usageError("prune needs --max-size SIZE, --versions or a "
                        "configured max-size (trn-cache config max-size 20G)");
  }
  json out = json::object();
  if (options.versions) {
    Cache::CleanReport versions = cache.pruneVersions();
    out["versions"] = cleanReportJson(versions);
    if (!options.json)
      printRemoved(versions, "removed");
  }
  if (maxSize) {
    Cache::CleanReport evicted = cache.prune(*maxSize);
    out["evicted"] = cleanReportJson(evicted);
    if (!options.json)
      printRemoved(evicted, "evicted");
  }
  if (options.json)
    std::cout << out.dump(2) << "\n";
  return 0;
}

int runConfig(Cache &cache, const Options &options) {
  Result<CacheConfig> config = cache.config();
  if (options.positional.size() == 2) {
    const std::string &text = options.positional[1];
    std::optional<int64_t> bytes;
    if (text != "none" && text != "0") {
      bytes = mlir::trn::parseSize(text);
      if (!bytes || *bytes <= 0)
        return usageError("max-size '" + text +
                          "' is not a size (use e.g. 500M, 50G, or none)");
    }
    if (Result<Unit> stored = cache.setMaxSize(bytes); !stored)
      return fail(stored.error);
    config = cache.config();
  }
  if (!config)
    return fail(config.error + " (trn-cache config max-size SIZE rewrites "
                               "them)");
  std::optional<int64_t> maxSize = config->maxSizeBytes;
  if (options.json) {
    std::cout << json{{"max_size_bytes",
                       maxSize ? json(*maxSize) : json(nullptr)}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "max-size: "
            << (maxSize ? formatSize(*maxSize) + " (" +
                              std::to_string(*maxSize) + " bytes)"
                        : std::string("none"))
            << "\n";
  if (maxSize && options.positional.size() == 2) {
    int64_t total = 0;
    for (const VersionTree &tree : cache.versions())
      total += tree.bytes;
    if (total > *maxSize)
      std::cout << "the cache holds " << formatSize(total)
                << ": the next store evicts down to "
                << formatSize(int64_t(*maxSize * kEvictToFraction))
                << "; trn-cache prune evicts now\n";
  }
  return 0;
}

int runClearLocks(Cache &cache, const Options &options) {
  if (options.all) {
    std::vector<LockInfo> live;
    for (const LockInfo &lock : cache.locks())
      if (!lock.stale)
        live.push_back(lock);
    if (!live.empty())
      std::cerr << "trn-cache: warning: removing "
                << countOf(live.size(), "live lock")
                << "; their compiles continue and may be duplicated\n";
  }
  std::vector<LockInfo> removed = cache.clearLocks(options.all);
  if (options.json) {
    json out = json::array();
    for (const LockInfo &lock : removed)
      out.push_back(lockJson(lock));
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const LockInfo &lock : removed)
    std::cout << "removed lock " << describeLock(lock) << "\n";
  std::cout << "removed " << countOf(removed.size(), "lock") << "\n";
  return 0;
}

int runVerify(Cache &cache, const Options &options) {
  Cache::VerifyReport report = cache.verify(options.fix);
  bool bad = !report.corrupt.empty() &&
             report.quarantined < static_cast<int64_t>(report.corrupt.size());
  if (options.json) {
    json corrupt = json::array();
    for (const auto &[path, why] : report.corrupt)
      corrupt.push_back({{"path", path}, {"problem", why}});
    std::cout << json{{"checked", report.checked},
                      {"corrupt", corrupt},
                      {"quarantined", report.quarantined}}
                     .dump(2)
              << "\n";
    return bad ? 1 : 0;
  }
  for (const auto &[path, why] : report.corrupt)
    std::cout << "corrupt " << path << ": " << why << "\n";
  std::cout << "checked " << report.checked
            << " entries: " << report.corrupt.size() << " corrupt";
  if (options.fix)
    std::cout << ", " << report.quarantined << " moved to the quarantine";
  else if (!report.corrupt.empty())
    std::cout << " (trn-cache verify --fix quarantines them)";
  std::cout << "\n";
  return bad ? 1 : 0;
}

//===----------------------------------------------------------------------===//
// explain
//===----------------------------------------------------------------------===//

/// A KEY argument of `explain`, resolved.
struct KeyArgument {
  CacheKey key;
  std::string path;                    ///< where its entry is (or would be)
  std::optional<EntryListing> listing; ///< std::nullopt: no entry there
  /// "done, graph add_exp, <path>", "no entry at <path>", ...
  std::string state() const {
    if (!listing)
      return "missing: no entry at " + path;
    if (!listing->entry)
      return listing->status +
             (listing->problem.empty() ? "" : " (" + listing->problem + ")") +
             ", " + path;
    return listing->status + ", graph " + listing->entry->metadata.graphName +
           ", " + path;
  }
  const EntryMetadata *metadata() const {
    return listing && listing->entry ? &listing->entry->metadata : nullptr;
  }
};

/// Why a KEY argument names no entry: a malformed argument (a command-line
/// error) or one the cache does not resolve.
struct KeyProblem {
  std::string message;
  bool malformed;
};

/// Resolves a key, the short `<graph>+<flags>` form, an entry's path or a
/// unique prefix of a key in the cache; returns the error otherwise.
std::optional<KeyProblem> resolveKey(Cache &cache, const std::string &text,
                                     KeyArgument &out) {
  const std::string expected =
      "MODULE_<graph>+<flags> or <graph>+<flags> (32 lowercase hex digits "
      "each), a unique prefix of a key in the cache, or an entry's path";
  std::string path = text;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos) {
    std::string name = path.substr(slash + 1);
    std::optional<CacheKey> key =
        name.rfind("MODULE_", 0) == 0 ? CacheKey::parse(name) : std::nullopt;
    if (!key)
      return KeyProblem{"'" + text +
                            "' is not a cache entry's path: its last part is "
                            "not MODULE_<graph>+<flags>",
                        true};
    out.key = *key;
    out.path = path;
    out.listing = cache.inspect(*key, path);
    return std::nullopt;
  }
  if (std::optional<CacheKey> key = CacheKey::parse(text)) {
    out.key = *key;
    out.path = cache.versionDir() + "/" + key->dirName();
    out.listing = cache.inspect(*key);
    return std::nullopt;
  }
  std::string body = text.rfind("MODULE_", 0) == 0 ? text.substr(7) : text;
  if (body.empty() ||
      body.find_first_not_of("0123456789abcdef+") != std::string::npos ||
      std::count(body.begin(), body.end(), '+') > 1)
    return KeyProblem{"'" + text + "' is not a cache key; give " + expected,
                      true};
  std::vector<EntryListing> matches = entriesMatching(cache, text);
  if (matches.empty())
    return KeyProblem{"no entry in " + cache.versionDir() + " starts with '" +
                          text +
                          "'; for a key that is not in the cache give all of "
                          "it (MODULE_<graph>+<flags>)",
                      false};
  if (matches.size() > 1)
    return KeyProblem{"'" + text + "' matches " +
                          countOf(matches.size(), "entry", "entries") +
                          "; give more of the key",
                      false};
  out.key = matches.front().key;
  out.path = matches.front().path;
  out.listing = std::move(matches.front());
  return std::nullopt;
}

/// One line of a graph text, trimmed, with its 1-based number.
struct GraphLine {
  size_t number;
  std::string text;
};

/// The lines that can make two graphs differ: blank and `//` comment lines
/// and surrounding whitespace are left out.
std::vector<GraphLine> significantLines(const std::string &text) {
  std::vector<GraphLine> lines;
  size_t number = 0, begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos)
      end = text.size();
    ++number;
    std::string line = text.substr(begin, end - begin);
    size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line.compare(first, 2, "//") != 0)
      lines.push_back(
          {number,
           line.substr(first, line.find_last_not_of(" \t\r") - first + 1)});
    begin = end + 1;
  }
  return lines;
}

/// At most about 160 characters of `line` around column `column`.
std::string excerpt(const std::string &line, size_t column) {
  constexpr size_t kWidth = 160;
  if (line.size() <= kWidth)
    return line;
  size_t begin = column > 60 ? std::min(column - 60, line.size() - kWidth) : 0;
  return (begin ? "..." : "") + line.substr(begin, kWidth) +
         (begin + kWidth < line.size() ? "..." : "");
}

/// Where two stored graph texts first differ, for `explain`.
struct GraphDifference {
  std::string error; ///< a graph could not be read
  bool found = false;
  size_t lines[2] = {0, 0}; ///< 0: that text has ended
  std::string texts[2];
};

GraphDifference compareGraphs(Cache &cache, const KeyArgument (&keys)[2]) {
  GraphDifference difference;
  std::vector<GraphLine> lines[2];
  for (int i = 0; i < 2; ++i) {
    Result<std::string> text = cache.readGraph(*keys[i].listing->entry);
    if (!text) {
      difference.error = text.error;
      return difference;
    }
    lines[i] = significantLines(*text);
  }
  size_t common = std::min(lines[0].size(), lines[1].size()), at = 0;
  while (at < common && lines[0][at].text == lines[1][at].text)
    ++at;
  if (at == common && lines[0].size() == lines[1].size())
    return difference;
  difference.found = true;
  size_t column = 0;
  if (at < common)
    while (column < lines[0][at].text.size() &&
           column < lines[1][at].text.size() &&
           lines[0][at].text[column] == lines[1][at].text[column])
      ++column;
  for (int i = 0; i < 2; ++i)
    if (at < lines[i].size()) {
      difference.lines[i] = lines[i][at].number;
      difference.texts[i] = excerpt(lines[i][at].text, column);
    }
  return difference;
}

int runExplain(Cache &cache, const Options &options) {
  KeyArgument keys[2];
  for (int i = 0; i < 2; ++i)
    if (auto problem = resolveKey(cache, options.positional[i], keys[i]))
      return problem->malformed ? usageError(problem->message)
                                : fail(problem->message);
  bool identical = keys[0].key == keys[1].key;
  bool graphDiffers = keys[0].key.graph != keys[1].key.graph;
  bool flagsDiffer = keys[0].key.flags != keys[1].key.flags;
  const EntryMetadata *m[2] = {keys[0].metadata(), keys[1].metadata()};
  bool complete = identical || (m[0] && m[1]);

  // What the entries' metadata tell about the flags half.
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>>
      flagDifferences;
  std::optional<std::pair<std::string, std::string>> targets, versions,
      graphNames;
  if (m[0] && m[1]) {
    std::map<std::string, std::string> flags[2] = {
        parseNormalizedFlags(m[0]->normalizedFlags),
        parseNormalizedFlags(m[1]->normalizedFlags)};
    std::set<std::string> names;
    for (const auto &values : flags)
      for (const auto &[name, value] : values)
        names.insert(name);
    names.erase("target"); // reported on its own line
    for (const std::string &name : names) {
      auto value = [&](int i) {
        auto found = flags[i].find(name);
        return found == flags[i].end() ? std::string("(unset)") : found->second;
      };
      if (value(0) != value(1))
        flagDifferences.push_back({name, {value(0), value(1)}});
    }
    targets = {m[0]->target, m[1]->target};
    versions = {m[0]->compilerVersion, m[1]->compilerVersion};
    graphNames = {m[0]->graphName, m[1]->graphName};
  }
  GraphDifference graph;
  if (graphDiffers && m[0] && m[1]) {
    graph = compareGraphs(cache, keys);
    if (!graph.error.empty())
      complete = false;
  }

  std::string verdict = identical ? "the keys are identical"
                        : graphDiffers && flagsDiffer
                            ? "the keys differ in their graph and their flags"
                            : std::string("the keys differ in their ") +
                                  (graphDiffers ? "graph" : "flags");
  auto pairJson =
      [](const std::optional<std::pair<std::string, std::string>> &values)
      -> json {
    if (!values)
      return nullptr;
    return json::array({values->first, values->second});
  };
  if (options.json) {
    json entries = json::array();
    for (const KeyArgument &k : keys)
      entries.push_back(
          {{"key", k.key.dirName()},
           {"path", k.path},
           {"status", k.listing ? k.listing->status : "missing"},
           {"graph_name", k.metadata() ? k.metadata()->graphName : ""}});
    json flagsJson = json::array();
    for (const auto &[name, values] : flagDifferences)
      flagsJson.push_back(
          {{"flag", name}, {"values", {values.first, values.second}}});
    json out = {{"identical", identical},
                {"graph_differs", graphDiffers},
                {"flags_differ", flagsDiffer},
                {"complete", complete},
                {"entries", entries},
                {"flag_differences", flagsJson},
                {"targets", pairJson(targets)},
                {"compiler_versions", pairJson(versions)},
                {"graph_names", pairJson(graphNames)},
                {"graph_difference", nullptr}};
    if (!graph.error.empty())
      out["graph_error"] = graph.error;
    if (graph.found)
      out["graph_difference"] = {{"lines", {graph.lines[0], graph.lines[1]}},
                                 {"texts", {graph.texts[0], graph.texts[1]}}};
    std::cout << out.dump(2) << "\n";
    return complete ? 0 : 1;
  }

  for (int i = 0; i < 2; ++i)
    std::cout << "key " << i + 1 << ": " << keys[i].key.dirName() << " ("
              << keys[i].state() << ")\n";
  std::cout << verdict << "\n";
  if (identical)
    return 0;
  auto sameOrBoth = [](const std::pair<std::string, std::string> &values) {
    return values.first == values.second
               ? "same (" + values.first + ")"
               : values.first + " vs " + values.second;
  };
  std::string missing;
  for (int i = 0; i < 2; ++i)
    if (!m[i])
      missing += std::string(missing.empty() ? "" : " and ") + "key " +
                 std::to_string(i + 1);
  std::string without =
      missing + (missing.find(" and ") == std::string::npos ? " has" : " have");
  std::cout << "graph hash: " << (graphDiffers ? "different" : "same") << "\n";
  if (graphDiffers && !missing.empty()) {
    std::cout << "  " << without
              << " no usable entry, so the graphs cannot be compared\n";
  } else if (graphDiffers) {
    std::cout << "  graph name: " << sameOrBoth(*graphNames) << "\n";
    if (!graph.error.empty()) {
      std::cout << "  cannot compare the graphs: " << graph.error << "\n";
    } else if (!graph.found) {
      std::cout << "  the stored graph texts differ only in comments and "
                   "blank lines\n";
    } else {
      std::cout << "  first difference in the stored graph texts (comments "
                   "and blank lines skipped):\n";
      for (int i = 0; i < 2; ++i) {
        if (graph.lines[i])
          std::cout << "  key " << i + 1 << ", line " << graph.lines[i] << ": "
                    << graph.texts[i] << "\n";
        else
          std::cout << "  key " << i + 1 << ": no more lines\n";
      }
    }
  }
  std::cout << "flags hash: " << (flagsDiffer ? "different" : "same") << "\n";
  if (!flagsDiffer) {
    std::cout << "  the same normalised flags, target and compiler version\n";
  } else if (!missing.empty()) {
    std::cout << "  " << without
              << " no usable entry, so which of the flags, the target and "
                 "the compiler version differ cannot be told\n";
  } else {
    for (const auto &[name, values] : flagDifferences)
      std::cout << "  flag " << name << ": " << values.first << " vs "
                << values.second << "\n";
    if (flagDifferences.empty())
      std::cout << "  normalised flags: same\n";
    std::cout << "  target: " << sameOrBoth(*targets) << "\n";
    std::cout << "  compiler version: " << sameOrBoth(*versions) << "\n";
  }
  return complete ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  if (auto problem = parseArgs(argc, argv, options))
    return usageError(*problem);
  if (options.command == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (options.command == "version") {
    std::cout << toolVersion("trn-cache");
    return 0;
  }

  CacheOptions cacheOptions;
  cacheOptions.root = resolveRoot(options.cacheDir);
  // Maintenance never creates a cache: a mistyped directory is an error.
  cacheOptions.create = false;
  cacheOptions.warn = [](const std::string &message) {
    std::cerr << "trn-cache: warning: " << message << "\n";
  };
  Result<Cache> cache = Cache::open(cacheOptions);
  if (!cache)
    return fail(cache.error);
  // What would change a read-only cache is refused, not silently skipped.
  bool changes =
      options.command == "clean" || options.command == "clear-locks" ||
      options.command == "prune" || options.command == "remove" ||
      options.fix || options.zero ||
      (options.command == "config" && options.positional.size() == 2);
  if (changes && cache->readOnly())
    return fail("cache " + cacheOptions.root + " is read-only (" +
                cache->readOnlyReason() + "): '" + options.command +
                (options.fix    ? " --fix"
                 : options.zero ? " --zero"
                                : "") +
                "' would change it");

  const std::string &command = options.command;
  if (command == "list")
    return runList(*cache, options);
  if (command == "stats")
    return runStats(*cache, options);
  if (command == "show")
    return runShow(*cache, options);
  if (command == "explain")
    return runExplain(*cache, options);
  if (command == "clean")
    return printCleanReport(
        cache->clean(options.all, options.olderThan.value_or(-1)), options,
        "removed");
  if (command == "clear-locks")
    return runClearLocks(*cache, options);
  if (command == "verify")
    return runVerify(*cache, options);
  if (command == "prune")
    return runPrune(*cache, options);
  if (command == "remove")
    return runRemove(*cache, options);
  if (command == "config")
    return runConfig(*cache, options);
  return fail("unhandled command " + command);
}
