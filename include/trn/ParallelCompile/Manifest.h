//===- Manifest.h - the graph manifest extraction mode writes ---*- C++ -*-===//
//
// A JSON-lines file: one record per step call of a training script run in
// extraction mode (python/trn/_extract.py writes it; docs/frontend.md lists
// the fields). trn-parallel-compile reads it, never the script's log.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_PARALLELCOMPILE_MANIFEST_H
#define TRN_PARALLELCOMPILE_MANIFEST_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::trn::parallel {

/// One distinct graph of a manifest (records with the same key merged).
struct GraphRecord {
  std::string key;       ///< MODULE_<graph>+<flags>
  std::string graphPath; ///< the .mlir file (absolute)
  std::string graphName; ///< the step function's name
  std::vector<std::string> flags;
  std::string script, callSite;
  int64_t ops = 0;
  int64_t elements = 0;
  double estimatedSeconds = 0;
  int64_t estimatedMemoryBytes = 0;
  /// Arguments plus the largest set of values alive at once (0: unknown).
  int64_t hbmBytesEstimate = 0;
  /// "input_ids i64[4, 16], labels i64[4, 16]" (data and label inputs).
  std::string inputSummary;
  int64_t calls = 0; ///< step calls that produced this graph
  /// A pipelined graph's stage this record compiles (its flags end with
  /// --stage K and its key is that stage's entry), or -1.
  int64_t stage = -1;
  /// "train_step", or "train_step stage 1".
  std::string displayName() const;
};

/// A step call that could not be translated (analyze mode records it and
/// lets the script go on).
struct ProblemRecord {
  std::string message; ///< names the op, its input shapes and the line
  std::string graphName, callSite, script;
};

/// Reads `path`; appends the graphs it lists (de-duplicated by key, first
/// record wins, in first-seen order) to `graphs`, and the problem records
/// (de-duplicated by message) to `problems` when given. False with a
/// one-line `error` naming the file and line for an unreadable file or a
/// record that is not a JSON object with at least "key" and "graph" (or
/// "unsupported").
bool readManifest(const std::string &path, std::vector<GraphRecord> &graphs,
                  std::string &error,
                  std::vector<ProblemRecord> *problems = nullptr);

/// A pipelined graph (codegen flags with pp > 1 and no --stage) is one
/// compile and one cache entry per stage: replaces each such record by one
/// per stage, with the stage's flags and key (and its share of the
/// estimated time), so that stages compile as separate jobs and a graph
/// counts as cached only when every stage is. Other records are kept.
/// Records whose flags or key do not parse are kept as they are (the
/// compile reports them).
std::vector<GraphRecord> expandPipelineStages(std::vector<GraphRecord> graphs);

} // namespace mlir::trn::parallel

#endif // TRN_PARALLELCOMPILE_MANIFEST_H
