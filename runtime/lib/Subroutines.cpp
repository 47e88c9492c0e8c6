//===- Subroutines.cpp - calls of repeated layers compiled once ----------===//
//
// A program may hold subroutines (a transformer layer the compiler found
// repeated and compiled once) and call sites into them (docs/isa.md,
// "Subroutines"). resolveCalls computes what each call changes (the
// semaphore counts at its entry and exit, its HBM relocation, its tensors
// and origins); StreamCursor walks a stream as the expanded program has it,
// one relocated instruction at a time; expandCalls drains the cursors.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Subroutines.h"
#include "trnrt/IsaValidate.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>

namespace trnrt {
namespace {

constexpr size_t kNumEngineStreams = 5;

size_t numStreams(const Program &program) {
  return kNumEngineStreams + program.dmaQueues.size();
}

const std::vector<Instruction> &streamAt(const Program &program, size_t s) {
  return s < kNumEngineStreams ? program.engineStreams[s]
                               : program.dmaQueues[s - kNumEngineStreams];
}

std::vector<Instruction> &streamAt(Program &program, size_t s) {
  return s < kNumEngineStreams ? program.engineStreams[s]
                               : program.dmaQueues[s - kNumEngineStreams];
}

bool isArgument(const HbmTensor &tensor) {
  return (tensor.kind == HbmTensor::Kind::Input ||
          tensor.kind == HbmTensor::Kind::Output) &&
         tensor.aliasesInput < 0;
}

/// The callee's bytes that are not arguments: [localStart, hbmBytes).
uint64_t localStartOf(const Program &callee) {
  uint64_t start = callee.hbmBytes;
  for (const HbmTensor &tensor : callee.tensors)
    if (!isArgument(tensor))
      start = std::min<uint64_t>(start, tensor.offset);
  return start;
}

/// The callee's scratch bytes: [scratchStart, hbmBytes).
uint64_t scratchStartOf(const Program &callee) {
  uint64_t start = callee.hbmBytes;
  for (const HbmTensor &tensor : callee.tensors)
    if (tensor.kind == HbmTensor::Kind::Scratch)
      start = std::min<uint64_t>(start, tensor.offset);
  return std::max(start, localStartOf(callee));
}

uint64_t align64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

/// Where each callee's constants go: after the caller's HBM, one region
/// each; `end` is the expanded program's HBM.
struct Layout {
  std::vector<uint64_t> constantBases;
  uint64_t end = 0;
};

Layout layoutOf(const Program &program) {
  Layout layout;
  uint64_t next = align64(program.hbmBytes);
  for (const Program &callee : program.subroutines) {
    layout.constantBases.push_back(next);
    next += align64(scratchStartOf(callee) - localStartOf(callee));
  }
  layout.end = next;
  return layout;
}

/// Raises (or adds) the wait of `inst` on `semaphore` to `value`.
void waitAtLeast(Instruction &inst, uint32_t semaphore, int64_t value) {
  if (value <= 0)
    return;
  for (SemaphoreWait &wait : inst.waits)
    if (wait.semaphore == semaphore) {
      wait.value = std::max(wait.value, value);
      return;
    }
  inst.waits.push_back({semaphore, value});
}

/// Calls `fn` on every HBM access pattern of `inst` (an Instruction, const
/// or not).
template <typename Inst, typename Fn>
void forEachHbmPattern(Inst &inst, Fn fn) {
  auto visit = [&](auto &pattern) {
    if (pattern.memory == Memory::Hbm)
      fn(pattern);
  };
  visit(inst.dst);
  for (auto &src : inst.srcs)
    visit(src);
  visit(inst.reduceDst);
  visit(inst.indices);
  for (auto *scalar : {&inst.scale, &inst.bias, &inst.scalar0, &inst.scalar1})
    if (!scalar->isImmediate)
      visit(scalar->column);
}

/// The exit or entry barrier of a call on one instruction.
void waitForCounts(Instruction &inst, const std::vector<int64_t> &counts) {
  for (uint32_t sem = 0; sem < counts.size(); ++sem)
    waitAtLeast(inst, sem, counts[sem]);
}

} // namespace

bool checkCalls(const Program &program, std::string &error) {
  size_t streams = numStreams(program);
  std::vector<uint64_t> previous(streams, 0);
  for (size_t k = 0; k < program.subroutines.size(); ++k) {
    const Program &callee = program.subroutines[k];
    std::string where = cat("subroutine ", k, ": ");
    if (!callee.subroutines.empty() || !callee.calls.empty()) {
      error = where + "has subroutines of its own (one level only)";
      return false;
    }
    if (callee.target != program.target) {
      error = cat(where, "is for target '", callee.target,
                  "', the caller for '", program.target, "'");
      return false;
    }
    // A callee without collectives has no mesh of its own.
    bool sameMesh =
        callee.mesh.empty() || callee.mesh.size() == program.mesh.size();
    for (size_t a = 0; sameMesh && a < callee.mesh.size(); ++a)
      sameMesh = callee.mesh[a].name == program.mesh[a].name &&
                 callee.mesh[a].size == program.mesh[a].size;
    if (!sameMesh) {
      error = where + "has another mesh than its caller";
      return false;
    }
    if (callee.pipeline.isFragment()) {
      error = where + "is a pipeline fragment";
      return false;
    }
    if (callee.dmaQueues.size() > program.dmaQueues.size()) {
      error = cat(where, "uses ", callee.dmaQueues.size(),
                  " DMA queues, its caller ", program.dmaQueues.size());
      return false;
    }
  }
  for (size_t c = 0; c < program.calls.size(); ++c) {
    const CallSite &call = program.calls[c];
    std::string where = cat("call ", c, ": ");
    if (call.callee >= program.subroutines.size()) {
      error = cat(where, "calls subroutine ", call.callee, " of ",
                  program.subroutines.size());
      return false;
    }
    if (call.positions.size() != streams) {
      error = cat(where, call.positions.size(), " stream positions for ",
                  streams, " streams");
      return false;
    }
    for (size_t s = 0; s < streams; ++s) {
      if (call.positions[s] < previous[s] ||
          call.positions[s] > streamAt(program, s).size()) {
        error = cat(where, streamName(s), " position ", call.positions[s],
                    " is out of order or past the stream's ",
                    streamAt(program, s).size(), " instructions");
        return false;
      }
      previous[s] = call.positions[s];
    }
    const Program &callee = program.subroutines[call.callee];
    size_t argument = 0;
    for (const HbmTensor &tensor : callee.tensors) {
      if (!isArgument(tensor))
        continue;
      uint64_t bytes = 0;
      if (!tensorBytes(tensor, bytes)) {
        error = cat(where, "the callee's tensor '", tensor.name,
                    "' has a bad shape");
        return false;
      }
      if (argument >= call.arguments.size()) {
        error = cat(where, call.arguments.size(),
                    " arguments, the callee has more inputs and outputs");
        return false;
      }
      uint64_t address = call.arguments[argument++];
      if (address > program.hbmBytes || bytes > program.hbmBytes - address) {
        error = cat(where, "argument '", tensor.name, "' at ", address, " (",
                    bytes, " bytes) is outside the caller's ", program.hbmBytes,
                    " bytes of HBM");
        return false;
      }
    }
    uint64_t scratch = subroutineScratchBytes(callee);
    if (call.scratch > program.hbmBytes ||
        scratch > program.hbmBytes - call.scratch) {
      error = cat(where, "the callee's ", scratch, " bytes of scratch at ",
                  call.scratch, " are outside the caller's ", program.hbmBytes,
                  " bytes of HBM");
      return false;
    }
    if (argument != call.arguments.size()) {
      error = cat(where, call.arguments.size(), " arguments for the callee's ",
                  argument, " inputs and outputs");
      return false;
    }
  }
  return true;
}

uint64_t subroutineScratchBytes(const Program &callee) {
  return callee.hbmBytes - scratchStartOf(callee);
}

uint64_t expandedHbmBytes(const Program &program) {
  return program.subroutines.empty() ? program.hbmBytes : layoutOf(program).end;
}

std::vector<uint64_t> expandedStreamSizes(const Program &program) {
  std::vector<uint64_t> sizes(numStreams(program), 0);
  for (size_t s = 0; s < sizes.size(); ++s)
    sizes[s] = streamAt(program, s).size();
  for (const CallSite &call : program.calls) {
    if (call.callee >= program.subroutines.size())
      continue;
    const Program &callee = program.subroutines[call.callee];
    for (size_t s = 0; s < std::min(sizes.size(), numStreams(callee)); ++s)
      sizes[s] += streamAt(callee, s).size();
  }
  return sizes;
}

bool CallRelocation::relocate(int64_t &address) const {
  uint64_t a = static_cast<uint64_t>(address);
  auto it = std::upper_bound(
      arguments.begin(), arguments.end(), a,
      [](uint64_t value, const Range &range) { return value < range.begin; });
  if (it != arguments.begin()) {
    const Range &range = *std::prev(it);
    if (a < range.end) {
      address = static_cast<int64_t>(range.target + (a - range.begin));
      return true;
    }
  }
  if (a < localStart)
    return false;
  address =
      static_cast<int64_t>(a < scratchStart ? constantBase + (a - localStart)
                                            : scratchBase + (a - scratchStart));
  return true;
}

bool resolveCalls(Program &program, std::string &error) {
  if ((program.calls.empty() && program.subroutines.empty()) ||
      program.resolvedCalls)
    return true;
  if (!checkCalls(program, error))
    return false;
  auto plan = std::make_shared<CallPlan>();
  plan->streamSizes = expandedStreamSizes(program);
  const size_t streams = numStreams(program);
  uint32_t numSemaphores = program.numSemaphores;
  for (const Program &callee : program.subroutines)
    numSemaphores = std::max(numSemaphores, callee.numSemaphores);

  // Per subroutine: where its constants go (after the caller's HBM, where
  // the loader writes them once), its origins, its signals per semaphore;
  // and every instruction must address HBM inside its tensors, which no
  // call's bindings change.
  const Layout layout = layoutOf(program);
  std::vector<CallRelocation> bases(program.subroutines.size());
  std::vector<uint32_t> originBase(program.subroutines.size());
  std::vector<std::vector<int64_t>> calleeSignals(program.subroutines.size());
  for (size_t k = 0; k < program.subroutines.size(); ++k) {
    const Program &callee = program.subroutines[k];
    CallRelocation &base = bases[k];
    base.localStart = localStartOf(callee);
    base.scratchStart = scratchStartOf(callee);
    base.constantBase = layout.constantBases[k];
    std::vector<CallRelocation::Range> &arguments = base.arguments;
    for (const HbmTensor &tensor : callee.tensors) {
      if (!isArgument(tensor))
        continue;
      uint64_t bytes = 0;
      tensorBytes(tensor, bytes);
      arguments.push_back({tensor.offset, tensor.offset + bytes, 0});
    }
    std::vector<int64_t> &signals = calleeSignals[k];
    signals.assign(numSemaphores, 0);
    for (size_t s = 0; s < numStreams(callee); ++s) {
      const std::vector<Instruction> &from = streamAt(callee, s);
      for (size_t i = 0; i < from.size(); ++i) {
        bool inside = true;
        forEachHbmPattern(from[i], [&](const AccessPattern &pattern) {
          int64_t address = pattern.byteOffset;
          // Argument ranges in tensor order: any target will do here.
          inside &= std::any_of(arguments.begin(), arguments.end(),
                                [&](const CallRelocation::Range &range) {
                                  return uint64_t(address) >= range.begin &&
                                         uint64_t(address) < range.end;
                                }) ||
                    uint64_t(address) >= base.localStart;
        });
        if (!inside) {
          error = cat("subroutine ", k, ": ", streamName(s), " #", i,
                      " addresses HBM outside its tensors");
          return false;
        }
        if (from[i].signal >= 0 && uint32_t(from[i].signal) < numSemaphores)
          ++signals[from[i].signal];
      }
    }
    for (const HbmTensor &tensor : callee.tensors) {
      if (tensor.kind != HbmTensor::Kind::Constant)
        continue;
      // Constants lie in [localStart, scratchStart), never in an argument.
      HbmTensor moved = tensor;
      moved.offset = base.constantBase + (moved.offset - base.localStart);
      moved.name += "@sub" + std::to_string(k);
      program.tensors.push_back(std::move(moved));
    }
    originBase[k] = uint32_t(program.origins.size());
    program.origins.insert(program.origins.end(), callee.origins.begin(),
                           callee.origins.end());
  }

  // Per call: its bindings and scratch, and the semaphore counts around it
  // (every stream's caller instructions before it, every earlier call).
  std::vector<int64_t> count(numSemaphores, 0);
  std::vector<uint64_t> counted(streams, 0);
  for (size_t c = 0; c < program.calls.size(); ++c) {
    const CallSite &call = program.calls[c];
    const Program &callee = program.subroutines[call.callee];
    ResolvedCall resolved;
    resolved.originBase = originBase[call.callee];
    CallRelocation &relocation = resolved.relocation;
    relocation = bases[call.callee];
    relocation.scratchBase = call.scratch;
    for (size_t a = 0; a < relocation.arguments.size(); ++a)
      relocation.arguments[a].target = call.arguments[a];
    std::sort(relocation.arguments.begin(), relocation.arguments.end(),
              [](const CallRelocation::Range &a,
                 const CallRelocation::Range &b) { return a.begin < b.begin; });
    // The statistics tell spill and intermediate traffic by address: each
    // call's scratch is a tensor of its own.
    for (const HbmTensor &tensor : callee.tensors)
      if (tensor.kind == HbmTensor::Kind::Scratch) {
        HbmTensor scratch = tensor;
        int64_t offset = static_cast<int64_t>(scratch.offset);
        relocation.relocate(offset);
        scratch.offset = static_cast<uint64_t>(offset);
        scratch.name +=
            "@sub" + std::to_string(call.callee) + ".call" + std::to_string(c);
        program.tensors.push_back(std::move(scratch));
      }
    for (size_t s = 0; s < streams; ++s) {
      const std::vector<Instruction> &from = streamAt(program, s);
      for (; counted[s] < call.positions[s]; ++counted[s]) {
        int32_t signal = from[counted[s]].signal;
        if (signal >= 0 && uint32_t(signal) < numSemaphores)
          ++count[signal];
      }
    }
    resolved.entry = count;
    for (uint32_t sem = 0; sem < numSemaphores; ++sem)
      count[sem] += calleeSignals[call.callee][sem];
    resolved.exit = count;
    plan->calls.push_back(std::move(resolved));
  }
  program.numSemaphores = numSemaphores;
  program.hbmBytes = layout.end;
  program.resolvedCalls = std::move(plan);
  return true;
}

StreamCursor::StreamCursor(const Program &program, size_t stream)
    : program(&program), plan(program.resolvedCalls.get()), stream(stream) {
  length = plan ? plan->streamSizes[stream] : streamAt(program, stream).size();
  settle();
}

void StreamCursor::advance() {
  ++index;
  if (inCallee) {
    ++calleeIndex;
  } else {
    ++callerIndex;
    afterCall = false;
  }
  settle();
}

void StreamCursor::settle() {
  const std::vector<Instruction> &caller = streamAt(*program, stream);
  const size_t numCalls = plan ? program->calls.size() : 0;
  current = nullptr;
  isRelocated = false;
  for (;;) {
    if (!inCallee) {
      size_t end = nextCall < numCalls
                       ? size_t(program->calls[nextCall].positions[stream])
                       : caller.size();
      if (callerIndex < end) {
        if (!afterCall) {
          current = &caller[callerIndex];
          return;
        }
        relocated = caller[callerIndex];
        waitForCounts(relocated, plan->calls[nextCall - 1].exit);
        isRelocated = true;
        return;
      }
      if (nextCall >= numCalls)
        return;
      inCallee = true;
      calleeIndex = 0;
    }
    const CallSite &call = program->calls[nextCall];
    const Program &callee = program->subroutines[call.callee];
    if (stream < numStreams(callee) &&
        calleeIndex < streamAt(callee, stream).size()) {
      const ResolvedCall &resolved = plan->calls[nextCall];
      relocated = streamAt(callee, stream)[calleeIndex];
      for (SemaphoreWait &wait : relocated.waits)
        if (wait.semaphore < resolved.entry.size())
          wait.value += resolved.entry[wait.semaphore];
      if (relocated.origin > 0)
        relocated.origin += resolved.originBase;
      // The entry barrier (and the exit of a call just before).
      if (calleeIndex == 0)
        waitForCounts(relocated, resolved.entry);
      forEachHbmPattern(relocated, [&](AccessPattern &pattern) {
        resolved.relocation.relocate(pattern.byteOffset);
      });
      isRelocated = true;
      return;
    }
    inCallee = false;
    afterCall = true;
    ++nextCall;
  }
}

bool expandCalls(Program &program, std::string &error,
                 uint64_t maxInstructions) {
  if (program.calls.empty() && program.subroutines.empty())
    return true;
  if (!program.resolvedCalls) {
    if (!checkCalls(program, error))
      return false;
    uint64_t total = 0;
    for (uint64_t size : expandedStreamSizes(program))
      total += size;
    if (total > maxInstructions) {
      error = cat("the program expands to ", total, " instructions (limit ",
                  maxInstructions, ")");
      return false;
    }
    if (!resolveCalls(program, error))
      return false;
  }
  const size_t streams = numStreams(program);
  std::vector<std::vector<Instruction>> expanded(streams);
  for (size_t s = 0; s < streams; ++s) {
    StreamCursor cursor(program, s);
    expanded[s].reserve(cursor.size());
    for (; !cursor.done(); cursor.advance())
      expanded[s].push_back(cursor.instruction());
  }
  for (size_t s = 0; s < streams; ++s)
    streamAt(program, s) = std::move(expanded[s]);
  program.subroutines.clear();
  program.calls.clear();
  program.resolvedCalls.reset();
  return true;
}

} // namespace trnrt
