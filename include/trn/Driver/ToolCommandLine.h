//===- ToolCommandLine.h - the one command-line convention ------*- C++ -*-===//
//
// Every trn tool (trn-cc, trn-run, trn-eval, trn-cache, trn-parallel-compile)
// parses its arguments here, so that they share one convention
// (docs/cli.md, "Conventions"): `tool [COMMAND] [options] ARGS`, `--opt
// value` and `--opt=value`, one-letter aliases (`-o FILE`, `-oFILE`, `-j4`),
// `-h/--help`, `--version`, `--` ending the options, the same messages for
// the same mistakes, one line each, and exit status 2 for a bad command line
// (1 when the work fails). No MLIR or LLVM: the MLIR-free tools link it too.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DRIVER_TOOLCOMMANDLINE_H
#define TRN_DRIVER_TOOLCOMMANDLINE_H

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::trn {

/// Exit statuses of every trn tool.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1; ///< the work failed (a compile, a run, I/O)
constexpr int kExitUsage = 2;   ///< a bad command line

/// A tool's own option (not a compile flag): trn-cc's --analyze, -o FILE, ...
struct ToolFlag {
  std::string_view name; ///< long name without dashes
  bool takesValue = false;
  char letter = 0;       ///< a one-letter alias (-o FILE, -v), or 0
  int id = 0;            ///< the tool's own code for it
  std::string_view help; ///< its --help line ("" keeps it out)
  /// The value may start with "--" (trn-parallel-compile's --flags
  /// "--auto-cast all"); otherwise such a next argument is taken for a
  /// forgotten value.
  bool valueMayBeAFlag = false;
};

/// One of a tool's own options as given.
struct ToolFlagUse {
  const ToolFlag *flag;
  std::string spelled; ///< as written, for messages (`-o`, `--report`)
  std::optional<std::string> value;
};

struct ToolCommandLine {
  std::string_view tool; ///< "trn-cc"
  std::vector<ToolFlag> flags;
  /// Whether the compile flags' table's codegen flags are taken (trn-cc):
  /// they are kept as given, for normalizeFlags.
  bool takesCodegenFlags = false;
  /// Why an option of the compile flags' table that the tool does not take
  /// is refused, after "option '--jobs' is not a trn-cc option"; "{option}"
  /// in it stands for the option as given.
  std::string_view notOurs;
  /// "--" ends the options; what follows is the tool's command
  /// (trn-parallel-compile -- python3 train.py).
  bool takesCommandAfterSeparator = false;
};

/// What parseToolArgs leaves besides the options it hands to `onFlag`.
struct ParsedToolArgs {
  std::vector<std::string> positionals; ///< "-" is one
  std::vector<std::string> codegenArgs; ///< as given, for normalizeFlags
  std::vector<std::string> command;     ///< after "--"
  bool sawSeparator = false;
  /// -h/--help or --version was given (every tool takes them; the parse
  /// stops there, so that `tool --help` works whatever else is wrong).
  bool help = false, version = false;
};

/// The --help lines of a tool's own options.
std::string toolFlagsHelp(const ToolCommandLine &tool);

/// Splits a tool's arguments (-h/--help and --version, which every tool
/// takes, without listing them; --name value, --name=value, -name, -O2, the
/// one-letter aliases -o FILE, -oFILE, -o=FILE, -v; `_` for `-` in a name,
/// as the anchor's --num_parallel) into positionals, the tool's own options
/// (given to `onFlag` in order; an error it returns ends the parse), the
/// table's codegen flags and, after "--", a command. Returns the first usage
/// error, one line: an unknown option (naming the closest known one), a
/// missing or unexpected value, an option of the table the tool does not
/// take.
std::optional<std::string> parseToolArgs(
    const std::vector<std::string> &args, const ToolCommandLine &tool,
    const std::function<std::optional<std::string>(const ToolFlagUse &)>
        &onFlag,
    ParsedToolArgs &parsed);

/// "; did you mean 'x'?" for the candidate closest to `word` if it looks
/// like a typo of it (at most a third of its letters differ, at most 3),
/// else "". `prefix` is written before the candidate ("--" for options).
std::string didYouMean(std::string_view word,
                       const std::vector<std::string_view> &candidates,
                       std::string_view prefix = "");

/// Prints "TOOL: error: MESSAGE" on stderr and returns kExitUsage.
int usageError(std::string_view tool, const std::string &message);

/// "option '--rtol': 'x' is not a positive number", the shared wording for
/// an option's bad value; `expected` says what it takes, with an example.
std::string badValue(const ToolFlagUse &use, const std::string &expected);

/// An option's value as an integer of at least `minimum`, into `out`; else
/// badValue's message ("is not an integer >= 1").
std::optional<std::string> takeInteger(const ToolFlagUse &use,
                                       long long minimum, long long &out);
/// An option's value as a finite number above 0, into `out`; else
/// badValue's message.
std::optional<std::string> takePositive(const ToolFlagUse &use,
                                        std::optional<double> &out);

/// Parses a decimal integer of at least `minimum` (no sign unless negative,
/// no spaces); std::nullopt otherwise.
std::optional<long long> parseInteger(const std::string &text,
                                      long long minimum);
/// Parses a finite number above 0; std::nullopt otherwise ("nan", "inf" and
/// values that underflow to 0 included).
std::optional<double> parsePositive(const std::string &text);

} // namespace mlir::trn

#endif // TRN_DRIVER_TOOLCOMMANDLINE_H
