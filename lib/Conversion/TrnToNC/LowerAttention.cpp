//===- LowerAttention.cpp - attention as flash-style kernels --------------===//
//
// trn.attention and trn.attention_grad become one kernel each whose scores
// and probabilities live only in SBUF and PSUM, block by block, as in
// FlashAttention: per head, K^T and V stay resident; per block of 128
// queries the scores of up to 512 keys at a time are one matmul into a PSUM
// bank, the softmax runs online (a running row maximum, the sum of
// exponentials and the output accumulator rescaled whenever the maximum
// grows), and P V accumulates over 128-key chunks of P^T. The backward pass
// recomputes P from the saved log-sum-exp, one 128 x 128 block at a time.
// Blocks entirely above the diagonal of a causal mask are skipped; the
// diagonal blocks are masked with affine_select on GpSimd.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "trn/Dialect/Trn/Utils/FlashAttention.h"

#include <deque>
#include <limits>

using namespace mlir;
using namespace mlir::trntonc;

namespace {

/// Query blocks whose key loops the forward kernel interleaves.
constexpr int64_t kQueryGroup = 4;
/// (Query block, key block) pairs the backward kernel interleaves.
constexpr int64_t kGradGroup = 4;

/// A scalar operand of tensor_scalar or activation: a [P, 1] fp32 column or
/// an immediate.
struct Scalar {
  Scalar(Value column) : column(column) {}
  Scalar(double immediate) : immediate(immediate) {}
  Value column;
  double immediate = 0.0;
};

class ChunkedRows;

/// Instruction helpers shared by the forward and backward kernels.
class AttentionEmitter {
public:
  explicit AttentionEmitter(KernelBuilder &kb)
      : kb(kb), b(kb.b), f32(kb.b.getF32Type()) {}

  Value sbuf(int64_t partitions, int64_t columns, Type type) {
    return kb.tile(MemorySpace::sbuf, partitions, {columns}, type);
  }
  Value psum(int64_t partitions, int64_t columns) {
    return kb.tile(MemorySpace::psum, partitions, {columns}, f32);
  }
  Value column(int64_t partitions) { return sbuf(partitions, 1, f32); }

  /// dst = (src op0 s0) op1 s1 on the Vector Engine.
  void tensorScalar(Value dst, Value src, AluOp op0, Scalar s0,
                    AluOp op1 = AluOp::bypass, Scalar s1 = 0.0) {
    b.create<TensorScalarOp>(kb.loc, op0, op1, dst, src, s0.column, s1.column,
                             llvm::APFloat(static_cast<float>(s0.immediate)),
                             llvm::APFloat(static_cast<float>(s1.immediate)),
                             false, false, Engine::vector);
  }
  /// dst = func(src * scale + bias) on the Scalar Engine, with the row sums
  /// of the results in `rowSum` when given. `bias` is a column (or none).
  void activation(ActivationFunc func, Value dst, Value src, Scalar scale,
                  Value bias = Value(), Value rowSum = Value()) {
    b.create<ActivationOp>(kb.loc, func, dst, src, scale.column, bias, rowSum,
                           llvm::APFloat(static_cast<float>(scale.immediate)),
                           llvm::APFloat(0.0f));
  }
  void tensorTensor(AluOp op, Value dst, Value lhs, Value rhs) {
    b.create<TensorTensorOp>(kb.loc, op, dst, lhs, rhs, Engine::vector);
  }
  void reduce(AluOp op, Value dst, Value src) {
    b.create<TensorReduceOp>(kb.loc, op, dst, src, false, Engine::vector);
  }
  void matmul(Value dst, Value stationary, Value moving, bool accumulate) {
    b.create<MatmulOp>(kb.loc, dst, stationary, moving, accumulate);
  }
  /// dst = src^T through a PSUM tile, evicted by the Vector and the Scalar
  /// Engine in turn (on the Vector Engine alone, short heads' transposes
  /// made it the bound: 180 us of a BERT-large layer's 264 us forward, the
  /// Scalar Engine 105).
  void transposeInto(Value dst, Value src) {
    auto type = cast<TileType>(src.getType());
    Value transposed = psum(type.getFreeElements(), type.getPartitions());
    b.create<TransposeOp>(kb.loc, transposed, src);
    if (transposeEvictions++ % 2)
      kb.scalarCopy(dst, transposed);
    else
      b.create<TensorCopyOp>(kb.loc, dst, transposed, Engine::vector);
  }
  int64_t transposeEvictions = 0;
  /// All rows of `rows` (count rows of `cols` elements) transposed into
  /// one [cols, count] tile, 128 rows at a time on the Tensor Engine.
  Value transposed(const ChunkedRows &rows, int64_t count, int64_t cols,
                   Type type);
  /// Hides key j from query i (fills `fill`: -inf for scores, 0 for
  /// probabilities) where j > i, for a [queries, keys] tile whose first row
  /// is query q0 and first column key k0.
  void maskAboveDiagonal(Value tile, int64_t q0, int64_t k0, float fill) {
    b.create<AffineSelectOp>(
        kb.loc, tile, tile, CompareOpAttr::get(b.getContext(), CompareOp::ge),
        b.getI64IntegerAttr(q0 - k0), b.getI64IntegerAttr(1),
        b.getDenseI64ArrayAttr({-1}), b.getF32FloatAttr(fill));
  }

  KernelBuilder &kb;
  OpBuilder &b;
  Type f32;
};

/// Where one operand of an attention op keeps each head's rows: row `r` of
/// head `h` (its `cols` elements contiguous) starts at base(h) + r *
/// rowStride. Canonical [heads..., S, D] operands have rowStride = D; with
/// `seq_dim` ([B, S, H, D]) a head's rows are H * D apart. seqDim = rank - 1
/// describes lse ([heads..., S]): one element per row.
struct HeadRows {
  HeadRows(Value hbm, RankedTensorType type, int64_t seqDim)
      : HeadRows(hbm, type, seqDim, rowMajorStrides(type.getShape()), 0) {}
  /// The operand at element `base` of `hbm`, its dims `strides` apart.
  HeadRows(Value hbm, RankedTensorType type, int64_t seqDim,
           ArrayRef<int64_t> strides, int64_t base)
      : hbm(hbm), base(base) {
    int64_t rank = type.getRank();
    cols = seqDim == rank - 1 ? 1 : type.getDimSize(rank - 1);
    rowStride = strides[seqDim];
    for (int64_t d = 0; d < rank - 1; ++d)
      if (d != seqDim) {
        headSizes.push_back(type.getDimSize(d));
        headStrides.push_back(strides[d]);
      }
  }
  /// Element offset of row `row` of head `head` (heads numbered row-major
  /// over the batch dims).
  int64_t offset(int64_t head, int64_t row) const {
    int64_t result = base + row * rowStride;
    for (int64_t i = static_cast<int64_t>(headSizes.size()) - 1; i >= 0; --i) {
      result += (head % headSizes[i]) * headStrides[i];
      head /= headSizes[i];
    }
    return result;
  }
  /// Rows [row0, row0 + count) of head `head` as an HBM view with the rows
  /// on partitions.
  Value rows(KernelBuilder &kb, int64_t head, int64_t row0,
             int64_t count) const {
    return kb.view(hbm, offset(head, row0), count, rowStride, {cols}, {1});
  }
  /// Rows [0, count) of heads h0 ..< h0 + heads, `step` elements apart
  /// (evenHeadStep), as one [count, heads, cols] HBM view: one DMA for a
  /// group of short heads.
  Value headGroup(KernelBuilder &kb, int64_t h0, int64_t heads, int64_t step,
                  int64_t count) const {
    return kb.view(hbm, offset(h0, 0), count, rowStride, {heads, cols},
                   {step, 1});
  }

  Value hbm;
  int64_t base = 0, cols = 0, rowStride = 0;
  SmallVector<int64_t> headSizes, headStrides;
};

/// Rows [row0, row0 + count) of one head of an attention operand, loaded to
/// SBUF in chunks of 128 rows on partitions: the full chunks with one DMA
/// into a [128, full, cols] tile, the remainder into a [tail, cols] tile.
class ChunkedRows {
public:
  ChunkedRows(KernelBuilder &kb, const HeadRows &layout, int64_t head,
              int64_t row0, int64_t count, Type type)
      : kb(kb), cols(layout.cols), fullChunks(count / kPartitions),
        tailRows(count % kPartitions) {
    if (fullChunks > 0) {
      full = kb.tile(MemorySpace::sbuf, kPartitions, {fullChunks, cols}, type);
      // One DMA for all full chunks (HBM strides are not 16-bit bound).
      kb.dma(full, kb.view(layout.hbm, layout.offset(head, row0), kPartitions,
                           layout.rowStride, {fullChunks, cols},
                           {kPartitions * layout.rowStride, 1}));
    }
    if (tailRows > 0) {
      tail = kb.tile(MemorySpace::sbuf, tailRows, {cols}, type);
      kb.dma(tail,
             layout.rows(kb, head, row0 + fullChunks * kPartitions, tailRows));
    }
  }
  /// At most 128 rows already in SBUF (a window of a tile loaded for a
  /// group of heads).
  ChunkedRows(KernelBuilder &kb, Value rows, int64_t count, int64_t cols)
      : kb(kb), cols(cols), fullChunks(count == kPartitions ? 1 : 0),
        tailRows(count == kPartitions ? 0 : count) {
    (fullChunks ? full : tail) = rows;
  }
  int64_t chunks() const { return fullChunks + (tailRows > 0 ? 1 : 0); }
  int64_t rowsOf(int64_t chunk) const {
    return chunk < fullChunks ? kPartitions : tailRows;
  }
  /// Chunk `chunk` as a [rows, cols] tile.
  Value chunk(int64_t chunk) const {
    if (chunk == fullChunks)
      return tail;
    return kb.window(full, {kPartitions, cols}, chunk * cols);
  }
  /// The first `rows` rows of chunk `chunk`.
  Value chunkRows(int64_t chunk, int64_t rows) const {
    return kb.window(this->chunk(chunk), {rows, cols}, 0);
  }

private:
  KernelBuilder &kb;
  int64_t cols, fullChunks, tailRows;
  Value full, tail;
};

/// The distance between heads h0 ..< h0 + count of `layout` when they are
/// evenly spaced (so that one DMA moves all of them), else none.
std::optional<int64_t> evenHeadStep(const HeadRows &layout, int64_t h0,
                                    int64_t count) {
  if (count < 2)
    return std::nullopt;
  int64_t base = layout.offset(h0, 0);
  int64_t step = layout.offset(h0 + 1, 0) - base;
  for (int64_t i = 2; i < count; ++i)
    if (layout.offset(h0 + i, 0) - base != i * step)
      return std::nullopt;
  return step;
}

/// Rows [0, rows) of `count` consecutive heads from `h0` with one DMA, as one
/// [rows, cols] window per head; none when the heads are not evenly spaced
/// (or not short). Short heads' operands come in 16 KiB pieces, and one
/// transfer per piece kept a backward pass's DMA engines busier than its
/// compute.
SmallVector<Value> loadHeadGroup(KernelBuilder &kb, const HeadRows &layout,
                                 int64_t h0, int64_t count, int64_t rows,
                                 Type type) {
  std::optional<int64_t> step = evenHeadStep(layout, h0, count);
  if (!step || rows > kPartitions)
    return {};
  Value tile = kb.tile(MemorySpace::sbuf, rows, {count, layout.cols}, type);
  kb.dma(tile, layout.headGroup(kb, h0, count, *step, rows));
  SmallVector<Value> heads;
  for (int64_t i = 0; i < count; ++i)
    heads.push_back(kb.window(tile, {rows, layout.cols}, i * layout.cols));
  return heads;
}

/// Heads loaded (and, in the forward, run phase by phase and stored)
/// together when each is one block of queries and of keys: 8 against 4 or
/// 16 gave the BERT micro-step 118.7 ms against 119.6 or 118.8.
constexpr int64_t kHeadGroup = 8;

/// Rows [0, count) of head `head`: its window of `group` (loadHeadGroup for
/// the group of kHeadGroup heads it belongs to), else loaded alone.
ChunkedRows rowsOfHead(KernelBuilder &kb, ArrayRef<Value> group,
                       const HeadRows &layout, int64_t head, int64_t count,
                       Type type) {
  if (!group.empty())
    return ChunkedRows(kb, group[head % kHeadGroup], count, layout.cols);
  return ChunkedRows(kb, layout, head, 0, count, type);
}

Value AttentionEmitter::transposed(const ChunkedRows &rows, int64_t count,
                                   int64_t cols, Type type) {
  Value result = sbuf(cols, count, type);
  for (int64_t c = 0; c < rows.chunks(); ++c)
    transposeInto(kb.window(result, {cols, rows.rowsOf(c)}, c * kPartitions),
                  rows.chunk(c));
  return result;
}

} // namespace

LogicalResult Lowering::lowerAttention(trn::AttentionOp op) {
  if (std::string why = trn::flashAttentionBlocker(op); !why.empty())
    return op.emitError("'trn.attention' cannot be lowered as one fused "
                        "kernel (")
           << why << "); run trn-decompose-composites first";
  trn::AttentionShape shape = trn::attentionShape(op);
  Type matmulType = trn::attentionMatmulType(op);
  Type outType =
      cast<RankedTensorType>(op.getOutput().getType()).getElementType();
  auto layoutOf = [&](Value operand, Value hbm) {
    return HeadRows(hbm, cast<RankedTensorType>(operand.getType()),
                    shape.seqDim);
  };
  HeadRows query = layoutOf(op.getQuery(), hbmOf(op.getQuery())),
           key = layoutOf(op.getKey(), hbmOf(op.getKey())),
           value = layoutOf(op.getValue(), hbmOf(op.getValue())),
           out = layoutOf(op.getOutput(), newTensor(op.getOutput()));
  // lse is [heads..., S] whatever the operands' layout.
  Value lse = newTensor(op.getLse());
  double scale = op.getScale().convertToDouble();
  bool causal = op.getCausal();
  Type probsType = matmulType.isF32() ? matmulType : builder.getF16Type();
  int64_t queries = shape.queries, keys = shape.keys, d = shape.headSize,
          dv = shape.valueSize;
  AttentionEmitter e(kb);

  // One block of up to 128 queries: its Q^T and the running state of its
  // online softmax: -max (the exponentials' bias), the sum of exponentials
  // and the unnormalised output, all fp32.
  struct QueryBlock {
    int64_t head, q0, qw, keyEnd;
    Value queryT, negMax, sum, acc;
    /// The head's K^T and V (in SBUF for the head).
    Value keyT;
    const ChunkedRows *valueRows = nullptr;
  };
  // Short heads (one block of queries and of keys) load Q, K and V four
  // heads at a time.
  bool shortHeads = queries <= kPartitions && keys <= kPartitions;
  SmallVector<Value> groupQuery, groupKey, groupValue;
  auto beginBlock = [&](int64_t head, int64_t q0) {
    QueryBlock block;
    block.head = head;
    block.q0 = q0;
    block.qw = std::min(kPartitions, queries - q0);
    block.keyEnd = causal ? std::min(keys, q0 + block.qw) : keys;
    Value queryRows =
        groupQuery.empty() ? Value() : groupQuery[head % kHeadGroup];
    if (!queryRows) {
      queryRows = e.sbuf(block.qw, d, matmulType);
      kb.dma(queryRows, query.rows(kb, head, q0, block.qw));
    }
    block.queryT = e.sbuf(d, block.qw, matmulType);
    e.transposeInto(block.queryT, queryRows);
    return block;
  };
  // One key block of one query block, emitted in phases: every phase runs
  // for all blocks of a group before the next, so that each engine's
  // stream alternates between independent blocks.
  struct KeyStep {
    int64_t k0 = 0, kw = 0;
    bool first = false;
    Value src, negMax, correction;
    Value probs;
    SmallVector<std::pair<Value, Value>> transposed; ///< (P^T part, V chunk)
  };
  auto scoresPhase = [&](QueryBlock &block, KeyStep &step) {
    int64_t qw = block.qw, kw = step.kw;
    Value scores = e.psum(qw, kw);
    e.matmul(scores, block.queryT, kb.window(block.keyT, {d, kw}, step.k0),
             false);
    // Evicted once, scaled, to SBUF: the maximum and the exponentials then
    // read SBUF, keeping the PSUM port the Vector and Scalar Engines share
    // for the transposes; GpSimd masks SBUF only.
    step.src = e.sbuf(qw, kw, e.f32);
    e.activation(ActivationFunc::copy, step.src, scores, scale);
    if (causal && step.k0 + kw - 1 > block.q0)
      e.maskAboveDiagonal(step.src, block.q0, step.k0,
                          -std::numeric_limits<float>::infinity());
  };
  auto maxPhase = [&](QueryBlock &block, KeyStep &step) {
    Value blockMax = e.column(block.qw);
    e.reduce(AluOp::max, blockMax, step.src);
    step.negMax = e.column(block.qw);
    if (step.first)
      e.tensorScalar(step.negMax, blockMax, AluOp::multiply, -1.0);
    else
      e.tensorScalar(step.negMax, blockMax, AluOp::multiply, -1.0, AluOp::min,
                     block.negMax);
  };
  auto expPhase = [&](QueryBlock &block, KeyStep &step) {
    int64_t qw = block.qw, kw = step.kw;
    // With a 16-bit matmul type P is f16 (the Tensor Engine pairs it with
    // bf16 V at the same rate): probabilities lie in [0, 1], where f16
    // keeps 11 bits against bf16's 8, and what underflows is below 2^-24
    // of the row's largest weight (which is 1).
    Value probs = e.sbuf(qw, kw, probsType);
    Value blockSum = e.column(qw);
    e.activation(ActivationFunc::exp, probs, step.src, 1.0, step.negMax,
                 blockSum);
    step.probs = probs;
    if (step.first) {
      block.sum = blockSum;
    } else {
      // exp(old max - new max) rescales what was accumulated so far.
      step.correction = e.column(qw);
      e.activation(ActivationFunc::exp, step.correction, block.negMax, -1.0,
                   step.negMax);
      Value sum = e.column(qw);
      e.tensorScalar(sum, block.sum, AluOp::multiply, step.correction,
                     AluOp::add, blockSum);
      block.sum = sum;
    }
    block.negMax = step.negMax;
  };
  // P^T chunk by chunk (128 keys each), up to four
  // transposes of equal height side by side in one PSUM bank, evicted to
  // SBUF by one instruction, alternately on the Vector and Scalar Engines.
  int64_t evictions = 0;
  auto transposePhase = [&](QueryBlock &block, KeyStep &step) {
    const ChunkedRows &valueRows = *block.valueRows;
    int64_t qw = block.qw;
    struct Slot {
      Value part;
      int64_t c0, kc;
      Value valueChunk;
    };
    SmallVector<Slot> slots;
    for (int64_t c0 = 0; c0 < step.kw; c0 += kPartitions) {
      int64_t kc = std::min(kPartitions, step.kw - c0);
      Value valueChunk = valueRows.chunkRows((step.k0 + c0) / kPartitions, kc);
      slots.push_back({step.probs, c0, kc, valueChunk});
    }
    int64_t perBank = std::min<int64_t>(4, kMatmulN / qw);
    for (size_t s0 = 0; s0 < slots.size();) {
      size_t count = 1;
      while (s0 + count < slots.size() &&
             static_cast<int64_t>(count) < perBank &&
             slots[s0 + count].kc == slots[s0].kc)
        ++count;
      int64_t kc = slots[s0].kc, width = count * qw;
      Value transposed = e.psum(kc, width);
      for (size_t i = 0; i < count; ++i) {
        const Slot &slot = slots[s0 + i];
        builder.create<TransposeOp>(kb.loc,
                                    kb.window(transposed, {kc, qw}, i * qw),
                                    kb.window(slot.part, {qw, kc}, slot.c0));
      }
      Value evicted = e.sbuf(kc, width, probsType);
      if (evictions++ % 2)
        kb.scalarCopy(evicted, transposed);
      else
        builder.create<TensorCopyOp>(kb.loc, evicted, transposed,
                                     Engine::vector);
      for (size_t i = 0; i < count; ++i)
        step.transposed.push_back(
            {kb.window(evicted, {kc, qw}, i * qw), slots[s0 + i].valueChunk});
      s0 += count;
    }
  };
  auto outputPhase = [&](QueryBlock &block, KeyStep &step) {
    int64_t qw = block.qw;
    Value blockOut = e.psum(qw, dv);
    for (auto [i, operands] : llvm::enumerate(step.transposed))
      e.matmul(blockOut, operands.first, operands.second, i > 0);
    Value acc = e.sbuf(qw, dv, e.f32);
    if (step.first) {
      builder.create<TensorCopyOp>(kb.loc, acc, blockOut, Engine::vector);
    } else {
      e.tensorScalar(acc, block.acc, AluOp::multiply, step.correction);
      e.tensorTensor(AluOp::add, acc, acc, blockOut);
    }
    block.acc = acc;
  };
  // The output and lse of a block, into `result` [qw, dv] and `rowLse`
  // [qw, 1] windows of a group's tiles when given (stored together by the
  // caller), else stored here.
  auto finishBlock = [&](QueryBlock &block, Value result = Value(),
                         Value rowLse = Value()) {
    int64_t qw = block.qw;
    bool store = !result;
    if (store)
      result = e.sbuf(qw, dv, outType);
    e.tensorScalar(result, block.acc, AluOp::divide, block.sum);
    if (store)
      kb.dma(out.rows(kb, block.head, block.q0, qw), result);
    // lse = max + log(sum).
    Value logSum = e.column(qw);
    e.activation(ActivationFunc::log, logSum, block.sum, 1.0);
    if (store)
      rowLse = e.column(qw);
    e.tensorTensor(AluOp::subtract, rowLse, logSum, block.negMax);
    if (store)
      kb.dma(kb.view(lse, block.head * queries + block.q0, qw, 1, {1}, {1}),
             rowLse);
  };
  // A group of blocks runs phase by phase (every block's step of a phase
  // before the next phase), so that each engine's stream alternates between
  // independent chains: the online softmax (max, exp, rescale) is serial
  // across the engines within a block.
  auto runGroup = [&](SmallVector<QueryBlock> &group) {
    // Waves: the key blocks at one k0 of every block in the group.
    using Wave = SmallVector<std::pair<QueryBlock *, KeyStep>>;
    SmallVector<Wave> waves;
    for (int64_t k0 = 0;; k0 += kMatmulN) {
      Wave wave;
      for (QueryBlock &block : group) {
        if (k0 >= block.keyEnd)
          continue;
        KeyStep step;
        step.k0 = k0;
        step.kw = std::min(kMatmulN, block.keyEnd - k0);
        step.first = k0 == 0;
        wave.push_back({&block, step});
      }
      if (wave.empty())
        break;
      waves.push_back(std::move(wave));
    }
    // Software-pipelined: the next wave's scores and maxima are emitted
    // between this wave's exponentials and its P V, so that the Tensor
    // Engine computes them while the Scalar Engine works on this wave.
    auto forWave = [&](size_t w, auto phase) {
      if (w < waves.size())
        for (auto &[block, step] : waves[w])
          phase(*block, step);
    };
    forWave(0, scoresPhase);
    forWave(0, maxPhase);
    for (size_t w = 0; w < waves.size(); ++w) {
      forWave(w, expPhase);
      forWave(w + 1, scoresPhase);
      forWave(w, transposePhase);
      forWave(w + 1, maxPhase);
      forWave(w, outputPhase);
    }
    // Short heads store their outputs and lse with one DMA each for the
    // group: per-head stores (two 1.3 us DMAs per head on four store
    // queues) held the next group's tiles back.
    int64_t h0 = group.front().head, count = group.size();
    std::optional<int64_t> step =
        shortHeads ? evenHeadStep(out, h0, count) : std::nullopt;
    if (!step) {
      for (QueryBlock &block : group)
        finishBlock(block);
      return;
    }
    int64_t qw = group.front().qw;
    Value results = kb.tile(MemorySpace::sbuf, qw, {count, dv}, outType);
    Value lses = e.sbuf(qw, count, e.f32);
    for (auto [i, block] : llvm::enumerate(group))
      finishBlock(block, kb.window(results, {qw, dv}, i * dv),
                  kb.window(lses, {qw, 1}, i));
    kb.dma(out.headGroup(kb, h0, count, *step, qw), results);
    kb.dma(kb.view(lse, h0 * queries, qw, 1, {count}, {queries}), lses);
  };

  if (shortHeads) {
    // One block per head: the group is kHeadGroup heads, loaded together,
    // and the next group's loads are issued before this group's compute
    // (in SBUF of their own), so that their latency hides behind it.
    struct GroupLoads {
      SmallVector<Value> query, key, value;
    };
    auto loadGroup = [&](int64_t h0) {
      int64_t count = std::min(kHeadGroup, shape.heads - h0);
      return GroupLoads{
          loadHeadGroup(kb, query, h0, count, queries, matmulType),
          loadHeadGroup(kb, key, h0, count, keys, matmulType),
          loadHeadGroup(kb, value, h0, count, keys, matmulType)};
    };
    GroupLoads next = loadGroup(0);
    for (int64_t h0 = 0; h0 < shape.heads; h0 += kHeadGroup) {
      int64_t count = std::min(kHeadGroup, shape.heads - h0);
      GroupLoads current = std::move(next);
      if (h0 + kHeadGroup < shape.heads)
        next = loadGroup(h0 + kHeadGroup);
      groupQuery = current.query;
      groupKey = current.key;
      groupValue = current.value;
      std::deque<ChunkedRows> valueRows;
      SmallVector<QueryBlock> group;
      for (int64_t head = h0; head < h0 + count; ++head) {
        ChunkedRows keyRows =
            rowsOfHead(kb, groupKey, key, head, keys, matmulType);
        Value keyT = e.transposed(keyRows, keys, d, matmulType);
        valueRows.push_back(
            rowsOfHead(kb, groupValue, value, head, keys, matmulType));
        QueryBlock block = beginBlock(head, 0);
        block.keyT = keyT;
        block.valueRows = &valueRows.back();
        group.push_back(block);
      }
      runGroup(group);
    }
    return success();
  }
  for (int64_t head = 0; head < shape.heads; ++head) {
    // K^T [d, keys] and V in 128-key chunks stay in SBUF for the head.
    ChunkedRows keyRows = rowsOfHead(kb, {}, key, head, keys, matmulType);
    Value keyT = e.transposed(keyRows, keys, d, matmulType);
    ChunkedRows valueRows = rowsOfHead(kb, {}, value, head, keys, matmulType);
    // Query blocks are processed kQueryGroup at a time, their key blocks
    // interleaved.
    for (int64_t g0 = 0; g0 < queries; g0 += kQueryGroup * kPartitions) {
      SmallVector<QueryBlock> group;
      for (int64_t q0 = g0;
           q0 < std::min(queries, g0 + kQueryGroup * kPartitions);
           q0 += kPartitions) {
        group.push_back(beginBlock(head, q0));
        group.back().keyT = keyT;
        group.back().valueRows = &valueRows;
      }
      runGroup(group);
    }
  }
  return success();
}

LogicalResult Lowering::lowerAttentionGrad(trn::AttentionGradOp op) {
  if (std::string why = trn::flashAttentionBlocker(op); !why.empty())
    return op.emitError("'trn.attention_grad' cannot be lowered as one fused "
                        "kernel (")
           << why << "); run trn-decompose-composites first";
  trn::AttentionShape shape = trn::attentionShape(op);
  Type matmulType = trn::attentionMatmulType(op);
  Type f32 = builder.getF32Type();
  // P (in [0, 1]) is f16 next to 16-bit operands, as in the forward kernel;
  // dS = P (dP - D) has the gradients' range, so it is bf16.
  bool narrow = !matmulType.isF32();
  Type probsType = narrow ? builder.getF16Type() : f32;
  Type gradType = narrow ? builder.getBF16Type() : f32;
  auto elementTypeOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  auto layoutOf = [&](Value operand, Value hbm) {
    return HeadRows(hbm, cast<RankedTensorType>(operand.getType()),
                    shape.seqDim);
  };
  auto operandLayout = [&](Value operand) {
    return layoutOf(operand, hbmOf(operand));
  };
  auto resultLayout = [&](Value result) {
    auto slot = concatSlots.find(result);
    if (slot == concatSlots.end() || shape.seqDim != 1)
      return layoutOf(result, newTensor(result));
    // Straight into its columns of the concatenation ([B, S, H, D] as
    // [B*S, H*D] rows of the concatenation's width).
    Value concat = values.lookup(slot->second.concat);
    if (!concat)
      concat = newTensor(slot->second.concat);
    values[result] = concat;
    auto type = cast<RankedTensorType>(result.getType());
    int64_t width = slot->second.width;
    SmallVector<int64_t> strides{type.getDimSize(1) * width, width,
                                 type.getDimSize(3), 1};
    return HeadRows(concat, type, shape.seqDim, strides, slot->second.column);
  };
  HeadRows query = operandLayout(op.getQuery()),
           key = operandLayout(op.getKey()),
           value = operandLayout(op.getValue()),
           output = operandLayout(op.getOutput()),
           gradOutput = operandLayout(op.getGradOutput());
  // lse is [heads..., S] whatever the operands' layout.
  HeadRows lse(hbmOf(op.getLse()),
               cast<RankedTensorType>(op.getLse().getType()),
               cast<RankedTensorType>(op.getLse().getType()).getRank() - 1);
  HeadRows gradQuery = resultLayout(op.getGradQuery()),
           gradKey = resultLayout(op.getGradKey()),
           gradValue = resultLayout(op.getGradValue());
  double scale = op.getScale().convertToDouble();
  bool causal = op.getCausal();
  int64_t queries = shape.queries, keys = shape.keys, d = shape.headSize,
          dv = shape.valueSize;
  AttentionEmitter e(kb);

  // Short heads (BERT's 128 tokens) load kHeadGroup at a time.
  bool shortHeads = queries <= kPartitions && keys <= kPartitions;
  SmallVector<Value> groupQuery, groupKey, groupGradOut, groupValue, groupLse,
      groupOut;
  Type outQueryType = elementTypeOf(op.getGradQuery());
  Type outKeyType = elementTypeOf(op.getGradKey());
  Type outValueType = elementTypeOf(op.getGradValue());
  // Short heads' gradients, kept for the group and stored with one DMA per
  // tensor (per-head stores, three 1.3 us DMAs per head on four store
  // queues, held the next heads' tiles back); null when the group's heads
  // are not evenly spaced in one of them.
  Value groupGradQuery, groupGradKey, groupGradValue;
  int64_t groupHead = 0, groupCount = 0;
  std::optional<int64_t> stepQuery, stepKey, stepValue;
  for (int64_t head = 0; head < shape.heads; ++head) {
    if (shortHeads && head % kHeadGroup == 0) {
      int64_t count = std::min(kHeadGroup, shape.heads - head);
      groupHead = head;
      groupCount = count;
      stepQuery = evenHeadStep(gradQuery, head, count);
      stepKey = evenHeadStep(gradKey, head, count);
      stepValue = evenHeadStep(gradValue, head, count);
      groupGradQuery = groupGradKey = groupGradValue = Value();
      if (stepQuery && stepKey && stepValue) {
        groupGradQuery =
            kb.tile(MemorySpace::sbuf, queries, {count, d}, outQueryType);
        groupGradKey = kb.tile(MemorySpace::sbuf, keys, {count, d}, outKeyType);
        groupGradValue =
            kb.tile(MemorySpace::sbuf, keys, {count, dv}, outValueType);
      }
      groupQuery = loadHeadGroup(kb, query, head, count, queries, matmulType);
      groupKey = loadHeadGroup(kb, key, head, count, keys, matmulType);
      groupGradOut =
          loadHeadGroup(kb, gradOutput, head, count, queries, matmulType);
      groupValue = loadHeadGroup(kb, value, head, count, keys, matmulType);
      groupLse = loadHeadGroup(kb, lse, head, count, queries, f32);
      groupOut = loadHeadGroup(kb, output, head, count, queries, f32);
    }
    auto headRows = [&](ArrayRef<Value> group, const HeadRows &layout,
                        int64_t count, Type type) {
      return rowsOfHead(kb, group, layout, head, count, type);
    };
    // Resident for the head: Q, K and dO in both layouts, V^T, -lse and
    // -D = -rowsum(dO * O) per query, and the fp32 dQ accumulators.
    ChunkedRows queryRows = headRows(groupQuery, query, queries, matmulType);
    ChunkedRows keyRows = headRows(groupKey, key, keys, matmulType);
    ChunkedRows gradOutRows =
        headRows(groupGradOut, gradOutput, queries, matmulType);
    Value queryT = e.transposed(queryRows, queries, d, matmulType);
    Value keyT = e.transposed(keyRows, keys, d, matmulType);
    Value gradOutT = e.transposed(gradOutRows, queries, dv, matmulType);
    Value valueT;
    {
      ChunkedRows valueRows = headRows(groupValue, value, keys, matmulType);
      valueT = e.transposed(valueRows, keys, dv, matmulType);
    }
    ChunkedRows lseRows = headRows(groupLse, lse, queries, f32);
    ChunkedRows outRows = headRows(groupOut, output, queries, f32);
    int64_t queryChunks = queryRows.chunks();
    SmallVector<Value> negLse, negD, gradQueryAcc(queryChunks);
    for (int64_t c = 0; c < queryChunks; ++c) {
      int64_t rows = queryRows.rowsOf(c);
      Value column = e.column(rows);
      e.tensorScalar(column, lseRows.chunk(c), AluOp::multiply, -1.0);
      negLse.push_back(column);
      Value product = e.sbuf(rows, dv, f32);
      e.tensorTensor(AluOp::multiply, product, gradOutRows.chunk(c),
                     outRows.chunk(c));
      Value rowDot = e.column(rows);
      builder.create<TensorReduceOp>(kb.loc, AluOp::add, rowDot, product,
                                     /*negate=*/true, Engine::vector);
      negD.push_back(rowDot);
    }

    // Key blocks of 128 outside, query blocks inside: dK and dV of the key
    // block accumulate in PSUM over the query blocks; dQ accumulates in SBUF
    // over the key blocks.
    struct KeyBlock {
      int64_t k0, kw, chunk;
      Value gradValuePsum, gradKeyPsum;
    };
    // One (query block, key block) pair and the values its phases pass on.
    struct Pair {
      KeyBlock *key;
      int64_t chunk, q0, qw;
      bool firstQuery;
      Value scores, gradProbs, probs, shifted, gradScores, gradScoresT;
    };
    // Pairs of one key block, processed together. PSUM holds one tile per
    // bank (an accumulation group each), so a group's scores, dP, dS^T and
    // dQ are each one bank-sized tile with a window per pair.
    struct Group {
      SmallVector<Pair> pairs;
      Value scores, gradProbs, gradScoresT, gradQuery;
    };
    SmallVector<std::unique_ptr<KeyBlock>> keyBlocks;
    SmallVector<Group> groups;
    // dQ of a group's pairs side by side: at most 512 fp32 columns.
    int64_t groupSize = std::min(kGradGroup, kMatmulN / d);
    for (int64_t k0 = 0, kc = 0; k0 < keys; k0 += kPartitions, ++kc) {
      int64_t kw = std::min(kPartitions, keys - k0);
      SmallVector<int64_t> chunks;
      for (int64_t c = 0; c < queryChunks; ++c)
        if (!causal || c * kPartitions + queryRows.rowsOf(c) - 1 >= k0)
          chunks.push_back(c);
      if (chunks.empty()) {
        // Keys no query sees (causal, more keys than queries).
        for (auto [out, type] : {std::pair{&gradKey, outKeyType},
                                 std::pair{&gradValue, outValueType}}) {
          Value zero = e.sbuf(kw, out->cols, type);
          builder.create<MemsetOp>(kb.loc, zero, llvm::APFloat(0.0f),
                                   Engine::gpsimd);
          kb.dma(out->rows(kb, head, k0, kw), zero);
        }
        continue;
      }
      keyBlocks.push_back(std::make_unique<KeyBlock>(KeyBlock{k0, kw, kc}));
      for (size_t i = 0; i < chunks.size(); ++i) {
        if (i % groupSize == 0)
          groups.emplace_back();
        groups.back().pairs.push_back({keyBlocks.back().get(), chunks[i],
                                       chunks[i] * kPartitions,
                                       queryRows.rowsOf(chunks[i]), i == 0});
      }
    }

    // Phases, each for every pair of a group in turn (so that each
    // engine's stream alternates between independent pairs), the next
    // group's score matmuls emitted before this group's gradient matmuls.
    auto scoresPhase = [&](Group &g, size_t i) {
      Pair &p = g.pairs[i];
      KeyBlock &kbk = *p.key;
      if (i == 0) {
        int64_t width = g.pairs.size() * kbk.kw;
        g.scores = e.psum(kPartitions, width);
        g.gradProbs = e.psum(kPartitions, width);
      }
      p.scores = kb.window(g.scores, {p.qw, kbk.kw}, i * kbk.kw);
      e.matmul(p.scores, kb.window(queryT, {d, p.qw}, p.q0),
               kb.window(keyT, {d, kbk.kw}, kbk.k0), false);
      p.gradProbs = kb.window(g.gradProbs, {p.qw, kbk.kw}, i * kbk.kw);
      e.matmul(p.gradProbs, kb.window(gradOutT, {dv, p.qw}, p.q0),
               kb.window(valueT, {dv, kbk.kw}, kbk.k0), false);
    };
    auto probsPhase = [&](Group &g, size_t i) {
      Pair &p = g.pairs[i];
      // P = exp(scale * Q K^T - lse), masked to 0 above the diagonal;
      // dP - D.
      int64_t k0 = p.key->k0, kw = p.key->kw;
      p.probs = e.sbuf(p.qw, kw, probsType);
      e.activation(ActivationFunc::exp, p.probs, p.scores, scale,
                   negLse[p.chunk]);
      if (causal && k0 + kw - 1 > p.q0)
        e.maskAboveDiagonal(p.probs, p.q0, k0, 0.0f);
      p.shifted = e.sbuf(p.qw, kw, f32);
      e.activation(ActivationFunc::copy, p.shifted, p.gradProbs, 1.0,
                   negD[p.chunk]);
    };
    auto gradScoresPhase = [&](Group &g, size_t i) {
      Pair &p = g.pairs[i];
      // dS = P * (dP - D); the scale joins when dQ and dK are evicted.
      p.gradScores = e.sbuf(p.qw, p.key->kw, gradType);
      e.tensorTensor(AluOp::multiply, p.gradScores, p.shifted, p.probs);
    };
    auto keyGradPhase = [&](Group &g, size_t i) {
      // dV += P^T dO, dK += dS^T Q; dS^T for dQ.
      Pair &p = g.pairs[i];
      KeyBlock &kbk = *p.key;
      if (p.firstQuery) {
        kbk.gradValuePsum = e.psum(kbk.kw, dv);
        kbk.gradKeyPsum = e.psum(kbk.kw, d);
      }
      e.matmul(kbk.gradValuePsum, p.probs, gradOutRows.chunk(p.chunk),
               !p.firstQuery);
      e.matmul(kbk.gradKeyPsum, p.gradScores, queryRows.chunk(p.chunk),
               !p.firstQuery);
      if (i == 0)
        g.gradScoresT = e.psum(kbk.kw, g.pairs.size() * kPartitions);
      p.gradScoresT = kb.window(g.gradScoresT, {kbk.kw, p.qw}, i * kPartitions);
      builder.create<TransposeOp>(kb.loc, p.gradScoresT, p.gradScores);
    };
    // dS^T of the whole group in one eviction, on the Scalar Engine (the
    // Vector Engine has dS and the dQ sums).
    auto evictPhase = [&](Group &g, size_t i) {
      if (i != 0)
        return;
      int64_t kw = g.pairs.front().key->kw;
      Value evicted = e.sbuf(kw, g.pairs.size() * kPartitions, gradType);
      kb.scalarCopy(evicted, g.gradScoresT);
      for (auto [j, p] : llvm::enumerate(g.pairs))
        p.gradScoresT = kb.window(evicted, {kw, p.qw}, j * kPartitions);
    };
    auto queryGradPhase = [&](Group &g, size_t i) {
      Pair &p = g.pairs[i];
      if (i == 0)
        g.gradQuery = e.psum(kPartitions, g.pairs.size() * d);
      Value gradQueryPsum = kb.window(g.gradQuery, {p.qw, d}, i * d);
      e.matmul(gradQueryPsum, p.gradScoresT, keyRows.chunk(p.key->chunk),
               false);
      Value &acc = gradQueryAcc[p.chunk];
      if (!acc) {
        acc = e.sbuf(p.qw, d, f32);
        builder.create<TensorCopyOp>(kb.loc, acc, gradQueryPsum,
                                     Engine::vector);
      } else {
        e.tensorTensor(AluOp::add, acc, acc, gradQueryPsum);
      }
    };
    int64_t inGroup = head - groupHead;
    auto finishKeyBlock = [&](KeyBlock &kbk) {
      Value gradValueBlock =
          groupGradValue ? kb.window(groupGradValue, {kbk.kw, dv}, inGroup * dv)
                         : e.sbuf(kbk.kw, dv, outValueType);
      kb.scalarCopy(gradValueBlock, kbk.gradValuePsum);
      if (!groupGradValue)
        kb.dma(gradValue.rows(kb, head, kbk.k0, kbk.kw), gradValueBlock);
      Value gradKeyBlock =
          groupGradKey ? kb.window(groupGradKey, {kbk.kw, d}, inGroup * d)
                       : e.sbuf(kbk.kw, d, outKeyType);
      e.activation(ActivationFunc::copy, gradKeyBlock, kbk.gradKeyPsum, scale);
      if (!groupGradKey)
        kb.dma(gradKey.rows(kb, head, kbk.k0, kbk.kw), gradKeyBlock);
    };
    auto forGroup = [&](size_t g, auto phase) {
      if (g < groups.size())
        for (size_t i = 0; i < groups[g].pairs.size(); ++i)
          phase(groups[g], i);
    };
    // Software-pipelined one group deep: while the Tensor Engine computes
    // group g's gradient matmuls, the Scalar and Vector Engines compute
    // group g + 1's P and dS.
    forGroup(0, scoresPhase);
    forGroup(0, probsPhase);
    forGroup(0, gradScoresPhase);
    for (size_t g = 0; g < groups.size(); ++g) {
      forGroup(g + 1, scoresPhase);
      forGroup(g, keyGradPhase);
      // The key block's gradients are complete after its last group.
      KeyBlock *last = groups[g].pairs.back().key;
      if (g + 1 == groups.size() || groups[g + 1].pairs.front().key != last)
        finishKeyBlock(*last);
      forGroup(g + 1, probsPhase);
      forGroup(g + 1, gradScoresPhase);
      forGroup(g, evictPhase);
      forGroup(g, queryGradPhase);
    }
    for (int64_t c = 0; c < queryChunks; ++c) {
      int64_t qw = queryRows.rowsOf(c);
      Value block = groupGradQuery
                        ? kb.window(groupGradQuery, {qw, d}, inGroup * d)
                        : e.sbuf(qw, d, outQueryType);
      e.tensorScalar(block, gradQueryAcc[c], AluOp::multiply, scale);
      if (!groupGradQuery)
        kb.dma(gradQuery.rows(kb, head, c * kPartitions, qw), block);
    }
    if (groupGradQuery && inGroup + 1 == groupCount) {
      kb.dma(gradValue.headGroup(kb, groupHead, groupCount, *stepValue, keys),
             groupGradValue);
      kb.dma(gradKey.headGroup(kb, groupHead, groupCount, *stepKey, keys),
             groupGradKey);
      kb.dma(
          gradQuery.headGroup(kb, groupHead, groupCount, *stepQuery, queries),
          groupGradQuery);
    }
  }
  return success();
}
