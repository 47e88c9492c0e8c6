//===- Report.h - what a compile says about its program ---------*- C++ -*-===//
//
// The summary of a compiled program (instruction counts, FLOPs, memory
// peaks, spills, and a device time estimated by one simulated run) and the
// forms the tools print it in: the table (trn-cc --analyze, compile -v), the
// JSON report (--report, --analyze --json), the line the compile log ends
// with, and one rank's HBM on a mesh (--analyze --mesh).
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DRIVER_REPORT_H
#define TRN_DRIVER_REPORT_H

#include "trn/Driver/CompileGraph.h"
#include "trn/Driver/Pipeline.h"
#include "trnrt/Isa.h"
#include "trnrt/Target.h"

#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::trn {

/// What a report says about a compiled program.
struct ProgramSummary {
  std::string target;
  std::array<uint64_t, 5> engineInstructions{}; ///< Tensor..Sync
  uint64_t dmaInstructions = 0;
  uint64_t dmaQueues = 0; ///< queues with at least one transfer
  uint64_t flops = 0;
  uint64_t sbufPeakBytesPerPartition = 0;
  uint64_t psumPeakBytesPerPartition = 0;
  uint64_t hbmBytes = 0;
  /// Tiles nc-allocate spilled to HBM (and reloaded), and their bytes.
  uint64_t spilledTiles = 0, spilledBytes = 0;
  // Capacities of the target, to show how much headroom is left.
  uint64_t sbufUsableBytesPerPartition = 0;
  uint64_t psumBytesPerPartition = 0;
  uint64_t hbmBytesPerCore = 0;
  std::optional<double> deviceTimeNs;
  std::string deviceTimeError; ///< why there is no estimate
};

/// Counts `program` as it runs (every call expanded). With
/// `estimateDeviceTime`, runs it once on the simulator with zero inputs (the
/// timing model does not depend on the values); a partitioned program runs
/// every rank of its compiled mesh and takes the slowest rank's time.
ProgramSummary summarizeProgram(const trnrt::Program &program,
                                bool estimateDeviceTime);

uint64_t totalInstructions(const ProgramSummary &summary);

/// The human-readable report (trn-cc --analyze, and compile with -v).
void printSummaryTable(llvm::raw_ostream &os, const std::string &graphName,
                       const std::string &key, const std::string &flags,
                       const ProgramSummary &summary);

/// Everything the JSON report says besides the program summary.
struct CompileReport {
  std::string mode; ///< "compile" or "analyze"
  std::string graphPath, graphName, outputPath, key, cacheStatus, cacheRoot,
      entryPath;
  std::vector<std::string> flags; ///< as given
  std::string normalizedFlags;
  double compileSeconds = 0;
  double elapsedSeconds = 0;
  int64_t peakMemoryBytes = 0;
  /// --analyze with a mesh: one rank's HBM per stage ("mesh_hbm").
  std::optional<MeshFootprint> meshFootprint;
};

/// The report of a compile in `mode` ("compile", or "analyze", which uses no
/// cache) with what its result says; the caller adds the paths and the flags
/// as given.
CompileReport compileReportOf(const GraphCompileResult &result,
                              const std::string &mode);

/// What a compile did, in one line: "compiled MODULE_…+… in 1.20 s" (with
/// " (cache off)"), or "cache hit MODULE_…+…" (with "(compiled by another
/// process; waited 4.00 s)").
std::string compileStatusLine(const GraphCompileResult &result);

/// The JSON report (trn-cc --report, --analyze --json), newline-terminated.
std::string reportJson(const CompileReport &report,
                       const ProgramSummary &summary);

/// "compiled in 1.20 s: 5120 instructions, ...": the compile log's last
/// line (a summary without the estimate).
std::string compiledLogLine(double seconds, const ProgramSummary &summary);

/// "kernel of N nc ops, M instructions (...), HBM B": what a timed compile
/// spent its time on.
std::string kernelSizeLine(const CompileStats &stats);

/// One rank's HBM by kind: a line per pipeline stage, else one line.
std::vector<std::string> meshFootprintLines(const MeshFootprint &footprint);

/// The first rank (of the first stage) that needs more HBM than a core of
/// `target` has, as a one-line error with what to change; std::nullopt when
/// every rank fits (or the target is unknown).
std::optional<std::string> meshFitProblem(const MeshFootprint &footprint,
                                          const trnrt::Target *target);

} // namespace mlir::trn

#endif // TRN_DRIVER_REPORT_H
