//===- Simulator.h - One simulated NeuronCore -------------------*- C++ -*-===//
//
// Executes a Program (trnrt/Isa.h) on a simulated NeuronCore: functionally
// exact for the ISA (operands decoded to fp32, results rounded to the
// destination dtype, fp32 PSUM accumulation, every access bounds-checked),
// with an event-driven timing model (engine clocks, per-instruction cycle
// formulas, DMA fixed cost and bandwidth, semaphores, the NeuronCore-v2 port
// conflicts). docs/simulator.md describes the semantics and the cost model.
//
// No exceptions: every fallible call returns false with a one-line message.
// No MLIR or LLVM dependency.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_SIMULATOR_H
#define TRNRT_SIMULATOR_H

#include "trnrt/Isa.h"
#include "trnrt/Target.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trnrt {

struct CollectiveContext;

struct SimulatorOptions {
  /// Fill SBUF and PSUM (before every run) and the input, output and
  /// scratch tensors (at load; outputs and scratch again before every run)
  /// with 0xFF bytes: NaN in every float dtype, -1 in integer dtypes. Reads
  /// of memory nobody wrote, or of inputs the caller never wrote, then show
  /// up as NaN in the results.
  bool poisonMemory = false;
  /// Keep one InstructionRecord per executed instruction (profiles).
  bool recordInstructions = false;
  /// Host threads that share one instruction's work (TBB): 0 = every core
  /// TBB sees, 1 = none but the caller's. The work is cut into pieces that
  /// depend only on the instruction, never on this count, so results are
  /// bit-identical for every value.
  unsigned threads = 0;
  /// The rank's binding of a partitioned program (trnrt/Collectives.h):
  /// without one, a program with collectives fails to run. Not owned.
  CollectiveContext *collectives = nullptr;
  /// Last, so that aggregate initialisers of the fields above keep their
  /// order. Time the program without computing its values: every operand is
  /// resolved and checked and every instruction costed as in a full run
  /// (the timing model never reads values: docs/simulator.md, "Timing
  /// only"), but no arithmetic is done and no memory written, and
  /// collectives and transfers exchange no bytes. Device time, engine
  /// statistics, traffic and profiles equal a full run's; memory contents
  /// are undefined. For programs too large to simulate functionally (a
  /// GPT-3 pipeline stage: tens of TFLOPs per step).
  bool timingOnly = false;
};

/// Streams are numbered as in docs/isa.md §4: 0..4 are the engine streams
/// in Engine order (Tensor, Vector, Scalar, GpSimd, Sync), 5 + q is DMA
/// queue q; streamName() (trnrt/IsaValidate.h) names them.
constexpr unsigned kNumEngineStreams = 5;

/// One executed instruction, for the profile timeline.
struct InstructionRecord {
  uint32_t stream = 0;
  uint32_t index = 0; ///< position in its stream
  Opcode opcode = Opcode::Nop;
  uint32_t origin = 0; ///< Instruction::origin
  double startNs = 0.0;
  double endNs = 0.0;
};

/// A pipeline transfer (send or recv) of a run, with what its timing
/// depends on. A fragment whose receives arrive as a recorded run's did
/// repeats that run's timeline exactly (trnrt/PipelineRun.cpp reuses it).
struct TransferRecord {
  bool send = false;
  int peer = 0;    ///< world rank
  int64_t tag = 0; ///< Instruction::tag
  double startNs = 0;
  /// A send: when it posted (its start on the transfer clock); a receive:
  /// when its peer sent, on this run's clock.
  double sentNs = 0;
  double linkNs = 0; ///< the time the bytes take over the link
};

struct StreamStats {
  double busyNs = 0.0;      ///< sum of the instructions' durations
  double busyPercent = 0.0; ///< busyNs / deviceTimeNs * 100
  uint64_t instructions = 0;
  /// Time the stream was free but its next instruction's semaphore waits
  /// did not hold yet (from time 0 for its first instruction).
  double semaphoreWaitNs = 0.0;
  /// Time its next instruction was ready but a shared port (NeuronCore-v2:
  /// Vector/GpSimd SBUF, Vector/Scalar PSUM) was held by another engine.
  double portWaitNs = 0.0;
  /// DMA queues: time transfers waited, after their fixed latency, for the
  /// DMA engines to finish other queues' transfers (part of busyNs).
  double dmaEngineWaitNs = 0.0;
};

/// What one run of a program did, in simulated time.
struct SimulationStats {
  double deviceTimeNs = 0.0; ///< end of the last instruction
  /// Indexed by Engine (Tensor, Vector, Scalar, GpSimd, Sync).
  std::array<StreamStats, kNumEngineStreams> engines;
  std::vector<StreamStats> dmaQueues;
  double dmaActiveNs = 0.0; ///< time at least one DMA queue is busy
  double dmaActivePercent = 0.0;

  /// Fraction of the device time the Tensor Engine streams matmul columns
  /// (N_moving cycles per matmul, x4 for fp32 inputs); excludes the
  /// MM_INIT_LATENCY padding of short matmuls, LoadStationary and transposes.
  double tensorEngineUtilisation = 0.0;
  uint64_t matmulFlops = 0;     ///< 2*M*N*K per matmul
  uint64_t fp32MatmulFlops = 0; ///< the part with fp32 inputs
  uint64_t transposeFlops = 0;  ///< identity-matmul FLOPs of transposes
  /// Achieved FLOP/s over the peak, each matmul measured against the peak
  /// for its input dtype (fp32 inputs run at 1/4 of the bf16 peak).
  double mfu = 0.0;
  /// matmulFlops against Target::peakBf16Tflops only.
  double mfuBf16Peak = 0.0;
  /// matmulFlops against the fp32 peak (peakBf16Tflops / fp32MatmulFactor).
  double mfuFp32Peak = 0.0;

  // DMA traffic (bytes of the HBM side for HBM transfers).
  uint64_t hbmToSbufBytes = 0;
  uint64_t sbufToHbmBytes = 0;
  uint64_t sbufToSbufBytes = 0;
  uint64_t hbmToHbmBytes = 0;
  uint64_t dmaCount = 0;
  double averageDmaBytes = 0.0;
  /// DMAs that write (save) or read (reload) the HBM tensors holding
  /// spilled SBUF tiles (HbmTensor::isSpill).
  uint64_t spillSaveBytes = 0;
  uint64_t spillReloadBytes = 0;
  uint64_t spillBytes() const { return spillSaveBytes + spillReloadBytes; }
  /// DMAs that write or read the other Scratch tensors: intermediates that
  /// make a round trip through HBM between kernels' tiles.
  uint64_t scratchSaveBytes = 0;
  uint64_t scratchReloadBytes = 0;

  /// On-chip operand traffic of every instruction (DMA sides included):
  /// bytes of the access patterns read (sources, scalar columns, indices,
  /// the PSUM a matmul accumulates into) and written (destinations).
  uint64_t sbufReadBytes = 0;
  uint64_t sbufWriteBytes = 0;
  uint64_t psumReadBytes = 0;
  uint64_t psumWriteBytes = 0;

  uint64_t instructions = 0;
  /// The device time split by what runs (InstructionKind): each instant
  /// goes to the first of attention, matmul, optimizer, elementwise, data
  /// movement, collective, other with an instruction running; idleNs is
  /// the rest. The parts add up to deviceTimeNs.
  std::array<double, kNumInstructionKinds> kindNs{};
  double idleNs = 0.0;
  /// Per origin (Program::origins, index 0 for instructions without one):
  /// the summed durations of its compute-engine instructions and the bytes
  /// its DMAs moved.
  std::vector<double> originBusyNs;
  std::vector<uint64_t> originDmaBytes;

  // Collectives (partitioned programs; docs/simulator.md "Collectives").
  uint64_t collectives = 0;
  /// Sum of the collectives' durations on the Sync stream: waiting for the
  /// group's last member plus the transfer itself.
  double communicationNs = 0.0;
  /// The part of communicationNs spent waiting for other ranks to arrive.
  double collectiveWaitNs = 0.0;
  /// Bytes of the collectives' sources (what each rank contributes).
  uint64_t collectiveBytes = 0;

  /// Filled when SimulatorOptions::recordInstructions is set, in start order.
  std::vector<InstructionRecord> records;
  /// Every send and recv, in issue order.
  std::vector<TransferRecord> transfers;
};

class SimulatorCore;

/// One NeuronCore's memories and engines. Typical use:
///   Simulator sim(trn1Target());
///   sim.load(program, error);
///   sim.writeTensor("x", values.data(), values.size(), error);
///   sim.run(stats, error);
///   sim.readTensor("y", result, error);
class Simulator {
public:
  explicit Simulator(const Target &target, SimulatorOptions options = {});
  ~Simulator();
  Simulator(const Simulator &) = delete;
  Simulator &operator=(const Simulator &) = delete;

  /// Lays out HBM for `program` (Program::hbmBytes, at most
  /// Target::hbmBytesPerCore: beyond it, an out-of-memory error naming the
  /// first tensor that does not fit) and copies its constants. The program
  /// must outlive the simulator or the next load(). Fails if the program's
  /// target differs from the simulator's.
  bool load(const Program &program, std::string &error);

  /// Writes a whole HBM tensor: `count` values rounded to its dtype (floats:
  /// roundToDType; integers: truncated toward zero and saturated, NaN -> 0;
  /// i1: nonzero -> 1).
  bool writeTensor(std::string_view name, const double *values, size_t count,
                   std::string &error);
  /// Writes a whole HBM tensor from raw little-endian bytes of its dtype.
  bool writeTensorBytes(std::string_view name, const void *bytes, size_t size,
                        std::string &error);
  /// Reads a whole HBM tensor as doubles (exact for every dtype but i64
  /// values beyond 2^53).
  bool readTensor(std::string_view name, std::vector<double> &values,
                  std::string &error) const;
  bool readTensorBytes(std::string_view name, std::vector<uint8_t> &bytes,
                       std::string &error) const;

  /// Runs the loaded program once from fresh SBUF and PSUM (zero, or the
  /// poison pattern) and zeroed semaphores. On failure (an out-of-bounds
  /// access, a bad operand, an out-of-range gather index, a deadlock, an
  /// unsupported instruction), `error` names the stream, the instruction
  /// index and opcode, and the operand, as the validator does ("vector
  /// stream #12 tensor_tensor: srcs[1] (SBUF f32) bytes [...) ..."); memory
  /// holds the effects of the instructions that ran.
  bool run(SimulationStats &stats, std::string &error);

  const Target &target() const;
  /// Raw views of the memories, for tests and debugging. Partition p of SBUF
  /// starts at sbuf() + p * Target::sbufBytesPerPartition (likewise PSUM).
  uint8_t *sbuf();
  uint8_t *psum();
  uint8_t *hbm();
  uint64_t hbmBytes() const;

private:
  std::unique_ptr<SimulatorCore> core;
};

} // namespace trnrt

#endif // TRNRT_SIMULATOR_H
