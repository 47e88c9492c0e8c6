//===- DecomposeComposites.cpp - composite trn ops to primitives ---------===//
//
// One rewrite pattern per composite op, each a transcription of the formula
// in the op's description (TrnOps.td) into trn primitives. The precision and
// stability choices are stated in the pass description (Passes.td): compute
// in f32, subtract row maxima before exp, mask with -inf, guard ignored
// labels before gather.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Utils/FlashAttention.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::trn {
#define GEN_PASS_DEF_TRNDECOMPOSECOMPOSITES
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The dimensions [begin, end).
SmallVector<int64_t> dimRange(int64_t begin, int64_t end) {
  return llvm::to_vector(llvm::seq<int64_t>(begin, end));
}

/// exp(x - max(x)) along some dimensions, the core of every softmax-like
/// composite.
struct ShiftedExp {
  Value max;     ///< max(x) over the dimensions (they are removed)
  Value shifted; ///< x - max(x)
  Value exps;    ///< exp(x - max(x))
  Value sums;    ///< sum(exp(x - max(x))) over the dimensions
};

/// Creates trn primitives before the op being rewritten, at its location.
class Primitives {
public:
  Primitives(PatternRewriter &rewriter, Location loc)
      : rewriter(rewriter), loc(loc) {}

  Type f32() { return rewriter.getF32Type(); }

  /// `value` with element type `elementType`; no op if it has it already.
  Value convert(Value value, Type elementType) {
    RankedTensorType type = tensorType(value);
    if (type.getElementType() == elementType)
      return value;
    return rewriter.create<ConvertOp>(loc, type.clone(elementType), value)
        .getResult();
  }
  Value toF32(Value value) { return convert(value, f32()); }

  /// `value` with its dims permuted (result dim i is its dim perm[i]); no op
  /// for the identity.
  Value transpose(Value value, ArrayRef<int64_t> perm) {
    if (isIdentityPermutation(perm))
      return value;
    return rewriter.create<TransposeOp>(loc, value, perm).getResult();
  }

  Value splat(RankedTensorType type, double value) {
    return constant(type, rewriter.getFloatAttr(type.getElementType(), value));
  }
  Value splatLike(Value like, double value) {
    return splat(tensorType(like), value);
  }
  Value splatInt(RankedTensorType type, int64_t value) {
    return constant(type,
                    rewriter.getIntegerAttr(type.getElementType(), value));
  }
  Value splatBool(RankedTensorType type, bool value) {
    return constant(type, rewriter.getBoolAttr(value));
  }

  Value add(Value lhs, Value rhs) {
    return rewriter.create<AddOp>(loc, lhs, rhs).getResult();
  }
  Value sub(Value lhs, Value rhs) {
    return rewriter.create<SubOp>(loc, lhs, rhs).getResult();
  }
  Value mul(Value lhs, Value rhs) {
    return rewriter.create<MulOp>(loc, lhs, rhs).getResult();
  }
  Value div(Value lhs, Value rhs) {
    return rewriter.create<DivOp>(loc, lhs, rhs).getResult();
  }
  Value neg(Value x) { return rewriter.create<NegOp>(loc, x).getResult(); }
  Value exp(Value x) { return rewriter.create<ExpOp>(loc, x).getResult(); }
  Value log(Value x) { return rewriter.create<LogOp>(loc, x).getResult(); }
  Value rsqrt(Value x) { return rewriter.create<RsqrtOp>(loc, x).getResult(); }

  Value compare(ComparisonPredicate predicate, Value lhs, Value rhs) {
    return rewriter.create<CompareOp>(loc, predicate, lhs, rhs).getResult();
  }
  Value select(Value pred, Value onTrue, Value onFalse) {
    return rewriter.create<SelectOp>(loc, pred, onTrue, onFalse).getResult();
  }
  Value iota(RankedTensorType type, int64_t dim) {
    return rewriter.create<IotaOp>(loc, type, dim).getResult();
  }

  /// Reduces over `dims`, removing them; the identity when `dims` is empty.
  Value reduce(ReduceKind kind, Value x, ArrayRef<int64_t> dims) {
    if (dims.empty())
      return x;
    return rewriter.create<ReduceOp>(loc, kind, x, dims).getResult();
  }
  Value sum(Value x, ArrayRef<int64_t> dims) {
    return reduce(ReduceKind::sum, x, dims);
  }
  Value mean(Value x, ArrayRef<int64_t> dims) {
    int64_t count = 1;
    for (int64_t dim : dims)
      count *= tensorType(x).getDimSize(dim);
    Value total = sum(x, dims);
    return div(total, splatLike(total, static_cast<double>(count)));
  }

  Value broadcast(Value x, RankedTensorType type, ArrayRef<int64_t> dims) {
    return rewriter.create<BroadcastInDimOp>(loc, type, x, dims).getResult();
  }
  /// Broadcasts `value`, shaped like `like` without `missingDims`, back to the
  /// shape of `like` (keeping its own element type).
  Value expand(Value value, Value like, ArrayRef<int64_t> missingDims) {
    if (missingDims.empty())
      return value;
    RankedTensorType likeType = tensorType(like);
    SmallVector<int64_t> keptDims;
    for (int64_t dim = 0; dim < likeType.getRank(); ++dim)
      if (!llvm::is_contained(missingDims, dim))
        keptDims.push_back(dim);
    return broadcast(value, likeType.clone(getElementTypeOrSelf(value)),
                     keptDims);
  }

  Value gather(Value operand, Value indices, int64_t axis, int64_t batchDims) {
    return rewriter.create<GatherOp>(loc, operand, indices, axis, batchDims)
        .getResult();
  }
  Value scatterAdd(Value operand, Value indices, Value updates, int64_t axis,
                   int64_t batchDims) {
    return rewriter
        .create<ScatterAddOp>(loc, operand, indices, updates, axis, batchDims)
        .getResult();
  }

  /// An f32 dot_general with the same batch dimensions on both sides. Two
  /// operands of one narrow type are used as they are (their products are
  /// exact in f32); a narrow operand next to an f32 one is converted.
  Value dot(Value lhs, Value rhs, ArrayRef<int64_t> batchDims,
            ArrayRef<int64_t> lhsContracting,
            ArrayRef<int64_t> rhsContracting) {
    if (getElementTypeOrSelf(lhs) != getElementTypeOrSelf(rhs)) {
      lhs = toF32(lhs);
      rhs = toF32(rhs);
    }
    RankedTensorType type = DotGeneralOp::inferResultType(
        std::nullopt, tensorType(lhs), tensorType(rhs), batchDims, batchDims,
        lhsContracting, rhsContracting, f32());
    return rewriter
        .create<DotGeneralOp>(loc, type, lhs, rhs, batchDims, batchDims,
                              lhsContracting, rhsContracting)
        .getResult();
  }

  /// The stable exponentials of `x` along `dims`.
  ShiftedExp shiftedExp(Value x, ArrayRef<int64_t> dims) {
    ShiftedExp result;
    result.max = reduce(ReduceKind::max, x, dims);
    result.shifted = sub(x, expand(result.max, x, dims));
    result.exps = exp(result.shifted);
    result.sums = sum(result.exps, dims);
    return result;
  }
  /// max + log(sum(exp(x - max))).
  Value logSumExp(const ShiftedExp &e) { return add(e.max, log(e.sums)); }

private:
  Value constant(RankedTensorType type, Attribute element) {
    auto value = DenseElementsAttr::get(type, ArrayRef<Attribute>(element));
    return rewriter.create<ConstantOp>(loc, cast<ElementsAttr>(value))
        .getResult();
  }

  PatternRewriter &rewriter;
  Location loc;
};

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

SmallVector<Value> decomposeSoftmax(SoftmaxOp op, Primitives &b) {
  SmallVector<int64_t> dims = {static_cast<int64_t>(op.getDim())};
  Value x = b.toF32(op.getOperand());
  ShiftedExp e = b.shiftedExp(x, dims);
  Value y = b.div(e.exps, b.expand(e.sums, x, dims));
  return {b.convert(y, getElementTypeOrSelf(op.getType()))};
}

SmallVector<Value> decomposeLogSoftmax(LogSoftmaxOp op, Primitives &b) {
  SmallVector<int64_t> dims = {static_cast<int64_t>(op.getDim())};
  Value x = b.toF32(op.getOperand());
  ShiftedExp e = b.shiftedExp(x, dims);
  Value y = b.sub(e.shifted, b.expand(b.log(e.sums), x, dims));
  return {b.convert(y, getElementTypeOrSelf(op.getType()))};
}

SmallVector<Value> decomposeSoftmaxGrad(SoftmaxGradOp op, Primitives &b) {
  SmallVector<int64_t> dims = {static_cast<int64_t>(op.getDim())};
  Value y = b.toF32(op.getOutput());
  Value dy = b.toF32(op.getGradOutput());
  Value dot = b.sum(b.mul(dy, y), dims);
  Value dx = b.mul(y, b.sub(dy, b.expand(dot, y, dims)));
  return {b.convert(dx, getElementTypeOrSelf(op.getType()))};
}

SmallVector<Value> decomposeLogSoftmaxGrad(LogSoftmaxGradOp op, Primitives &b) {
  SmallVector<int64_t> dims = {static_cast<int64_t>(op.getDim())};
  Value y = b.toF32(op.getOutput());
  Value dy = b.toF32(op.getGradOutput());
  Value total = b.expand(b.sum(dy, dims), y, dims);
  Value dx = b.sub(dy, b.mul(b.exp(y), total));
  return {b.convert(dx, getElementTypeOrSelf(op.getType()))};
}

//===----------------------------------------------------------------------===//
// Normalisations
//===----------------------------------------------------------------------===//

/// A norm input's leading (statistics) and normalised dimensions.
struct NormDims {
  SmallVector<int64_t> leading, normalized;
  NormDims(Value input, int64_t axis)
      : leading(dimRange(0, axis)),
        normalized(dimRange(axis, tensorType(input).getRank())) {}
};

SmallVector<Value> decomposeLayerNorm(LayerNormOp op, Primitives &b) {
  NormDims dims(op.getInput(), op.getAxis());
  Value x = b.toF32(op.getInput());
  Value mean = b.mean(x, dims.normalized);
  Value centered = b.sub(x, b.expand(mean, x, dims.normalized));
  Value variance = b.mean(b.mul(centered, centered), dims.normalized);
  Value rstd = b.rsqrt(b.add(
      variance, b.splatLike(variance, op.getEpsilon().convertToDouble())));
  Value xhat = b.mul(centered, b.expand(rstd, x, dims.normalized));
  Value weight = b.expand(b.toF32(op.getWeight()), x, dims.leading);
  Value bias = b.expand(b.toF32(op.getBias()), x, dims.leading);
  Value output = b.add(b.mul(xhat, weight), bias);
  return {b.convert(output, getElementTypeOrSelf(op.getInput())), mean, rstd};
}

SmallVector<Value> decomposeLayerNormGrad(LayerNormGradOp op, Primitives &b) {
  NormDims dims(op.getInput(), op.getAxis());
  Value x = b.toF32(op.getInput());
  Value dy = b.toF32(op.getGradOutput());
  Value rstd = b.expand(op.getRstd(), x, dims.normalized);
  Value xhat =
      b.mul(b.sub(x, b.expand(op.getMean(), x, dims.normalized)), rstd);
  Value g = b.mul(dy, b.expand(b.toF32(op.getWeight()), x, dims.leading));
  Value meanG = b.expand(b.mean(g, dims.normalized), x, dims.normalized);
  Value meanGXhat =
      b.expand(b.mean(b.mul(g, xhat), dims.normalized), x, dims.normalized);
  Value dx = b.mul(rstd, b.sub(b.sub(g, meanG), b.mul(xhat, meanGXhat)));
  Value dw = b.sum(b.mul(dy, xhat), dims.leading);
  Value db = b.sum(dy, dims.leading);
  Type type = getElementTypeOrSelf(op.getInput());
  return {b.convert(dx, type), b.convert(dw, type), b.convert(db, type)};
}

SmallVector<Value> decomposeRmsNorm(RmsNormOp op, Primitives &b) {
  NormDims dims(op.getInput(), op.getAxis());
  Value x = b.toF32(op.getInput());
  Value meanSquare = b.mean(b.mul(x, x), dims.normalized);
  Value rstd = b.rsqrt(b.add(
      meanSquare, b.splatLike(meanSquare, op.getEpsilon().convertToDouble())));
  Value normalized = b.mul(x, b.expand(rstd, x, dims.normalized));
  Value weight = b.expand(b.toF32(op.getWeight()), x, dims.leading);
  Value output = b.mul(normalized, weight);
  return {b.convert(output, getElementTypeOrSelf(op.getInput())), rstd};
}

SmallVector<Value> decomposeRmsNormGrad(RmsNormGradOp op, Primitives &b) {
  NormDims dims(op.getInput(), op.getAxis());
  Value x = b.toF32(op.getInput());
  Value dy = b.toF32(op.getGradOutput());
  Value rstd = b.expand(op.getRstd(), x, dims.normalized);
  Value xhat = b.mul(x, rstd);
  Value g = b.mul(dy, b.expand(b.toF32(op.getWeight()), x, dims.leading));
  Value meanGXhat =
      b.expand(b.mean(b.mul(g, xhat), dims.normalized), x, dims.normalized);
  Value dx = b.mul(rstd, b.sub(g, b.mul(xhat, meanGXhat)));
  Value dw = b.sum(b.mul(dy, xhat), dims.leading);
  Type type = getElementTypeOrSelf(op.getInput());
  return {b.convert(dx, type), b.convert(dw, type)};
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Attention operands are [batch..., rows, cols]; scores are [..., S, T].
struct AttentionDims {
  SmallVector<int64_t> batch;
  int64_t rows, cols;
  explicit AttentionDims(Value query) {
    int64_t rank = tensorType(query).getRank();
    batch = dimRange(0, rank - 2);
    rows = rank - 2;
    cols = rank - 1;
  }
};

/// The permutations between an attention op's operand layout (its
/// `seq_dim`) and the canonical [batch..., S, D] the decomposition uses.
struct AttentionLayout {
  SmallVector<int64_t> toCanonical, fromCanonical;
  explicit AttentionLayout(Operation *op) {
    int64_t rank = tensorType(op->getOperand(0)).getRank();
    toCanonical = attentionToCanonical(rank, attentionSeqDim(op));
    fromCanonical = invertPermutationVector(toCanonical);
  }
  Value in(Primitives &b, Value operand) const {
    return b.transpose(operand, toCanonical);
  }
  Value out(Primitives &b, Value result) const {
    return b.transpose(result, fromCanonical);
  }
};

/// scale * q k^T in f32, [..., S, T]; with `causal`, -inf where key j is
/// hidden from query i (j > i), so that its softmax weight is exactly 0.
Value attentionScores(Primitives &b, const AttentionDims &dims, Value query,
                      Value key, double scale, bool causal) {
  Value scores = b.dot(query, key, dims.batch, {dims.cols}, {dims.cols});
  scores = b.mul(scores, b.splatLike(scores, scale));
  if (!causal)
    return scores;
  RankedTensorType type = tensorType(scores);
  int64_t queries = type.getDimSize(dims.rows);
  int64_t keys = type.getDimSize(dims.cols);
  unsigned positionBits =
      std::max(queries, keys) <= std::numeric_limits<int32_t>::max() ? 32 : 64;
  auto positionType = RankedTensorType::get(
      {queries, keys}, IntegerType::get(type.getContext(), positionBits));
  Value hidden = b.compare(ComparisonPredicate::gt, b.iota(positionType, 1),
                           b.iota(positionType, 0));
  Value mask =
      b.broadcast(hidden, type.clone(IntegerType::get(type.getContext(), 1)),
                  {dims.rows, dims.cols});
  return b.select(mask, b.splat(type, -std::numeric_limits<double>::infinity()),
                  scores);
}

SmallVector<Value> decomposeAttention(AttentionOp op, Primitives &b) {
  AttentionLayout layout(op);
  Value query = layout.in(b, op.getQuery()), key = layout.in(b, op.getKey()),
        value = layout.in(b, op.getValue());
  AttentionDims dims(query);
  Value scores = attentionScores(
      b, dims, query, key, op.getScale().convertToDouble(), op.getCausal());
  ShiftedExp e = b.shiftedExp(scores, {dims.cols});
  Value probs = b.div(e.exps, b.expand(e.sums, scores, {dims.cols}));
  Value output = b.dot(probs, value, dims.batch, {dims.cols}, {dims.rows});
  return {
      layout.out(b, b.convert(output, getElementTypeOrSelf(op.getOutput()))),
      b.logSumExp(e)};
}

SmallVector<Value> decomposeAttentionGrad(AttentionGradOp op, Primitives &b) {
  AttentionLayout layout(op);
  Value query = layout.in(b, op.getQuery()), key = layout.in(b, op.getKey()),
        value = layout.in(b, op.getValue()),
        output = layout.in(b, op.getOutput()),
        gradOutputIn = layout.in(b, op.getGradOutput());
  AttentionDims dims(query);
  double scale = op.getScale().convertToDouble();
  Value scores = attentionScores(b, dims, query, key, scale, op.getCausal());
  Value probs =
      b.exp(b.sub(scores, b.expand(op.getLse(), scores, {dims.cols})));
  Value gradOutput = b.toF32(gradOutputIn);
  Value gradValue =
      b.dot(probs, gradOutput, dims.batch, {dims.rows}, {dims.rows});
  Value gradProbs =
      b.dot(gradOutputIn, value, dims.batch, {dims.cols}, {dims.cols});
  Value rowDot = b.sum(b.mul(gradOutput, b.toF32(output)), {dims.cols});
  Value gradScores =
      b.mul(probs, b.sub(gradProbs, b.expand(rowDot, gradProbs, {dims.cols})));
  // Scale once here rather than both products below.
  gradScores = b.mul(gradScores, b.splatLike(gradScores, scale));
  Value gradQuery =
      b.dot(gradScores, key, dims.batch, {dims.cols}, {dims.rows});
  Value gradKey =
      b.dot(gradScores, query, dims.batch, {dims.rows}, {dims.rows});
  return {
      layout.out(b, b.convert(gradQuery, getElementTypeOrSelf(op.getQuery()))),
      layout.out(b, b.convert(gradKey, getElementTypeOrSelf(op.getKey()))),
      layout.out(b, b.convert(gradValue, getElementTypeOrSelf(op.getValue())))};
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

/// i1 [N]: whether each row's label differs from `ignoreIndex`.
Value countedRows(Primitives &b, Value labels, int64_t ignoreIndex) {
  RankedTensorType type = tensorType(labels);
  RankedTensorType rowsType =
      type.clone(IntegerType::get(type.getContext(), 1));
  // An ignore_index the label type cannot hold matches no label.
  if (!llvm::isIntN(type.getElementTypeBitWidth(), ignoreIndex))
    return b.splatBool(rowsType, true);
  return b.compare(ComparisonPredicate::ne, labels,
                   b.splatInt(type, ignoreIndex));
}

/// The labels with ignored ones replaced by class 0, which gather and
/// scatter_add accept whatever ignore_index is.
Value safeLabels(Primitives &b, Value labels, Value counted) {
  return b.select(counted, labels, b.splatInt(tensorType(labels), 0));
}

/// The number of counted rows, as a 0-d f32.
Value countOf(Primitives &b, Value counted) {
  return b.sum(b.toF32(counted), {0});
}

SmallVector<Value> decomposeCrossEntropy(CrossEntropyOp op, Primitives &b) {
  Value logits = op.getLogits();
  Value counted = countedRows(b, op.getLabels(), op.getIgnoreIndex());
  Value x = b.toF32(logits);
  Value lse = b.logSumExp(b.shiftedExp(x, {1}));
  Value labelLogits =
      b.toF32(b.gather(logits, safeLabels(b, op.getLabels(), counted),
                       /*axis=*/1, /*batchDims=*/1));
  Value rowLoss =
      b.select(counted, b.sub(lse, labelLogits), b.splatLike(lse, 0.0));
  Value loss = rowLoss;
  switch (op.getReduction()) {
  case LossReduction::none:
    break;
  case LossReduction::sum:
    loss = b.sum(rowLoss, {0});
    break;
  case LossReduction::mean:
    // 0 / 0 is NaN when every row is ignored, as the op says.
    loss = b.div(b.sum(rowLoss, {0}), countOf(b, counted));
    break;
  }
  return {b.convert(loss, getElementTypeOrSelf(op.getLoss()))};
}

SmallVector<Value> decomposeCrossEntropyGrad(CrossEntropyGradOp op,
                                             Primitives &b) {
  Value counted = countedRows(b, op.getLabels(), op.getIgnoreIndex());
  Value x = b.toF32(op.getLogits());
  ShiftedExp e = b.shiftedExp(x, {1});
  Value probs = b.div(e.exps, b.expand(e.sums, x, {1}));
  RankedTensorType rowsType = tensorType(e.sums);
  Value gradLoss = b.toF32(op.getGradLoss());
  Value rowGrad = gradLoss;
  switch (op.getReduction()) {
  case LossReduction::none:
    break;
  case LossReduction::sum:
    rowGrad = b.broadcast(gradLoss, rowsType, {});
    break;
  case LossReduction::mean:
    rowGrad = b.broadcast(b.div(gradLoss, countOf(b, counted)), rowsType, {});
    break;
  }
  rowGrad = b.select(counted, rowGrad, b.splat(rowsType, 0.0));
  // g * (softmax - onehot(label)): g * softmax, then -g added at the label
  // by the adjoint of the forward's gather. Ignored rows (g = 0) add -0 at
  // class 0, which leaves them +0.
  Value grad = b.mul(b.expand(rowGrad, x, {1}), probs);
  grad = b.scatterAdd(grad, safeLabels(b, op.getLabels(), counted),
                      b.neg(rowGrad), /*axis=*/1, /*batchDims=*/1);
  return {b.convert(grad, getElementTypeOrSelf(op.getLogits()))};
}

//===----------------------------------------------------------------------===//
// Patterns and the pass
//===----------------------------------------------------------------------===//

template <typename OpTy>
using Decomposition = SmallVector<Value> (*)(OpTy, Primitives &);

/// Replaces an `OpTy` by the primitives `decompose` builds for it.
template <typename OpTy, Decomposition<OpTy> decompose>
struct DecomposeComposite final : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Primitives builder(rewriter, op.getLoc());
    rewriter.replaceOp(op, decompose(op, builder));
    return success();
  }
};

/// A composite op name and how to add its pattern.
struct Composite {
  StringRef name;
  void (*addPattern)(RewritePatternSet &);
};

template <typename OpTy, Decomposition<OpTy> decompose> Composite composite() {
  return {OpTy::getOperationName(), [](RewritePatternSet &patterns) {
            patterns.add<DecomposeComposite<OpTy, decompose>>(
                patterns.getContext());
          }};
}

SmallVector<Composite> allComposites() {
  return {
      composite<SoftmaxOp, decomposeSoftmax>(),
      composite<LogSoftmaxOp, decomposeLogSoftmax>(),
      composite<SoftmaxGradOp, decomposeSoftmaxGrad>(),
      composite<LogSoftmaxGradOp, decomposeLogSoftmaxGrad>(),
      composite<LayerNormOp, decomposeLayerNorm>(),
      composite<LayerNormGradOp, decomposeLayerNormGrad>(),
      composite<RmsNormOp, decomposeRmsNorm>(),
      composite<RmsNormGradOp, decomposeRmsNormGrad>(),
      composite<AttentionOp, decomposeAttention>(),
      composite<AttentionGradOp, decomposeAttentionGrad>(),
      composite<CrossEntropyOp, decomposeCrossEntropy>(),
      composite<CrossEntropyGradOp, decomposeCrossEntropyGrad>(),
  };
}

struct DecomposeCompositesPass final
    : trn::impl::TrnDecomposeCompositesBase<DecomposeCompositesPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    constexpr StringLiteral prefix = "trn.";
    SmallVector<Composite> composites = allComposites();
    selected.clear();
    for (const std::string &requested : opNames) {
      std::string name = StringRef(requested).starts_with(prefix)
                             ? requested
                             : (prefix + requested).str();
      if (llvm::none_of(composites,
                        [&](const Composite &c) { return c.name == name; })) {
        std::string known;
        for (const Composite &c : composites)
          known += (known.empty() ? "" : ", ") +
                   c.name.drop_front(prefix.size()).str();
        return emitError(UnknownLoc::get(context))
               << "trn-decompose-composites: '" << requested
               << "' in ops= is not a composite op; composites are " << known;
      }
      selected.insert(name);
    }
    RewritePatternSet patterns(context);
    for (const Composite &c : composites) {
      if (!opNames.empty() && !selected.contains(c.name))
        continue;
      selected.insert(c.name);
      c.addPattern(patterns);
    }
    frozenPatterns = FrozenRewritePatternSet(std::move(patterns));
    return success();
  }

  void runOnOperation() override {
    auto isSelected = [&](Operation *op) {
      if (keepFlashAttention && isa<AttentionOp, AttentionGradOp>(op) &&
          flashAttentionBlocker(op).empty())
        return false;
      return selected.contains(op->getName().getStringRef());
    };
    SmallVector<Operation *> composites;
    getOperation().walk([&](Operation *op) {
      if (isSelected(op))
        composites.push_back(op);
    });
    if (composites.empty())
      return;
    // Only the composites and what replaces them are rewritten or folded;
    // the rest of the graph is left as it is.
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    (void)applyOpPatternsAndFold(composites, frozenPatterns, config);
    WalkResult leftover = getOperation().walk([&](Operation *op) {
      if (!isSelected(op))
        return WalkResult::advance();
      op->emitError("trn-decompose-composites: could not decompose this op");
      return WalkResult::interrupt();
    });
    if (leftover.wasInterrupted())
      signalPassFailure();
  }

private:
  llvm::StringSet<> selected;
  FrozenRewritePatternSet frozenPatterns;
};

} // namespace
