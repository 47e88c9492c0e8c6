//===- PipelineUtils.h - what the pipeline passes share ---------*- C++ -*-===//
//
// The facts dist-pipeline-stages and dist-pipeline-split both read off a
// partitioned step: which arguments are per-example data, which collectives
// reduce over the batch (the end of a microbatch's work), and the
// annotations the stages pass leaves.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_PARTITION_PIPELINEUTILS_H
#define TRN_LIB_PARTITION_PIPELINEUTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::trn::partition {

/// The pipeline axis and the data-parallel axis whose collectives mark the
/// values reduced over the batch.
constexpr llvm::StringLiteral kPipelineAxis = "pp";
constexpr llvm::StringLiteral kBatchAxis = "dp";

/// Whether argument `index` holds per-example data (a microbatch of it goes
/// to each forward): its role is data or label, or it has no role and its
/// sharding splits a dimension over dp.
bool isPerExampleArgument(func::FuncOp function, unsigned index);

/// Whether `op` is a collective over dp that combines the examples of the
/// replicas (all_reduce, reduce_scatter, all_gather, all_to_all): applied to
/// a per-example value, it ends a microbatch's work.
bool isBatchCollective(Operation *op);

/// The layer index in a parameter's name: its first dotted component that
/// is a number ("blocks.3.attn.qkv.weight", "exp_avg.layers.12.w" -> 3, 12).
std::optional<int64_t> layerIndexOf(StringRef name);

/// The stage and phase dist-pipeline-stages gave `op`, if any.
std::optional<int64_t> stageOf(Operation *op);
StringRef phaseOf(Operation *op);

} // namespace mlir::trn::partition

#endif // TRN_LIB_PARTITION_PIPELINEUTILS_H
