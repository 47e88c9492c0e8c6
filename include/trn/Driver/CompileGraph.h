//===- CompileGraph.h - compile one trn graph through the cache -*- C++ -*-===//
//
// One graph through the compiler, as trn-cc (and trn-parallel-compile's
// workers, which are trn-cc processes) and the Python extension compile it:
// read, parse and verify the graph, compute its cache key, and return the
// artifact from the compile cache, compiling it under the key's lock on a
// miss.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DRIVER_COMPILEGRAPH_H
#define TRN_DRIVER_COMPILEGRAPH_H

#include "trn/Cache/Cache.h"
#include "trn/Cache/Key.h"
#include "trn/Driver/Pipeline.h"
#include "trnrt/Isa.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlir::trn {

/// Sets `context` up to compile one graph: every trn dialect loaded, no
/// multithreading (one graph, one kernel: nothing to run in parallel, and a
/// single-threaded context uniques millions of attributes without locking),
/// no op dumps in diagnostics (they would bloat the cached log).
void configureCompilerContext(MLIRContext &context);

/// The codegen options the normalised flags of a cache key decide.
CompileOptions compileOptionsFromFlags(const cache::NormalizedFlags &flags);

/// Serialises a compiled program as the artifact of `key`: only what is a
/// function of the key goes in, so a key's artifact is the same bytes
/// whoever compiles it. False with `error` if the writer refuses it.
bool serializeProgram(const trnrt::Program &program, const cache::CacheKey &key,
                      const cache::NormalizedFlags &flags,
                      std::vector<uint8_t> &artifact, std::string &error);

/// The outcome of running the pipeline once on a graph.
struct CompileAttempt {
  std::optional<trnrt::Program> program; ///< set on success
  std::vector<uint8_t> artifact;         ///< serialised, when `program` is set
  std::string diagnostic;                ///< the first error, on failure
  std::string log;                       ///< every diagnostic, one per line
  std::vector<std::string> warnings;
  double seconds = 0;
};

/// Runs the pipeline on `module` (in place) with `options` and serialises
/// the program as `key`'s artifact; errors are collected, not printed.
CompileAttempt compileModule(ModuleOp module, const cache::CacheKey &key,
                             const cache::NormalizedFlags &flags,
                             const CompileOptions &options);

/// What the cache stores for an attempt: the artifact or the deterministic
/// failure, the log, and the metadata (flags as given, host, peak memory).
cache::CompileOutput cacheOutputOf(const CompileAttempt &attempt,
                                   const std::vector<std::string> &codegenArgs,
                                   const cache::NormalizedFlags &flags,
                                   const std::string &graphName);

/// This process's peak resident memory (cache metadata, reports).
int64_t peakMemoryBytes();
/// The host name recorded in cache metadata.
std::string hostName();

/// Why a compile gave no artifact, so that a caller can add the hint in its
/// own terms (trn-cc's flags, the Python package's keyword arguments).
enum class GraphCompileFailure {
  None,
  Error,            ///< bad flags, an unreadable graph, a compile error
  CacheUnavailable, ///< the cache cannot be opened
  CachedFailure,    ///< the cache holds this key's failed compile
  UndecodableEntry, ///< a cache hit whose artifact does not decode
};

struct GraphCompileRequest {
  /// The graph as MLIR text, or else the file (or "-": standard input) that
  /// holds it, read with trn's bounded reader (trn/Support/InputFile.h).
  std::string graphText;
  std::string graphPath;
  /// Names graphText in messages (a file path, "<python>").
  std::string sourceName = "<graph>";
  /// Codegen flags as a user types them ("--auto-cast", "matmul", "-O2").
  std::vector<std::string> codegenArgs;
  bool useCache = true;
  /// "" means TRN_CACHE_DIR, else the default root.
  std::string cacheDir;
  bool retryFailed = false;
  /// The longest wait for another process compiling the same key (else the
  /// cache's default).
  std::optional<double> lockTimeoutSeconds;
  /// Before compiling, partition the graph for the flags' mesh (no
  /// lowering) and fail when one rank does not fit its core's HBM.
  bool checkMeshFit = false;
  /// Return the program (a pipeline stage's first fragment), decoding the
  /// artifact of a cache hit.
  bool wantProgram = false;
  bool printIRAfterAll = false;
  /// When set, the phases and passes are timed in scopes nested here.
  TimingScope *timing = nullptr;
  /// False when the process ends right after (trn-cc): the IR is then left
  /// to the OS, which frees it at once, where destroying a big step's
  /// millions of ops takes a second.
  bool freeIR = true;

  /// Messages as they happen, one line each, so that a tool prints them in
  /// order with the compiler's own output.
  /// What the user should know (waiting for a lock, a corrupt entry
  /// quarantined).
  std::function<void(const std::string &)> warn;
  /// What a verbose tool adds: the graph's and the flags' hashes, the cache.
  std::function<void(const std::string &)> detail;
  /// After a compile timed by `timing`: the kernel's size.
  std::function<void(const std::string &)> timingDetail;
  /// With checkMeshFit, a mesh's footprint once measured, and whether every
  /// rank fits (when not, compileGraph fails with meshFitProblem's line).
  std::function<void(const MeshFootprint &, bool fits)> meshFootprint;
};

struct GraphCompileResult {
  bool ok = false;
  /// One line when !ok: the compiler's first diagnostic, a bad flag, a cache
  /// that cannot be opened.
  std::string error;
  GraphCompileFailure failure = GraphCompileFailure::None;
  std::vector<std::string> warnings;
  std::vector<uint8_t> artifact;
  std::optional<trnrt::Program> program; ///< with wantProgram
  std::string key;                       ///< MODULE_<graph>+<flags>
  std::string graphName;                 ///< the function's symbol
  std::string normalizedFlags;           ///< the flags as the key sees them
  std::string cacheStatus;               ///< "hit", "miss" or "off"
  /// On a miss, why when the graph is cached with other flags (a near miss:
  /// cache::Cache::nearMiss); empty otherwise.
  std::string missReason;
  std::string cacheRoot;     ///< the cache used, when there is one
  std::string entryPath;     ///< the cache entry, when there is one
  double compileSeconds = 0; ///< this compile's, or the cached entry's
  double waitedSeconds = 0;  ///< for another process compiling the key
};

/// Reads, parses, verifies, keys and compiles (or finds) the graph of
/// `request`: the one compile path of trn-cc (and so of
/// trn-parallel-compile's workers) and of the Python extension.
GraphCompileResult compileGraph(const GraphCompileRequest &request);

/// The cache key of a graph under `codegenArgs`, without compiling; false
/// with a one-line `error` for a graph that does not parse or bad flags.
bool graphCacheKey(const std::string &graphText,
                   const std::vector<std::string> &codegenArgs,
                   std::string &key, std::string &error);

} // namespace mlir::trn

#endif // TRN_DRIVER_COMPILEGRAPH_H
