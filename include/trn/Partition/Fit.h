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
  int64_t total() const {
    return parameters + optimizerStates + gradients + inputs +
           peakIntermediates;
  }
};

/// The footprint of one rank of `function`, a dist.spmd program (or any
/// function: then the single device's).
RankFootprint rankFootprint(func::FuncOp function);

/// Partitions a clone of `module` with `options` (the passes trn-cc runs)
/// and returns the footprint of one rank of its first function; failure
/// when partitioning fails (the pass's diagnostic names the problem).
FailureOr<RankFootprint> partitionedFootprint(ModuleOp module,
                                              const PartitionOptions &options);

} // namespace mlir::trn::partition

#endif // TRN_PARTITION_FIT_H
