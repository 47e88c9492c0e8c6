//===- CheckAgainst.h - compare a run with the reference evaluator --*- C++
//-*-===//
//
// trn-run --check-against GRAPH.mlir: evaluates the trn graph an artifact was
// compiled from on the same inputs and compares every output. The interface
// has no MLIR types so that trn-run.cpp stays a plain runtime client.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_TOOLS_TRN_RUN_CHECKAGAINST_H
#define TRN_TOOLS_TRN_RUN_CHECKAGAINST_H

#include "trnrt/Numerics.h"

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

struct NamedTensor {
  std::string name;
  trnrt::DType dtype = trnrt::DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> values;
  /// i64 tensors: the exact values (doubles hold only 53 bits; a Philox
  /// seed uses all 64).
  std::vector<int64_t> ints;
};

struct CheckOptions {
  /// The --auto-cast and --auto-cast-type the artifact was compiled with, as
  /// its normalised flags record them ("none", "matmul", "all"; "bf16",
  /// "fp8_e4m3"): the graph as written does not show the cast.
  std::string autoCast = "none";
  std::string autoCastType = "bf16";
  /// --rtol: the tolerance of every float output, instead of the precision
  /// rule.
  std::optional<double> rtol;
};

struct OutputComparison {
  std::string name;
  double maxAbsError = 0, maxRelError = 0, tolerance = 0;
  /// Why this tolerance: "computed in bf16", "f32 throughout", "--rtol",
  /// "i32: exact".
  std::string toleranceReason;
  bool passed = false;
};

/// The tolerance of a value computed in `dtype`: f32 1e-4, f16 1e-3, bf16
/// 2e-2, f8 0.25 (about 2.5 ulps of a tensor's largest element), integers 0.
double toleranceFor(trnrt::DType dtype);

/// Evaluates `graphPath` (its only function, or @main) with `inputs` bound
/// by argument name (trn.name, else arg<i>) and compares each result (by
/// trn.name, else result<i>) with the same-named entry of `outputs`. The
/// error of an output is max |run - reference| / max(max |reference|, tiny).
/// A float output passes when that is within the tolerance of the least
/// precise float type it is computed in (trn::computePrecision: its backward
/// slice in the graph, `trn.matmul_type` marks, and `options`' auto-cast),
/// or within `options.rtol` when given; integer outputs must match exactly.
/// Returns false with `error` when the comparison cannot be made (unreadable
/// graph, missing names, shapes, an unknown auto-cast).
bool checkAgainstGraph(const std::string &graphPath,
                       const std::vector<NamedTensor> &inputs,
                       const std::vector<NamedTensor> &outputs,
                       const CheckOptions &options,
                       std::vector<OutputComparison> &comparisons,
                       std::string &error);

/// The check's options for an artifact: the --auto-cast it was compiled with
/// (the graph as written does not show it; its report's "normalized_flags"
/// record it) and `rtol`.
CheckOptions checkOptionsFor(const std::map<std::string, std::string> &report,
                             std::optional<double> rtol);

/// Prints a line per output and the verdict against `graphPath` on `out`
/// (stderr when stdout carries --json); true when every output matches.
bool printComparisons(const std::string &graphPath,
                      const std::vector<OutputComparison> &comparisons,
                      std::FILE *out);

#endif // TRN_TOOLS_TRN_RUN_CHECKAGAINST_H
