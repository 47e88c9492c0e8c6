//===- Cache.cpp - compile cache on a shared filesystem -------------------===//
//
// The store: entries published by rename, verified on every read, locks
// only to avoid duplicate compiles, and maintenance that tolerates other
// processes working at the same time. docs/cache.md describes the layout and
// the protocol; Lock.cpp holds the lock-file mechanics.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Cache.h"

#include "Lock.h"
#include "Support.h"

#include <nlohmann/json.hpp>
#include <xxhash.h>
#include <zstd.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <set>

namespace mlir::trn::cache {

using namespace detail;
using json = nlohmann::json;

namespace detail {

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
};

} // namespace detail

namespace {

constexpr const char *kMarkerFile = "trn-cache.json";
constexpr const char *kCacheDirTag = "CACHEDIR.TAG";
constexpr const char *kTmpDir = "tmp";
constexpr const char *kLocksDir = "locks";
constexpr const char *kQuarantineDir = "quarantine";

constexpr const char *kManifestFile = "manifest.json";
constexpr const char *kArtifactFile = "artifact.bin";
constexpr const char *kGraphFile = "graph.mlir.zst";
constexpr const char *kMetadataFile = "flags.json";
constexpr const char *kLogFile = "compile.log";
/// The manifest is read before anything says how large it is. It holds a
/// record per file and one diagnostic line, so this is far beyond any real
/// one; a larger file is corrupt.
constexpr uint64_t kMaxManifestBytes = uint64_t(64) << 20;
constexpr const char *kLastUsedFile = "last_used";
constexpr const char *kQuarantineReasonFile = "QUARANTINE_REASON.txt";

/// The manifest's own checksum field; the digest covers the manifest text
/// with this value set to 32 zeros.
constexpr const char *kChecksumField = "\"manifest_xxh3\": \"";
constexpr size_t kDigestLength = 32;

/// A hit refreshes the last-use time at most this often (an NFS SETATTR
/// per hit would be wasted).
constexpr double kLastUseThrottleSeconds = 60;
/// Temporaries older than this belong to a dead publisher.
constexpr double kStaleTemporarySeconds = 3600;
constexpr int kGraphZstdLevel = 3;
constexpr int kPublishAttempts = 10;

const char *kCacheDirTagText =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by trn (the compile cache).\n"
    "# For information about cache directory tags see "
    "https://bford.info/cachedir/\n";

std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), seconds < 10 ? "%.1f" : "%.0f", seconds);
  return text;
}

std::string digestHex(XXH128_hash_t digest) {
  return Hash128{digest.high64, digest.low64}.hex();
}

std::string checksumOf(std::string_view bytes) {
  return digestHex(XXH3_128bits(bytes.data(), bytes.size()));
}

/// Streams a regular file through XXH3-128 without holding it in memory.
/// Returns 0, an errno value or an error of openRegularFileAt.
int hashFileAt(int dirFd, const char *name, int64_t &size, std::string &digest,
               std::string *problem) {
  // Regular files only: an entry's FIFO or device would hang the hash.
  int raw = -1;
  if (int err = openRegularFileAt(
          dirFd, name, std::numeric_limits<uint64_t>::max(), raw, problem))
    return err;
  FileDescriptor fd(raw);
  XXH3_state_t *hashState = XXH3_createState();
  if (!hashState)
    return ENOMEM;
  XXH3_128bits_reset(hashState);
  std::vector<char> buffer(1 << 20);
  size = 0;
  int err = 0;
  while (true) {
    ssize_t got = read(fd.get(), buffer.data(), buffer.size());
    if (got < 0) {
      if (errno == EINTR)
        continue;
      err = errno;
      break;
    }
    if (got == 0)
      break;
    XXH3_128bits_update(hashState, buffer.data(), static_cast<size_t>(got));
    size += got;
  }
  digest = digestHex(XXH3_128bits_digest(hashState));
  XXH3_freeState(hashState);
  return err;
}

const char *statusName(EntryStatus status) {
  return status == EntryStatus::Done ? "done" : "failed";
}

/// dump() that never throws on invalid UTF-8 in compiler logs or flags.
std::string dumpJson(const json &value, int indent = 2) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

//===----------------------------------------------------------------------===//
// Manifest and metadata
//===----------------------------------------------------------------------===//

struct FileRecord {
  int64_t size = 0;
  std::string xxh3;
};

/// What an entry file may hold when read whole: the size its record gives.
uint64_t recordedSize(const FileRecord &record) {
  return static_cast<uint64_t>(std::max<int64_t>(record.size, 0));
}

std::string largerThanRecorded(const std::string &name,
                               const FileRecord &record) {
  return name + " is larger than the " + std::to_string(recordedSize(record)) +
         " bytes the manifest records";
}

struct Manifest {
  int format = kFormatVersion;
  std::string key;
  EntryStatus status = EntryStatus::Done;
  FailureKind failure = FailureKind::None;
  std::string diagnostic;
  std::string publisher; ///< host.pid.random of the process that wrote it
  int64_t createdUnix = 0;
  int64_t graphBytes = 0;
  std::map<std::string, FileRecord> files;
};

std::string serializeManifest(const Manifest &manifest) {
  json files = json::object();
  for (const auto &[name, record] : manifest.files)
    files[name] = {{"size", record.size}, {"xxh3", record.xxh3}};
  json record = {{"format", manifest.format},
                 {"key", manifest.key},
                 {"status", statusName(manifest.status)},
                 {"failure", failureKindName(manifest.failure)},
                 {"diagnostic", manifest.diagnostic},
                 {"publisher", manifest.publisher},
                 {"created_unix", manifest.createdUnix},
                 {"graph_bytes", manifest.graphBytes},
                 {"files", files},
                 {"manifest_xxh3", std::string(kDigestLength, '0')}};
  std::string text = dumpJson(record) + "\n";
  size_t at = text.find(kChecksumField) + std::strlen(kChecksumField);
  text.replace(at, kDigestLength, checksumOf(text));
  return text;
}

enum class ManifestProblem { None, Corrupt, NewerFormat };

/// Checks the manifest's own checksum, then parses it.
ManifestProblem parseManifest(const std::string &text, Manifest &manifest,
                              std::string &problem) {
  size_t field = text.find(kChecksumField);
  if (field == std::string::npos ||
      text.find(kChecksumField, field + 1) != std::string::npos) {
    problem = "manifest.json has no checksum";
    return ManifestProblem::Corrupt;
  }
  size_t at = field + std::strlen(kChecksumField);
  if (text.size() < at + kDigestLength) {
    problem = "manifest.json is truncated";
    return ManifestProblem::Corrupt;
  }
  std::string stored = text.substr(at, kDigestLength);
  std::string zeroed = text;
  zeroed.replace(at, kDigestLength, std::string(kDigestLength, '0'));
  if (checksumOf(zeroed) != stored) {
    problem = "manifest.json checksum mismatch";
    return ManifestProblem::Corrupt;
  }
  try {
    json record = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) {
      problem = "manifest.json is not a JSON object";
      return ManifestProblem::Corrupt;
    }
    manifest.format = record.at("format").get<int>();
    if (manifest.format > kFormatVersion) {
      problem = "written by a newer trn (entry format " +
                std::to_string(manifest.format) + ", this trn reads up to " +
                std::to_string(kFormatVersion) + ")";
      return ManifestProblem::NewerFormat;
    }
    manifest.key = record.at("key").get<std::string>();
    std::string status = record.at("status").get<std::string>();
    if (status != "done" && status != "failed") {
      problem = "manifest.json has unknown status '" + status + "'";
      return ManifestProblem::Corrupt;
    }
    manifest.status =
        status == "done" ? EntryStatus::Done : EntryStatus::Failed;
    std::optional<FailureKind> failure =
        parseFailureKind(record.at("failure").get<std::string>());
    if (!failure) {
      problem = "manifest.json has an unknown failure kind";
      return ManifestProblem::Corrupt;
    }
    manifest.failure = *failure;
    manifest.diagnostic = record.at("diagnostic").get<std::string>();
    manifest.publisher = record.at("publisher").get<std::string>();
    manifest.createdUnix = record.at("created_unix").get<int64_t>();
    manifest.graphBytes = record.at("graph_bytes").get<int64_t>();
    for (const auto &[name, file] : record.at("files").items()) {
      if (name.empty() || name.find('/') != std::string::npos ||
          name[0] == '.') {
        problem = "manifest.json lists a bad file name";
        return ManifestProblem::Corrupt;
      }
      manifest.files[name] = {file.at("size").get<int64_t>(),
                              file.at("xxh3").get<std::string>()};
    }
  } catch (const std::exception &error) {
    problem = std::string("manifest.json is malformed (") + error.what() + ")";
    return ManifestProblem::Corrupt;
  }
  bool done = manifest.status == EntryStatus::Done;
  if (done != (manifest.failure == FailureKind::None) ||
      done != (manifest.files.count(kArtifactFile) == 1) ||
      !manifest.files.count(kGraphFile) ||
      !manifest.files.count(kMetadataFile) || !manifest.files.count(kLogFile)) {
    problem = "manifest.json is inconsistent";
    return ManifestProblem::Corrupt;
  }
  return ManifestProblem::None;
}

double finiteOrZero(double value) { return std::isfinite(value) ? value : 0; }

std::string serializeMetadata(const EntryMetadata &m) {
  json record = {{"format", kFormatVersion},
                 {"flags", m.flags},
                 {"normalized_flags", m.normalizedFlags},
                 {"target", m.target},
                 {"compiler_version", m.compilerVersion},
                 {"host", m.host},
                 {"graph_name", m.graphName},
                 {"compile_seconds", finiteOrZero(m.compileSeconds)},
                 {"peak_memory_bytes", m.peakMemoryBytes},
                 {"created_unix", m.createdUnix}};
  return dumpJson(record) + "\n";
}

bool parseMetadata(const std::string &text, EntryMetadata &m,
                   std::string &problem) {
  try {
    json record = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) {
      problem = "flags.json is not a JSON object";
      return false;
    }
    m.flags = record.at("flags").get<std::vector<std::string>>();
    m.normalizedFlags = record.at("normalized_flags").get<std::string>();
    m.target = record.at("target").get<std::string>();
    m.compilerVersion = record.at("compiler_version").get<std::string>();
    m.host = record.at("host").get<std::string>();
    m.graphName = record.at("graph_name").get<std::string>();
    m.compileSeconds = record.at("compile_seconds").get<double>();
    m.peakMemoryBytes = record.at("peak_memory_bytes").get<int64_t>();
    m.createdUnix = record.at("created_unix").get<int64_t>();
    return true;
  } catch (const std::exception &error) {
    problem = std::string("flags.json is malformed (") + error.what() + ")";
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Loading and verifying an entry
//===----------------------------------------------------------------------===//

enum class LoadState {
  Ok,
  Missing,     ///< no entry (or it vanished while we read it)
  Corrupt,     ///< quarantine it
  NewerFormat, ///< leave it alone
  Unreadable,  ///< permissions or I/O: not the entry's fault
};

enum class VerifyLevel {
  /// Manifest and metadata checksums, every file's size: cheap (list).
  Sizes,
  /// Every checksum (lookup, verify).
  Everything,
};

struct LoadedEntry {
  LoadState state = LoadState::Missing;
  std::string problem;
  Entry entry;
  Manifest manifest;
  FileDescriptor dirFd;
  struct stat dirInfo {};
};

bool stillAt(const std::string &path, const struct stat &info) {
  struct stat current;
  return stat(path.c_str(), &current) == 0 && sameFile(current, info);
}

void loadEntryChecked(LoadedEntry &out, const std::string &path,
                      const CacheKey &key, VerifyLevel level) {
  out.entry.key = key;
  out.entry.path = path;
  out.dirFd =
      FileDescriptor(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!out.dirFd.valid()) {
    int err = errno;
    if (isVanished(err)) {
      out.state = LoadState::Missing;
    } else if (err == ENOTDIR) {
      out.state = LoadState::Corrupt;
      out.problem = "not a directory";
    } else {
      out.state = LoadState::Unreadable;
      out.problem = errnoText(err);
    }
    return;
  }
  fstat(out.dirFd.get(), &out.dirInfo);
  int dir = out.dirFd.get();

  std::string problem;
  auto fileProblem = [&](const std::string &name, int err) {
    if (isVanished(err)) {
      out.state = LoadState::Corrupt;
      out.problem = name + " is missing";
    } else if (err == kNotRegularFile || err == kFileTooLarge) {
      out.state = LoadState::Corrupt;
      out.problem = problem;
    } else {
      out.state = LoadState::Unreadable;
      out.problem = "cannot read " + name + ": " + errnoText(err);
    }
  };

  std::string manifestText;
  if (int err = readFileAt(dir, kManifestFile, manifestText, kMaxManifestBytes,
                           &problem))
    return fileProblem(kManifestFile, err);
  switch (parseManifest(manifestText, out.manifest, out.problem)) {
  case ManifestProblem::Corrupt:
    out.state = LoadState::Corrupt;
    return;
  case ManifestProblem::NewerFormat:
    out.state = LoadState::NewerFormat;
    return;
  case ManifestProblem::None:
    break;
  }
  if (out.manifest.key != key.dirName()) {
    out.state = LoadState::Corrupt;
    out.problem = "manifest.json names another key (" + out.manifest.key + ")";
    return;
  }

  int64_t total = static_cast<int64_t>(manifestText.size());
  std::string metadataText;
  for (const auto &[name, record] : out.manifest.files) {
    int64_t size = 0;
    std::string digest;
    bool hash = level == VerifyLevel::Everything || name == kMetadataFile;
    if (name == kMetadataFile) {
      if (int err = readFileAt(dir, name.c_str(), metadataText,
                               recordedSize(record), &problem)) {
        if (err == kFileTooLarge)
          problem = largerThanRecorded(name, record);
        return fileProblem(name, err);
      }
      size = static_cast<int64_t>(metadataText.size());
      digest = checksumOf(metadataText);
    } else if (hash) {
      if (int err = hashFileAt(dir, name.c_str(), size, digest, &problem))
        return fileProblem(name, err);
    } else {
      struct stat info;
      if (fstatat(dir, name.c_str(), &info, 0) != 0)
        return fileProblem(name, errno);
      size = info.st_size;
    }
    if (size != record.size) {
      out.state = LoadState::Corrupt;
      out.problem = name + " has " + std::to_string(size) + " bytes, " +
                    std::to_string(record.size) + " expected (truncated?)";
      return;
    }
    if (hash && digest != record.xxh3) {
      out.state = LoadState::Corrupt;
      out.problem = name + " checksum mismatch";
      return;
    }
    total += size;
  }
  if (!parseMetadata(metadataText, out.entry.metadata, out.problem)) {
    out.state = LoadState::Corrupt;
    return;
  }

  Entry &entry = out.entry;
  entry.status = out.manifest.status;
  entry.failure = out.manifest.failure;
  entry.diagnostic = out.manifest.diagnostic;
  entry.sizeBytes = total;
  entry.graphBytes = out.manifest.graphBytes;
  entry.storedGraphBytes = out.manifest.files[kGraphFile].size;
  struct stat lastUsed;
  entry.lastUsedUnix = fstatat(dir, kLastUsedFile, &lastUsed, 0) == 0
                           ? static_cast<int64_t>(lastUsed.st_mtime)
                           : out.manifest.createdUnix;
  out.state = LoadState::Ok;
}

LoadedEntry loadEntry(const std::string &path, const CacheKey &key,
                      VerifyLevel level) {
  LoadedEntry out;
  loadEntryChecked(out, path, key, level);
  // An entry removed or replaced while we read it is not corrupt: its files
  // vanished from under our directory descriptor.
  if (out.state == LoadState::Corrupt && out.dirFd.valid() &&
      !stillAt(path, out.dirInfo))
    out.state = LoadState::Missing;
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Internal operations that need the Cache's state
//===----------------------------------------------------------------------===//

namespace detail {

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
                               std::string &destination, int &error) {
    if (!stillAt(path, info))
      return QuarantineOutcome::Gone;
    std::string quarantineDir = dir(kQuarantineDir);
    makeDirectory(quarantineDir);
    size_t slash = path.find_last_of('/');
    std::string name =
        slash == std::string::npos ? path : path.substr(slash + 1);
    destination = joinPath(quarantineDir, name + "." + uniqueSuffix());
    if (rename(path.c_str(), destination.c_str()) != 0) {
      error = errno;
      return isVanished(error) ? QuarantineOutcome::Gone
                               : QuarantineOutcome::Failed;
    }
    FileDescriptor moved(
        open(destination.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (moved.valid())
      writeNewFileAt(moved.get(), kQuarantineReasonFile,
                     reason + "\nquarantined by " + hostName() + " pid " +
                         std::to_string(getpid()) + " at unix time " +
                         std::to_string(nowUnix()) + "\n",
                     /*sync=*/false);
    return QuarantineOutcome::Moved;
  }

  /// Quarantines and reports a corrupt entry; returns the user's message.
  std::string handleCorrupt(const LoadedEntry &loaded) {
    std::string destination;
    int error = 0;
    const std::string &path = loaded.entry.path;
    if (readOnly()) {
      warnOnce("corrupt cache entry " + path + " (" + loaded.problem + "); " +
               readOnlyText() + ", so it stays; treating it as a miss");
      return "cache entry " + path + " is corrupt (" + loaded.problem + "); " +
             readOnlyText() + ", so it was not moved to the quarantine";
    }
    switch (
        quarantine(path, loaded.dirInfo, loaded.problem, destination, error)) {
    case QuarantineOutcome::Moved:
      warn("corrupt cache entry " + path + " (" + loaded.problem +
           "): moved it to " + destination + "; it will be compiled again");
      return "cache entry " + path + " is corrupt (" + loaded.problem +
             "); it was moved to the quarantine, run again to rebuild it";
    case QuarantineOutcome::Gone:
      // Removed or replaced while we read it (prune, clean, a republish):
      // the same miss as an entry that was gone before we looked.
      return vanishedEntryText(path);
    case QuarantineOutcome::Failed:
      break;
    }
    warnOnce("corrupt cache entry " + path + " (" + loaded.problem +
             "): cannot move it to the quarantine (" + errnoText(error) +
             "); treating it as a miss (trn-cache verify --fix moves it)");
    return "cache entry " + path + " is corrupt (" + loaded.problem +
           "); run trn-cache verify --fix, then run again";
  }

  void touchLastUsed(LoadedEntry &loaded) {
    double now = nowUnixSeconds();
    if (now - static_cast<double>(loaded.entry.lastUsedUnix) <
        kLastUseThrottleSeconds)
      return;
    // UTIME_NOW: on NFS the server's clock, the same clock as every other
    // node's touches.
    if (utimensat(loaded.dirFd.get(), kLastUsedFile, nullptr, 0) != 0 &&
        isVanished(errno)) {
      int fd = openat(loaded.dirFd.get(), kLastUsedFile,
                      O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
      if (fd >= 0)
        close(fd);
    }
    loaded.entry.lastUsedUnix = static_cast<int64_t>(now);
  }

  /// A verified entry, or std::nullopt for a miss (corrupt entries are
  /// quarantined on the way).
  std::optional<LoadedEntry> lookup(const CacheKey &key) {
    LoadedEntry loaded =
        loadEntry(entryPath(key), key, VerifyLevel::Everything);
    switch (loaded.state) {
    case LoadState::Ok:
      if (!readOnly())
        touchLastUsed(loaded);
      return loaded;
    case LoadState::Missing:
      return std::nullopt;
    case LoadState::Corrupt:
      handleCorrupt(loaded);
      return std::nullopt;
    case LoadState::NewerFormat:
      warnOnce("cache entry " + loaded.entry.path + " was " + loaded.problem +
               "; ignoring it");
      return std::nullopt;
    case LoadState::Unreadable:
      warnOnce("cannot read cache entry " + loaded.entry.path + ": " +
               loaded.problem + "; treating it as a miss");
      return std::nullopt;
    }
    return std::nullopt;
  }

  /// Reads one file of an entry and verifies it against the manifest.
  Result<std::string> readEntryFile(const Entry &entry, const char *name,
                                    const char *what) {
    LoadedEntry loaded = loadEntry(entry.path, entry.key, VerifyLevel::Sizes);
    switch (loaded.state) {
    case LoadState::Ok:
      break;
    case LoadState::Missing:
      return Result<std::string>::failure(vanishedEntryText(entry.path));
    case LoadState::Corrupt:
      return Result<std::string>::failure(handleCorrupt(loaded));
    case LoadState::NewerFormat:
    case LoadState::Unreadable:
      return Result<std::string>::failure("cannot read cache entry " +
                                          entry.path + ": " + loaded.problem);
    }
    auto record = loaded.manifest.files.find(name);
    if (record == loaded.manifest.files.end())
      return Result<std::string>::failure(
          "cache entry " + entry.path + " has no " + what +
          " (it records a failed compile; see trn-cache show)");
    std::string data, problem;
    // No more than the manifest records: a file that is not a regular file
    // or has grown is corrupt, and is never read whole.
    if (int err = readFileAt(loaded.dirFd.get(), name, data,
                             recordedSize(record->second), &problem)) {
      loaded.state = LoadState::Corrupt;
      loaded.problem = std::string(name) + ": " + errnoText(err);
      if (err == kNotRegularFile)
        loaded.problem = problem;
      else if (err == kFileTooLarge)
        loaded.problem = largerThanRecorded(name, record->second);
      else if (!isVanished(err))
        return Result<std::string>::failure("cannot read " + entry.path + "/" +
                                            name + ": " + errnoText(err));
    } else if (static_cast<int64_t>(data.size()) != record->second.size) {
      loaded.state = LoadState::Corrupt;
      loaded.problem = std::string(name) + " has " +
                       std::to_string(data.size()) + " bytes, " +
                       std::to_string(record->second.size) + " expected";
    } else if (checksumOf(data) != record->second.xxh3) {
      loaded.state = LoadState::Corrupt;
      loaded.problem = std::string(name) + " checksum mismatch";
    }
    if (loaded.state == LoadState::Corrupt)
      return Result<std::string>::failure(handleCorrupt(loaded));
    return Result<std::string>::success(std::move(data));
  }

  Result<Entry> publish(const CacheKey &key, const std::string &graphText,
                        const CompileOutput &output, int &error);
  CompileResult getOrCompile(const CacheKey &key, const std::string &graphText,
                             const std::function<CompileOutput()> &compile);
  /// Moves a directory out of the way and deletes it; false if it vanished.
  bool removeEntryDirectory(const std::string &path,
                            const std::string &dirName) {
    std::string aside =
        joinPath(dir(kTmpDir), dirName + ".deleting." + uniqueSuffix());
    makeDirectory(dir(kTmpDir));
    if (rename(path.c_str(), aside.c_str()) != 0)
      return false;
    removeTree(aside);
    return true;
  }
};

} // namespace detail

//===----------------------------------------------------------------------===//
// Free functions
//===----------------------------------------------------------------------===//

std::string resolveRoot(const std::string &cliDir) {
  if (!cliDir.empty())
    return cliDir;
  const char *env = std::getenv("TRN_CACHE_DIR");
  if (env && *env)
    return env;
  return kDefaultRoot;
}

const char *failureKindName(FailureKind kind) {
  switch (kind) {
  case FailureKind::None:
    return "none";
  case FailureKind::CompileError:
    return "compile-error";
  case FailureKind::Killed:
    return "killed";
  case FailureKind::OutOfMemory:
    return "out-of-memory";
  case FailureKind::Timeout:
    return "timeout";
  case FailureKind::OutOfDisk:
    return "out-of-disk";
  }
  return "unknown";
}

std::optional<FailureKind> parseFailureKind(const std::string &name) {
  for (FailureKind kind :
       {FailureKind::None, FailureKind::CompileError, FailureKind::Killed,
        FailureKind::OutOfMemory, FailureKind::Timeout, FailureKind::OutOfDisk})
    if (name == failureKindName(kind))
      return kind;
  return std::nullopt;
}

bool isCacheable(FailureKind kind) { return kind == FailureKind::CompileError; }

void setLinkFunctionForTesting(
    std::function<int(const char *from, const char *to)> link) {
  setLinkFunction(std::move(link));
}

//===----------------------------------------------------------------------===//
// Opening
//===----------------------------------------------------------------------===//

/// Names that a trn cache root may hold (even before its marker exists, as
/// while another process creates it).
static bool isCacheRootName(const std::string &name) {
  return name == kMarkerFile || name == kCacheDirTag ||
         name.rfind("trncc-", 0) == 0 ||
         name.rfind(std::string(".") + kMarkerFile + ".", 0) == 0 ||
         name.rfind(std::string(".") + kCacheDirTag + ".", 0) == 0;
}

/// Writes `name` in `root` by temp file + rename, so readers never see half.
static int writeRootFile(const std::string &root, const char *name,
                         const std::string &content) {
  std::string tmpName = std::string(".") + name + "." + uniqueSuffix();
  FileDescriptor dir(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid())
    return errno;
  if (int err = writeNewFileAt(dir.get(), tmpName.c_str(), content, true)) {
    unlinkat(dir.get(), tmpName.c_str(), 0);
    return err;
  }
  if (renameat(dir.get(), tmpName.c_str(), dir.get(), name) != 0) {
    int err = errno;
    unlinkat(dir.get(), tmpName.c_str(), 0);
    return err;
  }
  return 0;
}

/// Why the cache is read-only when access(W_OK) failed with `err`, or ""
/// when `err` does not mean that.
static std::string readOnlyCause(int err) {
  if (err == EROFS)
    return "read-only file system";
  if (err == EACCES || err == EPERM)
    return "not writable: " + errnoText(err);
  return "";
}

/// $TRN_CACHE_READ_ONLY: 1 (or true, yes, on) forces read-only use; 0 (or
/// false, no, off) and unset or empty do not. Anything else is an error.
static std::optional<bool> readOnlyFromEnvironment(std::string &error) {
  const char *env = std::getenv("TRN_CACHE_READ_ONLY");
  std::string value = env ? env : "";
  for (char &c : value)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char *on : {"1", "true", "yes", "on"})
    if (value == on)
      return true;
  for (const char *off : {"", "0", "false", "no", "off"})
    if (value == off)
      return false;
  error = "TRN_CACHE_READ_ONLY='" + std::string(env) +
          "' is neither 1 nor 0 (1 uses the cache without writing to it)";
  return std::nullopt;
}

Result<Cache> Cache::open(CacheOptions options) {
  using R = Result<Cache>;
  try {
    const std::string &root = options.root;
    if (root.empty())
      return R::failure("no cache directory given (set --cache-dir or "
                        "TRN_CACHE_DIR)");
    if (!(options.leaseSeconds > 0) || !(options.heartbeatSeconds > 0) ||
        !(options.pollSeconds > 0) || !(options.lockWaitSeconds >= 0))
      return R::failure("cache options: the lease, heartbeat and poll "
                        "intervals must be positive and the lock wait not "
                        "negative");
    if (options.heartbeatSeconds >= options.leaseSeconds)
      return R::failure("cache options: the heartbeat (" +
                        formatSeconds(options.heartbeatSeconds) +
                        " s) must be shorter than the lease (" +
                        formatSeconds(options.leaseSeconds) + " s)");
    if (!options.warn)
      options.warn = [](const std::string &message) {
        std::fprintf(stderr, "trn: warning: %s\n", message.c_str());
      };
    // Read-only when asked (the option, the environment) or, below, when
    // the OS refuses writes to the root or the version directory.
    std::string readOnlyReason = options.readOnly ? "opened read-only" : "";
    std::string envError;
    std::optional<bool> envReadOnly = readOnlyFromEnvironment(envError);
    if (!envReadOnly)
      return R::failure(envError);
    if (*envReadOnly && readOnlyReason.empty())
      readOnlyReason = "TRN_CACHE_READ_ONLY=1";

    struct stat info;
    if (stat(root.c_str(), &info) != 0) {
      int err = errno;
      if (err != ENOENT)
        return R::failure("cannot use cache directory '" + root +
                          "': " + errnoText(err));
      if (!options.create)
        return R::failure("cache directory '" + root +
                          "' does not exist; check --cache-dir or "
                          "TRN_CACHE_DIR (a compile creates it)");
      if (!readOnlyReason.empty())
        return R::failure("cache directory '" + root +
                          "' does not exist, and a read-only cache (" +
                          readOnlyReason + ") is never created");
      if (int mkErr = makeDirectories(root))
        return R::failure("cannot create cache directory '" + root +
                          "': " + errnoText(mkErr) +
                          "; choose a writable --cache-dir or TRN_CACHE_DIR");
      if (stat(root.c_str(), &info) != 0)
        return R::failure("cannot use cache directory '" + root +
                          "': " + errnoText(errno));
    }
    if (!S_ISDIR(info.st_mode))
      return R::failure("cache path '" + root +
                        "' is not a directory; point --cache-dir or "
                        "TRN_CACHE_DIR at a directory");
    if (access(root.c_str(), R_OK | X_OK) != 0)
      return R::failure("cannot read cache directory '" + root + "' (" +
                        errnoText(errno) +
                        "); fix its permissions or choose another "
                        "--cache-dir");
    if (readOnlyReason.empty() && access(root.c_str(), W_OK) != 0) {
      int err = errno;
      readOnlyReason = readOnlyCause(err);
      if (readOnlyReason.empty())
        return R::failure("cache directory '" + root + "' is not writable (" +
                          errnoText(err) +
                          "); fix its permissions or choose another "
                          "--cache-dir");
    }

    std::string markerPath = joinPath(root, kMarkerFile);
    std::string markerText, markerProblem;
    int markerErr =
        readFile(markerPath, markerText, kMaxSmallFileBytes, &markerProblem);
    // Another process may create the cache between our read of the marker
    // and our listing (trn-parallel-compile's tasks open one new cache at
    // once, and the first then adds its jobs/ directory): a marker seen in
    // the listing is read again instead of judging the directory foreign.
    std::vector<std::string> names;
    if (isVanished(markerErr)) {
      int listErr = 0;
      names = listDirectory(root, &listErr);
      if (listErr)
        return R::failure("cannot list cache directory '" + root +
                          "': " + errnoText(listErr));
      if (std::find(names.begin(), names.end(), kMarkerFile) != names.end())
        markerErr = readFile(markerPath, markerText, kMaxSmallFileBytes,
                             &markerProblem);
    }
    if (markerErr == kNotRegularFile || markerErr == kFileTooLarge)
      return R::failure(markerProblem +
                        "; it is not a valid trn cache marker: if this is a "
                        "trn cache, delete the marker and it is rewritten");
    if (markerErr == 0) {
      json marker = json::parse(markerText, nullptr, false);
      if (!marker.is_object() || !marker.contains("format") ||
          !marker["format"].is_number_integer())
        return R::failure("'" + markerPath +
                          "' is not a valid trn cache marker; if this is a "
                          "trn cache, delete the marker and it is rewritten");
      int format = marker["format"].get<int>();
      if (format > kFormatVersion)
        return R::failure("cache '" + root +
                          "' was written by a newer trn (cache format " +
                          std::to_string(format) + ", this trn reads up to " +
                          std::to_string(kFormatVersion) +
                          "); use a newer trn or another --cache-dir");
    } else if (!isVanished(markerErr)) {
      return R::failure("cannot read '" + markerPath +
                        "': " + errnoText(markerErr));
    } else {
      for (const std::string &name : names)
        if (!isCacheRootName(name))
          return R::failure(
              "'" + root +
              "' is not a trn compile cache (it holds other files, such as '" +
              name +
              "', and no trn-cache.json); refusing to use it: choose an "
              "empty or new --cache-dir");
      if (!readOnlyReason.empty() && names.empty())
        return R::failure("cache directory '" + root + "' is read-only (" +
                          readOnlyReason + ") and holds no trn cache (no " +
                          kMarkerFile +
                          "); make it writable or choose another "
                          "--cache-dir");
      if (options.create && readOnlyReason.empty()) {
        json marker = {{"format", kFormatVersion},
                       {"created_by", std::string("trn ") + compilerVersion()}};
        if (int err = writeRootFile(root, kMarkerFile, marker.dump(2) + "\n"))
          return R::failure("cannot write '" + markerPath +
                            "': " + errnoText(err));
        writeRootFile(root, kCacheDirTag, kCacheDirTagText);
      }
    }

    Cache cache(std::move(options));
    cache.state = std::make_shared<CacheState>();
    std::string versionDir = cache.versionDir();
    if (stat(versionDir.c_str(), &info) == 0) {
      if (!S_ISDIR(info.st_mode))
        return R::failure("'" + versionDir +
                          "' is not a directory; remove it or choose another "
                          "--cache-dir");
      if (access(versionDir.c_str(), R_OK | X_OK) != 0)
        return R::failure("cannot read cache directory '" + versionDir + "' (" +
                          errnoText(errno) +
                          "); fix its permissions (a cache shared by several "
                          "users needs group write, e.g. umask 002)");
      if (readOnlyReason.empty() && access(versionDir.c_str(), W_OK) != 0) {
        int err = errno;
        readOnlyReason = readOnlyCause(err);
        if (readOnlyReason.empty())
          return R::failure("cache directory '" + versionDir +
                            "' is not writable (" + errnoText(err) +
                            "); fix its permissions (a cache shared by "
                            "several users needs group write, e.g. umask "
                            "002)");
      }
    }
    cache.opts.readOnly = !readOnlyReason.empty();
    cache.state->readOnlyReason = readOnlyReason;
    if (cache.opts.create && !cache.opts.readOnly) {
      for (const std::string &path : {versionDir, joinPath(versionDir, kTmpDir),
                                      joinPath(versionDir, kLocksDir),
                                      joinPath(versionDir, kQuarantineDir)})
        if (int err = makeDirectory(path))
          return R::failure("cannot create '" + path + "': " + errnoText(err));
    }
    return R::success(std::move(cache));
  } catch (const std::exception &error) {
    return R::failure(std::string("cannot open the cache: ") + error.what());
  }
}

const std::string &Cache::readOnlyReason() const {
  return state->readOnlyReason;
}

std::string Cache::versionDir() const {
  std::string version = compilerVersion();
  for (char &c : version)
    if (c == '/')
      c = '_';
  return joinPath(opts.root, "trncc-" + version);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

std::optional<Entry> Cache::lookup(const CacheKey &key) {
  try {
    CacheAccess access(*this);
    if (std::optional<LoadedEntry> loaded = access.lookup(key))
      return std::move(loaded->entry);
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("cache lookup failed: ") + error.what());
  }
  return std::nullopt;
}

Result<std::vector<uint8_t>> Cache::readArtifact(const Entry &entry) {
  using R = Result<std::vector<uint8_t>>;
  try {
    Result<std::string> data =
        CacheAccess(*this).readEntryFile(entry, kArtifactFile, "artifact");
    if (!data)
      return R::failure(data.error);
    return R::success(std::vector<uint8_t>(data->begin(), data->end()));
  } catch (const std::exception &error) {
    return R::failure("cannot read the artifact of " + entry.path + ": " +
                      error.what());
  }
}

Result<std::string> Cache::readGraph(const Entry &entry) {
  using R = Result<std::string>;
  try {
    CacheAccess access(*this);
    Result<std::string> stored =
        access.readEntryFile(entry, kGraphFile, "graph");
    if (!stored)
      return stored;
    unsigned long long size =
        ZSTD_getFrameContentSize(stored->data(), stored->size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
        size != static_cast<unsigned long long>(entry.graphBytes))
      return R::failure("cache entry " + entry.path +
                        " has a graph that does not decompress to " +
                        std::to_string(entry.graphBytes) +
                        " bytes; run trn-cache verify --fix");
    std::string graph(size, '\0');
    size_t got = ZSTD_decompress(graph.data(), graph.size(), stored->data(),
                                 stored->size());
    if (ZSTD_isError(got) || got != size)
      return R::failure(
          "cache entry " + entry.path +
          " has a graph that does not decompress (" +
          (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short output") +
          "); run trn-cache verify --fix");
    return R::success(std::move(graph));
  } catch (const std::exception &error) {
    return R::failure("cannot read the graph of " + entry.path + ": " +
                      error.what());
  }
}

Result<std::string> Cache::readLog(const Entry &entry) {
  try {
    return CacheAccess(*this).readEntryFile(entry, kLogFile, "compile log");
  } catch (const std::exception &error) {
    return Result<std::string>::failure("cannot read the log of " + entry.path +
                                        ": " + error.what());
  }
}

//===----------------------------------------------------------------------===//
// Publishing
//===----------------------------------------------------------------------===//

Result<Entry> CacheAccess::publish(const CacheKey &key,
                                   const std::string &graphText,
                                   const CompileOutput &output, int &error) {
  using R = Result<Entry>;
  error = 0;
  std::string name = key.dirName();
  if (readOnly()) {
    error = EROFS;
    return R::failure(readOnlyText() + ": not storing " + name);
  }
  if (output.failure != FailureKind::None && !isCacheable(output.failure))
    return R::failure("not recording " + name +
                      ": a compile that failed with '" +
                      std::string(failureKindName(output.failure)) +
                      "' is not cached; the next request compiles it again");

  std::string tmpDir = dir(kTmpDir);
  if (int err = makeDirectories(tmpDir)) {
    error = err;
    return R::failure("cannot create '" + tmpDir + "': " + errnoText(err));
  }

  Manifest manifest;
  manifest.key = name;
  manifest.status = output.failure == FailureKind::None ? EntryStatus::Done
                                                        : EntryStatus::Failed;
  manifest.failure = output.failure;
  manifest.diagnostic = output.diagnostic;
  manifest.publisher = uniqueSuffix();
  manifest.createdUnix = nowUnix();
  manifest.graphBytes = static_cast<int64_t>(graphText.size());

  EntryMetadata metadata = output.metadata;
  metadata.createdUnix = manifest.createdUnix;
  if (metadata.host.empty())
    metadata.host = hostName();
  if (metadata.compilerVersion.empty())
    metadata.compilerVersion = compilerVersion();

  std::string compressed(ZSTD_compressBound(graphText.size()), '\0');
  size_t compressedSize =
      ZSTD_compress(compressed.data(), compressed.size(), graphText.data(),
                    graphText.size(), kGraphZstdLevel);
  if (ZSTD_isError(compressedSize))
    return R::failure("cannot compress the graph of " + name + ": " +
                      ZSTD_getErrorName(compressedSize));
  compressed.resize(compressedSize);

  std::vector<std::pair<const char *, std::string_view>> files;
  std::string artifact(output.artifact.begin(), output.artifact.end());
  std::string metadataText = serializeMetadata(metadata);
  if (manifest.status == EntryStatus::Done)
    files.emplace_back(kArtifactFile, artifact);
  files.emplace_back(kGraphFile, compressed);
  files.emplace_back(kMetadataFile, metadataText);
  files.emplace_back(kLogFile, output.log);
  for (const auto &[fileName, data] : files)
    manifest.files[fileName] = {static_cast<int64_t>(data.size()),
                                checksumOf(data)};
  std::string manifestText = serializeManifest(manifest);

  // Everything is written and fsynced under a unique temporary name, then
  // renamed into place: readers see a whole entry or none.
  std::string tmpPath =
      joinPath(tmpDir, name + ".publish." + manifest.publisher);
  if (mkdir(tmpPath.c_str(), 0777) != 0) {
    error = errno;
    return R::failure("cannot create '" + tmpPath + "': " + errnoText(error));
  }
  auto fail = [&](const std::string &what, int err) {
    error = err;
    removeTree(tmpPath);
    std::string advice =
        isOutOfDisk(err)
            ? "; free space or shrink the cache (trn-cache prune --max-size)"
            : "";
    return R::failure("cannot publish " + name + ": " + what + ": " +
                      errnoText(err) + advice);
  };
  {
    FileDescriptor tmp(
        open(tmpPath.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!tmp.valid())
      return fail("cannot open " + tmpPath, errno);
    for (const auto &[fileName, data] : files)
      if (int err = writeNewFileAt(tmp.get(), fileName, data, true))
        return fail(std::string("writing ") + fileName, err);
    if (int err = writeNewFileAt(tmp.get(), kLastUsedFile, "", false))
      return fail("writing last_used", err);
    if (int err = writeNewFileAt(tmp.get(), kManifestFile, manifestText, true))
      return fail("writing manifest.json", err);
    if (fsync(tmp.get()) != 0 && errno != EINVAL)
      return fail("syncing " + tmpPath, errno);
  }

  Entry entry;
  entry.key = key;
  entry.path = entryPath(key);
  entry.status = manifest.status;
  entry.failure = manifest.failure;
  entry.diagnostic = manifest.diagnostic;
  entry.metadata = metadata;
  entry.sizeBytes = static_cast<int64_t>(manifestText.size());
  for (const auto &[fileName, record] : manifest.files)
    entry.sizeBytes += record.size;
  entry.graphBytes = manifest.graphBytes;
  entry.storedGraphBytes = static_cast<int64_t>(compressed.size());
  entry.lastUsedUnix = manifest.createdUnix;

  for (int attempt = 0; attempt < kPublishAttempts; ++attempt) {
    if (rename(tmpPath.c_str(), entry.path.c_str()) == 0) {
      syncDirectory(cache.versionDir());
      return R::success(entry);
    }
    int err = errno;
    if (err != ENOTEMPTY && err != EEXIST) {
      // On NFS a rename whose reply was lost fails on retransmission although
      // it happened: our temporary is gone and the entry is ours.
      struct stat info;
      if (stat(tmpPath.c_str(), &info) != 0 && isVanished(errno)) {
        LoadedEntry mine = loadEntry(entry.path, key, VerifyLevel::Sizes);
        if (mine.state == LoadState::Ok &&
            mine.manifest.publisher == manifest.publisher)
          return R::success(entry);
      }
      return fail("renaming into " + entry.path, err);
    }
    LoadedEntry existing = loadEntry(entry.path, key, VerifyLevel::Everything);
    switch (existing.state) {
    case LoadState::Missing:
      continue; // removed meanwhile: try again
    case LoadState::Corrupt:
      handleCorrupt(existing);
      continue;
    case LoadState::NewerFormat:
    case LoadState::Unreadable:
      removeTree(tmpPath);
      return R::failure("cannot publish " + name + ": the existing entry " +
                        entry.path + " is " + existing.problem);
    case LoadState::Ok:
      break;
    }
    if (existing.manifest.publisher == manifest.publisher)
      return R::success(std::move(existing.entry)); // lost reply
    if (existing.entry.status == EntryStatus::Done) {
      // Another process published first: theirs is as good as ours.
      removeTree(tmpPath);
      return R::success(std::move(existing.entry));
    }
    // A failed entry is replaced (by a success, or by a newer diagnostic
    // after --retry-failed). Directories cannot be renamed over a non-empty
    // one, so the old entry moves aside first; readers miss for a moment.
    std::string aside = joinPath(tmpDir, name + ".replaced." + uniqueSuffix());
    if (rename(entry.path.c_str(), aside.c_str()) == 0)
      removeTree(aside);
  }
  removeTree(tmpPath);
  return R::failure("cannot publish " + name + ": the entry at " + entry.path +
                    " kept changing while publishing; run again");
}

Result<Entry> Cache::publish(const CacheKey &key, const std::string &graphText,
                             const CompileOutput &output) {
  try {
    int error = 0;
    return CacheAccess(*this).publish(key, graphText, output, error);
  } catch (const std::exception &exception) {
    return Result<Entry>::failure("cannot publish " + key.dirName() + ": " +
                                  exception.what());
  }
}

//===----------------------------------------------------------------------===//
// getOrCompile
//===----------------------------------------------------------------------===//

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
  return text + " (heartbeat " + formatSeconds(std::max(0.0, age)) + " s ago)";
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
        staleReason = "no heartbeat for " + formatSeconds(quiet) +
                      " s (lease " + formatSeconds(options.leaseSeconds) +
                      " s)";
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
             formatSeconds(waited) + " s: it is held by " +
             describeHolder(snapshot) +
             "; compiling it anyway (raise the lock wait, or run trn-cache "
             "clear-locks if that process is gone)");
        break;
      }
      if (!announced && waited >= 1.0) {
        announced = true;
        warn("waiting for " + name + ": " + describeHolder(snapshot) +
             " is compiling it; waiting up to " +
             formatSeconds(options.lockWaitSeconds) + " s");
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

CompileResult
Cache::getOrCompile(const CacheKey &key, const std::string &graphText,
                    const std::function<CompileOutput()> &compile) {
  try {
    return CacheAccess(*this).getOrCompile(key, graphText, compile);
  } catch (const std::exception &exception) {
    CompileResult result;
    result.source = CompileResult::Source::Failed;
    result.diagnostic =
        "compile cache error for " + key.dirName() + ": " + exception.what();
    return result;
  }
}

//===----------------------------------------------------------------------===//
// Maintenance
//===----------------------------------------------------------------------===//

namespace {

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
  size_t slash = path.find_last_of('/');
  std::string tree = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string lockPath =
      joinPath(joinPath(tree, kLocksDir), key.dirName() + ".lock");
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
                       formatSeconds(lock.heartbeatAgeSeconds) + " s (lease " +
                       formatSeconds(leaseSeconds) + " s)";
  } else if (!snapshot.owner) {
    lock.staleReason = "unreadable lock file";
  }
  return lock;
}

} // namespace

std::vector<EntryListing> Cache::list() {
  std::vector<EntryListing> listings;
  try {
    CacheAccess access(*this);
    std::string root = versionDir();
    for (const std::string &name : listDirectory(root)) {
      std::optional<CacheKey> key = entryKey(name);
      if (!key)
        continue;
      if (std::optional<EntryListing> listing =
              listEntry(joinPath(root, name), *key))
        listings.push_back(std::move(*listing));
    }
    std::string tmp = access.dir(kTmpDir);
    for (const std::string &name : listDirectory(tmp)) {
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
      listing.locked = stat(access.lockPath(keyPart).c_str(), &lockInfo) == 0;
      listings.push_back(std::move(listing));
    }
    std::sort(listings.begin(), listings.end(),
              [](const EntryListing &a, const EntryListing &b) {
                return a.path < b.path;
              });
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("listing the cache failed: ") + error.what());
  }
  return listings;
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

std::vector<LockInfo> Cache::locks() {
  std::vector<LockInfo> result;
  try {
    std::string locksDir = joinPath(versionDir(), kLocksDir);
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
      result.push_back(describeLock(*key, path, snapshot, opts.leaseSeconds));
    }
    std::sort(
        result.begin(), result.end(),
        [](const LockInfo &a, const LockInfo &b) { return a.path < b.path; });
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("listing the locks failed: ") + error.what());
  }
  return result;
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
      if (access.removeEntryDirectory(path, name))
        removed(path, bytes);
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
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("cleaning the cache failed: ") + error.what());
  }
  return report;
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
    int64_t total = 0;
    for (EntryListing &listing : list()) {
      if (listing.status == "incomplete")
        continue; // being written: never evicted, not counted
      total += listing.sizeBytes;
      entries.push_back(std::move(listing));
    }
    // Corrupt entries go first, then the least recently used.
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
      struct stat lockInfo;
      if (stat(access.lockPath(name).c_str(), &lockInfo) == 0)
        continue; // its key is being compiled right now
      if (!access.removeEntryDirectory(listing.path, name))
        continue;
      total -= listing.sizeBytes;
      ++report.removedEntries;
      report.removedBytes += listing.sizeBytes;
      report.removed.push_back(listing.path);
    }
  } catch (const std::exception &error) {
    if (opts.warn)
      opts.warn(std::string("pruning the cache failed: ") + error.what());
  }
  return report;
}

} // namespace mlir::trn::cache
