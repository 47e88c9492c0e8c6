//===- File.h - Bounded reads of input files --------------------*- C++ -*-===//
//
// Every trn tool reads its graph, kernel or artifact through these functions
// (the MLIR tools through trn/Support/InputFile.h, which wraps them). A path
// that is not a regular file is refused before a byte is read: a directory,
// a character device such as /dev/zero (which never ends), a FIFO (whose
// open would wait for a writer), a socket. What is read, from a file or from
// standard input, stops at a limit the caller gives, so no input can make a
// tool read or allocate without bound. Errors are one line naming the path.
// No MLIR or LLVM dependency; no exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_FILE_H
#define TRNRT_FILE_H

#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace trnrt {

/// Why a read failed, for callers that act on the kind (the C API's status
/// codes, the compile cache's "vanished" and "corrupt"); the message says the
/// same in words.
struct ReadFailure {
  enum Kind {
    Open,       ///< the path cannot be opened or stat'ed (`err`)
    NotRegular, ///< a directory, device, FIFO or socket
    TooLarge,   ///< more bytes than the caller's limit
    Read,       ///< read(2) failed (`err`)
  } kind = Open;
  int err = 0; ///< errno of the failed call, for Open and Read
};

/// "a directory", "a character device", "a FIFO", ...: what a file of mode
/// `mode` (stat's st_mode) is, for messages.
const char *fileKindName(unsigned mode);

/// `bytes` as "4 GiB" or "16 MiB" when it is a whole number of them, else as
/// "1234 bytes".
std::string formatByteSize(uint64_t bytes);

/// Opens `path` (relative to `dirFd` unless absolute, as openat(2)) for
/// reading if it is a regular file of at most `maxBytes` bytes. Anything else
/// is refused without being opened, and the open itself cannot block (a FIFO
/// swapped in meanwhile is caught by a second check). Returns the descriptor,
/// which the caller closes, or -1 with a one-line `error`:
///   cannot read 'PATH': No such file or directory
///   PATH is not a regular file (a character device)
///   PATH is 5368709120 bytes, over the limit of 4 GiB
int openRegularFile(const std::string &path, uint64_t maxBytes,
                    std::string &error, ReadFailure *failure = nullptr,
                    int dirFd = AT_FDCWD);

/// Reads `fd` to its end into `out` (replacing it), failing once more than
/// `maxBytes` bytes arrive: a file that grows while it is read and a stream
/// both stop at the limit. `name` names the input in messages. `sizeHint`
/// (a regular file's size) lets the buffer be allocated once.
bool readToEnd(int fd, const std::string &name, uint64_t maxBytes,
               std::string &out, std::string &error,
               ReadFailure *failure = nullptr, uint64_t sizeHint = 0);

/// openRegularFile, then readToEnd.
bool readRegularFile(const std::string &path, uint64_t maxBytes,
                     std::string &out, std::string &error,
                     ReadFailure *failure = nullptr, int dirFd = AT_FDCWD);

/// Reads standard input to its end, at most `maxBytes` bytes. It may be a
/// file, a pipe or a terminal; messages call it "standard input".
bool readStandardInput(uint64_t maxBytes, std::string &out, std::string &error,
                       ReadFailure *failure = nullptr);

/// How an output path is written. Tools publish files by writing a
/// temporary file beside them and renaming it into place, so a reader never
/// sees half a file; renaming over a device would replace it (as root,
/// `-o /dev/null` would turn /dev/null into a regular file), so a device or
/// a pipe is written in place instead.
enum class OutputKind {
  Replace, ///< absent or a regular file: temporary file + rename
  InPlace, ///< a character device or a FIFO (/dev/null, a pipe)
  Refuse,  ///< a directory, a socket or a block device
};

/// What `path` is as an output; for Refuse, `error` says why in one line:
///   PATH is not a regular file (a directory)
OutputKind classifyOutput(const std::string &path, std::string &error);

/// The output path that means the standard output, in every tool.
inline constexpr const char *kStandardOutput = "-";

/// Writes `size` bytes to `path` so that a reader sees the old file or the
/// whole new one: to a uniquely named temporary file beside it, fsync'ed,
/// then renamed over it (the directory fsync'ed too, best effort). An
/// InPlace output is written as it is; a Refuse one fails; "-" is the
/// standard output. `error` is one line naming the path.
bool writeFileAtomically(const std::string &path, const void *bytes,
                         size_t size, std::string &error);

/// Writes `size` bytes to `path` opened for writing as it is (an InPlace
/// output), without creating, truncating or renaming anything.
bool writeInPlace(const std::string &path, const void *bytes, size_t size,
                  std::string &error);

/// The `size`-byte little-endian integer at `bytes` (the artifact's and
/// .npy's stored integers, whatever the host's byte order).
inline uint64_t loadLittleEndian(const uint8_t *bytes, unsigned size) {
  uint64_t value = 0;
  for (unsigned i = 0; i < size; ++i)
    value |= uint64_t(bytes[i]) << (8 * i);
  return value;
}

/// Stores the low `size` bytes of `value` little-endian at `bytes`.
inline void storeLittleEndian(uint64_t value, unsigned size, uint8_t *bytes) {
  for (unsigned i = 0; i < size; ++i)
    bytes[i] = uint8_t(value >> (8 * i));
}

} // namespace trnrt

#endif // TRNRT_FILE_H
