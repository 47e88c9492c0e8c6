//===- MpiCommunicator.cpp - collectives between Open MPI processes -------===//
//
// An exchange is a non-blocking send of this rank's bytes (and its simulated
// start time) to every other member of the group and a receive from each,
// polled until all complete or the timeout passes; then the ranks whose
// messages never came are named. Messages of one collective carry a tag
// from its sequence number, and MPI keeps messages between two ranks with
// one tag in order, so consecutive collectives cannot mix.
//
//===----------------------------------------------------------------------===//

#include "trnrt/MpiCommunicator.h"

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <thread>

namespace trnrt {

namespace {

bool readRank(const char *name, int &out) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return false;
  char *end = nullptr;
  long number = std::strtol(value, &end, 10);
  if (*end || number < 0 || number > (1 << 24))
    return false;
  out = int(number);
  return true;
}

/// Collective tags 1..30000 (tag 0 is gatherToRoot's, kTransferTag the
/// pipeline transfers'); MPI guarantees tags up to 32767.
int tagOf(uint64_t sequence) { return int(sequence % 30000) + 1; }
constexpr int kTransferTag = 32000;
/// A transfer's message: its key and send time, then the bytes.
constexpr size_t kTransferHeader = sizeof(uint64_t) + sizeof(double);

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

class MpiCommunicator : public Communicator {
public:
  MpiCommunicator(int rank, int size, double timeoutSeconds)
      : myRank(rank), worldSize(size), timeoutSeconds(timeoutSeconds) {}
  ~MpiCommunicator() override {
    // Sends still on their way finish before MPI_Finalize.
    for (auto &[request, buffer] : pending)
      MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
  bool send(int to, uint64_t key, const std::vector<uint8_t> &bytes,
            double sentNs, const std::string &description,
            std::string &error) override;
  bool receive(int from, uint64_t key, std::vector<uint8_t> &bytes,
               double &sentNs, const std::string &description,
               std::string &error) override;
  int rank() const override { return myRank; }
  int size() const override { return worldSize; }
  bool exchange(const CollectiveCall &call, const std::vector<uint8_t> &mine,
                double startNs, std::vector<std::vector<uint8_t>> &theirs,
                std::vector<double> &startsNs, std::string &error) override;
  void abort(const std::string &message) override {
    std::fprintf(stderr, "trn-run: error: %s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }
  void stall() override {
    // Killed by another rank's MPI_Abort when its collective times out.
    for (;;)
      std::this_thread::sleep_for(std::chrono::seconds(1));
  }

private:
  /// Drops the sends that have completed.
  void reapSends();

  int myRank, worldSize;
  double timeoutSeconds;
  /// Non-blocking sends in flight, with the buffers they read.
  std::list<std::pair<MPI_Request, std::vector<uint8_t>>> pending;
  /// Transfers that arrived before their receive asked, by (from, key):
  /// their send time and bytes.
  std::map<std::pair<int, uint64_t>, std::pair<double, std::vector<uint8_t>>>
      early;
};

void MpiCommunicator::reapSends() {
  for (auto it = pending.begin(); it != pending.end();) {
    int done = 0;
    MPI_Test(&it->first, &done, MPI_STATUS_IGNORE);
    it = done ? pending.erase(it) : std::next(it);
  }
}

bool MpiCommunicator::send(int to, uint64_t key,
                           const std::vector<uint8_t> &bytes, double sentNs,
                           const std::string &description, std::string &error) {
  reapSends();
  pending.emplace_back(MPI_REQUEST_NULL, std::vector<uint8_t>());
  std::vector<uint8_t> &message = pending.back().second;
  message.resize(kTransferHeader + bytes.size());
  std::memcpy(message.data(), &key, sizeof(key));
  std::memcpy(message.data() + sizeof(key), &sentNs, sizeof(sentNs));
  if (!bytes.empty())
    std::memcpy(message.data() + kTransferHeader, bytes.data(), bytes.size());
  if (message.size() > size_t(INT32_MAX)) {
    error = description + ": " + std::to_string(bytes.size()) +
            " bytes is more than one MPI message carries";
    return false;
  }
  MPI_Isend(message.data(), int(message.size()), MPI_BYTE, to, kTransferTag,
            MPI_COMM_WORLD, &pending.back().first);
  return true;
}

bool MpiCommunicator::receive(int from, uint64_t key,
                              std::vector<uint8_t> &bytes, double &sentNs,
                              const std::string &description,
                              std::string &error) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::duration<double>(timeoutSeconds));
  for (;;) {
    auto it = early.find({from, key});
    if (it != early.end()) {
      sentNs = it->second.first;
      bytes = std::move(it->second.second);
      early.erase(it);
      return true;
    }
    reapSends();
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(from, kTransferTag, MPI_COMM_WORLD, &flag, &status);
    if (flag) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      std::vector<uint8_t> message(size_t(std::max(count, 0)));
      MPI_Recv(message.data(), count, MPI_BYTE, from, kTransferTag,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (message.size() < kTransferHeader) {
        error = description + ": rank " + std::to_string(from) +
                " sent a malformed transfer";
        return false;
      }
      uint64_t theirKey;
      double theirTime;
      std::memcpy(&theirKey, message.data(), sizeof(theirKey));
      std::memcpy(&theirTime, message.data() + sizeof(theirKey),
                  sizeof(theirTime));
      early[{from, theirKey}] = {
          theirTime, std::vector<uint8_t>(message.begin() + kTransferHeader,
                                          message.end())};
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      error = description + " timed out after " + secondsText(timeoutSeconds) +
              " s: rank " + std::to_string(from) +
              " never sent it (raise --collective-timeout if it is slow)";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

bool MpiCommunicator::exchange(const CollectiveCall &call,
                               const std::vector<uint8_t> &mine, double startNs,
                               std::vector<std::vector<uint8_t>> &theirs,
                               std::vector<double> &startsNs,
                               std::string &error) {
  // The message: the bytes, then the start time.
  std::vector<uint8_t> outgoing(mine);
  outgoing.resize(mine.size() + sizeof(double));
  std::memcpy(outgoing.data() + mine.size(), &startNs, sizeof(double));
  const size_t members = call.group.size();
  theirs.assign(members, {});
  startsNs.assign(members, 0.0);
  std::vector<MPI_Request> sends, receives(members, MPI_REQUEST_NULL);
  const int tag = tagOf(call.sequence);
  for (size_t i = 0; i < members; ++i) {
    int member = call.group[i];
    if (member == myRank) {
      theirs[i] = mine;
      startsNs[i] = startNs;
      continue;
    }
    theirs[i].resize(outgoing.size());
    MPI_Irecv(theirs[i].data(), int(outgoing.size()), MPI_BYTE, member, tag,
              MPI_COMM_WORLD, &receives[i]);
    sends.emplace_back();
    MPI_Isend(outgoing.data(), int(outgoing.size()), MPI_BYTE, member, tag,
              MPI_COMM_WORLD, &sends.back());
  }
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::duration<double>(timeoutSeconds));
  std::vector<bool> done(members, false);
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < members; ++i) {
      if (done[i] || call.group[i] == myRank) {
        done[i] = true;
        continue;
      }
      int flag = 0;
      MPI_Status status;
      MPI_Test(&receives[i], &flag, &status);
      if (flag) {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        if (size_t(count) != outgoing.size()) {
          error = call.description + ": rank " + std::to_string(call.group[i]) +
                  " sent " + std::to_string(count) + " bytes, expected " +
                  std::to_string(outgoing.size()) +
                  " (the ranks run different programs)";
          return false;
        }
        done[i] = true;
      }
      all &= done[i];
    }
    if (all)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::string missing;
      for (size_t i = 0; i < members; ++i)
        if (!done[i])
          missing +=
              (missing.empty() ? "" : ", ") + std::to_string(call.group[i]);
      error = call.description + " timed out after " +
              secondsText(timeoutSeconds) + " s: rank(s) " + missing +
              " never arrived (raise --collective-timeout if they are slow)";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (!sends.empty())
    MPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
  for (size_t i = 0; i < members; ++i) {
    if (call.group[i] == myRank)
      continue;
    std::memcpy(&startsNs[i], theirs[i].data() + mine.size(), sizeof(double));
    theirs[i].resize(mine.size());
  }
  return true;
}

} // namespace

bool launchedAsRank(int &rank, int &size) {
  if (readRank("OMPI_COMM_WORLD_SIZE", size) &&
      readRank("OMPI_COMM_WORLD_RANK", rank))
    return size > 1;
  // srun sets SLURM_STEP_NUM_TASKS for a job step; a batch script's own
  // environment (SLURM_NTASKS without a step) is not a launch of ranks.
  if (readRank("SLURM_PROCID", rank) && readRank("SLURM_STEP_NUM_TASKS", size))
    return size > 1;
  return false;
}

std::unique_ptr<MpiJob> MpiJob::start(double timeoutSeconds,
                                      std::string &error) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
    error = "MPI_Init failed";
    return nullptr;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::unique_ptr<MpiJob> job(new MpiJob());
  job->timeoutSeconds = timeoutSeconds;
  job->world = std::make_unique<MpiCommunicator>(rank, size, timeoutSeconds);
  return job;
}

MpiJob::~MpiJob() {
  // The communicator finishes its sends in flight first.
  world.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

Communicator &MpiJob::communicator() { return *world; }
int MpiJob::rank() const { return world->rank(); }
int MpiJob::size() const { return world->size(); }

bool MpiJob::gatherToRoot(const std::vector<uint8_t> &mine,
                          std::vector<std::vector<uint8_t>> &all,
                          std::string &error) {
  const int me = rank(), ranks = size();
  if (me != 0) {
    MPI_Send(mine.data(), int(mine.size()), MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    return true;
  }
  all.assign(size_t(ranks), {});
  all[0] = mine;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::duration<double>(timeoutSeconds));
  for (int other = 1; other < ranks; ++other) {
    MPI_Status status;
    int flag = 0;
    while (!flag) {
      MPI_Iprobe(other, 0, MPI_COMM_WORLD, &flag, &status);
      if (flag)
        break;
      if (std::chrono::steady_clock::now() > deadline) {
        error = "collecting the results timed out after " +
                secondsText(timeoutSeconds) + " s: rank " +
                std::to_string(other) + " never sent its outputs";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    all[size_t(other)].resize(size_t(count));
    MPI_Recv(all[size_t(other)].data(), count, MPI_BYTE, other, 0,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return true;
}

void MpiJob::abortJob(const std::string &message, int status) {
  std::fprintf(stderr, "trn-run: error: %s\n", message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);
}

} // namespace trnrt
