//===- trn-cc.cpp - compile one trn graph to a NeuronCore artifact -------===//
//
//   trn-cc compile GRAPH.mlir -o OUT [codegen flags] [--cache-dir DIR |
//          --no-cache] [--retry-failed] [--report FILE]
//          [--mlir-print-ir-after-all] [--timing] [-v | -q]
//   trn-cc --analyze GRAPH.mlir [codegen flags] [--json] [--report FILE]
//          [--timing]
//   trn-cc --version
//
// The codegen flags are normalised by the cache library (trn/Cache/Key.h), so
// that spelling, order and defaults never change the cache key. Compiles run
// in this process; crash isolation in worker processes is the job of
// trn-parallel-compile. docs/cli.md is the reference.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Cache.h"
#include "trn/Cache/Key.h"
#include "trn/Dialect/Dist/IR/DistDialect.h"
#include "trn/Dialect/Trn/Utils/GraphHash.h"
#include "trn/Driver/CompileFlags.h"
#include "trn/Driver/CompileGraph.h"
#include "trn/Driver/Diagnostics.h"
#include "trn/Driver/Pipeline.h"
#include "trn/Driver/Report.h"
#include "trn/InitAll.h"
#include "trn/Partition/Fit.h"
#include "trn/Support/CommandLineValues.h"
#include "trn/Support/InputFile.h"
#include "trn/Support/OutputFile.h"

#include "trnrt/Artifact.h"
#include "trnrt/File.h"
#include "trnrt/Mesh.h"
#include "trnrt/Simulator.h"
#include "trnrt/StageArtifact.h"
#include "trnrt/Target.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#ifndef TRN_VERSION_STRING
#error "TRN_VERSION_STRING must be defined by the build (tools/trn-cc)"
#endif

using namespace mlir;
namespace cache = mlir::trn::cache;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1; ///< compile error, cache or I/O error
constexpr int kExitUsage = 2;

const char *kUsage = R"(usage: trn-cc compile GRAPH.mlir -o OUT [options]
       trn-cc --analyze GRAPH.mlir [options] [--json]
       trn-cc --version

Compiles a trn training-step graph into a NeuronCore artifact, through the
compile cache. --analyze compiles without writing anything and reports the
instruction counts, FLOPs, memory peaks and estimated device time.

codegen flags (normalised into the cache key; order and spelling do not matter):
)";

// After the codegen flags (the shared table's) and trn-cc's own (kFlags).
const char *kExitStatus = R"(
exit status: 0 success, 1 compile error or cache/file error, 2 bad command line
)";

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

struct Options {
  enum class Mode { None, Compile, Analyze, Version, Help } mode = Mode::None;
  std::string graphPath;
  std::string outputPath;
  std::string cacheDir;
  std::string reportPath;
  std::string lockTimeout;
  std::optional<double> lockTimeoutSeconds;
  bool noCache = false;
  bool cacheOnly = false;
  bool retryFailed = false;
  bool printIR = false;
  bool timing = false;
  bool verbose = false;
  bool quiet = false;
  bool json = false;
  bool analyze = false, version = false, help = false;
  /// Codegen flags exactly as given (tokens), for normalizeFlags and for the
  /// cache entry's metadata.
  std::vector<std::string> codegenArgs;
  cache::NormalizedFlags flags;
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
    {"help", 'h', nullptr, &Options::help,
     "-h, --help                       this help"},
    {"version", 0, nullptr, &Options::version,
     "--version                        versions and targets"},
    {"analyze", 0, nullptr, &Options::analyze, ""},
};

const trn::ToolCommandLine &commandLine() {
  static const trn::ToolCommandLine line = [] {
    trn::ToolCommandLine line;
    line.tool = "trn-cc";
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
  std::vector<std::string> positionals;
  auto onFlag = [&](const trn::ToolFlagUse &use) -> std::optional<std::string> {
    const OwnFlag &flag = kFlags[use.flag->id];
    if (flag.on)
      options.*flag.on = true;
    else
      options.*flag.text = *use.value;
    if (flag.text == &Options::lockTimeout &&
        !(options.lockTimeoutSeconds = trn::parseDuration(*use.value)))
      return "flag '" + use.spelled + "': '" + *use.value +
             "' is not a duration (e.g. 90s, 15m, 2h)";
    return std::nullopt;
  };
  if (auto problem = trn::parseToolArgs(
          std::vector<std::string>(argv + 1, argv + argc), commandLine(),
          onFlag, positionals, options.codegenArgs))
    return problem;

  if (options.help) {
    options.mode = Options::Mode::Help;
    return std::nullopt;
  }
  if (options.version) {
    options.mode = Options::Mode::Version;
    return std::nullopt;
  }

  if (options.analyze) {
    options.mode = Options::Mode::Analyze;
    if (positionals.empty())
      return std::string("--analyze needs a graph: trn-cc --analyze "
                         "GRAPH.mlir");
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
      std::string message = "unknown command '" + positionals[0] + "'";
      if (llvm::StringRef(positionals[0]).edit_distance("compile") <= 2)
        message += "; did you mean 'compile'?";
      else
        message += "; expected 'compile', --analyze or --version";
      return message;
    }
    options.mode = Options::Mode::Compile;
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
  std::optional<cache::NormalizedFlags> flags =
      trn::normalizeFlags(options.codegenArgs, error);
  if (!flags)
    return error;
  options.flags = std::move(*flags);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

using mlir::trn::DiagnosticCollector;

//===----------------------------------------------------------------------===//
// Compiling
//===----------------------------------------------------------------------===//

using mlir::trn::peakMemoryBytes;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// A parsed, verified input graph.
struct Graph {
  OwningOpRef<ModuleOp> module;
  std::string text;
  std::string name; ///< the function's symbol name
};

/// Reads and parses the graph; on failure returns the one-line message.
std::optional<std::string> loadGraph(const std::string &path,
                                     MLIRContext &context, Graph &graph) {
  // A directory, /dev/zero or a FIFO is refused unread; files and stdin stop
  // at kMaxInputFileBytes.
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::trn::readInputFile(path, error);
  if (!file)
    return error;
  if (isBytecode(*file))
    return "'" + path +
           "' is MLIR bytecode, which trn does not read (LLVM 19's reader "
           "does not validate it); pass the textual form";
  graph.text = file->getBuffer().str();

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  DiagnosticCollector diagnostics(&context);
  graph.module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!graph.module)
    return diagnostics.firstError().empty() ? "cannot parse '" + path + "'"
                                            : diagnostics.firstError();

  llvm::SmallVector<func::FuncOp> functions(
      graph.module->getOps<func::FuncOp>());
  if (functions.empty())
    return "'" + path + "' holds no function to compile";
  if (functions.size() > 1)
    return "'" + path + "' holds " + std::to_string(functions.size()) +
           " functions; trn-cc compiles one graph (one func.func) per file";
  graph.name = functions.front().getSymName().str();
  return std::nullopt;
}

mlir::trn::CompileOptions compileOptionsOf(const Options &options) {
  mlir::trn::CompileOptions compile =
      mlir::trn::compileOptionsFromFlags(options.flags);
  compile.dp = mlir::trn::dpDegreeOf(options.codegenArgs);
  compile.printIRAfterAll = options.printIR;
  return compile;
}

using mlir::trn::CompileAttempt;

/// `timing` (--timing) gets the pipeline's phases and passes nested in it.
CompileAttempt runCompile(ModuleOp module, const Options &options,
                          const cache::CacheKey &key, TimingScope &timing) {
  mlir::trn::CompileOptions compileOptions = compileOptionsOf(options);
  compileOptions.timing = &timing;
  mlir::trn::CompileStats stats;
  compileOptions.stats = &stats;
  CompileAttempt attempt =
      mlir::trn::compileModule(module, key, options.flags, compileOptions);
  // With the timing report: what the time was spent on.
  if (options.timing && stats.exported)
    llvm::errs() << "trn-cc: " << trn::kernelSizeLine(stats) << "\n";
  if (attempt.program)
    attempt.log += trn::compiledLogLine(
        attempt.seconds, trn::summarizeProgram(*attempt.program,
                                               /*estimateDeviceTime=*/false));
  return attempt;
}

class TrnCC {
public:
  explicit TrnCC(Options options) : options(std::move(options)) {}
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
  int fail(const std::string &message, int status = kExitFailure) {
    llvm::errs() << "trn-cc: error: " << message << "\n";
    return status;
  }
  void note(const std::string &message) {
    if (options.verbose)
      llvm::errs() << "trn-cc: " << message << "\n";
  }
  /// The one line that says what happened (after the output is written).
  void status(const std::string &line) {
    if (options.quiet)
      return;
    llvm::outs() << "trn-cc: " << line << "\n";
    // Keep the order of stdout and stderr when both go to one pipe (-v).
    llvm::outs().flush();
  }
  void printWarnings(const std::vector<std::string> &warnings) {
    if (options.quiet)
      return;
    for (const std::string &warning : warnings)
      llvm::errs() << "trn-cc: warning: " << warning << "\n";
  }
  int compile();
  int analyze();
  int finish(const trnrt::Program &program, trn::CompileReport &report);

  Options options;
  /// --timing: phases and passes, printed to stderr when trn-cc ends. The
  /// manager outlives (is declared before) the root scope.
  DefaultTimingManager timingManager;
  TimingScope timing;
  MLIRContext context;
  Graph graph;
  cache::CacheKey key;
  std::chrono::steady_clock::time_point start;
};

int TrnCC::run() {
  start = std::chrono::steady_clock::now();
  if (options.timing) {
    timingManager.setEnabled(true);
    timing = timingManager.getRootScope();
  }
  // Fail before any work on outputs that cannot be written.
  if (options.mode == Options::Mode::Compile && !options.cacheOnly)
    if (auto problem = trn::checkOutputPath(options.outputPath, "-o"))
      return fail(*problem);
  if (!options.reportPath.empty())
    if (auto problem = trn::checkOutputPath(options.reportPath, "--report"))
      return fail(*problem);

  mlir::trn::configureCompilerContext(context);
  TimingScope parseTiming = timing.nest("parse and verify graph");
  if (auto problem = loadGraph(options.graphPath, context, graph))
    return fail(*problem);
  parseTiming.stop();

  TimingScope hashTiming = timing.nest("hash graph");
  key.graph = mlir::trn::hashGraph(*graph.module);
  hashTiming.stop();
  key.flags = cache::hashFlags(options.flags);
  note("graph @" + graph.name + " from " + options.graphPath + ": hash " +
       key.graph.hex());
  note("flags " + options.flags.canonical() + ": hash " + key.flags.hex());
  return options.mode == Options::Mode::Compile ? compile() : analyze();
}

/// With --mesh: partitions the graph (milliseconds, no lowering) and checks
/// that one rank (of every pipeline stage) fits its NeuronCore's HBM, before
/// compiling. Returns a one-line error naming the first violated
/// constraint, or the footprint.
static std::optional<std::string>
checkMeshFit(ModuleOp module, const trn::cache::NormalizedFlags &flags,
             const std::vector<std::string> &args,
             std::optional<trn::MeshFootprint> &footprint) {
  trn::CompileOptions options = trn::compileOptionsFromFlags(flags);
  options.dp = trn::dpDegreeOf(args);
  trn::DiagnosticCollector diagnostics(module.getContext());
  FailureOr<std::optional<trn::MeshFootprint>> measured =
      trn::measureMeshFootprint(module, options);
  if (failed(measured))
    return "mesh " + trn::meshTextOf(options) +
           " does not partition this graph: " +
           (diagnostics.firstError().empty() ? std::string("see above")
                                             : diagnostics.firstError());
  footprint = *measured;
  if (!footprint)
    return std::nullopt;
  if (footprint->pipelined)
    for (const std::string &line : trn::meshFootprintLines(*footprint))
      llvm::outs() << line << "\n";
  return trn::meshFitProblem(*footprint,
                             trnrt::lookupTarget(flags.values.at("target")));
}

int TrnCC::analyze() {
  std::optional<trn::MeshFootprint> mesh;
  {
    TimingScope fitTiming = timing.nest("mesh fit check");
    if (auto problem = checkMeshFit(*graph.module, options.flags,
                                    options.codegenArgs, mesh))
      return fail(*problem);
  }
  if (mesh && !mesh->pipelined && !options.json)
    llvm::outs() << trn::meshFootprintLines(*mesh).front() << "\n";
  // Shown at once: the compile and per-rank simulation that follow take
  // far longer than the check.
  llvm::outs().flush();
  TimingScope compileTiming = timing.nest("compile");
  CompileAttempt attempt =
      runCompile(*graph.module, options, key, compileTiming);
  compileTiming.stop();
  printWarnings(attempt.warnings);
  if (!attempt.program)
    return fail(attempt.diagnostic);
  trn::CompileReport report;
  report.mode = "analyze";
  report.compileSeconds = attempt.seconds;
  TimingScope simulateTiming = timing.nest("estimate device time (simulator)");
  trn::ProgramSummary summary =
      trn::summarizeProgram(*attempt.program, /*estimateDeviceTime=*/true);
  simulateTiming.stop();
  report.graphPath = options.graphPath;
  report.graphName = graph.name;
  report.key = key.dirName();
  report.flags = options.codegenArgs;
  report.normalizedFlags = options.flags.canonical();
  report.elapsedSeconds = secondsSince(start);
  report.peakMemoryBytes = peakMemoryBytes();
  std::string json = trn::reportJson(report, summary);
  if (!options.reportPath.empty())
    if (auto problem = trn::writeOutputFile(options.reportPath, json))
      return fail(*problem);
  if (options.json)
    llvm::outs() << json;
  else
    trn::printSummaryTable(llvm::outs(), graph.name, report.key,
                           report.normalizedFlags, summary);
  return kExitOk;
}

int TrnCC::compile() {
  trn::CompileReport report;
  report.mode = "compile";
  report.graphPath = options.graphPath;
  report.graphName = graph.name;
  report.outputPath = options.outputPath;
  report.key = key.dirName();
  report.flags = options.codegenArgs;
  report.normalizedFlags = options.flags.canonical();

  if (options.noCache) {
    TimingScope compileTiming = timing.nest("compile");
    CompileAttempt attempt =
        runCompile(*graph.module, options, key, compileTiming);
    compileTiming.stop();
    printWarnings(attempt.warnings);
    if (!attempt.program)
      return fail(attempt.diagnostic);
    llvm::StringRef bytes(
        reinterpret_cast<const char *>(attempt.artifact.data()),
        attempt.artifact.size());
    TimingScope writeTiming = timing.nest("write artifact");
    if (auto problem = trn::writeOutputFile(options.outputPath, bytes))
      return fail(*problem);
    writeTiming.stop();
    report.cacheStatus = "off";
    report.compileSeconds = attempt.seconds;
    status("compiled " + report.key + " in " +
           trn::formatSeconds(attempt.seconds) + " (cache off)");
    return finish(*attempt.program, report);
  }

  cache::CacheOptions cacheOptions;
  cacheOptions.root = cache::resolveRoot(options.cacheDir);
  cacheOptions.retryFailed = options.retryFailed;
  if (options.lockTimeoutSeconds)
    cacheOptions.lockWaitSeconds = *options.lockTimeoutSeconds;
  cacheOptions.warn = [this](const std::string &message) {
    if (!options.quiet)
      llvm::errs() << "trn-cc: warning: " << message << "\n";
  };
  cache::Result<cache::Cache> store = cache::Cache::open(cacheOptions);
  if (!store)
    return fail(store.error + " (--no-cache compiles without the cache)");
  report.cacheRoot = cacheOptions.root;
  note("cache " + store->versionDir());

  // The compile step: runs at most once, under the key's lock.
  CompileAttempt attempt;
  bool compiled = false;
  auto compileStep = [&]() {
    compiled = true;
    TimingScope compileTiming = timing.nest("compile");
    attempt = runCompile(*graph.module, options, key, compileTiming);
    return mlir::trn::cacheOutputOf(attempt, options.codegenArgs, options.flags,
                                    graph.name);
  };
  cache::CompileResult result =
      store->getOrCompile(key, graph.text, compileStep);
  if (result.entry)
    report.entryPath = result.entry->path;
  if (compiled)
    printWarnings(attempt.warnings);

  using Source = cache::CompileResult::Source;
  switch (result.source) {
  case Source::CachedFailure:
    return fail(result.diagnostic +
                " (cached failure; --retry-failed recompiles)");
  case Source::Failed:
    if (compiled && attempt.program) {
      // Compiled but not stored (disk full, permissions): the artifact is
      // still good, the cache just does not have it.
      if (!options.quiet)
        llvm::errs() << "trn-cc: warning: the artifact was not stored in the "
                        "cache: "
                     << result.diagnostic << "\n";
      break;
    }
    return fail(result.diagnostic.empty() ? attempt.diagnostic
                                          : result.diagnostic);
  case Source::Hit:
  case Source::Compiled:
    break;
  }

  trnrt::Program program;
  std::vector<uint8_t> bytes;
  std::string statusLine;
  if (compiled && attempt.program) {
    program = *attempt.program;
    bytes = attempt.artifact;
    report.cacheStatus = "miss";
    report.compileSeconds = attempt.seconds;
    statusLine =
        "compiled " + report.key + " in " + trn::formatSeconds(attempt.seconds);
  } else {
    // A hit: copy the cached artifact out, after checking it decodes.
    cache::Result<std::vector<uint8_t>> cached =
        store->readArtifact(*result.entry);
    if (!cached)
      return fail(cached.error);
    bytes = std::move(*cached);
    trnrt::ArtifactInfo info;
    std::string error;
    // A pipeline stage's entry holds its fragments (the first reported).
    trnrt::StageArtifact stage;
    bool decoded =
        trnrt::isStageArtifact(bytes.data(), bytes.size())
            ? trnrt::readStageArtifact(bytes.data(), bytes.size(), stage, error)
            : trnrt::readArtifact(bytes.data(), bytes.size(), program, info,
                                  error);
    if (decoded && !stage.fragments.empty())
      program = std::move(stage.fragments.front());
    if (!decoded)
      return fail("the cached artifact of " + report.key +
                  " does not decode (" + error +
                  "); 'trn-cache clean' or --no-cache works around it");
    report.cacheStatus = "hit";
    report.compileSeconds = result.entry->metadata.compileSeconds;
    if (options.printIR && !options.quiet)
      llvm::errs() << "trn-cc: note: cache hit, nothing was compiled; "
                      "--no-cache prints the IR of a fresh compile\n";
    statusLine = "cache hit " + report.key;
    if (result.waitedSeconds > 0.05)
      statusLine += " (compiled by another process; waited " +
                    trn::formatSeconds(result.waitedSeconds) + ")";
  }
  if (!options.cacheOnly) {
    llvm::StringRef text(reinterpret_cast<const char *>(bytes.data()),
                         bytes.size());
    TimingScope writeTiming = timing.nest("write artifact");
    if (auto problem = trn::writeOutputFile(options.outputPath, text))
      return fail(*problem);
    writeTiming.stop();
  }
  status(statusLine);
  note("entry " + report.entryPath);
  return finish(program, report);
}

/// Writes the --report JSON and, with -v, prints the table.
int TrnCC::finish(const trnrt::Program &program, trn::CompileReport &report) {
  bool wantReport = !options.reportPath.empty() || options.verbose;
  if (!wantReport)
    return kExitOk;
  // The device-time estimate runs the simulator once; only reports pay for
  // it, and it is not stored in the artifact so that a key's bytes do not
  // depend on who asked for a report. A --cache-only worker's report is for
  // trn-parallel-compile's scheduler (hit or miss, compile time): there the
  // estimate would cost more than the compile (74 s against 11 s for the
  // BERT-large step), so it is left out.
  TimingScope simulateTiming = timing.nest("estimate device time (simulator)");
  trn::ProgramSummary summary = trn::summarizeProgram(
      program, /*estimateDeviceTime=*/!options.cacheOnly || options.verbose);
  simulateTiming.stop();
  report.elapsedSeconds = secondsSince(start);
  report.peakMemoryBytes = peakMemoryBytes();
  if (options.verbose)
    trn::printSummaryTable(llvm::errs(), graph.name, report.key,
                           report.normalizedFlags, summary);
  if (!options.reportPath.empty())
    if (auto problem = trn::writeOutputFile(options.reportPath,
                                            trn::reportJson(report, summary)))
      return fail(*problem);
  return kExitOk;
}

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

/// A pipelined step (--pp > 1) compiles to one artifact, and one cache
/// entry, per stage: without --stage every stage is compiled in turn,
/// into -o with the stage before the extension.
/// Runs one compile and ends the process: a big step's IR (millions of
/// ops) takes a second to free, which the OS does at once.
[[noreturn]] int runAndExit(const Options &options) {
  auto *compiler = new TrnCC(options); // NOLINT: freed by the process's exit
  int status = compiler->run();
  compiler->printTiming();
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
  std::_Exit(status);
}

int compileEveryStage(const Options &options) {
  const std::string &pp = options.flags.values.at("pp");
  bool stageGiven = false;
  for (const std::string &arg : options.codegenArgs)
    stageGiven |=
        arg == "--stage" || llvm::StringRef(arg).starts_with("--stage=");
  if (pp == "1" || stageGiven)
    return runAndExit(options);
  const int64_t stages = std::strtoll(pp.c_str(), nullptr, 10);
  for (int64_t stage = 0; stage < stages; ++stage) {
    Options one = options;
    one.codegenArgs.push_back("--stage");
    one.codegenArgs.push_back(std::to_string(stage));
    std::string error;
    std::optional<cache::NormalizedFlags> flags =
        mlir::trn::normalizeFlags(one.codegenArgs, error);
    if (!flags) {
      llvm::errs() << "trn-cc: error: " << error << "\n";
      return kExitUsage;
    }
    one.flags = std::move(*flags);
    if (!one.outputPath.empty())
      one.outputPath = stagePath(options.outputPath, stage);
    if (!one.reportPath.empty())
      one.reportPath = stagePath(options.reportPath, stage);
    if (int status = TrnCC(std::move(one)).run())
      return status;
  }
  return kExitOk;
}

int printVersion() {
  llvm::outs() << "trn-cc " << TRN_VERSION_STRING << "\n";
  llvm::outs() << "compiler version " << cache::compilerVersion()
               << " (cache entries under <cache-dir>/trncc-"
               << cache::compilerVersion() << "/)\n";
  llvm::outs() << "LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  llvm::outs() << "targets:";
  for (const char *name : {"trn1", "trn2"})
    if (trnrt::lookupTarget(name))
      llvm::outs() << " " << name;
  llvm::outs() << " (default trn1)\n";
  return kExitOk;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  Options options;
  if (std::optional<std::string> problem =
          parseCommandLine(argc, argv, options)) {
    llvm::errs() << "trn-cc: error: " << *problem << "\n";
    return kExitUsage;
  }
  switch (options.mode) {
  case Options::Mode::Help:
    llvm::outs() << kUsage << trn::codegenFlagsHelp() << "\noutput and cache:\n"
                 << trn::toolFlagsHelp(commandLine()) << kExitStatus;
    return kExitOk;
  case Options::Mode::Version:
    return printVersion();
  case Options::Mode::None:
    llvm::errs() << "trn-cc: error: no command given (see trn-cc --help)\n";
    return kExitUsage;
  case Options::Mode::Compile:
  case Options::Mode::Analyze:
    break;
  }
  return options.mode == Options::Mode::Compile
             ? compileEveryStage(options)
             : TrnCC(std::move(options)).run();
}
