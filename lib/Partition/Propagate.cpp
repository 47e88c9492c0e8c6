//===- Propagate.cpp - dist-propagate: shardings through a step graph -----===//
//
// Each value's sharding is a list of mesh axes per dimension plus partial
// axes. An op's factor rule turns the shardings its tensors have into
// shardings of its factors (which axes split each factor), and those back
// into shardings of the tensors that have none yet, or a coarser one.
//
//===----------------------------------------------------------------------===//

#include "trn/Partition/Passes.h"

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnDialect.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Partition/ShardingRule.h"

#include "Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::trn::partition {
#define GEN_PASS_DEF_DISTPROPAGATE
#include "trn/Partition/Passes.h.inc"
} // namespace mlir::trn::partition

using namespace mlir;
using namespace mlir::trn;
using namespace mlir::trn::partition;
using dist::ShardingAttr;

namespace {

int64_t numElements(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.hasStaticShape() ? type.getNumElements() : 0;
}

class Propagator {
public:
  Propagator(func::FuncOp function, dist::MeshOp mesh, bool zero1)
      : function(function), mesh(mesh), zero1(zero1) {}

  LogicalResult run();

private:
  bool known(Value value) const { return state.count(value); }
  /// An axis's size in the factor arithmetic: a replica axis splits
  /// nothing (1).
  int64_t sizeOf(StringAttr axis) {
    if (dist::isReplicaAxis(mesh, axis.getValue()))
      return 1;
    return mesh.sizeOf(axis.getValue()).value_or(1);
  }
  /// Sets a value's sharding if it has none or this one refines it; never
  /// changes a fixed one. Returns whether it changed.
  bool offer(Value value, const Sharding &sharding);
  bool applyRule(Operation *op);
  /// How firmly a value's sharding is given: 2 for a fixed argument (a
  /// weight's seed, the user's), also seen through the transposes,
  /// reshapes and casts that only move or convert it (`x @ W^T`); 1 for
  /// another fixed value (a constraint); 0 when derived.
  int strengthOf(Value value) const;
  void annotate();

  /// Splits every optimizer state over dp (ZeRO-1); true if any was.
  bool splitOptimizerStates(ArrayRef<std::pair<Value, Value>> ties);

  func::FuncOp function;
  dist::MeshOp mesh;
  bool zero1;
  llvm::DenseMap<Value, Sharding> state;
  llvm::DenseSet<Value> fixed;
};

bool Propagator::offer(Value value, const Sharding &sharding) {
  if (fixed.contains(value))
    return false;
  auto it = state.find(value);
  if (it == state.end()) {
    state[value] = sharding;
    return true;
  }
  // A weight seen through a transpose or cast keeps the weight's split (a
  // weight pinned whole stays whole in `x @ W^T`).
  if (sharding.refines(it->second) && strengthOf(value) < 2) {
    it->second = sharding;
    return true;
  }
  return false;
}

int Propagator::strengthOf(Value value) const {
  for (int depth = 0; depth < 8; ++depth) {
    if (fixed.contains(value))
      return isa<BlockArgument>(value) ? 2 : 1;
    Operation *op = value.getDefiningOp();
    if (!isa_and_nonnull<TransposeOp, ReshapeOp, ConvertOp>(op))
      return 0;
    value = op->getOperand(0);
  }
  return 0;
}

bool Propagator::applyRule(Operation *op) {
  if (auto constraint = dyn_cast<dist::ShardingConstraintOp>(op)) {
    // The constraint's result is fixed; its operand is only a hint.
    auto it = state.find(constraint.getResult());
    return it != state.end() && offer(constraint.getInput(), it->second);
  }
  std::optional<ShardingRule> rule = getShardingRule(op);
  if (!rule)
    return false;

  // Candidate shares of each factor from every tensor with a sharding.
  struct Candidate {
    FactorSharding share;
    /// 2: a fixed argument's (a weight's seed or the user's), 1: another
    /// fixed value's (a constraint's), 0: derived.
    int strength;
    int64_t elements;
    size_t factor;
  };
  auto axisSize = [&](StringAttr axis) { return sizeOf(axis); };
  SmallVector<SmallVector<Candidate>> candidates(rule->factors.size());
  auto collect = [&](Value value, const ShardingRule::TensorFactors &dims) {
    auto it = state.find(value);
    if (it == state.end() || isRematerializable(value))
      return;
    SmallVector<std::optional<FactorSharding>> shares;
    factorShardingsOf(it->second, dims, *rule, axisSize, shares);
    for (auto [factor, share] : llvm::enumerate(shares))
      if (share)
        candidates[factor].push_back(
            {*share, strengthOf(value), numElements(value), factor});
  };
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    collect(operand, rule->operands[index]);
  for (auto [index, result] : llvm::enumerate(op->getResults()))
    collect(result, rule->results[index]);

  // Choose per factor: a fixed argument's share (Megatron keeps weights
  // split), else a constraint's, else the one with the most axes, else the
  // largest tensor's.
  SmallVector<FactorSharding> chosen(rule->factors.size());
  SmallVector<const Candidate *> best(rule->factors.size(), nullptr);
  // Between equals, a parallel factor's split beats a reduction factor's:
  // it leaves no pending sum to reduce (a weight gradient split like its
  // weight rather than summed over split tokens).
  auto key = [&](const Candidate *c) {
    return std::make_tuple(
        c->strength, rule->factors[c->factor].kind == FactorKind::Parallel,
        c->share.axes.size(), c->elements);
  };
  for (auto [factor, options] : llvm::enumerate(candidates)) {
    if (options.empty() || rule->factors[factor].kind == FactorKind::Replicated)
      continue;
    for (const Candidate &option : options)
      if (!best[factor] || key(&option) > key(best[factor]))
        best[factor] = &option;
  }
  // An axis splits at most one factor of an op: the factors claim their
  // axes strongest candidate first, so when a weight and an activation both
  // want tp (a column-parallel matmul on a sequence-split input), the
  // weight keeps it and the activation is gathered.
  SmallVector<size_t> order;
  for (size_t factor = 0; factor < best.size(); ++factor)
    if (best[factor])
      order.push_back(factor);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return key(best[a]) > key(best[b]);
  });
  llvm::DenseSet<StringAttr> used;
  for (size_t factor : order) {
    for (StringAttr axis : best[factor]->share.axes) {
      if (used.contains(axis))
        break;
      used.insert(axis);
      chosen[factor].axes.push_back(axis);
    }
    if (!chosen[factor].axes.empty())
      chosen[factor].blocks = best[factor]->share.blocks;
  }
  // Only splits a dimension can hold.
  while (legalizeFactors(rule->operands, *rule, axisSize, chosen) ||
         legalizeFactors(rule->results, *rule, axisSize, chosen)) {
  }

  auto shardingOf = [&](const ShardingRule::TensorFactors &dims,
                        bool isResult) {
    Sharding sharding = shardingFromFactors(dims, *rule, chosen);
    if (isResult) {
      llvm::DenseSet<int64_t> present;
      for (const auto &factors : dims)
        present.insert(factors.begin(), factors.end());
      for (auto [factor, info] : llvm::enumerate(rule->factors))
        if (info.kind == FactorKind::Reduction && !present.contains(factor))
          llvm::append_range(sharding.partial, chosen[factor].axes);
    }
    return sharding;
  };
  bool changed = false;
  // A result no factor splits yet is left unknown rather than fixed whole:
  // a sum over the batch reached from its user first (a bias gradient)
  // must still become pending over dp when its operand's split arrives.
  for (auto [index, result] : llvm::enumerate(op->getResults()))
    if (Sharding sharding = shardingOf(rule->results[index], true);
        sharding.axisCount())
      changed |= offer(result, sharding);
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    // Backward: a value with no sharding takes the use's; one with a
    // sharding only a finer one (offer refuses anything else, so sweeps
    // settle). dist-spmd computes a split it cannot express whole.
    Sharding wanted = shardingOf(rule->operands[index], false);
    // A pending sum may still be split finer (an embedding gradient summed
    // over dp and split over tp by its tied LM head's): the use asks for
    // its dims, the sum stays pending.
    if (auto it = state.find(operand); it != state.end() &&
                                       !it->second.partial.empty() &&
                                       wanted.partial.empty()) {
      bool disjoint = true;
      for (StringAttr axis : it->second.partial)
        for (const auto &axes : wanted.dims)
          disjoint &= !llvm::is_contained(axes, axis);
      if (disjoint)
        wanted.partial = it->second.partial;
    }
    if (wanted.axisCount())
      changed |= offer(operand, wanted);
  }
  return changed;
}

LogicalResult Propagator::run() {
  MLIRContext *context = function.getContext();
  StringRef attrName = dist::DistDialect::getShardingAttrName();
  // Seeds: arguments, constraints, results.
  for (BlockArgument argument : function.getArguments())
    if (auto attr = function.getArgAttrOfType<ShardingAttr>(
            argument.getArgNumber(), attrName)) {
      state[argument] = Sharding::fromAttr(attr);
      fixed.insert(argument);
    }
  function.walk([&](dist::ShardingConstraintOp op) {
    state[op.getResult()] = Sharding::fromAttr(op.getSharding());
    fixed.insert(op.getResult());
  });
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    // The new value of an input updated in place (a parameter, an optimizer
    // state) keeps the input's sharding: one buffer holds both.
    if (auto alias = function.getResultAttrOfType<IntegerAttr>(
            index, TrnDialect::getAliasesAttrName()))
      if (auto attr = function.getArgAttrOfType<ShardingAttr>(alias.getInt(),
                                                              attrName)) {
        if (!fixed.contains(value)) {
          state[value] = Sharding::fromAttr(attr);
          fixed.insert(value);
        }
        continue;
      }
    if (auto attr = function.getResultAttrOfType<ShardingAttr>(index, attrName))
      if (!fixed.contains(value))
        state[value] = Sharding::fromAttr(attr);
  }
  (void)context;

  // Sweep forward and backward until nothing changes.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  // In-place updates: the input and its new value share one buffer, so
  // whichever gets a sharding first gives it to the other.
  SmallVector<std::pair<Value, Value>> ties;
  for (auto [index, value] : llvm::enumerate(ret.getOperands()))
    if (auto alias = function.getResultAttrOfType<IntegerAttr>(
            index, TrnDialect::getAliasesAttrName()))
      if (alias.getInt() >= 0 &&
          alias.getInt() < int64_t(function.getNumArguments()))
        ties.push_back({function.getArgument(alias.getInt()), value});
  auto tie = [&] {
    bool changed = false;
    for (auto [input, update] : ties) {
      if (auto it = state.find(input); it != state.end()) {
        Sharding sharding = it->second;
        changed |= offer(update, sharding);
      }
      if (auto it = state.find(update); it != state.end()) {
        Sharding sharding = it->second;
        changed |= offer(input, sharding);
      }
    }
    return changed;
  };
  auto settle = [&] {
    for (int sweep = 0; sweep < 16; ++sweep) {
      bool changed = tie();
      for (Operation *op : ops)
        changed |= applyRule(op);
      for (Operation *op : llvm::reverse(ops))
        changed |= applyRule(op);
      if (!changed)
        break;
    }
  };
  settle();
  if (zero1 && splitOptimizerStates(ties))
    settle();
  annotate();
  return success();
}

bool Propagator::splitOptimizerStates(ArrayRef<std::pair<Value, Value>> ties) {
  std::optional<int64_t> dp = mesh.sizeOf("dp");
  if (!dp || *dp < 2)
    return false;
  auto dpAxis = StringAttr::get(function.getContext(), "dp");
  bool any = false;
  for (BlockArgument argument : function.getArguments()) {
    auto role = function.getArgAttrOfType<StringAttr>(
        argument.getArgNumber(), TrnDialect::getRoleAttrName());
    auto type = cast<RankedTensorType>(argument.getType());
    if (!role || role.getValue() != "optimizer_state" || type.getRank() == 0)
      continue;
    Sharding sharding;
    if (auto it = state.find(argument); it != state.end())
      sharding = it->second;
    else
      sharding.dims.resize(type.getRank());
    bool usesDp = llvm::is_contained(sharding.partial, dpAxis);
    for (const Axes &axes : sharding.dims)
      usesDp |= llvm::is_contained(axes, dpAxis);
    if (usesDp)
      continue;
    for (auto [dim, axes] : llvm::enumerate(sharding.dims)) {
      int64_t parts = *dp;
      for (StringAttr axis : axes)
        parts *= sizeOf(axis);
      if (type.isDynamicDim(dim) ||
          (type.getDimSize(dim) / sharding.blocksOf(dim)) % parts != 0)
        continue;
      axes.push_back(dpAxis);
      state[argument] = sharding;
      fixed.insert(argument);
      // Its new value is the same buffer.
      for (auto [input, update] : ties)
        if (input == argument) {
          state[update] = sharding;
          fixed.insert(update);
        }
      any = true;
      break;
    }
  }
  return any;
}

void Propagator::annotate() {
  MLIRContext *context = function.getContext();
  StringRef attrName = dist::DistDialect::getShardingAttrName();
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  auto replicated = [&](Value value) {
    Sharding sharding;
    sharding.dims.resize(cast<RankedTensorType>(value.getType()).getRank());
    return sharding;
  };
  auto shardingOf = [&](Value value) {
    auto it = state.find(value);
    return it == state.end() ? replicated(value) : it->second;
  };
  Block &body = function.getBody().front();
  for (Operation &op : body.without_terminator()) {
    if (op.getNumResults() == 0 ||
        !llvm::all_of(op.getResultTypes(),
                      [](Type type) { return isa<RankedTensorType>(type); }))
      continue;
    if (isa<dist::ShardingConstraintOp>(op))
      continue; // it carries its sharding already
    SmallVector<Attribute> shardings;
    for (Value result : op.getResults())
      shardings.push_back(shardingOf(result).toAttr(context, meshRef));
    op.setAttr(attrName, ArrayAttr::get(context, shardings));
  }
  for (BlockArgument argument : function.getArguments())
    if (isa<RankedTensorType>(argument.getType()) &&
        !function.getArgAttr(argument.getArgNumber(), attrName))
      function.setArgAttr(argument.getArgNumber(), attrName,
                          shardingOf(argument).toAttr(context, meshRef));
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [index, value] : llvm::enumerate(ret.getOperands()))
    if (isa<RankedTensorType>(value.getType()) &&
        !function.getResultAttr(index, attrName))
      function.setResultAttr(index, attrName,
                             shardingOf(value).toAttr(context, meshRef));
}

struct DistPropagatePass
    : mlir::trn::partition::impl::DistPropagateBase<DistPropagatePass> {
  using DistPropagateBase::DistPropagateBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<dist::MeshOp> meshes(module.getOps<dist::MeshOp>());
    if (meshes.empty())
      return; // nothing to partition
    if (meshes.size() > 1) {
      meshes[1].emitError("dist-propagate handles one mesh per module; ")
          << "this one is the second";
      return signalPassFailure();
    }
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isExternal() || !function.getBody().hasOneBlock())
        continue;
      if (failed(Propagator(function, meshes.front(), zero1).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
