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

    With `zero1` (ZeRO stage 1), once the shardings settle every optimizer
    state (`trn.role = "optimizer_state"`) is further split over `dp` on its
    first dimension the split divides, and propagation runs again: the
    update of the states and parameters is computed on each dp rank's
    slice, the gradients arrive by reduce-scatter and the updated
    parameters leave by all-gather (dist-spmd).
  }];
  let options = [
    Option<"zero1", "zero1", "bool", /*default=*/"false",
           "ZeRO-1: split optimizer states and their update over dp">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistSeed : Pass<"dist-seed", "::mlir::ModuleOp"> {
  let summary = "declare the mesh and seed Megatron's shardings on the weights";
  let description = [{
    Declares `dist.mesh @mesh` from the `mesh` option (`dp=2,tp=4`; axes of
    size 1 are kept, so that the program names them) unless the module has
    one, and seeds shardings that propagation spreads:

    - tensor parallelism (`tp`): a matmul with a 2-D weight argument
      (`trn.role = "parameter"`, else any argument) whose result reaches,
      through ops that are not such matmuls, another weight matmul as its
      activation, is column-parallel (the weight's output dimension split on
      tp) and the one it reaches row-parallel (the weight's contracted
      dimension split): QKV and the attention projection, the MLP's two (or
      three, gated) matmuls, as Megatron pairs them. The first decision for
      a weight wins (forward matmuls come first), so backward matmuls of the
      same weight follow.
    - data parallelism (`dp`): the batch inputs (`trn.role` `data` or
      `label`) are split on their first dimension.

    - sequence parallelism (`sequence-parallel`, with tp): the input of
      every layer or RMS norm over the last dimension of a [batch, sequence,
      hidden] tensor is constrained to be split on the sequence over tp, so
      the regions between the tensor-parallel blocks (norms, residual adds,
      dropout) hold a tp-th of the activations; propagation and dist-spmd
      then all-gather the sequence before a column-parallel matmul and
      reduce-scatter a row-parallel one's output, as Megatron does.

    Weights with a `dist.sharding` already (the user's) are left alone.
    docs/partitioning.md.
  }];
  let options = [
    Option<"meshSpec", "mesh", "std::string", /*default=*/"\"\"",
           "mesh axes and sizes, e.g. dp=2,tp=4">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "split the norm regions on the sequence over tp">,
    Option<"dpReplicas", "dp-replicas", "bool", /*default=*/"false",
           "dp is a replica axis (one replica's step): mark the mesh so that "
           "dp splits the batch whatever its size">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistSpmd : Pass<"dist-spmd", "::mlir::ModuleOp"> {
  let summary = "rewrite a sharded step graph into the program every rank runs";
  let description = [{
    Takes a function whose values carry shardings (dist-propagate's output)
    and rewrites it in place into the SPMD program: arguments, results and
    values take their local shapes (a dimension split over axes of total
    size n is n times smaller; one that n does not divide is an error naming
    it, for now), and where a use wants another sharding than its value has,
    collectives move it: pending partial sums are all-reduced
    (`dist.all_reduce`), split axes the use does not share are gathered
    (`dist.all_gather`), axes the use splits further are sliced locally
    (`dist.all_slice`). What an op wants of its operands follows from its
    result shardings and its factor rule (an op without a rule wants them
    whole). Function results are complete: a pending sum is all-reduced
    before the return. `dist.sharding_constraint` ops are replaced by the
    resharding they ask for. docs/partitioning.md.

    With `dp-replicas`, the program is one data-parallel replica's step:
    the traced graph's batch is each replica's, so `dp` splits no shape, and
    sums pending over dp are averaged (`all_reduce mean`), as DDP averages
    gradients (equal to the single-device step on the whole batch when the
    loss is a mean over it). The dp degree is then bound when the program
    is loaded, so one program serves every degree; the function is marked
    `dist.replica_axes = ["dp"]`. Nothing is gathered or sliced over dp (a
    value wanted whole is each replica's own, as in DDP); ZeRO-1, whose
    state shards depend on the degree, is compiled without this option.
  }];
  let options = [
    Option<"dpReplicas", "dp-replicas", "bool", /*default=*/"false",
           "the program is one dp replica's step (dp bound at load)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistPipelineStages : Pass<"dist-pipeline-stages", "::mlir::ModuleOp"> {
  let summary = "give every op of a partitioned step its pipeline stage";
  let description = [{
    Adds the `pp` axis to the mesh (after `dp`) and marks every op of a
    partitioned step (dist-spmd's output, whose mesh has `dp`) with
    `dist.phase` and `dist.stage`:

    - phase: the ops that depend on per-example data (arguments with role
      `data` or `label`) up to the collectives over `dp` that reduce over
      the batch run once per microbatch; those collectives and what depends
      on them (the optimizer update, the loss's average) run once per step
      (`update`). Of the per-microbatch ops, those the loss depends on are
      the `forward` pass, the rest the `backward`. An op that combines a
      batch-reduced value with per-example values (a batch norm) is an
      error: such a step cannot be split into microbatches.
    - stage: parameters named with a layer index (`blocks.3.`, `layers.12.`)
      belong to stage `layer * pp / layers` (equal runs of layers, as NxD
      and NeMo cut by default); a forward op runs on the latest stage of its
      inputs, a backward op on the stage of its layer's weights (else of the
      activations it reads, but never later than the gradient it reads), a
      per-step op beside its largest input; a parameter without a layer
      index (an embedding) belongs to the first stage that uses it.
      Constants are left unmarked: every fragment makes its own.

    Arguments get `dist.stage` too. dist-pipeline-split reads all this.
    docs/partitioning.md, "Pipeline parallelism".
  }];
  let options = [
    Option<"pp", "pp", "int64_t", /*default=*/"1",
           "the number of pipeline stages">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistPipelineSplit : Pass<"dist-pipeline-split", "::mlir::ModuleOp"> {
  let summary = "cut a staged step into per-stage pipeline fragments";
  let description = [{
    Replaces each step function marked by dist-pipeline-stages with a
    `dist.pipeline` and its fragments: per stage, `<step>.s<k>.forward` and
    `<step>.s<k>.backward` (run once per microbatch) and `<step>.s<k>.update`
    (once per step). Every fragment is an ordinary per-rank program; its
    arguments and results carry `#dist.port`s that say how the runtime binds
    them. Values crossing stages travel by `dist.send`/`dist.recv` along
    `pp`; forward values a backward needs are stashed (returned by the
    forward, passed to the backward of the same microbatch); per-microbatch
    values the update reads (the gradients before their dp all-reduce, the
    loss) are summed into accumulators in place (in f32 for bf16 values)
    and divided by the number of microbatches in the update. A step's
    result comes from its stage's update; a parameter that several stages
    read (tied embeddings) is sent to each after its update, and each
    returns it. The transfers are checked against the schedule: a cut that
    would make the stages wait for each other forever is an error.

    With `recompute=true` (activation checkpointing), a forward value the
    backward needs is computed again in the backward from the stage's
    inputs instead of being stashed: the stash holds only what the stage's
    forward received from the previous stage, one activation per microbatch
    in flight, at the cost of a second forward per microbatch.
    docs/partitioning.md, "Pipeline parallelism".
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "microbatches per step (the traced batch is one)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "the order of forwards and backwards: gpipe or 1f1b">,
    Option<"recompute", "recompute", "bool", /*default=*/"false",
           "recompute a stage's forward in its backward instead of stashing "
           "its activations: only what the stage received is stashed">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect", "::mlir::trn::TrnDialect",
                           "::mlir::func::FuncDialect"];
}

def DistCombineAllReduces : Pass<"dist-combine-all-reduces", "::mlir::ModuleOp"> {
  let summary = "bucket a pipeline update's gradient all-reduces into few large ones";
  let description = [{
    In every update fragment (`dist.phase = "update"`: a pipeline's, or the
    step of microbatches accumulated without stages), where every gradient's
    data-parallel all-reduce can start at once, independent `dist.all_reduce`
    ops of the same mesh, axes, reduction and element type are combined into
    buckets of at most `bucket-elements` elements: the inputs flattened and
    concatenated, one all-reduce, the results sliced back. Each all-reduce
    costs a ring of 2 (n - 1) steps whatever its size (10 us a step across
    instances on trn1), so one per gradient tensor (BERT-large: 390) is
    latency, not bandwidth; a bucket pays it once. The default is
    Megatron-LM's smallest gradient bucket, 40 M elements. Outside an
    update only scalar all-reduces combine (a loss and its label count),
    moving at most 64 ops: a layer's stay the layer's own. The ops each
    member's input is computed from move up to the bucket's all-reduce,
    before the first use of any member's result; an all-reduce whose input
    depends on a bucket member's result starts another bucket.
  }];
  let options = [
    Option<"bucketElements", "bucket-elements", "int64_t",
           /*default=*/"40000000",
           "the most elements one combined all-reduce carries">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect", "::mlir::trn::TrnDialect"];
}

#endif // TRN_PARTITION_PASSES_TD
