//===- Key.cpp - compile-cache keys
//----------------------------------------===//
//
// Hash128 printing and parsing, cache directory names, and the canonical
// record of normalised flags that the flags hash covers (the normalisation
// itself, with the table of flags, is trn/Driver/CompileFlags.h). Plain C++17
// and xxHash: the runtime links this too.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Key.h"

#include <xxhash.h>

#ifndef TRN_VERSION_STRING
#error                                                                         \
    "TRN_VERSION_STRING must be defined by the build (lib/Cache/CMakeLists.txt)"
#endif

namespace mlir::trn::cache {

const char *compilerVersion() { return TRN_VERSION_STRING; }

//===----------------------------------------------------------------------===//
// Hash128 and CacheKey
//===----------------------------------------------------------------------===//

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr size_t kHashHexLength = 32;
constexpr std::string_view kDirPrefix = "MODULE_";

void appendHex64(std::string &out, uint64_t value) {
  for (int shift = 60; shift >= 0; shift -= 4)
    out.push_back(kHexDigits[(value >> shift) & 0xf]);
}

/// Only lowercase digits: a key has exactly one spelling, so a directory name
/// that parses is always the name dirName() gives back.
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
  out.reserve(kHashHexLength);
  appendHex64(out, high);
  appendHex64(out, low);
  return out;
}

std::optional<Hash128> Hash128::fromHex(std::string_view hex) {
  if (hex.size() != kHashHexLength)
    return std::nullopt;
  Hash128 hash;
  for (size_t i = 0; i < kHashHexLength; ++i) {
    int digit = lowerHexValue(hex[i]);
    if (digit < 0)
      return std::nullopt;
    uint64_t &word = i < kHashHexLength / 2 ? hash.high : hash.low;
    word = (word << 4) | static_cast<uint64_t>(digit);
  }
  return hash;
}

Hash128 hashBytes(std::string_view bytes) {
  XXH128_hash_t digest = XXH3_128bits(bytes.data(), bytes.size());
  return Hash128{digest.high64, digest.low64};
}

std::string CacheKey::dirName() const {
  std::string name(kDirPrefix);
  name += graph.hex();
  name += '+';
  name += flags.hex();
  return name;
}

std::optional<CacheKey> CacheKey::parse(std::string_view text) {
  if (text.substr(0, kDirPrefix.size()) == kDirPrefix)
    text.remove_prefix(kDirPrefix.size());
  if (text.size() != 2 * kHashHexLength + 1 || text[kHashHexLength] != '+')
    return std::nullopt;
  auto graph = Hash128::fromHex(text.substr(0, kHashHexLength));
  auto flags = Hash128::fromHex(text.substr(kHashHexLength + 1));
  if (!graph || !flags)
    return std::nullopt;
  return CacheKey{*graph, *flags};
}

//===----------------------------------------------------------------------===//
// Flags record
//===----------------------------------------------------------------------===//

std::string NormalizedFlags::canonical() const {
  std::string joined;
  for (const auto &[name, value] : values) {
    if (!joined.empty())
      joined += ';';
    joined += name;
    joined += '=';
    joined += value;
  }
  return joined;
}

Hash128 hashFlags(const NormalizedFlags &flags) {
  // A versioned record with NUL separators: bump the tag whenever the record's
  // layout or the meaning of a flag changes.
  std::string record("trn-flags-v1");
  record += '\0';
  record += flags.canonical();
  record += '\0';
  record += compilerVersion();
  return hashBytes(record);
}

} // namespace mlir::trn::cache
