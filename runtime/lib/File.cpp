//===- File.cpp - Bounded reads of input files ----------------------------===//

#include "trnrt/File.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace trnrt {

namespace {

void setFailure(ReadFailure *failure, ReadFailure::Kind kind, int err = 0) {
  if (failure)
    *failure = ReadFailure{kind, err};
}

std::string cannotRead(const std::string &name, int err) {
  char buffer[256];
  // GNU strerror_r may return a static string instead of filling `buffer`.
  return "cannot read '" + name +
         "': " + strerror_r(err, buffer, sizeof(buffer));
}

std::string notRegular(const std::string &path, unsigned mode) {
  return path + " is not a regular file (" + fileKindName(mode) + ")";
}

} // namespace

const char *fileKindName(unsigned mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISLNK(mode))
    return "a symbolic link";
  return "an unknown kind of file";
}

std::string formatByteSize(uint64_t bytes) {
  static const char *units[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; ++i) {
    uint64_t unit = uint64_t(1) << (10 * (4 - i));
    if (bytes >= unit && bytes % unit == 0)
      return std::to_string(bytes / unit) + " " + units[i];
  }
  return std::to_string(bytes) + " bytes";
}

int openRegularFile(const std::string &path, uint64_t maxBytes,
                    std::string &error, ReadFailure *failure, int dirFd) {
  // stat first: opening a FIFO waits for a writer, and opening some devices
  // has effects (a tape rewinds).
  struct stat status;
  if (fstatat(dirFd, path.c_str(), &status, 0) != 0) {
    int err = errno;
    error = cannotRead(path, err);
    setFailure(failure, ReadFailure::Open, err);
    return -1;
  }
  if (!S_ISREG(status.st_mode)) {
    error = notRegular(path, status.st_mode);
    setFailure(failure, ReadFailure::NotRegular);
    return -1;
  }
  // O_NONBLOCK: should the path have become a FIFO since, the open returns
  // at once and the check below refuses it.
  int fd =
      openat(dirFd, path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0 || fstat(fd, &status) != 0) {
    int err = errno;
    if (fd >= 0)
      close(fd);
    error = cannotRead(path, err);
    setFailure(failure, ReadFailure::Open, err);
    return -1;
  }
  if (!S_ISREG(status.st_mode)) {
    close(fd);
    error = notRegular(path, status.st_mode);
    setFailure(failure, ReadFailure::NotRegular);
    return -1;
  }
  if (uint64_t(status.st_size) > maxBytes) {
    close(fd);
    error = path + " is " + std::to_string(uint64_t(status.st_size)) +
            " bytes, over the limit of " + formatByteSize(maxBytes);
    setFailure(failure, ReadFailure::TooLarge);
    return -1;
  }
  // Regular files ignore O_NONBLOCK, but leave the descriptor ordinary.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

bool readToEnd(int fd, const std::string &name, uint64_t maxBytes,
               std::string &out, std::string &error, ReadFailure *failure,
               uint64_t sizeHint) {
  auto fail = [&](ReadFailure::Kind kind, int err, std::string message) {
    std::string().swap(out); // give the memory back
    error = std::move(message);
    setFailure(failure, kind, err);
    return false;
  };
  // One byte past the limit tells a longer input from one of exactly
  // `maxBytes` bytes.
  uint64_t cap =
      std::min<uint64_t>(maxBytes, std::numeric_limits<size_t>::max() / 2) + 1;
  // The expected size in one buffer, plus the byte that shows the end: a
  // regular file is read in place, its memory touched once.
  out.assign(
      size_t(std::min<uint64_t>(std::max<uint64_t>(sizeHint, 65535), cap - 1)) +
          1,
      '\0');
  // A longer input (a stream, a file that grows) continues in chunks that
  // are neither zero-filled nor copied as they grow, so that reaching the
  // limit (`tool - < /dev/zero`) costs the limit's memory once.
  struct Chunk {
    std::unique_ptr<char[]> bytes;
    size_t size = 0, used = 0;
  };
  std::vector<Chunk> more;
  size_t used = 0;
  uint64_t total = 0;
  while (true) {
    char *buffer = out.data() + used;
    size_t room = out.size() - used;
    if (!more.empty()) {
      buffer = more.back().bytes.get() + more.back().used;
      room = more.back().size - more.back().used;
    }
    if (room == 0) {
      if (total >= cap)
        return fail(ReadFailure::TooLarge, 0,
                    name + " is larger than the limit of " +
                        formatByteSize(maxBytes));
      size_t previous = more.empty() ? out.size() : more.back().size;
      size_t size = size_t(std::min<uint64_t>(
          {uint64_t(previous) * 2, uint64_t(64) << 20, cap - total}));
      more.push_back({std::unique_ptr<char[]>(new char[size]), size, 0});
      continue;
    }
    ssize_t got = read(fd, buffer, room);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      int err = errno;
      return fail(ReadFailure::Read, err, cannotRead(name, err));
    }
    if (got == 0)
      break;
    (more.empty() ? used : more.back().used) += size_t(got);
    total += uint64_t(got);
  }
  out.resize(size_t(total));
  char *cursor = out.data() + used;
  for (const Chunk &chunk : more) {
    std::memcpy(cursor, chunk.bytes.get(), chunk.used);
    cursor += chunk.used;
  }
  return true;
}

bool readRegularFile(const std::string &path, uint64_t maxBytes,
                     std::string &out, std::string &error, ReadFailure *failure,
                     int dirFd) {
  int fd = openRegularFile(path, maxBytes, error, failure, dirFd);
  if (fd < 0)
    return false;
  struct stat status;
  uint64_t size = fstat(fd, &status) == 0 ? uint64_t(status.st_size) : 0;
  bool ok = readToEnd(fd, path, maxBytes, out, error, failure, size);
  close(fd);
  return ok;
}

bool readStandardInput(uint64_t maxBytes, std::string &out, std::string &error,
                       ReadFailure *failure) {
  struct stat status;
  uint64_t size = fstat(STDIN_FILENO, &status) == 0 && S_ISREG(status.st_mode)
                      ? uint64_t(status.st_size)
                      : 0;
  return readToEnd(STDIN_FILENO, "standard input", maxBytes, out, error,
                   failure, size);
}

OutputKind classifyOutput(const std::string &path, std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return OutputKind::Replace; // absent (or unreachable: the write says why)
  if (S_ISREG(st.st_mode))
    return OutputKind::Replace;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
    return OutputKind::InPlace;
  error = path + " is not a regular file (" + fileKindName(st.st_mode) + ")";
  return OutputKind::Refuse;
}

namespace {

/// Writes all `size` bytes to `fd`; false (and `error` naming `name`) when a
/// write fails.
bool writeAll(int fd, const std::string &name, const void *bytes, size_t size,
              std::string &error) {
  const char *data = static_cast<const char *>(bytes);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = "cannot write '" + name + "': " + std::strerror(errno);
      return false;
    }
    done += size_t(n);
  }
  return true;
}

} // namespace

bool writeInPlace(const std::string &path, const void *bytes, size_t size,
                  std::string &error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (!writeAll(fd, path, bytes, size, error)) {
    ::close(fd);
    return false;
  }
  if (::close(fd) != 0) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

bool writeFileAtomically(const std::string &path, const void *bytes,
                         size_t size, std::string &error) {
  if (path == kStandardOutput) {
    // What the process printed through stdio comes first.
    std::fflush(stdout);
    return writeAll(STDOUT_FILENO, "standard output", bytes, size, error);
  }
  switch (classifyOutput(path, error)) {
  case OutputKind::Refuse:
    return false;
  case OutputKind::InPlace:
    return writeInPlace(path, bytes, size, error);
  case OutputKind::Replace:
    break;
  }
  static std::atomic<uint64_t> counter{0};
  // Unique among threads and processes; beside `path`, so the rename is
  // atomic.
  std::string tempPath = path + ".tmp." + std::to_string(getpid()) + "." +
                         std::to_string(counter.fetch_add(1));
  int fd =
      open(tempPath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    error = tempPath + ": cannot create: " + std::strerror(errno);
    return false;
  }
  auto failWith = [&](const std::string &what, int err) {
    close(fd);
    unlink(tempPath.c_str());
    error = tempPath + ": " + what + ": " + std::strerror(err);
    return false;
  };
  const char *data = static_cast<const char *>(bytes);
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, data + written, size - written);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return failWith("write failed", errno);
    }
    written += size_t(n);
  }
  // Data must be on disk before the rename makes it visible.
  if (fsync(fd) != 0 && errno != EINVAL)
    return failWith("fsync failed", errno);
  if (close(fd) != 0) {
    int err = errno;
    unlink(tempPath.c_str());
    error = tempPath + ": close failed: " + std::strerror(err);
    return false;
  }
  if (rename(tempPath.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tempPath.c_str());
    error = path + ": cannot rename " + tempPath +
            " into place: " + std::strerror(err);
    return false;
  }
  // Best effort: make the rename itself durable.
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty())
    dir = "/";
  int dirFd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    (void)fsync(dirFd);
    close(dirFd);
  }
  return true;
}

} // namespace trnrt
