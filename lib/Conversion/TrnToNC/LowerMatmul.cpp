//===- LowerMatmul.cpp - trn.dot_general on the Tensor Engine -------------===//
//
// A matmul is tiled for the Tensor Engine: the stationary operand (lhs^T,
// [K, M] tiles) and the moving one (rhs, [K, N] tiles) both have K on
// partitions, K accumulates in PSUM, and each [M, N] accumulator is evicted
// into the result or handed to the epilogue of a trn.fusion that starts
// with the matmul (LowerFusion.cpp).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "trn/Dialect/Trn/Utils/MatmulForm.h"

using namespace mlir;
using namespace mlir::trntonc;

/// dot_general with at most one free dim per operand after batch dims:
/// lhs [batch, M, K] or [batch, K, M], rhs [batch, K, N] or [batch, N, K]
/// (any position of K). The Tensor Engine wants K on partitions for both:
/// stationary = lhs^T tiles [K, M], moving = rhs tiles [K, N]. An operand
/// whose K is its last (contiguous) dim is loaded row-contiguously and
/// transposed on the Tensor Engine in 128x128 blocks rather than read with
/// element-strided DMA. Loops run N blocks outermost so that the moving
/// panel (all K tiles of one N block) stays in SBUF across the M blocks when
/// it fits; K accumulates in PSUM.
LogicalResult Lowering::lowerDot(trn::DotGeneralOp op, MatmulEpilogue epilogue,
                                 bool wholeRows) {
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
  int64_t m = lhsType.getDimSize(batchRank + (1 - lk));
  int64_t k = lhsType.getDimSize(batchRank + lk);
  int64_t n = rhsType.getDimSize(batchRank + (1 - rk));
  Value lhs = hbmOf(op.getLhs()), rhs = hbmOf(op.getRhs());
  Value out = epilogue ? Value() : newTensor(op.getResult());
  Type inType = lhsType.getElementType();
  Type outType = resultType.getElementType();
  Type f32 = builder.getF32Type();
  int64_t inBytes = (inType.getIntOrFloatBitWidth() + 7) / 8;

  // A [kw, width] tile of K-major data from `tensor`, whose element (k, j)
  // is at base + k * kStride + j * jStride. With jStride == 1 the rows are
  // contiguous; with kStride == 1 (K contiguous), load [width, kw] blocks and
  // transpose them on the Tensor Engine into `dst` (via PSUM).
  auto loadKMajor = [&](Value dst, Value tensor, int64_t base, int64_t kw,
                        int64_t width, int64_t kStride, int64_t jStride) {
    if (jStride == 1) {
      kb.dma(dst, kb.view(tensor, base, kw, kStride, {width}, {1}));
      return;
    }
    for (int64_t j0 = 0; j0 < width; j0 += kPartitions) {
      int64_t jw = std::min(kPartitions, width - j0);
      Value rows = kb.tile(MemorySpace::sbuf, jw, {kw}, inType);
      kb.dma(rows, kb.view(tensor, base + j0 * jStride, jw, jStride, {kw},
                           {kStride}));
      Value transposed = kb.tile(MemorySpace::psum, kw, {jw}, f32);
      builder.create<TransposeOp>(kb.loc, transposed, rows);
      Value slot = jw == width ? dst : kb.window(dst, {kw, jw}, j0);
      kb.scalarCopy(slot, transposed);
    }
  };
  // Element strides of (K, M) in lhs and (K, N) in rhs within one batch.
  int64_t lhsCols = lhsType.getShape().back();
  int64_t rhsCols = rhsType.getShape().back();
  int64_t lhsKStride = lk == 1 ? 1 : lhsCols,
          lhsMStride = lk == 1 ? lhsCols : 1;
  int64_t rhsKStride = rk == 0 ? rhsCols : 1,
          rhsNStride = rk == 0 ? 1 : rhsCols;
  int64_t kTiles = (k + kMatmulK - 1) / kMatmulK;
  // Column blocks of one or two PSUM banks (trn::matmulColumnBlocking, which
  // trn-fuse-matmul-epilogue also asks whether rows come out whole).
  trn::MatmulColumnBlocking blocking = trn::matmulColumnBlocking(k, n, inBytes);
  int64_t blockWidth = blocking.blockWidth;
  int64_t panelBytes = kTiles * blockWidth * inBytes;
  bool residentPanel = blocking.residentPanel;
  if (wholeRows && !trn::matmulYieldsWholeRows(k, n, inBytes))
    return op.emitError("an epilogue that reduces rows needs each row block "
                        "of the matmul's result whole, but its ")
           << n << " columns come out in blocks of " << blockWidth;
  int64_t batches = product(resultType.getShape().take_front(batchRank));
  int64_t evictions = 0;
  auto view = [&](Value tile, ArrayRef<int64_t> shape, int64_t offset) {
    return kb.window(tile, shape, offset);
  };
  // Evicts a PSUM tile into SBUF, alternating the Scalar and Vector Engines.
  // (With whole rows, every eviction goes to the Scalar Engine: the
  // epilogue's norm keeps the Vector Engine busy.)
  auto evict = [&](Value dst, Value src) {
    if (wholeRows || evictions++ % 2 == 0)
      kb.scalarCopy(dst, src);
    else
      builder.create<TensorCopyOp>(kb.loc, dst, src, Engine::vector);
  };
  // Elements of K per DMA of row-major lhs rows (4 KiB of bf16 per
  // partition: near the DMA engines' peak, and four transpose groups).
  constexpr int64_t kLhsRowChunk = 2048;
  // Row-major lhs (K contiguous) is transposed once per call when several
  // column blocks reuse it: while the first N block of a batch computes, each M
  // block's transposed tiles are also stored into an HBM scratch laid out so
  // that later N blocks load one M block's stationary tiles with one
  // contiguous DMA: lhsT[batch][mb][p][kt][j] = lhs[batch][mb*128+j][kt*128+p].
  int64_t mBlocks = (m + kMatmulM - 1) / kMatmulM;
  int64_t panelLen = kTiles * kMatmulM;
  bool transposeOnce =
      lhsKStride == 1 && n > blockWidth && panelLen * inBytes <= 32 * 1024;
  Value lhsT;
  if (transposeOnce)
    lhsT = kb.scratch({batches * mBlocks, kMatmulM, panelLen}, inType);
  auto storeTransposed = [&](Value block, int64_t panelBase, int64_t kt,
                             int64_t kw, int64_t group, int64_t mw) {
    if (mw == kMatmulM) {
      kb.dma(kb.view(lhsT, panelBase + kt * kMatmulM, kw, panelLen,
                     {group * kMatmulM}, {1}),
             block);
      return;
    }
    for (int64_t j = 0; j < group; ++j)
      kb.dma(kb.view(lhsT, panelBase + (kt + j) * kMatmulM, kw, panelLen, {mw},
                     {1}),
             view(block, {kw, mw}, j * mw));
  };

  // The result's column blocks in order; each computes every M block against
  // one resident moving panel.
  struct ColumnBlock {
    int64_t batch, n0, nw;
  };
  SmallVector<ColumnBlock> columnBlocks;
  for (int64_t batch = 0; batch < batches; ++batch)
    for (int64_t n0 = 0; n0 < n; n0 += blockWidth)
      columnBlocks.push_back({batch, n0, std::min(blockWidth, n - n0)});
  // The next column block's panel is loaded piecewise while this one
  // computes (two panels live at once) when both fit next to the stationary
  // buffers; otherwise the Tensor Engine waits for each panel.
  bool prefetchPanel =
      residentPanel && columnBlocks.size() > 1 && panelBytes <= 64 * 1024;
  // A panel too large for two is refilled K tile by K tile during the last
  // M block instead.
  bool refillPanel = residentPanel && !prefetchPanel && columnBlocks.size() > 1;
  // Resident panels live in one tile allocated once for the whole matmul
  // (two halves that alternate when prefetching): one large allocation
  // cannot be fragmented by the small tiles cycling around it.
  int64_t panelElements = kTiles * blockWidth;
  Value panelBuffers;
  auto panelOffsetOf = [&](size_t blockIndex) {
    return prefetchPanel ? static_cast<int64_t>(blockIndex % 2) * panelElements
                         : 0;
  };
  // K tile kt of a column block's moving data: into the block's panel when
  // `panelOffset` is set, else into a tile of its own.
  auto loadMoving = [&](const ColumnBlock &block, int64_t kt,
                        std::optional<int64_t> panelOffset = std::nullopt) {
    int64_t k0 = kt * kMatmulK, kw = std::min(kMatmulK, k - k0);
    Value moving =
        panelOffset
            ? view(panelBuffers, {kw, block.nw}, *panelOffset + kt * block.nw)
            : kb.tile(MemorySpace::sbuf, kw, {block.nw}, inType);
    loadKMajor(moving, rhs,
               block.batch * k * n + k0 * rhsKStride + block.n0 * rhsNStride,
               kw, block.nw, rhsKStride, rhsNStride);
    return moving;
  };
  // Allocated before any other tile of the matmul, while SBUF is empty.
  if (residentPanel)
    panelBuffers = kb.tile(MemorySpace::sbuf, std::min(kMatmulK, k),
                           {prefetchPanel ? 2 : 1, panelElements}, inType);
  // Transposes of up to four full K tiles share one PSUM bank and one
  // eviction (the per-instruction overhead of an eviction is larger than its
  // work at 128 columns); evictions alternate between the Scalar and the
  // Vector Engine.
  constexpr int64_t kGroup = 4;
  // A panel's K tiles are loaded when first used (so the first column
  // block's DMAs come in the order the Tensor Engine needs them) unless
  // prefetched.
  SmallVector<Value> panel(kTiles), nextPanel(kTiles);
  // Moving data whose K is contiguous (an nn.Linear weight [N, K]) fills a
  // resident panel a chunk of K tiles at a time: each 128-row block of N
  // loads [128, up to 2048 of K] with one DMA, and one K tile of four row
  // blocks transposes into one PSUM bank and leaves it with one eviction.
  // Tile by tile, every 128x128 block took a DMA of 256-byte runs, a
  // transpose and an eviction of its own, in series.
  bool chunkedPanel = residentPanel && rhsKStride == 1;
  constexpr int64_t kChunkTiles = kLhsRowChunk / kMatmulK;
  auto fillPanelChunk = [&](const ColumnBlock &block, int64_t kt,
                            int64_t panelOffset, SmallVectorImpl<Value> &into) {
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
        evict(view(panelBuffers, {kw, gw},
                   panelOffset + (chunkKt0 + t) * block.nw + g0),
              transposeBlocks(rowBlocks, t * kMatmulK, kw));
      }
    }
    for (int64_t t = 0; t < chunkTiles; ++t) {
      int64_t kw = std::min(kMatmulK, chunkKw - t * kMatmulK);
      into[chunkKt0 + t] = view(panelBuffers, {kw, block.nw},
                                panelOffset + (chunkKt0 + t) * block.nw);
    }
  };
  // K tile kt of a column block's resident panel into `into`, loaded if it
  // is not there yet.
  auto fillPanel = [&](const ColumnBlock &block, int64_t kt,
                       int64_t panelOffset, SmallVectorImpl<Value> &into) {
    if (into[kt])
      return;
    if (chunkedPanel)
      fillPanelChunk(block, kt, panelOffset, into);
    else
      into[kt] = loadMoving(block, kt, panelOffset);
  };

  // One M block's row range and the lhs tiles its stationary operands come
  // from (the current chunk of lhs rows, of transposed rows, or of the
  // transposed scratch).
  struct MBlock {
    int64_t m0 = 0, mw = 0, panelBase = 0, lhsBase = 0;
    bool storeToScratch = false, fromScratch = false, rowsPath = false;
    Value scratchChunk, rowsChunk, transposedChunk;
    int64_t scratchKt0 = 0, scratchTiles = 0, chunkK0 = 0, chunkKw = 0;
    int64_t ktEnd = 0; ///< stationary groups stop here
  };
  // The stationary tiles of K tiles [kt, kt + count).
  struct Group {
    int64_t kt = 0, count = 0;
    SmallVector<Value> stationaries;
  };
  auto startMBlock = [&](const ColumnBlock &block, int64_t mb) {
    MBlock state;
    state.m0 = mb * kMatmulM;
    state.mw = std::min(kMatmulM, m - state.m0);
    state.panelBase = (block.batch * mBlocks + mb) * kMatmulM * panelLen;
    state.lhsBase = block.batch * m * k;
    // Later column blocks read the transposed lhs from the scratch in chunks
    // of K tiles (one contiguous run per partition each): large transfers
    // whose tiles die as soon as their matmuls ran, so the next M block's
    // chunks load into the space the current one frees.
    state.storeToScratch = transposeOnce && block.n0 == 0;
    state.fromScratch = transposeOnce && !state.storeToScratch;
    // Row-major lhs rows come in chunks of K (large transfers whose tiles die
    // once transposed, so the next chunk's load overlaps compute).
    state.rowsPath = !state.fromScratch && lhsKStride == 1;
    state.ktEnd = kTiles;
    return state;
  };
  // K-major lhs (a weight gradient's dY^T: M contiguous) loads the
  // stationary tiles of up to eight M blocks at once while they take at most
  // 32 KiB per partition: 256-byte runs per partition made these DMAs three
  // times slower than streaming.
  int64_t stationaryGroup = 1;
  if (lhsKStride != 1 && lhsMStride == 1)
    while (2 * stationaryGroup <= std::min<int64_t>(8, mBlocks) &&
           kTiles * 2 * stationaryGroup * kMatmulM * inBytes <= 32 * 1024)
      stationaryGroup *= 2;
  std::optional<std::pair<int64_t, int64_t>> groupKey;
  SmallVector<Value> groupTiles;
  auto prepare = [&](MBlock &b, int64_t kt) {
    Group prepared;
    prepared.kt = kt;
    int64_t k0 = kt * kMatmulK, kw = std::min(kMatmulK, k - k0);
    int64_t mw = b.mw;
    if (b.rowsPath && (!b.rowsChunk || k0 >= b.chunkK0 + b.chunkKw)) {
      b.chunkK0 = k0;
      b.chunkKw = std::min(kLhsRowChunk, k - k0);
      b.rowsChunk = kb.tile(MemorySpace::sbuf, mw, {b.chunkKw}, inType);
      kb.dma(b.rowsChunk, kb.view(lhs, b.lhsBase + b.m0 * lhsMStride + k0, mw,
                                  lhsMStride, {b.chunkKw}, {1}));
      // When storing to the scratch, a chunk of full K tiles is transposed
      // into one tile and stored with one DMA (4 KiB per partition instead
      // of 1 KiB ones, which waste DMA time on per-buffer costs).
      b.transposedChunk = Value();
      if (b.storeToScratch && mw == kMatmulM && b.chunkKw % kMatmulK == 0)
        b.transposedChunk = kb.tile(MemorySpace::sbuf, kMatmulK,
                                    {b.chunkKw / kMatmulK * mw}, inType);
    }
    int64_t group = 1;
    if (b.rowsPath && kw == kMatmulK)
      while (group < kGroup && kt + group < b.ktEnd &&
             (kt + group + 1) * kMatmulK <= b.chunkK0 + b.chunkKw &&
             group * mw + mw <= 512)
        ++group;
    prepared.count = group;
    if (b.fromScratch) {
      if (!b.scratchChunk || kt >= b.scratchKt0 + b.scratchTiles) {
        int64_t pk = std::min(kMatmulK, k);
        b.scratchKt0 = kt;
        b.scratchTiles = std::min(kLhsRowChunk / kMatmulK, kTiles - kt);
        b.scratchChunk =
            kb.tile(MemorySpace::sbuf, pk, {b.scratchTiles * kMatmulM}, inType);
        kb.dma(b.scratchChunk,
               kb.view(lhsT, b.panelBase + kt * kMatmulM, pk, panelLen,
                       {b.scratchTiles * kMatmulM}, {1}));
      }
      prepared.stationaries.push_back(
          view(b.scratchChunk, {kw, mw}, (kt - b.scratchKt0) * kMatmulM));
    } else if (b.rowsPath) {
      Value transposed = kb.tile(MemorySpace::psum, kw, {group * mw}, f32);
      for (int64_t j = 0; j < group; ++j) {
        Value slice =
            view(b.rowsChunk, {mw, kw}, k0 - b.chunkK0 + j * kMatmulK);
        builder.create<TransposeOp>(kb.loc, view(transposed, {kw, mw}, j * mw),
                                    slice);
      }
      int64_t chunkKt0 = b.chunkK0 / kMatmulK;
      Value transposedBlock =
          b.transposedChunk
              ? view(b.transposedChunk, {kw, group * mw}, (kt - chunkKt0) * mw)
              : kb.tile(MemorySpace::sbuf, kw, {group * mw}, inType);
      evict(transposedBlock, transposed);
      if (b.transposedChunk && (kt + group) * kMatmulK == b.chunkK0 + b.chunkKw)
        storeTransposed(b.transposedChunk, b.panelBase, chunkKt0, kMatmulK,
                        b.chunkKw / kMatmulK, mw);
      else if (b.storeToScratch && !b.transposedChunk)
        storeTransposed(transposedBlock, b.panelBase, kt, kw, group, mw);
      for (int64_t j = 0; j < group; ++j)
        prepared.stationaries.push_back(
            view(transposedBlock, {kw, mw}, j * mw));
    } else if (stationaryGroup > 1) {
      // K-major lhs: one DMA loads K tile kt of a group of M blocks (runs of
      // up to 2 KiB instead of 256 bytes per partition); the group's tiles
      // serve its M blocks in turn.
      int64_t mb = b.m0 / kMatmulM, g0 = mb / stationaryGroup * stationaryGroup;
      std::pair<int64_t, int64_t> key{b.lhsBase, g0};
      if (groupKey != key) {
        groupKey = key;
        groupTiles.assign(kTiles, Value());
      }
      Value &tile = groupTiles[kt];
      int64_t gm0 = g0 * kMatmulM;
      if (!tile) {
        int64_t width = std::min(stationaryGroup * kMatmulM, m - gm0);
        tile = kb.tile(MemorySpace::sbuf, kw, {width}, inType);
        kb.dma(tile, kb.view(lhs, b.lhsBase + k0 * lhsKStride + gm0, kw,
                             lhsKStride, {width}, {1}));
      }
      prepared.stationaries.push_back(view(tile, {kw, mw}, b.m0 - gm0));
    } else {
      Value stationary = kb.tile(MemorySpace::sbuf, kw, {mw}, inType);
      loadKMajor(stationary, lhs,
                 b.lhsBase + k0 * lhsKStride + b.m0 * lhsMStride, kw, mw,
                 lhsKStride, lhsMStride);
      prepared.stationaries.push_back(stationary);
    }
    return prepared;
  };

  // One K tile's matmuls into each bank-wide accumulator of a block of
  // `width` columns.
  auto issueMatmuls = [&](ArrayRef<Value> accs, Value stationary, Value moving,
                          int64_t kw, int64_t width, bool accumulate) {
    for (auto [part, acc] : llvm::enumerate(accs)) {
      int64_t s0 = static_cast<int64_t>(part) * kMatmulN;
      Value movingPart =
          accs.size() == 1
              ? moving
              : view(moving, {kw, std::min(kMatmulN, width - s0)}, s0);
      builder.create<MatmulOp>(kb.loc, acc, stationary, movingPart, accumulate);
    }
  };
  // K too large for a resident panel, with the whole result small enough
  // to keep in SBUF (an MLM head's input gradient: K = the vocabulary):
  // K runs outermost in chunks whose panel is resident, each M block's
  // partial sums accumulate in an fp32 SBUF tile across chunks (the Vector
  // Engine adds each chunk's PSUM), and both operands are read once.
  // Without this, the moving data went through SBUF once per M block.
  int64_t chunkTiles =
      std::max<int64_t>(1, 64 * 1024 / (std::max<int64_t>(n, 1) * inBytes)) /
      kChunkTiles * kChunkTiles;
  bool kChunked = !residentPanel && !transposeOnce && batches == 1 &&
                  n <= 2 * kMatmulN && chunkTiles > 0 && kTiles > chunkTiles &&
                  mBlocks * n * 4 <= 64 * 1024;
  if (kChunked) {
    ColumnBlock block{0, 0, n};
    Value chunkPanel = kb.tile(MemorySpace::sbuf, std::min(kMatmulK, k),
                               {chunkTiles * n}, inType);
    SmallVector<SmallVector<Value>> sums(mBlocks);
    for (int64_t kt0 = 0; kt0 < kTiles; kt0 += chunkTiles) {
      int64_t kt1 = std::min(kTiles, kt0 + chunkTiles);
      bool lastChunk = kt1 == kTiles;
      SmallVector<Value> chunk(kt1 - kt0);
      for (int64_t mb = 0; mb < mBlocks; ++mb) {
        MBlock state = startMBlock(block, mb);
        state.ktEnd = kt1;
        int64_t m0 = state.m0, mw = state.mw;
        SmallVector<Value> accs;
        for (int64_t s0 = 0; s0 < n; s0 += kMatmulN)
          accs.push_back(kb.tile(MemorySpace::psum, mw,
                                 {std::min(kMatmulN, n - s0)}, f32));
        Group current = prepare(state, kt0);
        while (current.count > 0) {
          int64_t nextKt = current.kt + current.count;
          Group next = nextKt < kt1 ? prepare(state, nextKt) : Group();
          for (int64_t j = 0; j < current.count; ++j) {
            int64_t kt = current.kt + j;
            int64_t kw = std::min(kMatmulK, k - kt * kMatmulK);
            Value &moving = chunk[kt - kt0];
            if (!moving) {
              moving = view(chunkPanel, {kw, n}, (kt - kt0) * n);
              loadKMajor(moving, rhs, kt * kMatmulK * rhsKStride, kw, n,
                         rhsKStride, rhsNStride);
            }
            issueMatmuls(accs, current.stationaries[j], moving, kw, n,
                         /*accumulate=*/kt > kt0);
          }
          current = std::move(next);
        }
        sums[mb].resize(accs.size());
        for (auto [part, acc] : llvm::enumerate(accs)) {
          int64_t s0 = static_cast<int64_t>(part) * kMatmulN;
          int64_t sw = std::min(kMatmulN, n - s0);
          Value total = acc;
          if (kt0 > 0) {
            total = kb.tile(MemorySpace::sbuf, mw, {sw}, f32);
            builder.create<TensorTensorOp>(kb.loc, AluOp::add, total,
                                           sums[mb][part], acc, Engine::vector);
          }
          if (!lastChunk) {
            if (kt0 == 0) {
              total = kb.tile(MemorySpace::sbuf, mw, {sw}, f32);
              evict(total, acc);
            }
            sums[mb][part] = total;
            continue;
          }
          if (epilogue) {
            if (failed(epilogue(total, m0, mw, s0, sw)))
              return failure();
            continue;
          }
          Value result = kb.tile(MemorySpace::sbuf, mw, {sw}, outType);
          kb.scalarCopy(result, total);
          kb.dma(kb.view(out, m0 * n + s0, mw, n, {sw}, {1}), result);
        }
      }
    }
    return success();
  }

  if (wholeRows) {
    // Whole row blocks for an epilogue that reduces them (a norm: Vector
    // bound). Engine queues run in order, so M block i + 1's stationary
    // tiles are all prepared (transposed and evicted) before block i's
    // epilogue is emitted: the Tensor Engine then computes block i + 1
    // while the Vector Engine runs block i's epilogue. Prepared group by
    // group, block i + 1's evictions queued behind that epilogue and the
    // Tensor Engine waited for it at every block.
    SmallVector<std::pair<const ColumnBlock *, int64_t>> steps;
    for (const ColumnBlock &block : columnBlocks)
      for (int64_t mb = 0; mb < mBlocks; ++mb)
        steps.push_back({&block, mb});
    auto prepareAll = [&](size_t step, SmallVectorImpl<Group> &groups) {
      MBlock state = startMBlock(*steps[step].first, steps[step].second);
      groups.clear();
      for (int64_t kt = 0; kt < kTiles;) {
        groups.push_back(prepare(state, kt));
        kt += groups.back().count;
      }
    };
    SmallVector<Group> groups, nextGroups;
    prepareAll(0, groups);
    for (size_t step = 0; step < steps.size(); ++step) {
      const ColumnBlock &block = *steps[step].first;
      int64_t m0 = steps[step].second * kMatmulM;
      int64_t mw = std::min(kMatmulM, m - m0), nw = block.nw;
      SmallVector<Value> accs;
      for (int64_t s0 = 0; s0 < nw; s0 += kMatmulN)
        accs.push_back(
            kb.tile(MemorySpace::psum, mw, {std::min(kMatmulN, nw - s0)}, f32));
      for (const Group &group : groups)
        for (int64_t j = 0; j < group.count; ++j) {
          int64_t kt = group.kt + j;
          fillPanel(block, kt, 0, panel);
          int64_t kw = std::min(kMatmulK, k - kt * kMatmulK);
          issueMatmuls(accs, group.stationaries[j], panel[kt], kw, nw,
                       /*accumulate=*/kt > 0);
        }
      // The banks into one tile of whole rows, rounded to the result type.
      Value rowsTile = kb.tile(MemorySpace::sbuf, mw, {nw}, outType);
      for (auto [part, acc] : llvm::enumerate(accs)) {
        int64_t s0 = static_cast<int64_t>(part) * kMatmulN;
        evict(accs.size() == 1
                  ? rowsTile
                  : view(rowsTile, {mw, std::min(kMatmulN, nw - s0)}, s0),
              acc);
      }
      if (step + 1 < steps.size()) {
        if (steps[step + 1].first != &block)
          panel.assign(kTiles, Value());
        prepareAll(step + 1, nextGroups);
      }
      if (failed(epilogue(rowsTile, block.batch * m + m0, mw, block.n0, nw)))
        return failure();
      std::swap(groups, nextGroups);
    }
    return success();
  }

  // The first stationary group of the next M block of the same column block,
  // prepared (its rows loaded and transposed) before the current block's
  // last matmuls so that its evictions overlap them instead of stalling the
  // Tensor Engine at every block boundary.
  std::optional<std::pair<MBlock, Group>> preparedAhead;
  for (auto [blockIndex, block] : llvm::enumerate(columnBlocks)) {
    int64_t batch = block.batch, n0 = block.n0, nw = block.nw;
    int64_t outBase = batch * m * n;
    bool hasNext = blockIndex + 1 < columnBlocks.size();
    for (int64_t mb = 0; mb < mBlocks; ++mb) {
      MBlock state;
      Group current;
      if (preparedAhead) {
        state = std::move(preparedAhead->first);
        current = std::move(preparedAhead->second);
        preparedAhead.reset();
      }
      int64_t m0 = mb * kMatmulM, mw = std::min(kMatmulM, m - m0);
      // One PSUM accumulator per bank-wide part of the block.
      SmallVector<Value> accs;
      for (int64_t s0 = 0; s0 < nw; s0 += kMatmulN)
        accs.push_back(
            kb.tile(MemorySpace::psum, mw, {std::min(kMatmulN, nw - s0)}, f32));
      if (prefetchPanel && hasNext)
        for (int64_t kt = mb * kTiles / mBlocks,
                     end = (mb + 1) * kTiles / mBlocks;
             kt < end; ++kt)
          fillPanel(columnBlocks[blockIndex + 1], kt,
                    panelOffsetOf(blockIndex + 1), nextPanel);
      if (current.count == 0) {
        state = startMBlock(block, mb);
        current = prepare(state, 0);
      }
      // Software-pipelined: the next group's transposes are issued before
      // this group's matmuls, so the Tensor Engine transposes while the
      // Scalar or Vector Engine evicts the previous group.
      while (current.count > 0) {
        int64_t nextKt = current.kt + current.count;
        Group next = nextKt < kTiles ? prepare(state, nextKt) : Group();
        if (next.count == 0 && mb + 1 < mBlocks) {
          MBlock ahead = startMBlock(block, mb + 1);
          Group first = prepare(ahead, 0);
          preparedAhead.emplace(std::move(ahead), std::move(first));
        }
        for (int64_t j = 0; j < current.count; ++j) {
          int64_t kt = current.kt + j;
          Value moving;
          if (!residentPanel)
            moving = loadMoving(block, kt);
          else {
            fillPanel(block, kt, panelOffsetOf(blockIndex), panel);
            moving = panel[kt];
          }
          int64_t kw = std::min(kMatmulK, k - kt * kMatmulK);
          issueMatmuls(accs, current.stationaries[j], moving, kw, nw,
                       /*accumulate=*/kt > 0);
          // The last M block frees the panel's K tiles in order: each is
          // refilled with the next block's as soon as its matmuls ran (a
          // chunk of them once the chunk's last one ran).
          if (refillPanel && hasNext && mb == mBlocks - 1 &&
              (!chunkedPanel || (kt + 1) % kChunkTiles == 0 ||
               kt + 1 == kTiles))
            fillPanel(columnBlocks[blockIndex + 1], kt,
                      panelOffsetOf(blockIndex + 1), nextPanel);
        }
        current = std::move(next);
      }
      for (auto [part, acc] : llvm::enumerate(accs)) {
        int64_t s0 = static_cast<int64_t>(part) * kMatmulN;
        int64_t sw = std::min(kMatmulN, nw - s0);
        if (epilogue) {
          if (failed(epilogue(acc, batch * m + m0, mw, n0 + s0, sw)))
            return failure();
          continue;
        }
        Value result = kb.tile(MemorySpace::sbuf, mw, {sw}, outType);
        kb.scalarCopy(result, acc);
        kb.dma(kb.view(out, outBase + m0 * n + n0 + s0, mw, n, {sw}, {1}),
               result);
      }
    }
    if (residentPanel && hasNext) {
      panel.assign(kTiles, Value());
      if (prefetchPanel || refillPanel)
        std::swap(panel, nextPanel);
    }
  }
  return success();
}
