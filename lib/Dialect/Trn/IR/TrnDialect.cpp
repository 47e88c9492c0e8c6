//===- TrnDialect.cpp - trn dialect registration and attributes ----------===//
//
// Registers the ops and verifies the argument and result attributes that
// describe the roles of a step graph's inputs and outputs.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnDialect.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::trn;

#include "trn/Dialect/Trn/IR/TrnDialect.cpp.inc"

void TrnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "trn/Dialect/Trn/IR/TrnOps.cpp.inc"
      >();
}

Operation *TrnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}

bool mlir::trn::hasValidTrnShape(ShapedType type) {
  if (!type.hasStaticShape())
    return false;
  int64_t count = 1;
  for (int64_t size : type.getShape())
    if (size < 0 || llvm::MulOverflow(count, size, count))
      return false;
  return true;
}

int64_t mlir::trn::tensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements() *
         ((tensor.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

LogicalResult TrnDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  // trn-auto-cast asks the fused attention kernels for narrower matmuls
  // (trn::kMatmulTypeAttr in trn/Dialect/Trn/Utils/FlashAttention.h).
  if (attribute.getName().getValue() == "trn.matmul_type") {
    auto type = dyn_cast<TypeAttr>(attribute.getValue());
    if (!isa<AttentionOp, AttentionGradOp>(op))
      return op->emitError() << "'trn.matmul_type' belongs on trn.attention "
                                "and trn.attention_grad, not on '"
                             << op->getName() << "'";
    if (!type || !(type.getValue().isBF16() || type.getValue().isF16() ||
                   type.getValue().isF32()))
      return op->emitError()
             << "'trn.matmul_type' must be the type bf16, f16 or f32, got "
             << attribute.getValue();
    return success();
  }
  // trn-mark-optimizer marks the parameter update's ops.
  if (attribute.getName().getValue() == "trn.optimizer") {
    if (!isa<UnitAttr>(attribute.getValue()) || isa<func::FuncOp>(op))
      return op->emitError()
             << "'trn.optimizer' is a unit attribute of an op in a function";
    return success();
  }
  // trn-outline-layers marks the functions it makes.
  if (attribute.getName().getValue() == "trn.subroutine") {
    if (!isa<func::FuncOp>(op) || !isa<UnitAttr>(attribute.getValue()))
      return op->emitError()
             << "'trn.subroutine' is a unit attribute of a function";
    return success();
  }
  // Other trn.* attributes belong on step-graph arguments and results only.
  return op->emitError() << "unknown trn attribute '"
                         << attribute.getName().getValue() << "' on '"
                         << op->getName()
                         << "' (trn.role, trn.name and trn.aliases belong on "
                            "function arguments and results)";
}

namespace {
bool isKnownArgRole(StringRef role) {
  return llvm::StringSwitch<bool>(role)
      .Cases("parameter", "optimizer_state", "gradient", "hyperparameter",
             "data", "label", "seed", "constant", true)
      .Default(false);
}

bool isKnownResultRole(StringRef role) {
  return llvm::StringSwitch<bool>(role)
      .Cases("output", "loss", "parameter", "optimizer_state", "gradient", true)
      .Default(false);
}
} // namespace

LogicalResult TrnDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == getRoleAttrName()) {
    auto role = dyn_cast<StringAttr>(attribute.getValue());
    if (!role || !isKnownArgRole(role.getValue()))
      return op->emitError()
             << "argument " << argIndex << " has invalid " << name
             << " (expected one of \"parameter\", \"optimizer_state\", "
                "\"gradient\", \"hyperparameter\", \"data\", \"label\", "
                "\"seed\", \"constant\")";
    return success();
  }
  if (name == getNameAttrName()) {
    if (!isa<StringAttr>(attribute.getValue()))
      return op->emitError()
             << "argument " << argIndex << " has non-string " << name;
    return success();
  }
  if (name == getAliasesAttrName())
    return op->emitError() << "argument " << argIndex << " has " << name
                           << ", which belongs on results (a result names the "
                              "input it updates)";
  return op->emitError() << "argument " << argIndex
                         << " has unknown trn attribute '" << name << "'";
}

LogicalResult
TrnDialect::verifyRegionResultAttribute(Operation *op, unsigned regionIndex,
                                        unsigned resultIndex,
                                        NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == getRoleAttrName()) {
    auto role = dyn_cast<StringAttr>(attribute.getValue());
    if (!role || !isKnownResultRole(role.getValue()))
      return op->emitError()
             << "result " << resultIndex << " has invalid " << name
             << " (expected one of \"output\", \"loss\", \"parameter\", "
                "\"optimizer_state\", \"gradient\")";
    return success();
  }
  if (name == getNameAttrName()) {
    if (!isa<StringAttr>(attribute.getValue()))
      return op->emitError()
             << "result " << resultIndex << " has non-string " << name;
    return success();
  }
  if (name != getAliasesAttrName())
    return op->emitError() << "result " << resultIndex
                           << " has unknown trn attribute '" << name << "'";

  auto function = dyn_cast<FunctionOpInterface>(op);
  auto alias = dyn_cast<IntegerAttr>(attribute.getValue());
  if (!function || !alias)
    return op->emitError() << "result " << resultIndex << " has " << name
                           << " that is not an integer input index";
  // IntegerAttr::getInt would silently truncate a wider value.
  if (alias.getValue().getSignificantBits() > 64)
    return op->emitError() << "result " << resultIndex << " aliases input "
                           << alias << ", but the function has "
                           << function.getNumArguments() << " inputs";
  int64_t input = alias.getInt();
  ArrayRef<Type> argTypes = function.getArgumentTypes();
  ArrayRef<Type> resultTypes = function.getResultTypes();
  if (input < 0 || input >= static_cast<int64_t>(argTypes.size()))
    return op->emitError() << "result " << resultIndex << " aliases input "
                           << input << ", but the function has "
                           << argTypes.size() << " inputs";
  if (resultIndex >= resultTypes.size() ||
      argTypes[input] != resultTypes[resultIndex])
    return op->emitError() << "result " << resultIndex << " aliases input "
                           << input << " of a different type ("
                           << argTypes[input] << " vs "
                           << (resultIndex < resultTypes.size()
                                   ? resultTypes[resultIndex]
                                   : Type())
                           << "); an in-place update keeps the type";
  // Two results cannot both be the new value of one input.
  for (unsigned other = 0; other < resultIndex; ++other) {
    auto otherAlias =
        function.getResultAttrOfType<IntegerAttr>(other, getAliasesAttrName());
    if (otherAlias && otherAlias.getInt() == input)
      return op->emitError() << "results " << other << " and " << resultIndex
                             << " both alias input " << input;
  }
  return success();
}
