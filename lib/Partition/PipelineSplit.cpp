//===- PipelineSplit.cpp - cut a staged step into pipeline fragments ------===//
//
// dist-pipeline-split: the ops dist-pipeline-stages marked become, per
// stage, a forward and a backward fragment (run once per microbatch) and an
// update fragment (once per step); values that cross stages travel by
// dist.send/dist.recv, activations the backward needs are stashed, and the
// per-microbatch values the update reads are summed over the microbatches
// in accumulators and averaged (docs/partitioning.md, "Pipeline
// parallelism").
//
//===----------------------------------------------------------------------===//

#include "PipelineUtils.h"

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnDialect.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Partition/Passes.h"

#include "trnrt/PipelineRun.h"
#include "trnrt/PipelineSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#include <map>

namespace mlir::trn::partition {
#define GEN_PASS_DEF_DISTPIPELINESPLIT
#include "trn/Partition/Passes.h.inc"
} // namespace mlir::trn::partition

using namespace mlir;
using namespace mlir::trn;
using namespace mlir::trn::partition;

namespace {

enum PhaseIndex { Forward = 0, Backward = 1, Update = 2 };

constexpr StringLiteral kPhaseNames[] = {"forward", "backward", "update"};

struct Fragment {
  int64_t stage = 0;
  PhaseIndex phase = Forward;
  func::FuncOp function;
  OpBuilder builder;
  IRMapping mapping;
  SmallVector<Attribute> argPorts;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Value> results;
  SmallVector<Attribute> resultPorts;
  SmallVector<DictionaryAttr> resultAttrs;

  explicit Fragment(MLIRContext *context) : builder(context) {}
  bool perMicrobatch() const { return phase != Update; }
};

/// A transfer between two fragments, for the schedule check.
struct Transfer {
  int64_t fromStage, toStage;
  PhaseIndex fromPhase, toPhase;
  Operation *at;
};

class Splitter {
public:
  Splitter(func::FuncOp step, dist::MeshOp mesh, int64_t microbatches,
           trnrt::PipelineSchedule schedule, bool recompute)
      : step(step), mesh(mesh), microbatches(microbatches), schedule(schedule),
        recompute(recompute), stages(*mesh.sizeOf(kPipelineAxis)) {}
  LogicalResult run();

private:
  Fragment &fragment(int64_t stage, PhaseIndex phase) {
    return *fragments[stage * 3 + phase];
  }
  FailureOr<Value> get(Fragment &into, Value value);
  Value addArgument(Fragment &into, Type type, Attribute port,
                    DictionaryAttr attrs, Location loc);
  void addResult(Fragment &from, Value value, Attribute port,
                 DictionaryAttr attrs);
  Value transfer(Fragment &from, Value value, Fragment &to, Location loc);
  FailureOr<Value> averaged(Fragment &from, Value value, Location loc);
  Value wholeArgument(Fragment &into, unsigned index, Location loc);
  /// Whether `value` depends on per-example arguments (or on what a
  /// collective or another stage makes).
  bool perExample(Value value);
  /// `value`'s op made again in `into` from its operands there.
  FailureOr<Value> remake(Fragment &into, Value value);
  /// Selective recomputation: whether the backward of `value`'s stage makes
  /// it again rather than having it stashed (remadeFrom).
  bool remadeInBackward(Value value);
  /// What the backward must be given to make `value` again (0 for a step
  /// argument, which it takes itself), at most `value`'s own bytes.
  int64_t remadeFrom(Value value, int64_t stage, int depth);
  /// Whether the op making `value` may run again in `stage`'s backward:
  /// it is that stage's forward's.
  bool remakeable(Value value, int64_t stage);
  FailureOr<bool> overWholeBatch(Fragment &into, Operation &collective);
  LogicalResult splitResults();
  LogicalResult checkSchedule();
  void finish();

  DictionaryAttr stepArgAttrs(unsigned index) {
    NamedAttrList attrs(step.getArgAttrDict(index));
    attrs.erase(dist::DistDialect::getStageAttrName());
    return attrs.getDictionary(step.getContext());
  }
  Attribute port(StringRef kind, int64_t index) {
    return dist::PortAttr::get(step.getContext(), kind, index);
  }

  func::FuncOp step;
  dist::MeshOp mesh;
  int64_t microbatches;
  trnrt::PipelineSchedule schedule;
  /// Activation checkpointing: the backward recomputes its stage's forward.
  bool recompute;
  int64_t stages;
  SmallVector<std::unique_ptr<Fragment>> fragments;
  llvm::DenseMap<Operation *, Fragment *> placed;
  /// Per fragment: the accumulator index of a per-microbatch value.
  std::map<std::pair<Fragment *, Value>, int64_t, std::less<>> accumulators;
  llvm::DenseMap<Value, int64_t> accumulatorOf;
  llvm::DenseMap<Value, bool> perExampleValues;
  llvm::DenseMap<Value, int64_t> remadeBytes;
  /// Per fragment: a per-example argument's every microbatch.
  std::map<std::pair<Fragment *, unsigned>, Value> wholeArguments;
  int64_t nextStash = 0, nextAccumulator = 0, nextTag = 0;
  SmallVector<Transfer> transfers;
};

/// A copy of `op` without the stage and phase dist-pipeline-stages gave it.
Operation *cloneUnmarked(OpBuilder &builder, Operation &op,
                         IRMapping &mapping) {
  Operation *copy = builder.clone(op, mapping);
  copy->removeAttr(dist::DistDialect::getStageAttrName());
  copy->removeAttr(dist::DistDialect::getPhaseAttrName());
  return copy;
}

bool Splitter::remakeable(Value value, int64_t stage) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumResults() != 1 || def->getNumRegions() != 0 ||
      !isMemoryEffectFree(def))
    return false;
  auto it = placed.find(def);
  if (it == placed.end() || it->second->phase != Forward ||
      it->second->stage != stage)
    return false;
  if (isa<dist::DistDialect>(def->getDialect()))
    return isa<dist::AllGatherOp>(def);
  // A matmul only when its result is far larger than its operands (the
  // attention scores, [heads, S, S] from [heads, S, d]), never a projection.
  if (isa<DotGeneralOp>(def)) {
    int64_t operands = 0;
    for (Value operand : def->getOperands())
      operands += tensorBytes(operand.getType());
    return tensorBytes(value.getType()) >= 8 * operands;
  }
  return true;
}

int64_t Splitter::remadeFrom(Value value, int64_t stage, int depth) {
  if (isa<BlockArgument>(value))
    return 0;
  int64_t own = tensorBytes(value.getType());
  Operation *def = value.getDefiningOp();
  if (!stageOf(def) && phaseOf(def).empty())
    return 0; // a constant, made where it is used
  if (depth == 0 || !remakeable(value, stage))
    return own;
  if (auto it = remadeBytes.find(value); it != remadeBytes.end())
    return it->second;
  int64_t operands = 0;
  for (Value operand : def->getOperands())
    operands += remadeFrom(operand, stage, depth - 1);
  int64_t bytes = std::min(own, operands);
  remadeBytes[value] = bytes;
  return bytes;
}

bool Splitter::remadeInBackward(Value value) {
  // Megatron-LM's selective recomputation: what costs the stash much and
  // the backward little, an all-gathered activation under sequence
  // parallelism (its shard is stashed) and the attention core (from the q
  // and k the backward needs anyway): at most a quarter of its bytes.
  constexpr int kDepth = 8;
  auto it = placed.find(value.getDefiningOp());
  if (it == placed.end() || !remakeable(value, it->second->stage))
    return false;
  int64_t operands = 0;
  for (Value operand : value.getDefiningOp()->getOperands())
    operands += remadeFrom(operand, it->second->stage, kDepth);
  return 4 * operands <= tensorBytes(value.getType());
}

FailureOr<Value> Splitter::remake(Fragment &into, Value value) {
  Operation *def = value.getDefiningOp();
  for (Value operand : def->getOperands())
    if (failed(get(into, operand)))
      return failure();
  cloneUnmarked(into.builder, *def, into.mapping);
  return into.mapping.lookup(value);
}

Value Splitter::addArgument(Fragment &into, Type type, Attribute portAttr,
                            DictionaryAttr attrs, Location loc) {
  Block &body = into.function.getBody().front();
  into.argPorts.push_back(portAttr);
  into.argAttrs.push_back(attrs);
  return body.addArgument(type, loc);
}

void Splitter::addResult(Fragment &from, Value value, Attribute portAttr,
                         DictionaryAttr attrs) {
  from.results.push_back(value);
  from.resultPorts.push_back(portAttr);
  from.resultAttrs.push_back(attrs);
}

/// Sends `value` (defined in `from`) to `to` and returns it there.
Value Splitter::transfer(Fragment &from, Value value, Fragment &to,
                         Location loc) {
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  int64_t tag = nextTag++;
  // Sent as soon as it is made, so the transfer overlaps what follows.
  OpBuilder::InsertionGuard guard(from.builder);
  from.builder.setInsertionPointAfterValue(value);
  Operation *send = from.builder.create<dist::SendOp>(
      loc, value, meshRef, from.builder.getStringAttr(kPipelineAxis),
      from.builder.getI64IntegerAttr(to.stage),
      from.builder.getI64IntegerAttr(tag));
  transfers.push_back({from.stage, to.stage, from.phase, to.phase, send});
  return to.builder.create<dist::RecvOp>(
      loc, value.getType(), meshRef, to.builder.getStringAttr(kPipelineAxis),
      to.builder.getI64IntegerAttr(from.stage),
      to.builder.getI64IntegerAttr(tag));
}

/// The average over the microbatches of `value`, a per-microbatch value
/// of `from`, in the update fragment of `from`'s stage: `from` adds each
/// microbatch's value to an accumulator (f32 for narrower floats), the
/// update divides the sum by the number of microbatches.
FailureOr<Value> Splitter::averaged(Fragment &from, Value value, Location loc) {
  Fragment &update = fragment(from.stage, Update);
  auto type = cast<RankedTensorType>(value.getType());
  Type element = type.getElementType();
  bool widen = isa<FloatType>(element) && element.getIntOrFloatBitWidth() < 32;
  if (!isa<FloatType>(element))
    return value.getDefiningOp()->emitError()
           << "a per-microbatch " << type
           << " is averaged over the microbatches; only floating-point "
              "values can be";
  auto accType = widen ? type.clone(from.builder.getF32Type()) : type;
  int64_t index = nextAccumulator++;
  Attribute accPort = port("accumulator", index);
  Value acc = addArgument(from, accType, accPort,
                          DictionaryAttr::get(step.getContext()), loc);
  // Added as soon as it is made: the contribution (a weight gradient) dies
  // there instead of living to the end of the fragment.
  Value sum;
  {
    OpBuilder::InsertionGuard guard(from.builder);
    from.builder.setInsertionPointAfterValue(value);
    Value contribution =
        widen ? Value(from.builder.create<ConvertOp>(loc, accType, value))
              : value;
    sum = from.builder.create<AddOp>(loc, acc, contribution);
  }
  addResult(from, sum, accPort, DictionaryAttr::get(step.getContext()));
  Value total = addArgument(update, accType, accPort,
                            DictionaryAttr::get(step.getContext()), loc);
  Value mean = total;
  if (microbatches > 1) {
    Attribute scale = update.builder.getFloatAttr(accType.getElementType(),
                                                  1.0 / double(microbatches));
    Value factor = update.builder.create<ConstantOp>(
        loc, cast<ElementsAttr>(DenseElementsAttr::get(accType, scale)));
    mean = update.builder.create<MulOp>(loc, total, factor);
  }
  if (widen)
    mean = update.builder.create<ConvertOp>(loc, type, mean);
  return mean;
}

bool Splitter::perExample(Value value) {
  if (auto it = perExampleValues.find(value); it != perExampleValues.end())
    return it->second;
  bool result;
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    result = isPerExampleArgument(step, argument.getArgNumber());
  } else {
    Operation *def = value.getDefiningOp();
    result = isa<dist::DistDialect>(def->getDialect()) ||
             def->getNumRegions() != 0 ||
             llvm::any_of(def->getOperands(),
                          [&](Value operand) { return perExample(operand); });
  }
  perExampleValues[value] = result;
  return result;
}

/// Every microbatch of the replica's per-example argument `index`, as
/// fragment `into` sees it: an argument port of the whole shape.
Value Splitter::wholeArgument(Fragment &into, unsigned index, Location loc) {
  Value &whole = wholeArguments[{&into, index}];
  if (!whole) {
    auto type = cast<RankedTensorType>(step.getArgumentTypes()[index]);
    SmallVector<int64_t> shape(type.getShape());
    shape[0] *= microbatches;
    // Named apart from the microbatch's input of the same argument.
    NamedAttrList attrs(stepArgAttrs(index));
    auto name =
        dyn_cast_or_null<StringAttr>(attrs.get(TrnDialect::getNameAttrName()));
    std::string wholeName =
        (name ? name.getValue().str() : "arg" + std::to_string(index)) +
        trnrt::kEveryMicrobatchSuffix;
    attrs.set(TrnDialect::getNameAttrName(),
              StringAttr::get(step.getContext(), wholeName));
    whole = addArgument(into, type.clone(shape), port("argument", index),
                        attrs.getDictionary(step.getContext()), loc);
  }
  return whole;
}

/// A sum over the batch that a microbatch's work needs (dist-pipeline-stages
/// kept it in the microbatch: the count of a cross-entropy's non-ignored
/// labels, which scales each example's gradient) and that is computed from
/// per-example arguments alone is taken over every microbatch of the step,
/// averaged: each microbatch then scales by the whole batch's count, and
/// the average of the microbatches' results is the whole batch's step (not
/// the mean of per-microbatch means, which differs when the counts do).
/// Returns false, leaving the op to the caller, when the sum depends on
/// anything else (a batch norm's statistics stay per microbatch).
FailureOr<bool> Splitter::overWholeBatch(Fragment &into,
                                         Operation &collective) {
  auto reduce = dyn_cast<dist::AllReduceOp>(collective);
  if (!reduce || microbatches == 1 ||
      !isa<FloatType>(getElementTypeOrSelf(reduce.getType())) ||
      !llvm::is_contained({dist::ReductionKind::sum, dist::ReductionKind::mean},
                          reduce.getReduction()))
    return false;
  // The ops between the per-example arguments and the sum.
  llvm::DenseSet<Operation *> slice;
  llvm::DenseSet<unsigned> leaves;
  SmallVector<Value> worklist = {reduce.getInput()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (auto argument = dyn_cast<BlockArgument>(value)) {
      auto type = dyn_cast<RankedTensorType>(argument.getType());
      if (!isPerExampleArgument(step, argument.getArgNumber()) || !type ||
          type.getRank() == 0)
        return false;
      leaves.insert(argument.getArgNumber());
      continue;
    }
    Operation *def = value.getDefiningOp();
    if (!placed.count(def))
      continue; // a constant: made where it is used
    if (isa<dist::DistDialect>(def->getDialect()) ||
        def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return false;
    if (slice.insert(def).second)
      llvm::append_range(worklist, def->getOperands());
  }
  if (leaves.empty())
    return false;
  Location loc = collective.getLoc();
  OpBuilder &builder = into.builder;
  Value sum;
  for (int64_t m = 0; m < microbatches; ++m) {
    IRMapping mapping;
    for (unsigned index : leaves) {
      auto type = cast<RankedTensorType>(step.getArgumentTypes()[index]);
      SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
          strides(type.getRank(), 1);
      start[0] = m * type.getDimSize(0);
      limit[0] = start[0] + type.getDimSize(0);
      mapping.map(step.getArgument(index),
                  builder.create<SliceOp>(loc, wholeArgument(into, index, loc),
                                          start, limit, strides));
    }
    for (Operation &op : step.getBody().front().without_terminator()) {
      if (!slice.contains(&op))
        continue;
      for (Value operand : op.getOperands())
        if (!mapping.contains(operand)) {
          // A constant of the step, made once in this fragment.
          FailureOr<Value> local = get(into, operand);
          if (failed(local))
            return failure();
          mapping.map(operand, *local);
        }
      cloneUnmarked(builder, op, mapping);
    }
    Value part = mapping.lookup(reduce.getInput());
    sum = sum ? builder.create<AddOp>(loc, sum, part).getResult() : part;
  }
  auto type = cast<RankedTensorType>(sum.getType());
  Value scale = builder.create<ConstantOp>(
      loc, cast<ElementsAttr>(DenseElementsAttr::get(
               type, builder.getFloatAttr(type.getElementType(),
                                          1.0 / double(microbatches)))));
  IRMapping mapping;
  mapping.map(reduce.getInput(),
              builder.create<MulOp>(loc, sum, scale).getResult());
  Operation *copy = cloneUnmarked(builder, collective, mapping);
  into.mapping.map(collective.getResult(0), copy->getResult(0));
  return true;
}

/// `value` of the step, as fragment `into` sees it.
FailureOr<Value> Splitter::get(Fragment &into, Value value) {
  if (Value mapped = into.mapping.lookupOrNull(value))
    return mapped;
  Location loc = value.getLoc();
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    unsigned index = argument.getArgNumber();
    bool perExample = isPerExampleArgument(step, index);
    if (perExample && !into.perMicrobatch())
      return mlir::emitError(step.getLoc())
             << "argument " << index
             << " holds per-example data but the update "
                "reads it";
    Value local =
        addArgument(into, value.getType(),
                    port(perExample ? "microbatch" : "argument", index),
                    stepArgAttrs(index), loc);
    into.mapping.map(value, local);
    return local;
  }
  Operation *def = value.getDefiningOp();
  auto it = placed.find(def);
  if (it == placed.end()) {
    // A constant (dist-pipeline-stages left it unmarked): made here.
    for (Value operand : def->getOperands())
      if (failed(get(into, operand)))
        return failure();
    Operation *copy = into.builder.clone(*def, into.mapping);
    (void)copy;
    return into.mapping.lookup(value);
  }
  Fragment &from = *it->second;
  if (&from == &into)
    return def->emitError("dist-pipeline-split: an op reads a value its "
                          "fragment makes later");
  // A value that grows its one input (a broadcast of a scalar: a clipping
  // factor, an optimizer's coefficient) is made again where it is needed
  // from its input, which crosses instead.
  if (from.stage != into.stage && def->getNumOperands() == 1 &&
      def->getNumResults() == 1 && def->getNumRegions() == 0 &&
      isMemoryEffectFree(def) &&
      tensorBytes(value.getType()) >
          tensorBytes(def->getOperand(0).getType())) {
    return remake(into, value);
  }
  // The value as its own fragment has it.
  Value source = from.mapping.lookup(value);
  Value local;
  if (!from.perMicrobatch() && into.perMicrobatch())
    return def->emitError()
           << "'" << def->getName()
           << "' runs once per step but a microbatch's work reads it";
  if (from.perMicrobatch() && !into.perMicrobatch() && !perExample(value) &&
      def->getNumRegions() == 0 && isMemoryEffectFree(def)) {
    // The same in every microbatch (a slice of a buffer, made per microbatch
    // for the microbatch's users): made again once per step.
    return remake(into, value);
  }
  if (from.perMicrobatch() && !into.perMicrobatch()) {
    // Per microbatch to per step: averaged on the producer's stage.
    FailureOr<Value> mean = averaged(from, source, loc);
    if (failed(mean))
      return failure();
    Fragment &update = fragment(from.stage, Update);
    update.mapping.map(value, *mean);
    if (&update == &into)
      return *mean;
    local = transfer(update, *mean, into, loc);
  } else if (from.stage == into.stage) {
    if (from.phase != Forward || into.phase != Backward)
      return def->emitError("dist-pipeline-split: a backward value flows "
                            "into the forward");
    if (recompute || remadeInBackward(value)) {
      // Made again here from its own inputs (recomputed in turn, or what
      // the stage received, which is stashed), right before its first use.
      return remake(into, value);
    }
    // An activation the backward needs: kept from the forward.
    int64_t index = nextStash++;
    addResult(from, source, port("stash", index),
              DictionaryAttr::get(step.getContext()));
    local = addArgument(into, value.getType(), port("stash", index),
                        DictionaryAttr::get(step.getContext()), loc);
  } else if (into.phase == Backward &&
             fragment(into.stage, Forward).mapping.contains(value)) {
    // The forward of this stage received it already: stash its copy.
    Fragment &forward = fragment(into.stage, Forward);
    int64_t index = nextStash++;
    addResult(forward, forward.mapping.lookup(value), port("stash", index),
              DictionaryAttr::get(step.getContext()));
    local = addArgument(into, value.getType(), port("stash", index),
                        DictionaryAttr::get(step.getContext()), loc);
  } else {
    local = transfer(from, source, into, loc);
  }
  into.mapping.map(value, local);
  return local;
}

LogicalResult Splitter::run() {
  // The fragments, named <step>.s<stage>.<phase>, before the step.
  OpBuilder moduleBuilder(step);
  MLIRContext *context = step.getContext();
  for (int64_t s = 0; s < stages; ++s)
    for (PhaseIndex phase : {Forward, Backward, Update}) {
      auto piece = std::make_unique<Fragment>(context);
      piece->stage = s;
      piece->phase = phase;
      piece->function = moduleBuilder.create<func::FuncOp>(
          step.getLoc(),
          (step.getSymName() + ".s" + Twine(s) + "." + kPhaseNames[phase])
              .str(),
          FunctionType::get(context, {}, {}));
      Block *body = piece->function.addEntryBlock();
      piece->builder.setInsertionPointToEnd(body);
      fragments.push_back(std::move(piece));
    }

  for (Operation &op : step.getBody().front().without_terminator()) {
    std::optional<int64_t> stage = stageOf(&op);
    StringRef phase = phaseOf(&op);
    if (!stage && phase.empty())
      continue; // a constant: made where it is used
    if (!stage || *stage >= stages || phase.empty())
      return op.emitError("dist-pipeline-split: the op has no valid "
                          "dist.stage and dist.phase (run "
                          "dist-pipeline-stages first)");
    PhaseIndex index = phase == "forward"    ? Forward
                       : phase == "backward" ? Backward
                                             : Update;
    Fragment &into = fragment(*stage, index);
    if (index != Update && isBatchCollective(&op)) {
      FailureOr<bool> whole = overWholeBatch(into, op);
      if (failed(whole))
        return failure();
      if (*whole) {
        placed[&op] = &into;
        continue;
      }
    }
    for (Value operand : op.getOperands())
      if (failed(get(into, operand)))
        return failure();
    cloneUnmarked(into.builder, op, into.mapping);
    placed[&op] = &into;
  }
  if (failed(splitResults()))
    return failure();
  finish();
  return checkSchedule();
}

/// The step's results come from the update fragments: a parameter from its
/// stage's, and from every other stage that reads it (each keeps a copy).
LogicalResult Splitter::splitResults() {
  auto returnOp = cast<func::ReturnOp>(step.getBody().front().back());
  for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
    NamedAttrList attrs(step.getResultAttrDict(index));
    attrs.erase(TrnDialect::getAliasesAttrName());
    DictionaryAttr dict = attrs.getDictionary(step.getContext());
    Attribute resultPort = port("result", int64_t(index));
    Operation *def = value.getDefiningOp();
    auto it = def ? placed.find(def) : placed.end();
    int64_t home = 0;
    if (auto argument = dyn_cast<BlockArgument>(value)) {
      if (auto stage = step.getArgAttrOfType<IntegerAttr>(
              argument.getArgNumber(), dist::DistDialect::getStageAttrName()))
        home = stage.getInt();
    } else if (it != placed.end()) {
      home = it->second->stage;
      if (it->second->perMicrobatch()) {
        auto sharding = step.getResultAttrOfType<dist::ShardingAttr>(
            index, dist::DistDialect::getShardingAttrName());
        bool perExample = false;
        for (unsigned dim = 0; sharding && dim < sharding.getDims().size();
             ++dim)
          perExample |= llvm::is_contained(sharding.axesOf(dim), kBatchAxis);
        if (perExample && microbatches > 1)
          return mlir::emitError(step.getLoc())
                 << "result " << index
                 << " is computed per example; a step split into "
                    "microbatches returns only values reduced over the batch";
      }
    }
    Fragment &owner = fragment(home, Update);
    FailureOr<Value> local = get(owner, value);
    if (failed(local))
      return failure();
    addResult(owner, *local, resultPort, dict);
    // In-place updates: every stage that reads the parameter returns it.
    auto aliased = step.getResultAttrOfType<IntegerAttr>(
        index, TrnDialect::getAliasesAttrName());
    if (!aliased)
      continue;
    Value parameter = step.getArgument(aliased.getInt());
    for (int64_t s = 0; s < stages; ++s) {
      if (s == home)
        continue;
      bool reads = false;
      for (PhaseIndex phase : {Forward, Backward, Update})
        reads |= fragment(s, phase).mapping.contains(parameter);
      if (!reads)
        continue;
      Fragment &copy = fragment(s, Update);
      Value received = copy.mapping.lookupOrNull(value);
      if (!received) {
        received = transfer(owner, *local, copy, value.getLoc());
        copy.mapping.map(value, received);
      }
      addResult(copy, received, resultPort, dict);
    }
  }
  return success();
}

/// Return ops, signatures, attributes; an update result aliases the
/// argument it updates in place.
void Splitter::finish() {
  MLIRContext *context = step.getContext();
  auto pipelineRef = FlatSymbolRefAttr::get(step.getSymNameAttr());
  for (auto &piece : fragments) {
    Fragment &f = *piece;
    f.builder.create<func::ReturnOp>(step.getLoc(), f.results);
    Block &body = f.function.getBody().front();
    f.function.setFunctionType(FunctionType::get(
        context, body.getArgumentTypes(), ValueRange(f.results).getTypes()));
    for (unsigned i = 0; i < f.argPorts.size(); ++i) {
      NamedAttrList attrs(f.argAttrs[i]);
      attrs.set(dist::DistDialect::getPortAttrName(), f.argPorts[i]);
      f.function.setArgAttrs(i, attrs.getDictionary(context));
    }
    for (unsigned i = 0; i < f.resultPorts.size(); ++i) {
      NamedAttrList attrs(f.resultAttrs[i]);
      attrs.set(dist::DistDialect::getPortAttrName(), f.resultPorts[i]);
      auto resultPort = cast<dist::PortAttr>(f.resultPorts[i]);
      if (auto aliased =
              resultPort.getKind() == "result"
                  ? step.getResultAttrOfType<IntegerAttr>(
                        resultPort.getIndex(), TrnDialect::getAliasesAttrName())
                  : IntegerAttr()) {
        for (unsigned a = 0; a < f.argPorts.size(); ++a) {
          auto argPort = cast<dist::PortAttr>(f.argPorts[a]);
          if (argPort.getKind() == "argument" &&
              argPort.getIndex() == aliased.getInt())
            attrs.set(TrnDialect::getAliasesAttrName(),
                      IntegerAttr::get(aliased.getType(), a));
        }
      }
      // An accumulator is updated in place too.
      if (resultPort.getKind() == "accumulator")
        for (unsigned a = 0; a < f.argPorts.size(); ++a)
          if (f.argPorts[a] == f.resultPorts[i])
            attrs.set(TrnDialect::getAliasesAttrName(),
                      IntegerAttr::get(IntegerType::get(context, 64), a));
      f.function.setResultAttrs(i, attrs.getDictionary(context));
    }
    f.function->setAttr(dist::DistDialect::getPipelineAttrName(), pipelineRef);
    f.function->setAttr(
        dist::DistDialect::getStageAttrName(),
        IntegerAttr::get(IntegerType::get(context, 64), f.stage));
    f.function->setAttr(dist::DistDialect::getPhaseAttrName(),
                        StringAttr::get(context, kPhaseNames[f.phase]));
    for (StringRef name : {dist::DistDialect::getSpmdAttrName(),
                           dist::DistDialect::getReplicaAxesAttrName()})
      if (Attribute attr = step->getAttr(name))
        f.function->setAttr(name, attr);
  }

  // The step as callers see it: per-example arguments hold every
  // microbatch.
  SmallVector<Type> inputs;
  SmallVector<Attribute> argAttrs, resAttrs;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    Type type = step.getArgumentTypes()[i];
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (isPerExampleArgument(step, i) && tensor && tensor.getRank() > 0) {
      SmallVector<int64_t> shape(tensor.getShape());
      shape[0] *= microbatches;
      type = tensor.clone(shape);
    }
    inputs.push_back(type);
    argAttrs.push_back(stepArgAttrs(i));
  }
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    resAttrs.push_back(step.getResultAttrDict(i)
                           ? Attribute(step.getResultAttrDict(i))
                           : DictionaryAttr::get(context));
  OpBuilder builder(step);
  builder.create<dist::PipelineOp>(
      step.getLoc(), step.getSymNameAttr(),
      FlatSymbolRefAttr::get(mesh.getSymNameAttr()),
      builder.getStringAttr(kPipelineAxis),
      builder.getI64IntegerAttr(microbatches),
      builder.getStringAttr(trnrt::pipelineScheduleName(schedule)),
      TypeAttr::get(FunctionType::get(context, inputs, step.getResultTypes())),
      builder.getArrayAttr(argAttrs), builder.getArrayAttr(resAttrs));
}

/// Runs every stage's order of fragments with each fragment waiting for the
/// fragments it receives from (per microbatch, or the update after every
/// microbatch): the transfers must fit the schedule, or the job would hang.
LogicalResult Splitter::checkSchedule() {
  // waitsFor[stage][phase] = the (stage, phase) fragments it receives from.
  std::vector<std::vector<llvm::SmallVector<std::pair<int64_t, int>>>> waitsFor(
      stages, std::vector<llvm::SmallVector<std::pair<int64_t, int>>>(3));
  for (const Transfer &t : transfers)
    if (t.fromPhase != Update && t.toPhase != Update)
      waitsFor[t.toStage][t.toPhase].push_back({t.fromStage, t.fromPhase});
  std::vector<std::vector<trnrt::PipelineAction>> orders;
  for (int64_t s = 0; s < stages; ++s)
    orders.push_back(
        trnrt::pipelineStageOrder(schedule, stages, s, microbatches));
  // done[stage][phase][microbatch]
  std::vector<std::vector<std::vector<bool>>> done(
      stages, std::vector<std::vector<bool>>(
                  2, std::vector<bool>(microbatches, false)));
  std::vector<size_t> next(stages, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < stages; ++s)
      for (; next[s] < orders[s].size(); ++next[s]) {
        const trnrt::PipelineAction &action = orders[s][next[s]];
        int phase = action.backward ? Backward : Forward;
        bool ready = !action.backward || done[s][Forward][action.microbatch];
        for (auto [fromStage, fromPhase] : waitsFor[s][phase])
          ready &= done[fromStage][fromPhase][action.microbatch];
        if (!ready)
          break;
        done[s][phase][action.microbatch] = true;
        progress = true;
      }
  }
  for (int64_t s = 0; s < stages; ++s)
    if (next[s] < orders[s].size()) {
      const trnrt::PipelineAction &action = orders[s][next[s]];
      return mlir::emitError(step.getLoc())
             << "the stages' transfers do not fit the "
             << trnrt::pipelineScheduleName(schedule) << " schedule: stage "
             << s << " would wait forever before the "
             << (action.backward ? "backward" : "forward") << " of microbatch "
             << action.microbatch;
    }
  return success();
}

struct DistPipelineSplitPass
    : public partition::impl::DistPipelineSplitBase<DistPipelineSplitPass> {
  using DistPipelineSplitBase::DistPipelineSplitBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    trnrt::PipelineSchedule kind;
    if (!trnrt::parsePipelineSchedule(schedule, kind)) {
      mlir::emitError(module.getLoc())
          << "unknown pipeline schedule '" << schedule
          << "' (expected gpipe or 1f1b)";
      return signalPassFailure();
    }
    if (microbatches < 1) {
      mlir::emitError(module.getLoc())
          << "microbatches=" << int64_t(microbatches) << " must be at least 1";
      return signalPassFailure();
    }
    auto meshes = llvm::to_vector(module.getOps<dist::MeshOp>());
    if (meshes.size() != 1 || !meshes.front().sizeOf(kPipelineAxis)) {
      mlir::emitError(module.getLoc(),
                      "dist-pipeline-split needs a mesh with a pp axis "
                      "(run dist-pipeline-stages first)");
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> steps;
    for (func::FuncOp function : module.getOps<func::FuncOp>())
      if (!function.isExternal() &&
          !function->hasAttr(dist::DistDialect::getPipelineAttrName()))
        steps.push_back(function);
    for (func::FuncOp step : steps) {
      if (failed(Splitter(step, meshes.front(), microbatches, kind, recompute)
                     .run()))
        return signalPassFailure();
      step.erase();
    }
  }
};

} // namespace
