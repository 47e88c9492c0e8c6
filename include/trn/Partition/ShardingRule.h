//===- ShardingRule.h - how an op's dimensions correspond -------*- C++ -*-===//
//
// Shardy-style factor rules: an op's iteration space is a list of factors;
// each operand and result dimension is made of factors (major first; none
// for a broadcast size-1 dimension). Sharding a factor on mesh axes shards
// every dimension it appears in, so propagation moves shardings through an
// op by way of its factors. A reduction factor (the contracted dimension of
// a matmul, the summed dimension of a sum) may be sharded: every result is
// then a partial sum over those axes. A factor that must stay whole (the
// normalised dimension of a softmax, a sliced dimension) is replicated.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_PARTITION_SHARDINGRULE_H
#define TRN_PARTITION_SHARDINGRULE_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace mlir::trn::partition {

enum class FactorKind {
  Parallel,   ///< sharding it shards the results the same way
  Reduction,  ///< summed over: sharding it makes the results partial sums
  Replicated, ///< must not be sharded (needs the whole dimension)
};

struct ShardingRule {
  struct Factor {
    int64_t size;
    FactorKind kind;
  };
  llvm::SmallVector<Factor> factors;
  /// Per operand / result, per dimension: its factors, major first.
  using TensorFactors = llvm::SmallVector<llvm::SmallVector<int64_t, 2>>;
  llvm::SmallVector<TensorFactors> operands, results;

  int64_t addFactor(int64_t size, FactorKind kind) {
    factors.push_back({size, kind});
    return int64_t(factors.size()) - 1;
  }
};

/// The rule of `op`, or std::nullopt for an op with no rule (then every
/// operand and result stays replicated; docs/partitioning.md lists the ops
/// with rules).
std::optional<ShardingRule> getShardingRule(Operation *op);

} // namespace mlir::trn::partition

#endif // TRN_PARTITION_SHARDINGRULE_H
