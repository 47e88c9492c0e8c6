//===- ParallelCompile.cpp - trace-then-compile before training -----------===//
//
// The parent stays small and single-threaded: it runs the training command,
// reads the manifest, asks the cache which graphs it already holds, and then
// polls worker processes (`trn-cc compile --cache-only`, one per graph, each
// in its own process group) every few milliseconds. A worker that crashes,
// is killed or passes its timeout loses only its own graph. The cache does
// the publishing and the per-key locking, so two tools (or two nodes)
// compiling the same graph compile it once.
//
//===----------------------------------------------------------------------===//

#include "trn/ParallelCompile/ParallelCompile.h"

#include "trn/Cache/Cache.h"
#include "trn/Cache/Key.h"
#include "trn/Cache/Text.h"
#include "trn/ParallelCompile/Cluster.h"
#include "trn/ParallelCompile/Manifest.h"
#include "trn/ParallelCompile/Process.h"
#include "trn/Support/CommandLineValues.h"
#include "trnrt/File.h"
#include "trnrt/Target.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <pwd.h>
#include <sched.h>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace mlir::trn::parallel {

namespace cache = mlir::trn::cache;

namespace {

constexpr const char *kTool = "trn-parallel-compile";
/// Memory assumed for a graph whose manifest record has no estimate.
constexpr int64_t kDefaultGraphMemory = int64_t(512) << 20;
constexpr double kPollSeconds = 0.02;

void say(const std::string &message) {
  std::cerr << kTool << ": " << message << "\n";
}

/// Writes a --json report whole ("-": stdout); false after saying why not.
bool writeJson(const std::string &path, const nlohmann::json &report) {
  std::string text = report.dump(2) + "\n";
  std::cout.flush();
  std::string error;
  if (trnrt::writeFileAtomically(path, text.data(), text.size(), error))
    return true;
  say("error: cannot write --json: " + error);
  return false;
}

bool makeDirectories(const std::string &path, std::string &error) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/')
    partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty())
      continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot create " + partial + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat info {};
  if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    error = path + " is not a directory";
    return false;
  }
  return true;
}

std::string absolutePath(const std::string &path) {
  if (path.empty() || path[0] == '/')
    return path;
  char buffer[4096];
  if (!getcwd(buffer, sizeof(buffer)))
    return path;
  return std::string(buffer) + "/" + path;
}

std::string runId() {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return std::string(stamp) + "-" + std::to_string(getpid());
}

/// Every manifest*.jsonl in `directory`, oldest name first.
std::vector<std::string> manifestsIn(const std::string &directory) {
  std::vector<std::string> found;
  if (DIR *dir = opendir(directory.c_str())) {
    while (dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name.rfind("manifest", 0) == 0 && name.size() > 6 &&
          name.substr(name.size() - 6) == ".jsonl")
        found.push_back(directory + "/" + name);
    }
    closedir(dir);
  }
  std::sort(found.begin(), found.end());
  return found;
}

//===----------------------------------------------------------------------===//
// Graph states and the summary
//===----------------------------------------------------------------------===//

enum class Status {
  Pending,
  Running,
  Compiled,      ///< compiled by this run
  Cached,        ///< already in the cache (or compiled meanwhile by another)
  CachedFailure, ///< a failed compile in the cache, not retried
  Failed,
};

struct GraphJob {
  GraphRecord record;
  Status status = Status::Pending;
  std::string reason; ///< why it failed
  bool transient = false;
  int attempts = 0;
  double seconds = 0; ///< compile wall time (last attempt)
  int64_t peakMemoryBytes = 0;
  std::string logPath;
  std::string reportPath;
  // While running.
  std::optional<Child> child;
  bool timedOut = false;
};

const char *statusName(Status status) {
  switch (status) {
  case Status::Pending:
    return "pending";
  case Status::Running:
    return "running";
  case Status::Compiled:
    return "compiled";
  case Status::Cached:
    return "cached";
  case Status::CachedFailure:
    return "failed (cached)";
  case Status::Failed:
    return "failed";
  }
  return "?";
}

std::optional<Status> statusFromName(const std::string &name) {
  for (Status status : {Status::Pending, Status::Running, Status::Compiled,
                        Status::Cached, Status::CachedFailure, Status::Failed})
    if (name == statusName(status))
      return status;
  return std::nullopt;
}

/// A graph's outcome as --json and the job's results files write it.
nlohmann::json jobRecord(const GraphJob &job) {
  nlohmann::json record = {
      {"key", job.record.key},
      {"graph", job.record.graphPath},
      {"graph_name", job.record.graphName},
      {"status", statusName(job.status)},
      {"seconds", job.seconds},
      {"peak_memory_bytes", job.peakMemoryBytes},
      {"attempts", job.attempts},
      {"estimated_seconds", job.record.estimatedSeconds},
      {"estimated_memory_bytes", job.record.estimatedMemoryBytes}};
  if (job.record.stage >= 0)
    record["stage"] = job.record.stage;
  if (!job.reason.empty())
    record["reason"] = job.reason;
  if (!job.logPath.empty())
    record["log"] = job.logPath;
  return record;
}

/// Reads back what jobRecord wrote (the record's other fields come from the
/// job's manifests).
bool fromJobRecord(const nlohmann::json &record, GraphJob &job) {
  if (!record.is_object())
    return false;
  std::optional<Status> status =
      statusFromName(record.value("status", std::string()));
  if (!status)
    return false;
  job.status = *status;
  job.reason = record.value("reason", std::string());
  job.logPath = record.value("log", std::string());
  job.seconds = record.value("seconds", 0.0);
  job.peakMemoryBytes = record.value("peak_memory_bytes", int64_t(0));
  job.attempts = record.value("attempts", 0);
  return true;
}

/// One progress line, redrawn on a terminal, printed every few seconds
/// otherwise.
class Progress {
public:
  Progress(bool quiet, size_t total) : quiet(quiet), total(total) {
    terminal = isatty(STDERR_FILENO);
    start = monotonicSeconds();
  }
  void update(size_t done, size_t running, size_t failed, size_t cached,
              double etaSeconds, bool force = false) {
    if (quiet)
      return;
    double now = monotonicSeconds();
    double interval = terminal ? 0.2 : 5.0;
    if (!force && now - lastPrint < interval)
      return;
    lastPrint = now;
    std::ostringstream line;
    if (terminal) {
      constexpr int kWidth = 24;
      int filled = total ? int(kWidth * done / total) : kWidth;
      line << "\r[" << std::string(filled, '#')
           << std::string(kWidth - filled, '.') << "] ";
    } else {
      line << kTool << ": ";
    }
    line << done << "/" << cache::countOf(total, "graph") << ", " << running
         << " running, " << failed << " failed, " << cached
         << " cached, elapsed " << formatSeconds(now - start);
    if (etaSeconds >= 0 && done < total)
      line << ", ETA " << formatSeconds(etaSeconds);
    std::string text = line.str();
    if (terminal) {
      // Pad over a longer previous line.
      if (text.size() < lastWidth)
        text += std::string(lastWidth - text.size(), ' ');
      lastWidth = text.size();
      std::cerr << text << std::flush;
    } else {
      std::cerr << text << "\n";
    }
  }
  /// Ends a terminal progress line before other output.
  void finish() {
    if (!quiet && terminal && lastWidth)
      std::cerr << "\n";
    lastWidth = 0;
  }

private:
  bool quiet;
  size_t total;
  bool terminal = false;
  double start = 0, lastPrint = -1e9;
  size_t lastWidth = 0;
};

//===----------------------------------------------------------------------===//
// The run
//===----------------------------------------------------------------------===//

class Runner {
public:
  explicit Runner(const Options &options) : options(options) {}
  int run();

private:
  int collect(const std::string &manifest, bool &scriptFailed);
  /// Compiles `graphs` (those the cache lacks); fills `jobs`. False when
  /// the cache cannot be opened (after saying why).
  bool compileGraphs(std::vector<GraphRecord> graphs,
                     std::vector<GraphJob> &jobs, double &wallSeconds);
  int compile(std::vector<GraphRecord> graphs);
  /// The multi-task path: publish, meet, split, compile, gather.
  int compileAsJob(std::vector<GraphRecord> graphs, bool scriptFailed);
  int analyze(const std::vector<GraphRecord> &graphs,
              const std::vector<ProblemRecord> &problems);
  int maintenance();
  bool readManifests(const std::vector<std::string> &paths,
                     std::vector<GraphRecord> &graphs,
                     std::vector<ProblemRecord> &problems);
  bool startJob(GraphJob &job);
  void finishJob(GraphJob &job, const ExitStatus &exit, cache::Cache &store);
  int summarize(std::vector<GraphJob> &jobs, double wallSeconds);
  std::string compilerPath() const;

  const Options &options;
  std::string workdir, graphsDir, logsDir, cacheRoot;
  std::string scriptStatus; ///< how the training command ended, for JSON
  TaskIdentity task;
  std::optional<JobDirectory> job;
  /// Runs in every polling loop (the job's heartbeat).
  std::function<void()> tick;
  /// Prefix of this task's messages in a multi-task job.
  std::string taskLabel;
};

std::string Runner::compilerPath() const {
  return options.compiler.empty() ? executableDirectory() + "/trn-cc"
                                  : options.compiler;
}

int Runner::run() {
  if (options.command == Command::Clean ||
      options.command == Command::ClearLocks)
    return maintenance();

  workdir = absolutePath(options.workdir.empty() ? defaultWorkdir()
                                                 : options.workdir);
  graphsDir = workdir + "/graphs";
  logsDir = workdir + "/logs";
  std::string error;
  if (!makeDirectories(graphsDir, error) || !makeDirectories(logsDir, error)) {
    say("error: workdir: " + error + " (choose another with --workdir)");
    return 1;
  }
  // Absolute: the job directory's manifests name graph files by path, and
  // a relative root would be resolved again from the manifest's directory.
  cacheRoot = cache::resolveRoot(options.cacheDir);
  if (!cacheRoot.empty() && cacheRoot.front() != '/') {
    std::error_code ignored;
    std::filesystem::path absolute =
        std::filesystem::absolute(cacheRoot, ignored);
    if (!ignored)
      cacheRoot = absolute.lexically_normal().string();
  }
  if (!detectTask(task, error)) {
    say("error: " + error);
    return 1;
  }
  bool asJob = task.multi() && (options.command == Command::CollectAndCompile ||
                                options.command == Command::Compile);
  if (asJob) {
    // The job directory lives in the cache root, which must exist first.
    cache::CacheOptions cacheOptions;
    cacheOptions.root = cacheRoot;
    cache::Result<cache::Cache> store = cache::Cache::open(cacheOptions);
    if (!store) {
      say("error: " + store.error);
      return 1;
    }
    job.emplace(cacheRoot, task);
    if (!job->create(error)) {
      say("error: " + error);
      return 1;
    }
    tick = [this] { job->heartbeat(); };
    taskLabel = "task " + std::to_string(task.rank) + ": ";
    if (!options.quiet)
      say(taskLabel + "this is " + task.describe() + "; the tasks meet in " +
          job->path());
  }

  std::vector<std::string> manifests;
  bool scriptFailed = false;
  if (options.command == Command::CollectAndCompile ||
      options.command == Command::Collect ||
      (options.command == Command::Analyze &&
       !options.trainingCommand.empty())) {
    std::string manifest = graphsDir + "/manifest-" + runId() + ".jsonl";
    if (int status = collect(manifest, scriptFailed)) {
      // In a job the others wait for this task's graphs: it publishes what
      // it has and the job fails together.
      if (!asJob || status == 2)
        return status;
      scriptFailed = true;
    }
    manifests.push_back(manifest);
  } else if (!options.manifest.empty()) {
    manifests.push_back(absolutePath(options.manifest));
  } else {
    manifests = manifestsIn(graphsDir);
    if (manifests.empty()) {
      say("error: no manifest in " + graphsDir +
          "; run 'trn-parallel-compile --command collect -- <training "
          "command>' first, or pass --manifest FILE");
      return 1;
    }
  }

  std::vector<GraphRecord> graphs;
  std::vector<ProblemRecord> problems;
  if (!readManifests(manifests, graphs, problems))
    return 1;
  if (asJob)
    return compileAsJob(std::move(graphs), scriptFailed);
  if (options.command == Command::Analyze)
    return analyze(graphs, problems);
  if (graphs.empty()) {
    say("error: the training command traced no graph (" + manifests.front() +
        " is empty): does it wrap its training step with trn.compile_step?");
    return 1;
  }
  if (options.command == Command::Collect) {
    say("collected " + cache::countOf(graphs.size(), "graph") + " into " +
        manifests.front() +
        "; 'trn-parallel-compile --command compile' compiles them");
    return scriptFailed ? 1 : 0;
  }
  int status = compile(std::move(graphs));
  return scriptFailed && status == 0 ? 1 : status;
}

bool Runner::readManifests(const std::vector<std::string> &paths,
                           std::vector<GraphRecord> &graphs,
                           std::vector<ProblemRecord> &problems) {
  for (const std::string &path : paths) {
    std::string error;
    if (access(path.c_str(), F_OK) != 0)
      continue; // the command ended before its first step call
    if (!readManifest(path, graphs, error, &problems)) {
      say("error: " + error);
      return false;
    }
  }
  return true;
}

/// Runs the training command in extraction mode. Its output is written to a
/// log and echoed (unless --quiet) by following that log, so the tail is at
/// hand when the command fails.
int Runner::collect(const std::string &manifest, bool &scriptFailed) {
  if (options.trainingCommand.empty()) {
    say("error: no training command: trn-parallel-compile [options] -- "
        "<command ...>");
    return 2;
  }
  std::string log =
      logsDir + "/collect-" + manifest.substr(manifest.rfind("manifest-") + 9);
  log = log.substr(0, log.size() - 6) + ".log";
  std::vector<std::string> env = {"TRN_EXTRACT_GRAPHS_ONLY=1",
                                  "TRN_GRAPH_MANIFEST=" + manifest,
                                  "TRN_CACHE_DIR=" + cacheRoot};
  if (options.maxSteps > 0)
    env.push_back("TRN_EXTRACT_MAX_STEPS=" + std::to_string(options.maxSteps));
  if (!options.flags.empty())
    env.push_back("TRN_CC_FLAGS=" + options.flags);
  if (options.command == Command::Analyze)
    env.push_back("TRN_ANALYZE=1"); // record unsupported ops, go on
  // The script's own output is line-buffered into the log even when Python
  // writes to a file.
  env.push_back("PYTHONUNBUFFERED=1");
  if (!options.quiet)
    say("collecting graphs: running the training command in extraction mode "
        "(log " +
        log + ")");
  std::string error;
  std::optional<Child> child = Child::start(options.trainingCommand, env, log,
                                            /*stdinNull=*/false, error);
  if (!child) {
    say("error: " + error);
    return 1;
  }
  std::ifstream follow;
  // Under srun or mpirun each line is labelled with its task ("[task 2] "):
  // the tasks' outputs interleave in the job's log. A line is written once
  // it is whole (the rest at the end).
  const std::string label =
      task.multi() ? "[task " + std::to_string(task.rank) + "] " : "";
  std::string partial;
  auto echo = [&](bool last) {
    if (options.quiet)
      return;
    if (!follow.is_open()) {
      follow.open(log, std::ios::binary);
      if (!follow.is_open())
        return;
    }
    // The script's output; on stderr when --json - has stdout.
    std::ostream &out =
        options.jsonPath == trnrt::kStandardOutput ? std::cerr : std::cout;
    char buffer[8192];
    while (follow.read(buffer, sizeof(buffer)) || follow.gcount() > 0) {
      std::string_view chunk(buffer, size_t(follow.gcount()));
      if (label.empty()) {
        out << chunk;
      } else {
        partial.append(chunk);
        size_t start = 0;
        for (size_t end; (end = partial.find('\n', start)) != std::string::npos;
             start = end + 1)
          out << label
              << std::string_view(partial).substr(start, end + 1 - start);
        partial.erase(0, start);
      }
      if (follow.gcount() < std::streamsize(sizeof(buffer)))
        break;
    }
    if (last && !partial.empty()) {
      out << label << partial << "\n";
      partial.clear();
    }
    follow.clear();
    out.flush();
  };
  std::optional<ExitStatus> exit;
  while (!(exit = child->poll())) {
    echo(/*last=*/false);
    if (tick)
      tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  echo(/*last=*/true);
  scriptStatus = exit->describe();
  if (exit->success())
    return 0;
  if (options.quiet) {
    // Its output was not shown: the end of it, where the error is.
    say("error: the training command failed (" + exit->describe() +
        "); the last lines of its output (" + log + "):");
    std::istringstream lines(tailOfFile(log, 15));
    for (std::string line; std::getline(lines, line);)
      std::cerr << "  | " << line << "\n";
  } else {
    // Its output (a traceback, say) is on the terminal already: name its
    // last line rather than print it again.
    std::string lastLine = tailOfFile(log, 1);
    while (!lastLine.empty() &&
           std::isspace(static_cast<unsigned char>(lastLine.back())))
      lastLine.pop_back();
    say("error: the training command failed (" + exit->describe() + ")" +
        (lastLine.empty() ? std::string() : ": " + lastLine) +
        " (its output is above and in " + log + ")");
  }
  if (!options.ignoreScriptError)
    return 1;
  say("--ignore-script-error: compiling the graphs collected before it "
      "failed");
  scriptFailed = true;
  return 0;
}

int Runner::maintenance() {
  std::vector<std::string> argv = {
      executableDirectory() + "/trn-cache",
      options.command == Command::Clean ? "clean" : "clear-locks"};
  if (!options.cacheDir.empty()) {
    argv.push_back("--cache-dir");
    argv.push_back(options.cacheDir);
  }
  for (const std::string &arg : options.maintenanceArgs)
    argv.push_back(arg);
  std::string error;
  std::optional<Child> child =
      Child::start(argv, {}, /*logPath=*/"", /*stdinNull=*/false, error);
  if (!child) {
    say("error: " + error);
    return 1;
  }
  // trn-cache says 2 for any error; here 2 means a bad command line.
  ExitStatus exit = child->wait();
  return exit.success() ? 0 : 1;
}

bool Runner::startJob(GraphJob &job) {
  ++job.attempts;
  std::string stem = logsDir + "/" + job.record.key;
  job.logPath = stem + ".log";
  job.reportPath = stem + ".report.json";
  std::remove(job.reportPath.c_str());
  std::vector<std::string> argv = {
      compilerPath(), "compile", job.record.graphPath, "--cache-only",
      "--cache-dir",  cacheRoot, "--report",           job.reportPath};
  if (options.retryFailed)
    argv.push_back("--retry-failed");
  for (const std::string &flag : job.record.flags)
    argv.push_back(flag);
  // A worker with many threads would fight its neighbours for the cores.
  std::vector<std::string> env = {"OMP_NUM_THREADS=1",
                                  "OPENBLAS_NUM_THREADS=1"};
  std::string error;
  job.child = Child::start(argv, env, job.logPath, /*stdinNull=*/true, error);
  job.timedOut = false;
  if (!job.child) {
    job.status = Status::Failed;
    job.reason = error;
    job.transient = false;
    return false;
  }
  job.status = Status::Running;
  return true;
}

/// Classifies a finished worker (docs/parallel-compile.md, "Failures").
void Runner::finishJob(GraphJob &job, const ExitStatus &exit,
                       cache::Cache &store) {
  job.child.reset();
  job.seconds = exit.seconds;
  job.peakMemoryBytes = exit.peakMemoryBytes;
  job.transient = false;
  if (exit.success()) {
    job.status = Status::Compiled;
    std::ifstream in(job.reportPath);
    nlohmann::json report =
        nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (report.is_object() && report.value("cache", "") == "hit")
      job.status = Status::Cached; // another process compiled it meanwhile
    // job.seconds stays the worker's wall time (start-up, compile, storing
    // into the cache): what compiling it one by one would cost too.
    return;
  }
  job.status = Status::Failed;
  std::string tail = tailOfFile(job.logPath, 1);
  const std::string prefix = "trn-cc: error: ";
  if (tail.rfind(prefix, 0) == 0)
    tail = tail.substr(prefix.size());
  if (!exit.exited) {
    if (job.timedOut) {
      job.reason = "timeout: still compiling after " +
                   formatSeconds(options.timeoutPerGraph) +
                   " (--timeout-per-graph)";
    } else if (exit.signal == SIGKILL || exit.signal == SIGTERM ||
               exit.signal == SIGINT || exit.signal == SIGHUP) {
      job.reason = "killed by " + signalName(exit.signal) +
                   (exit.signal == SIGKILL ? " (out of memory?)" : "");
      job.transient = true;
    } else {
      job.reason = "compiler crashed (" + signalName(exit.signal) +
                   "): a trn-cc bug; please report it with the graph file";
    }
    return;
  }
  if (exit.code == 2) {
    job.reason = "bad compile flags: " + tail;
    return;
  }
  // Exit status 1: a compile error leaves a failed entry in the cache;
  // anything else (I/O, a lock, a full disk) may pass on a retry.
  std::optional<cache::CacheKey> key = cache::CacheKey::parse(job.record.key);
  std::optional<cache::Entry> entry =
      key ? store.lookup(*key) : std::optional<cache::Entry>();
  if (entry && entry->status == cache::EntryStatus::Failed) {
    job.reason = "compile error: " +
                 (entry->diagnostic.empty() ? tail : entry->diagnostic);
    return;
  }
  job.reason = tail.empty() ? exit.describe() : tail;
  job.transient = true;
}

int Runner::compile(std::vector<GraphRecord> graphs) {
  std::vector<GraphJob> jobs;
  double wallSeconds = 0;
  if (!compileGraphs(expandPipelineStages(std::move(graphs)), jobs,
                     wallSeconds))
    return 1;
  return summarize(jobs, wallSeconds);
}

bool Runner::compileGraphs(std::vector<GraphRecord> graphs,
                           std::vector<GraphJob> &jobs, double &wallSeconds) {
  double start = monotonicSeconds();
  cache::CacheOptions cacheOptions;
  cacheOptions.root = cacheRoot;
  std::vector<std::string> warnings;
  cacheOptions.warn = [&](const std::string &message) {
    warnings.push_back(message);
  };
  cache::Result<cache::Cache> store = cache::Cache::open(cacheOptions);
  if (!store) {
    say("error: " + store.error);
    return false;
  }
  for (GraphRecord &record : graphs) {
    GraphJob job;
    job.record = std::move(record);
    jobs.push_back(std::move(job));
  }

  // What the cache already holds.
  for (GraphJob &job : jobs) {
    std::optional<cache::CacheKey> key = cache::CacheKey::parse(job.record.key);
    if (!key) {
      job.status = Status::Failed;
      job.reason = "the manifest's key is malformed";
      continue;
    }
    if (std::optional<cache::Entry> entry = store->lookup(*key)) {
      if (entry->status == cache::EntryStatus::Done) {
        job.status = Status::Cached;
        job.seconds = entry->metadata.compileSeconds;
        continue;
      }
      if (!options.retryFailed) {
        job.status = Status::CachedFailure;
        job.reason = "compile error (cached; --retry-failed recompiles): " +
                     entry->diagnostic;
        continue;
      }
    }
    if (access(job.record.graphPath.c_str(), R_OK) != 0) {
      job.status = Status::Failed;
      job.reason = "graph file " + job.record.graphPath + " is missing";
    }
  }
  // Graphs answered from the cache are requests too (the workers count
  // their own in trn-cc).
  cache::Statistics answered;
  for (const GraphJob &job : jobs) {
    if (job.status == Status::Cached)
      ++answered[cache::Counter::Hits];
    if (job.status == Status::CachedFailure)
      ++answered[cache::Counter::FailureHits];
  }
  store->addStatistics(answered);
  for (const std::string &warning : warnings)
    say("warning: " + warning);
  // A read-only cache (a shared cache a CI job fills) still answers which
  // graphs it holds; compiling into it would store nothing.
  if (store->readOnly())
    for (GraphJob &job : jobs)
      if (job.status == Status::Pending) {
        job.status = Status::Failed;
        job.reason = "not compiled: the cache is read-only (" +
                     store->readOnlyReason() +
                     "), so the result could not be stored; compile into a "
                     "writable --cache-dir";
      }

  // Longest first: the last graph to start should be a short one.
  std::vector<size_t> queue;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (jobs[i].status == Status::Pending)
      queue.push_back(i);
  std::stable_sort(queue.begin(), queue.end(), [&](size_t a, size_t b) {
    return jobs[a].record.estimatedSeconds > jobs[b].record.estimatedSeconds;
  });
  std::deque<size_t> pending(queue.begin(), queue.end());

  int64_t budget = memoryBudgetBytes(task.tasksOnNode);
  int parallel = options.numParallel > 0 ? options.numParallel
                                         : std::max(1, availableCpus());
  auto memoryOf = [&](const GraphJob &job) {
    return job.record.estimatedMemoryBytes > 0 ? job.record.estimatedMemoryBytes
                                               : kDefaultGraphMemory;
  };
  double estimatedTotal = 0;
  for (size_t index : pending)
    estimatedTotal += jobs[index].record.estimatedSeconds;
  if (!options.quiet) {
    size_t cached = jobs.size() - pending.size();
    say(taskLabel + cache::countOf(jobs.size(), "graph") + ": " +
        std::to_string(pending.size()) + " to compile, " +
        std::to_string(cached) + " already cached or failed before; " +
        std::to_string(parallel) + " workers, memory budget " +
        cache::formatSize(budget) +
        (task.tasksOnNode > 1
             ? " (this node's share for " +
                   cache::countOf(task.tasksOnNode, "task") + ")"
             : std::string()) +
        ", cache " + store->versionDir());
  }

  Progress progress(options.quiet, jobs.size());
  std::vector<size_t> running;
  int64_t memoryInUse = 0;
  double estimatedDone = 0, actualDone = 0;
  auto counts = [&](size_t &done, size_t &failed, size_t &cached) {
    done = failed = cached = 0;
    for (const GraphJob &job : jobs) {
      bool finished =
          job.status != Status::Pending && job.status != Status::Running;
      done += finished;
      failed +=
          job.status == Status::Failed || job.status == Status::CachedFailure;
      cached += job.status == Status::Cached;
    }
  };
  auto report = [&](bool force) {
    size_t done, failed, cached;
    counts(done, failed, cached);
    double eta = -1;
    if (estimatedDone > 0) {
      double remaining = 0;
      for (size_t index : pending)
        remaining += jobs[index].record.estimatedSeconds;
      for (size_t index : running)
        remaining += jobs[index].record.estimatedSeconds / 2;
      eta = remaining * (actualDone / estimatedDone) / parallel;
    }
    progress.update(done, running.size(), failed, cached, eta, force);
  };

  while (!pending.empty() || !running.empty()) {
    // Start what fits: the worker count and the memory budget (one worker
    // always runs, whatever its estimate).
    while (!pending.empty() && int(running.size()) < parallel) {
      GraphJob &next = jobs[pending.front()];
      if (!running.empty() && memoryInUse + memoryOf(next) > budget)
        break;
      size_t index = pending.front();
      pending.pop_front();
      if (startJob(next)) {
        running.push_back(index);
        memoryInUse += memoryOf(next);
      }
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(int(kPollSeconds * 1000)));
    if (tick)
      tick();
    for (size_t i = 0; i < running.size();) {
      GraphJob &job = jobs[running[i]];
      if (options.timeoutPerGraph > 0 && !job.timedOut &&
          job.child->elapsedSeconds() > options.timeoutPerGraph) {
        job.timedOut = true;
        job.child->killGroup(SIGKILL);
      }
      std::optional<ExitStatus> exit = job.child->poll();
      if (!exit) {
        ++i;
        continue;
      }
      memoryInUse -= memoryOf(job);
      finishJob(job, *exit, *store);
      if (job.status == Status::Compiled) {
        estimatedDone += job.record.estimatedSeconds;
        actualDone += job.seconds;
      }
      if (job.status == Status::Failed && job.transient &&
          job.attempts <= options.retries) {
        progress.finish();
        if (!options.quiet)
          say("retrying " + job.record.key + " (attempt " +
              std::to_string(job.attempts + 1) + "): " + job.reason);
        job.status = Status::Pending;
        pending.push_front(running[i]);
      }
      running.erase(running.begin() + i);
    }
    report(false);
  }
  report(true);
  progress.finish();
  (void)estimatedTotal;
  wallSeconds = monotonicSeconds() - start;
  return true;
}

int Runner::summarize(std::vector<GraphJob> &jobs, double wallSeconds) {
  size_t compiled = 0, cached = 0, failed = 0;
  double sequential = 0;
  for (const GraphJob &job : jobs) {
    compiled += job.status == Status::Compiled;
    cached += job.status == Status::Cached;
    failed +=
        job.status == Status::Failed || job.status == Status::CachedFailure;
    if (job.status == Status::Compiled || job.status == Status::Failed)
      sequential += job.seconds;
  }
  // The anchor's three lines, then what it does not say.
  say("Total graphs: " + std::to_string(jobs.size()));
  say("Total successful compilations: " + std::to_string(compiled));
  say("Total failed compilations: " + std::to_string(failed));
  say("Already cached: " + std::to_string(cached));
  std::set<std::string> pipelined;
  size_t stageJobs = 0;
  for (const GraphJob &job : jobs)
    if (job.record.stage >= 0) {
      ++stageJobs;
      pipelined.insert(job.record.graphPath);
    }
  if (stageJobs)
    say(std::to_string(stageJobs) + " of these are the stages of " +
        std::to_string(pipelined.size()) +
        " pipelined graph(s), each stage compiled and cached on its own");
  std::ostringstream timing;
  timing << "wall time " << formatSeconds(wallSeconds)
         << "; compiling one by one would take " << formatSeconds(sequential);
  say(timing.str());
  if (failed) {
    std::cerr << "failed graphs:\n";
    for (const GraphJob &job : jobs) {
      if (job.status != Status::Failed && job.status != Status::CachedFailure)
        continue;
      std::cerr << "  " << job.record.key << "  " << job.record.displayName();
      if (!job.record.inputSummary.empty())
        std::cerr << " (" << job.record.inputSummary << ")";
      std::cerr << "\n    reason: " << job.reason << "\n";
      if (!job.logPath.empty())
        std::cerr << "    log:    " << job.logPath << "\n";
      std::cerr << "    graph:  " << job.record.graphPath << "\n";
    }
  }

  if (!options.jsonPath.empty()) {
    nlohmann::json out;
    out["command"] = commandName(options.command);
    out["cache_dir"] = cacheRoot;
    out["workdir"] = workdir;
    if (!scriptStatus.empty())
      out["training_command"] = scriptStatus;
    out["summary"] = {{"graphs", jobs.size()},
                      {"compiled", compiled},
                      {"cached", cached},
                      {"failed", failed},
                      {"wall_seconds", wallSeconds},
                      {"sequential_seconds", sequential}};
    nlohmann::json records = nlohmann::json::array();
    for (const GraphJob &job : jobs)
      records.push_back(jobRecord(job));
    out["graphs"] = std::move(records);
    if (!writeJson(options.jsonPath, out))
      return 1;
  }
  return failed ? 1 : 0;
}

/// How long a task may stay silent before the others give up on it: its
/// heartbeat is rewritten every 2 s, and NFS may cache attributes for 60 s.
constexpr double kTaskLeaseSeconds = 120;

int Runner::compileAsJob(std::vector<GraphRecord> graphs, bool scriptFailed) {
  std::string error;
  auto fail = [&](const std::string &message) {
    say("error: " + taskLabel + message);
    return 1;
  };
  if (!job->publishCollected(graphs, scriptFailed, scriptStatus, error))
    return fail(error);
  if (!options.quiet)
    say(taskLabel + "published " + cache::countOf(graphs.size(), "graph") +
        "; waiting for the other tasks' graphs");
  if (!job->waitForAll("manifest.jsonl", kTaskLeaseSeconds, tick, error))
    return fail(error);
  std::vector<GraphRecord> all;
  std::map<int, std::string> failedCommands;
  if (!job->readCollected(all, failedCommands, error))
    return fail(error);

  bool ok = true;
  if (!failedCommands.empty() && !options.ignoreScriptError) {
    for (const auto &[rank, status] : failedCommands)
      say(taskLabel + "the training command of task " + std::to_string(rank) +
          " failed (" + status +
          "): nothing is compiled (--ignore-script-error compiles what was "
          "collected)");
    ok = false;
  } else if (all.empty()) {
    say(taskLabel + "error: no task's training command traced a graph: does "
                    "it wrap its training step with trn.compile_step?");
    ok = false;
  }

  // Each graph (a pipelined one: each stage) to one task, the same split
  // on every task.
  all = expandPipelineStages(std::move(all));
  std::vector<GraphJob> mine;
  double wallSeconds = 0;
  if (ok) {
    std::vector<int> owner = assignGraphs(all, task.size);
    std::vector<GraphRecord> share;
    for (size_t i = 0; i < all.size(); ++i)
      if (owner[i] == task.rank)
        share.push_back(all[i]);
    if (!compileGraphs(std::move(share), mine, wallSeconds))
      ok = false;
  }
  nlohmann::json results = {{"ok", ok},
                            {"wall_seconds", wallSeconds},
                            {"graphs", nlohmann::json::array()}};
  for (const GraphJob &graph : mine)
    results["graphs"].push_back(jobRecord(graph));
  if (!job->publishText("results.json", results.dump() + "\n", error))
    return fail(error);
  if (!job->waitForAll("results.json", kTaskLeaseSeconds, tick, error))
    return fail(error);

  // Every task reads every result: each exits with the job's status.
  std::map<std::string, size_t> indexOf;
  for (size_t i = 0; i < all.size(); ++i)
    indexOf.emplace(all[i].key, i);
  std::vector<GraphJob> everything;
  double jobWall = 0;
  bool jobOk = true;
  for (int rank = 0; rank < task.size; ++rank) {
    std::string text;
    if (!job->readText(rank, "results.json", text, error))
      return fail(error);
    nlohmann::json theirs =
        nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!theirs.is_object() || !theirs["graphs"].is_array())
      return fail("task " + std::to_string(rank) + "'s results are unreadable");
    jobOk = jobOk && theirs.value("ok", false);
    jobWall = std::max(jobWall, theirs.value("wall_seconds", 0.0));
    for (const nlohmann::json &record : theirs["graphs"]) {
      GraphJob graph;
      auto it = indexOf.find(record.value("key", std::string()));
      if (it == indexOf.end() || !fromJobRecord(record, graph))
        return fail("task " + std::to_string(rank) +
                    "'s results name a graph no task collected");
      graph.record = all[it->second];
      if (task.size > 1 && rank != task.rank && !graph.reason.empty())
        graph.reason = "(task " + std::to_string(rank) + ") " + graph.reason;
      everything.push_back(std::move(graph));
    }
  }
  int status = 0;
  if (task.rank == 0 && jobOk) {
    status = summarize(everything, jobWall);
  } else {
    for (const GraphJob &graph : everything)
      if (graph.status == Status::Failed ||
          graph.status == Status::CachedFailure)
        status = 1;
    if (task.rank != 0 && !options.quiet)
      say(taskLabel + "compiled its share of the job's " +
          cache::countOf(everything.size(), "graph") +
          "; task 0 prints the job's summary");
  }
  if (!jobOk || !failedCommands.empty())
    status = 1;
  if (!jobOk && task.rank == 0)
    say("the job failed: see the tasks' messages above");

  // Rank 0 removes the job directory once every task has read the results.
  job->publishText("done", "", error);
  if (task.rank == 0 && job->waitForAll("done", 30, tick, error))
    job->remove();
  return status;
}

/// The target a graph's flags name (default trn1), for its HBM size.
const trnrt::Target &targetOf(const GraphRecord &graph) {
  for (size_t i = 0; i < graph.flags.size(); ++i) {
    std::string name;
    if (graph.flags[i].rfind("--target=", 0) == 0)
      name = graph.flags[i].substr(9);
    else if (graph.flags[i] == "--target" && i + 1 < graph.flags.size())
      name = graph.flags[i + 1];
    if (const trnrt::Target *target = trnrt::lookupTarget(name))
      return *target;
  }
  return trnrt::trn1Target();
}

/// `--command analyze`: what the manifest says, in seconds, without
/// compiling (docs/parallel-compile.md, "analyze").
int Runner::analyze(const std::vector<GraphRecord> &graphs,
                    const std::vector<ProblemRecord> &problems) {
  if (graphs.empty() && problems.empty()) {
    say("error: the training command traced no graph: does it wrap its "
        "training step with trn.compile_step?");
    return 1;
  }
  int64_t ops = 0, largestCompileMemory = 0, largestHbm = 0;
  double seconds = 0;
  size_t overHbm = 0;
  nlohmann::json records = nlohmann::json::array();
  std::printf("%-18s %-14s %8s %12s %12s %24s\n", "graph", "key", "ops",
              "compile", "compile mem", "HBM per NeuronCore");
  for (const GraphRecord &graph : graphs) {
    const trnrt::Target &target = targetOf(graph);
    ops += graph.ops;
    seconds += graph.estimatedSeconds;
    largestCompileMemory =
        std::max(largestCompileMemory, graph.estimatedMemoryBytes);
    largestHbm = std::max(largestHbm, graph.hbmBytesEstimate);
    bool fits = uint64_t(graph.hbmBytesEstimate) <= target.hbmBytesPerCore;
    overHbm += !fits;
    char hbm[64];
    std::snprintf(hbm, sizeof(hbm), "%s of %s%s",
                  cache::formatSize(graph.hbmBytesEstimate).c_str(),
                  cache::formatSize(int64_t(target.hbmBytesPerCore)).c_str(),
                  fits ? "" : " (!)");
    std::printf("%-18s %-14s %8lld %12s %12s %24s\n", graph.graphName.c_str(),
                graph.key.substr(0, 14).c_str(), (long long)graph.ops,
                formatSeconds(graph.estimatedSeconds).c_str(),
                cache::formatSize(graph.estimatedMemoryBytes).c_str(), hbm);
    records.push_back(
        {{"key", graph.key},
         {"graph", graph.graphPath},
         {"graph_name", graph.graphName},
         {"ops", graph.ops},
         {"estimated_compile_seconds", graph.estimatedSeconds},
         {"estimated_compile_memory_bytes", graph.estimatedMemoryBytes},
         {"hbm_bytes_estimate", graph.hbmBytesEstimate},
         {"hbm_bytes_per_core", target.hbmBytesPerCore},
         {"fits", fits},
         {"target", target.name}});
  }
  // With --json - the report has stdout to itself.
  std::ostream &out =
      options.jsonPath == trnrt::kStandardOutput ? std::cerr : std::cout;
  out << cache::countOf(graphs.size(), "graph") << ", "
      << cache::countOf(ops, "op") << "; compiling them one by one: ~"
      << formatSeconds(seconds) << "; largest compile memory ~"
      << cache::formatSize(largestCompileMemory) << "; largest HBM need ~"
      << cache::formatSize(largestHbm) << " per NeuronCore\n";
  if (overHbm)
    out << cache::countOf(overHbm, "graph")
        << (overHbm == 1 ? " needs" : " need")
        << " more HBM than one NeuronCore has (!): they "
           "cannot run unpartitioned; partition them (tensor or "
           "pipeline parallelism) or shrink the batch\n";
  if (!problems.empty()) {
    out << cache::countOf(problems.size(), "step call")
        << " could not be traced (the script went on past them):\n";
    for (const ProblemRecord &problem : problems)
      out << "  " << problem.graphName << ": " << problem.message << "\n";
  }
  if (!options.jsonPath.empty()) {
    nlohmann::json out = {{"command", "analyze"}, {"graphs", records}};
    nlohmann::json unsupported = nlohmann::json::array();
    for (const ProblemRecord &problem : problems)
      unsupported.push_back({{"graph_name", problem.graphName},
                             {"message", problem.message},
                             {"call_site", problem.callSite}});
    out["unsupported"] = std::move(unsupported);
    out["summary"] = {{"graphs", graphs.size()},
                      {"ops", ops},
                      {"estimated_compile_seconds", seconds},
                      {"largest_hbm_bytes", largestHbm},
                      {"over_hbm", overHbm},
                      {"unsupported", problems.size()}};
    if (!writeJson(options.jsonPath, out))
      return 1;
  }
  return problems.empty() && overHbm == 0 ? 0 : 1;
}

} // namespace

const char *commandName(Command command) {
  switch (command) {
  case Command::CollectAndCompile:
    return "collect-and-compile";
  case Command::Collect:
    return "collect";
  case Command::Compile:
    return "compile";
  case Command::Analyze:
    return "analyze";
  case Command::Clean:
    return "clean";
  case Command::ClearLocks:
    return "clear-locks";
  }
  return "?";
}

std::optional<Command> parseCommand(const std::string &name) {
  for (Command command :
       {Command::CollectAndCompile, Command::Collect, Command::Compile,
        Command::Analyze, Command::Clean, Command::ClearLocks})
    if (name == commandName(command))
      return command;
  return std::nullopt;
}

std::string defaultWorkdir() {
  const char *tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string user;
  if (struct passwd *entry = getpwuid(getuid()))
    user = entry->pw_name;
  else
    user = std::to_string(getuid());
  return base + "/trn-parallel-compile-" + user;
}

namespace {

/// The first number in `path`, or -1 ("max", a missing file).
int64_t readNumber(const std::string &path) {
  std::ifstream in(path);
  int64_t value = -1;
  if (!(in >> value))
    return -1;
  return value;
}

} // namespace

int64_t cgroupMemoryRoomBytes(const std::string &selfCgroup,
                              const std::string &cgroupRoot) {
  // v2: "0::/path", files memory.max and memory.current; v1: "N:memory:/path"
  // (or a list of controllers with memory among them) under memory/, files
  // memory.limit_in_bytes and memory.usage_in_bytes.
  std::ifstream in(selfCgroup);
  std::string line, v2Path, v1Path;
  while (std::getline(in, line)) {
    size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos)
      continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty())
      v2Path = path;
    std::stringstream list(controllers);
    for (std::string controller; std::getline(list, controller, ',');)
      if (controller == "memory")
        v1Path = path;
  }
  struct Layout {
    std::string dir, limit, usage;
  };
  std::vector<std::pair<std::string, Layout>> layouts;
  if (!v1Path.empty())
    layouts.push_back({v1Path,
                       {cgroupRoot + "/memory", "memory.limit_in_bytes",
                        "memory.usage_in_bytes"}});
  if (!v2Path.empty())
    layouts.push_back({v2Path, {cgroupRoot, "memory.max", "memory.current"}});
  int64_t room = -1;
  for (const auto &[path, layout] : layouts) {
    // The cgroup and its ancestors; a cgroup namespace shows its own root
    // only, so a path that is not there is read at the root.
    std::string relative = path;
    while (true) {
      std::string dir = layout.dir + relative;
      int64_t limit = readNumber(dir + "/" + layout.limit);
      int64_t usage = readNumber(dir + "/" + layout.usage);
      // v1 spells "no limit" as a huge page-rounded number.
      if (limit > 0 && limit < (int64_t(1) << 60) && usage >= 0) {
        int64_t left = std::max<int64_t>(0, limit - usage);
        room = room < 0 ? left : std::min(room, left);
      }
      if (relative.empty() || relative == "/")
        break;
      relative = relative.substr(0, relative.find_last_of('/'));
    }
  }
  return room;
}

int64_t memoryBudgetBytes(int tasksOnNode) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  int64_t value = 0, available = int64_t(4) << 30;
  std::string unit;
  while (in >> name >> value >> unit)
    if (name == "MemAvailable:") {
      available = value * 1024;
      break;
    }
  int64_t room = cgroupMemoryRoomBytes();
  if (room >= 0)
    available = std::min(available, room);
  return available / 10 * 9 / std::max(1, tasksOnNode);
}

int availableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1, int(std::thread::hardware_concurrency()));
}

int run(const Options &options) { return Runner(options).run(); }

} // namespace mlir::trn::parallel
