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
  /// "input_ids i64[4, 16], labels i64[4, 16]" (data and label inputs).
  std::string inputSummary;
  int64_t calls = 0; ///< step calls that produced this graph
};

/// Reads `path`; appends the graphs it lists (de-duplicated by key, first
/// record wins, in first-seen order) to `graphs`. False with a one-line
/// `error` naming the file and line for an unreadable file or a record that
/// is not a JSON object with at least "key" and "graph".
bool readManifest(const std::string &path, std::vector<GraphRecord> &graphs,
                  std::string &error);

} // namespace mlir::trn::parallel

#endif // TRN_PARALLELCOMPILE_MANIFEST_H
