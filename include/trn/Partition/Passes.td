//===- Passes.td - partitioning passes ---------------------*- tablegen -*-===//

#ifndef TRN_PARTITION_PASSES_TD
#define TRN_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistPropagate : Pass<"dist-propagate", "::mlir::ModuleOp"> {
  let summary = "give every tensor of a step graph a sharding, from the seeds";
  let description = [{
    Starting from the shardings the graph already has (`dist.sharding` on
    function arguments and results, `dist.sharding_constraint` ops), gives
    every op result a sharding (`dist.sharding = [...]`, one per result) and
    every unannotated argument and result one, by moving shardings through
    each op's factor rule (trn/Partition/ShardingRule.h): forward from
    operands to results and backward from results to operands, sweep after
    sweep until nothing changes. User shardings are never changed. When two
    tensors of an op disagree on a factor, the sharding of a user-annotated
    tensor wins, else that of the largest tensor (resharding it would move
    the most bytes). A sharded reduction factor (a contracted dimension)
    makes the results partial sums over its axes (`partial = {...}`); a
    factor that must stay whole (a softmax dimension, a sliced dimension) is
    never sharded. Ops without a rule stay replicated. docs/partitioning.md.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

#endif // TRN_PARTITION_PASSES_TD
