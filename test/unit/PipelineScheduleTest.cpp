//===- PipelineScheduleTest.cpp - GPipe and 1F1B orders and timing --------===//

#include "trnrt/PipelineSchedule.h"
#include "trnrt/PipelineRun.h"

#include <gtest/gtest.h>

#include <string>

using namespace trnrt;

namespace {

std::string render(const std::vector<PipelineAction> &order) {
  std::string text;
  for (const PipelineAction &action : order)
    text += (text.empty() ? "" : " ") +
            std::string(action.backward ? "B" : "F") +
            std::to_string(action.microbatch);
  return text;
}

TEST(PipelineSchedule, Parse) {
  PipelineSchedule kind;
  EXPECT_TRUE(parsePipelineSchedule("1f1b", kind));
  EXPECT_EQ(kind, PipelineSchedule::OneFOneB);
  EXPECT_TRUE(parsePipelineSchedule("gpipe", kind));
  EXPECT_EQ(kind, PipelineSchedule::GPipe);
  EXPECT_FALSE(parsePipelineSchedule("1F1B ", kind));
  EXPECT_FALSE(parsePipelineSchedule("interleaved", kind));
}

// The 1F1B table of 4 stages and 6 microbatches (Megatron's and NxD's
// Train1F1BSchedule): stage s runs 3 - s forwards ahead.
TEST(PipelineSchedule, OneFOneBFourStagesSixMicrobatches) {
  auto order = [](int64_t stage) {
    return render(pipelineStageOrder(PipelineSchedule::OneFOneB, 4, stage, 6));
  };
  EXPECT_EQ(order(0), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(order(1), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5");
  EXPECT_EQ(order(2), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5");
  EXPECT_EQ(order(3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  // 1F1B holds at most (stages - stage) microbatches' activations.
  for (int64_t stage = 0; stage < 4; ++stage)
    EXPECT_EQ(peakMicrobatchesInFlight(
                  pipelineStageOrder(PipelineSchedule::OneFOneB, 4, stage, 6)),
              4 - stage);
}

TEST(PipelineSchedule, FewerMicrobatchesThanStages) {
  EXPECT_EQ(render(pipelineStageOrder(PipelineSchedule::OneFOneB, 4, 0, 2)),
            "F0 F1 B0 B1");
  EXPECT_EQ(render(pipelineStageOrder(PipelineSchedule::OneFOneB, 4, 3, 2)),
            "F0 B0 F1 B1");
}

TEST(PipelineSchedule, GPipeHoldsEveryMicrobatch) {
  auto order = pipelineStageOrder(PipelineSchedule::GPipe, 2, 0, 4);
  EXPECT_EQ(render(order), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(peakMicrobatchesInFlight(order), 4);
}

// With equal stages the bubble is (stages - 1) / (microbatches + stages - 1)
// of the time for both schedules (Narayanan et al., 2021).
TEST(PipelineSchedule, BubbleFraction) {
  for (PipelineSchedule kind :
       {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    PipelineTimeline timeline;
    std::string error;
    ASSERT_TRUE(
        simulatePipeline(kind, 8, {1, 1, 1, 1}, {2, 2, 2, 2}, timeline, error))
        << error;
    EXPECT_DOUBLE_EQ(timeline.makespan, (8 + 3) * 3.0)
        << pipelineScheduleName(kind);
    EXPECT_NEAR(timeline.bubbleFraction, 3.0 / 11.0, 1e-12);
  }
  // One stage: no bubble.
  PipelineTimeline timeline;
  std::string error;
  ASSERT_TRUE(simulatePipeline(PipelineSchedule::OneFOneB, 3, {1}, {2},
                               timeline, error));
  EXPECT_DOUBLE_EQ(timeline.makespan, 9);
  EXPECT_DOUBLE_EQ(timeline.bubbleFraction, 0);
}

TEST(PipelineSchedule, BadArguments) {
  PipelineTimeline timeline;
  std::string error;
  EXPECT_FALSE(
      simulatePipeline(PipelineSchedule::GPipe, 0, {1}, {1}, timeline, error));
  EXPECT_FALSE(simulatePipeline(PipelineSchedule::GPipe, 2, {1, 1}, {1},
                                timeline, error));
  EXPECT_NE(error.find("one microbatch"), std::string::npos);
}

} // namespace

TEST(PipelineRankRun, EncodesAndDecodesForAnotherProcess) {
  PipelineRankRun run;
  run.rank = 5;
  run.stepNs = 2163.5;
  run.computeNs = 1500.25;
  run.fragmentsRun = 5;
  run.matmulFlops = uint64_t(1) << 40;
  run.spans = {
      {0, 0, 0.0, 10.0, 1.0}, {1, 0, 12.0, 30.0, 0.0}, {2, 0, 31.0, 33.5, 0.5}};
  run.results[3] = {1, 2, 3};
  run.results[0] = {};
  std::vector<uint8_t> bytes = encodePipelineRankRun(run);
  PipelineRankRun back;
  std::string error;
  ASSERT_TRUE(decodePipelineRankRun(bytes, back, error)) << error;
  EXPECT_EQ(back.rank, 5);
  EXPECT_EQ(back.stepNs, 2163.5);
  EXPECT_EQ(back.computeNs, 1500.25);
  EXPECT_EQ(back.fragmentsRun, 5u);
  EXPECT_EQ(back.matmulFlops, uint64_t(1) << 40);
  ASSERT_EQ(back.spans.size(), 3u);
  EXPECT_EQ(back.spans[2].phase, 2);
  EXPECT_EQ(back.spans[1].endNs, 30.0);
  EXPECT_EQ(back.spans[0].waitNs, 1.0);
  EXPECT_EQ(back.results, run.results);

  // Truncated, extended or foreign bytes are one error, never a crash.
  for (std::vector<uint8_t> bad :
       {std::vector<uint8_t>(bytes.begin(), bytes.end() - 1),
        std::vector<uint8_t>(bytes.begin(), bytes.begin() + 7),
        std::vector<uint8_t>{}, std::vector<uint8_t>(bytes.size(), 0)}) {
    EXPECT_FALSE(decodePipelineRankRun(bad, back, error));
    EXPECT_NE(error.find("does not decode"), std::string::npos) << error;
  }
  bytes.push_back(0);
  EXPECT_FALSE(decodePipelineRankRun(bytes, back, error));
}
