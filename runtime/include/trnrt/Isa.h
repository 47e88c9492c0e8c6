//===- Isa.h - the NeuronCore-v2 instruction set trn targets ----*- C++ -*-===//
//
// The program model shared by the compiler's emitter (nc dialect -> Program),
// the artifact format (Program <-> bytes) and the simulator (executes a
// Program). docs/isa.md is the prose reference; this header is the normative
// data model. No MLIR or LLVM dependency.
//
// A Program has one in-order instruction stream per compute engine (Tensor,
// Vector, Scalar, GpSimd), one for the Sync engine, and one per DMA queue.
// Streams run concurrently; they order their work only through semaphores:
// every instruction may wait for semaphores to reach values before it starts
// and may increment one semaphore when it completes.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_ISA_H
#define TRNRT_ISA_H

#include "trnrt/Numerics.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trnrt {

// The enums below come from the tables of trnrt/Isa.def, which also give
// each value's name and properties.

enum class Engine : uint8_t {
#define TRN_ENGINE(Name, ...) Name,
#include "trnrt/Isa.def"
};
const char *engineName(Engine engine);

enum class Memory : uint8_t {
#define TRN_MEMORY(Name, mnemonic) Name,
#include "trnrt/Isa.def"
};

/// Sets of memories and of engines, as the tables of Isa.def write them.
inline constexpr unsigned memoryBit(Memory memory) {
  return 1u << unsigned(memory);
}
inline constexpr unsigned kHbmBit = memoryBit(Memory::Hbm);
inline constexpr unsigned kSbufBit = memoryBit(Memory::Sbuf);
inline constexpr unsigned kPsumBit = memoryBit(Memory::Psum);
inline constexpr unsigned engineBit(Engine engine) {
  return 1u << unsigned(engine);
}
inline constexpr unsigned kTensorBit = engineBit(Engine::Tensor);
inline constexpr unsigned kVectorBit = engineBit(Engine::Vector);
inline constexpr unsigned kScalarBit = engineBit(Engine::Scalar);
inline constexpr unsigned kGpSimdBit = engineBit(Engine::GpSimd);
inline constexpr unsigned kSyncBit = engineBit(Engine::Sync);
inline constexpr unsigned kDmaBit = engineBit(Engine::Dma);
inline constexpr unsigned kAnyEngineBits =
    kTensorBit | kVectorBit | kScalarBit | kGpSimdBit | kSyncBit | kDmaBit;

/// One free dimension of an access pattern: `size` elements, `stride`
/// elements apart.
struct ApDim {
  int64_t size = 1;
  int64_t stride = 1;
};

/// An on-chip operand: a tile on `numPartitions` contiguous partitions from
/// `startPartition`, with the same free-dim pattern in every partition
/// starting at `byteOffset` (of each partition). Free dims are outermost
/// first; the innermost is last. An HBM operand uses `byteOffset` as the
/// base address in the core's HBM, `partitionStride` (elements) for the
/// partition dimension, and the same free dims.
struct AccessPattern {
  Memory memory = Memory::Sbuf;
  DType dtype = DType::F32;
  uint32_t startPartition = 0;
  uint32_t numPartitions = 1;
  int64_t byteOffset = 0;
  int64_t partitionStride = 0; ///< HBM only (elements)
  std::vector<ApDim> dims;     ///< 1..4 free dims
  int64_t freeElements() const;
};

/// A scalar operand: an immediate, or a per-partition [P, 1] column.
struct ScalarOperand {
  bool isImmediate = true;
  float immediate = 0.0f;
  AccessPattern column; ///< when !isImmediate: [P, 1] fp32
};

/// ALU operators of Vector/GpSimd instructions (docs/isa.md §ALU).
enum class AluOp : uint8_t {
#define TRN_ALU_OP(Name, ...) Name,
#include "trnrt/Isa.def"
};

/// Scalar Engine activation functions.
enum class ActivationFunc : uint8_t {
#define TRN_ACTIVATION(Name, mnemonic) Name,
#include "trnrt/Isa.def"
};

enum class CompareOp : uint8_t {
#define TRN_COMPARE_OP(Name, mnemonic) Name,
#include "trnrt/Isa.def"
};

/// How many values each enum has.
#define TRN_COUNT(...) +1
inline constexpr unsigned kNumMemories = 0
#define TRN_MEMORY TRN_COUNT
#include "trnrt/Isa.def"
    ;
inline constexpr unsigned kNumAluOps = 0
#define TRN_ALU_OP TRN_COUNT
#include "trnrt/Isa.def"
    ;
inline constexpr unsigned kNumActivationFuncs = 0
#define TRN_ACTIVATION TRN_COUNT
#include "trnrt/Isa.def"
    ;
inline constexpr unsigned kNumCompareOps = 0
#define TRN_COMPARE_OP TRN_COUNT
#include "trnrt/Isa.def"
    ;
inline constexpr unsigned kNumOpcodes = 0
#define TRN_OPCODE TRN_COUNT
#include "trnrt/Isa.def"
    ;
inline constexpr size_t kNumInstructionKinds = 0
#define TRN_INSTRUCTION_KIND TRN_COUNT
#include "trnrt/Isa.def"
    ;
#undef TRN_COUNT

/// Lower-case names used in messages and docs/isa.md ("HBM", "SBUF", "PSUM"
/// for memories); "?" for a value outside the enum.
const char *memoryName(Memory memory);
const char *aluOpName(AluOp op);
const char *activationFuncName(ActivationFunc func);
const char *compareOpName(CompareOp op);
/// Whether an ALU op can reduce along a free axis (tensor_reduce, the
/// collectives' reduction): the associative ones.
bool isReduction(AluOp op);
/// Whether GpSimd implements an ALU op (most run on the Vector Engine only).
bool gpsimdHasAluOp(AluOp op);
/// Whether an ALU op acts on integer bits.
bool isBitwise(AluOp op);

/// The instructions (Isa.def's TRN_OPCODE table says what each does).
enum class Opcode : uint8_t {
#define TRN_OPCODE(Name, ...) Name,
#include "trnrt/Isa.def"
};
/// The highest opcode value (validators and the artifact reader refuse more).
inline constexpr Opcode kLastOpcode = Opcode(kNumOpcodes - 1);

/// Opcode::Nop reads no sources and ignores any it is given.
inline constexpr int kAnySources = -1;

/// An opcode's row of Isa.def.
struct OpcodeInfo {
  const char *mnemonic;
  unsigned engines; ///< the streams that may issue it (engineBit)
  int sources;      ///< how many srcs it reads, or kAnySources
  const char *sourceNames;
};
/// The row of `opcode`; nullptr for a value beyond kLastOpcode.
const OpcodeInfo *opcodeInfo(Opcode opcode);

/// Whether `opcode` is a collective or a pipeline transfer (runs on the
/// Sync stream and needs a mesh binding to execute).
bool isCollectiveOpcode(Opcode opcode);
const char *opcodeName(Opcode opcode);
/// Which engines may issue an opcode (docs/isa.md, "Engines and opcodes").
bool opcodeRunsOn(Opcode opcode, Engine engine);

/// What part of the step an instruction computes, for the time split of a
/// run (SimulationStats::kindNs): the compiler records it per trn op it
/// lowers. Not an operand: it never changes what an instruction does.
enum class InstructionKind : uint8_t {
#define TRN_INSTRUCTION_KIND(Name, mnemonic) Name,
#include "trnrt/Isa.def"
};
const char *instructionKindName(InstructionKind kind);

/// Synchronisation attached to every instruction.
struct SemaphoreWait {
  uint32_t semaphore = 0;
  int64_t value = 0; ///< start once semaphore >= value
};

struct Instruction {
  Opcode opcode = Opcode::Nop;
  std::vector<SemaphoreWait> waits;
  int32_t signal = -1; ///< semaphore incremented on completion, or -1

  // Operands (which are used depends on the opcode; docs/isa.md).
  AccessPattern dst;
  std::vector<AccessPattern> srcs;

  // Matmul / Transpose.
  bool accumulate = false; ///< Matmul: add into PSUM instead of overwrite
  // Activation.
  ActivationFunc func = ActivationFunc::Copy;
  ScalarOperand scale{true, 1.0f, {}};
  ScalarOperand bias{true, 0.0f, {}};
  bool accumulateRow = false; ///< Activation: also sum each row into srcs/dst2
  AccessPattern reduceDst;    ///< [P,1] fp32 row sums when accumulateRow
  // TensorTensor / TensorScalar / TensorReduce.
  AluOp op0 = AluOp::Bypass, op1 = AluOp::Bypass;
  ScalarOperand scalar0, scalar1;
  bool reverse0 = false, reverse1 = false; ///< s op x instead of x op s
  bool negate = false;                     ///< TensorReduce: negate result
  // Memset / AffineSelect fill.
  float value = 0.0f;
  // Iota / AffineSelect.
  int64_t base = 0;
  int64_t channelMultiplier = 0;
  std::vector<int64_t> steps; ///< one per free dim
  CompareOp compare = CompareOp::Ge;
  // DmaCopy indirect: row indices (int32/int64 in SBUF, one per partition)
  // select HBM rows of `rowElements` elements for a gather (src HBM) or a
  // scatter-add (dst HBM, accumulate = true).
  bool indirect = false;
  AccessPattern indices;
  // Collectives: srcs[0] and dst are whole HBM tensors (numPartitions =
  // elements, partitionStride 1, one free dim of size 1). op0 is the
  // reduction (add, max, min) of all_reduce/reduce_scatter; op1 = divide
  // divides the sum by the group size (mean).
  uint32_t meshAxes = 0; ///< bitmask of Program::mesh axes the group spans
  /// The local shape of srcs[0] (all_gather, reduce_scatter, all_slice,
  /// all_to_all: the ops that move data along a dimension).
  std::vector<int64_t> collectiveShape;
  int64_t collectiveDim = 0; ///< gathered / scattered / sliced / split dim
  int64_t concatDim = 0;     ///< all_to_all: the dim received pieces join
  int64_t shift = 0;         ///< collective_permute: send to position + shift
  // Send / Recv (format 4): a pipeline transfer to or from the rank whose
  // index along the one axis of meshAxes is `peer` (its other coordinates
  // this rank's); a receive takes the send of the same tag, and, in a
  // fragment run for a microbatch, of the same microbatch. A send does not
  // wait for its receiver.
  int64_t peer = 0;
  int64_t tag = 0;
  // Rng: srcs[0] is the seed, [P, 2] int32 (low, high word) on every
  // partition of dst; base, channelMultiplier and steps give each element's
  // int64 counter. Bernoulli: dst = (draw >> 8) < value ? 1 : 0 (value an
  // integer threshold in [0, 2^24]); otherwise uniform: dst = low + (high -
  // low) * (draw >> 8) * 2^-24 with low and high the immediates of
  // scalar0 and scalar1, computed in double and rounded once.
  uint32_t rngStream = 0;
  bool bernoulli = false;
  /// Provenance (the optional `kinds` artifact section).
  InstructionKind kind = InstructionKind::Other;
  /// The trn op it was lowered from: Program::origins[origin - 1], or 0
  /// (the optional `origins` section).
  uint32_t origin = 0;
};

/// Scratch tensors whose name starts with this hold SBUF tiles the compiler
/// spilled to HBM ("spill<N>"); the other scratch tensors hold intermediates.
inline constexpr std::string_view kSpillTensorPrefix = "spill";

/// An axis of the device mesh a partitioned program was compiled for.
struct MeshAxis {
  std::string name;
  int64_t size = 1; ///< the compile-time size (docs/partitioning.md)
  /// The program is one replica's step along this axis (dist.replica_axes:
  /// data parallelism whose degree is bound at load time).
  bool replica = false;
};

/// How one dimension of a global tensor is split over mesh axes: over
/// `axes` (indices into Program::mesh, major first); with `blocks` > 1 the
/// dimension is seen as that many equal blocks, each split over the axes.
struct DimSharding {
  std::vector<uint32_t> axes;
  int64_t blocks = 1;
};

/// How the runtime binds an input or output of a pipeline fragment
/// (docs/partitioning.md, "Pipeline parallelism"; #dist.port).
struct TensorPort {
  enum class Kind : uint8_t {
    None,        ///< not a fragment's tensor
    Argument,    ///< the step's argument `index`, once per step
    Microbatch,  ///< the current microbatch's slice of argument `index`
    Stash,       ///< the same stage's forward result `index`, per microbatch
    Accumulator, ///< running sum `index` (zeros before the first microbatch)
    Result,      ///< the step's result `index`
  } kind = Kind::None;
  int64_t index = 0;
};
inline const char *portKindName(TensorPort::Kind kind) {
  switch (kind) {
  case TensorPort::Kind::None:
    return "none";
  case TensorPort::Kind::Argument:
    return "argument";
  case TensorPort::Kind::Microbatch:
    return "microbatch";
  case TensorPort::Kind::Stash:
    return "stash";
  case TensorPort::Kind::Accumulator:
    return "accumulator";
  case TensorPort::Kind::Result:
    return "result";
  }
  return "?";
}

/// A named HBM tensor of the program (inputs, outputs, constants, scratch).
struct HbmTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t offset = 0; ///< bytes from the core's HBM base
  enum class Kind : uint8_t {
    Input,
    Output,
    Constant,
    Scratch
  } kind = Kind::Input;
  int32_t aliasesInput = -1; ///< Output updating input #n in place
  std::string role;          ///< trn.role
  std::vector<uint8_t> data; ///< Constant: the bytes
  /// Inputs and outputs of a partitioned program: per dimension, how the
  /// global tensor maps to this local one (empty: the same on every rank).
  std::vector<DimSharding> sharding;
  /// Inputs and outputs of a pipeline fragment: how they are bound.
  TensorPort port;

  bool isSpill() const {
    return kind == Kind::Scratch &&
           std::string_view(name).substr(0, kSpillTensorPrefix.size()) ==
               kSpillTensorPrefix;
  }
};

/// Byte size of a tensor, or false on a negative dim or overflow.
bool tensorBytes(const HbmTensor &tensor, uint64_t &bytes);
/// "input", "output", "constant" or "scratch".
const char *hbmTensorKindName(HbmTensor::Kind kind);

/// What makes a program one fragment of a pipelined step (dist.pipeline):
/// the runtime runs stage `stage`'s forward and backward fragments once per
/// microbatch in the schedule's order, then its update.
struct PipelineFragment {
  std::string step;   ///< the pipelined step's name
  int64_t stage = -1; ///< -1: the program is not a fragment
  int64_t stages = 0; ///< the size of the pipeline axis
  int64_t microbatches = 1;
  std::string schedule; ///< "gpipe" or "1f1b"
  std::string phase;    ///< "forward", "backward" or "update"
  uint32_t axis = 0;    ///< the pipeline axis: an index into Program::mesh
  bool isFragment() const { return stage >= 0; }
};

struct Program;
struct CallPlan;

/// One call of a subroutine (format 6; docs/isa.md "Subroutines"): a layer
/// the compiler found repeated and compiled once. A call is a barrier: the
/// callee's instructions start when every instruction the caller issued
/// before the call has completed, and the caller's later instructions start
/// when the callee's have. The callee's HBM inputs and outputs are bound to
/// caller addresses (the sequencers' base registers), its scratch to caller
/// HBM free during the call, its constants to a region after the caller's.
struct CallSite {
  uint32_t callee = 0; ///< an index into Program::subroutines
  /// Per stream (Tensor..Sync, then the DMA queues), how many of the
  /// caller's own instructions precede the call on that stream.
  std::vector<uint64_t> positions;
  /// Per input or output tensor of the callee, in its tensor order: the
  /// caller's HBM byte address bound to it.
  std::vector<uint64_t> arguments;
  /// Where the callee's scratch goes for this call: caller HBM the compiler
  /// keeps free while the call runs (the caller's tensors live across the
  /// call are elsewhere).
  uint64_t scratch = 0;
};

struct Program {
  std::string target = "trn1";
  std::vector<HbmTensor> tensors;
  uint64_t hbmBytes = 0; ///< total HBM the program lays out
  uint32_t numSemaphores = 0;
  /// Streams: index by engine for Tensor..Sync; DMA queues follow.
  std::array<std::vector<Instruction>, 5> engineStreams;
  std::vector<std::vector<Instruction>> dmaQueues; ///< up to 16
  // Compile-time estimates recorded in the artifact.
  uint64_t flops = 0;
  uint64_t sbufPeakBytesPerPartition = 0;
  uint64_t psumPeakBytesPerPartition = 0;
  /// The mesh of a partitioned (SPMD) program: every rank runs this program
  /// on its local tensors. Empty for a single-core program.
  std::vector<MeshAxis> mesh;
  /// Set when the program is one fragment of a pipelined step (format 5).
  PipelineFragment pipeline;
  /// Subroutines and their calls, in program order (format 6). Semaphore
  /// counts are those of the expanded program: a wait after a call counts
  /// the callee's signals too. The simulator runs calls without expanding
  /// them once they are resolved (trnrt/Subroutines.h).
  std::vector<Program> subroutines;
  std::vector<CallSite> calls;
  /// Set by resolveCalls: tensors, origins, hbmBytes and numSemaphores are
  /// the expanded program's; streams and subroutines are not expanded.
  std::shared_ptr<const CallPlan> resolvedCalls;
  /// The trn ops instructions come from ("train_step: trn.dot_general #12"),
  /// for profiles: Instruction::origin indexes it from 1.
  std::vector<std::string> origins;
};

} // namespace trnrt

#endif // TRNRT_ISA_H
