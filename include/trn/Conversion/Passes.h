//===- Passes.h - trn conversion passes -------------------------*- C++ -*-===//
#ifndef TRN_CONVERSION_PASSES_H
#define TRN_CONVERSION_PASSES_H

#include "trn/Dialect/NC/IR/NCDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::trn {

#define GEN_PASS_DECL
#include "trn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "trn/Conversion/Passes.h.inc"

} // namespace mlir::trn

#endif // TRN_CONVERSION_PASSES_H
