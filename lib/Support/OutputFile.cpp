//===- OutputFile.cpp - the files a tool writes ---------------------------===//

#include "trn/Support/OutputFile.h"

#include "trnrt/File.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <unistd.h>

std::optional<std::string> mlir::trn::checkOutputPath(const std::string &path,
                                                      llvm::StringRef flag) {
  if (path.empty())
    return flag.str() + " needs a file name";
  if (path == trnrt::kStandardOutput)
    return std::nullopt;
  if (llvm::sys::fs::is_directory(path))
    return "cannot write " + flag.str() + " '" + path + "': it is a directory";
  std::string parent = llvm::sys::path::parent_path(path).str();
  if (parent.empty())
    parent = ".";
  if (!llvm::sys::fs::exists(parent))
    return "cannot write " + flag.str() + " '" + path + "': directory '" +
           parent + "' does not exist";
  if (!llvm::sys::fs::is_directory(parent))
    return "cannot write " + flag.str() + " '" + path + "': '" + parent +
           "' is not a directory";
  if (::access(parent.c_str(), W_OK) != 0)
    return "cannot write " + flag.str() + " '" + path + "': directory '" +
           parent + "' is not writable";
  return std::nullopt;
}

std::optional<std::string> mlir::trn::writeOutputFile(const std::string &path,
                                                      llvm::StringRef bytes) {
  std::string error;
  if (!trnrt::writeFileAtomically(path, bytes.data(), bytes.size(), error))
    return "cannot write '" + path + "': " + error;
  return std::nullopt;
}

std::optional<std::string>
mlir::trn::writeOutputFile(const std::string &path,
                           const std::vector<uint8_t> &bytes) {
  return writeOutputFile(
      path, llvm::StringRef(reinterpret_cast<const char *>(bytes.data()),
                            bytes.size()));
}
