//===- Diagnostics.h - one-line diagnostics for tools and bindings -*- C++
//-*-===//
//
// The compiler's diagnostics as users see them: one line each,
// "file:line:col: message", whatever the nesting of the location (a named
// location "aten.mm"("train.py":12:0) from the PyTorch frontend prints as
// "train.py:12:0: [aten.mm] message"). Shared by trn-cc and the Python
// extension.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DRIVER_DIAGNOSTICS_H
#define TRN_DRIVER_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"

#include <string>
#include <vector>

namespace mlir::trn {

/// One line: the innermost file position, the severity (optional), the
/// name of an enclosing named location in brackets, and the message.
std::string formatDiagnostic(Diagnostic &diagnostic, bool withSeverity);

/// Collects every diagnostic (notes included) while it is alive.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *context);

  /// The first error, without severity: what the cache records and what
  /// the user sees.
  const std::string &firstError() const { return firstErrorText; }
  /// Every diagnostic, one per line, with severities: the compile log.
  const std::string &log() const { return logText; }
  const std::vector<std::string> &warnings() const { return warningLines; }

private:
  void record(Diagnostic &diagnostic);

  std::string firstErrorText, logText;
  std::vector<std::string> warningLines;
  ScopedDiagnosticHandler handler;
};

} // namespace mlir::trn

#endif // TRN_DRIVER_DIAGNOSTICS_H
