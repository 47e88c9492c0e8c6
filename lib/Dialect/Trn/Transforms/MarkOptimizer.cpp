//===- MarkOptimizer.cpp - the parameter update's ops --------------------===//
//
// The optimizer's update is what the optimizer state (and the learning
// rate and step) flow into. Marking it lets the backend tell the update's
// instructions from the rest for the time split of a run.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNMARKOPTIMIZER
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;

namespace {

struct TrnMarkOptimizerPass
    : mlir::trn::impl::TrnMarkOptimizerBase<TrnMarkOptimizerPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal() || !function.getBody().hasOneBlock())
      return;
    Block &body = function.getBody().front();
    SmallVector<Value> worklist;
    for (unsigned i = 0; i < function.getNumArguments(); ++i) {
      auto role = function.getArgAttrOfType<StringAttr>(i, "trn.role");
      if (role && (role.getValue() == "optimizer_state" ||
                   role.getValue() == "hyperparameter"))
        worklist.push_back(function.getArgument(i));
    }
    llvm::SmallPtrSet<Operation *, 32> marked;
    UnitAttr unit = UnitAttr::get(&getContext());
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      for (Operation *user : value.getUsers()) {
        // Ops inside a fusion's body belong to the fusion.
        Operation *top = body.findAncestorOpInBlock(*user);
        if (!top || isa<func::ReturnOp>(top) || !marked.insert(top).second)
          continue;
        top->setAttr("trn.optimizer", unit);
        llvm::append_range(worklist, top->getResults());
      }
    }
  }
};

} // namespace
