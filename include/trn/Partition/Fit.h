//===- Fit.h - what one rank of a partitioned program holds ---*- C++ -*-===//
//
// Fit checks before compiling (trn-cc --analyze --mesh): partition a graph
// for a mesh and add up the HBM one rank needs, in milliseconds, so that a
// mesh that cannot work (a degree that does not divide, a rank that does
// not fit its NeuronCore's HBM) is named in one line before any lowering.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_PARTITION_FIT_H
#define TRN_PARTITION_FIT_H

#include "trn/Partition/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::trn::partition {

/// Bytes one rank holds, by kind.
struct RankFootprint {
  int64_t parameters = 0;      ///< trn.role parameter (local shards)
  int64_t optimizerStates = 0; ///< trn.role optimizer_state
  int64_t gradients = 0;       ///< trn.role gradient (accumulators)
  int64_t inputs = 0;          ///< data, labels, constants, hyperparameters
  /// The largest total of intermediate tensors alive at once (each from
  /// its definition to its last use, in program order): activations saved
  /// for the backward pass, gradients before their update.
  int64_t peakIntermediates = 0;
  /// Pipelines: the activations a stage keeps from a microbatch's forward
  /// for its backward, times the microbatches in flight under the schedule
  /// (1F1B: at most the stages from this one to the last; GPipe: all).
  int64_t stash = 0;
  int64_t microbatchesInFlight = 0;
  int64_t total() const {
    return parameters + optimizerStates + gradients + inputs +
           peakIntermediates + stash;
  }
};

/// The footprint of one rank of `function`, a dist.spmd program (or any
/// function: then the single device's).
RankFootprint rankFootprint(func::FuncOp function);

/// Adds the graph passes that run before the lowering (fusion: a fused
/// group's inner values never reach HBM), so that the intermediates counted
/// are those the lowering allocates; null counts the partitioned graph's.
using GraphPassesBuilder = function_ref<void(OpPassManager &)>;

/// Partitions a clone of `module` with `options` (the passes trn-cc runs),
/// then runs `graphPasses`, and returns the footprint of one rank of its
/// first function; failure when a pass fails (its diagnostic names the
/// problem).
FailureOr<RankFootprint>
partitionedFootprint(ModuleOp module, const PartitionOptions &options,
                     GraphPassesBuilder graphPasses = nullptr);

/// One rank's footprint of each stage of a pipelined module
/// (dist-pipeline-split's output), by stage: the step arguments its
/// fragments read (once each), its gradient accumulators, its stash times
/// the microbatches in flight, and the largest intermediates of any of its
/// fragments (they run one at a time).
std::vector<RankFootprint> pipelineFootprints(ModuleOp module);

/// Partitions a clone of `module` with `options`, cuts it into `pp` stages
/// and splits them with `split` (microbatches, schedule, recomputation: the
/// passes trn-cc runs for --pp), runs `graphPasses` on the fragments and
/// returns every stage's footprint; failure when a pass fails (its
/// diagnostic names the problem).
FailureOr<std::vector<RankFootprint>>
partitionedPipelineFootprints(ModuleOp module, const PartitionOptions &options,
                              int64_t pp, const DistPipelineSplitOptions &split,
                              GraphPassesBuilder graphPasses = nullptr);

} // namespace mlir::trn::partition

#endif // TRN_PARTITION_FIT_H
