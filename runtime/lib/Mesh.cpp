//===- Mesh.cpp - running a partitioned program on every rank -------------===//
//
// Binding a program's mesh to a job's sizes, splitting and assembling global
// tensors by their shardings (the reference evaluator's rules: rank =
// row-major over the mesh axes; a dimension split over axes gives rank
// position p along them chunk p; with blocks, chunk p of every block), and
// running ranks in threads.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Mesh.h"

#include "trnrt/IsaValidate.h"
#include "trnrt/Numerics.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>

namespace trnrt {

bool parseMeshSpec(const std::string &spec, std::vector<MeshAxis> &axes,
                   std::string &error) {
  axes.clear();
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos)
      end = spec.size();
    std::string item = spec.substr(start, end - start);
    size_t equals = item.find('=');
    MeshAxis axis;
    if (equals == std::string::npos || equals == 0) {
      error = "invalid mesh entry '" + item +
              "'; expected axis=size, e.g. --mesh dp=2,tp=4";
      return false;
    }
    axis.name = item.substr(0, equals);
    std::string size = item.substr(equals + 1);
    char *stop = nullptr;
    long long value = std::strtoll(size.c_str(), &stop, 10);
    if (size.empty() || *stop || value < 1 || value > (1 << 20)) {
      error = "invalid size '" + size + "' for mesh axis '" + axis.name +
              "' (a positive integer)";
      return false;
    }
    axis.size = value;
    for (const MeshAxis &other : axes)
      if (other.name == axis.name) {
        error = "mesh axis '" + axis.name + "' given twice";
        return false;
      }
    axes.push_back(axis);
    start = end + 1;
  }
  return true;
}

bool isElasticAxis(const Program &program, size_t axis) {
  // Only an axis the program says it is one replica's step along (the
  // partitioner's dist.replica_axes: data parallelism, whose split arguments
  // are each replica's own batch). A tp split of the same form would
  // silently change the model's global shapes, and a program partitioned
  // for dp = 1 lacks the gradient reductions a larger degree needs.
  if (axis >= program.mesh.size() || !program.mesh[axis].replica)
    return false;
  // The collectives of the program and of the subroutines it calls.
  std::vector<const Program *> bodies = {&program};
  for (const Program &callee : program.subroutines)
    bodies.push_back(&callee);
  for (const Program *body : bodies)
    for (const Instruction &inst : body->engineStreams[size_t(Engine::Sync)]) {
      if (!isCollectiveOpcode(inst.opcode) || !((inst.meshAxes >> axis) & 1))
        continue;
      if (inst.opcode != Opcode::AllReduce || inst.op0 != AluOp::Add)
        return false;
    }
  for (const HbmTensor &tensor : program.tensors)
    if (tensor.kind != HbmTensor::Kind::Input &&
        tensor.kind != HbmTensor::Kind::Output && !tensor.sharding.empty())
      return false;
  return true;
}

bool bindMesh(const Program &program, const std::vector<MeshAxis> &requested,
              std::vector<MeshAxis> &bound, std::string &error) {
  bound = program.mesh;
  auto spelled = [](const MeshAxis &axis) {
    return axis.name + "=" + std::to_string(axis.size);
  };
  for (const MeshAxis &axis : requested) {
    auto it =
        std::find_if(bound.begin(), bound.end(), [&](const MeshAxis &mine) {
          return mine.name == axis.name;
        });
    if (it != bound.end() || axis.size == 1)
      continue;
    std::string known;
    for (const MeshAxis &mine : program.mesh)
      known += (known.empty() ? "" : ",") + spelled(mine);
    error = program.mesh.empty()
                ? "--mesh " + spelled(axis) +
                      ": the artifact is not partitioned (compiled for one "
                      "NeuronCore); run it without --mesh or compile it with "
                      "trn-cc --mesh"
                : "--mesh names axis '" + axis.name +
                      "' but the artifact's mesh is " + known;
    return false;
  }
  for (size_t a = 0; a < bound.size(); ++a) {
    MeshAxis &axis = bound[a];
    int64_t size = 1;
    for (const MeshAxis &given : requested)
      if (given.name == axis.name)
        size = given.size;
    if (size == axis.size)
      continue;
    if (!isElasticAxis(program, a)) {
      error = "mesh axis '" + axis.name + "': the artifact was compiled for " +
              spelled(axis) + " but --mesh gives " + axis.name + "=" +
              std::to_string(size) +
              "; the program depends on it (only a replica axis, such as "
              "the dp of trn-cc --mesh, used solely in all_reduce sum/mean "
              "may differ): recompile with --mesh " +
              axis.name + "=" + std::to_string(size);
      return false;
    }
    axis.size = size;
  }
  std::vector<int64_t> sizes;
  for (const MeshAxis &axis : bound)
    sizes.push_back(axis.size);
  return validateCollectiveShapes(program, sizes, error);
}

namespace {

/// How dimension `d` of a tensor maps for one rank.
struct DimMap {
  int64_t local = 1, global = 1, position = 0, blocks = 1;
  /// Global index of local index l.
  int64_t operator()(int64_t l) const {
    const int64_t blockLocal = local / blocks;
    const int64_t blockGlobal = global / blocks;
    return (l / blockLocal) * blockGlobal + position * blockLocal +
           l % blockLocal;
  }
};

std::vector<DimMap> dimMaps(const HbmTensor &tensor,
                            const std::vector<MeshAxis> &bound, int rank) {
  std::vector<int64_t> coords = rankCoordinates(bound, rank);
  std::vector<DimMap> maps(tensor.shape.size());
  for (size_t d = 0; d < maps.size(); ++d) {
    DimMap &map = maps[d];
    map.local = map.global = tensor.shape[d];
    if (d >= tensor.sharding.size())
      continue;
    const DimSharding &dim = tensor.sharding[d];
    int64_t parts = 1;
    for (uint32_t axis : dim.axes) {
      if (axis >= bound.size())
        continue;
      map.position = map.position * bound[axis].size + coords[axis];
      parts *= bound[axis].size;
    }
    map.global = map.local * parts;
    map.blocks = std::max<int64_t>(1, dim.blocks);
  }
  return maps;
}

uint64_t elementsOf(const std::vector<int64_t> &shape) {
  uint64_t count = 1;
  for (int64_t size : shape)
    count *= uint64_t(size);
  return count;
}

} // namespace

int rankCount(const std::vector<MeshAxis> &bound) {
  int64_t count = 1;
  for (const MeshAxis &axis : bound)
    count *= axis.size;
  return int(count);
}

std::vector<int64_t> rankCoordinates(const std::vector<MeshAxis> &bound,
                                     int rank) {
  std::vector<int64_t> coords(bound.size());
  int64_t rest = rank;
  for (size_t a = bound.size(); a-- > 0;) {
    coords[a] = rest % bound[a].size;
    rest /= bound[a].size;
  }
  return coords;
}

bool holdsCanonicalPiece(const HbmTensor &tensor,
                         const std::vector<MeshAxis> &bound, int rank,
                         std::optional<size_t> exceptAxis) {
  std::vector<bool> splits(bound.size(), false);
  for (const DimSharding &dim : tensor.sharding)
    for (uint32_t axis : dim.axes)
      if (axis < splits.size())
        splits[axis] = true;
  std::vector<int64_t> coords = rankCoordinates(bound, rank);
  for (size_t a = 0; a < bound.size(); ++a)
    if (!splits[a] && a != exceptAxis && coords[a] != 0)
      return false;
  return true;
}

std::vector<int64_t> globalShape(const HbmTensor &tensor,
                                 const std::vector<MeshAxis> &bound) {
  std::vector<int64_t> shape;
  for (const DimMap &map : dimMaps(tensor, bound, 0))
    shape.push_back(map.global);
  return shape;
}

void copyShard(const HbmTensor &tensor, const std::vector<MeshAxis> &bound,
               int rank, uint8_t *global, uint8_t *local, bool toLocal) {
  const size_t elementBytes = dtypeSizeInBytes(tensor.dtype);
  const uint64_t count = elementsOf(tensor.shape);
  if (count == 0)
    return;
  const std::vector<DimMap> maps = dimMaps(tensor, bound, rank);
  if (maps.empty()) {
    if (toLocal)
      std::memcpy(local, global, elementBytes);
    else
      std::memcpy(global, local, elementBytes);
    return;
  }
  const size_t rank0 = maps.size();
  std::vector<int64_t> globalStrides(rank0, 1);
  for (size_t d = rank0 - 1; d-- > 0;)
    globalStrides[d] = globalStrides[d + 1] * maps[d + 1].global;
  const DimMap &last = maps.back();
  const int64_t run = last.local / last.blocks;
  std::vector<int64_t> index(rank0 - 1, 0);
  const uint64_t rows = count / uint64_t(last.local);
  for (uint64_t row = 0; row < rows; ++row) {
    int64_t base = 0;
    for (size_t d = 0; d + 1 < rank0; ++d)
      base += maps[d](index[d]) * globalStrides[d];
    for (int64_t l0 = 0; l0 < last.local; l0 += run) {
      uint8_t *g = global + size_t(base + last(l0)) * elementBytes;
      uint8_t *l =
          local + size_t(int64_t(row) * last.local + l0) * elementBytes;
      if (toLocal)
        std::memcpy(l, g, size_t(run) * elementBytes);
      else
        std::memcpy(g, l, size_t(run) * elementBytes);
    }
    for (size_t d = rank0 - 1; d-- > 0;) {
      if (++index[d] < maps[d].local)
        break;
      index[d] = 0;
    }
  }
}

CollectiveContext
MeshRunOptions::rankContext(const std::vector<MeshAxis> &bound,
                            Communicator &communicator) const {
  CollectiveContext context;
  context.axes = bound;
  context.rank = communicator.rank();
  context.communicator = &communicator;
  context.injectFailure = failRank == context.rank;
  context.injectStall = stallRank == context.rank;
  return context;
}

bool runRank(const Target &target, const Program &program,
             const std::vector<MeshAxis> &bound,
             const std::vector<std::vector<uint8_t>> &globalInputs,
             Communicator &communicator, const MeshRunOptions &options,
             RankRun &run, std::string &error) {
  const int rank = communicator.rank();
  auto failWith = [&](const std::string &message) {
    error = "rank " + std::to_string(rank) + ": " + message;
    communicator.abort(error);
    return false;
  };
  CollectiveContext context = options.rankContext(bound, communicator);
  SimulatorOptions simulatorOptions = options.simulator;
  simulatorOptions.collectives = &context;
  Simulator simulator(target, simulatorOptions);
  std::string problem;
  if (!simulator.load(program, problem))
    return failWith(problem);

  // Timing only: nothing is bound or read back.
  const bool values = !options.simulator.timingOnly;
  size_t input = 0;
  for (const HbmTensor &tensor : program.tensors) {
    if (tensor.kind != HbmTensor::Kind::Input || !values)
      continue;
    if (input >= globalInputs.size())
      return failWith("no value for input '" + tensor.name + "'");
    std::vector<uint8_t> local(elementsOf(tensor.shape) *
                               dtypeSizeInBytes(tensor.dtype));
    const std::vector<uint8_t> &global = globalInputs[input++];
    if (global.size() !=
        elementsOf(globalShape(tensor, bound)) * dtypeSizeInBytes(tensor.dtype))
      return failWith("input '" + tensor.name + "' has " +
                      std::to_string(global.size()) +
                      " bytes, not its global shape's");
    copyShard(tensor, bound, rank, const_cast<uint8_t *>(global.data()),
              local.data(), /*toLocal=*/true);
    if (!simulator.writeTensorBytes(tensor.name, local.data(), local.size(),
                                    problem))
      return failWith(problem);
  }
  for (long long i = 0; i < options.iterations; ++i)
    if (!simulator.run(run.stats, problem))
      return failWith(problem);
  run.outputs.clear();
  for (const HbmTensor &tensor : program.tensors) {
    if (tensor.kind != HbmTensor::Kind::Output || !values)
      continue;
    run.outputs.emplace_back();
    if (!simulator.readTensorBytes(tensor.name, run.outputs.back(), problem))
      return failWith(problem);
  }
  return true;
}

void assembleOutputs(const Program &program, const std::vector<MeshAxis> &bound,
                     const std::vector<RankRun> &runs,
                     std::vector<std::vector<uint8_t>> &globalOutputs) {
  globalOutputs.clear();
  size_t output = 0;
  for (const HbmTensor &tensor : program.tensors) {
    if (tensor.kind != HbmTensor::Kind::Output)
      continue;
    std::vector<uint8_t> global(elementsOf(globalShape(tensor, bound)) *
                                dtypeSizeInBytes(tensor.dtype));
    for (size_t rank = 0; rank < runs.size(); ++rank)
      if (holdsCanonicalPiece(tensor, bound, int(rank)) &&
          output < runs[rank].outputs.size())
        copyShard(tensor, bound, int(rank), global.data(),
                  const_cast<uint8_t *>(runs[rank].outputs[output].data()),
                  /*toLocal=*/false);
    globalOutputs.push_back(std::move(global));
    ++output;
  }
}

bool runEveryRankInProcess(
    const std::vector<MeshAxis> &bound, double timeoutSeconds,
    const std::function<bool(int, Communicator &, std::string &)> &runOne,
    std::string &error) {
  return runRanksInProcess(rankCount(bound), timeoutSeconds, runOne, error);
}

bool runRanksInProcess(
    int ranks, double timeoutSeconds,
    const std::function<bool(int, Communicator &, std::string &)> &runOne,
    std::string &error) {
  InProcessJob job(ranks, timeoutSeconds);
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::vector<char> ok(static_cast<size_t>(ranks), 0);
  auto body = [&](int rank) {
    ok[size_t(rank)] =
        runOne(rank, job.communicator(rank), errors[size_t(rank)]);
  };
  std::vector<std::thread> threads;
  for (int rank = 1; rank < ranks; ++rank)
    threads.emplace_back(body, rank);
  body(0);
  for (std::thread &thread : threads)
    thread.join();
  int failedRank;
  std::string message;
  if (job.failed(failedRank, message)) {
    error = message;
    return false;
  }
  for (int rank = 0; rank < ranks; ++rank)
    if (!ok[size_t(rank)]) {
      error = errors[size_t(rank)];
      return false;
    }
  return true;
}

bool runMeshInProcess(const Target &target, const Program &program,
                      const std::vector<MeshAxis> &bound,
                      const std::vector<std::vector<uint8_t>> &globalInputs,
                      const MeshRunOptions &options, std::vector<RankRun> &runs,
                      std::string &error) {
  int ranks = rankCount(bound);
  runs.assign(size_t(ranks), RankRun());
  return runEveryRankInProcess(
      bound, options.collectiveTimeoutSeconds,
      [&](int rank, Communicator &communicator, std::string &rankError) {
        return runRank(target, program, bound, globalInputs, communicator,
                       options, runs[size_t(rank)], rankError);
      },
      error);
}

} // namespace trnrt
