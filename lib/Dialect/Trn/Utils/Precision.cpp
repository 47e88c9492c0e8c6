//===- Precision.cpp - The precision a trn value is computed in -----------===//

#include "trn/Dialect/Trn/Utils/Precision.h"

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Utils/FlashAttention.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::trn;

namespace {

FloatType floatElementType(Type type) {
  return dyn_cast<FloatType>(getElementTypeOrSelf(type));
}

bool isF32(Type type) {
  FloatType element = floatElementType(type);
  return element && element.isF32();
}

/// The type `autoCast` makes `op` compute in, or null when it leaves `op` as
/// written. Mirrors trn-auto-cast (AutoCast.cpp), which runs after
/// trn-decompose-composites.
FloatType autoCastTypeOf(Operation *op, const AutoCastAssumption &autoCast) {
  using Mode = AutoCastAssumption::Mode;
  if (autoCast.mode == Mode::None || !autoCast.type)
    return {};
  if (isa<AttentionOp, AttentionGradOp>(op)) {
    if (!isF32(op->getOperand(0).getType()))
      return {};
    // Kept whole, the fused kernels narrow to bf16 only; decomposed, the
    // attention is dot_generals, which narrow to either type.
    if (autoCast.type.isBF16() || !flashAttentionBlocker(op).empty())
      return autoCast.type;
    return {};
  }
  if (auto dot = dyn_cast<DotGeneralOp>(op))
    return isF32(dot.getLhs().getType()) && isF32(dot.getRhs().getType())
               ? autoCast.type
               : FloatType();
  if (autoCast.mode != Mode::All)
    return {};
  // The composites are decomposed into elementwise ops before the cast.
  bool elementwise =
      op->hasTrait<OpTrait::Elementwise>() && !isa<ConvertOp>(op);
  bool composite = isa<SoftmaxOp, LogSoftmaxOp, SoftmaxGradOp, LogSoftmaxGradOp,
                       LayerNormOp, LayerNormGradOp, RmsNormOp, RmsNormGradOp,
                       CrossEntropyOp, CrossEntropyGradOp>(op);
  if ((elementwise || composite) && llvm::any_of(op->getResultTypes(), isF32))
    return autoCast.type;
  return {};
}

} // namespace

bool mlir::trn::isLessPrecise(FloatType a, FloatType b) {
  if (!a)
    return false;
  if (!b)
    return true;
  return a.getFPMantissaWidth() < b.getFPMantissaWidth();
}

FailureOr<AutoCastAssumption>
mlir::trn::parseAutoCast(MLIRContext *context, StringRef mode, StringRef type) {
  AutoCastAssumption autoCast;
  if (mode == "none")
    return autoCast;
  if (mode == "matmul")
    autoCast.mode = AutoCastAssumption::Mode::Matmul;
  else if (mode == "all")
    autoCast.mode = AutoCastAssumption::Mode::All;
  else
    return failure();
  if (type == "bf16")
    autoCast.type = BFloat16Type::get(context);
  else if (type == "fp8_e4m3")
    autoCast.type = Float8E4M3FNType::get(context);
  else
    return failure();
  return autoCast;
}

ComputePrecision
mlir::trn::computePrecision(Value value, const AutoCastAssumption &autoCast) {
  ComputePrecision least;
  auto consider = [&](FloatType type, bool byAutoCast) {
    // On a tie the graph's own type is the reason: it holds with or without
    // the cast.
    if (isLessPrecise(type, least.type) ||
        (type && type == least.type && least.byAutoCast && !byAutoCast))
      least = {type, byAutoCast};
  };
  consider(floatElementType(value.getType()), false);

  SmallVector<Value> worklist{value};
  llvm::DenseSet<Operation *> visited;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    Operation *op = next.getDefiningOp();
    if (!op) {
      // A region's argument stands for its op's operands; the function's
      // arguments are the graph's inputs, counted where they are used.
      op = cast<BlockArgument>(next).getOwner()->getParentOp();
      if (!op || isa<FunctionOpInterface>(op))
        continue;
    }
    if (!visited.insert(op).second)
      continue;
    // The op and everything nested in it (a trn.fusion's body).
    op->walk([&](Operation *nested) {
      if (nested != op && !visited.insert(nested).second)
        return;
      for (Type type : nested->getOperandTypes())
        consider(floatElementType(type), false);
      for (Type type : nested->getResultTypes())
        consider(floatElementType(type), false);
      if (auto matmulType = nested->getAttrOfType<TypeAttr>(kMatmulTypeAttr))
        consider(dyn_cast<FloatType>(matmulType.getValue()), false);
      consider(autoCastTypeOf(nested, autoCast), true);
      for (Value operand : nested->getOperands())
        worklist.push_back(operand);
    });
  }
  return least;
}
