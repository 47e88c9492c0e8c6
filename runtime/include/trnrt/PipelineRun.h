//===- PipelineRun.h - running a pipelined step on every rank ----*- C++
//-*-===//
//
// A pipelined step is one stage artifact per stage (trnrt/StageArtifact.h).
// Each rank runs its stage's forward and backward fragments once per
// microbatch in the schedule's order (trnrt/PipelineSchedule.h), then its
// update, binding every fragment input and output by its port: the step's
// arguments (split by their shardings, a per-example one also into
// microbatches), stashes kept between a microbatch's forward and backward,
// accumulators kept across microbatches, the step's results. Transfers
// between stages and the collectives inside a stage go through the rank's
// Communicator (threads of one process, or Open MPI processes). One clock
// per rank runs through its fragments, so the step time includes the
// pipeline's bubbles (docs/simulator.md, "Pipelines"). No MLIR or LLVM; no
// exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_PIPELINERUN_H
#define TRNRT_PIPELINERUN_H

#include "trnrt/Mesh.h"
#include "trnrt/PipelineSchedule.h"
#include "trnrt/StageArtifact.h"

#include <array>
#include <map>
#include <memory>

namespace trnrt {

/// The name's suffix of a fragment input that holds every microbatch of a
/// per-example argument (dist-pipeline-split: a sum over the whole batch a
/// microbatch needs), beside the input of its microbatch.
constexpr const char kEveryMicrobatchSuffix[] = ".every_microbatch";

/// A step argument or result as callers see it.
struct PipelineValue {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape; ///< global
  bool present = false;
};

/// A pipelined step bound to a job's mesh.
struct BoundPipeline {
  /// By stage: its forward, backward and update fragments.
  std::vector<std::array<const Program *, 3>> fragments;
  std::vector<MeshAxis> bound;
  uint32_t axis = 0; ///< the pipeline axis in `bound`
  int64_t microbatches = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  std::string step;
  std::vector<PipelineValue> arguments, results;
};

/// Checks that `stages` are every stage of one pipelined step, once each,
/// and binds their mesh to `requested` as bindMesh does (dp, a replica
/// axis, may take any size). `stages` must outlive `pipeline`.
bool bindPipeline(const std::vector<StageArtifact> &stages,
                  const std::vector<MeshAxis> &requested,
                  BoundPipeline &pipeline, std::string &error);

/// One fragment run on a rank's clock.
struct PipelineSpan {
  int phase = 0; ///< 0 forward, 1 backward, 2 update
  int64_t microbatch = 0;
  double startNs = 0, endNs = 0;
  /// Of which waiting: for transfers from other stages and for collectives'
  /// other members.
  double waitNs = 0;
};

/// One rank's run of the step.
struct PipelineRankRun {
  int rank = 0; ///< its world rank
  /// Its fragments in the order they ran (the gaps between the ranks'
  /// spans are the pipeline's bubbles).
  std::vector<PipelineSpan> spans;
  std::map<int64_t, std::vector<uint8_t>> results; ///< local, by index
  double stepNs = 0;    ///< this rank's clock at the end of its update
  double computeNs = 0; ///< its fragments' time outside transfers and waits
  uint64_t fragmentsRun = 0;
  /// Of which timing-only runs that repeated a recorded timeline
  /// (MeshRunOptions::reuseTimelines).
  uint64_t fragmentsReplayed = 0;
  /// 2*M*N*K of its fragments' matmuls (SimulationStats::matmulFlops).
  uint64_t matmulFlops = 0;
  /// Its fragments' time split by what runs (SimulationStats::kindNs; the
  /// collective kind holds transfers and their waits), and the time none
  /// runs: together its step time.
  std::array<double, kNumInstructionKinds> kindNs{};
  double idleNs = 0;
  /// With options.simulator.recordInstructions: the statistics of each
  /// phase's last simulated run (forward, backward, update), for profile
  /// summaries: in a 1F1B steady state, not the warm-up's waits;
  /// `profiledMicrobatch` says which microbatch ran. Kept on the rank that
  /// ran them (not encoded for other processes).
  std::array<std::shared_ptr<const SimulationStats>, 3> profiled;
  std::array<int64_t, 3> profiledMicrobatch{};
};

/// Runs rank `communicator.rank()` (global inputs by argument index). With
/// options.simulator.timingOnly nothing is bound or read back: no inputs
/// are needed and no results kept.
bool runPipelineRank(const Target &target, const BoundPipeline &pipeline,
                     const std::vector<std::vector<uint8_t>> &globalInputs,
                     Communicator &communicator, const MeshRunOptions &options,
                     PipelineRankRun &run, std::string &error);

/// A rank's run as bytes, to send to another process (the MPI ranks of one
/// job: same build, same byte order): its figures, spans and results.
std::vector<uint8_t> encodePipelineRankRun(const PipelineRankRun &run);
/// The run encodePipelineRankRun wrote; false with a one-line `error` for
/// bytes that are not one (truncated, or a different format).
bool decodePipelineRankRun(const std::vector<uint8_t> &bytes,
                           PipelineRankRun &run, std::string &error);
/// Every rank on its own thread; `error` names the first rank that failed.
bool runPipelineInProcess(const Target &target, const BoundPipeline &pipeline,
                          const std::vector<std::vector<uint8_t>> &globalInputs,
                          const MeshRunOptions &options,
                          std::vector<PipelineRankRun> &runs,
                          std::string &error);

/// One rank per stage (the first of its tensor- and data-parallel ranks),
/// timing only, the other ranks mirrored (trnrt::MirrorCommunicator): the
/// step time, bubbles and FLOPs of the whole mesh at the cost of `stages`
/// simulated cores. `runs` gets one entry per stage.
bool runPipelineMirrored(const Target &target, const BoundPipeline &pipeline,
                         const MeshRunOptions &options,
                         std::vector<PipelineRankRun> &runs,
                         std::string &error);
/// The global results (by index) from every rank's run: each from the
/// ranks of the first stage that returns it.
void assemblePipelineResults(const BoundPipeline &pipeline,
                             const std::vector<PipelineRankRun> &runs,
                             std::vector<std::vector<uint8_t>> &globalResults);

} // namespace trnrt

#endif // TRNRT_PIPELINERUN_H
