//===- VerifyEntry.h - loading a cache entry and checking it ----*- C++ -*-===//
//
// Opens an entry directory and checks it against its manifest: the manifest's
// own checksum, the key it names, every file's size and (at the Everything
// level) checksum, and flags.json. An entry that vanishes while it is read is
// a miss, not corruption: other processes publish and remove entries all the
// time.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_CACHE_VERIFYENTRY_H
#define TRN_LIB_CACHE_VERIFYENTRY_H

#include "EntryFormat.h"
#include "Support.h"

#include <sys/stat.h>

#include <string>

namespace mlir::trn::cache::detail {

enum class LoadState {
  Ok,
  Missing,     ///< no entry (or it vanished while we read it)
  Corrupt,     ///< quarantine it
  NewerFormat, ///< leave it alone
  Unreadable,  ///< permissions or I/O: not the entry's fault
};

enum class VerifyLevel {
  /// Manifest and metadata checksums, every file's size: cheap (list).
  Sizes,
  /// Every checksum (lookup, verify).
  Everything,
};

struct LoadedEntry {
  LoadState state = LoadState::Missing;
  std::string problem;
  Entry entry;
  Manifest manifest;
  FileDescriptor dirFd;
  struct stat dirInfo {};
};

/// Whether `path` is still the directory `info` describes.
bool stillAt(const std::string &path, const struct stat &info);

/// Loads the entry of `key` at `path` and checks it to `level`.
LoadedEntry loadEntry(const std::string &path, const CacheKey &key,
                      VerifyLevel level);

} // namespace mlir::trn::cache::detail

#endif // TRN_LIB_CACHE_VERIFYENTRY_H
