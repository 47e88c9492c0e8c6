//===- Process.h - child processes for trn-parallel-compile -----*- C++ -*-===//
//
// Starting a command in its own process group with its output in a file,
// polling it without blocking, killing the whole group, and telling how it
// ended (exit status, signal, peak memory). POSIX only; no LLVM or MLIR, so
// that the parent of many compiler processes stays small.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_PARALLELCOMPILE_PROCESS_H
#define TRN_PARALLELCOMPILE_PROCESS_H

#include <cstdint>
#include <optional>
#include <string>
#include <sys/resource.h>
#include <sys/types.h>
#include <vector>

namespace mlir::trn::parallel {

/// How a child ended.
struct ExitStatus {
  bool exited = false; ///< exit() was called: `code` is valid
  int code = 0;
  int signal = 0;              ///< killed by this signal (when !exited)
  int64_t peakMemoryBytes = 0; ///< the child's peak RSS (ru_maxrss)
  double seconds = 0;          ///< wall time
  bool success() const { return exited && code == 0; }
  /// "exit status 1", "killed by SIGKILL".
  std::string describe() const;
};

/// A running child. Movable, not copyable; the destructor kills a child
/// that is still running (a parent that gives up leaves no orphans).
class Child {
public:
  Child() = default;
  Child(Child &&other) noexcept;
  Child &operator=(Child &&other) noexcept;
  Child(const Child &) = delete;
  Child &operator=(const Child &) = delete;
  ~Child();

  /// Starts `argv` with `environment` ("NAME=value" entries replacing the
  /// inherited ones of the same name) in a new process group; stdout and
  /// stderr go to `logPath` (truncated) unless it is empty (inherited).
  /// `stdinNull` gives the child /dev/null as stdin.
  static std::optional<Child> start(const std::vector<std::string> &argv,
                                    const std::vector<std::string> &environment,
                                    const std::string &logPath, bool stdinNull,
                                    std::string &error);

  pid_t pid() const { return childPid; }
  bool running() const { return childPid > 0; }
  double elapsedSeconds() const;
  /// Reaps the child if it has ended (never blocks).
  std::optional<ExitStatus> poll();
  /// Blocks until the child ends.
  ExitStatus wait();
  /// Sends `signal` to the child's whole process group.
  void killGroup(int signal);

private:
  pid_t childPid = -1;
  double startedAt = 0;
  ExitStatus reap(int status, const ::rusage &usage);
};

/// Seconds on a monotonic clock.
double monotonicSeconds();

/// Name of a signal ("SIGKILL"), or "signal N".
std::string signalName(int signal);

/// The last `maxLines` lines of a file (at most `maxBytes` read from its
/// end); empty when it cannot be read.
std::string tailOfFile(const std::string &path, int maxLines,
                       int64_t maxBytes = 64 * 1024);

/// The directory holding this process's executable.
std::string executableDirectory();

} // namespace mlir::trn::parallel

#endif // TRN_PARALLELCOMPILE_PROCESS_H
