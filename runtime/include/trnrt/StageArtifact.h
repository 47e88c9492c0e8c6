//===- StageArtifact.h - one pipeline stage's fragments in a file -*- C++
//-*-===//
//
// A pipelined step compiles to one file per stage (docs/artifact-format.md,
// "Stage artifacts"): the stage's forward, backward and update fragments,
// each a complete artifact (its own header, sections and checksums, and a
// 'pipeline' section saying which fragment it is), behind a small header
// with their sizes and a checksum of the header. One file per stage is one
// cache entry and serves every tensor-parallel rank and data-parallel
// replica of the stage. No MLIR or LLVM; no exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_STAGEARTIFACT_H
#define TRNRT_STAGEARTIFACT_H

#include "trnrt/Artifact.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trnrt {

constexpr uint32_t kStageArtifactVersion = 1;
constexpr uint32_t kStageArtifactMaxFragments = 16;

/// A stage's fragments, in file order.
struct StageArtifact {
  std::vector<Program> fragments;
  std::vector<ArtifactInfo> infos;
};

/// Whether `data` starts like a stage artifact (its magic).
bool isStageArtifact(const uint8_t *data, size_t size);

/// The stage file holding `artifacts` (each the bytes of writeArtifact).
bool writeStageArtifact(const std::vector<std::vector<uint8_t>> &artifacts,
                        std::vector<uint8_t> &out, std::string &error);

/// Parses a stage file: its header, then every fragment with readArtifact;
/// each must be a pipeline fragment of the same step and stage. Errors are
/// one line naming the fragment.
bool readStageArtifact(const uint8_t *data, size_t size, StageArtifact &stage,
                       std::string &error,
                       const ArtifactReadOptions &options = {});

/// readStageArtifact of a file, or a plain artifact holding one fragment;
/// errors are prefixed with the path.
bool readStageArtifactFile(const std::string &path, StageArtifact &stage,
                           std::string &error,
                           const ArtifactReadOptions &options = {});

} // namespace trnrt

#endif // TRNRT_STAGEARTIFACT_H
