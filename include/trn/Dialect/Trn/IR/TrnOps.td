//===- TrnOps.td - trn dialect operations ------------------*- tablegen -*-===//
//
// Operations of the `trn` dialect. Shapes are static; no op broadcasts
// implicitly. Result types are inferred wherever operands and attributes
// decide them, and the verifier rejects any mismatch.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_TRN_IR_TRNOPS_TD
#define TRN_DIALECT_TRN_IR_TRNOPS_TD

include "trn/Dialect/Trn/IR/TrnBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class Trn_UnaryOp<string mnemonic, Type tensorType, string formula,
                  list<Trait> traits = []>
    : Trn_Op<mnemonic, !listconcat(traits, [Pure, Elementwise,
                                            SameOperandsAndResultType,
                                            InferTypeOpInterface])> {
  let summary = "elementwise " # mnemonic;
  let description = "Computes `" # formula # "` for every element.";
  let arguments = (ins tensorType:$operand);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Trn_NegOp : Trn_UnaryOp<"neg", Trn_NumericTensor, "-x"> {
  let hasFolder = 1;
}
def Trn_AbsOp : Trn_UnaryOp<"abs", Trn_NumericTensor, "|x|">;
def Trn_ExpOp : Trn_UnaryOp<"exp", Trn_FloatTensor, "e^x">;
def Trn_LogOp : Trn_UnaryOp<"log", Trn_FloatTensor, "ln(x)">;
def Trn_Log1pOp : Trn_UnaryOp<"log1p", Trn_FloatTensor, "ln(1 + x)">;
def Trn_TanhOp : Trn_UnaryOp<"tanh", Trn_FloatTensor, "tanh(x)">;
def Trn_SigmoidOp : Trn_UnaryOp<"sigmoid", Trn_FloatTensor, "1 / (1 + e^-x)">;
def Trn_SqrtOp : Trn_UnaryOp<"sqrt", Trn_FloatTensor, "sqrt(x)">;
def Trn_RsqrtOp : Trn_UnaryOp<"rsqrt", Trn_FloatTensor, "1 / sqrt(x)">;
def Trn_ReciprocalOp : Trn_UnaryOp<"reciprocal", Trn_FloatTensor, "1 / x">;
def Trn_ErfOp : Trn_UnaryOp<"erf", Trn_FloatTensor, "erf(x)">;
def Trn_ReluOp : Trn_UnaryOp<"relu", Trn_FloatTensor, "max(x, 0)">;
def Trn_SiluOp : Trn_UnaryOp<"silu", Trn_FloatTensor, "x * sigmoid(x)">;
def Trn_SinOp : Trn_UnaryOp<"sin", Trn_FloatTensor, "sin(x)">;
def Trn_CosOp : Trn_UnaryOp<"cos", Trn_FloatTensor, "cos(x)">;
def Trn_FloorOp : Trn_UnaryOp<"floor", Trn_FloatTensor, "floor(x)">;
def Trn_SignOp : Trn_UnaryOp<"sign", Trn_NumericTensor,
                             "-1, 0 or 1 by the sign of x (NaN stays NaN)">;
def Trn_NotOp : Trn_UnaryOp<"not", Trn_BoolTensor, "logical not"> {
  let hasFolder = 1;
}

def Trn_GeluOp : Trn_Op<"gelu", [Pure, Elementwise, SameOperandsAndResultType,
                                 InferTypeOpInterface]> {
  let summary = "elementwise GELU";
  let description = [{
    `approximate = none` (the default) computes `x * 0.5 * (1 + erf(x / sqrt 2))`;
    `approximate = tanh` computes
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))`, as PyTorch's
    `gelu(approximate="tanh")`.
  }];
  let arguments = (ins Trn_FloatTensor:$operand,
      DefaultValuedAttr<Trn_GeluApproximation,
                        "::mlir::trn::GeluApproximation::none">:$approximate);
  let results = (outs Trn_FloatTensor:$result);
  let assemblyFormat = [{
    $operand (`approximate` `=` $approximate^)? attr-dict `:` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops
//===----------------------------------------------------------------------===//

class Trn_BinaryOp<string mnemonic, Type tensorType, string formula,
                   list<Trait> traits = []>
    : Trn_Op<mnemonic, !listconcat(traits, [Pure, Elementwise,
                                            SameOperandsAndResultType,
                                            InferTypeOpInterface])> {
  let summary = "elementwise " # mnemonic;
  let description = "Computes `" # formula # "` for every pair of elements. "
                    "Operands have the same type; broadcasting is explicit "
                    "(`trn.broadcast_in_dim`).";
  let arguments = (ins tensorType:$lhs, tensorType:$rhs);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Trn_AddOp : Trn_BinaryOp<"add", Trn_NumericTensor, "lhs + rhs",
                             [Commutative]> {
  let hasFolder = 1;
}
def Trn_SubOp : Trn_BinaryOp<"sub", Trn_NumericTensor, "lhs - rhs"> {
  let hasFolder = 1;
}
def Trn_MulOp : Trn_BinaryOp<"mul", Trn_NumericTensor, "lhs * rhs",
                             [Commutative]> {
  let hasFolder = 1;
}
def Trn_DivOp : Trn_BinaryOp<"div", Trn_NumericTensor,
                             "lhs / rhs (integers: truncating; division by "
                             "zero is an evaluation error)"> {
  let hasFolder = 1;
}
def Trn_PowOp : Trn_BinaryOp<"pow", Trn_FloatTensor, "lhs ^ rhs">;
def Trn_MaxOp : Trn_BinaryOp<"max", Trn_NumericTensor,
                             "max(lhs, rhs), NaN if either is NaN",
                             [Commutative]>;
def Trn_MinOp : Trn_BinaryOp<"min", Trn_NumericTensor,
                             "min(lhs, rhs), NaN if either is NaN",
                             [Commutative]>;
def Trn_AndOp : Trn_BinaryOp<"and", Trn_IntOrBoolTensor, "lhs & rhs",
                             [Commutative]>;
def Trn_OrOp : Trn_BinaryOp<"or", Trn_IntOrBoolTensor, "lhs | rhs",
                            [Commutative]>;

def Trn_CompareOp : Trn_Op<"compare", [Pure, Elementwise, SameTypeOperands,
                                       InferTypeOpAdaptor]> {
  let summary = "elementwise comparison";
  let description = [{
    Compares two tensors of the same type element by element and returns an
    `i1` tensor of the same shape. Comparisons with NaN are false except `ne`.
  }];
  let arguments = (ins Trn_ComparisonPredicate:$predicate,
                       Trn_Tensor:$lhs, Trn_Tensor:$rhs);
  let results = (outs Trn_BoolTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs)";
}

def Trn_SelectOp : Trn_Op<"select", [Pure, Elementwise,
    AllTypesMatch<["on_true", "on_false", "result"]>,
    AllShapesMatch<["pred", "result"]>]> {
  let summary = "elementwise choice";
  let description = "`pred ? on_true : on_false`, element by element.";
  let arguments = (ins Trn_BoolTensor:$pred, Trn_Tensor:$on_true,
                       Trn_Tensor:$on_false);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = [{
    $pred `,` $on_true `,` $on_false attr-dict `:` type($pred) `,` type($result)
  }];
  let hasFolder = 1;
}

def Trn_ConvertOp : Trn_Op<"convert", [Pure, Elementwise,
    AllShapesMatch<["operand", "result"]>]> {
  let summary = "element type conversion";
  let description = [{
    Converts every element to the result element type. Float to float rounds
    to nearest, ties to even; f8E4M3FN saturates to +-448 and f8E5M2 overflows
    to infinity (see docs/numerics.md). Float to integer truncates toward zero
    and saturates (NaN gives 0); integer to `i1` is `x != 0`.
  }];
  let arguments = (ins Trn_Tensor:$operand);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = [{
    $operand attr-dict `:` type($operand) `->` type($result)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Trn_GeluGradOp : Trn_Op<"gelu_grad", [Pure, Elementwise,
                                          SameOperandsAndResultType,
                                          InferTypeOpInterface]> {
  let summary = "gradient of GELU";
  let description = [{
    `grad_output * d gelu(x) / dx`, with the same `approximate` as the forward
    op (PyTorch's `gelu_backward`).
  }];
  let arguments = (ins Trn_FloatTensor:$grad_output, Trn_FloatTensor:$input,
      DefaultValuedAttr<Trn_GeluApproximation,
                        "::mlir::trn::GeluApproximation::none">:$approximate);
  let results = (outs Trn_FloatTensor:$result);
  let assemblyFormat = [{
    $grad_output `,` $input (`approximate` `=` $approximate^)? attr-dict
    `:` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

def Trn_ConstantOp : Trn_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "constant tensor";
  let description = [{
    A dense (`dense<[...]>`) or splat (`dense<1.0>`) constant of any trn
    element type, bf16 and f8 included.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
    build($_builder, $_state, value.getType(), value);
  }]>];
}

def Trn_IotaOp : Trn_Op<"iota", [Pure]> {
  let summary = "index sequence along one dimension";
  let description = [{
    `result[i_0, ..., i_n] = i_dim`, converted to the result element type.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Trn_NumericTensor:$result);
  let assemblyFormat = "`dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trn_RngUniformOp : Trn_Op<"rng_uniform", [Pure]> {
  let summary = "counter-based uniform random numbers";
  let description = [{
    Element `i` (row-major linear index) is
    `low + (high - low) * u`, where `u` in [0, 1) is the top 24 bits of the
    first word of Philox4x32-10 with key = the 64-bit `seed` and counter =
    (i mod 2^32, i / 2^32, stream, 0), times 2^-24. The value of an element
    depends only on (seed, stream, index), so partitioned programs reproduce
    the unpartitioned values, and two ops with distinct `stream` values are
    independent.
  }];
  let arguments = (ins Trn_SeedTensor:$seed,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stream,
                       DefaultValuedAttr<F64Attr, "0.0">:$low,
                       DefaultValuedAttr<F64Attr, "1.0">:$high);
  let results = (outs Trn_FloatTensor:$result);
  let assemblyFormat = [{
    $seed `,` `stream` `=` $stream attr-dict `:` type($seed) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Trn_RngBernoulliOp : Trn_Op<"rng_bernoulli", [Pure]> {
  let summary = "counter-based Bernoulli samples (dropout masks)";
  let description = [{
    Element `i` is 1 when `u_i < p` and 0 otherwise, with `u_i` drawn exactly
    as in `trn.rng_uniform` for the same seed and stream. The result may be a
    float tensor (1.0 / 0.0) or an `i1` tensor.
  }];
  let arguments = (ins Trn_SeedTensor:$seed,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stream,
                       F64Attr:$p);
  let results = (outs Trn_TensorOf<[F32, BF16, F16, I1]>:$result);
  let assemblyFormat = [{
    $seed `,` `stream` `=` $stream `,` `p` `=` $p attr-dict `:` type($seed)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Trn_BroadcastInDimOp : Trn_Op<"broadcast_in_dim", [Pure]> {
  let summary = "broadcast to a larger shape";
  let description = [{
    Operand dimension `k` maps to result dimension `dims[k]`; `dims` is
    strictly increasing and every operand dimension has size 1 or the size of
    its result dimension. Result dimensions not named in `dims` are new.
  }];
  let arguments = (ins Trn_Tensor:$operand, DenseI64ArrayAttr:$dims);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $dims attr-dict `:` functional-type($operand, $result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Trn_ReshapeOp : Trn_Op<"reshape", [Pure]> {
  let summary = "reshape (row-major)";
  let description = "Reinterprets the elements, in row-major order, in a new "
                    "shape with the same number of elements.";
  let arguments = (ins Trn_Tensor:$operand);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type($operand, $result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Trn_TransposeOp : Trn_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "permute dimensions";
  let description = "`result.shape[i] = operand.shape[perm[i]]`.";
  let arguments = (ins Trn_Tensor:$operand, DenseI64ArrayAttr:$perm);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `perm` `=` $perm attr-dict `:` functional-type($operand, $result)
  }];
  let hasFolder = 1;
}

def Trn_SliceOp : Trn_Op<"slice", [Pure, InferTypeOpAdaptor]> {
  let summary = "strided static slice";
  let description = [{
    Selects `operand[start[d] : limit[d] : strides[d]]` in every dimension
    `d`; `0 <= start <= limit <= size` and `strides >= 1`.
  }];
  let arguments = (ins Trn_Tensor:$operand, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$strides);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `start` `=` $start `,` `limit` `=` $limit `,` `strides` `=`
    $strides attr-dict `:` functional-type($operand, $result)
  }];
  let hasFolder = 1;
}

def Trn_ConcatenateOp : Trn_Op<"concatenate", [Pure, SameOperandsElementType,
                                               InferTypeOpAdaptor]> {
  let summary = "concatenate along one dimension";
  let arguments = (ins Variadic<Trn_Tensor>:$inputs,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = [{
    $inputs `dim` `=` $dim attr-dict `:` functional-type($inputs, $result)
  }];
  let hasFolder = 1;
}

def Trn_RotateHalfOp : Trn_Op<"rotate_half", [Pure, SameOperandsAndResultType,
                                               InferTypeOpInterface]> {
  let summary = "the halves of the last dimension swapped, the new first negated";
  let description = [{
    `concatenate(-x[..., D/2:], x[..., :D/2])` along the last dimension `D`
    (even): the rotation of rotary position embeddings in the GPT-NeoX /
    Llama layout, `x * cos + rotate_half(x) * sin`. Its adjoint is
    `-rotate_half(g)`. `trn-fuse-elementwise` forms it from that slice, neg
    and concatenate chain, so that the rotation runs on SBUF tiles inside
    the elementwise group that applies the embedding (two engine
    instructions on half-row windows) instead of as three copies through
    HBM in half-row pieces.
  }];
  let arguments = (ins Trn_NumericTensor:$operand);
  let results = (outs Trn_NumericTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trn_PadOp : Trn_Op<"pad", [Pure, InferTypeOpAdaptor]> {
  let summary = "constant padding";
  let description = [{
    Adds `low[d]` elements before and `high[d]` after dimension `d`, filled
    with `value` (converted to the element type). Padding amounts are
    non-negative; negative padding is expressed with `trn.slice`.
  }];
  let arguments = (ins Trn_Tensor:$operand, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, F64Attr:$value);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `low` `=` $low `,` `high` `=` $high `,` `value` `=` $value
    attr-dict `:` functional-type($operand, $result)
  }];
  let hasFolder = 1;
}

def Trn_GatherOp : Trn_Op<"gather", [Pure, InferTypeOpAdaptor]> {
  let summary = "take slices by index along one axis (embedding lookup)";
  let description = [{
    NumPy `take` along `axis`, with `batch_dims` leading dimensions shared by
    `operand` and `indices` (as in TensorFlow's `gather`):

    `result.shape = operand.shape[:axis] + indices.shape[batch_dims:] +
    operand.shape[axis+1:]`, with `batch_dims <= axis` and
    `operand.shape[:batch_dims] == indices.shape[:batch_dims]`.

    An embedding lookup is `gather(table, ids, axis = 0)`; picking the label
    logit of each row is `gather(logits, labels, axis = 1, batch_dims = 1)`.
    An index outside `[0, operand.shape[axis])` is an evaluation error.
  }];
  let arguments = (ins Trn_Tensor:$operand, Trn_IndexTensor:$indices,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntNonNegative]>,
                                         "0">:$batch_dims);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $indices `]` `,` `axis` `=` $axis
    (`,` `batch_dims` `=` $batch_dims^)? attr-dict `:`
    functional-type(operands, $result)
  }];
}

def Trn_ScatterAddOp : Trn_Op<"scatter_add", [Pure, InferTypeOpAdaptor]> {
  let summary = "accumulate slices by index (embedding backward)";
  let description = [{
    The adjoint of `trn.gather` with the same `axis` and `batch_dims`: the
    result is `operand` with every slice of `updates` added at the position
    its index names; repeated indices accumulate. `updates` has the shape
    `trn.gather` would produce from `operand` and `indices`.
  }];
  let arguments = (ins Trn_NumericTensor:$operand, Trn_IndexTensor:$indices,
                       Trn_NumericTensor:$updates,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntNonNegative]>,
                                         "0">:$batch_dims);
  let results = (outs Trn_NumericTensor:$result);
  let assemblyFormat = [{
    $operand `[` $indices `]` `,` $updates `,` `axis` `=` $axis
    (`,` `batch_dims` `=` $batch_dims^)? attr-dict `:`
    functional-type(operands, $result)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and contractions
//===----------------------------------------------------------------------===//

def Trn_ReduceOp : Trn_Op<"reduce", [Pure, InferTypeOpAdaptor]> {
  let summary = "reduce over dimensions";
  let description = [{
    Reduces `operand` over `dims` (strictly increasing) with `sum`, `max`,
    `min` or `prod`; the reduced dimensions are removed. Float reductions
    accumulate in f64 in the reference evaluator; max/min propagate NaN.
  }];
  let arguments = (ins Trn_ReduceKind:$kind, Trn_NumericTensor:$operand,
                       DenseI64ArrayAttr:$dims);
  let results = (outs Trn_NumericTensor:$result);
  let assemblyFormat = [{
    $kind $operand `,` `dims` `=` $dims attr-dict `:`
    functional-type($operand, $result)
  }];
  let hasFolder = 1;
}

def Trn_ArgMaxOp : Trn_Op<"argmax", [Pure]> {
  let summary = "index of the maximum along one dimension";
  let description = [{
    Removes dimension `dim`; each result is the index of the first maximum
    (a NaN counts as the maximum, as in PyTorch).
  }];
  let arguments = (ins Trn_NumericTensor:$operand,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Trn_IndexTensor:$result);
  let assemblyFormat = [{
    $operand `,` `dim` `=` $dim attr-dict `:` functional-type($operand, $result)
  }];
  let hasVerifier = 1;
}

def Trn_DotGeneralOp : Trn_Op<"dot_general", [Pure, SameOperandsElementType]> {
  let summary = "general matrix product with batch and contracting dims";
  let description = [{
    As StableHLO's `dot_general`: the result shape is the batch dimensions (in
    the order given), then the remaining `lhs` dimensions, then the remaining
    `rhs` dimensions. Products accumulate in at least f32 (f64 in the
    reference evaluator); the result element type may be wider than the
    operands' (e.g. bf16 x bf16 -> f32).
  }];
  let arguments = (ins Trn_FloatTensor:$lhs, Trn_FloatTensor:$rhs,
                       DenseI64ArrayAttr:$lhs_batching_dims,
                       DenseI64ArrayAttr:$rhs_batching_dims,
                       DenseI64ArrayAttr:$lhs_contracting_dims,
                       DenseI64ArrayAttr:$rhs_contracting_dims);
  let results = (outs Trn_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` `batching_dims` `=` $lhs_batching_dims `x`
    $rhs_batching_dims `,` `contracting_dims` `=` $lhs_contracting_dims `x`
    $rhs_contracting_dims attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The result type of a dot_general of `lhs` and `rhs` with these
    /// dimension numbers, or a null type (and an error at `loc` if given)
    /// when they are invalid.
    static ::mlir::RankedTensorType inferResultType(
        ::std::optional<::mlir::Location> loc, ::mlir::RankedTensorType lhs,
        ::mlir::RankedTensorType rhs, ::llvm::ArrayRef<int64_t> lhsBatch,
        ::llvm::ArrayRef<int64_t> rhsBatch,
        ::llvm::ArrayRef<int64_t> lhsContract,
        ::llvm::ArrayRef<int64_t> rhsContract, ::mlir::Type elementType);
    /// The dims of the lhs (or the rhs) that are neither batch nor
    /// contracting dims, in order: the result's dims are the batch dims,
    /// then the lhs's free dims, then the rhs's.
    ::llvm::SmallVector<int64_t> getFreeDims(bool lhs);
  }];
}

//===----------------------------------------------------------------------===//
// Composites (kept for kernel selection; decompositions in docs/dialects)
//===----------------------------------------------------------------------===//

def Trn_SoftmaxOp : Trn_Op<"softmax", [Pure, SameOperandsAndResultType,
                                       InferTypeOpInterface]> {
  let summary = "softmax along one dimension";
  let description = [{
    `exp(x - max(x)) / sum(exp(x - max(x)))` along `dim`.
  }];
  let arguments = (ins Trn_FloatTensor:$operand,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Trn_FloatTensor:$result);
  let assemblyFormat = "$operand `,` `dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trn_LogSoftmaxOp : Trn_Op<"log_softmax", [Pure, SameOperandsAndResultType,
                                              InferTypeOpInterface]> {
  let summary = "log-softmax along one dimension";
  let description = "`x - max(x) - log(sum(exp(x - max(x))))` along `dim`.";
  let arguments = (ins Trn_FloatTensor:$operand,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Trn_FloatTensor:$result);
  let assemblyFormat = "$operand `,` `dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trn_SoftmaxGradOp : Trn_Op<"softmax_grad", [Pure, SameOperandsAndResultType,
                                                InferTypeOpInterface]> {
  let summary = "gradient of softmax";
  let description = [{
    From the forward `output` y and `grad_output` dy:
    `y * (dy - sum(dy * y))`, the sum along `dim`.
  }];
  let arguments = (ins Trn_FloatTensor:$output, Trn_FloatTensor:$grad_output,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Trn_FloatTensor:$result);
  let assemblyFormat = [{
    $output `,` $grad_output `,` `dim` `=` $dim attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Trn_LogSoftmaxGradOp : Trn_Op<"log_softmax_grad", [Pure,
    SameOperandsAndResultType, InferTypeOpInterface]> {
  let summary = "gradient of log-softmax";
  let description = [{
    From the forward `output` y and `grad_output` dy:
    `dy - exp(y) * sum(dy)`, the sum along `dim`.
  }];
  let arguments = (ins Trn_FloatTensor:$output, Trn_FloatTensor:$grad_output,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Trn_FloatTensor:$result);
  let assemblyFormat = [{
    $output `,` $grad_output `,` `dim` `=` $dim attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Trn_LayerNormOp : Trn_Op<"layer_norm", [Pure, InferTypeOpAdaptor]> {
  let summary = "layer normalisation over trailing dimensions";
  let description = [{
    Normalises over dimensions `axis ..< rank`:
    `mean = E[x]`, `rstd = 1 / sqrt(Var[x] + eps)` (biased variance),
    `output = (x - mean) * rstd * weight + bias`. `weight` and `bias` have
    shape `input.shape[axis:]`. `mean` and `rstd` are f32 of shape
    `input.shape[:axis]`, kept for the backward pass (PyTorch's
    `native_layer_norm`).
  }];
  let arguments = (ins Trn_FloatTensor:$input, Trn_FloatTensor:$weight,
                       Trn_FloatTensor:$bias,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       F64Attr:$epsilon);
  let results = (outs Trn_FloatTensor:$output, Trn_FloatTensor:$mean,
                      Trn_FloatTensor:$rstd);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `,` `axis` `=` $axis `,` `eps` `=` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
}

def Trn_LayerNormGradOp : Trn_Op<"layer_norm_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of layer normalisation";
  let description = [{
    With `xhat = (x - mean) * rstd` and `g = grad_output * weight`, over the
    normalised dimensions of size N:
    `grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat))`,
    `grad_weight = sum over leading dims of grad_output * xhat`,
    `grad_bias = sum over leading dims of grad_output`.
  }];
  let arguments = (ins Trn_FloatTensor:$grad_output, Trn_FloatTensor:$input,
                       Trn_FloatTensor:$mean, Trn_FloatTensor:$rstd,
                       Trn_FloatTensor:$weight,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs Trn_FloatTensor:$grad_input,
                      Trn_FloatTensor:$grad_weight, Trn_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $mean `,` $rstd `,` $weight `,` `axis` `=` $axis
    attr-dict `:` functional-type(operands, results)
  }];
}

def Trn_RmsNormOp : Trn_Op<"rms_norm", [Pure, InferTypeOpAdaptor]> {
  let summary = "RMS normalisation over trailing dimensions";
  let description = [{
    `rstd = 1 / sqrt(mean(x^2) + eps)` over dimensions `axis ..< rank`,
    `output = x * rstd * weight`; `rstd` is f32 of shape `input.shape[:axis]`.
  }];
  let arguments = (ins Trn_FloatTensor:$input, Trn_FloatTensor:$weight,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       F64Attr:$epsilon);
  let results = (outs Trn_FloatTensor:$output, Trn_FloatTensor:$rstd);
  let assemblyFormat = [{
    $input `,` $weight `,` `axis` `=` $axis `,` `eps` `=` $epsilon attr-dict
    `:` functional-type(operands, results)
  }];
}

def Trn_RmsNormGradOp : Trn_Op<"rms_norm_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of RMS normalisation";
  let description = [{
    With `xhat = x * rstd` and `g = grad_output * weight`:
    `grad_input = rstd * (g - xhat * mean(g * xhat))`,
    `grad_weight = sum over leading dims of grad_output * xhat`.
  }];
  let arguments = (ins Trn_FloatTensor:$grad_output, Trn_FloatTensor:$input,
                       Trn_FloatTensor:$rstd, Trn_FloatTensor:$weight,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs Trn_FloatTensor:$grad_input,
                      Trn_FloatTensor:$grad_weight);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $rstd `,` $weight `,` `axis` `=` $axis
    attr-dict `:` functional-type(operands, results)
  }];
}

def Trn_AttentionOp : Trn_Op<"attention", [Pure, InferTypeOpAdaptor]> {
  let summary = "scaled dot-product attention";
  let description = [{
    `query` [..., S, D], `key` [..., T, D], `value` [..., T, Dv] with equal
    leading (batch, head) dimensions:
    `p = softmax(scale * q k^T + mask)`, `output = p v` of shape [..., S, Dv].
    With `causal`, position (i, j) is masked when `j > i` (PyTorch's
    `is_causal`, top-left aligned). `lse` (f32, [..., S]) is the
    log-sum-exp of each row of scaled scores, kept for the backward pass in
    the flash-attention style.

    `seq_dim` places the sequence dimension of query, key, value and output
    elsewhere than second to last, e.g. `seq_dim = 1` for [B, S, H, D]
    operands straight from a projection (no head transpose); the dims other
    than it and the last are the batch dims, in order, and `lse` is always
    [batch dims..., S]. trn-assign-layouts sets it.
  }];
  let arguments = (ins Trn_FloatTensor:$query, Trn_FloatTensor:$key,
                       Trn_FloatTensor:$value, F64Attr:$scale,
                       UnitAttr:$causal,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$seq_dim);
  let results = (outs Trn_FloatTensor:$output, Trn_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` `scale` `=` $scale (`causal` $causal^)?
    (`seq_dim` `=` $seq_dim^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Trn_AttentionGradOp : Trn_Op<"attention_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of scaled dot-product attention";
  let description = [{
    Recomputes `p = exp(scale * q k^T + mask - lse)` and returns
    `grad_value = p^T do`, `ds = p * (do v^T - rowsum(do * output))`,
    `grad_query = scale * ds k`, `grad_key = scale * ds^T q`. `seq_dim` as
    for `trn.attention`, for every operand and result but `lse`.
  }];
  let arguments = (ins Trn_FloatTensor:$query, Trn_FloatTensor:$key,
                       Trn_FloatTensor:$value, Trn_FloatTensor:$output,
                       Trn_FloatTensor:$lse, Trn_FloatTensor:$grad_output,
                       F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$seq_dim);
  let results = (outs Trn_FloatTensor:$grad_query, Trn_FloatTensor:$grad_key,
                      Trn_FloatTensor:$grad_value);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $lse `,` $grad_output `,`
    `scale` `=` $scale (`causal` $causal^)? (`seq_dim` `=` $seq_dim^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Trn_CrossEntropyOp : Trn_Op<"cross_entropy", [Pure, InferTypeOpAdaptor]> {
  let summary = "softmax cross-entropy with integer labels";
  let description = [{
    `logits` [N, C], `labels` [N]: per row `lse(logits) - logits[label]`;
    rows whose label equals `ignore_index` contribute 0. `reduction = none`
    returns [N]; `sum` a 0-d sum; `mean` the sum divided by the number of
    rows not ignored (NaN when every row is ignored, as in PyTorch). A label
    outside `[0, C)` other than `ignore_index` is an evaluation error.
  }];
  let arguments = (ins Trn_FloatTensor:$logits, Trn_IndexTensor:$labels,
                       Trn_LossReduction:$reduction,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Trn_FloatTensor:$loss);
  let assemblyFormat = [{
    $reduction $logits `,` $labels attr-dict `:`
    functional-type(operands, results)
  }];
}

def Trn_CrossEntropyGradOp : Trn_Op<"cross_entropy_grad",
                                    [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of softmax cross-entropy";
  let description = [{
    `grad_logits[n] = g_n * (softmax(logits[n]) - onehot(labels[n]))`, where
    `g_n` is `grad_loss[n]` (`none`), `grad_loss` (`sum`) or
    `grad_loss / count` (`mean`), and 0 for ignored rows.
  }];
  let arguments = (ins Trn_FloatTensor:$logits, Trn_IndexTensor:$labels,
                       Trn_FloatTensor:$grad_loss,
                       Trn_LossReduction:$reduction,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Trn_FloatTensor:$grad_logits);
  let assemblyFormat = [{
    $reduction $logits `,` $labels `,` $grad_loss attr-dict `:`
    functional-type(operands, results)
  }];
}


//===----------------------------------------------------------------------===//
// Fusion groups (formed by trn-fuse-elementwise)
//===----------------------------------------------------------------------===//

def Trn_FusionOp : Trn_Op<"fusion", [IsolatedFromAbove, RecursiveMemoryEffects,
                                     RecursivelySpeculatable,
                                     SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "elementwise ops and row reductions lowered as one kernel";
  let description = [{
    The body computes the results from the inputs (its block arguments) with
    elementwise ops, `broadcast_in_dim`, splat `constant`s and `reduce` over
    the last dimension of the group's shape. The backend loads each input
    tile once, computes the whole body in on-chip memory and stores only the
    results, instead of a round trip through HBM per op. `trn-fuse-elementwise`
    forms these groups; the semantics are those of the body's ops.

    A group may start with one `dot_general` of two block arguments (a
    matmul and its epilogue, formed by `trn-fuse-matmul-epilogue`): the
    rest of the body is then applied to each result tile as it leaves the
    accumulator, and the matmul's result reaches HBM only if it is yielded.
  }];
  let arguments = (ins Variadic<Trn_Tensor>:$inputs);
  let results = (outs Variadic<Trn_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`(` $inputs^ `:` type($inputs) `)`)? attr-dict-with-keyword `->`
    `(` type($results) `)` $body
  }];
  let hasRegionVerifier = 1;
}

def Trn_PipelineStageOp : Trn_Op<"pipeline_stage", [Pure,
                                                    SameOperandsAndResultType]> {
  let summary = "the start of the next pipeline stage (an explicit cut)";
  let description = [{
    Returns its operand. It marks where the model's forward pass moves to the
    next pipeline stage (`trn.pipeline_stage(x)` in a PyTorch model): with
    markers, dist-pipeline-stages gives each parameter the stage of the
    forward ops that first use it (the markers on their inputs' paths) instead
    of cutting equal runs of layers, and a step with N markers needs N + 1
    stages. The markers are removed once stages are assigned, and a step
    compiled without pipeline parallelism ignores them.
  }];
  let arguments = (ins Trn_Tensor:$input);
  let results = (outs Trn_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Trn_YieldOp : Trn_Op<"yield", [Pure, Terminator, HasParent<"FusionOp">]> {
  let summary = "the results of a fusion group";
  let arguments = (ins Variadic<Trn_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
}

#endif // TRN_DIALECT_TRN_IR_TRNOPS_TD
