//===- PipelineSchedule.cpp - microbatch schedules of a pipeline ----------===//

#include "trnrt/PipelineSchedule.h"

#include <algorithm>

namespace trnrt {

bool parsePipelineSchedule(const std::string &name, PipelineSchedule &kind) {
  if (name == "gpipe")
    kind = PipelineSchedule::GPipe;
  else if (name == "1f1b")
    kind = PipelineSchedule::OneFOneB;
  else
    return false;
  return true;
}

const char *pipelineScheduleName(PipelineSchedule kind) {
  return kind == PipelineSchedule::GPipe ? "gpipe" : "1f1b";
}

std::vector<PipelineAction> pipelineStageOrder(PipelineSchedule kind,
                                               int64_t stages, int64_t stage,
                                               int64_t microbatches) {
  std::vector<PipelineAction> order;
  auto forward = [&](int64_t m) { order.push_back({false, m}); };
  auto backward = [&](int64_t m) { order.push_back({true, m}); };
  if (kind == PipelineSchedule::GPipe) {
    for (int64_t m = 0; m < microbatches; ++m)
      forward(m);
    for (int64_t m = 0; m < microbatches; ++m)
      backward(m);
    return order;
  }
  // 1F1B: the warm-up fills the stages after this one, so that the last
  // stage's backward of microbatch 0 arrives when this stage is ready.
  int64_t warmup =
      std::min(std::max<int64_t>(stages - stage - 1, 0), microbatches);
  for (int64_t m = 0; m < warmup; ++m)
    forward(m);
  for (int64_t m = 0; m + warmup < microbatches; ++m) {
    forward(m + warmup);
    backward(m);
  }
  for (int64_t m = std::max<int64_t>(microbatches - warmup, 0);
       m < microbatches; ++m)
    backward(m);
  return order;
}

int64_t peakMicrobatchesInFlight(const std::vector<PipelineAction> &order) {
  int64_t inFlight = 0, peak = 0;
  for (const PipelineAction &action : order) {
    inFlight += action.backward ? -1 : 1;
    peak = std::max(peak, inFlight);
  }
  return peak;
}

bool simulatePipeline(PipelineSchedule kind, int64_t microbatches,
                      const std::vector<double> &forwardCost,
                      const std::vector<double> &backwardCost,
                      PipelineTimeline &timeline, std::string &error) {
  const int64_t stages = int64_t(forwardCost.size());
  if (stages == 0 || backwardCost.size() != forwardCost.size() ||
      microbatches < 1) {
    error = "a pipeline needs at least one stage and one microbatch, and a "
            "forward and a backward cost per stage";
    return false;
  }
  std::vector<std::vector<PipelineAction>> orders;
  for (int64_t s = 0; s < stages; ++s)
    orders.push_back(pipelineStageOrder(kind, stages, s, microbatches));
  // End times of each stage's forward and backward of each microbatch
  // (negative: not run yet).
  std::vector<std::vector<double>> forwardEnd(
      stages, std::vector<double>(microbatches, -1)),
      backwardEnd = forwardEnd;
  timeline = PipelineTimeline();
  timeline.start.assign(stages, {});
  timeline.end.assign(stages, {});
  std::vector<size_t> next(stages, 0);
  std::vector<double> clock(stages, 0);
  double busy = 0;
  // Run any stage whose next action's inputs are ready, until all ran.
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < stages; ++s) {
      while (next[s] < orders[s].size()) {
        const PipelineAction &action = orders[s][next[s]];
        const int64_t m = action.microbatch;
        double ready = 0;
        bool blocked = false;
        auto after = [&](double end) {
          blocked |= end < 0;
          ready = std::max(ready, end);
        };
        if (!action.backward) {
          if (s > 0)
            after(forwardEnd[s - 1][m]);
        } else {
          after(forwardEnd[s][m]);
          if (s < stages - 1)
            after(backwardEnd[s + 1][m]);
        }
        if (blocked)
          break;
        double cost = action.backward ? backwardCost[s] : forwardCost[s];
        double start = std::max(clock[s], ready);
        clock[s] = start + cost;
        busy += cost;
        timeline.start[s].push_back(start);
        timeline.end[s].push_back(clock[s]);
        (action.backward ? backwardEnd : forwardEnd)[s][m] = clock[s];
        ++next[s];
        progress = true;
      }
    }
  }
  for (int64_t s = 0; s < stages; ++s)
    if (next[s] < orders[s].size()) {
      const PipelineAction &action = orders[s][next[s]];
      error = std::string("the ") + pipelineScheduleName(kind) +
              " schedule deadlocks: stage " + std::to_string(s) +
              " waits forever before the " +
              (action.backward ? "backward" : "forward") + " of microbatch " +
              std::to_string(action.microbatch);
      return false;
    }
  timeline.makespan = *std::max_element(clock.begin(), clock.end());
  double capacity = double(stages) * timeline.makespan;
  timeline.bubbleFraction = capacity > 0 ? (capacity - busy) / capacity : 0;
  return true;
}

} // namespace trnrt
