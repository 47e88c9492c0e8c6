//===- Process.cpp - child processes for trn-parallel-compile -------------===//

#include "trn/ParallelCompile/Process.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace mlir::trn::parallel {

double monotonicSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string signalName(int signal) {
  switch (signal) {
  case SIGKILL:
    return "SIGKILL";
  case SIGTERM:
    return "SIGTERM";
  case SIGSEGV:
    return "SIGSEGV";
  case SIGABRT:
    return "SIGABRT";
  case SIGBUS:
    return "SIGBUS";
  case SIGFPE:
    return "SIGFPE";
  case SIGILL:
    return "SIGILL";
  case SIGINT:
    return "SIGINT";
  case SIGHUP:
    return "SIGHUP";
  case SIGPIPE:
    return "SIGPIPE";
  default:
    return "signal " + std::to_string(signal);
  }
}

std::string ExitStatus::describe() const {
  if (exited)
    return "exit status " + std::to_string(code);
  return "killed by " + signalName(signal);
}

Child::Child(Child &&other) noexcept
    : childPid(other.childPid), startedAt(other.startedAt) {
  other.childPid = -1;
}

Child &Child::operator=(Child &&other) noexcept {
  if (this != &other) {
    if (running()) {
      killGroup(SIGKILL);
      wait();
    }
    childPid = other.childPid;
    startedAt = other.startedAt;
    other.childPid = -1;
  }
  return *this;
}

Child::~Child() {
  if (running()) {
    killGroup(SIGKILL);
    wait();
  }
}

std::optional<Child> Child::start(const std::vector<std::string> &argv,
                                  const std::vector<std::string> &environment,
                                  const std::string &logPath, bool stdinNull,
                                  std::string &error) {
  if (argv.empty()) {
    error = "no command to run";
    return std::nullopt;
  }
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  std::map<std::string, std::string> env;
  for (char **entry = environ; *entry; ++entry) {
    std::string text = *entry;
    size_t eq = text.find('=');
    if (eq != std::string::npos)
      env[text.substr(0, eq)] = text;
  }
  for (const std::string &text : environment) {
    size_t eq = text.find('=');
    if (eq != std::string::npos)
      env[text.substr(0, eq)] = text;
  }
  std::vector<std::string> envStrings;
  for (auto &[name, text] : env)
    envStrings.push_back(text);
  std::vector<char *> envp, args;
  for (std::string &text : envStrings)
    envp.push_back(text.data());
  envp.push_back(nullptr);
  std::vector<std::string> argStrings = argv;
  for (std::string &text : argStrings)
    args.push_back(text.data());
  args.push_back(nullptr);

  int logFd = -1;
  if (!logPath.empty()) {
    logFd =
        ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (logFd < 0) {
      error = "cannot write " + logPath + ": " + std::strerror(errno);
      return std::nullopt;
    }
  }
  int nullFd = -1;
  if (stdinNull)
    nullFd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // A pipe that reports a failed exec (closed on a successful one).
  int execPipe[2];
  if (pipe2(execPipe, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    if (logFd >= 0)
      ::close(logFd);
    if (nullFd >= 0)
      ::close(nullFd);
    return std::nullopt;
  }

  Child child;
  child.startedAt = monotonicSeconds();
  pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {logFd, nullFd, execPipe[0], execPipe[1]})
      if (fd >= 0)
        ::close(fd);
    return std::nullopt;
  }
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    if (logFd >= 0) {
      dup2(logFd, STDOUT_FILENO);
      dup2(logFd, STDERR_FILENO);
    }
    if (nullFd >= 0)
      dup2(nullFd, STDIN_FILENO);
    execvpe(args[0], args.data(), envp.data());
    int code = errno;
    ssize_t ignored = write(execPipe[1], &code, sizeof(code));
    (void)ignored;
    _exit(127);
  }
  // Also from the parent, so that a kill right after start reaches it.
  setpgid(pid, pid);
  for (int fd : {logFd, nullFd, execPipe[1]})
    if (fd >= 0)
      ::close(fd);
  int code = 0;
  ssize_t got = read(execPipe[0], &code, sizeof(code));
  ::close(execPipe[0]);
  child.childPid = pid;
  if (got == sizeof(code)) {
    child.wait();
    error = "cannot run " + argv[0] + ": " + std::strerror(code);
    return std::nullopt;
  }
  return child;
}

double Child::elapsedSeconds() const { return monotonicSeconds() - startedAt; }

ExitStatus Child::reap(int status, const ::rusage &usage) {
  ExitStatus result;
  if (WIFEXITED(status)) {
    result.exited = true;
    result.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.peakMemoryBytes = int64_t(usage.ru_maxrss) * 1024;
  result.seconds = elapsedSeconds();
  childPid = -1;
  return result;
}

std::optional<ExitStatus> Child::poll() {
  if (!running())
    return std::nullopt;
  int status = 0;
  struct rusage usage {};
  pid_t done = wait4(childPid, &status, WNOHANG, &usage);
  if (done == childPid)
    return reap(status, usage);
  return std::nullopt;
}

ExitStatus Child::wait() {
  int status = 0;
  struct rusage usage {};
  pid_t done;
  do
    done = wait4(childPid, &status, 0, &usage);
  while (done < 0 && errno == EINTR);
  return reap(status, usage);
}

void Child::killGroup(int signal) {
  if (running())
    ::kill(-childPid, signal);
}

std::string tailOfFile(const std::string &path, int maxLines,
                       int64_t maxBytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return {};
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  std::streamoff from = size > maxBytes ? size - maxBytes : 0;
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  size_t position = text.size();
  for (int lines = 0; lines < maxLines && position != std::string::npos;
       ++lines) {
    if (position == 0) {
      position = std::string::npos;
      break;
    }
    position = text.rfind('\n', position - 1);
  }
  if (position != std::string::npos)
    text = text.substr(position + 1);
  // Invalid UTF-8 from a child must not break a terminal or a JSON report.
  for (char &c : text)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
      c = '?';
  return text;
}

std::string executableDirectory() {
  std::vector<char> buffer(4096);
  ssize_t length = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length <= 0)
    return ".";
  std::string path(buffer.data(), size_t(length));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

} // namespace mlir::trn::parallel
