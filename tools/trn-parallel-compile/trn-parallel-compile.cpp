//===- trn-parallel-compile.cpp - trace-then-compile before training ------===//
//
//   trn-parallel-compile [options] -- <training command ...>
//
// Parses the command line and calls the library (lib/ParallelCompile).
// docs/parallel-compile.md is the guide, docs/cli.md the reference.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Cache.h"
#include "trn/Cache/Key.h"
#include "trn/Cache/Text.h"
#include "trn/Driver/CompileFlags.h"
#include "trn/Driver/ToolCommandLine.h"
#include "trn/ParallelCompile/ParallelCompile.h"
#include "trn/Support/CommandLineValues.h"

#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace mlir::trn;
namespace parallel = mlir::trn::parallel;

namespace {

const char *kUsage =
    R"(usage: trn-parallel-compile [options] -- <training command ...>

Runs the training command in extraction mode (each distinct training-step
graph is traced and written, nothing runs on the device, the script stops
after a few steps), then compiles every graph the compile cache does not hold
yet, in parallel worker processes. The training run afterwards finds every
graph in the cache.

commands (--command, default collect-and-compile):
  collect-and-compile    collect this run's graphs, then compile them
  collect                only run the command and write the graphs and manifest
  compile                compile the graphs of the workdir's manifests (or --manifest)
  analyze                estimates per graph from the manifest, without compiling
  clean                  what 'trn-cache clean' does (failed and incomplete entries)
  clear-locks            what 'trn-cache clear-locks' does (stale locks)

options:
  --cache-dir DIR            compile cache (default: $TRN_CACHE_DIR, else /var/tmp/trn-compile-cache)
  --workdir DIR              graphs, manifests and logs (default: $TMPDIR/trn-parallel-compile-$USER);
                             never deletes a file it did not create
  --manifest FILE            the manifest for compile / analyze
  -j, --num-parallel N       compile workers (default: the CPUs, within a memory budget)
  --max-steps N              stop the training command after N step calls
                             (default: two optimizer steps in a row with no new graph)
  --timeout-per-graph DUR    kill a compile that runs longer (e.g. 30m); it counts as failed
  --retries N                extra attempts for transient failures (killed, I/O) (default 0)
  --retry-failed             recompile graphs whose earlier compile failed
  --flags "FLAGS"            codegen flags for every graph (added after $TRN_CC_FLAGS);
                             the training run needs the same TRN_CC_FLAGS to hit the cache
  --json FILE                one record per graph (key, status, reason, time, memory, log)
  -q, --quiet                no progress and no script output; errors and the summary only
  --ignore-script-error      compile the graphs collected before the command failed
  --compiler PATH            the trn-cc to run (default: the one next to this tool)
  --version, -h/--help

exit status: 0 every graph compiled or was cached; 1 a graph failed, the
command failed, or a cache/workdir error; 2 bad command line
)";

enum FlagId {
  CommandFlag,
  CacheDir,
  Workdir,
  Manifest,
  NumParallel,
  MaxSteps,
  TimeoutPerGraph,
  Retries,
  RetryFailed,
  Flags,
  Json,
  Quiet,
  IgnoreScriptError,
  Compiler
};

const ToolCommandLine &commandLine() {
  static const ToolCommandLine line = [] {
    ToolCommandLine line;
    line.tool = "trn-parallel-compile";
    line.notOurs = "codegen flags go in --flags \"{option} ...\"";
    line.takesCommandAfterSeparator = true;
    line.flags = {{"command", true, 0, CommandFlag},
                  {"cache-dir", true, 0, CacheDir},
                  {"workdir", true, 0, Workdir},
                  {"manifest", true, 0, Manifest},
                  {"num-parallel", true, 'j', NumParallel},
                  {"max-steps", true, 0, MaxSteps},
                  {"timeout-per-graph", true, 0, TimeoutPerGraph},
                  {"retries", true, 0, Retries},
                  {"retry-failed", false, 0, RetryFailed},
                  {"flags", true, 0, Flags, "", /*valueMayBeAFlag=*/true},
                  {"json", true, 0, Json},
                  {"quiet", false, 'q', Quiet},
                  {"ignore-script-error", false, 0, IgnoreScriptError},
                  {"compiler", true, 0, Compiler}};
    return line;
  }();
  return line;
}

std::vector<std::string> splitFlags(const std::string &text) {
  std::istringstream in(text);
  std::vector<std::string> tokens;
  for (std::string token; in >> token;)
    tokens.push_back(token);
  return tokens;
}

/// Parses argv; returns a one-line message for a usage error.
std::optional<std::string> parse(int argc, char **argv,
                                 parallel::Options &options, bool &help,
                                 bool &version) {
  std::string flagsOption;
  auto onFlag = [&](const ToolFlagUse &use) -> std::optional<std::string> {
    const std::string value = use.value.value_or("");
    auto count = [&](int &out, long long minimum,
                     const char *what) -> std::optional<std::string> {
      std::optional<long long> number = parseInteger(value, minimum);
      if (!number || *number > (1 << 30))
        return badValue(use, what);
      out = static_cast<int>(*number);
      return std::nullopt;
    };
    switch (use.flag->id) {
    case CommandFlag:
      if (std::optional<parallel::Command> command =
              parallel::parseCommand(value)) {
        options.command = *command;
        return std::nullopt;
      }
      if (std::string suggestion =
              didYouMean(value, {"collect-and-compile", "collect", "compile",
                                 "analyze", "clean", "clear-locks"});
          !suggestion.empty())
        return badValue(use, "a command") + suggestion;
      return badValue(use, "a command (one of collect-and-compile, collect, "
                           "compile, analyze, clean, clear-locks)");
    case CacheDir:
      options.cacheDir = value;
      break;
    case Workdir:
      options.workdir = value;
      break;
    case Manifest:
      options.manifest = value;
      break;
    case NumParallel:
      return count(options.numParallel, 1, "a positive integer");
    case MaxSteps:
      return count(options.maxSteps, 1, "a positive integer");
    case TimeoutPerGraph: {
      std::optional<double> seconds = parseDuration(value);
      if (!seconds || *seconds <= 0)
        return badValue(use, "a duration (e.g. 90s, 30m, 2h)");
      options.timeoutPerGraph = *seconds;
      break;
    }
    case Retries:
      return count(options.retries, 0, "a non-negative integer");
    case RetryFailed:
      options.retryFailed = true;
      break;
    case Flags:
      flagsOption = value;
      break;
    case Json:
      options.jsonPath = value;
      break;
    case Quiet:
      options.quiet = true;
      break;
    case IgnoreScriptError:
      options.ignoreScriptError = true;
      break;
    case Compiler:
      options.compiler = value;
      break;
    }
    return std::nullopt;
  };
  ParsedToolArgs parsed;
  if (auto problem =
          parseToolArgs(std::vector<std::string>(argv + 1, argv + argc),
                        commandLine(), onFlag, parsed))
    return problem;
  help = parsed.help;
  version = parsed.version;
  if (help || version)
    return std::nullopt;
  if (!parsed.positionals.empty())
    return "unexpected argument '" + parsed.positionals.front() +
           "'; put the training command after '--': trn-parallel-compile "
           "[options] -- <command ...>";
  options.trainingCommand = parsed.command;
  bool sawSeparator = parsed.sawSeparator;

  // Flags: TRN_CC_FLAGS first, then --flags, checked now rather than in
  // every worker.
  const char *envFlags = std::getenv("TRN_CC_FLAGS");
  std::string combined = envFlags ? envFlags : "";
  if (!flagsOption.empty())
    combined += (combined.empty() ? "" : " ") + flagsOption;
  if (!combined.empty()) {
    std::string error;
    if (!mlir::trn::normalizeFlags(splitFlags(combined), error))
      return "--flags / TRN_CC_FLAGS: " + error;
  }
  options.flags = combined;

  using parallel::Command;
  bool collects = options.command == Command::CollectAndCompile ||
                  options.command == Command::Collect;
  bool maintenance = options.command == Command::Clean ||
                     options.command == Command::ClearLocks;
  if (collects && options.trainingCommand.empty())
    return std::string(sawSeparator ? "the training command after '--' is empty"
                                    : "no training command: "
                                      "trn-parallel-compile [options] -- "
                                      "<command ...>");
  if ((options.command == Command::Compile || maintenance) &&
      !options.trainingCommand.empty())
    return "--command " + std::string(parallel::commandName(options.command)) +
           " takes no training command";
  if (!options.manifest.empty() && !(options.command == Command::Compile ||
                                     options.command == Command::Analyze))
    return "--manifest applies to --command compile and analyze";
  if (options.command == Command::Analyze && !options.manifest.empty() &&
      !options.trainingCommand.empty())
    return "--command analyze takes --manifest or a training command, not "
           "both";
  if (maintenance &&
      (!options.workdir.empty() || options.numParallel || options.maxSteps ||
       options.timeoutPerGraph > 0 || options.retries || options.retryFailed ||
       !flagsOption.empty() || !options.jsonPath.empty() ||
       options.ignoreScriptError || !options.compiler.empty()))
    return "--command " + std::string(parallel::commandName(options.command)) +
           " takes only --cache-dir";
  if (!collects && options.maxSteps)
    return "--max-steps applies when a training command runs (collect, "
           "collect-and-compile)";
  if (!collects && options.ignoreScriptError)
    return "--ignore-script-error applies when a training command runs "
           "(collect, collect-and-compile)";
  return std::nullopt;
}

} // namespace

int main(int argc, char **argv) {
  parallel::Options options;
  bool help = false, version = false;
  if (std::optional<std::string> problem =
          parse(argc, argv, options, help, version)) {
    return usageError("trn-parallel-compile", *problem);
  }
  if (help) {
    std::cout << kUsage;
    return 0;
  }
  if (version) {
    std::cout << cache::toolVersion("trn-parallel-compile");
    return 0;
  }
  return parallel::run(options);
}
