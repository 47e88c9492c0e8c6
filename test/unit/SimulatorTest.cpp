//===- SimulatorTest.cpp - The simulated NeuronCore -----------------------===//
//
// Every instruction against hand-computed results on small tiles, rounding on
// writes, fp32 PSUM accumulation, access patterns, bounds and memory errors,
// indirect DMA, deadlocks, and the timing model's basic properties. Programs
// are built by hand: data enters through DMA from HBM inputs, one step after
// the other (semaphore 0 counts completed steps), and leaves through DMA to
// HBM outputs.
//
//===----------------------------------------------------------------------===//

#include "ProgramBuilder.h"

#include "trnrt/Random.h"
#include "trnrt/Simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>

using namespace trnrt;
using namespace trnrt::test_programs;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Outcome {
  bool ok = false;
  std::string error;
  SimulationStats stats;
  std::map<std::string, std::vector<double>> outputs;
};

Outcome run(const Builder &builder,
            const std::map<std::string, std::vector<double>> &inputs,
            SimulatorOptions options = {}) {
  Outcome outcome;
  Simulator sim(trn1Target(), options);
  if (!sim.load(builder.program, outcome.error))
    return outcome;
  for (const auto &[name, values] : inputs)
    if (!sim.writeTensor(name, values.data(), values.size(), outcome.error))
      return outcome;
  if (!sim.run(outcome.stats, outcome.error))
    return outcome;
  for (const HbmTensor &tensor : builder.program.tensors)
    if (tensor.kind == HbmTensor::Kind::Output ||
        tensor.kind == HbmTensor::Kind::Scratch)
      if (!sim.readTensor(tensor.name, outcome.outputs[tensor.name],
                          outcome.error))
        return outcome;
  outcome.ok = true;
  return outcome;
}

double roundBf16(double value) { return roundToDType(value, DType::BF16); }

void expectValues(const std::vector<double> &actual,
                  const std::vector<double> &expected, double tolerance = 0) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i;
    else if (std::isinf(expected[i]))
      EXPECT_EQ(actual[i], expected[i]) << "element " << i;
    else
      EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

/// One Vector/Scalar/GpSimd instruction over [P, F] f32 tiles: inputs "a",
/// "b", "c" are loaded to SBUF offsets 0, 4096, 8192; the result at 12288 is
/// stored to "out" (dtype `outType`).
struct ElementwiseCase {
  unsigned partitions;
  int64_t free;
  DType outType = DType::F32;
  Builder builder;

  ElementwiseCase(unsigned partitions, int64_t free, unsigned inputs,
                  DType inType = DType::F32, DType outType = DType::F32)
      : partitions(partitions), free(free), outType(outType) {
    const char *names[] = {"a", "b", "c"};
    for (unsigned i = 0; i < inputs; ++i) {
      builder.tensor(names[i], inType, {partitions, free});
      builder.dma(sbuf(inType, partitions, free, 4096 * i),
                  builder.hbm(names[i]));
    }
    builder.tensor("out", outType, {partitions, free}, HbmTensor::Kind::Output);
  }

  AccessPattern in(unsigned i, DType dtype = DType::F32) const {
    return sbuf(dtype, partitions, free, 4096 * i);
  }
  AccessPattern out() const { return sbuf(outType, partitions, free, 12288); }

  Outcome finish(unsigned stream, Instruction inst,
                 const std::map<std::string, std::vector<double>> &inputs) {
    builder.add(stream, std::move(inst));
    builder.dma(builder.hbm("out"), out());
    return run(builder, inputs);
  }
};

//===----------------------------------------------------------------------===//
// Memory, DMA, casts
//===----------------------------------------------------------------------===//

TEST(SimulatorTest, DmaRoundTripAndCastToBf16) {
  Builder b;
  b.tensor("x", DType::F32, {2, 4});
  b.tensor("y", DType::BF16, {2, 4}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::BF16, 2, 4), b.hbm("x"));
  b.dma(b.hbm("y"), sbuf(DType::BF16, 2, 4));
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7 in bf16: even -> 1.
  // 1 + 3*2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6: even -> 1 + 2^-6.
  std::vector<double> x = {1.0 + std::ldexp(1, -8),
                           1.0 + 3 * std::ldexp(1, -8),
                           -2.5,
                           1e-3,
                           3.0e38,
                           -0.0,
                           kNaN,
                           65504.0};
  Outcome o = run(b, {{"x", x}});
  ASSERT_TRUE(o.ok) << o.error;
  std::vector<double> expected;
  for (double v : x)
    expected.push_back(roundBf16(float(v)));
  expectValues(o.outputs["y"], expected);
  EXPECT_EQ(o.outputs["y"][0], 1.0);
  EXPECT_EQ(o.outputs["y"][1], 1.0 + std::ldexp(1, -6));
  EXPECT_TRUE(std::signbit(o.outputs["y"][5]));
}

TEST(SimulatorTest, F32WritesMatchEncodeFloat) {
  // writeTensor rounds doubles to f32 as encodeFloat does: random bit
  // patterns (NaNs with payloads among them), exact ties, the subnormal
  // range and overflow.
  std::mt19937_64 random(9);
  std::vector<double> values(4096);
  for (double &v : values) {
    uint64_t bits = random();
    std::memcpy(&v, &bits, 8);
    if (random() % 2) // mostly within f32's range
      v = std::ldexp(double(int64_t(random() % (uint64_t(1) << 40))),
                     int(random() % 300) - 190);
  }
  const double specials[] = {0.0,
                             -0.0,
                             1.0 + std::ldexp(1.0, -24), // tie to even
                             1.0 + 3 * std::ldexp(1.0, -24),
                             std::ldexp(1.0, -150),
                             -std::ldexp(1.5, -149),
                             3.4028235677973366e38,
                             -1e300,
                             INFINITY,
                             -kNaN};
  for (size_t i = 0; i < std::size(specials); ++i)
    values[i] = specials[i];
  // A NaN whose payload survives a plain (float) conversion.
  const uint64_t payloadNaN = 0x7ff4000000000000ull;
  std::memcpy(&values[std::size(specials)], &payloadNaN, 8);
  Builder b;
  b.tensor("x", DType::F32, {64, 64});
  Simulator sim(trn1Target());
  std::string error;
  ASSERT_TRUE(sim.load(b.program, error)) << error;
  ASSERT_TRUE(sim.writeTensor("x", values.data(), values.size(), error));
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(sim.readTensorBytes("x", bytes, error));
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, bytes.data() + 4 * i, 4);
    ASSERT_EQ(bits, encodeFloat(values[i], DType::F32)) << values[i];
  }
}

TEST(SimulatorTest, NarrowFloatWritesMatchEncodeFloat) {
  // f32 -> f16 / fp8 casts in the DMA path agree with Numerics' rounding
  // (including subnormals, overflow and e4m3 saturation).
  std::mt19937 random(7);
  std::vector<double> values;
  for (int i = 0; i < 4096; ++i) {
    uint32_t bits = random();
    float f;
    std::memcpy(&f, &bits, 4);
    values.push_back(i % 2 ? double(f)
                           : std::ldexp(double(int(random() % 20000) - 10000),
                                        int(random() % 40) - 30));
  }
  const double specials[] = {
      0.0,  -0.0,   464.0,    480.0,     448.0, 65520.0, 61440.,
      1e-8, -1e-20, INFINITY, -INFINITY, kNaN,  57344.0, 5.9604644775390625e-8};
  for (size_t i = 0; i < std::size(specials); ++i)
    values[i] = specials[i];
  for (double &v : values)
    v = double(float(v));
  for (DType narrow : {DType::F16, DType::F8E4M3FN, DType::F8E5M2}) {
    Builder b;
    b.tensor("x", DType::F32, {64, 64});
    b.tensor("y", narrow, {64, 64}, HbmTensor::Kind::Output);
    b.dma(sbuf(narrow, 64, 64), b.hbm("x"));
    b.dma(b.hbm("y"), sbuf(narrow, 64, 64));
    Simulator sim(trn1Target());
    std::string error;
    SimulationStats stats;
    ASSERT_TRUE(sim.load(b.program, error)) << error;
    ASSERT_TRUE(sim.writeTensor("x", values.data(), values.size(), error));
    ASSERT_TRUE(sim.run(stats, error)) << error;
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(sim.readTensorBytes("y", bytes, error));
    unsigned size = dtypeSizeInBytes(narrow);
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t bits = 0;
      std::memcpy(&bits, bytes.data() + i * size, size);
      ASSERT_EQ(bits, encodeFloat(values[i], narrow))
          << dtypeName(narrow) << " value " << values[i];
    }
  }
}

TEST(SimulatorTest, AccessPatternStrides) {
  // Load a [4, 6] tensor transposed through the HBM pattern (partition =
  // column, free = rows with stride 6), then store every other element of
  // each partition in reverse order (negative stride).
  Builder b;
  b.tensor("x", DType::F32, {4, 6});
  b.tensor("y", DType::F32, {6, 2}, HbmTensor::Kind::Output);
  AccessPattern transposed = b.hbm("x");
  transposed.numPartitions = 6;
  transposed.partitionStride = 1;
  transposed.dims = {{4, 6}};
  b.dma(sbuf(DType::F32, 6, 4), transposed);
  // Elements 3 and 1 of each partition: start at byte 12, stride -2.
  b.dma(b.hbm("y"), onChip(Memory::Sbuf, DType::F32, 6, {{2, -2}}, 12));
  std::vector<double> x(24);
  for (int i = 0; i < 24; ++i)
    x[i] = i;
  Outcome o = run(b, {{"x", x}});
  ASSERT_TRUE(o.ok) << o.error;
  // Partition c holds column c: x[r][c] = 6r + c; elements 3 then 1.
  std::vector<double> expected;
  for (int c = 0; c < 6; ++c) {
    expected.push_back(18 + c);
    expected.push_back(6 + c);
  }
  expectValues(o.outputs["y"], expected);
}

TEST(SimulatorTest, MultiDimPatternAndBroadcast) {
  // A [2, 3] x [2 x 2] pattern with an outer stride of 0 (broadcast) reads
  // the same two elements three times.
  Builder b;
  b.tensor("x", DType::F32, {2, 2});
  b.tensor("y", DType::F32, {2, 6}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::F32, 2, 2), b.hbm("x"));
  Instruction copy =
      make(Opcode::TensorCopy, sbuf(DType::F32, 2, 6, 64),
           {onChip(Memory::Sbuf, DType::F32, 2, {{3, 0}, {2, 1}})});
  b.add(kVectorStream, copy);
  b.dma(b.hbm("y"), sbuf(DType::F32, 2, 6, 64));
  Outcome o = run(b, {{"x", {1, 2, 3, 4}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["y"], {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
}

//===----------------------------------------------------------------------===//
// Tensor Engine
//===----------------------------------------------------------------------===//

/// out[M, N] = `times` matmuls of s[K, M]^T m[K, N], their inputs loaded
/// into SBUF as `dtype`: the first overwrites the PSUM tile, the others
/// accumulate into it.
Builder matmulProgram(int K, int M, int N, DType dtype, int times = 1) {
  Builder b;
  b.tensor("s", DType::F32, {K, M});
  b.tensor("m", DType::F32, {K, N});
  b.tensor("out", DType::F32, {M, N}, HbmTensor::Kind::Output);
  b.dma(sbuf(dtype, K, M, 0), b.hbm("s"));
  b.dma(sbuf(dtype, K, N, 1024), b.hbm("m"));
  for (int i = 0; i < times; ++i) {
    Instruction mm = make(Opcode::Matmul, psum(DType::F32, M, N, 2048),
                          {sbuf(dtype, K, M, 0), sbuf(dtype, K, N, 1024)});
    mm.accumulate = i > 0;
    b.add(kTensorStream, mm);
  }
  b.add(kVectorStream, make(Opcode::TensorCopy, sbuf(DType::F32, M, N, 4096),
                            {psum(DType::F32, M, N, 2048)}));
  b.dma(b.hbm("out"), sbuf(DType::F32, M, N, 4096));
  return b;
}

/// s[K, M]^T m[K, N] in double.
std::vector<double> matmulReference(const std::vector<double> &s,
                                    const std::vector<double> &m, int K, int M,
                                    int N) {
  std::vector<double> product(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k)
        product[size_t(i) * N + j] +=
            s[size_t(k) * M + i] * m[size_t(k) * N + j];
  return product;
}

TEST(SimulatorTest, MatmulBf16) {
  // dst[M=3, N=5] = stationary[K=4, M=3]^T moving[K=4, N=5].
  const int K = 4, M = 3, N = 5;
  Builder b = matmulProgram(K, M, N, DType::BF16);
  std::vector<double> s(K * M), m(K * N);
  for (int i = 0; i < K * M; ++i)
    s[i] = (i % 5) - 2 + 0.5;
  for (int i = 0; i < K * N; ++i)
    m[i] = (i % 7) * 0.25 - 1;
  Outcome o = run(b, {{"s", s}, {"m", m}});
  ASSERT_TRUE(o.ok) << o.error;
  std::vector<double> expected = matmulReference(s, m, K, M, N);
  expectValues(o.outputs["out"], expected);
  EXPECT_EQ(o.stats.matmulFlops, uint64_t(2 * M * N * K));
}

TEST(SimulatorTest, MatmulAccumulatesInFp32Psum) {
  // Three matmuls into one PSUM tile: overwrite, then two accumulates. Each
  // adds a value exact in bf16; the sum needs more than bf16's 8 bits and is
  // kept exactly by the fp32 PSUM.
  Builder b;
  b.tensor("ones", DType::BF16, {1, 2});
  b.tensor("m", DType::BF16, {3, 2});
  b.tensor("out", DType::F32, {2, 2}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::BF16, 1, 2, 0), b.hbm("ones"));
  AccessPattern rows = b.hbm("m");
  for (int i = 0; i < 3; ++i) {
    AccessPattern row = rows;
    row.numPartitions = 1;
    row.byteOffset += 4 * i;
    b.dma(sbuf(DType::BF16, 1, 2, 64 + 64 * i), row);
  }
  for (int i = 0; i < 3; ++i) {
    Instruction mm = make(
        Opcode::Matmul, psum(DType::F32, 2, 2),
        {sbuf(DType::BF16, 1, 2, 0), sbuf(DType::BF16, 1, 2, 64 + 64 * i)});
    mm.accumulate = i > 0;
    b.add(kTensorStream, mm);
  }
  b.add(kScalarStream, make(Opcode::Activation, sbuf(DType::F32, 2, 2, 4096),
                            {psum(DType::F32, 2, 2)}));
  b.dma(b.hbm("out"), sbuf(DType::F32, 2, 2, 4096));
  const double e8 = std::ldexp(1, -8), e9 = std::ldexp(1, -9);
  Outcome o = run(b, {{"ones", {1, 1}}, {"m", {1, 2, e8, e8, e9, -e9}}},
                  SimulatorOptions{true, false});
  ASSERT_TRUE(o.ok) << o.error;
  double first = 1 + e8 + e9, second = 2 + e8 - e9;
  expectValues(o.outputs["out"], {first, second, first, second});
  EXPECT_NE(roundBf16(first), first); // not representable in bf16
}

TEST(SimulatorTest, MatmulFp32OverwritesPoisonedPsum) {
  // fp32 inputs, dense layouts (BLAS in place); the PSUM tile starts as NaN
  // (poison) and the non-accumulating matmul overwrites it.
  const int K = 128, M = 64, N = 96;
  Builder b = matmulProgram(K, M, N, DType::F32);
  std::vector<double> s(K * M), m(K * N);
  for (int i = 0; i < K * M; ++i)
    s[i] = ((i * 37) % 17) * 0.125 - 1;
  for (int i = 0; i < K * N; ++i)
    m[i] = ((i * 11) % 13) * 0.0625 - 0.375;
  Outcome o = run(b, {{"s", s}, {"m", m}}, SimulatorOptions{true, false});
  ASSERT_TRUE(o.ok) << o.error;
  std::vector<double> expected = matmulReference(s, m, K, M, N);
  // Products and sums of these dyadic values are exact in fp32.
  expectValues(o.outputs["out"], expected);
  EXPECT_EQ(o.stats.fp32MatmulFlops, o.stats.matmulFlops);
}

TEST(SimulatorTest, MatmulKeepsSubnormals) {
  // Subnormal fp32 operands (GELU's output for very negative inputs) are
  // kept, not flushed: sums of j * 2^-140 below 2^-126 are exact on fp32's
  // subnormal grid. (Such blocks run in double: fp32 kernels take a
  // microcode assist per subnormal on Intel cores.) Accumulating into the
  // PSUM keeps them too.
  const int K = 128, M = 64, N = 96;
  Builder b = matmulProgram(K, M, N, DType::F32, /*times=*/2);
  const double tiny = std::ldexp(1.0, -140);
  std::vector<double> s(K * M), m(K * N);
  for (int i = 0; i < K * M; ++i)
    s[i] = (((i * 37) % 17) - 8) * tiny;
  for (int i = 0; i < K * N; ++i)
    m[i] = ((i * 11) % 13) - 6;
  Outcome o = run(b, {{"s", s}, {"m", m}}, SimulatorOptions{true, false});
  ASSERT_TRUE(o.ok) << o.error;
  std::vector<double> expected = matmulReference(s, m, K, M, N);
  size_t subnormal = 0;
  for (double &value : expected) {
    value *= 2; // two matmuls into one PSUM tile
    subnormal += value != 0 && std::fabs(value) < std::ldexp(1.0, -126);
  }
  EXPECT_GT(subnormal, size_t(M * N / 2));
  expectValues(o.outputs["out"], expected);
}

/// Runs two accumulating matmuls of s[K,M] and m[K,N] and expects the exact
/// result (the inputs are chosen so that fp32 holds it).
void expectExactMatmul(const std::vector<double> &s,
                       const std::vector<double> &m, int K, int M, int N) {
  Builder b = matmulProgram(K, M, N, DType::F32, /*times=*/2);
  Outcome o = run(b, {{"s", s}, {"m", m}}, SimulatorOptions{true, false});
  ASSERT_TRUE(o.ok) << o.error;
  std::vector<double> expected = matmulReference(s, m, K, M, N);
  for (double &value : expected)
    value *= 2;
  expectValues(o.outputs["out"], expected);
}

TEST(SimulatorTest, MatmulMixesSubnormalAndNormalOperands) {
  // Blocks holding subnormals next to normal values (a GELU output's far
  // tail beside its body) run on operands scaled into fp32's normal range:
  // the subnormal sums stay exact, the normal ones too. Columns 0-31 of s
  // are small integers, 32-63 multiples of 2^-140; then the same with the
  // roles of s and m swapped (the moving operand scaled).
  const int K = 128, M = 64, N = 96;
  const double tiny = std::ldexp(1.0, -140);
  std::vector<double> mixed(K * M), integers(K * N);
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < M; ++i)
      mixed[k * M + i] = i < M / 2 ? double(((k + i) % 5) - 2)
                                   : (((k * 37 + i) % 17) - 8) * tiny;
  for (int i = 0; i < K * N; ++i)
    integers[i] = ((i * 11) % 13) - 6;
  expectExactMatmul(mixed, integers, K, M, N);

  std::vector<double> stationary(K * M), mixedMoving(K * N);
  for (int i = 0; i < K * M; ++i)
    stationary[i] = ((i * 7) % 9) - 4;
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j)
      mixedMoving[k * N + j] =
          j % 2 ? double((k + j) % 3) : (((k + 5 * j) % 11) - 5) * tiny;
  expectExactMatmul(stationary, mixedMoving, K, M, N);
}

TEST(SimulatorTest, MatmulSubnormalsBesideHugeValuesRunInDouble) {
  // 2^100 beside subnormals is too wide a range for any scaling into fp32's
  // normal range (the double fallback); a NaN beside subnormals too. The
  // sums are exact in fp32; NaN reaches the outputs it is summed into.
  const int K = 128, M = 64, N = 96;
  const double tiny = std::ldexp(1.0, -140), huge = std::ldexp(1.0, 100);
  std::vector<double> wide(K * M), integers(K * N);
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < M; ++i)
      wide[k * M + i] =
          i < M / 2 ? ((k + i) % 3) * huge : (((k * 37 + i) % 17) - 8) * tiny;
  for (int i = 0; i < K * N; ++i)
    integers[i] = ((i * 11) % 13) - 6;
  expectExactMatmul(wide, integers, K, M, N);
  std::vector<double> withNan = wide;
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < M / 2; ++i)
      withNan[k * M + i] = (k + i) % 3 - 1;
  withNan[5 * M + 3] = NAN;
  expectExactMatmul(withNan, integers, K, M, N);
}

TEST(SimulatorTest, Transpose) {
  Builder b;
  b.tensor("x", DType::BF16, {3, 4});
  b.tensor("out", DType::F32, {4, 3}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::BF16, 3, 4), b.hbm("x"));
  b.add(kTensorStream, make(Opcode::Transpose, psum(DType::F32, 4, 3),
                            {sbuf(DType::BF16, 3, 4)}));
  b.add(kVectorStream, make(Opcode::TensorCopy, sbuf(DType::F32, 4, 3, 64),
                            {psum(DType::F32, 4, 3)}));
  b.dma(b.hbm("out"), sbuf(DType::F32, 4, 3, 64));
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -INFINITY};
  Outcome o = run(b, {{"x", x}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"],
               {1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, -INFINITY});
  EXPECT_GT(o.stats.transposeFlops, 0u);
  EXPECT_EQ(o.stats.matmulFlops, 0u);
}

TEST(SimulatorTest, MatmulShapeErrors) {
  Builder b;
  b.add(kTensorStream,
        make(Opcode::Matmul, psum(DType::F32, 4, 640),
             {sbuf(DType::BF16, 8, 4), sbuf(DType::BF16, 8, 640)}));
  Outcome o = run(b, {});
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.error.find("N=640"), std::string::npos) << o.error;

  Builder c;
  c.add(kTensorStream,
        make(Opcode::Matmul, psum(DType::F32, 4, 256, 1536),
             {sbuf(DType::BF16, 8, 4), sbuf(DType::BF16, 8, 256)}));
  o = run(c, {});
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.error.find("PSUM bank"), std::string::npos) << o.error;

  Builder d;
  d.add(kTensorStream, make(Opcode::Matmul, psum(DType::F32, 4, 8),
                            {sbuf(DType::F32, 8, 4), sbuf(DType::BF16, 8, 8)}));
  o = run(d, {});
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.error.find("fp32"), std::string::npos) << o.error;
}

//===----------------------------------------------------------------------===//
// Scalar Engine
//===----------------------------------------------------------------------===//

TEST(SimulatorTest, ActivationWithColumnsAndRowSum) {
  // dst = exp(x * scale[p] + bias[p]); reduceDst[p] = sum of the fp32 results.
  ElementwiseCase c(2, 3, 3);
  Instruction act = make(Opcode::Activation, c.out(), {c.in(0)});
  act.func = ActivationFunc::Exp;
  act.scale = column(sbuf(DType::F32, 2, 1, 4096));
  act.bias = column(sbuf(DType::F32, 2, 1, 8192));
  act.accumulateRow = true;
  act.reduceDst = sbuf(DType::F32, 2, 1, 16384);
  c.builder.tensor("sums", DType::F32, {2, 1}, HbmTensor::Kind::Output);
  c.builder.add(kScalarStream, act);
  c.builder.dma(c.builder.hbm("sums"), sbuf(DType::F32, 2, 1, 16384));
  std::vector<double> x = {0, 1, 2, -1, 0.5, 3};
  // Inputs b and c are [2, 3]: only the first element of each row is read.
  Outcome o = c.finish(
      kDmaStream, make(Opcode::Nop, {}),
      {{"a", x}, {"b", {2, 0, 0, -1, 0, 0}}, {"c", {0.5, 0, 0, 0, 0, 0}}});
  ASSERT_TRUE(o.ok) << o.error;
  std::vector<double> expected;
  double sums[2] = {0, 0};
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < 3; ++i) {
      float scale = p == 0 ? 2.0f : -1.0f, bias = p == 0 ? 0.5f : 0.0f;
      float t = float(x[p * 3 + i]) * scale + bias;
      float y = float(std::exp(double(t)));
      expected.push_back(y);
      sums[p] = float(sums[p] + y);
    }
  expectValues(o.outputs["out"], expected);
  expectValues(o.outputs["sums"], {sums[0], sums[1]});
}

TEST(SimulatorTest, ActivationFunctions) {
  const std::vector<double> x = {-2.0, -0.5, 0.0, 0.75, 3.0};
  struct Case {
    ActivationFunc func;
    double (*reference)(double);
  } cases[] = {
      {ActivationFunc::Copy, [](double v) { return v; }},
      {ActivationFunc::Negate, [](double v) { return -v; }},
      {ActivationFunc::Tanh, [](double v) { return std::tanh(v); }},
      {ActivationFunc::Sigmoid,
       [](double v) { return 1 / (1 + std::exp(-v)); }},
      {ActivationFunc::Relu, [](double v) { return v > 0 ? v : 0; }},
      {ActivationFunc::Gelu,
       [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {ActivationFunc::GeluTanh,
       [](double v) {
         return 0.5 * v *
                (1 +
                 std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
       }},
      {ActivationFunc::Silu, [](double v) { return v / (1 + std::exp(-v)); }},
      {ActivationFunc::Erf, [](double v) { return std::erf(v); }},
      {ActivationFunc::Square, [](double v) { return v * v; }},
      {ActivationFunc::Sin, [](double v) { return std::sin(v); }},
      {ActivationFunc::Cos, [](double v) { return std::cos(v); }},
      {ActivationFunc::Abs, [](double v) { return std::fabs(v); }},
      {ActivationFunc::Sign,
       [](double v) { return v > 0   ? 1.0
                             : v < 0 ? -1.0
                                     : 0.0; }},
      {ActivationFunc::Floor, [](double v) { return std::floor(v); }},
      {ActivationFunc::Exp, [](double v) { return std::exp(v); }},
  };
  for (const Case &test : cases) {
    ElementwiseCase c(1, 5, 1);
    Instruction act = make(Opcode::Activation, c.out(), {c.in(0)});
    act.func = test.func;
    Outcome o = c.finish(kScalarStream, act, {{"a", x}});
    ASSERT_TRUE(o.ok) << o.error;
    std::vector<double> expected;
    for (double v : x)
      expected.push_back(float(test.reference(v)));
    expectValues(o.outputs["out"], expected, 1e-6);
  }
  // Domain-restricted functions on positive inputs.
  const std::vector<double> positive = {0.25, 1.0, 2.0, 4.0, 9.0};
  struct Case2 {
    ActivationFunc func;
    double (*reference)(double);
  } cases2[] = {
      {ActivationFunc::Log, [](double v) { return std::log(v); }},
      {ActivationFunc::Log1p, [](double v) { return std::log1p(v); }},
      {ActivationFunc::Sqrt, [](double v) { return std::sqrt(v); }},
      {ActivationFunc::Rsqrt, [](double v) { return 1 / std::sqrt(v); }},
      {ActivationFunc::Reciprocal, [](double v) { return 1 / v; }},
  };
  for (const Case2 &test : cases2) {
    ElementwiseCase c(1, 5, 1);
    Instruction act = make(Opcode::Activation, c.out(), {c.in(0)});
    act.func = test.func;
    Outcome o = c.finish(kScalarStream, act, {{"a", positive}});
    ASSERT_TRUE(o.ok) << o.error;
    std::vector<double> expected;
    for (double v : positive)
      expected.push_back(float(test.reference(v)));
    expectValues(o.outputs["out"], expected, 1e-6);
  }
}

TEST(SimulatorTest, ExpFamilyIsCorrectlyRoundedFromDouble) {
  // exp, sigmoid and silu use a vectorised double exp; their fp32 results
  // equal libm's double result rounded to fp32, over the whole useful range
  // and at the overflow/underflow edges.
  std::mt19937 random(11);
  std::uniform_real_distribution<double> wide(-120.0, 100.0);
  std::vector<double> x(4096);
  for (double &v : x)
    v = float(wide(random));
  const double edges[] = {0.0,    -0.0,   88.72,  88.73,    -103.9,
                          -104.0, -745.5, 800.0,  INFINITY, -INFINITY,
                          kNaN,   1e-30,  -1e-30, 0.5,      -87.33};
  for (size_t i = 0; i < std::size(edges); ++i)
    x[i] = float(edges[i]); // the f32 input tensor holds fp32 values
  struct Case {
    ActivationFunc func;
    double (*reference)(double);
  } cases[] = {
      {ActivationFunc::Exp, [](double v) { return std::exp(v); }},
      {ActivationFunc::Sigmoid,
       [](double v) { return 1 / (1 + std::exp(-v)); }},
      {ActivationFunc::Silu, [](double v) { return v / (1 + std::exp(-v)); }},
  };
  for (const Case &test : cases) {
    ElementwiseCase c(64, 64, 1);
    Instruction act = make(Opcode::Activation, c.out(), {c.in(0)});
    act.func = test.func;
    Outcome o = c.finish(kScalarStream, act, {{"a", x}});
    ASSERT_TRUE(o.ok) << o.error;
    std::vector<double> expected;
    for (double v : x)
      expected.push_back(float(test.reference(v)));
    expectValues(o.outputs["out"], expected);
  }
}

TEST(SimulatorTest, TanhFamilyIsCorrectlyRoundedFromDouble) {
  // tanh, gelu (tanh form) and its derivative are evaluated from one
  // vectorised double exp/expm1 in forms free of cancellation; their fp32
  // results equal the exact function (long double, cancellation-free forms)
  // rounded to fp32, including tiny, huge and non-finite inputs.
  std::mt19937 random(12);
  std::uniform_real_distribution<double> wide(-12.0, 12.0);
  std::uniform_real_distribution<double> exponent(-40.0, 3.0);
  std::vector<double> x(4096);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = i % 2 ? float(wide(random))
                 : float((i % 4 ? -1 : 1) * std::pow(2.0, exponent(random)));
  const double edges[] = {0.0,  -0.0,   1e-30,     -1e-30,    0.1733, -0.1733,
                          0.5,  -0.5,   9.0,       -9.0,      20.0,   -20.0,
                          1e20, -1e20,  3.4e38,    -3.4e38,   kNaN,   INFINITY,
                          0.34, -0.347, -INFINITY, 0.1732868, -4.5,   4.5};
  for (size_t i = 0; i < std::size(edges); ++i)
    x[i] = float(edges[i]);
  using Real = long double;
  const Real k = std::sqrt(Real(2) / Real(M_PI)), c = Real(0.044715);
  auto inner = [&](Real v) { return k * (v + c * v * v * v); };
  struct Case {
    ActivationFunc func;
    std::function<Real(Real)> reference;
  } cases[] = {
      {ActivationFunc::Tanh, [](Real v) { return std::tanh(v); }},
      {ActivationFunc::GeluTanh,
       [&](Real v) { return v / (1 + std::exp(-2 * inner(v))); }},
      {ActivationFunc::GeluTanhDerivative,
       [&](Real v) {
         Real u = inner(v), e = std::exp(-2 * std::fabs(u)), s = 1 / (1 + e);
         Real half = u >= 0 ? s : e * s;
         Real sech2 = 4 * e * s * s;
         Real du = k * (1 + 3 * c * v * v);
         return std::isinf(v) ? Real(NAN) : half + v / 2 * sech2 * du;
       }},
  };
  for (const Case &test : cases) {
    ElementwiseCase cs(64, 64, 1);
    Instruction act = make(Opcode::Activation, cs.out(), {cs.in(0)});
    act.func = test.func;
    Outcome o = cs.finish(kScalarStream, act, {{"a", x}});
    ASSERT_TRUE(o.ok) << o.error;
    std::vector<double> expected;
    for (double v : x) // t = x * 1 + 0 (so -0 becomes +0)
      expected.push_back(float(test.reference(Real(float(v) * 1.0f + 0.0f))));
    ASSERT_EQ(o.outputs["out"].size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const double got = o.outputs["out"][i];
      if (std::isnan(expected[i]))
        EXPECT_TRUE(std::isnan(got))
            << "func " << int(test.func) << " x " << x[i];
      else
        EXPECT_TRUE(got == expected[i] &&
                    std::signbit(got) == std::signbit(expected[i]))
            << "func " << int(test.func) << " x " << x[i] << ": " << got
            << " vs " << expected[i];
    }
  }
}

TEST(SimulatorTest, ActivationRoundsToBf16) {
  ElementwiseCase c(1, 4, 1, DType::F32, DType::BF16);
  Instruction act = make(Opcode::Activation, c.out(), {c.in(0)});
  act.scale = immediate(3.0f);
  Outcome o = c.finish(kScalarStream, act, {{"a", {0.1, 1.0 / 3, 7.0, -1e-3}}});
  ASSERT_TRUE(o.ok) << o.error;
  std::vector<double> expected;
  for (double v : {0.1, 1.0 / 3, 7.0, -1e-3})
    expected.push_back(roundBf16(float(float(v) * 3.0f)));
  expectValues(o.outputs["out"], expected);
}

//===----------------------------------------------------------------------===//
// Vector Engine and GpSimd
//===----------------------------------------------------------------------===//

TEST(SimulatorTest, TensorTensorEveryAluOp) {
  const std::vector<double> a = {3, -2, 0, 1.5, 6, kNaN};
  const std::vector<double> bValues = {2, -2, 5, 0, -4, 1};
  struct Case {
    AluOp op;
    std::vector<double> expected;
  } cases[] = {
      {AluOp::Add, {5, -4, 5, 1.5, 2, kNaN}},
      {AluOp::Subtract, {1, 0, -5, 1.5, 10, kNaN}},
      {AluOp::Multiply, {6, 4, 0, 0, -24, kNaN}},
      {AluOp::Divide, {1.5, 1, 0, INFINITY, -1.5, kNaN}},
      {AluOp::Max, {3, -2, 5, 1.5, 6, kNaN}},
      {AluOp::Min, {2, -2, 0, 0, -4, kNaN}},
      {AluOp::IsEqual, {0, 1, 0, 0, 0, 0}},
      {AluOp::IsNotEqual, {1, 0, 1, 1, 1, 1}},
      {AluOp::IsLess, {0, 0, 1, 0, 0, 0}},
      {AluOp::IsLessEqual, {0, 1, 1, 0, 0, 0}},
      {AluOp::IsGreater, {1, 0, 0, 1, 1, 0}},
      {AluOp::IsGreaterEqual, {1, 1, 0, 1, 1, 0}},
      {AluOp::LogicalAnd, {1, 1, 0, 0, 1, 1}},
      {AluOp::LogicalOr, {1, 1, 1, 1, 1, 1}},
  };
  for (const Case &test : cases) {
    ElementwiseCase c(2, 3, 2);
    Instruction tt = make(Opcode::TensorTensor, c.out(), {c.in(0), c.in(1)});
    tt.op0 = test.op;
    Outcome o = c.finish(kVectorStream, tt, {{"a", a}, {"b", bValues}});
    ASSERT_TRUE(o.ok) << o.error;
    SCOPED_TRACE(aluOpName(test.op));
    expectValues(o.outputs["out"], test.expected);
  }
  // pow runs on GpSimd.
  ElementwiseCase c(1, 3, 2);
  Instruction tt = make(Opcode::TensorTensor, c.out(), {c.in(0), c.in(1)});
  tt.op0 = AluOp::Pow;
  Outcome o =
      c.finish(kGpSimdStream, tt, {{"a", {2, 9, 4}}, {"b", {3, 0.5, -1}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"], {8, 3, 0.25});
}

TEST(SimulatorTest, IntegerOps) {
  // GpSimd adds int32 exactly with wraparound; bitwise ops work on bits.
  ElementwiseCase c(1, 3, 2, DType::I32, DType::I32);
  Instruction tt = make(Opcode::TensorTensor, c.out(),
                        {c.in(0, DType::I32), c.in(1, DType::I32)});
  tt.op0 = AluOp::Add;
  Outcome o = c.finish(kGpSimdStream, tt,
                       {{"a", {2147483647, 16777217, -5}}, {"b", {1, 1, 3}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"], {-2147483648.0, 16777218, -2});

  // The Vector Engine computes in fp32: 16777217 + 1 rounds.
  ElementwiseCase v(1, 1, 2, DType::I32, DType::I32);
  Instruction add = make(Opcode::TensorTensor, v.out(),
                         {v.in(0, DType::I32), v.in(1, DType::I32)});
  add.op0 = AluOp::Add;
  o = v.finish(kVectorStream, add, {{"a", {16777217}}, {"b", {2}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"], {16777218});

  ElementwiseCase w(1, 2, 2, DType::I32, DType::I32);
  Instruction bits = make(Opcode::TensorTensor, w.out(),
                          {w.in(0, DType::I32), w.in(1, DType::I32)});
  bits.op0 = AluOp::BitwiseAnd;
  o = w.finish(kVectorStream, bits, {{"a", {12, -1}}, {"b", {10, 16777217}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"], {8, 16777217});
}

TEST(SimulatorTest, TensorScalarTwoOpsWithReverse) {
  // dst = s1 - (x * s0[p]) with s0 a column and s1 an immediate.
  ElementwiseCase c(2, 2, 2);
  Instruction ts = make(Opcode::TensorScalar, c.out(), {c.in(0)});
  ts.op0 = AluOp::Multiply;
  ts.scalar0 = column(sbuf(DType::F32, 2, 1, 4096));
  ts.op1 = AluOp::Subtract;
  ts.scalar1 = immediate(10.0f);
  ts.reverse1 = true;
  Outcome o =
      c.finish(kVectorStream, ts, {{"a", {1, 2, 3, 4}}, {"b", {2, 0, -1, 0}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"], {8, 6, 13, 14});

  // op0 bypass, op1 max; and a comparison giving 1/0.
  ElementwiseCase d(1, 4, 1);
  Instruction cmp = make(Opcode::TensorScalar, d.out(), {d.in(0)});
  cmp.op0 = AluOp::IsGreaterEqual;
  cmp.scalar0 = immediate(2.0f);
  o = d.finish(kVectorStream, cmp, {{"a", {1, 2, 3, -5}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"], {0, 1, 1, 0});
}

TEST(SimulatorTest, TensorReduce) {
  const std::vector<double> x = {1, 4, -2, 3, 0.5, 2, 2, 2};
  struct Case {
    AluOp op;
    bool negate;
    std::vector<double> expected;
  } cases[] = {
      {AluOp::Add, false, {6, 6.5}},      {AluOp::Add, true, {-6, -6.5}},
      {AluOp::Max, false, {4, 2}},        {AluOp::Min, false, {-2, 0.5}},
      {AluOp::Multiply, false, {-24, 4}}, {AluOp::Subtract, false, {-4, -5.5}},
  };
  for (const Case &test : cases) {
    ElementwiseCase c(2, 4, 1);
    c.builder.tensor("r", DType::F32, {2, 1}, HbmTensor::Kind::Output);
    Instruction reduce =
        make(Opcode::TensorReduce, sbuf(DType::F32, 2, 1, 16384), {c.in(0)});
    reduce.op0 = test.op;
    reduce.negate = test.negate;
    c.builder.add(kVectorStream, reduce);
    c.builder.dma(c.builder.hbm("r"), sbuf(DType::F32, 2, 1, 16384));
    Outcome o = run(c.builder, {{"a", x}});
    ASSERT_TRUE(o.ok) << o.error;
    expectValues(o.outputs["r"], test.expected);
  }
  // A comparison is not a reduction.
  ElementwiseCase c(1, 4, 1);
  Instruction reduce =
      make(Opcode::TensorReduce, sbuf(DType::F32, 1, 1, 16384), {c.in(0)});
  reduce.op0 = AluOp::IsEqual;
  Outcome o = c.finish(kVectorStream, reduce, {{"a", {1, 2, 3, 4}}});
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.error.find("not a reduction"), std::string::npos) << o.error;
}

TEST(SimulatorTest, TensorCopyBitExactAndCasting) {
  // bf16 -> bf16 copies keep NaN payloads; f32 -> bf16 rounds; f32 -> i32
  // truncates toward zero and saturates.
  Builder b;
  b.tensor("raw", DType::BF16, {1, 2});
  b.tensor("copy", DType::BF16, {1, 2}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::BF16, 1, 2), b.hbm("raw"));
  b.add(kGpSimdStream, make(Opcode::TensorCopy, sbuf(DType::BF16, 1, 2, 64),
                            {sbuf(DType::BF16, 1, 2)}));
  b.dma(b.hbm("copy"), sbuf(DType::BF16, 1, 2, 64));
  Simulator sim(trn1Target());
  std::string error;
  ASSERT_TRUE(sim.load(b.program, error)) << error;
  const uint16_t raw[2] = {0x7F81, 0x3F80}; // a signalling-NaN payload, 1.0
  ASSERT_TRUE(sim.writeTensorBytes("raw", raw, sizeof(raw), error));
  SimulationStats stats;
  ASSERT_TRUE(sim.run(stats, error)) << error;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(sim.readTensorBytes("copy", bytes, error));
  ASSERT_EQ(bytes.size(), 4u);
  EXPECT_EQ(0, std::memcmp(bytes.data(), raw, 4));

  ElementwiseCase c(1, 4, 1, DType::F32, DType::I32);
  Outcome o =
      c.finish(kVectorStream, make(Opcode::TensorCopy, c.out(), {c.in(0)}),
               {{"a", {2.7, -2.7, 3e9, kNaN}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"], {2, -2, 2147483647, 0});
}

TEST(SimulatorTest, Select) {
  ElementwiseCase c(1, 4, 3);
  // The predicate is an i32 tile converted by a copy.
  c.builder.add(kVectorStream, make(Opcode::TensorCopy,
                                    sbuf(DType::I32, 1, 4, 20000), {c.in(0)}));
  Instruction select = make(Opcode::Select, c.out(),
                            {sbuf(DType::I32, 1, 4, 20000), c.in(1), c.in(2)});
  Outcome o = c.finish(
      kVectorStream, select,
      {{"a", {1, 0, -3, 0}}, {"b", {10, 20, 30, 40}}, {"c", {-1, -2, -3, -4}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"], {10, -2, 30, -4});
}

TEST(SimulatorTest, BnStatsAndBnAggr) {
  // One partition, 6 elements: even ones {1, 3, 5}, odd ones {2, 6, 10}.
  Builder b;
  b.tensor("x", DType::F32, {1, 6});
  b.tensor("stats", DType::F32, {1, 6}, HbmTensor::Kind::Output);
  b.tensor("aggr", DType::F32, {1, 2}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::F32, 1, 6), b.hbm("x"));
  b.add(kVectorStream, make(Opcode::BnStats, sbuf(DType::F32, 1, 6, 64),
                            {sbuf(DType::F32, 1, 6)}));
  b.add(kVectorStream, make(Opcode::BnAggr, sbuf(DType::F32, 1, 2, 128),
                            {sbuf(DType::F32, 1, 6, 64)}));
  b.dma(b.hbm("stats"), sbuf(DType::F32, 1, 6, 64));
  b.dma(b.hbm("aggr"), sbuf(DType::F32, 1, 2, 128));
  Outcome o = run(b, {{"x", {1, 2, 3, 6, 5, 10}}});
  ASSERT_TRUE(o.ok) << o.error;
  // even: count 3, mean 3, M2 = 4 + 0 + 4 = 8; odd: 3, 6, 16 + 0 + 16 = 32.
  expectValues(o.outputs["stats"], {3, 3, 8, 3, 6, 32});
  // All six: mean 4.5, population variance = sum((x - 4.5)^2) / 6.
  double variance = (12.25 + 6.25 + 2.25 + 2.25 + 0.25 + 30.25) / 6;
  expectValues(o.outputs["aggr"], {4.5, variance}, 1e-6);
}

TEST(SimulatorTest, BnStatsOddCountAndEmptyHalf) {
  Builder b;
  b.tensor("x", DType::F32, {2, 1});
  b.tensor("stats", DType::F32, {2, 6}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::F32, 2, 1), b.hbm("x"));
  b.add(kVectorStream, make(Opcode::BnStats, sbuf(DType::F32, 2, 6, 64),
                            {sbuf(DType::F32, 2, 1)}));
  b.dma(b.hbm("stats"), sbuf(DType::F32, 2, 6, 64));
  Outcome o = run(b, {{"x", {7, -1}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["stats"], {1, 7, 0, 0, 0, 0, 1, -1, 0, 0, 0, 0});
}

TEST(SimulatorTest, MemsetIotaAffineSelect) {
  Builder b;
  b.tensor("m", DType::BF16, {2, 3}, HbmTensor::Kind::Output);
  b.tensor("iota", DType::I32, {3, 4}, HbmTensor::Kind::Output);
  b.tensor("iotaf", DType::F32, {2, 2}, HbmTensor::Kind::Output);
  b.tensor("mask", DType::F32, {3, 3}, HbmTensor::Kind::Output);
  Instruction memset = make(Opcode::Memset, sbuf(DType::BF16, 2, 3));
  memset.value = 0.1f;
  b.add(kVectorStream, memset);
  b.dma(b.hbm("m"), sbuf(DType::BF16, 2, 3));

  // iota over a [3, 2 x 2] pattern: base 5, channel multiplier 100, steps
  // (10, 1).
  AccessPattern iotaDst =
      onChip(Memory::Sbuf, DType::I32, 3, {{2, 2}, {2, 1}}, 64);
  Instruction iota = make(Opcode::Iota, iotaDst);
  iota.base = 5;
  iota.channelMultiplier = 100;
  iota.steps = {10, 1};
  b.add(kGpSimdStream, iota);
  b.dma(b.hbm("iota"), sbuf(DType::I32, 3, 4, 64));

  Instruction iotaf = make(Opcode::Iota, sbuf(DType::F32, 2, 2, 128));
  iotaf.base = -1;
  iotaf.channelMultiplier = -2;
  iotaf.steps = {3};
  b.add(kGpSimdStream, iotaf);
  b.dma(b.hbm("iotaf"), sbuf(DType::F32, 2, 2, 128));

  // Causal mask: keep x[p, i] where p - i >= 0, else -inf... here -1e4.
  Instruction ones = make(Opcode::Memset, sbuf(DType::F32, 3, 3, 256));
  ones.value = 1.0f;
  b.add(kGpSimdStream, ones);
  Instruction mask = make(Opcode::AffineSelect, sbuf(DType::F32, 3, 3, 512),
                          {sbuf(DType::F32, 3, 3, 256)});
  mask.base = 0;
  mask.channelMultiplier = 1;
  mask.steps = {-1};
  mask.compare = CompareOp::Ge;
  mask.value = -1e4f;
  b.add(kGpSimdStream, mask);
  b.dma(b.hbm("mask"), sbuf(DType::F32, 3, 3, 512));

  Outcome o = run(b, {});
  ASSERT_TRUE(o.ok) << o.error;
  double tenth = roundBf16(0.1f);
  expectValues(o.outputs["m"], {tenth, tenth, tenth, tenth, tenth, tenth});
  expectValues(o.outputs["iota"],
               {5, 6, 15, 16, 105, 106, 115, 116, 205, 206, 215, 216});
  expectValues(o.outputs["iotaf"], {-1, 2, -3, 0});
  expectValues(o.outputs["mask"], {1, -1e4, -1e4, 1, 1, -1e4, 1, 1, 1});
}

TEST(SimulatorTest, RngDrawsPhiloxAtEachElementsCounter) {
  // Every partition holds the seed 0x14b294c806b76eed as (low, high) words;
  // element [p, i] draws at counter base + p * cm + i.
  const uint64_t seed = 0x14b294c806b76eedull;
  const uint32_t low = uint32_t(seed), high = uint32_t(seed >> 32);
  Builder b;
  b.tensor("seed", DType::I32, {3, 2});
  b.tensor("mask", DType::I1, {3, 5}, HbmTensor::Kind::Output);
  b.tensor("u", DType::BF16, {3, 5}, HbmTensor::Kind::Output);
  AccessPattern seedTile = sbuf(DType::I32, 3, 2);
  b.dma(seedTile, b.hbm("seed"));
  Instruction mask = make(Opcode::Rng, sbuf(DType::I1, 3, 5, 64), {seedTile});
  mask.rngStream = 9;
  mask.base = 40;
  mask.channelMultiplier = 7;
  mask.steps = {1};
  mask.bernoulli = true;
  mask.value = float(bernoulliThreshold24(0.3));
  b.add(kVectorStream, mask);
  b.dma(b.hbm("mask"), sbuf(DType::I1, 3, 5, 64));
  Instruction uniform =
      make(Opcode::Rng, sbuf(DType::BF16, 3, 5, 128), {seedTile});
  uniform.rngStream = 2;
  uniform.channelMultiplier = 5;
  uniform.steps = {2};
  uniform.scalar0 = immediate(-2.0f);
  uniform.scalar1 = immediate(3.0f);
  b.add(kVectorStream, uniform);
  b.dma(b.hbm("u"), sbuf(DType::BF16, 3, 5, 128));

  std::vector<double> words;
  for (int p = 0; p < 3; ++p) {
    words.push_back(double(int32_t(low)));
    words.push_back(double(int32_t(high)));
  }
  Outcome o = run(b, {{"seed", words}});
  ASSERT_TRUE(o.ok) << o.error;
  std::vector<double> wantMask, wantUniform;
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < 5; ++i) {
      wantMask.push_back(philoxUniform(seed, 9, 40 + 7 * p + i) < 0.3);
      wantUniform.push_back(roundToDType(
          -2.0 + 5.0 * philoxUniform(seed, 2, 5 * p + 2 * i), DType::BF16));
    }
  expectValues(o.outputs["mask"], wantMask);
  expectValues(o.outputs["u"], wantUniform);
}

//===----------------------------------------------------------------------===//
// Indirect DMA
//===----------------------------------------------------------------------===//

Builder indirectProgram(bool gather, const std::string &table) {
  Builder b;
  b.tensor("table", DType::F32, {5, 3},
           gather ? HbmTensor::Kind::Input : HbmTensor::Kind::Output);
  b.tensor("idx", DType::I32, {4, 1});
  b.tensor("rows", DType::F32, {4, 3},
           gather ? HbmTensor::Kind::Output : HbmTensor::Kind::Input);
  b.dma(sbuf(DType::I32, 4, 1, 0), b.hbm("idx"));
  Instruction inst;
  inst.opcode = Opcode::DmaCopy;
  inst.indirect = true;
  inst.indices = sbuf(DType::I32, 4, 1, 0);
  if (gather) {
    inst.dst = sbuf(DType::F32, 4, 3, 64);
    inst.srcs = {b.hbm(table)};
    b.add(kDmaStream, inst);
    b.dma(b.hbm("rows"), sbuf(DType::F32, 4, 3, 64));
  } else {
    b.dma(sbuf(DType::F32, 4, 3, 64), b.hbm("rows"));
    inst.dst = b.hbm(table);
    inst.srcs = {sbuf(DType::F32, 4, 3, 64)};
    inst.accumulate = true;
    b.add(kDmaStream, inst);
  }
  return b;
}

TEST(SimulatorTest, IndirectGather) {
  Builder b = indirectProgram(true, "table");
  std::vector<double> table(15);
  for (int i = 0; i < 15; ++i)
    table[i] = i;
  Outcome o = run(b, {{"table", table}, {"idx", {4, 0, 2, 4}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["rows"], {12, 13, 14, 0, 1, 2, 6, 7, 8, 12, 13, 14});
}

TEST(SimulatorTest, IndirectScatterAddAccumulatesRepeats) {
  Builder b = indirectProgram(false, "table");
  // The output table starts at zero (no poison): rows 1 and 3 receive.
  Outcome o = run(b, {{"rows", {1, 2, 3, 10, 20, 30, 0.5, 0.5, 0.5, 4, 4, 4}},
                      {"idx", {1, 3, 1, 1}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["table"],
               {0, 0, 0, 5.5, 6.5, 7.5, 0, 0, 0, 10, 20, 30, 0, 0, 0});
}

TEST(SimulatorTest, IndirectTableBeyondTheOperandBound) {
  // A table of 2^29 elements (a vocabulary-sized embedding gradient) is not
  // one operand to decode: the gather reads one row per partition. The
  // untouched HBM costs no host memory.
  const int64_t rows = int64_t(1) << 21, columns = 256;
  Builder b;
  b.tensor("table", DType::BF16, {rows, columns}, HbmTensor::Kind::Input);
  b.tensor("idx", DType::I32, {4, 1});
  b.tensor("out", DType::BF16, {4, columns}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::I32, 4, 1, 0), b.hbm("idx"));
  Instruction inst;
  inst.opcode = Opcode::DmaCopy;
  inst.indirect = true;
  inst.indices = sbuf(DType::I32, 4, 1, 0);
  inst.dst = sbuf(DType::BF16, 4, columns, 64);
  inst.srcs = {b.hbm("table")};
  b.add(kDmaStream, inst);
  b.dma(b.hbm("out"), sbuf(DType::BF16, 4, columns, 64));
  Outcome o = run(b, {{"idx", {double(rows - 1), 0, 5, 7}}});
  ASSERT_TRUE(o.ok) << o.error;
  expectValues(o.outputs["out"], std::vector<double>(4 * columns, 0.0));
}

TEST(SimulatorTest, IndirectIndexOutOfRange) {
  Builder b = indirectProgram(true, "table");
  Outcome o =
      run(b, {{"table", std::vector<double>(15, 1.0)}, {"idx", {0, 5, 1, 1}}});
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.error.find("index 5 at partition 1"), std::string::npos)
      << o.error;
  EXPECT_NE(o.error.find("'table'"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("dma_copy"), std::string::npos) << o.error;

  Outcome negative =
      run(b, {{"table", std::vector<double>(15, 1.0)}, {"idx", {0, 1, -1, 1}}});
  ASSERT_FALSE(negative.ok);
  EXPECT_NE(negative.error.find("index -1"), std::string::npos)
      << negative.error;
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(SimulatorTest, BoundsErrorsNameStreamInstructionAndOperand) {
  {
    Builder b;
    b.add(kVectorStream, make(Opcode::Memset, sbuf(DType::F32, 2, 4)));
    b.add(kVectorStream, make(Opcode::TensorCopy, sbuf(DType::F32, 2, 4),
                              {sbuf(DType::F32, 2, 4, 192 * 1024 - 8)}));
    Outcome o = run(b, {});
    ASSERT_FALSE(o.ok);
    EXPECT_EQ(o.error.rfind("vector stream #1 tensor_copy: src (srcs[0]) "
                            "(SBUF f32) bytes [196600, 196616)",
                            0),
              0u)
        << o.error;
    EXPECT_NE(o.error.find("outside the 196608-byte SBUF partition"),
              std::string::npos)
        << o.error;
  }
  {
    Builder b;
    b.add(kScalarStream,
          make(Opcode::Activation, sbuf(DType::F32, 64, 4, 0, 96),
               {sbuf(DType::F32, 64, 4)}));
    Outcome o = run(b, {});
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("scalar stream #0 activation: dst"),
              std::string::npos)
        << o.error;
    EXPECT_NE(o.error.find("partitions [96, 160) exceed the 128 partitions"),
              std::string::npos)
        << o.error;
  }
  {
    Builder b;
    b.tensor("x", DType::F32, {4, 4});
    AccessPattern beyond = b.hbm("x");
    beyond.numPartitions = 5;
    b.dma(sbuf(DType::F32, 5, 4), beyond);
    Outcome o = run(b, {});
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("dma queue 0 #0 dma_copy: src"), std::string::npos)
        << o.error;
    EXPECT_NE(o.error.find("outside the program's 64 bytes of HBM"),
              std::string::npos)
        << o.error;
  }
  {
    // PSUM: 16 KiB per partition.
    Builder b;
    b.add(kVectorStream,
          make(Opcode::Memset, psum(DType::F32, 1, 8, 16 * 1024 - 16)));
    Outcome o = run(b, {});
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("16384-byte PSUM partition"), std::string::npos)
        << o.error;
  }
}

TEST(SimulatorTest, OperandAndEngineErrors) {
  {
    Builder b;
    b.add(kVectorStream,
          make(Opcode::Matmul, psum(DType::F32, 1, 1),
               {sbuf(DType::F32, 1, 1), sbuf(DType::F32, 1, 1)}));
    Outcome o = run(b, {});
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("cannot run on the vector engine"),
              std::string::npos)
        << o.error;
  }
  {
    Builder b;
    b.add(kGpSimdStream, make(Opcode::TensorCopy, sbuf(DType::F32, 1, 1),
                              {psum(DType::F32, 1, 1)}));
    Outcome o = run(b, {});
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("GpSimd accesses SBUF only"), std::string::npos)
        << o.error;
  }
  {
    Builder b;
    b.add(kVectorStream,
          make(Opcode::TensorTensor, sbuf(DType::F32, 2, 4),
               {sbuf(DType::F32, 2, 4), sbuf(DType::F32, 2, 3)}));
    Outcome o = run(b, {});
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("srcs[0] is [2, 4] but srcs[1] is [2, 3]"),
              std::string::npos)
        << o.error;
  }
  {
    Builder b;
    Instruction ar;
    ar.opcode = Opcode::AllReduce;
    b.add(kSyncStream, ar);
    Outcome o = run(b, {});
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("all_reduce"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("needs its mesh bound: run it with trn-run --mesh"),
              std::string::npos)
        << o.error;
  }
  {
    Builder b;
    Instruction nop;
    nop.waits = {{3, 1}};
    b.program.engineStreams[kSyncStream].push_back(nop);
    Outcome o = run(b, {});
    ASSERT_FALSE(o.ok);
    EXPECT_NE(o.error.find("semaphore 3"), std::string::npos) << o.error;
  }
}

TEST(SimulatorTest, OutOfHbmNamesTheTensor) {
  Builder b;
  b.tensor("small", DType::F32, {16});
  b.tensor("weights", DType::BF16, {65536, 65536, 2}); // 16 GiB
  Simulator sim(trn1Target());
  std::string error;
  EXPECT_FALSE(sim.load(b.program, error));
  EXPECT_NE(error.find("out of HBM memory"), std::string::npos) << error;
  EXPECT_NE(error.find("input tensor 'weights' (bf16[65536,65536,2]"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("16.00 GiB"), std::string::npos) << error;
}

TEST(SimulatorTest, TensorIoErrors) {
  Builder b;
  b.tensor("x", DType::F32, {2, 2});
  Simulator sim(trn1Target());
  std::string error;
  SimulationStats stats;
  EXPECT_FALSE(sim.run(stats, error));
  EXPECT_EQ(error, "no program is loaded");
  ASSERT_TRUE(sim.load(b.program, error)) << error;
  std::vector<double> three = {1, 2, 3};
  EXPECT_FALSE(sim.writeTensor("x", three.data(), three.size(), error));
  EXPECT_NE(error.find("has 4 elements, not 3"), std::string::npos) << error;
  EXPECT_FALSE(sim.writeTensor("y", three.data(), 3, error));
  EXPECT_NE(error.find("no HBM tensor named 'y'"), std::string::npos) << error;
  b.program.target = "trn2";
  EXPECT_FALSE(sim.load(b.program, error));
  EXPECT_NE(error.find("compiled for 'trn2'"), std::string::npos) << error;
}

TEST(SimulatorTest, PoisonMakesUninitialisedReadsNaN) {
  Builder b;
  b.tensor("out", DType::F32, {1, 4}, HbmTensor::Kind::Output);
  // Reads SBUF that nothing wrote.
  b.add(kVectorStream, make(Opcode::TensorCopy, sbuf(DType::F32, 1, 4, 64),
                            {sbuf(DType::F32, 1, 4, 0)}));
  b.dma(b.hbm("out"), sbuf(DType::F32, 1, 4, 64));
  Outcome poisoned = run(b, {}, SimulatorOptions{true, false});
  ASSERT_TRUE(poisoned.ok) << poisoned.error;
  for (double v : poisoned.outputs["out"])
    EXPECT_TRUE(std::isnan(v));
  Outcome clean = run(b, {});
  ASSERT_TRUE(clean.ok) << clean.error;
  expectValues(clean.outputs["out"], {0, 0, 0, 0});

  // An input the caller never wrote reads as NaN too.
  Builder c;
  c.tensor("x", DType::BF16, {1, 2});
  c.tensor("y", DType::F32, {1, 2}, HbmTensor::Kind::Output);
  c.dma(sbuf(DType::F32, 1, 2), c.hbm("x"));
  c.dma(c.hbm("y"), sbuf(DType::F32, 1, 2));
  Outcome unwritten = run(c, {}, SimulatorOptions{true, false});
  ASSERT_TRUE(unwritten.ok) << unwritten.error;
  EXPECT_TRUE(std::isnan(unwritten.outputs["y"][0]));
}

TEST(SimulatorTest, DeadlockNamesTheBlockedStreams) {
  Builder b;
  b.program.numSemaphores = 2;
  Instruction waitOnVector;
  waitOnVector.waits = {{0, 1}};
  waitOnVector.signal = 1;
  Instruction waitOnTensor;
  waitOnTensor.waits = {{1, 1}};
  waitOnTensor.signal = 0;
  b.program.engineStreams[kTensorStream].push_back(waitOnVector);
  b.program.engineStreams[kVectorStream].push_back(
      make(Opcode::Memset, sbuf(DType::F32, 1, 1)));
  b.program.engineStreams[kVectorStream].push_back(waitOnTensor);
  Outcome o = run(b, {});
  ASSERT_FALSE(o.ok);
  // The memset ran (max(64, 1) + 60 cycles at 1.12 GHz), then nothing can.
  EXPECT_EQ(o.error, "deadlock after 111 ns: 2 of 2 streams cannot "
                     "proceed: tensor stream #0 nop waits for semaphore 0 >= "
                     "1 (is 0); vector stream #1 nop waits for semaphore 1 "
                     ">= 1 (is 0)");
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

TEST(SimulatorTest, BackToBackMatmulsReachFullUtilisation) {
  // 64 matmuls of 128x128 by 128x512 bf16, cycling through 8 PSUM banks.
  Builder b;
  b.program.numSemaphores = 0;
  for (int i = 0; i < 64; ++i) {
    Instruction mm = make(
        Opcode::Matmul, psum(DType::F32, 128, 512, 0),
        {sbuf(DType::BF16, 128, 128, 0), sbuf(DType::BF16, 128, 512, 256)});
    mm.dst.byteOffset = 2048 * (i % 8);
    b.program.engineStreams[kTensorStream].push_back(mm);
  }
  Outcome o = run(b, {});
  ASSERT_TRUE(o.ok) << o.error;
  // 512 cycles at 2.8 GHz each.
  EXPECT_NEAR(o.stats.deviceTimeNs, 64 * 512 / 2.8, 1e-6);
  EXPECT_NEAR(o.stats.tensorEngineUtilisation, 1.0, 1e-9);
  EXPECT_NEAR(o.stats.mfu, 1.0, 1e-9);
  EXPECT_NEAR(o.stats.mfuBf16Peak, 1.0, 1e-9);
  EXPECT_NEAR(o.stats.engines[0].busyPercent, 100.0, 1e-9);
  EXPECT_EQ(o.stats.matmulFlops, uint64_t(64) * 2 * 128 * 128 * 512);

  // Short matmuls pay MM_INIT_LATENCY: N = 32 costs 64 cycles, half used.
  Builder c;
  c.program.numSemaphores = 0;
  for (int i = 0; i < 10; ++i)
    c.program.engineStreams[kTensorStream].push_back(
        make(Opcode::Matmul, psum(DType::F32, 128, 32),
             {sbuf(DType::BF16, 128, 128), sbuf(DType::BF16, 128, 32, 256)}));
  o = run(c, {});
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_NEAR(o.stats.deviceTimeNs, 10 * 64 / 2.8, 1e-6);
  EXPECT_NEAR(o.stats.tensorEngineUtilisation, 0.5, 1e-9);

  // fp32 inputs cost 4x; MFU against the fp32 peak stays at 100%.
  Builder d;
  d.program.numSemaphores = 0;
  d.program.engineStreams[kTensorStream].push_back(
      make(Opcode::Matmul, psum(DType::F32, 128, 512),
           {sbuf(DType::F32, 128, 128), sbuf(DType::F32, 128, 512, 1024)}));
  o = run(d, {});
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_NEAR(o.stats.deviceTimeNs, 4 * 512 / 2.8, 1e-6);
  EXPECT_NEAR(o.stats.mfu, 1.0, 1e-9);
  EXPECT_NEAR(o.stats.mfuFp32Peak, 1.0, 1e-9);
  EXPECT_NEAR(o.stats.mfuBf16Peak, 0.25, 1e-9);
}

TEST(SimulatorTest, ComputeCostFormulas) {
  // One instruction per program: its time is its cost plus, on Vector and
  // Scalar, the first instruction's access overhead (docs/isa.md §7).
  auto timeOf = [](unsigned stream, Instruction inst) {
    Builder b;
    b.program.numSemaphores = 0;
    b.program.engineStreams[stream].push_back(std::move(inst));
    Outcome o = run(b, {});
    EXPECT_TRUE(o.ok) << o.error;
    return o.stats.deviceTimeNs;
  };
  auto tensorTensor = [](DType dtype, Memory in0, AluOp op) {
    Instruction inst = make(
        Opcode::TensorTensor, sbuf(dtype, 128, 512, 8192),
        {onChip(in0, dtype, 128, {{512, 1}}), sbuf(dtype, 128, 512, 4096)});
    inst.op0 = op;
    return inst;
  };
  const double vector = 1.12, scalar = 1.4, gpsimd = 1.4, tensor = 2.8;
  EXPECT_NEAR(
      timeOf(kVectorStream, tensorTensor(DType::F32, Memory::Sbuf, AluOp::Add)),
      (1024 + 60) / vector, 1e-6);
  EXPECT_NEAR(timeOf(kVectorStream,
                     tensorTensor(DType::BF16, Memory::Sbuf, AluOp::Add)),
              (512 + 60) / vector, 1e-6);
  EXPECT_NEAR(timeOf(kVectorStream,
                     tensorTensor(DType::BF16, Memory::Sbuf, AluOp::Max)),
              (1024 + 60) / vector, 1e-6);
  EXPECT_NEAR(
      timeOf(kVectorStream, tensorTensor(DType::F32, Memory::Psum, AluOp::Add)),
      (512 + 60) / vector, 1e-6);
  // GpSimd: 150 + k * ceil(N * b / 4) with k = 2 inputs, b = 2 bytes.
  EXPECT_NEAR(timeOf(kGpSimdStream,
                     tensorTensor(DType::BF16, Memory::Sbuf, AluOp::Add)),
              (150 + 2 * 256) / gpsimd, 1e-6);
  // A 32-byte innermost stride halves the rate.
  EXPECT_NEAR(
      timeOf(kVectorStream,
             make(Opcode::TensorCopy, sbuf(DType::F32, 128, 256),
                  {onChip(Memory::Sbuf, DType::F32, 128, {{256, 8}}, 4096)})),
      (512 + 60) / vector, 1e-6);
  Instruction reduce = make(Opcode::TensorReduce, sbuf(DType::BF16, 128, 1),
                            {sbuf(DType::BF16, 128, 512, 64)});
  reduce.op0 = AluOp::Add;
  EXPECT_NEAR(timeOf(kVectorStream, reduce), (256 + 60) / vector, 1e-6);
  Instruction zero = make(Opcode::Memset, sbuf(DType::BF16, 128, 512));
  EXPECT_NEAR(timeOf(kVectorStream, zero), (256 + 60) / vector, 1e-6);
  EXPECT_NEAR(
      timeOf(kVectorStream, make(Opcode::BnAggr, sbuf(DType::F32, 128, 2),
                                 {sbuf(DType::F32, 128, 6, 64)})),
      (64 + 60) / vector, 1e-6);
  Instruction act = make(Opcode::Activation, sbuf(DType::F32, 128, 512),
                         {sbuf(DType::F32, 128, 512, 4096)});
  act.accumulateRow = true;
  act.reduceDst = sbuf(DType::F32, 128, 1, 8192);
  EXPECT_NEAR(timeOf(kScalarStream, act), (512 + 64 + 200) / scalar, 1e-6);
  // Transpose of fp32 [128, 128]: max(P, min(64, F)) x 4.
  EXPECT_NEAR(
      timeOf(kTensorStream, make(Opcode::Transpose, psum(DType::F32, 128, 128),
                                 {sbuf(DType::F32, 128, 128)})),
      4 * 128 / tensor, 1e-6);
  // Nops are free.
  EXPECT_EQ(timeOf(kSyncStream, Instruction()), 0.0);
}

TEST(SimulatorTest, DependentChainIsSlowerThanIndependentWork) {
  auto copy = [](int64_t from, int64_t to) {
    return make(Opcode::TensorCopy, sbuf(DType::F32, 128, 512, to),
                {sbuf(DType::F32, 128, 512, from)});
  };
  // Eight copies on the Vector Engine, each reading the previous result.
  Builder chain;
  chain.program.numSemaphores = 0;
  for (int i = 0; i < 8; ++i)
    chain.program.engineStreams[kVectorStream].push_back(
        copy(2048 * i, 2048 * (i + 1)));
  // Eight copies of independent data.
  Builder independent;
  independent.program.numSemaphores = 0;
  for (int i = 0; i < 8; ++i)
    independent.program.engineStreams[kVectorStream].push_back(
        copy(4096 * i, 4096 * i + 2048));
  Outcome a = run(chain, {});
  Outcome b = run(independent, {});
  ASSERT_TRUE(a.ok && b.ok) << a.error << b.error;
  // N = 512 cycles each; every chained copy pays the 60-cycle overhead, the
  // independent ones only the first.
  EXPECT_NEAR(a.stats.deviceTimeNs, 8 * (512 + 60) / 1.12, 1e-6);
  EXPECT_NEAR(b.stats.deviceTimeNs, (8 * 512 + 60) / 1.12, 1e-6);

  // Across engines: a Vector -> Scalar -> Vector ... chain through
  // semaphores is slower than the same work without dependencies.
  Builder crossChain; // Builder::add orders every step after the previous
  for (int i = 0; i < 6; ++i)
    crossChain.add(i % 2 ? kScalarStream : kVectorStream,
                   i % 2 ? make(Opcode::Activation,
                                sbuf(DType::F32, 128, 512, 2048 * (i + 1)),
                                {sbuf(DType::F32, 128, 512, 2048 * i)})
                         : copy(2048 * i, 2048 * (i + 1)));
  Builder parallel;
  parallel.program.numSemaphores = 0;
  for (int i = 0; i < 6; ++i)
    parallel.program.engineStreams[i % 2 ? kScalarStream : kVectorStream]
        .push_back(i % 2 ? make(Opcode::Activation,
                                sbuf(DType::F32, 128, 512, 40000 + 2048 * i),
                                {sbuf(DType::F32, 128, 512, 2048 * i)})
                         : copy(2048 * i, 40000 + 2048 * i));
  Outcome c = run(crossChain, {});
  Outcome d = run(parallel, {});
  ASSERT_TRUE(c.ok && d.ok) << c.error << d.error;
  EXPECT_GT(c.stats.deviceTimeNs, 1.5 * d.stats.deviceTimeNs);
}

TEST(SimulatorTest, DmaTimeFollowsTheModel) {
  auto load = [](unsigned partitions, int64_t free) {
    Builder b;
    b.program.numSemaphores = 0;
    b.tensor("x", DType::F32, {partitions, free});
    b.program.dmaQueues[0].push_back(make(
        Opcode::DmaCopy, sbuf(DType::F32, partitions, free), {b.hbm("x")}));
    return run(b, {});
  };
  // docs/isa.md §7.3: 128 x 512 fp32 takes 1300 + 262144/272 + 8 * 30 ns.
  Outcome o = load(128, 512);
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_NEAR(o.stats.deviceTimeNs, 1300 + 262144.0 / 272 + 8 * 30, 1e-6);
  EXPECT_EQ(o.stats.dmaCount, 1u);
  EXPECT_EQ(o.stats.hbmToSbufBytes, 262144u);
  EXPECT_DOUBLE_EQ(o.stats.averageDmaBytes, 262144.0);
  double previous = 0;
  for (int64_t free : {16, 64, 256, 1024, 4096}) {
    Outcome sized = load(128, free);
    ASSERT_TRUE(sized.ok) << sized.error;
    EXPECT_GT(sized.stats.deviceTimeNs, previous);
    previous = sized.stats.deviceTimeNs;
  }
  // Fewer partitions use fewer DMA engines: 8 partitions -> 1 engine.
  Outcome narrow = load(8, 512);
  ASSERT_TRUE(narrow.ok) << narrow.error;
  EXPECT_NEAR(narrow.stats.deviceTimeNs, 1300 + 16384.0 / 17 + 8 * 30, 1e-6);
}

TEST(SimulatorTest, DmaQueuesOverlapLatencyAndShareEngines) {
  // Two 128 x 512 fp32 loads on two queues: the fixed latencies overlap,
  // the data phases run one after the other.
  Builder b;
  b.program.numSemaphores = 0;
  b.program.dmaQueues.resize(2);
  b.tensor("x", DType::F32, {128, 512});
  b.tensor("y", DType::F32, {128, 512});
  b.program.dmaQueues[0].push_back(
      make(Opcode::DmaCopy, sbuf(DType::F32, 128, 512), {b.hbm("x")}));
  b.program.dmaQueues[1].push_back(
      make(Opcode::DmaCopy, sbuf(DType::F32, 128, 512, 4096), {b.hbm("y")}));
  Outcome o = run(b, {});
  ASSERT_TRUE(o.ok) << o.error;
  const double data = 262144.0 / 272 + 8 * 30;
  EXPECT_NEAR(o.stats.deviceTimeNs, 1300 + 2 * data, 1e-6);
  EXPECT_NEAR(o.stats.dmaActiveNs, 1300 + 2 * data, 1e-6);
  EXPECT_EQ(o.stats.dmaQueues.size(), 2u);
  EXPECT_EQ(o.stats.dmaCount, 2u);
}

TEST(SimulatorTest, PortConflictsSerialiseVectorAndGpSimd) {
  // Vector and GpSimd both touching SBUF never overlap on trn1; Vector and
  // Scalar on SBUF do.
  auto copy = [](int64_t offset) {
    return make(Opcode::TensorCopy, sbuf(DType::F32, 128, 1024, offset + 4096),
                {sbuf(DType::F32, 128, 1024, offset)});
  };
  Builder b;
  b.program.numSemaphores = 0;
  b.program.engineStreams[kVectorStream].push_back(copy(0));
  b.program.engineStreams[kGpSimdStream].push_back(copy(16384));
  Outcome o = run(b, {});
  ASSERT_TRUE(o.ok) << o.error;
  const double vector = (1024 + 60) / 1.12;
  // GpSimd: 150 + Ng with Ng = N * 4 / 4; it waited for the port.
  const double gpsimd = (150 + 1024) / 1.4;
  EXPECT_NEAR(o.stats.deviceTimeNs, vector + gpsimd, 1e-6);
  // The wait is the GpSimd stream's port stall; nobody waited on a
  // semaphore.
  EXPECT_NEAR(o.stats.engines[kGpSimdStream].portWaitNs, vector, 1e-6);
  EXPECT_EQ(o.stats.engines[kVectorStream].portWaitNs, 0.0);
  EXPECT_EQ(o.stats.engines[kGpSimdStream].semaphoreWaitNs, 0.0);

  Builder c;
  c.program.numSemaphores = 0;
  c.program.engineStreams[kVectorStream].push_back(copy(0));
  c.program.engineStreams[kScalarStream].push_back(
      make(Opcode::Activation, sbuf(DType::F32, 128, 1024, 40000),
           {sbuf(DType::F32, 128, 1024, 16384)}));
  o = run(c, {});
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_NEAR(o.stats.deviceTimeNs, std::max(vector, (1024 + 200) / 1.4), 1e-6);
}

TEST(SimulatorTest, TimingOnlyCostsTheSameAndComputesNothing) {
  // A matmul between DMAs, run in full and timing only: the same times and
  // statistics; timing only leaves the output as it was (zero).
  Builder b;
  b.tensor("a", DType::BF16, {128, 64});
  b.tensor("b", DType::BF16, {128, 512});
  b.tensor("y", DType::F32, {64, 512}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::BF16, 128, 64), b.hbm("a"));
  b.dma(sbuf(DType::BF16, 128, 512, 1024), b.hbm("b"));
  b.add(kTensorStream,
        make(Opcode::Matmul, psum(DType::F32, 64, 512),
             {sbuf(DType::BF16, 128, 64), sbuf(DType::BF16, 128, 512, 1024)}));
  b.add(kVectorStream, make(Opcode::TensorCopy, sbuf(DType::F32, 64, 512, 4096),
                            {psum(DType::F32, 64, 512)}));
  b.dma(b.hbm("y"), sbuf(DType::F32, 64, 512, 4096));
  std::map<std::string, std::vector<double>> inputs = {
      {"a", std::vector<double>(128 * 64, 1.0)},
      {"b", std::vector<double>(128 * 512, 0.5)}};
  Outcome full = run(b, inputs);
  SimulatorOptions timingOnly;
  timingOnly.timingOnly = true;
  Outcome timed = run(b, inputs, timingOnly);
  ASSERT_TRUE(full.ok) << full.error;
  ASSERT_TRUE(timed.ok) << timed.error;
  EXPECT_EQ(timed.stats.deviceTimeNs, full.stats.deviceTimeNs);
  EXPECT_EQ(timed.stats.matmulFlops, full.stats.matmulFlops);
  EXPECT_EQ(timed.stats.hbmToSbufBytes, full.stats.hbmToSbufBytes);
  EXPECT_EQ(timed.stats.instructions, full.stats.instructions);
  expectValues(full.outputs["y"], std::vector<double>(64 * 512, 64.0));
  expectValues(timed.outputs["y"], std::vector<double>(64 * 512, 0.0));
}

TEST(SimulatorTest, StatisticsAndRecords) {
  Builder b;
  b.tensor("x", DType::F32, {4, 8});
  b.tensor("spill", DType::F32, {4, 8}, HbmTensor::Kind::Scratch);
  b.tensor("y", DType::F32, {4, 8}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::F32, 4, 8), b.hbm("x"));
  b.dma(b.hbm("spill"), sbuf(DType::F32, 4, 8));
  b.dma(sbuf(DType::F32, 4, 8, 64), b.hbm("spill"));
  b.dma(b.hbm("y"), sbuf(DType::F32, 4, 8, 64));
  Simulator sim(trn1Target(), SimulatorOptions{false, true});
  std::string error;
  ASSERT_TRUE(sim.load(b.program, error)) << error;
  std::vector<double> x(32, 2.0);
  ASSERT_TRUE(sim.writeTensor("x", x.data(), x.size(), error));
  SimulationStats stats;
  ASSERT_TRUE(sim.run(stats, error)) << error;
  EXPECT_EQ(stats.dmaCount, 4u);
  EXPECT_EQ(stats.hbmToSbufBytes, 256u);
  EXPECT_EQ(stats.sbufToHbmBytes, 256u);
  EXPECT_EQ(stats.spillSaveBytes, 128u);
  EXPECT_EQ(stats.spillReloadBytes, 128u);
  EXPECT_EQ(stats.spillBytes(), 256u);
  ASSERT_EQ(stats.records.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(stats.records[i].stream, kDmaStream);
    EXPECT_EQ(stats.records[i].index, i);
    EXPECT_EQ(stats.records[i].opcode, Opcode::DmaCopy);
    EXPECT_LT(stats.records[i].startNs, stats.records[i].endNs);
    if (i) {
      EXPECT_GE(stats.records[i].startNs, stats.records[i - 1].endNs);
    }
  }
  EXPECT_DOUBLE_EQ(stats.deviceTimeNs, stats.records.back().endNs);
  EXPECT_NEAR(stats.dmaQueues[0].busyPercent, 100.0, 1e-9);
  // Running again starts from fresh on-chip memory with the same result.
  SimulationStats again;
  ASSERT_TRUE(sim.run(again, error)) << error;
  EXPECT_DOUBLE_EQ(again.deviceTimeNs, stats.deviceTimeNs);
  std::vector<double> y;
  ASSERT_TRUE(sim.readTensor("y", y, error));
  expectValues(y, x);
}

//===----------------------------------------------------------------------===//
// Host threads
//===----------------------------------------------------------------------===//

TEST(SimulatorTest, ResultsDoNotDependOnThreads) {
  // Instructions big enough to be cut into pieces (a 128x128x512 matmul in
  // two column halves; activations, tensor_tensor, tensor_scalar, transposes
  // and copies by partitions),
  // including in-place work whose source and destination overlap, give the
  // same bits on 1, 2 and 3 threads, and the overlapping ones read every
  // element before it is overwritten.
  Builder b;
  b.tensor("a", DType::F32, {128, 512});
  b.tensor("w", DType::F32, {128, 512});
  b.tensor("y", DType::F32, {128, 512}, HbmTensor::Kind::Output);
  b.tensor("z", DType::F32, {128, 512}, HbmTensor::Kind::Output);
  b.tensor("t", DType::F32, {128, 128}, HbmTensor::Kind::Output);
  b.tensor("s", DType::F32, {128, 512}, HbmTensor::Kind::Output);
  b.tensor("u", DType::F32, {128, 512}, HbmTensor::Kind::Output);
  b.tensor("v", DType::F32, {128, 512}, HbmTensor::Kind::Output);
  b.dma(sbuf(DType::F32, 128, 512, 0), b.hbm("a"));
  b.dma(sbuf(DType::F32, 128, 512, 2048), b.hbm("w"));
  b.add(kTensorStream, make(Opcode::Matmul, psum(DType::F32, 128, 512, 0),
                            {sbuf(DType::F32, 128, 128, 0),
                             sbuf(DType::F32, 128, 512, 2048)}));
  Instruction gelu = make(Opcode::Activation, sbuf(DType::F32, 128, 512, 4096),
                          {psum(DType::F32, 128, 512, 0)});
  gelu.func = ActivationFunc::GeluTanh;
  b.add(kScalarStream, gelu);
  b.dma(b.hbm("y"), sbuf(DType::F32, 128, 512, 4096));
  // In place, one partition down: z[p + 1] = tanh(y[p]), z[0] = y[0].
  Instruction shifted =
      make(Opcode::Activation, sbuf(DType::F32, 127, 512, 4096, 1),
           {sbuf(DType::F32, 127, 512, 4096, 0)});
  shifted.func = ActivationFunc::Tanh;
  b.add(kScalarStream, shifted);
  b.dma(b.hbm("z"), sbuf(DType::F32, 128, 512, 4096));
  b.add(kTensorStream, make(Opcode::Transpose, psum(DType::F32, 128, 128, 2048),
                            {sbuf(DType::F32, 128, 128, 0)}));
  b.add(kVectorStream,
        make(Opcode::TensorCopy, sbuf(DType::F32, 128, 128, 8192),
             {psum(DType::F32, 128, 128, 2048)}));
  b.dma(b.hbm("t"), sbuf(DType::F32, 128, 128, 8192));
  // An SBUF-to-SBUF DMA onto itself, two partitions down.
  b.dma(sbuf(DType::F32, 126, 512, 2048, 2), sbuf(DType::F32, 126, 512, 2048));
  b.dma(b.hbm("s"), sbuf(DType::F32, 128, 512, 2048));
  // tensor_tensor in place, one partition down: u[p + 1] = s[p] + a[p].
  Instruction add =
      make(Opcode::TensorTensor, sbuf(DType::F32, 127, 512, 2048, 1),
           {sbuf(DType::F32, 127, 512, 2048), sbuf(DType::F32, 127, 512, 0)});
  add.op0 = AluOp::Add;
  b.add(kVectorStream, add);
  b.dma(b.hbm("u"), sbuf(DType::F32, 128, 512, 2048));
  // tensor_scalar in place: v = z * 3 + 1.
  Instruction affine =
      make(Opcode::TensorScalar, sbuf(DType::F32, 128, 512, 4096),
           {sbuf(DType::F32, 128, 512, 4096)});
  affine.op0 = AluOp::Multiply;
  affine.scalar0 = immediate(3.0f);
  affine.op1 = AluOp::Add;
  affine.scalar1 = immediate(1.0f);
  b.add(kVectorStream, affine);
  b.dma(b.hbm("v"), sbuf(DType::F32, 128, 512, 4096));

  std::mt19937 random(5);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> a(128 * 512), w(128 * 512);
  for (double &v : a)
    v = uniform(random);
  for (double &v : w)
    v = uniform(random);
  std::map<std::string, std::vector<double>> first;
  for (unsigned threads : {1u, 2u, 3u}) {
    SimulatorOptions options;
    options.threads = threads;
    Outcome o = run(b, {{"a", a}, {"w", w}}, options);
    ASSERT_TRUE(o.ok) << o.error;
    if (threads == 1) {
      first = o.outputs;
      continue;
    }
    for (const auto &[name, values] : first)
      EXPECT_EQ(std::memcmp(values.data(), o.outputs[name].data(),
                            values.size() * sizeof(double)),
                0)
          << name << " on " << threads << " threads";
  }
  const std::vector<double> &y = first["y"], &z = first["z"], &t = first["t"],
                            &s = first["s"], &u = first["u"], &v = first["v"];
  for (int64_t f = 0; f < 512; ++f) {
    EXPECT_EQ(u[f], s[f]);
    for (int64_t p = 0; p < 127; ++p)
      ASSERT_EQ(u[(p + 1) * 512 + f],
                float(float(s[p * 512 + f]) + float(a[p * 512 + f])))
          << p << ", " << f;
    for (int64_t p = 0; p < 128; ++p)
      ASSERT_EQ(v[p * 512 + f], float(float(z[p * 512 + f]) * 3.0f + 1.0f))
          << p << ", " << f;
    EXPECT_EQ(z[f], y[f]);
    for (int64_t p = 0; p < 127; ++p)
      ASSERT_EQ(z[(p + 1) * 512 + f], float(std::tanh(y[p * 512 + f])))
          << p << ", " << f;
    for (int64_t p = 0; p < 126; ++p)
      ASSERT_EQ(s[(p + 2) * 512 + f], float(w[p * 512 + f])) << p;
  }
  for (int64_t p = 0; p < 128; ++p)
    for (int64_t f = 0; f < 128; ++f)
      ASSERT_EQ(t[f * 128 + p], float(a[p * 512 + f]));
}

} // namespace
