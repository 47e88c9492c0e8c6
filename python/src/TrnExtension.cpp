//===- TrnExtension.cpp - the trn._trn Python extension ---------------===//
//
// The thin native layer under the `trn` package: the compile driver (one
// graph through the compile cache, lib/Driver/CompileGraph.h) and the
// runtime's C API (load an artifact on a simulated NeuronCore, move tensors
// in and out as raw bytes, run). Everything else, tracing and translation
// included, is Python. The GIL is released while compiling and running.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Key.h"
#include "trn/Driver/CompileFlags.h"
#include "trn/Driver/CompileGraph.h"
#include "trn/Driver/Diagnostics.h"
#include "trn/Driver/Pipeline.h"
#include "trn/Partition/Fit.h"
#include "trnrt/Artifact.h"
#include "trnrt/Mesh.h"
#include "trnrt/MpiCommunicator.h"
#include "trnrt/Numerics.h"
#include "trnrt/PipelineRun.h"
#include "trnrt/StageArtifact.h"
#include "trnrt/trnrt.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

const char *dtypeName(trnrt_dtype dtype) {
  switch (dtype) {
  case TRNRT_F32:
    return "f32";
  case TRNRT_BF16:
    return "bf16";
  case TRNRT_F16:
    return "f16";
  case TRNRT_F8E4M3FN:
    return "f8E4M3FN";
  case TRNRT_F8E5M2:
    return "f8E5M2";
  case TRNRT_I1:
    return "i1";
  case TRNRT_I32:
    return "i32";
  case TRNRT_I64:
    return "i64";
  }
  return "unknown";
}

/// A runtime failure, raised in Python as trn._trn.DeviceError.
struct DeviceFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(trnrt_status status) {
  if (status != TRNRT_OK)
    throw DeviceFailure(trnrt_last_error());
}

/// One artifact loaded on its own simulated NeuronCore.
class Program {
public:
  explicit Program(const py::bytes &artifact) {
    std::string bytes = artifact;
    check(trnrt_init(nullptr, &runtime));
    trnrt_status status;
    {
      py::gil_scoped_release release;
      status = trnrt_load_memory(runtime, bytes.data(), bytes.size(), &model);
    }
    if (status != TRNRT_OK) {
      std::string message = trnrt_last_error();
      trnrt_close(runtime);
      runtime = nullptr;
      throw DeviceFailure(message);
    }
  }
  ~Program() {
    if (model)
      trnrt_unload(model);
    if (runtime)
      trnrt_close(runtime);
  }
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  py::list describe(bool inputs) const {
    py::list list;
    size_t count =
        inputs ? trnrt_input_count(model) : trnrt_output_count(model);
    for (size_t i = 0; i < count; ++i) {
      trnrt_tensor_info info;
      check(inputs ? trnrt_input_info(model, i, &info)
                   : trnrt_output_info(model, i, &info));
      std::vector<int64_t> shape(info.shape, info.shape + info.rank);
      list.append(py::make_tuple(info.name, dtypeName(info.dtype),
                                 py::tuple(py::cast(shape))));
    }
    return list;
  }

  void write(const std::string &name, const py::buffer &data) {
    py::buffer_info info = data.request();
    size_t size = static_cast<size_t>(info.size * info.itemsize);
    check(trnrt_write_tensor_bytes(model, name.c_str(), info.ptr, size));
  }

  py::bytes read(const std::string &name, size_t size) const {
    std::string bytes(size, '\0');
    check(trnrt_read_tensor_bytes(model, name.c_str(), bytes.data(), size));
    return py::bytes(bytes);
  }

  py::dict run() {
    trnrt_status status;
    {
      py::gil_scoped_release release;
      status = trnrt_execute(model);
    }
    check(status);
    trnrt_stats stats;
    trnrt_stats_default(&stats);
    check(trnrt_get_stats(model, &stats));
    py::dict result;
    result["device_time_ns"] = stats.device_time_ns;
    result["tensor_engine_utilisation"] = stats.tensor_engine_utilisation;
    result["mfu"] = stats.mfu;
    result["engine_busy_percent"] = py::make_tuple(
        stats.engine_busy_percent[0], stats.engine_busy_percent[1],
        stats.engine_busy_percent[2], stats.engine_busy_percent[3]);
    result["instructions"] = stats.instructions;
    result["matmul_flops"] = stats.matmul_flops;
    result["dma_count"] = stats.dma_count;
    result["hbm_to_sbuf_bytes"] = stats.hbm_to_sbuf_bytes;
    result["sbuf_to_hbm_bytes"] = stats.sbuf_to_hbm_bytes;
    result["spill_bytes"] = stats.spill_bytes;
    return result;
  }

private:
  trnrt_runtime *runtime = nullptr;
  trnrt_model *model = nullptr;
};

/// This process's Open MPI job when it is one of several tasks of mpirun or
/// srun (started once, on the first mesh program).
trnrt::MpiJob *mpiJob(int &rank, int &size) {
  static std::unique_ptr<trnrt::MpiJob> job;
  static bool launched = trnrt::launchedAsRank(rank, size);
  if (!launched)
    return nullptr;
  if (!job) {
    std::string error;
    job = trnrt::MpiJob::start(/*timeoutSeconds=*/60.0, error);
    if (!job)
      throw DeviceFailure("starting Open MPI for this rank: " + error);
  }
  rank = job->rank();
  size = job->size();
  return job.get();
}

/// Appends `bytes` to `out` with its size first, and reads it back.
void putBlock(std::vector<uint8_t> &out, const std::vector<uint8_t> &bytes) {
  uint64_t size = bytes.size();
  const auto *sizeBytes = reinterpret_cast<const uint8_t *>(&size);
  out.insert(out.end(), sizeBytes, sizeBytes + sizeof(size));
  out.insert(out.end(), bytes.begin(), bytes.end());
}
bool takeBlock(const std::vector<uint8_t> &in, size_t &at,
               std::vector<uint8_t> &bytes) {
  uint64_t size = 0;
  if (at + sizeof(size) > in.size())
    return false;
  std::memcpy(&size, in.data() + at, sizeof(size));
  at += sizeof(size);
  if (at + size > in.size())
    return false;
  bytes.assign(in.begin() + long(at), in.begin() + long(at + size));
  at += size;
  return true;
}

/// Every process's `message` (in rank order), whatever their lengths: the
/// lengths first, then every message padded to the longest. `runCount`
/// numbers these exchanges past the programs' own collectives.
bool gatherFromEveryRank(trnrt::Communicator &communicator, uint64_t &runCount,
                         std::vector<uint8_t> message, const std::string &what,
                         std::vector<std::vector<uint8_t>> &theirs,
                         std::string &error) {
  trnrt::CollectiveCall call;
  call.opcode = trnrt::Opcode::AllGather;
  for (int r = 0; r < communicator.size(); ++r)
    call.group.push_back(r);
  call.position = communicator.rank();
  call.description = what + " (sizes)";
  call.sequence = (uint64_t(1) << 40) + runCount++;
  uint64_t length = message.size();
  std::vector<double> starts;
  const auto *lengthBytes = reinterpret_cast<const uint8_t *>(&length);
  if (!communicator.exchange(
          call, std::vector<uint8_t>(lengthBytes, lengthBytes + sizeof(length)),
          0.0, theirs, starts, error))
    return false;
  std::vector<uint64_t> lengths(theirs.size());
  uint64_t longest = 0;
  for (size_t r = 0; r < theirs.size(); ++r) {
    std::memcpy(&lengths[r], theirs[r].data(), sizeof(uint64_t));
    longest = std::max(longest, lengths[r]);
  }
  message.resize(longest, 0);
  call.description = what;
  call.sequence = (uint64_t(1) << 40) + runCount++;
  if (!communicator.exchange(call, message, 0.0, theirs, starts, error))
    return false;
  for (size_t r = 0; r < theirs.size(); ++r)
    theirs[r].resize(lengths[r]);
  return true;
}

/// What a mesh program and a pipelined step share: the step's global
/// tensors by name as Python sees them, the target, and this process's MPI
/// job when it is one rank of several processes.
class GlobalTensors {
public:
  int processes() const { return job ? job->size() : 1; }

protected:
  /// Joins this process's MPI job, if any: it must have one process per
  /// rank of `mesh`.
  void joinJob(const std::string &mesh, int ranks) {
    int rank = 0, size = 1;
    job = mpiJob(rank, size);
    if (job && size != ranks)
      throw DeviceFailure("this job has " + std::to_string(size) +
                          " processes but mesh '" + mesh + "' has " +
                          std::to_string(ranks) + " ranks; launch " +
                          std::to_string(ranks) + " (mpirun -np " +
                          std::to_string(ranks) + ")");
  }

  /// Copies `data` into input `name`'s slot, which it must fill exactly.
  void fill(std::vector<uint8_t> &slot, const std::string &name,
            const py::buffer &data) {
    py::buffer_info info = data.request();
    size_t size = static_cast<size_t>(info.size * info.itemsize);
    if (size != slot.size())
      throw DeviceFailure("input '" + name + "' takes " +
                          std::to_string(slot.size()) +
                          " bytes (its global shape under the mesh), got " +
                          std::to_string(size));
    std::memcpy(slot.data(), info.ptr, size);
  }

  /// `bytes` (tensor `name`, which the caller found) as Python bytes of
  /// the `size` the caller expects.
  static py::bytes copyOut(const std::vector<uint8_t> &bytes,
                           const std::string &name, size_t size) {
    if (bytes.size() != size)
      throw DeviceFailure("tensor '" + name + "' holds " +
                          std::to_string(bytes.size()) + " bytes, not " +
                          std::to_string(size));
    return py::bytes(reinterpret_cast<const char *>(bytes.data()),
                     bytes.size());
  }

  const trnrt::Target *target = nullptr;
  std::map<std::string, size_t> inputIndex, outputIndex;
  std::vector<std::vector<uint8_t>> inputs, outputs;
  /// This process's job when it is one rank of several processes.
  trnrt::MpiJob *job = nullptr;
  uint64_t runCount = 0;
};

/// A partitioned artifact run on one simulated NeuronCore per rank of a
/// mesh, all in this process (trnrt::runMeshInProcess), or, when this
/// process is one task of `mpirun -np N` / `srun -n N` with N the mesh's
/// ranks, this process's rank only, collectives over Open MPI. Tensors go in
/// and out global, by name, as for Program: the runtime splits inputs by their
/// shardings and assembles outputs. Values stay here between runs, as on a
/// device: an output that updates an input in place becomes that input.
class MeshProgram : public GlobalTensors {
public:
  MeshProgram(const py::bytes &artifact, const std::string &mesh) {
    std::string bytes = artifact;
    trnrt::ArtifactInfo info;
    std::string error;
    if (!trnrt::readArtifact(reinterpret_cast<const uint8_t *>(bytes.data()),
                             bytes.size(), program, info, error))
      throw DeviceFailure(error);
    target = trnrt::lookupTarget(program.target);
    if (!target)
      throw DeviceFailure("the artifact's target '" + program.target +
                          "' is unknown to this runtime");
    std::vector<trnrt::MeshAxis> requested;
    if (!trnrt::parseMeshSpec(mesh, requested, error) ||
        !trnrt::bindMesh(program, requested, bound, error))
      throw DeviceFailure("mesh '" + mesh + "': " + error);
    joinJob(mesh, ranks());
    for (size_t t = 0; t < program.tensors.size(); ++t) {
      const trnrt::HbmTensor &tensor = program.tensors[t];
      if (tensor.kind == trnrt::HbmTensor::Kind::Input) {
        inputSlotOfTensor[t] = inputs.size();
        inputIndex[tensor.name] = inputs.size();
        inputs.emplace_back(globalBytes(tensor), 0);
      } else if (tensor.kind == trnrt::HbmTensor::Kind::Output) {
        outputIndex[tensor.name] = outputs.size();
        outputs.emplace_back();
        outputTensors.push_back(&tensor);
      }
    }
  }

  int ranks() const { return trnrt::rankCount(bound); }

  void write(const std::string &name, const py::buffer &data) {
    auto it = inputIndex.find(name);
    if (it == inputIndex.end())
      throw DeviceFailure("the program has no input '" + name + "'");
    fill(inputs[it->second], name, data);
  }

  /// An input's current value, or an output's after the last run.
  py::bytes read(const std::string &name, size_t size) const {
    const std::vector<uint8_t> *bytes = nullptr;
    if (auto it = inputIndex.find(name); it != inputIndex.end())
      bytes = &inputs[it->second];
    else if (auto out = outputIndex.find(name); out != outputIndex.end())
      bytes = &outputs[out->second];
    if (!bytes)
      throw DeviceFailure("the program has no tensor '" + name + "'");
    return copyOut(*bytes, name, size);
  }

  py::dict run() {
    std::vector<trnrt::RankRun> runs;
    std::string error;
    bool ok;
    {
      py::gil_scoped_release release;
      trnrt::MeshRunOptions options;
      options.simulator.threads = 1; // the ranks already run side by side
      ok = job ? runThisRank(options, runs, error)
               : trnrt::runMeshInProcess(*target, program, bound, inputs,
                                         options, runs, error);
      if (ok)
        trnrt::assembleOutputs(program, bound, runs, outputs);
    }
    if (!ok)
      throw DeviceFailure(error);
    // In-place updates: the new value is the input of the next run.
    for (size_t i = 0; i < outputTensors.size(); ++i) {
      auto slot = inputSlotOfTensor.find(outputTensors[i]->aliasesInput);
      if (slot != inputSlotOfTensor.end() &&
          inputs[slot->second].size() == outputs[i].size())
        inputs[slot->second] = outputs[i];
    }
    // The step takes as long as its slowest rank.
    py::dict result;
    double deviceNs = 0, mfu = 0;
    uint64_t flops = 0;
    for (const trnrt::RankRun &run : runs) {
      deviceNs = std::max(deviceNs, run.stats.deviceTimeNs);
      mfu += run.stats.mfu;
      flops += run.stats.matmulFlops;
    }
    result["device_time_ns"] = deviceNs;
    result["mfu"] = runs.empty() ? 0.0 : mfu / double(runs.size());
    result["matmul_flops"] = flops;
    result["ranks"] = runs.size();
    return result;
  }

private:
  /// This process's rank, then every rank's outputs and device time
  /// exchanged over the job, so that each process holds the whole state
  /// (as the in-process run does) for the next step and for reads.
  bool runThisRank(const trnrt::MeshRunOptions &options,
                   std::vector<trnrt::RankRun> &runs, std::string &error) {
    trnrt::RankRun mine;
    trnrt::Communicator &communicator = job->communicator();
    if (!trnrt::runRank(*target, program, bound, inputs, communicator, options,
                        mine, error))
      return false;
    std::vector<uint8_t> message;
    std::vector<uint8_t> time(sizeof(double));
    std::memcpy(time.data(), &mine.stats.deviceTimeNs, sizeof(double));
    putBlock(message, time);
    for (const std::vector<uint8_t> &output : mine.outputs)
      putBlock(message, output);
    std::vector<std::vector<uint8_t>> theirs;
    if (!gatherFromEveryRank(communicator, runCount, std::move(message),
                             "the step's outputs", theirs, error))
      return false;
    runs.assign(theirs.size(), {});
    for (size_t r = 0; r < theirs.size(); ++r) {
      size_t at = 0;
      std::vector<uint8_t> block;
      if (!takeBlock(theirs[r], at, block) || block.size() != sizeof(double)) {
        error = "rank " + std::to_string(r) + " sent malformed outputs";
        return false;
      }
      std::memcpy(&runs[r].stats.deviceTimeNs, block.data(), sizeof(double));
      while (at < theirs[r].size()) {
        if (!takeBlock(theirs[r], at, block)) {
          error = "rank " + std::to_string(r) + " sent malformed outputs";
          return false;
        }
        runs[r].outputs.push_back(std::move(block));
      }
    }
    runs[size_t(communicator.rank())].stats = mine.stats;
    return true;
  }

  size_t globalBytes(const trnrt::HbmTensor &tensor) const {
    int64_t count = 1;
    for (int64_t dim : trnrt::globalShape(tensor, bound))
      count *= dim;
    return size_t(count) * trnrt::dtypeSizeInBytes(tensor.dtype);
  }

  trnrt::Program program;
  std::vector<trnrt::MeshAxis> bound;
  std::vector<const trnrt::HbmTensor *> outputTensors;
  /// Program tensor index of each input -> its slot in `inputs` (outputs
  /// name the input they update by tensor index).
  std::map<int64_t, size_t> inputSlotOfTensor;
};

/// A pipelined step: one stage artifact per stage, run on every rank of a
/// dp x pp x tp mesh (trnrt/PipelineRun.h), in this process or, under
/// mpirun/srun with as many processes as ranks, this process's rank with
/// the results exchanged so that every process holds the whole state.
/// Tensors go in and out global and by name, as for MeshProgram; a result
/// named like an argument (an updated parameter or state) becomes that
/// argument for the next run. A name no stage reads is accepted and unused
/// (a seed without dropout).
class PipelineProgram : public GlobalTensors {
public:
  PipelineProgram(const std::vector<py::bytes> &artifacts,
                  const std::string &mesh) {
    std::string error;
    for (const py::bytes &artifact : artifacts) {
      std::string bytes = artifact;
      stages.emplace_back();
      if (!trnrt::readStageArtifact(
              reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(),
              stages.back(), error))
        throw DeviceFailure(error);
    }
    std::vector<trnrt::MeshAxis> requested;
    if (!trnrt::parseMeshSpec(mesh, requested, error) ||
        !trnrt::bindPipeline(stages, requested, pipeline, error))
      throw DeviceFailure("mesh '" + mesh + "': " + error);
    target = trnrt::lookupTarget(stages.front().fragments.front().target);
    if (!target)
      throw DeviceFailure("the artifact's target is unknown to this runtime");
    joinJob(mesh, ranks());
    for (size_t i = 0; i < pipeline.arguments.size(); ++i) {
      const trnrt::PipelineValue &value = pipeline.arguments[i];
      inputs.emplace_back(value.present ? bytesOf(value) : 0, 0);
      if (value.present)
        inputIndex[value.name] = i;
    }
    outputs.assign(pipeline.results.size(), {});
    for (size_t i = 0; i < pipeline.results.size(); ++i)
      if (pipeline.results[i].present)
        outputIndex[pipeline.results[i].name] = i;
  }

  int ranks() const { return trnrt::rankCount(pipeline.bound); }

  void write(const std::string &name, const py::buffer &data) {
    auto it = inputIndex.find(name);
    if (it == inputIndex.end())
      return; // no stage reads it
    fill(inputs[it->second], name, data);
  }

  py::bytes read(const std::string &name, size_t size) const {
    const std::vector<uint8_t> *bytes = nullptr;
    if (auto out = outputIndex.find(name);
        out != outputIndex.end() && !outputs[out->second].empty())
      bytes = &outputs[out->second];
    else if (auto it = inputIndex.find(name); it != inputIndex.end())
      bytes = &inputs[it->second];
    if (!bytes)
      throw DeviceFailure("the pipelined step has no tensor '" + name + "'");
    return copyOut(*bytes, name, size);
  }

  py::dict run() {
    std::vector<trnrt::PipelineRankRun> runs;
    std::string error;
    bool ok;
    {
      py::gil_scoped_release release;
      trnrt::MeshRunOptions options;
      options.simulator.threads = 1;
      ok = job ? runThisRank(options, runs, error)
               : trnrt::runPipelineInProcess(*target, pipeline, inputs, options,
                                             runs, error);
      if (ok)
        trnrt::assemblePipelineResults(pipeline, runs, outputs);
    }
    if (!ok)
      throw DeviceFailure(error);
    // Updated parameters and states are the next run's inputs.
    for (const auto &[name, index] : outputIndex) {
      auto in = inputIndex.find(name);
      if (in != inputIndex.end() &&
          inputs[in->second].size() == outputs[index].size())
        inputs[in->second] = outputs[index];
    }
    double step = 0, compute = 0;
    for (const trnrt::PipelineRankRun &run : runs) {
      step = std::max(step, run.stepNs);
      compute += run.computeNs;
    }
    py::dict result;
    result["device_time_ns"] = step;
    result["idle_fraction"] =
        step > 0 ? 1.0 - compute / (step * double(runs.size())) : 0.0;
    result["ranks"] = runs.size();
    result["stages"] = pipeline.fragments.size();
    result["microbatches"] = pipeline.microbatches;
    return result;
  }

private:
  size_t bytesOf(const trnrt::PipelineValue &value) const {
    int64_t count = 1;
    for (int64_t dim : value.shape)
      count *= dim;
    return size_t(count) * trnrt::dtypeSizeInBytes(value.dtype);
  }

  /// This process's rank, then every rank's results exchanged over the job.
  bool runThisRank(const trnrt::MeshRunOptions &options,
                   std::vector<trnrt::PipelineRankRun> &runs,
                   std::string &error) {
    trnrt::PipelineRankRun mine;
    trnrt::Communicator &communicator = job->communicator();
    if (!trnrt::runPipelineRank(*target, pipeline, inputs, communicator,
                                options, mine, error))
      return false;
    // Ranks of different stages return different results.
    std::vector<std::vector<uint8_t>> theirs;
    if (!gatherFromEveryRank(communicator, runCount,
                             trnrt::encodePipelineRankRun(mine),
                             "the step's results", theirs, error))
      return false;
    runs.assign(theirs.size(), {});
    for (size_t r = 0; r < theirs.size(); ++r)
      if (!trnrt::decodePipelineRankRun(theirs[r], runs[r], error)) {
        error = "rank " + std::to_string(r) + ": " + error;
        return false;
      }
    return true;
  }

  std::vector<trnrt::StageArtifact> stages;
  trnrt::BoundPipeline pipeline;
};

/// One rank's HBM for `graph` partitioned as `flags` (--mesh ...) say:
/// partitions only (milliseconds), for the extraction manifest's per-rank
/// estimate. ValueError naming the problem when the mesh does not
/// partition the graph.
py::dict meshFootprint(const std::string &graph,
                       const std::vector<std::string> &flags) {
  std::string error;
  auto normalized = mlir::trn::normalizeFlags(flags, error);
  if (!normalized)
    throw py::value_error(error);
  mlir::trn::CompileOptions options =
      mlir::trn::compileOptionsFromFlags(*normalized);
  options.dp = mlir::trn::dpDegreeOf(flags);
  mlir::trn::MeshFootprint measuredMesh;
  std::vector<mlir::trn::partition::RankFootprint> &stages =
      measuredMesh.stages;
  {
    py::gil_scoped_release release;
    mlir::MLIRContext context;
    mlir::trn::configureCompilerContext(context);
    mlir::trn::DiagnosticCollector diagnostics(&context);
    auto module = mlir::parseSourceString<mlir::ModuleOp>(graph, &context);
    if (!module) {
      error = "cannot parse the step graph: " + diagnostics.firstError();
    } else {
      auto measured = mlir::trn::measureMeshFootprint(*module, options);
      if (mlir::failed(measured))
        error = diagnostics.firstError().empty() ? "partitioning failed"
                                                 : diagnostics.firstError();
      else if (*measured)
        measuredMesh = std::move(**measured);
      else // no mesh: the one device's
        for (auto function : module->getOps<mlir::func::FuncOp>()) {
          stages.push_back(mlir::trn::partition::rankFootprint(function));
          break;
        }
    }
  }
  if (!error.empty())
    throw py::value_error(error);
  if (stages.empty())
    throw py::value_error("the step graph has no function");
  // A pipeline: the stage that needs the most (every rank must fit).
  const size_t worst = measuredMesh.worstStage();
  const mlir::trn::partition::RankFootprint &footprint = stages[worst];
  auto kinds = [](const mlir::trn::partition::RankFootprint &f) {
    py::dict out;
    out["parameters"] = f.parameters;
    out["optimizer_states"] = f.optimizerStates;
    out["gradients"] = f.gradients;
    out["inputs"] = f.inputs;
    out["peak_intermediates"] = f.peakIntermediates;
    out["stash"] = f.stash;
    out["total"] = f.total();
    return out;
  };
  py::dict out = kinds(footprint);
  py::list perStage;
  for (const mlir::trn::partition::RankFootprint &stage : stages)
    perStage.append(kinds(stage));
  out["stages"] = perStage;
  out["worst_stage"] = worst;
  return out;
}

py::dict compile(const std::string &graph,
                 const std::vector<std::string> &flags,
                 const std::string &cacheDir, bool useCache, bool retryFailed,
                 const std::string &sourceName) {
  mlir::trn::GraphCompileRequest request;
  request.graphText = graph;
  request.sourceName = sourceName;
  request.codegenArgs = flags;
  request.cacheDir = cacheDir;
  request.useCache = useCache;
  request.retryFailed = retryFailed;
  std::vector<std::string> notes;
  request.warn = [&notes](const std::string &message) {
    notes.push_back(message);
  };
  mlir::trn::GraphCompileResult result;
  {
    py::gil_scoped_release release;
    result = mlir::trn::compileGraph(request);
  }
  if (result.failure == mlir::trn::GraphCompileFailure::CachedFailure)
    result.error += " (a cached failure; retry_failed=True recompiles)";
  notes.insert(notes.end(), result.warnings.begin(), result.warnings.end());
  py::dict out;
  out["ok"] = result.ok;
  out["error"] = result.error;
  out["warnings"] = notes;
  out["artifact"] =
      py::bytes(reinterpret_cast<const char *>(result.artifact.data()),
                result.artifact.size());
  out["key"] = result.key;
  out["graph_name"] = result.graphName;
  out["normalized_flags"] = result.normalizedFlags;
  out["cache_status"] = result.cacheStatus;
  out["miss_reason"] = result.missReason;
  out["entry_path"] = result.entryPath;
  out["compile_seconds"] = result.compileSeconds;
  return out;
}

} // namespace

PYBIND11_MODULE(_trn, m) {
  m.doc() = "trn's native layer: the compile driver and the simulated "
            "NeuronCore runtime";
  static py::exception<DeviceFailure> deviceError(m, "DeviceError");
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer)
        std::rethrow_exception(pointer);
    } catch (const DeviceFailure &failure) {
      PyErr_SetString(deviceError.ptr(), failure.what());
    }
  });

  m.def("compiler_version", &mlir::trn::cache::compilerVersion);
  m.def("compile", &compile, py::arg("graph"), py::arg("flags"),
        py::arg("cache_dir") = "", py::arg("use_cache") = true,
        py::arg("retry_failed") = false, py::arg("source_name") = "<python>",
        "Compiles a trn graph (MLIR text) through the compile cache; returns "
        "a dict with ok, error, artifact, key, cache_status, ...");
  m.def("mesh_footprint", &meshFootprint, py::arg("graph"), py::arg("flags"),
        "One rank's HBM (bytes by kind) of the graph partitioned for the "
        "mesh in `flags` (a pipeline: of the stage that needs the most; "
        "'stages' gives every stage's, by kind); ValueError when the mesh "
        "does not partition it.");
  m.def(
      "graph_key",
      [](const std::string &graph, const std::vector<std::string> &flags) {
        std::string key, error;
        bool ok;
        {
          py::gil_scoped_release release;
          ok = mlir::trn::graphCacheKey(graph, flags, key, error);
        }
        if (!ok)
          throw py::value_error(error);
        return key;
      },
      py::arg("graph"), py::arg("flags"),
      "The cache key MODULE_<graph>+<flags> of a graph, without compiling.");
  m.def(
      "normalize_flags",
      [](const std::vector<std::string> &flags) {
        std::string error;
        auto normalized = mlir::trn::normalizeFlags(flags, error);
        if (!normalized)
          throw py::value_error(error);
        return normalized->canonical();
      },
      py::arg("flags"),
      "The codegen flags as the cache key sees them; ValueError for a bad "
      "flag.");

  py::class_<Program>(m, "Program")
      .def(py::init<const py::bytes &>(), py::arg("artifact"))
      .def_property_readonly("inputs",
                             [](const Program &p) { return p.describe(true); })
      .def_property_readonly("outputs",
                             [](const Program &p) { return p.describe(false); })
      .def("write", &Program::write, py::arg("name"), py::arg("data"))
      .def("read", &Program::read, py::arg("name"), py::arg("size"))
      .def("run", &Program::run);

  py::class_<MeshProgram>(m, "MeshProgram")
      .def(py::init<const py::bytes &, const std::string &>(),
           py::arg("artifact"), py::arg("mesh"))
      .def_property_readonly("ranks", &MeshProgram::ranks)
      .def_property_readonly("processes", &MeshProgram::processes)
      .def("write", &MeshProgram::write, py::arg("name"), py::arg("data"))
      .def("read", &MeshProgram::read, py::arg("name"), py::arg("size"))
      .def("run", &MeshProgram::run);
  py::class_<PipelineProgram>(m, "PipelineProgram")
      .def(py::init<const std::vector<py::bytes> &, const std::string &>(),
           py::arg("artifacts"), py::arg("mesh"))
      .def_property_readonly("ranks", &PipelineProgram::ranks)
      .def_property_readonly("processes", &PipelineProgram::processes)
      .def("write", &PipelineProgram::write, py::arg("name"), py::arg("data"))
      .def("read", &PipelineProgram::read, py::arg("name"), py::arg("size"))
      .def("run", &PipelineProgram::run);
}
