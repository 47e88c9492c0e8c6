//===- Lock.cpp - per-key compile locks on a shared filesystem ------------===//

#include "Lock.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace mlir::trn::cache::detail {

using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Owner identity
//===----------------------------------------------------------------------===//

LockOwner LockOwner::forThisProcess() {
  LockOwner owner;
  owner.host = hostName();
  owner.bootId = detail::bootId();
  owner.pidNamespace = detail::pidNamespace();
  owner.pid = getpid();
  owner.startTicks = selfStartTicks();
  owner.createdUnix = nowUnix();
  owner.nonce = randomHex(16);
  return owner;
}

std::string LockOwner::toJson() const {
  json record = {{"format", 1},
                 {"host", host},
                 {"boot_id", bootId},
                 {"pid_ns", pidNamespace},
                 {"pid", pid},
                 {"start_ticks", startTicks},
                 {"created_unix", createdUnix},
                 {"nonce", nonce}};
  return record.dump() + "\n";
}

std::optional<LockOwner> LockOwner::fromJson(const std::string &text) {
  try {
    json record = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || !record.contains("host") ||
        !record.contains("pid") || !record.contains("nonce"))
      return std::nullopt;
    LockOwner owner;
    owner.host = record.at("host").get<std::string>();
    owner.bootId = record.value("boot_id", std::string());
    owner.pidNamespace = record.value("pid_ns", std::string());
    owner.pid = record.at("pid").get<int64_t>();
    owner.startTicks = record.value("start_ticks", int64_t(0));
    owner.createdUnix = record.value("created_unix", int64_t(0));
    owner.nonce = record.at("nonce").get<std::string>();
    return owner;
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

std::string LockOwner::describe() const {
  return "pid " + std::to_string(pid) + " on " + host;
}

std::optional<std::string> ownerGoneReason(const LockOwner &owner) {
  // Only an owner on this very kernel can be checked: same host name, boot
  // id and pid namespace (a container with its own pids is another world).
  if (owner.host != hostName() || owner.bootId.empty() ||
      owner.bootId != bootId())
    return std::nullopt;
  if (!owner.pidNamespace.empty() && !pidNamespace().empty() &&
      owner.pidNamespace != pidNamespace())
    return std::nullopt;
  std::optional<int64_t> ticks = processStartTicks(owner.pid);
  if (!ticks)
    return "pid " + std::to_string(owner.pid) + " on this host is gone";
  if (owner.startTicks != 0 && *ticks != owner.startTicks)
    return "pid " + std::to_string(owner.pid) +
           " on this host is now another process";
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Observing a lock
//===----------------------------------------------------------------------===//

LockSnapshot readLock(const std::string &lockPath) {
  LockSnapshot snapshot;
  // O_NONBLOCK: a FIFO in the lock's place must not hang the reader; it
  // reads as an empty lock file.
  FileDescriptor fd(
      open(lockPath.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  // open() rather than stat(): on NFS it revalidates the attributes
  // (close-to-open), so the heartbeat seen here is fresh.
  if (!fd.valid() || fstat(fd.get(), &snapshot.info) != 0)
    return snapshot;
  snapshot.exists = true;
  std::string content;
  char buffer[4096];
  ssize_t got;
  while ((got = read(fd.get(), buffer, sizeof(buffer))) > 0 &&
         content.size() < (1 << 16))
    content.append(buffer, static_cast<size_t>(got));
  snapshot.content = content;
  snapshot.owner = LockOwner::fromJson(content);
  return snapshot;
}

/// Whether `snapshot` is the lock file of the acquisition that drew `nonce`.
/// A lock's identity is its nonce, never its inode number: FUSE filesystems
/// (sshfs, object-store mounts) give one file other inode numbers under
/// another name, through another mount or after the kernel forgot it.
static bool holdsNonce(const LockSnapshot &snapshot, const std::string &nonce) {
  return snapshot.exists && snapshot.owner && !nonce.empty() &&
         snapshot.owner->nonce == nonce;
}

static bool sameHeartbeat(const struct stat &a, const struct stat &b) {
  return a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
         a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

double LeaseWatch::quietSeconds(const LockSnapshot &snapshot) {
  // The content (with its nonce) names the acquisition; the inode number
  // is left out because it is not stable on FUSE.
  std::string current = std::to_string(snapshot.info.st_mtim.tv_sec) + "." +
                        std::to_string(snapshot.info.st_mtim.tv_nsec) + ":" +
                        snapshot.content;
  double now = steadySeconds();
  if (current != signature) {
    signature = current;
    since = now;
  }
  return now - since;
}

//===----------------------------------------------------------------------===//
// Holding a lock
//===----------------------------------------------------------------------===//

HeldLock::HeldLock(std::string lockPath, std::string tmpDir,
                   std::string keyName, FileDescriptor fd, LockOwner owner)
    : lockPath(std::move(lockPath)), tmpDir(std::move(tmpDir)),
      keyName(std::move(keyName)), fd(std::move(fd)), owner(std::move(owner)) {}

HeldLock::~HeldLock() { release(); }

void HeldLock::startHeartbeat(double seconds,
                              std::function<void(const std::string &)> warn) {
  this->warn = std::move(warn);
  heartbeat = std::thread([this, seconds] {
    std::unique_lock<std::mutex> guard(mutex);
    while (!wake.wait_for(guard, std::chrono::duration<double>(seconds),
                          [this] { return stopping; }))
      beat();
  });
}

bool HeldLock::stillOurs() const {
  return holdsNonce(readLock(lockPath), owner.nonce);
}

void HeldLock::beat() {
  // The lock file and our descriptor are one file: touching the descriptor
  // moves the lock's mtime (the server's clock on NFS). The path is touched
  // too while it holds our nonce, in case a filesystem gave the name a copy.
  futimens(fd.get(), nullptr);
  bool ours = stillOurs();
  if (ours)
    utimensat(AT_FDCWD, lockPath.c_str(), nullptr, 0);
  if (!warnedLost && !ours) {
    warnedLost = true;
    if (warn)
      warn("lost the lock on " + keyName +
           " (another process took it over; was this process stopped for "
           "longer than the lease?); the compile continues and may be "
           "duplicated");
  }
}

void HeldLock::release() {
  {
    std::lock_guard<std::mutex> guard(mutex);
    if (released)
      return;
    released = true;
    stopping = true;
  }
  wake.notify_all();
  if (heartbeat.joinable())
    heartbeat.join();
  if (!stillOurs())
    return; // taken over while we were stalled: the lock is someone else's
  // Move the lock aside before deleting it so that a lock someone else
  // created after taking ours over is never deleted by mistake: once moved,
  // the file is ours alone to read, and its nonce says whose it is.
  std::string aside = joinPath(tmpDir, keyName + ".release." + uniqueSuffix());
  if (rename(lockPath.c_str(), aside.c_str()) != 0)
    return;
  if (!holdsNonce(readLock(aside), owner.nonce))
    link(aside.c_str(), lockPath.c_str());
  unlink(aside.c_str());
}

//===----------------------------------------------------------------------===//
// Taking and breaking locks
//===----------------------------------------------------------------------===//

static std::mutex linkFunctionMutex;
static std::function<int(const char *, const char *)> linkFunction;

void setLinkFunction(std::function<int(const char *, const char *)> link) {
  std::lock_guard<std::mutex> guard(linkFunctionMutex);
  linkFunction = std::move(link);
}

static int callLink(const char *from, const char *to) {
  std::function<int(const char *, const char *)> function;
  {
    std::lock_guard<std::mutex> guard(linkFunctionMutex);
    function = linkFunction;
  }
  return function ? function(from, to) : link(from, to);
}

LockAttempt tryLock(const std::string &lockPath, const std::string &tmpDir,
                    const std::string &keyName, std::unique_ptr<HeldLock> &held,
                    int &error) {
  LockOwner owner = LockOwner::forThisProcess();
  std::string tmpPath = joinPath(tmpDir, keyName + ".lock." + uniqueSuffix());
  FileDescriptor fd(
      open(tmpPath.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (!fd.valid()) {
    error = errno;
    return LockAttempt::Failed;
  }
  std::string content = owner.toJson();
  if (write(fd.get(), content.data(), content.size()) !=
      static_cast<ssize_t>(content.size())) {
    error = errno ? errno : EIO;
    unlink(tmpPath.c_str());
    return LockAttempt::Failed;
  }
  int linked = callLink(tmpPath.c_str(), lockPath.c_str());
  int linkError = linked == 0 ? 0 : errno;
  // On NFS the reply to a successful link can be lost and the retry report
  // EEXIST: our nonce in the lock says the link is ours. (open(2)'s recipe
  // checks the temporary's link count, which FUSE filesystems do not keep.)
  bool ours = linked == 0 || (linkError == EEXIST &&
                              holdsNonce(readLock(lockPath), owner.nonce));
  unlink(tmpPath.c_str());
  if (ours) {
    held = std::make_unique<HeldLock>(lockPath, tmpDir, keyName, std::move(fd),
                                      std::move(owner));
    return LockAttempt::Acquired;
  }
  error = linkError;
  // sshfs reports a link onto an existing name as EPERM (SFTP's generic
  // failure), not EEXIST: with a lock there, it is held by someone else.
  // (Taken for "no hard links", every concurrent compile of one graph
  // turned lockless under load.)
  if (linkError == EPERM && readLock(lockPath).exists) {
    error = EEXIST;
    return LockAttempt::Held;
  }
  if (linkError == EEXIST)
    return LockAttempt::Held;
  if (linkError == EPERM || linkError == ENOSYS || linkError == EOPNOTSUPP ||
      linkError == EMLINK)
    return LockAttempt::Unsupported;
  return LockAttempt::Failed;
}

bool breakLock(const std::string &lockPath, const std::string &tmpDir,
               const std::string &keyName, const LockSnapshot &judged) {
  std::string aside =
      joinPath(tmpDir, keyName + ".broken-lock." + uniqueSuffix());
  if (rename(lockPath.c_str(), aside.c_str()) != 0)
    return false; // another breaker won, or the owner released it
  // Only one breaker's rename succeeds, and from then on the moved file is
  // ours alone under its unique name: nobody can put another file there,
  // only its holder can still move its mtime (the heartbeat, through its
  // descriptor). It is exactly the lock we judged if its content is
  // unchanged (the content holds the nonce, unique to one acquisition) and
  // so is its heartbeat. Inode numbers are not compared: FUSE filesystems
  // do not keep them stable, and the nonce identifies the acquisition.
  LockSnapshot moved = readLock(aside);
  bool unchanged = moved.exists && moved.content == judged.content &&
                   sameHeartbeat(moved.info, judged.info);
  if (!unchanged) {
    // We moved a lock that is alive after all: put it back unless a new
    // lock already took the name.
    link(aside.c_str(), lockPath.c_str());
  }
  unlink(aside.c_str());
  return unchanged;
}

} // namespace mlir::trn::cache::detail
