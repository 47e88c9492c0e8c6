//===- Sharding.cpp - between tensor shardings and factor shardings -------===//

#include "Sharding.h"

#include "trn/Dialect/Trn/IR/TrnOps.h"

namespace mlir::trn::partition {

namespace {
int64_t product(ArrayRef<StringAttr> axes, AxisSize sizeOf) {
  int64_t size = 1;
  for (StringAttr axis : axes)
    size *= sizeOf(axis);
  return size;
}
} // namespace

bool isRematerializable(Value value) {
  Operation *op = value.getDefiningOp();
  if (auto constant = dyn_cast_or_null<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    return dense && dense.isSplat();
  }
  if (auto broadcast = dyn_cast_or_null<BroadcastInDimOp>(op))
    return cast<RankedTensorType>(broadcast.getOperand().getType()).getRank() ==
           0;
  return false;
}

void factorShardingsOf(const Sharding &sharding,
                       const ShardingRule::TensorFactors &dims,
                       const ShardingRule &rule, AxisSize sizeOf,
                       SmallVectorImpl<std::optional<FactorSharding>> &out) {
  out.assign(rule.factors.size(), std::nullopt);
  for (auto [dim, factors] : llvm::enumerate(dims)) {
    if (dim >= sharding.dims.size() || factors.empty())
      continue;
    const Axes &axes = sharding.dims[dim];
    int64_t blocks = axes.empty() ? 1 : sharding.blocksOf(dim);
    // Leading factors the blocks cover whole are unsplit; the first factor
    // they end inside is split block-wise.
    size_t first = 0;
    int64_t covered = 1, firstBlocks = 1;
    bool mapped = true;
    while (covered != blocks) {
      if (first == factors.size() || blocks % covered != 0) {
        mapped = false;
        break;
      }
      int64_t size = rule.factors[factors[first]].size;
      int64_t rest = blocks / covered;
      if (size <= rest && rest % size == 0) {
        covered *= size;
        ++first;
        continue;
      }
      if (size % rest != 0) {
        mapped = false;
        break;
      }
      firstBlocks = rest;
      break;
    }
    if (!mapped)
      continue;
    for (size_t position = 0; position < first; ++position)
      out[factors[position]] = FactorSharding();
    size_t next = 0;
    for (size_t position = first; position < factors.size(); ++position) {
      int64_t factor = factors[position];
      FactorSharding share;
      share.blocks = position == first ? firstBlocks : 1;
      int64_t size = rule.factors[factor].size / share.blocks;
      int64_t split = 1;
      bool last = position + 1 == factors.size();
      while (next < axes.size()) {
        int64_t axisSize = sizeOf(axes[next]);
        if (!last && size % (split * axisSize) != 0)
          break;
        split *= axisSize;
        share.axes.push_back(axes[next++]);
      }
      if (share.axes.empty())
        share.blocks = 1;
      out[factor] = share;
    }
  }
}

Sharding shardingFromFactors(const ShardingRule::TensorFactors &dims,
                             const ShardingRule &rule,
                             ArrayRef<FactorSharding> factors) {
  Sharding sharding;
  for (const auto &dimFactors : dims) {
    Axes axes;
    int64_t blocks = 1;
    bool started = false;
    for (int64_t factor : dimFactors) {
      const FactorSharding &share = factors[factor];
      if (!started && share.axes.empty()) {
        blocks *= rule.factors[factor].size;
        continue;
      }
      if (!started)
        blocks *= share.blocks;
      started = true;
      llvm::append_range(axes, share.axes);
    }
    sharding.dims.push_back(axes);
    sharding.blocks.push_back(started ? blocks : 1);
  }
  sharding.normalize();
  return sharding;
}

bool legalizeFactors(ArrayRef<ShardingRule::TensorFactors> tensors,
                     const ShardingRule &rule, AxisSize sizeOf,
                     MutableArrayRef<FactorSharding> factors) {
  bool changed = false;
  for (const ShardingRule::TensorFactors &dims : tensors)
    for (const auto &dimFactors : dims) {
      bool started = false, previousWhole = true;
      for (int64_t factor : dimFactors) {
        FactorSharding &share = factors[factor];
        // A split that does not divide the factor (tp = 4 over 2 kv
        // heads) is not made: the factor is computed whole.
        if (!share.axes.empty() &&
            (rule.factors[factor].size % share.blocks != 0 ||
             (rule.factors[factor].size / share.blocks) %
                     product(share.axes, sizeOf) !=
                 0)) {
          share = FactorSharding();
          changed = true;
        }
        if (share.axes.empty()) {
          // A whole factor inside the run ends it.
          previousWhole = !started;
          continue;
        }
        if (started && (!previousWhole || share.blocks != 1)) {
          share = FactorSharding();
          changed = true;
          previousWhole = false;
          continue;
        }
        started = true;
        previousWhole = product(share.axes, sizeOf) * share.blocks ==
                        rule.factors[factor].size;
      }
    }
  return changed;
}

} // namespace mlir::trn::partition
