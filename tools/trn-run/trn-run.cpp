//===- trn-run.cpp - run an artifact on the simulated NeuronCore ---------===//
//
//   trn-run ARTIFACT [--inputs in.npz | --random SEED | --zeros]
//           [--outputs out.npz] [--profile trace.json] [--iterations N]
//           [--threads N] [--profile-summary] [--profile-top N]
//           [--check-against GRAPH.mlir [--rtol X]] [--poison] [--json]
//           [--timing-only] [--mirror-ranks]
//
// Loads a trn artifact, binds its inputs by name from an .npz (or random or
// zero values), runs it on the simulator, writes its outputs to an .npz, and
// prints the device time, per-engine utilisation, MFU and DMA traffic.
// --profile writes a Chrome-trace/Perfetto timeline: one track per engine
// and DMA queue, one slice per instruction. --profile-summary prints a
// neuron-profile-style summary instead of the short report.
// --check-against compares every output with the reference evaluator, at the
// tolerance of the least precise type the output is computed in.
//
//===----------------------------------------------------------------------===//

#include "CheckAgainst.h"
#include "MeshRun.h"

#include "ProfileSummary.h"
#include "trnrt/StageArtifact.h"

#include "trn/Cache/Text.h"
#include "trn/Driver/ToolCommandLine.h"

#include "trnrt/Artifact.h"
#include "trnrt/IsaValidate.h"
#include "trnrt/Npy.h"
#include "trnrt/Simulator.h"
#include "trnrt/Target.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace trnrt;

namespace {

int fail(const std::string &message, int status = 1) {
  std::cerr << "trn-run: error: " << message << "\n";
  return status;
}

const char *kUsage =
    R"(usage: trn-run ARTIFACT... [--inputs in.npz | --random SEED | --zeros]
               [--outputs out.npz] [--profile trace.json] [--iterations N]
               [--threads N] [--profile-summary] [--profile-top N]
               [--check-against GRAPH.mlir [--rtol X]] [--poison] [--json]
               [--timing-only] [--mesh AXIS=N,... [--mirror-ranks
               [--no-timeline-reuse]]
               [--collective-timeout SECONDS]]
       trn-run --version

Runs a trn artifact on the simulated NeuronCore and reports device time,
engine utilisation, MFU and DMA traffic. A pipelined step is one artifact
per stage (trn-cc --pp writes them): give them all, with --mesh.

  --inputs FILE      inputs by name from a NumPy .npz (any numeric dtype)
  --random SEED      random inputs: floats in [-1, 1), integers in [0, 2)
  --zeros            all inputs zero (the default)
  --outputs FILE     write every output to a NumPy .npz
  --profile FILE     write a Chrome-trace / Perfetto timeline (ui.perfetto.dev)
  --profile-summary  print a summary table instead of the short report: per
                     stream busy time and stalls (semaphores, ports, DMA
                     engines), time per opcode, the longest instructions
                     (with --json: a "profile_summary" object); for a
                     pipeline, each stage's fragments as last simulated
  --profile-top N    instructions in the summary's last table (default 10)
  --iterations N     run N times (statistics of the last run)
  --threads N        host threads the simulator may use (default 0: every
                     core; results are bit-identical for every N)
  --check-against G  evaluate the trn graph G on the same inputs with the
                     reference evaluator and compare every output; exit
                     status 1 if any differs. The error is relative to the
                     output's largest value; the tolerance is that of the
                     least precise type the output is computed in (anywhere
                     in the graph that leads to it, --auto-cast included):
                     f32 1e-4, f16 1e-3, bf16 2e-2, f8 0.25; integers exact
  --rtol X           with --check-against: tolerance X for every output
  --poison           fill fresh memory with NaN to catch reads of unwritten data
  --timing-only      simulate the time only: every instruction is checked and
                     costed as in a full run (device time, utilisation,
                     traffic and profiles are the same) but no values are
                     computed; for programs too large to simulate
                     functionally (no --inputs, --outputs, --check-against)
  --json             print the statistics as JSON
  --mesh dp=2,tp=2   run a partitioned artifact on one simulated NeuronCore
                     per rank: global inputs are split and global outputs
                     assembled by the artifact's shardings. In one process
                     (a thread per rank) or, under mpirun -np N / srun -n N,
                     one rank per process with collectives over Open MPI
                     (rank 0 writes the outputs). Axes must have the sizes
                     the artifact was compiled for, except axes used only by
                     all_reduce sum/mean (dp: one artifact, any degree)
  --mirror-ranks     with --mesh, timing only: simulate one rank per pipeline
                     stage (rank 0 of a partitioned program) and mirror the
                     others, which run the same program at the same times;
                     the step time, bubbles and MFU are the whole mesh's.
                     A fragment whose transfers arrive as in its last
                     simulated run repeats that run's timeline (exact: a
                     1F1B steady state costs one simulation per stage)
  --no-timeline-reuse  with --mirror-ranks: simulate every fragment run
  --collective-timeout S  with --mesh: seconds a collective waits for the
                     other ranks before the job stops naming the missing
                     ones (default 60)
)";

struct Options {
  std::string artifact, inputs, outputs, profile, checkAgainst;
  /// A pipelined step: the artifacts of the stages after the first.
  std::vector<std::string> moreArtifacts;
  std::optional<double> rtol;
  long long randomSeed = -1;
  bool zeros = false, poison = false, json = false, profileSummary = false;
  bool timingOnly = false, mirrorRanks = false, reuseTimelines = true;
  long long profileTop = 10;
  long long iterations = 1;
  long long threads = 0;
  std::string mesh;
  std::optional<double> collectiveTimeout;
};

enum FlagId {
  Inputs,
  Outputs,
  Profile,
  CheckAgainst,
  Rtol,
  Mesh,
  CollectiveTimeout,
  Random,
  Iterations,
  Threads,
  ProfileSummary,
  ProfileTop,
  Zeros,
  Poison,
  TimingOnly,
  MirrorRanks,
  NoTimelineReuse,
  Json
};

const mlir::trn::ToolCommandLine &commandLine() {
  static const mlir::trn::ToolCommandLine line = [] {
    mlir::trn::ToolCommandLine line;
    line.tool = "trn-run";
    line.notOurs = "it is a compile flag: trn-run runs compiled artifacts";
    line.flags = {{"inputs", true, 0, Inputs},
                  {"outputs", true, 0, Outputs},
                  {"profile", true, 0, Profile},
                  {"check-against", true, 0, CheckAgainst},
                  {"rtol", true, 0, Rtol},
                  {"mesh", true, 0, Mesh},
                  {"collective-timeout", true, 0, CollectiveTimeout},
                  {"random", true, 0, Random},
                  {"iterations", true, 0, Iterations},
                  {"threads", true, 0, Threads},
                  {"profile-summary", false, 0, ProfileSummary},
                  {"profile-top", true, 0, ProfileTop},
                  {"zeros", false, 0, Zeros},
                  {"poison", false, 0, Poison},
                  {"timing-only", false, 0, TimingOnly},
                  {"mirror-ranks", false, 0, MirrorRanks},
                  {"no-timeline-reuse", false, 0, NoTimelineReuse},
                  {"json", false, 0, Json}};
    return line;
  }();
  return line;
}

std::optional<std::string> parseArgs(int argc, char **argv, Options &options) {
  using mlir::trn::takeInteger;
  using mlir::trn::takePositive;
  bool profileTopGiven = false;
  auto onFlag =
      [&](const mlir::trn::ToolFlagUse &use) -> std::optional<std::string> {
    const std::string &value = use.value ? *use.value : std::string();
    switch (use.flag->id) {
    case Inputs:
      options.inputs = value;
      break;
    case Outputs:
      options.outputs = value;
      break;
    case Profile:
      options.profile = value;
      break;
    case CheckAgainst:
      options.checkAgainst = value;
      break;
    case Rtol:
      return takePositive(use, options.rtol);
    case Mesh:
      options.mesh = value;
      break;
    case CollectiveTimeout:
      return takePositive(use, options.collectiveTimeout);
    case Random:
      return takeInteger(use, 0, options.randomSeed);
    case Iterations:
      return takeInteger(use, 1, options.iterations);
    case Threads:
      return takeInteger(use, 0, options.threads);
    case ProfileSummary:
      options.profileSummary = true;
      break;
    case ProfileTop:
      profileTopGiven = true;
      return takeInteger(use, 0, options.profileTop);
    case Zeros:
      options.zeros = true;
      break;
    case Poison:
      options.poison = true;
      break;
    case TimingOnly:
      options.timingOnly = true;
      break;
    case MirrorRanks:
      options.mirrorRanks = true;
      break;
    case NoTimelineReuse:
      options.reuseTimelines = false;
      break;
    case Json:
      options.json = true;
      break;
    }
    return std::nullopt;
  };
  mlir::trn::ParsedToolArgs parsed;
  if (auto problem = mlir::trn::parseToolArgs(
          std::vector<std::string>(argv + 1, argv + argc), commandLine(),
          onFlag, parsed))
    return problem;
  if (parsed.help || parsed.version) {
    options.artifact = parsed.help ? "--help" : "--version";
    return std::nullopt;
  }
  for (const std::string &positional : parsed.positionals)
    (options.artifact.empty() ? options.artifact
                              : options.moreArtifacts.emplace_back()) =
        positional;
  if (options.artifact == "--help" || options.artifact == "--version")
    return std::nullopt;
  if (options.artifact.empty())
    return "no artifact given (see trn-run --help)";
  if (profileTopGiven && !options.profileSummary)
    return "--profile-top needs --profile-summary";
  if (options.rtol && options.checkAgainst.empty())
    return "--rtol needs --check-against";
  if (options.collectiveTimeout && options.mesh.empty())
    return "--collective-timeout needs --mesh";
  if (!options.checkAgainst.empty() && !options.moreArtifacts.empty())
    return std::string("--check-against does not apply to a pipelined step "
                       "(several artifacts) yet; compare --outputs with "
                       "trn-eval's instead");
  if (!options.checkAgainst.empty() && options.mirrorRanks)
    return std::string("--mirror-ranks computes no values; drop "
                       "--check-against");
  int sources =
      !options.inputs.empty() + (options.randomSeed >= 0) + options.zeros;
  if (sources > 1)
    return "give at most one of --inputs, --random and --zeros";
  if (options.mirrorRanks && options.mesh.empty())
    return "--mirror-ranks needs --mesh";
  if (!options.reuseTimelines && !options.mirrorRanks)
    return "--no-timeline-reuse needs --mirror-ranks";
  if (options.timingOnly || options.mirrorRanks) {
    const char *flag =
        options.timingOnly ? "--timing-only" : "--mirror-ranks (timing only)";
    for (auto [given, name] :
         {std::pair<bool, const char *>{!options.inputs.empty(), "--inputs"},
          {options.randomSeed >= 0, "--random"},
          {!options.outputs.empty(), "--outputs"},
          {!options.checkAgainst.empty(), "--check-against"},
          {options.poison, "--poison"}})
      if (given)
        return std::string(flag) + " computes no values; drop " + name;
  }
  return std::nullopt;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// What a --mesh run (partitioned or pipelined) takes of the options.
MeshCommand meshCommandOf(const Options &options) {
  MeshCommand command;
  command.artifact = options.artifact;
  command.mesh = options.mesh;
  command.inputs = options.inputs;
  command.outputs = options.outputs;
  command.profile = options.profile;
  command.randomSeed = options.randomSeed;
  command.poison = options.poison;
  command.timingOnly = options.timingOnly;
  command.mirrorRanks = options.mirrorRanks;
  command.reuseTimelines = options.reuseTimelines;
  command.json = options.json;
  command.profileSummary = options.profileSummary;
  command.profileTop = options.profileTop;
  command.iterations = options.iterations;
  command.checkAgainst = options.checkAgainst;
  command.rtol = options.rtol;
  if (options.collectiveTimeout)
    command.collectiveTimeoutSeconds = *options.collectiveTimeout;
  return command;
}

} // namespace

int main(int argc, char **argv) {
  // A bad command line exits 2, as in trn-cc and trn-cache, so that scripts
  // can tell a typo from a failed run or check.
  Options options;
  if (auto problem = parseArgs(argc, argv, options))
    return mlir::trn::usageError("trn-run", *problem);
  if (options.artifact == "--help") {
    std::cout << kUsage;
    return 0;
  }
  if (options.artifact == "--version") {
    std::cout << mlir::trn::cache::toolVersion("trn-run", trnrt::targetNames());
    return 0;
  }

  std::string error;
  // A pipelined step: stage artifacts, run on every rank of the mesh.
  std::vector<StageArtifact> stages;
  for (size_t i = 0; i <= options.moreArtifacts.size(); ++i) {
    const std::string &path =
        i == 0 ? options.artifact : options.moreArtifacts[i - 1];
    stages.emplace_back();
    if (!readStageArtifactFile(path, stages.back(), error))
      return fail(error);
  }
  if (const Program &first = stages.front().fragments.front();
      first.pipeline.isFragment()) {
    if (options.mesh.empty()) {
      // The mesh it was compiled for, data parallelism at its smallest.
      std::string example;
      for (const MeshAxis &axis : first.mesh)
        if (!axis.replica && axis.size > 1)
          example += (example.empty() ? "" : ",") + axis.name + "=" +
                     std::to_string(axis.size);
      if (first.pipeline.stages == 1)
        return fail(options.artifact +
                    " is a step that accumulates gradients over "
                    "microbatches; run it with trn-run --mesh (e.g. --mesh " +
                    (example.empty() ? "dp=1" : example) + ")");
      return fail(options.artifact +
                  " is a stage of a pipelined step; run every stage's "
                  "artifact together with trn-run --mesh (e.g. --mesh " +
                  example + ")");
    }
    return runPipelineCommand(meshCommandOf(options), stages);
  }
  if (!options.moreArtifacts.empty())
    return fail("unexpected argument '" + options.moreArtifacts.front() +
                    "': only a pipelined step takes several artifacts",
                2);
  Program program = std::move(stages.front().fragments.front());
  ArtifactInfo info = std::move(stages.front().infos.front());
  const Target *target = lookupTarget(program.target);
  if (!target)
    return fail(options.artifact + ": unknown target '" + program.target + "'");
  if (!options.mesh.empty()) {
    return runMeshCommand(meshCommandOf(options), program, info);
  }
  if (!program.mesh.empty()) {
    std::string mesh;
    for (const MeshAxis &axis : program.mesh)
      mesh += (mesh.empty() ? "" : ",") + axis.name + "=" +
              std::to_string(axis.size);
    return fail(options.artifact + " is partitioned for mesh " + mesh +
                "; run every rank with trn-run --mesh " + mesh);
  }

  SimulatorOptions simOptions;
  simOptions.poisonMemory = options.poison;
  simOptions.recordInstructions =
      !options.profile.empty() || options.profileSummary;
  simOptions.threads = unsigned(std::min<long long>(options.threads, 1024));
  simOptions.timingOnly = options.timingOnly;
  Simulator simulator(*target, simOptions);
  if (!simulator.load(program, error))
    return fail(error);

  // Bind the inputs.
  std::map<std::string, NpyArray> provided;
  if (!options.inputs.empty()) {
    std::vector<std::pair<std::string, NpyArray>> arrays;
    if (!readNpz(options.inputs, arrays, error))
      return fail(error);
    for (auto &[name, array] : arrays)
      provided.emplace(name, std::move(array));
  }
  std::mt19937_64 rng(options.randomSeed >= 0 ? options.randomSeed : 0);
  std::vector<NamedTensor> boundInputs;
  for (const ArtifactTensorInfo &input :
       options.timingOnly ? std::vector<ArtifactTensorInfo>() : info.inputs) {
    int64_t count = elementCount(input.shape);
    std::vector<double> values(count, 0.0);
    if (!options.inputs.empty()) {
      auto it = provided.find(input.name);
      if (it == provided.end())
        return fail(options.inputs + " has no entry '" + input.name +
                    "' for input " + input.name + " " + shapeText(input.shape));
      const NpyArray &array = it->second;
      if (array.shape != input.shape)
        return fail(options.inputs + ": entry '" + input.name + "' has shape " +
                    shapeText(array.shape) + " but the artifact expects " +
                    shapeText(input.shape) + " " + dtypeName(input.dtype));
      if (!isFloatDType(input.dtype) && array.kind == 'f')
        return fail(options.inputs + ": entry '" + input.name +
                    "' holds floats but the input is " +
                    dtypeName(input.dtype) + "; pass integers");
      if (input.dtype == DType::I64 && array.kind != 'f') {
        // Exact: a double would round an i64 (a seed) beyond 2^53.
        std::vector<int64_t> ints(count);
        for (int64_t i = 0; i < count; ++i)
          ints[i] = array.getInt64(i);
        if (!simulator.writeTensorBytes(input.name, ints.data(),
                                        ints.size() * sizeof(int64_t), error))
          return fail(error);
        if (!options.checkAgainst.empty())
          boundInputs.push_back(
              {input.name, input.dtype, input.shape, {}, std::move(ints)});
        provided.erase(it);
        continue;
      }
      for (int64_t i = 0; i < count; ++i)
        values[i] = array.getDouble(i);
      provided.erase(it);
    } else if (options.randomSeed >= 0) {
      std::uniform_real_distribution<double> uniform(-1.0, 1.0);
      std::uniform_int_distribution<int> bits(0, 1);
      for (double &value : values)
        value = isFloatDType(input.dtype) ? uniform(rng) : bits(rng);
    }
    if (!simulator.writeTensor(input.name, values.data(), values.size(), error))
      return fail(error);
    if (!options.checkAgainst.empty()) {
      // The evaluator must see the values the device saw (rounded).
      NamedTensor bound{input.name, input.dtype, input.shape, {}};
      if (!simulator.readTensor(input.name, bound.values, error))
        return fail(error);
      boundInputs.push_back(std::move(bound));
    }
  }
  for (const auto &[name, array] : provided)
    std::cerr << "trn-run: warning: " << options.inputs << " entry '" << name
              << "' matches no input and is ignored\n";

  SimulationStats stats;
  for (long long i = 0; i < options.iterations; ++i)
    if (!simulator.run(stats, error))
      return fail(error);

  if (!options.outputs.empty()) {
    std::vector<std::pair<std::string, NpyArray>> arrays;
    for (const ArtifactTensorInfo &output : info.outputs) {
      NpyArray array;
      if (output.dtype == DType::I64) {
        std::vector<uint8_t> bytes;
        if (!simulator.readTensorBytes(output.name, bytes, error))
          return fail(error);
        std::vector<int64_t> ints(bytes.size() / sizeof(int64_t));
        std::memcpy(ints.data(), bytes.data(), ints.size() * sizeof(int64_t));
        array = NpyArray::fromInt64s(output.shape, ints, 'i', 8);
        arrays.emplace_back(output.name, std::move(array));
        continue;
      }
      std::vector<double> values;
      if (!simulator.readTensor(output.name, values, error))
        return fail(error);
      if (output.dtype == DType::I32 || output.dtype == DType::I64 ||
          output.dtype == DType::I1) {
        std::vector<int64_t> ints(values.begin(), values.end());
        array = NpyArray::fromInt64s(output.shape, ints,
                                     output.dtype == DType::I1 ? 'b' : 'i',
                                     output.dtype == DType::I1    ? 1
                                     : output.dtype == DType::I32 ? 4
                                                                  : 8);
      } else {
        array = NpyArray::fromDoubles(output.shape, values, 4);
      }
      arrays.emplace_back(output.name, std::move(array));
    }
    if (!writeNpz(options.outputs, arrays, error))
      return fail(error);
  }
  if (!options.profile.empty() &&
      !writeProfile(options.profile, stats, program, error))
    return fail(error);

  bool checkFailed = false;
  nlohmann::json checkJson;
  if (!options.checkAgainst.empty()) {
    std::vector<NamedTensor> produced;
    for (const ArtifactTensorInfo &output : info.outputs) {
      NamedTensor tensor{output.name, output.dtype, output.shape, {}};
      if (!simulator.readTensor(output.name, tensor.values, error))
        return fail(error);
      produced.push_back(std::move(tensor));
    }
    std::vector<OutputComparison> comparisons;
    if (!checkAgainstGraph(options.checkAgainst, boundInputs, produced,
                           checkOptionsFor(info.report, options.rtol),
                           comparisons, error))
      return fail(error);
    // With --json, stdout holds the report alone: the lines go to stderr
    // and the comparisons into the report.
    checkFailed = !printComparisons(options.checkAgainst, comparisons,
                                    options.json ? stderr : stdout);
    checkJson = {{"graph", options.checkAgainst},
                 {"passed", !checkFailed},
                 {"outputs", nlohmann::json::array()}};
    for (const OutputComparison &c : comparisons)
      checkJson["outputs"].push_back({{"name", c.name},
                                      {"max_abs_error", c.maxAbsError},
                                      {"max_rel_error", c.maxRelError},
                                      {"tolerance", c.tolerance},
                                      {"tolerance_reason", c.toleranceReason},
                                      {"passed", c.passed}});
  }

  static const char *engines[] = {"tensor", "vector", "scalar", "gpsimd",
                                  "sync"};
  if (options.json) {
    nlohmann::json out = {
        {"artifact", options.artifact},
        {"target", program.target},
        {"device_time_ns", stats.deviceTimeNs},
        {"instructions", stats.instructions},
        {"tensor_engine_utilisation", stats.tensorEngineUtilisation},
        {"mfu", stats.mfu},
        {"matmul_flops", stats.matmulFlops},
        {"hbm_to_sbuf_bytes", stats.hbmToSbufBytes},
        {"sbuf_to_hbm_bytes", stats.sbufToHbmBytes},
        {"dma_count", stats.dmaCount},
        {"average_dma_bytes", stats.averageDmaBytes},
        {"spill_bytes", stats.spillBytes()},
        {"scratch_bytes", stats.scratchSaveBytes + stats.scratchReloadBytes}};
    for (size_t e = 0; e < stats.engines.size(); ++e)
      out["engine_busy_percent"][engines[e]] = stats.engines[e].busyPercent;
    out["time_by_kind_ns"] = trnrt::timeByKindJson(stats);
    if (!checkJson.is_null())
      out["check_against"] = checkJson;
    if (options.profileSummary)
      out["profile_summary"] = profileSummaryJson(
          stats, size_t(options.profileTop), program.origins);
    std::cout << out.dump(2) << "\n";
    return checkFailed ? 1 : 0;
  }
  if (options.profileSummary) {
    std::fputs(formatProfileSummary(stats, program.target,
                                    size_t(options.profileTop), program.origins)
                   .c_str(),
               stdout);
    return checkFailed ? 1 : 0;
  }
  std::printf("device time      %.3f us (%llu instructions)\n",
              stats.deviceTimeNs / 1000.0,
              static_cast<unsigned long long>(stats.instructions));
  std::printf("engine busy      ");
  for (size_t e = 0; e < 4; ++e)
    std::printf("%s %.1f%%%s", engines[e], stats.engines[e].busyPercent,
                e < 3 ? ", " : "\n");
  std::printf("dma active       %.1f%% (%llu transfers, average %.0f bytes)\n",
              stats.dmaActivePercent,
              static_cast<unsigned long long>(stats.dmaCount),
              stats.averageDmaBytes);
  std::printf("tensor engine    %.1f%% utilisation, MFU %.1f%% (%.3g GFLOP)\n",
              stats.tensorEngineUtilisation * 100.0, stats.mfu * 100.0,
              stats.matmulFlops / 1e9);
  std::printf("hbm traffic      %.3f MiB in, %.3f MiB out, %.3f MiB spilled\n",
              stats.hbmToSbufBytes / 1048576.0,
              stats.sbufToHbmBytes / 1048576.0, stats.spillBytes() / 1048576.0);
  // What the device time went to (the compiler records each instruction's
  // kind; an old artifact's are all "other").
  std::fputs(trnrt::formatTimeByKind(stats).c_str(), stdout);
  return checkFailed ? 1 : 0;
}
