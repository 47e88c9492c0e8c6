//===- LowerFusion.cpp - a trn.fusion group as one tiled kernel -----------===//
//
// The group's shape S is seen as [R, C] (rows on partitions). For every tile
// of rows (and, without a row reduction, of columns) the body is computed in
// SBUF: inputs are loaded when first read, through strided DMA windows that
// apply their broadcasts; splat constants are immediates; per-row values are
// [rows, 1] columns that tensor_scalar and activation read directly; only
// the group's results are stored. Every value keeps its element type, so
// the results round exactly as the unfused ops do.
//
// A group that starts with a matmul (trn-fuse-matmul-epilogue) is lowered
// as that matmul, whose result tiles are the group's tiles: the body runs on
// each accumulator as it is evicted.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "trn/Dialect/Trn/Utils/FusionLayout.h"
#include "trn/Dialect/Trn/Utils/MatmulForm.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::trntonc;
using mlir::trn::BroadcastAccess;
using mlir::trn::computeBroadcastAccess;

namespace mlir::trntonc {
using mlir::trn::BroadcastAccess;

/// Lowers one trn.fusion op; a friend of Lowering for its value map.
class FusionLowering {
public:
  FusionLowering(Lowering &lowering, trn::FusionOp fusion)
      : lowering(lowering), kb(lowering.kb), builder(lowering.builder),
        fusion(fusion) {}
  LogicalResult run();

private:
  enum class Form { Full, Column, Scalar };
  /// A body value in the current tile.
  struct Ref {
    Form form = Form::Full;
    Value tile;
    double scalar = 0.0;
  };
  /// How a body value that comes from an input is read from HBM.
  struct Source {
    Value hbm;
    Type elementType;
    BroadcastAccess access;
  };

  LogicalResult analyse();
  LogicalResult addSource(Value bodyValue, Value input, ArrayRef<int64_t> dims);
  /// Computes the body for one tile; for a group that starts with a
  /// matmul, `accumulator` holds the matmul's result tile (PSUM).
  LogicalResult emitTile(int64_t r0, int64_t rows, int64_t c0, int64_t width,
                         Value accumulator = Value());
  LogicalResult emitOp(Operation *op);
  FailureOr<Ref> get(Value value);
  Value full(const Ref &ref, Type elementType);
  Value column(const Ref &ref, Type elementType);
  Value f32Column(const Ref &ref);
  Value newTile(Form form, Type elementType) {
    return kb.tile(MemorySpace::sbuf, rows, {form == Form::Full ? width : 1},
                   elementType);
  }
  /// The tile `op` writes its result to: while an epilogue's tiles cover a
  /// column block of two PSUM banks, a yielded full value's window of the
  /// block-wide result, stored once for the block (the DMA engines pay a
  /// fixed cost per transfer: [128, 512] fp32 stores ran at 80% of their
  /// rate, [128, 1024] ones at 89%).
  Value resultTile(Operation *op, Form form, Type elementType);
  /// Per yielded full value, its block-wide result tile while an epilogue
  /// computes the tiles of a column block.
  llvm::MapVector<Value, Value> blockResults;
  /// Per full input, its block-wide tile (see get()).
  llvm::DenseMap<Value, Value> blockInputs;
  int64_t blockCol0 = 0, blockWidth = 0;
  /// The current tile is one of several of an epilogue's column block.
  bool pairedBlock = false;
  LogicalResult fail(Operation *op, const Twine &why) {
    return op->emitError("'trn.fusion' cannot be lowered: ") << why;
  }
  static Type elementTypeOf(Value value) {
    return cast<RankedTensorType>(value.getType()).getElementType();
  }

  Lowering &lowering;
  KernelBuilder &kb;
  OpBuilder &builder;
  trn::FusionOp fusion;
  /// The group's leading matmul, if any, and whether its body reads the
  /// accumulator in PSUM directly (its one use, an f32 result not stored)
  /// rather than an evicted copy.
  trn::DotGeneralOp dot;
  bool readAccumulator = false;
  /// The group reduces rows of the matmul's result, which comes a whole row
  /// block at a time, already in SBUF (trn::matmulYieldsWholeRows).
  bool wholeRows = false;
  /// The matmul's column block width (trn::matmulColumnBlocking).
  int64_t matmulBlockWidth = 0;
  /// Whether the epilogue's block-wide inputs and results take at most
  /// kPairedBlockBudget bytes per partition: a fused optimizer update's
  /// (two moments and the parameter, in and out: 22 KiB) held so many
  /// tiles that the step with AdamW ran 7% slower.
  bool pairBlocks = false;
  static constexpr int64_t kPairedBlockBudget = 16 * 1024;
  /// Inputs constant along rows (a bias broadcast over rows) loaded once
  /// and kept while consecutive tiles cover the same columns: at most
  /// kRowInvariantBudget bytes per partition of them (a matmul's epilogue
  /// keeps less: its panels take most of SBUF). A matmul's epilogue keeps
  /// one tile per PSUM bank of a column block (each M block evicts both
  /// banks in turn, so one slot reloaded the bias for every tile: 245 MB
  /// of the MLM head's logits matmul).
  struct RowInvariantTile {
    int64_t col0 = -1, width = 0, rows = 0;
    Value tile;
  };
  llvm::DenseMap<Value, SmallVector<RowInvariantTile, 2>> rowInvariant;
  /// Per value, the slot replaced next.
  llvm::DenseMap<Value, unsigned> nextRowInvariantSlot;
  int64_t rowInvariantSlots = 1;
  /// Inputs loaded as soon as a tile starts, in the order the body reads
  /// them, rather than where first read: their transfers then overlap the
  /// tile's compute instead of stalling it. At most kPrefetchBudget bytes
  /// per partition of full-width tiles are loaded ahead.
  SmallVector<Value> prefetched;
  static constexpr int64_t kPrefetchBudget = 48 * 1024;
  /// Rows longer than a column chunk with a reduction: the ops after the
  /// last reduction (which need no whole row) run per chunk of
  /// kTileColumns, reading the full-row values as windows, so that their
  /// tiles and the inputs only they read are chunk-sized (whole f32 rows of
  /// 8192 columns take 32 KiB per partition each and leave no room to load
  /// the next tile's inputs while this one computes).
  Operation *lastReduction = nullptr;
  static constexpr int64_t kRowInvariantBudget = 64 * 1024;
  static constexpr int64_t kEpilogueRowInvariantBudget = 8 * 1024;
  /// Passes over the tile given to the Vector and Scalar Engines so far (a
  /// tensor_tensor reads two streams: 2). An op either could run (a cast;
  /// x * c, x + c, x - c, c - x with c an immediate or a column, the Scalar
  /// Engine's copy with a scale and a bias) goes to the Scalar Engine while
  /// it has less, since the two share no SBUF port (docs/isa.md §7.4) and a
  /// group of elementwise ops is otherwise Vector-bound. (Balancing the
  /// whole tile's estimated passes instead moves the early ops of a chain,
  /// and a fused AdamW ran 9% slower.)
  int64_t vectorWork = 0, scalarWork = 0;
  bool scalarIsFree() const { return scalarWork + 1 <= vectorWork; }
  /// Whether `user` sums its operand's rows (the last dim) from the row sum
  /// an activation produces alongside its result.
  bool sumsRows(Operation *user) const {
    auto reduce = dyn_cast<trn::ReduceOp>(user);
    return reduce && reduce.getKind() == trn::ReduceKind::sum &&
           !columnSums.contains(reduce) && !tileRowReductions.contains(reduce);
  }
  /// A new f32 column for the row sums of `value`, which the reductions
  /// that sumsRows() finds read instead of reducing it.
  Value newRowSum(Value value) {
    Value rowSum = newTile(Form::Column, builder.getF32Type());
    rowSums[value] = rowSum;
    return rowSum;
  }
  /// A Vector Engine tensor_tensor with one input in PSUM costs one pass,
  /// not two (docs/isa.md §7.2): an f32 value the Scalar Engine computes
  /// only for it is written to PSUM instead of SBUF (at most
  /// kMaxStagedTiles per tile, a bank each; the two engines then share the
  /// PSUM port, §7.4). Groups of elementwise ops over wider tiles compute
  /// per kPsumStageColumns (one bank of fp32) to allow it, their inputs
  /// still loaded a whole tile at a time: a fused AdamW has five such
  /// tensor_tensor ops per element (41.5 -> 40.2 ms for BERT-large's).
  Value stageInPsum(Value value, Value tile);
  bool psumStaging = false;
  int64_t stagedTiles = 0;
  static constexpr int64_t kMaxStagedTiles = 4;
  static constexpr int64_t kPsumStageColumns = 512;
  SmallVector<int64_t> groupShape; ///< S
  SmallVector<int64_t> shape;      ///< S, or the flat [R, C] view
  SmallVector<int64_t> leading;
  int64_t numRows = 1, numColumns = 1;
  bool hasReduction = false;
  /// A trn.rotate_half: tiles hold whole rows, and the rows keep the group's
  /// last dimension (no flat view).
  bool hasRotation = false;
  /// An epilogue's sums over rows (dims [0], trn-fuse-matmul-epilogue): per
  /// sum and column offset, the running [128, columns] fp32 total of the
  /// tiles so far (M blocks run inner, so a column's tiles come in row
  /// order); the last row block sums its partitions on the Tensor Engine.
  llvm::SmallPtrSet<Operation *, 4> columnSums;
  /// Reductions over whole rows, only yielded: per reduction
  /// and row offset, the running [rows, 1] fp32 result of the column tiles
  /// so far (a row block's tiles come in column order).
  llvm::SmallPtrSet<Operation *, 4> tileRowReductions;
  llvm::DenseMap<std::pair<Operation *, int64_t>, Value> rowTotals;
  /// The running total before the current tile's part (none at the first).
  llvm::DenseMap<std::pair<Operation *, int64_t>, Value> previousRowTotals;
  LogicalResult emitTileRowReduction(trn::ReduceOp reduce, const Ref &in);
  /// Stores the current row block's complete per-row `total` of `value`
  /// wherever the group yields it.
  void storeRowTotal(Value value, Value total);
  /// sum(exp(x - max(x))) along rows whose tiles come a part of each row at
  /// a time (trn-fuse-matmul-epilogue's absorbed normaliser): per sum, the
  /// max it subtracts (a reduction over tiles). Each tile adds
  /// sum(exp(x - m)) for the running max m to the running sum, rescaled by
  /// exp(m_before - m) (online softmax); the broadcast, subtraction and
  /// exponential of the body are not emitted themselves.
  llvm::DenseMap<Operation *, trn::ReduceOp> onlineExpSums;
  llvm::SmallPtrSet<Operation *, 8> onlineExpSumParts;
  LogicalResult emitOnlineExpSum(trn::ReduceOp sum, const Ref &in);
  llvm::DenseMap<std::pair<Operation *, int64_t>, Value> columnTotals;
  Value onesColumn;
  LogicalResult emitColumnSum(trn::ReduceOp reduce, const Ref &in);
  /// In the order the body reads them (the kernel must not depend on
  /// pointer order).
  llvm::MapVector<Value, Source> sources;
  SmallVector<Value> outputs; ///< HBM tensor per result
  // The current tile.
  int64_t row0 = 0, rows = 0, col0 = 0, width = 0;
  llvm::MapVector<Value, Ref> refs;
  /// x * s, x + b or x - b (s, b a column or an immediate) whose only user
  /// is an activation: folded into the activation's scale and bias.
  struct Affine {
    Value src;
    Value scaleColumn, biasColumn;
    float scale = 1.0f, bias = 0.0f;
  };
  llvm::MapVector<Value, Affine> affine;
  /// Row sums an activation produced alongside its result (row_sum).
  llvm::DenseMap<Value, Value> rowSums;
  /// Values written in the type of the cast that is their one use.
  llvm::DenseSet<Value> castOnWrite;
};

} // namespace mlir::trntonc

LogicalResult FusionLowering::addSource(Value bodyValue, Value input,
                                        ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getElementType().isSignlessInteger(64))
    return fail(fusion, "i64 inputs are not lowered yet");
  Source source;
  source.hbm = lowering.hbmOf(input);
  source.elementType = type.getElementType();
  source.access = computeBroadcastAccess(type.getShape(), dims, shape);
  sources[bodyValue] = source;
  return success();
}

LogicalResult FusionLowering::analyse() {
  Block &body = fusion.getBody().front();
  // S is the largest shape in the body: the highest rank, and among shapes
  // of that rank the most elements (a [rows, 1] column broadcast to
  // [rows, n] has the rank of S but is not S); with a leading matmul, the
  // matmul's result.
  dot = dyn_cast<trn::DotGeneralOp>(&body.front());
  if (dot)
    llvm::append_range(shape, cast<RankedTensorType>(dot.getType()).getShape());
  int64_t elements = 0;
  for (Operation &op : body) {
    if (dot)
      break;
    SmallVector<Type> types(op.getOperandTypes());
    llvm::append_range(types, op.getResultTypes());
    for (Type valueType : types) {
      auto type = dyn_cast<RankedTensorType>(valueType);
      if (!type)
        continue;
      int64_t rank = type.getRank(), current = shape.size();
      if (rank > current ||
          (rank == current && type.getNumElements() > elements)) {
        shape.assign(type.getShape().begin(), type.getShape().end());
        elements = type.getNumElements();
      }
    }
  }
  if (shape.empty())
    return fail(fusion, "a group of rank-0 values is not lowered");
  groupShape = shape;
  ArrayRef<int64_t> full = shape, row = full.drop_back();
  auto leadingIdentity = [&](int64_t n) {
    return llvm::to_vector(llvm::seq<int64_t>(0, n));
  };
  // Online sums of exponentials (an epilogue's normaliser over rows wider
  // than its tiles): sum(exp(x - broadcast(max(x)))), only yielded, the max
  // also only yielded.
  if (dot && full.size() == 2) {
    for (Operation &op : body) {
      auto sum = dyn_cast<trn::ReduceOp>(op);
      std::optional<trn::ShiftedExpSum> parts =
          sum ? trn::matchShiftedExpSum(sum) : std::nullopt;
      if (!parts || !llvm::all_of(sum->getUsers(), [](Operation *user) {
            return isa<trn::YieldOp>(user);
          }))
        continue;
      trn::SubOp sub = parts->sub;
      trn::ExpOp exp = parts->exp;
      trn::BroadcastInDimOp broadcast = parts->broadcast;
      auto max = broadcast.getOperand().getDefiningOp<trn::ReduceOp>();
      if (!max || max.getKind() != trn::ReduceKind::max ||
          max.getDims() != ArrayRef<int64_t>{1} ||
          max.getOperand() != sub.getLhs() ||
          !elementTypeOf(sub.getLhs()).isF32() || !exp->hasOneUse() ||
          !sub->hasOneUse() || !broadcast->hasOneUse() ||
          !llvm::all_of(max->getUsers(), [&](Operation *user) {
            return isa<trn::YieldOp>(user) || user == broadcast.getOperation();
          }))
        continue;
      onlineExpSums[sum.getOperation()] = max;
      onlineExpSumParts.insert(exp.getOperation());
      onlineExpSumParts.insert(sub.getOperation());
      onlineExpSumParts.insert(broadcast.getOperation());
    }
  }
  for (Operation &op : body) {
    if (isa<trn::YieldOp>(op) || onlineExpSumParts.contains(&op))
      continue;
    if (onlineExpSums.count(&op))
      continue; // a per-row result, computed per tile
    if (auto reduce = dyn_cast<trn::ReduceOp>(op);
        reduce && full.size() == 2 &&
        reduce.getKind() == trn::ReduceKind::sum &&
        reduce.getDims() == ArrayRef<int64_t>{0}) {
      if (cast<RankedTensorType>(reduce.getOperand().getType()).getShape() !=
              full ||
          !elementTypeOf(reduce.getOperand()).isF32() ||
          !elementTypeOf(reduce.getResult()).isF32() ||
          !llvm::all_of(reduce->getUsers(), [](Operation *user) {
            return isa<trn::YieldOp>(user);
          }))
        return fail(&op, "an epilogue's sum over rows must take an f32 "
                         "value of the matmul's shape and only be yielded");
      columnSums.insert(&op);
      continue;
    }
    // A row reduction whose result is only yielded (the logits' row max in
    // their matmul's epilogue, the sum of their exponentials): each tile
    // reduces its part of the rows into a running column that the row
    // block's last tile stores, so rows need not fit in SBUF whole.
    if (auto reduce = dyn_cast<trn::ReduceOp>(op);
        reduce && full.size() == 2 &&
        reduce.getDims() == ArrayRef<int64_t>{1} &&
        reduce.getKind() != trn::ReduceKind::prod &&
        cast<RankedTensorType>(reduce.getOperand().getType()).getShape() ==
            full &&
        elementTypeOf(reduce.getOperand()).isF32() &&
        elementTypeOf(reduce.getResult()).isF32() &&
        llvm::all_of(reduce->getUsers(), [&](Operation *user) {
          return isa<trn::YieldOp>(user) || onlineExpSumParts.contains(user);
        })) {
      tileRowReductions.insert(&op);
      continue;
    }
    for (Value result : op.getResults()) {
      ArrayRef<int64_t> resultShape =
          cast<RankedTensorType>(result.getType()).getShape();
      if (resultShape != full && resultShape != row)
        return fail(&op, "its result is neither of the group's shape nor a "
                         "per-row value");
      if (elementTypeOf(result).isSignlessInteger(64))
        return fail(&op, "i64 values are not lowered yet");
    }
    if (isa<trn::RotateHalfOp>(op))
      hasRotation = true;
    if (auto reduce = dyn_cast<trn::ReduceOp>(op)) {
      if (reduce.getDims() !=
              ArrayRef<int64_t>{static_cast<int64_t>(full.size() - 1)} ||
          cast<RankedTensorType>(reduce.getOperand().getType()).getShape() !=
              full ||
          reduce.getKind() == trn::ReduceKind::prod)
        return fail(&op, "only sum, max and min over the last dimension of "
                         "the group's shape are lowered in a group");
      hasReduction = true;
    }
  }
  // Inputs: read directly by the body (full values or per-row columns) or
  // through the broadcasts that the body applies to them.
  for (auto [arg, input] : llvm::zip(body.getArguments(), fusion.getInputs())) {
    for (OpOperand &use : arg.getUses()) {
      if (use.getOwner() == dot.getOperation())
        continue; // the matmul reads its operands itself
      auto broadcast = dyn_cast<trn::BroadcastInDimOp>(use.getOwner());
      if (broadcast) {
        if (cast<RankedTensorType>(broadcast.getType()).getShape() != full)
          return fail(broadcast,
                      "it broadcasts an input to another shape than the "
                      "group's");
        if (failed(
                addSource(broadcast.getResult(), input, broadcast.getDims())))
          return failure();
        continue;
      }
      if (!sources.count(arg)) {
        ArrayRef<int64_t> argShape =
            cast<RankedTensorType>(arg.getType()).getShape();
        if (argShape == full) {
          if (failed(addSource(arg, input, leadingIdentity(full.size()))))
            return failure();
        } else if (argShape == row) {
          if (failed(addSource(arg, input, leadingIdentity(row.size()))))
            return failure();
        } else {
          return fail(use.getOwner(), "it reads an input of another shape "
                                      "than the group's");
        }
      }
    }
  }
  // A result tile holds at most 512 columns of a row, unless the matmul
  // yields whole rows (trn-fuse-matmul-epilogue forms no other epilogue
  // that reduces rows): then each row block comes whole, in SBUF.
  if (dot) {
    auto lhsType = cast<RankedTensorType>(dot.getLhs().getType());
    int64_t k = lhsType.getDimSize(dot.getLhsContractingDims()[0]);
    int64_t inBytes = (lhsType.getElementTypeBitWidth() + 7) / 8;
    matmulBlockWidth =
        trn::matmulColumnBlocking(k, full.back(), inBytes).blockWidth;
    wholeRows = hasReduction;
    if (wholeRows && !trn::matmulYieldsWholeRows(k, full.back(), inBytes))
      return fail(fusion, "a group that starts with a matmul cannot reduce "
                          "rows unless the matmul yields them whole (" +
                              Twine(full.back()) + " columns here)");
  }
  if (hasRotation && (dot || full.back() > kTileColumns))
    return fail(fusion, "a group that rotates rows needs them whole in a "
                        "tile: no matmul, and rows of at most " +
                            Twine(kTileColumns) + " elements");
  leading.assign(row.begin(), row.end());
  numRows = product(row);
  numColumns = full.back();

  // A group of full-width elementwise ops over plain inputs has no layout
  // of its own: spread it over all 128 partitions.
  bool plain = !hasReduction && !hasRotation && !dot && columnSums.empty() &&
               tileRowReductions.empty();
  for (Operation &op : body)
    for (Value result : op.getResults())
      plain &= isa<trn::YieldOp>(op) ||
               cast<RankedTensorType>(result.getType()).getShape() == full;
  for (auto &[value, source] : sources) {
    bool identity =
        source.access.columnStride == 1 && source.access.rowBlock == numRows &&
        (numRows == 1 || source.access.partitionStride == numColumns);
    bool scalar = source.access.columnStride == 0 &&
                  llvm::all_of(source.access.rowStrides,
                               [](int64_t s) { return s == 0; });
    plain &= identity || scalar;
  }
  int64_t total = numRows * numColumns;
  if (plain && numRows < kPartitions && total % kPartitions == 0) {
    int64_t perPartition = total / kPartitions;
    int64_t columns = 1;
    for (int64_t d = std::min(perPartition, kTileColumns); d >= 1; --d)
      if (perPartition % d == 0) {
        columns = d;
        break;
      }
    if (columns >= std::min<int64_t>(perPartition, 64)) {
      shape = {total / columns, columns};
      leading = {total / columns};
      numRows = total / columns;
      numColumns = columns;
      for (auto &[value, source] : sources) {
        bool scalar = source.access.columnStride == 0;
        source.access = computeBroadcastAccess(
            scalar ? ArrayRef<int64_t>{} : ArrayRef<int64_t>(shape),
            scalar ? ArrayRef<int64_t>{} : ArrayRef<int64_t>{0, 1}, shape);
      }
    }
  }
  // Row-invariant inputs worth keeping between tiles, within the budget.
  int64_t tileWidth =
      dot ? (wholeRows ? numColumns : std::min<int64_t>(numColumns, 512))
      : hasReduction || hasRotation ? numColumns
                                    : std::min(numColumns, kTileColumns);
  int64_t kept = 0;
  rowInvariantSlots = dot && numColumns > tileWidth ? 2 : 1;
  for (auto &[value, source] : sources) {
    const BroadcastAccess &access = source.access;
    bool invariant = access.columnStride != 0 && access.partitionStride == 0 &&
                     llvm::all_of(access.rowStrides,
                                  [](int64_t stride) { return stride == 0; });
    int64_t bytes = rowInvariantSlots * tileWidth *
                    ((source.elementType.getIntOrFloatBitWidth() + 7) / 8);
    if (invariant && kept + bytes <= (dot ? kEpilogueRowInvariantBudget
                                          : kRowInvariantBudget)) {
      rowInvariant[value].assign(rowInvariantSlots, RowInvariantTile());
      kept += bytes;
    }
  }
  if (hasReduction && numColumns > kTileColumns) {
    for (Operation &op : body)
      if (isa<trn::ReduceOp>(op))
        lastReduction = &op;
  }
  // Which inputs a tile loads ahead: every column, full-width tiles in
  // order of first use within the budget (with chunks, those the ops up to
  // the last reduction read, and every row-invariant one, kept anyway).
  int64_t ahead = 0;
  llvm::DenseSet<Value> seen;
  bool beforeChunks = true;
  for (Operation &op : body) {
    for (Value operand : op.getOperands()) {
      auto source = sources.find(operand);
      if (source == sources.end() || seen.contains(operand))
        continue;
      if (!beforeChunks && !rowInvariant.count(operand))
        continue;
      seen.insert(operand);
      int64_t bytes =
          source->second.access.columnStride == 0
              ? 0
              : tileWidth *
                    ((source->second.elementType.getIntOrFloatBitWidth() + 7) /
                     8);
      if (rowInvariant.count(operand)) {
        prefetched.push_back(operand);
        continue;
      }
      if (ahead + bytes > kPrefetchBudget)
        continue;
      ahead += bytes;
      prefetched.push_back(operand);
    }
    if (&op == lastReduction)
      beforeChunks = false;
  }
  if (dot) {
    int64_t blockBytes = 0;
    auto bytesOf = [&](Type type) {
      return matmulBlockWidth * ((type.getIntOrFloatBitWidth() + 7) / 8);
    };
    for (auto &[value, source] : sources)
      if (source.access.columnStride != 0 && !rowInvariant.count(value))
        blockBytes += bytesOf(source.elementType);
    for (Value value : body.getTerminator()->getOperands())
      if (cast<RankedTensorType>(value.getType()).getShape() ==
          ArrayRef(groupShape))
        blockBytes += bytesOf(elementTypeOf(value));
    pairBlocks = blockBytes <= kPairedBlockBudget;
  }
  // PSUM staging for groups of elementwise ops only (an epilogue's banks
  // hold its accumulators) with a tensor_tensor of two f32 tiles.
  psumStaging = !dot && !hasReduction && !hasRotation && columnSums.empty() &&
                tileRowReductions.empty() && onlineExpSums.empty() &&
                llvm::any_of(body, [&](Operation &op) {
                  return isa<trn::AddOp, trn::SubOp, trn::MulOp, trn::DivOp,
                             trn::MaxOp, trn::MinOp>(op) &&
                         op.getOperand(0) != op.getOperand(1) &&
                         llvm::all_of(op.getOperands(), [&](Value operand) {
                           auto type =
                               cast<RankedTensorType>(operand.getType());
                           return type.getShape() == ArrayRef(groupShape) &&
                                  type.getElementType().isF32() &&
                                  !isa_and_nonnull<trn::BroadcastInDimOp,
                                                   trn::ConstantOp>(
                                      operand.getDefiningOp());
                         });
                });
  if (dot) {
    // The body may read the accumulator itself when the matmul's result is
    // f32 (nothing to round), not stored, and read by one operand of one op
    // that an engine with PSUM access runs (not GpSimd's pow).
    Value result = dot.getResult();
    auto yield = cast<trn::YieldOp>(body.getTerminator());
    readAccumulator = elementTypeOf(result).isF32() && result.hasOneUse() &&
                      !llvm::is_contained(yield.getValues(), result) &&
                      !isa<trn::PowOp>(*result.getUsers().begin());
  }
  return success();
}

FailureOr<FusionLowering::Ref> FusionLowering::get(Value value) {
  auto it = refs.find(value);
  if (it != refs.end())
    return it->second;
  auto source = sources.find(value);
  if (source == sources.end())
    return failure();
  // Load on first use, so that the input's tile is live only while needed;
  // a row-invariant input is loaded again only for other columns.
  const BroadcastAccess &access = source->second.access;
  auto invariant = rowInvariant.find(value);
  if (invariant != rowInvariant.end()) {
    for (const RowInvariantTile &slot : invariant->second) {
      if (slot.col0 == col0 && slot.width == width && slot.rows == rows) {
        Ref ref{Form::Full, slot.tile, 0.0};
        refs[value] = ref;
        return ref;
      }
    }
  }
  Ref ref;
  int64_t offset = access.rowOffset(leading, row0);
  if (access.columnStride == 0) {
    ref.form = Form::Column;
    ref.tile = newTile(Form::Column, source->second.elementType);
    kb.dma(ref.tile, kb.view(source->second.hbm, offset, rows,
                             access.partitionStride, {1}, {1}));
  } else if (pairedBlock && invariant == rowInvariant.end() &&
             (col0 == blockCol0 || blockInputs.count(value))) {
    // An epilogue's input over a two-bank column block: loaded whole with
    // the block's first tile (one transfer instead of two).
    Value &block = blockInputs[value];
    if (col0 == blockCol0) {
      block = kb.tile(MemorySpace::sbuf, rows, {blockWidth},
                      source->second.elementType);
      kb.dma(block, kb.view(source->second.hbm,
                            offset + blockCol0 * access.columnStride, rows,
                            access.partitionStride, {blockWidth},
                            {access.columnStride}));
    }
    ref.tile = kb.window(block, {rows, width}, col0 - blockCol0);
  } else {
    ref.tile = newTile(Form::Full, source->second.elementType);
    kb.dma(ref.tile,
           kb.view(source->second.hbm, offset + col0 * access.columnStride,
                   rows, access.partitionStride, {width},
                   {access.columnStride}));
    if (invariant != rowInvariant.end()) {
      unsigned &next = nextRowInvariantSlot[value];
      invariant->second[next] = {col0, width, rows, ref.tile};
      next = (next + 1) % invariant->second.size();
    }
  }
  refs[value] = ref;
  return ref;
}

Value FusionLowering::f32Column(const Ref &ref) {
  Type f32 = builder.getF32Type();
  if (ref.form == Form::Scalar) {
    Value t = newTile(Form::Column, f32);
    builder.create<MemsetOp>(kb.loc, t,
                             llvm::APFloat(static_cast<float>(ref.scalar)),
                             Engine::vector);
    return t;
  }
  if (cast<TileType>(ref.tile.getType()).getElementType() == f32)
    return ref.tile;
  Value t = newTile(Form::Column, f32);
  builder.create<TensorCopyOp>(kb.loc, t, ref.tile, Engine::vector);
  return t;
}

Value FusionLowering::column(const Ref &ref, Type elementType) {
  if (ref.form == Form::Column)
    return ref.tile;
  Value t = newTile(Form::Column, elementType);
  builder.create<MemsetOp>(
      kb.loc, t, llvm::APFloat(static_cast<float>(ref.scalar)), Engine::vector);
  return t;
}

Value FusionLowering::full(const Ref &ref, Type elementType) {
  if (ref.form == Form::Full)
    return ref.tile;
  Value t = newTile(Form::Full, elementType);
  if (ref.form == Form::Scalar) {
    builder.create<MemsetOp>(kb.loc, t,
                             llvm::APFloat(static_cast<float>(ref.scalar)),
                             Engine::vector);
    return t;
  }
  // Spread the column over the row: 0 + column.
  builder.create<MemsetOp>(kb.loc, t, llvm::APFloat(0.0f), Engine::vector);
  builder.create<TensorScalarOp>(
      kb.loc, AluOp::add, AluOp::bypass, t, t, f32Column(ref), Value(),
      llvm::APFloat(0.0f), llvm::APFloat(0.0f), false, false, Engine::vector);
  return t;
}

LogicalResult FusionLowering::emitOp(Operation *op) {
  // An input's broadcast is a source, loaded where it is first read.
  if (isa<trn::BroadcastInDimOp>(op) && sources.count(op->getResult(0)))
    return success();
  SmallVector<Ref> in;
  for (Value operand : op->getOperands()) {
    FailureOr<Ref> ref = get(operand);
    if (failed(ref))
      return fail(op, "an operand is not available in the group");
    in.push_back(*ref);
  }
  auto define = [&](Ref ref) {
    refs[op->getResult(0)] = ref;
    return success();
  };
  Type resultType =
      op->getNumResults() ? elementTypeOf(op->getResult(0)) : Type();
  // An activation's f32 result whose one use casts it to another float type
  // is written in that type at once: the Scalar Engine computes in fp32 and
  // rounds once to its destination's type, as the cast would. (A Vector
  // Engine op keeps its cast, which goes to the Scalar Engine when that is
  // free, off the busier engine.)
  Type dstType = resultType;
  if (resultType && resultType.isF32() && op->getResult(0).hasOneUse() &&
      activationFor(op))
    if (auto cast = dyn_cast<trn::ConvertOp>(*op->getResult(0).user_begin()))
      if (isa<FloatType>(elementTypeOf(cast.getResult()))) {
        dstType = elementTypeOf(cast.getResult());
        castOnWrite.insert(op->getResult(0));
      }
  // Full if any operand is; a per-row op otherwise.
  bool anyFull =
      llvm::any_of(in, [](const Ref &r) { return r.form == Form::Full; });
  Form resultForm = anyFull ? Form::Full : Form::Column;
  auto operandTile = [&](unsigned i) {
    Type type = elementTypeOf(op->getOperand(i));
    return resultForm == Form::Full ? full(in[i], type) : column(in[i], type);
  };
  auto activation = [&](ActivationFunc func) {
    Affine form;
    auto folded = affine.find(op->getOperand(0));
    if (folded != affine.end())
      form = folded->second;
    else
      form.src = operandTile(0);
    // A row sum of an f32 result comes free with the activation.
    Type f32 = builder.getF32Type();
    Value result = op->getResult(0);
    bool summed = resultForm == Form::Full && resultType == f32 &&
                  llvm::any_of(result.getUsers(),
                               [&](Operation *user) { return sumsRows(user); });
    // A result only summed (a variance's squares) is not kept: the
    // activation writes it a column chunk at a time into one small scratch
    // tile, adding the chunks' row sums, instead of holding a full f32 row
    // of SBUF for nothing.
    if (summed && width > kTileColumns &&
        llvm::all_of(result.getUsers(),
                     [&](Operation *user) { return sumsRows(user); })) {
      Value rowSum = newRowSum(result);
      Value scratch = kb.tile(MemorySpace::sbuf, rows, {kTileColumns},
                              builder.getBF16Type());
      for (int64_t c = 0; c < width; c += kTileColumns) {
        int64_t chunk = std::min(kTileColumns, width - c);
        Value part = c == 0 ? rowSum : newTile(Form::Column, f32);
        builder.create<ActivationOp>(
            kb.loc, func, kb.window(scratch, {rows, chunk}, 0),
            kb.window(form.src, {rows, chunk}, c), form.scaleColumn,
            form.biasColumn, part, llvm::APFloat(form.scale),
            llvm::APFloat(form.bias));
        ++scalarWork;
        if (c > 0)
          builder.create<TensorTensorOp>(kb.loc, AluOp::add, rowSum, rowSum,
                                         part, Engine::vector);
      }
      return define({resultForm, Value(), 0.0});
    }
    Value dst = resultTile(op, resultForm, dstType);
    Value rowSum = summed ? newRowSum(result) : Value();
    builder.create<ActivationOp>(
        kb.loc, func, dst, form.src, form.scaleColumn, form.biasColumn, rowSum,
        llvm::APFloat(form.scale), llvm::APFloat(form.bias));
    ++scalarWork;
    return define({resultForm, dst, 0.0});
  };
  // x * s, x + b, x - b in f32 feeding only an activation: fold (the
  // activation computes func(x * scale + bias) in fp32, which rounds as the
  // separate f32 op would).
  auto foldIntoActivation = [&](AluOp alu) {
    if (resultForm != Form::Full || !resultType.isF32() ||
        !op->getResult(0).hasOneUse())
      return false;
    Operation *user = *op->getResult(0).getUsers().begin();
    std::optional<ActivationFunc> userFunc = activationFor(user);
    if (!userFunc || elementTypeOf(user->getResult(0)) != resultType)
      return false;
    // trn1's Scalar Engine computes reciprocal without a bias (docs/isa.md):
    // an add or subtract before it stays a Vector Engine op.
    if (alu != AluOp::multiply && *userFunc == ActivationFunc::reciprocal)
      return false;
    bool lhsFull = in[0].form == Form::Full, rhsFull = in[1].form == Form::Full;
    if (lhsFull == rhsFull || (alu == AluOp::subtract && !lhsFull))
      return false;
    const Ref &x = lhsFull ? in[0] : in[1], &c = lhsFull ? in[1] : in[0];
    if (elementTypeOf(op->getOperand(lhsFull ? 0 : 1)) != resultType)
      return false;
    Affine form;
    form.src = x.tile;
    if (alu == AluOp::multiply) {
      if (c.form == Form::Scalar)
        form.scale = static_cast<float>(c.scalar);
      else
        form.scaleColumn = f32Column(c);
    } else if (c.form == Form::Scalar) {
      // trn1's activation bias is a column (only 0 may be an immediate).
      Ref value{Form::Scalar, Value(),
                alu == AluOp::subtract ? -c.scalar : c.scalar};
      form.biasColumn = f32Column(value);
    } else if (alu == AluOp::subtract) {
      Value negated = newTile(Form::Column, builder.getF32Type());
      builder.create<TensorScalarOp>(kb.loc, AluOp::multiply, AluOp::bypass,
                                     negated, f32Column(c), Value(), Value(),
                                     llvm::APFloat(-1.0f), llvm::APFloat(0.0f),
                                     false, false, Engine::vector);
      form.biasColumn = negated;
    } else {
      form.biasColumn = f32Column(c);
    }
    affine[op->getResult(0)] = form;
    refs[op->getResult(0)] = Ref{Form::Full, Value(), 0.0};
    return true;
  };
  auto binary = [&](AluOp alu) {
    if ((alu == AluOp::add || alu == AluOp::subtract ||
         alu == AluOp::multiply) &&
        foldIntoActivation(alu))
      return success();
    Engine engine = alu == AluOp::pow ? Engine::gpsimd : Engine::vector;
    const Ref &lhs = in[0], &rhs = in[1];
    Value dst = resultTile(op, resultForm, dstType);
    // x * c, x + c, x - c and c - x in f32 (c an immediate or a column)
    // are the Scalar Engine's copy x * scale + bias, rounded the same way:
    // x * 1 + c is x + c, and -x + c is c - x.
    bool lhsFull = lhs.form == Form::Full, rhsFull = rhs.form == Form::Full;
    if ((alu == AluOp::multiply || alu == AluOp::add ||
         alu == AluOp::subtract) &&
        resultForm == Form::Full && resultType.isF32() && lhsFull != rhsFull &&
        scalarIsFree()) {
      unsigned tileSide = lhsFull ? 0 : 1;
      const Ref &x = in[tileSide], &c = in[1 - tileSide];
      if (x.tile && elementTypeOf(op->getOperand(tileSide)).isF32()) {
        float scale = 1.0f;
        Value scaleColumn, bias;
        bool negateX = alu == AluOp::subtract && tileSide == 1;
        if (alu == AluOp::multiply) {
          if (c.form == Form::Scalar)
            scale = static_cast<float>(c.scalar);
          else
            scaleColumn = f32Column(c);
        } else {
          bool negateC = alu == AluOp::subtract && tileSide == 0;
          if (negateX)
            scale = -1.0f;
          if (c.form == Form::Scalar) {
            bias = f32Column(
                Ref{Form::Scalar, Value(), negateC ? -c.scalar : c.scalar});
          } else if (negateC) {
            bias = newTile(Form::Column, builder.getF32Type());
            builder.create<TensorScalarOp>(
                kb.loc, AluOp::multiply, AluOp::bypass, bias, f32Column(c),
                Value(), Value(), llvm::APFloat(-1.0f), llvm::APFloat(0.0f),
                false, false, Engine::vector);
          } else {
            bias = f32Column(c);
          }
        }
        builder.create<ActivationOp>(kb.loc, ActivationFunc::copy, dst, x.tile,
                                     scaleColumn, bias, Value(),
                                     llvm::APFloat(scale), llvm::APFloat(0.0f));
        ++scalarWork;
        return define({resultForm, dst, 0.0});
      }
    }
    if (engine == Engine::vector)
      vectorWork += lhs.form == rhs.form && lhs.form != Form::Scalar ? 2 : 1;
    auto scalarSide = [&](const Ref &tileSide, const Ref &other, bool reverse,
                          unsigned tileOperand) {
      Value column = other.form == Form::Scalar ? Value() : f32Column(other);
      float immediate = static_cast<float>(other.scalar);
      // The tile just computed by a one-step tensor_scalar into f32 that
      // nothing else reads ((x - mean) then * rstd; exp / sum then * scale)
      // takes this step as its second: one Vector pass instead of two,
      // computed in fp32 either way.
      Value operand = op->getOperand(tileOperand);
      auto previous =
          tileSide.tile && tileSide.tile.getDefiningOp<AllocOp>() &&
                  tileSide.tile.hasOneUse()
              ? dyn_cast<TensorScalarOp>(*tileSide.tile.getUsers().begin())
              : TensorScalarOp();
      if (previous && previous.getDst() == tileSide.tile &&
          previous.getOp1() == AluOp::bypass &&
          previous.getEngine() == engine && engine == Engine::vector &&
          previous->getBlock() == builder.getInsertionBlock() &&
          elementTypeOf(operand).isF32() && operand.hasOneUse() &&
          !isa<trn::YieldOp>(*operand.getUsers().begin())) {
        builder.create<TensorScalarOp>(
            kb.loc, previous.getOp0(), alu, dst, previous.getSrc(),
            previous.getColumn0(), column, previous.getScalar0Attr().getValue(),
            llvm::APFloat(immediate), previous.getReverse0(), reverse, engine);
        Operation *alloc = tileSide.tile.getDefiningOp();
        previous->erase();
        if (alloc->use_empty())
          alloc->erase();
        return;
      }
      builder.create<TensorScalarOp>(
          kb.loc, alu, AluOp::bypass, dst, tileSide.tile, column, Value(),
          llvm::APFloat(immediate), llvm::APFloat(0.0f), reverse, false,
          engine);
    };
    if (lhs.form == rhs.form && lhs.form != Form::Scalar) {
      Value lhsTile = lhs.tile, rhsTile = rhs.tile;
      if (engine == Engine::vector && lhs.form == Form::Full &&
          op->getOperand(0) != op->getOperand(1)) {
        if (Value staged = stageInPsum(op->getOperand(1), rhsTile)) {
          rhsTile = staged;
          --vectorWork;
        } else if (Value staged = stageInPsum(op->getOperand(0), lhsTile)) {
          lhsTile = staged;
          --vectorWork;
        }
      }
      builder.create<TensorTensorOp>(kb.loc, alu, dst, lhsTile, rhsTile,
                                     engine);
    } else if (lhs.form == resultForm && rhs.form != resultForm)
      scalarSide(lhs, rhs, /*reverse=*/false, 0);
    else if (rhs.form == resultForm && lhs.form != resultForm)
      scalarSide(rhs, lhs, /*reverse=*/true, 1);
    else // two immediates: not left by canonicalization, but valid
      scalarSide(Ref{resultForm, column(lhs, resultType), 0.0}, rhs, false, 0);
    return define({resultForm, dst, 0.0});
  };

  if (std::optional<ActivationFunc> func = activationFor(op))
    return activation(*func);
  // x * x in f32 is the Scalar Engine's square: one pass there instead of
  // two on the Vector Engine, and a row sum of it comes free.
  if (isa<trn::MulOp>(op) && op->getOperand(0) == op->getOperand(1) &&
      in[0].form == Form::Full && resultType.isF32() &&
      elementTypeOf(op->getOperand(0)).isF32())
    return activation(ActivationFunc::square);
  if (std::optional<AluOp> alu = binaryAluOpFor(op))
    return binary(*alu);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](trn::ConstantOp constant) -> LogicalResult {
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (!dense || !dense.isSplat())
          return fail(op, "only splat constants are lowered in a group");
        Type type = dense.getElementType();
        double value = type.isSignlessInteger(1)
                           ? static_cast<double>(
                                 dense.getSplatValue<APInt>().getZExtValue())
                       : type.isIntOrIndex()
                           ? static_cast<double>(
                                 dense.getSplatValue<APInt>().getSExtValue())
                           : dense.getSplatValue<APFloat>().convertToDouble();
        return define({Form::Scalar, Value(), value});
      })
      .Case([&](trn::BroadcastInDimOp broadcast) -> LogicalResult {
        // A per-row value spread over the row stays a column.
        auto operandShape =
            cast<RankedTensorType>(broadcast.getOperand().getType()).getShape();
        bool columnSpread = in[0].form != Form::Full &&
                            (operandShape.empty() ||
                             (operandShape == ArrayRef(shape).drop_back() &&
                              broadcast.getDims() ==
                                  ArrayRef(llvm::to_vector(llvm::seq<int64_t>(
                                      0, operandShape.size())))));
        if (!columnSpread)
          return fail(op, "it broadcasts a value of the group other than a "
                          "per-row value");
        return define(in[0]);
      })
      .Case([&](trn::ReduceOp reduce) -> LogicalResult {
        if (columnSums.contains(reduce))
          return emitColumnSum(reduce, in[0]);
        if (tileRowReductions.contains(reduce))
          return emitTileRowReduction(reduce, in[0]);
        if (in[0].form != Form::Full) {
          // Over a row of one element (a batch of one reduced to a scalar):
          // the element itself.
          if (shape.back() == 1 &&
              reduce.getDims() ==
                  ArrayRef<int64_t>{int64_t(shape.size()) - 1} &&
              elementTypeOf(reduce.getOperand()) == resultType)
            return define(in[0]);
          return fail(op, "it reduces a value that is constant along rows");
        }
        Type f32 = builder.getF32Type();
        Value total = rowSums.lookup(reduce.getOperand());
        if (!total || reduce.getKind() != trn::ReduceKind::sum) {
          total = newTile(Form::Column, f32);
          builder.create<TensorReduceOp>(kb.loc, aluOpFor(reduce.getKind()),
                                         total, in[0].tile, false,
                                         Engine::vector);
          ++vectorWork;
        }
        if (resultType == f32)
          return define({Form::Column, total, 0.0});
        Value rounded = newTile(Form::Column, resultType);
        builder.create<TensorCopyOp>(kb.loc, rounded, total, Engine::vector);
        return define({Form::Column, rounded, 0.0});
      })
      .Case([&](trn::RotateHalfOp) -> LogicalResult {
        // Whole rows are in the tile (analyse): two Scalar Engine copies of
        // half-row windows, the first with scale -1.
        if (in[0].form != Form::Full)
          return fail(op, "it rotates a value that is constant along rows");
        int64_t half = width / 2;
        Value dst = newTile(Form::Full, resultType);
        builder.create<ActivationOp>(
            kb.loc, ActivationFunc::copy, kb.window(dst, {rows, half}, 0),
            kb.window(in[0].tile, {rows, half}, half), Value(), Value(),
            Value(), llvm::APFloat(-1.0f), llvm::APFloat(0.0f));
        builder.create<ActivationOp>(
            kb.loc, ActivationFunc::copy, kb.window(dst, {rows, half}, half),
            kb.window(in[0].tile, {rows, half}, 0), Value(), Value(), Value(),
            llvm::APFloat(1.0f), llvm::APFloat(0.0f));
        scalarWork += 2;
        return define({Form::Full, dst, 0.0});
      })
      .Case([&](trn::NotOp) {
        // A boolean is 0 or 1 in a tile: not x is x == 0 (PyTorch's
        // cross_entropy with ignore_index and label smoothing negates its
        // mask).
        in.push_back(Ref{Form::Scalar, Value(), 0.0});
        return binary(AluOp::is_equal);
      })
      .Case([&](trn::SelectOp) {
        Value dst = resultTile(op, resultForm, dstType);
        builder.create<SelectOp>(kb.loc, dst, operandTile(0), operandTile(1),
                                 operandTile(2));
        return define({resultForm, dst, 0.0});
      })
      .Case([&](trn::ConvertOp convert) {
        if (in[0].form == Form::Scalar ||
            castOnWrite.count(convert.getOperand()))
          return define(in[0]); // rounded when it is written to a tile
        Value dst = resultTile(op, in[0].form, resultType);
        // A cast to f32 that rows are summed over goes to the Scalar Engine
        // whatever its load: its copy sums the rows for free, which spares
        // the Vector Engine both the copy and the reduction (a layer norm's
        // input widened to f32: 22 of its 58 µs per [128, 8192] row block).
        bool summed =
            in[0].form == Form::Full && resultType.isF32() &&
            llvm::any_of(convert.getResult().getUsers(),
                         [&](Operation *user) { return sumsRows(user); });
        if (in[0].form == Form::Full && (scalarIsFree() || summed)) {
          // A cast is the Scalar Engine's copy too.
          Value rowSum = summed ? newRowSum(convert.getResult()) : Value();
          builder.create<ActivationOp>(
              kb.loc, ActivationFunc::copy, dst, in[0].tile, Value(), Value(),
              rowSum, llvm::APFloat(1.0f), llvm::APFloat(0.0f));
          ++scalarWork;
        } else {
          builder.create<TensorCopyOp>(kb.loc, dst, in[0].tile, Engine::vector);
          ++vectorWork;
        }
        return define({in[0].form, dst, 0.0});
      })
      .Case([&](trn::GeluGradOp o) {
        ActivationFunc derivative =
            o.getApproximate() == trn::GeluApproximation::tanh
                ? ActivationFunc::gelu_tanh_dx
                : ActivationFunc::gelu_dx;
        Value slope = newTile(resultForm, builder.getF32Type());
        builder.create<ActivationOp>(kb.loc, derivative, slope, operandTile(1),
                                     Value(), Value(), Value(),
                                     llvm::APFloat(1.0f), llvm::APFloat(0.0f));
        Value dst = newTile(resultForm, dstType);
        builder.create<TensorTensorOp>(kb.loc, AluOp::multiply, dst,
                                       operandTile(0), slope, Engine::vector);
        return define({resultForm, dst, 0.0});
      })
      .Default([&](Operation *other) {
        return fail(other, Twine("'") + other->getName().getStringRef() +
                               "' has no lowering inside a group");
      });
}

Value FusionLowering::resultTile(Operation *op, Form form, Type elementType) {
  if (form == Form::Full && !blockResults.empty()) {
    Value value = op->getResult(0);
    if (castOnWrite.contains(value))
      value = value.getUsers().begin()->getResult(0);
    auto it = blockResults.find(value);
    if (it != blockResults.end() &&
        cast<TileType>(it->second.getType()).getElementType() == elementType)
      return kb.window(it->second, {rows, width}, col0 - blockCol0);
  }
  return newTile(form, elementType);
}

Value FusionLowering::stageInPsum(Value value, Value tile) {
  if (!psumStaging || stagedTiles >= kMaxStagedTiles || !tile)
    return Value();
  auto alloc = tile.getDefiningOp<AllocOp>();
  if (!alloc || !alloc->hasOneUse())
    return Value();
  TileType type = alloc.getType();
  auto producer = dyn_cast<ActivationOp>(*alloc->getUsers().begin());
  if (type.getMemory() != MemorySpace::sbuf || !type.getElementType().isF32() ||
      type.getFreeBytes() > kPsumStageColumns * 4 || !producer ||
      producer.getDst() != tile ||
      producer->getBlock() != builder.getInsertionBlock() ||
      !value.hasOneUse() || isa<trn::YieldOp>(*value.getUsers().begin()))
    return Value();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(alloc);
  Value staged = builder.create<AllocOp>(
      alloc.getLoc(),
      TileType::get(builder.getContext(), MemorySpace::psum, type.getShape(),
                    type.getElementType()),
      IntegerAttr(), IntegerAttr());
  alloc.getResult().replaceAllUsesWith(staged);
  alloc->erase();
  if (auto ref = refs.find(value); ref != refs.end())
    ref->second.tile = staged;
  ++stagedTiles;
  return staged;
}

LogicalResult FusionLowering::emitTile(int64_t r0, int64_t rowCount, int64_t c0,
                                       int64_t columns, Value accumulator) {
  row0 = r0;
  rows = rowCount;
  col0 = c0;
  width = columns;
  vectorWork = scalarWork = 0;
  stagedTiles = 0;
  refs.clear();
  affine.clear();
  rowSums.clear();
  Block &body = fusion.getBody().front();
  auto yield = cast<trn::YieldOp>(body.getTerminator());
  if (dot) {
    // Every input window of the tile must keep one partition stride.
    for (auto &[value, source] : sources)
      if (row0 / source.access.rowBlock !=
          (row0 + rows - 1) / source.access.rowBlock)
        return fail(fusion, "an input's rows cannot be read per result tile "
                            "of the matmul");
  }
  // Sums over rows always run on the Vector Engine (a running total added
  // per tile: two passes each) and are emitted last: counted from the
  // start, the casts and scalings before them go to the Scalar Engine (the
  // MLM head's cast and bias-gradient sum of [2048, 30522] f32 had both on
  // the Vector Engine).
  vectorWork += 2 * static_cast<int64_t>(columnSums.size());
  // An epilogue's first tile of a two-bank column block: the yielded full
  // values get block-wide tiles, stored after the block's last tile.
  if (dot && !wholeRows && matmulBlockWidth > 0 && pairBlocks &&
      col0 % matmulBlockWidth == 0) {
    blockResults.clear();
    blockInputs.clear();
    blockCol0 = col0;
    blockWidth = std::min(matmulBlockWidth, numColumns - col0);
    pairedBlock = blockWidth > width;
    if (pairedBlock)
      for (Value value : yield.getValues())
        if (value.getDefiningOp() &&
            cast<RankedTensorType>(value.getType()).getShape() ==
                ArrayRef(groupShape) &&
            !blockResults.count(value))
          blockResults[value] = kb.tile(MemorySpace::sbuf, rows, {blockWidth},
                                        elementTypeOf(value));
  }
  // Inputs first (for a matmul, ahead of its result's eviction).
  for (Value value : prefetched)
    if (failed(get(value)))
      return fail(fusion, "an input cannot be loaded");
  if (dot) {
    Ref result{Form::Full, accumulator, 0.0};
    if (!readAccumulator && !wholeRows) {
      // Evicted (and rounded to the result type) by the Scalar Engine.
      result.tile = resultTile(dot, Form::Full, elementTypeOf(dot.getResult()));
      kb.scalarCopy(result.tile, accumulator);
      ++scalarWork;
    }
    refs[dot.getResult()] = result;
  }
  auto store = [&](Value value, Value out) -> LogicalResult {
    if (Operation *def = value.getDefiningOp();
        def && (columnSums.contains(def) || tileRowReductions.contains(def)))
      return success(); // stored once complete
    FailureOr<Ref> ref = get(value);
    if (failed(ref) ||
        (ref->form == Form::Full && !ref->tile && affine.count(value)))
      return fail(yield, "a result is not available in the group");
    Type type = elementTypeOf(value);
    if (auto block = blockResults.find(value); block != blockResults.end()) {
      // Stored with the block's last tile; copied into its window unless
      // computed there.
      Value tile = full(*ref, type);
      auto view = tile.getDefiningOp<ViewOp>();
      if (!view || view.getSource() != block->second)
        kb.scalarCopy(kb.window(block->second, {rows, width}, col0 - blockCol0),
                      tile);
      if (col0 + width == blockCol0 + blockWidth)
        kb.dma(kb.view(out, row0 * numColumns + blockCol0, rows, numColumns,
                       {blockWidth}, {1}),
               block->second);
      return success();
    }
    if (cast<RankedTensorType>(value.getType()).getShape() ==
        ArrayRef(groupShape))
      kb.dma(kb.view(out, row0 * numColumns + col0, rows, numColumns, {width},
                     {1}),
             full(*ref, type));
    else if (col0 == 0)
      kb.dma(kb.view(out, row0, rows, 1, {1}, {1}), column(*ref, type));
    return success();
  };
  // Emits ops [begin, end), storing results as soon as they are computed
  // so that their tiles are free for the rest of the group.
  auto emitRange = [&](Block::iterator begin,
                       Block::iterator end) -> LogicalResult {
    for (Operation &op : llvm::make_range(begin, end)) {
      if (&op == dot.getOperation()) {
        for (auto [value, out] : llvm::zip(yield.getValues(), outputs))
          if (value == dot.getResult() && failed(store(value, out)))
            return failure();
        continue;
      }
      if (&op == yield.getOperation()) {
        // Results that are inputs passed through.
        for (auto [value, out] : llvm::zip(yield.getValues(), outputs))
          if (!value.getDefiningOp() && failed(store(value, out)))
            return failure();
        return success();
      }
      if (onlineExpSumParts.contains(&op))
        continue;
      if (auto online = onlineExpSums.find(&op);
          online != onlineExpSums.end()) {
        FailureOr<Ref> in = get(online->second.getOperand());
        if (failed(in) ||
            failed(emitOnlineExpSum(cast<trn::ReduceOp>(op), *in)))
          return failure();
        continue;
      }
      if (failed(emitOp(&op)))
        return failure();
      for (auto [value, out] : llvm::zip(yield.getValues(), outputs))
        if (value.getDefiningOp() == &op && failed(store(value, out)))
          return failure();
    }
    return success();
  };
  bool stagingChunks = psumStaging && width > kPsumStageColumns;
  if (!lastReduction && !stagingChunks)
    return emitRange(body.begin(), body.end());
  auto chunked =
      lastReduction ? std::next(Block::iterator(lastReduction)) : body.begin();
  if (failed(emitRange(body.begin(), chunked)))
    return failure();
  // The rest per column chunk: full-row values (and inputs loaded for the
  // whole tile) are read as windows.
  int64_t chunkWidth = lastReduction ? kTileColumns : kPsumStageColumns;
  llvm::MapVector<Value, Ref> rowRefs = refs;
  llvm::MapVector<Value, Affine> rowAffine = affine;
  int64_t rowCol0 = col0, rowWidth = width;
  for (int64_t c = 0; c < rowWidth; c += chunkWidth) {
    col0 = rowCol0 + c;
    width = std::min(chunkWidth, rowWidth - c);
    vectorWork = scalarWork = 0;
    stagedTiles = 0;
    auto windowed = [&](Value tile) {
      return tile ? kb.window(tile, {rows, width}, c) : tile;
    };
    refs.clear();
    for (auto &[value, ref] : rowRefs)
      refs[value] = ref.form == Form::Full
                        ? Ref{Form::Full, windowed(ref.tile), ref.scalar}
                        : ref;
    affine.clear();
    for (auto &[value, form] : rowAffine) {
      Affine chunk = form;
      chunk.src = windowed(form.src);
      affine[value] = chunk;
    }
    if (failed(emitRange(chunked, body.end())))
      return failure();
  }
  col0 = rowCol0;
  width = rowWidth;
  return success();
}

void FusionLowering::storeRowTotal(Value value, Value total) {
  auto yield = cast<trn::YieldOp>(fusion.getBody().front().getTerminator());
  for (auto [yielded, out] : llvm::zip(yield.getValues(), outputs))
    if (yielded == value)
      kb.dma(kb.view(out, row0, rows, 1, {1}, {1}), total);
}

LogicalResult FusionLowering::emitTileRowReduction(trn::ReduceOp reduce,
                                                   const Ref &in) {
  Type f32 = builder.getF32Type();
  AluOp alu = aluOpFor(reduce.getKind());
  Value partial = kb.tile(MemorySpace::sbuf, rows, {1}, f32);
  builder.create<TensorReduceOp>(kb.loc, alu, partial, full(in, f32), false,
                                 Engine::vector);
  ++vectorWork;
  Value &total = rowTotals[{reduce.getOperation(), row0}];
  previousRowTotals[{reduce.getOperation(), row0}] = total;
  if (!total) {
    total = partial;
  } else {
    Value next = kb.tile(MemorySpace::sbuf, rows, {1}, f32);
    builder.create<TensorTensorOp>(kb.loc, alu, next, total, partial,
                                   Engine::vector);
    total = next;
  }
  if (col0 + width < numColumns)
    return success();
  storeRowTotal(reduce.getResult(), total);
  // (An online sum of exponentials that subtracts this max reads its total
  // after it: erased then.)
  if (llvm::none_of(onlineExpSums,
                    [&](const auto &entry) { return entry.second == reduce; }))
    rowTotals.erase({reduce.getOperation(), row0});
  return success();
}

LogicalResult FusionLowering::emitOnlineExpSum(trn::ReduceOp sum,
                                               const Ref &in) {
  Type f32 = builder.getF32Type();
  trn::ReduceOp max = onlineExpSums.lookup(sum.getOperation());
  std::pair<Operation *, int64_t> maxKey{max.getOperation(), row0};
  Value runningMax = rowTotals.lookup(maxKey);
  Value maxBefore = previousRowTotals.lookup(maxKey);
  if (!runningMax)
    return fail(sum, "the max an online sum subtracts is not computed first");
  // sum(exp(x - m)) of this tile on the Scalar Engine, m the running max.
  Value negMax = kb.tile(MemorySpace::sbuf, rows, {1}, f32);
  builder.create<TensorScalarOp>(kb.loc, AluOp::multiply, AluOp::bypass, negMax,
                                 runningMax, Value(), Value(),
                                 llvm::APFloat(-1.0f), llvm::APFloat(0.0f),
                                 false, false, Engine::vector);
  Value exps = kb.tile(MemorySpace::sbuf, rows, {width}, f32);
  Value part = kb.tile(MemorySpace::sbuf, rows, {1}, f32);
  builder.create<ActivationOp>(kb.loc, ActivationFunc::exp, exps, full(in, f32),
                               Value(), negMax, part, llvm::APFloat(1.0f),
                               llvm::APFloat(0.0f));
  ++scalarWork;
  Value &total = rowTotals[{sum.getOperation(), row0}];
  if (!total) {
    total = part;
  } else {
    // The sum so far was of exp(x - m_before): times exp(m_before - m).
    Value scale = kb.tile(MemorySpace::sbuf, rows, {1}, f32);
    builder.create<ActivationOp>(kb.loc, ActivationFunc::exp, scale, maxBefore,
                                 Value(), negMax, Value(), llvm::APFloat(1.0f),
                                 llvm::APFloat(0.0f));
    Value rescaled = kb.tile(MemorySpace::sbuf, rows, {1}, f32);
    builder.create<TensorTensorOp>(kb.loc, AluOp::multiply, rescaled, total,
                                   scale, Engine::vector);
    Value next = kb.tile(MemorySpace::sbuf, rows, {1}, f32);
    builder.create<TensorTensorOp>(kb.loc, AluOp::add, next, rescaled, part,
                                   Engine::vector);
    total = next;
  }
  if (col0 + width < numColumns)
    return success();
  storeRowTotal(sum.getResult(), total);
  rowTotals.erase({sum.getOperation(), row0});
  rowTotals.erase(maxKey);
  return success();
}

LogicalResult FusionLowering::emitColumnSum(trn::ReduceOp reduce,
                                            const Ref &in) {
  Type f32 = builder.getF32Type();
  Value tile = full(in, f32);
  Value &total = columnTotals[{reduce.getOperation(), col0}];
  if (!total) {
    total = kb.tile(MemorySpace::sbuf, kPartitions, {width}, f32);
    if (rows < kPartitions)
      builder.create<MemsetOp>(kb.loc, total, llvm::APFloat(0.0f),
                               Engine::vector);
    builder.create<TensorCopyOp>(kb.loc, kb.window(total, {rows, width}, 0),
                                 tile, Engine::vector);
  } else {
    Value part = kb.window(total, {rows, width}, 0);
    builder.create<TensorTensorOp>(kb.loc, AluOp::add, part, part, tile,
                                   Engine::vector);
  }
  // (Counted when the tile started: emitTile.)
  if (row0 + rows < numRows)
    return success();
  // The last row block: the partitions' sum, [1, width], on the Tensor
  // Engine (a ones column as the stationary operand).
  int64_t used = std::min(kPartitions, numRows);
  if (!onesColumn) {
    onesColumn = kb.tile(MemorySpace::sbuf, kPartitions, {1}, f32);
    builder.create<MemsetOp>(kb.loc, onesColumn, llvm::APFloat(1.0f),
                             Engine::vector);
  }
  Value result = kb.tile(MemorySpace::sbuf, 1, {width}, f32);
  for (int64_t s0 = 0; s0 < width; s0 += kMatmulN) {
    int64_t sw = std::min(kMatmulN, width - s0);
    Value sum = kb.tile(MemorySpace::psum, 1, {sw}, f32);
    builder.create<MatmulOp>(kb.loc, sum, kb.window(onesColumn, {used, 1}, 0),
                             kb.window(total, {used, sw}, s0),
                             /*accumulate=*/false);
    kb.scalarCopy(kb.window(result, {1, sw}, s0), sum);
  }
  auto yield = cast<trn::YieldOp>(fusion.getBody().front().getTerminator());
  for (auto [value, out] : llvm::zip(yield.getValues(), outputs))
    if (value == reduce.getResult())
      kb.dma(kb.view(out, col0, 1, 0, {width}, {1}), result);
  columnTotals.erase({reduce.getOperation(), col0});
  return success();
}

LogicalResult FusionLowering::run() {
  if (failed(analyse()))
    return failure();
  for (Value result : fusion.getResults())
    outputs.push_back(lowering.newTensor(result));
  if (dot) {
    Block &body = fusion.getBody().front();
    for (auto [arg, input] : llvm::zip(body.getArguments(), fusion.getInputs()))
      if (arg == dot.getLhs() || arg == dot.getRhs())
        lowering.values[arg] = lowering.hbmOf(input);
    // The epilogue's instructions count as the group's own kind (the
    // optimizer's update after a weight gradient), the matmul's as matmul.
    StringAttr epilogueKind = builder.getStringAttr(
        fusion->hasAttr("trn.optimizer") ? "optimizer" : "elementwise");
    StringAttr matmulKind = builder.getStringAttr("matmul");
    return lowering.lowerDot(
        dot,
        [&](Value accumulator, int64_t r0, int64_t tileRows, int64_t c0,
            int64_t columns) {
          builder.create<KindOp>(kb.loc, epilogueKind, lowering.origin);
          LogicalResult emitted =
              emitTile(r0, tileRows, c0, columns, accumulator);
          builder.create<KindOp>(kb.loc, matmulKind, lowering.origin);
          return emitted;
        },
        wholeRows);
  }
  int64_t rowBlock = numRows;
  for (auto &[value, source] : sources)
    rowBlock = std::min(rowBlock, source.access.rowBlock);
  int64_t chunk = hasReduction || hasRotation
                      ? numColumns
                      : std::min(numColumns, kTileColumns);
  for (int64_t block = 0; block < numRows; block += rowBlock)
    for (int64_t r0 = block; r0 < block + rowBlock; r0 += kPartitions)
      for (int64_t c0 = 0; c0 < numColumns; c0 += chunk)
        if (failed(emitTile(r0, std::min(kPartitions, block + rowBlock - r0),
                            c0, std::min(chunk, numColumns - c0))))
          return failure();
  return success();
}

LogicalResult Lowering::lowerFusion(trn::FusionOp op) {
  return FusionLowering(*this, op).run();
}
