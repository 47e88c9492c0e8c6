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

#include <string>
#include <vector>

struct NamedTensor {
  std::string name;
  trnrt::DType dtype = trnrt::DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

struct OutputComparison {
  std::string name;
  double maxAbsError = 0, maxRelError = 0, tolerance = 0;
  bool passed = false;
};

/// Evaluates `graphPath` (its only function, or @main) with `inputs` bound
/// by argument name (trn.name, else arg<i>) and compares each result (by
/// trn.name, else result<i>) with the same-named entry of `outputs`. The
/// error of an output is max |run - reference| / max(max |reference|, tiny);
/// it passes when that is within the tolerance of its dtype (f32 1e-4, f16
/// 1e-3, bf16 2e-2, f8 0.25, integers exact). Returns false with `error` when
/// the comparison cannot be made (unreadable graph, missing names, shapes).
bool checkAgainstGraph(const std::string &graphPath,
                       const std::vector<NamedTensor> &inputs,
                       const std::vector<NamedTensor> &outputs,
                       std::vector<OutputComparison> &comparisons,
                       std::string &error);

#endif // TRN_TOOLS_TRN_RUN_CHECKAGAINST_H
