//===- NCOps.td - nc dialect operations --------------------*- tablegen -*-===//
//
// One op per NeuronCore instruction (runtime/include/trnrt/Isa.h), plus the
// allocation and view ops that name the tiles instructions work on.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_NC_IR_NCOPS_TD
#define TRN_DIALECT_NC_IR_NCOPS_TD

include "trn/Dialect/NC/IR/NCBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"

def NC_AnyTile : Type<CPred<"::llvm::isa<::mlir::nc::TileType>($_self)">,
                      "nc tile", "::mlir::nc::TileType">;
def NC_AnyHbm : Type<CPred<"::llvm::isa<::mlir::nc::HbmType>($_self)">,
                     "nc HBM tensor", "::mlir::nc::HbmType">;
def NC_TileOrHbm : AnyTypeOf<[NC_AnyTile, NC_AnyHbm]>;

def NC_Dst : Arg<NC_AnyTile, "destination tile", [MemWrite]>;
def NC_Src : Arg<NC_AnyTile, "source tile", [MemRead]>;

//===----------------------------------------------------------------------===//
// Storage
//===----------------------------------------------------------------------===//

def NC_AllocOp : NC_Op<"alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "allocate an SBUF or PSUM tile";
  let description = [{
    `start_partition` and `byte_offset` (bytes within each partition) are
    assigned by the allocator (`nc-allocate`); the verifier checks they are
    within the memory and obey the start-partition rules.
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$start_partition,
                       OptionalAttr<I64Attr>:$byte_offset);
  let results = (outs NC_AnyTile:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NC_CallOp : NC_Op<"call", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run a subroutine kernel (a repeated layer compiled once)";
  let description = [{
    Runs the kernel `callee` of the same module on `inputs` (read) and
    `outputs` (written): the callee's arguments, inputs first, each the
    same number of bytes as the HBM tensor bound to it. A call is a barrier
    on every stream (docs/isa.md, "Subroutines"): no tile of the caller is
    live across it, and the callee's instructions run after the caller's
    earlier ones and before its later ones.

    ```mlir
    nc.call @layer(%x, %w) outs(%y) : (!nc.hbm<128x64xf32>, !nc.hbm<64x64xf32>) -> (!nc.hbm<128x64xf32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee,
                       Arg<Variadic<NC_AnyHbm>, "read", [MemRead]>:$inputs,
                       Arg<Variadic<NC_AnyHbm>, "written", [MemWrite]>:$outputs);
  let assemblyFormat = [{
    $callee `(` $inputs `)` `outs` `(` $outputs `)` attr-dict `:`
    `(` type($inputs) `)` `->` `(` type($outputs) `)`
  }];
}

def NC_KindOp : NC_Op<"kind"> {
  let summary = "what the instructions that follow compute (provenance)";
  let description = [{
    The lowering marks where the instructions of one kind of trn op begin:
    `matmul`, `attention`, `elementwise`, `optimizer`, `data_movement`,
    `collective` or `other`. The exporter records every instruction's kind
    (trnrt::InstructionKind; the artifact's optional `kinds` section) and the
    simulator splits a run's time by it; `origin` names the trn op (the
    `origins` section: profiles list time and traffic per op). No
    instruction of its own.

    ```mlir
    nc.kind "attention"
    ```
  }];
  let arguments = (ins StrAttr:$kind, OptionalAttr<StrAttr>:$origin);
  let assemblyFormat = "$kind attr-dict";
  let hasVerifier = 1;
}

def NC_HbmAllocOp : NC_Op<"hbm_alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "allocate an HBM scratch tensor (intermediates, spills)";
  let description = [{
    `byte_offset` (set by nc-allocate) places the tensor in the kernel's
    scratch region, which the exporter lays out after the arguments and
    constants; scratch tensors that are not live at the same time may share
    bytes.
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<I64Attr>:$byte_offset);
  let results = (outs NC_AnyHbm:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def NC_HbmReshapeOp : NC_Op<"hbm_reshape", [Pure]> {
  let summary = "the same HBM bytes with another row-major shape";
  let description = [{
    Reinterprets an HBM tensor with a shape of the same element count (e.g. a
    [N, C] tensor as an [N*C, 1] table for an element-wise gather), or, with
    `offset`, the contiguous elements `offset ..< offset + count` of it (a
    block of whole rows: a slice that needs no copy) as a tensor of its own.
  }];
  let arguments = (ins NC_AnyHbm:$source, OptionalAttr<I64Attr>:$offset);
  let results = (outs NC_AnyHbm:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def NC_HbmConstantOp : NC_Op<"hbm_constant", [Pure]> {
  let summary = "a constant HBM tensor, stored in the artifact";
  let arguments = (ins StrAttr:$name, ElementsAttr:$value);
  let results = (outs NC_AnyHbm:$result);
  let assemblyFormat = "$name $value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NC_ViewOp : NC_Op<"view", [Pure]> {
  let summary = "a window of a tile or of an HBM tensor";
  let description = [{
    Selects partitions `start_partition ..< start_partition + P` (P is the
    result's partition count) and, in every partition, the free elements
    `offset + sum(i_d * strides[d])` for `i_d < sizes[d]` (in elements of the
    source's row-major free layout). On an HBM tensor, the result is a
    tile-shaped window for DMA: partition `p` starts at element
    `offset + p * partition_stride` of the tensor. An HBM view of an i64
    tensor may read it as i32 (offsets and strides in i32 elements): the low
    words of little-endian i64 indices are their i32 values.
  }];
  let arguments = (ins NC_TileOrHbm:$source,
                       DefaultValuedAttr<I64Attr, "0">:$start_partition,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       DefaultValuedAttr<I64Attr, "0">:$partition_stride,
                       DenseI64ArrayAttr:$strides);
  let results = (outs NC_AnyTile:$result);
  let assemblyFormat = [{
    $source `strides` $strides attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor Engine
//===----------------------------------------------------------------------===//

def NC_MatmulOp : NC_Op<"matmul"> {
  let summary = "dst[M,N] (+)= stationary[K,M]^T moving[K,N] into PSUM (fp32)";
  let arguments = (ins NC_Dst:$dst, NC_Src:$stationary, NC_Src:$moving,
                       UnitAttr:$accumulate);
  let assemblyFormat = [{
    $dst `,` $stationary `,` $moving (`accumulate` $accumulate^)? attr-dict `:`
    type($dst) `,` type($stationary) `,` type($moving)
  }];
  let hasVerifier = 1;
}

def NC_TransposeOp : NC_Op<"transpose"> {
  let summary = "dst[F,P] = src[P,F] on the Tensor Engine (into PSUM)";
  let arguments = (ins NC_Dst:$dst, NC_Src:$src);
  let assemblyFormat = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Scalar Engine
//===----------------------------------------------------------------------===//

def NC_ActivationOp : NC_Op<"activation", [AttrSizedOperandSegments]> {
  let summary = "dst = func(src * scale + bias) on the Scalar Engine";
  let description = [{
    `scale` is an immediate or a [P, 1] fp32 column (`scale_column`); `bias`
    is a [P, 1] fp32 column or an immediate. With `row_sum`, each partition's
    results are also summed into the [P, 1] fp32 tile `row_sum`.
  }];
  let arguments = (ins NC_ActivationFunc:$func, NC_Dst:$dst, NC_Src:$src,
                       Arg<Optional<NC_AnyTile>, "scale column", [MemRead]>:$scale_column,
                       Arg<Optional<NC_AnyTile>, "bias column", [MemRead]>:$bias_column,
                       Arg<Optional<NC_AnyTile>, "row sums", [MemWrite]>:$row_sum,
                       DefaultValuedAttr<F32Attr, "1.0">:$scale,
                       DefaultValuedAttr<F32Attr, "0.0">:$bias);
  let assemblyFormat = [{
    $func $dst `,` $src (`scale_column` $scale_column^)?
    (`bias_column` $bias_column^)? (`row_sum` $row_sum^)? attr-dict `:`
    type(operands)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Vector Engine (and GpSimd forms)
//===----------------------------------------------------------------------===//

def NC_TensorTensorOp : NC_Op<"tensor_tensor"> {
  let summary = "dst = a op b";
  let arguments = (ins NC_AluOp:$op, NC_Dst:$dst, NC_Src:$lhs, NC_Src:$rhs,
                       DefaultValuedAttr<NC_Engine, "::mlir::nc::Engine::vector">:$engine);
  let assemblyFormat = [{
    $op $dst `,` $lhs `,` $rhs (`on` $engine^)? attr-dict `:` type($dst) `,`
    type($lhs) `,` type($rhs)
  }];
  let hasVerifier = 1;
}

def NC_TensorScalarOp : NC_Op<"tensor_scalar", [AttrSizedOperandSegments]> {
  let summary = "dst = (src op0 s0) op1 s1";
  let description = [{
    `s0`, `s1` are immediates (`scalar0`, `scalar1`) or [P, 1] fp32 columns
    (`column0`, `column1`); `reverse0`/`reverse1` compute `s op x`. `op1 =
    bypass` leaves the second step out.
  }];
  let arguments = (ins NC_AluOp:$op0, NC_AluOp:$op1, NC_Dst:$dst, NC_Src:$src,
                       Arg<Optional<NC_AnyTile>, "first scalar column", [MemRead]>:$column0,
                       Arg<Optional<NC_AnyTile>, "second scalar column", [MemRead]>:$column1,
                       DefaultValuedAttr<F32Attr, "0.0">:$scalar0,
                       DefaultValuedAttr<F32Attr, "0.0">:$scalar1,
                       UnitAttr:$reverse0, UnitAttr:$reverse1,
                       DefaultValuedAttr<NC_Engine, "::mlir::nc::Engine::vector">:$engine);
  let assemblyFormat = [{
    $op0 `,` $op1 $dst `,` $src (`column0` $column0^)? (`column1` $column1^)?
    (`on` $engine^)? attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def NC_TensorReduceOp : NC_Op<"tensor_reduce"> {
  let summary = "dst[P,1] = reduce(op, src over all free dims)";
  let arguments = (ins NC_AluOp:$op, NC_Dst:$dst, NC_Src:$src,
                       UnitAttr:$negate,
                       DefaultValuedAttr<NC_Engine, "::mlir::nc::Engine::vector">:$engine);
  let assemblyFormat = [{
    $op $dst `,` $src (`negate` $negate^)? (`on` $engine^)? attr-dict `:`
    type($dst) `,` type($src)
  }];
  let hasVerifier = 1;
}

def NC_TensorCopyOp : NC_Op<"tensor_copy"> {
  let summary = "dst = src, converted to dst's element type";
  let arguments = (ins NC_Dst:$dst, NC_Src:$src,
                       DefaultValuedAttr<NC_Engine, "::mlir::nc::Engine::vector">:$engine);
  let assemblyFormat = [{
    $dst `,` $src (`on` $engine^)? attr-dict `:` type($dst) `,` type($src)
  }];
  let hasVerifier = 1;
}

def NC_SelectOp : NC_Op<"select"> {
  let summary = "dst = pred != 0 ? on_true : on_false";
  let arguments = (ins NC_Dst:$dst, NC_Src:$pred, NC_Src:$on_true,
                       NC_Src:$on_false);
  let assemblyFormat = [{
    $dst `,` $pred `,` $on_true `,` $on_false attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def NC_BnStatsOp : NC_Op<"bn_stats"> {
  let summary = "per-partition mean/variance statistics (6 fp32 per partition)";
  let arguments = (ins NC_Dst:$dst, NC_Src:$src);
  let assemblyFormat = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)";
  let hasVerifier = 1;
}

def NC_BnAggrOp : NC_Op<"bn_aggr"> {
  let summary = "combine bn_stats tuples into (mean, variance)";
  let arguments = (ins NC_Dst:$dst, NC_Src:$src);
  let assemblyFormat = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)";
  let hasVerifier = 1;
}

def NC_MemsetOp : NC_Op<"memset"> {
  let summary = "fill a tile with a constant";
  let arguments = (ins NC_Dst:$dst, F32Attr:$value,
                       DefaultValuedAttr<NC_Engine, "::mlir::nc::Engine::vector">:$engine);
  let assemblyFormat = "$dst `,` $value (`on` $engine^)? attr-dict `:` type($dst)";
  let hasVerifier = 1;
}

def NC_RngOp : NC_Op<"rng"> {
  let summary = "counter-based random numbers (Philox4x32-10) on the Vector Engine";
  let description = [{
    Element `[p, i...]` draws `u` = the top 24 bits of Philox4x32-10 word 0
    with key = the 64-bit seed (`seed` holds its low and high words as two
    i32 on every partition of `dst`) and counter = (c mod 2^32, c / 2^32,
    `stream`, 0), where `c = base + p * channel_multiplier + sum(steps * i)`
    in 64 bits. With `keep_below = T` it writes `u < T ? 1 : 0` (dropout
    masks; T = ceil(p * 2^24) makes this exactly `u * 2^-24 < p`), otherwise
    `low + (high - low) * u * 2^-24` rounded once to the element type.
    These are the values trn.rng_bernoulli and trn.rng_uniform define for
    the element whose row-major index is `c`.
  }];
  let arguments = (ins NC_Dst:$dst, NC_Src:$seed,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stream,
                       I64Attr:$base, I64Attr:$channel_multiplier,
                       DenseI64ArrayAttr:$steps,
                       OptionalAttr<I64Attr>:$keep_below,
                       DefaultValuedAttr<F32Attr, "0.0f">:$low,
                       DefaultValuedAttr<F32Attr, "1.0f">:$high);
  let assemblyFormat = [{
    $dst `,` $seed `,` `stream` `=` $stream `,` `base` `=` $base `,`
    `channel_multiplier` `=` $channel_multiplier `,` `steps` `=` $steps
    attr-dict `:` type($dst) `,` type($seed)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GpSimd
//===----------------------------------------------------------------------===//

def NC_IotaOp : NC_Op<"iota"> {
  let summary = "dst[p, i...] = base + p * channel_multiplier + sum(steps * i)";
  let arguments = (ins NC_Dst:$dst, I64Attr:$base, I64Attr:$channel_multiplier,
                       DenseI64ArrayAttr:$steps);
  let assemblyFormat = [{
    $dst `,` `base` `=` $base `,` `channel_multiplier` `=` $channel_multiplier
    `,` `steps` `=` $steps attr-dict `:` type($dst)
  }];
  let hasVerifier = 1;
}

def NC_AffineSelectOp : NC_Op<"affine_select"> {
  let summary = "dst = cmp(affine(p, i), 0) ? src : fill (causal masks)";
  let arguments = (ins NC_Dst:$dst, NC_Src:$src, NC_CompareOp:$compare,
                       I64Attr:$base, I64Attr:$channel_multiplier,
                       DenseI64ArrayAttr:$steps, F32Attr:$fill);
  let assemblyFormat = [{
    $compare $dst `,` $src `,` `base` `=` $base `,` `channel_multiplier` `=`
    $channel_multiplier `,` `steps` `=` $steps `,` `fill` `=` $fill attr-dict
    `:` type($dst) `,` type($src)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// DMA
//===----------------------------------------------------------------------===//

def NC_DmaCopyOp : NC_Op<"dma_copy"> {
  let summary = "copy between HBM and SBUF (cast through fp32)";
  let arguments = (ins NC_Dst:$dst, NC_Src:$src,
                       DefaultValuedAttr<I64Attr, "0">:$queue);
  let assemblyFormat = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)";
  let hasVerifier = 1;
}

def NC_DmaGatherOp : NC_Op<"dma_gather"> {
  let summary = "dst[p, :] = table[indices[p], :] (embedding lookup)";
  let arguments = (ins NC_Dst:$dst, Arg<NC_AnyHbm, "table", [MemRead]>:$table,
                       NC_Src:$indices, DefaultValuedAttr<I64Attr, "0">:$queue);
  let assemblyFormat = [{
    $dst `,` $table `[` $indices `]` attr-dict `:` type($dst) `,` type($table)
    `,` type($indices)
  }];
  let hasVerifier = 1;
}

def NC_DmaScatterAddOp : NC_Op<"dma_scatter_add"> {
  let summary = "table[indices[p], :] += src[p, :] (embedding backward)";
  let arguments = (ins Arg<NC_AnyHbm, "table", [MemRead, MemWrite]>:$table,
                       NC_Src:$src, NC_Src:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$queue);
  let assemblyFormat = [{
    $table `[` $indices `]` `,` $src attr-dict `:` type($table) `,`
    type($indices) `,` type($src)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives (Sync engine; docs/isa.md §5.6)
//===----------------------------------------------------------------------===//

def NC_HbmDst : Arg<NC_AnyHbm, "destination HBM tensor", [MemWrite]>;
def NC_HbmSrc : Arg<NC_AnyHbm, "source HBM tensor", [MemRead]>;

class NC_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : NC_Op<mnemonic, traits> {
  let hasVerifier = 1;
  code extraCollectiveDeclaration = [{
    /// The product of the compile-time sizes of `axes` (nc.mesh_sizes of the
    /// kernel), or std::nullopt outside a kernel with a mesh.
    std::optional<int64_t> groupSize();
  }];
  let extraClassDeclaration = extraCollectiveDeclaration;
}

def NC_AllReduceOp : NC_CollectiveOp<"all_reduce"> {
  let summary = "dst = the reduction of src over the ranks along `axes`";
  let description = [{
    Whole HBM tensors; the replica group is the ranks that differ only along
    `axes` (names of the kernel's `nc.mesh_axes`), bound at load time.
    `mean` divides the sum by the group size. Float sums accumulate in f32
    and round once.
  }];
  let arguments = (ins NC_CollectiveReduction:$reduction, NC_HbmDst:$dst,
                       NC_HbmSrc:$src, StrArrayAttr:$axes);
  let assemblyFormat = [{
    $reduction $dst `,` $src `axes` `=` $axes attr-dict `:` type($dst) `,`
    type($src)
  }];
}

def NC_AllGatherOp : NC_CollectiveOp<"all_gather"> {
  let summary = "dst = the group's src concatenated along `dim`";
  let arguments = (ins NC_HbmDst:$dst, NC_HbmSrc:$src, StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let assemblyFormat = [{
    $dst `,` $src `axes` `=` $axes `dim` `=` $dim attr-dict `:` type($dst) `,`
    type($src)
  }];
}

def NC_ReduceScatterOp : NC_CollectiveOp<"reduce_scatter"> {
  let summary = "dst = this rank's slice along `dim` of the group's reduction";
  let arguments = (ins NC_CollectiveReduction:$reduction, NC_HbmDst:$dst,
                       NC_HbmSrc:$src, StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let assemblyFormat = [{
    $reduction $dst `,` $src `axes` `=` $axes `dim` `=` $dim attr-dict `:`
    type($dst) `,` type($src)
  }];
}

def NC_AllSliceOp : NC_CollectiveOp<"all_slice"> {
  let summary = "dst = this rank's slice of src along `dim` (no communication)";
  let arguments = (ins NC_HbmDst:$dst, NC_HbmSrc:$src, StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let assemblyFormat = [{
    $dst `,` $src `axes` `=` $axes `dim` `=` $dim attr-dict `:` type($dst) `,`
    type($src)
  }];
}

def NC_AllToAllOp : NC_CollectiveOp<"all_to_all"> {
  let summary = "split src along `split_dim`, exchange, concatenate along `concat_dim`";
  let arguments = (ins NC_HbmDst:$dst, NC_HbmSrc:$src, StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$split_dim,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$concat_dim);
  let assemblyFormat = [{
    $dst `,` $src `axes` `=` $axes `split_dim` `=` $split_dim `concat_dim` `=`
    $concat_dim attr-dict `:` type($dst) `,` type($src)
  }];
}

def NC_CollectivePermuteOp : NC_CollectiveOp<"collective_permute"> {
  let summary = "dst = src of the rank `shift` positions before along `axes`";
  let arguments = (ins NC_HbmDst:$dst, NC_HbmSrc:$src, StrArrayAttr:$axes,
                       I64Attr:$shift);
  let assemblyFormat = [{
    $dst `,` $src `axes` `=` $axes `shift` `=` $shift attr-dict `:` type($dst)
    `,` type($src)
  }];
}

def NC_AxisIndexOp : NC_CollectiveOp<"axis_index"> {
  let summary = "dst (one i32 or i64) = this rank's index along `axes`";
  let arguments = (ins NC_HbmDst:$dst, StrArrayAttr:$axes);
  let assemblyFormat = "$dst `axes` `=` $axes attr-dict `:` type($dst)";
}

// Pipeline transfers: the send has an effect beyond reading src (the peer
// receives it), so it is never dead.
def NC_SendOp : NC_CollectiveOp<"send", [MemoryEffects<[MemWrite]>]> {
  let summary = "post src for the rank at index `peer` along the one axis";
  let description = [{
    The rank whose index along `axes` (one axis, the pipeline's) is `peer`
    and whose other coordinates are this rank's receives src with the
    `nc.recv` of the same `tag`. Does not wait for the receiver.
  }];
  let arguments = (ins NC_HbmSrc:$src, StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let assemblyFormat = [{
    $src `to` $peer `axes` `=` $axes `tag` `=` $tag attr-dict `:` type($src)
  }];
}

def NC_RecvOp : NC_CollectiveOp<"recv"> {
  let summary = "dst = what the rank at index `peer` sent with `tag`";
  let arguments = (ins NC_HbmDst:$dst, StrArrayAttr:$axes,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let assemblyFormat = [{
    $dst `from` $peer `axes` `=` $axes `tag` `=` $tag attr-dict `:` type($dst)
  }];
}

#endif // TRN_DIALECT_NC_IR_NCOPS_TD
