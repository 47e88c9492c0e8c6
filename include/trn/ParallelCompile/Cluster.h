//===- Cluster.h - several tasks of one compile job -------------*- C++ -*-===//
//
// Under `srun` or `mpirun` every task runs trn-parallel-compile. The tasks
// meet in a job directory on the shared cache filesystem (no daemon, no
// port): each publishes the graphs its own training command collected, all
// wait for each other, split the union by key so that each graph is compiled
// by one task, publish their results, and every task exits with the job's
// status. Waiting is bounded by heartbeats: a task whose heartbeat file stops
// changing for a lease is reported as gone, judged on the waiter's own clock
// (node clocks never enter the judgement).
//
//===----------------------------------------------------------------------===//

#ifndef TRN_PARALLELCOMPILE_CLUSTER_H
#define TRN_PARALLELCOMPILE_CLUSTER_H

#include "trn/ParallelCompile/Manifest.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::trn::parallel {

/// Which task of which job this process is.
struct TaskIdentity {
  std::string launcher; ///< "slurm", "mpi", or "" for a single task
  std::string jobId;    ///< unique per job step (names the job directory)
  int rank = 0, size = 1, nodeId = 0, localRank = 0;
  /// Nodes the job's tasks run on (SLURM_STEP_NUM_NODES; under mpirun 2
  /// when the tasks on this node are not all of them, which is enough to
  /// tell one node from several).
  int nodes = 1;
  /// The job's tasks on this node (SLURM_STEP_TASKS_PER_NODE,
  /// OMPI_COMM_WORLD_LOCAL_SIZE), which share its memory.
  int tasksOnNode = 1;
  bool multi() const { return size > 1; }
  /// "task 2 of 4 (slurm job 17.0, node 0)".
  std::string describe() const;
};

/// Reads SLURM_PROCID/SLURM_STEP_NUM_TASKS/SLURM_NODEID/SLURM_LOCALID (a
/// task of an srun step; a batch script alone is one task), else
/// OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK. False with `error` for values
/// that are not integers or out of range.
bool detectTask(TaskIdentity &task, std::string &error);

/// The tasks on node `nodeId` from Slurm's "2(x3),1" (two tasks on each of
/// the first three nodes, one on the fourth); 1 when it does not say.
int slurmTasksOnNode(const std::string &tasksPerNode, int nodeId);

/// Splits `graphs` over `tasks` tasks: longest estimated compile first, each
/// to the task with the least estimated work so far (ties: the lower rank).
/// Every task computes the same split from the same list.
std::vector<int> assignGraphs(const std::vector<GraphRecord> &graphs,
                              int tasks);

/// How long a task of a job on several nodes waits to see a task of
/// another node before it says that the cache directory is not shared. The
/// tasks write their heartbeat when they start, before their training
/// command runs, so by the first wait the others' are long there.
constexpr double kSharedCheckSeconds = 20;

/// The job directory `<cache root>/jobs/<job id>`.
class JobDirectory {
public:
  JobDirectory(std::string cacheRoot, TaskIdentity task);
  const std::string &path() const { return dir; }
  bool create(std::string &error);
  /// Touches this task's heartbeat (at most every few seconds).
  void heartbeat();
  /// Copies each graph file into the job directory (a node-local workdir is
  /// not visible to the other tasks) and publishes this task's manifest and
  /// how its training command ended.
  bool publishCollected(const std::vector<GraphRecord> &graphs,
                        bool commandFailed, const std::string &commandStatus,
                        std::string &error);
  /// Waits until every task published `suffix` ("manifest.jsonl",
  /// "results.json", "done"). `tick` runs between looks. Fails when a task's
  /// heartbeat stays unchanged for `leaseSeconds`, and, in a job on several
  /// nodes, when after `kSharedCheckSeconds` no task of another node has
  /// been seen: the cache directory is then not shared between the nodes.
  bool waitForAll(const std::string &suffix, double leaseSeconds,
                  const std::function<void()> &tick, std::string &error);
  /// The union of every task's graphs (first task's record wins) and which
  /// tasks' commands failed (rank -> status).
  bool readCollected(std::vector<GraphRecord> &graphs,
                     std::map<int, std::string> &failedCommands,
                     std::string &error);
  /// Writes / reads a task's results (JSON text).
  bool publishText(const std::string &suffix, const std::string &text,
                   std::string &error);
  bool readText(int rank, const std::string &suffix, std::string &text,
                std::string &error);
  /// Rank 0, after every task said "done": removes the job directory.
  void remove();

private:
  std::string fileOf(int rank, const std::string &suffix) const;
  std::string dir;
  TaskIdentity task;
  double lastBeat = -1e9;
};

} // namespace mlir::trn::parallel

#endif // TRN_PARALLELCOMPILE_CLUSTER_H
