//===- DistDialect.h - dist dialect declaration -----------------*- C++ -*-===//
#ifndef TRN_DIALECT_DIST_IR_DISTDIALECT_H
#define TRN_DIALECT_DIST_IR_DISTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "trn/Dialect/Dist/IR/DistDialect.h.inc"

#endif // TRN_DIALECT_DIST_IR_DISTDIALECT_H
