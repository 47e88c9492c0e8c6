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

constexpr int kExitUsage = 2;

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

struct Spec {
  const char *name;
  bool takesValue;
};

const std::vector<Spec> &specs() {
  static const std::vector<Spec> table = {
      {"command", true},
      {"cache-dir", true},
      {"workdir", true},
      {"manifest", true},
      {"num-parallel", true},
      {"max-steps", true},
      {"timeout-per-graph", true},
      {"retries", true},
      {"retry-failed", false},
      {"flags", true},
      {"json", true},
      {"quiet", false},
      {"ignore-script-error", false},
      {"compiler", true},
      {"version", false},
      {"help", false},
  };
  return table;
}

std::optional<int> parseCount(const std::string &text, int minimum) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  int value = std::stoi(text);
  if (value < minimum)
    return std::nullopt;
  return value;
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
  bool sawSeparator = false;
  std::string flagsOption;
  for (int i = 1; i < argc; ++i) {
    std::string token = argv[i];
    if (token == "--") {
      for (int j = i + 1; j < argc; ++j)
        options.trainingCommand.push_back(argv[j]);
      sawSeparator = true;
      break;
    }
    if (token.size() < 2 || token[0] != '-')
      return "unexpected argument '" + token +
             "'; put the training command after '--': trn-parallel-compile "
             "[options] -- <command ...>";
    std::string name, value;
    bool hasValue = false;
    if (token == "-j" || token == "-q" || token == "-h") {
      name = token == "-j" ? "num-parallel" : token == "-q" ? "quiet" : "help";
    } else if (token.rfind("-j", 0) == 0 && token[1] == 'j' &&
               token.size() > 2 && token[2] != '-') {
      name = "num-parallel";
      value = token.substr(2);
      hasValue = true;
    } else if (token.rfind("--", 0) == 0) {
      std::string body = token.substr(2);
      size_t eq = body.find('=');
      name = body.substr(0, eq);
      if (eq != std::string::npos) {
        value = body.substr(eq + 1);
        hasValue = true;
      }
      // The anchor's users type --num_parallel.
      for (char &c : name)
        if (c == '_')
          c = '-';
    } else {
      return "unknown option '" + token + "' (see trn-parallel-compile --help)";
    }
    const Spec *spec = nullptr;
    for (const Spec &candidate : specs())
      if (name == candidate.name)
        spec = &candidate;
    if (!spec) {
      std::string message = "unknown option '" + token + "'";
      const Spec *best = nullptr;
      size_t bestDistance = 3;
      for (const Spec &candidate : specs()) {
        size_t distance = cache::editDistance(name, candidate.name);
        if (distance < bestDistance) {
          bestDistance = distance;
          best = &candidate;
        }
      }
      // A codegen flag given directly (normalizeFlags knows it) belongs in
      // --flags.
      std::string flagError;
      bool isCodegenFlag = mlir::trn::normalizeFlags({token}, flagError) ||
                           flagError.find("unknown flag") == std::string::npos;
      if (isCodegenFlag)
        message += "; codegen flags go in --flags \"" + token + " ...\"";
      else if (best)
        message += "; did you mean '--" + std::string(best->name) + "'?";
      else
        message += " (see trn-parallel-compile --help)";
      return message;
    }
    if (spec->takesValue && !hasValue) {
      if (i + 1 >= argc || std::string(argv[i + 1]) == "--")
        return "option '--" + name + "' needs a value";
      value = argv[++i];
    } else if (!spec->takesValue && hasValue) {
      return "option '--" + name + "' takes no value";
    }

    if (name == "command") {
      std::optional<parallel::Command> command = parallel::parseCommand(value);
      if (!command)
        return "unknown --command '" + value +
               "'; one of collect-and-compile, collect, compile, analyze, "
               "clean, clear-locks";
      options.command = *command;
    } else if (name == "cache-dir") {
      options.cacheDir = value;
    } else if (name == "workdir") {
      options.workdir = value;
    } else if (name == "manifest") {
      options.manifest = value;
    } else if (name == "num-parallel") {
      std::optional<int> count = parseCount(value, 1);
      if (!count)
        return "--num-parallel '" + value + "' is not a positive integer";
      options.numParallel = *count;
    } else if (name == "max-steps") {
      std::optional<int> count = parseCount(value, 1);
      if (!count)
        return "--max-steps '" + value + "' is not a positive integer";
      options.maxSteps = *count;
    } else if (name == "timeout-per-graph") {
      std::optional<double> seconds = parseDuration(value);
      if (!seconds || *seconds <= 0)
        return "--timeout-per-graph '" + value +
               "' is not a duration (e.g. 90s, 30m, 2h)";
      options.timeoutPerGraph = *seconds;
    } else if (name == "retries") {
      std::optional<int> count = parseCount(value, 0);
      if (!count)
        return "--retries '" + value + "' is not a non-negative integer";
      options.retries = *count;
    } else if (name == "retry-failed") {
      options.retryFailed = true;
    } else if (name == "flags") {
      flagsOption = value;
    } else if (name == "json") {
      options.jsonPath = value;
    } else if (name == "quiet") {
      options.quiet = true;
    } else if (name == "ignore-script-error") {
      options.ignoreScriptError = true;
    } else if (name == "compiler") {
      options.compiler = value;
    } else if (name == "version") {
      version = true;
    } else if (name == "help") {
      help = true;
    }
  }
  if (help || version)
    return std::nullopt;

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
    std::cerr << "trn-parallel-compile: error: " << *problem << "\n";
    return kExitUsage;
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
