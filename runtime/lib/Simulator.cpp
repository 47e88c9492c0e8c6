//===- Simulator.cpp - Memories, scheduler and statistics -----------------===//
//
// The event-driven scheduler: every stream is in order; its head instruction
// starts once the stream is free, its semaphore waits hold and the ports it
// needs are free; it ends after its cost; its signal is incremented at the
// end. Instructions start in simulated-time order and take their functional
// effect at their start, which a correctly synchronised program cannot tell
// from any other legal order. When no stream can start and no instruction is
// in flight, the blocked streams are reported as a deadlock.
//
//===----------------------------------------------------------------------===//

#include "SimulatorImpl.h"

#include "trnrt/IsaValidate.h"
#include "trnrt/Subroutines.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <queue>

namespace trnrt {

using namespace sim;

namespace sim {

bool SimulatorCoreBase::fail(const std::string &message) {
  if (!errorOut)
    return false;
  if (!currentInst) {
    *errorOut = message;
    return false;
  }
  *errorOut = streamName(currentStream) + " #" + std::to_string(currentIndex) +
              " " + opcodeName(currentInst->opcode) + ": " + message;
  return false;
}

uint64_t SimulatorCoreBase::tensorBytes(const HbmTensor &tensor) const {
  uint64_t elements = 1;
  for (int64_t dim : tensor.shape)
    elements *= uint64_t(dim);
  return elements * dtypeSizeInBytes(tensor.dtype);
}

const HbmTensor *SimulatorCoreBase::findTensorAt(int64_t byteOffset) const {
  if (!program || byteOffset < 0)
    return nullptr;
  // Last tensor starting at or before the offset (ties: the later one, so
  // zero-sized tensors do not hide a real one).
  auto it = std::upper_bound(tensorsByOffset.begin(), tensorsByOffset.end(),
                             uint64_t(byteOffset),
                             [&](uint64_t offset, size_t index) {
                               return offset < program->tensors[index].offset;
                             });
  while (it != tensorsByOffset.begin()) {
    --it;
    const HbmTensor &tensor = program->tensors[*it];
    if (uint64_t(byteOffset) < tensor.offset + tensorBytes(tensor))
      return &tensor;
    if (tensorBytes(tensor) != 0)
      return nullptr;
  }
  return nullptr;
}

} // namespace sim

namespace {
std::string describeTensor(const HbmTensor &tensor, uint64_t bytes) {
  std::string text = std::string(hbmTensorKindName(tensor.kind)) + " tensor '" +
                     tensor.name + "' (";
  const char *dtype = dtypeName(tensor.dtype);
  text += dtype ? dtype : "?";
  text += '[';
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    if (i)
      text += ',';
    text += std::to_string(tensor.shape[i]);
  }
  text += "], " + std::to_string(bytes) + " bytes at offset " +
          std::to_string(tensor.offset) + ")";
  return text;
}

std::string gibibytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", double(bytes) / (1u << 30));
  return text;
}

/// Byte range [begin, end) per partition and partition range of an on-chip
/// access pattern (no checks: only used to compare with a checked write).
Extent extentOf(const AccessPattern &ap) {
  Extent extent;
  if (ap.memory == Memory::Hbm || unsigned(ap.dtype) > unsigned(DType::I64))
    return extent;
  int64_t low = 0, high = 0;
  for (const ApDim &dim : ap.dims) {
    int64_t span = (dim.size - 1) * dim.stride;
    (span < 0 ? low : high) += span;
  }
  const int64_t size = dtypeSizeInBytes(ap.dtype);
  extent.valid = true;
  extent.memory = ap.memory;
  extent.firstPartition = ap.startPartition;
  extent.endPartition = ap.startPartition + ap.numPartitions;
  extent.minByte = ap.byteOffset + low * size;
  extent.endByte = ap.byteOffset + (high + 1) * size;
  return extent;
}

bool overlaps(const Extent &a, const Extent &b) {
  return a.valid && b.valid && a.memory == b.memory &&
         a.firstPartition < b.endPartition &&
         b.firstPartition < a.endPartition && a.minByte < b.endByte &&
         b.minByte < a.endByte;
}

/// Adds the on-chip bytes `inst` reads and writes to `stats` (after it ran,
/// so its access patterns are valid).
void noteOnChipTraffic(const Instruction &inst, SimulationStats &stats) {
  auto note = [&](const AccessPattern &ap, bool write) {
    if (ap.memory == Memory::Hbm)
      return;
    uint64_t bytes = uint64_t(ap.numPartitions) * dtypeSizeInBytes(ap.dtype);
    for (const ApDim &dim : ap.dims)
      bytes *= uint64_t(dim.size);
    if (ap.memory == Memory::Sbuf)
      (write ? stats.sbufWriteBytes : stats.sbufReadBytes) += bytes;
    else
      (write ? stats.psumWriteBytes : stats.psumReadBytes) += bytes;
  };
  auto noteScalar = [&](const ScalarOperand &scalar) {
    if (!scalar.isImmediate)
      note(scalar.column, false);
  };
  switch (inst.opcode) {
  case Opcode::Nop:
    return;
  case Opcode::Activation:
    noteScalar(inst.scale);
    noteScalar(inst.bias);
    if (inst.accumulateRow)
      note(inst.reduceDst, true);
    break;
  case Opcode::TensorScalar:
    if (inst.op0 != AluOp::Bypass)
      noteScalar(inst.scalar0);
    if (inst.op1 != AluOp::Bypass)
      noteScalar(inst.scalar1);
    break;
  case Opcode::Matmul:
    if (inst.accumulate)
      note(inst.dst, false);
    break;
  case Opcode::DmaCopy:
    if (inst.indirect)
      note(inst.indices, false);
    break;
  default:
    break;
  }
  for (const AccessPattern &src : inst.srcs)
    note(src, false);
  note(inst.dst, true);
}

enum PortMask : uint8_t { kSbufPort = 1, kPsumPort = 2 };

/// The shared ports an instruction holds for its duration (NeuronCore-v2:
/// Vector and GpSimd share SBUF access, Vector and Scalar share PSUM).
uint8_t portsOf(const Target &target, Engine engine, const Instruction &inst) {
  bool sbuf = false, psum = false;
  auto note = [&](const AccessPattern &ap) {
    sbuf |= ap.memory == Memory::Sbuf;
    psum |= ap.memory == Memory::Psum;
  };
  auto noteScalar = [&](const ScalarOperand &scalar) {
    if (!scalar.isImmediate)
      note(scalar.column);
  };
  if (inst.opcode == Opcode::Nop)
    return 0;
  note(inst.dst);
  for (const AccessPattern &src : inst.srcs)
    note(src);
  if (inst.opcode == Opcode::Activation) {
    noteScalar(inst.scale);
    noteScalar(inst.bias);
    if (inst.accumulateRow)
      note(inst.reduceDst);
  }
  if (inst.opcode == Opcode::TensorScalar) {
    noteScalar(inst.scalar0);
    noteScalar(inst.scalar1);
  }
  uint8_t ports = 0;
  switch (engine) {
  case Engine::Vector:
    if (sbuf && target.vectorGpsimdShareSbufPort)
      ports |= kSbufPort;
    if (psum && target.vectorScalarSharePsumPort)
      ports |= kPsumPort;
    break;
  case Engine::GpSimd:
    if (sbuf && target.vectorGpsimdShareSbufPort)
      ports |= kSbufPort;
    break;
  case Engine::Scalar:
    if (psum && target.vectorScalarSharePsumPort)
      ports |= kPsumPort;
    break;
  default:
    break;
  }
  return ports;
}

struct StreamState {
  /// The stream as the expanded program has it (subroutine calls walked in
  /// place, trnrt/Subroutines.h).
  StreamCursor cursor;
  Engine engine = Engine::Sync;
  uint8_t headPorts = 0;   ///< the ports head() holds
  bool headChanged = true; ///< since its waits were last checked
  /// How many of head()'s waits are known to hold (semaphores only rise).
  size_t waitsHeld = 0;
  double freeAt = 0.0;
  bool ready = false;
  double readyAt = 0.0;
  Extent lastWrite;
  StreamStats stats;

  bool done() const { return cursor.done(); }
  const Instruction &head() const { return cursor.instruction(); }
  uint64_t pc() const { return cursor.position(); }
};

struct Completion {
  double time;
  uint32_t semaphore;
  bool operator>(const Completion &other) const { return time > other.time; }
};

/// One run of the loaded program.
class Scheduler {
public:
  Scheduler(SimulatorCore &core, SimulationStats &stats)
      : core(core), target(core.target), program(*core.program), stats(stats) {}

  bool run();

private:
  bool checkInstructions();
  bool prepare();
  bool waitsSatisfied(StreamState &stream) const;
  double candidateStart(const StreamState &stream) const;
  bool issue(unsigned streamIndex, double start);
  bool reportDeadlock();
  void finish();

  SimulatorCore &core;
  const Target &target;
  const Program &program;
  SimulationStats &stats;

  std::vector<StreamState> streams;
  std::vector<int64_t> semaphores;
  std::priority_queue<Completion, std::vector<Completion>,
                      std::greater<Completion>>
      completions;
  double now = 0.0;
  double sbufPortFree = 0.0, psumPortFree = 0.0;
  double dmaDataFree = 0.0;
  double dmaActiveUntil = 0.0;
  /// Per InstructionKind, disjoint busy intervals in time order.
  std::array<SimulatorCoreBase::Intervals, kNumInstructionKinds> &kindBusy =
      core.kindBusy;
  /// Set when a semaphore rose: only then, or when its head changed, may a
  /// stream that was not ready become ready.
  bool semaphoresRose = true;
  int lastIssued = -1; ///< the stream issue() advanced last
  double matmulWorkCycles = 0.0;
  uint64_t dmaBytes = 0;
};

/// Why `inst` cannot run on `engine` in `program`, or empty.
std::string problemOf(const Instruction &inst, Engine engine,
                      const Program &program, bool meshBound) {
  if (isCollectiveOpcode(inst.opcode) && !meshBound)
    return "the program is partitioned and needs its mesh bound: run it "
           "with trn-run --mesh (or the multi-rank runtime API)";
  if (unsigned(inst.opcode) > unsigned(kLastOpcode))
    return "unknown opcode";
  if (!opcodeRunsOn(inst.opcode, engine))
    return std::string("cannot run on the ") + engineName(engine) + " engine";
  for (const SemaphoreWait &wait : inst.waits)
    if (wait.semaphore >= program.numSemaphores)
      return "waits for semaphore " + std::to_string(wait.semaphore) +
             " but the program has " + std::to_string(program.numSemaphores);
  if (inst.signal >= 0 && uint32_t(inst.signal) >= program.numSemaphores)
    return "signals semaphore " + std::to_string(inst.signal) +
           " but the program has " + std::to_string(program.numSemaphores);
  if (inst.signal < -1)
    return "has an invalid signal " + std::to_string(inst.signal);
  return {};
}

bool Scheduler::checkInstructions() {
  const bool meshBound = core.options.collectives != nullptr;
  const size_t numStreams = kNumEngineStreams + program.dmaQueues.size();
  auto streamOf = [](const Program &of, size_t s) -> const auto & {
    return s < kNumEngineStreams ? of.engineStreams[s]
                                 : of.dmaQueues[s - kNumEngineStreams];
  };
  for (size_t s = 0; s < numStreams; ++s) {
    const Engine engine = s < kNumEngineStreams ? Engine(s) : Engine::Dma;
    const std::vector<Instruction> &instructions = streamOf(program, s);
    for (uint32_t i = 0; i < instructions.size(); ++i) {
      std::string problem =
          problemOf(instructions[i], engine, program, meshBound);
      if (problem.empty())
        continue;
      core.currentStream = unsigned(s);
      core.currentIndex = i;
      core.currentInst = &instructions[i];
      return core.fail(problem);
    }
    for (size_t k = 0; k < program.subroutines.size(); ++k) {
      const Program &callee = program.subroutines[k];
      if (s >= kNumEngineStreams + callee.dmaQueues.size())
        continue;
      const std::vector<Instruction> &body = streamOf(callee, s);
      for (size_t i = 0; i < body.size(); ++i) {
        std::string problem = problemOf(body[i], engine, program, meshBound);
        if (problem.empty())
          continue;
        core.currentInst = nullptr;
        return core.fail("subroutine " + std::to_string(k) + ": " +
                         streamName(unsigned(s)) + " #" + std::to_string(i) +
                         " " + opcodeName(body[i].opcode) + ": " + problem);
      }
    }
  }
  return true;
}

bool Scheduler::prepare() {
  // Every instruction is checked once per load, before the first run; a
  // callee's once for all its calls (relocation changes only addresses and
  // semaphore counts).
  if (!core.instructionsChecked && !checkInstructions())
    return false;
  core.instructionsChecked = true;
  const size_t numStreams = kNumEngineStreams + program.dmaQueues.size();
  streams.clear();
  streams.resize(numStreams);
  for (unsigned s = 0; s < streams.size(); ++s) {
    StreamState &stream = streams[s];
    stream.engine = s < kNumEngineStreams ? Engine(s) : Engine::Dma;
    stream.cursor = StreamCursor(program, s);
    if (!stream.done())
      stream.headPorts = portsOf(target, stream.engine, stream.head());
  }
  core.currentInst = nullptr;
  for (SimulatorCoreBase::Intervals &busy : kindBusy)
    busy.clear();
  semaphores.assign(program.numSemaphores, 0);
  stats = SimulationStats();
  stats.dmaQueues.resize(program.dmaQueues.size());
  stats.originBusyNs.assign(program.origins.size() + 1, 0.0);
  stats.originDmaBytes.assign(program.origins.size() + 1, 0);
  return true;
}

bool Scheduler::waitsSatisfied(StreamState &stream) const {
  const std::vector<SemaphoreWait> &waits = stream.head().waits;
  for (; stream.waitsHeld < waits.size(); ++stream.waitsHeld) {
    const SemaphoreWait &wait = waits[stream.waitsHeld];
    if (semaphores[wait.semaphore] < wait.value)
      return false;
  }
  return true;
}

double Scheduler::candidateStart(const StreamState &stream) const {
  double start = std::max(stream.freeAt, stream.readyAt);
  uint8_t ports = stream.headPorts;
  if (ports & kSbufPort)
    start = std::max(start, sbufPortFree);
  if (ports & kPsumPort)
    start = std::max(start, psumPortFree);
  return start;
}

bool Scheduler::run() {
  if (!prepare())
    return false;
  const double infinity = std::numeric_limits<double>::infinity();
  auto checkReady = [&](StreamState &stream) {
    if (stream.ready)
      return;
    if (stream.headChanged) {
      stream.headChanged = false;
      stream.waitsHeld = 0;
    }
    if (!stream.done() && waitsSatisfied(stream)) {
      stream.ready = true;
      stream.readyAt = now;
    }
  };
  for (;;) {
    // A stream's readiness changes only when a semaphore rose or its head
    // changed (the stream that issued last).
    if (semaphoresRose) {
      for (StreamState &stream : streams)
        checkReady(stream);
    } else if (lastIssued >= 0) {
      checkReady(streams[size_t(lastIssued)]);
    }
    semaphoresRose = false;
    lastIssued = -1;
    int best = -1;
    double bestStart = infinity;
    for (unsigned s = 0; s < streams.size(); ++s) {
      const StreamState &stream = streams[s];
      if (!stream.ready)
        continue;
      double start = candidateStart(stream);
      if (start < bestStart) {
        bestStart = start;
        best = int(s);
      }
    }
    // Completions at or before the best start go first: a semaphore raised
    // at time t lets an instruction start at t.
    double nextCompletion =
        completions.empty() ? infinity : completions.top().time;
    if (best >= 0 && bestStart < nextCompletion) {
      if (!issue(unsigned(best), bestStart))
        return false;
      continue;
    }
    if (!completions.empty()) {
      now = nextCompletion;
      while (!completions.empty() && completions.top().time == now) {
        ++semaphores[completions.top().semaphore];
        completions.pop();
      }
      semaphoresRose = true;
      continue;
    }
    bool allDone = std::all_of(streams.begin(), streams.end(),
                               [](const StreamState &s) { return s.done(); });
    if (allDone)
      break;
    return reportDeadlock();
  }
  finish();
  return true;
}

bool Scheduler::issue(unsigned streamIndex, double start) {
  StreamState &stream = streams[streamIndex];
  const uint32_t index = uint32_t(stream.pc());
  const Instruction &inst = stream.head();
  core.currentStream = streamIndex;
  core.currentIndex = index;
  core.currentInst = &inst;

  ExecResult result;
  const bool collective = isCollectiveOpcode(inst.opcode);
  double collectiveDuration = 0.0;
  if (collective) {
    CollectiveTiming timing;
    if (!core.executeCollective(inst, start, timing))
      return false;
    collectiveDuration = timing.durationNs;
    ++stats.collectives;
    stats.communicationNs += timing.durationNs;
    stats.collectiveWaitNs += timing.waitNs;
    stats.collectiveBytes += timing.bytes;
    if (timing.transfer)
      stats.transfers.push_back(timing.record);
  } else if (!core.execute(stream.engine, inst, result)) {
    return false;
  }

  // Why the stream sat idle since its previous instruction ended.
  stream.stats.semaphoreWaitNs += std::max(0.0, stream.readyAt - stream.freeAt);
  stream.stats.portWaitNs += start - std::max(stream.freeAt, stream.readyAt);

  double duration = 0.0;
  const double clock = engineClockGHz(target, stream.engine);
  if (inst.opcode == Opcode::Nop) {
    duration = 0.0;
  } else if (collective) {
    // Collectives run on their own queue: the other streams go on unless
    // their semaphores wait for the collective's result.
    duration = collectiveDuration;
  } else if (stream.engine == Engine::Dma) {
    // The fixed latency overlaps across queues; the data phases share the
    // DMA engines, one transfer at a time in the order they become ready.
    double dataStart = std::max(start + target.dmaFixedNs, dmaDataFree);
    stream.stats.dmaEngineWaitNs += dataStart - (start + target.dmaFixedNs);
    dmaDataFree = dataStart + dmaTransferNs(target, result.shape);
    duration = dmaDataFree - start;
  } else if (inst.opcode == Opcode::Matmul) {
    // LoadStationary of this matmul ran in the background of the previous
    // one; the initiation interval is max(MM, LS).
    duration = std::max(matmulCycles(target, result.shape),
                        loadStationaryCycles(target, result.shape)) /
               clock;
    matmulWorkCycles +=
        double(result.shape.matmulN) *
        (result.shape.fp32Inputs ? double(target.fp32MatmulFactor) : 1.0);
  } else {
    double cycles =
        computeCycles(target, stream.engine, inst.opcode, inst, result.shape);
    if (stream.engine == Engine::Vector || stream.engine == Engine::Scalar) {
      // The access overhead is hidden only when the instruction streams
      // right behind its predecessor and does not read what it wrote.
      bool dependent = index == 0 || start > stream.freeAt;
      if (!dependent && stream.lastWrite.valid)
        for (const AccessPattern &src : inst.srcs)
          if (overlaps(stream.lastWrite, extentOf(src))) {
            dependent = true;
            break;
          }
      if (dependent)
        cycles += stream.engine == Engine::Scalar
                      ? double(target.scalarAccessOverheadCycles)
                      : double(target.accessOverheadCycles);
    }
    duration = cycles / clock;
  }
  const double end = start + duration;

  const uint8_t ports = stream.headPorts;
  if (ports & kSbufPort)
    sbufPortFree = end;
  if (ports & kPsumPort)
    psumPortFree = end;
  stream.freeAt = end;
  stream.lastWrite = result.written;
  stream.ready = false;
  if (inst.signal >= 0)
    completions.push({end, uint32_t(inst.signal)});

  noteOnChipTraffic(inst, stats);
  stream.stats.busyNs += duration;
  ++stream.stats.instructions;
  ++stats.instructions;
  stats.deviceTimeNs = std::max(stats.deviceTimeNs, end);
  stats.matmulFlops += result.flops;
  if (result.shape.fp32Inputs)
    stats.fp32MatmulFlops += result.flops;
  stats.transposeFlops += result.transposeFlops;
  if (inst.opcode == Opcode::DmaCopy) {
    ++stats.dmaCount;
    dmaBytes += uint64_t(result.shape.dmaBytes);
    stats.hbmToSbufBytes += result.hbmToSbufBytes;
    stats.sbufToHbmBytes += result.sbufToHbmBytes;
    stats.sbufToSbufBytes += result.sbufToSbufBytes;
    stats.hbmToHbmBytes += result.hbmToHbmBytes;
    stats.spillSaveBytes += result.spillSaveBytes;
    stats.spillReloadBytes += result.spillReloadBytes;
    stats.scratchSaveBytes += result.scratchSaveBytes;
    stats.scratchReloadBytes += result.scratchReloadBytes;
  }
  if (stream.engine == Engine::Dma && duration > 0.0) {
    // Starts are non-decreasing, so the union of busy intervals grows at
    // its right end only.
    if (start >= dmaActiveUntil)
      stats.dmaActiveNs += duration;
    else if (end > dmaActiveUntil)
      stats.dmaActiveNs += end - dmaActiveUntil;
    dmaActiveUntil = std::max(dmaActiveUntil, end);
  }
  if (inst.origin < stats.originBusyNs.size()) {
    if (stream.engine != Engine::Dma)
      stats.originBusyNs[inst.origin] += duration;
    else
      stats.originDmaBytes[inst.origin] += uint64_t(result.shape.dmaBytes);
  }
  if (duration > 0.0) {
    // Per kind, the union of busy intervals (starts are non-decreasing).
    InstructionKind kind =
        inst.opcode == Opcode::Send || inst.opcode == Opcode::Recv
            ? InstructionKind::Transfer
            : inst.kind;
    auto &busy = kindBusy[size_t(kind) % kNumInstructionKinds];
    if (!busy.empty() && start <= busy.back().second)
      busy.back().second = std::max(busy.back().second, end);
    else
      busy.push_back({start, end});
  }
  if (core.options.recordInstructions)
    stats.records.push_back(
        {streamIndex, index, inst.opcode, inst.origin, start, end});
  // Last: the cursor's next instruction may take the place of `inst`.
  stream.cursor.advance();
  stream.headChanged = true;
  lastIssued = int(streamIndex);
  core.currentInst = nullptr;
  if (!stream.done())
    stream.headPorts = portsOf(target, stream.engine, stream.head());
  return true;
}

bool Scheduler::reportDeadlock() {
  unsigned blocked = 0, used = 0;
  std::string details;
  for (unsigned s = 0; s < streams.size(); ++s) {
    const StreamState &stream = streams[s];
    used += stream.cursor.size() != 0;
    if (stream.done())
      continue;
    const Instruction &inst = stream.head();
    details += blocked++ ? "; " : " ";
    details += streamName(s) + " #" + std::to_string(stream.pc()) + " " +
               opcodeName(inst.opcode) + " waits for";
    bool firstWait = true;
    for (const SemaphoreWait &wait : inst.waits) {
      if (semaphores[wait.semaphore] >= wait.value)
        continue;
      details += firstWait ? " " : ", ";
      firstWait = false;
      details += "semaphore " + std::to_string(wait.semaphore) +
                 " >= " + std::to_string(wait.value) + " (is " +
                 std::to_string(semaphores[wait.semaphore]) + ")";
    }
  }
  core.currentInst = nullptr;
  char when[64];
  std::snprintf(when, sizeof(when),
                "deadlock after %.0f ns: ", stats.deviceTimeNs);
  return core.fail(when + std::to_string(blocked) + " of " +
                   std::to_string(used) + " streams cannot proceed:" + details);
}

void Scheduler::finish() {
  const double time = stats.deviceTimeNs;
  auto percent = [time](double busy) {
    return time > 0.0 ? 100.0 * busy / time : 0.0;
  };
  for (unsigned s = 0; s < streams.size(); ++s) {
    StreamStats &out = s < kNumEngineStreams
                           ? stats.engines[s]
                           : stats.dmaQueues[s - kNumEngineStreams];
    out = streams[s].stats;
    out.busyPercent = percent(out.busyNs);
  }
  stats.dmaActivePercent = percent(stats.dmaActiveNs);
  // The time split: each instant goes to the first kind in this order with
  // an instruction running then; none is idle.
  using Intervals = SimulatorCoreBase::Intervals;
  auto measure = [](const Intervals &list) {
    double total = 0.0;
    for (auto [begin, end] : list)
      total += end - begin;
    return total;
  };
  auto overlap = [](const Intervals &a, const Intervals &b) {
    double total = 0.0;
    for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
      double begin = std::max(a[i].first, b[j].first);
      double end = std::min(a[i].second, b[j].second);
      total += std::max(0.0, end - begin);
      (a[i].second < b[j].second ? i : j)++;
    }
    return total;
  };
  Intervals &merged = core.mergedScratch;
  auto unite = [&merged](const Intervals &a, const Intervals &b,
                         Intervals &out) {
    merged.clear();
    std::merge(a.begin(), a.end(), b.begin(), b.end(),
               std::back_inserter(merged));
    out.clear();
    for (auto [begin, end] : merged) {
      if (!out.empty() && begin <= out.back().second)
        out.back().second = std::max(out.back().second, end);
      else
        out.push_back({begin, end});
    }
  };
  Intervals &covered = core.coveredScratch;
  covered.clear();
  for (InstructionKind kind :
       {InstructionKind::Attention, InstructionKind::Matmul,
        InstructionKind::Optimizer, InstructionKind::Elementwise,
        InstructionKind::DataMovement, InstructionKind::Collective,
        InstructionKind::Transfer, InstructionKind::Other}) {
    const Intervals &busy = kindBusy[size_t(kind)];
    stats.kindNs[size_t(kind)] = measure(busy) - overlap(busy, covered);
    unite(covered, busy, core.unitedScratch);
    covered.swap(core.unitedScratch);
  }
  stats.idleNs = std::max(0.0, time - measure(covered));
  stats.averageDmaBytes =
      stats.dmaCount ? double(dmaBytes) / double(stats.dmaCount) : 0.0;
  if (time > 0.0) {
    stats.tensorEngineUtilisation =
        matmulWorkCycles / (time * target.tensorClockGHz);
    const double peakPerNs = target.peakBf16Tflops() * 1000.0; // FLOP/ns
    const double factor = double(std::max(1u, target.fp32MatmulFactor));
    const double lowPrecision =
        double(stats.matmulFlops - stats.fp32MatmulFlops);
    stats.mfuBf16Peak = double(stats.matmulFlops) / (time * peakPerNs);
    stats.mfuFp32Peak = stats.mfuBf16Peak * factor;
    stats.mfu = (lowPrecision + double(stats.fp32MatmulFlops) * factor) /
                (time * peakPerNs);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Simulator
//===----------------------------------------------------------------------===//

Simulator::Simulator(const Target &target, SimulatorOptions options)
    : core(std::make_unique<SimulatorCore>(target, options)) {}

Simulator::~Simulator() = default;

const Target &Simulator::target() const { return core->target; }
uint8_t *Simulator::sbuf() { return core->sbuf.data(); }
uint8_t *Simulator::psum() { return core->psum.data(); }
uint8_t *Simulator::hbm() { return core->hbm.get(); }
uint64_t Simulator::hbmBytes() const { return core->hbmSize; }

bool Simulator::load(const Program &program, std::string &error) {
  SimulatorCore &c = *core;
  c.program = nullptr;
  c.hbm.reset();
  c.hbmSize = 0;
  c.tensorByName.clear();
  c.tensorsByOffset.clear();
  const Target &target = c.target;
  if (!program.calls.empty() && !program.resolvedCalls) {
    error = "the program's subroutine calls are not resolved: call "
            "trnrt::resolveCalls (or expandCalls) before loading it";
    return false;
  }
  if (program.target != target.name) {
    error = "the program is compiled for '" + program.target +
            "' but the simulator models a " + target.name + " NeuronCore";
    return false;
  }

  // Tensor table: sizes without overflow, inside the program's HBM layout,
  // unique names, constants with the right number of bytes.
  std::vector<uint64_t> sizes(program.tensors.size());
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const HbmTensor &tensor = program.tensors[i];
    if (unsigned(tensor.dtype) > unsigned(DType::I64)) {
      error = "tensor '" + tensor.name + "' has an unknown dtype";
      return false;
    }
    __int128 bytes = dtypeSizeInBytes(tensor.dtype);
    for (int64_t dim : tensor.shape) {
      if (dim < 0) {
        error = "tensor '" + tensor.name + "' has a negative dimension";
        return false;
      }
      bytes *= dim;
      if (bytes > (__int128(1) << 62)) {
        error = "tensor '" + tensor.name + "' is too large";
        return false;
      }
    }
    sizes[i] = uint64_t(bytes);
    if (!c.tensorByName.emplace(tensor.name, i).second) {
      // An output that updates an input in place may share its name: both
      // name the same bytes.
      const HbmTensor &first = program.tensors[c.tensorByName[tensor.name]];
      bool sameStorage =
          tensor.aliasesInput >= 0 &&
          static_cast<size_t>(tensor.aliasesInput) < program.tensors.size() &&
          &program.tensors[tensor.aliasesInput] == &first &&
          first.offset == tensor.offset;
      if (!sameStorage) {
        error = "two HBM tensors are named '" + tensor.name + "'";
        return false;
      }
    }
    if (tensor.kind == HbmTensor::Kind::Constant &&
        tensor.data.size() != sizes[i]) {
      error = describeTensor(tensor, sizes[i]) + " has " +
              std::to_string(tensor.data.size()) + " bytes of data";
      return false;
    }
  }
  c.tensorsByOffset.resize(program.tensors.size());
  for (size_t i = 0; i < program.tensors.size(); ++i)
    c.tensorsByOffset[i] = i;
  std::stable_sort(c.tensorsByOffset.begin(), c.tensorsByOffset.end(),
                   [&](size_t a, size_t b) {
                     return program.tensors[a].offset <
                            program.tensors[b].offset;
                   });

  // Out of memory: name the first tensor (by address) that ends beyond the
  // core's HBM.
  if (program.hbmBytes > target.hbmBytesPerCore) {
    std::string culprit;
    for (size_t index : c.tensorsByOffset) {
      const HbmTensor &tensor = program.tensors[index];
      if (sizes[index] > target.hbmBytesPerCore ||
          tensor.offset > target.hbmBytesPerCore - sizes[index]) {
        culprit = describeTensor(tensor, sizes[index]);
        break;
      }
    }
    error =
        "out of HBM memory: the program needs " +
        std::to_string(program.hbmBytes) + " bytes (" +
        gibibytes(program.hbmBytes) + ") but a " + target.name +
        " NeuronCore has " + std::to_string(target.hbmBytesPerCore) +
        " bytes (" + gibibytes(target.hbmBytesPerCore) + ")" +
        (culprit.empty() ? std::string() : "; " + culprit + " does not fit");
    return false;
  }
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const HbmTensor &tensor = program.tensors[i];
    if (tensor.offset > program.hbmBytes ||
        sizes[i] > program.hbmBytes - tensor.offset) {
      error = describeTensor(tensor, sizes[i]) +
              " lies outside the program's " +
              std::to_string(program.hbmBytes) + " bytes of HBM";
      return false;
    }
  }

  // calloc: pages nobody touches cost no host memory.
  uint64_t allocation = std::max<uint64_t>(program.hbmBytes, 1);
  c.hbm.reset(static_cast<uint8_t *>(std::calloc(allocation, 1)));
  if (!c.hbm) {
    error = "cannot allocate " + std::to_string(allocation) +
            " bytes of host memory for the simulated HBM";
    return false;
  }
  c.hbmSize = program.hbmBytes;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const HbmTensor &tensor = program.tensors[i];
    if (tensor.kind == HbmTensor::Kind::Constant)
      std::memcpy(c.hbm.get() + tensor.offset, tensor.data.data(), sizes[i]);
    else if (c.options.poisonMemory)
      std::memset(c.hbm.get() + tensor.offset, 0xFF, sizes[i]);
  }
  c.sbuf.assign(size_t(target.partitions) * target.sbufBytesPerPartition, 0);
  c.psum.assign(size_t(target.partitions) * target.psumBytesPerPartition, 0);
  c.program = &program;
  c.instructionsChecked = false;
  return true;
}

namespace {

const HbmTensor *lookupTensor(const SimulatorCore &core, std::string_view name,
                              std::string &error) {
  if (!core.program) {
    error = "no program is loaded";
    return nullptr;
  }
  auto it = core.tensorByName.find(std::string(name));
  if (it == core.tensorByName.end()) {
    error = "the program has no HBM tensor named '" + std::string(name) + "'";
    return nullptr;
  }
  return &core.program->tensors[it->second];
}

} // namespace

bool Simulator::writeTensorBytes(std::string_view name, const void *bytes,
                                 size_t size, std::string &error) {
  const HbmTensor *tensor = lookupTensor(*core, name, error);
  if (!tensor)
    return false;
  uint64_t expected = core->tensorBytes(*tensor);
  if (size != expected) {
    error = "tensor '" + tensor->name + "' holds " + std::to_string(expected) +
            " bytes, not " + std::to_string(size);
    return false;
  }
  if (size)
    std::memcpy(core->hbm.get() + tensor->offset, bytes, size);
  return true;
}

bool Simulator::writeTensor(std::string_view name, const double *values,
                            size_t count, std::string &error) {
  const HbmTensor *tensor = lookupTensor(*core, name, error);
  if (!tensor)
    return false;
  const unsigned size = dtypeSizeInBytes(tensor->dtype);
  const uint64_t elements = core->tensorBytes(*tensor) / size;
  if (count != elements) {
    error = "tensor '" + tensor->name + "' has " + std::to_string(elements) +
            " elements, not " + std::to_string(count);
    return false;
  }
  encodeValues(tensor->dtype, values, count, core->hbm.get() + tensor->offset);
  return true;
}

bool Simulator::readTensorBytes(std::string_view name,
                                std::vector<uint8_t> &bytes,
                                std::string &error) const {
  const HbmTensor *tensor = lookupTensor(*core, name, error);
  if (!tensor)
    return false;
  const uint8_t *begin = core->hbm.get() + tensor->offset;
  bytes.assign(begin, begin + core->tensorBytes(*tensor));
  return true;
}

bool Simulator::readTensor(std::string_view name, std::vector<double> &values,
                           std::string &error) const {
  const HbmTensor *tensor = lookupTensor(*core, name, error);
  if (!tensor)
    return false;
  const unsigned size = dtypeSizeInBytes(tensor->dtype);
  const uint64_t elements = core->tensorBytes(*tensor) / size;
  values.resize(elements);
  decodeValues(tensor->dtype, core->hbm.get() + tensor->offset, elements,
               values.data());
  return true;
}

bool Simulator::run(SimulationStats &stats, std::string &error) {
  SimulatorCore &c = *core;
  c.errorOut = &error;
  c.currentInst = nullptr;
  if (!c.program) {
    error = "no program is loaded";
    return false;
  }
  const uint8_t fill = c.options.poisonMemory ? 0xFF : 0x00;
  std::fill(c.sbuf.begin(), c.sbuf.end(), fill);
  std::fill(c.psum.begin(), c.psum.end(), fill);
  if (c.options.poisonMemory) {
    for (const HbmTensor &tensor : c.program->tensors)
      if (tensor.kind == HbmTensor::Kind::Scratch ||
          (tensor.kind == HbmTensor::Kind::Output && tensor.aliasesInput < 0))
        std::memset(c.hbm.get() + tensor.offset, 0xFF, c.tensorBytes(tensor));
  }
  SingleThreadedBlas blasThreads;
  Scheduler scheduler(c, stats);
  bool ok = scheduler.run();
  c.errorOut = nullptr;
  c.currentInst = nullptr;
  return ok;
}

} // namespace trnrt
