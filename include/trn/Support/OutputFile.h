//===- OutputFile.h - the files a tool writes -------------------*- C++ -*-===//
//
// A tool checks its output paths before any work, so that a compile is not
// wasted on an output that cannot be stored, and writes each output whole
// (trnrt::writeFileAtomically: the path is either untouched or complete; a
// device or a pipe is written in place).
//
//===----------------------------------------------------------------------===//

#ifndef TRN_SUPPORT_OUTPUTFILE_H
#define TRN_SUPPORT_OUTPUTFILE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::trn {

/// Why `path`, given with `flag` ("-o", "--report"), cannot be written: a
/// directory, a missing or read-only parent directory; std::nullopt when it
/// can.
std::optional<std::string> checkOutputPath(const std::string &path,
                                           llvm::StringRef flag);

/// Writes `bytes` to `path` whole; a one-line error when it cannot.
std::optional<std::string> writeOutputFile(const std::string &path,
                                           llvm::StringRef bytes);
std::optional<std::string> writeOutputFile(const std::string &path,
                                           const std::vector<uint8_t> &bytes);

} // namespace mlir::trn

#endif // TRN_SUPPORT_OUTPUTFILE_H
