//===- trn-cc.cpp - compile one trn graph to a NeuronCore artifact -------===//
//
// trn-cc compile GRAPH.mlir -o OUT, trn-cc --analyze GRAPH.mlir, and the
// options in kUsage and kFlags (docs/cli.md is the reference). A thin tool:
// the command line is split and the codegen flags normalised by
// trn/Driver/CompileFlags.h (so that spelling, order and defaults never
// change the cache key), the compile is compileGraph's
// (trn/Driver/CompileGraph.h, the Python extension's too) and the report
// Report.h's. Compiles run in this process; crash isolation in worker
// processes is the job of trn-parallel-compile.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Key.h"
#include "trn/Cache/Text.h"
#include "trn/Driver/CompileFlags.h"
#include "trn/Driver/CompileGraph.h"
#include "trn/Driver/Report.h"
#include "trn/Driver/ToolCommandLine.h"
#include "trn/Support/CommandLineValues.h"
#include "trn/Support/OutputFile.h"
#include "trnrt/File.h"

#include "trnrt/Target.h"

#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;
namespace cache = mlir::trn::cache;

namespace {

using trn::kExitFailure;
using trn::kExitOk;

const char *kUsage = R"(usage: trn-cc compile GRAPH.mlir -o OUT [options]
       trn-cc --analyze GRAPH.mlir [options] [--json]
       trn-cc --version

Compiles a trn training-step graph into a NeuronCore artifact, through the
compile cache. --analyze compiles without writing anything and reports the
instruction counts, FLOPs, memory peaks and estimated device time.

codegen flags (normalised into the cache key; order and spelling do not matter):
)";

// After the codegen flags (the shared table's) and trn-cc's own (kFlags).
const char *kExitStatus = R"(  -h, --help                       this help
  --version                        versions and targets

exit status: 0 success, 1 compile error or cache/file error, 2 bad command line
)";

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

struct Options {
  std::string graphPath;
  std::string outputPath;
  std::string cacheDir;
  std::string reportPath;
  std::string lockTimeout;
  std::optional<double> lockTimeoutSeconds;
  bool noCache = false, cacheOnly = false, retryFailed = false;
  bool printIR = false, timing = false, verbose = false, quiet = false;
  bool json = false, analyze = false, version = false, help = false;
  /// Codegen flags exactly as given (tokens), for normalizeFlags and for the
  /// cache entry's metadata.
  std::vector<std::string> codegenArgs;
};

/// trn-cc's own flags, each setting one field of Options; the codegen flags
/// are the shared table's (trn/Driver/CompileFlags.h).
struct OwnFlag {
  std::string_view name;
  char letter;                ///< a one-letter alias, or 0
  std::string Options::*text; ///< set to the flag's value
  bool Options::*on;          ///< set by the switch
  std::string_view help;
};

const OwnFlag kFlags[] = {
    {"output", 'o', &Options::outputPath, nullptr,
     "-o, --output FILE                the artifact (compile)"},
    {"cache-dir", 0, &Options::cacheDir, nullptr,
     "--cache-dir DIR                  cache root (default: $TRN_CACHE_DIR, "
     "else /var/tmp/trn-compile-cache)"},
    {"no-cache", 0, nullptr, &Options::noCache,
     "--no-cache                       compile without reading or writing the "
     "cache"},
    {"cache-only", 0, nullptr, &Options::cacheOnly,
     "--cache-only                     compile into the cache, write no "
     "artifact (no -o)"},
    {"retry-failed", 0, nullptr, &Options::retryFailed,
     "--retry-failed                   recompile a graph whose cached compile "
     "failed"},
    {"lock-timeout", 0, &Options::lockTimeout, nullptr,
     "--lock-timeout DURATION          longest wait for another process "
     "compiling the same graph (default 1h)"},
    {"report", 0, &Options::reportPath, nullptr,
     "--report FILE                    write the compile report as JSON"},
    {"json", 0, nullptr, &Options::json,
     "--json                           print the --analyze report as JSON"},
    {"mlir-print-ir-after-all", 0, nullptr, &Options::printIR,
     "--mlir-print-ir-after-all        print the IR after every pass to "
     "stderr"},
    {"timing", 0, nullptr, &Options::timing,
     "--timing                         print the time of every phase and pass "
     "to stderr"},
    {"verbose", 'v', nullptr, &Options::verbose,
     "-v, --verbose                    say more: key parts, cache entry, "
     "report table"},
    {"quiet", 'q', nullptr, &Options::quiet,
     "-q, --quiet                      print nothing but errors"},
    {"analyze", 0, nullptr, &Options::analyze, ""},
};

const trn::ToolCommandLine &commandLine() {
  static const trn::ToolCommandLine line = [] {
    trn::ToolCommandLine line;
    line.tool = "trn-cc";
    line.takesCodegenFlags = true;
    line.notOurs = "trn-cc compiles one graph in this process; "
                   "trn-parallel-compile runs compiles in workers";
    for (const OwnFlag &flag : kFlags)
      line.flags.push_back({flag.name, flag.text != nullptr, flag.letter,
                            int(&flag - kFlags), flag.help});
    return line;
  }();
  return line;
}

/// Parses argv into `options`; returns a one-line message on a usage error.
std::optional<std::string> parseCommandLine(int argc, char **argv,
                                            Options &options) {
  trn::ParsedToolArgs parsed;
  std::vector<std::string> &positionals = parsed.positionals;
  auto onFlag = [&](const trn::ToolFlagUse &use) -> std::optional<std::string> {
    const OwnFlag &flag = kFlags[use.flag->id];
    if (flag.on)
      options.*flag.on = true;
    else
      options.*flag.text = *use.value;
    if (flag.text == &Options::lockTimeout &&
        !(options.lockTimeoutSeconds = trn::parseDuration(*use.value)))
      return trn::badValue(use, "a duration (e.g. 90s, 15m, 2h)");
    return std::nullopt;
  };
  if (auto problem =
          trn::parseToolArgs(std::vector<std::string>(argv + 1, argv + argc),
                             commandLine(), onFlag, parsed))
    return problem;
  options.codegenArgs = parsed.codegenArgs;
  options.help = parsed.help;
  options.version = parsed.version;
  if (options.help || options.version)
    return std::nullopt;
  if (options.analyze) {
    if (positionals.empty())
      return std::string("--analyze needs a graph: trn-cc --analyze "
                         "GRAPH.mlir");
    if (positionals.front() == "compile")
      return std::string("--analyze is a command of its own: trn-cc "
                         "--analyze GRAPH.mlir (without 'compile')");
    if (positionals.size() > 1)
      return "unexpected argument '" + positionals[1] +
             "'; --analyze takes one graph";
    options.graphPath = positionals[0];
    if (!options.outputPath.empty())
      return std::string("--analyze writes no artifact; use 'trn-cc compile "
                         "GRAPH.mlir -o OUT' to emit one");
  } else {
    if (positionals.empty())
      return std::string("no command given: use 'trn-cc compile GRAPH.mlir "
                         "-o OUT', 'trn-cc --analyze GRAPH.mlir' or "
                         "'trn-cc --version' (see trn-cc --help)");
    if (positionals[0] != "compile") {
      std::string suggestion = trn::didYouMean(positionals[0], {"compile"});
      return "unknown command '" + positionals[0] + "'" +
             (suggestion.empty()
                  ? "; expected 'compile', --analyze or --version"
                  : suggestion);
    }
    if (positionals.size() < 2)
      return std::string("compile needs a graph: trn-cc compile GRAPH.mlir "
                         "-o OUT");
    if (positionals.size() > 2)
      return "unexpected argument '" + positionals[2] +
             "'; compile takes one graph";
    options.graphPath = positionals[1];
    if (options.cacheOnly && !options.outputPath.empty())
      return std::string("--cache-only compiles into the cache and writes no "
                         "artifact; drop -o");
    if (options.cacheOnly && options.noCache)
      return std::string("--cache-only and --no-cache exclude each other");
    if (options.outputPath.empty() && !options.cacheOnly)
      return std::string("compile needs an output: -o OUT (or --cache-only)");
    if (options.outputPath == "-")
      return std::string("-o - would write a binary artifact to stdout; name "
                         "a file");
    if (options.json)
      return std::string("--json applies to --analyze; for a compile use "
                         "--report FILE");
  }

  std::string error;
  if (!trn::normalizeFlags(options.codegenArgs, error))
    return error;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Compiling
//===----------------------------------------------------------------------===//

class TrnCC {
public:
  /// `freeIR`: false when the process ends right after.
  TrnCC(Options options, bool freeIR)
      : options(std::move(options)), freeIR(freeIR) {}
  int run();
  /// --timing: prints the report now (it is otherwise printed when the
  /// manager is destroyed, which a process ended by _Exit never does).
  void printTiming() {
    if (!options.timing)
      return;
    timing.stop();
    timingManager.print();
  }

private:
  int fail(const std::string &message) {
    llvm::errs() << "trn-cc: error: " << message << "\n";
    return kExitFailure;
  }
  void note(const std::string &message) {
    if (options.verbose)
      llvm::errs() << "trn-cc: " << message << "\n";
  }
  void warn(const std::string &message) {
    if (!options.quiet)
      llvm::errs() << "trn-cc: warning: " << message << "\n";
  }
  /// The one line that says what happened (after the output is written).
  void status(const std::string &line) {
    if (options.quiet)
      return;
    // An output written to stdout ("-") keeps stdout to itself.
    bool stdoutTaken = options.outputPath == trnrt::kStandardOutput ||
                       options.reportPath == trnrt::kStandardOutput;
    llvm::raw_ostream &out = stdoutTaken ? llvm::errs() : llvm::outs();
    out << "trn-cc: " << line << "\n";
    // Keep the order of stdout and stderr when both go to one pipe (-v).
    out.flush();
  }
  trn::GraphCompileRequest request();
  int report(const trnrt::Program &program, trn::CompileReport &report);

  Options options;
  bool freeIR;
  /// --timing: phases and passes, printed to stderr when trn-cc ends. The
  /// manager outlives (is declared before) the root scope.
  DefaultTimingManager timingManager;
  TimingScope timing;
  std::chrono::steady_clock::time_point start;
  /// --analyze with a mesh: what the fit check measured, for the report.
  std::optional<trn::MeshFootprint> measuredFootprint;
};

trn::GraphCompileRequest TrnCC::request() {
  trn::GraphCompileRequest request;
  request.graphPath = options.graphPath;
  request.codegenArgs = options.codegenArgs;
  request.useCache = !options.analyze && !options.noCache;
  request.cacheDir = options.cacheDir;
  request.retryFailed = options.retryFailed;
  request.lockTimeoutSeconds = options.lockTimeoutSeconds;
  request.checkMeshFit = options.analyze;
  request.wantProgram = true;
  request.printIRAfterAll = options.printIR;
  request.timing = &timing;
  request.freeIR = freeIR;
  request.warn = [this](const std::string &message) { warn(message); };
  request.detail = [this](const std::string &message) { note(message); };
  request.timingDetail = [](const std::string &message) {
    llvm::errs() << "trn-cc: " << message << "\n";
  };
  request.meshFootprint = [this](const trn::MeshFootprint &footprint,
                                 bool fits) {
    // With --json, stdout is the JSON alone: a pipeline's per-stage lines
    // go to stderr.
    measuredFootprint = footprint;
    llvm::raw_ostream &out = options.json ? llvm::errs() : llvm::outs();
    if (footprint.pipelined || (fits && !options.json))
      for (const std::string &line : trn::meshFootprintLines(footprint))
        out << line << "\n";
    // Shown at once: the compile and the estimate that follow take far
    // longer than the check.
    out.flush();
  };
  return request;
}

int TrnCC::run() {
  start = std::chrono::steady_clock::now();
  if (options.timing) {
    timingManager.setEnabled(true);
    timing = timingManager.getRootScope();
  }
  // Fail before any work on outputs that cannot be written.
  if (!options.analyze && !options.cacheOnly)
    if (auto problem = trn::checkOutputPath(options.outputPath, "-o"))
      return fail(*problem);
  if (!options.reportPath.empty())
    if (auto problem = trn::checkOutputPath(options.reportPath, "--report"))
      return fail(*problem);

  trn::GraphCompileResult result = trn::compileGraph(request());
  for (const std::string &warning : result.warnings)
    warn(warning);
  switch (result.failure) {
  case trn::GraphCompileFailure::None:
    break;
  case trn::GraphCompileFailure::Error:
    return fail(result.error);
  case trn::GraphCompileFailure::CacheUnavailable:
    return fail(result.error + " (--no-cache compiles without the cache)");
  case trn::GraphCompileFailure::CachedFailure:
    return fail(result.error + " (cached failure; --retry-failed recompiles)");
  case trn::GraphCompileFailure::UndecodableEntry:
    return fail(result.error +
                "; 'trn-cache clean' or --no-cache works around it");
  }
  trn::CompileReport report =
      trn::compileReportOf(result, options.analyze ? "analyze" : "compile");
  report.graphPath = options.graphPath;
  report.flags = options.codegenArgs;
  report.meshFootprint = measuredFootprint;
  if (options.analyze)
    return this->report(*result.program, report);

  report.outputPath = options.outputPath;
  if (!result.missReason.empty())
    note("cache miss: " + result.missReason);
  if (result.cacheStatus == "hit" && options.printIR && !options.quiet)
    llvm::errs() << "trn-cc: note: cache hit, nothing was compiled; "
                    "--no-cache prints the IR of a fresh compile\n";
  if (!options.cacheOnly) {
    TimingScope writeTiming = timing.nest("write artifact");
    if (auto problem =
            trn::writeOutputFile(options.outputPath, result.artifact))
      return fail(*problem);
  }
  status(trn::compileStatusLine(result));
  if (result.cacheStatus != "off")
    note("entry " + result.entryPath);
  return this->report(*result.program, report);
}

/// --analyze prints the report (the table, or with --json the JSON); a
/// compile writes --report's JSON and, with -v, prints the table.
int TrnCC::report(const trnrt::Program &program, trn::CompileReport &report) {
  bool analyzing = options.analyze;
  if (!analyzing && options.reportPath.empty() && !options.verbose)
    return kExitOk;
  // The device-time estimate runs the simulator once; only reports pay for
  // it, and it is not stored in the artifact so that a key's bytes do not
  // depend on who asked for a report. A --cache-only worker's report is for
  // trn-parallel-compile's scheduler (hit or miss, compile time): there the
  // estimate would cost more than the compile (74 s against 11 s for the
  // BERT-large step), so it is left out.
  TimingScope simulateTiming = timing.nest("estimate device time (simulator)");
  trn::ProgramSummary summary =
      trn::summarizeProgram(program, /*estimateDeviceTime=*/analyzing ||
                                         !options.cacheOnly || options.verbose);
  simulateTiming.stop();
  report.elapsedSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  report.peakMemoryBytes = trn::peakMemoryBytes();
  if (options.verbose && !analyzing)
    trn::printSummaryTable(llvm::errs(), report.graphName, report.key,
                           report.normalizedFlags, summary);
  std::string json = trn::reportJson(report, summary);
  llvm::outs().flush(); // before an output written to stdout ("-")
  if (!options.reportPath.empty())
    if (auto problem = trn::writeOutputFile(options.reportPath, json))
      return fail(*problem);
  if (analyzing && options.json)
    llvm::outs() << json;
  else if (analyzing)
    trn::printSummaryTable(llvm::outs(), report.graphName, report.key,
                           report.normalizedFlags, summary);
  return kExitOk;
}

//===----------------------------------------------------------------------===//
// Pipeline stages, version, main
//===----------------------------------------------------------------------===//

/// `path` with ".s<stage>" before its extension: step.trnart ->
/// step.s1.trnart.
std::string stagePath(const std::string &path, int64_t stage) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  std::string suffix = ".s" + std::to_string(stage);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

/// Runs one compile and ends the process: a big step's IR (millions of
/// ops) takes a second to free, which the OS does at once.
[[noreturn]] int runAndExit(const Options &options) {
  auto *compiler = new TrnCC(options, /*freeIR=*/false); // NOLINT: see above
  int status = compiler->run();
  compiler->printTiming();
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
  std::_Exit(status);
}

/// A pipelined step (--pp > 1) compiles to one artifact, and one cache
/// entry, per stage: without --stage every stage is compiled in turn,
/// into -o with the stage before the extension.
int compileEveryStage(const Options &options) {
  const int64_t stages = trn::stagesToCompile(options.codegenArgs);
  if (stages == 0)
    return runAndExit(options);
  for (int64_t stage = 0; stage < stages; ++stage) {
    Options one = options;
    one.codegenArgs.push_back("--stage");
    one.codegenArgs.push_back(std::to_string(stage));
    if (!one.outputPath.empty())
      one.outputPath = stagePath(options.outputPath, stage);
    if (!one.reportPath.empty())
      one.reportPath = stagePath(options.reportPath, stage);
    if (int status = TrnCC(std::move(one), /*freeIR=*/true).run())
      return status;
  }
  return kExitOk;
}

int printVersion() {
  llvm::outs() << cache::toolVersion("trn-cc", trnrt::targetNames());
  return kExitOk;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  Options options;
  if (std::optional<std::string> problem =
          parseCommandLine(argc, argv, options)) {
    return trn::usageError("trn-cc", *problem);
  }
  if (options.help) {
    llvm::outs() << kUsage << trn::codegenFlagsHelp() << "\noutput and cache:\n"
                 << trn::toolFlagsHelp(commandLine()) << kExitStatus;
    return kExitOk;
  }
  if (options.version)
    return printVersion();
  if (options.analyze)
    return TrnCC(std::move(options), /*freeIR=*/true).run();
  return compileEveryStage(options);
}
