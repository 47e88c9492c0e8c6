//===- TrnrtCApiTest.cpp - The runtime C API's ABI rules and statuses -----===//
//
// trnrt.h called directly, built without exceptions like a C embedder:
// options structs of an older (smaller) and a newer (larger) size, a
// struct_size below the minimum, statistics written only up to the caller's
// struct_size, and every error path's status code and one-line message.
// Structs of a size other than this header's are laid out in raw buffers, some
// ending at a page the process cannot touch, so a read or write past the
// caller's struct_size crashes the test.
//
//===----------------------------------------------------------------------===//

#include "trnrt/trnrt.h"

#include "ProgramBuilder.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

using namespace trnrt;
using namespace trnrt::test_programs;

namespace {

/// `size` bytes that end where an inaccessible page begins.
class GuardedBytes {
public:
  explicit GuardedBytes(size_t size) {
    page = size_t(sysconf(_SC_PAGESIZE));
    map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(map, MAP_FAILED);
    EXPECT_EQ(mprotect(static_cast<char *>(map) + page, page, PROT_NONE), 0);
    bytes = static_cast<char *>(map) + page - size;
  }
  ~GuardedBytes() { munmap(map, 2 * page); }
  GuardedBytes(const GuardedBytes &) = delete;
  GuardedBytes &operator=(const GuardedBytes &) = delete;

  template <typename T> T *as() { return reinterpret_cast<T *>(bytes); }

private:
  size_t page = 0;
  void *map = nullptr;
  char *bytes = nullptr;
};

/// Expects `status` from a failed call, with a one-line message.
void expectFailure(trnrt_status got, trnrt_status want, const char *call) {
  EXPECT_EQ(got, want) << call << ": " << trnrt_last_error();
  std::string message = trnrt_last_error();
  EXPECT_FALSE(message.empty()) << call;
  EXPECT_EQ(message.find('\n'), std::string::npos) << call << ": " << message;
}

/// Loads `artifact` on `runtime`; null (after a test failure) if it fails.
trnrt_model *load(trnrt_runtime *runtime, const std::vector<uint8_t> &bytes) {
  trnrt_model *model = nullptr;
  EXPECT_EQ(trnrt_load_memory(runtime, bytes.data(), bytes.size(), &model),
            TRNRT_OK)
      << trnrt_last_error();
  return model;
}

/// Runs exp(x) without writing x and returns y: exp(0) = 1 from fresh
/// memory, NaN from poisoned memory.
std::vector<double> expOfUnwritten(trnrt_runtime *runtime) {
  trnrt_model *model = load(runtime, expArtifact());
  if (!model)
    return {};
  EXPECT_EQ(trnrt_execute(model), TRNRT_OK) << trnrt_last_error();
  std::vector<double> y(32);
  EXPECT_EQ(trnrt_read_tensor(model, "y", y.data(), y.size()), TRNRT_OK)
      << trnrt_last_error();
  trnrt_unload(model);
  return y;
}

TEST(TrnrtCApiTest, InitWithDefaults) {
  trnrt_runtime *runtime = nullptr;
  ASSERT_EQ(trnrt_init(nullptr, &runtime), TRNRT_OK);
  EXPECT_STREQ(trnrt_last_error(), "");
  EXPECT_EQ(expOfUnwritten(runtime), std::vector<double>(32, 1.0));
  trnrt_close(runtime);

  trnrt_init_options options;
  trnrt_init_options_default(&options);
  EXPECT_EQ(options.struct_size, sizeof(trnrt_init_options));
  EXPECT_EQ(options.flags, 0u);
  EXPECT_EQ(options.threads, 0u);
  ASSERT_EQ(trnrt_init(&options, &runtime), TRNRT_OK);
  EXPECT_EQ(expOfUnwritten(runtime), std::vector<double>(32, 1.0));
  trnrt_close(runtime);

  expectFailure(trnrt_init(&options, nullptr), TRNRT_INVALID_ARGUMENT,
                "trnrt_init");
}

TEST(TrnrtCApiTest, OptionsBelowTheMinimumSizeAreRefused) {
  static_assert(TRNRT_INIT_OPTIONS_MIN_SIZE == 16, "struct_size and flags");
  for (size_t size :
       {size_t(0), sizeof(size_t), TRNRT_INIT_OPTIONS_MIN_SIZE - 1}) {
    trnrt_init_options options;
    trnrt_init_options_default(&options);
    options.struct_size = size;
    trnrt_runtime *runtime = reinterpret_cast<trnrt_runtime *>(&options);
    expectFailure(trnrt_init(&options, &runtime), TRNRT_INVALID_ARGUMENT,
                  "trnrt_init");
    EXPECT_EQ(runtime, nullptr);
    EXPECT_NE(std::string(trnrt_last_error())
                  .find("struct_size " + std::to_string(size) +
                        " is below the minimum 16"),
              std::string::npos)
        << trnrt_last_error();
  }
}

TEST(TrnrtCApiTest, OlderSmallerOptionsWork) {
  // A caller whose header ends at flags: the struct ends at an inaccessible
  // page, so reading threads would crash.
  GuardedBytes memory(TRNRT_INIT_OPTIONS_MIN_SIZE);
  auto *options = memory.as<trnrt_init_options>();
  options->struct_size = TRNRT_INIT_OPTIONS_MIN_SIZE;
  options->flags = TRNRT_INIT_POISON_MEMORY;
  trnrt_runtime *runtime = nullptr;
  ASSERT_EQ(trnrt_init(options, &runtime), TRNRT_OK) << trnrt_last_error();
  // The flags it set are honoured.
  for (double y : expOfUnwritten(runtime))
    EXPECT_TRUE(std::isnan(y));
  trnrt_close(runtime);
}

TEST(TrnrtCApiTest, NewerLargerOptions) {
  // A caller whose header has a field this runtime does not know.
  struct Newer {
    trnrt_init_options known;
    uint64_t unknown;
  };
  GuardedBytes memory(sizeof(Newer));
  Newer *newer = memory.as<Newer>();
  trnrt_init_options_default(&newer->known);
  newer->known.struct_size = sizeof(Newer);
  newer->known.flags = TRNRT_INIT_POISON_MEMORY;
  newer->unknown = 0;
  trnrt_runtime *runtime = nullptr;
  // Left at its default, the field asks for nothing: accepted.
  ASSERT_EQ(trnrt_init(&newer->known, &runtime), TRNRT_OK)
      << trnrt_last_error();
  for (double y : expOfUnwritten(runtime))
    EXPECT_TRUE(std::isnan(y));
  trnrt_close(runtime);

  newer->unknown = 3;
  runtime = nullptr;
  expectFailure(trnrt_init(&newer->known, &runtime), TRNRT_UNSUPPORTED,
                "trnrt_init");
  EXPECT_EQ(runtime, nullptr);
  EXPECT_NE(std::string(trnrt_last_error()).find("byte 24"), std::string::npos)
      << trnrt_last_error();

  // A flag this runtime does not know.
  trnrt_init_options options;
  trnrt_init_options_default(&options);
  options.flags = TRNRT_INIT_TIMING_ONLY | (uint64_t(1) << 63);
  expectFailure(trnrt_init(&options, &runtime), TRNRT_UNSUPPORTED,
                "trnrt_init");
  EXPECT_NE(std::string(trnrt_last_error()).find("9223372036854775808"),
            std::string::npos)
      << trnrt_last_error();
}

TEST(TrnrtCApiTest, TimingOnlyKeepsStatistics) {
  std::vector<double> x(32, 0.5);
  trnrt_stats stats[2];
  for (int timingOnly = 0; timingOnly < 2; ++timingOnly) {
    trnrt_init_options options;
    trnrt_init_options_default(&options);
    options.flags = timingOnly ? TRNRT_INIT_TIMING_ONLY : 0;
    options.threads = 1;
    trnrt_runtime *runtime = nullptr;
    ASSERT_EQ(trnrt_init(&options, &runtime), TRNRT_OK);
    trnrt_model *model = load(runtime, expArtifact());
    ASSERT_NE(model, nullptr);
    ASSERT_EQ(trnrt_write_tensor(model, "x", x.data(), x.size()), TRNRT_OK);
    ASSERT_EQ(trnrt_execute(model), TRNRT_OK) << trnrt_last_error();
    trnrt_stats_default(&stats[timingOnly]);
    ASSERT_EQ(trnrt_get_stats(model, &stats[timingOnly]), TRNRT_OK);
    trnrt_unload(model);
    trnrt_close(runtime);
  }
  EXPECT_GT(stats[0].device_time_ns, 0.0);
  EXPECT_EQ(stats[1].device_time_ns, stats[0].device_time_ns);
  EXPECT_EQ(stats[1].instructions, stats[0].instructions);
  EXPECT_EQ(stats[1].hbm_to_sbuf_bytes, stats[0].hbm_to_sbuf_bytes);
}

class TrnrtCApiStatsTest : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(trnrt_init(nullptr, &runtime), TRNRT_OK);
    model = load(runtime, expArtifact());
    ASSERT_NE(model, nullptr);
    ASSERT_EQ(trnrt_execute(model), TRNRT_OK) << trnrt_last_error();
    trnrt_stats_default(&whole);
    ASSERT_EQ(trnrt_get_stats(model, &whole), TRNRT_OK);
  }
  void TearDown() override {
    trnrt_unload(model);
    trnrt_close(runtime);
  }

  trnrt_runtime *runtime = nullptr;
  trnrt_model *model = nullptr;
  trnrt_stats whole;
};

TEST_F(TrnrtCApiStatsTest, WholeStruct) {
  EXPECT_EQ(whole.struct_size, sizeof(trnrt_stats));
  EXPECT_EQ(whole.version, uint32_t(TRNRT_STATS_VERSION));
  EXPECT_GT(whole.device_time_ns, 0.0);
  EXPECT_EQ(whole.instructions, 3u);
  EXPECT_EQ(whole.dma_count, 2u);
}

TEST_F(TrnrtCApiStatsTest, FilledOnlyUpToStructSize) {
  // Callers whose struct ends after the header, after device_time_ns, and
  // halfway through a field: nothing past their struct_size is written.
  for (size_t size : {size_t(TRNRT_STATS_MIN_SIZE), offsetof(trnrt_stats, mfu),
                      offsetof(trnrt_stats, instructions) + 4}) {
    std::vector<unsigned char> bytes(sizeof(trnrt_stats) + 16, 0xAB);
    size_t callerSize = size;
    std::memcpy(bytes.data(), &callerSize, sizeof(callerSize));
    auto *stats = reinterpret_cast<trnrt_stats *>(bytes.data());
    ASSERT_EQ(trnrt_get_stats(model, stats), TRNRT_OK) << trnrt_last_error();
    EXPECT_EQ(stats->struct_size, size);
    EXPECT_EQ(stats->version, uint32_t(TRNRT_STATS_VERSION));
    // The bytes it covers hold the statistics, the rest are untouched.
    trnrt_stats expected = whole;
    expected.struct_size = size;
    for (size_t i = offsetof(trnrt_stats, device_time_ns); i < size; ++i)
      EXPECT_EQ(bytes[i], reinterpret_cast<unsigned char *>(&expected)[i])
          << "byte " << i << " of " << size;
    for (size_t i = size; i < bytes.size(); ++i)
      ASSERT_EQ(bytes[i], 0xAB) << "byte " << i << " of " << size;
  }

  // Against an inaccessible page: a write past struct_size would crash.
  GuardedBytes memory(offsetof(trnrt_stats, mfu));
  auto *stats = memory.as<trnrt_stats>();
  stats->struct_size = offsetof(trnrt_stats, mfu);
  ASSERT_EQ(trnrt_get_stats(model, stats), TRNRT_OK);
  EXPECT_EQ(stats->device_time_ns, whole.device_time_ns);
  EXPECT_EQ(stats->tensor_engine_utilisation, whole.tensor_engine_utilisation);
}

TEST_F(TrnrtCApiStatsTest, NewerLargerStruct) {
  // A caller with a statistic of a later version: the runtime fills what it
  // knows, says which version that is, and leaves the new field alone.
  struct Newer {
    trnrt_stats known;
    uint64_t later;
  };
  Newer newer;
  std::memset(&newer, 0, sizeof(newer));
  newer.known.struct_size = sizeof(Newer);
  newer.later = 42;
  ASSERT_EQ(trnrt_get_stats(model, &newer.known), TRNRT_OK);
  EXPECT_EQ(newer.known.struct_size, sizeof(Newer));
  EXPECT_EQ(newer.known.version, uint32_t(TRNRT_STATS_VERSION));
  EXPECT_EQ(newer.known.instructions, whole.instructions);
  EXPECT_EQ(newer.later, 42u);
}

TEST_F(TrnrtCApiStatsTest, BelowTheMinimumSizeIsRefused) {
  for (size_t size : {size_t(0), TRNRT_STATS_MIN_SIZE - 1}) {
    std::vector<unsigned char> bytes(sizeof(trnrt_stats), 0xAB);
    std::memcpy(bytes.data(), &size, sizeof(size));
    auto *stats = reinterpret_cast<trnrt_stats *>(bytes.data());
    expectFailure(trnrt_get_stats(model, stats), TRNRT_INVALID_ARGUMENT,
                  "trnrt_get_stats");
    EXPECT_NE(std::string(trnrt_last_error()).find("trnrt_stats struct_size"),
              std::string::npos)
        << trnrt_last_error();
    for (size_t i = sizeof(size); i < bytes.size(); ++i)
      ASSERT_EQ(bytes[i], 0xAB) << "byte " << i;
  }
}

TEST(TrnrtCApiTest, EveryErrorPathHasItsStatusAndAMessage) {
  trnrt_runtime *runtime = nullptr;
  ASSERT_EQ(trnrt_init(nullptr, &runtime), TRNRT_OK);
  trnrt_model *model = nullptr;

  // Loading.
  std::vector<uint8_t> garbage(256, 0x5a);
  expectFailure(trnrt_load_memory(runtime, nullptr, 0, &model),
                TRNRT_INVALID_ARGUMENT, "load_memory(null)");
  expectFailure(
      trnrt_load_memory(nullptr, garbage.data(), garbage.size(), &model),
      TRNRT_INVALID_ARGUMENT, "load_memory(no runtime)");
  expectFailure(
      trnrt_load_memory(runtime, garbage.data(), garbage.size(), &model),
      TRNRT_BAD_ARTIFACT, "load_memory(garbage)");
  std::string missing = testing::TempDir() + "no-such-artifact.trnart";
  expectFailure(trnrt_load_file(runtime, missing.c_str(), &model),
                TRNRT_IO_ERROR, "load_file(missing)");
  EXPECT_NE(std::string(trnrt_last_error()).find("no-such-artifact"),
            std::string::npos);
  expectFailure(trnrt_load_file(runtime, "/", &model), TRNRT_IO_ERROR,
                "load_file(directory)");
  Builder wrongEngine;
  wrongEngine.add(kVectorStream, make(Opcode::Matmul, psum(DType::F32, 4, 4),
                                      {sbuf(DType::F32, 4, 4, 64),
                                       sbuf(DType::F32, 4, 4, 128)}));
  std::vector<uint8_t> invalid = artifactOf(wrongEngine);
  expectFailure(
      trnrt_load_memory(runtime, invalid.data(), invalid.size(), &model),
      TRNRT_INVALID_PROGRAM, "load_memory(matmul on the vector engine)");
  Builder huge;
  huge.tensor("a", DType::F32, {1 << 16, 1 << 15});
  huge.tensor("b", DType::F32, {1 << 16, 1 << 15});
  huge.tensor("c", DType::F32, {1, 16}, HbmTensor::Kind::Output);
  std::vector<uint8_t> tooBig = artifactOf(huge);
  expectFailure(
      trnrt_load_memory(runtime, tooBig.data(), tooBig.size(), &model),
      TRNRT_OUT_OF_MEMORY, "load_memory(16 GiB)");
  EXPECT_EQ(model, nullptr);

  // The signature and tensors.
  model = load(runtime, gatherArtifact());
  ASSERT_NE(model, nullptr);
  trnrt_tensor_info info;
  expectFailure(trnrt_input_info(model, 2, &info), TRNRT_INVALID_ARGUMENT,
                "input_info(2)");
  expectFailure(trnrt_output_info(model, 0, nullptr), TRNRT_INVALID_ARGUMENT,
                "output_info(null)");
  expectFailure(trnrt_input_info(nullptr, 0, &info), TRNRT_INVALID_ARGUMENT,
                "input_info(no model)");
  std::vector<double> table(15, 1.0);
  expectFailure(trnrt_write_tensor(model, "nope", table.data(), table.size()),
                TRNRT_INVALID_ARGUMENT, "write_tensor(unknown name)");
  expectFailure(trnrt_write_tensor(model, "table", table.data(), 14),
                TRNRT_INVALID_ARGUMENT, "write_tensor(wrong count)");
  expectFailure(trnrt_read_tensor(model, "rows", table.data(), 3),
                TRNRT_INVALID_ARGUMENT, "read_tensor(wrong count)");
  std::vector<uint8_t> raw(16);
  expectFailure(trnrt_write_tensor_bytes(model, "idx", raw.data(), 15),
                TRNRT_INVALID_ARGUMENT, "write_tensor_bytes(wrong size)");
  expectFailure(trnrt_read_tensor_bytes(model, "idx", raw.data(), 17),
                TRNRT_INVALID_ARGUMENT, "read_tensor_bytes(wrong size)");

  // Running: no statistics before a successful run, nor after a failed one.
  trnrt_stats stats;
  trnrt_stats_default(&stats);
  expectFailure(trnrt_get_stats(model, &stats), TRNRT_INVALID_ARGUMENT,
                "get_stats(before execute)");
  expectFailure(trnrt_get_stats(model, nullptr), TRNRT_INVALID_ARGUMENT,
                "get_stats(null)");
  std::vector<double> idx = {0, 5, 1, 1};
  ASSERT_EQ(trnrt_write_tensor(model, "table", table.data(), table.size()),
            TRNRT_OK);
  ASSERT_EQ(trnrt_write_tensor(model, "idx", idx.data(), idx.size()), TRNRT_OK);
  expectFailure(trnrt_execute(model), TRNRT_EXECUTION_ERROR,
                "execute(index 5 of 5 rows)");
  EXPECT_NE(std::string(trnrt_last_error()).find("index 5"), std::string::npos);
  expectFailure(trnrt_get_stats(model, &stats), TRNRT_INVALID_ARGUMENT,
                "get_stats(after a failed execute)");
  expectFailure(trnrt_execute(nullptr), TRNRT_INVALID_ARGUMENT,
                "execute(no model)");

  // A call that succeeds clears the message.
  idx = {4, 0, 2, 4};
  ASSERT_EQ(trnrt_write_tensor(model, "idx", idx.data(), idx.size()), TRNRT_OK);
  EXPECT_STREQ(trnrt_last_error(), "");
  ASSERT_EQ(trnrt_execute(model), TRNRT_OK);
  ASSERT_EQ(trnrt_get_stats(model, &stats), TRNRT_OK);
  EXPECT_EQ(stats.dma_count, 3u);

  trnrt_unload(model);
  trnrt_close(runtime);
}

} // namespace
