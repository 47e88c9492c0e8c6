//===- MeshRun.h - trn-run --mesh: every rank of a partitioned program -*- C++
//-*-===//
//
// Runs a partitioned artifact on one simulated NeuronCore per rank: in this
// process (one thread per rank) or, under mpirun/srun, one rank per process
// with collectives over Open MPI. Global inputs are split and global outputs
// assembled by the artifact's shardings (trnrt/Mesh.h).
//
//===----------------------------------------------------------------------===//

#ifndef TRN_TOOLS_TRN_RUN_MESHRUN_H
#define TRN_TOOLS_TRN_RUN_MESHRUN_H

#include "trnrt/Artifact.h"
#include "trnrt/Isa.h"
#include "trnrt/StageArtifact.h"

#include <optional>
#include <string>

namespace trnrt {

struct MeshCommand {
  std::string artifact, mesh, inputs, outputs;
  /// A Chrome-trace / Perfetto timeline: a pipeline's fragments, one process
  /// per rank; a partitioned program's instructions on rank 0.
  std::string profile;
  long long randomSeed = -1;
  bool poison = false, json = false, profileSummary = false;
  /// --timing-only: no values (SimulatorOptions::timingOnly); --mirror-ranks:
  /// one simulated rank per pipeline stage, the others mirrored.
  bool timingOnly = false, mirrorRanks = false;
  /// --no-timeline-reuse: simulate every fragment run of a mirrored
  /// pipeline (MeshRunOptions::reuseTimelines).
  bool reuseTimelines = true;
  long long profileTop = 10;
  long long iterations = 1;
  double collectiveTimeoutSeconds = 60.0;
  /// --check-against GRAPH and --rtol: the global outputs compared with
  /// the reference evaluator's on the global inputs.
  std::string checkAgainst;
  std::optional<double> rtol;
};

/// The number of elements of a tensor of `shape`.
int64_t elementCount(const std::vector<int64_t> &shape);

/// trn-run's exit status for the command.
int runMeshCommand(const MeshCommand &command, const Program &program,
                   const ArtifactInfo &info);

/// Runs a pipelined step (one stage artifact per stage) on every rank of
/// the mesh, in this process or one rank per MPI process.
int runPipelineCommand(const MeshCommand &command,
                       const std::vector<StageArtifact> &stages);

} // namespace trnrt

#endif // TRN_TOOLS_TRN_RUN_MESHRUN_H
