//===- LowerReduce.cpp - trn.reduce ---------------------------------------===//
//
// Reductions over any dims, as passes over row-major [A, R, C] views: on the
// Vector Engine along the free dim or element-wise across slices, or, for
// float sums whose kept elements are contiguous, on the Tensor Engine as
// matmuls with a ones column (see lowerReduce).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

using namespace mlir;
using namespace mlir::trntonc;

namespace mlir::trntonc {

AluOp aluOpFor(trn::ReduceKind kind) {
  switch (kind) {
  case trn::ReduceKind::sum:
    return AluOp::add;
  case trn::ReduceKind::max:
    return AluOp::max;
  case trn::ReduceKind::min:
    return AluOp::min;
  case trn::ReduceKind::prod:
    return AluOp::multiply;
  }
  return AluOp::add;
}

} // namespace mlir::trntonc

void Lowering::reduceStrided(Value in, int64_t inBase, int64_t kept,
                             int64_t keptStride, int64_t reduced,
                             int64_t reducedStride, Value out, int64_t outBase,
                             int64_t outStride, AluOp alu) {
  Type f32 = builder.getF32Type();
  Type inType = cast<HbmType>(in.getType()).getElementType();
  Type outType = cast<HbmType>(out.getType()).getElementType();
  for (int64_t p0 = 0; p0 < kept; p0 += kPartitions) {
    int64_t rows = std::min(kPartitions, kept - p0);
    Value total;
    for (int64_t c0 = 0; c0 < reduced; c0 += kTileColumns) {
      int64_t width = std::min(kTileColumns, reduced - c0);
      Value t = kb.tile(MemorySpace::sbuf, rows, {width}, inType);
      kb.dma(t, kb.view(in, inBase + p0 * keptStride + c0 * reducedStride, rows,
                        keptStride, {width}, {reducedStride}));
      Value partial = kb.tile(MemorySpace::sbuf, rows, {1}, f32);
      builder.create<TensorReduceOp>(kb.loc, alu, partial, t, false,
                                     Engine::vector);
      if (!total) {
        total = partial;
        continue;
      }
      Value next = kb.tile(MemorySpace::sbuf, rows, {1}, f32);
      builder.create<TensorTensorOp>(kb.loc, alu, next, total, partial,
                                     Engine::vector);
      total = next;
    }
    Value result = kb.tile(MemorySpace::sbuf, rows, {1}, outType);
    builder.create<TensorCopyOp>(kb.loc, result, total, Engine::vector);
    kb.dma(kb.view(out, outBase + p0 * outStride, rows, outStride, {1}, {1}),
           result);
  }
}

void Lowering::sumRowsOnTensorEngine(Value in, int64_t inBase, int64_t rows,
                                     int64_t cols, Value out, int64_t outBase) {
  Type f32 = builder.getF32Type();
  Type inType = cast<HbmType>(in.getType()).getElementType();
  Type outType = cast<HbmType>(out.getType()).getElementType();
  Value ones = kb.tile(MemorySpace::sbuf, kPartitions, {1}, inType);
  builder.create<MemsetOp>(kb.loc, ones, llvm::APFloat(1.0f), Engine::vector);
  for (int64_t c0 = 0; c0 < cols; c0 += kMatmulN) {
    int64_t width = std::min(kMatmulN, cols - c0);
    Value acc = kb.tile(MemorySpace::psum, 1, {width}, f32);
    for (int64_t r0 = 0; r0 < rows; r0 += kPartitions) {
      int64_t count = std::min(kPartitions, rows - r0);
      Value t = kb.tile(MemorySpace::sbuf, count, {width}, inType);
      kb.dma(t,
             kb.view(in, inBase + r0 * cols + c0, count, cols, {width}, {1}));
      Value stationary =
          count == kPartitions ? ones : kb.window(ones, {count, 1}, 0);
      builder.create<MatmulOp>(kb.loc, acc, stationary, t,
                               /*accumulate=*/r0 > 0);
    }
    Value result = kb.tile(MemorySpace::sbuf, 1, {width}, outType);
    kb.scalarCopy(result, acc);
    kb.dma(kb.view(out, outBase + c0, 1, width, {width}, {1}), result);
  }
}

void Lowering::reduceSlices(Value in, int64_t inBase, int64_t slices,
                            int64_t cols, Value out, int64_t outBase,
                            AluOp alu) {
  Type inType = cast<HbmType>(in.getType()).getElementType();
  Type outType = cast<HbmType>(out.getType()).getElementType();
  Type accType = inType.isIntOrIndex() ? inType : builder.getF32Type();
  int64_t perPartition = cols / kPartitions;
  for (int64_t c0 = 0; c0 < perPartition; c0 += kTileColumns) {
    int64_t width = std::min(kTileColumns, perPartition - c0);
    Value total;
    for (int64_t r = 0; r < slices; ++r) {
      Value t = kb.tile(MemorySpace::sbuf, kPartitions, {width}, inType);
      kb.dma(t, kb.view(in, inBase + r * cols + c0, kPartitions, perPartition,
                        {width}, {1}));
      if (!total) {
        total = t;
        continue;
      }
      Value next = kb.tile(MemorySpace::sbuf, kPartitions, {width},
                           r + 1 == slices ? outType : accType);
      builder.create<TensorTensorOp>(kb.loc, alu, next, total, t,
                                     Engine::vector);
      total = next;
    }
    if (cast<TileType>(total.getType()).getElementType() != outType) {
      Value result = kb.tile(MemorySpace::sbuf, kPartitions, {width}, outType);
      builder.create<TensorCopyOp>(kb.loc, result, total, Engine::vector);
      total = result;
    }
    kb.dma(kb.view(out, outBase + c0, kPartitions, perPartition, {width}, {1}),
           total);
  }
}

/// Reductions over any dims. Each maximal run of adjacent reduced dims is
/// one pass over a row-major [A, R, C] view (A: the dims before the run, C:
/// the dims after), from the last run to the first, through f32 scratch
/// between passes. C = 1 (trailing dims): rows on partitions, reduced
/// elements along the free dim. Otherwise the kept C elements go on
/// partitions with the R reduced ones strided along the free dim, per outer
/// index; or, when C is small and A large, the A outer indices go on
/// partitions, per inner index; a few (< 32) reduced slices of a C that
/// fills the partitions are combined element-wise. Sums whose kept elements
/// are contiguous
/// (float sums over leading dims: bias and norm-weight gradients, means over
/// a sequence) run on the Tensor Engine: a ones column as the stationary
/// operand adds up to 128 rows of a row-major tile per matmul into a
/// [1, 512] PSUM accumulator, so every input row is read with one contiguous
/// DMA instead of each kept column with element-strided ones.
LogicalResult Lowering::lowerReduce(trn::ReduceOp op) {
  if (failed(checkTileable(op)))
    return failure();
  auto type = cast<RankedTensorType>(op.getOperand().getType());
  SmallVector<int64_t> dims(op.getDims());
  llvm::sort(dims);
  SmallVector<int64_t> shape(type.getShape());
  Type elementType = type.getElementType();
  AluOp alu = aluOpFor(op.getKind());

  // Runs of adjacent reduced dims, last first: reducing a later run leaves
  // the dims of the earlier ones where they were.
  SmallVector<std::pair<int64_t, int64_t>> runs;
  for (int64_t d : dims) {
    if (!runs.empty() && runs.back().second == d)
      ++runs.back().second;
    else
      runs.push_back({d, d + 1});
  }
  std::reverse(runs.begin(), runs.end());

  Value in = hbmOf(op.getOperand());
  Value result = newTensor(op.getResult());
  if (runs.empty()) {
    // Nothing reduced: a copy (trn.reduce folds this away at -O1 and up).
    runs.push_back({0, 0});
  }
  for (auto [i, run] : llvm::enumerate(runs)) {
    auto [d0, d1] = run;
    int64_t outer = product(ArrayRef(shape).take_front(d0));
    int64_t reduced = product(ArrayRef(shape).slice(d0, d1 - d0));
    int64_t inner = product(ArrayRef(shape).drop_front(d1));
    shape.erase(shape.begin() + d0, shape.begin() + d1);
    bool last = i + 1 == runs.size();
    // Between passes, partial results stay in f32 (integers are reduced in
    // f32 by the engines anyway).
    Value out = last ? result
                     : kb.scratch(shape, elementType.isIntOrIndex()
                                             ? elementType
                                             : builder.getF32Type());
    Type inType = cast<HbmType>(in.getType()).getElementType();
    bool sumOnTensorEngine = op.getKind() == trn::ReduceKind::sum &&
                             (inType.isF32() || inType.isBF16()) && inner > 1;
    // Few long rows (a loss's sum over every element): each row splits
    // over up to 128 partitions that reduce their pieces in parallel, then
    // the pieces' results are reduced; on one partition per row, a 2M
    // element sum took 2 ms of one engine's time.
    int64_t pieces = 1;
    if (inner == 1 && outer * 2 <= kPartitions &&
        reduced >= 4 * kPartitions * kTileColumns)
      for (int64_t s = kPartitions / outer; s >= 32 && pieces == 1; --s)
        if (reduced % s == 0)
          pieces = s;
    if (pieces > 1) {
      Type partialType =
          elementType.isIntOrIndex() ? elementType : builder.getF32Type();
      Value partial = kb.scratch({outer * pieces}, partialType);
      int64_t pieceLength = reduced / pieces;
      reduceStrided(in, 0, outer * pieces, pieceLength, pieceLength, 1, partial,
                    0, 1, alu);
      reduceStrided(partial, 0, outer, pieces, pieces, 1, out, 0, 1, alu);
    } else if (inner == 1) {
      reduceStrided(in, 0, outer, reduced, reduced, 1, out, 0, 1, alu);
    } else if (reduced < kPartitions / 4 && inner % kPartitions == 0) {
      // A few slices of many elements (GQA's key and value gradients summed
      // over the query heads of a group): each slice fills every
      // partition, and the Vector Engine combines them; a ones-column
      // matmul would use as many partitions as slices.
      for (int64_t a = 0; a < outer; ++a)
        reduceSlices(in, a * reduced * inner, reduced, inner, out, a * inner,
                     alu);
    } else if (sumOnTensorEngine ||
               outer * ((inner + kPartitions - 1) / kPartitions) <=
                   inner * ((outer + kPartitions - 1) / kPartitions)) {
      for (int64_t a = 0; a < outer; ++a) {
        if (sumOnTensorEngine)
          sumRowsOnTensorEngine(in, a * reduced * inner, reduced, inner, out,
                                a * inner);
        else
          reduceStrided(in, a * reduced * inner, inner, 1, reduced, inner, out,
                        a * inner, 1, alu);
      }
    } else {
      for (int64_t c = 0; c < inner; ++c)
        reduceStrided(in, c, outer, reduced * inner, reduced, inner, out, c,
                      inner, alu);
    }
    in = out;
  }
  return success();
}
