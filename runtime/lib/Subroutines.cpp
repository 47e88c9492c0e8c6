//===- Subroutines.cpp - calls of repeated layers compiled once ----------===//
//
// A program may hold subroutines (a transformer layer the compiler found
// repeated and compiled once) and call sites into them (docs/isa.md,
// "Subroutines"). The hardware would run a call with sequencer branches and
// base registers; the simulator runs the expanded program, which this file
// builds: every call's instructions are inlined into the streams with their
// semaphore counts offset, the call's barrier made of semaphore waits and
// the callee's HBM addresses relocated.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Isa.h"
#include "trnrt/IsaValidate.h"

#include <algorithm>
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

/// Where the callee's HBM goes in the caller: its arguments to the call's
/// bindings; its constants (laid out after the arguments) to a region of
/// their own after the caller's HBM; its scratch (after the constants) to
/// the call's scratch address.
struct Relocation {
  struct Range {
    uint64_t begin, end, target;
  };
  std::vector<Range> arguments; ///< sorted by begin
  uint64_t localStart = 0;      ///< the callee's first non-argument byte
  uint64_t scratchStart = 0;    ///< the callee's first scratch byte
  uint64_t constantBase = 0, scratchBase = 0;

  bool relocate(int64_t &address) const {
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
    address = static_cast<int64_t>(a < scratchStart
                                       ? constantBase + (a - localStart)
                                       : scratchBase + (a - scratchStart));
    return true;
  }
};

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

template <typename Fn> void forEachHbmPattern(Instruction &inst, Fn fn) {
  auto visit = [&](AccessPattern &pattern) {
    if (pattern.memory == Memory::Hbm)
      fn(pattern);
  };
  visit(inst.dst);
  for (AccessPattern &src : inst.srcs)
    visit(src);
  visit(inst.reduceDst);
  visit(inst.indices);
  for (ScalarOperand *scalar :
       {&inst.scale, &inst.bias, &inst.scalar0, &inst.scalar1})
    if (!scalar->isImmediate)
      visit(scalar->column);
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

bool expandCalls(Program &program, std::string &error,
                 uint64_t maxInstructions) {
  if (program.calls.empty() && program.subroutines.empty())
    return true;
  if (!checkCalls(program, error))
    return false;
  const std::vector<uint64_t> sizes = expandedStreamSizes(program);
  uint64_t total = 0;
  for (uint64_t size : sizes)
    total += size;
  if (total > maxInstructions) {
    error = cat("the program expands to ", total, " instructions (limit ",
                maxInstructions, ")");
    return false;
  }
  size_t streams = numStreams(program);
  uint32_t numSemaphores = program.numSemaphores;
  for (const Program &callee : program.subroutines)
    numSemaphores = std::max(numSemaphores, callee.numSemaphores);

  // The callees' constants and scratch go after the caller's HBM.
  const Layout layout = layoutOf(program);
  std::vector<Relocation> relocations(program.subroutines.size());
  for (size_t k = 0; k < program.subroutines.size(); ++k) {
    Program &callee = program.subroutines[k];
    Relocation &relocation = relocations[k];
    relocation.localStart = localStartOf(callee);
    relocation.scratchStart = scratchStartOf(callee);
    relocation.constantBase = layout.constantBases[k];
    // Constants once (the loader writes them); scratch per call below (the
    // statistics tell spill and intermediate traffic by address).
    for (HbmTensor &tensor : callee.tensors) {
      if (tensor.kind != HbmTensor::Kind::Constant)
        continue;
      HbmTensor moved = std::move(tensor);
      int64_t offset = static_cast<int64_t>(moved.offset);
      relocation.relocate(offset);
      moved.offset = static_cast<uint64_t>(offset);
      moved.name += "@sub" + std::to_string(k);
      program.tensors.push_back(std::move(moved));
    }
  }

  // The callees' origins join the caller's table.
  std::vector<uint32_t> originBase(program.subroutines.size());
  for (size_t k = 0; k < program.subroutines.size(); ++k) {
    originBase[k] = uint32_t(program.origins.size());
    for (std::string &origin : program.subroutines[k].origins)
      program.origins.push_back(std::move(origin));
  }

  std::vector<std::vector<Instruction>> expanded(streams);
  for (size_t s = 0; s < streams; ++s)
    expanded[s].reserve(sizes[s]);
  std::vector<size_t> next(streams, 0); ///< caller instructions copied
  std::vector<int64_t> count(numSemaphores, 0);
  auto copyCaller = [&](size_t s, size_t end) {
    std::vector<Instruction> &from = streamAt(program, s);
    for (; next[s] < end; ++next[s]) {
      if (from[next[s]].signal >= 0 &&
          uint32_t(from[next[s]].signal) < numSemaphores)
        ++count[from[next[s]].signal];
      expanded[s].push_back(std::move(from[next[s]]));
    }
  };
  // The exit barrier of the latest call, for each stream's next caller
  // instruction.
  std::vector<int64_t> exitCounts;
  std::vector<bool> exitPending(streams, false);
  auto applyExit = [&](size_t s) {
    if (!exitPending[s] || next[s] >= streamAt(program, s).size())
      return;
    Instruction &first = streamAt(program, s)[next[s]];
    for (uint32_t sem = 0; sem < numSemaphores; ++sem)
      waitAtLeast(first, sem, exitCounts[sem]);
    exitPending[s] = false;
  };

  for (const CallSite &call : program.calls) {
    for (size_t s = 0; s < streams; ++s) {
      if (next[s] < call.positions[s])
        applyExit(s);
      copyCaller(s, call.positions[s]);
    }
    const Program &callee = program.subroutines[call.callee];
    const Relocation &base = relocations[call.callee];
    Relocation relocation = base;
    relocation.scratchBase = call.scratch;
    for (const HbmTensor &tensor : callee.tensors)
      if (tensor.kind == HbmTensor::Kind::Scratch) {
        HbmTensor scratch = tensor;
        int64_t offset = static_cast<int64_t>(scratch.offset);
        relocation.relocate(offset);
        scratch.offset = static_cast<uint64_t>(offset);
        scratch.name += "@sub" + std::to_string(call.callee) + ".call" +
                        std::to_string(&call - program.calls.data());
        program.tensors.push_back(std::move(scratch));
      }
    size_t argument = 0;
    for (const HbmTensor &tensor : callee.tensors) {
      if (!isArgument(tensor))
        continue;
      uint64_t bytes = 0;
      tensorBytes(tensor, bytes);
      relocation.arguments.push_back(
          {tensor.offset, tensor.offset + bytes, call.arguments[argument++]});
    }
    std::sort(relocation.arguments.begin(), relocation.arguments.end(),
              [](const Relocation::Range &a, const Relocation::Range &b) {
                return a.begin < b.begin;
              });
    std::vector<int64_t> entry = count;
    for (size_t s = 0; s < numStreams(callee); ++s) {
      const std::vector<Instruction> &from = streamAt(callee, s);
      for (size_t i = 0; i < from.size(); ++i) {
        Instruction inst = from[i];
        for (SemaphoreWait &wait : inst.waits)
          if (wait.semaphore < numSemaphores)
            wait.value += entry[wait.semaphore];
        if (inst.origin > 0)
          inst.origin += originBase[call.callee];
        if (i == 0) {
          // The entry barrier (and the exit of a call just before).
          for (uint32_t sem = 0; sem < numSemaphores; ++sem)
            waitAtLeast(inst, sem, entry[sem]);
        }
        bool inside = true;
        forEachHbmPattern(inst, [&](AccessPattern &pattern) {
          inside &= relocation.relocate(pattern.byteOffset);
        });
        if (!inside) {
          error = cat("subroutine ", call.callee, ": ", streamName(s), " #", i,
                      " addresses HBM outside its tensors");
          return false;
        }
        if (inst.signal >= 0 && uint32_t(inst.signal) < numSemaphores)
          ++count[inst.signal];
        expanded[s].push_back(std::move(inst));
      }
    }
    exitCounts = count;
    std::fill(exitPending.begin(), exitPending.end(), true);
  }
  for (size_t s = 0; s < streams; ++s) {
    applyExit(s);
    copyCaller(s, streamAt(program, s).size());
    streamAt(program, s) = std::move(expanded[s]);
  }
  program.numSemaphores = numSemaphores;
  program.hbmBytes = layout.end;
  program.subroutines.clear();
  program.calls.clear();
  return true;
}

} // namespace trnrt
