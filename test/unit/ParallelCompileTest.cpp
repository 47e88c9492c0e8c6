//===- ParallelCompileTest.cpp - a task's share of its node --------------===//

#include "trn/ParallelCompile/ParallelCompile.h"
#include "trn/ParallelCompile/Cluster.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace mlir::trn::parallel;
namespace fs = std::filesystem;

namespace {

TEST(SlurmTasksOnNode, ReadsTheGroupOfTheNode) {
  // Two tasks on each of the first three nodes, one on the fourth.
  EXPECT_EQ(slurmTasksOnNode("2(x3),1", 0), 2);
  EXPECT_EQ(slurmTasksOnNode("2(x3),1", 2), 2);
  EXPECT_EQ(slurmTasksOnNode("2(x3),1", 3), 1);
  EXPECT_EQ(slurmTasksOnNode("4", 0), 4);
  EXPECT_EQ(slurmTasksOnNode("3,5", 1), 5);
  // Unset or unreadable: the task is alone.
  EXPECT_EQ(slurmTasksOnNode("", 0), 1);
  EXPECT_EQ(slurmTasksOnNode("many", 0), 1);
  EXPECT_EQ(slurmTasksOnNode("2(x3)", 7), 1);
}

/// A fake /proc/self/cgroup and /sys/fs/cgroup under a temporary directory.
class CgroupTree : public ::testing::Test {
protected:
  void SetUp() override {
    root = fs::temp_directory_path() /
           ("trn-cgroup-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root / "sys");
  }
  void TearDown() override { fs::remove_all(root); }
  void write(const fs::path &path, const std::string &text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  int64_t room() {
    return cgroupMemoryRoomBytes((root / "self").string(),
                                 (root / "sys").string());
  }
  fs::path root;
};

TEST_F(CgroupTree, V2TakesTheTightestAncestor) {
  write(root / "self", "0::/job/task\n");
  write(root / "sys/job/task/memory.max", "max\n");
  write(root / "sys/job/task/memory.current", "1000\n");
  write(root / "sys/job/memory.max", "8000\n");
  write(root / "sys/job/memory.current", "3000\n");
  EXPECT_EQ(room(), 5000);
}

TEST_F(CgroupTree, V1ReadsTheMemoryController) {
  write(root / "self", "5:cpu,cpuacct:/\n4:memory:/slurm/job_7\n0::/\n");
  write(root / "sys/memory/slurm/job_7/memory.limit_in_bytes", "4096000\n");
  write(root / "sys/memory/slurm/job_7/memory.usage_in_bytes", "96000\n");
  // The root's "no limit" (a huge page-rounded number) is no limit.
  write(root / "sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
  write(root / "sys/memory/memory.usage_in_bytes", "5\n");
  EXPECT_EQ(room(), 4000000);
}

TEST_F(CgroupTree, NoLimitOrNoFiles) {
  write(root / "self", "0::/user.slice\n");
  write(root / "sys/user.slice/memory.max", "max\n");
  write(root / "sys/user.slice/memory.current", "100\n");
  EXPECT_EQ(room(), -1);
  fs::remove_all(root / "sys");
  EXPECT_EQ(room(), -1);
}

TEST(MemoryBudget, SharedByTheTasksOnTheNode) {
  int64_t alone = memoryBudgetBytes(1), shared = memoryBudgetBytes(4);
  ASSERT_GT(alone, 0);
  // MemAvailable moves between the two reads; a quarter within 10%.
  EXPECT_NEAR(double(shared), double(alone) / 4, double(alone) / 40);
}

} // namespace
