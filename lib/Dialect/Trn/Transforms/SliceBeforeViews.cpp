//===- SliceBeforeViews.cpp - slices above transposes and reshapes --------===//
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNSLICEBEFOREVIEWS
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

bool unitStrides(SliceOp slice) {
  return llvm::all_of(slice.getStrides(),
                      [](int64_t stride) { return stride == 1; });
}

/// The one dimension `slice` cuts (its others whole), or none.
std::optional<unsigned> cutDimOf(SliceOp slice) {
  ArrayRef<int64_t> in = shapeOf(slice.getOperand());
  std::optional<unsigned> cut;
  for (unsigned d = 0; d < in.size(); ++d) {
    if (slice.getStart()[d] == 0 && slice.getLimit()[d] == in[d])
      continue;
    if (cut)
      return std::nullopt;
    cut = d;
  }
  return cut;
}

/// The slice of `reshape`'s operand that `slice` (of its result) reads: the
/// operand dimension and the range, when it is one contiguous range.
struct OperandRange {
  unsigned dim;
  int64_t start, limit;
};

std::optional<OperandRange> operandRangeOf(SliceOp slice, ReshapeOp reshape) {
  if (!unitStrides(slice))
    return std::nullopt;
  std::optional<unsigned> cut = cutDimOf(slice);
  if (!cut)
    return std::nullopt;
  ArrayRef<int64_t> in = shapeOf(reshape.getOperand());
  ArrayRef<int64_t> out = shapeOf(reshape.getResult());
  if (ShapedType::isDynamicShape(in) || ShapedType::isDynamicShape(out))
    return std::nullopt;
  int64_t outer = ShapedType::getNumElements(out.take_front(*cut));
  int64_t inner = ShapedType::getNumElements(out.drop_front(*cut + 1));
  int64_t size = out[*cut];
  // Operand dimension e with the same elements before it, of which the cut
  // dimension is the major part: in[e] = size * m and the dimensions after
  // e times m are the result's dimensions after the cut one.
  for (unsigned e = 0; e < in.size(); ++e) {
    if (ShapedType::getNumElements(in.take_front(e)) != outer)
      continue;
    if (in[e] % size != 0)
      continue;
    int64_t m = in[e] / size;
    if (ShapedType::getNumElements(in.drop_front(e + 1)) * m != inner)
      continue;
    return OperandRange{e, slice.getStart()[*cut] * m,
                        slice.getLimit()[*cut] * m};
  }
  return std::nullopt;
}

/// slice(reshape(x)) -> reshape(slice(x)), when every user of the reshape
/// is such a slice.
struct SliceBeforeReshape : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto reshape = slice.getOperand().getDefiningOp<ReshapeOp>();
    if (!reshape)
      return failure();
    std::optional<OperandRange> range = operandRangeOf(slice, reshape);
    if (!range)
      return failure();
    for (Operation *user : reshape->getUsers()) {
      auto other = dyn_cast<SliceOp>(user);
      if (!other || !operandRangeOf(other, reshape))
        return failure();
    }
    Value operand = reshape.getOperand();
    ArrayRef<int64_t> in = shapeOf(operand);
    SmallVector<int64_t> start(in.size(), 0), limit(in), strides(in.size(), 1);
    start[range->dim] = range->start;
    limit[range->dim] = range->limit;
    Value cut = rewriter.create<SliceOp>(slice.getLoc(), operand, start, limit,
                                         strides);
    rewriter.replaceOpWithNewOp<ReshapeOp>(slice, slice.getType(), cut);
    return success();
  }
};

/// slice(transpose(x)) -> transpose(slice(x)), when every user of the
/// transpose is a slice.
struct SliceBeforeTranspose : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto transpose = slice.getOperand().getDefiningOp<TransposeOp>();
    if (!transpose || !unitStrides(slice))
      return failure();
    for (Operation *user : transpose->getUsers()) {
      auto other = dyn_cast<SliceOp>(user);
      if (!other || !unitStrides(other))
        return failure();
    }
    ArrayRef<int64_t> perm = transpose.getPerm();
    size_t rank = perm.size();
    SmallVector<int64_t> start(rank), limit(rank), strides(rank, 1);
    for (size_t d = 0; d < rank; ++d) {
      start[perm[d]] = slice.getStart()[d];
      limit[perm[d]] = slice.getLimit()[d];
    }
    Value cut = rewriter.create<SliceOp>(slice.getLoc(), transpose.getOperand(),
                                         start, limit, strides);
    rewriter.replaceOpWithNewOp<TransposeOp>(slice, cut, perm);
    return success();
  }
};

/// A transpose that keeps the non-unit dimensions in order moves no data:
/// a reshape.
struct UnitTransposeToReshape : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> in = shapeOf(transpose.getOperand());
    int64_t previous = -1;
    for (int64_t dim : transpose.getPerm()) {
      if (in[dim] == 1)
        continue;
      if (dim < previous)
        return failure();
      previous = dim;
    }
    rewriter.replaceOpWithNewOp<ReshapeOp>(transpose, transpose.getType(),
                                           transpose.getOperand());
    return success();
  }
};

struct TrnSliceBeforeViewsPass
    : trn::impl::TrnSliceBeforeViewsBase<TrnSliceBeforeViewsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns
        .add<SliceBeforeReshape, SliceBeforeTranspose, UnitTransposeToReshape>(
            &getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
