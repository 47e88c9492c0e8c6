//===- Passes.h - partitioning passes ---------------------------*- C++ -*-===//
#ifndef TRN_PARTITION_PASSES_H
#define TRN_PARTITION_PASSES_H

#include "trn/Dialect/Dist/IR/DistDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::trn::partition {

#define GEN_PASS_DECL
#include "trn/Partition/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "trn/Partition/Passes.h.inc"

/// What the compile flags ask of the partitioner.
struct PartitionOptions {
  /// Mesh axes in order with their degrees, e.g. {{"dp", 2}, {"tp", 4}}.
  SmallVector<std::pair<std::string, int64_t>> mesh;
  bool zero1 = false;
  bool sequenceParallel = false;
  /// The traced graph is one data-parallel replica's step: dp splits no
  /// shape and gradients are averaged over dp, so the program serves every
  /// dp degree (not with ZeRO-1, whose state shards depend on the degree).
  bool dpReplicas = true;
};

/// Adds the partitioning passes (seed, propagate, SPMD) that turn a traced
/// step graph into the program every rank runs. Adds nothing when every
/// degree is 1.
void addPartitionPasses(OpPassManager &pm, const PartitionOptions &options);

} // namespace mlir::trn::partition

#endif // TRN_PARTITION_PASSES_H
