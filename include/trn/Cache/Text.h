//===- Text.h - text helpers of the MLIR-free tools -------------*- C++ -*-===//
//
// Shared by trn-cache, trn-parallel-compile and the compile-flags table (all
// of which link the cache library): sizes and counts for people, and the edit
// distance behind every "did you mean" suggestion.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_CACHE_TEXT_H
#define TRN_CACHE_TEXT_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::trn::cache {

/// "512 B", "1.5 KiB", "9.9 GiB" (powers of 1024, one decimal).
std::string formatSize(int64_t bytes);

/// "1 graph", "3 graphs": `count` and the noun, plural unless one
/// (`plural` when adding "s" is wrong: "entries").
std::string countOf(int64_t count, std::string_view noun,
                    std::string_view plural = {});

/// What `TOOL --version` prints in every trn tool: the tool and trn's
/// version, the compiler version in the cache's keys, the LLVM/MLIR the
/// build used and, from a tool that compiles or runs programs, `targets`
/// ("trn1 trn2": the first is the default).
std::string toolVersion(std::string_view tool,
                        const std::vector<std::string_view> &targets = {});

/// `name=value;...` (normalised flags as keys and reports record them) as a
/// map; an item without '=' maps to "".
std::map<std::string, std::string> parseNormalizedFlags(std::string_view text);

/// Optimal string alignment distance: Levenshtein plus adjacent
/// transpositions, so `cats` is one edit from `cast`.
size_t editDistance(std::string_view a, std::string_view b);

} // namespace mlir::trn::cache

#endif // TRN_CACHE_TEXT_H
