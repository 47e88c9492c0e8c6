//===- PipelineStages.cpp - give every op of a step a pipeline stage ------===//
//
// dist-pipeline-stages: which ops run once per microbatch and which once per
// step, which of the former are the forward pass, and on which stage of the
// pipeline each runs (docs/partitioning.md, "Pipeline parallelism").
//
//===----------------------------------------------------------------------===//

#include "PipelineUtils.h"

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnDialect.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Partition/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::trn::partition {
#define GEN_PASS_DEF_DISTPIPELINESTAGES
#include "trn/Partition/Passes.h.inc"
} // namespace mlir::trn::partition

using namespace mlir;
using namespace mlir::trn;
using namespace mlir::trn::partition;

namespace {

enum class Phase { Undecided, Microbatch, Step };

/// What moving `value` to another stage costs: a broadcast (an op that
/// grows its one input) is made again there from its input.
int64_t movedBytes(Value value) {
  Operation *def = value.getDefiningOp();
  if (def && def->getNumOperands() == 1 && def->getNumResults() == 1 &&
      def->getNumRegions() == 0 && isMemoryEffectFree(def) &&
      tensorBytes(value.getType()) > tensorBytes(def->getOperand(0).getType()))
    return movedBytes(def->getOperand(0));
  return tensorBytes(value.getType());
}

class StageAssigner {
public:
  StageAssigner(func::FuncOp function, int64_t stages)
      : function(function), stages(stages) {}
  LogicalResult run();

private:
  LogicalResult assignPhases();
  LogicalResult findForward();
  LogicalResult assignLayers();
  LogicalResult assignFromMarkers();
  void assignStages();
  void annotate();

  std::optional<int64_t> stageOfValue(Value value) const;
  std::optional<int64_t> availableAt(Value value) const;
  /// Gives each op of `ops` still without a stage the smallest stage of its
  /// users (a value is made where it is first needed), else stage 0.
  void fromUsers(ArrayRef<Operation *> ops);
  void ownArguments();
  void deferCrossStageSums(ArrayRef<Operation *> backwardOps);

  func::FuncOp function;
  int64_t stages;
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, Phase> phase;
  llvm::DenseSet<Operation *> free, forward, boundaries;
  llvm::DenseMap<Operation *, int64_t> stage;
  llvm::DenseMap<unsigned, int64_t> layerStage, owner;
  /// With trn.pipeline_stage markers: each forward op's stage.
  llvm::DenseMap<Operation *, int64_t> markedStage;
};

LogicalResult StageAssigner::run() {
  for (Operation &op : function.getBody().front().without_terminator())
    ops.push_back(&op);
  if (failed(assignPhases()) || failed(findForward()))
    return failure();
  bool marked =
      llvm::any_of(ops, [](Operation *op) { return isa<PipelineStageOp>(op); });
  if (failed(marked ? assignFromMarkers() : assignLayers()))
    return failure();
  assignStages();
  annotate();
  // The markers have done their work: each is its input again.
  dropPipelineStageMarkers(function);
  return success();
}

/// Explicit cuts (trn.pipeline_stage): a forward op on the microbatch's
/// data path runs on the stage given by the number of markers between the
/// step's per-example inputs and it; a parameter belongs to the stage of the
/// data-path ops that first use it. Ops on parameters alone (a weight's
/// transpose) run where their users do.
LogicalResult StageAssigner::assignFromMarkers() {
  llvm::DenseMap<Value, int64_t> depth;
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    if (isPerExampleArgument(function, i))
      depth[function.getArgument(i)] = 0;
  int64_t deepest = 0;
  for (Operation *op : ops) {
    if (isa<PipelineStageOp>(op) && !forward.contains(op))
      return op->emitError("a trn.pipeline_stage marker outside the forward "
                           "pass of a microbatch (it marks where the model's "
                           "forward moves to the next stage)");
    if (!forward.contains(op))
      continue;
    std::optional<int64_t> onPath;
    for (Value operand : op->getOperands())
      if (auto it = depth.find(operand); it != depth.end())
        onPath = std::max(onPath.value_or(it->second), it->second);
    if (!onPath)
      continue; // parameters only: placed with its users
    int64_t d = *onPath;
    if (isa<PipelineStageOp>(op))
      ++d;
    deepest = std::max(deepest, d);
    markedStage[op] = d;
    for (Value result : op->getResults())
      depth[result] = d;
  }
  if (deepest + 1 != stages)
    return mlir::emitError(function.getLoc())
           << "the model's trn.pipeline_stage() markers cut its forward into "
           << deepest + 1 << " stages but the mesh has pp=" << stages
           << "; mark " << stages - 1
           << " cuts, or drop the markers to cut equal runs of layers";
  for (BlockArgument argument : function.getArguments()) {
    if (isPerExampleArgument(function, argument.getArgNumber()))
      continue;
    std::optional<int64_t> first;
    for (Operation *user : argument.getUsers())
      if (auto it = markedStage.find(user); it != markedStage.end())
        first = std::min(first.value_or(it->second), it->second);
    if (first)
      layerStage[argument.getArgNumber()] = *first;
  }
  return success();
}

/// Per microbatch: what depends on per-example data, up to the collectives
/// that reduce over the batch (dp). Per step: those collectives and what
/// depends on them. An op that needs both cannot be split into microbatches.
LogicalResult StageAssigner::assignPhases() {
  // A batch collective whose result per-example work needs (the count of
  // a cross-entropy's non-ignored labels, which scales each example's
  // gradient) runs inside the microbatch: the microbatch is normalised by
  // its own count, as Megatron and NxD average per-microbatch losses. Such
  // collectives are found one conflict at a time.
  llvm::DenseSet<Operation *> inMicrobatch;
  for (;;) {
    Operation *conflict = nullptr;
    llvm::DenseSet<Value> perExample, reduced;
    boundaries.clear();
    free.clear();
    phase.clear();
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      if (isPerExampleArgument(function, i))
        perExample.insert(function.getArgument(i));
    for (Operation *op : ops) {
      bool anyExample = llvm::any_of(op->getOperands(), [&](Value operand) {
        return perExample.contains(operand);
      });
      bool anyReduced = llvm::any_of(op->getOperands(), [&](Value operand) {
        return reduced.contains(operand);
      });
      Phase opPhase = Phase::Undecided;
      if (anyExample && isBatchCollective(op) && !inMicrobatch.contains(op)) {
        boundaries.insert(op);
        opPhase = Phase::Step;
      } else if (anyExample && anyReduced) {
        conflict = op;
        break;
      } else if (anyExample) {
        opPhase = Phase::Microbatch;
      } else if (anyReduced) {
        opPhase = Phase::Step;
      } else if (op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
                 llvm::all_of(op->getOperands(), [&](Value operand) {
                   if (auto argument = dyn_cast<BlockArgument>(operand)) {
                     auto type = dyn_cast<RankedTensorType>(argument.getType());
                     return type && type.getRank() == 0;
                   }
                   return free.contains(operand.getDefiningOp());
                 })) {
        // A constant, or computed from constants and scalar arguments only
        // (the learning rate, the step count, broadcast for an optimizer):
        // each fragment that needs it makes its own, rather than receive a
        // broadcast tensor from another stage.
        free.insert(op);
      }
      phase[op] = opPhase;
      if (opPhase != Phase::Undecided)
        for (Value result : op->getResults())
          (opPhase == Phase::Microbatch ? perExample : reduced).insert(result);
    }
    if (!conflict)
      break;
    // The batch collectives the conflicting op's reduced inputs come from.
    SmallVector<Value> worklist;
    for (Value operand : conflict->getOperands())
      if (reduced.contains(operand))
        worklist.push_back(operand);
    bool demoted = false;
    llvm::DenseSet<Operation *> seen;
    while (!worklist.empty()) {
      Operation *def = worklist.pop_back_val().getDefiningOp();
      if (!def || !seen.insert(def).second)
        continue;
      if (boundaries.contains(def)) {
        demoted |= inMicrobatch.insert(def).second;
        continue;
      }
      for (Value operand : def->getOperands())
        if (reduced.contains(operand))
          worklist.push_back(operand);
    }
    if (!demoted)
      return conflict->emitError()
             << "'" << conflict->getName()
             << "' combines a value reduced over the whole batch with "
                "per-example values: the step cannot be split into "
                "microbatches";
  }
  // What depends on neither (casts and transposes of weights) runs where
  // its users do: per microbatch if any of them does.
  for (Operation *op : llvm::reverse(ops)) {
    if (phase[op] != Phase::Undecided || free.contains(op))
      continue;
    bool perMicrobatch = llvm::any_of(op->getUsers(), [&](Operation *user) {
      auto it = phase.find(user);
      return it != phase.end() && it->second == Phase::Microbatch;
    });
    phase[op] = perMicrobatch ? Phase::Microbatch : Phase::Step;
  }
  return success();
}

/// The forward pass: the per-microbatch ops the loss depends on. The rest
/// of a microbatch's work (the gradients, and what only they need, such as
/// a weight's transpose) is its backward pass.
LogicalResult StageAssigner::findForward() {
  auto returnOp = cast<func::ReturnOp>(function.getBody().front().back());
  SmallVector<Value> worklist;
  bool hasRoles = false, hasAliases = false;
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    hasRoles |= bool(function.getResultAttr(i, TrnDialect::getRoleAttrName()));
    hasAliases |=
        bool(function.getResultAttr(i, TrnDialect::getAliasesAttrName()));
  }
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    auto role = function.getResultAttrOfType<StringAttr>(
        i, TrnDialect::getRoleAttrName());
    bool isLoss = hasRoles
                      ? role && role.getValue() == "loss"
                      : hasAliases && !function.getResultAttr(
                                          i, TrnDialect::getAliasesAttrName());
    if (isLoss)
      worklist.push_back(returnOp.getOperand(i));
  }
  if (worklist.empty())
    return mlir::emitError(
        function.getLoc(),
        "cannot tell the forward pass from the backward to cut the step "
        "into pipeline stages or microbatches: no result is the loss "
        "(trn.role = \"loss\")");
  llvm::DenseSet<Operation *> seen;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val().getDefiningOp();
    if (!op || !seen.insert(op).second)
      continue;
    if (phase.lookup(op) == Phase::Microbatch)
      forward.insert(op);
    llvm::append_range(worklist, op->getOperands());
  }
  return success();
}

/// Layers from the parameters' names, cut into equal runs of layers, as NxD
/// and NeMo do by default.
LogicalResult StageAssigner::assignLayers() {
  int64_t layers = 0;
  llvm::DenseMap<unsigned, int64_t> layerOf;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TrnDialect::getNameAttrName());
    if (!name || isPerExampleArgument(function, i))
      continue;
    if (std::optional<int64_t> layer = layerIndexOf(name.getValue())) {
      layerOf[i] = *layer;
      layers = std::max(layers, *layer + 1);
    }
  }
  if (stages > 1 && layers == 0)
    return mlir::emitError(function.getLoc())
           << "cannot cut the step into " << stages
           << " pipeline stages: no parameter name has a layer index (like "
              "'layers.3.weight')";
  if (layers < stages)
    return mlir::emitError(function.getLoc())
           << stages << " pipeline stages need at least " << stages
           << " layers; the model has " << layers;
  for (auto [argument, layer] : layerOf)
    layerStage[argument] = layer * stages / layers;
  return success();
}

std::optional<int64_t> StageAssigner::stageOfValue(Value value) const {
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    auto it = layerStage.find(argument.getArgNumber());
    if (it != layerStage.end())
      return it->second;
    it = owner.find(argument.getArgNumber());
    if (it != owner.end())
      return it->second;
    return std::nullopt;
  }
  auto it = stage.find(value.getDefiningOp());
  if (it == stage.end())
    return std::nullopt;
  return it->second;
}

/// The latest stage that has a forward value: where it is made, or a later
/// stage whose forward receives it (a layer's input crosses from the
/// previous stage).
std::optional<int64_t> StageAssigner::availableAt(Value value) const {
  std::optional<int64_t> latest;
  if (Operation *def = value.getDefiningOp()) {
    auto it = stage.find(def);
    if (it != stage.end())
      latest = it->second;
  }
  for (Operation *user : value.getUsers()) {
    auto it = stage.find(user);
    if (it != stage.end() && forward.contains(user))
      latest = std::max(latest.value_or(it->second), it->second);
  }
  return latest;
}

void StageAssigner::fromUsers(ArrayRef<Operation *> pending) {
  for (Operation *op : llvm::reverse(pending)) {
    if (stage.count(op))
      continue;
    std::optional<int64_t> first;
    for (Operation *user : op->getUsers()) {
      auto it = stage.find(user);
      if (it != stage.end())
        first = std::min(first.value_or(it->second), it->second);
    }
    stage[op] = first.value_or(0);
  }
}

/// A parameter without a layer index (an embedding, a final norm) belongs
/// to the first stage that uses it; the others receive its value.
void StageAssigner::ownArguments() {
  for (BlockArgument argument : function.getArguments()) {
    unsigned index = argument.getArgNumber();
    if (layerStage.count(index) || owner.count(index))
      continue;
    std::optional<int64_t> first;
    for (Operation *user : argument.getUsers()) {
      auto it = stage.find(user);
      if (it != stage.end())
        first = std::min(first.value_or(it->second), it->second);
    }
    if (first)
      owner[index] = *first;
  }
}

void StageAssigner::assignStages() {
  SmallVector<Operation *> forwardOps, backwardOps, stepOps;
  for (Operation *op : ops) {
    if (free.contains(op))
      continue;
    if (phase[op] == Phase::Step)
      stepOps.push_back(op);
    else if (forward.contains(op))
      forwardOps.push_back(op);
    else
      backwardOps.push_back(op);
  }
  // Forward: an op runs on the latest stage among its inputs' (its layer's
  // weights, the previous layer's activations).
  for (Operation *op : forwardOps) {
    if (auto it = markedStage.find(op); it != markedStage.end()) {
      stage[op] = it->second;
      continue;
    }
    std::optional<int64_t> latest;
    for (Value operand : op->getOperands())
      if (std::optional<int64_t> s = stageOfValue(operand))
        latest = std::max(latest.value_or(*s), *s);
    if (latest)
      stage[op] = *latest;
  }
  fromUsers(forwardOps);
  ownArguments();
  // Backward: on the stage of its layer's weights; else of the forward
  // activations it reads, unless the gradient it reads is from an earlier
  // stage already (gradients flow to lower stages only).
  for (Operation *op : backwardOps) {
    std::optional<int64_t> weights, activations, gradients;
    for (Value operand : op->getOperands()) {
      if (auto argument = dyn_cast<BlockArgument>(operand)) {
        unsigned index = argument.getArgNumber();
        auto it = layerStage.find(index);
        if (it != layerStage.end())
          weights = std::min(weights.value_or(it->second), it->second);
        // Per-example data is an activation of the stages that read it.
        if (isPerExampleArgument(function, index))
          if (std::optional<int64_t> s = availableAt(operand))
            activations = std::max(activations.value_or(*s), *s);
        continue;
      }
      Operation *def = operand.getDefiningOp();
      auto it = stage.find(def);
      if (it == stage.end())
        continue;
      if (forward.contains(def))
        activations = std::max(activations.value_or(*availableAt(operand)),
                               *availableAt(operand));
      else
        gradients = std::min(gradients.value_or(it->second), it->second);
    }
    if (weights)
      stage[op] = *weights;
    else if (activations || gradients)
      stage[op] = std::min(activations.value_or(INT64_MAX),
                           gradients.value_or(INT64_MAX));
  }
  fromUsers(backwardOps);
  // A view or an elementwise function of one gradient (a reshape, a
  // transpose) whose users are all on one earlier stage runs there: the
  // gradient crosses once, not once per view.
  for (Operation *op : llvm::reverse(backwardOps)) {
    SmallVector<Value> inputs;
    for (Value operand : op->getOperands())
      if (!operand.getDefiningOp() || !free.contains(operand.getDefiningOp()))
        inputs.push_back(operand);
    bool readsWeights = llvm::any_of(op->getOperands(), [&](Value operand) {
      auto argument = dyn_cast<BlockArgument>(operand);
      return argument && layerStage.count(argument.getArgNumber());
    });
    if (inputs.size() != 1 || readsWeights || !isMemoryEffectFree(op) ||
        op->use_empty())
      continue;
    std::optional<int64_t> target;
    bool oneStage = true;
    for (Operation *user : op->getUsers()) {
      auto it = stage.find(user);
      if (it == stage.end() || forward.contains(user) ||
          phase.lookup(user) != Phase::Microbatch ||
          (target && *target != it->second))
        oneStage = false;
      else
        target = it->second;
    }
    if (oneStage && target && *target < stage[op])
      stage[op] = *target;
  }
  ownArguments();
  // Per step: where the reduced value was made, or where the largest input
  // lives (an optimizer update runs beside its parameter and gradient; a
  // scalar moves, not a weight).
  for (Operation *op : stepOps) {
    if (boundaries.contains(op)) {
      stage[op] = stage.lookup(op->getOperand(0).getDefiningOp());
      continue;
    }
    std::optional<int64_t> chosen;
    int64_t chosenBytes = -1;
    for (Value operand : op->getOperands()) {
      std::optional<int64_t> s = stageOfValue(operand);
      if (!s)
        continue;
      int64_t bytes = movedBytes(operand);
      if (bytes > chosenBytes || (bytes == chosenBytes && *s < *chosen)) {
        chosen = s;
        chosenBytes = bytes;
      }
    }
    if (chosen)
      stage[op] = *chosen;
  }
  fromUsers(stepOps);
  ownArguments();
  deferCrossStageSums(backwardOps);
}

/// A sum of two per-microbatch values made on different stages that only a
/// batch collective reads (a tied embedding's gradient: the lookup's part
/// on the first stage, the LM head's on the last) is taken once per step
/// instead: each part is averaged over the microbatches on its own stage
/// and the sum of the averages (the same value) crosses once, as Megatron
/// all-reduces the embedding group's gradient once per step.
void StageAssigner::deferCrossStageSums(ArrayRef<Operation *> backwardOps) {
  for (Operation *op : backwardOps) {
    if (!isa<AddOp>(op) || op->getNumResults() != 1 ||
        op->getResult(0).use_empty() ||
        !llvm::all_of(op->getResult(0).getUsers(), [&](Operation *user) {
          return boundaries.contains(user);
        }))
      continue;
    auto stageOfOperand = [&](Value operand) -> std::optional<int64_t> {
      Operation *def = operand.getDefiningOp();
      if (!def || free.contains(def) || phase.lookup(def) != Phase::Microbatch)
        return std::nullopt;
      auto it = stage.find(def);
      return it == stage.end() ? std::nullopt
                               : std::optional<int64_t>(it->second);
    };
    std::optional<int64_t> a = stageOfOperand(op->getOperand(0)),
                           b = stageOfOperand(op->getOperand(1));
    if (!a || !b || *a == *b)
      continue;
    phase[op] = Phase::Step;
    stage[op] = std::min(*a, *b);
    // Its collectives stay beside it.
    for (Operation *user : op->getResult(0).getUsers())
      stage[user] = stage[op];
  }
}

void StageAssigner::annotate() {
  Builder builder(function.getContext());
  for (Operation *op : ops) {
    if (free.contains(op))
      continue;
    StringRef name = phase[op] == Phase::Step ? "update"
                     : forward.contains(op)   ? "forward"
                                              : "backward";
    op->setAttr(dist::DistDialect::getStageAttrName(),
                builder.getI64IntegerAttr(stage.lookup(op)));
    op->setAttr(dist::DistDialect::getPhaseAttrName(),
                builder.getStringAttr(name));
  }
  for (BlockArgument argument : function.getArguments()) {
    if (std::optional<int64_t> s = stageOfValue(argument))
      function.setArgAttr(argument.getArgNumber(),
                          dist::DistDialect::getStageAttrName(),
                          builder.getI64IntegerAttr(*s));
  }
}

struct DistPipelineStagesPass
    : public partition::impl::DistPipelineStagesBase<DistPipelineStagesPass> {
  using DistPipelineStagesBase::DistPipelineStagesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (pp < 1) {
      mlir::emitError(module.getLoc())
          << "pp=" << int64_t(pp) << " must be at least 1";
      return signalPassFailure();
    }
    auto meshes = llvm::to_vector(module.getOps<dist::MeshOp>());
    if (meshes.size() != 1 || !meshes.front().sizeOf(kBatchAxis)) {
      mlir::emitError(
          module.getLoc(),
          "pipeline stages need the step partitioned over a mesh with a dp "
          "axis (dist-seed, dist-propagate and dist-spmd first): the dp "
          "collectives mark where a microbatch's work ends");
      return signalPassFailure();
    }
    dist::MeshOp mesh = meshes.front();
    if (std::optional<int64_t> size = mesh.sizeOf(kPipelineAxis)) {
      if (*size != pp) {
        mesh.emitError() << "the mesh's pp axis has size " << *size << ", not "
                         << int64_t(pp);
        return signalPassFailure();
      }
    } else {
      // pp after dp: the mesh order of --mesh dp=2,pp=4,tp=8.
      SmallVector<StringRef> axes;
      SmallVector<int64_t> sizes;
      for (auto [axis, size] : llvm::zip(mesh.getAxes(), mesh.getSizes())) {
        axes.push_back(cast<StringAttr>(axis).getValue());
        sizes.push_back(size);
        if (axes.back() == kBatchAxis) {
          axes.push_back(kPipelineAxis);
          sizes.push_back(pp);
        }
      }
      Builder builder(module.getContext());
      mesh.setAxesAttr(builder.getStrArrayAttr(axes));
      mesh.setSizes(sizes);
    }
    for (func::FuncOp function : module.getOps<func::FuncOp>()) {
      if (function.isExternal() ||
          function->hasAttr(dist::DistDialect::getPipelineAttrName()))
        continue;
      if (failed(StageAssigner(function, pp).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
