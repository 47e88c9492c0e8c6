//===- Pipeline.h - trn graph to NeuronCore program -------------*- C++ -*-===//
//
// The compiler pipeline behind trn-cc: a verified `trn` step graph is lowered
// to an `nc` kernel (convert-trn-to-nc), its tiles are given addresses
// (nc-allocate) and its streams ordered (nc-insert-sync), then exported as a
// trnrt::Program that the artifact writer serialises.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DRIVER_PIPELINE_H
#define TRN_DRIVER_PIPELINE_H

#include "trnrt/Isa.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace mlir::trn {

/// Codegen options (the normalised flags of the cache key decide them).
struct CompileOptions {
  std::string target = "trn1";       ///< "trn1" or "trn2"
  int optLevel = 2;                  ///< 0..3
  std::string autoCast = "none";     ///< none | matmul | all
  std::string autoCastType = "bf16"; ///< bf16 | fp8_e4m3
  bool printIRAfterAll = false;      ///< --mlir-print-ir-after-all
};

/// Adds the passes that take a trn module to an allocated, synchronised nc
/// kernel module.
void buildTrnToNCPipeline(OpPassManager &pm, const CompileOptions &options);

/// Runs the pipeline on `module` in place and exports the kernel. Errors
/// (an op the backend cannot lower yet, a kernel that does not fit) are
/// emitted as diagnostics at the offending op.
FailureOr<trnrt::Program> compileToProgram(ModuleOp module,
                                           const CompileOptions &options);

} // namespace mlir::trn

#endif // TRN_DRIVER_PIPELINE_H
