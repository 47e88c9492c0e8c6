//===- ProgramValidate.cpp - the program validator and deadlock check -----===//
//
// The program-level rules of docs/isa.md: HBM tensors, the mesh and the
// collectives' shapes, every instruction through the instruction validator
// (Isa.cpp), and the static check that the semaphores let every stream
// complete.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Isa.h"
#include "trnrt/IsaValidate.h"
#include "trnrt/Subroutines.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace trnrt {

namespace {
using Wide = __int128;
} // namespace

//===----------------------------------------------------------------------===//
// Program validator
bool tensorBytes(const HbmTensor &tensor, uint64_t &bytes) {
  Wide total = dtypeSizeInBytes(tensor.dtype);
  for (int64_t dim : tensor.shape) {
    if (dim < 0)
      return false;
    total *= dim;
    if (total > Wide(std::numeric_limits<int64_t>::max()))
      return false;
  }
  bytes = uint64_t(total);
  return true;
}

//===----------------------------------------------------------------------===//

const char *hbmTensorKindName(HbmTensor::Kind kind) {
  switch (kind) {
  case HbmTensor::Kind::Input:
    return "input";
  case HbmTensor::Kind::Output:
    return "output";
  case HbmTensor::Kind::Constant:
    return "constant";
  case HbmTensor::Kind::Scratch:
    return "scratch";
  }
  return "?";
}

namespace {

bool validateTensors(const Program &program, std::string &error) {
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges, scratch;
  std::vector<int> aliasedBy(program.tensors.size(), -1);
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const HbmTensor &t = program.tensors[i];
    std::string name = cat("HBM tensor #", i, " '", t.name, "'");
    if (uint8_t(t.kind) > uint8_t(HbmTensor::Kind::Scratch)) {
      error = cat(name, " has unknown kind ", unsigned(t.kind));
      return false;
    }
    if (!isValidDType(t.dtype)) {
      error = cat(name, " has unknown dtype ", unsigned(t.dtype));
      return false;
    }
    uint64_t bytes = 0;
    if (!tensorBytes(t, bytes)) {
      error = cat(name, " has a negative or overflowing shape");
      return false;
    }
    if (t.offset % dtypeSizeInBytes(t.dtype) != 0) {
      error = cat(name, " offset ", t.offset, " is not a multiple of ",
                  dtypeSizeInBytes(t.dtype), " (", dtypeName(t.dtype),
                  " alignment)");
      return false;
    }
    if (t.offset > program.hbmBytes || bytes > program.hbmBytes - t.offset) {
      error = cat(name, " at offset ", t.offset, " with ", bytes,
                  " bytes exceeds the program's HBM size ", program.hbmBytes);
      return false;
    }
    if (t.kind == HbmTensor::Kind::Constant && t.data.size() != bytes) {
      error = cat(name, " is a constant with ", t.data.size(),
                  " bytes of data, expected ", bytes);
      return false;
    }
    if (t.aliasesInput >= 0) {
      size_t target = size_t(t.aliasesInput);
      if (t.kind != HbmTensor::Kind::Output) {
        error = cat(name, " is a ", hbmTensorKindName(t.kind),
                    " but aliases an input (only outputs may)");
        return false;
      }
      if (target >= program.tensors.size() ||
          program.tensors[target].kind != HbmTensor::Kind::Input) {
        error =
            cat(name, " aliases tensor #", target, ", which is not an input");
        return false;
      }
      uint64_t inputBytes = 0;
      const HbmTensor &input = program.tensors[target];
      if (!tensorBytes(input, inputBytes) || input.offset != t.offset ||
          inputBytes != bytes) {
        error = cat(name, " aliases input '", input.name,
                    "' but does not occupy the same bytes (offset ", t.offset,
                    " vs ", input.offset, ", ", bytes, " vs ", inputBytes,
                    " bytes)");
        return false;
      }
      if (aliasedBy[target] >= 0) {
        error = cat(name, " aliases input '", input.name,
                    "', already aliased by tensor #", aliasedBy[target]);
        return false;
      }
      aliasedBy[target] = int(i);
    } else if (t.aliasesInput != -1) {
      error = cat(name, " has invalid alias index ", t.aliasesInput);
      return false;
    }
    // Scratch tensors may share bytes with each other (the compiler places
    // them by liveness), never with anything else: checked below.
    if (bytes > 0 && t.kind == HbmTensor::Kind::Scratch)
      scratch.push_back({t.offset, t.offset + bytes, i});
    else if (bytes > 0)
      ranges.push_back({t.offset, t.offset + bytes, i});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range &a, const Range &b) {
    return a.begin < b.begin || (a.begin == b.begin && a.index < b.index);
  });
  // Any overlap shows up between some range and the one reaching furthest
  // among those before it.
  for (size_t i = 1, furthest = 0; i < ranges.size(); ++i) {
    const Range &a = ranges[furthest], &b = ranges[i];
    if (b.begin < a.end) {
      const HbmTensor &ta = program.tensors[a.index];
      const HbmTensor &tb = program.tensors[b.index];
      bool alias = size_t(ta.aliasesInput) == b.index ||
                   size_t(tb.aliasesInput) == a.index;
      if (!alias) {
        error = cat("HBM tensors '", ta.name, "' [", a.begin, ", ", a.end,
                    ") and '", tb.name, "' [", b.begin, ", ", b.end,
                    ") overlap (only an output may alias its input)");
        return false;
      }
    }
    if (b.end > a.end)
      furthest = i;
  }
  // A scratch range overlaps some other tensor iff the one reaching
  // furthest among those starting before its end reaches past its begin.
  std::vector<size_t> furthestUpTo(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i)
    furthestUpTo[i] = i > 0 && ranges[furthestUpTo[i - 1]].end >= ranges[i].end
                          ? furthestUpTo[i - 1]
                          : i;
  for (const Range &b : scratch) {
    size_t before = std::lower_bound(ranges.begin(), ranges.end(), b.end,
                                     [](const Range &r, uint64_t end) {
                                       return r.begin < end;
                                     }) -
                    ranges.begin();
    if (before == 0)
      continue;
    const Range &a = ranges[furthestUpTo[before - 1]];
    if (a.end > b.begin) {
      error = cat("HBM tensors '", program.tensors[a.index].name, "' [",
                  a.begin, ", ", a.end, ") and '",
                  program.tensors[b.index].name, "' [", b.begin, ", ", b.end,
                  ") overlap (only an output may alias its input)");
      return false;
    }
  }
  return true;
}

/// The mesh of a partitioned program and the shardings of its tensors.
bool validateMesh(const Program &program, std::string &error) {
  const std::vector<MeshAxis> &mesh = program.mesh;
  if (mesh.size() > kMaxMeshAxes) {
    error =
        cat("the mesh has ", mesh.size(), " axes (at most ", kMaxMeshAxes, ")");
    return false;
  }
  for (size_t a = 0; a < mesh.size(); ++a) {
    if (mesh[a].name.empty() || mesh[a].size < 1) {
      error = cat("mesh axis ", a, " '", mesh[a].name,
                  "' needs a name and a size >= 1, got ", mesh[a].size);
      return false;
    }
    for (size_t b = 0; b < a; ++b)
      if (mesh[b].name == mesh[a].name) {
        error = cat("mesh axis '", mesh[a].name, "' appears twice");
        return false;
      }
  }
  for (const HbmTensor &tensor : program.tensors) {
    if (tensor.sharding.empty())
      continue;
    if (tensor.kind != HbmTensor::Kind::Input &&
        tensor.kind != HbmTensor::Kind::Output) {
      error = cat("tensor '", tensor.name,
                  "' has a sharding but only inputs and outputs map to "
                  "global tensors");
      return false;
    }
    if (tensor.sharding.size() != tensor.shape.size()) {
      error = cat("tensor '", tensor.name, "' has a sharding of ",
                  tensor.sharding.size(), " dimensions for rank ",
                  tensor.shape.size());
      return false;
    }
    uint32_t seen = 0;
    for (size_t d = 0; d < tensor.sharding.size(); ++d) {
      const DimSharding &dim = tensor.sharding[d];
      if (dim.blocks < 1 || (dim.blocks > 1 && dim.axes.empty()) ||
          tensor.shape[d] % dim.blocks != 0) {
        error = cat("tensor '", tensor.name, "' dimension ", d, " of size ",
                    tensor.shape[d], " cannot be split into ", dim.blocks,
                    " blocks");
        return false;
      }
      for (uint32_t axis : dim.axes) {
        if (axis >= mesh.size() || (seen >> axis) & 1) {
          error = cat("tensor '", tensor.name, "' dimension ", d,
                      axis >= mesh.size() ? " names mesh axis #"
                                          : " repeats mesh axis #",
                      axis, " (the mesh has ", mesh.size(), " axes)");
          return false;
        }
        seen |= 1u << axis;
      }
    }
  }
  return true;
}

} // namespace

int64_t collectiveGroupSize(const Instruction &inst,
                            const std::vector<int64_t> &axisSizes) {
  int64_t size = 1;
  for (size_t a = 0; a < axisSizes.size() && a < 32; ++a)
    if ((inst.meshAxes >> a) & 1)
      size *= axisSizes[a];
  return size;
}

bool validateCollectiveShapes(const Program &program,
                              const std::vector<int64_t> &axisSizes,
                              std::string &error) {
  const std::vector<Instruction> &stream =
      program.engineStreams[size_t(Engine::Sync)];
  for (size_t i = 0; i < stream.size(); ++i) {
    const Instruction &inst = stream[i];
    if (!isCollectiveOpcode(inst.opcode))
      continue;
    auto fail = [&](auto... args) {
      error = cat(streamName(size_t(Engine::Sync)), " #", i, " ",
                  opcodeName(inst.opcode), ": ", args...);
      return false;
    };
    if (program.mesh.empty())
      return fail("a collective in a program without a mesh");
    if (inst.meshAxes >> std::min<size_t>(program.mesh.size(), 31))
      return fail("names mesh axis bits 0x", inst.meshAxes, " beyond the ",
                  program.mesh.size(), " axes of the mesh");
    if (inst.srcs.size() != 1 || inst.opcode == Opcode::CollectivePermute ||
        inst.opcode == Opcode::AllReduce)
      continue;
    const int64_t n = collectiveGroupSize(inst, axisSizes);
    const int64_t in = inst.srcs[0].numPartitions;
    const int64_t out = inst.dst.numPartitions;
    const int64_t dim = inst.collectiveShape.empty()
                            ? 0
                            : inst.collectiveShape[size_t(inst.collectiveDim)];
    switch (inst.opcode) {
    case Opcode::AllGather:
      if (out != in * n)
        return fail("dst has ", out, " elements, not src's ", in,
                    " times the group size ", n);
      break;
    case Opcode::ReduceScatter:
    case Opcode::AllSlice:
      if (dim % n != 0 || out * n != in)
        return fail("dimension ", inst.collectiveDim, " of size ", dim,
                    " does not split into the group size ", n, " (dst has ",
                    out, " of src's ", in, " elements)");
      break;
    case Opcode::AllToAll:
      if (dim % n != 0)
        return fail("split dimension ", inst.collectiveDim, " of size ", dim,
                    " is not a multiple of the group size ", n);
      break;
    default:
      break;
    }
  }
  return true;
}

namespace {} // namespace

bool validateProgram(const Program &program, const Target &target,
                     std::string &error) {
  if (program.target != target.name) {
    error = cat("program is for target '", program.target,
                "' but is checked against ", target.name);
    return false;
  }
  if (expandedHbmBytes(program) > target.hbmBytesPerCore) {
    error = cat("program HBM size ", expandedHbmBytes(program), " exceeds the ",
                target.hbmBytesPerCore, " bytes of one ", target.name, " core");
    return false;
  }
  if (!checkCalls(program, error))
    return false;
  for (size_t k = 0; k < program.subroutines.size(); ++k) {
    if (program.subroutines[k].numSemaphores > program.numSemaphores) {
      error =
          cat("subroutine ", k, " uses ", program.subroutines[k].numSemaphores,
              " semaphores, its caller ", program.numSemaphores);
      return false;
    }
    if (!validateProgram(program.subroutines[k], target, error)) {
      error = cat("subroutine ", k, ": ", error);
      return false;
    }
  }
  if (program.dmaQueues.size() > target.dmaQueues) {
    error = cat("program has ", program.dmaQueues.size(),
                " DMA queues (at most ", target.dmaQueues, ")");
    return false;
  }
  if (!validateTensors(program, error) || !validateMesh(program, error))
    return false;
  size_t numStreams = 5 + program.dmaQueues.size();
  for (size_t s = 0; s < numStreams; ++s) {
    const std::vector<Instruction> &stream =
        s < 5 ? program.engineStreams[s] : program.dmaQueues[s - 5];
    Engine engine = s < 5 ? Engine(s) : Engine::Dma;
    for (size_t i = 0; i < stream.size(); ++i) {
      const Instruction &inst = stream[i];
      std::string where = cat(streamName(s), " #", i, " ");
      for (const SemaphoreWait &wait : inst.waits) {
        if (wait.semaphore >= program.numSemaphores) {
          error = cat(where, opcodeName(inst.opcode), ": waits on semaphore ",
                      wait.semaphore, " but the program has ",
                      program.numSemaphores, " semaphores");
          return false;
        }
      }
      if (inst.signal < -1 || (inst.signal >= 0 && uint32_t(inst.signal) >=
                                                       program.numSemaphores)) {
        error = cat(where, opcodeName(inst.opcode), ": signals semaphore ",
                    inst.signal, " but the program has ", program.numSemaphores,
                    " semaphores");
        return false;
      }
      std::string message;
      if (!validateInstructionWithin(inst, engine, target, program.hbmBytes,
                                     message)) {
        error = where + message;
        return false;
      }
    }
  }
  std::vector<int64_t> sizes;
  for (const MeshAxis &axis : program.mesh)
    sizes.push_back(axis.size);
  return validateCollectiveShapes(program, sizes, error);
}

//===----------------------------------------------------------------------===//
// Deadlock check
//===----------------------------------------------------------------------===//

bool checkSemaphoresCanComplete(const Program &program, std::string &error) {
  size_t numStreams = 5 + program.dmaQueues.size();
  auto streamAt = [&](size_t s) -> const std::vector<Instruction> & {
    return s < 5 ? program.engineStreams[s] : program.dmaQueues[s - 5];
  };
  // Total signals per semaphore, to tell "never reachable" from "blocked".
  std::vector<int64_t> totalSignals(program.numSemaphores, 0);
  for (size_t s = 0; s < numStreams; ++s) {
    const std::vector<Instruction> &stream = streamAt(s);
    for (size_t i = 0; i < stream.size(); ++i) {
      const Instruction &inst = stream[i];
      bool badWait = std::any_of(inst.waits.begin(), inst.waits.end(),
                                 [&](const SemaphoreWait &w) {
                                   return w.semaphore >= program.numSemaphores;
                                 });
      if (badWait || inst.signal < -1 ||
          (inst.signal >= 0 &&
           uint32_t(inst.signal) >= program.numSemaphores)) {
        error = cat(streamName(s), " #", i, " ", opcodeName(inst.opcode),
                    ": semaphore out of range (the program has ",
                    program.numSemaphores, ")");
        return false;
      }
      if (inst.signal >= 0)
        ++totalSignals[inst.signal];
    }
  }
  // A call (trnrt/Subroutines.cpp) is a barrier: every stream stops at its
  // position; when all have, the callee's signals land (the callee itself
  // is checked on its own) and the streams go on.
  if (!checkCalls(program, error))
    return false;
  std::vector<std::vector<int64_t>> calleeSignals;
  for (const Program &callee : program.subroutines) {
    std::vector<int64_t> signals(program.numSemaphores, 0);
    for (size_t s = 0; s < 5 + callee.dmaQueues.size(); ++s)
      for (const Instruction &inst :
           s < 5 ? callee.engineStreams[s] : callee.dmaQueues[s - 5]) {
        if (inst.signal >= int32_t(program.numSemaphores)) {
          error = cat("a subroutine signals semaphore ", inst.signal,
                      " but its caller has ", program.numSemaphores);
          return false;
        }
        if (inst.signal >= 0)
          ++signals[inst.signal];
      }
    calleeSignals.push_back(std::move(signals));
  }
  for (const CallSite &call : program.calls)
    for (size_t sem = 0; sem < totalSignals.size(); ++sem)
      totalSignals[sem] += calleeSignals[call.callee][sem];
  size_t nextCall = 0, arrived = 0;
  std::vector<bool> atCall(numStreams, false);

  // Semaphores only grow, so running whatever can run, in any order, reaches
  // the one maximal state; a worklist keeps it linear in practice.
  std::vector<int64_t> count(program.numSemaphores, 0);
  std::vector<size_t> head(numStreams, 0);
  struct Waiter {
    size_t stream;
    int64_t value;
  };
  std::vector<std::vector<Waiter>> waiters(program.numSemaphores);
  std::vector<size_t> ready;
  for (size_t s = 0; s < numStreams; ++s)
    ready.push_back(s);
  auto signal = [&](uint32_t semaphore, int64_t times) {
    int64_t value = count[semaphore] += times;
    std::vector<Waiter> &list = waiters[semaphore];
    for (size_t w = 0; w < list.size();) {
      if (list[w].value <= value) {
        ready.push_back(list[w].stream);
        list[w] = list.back();
        list.pop_back();
      } else {
        ++w;
      }
    }
  };
  while (!ready.empty()) {
    size_t s = ready.back();
    ready.pop_back();
    const std::vector<Instruction> &stream = streamAt(s);
    while (true) {
      if (nextCall < program.calls.size() &&
          head[s] == program.calls[nextCall].positions[s]) {
        if (!atCall[s]) {
          atCall[s] = true;
          ++arrived;
        }
        if (arrived < numStreams)
          break;
        // Everyone is at the call: it runs and the streams go on.
        const std::vector<int64_t> &signals =
            calleeSignals[program.calls[nextCall].callee];
        ++nextCall;
        arrived = 0;
        std::fill(atCall.begin(), atCall.end(), false);
        for (size_t sem = 0; sem < signals.size(); ++sem)
          if (signals[sem] > 0)
            signal(uint32_t(sem), signals[sem]);
        for (size_t other = 0; other < numStreams; ++other)
          if (other != s)
            ready.push_back(other);
        continue;
      }
      if (head[s] >= stream.size())
        break;
      const Instruction &inst = stream[head[s]];
      auto blocking = std::find_if(
          inst.waits.begin(), inst.waits.end(),
          [&](const SemaphoreWait &w) { return count[w.semaphore] < w.value; });
      if (blocking != inst.waits.end()) {
        waiters[blocking->semaphore].push_back({s, blocking->value});
        break;
      }
      ++head[s];
      if (inst.signal >= 0)
        signal(uint32_t(inst.signal), 1);
    }
  }

  std::string blocked;
  size_t numBlocked = 0, numNonEmpty = 0;
  for (size_t s = 0; s < numStreams; ++s) {
    const std::vector<Instruction> &stream = streamAt(s);
    numNonEmpty += !stream.empty();
    if (head[s] == stream.size() && nextCall == program.calls.size())
      continue;
    if (head[s] == stream.size() ||
        (nextCall < program.calls.size() &&
         head[s] == program.calls[nextCall].positions[s])) {
      blocked += cat(numBlocked ? "; " : "", streamName(s), " waits at call ",
                     nextCall, " for the other streams");
      ++numBlocked;
      continue;
    }
    const Instruction &inst = stream[head[s]];
    for (const SemaphoreWait &w : inst.waits) {
      if (count[w.semaphore] >= w.value)
        continue;
      blocked +=
          cat(numBlocked ? "; " : "", streamName(s), " #", head[s], " ",
              opcodeName(inst.opcode), " waits for semaphore ", w.semaphore,
              " >= ", w.value, " (stays at ", count[w.semaphore]);
      if (totalSignals[w.semaphore] < w.value)
        blocked += cat(", only ", totalSignals[w.semaphore],
                       " signals in the program");
      blocked += ")";
      break;
    }
    ++numBlocked;
  }
  if (numBlocked == 0)
    return true;
  error = cat("deadlock: ", numBlocked, " of ", numNonEmpty,
              " streams cannot finish: ", blocked);
  return false;
}

} // namespace trnrt
