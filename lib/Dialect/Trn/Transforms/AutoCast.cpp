//===- AutoCast.cpp - compute matmuls in bf16 or fp8 ----------------------===//
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnDialect.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"
#include "trn/Dialect/Trn/Utils/FlashAttention.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNAUTOCAST
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

RankedTensorType withElementType(Type type, Type element) {
  return RankedTensorType::get(cast<RankedTensorType>(type).getShape(),
                               element);
}

/// The ops that transitively use an argument whose trn.role is
/// "optimizer_state" or "hyperparameter".
llvm::DenseSet<Operation *> optimizerUpdateOps(func::FuncOp function) {
  llvm::DenseSet<Operation *> ops;
  SmallVector<Value> worklist;
  for (BlockArgument argument : function.getArguments()) {
    auto role = function.getArgAttrOfType<StringAttr>(
        argument.getArgNumber(), TrnDialect::getRoleAttrName());
    if (role && (role.getValue() == "optimizer_state" ||
                 role.getValue() == "hyperparameter"))
      worklist.push_back(argument);
  }
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers())
      if (ops.insert(user).second)
        llvm::append_range(worklist, user->getResults());
  }
  return ops;
}

struct TrnAutoCastPass : mlir::trn::impl::TrnAutoCastBase<TrnAutoCastPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    MLIRContext *context = &getContext();
    Type target;
    if (castType == "bf16")
      target = BFloat16Type::get(context);
    else if (castType == "fp8_e4m3")
      target = Float8E4M3FNType::get(context);
    if (!target || (mode != "matmul" && mode != "all")) {
      function.emitError("trn-auto-cast: mode must be matmul or all and type "
                         "bf16 or fp8_e4m3, got mode=")
          << mode << " type=" << castType;
      return signalPassFailure();
    }
    if (mode == "all" && !target.isBF16()) {
      function.emitError("trn-auto-cast: mode=all casts to bf16 only (fp8 "
                         "elementwise arithmetic loses too much); use "
                         "mode=matmul with fp8_e4m3");
      return signalPassFailure();
    }

    // The optimizer update stays f32 under mode=all: in bf16 a weight loses
    // every step smaller than 2^-8 of itself, and Adam's bias correction
    // 1 - 0.999^t rounds to 0 (0.999 is 1 in bf16). The update is what
    // depends on an optimizer state or a hyper-parameter (lr, step count).
    llvm::DenseSet<Operation *> update = optimizerUpdateOps(function);

    OpBuilder builder(context);
    auto narrow = [&](Operation *op, OpOperand &operand) {
      builder.setInsertionPoint(op);
      operand.set(builder.create<ConvertOp>(
          op->getLoc(), withElementType(operand.get().getType(), target),
          operand.get()));
    };
    function.walk([&](Operation *op) {
      // The fused attention kernels convert their operands as they load
      // them; fp8 scores and probabilities lose too much, so attention
      // narrows to bf16 only.
      if (isa<AttentionOp, AttentionGradOp>(op)) {
        if (target.isBF16() && isF32Tensor(op->getOperand(0).getType()))
          op->setAttr(kMatmulTypeAttr, TypeAttr::get(target));
        return;
      }
      if (auto dot = dyn_cast<DotGeneralOp>(op)) {
        // Both operands or neither: dot_general wants one element type.
        if (isF32Tensor(dot.getLhs().getType()) &&
            isF32Tensor(dot.getRhs().getType()))
          for (OpOperand &operand : op->getOpOperands())
            narrow(op, operand);
        return;
      }
      if (mode != "all" || !op->hasTrait<OpTrait::Elementwise>() ||
          isa<ConvertOp>(op) || op->getNumResults() != 1 ||
          !isF32Tensor(op->getResult(0).getType()) || update.contains(op))
        return;
      for (OpOperand &operand : op->getOpOperands())
        if (isF32Tensor(operand.get().getType()))
          narrow(op, operand);
      Value result = op->getResult(0);
      Type wide = result.getType();
      result.setType(withElementType(wide, target));
      builder.setInsertionPointAfter(op);
      auto back = builder.create<ConvertOp>(op->getLoc(), wide, result);
      result.replaceAllUsesExcept(back, back);
    });
  }
};

} // namespace
