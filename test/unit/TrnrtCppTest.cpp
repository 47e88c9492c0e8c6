//===- TrnrtCppTest.cpp - The C++ wrapper over the runtime C API ----------===//
//
// trnrt.hpp over hand-built artifacts (ProgramBuilder.h): load from memory and
// from a file, runtime options, the signature, write/execute/read, statistics,
// handle lifetimes, and every error path, each checked for the status code the
// C API gives and its one-line message.
//
//===----------------------------------------------------------------------===//

#include "trnrt/trnrt.hpp"

#include "ProgramBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace trnrt;
using namespace trnrt::test_programs;

namespace {

std::vector<double> iota(size_t count, double scale) {
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = double(i) * scale;
  return values;
}

/// Runs fn, which must throw trnrt::Error with `status`. Errors of the C API
/// carry its one-line message; `fromWrapper` errors are the wrapper's own
/// (a moved-from object, a name not in the signature).
template <typename Fn>
Error expectError(trnrt_status status, Fn &&fn, bool fromWrapper = false) {
  try {
    fn();
  } catch (const Error &error) {
    EXPECT_EQ(error.status(), status) << error.what();
    if (!fromWrapper)
      EXPECT_EQ(std::string(error.what()), trnrt_last_error());
    EXPECT_FALSE(std::string(error.what()).empty());
    EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos);
    return error;
  }
  ADD_FAILURE() << "no trnrt::Error thrown";
  return Error(TRNRT_OK, "");
}

void checkExpModel(Model &model) {
  std::vector<TensorInfo> inputs = model.inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].name, "x");
  EXPECT_EQ(inputs[0].dtype, TRNRT_F32);
  EXPECT_EQ(inputs[0].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(inputs[0].elements, 32u);
  std::vector<TensorInfo> outputs = model.outputs();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].name, "y");
  EXPECT_EQ(outputs[0].elements, 32u);

  std::vector<double> x = iota(32, 0.125);
  model.tensor("x").write(x);
  model.execute();
  std::vector<double> y = model.read("y");
  ASSERT_EQ(y.size(), 32u);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y[i], double(float(std::exp(x[i])))) << "element " << i;
  // The input reads back as written (exact in fp32).
  EXPECT_EQ(model.read("x"), x);

  trnrt_stats stats = model.stats();
  EXPECT_EQ(stats.instructions, 3u);
  EXPECT_EQ(stats.dma_count, 2u);
  EXPECT_EQ(stats.hbm_to_sbuf_bytes, 32u * 4u);
  EXPECT_EQ(stats.sbuf_to_hbm_bytes, 32u * 4u);
  EXPECT_GT(stats.device_time_ns, 0.0);
  EXPECT_GT(stats.engine_busy_percent[2], 0.0); // scalar engine
  EXPECT_EQ(stats.struct_size, sizeof(trnrt_stats));
  EXPECT_EQ(stats.version, uint32_t(TRNRT_STATS_VERSION));
}

TEST(TrnrtCppTest, LoadFromMemoryWriteExecuteRead) {
  Runtime runtime;
  Model model = runtime.loadMemory(expArtifact());
  checkExpModel(model);
}

TEST(TrnrtCppTest, LoadFromFile) {
  std::string path = testing::TempDir() + "trnrt-cpp-test.trnart";
  std::vector<uint8_t> bytes = expArtifact();
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()),
              std::streamsize(bytes.size()));
  }
  Runtime runtime;
  Model model = runtime.loadFile(path);
  std::remove(path.c_str());
  checkExpModel(model);
}

TEST(TrnrtCppTest, RuntimeOptions) {
  // Poisoned memory: the input nobody wrote reads as NaN, and so does its
  // exponential.
  trnrt_init_options options;
  trnrt_init_options_default(&options);
  options.flags = TRNRT_INIT_POISON_MEMORY;
  options.threads = 1;
  Runtime poisoned(options);
  Model model = poisoned.loadMemory(expArtifact());
  model.execute();
  for (double y : model.read("y"))
    EXPECT_TRUE(std::isnan(y));
  EXPECT_EQ(model.stats().version, uint32_t(TRNRT_STATS_VERSION));

  options.struct_size = 0;
  Error small =
      expectError(TRNRT_INVALID_ARGUMENT, [&] { (void)Runtime(options); });
  EXPECT_NE(std::string(small.what()).find("struct_size 0"), std::string::npos)
      << small.what();
  trnrt_init_options_default(&options);
  options.flags = uint64_t(1) << 40;
  expectError(TRNRT_UNSUPPORTED, [&] { (void)Runtime(options); });
}

TEST(TrnrtCppTest, HandlesOutliveTheirOwners) {
  // A model outlives its runtime and a tensor handle outlives its model.
  std::vector<double> x = iota(32, -0.25);
  Tensor input = [&] {
    Model model = [] {
      Runtime runtime;
      return runtime.loadMemory(expArtifact());
    }();
    Model moved = std::move(model);
    expectError(
        TRNRT_INVALID_ARGUMENT, [&] { model.execute(); }, true);
    return moved.tensor("x");
  }();
  input.write(x);
  std::vector<double> back = input.read(32);
  EXPECT_EQ(back, x);
}

TEST(TrnrtCppTest, LoadErrors) {
  Runtime runtime;
  Error missing = expectError(TRNRT_IO_ERROR, [&] {
    runtime.loadFile(testing::TempDir() + "no-such-artifact.trnart");
  });
  EXPECT_NE(std::string(missing.what()).find("no-such-artifact.trnart"),
            std::string::npos)
      << missing.what();

  std::vector<uint8_t> garbage(256, 0x5a);
  Error bad =
      expectError(TRNRT_BAD_ARTIFACT, [&] { runtime.loadMemory(garbage); });
  EXPECT_NE(std::string(bad.what()).find("not a trn artifact"),
            std::string::npos)
      << bad.what();

  std::vector<uint8_t> truncated = expArtifact();
  truncated.resize(truncated.size() / 2);
  expectError(TRNRT_BAD_ARTIFACT, [&] { runtime.loadMemory(truncated); });

  expectError(TRNRT_INVALID_ARGUMENT,
              [&] { runtime.loadMemory(nullptr, size_t(0)); });

  // A matmul on the Vector Engine breaks a hardware rule.
  Builder wrongEngine;
  wrongEngine.add(kVectorStream, make(Opcode::Matmul, psum(DType::F32, 4, 4),
                                      {sbuf(DType::F32, 4, 4, 64),
                                       sbuf(DType::F32, 4, 4, 128)}));
  Error invalid = expectError(TRNRT_INVALID_PROGRAM, [&] {
    runtime.loadMemory(artifactOf(wrongEngine));
  });
  EXPECT_NE(std::string(invalid.what()).find("matmul"), std::string::npos)
      << invalid.what();

  // 8 GiB each: together more than a trn1 core's 16 GiB of HBM.
  Builder huge;
  huge.tensor("a", DType::F32, {1 << 16, 1 << 15});
  huge.tensor("b", DType::F32, {1 << 16, 1 << 15});
  huge.tensor("c", DType::F32, {1, 16}, HbmTensor::Kind::Output);
  Error oom = expectError(TRNRT_OUT_OF_MEMORY,
                          [&] { runtime.loadMemory(artifactOf(huge)); });
  EXPECT_NE(std::string(oom.what()).find("out of HBM memory"),
            std::string::npos)
      << oom.what();
}

TEST(TrnrtCppTest, TensorErrors) {
  Runtime runtime;
  Model model = runtime.loadMemory(expArtifact());
  Error unknown = expectError(TRNRT_INVALID_ARGUMENT, [&] {
    model.tensor("no-such-tensor").write(iota(32, 1.0));
  });
  EXPECT_NE(std::string(unknown.what()).find("no-such-tensor"),
            std::string::npos)
      << unknown.what();
  expectError(TRNRT_INVALID_ARGUMENT,
              [&] { model.tensor("x").write(iota(31, 1.0)); });
  expectError(TRNRT_INVALID_ARGUMENT, [&] { model.tensor("y").read(33); });
  expectError(TRNRT_INVALID_ARGUMENT,
              [&] { model.tensor("no-such-tensor").read(1); });
  Error notSignature = expectError(
      TRNRT_INVALID_ARGUMENT, [&] { model.read("no-such-output"); }, true);
  EXPECT_NE(std::string(notSignature.what()).find("no-such-output"),
            std::string::npos);
  // No statistics before a successful run.
  Error noStats = expectError(TRNRT_INVALID_ARGUMENT, [&] { model.stats(); });
  EXPECT_NE(std::string(noStats.what()).find("has not run"), std::string::npos)
      << noStats.what();
}

TEST(TrnrtCppTest, ExecutionError) {
  // An indirect gather whose index (data, so only known at run time) is
  // outside the table.
  Runtime runtime;
  Model model = runtime.loadMemory(gatherArtifact());
  model.write("table", iota(15, 1.0));
  model.write("idx", {4, 0, 2, 4});
  model.execute();
  EXPECT_EQ(model.read("rows"),
            (std::vector<double>{12, 13, 14, 0, 1, 2, 6, 7, 8, 12, 13, 14}));
  EXPECT_EQ(model.stats().dma_count, 3u);

  model.write("idx", {0, 5, 1, 1});
  Error error = expectError(TRNRT_EXECUTION_ERROR, [&] { model.execute(); });
  EXPECT_NE(std::string(error.what()).find("index 5 at partition 1"),
            std::string::npos)
      << error.what();
  // A failed run leaves no statistics.
  expectError(TRNRT_INVALID_ARGUMENT, [&] { model.stats(); });
}

} // namespace
