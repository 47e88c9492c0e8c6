//===- TrnOps.h - trn dialect operations ------------------------*- C++ -*-===//
#ifndef TRN_DIALECT_TRN_IR_TRNOPS_H
#define TRN_DIALECT_TRN_IR_TRNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "trn/Dialect/Trn/IR/TrnDialect.h"

#include "trn/Dialect/Trn/IR/TrnEnums.h.inc"

#define GET_OP_CLASSES
#include "trn/Dialect/Trn/IR/TrnOps.h.inc"

namespace mlir::trn {
/// The shape of a ranked tensor value (every value of a trn graph is one).
inline ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// Whether `op` may be in a trn.fusion body: elementwise trn ops,
/// broadcast_in_dim, constant, reduce and the yield.
bool isFusibleBodyOp(Operation *op);

/// The sequence dim of trn.attention / trn.attention_grad operands of rank
/// `rank`: `seqDim` when set, else rank - 2.
int64_t attentionSeqDim(std::optional<uint64_t> seqDim, int64_t rank);

/// The permutation that takes attention operands with their sequence at
/// `seqDim` to the canonical [batch dims..., S, D] (transpose perm
/// semantics: result dim i is operand dim perm[i]).
SmallVector<int64_t> attentionToCanonical(int64_t rank, int64_t seqDim);
/// Replaces every trn.pipeline_stage marker under `root` by its input: a
/// step compiled without pipeline stages ignores the cuts.
void dropPipelineStageMarkers(Operation *root);
} // namespace mlir::trn

#endif // TRN_DIALECT_TRN_IR_TRNOPS_H
