//===- Lowering.h - trn to nc lowering internals ---------------*- C++ -*-===//
//
// Shared by the files of convert-trn-to-nc: the per-graph lowering state and
// the helpers that build nc kernels. Private to lib/Conversion/TrnToNC.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_CONVERSION_TRNTONC_LOWERING_H
#define TRN_LIB_CONVERSION_TRNTONC_LOWERING_H

#include "trn/Dialect/NC/IR/NCOps.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::trntonc {

using namespace mlir::nc;

/// Free elements per partition in one tile: 8 KiB of f32, so that the tiles
/// of one op (at most four) stay well inside SBUF.
constexpr int64_t kTileColumns = 2048;
constexpr int64_t kPartitions = 128;
constexpr int64_t kMatmulM = 128, kMatmulN = 512, kMatmulK = 128;

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape);
int64_t product(ArrayRef<int64_t> values);
SmallVector<int64_t> hbmShape(ArrayRef<int64_t> shape);
AluOp aluOpFor(trn::ReduceKind kind);
/// Comparisons write 1.0 or 0.0, which convert to i1 true and false.
AluOp aluOpFor(trn::ComparisonPredicate predicate);
/// Whether a transpose's `perm` swaps the last two dims only.
bool isLastTwoSwap(ArrayRef<int64_t> perm);
/// The Scalar Engine function of a unary trn op, if it is one.
std::optional<ActivationFunc> activationFor(Operation *op);
/// The ALU op of a binary elementwise trn op (comparisons included), if it
/// is one.
std::optional<AluOp> binaryAluOpFor(Operation *op);

/// One strided side of a copy: element `offset + sum(i_d * strides[d])` of
/// `tensor` for an iteration index `i`.
struct Side {
  Value tensor;
  int64_t offset = 0;
  SmallVector<int64_t> strides;
};

class KernelBuilder {
public:
  KernelBuilder(OpBuilder &builder, Location loc) : b(builder), loc(loc) {}

  Value view(Value hbm, int64_t offset, int64_t partitions,
             int64_t partitionStride, ArrayRef<int64_t> sizes,
             ArrayRef<int64_t> strides) {
    Type elementType = cast<HbmType>(hbm.getType()).getElementType();
    SmallVector<int64_t> shape{partitions};
    llvm::append_range(shape, sizes);
    auto type =
        TileType::get(b.getContext(), MemorySpace::hbm, shape, elementType);
    auto op = b.create<ViewOp>(
        loc, type, hbm, b.getI64IntegerAttr(0), b.getI64IntegerAttr(offset),
        b.getI64IntegerAttr(partitionStride), b.getDenseI64ArrayAttr(strides));
    return op.getResult();
  }
  /// The contiguous window [shape[0] partitions, shape[1:] elements] at
  /// free element `offset` of an SBUF or PSUM tile; a window of a
  /// contiguous window is taken from the underlying tile (views of views are
  /// not exported).
  Value window(Value tile, ArrayRef<int64_t> shape, int64_t offset) {
    int64_t startPartition = 0;
    if (auto parent = tile.getDefiningOp<ViewOp>();
        parent && parent.getStrides() == ArrayRef<int64_t>{1}) {
      startPartition = parent.getStartPartition();
      offset += parent.getOffset();
      tile = parent.getSource();
    }
    auto base = cast<TileType>(tile.getType());
    auto type = TileType::get(b.getContext(), base.getMemory(), shape,
                              base.getElementType());
    return b.create<ViewOp>(loc, type, tile,
                            b.getI64IntegerAttr(startPartition),
                            b.getI64IntegerAttr(offset), b.getI64IntegerAttr(0),
                            b.getDenseI64ArrayAttr({1}));
  }
  Value tile(MemorySpace memory, int64_t partitions, ArrayRef<int64_t> sizes,
             Type elementType) {
    SmallVector<int64_t> shape{partitions};
    llvm::append_range(shape, sizes);
    return b.create<AllocOp>(
        loc, TileType::get(b.getContext(), memory, shape, elementType),
        IntegerAttr(), IntegerAttr());
  }
  /// Loads and stores take separate queues (see kLoadQueues).
  void dma(Value dst, Value src) {
    bool store = cast<TileType>(dst.getType()).getMemory() == MemorySpace::hbm;
    int64_t queue = store ? kLoadQueues + nextStoreQueue++ % kStoreQueues
                          : nextLoadQueue++ % kLoadQueues;
    b.create<DmaCopyOp>(loc, dst, src, b.getI64IntegerAttr(queue));
  }
  /// dst = src on the Scalar Engine (PSUM evictions, dtype conversions).
  void scalarCopy(Value dst, Value src) {
    b.create<ActivationOp>(loc, ActivationFunc::copy, dst, src, Value(),
                           Value(), Value(), llvm::APFloat(1.0f),
                           llvm::APFloat(0.0f));
  }
  Value scratch(ArrayRef<int64_t> shape, Type elementType) {
    auto type = HbmType::get(b.getContext(), hbmShape(shape), elementType);
    return b.create<HbmAllocOp>(
        loc, type, b.getStringAttr("t" + std::to_string(counter++)),
        IntegerAttr());
  }
  /// A row-major tile window [rows, cols] at (r0, c0) of a tensor viewed as
  /// [R, C].
  Value rowTile(Value hbm, int64_t cols, int64_t r0, int64_t rows, int64_t c0,
                int64_t width) {
    return view(hbm, r0 * cols + c0, rows, cols, {width}, {1});
  }

  OpBuilder &b;
  Location loc;
  int64_t nextLoadQueue = 0, nextStoreQueue = 0;
  int64_t counter = 0;
};

class FusionLowering;
class MatmulLowering;

class Lowering {
  friend class FusionLowering;
  friend class MatmulLowering;

public:
  Lowering(func::FuncOp graph, OpBuilder &builder)
      : graph(graph), builder(builder), kb(builder, graph.getLoc()) {}
  /// Builds the graph's kernel, not yet in the module (so that several
  /// graphs lower side by side); the caller puts it in the graph's place.
  FailureOr<func::FuncOp> run();

private:
  // The driver and the dispatch (TrnToNC.cpp).
  LogicalResult lower(Operation *op);
  Value hbmOf(Value value) { return values.lookup(value); }
  Value newTensor(Value result) {
    // A value returned as a (non-aliasing) output is computed in place.
    if (Value output = directOutputs.lookup(result)) {
      // The output of a reshape of `result` (see run): the same bytes in
      // the result's own shape.
      auto type = cast<RankedTensorType>(result.getType());
      auto outputType = cast<HbmType>(output.getType());
      if (outputType.getShape() != ArrayRef(hbmShape(type.getShape())))
        output = builder.create<HbmReshapeOp>(
            kb.loc,
            HbmType::get(builder.getContext(), hbmShape(type.getShape()),
                         outputType.getElementType()),
            output);
      values[result] = output;
      return output;
    }
    auto type = cast<RankedTensorType>(result.getType());
    Value hbm = kb.scratch(type.getShape(), type.getElementType());
    values[result] = hbm;
    return hbm;
  }
  /// Calls fn(r0, rows, c0, cols) for every tile of a tensor viewed as
  /// [R, C] (C = last dim).
  template <typename Fn> void forEachTile(ArrayRef<int64_t> shape, Fn fn) {
    int64_t cols = shape.empty() ? 1 : shape.back();
    int64_t rows = shape.empty() ? 1 : product(shape.drop_back());
    for (int64_t r0 = 0; r0 < rows; r0 += kPartitions)
      for (int64_t c0 = 0; c0 < cols; c0 += kTileColumns)
        fn(r0, std::min(kPartitions, rows - r0), c0,
           std::min(kTileColumns, cols - c0));
  }
  /// Element types a tile can hold: trn1 has no int64 arithmetic.
  LogicalResult checkTileable(Operation *op);
  LogicalResult
  elementwise(Operation *op,
              function_ref<void(Value dst, ArrayRef<Value>)> body);
  LogicalResult lowerConstant(trn::ConstantOp op);
  LogicalResult lowerCall(func::CallOp call);
  /// The nc.kind origin of the op being lowered ("<graph>: <op> #<index>").
  StringAttr origin;

  // Ops that only move elements (LowerDataMovement.cpp).
  LogicalResult copy(Operation *op, ArrayRef<int64_t> iterShape,
                     const Side &src, const Side &dst);
  /// Columns [j0, j0 + jw) of row blocks (SBUF tiles of the given heights,
  /// all full 128-row blocks but the last) transposed side by side into one
  /// PSUM tile [jw, total height].
  Value transposeBlocks(ArrayRef<std::pair<Value, int64_t>> rowBlocks,
                        int64_t j0, int64_t jw);
  /// [batches, rows, cols] -> [batches, cols, rows] on the Tensor Engine.
  void transposeOnTensorEngine(Value in, Value out, int64_t batches,
                               int64_t rows, int64_t cols);
  LogicalResult lowerTranspose(trn::TransposeOp op);
  LogicalResult lowerBroadcastInDim(trn::BroadcastInDimOp op);
  Value contiguousSlice(trn::SliceOp op);
  LogicalResult lowerSlice(trn::SliceOp op);
  LogicalResult lowerPad(trn::PadOp op);
  LogicalResult lowerConcatenate(trn::ConcatenateOp op);
  /// Fills concatSlots for `graph`.
  void planConcatsInPlace(func::FuncOp graph);
  LogicalResult lowerRotateHalf(trn::RotateHalfOp op);

  // Matmuls (LowerMatmul.cpp).
  /// What a matmul does with each [rows, width] accumulator tile (PSUM, f32)
  /// of its result instead of storing it: `row0` is the tile's first row of
  /// the result seen as [R, N], `col0` its first column.
  using MatmulEpilogue =
      function_ref<LogicalResult(Value accumulator, int64_t row0, int64_t rows,
                                 int64_t col0, int64_t width)>;
  /// The matmul; with an epilogue (a trn.fusion that starts with it), the
  /// epilogue takes every result tile and nothing is stored here. With
  /// `wholeRows` (an epilogue that reduces rows), it takes each row block
  /// whole, evicted into one SBUF tile of the result type, instead of PSUM
  /// tiles (trn::matmulYieldsWholeRows must hold).
  LogicalResult lowerDot(trn::DotGeneralOp op,
                         MatmulEpilogue epilogue = nullptr,
                         bool wholeRows = false);

  // Reductions (LowerReduce.cpp).
  LogicalResult lowerReduce(trn::ReduceOp op);
  /// out[outBase + k * outStride] = reduce over r < reduced of
  /// in[inBase + k * keptStride + r * reducedStride], for k < kept.
  void reduceStrided(Value in, int64_t inBase, int64_t kept, int64_t keptStride,
                     int64_t reduced, int64_t reducedStride, Value out,
                     int64_t outBase, int64_t outStride, AluOp alu);
  /// out[outBase + c] = sum over r < rows of in[inBase + r * cols + c], for
  /// c < cols, as matmuls with a ones column.
  void sumRowsOnTensorEngine(Value in, int64_t inBase, int64_t rows,
                             int64_t cols, Value out, int64_t outBase);
  /// out[outBase + c] = reduce over r < slices of in[inBase + r * cols + c],
  /// for c < cols (a multiple of 128): each slice as [128, cols / 128]
  /// tiles, combined element-wise on the Vector Engine.
  void reduceSlices(Value in, int64_t inBase, int64_t slices, int64_t cols,
                    Value out, int64_t outBase, AluOp alu);

  // Indices: iota, gather, scatter_add, i64 conversions (LowerIndexing.cpp).
  LogicalResult lowerIota(trn::IotaOp op);
  LogicalResult lowerConvertI64(trn::ConvertOp op);
  LogicalResult lowerGather(trn::GatherOp op);
  LogicalResult lowerScatterAdd(trn::ScatterAddOp op);
  /// The tensor a scatter_add updates: its operand's when that dies there,
  /// else a copy of it.
  Value scatterTarget(trn::ScatterAddOp op);
  /// Loads indices [i0, i0 + count) of an i32 or i64 index tensor into a
  /// [count, 1] i32 tile (i64 indices are read as their low words).
  Value loadIndices(Value indices, int64_t i0, int64_t count);
  /// For rows [i0, i0 + count) of a [batch, classes] tensor seen as a table
  /// of single elements: the i32 column of flat indices
  /// row * classes + indices[row] (GpSimd does the int32 arithmetic).
  Value loadRowElementIndices(Value indices, int64_t i0, int64_t count,
                              int64_t classes);
  /// The HBM tensor `hbm` reshaped to [rows, rowElements].
  Value asTable(Value hbm, int64_t rows, int64_t rowElements);

  /// trn.rng_uniform and trn.rng_bernoulli (LowerRandom.cpp).
  LogicalResult lowerRandom(Operation *op);
  /// Flash-style attention kernels (LowerAttention.cpp).
  LogicalResult lowerAttention(trn::AttentionOp op);
  LogicalResult lowerAttentionGrad(trn::AttentionGradOp op);
  /// A trn.fusion group as one tiled kernel (LowerFusion.cpp).
  LogicalResult lowerFusion(trn::FusionOp op);

  // Collectives, meshes and pipelines (LowerCollectives.cpp).
  /// The mesh of a partitioned (dist.spmd) graph, recorded as the kernel's
  /// nc.mesh_axes / nc.mesh_sizes (LowerCollectives.cpp); success and no
  /// mesh for a graph without one.
  LogicalResult findMesh();
  /// nc.sharding (and nc.blocks) of a kernel argument, or with `output` its
  /// nc.output_sharding, from a dist.sharding of the graph.
  LogicalResult addSharding(Attribute sharding, Location loc,
                            NamedAttrList &attrs, bool output);
  /// dist collectives on whole HBM tensors (LowerCollectives.cpp).
  LogicalResult lowerCollective(Operation *op);
  /// Records a pipeline fragment's place in its pipeline on the kernel
  /// (nc.pipeline), from its dist.pipeline.
  LogicalResult setPipeline(func::FuncOp kernel);

  func::FuncOp graph;
  /// The kernel's mesh (empty without one).
  SmallVector<std::string> meshAxes;
  SmallVector<int64_t> meshSizes;
  /// The axes the graph is one replica's step along (dist.replica_axes).
  SmallVector<std::string> replicaAxes;
  FlatSymbolRefAttr meshSymbol;
  OpBuilder &builder;
  KernelBuilder kb;
  llvm::DenseMap<Value, Value> values; ///< trn value -> HBM tensor
  /// Results written straight into their output argument. Outputs that
  /// update an input in place are not: the old value may still be read.
  llvm::DenseMap<Value, Value> directOutputs;
  /// An attention gradient ([B, S, H, D]) that only a concatenation of whole
  /// [B*S, H*D] rows reads (a fused projection's dQKV): written straight
  /// into its columns of the concatenation (`concat`, from `column`, rows of
  /// `width` elements) instead of being copied there.
  struct ConcatSlot {
    Value concat;
    int64_t column = 0, width = 0;
  };
  llvm::DenseMap<Value, ConcatSlot> concatSlots;
};

} // namespace mlir::trntonc

#endif // TRN_LIB_CONVERSION_TRNTONC_LOWERING_H
