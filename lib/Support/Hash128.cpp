//===- Hash128.cpp - 128-bit hashes and their hex spelling ----------------===//

#include "trn/Support/Hash128.h"

#include <xxhash.h>

namespace mlir::trn {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

void appendHex64(std::string &out, uint64_t value) {
  for (int shift = 60; shift >= 0; shift -= 4)
    out.push_back(kHexDigits[(value >> shift) & 0xf]);
}

/// Only lowercase digits: a hash has exactly one spelling, so a cache
/// directory name that parses is always the name dirName() gives back.
int lowerHexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

} // namespace

std::string Hash128::hex() const {
  std::string out;
  out.reserve(kHexLength);
  appendHex64(out, high);
  appendHex64(out, low);
  return out;
}

std::optional<Hash128> Hash128::fromHex(std::string_view hex) {
  if (hex.size() != kHexLength)
    return std::nullopt;
  Hash128 hash;
  for (size_t i = 0; i < kHexLength; ++i) {
    int digit = lowerHexValue(hex[i]);
    if (digit < 0)
      return std::nullopt;
    uint64_t &word = i < kHexLength / 2 ? hash.high : hash.low;
    word = (word << 4) | static_cast<uint64_t>(digit);
  }
  return hash;
}

Hash128 hashBytes(std::string_view bytes) {
  XXH128_hash_t digest = XXH3_128bits(bytes.data(), bytes.size());
  return Hash128{digest.high64, digest.low64};
}

} // namespace mlir::trn
