//===- Allocate.cpp - SBUF/PSUM allocation by liveness -------------------===//

#include "trn/Dialect/NC/Transforms/Passes.h"

#include "Footprint.h"

#include "trnrt/Isa.h"
#include "trnrt/Target.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>
#include <map>

namespace mlir::nc {
#define GEN_PASS_DEF_NCALLOCATE
#include "trn/Dialect/NC/Transforms/Passes.h.inc"
} // namespace mlir::nc

using namespace mlir;
using namespace mlir::nc;

namespace {

/// SBUF tiles start on 64-byte boundaries: aligned accesses keep the
/// simulator's (and hardware's) fast path and make addresses readable.
constexpr int64_t kSbufAlignment = 64;
/// Tiles of at least this many bytes per partition are placed from the top
/// of SBUF down (RangeAllocator::allocateHigh).
constexpr int64_t kLargeTileBytes = 32 * 1024;

/// First-fit allocator over a byte range, with frees.
class RangeAllocator {
public:
  explicit RangeAllocator(int64_t capacity) { free[0] = capacity; }
  /// Next fit: search from where the last allocation ended, wrapping
  /// around. A freed tile is then not handed out again at once, so the next
  /// tile of a loop lands in another buffer and engines can overlap (the
  /// reuse of one address would force a write-after-read wait).
  std::optional<int64_t> allocate(int64_t bytes, int64_t alignment) {
    for (int pass = 0; pass < 2; ++pass) {
      auto it = pass == 0 ? free.upper_bound(cursor) : free.begin();
      if (pass == 0 && it != free.begin() &&
          std::prev(it)->first + std::prev(it)->second > cursor)
        --it; // the block containing the cursor
      for (; it != free.end(); ++it) {
        int64_t from = pass == 0 ? std::max(it->first, cursor) : it->first;
        int64_t start = (from + alignment - 1) / alignment * alignment;
        int64_t end = it->first + it->second;
        if (start + bytes > end)
          continue;
        int64_t blockStart = it->first;
        free.erase(it);
        if (start > blockStart)
          free[blockStart] = start - blockStart;
        if (start + bytes < end)
          free[start + bytes] = end - (start + bytes);
        cursor = start + bytes;
        return start;
      }
    }
    return std::nullopt;
  }
  /// First fit from the highest address down: large, long-lived tiles (a
  /// matmul's resident panels) gather at the top, where the small tiles
  /// cycling next fit through the rest do not fragment the space they need.
  std::optional<int64_t> allocateHigh(int64_t bytes, int64_t alignment) {
    for (auto it = free.rbegin(); it != free.rend(); ++it) {
      int64_t blockStart = it->first, end = it->first + it->second;
      int64_t start = (end - bytes) / alignment * alignment;
      if (start < blockStart)
        continue;
      free.erase(std::next(it).base());
      if (start > blockStart)
        free[blockStart] = start - blockStart;
      if (start + bytes < end)
        free[start + bytes] = end - (start + bytes);
      return start;
    }
    return std::nullopt;
  }
  /// First fit from the lowest address (the smallest footprint).
  std::optional<int64_t> allocateLowest(int64_t bytes, int64_t alignment) {
    cursor = 0;
    return allocate(bytes, alignment);
  }
  /// Takes [start, start + bytes) out of the free space; false if any of it
  /// is already taken.
  bool reserve(int64_t start, int64_t bytes) {
    auto it = free.upper_bound(start);
    if (it == free.begin())
      return false;
    --it;
    int64_t blockStart = it->first, blockEnd = it->first + it->second;
    if (start + bytes > blockEnd)
      return false;
    free.erase(it);
    if (start > blockStart)
      free[blockStart] = start - blockStart;
    if (start + bytes < blockEnd)
      free[start + bytes] = blockEnd - (start + bytes);
    return true;
  }
  void release(int64_t start, int64_t bytes) {
    auto [it, inserted] = free.emplace(start, bytes);
    // Merge with the following and the preceding block.
    auto next = std::next(it);
    if (next != free.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free.erase(next);
    }
    if (it != free.begin()) {
      auto previous = std::prev(it);
      if (previous->first + previous->second == it->first) {
        previous->second += it->second;
        free.erase(it);
      }
    }
  }
  int64_t used(int64_t capacity) const {
    int64_t available = 0;
    for (auto &[start, size] : free)
      available += size;
    return capacity - available;
  }

private:
  std::map<int64_t, int64_t> free; ///< start -> size
  int64_t cursor = 0;
};

/// One instruction's use of an allocation (directly or through a view).
struct Use {
  int64_t position;
  Operation *op;
};

/// The first of `uses` (in program order) at or after `position`.
template <typename Uses> auto firstUseFrom(Uses &uses, int64_t position) {
  return llvm::lower_bound(uses, position, [](const Use &use, int64_t at) {
    return use.position < at;
  });
}

/// A live tile that may be spilled to make room.
struct SpillCandidate {
  AllocOp alloc;
  int64_t nextUse;
  bool holdsData; ///< used before: storing and reloading it copies data
};

/// Places a kernel's SBUF and PSUM tiles in one sweep over the program.
/// When an SBUF tile does not fit, live tiles are spilled: each is stored to
/// an HBM scratch tensor just before the allocation that needs its space
/// and reloaded into a new tile just before its next use, which later uses
/// then read. Victims are those needed furthest in the future (Belady),
/// tiles that hold no data yet first (they move for free).
class TileAllocator {
public:
  TileAllocator(func::FuncOp kernel, const trnrt::Target &target,
                int64_t sbufCapacity)
      : kernel(kernel), target(target), body(kernel.getBody().front()),
        sbufCapacity(sbufCapacity), sbuf(sbufCapacity),
        psumBankBusy(target.psumBanks, false) {}

  LogicalResult run();
  int64_t spilledTiles = 0, spilledBytes = 0;
  /// Whether spilling changed the program (then positions are stale).
  bool changed = false;
  /// Position of every op before any change, and the last op using each
  /// HBM tensor (through views too): the scratch placement's liveness.
  llvm::DenseMap<Operation *, int64_t> index;
  llvm::DenseMap<Value, int64_t> hbmLastUse;

private:
  /// Bytes per partition of the SBUF tiles `op` touches.
  static int64_t tileBytesOf(Operation *op) {
    llvm::SmallPtrSet<Operation *, 4> seen;
    int64_t total = 0;
    for (Value operand : op->getOperands())
      if (auto alloc = rootOf(operand).getDefiningOp<AllocOp>())
        if (alloc.getType().getMemory() == MemorySpace::sbuf &&
            seen.insert(alloc).second)
          total += alloc.getType().getFreeBytes();
    return total;
  }
  int64_t lastUse(AllocOp alloc, int64_t here) {
    const SmallVector<Use> &list = uses[alloc.getResult()];
    return list.empty() ? here : std::max(list.back().position, here);
  }
  LogicalResult place(AllocOp alloc, int64_t here);
  void release(AllocOp alloc);
  std::optional<int64_t> placeSbuf(RangeAllocator &space, int64_t bytes) {
    return bytes >= kLargeTileBytes ? space.allocateHigh(bytes, kSbufAlignment)
                                    : space.allocate(bytes, kSbufAlignment);
  }
  /// Spills live tiles until `alloc` fits; its offset, or nullopt (and no
  /// change) when spilling every candidate would not make room.
  std::optional<int64_t> spillFor(AllocOp alloc, int64_t here,
                                  bool relocateNeeded);
  /// The best window of `bytes` that only free space and `candidates`
  /// cover, reserved, with the candidates in it appended to `victims`.
  std::optional<int64_t> spillWindow(ArrayRef<SpillCandidate> candidates,
                                     int64_t bytes,
                                     SmallVectorImpl<SpillCandidate> &victims);
  /// Moves `victim`'s uses from position `here` on to a new tile (stored
  /// before `insertionPoint` and reloaded before its next use if it holds
  /// data).
  void spill(AllocOp victim, int64_t here, Operation *insertionPoint);
  /// `value` (the victim or a view of it) rebuilt on `fresh` before `user`.
  Value remap(Value value, Operation *user, OpBuilder &builder,
              llvm::DenseMap<Value, Value> &remapped);
  /// Copies between a tile and its spill tensor, in chunks within the
  /// 16-bit access-pattern sizes.
  SmallVector<Operation *> copy(OpBuilder &builder, Location loc, Value hbm,
                                Value tile, bool store);

  func::FuncOp kernel;
  const trnrt::Target &target;
  Block &body;
  int64_t sbufCapacity;
  RangeAllocator sbuf;
  std::vector<bool> psumBankBusy;
  unsigned nextBank = 0;
  int64_t nextLoadQueue = 0, nextStoreQueue = 0;
  llvm::DenseMap<Value, SmallVector<Use>> uses;
  llvm::DenseSet<Operation *> preplaced;
  /// Positions where tiles the next instruction needs were moved.
  llvm::DenseSet<int64_t> relocatedAt;
  /// Live allocations ordered by last use, to free them as the sweep passes.
  std::multimap<int64_t, AllocOp> live;
  /// Views of spilled tiles, and tiles moved before holding data, that may
  /// have lost their last user (erased after the sweep, so that no new op
  /// reuses a pointer the maps above still hold).
  llvm::SetVector<Operation *> orphanCandidates;
};

/// Spill copies move at most this many elements per partition each: the
/// access-pattern sizes are 16-bit (a tile's free elements may be more).
constexpr int64_t kSpillChunkElements = 65535;

} // namespace

LogicalResult TileAllocator::run() {
  int64_t position = 0;
  for (Operation &op : body) {
    index[&op] = position;
    if (auto alloc = dyn_cast<AllocOp>(op);
        alloc && alloc.getStartPartition() && alloc.getByteOffset())
      preplaced.insert(alloc);
    // Views only compute addresses: a tile is live where instructions touch
    // it. (HBM scratch, placed later, counts views as uses too.)
    bool instruction = !isa<ViewOp, HbmReshapeOp>(op);
    for (Value operand : op.getOperands()) {
      Value root = rootOf(operand);
      if (isa<HbmType>(root.getType())) {
        hbmLastUse[root] = position;
        continue;
      }
      if (!instruction)
        continue;
      SmallVector<Use> &list = uses[root];
      if (list.empty() || list.back().op != &op)
        list.push_back({position, &op});
    }
    ++position;
  }

  int64_t here = 0;
  for (Operation &op : body) {
    // Ops the spiller inserted ahead of the sweep (views) have no position.
    if (auto found = index.find(&op); found != index.end())
      here = found->second;
    while (!live.empty() && live.begin()->first < here) {
      release(live.begin()->second);
      live.erase(live.begin());
    }
    if (auto alloc = dyn_cast<AllocOp>(op))
      if (failed(place(alloc, here)))
        return failure();
    // A callee (nc.call) has SBUF and PSUM to itself.
    if (isa<CallOp>(op) && !live.empty())
      return op.emitError("internal error: a tile is live across nc.call ")
             << cast<CallOp>(op).getCallee()
             << " (a call is a barrier: the caller keeps nothing on chip)";
  }

  // Drop the views that spilling left without users (innermost first).
  while (!orphanCandidates.empty()) {
    Operation *op = orphanCandidates.pop_back_val();
    if (!op->use_empty())
      continue;
    if (auto view = dyn_cast<ViewOp>(op))
      if (Operation *parent = view.getSource().getDefiningOp())
        orphanCandidates.insert(parent);
    op->erase();
  }
  return success();
}

void TileAllocator::release(AllocOp alloc) {
  auto type = alloc.getType();
  int64_t offset = *alloc.getByteOffset();
  if (type.getMemory() == MemorySpace::psum)
    psumBankBusy[offset / target.psumBankBytes] = false;
  else
    sbuf.release(offset, type.getFreeBytes());
}

LogicalResult TileAllocator::place(AllocOp alloc, int64_t here) {
  OpBuilder builder(kernel.getContext());
  TileType type = alloc.getType();
  // A tile nobody uses still gets an address, live at its definition.
  int64_t end = lastUse(alloc, here);
  if (preplaced.contains(alloc)) {
    // Pre-placed: reserve what it covers so later tiles avoid it.
    bool taken;
    if (type.getMemory() == MemorySpace::psum) {
      auto bank = *alloc.getByteOffset() / target.psumBankBytes;
      taken = psumBankBusy[bank];
      psumBankBusy[bank] = true;
    } else {
      taken = !sbuf.reserve(*alloc.getByteOffset(), type.getFreeBytes());
    }
    if (taken)
      return alloc.emitError("its fixed address overlaps a tile that is live "
                             "at the same time");
    live.emplace(end, alloc);
    return success();
  }
  int64_t offset = 0;
  if (type.getMemory() == MemorySpace::psum) {
    // Round robin over the banks, for the same reason as next fit.
    auto bank = psumBankBusy.end();
    for (unsigned step = 0; step < psumBankBusy.size(); ++step) {
      unsigned candidate = (nextBank + step) % psumBankBusy.size();
      if (!psumBankBusy[candidate]) {
        bank = psumBankBusy.begin() + candidate;
        nextBank = (candidate + 1) % psumBankBusy.size();
        break;
      }
    }
    if (bank == psumBankBusy.end())
      return alloc.emitError()
             << "all " << target.psumBanks
             << " PSUM banks hold live tiles; the kernel needs fewer "
                "accumulation groups in flight";
    *bank = true;
    offset = (bank - psumBankBusy.begin()) * target.psumBankBytes;
  } else {
    int64_t bytes = type.getFreeBytes();
    std::optional<int64_t> placed = placeSbuf(sbuf, bytes);
    if (!placed)
      placed = spillFor(alloc, here, /*relocateNeeded=*/false);
    // Allocated ahead of its first use (where it holds no data yet): move it
    // there and decide then, when more tiles may be dead.
    const SmallVector<Use> &own = uses[alloc.getResult()];
    if (!placed && !own.empty() && own.front().position > here) {
      spill(alloc, here, alloc);
      return success();
    }
    // Last, move tiles the first user also reads, when the tiles that stay
    // fragment SBUF: they are reloaded elsewhere before it. That can only
    // help when the user's tiles fit in SBUF together, and is tried once per
    // position (a reload placed here must not move the tiles again).
    int64_t userBytes = own.empty() ? bytes : tileBytesOf(own.front().op);
    if (!placed && userBytes <= sbufCapacity && relocatedAt.insert(here).second)
      placed = spillFor(alloc, here, /*relocateNeeded=*/true);
    if (!placed && userBytes > sbufCapacity)
      return alloc.emitError()
             << "SBUF is full: the instruction that first uses this tile "
                "needs "
             << userBytes << " bytes per partition of tiles, more than the "
             << sbufCapacity << " it has (the kernel must use smaller tiles)";
    if (!placed)
      return alloc.emitError()
             << "SBUF is full: " << bytes
             << " more bytes per partition do not fit next to the "
             << sbuf.used(sbufCapacity) << " in use (of " << sbufCapacity
             << "), and spilling or moving the other tiles would not make "
                "room";
    offset = *placed;
  }
  alloc.setStartPartitionAttr(builder.getI64IntegerAttr(0));
  alloc.setByteOffsetAttr(builder.getI64IntegerAttr(offset));
  live.emplace(end, alloc);
  return success();
}

std::optional<int64_t> TileAllocator::spillFor(AllocOp alloc, int64_t here,
                                               bool relocateNeeded) {
  const SmallVector<Use> &own = uses[alloc.getResult()];
  int64_t neededAt = own.empty() ? here : own.front().position;
  // Tiles that can move: in SBUF, not at a fixed address. Moving a tile
  // needed before `alloc`'s first use (or by it) only helps when the tiles
  // that stay fragment SBUF, so such tiles are candidates only with
  // `relocateNeeded`; their reload then needs room of its own.
  SmallVector<SpillCandidate> candidates;
  for (auto &[end, other] : live) {
    if (other.getType().getMemory() != MemorySpace::sbuf ||
        preplaced.contains(other))
      continue;
    const SmallVector<Use> &list = uses[other.getResult()];
    auto next = firstUseFrom(list, here);
    if (next == list.end() || (!relocateNeeded && next->position <= neededAt))
      continue;
    // Ops the spiller inserted share their position with the instruction
    // they precede: a use at this position may already lie behind `alloc`.
    if (next->position == here && next->op->isBeforeInBlock(alloc))
      continue;
    candidates.push_back({other, next->position, next != list.begin()});
  }
  int64_t bytes = alloc.getType().getFreeBytes();
  SmallVector<SpillCandidate> victims;
  std::optional<int64_t> offset;
  if (!relocateNeeded) {
    // Belady: the tiles needed furthest ahead go first (tiles holding no
    // data before all: they move for free), until the space they free
    // makes room.
    llvm::stable_sort(candidates,
                      [](const SpillCandidate &a, const SpillCandidate &b) {
                        if (a.holdsData != b.holdsData)
                          return !a.holdsData;
                        return a.nextUse > b.nextUse;
                      });
    RangeAllocator trial = sbuf;
    for (const SpillCandidate &candidate : candidates) {
      victims.push_back(candidate);
      AllocOp victim = candidate.alloc;
      trial.release(*victim.getByteOffset(), victim.getType().getFreeBytes());
      if ((offset = placeSbuf(trial, bytes)))
        break;
    }
    if (offset)
      sbuf = trial;
  }
  if (!offset) {
    // The tiles that stay split the space the candidates free into holes
    // too small: take a window of SBUF that only free space and candidates
    // cover, the one whose nearest reload is furthest away, then the one
    // that moves the fewest bytes.
    victims.clear();
    offset = spillWindow(candidates, bytes, victims);
  }
  if (!offset)
    return std::nullopt;
  for (const SpillCandidate &candidate : victims) {
    int64_t end = lastUse(candidate.alloc, here);
    auto [first, last] = live.equal_range(end);
    for (auto it = first; it != last; ++it)
      if (it->second == candidate.alloc) {
        live.erase(it);
        break;
      }
    spill(candidate.alloc, here, alloc);
  }
  return offset;
}

std::optional<int64_t>
TileAllocator::spillWindow(ArrayRef<SpillCandidate> candidates, int64_t bytes,
                           SmallVectorImpl<SpillCandidate> &victims) {
  llvm::DenseMap<Operation *, const SpillCandidate *> byOp;
  for (const SpillCandidate &candidate : candidates)
    byOp[candidate.alloc] = &candidate;
  struct Occupied {
    int64_t start, end;
    const SpillCandidate *candidate; ///< null: must stay
  };
  SmallVector<Occupied> occupied;
  SmallVector<int64_t> starts{0, (sbufCapacity - bytes) / kSbufAlignment *
                                     kSbufAlignment};
  for (auto &[end, other] : live) {
    if (other.getType().getMemory() != MemorySpace::sbuf)
      continue;
    int64_t start = *other.getByteOffset();
    occupied.push_back(
        {start, start + other.getType().getFreeBytes(), byOp.lookup(other)});
    starts.push_back(start);
    starts.push_back(occupied.back().end);
  }
  std::optional<int64_t> best;
  int64_t bestNearest = -1, bestMoved = 0;
  for (int64_t start : starts) {
    start = (start + kSbufAlignment - 1) / kSbufAlignment * kSbufAlignment;
    if (start < 0 || start + bytes > sbufCapacity)
      continue;
    int64_t nearest = std::numeric_limits<int64_t>::max(), moved = 0;
    bool possible = true;
    for (const Occupied &tile : occupied) {
      if (tile.end <= start || start + bytes <= tile.start)
        continue;
      if (!tile.candidate) {
        possible = false;
        break;
      }
      if (tile.candidate->holdsData) {
        nearest = std::min(nearest, tile.candidate->nextUse);
        moved += tile.end - tile.start;
      }
    }
    if (possible && (nearest > bestNearest ||
                     (nearest == bestNearest && moved < bestMoved))) {
      best = start;
      bestNearest = nearest;
      bestMoved = moved;
    }
  }
  if (!best)
    return std::nullopt;
  RangeAllocator windowed = sbuf;
  for (const Occupied &tile : occupied)
    if (tile.end > *best && *best + bytes > tile.start) {
      victims.push_back(*tile.candidate);
      windowed.release(tile.start, tile.end - tile.start);
    }
  if (!windowed.reserve(*best, bytes)) {
    victims.clear(); // not expected: only free space and victims remain
    return std::nullopt;
  }
  sbuf = windowed;
  return best;
}

void TileAllocator::spill(AllocOp victim, int64_t here,
                          Operation *insertionPoint) {
  changed = true;
  Value old = victim.getResult();
  TileType type = victim.getType();
  SmallVector<Use> &list = uses[old];
  auto next = firstUseFrom(list, here);
  bool holdsData = next != list.begin();
  SmallVector<Use> moved(next, list.end());
  list.erase(next, list.end());
  Operation *nextUser = moved.front().op;
  int64_t nextPosition = moved.front().position;

  OpBuilder builder(kernel.getContext());
  Location loc = victim.getLoc();
  Value hbm;
  if (!holdsData)
    orphanCandidates.insert(victim);
  if (holdsData) {
    builder.setInsertionPoint(insertionPoint);
    auto hbmType = HbmType::get(kernel.getContext(),
                                {type.getPartitions(), type.getFreeElements()},
                                type.getElementType());
    hbm = builder.create<HbmAllocOp>(
        loc, hbmType,
        builder.getStringAttr(std::string(trnrt::kSpillTensorPrefix) +
                              std::to_string(spilledTiles)),
        IntegerAttr());
    copy(builder, loc, hbm, old, /*store=*/true);
    ++spilledTiles;
    spilledBytes += hbmBytes(hbmType);
  }

  builder.setInsertionPoint(nextUser);
  auto fresh = builder.create<AllocOp>(loc, type, IntegerAttr(), IntegerAttr());
  index[fresh] = nextPosition;
  SmallVector<Use> freshUses;
  if (holdsData)
    for (Operation *load : copy(builder, loc, hbm, fresh, /*store=*/false)) {
      index[load] = nextPosition;
      freshUses.push_back({nextPosition, load});
    }
  llvm::DenseMap<Value, Value> remapped{{old, fresh.getResult()}};
  for (const Use &use : moved) {
    for (OpOperand &operand : use.op->getOpOperands())
      if (rootOf(operand.get()) == old)
        operand.set(remap(operand.get(), use.op, builder, remapped));
    freshUses.push_back(use);
  }
  uses[fresh.getResult()] = std::move(freshUses);
}

Value TileAllocator::remap(Value value, Operation *user, OpBuilder &builder,
                           llvm::DenseMap<Value, Value> &remapped) {
  if (Value done = remapped.lookup(value))
    return done;
  auto view = value.getDefiningOp<ViewOp>();
  Value source = remap(view.getSource(), user, builder, remapped);
  builder.setInsertionPoint(user);
  auto clone = cast<ViewOp>(builder.clone(*view));
  clone.getSourceMutable().assign(source);
  orphanCandidates.insert(view);
  remapped[value] = clone.getResult();
  return clone.getResult();
}

SmallVector<Operation *> TileAllocator::copy(OpBuilder &builder, Location loc,
                                             Value hbm, Value tile,
                                             bool store) {
  auto type = cast<TileType>(tile.getType());
  int64_t partitions = type.getPartitions();
  int64_t elements = type.getFreeElements();
  SmallVector<Operation *> copies;
  for (int64_t c0 = 0; c0 < elements; c0 += kSpillChunkElements) {
    int64_t width = std::min(kSpillChunkElements, elements - c0);
    auto hbmView = builder.create<ViewOp>(
        loc,
        TileType::get(builder.getContext(), MemorySpace::hbm,
                      {partitions, width}, type.getElementType()),
        hbm, builder.getI64IntegerAttr(0),
        builder.getI64IntegerAttr(partitions * c0),
        builder.getI64IntegerAttr(width), builder.getDenseI64ArrayAttr({1}));
    Value window = tile;
    if (type.getFreeShape().size() != 1 || width != elements)
      window = builder.create<ViewOp>(
          loc,
          TileType::get(builder.getContext(), type.getMemory(),
                        {partitions, width}, type.getElementType()),
          tile, builder.getI64IntegerAttr(0), builder.getI64IntegerAttr(c0),
          builder.getI64IntegerAttr(0), builder.getDenseI64ArrayAttr({1}));
    Value dst = store ? Value(hbmView) : window;
    Value src = store ? window : Value(hbmView);
    // Rotate over each direction's queues, like the lowering's transfers.
    int64_t queue = store ? kLoadQueues + nextStoreQueue++ % kStoreQueues
                          : nextLoadQueue++ % kLoadQueues;
    copies.push_back(builder.create<DmaCopyOp>(
        loc, dst, src, builder.getI64IntegerAttr(queue)));
  }
  return copies;
}

namespace {
struct NCAllocatePass : nc::impl::NCAllocateBase<NCAllocatePass> {
  using NCAllocateBase::NCAllocateBase;
  void runOnOperation() override;
};
} // namespace

/// The source and destination of a collective that runs on the Sync stream
/// while the other engines go on; nulls for other ops.
static std::pair<Value, Value> collectiveSourceAndDestination(Operation &op) {
  return llvm::TypeSwitch<Operation *, std::pair<Value, Value>>(&op)
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllSliceOp, AllToAllOp,
            CollectivePermuteOp>([](auto collective) {
        return std::make_pair(collective.getSrc(), collective.getDst());
      })
      .Default([](Operation *) { return std::make_pair(Value(), Value()); });
}

/// A collective reads its source while the compute engines go on with the
/// ops after it; only the first reader of its result waits for it. Its
/// source stays live until then, so that no tensor written meanwhile (the
/// next piece of a matmul whose result goes out piece by piece) takes the
/// source's bytes and waits for the transfer to end.
static void
keepCollectiveSourcesLive(Block &body,
                          const llvm::DenseMap<Operation *, int64_t> &index,
                          llvm::DenseMap<Value, int64_t> &lastUse) {
  int64_t endOfBody = index.lookup(&body.back());
  for (Operation &op : body) {
    auto [src, dst] = collectiveSourceAndDestination(op);
    if (!src || !dst)
      continue;
    Value result = rootOf(dst);
    int64_t firstRead = endOfBody;
    for (Operation *next = op.getNextNode(); next; next = next->getNextNode())
      if (llvm::any_of(next->getOperands(), [&](Value operand) {
            return rootOf(operand) == result;
          })) {
        firstRead = index.lookup(next);
        break;
      }
    int64_t &last = lastUse[rootOf(src)];
    last = std::max(last, firstRead);
  }
}

/// HBM scratch tensors share the scratch region by liveness (from their
/// nc.hbm_alloc to their last use), first fit from offset 0; the exporter
/// places the region after the arguments and constants. Spill tensors get a
/// part of the region of their own, after the intermediates' high-water
/// mark: the simulator's profile tells spills from intermediates by address.
static LogicalResult placeScratch(Block &body,
                                  llvm::DenseMap<Operation *, int64_t> &index,
                                  llvm::DenseMap<Value, int64_t> &lastUse,
                                  bool renumber) {
  if (renumber) {
    index.clear();
    lastUse.clear();
    int64_t position = 0;
    for (Operation &op : body) {
      index[&op] = position;
      for (Value operand : op.getOperands())
        lastUse[rootOf(operand)] = position;
      ++position;
    }
  }
  keepCollectiveSourcesLive(body, index, lastUse);
  bool anySpill = false;
  for (auto alloc : body.getOps<HbmAllocOp>())
    anySpill |= alloc.getName().starts_with(trnrt::kSpillTensorPrefix);
  OpBuilder builder(body.getParentOp()->getContext());
  int64_t highWater = 0;
  for (bool spills : {false, true}) {
    if (spills && !anySpill)
      break;
    int64_t base = spills ? (highWater + 63) / 64 * 64 : 0;
    RangeAllocator scratch(std::numeric_limits<int64_t>::max() / 2);
    std::multimap<int64_t, std::pair<int64_t, int64_t>> liveScratch;
    for (Operation &op : body) {
      int64_t here = index[&op];
      while (!liveScratch.empty() && liveScratch.begin()->first < here) {
        auto [offset, bytes] = liveScratch.begin()->second;
        scratch.release(offset, bytes);
        liveScratch.erase(liveScratch.begin());
      }
      auto alloc = dyn_cast<HbmAllocOp>(op);
      if (!alloc ||
          alloc.getName().starts_with(trnrt::kSpillTensorPrefix) != spills)
        continue;
      int64_t bytes = std::max<int64_t>(1, hbmBytes(alloc.getType()));
      int64_t end = std::max(lastUse.lookup(alloc.getResult()), here);
      if (std::optional<int64_t> fixed = alloc.getByteOffset()) {
        if (*fixed < base || !scratch.reserve(*fixed - base, bytes))
          return alloc.emitError("its fixed scratch offset overlaps a scratch "
                                 "tensor that is live at the same time");
        liveScratch.emplace(end, std::make_pair(*fixed - base, bytes));
        highWater = std::max(highWater, *fixed + bytes);
        continue;
      }
      std::optional<int64_t> offset = scratch.allocateLowest(bytes, 64);
      if (!offset)
        return alloc.emitError("HBM scratch address space exhausted");
      alloc.setByteOffsetAttr(builder.getI64IntegerAttr(base + *offset));
      liveScratch.emplace(end, std::make_pair(*offset, bytes));
      highWater = std::max(highWater, base + *offset + bytes);
    }
  }
  return success();
}

void NCAllocatePass::runOnOperation() {
  func::FuncOp kernel = getOperation();
  if (kernel.isExternal())
    return;
  const trnrt::Target *target = getTarget(kernel);
  if (!target)
    return signalPassFailure();
  if (!kernel.getBody().hasOneBlock()) {
    kernel.emitError("nc-allocate expects a kernel with one block");
    return signalPassFailure();
  }
  int64_t capacity = target->sbufUsableBytesPerPartition;
  if (sbufBytes != 0) {
    if (sbufBytes < 0 || sbufBytes > capacity) {
      // At the kernel's location, without the kernel printed after it.
      mlir::emitError(kernel.getLoc())
          << "nc-allocate sbuf-bytes=" << static_cast<int64_t>(sbufBytes)
          << " is outside [1, " << capacity << "] (" << target->name
          << "'s usable SBUF per partition)";
      return signalPassFailure();
    }
    capacity = static_cast<int64_t>(sbufBytes);
  }
  TileAllocator tiles(kernel, *target, capacity);
  if (failed(tiles.run()))
    return signalPassFailure();
  // Spilling adds scratch tensors: place them with the lowering's.
  if (failed(placeScratch(kernel.getBody().front(), tiles.index,
                          tiles.hbmLastUse, /*renumber=*/tiles.changed)))
    return signalPassFailure();
  if (tiles.spilledTiles > 0) {
    OpBuilder builder(kernel.getContext());
    kernel->setAttr(NCDialect::getSpilledTilesAttrName(),
                    builder.getI64IntegerAttr(tiles.spilledTiles));
    kernel->setAttr(NCDialect::getSpilledBytesAttrName(),
                    builder.getI64IntegerAttr(tiles.spilledBytes));
  }
}
