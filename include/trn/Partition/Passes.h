//===- Passes.h - partitioning passes ---------------------------*- C++ -*-===//
#ifndef TRN_PARTITION_PASSES_H
#define TRN_PARTITION_PASSES_H

#include "trn/Dialect/Dist/IR/DistDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::trn::partition {

#define GEN_PASS_DECL
#include "trn/Partition/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "trn/Partition/Passes.h.inc"

} // namespace mlir::trn::partition

#endif // TRN_PARTITION_PASSES_H
