//===- Hash128.h - 128-bit hashes and their hex spelling --------*- C++ -*-===//
//
// XXH3-128 digests as values: the graph hash (trn/Dialect/Trn/Utils/
// GraphHash.h) computes one, and the compile cache (trn/Cache/Key.h) names
// its entries by two of them. Plain C++17 and xxHash, so that the dialect and
// the MLIR-free cache both build on it without depending on each other.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_SUPPORT_HASH128_H
#define TRN_SUPPORT_HASH128_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mlir::trn {

/// A 128-bit hash, printed as 32 lowercase hex digits (high word first).
struct Hash128 {
  /// The length of hex().
  static constexpr size_t kHexLength = 32;

  uint64_t high = 0;
  uint64_t low = 0;
  std::string hex() const;
  static std::optional<Hash128> fromHex(std::string_view hex);
  bool operator==(const Hash128 &other) const {
    return high == other.high && low == other.low;
  }
  bool operator!=(const Hash128 &other) const { return !(*this == other); }
};

/// XXH3-128 of `bytes`.
Hash128 hashBytes(std::string_view bytes);

} // namespace mlir::trn

#endif // TRN_SUPPORT_HASH128_H
