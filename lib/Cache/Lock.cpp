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

double LeaseWatch::quietSeconds(const LockSnapshot &snapshot) {
  std::string current = std::to_string(snapshot.info.st_ino) + ":" +
                        std::to_string(snapshot.info.st_mtim.tv_sec) + "." +
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
  struct stat mine, current;
  return fstat(fd.get(), &mine) == 0 && stat(lockPath.c_str(), &current) == 0 &&
         sameFile(mine, current);
}

void HeldLock::beat() {
  // The lock file and our descriptor are one inode: touching the
  // descriptor moves the lock's mtime (the server's clock on NFS).
  futimens(fd.get(), nullptr);
  if (!warnedLost && !stillOurs()) {
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
  // created after taking ours over is never deleted by mistake.
  std::string aside = joinPath(tmpDir, keyName + ".release." + uniqueSuffix());
  if (rename(lockPath.c_str(), aside.c_str()) != 0)
    return;
  struct stat mine, moved;
  bool ours = fstat(fd.get(), &mine) == 0 && stat(aside.c_str(), &moved) == 0 &&
              sameFile(mine, moved);
  if (!ours)
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
  // EEXIST: a link count of 2 on our temporary says the link is ours.
  struct stat info;
  bool ours = linked == 0 || (stat(tmpPath.c_str(), &info) == 0 &&
                              info.st_nlink == 2 && linkError == EEXIST);
  unlink(tmpPath.c_str());
  if (ours) {
    held = std::make_unique<HeldLock>(lockPath, tmpDir, keyName, std::move(fd),
                                      std::move(owner));
    return LockAttempt::Acquired;
  }
  error = linkError;
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
  LockSnapshot moved = readLock(aside);
  bool unchanged = moved.exists && sameFile(moved.info, judged.info) &&
                   moved.content == judged.content &&
                   moved.info.st_mtim.tv_sec == judged.info.st_mtim.tv_sec &&
                   moved.info.st_mtim.tv_nsec == judged.info.st_mtim.tv_nsec;
  if (!unchanged) {
    // We moved a lock that is alive after all: put it back unless a new
    // lock already took the name.
    link(aside.c_str(), lockPath.c_str());
  }
  unlink(aside.c_str());
  return unchanged;
}

} // namespace mlir::trn::cache::detail
