//===- StageArtifact.cpp - one pipeline stage's fragments in a file -------===//

#include "trnrt/StageArtifact.h"

#include "trnrt/File.h"

#include <xxhash.h>

#include <cstring>

namespace trnrt {

namespace {

constexpr char kMagic[8] = {'T', 'R', 'N', 'S', 'T', 'A', 'G', 'E'};
/// magic, u32 version, u32 count, then count x u64 sizes, then u64 XXH3 of
/// everything before it.
size_t headerSize(uint32_t count) { return 8 + 4 + 4 + 8 * size_t(count) + 8; }

uint64_t load(const uint8_t *bytes, unsigned size) {
  uint64_t value = 0;
  for (unsigned i = 0; i < size; ++i)
    value |= uint64_t(bytes[i]) << (8 * i);
  return value;
}

void store(uint64_t value, unsigned size, std::vector<uint8_t> &out) {
  for (unsigned i = 0; i < size; ++i)
    out.push_back(uint8_t(value >> (8 * i)));
}

} // namespace

bool isStageArtifact(const uint8_t *data, size_t size) {
  return size >= sizeof(kMagic) && std::memcmp(data, kMagic, 8) == 0;
}

bool writeStageArtifact(const std::vector<std::vector<uint8_t>> &artifacts,
                        std::vector<uint8_t> &out, std::string &error) {
  if (artifacts.empty() || artifacts.size() > kStageArtifactMaxFragments) {
    error = "a stage artifact holds 1 to " +
            std::to_string(kStageArtifactMaxFragments) + " fragments, not " +
            std::to_string(artifacts.size());
    return false;
  }
  out.assign(kMagic, kMagic + 8);
  store(kStageArtifactVersion, 4, out);
  store(artifacts.size(), 4, out);
  for (const std::vector<uint8_t> &artifact : artifacts)
    store(artifact.size(), 8, out);
  store(XXH3_64bits(out.data(), out.size()), 8, out);
  for (const std::vector<uint8_t> &artifact : artifacts)
    out.insert(out.end(), artifact.begin(), artifact.end());
  return true;
}

bool readStageArtifact(const uint8_t *data, size_t size, StageArtifact &stage,
                       std::string &error, const ArtifactReadOptions &options) {
  stage = StageArtifact();
  if (!isStageArtifact(data, size) || size < headerSize(0)) {
    error = "not a stage artifact (bad magic or too short)";
    return false;
  }
  uint32_t version = uint32_t(load(data + 8, 4));
  uint32_t count = uint32_t(load(data + 12, 4));
  if (version > kStageArtifactVersion) {
    error = "stage artifact format " + std::to_string(version) +
            " is newer than this runtime (" +
            std::to_string(kStageArtifactVersion) + "); recompile or upgrade";
    return false;
  }
  if (count == 0 || count > kStageArtifactMaxFragments ||
      size < headerSize(count)) {
    error = "stage artifact header: " + std::to_string(count) +
            " fragments in a file of " + std::to_string(size) + " bytes";
    return false;
  }
  const size_t header = headerSize(count);
  if (load(data + header - 8, 8) != XXH3_64bits(data, header - 8)) {
    error = "stage artifact header: checksum mismatch (the file is damaged)";
    return false;
  }
  size_t offset = header;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t bytes = load(data + 16 + 8 * size_t(i), 8);
    if (bytes > size - offset) {
      error = "stage artifact: fragment " + std::to_string(i) + " of " +
              std::to_string(bytes) + " bytes runs past the end of the file";
      return false;
    }
    Program program;
    ArtifactInfo info;
    std::string problem;
    if (!readArtifact(data + offset, size_t(bytes), program, info, problem,
                      options)) {
      error = "stage artifact: fragment " + std::to_string(i) + ": " + problem;
      return false;
    }
    if (!program.pipeline.isFragment() ||
        (i > 0 &&
         (program.pipeline.step != stage.fragments[0].pipeline.step ||
          program.pipeline.stage != stage.fragments[0].pipeline.stage))) {
      error = "stage artifact: fragment " + std::to_string(i) +
              " is not a fragment of the same pipeline stage as the first";
      return false;
    }
    stage.fragments.push_back(std::move(program));
    stage.infos.push_back(std::move(info));
    offset += size_t(bytes);
  }
  if (offset != size) {
    error = "stage artifact: " + std::to_string(size - offset) +
            " bytes after the last fragment";
    return false;
  }
  return true;
}

bool readStageArtifactFile(const std::string &path, StageArtifact &stage,
                           std::string &error,
                           const ArtifactReadOptions &options) {
  std::string bytes;
  // A stage's fragments together stay within one artifact's limit (the
  // reader's maxRawBytes), so a huge or endless file is refused unread.
  uint64_t limit = maxArtifactFileBytes(options);
  if (!readRegularFile(path, limit, bytes, error))
    return false; // the error names the path
  const uint8_t *data = reinterpret_cast<const uint8_t *>(bytes.data());
  if (isStageArtifact(data, bytes.size())) {
    if (!readStageArtifact(data, bytes.size(), stage, error, options)) {
      error = path + ": " + error;
      return false;
    }
    return true;
  }
  // A plain artifact: one fragment, or a program that is no pipeline's.
  stage = StageArtifact();
  stage.fragments.emplace_back();
  stage.infos.emplace_back();
  if (!readArtifact(data, bytes.size(), stage.fragments[0], stage.infos[0],
                    error, options)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

} // namespace trnrt
