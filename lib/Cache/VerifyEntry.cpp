//===- VerifyEntry.cpp - loading a cache entry and checking it ------------===//

#include "VerifyEntry.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace mlir::trn::cache::detail {

bool stillAt(const std::string &path, const struct stat &info) {
  struct stat current;
  return stat(path.c_str(), &current) == 0 && sameFile(current, info);
}

static void loadEntryChecked(LoadedEntry &out, const std::string &path,
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

} // namespace mlir::trn::cache::detail
