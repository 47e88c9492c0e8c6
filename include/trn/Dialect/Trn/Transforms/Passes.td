//===- Passes.td - trn dialect passes ----------------------*- tablegen -*-===//

#ifndef TRN_DIALECT_TRN_TRANSFORMS_PASSES_TD
#define TRN_DIALECT_TRN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TrnDecomposeComposites
    : Pass<"trn-decompose-composites", "::mlir::func::FuncOp"> {
  let summary = "rewrite composite trn ops into trn primitives";
  let description = [{
    Replaces every composite op (`softmax`, `log_softmax`, `softmax_grad`,
    `log_softmax_grad`, `layer_norm`, `layer_norm_grad`, `rms_norm`,
    `rms_norm_grad`, `attention`, `attention_grad`, `cross_entropy`,
    `cross_entropy_grad`) by the primitives of its documented formula, for
    backends that lower primitives only. The elementwise `gelu`, `gelu_grad`,
    `silu` and `sigmoid` are primitives (one activation function each) and
    are kept.

    Precision: composites are computed in f32. Operands of a narrower float
    type (bf16, f16, f8) are converted to f32 first and the results converted
    back last, so that, as in the reference evaluator (which computes in f64
    and rounds once), the narrow type rounds only the final result; the
    statistics (`mean`, `rstd`, `lse`) are f32 as the ops define. A matmul
    of two narrow operands is a `dot_general` with an f32 result, whose
    products are exact.

    Stability: the softmax family subtracts the row maximum before `exp`;
    `lse = max + log(sum(exp(x - max)))`; layer-norm variance is the mean of
    squared deviations from the mean (two passes). Attention scales the
    scores and selects `-inf` where the causal mask hides a key, so hidden
    keys weigh exactly 0. Cross-entropy picks the label logit with
    `gather(axis = 1, batch_dims = 1)`; its gradient `g * softmax` gets `-g`
    at the label from the matching `scatter_add`. An ignored label is
    replaced by 0 first (so that neither op sees it out of range) and its
    row zeroed with `select`; `mean` divides by the count of rows not
    ignored (0 / 0 = NaN when all are). Two cases that only non-finite
    inputs produce differ from the reference evaluator, which special-cases
    them (giving 0, and lse -inf): an attention row whose every score is
    -inf, and the gradient of an ignored cross-entropy row with infinite or
    NaN logits, are NaN here (as in PyTorch for the latter).

    Only the composites and the primitives that replace them are rewritten
    (and folded); the rest of the graph is left as it is. `ops` restricts
    the rewrite to the named composites (`softmax` or `trn.softmax`); by
    default all are decomposed. With `keep-flash-attention`, `attention` and
    `attention_grad` ops whose shapes the NeuronCore backend's flash-style
    kernels take (head size <= 128, value size <= 512 forward and <= 128
    backward, a head's K and V resident in SBUF; see
    `trn/Dialect/Trn/Utils/FlashAttention.h`) are left for it.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
  let options = [
    ListOption<"opNames", "ops", "std::string",
               "Composite ops to decompose, e.g. softmax,attention "
               "(default: all)">,
    Option<"keepFlashAttention", "keep-flash-attention", "bool", "false",
           "Keep attention ops the backend lowers as flash-style kernels">,
  ];
}


def TrnFuseElementwise : Pass<"trn-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "group elementwise chains and row reductions into trn.fusion ops";
  let description = [{
    Forms `trn.fusion` groups that the backend lowers as one kernel: each
    input tile is loaded from HBM once, the whole group is computed in SBUF
    and only values used outside the group are stored. A group has one shape
    S and holds, in program order:

    * elementwise ops of shape S, and of shape S[:-1] (per-row values such
      as a row's mean);
    * `reduce` over the last dimension of a value of shape S (sum, max,
      min), when a row of C = S[-1] elements fits in SBUF
      (`max-reduction-row`);
    * `broadcast_in_dim` of a per-row value back to S (a [rows, 1] column);
    * copies of the `broadcast_in_dim`s and splat constants its ops read:
      a broadcast input is read through a strided DMA window instead of
      being materialised in HBM (when the window keeps at least 128 rows, or
      all rows, per partition stride), a splat becomes an immediate.

    Ops join the first open group among their operands' groups; when an op
    reads values of several open groups of its shape, those groups first
    become one (so that AdamW's moment, square and parameter chains are one
    kernel, not three values round-tripping through HBM), within the same
    limits. A group is closed as soon as an op outside it reads one of its
    values, so that the
    group can be placed at its last op with every operand defined before it
    and every use after it. A group also stops growing when its estimated
    peak of live tiles would pass `sbuf-budget` bytes per partition (the
    rest of SBUF leaves room for the next tiles' loads to overlap), or at
    `max-ops` ops. i64 ops and rank-0 ops are left alone.

    Two rewrites come first. Rotary embedding's traced rotation,
    `concatenate(-x[..., D/2:], x[..., :D/2])` along the last dim, becomes
    `trn.rotate_half x` (its adjoint `cat(g[D/2:], -g[:D/2])` the negation
    of one), which joins a group as an op of shape S whose tiles hold whole
    rows (D at most 2048). And where a row reduction's operand is read by
    other elementwise ops too while its rows are longer than
    `max-reduction-row` (so that the reduction and those readers cannot
    share a group), an exponential chain over one full-size tensor (a
    softmax's exp(x - max)) is recomputed by the readers from that tensor
    instead of being stored by the reduction's group. Sums over the rows of
    a 2-D value at most 2048 wide (a norm weight's gradient) move down to
    their first user first: one right after the value it sums would close
    that value's group to the ops after it (its cast), though
    `trn-fuse-matmul-epilogue` takes the sum into the group anyway.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
  let options = [
    Option<"maxReductionRow", "max-reduction-row", "int64_t", "8192",
           "Longest row (elements) a group reduces in SBUF">,
    Option<"sbufBudget", "sbuf-budget", "int64_t", "98304",
           "Estimated live tile bytes per partition a group may use">,
    Option<"maxOps", "max-ops", "int64_t", "256",
           "Most ops in one group">,
  ];
}


def TrnFuseMatmulEpilogue : Pass<"trn-fuse-matmul-epilogue",
                                 "::mlir::func::FuncOp"> {
  let summary = "apply the elementwise group that reads a matmul's result "
                "as the matmul's epilogue";
  let description = [{
    A `trn.dot_general` whose result a `trn.fusion` group reads becomes the
    group's first op. The backend then applies the group (a bias, GELU or
    SiLU, a residual add, a scale, the cast to the output type) to each
    result tile as it is evicted from PSUM, instead of storing the matmul's
    result to HBM and loading it back for a separate pass. When the result
    has other users it is also yielded (stored once, still never reloaded).

    A group that reduces rows (a layer norm after a projection and its
    residual, or a norm's backward after an input gradient) takes the whole
    matmul when the backend computes each row block of the result whole (its
    columns are one column block against a resident panel:
    `trn::matmulYieldsWholeRows`, at most 1024 columns); the other
    elementwise groups that read the result merge into it first (when
    nothing else uses theirs before it), so the result never reaches HBM.

    Otherwise a group is left alone when a result tile (up to 128 rows of one
    batch, up to 512 columns) cannot hold what it needs: it reduces rows,
    broadcasts the matmul's result, computes another
    shape, or reads an input whose rows do not fall into one DMA window per
    tile. A group that reduces rows first hands the elementwise ops the
    result flows into before any reduction (a layer norm's bias and residual
    add) to a group of their own, which becomes the epilogue, when the rest
    then reads no more bytes from it than the result itself (and the result
    has no user in the rest). The fused op takes the group's place, or the
    matmul's when a user of the result comes before the group (then every
    other input of the group must be defined before the matmul, else
    nothing is fused).

    Sums over rows (dims [0]) of a group's f32 [M, N] results (a bias's
    gradient; an epilogue, or an elementwise group, one that reduces along
    its rows, a layer norm's backward, if they are at most 2048 wide) then
    join the group: the backend adds each result tile into a running total per
    column and sums the partitions once per column block, instead of reading
    the result back; a result only such sums read is no longer stored. So do
    sums of an f32 input the group reads per tile anyway, when nothing needs
    them before the group. A reduction over the rows of a group's f32
    result (dims [1], sum, max or min: the logits' max in their epilogue,
    the sum of their exponentials), standing alone (or, after an epilogue, as
    a group of its own), joins the group too: each tile reduces its part
    into a running column per row block, so rows need not fit in SBUF. A
    group that only sums exp(x - max(x)) along the rows of an epilogue's
    results x and max(x) joins it as well: the backend keeps a running sum
    rescaled as the running max grows (online softmax). Run after
    `trn-fuse-elementwise`.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
}

def TrnOverlapCollectives : Pass<"trn-overlap-collectives",
                                  "::mlir::func::FuncOp"> {
  let summary = "move ready matmuls between a collective and its consumer";
  let description = [{
    A collective (a `dist` op) runs on the Sync engine's stream while the
    compute engines go on with whatever does not need its result. In the
    order partitioning leaves, a collective's consumer usually follows it at
    once, so the engines wait for the transfer. Up to `per-collective`
    matmuls after that consumer (a `trn.dot_general` or an epilogue group:
    the weight gradients a partitioned backward pass leaves at its end)
    whose operands are all defined before the consumer (so they cannot need
    the collective) move to just before it, and run while the collective
    does; a matmul after it that reads the collective's result (the data
    gradient, when the consumer is the weight gradient of the same gathered
    tensor) moves too and goes first, since the rest of the backward waits
    for it. Each `dist.all_reduce` moves up to just after its operand's
    producer (a replicated weight's gradient is summed while the backward
    goes on), or behind the next collective if no matmul comes before that
    one (the Sync engine runs collectives in order, and the compute engines
    are about to wait for it). A collective of the arguments alone moves to
    the start, but not one of a stashed shard (a pipeline backward's
    selective recomputation gathers it where it is first needed: hoisted,
    every layer's gathered copy would be held through the whole backward). Small values computed from the arguments
    alone (the learning rate's negation, which every weight's update reads)
    move to the start first, so that they do not hold those matmuls back.
    Last, a collective that no matmul overlaps (in a partitioned backward,
    the all-gather in front of a column-parallel projection's input
    gradient, after the weight gradients went to the collectives before it)
    takes a matmul from an earlier collective that has more than it needs:
    one whose readers all come after the needy collective's consumer (a
    weight gradient) moves to just before that consumer, when every
    collective it overlapped stays overlapped. The times compared are
    estimates: 2·M·N·K at `matmul-flops-per-ns`, and the bytes a ring moves
    per rank at `collective-bytes-per-ns` (trn-cc passes its target's bf16
    Tensor Engine peak and a core's share of its chip's links: the pass
    itself knows no hardware); a consumer is the first op that computes with
    the result (reshapes are views).
    Run after `trn-fuse-matmul-epilogue`.
  }];
  let options = [
    Option<"perCollective", "per-collective", "int64_t", "2",
           "matmuls moved in front of each collective's consumer">,
    Option<"matmulFlopsPerNs", "matmul-flops-per-ns", "double", "0",
           "the Tensor Engine's rate, for the time of a matmul (required)">,
    Option<"collectiveBytesPerNs", "collective-bytes-per-ns", "double", "0",
           "a rank's link bandwidth, for the time of a collective "
           "(required)">
  ];
}

def TrnSliceBeforeCompute : Pass<"trn-slice-before-compute",
                                  "::mlir::func::FuncOp"> {
  let summary = "take a rank's slice before elementwise work, and reduce-scatter instead of all-reduce and slice";
  let description = [{
    Partitioning can leave a tensor-parallel sum all-reduced, finished by
    elementwise work on the whole tensor (a bias added), viewed with a
    size-1 dim more and only then sliced (`dist.all_slice`) to the rank's
    part of the sequence: twice the traffic of a reduce-scatter, and the
    elementwise work done tp times over. An `all_slice` moves before what
    it slices when that has no other reader: before an elementwise op with
    one operand of the result's shape (the others broadcasts, which are
    sliced or rebuilt smaller), and before a reshape that keeps the sliced
    dim whole (a view as [1, S, H]). An `all_slice` of a one-reader `all_reduce` over
    the same axes becomes a `reduce_scatter` along the sliced dim. An
    `all_slice` of an `all_gather` seen through reshapes, transposes and
    broadcasts that keep the gathered dim whole (grouped-query attention's
    v, gathered along the sequence and repeated to the query heads) has the
    views applied to the local shard first, and `all_slice(all_gather)`
    along another dim becomes an `all_to_all`. Every step is exact: each
    element is computed as before.
  }];
}

def TrnChunkReduceScatter : Pass<"trn-chunk-reduce-scatter",
                                  "::mlir::func::FuncOp"> {
  let summary = "reduce-scatter a matmul's result chunk by chunk as it is made";
  let description = [{
    A row-parallel projection under sequence parallelism (an attention's
    output projection, an MLP's down projection) ends in a
    `dist.reduce_scatter` of its whole result: the Sync engine waits for the
    last matmul, and the compute engines then wait for the transfer (0.72 ms
    per [8192, 8192] bf16 result at tp = 32, longer than the matmul of an
    output projection). When only the reduce-scatter reads a
    `trn.dot_general`'s result of at least `min-bytes`, the result is cut
    into `chunks` pieces along a free dim other than the scattered one (the
    rhs's last free dim if it can be, each piece at least 512 wide), each
    piece is reduce-scattered on its own, and `trn.concatenate` joins the
    scattered pieces. `trn-hoist-slices` then computes each piece with its
    own matmul, so piece k's transfer runs while piece k + 1 is computed.
    Each extra piece costs the ring's per-step latency once more; the
    values are the same (the reduction is per element). Run before
    `trn-hoist-slices`.
  }];
  let options = [
    Option<"chunks", "chunks", "int64_t", "4",
           "pieces to cut a reduce-scattered matmul result into">,
    Option<"minBytes", "min-bytes", "int64_t", "16777216",
           "the smallest reduce-scattered result worth cutting">
  ];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
}

def TrnHoistSlices : Pass<"trn-hoist-slices", "::mlir::func::FuncOp"> {
  let summary = "compute the slices of a value instead of the value";
  let description = [{
    A value that only `trn.slice`s read (a fused QKV projection split into
    q, k and v) is computed slice by slice: each slice becomes its producer
    applied to the matching slices of the producer's operands, and those
    slices move up in turn. So a projection `x Wᵀ + b` split along its
    output features becomes one matmul per piece of `W` (a contiguous block
    of its rows) with its part of `b`, and the three copies that cut the
    [tokens, 3 × hidden] result into pieces (each reading and writing a
    strided [tokens, hidden] window through HBM) disappear. Producers
    handled: elementwise ops, `broadcast_in_dim` and `dot_general` (a slice
    of a free dim slices that operand; of a batch dim, both), and a
    `transpose` whose slices only matmuls read (a weight in PyTorch's
    [out, in] layout cut along its output features: blocks of its rows,
    each transposed, which the matmuls read in place). Unit-stride slices
    only; the graph computes the same values.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
}

def TrnAssignLayouts : Pass<"trn-assign-layouts", "::mlir::func::FuncOp"> {
  let summary = "choose operand layouts so that transposes disappear";
  let description = [{
    Every `trn.transpose` left in the graph is a full round trip through
    HBM on the NeuronCore (and one that moves narrow pieces when the
    innermost dim changes). Which dimension is contiguous, and which lands
    on partitions, is instead free for ops that address their operands by
    stride. This pass hands each such op the layout its neighbours already
    have:

    - `trn.attention` / `trn.attention_grad`: the `seq_dim` for which the
      operands that are transposes out of that layout and the results that
      are only transposed into it (the [B, S, H, D] <-> [B, H, S, D] head
      transposes around attention) outweigh, in elements moved, the
      transposes the new layout would add for other operands and users;
    - `trn.dot_general`: a transposed operand is read in place by
      renumbering its batching and contracting dims, when the product keeps
      the form the backend lowers (leading batch dims, one free and one
      contracting dim per operand) and its free dims keep their order.

    - `dist.all_gather` of a transpose that only such dot_generals read:
      it gathers the untransposed tensor instead (along the dim the
      transpose moves to the gathered one) and the dot_generals read that
      in place; a gather of the same tensor along the same dim serves both
      (a partitioned backward gathered the activation gradient once for
      dX = dY W and again, transposed, for dW = dY^T X).

    Transposes left without users are erased; a transpose of a transpose
    folds into one (the op's folder). The graph computes the same values.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
}


def TrnNarrowI64 : Pass<"trn-narrow-i64", "::mlir::func::FuncOp"> {
  let summary = "compute i64 tensors (indices, labels, counts) in i32";
  let description = [{
    NeuronCore-v2 engines have no 64-bit integers. Frameworks write indices
    and labels as i64, whose values are bounded by table sizes and class
    counts, far below 2^31. This pass computes every i64 value of the graph
    in i32: i64 arguments are converted to i32 where the graph starts, i64
    constants become i32 constants, every op producing an i64 tensor
    produces an i32 tensor instead, and i64 results are converted back
    (sign-extended) before the return. The seed operands of the rng ops stay
    i64. The function's signature does not change.

    The one difference from i64 arithmetic: a value that would not fit in
    i32 wraps. A constant outside the i32 range is reported as an error
    rather than narrowed.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
}


def TrnSliceBeforeViews : Pass<"trn-slice-before-views", "::mlir::func::FuncOp"> {
  let summary = "take slices before transposes and reshapes, not after";
  let description = [{
    PyTorch 2's `nn.MultiheadAttention` cuts its fused Q/K/V projection
    `[S, B, 3E]` by viewing it as `[S, B, 3, E]`, moving the 3 to the front
    (`unsqueeze(0).transpose(0, -2).squeeze(-2)`) and selecting q, k and v;
    PyTorch 1 sliced the features (`chunk(3, -1)`). The partitioner knows a
    fused projection by slices of its output features, and a view in
    between hides them (it took the 3 for heads). This pass moves a
    unit-stride `trn.slice` above the views it reads:

    - `slice(transpose(x))` is `transpose(slice(x))` (the window permuted);
    - `slice(reshape(x))` is `reshape(slice(x))` when the window is one
      contiguous range of an operand dimension: the sliced result dimension
      and the dimensions after it (kept whole) are that operand dimension
      and those after it, and the dimensions before it multiply to the
      operand's before it (so `[S, B, 3E] -> [S, B, 3, E]`, slice `3` to
      `[i, i+1)`, is the slice `[iE, (i+1)E)` of `3E`);
    - a `transpose` that moves only unit dimensions is a `reshape`.

    A view is rewritten only when every user is a slice the rules take, so
    no view is computed twice; reshapes of reshapes then fold away. The
    values are unchanged. Run before partitioning and at the start of the
    graph pipeline. docs/partitioning.md.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
}

def TrnSplitBatchDims : Pass<"trn-split-batch-dims", "::mlir::func::FuncOp"> {
  let summary = "give batched matmuls back the batch dimensions a trace merged";
  let description = [{
    PyTorch's `matmul` on 4-D tensors traces as `bmm` on a merged batch:
    `[B, H, S, D] -> [B*H, S, D]`, the matmul, and the result viewed back as
    `[B, H, S, S]`. A merged dimension cannot be split on B over one mesh
    axis and on H over another (data and tensor parallelism together), so
    before partitioning this pass rewrites a `dot_general` whose one batch
    dimension is such a merge (its operands reshaped from tensors with the
    leading dimensions [B, H, ...], directly or through a transpose that
    keeps the batch first) into a `dot_general` with those batch dimensions,
    and views its result as the merged one for the users, whose own
    reshapes back to `[B, H, ...]` then fold away. A reshape that only
    splits dimensions of a transposed value is done before the transpose
    (`[S, B*H, D]` moved to `[B*H, S, D]`, then split to `[B, H, S, D]`, is
    `[S, B, H, D]` moved), so that every view of one tensor is a transpose
    of one value. The arithmetic is unchanged. docs/partitioning.md.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
}

def TrnFormAttention : Pass<"trn-form-attention", "::mlir::func::FuncOp"> {
  let summary = "attention written out as matmuls and a softmax, as trn.attention";
  let description = [{
    Finds scaled dot-product attention as PyTorch traces it when a model
    writes it out (`softmax(q @ k.transpose(-2, -1) * scale, masked_fill with
    -inf where a causal mask holds) @ v`, after trn-split-batch-dims) and its
    autograd backward (`p^T @ do`, `do @ v^T`, `softmax_backward`, the mask's
    and the scale's backward, `ds @ k`, `q^T @ ds`), and replaces them by
    `trn.attention` and `trn.attention_grad`, which the NeuronCore backend
    lowers as flash-attention kernels: the [S, S] scores and probabilities
    are never stored. The mask must be provably causal: `ones(s, s).triu(1)`
    or `arange(s)[None, :] > arange(s)[:, None]` computed in the graph (an
    iota comparison), not a tensor passed in, whose values the compiler
    cannot see. PyTorch 2's `scaled_dot_product_attention` (math path, and
    `nn.MultiheadAttention` through it) is found too: q and k each scaled
    (the scale is then 1 on the scaled operands), the causal mask as an
    additive bias `where(tril, 0, -inf)` (no mask select in the backward),
    and its safe softmax (`select(max != -inf, softmax, 0)`), whose select is
    the identity when no row is masked whole, as with a causal mask or none.
    The rewrite is all or nothing per attention: when the probabilities have
    another user (dropout, an output) or the backward differs from
    autograd's, the ops are left as they are.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
}

def TrnMarkOptimizer : Pass<"trn-mark-optimizer", "::mlir::func::FuncOp"> {
  let summary = "mark the parameter update: the ops the optimizer state reaches";
  let description = [{
    Marks `trn.optimizer` on every op of the function's body that uses,
    directly or through other ops, an argument whose `trn.role` is
    `optimizer_state` or `hyperparameter` (the learning rate, the step):
    the optimizer's update. The lowering records it on the instructions
    (nc.kind "optimizer") so that a run's time splits into the step's
    parts (trn-run, bench/step_mfu.py). Changes nothing else.
  }];
}

def TrnOutlineLayers : Pass<"trn-outline-layers", "::mlir::ModuleOp"> {
  let summary = "a repeated run of layers as calls of one outlined function";
  let description = [{
    Finds, in each step function, runs of at least `min-repeats`
    consecutive blocks of ops that compute the same thing (a transformer
    layer's forward, its backward), each block at least `min-ops` ops
    counting those inside its groups (a layer of large fused groups has few
    ops of its own), and
    replaces every block by a `func.call` of one private function marked
    `trn.subroutine`. The backend lowers that function once (an nc kernel
    called with nc.call), so a 10-layer stage costs one layer's compile.

    Blocks must match op for op (names, attributes, result types, regions)
    and in their data flow: an operand comes from the same op of the block,
    or from outside it in the same order of first use. A block's results are
    the values some block's later ops or the function's return use. A
    function keeps its ops when nothing repeats; in a run broken by a
    different block (dropout with per-layer seeds), the blocks on either
    side are found separately.

    ```
    %y1 = ...layer ops on %x, %w1...
    %y2 = ...the same ops on %y1, %w2...
    ```
    becomes
    ```
    %y1 = func.call @f.layer0(%x, %w1)
    %y2 = func.call @f.layer0(%y1, %w2)
    ```
  }];
  let options = [
    Option<"minOps", "min-ops", "int64_t", "16",
           "the fewest ops a repeated block has, nested ones included">,
    Option<"minRepeats", "min-repeats", "int64_t", "2",
           "the fewest consecutive repeats outlined">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TrnAutoCast : Pass<"trn-auto-cast", "::mlir::func::FuncOp"> {
  let summary = "compute matmuls (or all f32 arithmetic) in bf16 or fp8";
  let description = [{
    What `trn-cc --auto-cast` asks for. `mode=matmul` converts the f32
    operands of every `dot_general` to `type` (bf16 or fp8_e4m3); the
    product stays f32, so the Tensor Engine accumulates in FP32 PSUM as
    before, at its bf16 or fp8 rate. `mode=all` (bf16 only) also computes
    every f32 elementwise op in bf16: its f32 operands are converted to bf16
    and its result back to f32, which canonicalization then removes between
    consecutive ops. Reductions, statistics and the graph's inputs and
    outputs stay f32, and so does the optimizer update: every op that
    depends on an argument of role `optimizer_state` or `hyperparameter`
    (in bf16 a weight would lose every step smaller than 2^-8 of itself, and
    Adam's bias correction 1 - 0.999^t would round to 0). Conversions round to nearest even (fp8_e4m3
    saturates). An `attention` or `attention_grad` op with f32 operands
    (kept whole for the backend's flash-style kernels) gets the attribute
    `trn.matmul_type = bf16` when `type` is bf16: its kernel then loads the
    operands as bf16 and runs its matmuls and probabilities in bf16, with
    the softmax statistics and accumulators in fp32; with fp8 it stays f32.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
  let options = [
    Option<"mode", "mode", "std::string", "\"matmul\"",
           "What to cast: matmul or all">,
    Option<"castType", "type", "std::string", "\"bf16\"",
           "The type to cast to: bf16 or fp8_e4m3">,
  ];
}

#endif // TRN_DIALECT_TRN_TRANSFORMS_PASSES_TD
