//===- ChunkReduceScatter.cpp - scatter a matmul's result piece by piece --===//
//
// See the pass description in Passes.td. The Sync engine runs a collective
// once its whole operand is written; a matmul whose result only a
// reduce-scatter reads is cut into pieces along a dim the scatter does not
// split, so that each piece's transfer overlaps the next piece's matmul
// (trn-hoist-slices turns the slices of the matmul into matmuls of slices).
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNCHUNKREDUCESCATTER
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

/// Narrowest piece worth its own matmul: one PSUM bank of f32 columns.
constexpr int64_t kMinPieceWidth = 512;

/// The operand of `dot` and its dim that result dim `resultDim` comes from
/// (a free dim); null for a batch dim.
std::pair<Value, int64_t> operandDimOf(DotGeneralOp dot, int64_t resultDim) {
  int64_t r = resultDim - static_cast<int64_t>(dot.getLhsBatchingDims().size());
  for (bool lhs : {true, false}) {
    SmallVector<int64_t> free = dot.getFreeDims(lhs);
    if (r >= 0 && r < static_cast<int64_t>(free.size()))
      return {lhs ? dot.getLhs() : dot.getRhs(), free[r]};
    r -= static_cast<int64_t>(free.size());
  }
  return {Value(), -1};
}

/// Whether pieces of `value` along `dim` are contiguous blocks of what it is
/// read from (through a transpose: a weight the matmul reads transposed),
/// which the matmuls read in place; a strided piece would be a copy first.
bool piecesAreContiguous(Value value, int64_t dim) {
  if (auto transpose = value.getDefiningOp<TransposeOp>()) {
    value = transpose.getOperand();
    dim = transpose.getPerm()[dim];
  }
  ArrayRef<int64_t> shape = cast<RankedTensorType>(value.getType()).getShape();
  return llvm::all_of(shape.take_front(dim),
                      [](int64_t size) { return size == 1; });
}

struct ChunkReduceScatter
    : trn::impl::TrnChunkReduceScatterBase<ChunkReduceScatter> {
  using Base::Base;

  void runOnOperation() override {
    if (chunks < 2)
      return;
    SmallVector<dist::ReduceScatterOp> candidates;
    getOperation().walk(
        [&](dist::ReduceScatterOp op) { candidates.push_back(op); });
    for (dist::ReduceScatterOp scatter : candidates)
      chunk(scatter);
  }

  void chunk(dist::ReduceScatterOp scatter) {
    auto dot = scatter.getInput().getDefiningOp<DotGeneralOp>();
    if (!dot || !dot->hasOneUse())
      return;
    auto type = dyn_cast<RankedTensorType>(dot.getType());
    auto scatteredType = dyn_cast<RankedTensorType>(scatter.getType());
    if (!type || !type.hasStaticShape() || !scatteredType ||
        !scatteredType.hasStaticShape())
      return;
    if (tensorBytes(type) < minBytes)
      return;
    // The widest split the dim allows, at most `chunks` pieces.
    int64_t dim = -1, pieces = 0;
    // The rhs's free dims first, the last first: a weight's output
    // features.
    for (int64_t d = type.getRank() - 1; d >= 0 && dim < 0; --d) {
      auto [operand, operandDim] = operandDimOf(dot, d);
      if (d == static_cast<int64_t>(scatter.getDim()) || !operand ||
          !piecesAreContiguous(operand, operandDim))
        continue;
      int64_t size = type.getDimSize(d);
      for (int64_t n = chunks; n >= 2; --n)
        if (size % n == 0 && size / n >= kMinPieceWidth) {
          dim = d;
          pieces = n;
          break;
        }
    }
    if (dim < 0)
      return;

    OpBuilder builder(scatter);
    Location loc = scatter.getLoc();
    int64_t width = type.getDimSize(dim) / pieces;
    SmallVector<Value> scattered;
    for (int64_t k = 0; k < pieces; ++k) {
      SmallVector<int64_t> start(type.getRank(), 0);
      SmallVector<int64_t> limit(type.getShape());
      SmallVector<int64_t> strides(type.getRank(), 1);
      start[dim] = k * width;
      limit[dim] = (k + 1) * width;
      Value piece =
          builder.create<SliceOp>(loc, dot.getResult(), start, limit, strides);
      SmallVector<int64_t> shape(scatteredType.getShape());
      shape[dim] = width;
      auto pieceType =
          RankedTensorType::get(shape, scatteredType.getElementType());
      scattered.push_back(builder.create<dist::ReduceScatterOp>(
          loc, pieceType, piece, scatter.getMeshAttr(), scatter.getAxesAttr(),
          scatter.getDimAttr(), scatter.getReductionAttr()));
    }
    Value joined = builder.create<ConcatenateOp>(loc, scattered, dim);
    scatter.replaceAllUsesWith(joined);
    scatter.erase();
  }
};

} // namespace
