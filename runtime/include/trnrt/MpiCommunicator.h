//===- MpiCommunicator.h - collectives between Open MPI processes -*- C++ -*-=//
//
// One rank per process, started by `mpirun -np N` or `srun -n N`: the
// collectives' exchanges go over Open MPI point-to-point messages, polled
// against a timeout so that a rank that never arrives is reported by name
// instead of hanging the job; a failing rank stops the whole job
// (MPI_Abort) after printing its message. Lives in its own library
// (TrnRtMpi), so that only the tools that launch ranks link MPI.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_MPICOMMUNICATOR_H
#define TRNRT_MPICOMMUNICATOR_H

#include "trnrt/Collectives.h"

#include <memory>
#include <string>
#include <vector>

namespace trnrt {

/// Whether this process is one of several tasks of mpirun
/// (OMPI_COMM_WORLD_RANK/SIZE) or of an srun job step
/// (SLURM_PROCID/SLURM_STEP_NUM_TASKS, which srun sets for a job step);
/// sets `rank` and `size`. A single
/// task (or no launcher) is not a job: false. Needs no MPI.
bool launchedAsRank(int &rank, int &size);

class MpiJob {
public:
  /// MPI_Init and the world communicator; nullptr with `error` if MPI
  /// cannot start.
  static std::unique_ptr<MpiJob> start(double timeoutSeconds,
                                       std::string &error);
  ~MpiJob(); ///< MPI_Finalize

  Communicator &communicator();
  int rank() const;
  int size() const;
  /// Rank 0 receives every rank's `mine` (in rank order, its own included);
  /// the others send theirs. Fails (naming the ranks) after the timeout.
  bool gatherToRoot(const std::vector<uint8_t> &mine,
                    std::vector<std::vector<uint8_t>> &all, std::string &error);
  /// Prints `message` and ends every process of the job with `status`.
  [[noreturn]] void abortJob(const std::string &message, int status);

private:
  MpiJob() = default;
  std::unique_ptr<Communicator> world;
  double timeoutSeconds = 60.0;
};

} // namespace trnrt

#endif // TRNRT_MPICOMMUNICATOR_H
