//===- SliceBeforeCompute.cpp - a rank's slice before the work on it ------===//
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNSLICEBEFORECOMPUTE
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

/// `type` with dim `dim` of size `size` (the element type kept).
RankedTensorType withDim(Type type, int64_t dim, int64_t size) {
  auto ranked = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(ranked.getShape());
  shape[dim] = size;
  return RankedTensorType::get(shape, ranked.getElementType());
}

/// The same slice as `slice` (mesh, axes) of `value` along `dim`.
Value sliceLike(PatternRewriter &rewriter, dist::AllSliceOp slice, Value value,
                int64_t dim) {
  int64_t parts = shapeOf(slice.getInput())[slice.getDim()] /
                  shapeOf(slice.getResult())[slice.getDim()];
  return rewriter.create<dist::AllSliceOp>(
      slice.getLoc(),
      withDim(value.getType(), dim, shapeOf(value)[dim] / parts), value,
      slice.getMeshAttr(), slice.getAxesAttr(),
      rewriter.getI64IntegerAttr(dim));
}

/// Where dim `dim` of shape `in` is in shape `out` when a reshape from one
/// to the other keeps it whole (the same size after as many elements): a
/// contiguous slice along it is then one along that dim.
std::optional<int64_t> reshapedDim(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                                   int64_t dim) {
  int64_t before = 1;
  for (int64_t d = 0; d < dim; ++d)
    before *= in[d];
  int64_t outBefore = 1;
  for (int64_t d = 0; d < int64_t(out.size()) && outBefore <= before; ++d) {
    if (outBefore == before && out[d] == in[dim])
      return d;
    outBefore *= out[d];
  }
  return std::nullopt;
}

/// all_slice(all_reduce(x)) over the same axes is reduce_scatter(x): each
/// rank reduces only the part it keeps.
struct SliceOfAllReduce : OpRewritePattern<dist::AllSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(dist::AllSliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto reduce = slice.getInput().getDefiningOp<dist::AllReduceOp>();
    if (!reduce || !reduce->hasOneUse() ||
        reduce.getMeshAttr() != slice.getMeshAttr() ||
        reduce.getAxesAttr() != slice.getAxesAttr())
      return failure();
    rewriter.replaceOpWithNewOp<dist::ReduceScatterOp>(
        slice, slice.getType(), reduce.getInput(), slice.getMeshAttr(),
        slice.getAxesAttr(), slice.getDimAttr(), reduce.getReductionAttr());
    return success();
  }
};

/// all_slice(reshape(x)) along a dim the reshape keeps whole: the slice of
/// x along that dim, viewed.
struct SliceBeforeReshape : OpRewritePattern<dist::AllSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(dist::AllSliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto reshape = slice.getInput().getDefiningOp<ReshapeOp>();
    if (!reshape || !reshape->hasOneUse())
      return failure();
    std::optional<int64_t> dim =
        reshapedDim(shapeOf(reshape.getResult()), shapeOf(reshape.getOperand()),
                    slice.getDim());
    if (!dim)
      return failure();
    Value sliced = sliceLike(rewriter, slice, reshape.getOperand(), *dim);
    rewriter.replaceOpWithNewOp<ReshapeOp>(slice, slice.getType(), sliced);
    return success();
  }
};

/// all_slice(f(x, broadcast(b), ...)) for an elementwise f with one
/// operand of the result's shape: f(all_slice(x), broadcast(b') ...), where
/// b' is b's slice when b has the sliced dim, else b itself.
struct SliceBeforeElementwise : OpRewritePattern<dist::AllSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(dist::AllSliceOp slice,
                                PatternRewriter &rewriter) const override {
    Operation *op = slice.getInput().getDefiningOp();
    if (!op || !op->hasTrait<OpTrait::Elementwise>() ||
        op->getNumResults() != 1 || op->getNumRegions() != 0 ||
        !op->hasOneUse())
      return failure();
    const int64_t dim = slice.getDim();
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    int whole = 0;
    for (Value operand : op->getOperands()) {
      if (operand.getDefiningOp<BroadcastInDimOp>())
        continue;
      if (shapeOf(operand) != shape)
        return failure();
      ++whole;
    }
    // More than one would mean a slice each where there was one.
    if (whole != 1)
      return failure();
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      auto broadcast = operand.getDefiningOp<BroadcastInDimOp>();
      if (!broadcast) {
        operands.push_back(sliceLike(rewriter, slice, operand, dim));
        continue;
      }
      Value source = broadcast.getOperand();
      for (auto [d, r] : llvm::enumerate(broadcast.getDims()))
        if (r == dim && shapeOf(source)[d] != 1)
          source = sliceLike(rewriter, slice, source, int64_t(d));
      operands.push_back(rewriter.create<BroadcastInDimOp>(
          broadcast.getLoc(),
          withDim(broadcast.getType(), dim, shapeOf(slice.getResult())[dim]),
          source, broadcast.getDimsAttr()));
    }
    OperationState state(op->getLoc(), op->getName());
    state.addOperands(operands);
    state.addAttributes(op->getAttrs());
    state.addTypes(withDim(op->getResult(0).getType(), dim,
                           shapeOf(slice.getResult())[dim]));
    rewriter.replaceOp(slice, rewriter.create(state)->getResults());
    return success();
  }
};

/// Where dim `dim` of `view`'s operand is in its result when the view keeps
/// it whole (a transpose moves it, a broadcast maps it, a reshape keeps
/// the elements before it and its size); none otherwise.
std::optional<int64_t> keptDim(Operation *view, int64_t dim) {
  ArrayRef<int64_t> in = shapeOf(view->getOperand(0)),
                    out = shapeOf(view->getResult(0));
  if (auto transpose = dyn_cast<TransposeOp>(view)) {
    auto at = llvm::find(transpose.getPerm(), dim);
    return int64_t(at - transpose.getPerm().begin());
  }
  if (auto broadcast = dyn_cast<BroadcastInDimOp>(view)) {
    int64_t to = broadcast.getDims()[dim];
    if (out[to] != in[dim])
      return std::nullopt;
    return to;
  }
  return reshapedDim(in, out, dim);
}

/// all_slice(views(all_gather(x))) over the same axes, through reshapes,
/// transposes and broadcasts that keep the gathered dim whole: the views
/// apply to x and the gather follows them, so that all_slice(all_gather)
/// becomes an all_to_all (dist's canonicalization). Llama's v, gathered
/// along the sequence and repeated from 8 kv heads to the query heads, was
/// gathered whole, repeated (64 MiB at seq 8192) and sliced to a head.
struct SliceOfViewedGather : OpRewritePattern<dist::AllSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(dist::AllSliceOp slice,
                                PatternRewriter &rewriter) const override {
    SmallVector<Operation *> views;
    Value value = slice.getInput();
    while (isa_and_nonnull<ReshapeOp, TransposeOp, BroadcastInDimOp>(
               value.getDefiningOp()) &&
           value.hasOneUse()) {
      views.push_back(value.getDefiningOp());
      value = views.back()->getOperand(0);
    }
    auto gather = value.getDefiningOp<dist::AllGatherOp>();
    if (views.empty() || !gather || !gather->hasOneUse() ||
        gather.getMeshAttr() != slice.getMeshAttr() ||
        gather.getAxesAttr() != slice.getAxesAttr())
      return failure();
    // The gathered dim through the views, first to last.
    int64_t dim = gather.getDim();
    int64_t parts =
        shapeOf(gather.getResult())[dim] / shapeOf(gather.getInput())[dim];
    SmallVector<int64_t> dims;
    for (Operation *view : llvm::reverse(views)) {
      std::optional<int64_t> next = keptDim(view, dim);
      if (!next)
        return failure();
      dims.push_back(dim = *next);
    }
    Value local = gather.getInput();
    for (auto [view, at] : llvm::zip(llvm::reverse(views), dims)) {
      Type type = view->getResult(0).getType();
      OperationState state(view->getLoc(), view->getName());
      state.addOperands(local);
      state.addAttributes(view->getAttrs());
      state.addTypes(
          withDim(type, at, shapeOf(view->getResult(0))[at] / parts));
      local = rewriter.create(state)->getResult(0);
    }
    Value gathered = rewriter.create<dist::AllGatherOp>(
        gather.getLoc(), slice.getInput().getType(), local,
        gather.getMeshAttr(), gather.getAxesAttr(),
        rewriter.getI64IntegerAttr(dims.back()));
    rewriter.modifyOpInPlace(slice, [&] { slice->setOperand(0, gathered); });
    return success();
  }
};

struct TrnSliceBeforeComputePass
    : trn::impl::TrnSliceBeforeComputeBase<TrnSliceBeforeComputePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SliceOfAllReduce, SliceBeforeReshape, SliceBeforeElementwise,
                 SliceOfViewedGather>(&getContext());
    // all_slice(all_gather) along another dim: an all_to_all.
    dist::AllSliceOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
