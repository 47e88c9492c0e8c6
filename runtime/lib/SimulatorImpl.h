//===- SimulatorImpl.h - Simulator internals --------------------*- C++ -*-===//
//
// Shared by Simulator.cpp (memories, scheduler, statistics), the functional
// semantics of the opcodes (SimulatorExecute.cpp: Vector, Scalar, GpSimd;
// SimulatorTensorEngine.cpp: matmul, transpose; SimulatorDma.cpp: dma_copy),
// SimulatorTiles.cpp (access patterns and dtype conversions) and
// SimulatorCost.cpp (the timing model). Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_LIB_SIMULATORIMPL_H
#define TRNRT_LIB_SIMULATORIMPL_H

#include "trnrt/Simulator.h"

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace trnrt {
namespace sim {

//===----------------------------------------------------------------------===//
// Tile views
//===----------------------------------------------------------------------===//

/// A bounds-checked access pattern resolved to host memory. Free dims are in
/// bytes, padded to four (outermost first, unit dims in front), with
/// contiguous neighbours merged; the element order is the access pattern's
/// row-major order, so buffers decoded from a view are [partitions][free].
struct TileView {
  uint8_t *base = nullptr;    ///< element (p = 0, i = 0)
  int64_t partitionPitch = 0; ///< bytes between partitions
  unsigned partitions = 0;
  unsigned startPartition = 0; ///< on-chip memories
  Memory memory = Memory::Sbuf;
  DType dtype = DType::F32;
  unsigned elementBytes = 4;
  int64_t sizes[4] = {1, 1, 1, 1};
  int64_t strides[4] = {0, 0, 0, 0}; ///< bytes
  int64_t freeElements = 0;
  /// Byte extent of one partition's elements: [minByte, endByte) from the
  /// partition's start (on-chip) or from the HBM base of partition 0.
  int64_t minByte = 0;
  int64_t endByte = 0;
  /// Elements per contiguous run in a partition (for the DMA buffer count).
  int64_t runElements = 1;
  /// Stride (elements) of the pattern's innermost dim with more than one
  /// element; 1 if there is none. Drives the stride penalty and the bf16
  /// fast forms.
  int64_t innermostStride = 1;

  int64_t totalElements() const { return freeElements * partitions; }
  /// Contiguous fp32 rows at a 4-byte-aligned address: BLAS can use them in
  /// place with leading dimension partitionPitch / 4.
  bool isDenseF32() const;
};

/// Decodes every element to fp32: out[p * freeElements + i].
void decodeTile(const TileView &view, float *out);
/// Rounds every value to the view's dtype (RNE; f8E4M3FN saturates; to
/// integers: truncation toward zero, saturating, NaN -> 0) and stores it.
void encodeTile(const float *in, const TileView &view);
/// Integer paths (GpSimd int32 math, bitwise ops, int-to-int copies).
void decodeTileInt(const TileView &view, int64_t *out);
/// Wraps to the dtype's width (i1: nonzero -> 1); floats get the value.
void encodeTileInt(const int64_t *in, const TileView &view);
/// Bit-exact copies between views of the same dtype.
void gatherBytes(const TileView &view, uint8_t *out);
void scatterBytes(const uint8_t *in, const TileView &view);
/// Whether two views may share a byte (a conservative box test: same memory,
/// intersecting partitions and byte ranges).
bool viewsMayOverlap(const TileView &a, const TileView &b);
/// Bit-exact copy of src's elements, in element order, into dst (same dtype
/// and element count) without a staging buffer: memcpy for runs contiguous
/// on both sides. The views must not overlap (viewsMayOverlap).
void copyElements(const TileView &src, const TileView &dst);
/// The partitions [first, first + count) of `view` as a view of their own
/// (its elements are that slice of the view's element order).
TileView partitionSlice(const TileView &view, unsigned first, unsigned count);

/// Element conversions used by the tile loops (exposed for tests).
uint16_t floatToBf16(float value);
float bf16ToFloat(uint16_t bits);
/// f32 -> f16 / f8E4M3FN / f8E5M2 bits with roundToDType's rules.
uint32_t encodeNarrowFloat(float value, DType dtype);
/// Float to integer dtype: trunc toward zero, saturate, NaN -> 0.
int64_t floatToInteger(float value, DType dtype);

/// Grows a scratch buffer to at least `size` elements (never shrinks it).
template <typename T> void ensureSize(std::vector<T> &buffer, int64_t size) {
  if (buffer.size() < size_t(size))
    buffer.resize(size_t(size));
}

//===----------------------------------------------------------------------===//
// Cost model inputs
//===----------------------------------------------------------------------===//

/// What the timing model needs to know about one executed instruction; the
/// executor fills it from the resolved operands.
struct CostShape {
  int64_t freeElements = 0;     ///< N: free elements per partition
  bool stridePenalty = false;   ///< an innermost stride > fastStrideBytes
  bool psumInput = false;       ///< a two-input op reads one input from PSUM
  bool fastBf16 = false;        ///< the bf16 fast forms of docs/isa.md §7.2
  unsigned tensorInputs = 1;    ///< k of the GpSimd formula
  unsigned maxElementBytes = 4; ///< b of the GpSimd formula
  // Tensor Engine.
  int64_t matmulK = 0, matmulM = 0, matmulN = 0;
  bool fp32Inputs = false;
  int64_t transposePartitions = 0, transposeFree = 0;
  // DMA.
  double dmaBytes = 0;
  double dmaBuffers = 0;
  unsigned dmaPartitions = 0;
  unsigned dmaHbmSides = 0; ///< 0, 1 or 2 (HBM to HBM)
};

/// Engine cycles of an instruction on a compute engine (docs/isa.md §7.1,
/// §7.2), before the dependent-instruction overhead the scheduler adds.
double computeCycles(const Target &target, Engine engine, Opcode opcode,
                     const Instruction &inst, const CostShape &shape);
/// MultiplyMoving: max(min(64, M), N), x4 for fp32 inputs.
double matmulCycles(const Target &target, const CostShape &shape);
/// LoadStationary: ceil(M / 4), x4 for fp32 inputs; runs in the background
/// of the previous matmul, so a matmul costs max(MM, LS).
double loadStationaryCycles(const Target &target, const CostShape &shape);
/// min(dmaEngines, ceil(P / (partitions / dmaEngines))).
unsigned dmaEnginesUsed(const Target &target, const CostShape &shape);
/// The data phase of a DMA (after dmaFixedNs, §7.3): bytes and buffers
/// spread over the engines, or the HBM cap if that is slower.
double dmaTransferNs(const Target &target, const CostShape &shape);
double engineClockGHz(const Target &target, Engine engine);

/// Keeps OpenBLAS single-threaded while alive (restoring the previous count
/// after): the simulator's GEMMs (at most 128x128x512) are too small for BLAS
/// threads to pay, and their spinning workers only steal the other cores.
class SingleThreadedBlas {
public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas &) = delete;
  SingleThreadedBlas &operator=(const SingleThreadedBlas &) = delete;
};

//===----------------------------------------------------------------------===//
// The core
//===----------------------------------------------------------------------===//

struct FreeDeleter {
  void operator()(uint8_t *memory) const { std::free(memory); }
};

/// Byte ranges an instruction wrote, for read-after-write detection.
struct Extent {
  Memory memory = Memory::Sbuf;
  unsigned firstPartition = 0, endPartition = 0;
  int64_t minByte = 0, endByte = 0;
  bool valid = false;
};

/// What executing one instruction produced, besides its memory effects.
struct ExecResult {
  CostShape shape;
  uint64_t flops = 0;
  uint64_t transposeFlops = 0;
  Extent written;
  // DMA traffic (bytes on the HBM side for HBM transfers).
  uint64_t hbmToSbufBytes = 0, sbufToHbmBytes = 0;
  uint64_t sbufToSbufBytes = 0, hbmToHbmBytes = 0;
  uint64_t spillSaveBytes = 0, spillReloadBytes = 0;
  uint64_t scratchSaveBytes = 0, scratchReloadBytes = 0;
};

/// What one collective cost this rank in simulated time.
struct CollectiveTiming {
  double durationNs = 0.0; ///< from its start here to the group's finish
  double waitNs = 0.0;     ///< waiting for the group's last member
  uint64_t bytes = 0;      ///< of the source
  /// Send and Recv: what the run's TransferRecord says.
  bool transfer = false;
  TransferRecord record;
};

class SimulatorCoreBase {
public:
  SimulatorCoreBase(const Target &target, SimulatorOptions options)
      : target(target), options(options) {
    // More threads than cores only make TBB warn.
    const int cores = tbb::info::default_concurrency();
    const int threads =
        options.threads == 0 ? cores : std::min(int(options.threads), cores);
    if (threads > 1)
      arena = std::make_unique<tbb::task_arena>(threads);
  }

  /// Calls fn(i) for every i in [0, pieces), on the arena's threads when
  /// there is one. Callers cut work into pieces that depend only on the
  /// instruction and write disjoint bytes, so results do not depend on the
  /// thread count or the order pieces run in.
  template <typename Fn> void forEachPiece(int64_t pieces, Fn &&fn) {
    if (!arena || pieces <= 1) {
      for (int64_t i = 0; i < pieces; ++i)
        fn(i);
      return;
    }
    arena->execute([&] {
      tbb::parallel_for(int64_t(0), pieces, [&](int64_t i) { fn(i); });
    });
  }
  /// An element-wise instruction over [P][F] host buffers, in pieces of
  /// partitions: decode(first, count) fills the pieces' part of the input
  /// buffers, finish(first, count) computes it and stores it. When an input
  /// may share bytes with an output (`overlap`), every piece decodes before
  /// any piece finishes; otherwise each piece does both.
  template <typename Decode, typename Finish>
  void elementwisePieces(unsigned partitions, int64_t elements, bool overlap,
                         Decode &&decode, Finish &&finish) {
    const int64_t pieces = partitionPieces(partitions, elements);
    auto run = [&](int64_t i, bool decoding, bool finishing) {
      const unsigned first = unsigned(partitions * i / pieces);
      const unsigned count = unsigned(partitions * (i + 1) / pieces) - first;
      if (decoding)
        decode(first, count);
      if (finishing)
        finish(first, count);
    };
    forEachPiece(pieces, [&](int64_t i) { run(i, true, !overlap); });
    if (overlap)
      forEachPiece(pieces, [&](int64_t i) { run(i, false, true); });
  }
  /// How many pieces of partitions an instruction over `partitions`
  /// partitions and `elements` elements is cut into: kMaxPieces (at most one
  /// per partition) from kParallelElements elements on, else 1.
  static int64_t partitionPieces(unsigned partitions, int64_t elements) {
    if (elements < kParallelElements || partitions < 2)
      return 1;
    return std::min<int64_t>(kMaxPieces, partitions);
  }
  /// Below this many elements an instruction runs in one piece (splitting
  /// costs more than it saves).
  static constexpr int64_t kParallelElements = 16384;
  static constexpr int64_t kMaxPieces = 4;

  const Target &target;
  SimulatorOptions options;
  const Program *program = nullptr;

  std::unique_ptr<uint8_t, FreeDeleter> hbm;
  uint64_t hbmSize = 0;
  std::vector<uint8_t> sbuf, psum;
  std::unordered_map<std::string, size_t> tensorByName;
  /// Tensor indices sorted by HBM offset (findTensorAt).
  std::vector<size_t> tensorsByOffset;

  // The instruction being executed, for error messages and access rules.
  Engine currentEngine = Engine::Sync;
  unsigned currentStream = 0;
  uint32_t currentIndex = 0;
  const Instruction *currentInst = nullptr;
  std::string *errorOut = nullptr;

  /// Threads for forEachPiece; none when there is one (options.threads == 1
  /// or a single core).
  std::unique_ptr<tbb::task_arena> arena;

  // Scratch buffers reused across instructions (no allocation per
  // instruction once warm).
  std::vector<float> bufA, bufB, bufC, bufD;
  /// The scheduler's per-run lists (Simulator.cpp), kept across runs so
  /// that a pipeline rank's thousands of fragment runs reuse their memory:
  /// per InstructionKind, disjoint busy intervals in time order, and the
  /// time split's working lists.
  using Intervals = std::vector<std::pair<double, double>>;
  std::array<Intervals, kNumInstructionKinds> kindBusy;
  Intervals coveredScratch, mergedScratch, unitedScratch;
  /// The loaded program's instructions passed the scheduler's checks.
  bool instructionsChecked = false;
  std::vector<int64_t> intA, intB, intC;
  std::vector<uint8_t> rawA;

  /// Sets *errorOut to "stream 'S' instruction #I (opcode): message".
  bool fail(const std::string &message);
  /// Bounds-checks `ap` and resolves it; on failure reports `operand`.
  /// `decoded`: the whole view may be decoded into host buffers, so its
  /// size is bounded; an indirect DMA's table (of which it touches a row
  /// per partition) is not.
  bool makeView(const AccessPattern &ap, const char *operand, TileView &view,
                bool decoded = true);
  /// The HBM tensor whose bytes contain `byteOffset`, or nullptr.
  const HbmTensor *findTensorAt(int64_t byteOffset) const;
  uint64_t tensorBytes(const HbmTensor &tensor) const;

  /// Functional effect of the current instruction on `engine`.
  bool execute(Engine engine, const Instruction &inst, ExecResult &result);
  /// A collective started at `startNs` on this rank: exchanges with its
  /// group through options.collectives, stores the result, and tells when
  /// the group finishes (SimulatorCollectives.cpp).
  bool executeCollective(const Instruction &inst, double startNs,
                         CollectiveTiming &timing);
  /// Send and Recv, through the same context (SimulatorCollectives.cpp).
  bool executeTransfer(const Instruction &inst, double startNs,
                       const std::string &description,
                       CollectiveTiming &timing);

private:
  bool scalarValues(const ScalarOperand &operand, unsigned partitions,
                    const char *name, float *out);
  bool execMatmul(const Instruction &inst, ExecResult &result);
  /// The arithmetic of a checked matmul (skipped when timing only).
  void matmulValues(const Instruction &inst, const TileView &stationary,
                    const TileView &moving, const TileView &dst);
  bool execTranspose(const Instruction &inst, ExecResult &result);
  bool execActivation(const Instruction &inst, ExecResult &result);
  bool execTensorTensor(const Instruction &inst, ExecResult &result);
  bool execTensorScalar(const Instruction &inst, ExecResult &result);
  bool execTensorReduce(const Instruction &inst, ExecResult &result);
  bool execTensorCopy(const Instruction &inst, ExecResult &result);
  bool execSelect(const Instruction &inst, ExecResult &result);
  bool execBnStats(const Instruction &inst, ExecResult &result);
  bool execBnAggr(const Instruction &inst, ExecResult &result);
  bool execMemset(const Instruction &inst, ExecResult &result);
  bool execIota(const Instruction &inst, ExecResult &result);
  bool execAffineSelect(const Instruction &inst, ExecResult &result);
  bool execRng(const Instruction &inst, ExecResult &result);
  /// A direct or an indirect (gather / scatter-add) DMA.
  bool execDmaCopy(const Instruction &inst, ExecResult &result);
  bool execDirectDma(const Instruction &inst, ExecResult &result);
  bool execIndirectDma(const Instruction &inst, ExecResult &result);
  bool execNop(const Instruction &, ExecResult &) { return true; }
  /// Collectives reach executeCollective instead; this refuses one that
  /// does not.
  bool execCollective(const Instruction &inst, ExecResult &result);
  /// makeView plus the engine's reach (compute engines: SBUF and PSUM,
  /// GpSimd: SBUF only, DMA: HBM and SBUF).
  bool operand(const AccessPattern &ap, const char *name, TileView &view,
               bool decoded = true);
  bool sameShape(const TileView &a, const TileView &b, const char *aName,
                 const char *bName);
  void noteWrite(const TileView &view, ExecResult &result);
  void noteDmaTraffic(const TileView &src, const TileView &dst,
                      ExecResult &result);
  /// Bit-exact copy between views of one dtype (staged through a buffer
  /// only when they may overlap).
  void copySameDType(const TileView &src, const TileView &dst);
  /// Copies src's values into dst's dtype: bit-exact within a dtype, in
  /// int64 between integer dtypes when `exactIntegers`, else through fp32.
  void copyConverting(const TileView &src, const TileView &dst,
                      bool exactIntegers);
};

} // namespace sim

class SimulatorCore : public sim::SimulatorCoreBase {
public:
  using SimulatorCoreBase::SimulatorCoreBase;
};

} // namespace trnrt

#endif // TRNRT_LIB_SIMULATORIMPL_H
