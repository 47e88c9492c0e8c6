//===- Text.h - text helpers of the MLIR-free tools -------------*- C++ -*-===//
//
// Shared by trn-cache, trn-parallel-compile and the compile-flags table (all
// of which link the cache library): sizes for people and the edit distance
// behind every "did you mean" suggestion.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_CACHE_TEXT_H
#define TRN_CACHE_TEXT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mlir::trn::cache {

/// "512 B", "1.5 KiB", "9.9 GiB" (powers of 1024, one decimal).
std::string formatSize(int64_t bytes);

/// Optimal string alignment distance: Levenshtein plus adjacent
/// transpositions, so `cats` is one edit from `cast`.
size_t editDistance(std::string_view a, std::string_view b);

} // namespace mlir::trn::cache

#endif // TRN_CACHE_TEXT_H
