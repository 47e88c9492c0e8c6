//===- Key.cpp - compile-cache keys --------------------------------------===//
//
// Cache directory names and the canonical record of normalised flags that the
// flags hash covers (the normalisation itself, with the table of flags, is
// trn/Driver/CompileFlags.h; the hashes are trn/Support/Hash128.h). Plain
// C++17: the runtime links this too.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Key.h"

#ifndef TRN_VERSION_STRING
#error                                                                         \
    "TRN_VERSION_STRING must be defined by the build (lib/Cache/CMakeLists.txt)"
#endif

namespace mlir::trn::cache {

const char *compilerVersion() { return TRN_VERSION_STRING; }

//===----------------------------------------------------------------------===//
// CacheKey
//===----------------------------------------------------------------------===//

namespace {

constexpr std::string_view kDirPrefix = "MODULE_";

} // namespace

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
  if (text.size() != 2 * Hash128::kHexLength + 1 ||
      text[Hash128::kHexLength] != '+')
    return std::nullopt;
  auto graph = Hash128::fromHex(text.substr(0, Hash128::kHexLength));
  auto flags = Hash128::fromHex(text.substr(Hash128::kHexLength + 1));
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
