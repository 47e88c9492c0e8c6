//===- DistOps.h - dist dialect attributes and operations -------*- C++ -*-===//
#ifndef TRN_DIALECT_DIST_IR_DISTOPS_H
#define TRN_DIALECT_DIST_IR_DISTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "trn/Dialect/Dist/IR/DistDialect.h"

#include "trn/Dialect/Dist/IR/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "trn/Dialect/Dist/IR/DistAttrs.h.inc"

#define GET_OP_CLASSES
#include "trn/Dialect/Dist/IR/DistOps.h.inc"

namespace mlir::dist {
/// The mesh `symbol` names from `from`, or nullptr.
MeshOp lookupMesh(Operation *from, FlatSymbolRefAttr symbol);
/// Whether `axis` is listed in the mesh's dist.replica_axes: the program is
/// one replica's step along it, so it splits no shape (dist-seed
/// dp-replicas).
bool isReplicaAxis(MeshOp mesh, StringRef axis);
} // namespace mlir::dist

#endif // TRN_DIALECT_DIST_IR_DISTOPS_H
