//===- Passes.td - trn conversion passes -------------------*- tablegen -*-===//

#ifndef TRN_CONVERSION_PASSES_TD
#define TRN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTrnToNC : Pass<"convert-trn-to-nc", "::mlir::ModuleOp"> {
  let summary = "lower a trn step graph to an nc kernel";
  let description = [{
    Replaces the module's trn function by an nc kernel of the same name whose
    arguments are HBM tensors: the graph's inputs, then one output per result
    (a result that `trn.aliases` an input updates that input in place, as an
    "inout" argument). Every tensor lives in HBM; each op becomes a sequence
    of tiles (at most 128 partitions by at most 2048 elements) loaded by DMA,
    computed on the engine that owns the instruction (Scalar Engine
    activations, Vector Engine arithmetic and reductions, Tensor Engine
    matmuls accumulating over K in PSUM) and stored back. Data movement
    (transpose, broadcast_in_dim, slice, pad, concatenate) is a strided DMA
    copy; reshape is free. Composites must be decomposed first
    (trn-decompose-composites). An op the backend cannot lower yet is an
    error naming the op.

    This is the first, unfused lowering: fusion, layout assignment and
    SBUF-resident intermediates are later passes.
  }];
  let dependentDialects = ["::mlir::nc::NCDialect", "::mlir::func::FuncDialect"];
}

#endif // TRN_CONVERSION_PASSES_TD
