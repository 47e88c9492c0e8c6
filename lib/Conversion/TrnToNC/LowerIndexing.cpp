//===- LowerIndexing.cpp - gather, scatter_add, iota, i64 conversions -----===//
//
// trn.gather and trn.scatter_add move rows, or single elements of rows, at
// the positions an index tensor gives, through indirect DMA (nc.dma_gather,
// nc.dma_scatter_add); trn.iota writes indices with GpSimd's iota; the
// i32 <-> i64 conversions at a graph's edges move the low words of i64
// index tensors.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

using namespace mlir;
using namespace mlir::trntonc;

Value Lowering::loadIndices(Value indices, int64_t i0, int64_t count) {
  auto type = cast<HbmType>(indices.getType());
  int64_t words = type.getElementType().isSignlessInteger(64) ? 2 : 1;
  Type i32 = builder.getI32Type();
  SmallVector<int64_t> shape{count, 1};
  auto windowType =
      TileType::get(builder.getContext(), MemorySpace::hbm, shape, i32);
  Value window = builder.create<ViewOp>(
      kb.loc, windowType, indices, builder.getI64IntegerAttr(0),
      builder.getI64IntegerAttr(i0 * words), builder.getI64IntegerAttr(words),
      builder.getDenseI64ArrayAttr({1}));
  Value tile = kb.tile(MemorySpace::sbuf, count, {1}, i32);
  kb.dma(tile, window);
  return tile;
}

Value Lowering::loadRowElementIndices(Value indices, int64_t i0, int64_t count,
                                      int64_t classes) {
  Type i32 = builder.getI32Type();
  Value ids = loadIndices(indices, i0, count);
  Value rowStarts = kb.tile(MemorySpace::sbuf, count, {1}, i32);
  builder.create<IotaOp>(kb.loc, rowStarts, i0 * classes, classes,
                         ArrayRef<int64_t>{0});
  Value flat = kb.tile(MemorySpace::sbuf, count, {1}, i32);
  builder.create<TensorTensorOp>(kb.loc, AluOp::add, flat, rowStarts, ids,
                                 Engine::gpsimd);
  return flat;
}

Value Lowering::asTable(Value hbm, int64_t rows, int64_t rowElements) {
  auto type = cast<HbmType>(hbm.getType());
  if (type.getShape().size() == 2 && type.getShape()[0] == rows &&
      type.getShape()[1] == rowElements)
    return hbm;
  auto tableType = HbmType::get(builder.getContext(), {rows, rowElements},
                                type.getElementType());
  return builder.create<HbmReshapeOp>(kb.loc, tableType, hbm);
}

/// iota: a tile's index along `dim` is affine in (partition, free index)
/// when the tile stays inside one block of rows sharing the leading index.
/// i64 tensors exist only at the graph's edges (trn-narrow-i64 computes in
/// i32): an i64 input is read as its low i32 words, and an i32 result is
/// written as i64 by storing its value as the low word and its sign (0 or
/// -1) as the high word.
LogicalResult Lowering::lowerConvertI64(trn::ConvertOp op) {
  auto inType = cast<RankedTensorType>(op.getOperand().getType());
  auto outType = cast<RankedTensorType>(op.getType());
  Type i32 = builder.getI32Type();
  bool widening = outType.getElementType().isSignlessInteger(64);
  Type narrow = widening ? inType.getElementType() : outType.getElementType();
  if (!narrow.isSignlessInteger(32))
    return op.emitError("'trn.convert' between i64 and ")
           << narrow
           << " is not lowered to NeuronCore kernels (the engines have no "
              "64-bit integers; run trn-narrow-i64 so that only i32 <-> i64 "
              "conversions remain)";
  Value in = hbmOf(op.getOperand());
  Value out = newTensor(op.getResult());
  int64_t cols = outType.getShape().empty() ? 1 : outType.getShape().back();
  auto words = [&](Value hbm, int64_t offset, int64_t rows, int64_t width) {
    SmallVector<int64_t> shape{rows, width};
    auto type =
        TileType::get(builder.getContext(), MemorySpace::hbm, shape, i32);
    return builder
        .create<ViewOp>(kb.loc, type, hbm, builder.getI64IntegerAttr(0),
                        builder.getI64IntegerAttr(offset),
                        builder.getI64IntegerAttr(2 * cols),
                        builder.getDenseI64ArrayAttr({2}))
        .getResult();
  };
  forEachTile(outType.getShape(), [&](int64_t r0, int64_t rows, int64_t c0,
                                      int64_t width) {
    Value t = kb.tile(MemorySpace::sbuf, rows, {width}, i32);
    int64_t element = r0 * cols + c0;
    if (!widening) {
      kb.dma(t, words(in, 2 * element, rows, width));
      kb.dma(kb.rowTile(out, cols, r0, rows, c0, width), t);
      return;
    }
    kb.dma(t, kb.rowTile(in, cols, r0, rows, c0, width));
    // high word = (x < 0) * -1
    Value high = kb.tile(MemorySpace::sbuf, rows, {width}, i32);
    builder.create<TensorScalarOp>(kb.loc, AluOp::is_less, AluOp::multiply,
                                   high, t, Value(), Value(),
                                   llvm::APFloat(0.0f), llvm::APFloat(-1.0f),
                                   false, false, Engine::vector);
    kb.dma(words(out, 2 * element, rows, width), t);
    kb.dma(words(out, 2 * element + 1, rows, width), high);
  });
  return success();
}

LogicalResult Lowering::lowerIota(trn::IotaOp op) {
  if (failed(checkTileable(op)))
    return failure();
  auto type = cast<RankedTensorType>(op.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = shape.size(), dim = op.getDim();
  int64_t cols = shape.back(), rows = product(shape.drop_back());
  Value out = newTensor(op.getResult());
  // Rows per step of the index along `dim` (for dim < rank - 1).
  int64_t rowsPerStep =
      dim < rank - 1 ? product(shape.slice(dim + 1, rank - 1 - dim - 1)) : 0;
  for (int64_t r0 = 0; r0 < rows;) {
    int64_t chunk = std::min(kPartitions, rows - r0);
    int64_t base = 0, perPartition = 0;
    if (dim < rank - 1) {
      int64_t extent = shape[dim];
      if (rowsPerStep == 1) {
        // Consecutive rows step the index: stay inside one wrap-around.
        chunk = std::min(chunk, extent - r0 % extent);
        base = r0 % extent;
        perPartition = 1;
      } else {
        chunk = std::min(chunk, rowsPerStep - r0 % rowsPerStep);
        base = (r0 / rowsPerStep) % extent;
      }
    }
    for (int64_t c0 = 0; c0 < cols; c0 += kTileColumns) {
      int64_t width = std::min(kTileColumns, cols - c0);
      Value t =
          kb.tile(MemorySpace::sbuf, chunk, {width}, type.getElementType());
      bool alongColumns = dim == rank - 1;
      builder.create<IotaOp>(kb.loc, t, alongColumns ? c0 : base,
                             alongColumns ? 0 : perPartition,
                             ArrayRef<int64_t>{alongColumns ? 1 : 0});
      kb.dma(kb.rowTile(out, cols, r0, chunk, c0, width), t);
    }
    r0 += chunk;
  }
  return success();
}

/// gather along axis 0 (embedding rows), or along the last axis with all
/// leading dims batched (picking one element per row, e.g. label logits),
/// through indirect DMA.
LogicalResult Lowering::lowerGather(trn::GatherOp op) {
  auto operandType = cast<RankedTensorType>(op.getOperand().getType());
  auto indexType = cast<RankedTensorType>(op.getIndices().getType());
  auto resultType = cast<RankedTensorType>(op.getType());
  if (operandType.getElementType().isSignlessInteger(64))
    return op.emitError("'trn.gather' of i64 tensors is not lowered yet");
  int64_t axis = op.getAxis(), batchDims = op.getBatchDims();
  int64_t rank = operandType.getRank();
  Value out = newTensor(op.getResult());
  Value indices = hbmOf(op.getIndices());
  Type elementType = operandType.getElementType();
  int64_t count = product(indexType.getShape());
  if (axis == 0 && batchDims == 0) {
    int64_t rowElements = product(operandType.getShape().drop_front());
    if (rowElements * 4 > 160 * 1024)
      return op.emitError("'trn.gather' rows of ")
             << rowElements << " elements do not fit in SBUF; not lowered yet";
    Value table =
        asTable(hbmOf(op.getOperand()), operandType.getDimSize(0), rowElements);
    for (int64_t i0 = 0; i0 < count; i0 += kPartitions) {
      int64_t n = std::min(kPartitions, count - i0);
      Value ids = loadIndices(indices, i0, n);
      Value rows = kb.tile(MemorySpace::sbuf, n, {rowElements}, elementType);
      builder.create<DmaGatherOp>(kb.loc, rows, table, ids, 0);
      kb.dma(kb.view(out, i0 * rowElements, n, rowElements, {rowElements}, {1}),
             rows);
    }
    return success();
  }
  if (axis == rank - 1 && batchDims == rank - 1 &&
      indexType.getRank() == batchDims) {
    // result[b] = operand[b, indices[b]]: element b * C + indices[b] of the
    // operand seen as a table of single elements.
    int64_t classes = operandType.getShape().back();
    int64_t batch = product(operandType.getShape().drop_back());
    Value table = asTable(hbmOf(op.getOperand()), batch * classes, 1);
    for (int64_t i0 = 0; i0 < batch; i0 += kPartitions) {
      int64_t n = std::min(kPartitions, batch - i0);
      Value flat = loadRowElementIndices(indices, i0, n, classes);
      Value picked = kb.tile(MemorySpace::sbuf, n, {1}, elementType);
      builder.create<DmaGatherOp>(kb.loc, picked, table, flat, 0);
      kb.dma(kb.view(out, i0, n, 1, {1}, {1}), picked);
    }
    return success();
  }
  (void)resultType;
  return op.emitError("'trn.gather' is lowered along axis 0, or along the "
                      "last axis with every other dim batched; this form is "
                      "not lowered yet");
}

/// scatter_add along axis 0: the result starts as a copy of the operand,
/// then every block of update rows is added at its indices by an indirect
/// DMA that accumulates (repeated indices add up).
/// Whether `value` may be updated in place by its one user: an
/// intermediate this function computes into scratch of its own (not an
/// argument, an output or a view of another tensor).
static bool ownsScratch(Value value, Value hbm) {
  return value.getDefiningOp() && value.hasOneUse() &&
         !isa<trn::ReshapeOp>(value.getDefiningOp()) &&
         hbm.getDefiningOp<HbmAllocOp>();
}

Value Lowering::scatterTarget(trn::ScatterAddOp op) {
  Value source = hbmOf(op.getOperand());
  // The operand is dead after the scatter: add into its tensor instead of
  // copying it (a cross-entropy's gradient, an embedding's zeros). A result
  // returned as an output had its operand computed there (see run).
  if (!directOutputs.count(op.getResult()) &&
      ownsScratch(op.getOperand(), source)) {
    values[op.getResult()] = source;
    return source;
  }
  Value out = newTensor(op.getResult());
  if (rootOf(out) == rootOf(source))
    return out;
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(op.getOperand().getType()).getShape());
  Side src{source, 0, rowMajorStrides(shape)};
  Side dst{out, 0, rowMajorStrides(shape)};
  if (failed(copy(op, shape, src, dst)))
    return Value();
  return out;
}

LogicalResult Lowering::lowerScatterAdd(trn::ScatterAddOp op) {
  auto operandType = cast<RankedTensorType>(op.getOperand().getType());
  auto indexType = cast<RankedTensorType>(op.getIndices().getType());
  int64_t rank = operandType.getRank();
  bool alongRows = op.getAxis() == 0 && op.getBatchDims() == 0;
  bool perRowElement = static_cast<int64_t>(op.getAxis()) == rank - 1 &&
                       static_cast<int64_t>(op.getBatchDims()) == rank - 1 &&
                       indexType.getRank() == rank - 1;
  if (!alongRows && !perRowElement)
    return op.emitError("'trn.scatter_add' is lowered along axis 0, or along "
                        "the last axis with every other dim batched; this "
                        "form is not lowered yet");
  if (operandType.getElementType().isSignlessInteger(64))
    return op.emitError("'trn.scatter_add' of i64 tensors is not lowered yet");
  if (perRowElement) {
    // out[b, indices[b]] += updates[b]: element b * C + indices[b] of the
    // result seen as a table of single elements.
    int64_t classes = operandType.getShape().back();
    int64_t batch = product(operandType.getShape().drop_back());
    Value out = scatterTarget(op);
    if (!out)
      return failure();
    Value table = asTable(out, batch * classes, 1);
    Value updates = hbmOf(op.getUpdates());
    Value indices = hbmOf(op.getIndices());
    for (int64_t i0 = 0; i0 < batch; i0 += kPartitions) {
      int64_t n = std::min(kPartitions, batch - i0);
      Value flat = loadRowElementIndices(indices, i0, n, classes);
      Value values =
          kb.tile(MemorySpace::sbuf, n, {1}, operandType.getElementType());
      kb.dma(values, kb.view(updates, i0, n, 1, {1}, {1}));
      builder.create<DmaScatterAddOp>(kb.loc, table, values, flat, 0);
    }
    return success();
  }
  int64_t rows = operandType.getDimSize(0);
  int64_t rowElements = product(operandType.getShape().drop_front());
  Value out = scatterTarget(op);
  if (!out)
    return failure();
  Value table = asTable(out, rows, rowElements);
  Value updates = hbmOf(op.getUpdates());
  Value indices = hbmOf(op.getIndices());
  int64_t count = product(indexType.getShape());
  for (int64_t i0 = 0; i0 < count; i0 += kPartitions) {
    int64_t n = std::min(kPartitions, count - i0);
    Value ids = loadIndices(indices, i0, n);
    Value block = kb.tile(MemorySpace::sbuf, n, {rowElements},
                          operandType.getElementType());
    kb.dma(block, kb.view(updates, i0 * rowElements, n, rowElements,
                          {rowElements}, {1}));
    builder.create<DmaScatterAddOp>(kb.loc, table, block, ids, 0);
  }
  return success();
}
