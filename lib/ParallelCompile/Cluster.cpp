//===- Cluster.cpp - several tasks of one compile job ---------------------===//

#include "trn/ParallelCompile/Cluster.h"

#include "trn/ParallelCompile/Process.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <numeric>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace mlir::trn::parallel {

namespace {

std::optional<std::string> env(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
}

bool parseInt(const std::string &text, int &out) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoi(text);
  return true;
}

/// Reads an integer variable; false with `error` when it is malformed.
bool readInt(const char *name, int &out, std::string &error) {
  std::optional<std::string> value = env(name);
  if (!value)
    return true;
  if (!parseInt(*value, out)) {
    error = std::string(name) + "='" + *value + "' is not a task number";
    return false;
  }
  return true;
}

/// Writes `text` to `path` through a temporary and a rename, so that a
/// reader sees nothing or everything.
bool writeAtomically(const std::string &path, const std::string &text,
                     std::string &error) {
  std::string temp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      error = "cannot write " + temp + ": " + std::strerror(errno);
      std::remove(temp.c_str());
      return false;
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    error = "cannot publish " + path + ": " + std::strerror(errno);
    std::remove(temp.c_str());
    return false;
  }
  return true;
}

bool readFile(const std::string &path, std::string &text) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  text = buffer.str();
  return true;
}

bool exists(const std::string &path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

} // namespace

std::string TaskIdentity::describe() const {
  std::ostringstream text;
  text << "task " << rank << " of " << size;
  if (!launcher.empty())
    text << " (" << launcher << " job " << jobId << ", node " << nodeId << ")";
  return text.str();
}

/// The node a task runs on, as its heartbeat names it so that a task can
/// tell whether it sees tasks of other nodes: the host and the launcher's
/// node number (several Slurm nodes may share a host in a test cluster).
static std::string nodeName(const TaskIdentity &task) {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0)
    std::strcpy(name, "unknown-host");
  return std::string(name) + "#" + std::to_string(task.nodeId);
}

int slurmTasksOnNode(const std::string &tasksPerNode, int nodeId) {
  std::stringstream groups(tasksPerNode);
  int node = 0;
  for (std::string group; std::getline(groups, group, ',');) {
    int tasks = 0, repeat = 1;
    if (std::sscanf(group.c_str(), "%d(x%d)", &tasks, &repeat) < 1 ||
        tasks < 1 || repeat < 1)
      return 1;
    if (nodeId < node + repeat)
      return tasks;
    node += repeat;
  }
  return 1;
}

bool detectTask(TaskIdentity &task, std::string &error) {
  task = TaskIdentity();
  // An srun step's task. A batch script (sbatch without srun) has
  // SLURM_NTASKS of the allocation but is one process: SLURM_STEP_NUM_TASKS
  // is set only inside a step.
  if (env("SLURM_PROCID") && env("SLURM_STEP_NUM_TASKS") &&
      env("SLURM_JOB_ID")) {
    task.launcher = "slurm";
    if (!readInt("SLURM_PROCID", task.rank, error) ||
        !readInt("SLURM_STEP_NUM_TASKS", task.size, error) ||
        !readInt("SLURM_NODEID", task.nodeId, error) ||
        !readInt("SLURM_LOCALID", task.localRank, error))
      return false;
    const char *nodes = env("SLURM_STEP_NUM_NODES")  ? "SLURM_STEP_NUM_NODES"
                        : env("SLURM_JOB_NUM_NODES") ? "SLURM_JOB_NUM_NODES"
                                                     : nullptr;
    if (nodes && !readInt(nodes, task.nodes, error))
      return false;
    task.tasksOnNode = slurmTasksOnNode(
        env("SLURM_STEP_TASKS_PER_NODE").value_or(""), task.nodeId);
    task.jobId =
        *env("SLURM_JOB_ID") + "." +
        env("SLURM_STEP_ID").value_or(env("SLURM_STEPID").value_or("0"));
  } else if (env("OMPI_COMM_WORLD_RANK") && env("OMPI_COMM_WORLD_SIZE")) {
    task.launcher = "mpi";
    if (!readInt("OMPI_COMM_WORLD_RANK", task.rank, error) ||
        !readInt("OMPI_COMM_WORLD_SIZE", task.size, error) ||
        !readInt("OMPI_COMM_WORLD_LOCAL_RANK", task.localRank, error))
      return false;
    int localSize = task.size;
    if (env("OMPI_COMM_WORLD_LOCAL_SIZE") &&
        !readInt("OMPI_COMM_WORLD_LOCAL_SIZE", localSize, error))
      return false;
    task.nodes = localSize < task.size ? 2 : 1;
    task.tasksOnNode = std::max(1, localSize);
    // Open MPI names each mpirun's job; the host keeps two mpiruns on
    // different hosts apart.
    std::optional<std::string> job = env("PMIX_NAMESPACE");
    if (!job)
      job = env("OMPI_MCA_ess_base_jobid");
    if (!job) {
      error = "mpirun task without PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid: "
              "cannot tell which job it belongs to";
      return false;
    }
    task.jobId = "mpi-" + *job;
  }
  if (task.size < 1 || task.rank >= task.size) {
    error = "task " + std::to_string(task.rank) + " of " +
            std::to_string(task.size) + " is out of range";
    return false;
  }
  for (char &c : task.jobId)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-')
      c = '_';
  return true;
}

std::vector<int> assignGraphs(const std::vector<GraphRecord> &graphs,
                              int tasks) {
  std::vector<size_t> order(graphs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (graphs[a].estimatedSeconds != graphs[b].estimatedSeconds)
      return graphs[a].estimatedSeconds > graphs[b].estimatedSeconds;
    return graphs[a].key < graphs[b].key;
  });
  std::vector<double> load(std::max(1, tasks), 0.0);
  std::vector<int> owner(graphs.size(), 0);
  for (size_t index : order) {
    int best = int(std::min_element(load.begin(), load.end()) - load.begin());
    owner[index] = best;
    // A graph without an estimate still counts, so that they spread out.
    load[best] += std::max(graphs[index].estimatedSeconds, 1e-3);
  }
  return owner;
}

JobDirectory::JobDirectory(std::string cacheRoot, TaskIdentity task)
    : dir(std::move(cacheRoot) + "/jobs/" + task.jobId), task(std::move(task)) {
}

std::string JobDirectory::fileOf(int rank, const std::string &suffix) const {
  return dir + "/task-" + std::to_string(rank) + "." + suffix;
}

bool JobDirectory::create(std::string &error) {
  for (const std::string &path :
       {dir.substr(0, dir.rfind('/')), dir, dir + "/graphs"})
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot create the job directory " + path + ": " +
              std::strerror(errno);
      return false;
    }
  // A file this task left there in an earlier run of the same job id (an
  // mpirun namespace reused) must not be mistaken for this run's.
  for (const char *suffix :
       {"manifest.jsonl", "command.json", "results.json", "done"})
    std::remove(fileOf(task.rank, suffix).c_str());
  heartbeat();
  return true;
}

void JobDirectory::heartbeat() {
  double now = monotonicSeconds();
  if (now - lastBeat < 2.0)
    return;
  lastBeat = now;
  // The content changes with every beat, so a reader sees a change even
  // where mtimes are coarse or cached.
  std::ofstream out(fileOf(task.rank, "alive"), std::ios::trunc);
  out << getpid() << " " << now << " " << nodeName(task) << "\n";
}

bool JobDirectory::publishCollected(const std::vector<GraphRecord> &graphs,
                                    bool commandFailed,
                                    const std::string &commandStatus,
                                    std::string &error) {
  std::string lines;
  for (const GraphRecord &graph : graphs) {
    std::string shared = dir + "/graphs/" + graph.key + ".mlir";
    if (!exists(shared)) {
      std::string text;
      if (!readFile(graph.graphPath, text)) {
        error = "cannot read " + graph.graphPath;
        return false;
      }
      if (!writeAtomically(shared, text, error))
        return false;
    }
    nlohmann::json record = {
        {"key", graph.key},
        {"graph", shared},
        {"graph_name", graph.graphName},
        {"flags", graph.flags},
        {"ops", graph.ops},
        {"elements", graph.elements},
        {"estimated_compile_seconds", graph.estimatedSeconds},
        {"estimated_compile_memory_bytes", graph.estimatedMemoryBytes},
        {"hbm_bytes_estimate", graph.hbmBytesEstimate},
        {"input_summary", graph.inputSummary},
        {"script", graph.script},
        {"call_site", graph.callSite}};
    lines += record.dump() + "\n";
  }
  nlohmann::json command = {{"failed", commandFailed},
                            {"status", commandStatus}};
  // The manifest is the marker the others wait for: written last.
  return writeAtomically(fileOf(task.rank, "command.json"),
                         command.dump() + "\n", error) &&
         writeAtomically(fileOf(task.rank, "manifest.jsonl"), lines, error);
}

bool JobDirectory::waitForAll(const std::string &suffix, double leaseSeconds,
                              const std::function<void()> &tick,
                              std::string &error) {
  struct Watch {
    std::string signature;
    double since = 0;
  };
  std::vector<Watch> watches(task.size);
  double start = monotonicSeconds();
  for (Watch &watch : watches)
    watch.since = start;
  const std::string node = nodeName(task);
  bool otherNodeSeen = task.nodes < 2;
  while (true) {
    heartbeat();
    bool all = true;
    for (int rank = 0; rank < task.size; ++rank) {
      bool published = exists(fileOf(rank, suffix));
      if (published && otherNodeSeen)
        continue;
      std::string beat;
      readFile(fileOf(rank, "alive"), beat);
      // "pid time node": a task on another node wrote it here.
      size_t nodeAt = beat.find_last_of(' ');
      if (nodeAt != std::string::npos &&
          beat.substr(nodeAt + 1, beat.find_last_not_of("\n") - nodeAt) != node)
        otherNodeSeen = true;
      if (published)
        continue;
      all = false;
      double now = monotonicSeconds();
      if (!otherNodeSeen && now - start > kSharedCheckSeconds) {
        error = "after " + std::to_string(int(now - start)) +
                " s this task sees no task of the job's other nodes in " + dir +
                ": the cache directory is not shared between the " +
                std::to_string(task.nodes) +
                " nodes (the default, /var/tmp/trn-compile-cache, is "
                "node-local); give --cache-dir (or TRN_CACHE_DIR) a "
                "directory on a filesystem every node mounts";
        return false;
      }
      Watch &watch = watches[rank];
      if (beat != watch.signature) {
        watch.signature = beat;
        watch.since = now;
      } else if (now - watch.since > leaseSeconds) {
        error = "task " + std::to_string(rank) + " of " +
                std::to_string(task.size) + " has not been heard from for " +
                std::to_string(int(now - watch.since)) +
                " s (it failed, was killed, or never started); see its output";
        return false;
      }
    }
    if (all)
      return true;
    if (tick)
      tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

bool JobDirectory::readCollected(std::vector<GraphRecord> &graphs,
                                 std::map<int, std::string> &failedCommands,
                                 std::string &error) {
  for (int rank = 0; rank < task.size; ++rank) {
    if (!readManifest(fileOf(rank, "manifest.jsonl"), graphs, error))
      return false;
    std::string text;
    if (!readFile(fileOf(rank, "command.json"), text)) {
      error = "cannot read " + fileOf(rank, "command.json");
      return false;
    }
    nlohmann::json command =
        nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (command.is_object() && command.value("failed", false))
      failedCommands[rank] = command.value("status", "failed");
  }
  return true;
}

bool JobDirectory::publishText(const std::string &suffix,
                               const std::string &text, std::string &error) {
  return writeAtomically(fileOf(task.rank, suffix), text, error);
}

bool JobDirectory::readText(int rank, const std::string &suffix,
                            std::string &text, std::string &error) {
  if (!readFile(fileOf(rank, suffix), text)) {
    error = "cannot read " + fileOf(rank, suffix);
    return false;
  }
  return true;
}

void JobDirectory::remove() {
  for (const std::string &sub : {dir + "/graphs", dir}) {
    if (DIR *handle = opendir(sub.c_str())) {
      while (dirent *entry = readdir(handle)) {
        std::string name = entry->d_name;
        if (name != "." && name != ".." && name != "graphs")
          std::remove((sub + "/" + name).c_str());
      }
      closedir(handle);
    }
    rmdir(sub.c_str());
  }
}

} // namespace mlir::trn::parallel
