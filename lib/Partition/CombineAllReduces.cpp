//===- CombineAllReduces.cpp - bucket an update's gradient all-reduces ----===//
//
// dist-combine-all-reduces: in a pipeline's update fragments, the gradients'
// data-parallel all-reduces (one per tensor) become a few over buckets of
// concatenated gradients, as DDP and Megatron-LM bucket them
// (docs/partitioning.md, "Bucketed gradient all-reduces").
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnDialect.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Partition/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::trn::partition {
#define GEN_PASS_DEF_DISTCOMBINEALLREDUCES
#include "trn/Partition/Passes.h.inc"
} // namespace mlir::trn::partition

using namespace mlir;
using namespace mlir::trn;

namespace {

/// Outside an update, where only scalar all-reduces are combined, the most
/// ops a bucket may move up to its all-reduce: enough for a loss and its
/// label count (a cross-entropy's reductions), not for a layer.
constexpr int64_t kMaxMovedOutsideUpdate = 64;

/// All-reduces that can be one: the same group, reduction and element type.
bool combinable(dist::AllReduceOp a, dist::AllReduceOp b) {
  return a.getMeshAttr() == b.getMeshAttr() &&
         a.getAxesAttr() == b.getAxesAttr() &&
         a.getReductionAttr() == b.getReductionAttr() &&
         a.getType().getElementType() == b.getType().getElementType();
}

/// The ancestor of `op` in `block` (its user may sit in a nested region).
Operation *inBlock(Block &block, Operation *op) {
  return block.findAncestorOpInBlock(*op);
}

class BucketCombiner {
public:
  /// `maxMoved`: how many ops may move up to a bucket's all-reduce (none
  /// when negative: an update, whose all-reduces are all ready at once).
  BucketCombiner(Block &block, int64_t bucketElements, int64_t maxMoved)
      : block(block), bucketElements(bucketElements), maxMoved(maxMoved) {}

  /// Combines one bucket; false when no two all-reduces could be.
  bool combineOne();

private:
  /// The ops of `block` that `value` is computed from; false if one of
  /// them may not move (it has effects or regions).
  bool inputSlice(Value value, llvm::SetVector<Operation *> &slice) const;
  /// Adds what depends on `op` to `dependents`.
  void addDependents(Operation *op);
  /// The first op of `block` that uses `op`'s result (else the terminator).
  Operation *firstUse(Operation *op) const;
  /// The ops of `slice` after `point`: those that move up to it.
  SmallVector<Operation *> after(const llvm::SetVector<Operation *> &slice,
                                 Operation *point) const;
  void rewrite(ArrayRef<dist::AllReduceOp> bucket,
               const llvm::SetVector<Operation *> &slice, Operation *point);

  Block &block;
  int64_t bucketElements;
  int64_t maxMoved;
  llvm::DenseSet<Operation *> dependents;
  /// The all-reduces made here: each is a bucket already.
  llvm::DenseSet<Operation *> combined;
};

bool BucketCombiner::inputSlice(Value value,
                                llvm::SetVector<Operation *> &slice) const {
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &block || slice.contains(def))
      continue;
    if (def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return false;
    slice.insert(def);
    llvm::append_range(worklist, def->getOperands());
  }
  return true;
}

void BucketCombiner::addDependents(Operation *op) {
  SmallVector<Operation *> worklist{op};
  while (!worklist.empty()) {
    Operation *next = worklist.pop_back_val();
    if (!dependents.insert(next).second)
      continue;
    for (Operation *user : next->getUsers())
      if (Operation *ancestor = inBlock(block, user))
        worklist.push_back(ancestor);
  }
}

Operation *BucketCombiner::firstUse(Operation *op) const {
  Operation *first = block.getTerminator();
  for (Operation *user : op->getUsers())
    if (Operation *ancestor = inBlock(block, user))
      if (ancestor->isBeforeInBlock(first))
        first = ancestor;
  return first;
}

SmallVector<Operation *>
BucketCombiner::after(const llvm::SetVector<Operation *> &slice,
                      Operation *point) const {
  SmallVector<Operation *> late;
  for (Operation *op : slice)
    if (point->isBeforeInBlock(op))
      late.push_back(op);
  llvm::sort(late,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return late;
}

bool BucketCombiner::combineOne() {
  SmallVector<dist::AllReduceOp> candidates;
  for (auto op : block.getOps<dist::AllReduceOp>()) {
    // Outside an update only scalars (a loss, a label count): a layer's
    // gradient all-reduces combined across layers would make the layers
    // differ, and trn-outline-layers compile each of them.
    if (combined.contains(op) || (maxMoved >= 0 && op.getType().getRank() != 0))
      continue;
    candidates.push_back(op);
  }
  for (size_t first = 0; first < candidates.size(); ++first) {
    dist::AllReduceOp lead = candidates[first];
    int64_t elements = lead.getType().getNumElements();
    llvm::SetVector<Operation *> slice;
    if (elements >= bucketElements || !inputSlice(lead.getInput(), slice))
      continue;
    dependents.clear();
    addDependents(lead);
    Operation *point = firstUse(lead);
    SmallVector<dist::AllReduceOp> bucket{lead};
    for (size_t i = first + 1; i < candidates.size(); ++i) {
      dist::AllReduceOp next = candidates[i];
      int64_t size = next.getType().getNumElements();
      if (!combinable(lead, next) || elements + size > bucketElements ||
          dependents.contains(next))
        continue;
      llvm::SetVector<Operation *> nextSlice;
      if (!inputSlice(next.getInput(), nextSlice) ||
          llvm::any_of(nextSlice,
                       [&](Operation *op) { return dependents.contains(op); }))
        continue;
      // Outside an update, a bucket must not pull much of the program up
      // to it (a layer's work ahead of another's collective).
      Operation *nextPoint = firstUse(next);
      Operation *joinedPoint =
          nextPoint->isBeforeInBlock(point) ? nextPoint : point;
      llvm::SetVector<Operation *> joined = slice;
      joined.insert(nextSlice.begin(), nextSlice.end());
      if (maxMoved >= 0 &&
          int64_t(after(joined, joinedPoint).size()) > maxMoved)
        continue;
      slice = std::move(joined);
      point = joinedPoint;
      bucket.push_back(next);
      elements += size;
      addDependents(next);
    }
    if (bucket.size() < 2)
      continue;
    rewrite(bucket, slice, point);
    return true;
  }
  return false;
}

void BucketCombiner::rewrite(ArrayRef<dist::AllReduceOp> bucket,
                             const llvm::SetVector<Operation *> &slice,
                             Operation *point) {
  // The bucket's all-reduce goes before the first use of any member's
  // result; what the members' inputs are computed from moves up to it.
  for (Operation *op : after(slice, point))
    op->moveBefore(point);

  OpBuilder builder(point);
  dist::AllReduceOp lead = bucket.front();
  Location loc = builder.getFusedLoc(llvm::to_vector(llvm::map_range(
      bucket, [](dist::AllReduceOp op) { return op.getLoc(); })));
  Type element = lead.getType().getElementType();
  // Rank-1 members need no reshape.
  auto reshaped = [&](Location loc, Value value, Type type) -> Value {
    return value.getType() == type
               ? value
               : builder.create<ReshapeOp>(loc, type, value).getResult();
  };
  SmallVector<Value> flat;
  for (dist::AllReduceOp member : bucket) {
    int64_t size = member.getType().getNumElements();
    flat.push_back(reshaped(member.getLoc(), member.getInput(),
                            RankedTensorType::get({size}, element)));
  }
  Value joined = builder.create<ConcatenateOp>(loc, flat, /*dim=*/0);
  auto reducedOp = builder.create<dist::AllReduceOp>(
      loc, joined.getType(), joined, lead.getMeshAttr(), lead.getAxesAttr(),
      lead.getReductionAttr());
  combined.insert(reducedOp);
  Value reduced = reducedOp.getResult();
  int64_t offset = 0;
  for (dist::AllReduceOp member : bucket) {
    int64_t size = member.getType().getNumElements();
    Value part = builder.create<SliceOp>(
        member.getLoc(), reduced, ArrayRef<int64_t>{offset},
        ArrayRef<int64_t>{offset + size}, ArrayRef<int64_t>{1});
    member.getResult().replaceAllUsesWith(
        reshaped(member.getLoc(), part, member.getType()));
    member.erase();
    offset += size;
  }
}

struct DistCombineAllReduces
    : public trn::partition::impl::DistCombineAllReducesBase<
          DistCombineAllReduces> {
  using DistCombineAllReducesBase::DistCombineAllReducesBase;

  void runOnOperation() override {
    if (bucketElements < 1) {
      getOperation().emitError("dist-combine-all-reduces: bucket-elements "
                               "must be positive, not ")
          << int64_t(bucketElements);
      return signalPassFailure();
    }
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      auto phase = function->getAttrOfType<StringAttr>(
          dist::DistDialect::getPhaseAttrName());
      const int64_t maxMoved =
          phase && phase.getValue() == "update" ? -1 : kMaxMovedOutsideUpdate;
      for (Block &block : function.getBody()) {
        BucketCombiner combiner(block, bucketElements, maxMoved);
        while (combiner.combineOne()) {
        }
      }
    }
  }
};

} // namespace
