//===- Collectives.h - collectives of a partitioned program ------*- C++
//-*-===//
//
// What a rank needs to execute the collective instructions of a partitioned
// program (docs/isa.md §5.6): the mesh bound at load time (axis sizes and
// this rank's coordinates), a Communicator that exchanges buffers with the
// other ranks of a replica group (threads of one process, or Open MPI
// processes: trnrt/MpiCommunicator.h), the semantics of every collective on
// the exchanged bytes, and their cost in simulated time (ring algorithms over
// NeuronLink inside an instance and EFA between instances; docs/simulator.md).
//
// A replica group is the set of ranks that differ only along the axes an
// instruction names; rank = row-major over the mesh axes (the first axis the
// most major), as in docs/partitioning.md. No MLIR or LLVM; no exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_COLLECTIVES_H
#define TRNRT_COLLECTIVES_H

#include "trnrt/Isa.h"
#include "trnrt/Target.h"

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace trnrt {

/// One collective as a rank meets it: the k-th of its run (every rank meets
/// the same collectives in the same order: they all run on the Sync stream),
/// its group (world ranks in group order) and this rank's position in it.
struct CollectiveCall {
  uint64_t sequence = 0;
  Opcode opcode = Opcode::AllReduce;
  std::vector<int> group;
  int position = 0;
  /// "all_reduce #3 over tp": for messages.
  std::string description;
};

/// Moves bytes between the ranks of a job. exchange() is all-to-all within
/// a group: every member contributes `mine` and its simulated start time and
/// receives everyone's, in group order. It fails with a one-line message
/// when another rank failed (naming it) or when a member does not arrive
/// within the timeout (naming the collective and the ranks missing).
class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual bool exchange(const CollectiveCall &call,
                        const std::vector<uint8_t> &mine, double startNs,
                        std::vector<std::vector<uint8_t>> &theirs,
                        std::vector<double> &startsNs, std::string &error) = 0;
  /// A pipeline transfer: posts `bytes` (sent at simulated time `sentNs`)
  /// for rank `to` under `key` and returns without waiting for the
  /// receiver.
  virtual bool send(int to, uint64_t key, const std::vector<uint8_t> &bytes,
                    double sentNs, const std::string &description,
                    std::string &error) = 0;
  /// Waits for what rank `from` sent this rank under `key` (its bytes and
  /// the simulated time it was sent); fails like exchange().
  virtual bool receive(int from, uint64_t key, std::vector<uint8_t> &bytes,
                       double &sentNs, const std::string &description,
                       std::string &error) = 0;
  /// Stops the job because this rank failed with `message`: the other ranks'
  /// exchanges fail naming this rank instead of waiting for it.
  virtual void abort(const std::string &message) = 0;
  /// Test-only: blocks until the job stops, like a rank that never reaches
  /// its next collective (so the others' timeouts can be tested).
  virtual void stall() = 0;
  /// True when exchange() never waits for another thread or process (the
  /// other members are mirrors): a run's timing then depends on other ranks
  /// through transfers alone.
  virtual bool mirrorsCollectives() const { return false; }
};

/// Every rank of a job in one process, one thread per rank: the exchanges
/// go through shared memory.
class InProcessJob {
public:
  InProcessJob(int ranks, double timeoutSeconds);
  ~InProcessJob();
  /// The communicator of rank `rank` (owned by the job).
  Communicator &communicator(int rank);
  /// The first failure reported through abort(), with its rank.
  bool failed(int &rank, std::string &message) const;

private:
  friend class InProcessCommunicator;
  struct Posting {
    std::vector<uint8_t> data;
    double startNs = 0;
    int readersLeft = 0;
  };
  int ranks;
  double timeoutSeconds;
  mutable std::mutex mutex;
  std::condition_variable changed;
  /// Per rank: its postings by collective sequence number.
  std::vector<std::map<uint64_t, std::shared_ptr<Posting>>> mailboxes;
  bool aborted = false;
  int abortRank = -1;
  std::string abortMessage;
  std::vector<std::unique_ptr<Communicator>> communicators;
  /// Pipeline transfers posted and not received yet, by (from, to, key).
  std::map<std::tuple<int, int, uint64_t>, Posting> transfers;
};

/// A run that simulates one rank for each group of ranks that run the same
/// program at the same simulated times (the tensor- and data-parallel ranks
/// of a pipeline stage: SPMD programs on identical shapes): a collective's
/// other members contribute what this rank does, when it does, so its time
/// is the full job's. Transfers go to the other simulated ranks through
/// `simulated` (ranks 0..n-1, by `simulatedIndex` of their world rank).
/// Meant for timing-only runs (SimulatorOptions::timingOnly): a mirrored
/// sum is this rank's value times the group size, not the job's.
class MirrorCommunicator : public Communicator {
public:
  /// `simulatedIndex(worldRank)`: its index among the simulated ranks, or -1
  /// for a mirrored one. `simulated` may be null when no transfers happen.
  MirrorCommunicator(int worldRank, int worldSize,
                     std::function<int(int)> simulatedIndex,
                     Communicator *simulated)
      : worldRank(worldRank), worldSize(worldSize),
        simulatedIndex(std::move(simulatedIndex)), simulated(simulated) {}
  int rank() const override { return worldRank; }
  int size() const override { return worldSize; }
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
  void stall() override;
  bool mirrorsCollectives() const override { return true; }

private:
  /// The simulated peer of a transfer, or an error naming it.
  int peerOf(int worldPeer, const std::string &description,
             std::string &error) const;
  int worldRank, worldSize;
  std::function<int(int)> simulatedIndex;
  Communicator *simulated;
};

/// A rank's binding of a partitioned program: the mesh at run time, its
/// place in it, and how it talks to the other ranks.
struct CollectiveContext {
  std::vector<MeshAxis> axes; ///< the program's axes with the run-time sizes
  int rank = 0;
  Communicator *communicator = nullptr;
  /// Test-only failure injection (trn-run reads TRNRT_TEST_FAIL_RANK and
  /// TRNRT_TEST_STALL_RANK): fail at, or never arrive at, the first
  /// collective.
  bool injectFailure = false;
  bool injectStall = false;
  /// Collectives met so far (the next one's sequence number).
  uint64_t sequence = 0;
  /// The microbatch a pipeline fragment runs for: a transfer is matched by
  /// its tag and this.
  int64_t microbatch = 0;
  /// Added to this run's simulated times when they meet other ranks' (a
  /// pipeline rank runs one fragment after another on one clock).
  double clockOffsetNs = 0;

  int worldSize() const;
  std::vector<int64_t> sizes() const;
  /// This rank's index along every axis.
  std::vector<int64_t> coordinates() const;
  /// The world ranks of this rank's group along `meshAxes`, in group order
  /// (the first named axis the most major), and this rank's position.
  std::vector<int> group(uint32_t meshAxes, int &position) const;
  /// "tp" or "dp,tp".
  std::string axisNames(uint32_t meshAxes) const;
  /// The world rank whose index along the one axis of `meshAxes` is `peer`,
  /// its other coordinates this rank's; -1 if `peer` is outside the axis.
  int peerRank(uint32_t meshAxes, int64_t peer) const;
};

/// Times that pass between a pipeline rank's fragments and other ranks (a
/// rank's clock, a send's time) are multiples of 2^-10 ns: sums and
/// differences of them are then exact in double arithmetic, so a periodic
/// schedule repeats its times to the bit (and a fragment's recorded
/// timeline can be reused: trnrt/PipelineRun.cpp). Under a picosecond.
inline double onTransferClock(double ns) {
  return std::nearbyint(ns * 1024.0) / 1024.0;
}

/// The result of collective `inst` for the member at `position` of a group
/// whose source buffers are `members` (group order; only the own buffer for
/// all_slice). `dst` gets the destination's bytes. Float sums accumulate in
/// f32 in group order and round once to the dtype; integer sums in int64.
bool computeCollective(const Instruction &inst,
                       const std::vector<std::vector<uint8_t>> &members,
                       int position, std::vector<uint8_t> &dst,
                       std::string &error);

/// Simulated time of collective `inst` for a group of world ranks `group`
/// (docs/simulator.md, "Collectives"), once its last member has arrived:
/// ring all-reduce 2(n-1)/n S/B + 2(n-1) a; all-gather, reduce-scatter and
/// all-to-all (n-1)/n S/B + (n-1) a; a permute S/B + a; all_slice and
/// axis_index a local copy. S is the larger of the source and destination
/// bytes, B the group's bottleneck bandwidth per rank, a the per-step
/// latency.
double collectiveTimeNs(const Target &target, const Instruction &inst,
                        const std::vector<int> &group, int worldSize,
                        uint64_t srcBytes, uint64_t dstBytes);

/// The bandwidth (bytes/ns) each rank of a ring over `group` gets, and the
/// latency of one ring step: NeuronLink inside an instance, EFA when the
/// group spans instances (worldSize tells how many of an instance's cores
/// share its EFA).
void ringLink(const Target &target, const std::vector<int> &group,
              int worldSize, double &bytesPerNs, double &latencyNs);

} // namespace trnrt

#endif // TRNRT_COLLECTIVES_H
