//===- TrnOps.cpp - trn op verifiers and type inference ------------------===//
//
// Every check an assert would make in upstream MLIR is an explicit diagnostic
// here: Debian's LLVM is built without assertions, and malformed graphs must
// produce an error, never a crash.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::trn;

#include "trn/Dialect/Trn/IR/TrnEnums.cpp.inc"

#define GET_OP_CLASSES
#include "trn/Dialect/Trn/IR/TrnOps.cpp.inc"

namespace {

/// Formats an integer list as `[a, b, c]` for diagnostics.
std::string list(ArrayRef<int64_t> values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(values, os);
  os << "]";
  return text;
}

/// Emits `'<op>' op <message>` at `loc` (when present) and fails.
template <typename... Args>
LogicalResult fail(std::optional<Location> loc, StringRef opName,
                   Args &&...args) {
  return emitOptionalError(loc, "'", opName, "' op ",
                           std::forward<Args>(args)...);
}

RankedTensorType rankedOrNull(Type type) {
  return dyn_cast_or_null<RankedTensorType>(type);
}

/// Checks that `dims` are distinct, in [0, rank) and, if `increasing`,
/// strictly increasing.
LogicalResult checkDims(std::optional<Location> loc, StringRef opName,
                        StringRef what, ArrayRef<int64_t> dims, int64_t rank,
                        bool increasing) {
  llvm::SmallBitVector seen(rank);
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= rank)
      return fail(loc, opName, what, " ", list(dims), " has dimension ", dim,
                  " out of range for rank ", rank);
    if (seen.test(dim))
      return fail(loc, opName, what, " ", list(dims), " repeats dimension ",
                  dim);
    if (increasing && i > 0 && dims[i - 1] > dim)
      return fail(loc, opName, what, " ", list(dims),
                  " must be strictly increasing");
    seen.set(dim);
  }
  return success();
}

LogicalResult checkDimInRange(std::optional<Location> loc, StringRef opName,
                              StringRef what, int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank)
    return fail(loc, opName, what, " ", dim, " is out of range for rank ",
                rank);
  return success();
}

/// Shape `shape` with the dimensions in `dims` removed.
SmallVector<int64_t> dropDims(ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> result;
  for (auto [i, size] : llvm::enumerate(shape))
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      result.push_back(size);
  return result;
}

/// The number of elements of a static shape, or std::nullopt when it does not
/// fit in int64_t (ShapedType::getNumElements would silently wrap around).
std::optional<int64_t> checkedNumElements(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    if (llvm::MulOverflow(count, size, count))
      return std::nullopt;
  return count;
}

Type f32(MLIRContext *context) { return Float32Type::get(context); }

} // namespace

//===----------------------------------------------------------------------===//
// CompareOp
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto lhs = rankedOrNull(adaptor.getLhs().getType());
  if (!lhs)
    return fail(loc, getOperationName(), "expects a ranked tensor operand");
  inferred.push_back(
      RankedTensorType::get(lhs.getShape(), IntegerType::get(context, 1)));
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp, IotaOp, RNG
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  if (!isa<DenseElementsAttr>(getValue()))
    return emitOpError("value must be a dense elements attribute "
                       "(dense<...>), got ")
           << getValue();
  return success();
}

LogicalResult IotaOp::verify() {
  auto type = getType();
  if (type.getRank() == 0)
    return emitOpError("result must have rank at least 1");
  return checkDimInRange(getLoc(), getOperationName(), "dim", getDim(),
                         type.getRank());
}

static LogicalResult verifyStream(Operation *op, int64_t stream) {
  // The stream goes into a 32-bit Philox counter word.
  if (stream > std::numeric_limits<uint32_t>::max())
    return op->emitOpError("stream ") << stream << " does not fit in 32 bits";
  return success();
}

LogicalResult RngUniformOp::verify() {
  double low = getLow().convertToDouble();
  double high = getHigh().convertToDouble();
  if (!(low < high) || !std::isfinite(low) || !std::isfinite(high))
    return emitOpError("needs finite low < high, got low = ")
           << low << ", high = " << high;
  return verifyStream(*this, getStream());
}

LogicalResult RngBernoulliOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0.0 && p <= 1.0))
    return emitOpError("probability p = ") << p << " is not in [0, 1]";
  return verifyStream(*this, getStream());
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult BroadcastInDimOp::verify() {
  auto operandType = getOperand().getType();
  auto resultType = getType();
  if (operandType.getElementType() != resultType.getElementType())
    return emitOpError("operand element type ")
           << operandType.getElementType()
           << " differs from result element type "
           << resultType.getElementType();
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != operandType.getRank())
    return emitOpError("dims ")
           << list(dims) << " has " << dims.size()
           << " entries but the operand has rank " << operandType.getRank();
  if (failed(checkDims(getLoc(), getOperationName(), "dims", dims,
                       resultType.getRank(), /*increasing=*/true)))
    return failure();
  for (auto [i, dim] : llvm::enumerate(dims)) {
    int64_t from = operandType.getDimSize(i);
    int64_t to = resultType.getDimSize(dim);
    if (from != 1 && from != to)
      return emitOpError("operand dimension ")
             << i << " of size " << from << " cannot broadcast to result "
             << "dimension " << dim << " of size " << to;
  }
  return success();
}

LogicalResult RotateHalfOp::verify() {
  auto type = cast<RankedTensorType>(getOperand().getType());
  if (type.getRank() == 0)
    return emitOpError("needs a tensor of rank 1 or more, got ") << type;
  int64_t last = type.getShape().back();
  if (ShapedType::isDynamic(last) || last % 2 != 0)
    return emitOpError("rotates the halves of the last dimension, which must "
                       "have a static even size, got ")
           << type;
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto operandType = getOperand().getType();
  auto resultType = getType();
  if (operandType.getElementType() != resultType.getElementType())
    return emitOpError("operand element type ")
           << operandType.getElementType()
           << " differs from result element type "
           << resultType.getElementType();
  std::optional<int64_t> operandCount =
      checkedNumElements(operandType.getShape());
  std::optional<int64_t> resultCount =
      checkedNumElements(resultType.getShape());
  if (!operandCount || !resultCount)
    return emitOpError("cannot reshape ")
           << operandType << " into " << resultType
           << ": the number of elements does not fit in 64 bits";
  if (*operandCount != *resultCount)
    return emitOpError("cannot reshape ")
           << *operandCount << " elements (" << operandType << ") into "
           << *resultCount << " (" << resultType << ")";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = rankedOrNull(adaptor.getOperand().getType());
  if (!type)
    return fail(loc, getOperationName(), "expects a ranked tensor operand");
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return fail(loc, getOperationName(), "perm ", list(perm), " has ",
                perm.size(), " entries but the operand has rank ",
                type.getRank());
  if (failed(checkDims(loc, getOperationName(), "perm", perm, type.getRank(),
                       /*increasing=*/false)))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t dim : perm)
    shape.push_back(type.getDimSize(dim));
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto type = rankedOrNull(adaptor.getOperand().getType());
  if (!type)
    return fail(loc, getOperationName(), "expects a ranked tensor operand");
  ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit(),
                    strides = adaptor.getStrides();
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return fail(loc, getOperationName(), "start, limit and strides need ", rank,
                " entries each (the operand rank), got ", start.size(), ", ",
                limit.size(), " and ", strides.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = type.getDimSize(d);
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > size)
      return fail(loc, getOperationName(), "dimension ", d,
                  ": needs 0 <= start (", start[d], ") <= limit (", limit[d],
                  ") <= size (", size, ")");
    if (strides[d] < 1)
      return fail(loc, getOperationName(), "dimension ", d, ": stride ",
                  strides[d], " must be at least 1");
    // ceil((limit - start) / stride), without overflow for huge strides.
    int64_t extent = limit[d] - start[d];
    shape.push_back(extent == 0 ? 0 : (extent - 1) / strides[d] + 1);
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult ConcatenateOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return fail(loc, getOperationName(), "needs at least one input");
  auto first = rankedOrNull(inputs.front().getType());
  if (!first)
    return fail(loc, getOperationName(), "expects ranked tensor inputs");
  int64_t dim = adaptor.getDim();
  if (failed(checkDimInRange(loc, getOperationName(), "dim", dim,
                             first.getRank())))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    auto type = rankedOrNull(input.getType());
    if (!type || type.getRank() != first.getRank())
      return fail(loc, getOperationName(), "input ", i,
                  " has a different rank than input 0");
    for (int64_t d = 0; d < first.getRank(); ++d)
      if (d != dim && type.getDimSize(d) != first.getDimSize(d))
        return fail(loc, getOperationName(), "input ", i, " has size ",
                    type.getDimSize(d), " in dimension ", d,
                    " but input 0 has ", first.getDimSize(d));
    if (llvm::AddOverflow(shape[dim], type.getDimSize(dim), shape[dim]))
      return fail(loc, getOperationName(), "result size in dimension ", dim,
                  " does not fit in 64 bits");
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto type = rankedOrNull(adaptor.getOperand().getType());
  if (!type)
    return fail(loc, getOperationName(), "expects a ranked tensor operand");
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(low.size()) != rank ||
      static_cast<int64_t>(high.size()) != rank)
    return fail(loc, getOperationName(), "low and high need ", rank,
                " entries each (the operand rank), got ", low.size(), " and ",
                high.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (low[d] < 0 || high[d] < 0)
      return fail(loc, getOperationName(), "dimension ", d,
                  ": padding must be non-negative (use trn.slice to crop)");
    int64_t size;
    if (llvm::AddOverflow(type.getDimSize(d), low[d], size) ||
        llvm::AddOverflow(size, high[d], size))
      return fail(loc, getOperationName(), "dimension ", d,
                  ": padded size does not fit in 64 bits");
    shape.push_back(size);
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

/// The result shape of gather(operand, indices, axis, batchDims), shared by
/// trn.gather and trn.scatter_add (whose updates have that shape).
static FailureOr<RankedTensorType>
inferGatherType(std::optional<Location> loc, StringRef opName, Type operandTy,
                Type indicesTy, int64_t axis, int64_t batchDims) {
  auto operand = rankedOrNull(operandTy);
  auto indices = rankedOrNull(indicesTy);
  if (!operand || !indices)
    return fail(loc, opName, "expects ranked tensor operands");
  if (axis >= operand.getRank())
    return fail(loc, opName, "axis ", axis, " is out of range for rank ",
                operand.getRank());
  if (batchDims > axis || batchDims > indices.getRank())
    return fail(loc, opName, "batch_dims ", batchDims,
                " must be at most axis (", axis, ") and the indices rank (",
                indices.getRank(), ")");
  for (int64_t d = 0; d < batchDims; ++d)
    if (operand.getDimSize(d) != indices.getDimSize(d))
      return fail(loc, opName, "batch dimension ", d, " has size ",
                  operand.getDimSize(d), " in the operand but ",
                  indices.getDimSize(d), " in the indices");
  SmallVector<int64_t> shape(operand.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape().drop_front(batchDims));
  llvm::append_range(shape, operand.getShape().drop_front(axis + 1));
  return RankedTensorType::get(shape, operand.getElementType());
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type =
      inferGatherType(loc, getOperationName(), adaptor.getOperand().getType(),
                      adaptor.getIndices().getType(), adaptor.getAxis(),
                      adaptor.getBatchDims());
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

LogicalResult ScatterAddOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto updatesType =
      inferGatherType(loc, getOperationName(), adaptor.getOperand().getType(),
                      adaptor.getIndices().getType(), adaptor.getAxis(),
                      adaptor.getBatchDims());
  if (failed(updatesType))
    return failure();
  if (*updatesType != adaptor.getUpdates().getType())
    return fail(loc, getOperationName(), "updates must have type ",
                *updatesType, " (the gather of operand by indices), got ",
                adaptor.getUpdates().getType());
  inferred.push_back(adaptor.getOperand().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and contractions
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type = rankedOrNull(adaptor.getOperand().getType());
  if (!type)
    return fail(loc, getOperationName(), "expects a ranked tensor operand");
  if (failed(checkDims(loc, getOperationName(), "dims", adaptor.getDims(),
                       type.getRank(), /*increasing=*/true)))
    return failure();
  inferred.push_back(RankedTensorType::get(
      dropDims(type.getShape(), adaptor.getDims()), type.getElementType()));
  return success();
}

LogicalResult ArgMaxOp::verify() {
  auto type = getOperand().getType();
  if (failed(checkDimInRange(getLoc(), getOperationName(), "dim", getDim(),
                             type.getRank())))
    return failure();
  SmallVector<int64_t> expected =
      dropDims(type.getShape(), {static_cast<int64_t>(getDim())});
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape must be ")
           << list(expected) << " (the operand without dimension " << getDim()
           << "), got " << list(getType().getShape());
  return success();
}

RankedTensorType
DotGeneralOp::inferResultType(std::optional<Location> loc, RankedTensorType lhs,
                              RankedTensorType rhs, ArrayRef<int64_t> lhsBatch,
                              ArrayRef<int64_t> rhsBatch,
                              ArrayRef<int64_t> lhsContract,
                              ArrayRef<int64_t> rhsContract, Type elementType) {
  StringRef name = getOperationName();
  if (lhsBatch.size() != rhsBatch.size()) {
    (void)fail(loc, name, "lhs and rhs need the same number of batching dims, ",
               "got ", list(lhsBatch), " and ", list(rhsBatch));
    return {};
  }
  if (lhsContract.size() != rhsContract.size()) {
    (void)fail(loc, name,
               "lhs and rhs need the same number of contracting dims, got ",
               list(lhsContract), " and ", list(rhsContract));
    return {};
  }
  SmallVector<int64_t> lhsUsed(lhsBatch), rhsUsed(rhsBatch);
  llvm::append_range(lhsUsed, lhsContract);
  llvm::append_range(rhsUsed, rhsContract);
  if (failed(checkDims(loc, name, "lhs batching and contracting dims", lhsUsed,
                       lhs.getRank(), /*increasing=*/false)) ||
      failed(checkDims(loc, name, "rhs batching and contracting dims", rhsUsed,
                       rhs.getRank(), /*increasing=*/false)))
    return {};
  for (auto [l, r] : llvm::zip(lhsBatch, rhsBatch))
    if (lhs.getDimSize(l) != rhs.getDimSize(r)) {
      (void)fail(loc, name, "batching dims lhs ", l, " (size ",
                 lhs.getDimSize(l), ") and rhs ", r, " (size ",
                 rhs.getDimSize(r), ") differ in size");
      return {};
    }
  for (auto [l, r] : llvm::zip(lhsContract, rhsContract))
    if (lhs.getDimSize(l) != rhs.getDimSize(r)) {
      (void)fail(loc, name, "contracting dims lhs ", l, " (size ",
                 lhs.getDimSize(l), ") and rhs ", r, " (size ",
                 rhs.getDimSize(r), ") differ in size");
      return {};
    }
  SmallVector<int64_t> shape;
  for (int64_t d : lhsBatch)
    shape.push_back(lhs.getDimSize(d));
  llvm::append_range(shape, dropDims(lhs.getShape(), lhsUsed));
  llvm::append_range(shape, dropDims(rhs.getShape(), rhsUsed));
  return RankedTensorType::get(shape, elementType);
}

SmallVector<int64_t> DotGeneralOp::getFreeDims(bool lhs) {
  ArrayRef<int64_t> batching =
      lhs ? getLhsBatchingDims() : getRhsBatchingDims();
  ArrayRef<int64_t> contracting =
      lhs ? getLhsContractingDims() : getRhsContractingDims();
  int64_t rank =
      cast<RankedTensorType>((lhs ? getLhs() : getRhs()).getType()).getRank();
  SmallVector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(batching, d) && !llvm::is_contained(contracting, d))
      free.push_back(d);
  return free;
}

LogicalResult DotGeneralOp::verify() {
  auto expected = inferResultType(
      getLoc(), getLhs().getType(), getRhs().getType(), getLhsBatchingDims(),
      getRhsBatchingDims(), getLhsContractingDims(), getRhsContractingDims(),
      getType().getElementType());
  if (!expected)
    return failure();
  if (expected.getShape() != getType().getShape())
    return emitOpError("result shape must be ")
           << list(expected.getShape()) << " (batch, lhs free, rhs free), got "
           << list(getType().getShape());
  unsigned operandWidth = getLhs().getType().getElementTypeBitWidth();
  unsigned resultWidth = getType().getElementTypeBitWidth();
  if (resultWidth < operandWidth)
    return emitOpError("result element type ")
           << getType().getElementType()
           << " is narrower than the operand element type "
           << getLhs().getType().getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return checkDimInRange(getLoc(), getOperationName(), "dim", getDim(),
                         getType().getRank());
}
LogicalResult LogSoftmaxOp::verify() {
  return checkDimInRange(getLoc(), getOperationName(), "dim", getDim(),
                         getType().getRank());
}
LogicalResult SoftmaxGradOp::verify() {
  return checkDimInRange(getLoc(), getOperationName(), "dim", getDim(),
                         getType().getRank());
}
LogicalResult LogSoftmaxGradOp::verify() {
  return checkDimInRange(getLoc(), getOperationName(), "dim", getDim(),
                         getType().getRank());
}

namespace {
/// Checks the operands shared by the normalisation ops and returns the
/// statistics type (f32 over the leading, unnormalised dimensions).
FailureOr<RankedTensorType> checkNormOperands(std::optional<Location> loc,
                                              StringRef opName, Type inputTy,
                                              ArrayRef<Type> paramTys,
                                              int64_t axis) {
  auto input = rankedOrNull(inputTy);
  if (!input)
    return fail(loc, opName, "expects a ranked tensor input");
  if (axis >= input.getRank())
    return fail(loc, opName, "axis ", axis, " is out of range for rank ",
                input.getRank(), " (at least one dimension is normalised)");
  auto paramType = RankedTensorType::get(input.getShape().drop_front(axis),
                                         input.getElementType());
  for (Type type : paramTys)
    if (type != paramType)
      return fail(loc, opName, "weight and bias must have type ", paramType,
                  " (the normalised dimensions of the input), got ", type);
  return RankedTensorType::get(input.getShape().take_front(axis),
                               f32(input.getContext()));
}

LogicalResult checkStats(std::optional<Location> loc, StringRef opName,
                         ArrayRef<Type> statTys, RankedTensorType expected) {
  for (Type type : statTys)
    if (type != expected)
      return fail(loc, opName, "mean and rstd must have type ", expected,
                  " (f32 over the leading dimensions), got ", type);
  return success();
}
} // namespace

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  Type input = adaptor.getInput().getType();
  auto stats = checkNormOperands(
      loc, getOperationName(), input,
      {adaptor.getWeight().getType(), adaptor.getBias().getType()},
      adaptor.getAxis());
  if (failed(stats))
    return failure();
  inferred.append({input, *stats, *stats});
  return success();
}

LogicalResult
LayerNormGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  Type input = adaptor.getInput().getType();
  Type weight = adaptor.getWeight().getType();
  auto stats = checkNormOperands(loc, getOperationName(), input, {weight},
                                 adaptor.getAxis());
  if (failed(stats) ||
      failed(checkStats(
          loc, getOperationName(),
          {adaptor.getMean().getType(), adaptor.getRstd().getType()}, *stats)))
    return failure();
  if (adaptor.getGradOutput().getType() != input)
    return fail(loc, getOperationName(),
                "grad_output must have the input type ", input);
  inferred.append({input, weight, weight});
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  Type input = adaptor.getInput().getType();
  auto stats =
      checkNormOperands(loc, getOperationName(), input,
                        {adaptor.getWeight().getType()}, adaptor.getAxis());
  if (failed(stats))
    return failure();
  inferred.append({input, *stats});
  return success();
}

LogicalResult RmsNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  Type input = adaptor.getInput().getType();
  Type weight = adaptor.getWeight().getType();
  auto stats = checkNormOperands(loc, getOperationName(), input, {weight},
                                 adaptor.getAxis());
  if (failed(stats) ||
      failed(checkStats(loc, getOperationName(), {adaptor.getRstd().getType()},
                        *stats)))
    return failure();
  if (adaptor.getGradOutput().getType() != input)
    return fail(loc, getOperationName(),
                "grad_output must have the input type ", input);
  inferred.append({input, weight});
  return success();
}

int64_t mlir::trn::attentionSeqDim(std::optional<uint64_t> seqDim,
                                   int64_t rank) {
  return seqDim ? static_cast<int64_t>(*seqDim) : rank - 2;
}

SmallVector<int64_t> mlir::trn::attentionToCanonical(int64_t rank,
                                                     int64_t seqDim) {
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != seqDim)
      perm.push_back(d);
  perm.append({seqDim, rank - 1});
  return perm;
}

namespace {
/// Checks query [..., S, D], key [..., T, D], value [..., T, Dv] (their
/// sequence dims at `seqDim` when set) and returns the output and lse types.
FailureOr<std::pair<RankedTensorType, RankedTensorType>>
inferAttentionTypes(std::optional<Location> loc, StringRef opName, Type qTy,
                    Type kTy, Type vTy, std::optional<uint64_t> seqDimAttr) {
  auto q = rankedOrNull(qTy), k = rankedOrNull(kTy), v = rankedOrNull(vTy);
  if (!q || !k || !v)
    return fail(loc, opName, "expects ranked tensor operands");
  int64_t rank = q.getRank();
  if (rank < 2 || k.getRank() != rank || v.getRank() != rank)
    return fail(loc, opName,
                "query, key and value need the same rank, at least 2");
  if (seqDimAttr && *seqDimAttr > static_cast<uint64_t>(rank - 2))
    return fail(loc, opName, "seq_dim ", *seqDimAttr,
                " must be below the last dim of rank-", rank, " operands");
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return fail(loc, opName, "query, key and value need the same element type");
  // Checked in the canonical [batch..., S, D] order.
  SmallVector<int64_t> toCanonical =
      attentionToCanonical(rank, attentionSeqDim(seqDimAttr, rank));
  auto canonical = [&](RankedTensorType t) {
    SmallVector<int64_t> shape;
    for (int64_t d : toCanonical)
      shape.push_back(t.getDimSize(d));
    return shape;
  };
  SmallVector<int64_t> cq = canonical(q), ck = canonical(k), cv = canonical(v);
  if (ArrayRef(cq).drop_back(2) != ArrayRef(ck).drop_back(2) ||
      ArrayRef(cq).drop_back(2) != ArrayRef(cv).drop_back(2))
    return fail(loc, opName,
                "query, key and value need equal leading (batch) dimensions");
  if (cq[rank - 1] != ck[rank - 1])
    return fail(loc, opName, "query head size ", cq[rank - 1],
                " differs from key head size ", ck[rank - 1]);
  if (ck[rank - 2] != cv[rank - 2])
    return fail(loc, opName, "key length ", ck[rank - 2],
                " differs from value length ", cv[rank - 2]);
  SmallVector<int64_t> outShape(q.getShape());
  outShape.back() = v.getDimSize(rank - 1);
  return std::make_pair(
      RankedTensorType::get(outShape, q.getElementType()),
      RankedTensorType::get(ArrayRef(cq).drop_back(), f32(q.getContext())));
}
} // namespace

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto types =
      inferAttentionTypes(loc, getOperationName(), adaptor.getQuery().getType(),
                          adaptor.getKey().getType(),
                          adaptor.getValue().getType(), adaptor.getSeqDim());
  if (failed(types))
    return failure();
  inferred.append({types->first, types->second});
  return success();
}

LogicalResult
AttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  auto types =
      inferAttentionTypes(loc, getOperationName(), adaptor.getQuery().getType(),
                          adaptor.getKey().getType(),
                          adaptor.getValue().getType(), adaptor.getSeqDim());
  if (failed(types))
    return failure();
  if (adaptor.getOutput().getType() != types->first ||
      adaptor.getGradOutput().getType() != types->first)
    return fail(loc, getOperationName(),
                "output and grad_output must have type ", types->first);
  if (adaptor.getLse().getType() != types->second)
    return fail(loc, getOperationName(), "lse must have type ", types->second);
  inferred.append({adaptor.getQuery().getType(), adaptor.getKey().getType(),
                   adaptor.getValue().getType()});
  return success();
}

static FailureOr<RankedTensorType>
inferCrossEntropyLossType(std::optional<Location> loc, StringRef opName,
                          Type logitsTy, Type labelsTy,
                          LossReduction reduction) {
  auto logits = rankedOrNull(logitsTy), labels = rankedOrNull(labelsTy);
  if (!logits || !labels)
    return fail(loc, opName, "expects ranked tensor operands");
  if (logits.getRank() != 2)
    return fail(loc, opName, "logits must be [N, C], got ", logits);
  if (labels.getRank() != 1 || labels.getDimSize(0) != logits.getDimSize(0))
    return fail(loc, opName, "labels must be [", logits.getDimSize(0),
                "] to match the logits, got ", labels);
  SmallVector<int64_t> shape;
  if (reduction == LossReduction::none)
    shape.push_back(logits.getDimSize(0));
  return RankedTensorType::get(shape, logits.getElementType());
}

LogicalResult
CrossEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                 Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  auto loss = inferCrossEntropyLossType(
      loc, getOperationName(), adaptor.getLogits().getType(),
      adaptor.getLabels().getType(), adaptor.getReduction());
  if (failed(loss))
    return failure();
  inferred.push_back(*loss);
  return success();
}

LogicalResult
CrossEntropyGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &inferred) {
  auto loss = inferCrossEntropyLossType(
      loc, getOperationName(), adaptor.getLogits().getType(),
      adaptor.getLabels().getType(), adaptor.getReduction());
  if (failed(loss))
    return failure();
  if (adaptor.getGradLoss().getType() != *loss)
    return fail(loc, getOperationName(), "grad_loss must have type ", *loss,
                " (the loss type for this reduction), got ",
                adaptor.getGradLoss().getType());
  inferred.push_back(adaptor.getLogits().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Fusion groups
//===----------------------------------------------------------------------===//

bool mlir::trn::isFusibleBodyOp(Operation *op) {
  return isa_and_nonnull<TrnDialect>(op->getDialect()) &&
         (op->hasTrait<OpTrait::Elementwise>() ||
          isa<BroadcastInDimOp, ConstantOp, ReduceOp, RotateHalfOp, YieldOp>(
              op));
}

LogicalResult FusionOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments for " << getInputs().size()
           << " inputs";
  for (auto [index, argument, input] :
       llvm::enumerate(body.getArguments(), getInputs()))
    if (argument.getType() != input.getType())
      return emitOpError("body argument ")
             << index << " has type " << argument.getType() << " but input "
             << index << " has type " << input.getType();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields (")
           << yield.getValues().getTypes() << ") but has results ("
           << getResultTypes() << ")";
  for (Operation &op : body) {
    if (isa<DotGeneralOp>(op)) {
      // A matmul with its epilogue: the group's first op, so that it reads
      // two of the group's inputs.
      if (&op != &body.front())
        return op.emitOpError("in a trn.fusion body must be its first op");
      continue;
    }
    if (!isFusibleBodyOp(&op))
      return op.emitOpError("cannot be in a trn.fusion body (only "
                            "elementwise ops, broadcast_in_dim, constant, "
                            "reduce and a leading dot_general can)");
  }
  return success();
}

void mlir::trn::dropPipelineStageMarkers(Operation *root) {
  SmallVector<PipelineStageOp> markers;
  root->walk([&](PipelineStageOp marker) { markers.push_back(marker); });
  for (PipelineStageOp marker : markers) {
    marker.getResult().replaceAllUsesWith(marker.getInput());
    marker.erase();
  }
}
