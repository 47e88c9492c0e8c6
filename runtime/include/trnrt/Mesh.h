//===- Mesh.h - running a partitioned program on every rank ------*- C++
//-*-===//
//
// The multi-rank layer over the simulator: bind a partitioned program's mesh
// to the sizes of a job (`--mesh dp=2,tp=2`), split global inputs into each
// rank's local tensors by the argument shardings, run every rank (threads of
// this process, or one rank per Open MPI process), and assemble the global
// outputs by the result shardings, exactly as the reference evaluator does
// (docs/partitioning.md). No MLIR or LLVM; no exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_MESH_H
#define TRNRT_MESH_H

#include "trnrt/Collectives.h"
#include "trnrt/Isa.h"
#include "trnrt/Simulator.h"
#include "trnrt/Target.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trnrt {

/// Parses "dp=2,tp=4" (axes in order, sizes >= 1, names distinct).
bool parseMeshSpec(const std::string &spec, std::vector<MeshAxis> &axes,
                   std::string &error);

/// Whether the program may run with axis `axis` at another size than it was
/// compiled for: the program is one replica's step along it
/// (MeshAxis::replica, from the partitioner's dist.replica_axes: data
/// parallelism, which the compile cache's key leaves out) and every
/// collective naming it is an all_reduce sum or mean (whose result shape
/// does not depend on the group size).
/// Arguments and results split over dp then take global shapes that grow
/// with its size: one replica's batch per rank.
bool isElasticAxis(const Program &program, size_t axis);

/// Binds the program's mesh to `requested`: the same axes (in any order;
/// an axis of size 1 may be left out on either side), each of the compiled
/// size unless isElasticAxis. `bound` gets the program's axes with the
/// run-time sizes. Errors are one line naming the axis and both sizes.
bool bindMesh(const Program &program, const std::vector<MeshAxis> &requested,
              std::vector<MeshAxis> &bound, std::string &error);

/// How many ranks the bound mesh has (the product of its axes' sizes).
int rankCount(const std::vector<MeshAxis> &bound);

/// Rank `rank`'s index along every axis of `bound` (row-major, the first
/// axis the most major).
std::vector<int64_t> rankCoordinates(const std::vector<MeshAxis> &bound,
                                     int rank);

/// Whether rank `rank`'s piece of `tensor` belongs to the canonical copy
/// assembled into a global result: the ranks at index 0 along every axis that
/// does not split it (the reference evaluator's choice: a replicated value is
/// rank 0's, even where a program made the ranks differ). `exceptAxis` is left
/// to the caller (a pipeline picks the stage that returns the value).
bool holdsCanonicalPiece(const HbmTensor &tensor,
                         const std::vector<MeshAxis> &bound, int rank,
                         std::optional<size_t> exceptAxis = std::nullopt);

/// The global shape of an input or output under the bound mesh.
std::vector<int64_t> globalShape(const HbmTensor &tensor,
                                 const std::vector<MeshAxis> &bound);

/// Copies rank `rank`'s local piece of a global tensor (`toLocal`) or back
/// into it (!toLocal). Replicated tensors are copied whole.
void copyShard(const HbmTensor &tensor, const std::vector<MeshAxis> &bound,
               int rank, uint8_t *global, uint8_t *local, bool toLocal);

struct MeshRunOptions {
  SimulatorOptions simulator;
  double collectiveTimeoutSeconds = 60.0;
  long long iterations = 1;
  /// Test-only failure injection (TRNRT_TEST_FAIL_RANK/_STALL_RANK).
  int failRank = -1, stallRank = -1;
  /// Mirrored (timing-only) pipeline runs: a fragment whose receives arrive
  /// as in its last simulated run reuses that run's timeline (exact; off
  /// only to check that).
  bool reuseTimelines = true;

  /// The collective context of the communicator's rank on the mesh `bound`
  /// (with the failure injection meant for it).
  CollectiveContext rankContext(const std::vector<MeshAxis> &bound,
                                Communicator &communicator) const;
};

/// One rank's part of a run.
struct RankRun {
  SimulationStats stats;
  /// Local output bytes by output index (ArtifactInfo order of the
  /// program's Output tensors).
  std::vector<std::vector<uint8_t>> outputs;
};

/// Runs rank `communicator.rank()` of `program` bound to `bound`: takes its
/// shard of every global input (`globalInputs`: bytes of each Input tensor,
/// in program tensor order of the inputs), runs, and keeps its local
/// outputs. On failure tells the other ranks (communicator.abort) and sets
/// `error`.
bool runRank(const Target &target, const Program &program,
             const std::vector<MeshAxis> &bound,
             const std::vector<std::vector<uint8_t>> &globalInputs,
             Communicator &communicator, const MeshRunOptions &options,
             RankRun &run, std::string &error);

/// Assembles the global outputs (by output index) from every rank's run:
/// each output from the ranks at index 0 along the axes that do not split
/// it, as the reference evaluator does.
void assembleOutputs(const Program &program, const std::vector<MeshAxis> &bound,
                     const std::vector<RankRun> &runs,
                     std::vector<std::vector<uint8_t>> &globalOutputs);

/// Runs `runOne(rank, communicator, error)` for every rank of `bound` on a
/// thread of this process, collectives in shared memory (an InProcessJob
/// with `timeoutSeconds`). On failure `error` names the first rank that
/// failed.
bool runEveryRankInProcess(
    const std::vector<MeshAxis> &bound, double timeoutSeconds,
    const std::function<bool(int, Communicator &, std::string &)> &runOne,
    std::string &error);

/// The same for `ranks` job ranks (0..ranks-1) that need not be a mesh's
/// (a mirrored run's simulated ranks).
bool runRanksInProcess(
    int ranks, double timeoutSeconds,
    const std::function<bool(int, Communicator &, std::string &)> &runOne,
    std::string &error);

/// Every rank in this process, one thread each, collectives in shared
/// memory. On failure `error` names the first rank that failed.
bool runMeshInProcess(const Target &target, const Program &program,
                      const std::vector<MeshAxis> &bound,
                      const std::vector<std::vector<uint8_t>> &globalInputs,
                      const MeshRunOptions &options, std::vector<RankRun> &runs,
                      std::string &error);

} // namespace trnrt

#endif // TRNRT_MESH_H
