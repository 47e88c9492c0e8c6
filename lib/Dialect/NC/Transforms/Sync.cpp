//===- Sync.cpp - semaphores between engine streams ----------------------===//
//
// Every instruction waits, on every other stream, for that stream's latest
// instruction whose memory conflicts with its own (read after write, write
// after write, write after read); semaphores count completions, so that one
// wait covers the stream's earlier instructions too.
//
// The analysis keeps, for every memory location, the latest access of every
// stream (AccessHistory), so that an instruction costs a lookup per operand
// rather than a scan back through every stream's history: linear in the
// kernel's size, where the scan was quadratic.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/NC/Transforms/Sync.h"

#include "Footprint.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <array>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::nc;

namespace {

/// Streams a kernel may use: the five engines and up to 27 DMA queues
/// (targets have 16). Fixed so that the per-stream arrays below are flat and
/// their loops vectorise.
constexpr size_t kMaxStreams = 32;
using StreamCounts = std::array<uint32_t, kMaxStreams>;

/// Per stream, the count of that stream's latest instruction that wrote and
/// that read some memory (0: none). Counts are 1-based positions on the
/// stream, which is what a wait names.
struct LatestAccess {
  StreamCounts writes{}, reads{};

  /// Raises wait[o] to the latest access of stream o that conflicts with a
  /// read (`isWrite` false: its writes) or a write (its writes and reads).
  void conflicts(bool isWrite, StreamCounts &wait) const {
    if (isWrite) {
      for (size_t o = 0; o < kMaxStreams; ++o)
        wait[o] = std::max(wait[o], std::max(writes[o], reads[o]));
    } else {
      for (size_t o = 0; o < kMaxStreams; ++o)
        wait[o] = std::max(wait[o], writes[o]);
    }
  }
  void record(bool isWrite, size_t stream, uint32_t count) {
    (isWrite ? writes : reads)[stream] = count;
  }
  bool operator==(const LatestAccess &other) const {
    return writes == other.writes && reads == other.reads;
  }
};

/// The latest accesses to every byte of one band of partitions of SBUF or
/// PSUM: a map from a byte offset to the accesses that hold from there to
/// the next key. Recording an access splits pieces at its two ends, so no
/// piece straddles the boundary of a footprint, and a query over a
/// footprint's bytes sees exactly the accesses to footprints that overlap
/// it.
class BytePieces {
public:
  BytePieces() { pieces.emplace(0, LatestAccess()); }

  void conflicts(int64_t b0, int64_t b1, bool isWrite,
                 StreamCounts &wait) const {
    auto it = std::prev(pieces.upper_bound(b0)); // the first piece is at 0
    for (; it != pieces.end() && it->first < b1; ++it)
      it->second.conflicts(isWrite, wait);
  }
  void record(int64_t b0, int64_t b1, bool isWrite, size_t stream,
              uint32_t count) {
    auto first = split(b0);
    split(b1);
    for (auto it = first; it != pieces.end() && it->first < b1; ++it)
      it->second.record(isWrite, stream, count);
    // Merge neighbours that now hold the same accesses (from the piece
    // before b0 to the one at b1), so that the map stays as coarse as the
    // history allows.
    auto it = first == pieces.begin() ? first : std::prev(first);
    for (auto next = std::next(it); next != pieces.end() && next->first <= b1;
         next = std::next(it)) {
      if (next->second == it->second)
        pieces.erase(next);
      else
        it = next;
    }
  }

private:
  /// The piece that starts at `at`, split off the one holding it.
  std::map<int64_t, LatestAccess>::iterator split(int64_t at) {
    auto holder = std::prev(pieces.upper_bound(at));
    if (holder->first == at)
      return holder;
    return pieces.emplace_hint(std::next(holder), at, holder->second);
  }

  std::map<int64_t, LatestAccess> pieces;
};

/// The latest access of every stream to every memory location, with the
/// overlap rules of Footprint::overlaps: HBM tensors by identity and byte
/// range, SBUF and PSUM allocations by their boxes of partitions x bytes.
///
/// Boxes overlap in partitions iff they share a band between consecutive
/// start or end partitions of the kernel's tiles, so each band has its own
/// BytePieces. When every tile of a memory starts at partition 0 (as
/// nc-allocate places them), every two boxes share partition 0 and a
/// single band is exact.
class AccessHistory {
public:
  AccessHistory() = default;

  /// Declares the box partitions [p0, p1) of an allocation in `memory`;
  /// call for every allocation before the first query.
  void declareBox(MemorySpace memory, int64_t p0, int64_t p1) {
    Memory &m = memories[memory];
    m.bounds.insert(p0);
    m.bounds.insert(p1);
    m.allFromZero &= p0 == 0;
  }
  void finishDeclarations() {
    for (auto &[memory, m] : memories) {
      if (m.allFromZero)
        m.cuts = {0, std::numeric_limits<int64_t>::max()};
      else
        m.cuts.assign(m.bounds.begin(), m.bounds.end());
      for (size_t band = 0; band + 1 < m.cuts.size(); ++band)
        m.bands.emplace_back();
    }
  }

  /// Raises wait[o] to stream o's latest access conflicting with an access
  /// to `f`; false if `f` is a box that was not declared.
  bool conflicts(const Footprint &f, bool isWrite, StreamCounts &wait) const {
    if (f.memory == MemorySpace::hbm) {
      if (f.scratchOffset) {
        scratch.conflicts(*f.scratchOffset + f.b0, *f.scratchOffset + f.b1,
                          isWrite, wait);
        return true;
      }
      auto it = hbm.find(f.root);
      if (it != hbm.end())
        it->second.conflicts(f.b0, f.b1, isWrite, wait);
      return true;
    }
    auto m = memories.find(f.memory);
    if (m == memories.end())
      return false;
    auto [first, last] = m->second.bandsOf(f.p0, f.p1);
    for (size_t band = first; band < last; ++band)
      m->second.bands[band].conflicts(f.b0, f.b1, isWrite, wait);
    return true;
  }

  void record(const Footprint &f, bool isWrite, size_t stream, uint32_t count) {
    if (f.memory == MemorySpace::hbm) {
      if (f.scratchOffset)
        scratch.record(*f.scratchOffset + f.b0, *f.scratchOffset + f.b1,
                       isWrite, stream, count);
      else
        hbm[f.root].record(f.b0, f.b1, isWrite, stream, count);
      return;
    }
    Memory &m = memories.find(f.memory)->second;
    auto [first, last] = m.bandsOf(f.p0, f.p1);
    for (size_t band = first; band < last; ++band)
      m.bands[band].record(f.b0, f.b1, isWrite, stream, count);
  }

private:
  struct Memory {
    std::set<int64_t> bounds;
    bool allFromZero = true;
    std::vector<int64_t> cuts; ///< band b is partitions [cuts[b], cuts[b+1])
    std::vector<BytePieces> bands;

    std::pair<size_t, size_t> bandsOf(int64_t p0, int64_t p1) const {
      if (allFromZero)
        return {0, 1};
      auto at = [&](int64_t p) {
        return static_cast<size_t>(
            std::lower_bound(cuts.begin(), cuts.end(), p) - cuts.begin());
      };
      return {at(p0), at(p1)};
    }
  };

  /// Kernel arguments and unplaced HBM tensors, by byte range within each.
  llvm::DenseMap<Value, BytePieces> hbm;
  /// Placed HBM scratch, by byte range: tensors live at different times
  /// may share bytes.
  BytePieces scratch;
  std::map<MemorySpace, Memory> memories;
};

} // namespace

int64_t mlir::nc::streamOf(Operation *op) {
  auto vectorLike = [](Engine engine) -> int64_t {
    return engine == Engine::gpsimd ? 3 : 1;
  };
  if (isa<MatmulOp, TransposeOp>(op))
    return 0;
  if (isa<ActivationOp>(op))
    return 2;
  if (auto o = dyn_cast<TensorTensorOp>(op))
    return vectorLike(o.getEngine());
  if (auto o = dyn_cast<TensorScalarOp>(op))
    return vectorLike(o.getEngine());
  if (auto o = dyn_cast<TensorReduceOp>(op))
    return vectorLike(o.getEngine());
  if (auto o = dyn_cast<TensorCopyOp>(op))
    return vectorLike(o.getEngine());
  if (auto o = dyn_cast<MemsetOp>(op))
    return vectorLike(o.getEngine());
  if (isa<SelectOp, BnStatsOp, BnAggrOp, RngOp>(op))
    return 1;
  if (isa<IotaOp, AffineSelectOp>(op))
    return 3;
  // Collectives: the Sync engine, in program order on every rank.
  if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllSliceOp, AllToAllOp,
          CollectivePermuteOp, AxisIndexOp, SendOp, RecvOp>(op))
    return 4;
  if (auto o = dyn_cast<DmaCopyOp>(op))
    return kDmaStreamBase + o.getQueue();
  if (auto o = dyn_cast<DmaGatherOp>(op))
    return kDmaStreamBase + o.getQueue();
  if (auto o = dyn_cast<DmaScatterAddOp>(op))
    return kDmaStreamBase + o.getQueue();
  return -1;
}

LogicalResult mlir::nc::synchronizeKernel(
    func::FuncOp kernel,
    function_ref<void(Operation *, int64_t, ArrayRef<StreamWait>)>
        onInstruction) {
  // A call (nc.call) counts, on every stream, the instructions its callee
  // issues there: waits after it name counts of the expanded program
  // (trnrt::expandCalls), which also makes the call's barrier.
  llvm::DenseMap<Operation *, StreamCounts> calleeCounts;
  int64_t maxStream = kDmaStreamBase - 1;
  auto countCallee = [&](CallOp call) -> LogicalResult {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee || callee.isExternal())
      return call.emitError("nc.call of '")
             << call.getCallee() << "', which is not a kernel of the module";
    auto [it, inserted] = calleeCounts.try_emplace(callee, StreamCounts{});
    if (!inserted)
      return success();
    StreamCounts counts{};
    LogicalResult result = success();
    callee.walk([&](Operation *op) {
      int64_t stream = streamOf(op);
      if (isa<CallOp>(op))
        result = op->emitError("a subroutine calls another (one level only)");
      if (stream < 0)
        return;
      if (static_cast<size_t>(stream) >= kMaxStreams) {
        result = op->emitError("stream ") << stream << " past the last";
        return;
      }
      maxStream = std::max(maxStream, stream);
      ++counts[stream];
    });
    it->second = counts;
    return result;
  };
  for (auto call : kernel.getOps<CallOp>())
    if (failed(countCallee(call)))
      return failure();
  // The streams in use and the partition ranges of every placed tile.
  SmallVector<std::pair<MemorySpace, std::pair<int64_t, int64_t>>> boxes;
  kernel.walk([&](Operation *op) {
    maxStream = std::max(maxStream, streamOf(op));
    if (auto alloc = dyn_cast<AllocOp>(op)) {
      if (alloc.getStartPartition() && alloc.getByteOffset()) {
        int64_t p0 = *alloc.getStartPartition();
        boxes.push_back({alloc.getType().getMemory(),
                         {p0, p0 + alloc.getType().getPartitions()}});
      }
    }
  });
  size_t streams = static_cast<size_t>(maxStream) + 1;
  if (streams > kMaxStreams)
    return kernel.emitError()
           << "nc-insert-sync handles up to " << kMaxStreams
           << " streams (DMA queues up to " << kMaxStreams - kDmaStreamBase - 1
           << "); this kernel uses " << streams;
  AccessHistory history;
  for (auto &[memory, range] : boxes)
    history.declareBox(memory, range.first, range.second);
  history.finishDeclarations();

  StreamCounts issued{}; ///< instructions per stream so far
  StreamCounts wait{};
  SmallVector<std::pair<Footprint, bool>> accesses; ///< (footprint, isWrite)
  SmallVector<MemoryEffects::EffectInstance> instances;
  SmallVector<StreamWait> waits;

  WalkResult result = kernel.walk([&](Operation *op) -> WalkResult {
    if (auto call = dyn_cast<CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      const StreamCounts &counts = calleeCounts.find(callee)->second;
      for (size_t s = 0; s < kMaxStreams; ++s)
        issued[s] += counts[s];
      return WalkResult::advance();
    }
    int64_t stream = streamOf(op);
    if (stream < 0)
      return WalkResult::advance();
    accesses.clear();
    instances.clear();
    if (auto effects = dyn_cast<MemoryEffectOpInterface>(op))
      effects.getEffects(instances);
    for (auto &instance : instances) {
      Value value = instance.getValue();
      if (!value)
        continue;
      bool isWrite = isa<MemoryEffects::Write>(instance.getEffect());
      if (!isWrite && !isa<MemoryEffects::Read>(instance.getEffect()))
        continue;
      Footprint footprint = footprintOf(value);
      if (footprint.memory != MemorySpace::hbm && !footprint.hasAddress()) {
        op->emitError("operand tile has no address; run nc-allocate before "
                      "nc-insert-sync (reused memory creates dependencies)");
        return WalkResult::interrupt();
      }
      accesses.push_back({footprint, isWrite});
    }

    // One wait per other stream: for its latest conflicting instruction.
    wait.fill(0);
    for (auto &[footprint, isWrite] : accesses)
      if (!history.conflicts(footprint, isWrite, wait)) {
        op->emitError("internal error: nc-insert-sync met a tile that is not "
                      "an allocation of this kernel");
        return WalkResult::interrupt();
      }
    if (issued[stream] == std::numeric_limits<uint32_t>::max()) {
      op->emitError("more instructions on one stream than a semaphore "
                    "count holds");
      return WalkResult::interrupt();
    }
    uint32_t count = ++issued[stream];
    for (auto &[footprint, isWrite] : accesses)
      history.record(footprint, isWrite, stream, count);

    // Deterministic output: waits in the order of the semaphores.
    waits.clear();
    for (size_t other = 0; other < streams; ++other)
      if (static_cast<int64_t>(other) != stream && wait[other] > 0)
        waits.push_back({static_cast<uint32_t>(other), wait[other]});
    onInstruction(op, stream, waits);
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
