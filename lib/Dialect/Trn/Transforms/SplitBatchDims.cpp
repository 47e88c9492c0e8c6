//===- SplitBatchDims.cpp - unmerge the batch of traced bmm ---------------===//
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNSPLITBATCHDIMS
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

/// The leading dimensions `value`'s first dimension was merged from: it is
/// a reshape of a tensor whose k >= 2 leading dimensions multiply to it and
/// whose other dimensions are `value`'s, directly or through transposes that
/// keep the first dimension first.
std::optional<SmallVector<int64_t>> mergedLeading(Value value) {
  if (auto transpose = value.getDefiningOp<TransposeOp>()) {
    if (transpose.getPerm().empty() || transpose.getPerm()[0] != 0)
      return std::nullopt;
    return mergedLeading(transpose.getOperand());
  }
  auto reshape = value.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  ArrayRef<int64_t> merged = shapeOf(value),
                    source = shapeOf(reshape.getOperand());
  if (merged.empty())
    return std::nullopt;
  int64_t product = 1;
  for (size_t k = 0; k < source.size(); ++k) {
    product *= source[k];
    if (product == merged[0] && k >= 1 &&
        source.drop_front(k + 1) == merged.drop_front())
      return SmallVector<int64_t>(source.take_front(k + 1));
    if (product > merged[0])
      break;
  }
  return std::nullopt;
}

/// Whether two merges have the same leading dimensions but for leading unit
/// ones (q selected from a stacked [3, B, H, S, D] is [1, B, H, S, D]).
bool sameLead(std::optional<SmallVector<int64_t>> merged,
              ArrayRef<int64_t> lead) {
  if (!merged)
    return false;
  auto strip = [](ArrayRef<int64_t> dims) {
    while (dims.size() > 1 && dims.front() == 1)
      dims = dims.drop_front();
    return dims;
  };
  return strip(*merged) == strip(lead);
}

/// `value` ([prod(lead), rest...]) as a tensor [lead..., rest...]: its
/// unmerged source where it has that one (through its transposes), else a
/// reshape.
Value unmerged(PatternRewriter &rewriter, Location loc, Value value,
               ArrayRef<int64_t> lead) {
  auto type = cast<RankedTensorType>(value.getType());
  if (auto transpose = value.getDefiningOp<TransposeOp>()) {
    if (sameLead(mergedLeading(value), lead)) {
      Value inner = unmerged(rewriter, loc, transpose.getOperand(), lead);
      int64_t extra = int64_t(lead.size()) - 1;
      SmallVector<int64_t> perm;
      for (int64_t d = 0; d < int64_t(lead.size()); ++d)
        perm.push_back(d);
      for (int64_t dim : transpose.getPerm().drop_front())
        perm.push_back(dim + extra);
      SmallVector<int64_t> shape(lead);
      llvm::append_range(shape, type.getShape().drop_front());
      return rewriter.create<TransposeOp>(
          loc, RankedTensorType::get(shape, type.getElementType()), inner,
          perm);
    }
  }
  SmallVector<int64_t> shape(lead);
  llvm::append_range(shape, type.getShape().drop_front());
  if (auto reshape = value.getDefiningOp<ReshapeOp>()) {
    // The source (without its leading unit dimensions).
    if (sameLead(mergedLeading(value), lead)) {
      value = reshape.getOperand();
      if (shapeOf(value) == ArrayRef<int64_t>(shape))
        return value;
    }
  }
  return rewriter.create<ReshapeOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), value);
}

struct SplitMergedBatch : OpRewritePattern<DotGeneralOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DotGeneralOp dot,
                                PatternRewriter &rewriter) const override {
    if (dot.getLhsBatchingDims() != ArrayRef<int64_t>{0} ||
        dot.getRhsBatchingDims() != ArrayRef<int64_t>{0})
      return failure();
    std::optional<SmallVector<int64_t>> lead = mergedLeading(dot.getLhs());
    if (!lead)
      lead = mergedLeading(dot.getRhs());
    if (!lead)
      return rewriter.notifyMatchFailure(dot, "batch is not a merge");
    Location loc = dot.getLoc();
    Value lhs = unmerged(rewriter, loc, dot.getLhs(), *lead);
    Value rhs = unmerged(rewriter, loc, dot.getRhs(), *lead);
    int64_t extra = int64_t(lead->size()) - 1;
    SmallVector<int64_t> batch, lhsContracting, rhsContracting;
    for (int64_t d = 0; d < int64_t(lead->size()); ++d)
      batch.push_back(d);
    for (int64_t d : dot.getLhsContractingDims())
      lhsContracting.push_back(d + extra);
    for (int64_t d : dot.getRhsContractingDims())
      rhsContracting.push_back(d + extra);
    auto type = cast<RankedTensorType>(dot.getType());
    SmallVector<int64_t> shape(*lead);
    llvm::append_range(shape, type.getShape().drop_front());
    auto split = rewriter.create<DotGeneralOp>(
        loc, RankedTensorType::get(shape, type.getElementType()), lhs, rhs,
        batch, batch, lhsContracting, rhsContracting);
    split->setDiscardableAttrs(dot->getDiscardableAttrDictionary());
    rewriter.replaceOpWithNewOp<ReshapeOp>(dot, type, split.getResult());
    return success();
  }
};

/// reshape(transpose(x)) that only splits dimensions is transpose(reshape(x))
/// with x's dimensions split instead: a merged [B*H] moved by a transpose
/// (nn.MultiheadAttention's [S, B*H, D] -> [B*H, S, D]) is split where it was
/// made, so the forward's and the backward's views of one tensor become
/// transposes of one value (trn-form-attention compares them so).
struct SplitBeforeTranspose : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp reshape,
                                PatternRewriter &rewriter) const override {
    auto transpose = reshape.getOperand().getDefiningOp<TransposeOp>();
    if (!transpose || !transpose->hasOneUse())
      return failure();
    ArrayRef<int64_t> moved = shapeOf(transpose.getResult());
    ArrayRef<int64_t> out = shapeOf(reshape.getResult());
    if (out.size() <= moved.size() || ShapedType::isDynamicShape(out) ||
        ShapedType::isDynamicShape(moved))
      return failure();
    // The result dimensions each moved dimension is split into, in order.
    SmallVector<SmallVector<int64_t>> groups;
    size_t next = 0;
    for (int64_t size : moved) {
      SmallVector<int64_t> group;
      int64_t product = 1;
      while (next < out.size() && (group.empty() || product < size)) {
        product *= out[next];
        group.push_back(out[next++]);
      }
      if (product != size)
        return failure();
      groups.push_back(std::move(group));
    }
    if (next != out.size())
      return failure();
    ArrayRef<int64_t> perm = transpose.getPerm();
    // x's dimension j is moved dimension i with perm[i] = j.
    SmallVector<int64_t> movedOf(perm.size());
    for (auto [i, j] : llvm::enumerate(perm))
      movedOf[j] = i;
    SmallVector<int64_t> splitShape, firstOf(perm.size());
    for (size_t j = 0; j < perm.size(); ++j) {
      firstOf[j] = splitShape.size();
      llvm::append_range(splitShape, groups[movedOf[j]]);
    }
    SmallVector<int64_t> splitPerm;
    for (auto [i, j] : llvm::enumerate(perm))
      for (size_t t = 0; t < groups[i].size(); ++t)
        splitPerm.push_back(firstOf[j] + t);
    auto type = cast<RankedTensorType>(reshape.getType());
    Value split = rewriter.create<ReshapeOp>(
        reshape.getLoc(),
        RankedTensorType::get(splitShape, type.getElementType()),
        transpose.getOperand());
    rewriter.replaceOpWithNewOp<TransposeOp>(reshape, type, split, splitPerm);
    return success();
  }
};

struct TrnSplitBatchDimsPass
    : mlir::trn::impl::TrnSplitBatchDimsBase<TrnSplitBatchDimsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SplitMergedBatch, SplitBeforeTranspose>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
