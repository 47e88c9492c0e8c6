//===- ParallelCompile.h - trace-then-compile before training ---*- C++ -*-===//
//
// What `trn-parallel-compile -- <training command>` does: run the command in
// extraction mode (python/trn/_extract.py) so that it writes every distinct
// training-step graph and a manifest, then compile the graphs the cache does
// not hold yet in worker processes (`trn-cc compile --cache-only`), longest
// first, under a memory budget, retrying transient failures, with progress,
// a summary in the anchor's words and an exit status that is 0 only when
// every graph compiled or was cached. docs/parallel-compile.md is the guide.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_PARALLELCOMPILE_PARALLELCOMPILE_H
#define TRN_PARALLELCOMPILE_PARALLELCOMPILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::trn::parallel {

enum class Command {
  CollectAndCompile,
  Collect,
  Compile,
  Analyze,
  Clean,
  ClearLocks
};

/// "collect-and-compile", ... (the --command spelling).
const char *commandName(Command command);
std::optional<Command> parseCommand(const std::string &name);

struct Options {
  Command command = Command::CollectAndCompile;
  /// The training command (after `--`).
  std::vector<std::string> trainingCommand;
  /// As given (--cache-dir); "" means TRN_CACHE_DIR, else the default.
  std::string cacheDir;
  /// Graphs, manifests and logs; "" means the default under /tmp.
  std::string workdir;
  /// --manifest for `compile` / `analyze`; "" means every manifest in the
  /// workdir.
  std::string manifest;
  /// Worker processes; 0 chooses from the cores and the memory budget.
  int numParallel = 0;
  /// TRN_EXTRACT_MAX_STEPS for the collect run; 0 leaves the default.
  int maxSteps = 0;
  /// A compile past this is killed and reported as a timeout; 0 = none.
  double timeoutPerGraph = 0;
  /// Extra attempts for transient failures (killed, I/O errors).
  int retries = 0;
  /// Recompile graphs whose compile failed before (a cached failure).
  bool retryFailed = false;
  /// Codegen flags added to every graph (--flags and TRN_CC_FLAGS), one
  /// string as a user types them.
  std::string flags;
  std::string jsonPath;
  bool quiet = false;
  /// Compile what was collected even if the training command failed.
  bool ignoreScriptError = false;
  /// The trn-cc to run; "" means the one next to this executable.
  std::string compiler;
  /// Arguments for `clean` / `clear-locks` (passed to trn-cache).
  std::vector<std::string> maintenanceArgs;
};

/// Runs `options.command`; returns the process exit status (0 only when
/// every graph compiled or was cached; 1 otherwise; the caller handles 2 for
/// a bad command line). Messages go to stderr, the script's output to
/// stdout.
int run(const Options &options);

/// The default workdir: $TMPDIR (else /tmp)/trn-parallel-compile-<user>.
std::string defaultWorkdir();

/// Memory the compile workers of one task may use together: 90% of what
/// the node has available (MemAvailable, and at most what the process's
/// memory cgroup, v1 or v2, still allows), shared evenly by the job's
/// `tasksOnNode` tasks on this node.
int64_t memoryBudgetBytes(int tasksOnNode = 1);

/// Room a memory cgroup leaves: the least of limit - usage over the
/// cgroup of `selfCgroup` (a /proc/<pid>/cgroup file) and its ancestors,
/// under `cgroupRoot` (/sys/fs/cgroup); -1 when no limit is set or none
/// can be read.
int64_t
cgroupMemoryRoomBytes(const std::string &selfCgroup = "/proc/self/cgroup",
                      const std::string &cgroupRoot = "/sys/fs/cgroup");

/// CPUs this process may run on.
int availableCpus();

} // namespace mlir::trn::parallel

#endif // TRN_PARALLELCOMPILE_PARALLELCOMPILE_H
