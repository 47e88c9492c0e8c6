//===- ArtifactSamples.h - Sample programs for artifacts --------*- C++ -*-===//
//
// Programs that set every field of every structure (the round-trip test and
// the fuzzer's seed corpus share them) and a small program for the
// exhaustive damage tests.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_TEST_UNIT_ARTIFACTSAMPLES_H
#define TRN_TEST_UNIT_ARTIFACTSAMPLES_H

#include "trnrt/Artifact.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace trnrt::samples {

inline AccessPattern ap(Memory memory, DType dtype, uint32_t start,
                        uint32_t count, int64_t offset, std::vector<ApDim> dims,
                        int64_t partitionStride = 0) {
  AccessPattern pattern;
  pattern.memory = memory;
  pattern.dtype = dtype;
  pattern.startPartition = start;
  pattern.numPartitions = count;
  pattern.byteOffset = offset;
  pattern.partitionStride = partitionStride;
  pattern.dims = std::move(dims);
  return pattern;
}

inline ScalarOperand column(uint32_t start, int64_t offset) {
  ScalarOperand operand;
  operand.isImmediate = false;
  operand.immediate = -0.0f; // kept bit for bit even when unused
  operand.column =
      ap(Memory::Sbuf, DType::F32, start, 128 - start, offset, {{1, 1}});
  return operand;
}

inline ScalarOperand immediate(float value) {
  ScalarOperand operand;
  operand.immediate = value;
  return operand;
}

/// One instruction of `opcode` with every field away from its default.
inline Instruction everyField(Opcode opcode, int salt) {
  Instruction inst;
  inst.opcode = opcode;
  inst.waits = {
      {uint32_t(salt % 7), salt + 1}, {3, -5}, {0xFFFFFFFFu, INT64_MIN}};
  inst.signal = salt % 11;
  inst.dst = ap(Memory::Psum, DType::F32, 0, 128, 2048 * (salt % 8),
                {{4, 512}, {2, 128}, {8, 16}, {16, 1}});
  inst.srcs = {ap(Memory::Sbuf, DType::BF16, 32, 64, 100, {{512, 1}}),
               ap(Memory::Hbm, DType::F8E4M3FN, 0, 128, INT64_MAX,
                  {{3, -2}, {INT64_MAX, INT64_MIN}}, -7),
               ap(Memory::Sbuf, DType::I1, 127, 1, 0, {})};
  inst.accumulate = true;
  inst.accumulateRow = true;
  inst.reverse0 = true;
  inst.reverse1 = true;
  inst.negate = true;
  inst.indirect = true;
  inst.func = ActivationFunc::GeluTanhDerivative;
  inst.scale = column(1, 4);
  inst.bias = immediate(std::numeric_limits<float>::quiet_NaN());
  inst.reduceDst = ap(Memory::Sbuf, DType::F32, 0, 128, 8, {{1, 1}});
  inst.op0 = AluOp::Pow;
  inst.op1 = AluOp::BitwiseOr;
  inst.scalar0 = immediate(-std::numeric_limits<float>::infinity());
  inst.scalar1 = column(64, 12);
  inst.value = std::numeric_limits<float>::denorm_min();
  inst.base = -123456789012345;
  inst.channelMultiplier = 77;
  inst.steps = {1, -1, 0, INT64_MAX};
  inst.compare = CompareOp::Ne;
  inst.indices = ap(Memory::Sbuf, DType::I64, 0, 128, 64, {{1, 1}});
  inst.meshAxes = 0x80000005u;
  inst.rngStream = 0xFFFFFFFEu;
  inst.bernoulli = true;
  inst.kind = InstructionKind(1 + salt % (kNumInstructionKinds - 1));
  inst.origin = uint32_t(1 + salt % 3); // makeFullProgram has 3 origins
  inst.collectiveShape = {INT64_MAX, -1, 0, salt};
  inst.collectiveDim = INT64_MIN;
  inst.concatDim = -salt - 1;
  inst.shift = INT64_MAX;
  return inst;
}

/// Sets every field of every structure, every opcode (each once with all
/// fields and once bare), every enum value somewhere, 16 DMA queues.
inline Program makeFullProgram() {
  Program program;
  program.target = "trn1";
  program.hbmBytes = (uint64_t(1) << 40) + 3;
  program.numSemaphores = 4096;
  program.origins = {"step: trn.dot_general #0", "step: trn.fusion #1",
                     "step: \xc3\xbcn #2"};
  program.flops = UINT64_MAX;
  program.sbufPeakBytesPerPartition = 180224;
  program.psumPeakBytesPerPartition = 16384;

  const DType dtypes[] = {DType::F32,      DType::BF16,   DType::F16,
                          DType::F8E4M3FN, DType::F8E5M2, DType::I1,
                          DType::I32,      DType::I64};
  const HbmTensor::Kind kinds[] = {
      HbmTensor::Kind::Input, HbmTensor::Kind::Output,
      HbmTensor::Kind::Constant, HbmTensor::Kind::Scratch};
  for (int i = 0; i < 8; ++i) {
    HbmTensor tensor;
    tensor.name = "t" + std::to_string(i) + (i == 3 ? "·ünïcödé✓" : "");
    tensor.dtype = dtypes[i];
    tensor.kind = kinds[i % 4];
    tensor.shape = i == 5 ? std::vector<int64_t>{}
                          : std::vector<int64_t>{i + 1, 0 + 2 * i, 3};
    tensor.offset = uint64_t(i) << 30;
    tensor.aliasesInput = tensor.kind == HbmTensor::Kind::Output ? 0 : -1;
    tensor.role = i % 2 ? "param" : "";
    if (tensor.kind == HbmTensor::Kind::Constant)
      for (int b = 0; b < 40 + i; ++b)
        tensor.data.push_back(uint8_t(b * 37 + i));
    program.tensors.push_back(tensor);
  }
  // A mesh, and shardings (the container's limits only: the validator's
  // rules are not the format's).
  program.mesh = {{"dp", 2, true}, {"tp", INT64_MAX}, {"ünï", 1}};
  program.tensors[0].sharding = {{{0, 2}, 1}, {}, {{1}, INT64_MAX}};
  program.tensors[1].sharding = {{{}, 3}, {{2, 1, 0}, 1}, {{0}, 2}};

  // Opcodes go to the streams of their engines; every opcode appears.
  auto engineOf = [](Opcode opcode) -> int {
    switch (opcode) {
    case Opcode::Matmul:
    case Opcode::Transpose:
      return 0;
    case Opcode::Activation:
      return 2;
    case Opcode::Iota:
    case Opcode::AffineSelect:
      return 3;
    case Opcode::Nop:
    case Opcode::AllReduce:
    case Opcode::AllGather:
    case Opcode::ReduceScatter:
    case Opcode::Send:
    case Opcode::Recv:
    case Opcode::AllSlice:
    case Opcode::AllToAll:
    case Opcode::CollectivePermute:
    case Opcode::AxisIndex:
      return 4;
    case Opcode::DmaCopy:
      return -1;
    default:
      return 1;
    }
  };
  program.dmaQueues.resize(16);
  for (unsigned op = 0; op <= unsigned(kLastOpcode); ++op) {
    Opcode opcode = Opcode(op);
    int engine = engineOf(opcode);
    auto &stream =
        engine < 0 ? program.dmaQueues[op % 16] : program.engineStreams[engine];
    stream.push_back(everyField(opcode, int(op)));
    Instruction bare;
    bare.opcode = opcode;
    stream.push_back(bare);
  }
  // Every enumerator of the smaller enums appears in some instruction.
  for (unsigned f = 0; f <= unsigned(ActivationFunc::Negate); ++f) {
    Instruction inst;
    inst.opcode = Opcode::Activation;
    inst.func = ActivationFunc(f);
    inst.op0 = AluOp(f % (unsigned(AluOp::BitwiseOr) + 1));
    inst.op1 = AluOp((f + 7) % (unsigned(AluOp::BitwiseOr) + 1));
    inst.compare = CompareOp(f % (unsigned(CompareOp::Ge) + 1));
    inst.dst.memory = Memory(f % 3);
    inst.dst.dtype = DType(f % 8);
    program.engineStreams[2].push_back(inst);
  }
  // Queue 9 stays empty: an empty queue must round trip too.
  program.dmaQueues[9].clear();
  for (unsigned q = 0; q < 16; ++q)
    if (q != 9)
      program.dmaQueues[q].push_back(everyField(Opcode::DmaCopy, int(q)));
  return program;
}

inline ArtifactInfo makeInfo() {
  ArtifactInfo info;
  info.compilerVersion = "trn-cc 0.1.0 (test)";
  info.cacheKey = "MODULE_0123456789abcdef0123456789abcdef+f00d";
  info.estimatedDeviceTimeNs = 1234567.5;
  info.report["kernels"] = "[{\"name\": \"mlp\", \"instructions\": 42}]";
  info.report["auto-cast"] = "matmul";
  info.report["empty"] = "";
  info.report["ünï"] = "cödé\n\ttabs and newlines are fine";
  return info;
}

/// A small program for the exhaustive damage tests.
inline Program makeSmallProgram() {
  Program program;
  program.numSemaphores = 2;
  program.hbmBytes = 4096;
  HbmTensor input;
  input.name = "x";
  input.kind = HbmTensor::Kind::Input;
  input.shape = {4, 4};
  HbmTensor weight;
  weight.name = "w";
  weight.kind = HbmTensor::Kind::Constant;
  weight.shape = {2};
  weight.offset = 64;
  weight.data = {1, 2, 3, 4, 5, 6, 7, 8};
  HbmTensor output = input;
  output.name = "y";
  output.kind = HbmTensor::Kind::Output;
  output.offset = 128;
  output.aliasesInput = 0;
  program.tensors = {input, weight, output};

  Instruction load;
  load.opcode = Opcode::DmaCopy;
  load.dst = ap(Memory::Sbuf, DType::F32, 0, 4, 0, {{4, 1}});
  load.srcs = {ap(Memory::Hbm, DType::F32, 0, 4, 0, {{4, 1}}, 4)};
  load.signal = 0;
  program.dmaQueues = {{load}};
  Instruction act;
  act.opcode = Opcode::Activation;
  act.func = ActivationFunc::Exp;
  act.waits = {{0, 1}};
  act.dst = load.dst;
  act.srcs = {load.dst};
  act.signal = 1;
  program.engineStreams[2] = {act};
  Instruction store = load;
  store.waits = {{1, 1}};
  store.signal = -1;
  std::swap(store.dst, store.srcs[0]);
  program.engineStreams[4] = {store};
  return program;
}

} // namespace trnrt::samples

#endif // TRN_TEST_UNIT_ARTIFACTSAMPLES_H
