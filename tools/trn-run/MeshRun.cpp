//===- MeshRun.cpp - trn-run --mesh: every rank of a partitioned program --===//

#include "MeshRun.h"

#include "CheckAgainst.h"

#include "ProfileSummary.h"

#include "trnrt/Mesh.h"
#include "trnrt/MpiCommunicator.h"
#include "trnrt/Npy.h"
#include "trnrt/PipelineRun.h"
#include "trnrt/Target.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>

namespace trnrt {

namespace {

int fail(const std::string &message) {
  std::cerr << "trn-run: error: " << message << "\n";
  return 1;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string meshText(const std::vector<MeshAxis> &axes) {
  std::string text;
  for (const MeshAxis &axis : axes)
    text +=
        (text.empty() ? "" : ",") + axis.name + "=" + std::to_string(axis.size);
  return text;
}

/// Reads TRNRT_TEST_FAIL_RANK / TRNRT_TEST_STALL_RANK (tests only).
int testRank(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return -1;
  return std::atoi(value);
}

/// A global input or output: its name, dtype and global shape.
struct GlobalValue {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// The global inputs or outputs of a partitioned program, in program order.
std::vector<GlobalValue> globalValues(const Program &program,
                                      const std::vector<MeshAxis> &bound,
                                      HbmTensor::Kind kind) {
  std::vector<GlobalValue> values;
  for (const HbmTensor &tensor : program.tensors)
    if (tensor.kind == kind)
      values.push_back({tensor.name, tensor.dtype, globalShape(tensor, bound)});
  return values;
}

/// The global inputs, as bytes of each value's dtype: from an .npz (by
/// name, global shapes), random, or zeros.
bool globalInputs(const MeshCommand &command,
                  const std::vector<GlobalValue> &specs,
                  const std::vector<MeshAxis> &bound,
                  std::vector<std::vector<uint8_t>> &inputs,
                  std::string &error) {
  std::map<std::string, NpyArray> provided;
  if (!command.inputs.empty()) {
    std::vector<std::pair<std::string, NpyArray>> arrays;
    if (!readNpz(command.inputs, arrays, error))
      return false;
    for (auto &[name, array] : arrays)
      provided.emplace(name, std::move(array));
  }
  std::mt19937_64 rng(command.randomSeed >= 0 ? command.randomSeed : 0);
  for (const GlobalValue &spec : specs) {
    const std::vector<int64_t> &shape = spec.shape;
    int64_t count = elementCount(shape);
    std::vector<double> values(size_t(count), 0.0);
    if (!command.inputs.empty()) {
      auto it = provided.find(spec.name);
      if (it == provided.end()) {
        error = command.inputs + " has no entry '" + spec.name +
                "' for global input " + spec.name + " " + shapeText(shape);
        return false;
      }
      const NpyArray &array = it->second;
      if (array.shape != shape) {
        error = command.inputs + ": entry '" + spec.name + "' has shape " +
                shapeText(array.shape) + " but the global input under --mesh " +
                meshText(bound) + " is " + shapeText(shape) + " " +
                dtypeName(spec.dtype);
        return false;
      }
      if (!isFloatDType(spec.dtype) && array.kind == 'f') {
        error = command.inputs + ": entry '" + spec.name +
                "' holds floats but the input is " + dtypeName(spec.dtype) +
                "; pass integers";
        return false;
      }
      if (spec.dtype == DType::I64 && array.kind != 'f') {
        std::vector<uint8_t> bytes(size_t(count) * 8);
        for (int64_t i = 0; i < count; ++i) {
          int64_t value = array.getInt64(i);
          std::memcpy(bytes.data() + i * 8, &value, 8);
        }
        inputs.push_back(std::move(bytes));
        continue;
      }
      for (int64_t i = 0; i < count; ++i)
        values[size_t(i)] = array.getDouble(i);
    } else if (command.randomSeed >= 0) {
      std::uniform_real_distribution<double> uniform(-1.0, 1.0);
      std::uniform_int_distribution<int> bits(0, 1);
      for (double &value : values)
        value = isFloatDType(spec.dtype) ? uniform(rng) : bits(rng);
    }
    std::vector<uint8_t> &bytes =
        inputs.emplace_back(values.size() * dtypeSizeInBytes(spec.dtype));
    encodeValues(spec.dtype, values.data(), values.size(), bytes.data());
  }
  return true;
}

bool writeOutputs(const std::string &path,
                  const std::vector<GlobalValue> &specs,
                  const std::vector<std::vector<uint8_t>> &outputs,
                  std::string &error) {
  std::vector<std::pair<std::string, NpyArray>> arrays;
  for (size_t index = 0; index < specs.size(); ++index) {
    const GlobalValue &spec = specs[index];
    const std::vector<uint8_t> &bytes = outputs[index];
    const std::vector<int64_t> &shape = spec.shape;
    NpyArray array;
    if (spec.dtype == DType::I64) {
      std::vector<int64_t> ints(bytes.size() / 8);
      std::memcpy(ints.data(), bytes.data(), ints.size() * 8);
      array = NpyArray::fromInt64s(shape, ints, 'i', 8);
    } else {
      std::vector<double> values(bytes.size() / dtypeSizeInBytes(spec.dtype));
      decodeValues(spec.dtype, bytes.data(), values.size(), values.data());
      if (spec.dtype == DType::I32 || spec.dtype == DType::I1) {
        std::vector<int64_t> ints(values.begin(), values.end());
        array = NpyArray::fromInt64s(shape, ints,
                                     spec.dtype == DType::I1 ? 'b' : 'i',
                                     spec.dtype == DType::I1 ? 1 : 4);
      } else {
        array = NpyArray::fromDoubles(shape, values, 4);
      }
    }
    arrays.emplace_back(spec.name, std::move(array));
  }
  return writeNpz(path, arrays, error);
}

/// Global values as the reference evaluator takes them: the values the
/// ranks saw or made (in their dtypes), i64 exact.
std::vector<NamedTensor>
namedTensors(const std::vector<GlobalValue> &specs,
             const std::vector<std::vector<uint8_t>> &bytes) {
  std::vector<NamedTensor> tensors;
  for (size_t index = 0; index < specs.size(); ++index) {
    const GlobalValue &spec = specs[index];
    NamedTensor tensor{spec.name, spec.dtype, spec.shape, {}, {}};
    const std::vector<uint8_t> &data = bytes[index];
    if (spec.dtype == DType::I64) {
      tensor.ints.resize(data.size() / 8);
      std::memcpy(tensor.ints.data(), data.data(), tensor.ints.size() * 8);
    } else {
      tensor.values.resize(data.size() / dtypeSizeInBytes(spec.dtype));
      decodeValues(spec.dtype, data.data(), tensor.values.size(),
                   tensor.values.data());
    }
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

/// --check-against under --mesh: the ranks' outputs assembled into global
/// tensors against the reference evaluator's on the global inputs. False
/// with `error` when the comparison cannot be made; `matched` says whether
/// every output matched.
bool checkGlobalOutputs(const MeshCommand &command, const Program &program,
                        const ArtifactInfo &info,
                        const std::vector<MeshAxis> &bound,
                        const std::vector<std::vector<uint8_t>> &inputs,
                        const std::vector<RankRun> &runs, bool &matched,
                        std::string &error) {
  matched = true;
  if (command.checkAgainst.empty())
    return true;
  std::vector<std::vector<uint8_t>> outputs;
  assembleOutputs(program, bound, runs, outputs);
  std::vector<OutputComparison> comparisons;
  if (!checkAgainstGraph(
          command.checkAgainst,
          namedTensors(globalValues(program, bound, HbmTensor::Kind::Input),
                       inputs),
          namedTensors(globalValues(program, bound, HbmTensor::Kind::Output),
                       outputs),
          checkOptionsFor(info.report, command.rtol), comparisons, error)) {
    error += " (under --mesh, --check-against takes the step's "
             "unpartitioned graph, whose inputs and outputs are the global "
             "ones; not a dist.spmd program)";
    return false;
  }
  // With --json, stdout holds the report alone.
  matched = printComparisons(command.checkAgainst, comparisons,
                             command.json ? stderr : stdout);
  return true;
}

/// The figures of one rank that the report shows.
struct RankFigures {
  double deviceTimeNs = 0, communicationNs = 0, waitNs = 0;
  double collectives = 0, collectiveBytes = 0;
};

RankFigures figuresOf(const SimulationStats &stats) {
  return {stats.deviceTimeNs, stats.communicationNs, stats.collectiveWaitNs,
          double(stats.collectives), double(stats.collectiveBytes)};
}

void printReport(const MeshCommand &command, const Program &program,
                 const std::vector<MeshAxis> &bound, const char *where,
                 const SimulationStats &rank0,
                 const std::vector<RankFigures> &ranks) {
  double slowest = 0;
  for (const RankFigures &rank : ranks)
    slowest = std::max(slowest, rank.deviceTimeNs);
  if (command.json) {
    nlohmann::json out = {
        {"artifact", command.artifact},
        {"target", program.target},
        {"mesh", meshText(bound)},
        {"ranks_run", where},
        {"device_time_ns", slowest},
        {"instructions", rank0.instructions},
        {"mfu", rank0.mfu},
        {"matmul_flops", rank0.matmulFlops},
        {"tensor_engine_utilisation", rank0.tensorEngineUtilisation},
        {"hbm_to_sbuf_bytes", rank0.hbmToSbufBytes},
        {"sbuf_to_hbm_bytes", rank0.sbufToHbmBytes},
        {"time_by_kind_ns", timeByKindJson(rank0)}};
    out["ranks"] = nlohmann::json::array();
    for (size_t r = 0; r < ranks.size(); ++r)
      out["ranks"].push_back(
          {{"rank", r},
           {"device_time_ns", ranks[r].deviceTimeNs},
           {"communication_ns", ranks[r].communicationNs},
           {"collective_wait_ns", ranks[r].waitNs},
           {"collectives", uint64_t(ranks[r].collectives)},
           {"collective_bytes", uint64_t(ranks[r].collectiveBytes)}});
    if (command.profileSummary)
      out["profile_summary"] =
          profileSummaryJson(rank0, command.profileTop, program.origins);
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (command.profileSummary) {
    std::printf("rank 0 of %d:\n", rankCount(bound));
    std::fputs(formatProfileSummary(rank0, program.target,
                                    size_t(command.profileTop), program.origins)
                   .c_str(),
               stdout);
  }
  std::printf("mesh             %s (%d ranks, %s)\n", meshText(bound).c_str(),
              rankCount(bound), where);
  std::printf("device time      %.3f us (slowest rank)\n", slowest / 1000.0);
  if (std::string kinds = formatTimeByKind(rank0); !kinds.empty())
    std::printf("rank 0 %s", kinds.c_str());
  std::printf("rank  device time (us)  communication (us)  waiting (us)  "
              "collectives\n");
  for (size_t r = 0; r < ranks.size(); ++r)
    std::printf("%-4zu  %16.3f  %18.3f  %12.3f  %11.0f\n", r,
                ranks[r].deviceTimeNs / 1000.0,
                ranks[r].communicationNs / 1000.0, ranks[r].waitNs / 1000.0,
                ranks[r].collectives);
}

/// The ranks' outputs assembled into global tensors, written to
/// --outputs when asked for.
bool writeGlobalOutputs(const MeshCommand &command, const Program &program,
                        const std::vector<MeshAxis> &bound,
                        const std::vector<RankRun> &runs, std::string &error) {
  if (command.outputs.empty())
    return true;
  std::vector<std::vector<uint8_t>> outputs;
  assembleOutputs(program, bound, runs, outputs);
  return writeOutputs(command.outputs,
                      globalValues(program, bound, HbmTensor::Kind::Output),
                      outputs, error);
}

} // namespace

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

int runMeshCommand(const MeshCommand &command, const Program &program,
                   const ArtifactInfo &info) {
  std::string error;
  const Target *target = lookupTarget(program.target);
  if (!target)
    return fail(command.artifact + ": unknown target '" + program.target + "'");
  std::vector<MeshAxis> requested, bound;
  if (!parseMeshSpec(command.mesh, requested, error))
    return fail("--mesh: " + error);
  if (!bindMesh(program, requested, bound, error))
    return fail(command.artifact + ": " + error);
  int world = rankCount(bound);

  MeshRunOptions options;
  options.simulator.poisonMemory = command.poison;
  options.simulator.recordInstructions =
      command.profileSummary || !command.profile.empty();
  options.simulator.threads = 1; // ranks already run side by side
  options.simulator.timingOnly = command.timingOnly || command.mirrorRanks;
  options.collectiveTimeoutSeconds = command.collectiveTimeoutSeconds;
  options.iterations = command.iterations;
  options.failRank = testRank("TRNRT_TEST_FAIL_RANK");
  options.stallRank = testRank("TRNRT_TEST_STALL_RANK");

  std::vector<std::vector<uint8_t>> inputs;
  int launchedRank = 0, launchedSize = 1;
  const bool launched = launchedAsRank(launchedRank, launchedSize);
  if (command.mirrorRanks) {
    if (launched)
      return fail("--mirror-ranks simulates one rank in one process; start "
                  "trn-run without mpirun or srun");
    // Rank 0 stands for all: the ranks of an SPMD program run the same
    // instructions at the same times.
    MirrorCommunicator mirror(
        0, world, [](int rank) { return rank == 0 ? 0 : -1; }, nullptr);
    RankRun run;
    if (!runRank(*target, program, bound, {}, mirror, options, run, error))
      return fail(error);
    if (!command.profile.empty() &&
        !writeProfile(command.profile, run.stats, program, error))
      return fail(error);
    printReport(command, program, bound,
                "rank 0 simulated, the others mirrored", run.stats,
                {figuresOf(run.stats)});
    return 0;
  }
  if (launched) {
    // One rank per process: every process reads the same global inputs and
    // keeps its shard; rank 0 assembles and reports.
    if (launchedSize != world)
      return fail("the launcher started " + std::to_string(launchedSize) +
                  " processes but --mesh " + meshText(bound) + " has " +
                  std::to_string(world) + " ranks; start " +
                  std::to_string(world));
    std::unique_ptr<MpiJob> job =
        MpiJob::start(command.collectiveTimeoutSeconds, error);
    if (!job)
      return fail(error);
    if (job->size() != launchedSize || job->rank() != launchedRank)
      job->abortJob("the launcher started task " +
                        std::to_string(launchedRank) + " of " +
                        std::to_string(launchedSize) + " but MPI sees rank " +
                        std::to_string(job->rank()) + " of " +
                        std::to_string(job->size()) +
                        "; start trn-run with mpirun, or srun --mpi=pmix",
                    1);
    if (!options.simulator.timingOnly &&
        !globalInputs(command,
                      globalValues(program, bound, HbmTensor::Kind::Input),
                      bound, inputs, error))
      job->abortJob("rank " + std::to_string(job->rank()) + ": " + error, 1);
    RankRun run;
    if (!runRank(*target, program, bound, inputs, job->communicator(), options,
                 run, error))
      job->abortJob(error, 1); // runRank's abort has stopped the job already
    // Outputs and figures to rank 0: [figures][output 0][output 1]...
    RankFigures figures = figuresOf(run.stats);
    std::vector<uint8_t> message(sizeof(RankFigures));
    std::memcpy(message.data(), &figures, sizeof(RankFigures));
    for (const std::vector<uint8_t> &output : run.outputs)
      message.insert(message.end(), output.begin(), output.end());
    std::vector<std::vector<uint8_t>> all;
    if (!job->gatherToRoot(message, all, error))
      job->abortJob("rank 0: " + error, 1);
    if (job->rank() != 0)
      return 0;
    if (!command.profile.empty() &&
        !writeProfile(command.profile, run.stats, program, error))
      job->abortJob("rank 0: " + error, 1);
    std::vector<RankRun> runs(static_cast<size_t>(world));
    std::vector<RankFigures> ranks(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      const std::vector<uint8_t> &bytes = all[size_t(r)];
      std::memcpy(&ranks[size_t(r)], bytes.data(), sizeof(RankFigures));
      size_t offset = sizeof(RankFigures);
      for (const std::vector<uint8_t> &output : run.outputs) {
        runs[size_t(r)].outputs.emplace_back(bytes.begin() + long(offset),
                                             bytes.begin() +
                                                 long(offset + output.size()));
        offset += output.size();
      }
    }
    if (!writeGlobalOutputs(command, program, bound, runs, error))
      job->abortJob("rank 0: " + error, 1);
    bool matched = true;
    if (!checkGlobalOutputs(command, program, info, bound, inputs, runs,
                            matched, error))
      job->abortJob("rank 0: " + error, 1);
    printReport(command, program, bound, "one per MPI process", run.stats,
                ranks);
    return matched ? 0 : 1;
  }

  if (!options.simulator.timingOnly &&
      !globalInputs(command,
                    globalValues(program, bound, HbmTensor::Kind::Input), bound,
                    inputs, error))
    return fail(error);
  std::vector<RankRun> runs;
  if (!runMeshInProcess(*target, program, bound, inputs, options, runs, error))
    return fail(error);
  if (!writeGlobalOutputs(command, program, bound, runs, error))
    return fail(error);
  if (!command.profile.empty() &&
      !writeProfile(command.profile, runs.front().stats, program, error))
    return fail(error);
  bool matched = true;
  if (!checkGlobalOutputs(command, program, info, bound, inputs, runs, matched,
                          error))
    return fail(error);
  std::vector<RankFigures> ranks;
  for (const RankRun &run : runs)
    ranks.push_back(figuresOf(run.stats));
  printReport(command, program, bound, "threads of one process",
              runs.front().stats, ranks);
  return matched ? 0 : 1;
}

/// The pipeline's timeline as Chrome-trace JSON: a process per rank, its
/// fragments as complete events on one track (the gaps are its bubbles).
static bool writePipelineProfile(const std::string &path,
                                 const BoundPipeline &pipeline,
                                 const std::vector<PipelineRankRun> &runs,
                                 std::string &error) {
  static const char *const kPhases[] = {"forward", "backward", "update"};
  nlohmann::json events = nlohmann::json::array();
  // A process per rank run (a mirrored run: per simulated rank).
  for (const PipelineRankRun &run : runs) {
    const int rank = run.rank;
    std::vector<int64_t> coords = rankCoordinates(pipeline.bound, rank);
    std::string name = "rank " + std::to_string(rank) + " (";
    for (size_t a = 0; a < coords.size(); ++a)
      name += (a ? ", " : "") + pipeline.bound[a].name + " " +
              std::to_string(coords[a]);
    name += ")";
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", rank},
                      {"args", {{"name", name}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", rank},
                      {"args", {{"sort_index", rank}}}});
    for (const PipelineSpan &span : run.spans) {
      std::string label = kPhases[span.phase];
      if (span.phase != 2)
        label += " " + std::to_string(span.microbatch);
      events.push_back({{"name", label},
                        {"ph", "X"},
                        {"pid", rank},
                        {"tid", 0},
                        {"ts", span.startNs / 1000.0},
                        {"dur", (span.endNs - span.startNs) / 1000.0},
                        {"args",
                         {{"microbatch", span.microbatch},
                          {"waiting_us", span.waitNs / 1000.0}}}});
    }
  }
  return writeTraceEvents(path, events, error);
}

/// Calls `visit(stage, phase, microbatch, stats, program)` for each stage's
/// profiled fragments (--profile-summary: each phase's last simulated run),
/// from the first rank of that stage that kept them.
template <typename Visit>
static void forEachProfiledFragment(const BoundPipeline &pipeline,
                                    const std::vector<PipelineRankRun> &runs,
                                    Visit visit) {
  std::set<int64_t> seen;
  for (const PipelineRankRun &run : runs) {
    const int64_t stage =
        rankCoordinates(pipeline.bound, run.rank)[pipeline.axis];
    if (!run.profiled[0] || !seen.insert(stage).second)
      continue;
    for (int phase = 0; phase < 3; ++phase)
      if (run.profiled[size_t(phase)])
        visit(stage, phase, run.profiledMicrobatch[size_t(phase)],
              *run.profiled[size_t(phase)],
              *pipeline.fragments[size_t(stage)][size_t(phase)]);
  }
}

static const char *const kFragmentNames[] = {"forward", "backward", "update"};

int runPipelineCommand(const MeshCommand &command,
                       const std::vector<StageArtifact> &stages) {
  std::string error;
  const Program &first = stages.front().fragments.front();
  const Target *target = lookupTarget(first.target);
  if (!target)
    return fail(command.artifact + ": unknown target '" + first.target + "'");
  std::vector<MeshAxis> requested;
  if (!parseMeshSpec(command.mesh, requested, error))
    return fail("--mesh: " + error);
  BoundPipeline pipeline;
  if (!bindPipeline(stages, requested, pipeline, error))
    return fail(error);
  int world = rankCount(pipeline.bound);
  // The step's arguments and results in index order (absent indices: the
  // step has an argument no stage reads; it is given zeros).
  std::vector<GlobalValue> arguments, results;
  for (size_t i = 0; i < pipeline.arguments.size(); ++i) {
    const PipelineValue &value = pipeline.arguments[i];
    arguments.push_back({value.present ? value.name : "arg" + std::to_string(i),
                         value.dtype, value.shape});
  }
  for (size_t i = 0; i < pipeline.results.size(); ++i) {
    const PipelineValue &value = pipeline.results[i];
    results.push_back(
        {value.present ? value.name : "result" + std::to_string(i), value.dtype,
         value.shape});
  }
  MeshRunOptions options;
  options.simulator.threads = 1;
  options.simulator.timingOnly = command.timingOnly || command.mirrorRanks;
  options.collectiveTimeoutSeconds = command.collectiveTimeoutSeconds;
  options.failRank = testRank("TRNRT_TEST_FAIL_RANK");
  options.stallRank = testRank("TRNRT_TEST_STALL_RANK");
  options.reuseTimelines = command.reuseTimelines;
  options.simulator.recordInstructions = command.profileSummary;
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<PipelineRankRun> runs;
  const char *where = "threads of one process";
  int launchedRank = 0, launchedSize = 1;
  std::unique_ptr<MpiJob> job;
  const bool launched = launchedAsRank(launchedRank, launchedSize);
  if (command.mirrorRanks) {
    if (launched)
      return fail("--mirror-ranks simulates one rank per stage in one "
                  "process; start trn-run without mpirun or srun");
    if (!runPipelineMirrored(*target, pipeline, options, runs, error))
      return fail(error);
    where = "one simulated per stage, the others mirrored";
  } else if (launched) {
    if (launchedSize != world)
      return fail("the launcher started " + std::to_string(launchedSize) +
                  " processes but --mesh " + meshText(pipeline.bound) +
                  " has " + std::to_string(world) + " ranks; start " +
                  std::to_string(world));
    job = MpiJob::start(command.collectiveTimeoutSeconds, error);
    if (!job)
      return fail(error);
    if (!options.simulator.timingOnly &&
        !globalInputs(command, arguments, pipeline.bound, inputs, error))
      job->abortJob("rank " + std::to_string(job->rank()) + ": " + error, 1);
    PipelineRankRun run;
    if (!runPipelineRank(*target, pipeline, inputs, job->communicator(),
                         options, run, error))
      job->abortJob(error, 1);
    // Every rank's figures, spans and results to rank 0, which reports.
    std::vector<std::vector<uint8_t>> all;
    if (!job->gatherToRoot(encodePipelineRankRun(run), all, error))
      job->abortJob("rank 0: " + error, 1);
    if (job->rank() != 0)
      return 0;
    runs.clear();
    runs.resize(size_t(world));
    for (int r = 0; r < world; ++r)
      if (!decodePipelineRankRun(all[size_t(r)], runs[size_t(r)], error))
        job->abortJob("rank 0: rank " + std::to_string(r) + ": " + error, 1);
    // Profiles stay with the process that ran them: rank 0's own.
    runs.front().profiled = std::move(run.profiled);
    runs.front().profiledMicrobatch = run.profiledMicrobatch;
    where = "one per MPI process";
  } else {
    if (!options.simulator.timingOnly &&
        !globalInputs(command, arguments, pipeline.bound, inputs, error))
      return fail(error);
    if (!runPipelineInProcess(*target, pipeline, inputs, options, runs, error))
      return fail(error);
  }
  if (!command.profile.empty() &&
      !writePipelineProfile(command.profile, pipeline, runs, error)) {
    if (job)
      job->abortJob("rank 0: " + error, 1);
    return fail(error);
  }
  std::vector<std::vector<uint8_t>> outputs;
  if (!options.simulator.timingOnly)
    assemblePipelineResults(pipeline, runs, outputs);
  if (!command.outputs.empty() &&
      !writeOutputs(command.outputs, results, outputs, error)) {
    if (job)
      job->abortJob("rank 0: " + error, 1);
    return fail(error);
  }
  // The step ends with its slowest rank; the bubble is the share of the
  // ranks' time they did not compute.
  // Mirrored ranks are copies of the simulated ones: the shares are the
  // same over the simulated ranks as over the whole mesh.
  double step = 0, compute = 0, flops = 0;
  uint64_t fragments = 0, replayed = 0;
  for (const PipelineRankRun &run : runs) {
    step = std::max(step, run.stepNs);
    compute += run.computeNs;
    flops += double(run.matmulFlops);
    fragments += run.fragmentsRun;
    replayed += run.fragmentsReplayed;
  }
  // A rank that never waits computes its whole clock: the sum of its
  // fragments' times may exceed it by rounding (-1e-12), not a bubble.
  const double bubble =
      step > 0 ? std::max(0.0, 1.0 - compute / (step * double(runs.size())))
               : 0.0;
  // FLOP/ns = TFLOP/s * 1e3.
  const double mfu = step > 0 ? flops / (step * double(runs.size()) *
                                         target->peakBf16Tflops() * 1e3)
                              : 0.0;
  if (command.json) {
    nlohmann::json out = {
        {"artifact", command.artifact},
        {"mesh", meshText(pipeline.bound)},
        {"ranks_run", where},
        {"stages", pipeline.fragments.size()},
        {"microbatches", pipeline.microbatches},
        {"schedule", pipelineScheduleName(pipeline.schedule)},
        {"ranks_simulated", runs.size()},
        {"timing_only", options.simulator.timingOnly},
        {"step_time_ns", step},
        {"idle_fraction", bubble},
        {"matmul_flops_per_rank", flops / double(runs.size())},
        {"mfu", mfu},
        {"fragment_runs", fragments},
        {"fragment_runs_replayed", replayed}};
    out["ranks"] = nlohmann::json::array();
    // Each rank's step split by what runs (the fragments' time by kind)
    // and idle inside fragments; the shares of the ranks' summed time.
    nlohmann::json shares = nlohmann::json::object();
    double total = 0;
    for (const PipelineRankRun &run : runs)
      total += run.stepNs;
    for (size_t kind = 0; kind < kNumInstructionKinds; ++kind) {
      double ns = 0;
      for (const PipelineRankRun &run : runs)
        ns += run.kindNs[kind];
      shares[instructionKindName(InstructionKind(kind))] =
          total > 0 ? ns / total : 0.0;
    }
    double idle = 0;
    for (const PipelineRankRun &run : runs)
      idle += run.idleNs;
    shares["idle"] = total > 0 ? idle / total : 0.0;
    out["time_by_kind"] = shares;
    for (const PipelineRankRun &run : runs) {
      nlohmann::json kinds = nlohmann::json::object();
      for (size_t kind = 0; kind < kNumInstructionKinds; ++kind)
        kinds[instructionKindName(InstructionKind(kind))] = run.kindNs[kind];
      out["ranks"].push_back({{"rank", run.rank},
                              {"step_time_ns", run.stepNs},
                              {"compute_ns", run.computeNs},
                              {"matmul_flops", run.matmulFlops},
                              {"time_by_kind_ns", kinds},
                              {"idle_ns", run.idleNs}});
    }
    if (command.profileSummary) {
      out["profile_summary"] = nlohmann::json::array();
      forEachProfiledFragment(
          pipeline, runs,
          [&](int64_t stage, int phase, int64_t microbatch,
              const SimulationStats &stats, const Program &program) {
            nlohmann::json summary = profileSummaryJson(
                stats, size_t(command.profileTop), program.origins);
            summary["stage"] = stage;
            summary["fragment"] = kFragmentNames[phase];
            summary["microbatch"] = microbatch;
            summary["device_time_ns"] = stats.deviceTimeNs;
            out["profile_summary"].push_back(std::move(summary));
          });
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  // Each stage's fragments as they last ran simulated (the runs after
  // repeat them), then the step.
  if (command.profileSummary)
    forEachProfiledFragment(
        pipeline, runs,
        [&](int64_t stage, int phase, int64_t microbatch,
            const SimulationStats &stats, const Program &program) {
          std::printf("stage %lld %s (microbatch %lld):\n", (long long)stage,
                      kFragmentNames[phase], (long long)microbatch);
          std::fputs(formatProfileSummary(stats, program.target,
                                          size_t(command.profileTop),
                                          program.origins)
                         .c_str(),
                     stdout);
          std::printf("\n");
        });
  // One stage: microbatches accumulate their gradients in the step.
  std::printf("pipeline         %s: %zu stage%s, %lld microbatches, %s\n",
              pipeline.step.c_str(), pipeline.fragments.size(),
              pipeline.fragments.size() == 1 ? " (gradient accumulation)" : "s",
              (long long)pipeline.microbatches,
              pipelineScheduleName(pipeline.schedule));
  std::printf("mesh             %s (%d ranks, %s)\n",
              meshText(pipeline.bound).c_str(), world, where);
  std::printf("step time        %.3f us (slowest rank)\n", step / 1000.0);
  std::printf("idle             %.1f%% of the ranks' time (pipeline bubbles, "
              "transfers, collectives)\n",
              100.0 * bubble);
  std::printf("MFU              %.1f%% (%.3g TFLOP of matmuls per rank, bf16 "
              "peak %.1f TFLOP/s)\n",
              100.0 * mfu, flops / double(runs.size()) / 1e12,
              target->peakBf16Tflops());
  if (replayed)
    std::printf("fragment runs    %llu, of which %llu repeated a recorded "
                "timeline\n",
                (unsigned long long)fragments, (unsigned long long)replayed);
  return 0;
}

} // namespace trnrt
