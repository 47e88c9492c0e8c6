//===- FusionLayout.h - how a fusion group reads its inputs -----*- C++ -*-===//
//
// A trn.fusion group computes tensors of one shape S, seen as [R, C]: rows
// R = product(S[:-1]) go on SBUF partitions, the last dimension C along the
// free axis. An input broadcast into S (or S itself) is read straight from
// HBM with a strided DMA window rather than materialised. A window has one
// partition stride, so rows can share a window only within a block of rows
// whose source strides collapse into one: the row block. The fusion pass and
// the lowering both use this, so what one forms the other can read.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_TRN_UTILS_FUSIONLAYOUT_H
#define TRN_DIALECT_TRN_UTILS_FUSIONLAYOUT_H

#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::trn {

/// Columns up to which a group that reduces along its rows (a layer norm's
/// backward) also takes sums over its rows (the norm weight's and bias's
/// gradients, trn-fuse-matmul-epilogue), and trn-fuse-elementwise moves such
/// sums out of the way of the group: the running totals are whole fp32 rows
/// in SBUF and a Vector Engine pass per tile (a GPT-3 norm's 6144-column
/// group, Vector-bound already, ran slower with them; BERT's 1024-column
/// ones faster).
constexpr int64_t kMaxWholeRowSumColumns = 2048;

/// Where row `r`, column `c` of the [R, C] view of the group shape reads its
/// element of the source tensor.
struct BroadcastAccess {
  /// Source element stride per leading dimension of S (0 if broadcast).
  SmallVector<int64_t> rowStrides;
  /// Source element stride along C; 0 when the source is constant along a
  /// row, which makes it a [rows, 1] column.
  int64_t columnStride = 0;
  /// Rows form blocks of this many consecutive rows (a divisor of R) inside
  /// which row r + 1 starts `partitionStride` elements after row r.
  int64_t rowBlock = 1;
  int64_t partitionStride = 0;

  /// Source element offset of the first element of row `row`.
  int64_t rowOffset(ArrayRef<int64_t> groupShape, int64_t row) const;
};

/// The access of a source of shape `sourceShape` broadcast into `groupShape`
/// with `broadcast_in_dim` dims `dims` (identity dims for S itself; dims
/// [0, rank - 2] for a tensor of shape S[:-1] read as a column).
BroadcastAccess computeBroadcastAccess(ArrayRef<int64_t> sourceShape,
                                       ArrayRef<int64_t> dims,
                                       ArrayRef<int64_t> groupShape);

/// The ops of sum(exp(x - broadcast(m))) along the rows of [R, C] values (a
/// softmax's normaliser): `sum` is a trn.reduce sum over dims [1] into f32
/// of a trn.exp of a trn.sub whose subtrahend broadcasts a per-row value
/// along the rows (dims [0]). trn-fuse-matmul-epilogue moves such a sum into
/// the epilogue that computes x and m = max(x); the lowering computes it
/// online there.
struct ShiftedExpSum {
  SubOp sub;
  ExpOp exp;
  BroadcastInDimOp broadcast;
};
std::optional<ShiftedExpSum> matchShiftedExpSum(ReduceOp sum);

} // namespace mlir::trn

#endif // TRN_DIALECT_TRN_UTILS_FUSIONLAYOUT_H
