//===- InitAll.h - register every trn dialect and pass ----------*- C++ -*-===//
#ifndef TRN_INITALL_H
#define TRN_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::trn {
/// Registers the trn dialects and the upstream dialects trn graphs use.
void registerAllDialects(mlir::DialectRegistry &registry);
/// Registers the trn passes and the upstream passes trn pipelines use
/// (canonicalize, cse, ...).
void registerAllPasses();
} // namespace mlir::trn

#endif // TRN_INITALL_H
