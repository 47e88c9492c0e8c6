//===- trn-translate.cpp - translations out of trn dialects --------------===//
//
// mlir-translate with trn's translations: --nc-to-artifact writes the binary
// artifact of an nc kernel, --nc-to-program-summary prints its streams.
//
// The driver is ours rather than mlirTranslateMain, which opens its input
// itself with no way to look first: it would read /dev/zero until memory
// runs out and wait on a FIFO forever. Here the input is read with trn's
// bounded reader (trn/Support/InputFile.h). The options are mlir-translate's
// that trn's translations use: the input, -o, one translation,
// --split-input-file, --verify-diagnostics, and the MLIRContext, printer and
// timing options.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Text.h"
#include "trn/Support/InputFile.h"
#include "trn/Support/LLVMCommandLine.h"
#include "trn/Target/NCToProgram.h"
#include "trnrt/Target.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/ToolUtilities.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string>
    inputFilename(cl::Positional, cl::desc("<input file>"), cl::init("-"));
static cl::opt<std::string> outputFilename("o", cl::desc("Output filename"),
                                           cl::value_desc("filename"),
                                           cl::init("-"));
static cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Split the input file into pieces and process each chunk "
             "independently"),
    cl::init(false));
static cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check that emitted diagnostics match expected-* lines on the "
             "corresponding line"),
    cl::init(false));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << mlir::trn::cache::toolVersion("trn-translate", trnrt::targetNames());
  });
  nc::registerNCTranslations();
  // Not cl::Required: LLVM prints that error itself, twice, around ours.
  cl::opt<const Translation *, false, TranslationParser> translation(
      "", cl::desc("Translation to perform"));
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerTranslationCLOptions();
  registerDefaultTimingManagerCLOptions();
  trn::parseLLVMCommandLine(argc, argv, "trn-translate",
                            "trn translation driver\n");

  if (!translation.getValue()) {
    llvm::errs() << "trn-translate: error: no translation given (e.g. "
                    "--nc-to-artifact; see trn-translate --help)\n";
    return 2;
  }
  const Translation &requested = *translation.getValue();

  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      trn::readInputFile(inputFilename, errorMessage);
  if (!input) {
    llvm::errs() << "trn-translate: error: " << errorMessage << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << "trn-translate: error: " << errorMessage << "\n";
    return 1;
  }

  auto processBuffer = [&](std::unique_ptr<llvm::MemoryBuffer> buffer,
                           raw_ostream &os) -> LogicalResult {
    TimingScope translationTiming = timing.nest(requested.getDescription());
    MLIRContext context;
    context.printOpOnDiagnostic(!verifyDiagnostics);
    auto sourceMgr = std::make_shared<llvm::SourceMgr>();
    sourceMgr->AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    if (verifyDiagnostics) {
      // The translation is expected to fail; what counts is whether the
      // diagnostics were the expected ones.
      SourceMgrDiagnosticVerifierHandler handler(*sourceMgr, &context);
      (void)requested(sourceMgr, os, &context);
      return handler.verify();
    }
    SourceMgrDiagnosticHandler handler(*sourceMgr, &context);
    return requested(sourceMgr, os, &context);
  };
  if (failed(splitAndProcessBuffer(
          std::move(input), processBuffer, output->os(),
          splitInputFile ? kDefaultSplitMarker : "", /*outputSplitMarker=*/"")))
    return 1;
  output->keep();
  return 0;
}
