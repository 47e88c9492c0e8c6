//===- TrnBase.td - trn dialect, types and enums -----------*- tablegen -*-===//
//
// The `trn` dialect: tensor-level training-step graphs.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_TRN_IR_TRNBASE_TD
#define TRN_DIALECT_TRN_IR_TRNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Trn_Dialect : Dialect {
  let name = "trn";
  let cppNamespace = "::mlir::trn";
  let summary = "Tensor-level training-step graphs for NeuronCore compilation";
  let description = [{
    The `trn` dialect describes one training step (forward, backward and
    optimizer update) as a graph of tensor operations on ranked, statically
    shaped tensors. It is the input of trn's partitioner and kernel lowering
    and the level at which compile-cache keys are computed.

    The primitive set follows StableHLO: there is no implicit broadcasting,
    every shape change is an explicit op, and every op's result type is a
    function of its operands and attributes (checked by the verifier).
    Composite ops (`softmax`, `layer_norm`, `rms_norm`, `attention`,
    `cross_entropy` and their gradients) keep structure that the backend
    maps to fused NeuronCore kernels; each has a documented decomposition into
    primitives, which the reference evaluator implements.

    A step graph is a `func.func`. Argument attributes `trn.role`
    (`"parameter"`, `"optimizer_state"`, `"gradient"` (an accumulator),
    `"hyperparameter"` (a learning rate or step count that changes without
    recompiling), `"data"`, `"label"`, `"seed"`, `"constant"`) and
    `trn.name` describe inputs; result attributes
    `trn.role` (`"output"`, `"loss"`, `"parameter"`, `"optimizer_state"`,
    `"gradient"`) and `trn.aliases = N` say that a result is the new value of
    input `N`, so a runtime may update it in place.

    Element types: `f32`, `bf16`, `f16`, `f8E4M3FN`, `f8E5M2`, `i1`, `i32`,
    `i64`.
  }];
  let useDefaultAttributePrinterParser = 0;
  let hasConstantMaterializer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Names of the argument and result attributes the dialect owns.
    static constexpr ::llvm::StringLiteral getRoleAttrName() { return "trn.role"; }
    static constexpr ::llvm::StringLiteral getNameAttrName() { return "trn.name"; }
    static constexpr ::llvm::StringLiteral getAliasesAttrName() { return "trn.aliases"; }
  }];
}

class Trn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Trn_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Trn_FloatElement : AnyTypeOf<[F32, BF16, F16, F8E4M3FN, F8E5M2]>;
def Trn_IntElement : AnyTypeOf<[I32, I64]>;

// Every trn tensor is statically shaped with an element count that fits in
// int64: shape computations (inference, the evaluator, tiling) rely on it.
def Trn_ValidShapePred : CPred<
    "::mlir::trn::hasValidTrnShape(::llvm::cast<::mlir::ShapedType>($_self))">;
class Trn_TensorOf<list<Type> types>
    : RankedTensorOf<types, [HasStaticShapePred, Trn_ValidShapePred],
                     "statically shaped tensor">;

def Trn_Tensor : Trn_TensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2, I1, I32, I64]>;
def Trn_FloatTensor : Trn_TensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2]>;
def Trn_IndexTensor : Trn_TensorOf<[I32, I64]>;
def Trn_BoolTensor : Trn_TensorOf<[I1]>;
def Trn_IntOrBoolTensor : Trn_TensorOf<[I1, I32, I64]>;
def Trn_NumericTensor : Trn_TensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2, I32, I64]>;
def Trn_SeedTensor : 0DTensorOf<[I64]>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Trn_ComparisonPredicate : I32EnumAttr<"ComparisonPredicate",
    "comparison predicate", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::mlir::trn";
}

def Trn_ReduceKind : I32EnumAttr<"ReduceKind", "reduction kind", [
      I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>, I32EnumAttrCase<"prod", 3>]> {
  let cppNamespace = "::mlir::trn";
}

def Trn_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU approximation", [
      I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::mlir::trn";
}

def Trn_LossReduction : I32EnumAttr<"LossReduction", "loss reduction", [
      I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"mean", 1>,
      I32EnumAttrCase<"sum", 2>]> {
  let cppNamespace = "::mlir::trn";
}

#endif // TRN_DIALECT_TRN_IR_TRNBASE_TD
