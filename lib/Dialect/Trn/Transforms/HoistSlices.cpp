//===- HoistSlices.cpp - compute the slices of a value, not the value -----===//
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNHOISTSLICES
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

/// A unit-stride window: [start, limit) per dim.
struct Window {
  SmallVector<int64_t> start, limit;
};

/// The whole of `value`.
Window wholeOf(Value value) {
  ArrayRef<int64_t> shape = shapeOf(value);
  return {SmallVector<int64_t>(shape.size(), 0), SmallVector<int64_t>(shape)};
}

Value sliceOf(OpBuilder &builder, Location loc, Value value,
              const Window &window) {
  if (window.start == wholeOf(value).start &&
      window.limit == wholeOf(value).limit)
    return value;
  SmallVector<int64_t> strides(window.start.size(), 1);
  return builder.create<SliceOp>(loc, value, window.start, window.limit,
                                 strides);
}

/// The window of operand `index` of `op` that `window` of its result reads,
/// or none when `op` is not one the pass splits.
std::optional<Window> operandWindow(Operation *op, unsigned index,
                                    const Window &window) {
  Value operand = op->getOperand(index);
  if (op->hasTrait<OpTrait::Elementwise>()) {
    if (shapeOf(operand) != shapeOf(op->getResult(0)))
      return std::nullopt;
    return window;
  }
  if (auto broadcast = dyn_cast<BroadcastInDimOp>(op)) {
    ArrayRef<int64_t> in = shapeOf(operand);
    Window result = wholeOf(operand);
    for (auto [d, r] : llvm::enumerate(broadcast.getDims()))
      if (in[d] != 1) {
        result.start[d] = window.start[r];
        result.limit[d] = window.limit[r];
      }
    return result;
  }
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    // Result dim i is operand dim perm[i].
    Window result = wholeOf(operand);
    for (auto [i, d] : llvm::enumerate(transpose.getPerm())) {
      result.start[d] = window.start[i];
      result.limit[d] = window.limit[i];
    }
    return result;
  }
  if (auto dot = dyn_cast<DotGeneralOp>(op)) {
    // Result dims: batch dims, then the lhs's free dims, then the rhs's,
    // each in operand order.
    bool isLhs = index == 0;
    ArrayRef<int64_t> batching =
        isLhs ? dot.getLhsBatchingDims() : dot.getRhsBatchingDims();
    Window result = wholeOf(operand);
    for (auto [i, d] : llvm::enumerate(batching)) {
      result.start[d] = window.start[i];
      result.limit[d] = window.limit[i];
    }
    int64_t r = batching.size();
    if (!isLhs)
      r += dot.getFreeDims(/*lhs=*/true).size();
    for (int64_t d : dot.getFreeDims(isLhs)) {
      result.start[d] = window.start[r];
      result.limit[d] = window.limit[r];
      ++r;
    }
    return result;
  }
  return std::nullopt;
}

bool isSplittable(Operation *op) {
  return op && op->getNumResults() == 1 && op->getNumRegions() == 0 &&
         isa_and_nonnull<TrnDialect>(op->getDialect()) &&
         (op->hasTrait<OpTrait::Elementwise>() ||
          isa<BroadcastInDimOp, DotGeneralOp, TransposeOp>(op));
}

/// Whether `op` is a matmul, or computes from one through elementwise ops:
/// splitting is worth its ops where it ends up splitting a matmul. (Halves
/// of a rotary embedding's gradient, say, stay whole for
/// trn-fuse-elementwise to see the rotation.)
bool computesFromMatmul(Operation *op, int depth = 0) {
  if (isa<DotGeneralOp>(op))
    return true;
  if (depth > 8 || !isSplittable(op) || isa<BroadcastInDimOp>(op))
    return false;
  return llvm::any_of(op->getOperands(), [&](Value operand) {
    Operation *def = operand.getDefiningOp();
    return def && computesFromMatmul(def, depth + 1);
  });
}

/// Whether every user of `value` is a slice that only matmuls read: a
/// transposed weight cut into pieces becomes pieces of the weight, each a
/// block of its rows the matmul reads in place, transposed by its layout.
bool onlyMatmulsReadSlicesOf(Value value) {
  return llvm::all_of(value.getUsers(), [](Operation *user) {
    return isa<SliceOp>(user) &&
           llvm::all_of(user->getUsers(), [](Operation *reader) {
             return isa<DotGeneralOp>(reader);
           });
  });
}

struct HoistSlices : trn::impl::TrnHoistSlicesBase<HoistSlices> {
  void runOnOperation() override {
    // Until nothing changes: a split leaves slices of its operands, whose
    // producers may split in turn (a chain of a few ops: few rounds).
    for (bool changed = true; changed;) {
      changed = false;
      SmallVector<Operation *> candidates;
      getOperation().walk([&](Operation *op) {
        if (isSplittable(op))
          candidates.push_back(op);
      });
      // Last first: a split never erases an op above the one split.
      for (Operation *op : llvm::reverse(candidates))
        changed |= split(op);
    }
  }

  /// Replaces `op`, when only unit-stride slices read its result, by one op
  /// per slice on the matching slices of its operands.
  bool split(Operation *op) {
    Value result = op->getResult(0);
    // A broadcast splits wherever its slices are (a bias's pieces instead
    // of a materialised [tokens, features] window of it).
    if (result.use_empty() ||
        !(computesFromMatmul(op) || isa<BroadcastInDimOp>(op) ||
          (isa<TransposeOp>(op) && onlyMatmulsReadSlicesOf(result))))
      return false;
    SmallVector<SliceOp> slices;
    for (Operation *user : result.getUsers()) {
      auto slice = dyn_cast<SliceOp>(user);
      if (!slice ||
          llvm::any_of(slice.getStrides(), [](int64_t s) { return s != 1; }))
        return false;
      slices.push_back(slice);
    }
    // Every operand window must be known before anything changes.
    for (SliceOp slice : slices) {
      Window window{SmallVector<int64_t>(slice.getStart()),
                    SmallVector<int64_t>(slice.getLimit())};
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (!operandWindow(op, i, window))
          return false;
    }
    for (SliceOp slice : slices) {
      Window window{SmallVector<int64_t>(slice.getStart()),
                    SmallVector<int64_t>(slice.getLimit())};
      OpBuilder builder(slice);
      IRMapping mapping;
      for (unsigned i = 0; i < op->getNumOperands(); ++i) {
        Value operand = op->getOperand(i);
        Value piece = sliceOf(builder, slice.getLoc(), operand,
                              *operandWindow(op, i, window));
        mapping.map(operand, piece);
      }
      Operation *clone = builder.clone(*op, mapping);
      clone->getResult(0).setType(slice.getType());
      slice.replaceAllUsesWith(clone->getResult(0));
      slice->erase();
    }
    op->erase();
    return true;
  }
};

} // namespace
