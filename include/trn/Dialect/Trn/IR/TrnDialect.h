//===- TrnDialect.h - trn dialect declaration -------------------*- C++ -*-===//
#ifndef TRN_DIALECT_TRN_IR_TRNDIALECT_H
#define TRN_DIALECT_TRN_IR_TRNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "trn/Dialect/Trn/IR/TrnDialect.h.inc"

#endif // TRN_DIALECT_TRN_IR_TRNDIALECT_H
