//===- LLVMCommandLine.cpp - MLIR drivers' options, trn's errors ----------===//

#include "trn/Support/LLVMCommandLine.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

namespace mlir::trn {

std::string oneLineCommandLineError(llvm::StringRef tool,
                                    llvm::StringRef llvmErrors) {
  llvm::SmallVector<llvm::StringRef> lines;
  llvmErrors.split(lines, '\n', -1, /*KeepEmpty=*/false);
  std::string message;
  bool suggested = false;
  for (llvm::StringRef line : lines) {
    line = line.trim();
    // "TOOL: Unknown command line argument '--x'.  Try: 'TOOL --help'"
    if (size_t colon = line.find(": ");
        colon != llvm::StringRef::npos && !line.take_front(colon).contains(' '))
      line = line.drop_front(colon + 2);
    if (line.consume_front("Unknown command line argument ")) {
      // "'--x'.  Try: ..." (the argument is quoted; it may hold a dot).
      size_t end = line.find('\'', 1);
      message +=
          (message.empty() ? "" : "; ") + std::string("unknown option ") +
          line.take_front(end == llvm::StringRef::npos ? line.size() : end + 1)
              .str();
    } else if (line.consume_front("Did you mean ")) {
      // LLVM suggests its nearest option however far; trn only a typo's.
      llvm::StringRef given =
          llvm::StringRef(message)
              .rsplit("unknown option '")
              .second.take_until([](char c) { return c == '\'' || c == '='; });
      llvm::StringRef nearest =
          line.trim("'?").take_until([](char c) { return c == '='; });
      size_t limit =
          std::max<size_t>(1, std::min<size_t>(3, given.ltrim('-').size() / 3));
      if (given.ltrim('-').edit_distance(nearest.ltrim('-')) <= limit) {
        message += "; did you mean " + line.str();
        suggested = true;
      }
    } else {
      std::string text = line.str();
      if (!text.empty())
        text[0] = static_cast<char>(std::tolower(text[0]));
      message += (message.empty() ? "" : "; ") + text;
    }
  }
  if (message.empty())
    message = "bad command line";
  if (!suggested)
    message += " (see " + tool.str() + " --help)";
  return message;
}

void parseLLVMCommandLine(int argc, char **argv, llvm::StringRef tool,
                          llvm::StringRef overview) {
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  // An option's bad value is reported by the option itself, on stderr, not
  // on the stream given: catch stderr too while parsing.
  std::FILE *caught = std::tmpfile();
  int savedStderr = caught ? ::dup(STDERR_FILENO) : -1;
  if (savedStderr >= 0)
    ::dup2(::fileno(caught), STDERR_FILENO);
  bool parsed =
      llvm::cl::ParseCommandLineOptions(argc, argv, overview, &errorStream);
  if (savedStderr >= 0) {
    llvm::errs().flush();
    ::dup2(savedStderr, STDERR_FILENO);
    ::close(savedStderr);
    std::rewind(caught);
    char buffer[4096];
    std::string stderrText;
    for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), caught)) > 0;)
      stderrText.append(buffer, n);
    errors = stderrText + errorStream.str();
  }
  if (caught)
    std::fclose(caught);
  if (parsed) {
    llvm::errs() << errors; // warnings, if any, as LLVM gave them
    return;
  }
  llvm::errs() << tool << ": error: " << oneLineCommandLineError(tool, errors)
               << "\n";
  std::exit(2);
}

} // namespace mlir::trn
