//===- SimulatorCollectives.cpp - collectives on a simulated core ---------===//
//
// A collective instruction reads its source from this rank's HBM, exchanges
// it with its replica group through the rank's CollectiveContext, stores the
// result, and lasts until the group finishes: the last member's arrival (in
// simulated time: every member reports when it started) plus the
// collective's own time (collectiveTimeNs). It runs on the Sync stream, so
// the other engines go on with whatever does not wait for its result.
//
//===----------------------------------------------------------------------===//

#include "SimulatorImpl.h"

#include "trnrt/Collectives.h"

#include <algorithm>

namespace trnrt {
namespace sim {

bool SimulatorCoreBase::executeCollective(const Instruction &inst,
                                          double startNs,
                                          CollectiveTiming &timing) {
  CollectiveContext *context = options.collectives;
  if (!context || !context->communicator)
    return fail("the program is partitioned and needs its mesh bound: run "
                "it with trn-run --mesh");
  if (inst.meshAxes >> std::min<size_t>(context->axes.size(), 31))
    return fail("names mesh axes beyond the " +
                std::to_string(context->axes.size()) + " of the binding");
  CollectiveCall call;
  call.sequence = context->sequence++;
  call.opcode = inst.opcode;
  call.group = context->group(inst.meshAxes, call.position);
  call.description = std::string(opcodeName(inst.opcode)) + " #" +
                     std::to_string(call.sequence) + " over " +
                     context->axisNames(inst.meshAxes);
  if (context->injectFailure)
    return fail("injected failure (TRNRT_TEST_FAIL_RANK) before " +
                call.description);
  if (context->injectStall) {
    context->communicator->stall();
    return fail("stalled before " + call.description +
                " (TRNRT_TEST_STALL_RANK)");
  }

  TileView dstView;
  if (!makeView(inst.dst, "dst", dstView))
    return false;
  std::vector<uint8_t> mine;
  if (inst.opcode != Opcode::AxisIndex) {
    TileView srcView;
    if (!makeView(inst.srcs[0], "src (srcs[0])", srcView))
      return false;
    mine.resize(size_t(srcView.totalElements()) * srcView.elementBytes);
    gatherBytes(srcView, mine.data());
  }
  timing.bytes = mine.size();

  std::vector<std::vector<uint8_t>> members;
  std::vector<double> starts;
  const bool local = inst.opcode == Opcode::AllSlice ||
                     inst.opcode == Opcode::AxisIndex || call.group.size() < 2;
  std::string error;
  if (local) {
    members.push_back(std::move(mine));
    starts.push_back(startNs);
  } else if (!context->communicator->exchange(call, mine, startNs, members,
                                              starts, error)) {
    return fail(error);
  }
  std::vector<uint8_t> result;
  if (!computeCollective(inst, members, call.position, result, error))
    return fail(error);
  const uint64_t dstBytes =
      uint64_t(dstView.totalElements()) * dstView.elementBytes;
  if (result.size() != dstBytes)
    return fail(call.description + " produces " +
                std::to_string(result.size()) + " bytes but dst holds " +
                std::to_string(dstBytes) +
                " (the program does not fit this mesh binding)");
  scatterBytes(result.data(), dstView);

  const double lastArrival = *std::max_element(starts.begin(), starts.end());
  timing.waitNs = lastArrival - startNs;
  timing.durationNs = timing.waitNs + collectiveTimeNs(target, inst, call.group,
                                                       context->worldSize(),
                                                       timing.bytes, dstBytes);
  return true;
}

} // namespace sim
} // namespace trnrt
