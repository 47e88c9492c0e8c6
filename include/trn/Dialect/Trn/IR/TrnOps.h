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
/// Whether `op` may be in a trn.fusion body: elementwise trn ops,
/// broadcast_in_dim, constant, reduce and the yield.
bool isFusibleBodyOp(Operation *op);
} // namespace mlir::trn

#endif // TRN_DIALECT_TRN_IR_TRNOPS_H
