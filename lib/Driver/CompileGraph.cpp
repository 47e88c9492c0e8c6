//===- CompileGraph.cpp - compile one trn graph through the cache ---------===//

#include "trn/Driver/CompileGraph.h"

#include "trn/Cache/Cache.h"
#include "trn/Cache/Key.h"
#include "trn/Dialect/Trn/Utils/GraphHash.h"
#include "trn/Driver/CompileFlags.h"
#include "trn/Driver/Diagnostics.h"
#include "trn/Driver/Pipeline.h"
#include "trn/InitAll.h"
#include "trnrt/Artifact.h"
#include "trnrt/StageArtifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
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
    if (ok && options.pp > 1)
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

/// Parses the graph text and checks it holds exactly one function.
std::optional<std::string> parseGraph(const std::string &text,
                                      const std::string &sourceName,
                                      MLIRContext &context,
                                      OwningOpRef<ModuleOp> &module,
                                      std::string &functionName) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, sourceName), llvm::SMLoc());
  mlir::trn::DiagnosticCollector diagnostics(&context);
  module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return diagnostics.firstError().empty() ? "cannot parse " + sourceName
                                            : diagnostics.firstError();
  auto functions = llvm::to_vector(module->getOps<func::FuncOp>());
  if (functions.size() != 1)
    return sourceName + " holds " + std::to_string(functions.size()) +
           " functions; a graph is one func.func";
  functionName = functions.front().getSymName().str();
  return std::nullopt;
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
  std::string name;
  if (auto problem =
          parseGraph(graphText, "<graph>", compiler.context, module, name)) {
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
  std::optional<cache::NormalizedFlags> flags =
      normalizeFlags(request.codegenArgs, result.error);
  if (!flags)
    return result;
  result.normalizedFlags = flags->canonical();

  CompilerContext compiler;
  OwningOpRef<ModuleOp> module;
  if (auto problem = parseGraph(request.graphText, request.sourceName,
                                compiler.context, module, result.graphName)) {
    result.error = *problem;
    return result;
  }
  cache::CacheKey key{mlir::trn::hashGraph(*module), cache::hashFlags(*flags)};
  result.key = key.dirName();

  // The compile itself: runs at most once, under the key's lock.
  bool compiled = false, succeeded = false;
  std::string diagnostic;
  auto compile = [&]() {
    compiled = true;
    CompileOptions options = compileOptionsFromFlags(*flags);
    options.dp = dpDegreeOf(request.codegenArgs);
    CompileAttempt attempt = compileModule(*module, key, *flags, options);
    succeeded = attempt.program.has_value();
    diagnostic = attempt.diagnostic;
    result.warnings = attempt.warnings;
    result.compileSeconds = attempt.seconds;
    return cacheOutputOf(attempt, request.codegenArgs, *flags,
                         result.graphName);
  };

  if (!request.useCache) {
    cache::CompileOutput output = compile();
    result.cacheStatus = "off";
    if (!succeeded) {
      result.error = output.diagnostic;
      return result;
    }
    result.artifact = std::move(output.artifact);
    result.ok = true;
    return result;
  }

  cache::CacheOptions options;
  options.root = cache::resolveRoot(request.cacheDir);
  options.retryFailed = request.retryFailed;
  if (request.warn)
    options.warn = request.warn;
  cache::Result<cache::Cache> store = cache::Cache::open(options);
  if (!store) {
    result.error = store.error;
    return result;
  }
  std::vector<uint8_t> fresh;
  auto compileAndKeep = [&]() {
    cache::CompileOutput output = compile();
    if (succeeded)
      fresh = output.artifact;
    return output;
  };
  cache::CompileResult outcome =
      store->getOrCompile(key, request.graphText, compileAndKeep);
  if (outcome.entry)
    result.entryPath = outcome.entry->path;
  using Source = cache::CompileResult::Source;
  switch (outcome.source) {
  case Source::CachedFailure:
    result.error = outcome.diagnostic +
                   " (a cached failure; retry_failed=True recompiles)";
    return result;
  case Source::Failed:
    if (compiled && succeeded) {
      // Compiled but not stored (disk full, permissions): still usable.
      result.warnings.push_back("the artifact was not stored in the cache: " +
                                outcome.diagnostic);
      result.artifact = std::move(fresh);
      result.cacheStatus = "miss";
      result.ok = true;
      return result;
    }
    result.error = outcome.diagnostic.empty() ? diagnostic : outcome.diagnostic;
    return result;
  case Source::Hit:
  case Source::Compiled:
    break;
  }
  if (compiled && succeeded) {
    result.artifact = std::move(fresh);
    result.cacheStatus = "miss";
  } else {
    cache::Result<std::vector<uint8_t>> cached =
        store->readArtifact(*outcome.entry);
    if (!cached) {
      result.error = cached.error;
      return result;
    }
    result.artifact = std::move(*cached);
    result.cacheStatus = "hit";
    result.compileSeconds = outcome.entry->metadata.compileSeconds;
  }
  result.ok = true;
  return result;
}
