//===- Fit.cpp - what one rank of a partitioned program holds -------------===//

#include "trn/Partition/Fit.h"

#include "trn/Dialect/Trn/IR/TrnDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::trn::partition {

namespace {
int64_t bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  int64_t bits = tensor.getElementType().getIntOrFloatBitWidth();
  return tensor.getNumElements() * ((bits + 7) / 8);
}
} // namespace

RankFootprint rankFootprint(func::FuncOp function) {
  RankFootprint footprint;
  for (BlockArgument argument : function.getArguments()) {
    auto role = function.getArgAttrOfType<StringAttr>(
        argument.getArgNumber(), TrnDialect::getRoleAttrName());
    int64_t bytes = bytesOf(argument.getType());
    StringRef kind = role ? role.getValue() : "";
    if (kind == "parameter")
      footprint.parameters += bytes;
    else if (kind == "optimizer_state")
      footprint.optimizerStates += bytes;
    else if (kind == "gradient")
      footprint.gradients += bytes;
    else
      footprint.inputs += bytes;
  }
  if (function.isExternal())
    return footprint;
  // Live ranges of the intermediates in program order.
  Block &body = function.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;
  std::vector<int64_t> freed(size_t(index) + 1, 0);
  int64_t live = 0;
  index = 0;
  for (Operation &op : body) {
    for (Value result : op.getResults()) {
      int64_t last = position[&op];
      for (Operation *user : result.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        if (top)
          last = std::max(last, position[top]);
      }
      int64_t bytes = bytesOf(result.getType());
      live += bytes;
      freed[size_t(last)] += bytes;
    }
    footprint.peakIntermediates = std::max(footprint.peakIntermediates, live);
    live -= freed[size_t(index++)];
  }
  return footprint;
}

FailureOr<RankFootprint> partitionedFootprint(ModuleOp module,
                                              const PartitionOptions &options) {
  OwningOpRef<ModuleOp> clone(module.clone());
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  addPartitionPasses(pm, options);
  if (failed(pm.run(*clone)))
    return failure();
  for (auto function : clone->getOps<func::FuncOp>())
    if (!function.isExternal())
      return rankFootprint(function);
  return RankFootprint();
}

} // namespace mlir::trn::partition
