//===- EntryFormat.h - the files of one cache entry -------------*- C++ -*-===//
//
// An entry directory holds the artifact (successes only), the compressed
// graph, flags.json (the EntryMetadata), the compile log, last_used and
// manifest.json, which records every other file's size and XXH3-128 checksum
// and carries a checksum of its own. Writing and parsing those records;
// loading an entry from disk and checking it is VerifyEntry.h.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_CACHE_ENTRYFORMAT_H
#define TRN_LIB_CACHE_ENTRYFORMAT_H

#include "trn/Cache/Cache.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace mlir::trn::cache::detail {

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

/// XXH3-128 of `bytes` as the manifest records it (32 hex digits).
std::string checksumOf(std::string_view bytes);
/// Streams a regular file through XXH3-128 without holding it in memory.
/// Returns 0, an errno value or an error of openRegularFileAt.
int hashFileAt(int dirFd, const char *name, int64_t &size, std::string &digest,
               std::string *problem);

/// "done" or "failed", as the manifest and `trn-cache list` spell it.
const char *statusName(EntryStatus status);

struct FileRecord {
  int64_t size = 0;
  std::string xxh3;
};

/// What an entry file may hold when read whole: the size its record gives.
uint64_t recordedSize(const FileRecord &record);
/// The problem of an entry file larger than its record.
std::string largerThanRecorded(const std::string &name,
                               const FileRecord &record);

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

std::string serializeManifest(const Manifest &manifest);

enum class ManifestProblem { None, Corrupt, NewerFormat };

/// Checks the manifest's own checksum, then parses it.
ManifestProblem parseManifest(const std::string &text, Manifest &manifest,
                              std::string &problem);

std::string serializeMetadata(const EntryMetadata &m);
bool parseMetadata(const std::string &text, EntryMetadata &m,
                   std::string &problem);

} // namespace mlir::trn::cache::detail

#endif // TRN_LIB_CACHE_ENTRYFORMAT_H
