//===- NCOps.cpp - nc op verifiers: the hardware limits ------------------===//
//
// Every limit comes from the target table (runtime/include/trnrt/Target.h);
// every message names the limit, so a lowering bug reads like a hardware
// rule ("moving free size 640 exceeds 512 (one PSUM bank of fp32)").
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/NC/IR/NCOps.h"

#include "trnrt/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::nc;

#define GET_OP_CLASSES
#include "trn/Dialect/NC/IR/NCOps.cpp.inc"

namespace {

TileType tileOf(Value value) { return cast<TileType>(value.getType()); }

bool isPsum(Value value) {
  return tileOf(value).getMemory() == MemorySpace::psum;
}
bool isSbuf(Value value) {
  return tileOf(value).getMemory() == MemorySpace::sbuf;
}

/// `name` has the partition count and free-element count of `reference`.
LogicalResult checkSameShape(Operation *op, Value value, StringRef name,
                             Value reference, StringRef referenceName) {
  TileType a = tileOf(value), b = tileOf(reference);
  if (a.getPartitions() != b.getPartitions())
    return op->emitOpError()
           << name << " spans " << a.getPartitions() << " partitions but "
           << referenceName << " spans " << b.getPartitions();
  if (a.getFreeElements() != b.getFreeElements())
    return op->emitOpError() << name << " has " << a.getFreeElements()
                             << " elements per partition but " << referenceName
                             << " has " << b.getFreeElements();
  return success();
}

/// A [P, 1] fp32 column on the partitions of `reference` (per-partition
/// scalars of tensor_scalar and activation).
LogicalResult checkColumn(Operation *op, Value column, StringRef name,
                          Value reference) {
  if (!column)
    return success();
  TileType type = tileOf(column);
  if (type.getFreeElements() != 1 || !type.getElementType().isF32() ||
      type.getPartitions() != tileOf(reference).getPartitions())
    return op->emitOpError()
           << name << " must be a [" << tileOf(reference).getPartitions()
           << ", 1] f32 column, got " << type;
  return success();
}

LogicalResult checkOnChip(Operation *op, Value value, StringRef name) {
  if (tileOf(value).getMemory() == MemorySpace::hbm)
    return op->emitOpError() << name
                             << " must be in SBUF or PSUM (only DMA moves "
                                "HBM data)";
  return success();
}

/// Vector/GpSimd data-path ops: GpSimd cannot reach PSUM; only those two
/// engines run them (ScalarE tensor_copy is not supported on NC-v2).
LogicalResult checkVectorLikeEngine(Operation *op, Engine engine,
                                    ArrayRef<Value> operands) {
  if (engine != Engine::vector && engine != Engine::gpsimd)
    return op->emitOpError() << "runs on the vector or gpsimd engine, not "
                             << stringifyEngine(engine);
  for (Value operand : operands) {
    if (failed(checkOnChip(op, operand, "every operand")))
      return failure();
    if (engine == Engine::gpsimd && isPsum(operand))
      return op->emitOpError("the gpsimd engine cannot access PSUM");
  }
  return success();
}

/// Two-input instructions may take at most one input from PSUM.
LogicalResult checkOnePsumInput(Operation *op, ArrayRef<Value> inputs) {
  int count = 0;
  for (Value input : inputs)
    count += input && isPsum(input);
  if (count > 1)
    return op->emitOpError("at most one input may come from PSUM (they share "
                           "one PSUM read port)");
  return success();
}

/// Legal start partitions for a tile of `partitions` partitions (NC-v2).
bool isLegalStartPartition(int64_t start, int64_t partitions) {
  if (partitions > 64)
    return start == 0;
  if (partitions > 32)
    return start == 0 || start == 64;
  return start == 0 || start == 32 || start == 64 || start == 96;
}

int64_t elementBytes(Type type) {
  return type.isSignlessInteger(1) ? 1 : (type.getIntOrFloatBitWidth() + 7) / 8;
}

} // namespace

//===----------------------------------------------------------------------===//
// Storage
//===----------------------------------------------------------------------===//

LogicalResult AllocOp::verify() {
  const trnrt::Target *target = getTarget(*this);
  if (!target)
    return failure();
  TileType type = getType();
  if (type.getMemory() == MemorySpace::hbm)
    return emitOpError(
        "allocates SBUF or PSUM tiles; use nc.hbm_alloc for HBM");
  if (type.getPartitions() > target->partitions)
    return emitOpError() << "tile spans " << type.getPartitions()
                         << " partitions; the core has " << target->partitions;
  bool psum = type.getMemory() == MemorySpace::psum;
  int64_t capacity =
      psum ? target->psumBankBytes : target->sbufUsableBytesPerPartition;
  if (type.getFreeBytes() > capacity)
    return emitOpError() << type.getFreeBytes()
                         << " bytes per partition exceed " << capacity
                         << (psum ? " (one PSUM bank: a PSUM tile cannot cross "
                                    "a bank boundary)"
                                  : " (usable SBUF per partition)");
  if (auto start = getStartPartition()) {
    if (!isLegalStartPartition(*start, type.getPartitions()))
      return emitOpError() << "start partition " << *start << " is illegal for "
                           << type.getPartitions()
                           << " partitions (more than 64: 0; 33-64: 0 or 64; "
                              "1-32: 0, 32, 64 or 96)";
    if (*start + type.getPartitions() > target->partitions)
      return emitOpError() << "partitions " << *start << ".."
                           << *start + type.getPartitions() - 1
                           << " exceed the core's " << target->partitions;
  }
  if (auto offset = getByteOffset()) {
    int64_t memoryBytes = psum ? target->psumBytesPerPartition
                               : target->sbufUsableBytesPerPartition;
    if (*offset < 0 || *offset + type.getFreeBytes() > memoryBytes)
      return emitOpError() << "bytes " << *offset << ".."
                           << *offset + type.getFreeBytes() - 1
                           << " lie outside " << (psum ? "PSUM" : "SBUF")
                           << " (" << memoryBytes << " bytes per partition)";
    if (*offset % elementBytes(type.getElementType()) != 0)
      return emitOpError() << "byte offset " << *offset
                           << " is not aligned to the element size";
    if (psum && *offset / int64_t(target->psumBankBytes) !=
                    (*offset + type.getFreeBytes() - 1) /
                        int64_t(target->psumBankBytes))
      return emitOpError() << "PSUM bytes " << *offset << ".."
                           << *offset + type.getFreeBytes() - 1 << " cross a "
                           << target->psumBankBytes << "-byte bank boundary";
  }
  return success();
}

LogicalResult HbmReshapeOp::verify() {
  auto count = [](HbmType type) {
    int64_t n = 1;
    for (int64_t size : type.getShape())
      n *= size;
    return n;
  };
  HbmType source = getSource().getType(), result = getType();
  std::optional<int64_t> offset;
  if (std::optional<uint64_t> raw = getOffset())
    offset = static_cast<int64_t>(*raw);
  if (!offset) {
    if (source.getElementType() != result.getElementType() ||
        count(source) != count(result))
      return emitOpError() << "reshapes keep the element type and count: "
                           << source << " vs " << result;
    return success();
  }
  if (*offset < 0 || source.getElementType() != result.getElementType() ||
      *offset + count(result) > count(source))
    return emitOpError() << "a window of " << count(result)
                         << " elements at offset " << *offset
                         << " must lie inside " << source
                         << " and keep its element type, got " << result;
  return success();
}

LogicalResult HbmConstantOp::verify() {
  auto dense = dyn_cast<DenseElementsAttr>(getValue());
  HbmType type = getType();
  if (!dense || dense.getElementType() != type.getElementType() ||
      dense.getType().getNumElements() !=
          RankedTensorType::get(type.getShape(), type.getElementType())
              .getNumElements())
    return emitOpError() << "value must be a dense constant with "
                         << type.getElementType() << " elements and as many "
                         << "elements as " << type;
  return success();
}

LogicalResult ViewOp::verify() {
  TileType result = getType();
  ArrayRef<int64_t> strides = getStrides();
  if (strides.size() != result.getFreeShape().size())
    return emitOpError()
           << "needs one stride per free dimension of the result ("
           << result.getFreeShape().size() << "), got " << strides.size();
  // Engine access patterns have int16 strides; an HBM window is a DMA
  // descriptor, bounded only by the tensor (docs/isa.md). The HBM bound keeps
  // the extent arithmetic below far from overflow.
  bool onChip = isa<TileType>(getSource().getType());
  constexpr int64_t kMaxHbmStride = int64_t(1) << 40;
  SmallVector<int64_t> allStrides(strides);
  allStrides.push_back(static_cast<int64_t>(getPartitionStride()));
  for (int64_t stride : allStrides) {
    if (onChip && (stride < -32768 || stride > 32767))
      return emitOpError() << "stride " << stride
                           << " does not fit in 16 bits (on-chip "
                              "access-pattern strides are int16)";
    if (!onChip && (stride < -kMaxHbmStride || stride > kMaxHbmStride))
      return emitOpError() << "HBM stride " << stride << " is beyond 2^40 "
                           << "elements";
  }
  // Lowest and highest element touched within one partition.
  int64_t low = getOffset(), high = getOffset();
  for (auto [size, stride] : llvm::zip(result.getFreeShape(), strides))
    (stride < 0 ? low : high) += (size - 1) * stride;

  if (auto source = dyn_cast<TileType>(getSource().getType())) {
    if (source.getMemory() != result.getMemory() ||
        source.getElementType() != result.getElementType())
      return emitOpError() << "a view keeps its source's memory and element "
                              "type: "
                           << source << " vs " << result;
    if (getStartPartition() < 0 ||
        getStartPartition() + result.getPartitions() > source.getPartitions())
      return emitOpError() << "partitions " << getStartPartition() << ".."
                           << getStartPartition() + result.getPartitions() - 1
                           << " are outside the source's "
                           << source.getPartitions();
    if (getPartitionStride() != 0)
      return emitOpError("partition_stride applies to HBM views only");
    if (low < 0 || high >= source.getFreeElements())
      return emitOpError() << "elements " << low << ".." << high
                           << " are outside the source's "
                           << source.getFreeElements() << " per partition";
    return success();
  }
  auto source = cast<HbmType>(getSource().getType());
  // i64 tensors (indices) may be read as i32 words.
  int64_t wordsPerElement = 1;
  if (source.getElementType().isSignlessInteger(64) &&
      result.getElementType().isSignlessInteger(32))
    wordsPerElement = 2;
  if (result.getMemory() != MemorySpace::hbm ||
      (wordsPerElement == 1 &&
       result.getElementType() != source.getElementType()))
    return emitOpError() << "a view of an HBM tensor is an hbm tile of the "
                            "same element type (or i32 words of i64), got "
                         << result;
  if (getStartPartition() != 0)
    return emitOpError("start_partition applies to on-chip views; HBM views "
                       "use offset and partition_stride");
  int64_t total = wordsPerElement;
  for (int64_t size : source.getShape())
    total *= size;
  int64_t span = (result.getPartitions() - 1) * getPartitionStride();
  (span < 0 ? low : high) += span;
  if (low < 0 || high >= total)
    return emitOpError() << "elements " << low << ".." << high
                         << " are outside the HBM tensor's " << total;
  return success();
}

//===----------------------------------------------------------------------===//
// Tensor Engine
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  const trnrt::Target *target = getTarget(*this);
  if (!target)
    return failure();
  TileType dst = tileOf(getDst()), stationary = tileOf(getStationary()),
           moving = tileOf(getMoving());
  if (!isPsum(getDst()))
    return emitOpError("writes its result to PSUM only");
  if (!isSbuf(getStationary()) || !isSbuf(getMoving()))
    return emitOpError("reads stationary and moving from SBUF only (the "
                       "Tensor Engine cannot read PSUM)");
  int64_t k = stationary.getPartitions(), m = stationary.getFreeElements(),
          n = moving.getFreeElements();
  if (moving.getPartitions() != k)
    return emitOpError() << "stationary and moving contract over their "
                            "partitions and need the same count, got "
                         << k << " and " << moving.getPartitions();
  if (k > target->matmulMaxK)
    return emitOpError() << "contraction K = " << k << " exceeds "
                         << target->matmulMaxK << " (PE rows)";
  if (m > target->matmulMaxStationaryFree)
    return emitOpError() << "stationary free size M = " << m << " exceeds "
                         << target->matmulMaxStationaryFree << " (PE columns)";
  if (n > target->matmulMaxMovingFree)
    return emitOpError() << "moving free size N = " << n << " exceeds "
                         << target->matmulMaxMovingFree
                         << " (one PSUM bank of fp32)";
  if (dst.getPartitions() != m || dst.getFreeElements() != n)
    return emitOpError() << "result must be [" << m << ", " << n
                         << "] (M partitions, N elements), got " << dst;
  bool stationaryF32 = stationary.getElementType().isF32();
  bool movingF32 = moving.getElementType().isF32();
  if (stationaryF32 != movingF32)
    return emitOpError("an fp32 operand must be paired with an fp32 operand");
  if (stationary.getElementType().isSignlessInteger() ||
      moving.getElementType().isSignlessInteger())
    return emitOpError("matmul inputs are floats (fp8, bf16, fp16, fp32)");
  return success();
}

LogicalResult TransposeOp::verify() {
  const trnrt::Target *target = getTarget(*this);
  if (!target)
    return failure();
  TileType dst = tileOf(getDst()), src = tileOf(getSrc());
  if (!isPsum(getDst()) || !isSbuf(getSrc()))
    return emitOpError("transposes an SBUF tile into PSUM (it is an identity "
                       "matmul)");
  if (src.getFreeElements() > target->matmulMaxStationaryFree)
    return emitOpError() << "source free size " << src.getFreeElements()
                         << " exceeds " << target->matmulMaxStationaryFree;
  if (dst.getPartitions() != src.getFreeElements() ||
      dst.getFreeElements() != src.getPartitions())
    return emitOpError() << "result must be [" << src.getFreeElements() << ", "
                         << src.getPartitions() << "], got " << dst;
  return success();
}

//===----------------------------------------------------------------------===//
// Scalar Engine
//===----------------------------------------------------------------------===//

LogicalResult ActivationOp::verify() {
  if (failed(checkOnChip(*this, getDst(), "dst")) ||
      failed(checkOnChip(*this, getSrc(), "src")) ||
      failed(checkSameShape(*this, getDst(), "dst", getSrc(), "src")) ||
      failed(checkColumn(*this, getScaleColumn(), "scale_column", getSrc())) ||
      failed(checkColumn(*this, getBiasColumn(), "bias_column", getSrc())) ||
      failed(checkColumn(*this, getRowSum(), "row_sum", getSrc())))
    return failure();
  if (getScaleColumn() && getScale().convertToFloat() != 1.0f)
    return emitOpError("takes either scale_column or an immediate scale");
  if (getBiasColumn() && getBias().convertToFloat() != 0.0f)
    return emitOpError("takes either bias_column or an immediate bias");
  return success();
}

//===----------------------------------------------------------------------===//
// Vector Engine
//===----------------------------------------------------------------------===//

LogicalResult TensorTensorOp::verify() {
  if (failed(checkVectorLikeEngine(*this, getEngine(),
                                   {getDst(), getLhs(), getRhs()})) ||
      failed(checkSameShape(*this, getLhs(), "lhs", getDst(), "dst")) ||
      failed(checkSameShape(*this, getRhs(), "rhs", getDst(), "dst")) ||
      failed(checkOnePsumInput(*this, {getLhs(), getRhs()})))
    return failure();
  if (getOp() == AluOp::bypass)
    return emitOpError("needs an operator (bypass is for tensor_scalar's "
                       "second step)");
  if (getOp() == AluOp::pow && getEngine() != Engine::gpsimd)
    return emitOpError("pow runs on the gpsimd engine only");
  return success();
}

LogicalResult TensorScalarOp::verify() {
  if (failed(checkVectorLikeEngine(*this, getEngine(), {getDst(), getSrc()})) ||
      failed(checkSameShape(*this, getSrc(), "src", getDst(), "dst")) ||
      failed(checkColumn(*this, getColumn0(), "column0", getSrc())) ||
      failed(checkColumn(*this, getColumn1(), "column1", getSrc())))
    return failure();
  if (getOp0() == AluOp::bypass)
    return emitOpError("op0 cannot be bypass");
  if (getOp1() == AluOp::bypass && (getColumn1() || getReverse1()))
    return emitOpError("op1 = bypass takes no second scalar");
  return success();
}

LogicalResult TensorReduceOp::verify() {
  if (failed(checkVectorLikeEngine(*this, getEngine(), {getDst(), getSrc()})))
    return failure();
  TileType dst = tileOf(getDst()), src = tileOf(getSrc());
  if (dst.getPartitions() != src.getPartitions() || dst.getFreeElements() != 1)
    return emitOpError() << "reduces each partition's free elements into a ["
                         << src.getPartitions()
                         << ", 1] tile (partitions cannot be reduced), got "
                         << dst;
  switch (getOp()) {
  case AluOp::add:
  case AluOp::multiply:
  case AluOp::max:
  case AluOp::min:
  case AluOp::logical_and:
  case AluOp::logical_or:
  case AluOp::bitwise_and:
  case AluOp::bitwise_or:
    return success();
  default:
    return emitOpError() << stringifyAluOp(getOp())
                         << " is not a reduction operator";
  }
}

LogicalResult TensorCopyOp::verify() {
  return failure(
      failed(checkVectorLikeEngine(*this, getEngine(), {getDst(), getSrc()})) ||
      failed(checkSameShape(*this, getSrc(), "src", getDst(), "dst")));
}

LogicalResult SelectOp::verify() {
  return failure(
      failed(checkVectorLikeEngine(
          *this, Engine::vector,
          {getDst(), getPred(), getOnTrue(), getOnFalse()})) ||
      failed(checkSameShape(*this, getPred(), "pred", getDst(), "dst")) ||
      failed(checkSameShape(*this, getOnTrue(), "on_true", getDst(), "dst")) ||
      failed(
          checkSameShape(*this, getOnFalse(), "on_false", getDst(), "dst")) ||
      failed(checkOnePsumInput(*this, {getPred(), getOnTrue(), getOnFalse()})));
}

LogicalResult BnStatsOp::verify() {
  const trnrt::Target *target = getTarget(*this);
  if (!target || failed(checkVectorLikeEngine(*this, Engine::vector,
                                              {getDst(), getSrc()})))
    return failure();
  TileType dst = tileOf(getDst()), src = tileOf(getSrc());
  if (src.getFreeElements() > target->bnStatsMaxFree)
    return emitOpError() << "free size " << src.getFreeElements() << " exceeds "
                         << target->bnStatsMaxFree
                         << " (bn_stats limit per instruction)";
  if (dst.getPartitions() != src.getPartitions() ||
      dst.getFreeElements() != 6 || !dst.getElementType().isF32())
    return emitOpError() << "result must be [" << src.getPartitions()
                         << ", 6] f32, got " << dst;
  return success();
}

LogicalResult BnAggrOp::verify() {
  if (failed(
          checkVectorLikeEngine(*this, Engine::vector, {getDst(), getSrc()})))
    return failure();
  TileType dst = tileOf(getDst()), src = tileOf(getSrc());
  if (src.getFreeElements() % 6 != 0 || !src.getElementType().isF32())
    return emitOpError() << "source must hold f32 bn_stats tuples (a multiple "
                            "of 6 per partition), got "
                         << src;
  if (dst.getPartitions() != src.getPartitions() ||
      dst.getFreeElements() != 2 || !dst.getElementType().isF32())
    return emitOpError() << "result must be [" << src.getPartitions()
                         << ", 2] f32 (mean, variance), got " << dst;
  return success();
}

LogicalResult MemsetOp::verify() {
  return checkVectorLikeEngine(*this, getEngine(), {getDst()});
}

LogicalResult RngOp::verify() {
  if (failed(
          checkVectorLikeEngine(*this, Engine::vector, {getDst(), getSeed()})))
    return failure();
  TileType dst = tileOf(getDst()), seed = tileOf(getSeed());
  if (seed.getPartitions() != dst.getPartitions() ||
      seed.getFreeElements() != 2 ||
      !seed.getElementType().isSignlessInteger(32))
    return emitOpError() << "seed must be [" << dst.getPartitions()
                         << ", 2] i32 (low and high word on every partition "
                            "of dst), got "
                         << seed;
  Type element = dst.getElementType();
  bool mask = element.isSignlessInteger(1);
  if (!mask && !isa<FloatType>(element))
    return emitOpError() << "writes floats or an i1 mask, not " << element;
  if (getSteps().size() != dst.getFreeShape().size())
    return emitOpError() << "needs one step per free dimension ("
                         << dst.getFreeShape().size() << "), got "
                         << getSteps().size();
  if (getStream() > int64_t(UINT32_MAX))
    return emitOpError() << "stream " << getStream()
                         << " does not fit the 32-bit counter word";
  if (std::optional<int64_t> keepBelow = getKeepBelow()) {
    if (*keepBelow < 0 || *keepBelow > (int64_t(1) << 24))
      return emitOpError() << "keep_below " << *keepBelow
                           << " is outside [0, 2^24]";
  } else if (mask) {
    return emitOpError() << "an i1 result needs keep_below (a uniform draw "
                            "is not a mask)";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// GpSimd
//===----------------------------------------------------------------------===//

LogicalResult IotaOp::verify() {
  if (failed(checkVectorLikeEngine(*this, Engine::gpsimd, {getDst()})))
    return failure();
  if (getSteps().size() != tileOf(getDst()).getFreeShape().size())
    return emitOpError() << "needs one step per free dimension ("
                         << tileOf(getDst()).getFreeShape().size() << "), got "
                         << getSteps().size();
  return success();
}

LogicalResult AffineSelectOp::verify() {
  if (failed(
          checkVectorLikeEngine(*this, Engine::gpsimd, {getDst(), getSrc()})) ||
      failed(checkSameShape(*this, getSrc(), "src", getDst(), "dst")))
    return failure();
  if (getSteps().size() != tileOf(getDst()).getFreeShape().size())
    return emitOpError() << "needs one step per free dimension ("
                         << tileOf(getDst()).getFreeShape().size() << "), got "
                         << getSteps().size();
  return success();
}

//===----------------------------------------------------------------------===//
// DMA
//===----------------------------------------------------------------------===//

static LogicalResult checkQueue(Operation *op, int64_t queue) {
  const trnrt::Target *target = getTarget(op);
  if (!target)
    return failure();
  if (queue < 0 || queue >= target->dmaQueues)
    return op->emitError() << "DMA queue " << queue << " is outside [0, "
                           << target->dmaQueues << ")";
  return success();
}

LogicalResult DmaCopyOp::verify() {
  if (failed(checkQueue(*this, getQueue())))
    return failure();
  if (isPsum(getDst()) || isPsum(getSrc()))
    return emitOpError("DMA cannot access PSUM (evict it to SBUF first)");
  bool dstHbm = tileOf(getDst()).getMemory() == MemorySpace::hbm;
  bool srcHbm = tileOf(getSrc()).getMemory() == MemorySpace::hbm;
  if (dstHbm && srcHbm)
    return emitOpError("moves data between HBM and SBUF or within SBUF, not "
                       "HBM to HBM");
  return checkSameShape(*this, getSrc(), "src", getDst(), "dst");
}

static LogicalResult checkIndirect(Operation *op, Value rows, HbmType table,
                                   Value indices) {
  TileType rowType = tileOf(rows), indexType = tileOf(indices);
  if (rowType.getMemory() != MemorySpace::sbuf ||
      indexType.getMemory() != MemorySpace::sbuf)
    return op->emitOpError("rows and indices live in SBUF");
  if (table.getShape().size() != 2)
    return op->emitOpError()
           << "table must be 2-D [rows, row size], got " << table;
  if (rowType.getFreeElements() != table.getShape()[1])
    return op->emitOpError()
           << "each partition holds one row of " << table.getShape()[1]
           << " elements, got " << rowType.getFreeElements();
  if (indexType.getPartitions() != rowType.getPartitions() ||
      indexType.getFreeElements() != 1 ||
      !indexType.getElementType().isSignlessInteger(32))
    return op->emitOpError() << "indices must be [" << rowType.getPartitions()
                             << ", 1] i32, got " << indexType;
  return success();
}

LogicalResult DmaGatherOp::verify() {
  return failure(failed(checkQueue(*this, getQueue())) ||
                 failed(checkIndirect(*this, getDst(), getTable().getType(),
                                      getIndices())));
}

LogicalResult DmaScatterAddOp::verify() {
  return failure(failed(checkQueue(*this, getQueue())) ||
                 failed(checkIndirect(*this, getSrc(), getTable().getType(),
                                      getIndices())));
}

//===----------------------------------------------------------------------===//
// Subroutine calls
//===----------------------------------------------------------------------===//

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto callee =
      symbols.lookupNearestSymbolFrom<func::FuncOp>(*this, getCalleeAttr());
  if (!callee)
    return emitOpError("calls '")
           << getCallee() << "', which is not a function of the module";
  if (callee.isExternal())
    return emitOpError("calls '") << getCallee() << "', which has no body";
  auto operands = getOperands();
  if (callee.getNumArguments() != operands.size())
    return emitOpError("binds ")
           << operands.size() << " tensors to '" << getCallee()
           << "', which has " << callee.getNumArguments() << " arguments";
  auto bytesOf = [](Type type) -> std::optional<int64_t> {
    auto hbm = dyn_cast<HbmType>(type);
    if (!hbm || !hbm.getElementType().isIntOrFloat())
      return std::nullopt;
    return hbmBytes(hbm);
  };
  for (auto [i, operand] : llvm::enumerate(operands)) {
    std::optional<int64_t> expected = bytesOf(callee.getArgumentTypes()[i]);
    std::optional<int64_t> bound = bytesOf(operand.getType());
    if (!expected || !bound || *expected != *bound)
      return emitOpError("binds ")
             << operand.getType() << " to argument " << i << " of '"
             << getCallee() << "', " << callee.getArgumentTypes()[i]
             << " (the byte sizes must match)";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Provenance
//===----------------------------------------------------------------------===//

LogicalResult KindOp::verify() {
  if (!llvm::is_contained({"other", "matmul", "attention", "elementwise",
                           "optimizer", "data_movement", "collective"},
                          getKind()))
    return emitOpError("kind '")
           << getKind()
           << "' is not one of other, matmul, attention, elementwise, "
              "optimizer, data_movement, collective";
  return success();
}
