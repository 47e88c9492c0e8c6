//===- Support.h - POSIX helpers for the compile cache ----------*- C++ -*-===//
//
// Small wrappers over POSIX file and process calls that the cache store and
// its locks share. They report failures as errno values, never throw, and
// treat a file that vanishes under them (ENOENT, or ESTALE on NFS) as an
// ordinary outcome, because every maintenance command runs while other
// processes publish and delete entries.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_CACHE_SUPPORT_H
#define TRN_LIB_CACHE_SUPPORT_H

#include "trn/Support/CommandLineValues.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::trn::cache::detail {

/// strerror(err) as a std::string.
std::string errnoText(int err);
/// True for the errors that mean "the file is gone" (ENOENT, ESTALE).
bool isVanished(int err);
/// True for the errors that mean "the disk or quota is full".
bool isOutOfDisk(int err);

std::string joinPath(const std::string &dir, const std::string &name);

/// Wall-clock seconds since the epoch (whole and fractional).
int64_t nowUnix();
double nowUnixSeconds();
/// Monotonic seconds: the only clock a waiter uses to judge a lease.
double steadySeconds();
void sleepSeconds(double seconds);

/// This machine's host name, its boot id (/proc/sys/kernel/random/boot_id)
/// and its pid namespace (/proc/self/ns/pid): together they tell whether a
/// lock's owner runs on this very kernel, where its pid can be checked.
const std::string &hostName();
const std::string &bootId();
const std::string &pidNamespace();

/// Start time of a process in clock ticks after boot (/proc/<pid>/stat field
/// 22), or std::nullopt if the process does not exist or is a zombie.
std::optional<int64_t> processStartTicks(int64_t pid);
/// The start time of the calling process (recomputed after fork).
int64_t selfStartTicks();

/// A uniform random number in [0, 1) (different in every forked child).
double randomUnit();
/// `bytes` random bytes from getrandom(2), as lowercase hex.
std::string randomHex(int bytes);
/// `<host>.<pid>.<random>`, usable in a file name and unique across hosts.
std::string uniqueSuffix();

/// What readFile, readFileAt and openRegularFileAt return, besides errno
/// values, for a file that is not a regular file (a FIFO would block the
/// reader and a device, say a link to /dev/zero, never end) or that is over
/// the caller's limit. Inside an entry either is corruption, not an I/O
/// error.
constexpr int kNotRegularFile = -1;
constexpr int kFileTooLarge = -2;
/// The limit of the small files read whole (the marker, /proc files).
constexpr uint64_t kMaxSmallFileBytes = uint64_t(1) << 20;

/// Reads a whole regular file of at most `maxBytes` bytes
/// (trnrt::readRegularFile). Returns 0, an errno value, kNotRegularFile or
/// kFileTooLarge; for the last two `problem` gets the one-line reason, which
/// names `path`.
int readFile(const std::string &path, std::string &out,
             uint64_t maxBytes = kMaxSmallFileBytes,
             std::string *problem = nullptr);
int readFileAt(int dirFd, const char *name, std::string &out, uint64_t maxBytes,
               std::string *problem = nullptr);
/// Opens a regular file of at most `maxBytes` bytes for streaming
/// (trnrt::openRegularFile): returns 0 with `fd` set, or an error as
/// readFileAt does.
int openRegularFileAt(int dirFd, const char *name, uint64_t maxBytes, int &fd,
                      std::string *problem = nullptr);
/// Creates `name` in `dirFd` exclusively, writes `data`, optionally fsyncs,
/// and closes (close errors count: NFS reports write errors there).
int writeNewFileAt(int dirFd, const char *name, std::string_view data,
                   bool sync);
/// Replaces `dir`/`name` with `content` through a temporary `.<name>.<unique>`
/// in `dir` and a rename, so readers see the old file or the new one.
int replaceFile(const std::string &dir, const char *name,
                const std::string &content, bool sync);
/// fsync(2) on a directory, so that a rename or a new name in it is durable.
int syncDirectory(const std::string &path);
/// mkdir that accepts an existing directory; returns 0 or an errno value.
int makeDirectory(const std::string &path);
/// mkdir -p.
int makeDirectories(const std::string &path);

/// Names in a directory, without "." and "..". A missing directory is empty.
std::vector<std::string> listDirectory(const std::string &path,
                                       int *error = nullptr);
/// Removes a file or a directory tree; files vanishing meanwhile are fine.
void removeTree(const std::string &path);
/// Sum of the sizes of the regular files below `path` (0 if it vanished).
int64_t treeSize(const std::string &path);

/// An open file descriptor that closes itself.
class FileDescriptor {
public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd(fd) {}
  FileDescriptor(FileDescriptor &&other) noexcept : fd(other.release()) {}
  FileDescriptor &operator=(FileDescriptor &&other) noexcept;
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor();
  int get() const { return fd; }
  bool valid() const { return fd >= 0; }
  int release() {
    int result = fd;
    fd = -1;
    return result;
  }

private:
  int fd = -1;
};

/// Same file: device and inode.
bool sameFile(const struct stat &a, const struct stat &b);

} // namespace mlir::trn::cache::detail

#endif // TRN_LIB_CACHE_SUPPORT_H
