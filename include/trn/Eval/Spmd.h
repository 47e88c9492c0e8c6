//===- Spmd.h - the reference evaluator over every rank of a mesh -*- C++
//-*-===//
//
// Runs a partitioned (SPMD) step graph, the program every rank runs, on all
// ranks of its dist.mesh at once (one thread per rank) with the collectives
// exchanged between them, so that a partitioned graph can be checked against
// the unpartitioned one: its global inputs are split by the arguments'
// dist.sharding, every rank runs, and the global outputs are assembled from
// the ranks' results by the results' dist.sharding.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_EVAL_SPMD_H
#define TRN_EVAL_SPMD_H

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Eval/Evaluator.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::trn::eval {

/// The global type of argument (`isResult` false) or result `index` of an
/// SPMD function: its local type with every split dimension multiplied by
/// the size of its axes. The type itself when the function has no mesh.
RankedTensorType globalTypeOf(func::FuncOp function, unsigned index,
                              bool isResult);

/// Whether `function` is a per-rank program (`dist.spmd`, set by
/// dist-spmd) of its module's dist.mesh.
bool isSpmd(func::FuncOp function);

/// Splits the global inputs, runs every rank, assembles the global outputs.
/// Errors are reported at the offending op (of the failing rank).
FailureOr<std::vector<Tensor>> evaluateSpmd(func::FuncOp function,
                                            ArrayRef<Tensor> globalInputs);

/// The global type of argument or result `index` of the step a
/// dist.pipeline describes (its per-example arguments hold every
/// microbatch of every data-parallel replica).
RankedTensorType pipelineGlobalType(dist::PipelineOp pipeline, unsigned index,
                                    bool isResult);

/// Runs a pipelined step (dist-pipeline-split's output) on every rank of
/// its mesh: each rank runs its stage's forward and backward fragments for
/// every microbatch in the schedule's order, then its update; transfers go
/// between the ranks' threads. Takes and gives the step's global tensors.
FailureOr<std::vector<Tensor>> evaluatePipeline(dist::PipelineOp pipeline,
                                                ArrayRef<Tensor> globalInputs);

} // namespace mlir::trn::eval

#endif // TRN_EVAL_SPMD_H
