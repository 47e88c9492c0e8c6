//===- Report.cpp - what a compile says about its program -----------------===//

#include "trn/Driver/Report.h"

#include "trn/Cache/Key.h"
#include "trn/Cache/Text.h"
#include "trn/Support/CommandLineValues.h"

#include "trnrt/Mesh.h"
#include "trnrt/Simulator.h"
#include "trnrt/Subroutines.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstdio>

using namespace mlir;
using mlir::trn::ProgramSummary;
using mlir::trn::cache::formatSize;

//===----------------------------------------------------------------------===//
// The summary and the device-time estimate
//===----------------------------------------------------------------------===//

/// Runs `program` once on the simulator with zero inputs for its device
/// time. A partitioned program runs every rank of its compiled mesh, in
/// threads: its device time is the slowest rank's.
static void estimateDeviceTime(const trnrt::Program &program,
                               const trnrt::Target &target,
                               ProgramSummary &summary) {
  std::string error;
  if (!program.mesh.empty()) {
    std::vector<std::vector<uint8_t>> inputs;
    for (const trnrt::HbmTensor &tensor : program.tensors) {
      if (tensor.kind != trnrt::HbmTensor::Kind::Input)
        continue;
      uint64_t elements = 1;
      for (int64_t size : trnrt::globalShape(tensor, program.mesh))
        elements *= uint64_t(size);
      inputs.emplace_back(elements * trnrt::dtypeSizeInBytes(tensor.dtype), 0);
    }
    trnrt::MeshRunOptions options;
    options.simulator.threads = 1;
    std::vector<trnrt::RankRun> runs;
    if (!trnrt::runMeshInProcess(target, program, program.mesh, inputs, options,
                                 runs, error)) {
      summary.deviceTimeError = error;
      return;
    }
    double slowest = 0.0;
    for (const trnrt::RankRun &run : runs)
      slowest = std::max(slowest, run.stats.deviceTimeNs);
    summary.deviceTimeNs = slowest;
    return;
  }
  trnrt::Simulator simulator(target);
  trnrt::SimulationStats stats;
  if (!simulator.load(program, error) || !simulator.run(stats, error)) {
    summary.deviceTimeError = error;
    return;
  }
  summary.deviceTimeNs = stats.deviceTimeNs;
}

ProgramSummary mlir::trn::summarizeProgram(const trnrt::Program &compiled,
                                           bool estimateTime) {
  ProgramSummary summary;
  summary.target = compiled.target;
  // Counts are of the program that runs: every call expanded.
  std::vector<uint64_t> sizes = trnrt::expandedStreamSizes(compiled);
  for (size_t s = 0; s < sizes.size(); ++s) {
    if (s < summary.engineInstructions.size()) {
      summary.engineInstructions[s] = sizes[s];
      continue;
    }
    summary.dmaInstructions += sizes[s];
    summary.dmaQueues += sizes[s] == 0 ? 0 : 1;
  }
  summary.flops = compiled.flops;
  summary.sbufPeakBytesPerPartition = compiled.sbufPeakBytesPerPartition;
  summary.psumPeakBytesPerPartition = compiled.psumPeakBytesPerPartition;
  summary.hbmBytes = trnrt::expandedHbmBytes(compiled);
  auto countSpills = [&](const trnrt::Program &program) {
    for (const trnrt::HbmTensor &tensor : program.tensors)
      if (tensor.isSpill()) {
        uint64_t bytes = 0;
        trnrt::tensorBytes(tensor, bytes); // the reader validated the shape
        ++summary.spilledTiles;
        summary.spilledBytes += bytes;
      }
  };
  countSpills(compiled);
  for (const trnrt::Program &subroutine : compiled.subroutines)
    countSpills(subroutine);
  // The simulator runs calls resolved (the tables of the expanded program).
  std::optional<trnrt::Program> resolved;
  if (estimateTime && !compiled.calls.empty()) {
    resolved = compiled;
    std::string error;
    if (!trnrt::resolveCalls(*resolved, error)) {
      summary.deviceTimeError = error;
      return summary;
    }
  }
  const trnrt::Program &program = resolved ? *resolved : compiled;
  const trnrt::Target *target = trnrt::lookupTarget(program.target);
  if (!target) {
    summary.deviceTimeError = "unknown target '" + program.target + "'";
    return summary;
  }
  summary.sbufUsableBytesPerPartition = target->sbufUsableBytesPerPartition;
  summary.psumBytesPerPartition = target->psumBytesPerPartition;
  summary.hbmBytesPerCore = target->hbmBytesPerCore;
  if (program.pipeline.isFragment())
    // A fragment's transfers need the other stages: trn-run runs them all.
    summary.deviceTimeError =
        "stage " + std::to_string(program.pipeline.stage) + "'s " +
        program.pipeline.phase +
        " fragment runs with the rest of its pipeline (trn-run every "
        "stage's artifact with --mesh)";
  else if (estimateTime)
    estimateDeviceTime(program, *target, summary);
  else
    summary.deviceTimeError = "not estimated";
  return summary;
}

uint64_t mlir::trn::totalInstructions(const ProgramSummary &summary) {
  uint64_t total = summary.dmaInstructions;
  for (uint64_t count : summary.engineInstructions)
    total += count;
  return total;
}

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

/// A device time in nanoseconds: "850 ns", "1.25 us", "3.40 ms".
static std::string formatDeviceTime(double ns) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (ns < 1e3)
    os << llvm::format("%.0f ns", ns);
  else if (ns < 1e6)
    os << llvm::format("%.2f us", ns / 1e3);
  else if (ns < 1e9)
    os << llvm::format("%.2f ms", ns / 1e6);
  else
    os << llvm::format("%.2f s", ns / 1e9);
  return text;
}

/// "1.5 MiB of 24.0 MiB (6.2%)".
static std::string formatUse(uint64_t used, uint64_t capacity) {
  std::string text = formatSize(used);
  if (capacity == 0)
    return text;
  llvm::raw_string_ostream os(text);
  os << " of " << formatSize(capacity)
     << llvm::format(" (%.1f%%)", 100.0 * static_cast<double>(used) /
                                      static_cast<double>(capacity));
  return text;
}

void mlir::trn::printSummaryTable(llvm::raw_ostream &os,
                                  const std::string &graphName,
                                  const std::string &key,
                                  const std::string &flags,
                                  const ProgramSummary &summary) {
  os << "graph          @" << graphName << "\n";
  os << "key            " << key << "\n";
  os << "target         " << summary.target << "\n";
  os << "flags          " << flags << "\n";
  os << "instructions   " << totalInstructions(summary) << " (";
  for (size_t engine = 0; engine < summary.engineInstructions.size(); ++engine)
    os << trnrt::engineName(static_cast<trnrt::Engine>(engine)) << " "
       << summary.engineInstructions[engine] << ", ";
  os << "dma " << summary.dmaInstructions << " on " << summary.dmaQueues
     << (summary.dmaQueues == 1 ? " queue" : " queues") << ")\n";
  os << "matmul FLOPs   " << summary.flops << "\n";
  os << "SBUF peak      "
     << formatUse(summary.sbufPeakBytesPerPartition,
                  summary.sbufUsableBytesPerPartition)
     << " per partition\n";
  os << "PSUM peak      "
     << formatUse(summary.psumPeakBytesPerPartition,
                  summary.psumBytesPerPartition)
     << " per partition\n";
  os << "SBUF spills    ";
  if (summary.spilledTiles == 0)
    os << "none\n";
  else
    os << summary.spilledTiles
       << (summary.spilledTiles == 1 ? " tile, " : " tiles, ")
       << formatSize(summary.spilledBytes) << " stored to HBM and reloaded\n";
  os << "HBM            "
     << formatUse(summary.hbmBytes, summary.hbmBytesPerCore) << "\n";
  os << "device time    ";
  if (summary.deviceTimeNs)
    os << formatDeviceTime(*summary.deviceTimeNs)
       << " (estimated: simulated once with zero inputs)\n";
  else
    os << "unavailable: " << summary.deviceTimeError << "\n";
}

/// The JSON fields of the program summary.
static void writeSummaryJson(llvm::json::OStream &json,
                             const ProgramSummary &summary) {
  json.attribute("target", summary.target);
  json.attributeObject("instructions", [&] {
    for (size_t engine = 0; engine < summary.engineInstructions.size();
         ++engine)
      json.attribute(trnrt::engineName(static_cast<trnrt::Engine>(engine)),
                     static_cast<int64_t>(summary.engineInstructions[engine]));
    json.attribute("dma", static_cast<int64_t>(summary.dmaInstructions));
    json.attribute("total", static_cast<int64_t>(totalInstructions(summary)));
  });
  json.attribute("dma_queues", static_cast<int64_t>(summary.dmaQueues));
  json.attribute("flops", static_cast<int64_t>(summary.flops));
  json.attribute("sbuf_peak_bytes_per_partition",
                 static_cast<int64_t>(summary.sbufPeakBytesPerPartition));
  json.attribute("sbuf_usable_bytes_per_partition",
                 static_cast<int64_t>(summary.sbufUsableBytesPerPartition));
  json.attribute("psum_peak_bytes_per_partition",
                 static_cast<int64_t>(summary.psumPeakBytesPerPartition));
  json.attribute("psum_bytes_per_partition",
                 static_cast<int64_t>(summary.psumBytesPerPartition));
  json.attribute("spilled_tiles", static_cast<int64_t>(summary.spilledTiles));
  json.attribute("spilled_bytes", static_cast<int64_t>(summary.spilledBytes));
  json.attribute("hbm_bytes", static_cast<int64_t>(summary.hbmBytes));
  json.attribute("hbm_bytes_per_core",
                 static_cast<int64_t>(summary.hbmBytesPerCore));
  if (summary.deviceTimeNs)
    json.attribute("estimated_device_time_ns", *summary.deviceTimeNs);
  else {
    json.attribute("estimated_device_time_ns", nullptr);
    json.attribute("estimated_device_time_error", summary.deviceTimeError);
  }
}

mlir::trn::CompileReport
mlir::trn::compileReportOf(const GraphCompileResult &result,
                           const std::string &mode) {
  CompileReport report;
  report.mode = mode;
  report.graphName = result.graphName;
  report.key = result.key;
  report.normalizedFlags = result.normalizedFlags;
  report.compileSeconds = result.compileSeconds;
  if (mode != "analyze") {
    report.cacheStatus = result.cacheStatus;
    report.cacheRoot = result.cacheRoot;
    report.entryPath = result.entryPath;
  }
  return report;
}

std::string mlir::trn::compileStatusLine(const GraphCompileResult &result) {
  if (result.cacheStatus != "hit")
    return "compiled " + result.key + " in " +
           formatSeconds(result.compileSeconds) +
           (result.cacheStatus == "off" ? " (cache off)" : "");
  std::string line = "cache hit " + result.key;
  if (result.waitedSeconds > 0.05)
    line += " (compiled by another process; waited " +
            formatSeconds(result.waitedSeconds) + ")";
  return line;
}

/// "mesh_hbm": one rank's HBM per stage, in bytes, as the lines of
/// meshFootprintLines say it.
static void writeFootprintJson(llvm::json::OStream &json,
                               const mlir::trn::MeshFootprint &footprint) {
  json.attributeObject("mesh_hbm", [&] {
    json.attribute("mesh", footprint.mesh);
    json.attribute("pipelined", footprint.pipelined);
    json.attributeArray("stages", [&] {
      for (const trn::partition::RankFootprint &f : footprint.stages)
        json.object([&] {
          json.attribute("total_bytes", f.total());
          json.attribute("parameter_bytes", f.parameters);
          json.attribute("optimizer_state_bytes", f.optimizerStates);
          json.attribute("gradient_bytes", f.gradients);
          json.attribute("input_bytes", f.inputs);
          json.attribute("stash_bytes", f.stash);
          json.attribute("microbatches_in_flight", f.microbatchesInFlight);
          json.attribute("peak_intermediate_bytes", f.peakIntermediates);
        });
    });
  });
}

std::string mlir::trn::reportJson(const CompileReport &report,
                                  const ProgramSummary &summary) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("mode", report.mode);
    json.attribute("graph", report.graphName);
    json.attribute("input", report.graphPath);
    if (!report.outputPath.empty())
      json.attribute("output", report.outputPath);
    json.attribute("key", report.key);
    if (!report.cacheStatus.empty())
      json.attribute("cache", report.cacheStatus);
    if (!report.cacheRoot.empty())
      json.attribute("cache_dir", report.cacheRoot);
    if (!report.entryPath.empty())
      json.attribute("cache_entry", report.entryPath);
    json.attribute("compiler_version", cache::compilerVersion());
    json.attributeArray("flags", [&] {
      for (const std::string &flag : report.flags)
        json.value(flag);
    });
    json.attribute("normalized_flags", report.normalizedFlags);
    json.attribute("compile_seconds", report.compileSeconds);
    json.attribute("elapsed_seconds", report.elapsedSeconds);
    json.attribute("peak_memory_bytes", report.peakMemoryBytes);
    if (report.meshFootprint)
      writeFootprintJson(json, *report.meshFootprint);
    writeSummaryJson(json, summary);
  });
  os << "\n";
  return text;
}

std::string mlir::trn::compiledLogLine(double seconds,
                                       const ProgramSummary &summary) {
  std::string line;
  llvm::raw_string_ostream os(line);
  os << "compiled in " << formatSeconds(seconds) << ": "
     << totalInstructions(summary) << " instructions, " << summary.flops
     << " matmul FLOPs, SBUF peak " << summary.sbufPeakBytesPerPartition
     << " B and PSUM peak " << summary.psumPeakBytesPerPartition
     << " B per partition, HBM " << summary.hbmBytes << " B\n";
  return line;
}

std::string mlir::trn::kernelSizeLine(const CompileStats &stats) {
  const auto &e = stats.engineInstructions;
  uint64_t total = stats.dmaInstructions;
  for (uint64_t count : e)
    total += count;
  std::string line;
  llvm::raw_string_ostream os(line);
  os << "kernel of " << stats.kernelOps << " nc ops, " << total
     << " instructions (tensor " << e[0] << ", vector " << e[1] << ", scalar "
     << e[2] << ", gpsimd " << e[3] << ", sync " << e[4] << ", dma "
     << stats.dmaInstructions << "), HBM " << stats.hbmBytes << " B";
  return line;
}

//===----------------------------------------------------------------------===//
// Mesh footprints
//===----------------------------------------------------------------------===//

std::vector<std::string>
mlir::trn::meshFootprintLines(const MeshFootprint &footprint) {
  std::vector<std::string> lines;
  for (size_t s = 0; s < footprint.stages.size(); ++s) {
    const partition::RankFootprint &f = footprint.stages[s];
    if (footprint.pipelined)
      lines.push_back("stage " + std::to_string(s) + " per-rank HBM at " +
                      footprint.mesh + ": " + formatSize(f.total()) +
                      " (parameters " + formatSize(f.parameters) +
                      ", optimizer state " + formatSize(f.optimizerStates) +
                      ", gradient accumulators " + formatSize(f.gradients) +
                      ", stashed activations " + formatSize(f.stash) + " for " +
                      std::to_string(f.microbatchesInFlight) +
                      " microbatches in flight, peak intermediates " +
                      formatSize(f.peakIntermediates) + ")");
    else
      lines.push_back(
          "per-rank HBM at " + footprint.mesh + ": " + formatSize(f.total()) +
          " (parameters " + formatSize(f.parameters) + ", optimizer state " +
          formatSize(f.optimizerStates) + ", gradients " +
          formatSize(f.gradients) + ", inputs " + formatSize(f.inputs) +
          ", peak intermediates " + formatSize(f.peakIntermediates) + ")");
  }
  return lines;
}

std::optional<std::string>
mlir::trn::meshFitProblem(const MeshFootprint &footprint,
                          const trnrt::Target *target) {
  if (!target)
    return std::nullopt;
  for (size_t s = 0; s < footprint.stages.size(); ++s) {
    const partition::RankFootprint &f = footprint.stages[s];
    if (uint64_t(f.total()) <= target->hbmBytesPerCore)
      continue;
    std::string head = "mesh " + footprint.mesh + " does not fit: ";
    std::string tail = " of HBM, more than the " +
                       formatSize(int64_t(target->hbmBytesPerCore)) +
                       " of a NeuronCore (parameters " +
                       formatSize(f.parameters) + ", optimizer state " +
                       formatSize(f.optimizerStates);
    if (footprint.pipelined)
      return head + "stage " + std::to_string(s) + "'s rank needs " +
             formatSize(f.total()) + tail + ", gradient accumulators " +
             formatSize(f.gradients) + ", stashed activations " +
             formatSize(f.stash) + ", peak intermediates " +
             formatSize(f.peakIntermediates) +
             "); raise pp or tp, or use fewer microbatches in flight";
    return head + "one rank needs " + formatSize(f.total()) + tail +
           ", peak intermediates " + formatSize(f.peakIntermediates) +
           "); raise tp, or shorten the sequence or the batch";
  }
  return std::nullopt;
}
