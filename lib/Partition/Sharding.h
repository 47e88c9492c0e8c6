//===- Sharding.h - a value's sharding while a pass runs ------*- C++ -*-===//
//
// Private to lib/Partition: the mutable form of #dist.sharding the passes
// compute with.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_PARTITION_SHARDING_H
#define TRN_LIB_PARTITION_SHARDING_H

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Partition/ShardingRule.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::trn::partition {

using dist::ShardingAttr;

using Axes = SmallVector<StringAttr, 2>;

/// A value's sharding while the pass runs.
struct Sharding {
  SmallVector<Axes> dims;
  /// Per dimension, how many blocks its axes split block-wise (1: the
  /// dimension is split contiguously); as long as `dims` or empty.
  SmallVector<int64_t> blocks;
  Axes partial;

  int64_t blocksOf(size_t dim) const {
    return dim < blocks.size() ? blocks[dim] : 1;
  }
  void setBlocks(size_t dim, int64_t count) {
    if (count == 1 && dim >= blocks.size())
      return;
    blocks.resize(std::max(blocks.size(), dims.size()), 1);
    blocks[dim] = count;
  }
  /// Drops the block counts of whole dimensions and trailing 1s, so that
  /// equal shardings compare equal.
  void normalize() {
    for (size_t dim = 0; dim < blocks.size(); ++dim)
      if (dim >= dims.size() || dims[dim].empty())
        blocks[dim] = 1;
    while (!blocks.empty() && blocks.back() == 1)
      blocks.pop_back();
  }

  bool operator==(const Sharding &other) const {
    Sharding a = *this, b = other;
    a.normalize();
    b.normalize();
    return a.dims == b.dims && a.partial == b.partial && a.blocks == b.blocks;
  }
  bool operator!=(const Sharding &other) const { return !(*this == other); }
  int64_t axisCount() const {
    int64_t count = partial.size();
    for (const Axes &axes : dims)
      count += axes.size();
    return count;
  }
  /// Every dimension's axes extend `other`'s (a finer split) in the same
  /// blocks, same partial.
  bool refines(const Sharding &other) const {
    if (dims.size() != other.dims.size() || partial != other.partial)
      return false;
    for (size_t dim = 0; dim < dims.size(); ++dim) {
      const Axes &mine = dims[dim], &theirs = other.dims[dim];
      if (mine.size() < theirs.size() ||
          !std::equal(theirs.begin(), theirs.end(), mine.begin()))
        return false;
      if (!theirs.empty() && blocksOf(dim) != other.blocksOf(dim))
        return false;
    }
    return *this != other;
  }

  static Sharding fromAttr(ShardingAttr attr) {
    Sharding sharding;
    for (auto [dim, list] : llvm::enumerate(attr.getDims())) {
      Axes axes;
      for (Attribute axis : cast<ArrayAttr>(list))
        axes.push_back(cast<StringAttr>(axis));
      sharding.dims.push_back(axes);
    }
    sharding.blocks.assign(attr.getBlocks().begin(), attr.getBlocks().end());
    for (Attribute axis : attr.getPartial())
      sharding.partial.push_back(cast<StringAttr>(axis));
    sharding.normalize();
    return sharding;
  }
  ShardingAttr toAttr(MLIRContext *context, FlatSymbolRefAttr mesh) const {
    auto list = [&](const Axes &axes) {
      SmallVector<Attribute> names(axes.begin(), axes.end());
      return ArrayAttr::get(context, names);
    };
    SmallVector<Attribute> dimAttrs;
    for (const Axes &axes : dims)
      dimAttrs.push_back(list(axes));
    Sharding normal = *this;
    normal.normalize();
    SmallVector<int64_t> counts;
    if (!normal.blocks.empty())
      for (size_t dim = 0; dim < dims.size(); ++dim)
        counts.push_back(normal.blocksOf(dim));
    return ShardingAttr::get(context, mesh, ArrayAttr::get(context, dimAttrs),
                             list(partial), counts);
  }
};

/// A factor's share of a sharding: the axes that split it and, for a factor
/// split block-wise (the minor part of a merged dimension's block), its
/// block count.
struct FactorSharding {
  Axes axes;
  int64_t blocks = 1;
  bool operator==(const FactorSharding &other) const {
    return axes == other.axes && (axes.empty() || blocks == other.blocks);
  }
};

using AxisSize = llvm::function_ref<int64_t(StringAttr)>;

/// A value every rank can make at any sharding without communication: a
/// splat constant or the broadcast of a scalar. Its users' shardings do not
/// bind each other through it (one CSE'd `0.9` serves row- and
/// column-parallel weights alike); the partitioner remakes it per use.
bool isRematerializable(Value value);

/// What a tensor's sharding says of each of its factors (a dimension's
/// axes go to its factors major first, a factor taking axes while their
/// product divides it; leading factors a block count covers are whole).
/// Factors the tensor does not have, or whose share it cannot say (blocks
/// that do not fall on its factors), stay std::nullopt.
void factorShardingsOf(const Sharding &sharding,
                       const ShardingRule::TensorFactors &dims,
                       const ShardingRule &rule, AxisSize sizeOf,
                       SmallVectorImpl<std::optional<FactorSharding>> &out);

/// A tensor's dimensions from its factors' shardings (partial not set).
Sharding shardingFromFactors(const ShardingRule::TensorFactors &dims,
                             const ShardingRule &rule,
                             ArrayRef<FactorSharding> factors);

/// Clears factors whose split a dimension cannot hold (a dimension is
/// split in one run: after its first split factor, a factor may be split
/// only if every factor before it in the run is fully split, and only the
/// first may be split block-wise). Returns whether anything changed.
bool legalizeFactors(ArrayRef<ShardingRule::TensorFactors> tensors,
                     const ShardingRule &rule, AxisSize sizeOf,
                     MutableArrayRef<FactorSharding> factors);

/// Rewrites `op` (at local types) whose own dimension is split over `axes`:
/// a gather or scatter_add along a split dimension masks the indices
/// outside this rank's range; a softmax, log_softmax or their gradients
/// reduce their max and sums over the axes. docs/partitioning.md.
/// Returns the value that replaces the op's result.
Value rewriteForSplitDim(Operation *op, ArrayRef<StringAttr> axes,
                         FlatSymbolRefAttr mesh);

} // namespace mlir::trn::partition

#endif // TRN_LIB_PARTITION_SHARDING_H
