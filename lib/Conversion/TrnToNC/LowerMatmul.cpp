//===- LowerMatmul.cpp - trn.dot_general on the Tensor Engine -------------===//
//
// dot_general with at most one free dim per operand after batch dims:
// lhs [batch, M, K] or [batch, K, M], rhs [batch, K, N] or [batch, N, K]
// (any position of K). The Tensor Engine wants K on partitions for both:
// stationary = lhs^T tiles [K, M], moving = rhs tiles [K, N]. An operand
// whose K is its last (contiguous) dim is loaded row-contiguously and
// transposed on the Tensor Engine in 128x128 blocks rather than read with
// element-strided DMA. Loops run N blocks outermost so that the moving
// panel (all K tiles of one N block) stays in SBUF across the M blocks when
// it fits; K accumulates in PSUM.
//
// The steps: the blocking (planMatmul: column blocks, how the moving panel
// is kept, how the stationary tiles are made), the moving panel's loads,
// the stationary operands' preparation (prepareStationary), one of three
// loop nests (emitColumnBlocks; emitKChunked when K runs outermost;
// emitWholeRows for an epilogue that reduces rows) and each accumulator's
// end (finishTile: stored, or handed to a trn.fusion's epilogue).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "trn/Dialect/Trn/Utils/MatmulForm.h"

using namespace mlir;
using namespace mlir::trntonc;

/// Elements of K per DMA of row-major lhs rows (4 KiB of bf16 per
/// partition: near the DMA engines' peak, and four transpose groups).
static constexpr int64_t kLhsRowChunk = 2048;
/// K tiles per chunk of kLhsRowChunk elements.
static constexpr int64_t kChunkTiles = kLhsRowChunk / kMatmulK;
/// Transposes of up to four full K tiles share one PSUM bank and one
/// eviction (the per-instruction overhead of an eviction is larger than its
/// work at 128 columns); evictions alternate between the Scalar and the
/// Vector Engine.
static constexpr int64_t kGroup = 4;

namespace mlir::trntonc {

/// Lowers one trn.dot_general (Lowering::lowerDot); a friend of Lowering for
/// its value map.
class MatmulLowering {
public:
  MatmulLowering(Lowering &lowering, trn::DotGeneralOp op,
                 Lowering::MatmulEpilogue epilogue, bool wholeRows)
      : lowering(lowering), kb(lowering.kb), builder(lowering.builder), op(op),
        epilogue(epilogue), wholeRows(wholeRows),
        f32(lowering.builder.getF32Type()) {}
  LogicalResult run();

private:
  /// The operands seen as [batch, M, K] x [batch, K, N].
  struct Shape {
    int64_t batches = 1, m = 0, k = 0, n = 0;
    /// Element strides of (K, M) in lhs and (K, N) in rhs within one batch.
    int64_t lhsKStride = 1, lhsMStride = 1, rhsKStride = 1, rhsNStride = 1;
    int64_t inBytes = 0;
  };
  /// One column block of the result: it computes every M block against one
  /// resident moving panel.
  struct ColumnBlock {
    int64_t batch, n0, nw;
  };
  /// How the matmul is blocked and where its operands' tiles come from.
  struct Plan {
    int64_t kTiles = 0, mBlocks = 0;
    /// Column blocks of one or two PSUM banks (trn::matmulColumnBlocking).
    int64_t blockWidth = 0;
    bool residentPanel = false;
    /// Row-major lhs transposed once into an HBM scratch (lhsT).
    bool transposeOnce = false;
    int64_t panelLen = 0;
    /// The result's column blocks in order.
    SmallVector<ColumnBlock> columnBlocks;
    bool prefetchPanel = false, refillPanel = false, chunkedPanel = false;
    int64_t panelElements = 0;
    /// M blocks whose K-major stationary tiles load together.
    int64_t stationaryGroup = 1;
    /// K runs outermost, in chunks of `outerChunkTiles` K tiles.
    bool kChunked = false;
    int64_t outerChunkTiles = 0;
  };
  /// One M block's row range and the lhs tiles its stationary operands come
  /// from (the current chunk of lhs rows, of transposed rows, or of the
  /// transposed scratch).
  struct MBlock {
    int64_t m0 = 0, mw = 0, panelBase = 0, lhsBase = 0;
    bool storeToScratch = false, fromScratch = false, rowsPath = false;
    Value scratchChunk, rowsChunk, transposedChunk;
    int64_t scratchKt0 = 0, scratchTiles = 0, chunkK0 = 0, chunkKw = 0;
    int64_t ktEnd = 0; ///< stationary groups stop here
  };
  /// The stationary tiles of K tiles [kt, kt + count).
  struct Group {
    int64_t kt = 0, count = 0;
    SmallVector<Value> stationaries;
  };

  // The blocking.
  static Plan planMatmul(const Shape &shape);
  void allocateBuffers();

  // The moving operand.
  void loadKMajor(Value dst, Value tensor, int64_t base, int64_t kw,
                  int64_t width, int64_t kStride, int64_t jStride);
  int64_t panelOffsetOf(size_t blockIndex) const;
  Value loadMoving(const ColumnBlock &block, int64_t kt,
                   std::optional<int64_t> panelOffset = std::nullopt);
  void fillPanelChunk(const ColumnBlock &block, int64_t kt, int64_t panelOffset,
                      SmallVectorImpl<Value> &into);
  void fillPanel(const ColumnBlock &block, int64_t kt, int64_t panelOffset,
                 SmallVectorImpl<Value> &into);

  // The stationary operand.
  MBlock startMBlock(const ColumnBlock &block, int64_t mb) const;
  Group prepareStationary(MBlock &b, int64_t kt);
  void loadRowsChunk(MBlock &b, int64_t k0);
  int64_t groupSize(const MBlock &b, int64_t kt, int64_t kw) const;
  Value stationaryFromScratch(MBlock &b, int64_t kt, int64_t kw);
  void transposeRows(MBlock &b, int64_t kt, int64_t kw, int64_t group,
                     SmallVectorImpl<Value> &stationaries);
  void storeTransposed(Value block, int64_t panelBase, int64_t kt, int64_t kw,
                       int64_t group, int64_t mw);
  Value stationaryOfGroup(const MBlock &b, int64_t kt, int64_t kw);
  Value loadStationary(const MBlock &b, int64_t kt, int64_t kw);

  // The loop nests.
  LogicalResult emitColumnBlocks();
  LogicalResult emitMBlock(size_t blockIndex, int64_t mb);
  LogicalResult emitKChunked();
  LogicalResult addChunk(ArrayRef<Value> accs, SmallVectorImpl<Value> &sums,
                         int64_t m0, int64_t mw, int64_t kt0, bool lastChunk);
  LogicalResult emitWholeRows();
  void prepareAllGroups(const ColumnBlock &block, int64_t mb,
                        SmallVectorImpl<Group> &groups);
  SmallVector<Value> allocateAccumulators(int64_t rows, int64_t width);
  void issueMatmuls(ArrayRef<Value> accs, Value stationary, Value moving,
                    int64_t kw, int64_t width, bool accumulate);
  void evict(Value dst, Value src);

  // The epilogue.
  LogicalResult finishTile(Value acc, int64_t batch, int64_t m0, int64_t mw,
                           int64_t col0, int64_t width);

  Lowering &lowering;
  KernelBuilder &kb;
  OpBuilder &builder;
  trn::DotGeneralOp op;
  Lowering::MatmulEpilogue epilogue;
  bool wholeRows;
  Type f32, inType, outType;
  Shape shape;
  Plan plan;
  Value lhs, rhs, out;
  /// The transposed lhs (Plan::transposeOnce) and the resident panels.
  Value lhsT, panelBuffers;
  /// A panel's K tiles, loaded when first used (so that the first column
  /// block's DMAs come in the order the Tensor Engine needs them) unless
  /// prefetched; the next column block's.
  SmallVector<Value> panel, nextPanel;
  /// The K-major stationary tiles of one group of M blocks (see
  /// stationaryOfGroup), keyed by (lhs base, first M block).
  std::optional<std::pair<int64_t, int64_t>> groupKey;
  SmallVector<Value> groupTiles;
  /// The first stationary group of the next M block of the same column
  /// block, prepared (its rows loaded and transposed) before the current
  /// block's last matmuls so that its evictions overlap them instead of
  /// stalling the Tensor Engine at every block boundary.
  std::optional<std::pair<MBlock, Group>> preparedAhead;
  int64_t evictions = 0;
};

} // namespace mlir::trntonc

LogicalResult Lowering::lowerDot(trn::DotGeneralOp op, MatmulEpilogue epilogue,
                                 bool wholeRows) {
  return MatmulLowering(*this, op, epilogue, wholeRows).run();
}

LogicalResult MatmulLowering::run() {
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
  auto resultType = cast<RankedTensorType>(op.getType());
  int64_t batchRank = op.getLhsBatchingDims().size();
  if (!trn::isMatmulForm(lhsType.getRank(), rhsType.getRank(),
                         op.getLhsBatchingDims(), op.getRhsBatchingDims(),
                         op.getLhsContractingDims(),
                         op.getRhsContractingDims()))
    return op.emitError("'trn.dot_general' is lowered for leading batch dims "
                        "and one free and one contracting dim per operand; "
                        "this form is not lowered yet");
  int64_t lk = op.getLhsContractingDims()[0] - batchRank; // 0 or 1
  int64_t rk = op.getRhsContractingDims()[0] - batchRank;
  shape.m = lhsType.getDimSize(batchRank + (1 - lk));
  shape.k = lhsType.getDimSize(batchRank + lk);
  shape.n = rhsType.getDimSize(batchRank + (1 - rk));
  lhs = lowering.hbmOf(op.getLhs());
  rhs = lowering.hbmOf(op.getRhs());
  out = epilogue ? Value() : lowering.newTensor(op.getResult());
  inType = lhsType.getElementType();
  outType = resultType.getElementType();
  shape.inBytes = (inType.getIntOrFloatBitWidth() + 7) / 8;
  int64_t lhsCols = lhsType.getShape().back();
  int64_t rhsCols = rhsType.getShape().back();
  shape.lhsKStride = lk == 1 ? 1 : lhsCols;
  shape.lhsMStride = lk == 1 ? lhsCols : 1;
  shape.rhsKStride = rk == 0 ? rhsCols : 1;
  shape.rhsNStride = rk == 0 ? 1 : rhsCols;
  shape.batches = product(resultType.getShape().take_front(batchRank));
  plan = planMatmul(shape);
  if (wholeRows && !trn::matmulYieldsWholeRows(shape.k, shape.n, shape.inBytes))
    return op.emitError("an epilogue that reduces rows needs each row block "
                        "of the matmul's result whole, but its ")
           << shape.n << " columns come out in blocks of " << plan.blockWidth;
  allocateBuffers();
  if (plan.kChunked)
    return emitKChunked();
  if (wholeRows)
    return emitWholeRows();
  return emitColumnBlocks();
}

MatmulLowering::Plan MatmulLowering::planMatmul(const Shape &shape) {
  int64_t m = shape.m, k = shape.k, n = shape.n, inBytes = shape.inBytes;
  Plan plan;
  plan.kTiles = (k + kMatmulK - 1) / kMatmulK;
  int64_t kTiles = plan.kTiles;
  // Column blocks of one or two PSUM banks (trn::matmulColumnBlocking, which
  // trn-fuse-matmul-epilogue also asks whether rows come out whole).
  trn::MatmulColumnBlocking blocking = trn::matmulColumnBlocking(k, n, inBytes);
  plan.blockWidth = blocking.blockWidth;
  int64_t panelBytes = kTiles * plan.blockWidth * inBytes;
  plan.residentPanel = blocking.residentPanel;
  // Row-major lhs (K contiguous) is transposed once per call when several
  // column blocks reuse it: while the first N block of a batch computes, each M
  // block's transposed tiles are also stored into an HBM scratch laid out so
  // that later N blocks load one M block's stationary tiles with one
  // contiguous DMA: lhsT[batch][mb][p][kt][j] = lhs[batch][mb*128+j][kt*128+p].
  plan.mBlocks = (m + kMatmulM - 1) / kMatmulM;
  plan.panelLen = kTiles * kMatmulM;
  plan.transposeOnce = shape.lhsKStride == 1 && n > plan.blockWidth &&
                       plan.panelLen * inBytes <= 32 * 1024;
  for (int64_t batch = 0; batch < shape.batches; ++batch)
    for (int64_t n0 = 0; n0 < n; n0 += plan.blockWidth)
      plan.columnBlocks.push_back(
          {batch, n0, std::min(plan.blockWidth, n - n0)});
  // The next column block's panel is loaded piecewise while this one
  // computes (two panels live at once) when both fit next to the stationary
  // buffers; otherwise the Tensor Engine waits for each panel.
  plan.prefetchPanel = plan.residentPanel && plan.columnBlocks.size() > 1 &&
                       panelBytes <= 64 * 1024;
  // A panel too large for two is refilled K tile by K tile during the last
  // M block instead.
  plan.refillPanel =
      plan.residentPanel && !plan.prefetchPanel && plan.columnBlocks.size() > 1;
  plan.panelElements = kTiles * plan.blockWidth;
  // Moving data whose K is contiguous (an nn.Linear weight [N, K]) fills a
  // resident panel a chunk of K tiles at a time: each 128-row block of N
  // loads [128, up to 2048 of K] with one DMA, and one K tile of four row
  // blocks transposes into one PSUM bank and leaves it with one eviction.
  // Tile by tile, every 128x128 block took a DMA of 256-byte runs, a
  // transpose and an eviction of its own, in series.
  plan.chunkedPanel = plan.residentPanel && shape.rhsKStride == 1;
  // K-major lhs (a weight gradient's dY^T: M contiguous) loads the
  // stationary tiles of up to eight M blocks at once while they take at most
  // 32 KiB per partition: 256-byte runs per partition made these DMAs three
  // times slower than streaming.
  if (shape.lhsKStride != 1 && shape.lhsMStride == 1)
    while (2 * plan.stationaryGroup <= std::min<int64_t>(8, plan.mBlocks) &&
           kTiles * 2 * plan.stationaryGroup * kMatmulM * inBytes <= 32 * 1024)
      plan.stationaryGroup *= 2;
  // K too large for a resident panel, with the whole result small enough
  // to keep in SBUF (an MLM head's input gradient: K = the vocabulary):
  // K runs outermost in chunks whose panel is resident, each M block's
  // partial sums accumulate in an fp32 SBUF tile across chunks (the Vector
  // Engine adds each chunk's PSUM), and both operands are read once.
  // Without this, the moving data went through SBUF once per M block.
  plan.outerChunkTiles =
      std::max<int64_t>(1, 64 * 1024 / (std::max<int64_t>(n, 1) * inBytes)) /
      kChunkTiles * kChunkTiles;
  plan.kChunked = !plan.residentPanel && !plan.transposeOnce &&
                  shape.batches == 1 && n <= 2 * kMatmulN &&
                  plan.outerChunkTiles > 0 && kTiles > plan.outerChunkTiles &&
                  plan.mBlocks * n * 4 <= 64 * 1024;
  return plan;
}

void MatmulLowering::allocateBuffers() {
  if (plan.transposeOnce)
    lhsT = kb.scratch({shape.batches * plan.mBlocks, kMatmulM, plan.panelLen},
                      inType);
  // Resident panels live in one tile allocated once for the whole matmul
  // (two halves that alternate when prefetching): one large allocation
  // cannot be fragmented by the small tiles cycling around it. Allocated
  // before any other tile of the matmul, while SBUF is empty.
  if (plan.residentPanel)
    panelBuffers =
        kb.tile(MemorySpace::sbuf, std::min(kMatmulK, shape.k),
                {plan.prefetchPanel ? 2 : 1, plan.panelElements}, inType);
  panel.assign(plan.kTiles, Value());
  nextPanel.assign(plan.kTiles, Value());
}

//===----------------------------------------------------------------------===//
// The moving operand
//===----------------------------------------------------------------------===//

/// A [kw, width] tile of K-major data from `tensor`, whose element (k, j)
/// is at base + k * kStride + j * jStride. With jStride == 1 the rows are
/// contiguous; with kStride == 1 (K contiguous), load [width, kw] blocks and
/// transpose them on the Tensor Engine into `dst` (via PSUM).
void MatmulLowering::loadKMajor(Value dst, Value tensor, int64_t base,
                                int64_t kw, int64_t width, int64_t kStride,
                                int64_t jStride) {
  if (jStride == 1) {
    kb.dma(dst, kb.view(tensor, base, kw, kStride, {width}, {1}));
    return;
  }
  for (int64_t j0 = 0; j0 < width; j0 += kPartitions) {
    int64_t jw = std::min(kPartitions, width - j0);
    Value rows = kb.tile(MemorySpace::sbuf, jw, {kw}, inType);
    kb.dma(rows,
           kb.view(tensor, base + j0 * jStride, jw, jStride, {kw}, {kStride}));
    Value transposed = kb.tile(MemorySpace::psum, kw, {jw}, f32);
    builder.create<TransposeOp>(kb.loc, transposed, rows);
    Value slot = jw == width ? dst : kb.window(dst, {kw, jw}, j0);
    kb.scalarCopy(slot, transposed);
  }
}

/// Where a column block's panel starts in panelBuffers.
int64_t MatmulLowering::panelOffsetOf(size_t blockIndex) const {
  return plan.prefetchPanel
             ? static_cast<int64_t>(blockIndex % 2) * plan.panelElements
             : 0;
}

/// K tile kt of a column block's moving data: into the block's panel when
/// `panelOffset` is set, else into a tile of its own.
Value MatmulLowering::loadMoving(const ColumnBlock &block, int64_t kt,
                                 std::optional<int64_t> panelOffset) {
  int64_t k = shape.k, n = shape.n;
  int64_t k0 = kt * kMatmulK, kw = std::min(kMatmulK, k - k0);
  Value moving = panelOffset
                     ? kb.window(panelBuffers, {kw, block.nw},
                                 *panelOffset + kt * block.nw)
                     : kb.tile(MemorySpace::sbuf, kw, {block.nw}, inType);
  loadKMajor(moving, rhs,
             block.batch * k * n + k0 * shape.rhsKStride +
                 block.n0 * shape.rhsNStride,
             kw, block.nw, shape.rhsKStride, shape.rhsNStride);
  return moving;
}

/// The chunk of K tiles that holds K tile kt of a column block's panel
/// (Plan::chunkedPanel), into `into`.
void MatmulLowering::fillPanelChunk(const ColumnBlock &block, int64_t kt,
                                    int64_t panelOffset,
                                    SmallVectorImpl<Value> &into) {
  int64_t k = shape.k, n = shape.n, rhsNStride = shape.rhsNStride;
  int64_t chunkKt0 = kt / kChunkTiles * kChunkTiles;
  int64_t k0 = chunkKt0 * kMatmulK;
  int64_t chunkKw = std::min(kLhsRowChunk, k - k0);
  int64_t chunkTiles = (chunkKw + kMatmulK - 1) / kMatmulK;
  int64_t base = block.batch * k * n + k0 + block.n0 * rhsNStride;
  for (int64_t g0 = 0; g0 < block.nw; g0 += kGroup * kPartitions) {
    int64_t gw = std::min(kGroup * kPartitions, block.nw - g0);
    SmallVector<std::pair<Value, int64_t>> rowBlocks;
    for (int64_t j0 = g0; j0 < g0 + gw; j0 += kPartitions) {
      int64_t jw = std::min(kPartitions, g0 + gw - j0);
      Value rows = kb.tile(MemorySpace::sbuf, jw, {chunkKw}, inType);
      kb.dma(rows, kb.view(rhs, base + j0 * rhsNStride, jw, rhsNStride,
                           {chunkKw}, {1}));
      rowBlocks.push_back({rows, jw});
    }
    for (int64_t t = 0; t < chunkTiles; ++t) {
      int64_t kw = std::min(kMatmulK, chunkKw - t * kMatmulK);
      evict(kb.window(panelBuffers, {kw, gw},
                      panelOffset + (chunkKt0 + t) * block.nw + g0),
            lowering.transposeBlocks(rowBlocks, t * kMatmulK, kw));
    }
  }
  for (int64_t t = 0; t < chunkTiles; ++t) {
    int64_t kw = std::min(kMatmulK, chunkKw - t * kMatmulK);
    into[chunkKt0 + t] = kb.window(panelBuffers, {kw, block.nw},
                                   panelOffset + (chunkKt0 + t) * block.nw);
  }
}

/// K tile kt of a column block's resident panel into `into`, loaded if it
/// is not there yet.
void MatmulLowering::fillPanel(const ColumnBlock &block, int64_t kt,
                               int64_t panelOffset,
                               SmallVectorImpl<Value> &into) {
  if (into[kt])
    return;
  if (plan.chunkedPanel)
    fillPanelChunk(block, kt, panelOffset, into);
  else
    into[kt] = loadMoving(block, kt, panelOffset);
}

//===----------------------------------------------------------------------===//
// The stationary operand
//===----------------------------------------------------------------------===//

MatmulLowering::MBlock MatmulLowering::startMBlock(const ColumnBlock &block,
                                                   int64_t mb) const {
  MBlock state;
  state.m0 = mb * kMatmulM;
  state.mw = std::min(kMatmulM, shape.m - state.m0);
  state.panelBase =
      (block.batch * plan.mBlocks + mb) * kMatmulM * plan.panelLen;
  state.lhsBase = block.batch * shape.m * shape.k;
  // Later column blocks read the transposed lhs from the scratch in chunks
  // of K tiles (one contiguous run per partition each): large transfers
  // whose tiles die as soon as their matmuls ran, so the next M block's
  // chunks load into the space the current one frees.
  state.storeToScratch = plan.transposeOnce && block.n0 == 0;
  state.fromScratch = plan.transposeOnce && !state.storeToScratch;
  // Row-major lhs rows come in chunks of K (large transfers whose tiles die
  // once transposed, so the next chunk's load overlaps compute).
  state.rowsPath = !state.fromScratch && shape.lhsKStride == 1;
  state.ktEnd = plan.kTiles;
  return state;
}

/// The stationary tiles of the K tiles from kt on that one PSUM bank of
/// transposes serves (one K tile unless they are transposed from lhs rows).
MatmulLowering::Group MatmulLowering::prepareStationary(MBlock &b, int64_t kt) {
  Group prepared;
  prepared.kt = kt;
  int64_t k0 = kt * kMatmulK, kw = std::min(kMatmulK, shape.k - k0);
  if (b.rowsPath && (!b.rowsChunk || k0 >= b.chunkK0 + b.chunkKw))
    loadRowsChunk(b, k0);
  prepared.count = groupSize(b, kt, kw);
  if (b.fromScratch)
    prepared.stationaries.push_back(stationaryFromScratch(b, kt, kw));
  else if (b.rowsPath)
    transposeRows(b, kt, kw, prepared.count, prepared.stationaries);
  else if (plan.stationaryGroup > 1)
    prepared.stationaries.push_back(stationaryOfGroup(b, kt, kw));
  else
    prepared.stationaries.push_back(loadStationary(b, kt, kw));
  return prepared;
}

/// The next chunk of an M block's row-major lhs rows, from K element k0.
void MatmulLowering::loadRowsChunk(MBlock &b, int64_t k0) {
  int64_t mw = b.mw;
  b.chunkK0 = k0;
  b.chunkKw = std::min(kLhsRowChunk, shape.k - k0);
  b.rowsChunk = kb.tile(MemorySpace::sbuf, mw, {b.chunkKw}, inType);
  kb.dma(b.rowsChunk, kb.view(lhs, b.lhsBase + b.m0 * shape.lhsMStride + k0, mw,
                              shape.lhsMStride, {b.chunkKw}, {1}));
  // When storing to the scratch, a chunk of full K tiles is transposed
  // into one tile and stored with one DMA (4 KiB per partition instead
  // of 1 KiB ones, which waste DMA time on per-buffer costs).
  b.transposedChunk = Value();
  if (b.storeToScratch && mw == kMatmulM && b.chunkKw % kMatmulK == 0)
    b.transposedChunk = kb.tile(MemorySpace::sbuf, kMatmulK,
                                {b.chunkKw / kMatmulK * mw}, inType);
}

/// How many K tiles from kt share one bank of transposes: up to kGroup full
/// tiles of the current rows chunk, at most 512 columns.
int64_t MatmulLowering::groupSize(const MBlock &b, int64_t kt,
                                  int64_t kw) const {
  int64_t mw = b.mw;
  int64_t group = 1;
  if (b.rowsPath && kw == kMatmulK)
    while (group < kGroup && kt + group < b.ktEnd &&
           (kt + group + 1) * kMatmulK <= b.chunkK0 + b.chunkKw &&
           group * mw + mw <= 512)
      ++group;
  return group;
}

/// K tile kt of an M block from the transposed scratch, loaded a chunk of K
/// tiles at a time.
Value MatmulLowering::stationaryFromScratch(MBlock &b, int64_t kt, int64_t kw) {
  if (!b.scratchChunk || kt >= b.scratchKt0 + b.scratchTiles) {
    int64_t pk = std::min(kMatmulK, shape.k);
    b.scratchKt0 = kt;
    b.scratchTiles = std::min(kLhsRowChunk / kMatmulK, plan.kTiles - kt);
    b.scratchChunk =
        kb.tile(MemorySpace::sbuf, pk, {b.scratchTiles * kMatmulM}, inType);
    kb.dma(b.scratchChunk,
           kb.view(lhsT, b.panelBase + kt * kMatmulM, pk, plan.panelLen,
                   {b.scratchTiles * kMatmulM}, {1}));
  }
  return kb.window(b.scratchChunk, {kw, b.mw}, (kt - b.scratchKt0) * kMatmulM);
}

/// K tiles [kt, kt + group) of an M block transposed from its rows chunk
/// into one PSUM bank and evicted together (and stored into the scratch
/// when the first column block makes it).
void MatmulLowering::transposeRows(MBlock &b, int64_t kt, int64_t kw,
                                   int64_t group,
                                   SmallVectorImpl<Value> &stationaries) {
  int64_t mw = b.mw, k0 = kt * kMatmulK;
  Value transposed = kb.tile(MemorySpace::psum, kw, {group * mw}, f32);
  for (int64_t j = 0; j < group; ++j) {
    Value slice =
        kb.window(b.rowsChunk, {mw, kw}, k0 - b.chunkK0 + j * kMatmulK);
    builder.create<TransposeOp>(kb.loc, kb.window(transposed, {kw, mw}, j * mw),
                                slice);
  }
  int64_t chunkKt0 = b.chunkK0 / kMatmulK;
  Value transposedBlock =
      b.transposedChunk
          ? kb.window(b.transposedChunk, {kw, group * mw}, (kt - chunkKt0) * mw)
          : kb.tile(MemorySpace::sbuf, kw, {group * mw}, inType);
  evict(transposedBlock, transposed);
  if (b.transposedChunk && (kt + group) * kMatmulK == b.chunkK0 + b.chunkKw)
    storeTransposed(b.transposedChunk, b.panelBase, chunkKt0, kMatmulK,
                    b.chunkKw / kMatmulK, mw);
  else if (b.storeToScratch && !b.transposedChunk)
    storeTransposed(transposedBlock, b.panelBase, kt, kw, group, mw);
  for (int64_t j = 0; j < group; ++j)
    stationaries.push_back(kb.window(transposedBlock, {kw, mw}, j * mw));
}

/// Transposed K tiles [kt, kt + group) of an M block (side by side in
/// `block`) into the scratch at the M block's panel.
void MatmulLowering::storeTransposed(Value block, int64_t panelBase, int64_t kt,
                                     int64_t kw, int64_t group, int64_t mw) {
  int64_t panelLen = plan.panelLen;
  if (mw == kMatmulM) {
    kb.dma(kb.view(lhsT, panelBase + kt * kMatmulM, kw, panelLen,
                   {group * kMatmulM}, {1}),
           block);
    return;
  }
  for (int64_t j = 0; j < group; ++j)
    kb.dma(
        kb.view(lhsT, panelBase + (kt + j) * kMatmulM, kw, panelLen, {mw}, {1}),
        kb.window(block, {kw, mw}, j * mw));
}

/// K-major lhs: one DMA loads K tile kt of a group of M blocks (runs of up
/// to 2 KiB instead of 256 bytes per partition); the group's tiles serve
/// its M blocks in turn.
Value MatmulLowering::stationaryOfGroup(const MBlock &b, int64_t kt,
                                        int64_t kw) {
  int64_t k0 = kt * kMatmulK, stationaryGroup = plan.stationaryGroup;
  int64_t mb = b.m0 / kMatmulM, g0 = mb / stationaryGroup * stationaryGroup;
  std::pair<int64_t, int64_t> key{b.lhsBase, g0};
  if (groupKey != key) {
    groupKey = key;
    groupTiles.assign(plan.kTiles, Value());
  }
  Value &tile = groupTiles[kt];
  int64_t gm0 = g0 * kMatmulM;
  if (!tile) {
    int64_t width = std::min(stationaryGroup * kMatmulM, shape.m - gm0);
    tile = kb.tile(MemorySpace::sbuf, kw, {width}, inType);
    kb.dma(tile, kb.view(lhs, b.lhsBase + k0 * shape.lhsKStride + gm0, kw,
                         shape.lhsKStride, {width}, {1}));
  }
  return kb.window(tile, {kw, b.mw}, b.m0 - gm0);
}

/// K tile kt of an M block's lhs^T, loaded on its own.
Value MatmulLowering::loadStationary(const MBlock &b, int64_t kt, int64_t kw) {
  int64_t k0 = kt * kMatmulK;
  Value stationary = kb.tile(MemorySpace::sbuf, kw, {b.mw}, inType);
  loadKMajor(stationary, lhs,
             b.lhsBase + k0 * shape.lhsKStride + b.m0 * shape.lhsMStride, kw,
             b.mw, shape.lhsKStride, shape.lhsMStride);
  return stationary;
}

//===----------------------------------------------------------------------===//
// The loop nests
//===----------------------------------------------------------------------===//

/// Column blocks outermost, then M blocks, then K.
LogicalResult MatmulLowering::emitColumnBlocks() {
  for (auto [blockIndex, block] : llvm::enumerate(plan.columnBlocks)) {
    bool hasNext = blockIndex + 1 < plan.columnBlocks.size();
    for (int64_t mb = 0; mb < plan.mBlocks; ++mb)
      if (failed(emitMBlock(blockIndex, mb)))
        return failure();
    if (plan.residentPanel && hasNext) {
      panel.assign(plan.kTiles, Value());
      if (plan.prefetchPanel || plan.refillPanel)
        std::swap(panel, nextPanel);
    }
  }
  return success();
}

/// M block mb of a column block: its K loop, software-pipelined, and its
/// accumulators' end.
LogicalResult MatmulLowering::emitMBlock(size_t blockIndex, int64_t mb) {
  const ColumnBlock &block = plan.columnBlocks[blockIndex];
  int64_t batch = block.batch, n0 = block.n0, nw = block.nw;
  int64_t kTiles = plan.kTiles, mBlocks = plan.mBlocks;
  bool hasNext = blockIndex + 1 < plan.columnBlocks.size();
  MBlock state;
  Group current;
  if (preparedAhead) {
    state = std::move(preparedAhead->first);
    current = std::move(preparedAhead->second);
    preparedAhead.reset();
  }
  int64_t m0 = mb * kMatmulM, mw = std::min(kMatmulM, shape.m - m0);
  // One PSUM accumulator per bank-wide part of the block.
  SmallVector<Value> accs = allocateAccumulators(mw, nw);
  if (plan.prefetchPanel && hasNext)
    for (int64_t kt = mb * kTiles / mBlocks, end = (mb + 1) * kTiles / mBlocks;
         kt < end; ++kt)
      fillPanel(plan.columnBlocks[blockIndex + 1], kt,
                panelOffsetOf(blockIndex + 1), nextPanel);
  if (current.count == 0) {
    state = startMBlock(block, mb);
    current = prepareStationary(state, 0);
  }
  // Software-pipelined: the next group's transposes are issued before
  // this group's matmuls, so the Tensor Engine transposes while the
  // Scalar or Vector Engine evicts the previous group.
  while (current.count > 0) {
    int64_t nextKt = current.kt + current.count;
    Group next = nextKt < kTiles ? prepareStationary(state, nextKt) : Group();
    if (next.count == 0 && mb + 1 < mBlocks) {
      MBlock ahead = startMBlock(block, mb + 1);
      Group first = prepareStationary(ahead, 0);
      preparedAhead.emplace(std::move(ahead), std::move(first));
    }
    for (int64_t j = 0; j < current.count; ++j) {
      int64_t kt = current.kt + j;
      Value moving;
      if (!plan.residentPanel)
        moving = loadMoving(block, kt);
      else {
        fillPanel(block, kt, panelOffsetOf(blockIndex), panel);
        moving = panel[kt];
      }
      int64_t kw = std::min(kMatmulK, shape.k - kt * kMatmulK);
      issueMatmuls(accs, current.stationaries[j], moving, kw, nw,
                   /*accumulate=*/kt > 0);
      // The last M block frees the panel's K tiles in order: each is
      // refilled with the next block's as soon as its matmuls ran (a
      // chunk of them once the chunk's last one ran).
      if (plan.refillPanel && hasNext && mb == mBlocks - 1 &&
          (!plan.chunkedPanel || (kt + 1) % kChunkTiles == 0 ||
           kt + 1 == kTiles))
        fillPanel(plan.columnBlocks[blockIndex + 1], kt,
                  panelOffsetOf(blockIndex + 1), nextPanel);
    }
    current = std::move(next);
  }
  for (auto [part, acc] : llvm::enumerate(accs)) {
    int64_t s0 = static_cast<int64_t>(part) * kMatmulN;
    int64_t sw = std::min(kMatmulN, nw - s0);
    if (failed(finishTile(acc, batch, m0, mw, n0 + s0, sw)))
      return failure();
  }
  return success();
}

/// K chunks outermost (Plan::kChunked): each chunk's panel is loaded once
/// and serves every M block, whose partial sums carry over in SBUF.
LogicalResult MatmulLowering::emitKChunked() {
  int64_t k = shape.k, n = shape.n, kTiles = plan.kTiles;
  int64_t chunkTiles = plan.outerChunkTiles;
  ColumnBlock block{0, 0, n};
  Value chunkPanel = kb.tile(MemorySpace::sbuf, std::min(kMatmulK, k),
                             {chunkTiles * n}, inType);
  SmallVector<SmallVector<Value>> sums(plan.mBlocks);
  for (int64_t kt0 = 0; kt0 < kTiles; kt0 += chunkTiles) {
    int64_t kt1 = std::min(kTiles, kt0 + chunkTiles);
    bool lastChunk = kt1 == kTiles;
    SmallVector<Value> chunk(kt1 - kt0);
    for (int64_t mb = 0; mb < plan.mBlocks; ++mb) {
      MBlock state = startMBlock(block, mb);
      state.ktEnd = kt1;
      SmallVector<Value> accs = allocateAccumulators(state.mw, n);
      Group current = prepareStationary(state, kt0);
      while (current.count > 0) {
        int64_t nextKt = current.kt + current.count;
        Group next = nextKt < kt1 ? prepareStationary(state, nextKt) : Group();
        for (int64_t j = 0; j < current.count; ++j) {
          int64_t kt = current.kt + j;
          int64_t kw = std::min(kMatmulK, k - kt * kMatmulK);
          Value &moving = chunk[kt - kt0];
          if (!moving) {
            moving = kb.window(chunkPanel, {kw, n}, (kt - kt0) * n);
            loadKMajor(moving, rhs, kt * kMatmulK * shape.rhsKStride, kw, n,
                       shape.rhsKStride, shape.rhsNStride);
          }
          issueMatmuls(accs, current.stationaries[j], moving, kw, n,
                       /*accumulate=*/kt > kt0);
        }
        current = std::move(next);
      }
      if (failed(addChunk(accs, sums[mb], state.m0, state.mw, kt0, lastChunk)))
        return failure();
    }
  }
  return success();
}

/// One K chunk's accumulators of an M block added to its partial sums; the
/// last chunk's totals end as result tiles.
LogicalResult MatmulLowering::addChunk(ArrayRef<Value> accs,
                                       SmallVectorImpl<Value> &sums, int64_t m0,
                                       int64_t mw, int64_t kt0,
                                       bool lastChunk) {
  sums.resize(accs.size());
  for (auto [part, acc] : llvm::enumerate(accs)) {
    int64_t s0 = static_cast<int64_t>(part) * kMatmulN;
    int64_t sw = std::min(kMatmulN, shape.n - s0);
    Value total = acc;
    if (kt0 > 0) {
      total = kb.tile(MemorySpace::sbuf, mw, {sw}, f32);
      builder.create<TensorTensorOp>(kb.loc, AluOp::add, total, sums[part], acc,
                                     Engine::vector);
    }
    if (!lastChunk) {
      if (kt0 == 0) {
        total = kb.tile(MemorySpace::sbuf, mw, {sw}, f32);
        evict(total, acc);
      }
      sums[part] = total;
      continue;
    }
    if (failed(finishTile(total, /*batch=*/0, m0, mw, s0, sw)))
      return failure();
  }
  return success();
}

/// Whole row blocks for an epilogue that reduces them (a norm: Vector
/// bound). Engine queues run in order, so M block i + 1's stationary
/// tiles are all prepared (transposed and evicted) before block i's
/// epilogue is emitted: the Tensor Engine then computes block i + 1
/// while the Vector Engine runs block i's epilogue. Prepared group by
/// group, block i + 1's evictions queued behind that epilogue and the
/// Tensor Engine waited for it at every block.
LogicalResult MatmulLowering::emitWholeRows() {
  SmallVector<std::pair<const ColumnBlock *, int64_t>> steps;
  for (const ColumnBlock &block : plan.columnBlocks)
    for (int64_t mb = 0; mb < plan.mBlocks; ++mb)
      steps.push_back({&block, mb});
  SmallVector<Group> groups, nextGroups;
  prepareAllGroups(*steps[0].first, steps[0].second, groups);
  for (size_t step = 0; step < steps.size(); ++step) {
    const ColumnBlock &block = *steps[step].first;
    int64_t m0 = steps[step].second * kMatmulM;
    int64_t mw = std::min(kMatmulM, shape.m - m0), nw = block.nw;
    SmallVector<Value> accs = allocateAccumulators(mw, nw);
    for (const Group &group : groups)
      for (int64_t j = 0; j < group.count; ++j) {
        int64_t kt = group.kt + j;
        fillPanel(block, kt, 0, panel);
        int64_t kw = std::min(kMatmulK, shape.k - kt * kMatmulK);
        issueMatmuls(accs, group.stationaries[j], panel[kt], kw, nw,
                     /*accumulate=*/kt > 0);
      }
    // The banks into one tile of whole rows, rounded to the result type.
    Value rowsTile = kb.tile(MemorySpace::sbuf, mw, {nw}, outType);
    for (auto [part, acc] : llvm::enumerate(accs)) {
      int64_t s0 = static_cast<int64_t>(part) * kMatmulN;
      evict(accs.size() == 1
                ? rowsTile
                : kb.window(rowsTile, {mw, std::min(kMatmulN, nw - s0)}, s0),
            acc);
    }
    if (step + 1 < steps.size()) {
      if (steps[step + 1].first != &block)
        panel.assign(plan.kTiles, Value());
      prepareAllGroups(*steps[step + 1].first, steps[step + 1].second,
                       nextGroups);
    }
    if (failed(
            epilogue(rowsTile, block.batch * shape.m + m0, mw, block.n0, nw)))
      return failure();
    std::swap(groups, nextGroups);
  }
  return success();
}

/// Every stationary group of M block mb of a column block.
void MatmulLowering::prepareAllGroups(const ColumnBlock &block, int64_t mb,
                                      SmallVectorImpl<Group> &groups) {
  MBlock state = startMBlock(block, mb);
  groups.clear();
  for (int64_t kt = 0; kt < plan.kTiles;) {
    groups.push_back(prepareStationary(state, kt));
    kt += groups.back().count;
  }
}

/// One PSUM accumulator per bank-wide part of `width` columns.
SmallVector<Value> MatmulLowering::allocateAccumulators(int64_t rows,
                                                        int64_t width) {
  SmallVector<Value> accs;
  for (int64_t s0 = 0; s0 < width; s0 += kMatmulN)
    accs.push_back(kb.tile(MemorySpace::psum, rows,
                           {std::min(kMatmulN, width - s0)}, f32));
  return accs;
}

/// One K tile's matmuls into each bank-wide accumulator of a block of
/// `width` columns.
void MatmulLowering::issueMatmuls(ArrayRef<Value> accs, Value stationary,
                                  Value moving, int64_t kw, int64_t width,
                                  bool accumulate) {
  for (auto [part, acc] : llvm::enumerate(accs)) {
    int64_t s0 = static_cast<int64_t>(part) * kMatmulN;
    Value movingPart =
        accs.size() == 1
            ? moving
            : kb.window(moving, {kw, std::min(kMatmulN, width - s0)}, s0);
    builder.create<MatmulOp>(kb.loc, acc, stationary, movingPart, accumulate);
  }
}

/// Evicts a PSUM tile into SBUF, alternating the Scalar and Vector Engines.
/// (With whole rows, every eviction goes to the Scalar Engine: the
/// epilogue's norm keeps the Vector Engine busy.)
void MatmulLowering::evict(Value dst, Value src) {
  if (wholeRows || evictions++ % 2 == 0)
    kb.scalarCopy(dst, src);
  else
    builder.create<TensorCopyOp>(kb.loc, dst, src, Engine::vector);
}

//===----------------------------------------------------------------------===//
// The epilogue
//===----------------------------------------------------------------------===//

/// An accumulator's [mw, width] tile at rows [m0, m0 + mw) of batch `batch`
/// and column col0 of the result: handed to the epilogue, or rounded to the
/// result type and stored.
LogicalResult MatmulLowering::finishTile(Value acc, int64_t batch, int64_t m0,
                                         int64_t mw, int64_t col0,
                                         int64_t width) {
  int64_t m = shape.m, n = shape.n;
  if (epilogue)
    return epilogue(acc, batch * m + m0, mw, col0, width);
  Value result = kb.tile(MemorySpace::sbuf, mw, {width}, outType);
  kb.scalarCopy(result, acc);
  kb.dma(kb.view(out, batch * m * n + m0 * n + col0, mw, n, {width}, {1}),
         result);
  return success();
}
