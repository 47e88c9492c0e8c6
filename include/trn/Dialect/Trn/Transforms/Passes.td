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
    default all are decomposed.
  }];
  let dependentDialects = ["::mlir::trn::TrnDialect"];
  let options = [
    ListOption<"opNames", "ops", "std::string",
               "Composite ops to decompose, e.g. softmax,attention "
               "(default: all)">,
  ];
}

#endif // TRN_DIALECT_TRN_TRANSFORMS_PASSES_TD
