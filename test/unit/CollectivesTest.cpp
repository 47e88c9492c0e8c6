//===- CollectivesTest.cpp - collectives, their cost, mesh runs -----------===//
//
// The ring cost formulas (NeuronLink inside a trn1.32xlarge, EFA across),
// the semantics of every collective on bytes, replica groups, splitting and
// assembling global tensors by shardings, binding a mesh at load time, the
// in-process job's timeout and abort, and the artifact's mesh section.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Collectives.h"
#include "trnrt/Artifact.h"
#include "trnrt/IsaValidate.h"
#include "trnrt/Mesh.h"
#include "trnrt/Numerics.h"
#include "trnrt/Simulator.h"
#include "trnrt/Target.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

using namespace trnrt;

namespace {

/// A whole HBM tensor of `elements` at `offset` (a collective operand).
AccessPattern whole(DType dtype, uint32_t elements, int64_t offset = 0) {
  AccessPattern ap;
  ap.memory = Memory::Hbm;
  ap.dtype = dtype;
  ap.numPartitions = elements;
  ap.partitionStride = 1;
  ap.byteOffset = offset;
  ap.dims = {{1, 1}};
  return ap;
}

Instruction collective(Opcode opcode, DType dtype, uint32_t in, uint32_t out) {
  Instruction inst;
  inst.opcode = opcode;
  inst.srcs = {whole(dtype, in)};
  inst.dst = whole(dtype, out, 4096);
  inst.meshAxes = 1;
  if (opcode == Opcode::AllReduce || opcode == Opcode::ReduceScatter)
    inst.op0 = AluOp::Add;
  return inst;
}

std::vector<uint8_t> floats(std::vector<float> values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> asFloats(const std::vector<uint8_t> &bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

std::vector<int> ranks(int first, int count) {
  std::vector<int> group;
  for (int r = first; r < first + count; ++r)
    group.push_back(r);
  return group;
}

} // namespace

//===----------------------------------------------------------------------===//
// Cost
//===----------------------------------------------------------------------===//

TEST(CollectiveCost, RingAllReduceInsideAnInstance) {
  const Target &t = trn1Target();
  // 384 GB/s per chip shared by its 2 cores: 192 B/ns per rank; 1.3 us per
  // ring step.
  double bandwidth = 0, latency = 0;
  ringLink(t, ranks(0, 8), 8, bandwidth, latency);
  EXPECT_DOUBLE_EQ(bandwidth, 192.0);
  EXPECT_DOUBLE_EQ(latency, 1300.0);
  Instruction reduce = collective(Opcode::AllReduce, DType::F32, 1, 1);
  const uint64_t bytes = 64ull << 20;
  // 2(n-1)/n S/B + 2(n-1) a with n = 8.
  double expected = 2.0 * 7 / 8 * double(bytes) / 192.0 + 2.0 * 7 * 1300.0;
  EXPECT_DOUBLE_EQ(collectiveTimeNs(t, reduce, ranks(0, 8), 8, bytes, bytes),
                   expected);
  // All-gather and reduce-scatter move (n-1)/n of the larger side once.
  Instruction gather = collective(Opcode::AllGather, DType::F32, 1, 8);
  EXPECT_DOUBLE_EQ(
      collectiveTimeNs(t, gather, ranks(0, 8), 8, bytes / 8, bytes),
      7.0 / 8 * double(bytes) / 192.0 + 7 * 1300.0);
  Instruction scatter = collective(Opcode::ReduceScatter, DType::F32, 8, 1);
  EXPECT_DOUBLE_EQ(
      collectiveTimeNs(t, scatter, ranks(0, 8), 8, bytes, bytes / 8),
      7.0 / 8 * double(bytes) / 192.0 + 7 * 1300.0);
  // Half the ranks: less latency, a larger share of S per step.
  EXPECT_LT(collectiveTimeNs(t, reduce, ranks(0, 4), 8, bytes, bytes),
            expected);
}

TEST(CollectiveCost, GroupsAcrossInstancesShareTheEfa) {
  const Target &t = trn1Target();
  // dp = 2 over two instances of 32 cores each: each dp group has one
  // member per instance, and 32 such groups cross each instance's EFA
  // (100 GB/s) at once.
  std::vector<int> group = {5, 37};
  double bandwidth = 0, latency = 0;
  ringLink(t, group, 64, bandwidth, latency);
  EXPECT_DOUBLE_EQ(bandwidth, 100.0 / 32.0);
  EXPECT_DOUBLE_EQ(latency, t.networkLatencyNs);
  // A group of 16 ranks on each of two instances: 2 groups per instance.
  std::vector<int> wide;
  for (int r = 0; r < 16; ++r) {
    wide.push_back(r);
    wide.push_back(32 + r);
  }
  ringLink(t, wide, 64, bandwidth, latency);
  EXPECT_DOUBLE_EQ(bandwidth, 100.0 * 16.0 / 32.0);
  // Inside one instance the link is never EFA-bound.
  ringLink(t, {0, 31}, 64, bandwidth, latency);
  EXPECT_DOUBLE_EQ(bandwidth, 192.0);
  Instruction reduce = collective(Opcode::AllReduce, DType::F32, 1, 1);
  const uint64_t bytes = 1 << 20;
  EXPECT_DOUBLE_EQ(collectiveTimeNs(t, reduce, group, 64, bytes, bytes),
                   2.0 * 1 / 2 * double(bytes) / (100.0 / 32.0) +
                       2.0 * 1 * t.networkLatencyNs);
}

TEST(CollectiveCost, LocalOperations) {
  const Target &t = trn1Target();
  Instruction slice = collective(Opcode::AllSlice, DType::F32, 8, 4);
  // A local copy: read and write at the core's HBM rate, no latency.
  EXPECT_DOUBLE_EQ(collectiveTimeNs(t, slice, ranks(0, 2), 2, 4100, 2050),
                   2.0 * 4100 / t.hbmBytesPerNsPerCore);
  Instruction permute = collective(Opcode::CollectivePermute, DType::F32, 4, 4);
  EXPECT_DOUBLE_EQ(collectiveTimeNs(t, permute, ranks(0, 4), 4, 1920, 1920),
                   1920 / 192.0 + 1300.0);
}

//===----------------------------------------------------------------------===//
// Semantics
//===----------------------------------------------------------------------===//

TEST(CollectiveSemantics, ReductionsInGroupOrder) {
  std::vector<std::vector<uint8_t>> members = {floats({1, -2, 3}),
                                               floats({10, 20, -30})};
  std::string error;
  std::vector<uint8_t> out;
  Instruction reduce = collective(Opcode::AllReduce, DType::F32, 3, 3);
  ASSERT_TRUE(computeCollective(reduce, members, 0, out, error)) << error;
  EXPECT_EQ(asFloats(out), (std::vector<float>{11, 18, -27}));
  reduce.op1 = AluOp::Divide;
  ASSERT_TRUE(computeCollective(reduce, members, 1, out, error));
  EXPECT_EQ(asFloats(out), (std::vector<float>{5.5f, 9, -13.5f}));
  reduce.op1 = AluOp::Bypass;
  reduce.op0 = AluOp::Max;
  ASSERT_TRUE(computeCollective(reduce, members, 0, out, error));
  EXPECT_EQ(asFloats(out), (std::vector<float>{10, 20, 3}));
  reduce.op0 = AluOp::Min;
  ASSERT_TRUE(computeCollective(reduce, members, 0, out, error));
  EXPECT_EQ(asFloats(out), (std::vector<float>{1, -2, -30}));
}

TEST(CollectiveSemantics, Bf16SumsAccumulateInF32AndRoundOnce) {
  // 256 + 1 + 1 in bf16 (8 significant bits): rounding after each add
  // would give 256 twice; f32 accumulation gives 258, exact in bf16.
  auto bf16 = [](double value) {
    uint16_t bits = uint16_t(encodeFloat(value, DType::BF16));
    std::vector<uint8_t> bytes(2);
    std::memcpy(bytes.data(), &bits, 2);
    return bytes;
  };
  std::vector<std::vector<uint8_t>> members = {bf16(256), bf16(1), bf16(1)};
  Instruction reduce = collective(Opcode::AllReduce, DType::BF16, 1, 1);
  std::vector<uint8_t> out;
  std::string error;
  ASSERT_TRUE(computeCollective(reduce, members, 0, out, error)) << error;
  uint16_t bits;
  std::memcpy(&bits, out.data(), 2);
  EXPECT_EQ(decodeFloat(bits, DType::BF16), 258.0);
}

TEST(CollectiveSemantics, GatherScatterSliceAlongADimension) {
  // Local [2, 2] tensors of a group of 2, along dim 1.
  std::vector<std::vector<uint8_t>> members = {floats({1, 2, 3, 4}),
                                               floats({5, 6, 7, 8})};
  std::string error;
  std::vector<uint8_t> out;
  Instruction gather = collective(Opcode::AllGather, DType::F32, 4, 8);
  gather.collectiveShape = {2, 2};
  gather.collectiveDim = 1;
  ASSERT_TRUE(computeCollective(gather, members, 0, out, error)) << error;
  EXPECT_EQ(asFloats(out), (std::vector<float>{1, 2, 5, 6, 3, 4, 7, 8}));
  gather.collectiveDim = 0;
  ASSERT_TRUE(computeCollective(gather, members, 0, out, error));
  EXPECT_EQ(asFloats(out), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));

  Instruction scatter = collective(Opcode::ReduceScatter, DType::F32, 4, 2);
  scatter.collectiveShape = {2, 2};
  scatter.collectiveDim = 1;
  ASSERT_TRUE(computeCollective(scatter, members, 1, out, error));
  EXPECT_EQ(asFloats(out), (std::vector<float>{8, 12})); // column 1 of sum

  Instruction slice = collective(Opcode::AllSlice, DType::F32, 4, 2);
  slice.collectiveShape = {2, 2};
  slice.collectiveDim = 0;
  ASSERT_TRUE(computeCollective(slice, {members[0]}, 1, out, error));
  EXPECT_EQ(asFloats(out), (std::vector<float>{3, 4}));
}

TEST(CollectiveSemantics, AllToAllPermuteAxisIndex) {
  // Each rank holds [2, 2]; split rows, exchange, concatenate columns.
  std::vector<std::vector<uint8_t>> members = {floats({1, 2, 3, 4}),
                                               floats({5, 6, 7, 8})};
  std::string error;
  std::vector<uint8_t> out;
  Instruction toAll = collective(Opcode::AllToAll, DType::F32, 4, 4);
  toAll.collectiveShape = {2, 2};
  toAll.collectiveDim = 0;
  toAll.concatDim = 1;
  ASSERT_TRUE(computeCollective(toAll, members, 0, out, error)) << error;
  EXPECT_EQ(asFloats(out), (std::vector<float>{1, 2, 5, 6}));
  ASSERT_TRUE(computeCollective(toAll, members, 1, out, error));
  EXPECT_EQ(asFloats(out), (std::vector<float>{3, 4, 7, 8}));

  Instruction permute = collective(Opcode::CollectivePermute, DType::F32, 4, 4);
  permute.shift = 1;
  ASSERT_TRUE(computeCollective(permute, members, 0, out, error));
  EXPECT_EQ(asFloats(out), asFloats(members[1])); // from (0 - 1) mod 2

  Instruction index;
  index.opcode = Opcode::AxisIndex;
  index.dst = whole(DType::I32, 1);
  ASSERT_TRUE(computeCollective(index, {}, 3, out, error));
  int32_t value;
  std::memcpy(&value, out.data(), 4);
  EXPECT_EQ(value, 3);
}

TEST(CollectiveSemantics, ReplicaGroups) {
  CollectiveContext context;
  context.axes = {{"dp", 2}, {"tp", 4}};
  context.rank = 6; // dp 1, tp 2
  int position = -1;
  EXPECT_EQ(context.group(2, position), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(position, 2);
  EXPECT_EQ(context.group(1, position), (std::vector<int>{2, 6}));
  EXPECT_EQ(position, 1);
  EXPECT_EQ(context.group(3, position), ranks(0, 8));
  EXPECT_EQ(position, 6);
  EXPECT_EQ(context.axisNames(3), "dp,tp");
}

//===----------------------------------------------------------------------===//
// Meshes: shardings, binding
//===----------------------------------------------------------------------===//

namespace {

Program shardedProgram() {
  Program program;
  program.mesh = {{"dp", 2}, {"tp", 2}};
  HbmTensor x;
  x.name = "x";
  x.shape = {2, 3};
  x.sharding = {{{0}, 1}, {}}; // rows over dp
  HbmTensor w;
  w.name = "w";
  w.shape = {2, 4};
  w.sharding = {{}, {{1}, 2}}; // columns over tp, in 2 blocks
  program.tensors = {x, w};
  return program;
}

} // namespace

TEST(Mesh, SplitAndAssembleByShardings) {
  Program program = shardedProgram();
  std::vector<MeshAxis> bound = program.mesh;
  const HbmTensor &w = program.tensors[1];
  EXPECT_EQ(globalShape(w, bound), (std::vector<int64_t>{2, 8}));
  std::vector<float> global(16);
  for (int i = 0; i < 16; ++i)
    global[size_t(i)] = float(i);
  std::vector<uint8_t> globalBytes = floats(global);
  // Rank 1 is (dp 0, tp 1): of each block of 4 columns, the second pair.
  std::vector<uint8_t> local(8 * 4);
  copyShard(w, bound, 1, globalBytes.data(), local.data(), /*toLocal=*/true);
  EXPECT_EQ(asFloats(local), (std::vector<float>{2, 3, 6, 7, 10, 11, 14, 15}));
  // Rank 3 (dp 1, tp 1) holds the same piece: dp does not split w.
  std::vector<uint8_t> other(8 * 4);
  copyShard(w, bound, 3, globalBytes.data(), other.data(), true);
  EXPECT_EQ(other, local);
  // Assembling every rank's piece gives the global tensor back.
  std::vector<uint8_t> rebuilt(globalBytes.size(), 0);
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<uint8_t> piece(8 * 4);
    copyShard(w, bound, rank, globalBytes.data(), piece.data(), true);
    copyShard(w, bound, rank, rebuilt.data(), piece.data(), false);
  }
  EXPECT_EQ(rebuilt, globalBytes);
  // x: rank 2 (dp 1) holds rows 2 and 3 of the [4, 3] global tensor.
  const HbmTensor &x = program.tensors[0];
  EXPECT_EQ(globalShape(x, bound), (std::vector<int64_t>{4, 3}));
  std::vector<float> xs(12);
  for (int i = 0; i < 12; ++i)
    xs[size_t(i)] = float(i);
  std::vector<uint8_t> xBytes = floats(xs), xLocal(6 * 4);
  copyShard(x, bound, 2, xBytes.data(), xLocal.data(), true);
  EXPECT_EQ(asFloats(xLocal), (std::vector<float>{6, 7, 8, 9, 10, 11}));
}

TEST(Mesh, BindingChecksSizesAndLetsDpFollowTheJob) {
  Program program = shardedProgram();
  Instruction reduce = collective(Opcode::AllReduce, DType::F32, 4, 4);
  reduce.meshAxes = 1; // dp
  reduce.op1 = AluOp::Divide;
  program.engineStreams[size_t(Engine::Sync)].push_back(reduce);
  std::vector<MeshAxis> requested, bound;
  std::string error;
  ASSERT_TRUE(parseMeshSpec("dp=4,tp=2", requested, error)) << error;
  // Only a program that says it is one replica's step along dp.
  EXPECT_FALSE(bindMesh(program, requested, bound, error));
  program.mesh[0].replica = true;
  EXPECT_TRUE(bindMesh(program, requested, bound, error)) << error;
  EXPECT_EQ(bound[0].size, 4);
  // tp changes local shapes: it must match.
  ASSERT_TRUE(parseMeshSpec("dp=2,tp=4", requested, error));
  EXPECT_FALSE(bindMesh(program, requested, bound, error));
  EXPECT_EQ(error, "mesh axis 'tp': the artifact was compiled for tp=2 but "
                   "--mesh gives tp=4; the program depends on it (only a "
                   "replica axis, such as the dp of trn-cc --mesh, used solely "
                   "in all_reduce sum/mean may differ): recompile with --mesh "
                   "tp=4");
  // A gather over dp makes dp's size part of the shapes too.
  Instruction gather = collective(Opcode::AllGather, DType::F32, 4, 8);
  gather.collectiveShape = {4};
  program.engineStreams[size_t(Engine::Sync)].push_back(gather);
  ASSERT_TRUE(parseMeshSpec("dp=4,tp=2", requested, error));
  EXPECT_FALSE(bindMesh(program, requested, bound, error));
  EXPECT_NE(error.find("mesh axis 'dp': the artifact was compiled for dp=2"),
            std::string::npos)
      << error;
  // An axis the program does not have.
  ASSERT_TRUE(parseMeshSpec("pp=2", requested, error));
  EXPECT_FALSE(bindMesh(program, requested, bound, error));
  EXPECT_EQ(error, "--mesh names axis 'pp' but the artifact's mesh is "
                   "dp=2,tp=2");
  EXPECT_FALSE(parseMeshSpec("dp=0", requested, error));
  EXPECT_EQ(error, "invalid size '0' for mesh axis 'dp' (a positive integer)");
  EXPECT_FALSE(parseMeshSpec("dp=2,dp=2", requested, error));
  EXPECT_EQ(error, "mesh axis 'dp' given twice");
}

//===----------------------------------------------------------------------===//
// The in-process job
//===----------------------------------------------------------------------===//

TEST(InProcessJob, ExchangesInGroupOrder) {
  InProcessJob job(3, 10.0);
  std::vector<std::vector<uint8_t>> results[3];
  std::vector<double> starts[3];
  bool ok[3] = {};
  std::string errors[3];
  auto member = [&](int rank) {
    CollectiveCall call;
    call.sequence = 0;
    call.group = {0, 1, 2};
    call.position = rank;
    call.description = "all_gather #0 over tp";
    ok[rank] = job.communicator(rank).exchange(call, {uint8_t(rank)},
                                               100.0 * rank, results[rank],
                                               starts[rank], errors[rank]);
  };
  std::thread a(member, 1), b(member, 2);
  member(0);
  a.join();
  b.join();
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(ok[rank]) << errors[rank];
    EXPECT_EQ(results[rank],
              (std::vector<std::vector<uint8_t>>{{0}, {1}, {2}}));
    EXPECT_EQ(starts[rank], (std::vector<double>{0, 100, 200}));
  }
}

TEST(InProcessJob, TimeoutNamesTheMissingRanks) {
  InProcessJob job(3, 0.05);
  CollectiveCall call;
  call.sequence = 4;
  call.group = {0, 1, 2};
  call.description = "all_reduce #4 over dp";
  std::vector<std::vector<uint8_t>> theirs;
  std::vector<double> starts;
  std::string error;
  EXPECT_FALSE(
      job.communicator(0).exchange(call, {1}, 0.0, theirs, starts, error));
  EXPECT_EQ(error, "all_reduce #4 over dp timed out after 0.05 s: rank(s) 1, "
                   "2 never arrived (raise --collective-timeout if they are "
                   "slow)");
}

TEST(InProcessJob, AbortStopsTheWaitingRanks) {
  InProcessJob job(2, 30.0);
  std::string error;
  std::thread waiter([&] {
    CollectiveCall call;
    call.group = {0, 1};
    call.description = "all_reduce #0 over tp";
    std::vector<std::vector<uint8_t>> theirs;
    std::vector<double> starts;
    job.communicator(0).exchange(call, {1}, 0.0, theirs, starts, error);
  });
  job.communicator(1).abort("rank 1: bad input");
  waiter.join();
  EXPECT_EQ(error, "all_reduce #0 over tp stopped: rank 1 failed");
  int rank;
  std::string message;
  ASSERT_TRUE(job.failed(rank, message));
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(message, "rank 1: bad input");
}

//===----------------------------------------------------------------------===//
// Artifact
//===----------------------------------------------------------------------===//

TEST(Artifact, MeshAndCollectivesRoundTrip) {
  Program program;
  program.mesh = {{"dp", 2, true}, {"tp", 4}};
  program.hbmBytes = 1 << 16;
  program.numSemaphores = 1;
  HbmTensor x;
  x.name = "x";
  x.shape = {4, 8};
  x.sharding = {{{0, 1}, 3}, {}};
  HbmTensor y = x;
  y.name = "y";
  y.kind = HbmTensor::Kind::Output;
  y.offset = 4096;
  y.sharding = {{}, {{1}, 1}};
  program.tensors = {x, y};
  Instruction toAll = collective(Opcode::AllToAll, DType::F32, 32, 32);
  toAll.collectiveShape = {4, 8};
  toAll.collectiveDim = 1;
  toAll.concatDim = 0;
  toAll.shift = -3;
  toAll.signal = 0;
  program.engineStreams[size_t(Engine::Sync)].push_back(toAll);
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(writeArtifact(program, ArtifactInfo(), bytes, error)) << error;
  Program read;
  ArtifactInfo info;
  ASSERT_TRUE(readArtifact(bytes.data(), bytes.size(), read, info, error))
      << error;
  std::string difference;
  EXPECT_TRUE(programsEqual(program, read, &difference)) << difference;
  EXPECT_EQ(info.formatVersion, kArtifactFormatVersion);
  ASSERT_EQ(info.mesh.size(), 2u);
  EXPECT_EQ(info.mesh[1].name, "tp");
  ASSERT_EQ(info.inputs.size(), 1u);
  EXPECT_EQ(info.inputs[0].sharding[0].blocks, 3);
  // A sharding naming an axis the mesh lacks is refused by the writer.
  program.tensors[0].sharding[1].axes = {7};
  EXPECT_FALSE(writeArtifact(program, ArtifactInfo(), bytes, error));
  EXPECT_EQ(error, "mesh: tensor 0: mesh axis #7 of 2");
}

//===----------------------------------------------------------------------===//
// The simulator: collectives on their own stream, in simulated time
//===----------------------------------------------------------------------===//

namespace {

/// Rank programs of a group of 2 (dp): an all_reduce of `x` into `y` on
/// the Sync stream. With `lateStart`, a 1 MiB DMA on queue 0 comes first
/// and the collective waits for it (semaphore 1); otherwise that DMA is
/// independent of the collective and runs beside it. A second DMA (queue
/// 1) waits for the collective's result (semaphore 0).
Program overlapProgram(bool lateStart) {
  Program program;
  program.mesh = {{"dp", 2}};
  program.hbmBytes = 4 << 20;
  program.numSemaphores = 2;
  HbmTensor x, y, big;
  x.name = "x";
  x.shape = {256};
  y.name = "y";
  y.kind = HbmTensor::Kind::Output;
  y.shape = {256};
  y.offset = 4096;
  big.name = "big";
  big.kind = HbmTensor::Kind::Scratch;
  big.shape = {128, 2048};
  big.offset = 1 << 20;
  program.tensors = {x, y, big};
  Instruction load;
  load.opcode = Opcode::DmaCopy;
  load.srcs = {AccessPattern{
      Memory::Hbm, DType::F32, 0, 128, 1 << 20, 2048, {{2048, 1}}}};
  load.dst = AccessPattern{Memory::Sbuf, DType::F32, 0, 128, 0, 0, {{2048, 1}}};
  load.signal = 1;
  program.dmaQueues.push_back({load});
  Instruction reduce = collective(Opcode::AllReduce, DType::F32, 256, 256);
  reduce.signal = 0;
  if (lateStart)
    reduce.waits = {{1, 1}};
  program.engineStreams[size_t(Engine::Sync)].push_back(reduce);
  Instruction use;
  use.opcode = Opcode::DmaCopy;
  use.srcs = {
      AccessPattern{Memory::Hbm, DType::F32, 0, 1, 4096, 256, {{256, 1}}}};
  use.dst = AccessPattern{Memory::Sbuf, DType::F32, 0, 1, 16384, 0, {{256, 1}}};
  use.waits = {{0, 1}};
  program.dmaQueues.push_back({use});
  return program;
}

struct RankResult {
  SimulationStats stats;
  std::vector<double> y;
  std::string error;
  bool ok = false;
};

/// Runs `programs[r]` as rank r of a dp group, each on its own thread.
std::vector<RankResult> runGroup(const std::vector<Program> &programs) {
  InProcessJob job(int(programs.size()), 10.0);
  std::vector<RankResult> results(programs.size());
  auto run = [&](int rank) {
    RankResult &result = results[size_t(rank)];
    CollectiveContext context;
    context.axes = programs[size_t(rank)].mesh;
    context.rank = rank;
    context.communicator = &job.communicator(rank);
    SimulatorOptions options;
    options.threads = 1;
    options.recordInstructions = true;
    options.collectives = &context;
    Simulator sim(trn1Target(), options);
    std::vector<double> x(256, double(rank + 1));
    result.ok = sim.load(programs[size_t(rank)], result.error) &&
                sim.writeTensor("x", x.data(), x.size(), result.error) &&
                sim.run(result.stats, result.error) &&
                sim.readTensor("y", result.y, result.error);
  };
  std::vector<std::thread> threads;
  for (int rank = 1; rank < int(programs.size()); ++rank)
    threads.emplace_back(run, rank);
  run(0);
  for (std::thread &thread : threads)
    thread.join();
  return results;
}

double endOf(const SimulationStats &stats, uint32_t stream, Opcode opcode) {
  for (const InstructionRecord &record : stats.records)
    if (record.stream == stream && record.opcode == opcode)
      return record.endNs;
  return -1;
}

double startOf(const SimulationStats &stats, uint32_t stream) {
  for (const InstructionRecord &record : stats.records)
    if (record.stream == stream)
      return record.startNs;
  return -1;
}

} // namespace

TEST(SimulatedCollectives, IndependentWorkOverlapsTheCollective) {
  std::vector<RankResult> results =
      runGroup({overlapProgram(false), overlapProgram(false)});
  for (const RankResult &result : results) {
    ASSERT_TRUE(result.ok) << result.error;
    EXPECT_EQ(result.y, std::vector<double>(256, 3.0)); // 1 + 2
    const SimulationStats &stats = result.stats;
    EXPECT_EQ(stats.collectives, 1u);
    EXPECT_EQ(stats.collectiveBytes, 1024u);
    EXPECT_DOUBLE_EQ(stats.collectiveWaitNs, 0.0);
    // 2(n-1)/n S/B + 2(n-1) a for n = 2, 1 KiB, 192 B/ns, 1.3 us.
    const double reduce = 1024.0 / 192.0 + 2.0 * 1300.0;
    EXPECT_DOUBLE_EQ(stats.communicationNs, reduce);
    // The 1 MiB load (queue 0, stream 5) runs beside the collective; the
    // dependent load (queue 1, stream 6) starts when the collective ends.
    const double load = endOf(stats, 5, Opcode::DmaCopy);
    EXPECT_GT(load, reduce);
    EXPECT_DOUBLE_EQ(startOf(stats, 6), reduce);
    EXPECT_LT(stats.deviceTimeNs, load + reduce);
  }
}

TEST(SimulatedCollectives, AGroupFinishesWithItsLastMember) {
  // Rank 1 reaches the collective only after its 1 MiB load: rank 0 waits
  // for it, and both finish at the same simulated time.
  std::vector<RankResult> results =
      runGroup({overlapProgram(false), overlapProgram(true)});
  ASSERT_TRUE(results[0].ok) << results[0].error;
  ASSERT_TRUE(results[1].ok) << results[1].error;
  // Members meet on the transfer clock (onTransferClock: multiples of
  // 2^-10 ns), so "the same time" is to within a picosecond.
  const double load = endOf(results[1].stats, 5, Opcode::DmaCopy);
  const double grid = 1.0 / 1024.0;
  EXPECT_NEAR(results[0].stats.collectiveWaitNs, load, grid);
  EXPECT_DOUBLE_EQ(results[1].stats.collectiveWaitNs, 0.0);
  EXPECT_NEAR(endOf(results[0].stats, 4, Opcode::AllReduce),
              endOf(results[1].stats, 4, Opcode::AllReduce), grid);
  EXPECT_NEAR(results[0].stats.communicationNs,
              load + 1024.0 / 192.0 + 2.0 * 1300.0, grid);
}

TEST(SimulatedCollectives, WithoutABindingTheRunFails) {
  Program program = overlapProgram(false);
  Simulator sim(trn1Target());
  std::string error;
  ASSERT_TRUE(sim.load(program, error)) << error;
  SimulationStats stats;
  EXPECT_FALSE(sim.run(stats, error));
  EXPECT_EQ(error, "sync stream #0 all_reduce: the program is partitioned and "
                   "needs its mesh bound: run it with trn-run --mesh (or the "
                   "multi-rank runtime API)");
}

//===----------------------------------------------------------------------===//
// Pipeline transfers
//===----------------------------------------------------------------------===//

namespace {

/// Stage 0 sends x (256 f32) to stage 1, which receives it into y; both on
/// a mesh pp = 2.
Program transferProgram(bool sender, int64_t tag) {
  Program program;
  program.mesh = {{"pp", 2}};
  program.hbmBytes = 1 << 20;
  HbmTensor x, y;
  x.name = "x";
  x.shape = {256};
  y.name = "y";
  y.kind = HbmTensor::Kind::Output;
  y.shape = {256};
  y.offset = 4096;
  program.tensors = {x, y};
  Instruction transfer;
  transfer.opcode = sender ? Opcode::Send : Opcode::Recv;
  transfer.meshAxes = 1;
  transfer.peer = sender ? 1 : 0;
  transfer.tag = tag;
  if (sender)
    transfer.srcs = {whole(DType::F32, 256)};
  else
    transfer.dst = whole(DType::F32, 256, 4096);
  program.engineStreams[size_t(Engine::Sync)].push_back(transfer);
  return program;
}

} // namespace

TEST(SimulatedTransfers, SendAndReceiveAcrossStages) {
  std::vector<RankResult> results =
      runGroup({transferProgram(true, 7), transferProgram(false, 7)});
  ASSERT_TRUE(results[0].ok) << results[0].error;
  ASSERT_TRUE(results[1].ok) << results[1].error;
  EXPECT_EQ(results[1].y, std::vector<double>(256, 1.0)); // rank 0's x
  // S/B + a between two cores of an instance; the receive ends when the
  // bytes have arrived.
  const double link = 1024.0 / 192.0 + 1300.0;
  EXPECT_DOUBLE_EQ(endOf(results[0].stats, 4, Opcode::Send), link);
  EXPECT_DOUBLE_EQ(endOf(results[1].stats, 4, Opcode::Recv), link);
}

TEST(SimulatedTransfers, AReceiveWithoutItsSendTimesOut) {
  InProcessJob job(2, 0.05);
  CollectiveContext context;
  context.axes = {{"pp", 2}};
  context.rank = 1;
  context.communicator = &job.communicator(1);
  SimulatorOptions options;
  options.threads = 1;
  options.collectives = &context;
  Simulator sim(trn1Target(), options);
  std::string error;
  Program program = transferProgram(false, 3); // the simulator keeps it
  ASSERT_TRUE(sim.load(program, error)) << error;
  SimulationStats stats;
  EXPECT_FALSE(sim.run(stats, error));
  EXPECT_EQ(error, "sync stream #0 recv: recv tag 3 of microbatch 0 from rank "
                   "0 timed out after 0.05 s: rank 0 never sent it (raise "
                   "--collective-timeout if it is slow)");
}

TEST(SimulatedTransfers, TransfersAreMatchedByTagAndMicrobatch) {
  InProcessJob job(2, 1.0);
  std::string error;
  double sent = 0;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(
      job.communicator(0).send(1, (5u << 24) | 1, {1}, 10.0, "a", error));
  ASSERT_TRUE(
      job.communicator(0).send(1, (5u << 24) | 0, {0}, 20.0, "b", error));
  ASSERT_TRUE(
      job.communicator(1).receive(0, (5u << 24) | 0, bytes, sent, "b", error));
  EXPECT_EQ(bytes, std::vector<uint8_t>{0});
  EXPECT_EQ(sent, 20.0);
  ASSERT_TRUE(
      job.communicator(1).receive(0, (5u << 24) | 1, bytes, sent, "a", error));
  EXPECT_EQ(bytes, std::vector<uint8_t>{1});
}

TEST(SimulatedTransfers, Validation) {
  std::string error;
  Instruction send =
      transferProgram(true, 0).engineStreams[size_t(Engine::Sync)][0];
  EXPECT_TRUE(validateInstruction(send, Engine::Sync, trn1Target(), error))
      << error;
  send.meshAxes = 3;
  EXPECT_FALSE(validateInstruction(send, Engine::Sync, trn1Target(), error));
  EXPECT_NE(error.find("names more than one mesh axis"), std::string::npos)
      << error;
  Instruction recv =
      transferProgram(false, 0).engineStreams[size_t(Engine::Sync)][0];
  recv.peer = -1;
  EXPECT_FALSE(validateInstruction(recv, Engine::Sync, trn1Target(), error));
  EXPECT_NE(error.find("must not be negative"), std::string::npos) << error;
}
