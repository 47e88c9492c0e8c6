//===- Key.h - compile-cache keys and flag normalisation --------*- C++ -*-===//
//
// A cache key names a compiled artifact: the XXH3-128 hash of the canonical
// graph (computed by the compiler, see trn/Dialect/Trn/Utils/GraphHash.h) and
// the XXH3-128 hash of the normalised codegen flags, target and compiler
// version. Entries live in `<root>/trncc-<version>/MODULE_<graph>+<flags>/`.
//
// This library knows keys and files, not dialects: it depends on neither MLIR
// nor LLVM, so the runtime can look entries up too.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_CACHE_KEY_H
#define TRN_CACHE_KEY_H

#include "trn/Support/Hash128.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::trn::cache {

/// The compiler version that names the cache's top directory; bump it
/// whenever codegen changes so that old artifacts are never reused.
const char *compilerVersion();

struct CacheKey {
  Hash128 graph;
  Hash128 flags;
  /// `MODULE_<graph hex>+<flags hex>`.
  std::string dirName() const;
  /// Parses a directory name or the `<graph hex>+<flags hex>` short form.
  static std::optional<CacheKey> parse(std::string_view text);
  bool operator==(const CacheKey &other) const {
    return graph == other.graph && flags == other.flags;
  }
  bool operator<(const CacheKey &other) const {
    return dirName() < other.dirName();
  }
};

/// Codegen flags after normalisation (trn::normalizeFlags in
/// trn/Driver/CompileFlags.h makes them): every known flag that changes the
/// compiler's output, with its value (defaults filled in), sorted by name.
/// Flags that do not change the output (verbosity, cache dir, report paths,
/// output path, retry, timeouts) are dropped. The data-parallel degree is
/// dropped too: one artifact serves every DP degree.
struct NormalizedFlags {
  std::map<std::string, std::string> values;
  /// `name=value` pairs joined by ';', e.g. `auto-cast=none;opt-level=2;...`.
  std::string canonical() const;
};

/// The flags hash: XXH3-128 over a versioned record of the normalised flags,
/// the target and the compiler version.
Hash128 hashFlags(const NormalizedFlags &flags);

} // namespace mlir::trn::cache

#endif // TRN_CACHE_KEY_H
