//===- CompileFlags.h - the compile flags, one table ------------*- C++ -*-===//
//
// Every flag a compile can be given, in one table read by trn-cc, by
// trn-parallel-compile (which checks --flags before running anything), by
// the Python package (through trn._trn.normalize_flags) and by the cache key
// (normalizeFlags decides what enters it). No MLIR or LLVM: the tools that
// only run compilers link it too.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DRIVER_COMPILEFLAGS_H
#define TRN_DRIVER_COMPILEFLAGS_H

#include "trn/Cache/Key.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::trn {

enum class FlagKind {
  Choice,        ///< one of `choices`
  OptLevel,      ///< 0..3 (also spelled -O0 .. -O3)
  PositiveInt,   ///< microbatches
  Index,         ///< a non-negative integer (stage)
  MeshAxis,      ///< --dp/--pp/--tp: a positive integer for one mesh axis
  Mesh,          ///< --mesh dp=A,pp=B,tp=C
  NeutralValue,  ///< output-neutral, takes a value
  NeutralSwitch, ///< output-neutral, takes no value
  Switch,        ///< changes the program, takes no value (in the key when on)
};

struct CompileFlagSpec {
  std::string_view name; ///< long name without dashes
  FlagKind kind;
  /// Key in NormalizedFlags::values; empty for flags the key drops.
  std::string_view key;
  std::vector<std::string_view> choices;
  std::string_view defaultValue;
  /// One line for --help ("" keeps it out of the codegen help).
  std::string_view help;

  bool takesValue() const {
    return kind != FlagKind::NeutralSwitch && kind != FlagKind::Switch;
  }
  /// Changes (or is validated as part of) the compiled program: what trn-cc
  /// calls a codegen flag. The others are output-neutral (paths, verbosity).
  bool isCodegen() const {
    return kind != FlagKind::NeutralValue && kind != FlagKind::NeutralSwitch;
  }
};

/// The table, codegen flags first.
const std::vector<CompileFlagSpec> &compileFlagSpecs();
const CompileFlagSpec *findCompileFlag(std::string_view name);

/// The "codegen flags" lines of a tool's --help, from the table.
std::string codegenFlagsHelp();

/// Normalises command-line style codegen flags: order, spacing, `--a=b` vs
/// `--a b`, `-O2` vs `--opt-level=2`, and `--mesh dp=2,tp=8` vs `--tp 8 --dp 2`
/// do not matter. Returns std::nullopt and sets `error` (naming the flag and,
/// for a misspelling, the closest known flag) for unknown flags or values.
std::optional<cache::NormalizedFlags>
normalizeFlags(const std::vector<std::string> &args, std::string &error);

/// A tool's own flag (not a compile flag): trn-cc's --analyze, -o FILE, ...
struct ToolFlag {
  std::string_view name; ///< long name without dashes
  bool takesValue = false;
  char letter = 0;       ///< a one-letter alias (-o FILE, -v), or 0
  int id = 0;            ///< the tool's own code for it
  std::string_view help; ///< its --help line ("" keeps it out)
};

/// One of a tool's own flags as given.
struct ToolFlagUse {
  const ToolFlag *flag;
  std::string spelled; ///< as written, for messages (`-o`, `--report`)
  std::optional<std::string> value;
};

struct ToolCommandLine {
  std::string_view tool; ///< "trn-cc"
  std::vector<ToolFlag> flags;
  /// Why the table's output-neutral flags that are not among `flags` are
  /// refused, after "flag '--jobs' is not a trn-cc option".
  std::string_view notOurs;
};

/// The --help lines of a tool's own flags.
std::string toolFlagsHelp(const ToolCommandLine &tool);

/// Splits a tool's arguments with the syntax of the compile flags (--name
/// value, --name=value, -name, -O2, and the tool's one-letter aliases: -o
/// FILE, -oFILE, -v) into positionals ("-" is one), the tool's own flags
/// (given to `onFlag` in order; an error it returns ends the parse) and
/// the table's codegen flags, kept as given for normalizeFlags. Returns the
/// first usage error: an unknown flag (naming the closest known one), a
/// missing or unexpected value, a flag of the table the tool does not take.
std::optional<std::string> parseToolArgs(
    const std::vector<std::string> &args, const ToolCommandLine &tool,
    const std::function<std::optional<std::string>(const ToolFlagUse &)>
        &onFlag,
    std::vector<std::string> &positionals,
    std::vector<std::string> &codegenArgs);

/// The pipeline stages a compile of `args` stands for, each compiled on its
/// own (`args` then `--stage K`, one artifact and cache entry per stage):
/// pp when `args` give --pp above 1 and no --stage, else 0 (one compile of
/// `args` as they are, also when normalizeFlags rejects them).
int64_t stagesToCompile(const std::vector<std::string> &args);

/// The data-parallel degree `args` give (--dp N, --dp=N, or dp=N in
/// --mesh), else 1. It is not part of the normalised flags (one artifact
/// serves every DP degree) but the partitioner needs it. Expects `args` that
/// normalizeFlags accepted.
int64_t dpDegreeOf(const std::vector<std::string> &args);

} // namespace mlir::trn

#endif // TRN_DRIVER_COMPILEFLAGS_H
