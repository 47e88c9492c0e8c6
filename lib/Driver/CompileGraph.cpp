//===- CompileGraph.cpp - compile one trn graph through the cache ---------===//

#include "trn/Driver/CompileGraph.h"

#include "trn/Cache/Cache.h"
#include "trn/Cache/Key.h"
#include "trn/Dialect/Trn/Utils/GraphHash.h"
#include "trn/Driver/CompileFlags.h"
#include "trn/Driver/Diagnostics.h"
#include "trn/Driver/Pipeline.h"
#include "trn/Driver/Report.h"
#include "trn/InitAll.h"
#include "trn/Support/InputFile.h"
#include "trnrt/Artifact.h"
#include "trnrt/StageArtifact.h"
#include "trnrt/Target.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/SourceMgr.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <optional>

using namespace mlir;
namespace cache = mlir::trn::cache;

void mlir::trn::configureCompilerContext(MLIRContext &context) {
  DialectRegistry registry;
  registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  context.disableMultithreading();
  context.printOpOnDiagnostic(false);
}

int64_t mlir::trn::peakMemoryBytes() {
  struct rusage usage = {};
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024; // Linux: KiB
}

std::string mlir::trn::hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return "unknown";
  return name;
}

mlir::trn::CompileOptions
mlir::trn::compileOptionsFromFlags(const cache::NormalizedFlags &flags) {
  const std::map<std::string, std::string> &values = flags.values;
  CompileOptions options;
  options.target = values.at("target");
  options.optLevel = std::stoi(values.at("opt-level"));
  options.autoCast = values.at("auto-cast");
  options.autoCastType = values.at("auto-cast-type");
  if (auto tp = values.find("tp"); tp != values.end())
    options.tp = std::stoll(tp->second);
  options.zero1 = values.count("zero1") != 0;
  options.dpWholeBatch = values.count("dp-whole-batch") != 0;
  options.sequenceParallel = values.count("sequence-parallel") != 0;
  if (auto pp = values.find("pp"); pp != values.end())
    options.pp = std::strtoll(pp->second.c_str(), nullptr, 10);
  if (auto m = values.find("microbatches"); m != values.end())
    options.microbatches = std::strtoll(m->second.c_str(), nullptr, 10);
  if (auto schedule = values.find("pipeline-schedule");
      schedule != values.end())
    options.pipelineSchedule = schedule->second;
  if (auto stage = values.find("stage"); stage != values.end())
    options.stage = std::strtoll(stage->second.c_str(), nullptr, 10);
  options.recomputeActivations = values.count("recompute-activations") != 0;
  options.layerReuse = values.count("no-layer-reuse") == 0;
  return options;
}

bool mlir::trn::serializeProgram(const trnrt::Program &program,
                                 const cache::CacheKey &key,
                                 const cache::NormalizedFlags &flags,
                                 std::vector<uint8_t> &artifact,
                                 std::string &error) {
  trnrt::ArtifactInfo info;
  info.compilerVersion = cache::compilerVersion();
  info.cacheKey = key.dirName();
  info.report["graph_hash"] = key.graph.hex();
  info.report["normalized_flags"] = flags.canonical();
  return trnrt::writeArtifact(program, info, artifact, error);
}

mlir::trn::CompileAttempt
mlir::trn::compileModule(ModuleOp module, const cache::CacheKey &key,
                         const cache::NormalizedFlags &flags,
                         const CompileOptions &options) {
  CompileAttempt attempt;
  auto start = std::chrono::steady_clock::now();
  DiagnosticCollector diagnostics(module.getContext());
  FailureOr<std::vector<trnrt::Program>> programs =
      compileToPrograms(module, options);
  if (succeeded(programs)) {
    std::optional<TimingScope> serializeTiming;
    if (options.timing)
      serializeTiming.emplace(options.timing->nest("serialize artifact"));
    std::string error;
    // A pipeline stage's fragments go into one stage artifact.
    std::vector<std::vector<uint8_t>> fragments(programs->size());
    std::vector<std::string> errors(programs->size());
    std::vector<char> serialized(programs->size(), 0);
    // The fragments serialise side by side (zstd per section).
    llvm::parallelFor(0, programs->size(), [&](size_t i) {
      serialized[i] =
          serializeProgram((*programs)[i], key, flags, fragments[i], errors[i]);
    });
    bool ok = true;
    for (size_t i = 0; ok && i < programs->size(); ++i)
      if (!serialized[i]) {
        ok = false;
        error = errors[i];
      }
    if (ok && options.pipelined())
      ok = trnrt::writeStageArtifact(fragments, attempt.artifact, error);
    else if (ok)
      attempt.artifact = std::move(fragments.front());
    if (ok)
      attempt.program = std::move(programs->front());
    else
      attempt.diagnostic = "internal compiler error: the program cannot be "
                           "serialised: " +
                           error +
                           "; this is a trn bug, please report it with the "
                           "graph";
  } else {
    attempt.diagnostic = diagnostics.firstError().empty()
                             ? "the compile failed without a diagnostic"
                             : diagnostics.firstError();
  }
  attempt.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  attempt.log = diagnostics.log();
  attempt.warnings = diagnostics.warnings();
  if (attempt.program)
    attempt.log += compiledLogLine(
        attempt.seconds,
        summarizeProgram(*attempt.program, /*estimateDeviceTime=*/false));
  return attempt;
}

cache::CompileOutput mlir::trn::cacheOutputOf(
    const CompileAttempt &attempt, const std::vector<std::string> &codegenArgs,
    const cache::NormalizedFlags &flags, const std::string &graphName) {
  cache::CompileOutput output;
  output.log = attempt.log;
  if (attempt.program) {
    output.artifact = attempt.artifact;
  } else {
    output.failure = cache::FailureKind::CompileError;
    output.diagnostic = attempt.diagnostic;
  }
  output.metadata.flags = codegenArgs;
  output.metadata.normalizedFlags = flags.canonical();
  output.metadata.target = flags.values.at("target");
  output.metadata.compilerVersion = cache::compilerVersion();
  output.metadata.host = hostName();
  output.metadata.graphName = graphName;
  output.metadata.compileSeconds = attempt.seconds;
  output.metadata.peakMemoryBytes = peakMemoryBytes();
  return output;
}

namespace {

/// A context with every trn dialect, set up as trn-cc sets it up.
struct CompilerContext {
  CompilerContext() { mlir::trn::configureCompilerContext(context); }
  MLIRContext context;
};

/// Parses the graph (`text`, else the file at `path`) and checks it holds
/// exactly one function. `readText` receives a file's bytes.
std::optional<std::string>
loadGraph(const std::string &text, const std::string &path,
          const std::string &sourceName, MLIRContext &context,
          OwningOpRef<ModuleOp> &module, std::string &readText,
          std::string &functionName) {
  // A directory, /dev/zero or a FIFO is refused unread; files and stdin stop
  // at kMaxInputFileBytes.
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  const std::string &name = path.empty() ? sourceName : path;
  if (path.empty()) {
    buffer = llvm::MemoryBuffer::getMemBufferCopy(text, sourceName);
  } else {
    std::string error;
    buffer = mlir::trn::readInputFile(path, error);
    if (!buffer)
      return error;
    readText = buffer->getBuffer().str();
  }
  if (isBytecode(*buffer))
    return "'" + name +
           "' is MLIR bytecode, which trn does not read (LLVM 19's reader "
           "does not validate it); pass the textual form";

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  mlir::trn::DiagnosticCollector diagnostics(&context);
  module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return diagnostics.firstError().empty() ? "cannot parse '" + name + "'"
                                            : diagnostics.firstError();
  auto functions = llvm::to_vector(module->getOps<func::FuncOp>());
  if (functions.empty())
    return "'" + name + "' holds no function to compile";
  if (functions.size() > 1)
    return "'" + name + "' holds " + std::to_string(functions.size()) +
           (path.empty() ? " functions; a graph is one func.func"
                         : " functions; trn-cc compiles one graph (one "
                           "func.func) per file");
  functionName = functions.front().getSymName().str();
  return std::nullopt;
}

/// With --mesh: partitions the graph (milliseconds, no lowering) and checks
/// that one rank (of every pipeline stage) fits its NeuronCore's HBM, before
/// compiling. Returns a one-line error naming the first violated
/// constraint.
std::optional<std::string>
checkMeshFit(ModuleOp module, const mlir::trn::CompileOptions &options,
             const mlir::trn::GraphCompileRequest &request) {
  mlir::trn::DiagnosticCollector diagnostics(module.getContext());
  FailureOr<std::optional<mlir::trn::MeshFootprint>> measured =
      mlir::trn::measureMeshFootprint(module, options);
  if (failed(measured))
    return "mesh " + mlir::trn::meshTextOf(options) +
           " does not partition this graph: " +
           (diagnostics.firstError().empty() ? std::string("see above")
                                             : diagnostics.firstError());
  if (!*measured)
    return std::nullopt;
  std::optional<std::string> problem = mlir::trn::meshFitProblem(
      **measured, trnrt::lookupTarget(options.target));
  if (request.meshFootprint)
    request.meshFootprint(**measured, !problem);
  return problem;
}

} // namespace

bool mlir::trn::graphCacheKey(const std::string &graphText,
                              const std::vector<std::string> &codegenArgs,
                              std::string &key, std::string &error) {
  std::optional<cache::NormalizedFlags> flags =
      normalizeFlags(codegenArgs, error);
  if (!flags)
    return false;
  CompilerContext compiler;
  OwningOpRef<ModuleOp> module;
  std::string readText, name;
  if (auto problem = loadGraph(graphText, "", "<graph>", compiler.context,
                               module, readText, name)) {
    error = *problem;
    return false;
  }
  cache::CacheKey cacheKey{mlir::trn::hashGraph(*module),
                           cache::hashFlags(*flags)};
  key = cacheKey.dirName();
  return true;
}

mlir::trn::GraphCompileResult
mlir::trn::compileGraph(const mlir::trn::GraphCompileRequest &request) {
  GraphCompileResult result;
  auto fail = [&](std::string message,
                  GraphCompileFailure failure = GraphCompileFailure::Error) {
    result.error = std::move(message);
    result.failure = failure;
    return result;
  };
  auto detail = [&](const std::string &message) {
    if (request.detail)
      request.detail(message);
  };
  std::optional<cache::NormalizedFlags> flags =
      normalizeFlags(request.codegenArgs, result.error);
  if (!flags)
    return fail(result.error);
  result.normalizedFlags = flags->canonical();

  TimingScope untimed;
  TimingScope &timing = request.timing ? *request.timing : untimed;
  auto compiler = std::make_unique<CompilerContext>();
  OwningOpRef<ModuleOp> module;
  // Declared last, so that it runs before the IR's destructors.
  auto leaveIR = llvm::make_scope_exit([&] {
    if (!request.freeIR) {
      (void)module.release();
      (void)compiler.release();
    }
  });

  std::string readText;
  TimingScope parseTiming = timing.nest("parse and verify graph");
  if (auto problem =
          loadGraph(request.graphText, request.graphPath, request.sourceName,
                    compiler->context, module, readText, result.graphName))
    return fail(*problem);
  parseTiming.stop();
  const std::string &graphText =
      request.graphPath.empty() ? request.graphText : readText;

  TimingScope hashTiming = timing.nest("hash graph");
  cache::CacheKey key;
  key.graph = mlir::trn::hashGraph(*module);
  hashTiming.stop();
  key.flags = cache::hashFlags(*flags);
  result.key = key.dirName();
  detail("graph @" + result.graphName + " from " +
         (request.graphPath.empty() ? request.sourceName : request.graphPath) +
         ": hash " + key.graph.hex());
  detail("flags " + result.normalizedFlags + ": hash " + key.flags.hex());

  CompileOptions options = compileOptionsFromFlags(*flags);
  options.dp = dpDegreeOf(request.codegenArgs);
  options.printIRAfterAll = request.printIRAfterAll;
  if (request.checkMeshFit) {
    TimingScope fitTiming = timing.nest("mesh fit check");
    if (auto problem = checkMeshFit(*module, options, request))
      return fail(*problem);
  }

  // The compile itself: runs at most once, under the key's lock.
  CompileAttempt attempt;
  bool compiled = false;
  auto compile = [&]() {
    compiled = true;
    TimingScope compileTiming = timing.nest("compile");
    CompileOptions timed = options;
    timed.timing = &compileTiming;
    CompileStats stats;
    if (compileTiming)
      timed.stats = &stats;
    attempt = compileModule(*module, key, *flags, timed);
    if (stats.exported && request.timingDetail)
      request.timingDetail(kernelSizeLine(stats));
    result.warnings = attempt.warnings;
    result.compileSeconds = attempt.seconds;
  };
  auto takeCompiled = [&]() {
    result.artifact = std::move(attempt.artifact);
    if (request.wantProgram)
      result.program = std::move(attempt.program);
  };

  if (!request.useCache) {
    compile();
    result.cacheStatus = "off";
    if (!attempt.program)
      return fail(attempt.diagnostic);
    takeCompiled();
    result.ok = true;
    return result;
  }

  cache::CacheOptions cacheOptions;
  cacheOptions.root = cache::resolveRoot(request.cacheDir);
  cacheOptions.retryFailed = request.retryFailed;
  if (request.lockTimeoutSeconds)
    cacheOptions.lockWaitSeconds = *request.lockTimeoutSeconds;
  if (request.warn)
    cacheOptions.warn = request.warn;
  cache::Result<cache::Cache> store = cache::Cache::open(cacheOptions);
  if (!store)
    return fail(store.error, GraphCompileFailure::CacheUnavailable);
  result.cacheRoot = cacheOptions.root;
  detail("cache " + store->versionDir());

  cache::CompileResult outcome = store->getOrCompile(key, graphText, [&]() {
    compile();
    return cacheOutputOf(attempt, request.codegenArgs, *flags,
                         result.graphName);
  });
  if (outcome.entry)
    result.entryPath = outcome.entry->path;
  result.waitedSeconds = outcome.waitedSeconds;
  using Source = cache::CompileResult::Source;
  switch (outcome.source) {
  case Source::CachedFailure:
    return fail(outcome.diagnostic, GraphCompileFailure::CachedFailure);
  case Source::Failed:
    if (compiled && attempt.program) {
      // Compiled but not stored (disk full, permissions): still usable.
      result.warnings.push_back("the artifact was not stored in the cache: " +
                                outcome.diagnostic);
      break;
    }
    return fail(outcome.diagnostic.empty() ? attempt.diagnostic
                                           : outcome.diagnostic);
  case Source::Hit:
  case Source::Compiled:
    break;
  }
  if (compiled && attempt.program) {
    takeCompiled();
    result.cacheStatus = "miss";
    if (std::optional<std::string> why =
            store->nearMiss(key, result.normalizedFlags))
      result.missReason = *why;
    result.ok = true;
    return result;
  }
  cache::Result<std::vector<uint8_t>> cached =
      store->readArtifact(*outcome.entry);
  if (!cached)
    return fail(cached.error);
  result.artifact = std::move(*cached);
  if (request.wantProgram) {
    // A pipeline stage's entry holds its fragments (the first reported).
    const std::vector<uint8_t> &bytes = result.artifact;
    trnrt::Program program;
    trnrt::ArtifactInfo info;
    trnrt::StageArtifact stage;
    std::string error;
    bool decoded =
        trnrt::isStageArtifact(bytes.data(), bytes.size())
            ? trnrt::readStageArtifact(bytes.data(), bytes.size(), stage, error)
            : trnrt::readArtifact(bytes.data(), bytes.size(), program, info,
                                  error);
    if (!decoded)
      return fail("the cached artifact of " + result.key +
                      " does not decode (" + error + ")",
                  GraphCompileFailure::UndecodableEntry);
    if (!stage.fragments.empty())
      program = std::move(stage.fragments.front());
    result.program = std::move(program);
  }
  result.cacheStatus = "hit";
  result.compileSeconds = outcome.entry->metadata.compileSeconds;
  result.ok = true;
  return result;
}
