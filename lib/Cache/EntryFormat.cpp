//===- EntryFormat.cpp - the files of one cache entry ---------------------===//
//
// Writing and parsing manifest.json and flags.json (a malformed one is the
// entry's problem, never an exception), the checksums they record, and the
// names of failure kinds.
//
//===----------------------------------------------------------------------===//

#include "EntryFormat.h"

#include "Support.h"

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace mlir::trn::cache {

using json = nlohmann::json;

namespace detail {

namespace {

/// The manifest's own checksum field; the digest covers the manifest text
/// with this value set to 32 zeros.
constexpr const char *kChecksumField = "\"manifest_xxh3\": \"";
constexpr size_t kDigestLength = 32;

std::string digestHex(XXH128_hash_t digest) {
  return Hash128{digest.high64, digest.low64}.hex();
}

/// dump() that never throws on invalid UTF-8 in compiler logs or flags.
std::string dumpJson(const json &value, int indent = 2) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

double finiteOrZero(double value) { return std::isfinite(value) ? value : 0; }

} // namespace

std::string checksumOf(std::string_view bytes) {
  return digestHex(XXH3_128bits(bytes.data(), bytes.size()));
}

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

uint64_t recordedSize(const FileRecord &record) {
  return static_cast<uint64_t>(std::max<int64_t>(record.size, 0));
}

std::string largerThanRecorded(const std::string &name,
                               const FileRecord &record) {
  return name + " is larger than the " + std::to_string(recordedSize(record)) +
         " bytes the manifest records";
}

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

} // namespace detail

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

} // namespace mlir::trn::cache
