//===- InputFile.h - Bounded reads of the tools' MLIR input -----*- C++ -*-===//
//
// trn-cc, trn-opt, trn-eval, trn-translate and trn-run --check-against read
// their graph or kernel through readInputFile, which wraps the runtime's
// bounded reader (trnrt/File.h): a path that is not a regular file (a
// directory, /dev/zero, a FIFO) is refused before anything is read, and
// neither a file nor standard input is read past a size limit. Each tool
// used to read with llvm::MemoryBuffer::getFileOrSTDIN, which reads a
// character device until memory runs out and waits on a FIFO forever.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_SUPPORT_INPUTFILE_H
#define TRN_SUPPORT_INPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mlir::trn {

/// The most bytes of MLIR text a tool reads, from a file or from standard
/// input: 4 GiB. A whole training step is tens of MiB of text; the limit
/// stops runaway input, not real graphs.
constexpr uint64_t kMaxInputFileBytes = uint64_t(4) << 30;

/// Reads the file a tool was given: a regular file, or standard input for
/// "-" (then named "<stdin>", as LLVM names it). The buffer is
/// null-terminated, as the MLIR parser wants. On failure returns null with a
/// one-line `error` naming the path and the problem, for example
///   cannot read 'g.mlir': No such file or directory
///   /dev/zero is not a regular file (a character device); pass a .mlir file
///     or '-' for standard input
///   standard input is larger than the limit of 4 GiB
std::unique_ptr<llvm::MemoryBuffer>
readInputFile(llvm::StringRef path, std::string &error,
              uint64_t maxBytes = kMaxInputFileBytes);

} // namespace mlir::trn

#endif // TRN_SUPPORT_INPUTFILE_H
