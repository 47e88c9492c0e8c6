//===- PipelineUtils.cpp - what the pipeline passes share -----------------===//

#include "PipelineUtils.h"

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnDialect.h"

using namespace mlir;
using namespace mlir::trn;

bool partition::isPerExampleArgument(func::FuncOp function, unsigned index) {
  if (auto role = function.getArgAttrOfType<StringAttr>(
          index, TrnDialect::getRoleAttrName()))
    return role.getValue() == "data" || role.getValue() == "label";
  auto sharding = function.getArgAttrOfType<dist::ShardingAttr>(
      index, dist::DistDialect::getShardingAttrName());
  if (!sharding)
    return false;
  for (unsigned dim = 0; dim < sharding.getDims().size(); ++dim)
    if (llvm::is_contained(sharding.axesOf(dim), kBatchAxis))
      return true;
  return false;
}

bool partition::isBatchCollective(Operation *op) {
  if (!isa<dist::AllReduceOp, dist::ReduceScatterOp, dist::AllGatherOp,
           dist::AllToAllOp>(op))
    return false;
  auto axes = op->getAttrOfType<ArrayAttr>("axes");
  return axes && llvm::any_of(axes, [](Attribute axis) {
           return cast<StringAttr>(axis).getValue() == kBatchAxis;
         });
}

std::optional<int64_t> partition::layerIndexOf(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (StringRef part : parts) {
    int64_t index;
    if (!part.empty() && !part.getAsInteger(10, index) && index >= 0)
      return index;
  }
  return std::nullopt;
}

std::optional<int64_t> partition::stageOf(Operation *op) {
  if (auto stage =
          op->getAttrOfType<IntegerAttr>(dist::DistDialect::getStageAttrName()))
    return stage.getInt();
  return std::nullopt;
}

StringRef partition::phaseOf(Operation *op) {
  if (auto phase =
          op->getAttrOfType<StringAttr>(dist::DistDialect::getPhaseAttrName()))
    return phase.getValue();
  return {};
}
