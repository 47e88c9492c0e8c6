//===- ProgramBuilder.h - Hand-built programs for runtime tests -*- C++ -*-===//
//
// Access patterns, instructions and a builder of programs whose instructions
// run one after the other (semaphore 0 counts completed steps): data enters
// through DMA from HBM inputs and leaves through DMA to HBM outputs. Shared
// by the simulator's and the runtime API's tests.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_TEST_UNIT_PROGRAMBUILDER_H
#define TRN_TEST_UNIT_PROGRAMBUILDER_H

#include "trnrt/Artifact.h"
#include "trnrt/Isa.h"
#include "trnrt/Simulator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trnrt::test_programs {

constexpr unsigned kTensorStream = 0, kVectorStream = 1, kScalarStream = 2,
                   kGpSimdStream = 3, kSyncStream = 4, kDmaStream = 5;

inline AccessPattern onChip(Memory memory, DType dtype, unsigned partitions,
                            std::vector<ApDim> dims, int64_t byteOffset = 0,
                            unsigned startPartition = 0) {
  AccessPattern ap;
  ap.memory = memory;
  ap.dtype = dtype;
  ap.numPartitions = partitions;
  ap.startPartition = startPartition;
  ap.byteOffset = byteOffset;
  ap.dims = std::move(dims);
  return ap;
}

/// A [P, F] SBUF tile with contiguous free elements.
inline AccessPattern sbuf(DType dtype, unsigned partitions, int64_t free,
                          int64_t byteOffset = 0, unsigned startPartition = 0) {
  return onChip(Memory::Sbuf, dtype, partitions, {{free, 1}}, byteOffset,
                startPartition);
}

inline AccessPattern psum(DType dtype, unsigned partitions, int64_t free,
                          int64_t byteOffset = 0, unsigned startPartition = 0) {
  return onChip(Memory::Psum, dtype, partitions, {{free, 1}}, byteOffset,
                startPartition);
}

inline ScalarOperand column(AccessPattern ap) {
  ScalarOperand scalar;
  scalar.isImmediate = false;
  scalar.column = std::move(ap);
  return scalar;
}

inline ScalarOperand immediate(float value) {
  ScalarOperand scalar;
  scalar.immediate = value;
  return scalar;
}

inline Instruction make(Opcode opcode, AccessPattern dst,
                        std::vector<AccessPattern> srcs = {}) {
  Instruction inst;
  inst.opcode = opcode;
  inst.dst = std::move(dst);
  inst.srcs = std::move(srcs);
  return inst;
}

/// Builds a program whose instructions run one after the other.
struct Builder {
  Program program;
  int64_t steps = 0;

  Builder() {
    program.target = "trn1";
    program.numSemaphores = 1;
    program.dmaQueues.resize(1);
  }

  void tensor(const std::string &name, DType dtype, std::vector<int64_t> shape,
              HbmTensor::Kind kind = HbmTensor::Kind::Input) {
    HbmTensor tensor;
    tensor.name = name;
    tensor.dtype = dtype;
    tensor.shape = std::move(shape);
    tensor.kind = kind;
    tensor.offset = (program.hbmBytes + 63) / 64 * 64;
    uint64_t bytes = dtypeSizeInBytes(dtype);
    for (int64_t dim : tensor.shape)
      bytes *= uint64_t(dim);
    program.hbmBytes = tensor.offset + bytes;
    program.tensors.push_back(std::move(tensor));
  }

  const HbmTensor &find(const std::string &name) const {
    for (const HbmTensor &tensor : program.tensors)
      if (tensor.name == name)
        return tensor;
    ADD_FAILURE() << "no tensor " << name;
    return program.tensors.front();
  }

  /// The tensor as [rows, columns] rows on partitions (1-D: one row).
  AccessPattern hbm(const std::string &name) const {
    const HbmTensor &tensor = find(name);
    int64_t rows = tensor.shape.size() > 1 ? tensor.shape[0] : 1;
    int64_t columns = 1;
    for (size_t i = tensor.shape.size() > 1 ? 1 : 0; i < tensor.shape.size();
         ++i)
      columns *= tensor.shape[i];
    AccessPattern ap;
    ap.memory = Memory::Hbm;
    ap.dtype = tensor.dtype;
    ap.byteOffset = int64_t(tensor.offset);
    ap.numPartitions = unsigned(rows);
    ap.partitionStride = columns;
    ap.dims = {{columns, 1}};
    return ap;
  }

  /// Appends `inst` to `stream`, ordered after every earlier step.
  void add(unsigned stream, Instruction inst) {
    inst.waits.push_back({0, steps});
    inst.signal = 0;
    ++steps;
    if (stream < kNumEngineStreams)
      program.engineStreams[stream].push_back(std::move(inst));
    else
      program.dmaQueues[stream - kNumEngineStreams].push_back(std::move(inst));
  }

  void dma(AccessPattern dst, AccessPattern src) {
    add(kDmaStream, make(Opcode::DmaCopy, std::move(dst), {std::move(src)}));
  }
};

//===----------------------------------------------------------------------===//
// Artifacts for the runtime API's tests
//===----------------------------------------------------------------------===//

/// The program as artifact bytes.
inline std::vector<uint8_t> artifactOf(const Builder &builder) {
  ArtifactInfo info;
  info.compilerVersion = "trnrt-api-test";
  std::vector<uint8_t> bytes;
  std::string error;
  EXPECT_TRUE(writeArtifact(builder.program, info, bytes, error)) << error;
  return bytes;
}

/// y = exp(x) on a [4, 8] fp32 tensor: DMA in, one activation, DMA out.
inline std::vector<uint8_t> expArtifact() {
  Builder b;
  b.tensor("x", DType::F32, {4, 8});
  b.tensor("y", DType::F32, {4, 8}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::F32, 4, 8, 0), b.hbm("x"));
  Instruction exp = make(Opcode::Activation, sbuf(DType::F32, 4, 8, 64),
                         {sbuf(DType::F32, 4, 8, 0)});
  exp.func = ActivationFunc::Exp;
  b.add(kScalarStream, exp);
  b.dma(b.hbm("y"), sbuf(DType::F32, 4, 8, 64));
  return artifactOf(b);
}

/// rows = table[idx] for a [5, 3] fp32 table and 4 i32 indices: an indirect
/// gather whose indices, data known only at run time, may be out of range.
inline std::vector<uint8_t> gatherArtifact() {
  Builder b;
  b.tensor("table", DType::F32, {5, 3});
  b.tensor("idx", DType::I32, {4, 1});
  b.tensor("rows", DType::F32, {4, 3}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::I32, 4, 1, 0), b.hbm("idx"));
  Instruction gather =
      make(Opcode::DmaCopy, sbuf(DType::F32, 4, 3, 64), {b.hbm("table")});
  gather.indirect = true;
  gather.indices = sbuf(DType::I32, 4, 1, 0);
  b.add(kDmaStream, gather);
  b.dma(b.hbm("rows"), sbuf(DType::F32, 4, 3, 64));
  return artifactOf(b);
}

} // namespace trnrt::test_programs

#endif // TRN_TEST_UNIT_PROGRAMBUILDER_H
