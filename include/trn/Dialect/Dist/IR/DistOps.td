//===- DistOps.td - dist dialect operations ----------------*- tablegen -*-===//

#ifndef TRN_DIALECT_DIST_IR_DISTOPS_TD
#define TRN_DIALECT_DIST_IR_DISTOPS_TD

include "trn/Dialect/Dist/IR/DistBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Meshes
//===----------------------------------------------------------------------===//

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "a named grid of devices";
  let description = [{
    `dist.mesh @mesh <dp = 2, tp = 4>` declares a mesh of 8 devices with the
    axes `dp` (size 2, the major axis) and `tp` (size 4). Rank
    `r = i_dp * 4 + i_tp`. Axis names are identifiers and distinct; sizes are
    positive.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$sizes);
  let assemblyFormat = "$sym_name custom<MeshAxes>($axes, $sizes) attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The size of `axis`, if the mesh has it.
    std::optional<int64_t> sizeOf(::llvm::StringRef axis);
    /// The number of devices: the product of the sizes.
    int64_t numDevices();
  }];
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [
        Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  code extraBaseClassDeclaration = [{
    /// The number of ranks in each replica group: the product of the sizes
    /// of the named axes (valid once the symbol uses verified).
    int64_t groupSize();
  }];
}

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce",
    [SameOperandsAndResultType]> {
  let summary = "reduce over the ranks that differ along `axes`";
  let description = [{
    Every rank of a replica group gets the reduction (sum, max, min, or
    mean: the sum divided by the group size) of the group's inputs. Sums of
    bf16 or f16 accumulate in f32 and are rounded once, as the hardware's
    collective engine does. `mean` is what data parallelism uses when the
    program is one replica's step: the group size is bound when the program
    is loaded, so one program serves every data-parallel degree.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes,
                       DefaultValuedAttr<Dist_ReductionKind,
                         "::mlir::dist::ReductionKind::sum">:$reduction);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $reduction $input `on` $mesh `axes` `=` $axes attr-dict `:` type($result)
  }];
  let extraClassDeclaration = extraBaseClassDeclaration;
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather"> {
  let summary = "concatenate the group's tensors along `dim`";
  let description = [{
    The result is the group's inputs concatenated along `dim` in rank order
    (the first named axis the most major): its `dim` is the input's times
    the group size, the other dimensions are the input's.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = extraBaseClassDeclaration;
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter"> {
  let summary = "reduce over the group, each rank keeping one slice of `dim`";
  let description = [{
    The group's inputs are reduced and the result split along `dim` into
    group-size slices; rank `i` of the group keeps slice `i`. The input's
    `dim` must be a multiple of the group size.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       DefaultValuedAttr<Dist_ReductionKind,
                         "::mlir::dist::ReductionKind::sum">:$reduction);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $reduction $input `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = extraBaseClassDeclaration;
}

def Dist_AllSliceOp : Dist_CollectiveOp<"all_slice"> {
  let summary = "keep this rank's slice along `dim` (no communication)";
  let description = [{
    The inverse of `all_gather`: the input is the same on every rank of a
    group; rank `i` keeps slice `i` of group-size slices along `dim` (the
    first named axis the most major). Where a replicated value meets a use
    that wants it split, the partitioner slices it locally. A slice of an
    all_gather along another dim over the same axes canonicalizes to one
    all_to_all: each rank receives only its slice of every rank's input.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = extraBaseClassDeclaration;
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all"> {
  let summary = "split along one dim, exchange, concatenate along another";
  let description = [{
    Each rank splits its input along `split_dim` into group-size slices,
    sends slice `j` to rank `j` of its group, and concatenates what it
    receives along `concat_dim` in rank order (e.g. moving a sharding from
    the sequence dim to the heads dim).
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$split_dim,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$concat_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `split_dim` `=` $split_dim
    `concat_dim` `=` $concat_dim attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = extraBaseClassDeclaration;
}

def Dist_CollectivePermuteOp : Dist_CollectiveOp<"collective_permute",
    [SameOperandsAndResultType]> {
  let summary = "send to the rank `shift` positions along the axes";
  let description = [{
    Rank `i` of each group sends its input to rank `(i + shift) mod n` and
    receives from rank `(i - shift) mod n` (pipeline stage transfers,
    ring exchanges). `shift` is not zero.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$shift);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `shift` `=` $shift attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = extraBaseClassDeclaration;
}

//===----------------------------------------------------------------------===//
// Rank queries and annotations
//===----------------------------------------------------------------------===//

def Dist_AxisIndexOp : Dist_Op<"axis_index", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "this rank's index along mesh axes";
  let description = [{
    The rank's linear index within its group along `axes` (the first the
    most major), as a 0-d integer tensor: what a partitioned program reads
    where a value depends on the shard (the vocabulary offset of a
    vocabulary-parallel embedding, a dropout stream).
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs 0DTensorOf<[I32, I64]>:$result);
  let assemblyFormat = "`on` $mesh `axes` `=` $axes attr-dict `:` type($result)";
}

def Dist_ShardingConstraintOp : Dist_Op<"sharding_constraint", [
    Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "require a sharding at this point of the graph";
  let description = [{
    The value is the input; propagation must give it `sharding` (what
    `trn.shard(tensor, spec)` in a training script records). The sharding
    has one entry per dimension of the tensor.
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ShardingAttr:$sharding);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input $sharding attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

def Dist_SendOp : Dist_Op<"send", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "send a tensor to another stage of a pipeline";
  let description = [{
    Sends the input to the rank at index `peer` along the pipeline `axis`
    whose other coordinates are this rank's (the same tensor-parallel and
    data-parallel position on the next or previous stage). `tag` pairs it
    with the `dist.recv` of the same tag there; within a fragment run for a
    microbatch, the pair is also matched by the microbatch. A send does not
    wait for its receiver.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrAttr:$axis, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = [{
    $input `to` $peer `on` $mesh `axis` `=` $axis `tag` `=` $tag attr-dict
    `:` type($input)
  }];
}

def Dist_RecvOp : Dist_Op<"recv", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "receive a tensor from another stage of a pipeline";
  let description = [{
    Waits for the tensor the rank at index `peer` along `axis` sends with
    the same `tag` (see `dist.send`).
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrAttr:$axis, I64Attr:$peer,
                       I64Attr:$tag);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `from` $peer `on` $mesh `axis` `=` $axis `tag` `=` $tag attr-dict `:`
    type($result)
  }];
}

def Dist_PipelineOp : Dist_Op<"pipeline", [
    Symbol, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a training step cut into pipeline stages";
  let description = [{
    The step `sym_name`, cut by dist-pipeline-split into fragments: the
    functions whose `dist.pipeline` names it, one per stage (`dist.stage`,
    an index along `axis`) and phase (`dist.phase`): `forward` and
    `backward` run once per microbatch, `update` once per step after them.
    `function_type`, `arg_attrs` and `res_attrs` are the step's signature as
    its callers see it: a per-example argument (`#dist.port<"microbatch",
    N>` in the fragments) holds `microbatches` microbatches on its first
    dimension. `schedule` orders each stage's fragments: `gpipe` (every
    forward, then every backward) or `1f1b` (forwards and backwards
    interleaved, at most as many microbatches in flight as stages after
    it). docs/partitioning.md, "Pipeline parallelism".
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$mesh,
                       StrAttr:$axis, I64Attr:$microbatches,
                       StrAttr:$schedule,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let assemblyFormat = [{
    $sym_name `on` $mesh `axis` `=` $axis `microbatches` `=` $microbatches
    `schedule` `=` $schedule attr-dict
  }];
  let hasVerifier = 1;
}

#endif // TRN_DIALECT_DIST_IR_DISTOPS_TD
