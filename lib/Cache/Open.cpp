//===- Open.cpp - opening a compile cache's root --------------------------===//
//
// Cache::open: the options' checks, the root and its marker (a directory that
// holds other files is refused, never taken over), read-only use, and the
// version directory with its tmp/, locks/ and quarantine/.
//
//===----------------------------------------------------------------------===//

#include "CacheAccess.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace mlir::trn::cache {

using namespace detail;
using json = nlohmann::json;

namespace {

constexpr const char *kMarkerFile = "trn-cache.json";
constexpr const char *kCacheDirTag = "CACHEDIR.TAG";

const char *kCacheDirTagText =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by trn (the compile cache).\n"
    "# For information about cache directory tags see "
    "https://bford.info/cachedir/\n";

} // namespace

std::string resolveRoot(const std::string &cliDir) {
  if (!cliDir.empty())
    return cliDir;
  const char *env = std::getenv("TRN_CACHE_DIR");
  if (env && *env)
    return env;
  return kDefaultRoot;
}

/// Names that a trn cache root may hold (even before its marker exists, as
/// while another process creates it).
static bool isCacheRootName(const std::string &name) {
  for (const char *file : {kMarkerFile, kCacheDirTag, kConfigFile})
    if (name == file || name.rfind(std::string(".") + file + ".", 0) == 0)
      return true; // the file, or its temporary (replaceFile)
  return name.rfind("trncc-", 0) == 0 ||
         // What a shared filesystem leaves of a file unlinked while open
         // (the marker replaced under a reader): FUSE's and NFS's renames.
         name.rfind(".fuse_hidden", 0) == 0 || name.rfind(".nfs", 0) == 0;
}

/// Why the cache is read-only when access(W_OK) failed with `err`, or ""
/// when `err` does not mean that.
static std::string readOnlyCause(int err) {
  if (err == EROFS)
    return "read-only file system";
  if (err == EACCES || err == EPERM)
    return "not writable: " + errnoText(err);
  return "";
}

/// $TRN_CACHE_READ_ONLY: 1 (or true, yes, on) forces read-only use; 0 (or
/// false, no, off) and unset or empty do not. Anything else is an error.
static std::optional<bool> readOnlyFromEnvironment(std::string &error) {
  const char *env = std::getenv("TRN_CACHE_READ_ONLY");
  std::string value = env ? env : "";
  for (char &c : value)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char *on : {"1", "true", "yes", "on"})
    if (value == on)
      return true;
  for (const char *off : {"", "0", "false", "no", "off"})
    if (value == off)
      return false;
  error = "TRN_CACHE_READ_ONLY='" + std::string(env) +
          "' is neither 1 nor 0 (1 uses the cache without writing to it)";
  return std::nullopt;
}

Result<Cache> Cache::open(CacheOptions options) {
  using R = Result<Cache>;
  try {
    const std::string &root = options.root;
    if (root.empty())
      return R::failure("no cache directory given (set --cache-dir or "
                        "TRN_CACHE_DIR)");
    if (!(options.leaseSeconds > 0) || !(options.heartbeatSeconds > 0) ||
        !(options.pollSeconds > 0) || !(options.lockWaitSeconds >= 0))
      return R::failure("cache options: the lease, heartbeat and poll "
                        "intervals must be positive and the lock wait not "
                        "negative");
    if (options.heartbeatSeconds >= options.leaseSeconds)
      return R::failure("cache options: the heartbeat (" +
                        formatSeconds(options.heartbeatSeconds) +
                        ") must be shorter than the lease (" +
                        formatSeconds(options.leaseSeconds) + ")");
    if (!options.warn)
      options.warn = [](const std::string &message) {
        std::fprintf(stderr, "trn: warning: %s\n", message.c_str());
      };
    // Read-only when asked (the option, the environment) or, below, when
    // the OS refuses writes to the root or the version directory.
    std::string readOnlyReason = options.readOnly ? "opened read-only" : "";
    std::string envError;
    std::optional<bool> envReadOnly = readOnlyFromEnvironment(envError);
    if (!envReadOnly)
      return R::failure(envError);
    if (*envReadOnly && readOnlyReason.empty())
      readOnlyReason = "TRN_CACHE_READ_ONLY=1";

    struct stat info;
    if (stat(root.c_str(), &info) != 0) {
      int err = errno;
      if (err != ENOENT)
        return R::failure("cannot use cache directory '" + root +
                          "': " + errnoText(err));
      if (!options.create)
        return R::failure("cache directory '" + root +
                          "' does not exist; check --cache-dir or "
                          "TRN_CACHE_DIR (a compile creates it)");
      if (!readOnlyReason.empty())
        return R::failure("cache directory '" + root +
                          "' does not exist, and a read-only cache (" +
                          readOnlyReason + ") is never created");
      if (int mkErr = makeDirectories(root))
        return R::failure("cannot create cache directory '" + root +
                          "': " + errnoText(mkErr) +
                          "; choose a writable --cache-dir or TRN_CACHE_DIR");
      if (stat(root.c_str(), &info) != 0)
        return R::failure("cannot use cache directory '" + root +
                          "': " + errnoText(errno));
    }
    if (!S_ISDIR(info.st_mode))
      return R::failure("cache path '" + root +
                        "' is not a directory; point --cache-dir or "
                        "TRN_CACHE_DIR at a directory");
    if (access(root.c_str(), R_OK | X_OK) != 0)
      return R::failure("cannot read cache directory '" + root + "' (" +
                        errnoText(errno) +
                        "); fix its permissions or choose another "
                        "--cache-dir");
    if (readOnlyReason.empty() && access(root.c_str(), W_OK) != 0) {
      int err = errno;
      readOnlyReason = readOnlyCause(err);
      if (readOnlyReason.empty())
        return R::failure("cache directory '" + root + "' is not writable (" +
                          errnoText(err) +
                          "); fix its permissions or choose another "
                          "--cache-dir");
    }

    std::string markerPath = joinPath(root, kMarkerFile);
    std::string markerText, markerProblem;
    int markerErr =
        readFile(markerPath, markerText, kMaxSmallFileBytes, &markerProblem);
    // Another process may create the cache between our read of the marker
    // and our listing (trn-parallel-compile's tasks open one new cache at
    // once, and the first then adds its jobs/ directory): a marker seen in
    // the listing is read again instead of judging the directory foreign.
    std::vector<std::string> names;
    if (isVanished(markerErr)) {
      int listErr = 0;
      names = listDirectory(root, &listErr);
      if (listErr)
        return R::failure("cannot list cache directory '" + root +
                          "': " + errnoText(listErr));
      if (std::find(names.begin(), names.end(), kMarkerFile) != names.end())
        markerErr = readFile(markerPath, markerText, kMaxSmallFileBytes,
                             &markerProblem);
    }
    if (markerErr == kNotRegularFile || markerErr == kFileTooLarge)
      return R::failure(markerProblem +
                        "; it is not a valid trn cache marker: if this is a "
                        "trn cache, delete the marker and it is rewritten");
    if (markerErr == 0) {
      json marker = json::parse(markerText, nullptr, false);
      if (!marker.is_object() || !marker.contains("format") ||
          !marker["format"].is_number_integer())
        return R::failure("'" + markerPath +
                          "' is not a valid trn cache marker; if this is a "
                          "trn cache, delete the marker and it is rewritten");
      int format = marker["format"].get<int>();
      if (format > kFormatVersion)
        return R::failure("cache '" + root +
                          "' was written by a newer trn (cache format " +
                          std::to_string(format) + ", this trn reads up to " +
                          std::to_string(kFormatVersion) +
                          "); use a newer trn or another --cache-dir");
    } else if (!isVanished(markerErr)) {
      return R::failure("cannot read '" + markerPath +
                        "': " + errnoText(markerErr));
    } else {
      for (const std::string &name : names)
        if (!isCacheRootName(name))
          return R::failure(
              "'" + root +
              "' is not a trn compile cache (it holds other files, such as '" +
              name +
              "', and no trn-cache.json); refusing to use it: choose an "
              "empty or new --cache-dir");
      if (!readOnlyReason.empty() && names.empty())
        return R::failure("cache directory '" + root + "' is read-only (" +
                          readOnlyReason + ") and holds no trn cache (no " +
                          kMarkerFile +
                          "); make it writable or choose another "
                          "--cache-dir");
      if (options.create && readOnlyReason.empty()) {
        json marker = {{"format", kFormatVersion},
                       {"created_by", std::string("trn ") + compilerVersion()}};
        if (int err =
                replaceFile(root, kMarkerFile, marker.dump(2) + "\n", true))
          return R::failure("cannot write '" + markerPath +
                            "': " + errnoText(err));
        replaceFile(root, kCacheDirTag, kCacheDirTagText, true);
      }
    }

    Cache cache(std::move(options));
    cache.state = std::make_shared<CacheState>();
    std::string versionDir = cache.versionDir();
    if (stat(versionDir.c_str(), &info) == 0) {
      if (!S_ISDIR(info.st_mode))
        return R::failure("'" + versionDir +
                          "' is not a directory; remove it or choose another "
                          "--cache-dir");
      if (access(versionDir.c_str(), R_OK | X_OK) != 0)
        return R::failure("cannot read cache directory '" + versionDir + "' (" +
                          errnoText(errno) +
                          "); fix its permissions (a cache shared by several "
                          "users needs group write, e.g. umask 002)");
      if (readOnlyReason.empty() && access(versionDir.c_str(), W_OK) != 0) {
        int err = errno;
        readOnlyReason = readOnlyCause(err);
        if (readOnlyReason.empty())
          return R::failure("cache directory '" + versionDir +
                            "' is not writable (" + errnoText(err) +
                            "); fix its permissions (a cache shared by "
                            "several users needs group write, e.g. umask "
                            "002)");
      }
    }
    cache.opts.readOnly = !readOnlyReason.empty();
    cache.state->readOnlyReason = readOnlyReason;
    if (cache.opts.create && !cache.opts.readOnly) {
      for (const std::string &path : {versionDir, joinPath(versionDir, kTmpDir),
                                      joinPath(versionDir, kLocksDir),
                                      joinPath(versionDir, kQuarantineDir)})
        if (int err = makeDirectory(path))
          return R::failure("cannot create '" + path + "': " + errnoText(err));
      CacheAccess(cache).ensureStatsDirectory(versionDir);
    }
    return R::success(std::move(cache));
  } catch (const std::exception &error) {
    return R::failure(std::string("cannot open the cache: ") + error.what());
  }
}

const std::string &Cache::readOnlyReason() const {
  return state->readOnlyReason;
}

std::string Cache::versionDir() const {
  std::string version = compilerVersion();
  for (char &c : version)
    if (c == '/')
      c = '_';
  return joinPath(opts.root, "trncc-" + version);
}

} // namespace mlir::trn::cache
