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
