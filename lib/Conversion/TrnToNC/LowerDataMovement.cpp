//===- LowerDataMovement.cpp - transposes, slices, pads, concatenations ---===//
//
// Ops that only move elements: transpose, broadcast_in_dim, slice, pad,
// concatenate and rotate_half. Most are strided copies from HBM to HBM
// through SBUF tiles (copy); a transpose of the last two dims of a float
// tensor goes through the Tensor Engine instead, a contiguous slice that
// only matmuls read is a window of its operand, and attention gradients
// that a concatenation reads are written into it in place
// (planConcatsInPlace).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

using namespace mlir;
using namespace mlir::trntonc;

/// Whether `perm` swaps the last two dims and keeps the others.
bool mlir::trntonc::isLastTwoSwap(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != d)
      return false;
  return true;
}

Value Lowering::transposeBlocks(ArrayRef<std::pair<Value, int64_t>> rowBlocks,
                                int64_t j0, int64_t jw) {
  int64_t width = 0;
  for (auto [tile, height] : rowBlocks)
    width += height;
  Value transposed =
      kb.tile(MemorySpace::psum, jw, {width}, builder.getF32Type());
  int64_t at = 0;
  for (auto [tile, height] : rowBlocks) {
    builder.create<TransposeOp>(kb.loc, kb.window(transposed, {jw, height}, at),
                                kb.window(tile, {height, jw}, j0));
    at += height;
  }
  return transposed;
}

/// [batches, rows, cols] -> [batches, cols, rows] through the Tensor
/// Engine: 128-row blocks load with contiguous runs of up to 512 columns,
/// 128x128 blocks transpose into PSUM, four side by side per bank, and
/// leave it with one eviction whose store writes runs of up to 512
/// elements. A strided DMA moves one element per buffer instead (the
/// backward of a sequence-parallel layer transposed [256, 8192] in 3 ms).
void Lowering::transposeOnTensorEngine(Value in, Value out, int64_t batches,
                                       int64_t rows, int64_t cols) {
  Type type = cast<HbmType>(in.getType()).getElementType();
  constexpr int64_t kSpan = 4 * kPartitions;
  int64_t evictions = 0;
  for (int64_t batch = 0; batch < batches; ++batch) {
    int64_t base = batch * rows * cols;
    for (int64_t r0 = 0; r0 < rows; r0 += kSpan) {
      int64_t rw = std::min(kSpan, rows - r0);
      for (int64_t c0 = 0; c0 < cols; c0 += kSpan) {
        int64_t cw = std::min(kSpan, cols - c0);
        SmallVector<std::pair<Value, int64_t>> blocks;
        for (int64_t b0 = r0; b0 < r0 + rw; b0 += kPartitions) {
          int64_t bh = std::min(kPartitions, r0 + rw - b0);
          Value t = kb.tile(MemorySpace::sbuf, bh, {cw}, type);
          kb.dma(t, kb.view(in, base + b0 * cols + c0, bh, cols, {cw}, {1}));
          blocks.push_back({t, bh});
        }
        for (int64_t j0 = 0; j0 < cw; j0 += kPartitions) {
          int64_t jw = std::min(kPartitions, cw - j0);
          Value transposed = transposeBlocks(blocks, j0, jw);
          Value result = kb.tile(MemorySpace::sbuf, jw, {rw}, type);
          if (evictions++ % 2 == 0)
            kb.scalarCopy(result, transposed);
          else
            builder.create<TensorCopyOp>(kb.loc, result, transposed,
                                         Engine::vector);
          kb.dma(
              kb.view(out, base + (c0 + j0) * rows + r0, jw, rows, {rw}, {1}),
              result);
        }
      }
    }
  }
}

LogicalResult Lowering::copy(Operation *op, ArrayRef<int64_t> iterShape,
                             const Side &src, const Side &dst) {
  // Partitions run over the second-to-last iteration dim, the free dim over
  // the last; the leading dims are unrolled.
  int64_t rank = iterShape.size();
  SmallVector<int64_t> shape(iterShape);
  Side s = src, d = dst;
  if (rank == 0) {
    shape = {1};
    s.strides = {0};
    d.strides = {0};
    rank = 1;
  }
  if (rank == 1 && s.strides[0] == 1 && d.strides[0] == 1 &&
      shape[0] >= kPartitions) {
    // A contiguous run (a bucket of gradients, flattened): on every
    // partition, a run of its own, and the rest after them.
    int64_t perPartition = shape[0] / kPartitions;
    int64_t main = perPartition * kPartitions;
    if (failed(copy(op, {kPartitions, perPartition},
                    Side{s.tensor, s.offset, {perPartition, 1}},
                    Side{d.tensor, d.offset, {perPartition, 1}})))
      return failure();
    if (main == shape[0])
      return success();
    return copy(op, {shape[0] - main}, Side{s.tensor, s.offset + main, {1}},
                Side{d.tensor, d.offset + main, {1}});
  }
  if (rank == 1) {
    shape.insert(shape.begin(), 1);
    s.strides.insert(s.strides.begin(), 0);
    d.strides.insert(d.strides.begin(), 0);
    rank = 2;
  }
  int64_t pDim = rank - 2, fDim = rank - 1;
  // The dim that fills the most partitions goes on them (the others are
  // unrolled): copying [8, 512, 128] into [512, 8, 128] as 512 transfers of
  // 8 partitions would use one DMA engine each.
  int64_t best = pDim;
  for (int64_t d = 0; d < pDim; ++d)
    if (std::min(shape[d], kPartitions) > std::min(shape[best], kPartitions))
      best = d;
  if (best != pDim) {
    std::swap(shape[best], shape[pDim]);
    std::swap(s.strides[best], s.strides[pDim]);
    std::swap(d.strides[best], d.strides[pDim]);
  }
  Type elementType = cast<HbmType>(src.tensor.getType()).getElementType();
  SmallVector<int64_t> outer(shape.begin(), shape.begin() + pDim);
  int64_t outerCount = product(outer);
  SmallVector<int64_t> outerStrides = rowMajorStrides(outer);
  for (int64_t linear = 0; linear < outerCount; ++linear) {
    int64_t srcBase = s.offset, dstBase = d.offset;
    for (int64_t i = 0; i < pDim; ++i) {
      int64_t index = (linear / outerStrides[i]) % outer[i];
      srcBase += index * s.strides[i];
      dstBase += index * d.strides[i];
    }
    for (int64_t p0 = 0; p0 < shape[pDim]; p0 += kPartitions)
      for (int64_t f0 = 0; f0 < shape[fDim]; f0 += kTileColumns) {
        int64_t rows = std::min(kPartitions, shape[pDim] - p0);
        int64_t width = std::min(kTileColumns, shape[fDim] - f0);
        Value t = kb.tile(MemorySpace::sbuf, rows, {width}, elementType);
        kb.dma(t, kb.view(s.tensor,
                          srcBase + p0 * s.strides[pDim] + f0 * s.strides[fDim],
                          rows, s.strides[pDim], {width}, {s.strides[fDim]}));
        kb.dma(kb.view(d.tensor,
                       dstBase + p0 * d.strides[pDim] + f0 * d.strides[fDim],
                       rows, d.strides[pDim], {width}, {d.strides[fDim]}),
               t);
      }
  }
  return success();
}

/// A slice that is one contiguous run of its operand's elements (a block
/// of whole rows: a fused projection's weight cut into q, k and v) and that
/// only matmuls read, as a window of the operand's HBM tensor: no copy. Null
/// otherwise (other readers might be updated in place).
Value Lowering::contiguousSlice(trn::SliceOp op) {
  auto in = cast<RankedTensorType>(op.getOperand().getType());
  auto out = cast<RankedTensorType>(op.getType());
  if (!in.hasStaticShape() || in.getRank() == 0 ||
      llvm::any_of(op.getStrides(), [](int64_t s) { return s != 1; }))
    return Value();
  if (!llvm::all_of(op->getUsers(), [](Operation *user) {
        if (auto fusion = dyn_cast<trn::FusionOp>(user))
          return isa<trn::DotGeneralOp>(fusion.getBody().front().front());
        return isa<trn::DotGeneralOp>(user);
      }))
    return Value();
  // Leading dims of extent 1, then one partial dim, then whole dims.
  ArrayRef<int64_t> shape = in.getShape(), start = op.getStart();
  int64_t rank = in.getRank(), partial = rank - 1;
  while (partial > 0 && out.getDimSize(partial) == shape[partial])
    --partial;
  for (int64_t d = 0; d < partial; ++d)
    if (out.getDimSize(d) != 1)
      return Value();
  SmallVector<int64_t> strides = rowMajorStrides(shape);
  int64_t offset = 0;
  for (int64_t d = 0; d < rank; ++d)
    offset += start[d] * strides[d];
  Value source = hbmOf(op.getOperand());
  if (!source)
    return Value();
  auto type = HbmType::get(builder.getContext(), out.getShape(),
                           cast<HbmType>(source.getType()).getElementType());
  return builder.create<HbmReshapeOp>(kb.loc, type, source,
                                      builder.getI64IntegerAttr(offset));
}

void Lowering::planConcatsInPlace(func::FuncOp graph) {
  graph.walk([&](trn::ConcatenateOp concat) {
    auto type = cast<RankedTensorType>(concat.getType());
    if (type.getRank() != 2 || concat.getDim() != 1)
      return;
    int64_t column = 0;
    for (Value input : concat.getInputs()) {
      int64_t width = cast<RankedTensorType>(input.getType()).getDimSize(1);
      auto reshape = input.getDefiningOp<trn::ReshapeOp>();
      Value gradient = reshape ? reshape.getOperand() : Value();
      auto shape = gradient
                       ? cast<RankedTensorType>(gradient.getType()).getShape()
                       : ArrayRef<int64_t>();
      // [B, S, H, D] rows as [B*S, H*D]: whole rows of the piece.
      if (input.hasOneUse() && gradient && gradient.hasOneUse() &&
          gradient.getDefiningOp<trn::AttentionGradOp>() && shape.size() == 4 &&
          shape[0] * shape[1] == type.getDimSize(0) &&
          shape[2] * shape[3] == width && !directOutputs.count(gradient))
        concatSlots[gradient] = {concat.getResult(), column,
                                 type.getDimSize(1)};
      column += width;
    }
  });
}

/// A swap of the last two dims of a float tensor on the Tensor Engine, any
/// other permutation as a strided copy.
LogicalResult Lowering::lowerTranspose(trn::TransposeOp op) {
  auto in = cast<RankedTensorType>(op.getOperand().getType());
  auto outType = cast<RankedTensorType>(op.getType());
  if (isLastTwoSwap(op.getPerm()) &&
      (in.getElementType().isBF16() || in.getElementType().isF16() ||
       in.getElementType().isF32())) {
    int64_t rows = in.getShape()[in.getRank() - 2];
    int64_t cols = in.getShape().back();
    transposeOnTensorEngine(hbmOf(op.getOperand()), newTensor(op.getResult()),
                            product(in.getShape().drop_back(2)), rows, cols);
    return success();
  }
  SmallVector<int64_t> inStrides = rowMajorStrides(in.getShape());
  Side src{hbmOf(op.getOperand()), 0, {}};
  for (int64_t d : op.getPerm())
    src.strides.push_back(inStrides[d]);
  Side dst{newTensor(op.getResult()), 0, rowMajorStrides(outType.getShape())};
  return copy(op, outType.getShape(), src, dst);
}

/// A copy that reads broadcast dims with stride 0.
LogicalResult Lowering::lowerBroadcastInDim(trn::BroadcastInDimOp op) {
  auto in = cast<RankedTensorType>(op.getOperand().getType());
  auto outType = cast<RankedTensorType>(op.getType());
  SmallVector<int64_t> inStrides = rowMajorStrides(in.getShape());
  Side src{hbmOf(op.getOperand()), 0,
           SmallVector<int64_t>(outType.getRank(), 0)};
  for (auto [k, d] : llvm::enumerate(op.getDims()))
    if (in.getDimSize(k) != 1)
      src.strides[d] = inStrides[k];
  Side dst{newTensor(op.getResult()), 0, rowMajorStrides(outType.getShape())};
  return copy(op, outType.getShape(), src, dst);
}

LogicalResult Lowering::lowerRotateHalf(trn::RotateHalfOp op) {
  // Outside a group (at -O0, or a hand-written graph): per row tile
  // and half-row chunk, the upper half negated into the lower and the
  // lower copied into the upper.
  if (failed(checkTileable(op)))
    return failure();
  auto type = cast<RankedTensorType>(op.getType());
  int64_t cols = type.getShape().back(), half = cols / 2;
  int64_t numRows = type.getNumElements() / cols;
  Type elementType = type.getElementType();
  Value in = hbmOf(op.getOperand()), out = newTensor(op.getResult());
  for (int64_t r0 = 0; r0 < numRows; r0 += kPartitions)
    for (int64_t c0 = 0; c0 < half; c0 += kTileColumns) {
      int64_t rows = std::min(kPartitions, numRows - r0);
      int64_t width = std::min(kTileColumns, half - c0);
      Value upper = kb.tile(MemorySpace::sbuf, rows, {width}, elementType);
      kb.dma(upper, kb.rowTile(in, cols, r0, rows, half + c0, width));
      Value negated = kb.tile(MemorySpace::sbuf, rows, {width}, elementType);
      builder.create<ActivationOp>(kb.loc, ActivationFunc::copy, negated, upper,
                                   Value(), Value(), Value(),
                                   llvm::APFloat(-1.0f), llvm::APFloat(0.0f));
      kb.dma(kb.rowTile(out, cols, r0, rows, c0, width), negated);
      Value lower = kb.tile(MemorySpace::sbuf, rows, {width}, elementType);
      kb.dma(lower, kb.rowTile(in, cols, r0, rows, c0, width));
      kb.dma(kb.rowTile(out, cols, r0, rows, half + c0, width), lower);
    }
  return success();
}

/// A window of the operand (contiguousSlice) or a strided copy.
LogicalResult Lowering::lowerSlice(trn::SliceOp op) {
  auto in = cast<RankedTensorType>(op.getOperand().getType());
  auto outType = cast<RankedTensorType>(op.getType());
  SmallVector<int64_t> inStrides = rowMajorStrides(in.getShape());
  if (Value window = contiguousSlice(op)) {
    values[op.getResult()] = window;
    return success();
  }
  Side src{hbmOf(op.getOperand()), 0, {}};
  for (int64_t d = 0; d < in.getRank(); ++d) {
    src.offset += op.getStart()[d] * inStrides[d];
    src.strides.push_back(inStrides[d] * op.getStrides()[d]);
  }
  Side dst{newTensor(op.getResult()), 0, rowMajorStrides(outType.getShape())};
  return copy(op, outType.getShape(), src, dst);
}

LogicalResult Lowering::lowerPad(trn::PadOp op) {
  if (failed(checkTileable(op)))
    return failure();
  // Fill the whole result, then copy the operand into its window (the
  // sync pass orders the two writes).
  auto in = cast<RankedTensorType>(op.getOperand().getType());
  auto outType = cast<RankedTensorType>(op.getType());
  Value out = newTensor(op.getResult());
  int64_t cols = outType.getShape().empty() ? 1 : outType.getShape().back();
  forEachTile(outType.getShape(), [&](int64_t r0, int64_t rows, int64_t c0,
                                      int64_t width) {
    Value t =
        kb.tile(MemorySpace::sbuf, rows, {width}, outType.getElementType());
    builder.create<MemsetOp>(
        kb.loc, t,
        llvm::APFloat(static_cast<float>(op.getValue().convertToDouble())),
        Engine::vector);
    kb.dma(kb.rowTile(out, cols, r0, rows, c0, width), t);
  });
  if (in.getNumElements() == 0)
    return success();
  SmallVector<int64_t> outStrides = rowMajorStrides(outType.getShape());
  Side dst{out, 0, outStrides};
  for (auto [d, low] : llvm::enumerate(op.getLow()))
    dst.offset += low * outStrides[d];
  Side src{hbmOf(op.getOperand()), 0, rowMajorStrides(in.getShape())};
  return copy(op, in.getShape(), src, dst);
}

/// Each input copied into its place (but those written there in place).
LogicalResult Lowering::lowerConcatenate(trn::ConcatenateOp op) {
  auto outType = cast<RankedTensorType>(op.getType());
  SmallVector<int64_t> outStrides = rowMajorStrides(outType.getShape());
  // Inputs written in place (concatSlots) made the tensor already.
  Value out = values.lookup(op.getResult());
  if (!out)
    out = newTensor(op.getResult());
  int64_t position = 0;
  for (Value input : op.getInputs()) {
    auto in = cast<RankedTensorType>(input.getType());
    if (hbmOf(input) == out) {
      position += in.getDimSize(op.getDim());
      continue;
    }
    Side src{hbmOf(input), 0, rowMajorStrides(in.getShape())};
    Side dst{out, position * outStrides[op.getDim()], outStrides};
    if (failed(copy(op, in.getShape(), src, dst)))
      return failure();
    position += in.getDimSize(op.getDim());
  }
  return success();
}
