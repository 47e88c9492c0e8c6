//===- NCToProgram.h - nc kernels to runtime programs -----------*- C++ -*-===//
//
// Translates an allocated, synchronised `nc` kernel (a func.func whose
// arguments are !nc.hbm tensors) into the runtime's trnrt::Program, which the
// artifact writer serialises and the simulator executes.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_TARGET_NCTOPROGRAM_H
#define TRN_TARGET_NCTOPROGRAM_H

#include "trnrt/Isa.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::nc {

/// Builds the program of `kernel`. HBM tensors are laid out in argument
/// order (64-byte aligned), then scratch from nc.hbm_alloc. Every nc.alloc
/// must carry its address (run nc-allocate first). The instructions'
/// semaphores are nc.waits/nc.signal (nc-insert-sync) or, with
/// `synchronize`, computed here by the same analysis (Sync.h) without
/// storing them in the IR. Errors are emitted at the offending op.
/// A kernel with nc.call sites needs `calleeNames`: the program's calls
/// index it, and the caller attaches the callees' programs as
/// Program::subroutines in that order; and `scratchBytesOf`, each callee's
/// scratch per call (trnrt::subroutineScratchBytes), which the exporter
/// places in the caller's scratch region where nothing live across the call
/// is.
FailureOr<trnrt::Program> exportProgram(
    func::FuncOp kernel, bool synchronize = false,
    std::vector<std::string> *calleeNames = nullptr,
    llvm::function_ref<uint64_t(llvm::StringRef)> scratchBytesOf = nullptr);

/// Registers the `--nc-to-artifact` and `--nc-to-program-summary`
/// translations for trn-translate.
void registerNCTranslations();

} // namespace mlir::nc

#endif // TRN_TARGET_NCTOPROGRAM_H
