//===- MeshRun.cpp - trn-run --mesh: every rank of a partitioned program --===//

#include "MeshRun.h"

#include "ProfileSummary.h"

#include "trnrt/Mesh.h"
#include "trnrt/MpiCommunicator.h"
#include "trnrt/Npy.h"
#include "trnrt/Target.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>

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

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

/// Reads TRNRT_TEST_FAIL_RANK / TRNRT_TEST_STALL_RANK (tests only).
int testRank(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return -1;
  return std::atoi(value);
}

/// The global inputs, as bytes of each Input tensor's dtype, in program
/// order: from an .npz (by name, global shapes), random, or zeros.
bool globalInputs(const MeshCommand &command, const Program &program,
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
  for (const HbmTensor &tensor : program.tensors) {
    if (tensor.kind != HbmTensor::Kind::Input)
      continue;
    std::vector<int64_t> shape = globalShape(tensor, bound);
    int64_t count = elementCount(shape);
    std::vector<double> values(size_t(count), 0.0);
    if (!command.inputs.empty()) {
      auto it = provided.find(tensor.name);
      if (it == provided.end()) {
        error = command.inputs + " has no entry '" + tensor.name +
                "' for global input " + tensor.name + " " + shapeText(shape);
        return false;
      }
      const NpyArray &array = it->second;
      if (array.shape != shape) {
        error = command.inputs + ": entry '" + tensor.name + "' has shape " +
                shapeText(array.shape) + " but the global input under --mesh " +
                meshText(bound) + " is " + shapeText(shape) + " " +
                dtypeName(tensor.dtype);
        return false;
      }
      if (!isFloatDType(tensor.dtype) && array.kind == 'f') {
        error = command.inputs + ": entry '" + tensor.name +
                "' holds floats but the input is " + dtypeName(tensor.dtype) +
                "; pass integers";
        return false;
      }
      if (tensor.dtype == DType::I64 && array.kind != 'f') {
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
        value = isFloatDType(tensor.dtype) ? uniform(rng) : bits(rng);
    }
    inputs.push_back(
        encodeTensorValues(tensor.dtype, values.data(), values.size()));
  }
  return true;
}

bool writeOutputs(const std::string &path, const Program &program,
                  const std::vector<MeshAxis> &bound,
                  const std::vector<std::vector<uint8_t>> &outputs,
                  std::string &error) {
  std::vector<std::pair<std::string, NpyArray>> arrays;
  size_t index = 0;
  for (const HbmTensor &tensor : program.tensors) {
    if (tensor.kind != HbmTensor::Kind::Output)
      continue;
    const std::vector<uint8_t> &bytes = outputs[index++];
    std::vector<int64_t> shape = globalShape(tensor, bound);
    NpyArray array;
    if (tensor.dtype == DType::I64) {
      std::vector<int64_t> ints(bytes.size() / 8);
      std::memcpy(ints.data(), bytes.data(), ints.size() * 8);
      array = NpyArray::fromInt64s(shape, ints, 'i', 8);
    } else {
      std::vector<double> values =
          decodeTensorValues(tensor.dtype, bytes.data(), bytes.size());
      if (tensor.dtype == DType::I32 || tensor.dtype == DType::I1) {
        std::vector<int64_t> ints(values.begin(), values.end());
        array = NpyArray::fromInt64s(shape, ints,
                                     tensor.dtype == DType::I1 ? 'b' : 'i',
                                     tensor.dtype == DType::I1 ? 1 : 4);
      } else {
        array = NpyArray::fromDoubles(shape, values, 4);
      }
    }
    arrays.emplace_back(tensor.name, std::move(array));
  }
  return writeNpz(path, arrays, error);
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
    nlohmann::json out = {{"artifact", command.artifact},
                          {"target", program.target},
                          {"mesh", meshText(bound)},
                          {"ranks_run", where},
                          {"device_time_ns", slowest},
                          {"instructions", rank0.instructions},
                          {"mfu", rank0.mfu},
                          {"matmul_flops", rank0.matmulFlops}};
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
      out["profile_summary"] = profileSummaryJson(rank0, command.profileTop);
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (command.profileSummary) {
    std::printf("rank 0 of %zu:\n", ranks.size());
    std::fputs(
        formatProfileSummary(rank0, program.target, size_t(command.profileTop))
            .c_str(),
        stdout);
  }
  std::printf("mesh             %s (%zu ranks, %s)\n", meshText(bound).c_str(),
              ranks.size(), where);
  std::printf("device time      %.3f us (slowest rank)\n", slowest / 1000.0);
  std::printf("rank  device time (us)  communication (us)  waiting (us)  "
              "collectives\n");
  for (size_t r = 0; r < ranks.size(); ++r)
    std::printf("%-4zu  %16.3f  %18.3f  %12.3f  %11.0f\n", r,
                ranks[r].deviceTimeNs / 1000.0,
                ranks[r].communicationNs / 1000.0, ranks[r].waitNs / 1000.0,
                ranks[r].collectives);
}

} // namespace

int runMeshCommand(const MeshCommand &command, const Program &program,
                   const ArtifactInfo &info) {
  (void)info;
  std::string error;
  const Target *target = lookupTarget(program.target);
  if (!target)
    return fail(command.artifact + ": unknown target '" + program.target + "'");
  std::vector<MeshAxis> requested, bound;
  if (!parseMeshSpec(command.mesh, requested, error))
    return fail("--mesh: " + error);
  if (!bindMesh(program, requested, bound, error))
    return fail(command.artifact + ": " + error);
  int world = 1;
  for (const MeshAxis &axis : bound)
    world *= int(axis.size);

  MeshRunOptions options;
  options.simulator.poisonMemory = command.poison;
  options.simulator.recordInstructions = command.profileSummary;
  options.simulator.threads = 1; // ranks already run side by side
  options.collectiveTimeoutSeconds = command.collectiveTimeoutSeconds;
  options.iterations = command.iterations;
  options.failRank = testRank("TRNRT_TEST_FAIL_RANK");
  options.stallRank = testRank("TRNRT_TEST_STALL_RANK");

  std::vector<std::vector<uint8_t>> inputs;
  int launchedRank = 0, launchedSize = 1;
  if (launchedAsRank(launchedRank, launchedSize)) {
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
    if (!globalInputs(command, program, bound, inputs, error))
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
    std::vector<std::vector<uint8_t>> outputs;
    assembleOutputs(program, bound, runs, outputs);
    if (!command.outputs.empty() &&
        !writeOutputs(command.outputs, program, bound, outputs, error))
      job->abortJob("rank 0: " + error, 1);
    printReport(command, program, bound, "one per MPI process", run.stats,
                ranks);
    return 0;
  }

  if (!globalInputs(command, program, bound, inputs, error))
    return fail(error);
  std::vector<RankRun> runs;
  if (!runMeshInProcess(*target, program, bound, inputs, options, runs, error))
    return fail(error);
  std::vector<std::vector<uint8_t>> outputs;
  assembleOutputs(program, bound, runs, outputs);
  if (!command.outputs.empty() &&
      !writeOutputs(command.outputs, program, bound, outputs, error))
    return fail(error);
  std::vector<RankFigures> ranks;
  for (const RankRun &run : runs)
    ranks.push_back(figuresOf(run.stats));
  printReport(command, program, bound, "threads of one process",
              runs.front().stats, ranks);
  return 0;
}

} // namespace trnrt
