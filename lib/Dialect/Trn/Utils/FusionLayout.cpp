//===- FusionLayout.cpp - how a fusion group reads its inputs -------------===//

#include "trn/Dialect/Trn/Utils/FusionLayout.h"

using namespace mlir;
using namespace mlir::trn;

BroadcastAccess
mlir::trn::computeBroadcastAccess(ArrayRef<int64_t> sourceShape,
                                  ArrayRef<int64_t> dims,
                                  ArrayRef<int64_t> groupShape) {
  int64_t rank = groupShape.size();
  SmallVector<int64_t> sourceStrides(sourceShape.size(), 1);
  for (int64_t k = static_cast<int64_t>(sourceShape.size()) - 2; k >= 0; --k)
    sourceStrides[k] = sourceStrides[k + 1] * sourceShape[k + 1];
  // Stride of the source per group dimension: 0 where it is broadcast.
  SmallVector<int64_t> strides(rank, 0);
  for (auto [k, dim] : llvm::enumerate(dims))
    if (sourceShape[k] != 1)
      strides[dim] = sourceStrides[k];

  BroadcastAccess access;
  if (rank == 0)
    return access;
  access.columnStride = strides[rank - 1];
  access.rowStrides.assign(strides.begin(), strides.end() - 1);
  int64_t leading = rank - 1;
  if (leading == 0)
    return access; // one row
  // Grow the block from the innermost leading dimension outwards while the
  // next dimension's stride continues the same arithmetic progression.
  int64_t innermost = leading - 1;
  access.partitionStride = strides[innermost];
  access.rowBlock = groupShape[innermost];
  for (int64_t d = innermost - 1; d >= 0; --d) {
    if (strides[d] != access.partitionStride * access.rowBlock &&
        groupShape[d] != 1)
      break;
    access.rowBlock *= groupShape[d];
  }
  return access;
}

int64_t BroadcastAccess::rowOffset(ArrayRef<int64_t> groupShape,
                                   int64_t row) const {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(rowStrides.size()) - 1; d >= 0; --d) {
    offset += (row % groupShape[d]) * rowStrides[d];
    row /= groupShape[d];
  }
  return offset;
}

std::optional<mlir::trn::ShiftedExpSum>
mlir::trn::matchShiftedExpSum(ReduceOp sum) {
  if (sum.getKind() != ReduceKind::sum ||
      sum.getDims() != ArrayRef<int64_t>{1} ||
      !cast<RankedTensorType>(sum.getType()).getElementType().isF32())
    return std::nullopt;
  ShiftedExpSum parts;
  parts.exp = sum.getOperand().getDefiningOp<ExpOp>();
  parts.sub =
      parts.exp ? parts.exp.getOperand().getDefiningOp<SubOp>() : SubOp();
  parts.broadcast = parts.sub
                        ? parts.sub.getRhs().getDefiningOp<BroadcastInDimOp>()
                        : BroadcastInDimOp();
  if (!parts.broadcast || parts.broadcast.getDims() != ArrayRef<int64_t>{0})
    return std::nullopt;
  return parts;
}
