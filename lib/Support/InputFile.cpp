//===- InputFile.cpp - Bounded reads of the tools' MLIR input -------------===//

#include "trn/Support/InputFile.h"

#include "trnrt/File.h"

using namespace mlir;

namespace {

/// A MemoryBuffer that owns the std::string it was read into, so the bytes
/// are not copied again (a graph may be gigabytes). std::string keeps a NUL
/// after its last byte, which the parser relies on.
class StringMemoryBuffer final : public llvm::MemoryBuffer {
public:
  StringMemoryBuffer(std::string bytes, llvm::StringRef name)
      : bytes(std::move(bytes)), name(name.str()) {
    init(this->bytes.data(), this->bytes.data() + this->bytes.size(),
         /*RequiresNullTerminator=*/true);
  }
  llvm::StringRef getBufferIdentifier() const override { return name; }
  BufferKind getBufferKind() const override { return MemoryBuffer_Malloc; }

private:
  std::string bytes;
  std::string name;
};

} // namespace

std::unique_ptr<llvm::MemoryBuffer>
mlir::trn::readInputFile(llvm::StringRef path, std::string &error,
                         uint64_t maxBytes) {
  std::string bytes;
  trnrt::ReadFailure failure;
  if (path == "-") {
    if (!trnrt::readStandardInput(maxBytes, bytes, error, &failure))
      return nullptr;
    return std::make_unique<StringMemoryBuffer>(std::move(bytes), "<stdin>");
  }
  if (!trnrt::readRegularFile(path.str(), maxBytes, bytes, error, &failure)) {
    if (failure.kind == trnrt::ReadFailure::NotRegular)
      error += "; pass a .mlir file or '-' for standard input";
    return nullptr;
  }
  return std::make_unique<StringMemoryBuffer>(std::move(bytes), path);
}
