//===- Collectives.cpp - semantics, cost and in-process exchange ----------===//
//
// The meaning of every collective on the bytes of its group (what the
// simulator stores in a rank's HBM), its cost in simulated time, and the
// shared-memory communicator that runs every rank of a job in one process.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Collectives.h"

#include "trnrt/Numerics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

namespace trnrt {

Communicator::~Communicator() = default;

//===----------------------------------------------------------------------===//
// Mesh binding
//===----------------------------------------------------------------------===//

int CollectiveContext::worldSize() const {
  int64_t size = 1;
  for (const MeshAxis &axis : axes)
    size *= axis.size;
  return int(size);
}

std::vector<int64_t> CollectiveContext::sizes() const {
  std::vector<int64_t> result;
  for (const MeshAxis &axis : axes)
    result.push_back(axis.size);
  return result;
}

std::vector<int64_t> CollectiveContext::coordinates() const {
  std::vector<int64_t> coords(axes.size());
  int64_t rest = rank;
  for (size_t a = axes.size(); a-- > 0;) {
    coords[a] = rest % axes[a].size;
    rest /= axes[a].size;
  }
  return coords;
}

std::vector<int> CollectiveContext::group(uint32_t meshAxes,
                                          int &position) const {
  std::vector<int64_t> coords = coordinates();
  std::vector<size_t> named;
  for (size_t a = 0; a < axes.size(); ++a)
    if ((meshAxes >> a) & 1)
      named.push_back(a);
  int64_t size = 1;
  position = 0;
  for (size_t a : named) {
    position = int(position * axes[a].size + coords[a]);
    size *= axes[a].size;
  }
  std::vector<int> members;
  for (int64_t member = 0; member < size; ++member) {
    // Coordinates along the named axes from the member's position (major
    // first); the others are this rank's.
    std::vector<int64_t> theirs = coords;
    int64_t rest = member;
    for (size_t i = named.size(); i-- > 0;) {
      theirs[named[i]] = rest % axes[named[i]].size;
      rest /= axes[named[i]].size;
    }
    int64_t rank = 0;
    for (size_t a = 0; a < axes.size(); ++a)
      rank = rank * axes[a].size + theirs[a];
    members.push_back(int(rank));
  }
  return members;
}

std::string CollectiveContext::axisNames(uint32_t meshAxes) const {
  std::string names;
  for (size_t a = 0; a < axes.size(); ++a)
    if ((meshAxes >> a) & 1)
      names += (names.empty() ? "" : ",") + axes[a].name;
  return names;
}

int CollectiveContext::peerRank(uint32_t meshAxes, int64_t peer) const {
  std::vector<int64_t> coords = coordinates();
  for (size_t a = 0; a < axes.size(); ++a)
    if ((meshAxes >> a) & 1) {
      if (peer < 0 || peer >= axes[a].size)
        return -1;
      coords[a] = peer;
    }
  int64_t linear = 0;
  for (size_t a = 0; a < axes.size(); ++a)
    linear = linear * axes[a].size + coords[a];
  return int(linear);
}

//===----------------------------------------------------------------------===//
// Semantics
//===----------------------------------------------------------------------===//

namespace {

/// A row-major shape seen as [outer, dim, inner] around dimension `dim`.
struct Around {
  int64_t outer = 1, size = 1, inner = 1;
};

Around around(const std::vector<int64_t> &shape, int64_t dim) {
  Around view;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (d < dim)
      view.outer *= shape[d];
    else if (d == dim)
      view.size = shape[d];
    else
      view.inner *= shape[d];
  }
  return view;
}

/// Element `i` of a buffer as a double (exact for every dtype but i64
/// beyond 2^53, which reductions handle apart).
double loadValue(const uint8_t *bytes, DType dtype, size_t i) {
  const unsigned size = dtypeSizeInBytes(dtype);
  uint64_t bits = 0;
  std::memcpy(&bits, bytes + i * size, size);
  switch (dtype) {
  case DType::I1:
    return bits != 0 ? 1.0 : 0.0;
  case DType::I32:
    return double(int32_t(uint32_t(bits)));
  case DType::I64:
    return double(int64_t(bits));
  default:
    return decodeFloat(bits, dtype);
  }
}

int64_t loadInteger(const uint8_t *bytes, DType dtype, size_t i) {
  if (dtype == DType::I64) {
    int64_t value;
    std::memcpy(&value, bytes + i * 8, 8);
    return value;
  }
  int32_t value;
  std::memcpy(&value, bytes + i * 4, 4);
  return value;
}

void storeInteger(uint8_t *bytes, DType dtype, size_t i, int64_t value) {
  if (dtype == DType::I64) {
    std::memcpy(bytes + i * 8, &value, 8);
    return;
  }
  int32_t narrow = int32_t(uint32_t(uint64_t(value)));
  std::memcpy(bytes + i * 4, &narrow, 4);
}

/// The group's reduction of `members`, element by element, in group order.
void reduce(const Instruction &inst,
            const std::vector<std::vector<uint8_t>> &members,
            std::vector<uint8_t> &out) {
  const DType dtype = inst.srcs[0].dtype;
  const unsigned size = dtypeSizeInBytes(dtype);
  const size_t count = members.front().size() / size;
  out.assign(members.front().size(), 0);
  if (dtype == DType::I32 || dtype == DType::I64) {
    for (size_t i = 0; i < count; ++i) {
      int64_t value = loadInteger(members[0].data(), dtype, i);
      for (size_t m = 1; m < members.size(); ++m) {
        int64_t other = loadInteger(members[m].data(), dtype, i);
        if (inst.op0 == AluOp::Add)
          value = int64_t(uint64_t(value) + uint64_t(other));
        else if (inst.op0 == AluOp::Max)
          value = std::max(value, other);
        else
          value = std::min(value, other);
      }
      storeInteger(out.data(), dtype, i, value);
    }
    return;
  }
  // Floats: accumulate in f32 (as the collective engines do), round once.
  const float groupSize = float(members.size());
  for (size_t i = 0; i < count; ++i) {
    float value = float(loadValue(members[0].data(), dtype, i));
    for (size_t m = 1; m < members.size(); ++m) {
      float other = float(loadValue(members[m].data(), dtype, i));
      if (inst.op0 == AluOp::Add)
        value += other;
      else if (inst.op0 == AluOp::Max)
        value = std::isnan(value) || std::isnan(other)
                    ? std::numeric_limits<float>::quiet_NaN()
                    : std::max(value, other);
      else
        value = std::isnan(value) || std::isnan(other)
                    ? std::numeric_limits<float>::quiet_NaN()
                    : std::min(value, other);
    }
    if (inst.op1 == AluOp::Divide)
      value /= groupSize;
    uint64_t bits = encodeFloat(double(value), dtype);
    std::memcpy(out.data() + i * size, &bits, size);
  }
}

/// Slice `index` of `parts` along the middle of an [outer, size, inner]
/// buffer of `elementBytes`-byte elements.
void sliceOf(const uint8_t *in, const Around &view, int64_t index,
             int64_t parts, unsigned elementBytes, uint8_t *out) {
  const int64_t chunk = view.size / parts;
  const size_t run = size_t(chunk * view.inner) * elementBytes;
  for (int64_t o = 0; o < view.outer; ++o)
    std::memcpy(out + size_t(o) * run,
                in + size_t((o * view.size + index * chunk) * view.inner) *
                         elementBytes,
                run);
}

} // namespace

bool computeCollective(const Instruction &inst,
                       const std::vector<std::vector<uint8_t>> &members,
                       int position, std::vector<uint8_t> &dst,
                       std::string &error) {
  if (inst.opcode == Opcode::AxisIndex) {
    dst.assign(dtypeSizeInBytes(inst.dst.dtype), 0);
    storeInteger(dst.data(), inst.dst.dtype, 0, position);
    return true;
  }
  if (members.empty() || inst.srcs.size() != 1) {
    error = std::string(opcodeName(inst.opcode)) + ": no source buffers";
    return false;
  }
  const unsigned elementBytes = dtypeSizeInBytes(inst.srcs[0].dtype);
  const int64_t n = int64_t(members.size());
  const size_t srcBytes = members.front().size();
  for (const std::vector<uint8_t> &member : members)
    if (member.size() != srcBytes) {
      error = std::string(opcodeName(inst.opcode)) +
              ": the group's source buffers differ in size (" +
              std::to_string(member.size()) + " vs " +
              std::to_string(srcBytes) + " bytes)";
      return false;
    }
  switch (inst.opcode) {
  case Opcode::AllReduce:
    reduce(inst, members, dst);
    return true;
  case Opcode::CollectivePermute: {
    int64_t from = ((position - inst.shift) % n + n) % n;
    dst = members[size_t(from)];
    return true;
  }
  case Opcode::AllGather: {
    Around view = around(inst.collectiveShape, inst.collectiveDim);
    const size_t run = size_t(view.size * view.inner) * elementBytes;
    dst.resize(srcBytes * size_t(n));
    for (int64_t o = 0; o < view.outer; ++o)
      for (int64_t m = 0; m < n; ++m)
        std::memcpy(dst.data() + size_t(o * n + m) * run,
                    members[size_t(m)].data() + size_t(o) * run, run);
    return true;
  }
  case Opcode::ReduceScatter: {
    std::vector<uint8_t> reduced;
    reduce(inst, members, reduced);
    Around view = around(inst.collectiveShape, inst.collectiveDim);
    dst.resize(srcBytes / size_t(n));
    sliceOf(reduced.data(), view, position, n, elementBytes, dst.data());
    return true;
  }
  case Opcode::AllSlice: {
    // Only this rank's own buffer is needed; `members` holds just it.
    Around view = around(inst.collectiveShape, inst.collectiveDim);
    const int64_t parts = inst.srcs[0].numPartitions /
                          std::max<int64_t>(1, inst.dst.numPartitions);
    dst.resize(srcBytes / size_t(parts));
    sliceOf(members.front().data(), view, position, parts, elementBytes,
            dst.data());
    return true;
  }
  case Opcode::AllToAll: {
    // Member m's chunk `position` along the split dim, placed at chunk m
    // along the concat dim.
    std::vector<int64_t> shape = inst.collectiveShape;
    const int64_t split = inst.collectiveDim, concat = inst.concatDim;
    Around in = around(shape, split);
    std::vector<int64_t> chunkShape = shape;
    chunkShape[size_t(split)] /= n;
    std::vector<int64_t> outShape = chunkShape;
    outShape[size_t(concat)] *= n;
    Around out = around(outShape, concat);
    Around piece = around(chunkShape, concat);
    std::vector<uint8_t> chunk(srcBytes / size_t(n));
    dst.resize(srcBytes);
    for (int64_t m = 0; m < n; ++m) {
      sliceOf(members[size_t(m)].data(), in, position, n, elementBytes,
              chunk.data());
      const size_t run = size_t(piece.size * piece.inner) * elementBytes;
      for (int64_t o = 0; o < out.outer; ++o)
        std::memcpy(dst.data() +
                        size_t((o * out.size + m * piece.size) * out.inner) *
                            elementBytes,
                    chunk.data() + size_t(o) * run, run);
    }
    return true;
  }
  default:
    error = std::string(opcodeName(inst.opcode)) + ": not a collective";
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Cost
//===----------------------------------------------------------------------===//

void ringLink(const Target &target, const std::vector<int> &group,
              int worldSize, double &bytesPerNs, double &latencyNs) {
  const int perInstance = int(std::max(1u, target.coresPerInstance()));
  // A core's share of its chip's NeuronLink bandwidth.
  bytesPerNs =
      target.linkBytesPerNsPerChip / double(std::max(1u, target.coresPerChip));
  latencyNs = target.linkLatencyNs;
  if (group.empty())
    return;
  std::vector<int> instances;
  for (int rank : group)
    instances.push_back(rank / perInstance);
  std::sort(instances.begin(), instances.end());
  instances.erase(std::unique(instances.begin(), instances.end()),
                  instances.end());
  if (instances.size() < 2)
    return;
  // The group spans instances: every instance's cores run the same
  // collective at once, so its EFA is shared by the groups crossing it;
  // each ring leaves an instance once, carried by the members it has there.
  const double membersPerInstance =
      double(group.size()) / double(instances.size());
  const double coresOnInstance = double(std::min(worldSize, perInstance));
  const double share = target.networkBytesPerNsPerInstance *
                       membersPerInstance / coresOnInstance;
  bytesPerNs = std::min(bytesPerNs, share);
  latencyNs = target.networkLatencyNs;
}

double collectiveTimeNs(const Target &target, const Instruction &inst,
                        const std::vector<int> &group, int worldSize,
                        uint64_t srcBytes, uint64_t dstBytes) {
  const double n = double(std::max<size_t>(1, group.size()));
  const double localCopy =
      2.0 * double(std::max(srcBytes, dstBytes)) / target.hbmBytesPerNsPerCore;
  if (inst.opcode == Opcode::AllSlice || inst.opcode == Opcode::AxisIndex ||
      n == 1)
    return localCopy;
  double bandwidth = 0, latency = 0;
  ringLink(target, group, worldSize, bandwidth, latency);
  switch (inst.opcode) {
  case Opcode::AllReduce:
    return 2.0 * (n - 1) / n * double(srcBytes) / bandwidth +
           2.0 * (n - 1) * latency;
  case Opcode::AllGather:
    return (n - 1) / n * double(dstBytes) / bandwidth + (n - 1) * latency;
  case Opcode::ReduceScatter:
  case Opcode::AllToAll:
    return (n - 1) / n * double(srcBytes) / bandwidth + (n - 1) * latency;
  case Opcode::CollectivePermute:
    return double(srcBytes) / bandwidth + latency;
  default:
    return localCopy;
  }
}

//===----------------------------------------------------------------------===//
// In-process job
//===----------------------------------------------------------------------===//

class InProcessCommunicator : public Communicator {
public:
  InProcessCommunicator(InProcessJob &job, int rank) : job(job), myRank(rank) {}
  int rank() const override { return myRank; }
  int size() const override { return job.ranks; }
  bool exchange(const CollectiveCall &call, const std::vector<uint8_t> &mine,
                double startNs, std::vector<std::vector<uint8_t>> &theirs,
                std::vector<double> &startsNs, std::string &error) override;
  bool send(int to, uint64_t key, const std::vector<uint8_t> &bytes,
            double sentNs, const std::string &description,
            std::string &error) override;
  bool receive(int from, uint64_t key, std::vector<uint8_t> &bytes,
               double &sentNs, const std::string &description,
               std::string &error) override;
  void abort(const std::string &message) override;
  void stall() override {
    std::unique_lock<std::mutex> lock(job.mutex);
    job.changed.wait(lock, [&] { return job.aborted; });
  }

private:
  InProcessJob &job;
  int myRank;
};

InProcessJob::InProcessJob(int ranks, double timeoutSeconds)
    : ranks(ranks), timeoutSeconds(timeoutSeconds), mailboxes(size_t(ranks)) {
  for (int rank = 0; rank < ranks; ++rank)
    communicators.push_back(
        std::make_unique<InProcessCommunicator>(*this, rank));
}

InProcessJob::~InProcessJob() = default;

Communicator &InProcessJob::communicator(int rank) {
  return *communicators[size_t(rank)];
}

bool InProcessJob::failed(int &rank, std::string &message) const {
  std::lock_guard<std::mutex> lock(mutex);
  rank = abortRank;
  message = abortMessage;
  return aborted;
}

void InProcessCommunicator::abort(const std::string &message) {
  std::lock_guard<std::mutex> lock(job.mutex);
  if (!job.aborted) {
    job.aborted = true;
    job.abortRank = myRank;
    job.abortMessage = message;
  }
  job.changed.notify_all();
}

bool InProcessCommunicator::exchange(const CollectiveCall &call,
                                     const std::vector<uint8_t> &mine,
                                     double startNs,
                                     std::vector<std::vector<uint8_t>> &theirs,
                                     std::vector<double> &startsNs,
                                     std::string &error) {
  std::unique_lock<std::mutex> lock(job.mutex);
  auto posting = std::make_shared<InProcessJob::Posting>();
  posting->data = mine;
  posting->startNs = startNs;
  posting->readersLeft = int(call.group.size()) - 1;
  if (posting->readersLeft > 0)
    job.mailboxes[size_t(myRank)][call.sequence] = posting;
  job.changed.notify_all();

  auto arrived = [&](int member) {
    return member == myRank ||
           job.mailboxes[size_t(member)].count(call.sequence) != 0;
  };
  auto everyone = [&] {
    return std::all_of(call.group.begin(), call.group.end(), arrived);
  };
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::duration<double>(job.timeoutSeconds));
  bool ready = job.changed.wait_until(
      lock, deadline, [&] { return job.aborted || everyone(); });
  if (job.aborted) {
    error = call.description + " stopped: rank " +
            std::to_string(job.abortRank) + " failed";
    return false;
  }
  if (!ready) {
    std::string missing;
    for (int member : call.group)
      if (!arrived(member))
        missing += (missing.empty() ? "" : ", ") + std::to_string(member);
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", job.timeoutSeconds);
    error = call.description + " timed out after " + seconds + " s: rank(s) " +
            missing +
            " never arrived (raise --collective-timeout if they are slow)";
    return false;
  }
  theirs.resize(call.group.size());
  startsNs.resize(call.group.size());
  for (size_t i = 0; i < call.group.size(); ++i) {
    int member = call.group[i];
    if (member == myRank) {
      theirs[i] = mine;
      startsNs[i] = startNs;
      continue;
    }
    auto &box = job.mailboxes[size_t(member)];
    auto it = box.find(call.sequence);
    theirs[i] = it->second->data;
    startsNs[i] = it->second->startNs;
    if (--it->second->readersLeft == 0)
      box.erase(it);
  }
  return true;
}

bool InProcessCommunicator::send(int to, uint64_t key,
                                 const std::vector<uint8_t> &bytes,
                                 double sentNs, const std::string &description,
                                 std::string &error) {
  std::lock_guard<std::mutex> lock(job.mutex);
  if (job.aborted) {
    error = description + " stopped: rank " + std::to_string(job.abortRank) +
            " failed";
    return false;
  }
  InProcessJob::Posting &posting = job.transfers[{myRank, to, key}];
  posting.data = bytes;
  posting.startNs = sentNs;
  posting.readersLeft = 1;
  job.changed.notify_all();
  return true;
}

bool InProcessCommunicator::receive(int from, uint64_t key,
                                    std::vector<uint8_t> &bytes, double &sentNs,
                                    const std::string &description,
                                    std::string &error) {
  std::unique_lock<std::mutex> lock(job.mutex);
  const auto id = std::make_tuple(from, myRank, key);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::duration<double>(job.timeoutSeconds));
  bool ready = job.changed.wait_until(lock, deadline, [&] {
    return job.aborted || job.transfers.count(id) != 0;
  });
  if (job.aborted) {
    error = description + " stopped: rank " + std::to_string(job.abortRank) +
            " failed";
    return false;
  }
  if (!ready) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", job.timeoutSeconds);
    error = description + " timed out after " + seconds + " s: rank " +
            std::to_string(from) +
            " never sent it (raise --collective-timeout if it is slow)";
    return false;
  }
  auto it = job.transfers.find(id);
  bytes = std::move(it->second.data);
  sentNs = it->second.startNs;
  job.transfers.erase(it);
  return true;
}

//===----------------------------------------------------------------------===//
// Mirrored ranks
//===----------------------------------------------------------------------===//

bool MirrorCommunicator::exchange(const CollectiveCall &call,
                                  const std::vector<uint8_t> &mine,
                                  double startNs,
                                  std::vector<std::vector<uint8_t>> &theirs,
                                  std::vector<double> &startsNs,
                                  std::string &error) {
  for (int member : call.group)
    if (member != worldRank && simulatedIndex(member) >= 0) {
      // Two simulated ranks in one group would each need the other's real
      // contribution: the groups are not symmetric.
      error = call.description + " meets simulated rank " +
              std::to_string(member) +
              "; a mirrored run needs collectives inside the mirrored ranks "
              "(run every rank instead)";
      return false;
    }
  theirs.assign(call.group.size(), mine);
  startsNs.assign(call.group.size(), startNs);
  return true;
}

int MirrorCommunicator::peerOf(int worldPeer, const std::string &description,
                               std::string &error) const {
  int peer = simulatedIndex(worldPeer);
  if (peer < 0 || !simulated)
    error = description + ": rank " + std::to_string(worldPeer) +
            " is mirrored, not simulated (run every rank instead)";
  return simulated ? peer : -1;
}

bool MirrorCommunicator::send(int to, uint64_t key,
                              const std::vector<uint8_t> &bytes, double sentNs,
                              const std::string &description,
                              std::string &error) {
  int peer = peerOf(to, description, error);
  return peer >= 0 &&
         simulated->send(peer, key, bytes, sentNs, description, error);
}

bool MirrorCommunicator::receive(int from, uint64_t key,
                                 std::vector<uint8_t> &bytes, double &sentNs,
                                 const std::string &description,
                                 std::string &error) {
  int peer = peerOf(from, description, error);
  return peer >= 0 &&
         simulated->receive(peer, key, bytes, sentNs, description, error);
}

void MirrorCommunicator::abort(const std::string &message) {
  if (simulated)
    simulated->abort(message);
}

void MirrorCommunicator::stall() {
  if (simulated)
    simulated->stall();
}

} // namespace trnrt
