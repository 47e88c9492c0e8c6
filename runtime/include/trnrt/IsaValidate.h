//===- IsaValidate.h - hardware rules of the trn program model --*- C++ -*-===//
//
// The validator enforces every rule of docs/isa.md on instructions and whole
// programs; the compiler runs it before writing an artifact and the runtime
// after reading one. Errors are one line naming the instruction (stream,
// index, opcode) and the limit it breaks. No exceptions, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_ISAVALIDATE_H
#define TRNRT_ISAVALIDATE_H

#include "trnrt/Isa.h"
#include "trnrt/Target.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace trnrt {

/// Streams every argument into one string: the validators' messages.
template <typename... Args> std::string cat(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// Checks one instruction issued on `engine` against `target`. HBM accesses
/// are bounded by the core's HBM (the program's size is unknown here). On
/// failure sets `error` to "<opcode>: <what is wrong and the limit>".
bool validateInstruction(const Instruction &instruction, Engine engine,
                         const Target &target, std::string &error);
/// The same with HBM accesses bounded by `hbmLimit` bytes (a program's).
bool validateInstructionWithin(const Instruction &instruction, Engine engine,
                               const Target &target, uint64_t hbmLimit,
                               std::string &error);

/// Checks the whole program: target name, HBM layout of the tensors, the
/// number of DMA queues, semaphore ids and every instruction (HBM accesses
/// bounded by `program.hbmBytes`). On failure sets `error` to
/// "<stream> #<index> <opcode>: ..." or a program-level message.
bool validateProgram(const Program &program, const Target &target,
                     std::string &error);

/// The most axes a mesh may have (Instruction::meshAxes is a bitmask).
constexpr size_t kMaxMeshAxes = 16;

/// The product of the sizes of the axes `inst.meshAxes` names.
int64_t collectiveGroupSize(const Instruction &inst,
                            const std::vector<int64_t> &axisSizes);

/// Checks the collectives of the Sync stream against mesh axis sizes
/// `axisSizes` (one per Program::mesh axis): axes that exist, and element
/// counts that gather and split by the group size. validateProgram checks
/// the compile-time sizes; a runtime binding other sizes checks those.
bool validateCollectiveShapes(const Program &program,
                              const std::vector<int64_t> &axisSizes,
                              std::string &error);

/// Static deadlock check: runs the streams abstractly (an instruction
/// completes as soon as its waits hold, then signals) until nothing moves.
/// Fails naming every blocked stream, its head instruction and the semaphore
/// value it waits for. Expects semaphore ids already validated (reports an
/// out-of-range id as an error).
bool checkSemaphoresCanComplete(const Program &program, std::string &error);

/// "tensor stream", ..., "sync stream" for streams 0-4 and "dma queue <q>"
/// for stream 5 + q (the numbering of checkSemaphoresCanComplete).
std::string streamName(size_t stream);

/// Bytes [begin, end) an access pattern touches: within each partition for
/// SBUF/PSUM, over all rows (partitionStride) for HBM. False when the extent
/// does not fit in int64 or a size is not positive.
bool accessByteExtent(const AccessPattern &pattern, int64_t &begin,
                      int64_t &end);

} // namespace trnrt

#endif // TRNRT_ISAVALIDATE_H
