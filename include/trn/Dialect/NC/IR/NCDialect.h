//===- NCDialect.h - nc dialect declaration ---------------------*- C++ -*-===//
#ifndef TRN_DIALECT_NC_IR_NCDIALECT_H
#define TRN_DIALECT_NC_IR_NCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "trn/Dialect/NC/IR/NCDialect.h.inc"

namespace trnrt {
struct Target;
} // namespace trnrt

namespace mlir::nc {
/// The hardware table for `op`: the enclosing module's `nc.target`
/// ("trn1" by default), or nullptr (with an error at `op`) if unknown.
const trnrt::Target *getTarget(Operation *op);
} // namespace mlir::nc

#endif // TRN_DIALECT_NC_IR_NCDIALECT_H
