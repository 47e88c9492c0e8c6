//===- SubroutinesTest.cpp - calls of subroutines and their expansion ----===//
//
// A program calling one subroutine twice (y = 4 x through a scratch tensor)
// is checked as compiled (validator, deadlock check), round-trips through
// the artifact with its calls, and runs expanded with the result of the
// inlined program. Broken call sites are refused with one-line errors.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Subroutines.h"
#include "trnrt/Artifact.h"
#include "trnrt/IsaValidate.h"
#include "trnrt/Simulator.h"
#include "trnrt/Target.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace trnrt;

namespace {

constexpr int64_t kRows = 128, kCols = 64;
constexpr uint64_t kBytes = kRows * kCols * 4;

AccessPattern hbmRows(uint64_t offset) {
  AccessPattern pattern;
  pattern.memory = Memory::Hbm;
  pattern.dtype = DType::F32;
  pattern.numPartitions = kRows;
  pattern.byteOffset = static_cast<int64_t>(offset);
  pattern.partitionStride = kCols;
  pattern.dims = {{kCols, 1}};
  return pattern;
}

AccessPattern sbufTile(int64_t offset) {
  AccessPattern pattern;
  pattern.memory = Memory::Sbuf;
  pattern.dtype = DType::F32;
  pattern.numPartitions = kRows;
  pattern.byteOffset = offset;
  pattern.dims = {{kCols, 1}};
  return pattern;
}

HbmTensor tensor(std::string name, HbmTensor::Kind kind, uint64_t offset) {
  HbmTensor t;
  t.name = std::move(name);
  t.kind = kind;
  t.shape = {kRows, kCols};
  t.offset = offset;
  return t;
}

/// b = 2 a: load on queue 0, a Scalar Engine multiply, store on queue 1.
/// Semaphores are the streams (5 + q for DMA queue q), as the compiler's.
Program doubler() {
  Program callee;
  callee.numSemaphores = 7;
  callee.tensors = {tensor("a", HbmTensor::Kind::Input, 0),
                    tensor("b", HbmTensor::Kind::Output, kBytes),
                    tensor("t0", HbmTensor::Kind::Scratch, 2 * kBytes)};
  callee.hbmBytes = 3 * kBytes;
  Instruction load;
  load.opcode = Opcode::DmaCopy;
  load.dst = sbufTile(0);
  load.srcs = {hbmRows(0)};
  load.signal = 5;
  // Through the callee's scratch: relocated into its region.
  Instruction spill = load;
  spill.dst = hbmRows(2 * kBytes);
  spill.srcs = {sbufTile(0)};
  spill.waits = {{5, 1}};
  spill.signal = 5;
  Instruction act;
  act.opcode = Opcode::Activation;
  act.func = ActivationFunc::Copy;
  act.scale.immediate = 2.0f;
  act.dst = sbufTile(kCols * 4);
  act.srcs = {sbufTile(0)};
  act.waits = {{5, 1}};
  act.signal = 2;
  Instruction store;
  store.opcode = Opcode::DmaCopy;
  store.dst = hbmRows(kBytes);
  store.srcs = {sbufTile(kCols * 4)};
  store.waits = {{2, 1}};
  store.signal = 6;
  callee.engineStreams[2] = {act};
  callee.dmaQueues = {{load, spill}, {store}};
  return callee;
}

/// y = 4 x: x -> mid and mid -> y by two calls of doubler(), whose
/// scratch goes after mid.
Program caller() {
  Program program;
  program.numSemaphores = 7;
  program.tensors = {tensor("x", HbmTensor::Kind::Input, 0),
                     tensor("y", HbmTensor::Kind::Output, kBytes),
                     tensor("mid", HbmTensor::Kind::Scratch, 2 * kBytes)};
  program.hbmBytes = 4 * kBytes;
  program.dmaQueues.resize(2);
  program.subroutines = {doubler()};
  CallSite first;
  first.callee = 0;
  first.positions.assign(7, 0);
  first.arguments = {0, 2 * kBytes};
  first.scratch = 3 * kBytes;
  CallSite second = first;
  second.arguments = {2 * kBytes, kBytes};
  program.calls = {first, second};
  return program;
}

/// caller() with work of its own around the calls: a load of x before the
/// first call (queue 0) and, after the second, a store of it to w (queue 1),
/// whose waits the second call's exit barrier raises.
Program callerWithOwnWork() {
  Program program = caller();
  program.tensors.push_back(tensor("w", HbmTensor::Kind::Output, 4 * kBytes));
  program.hbmBytes = 5 * kBytes;
  Instruction load;
  load.opcode = Opcode::DmaCopy;
  load.dst = sbufTile(2 * kCols * 4);
  load.srcs = {hbmRows(0)};
  load.signal = 5;
  Instruction store = load;
  store.dst = hbmRows(4 * kBytes);
  store.srcs = {sbufTile(2 * kCols * 4)};
  store.waits = {{5, 1}};
  store.signal = 6;
  program.dmaQueues = {{load}, {store}};
  for (CallSite &call : program.calls)
    call.positions[5] = 1;
  return program;
}

std::vector<double> runProgram(const Program &program) {
  Simulator sim(trn1Target());
  std::string error;
  EXPECT_TRUE(sim.load(program, error)) << error;
  std::vector<double> x(kRows * kCols);
  std::iota(x.begin(), x.end(), 1.0);
  EXPECT_TRUE(sim.writeTensor("x", x.data(), x.size(), error)) << error;
  SimulationStats stats;
  EXPECT_TRUE(sim.run(stats, error)) << error;
  std::vector<double> y;
  EXPECT_TRUE(sim.readTensor("y", y, error)) << error;
  return y;
}

} // namespace

TEST(Subroutines, CompactProgramValidatesAndCannotDeadlock) {
  Program program = caller();
  std::string error;
  EXPECT_TRUE(validateProgram(program, trn1Target(), error)) << error;
  EXPECT_TRUE(checkSemaphoresCanComplete(program, error)) << error;
  EXPECT_EQ(expandedStreamSizes(program),
            (std::vector<uint64_t>{0, 0, 2, 0, 0, 4, 2}));
  // The callee's scratch is inside the caller's HBM; it has no constants.
  EXPECT_EQ(expandedHbmBytes(program), 4 * kBytes);
  EXPECT_EQ(subroutineScratchBytes(program.subroutines[0]), kBytes);
}

TEST(Subroutines, ExpandedProgramComputesBothCalls) {
  Program program = caller();
  std::string error;
  ASSERT_TRUE(expandCalls(program, error)) << error;
  EXPECT_TRUE(program.subroutines.empty() && program.calls.empty());
  EXPECT_EQ(program.engineStreams[2].size(), 2u);
  EXPECT_EQ(program.dmaQueues[0].size(), 4u);
  // The second call's store waits for its own multiply (the second
  // signal on semaphore 2), its load for the first call's store.
  const std::vector<SemaphoreWait> &waits = program.dmaQueues[1][1].waits;
  auto waitOn = [&](uint32_t semaphore) -> int64_t {
    for (const SemaphoreWait &wait : waits)
      if (wait.semaphore == semaphore)
        return wait.value;
    return 0;
  };
  EXPECT_EQ(waitOn(2), 2);
  EXPECT_EQ(waitOn(5), 2);
  EXPECT_EQ(waitOn(6), 1);
  EXPECT_TRUE(validateProgram(program, trn1Target(), error)) << error;
  EXPECT_TRUE(checkSemaphoresCanComplete(program, error)) << error;
  std::vector<double> y = runProgram(program);
  ASSERT_EQ(y.size(), size_t(kRows * kCols));
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y[i], 4.0 * double(i + 1)) << "element " << i;
}

TEST(Subroutines, ArtifactKeepsCallsAndReadsThemResolved) {
  Program program = caller();
  ArtifactInfo info;
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(writeArtifact(program, info, bytes, error)) << error;
  Program compact;
  ArtifactReadOptions keep;
  keep.calls = ArtifactReadOptions::Calls::Keep;
  ASSERT_TRUE(
      readArtifact(bytes.data(), bytes.size(), compact, info, error, keep))
      << error;
  std::string difference;
  EXPECT_TRUE(programsEqual(program, compact, &difference)) << difference;
  Program expanded;
  ArtifactReadOptions expand;
  expand.calls = ArtifactReadOptions::Calls::Expand;
  ASSERT_TRUE(
      readArtifact(bytes.data(), bytes.size(), expanded, info, error, expand))
      << error;
  Program reference = caller();
  ASSERT_TRUE(expandCalls(reference, error)) << error;
  EXPECT_TRUE(programsEqual(reference, expanded, &difference)) << difference;
  // By default the reader resolves the calls, for the simulator.
  Program resolved;
  ASSERT_TRUE(readArtifact(bytes.data(), bytes.size(), resolved, info, error))
      << error;
  EXPECT_TRUE(resolved.resolvedCalls != nullptr);
  EXPECT_EQ(resolved.calls.size(), 2u);
  EXPECT_EQ(resolved.dmaQueues[0].size(), 0u);
}

TEST(Subroutines, BrokenCallSitesAreRefused) {
  std::string error;
  Program program = caller();
  program.calls[1].positions[5] = 3;
  EXPECT_FALSE(checkCalls(program, error));
  EXPECT_NE(error.find("call 1: dma queue 0 position 3 is out of order or "
                       "past the stream's 0 instructions"),
            std::string::npos)
      << error;

  program = caller();
  program.calls[0].arguments[1] = 4 * kBytes - 64;
  EXPECT_FALSE(checkCalls(program, error));
  EXPECT_NE(error.find("call 0: argument 'b' at"), std::string::npos) << error;

  program = caller();
  program.calls[1].scratch = 3 * kBytes + 64;
  EXPECT_FALSE(checkCalls(program, error));
  EXPECT_NE(error.find("call 1: the callee's 32768 bytes of scratch at"),
            std::string::npos)
      << error;

  program = caller();
  program.calls[0].callee = 4;
  EXPECT_FALSE(expandCalls(program, error));
  EXPECT_NE(error.find("call 0: calls subroutine 4 of 1"), std::string::npos)
      << error;

  program = caller();
  program.calls[0].arguments.pop_back();
  EXPECT_FALSE(validateProgram(program, trn1Target(), error));
  EXPECT_NE(error.find("call 0: 1 arguments, the callee has more inputs and "
                       "outputs"),
            std::string::npos)
      << error;

  program = caller();
  program.subroutines[0].subroutines = {doubler()};
  EXPECT_FALSE(checkCalls(program, error));
  EXPECT_NE(error.find("one level only"), std::string::npos) << error;
}

// The time split by kind (SimulationStats::kindNs), on the expanded
// program: each call's load and store are data movement, its multiply
// elementwise; the parts and the idle time add up to the device time, and
// an instant with both goes to the elementwise (earlier in the priority).
TEST(TimeByKind, PartsAddUpToTheDeviceTime) {
  Program program = caller();
  for (Instruction &inst : program.subroutines[0].dmaQueues[0])
    inst.kind = InstructionKind::DataMovement;
  program.subroutines[0].dmaQueues[1][0].kind = InstructionKind::DataMovement;
  program.subroutines[0].engineStreams[2][0].kind =
      InstructionKind::Elementwise;
  std::string error;
  ASSERT_TRUE(expandCalls(program, error)) << error;
  Simulator sim(trn1Target());
  ASSERT_TRUE(sim.load(program, error)) << error;
  SimulationStats stats;
  ASSERT_TRUE(sim.run(stats, error)) << error;
  double total = stats.idleNs;
  for (double ns : stats.kindNs)
    total += ns;
  EXPECT_NEAR(total, stats.deviceTimeNs, 1e-6 * stats.deviceTimeNs);
  EXPECT_GT(stats.kindNs[size_t(InstructionKind::Elementwise)], 0.0);
  EXPECT_GT(stats.kindNs[size_t(InstructionKind::DataMovement)], 0.0);
  EXPECT_EQ(stats.kindNs[size_t(InstructionKind::Matmul)], 0.0);
  EXPECT_EQ(stats.kindNs[size_t(InstructionKind::Other)], 0.0);
  // The two multiplies run alone: their whole busy time is elementwise.
  EXPECT_NEAR(stats.kindNs[size_t(InstructionKind::Elementwise)],
              stats.engines[2].busyNs, 1e-9);
}

TEST(Subroutines, CallerWorkGetsTheBarriers) {
  Program program = callerWithOwnWork();
  std::string error;
  ASSERT_TRUE(validateProgram(program, trn1Target(), error)) << error;
  ASSERT_TRUE(checkSemaphoresCanComplete(program, error)) << error;
  ASSERT_TRUE(expandCalls(program, error)) << error;
  ASSERT_EQ(program.dmaQueues[0].size(), 5u);
  ASSERT_EQ(program.dmaQueues[1].size(), 3u);
  auto waitOn = [](const Instruction &inst, uint32_t semaphore) -> int64_t {
    for (const SemaphoreWait &wait : inst.waits)
      if (wait.semaphore == semaphore)
        return wait.value;
    return 0;
  };
  // The first call's load waits for the caller's load (its entry barrier),
  // its spill for its own load on top of that.
  EXPECT_EQ(waitOn(program.dmaQueues[0][1], 5), 1);
  EXPECT_EQ(waitOn(program.dmaQueues[0][2], 5), 2);
  // The caller's store after both calls: the second call's exit barrier
  // (one caller load and two per call on semaphore 5, a multiply and a
  // store per call on 2 and 6).
  const Instruction &store = program.dmaQueues[1][2];
  EXPECT_EQ(waitOn(store, 5), 5);
  EXPECT_EQ(waitOn(store, 2), 2);
  EXPECT_EQ(waitOn(store, 6), 2);
  EXPECT_EQ(store.dst.byteOffset, int64_t(4 * kBytes));
}

// The simulator runs a resolved program (calls walked in place) exactly as
// the expanded one: the same results, the same statistics, the same
// timeline, while the resolved program holds each callee once.
TEST(Subroutines, ResolvedRunEqualsExpandedRun) {
  for (bool ownWork : {false, true}) {
    SCOPED_TRACE(ownWork ? "caller with work of its own" : "calls only");
    Program resolved = ownWork ? callerWithOwnWork() : caller();
    Program expanded = resolved;
    std::string error;
    ASSERT_TRUE(resolveCalls(resolved, error)) << error;
    ASSERT_TRUE(expandCalls(expanded, error)) << error;
    EXPECT_EQ(resolved.dmaQueues[0].size(), ownWork ? 1u : 0u);
    EXPECT_EQ(resolved.hbmBytes, expanded.hbmBytes);
    EXPECT_EQ(resolved.numSemaphores, expanded.numSemaphores);
    ASSERT_EQ(resolved.tensors.size(), expanded.tensors.size());
    for (size_t i = 0; i < resolved.tensors.size(); ++i) {
      EXPECT_EQ(resolved.tensors[i].name, expanded.tensors[i].name);
      EXPECT_EQ(resolved.tensors[i].offset, expanded.tensors[i].offset);
    }
    for (size_t s = 0; s < 7; ++s) {
      const std::vector<Instruction> &flat =
          s < 5 ? expanded.engineStreams[s] : expanded.dmaQueues[s - 5];
      StreamCursor cursor(resolved, s);
      EXPECT_EQ(cursor.size(), flat.size());
      size_t i = 0;
      for (; !cursor.done(); cursor.advance(), ++i) {
        ASSERT_LT(i, flat.size());
        EXPECT_EQ(cursor.position(), i);
        Program one, other;
        one.engineStreams[0] = {cursor.instruction()};
        other.engineStreams[0] = {flat[i]};
        std::string difference;
        EXPECT_TRUE(programsEqual(one, other, &difference))
            << streamName(s) << " #" << i << ": " << difference;
      }
      EXPECT_EQ(i, flat.size());
    }

    SimulationStats stats[2];
    std::vector<double> y[2], w[2];
    const Program *programs[2] = {&resolved, &expanded};
    for (int k = 0; k < 2; ++k) {
      Simulator sim(trn1Target(), {false, true});
      ASSERT_TRUE(sim.load(*programs[k], error)) << error;
      std::vector<double> x(kRows * kCols);
      std::iota(x.begin(), x.end(), 1.0);
      ASSERT_TRUE(sim.writeTensor("x", x.data(), x.size(), error)) << error;
      ASSERT_TRUE(sim.run(stats[k], error)) << error;
      ASSERT_TRUE(sim.readTensor("y", y[k], error)) << error;
      if (ownWork)
        ASSERT_TRUE(sim.readTensor("w", w[k], error)) << error;
    }
    EXPECT_EQ(y[0], y[1]);
    EXPECT_EQ(w[0], w[1]);
    if (ownWork)
      EXPECT_EQ(w[0][7], 8.0);
    EXPECT_EQ(y[0][7], 32.0);
    EXPECT_EQ(stats[0].deviceTimeNs, stats[1].deviceTimeNs);
    EXPECT_EQ(stats[0].instructions, stats[1].instructions);
    EXPECT_EQ(stats[0].scratchSaveBytes, stats[1].scratchSaveBytes);
    EXPECT_EQ(stats[0].hbmToSbufBytes, stats[1].hbmToSbufBytes);
    for (size_t s = 0; s < 5; ++s)
      EXPECT_EQ(stats[0].engines[s].busyNs, stats[1].engines[s].busyNs);
    ASSERT_EQ(stats[0].records.size(), stats[1].records.size());
    for (size_t r = 0; r < stats[0].records.size(); ++r) {
      EXPECT_EQ(stats[0].records[r].stream, stats[1].records[r].stream);
      EXPECT_EQ(stats[0].records[r].index, stats[1].records[r].index);
      EXPECT_EQ(stats[0].records[r].startNs, stats[1].records[r].startNs);
    }
  }
}

TEST(Subroutines, UnresolvedCallsAreRefusedByTheSimulator) {
  Program program = caller();
  Simulator sim(trn1Target());
  std::string error;
  EXPECT_FALSE(sim.load(program, error));
  EXPECT_NE(error.find("calls are not resolved"), std::string::npos) << error;
  ASSERT_TRUE(resolveCalls(program, error)) << error;
  std::vector<uint8_t> bytes;
  EXPECT_FALSE(writeArtifact(program, {}, bytes, error));
  EXPECT_NE(error.find("resolved"), std::string::npos) << error;
}
