//===- Passes.h - nc dialect passes -----------------------------*- C++ -*-===//
#ifndef TRN_DIALECT_NC_TRANSFORMS_PASSES_H
#define TRN_DIALECT_NC_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::nc {

#define GEN_PASS_DECL
#include "trn/Dialect/NC/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "trn/Dialect/NC/Transforms/Passes.h.inc"

} // namespace mlir::nc

#endif // TRN_DIALECT_NC_TRANSFORMS_PASSES_H
