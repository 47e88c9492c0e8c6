//===- Artifact.h - The trn artifact: a compiled program on disk -*- C++
//-*-===//
//
// Our own container for a compiled Program: a fixed header with magic and
// format version, a section table, and sections (metadata, HBM tensor table,
// constants, one instruction stream per engine and per DMA queue), each
// zstd-compressed when that helps and protected by an XXH3-64 checksum.
// docs/artifact-format.md gives the byte layout and the reader's guarantees.
//
// The reader is strict: every length, count, offset and enum value is checked
// against the bytes that remain and the limits below before it is used, so a
// truncated, bit-flipped or foreign file yields a one-line error, never a
// crash, an out-of-bounds read or an unbounded allocation. Writer and reader
// apply the same checks, so whatever the writer accepts reads back exactly.
// No MLIR or LLVM dependency; no exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_ARTIFACT_H
#define TRNRT_ARTIFACT_H

#include "trnrt/Isa.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trnrt {

/// The format version this runtime writes and the newest it reads.
constexpr uint32_t kArtifactFormatVersion = 6;

// Structural limits, enforced by the writer and the reader alike.
constexpr unsigned kArtifactMaxDmaQueues = 16;
constexpr unsigned kArtifactMaxApDims = 4;
constexpr unsigned kArtifactMaxSources = 8;
constexpr unsigned kArtifactMaxWaits = 64;
constexpr unsigned kArtifactMaxRank = 16;
constexpr unsigned kArtifactMaxMeshAxes = 16;
/// Names, roles, target, compiler version, cache key and report keys.
constexpr size_t kArtifactMaxNameBytes = 4096;
constexpr size_t kArtifactMaxReportValueBytes = size_t(16) << 20;
constexpr size_t kArtifactMaxReportEntries = 65536;

/// An input or output of a program, as tools show an artifact's signature.
/// Derived from Program::tensors.
struct ArtifactTensorInfo {
  uint32_t tensorIndex = 0; ///< index in Program::tensors
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;       ///< bytes from the core's HBM base
  uint64_t sizeInBytes = 0;  ///< elements x element size
  int32_t aliasesInput = -1; ///< output updating input #n in place, or -1
  std::string role;
  /// How the global tensor maps to this local one (partitioned programs).
  std::vector<DimSharding> sharding;
};

/// Everything about an artifact except the program itself.
///
/// writeArtifact stores `compilerVersion`, `cacheKey`,
/// `estimatedDeviceTimeNs` and `report`; it requires `target` to be empty or
/// equal to Program::target and ignores the fields marked "derived", which it
/// takes from the Program. readArtifact fills every field.
struct ArtifactInfo {
  uint32_t formatVersion = kArtifactFormatVersion; ///< derived
  std::string target;                              ///< derived
  std::string compilerVersion;
  std::string cacheKey;
  std::vector<ArtifactTensorInfo> inputs;  ///< derived
  std::vector<ArtifactTensorInfo> outputs; ///< derived
  uint64_t flops = 0;                      ///< derived
  uint64_t sbufPeakBytesPerPartition = 0;  ///< derived
  uint64_t psumPeakBytesPerPartition = 0;  ///< derived
  uint64_t hbmPeakBytes = 0;               ///< derived: Program::hbmBytes
  std::vector<MeshAxis> mesh;              ///< derived: Program::mesh
  /// Finite and >= 0 when present.
  std::optional<double> estimatedDeviceTimeNs;
  /// The compiler's report: free-form keys and values, valid UTF-8 without
  /// NUL bytes (so any JSON writer can emit them).
  std::map<std::string, std::string> report;
};

/// Fills the derived fields of `info` from `program`.
void describeProgram(const Program &program, ArtifactInfo &info);

struct ArtifactReadOptions {
  /// Cap on the sum of the sections' uncompressed sizes, checked before
  /// anything is allocated or decompressed.
  uint64_t maxRawBytes = uint64_t(4) << 30;
  /// Cap on the instructions of all streams together. A decoded Instruction
  /// takes about 0.5 KiB against 5 bytes for the smallest encoding, so this
  /// bounds what a small, highly compressible artifact can make the reader
  /// allocate.
  uint64_t maxInstructions = uint64_t(1) << 24;
  /// Only fuzzers and forensic tools turn this off: corrupt sections then
  /// reach the decoders (which still bounds-check everything).
  bool verifyChecksums = true;
  /// What becomes of subroutine calls (trnrt/Subroutines.h): Resolve, the
  /// default, keeps the compact streams with the tables the simulator needs
  /// to run them; Expand inlines every call (more memory: a call's
  /// instructions once per call); Keep is the form written (validation,
  /// inspection, tests).
  enum class Calls : uint8_t { Resolve, Expand, Keep } calls = Calls::Resolve;
};

struct ArtifactWriteOptions {
  /// zstd (level 3) for every section it shrinks. Off stores every section
  /// raw: for inspecting with a hex dump, tests and fuzzer seeds.
  bool compress = true;
};

/// Serialises `program` and `info` into `out` (replacing its contents).
/// Returns false with a one-line `error` if the program breaks a limit of the
/// format (the same checks the reader applies).
bool writeArtifact(const Program &program, const ArtifactInfo &info,
                   std::vector<uint8_t> &out, std::string &error,
                   const ArtifactWriteOptions &options = {});

/// writeArtifact to a uniquely named temporary file beside `path`, fsync,
/// then rename over `path`: readers see the old file or the whole new one.
bool writeArtifactFile(const std::string &path, const Program &program,
                       const ArtifactInfo &info, std::string &error,
                       const ArtifactWriteOptions &options = {});

/// trnrt::writeFileAtomically (File.h) of a byte vector (what
/// writeArtifactFile does with an artifact's bytes).
bool writeFileAtomically(const std::string &path,
                         const std::vector<uint8_t> &bytes, std::string &error);

/// Parses an artifact. On failure returns false with a one-line `error`
/// naming the section and the problem; `program` and `info` are then
/// unspecified.
bool readArtifact(const uint8_t *data, size_t size, Program &program,
                  ArtifactInfo &info, std::string &error,
                  const ArtifactReadOptions &options = {});

/// The largest file readArtifactFile accepts with `options`: the header, a
/// full section table and maxRawBytes (stored sections are never larger than
/// their raw bytes).
uint64_t maxArtifactFileBytes(const ArtifactReadOptions &options = {});

/// readArtifact of a file; errors are prefixed with the path. Anything but a
/// regular file of at most maxArtifactFileBytes (a directory, a device, a
/// FIFO) is refused before it is read (trnrt/File.h).
bool readArtifactFile(const std::string &path, Program &program,
                      ArtifactInfo &info, std::string &error,
                      const ArtifactReadOptions &options = {});

/// Checks the whole container (header, section table, every checksum) but
/// decodes only the metadata and the tensor table: an artifact's signature
/// without decoding its instruction streams.
bool readArtifactInfo(const uint8_t *data, size_t size, ArtifactInfo &info,
                      std::string &error,
                      const ArtifactReadOptions &options = {});

/// Exact structural equality (floats compared bit for bit). On a difference
/// returns false and, when `difference` is given, describes the first one,
/// e.g. "engineStreams[1][3].srcs[0].dims[2].stride: 4 vs 8".
bool programsEqual(const Program &a, const Program &b,
                   std::string *difference = nullptr);

} // namespace trnrt

#endif // TRNRT_ARTIFACT_H
