//===- Fit.cpp - what one rank of a partitioned program holds -------------===//

#include "trn/Partition/Fit.h"

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnDialect.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "trnrt/PipelineSchedule.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::trn::partition {

RankFootprint rankFootprint(func::FuncOp function) {
  RankFootprint footprint;
  for (BlockArgument argument : function.getArguments()) {
    auto role = function.getArgAttrOfType<StringAttr>(
        argument.getArgNumber(), TrnDialect::getRoleAttrName());
    int64_t bytes = tensorBytes(argument.getType());
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
      int64_t bytes = tensorBytes(result.getType());
      live += bytes;
      freed[size_t(last)] += bytes;
    }
    footprint.peakIntermediates = std::max(footprint.peakIntermediates, live);
    live -= freed[size_t(index++)];
  }
  return footprint;
}

FailureOr<RankFootprint> partitionedFootprint(ModuleOp module,
                                              const PartitionOptions &options,
                                              GraphPassesBuilder graphPasses) {
  OwningOpRef<ModuleOp> clone(module.clone());
  // Without pipeline stages the cuts mean nothing (nor cost a tensor).
  dropPipelineStageMarkers(*clone);
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  addPartitionPasses(pm, options);
  if (graphPasses)
    graphPasses(pm);
  if (failed(pm.run(*clone)))
    return failure();
  for (auto function : clone->getOps<func::FuncOp>())
    if (!function.isExternal())
      return rankFootprint(function);
  return RankFootprint();
}

std::vector<RankFootprint> pipelineFootprints(ModuleOp module) {
  std::vector<RankFootprint> stages;
  auto pipelines = llvm::to_vector(module.getOps<dist::PipelineOp>());
  if (pipelines.size() != 1)
    return stages;
  dist::PipelineOp pipeline = pipelines.front();
  auto mesh = dist::lookupMesh(pipeline, pipeline.getMeshAttr());
  std::optional<int64_t> count =
      mesh ? mesh.sizeOf(pipeline.getAxis()) : std::nullopt;
  if (!count)
    return stages;
  stages.assign(size_t(*count), RankFootprint());
  trnrt::PipelineSchedule schedule;
  trnrt::parsePipelineSchedule(pipeline.getSchedule().str(), schedule);
  // Step arguments and accumulators counted once per stage.
  std::vector<llvm::DenseSet<int64_t>> arguments(stages.size()),
      accumulators(stages.size());
  for (auto function : module.getOps<func::FuncOp>()) {
    auto stageAttr = function->getAttrOfType<IntegerAttr>(
        dist::DistDialect::getStageAttrName());
    auto phase = function->getAttrOfType<StringAttr>(
        dist::DistDialect::getPhaseAttrName());
    if (!stageAttr || !phase || stageAttr.getInt() >= *count)
      continue;
    const size_t s = size_t(stageAttr.getInt());
    RankFootprint &footprint = stages[s];
    for (BlockArgument argument : function.getArguments()) {
      unsigned i = argument.getArgNumber();
      auto port = function.getArgAttrOfType<dist::PortAttr>(
          i, dist::DistDialect::getPortAttrName());
      if (!port)
        continue;
      int64_t bytes = tensorBytes(argument.getType());
      if (port.getKind() == "accumulator") {
        if (accumulators[s].insert(port.getIndex()).second)
          footprint.gradients += bytes;
        continue;
      }
      if (port.getKind() != "argument" && port.getKind() != "microbatch")
        continue;
      if (!arguments[s].insert(port.getIndex()).second)
        continue;
      auto role = function.getArgAttrOfType<StringAttr>(
          i, TrnDialect::getRoleAttrName());
      StringRef kind = role ? role.getValue() : "";
      if (kind == "parameter")
        footprint.parameters += bytes;
      else if (kind == "optimizer_state")
        footprint.optimizerStates += bytes;
      else
        footprint.inputs += bytes;
    }
    if (phase.getValue() == "forward") {
      int64_t stash = 0;
      for (unsigned r = 0; r < function.getNumResults(); ++r) {
        auto port = function.getResultAttrOfType<dist::PortAttr>(
            r, dist::DistDialect::getPortAttrName());
        if (port && port.getKind() == "stash")
          stash += tensorBytes(function.getResultTypes()[r]);
      }
      footprint.microbatchesInFlight =
          trnrt::peakMicrobatchesInFlight(trnrt::pipelineStageOrder(
              schedule, *count, int64_t(s), pipeline.getMicrobatches()));
      footprint.stash = stash * footprint.microbatchesInFlight;
    }
    footprint.peakIntermediates = std::max(
        footprint.peakIntermediates, rankFootprint(function).peakIntermediates);
  }
  return stages;
}

FailureOr<std::vector<RankFootprint>>
partitionedPipelineFootprints(ModuleOp module, const PartitionOptions &options,
                              int64_t pp, const DistPipelineSplitOptions &split,
                              GraphPassesBuilder graphPasses) {
  OwningOpRef<ModuleOp> clone(module.clone());
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  addPartitionPasses(pm, options);
  DistPipelineStagesOptions stages;
  stages.pp = pp;
  pm.addPass(createDistPipelineStages(stages));
  pm.addPass(createDistPipelineSplit(split));
  if (graphPasses)
    graphPasses(pm);
  if (failed(pm.run(*clone)))
    return failure();
  return pipelineFootprints(*clone);
}

} // namespace mlir::trn::partition
