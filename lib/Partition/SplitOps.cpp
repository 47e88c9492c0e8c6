//===- SplitOps.cpp - ops whose own dimension is split --------------------===//
//
// Most ops compute their shard from their operands' shards unchanged. A few
// need more when the dimension they work along is split over mesh axes (a
// vocabulary-parallel embedding and LM head, Megatron's cross-entropy
// without gathering the logits):
//   - gather along a split dimension looks up only the indices in this
//     rank's range and zeros the rest (the results then sum: a pending sum);
//   - scatter_add along it adds only the updates whose index is in range;
//   - softmax / log_softmax and their gradients reduce their max and sums
//     over the axes.
//
//===----------------------------------------------------------------------===//

#include "Sharding.h"

#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::trn::partition {

namespace {

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

Value splat(OpBuilder &b, Location loc, RankedTensorType type, double value) {
  Type element = type.getElementType();
  Attribute attr =
      isa<FloatType>(element)
          ? Attribute(b.getFloatAttr(element, value))
          : Attribute(b.getIntegerAttr(element, static_cast<int64_t>(value)));
  return b.create<ConstantOp>(
      loc, cast<ElementsAttr>(DenseElementsAttr::get(type, attr)));
}

ArrayAttr axesAttr(MLIRContext *context, ArrayRef<StringAttr> axes) {
  SmallVector<Attribute> names(axes.begin(), axes.end());
  return ArrayAttr::get(context, names);
}

/// `value` reduced over `dim` locally and then over the axes (max or sum),
/// broadcast back to `value`'s shape.
Value reduceAcross(OpBuilder &b, Location loc, Value value, int64_t dim,
                   ReduceKind kind, ArrayRef<StringAttr> axes,
                   FlatSymbolRefAttr mesh) {
  Value local = b.create<ReduceOp>(loc, kind, value, ArrayRef<int64_t>{dim});
  Value whole = b.create<dist::AllReduceOp>(
      loc, local.getType(), local, mesh, axesAttr(b.getContext(), axes),
      dist::ReductionKindAttr::get(
          b.getContext(), kind == ReduceKind::max ? dist::ReductionKind::max
                                                  : dist::ReductionKind::sum));
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < typeOf(value).getRank(); ++d)
    if (d != dim)
      kept.push_back(d);
  return b.create<BroadcastInDimOp>(loc, typeOf(value), whole, kept);
}

/// This rank's indices of a dimension split over `axes` into pieces of
/// `localSize`: the indices shifted by the rank's offset and clamped into
/// range, and whether each was in range.
std::pair<Value, Value> localIndices(OpBuilder &b, Location loc, Value ids,
                                     ArrayRef<StringAttr> axes,
                                     int64_t localSize,
                                     FlatSymbolRefAttr mesh) {
  RankedTensorType type = typeOf(ids);
  auto scalar = RankedTensorType::get({}, type.getElementType());
  Value index = b.create<dist::AxisIndexOp>(
      loc, RankedTensorType::get({}, b.getI32Type()), mesh,
      axesAttr(b.getContext(), axes));
  Value offset = b.create<MulOp>(loc, b.create<ConvertOp>(loc, scalar, index),
                                 splat(b, loc, scalar, double(localSize)));
  Value shifted = b.create<SubOp>(
      loc, ids,
      b.create<BroadcastInDimOp>(loc, type, offset, ArrayRef<int64_t>{}));
  Value zero = splat(b, loc, type, 0);
  Value valid = b.create<AndOp>(
      loc, b.create<CompareOp>(loc, ComparisonPredicate::ge, shifted, zero),
      b.create<CompareOp>(loc, ComparisonPredicate::lt, shifted,
                          splat(b, loc, type, double(localSize))));
  Value clamped = b.create<SelectOp>(loc, valid, shifted, zero);
  return {clamped, valid};
}

/// `valid` (shaped like the indices) broadcast to `like`, whose dimensions
/// from `first` on are the indices' (after `batch` shared ones).
Value expandMask(OpBuilder &b, Location loc, Value valid, Value like,
                 int64_t batch, int64_t first) {
  RankedTensorType ids = typeOf(valid);
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < batch; ++d)
    dims.push_back(d);
  for (int64_t d = batch; d < ids.getRank(); ++d)
    dims.push_back(first + d - batch);
  return b.create<BroadcastInDimOp>(loc, typeOf(like).clone(b.getI1Type()),
                                    valid, dims);
}

} // namespace

Value rewriteForSplitDim(Operation *op, ArrayRef<StringAttr> axes,
                         FlatSymbolRefAttr mesh) {
  OpBuilder b(op);
  b.setInsertionPointAfter(op);
  Location loc = op->getLoc();
  if (auto gather = dyn_cast<GatherOp>(op)) {
    int64_t axis = gather.getAxis(), batch = gather.getBatchDims();
    int64_t localSize = typeOf(gather.getOperand()).getDimSize(axis);
    b.setInsertionPoint(op);
    auto [ids, valid] =
        localIndices(b, loc, gather.getIndices(), axes, localSize, mesh);
    gather.getIndicesMutable().assign(ids);
    b.setInsertionPointAfter(op);
    Value mask = expandMask(b, loc, valid, gather.getResult(), batch, axis);
    Value zero = splat(b, loc, typeOf(gather.getResult()), 0);
    Value masked = b.create<SelectOp>(loc, mask, gather.getResult(), zero);
    gather.getResult().replaceAllUsesExcept(masked, masked.getDefiningOp());
    return masked;
  }
  if (auto scatter = dyn_cast<ScatterAddOp>(op)) {
    int64_t axis = scatter.getAxis(), batch = scatter.getBatchDims();
    int64_t localSize = typeOf(scatter.getOperand()).getDimSize(axis);
    b.setInsertionPoint(op);
    auto [ids, valid] =
        localIndices(b, loc, scatter.getIndices(), axes, localSize, mesh);
    Value mask = expandMask(b, loc, valid, scatter.getUpdates(), batch, axis);
    Value zero = splat(b, loc, typeOf(scatter.getUpdates()), 0);
    Value updates = b.create<SelectOp>(loc, mask, scatter.getUpdates(), zero);
    scatter.getIndicesMutable().assign(ids);
    scatter.getUpdatesMutable().assign(updates);
    return scatter.getResult();
  }
  int64_t dim = op->getAttrOfType<IntegerAttr>("dim").getInt();
  b.setInsertionPoint(op);
  Value result;
  if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    Value x = op->getOperand(0);
    Value max = reduceAcross(b, loc, x, dim, ReduceKind::max, axes, mesh);
    Value shifted = b.create<SubOp>(loc, x, max);
    Value exps = b.create<ExpOp>(loc, shifted);
    Value sums = reduceAcross(b, loc, exps, dim, ReduceKind::sum, axes, mesh);
    result =
        isa<SoftmaxOp>(op)
            ? Value(b.create<DivOp>(loc, exps, sums))
            : Value(b.create<SubOp>(loc, shifted, b.create<LogOp>(loc, sums)));
  } else if (isa<LogSoftmaxGradOp>(op)) {
    // dx = g - exp(y) * sum(g)
    Value y = op->getOperand(0), g = op->getOperand(1);
    Value sums = reduceAcross(b, loc, g, dim, ReduceKind::sum, axes, mesh);
    result = b.create<SubOp>(
        loc, g, b.create<MulOp>(loc, b.create<ExpOp>(loc, y), sums));
  } else {
    // softmax_grad: dx = y * (g - sum(y * g))
    Value y = op->getOperand(0), g = op->getOperand(1);
    Value sums = reduceAcross(b, loc, b.create<MulOp>(loc, y, g), dim,
                              ReduceKind::sum, axes, mesh);
    result = b.create<MulOp>(loc, y, b.create<SubOp>(loc, g, sums));
  }
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
  return result;
}

} // namespace mlir::trn::partition
