//===- Lock.h - per-key compile locks on a shared filesystem ----*- C++ -*-===//
//
// A lock is the file `locks/<key>.lock`, made by link(2)-ing a fully written
// temporary file to that name (atomic on NFS too; a lost reply is detected by
// the temporary's link count). Its content names the owner; its mtime is the
// heartbeat the owner refreshes. Everything here is about one lock file; the
// waiting policy lives in GetOrCompile.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_CACHE_LOCK_H
#define TRN_LIB_CACHE_LOCK_H

#include "Support.h"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace mlir::trn::cache::detail {

/// Who holds a lock: enough to tell a live owner from a dead one on the same
/// kernel (boot id, pid namespace, pid and its start time), and a nonce that
/// makes every acquisition's content unique.
struct LockOwner {
  std::string host;
  std::string bootId;
  std::string pidNamespace;
  int64_t pid = 0;
  int64_t startTicks = 0;
  int64_t createdUnix = 0;
  std::string nonce;

  static LockOwner forThisProcess();
  std::string toJson() const;
  static std::optional<LockOwner> fromJson(const std::string &text);
  /// "pid 123 on host-a".
  std::string describe() const;
};

/// Why `owner` is certainly gone: it ran on this kernel and its process has
/// exited (or its pid now belongs to another process). std::nullopt when it
/// is alive or cannot be checked from here.
std::optional<std::string> ownerGoneReason(const LockOwner &owner);

/// One look at a lock file.
struct LockSnapshot {
  bool exists = false;
  struct stat info {};
  std::string content;
  std::optional<LockOwner> owner; ///< std::nullopt if unreadable
};
LockSnapshot readLock(const std::string &lockPath);

/// Tracks, on this process's monotonic clock, how long a lock's heartbeat
/// (its mtime) and content have stayed the same. Clocks of other nodes and
/// of the file server never enter the judgement.
class LeaseWatch {
public:
  double quietSeconds(const LockSnapshot &snapshot);

private:
  std::string signature;
  double since = 0;
};

/// A lock this process holds; releases it when destroyed.
class HeldLock {
public:
  HeldLock(std::string lockPath, std::string tmpDir, std::string keyName,
           FileDescriptor fd, LockOwner owner);
  ~HeldLock();
  HeldLock(const HeldLock &) = delete;
  HeldLock &operator=(const HeldLock &) = delete;

  /// Refreshes the lock's mtime every `seconds` on a background thread and
  /// warns once if another process took the lock over.
  void startHeartbeat(double seconds,
                      std::function<void(const std::string &)> warn);
  /// Removes the lock if it is still ours: if it holds our nonce (not by
  /// inode, which FUSE filesystems do not keep stable).
  void release();

private:
  void beat();
  bool stillOurs() const;

  std::string lockPath, tmpDir, keyName;
  FileDescriptor fd;
  LockOwner owner;
  std::function<void(const std::string &)> warn;
  std::thread heartbeat;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool released = false;
  bool warnedLost = false;
};

enum class LockAttempt {
  Acquired,    ///< `held` is set
  Held,        ///< another owner has it
  Unsupported, ///< the filesystem cannot link(2): go lockless
  Failed,      ///< another error (in `error`)
};

/// One attempt to create the lock.
LockAttempt tryLock(const std::string &lockPath, const std::string &tmpDir,
                    const std::string &keyName, std::unique_ptr<HeldLock> &held,
                    int &error);

/// Removes the lock at `lockPath` if it is still exactly the one in
/// `judged` (same content, hence nonce, and heartbeat). It is first renamed to
/// a unique name, so of several breakers only one wins, and is put back if it
/// turns out to be a different, live lock. Returns true if it was removed.
bool breakLock(const std::string &lockPath, const std::string &tmpDir,
               const std::string &keyName, const LockSnapshot &judged);

/// Replaces link(2) for tryLock (tests simulate filesystems without it).
void setLinkFunction(std::function<int(const char *, const char *)> link);

} // namespace mlir::trn::cache::detail

#endif // TRN_LIB_CACHE_LOCK_H
