//===- Artifact.cpp - Writing and strictly reading trn artifacts ----------===//
//
// Layout (docs/artifact-format.md): a 40-byte header, a table of 40-byte
// section entries, then the sections back to back in table order. Every
// integer is little-endian and written byte by byte, never by copying a
// struct. The reader checks each length and count against the bytes left and
// the format's limits before using it, verifies checksums before decoding,
// and refuses non-canonical encodings, so one Program has exactly one
// encoding and any damage is reported rather than interpreted.
//
//===----------------------------------------------------------------------===//

#include "ArtifactCodec.h"
#include "ArtifactContainer.h"

#include "trnrt/Artifact.h"
#include "trnrt/File.h"
#include "trnrt/Subroutines.h"
#include "trnrt/Target.h"

#include <oneapi/tbb/parallel_for.h>
#include <xxhash.h>
#include <zstd.h>

#include <optional>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace trnrt {

using namespace artifact;

namespace {

//===----------------------------------------------------------------------===//
// Constants of the format
//===----------------------------------------------------------------------===//

// Number of tensor kinds the format accepts (the others: ArtifactCodec.h).
constexpr unsigned kNumTensorKinds = unsigned(HbmTensor::Kind::Scratch) + 1;

// Smallest encodings, used to bound counts by the bytes that remain.
constexpr size_t kMinTensorBytes = 32;
constexpr size_t kMinReportEntryBytes = 8;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Checks shared by the writer and the reader
//===----------------------------------------------------------------------===//

/// Strict UTF-8 (no overlong forms, no surrogates, at most U+10FFFF) without
/// NUL bytes, so every string is a valid JSON string and a valid C string.
bool checkText(const std::string &text, size_t maxBytes, const char *what,
               std::string &problem) {
  if (text.size() > maxBytes) {
    problem = formatString("%s is %zu bytes (limit %zu)", what, text.size(),
                           maxBytes);
    return false;
  }
  const auto *bytes = reinterpret_cast<const unsigned char *>(text.data());
  size_t size = text.size();
  for (size_t i = 0; i < size;) {
    unsigned char lead = bytes[i];
    if (lead == 0) {
      problem = formatString("%s has a NUL byte at %zu", what, i);
      return false;
    }
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t codePoint;
    if ((lead & 0xE0) == 0xC0) {
      length = 2;
      codePoint = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3;
      codePoint = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4;
      codePoint = lead & 0x07;
    } else {
      problem = formatString("%s is not valid UTF-8 at byte %zu", what, i);
      return false;
    }
    if (length > size - i) {
      problem = formatString("%s is not valid UTF-8 at byte %zu", what, i);
      return false;
    }
    for (size_t k = 1; k < length; ++k) {
      if ((bytes[i + k] & 0xC0) != 0x80) {
        problem = formatString("%s is not valid UTF-8 at byte %zu", what, i);
        return false;
      }
      codePoint = (codePoint << 6) | (bytes[i + k] & 0x3F);
    }
    static const uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (codePoint < kMinForLength[length] || codePoint > 0x10FFFF ||
        (codePoint >= 0xD800 && codePoint <= 0xDFFF)) {
      problem = formatString("%s is not valid UTF-8 at byte %zu", what, i);
      return false;
    }
    i += length;
  }
  return true;
}

/// `text` quoted for a one-line message: control characters, quotes and
/// backslashes escaped, bytes of invalid UTF-8 as \xNN, long text cut.
std::string quoted(const std::string &text, size_t maxBytes = 80) {
  std::string problem;
  bool validUtf8 = checkText(text, text.size(), "", problem);
  std::string result = "'";
  size_t end = std::min(text.size(), maxBytes);
  if (validUtf8) // do not cut a multi-byte character in half
    while (end < text.size() && end > 0 &&
           (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
      --end;
  for (size_t i = 0; i < end; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\\' || c == '\'')
      result += {'\\', char(c)};
    else if (c >= 0x20 && c != 0x7F && (c < 0x80 || validUtf8))
      result += char(c);
    else
      result += formatString("\\x%02x", c);
  }
  if (end < text.size())
    result += "...";
  return result + "'";
}

/// Bytes of a tensor of `shape` and `dtype`, or false if a dimension is
/// negative or the size overflows int64.
bool tensorByteSize(const std::vector<int64_t> &shape, DType dtype,
                    uint64_t &bytes) {
  uint64_t product = dtypeSizeInBytes(dtype);
  for (int64_t dim : shape) {
    if (dim < 0)
      return false;
    if (dim != 0 &&
        product > uint64_t(std::numeric_limits<int64_t>::max()) / uint64_t(dim))
      return false;
    product *= uint64_t(dim);
  }
  bytes = product;
  return true;
}

/// Checks a tensor's header fields (its data is checked by the caller).
bool checkTensor(const HbmTensor &tensor, size_t tensorCount,
                 std::string &problem) {
  if (!checkText(tensor.name, kArtifactMaxNameBytes, "name", problem) ||
      !checkText(tensor.role, kArtifactMaxNameBytes, "role", problem) ||
      !checkEnum(unsigned(tensor.dtype), kNumDTypes, "dtype", problem) ||
      !checkEnum(unsigned(tensor.kind), kNumTensorKinds, "kind", problem))
    return false;
  if (tensor.shape.size() > kArtifactMaxRank) {
    problem = formatString("rank %zu (limit %u)", tensor.shape.size(),
                           kArtifactMaxRank);
    return false;
  }
  uint64_t bytes;
  if (!tensorByteSize(tensor.shape, tensor.dtype, bytes)) {
    problem = "shape has a negative dimension or more than 2^63 bytes";
    return false;
  }
  if (tensor.aliasesInput < -1 ||
      (tensor.aliasesInput >= 0 &&
       size_t(tensor.aliasesInput) >= tensorCount)) {
    problem = formatString("aliasesInput %d out of range (-1..%zu)",
                           tensor.aliasesInput, tensorCount - 1);
    return false;
  }
  return true;
}

bool checkTarget(const std::string &target, std::string &problem) {
  if (!checkText(target, kArtifactMaxNameBytes, "target", problem))
    return false;
  if (lookupTarget(target))
    return true;
  problem =
      "unknown target " + quoted(target) + " (this runtime knows trn1, trn2)";
  return false;
}

/// The artifact-level fields of `info` that the writer stores.
bool checkStoredInfo(const ArtifactInfo &info, std::string &problem) {
  if (!checkText(info.compilerVersion, kArtifactMaxNameBytes,
                 "compiler version", problem) ||
      !checkText(info.cacheKey, kArtifactMaxNameBytes, "cache key", problem))
    return false;
  if (info.estimatedDeviceTimeNs &&
      !(std::isfinite(*info.estimatedDeviceTimeNs) &&
        *info.estimatedDeviceTimeNs >= 0)) {
    problem = "estimated device time is negative or not finite";
    return false;
  }
  if (info.report.size() > kArtifactMaxReportEntries) {
    problem = formatString("report has %zu entries (limit %zu)",
                           info.report.size(), kArtifactMaxReportEntries);
    return false;
  }
  for (const auto &[key, value] : info.report) {
    if (!checkText(key, kArtifactMaxNameBytes, "report key", problem))
      return false;
    if (!checkText(value, kArtifactMaxReportValueBytes, "report value",
                   problem))
      return inContext(problem, "report[" + quoted(key) + "]");
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Equality (bitwise for floats), with the path of the first difference
//===----------------------------------------------------------------------===//

bool equalTensor(const HbmTensor &a, const HbmTensor &b, std::string *diff) {
  if (a.name != b.name)
    return differ(diff, "name", quoted(a.name), quoted(b.name));
  if (a.dtype != b.dtype)
    return differ(diff, "dtype", int(a.dtype), int(b.dtype));
  if (!equalInts(a.shape, b.shape, diff))
    return nested(diff, "shape");
  if (a.offset != b.offset)
    return differInU64(diff, "offset", a.offset, b.offset);
  if (a.kind != b.kind)
    return differ(diff, "kind", int(a.kind), int(b.kind));
  if (a.aliasesInput != b.aliasesInput)
    return differ(diff, "aliasesInput", a.aliasesInput, b.aliasesInput);
  if (a.role != b.role)
    return differ(diff, "role", quoted(a.role), quoted(b.role));
  if (a.port.kind != b.port.kind || a.port.index != b.port.index)
    return differ(diff, "port", int(a.port.kind) * 1000000 + a.port.index,
                  int(b.port.kind) * 1000000 + b.port.index);
  if (a.sharding.size() != b.sharding.size())
    return differInU64(diff, "sharding.size", a.sharding.size(),
                       b.sharding.size());
  for (size_t d = 0; d < a.sharding.size(); ++d)
    if (a.sharding[d].axes != b.sharding[d].axes ||
        a.sharding[d].blocks != b.sharding[d].blocks)
      return differ(diff, ("sharding[" + std::to_string(d) + "]").c_str(),
                    a.sharding[d].blocks, b.sharding[d].blocks);
  if (a.data.size() != b.data.size())
    return differInU64(diff, "data.size", a.data.size(), b.data.size());
  for (size_t i = 0; i < a.data.size(); ++i)
    if (a.data[i] != b.data[i])
      return differ(diff, ("data[" + std::to_string(i) + "]").c_str(),
                    a.data[i], b.data[i]);
  return true;
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

std::vector<uint8_t> encodeStream(const std::vector<Instruction> &stream) {
  std::vector<uint8_t> bytes;
  // Most instructions take 60-200 bytes: one reservation instead of a
  // doubling series of copies.
  bytes.reserve(4 + stream.size() * 128);
  ByteWriter w(bytes);
  w.u32(uint32_t(stream.size()));
  for (const Instruction &inst : stream)
    encodeInstruction(w, inst);
  return bytes;
}

std::vector<uint8_t> encodeMetadata(const Program &program,
                                    const ArtifactInfo &info) {
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  w.string(program.target);
  w.string(info.compilerVersion);
  w.string(info.cacheKey);
  w.u64(program.hbmBytes);
  w.u64(program.flops);
  w.u64(program.sbufPeakBytesPerPartition);
  w.u64(program.psumPeakBytesPerPartition);
  w.u32(program.numSemaphores);
  w.u32(uint32_t(program.dmaQueues.size()));
  w.u8(info.estimatedDeviceTimeNs ? 1 : 0);
  w.f64(info.estimatedDeviceTimeNs ? *info.estimatedDeviceTimeNs : 0.0);
  w.u32(uint32_t(info.report.size()));
  for (const auto &[key, value] : info.report) { // std::map: sorted keys
    w.string(key);
    w.string(value);
  }
  return bytes;
}

std::vector<uint8_t> encodeTensors(const Program &program) {
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  w.u32(uint32_t(program.tensors.size()));
  for (const HbmTensor &tensor : program.tensors) {
    w.string(tensor.name);
    w.u8(uint8_t(tensor.dtype));
    w.u8(uint8_t(tensor.kind));
    w.u8(uint8_t(tensor.shape.size()));
    w.u8(0); // reserved
    w.i32(tensor.aliasesInput);
    w.u64(tensor.offset);
    for (int64_t dim : tensor.shape)
      w.i64(dim);
    w.string(tensor.role);
    w.u64(tensor.data.size());
  }
  return bytes;
}

/// The mesh section: the axes, then per tensor its sharding (an empty one
/// for tensors that are the same on every rank).
std::vector<uint8_t> encodeMesh(const Program &program) {
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  w.u32(uint32_t(program.mesh.size()));
  for (const MeshAxis &axis : program.mesh) {
    w.string(axis.name);
    w.i64(axis.size);
    w.u8(axis.replica ? 1 : 0);
  }
  w.u32(uint32_t(program.tensors.size()));
  for (const HbmTensor &tensor : program.tensors) {
    w.u8(uint8_t(tensor.sharding.size()));
    for (const DimSharding &dim : tensor.sharding) {
      w.u8(uint8_t(dim.axes.size()));
      for (uint32_t axis : dim.axes)
        w.u8(uint8_t(axis));
      w.i64(dim.blocks);
    }
  }
  return bytes;
}

/// The format's limits on a mesh and the shardings (their meaning is the
/// validator's: trnrt/IsaValidate.h).
bool checkMesh(const Program &program, std::string &problem) {
  if (program.mesh.size() > kArtifactMaxMeshAxes) {
    problem = formatString("%zu mesh axes (limit %u)", program.mesh.size(),
                           kArtifactMaxMeshAxes);
    return false;
  }
  for (const MeshAxis &axis : program.mesh) {
    if (!checkText(axis.name, kArtifactMaxNameBytes, "mesh axis name", problem))
      return false;
    if (axis.name.empty() || axis.size < 1) {
      problem = "mesh axis " + quoted(axis.name) +
                formatString(" has size %" PRId64 " or no name", axis.size);
      return false;
    }
  }
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const HbmTensor &tensor = program.tensors[i];
    if (tensor.sharding.empty())
      continue;
    if (program.mesh.empty() || tensor.sharding.size() != tensor.shape.size()) {
      problem = formatString("tensor %zu: a sharding of %zu dimensions for "
                             "rank %zu on a mesh of %zu axes",
                             i, tensor.sharding.size(), tensor.shape.size(),
                             program.mesh.size());
      return false;
    }
    for (const DimSharding &dim : tensor.sharding) {
      if (dim.axes.size() > kArtifactMaxMeshAxes || dim.blocks < 1) {
        problem = formatString("tensor %zu: a dimension split over %zu axes "
                               "in %" PRId64 " blocks",
                               i, dim.axes.size(), dim.blocks);
        return false;
      }
      for (uint32_t axis : dim.axes)
        if (axis >= program.mesh.size()) {
          problem = formatString("tensor %zu: mesh axis #%u of %zu", i, axis,
                                 program.mesh.size());
          return false;
        }
    }
  }
  return true;
}

/// The pipeline section: the fragment's place in its pipeline, then every
/// tensor's port.
std::vector<uint8_t> encodePipeline(const Program &program) {
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  const PipelineFragment &p = program.pipeline;
  w.string(p.step);
  w.i64(p.stage);
  w.i64(p.stages);
  w.i64(p.microbatches);
  w.string(p.schedule);
  w.string(p.phase);
  w.u32(p.axis);
  w.u32(uint32_t(program.tensors.size()));
  for (const HbmTensor &tensor : program.tensors) {
    w.u8(uint8_t(tensor.port.kind));
    w.i64(tensor.port.index);
  }
  return bytes;
}

/// Calls fn on the engine streams, then the DMA queues (the order of the
/// per-instruction optional sections).
template <typename ProgramT, typename Fn>
void forEachStream(ProgramT &program, Fn fn) {
  for (auto &stream : program.engineStreams)
    fn(stream);
  for (auto &queue : program.dmaQueues)
    fn(queue);
}

/// u32 streams, then per stream u32 n and n values `write` appends.
template <typename Write>
void encodePerInstruction(const Program &program, ByteWriter &w, Write write) {
  w.u32(uint32_t(kNumEngineStreams + program.dmaQueues.size()));
  forEachStream(program, [&](const std::vector<Instruction> &stream) {
    w.u32(uint32_t(stream.size()));
    for (const Instruction &inst : stream)
      write(inst);
  });
}

/// The `kinds` section: per stream, the InstructionKind of every
/// instruction; none when no instruction has one.
std::optional<std::vector<uint8_t>> encodeKinds(const Program &program) {
  bool any = false;
  forEachStream(program, [&](const std::vector<Instruction> &stream) {
    for (const Instruction &inst : stream)
      any |= inst.kind != InstructionKind::Other;
  });
  if (!any)
    return std::nullopt;
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  encodePerInstruction(
      program, w, [&](const Instruction &inst) { w.u8(uint8_t(inst.kind)); });
  return bytes;
}

/// The `origins` section: the names, then per stream each instruction's
/// origin (0: none).
std::vector<uint8_t> encodeOrigins(const Program &program) {
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  w.u32(uint32_t(program.origins.size()));
  for (const std::string &origin : program.origins)
    w.string(origin);
  encodePerInstruction(program, w,
                       [&](const Instruction &inst) { w.u32(inst.origin); });
  return bytes;
}

std::vector<uint8_t> encodeCalls(const Program &program) {
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  w.u32(uint32_t(program.calls.size()));
  for (const CallSite &call : program.calls) {
    w.u32(call.callee);
    w.u32(uint32_t(call.positions.size()));
    for (uint64_t position : call.positions)
      w.u64(position);
    w.u32(uint32_t(call.arguments.size()));
    for (uint64_t address : call.arguments)
      w.u64(address);
    w.u64(call.scratch);
  }
  return bytes;
}

/// The format's rules for a fragment (the runtime checks the rest when it
/// binds the pipeline).
bool checkPipeline(const Program &program, std::string &problem) {
  const PipelineFragment &p = program.pipeline;
  if (!p.isFragment()) {
    for (const HbmTensor &tensor : program.tensors)
      if (tensor.port.kind != TensorPort::Kind::None) {
        problem = "tensor " + quoted(tensor.name) +
                  " has a port but the program is not a pipeline fragment";
        return false;
      }
    return true;
  }
  if (!checkText(p.step, kArtifactMaxNameBytes, "pipeline step", problem))
    return false;
  if (p.stages < 1 || p.stage >= p.stages || p.microbatches < 1 ||
      p.microbatches > (int64_t(1) << 24)) {
    problem = formatString("stage %" PRId64 " of %" PRId64 " with %" PRId64
                           " microbatches",
                           p.stage, p.stages, p.microbatches);
    return false;
  }
  if (p.schedule != "gpipe" && p.schedule != "1f1b") {
    problem = "unknown schedule " + quoted(p.schedule);
    return false;
  }
  if (p.phase != "forward" && p.phase != "backward" && p.phase != "update") {
    problem = "unknown phase " + quoted(p.phase);
    return false;
  }
  if (p.axis >= program.mesh.size() || program.mesh[p.axis].size != p.stages) {
    problem = formatString("pipeline axis #%u is not a mesh axis of size "
                           "%" PRId64,
                           p.axis, p.stages);
    return false;
  }
  for (const HbmTensor &tensor : program.tensors) {
    if (unsigned(tensor.port.kind) > unsigned(TensorPort::Kind::Result) ||
        tensor.port.index < 0) {
      problem = "tensor " + quoted(tensor.name) + " has an invalid port";
      return false;
    }
    bool input = tensor.kind == HbmTensor::Kind::Input;
    bool output = tensor.kind == HbmTensor::Kind::Output;
    bool hasPort = tensor.port.kind != TensorPort::Kind::None;
    bool inputPort = tensor.port.kind != TensorPort::Kind::Result;
    if ((input || output) != hasPort || (hasPort && input && !inputPort) ||
        (hasPort && output &&
         (tensor.port.kind == TensorPort::Kind::Argument ||
          tensor.port.kind == TensorPort::Kind::Microbatch))) {
      problem = "tensor " + quoted(tensor.name) + " (" +
                (input    ? "input"
                 : output ? "output"
                          : "internal") +
                ") cannot have port '" + portKindName(tensor.port.kind) + "'";
      return false;
    }
  }
  return true;
}

std::vector<uint8_t> encodeConstants(const Program &program) {
  std::vector<uint8_t> bytes;
  for (const HbmTensor &tensor : program.tensors)
    bytes.insert(bytes.end(), tensor.data.begin(), tensor.data.end());
  return bytes;
}

/// Every check the reader applies to a decoded program, run before writing.
bool checkProgramForWriting(const Program &program, const ArtifactInfo &info,
                            std::string &error) {
  if (program.resolvedCalls) {
    // Its tables hold the expanded program's tensors and origins.
    error = "the program's calls are resolved for running; write the "
            "program as compiled (a trn bug, please report it)";
    return false;
  }
  std::string problem;
  if (!checkTarget(program.target, problem)) {
    error = "metadata: " + problem;
    return false;
  }
  if (!info.target.empty() && info.target != program.target) {
    error = "metadata: info target " + quoted(info.target) +
            " differs from the program's " + quoted(program.target);
    return false;
  }
  if (!checkStoredInfo(info, problem)) {
    error = "metadata: " + problem;
    return false;
  }
  if (program.dmaQueues.size() > kArtifactMaxDmaQueues) {
    error = formatString("metadata: %zu DMA queues (limit %u)",
                         program.dmaQueues.size(), kArtifactMaxDmaQueues);
    return false;
  }
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    if (!checkTensor(program.tensors[i], program.tensors.size(), problem)) {
      error = "tensors: tensor " + std::to_string(i) + ": " + problem;
      return false;
    }
  }
  if (!checkMesh(program, problem)) {
    error = "mesh: " + problem;
    return false;
  }
  if (!checkPipeline(program, problem)) {
    error = "pipeline: " + problem;
    return false;
  }
  auto checkStream = [&](const std::vector<Instruction> &stream,
                         uint32_t sectionId) {
    if (stream.size() > std::numeric_limits<uint32_t>::max()) {
      error = sectionName(sectionId) + ": more than 2^32 instructions";
      return false;
    }
    for (const Instruction &inst : stream)
      if (inst.origin > program.origins.size()) {
        error = sectionName(sectionId) +
                formatString(": an instruction names origin %" PRIu32
                             " of the program's %zu",
                             inst.origin, program.origins.size());
        return false;
      }
    for (size_t i = 0; i < stream.size(); ++i)
      if (!checkInstruction(stream[i], problem)) {
        error = sectionName(sectionId) + ": instruction " + std::to_string(i) +
                ": " + problem;
        return false;
      }
    return true;
  };
  uint64_t totalInstructions = 0;
  for (uint32_t e = 0; e < kNumEngineStreams; ++e) {
    if (!checkStream(program.engineStreams[e], kSectionFirstEngineStream + e))
      return false;
    totalInstructions += program.engineStreams[e].size();
  }
  for (size_t q = 0; q < program.dmaQueues.size(); ++q) {
    if (!checkStream(program.dmaQueues[q], kSectionFirstDmaQueue + uint32_t(q)))
      return false;
    totalInstructions += program.dmaQueues[q].size();
  }
  if (!checkCalls(program, error)) {
    error = "calls: " + error;
    return false;
  }
  uint64_t readerLimit = ArtifactReadOptions().maxInstructions;
  if (totalInstructions > readerLimit) {
    error = formatString("%" PRIu64 " instructions, over the reader's limit "
                         "of %" PRIu64,
                         totalInstructions, readerLimit);
    return false;
  }
  if (program.tensors.size() > std::numeric_limits<uint32_t>::max()) {
    error = "tensors: more than 2^32 tensors";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

/// Decodes one stream; `budget` is the number of instructions the reader may
/// still decode (ArtifactReadOptions::maxInstructions).
bool decodeStream(const uint8_t *bytes, size_t size,
                  std::vector<Instruction> &stream, uint64_t &budget,
                  std::string &problem) {
  Cursor c(bytes, size, problem);
  uint32_t count;
  if (!c.u32(count) || !c.fits(count, kMinInstructionBytes, "instructions"))
    return false;
  if (count > budget)
    return c.fail(formatString("%" PRIu32 " instructions take the program "
                               "past the reader's limit of %" PRIu64,
                               count, budget));
  budget -= count;
  // A decoded Instruction is far larger than its smallest encoding, so only
  // part of the count is trusted up front; beyond that the stream grows as
  // instructions actually decode.
  stream.clear();
  stream.reserve(std::min<uint32_t>(count, 1u << 18));
  for (uint32_t i = 0; i < count; ++i) {
    stream.emplace_back();
    if (!decodeInstruction(c, stream.back()))
      return c.within("instruction " + std::to_string(i));
  }
  return c.expectEnd();
}

bool decodeMetadata(const uint8_t *bytes, size_t size, Program &program,
                    ArtifactInfo &info, uint32_t &dmaQueueCount,
                    std::string &problem) {
  Cursor c(bytes, size, problem);
  if (!c.string(program.target, kArtifactMaxNameBytes, "target") ||
      !c.string(info.compilerVersion, kArtifactMaxNameBytes,
                "compiler version") ||
      !c.string(info.cacheKey, kArtifactMaxNameBytes, "cache key") ||
      !c.u64(program.hbmBytes) || !c.u64(program.flops) ||
      !c.u64(program.sbufPeakBytesPerPartition) ||
      !c.u64(program.psumPeakBytesPerPartition) ||
      !c.u32(program.numSemaphores) || !c.u32(dmaQueueCount))
    return false;
  if (dmaQueueCount > kArtifactMaxDmaQueues)
    return c.fail(formatString("%" PRIu32 " DMA queues (limit %u)",
                               dmaQueueCount, kArtifactMaxDmaQueues));
  uint8_t hasDeviceTime;
  double deviceTime;
  if (!c.u8(hasDeviceTime) || !c.f64(deviceTime))
    return false;
  if (hasDeviceTime > 1)
    return c.fail(
        formatString("device-time flag is %u, not 0 or 1", hasDeviceTime));
  if (hasDeviceTime)
    info.estimatedDeviceTimeNs = deviceTime;
  else if (doubleBits(deviceTime) != 0)
    return c.fail("device time is set although marked absent");

  uint32_t reportCount;
  if (!c.u32(reportCount))
    return false;
  if (reportCount > kArtifactMaxReportEntries)
    return c.fail(formatString("report has %" PRIu32 " entries (limit %zu)",
                               reportCount, kArtifactMaxReportEntries));
  if (!c.fits(reportCount, kMinReportEntryBytes, "report entries"))
    return false;
  std::string key, value;
  for (uint32_t i = 0; i < reportCount; ++i) {
    if (!c.string(key, kArtifactMaxNameBytes, "report key") ||
        !c.string(value, kArtifactMaxReportValueBytes, "report value"))
      return c.within("report entry " + std::to_string(i));
    if (!info.report.empty() && !(info.report.rbegin()->first < key))
      return c.fail(formatString(
          "report entry %" PRIu32 ": keys out of order or repeated", i));
    info.report.emplace_hint(info.report.end(), std::move(key),
                             std::move(value));
    key.clear();
    value.clear();
  }
  if (!c.expectEnd())
    return false;
  if (!checkTarget(program.target, problem) || !checkStoredInfo(info, problem))
    return false;
  return true;
}

/// Decodes the tensor table; `dataSizes` receives each tensor's byte count in
/// the constants section, whose raw size is `constantsSize`.
bool decodeTensors(const uint8_t *bytes, size_t size, uint64_t constantsSize,
                   Program &program, std::vector<uint64_t> &dataSizes,
                   std::string &problem) {
  Cursor c(bytes, size, problem);
  uint32_t count;
  if (!c.u32(count) || !c.fits(count, kMinTensorBytes, "tensors"))
    return false;
  program.tensors.resize(count);
  dataSizes.assign(count, 0);
  uint64_t constantsLeft = constantsSize;
  for (uint32_t i = 0; i < count; ++i) {
    HbmTensor &tensor = program.tensors[i];
    std::string context = "tensor " + std::to_string(i);
    uint8_t dtype, kind, rank, reserved;
    if (!c.string(tensor.name, kArtifactMaxNameBytes, "name") || !c.u8(dtype) ||
        !c.u8(kind) || !c.u8(rank) || !c.u8(reserved) ||
        !c.i32(tensor.aliasesInput) || !c.u64(tensor.offset))
      return c.within(context);
    if (reserved != 0)
      return c.fail(formatString("reserved byte is 0x%02x, not 0", reserved)) ||
             c.within(context);
    if (rank > kArtifactMaxRank)
      return c.fail(
                 formatString("rank %u (limit %u)", rank, kArtifactMaxRank)) ||
             c.within(context);
    tensor.dtype = DType(dtype);
    tensor.kind = HbmTensor::Kind(kind);
    if (!c.fits(rank, 8, "dimensions"))
      return c.within(context);
    tensor.shape.resize(rank);
    for (int64_t &dim : tensor.shape)
      if (!c.i64(dim))
        return c.within(context);
    if (!c.string(tensor.role, kArtifactMaxNameBytes, "role") ||
        !c.u64(dataSizes[i]))
      return c.within(context);
    if (dataSizes[i] > constantsLeft)
      return c.fail(formatString("data of %" PRIu64
                                 " bytes overruns section 'constants' "
                                 "(%" PRIu64 " bytes left)",
                                 dataSizes[i], constantsLeft)) ||
             c.within(context);
    constantsLeft -= dataSizes[i];
    if (!checkTensor(tensor, count, problem))
      return c.within(context);
  }
  if (!c.expectEnd())
    return false;
  if (constantsLeft != 0)
    return c.fail(formatString("tensor data adds up to %" PRIu64
                               " bytes but section 'constants' holds %" PRIu64,
                               constantsSize - constantsLeft, constantsSize));
  return true;
}

/// Decodes the mesh section into `program` (whose tensors are decoded).
bool decodeMesh(const uint8_t *bytes, size_t size, Program &program,
                std::string &problem) {
  Cursor c(bytes, size, problem);
  uint32_t axes;
  if (!c.u32(axes))
    return false;
  if (axes == 0 || axes > kArtifactMaxMeshAxes)
    return c.fail(formatString("%" PRIu32 " mesh axes (1..%u)", axes,
                               kArtifactMaxMeshAxes));
  program.mesh.resize(axes);
  for (MeshAxis &axis : program.mesh) {
    uint8_t replica;
    if (!c.string(axis.name, kArtifactMaxNameBytes, "mesh axis name") ||
        !c.i64(axis.size) || !c.u8(replica))
      return false;
    if (replica > 1)
      return c.fail(formatString("replica flag is %u, not 0 or 1", replica));
    axis.replica = replica;
  }
  uint32_t tensors;
  if (!c.u32(tensors))
    return false;
  if (tensors != program.tensors.size())
    return c.fail(formatString("shardings of %" PRIu32
                               " tensors for a table of %zu",
                               tensors, program.tensors.size()));
  for (HbmTensor &tensor : program.tensors) {
    uint8_t rank;
    if (!c.u8(rank))
      return false;
    if (rank > kArtifactMaxRank)
      return c.fail(formatString("a sharding of %u dimensions", rank));
    tensor.sharding.resize(rank);
    for (DimSharding &dim : tensor.sharding) {
      uint8_t count;
      if (!c.u8(count))
        return false;
      if (count > kArtifactMaxMeshAxes)
        return c.fail(formatString("a dimension split over %u axes", count));
      dim.axes.resize(count);
      for (uint32_t &axis : dim.axes) {
        uint8_t byte;
        if (!c.u8(byte))
          return false;
        axis = byte;
      }
      if (!c.i64(dim.blocks))
        return false;
    }
  }
  if (!c.expectEnd())
    return false;
  return checkMesh(program, problem);
}

bool decodePipeline(const uint8_t *bytes, size_t size, Program &program,
                    std::string &problem) {
  Cursor c(bytes, size, problem);
  PipelineFragment &p = program.pipeline;
  uint32_t tensors;
  if (!c.string(p.step, kArtifactMaxNameBytes, "step") || !c.i64(p.stage) ||
      !c.i64(p.stages) || !c.i64(p.microbatches) ||
      !c.string(p.schedule, kArtifactMaxNameBytes, "schedule") ||
      !c.string(p.phase, kArtifactMaxNameBytes, "phase") || !c.u32(p.axis) ||
      !c.u32(tensors))
    return false;
  if (p.stage < 0)
    return c.fail(formatString("stage %" PRId64, p.stage));
  if (tensors != program.tensors.size())
    return c.fail(formatString("ports of %" PRIu32 " tensors for a table of "
                               "%zu",
                               tensors, program.tensors.size()));
  for (HbmTensor &tensor : program.tensors) {
    uint8_t kind;
    if (!c.u8(kind) || !c.i64(tensor.port.index))
      return false;
    if (kind > uint8_t(TensorPort::Kind::Result))
      return c.fail(formatString("port kind %u out of range", kind));
    tensor.port.kind = TensorPort::Kind(kind);
  }
  if (!c.expectEnd())
    return false;
  return checkPipeline(program, problem);
}

//===----------------------------------------------------------------------===//
// The container: header, section table, checksums, compression
//===----------------------------------------------------------------------===//

/// Decodes metadata and the tensor table (without tensor data).
bool readHeaderSections(const uint8_t *data, const Container &container,
                        ZSTD_DCtx *context, Program &program,
                        ArtifactInfo &info, std::vector<uint64_t> &dataSizes,
                        std::string &error) {
  std::vector<uint8_t> buffer;
  const uint8_t *raw;
  std::string problem;
  const SectionEntry &metadata = container.sections[container.metadata];
  if (!loadSection(data, metadata, context, buffer, raw, error))
    return false;
  uint32_t dmaQueueCount = 0;
  if (!decodeMetadata(raw, size_t(metadata.rawSize), program, info,
                      dmaQueueCount, problem)) {
    error = "section 'metadata': " + problem;
    return false;
  }
  if (dmaQueueCount != container.dmaQueues.size()) {
    error = formatString("section 'metadata': %" PRIu32
                         " DMA queues declared, %zu present",
                         dmaQueueCount, container.dmaQueues.size());
    return false;
  }
  const SectionEntry &tensors = container.sections[container.tensors];
  if (!loadSection(data, tensors, context, buffer, raw, error))
    return false;
  uint64_t constantsSize = container.sections[container.constants].rawSize;
  if (!decodeTensors(raw, size_t(tensors.rawSize), constantsSize, program,
                     dataSizes, problem)) {
    error = "section 'tensors': " + problem;
    return false;
  }
  if (container.mesh >= 0) {
    const SectionEntry &mesh = container.sections[container.mesh];
    if (!loadSection(data, mesh, context, buffer, raw, error))
      return false;
    if (!decodeMesh(raw, size_t(mesh.rawSize), program, problem)) {
      error = "section 'mesh': " + problem;
      return false;
    }
  }
  if (container.pipeline >= 0) {
    const SectionEntry &pipeline = container.sections[container.pipeline];
    if (!loadSection(data, pipeline, context, buffer, raw, error))
      return false;
    if (!decodePipeline(raw, size_t(pipeline.rawSize), program, problem)) {
      error = "section 'pipeline': " + problem;
      return false;
    }
  }
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

void describeProgram(const Program &program, ArtifactInfo &info) {
  info.formatVersion = kArtifactFormatVersion;
  info.target = program.target;
  info.flops = program.flops;
  info.sbufPeakBytesPerPartition = program.sbufPeakBytesPerPartition;
  info.psumPeakBytesPerPartition = program.psumPeakBytesPerPartition;
  info.hbmPeakBytes = program.hbmBytes;
  info.mesh = program.mesh;
  info.inputs.clear();
  info.outputs.clear();
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const HbmTensor &tensor = program.tensors[i];
    if (tensor.kind != HbmTensor::Kind::Input &&
        tensor.kind != HbmTensor::Kind::Output)
      continue;
    ArtifactTensorInfo entry;
    entry.tensorIndex = uint32_t(i);
    entry.name = tensor.name;
    entry.dtype = tensor.dtype;
    entry.shape = tensor.shape;
    entry.offset = tensor.offset;
    if (unsigned(tensor.dtype) >= kNumDTypes ||
        !tensorByteSize(tensor.shape, tensor.dtype, entry.sizeInBytes))
      entry.sizeInBytes = std::numeric_limits<uint64_t>::max();
    entry.aliasesInput = tensor.aliasesInput;
    entry.role = tensor.role;
    entry.sharding = tensor.sharding;
    (tensor.kind == HbmTensor::Kind::Input ? info.inputs : info.outputs)
        .push_back(std::move(entry));
  }
}

bool writeArtifact(const Program &program, const ArtifactInfo &info,
                   std::vector<uint8_t> &out, std::string &error,
                   const ArtifactWriteOptions &options) {
  out.clear();
  if (!checkProgramForWriting(program, info, error))
    return false;

  // Sections are encoded and compressed in parallel (each is a pure function
  // of the program; a large kernel's streams are hundreds of megabytes) and
  // laid out in id order, so the bytes do not depend on the thread count.
  struct PendingSection {
    uint32_t id;
    std::vector<uint8_t> raw;
  };
  std::vector<PendingSection> sections;
  sections.push_back({kSectionMetadata, encodeMetadata(program, info)});
  sections.push_back({kSectionTensors, encodeTensors(program)});
  sections.push_back({kSectionConstants, encodeConstants(program)});
  if (!program.mesh.empty())
    sections.push_back({kSectionMesh, encodeMesh(program)});
  if (program.pipeline.isFragment())
    sections.push_back({kSectionPipeline, encodePipeline(program)});
  if (!program.subroutines.empty()) {
    // Each subroutine is a whole artifact of its own, length-prefixed.
    std::vector<uint8_t> bytes;
    ByteWriter w(bytes);
    w.u32(uint32_t(program.subroutines.size()));
    for (size_t k = 0; k < program.subroutines.size(); ++k) {
      ArtifactInfo calleeInfo;
      calleeInfo.target = program.subroutines[k].target;
      std::vector<uint8_t> callee;
      if (!writeArtifact(program.subroutines[k], calleeInfo, callee, error,
                         options)) {
        error = "subroutine " + std::to_string(k) + ": " + error;
        return false;
      }
      w.u64(callee.size());
      bytes.insert(bytes.end(), callee.begin(), callee.end());
    }
    sections.push_back({kSectionSubroutines, std::move(bytes)});
    sections.push_back({kSectionCalls, encodeCalls(program)});
  }
  for (uint32_t e = 0; e < kNumEngineStreams; ++e)
    sections.push_back({kSectionFirstEngineStream + e, {}});
  for (size_t q = 0; q < program.dmaQueues.size(); ++q)
    sections.push_back({kSectionFirstDmaQueue + uint32_t(q), {}});
  auto streamOf = [&](uint32_t id) -> const std::vector<Instruction> & {
    return id < kSectionFirstDmaQueue
               ? program.engineStreams[id - kSectionFirstEngineStream]
               : program.dmaQueues[id - kSectionFirstDmaQueue];
  };
  const size_t streamSections = sections.size();
  if (std::optional<std::vector<uint8_t>> kinds = encodeKinds(program))
    sections.push_back({kSectionKinds, std::move(*kinds)});
  if (!program.origins.empty())
    sections.push_back({kSectionOrigins, encodeOrigins(program)});
  const size_t firstStream = 3 + (program.mesh.empty() ? 0 : 1) +
                             (program.pipeline.isFragment() ? 1 : 0) +
                             (program.subroutines.empty() ? 0 : 2);
  tbb::parallel_for(firstStream, streamSections, [&](size_t i) {
    sections[i].raw = encodeStream(streamOf(sections[i].id));
  });

  uint64_t totalRaw = 0;
  for (const PendingSection &section : sections)
    totalRaw += section.raw.size();
  uint64_t readerLimit = ArtifactReadOptions().maxRawBytes;
  if (totalRaw > readerLimit) {
    error = formatString("the artifact would hold %" PRIu64
                         " bytes uncompressed, over the reader's limit of "
                         "%" PRIu64,
                         totalRaw, readerLimit);
    return false;
  }

  // Compress each section; keep the raw bytes when zstd does not shrink them.
  std::vector<SectionEntry> entries(sections.size());
  std::vector<std::vector<uint8_t>> stored(sections.size());
  std::atomic<bool> outOfMemory{false};
  tbb::parallel_for(size_t(0), sections.size(), [&](size_t i) {
    std::vector<uint8_t> &raw = sections[i].raw;
    SectionEntry &entry = entries[i];
    entry.id = sections[i].id;
    entry.rawSize = raw.size();
    if (entry.id == kSectionKinds || entry.id == kSectionOrigins)
      entry.flags |= kSectionFlagOptional;
    if (options.compress && !raw.empty()) {
      std::unique_ptr<ZSTD_CCtx, ZstdCContextDeleter> context(
          ZSTD_createCCtx());
      if (!context) {
        outOfMemory = true;
        return;
      }
      std::vector<uint8_t> compressed(ZSTD_compressBound(raw.size()));
      size_t size =
          ZSTD_compressCCtx(context.get(), compressed.data(), compressed.size(),
                            raw.data(), raw.size(), kZstdLevel);
      if (!ZSTD_isError(size) && size < raw.size()) {
        compressed.resize(size);
        stored[i] = std::move(compressed);
        entry.flags |= kSectionFlagZstd;
      }
    }
    if (!(entry.flags & kSectionFlagZstd))
      stored[i] = std::move(raw);
    entry.storedSize = stored[i].size();
    entry.checksum = XXH3_64bits(stored[i].data(), stored[i].size());
  });
  if (outOfMemory) {
    error = "out of memory creating a zstd compression context";
    return false;
  }
  uint64_t offset = kHeaderSize + sections.size() * kSectionEntrySize;
  for (SectionEntry &entry : entries) {
    entry.offset = offset;
    offset += entry.storedSize;
  }

  out.resize(size_t(offset));
  uint8_t *header = out.data();
  std::memcpy(header, kMagic, sizeof(kMagic));
  storeLittleEndian(kArtifactFormatVersion, 4, header + 8);
  storeLittleEndian(0, 4, header + 12); // flags
  storeLittleEndian(entries.size(), 4, header + 16);
  storeLittleEndian(0, 4, header + 20); // reserved
  storeLittleEndian(offset, 8, header + 24);
  storeLittleEndian(0, 8, header + kHeaderChecksumOffset);
  for (size_t i = 0; i < entries.size(); ++i) {
    uint8_t *entryBytes = header + kHeaderSize + i * kSectionEntrySize;
    const SectionEntry &entry = entries[i];
    storeLittleEndian(entry.id, 4, entryBytes);
    storeLittleEndian(entry.flags, 4, entryBytes + 4);
    storeLittleEndian(entry.offset, 8, entryBytes + 8);
    storeLittleEndian(entry.storedSize, 8, entryBytes + 16);
    storeLittleEndian(entry.rawSize, 8, entryBytes + 24);
    storeLittleEndian(entry.checksum, 8, entryBytes + 32);
    if (!stored[i].empty())
      std::memcpy(out.data() + entry.offset, stored[i].data(),
                  stored[i].size());
  }
  size_t tableEnd = kHeaderSize + entries.size() * kSectionEntrySize;
  storeLittleEndian(headerChecksum(out.data(), tableEnd), 8,
                    header + kHeaderChecksumOffset);
  return true;
}

bool readArtifact(const uint8_t *data, size_t size, Program &program,
                  ArtifactInfo &info, std::string &error,
                  const ArtifactReadOptions &options) {
  program = Program();
  info = ArtifactInfo();
  if (!data && size != 0) {
    error = "no data";
    return false;
  }
  Container container;
  if (!parseContainer(data, size, options, container, error))
    return false;
  std::unique_ptr<ZSTD_DCtx, ZstdDContextDeleter> context;
  if (!createDContext(context, error))
    return false;
  std::vector<uint64_t> dataSizes;
  if (!readHeaderSections(data, container, context.get(), program, info,
                          dataSizes, error))
    return false;

  std::vector<uint8_t> buffer;
  const uint8_t *raw;
  const SectionEntry &constants = container.sections[container.constants];
  if (!loadSection(data, constants, context.get(), buffer, raw, error))
    return false;
  uint64_t position = 0;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    // decodeTensors checked that the sizes add up to the section's size.
    program.tensors[i].data.assign(raw + position,
                                   raw + position + dataSizes[i]);
    position += dataSizes[i];
  }

  std::string problem;
  uint64_t instructionBudget = options.maxInstructions;
  auto readStream = [&](int index, std::vector<Instruction> &stream) {
    const SectionEntry &entry = container.sections[index];
    if (!loadSection(data, entry, context.get(), buffer, raw, error))
      return false;
    if (decodeStream(raw, size_t(entry.rawSize), stream, instructionBudget,
                     problem))
      return true;
    error = "section '" + sectionName(entry.id) + "': " + problem;
    return false;
  };
  for (uint32_t e = 0; e < kNumEngineStreams; ++e)
    if (!readStream(container.engineStreams[e], program.engineStreams[e]))
      return false;
  program.dmaQueues.resize(container.dmaQueues.size());
  for (size_t q = 0; q < container.dmaQueues.size(); ++q)
    if (!readStream(container.dmaQueues[q], program.dmaQueues[q]))
      return false;

  // The optional per-instruction sections: u32 streams, then per stream
  // u32 n (its instruction count) and n values `read` decodes.
  auto decodePerInstruction = [&](Cursor &c, auto read) {
    uint32_t streams = 0;
    size_t expected = kNumEngineStreams + program.dmaQueues.size();
    bool ok = c.u32(streams) &&
              (streams == expected ||
               c.fail(formatString("%" PRIu32 " streams for the program's %zu",
                                   streams, expected)));
    size_t s = 0;
    forEachStream(program, [&](std::vector<Instruction> &stream) {
      uint32_t count = 0;
      ok = ok && c.u32(count) &&
           (count == stream.size() ||
            c.fail(formatString("stream %zu: %" PRIu32 " values for %zu "
                                "instructions",
                                s, count, stream.size())));
      for (uint32_t i = 0; ok && i < count; ++i)
        ok = read(c, stream[i]);
      ++s;
    });
    return ok && c.expectEnd();
  };
  if (container.kinds >= 0) {
    const SectionEntry &entry = container.sections[container.kinds];
    if (!loadSection(data, entry, context.get(), buffer, raw, error))
      return false;
    Cursor c(raw, size_t(entry.rawSize), problem);
    if (!decodePerInstruction(c, [](Cursor &c, Instruction &inst) {
          uint8_t kind = 0;
          if (!c.u8(kind))
            return false;
          if (kind >= kNumInstructionKinds)
            return c.fail(formatString("kind %u out of range", kind));
          inst.kind = InstructionKind(kind);
          return true;
        })) {
      error = "section 'kinds': " + problem;
      return false;
    }
  }
  if (container.origins >= 0) {
    const SectionEntry &entry = container.sections[container.origins];
    if (!loadSection(data, entry, context.get(), buffer, raw, error))
      return false;
    Cursor c(raw, size_t(entry.rawSize), problem);
    uint32_t names = 0;
    bool ok =
        c.u32(names) && (names <= c.remaining() / 4 ||
                         c.fail(formatString("%" PRIu32 " origins", names)));
    for (uint32_t i = 0; ok && i < names; ++i)
      ok = c.string(program.origins.emplace_back(), kArtifactMaxNameBytes,
                    "origin");
    if (!ok || !decodePerInstruction(c, [&](Cursor &c, Instruction &inst) {
          if (!c.u32(inst.origin))
            return false;
          return inst.origin <= names ||
                 c.fail(formatString("origin %" PRIu32 " of %" PRIu32,
                                     inst.origin, names));
        })) {
      error = "section 'origins': " + problem;
      return false;
    }
  }
  if ((container.subroutines >= 0) != (container.calls >= 0)) {
    error = "section table: 'subroutines' and 'calls' go together";
    return false;
  }
  if (container.subroutines >= 0) {
    const SectionEntry &entry = container.sections[container.subroutines];
    std::vector<uint8_t> subroutineBuffer;
    if (!loadSection(data, entry, context.get(), subroutineBuffer, raw, error))
      return false;
    Cursor c(raw, size_t(entry.rawSize), problem);
    uint32_t count = 0;
    if (!c.u32(count)) {
      error = "section 'subroutines': " + problem;
      return false;
    }
    for (uint32_t k = 0; k < count; ++k) {
      uint64_t length = 0;
      const uint8_t *bytes = nullptr;
      if (!c.u64(length) || !c.bytes(bytes, length)) {
        error = "section 'subroutines': " + problem;
        return false;
      }
      Program callee;
      ArtifactInfo calleeInfo;
      ArtifactReadOptions calleeOptions = options;
      calleeOptions.maxInstructions = instructionBudget;
      if (!readArtifact(bytes, size_t(length), callee, calleeInfo, error,
                        calleeOptions)) {
        error = "section 'subroutines': subroutine " + std::to_string(k) +
                ": " + error;
        return false;
      }
      program.subroutines.push_back(std::move(callee));
    }
    if (!c.expectEnd()) {
      error = "section 'subroutines': " + problem;
      return false;
    }
    const SectionEntry &callsEntry = container.sections[container.calls];
    if (!loadSection(data, callsEntry, context.get(), buffer, raw, error))
      return false;
    Cursor calls(raw, size_t(callsEntry.rawSize), problem);
    uint32_t numCalls = 0;
    bool ok = calls.u32(numCalls);
    for (uint32_t i = 0; ok && i < numCalls; ++i) {
      CallSite call;
      uint32_t n = 0;
      ok = calls.u32(call.callee) && calls.u32(n) &&
           (n <= 5 + kArtifactMaxDmaQueues ||
            calls.fail(formatString("%" PRIu32 " stream positions", n)));
      for (uint32_t j = 0; ok && j < n; ++j)
        ok = calls.u64(call.positions.emplace_back());
      ok = ok && calls.u32(n) &&
           (n <= calls.remaining() / 8 ||
            calls.fail(formatString("%" PRIu32 " arguments", n)));
      for (uint32_t j = 0; ok && j < n; ++j)
        ok = calls.u64(call.arguments.emplace_back());
      ok = ok && calls.u64(call.scratch);
      if (ok)
        program.calls.push_back(std::move(call));
    }
    if (!ok || !calls.expectEnd()) {
      error = "section 'calls': " + problem;
      return false;
    }
    // Resolving and expanding check the calls first.
    ok = false;
    switch (options.calls) {
    case ArtifactReadOptions::Calls::Resolve:
      ok = resolveCalls(program, problem);
      break;
    case ArtifactReadOptions::Calls::Expand:
      ok = expandCalls(program, problem, options.maxInstructions);
      break;
    case ArtifactReadOptions::Calls::Keep:
      ok = checkCalls(program, problem);
      break;
    }
    if (!ok) {
      error = "section 'calls': " + problem;
      return false;
    }
  }

  describeProgram(program, info);
  info.formatVersion = container.version;
  return true;
}

bool readArtifactInfo(const uint8_t *data, size_t size, ArtifactInfo &info,
                      std::string &error, const ArtifactReadOptions &options) {
  info = ArtifactInfo();
  if (!data && size != 0) {
    error = "no data";
    return false;
  }
  Container container;
  if (!parseContainer(data, size, options, container, error))
    return false;
  std::unique_ptr<ZSTD_DCtx, ZstdDContextDeleter> context;
  if (!createDContext(context, error))
    return false;
  Program program;
  std::vector<uint64_t> dataSizes;
  if (!readHeaderSections(data, container, context.get(), program, info,
                          dataSizes, error))
    return false;
  describeProgram(program, info);
  info.formatVersion = container.version;
  return true;
}

bool writeArtifactFile(const std::string &path, const Program &program,
                       const ArtifactInfo &info, std::string &error,
                       const ArtifactWriteOptions &options) {
  std::vector<uint8_t> bytes;
  if (!writeArtifact(program, info, bytes, error, options)) {
    error = path + ": " + error;
    return false;
  }
  return writeFileAtomically(path, bytes, error);
}

bool writeFileAtomically(const std::string &path,
                         const std::vector<uint8_t> &bytes,
                         std::string &error) {
  return writeFileAtomically(path, bytes.data(), bytes.size(), error);
}

uint64_t maxArtifactFileBytes(const ArtifactReadOptions &options) {
  // Stored sections are never larger than their raw bytes, so a valid file is
  // at most the header, a full table and maxRawBytes.
  uint64_t limit = kHeaderSize + kMaxSections * kSectionEntrySize;
  return limit + std::min(options.maxRawBytes,
                          std::numeric_limits<uint64_t>::max() - limit);
}

bool readArtifactFile(const std::string &path, Program &program,
                      ArtifactInfo &info, std::string &error,
                      const ArtifactReadOptions &options) {
  // A directory, a device or a FIFO is refused before anything is read.
  std::string bytes;
  if (!readRegularFile(path, maxArtifactFileBytes(options), bytes, error))
    return false;
  if (!readArtifact(reinterpret_cast<const uint8_t *>(bytes.data()),
                    bytes.size(), program, info, error, options)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

bool programsEqual(const Program &a, const Program &b,
                   std::string *difference) {
  std::string local;
  std::string *diff = difference ? &local : nullptr;
  bool equal = [&] {
    if (a.target != b.target)
      return differ(diff, "target", quoted(a.target), quoted(b.target));
    if (a.hbmBytes != b.hbmBytes)
      return differInU64(diff, "hbmBytes", a.hbmBytes, b.hbmBytes);
    if (a.numSemaphores != b.numSemaphores)
      return differInU64(diff, "numSemaphores", a.numSemaphores,
                         b.numSemaphores);
    if (a.flops != b.flops)
      return differInU64(diff, "flops", a.flops, b.flops);
    if (a.sbufPeakBytesPerPartition != b.sbufPeakBytesPerPartition)
      return differInU64(diff, "sbufPeakBytesPerPartition",
                         a.sbufPeakBytesPerPartition,
                         b.sbufPeakBytesPerPartition);
    if (a.psumPeakBytesPerPartition != b.psumPeakBytesPerPartition)
      return differInU64(diff, "psumPeakBytesPerPartition",
                         a.psumPeakBytesPerPartition,
                         b.psumPeakBytesPerPartition);
    if (!equalVectors(a.tensors, b.tensors, diff, equalTensor))
      return nested(diff, "tensors");
    if (a.mesh.size() != b.mesh.size())
      return differInU64(diff, "mesh.size", a.mesh.size(), b.mesh.size());
    for (size_t i = 0; i < a.mesh.size(); ++i)
      if (a.mesh[i].name != b.mesh[i].name ||
          a.mesh[i].size != b.mesh[i].size ||
          a.mesh[i].replica != b.mesh[i].replica)
        return differ(diff, ("mesh[" + std::to_string(i) + "]").c_str(),
                      quoted(a.mesh[i].name), quoted(b.mesh[i].name));
    const PipelineFragment &p = a.pipeline, &q = b.pipeline;
    if (p.step != q.step || p.stage != q.stage || p.stages != q.stages ||
        p.microbatches != q.microbatches || p.schedule != q.schedule ||
        p.phase != q.phase || p.axis != q.axis)
      return differ(diff, "pipeline", quoted(p.step + " " + p.phase),
                    quoted(q.step + " " + q.phase));
    for (size_t e = 0; e < a.engineStreams.size(); ++e)
      if (!equalVectors(a.engineStreams[e], b.engineStreams[e], diff,
                        equalInstruction))
        return nested(diff, "engineStreams[" + std::to_string(e) + "]");
    if (!equalVectors(a.dmaQueues, b.dmaQueues, diff,
                      [](const std::vector<Instruction> &x,
                         const std::vector<Instruction> &y, std::string *d) {
                        return equalVectors(x, y, d, equalInstruction);
                      }))
      return nested(diff, "dmaQueues");
    if (a.origins != b.origins)
      return differ(diff, "origins", std::to_string(a.origins.size()),
                    std::to_string(b.origins.size()));
    if (a.subroutines.size() != b.subroutines.size())
      return differ(diff, "subroutines", std::to_string(a.subroutines.size()),
                    std::to_string(b.subroutines.size()));
    for (size_t k = 0; k < a.subroutines.size(); ++k) {
      std::string inner;
      if (!programsEqual(a.subroutines[k], b.subroutines[k], &inner)) {
        if (diff)
          *diff = "subroutines[" + std::to_string(k) + "]." + inner;
        return false;
      }
    }
    if (a.calls.size() != b.calls.size())
      return differ(diff, "calls", std::to_string(a.calls.size()),
                    std::to_string(b.calls.size()));
    for (size_t c = 0; c < a.calls.size(); ++c)
      if (a.calls[c].callee != b.calls[c].callee ||
          a.calls[c].positions != b.calls[c].positions ||
          a.calls[c].arguments != b.calls[c].arguments ||
          a.calls[c].scratch != b.calls[c].scratch)
        return differ(diff, ("calls[" + std::to_string(c) + "]").c_str(), "a",
                      "b");
    return true;
  }();
  if (!equal && difference)
    *difference = std::move(local);
  return equal;
}

} // namespace trnrt
