//===- NCOps.h - nc dialect types and operations ----------------*- C++ -*-===//
#ifndef TRN_DIALECT_NC_IR_NCOPS_H
#define TRN_DIALECT_NC_IR_NCOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "trn/Dialect/NC/IR/NCDialect.h"

#include "trn/Dialect/NC/IR/NCEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "trn/Dialect/NC/IR/NCTypes.h.inc"

#define GET_OP_CLASSES
#include "trn/Dialect/NC/IR/NCOps.h.inc"

namespace mlir::nc {
/// The compiler's split of the 16 DMA queues: loads (HBM to SBUF) take
/// queues [0, kLoadQueues), stores the kStoreQueues after them. A queue runs
/// in order, and a store waits for the compute that produces its data, which
/// would hold back loads queued behind it that later compute needs.
constexpr int64_t kLoadQueues = 12, kStoreQueues = 4;

/// The allocation (nc.alloc, nc.hbm_alloc or kernel argument) a tile or HBM
/// value views.
inline Value rootOf(Value value) {
  while (true) {
    if (auto view = value.getDefiningOp<ViewOp>())
      value = view.getSource();
    else if (auto reshape = value.getDefiningOp<HbmReshapeOp>())
      value = reshape.getSource();
    else
      return value;
  }
}

/// Bytes of an HBM tensor (i1 is stored in bytes).
inline int64_t hbmBytes(HbmType type) {
  int64_t bytes = (type.getElementType().getIntOrFloatBitWidth() + 7) / 8;
  for (int64_t size : type.getShape())
    bytes *= size;
  return bytes;
}
} // namespace mlir::nc

#endif // TRN_DIALECT_NC_IR_NCOPS_H
