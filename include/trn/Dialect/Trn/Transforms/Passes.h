//===- Passes.h - trn dialect passes ----------------------------*- C++ -*-===//
#ifndef TRN_DIALECT_TRN_TRANSFORMS_PASSES_H
#define TRN_DIALECT_TRN_TRANSFORMS_PASSES_H

#include "trn/Dialect/Trn/IR/TrnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::trn {

#define GEN_PASS_DECL
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"

} // namespace mlir::trn

#endif // TRN_DIALECT_TRN_TRANSFORMS_PASSES_H
