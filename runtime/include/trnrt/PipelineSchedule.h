//===- PipelineSchedule.h - microbatch schedules of a pipeline ---*- C++
//-*-===//
//
// The order in which each stage of a pipeline runs the forward and backward
// fragments of its microbatches, as data (the way NxD's scheduler and
// Shardy MPMD's schedule pass keep it): GPipe (every forward, then every
// backward) and 1F1B (PipeDream-Flush, Megatron's default: stage s runs
// min(stages - s - 1, microbatches) forwards ahead, then alternates one
// forward and one backward, then drains the backwards). Both the compiler
// (dist-pipeline-split checks that the stages' transfers fit the schedule)
// and the runtime (which runs it) read it here. No MLIR or LLVM; no
// exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_PIPELINESCHEDULE_H
#define TRNRT_PIPELINESCHEDULE_H

#include <cstdint>
#include <string>
#include <vector>

namespace trnrt {

enum class PipelineSchedule { GPipe, OneFOneB };

/// "gpipe" or "1f1b"; false for anything else.
bool parsePipelineSchedule(const std::string &name, PipelineSchedule &kind);
const char *pipelineScheduleName(PipelineSchedule kind);

/// One step of a stage's order: the forward or backward fragment of a
/// microbatch.
struct PipelineAction {
  bool backward = false;
  int64_t microbatch = 0;
  bool operator==(const PipelineAction &other) const {
    return backward == other.backward && microbatch == other.microbatch;
  }
};

/// The order of stage `stage` (0 <= stage < stages) for `microbatches`
/// microbatches: every forward and every backward exactly once, a
/// microbatch's forward before its backward.
std::vector<PipelineAction> pipelineStageOrder(PipelineSchedule kind,
                                               int64_t stages, int64_t stage,
                                               int64_t microbatches);

/// The most microbatches whose forward has run and backward not yet at any
/// point of `order`: how many sets of stashed activations the stage holds.
int64_t peakMicrobatchesInFlight(const std::vector<PipelineAction> &order);

/// Start and end of every action when each stage runs its order and a
/// forward of microbatch m on stage s > 0 waits for stage s - 1's forward of
/// m, a backward on s < stages - 1 for stage s + 1's backward of m (the
/// transfers' dependencies; transfers take no time here).
struct PipelineTimeline {
  /// Per stage, per action of its order.
  std::vector<std::vector<double>> start, end;
  double makespan = 0;
  /// Idle share of the stages' time up to the makespan: (stages x makespan
  /// - busy) / (stages x makespan).
  double bubbleFraction = 0;
};

/// Runs the orders with the forward and backward cost of each stage (one
/// entry per stage). False with a one-line `error` if the orders deadlock
/// (an action waits for one that can never run), which the two schedules
/// here never do.
bool simulatePipeline(PipelineSchedule kind, int64_t microbatches,
                      const std::vector<double> &forwardCost,
                      const std::vector<double> &backwardCost,
                      PipelineTimeline &timeline, std::string &error);

} // namespace trnrt

#endif // TRNRT_PIPELINESCHEDULE_H
