//===- trn-opt.cpp - MLIR driver for trn dialects and passes -------------===//
//
// The MlirOptMain driver with every trn dialect and pass registered, plus the
// upstream dialects trn graphs use, and trn-cc's whole pipeline as
// trn-compile (trn/Driver/Pipeline.h). It is the tool lit tests run.
//
// Bytecode input is refused: LLVM 19's bytecode reader does not validate what
// it reads (its checks are assertions, compiled out in Debian's build), so a
// corrupt file can crash it. trn's graphs are exchanged as text. The input is
// read with trn's bounded reader (trn/Support/InputFile.h).
//
//===----------------------------------------------------------------------===//

#include "trn/Driver/Pipeline.h"
#include "trn/InitAll.h"
#include "trn/Support/InputFile.h"
#include "trn/Support/LLVMCommandLine.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "trn/Cache/Text.h"
#include "trnrt/Target.h"

#include "mlir/Debug/Counter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << mlir::trn::cache::toolVersion("trn-opt", trnrt::targetNames());
  });
  mlir::DialectRegistry registry;
  mlir::trn::registerAllDialects(registry);
  mlir::trn::registerAllPasses();
  mlir::trn::registerCompilePipeline();
  // mlir::registerAndParseCLIOptions, with trn's one-line errors (exit 2).
  static llvm::cl::opt<std::string> inputFilename(
      llvm::cl::Positional, llvm::cl::desc("<input file>"),
      llvm::cl::init("-"));
  static llvm::cl::opt<std::string> outputFilename(
      "o", llvm::cl::desc("Output filename"), llvm::cl::value_desc("filename"),
      llvm::cl::init("-"));
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::tracing::DebugCounter::registerCLOptions();
  mlir::trn::parseLLVMCommandLine(argc, argv, "trn-opt",
                                  "trn optimizer driver\n");
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  // Read here rather than by MlirOptMain: a directory, /dev/zero or a FIFO
  // is refused unread, and files and stdin stop at kMaxInputFileBytes.
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::trn::readInputFile(inputFilename, errorMessage);
  if (!input) {
    llvm::errs() << "trn-opt: error: " << errorMessage << "\n";
    return 1;
  }
  if (mlir::isBytecode(*input)) {
    llvm::errs() << "trn-opt: error: " << inputFilename
                 << " is MLIR bytecode, which trn does not read (LLVM 19's "
                    "reader does not validate it); pass the textual form\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << "trn-opt: error: " << errorMessage << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
