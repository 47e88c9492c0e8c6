//===- Allocate.cpp - SBUF/PSUM allocation by liveness -------------------===//

#include "trn/Dialect/NC/Transforms/Passes.h"

#include "Footprint.h"

#include "trnrt/Target.h"

#include "mlir/IR/Builders.h"

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

struct NCAllocatePass : nc::impl::NCAllocateBase<NCAllocatePass> {
  void runOnOperation() override;
};

} // namespace

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
  Block &body = kernel.getBody().front();

  // Last use (op index) of every allocation, through its views.
  llvm::DenseMap<Operation *, int64_t> index;
  llvm::DenseMap<Value, int64_t> lastUse;
  int64_t position = 0;
  for (Operation &op : body) {
    index[&op] = position;
    for (Value operand : op.getOperands())
      lastUse[rootOf(operand)] = position;
    ++position;
  }

  // HBM scratch tensors share the scratch region by liveness (from their
  // nc.hbm_alloc to their last use), first fit from offset 0; the exporter
  // places the region after the arguments and constants.
  {
    RangeAllocator scratch(std::numeric_limits<int64_t>::max() / 2);
    std::multimap<int64_t, std::pair<int64_t, int64_t>> liveScratch;
    OpBuilder hbmBuilder(kernel.getContext());
    for (Operation &op : body) {
      int64_t here = index[&op];
      while (!liveScratch.empty() && liveScratch.begin()->first < here) {
        auto [offset, bytes] = liveScratch.begin()->second;
        scratch.release(offset, bytes);
        liveScratch.erase(liveScratch.begin());
      }
      auto alloc = dyn_cast<HbmAllocOp>(op);
      if (!alloc)
        continue;
      int64_t bytes = std::max<int64_t>(1, hbmBytes(alloc.getType()));
      int64_t end = std::max(lastUse.lookup(alloc.getResult()), here);
      if (std::optional<int64_t> fixed = alloc.getByteOffset()) {
        if (!scratch.reserve(*fixed, bytes)) {
          alloc.emitError("its fixed scratch offset overlaps a scratch "
                          "tensor that is live at the same time");
          return signalPassFailure();
        }
        liveScratch.emplace(end, std::make_pair(*fixed, bytes));
        continue;
      }
      std::optional<int64_t> offset = scratch.allocateLowest(bytes, 64);
      if (!offset) {
        alloc.emitError("HBM scratch address space exhausted");
        return signalPassFailure();
      }
      alloc.setByteOffsetAttr(hbmBuilder.getI64IntegerAttr(*offset));
      liveScratch.emplace(end, std::make_pair(*offset, bytes));
    }
  }

  int64_t sbufCapacity = target->sbufUsableBytesPerPartition;
  RangeAllocator sbuf(sbufCapacity);
  std::vector<bool> psumBankBusy(target->psumBanks, false);
  unsigned nextBank = 0;
  // Live allocations ordered by last use, to free them as the sweep passes.
  std::multimap<int64_t, AllocOp> live;
  OpBuilder builder(kernel.getContext());

  auto release = [&](AllocOp alloc) {
    auto type = alloc.getType();
    int64_t offset = *alloc.getByteOffset();
    if (type.getMemory() == MemorySpace::psum)
      psumBankBusy[offset / target->psumBankBytes] = false;
    else
      sbuf.release(offset, type.getFreeBytes());
  };

  for (Operation &op : body) {
    int64_t here = index[&op];
    while (!live.empty() && live.begin()->first < here) {
      release(live.begin()->second);
      live.erase(live.begin());
    }
    auto alloc = dyn_cast<AllocOp>(op);
    if (!alloc)
      continue;
    TileType type = alloc.getType();
    // A tile nobody uses still gets an address, live at its definition.
    int64_t end = lastUse.lookup(alloc.getResult());
    end = std::max(end, here);
    if (alloc.getStartPartition() && alloc.getByteOffset()) {
      // Pre-placed: reserve what it covers so later tiles avoid it.
      bool taken;
      if (type.getMemory() == MemorySpace::psum) {
        auto bank = *alloc.getByteOffset() / target->psumBankBytes;
        taken = psumBankBusy[bank];
        psumBankBusy[bank] = true;
      } else {
        taken = !sbuf.reserve(*alloc.getByteOffset(), type.getFreeBytes());
      }
      if (taken) {
        alloc.emitError("its fixed address overlaps a tile that is live at "
                        "the same time");
        return signalPassFailure();
      }
      live.emplace(end, alloc);
      continue;
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
      if (bank == psumBankBusy.end()) {
        alloc.emitError() << "all " << target->psumBanks
                          << " PSUM banks hold live tiles; the kernel needs "
                             "fewer accumulation groups in flight";
        return signalPassFailure();
      }
      *bank = true;
      offset = (bank - psumBankBusy.begin()) * target->psumBankBytes;
    } else {
      int64_t bytes = type.getFreeBytes();
      std::optional<int64_t> placed =
          bytes >= kLargeTileBytes ? sbuf.allocateHigh(bytes, kSbufAlignment)
                                   : sbuf.allocate(bytes, kSbufAlignment);
      if (!placed) {
        alloc.emitError() << "SBUF is full: " << type.getFreeBytes()
                          << " more bytes per partition do not fit next to the "
                          << sbuf.used(sbufCapacity) << " in use (of "
                          << sbufCapacity << ")";
        return signalPassFailure();
      }
      offset = *placed;
    }
    alloc.setStartPartitionAttr(builder.getI64IntegerAttr(0));
    alloc.setByteOffsetAttr(builder.getI64IntegerAttr(offset));
    live.emplace(end, alloc);
  }
}
