//===- NarrowI64.cpp - compute i64 tensors in i32 -------------------------===//
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNNARROWI64
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

bool isI64Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isSignlessInteger(64);
}

RankedTensorType narrowed(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(),
                               IntegerType::get(type.getContext(), 32));
}

/// Operands that must stay i64 whatever their producer computes in.
bool needsI64(OpOperand &use) {
  if (auto uniform = dyn_cast<RngUniformOp>(use.getOwner()))
    return use.get() == uniform.getSeed();
  if (auto bernoulli = dyn_cast<RngBernoulliOp>(use.getOwner()))
    return use.get() == bernoulli.getSeed();
  return false;
}

LogicalResult narrowConstant(ConstantOp constant) {
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return constant.emitOpError("holds an i64 value that is not dense");
  for (const APInt &value : dense.getValues<APInt>())
    if (!value.isSignedIntN(32))
      return constant.emitOpError("i64 constant ")
             << value.getSExtValue()
             << " does not fit in i32: NeuronCore kernels compute integers "
                "in 32 bits";
  auto type = narrowed(constant.getType());
  DenseElementsAttr narrow =
      dense.isSplat()
          ? DenseElementsAttr::get(type, dense.getSplatValue<APInt>().trunc(32))
          : dense.mapValues(type.getElementType(),
                            [](const APInt &v) { return v.trunc(32); });
  constant.setValueAttr(narrow);
  constant.getResult().setType(type);
  return success();
}

struct TrnNarrowI64Pass : mlir::trn::impl::TrnNarrowI64Base<TrnNarrowI64Pass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal() || !function.getBody().hasOneBlock())
      return;
    Block &body = function.getBody().front();
    OpBuilder builder(function.getContext());

    // Arguments: one conversion where the graph starts.
    builder.setInsertionPointToStart(&body);
    for (BlockArgument argument : body.getArguments()) {
      if (!isI64Tensor(argument.getType()) ||
          llvm::all_of(argument.getUses(), needsI64))
        continue;
      Value narrow = builder.create<ConvertOp>(
          argument.getLoc(), narrowed(argument.getType()), argument);
      argument.replaceUsesWithIf(narrow, [&](OpOperand &use) {
        return use.getOwner() != narrow.getDefiningOp() && !needsI64(use);
      });
    }

    // Every op that makes an i64 tensor makes an i32 one.
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto constant = dyn_cast<ConstantOp>(op);
          constant && isI64Tensor(constant.getType())) {
        if (failed(narrowConstant(constant)))
          return signalPassFailure();
        continue;
      }
      for (Value result : op.getResults())
        if (isI64Tensor(result.getType()))
          result.setType(narrowed(result.getType()));
    }

    // Uses that need i64 (rng seeds, the return): widen back.
    for (Operation &op : llvm::make_early_inc_range(body)) {
      for (OpOperand &use : op.getOpOperands()) {
        Type want;
        if (needsI64(use))
          want = RankedTensorType::get(
              cast<RankedTensorType>(use.get().getType()).getShape(),
              builder.getI64Type());
        else if (isa<func::ReturnOp>(op))
          want = function.getResultTypes()[use.getOperandNumber()];
        if (!want || want == use.get().getType())
          continue;
        builder.setInsertionPoint(&op);
        use.set(builder.create<ConvertOp>(op.getLoc(), want, use.get()));
      }
    }
  }
};

} // namespace
