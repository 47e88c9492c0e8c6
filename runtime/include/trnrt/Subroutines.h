//===- Subroutines.h - calls of repeated layers compiled once ---*- C++ -*-===//
//
// A program may hold subroutines (a layer the compiler found repeated and
// compiled once) and calls into them (Program::calls; docs/isa.md,
// "Subroutines"). The hardware runs a call as a branch of each sequencer
// into the shared body with its own base registers; the runtime does the
// same: resolveCalls computes, once, what every call changes (its semaphore
// counts, the barrier, its HBM bases), and a StreamCursor walks a stream as
// if every call were inlined, relocating one instruction at a time. The
// program's memory stays that of the compact program however many calls it
// makes. expandCalls materialises the same streams (tests, inspection).
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_SUBROUTINES_H
#define TRNRT_SUBROUTINES_H

#include "trnrt/Isa.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trnrt {

/// Where a callee's HBM goes in the caller for one call: its arguments to
/// the call's bindings; its constants (laid out after the arguments) to a
/// region of their own after the caller's HBM; its scratch (after the
/// constants) to the call's scratch address.
struct CallRelocation {
  struct Range {
    uint64_t begin, end, target;
  };
  std::vector<Range> arguments; ///< sorted by begin
  uint64_t localStart = 0;      ///< the callee's first non-argument byte
  uint64_t scratchStart = 0;    ///< the callee's first scratch byte
  uint64_t constantBase = 0, scratchBase = 0;

  /// Moves a callee address to the caller's; false if it is in none of the
  /// callee's tensors' regions.
  bool relocate(int64_t &address) const;
};

/// What resolveCalls computed for one call.
struct ResolvedCall {
  /// Per semaphore, the count every stream has reached when the call starts
  /// (its entry barrier) and when it has ended (its exit barrier).
  std::vector<int64_t> entry, exit;
  CallRelocation relocation;
  uint32_t originBase = 0; ///< added to the callee's origins
};

/// Program::resolvedCalls.
struct CallPlan {
  std::vector<ResolvedCall> calls; ///< as Program::calls
  /// Per stream (engines, then DMA queues), its instructions with every
  /// call expanded.
  std::vector<uint64_t> streamSizes;
};

/// Gives `program` the tables of its expanded form without expanding its
/// streams: the callees' constants (copied) and each call's scratch join its
/// tensors, their origins its origins, hbmBytes and numSemaphores become the
/// expanded program's, and Program::resolvedCalls holds the plan the cursors
/// follow. The subroutines and calls stay. A no-op for a program without
/// calls or one already resolved. False with a one-line `error` on an
/// inconsistent call (checkCalls) or a callee instruction addressing HBM
/// outside its tensors.
bool resolveCalls(Program &program, std::string &error);

/// One stream of a program as its expanded form has it: a program without
/// calls is walked in place; a resolved program's callee instructions are
/// relocated one at a time (the caller's are read in place but for the
/// first after a call, which carries the call's exit barrier). The
/// instruction returned stays valid until the next advance().
class StreamCursor {
public:
  StreamCursor() = default;
  /// `program` has no calls or is resolved (resolveCalls), and outlives the
  /// cursor; `stream` numbers engines then DMA queues.
  StreamCursor(const Program &program, size_t stream);

  bool done() const { return !current && !isRelocated; }
  const Instruction &instruction() const {
    return isRelocated ? relocated : *current;
  }
  /// The instruction's index in the expanded stream.
  uint64_t position() const { return index; }
  /// The expanded stream's length.
  uint64_t size() const { return length; }
  void advance();

private:
  void settle();

  const Program *program = nullptr;
  const CallPlan *plan = nullptr;
  size_t stream = 0;
  size_t nextCall = 0;    ///< the call the caller's stream runs into next
  bool inCallee = false;  ///< walking calls[nextCall]'s callee
  bool afterCall = false; ///< the next caller instruction ends a call
  size_t callerIndex = 0; ///< in the caller's stream
  size_t calleeIndex = 0; ///< in the callee's stream, while inCallee
  /// The current instruction: in place, or rewritten into `relocated` (a
  /// flag, not a pointer, so that cursors copy and move).
  const Instruction *current = nullptr;
  bool isRelocated = false;
  Instruction relocated;
  uint64_t index = 0, length = 0;
};

/// Inlines every call of `program`: the streams become what StreamCursor
/// walks (the callee's instructions at the call's position, their semaphore
/// waits offset by the counts at the call, the barrier made of waits, HBM
/// addresses relocated) and the subroutines and calls go. The result runs
/// anywhere a program without calls does. False with a one-line `error` as
/// resolveCalls, or on more than `maxInstructions`.
bool expandCalls(Program &program, std::string &error,
                 uint64_t maxInstructions = uint64_t(1) << 26);

/// The structural checks of a program's calls: callee indices, stream
/// positions in range and non-decreasing, one argument per callee input or
/// output and the callee's scratch inside the caller's HBM, callees without
/// calls of their own and on the caller's target and mesh.
bool checkCalls(const Program &program, std::string &error);

/// The HBM `program` lays out once its calls are expanded: its own, then
/// each subroutine's constants.
uint64_t expandedHbmBytes(const Program &program);

/// The bytes of scratch a subroutine needs per call (CallSite::scratch).
uint64_t subroutineScratchBytes(const Program &callee);

/// Instructions of `program` with every call expanded, per engine stream
/// then DMA queue (the numbering of checkSemaphoresCanComplete).
std::vector<uint64_t> expandedStreamSizes(const Program &program);

} // namespace trnrt

#endif // TRNRT_SUBROUTINES_H
