//===- TrnFolds.cpp - folders for trn ops --------------------------------===//
//
// Folds for trivial cases: identities (x * 1, reshape to the same type, ...),
// involutions (neg(neg x)) and arithmetic on splat constants; canonicalization
// patterns that move casts ahead of slices. Float
// arithmetic uses APFloat in the element type's own semantics so that a folded
// bf16 or f8 constant is exactly what the evaluator would have computed.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::trn;

namespace {

SplatElementsAttr getSplat(Attribute attr) {
  return dyn_cast_or_null<SplatElementsAttr>(attr);
}

/// True if `attr` is a splat whose every element equals `value` exactly
/// (for floats, bitwise: -0.0 and +0.0 are different).
bool isSplatOf(Attribute attr, double value) {
  auto splat = getSplat(attr);
  if (!splat)
    return false;
  Type elementType = splat.getElementType();
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    APFloat expected(value);
    bool lostInfo = false;
    expected.convert(floatType.getFloatSemantics(),
                     APFloat::rmNearestTiesToEven, &lostInfo);
    return !lostInfo && splat.getSplatValue<APFloat>().bitwiseIsEqual(expected);
  }
  if (elementType.isInteger(1))
    return false;
  return splat.getSplatValue<APInt>().getSExtValue() ==
         static_cast<int64_t>(value);
}

/// Folds `lhs op rhs` when both are splat constants, or returns null.
/// `floatFn` updates its first argument in place and returns the APFloat
/// status; `intFn` returns the result or std::nullopt to leave the op be.
template <typename FloatFn, typename IntFn>
Attribute foldSplatBinary(Attribute lhs, Attribute rhs, ShapedType type,
                          FloatFn floatFn, IntFn intFn) {
  auto l = getSplat(lhs), r = getSplat(rhs);
  if (!l || !r)
    return {};
  if (isa<FloatType>(type.getElementType())) {
    APFloat value = l.getSplatValue<APFloat>();
    floatFn(value, r.getSplatValue<APFloat>());
    // A NaN result is left to the evaluator (docs/numerics.md): APFloat gives
    // NaN where f8E4M3FN overflows (or divides by zero) but the evaluator
    // saturates to +-448, and the evaluator's NaNs are canonical.
    if (value.isNaN())
      return {};
    return DenseElementsAttr::get(type, value);
  }
  APInt a = l.getSplatValue<APInt>(), b = r.getSplatValue<APInt>();
  std::optional<APInt> value = intFn(a, b);
  if (!value)
    return {};
  return DenseElementsAttr::get(type, *value);
}

/// A splat constant of `type` with the splat value of `attr`, if `attr` is a
/// splat; used by shape ops, which do not change a splat's value.
Attribute reshapeSplat(Attribute attr, ShapedType type) {
  if (auto splat = getSplat(attr))
    return splat.resizeSplat(type);
  return {};
}

} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand();
  return {};
}

OpFoldResult NotOp::fold(FoldAdaptor) {
  if (auto inner = getOperand().getDefiningOp<NotOp>())
    return inner.getOperand();
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  // x + -0.0 == x for every float x (x + +0.0 is not: -0.0 + 0.0 == +0.0).
  bool isFloat = isa<FloatType>(getType().getElementType());
  if (isSplatOf(adaptor.getRhs(), isFloat ? -0.0 : 0.0))
    return getLhs();
  if (isSplatOf(adaptor.getLhs(), isFloat ? -0.0 : 0.0))
    return getRhs();
  return foldSplatBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](APFloat &a, const APFloat &b) {
        return a.add(b, APFloat::rmNearestTiesToEven);
      },
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a + b;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0.0))
    return getLhs();
  return foldSplatBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](APFloat &a, const APFloat &b) {
        return a.subtract(b, APFloat::rmNearestTiesToEven);
      },
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a - b;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1.0))
    return getLhs();
  if (isSplatOf(adaptor.getLhs(), 1.0))
    return getRhs();
  return foldSplatBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](APFloat &a, const APFloat &b) {
        return a.multiply(b, APFloat::rmNearestTiesToEven);
      },
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a * b;
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1.0))
    return getLhs();
  return foldSplatBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](APFloat &a, const APFloat &b) {
        return a.divide(b, APFloat::rmNearestTiesToEven);
      },
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        // Integer division by zero is an evaluation error: leave it be.
        if (b.isZero() || (a.isMinSignedValue() && b.isAllOnes()))
          return std::nullopt;
        return a.sdiv(b);
      });
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getOnTrue() == getOnFalse())
    return getOnTrue();
  if (auto pred = getSplat(adaptor.getPred()))
    return pred.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
  return {};
}

/// Whether every value of float type `narrow` is exactly a value of `wide`.
static bool widensExactly(Type narrow, Type wide) {
  auto n = dyn_cast<FloatType>(narrow), w = dyn_cast<FloatType>(wide);
  if (!n || !w)
    return false;
  const llvm::fltSemantics &ns = n.getFloatSemantics(),
                           &ws = w.getFloatSemantics();
  return llvm::APFloat::getSizeInBits(ns) <= llvm::APFloat::getSizeInBits(ws) &&
         llvm::APFloat::semanticsPrecision(ns) <=
             llvm::APFloat::semanticsPrecision(ws) &&
         llvm::APFloat::semanticsMaxExponent(ns) <=
             llvm::APFloat::semanticsMaxExponent(ws) &&
         llvm::APFloat::semanticsMinExponent(ns) >=
             llvm::APFloat::semanticsMinExponent(ws);
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  // convert(convert(x : T -> W) -> T) is x when W holds every T exactly
  // (bf16 -> f32 -> bf16, as --auto-cast all leaves between ops).
  if (auto inner = getOperand().getDefiningOp<ConvertOp>())
    if (inner.getOperand().getType() == getType() &&
        widensExactly(getType().getElementType(),
                      inner.getType().getElementType()))
      return inner.getOperand();
  return {};
}

namespace {

/// convert(slice(x)) for every slice of x, all cast to one type: x is cast
/// once and sliced after (a fused QKV projection's f32 result split into
/// bf16 q, k and v). The cast then joins x's producer (a matmul's epilogue)
/// and the slices copy narrower data. Exact: a cast is elementwise.
struct CastBeforeSlices : OpRewritePattern<ConvertOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvertOp convert,
                                PatternRewriter &rewriter) const override {
    auto slice = convert.getOperand().getDefiningOp<SliceOp>();
    if (!slice || !slice->hasOneUse())
      return failure();
    Value whole = slice.getOperand();
    Operation *producer = whole.getDefiningOp();
    Type elementType = convert.getType().getElementType();
    if (!producer || llvm::range_size(whole.getUsers()) < 2)
      return failure();
    SmallVector<std::pair<SliceOp, ConvertOp>> pieces;
    int64_t sliced = 0;
    for (Operation *user : whole.getUsers()) {
      auto piece = dyn_cast<SliceOp>(user);
      if (!piece || !piece->hasOneUse())
        return failure();
      auto cast = dyn_cast<ConvertOp>(*piece->user_begin());
      if (!cast || cast.getType().getElementType() != elementType ||
          !piece.getType().hasStaticShape())
        return failure();
      pieces.push_back({piece, cast});
      sliced += piece.getType().getNumElements();
    }
    // Not when the slices leave most of x: casting it all would cost more.
    auto wholeType = cast<RankedTensorType>(whole.getType());
    if (!wholeType.hasStaticShape() || sliced < wholeType.getNumElements())
      return failure();
    rewriter.setInsertionPointAfter(producer);
    Value converted = rewriter.create<ConvertOp>(
        convert.getLoc(), wholeType.clone(elementType), whole);
    for (auto [piece, cast] : pieces) {
      rewriter.setInsertionPoint(cast);
      rewriter.replaceOpWithNewOp<SliceOp>(
          cast, cast.getType(), converted, piece.getStartAttr(),
          piece.getLimitAttr(), piece.getStridesAttr());
      rewriter.eraseOp(piece);
    }
    return success();
  }
};

/// convert(reshape(x)) with the reshape used only there: x is cast first
/// and reshaped after, so that the cast joins x's producer (a fused
/// elementwise chain, a matmul's epilogue) instead of reading and writing
/// the whole tensor once more (BERT's MLM head: 250 MB of f32 logits
/// gradients written, read back and written as bf16, per micro-step).
/// Exact: a cast is elementwise. A narrowing cast moves always (the reshape
/// then moves fewer bytes, if it moves any); a widening one only when the
/// reshape keeps the last dimension, a view in trn's row layout, so that no
/// copy of the wider data appears.
struct CastBeforeReshape : OpRewritePattern<ConvertOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvertOp convert,
                                PatternRewriter &rewriter) const override {
    auto reshape = convert.getOperand().getDefiningOp<ReshapeOp>();
    if (!reshape || !reshape->hasOneUse())
      return failure();
    auto from = dyn_cast<RankedTensorType>(reshape.getOperand().getType());
    auto to = dyn_cast<RankedTensorType>(reshape.getType());
    if (!from || !to || !from.hasStaticShape() || !to.hasStaticShape())
      return failure();
    unsigned fromBits = convert.getOperand().getType().getElementTypeBitWidth();
    unsigned toBits = convert.getType().getElementTypeBitWidth();
    bool keepsRows = from.getRank() > 0 && to.getRank() > 0 &&
                     from.getShape().back() == to.getShape().back();
    if (toBits > fromBits && !keepsRows)
      return failure();
    Value converted = rewriter.create<ConvertOp>(
        convert.getLoc(), from.clone(convert.getType().getElementType()),
        reshape.getOperand());
    rewriter.replaceOpWithNewOp<ReshapeOp>(convert, convert.getType(),
                                           converted);
    rewriter.eraseOp(reshape);
    return success();
  }
};

} // namespace

void ConvertOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<CastBeforeSlices, CastBeforeReshape>(context);
}

OpFoldResult BroadcastInDimOp::fold(FoldAdaptor adaptor) {
  // Equal types with strictly increasing dims means the identity mapping.
  if (getOperand().getType() == getType())
    return getOperand();
  return reshapeSplat(adaptor.getOperand(), getType());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand()))
    return dense.reshape(getType());
  // reshape(reshape(x)) == reshape(x): update in place.
  if (auto inner = getOperand().getDefiningOp<ReshapeOp>()) {
    getOperandMutable().assign(inner.getOperand());
    return getResult();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = true;
  for (auto [i, dim] : llvm::enumerate(perm))
    identity &= dim == static_cast<int64_t>(i);
  if (identity)
    return getOperand();
  // transpose(transpose(x, inner), perm) is one transpose of x.
  if (auto inner = getOperand().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t dim : perm)
      composed.push_back(inner.getPerm()[dim]);
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return inner.getOperand();
    getOperandMutable().assign(inner.getOperand());
    setPerm(composed);
    return getResult();
  }
  return reshapeSplat(adaptor.getOperand(), getType());
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return reshapeSplat(adaptor.getOperand(), getType());
}

OpFoldResult ConcatenateOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  return {};
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

/// Whether `value` is a splat constant zero.
static bool isZeroSplat(Value value) {
  DenseElementsAttr dense;
  if (!matchPattern(value, m_Constant(&dense)) || !dense.isSplat())
    return false;
  Type element = dense.getElementType();
  if (isa<FloatType>(element))
    return dense.getSplatValue<APFloat>().isZero();
  if (isa<IntegerType>(element))
    return dense.getSplatValue<APInt>().isZero();
  return false;
}

OpFoldResult ReduceOp::fold(FoldAdaptor) {
  if (getDims().empty())
    return getOperand();
  // The sum along the scattered axis of a scatter_add into zeros with one
  // index per batch position is the updates themselves: each row holds one
  // update and zeros (indices are in range: trn.scatter_add's contract).
  // The loss gradient of a cross-entropy (nll_loss's backward scatters
  // into a zero [tokens, vocabulary] tensor, log_softmax's sums it back).
  if (auto scatter = getOperand().getDefiningOp<ScatterAddOp>())
    if (getKind() == ReduceKind::sum &&
        getDims() == ArrayRef<int64_t>{scatter.getAxis()} &&
        cast<ShapedType>(scatter.getIndices().getType()).getRank() ==
            scatter.getBatchDims() &&
        scatter.getUpdates().getType() == getType() &&
        isZeroSplat(scatter.getOperand()))
      return scatter.getUpdates();
  return {};
}
