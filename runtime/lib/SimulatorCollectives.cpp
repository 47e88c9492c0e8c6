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

  if (inst.opcode == Opcode::Send || inst.opcode == Opcode::Recv)
    return executeTransfer(inst, startNs, call.description, timing);

  // Timing only: the members exchange their start times, no bytes (and
  // the views are not decoded, so their size is not bounded).
  const bool values = !options.timingOnly;
  TileView dstView;
  if (!makeView(inst.dst, "dst", dstView, values))
    return false;
  std::vector<uint8_t> mine;
  timing.bytes = 0;
  if (inst.opcode != Opcode::AxisIndex) {
    TileView srcView;
    if (!makeView(inst.srcs[0], "src (srcs[0])", srcView, values))
      return false;
    timing.bytes = uint64_t(srcView.totalElements()) * srcView.elementBytes;
    if (values) {
      mine.resize(size_t(timing.bytes));
      gatherBytes(srcView, mine.data());
    }
  }

  std::vector<std::vector<uint8_t>> members;
  std::vector<double> starts;
  // Members meet on the transfer clock (onTransferClock): exact sums with
  // the clock offset, so the wait does not depend on where a pipeline
  // rank's clock stands, and mirrors wait exactly zero.
  const double arrivedNs = onTransferClock(startNs);
  const bool local = inst.opcode == Opcode::AllSlice ||
                     inst.opcode == Opcode::AxisIndex || call.group.size() < 2;
  std::string error;
  if (local) {
    members.push_back(std::move(mine));
    starts.push_back(arrivedNs);
  } else if (!context->communicator->exchange(
                 call, mine, arrivedNs + context->clockOffsetNs, members,
                 starts, error)) {
    return fail(error);
  } else {
    // The others' times on this run's clock.
    for (double &start : starts)
      start -= context->clockOffsetNs;
  }
  const uint64_t dstBytes =
      uint64_t(dstView.totalElements()) * dstView.elementBytes;
  if (values) {
    std::vector<uint8_t> result;
    if (!computeCollective(inst, members, call.position, result, error))
      return fail(error);
    if (result.size() != dstBytes)
      return fail(call.description + " produces " +
                  std::to_string(result.size()) + " bytes but dst holds " +
                  std::to_string(dstBytes) +
                  " (the program does not fit this mesh binding)");
    scatterBytes(result.data(), dstView);
  }

  const double lastArrival = *std::max_element(starts.begin(), starts.end());
  timing.waitNs = lastArrival - arrivedNs;
  timing.durationNs = timing.waitNs + collectiveTimeNs(target, inst, call.group,
                                                       context->worldSize(),
                                                       timing.bytes, dstBytes);
  return true;
}

/// A pipeline transfer: a send posts this rank's tensor and lasts as long as
/// the bytes take to leave over the link to the peer (S/B + a, as a
/// permute); a receive lasts until they have arrived: the send's start plus
/// that time, if later than its own start.
bool SimulatorCoreBase::executeTransfer(const Instruction &inst, double startNs,
                                        const std::string &description,
                                        CollectiveTiming &timing) {
  CollectiveContext *context = options.collectives;
  const bool send = inst.opcode == Opcode::Send;
  const int peer = context->peerRank(inst.meshAxes, inst.peer);
  if (peer < 0 || peer == context->rank)
    return fail(description + " names stage " + std::to_string(inst.peer) +
                ", which is " +
                (peer < 0 ? "outside the mesh binding" : "this rank's own"));
  if (context->microbatch < 0 || context->microbatch >= (int64_t(1) << 24) ||
      inst.tag >= (int64_t(1) << 39))
    return fail(description + ": tag or microbatch out of range");
  const uint64_t key =
      (uint64_t(inst.tag) << 24) | uint64_t(context->microbatch);
  const std::string what =
      std::string(send ? "send" : "recv") + " tag " + std::to_string(inst.tag) +
      " of microbatch " + std::to_string(context->microbatch) +
      (send ? " to rank " : " from rank ") + std::to_string(peer);
  // Timing only: the transfer carries no bytes, only its time.
  const bool values = !options.timingOnly;
  TileView view;
  if (!makeView(send ? inst.srcs[0] : inst.dst, send ? "src (srcs[0])" : "dst",
                view, values))
    return false;
  const uint64_t bytes = uint64_t(view.totalElements()) * view.elementBytes;
  timing.bytes = bytes;
  const std::vector<int> pair = {std::min(context->rank, peer),
                                 std::max(context->rank, peer)};
  Instruction permute;
  permute.opcode = Opcode::CollectivePermute;
  const double linkNs = collectiveTimeNs(target, permute, pair,
                                         context->worldSize(), bytes, bytes);
  std::string error;
  timing.transfer = true;
  timing.record.send = send;
  timing.record.peer = peer;
  timing.record.tag = inst.tag;
  timing.record.startNs = startNs;
  timing.record.linkNs = linkNs;
  if (send) {
    std::vector<uint8_t> data(values ? bytes : 0);
    if (values)
      gatherBytes(view, data.data());
    timing.record.sentNs = onTransferClock(startNs);
    if (!context->communicator->send(
            peer, key, data, timing.record.sentNs + context->clockOffsetNs,
            what, error))
      return fail(error);
    timing.durationNs = linkNs;
    return true;
  }
  std::vector<uint8_t> data;
  double sentNs = 0;
  if (!context->communicator->receive(peer, key, data, sentNs, what, error))
    return fail(error);
  if (values && data.size() != bytes)
    return fail(what + " brought " + std::to_string(data.size()) +
                " bytes but dst holds " + std::to_string(bytes) +
                " (the stages' programs do not match)");
  if (values)
    scatterBytes(data.data(), view);
  timing.record.sentNs = sentNs - context->clockOffsetNs;
  const double arrival = timing.record.sentNs + linkNs;
  timing.waitNs = std::max(0.0, arrival - linkNs - startNs);
  timing.durationNs = std::max(arrival - startNs, 0.0);
  return true;
}

} // namespace sim
} // namespace trnrt
