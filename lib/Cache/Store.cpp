//===- Store.cpp - reading and publishing cache entries -------------------===//
//
// Readers never lock: a lookup loads and verifies the entry, a corrupt one is
// moved to quarantine/ and is a miss. Publishing writes and fsyncs an entry
// under a temporary name and renames it into place, so a reader sees a whole
// entry or none. docs/cache.md describes the protocol.
//
//===----------------------------------------------------------------------===//

#include "CacheAccess.h"

#include <zstd.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace mlir::trn::cache {

using namespace detail;

namespace {

constexpr const char *kQuarantineReasonFile = "QUARANTINE_REASON.txt";

/// A hit refreshes the last-use time at most this often (an NFS SETATTR
/// per hit would be wasted).
constexpr double kLastUseThrottleSeconds = 60;
constexpr int kGraphZstdLevel = 3;
constexpr int kPublishAttempts = 10;

} // namespace

//===----------------------------------------------------------------------===//
// Quarantine and reading
//===----------------------------------------------------------------------===//

CacheAccess::QuarantineOutcome
CacheAccess::quarantine(const std::string &path, const struct stat &info,
                        const std::string &reason, std::string &destination,
                        int &error) {
  if (!stillAt(path, info))
    return QuarantineOutcome::Gone;
  std::string quarantineDir = dir(kQuarantineDir);
  makeDirectory(quarantineDir);
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
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

std::string CacheAccess::handleCorrupt(const LoadedEntry &loaded) {
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
    count(Counter::Quarantined);
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

void CacheAccess::touchLastUsed(LoadedEntry &loaded) {
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

std::optional<LoadedEntry> CacheAccess::lookup(const CacheKey &key) {
  LoadedEntry loaded = loadEntry(entryPath(key), key, VerifyLevel::Everything);
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

Result<std::string> CacheAccess::readEntryFile(const Entry &entry,
                                               const char *name,
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
    loaded.problem = std::string(name) + " has " + std::to_string(data.size()) +
                     " bytes, " + std::to_string(record->second.size) +
                     " expected";
  } else if (checksumOf(data) != record->second.xxh3) {
    loaded.state = LoadState::Corrupt;
    loaded.problem = std::string(name) + " checksum mismatch";
  }
  if (loaded.state == LoadState::Corrupt)
    return Result<std::string>::failure(handleCorrupt(loaded));
  return Result<std::string>::success(std::move(data));
}

std::optional<Entry> Cache::lookup(const CacheKey &key) {
  try {
    CacheAccess access(*this);
    std::optional<LoadedEntry> loaded = access.lookup(key);
    access.flushStatistics(); // a corrupt entry quarantined on the way
    if (loaded)
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
      count(Counter::StoredBytes, entry.sizeBytes);
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
            mine.manifest.publisher == manifest.publisher) {
          count(Counter::StoredBytes, entry.sizeBytes);
          return R::success(entry);
        }
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
    if (rename(entry.path.c_str(), aside.c_str()) == 0) {
      count(Counter::StoredBytes, -existing.entry.sizeBytes);
      removeTree(aside);
    }
  }
  removeTree(tmpPath);
  return R::failure("cannot publish " + name + ": the entry at " + entry.path +
                    " kept changing while publishing; run again");
}

Result<Entry> Cache::publish(const CacheKey &key, const std::string &graphText,
                             const CompileOutput &output) {
  try {
    int error = 0;
    CacheAccess access(*this);
    Result<Entry> published = access.publish(key, graphText, output, error);
    access.flushStatistics();
    return published;
  } catch (const std::exception &exception) {
    return Result<Entry>::failure("cannot publish " + key.dirName() + ": " +
                                  exception.what());
  }
}

} // namespace mlir::trn::cache
