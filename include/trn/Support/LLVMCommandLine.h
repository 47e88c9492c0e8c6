//===- LLVMCommandLine.h - MLIR drivers' options, trn's errors --*- C++ -*-===//
//
// trn-opt and trn-translate take MLIR's options (every pass, the printing
// and timing flags of mlir-opt), parsed by LLVM's cl. This parses them the
// same way but reports a bad command line as every trn tool does
// (docs/cli.md, "Conventions"): one line, "TOOL: error: ...", exit status 2.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_SUPPORT_LLVMCOMMANDLINE_H
#define TRN_SUPPORT_LLVMCOMMANDLINE_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::trn {

/// LLVM's error text for a bad command line (lines of "TOOL: message"), as
/// one line without the tool's name: "unknown option '--x'; did you mean
/// '--y'?", or "unknown option '--x' (see TOOL --help)".
std::string oneLineCommandLineError(llvm::StringRef tool,
                                    llvm::StringRef llvmErrors);

/// llvm::cl::ParseCommandLineOptions; on a bad command line, prints
/// oneLineCommandLineError's line and exits with status 2.
void parseLLVMCommandLine(int argc, char **argv, llvm::StringRef tool,
                          llvm::StringRef overview);

} // namespace mlir::trn

#endif // TRN_SUPPORT_LLVMCOMMANDLINE_H
