//===- IsaTest.cpp - target tables, ISA names, validator, deadlock check --===//
//
// One minimal violating instruction or program per rule of docs/isa.md,
// checking the exact message; valid programs pass; the deadlock checker
// finds cycles and unreachable values and passes correct chains.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Isa.h"
#include "trnrt/IsaValidate.h"
#include "trnrt/Target.h"

#include "ProgramBuilder.h"

#include <gtest/gtest.h>

#include <string>

using namespace trnrt;

namespace {

const Target &trn1() { return trn1Target(); }
const Target &trn2() { return *lookupTarget("trn2"); }

using test_programs::column;
using test_programs::make;
using test_programs::onChip;
using test_programs::psum;
using test_programs::sbuf;

/// `rows` rows of `free` contiguous elements in HBM.
AccessPattern hbm(DType dtype, uint32_t rows, int64_t free,
                  int64_t byteOffset = 0) {
  AccessPattern ap;
  ap.memory = Memory::Hbm;
  ap.dtype = dtype;
  ap.numPartitions = rows;
  ap.partitionStride = free;
  ap.byteOffset = byteOffset;
  ap.dims = {{free, 1}};
  return ap;
}

/// A whole contiguous HBM tensor of `elements` (a collective's operand).
AccessPattern whole(DType dtype, uint32_t elements, int64_t byteOffset = 0) {
  AccessPattern ap = hbm(dtype, elements, 1, byteOffset);
  ap.partitionStride = 1;
  return ap;
}

Instruction validMatmul() {
  return make(Opcode::Matmul, psum(DType::F32, 128, 512),
              {sbuf(DType::BF16, 128, 128), sbuf(DType::BF16, 128, 512, 256)});
}

Instruction validCopy(AccessPattern dst, AccessPattern src) {
  return make(Opcode::TensorCopy, std::move(dst), {std::move(src)});
}

/// Validates on trn1 and returns the error ("" when valid).
std::string check(const Instruction &inst, Engine engine,
                  const Target &target = trn1Target()) {
  std::string error;
  bool ok = validateInstruction(inst, engine, target, error);
  EXPECT_EQ(ok, error.empty()) << error;
  return ok ? std::string() : error;
}

std::string checkProgram(const Program &program,
                         const Target &target = trn1Target()) {
  std::string error;
  bool ok = validateProgram(program, target, error);
  EXPECT_EQ(ok, error.empty()) << error;
  return ok ? std::string() : error;
}

std::string checkDeadlock(const Program &program) {
  std::string error;
  bool ok = checkSemaphoresCanComplete(program, error);
  EXPECT_EQ(ok, error.empty()) << error;
  return ok ? std::string() : error;
}

Instruction withSync(Instruction inst, std::vector<SemaphoreWait> waits,
                     int32_t signal) {
  inst.waits = std::move(waits);
  inst.signal = signal;
  return inst;
}

Instruction nop(std::vector<SemaphoreWait> waits = {}, int32_t signal = -1) {
  return withSync(Instruction(), std::move(waits), signal);
}

std::vector<Instruction> &stream(Program &program, Engine engine) {
  return program.engineStreams[size_t(engine)];
}

//===----------------------------------------------------------------------===//
// Names, access patterns, targets
//===----------------------------------------------------------------------===//

TEST(IsaNames, EnginesAndOpcodes) {
  EXPECT_STREQ(engineName(Engine::Tensor), "tensor");
  EXPECT_STREQ(engineName(Engine::GpSimd), "gpsimd");
  EXPECT_STREQ(engineName(Engine::Dma), "dma");
  EXPECT_STREQ(engineName(Engine(99)), "?");
  EXPECT_STREQ(opcodeName(Opcode::Matmul), "matmul");
  EXPECT_STREQ(opcodeName(Opcode::TensorTensor), "tensor_tensor");
  EXPECT_STREQ(opcodeName(Opcode::BnAggr), "bn_aggr");
  EXPECT_STREQ(opcodeName(Opcode::AffineSelect), "affine_select");
  EXPECT_STREQ(opcodeName(Opcode::DmaCopy), "dma_copy");
  EXPECT_STREQ(opcodeName(Opcode::Recv), "recv");
  EXPECT_STREQ(opcodeName(Opcode::Rng), "rng");
  EXPECT_STREQ(opcodeName(Opcode(200)), "?");
  // Every opcode has its own name.
  for (unsigned a = 0; a <= unsigned(kLastOpcode); ++a)
    for (unsigned b = a + 1; b <= unsigned(kLastOpcode); ++b)
      EXPECT_STRNE(opcodeName(Opcode(a)), opcodeName(Opcode(b)));
  EXPECT_STREQ(memoryName(Memory::Psum), "PSUM");
  EXPECT_STREQ(aluOpName(AluOp::IsGreaterEqual), "is_greater_equal");
  EXPECT_STREQ(activationFuncName(ActivationFunc::GeluTanh), "gelu_tanh");
  EXPECT_STREQ(compareOpName(CompareOp::Le), "le");
  EXPECT_EQ(streamName(0), "tensor stream");
  EXPECT_EQ(streamName(4), "sync stream");
  EXPECT_EQ(streamName(7), "dma queue 2");
}

TEST(IsaAccessPattern, FreeElements) {
  AccessPattern ap = onChip(Memory::Sbuf, DType::F32, 1, {{4, 8}, {8, 1}});
  EXPECT_EQ(ap.freeElements(), 32);
  ap.dims = {};
  EXPECT_EQ(ap.freeElements(), 1);
  ap.dims = {{3, 1}, {0, 1}};
  EXPECT_EQ(ap.freeElements(), 0);
  ap.dims = {{65535, 1}, {65535, 1}, {65535, 1}, {65535, 1}};
  EXPECT_EQ(ap.freeElements(), INT64_MAX); // saturates instead of wrapping
}

TEST(IsaAccessPattern, ByteExtent) {
  int64_t begin = 0, end = 0;
  AccessPattern ap = onChip(Memory::Sbuf, DType::BF16, 4, {{4, 8}, {8, 1}}, 64);
  ASSERT_TRUE(accessByteExtent(ap, begin, end));
  EXPECT_EQ(begin, 64);
  EXPECT_EQ(end, 64 + 2 * (3 * 8 + 7 + 1));
  ap.dims = {{4, -8}};
  ASSERT_TRUE(accessByteExtent(ap, begin, end));
  EXPECT_EQ(begin, 64 - 2 * 24);
  EXPECT_EQ(end, 66);
  AccessPattern rows = hbm(DType::F32, 3, 10, 100);
  ASSERT_TRUE(accessByteExtent(rows, begin, end));
  EXPECT_EQ(begin, 100);
  EXPECT_EQ(end, 100 + 4 * 30);
  rows.dims[0].size = 0;
  EXPECT_FALSE(accessByteExtent(rows, begin, end));
}

TEST(IsaTarget, Trn1Table) {
  const Target &t = trn1();
  EXPECT_STREQ(t.name, "trn1");
  EXPECT_EQ(lookupTarget("trn1"), &t);
  EXPECT_EQ(lookupTarget("trn3"), nullptr);
  EXPECT_EQ(lookupTarget(""), nullptr);
  EXPECT_EQ(t.partitions, 128u);
  EXPECT_EQ(t.sbufBytesPerPartition * t.partitions, 24ull << 20);
  EXPECT_EQ(t.sbufUsableBytesPerPartition, 176u * 1024);
  EXPECT_EQ(t.psumBytesPerPartition * t.partitions, 2ull << 20);
  EXPECT_EQ(t.psumBanks * t.psumBankBytes, t.psumBytesPerPartition);
  EXPECT_EQ(t.psumBankBytes / 4, t.matmulMaxMovingFree);
  EXPECT_EQ(t.hbmBytesPerCore, 16ull << 30);
  EXPECT_EQ(t.matmulMaxK, 128u);
  EXPECT_EQ(t.matmulMaxStationaryFree, 128u);
  EXPECT_EQ(t.matmulInitCycles, 64u);
  EXPECT_EQ(t.fp32MatmulFactor, 4u);
  EXPECT_DOUBLE_EQ(t.tensorClockGHz, 2.8);
  EXPECT_DOUBLE_EQ(t.vectorClockGHz, 1.12);
  EXPECT_DOUBLE_EQ(t.scalarClockGHz, 1.4);
  EXPECT_DOUBLE_EQ(t.gpsimdClockGHz, 1.4);
  EXPECT_NEAR(t.peakBf16Tflops(), 91.75, 0.01);
  EXPECT_EQ(t.minInitiationInterval, 64u);
  EXPECT_EQ(t.gpsimdStartCycles, 150u);
  EXPECT_EQ(t.bnStatsMaxFree, 512u);
  EXPECT_EQ(t.dmaEngines, 16u);
  EXPECT_EQ(t.dmaQueues, 16u);
  EXPECT_DOUBLE_EQ(t.dmaBytesPerNsPerEngine * t.dmaEngines, 272.0);
  EXPECT_EQ(t.maxApDims, 4u);
  EXPECT_EQ(t.maxApSize, 65535);
  EXPECT_EQ(t.minApStride, -32768);
  EXPECT_EQ(t.maxApStride, 32767);
  EXPECT_TRUE(t.vectorGpsimdShareSbufPort);
  EXPECT_TRUE(t.vectorScalarSharePsumPort);
  EXPECT_FALSE(t.activationImmediateBias);
  EXPECT_FALSE(t.nativeInt64);
}

TEST(IsaTarget, Trn2Table) {
  const Target *t = lookupTarget("trn2");
  ASSERT_NE(t, nullptr);
  EXPECT_STREQ(t->name, "trn2");
  EXPECT_EQ(t->sbufBytesPerPartition, 224u * 1024);
  EXPECT_EQ(t->psumBytesPerPartition, trn1().psumBytesPerPartition);
  EXPECT_EQ(t->hbmBytesPerCore, 12ull << 30);
  EXPECT_DOUBLE_EQ(t->tensorClockGHz, 2.4);
  EXPECT_DOUBLE_EQ(t->vectorClockGHz, 0.96);
  EXPECT_NEAR(t->peakBf16Tflops(), 78.6, 0.1);
  EXPECT_DOUBLE_EQ(t->dmaBytesPerNsPerEngine, 23.0);
  EXPECT_FALSE(t->vectorGpsimdShareSbufPort);
  EXPECT_TRUE(t->activationImmediateBias);
  EXPECT_TRUE(t->bitExactTranspose);
  EXPECT_TRUE(t->nativeInt64);
}

//===----------------------------------------------------------------------===//
// Valid instructions
//===----------------------------------------------------------------------===//

TEST(IsaValidate, ValidInstructionsPass) {
  EXPECT_EQ(check(validMatmul(), Engine::Tensor), "");
  Instruction fp8 = validMatmul();
  fp8.srcs[0].dtype = DType::F8E4M3FN;
  fp8.srcs[1].dtype = DType::F8E5M2; // mixed narrow inputs are fine
  EXPECT_EQ(check(fp8, Engine::Tensor), "");
  Instruction f32 = validMatmul();
  f32.srcs[0].dtype = f32.srcs[1].dtype = DType::F32;
  f32.srcs[1].byteOffset = 512;
  EXPECT_EQ(check(f32, Engine::Tensor), "");

  EXPECT_EQ(check(make(Opcode::Transpose, psum(DType::F32, 64, 128),
                       {sbuf(DType::BF16, 128, 64)}),
                  Engine::Tensor),
            "");

  Instruction act = make(Opcode::Activation, sbuf(DType::BF16, 128, 512),
                         {psum(DType::F32, 128, 512)});
  act.func = ActivationFunc::Exp;
  act.scale = column(sbuf(DType::F32, 128, 1, 4096));
  act.bias = column(sbuf(DType::F32, 128, 1, 4100));
  act.accumulateRow = true;
  act.reduceDst = sbuf(DType::F32, 128, 1, 4104);
  EXPECT_EQ(check(act, Engine::Scalar), "");

  Instruction add =
      make(Opcode::TensorTensor, sbuf(DType::F32, 128, 512),
           {psum(DType::F32, 128, 512), sbuf(DType::F32, 128, 512)});
  add.op0 = AluOp::Add;
  EXPECT_EQ(check(add, Engine::Vector), "");
  add.srcs[0] = sbuf(DType::I32, 128, 512, 8192);
  add.srcs[1] = sbuf(DType::I32, 128, 512, 16384);
  add.dst.dtype = DType::I32;
  EXPECT_EQ(check(add, Engine::GpSimd), "");
  add.op0 = AluOp::BitwiseAnd;
  EXPECT_EQ(check(add, Engine::Vector), "");

  Instruction ts = make(Opcode::TensorScalar, sbuf(DType::BF16, 32, 100, 0, 96),
                        {sbuf(DType::F32, 32, 100, 0, 32)});
  ts.op0 = AluOp::Subtract;
  ts.scalar0 = column(sbuf(DType::F32, 32, 1, 1024, 64));
  ts.op1 = AluOp::Multiply;
  ts.scalar1.immediate = 0.5f;
  EXPECT_EQ(check(ts, Engine::Vector), "");

  Instruction reduce =
      make(Opcode::TensorReduce, sbuf(DType::F32, 128, 1),
           {onChip(Memory::Sbuf, DType::BF16, 128, {{4, 1024}, {512, 2}}, 64)});
  reduce.op0 = AluOp::Max;
  EXPECT_EQ(check(reduce, Engine::Vector), "");

  EXPECT_EQ(check(validCopy(sbuf(DType::BF16, 64, 256, 0, 64),
                            psum(DType::F32, 64, 256, 2048)),
                  Engine::Vector),
            "");

  EXPECT_EQ(
      check(make(Opcode::Select, sbuf(DType::F32, 128, 64),
                 {sbuf(DType::I1, 128, 64, 256), psum(DType::F32, 128, 64),
                  sbuf(DType::F32, 128, 64, 512)}),
            Engine::Vector),
      "");

  EXPECT_EQ(check(make(Opcode::BnStats, sbuf(DType::F32, 128, 6),
                       {psum(DType::F32, 128, 512)}),
                  Engine::Vector),
            "");
  EXPECT_EQ(check(make(Opcode::BnAggr, sbuf(DType::F32, 128, 2),
                       {sbuf(DType::F32, 128, 12, 64)}),
                  Engine::Vector),
            "");

  Instruction memset = make(Opcode::Memset, psum(DType::F32, 128, 512));
  memset.value = 0.0f;
  EXPECT_EQ(check(memset, Engine::Vector), "");
  memset.dst.memory = Memory::Sbuf;
  EXPECT_EQ(check(memset, Engine::GpSimd), "");

  Instruction iota = make(
      Opcode::Iota, onChip(Memory::Sbuf, DType::I32, 128, {{4, 64}, {64, 1}}));
  iota.steps = {64, 1};
  iota.channelMultiplier = 256;
  EXPECT_EQ(check(iota, Engine::GpSimd), "");

  Instruction mask = make(Opcode::AffineSelect, sbuf(DType::F32, 128, 128),
                          {sbuf(DType::F32, 128, 128, 512)});
  mask.steps = {-1};
  mask.channelMultiplier = 1;
  mask.compare = CompareOp::Ge;
  mask.value = -1e30f;
  EXPECT_EQ(check(mask, Engine::GpSimd), "");

  EXPECT_EQ(check(nop(), Engine::Tensor), "");
  EXPECT_EQ(check(nop(), Engine::Sync), "");
  EXPECT_EQ(check(nop(), Engine::Dma), "");
}

TEST(IsaValidate, ValidDmaForms) {
  // Load, store, SBUF->SBUF, HBM->HBM, a cast, and any partition start.
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::BF16, 128, 512),
                       {hbm(DType::BF16, 128, 512)}),
                  Engine::Dma),
            "");
  EXPECT_EQ(check(make(Opcode::DmaCopy, hbm(DType::F32, 16, 4, 64),
                       {sbuf(DType::BF16, 16, 4, 0, 16)}),
                  Engine::Dma),
            "");
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 3, 8, 0, 5),
                       {sbuf(DType::F32, 3, 8, 1024, 100)}),
                  Engine::Dma),
            "");
  EXPECT_EQ(check(make(Opcode::DmaCopy, hbm(DType::I64, 1, 10, 4096),
                       {hbm(DType::I64, 1, 10)}),
                  Engine::Dma),
            "");
  // A strided HBM view is not limited to int16 strides.
  AccessPattern column = hbm(DType::F32, 128, 1);
  column.partitionStride = 100000;
  column.dims = {{1, 1}};
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 128, 1), {column}),
                  Engine::Dma),
            "");

  // Embedding gather and gradient scatter-add by row index.
  Instruction gather = make(Opcode::DmaCopy, sbuf(DType::F32, 128, 768),
                            {hbm(DType::F32, 30522, 768)});
  gather.indirect = true;
  gather.indices = sbuf(DType::I32, 128, 1, 4096);
  EXPECT_EQ(check(gather, Engine::Dma), "");
  Instruction scatter = make(Opcode::DmaCopy, hbm(DType::F32, 30522, 768),
                             {sbuf(DType::F32, 128, 768)});
  scatter.indirect = true;
  scatter.accumulate = true;
  scatter.indices = sbuf(DType::I64, 128, 1, 4096);
  EXPECT_EQ(check(scatter, Engine::Dma), "");
}

//===----------------------------------------------------------------------===//
// Engines, operand counts, memories
//===----------------------------------------------------------------------===//

TEST(IsaValidate, OpcodeOnItsEngine) {
  EXPECT_EQ(check(validMatmul(), Engine::Vector),
            "matmul: cannot run on the vector engine (it runs on the tensor "
            "stream)");
  Instruction act = make(Opcode::Activation, sbuf(DType::F32, 1, 1),
                         {sbuf(DType::F32, 1, 1)});
  EXPECT_EQ(check(act, Engine::Vector),
            "activation: cannot run on the vector engine (it runs on the "
            "scalar stream)");
  Instruction iota = make(Opcode::Iota, sbuf(DType::I32, 1, 4));
  iota.steps = {1};
  EXPECT_EQ(check(iota, Engine::Vector),
            "iota: cannot run on the vector engine (it runs on the gpsimd "
            "stream)");
  Instruction affine = make(Opcode::AffineSelect, sbuf(DType::F32, 1, 4),
                            {sbuf(DType::F32, 1, 4)});
  EXPECT_EQ(check(affine, Engine::Scalar),
            "affine_select: cannot run on the scalar engine (it runs on the "
            "gpsimd stream)");
  Instruction stats =
      make(Opcode::BnStats, sbuf(DType::F32, 1, 6), {sbuf(DType::F32, 1, 8)});
  EXPECT_EQ(check(stats, Engine::GpSimd),
            "bn_stats: cannot run on the gpsimd engine (it runs on the vector "
            "stream)");
  Instruction add = make(Opcode::TensorTensor, sbuf(DType::F32, 1, 1),
                         {sbuf(DType::F32, 1, 1), sbuf(DType::F32, 1, 1)});
  add.op0 = AluOp::Add;
  EXPECT_EQ(check(add, Engine::Scalar),
            "tensor_tensor: cannot run on the scalar engine (it runs on the "
            "vector or gpsimd stream)");
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 1), sbuf(DType::F32, 1, 1)),
                  Engine::Tensor),
            "tensor_copy: cannot run on the tensor engine (it runs on the "
            "vector or gpsimd stream)");
  Instruction dma =
      make(Opcode::DmaCopy, sbuf(DType::F32, 1, 1), {hbm(DType::F32, 1, 1)});
  EXPECT_EQ(check(dma, Engine::Sync),
            "dma_copy: cannot run on the sync engine (it runs on a dma queue)");
  Instruction reduce =
      make(Opcode::AllReduce, whole(DType::F32, 4), {whole(DType::F32, 4, 16)});
  reduce.meshAxes = 1;
  reduce.op0 = AluOp::Add;
  EXPECT_EQ(check(reduce, Engine::Tensor),
            "all_reduce: cannot run on the tensor engine (it runs on the sync "
            "stream)");
  EXPECT_EQ(check(reduce, Engine::Sync), "");
}

TEST(IsaValidate, SourceCount) {
  Instruction matmul = validMatmul();
  matmul.srcs.pop_back();
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: expects 2 sources (stationary, moving), got 1");
  Instruction add = make(Opcode::TensorTensor, sbuf(DType::F32, 1, 1),
                         {sbuf(DType::F32, 1, 1)});
  EXPECT_EQ(check(add, Engine::Vector),
            "tensor_tensor: expects 2 sources (in0, in1), got 1");
  Instruction memset =
      make(Opcode::Memset, sbuf(DType::F32, 1, 1), {sbuf(DType::F32, 1, 1)});
  EXPECT_EQ(check(memset, Engine::Vector),
            "memset: expects 0 sources (none), got 1");
}

TEST(IsaValidate, MemoryPerEngine) {
  Instruction matmul = validMatmul();
  matmul.srcs[1].memory = Memory::Psum;
  matmul.srcs[1].byteOffset = 0;
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: moving is in PSUM; the Tensor Engine reads only SBUF and "
            "writes only PSUM");
  matmul = validMatmul();
  matmul.dst.memory = Memory::Sbuf;
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: dst is in SBUF; the Tensor Engine reads only SBUF and "
            "writes only PSUM");
  EXPECT_EQ(check(make(Opcode::Transpose, psum(DType::F32, 4, 4),
                       {psum(DType::F32, 4, 4, 64)}),
                  Engine::Tensor),
            "transpose: src is in PSUM; the Tensor Engine reads only SBUF and "
            "writes only PSUM");
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 4), psum(DType::F32, 1, 4)),
                  Engine::GpSimd),
            "tensor_copy: src is in PSUM; GpSimd accesses only SBUF, never "
            "PSUM");
  EXPECT_EQ(check(make(Opcode::Memset, psum(DType::F32, 1, 4)), Engine::GpSimd),
            "memset: dst is in PSUM; GpSimd accesses only SBUF, never PSUM");
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 4), hbm(DType::F32, 1, 4)),
                  Engine::Vector),
            "tensor_copy: src is in HBM; Vector and Scalar Engines access only "
            "SBUF and PSUM");
  EXPECT_EQ(check(make(Opcode::DmaCopy, hbm(DType::F32, 1, 4),
                       {psum(DType::F32, 1, 4)}),
                  Engine::Dma),
            "dma_copy: src is in PSUM; DMA moves only between HBM and SBUF, "
            "never PSUM");
  EXPECT_EQ(check(make(Opcode::DmaCopy, psum(DType::F32, 1, 4),
                       {sbuf(DType::F32, 1, 4)}),
                  Engine::Dma),
            "dma_copy: dst is in PSUM; DMA moves only between HBM and SBUF, "
            "never PSUM");
  Instruction reduce =
      make(Opcode::AllReduce, sbuf(DType::F32, 1, 4), {hbm(DType::F32, 1, 4)});
  reduce.meshAxes = 1;
  EXPECT_EQ(check(reduce, Engine::Sync),
            "all_reduce: dst is in SBUF; collectives operate on HBM");
}

//===----------------------------------------------------------------------===//
// Access patterns
//===----------------------------------------------------------------------===//

TEST(IsaValidate, FreeDimCount) {
  AccessPattern five = onChip(Memory::Sbuf, DType::F32, 1,
                              {{2, 16}, {2, 8}, {2, 4}, {2, 2}, {2, 1}});
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 32), five), Engine::Vector),
            "tensor_copy: src access pattern has 5 free dims (1 to 4 allowed)");
  AccessPattern none = onChip(Memory::Sbuf, DType::F32, 1, {});
  EXPECT_EQ(check(validCopy(none, sbuf(DType::F32, 1, 1)), Engine::Vector),
            "tensor_copy: dst access pattern has 0 free dims (1 to 4 allowed)");
  AccessPattern four =
      onChip(Memory::Sbuf, DType::F32, 1, {{2, 8}, {2, 4}, {2, 2}, {2, 1}});
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 16, 64), four), Engine::Vector),
            "");
}

TEST(IsaValidate, SizeRange) {
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 0), sbuf(DType::F32, 1, 0)),
                  Engine::Vector),
            "tensor_copy: src free dim 0 size 0 outside [1, 65535]");
  AccessPattern big = onChip(Memory::Sbuf, DType::F8E4M3FN, 1, {{65536, 1}});
  EXPECT_EQ(check(validCopy(big, big), Engine::Vector),
            "tensor_copy: src free dim 0 size 65536 outside [1, 65535]");
  AccessPattern hbmBig = hbm(DType::F32, 1, 70000);
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 1, 4), {hbmBig}),
                  Engine::Dma),
            "dma_copy: src free dim 0 size 70000 outside [1, 65535]");
}

TEST(IsaValidate, Int16Strides) {
  AccessPattern strided =
      onChip(Memory::Sbuf, DType::BF16, 1, {{2, 40000}, {4, 1}});
  EXPECT_EQ(check(validCopy(sbuf(DType::BF16, 1, 8), strided), Engine::Vector),
            "tensor_copy: src free dim 0 stride 40000 outside int16 [-32768, "
            "32767]");
  strided.dims = {{2, -32769}, {4, 1}};
  strided.byteOffset = 70000;
  EXPECT_EQ(check(validCopy(sbuf(DType::BF16, 1, 8), strided), Engine::Vector),
            "tensor_copy: src free dim 0 stride -32769 outside int16 [-32768, "
            "32767]");
  strided.dims = {{2, -32768}, {4, 1}};
  EXPECT_EQ(check(validCopy(sbuf(DType::BF16, 1, 8), strided), Engine::Vector),
            "");
}

TEST(IsaValidate, PartitionCount) {
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 129, 4), sbuf(DType::F32, 129, 4)),
                  Engine::Vector),
            "tensor_copy: src has 129 partitions (1 to 128 allowed)");
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 0, 4), sbuf(DType::F32, 0, 4)),
                  Engine::Vector),
            "tensor_copy: src has 0 partitions (1 to 128 allowed)");
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 32, 4, 0, 100),
                       {hbm(DType::F32, 32, 4)}),
                  Engine::Dma),
            "dma_copy: dst partitions [100, 132) exceed the 128 partitions");
}

TEST(IsaValidate, StartPartitionRule) {
  auto copyAt = [](uint32_t count, uint32_t start) {
    return check(validCopy(sbuf(DType::F32, count, 4, 0, start),
                           sbuf(DType::F32, count, 4, 64)),
                 Engine::Vector);
  };
  EXPECT_EQ(copyAt(128, 0), "");
  EXPECT_EQ(copyAt(65, 63),
            "tensor_copy: dst starts at partition 63 with 65 partitions (more "
            "than 64 partitions must start at 0)");
  EXPECT_EQ(copyAt(64, 64), "");
  EXPECT_EQ(copyAt(33, 64), "");
  EXPECT_EQ(copyAt(48, 32),
            "tensor_copy: dst starts at partition 32 with 48 partitions (33 to "
            "64 partitions start at 0 or 64)");
  EXPECT_EQ(copyAt(32, 96), "");
  EXPECT_EQ(copyAt(1, 32), "");
  EXPECT_EQ(copyAt(16, 16),
            "tensor_copy: dst starts at partition 16 with 16 partitions (up to "
            "32 partitions start at 0, 32, 64 or 96)");
  // Tensor Engine operands follow the rule too.
  Instruction matmul =
      make(Opcode::Matmul, psum(DType::F32, 16, 16, 0, 8),
           {sbuf(DType::BF16, 64, 16), sbuf(DType::BF16, 64, 16, 64)});
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: dst starts at partition 8 with 16 partitions (up to 32 "
            "partitions start at 0, 32, 64 or 96)");
  // DMA addresses SBUF bytes and may start anywhere.
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 16, 4, 0, 16),
                       {hbm(DType::F32, 16, 4)}),
                  Engine::Dma),
            "");
}

TEST(IsaValidate, HbmRows) {
  AccessPattern shifted = hbm(DType::F32, 4, 4);
  shifted.startPartition = 3;
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 4, 4), {shifted}),
                  Engine::Dma),
            "dma_copy: src is in HBM with startPartition 3 (must be 0: HBM "
            "rows are addressed by partitionStride)");
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 4, 4),
                       {hbm(DType::F32, 0, 4)}),
                  Engine::Dma),
            "dma_copy: src has 0 rows (numPartitions must be at least 1)");
}

TEST(IsaValidate, Alignment) {
  EXPECT_EQ(
      check(validCopy(sbuf(DType::F32, 1, 4, 64), sbuf(DType::F32, 1, 4, 2)),
            Engine::Vector),
      "tensor_copy: src byte offset 2 is not a multiple of 4 (SBUF "
      "alignment for f32)");
  EXPECT_EQ(
      check(validCopy(sbuf(DType::BF16, 1, 4, 64), psum(DType::BF16, 1, 4, 2)),
            Engine::Vector),
      "tensor_copy: src byte offset 2 is not a multiple of 4 (PSUM "
      "alignment for bf16)");
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 1, 4),
                       {hbm(DType::F32, 1, 4, 6)}),
                  Engine::Dma),
            "dma_copy: src byte offset 6 is not a multiple of 4 (HBM alignment "
            "for f32)");
  EXPECT_EQ(
      check(validCopy(sbuf(DType::BF16, 1, 4, 2), sbuf(DType::BF16, 1, 4, 64)),
            Engine::Vector),
      "");
}

TEST(IsaValidate, SbufBounds) {
  // The usable 176 KiB, not the physical 192 KiB.
  EXPECT_EQ(
      check(validCopy(sbuf(DType::F32, 1, 2, 180220), sbuf(DType::F32, 1, 2)),
            Engine::Vector),
      "tensor_copy: dst bytes [180220, 180228) of each partition are "
      "outside SBUF's 180224 usable bytes per partition");
  EXPECT_EQ(
      check(validCopy(sbuf(DType::F32, 1, 1, 180220), sbuf(DType::F32, 1, 1)),
            Engine::Vector),
      "");
  // A negative stride reaches below the byte offset.
  AccessPattern backwards = onChip(Memory::Sbuf, DType::F32, 1, {{4, -1}}, 8);
  EXPECT_EQ(
      check(validCopy(sbuf(DType::F32, 1, 4, 64), backwards), Engine::Vector),
      "tensor_copy: src bytes [-4, 12) of each partition are outside "
      "SBUF's 180224 usable bytes per partition");
  backwards.byteOffset = 12;
  EXPECT_EQ(
      check(validCopy(sbuf(DType::F32, 1, 4, 64), backwards), Engine::Vector),
      "");
  // Usable size differs by target.
  EXPECT_EQ(
      check(validCopy(sbuf(DType::F32, 1, 2, 200000), sbuf(DType::F32, 1, 2)),
            Engine::Vector, trn2()),
      "");
}

TEST(IsaValidate, PsumBanks) {
  EXPECT_EQ(
      check(validCopy(sbuf(DType::F32, 1, 256), psum(DType::F32, 1, 256, 1536)),
            Engine::Vector),
      "tensor_copy: src bytes [1536, 2560) cross the PSUM bank boundary "
      "at 2048 (a PSUM tile stays in one 2048-byte bank)");
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 512),
                            psum(DType::F32, 1, 512, 7 * 2048)),
                  Engine::Vector),
            "");
  EXPECT_EQ(
      check(validCopy(sbuf(DType::F32, 1, 4), psum(DType::F32, 1, 4, 16384)),
            Engine::Vector),
      "tensor_copy: src bytes [16384, 16400) of each partition are "
      "outside PSUM's 16384 bytes per partition");
  Instruction matmul = validMatmul();
  matmul.dst.byteOffset = 1024;
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: dst bytes [1024, 3072) cross the PSUM bank boundary at "
            "2048 (a PSUM tile stays in one 2048-byte bank)");
}

TEST(IsaValidate, HbmBounds) {
  // Alone, HBM is bounded by the core's 16 GiB; in a program by hbmBytes.
  AccessPattern far = hbm(DType::F32, 1, 4, int64_t(16) << 30);
  EXPECT_EQ(
      check(make(Opcode::DmaCopy, sbuf(DType::F32, 1, 4), {far}), Engine::Dma),
      "dma_copy: src bytes [17179869184, 17179869200) are outside the "
      "17179869184 bytes of HBM");
  Program program;
  program.hbmBytes = 4096;
  stream(program, Engine::Sync).push_back(nop());
  program.dmaQueues.resize(1);
  program.dmaQueues[0].push_back(make(
      Opcode::DmaCopy, sbuf(DType::F32, 128, 16), {hbm(DType::F32, 128, 16)}));
  EXPECT_EQ(checkProgram(program),
            "dma queue 0 #0 dma_copy: src bytes [0, 8192) are outside the "
            "4096 bytes of HBM");
  // Rows with a negative stride reach below the base.
  AccessPattern reversed = hbm(DType::F32, 2, 4, 0);
  reversed.partitionStride = -4;
  program.dmaQueues[0][0] =
      make(Opcode::DmaCopy, sbuf(DType::F32, 2, 4), {reversed});
  EXPECT_EQ(checkProgram(program),
            "dma queue 0 #0 dma_copy: src bytes [-16, 16) are outside the "
            "4096 bytes of HBM");
}

TEST(IsaValidate, VectorFreeSize) {
  // Broadcast (stride 0) reads can exceed the element limits within bounds.
  AccessPattern psumBroadcast =
      onChip(Memory::Psum, DType::F32, 1, {{4608, 0}});
  EXPECT_EQ(check(validCopy(onChip(Memory::Sbuf, DType::F32, 1, {{4608, 1}}),
                            psumBroadcast),
                  Engine::Vector),
            "tensor_copy: src has 4608 free elements per partition; the Vector "
            "Engine allows 4096 in PSUM");
  AccessPattern big =
      onChip(Memory::Sbuf, DType::BF16, 1, {{2, 0}, {40000, 1}});
  EXPECT_EQ(check(validCopy(big, big), Engine::Vector),
            "tensor_copy: src has 80000 free elements per partition; the "
            "Vector Engine allows 65536 in SBUF");
  EXPECT_EQ(check(validCopy(big, big), Engine::GpSimd), "");
}

TEST(IsaValidate, AtMostOnePsumInput) {
  Instruction add =
      make(Opcode::TensorTensor, sbuf(DType::F32, 128, 64),
           {psum(DType::F32, 128, 64), psum(DType::F32, 128, 64, 2048)});
  add.op0 = AluOp::Add;
  EXPECT_EQ(check(add, Engine::Vector),
            "tensor_tensor: 2 inputs are in PSUM (at most one input may come "
            "from PSUM)");
  Instruction select =
      make(Opcode::Select, sbuf(DType::F32, 128, 64),
           {sbuf(DType::I32, 128, 64), psum(DType::F32, 128, 64),
            psum(DType::F32, 128, 64, 4096)});
  EXPECT_EQ(check(select, Engine::Vector),
            "select: 2 inputs are in PSUM (at most one input may come from "
            "PSUM)");
}

TEST(IsaValidate, NoInt64OnTrn1Engines) {
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 4), sbuf(DType::I64, 1, 4, 64)),
                  Engine::Vector),
            "tensor_copy: src dtype i64: the vector engine has no int64 on "
            "trn1");
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 4), sbuf(DType::I64, 1, 4, 64)),
                  Engine::Vector, trn2()),
            "");
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 1, 4),
                       {hbm(DType::I64, 1, 4)}),
                  Engine::Dma),
            "dma_copy: casts i64 to f32 (DMA casts through f32; i64 casts need "
            "native int64)");
}

TEST(IsaValidate, UnknownEnumValues) {
  Instruction bad;
  bad.opcode = Opcode(77);
  EXPECT_EQ(check(bad, Engine::Vector), "unknown opcode 77");
  EXPECT_EQ(check(nop(), Engine(9)), "nop: unknown engine 9");
  AccessPattern weird = sbuf(DType::F32, 1, 4);
  weird.memory = Memory(5);
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 4), weird), Engine::Vector),
            "tensor_copy: src has unknown memory kind 5");
  weird = sbuf(DType::F32, 1, 4);
  weird.dtype = DType(40);
  EXPECT_EQ(check(validCopy(sbuf(DType::F32, 1, 4), weird), Engine::Vector),
            "tensor_copy: src has unknown dtype 40");
  Instruction add = make(Opcode::TensorTensor, sbuf(DType::F32, 1, 1),
                         {sbuf(DType::F32, 1, 1), sbuf(DType::F32, 1, 1)});
  add.op0 = AluOp(60);
  EXPECT_EQ(check(add, Engine::Vector),
            "tensor_tensor: op0 is an unknown ALU operator 60");
  Instruction act = make(Opcode::Activation, sbuf(DType::F32, 1, 1),
                         {sbuf(DType::F32, 1, 1)});
  act.func = ActivationFunc(90);
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: unknown activation function 90");
  Instruction mask = make(Opcode::AffineSelect, sbuf(DType::F32, 1, 4),
                          {sbuf(DType::F32, 1, 4)});
  mask.steps = {1};
  mask.compare = CompareOp(9);
  EXPECT_EQ(check(mask, Engine::GpSimd), "affine_select: unknown comparison 9");
}

//===----------------------------------------------------------------------===//
// Tensor Engine
//===----------------------------------------------------------------------===//

TEST(IsaValidate, MatmulShapes) {
  Instruction matmul = validMatmul();
  matmul.srcs[1].dims = {{640, 1}};
  matmul.dst.dims = {{640, 1}};
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: moving free size 640 exceeds 512 (one PSUM bank of fp32)");

  matmul = validMatmul();
  matmul.srcs[0].dims = {{256, 1}};
  matmul.srcs[1].byteOffset = 512;
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: stationary free size 256 exceeds 128 (M, PE columns)");

  matmul = validMatmul();
  matmul.srcs[1].numPartitions = 64;
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: moving has 64 partitions but stationary has 128 (both "
            "hold K on partitions)");

  // K is bounded by the PE rows even where partitions would allow more.
  Target narrow = trn1();
  narrow.matmulMaxK = 64;
  EXPECT_EQ(check(validMatmul(), Engine::Tensor, narrow),
            "matmul: contraction K = 128 partitions exceeds 64 (PE rows)");

  matmul = validMatmul();
  matmul.dst.numPartitions = 64;
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: dst has 64 partitions, expected M = 128 (the stationary "
            "free size)");
  matmul = validMatmul();
  matmul.dst.dims = {{256, 1}};
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: dst has 256 elements per partition, expected N = 512 "
            "(the moving free size)");
}

TEST(IsaValidate, MatmulDTypes) {
  Instruction matmul = validMatmul();
  matmul.srcs[0].dtype = DType::F32;
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: stationary is f32 but moving is bf16 (f32 pairs only with "
            "f32)");
  matmul = validMatmul();
  matmul.srcs[1].dtype = DType::I32;
  matmul.srcs[1].byteOffset = 512;
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: moving dtype i32 is not a Tensor Engine input (f32, bf16, "
            "f16, f8E4M3FN, f8E5M2)");
  matmul = validMatmul();
  matmul.dst.dtype = DType::BF16;
  EXPECT_EQ(check(matmul, Engine::Tensor),
            "matmul: dst dtype bf16 (matmul accumulates and writes f32 in "
            "PSUM)");
}

TEST(IsaValidate, Transpose) {
  EXPECT_EQ(check(make(Opcode::Transpose, psum(DType::F32, 200, 128),
                       {onChip(Memory::Sbuf, DType::BF16, 128,
                               {{2, 100}, {100, 1}})}),
                  Engine::Tensor),
            "transpose: src free size 200 exceeds 128 (transpose is at most "
            "[128, 128])");
  EXPECT_EQ(check(make(Opcode::Transpose, psum(DType::F32, 32, 128),
                       {sbuf(DType::BF16, 128, 64)}),
                  Engine::Tensor),
            "transpose: dst has 32 partitions, expected 64 (the src free "
            "size)");
  EXPECT_EQ(check(make(Opcode::Transpose, psum(DType::F32, 64, 64),
                       {sbuf(DType::BF16, 128, 64)}),
                  Engine::Tensor),
            "transpose: dst has 64 elements per partition, expected 128 (the "
            "src partitions)");
  EXPECT_EQ(check(make(Opcode::Transpose, psum(DType::F32, 4, 4),
                       {sbuf(DType::I32, 4, 4)}),
                  Engine::Tensor),
            "transpose: src dtype i32 is not a Tensor Engine input (f32, bf16, "
            "f16, f8E4M3FN, f8E5M2)");
  Instruction keep = make(Opcode::Transpose, psum(DType::BF16, 64, 128),
                          {sbuf(DType::BF16, 128, 64)});
  EXPECT_EQ(check(keep, Engine::Tensor),
            "transpose: dst dtype bf16 for bf16 src (trn1 transposes by "
            "identity matmul and writes f32)");
  EXPECT_EQ(check(keep, Engine::Tensor, trn2()), "");
  keep.dst.dtype = DType::F16;
  EXPECT_EQ(check(keep, Engine::Tensor, trn2()),
            "transpose: dst dtype f16 for bf16 src (trn2 writes f32 or the src "
            "dtype)");
}

//===----------------------------------------------------------------------===//
// Scalar Engine
//===----------------------------------------------------------------------===//

Instruction validActivation() {
  Instruction act = make(Opcode::Activation, sbuf(DType::BF16, 128, 512),
                         {sbuf(DType::F32, 128, 512, 4096)});
  act.func = ActivationFunc::Gelu;
  return act;
}

TEST(IsaValidate, ActivationOperands) {
  EXPECT_EQ(check(validActivation(), Engine::Scalar), "");
  Instruction act = validActivation();
  act.dst.dims = {{256, 1}};
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: dst has 256 elements per partition but src has 512");
  act = validActivation();
  act.scale = column(psum(DType::F32, 128, 1));
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: scale column is in PSUM; per-partition scalars are "
            "read from SBUF");
  act = validActivation();
  act.bias = column(sbuf(DType::BF16, 128, 1, 8192));
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: bias column dtype bf16 (per-partition scalars are "
            "f32)");
  act = validActivation();
  act.bias = column(sbuf(DType::F32, 64, 1, 8192));
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: bias column has 64 partitions, the data has 128");
  act = validActivation();
  act.scale = column(sbuf(DType::F32, 128, 2, 8192));
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: scale column has 2 elements per partition (a [P, 1] "
            "column has 1)");
}

TEST(IsaValidate, ActivationBias) {
  Instruction act = validActivation();
  act.bias.immediate = 0.5f;
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: immediate bias 0.5 on trn1 (bias must be a [P, 1] "
            "column; only 0 may be immediate)");
  EXPECT_EQ(check(act, Engine::Scalar, trn2()), "");

  act = validActivation();
  act.func = ActivationFunc::Reciprocal;
  EXPECT_EQ(check(act, Engine::Scalar), ""); // no bias
  act.bias = column(sbuf(DType::F32, 128, 1, 8192));
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: reciprocal takes no bias on trn1");
  EXPECT_EQ(check(act, Engine::Scalar, trn2()), "");
}

TEST(IsaValidate, ActivationRowSums) {
  Instruction act = validActivation();
  act.accumulateRow = true;
  act.reduceDst = sbuf(DType::BF16, 128, 1, 8192);
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: reduce dst dtype bf16 (row sums are f32)");
  act.reduceDst = sbuf(DType::F32, 128, 2, 8192);
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: reduce dst has 2 elements per partition (a [P, 1] "
            "column has 1)");
  act.reduceDst = sbuf(DType::F32, 64, 1, 8192);
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: reduce dst has 64 partitions, the data has 128");
  act.reduceDst = psum(DType::F32, 128, 1);
  EXPECT_EQ(check(act, Engine::Scalar), "");
  act.reduceDst.memory = Memory::Hbm;
  EXPECT_EQ(check(act, Engine::Scalar),
            "activation: reduce dst is in HBM; Vector and Scalar Engines "
            "access only SBUF and PSUM");
}

//===----------------------------------------------------------------------===//
// Vector and GpSimd
//===----------------------------------------------------------------------===//

Instruction binary(AluOp op, DType dtype = DType::F32) {
  Instruction inst =
      make(Opcode::TensorTensor, sbuf(dtype, 128, 64),
           {sbuf(dtype, 128, 64, 256), sbuf(dtype, 128, 64, 512)});
  inst.op0 = op;
  return inst;
}

TEST(IsaValidate, TensorTensor) {
  Instruction add = binary(AluOp::Add);
  add.srcs[1].dims = {{32, 1}};
  EXPECT_EQ(check(add, Engine::Vector),
            "tensor_tensor: in1 has 32 elements per partition but in0 has 64");
  add = binary(AluOp::Add);
  add.dst.numPartitions = 64;
  EXPECT_EQ(check(add, Engine::Vector),
            "tensor_tensor: dst has 64 partitions but in0 has 128");
  EXPECT_EQ(check(binary(AluOp::Bypass), Engine::Vector),
            "tensor_tensor: op0 is bypass; this instruction needs an operator");
  EXPECT_EQ(check(binary(AluOp::Pow), Engine::Vector),
            "tensor_tensor: op0 pow runs only on GpSimd");
  EXPECT_EQ(check(binary(AluOp::Pow), Engine::GpSimd), "");
  EXPECT_EQ(check(binary(AluOp::Subtract), Engine::GpSimd),
            "tensor_tensor: op0 subtract is not a GpSimd operator (GpSimd: "
            "add, multiply, pow)");
  EXPECT_EQ(check(binary(AluOp::IsLess), Engine::GpSimd),
            "tensor_tensor: op0 is_less is not a GpSimd operator (GpSimd: add, "
            "multiply, pow)");
  EXPECT_EQ(check(binary(AluOp::Multiply), Engine::GpSimd), "");
  EXPECT_EQ(check(binary(AluOp::Divide), Engine::Vector), "");
  EXPECT_EQ(check(binary(AluOp::BitwiseOr), Engine::Vector),
            "tensor_tensor: op0 bitwise_or needs integer operands, got f32");
  EXPECT_EQ(check(binary(AluOp::BitwiseOr, DType::I32), Engine::Vector), "");
  EXPECT_EQ(check(binary(AluOp::BitwiseOr, DType::I32), Engine::GpSimd),
            "tensor_tensor: op0 bitwise_or is not a GpSimd operator (GpSimd: "
            "add, multiply, pow)");
}

TEST(IsaValidate, TensorScalar) {
  Instruction ts = make(Opcode::TensorScalar, sbuf(DType::F32, 128, 64),
                        {sbuf(DType::F32, 128, 64, 256)});
  ts.op0 = AluOp::Multiply;
  ts.scalar0.immediate = 2.0f;
  EXPECT_EQ(check(ts, Engine::Vector), "");
  EXPECT_EQ(check(ts, Engine::GpSimd), "");
  ts.op1 = AluOp::Pow;
  EXPECT_EQ(check(ts, Engine::Vector),
            "tensor_scalar: op1 pow runs only on GpSimd");
  ts.op1 = AluOp::Max;
  EXPECT_EQ(check(ts, Engine::GpSimd),
            "tensor_scalar: op1 max is not a GpSimd operator (GpSimd: add, "
            "multiply, pow)");
  ts.op1 = AluOp::Add;
  ts.scalar1 = column(psum(DType::F32, 128, 1));
  EXPECT_EQ(check(ts, Engine::Vector),
            "tensor_scalar: scalar1 column is in PSUM; per-partition scalars "
            "are read from SBUF");
  // A bypassed operator's scalar is not read.
  ts.op1 = AluOp::Bypass;
  EXPECT_EQ(check(ts, Engine::Vector), "");
  ts.op0 = AluOp::BitwiseAnd;
  EXPECT_EQ(check(ts, Engine::Vector),
            "tensor_scalar: op0 bitwise_and needs integer operands, got f32");
  ts.dst.numPartitions = 32;
  EXPECT_EQ(check(ts, Engine::Vector),
            "tensor_scalar: dst has 32 partitions but src has 128");
}

TEST(IsaValidate, TensorReduce) {
  Instruction reduce = make(Opcode::TensorReduce, sbuf(DType::F32, 128, 1),
                            {sbuf(DType::F32, 128, 512, 64)});
  reduce.op0 = AluOp::Add;
  EXPECT_EQ(check(reduce, Engine::Vector), "");
  EXPECT_EQ(check(reduce, Engine::GpSimd), "");
  reduce.op0 = AluOp::IsEqual;
  EXPECT_EQ(check(reduce, Engine::Vector),
            "tensor_reduce: op0 is_equal is not a reduction (add, subtract, "
            "multiply, max, min, logical_and, logical_or, bitwise_and, "
            "bitwise_or)");
  reduce.op0 = AluOp::Bypass;
  EXPECT_EQ(check(reduce, Engine::Vector),
            "tensor_reduce: op0 is bypass; this instruction needs an operator");
  reduce.op0 = AluOp::Max;
  reduce.dst.dims = {{2, 1}};
  EXPECT_EQ(check(reduce, Engine::Vector),
            "tensor_reduce: dst has 2 elements per partition (the reduction "
            "writes [P, 1])");
  reduce.dst.dims = {{1, 1}};
  reduce.dst.numPartitions = 64;
  EXPECT_EQ(check(reduce, Engine::Vector),
            "tensor_reduce: dst has 64 partitions but src has 128 (reductions "
            "stay in their partition)");
}

TEST(IsaValidate, TensorCopyShape) {
  EXPECT_EQ(
      check(validCopy(sbuf(DType::F32, 128, 8), sbuf(DType::F32, 128, 9, 64)),
            Engine::Vector),
      "tensor_copy: dst has 8 elements per partition but src has 9");
  // Shapes pair by (partition, flattened free index); the dims may differ.
  EXPECT_EQ(
      check(validCopy(onChip(Memory::Sbuf, DType::F32, 128, {{4, 8}, {8, 1}}),
                      sbuf(DType::F32, 128, 32, 256)),
            Engine::Vector),
      "");
}

TEST(IsaValidate, Select) {
  Instruction select =
      make(Opcode::Select, sbuf(DType::F32, 128, 64),
           {sbuf(DType::F32, 128, 64, 256), sbuf(DType::F32, 128, 64, 512),
            sbuf(DType::F32, 128, 64, 768)});
  EXPECT_EQ(check(select, Engine::Vector),
            "select: predicate dtype f32 (predicates are i1, i32 or i64)");
  select.srcs[0].dtype = DType::I32;
  EXPECT_EQ(check(select, Engine::GpSimd), "");
  select.srcs[2].numPartitions = 32;
  EXPECT_EQ(check(select, Engine::Vector),
            "select: on_false has 32 partitions but predicate has 128");
}

TEST(IsaValidate, BnStats) {
  Instruction stats = make(Opcode::BnStats, sbuf(DType::F32, 128, 6),
                           {sbuf(DType::F32, 128, 1024, 64)});
  EXPECT_EQ(check(stats, Engine::Vector),
            "bn_stats: src free size 1024 exceeds 512 (bn_stats_fmax)");
  stats.srcs[0].dims = {{512, 1}};
  EXPECT_EQ(check(stats, Engine::Vector), "");
  stats.dst.dims = {{4, 1}};
  EXPECT_EQ(check(stats, Engine::Vector),
            "bn_stats: dst has 4 elements per partition (bn_stats writes 6)");
  stats.dst.dims = {{6, 1}};
  stats.dst.dtype = DType::BF16;
  EXPECT_EQ(check(stats, Engine::Vector),
            "bn_stats: dst dtype bf16 (statistics are f32)");
  stats.dst.dtype = DType::F32;
  stats.srcs[0].dtype = DType::I32;
  EXPECT_EQ(check(stats, Engine::Vector),
            "bn_stats: src dtype i32 (bn_stats reads floats)");
}

TEST(IsaValidate, BnAggr) {
  Instruction aggr = make(Opcode::BnAggr, sbuf(DType::F32, 128, 2),
                          {sbuf(DType::BF16, 128, 12, 64)});
  EXPECT_EQ(check(aggr, Engine::Vector),
            "bn_aggr: src dtype bf16 (bn_aggr reads f32 bn_stats tuples)");
  aggr.srcs[0].dtype = DType::F32;
  aggr.srcs[0].dims = {{7, 1}};
  EXPECT_EQ(check(aggr, Engine::Vector),
            "bn_aggr: src has 7 elements per partition, not a multiple of 3 "
            "(count, mean, M2 triples)");
  aggr.srcs[0].dims = {{12, 1}};
  aggr.dst.dims = {{3, 1}};
  EXPECT_EQ(check(aggr, Engine::Vector),
            "bn_aggr: dst has 3 elements per partition (bn_aggr writes mean, "
            "var)");
}

TEST(IsaValidate, IotaAndAffineSelect) {
  Instruction iota = make(
      Opcode::Iota, onChip(Memory::Sbuf, DType::I32, 128, {{4, 64}, {64, 1}}));
  iota.steps = {1};
  EXPECT_EQ(check(iota, Engine::GpSimd),
            "iota: has 1 steps for 2 free dims of dst (one step per free dim)");
  Instruction mask = make(Opcode::AffineSelect, sbuf(DType::F32, 128, 128),
                          {sbuf(DType::F32, 128, 128, 512)});
  EXPECT_EQ(check(mask, Engine::GpSimd),
            "affine_select: has 0 steps for 1 free dims of dst (one step per "
            "free dim)");
  mask.steps = {1};
  mask.srcs[0].dims = {{64, 1}};
  EXPECT_EQ(check(mask, Engine::GpSimd),
            "affine_select: dst has 128 elements per partition but on_true has "
            "64");
}

TEST(IsaValidate, Rng) {
  Instruction rng = make(Opcode::Rng, sbuf(DType::F32, 128, 64),
                         {sbuf(DType::I32, 128, 2, 1024)});
  rng.steps = {1};
  rng.scalar1.immediate = 1.0f;
  EXPECT_EQ(check(rng, Engine::Vector), "");
  EXPECT_EQ(check(rng, Engine::GpSimd),
            "rng: cannot run on the gpsimd engine (it runs on the vector "
            "stream)");
  Instruction narrowSeed = rng;
  narrowSeed.srcs[0] = sbuf(DType::I32, 64, 2, 1024);
  EXPECT_EQ(check(narrowSeed, Engine::Vector),
            "rng: seed has 64 partitions but dst has 128 (every partition "
            "reads its own copy)");
  Instruction floatSeed = rng;
  floatSeed.srcs[0] = sbuf(DType::F32, 128, 2, 1024);
  EXPECT_EQ(check(floatSeed, Engine::Vector),
            "rng: seed is f32 with 2 elements per partition (it is 2 int32 "
            "words, low then high, per partition)");
  Instruction intDst = rng;
  intDst.dst.dtype = DType::I32;
  EXPECT_EQ(check(intDst, Engine::Vector),
            "rng: dst dtype i32 (rng writes floats, or an i1 mask)");
  Instruction mask = rng;
  mask.dst.dtype = DType::I1;
  EXPECT_EQ(check(mask, Engine::Vector),
            "rng: a uniform draw cannot be written as i1");
  mask.bernoulli = true;
  mask.value = 16777216.0f;
  EXPECT_EQ(check(mask, Engine::Vector), "");
  mask.value = 0.5f;
  EXPECT_EQ(check(mask, Engine::Vector),
            "rng: Bernoulli threshold 0.5 is not an integer in [0, 2^24]");
  Instruction columnBound = rng;
  columnBound.scalar0.isImmediate = false;
  EXPECT_EQ(check(columnBound, Engine::Vector),
            "rng: uniform bounds are immediates (scalar0 low, scalar1 high)");
}

//===----------------------------------------------------------------------===//
// DMA and collectives
//===----------------------------------------------------------------------===//

TEST(IsaValidate, DmaDirect) {
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 128, 16),
                       {hbm(DType::F32, 64, 16)}),
                  Engine::Dma),
            "dma_copy: dst has 128 partitions but src has 64");
  EXPECT_EQ(check(make(Opcode::DmaCopy, sbuf(DType::F32, 128, 16),
                       {hbm(DType::F32, 128, 32)}),
                  Engine::Dma),
            "dma_copy: dst has 16 elements per partition but src has 32");
  Instruction add = make(Opcode::DmaCopy, hbm(DType::F32, 128, 16),
                         {sbuf(DType::F32, 128, 16)});
  add.accumulate = true;
  EXPECT_EQ(check(add, Engine::Dma),
            "dma_copy: accumulate is only for an indirect scatter into HBM");
}

Instruction validGather() {
  Instruction gather = make(Opcode::DmaCopy, sbuf(DType::F32, 128, 64),
                            {hbm(DType::F32, 1000, 64)});
  gather.indirect = true;
  gather.indices = sbuf(DType::I32, 128, 1, 1024);
  return gather;
}

TEST(IsaValidate, DmaIndirect) {
  EXPECT_EQ(check(validGather(), Engine::Dma), "");
  Instruction gather = validGather();
  gather.srcs[0] = sbuf(DType::F32, 128, 64, 2048);
  EXPECT_EQ(check(gather, Engine::Dma),
            "dma_copy: indirect copy from SBUF to SBUF (indirect DMA gathers "
            "HBM rows into SBUF or scatters SBUF into HBM rows)");
  gather = validGather();
  gather.accumulate = true;
  EXPECT_EQ(check(gather, Engine::Dma),
            "dma_copy: accumulate is only for an indirect scatter into HBM");
  gather = validGather();
  gather.indices.dtype = DType::F32;
  EXPECT_EQ(check(gather, Engine::Dma),
            "dma_copy: indices dtype f32 (row indices are i32 or i64)");
  gather = validGather();
  gather.indices.numPartitions = 64;
  EXPECT_EQ(check(gather, Engine::Dma),
            "dma_copy: indices have 64 partitions but the SBUF side has 128 "
            "(one row index per partition)");
  gather = validGather();
  gather.indices.dims = {{2, 1}};
  EXPECT_EQ(check(gather, Engine::Dma),
            "dma_copy: indices have 2 elements per partition (one row index "
            "per partition)");
  gather = validGather();
  gather.indices.memory = Memory::Hbm;
  EXPECT_EQ(check(gather, Engine::Dma),
            "dma_copy: indices is in HBM; DMA moves only between HBM and SBUF, "
            "never PSUM");
  gather = validGather();
  gather.srcs[0] = hbm(DType::F32, 1000, 32);
  EXPECT_EQ(check(gather, Engine::Dma),
            "dma_copy: HBM rows have 32 elements but the SBUF side has 64 per "
            "partition");
}

TEST(IsaValidate, Collectives) {
  Instruction reduce = make(Opcode::AllReduce, whole(DType::F32, 64),
                            {whole(DType::F32, 64, 256)});
  reduce.op0 = AluOp::Add;
  EXPECT_EQ(check(reduce, Engine::Sync),
            "all_reduce: spans no mesh axis (meshAxes is 0)");
  reduce.meshAxes = 2;
  EXPECT_EQ(check(reduce, Engine::Sync), "");
  EXPECT_EQ(check(reduce, Engine::Dma),
            "all_reduce: cannot run on the dma engine (it runs on the sync "
            "stream)");
  Instruction cast = reduce;
  cast.dst.dtype = DType::BF16;
  EXPECT_EQ(check(cast, Engine::Sync),
            "all_reduce: src is f32 but dst is bf16 (collectives do not cast)");
  Instruction tile = reduce;
  tile.srcs[0] = hbm(DType::F32, 1, 64, 256);
  EXPECT_EQ(check(tile, Engine::Sync),
            "all_reduce: src must be a whole contiguous HBM tensor "
            "(numPartitions = elements, partitionStride 1, one free dim of "
            "size 1)");
  Instruction bad = reduce;
  bad.op0 = AluOp::Multiply;
  EXPECT_EQ(check(bad, Engine::Sync),
            "all_reduce: op0 multiply is not a collective reduction (add, "
            "max, min)");
  bad = reduce;
  bad.op0 = AluOp::Max;
  bad.op1 = AluOp::Divide;
  EXPECT_EQ(check(bad, Engine::Sync),
            "all_reduce: a mean (op1 divide) needs op0 add and a float dtype");
  bad = reduce;
  bad.dst = whole(DType::F32, 32);
  EXPECT_EQ(check(bad, Engine::Sync),
            "all_reduce: src has 64 elements but dst has 32");

  Instruction gather = make(Opcode::AllGather, whole(DType::F32, 100),
                            {whole(DType::F32, 64, 512)});
  gather.meshAxes = 1;
  gather.collectiveShape = {8, 8};
  EXPECT_EQ(check(gather, Engine::Sync),
            "all_gather: dst has 100 elements, not a multiple of src's 64");
  gather.dst = whole(DType::F32, 128);
  EXPECT_EQ(check(gather, Engine::Sync), "");
  gather.collectiveShape = {8, 4};
  EXPECT_EQ(check(gather, Engine::Sync),
            "all_gather: collectiveShape has 32 elements but src has 64");
  gather.collectiveShape = {8, 8};
  gather.collectiveDim = 2;
  EXPECT_EQ(check(gather, Engine::Sync),
            "all_gather: collectiveDim 2 is outside rank 2");
  gather.collectiveShape.clear();
  EXPECT_EQ(check(gather, Engine::Sync),
            "all_gather: needs the local shape of src (collectiveShape)");

  Instruction scatter = make(Opcode::ReduceScatter, whole(DType::F32, 48),
                             {whole(DType::F32, 64, 512)});
  scatter.meshAxes = 1;
  scatter.op0 = AluOp::Add;
  scatter.collectiveShape = {64};
  EXPECT_EQ(check(scatter, Engine::Sync),
            "reduce_scatter: src has 64 elements, not a multiple of dst's 48");
  Instruction toAll = make(Opcode::AllToAll, whole(DType::F32, 64),
                           {whole(DType::F32, 64, 512)});
  toAll.meshAxes = 1;
  toAll.collectiveShape = {8, 8};
  toAll.concatDim = 3;
  EXPECT_EQ(check(toAll, Engine::Sync),
            "all_to_all: concatDim 3 is outside rank 2");
  Instruction index = make(Opcode::AxisIndex, whole(DType::F32, 1));
  index.meshAxes = 1;
  EXPECT_EQ(check(index, Engine::Sync),
            "axis_index: dst is f32; an axis index is i32 or i64");
  index.dst = whole(DType::I32, 1);
  EXPECT_EQ(check(index, Engine::Sync), "");
  Instruction send =
      make(Opcode::Send, AccessPattern(), {whole(DType::F32, 8)});
  send.meshAxes = 1;
  send.peer = 1;
  EXPECT_EQ(check(send, Engine::Sync), "");
  send.meshAxes = 3;
  EXPECT_EQ(check(send, Engine::Sync),
            "send: names more than one mesh axis (a transfer goes along one)");
  Instruction recv = make(Opcode::Recv, whole(DType::F32, 8));
  recv.meshAxes = 1;
  recv.tag = -2;
  EXPECT_EQ(check(recv, Engine::Sync),
            "recv: peer 0 and tag -2 must not be negative");
}

/// A program with one collective on a mesh dp=2, tp=4.
Program meshProgram(Instruction inst) {
  Program program;
  program.mesh = {{"dp", 2}, {"tp", 4}};
  program.hbmBytes = 4096;
  program.engineStreams[size_t(Engine::Sync)].push_back(std::move(inst));
  return program;
}

TEST(IsaValidate, CollectivesAgainstTheMesh) {
  Instruction gather = make(Opcode::AllGather, whole(DType::F32, 128, 1024),
                            {whole(DType::F32, 64)});
  gather.meshAxes = 2; // tp: 4 ranks
  gather.collectiveShape = {64};
  EXPECT_EQ(checkProgram(meshProgram(gather)),
            "sync stream #0 all_gather: dst has 128 elements, not src's 64 "
            "times the group size 4");
  gather.meshAxes = 1; // dp: 2 ranks
  EXPECT_EQ(checkProgram(meshProgram(gather)), "");
  gather.meshAxes = 4; // no third axis
  EXPECT_EQ(checkProgram(meshProgram(gather)),
            "sync stream #0 all_gather: names mesh axis bits 0x4 beyond the 2 "
            "axes of the mesh");
  Instruction slice = make(Opcode::AllSlice, whole(DType::F32, 16),
                           {whole(DType::F32, 48, 1024)});
  slice.meshAxes = 2;
  slice.collectiveShape = {6, 8};
  EXPECT_EQ(checkProgram(meshProgram(slice)),
            "sync stream #0 all_slice: dimension 0 of size 6 does not split "
            "into the group size 4 (dst has 16 of src's 48 elements)");
  Program noMesh = meshProgram(slice);
  noMesh.mesh.clear();
  EXPECT_EQ(checkProgram(noMesh),
            "sync stream #0 all_slice: a collective in a program without a "
            "mesh");

  Program sharded = meshProgram(slice);
  sharded.engineStreams[size_t(Engine::Sync)].clear();
  HbmTensor input;
  input.name = "x";
  input.shape = {4, 8};
  input.sharding = {{{1}, 1}, {{1}, 1}};
  sharded.tensors.push_back(input);
  EXPECT_EQ(checkProgram(sharded),
            "tensor 'x' dimension 1 repeats mesh axis #1 (the mesh has 2 "
            "axes)");
  sharded.tensors[0].sharding = {{{0}, 3}, {}};
  EXPECT_EQ(checkProgram(sharded),
            "tensor 'x' dimension 0 of size 4 cannot be split into 3 blocks");
  sharded.tensors[0].sharding = {{{0, 1}, 2}, {}};
  EXPECT_EQ(checkProgram(sharded), "");
  sharded.mesh.push_back({"dp", 1});
  EXPECT_EQ(checkProgram(sharded), "mesh axis 'dp' appears twice");
}

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

HbmTensor tensor(const std::string &name, HbmTensor::Kind kind,
                 std::vector<int64_t> shape, uint64_t offset,
                 DType dtype = DType::F32) {
  HbmTensor t;
  t.name = name;
  t.kind = kind;
  t.shape = std::move(shape);
  t.offset = offset;
  t.dtype = dtype;
  return t;
}

/// y = x @ w for x [128, 128] and w [128, 512] (bf16), evicted to f32 y:
/// DMA loads on two queues, a matmul, a vector eviction and a DMA store,
/// ordered by semaphores.
Program matmulProgram() {
  Program p;
  p.hbmBytes = 128 * 128 * 2 + 128 * 512 * 2 + 128 * 512 * 4;
  p.tensors = {
      tensor("x", HbmTensor::Kind::Input, {128, 128}, 0, DType::BF16),
      tensor("w", HbmTensor::Kind::Input, {128, 512}, 32768, DType::BF16),
      tensor("y", HbmTensor::Kind::Output, {128, 512}, 163840),
  };
  p.numSemaphores = 3; // 0: loads done, 1: matmul done, 2: evicted
  p.dmaQueues.resize(2);
  p.dmaQueues[0].push_back(
      withSync(make(Opcode::DmaCopy, sbuf(DType::BF16, 128, 128),
                    {hbm(DType::BF16, 128, 128)}),
               {}, 0));
  p.dmaQueues[1].push_back(
      withSync(make(Opcode::DmaCopy, sbuf(DType::BF16, 128, 512, 256),
                    {hbm(DType::BF16, 128, 512, 32768)}),
               {}, 0));
  stream(p, Engine::Tensor).push_back(withSync(validMatmul(), {{0, 2}}, 1));
  stream(p, Engine::Vector)
      .push_back(withSync(validCopy(sbuf(DType::F32, 128, 512, 4096),
                                    psum(DType::F32, 128, 512)),
                          {{1, 1}}, 2));
  p.dmaQueues[0].push_back(
      withSync(make(Opcode::DmaCopy, hbm(DType::F32, 128, 512, 163840),
                    {sbuf(DType::F32, 128, 512, 4096)}),
               {{2, 1}}, -1));
  return p;
}

TEST(IsaProgram, ValidProgramPasses) {
  Program p = matmulProgram();
  EXPECT_EQ(checkProgram(p), "");
  EXPECT_EQ(checkDeadlock(p), "");
  EXPECT_EQ(checkProgram(Program()), "");
  EXPECT_EQ(checkDeadlock(Program()), "");
}

TEST(IsaProgram, InstructionErrorsNameStreamAndIndex) {
  Program p = matmulProgram();
  Instruction &matmul = stream(p, Engine::Tensor)[0];
  matmul.srcs[1].dims = {{640, 1}};
  matmul.dst.dims = {{640, 1}};
  stream(p, Engine::Tensor).insert(stream(p, Engine::Tensor).begin(), nop());
  EXPECT_EQ(checkProgram(p),
            "tensor stream #1 matmul: moving free size 640 exceeds 512 (one "
            "PSUM bank of fp32)");
  p = matmulProgram();
  p.dmaQueues[0][1].srcs[0].memory = Memory::Psum;
  p.dmaQueues[0][1].srcs[0].byteOffset = 0;
  EXPECT_EQ(checkProgram(p),
            "dma queue 0 #1 dma_copy: src is in PSUM; DMA moves only between "
            "HBM and SBUF, never PSUM");
  p = matmulProgram();
  stream(p, Engine::Scalar).push_back(validMatmul());
  EXPECT_EQ(checkProgram(p),
            "scalar stream #0 matmul: cannot run on the scalar engine (it runs "
            "on the tensor stream)");
}

TEST(IsaProgram, TargetAndSizes) {
  Program p = matmulProgram();
  p.target = "trn2";
  EXPECT_EQ(checkProgram(p),
            "program is for target 'trn2' but is checked against trn1");
  EXPECT_EQ(checkProgram(p, trn2()), "");
  p = matmulProgram();
  p.hbmBytes = (uint64_t(16) << 30) + 1;
  EXPECT_EQ(checkProgram(p),
            "program HBM size 17179869185 exceeds the 17179869184 bytes of one "
            "trn1 core");
  p = matmulProgram();
  p.dmaQueues.resize(17);
  EXPECT_EQ(checkProgram(p), "program has 17 DMA queues (at most 16)");
  p.dmaQueues.resize(16);
  EXPECT_EQ(checkProgram(p), "");
}

TEST(IsaProgram, SemaphoreIds) {
  Program p = matmulProgram();
  stream(p, Engine::Vector)[0].waits.push_back({9, 1});
  EXPECT_EQ(checkProgram(p),
            "vector stream #0 tensor_copy: waits on semaphore 9 but the "
            "program has 3 semaphores");
  p = matmulProgram();
  stream(p, Engine::Tensor)[0].signal = 3;
  EXPECT_EQ(checkProgram(p),
            "tensor stream #0 matmul: signals semaphore 3 but the program has "
            "3 semaphores");
  p = matmulProgram();
  stream(p, Engine::Tensor)[0].signal = -2;
  EXPECT_EQ(checkProgram(p),
            "tensor stream #0 matmul: signals semaphore -2 but the program has "
            "3 semaphores");
}

TEST(IsaProgram, HbmTensorLayout) {
  Program p = matmulProgram();
  p.tensors[2].shape = {128, 1024};
  EXPECT_EQ(checkProgram(p),
            "HBM tensor #2 'y' at offset 163840 with 524288 bytes exceeds the "
            "program's HBM size 425984");
  p = matmulProgram();
  p.tensors[1].offset = 32000;
  EXPECT_EQ(checkProgram(p),
            "HBM tensors 'x' [0, 32768) and 'w' [32000, 163072) overlap (only "
            "an output may alias its input)");
  p = matmulProgram();
  p.tensors[1].offset = 32769;
  EXPECT_EQ(checkProgram(p),
            "HBM tensor #1 'w' offset 32769 is not a multiple of 2 (bf16 "
            "alignment)");
  p = matmulProgram();
  p.tensors[0].shape = {-1, 128};
  EXPECT_EQ(checkProgram(p),
            "HBM tensor #0 'x' has a negative or overflowing shape");
  p = matmulProgram();
  p.tensors[1].kind = HbmTensor::Kind::Constant;
  EXPECT_EQ(checkProgram(p),
            "HBM tensor #1 'w' is a constant with 0 bytes of data, expected "
            "131072");
  p.tensors[1].data.assign(131072, 0);
  EXPECT_EQ(checkProgram(p), "");
  // An overlap hidden behind a long earlier tensor is still found.
  p = matmulProgram();
  p.tensors.push_back(tensor("scratch", HbmTensor::Kind::Scratch, {16}, 40000));
  EXPECT_EQ(checkProgram(p),
            "HBM tensors 'w' [32768, 163840) and 'scratch' [40000, 40064) "
            "overlap (only an output may alias its input)");
  // Scratch tensors may share bytes with each other (the compiler places
  // them by liveness), but their region stays clear of everything else.
  p = matmulProgram();
  p.hbmBytes = 600000;
  p.tensors.push_back(tensor("s0", HbmTensor::Kind::Scratch, {64}, 500000));
  p.tensors.push_back(tensor("s1", HbmTensor::Kind::Scratch, {32}, 500064));
  p.tensors.push_back(tensor("s2", HbmTensor::Kind::Scratch, {64}, 500000));
  EXPECT_EQ(checkProgram(p), "");
  p.tensors.push_back(tensor("s3", HbmTensor::Kind::Scratch, {64}, 425920));
  EXPECT_EQ(checkProgram(p),
            "HBM tensors 'y' [163840, 425984) and 's3' [425920, 426176) "
            "overlap (only an output may alias its input)");
}

TEST(IsaProgram, OutputAliasing) {
  // An optimizer step updates a parameter in place.
  Program p;
  p.hbmBytes = 1024;
  p.tensors = {tensor("w", HbmTensor::Kind::Input, {64}, 0),
               tensor("g", HbmTensor::Kind::Input, {64}, 256),
               tensor("w_new", HbmTensor::Kind::Output, {64}, 0)};
  p.tensors[2].aliasesInput = 0;
  EXPECT_EQ(checkProgram(p), "");

  Program shifted = p;
  shifted.tensors[2].offset = 4;
  EXPECT_EQ(checkProgram(shifted),
            "HBM tensor #2 'w_new' aliases input 'w' but does not occupy the "
            "same bytes (offset 4 vs 0, 256 vs 256 bytes)");
  Program notInput = p;
  notInput.tensors[2].aliasesInput = 2;
  EXPECT_EQ(checkProgram(notInput),
            "HBM tensor #2 'w_new' aliases tensor #2, which is not an input");
  Program scratch = p;
  scratch.tensors[2].kind = HbmTensor::Kind::Scratch;
  EXPECT_EQ(checkProgram(scratch),
            "HBM tensor #2 'w_new' is a scratch but aliases an input (only "
            "outputs may)");
  Program twice = p;
  twice.tensors.push_back(tensor("w_again", HbmTensor::Kind::Output, {64}, 0));
  twice.tensors[3].aliasesInput = 0;
  EXPECT_EQ(checkProgram(twice),
            "HBM tensor #3 'w_again' aliases input 'w', already aliased by "
            "tensor #2");
  Program badIndex = p;
  badIndex.tensors[2].aliasesInput = -5;
  EXPECT_EQ(checkProgram(badIndex),
            "HBM tensor #2 'w_new' has invalid alias index -5");
  // An output overlapping an input it does not alias is an error.
  Program unrelated = p;
  unrelated.tensors[2].aliasesInput = -1;
  EXPECT_EQ(checkProgram(unrelated),
            "HBM tensors 'w' [0, 256) and 'w_new' [0, 256) overlap (only an "
            "output may alias its input)");
}

//===----------------------------------------------------------------------===//
// Deadlock check
//===----------------------------------------------------------------------===//

TEST(IsaDeadlock, TwoStreamCycle) {
  Program p;
  p.numSemaphores = 2;
  // Tensor waits for the vector's signal and vice versa.
  stream(p, Engine::Tensor).push_back(nop({{0, 1}}, 1));
  stream(p, Engine::Vector).push_back(nop({{1, 1}}, 0));
  EXPECT_EQ(checkDeadlock(p),
            "deadlock: 2 of 2 streams cannot finish: tensor stream #0 nop "
            "waits for semaphore 0 >= 1 (stays at 0); vector stream #0 nop "
            "waits for semaphore 1 >= 1 (stays at 0)");
}

TEST(IsaDeadlock, CycleAfterProgress) {
  // Work proceeds for a while, then the two streams wait on each other.
  Program p;
  p.numSemaphores = 2;
  std::vector<Instruction> &tensor = stream(p, Engine::Tensor);
  std::vector<Instruction> &vector = stream(p, Engine::Vector);
  for (int i = 1; i <= 3; ++i) {
    tensor.push_back(nop({{1, i - 1}}, 0));
    vector.push_back(nop({{0, i}}, 1));
  }
  tensor.push_back(nop({{1, 5}}, 0)); // vector only ever reaches 4
  vector.push_back(nop({{0, 4}}, 1));
  vector.push_back(nop({{0, 5}}, 1));
  EXPECT_EQ(checkDeadlock(p),
            "deadlock: 2 of 2 streams cannot finish: tensor stream #3 nop "
            "waits for semaphore 1 >= 5 (stays at 3); vector stream #3 nop "
            "waits for semaphore 0 >= 4 (stays at 3)");
}

TEST(IsaDeadlock, ValueNeverReached) {
  Program p = matmulProgram();
  // The store waits for two evictions, but there is only one.
  p.dmaQueues[0][1].waits = {{2, 2}};
  EXPECT_EQ(checkDeadlock(p),
            "deadlock: 1 of 4 streams cannot finish: dma queue 0 #1 dma_copy "
            "waits for semaphore 2 >= 2 (stays at 1, only 1 signals in the "
            "program)");
}

TEST(IsaDeadlock, ProducerConsumerChains) {
  EXPECT_EQ(checkDeadlock(matmulProgram()), "");

  // Double-buffered pipeline: DMA loads tile i into buffer i % 2, the vector
  // engine consumes it, and the DMA waits for the buffer to be free again.
  Program p;
  p.numSemaphores = 2; // 0: tiles loaded, 1: tiles consumed
  p.dmaQueues.resize(1);
  const int tiles = 1000;
  for (int i = 0; i < tiles; ++i) {
    p.dmaQueues[0].push_back(nop({{1, std::max(0, i - 1)}}, 0));
    stream(p, Engine::Vector).push_back(nop({{0, i + 1}}, 1));
  }
  EXPECT_EQ(checkDeadlock(p), "");

  // Several waits on one instruction, signals from many queues.
  Program fanIn;
  fanIn.numSemaphores = 1;
  fanIn.dmaQueues.resize(16);
  for (auto &queue : fanIn.dmaQueues)
    queue.push_back(nop({}, 0));
  stream(fanIn, Engine::Sync).push_back(nop({{0, 16}, {0, 8}}, -1));
  EXPECT_EQ(checkDeadlock(fanIn), "");
  stream(fanIn, Engine::Sync)[0].waits[0].value = 17;
  EXPECT_EQ(checkDeadlock(fanIn),
            "deadlock: 1 of 17 streams cannot finish: sync stream #0 nop "
            "waits for semaphore 0 >= 17 (stays at 16, only 16 signals in the "
            "program)");
}

TEST(IsaDeadlock, OutOfRangeSemaphore) {
  Program p;
  p.numSemaphores = 1;
  stream(p, Engine::GpSimd).push_back(nop({{4, 1}}, -1));
  EXPECT_EQ(checkDeadlock(p),
            "gpsimd stream #0 nop: semaphore out of range (the program has 1)");
}

} // namespace
