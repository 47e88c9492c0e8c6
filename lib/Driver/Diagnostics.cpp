//===- Diagnostics.cpp - one-line diagnostics -----------------------------===//

#include "trn/Driver/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

std::string mlir::trn::formatDiagnostic(Diagnostic &diagnostic,
                                        bool withSeverity) {
  std::string text;
  llvm::raw_string_ostream os(text);
  Location location = diagnostic.getLocation();
  if (auto fileLoc = location->findInstanceOf<FileLineColLoc>()) {
    os << fileLoc.getFilename().getValue();
    // Line 0 is the file as a whole (the implicit module), not a position.
    if (fileLoc.getLine() != 0)
      os << ":" << fileLoc.getLine() << ":" << fileLoc.getColumn();
    os << ": ";
  }
  if (withSeverity) {
    switch (diagnostic.getSeverity()) {
    case DiagnosticSeverity::Error:
      os << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      os << "warning: ";
      break;
    case DiagnosticSeverity::Note:
      os << "note: ";
      break;
    case DiagnosticSeverity::Remark:
      os << "remark: ";
      break;
    }
  }
  // The frontend names each op after the PyTorch op it came from.
  if (auto named = location->findInstanceOf<NameLoc>())
    os << "[" << named.getName().getValue() << "] ";
  std::string message = diagnostic.str();
  // Keep each diagnostic on one line (messages may embed IR or newlines).
  for (char &c : message)
    if (c == '\n')
      c = ' ';
  os << message;
  return text;
}

mlir::trn::DiagnosticCollector::DiagnosticCollector(MLIRContext *context)
    : handler(context, [this](Diagnostic &diagnostic) {
        record(diagnostic);
        for (Diagnostic &note : diagnostic.getNotes())
          record(note);
        return success();
      }) {}

void mlir::trn::DiagnosticCollector::record(Diagnostic &diagnostic) {
  logText += formatDiagnostic(diagnostic, /*withSeverity=*/true) + "\n";
  if (diagnostic.getSeverity() == DiagnosticSeverity::Error &&
      firstErrorText.empty())
    firstErrorText = formatDiagnostic(diagnostic, /*withSeverity=*/false);
  if (diagnostic.getSeverity() == DiagnosticSeverity::Warning)
    warningLines.push_back(formatDiagnostic(diagnostic, false));
}
