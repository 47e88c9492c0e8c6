//===- Spmd.cpp - dist-spmd: one program for every rank -------------------===//
//
// Rewrites a function whose values all carry shardings (dist-propagate's
// output) into the program each rank runs: every value takes its local shape
// and, where a use wants another sharding than its value has, collectives
// move it there: pending partial sums are all-reduced, dimensions split on
// axes the use does not want are all-gathered, dimensions the use wants
// split further are sliced locally. Function results are complete values
// (no pending sums). The rewrite is in place: ops keep their attributes
// (shardings never split a dimension an op's attributes count, by the rules)
// and only their types change.
//
//===----------------------------------------------------------------------===//

#include "trn/Partition/Passes.h"

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Partition/ShardingRule.h"

#include "Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::trn::partition {
#define GEN_PASS_DEF_DISTSPMD
#include "trn/Partition/Passes.h.inc"
} // namespace mlir::trn::partition

using namespace mlir;
using namespace mlir::trn;
using namespace mlir::trn::partition;

namespace {

/// "argument 4 ('blocks.0.mlp.fc.weight')", or without the name if it has
/// none.
std::string argumentName(func::FuncOp function, unsigned index) {
  std::string text = "argument " + std::to_string(index);
  if (auto name = function.getArgAttrOfType<StringAttr>(
          index, TrnDialect::getNameAttrName()))
    text += " ('" + name.getValue().str() + "')";
  return text;
}

/// An integer sum averaged over replicas (the count of a cross-entropy's
/// labels not ignored, summed in int64 by PyTorch's decomposition) has no
/// exact integer mean: the mean is taken in f32 when every use converts it
/// to a float anyway (exact for counts below 2^24), and is an error naming
/// the value otherwise.
LogicalResult averageCountsInFloat(func::FuncOp function) {
  SmallVector<dist::AllReduceOp> integerMeans;
  function.walk([&](dist::AllReduceOp op) {
    if (op.getReduction() == dist::ReductionKind::mean &&
        isa<IntegerType>(getElementTypeOrSelf(op.getType())))
      integerMeans.push_back(op);
  });
  for (dist::AllReduceOp op : integerMeans) {
    auto type = cast<RankedTensorType>(op.getType());
    if (!llvm::all_of(op->getUsers(), [](Operation *user) {
          return isa<ConvertOp>(user) &&
                 isa<FloatType>(getElementTypeOrSelf(user->getResult(0)));
        }))
      return (op.getInput().getDefiningOp() ? op.getInput().getDefiningOp()
                                            : op.getOperation())
                 ->emitError()
             << "an integer value summed over the batch (" << type
             << ") is averaged over the data-parallel replicas, which has no "
                "exact integer result; convert it to a float type before "
                "using it";
    OpBuilder builder(op);
    auto f32 = type.clone(builder.getF32Type());
    Value widened = builder.create<ConvertOp>(op.getLoc(), f32, op.getInput());
    auto mean = builder.create<dist::AllReduceOp>(
        op.getLoc(), f32, widened, op.getMeshAttr(), op.getAxesAttr(),
        op.getReductionAttr());
    for (Operation *user : llvm::make_early_inc_range(op->getUsers())) {
      Value result = mean.getResult();
      if (user->getResult(0).getType() != f32) {
        builder.setInsertionPoint(user);
        result = builder.create<ConvertOp>(
            user->getLoc(), user->getResult(0).getType(), result);
      }
      user->getResult(0).replaceAllUsesWith(result);
      user->erase();
    }
    op.erase();
  }
  return success();
}

class Partitioner {
public:
  Partitioner(func::FuncOp function, dist::MeshOp mesh, bool dpReplicas)
      : function(function), mesh(mesh),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())) {
    // A dp of size 1 has no replicas to average over: not a replica axis.
    if ((dpReplicas || dist::isReplicaAxis(mesh, "dp")) &&
        mesh.sizeOf("dp").value_or(1) > 1)
      replicaAxes.insert(StringAttr::get(function.getContext(), "dp"));
  }

  LogicalResult run();

private:
  /// A replica axis splits nothing: in the factor arithmetic it has size 1
  /// (a merged [B*S] split over (dp, tp) is then read as tp splitting it,
  /// as the local shapes are).
  int64_t sizeOf(StringAttr axis) {
    if (replicaAxes.contains(axis))
      return 1;
    return mesh.sizeOf(axis.getValue()).value_or(1);
  }
  /// How many times smaller a dimension split over `axes` is locally: the
  /// replica axes (dp of a program that is one replica's step) split
  /// nothing, the batch of the traced graph is already one replica's.
  int64_t shapeProduct(ArrayRef<StringAttr> axes) {
    int64_t size = 1;
    for (StringAttr axis : axes)
      if (!replicaAxes.contains(axis))
        size *= sizeOf(axis);
    return size;
  }
  int64_t product(ArrayRef<StringAttr> axes) {
    int64_t size = 1;
    for (StringAttr axis : axes)
      size *= sizeOf(axis);
    return size;
  }
  ArrayAttr axesAttr(ArrayRef<StringAttr> axes) {
    SmallVector<Attribute> names(axes.begin(), axes.end());
    return ArrayAttr::get(function.getContext(), names);
  }
  Sharding replicated(Type type) {
    Sharding sharding;
    sharding.dims.resize(cast<RankedTensorType>(type).getRank());
    return sharding;
  }
  /// The local type of a global tensor type under `sharding`.
  FailureOr<RankedTensorType> localType(Operation *where, StringRef what,
                                        RankedTensorType global,
                                        const Sharding &sharding);
  /// Moves `value` (local, sharded `from`) to the sharding `to`.
  FailureOr<Value> reshard(OpBuilder &builder, Location loc, Value value,
                           const Sharding &from, const Sharding &to);
  /// What `op` wants of each operand, from its result shardings and rule;
  /// `actualResults` gets what the op then really computes (a reduction
  /// factor split over axes makes every result without it a partial sum
  /// over them, whatever the annotation says).
  SmallVector<Sharding>
  wantedOperands(Operation *op, ArrayRef<Sharding> results,
                 SmallVectorImpl<Sharding> &actualResults);
  LogicalResult partitionOp(Operation *op);

  func::FuncOp function;
  dist::MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  /// The current sharding of every value of the function.
  llvm::DenseMap<Value, Sharding> current;
  /// Reshards already made: (value, target sharding) -> moved value. A
  /// reshard is inserted before its value's first use that wants it, which
  /// dominates the later ones (ops are visited in program order).
  llvm::DenseMap<std::pair<Value, Attribute>, Value> reshards;
  /// Every op's factor rule, taken before any type changes (rules read the
  /// global shapes).
  llvm::DenseMap<Operation *, std::optional<ShardingRule>> rules;
  /// Every op result's global type (rematerialized values are remade at
  /// the local shape of another sharding).
  llvm::DenseMap<Value, Type> globalTypes;
  /// Axes whose replicas each run the whole traced batch (see shapeProduct).
  llvm::DenseSet<StringAttr> replicaAxes;
};

FailureOr<RankedTensorType> Partitioner::localType(Operation *where,
                                                   StringRef what,
                                                   RankedTensorType global,
                                                   const Sharding &sharding) {
  SmallVector<int64_t> shape(global.getShape());
  for (auto [dim, axes] : llvm::enumerate(sharding.dims)) {
    int64_t parts = shapeProduct(axes);
    if (parts == 1)
      continue;
    int64_t blocks = sharding.blocksOf(dim);
    if (ShapedType::isDynamic(shape[dim]) || shape[dim] % blocks != 0 ||
        (shape[dim] / blocks) % parts != 0) {
      std::string names;
      for (StringAttr axis : axes)
        names += (names.empty() ? "" : "x") + axis.getValue().str();
      return where->emitError() << what << " dimension " << dim << " (size "
                                << shape[dim] << ") is not divisible by the "
                                << parts << " devices of " << names;
    }
    shape[dim] /= parts;
  }
  return RankedTensorType::get(shape, global.getElementType());
}

/// Applies `collective` to dimension `dim` of `value`, seen as `blocks`
/// blocks when it is split block-wise: the blocks become a dimension of
/// their own for the collective, which then acts on each block alike.
static Value alongBlocks(OpBuilder &builder, Location loc, Value value,
                         unsigned dim, int64_t blocks,
                         function_ref<Value(Value, unsigned)> collective) {
  if (blocks == 1)
    return collective(value, dim);
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> split(type.getShape());
  split[dim] /= blocks;
  split.insert(split.begin() + dim, blocks);
  Value blocked = builder.create<ReshapeOp>(
      loc, RankedTensorType::get(split, type.getElementType()), value);
  Value moved = collective(blocked, dim + 1);
  SmallVector<int64_t> merged(
      cast<RankedTensorType>(moved.getType()).getShape());
  merged[dim] *= merged[dim + 1];
  merged.erase(merged.begin() + dim + 1);
  return builder.create<ReshapeOp>(
      loc, RankedTensorType::get(merged, type.getElementType()), moved);
}

static RankedTensorType withDim(Value value, unsigned dim, int64_t size) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return RankedTensorType::get(shape, type.getElementType());
}

FailureOr<Value> Partitioner::reshard(OpBuilder &builder, Location loc,
                                      Value value, const Sharding &from,
                                      const Sharding &to) {
  Sharding now = from;
  now.blocks.resize(now.dims.size(), 1);
  auto dimSize = [&](unsigned dim) {
    return cast<RankedTensorType>(value.getType()).getDimSize(dim);
  };
  // Splits of one dimension in other blocks share nothing.
  auto sameBlocks = [&](unsigned dim) {
    return now.dims[dim].empty() || to.dims[dim].empty() ||
           now.blocksOf(dim) == to.blocksOf(dim);
  };
  // A pending sum over an axis the use wants as the next split of a
  // dimension: reduce-scatter along it (half the traffic of all-reduce and
  // no slice), ZeRO's gradient path.
  for (unsigned dim = 0; dim < now.dims.size(); ++dim) {
    Axes &have = now.dims[dim];
    const Axes &want = to.dims[dim];
    while (sameBlocks(dim) && have.size() < want.size() &&
           std::equal(have.begin(), have.end(), want.begin()) &&
           llvm::is_contained(now.partial, want[have.size()]) &&
           !llvm::is_contained(to.partial, want[have.size()])) {
      StringAttr axis = want[have.size()];
      if (replicaAxes.contains(axis))
        break;
      int64_t blocks = to.blocksOf(dim);
      if ((dimSize(dim) / blocks) % sizeOf(axis) != 0)
        break;
      value = alongBlocks(
          builder, loc, value, dim, blocks,
          [&](Value input, unsigned d) -> Value {
            auto type = cast<RankedTensorType>(input.getType());
            return builder.create<dist::ReduceScatterOp>(
                loc, withDim(input, d, type.getDimSize(d) / sizeOf(axis)),
                input, meshRef, axesAttr({axis}), builder.getI64IntegerAttr(d),
                dist::ReductionKindAttr::get(builder.getContext(),
                                             dist::ReductionKind::sum));
          });
      llvm::erase(now.partial, axis);
      have.push_back(axis);
      now.blocks[dim] = blocks;
    }
  }
  // Pending sums the use does not want pending: all-reduce them.
  SmallVector<StringAttr> reduce;
  for (StringAttr axis : now.partial)
    if (!llvm::is_contained(to.partial, axis))
      reduce.push_back(axis);
  // Over replica axes the replicas' sums are averaged: each replica's
  // graph already divides by its own batch (a mean loss), as DDP averages
  // gradients.
  SmallVector<StringAttr> summed, averaged;
  for (StringAttr axis : reduce)
    (replicaAxes.contains(axis) ? averaged : summed).push_back(axis);
  for (auto [axes, kind] :
       {std::make_pair(summed, dist::ReductionKind::sum),
        std::make_pair(averaged, dist::ReductionKind::mean)}) {
    if (axes.empty())
      continue;
    value = builder.create<dist::AllReduceOp>(
        loc, value.getType(), value, meshRef, axesAttr(axes),
        dist::ReductionKindAttr::get(builder.getContext(), kind));
  }
  if (!reduce.empty()) {
    llvm::erase_if(now.partial, [&](StringAttr axis) {
      return llvm::is_contained(reduce, axis);
    });
  }
  // Split axes beyond what the use shares: gather them back.
  for (unsigned dim = 0; dim < now.dims.size(); ++dim) {
    Axes &have = now.dims[dim];
    const Axes &want = to.dims[dim];
    size_t common = 0;
    if (sameBlocks(dim))
      while (common < have.size() && common < want.size() &&
             have[common] == want[common])
        ++common;
    if (common == have.size())
      continue;
    SmallVector<StringAttr> gather(have.begin() + common, have.end());
    // A replica axis splits no shape: each replica's value is its whole
    // value in the replica's step (as DDP computes), nothing to gather.
    llvm::erase_if(gather,
                   [&](StringAttr axis) { return replicaAxes.contains(axis); });
    // One axis at a time, the most minor first: a collective's axes are
    // bound in mesh order at run time, so several in another order would
    // mean another layout.
    for (StringAttr axis : llvm::reverse(gather))
      value = alongBlocks(
          builder, loc, value, dim, now.blocksOf(dim),
          [&](Value input, unsigned d) -> Value {
            auto type = cast<RankedTensorType>(input.getType());
            return builder.create<dist::AllGatherOp>(
                loc, withDim(input, d, type.getDimSize(d) * sizeOf(axis)),
                input, meshRef, axesAttr({axis}), builder.getI64IntegerAttr(d));
          });
    have.resize(common);
    if (have.empty())
      now.blocks[dim] = 1;
  }
  // Axes the use splits further: keep this rank's slice.
  for (unsigned dim = 0; dim < now.dims.size(); ++dim) {
    Axes &have = now.dims[dim];
    const Axes &want = to.dims[dim];
    if (have.size() == want.size())
      continue;
    SmallVector<StringAttr> slice(want.begin() + have.size(), want.end());
    llvm::erase_if(slice,
                   [&](StringAttr axis) { return replicaAxes.contains(axis); });
    int64_t parts = product(slice);
    int64_t blocks = to.blocksOf(dim);
    if (dimSize(dim) % blocks != 0 || (dimSize(dim) / blocks) % parts != 0)
      return emitError(loc)
             << "dimension " << dim << " (size " << dimSize(dim)
             << ") is not divisible by " << parts << " devices"
             << (blocks > 1
                     ? " in each of " + std::to_string(blocks) + " blocks"
                     : std::string());
    // One axis at a time, the most major first (see the gathers above).
    for (StringAttr axis : slice)
      value = alongBlocks(
          builder, loc, value, dim, blocks,
          [&](Value input, unsigned d) -> Value {
            auto type = cast<RankedTensorType>(input.getType());
            return builder.create<dist::AllSliceOp>(
                loc, withDim(input, d, type.getDimSize(d) / sizeOf(axis)),
                input, meshRef, axesAttr({axis}), builder.getI64IntegerAttr(d));
          });
    have = want;
    now.blocks[dim] = blocks;
  }
  return value;
}

SmallVector<Sharding>
Partitioner::wantedOperands(Operation *op, ArrayRef<Sharding> results,
                            SmallVectorImpl<Sharding> &actualResults) {
  SmallVector<Sharding> wanted;
  const std::optional<ShardingRule> &rule = rules[op];
  actualResults.assign(results.begin(), results.end());
  if (!rule) {
    // An op without a rule computes on whole tensors: its results are whole
    // whatever an annotation refined from their users says.
    for (Value operand : op->getOperands())
      wanted.push_back(replicated(operand.getType()));
    for (auto [index, result] : llvm::enumerate(actualResults))
      result = replicated(op->getResult(index).getType());
    return wanted;
  }
  // The factors' shares, read back from the results: parallel factors
  // from their dimensions, reduction factors from the pending sums.
  auto axisSize = [&](StringAttr axis) { return sizeOf(axis); };
  SmallVector<FactorSharding> factors(rule->factors.size());
  SmallVector<bool> seen(rule->factors.size(), false);
  for (auto [index, sharding] : llvm::enumerate(results)) {
    SmallVector<std::optional<FactorSharding>> shares;
    factorShardingsOf(sharding, rule->results[index], *rule, axisSize, shares);
    for (auto [factor, share] : llvm::enumerate(shares))
      if (share && !seen[factor]) {
        factors[factor] = *share;
        seen[factor] = true;
      }
  }
  // A reduction factor no result has: its axes are the pending sums (of
  // the results that have them), given to the factor an operand already
  // splits over them (a sum over every dimension of a column-split
  // gradient: no reshard), else to the first such factor.
  Axes partial;
  for (const Sharding &sharding : results)
    if (!sharding.partial.empty()) {
      partial = sharding.partial;
      break;
    }
  // Each factor's share in every operand that has a sharding.
  SmallVector<SmallVector<std::optional<FactorSharding>>> operandShares;
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    if (auto it = current.find(operand); it != current.end())
      factorShardingsOf(it->second, rule->operands[index], *rule, axisSize,
                        operandShares.emplace_back());
  std::optional<size_t> pendingFactor;
  std::optional<FactorSharding> operandShare;
  for (auto [factor, info] : llvm::enumerate(rule->factors)) {
    if (info.kind != FactorKind::Reduction || seen[factor])
      continue;
    if (!pendingFactor)
      pendingFactor = factor;
    if (partial.empty())
      break;
    for (const auto &shares : operandShares)
      if (shares[factor] && shares[factor]->axes == partial) {
        pendingFactor = factor;
        // Its blocks (any layout sums the same, as long as the operands
        // agree): those the operand already has.
        operandShare = shares[factor];
        break;
      }
    if (operandShare)
      break;
  }
  // No one factor has them all: a sum over several dims of an operand
  // split over different axes on each (the batch over dp and the sequence
  // over tp, a norm weight's gradient under sequence parallelism) keeps
  // each axis on the factor that has it. Given to one factor, the split
  // could not hold them (a batch of 2 over tp = 4), legalization dropped
  // them all, and the sum over dp was lost.
  SmallVector<std::pair<size_t, FactorSharding>> perAxis;
  if (!operandShare && partial.size() > 1) {
    Axes placed;
    for (auto [factor, info] : llvm::enumerate(rule->factors)) {
      if (info.kind != FactorKind::Reduction || seen[factor])
        continue;
      for (const auto &shares : operandShares) {
        const std::optional<FactorSharding> &share = shares[factor];
        if (!share || share->axes.empty() ||
            !llvm::all_of(share->axes, [&](StringAttr axis) {
              return llvm::is_contained(partial, axis) &&
                     !llvm::is_contained(placed, axis);
            }))
          continue;
        llvm::append_range(placed, share->axes);
        perAxis.push_back({factor, *share});
        break;
      }
    }
    if (placed.size() != partial.size())
      perAxis.clear();
  }
  if (!perAxis.empty()) {
    for (auto &[factor, share] : perAxis)
      factors[factor] = share;
  } else if (pendingFactor) {
    factors[*pendingFactor].axes = partial;
    if (operandShare)
      factors[*pendingFactor].blocks = operandShare->blocks;
  }
  // A factor the op needs whole (an indexed dimension, a softmax's) is
  // computed whole whatever a refined annotation says; a split a dimension
  // cannot hold (the heads of [B*H] split while B is split too) is
  // computed whole: the op gathers it and its users slice again.
  for (auto [factor, info] : llvm::enumerate(rule->factors))
    if (info.kind == FactorKind::Replicated)
      factors[factor] = FactorSharding();
  // A mean cross-entropy divides by the count of all its rows: their split
  // is kept only over replica axes (one replica's mean, averaged as DDP).
  auto reduction = op->getAttrOfType<LossReductionAttr>("reduction");
  if (isa<CrossEntropyOp, CrossEntropyGradOp>(op) && reduction &&
      reduction.getValue() == LossReduction::mean) {
    FactorSharding &rows = factors[rule->operands[0][0].front()];
    if (llvm::any_of(rows.axes, [&](StringAttr axis) {
          return !replicaAxes.contains(axis);
        }))
      rows = FactorSharding();
  }
  while (legalizeFactors(rule->operands, *rule, axisSize, factors) ||
         legalizeFactors(rule->results, *rule, axisSize, factors)) {
  }
  // A replica axis an operand splits a reduction factor over stays on it:
  // it splits no shape, so it was never gathered, and each replica sums
  // only its own rows. Dropped, a result wanted whole (a sum over the
  // batch returned as is) would be one replica's sum where it must be
  // their average.
  auto anyFactorHas = [&](StringAttr axis) {
    return llvm::any_of(factors, [&](const FactorSharding &share) {
      return llvm::is_contained(share.axes, axis);
    });
  };
  for (auto [factor, info] : llvm::enumerate(rule->factors)) {
    if (info.kind != FactorKind::Reduction)
      continue;
    for (const auto &shares : operandShares)
      if (shares[factor])
        for (StringAttr axis : shares[factor]->axes)
          if (replicaAxes.contains(axis) && !anyFactorHas(axis))
            factors[factor].axes.push_back(axis);
  }
  for (const ShardingRule::TensorFactors &dims : rule->operands)
    wanted.push_back(shardingFromFactors(dims, *rule, factors));
  // What each result then is: its dimensions from the (legal) factors, and
  // a pending sum over every split reduction factor it lacks.
  for (auto [index, result] : llvm::enumerate(actualResults)) {
    result = shardingFromFactors(rule->results[index], *rule, factors);
    llvm::DenseSet<int64_t> present;
    for (const auto &dimFactors : rule->results[index])
      present.insert(dimFactors.begin(), dimFactors.end());
    for (auto [factor, info] : llvm::enumerate(rule->factors))
      if (info.kind == FactorKind::Reduction && !present.contains(factor))
        llvm::append_range(result.partial, factors[factor].axes);
  }
  return wanted;
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  OpBuilder builder(op);
  StringRef attrName = dist::DistDialect::getShardingAttrName();
  if (auto constraint = dyn_cast<dist::ShardingConstraintOp>(op)) {
    FailureOr<Value> moved =
        reshard(builder, op->getLoc(), constraint.getInput(),
                current[constraint.getInput()],
                Sharding::fromAttr(constraint.getSharding()));
    if (failed(moved))
      return failure();
    current[*moved] = Sharding::fromAttr(constraint.getSharding());
    constraint.getResult().replaceAllUsesWith(*moved);
    op->erase();
    return success();
  }
  // The op's result shardings (replicated when it has none).
  SmallVector<Sharding> results;
  auto annotated = op->getAttrOfType<ArrayAttr>(attrName);
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    if (!isa<RankedTensorType>(result.getType()))
      return op->emitError("dist-spmd partitions tensor programs only");
    ShardingAttr attr = annotated && index < annotated.size()
                            ? dyn_cast<ShardingAttr>(annotated[index])
                            : ShardingAttr();
    results.push_back(attr ? Sharding::fromAttr(attr)
                           : replicated(result.getType()));
  }
  SmallVector<Sharding> actual;
  SmallVector<Sharding> wanted = wantedOperands(op, results, actual);
  results = actual;
  // A pending sum passes through ops that only move elements: summing
  // later is the same, and a gradient reaching its update split (ZeRO) is
  // then reduce-scattered once instead of all-reduced here.
  if (isa<TransposeOp, ReshapeOp>(op) && op->getNumOperands() == 1) {
    const Sharding &have = current[op->getOperand(0)];
    // Only when no pending axis is also one the use splits on: a value
    // cannot be both summed over and split along an axis.
    bool disjoint = true;
    for (StringAttr axis : have.partial)
      for (const Axes &axes : wanted.front().dims)
        disjoint &= !llvm::is_contained(axes, axis);
    if (!have.partial.empty() && disjoint) {
      wanted.front().partial = have.partial;
      results.front().partial = have.partial;
    }
  }
  // Pending sums over the same axes add up to a pending sum (Llama's
  // q, k and v input gradients, or gate and up, are summed first and
  // all-reduced once, as Megatron does); a pending sum plus a complete
  // value is not one, so that add reduces first.
  if (isa<AddOp, SubOp, NegOp>(op) && results.front().partial.empty()) {
    const Sharding &first = current[op->getOperand(0)];
    const Axes &pending = first.partial;
    bool same = !pending.empty();
    for (Value operand : op->getOperands())
      same &= current[operand].partial == pending;
    bool splitsPending = false;
    for (StringAttr axis : pending)
      for (const Sharding &want : wanted)
        for (const Axes &axes : want.dims)
          splitsPending |= llvm::is_contained(axes, axis);
    if (same && !splitsPending) {
      for (Sharding &want : wanted)
        want.partial = pending;
      results.front().partial = pending;
    } else if (same && llvm::all_of(op->getOperands(), [&](Value operand) {
                 return current[operand] == first;
               })) {
      // The result is wanted split along a pending axis (the residual
      // stream under sequence parallelism): add the pending sums as they
      // are and let the users reduce-scatter the sum once.
      for (Sharding &want : wanted)
        want = first;
      results.front() = first;
    }
  }
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    // One reshard per value and target, shared by all its uses (a gradient
    // read by both Adam moments is reduced once).
    auto cacheKey = std::make_pair(
        operand, wanted[index].toAttr(function.getContext(), meshRef));
    Value moved;
    Sharding throughTranspose;
    auto transpose = operand.getDefiningOp<TransposeOp>();
    if (transpose && current[operand] != wanted[index]) {
      // The transpose's input moved to the same place already (a gradient
      // gathered for one matmul and read transposed by another): transpose
      // that rather than moving the data twice.
      throughTranspose.dims.resize(wanted[index].dims.size());
      throughTranspose.blocks.assign(wanted[index].dims.size(), 1);
      for (auto [position, source] : llvm::enumerate(transpose.getPerm())) {
        throughTranspose.dims[source] = wanted[index].dims[position];
        throughTranspose.blocks[source] = wanted[index].blocksOf(position);
      }
      throughTranspose.partial = wanted[index].partial;
      throughTranspose.normalize();
    }
    auto movedInput =
        transpose
            ? reshards.find(std::make_pair(
                  transpose.getOperand(), Attribute(throughTranspose.toAttr(
                                              function.getContext(), meshRef))))
            : reshards.end();
    if (auto it = reshards.find(cacheKey); it != reshards.end()) {
      moved = it->second;
    } else if (transpose && current[operand] != wanted[index] &&
               movedInput != reshards.end()) {
      FailureOr<RankedTensorType> local = localType(
          op, "operand " + std::to_string(index),
          cast<RankedTensorType>(globalTypes.lookup(operand)), wanted[index]);
      if (failed(local))
        return failure();
      moved = builder.create<TransposeOp>(
          op->getLoc(), *local, movedInput->second, transpose.getPerm());
      reshards[cacheKey] = moved;
    } else if (current[operand] != wanted[index] &&
               isRematerializable(operand) && wanted[index].partial.empty()) {
      // Made again at the sharding the use wants rather than moved.
      FailureOr<RankedTensorType> local = localType(
          op, "operand " + std::to_string(index),
          cast<RankedTensorType>(globalTypes.lookup(operand)), wanted[index]);
      if (failed(local))
        return failure();
      Operation *clone = builder.clone(*operand.getDefiningOp());
      clone->getResult(0).setType(*local);
      if (auto constant = dyn_cast<ConstantOp>(clone))
        constant.setValueAttr(DenseElementsAttr::get(
            *local, cast<DenseElementsAttr>(constant.getValue())
                        .getSplatValue<Attribute>()));
      moved = clone->getResult(0);
      reshards[cacheKey] = moved;
    } else {
      FailureOr<Value> made = reshard(builder, op->getLoc(), operand,
                                      current[operand], wanted[index]);
      if (failed(made))
        return failure();
      moved = *made;
      reshards[cacheKey] = moved;
    }
    current[moved] = wanted[index];
    op->setOperand(index, moved);
  }
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    FailureOr<RankedTensorType> local =
        localType(op, "result " + std::to_string(index),
                  cast<RankedTensorType>(result.getType()), results[index]);
    if (failed(local))
      return failure();
    result.setType(*local);
    current[result] = results[index];
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    // A split dimension is one the slice leaves whole, whose window is then
    // the whole local dimension, or one it takes a whole block of, split
    // within each block alike (the rule): the local window is the global
    // one scaled down by the split.
    SmallVector<int64_t> start(slice.getStart()), limit(slice.getLimit());
    auto local = cast<RankedTensorType>(slice.getOperand().getType());
    for (auto [dim, axes] : llvm::enumerate(results.front().dims)) {
      if (axes.empty())
        continue;
      int64_t parts = shapeProduct(axes);
      if (start[dim] == 0 && limit[dim] / parts == local.getDimSize(dim)) {
        limit[dim] = local.getDimSize(dim);
        continue;
      }
      start[dim] /= parts;
      limit[dim] /= parts;
    }
    slice.setStart(start);
    slice.setLimit(limit);
  }
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    // Only splats are split (the rule): the same value at the local shape.
    auto dense = cast<DenseElementsAttr>(constant.getValue());
    constant.setValueAttr(
        DenseElementsAttr::get(cast<ShapedType>(constant.getType()),
                               dense.getSplatValue<Attribute>()));
  }
  op->removeAttr(attrName);
  // An op whose own dimension is split computes its shard differently.
  int64_t ownDim = -1;
  if (auto gather = dyn_cast<GatherOp>(op))
    ownDim = gather.getAxis();
  else if (auto scatter = dyn_cast<ScatterAddOp>(op))
    ownDim = scatter.getAxis();
  else if (isa<SoftmaxOp, LogSoftmaxOp, SoftmaxGradOp, LogSoftmaxGradOp>(op))
    ownDim = op->getAttrOfType<IntegerAttr>("dim").getInt();
  if (ownDim >= 0 && ownDim < int64_t(wanted.front().dims.size()) &&
      !wanted.front().dims[ownDim].empty()) {
    Sharding sharding = results.front();
    Value replaced =
        rewriteForSplitDim(op, wanted.front().dims[ownDim], meshRef);
    current[replaced] = sharding;
  }
  return success();
}

LogicalResult Partitioner::run() {
  StringRef attrName = dist::DistDialect::getShardingAttrName();
  Block &body = function.getBody().front();
  for (Operation &op : body.without_terminator()) {
    rules[&op] = getShardingRule(&op);
    for (Value result : op.getResults())
      globalTypes[result] = result.getType();
  }
  SmallVector<Type> argTypes;
  for (BlockArgument argument : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(argument.getType());
    if (!type)
      return function.emitError("dist-spmd partitions tensor programs only");
    auto attr = function.getArgAttrOfType<ShardingAttr>(argument.getArgNumber(),
                                                        attrName);
    Sharding sharding = attr ? Sharding::fromAttr(attr) : replicated(type);
    if (!sharding.partial.empty())
      return function.emitError() << "argument " << argument.getArgNumber()
                                  << " is a pending sum; arguments are "
                                     "complete values";
    FailureOr<RankedTensorType> local =
        localType(function, argumentName(function, argument.getArgNumber()),
                  type, sharding);
    if (failed(local))
      return failure();
    argument.setType(*local);
    argTypes.push_back(*local);
    current[argument] = sharding;
  }
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(partitionOp(op)))
      return failure();

  // Results are complete values: pending sums are reduced before return.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder builder(ret);
  SmallVector<Type> resultTypes;
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    Sharding have = current[value];
    Sharding want = have;
    if (auto attr = function.getResultAttrOfType<ShardingAttr>(index, attrName))
      want = Sharding::fromAttr(attr);
    // An in-place update has its input's sharding (one buffer holds both).
    if (auto alias = function.getResultAttrOfType<IntegerAttr>(
            index, TrnDialect::getAliasesAttrName()))
      if (alias.getInt() >= 0 &&
          alias.getInt() < int64_t(function.getNumArguments()))
        want = current[function.getArgument(alias.getInt())];
    want.partial.clear();
    // One replica's result (a per-example output) stays split over the
    // replica axes: the replicas' results side by side are the global one.
    for (size_t dim = 0; dim < want.dims.size() && dim < have.dims.size();
         ++dim)
      if (want.dims[dim].empty() &&
          llvm::any_of(have.dims[dim], [&](StringAttr axis) {
            return replicaAxes.contains(axis);
          })) {
        Axes kept;
        for (StringAttr axis : have.dims[dim]) {
          if (!replicaAxes.contains(axis))
            break;
          kept.push_back(axis);
        }
        want.dims[dim] = kept;
      }
    FailureOr<Value> moved = reshard(builder, ret.getLoc(), value, have, want);
    if (failed(moved))
      return failure();
    ret.setOperand(index, *moved);
    resultTypes.push_back(moved->getType());
    function.setResultAttr(index, attrName,
                           want.toAttr(function.getContext(), meshRef));
  }
  function.setType(
      FunctionType::get(function.getContext(), argTypes, resultTypes));
  if (failed(averageCountsInFloat(function)))
    return failure();
  function->setAttr(dist::DistDialect::getSpmdAttrName(),
                    UnitAttr::get(function.getContext()));
  if (!replicaAxes.empty()) {
    SmallVector<StringAttr> axes(replicaAxes.begin(), replicaAxes.end());
    function->setAttr(dist::DistDialect::getReplicaAxesAttrName(),
                      axesAttr(axes));
  }
  return success();
}

struct DistSpmdPass : mlir::trn::partition::impl::DistSpmdBase<DistSpmdPass> {
  using DistSpmdBase::DistSpmdBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<dist::MeshOp> meshes(module.getOps<dist::MeshOp>());
    if (meshes.empty())
      return;
    if (meshes.size() > 1) {
      meshes[1].emitError("dist-spmd handles one mesh per module; this one "
                          "is the second");
      return signalPassFailure();
    }
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isExternal() || !function.getBody().hasOneBlock())
        continue;
      if (failed(Partitioner(function, meshes.front(), dpReplicas).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
