//===- TrnDialect.h - trn dialect declaration -------------------*- C++ -*-===//
#ifndef TRN_DIALECT_TRN_IR_TRNDIALECT_H
#define TRN_DIALECT_TRN_IR_TRNDIALECT_H

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/Dialect.h"

namespace mlir::trn {
/// True if `type` has a static shape whose element count fits in int64, as
/// every trn tensor must.
bool hasValidTrnShape(ShapedType type);
/// Bytes of a static ranked tensor's elements (sub-byte elements take a
/// byte each), or 0 for any other type.
int64_t tensorBytes(Type type);
} // namespace mlir::trn

#include "trn/Dialect/Trn/IR/TrnDialect.h.inc"

#endif // TRN_DIALECT_TRN_IR_TRNDIALECT_H
