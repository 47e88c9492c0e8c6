//===- ArtifactContainer.h - the artifact's header and sections -*- C++ -*-===//
//
// Private to the runtime library: the constants of the container format
// (docs/artifact-format.md), its parsed section table, and loading one
// section (checksum, zstd). Artifact.cpp encodes and decodes what the
// sections hold.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_LIB_ARTIFACTCONTAINER_H
#define TRNRT_LIB_ARTIFACTCONTAINER_H

#include "trnrt/Artifact.h"

#include <zstd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trnrt {
namespace artifact {

// NUL marks the file as binary; 0x1A stops accidental `type`-style dumps.
constexpr uint8_t kMagic[8] = {'T', 'R', 'N', 'A', 'R', 'T', 0x00, 0x1A};
constexpr size_t kHeaderSize = 40;
constexpr size_t kHeaderChecksumOffset = 32;
constexpr size_t kSectionEntrySize = 40;
constexpr uint32_t kMaxSections = 64;

constexpr uint32_t kSectionMetadata = 1;
constexpr uint32_t kSectionTensors = 2;
constexpr uint32_t kSectionConstants = 3;
/// Present exactly when the program has a mesh (format 3).
constexpr uint32_t kSectionMesh = 4;
constexpr uint32_t kSectionPipeline = 5;    // format 5
constexpr uint32_t kSectionSubroutines = 6; // format 6
constexpr uint32_t kSectionCalls = 7;       // format 6
/// Optional: one byte of InstructionKind per instruction (format 6).
constexpr uint32_t kSectionKinds = 40;
/// Optional: the trn ops instructions come from (format 6).
constexpr uint32_t kSectionOrigins = 41;
constexpr uint32_t kSectionFirstEngineStream = 8; // Tensor..Sync: 8..12
constexpr uint32_t kNumEngineStreams = 5;
constexpr uint32_t kSectionFirstDmaQueue = 16; // queue q: 16 + q
static_assert(kSectionFirstEngineStream + kNumEngineStreams <=
                  kSectionFirstDmaQueue,
              "section ids overlap");

constexpr uint32_t kSectionFlagZstd = 1u << 0;
constexpr uint32_t kSectionFlagOptional = 1u << 1;
constexpr uint32_t kKnownSectionFlags = kSectionFlagZstd | kSectionFlagOptional;

constexpr int kZstdLevel = 3;

struct SectionEntry {
  uint32_t id = 0;
  uint32_t flags = 0;
  uint64_t offset = 0;
  uint64_t storedSize = 0;
  uint64_t rawSize = 0;
  uint64_t checksum = 0;
};

struct Container {
  uint32_t version = 0;
  std::vector<SectionEntry> sections;
  int metadata = -1, tensors = -1, constants = -1, mesh = -1, pipeline = -1,
      subroutines = -1, calls = -1, kinds = -1, origins = -1;
  int engineStreams[kNumEngineStreams] = {-1, -1, -1, -1, -1};
  std::vector<int> dmaQueues;
};

struct ZstdDContextDeleter {
  void operator()(ZSTD_DCtx *context) const { ZSTD_freeDCtx(context); }
};
struct ZstdCContextDeleter {
  void operator()(ZSTD_CCtx *context) const { ZSTD_freeCCtx(context); }
};

/// The section table of an artifact's bytes: header, magic, version, table
/// and every entry checked against the file and the format's limits.
bool parseContainer(const uint8_t *data, size_t size,
                    const ArtifactReadOptions &options, Container &container,
                    std::string &error);
/// The xxh3 checksum of the header and table, its own field zeroed.
uint64_t headerChecksum(const uint8_t *data, size_t tableEnd);
/// The raw bytes of a section: in place when stored raw, else decompressed
/// into `buffer` after checking the frame against the table.
bool loadSection(const uint8_t *data, const SectionEntry &entry,
                 ZSTD_DCtx *context, std::vector<uint8_t> &buffer,
                 const uint8_t *&raw, std::string &error);
bool createDContext(std::unique_ptr<ZSTD_DCtx, ZstdDContextDeleter> &context,
                    std::string &error);
/// "metadata", "stream.tensor", "dma.3", or "#id" for an unknown id.
std::string sectionName(uint32_t id);
bool isKnownSection(uint32_t id);

} // namespace artifact
} // namespace trnrt

#endif // TRNRT_LIB_ARTIFACTCONTAINER_H
