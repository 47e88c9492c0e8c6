//===- NCOps.h - nc dialect types and operations ----------------*- C++ -*-===//
#ifndef TRN_DIALECT_NC_IR_NCOPS_H
#define TRN_DIALECT_NC_IR_NCOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "trn/Dialect/NC/IR/NCDialect.h"

#include "trn/Dialect/NC/IR/NCEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "trn/Dialect/NC/IR/NCTypes.h.inc"

#define GET_OP_CLASSES
#include "trn/Dialect/NC/IR/NCOps.h.inc"

#endif // TRN_DIALECT_NC_IR_NCOPS_H
