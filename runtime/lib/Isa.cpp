//===- Isa.cpp - names, access patterns and the instruction validator -----===//
//
// The validator is the executable form of the operand rules in docs/isa.md:
// every check here has a line there, and the other way round. Messages name
// the operand, the value and the limit, so a compiler bug reads as a fix.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Isa.h"
#include "trnrt/IsaValidate.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace trnrt {

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

namespace {

/// The mnemonic of `value` in `table`, or "?" for a value outside it.
template <typename Enum, size_t N>
const char *nameIn(const char *const (&table)[N], Enum value) {
  return size_t(value) < N ? table[size_t(value)] : "?";
}

constexpr const char *kEngineNames[] = {
#define TRN_ENGINE(Name, mnemonic, ...) mnemonic,
#include "trnrt/Isa.def"
};
constexpr const char *kMemoryNames[] = {
#define TRN_MEMORY(Name, mnemonic) mnemonic,
#include "trnrt/Isa.def"
};
constexpr const char *kInstructionKindNames[] = {
#define TRN_INSTRUCTION_KIND(Name, mnemonic) mnemonic,
#include "trnrt/Isa.def"
};
constexpr const char *kAluOpNames[] = {
#define TRN_ALU_OP(Name, mnemonic, ...) mnemonic,
#include "trnrt/Isa.def"
};
constexpr const char *kActivationNames[] = {
#define TRN_ACTIVATION(Name, mnemonic) mnemonic,
#include "trnrt/Isa.def"
};
constexpr const char *kCompareOpNames[] = {
#define TRN_COMPARE_OP(Name, mnemonic) mnemonic,
#include "trnrt/Isa.def"
};

constexpr OpcodeInfo kOpcodes[] = {
#define TRN_OPCODE(Name, mnemonic, engines, sources, sourceNames, Semantics)   \
  {mnemonic, engines, sources, sourceNames},
#include "trnrt/Isa.def"
};
static_assert(std::size(kOpcodes) == kNumOpcodes);

struct AluOpInfo {
  bool reduces, onGpSimd, bitwise;
};
constexpr AluOpInfo kAluOps[] = {
#define TRN_ALU_OP(Name, mnemonic, reduces, onGpSimd, bitwise)                 \
  {reduces, onGpSimd, bitwise},
#include "trnrt/Isa.def"
};

const AluOpInfo *aluOpInfo(AluOp op) {
  return size_t(op) < std::size(kAluOps) ? &kAluOps[size_t(op)] : nullptr;
}

} // namespace

const char *engineName(Engine engine) { return nameIn(kEngineNames, engine); }
const char *memoryName(Memory memory) { return nameIn(kMemoryNames, memory); }
const char *instructionKindName(InstructionKind kind) {
  return nameIn(kInstructionKindNames, kind);
}
const char *aluOpName(AluOp op) { return nameIn(kAluOpNames, op); }
const char *activationFuncName(ActivationFunc func) {
  return nameIn(kActivationNames, func);
}
const char *compareOpName(CompareOp op) { return nameIn(kCompareOpNames, op); }

const OpcodeInfo *opcodeInfo(Opcode opcode) {
  return size_t(opcode) < std::size(kOpcodes) ? &kOpcodes[size_t(opcode)]
                                              : nullptr;
}

const char *opcodeName(Opcode opcode) {
  const OpcodeInfo *info = opcodeInfo(opcode);
  return info ? info->mnemonic : "?";
}

// Collectives are the opcodes only the Sync stream issues (Isa.def).
bool isCollectiveOpcode(Opcode opcode) {
  const OpcodeInfo *info = opcodeInfo(opcode);
  return info && info->engines == kSyncBit;
}

bool opcodeRunsOn(Opcode opcode, Engine engine) {
  const OpcodeInfo *info = opcodeInfo(opcode);
  return info && (info->engines & engineBit(engine));
}

bool isReduction(AluOp op) {
  const AluOpInfo *info = aluOpInfo(op);
  return info && info->reduces;
}

bool gpsimdHasAluOp(AluOp op) {
  const AluOpInfo *info = aluOpInfo(op);
  return info && info->onGpSimd;
}

bool isBitwise(AluOp op) {
  const AluOpInfo *info = aluOpInfo(op);
  return info && info->bitwise;
}

//===----------------------------------------------------------------------===//
// Access patterns
//===----------------------------------------------------------------------===//

int64_t AccessPattern::freeElements() const {
  // Four uint16 sizes can exceed int64; saturate rather than wrap so a
  // bounds check on the result still fails.
  int64_t product = 1;
  for (const ApDim &dim : dims) {
    if (dim.size <= 0)
      return 0;
    if (product > std::numeric_limits<int64_t>::max() / dim.size)
      return std::numeric_limits<int64_t>::max();
    product *= dim.size;
  }
  return product;
}

namespace {

using Wide = __int128;

/// Element offsets [low, high] reached by the free dims (and, for HBM, the
/// partition dim), relative to the base. Sizes must be positive.
void elementOffsetRange(const AccessPattern &ap, Wide &low, Wide &high) {
  low = 0;
  high = 0;
  auto addDim = [&](int64_t size, int64_t stride) {
    Wide span = Wide(size - 1) * stride;
    if (span < 0)
      low += span;
    else
      high += span;
  };
  for (const ApDim &dim : ap.dims)
    addDim(dim.size, dim.stride);
  if (ap.memory == Memory::Hbm)
    addDim(ap.numPartitions, ap.partitionStride);
}

bool isIntegerDType(DType type) {
  return type == DType::I1 || type == DType::I32 || type == DType::I64;
}

bool isMatmulInputDType(DType type) {
  return type == DType::F32 || type == DType::BF16 || type == DType::F16 ||
         type == DType::F8E4M3FN || type == DType::F8E5M2;
}

} // namespace

bool accessByteExtent(const AccessPattern &pattern, int64_t &begin,
                      int64_t &end) {
  if (!isValidDType(pattern.dtype) || pattern.numPartitions == 0)
    return false;
  for (const ApDim &dim : pattern.dims)
    if (dim.size <= 0)
      return false;
  Wide low, high;
  elementOffsetRange(pattern, low, high);
  Wide elementSize = dtypeSizeInBytes(pattern.dtype);
  Wide first = Wide(pattern.byteOffset) + low * elementSize;
  Wide last = Wide(pattern.byteOffset) + (high + 1) * elementSize;
  Wide min = std::numeric_limits<int64_t>::min();
  Wide max = std::numeric_limits<int64_t>::max();
  if (first < min || last > max)
    return false;
  begin = int64_t(first);
  end = int64_t(last);
  return true;
}

std::string streamName(size_t stream) {
  if (stream < 5)
    return std::string(engineName(Engine(stream))) + " stream";
  return "dma queue " + std::to_string(stream - 5);
}

//===----------------------------------------------------------------------===//
// Instruction validator
//===----------------------------------------------------------------------===//

namespace {

/// The streams that may issue `opcode`, as a message says it: "the vector
/// or gpsimd stream", "a dma queue", "any stream".
std::string opcodeEngines(Opcode opcode) {
  const OpcodeInfo *info = opcodeInfo(opcode);
  if (!info || info->engines == 0)
    return "no stream";
  if (info->engines == kAnyEngineBits)
    return "any stream";
  if (info->engines == kDmaBit)
    return "a dma queue";
  std::string names;
  for (unsigned engine = 0; engine < std::size(kEngineNames); ++engine)
    if (info->engines & engineBit(Engine(engine)))
      names +=
          (names.empty() ? "" : " or ") + std::string(kEngineNames[engine]);
  return "the " + names + " stream";
}

bool isComputeEngine(Engine engine) {
  return engineBit(engine) &
         (kTensorBit | kVectorBit | kScalarBit | kGpSimdBit);
}

struct EngineInfo {
  unsigned reads, writes;
  const char *memoryRule;
};
constexpr EngineInfo kEngines[] = {
#define TRN_ENGINE(Name, mnemonic, reads, writes, clock, rule)                 \
  {reads, writes, rule},
#include "trnrt/Isa.def"
};

} // namespace

namespace {

/// A collective operand: a whole contiguous HBM tensor, one element per
/// row (numPartitions = elements, partitionStride 1, one free dim [1, 1]).
bool isWholeTensor(const AccessPattern &ap) {
  return ap.memory == Memory::Hbm && ap.partitionStride == 1 &&
         ap.dims.size() == 1 && ap.dims[0].size == 1;
}

class InstructionChecker {
public:
  InstructionChecker(const Instruction &instruction, Engine engine,
                     const Target &target, uint64_t hbmLimit,
                     std::string &error)
      : inst(instruction), engine(engine), target(target), hbmLimit(hbmLimit),
        error(error) {}

  bool run();

private:
  template <typename... Args> bool fail(const Args &...args) {
    error = cat(opcodeName(inst.opcode), ": ", args...);
    return false;
  }

  /// The source count of the opcode's row in Isa.def.
  bool checkSources();
  bool checkOperand(const AccessPattern &ap, const char *role,
                    unsigned allowed);
  bool checkDims(const AccessPattern &ap, const char *role);
  bool checkPartitions(const AccessPattern &ap, const char *role);
  bool checkBounds(const AccessPattern &ap, const char *role);
  bool checkDType(DType type, const char *role);
  bool checkScalar(const ScalarOperand &scalar, const char *role,
                   const AccessPattern &like);
  bool checkSameShape(const AccessPattern &a, const char *roleA,
                      const AccessPattern &b, const char *roleB);
  bool checkAluOp(AluOp op, const char *role, bool allowBypass,
                  const std::vector<const AccessPattern *> &operands);
  bool checkAtMostOnePsumInput(const std::vector<const AccessPattern *> &ins);
  unsigned readableMemories() const;
  unsigned writableMemories() const;
  const char *memoryRule() const;

  bool checkMatmul();
  bool checkTranspose();
  bool checkActivation();
  bool checkTensorTensor();
  bool checkTensorScalar();
  bool checkTensorReduce();
  bool checkTensorCopy();
  bool checkSelect();
  bool checkBnStats();
  bool checkBnAggr();
  bool checkMemset();
  bool checkIota();
  bool checkAffineSelect();
  bool checkRng();
  bool checkDmaCopy();
  bool checkCollective();
  bool checkNop() { return true; }

  const Instruction &inst;
  Engine engine;
  const Target &target;
  uint64_t hbmLimit;
  std::string &error;
};

unsigned InstructionChecker::readableMemories() const {
  return kEngines[size_t(engine)].reads;
}

unsigned InstructionChecker::writableMemories() const {
  return kEngines[size_t(engine)].writes;
}

const char *InstructionChecker::memoryRule() const {
  return kEngines[size_t(engine)].memoryRule;
}

bool InstructionChecker::checkSources() {
  const OpcodeInfo &info = *opcodeInfo(inst.opcode);
  if (info.sources == kAnySources)
    return true;
  size_t expected = size_t(info.sources);
  if (inst.srcs.size() != expected)
    return fail("expects ", expected, " source", expected == 1 ? "" : "s", " (",
                info.sourceNames, "), got ", inst.srcs.size());
  return true;
}

bool InstructionChecker::checkDType(DType type, const char *role) {
  if (!isValidDType(type))
    return fail(role, " has unknown dtype ", unsigned(type));
  if (type == DType::I64 && isComputeEngine(engine) && !target.nativeInt64)
    return fail(role, " dtype i64: the ", engineName(engine),
                " engine has no int64 on ", target.name);
  return true;
}

bool InstructionChecker::checkDims(const AccessPattern &ap, const char *role) {
  if (ap.dims.empty() || ap.dims.size() > target.maxApDims)
    return fail(role, " access pattern has ", ap.dims.size(),
                " free dims (1 to ", target.maxApDims, " allowed)");
  for (size_t i = 0; i < ap.dims.size(); ++i) {
    const ApDim &dim = ap.dims[i];
    if (dim.size < 1 || dim.size > target.maxApSize)
      return fail(role, " free dim ", i, " size ", dim.size, " outside [1, ",
                  target.maxApSize, "]");
    // HBM addresses are DMA descriptors, not engine access patterns: their
    // strides are only bounded by the program's HBM.
    if (ap.memory != Memory::Hbm &&
        (dim.stride < target.minApStride || dim.stride > target.maxApStride))
      return fail(role, " free dim ", i, " stride ", dim.stride,
                  " outside int16 [", target.minApStride, ", ",
                  target.maxApStride, "]");
  }
  return true;
}

bool InstructionChecker::checkPartitions(const AccessPattern &ap,
                                         const char *role) {
  uint64_t start = ap.startPartition, count = ap.numPartitions;
  if (ap.memory == Memory::Hbm) {
    if (count < 1)
      return fail(role, " has 0 rows (numPartitions must be at least 1)");
    if (start != 0)
      return fail(role, " is in HBM with startPartition ", start,
                  " (must be 0: HBM rows are addressed by partitionStride)");
    return true;
  }
  if (count < 1 || count > target.partitions)
    return fail(role, " has ", count, " partitions (1 to ", target.partitions,
                " allowed)");
  if (start + count > target.partitions)
    return fail(role, " partitions [", start, ", ", start + count,
                ") exceed the ", target.partitions, " partitions");
  // The start-partition rule binds the engines' partition groups; DMA
  // addresses SBUF bytes and may use any contiguous range.
  if (engine == Engine::Dma || engine == Engine::Sync)
    return true;
  if (count > 64 && start != 0)
    return fail(role, " starts at partition ", start, " with ", count,
                " partitions (more than 64 partitions must start at 0)");
  if (count > 32 && count <= 64 && start != 0 && start != 64)
    return fail(role, " starts at partition ", start, " with ", count,
                " partitions (33 to 64 partitions start at 0 or 64)");
  if (count <= 32 && start % 32 != 0)
    return fail(role, " starts at partition ", start, " with ", count,
                " partitions (up to 32 partitions start at 0, 32, 64 or 96)");
  return true;
}

bool InstructionChecker::checkBounds(const AccessPattern &ap,
                                     const char *role) {
  Wide low, high;
  elementOffsetRange(ap, low, high);
  Wide elementSize = dtypeSizeInBytes(ap.dtype);
  Wide begin = Wide(ap.byteOffset) + low * elementSize;
  Wide end = Wide(ap.byteOffset) + (high + 1) * elementSize;
  // Printable (int64) forms; an extent beyond int64 is out of bounds anyway.
  auto clamp = [](Wide v) {
    return int64_t(
        std::min<Wide>(std::max<Wide>(v, std::numeric_limits<int64_t>::min()),
                       std::numeric_limits<int64_t>::max()));
  };
  int64_t alignment = int64_t(elementSize);
  if (ap.memory == Memory::Psum)
    alignment = std::max<int64_t>(alignment, target.psumMinAlignBytes);
  if (ap.byteOffset % alignment != 0)
    return fail(role, " byte offset ", ap.byteOffset, " is not a multiple of ",
                alignment, " (", memoryName(ap.memory), " alignment for ",
                dtypeName(ap.dtype), ")");
  switch (ap.memory) {
  case Memory::Sbuf:
    if (begin < 0 || end > Wide(target.sbufUsableBytesPerPartition))
      return fail(role, " bytes [", clamp(begin), ", ", clamp(end),
                  ") of each partition are outside SBUF's ",
                  target.sbufUsableBytesPerPartition,
                  " usable bytes per partition");
    return true;
  case Memory::Psum: {
    if (begin < 0 || end > Wide(target.psumBytesPerPartition))
      return fail(role, " bytes [", clamp(begin), ", ", clamp(end),
                  ") of each partition are outside PSUM's ",
                  target.psumBytesPerPartition, " bytes per partition");
    Wide bank = Wide(target.psumBankBytes);
    if (begin / bank != (end - 1) / bank)
      return fail(role, " bytes [", clamp(begin), ", ", clamp(end),
                  ") cross the PSUM bank boundary at ",
                  clamp((begin / bank + 1) * bank),
                  " (a PSUM tile stays in one ", target.psumBankBytes,
                  "-byte bank)");
    return true;
  }
  case Memory::Hbm:
    if (begin < 0 || end > Wide(hbmLimit))
      return fail(role, " bytes [", clamp(begin), ", ", clamp(end),
                  ") are outside the ", hbmLimit, " bytes of HBM");
    return true;
  }
  return true;
}

bool InstructionChecker::checkOperand(const AccessPattern &ap, const char *role,
                                      unsigned allowed) {
  if (uint8_t(ap.memory) > uint8_t(Memory::Psum))
    return fail(role, " has unknown memory kind ", unsigned(ap.memory));
  if (!(memoryBit(ap.memory) & allowed))
    return fail(role, " is in ", memoryName(ap.memory), "; ", memoryRule());
  if (!checkDType(ap.dtype, role) || !checkDims(ap, role) ||
      !checkPartitions(ap, role) || !checkBounds(ap, role))
    return false;
  if (engine == Engine::Vector) {
    int64_t limit = ap.memory == Memory::Psum ? target.vectorMaxFreePsum
                                              : target.vectorMaxFreeSbuf;
    if (ap.freeElements() > limit)
      return fail(role, " has ", ap.freeElements(),
                  " free elements per partition; the Vector Engine allows ",
                  limit, " in ", memoryName(ap.memory));
  }
  return true;
}

bool InstructionChecker::checkScalar(const ScalarOperand &scalar,
                                     const char *role,
                                     const AccessPattern &like) {
  if (scalar.isImmediate)
    return true;
  const AccessPattern &column = scalar.column;
  if (column.memory != Memory::Sbuf)
    return fail(role, " column is in ", memoryName(column.memory),
                "; per-partition scalars are read from SBUF");
  if (!checkOperand(column, role, kSbufBit))
    return false;
  if (column.dtype != DType::F32)
    return fail(role, " column dtype ", dtypeName(column.dtype),
                " (per-partition scalars are f32)");
  if (column.numPartitions != like.numPartitions)
    return fail(role, " column has ", column.numPartitions,
                " partitions, the data has ", like.numPartitions);
  if (column.freeElements() != 1)
    return fail(role, " column has ", column.freeElements(),
                " elements per partition (a [P, 1] column has 1)");
  return true;
}

bool InstructionChecker::checkSameShape(const AccessPattern &a,
                                        const char *roleA,
                                        const AccessPattern &b,
                                        const char *roleB) {
  if (a.numPartitions != b.numPartitions)
    return fail(roleA, " has ", a.numPartitions, " partitions but ", roleB,
                " has ", b.numPartitions);
  if (a.freeElements() != b.freeElements())
    return fail(roleA, " has ", a.freeElements(),
                " elements per partition but ", roleB, " has ",
                b.freeElements());
  return true;
}

bool InstructionChecker::checkAluOp(
    AluOp op, const char *role, bool allowBypass,
    const std::vector<const AccessPattern *> &operands) {
  if (uint8_t(op) > uint8_t(AluOp::BitwiseOr))
    return fail(role, " is an unknown ALU operator ", unsigned(op));
  if (op == AluOp::Bypass && !allowBypass)
    return fail(role, " is bypass; this instruction needs an operator");
  if (op == AluOp::Pow && engine != Engine::GpSimd)
    return fail(role, " pow runs only on GpSimd");
  if (engine == Engine::GpSimd && !gpsimdHasAluOp(op))
    return fail(role, " ", aluOpName(op),
                " is not a GpSimd operator (GpSimd: add, multiply, pow)");
  if (isBitwise(op))
    for (const AccessPattern *ap : operands)
      if (!isIntegerDType(ap->dtype))
        return fail(role, " ", aluOpName(op), " needs integer operands, got ",
                    dtypeName(ap->dtype));
  return true;
}

bool InstructionChecker::checkAtMostOnePsumInput(
    const std::vector<const AccessPattern *> &ins) {
  size_t inPsum = 0;
  for (const AccessPattern *ap : ins)
    inPsum += ap->memory == Memory::Psum;
  if (inPsum > 1)
    return fail(inPsum, " inputs are in PSUM (at most one input may come "
                        "from PSUM)");
  return true;
}

bool InstructionChecker::run() {
  if (uint8_t(engine) > uint8_t(Engine::Dma))
    return fail("unknown engine ", unsigned(engine));
  if (uint8_t(inst.opcode) > uint8_t(kLastOpcode)) {
    error = cat("unknown opcode ", unsigned(inst.opcode));
    return false;
  }
  if (!opcodeRunsOn(inst.opcode, engine))
    return fail("cannot run on the ", engineName(engine),
                " engine (it runs on ", opcodeEngines(inst.opcode), ")");
  switch (inst.opcode) {
#define TRN_OPCODE(Name, mnemonic, engines, sources, sourceNames, Semantics)   \
  case Opcode::Name:                                                           \
    return check##Semantics();
#include "trnrt/Isa.def"
  }
  return true;
}

bool InstructionChecker::checkMatmul() {
  if (!checkSources())
    return false;
  const AccessPattern &stationary = inst.srcs[0], &moving = inst.srcs[1];
  const AccessPattern &dst = inst.dst;
  // The inputs' limits first: an oversized N also breaks dst's bank, but the
  // cause is the moving tile.
  if (!checkOperand(stationary, "stationary", readableMemories()) ||
      !checkOperand(moving, "moving", readableMemories()))
    return false;
  if (stationary.numPartitions > target.matmulMaxK)
    return fail("contraction K = ", stationary.numPartitions,
                " partitions exceeds ", target.matmulMaxK, " (PE rows)");
  if (moving.numPartitions != stationary.numPartitions)
    return fail("moving has ", moving.numPartitions,
                " partitions but stationary has ", stationary.numPartitions,
                " (both hold K on partitions)");
  int64_t m = stationary.freeElements(), n = moving.freeElements();
  if (m > target.matmulMaxStationaryFree)
    return fail("stationary free size ", m, " exceeds ",
                target.matmulMaxStationaryFree, " (M, PE columns)");
  if (n > target.matmulMaxMovingFree)
    return fail("moving free size ", n, " exceeds ", target.matmulMaxMovingFree,
                " (one PSUM bank of fp32)");
  for (const auto *ap : {&stationary, &moving})
    if (!isMatmulInputDType(ap->dtype))
      return fail(ap == &stationary ? "stationary" : "moving", " dtype ",
                  dtypeName(ap->dtype),
                  " is not a Tensor Engine input (f32, bf16, f16, f8E4M3FN, "
                  "f8E5M2)");
  if ((stationary.dtype == DType::F32) != (moving.dtype == DType::F32))
    return fail("stationary is ", dtypeName(stationary.dtype),
                " but moving is ", dtypeName(moving.dtype),
                " (f32 pairs only with f32)");
  if (!checkOperand(dst, "dst", writableMemories()))
    return false;
  if (dst.dtype != DType::F32)
    return fail("dst dtype ", dtypeName(dst.dtype),
                " (matmul accumulates and writes f32 in PSUM)");
  if (dst.numPartitions != m)
    return fail("dst has ", dst.numPartitions, " partitions, expected M = ", m,
                " (the stationary free size)");
  if (dst.freeElements() != n)
    return fail("dst has ", dst.freeElements(),
                " elements per partition, expected N = ", n,
                " (the moving free size)");
  return true;
}

bool InstructionChecker::checkTranspose() {
  if (!checkSources())
    return false;
  const AccessPattern &src = inst.srcs[0], &dst = inst.dst;
  if (!checkOperand(src, "src", readableMemories()))
    return false;
  int64_t p = src.numPartitions, f = src.freeElements();
  if (f > target.matmulMaxStationaryFree)
    return fail("src free size ", f, " exceeds ",
                target.matmulMaxStationaryFree, " (transpose is at most [",
                target.matmulMaxK, ", ", target.matmulMaxStationaryFree, "])");
  if (!isMatmulInputDType(src.dtype))
    return fail("src dtype ", dtypeName(src.dtype),
                " is not a Tensor Engine input (f32, bf16, f16, f8E4M3FN, "
                "f8E5M2)");
  if (!checkOperand(dst, "dst", writableMemories()))
    return false;
  bool dtypeOk = dst.dtype == DType::F32 ||
                 (target.bitExactTranspose && dst.dtype == src.dtype);
  if (!dtypeOk)
    return fail("dst dtype ", dtypeName(dst.dtype), " for ",
                dtypeName(src.dtype), " src (", target.name,
                target.bitExactTranspose
                    ? " writes f32 or the src dtype)"
                    : " transposes by identity matmul and writes f32)");
  if (dst.numPartitions != f)
    return fail("dst has ", dst.numPartitions, " partitions, expected ", f,
                " (the src free size)");
  if (dst.freeElements() != p)
    return fail("dst has ", dst.freeElements(),
                " elements per partition, expected ", p,
                " (the src partitions)");
  return true;
}

bool InstructionChecker::checkActivation() {
  if (!checkSources())
    return false;
  const AccessPattern &src = inst.srcs[0], &dst = inst.dst;
  if (uint8_t(inst.func) > uint8_t(ActivationFunc::Negate))
    return fail("unknown activation function ", unsigned(inst.func));
  if (!checkOperand(src, "src", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()) ||
      !checkSameShape(dst, "dst", src, "src") ||
      !checkScalar(inst.scale, "scale", src) ||
      !checkScalar(inst.bias, "bias", src))
    return false;
  bool hasBias = !inst.bias.isImmediate || inst.bias.immediate != 0.0f;
  if (inst.bias.isImmediate && hasBias && !target.activationImmediateBias)
    return fail("immediate bias ", inst.bias.immediate, " on ", target.name,
                " (bias must be a [P, 1] column; only 0 may be immediate)");
  if (inst.func == ActivationFunc::Reciprocal && hasBias &&
      !target.activationReciprocalBias)
    return fail("reciprocal takes no bias on ", target.name);
  if (inst.accumulateRow) {
    const AccessPattern &sums = inst.reduceDst;
    if (!checkOperand(sums, "reduce dst", writableMemories()))
      return false;
    if (sums.dtype != DType::F32)
      return fail("reduce dst dtype ", dtypeName(sums.dtype),
                  " (row sums are f32)");
    if (sums.numPartitions != src.numPartitions)
      return fail("reduce dst has ", sums.numPartitions,
                  " partitions, the data has ", src.numPartitions);
    if (sums.freeElements() != 1)
      return fail("reduce dst has ", sums.freeElements(),
                  " elements per partition (a [P, 1] column has 1)");
  }
  return true;
}

bool InstructionChecker::checkTensorTensor() {
  if (!checkSources())
    return false;
  const AccessPattern &in0 = inst.srcs[0], &in1 = inst.srcs[1];
  const AccessPattern &dst = inst.dst;
  if (!checkOperand(in0, "in0", readableMemories()) ||
      !checkOperand(in1, "in1", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()) ||
      !checkSameShape(in1, "in1", in0, "in0") ||
      !checkSameShape(dst, "dst", in0, "in0") ||
      !checkAtMostOnePsumInput({&in0, &in1}))
    return false;
  return checkAluOp(inst.op0, "op0", false, {&in0, &in1, &dst});
}

bool InstructionChecker::checkTensorScalar() {
  if (!checkSources())
    return false;
  const AccessPattern &src = inst.srcs[0], &dst = inst.dst;
  if (!checkOperand(src, "src", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()) ||
      !checkSameShape(dst, "dst", src, "src") ||
      !checkAluOp(inst.op0, "op0", true, {&src, &dst}) ||
      !checkAluOp(inst.op1, "op1", true, {&src, &dst}))
    return false;
  if (inst.op0 != AluOp::Bypass && !checkScalar(inst.scalar0, "scalar0", src))
    return false;
  if (inst.op1 != AluOp::Bypass && !checkScalar(inst.scalar1, "scalar1", src))
    return false;
  return true;
}

bool InstructionChecker::checkTensorReduce() {
  if (!checkSources())
    return false;
  const AccessPattern &src = inst.srcs[0], &dst = inst.dst;
  if (!checkOperand(src, "src", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()))
    return false;
  if (dst.numPartitions != src.numPartitions)
    return fail("dst has ", dst.numPartitions, " partitions but src has ",
                src.numPartitions, " (reductions stay in their partition)");
  if (dst.freeElements() != 1)
    return fail("dst has ", dst.freeElements(),
                " elements per partition (the reduction writes [P, 1])");
  if (!checkAluOp(inst.op0, "op0", false, {&src, &dst}))
    return false;
  if (!isReduction(inst.op0))
    return fail("op0 ", aluOpName(inst.op0),
                " is not a reduction (add, subtract, multiply, max, min, "
                "logical_and, logical_or, bitwise_and, bitwise_or)");
  return true;
}

bool InstructionChecker::checkTensorCopy() {
  if (!checkSources())
    return false;
  const AccessPattern &src = inst.srcs[0], &dst = inst.dst;
  return checkOperand(src, "src", readableMemories()) &&
         checkOperand(dst, "dst", writableMemories()) &&
         checkSameShape(dst, "dst", src, "src");
}

bool InstructionChecker::checkSelect() {
  if (!checkSources())
    return false;
  const AccessPattern &pred = inst.srcs[0], &onTrue = inst.srcs[1];
  const AccessPattern &onFalse = inst.srcs[2], &dst = inst.dst;
  if (!checkOperand(pred, "predicate", readableMemories()) ||
      !checkOperand(onTrue, "on_true", readableMemories()) ||
      !checkOperand(onFalse, "on_false", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()) ||
      !checkSameShape(onTrue, "on_true", pred, "predicate") ||
      !checkSameShape(onFalse, "on_false", pred, "predicate") ||
      !checkSameShape(dst, "dst", pred, "predicate") ||
      !checkAtMostOnePsumInput({&pred, &onTrue, &onFalse}))
    return false;
  if (!isIntegerDType(pred.dtype))
    return fail("predicate dtype ", dtypeName(pred.dtype),
                " (predicates are i1, i32 or i64)");
  return true;
}

bool InstructionChecker::checkBnStats() {
  if (!checkSources())
    return false;
  const AccessPattern &src = inst.srcs[0], &dst = inst.dst;
  if (!checkOperand(src, "src", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()))
    return false;
  if (src.freeElements() > target.bnStatsMaxFree)
    return fail("src free size ", src.freeElements(), " exceeds ",
                target.bnStatsMaxFree, " (bn_stats_fmax)");
  if (!isFloatDType(src.dtype))
    return fail("src dtype ", dtypeName(src.dtype), " (bn_stats reads floats)");
  if (dst.dtype != DType::F32)
    return fail("dst dtype ", dtypeName(dst.dtype), " (statistics are f32)");
  if (dst.numPartitions != src.numPartitions)
    return fail("dst has ", dst.numPartitions, " partitions but src has ",
                src.numPartitions);
  if (dst.freeElements() != 6)
    return fail("dst has ", dst.freeElements(),
                " elements per partition (bn_stats writes 6)");
  return true;
}

bool InstructionChecker::checkBnAggr() {
  if (!checkSources())
    return false;
  const AccessPattern &src = inst.srcs[0], &dst = inst.dst;
  if (!checkOperand(src, "src", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()))
    return false;
  if (src.dtype != DType::F32)
    return fail("src dtype ", dtypeName(src.dtype),
                " (bn_aggr reads f32 bn_stats tuples)");
  if (src.freeElements() % 3 != 0)
    return fail("src has ", src.freeElements(),
                " elements per partition, not a multiple of 3 "
                "(count, mean, M2 triples)");
  if (dst.dtype != DType::F32)
    return fail("dst dtype ", dtypeName(dst.dtype), " (mean and var are f32)");
  if (dst.numPartitions != src.numPartitions)
    return fail("dst has ", dst.numPartitions, " partitions but src has ",
                src.numPartitions);
  if (dst.freeElements() != 2)
    return fail("dst has ", dst.freeElements(),
                " elements per partition (bn_aggr writes mean, var)");
  return true;
}

bool InstructionChecker::checkMemset() {
  if (!checkSources())
    return false;
  return checkOperand(inst.dst, "dst", writableMemories());
}

bool InstructionChecker::checkIota() {
  if (!checkSources() || !checkOperand(inst.dst, "dst", writableMemories()))
    return false;
  if (inst.steps.size() != inst.dst.dims.size())
    return fail("has ", inst.steps.size(), " steps for ", inst.dst.dims.size(),
                " free dims of dst (one step per free dim)");
  return true;
}

bool InstructionChecker::checkAffineSelect() {
  if (!checkSources())
    return false;
  const AccessPattern &src = inst.srcs[0], &dst = inst.dst;
  if (!checkOperand(src, "on_true", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()) ||
      !checkSameShape(dst, "dst", src, "on_true"))
    return false;
  if (uint8_t(inst.compare) > uint8_t(CompareOp::Ge))
    return fail("unknown comparison ", unsigned(inst.compare));
  if (inst.steps.size() != dst.dims.size())
    return fail("has ", inst.steps.size(), " steps for ", dst.dims.size(),
                " free dims of dst (one step per free dim)");
  return true;
}

bool InstructionChecker::checkRng() {
  if (!checkSources())
    return false;
  const AccessPattern &seed = inst.srcs[0], &dst = inst.dst;
  if (!checkOperand(seed, "seed", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()))
    return false;
  if (seed.dtype != DType::I32 || seed.freeElements() != 2)
    return fail("seed is ", dtypeName(seed.dtype), " with ",
                seed.freeElements(),
                " elements per partition (it is 2 int32 words, low then "
                "high, per partition)");
  if (seed.numPartitions != dst.numPartitions)
    return fail("seed has ", seed.numPartitions, " partitions but dst has ",
                dst.numPartitions, " (every partition reads its own copy)");
  if (!isFloatDType(dst.dtype) && dst.dtype != DType::I1)
    return fail("dst dtype ", dtypeName(dst.dtype),
                " (rng writes floats, or an i1 mask)");
  if (inst.steps.size() != dst.dims.size())
    return fail("has ", inst.steps.size(), " steps for ", dst.dims.size(),
                " free dims of dst (one step per free dim)");
  if (inst.bernoulli) {
    if (!(inst.value >= 0.0f && inst.value <= 16777216.0f) ||
        inst.value != float(int64_t(inst.value)))
      return fail("Bernoulli threshold ", inst.value,
                  " is not an integer in [0, 2^24]");
  } else {
    if (!inst.scalar0.isImmediate || !inst.scalar1.isImmediate)
      return fail("uniform bounds are immediates (scalar0 low, scalar1 high)");
    if (dst.dtype == DType::I1)
      return fail("a uniform draw cannot be written as i1");
  }
  return true;
}

bool InstructionChecker::checkDmaCopy() {
  if (!checkSources())
    return false;
  const AccessPattern &src = inst.srcs[0], &dst = inst.dst;
  if (!checkOperand(src, "src", readableMemories()) ||
      !checkOperand(dst, "dst", writableMemories()))
    return false;
  if (src.dtype != dst.dtype && !target.nativeInt64 &&
      (src.dtype == DType::I64 || dst.dtype == DType::I64))
    return fail("casts ", dtypeName(src.dtype), " to ", dtypeName(dst.dtype),
                " (DMA casts through f32; i64 casts need native int64)");
  if (!inst.indirect) {
    if (inst.accumulate)
      return fail("accumulate is only for an indirect scatter into HBM");
    return checkSameShape(dst, "dst", src, "src");
  }
  // Indirect: the SBUF side's partition p moves HBM row indices[p].
  bool gather = src.memory == Memory::Hbm && dst.memory == Memory::Sbuf;
  bool scatter = src.memory == Memory::Sbuf && dst.memory == Memory::Hbm;
  if (!gather && !scatter)
    return fail("indirect copy from ", memoryName(src.memory), " to ",
                memoryName(dst.memory),
                " (indirect DMA gathers HBM rows into SBUF or scatters "
                "SBUF into HBM rows)");
  if (gather && inst.accumulate)
    return fail("accumulate is only for an indirect scatter into HBM");
  const AccessPattern &onChip = gather ? dst : src;
  const AccessPattern &table = gather ? src : dst;
  if (!checkOperand(inst.indices, "indices", kSbufBit))
    return false;
  if (inst.indices.dtype != DType::I32 && inst.indices.dtype != DType::I64)
    return fail("indices dtype ", dtypeName(inst.indices.dtype),
                " (row indices are i32 or i64)");
  if (inst.indices.numPartitions != onChip.numPartitions)
    return fail("indices have ", inst.indices.numPartitions,
                " partitions but the SBUF side has ", onChip.numPartitions,
                " (one row index per partition)");
  if (inst.indices.freeElements() != 1)
    return fail("indices have ", inst.indices.freeElements(),
                " elements per partition (one row index per partition)");
  if (table.freeElements() != onChip.freeElements())
    return fail("HBM rows have ", table.freeElements(),
                " elements but the SBUF side has ", onChip.freeElements(),
                " per partition");
  return true;
}

bool InstructionChecker::checkCollective() {
  if (inst.meshAxes == 0)
    return fail("spans no mesh axis (meshAxes is 0)");
  if (inst.opcode == Opcode::Send || inst.opcode == Opcode::Recv) {
    if (inst.meshAxes & (inst.meshAxes - 1))
      return fail("names more than one mesh axis (a transfer goes along one)");
    if (inst.peer < 0 || inst.tag < 0)
      return fail("peer ", inst.peer, " and tag ", inst.tag,
                  " must not be negative");
    bool send = inst.opcode == Opcode::Send;
    if (!checkSources())
      return false;
    const AccessPattern &tensor = send ? inst.srcs[0] : inst.dst;
    const char *name = send ? "src" : "dst";
    if (!checkOperand(tensor, name, kHbmBit))
      return false;
    if (!isWholeTensor(tensor))
      return fail(name, " must be a whole contiguous HBM tensor "
                        "(numPartitions = elements, partitionStride 1, one "
                        "free dim of size 1)");
    return true;
  }
  if (inst.opcode == Opcode::AxisIndex) {
    if (!checkSources() || !checkOperand(inst.dst, "dst", kHbmBit))
      return false;
    if (inst.dst.dtype != DType::I32 && inst.dst.dtype != DType::I64)
      return fail("dst is ", dtypeName(inst.dst.dtype),
                  "; an axis index is i32 or i64");
    if (!isWholeTensor(inst.dst) || inst.dst.numPartitions != 1)
      return fail("dst must be one element (numPartitions 1, one free dim "
                  "of size 1)");
    return true;
  }
  if (!checkSources() || !checkOperand(inst.srcs[0], "src", kHbmBit) ||
      !checkOperand(inst.dst, "dst", kHbmBit))
    return false;
  if (inst.srcs[0].dtype != inst.dst.dtype)
    return fail("src is ", dtypeName(inst.srcs[0].dtype), " but dst is ",
                dtypeName(inst.dst.dtype), " (collectives do not cast)");
  for (const AccessPattern *ap : {&inst.srcs[0], &inst.dst})
    if (!isWholeTensor(*ap))
      return fail(ap == &inst.dst ? "dst" : "src",
                  " must be a whole contiguous HBM tensor (numPartitions = "
                  "elements, partitionStride 1, one free dim of size 1)");
  const int64_t in = inst.srcs[0].numPartitions, out = inst.dst.numPartitions;
  bool reduces =
      inst.opcode == Opcode::AllReduce || inst.opcode == Opcode::ReduceScatter;
  if (reduces) {
    if (inst.op0 != AluOp::Add && inst.op0 != AluOp::Max &&
        inst.op0 != AluOp::Min)
      return fail("op0 ", aluOpName(inst.op0),
                  " is not a collective reduction (add, max, min)");
    if (inst.op1 != AluOp::Bypass && inst.op1 != AluOp::Divide)
      return fail("op1 ", aluOpName(inst.op1),
                  " is not bypass or divide (divide by the group size: mean)");
    if (inst.op1 == AluOp::Divide &&
        (inst.op0 != AluOp::Add || !isFloatDType(inst.dst.dtype)))
      return fail("a mean (op1 divide) needs op0 add and a float dtype");
    if (inst.dst.dtype == DType::I1)
      return fail("cannot reduce i1 values");
  }
  bool alongDim = inst.opcode == Opcode::AllGather ||
                  inst.opcode == Opcode::ReduceScatter ||
                  inst.opcode == Opcode::AllSlice ||
                  inst.opcode == Opcode::AllToAll;
  if (alongDim) {
    const std::vector<int64_t> &shape = inst.collectiveShape;
    if (shape.empty())
      return fail("needs the local shape of src (collectiveShape)");
    Wide elements = 1;
    for (int64_t size : shape) {
      if (size < 0)
        return fail("collectiveShape has a negative dimension");
      elements = std::min<Wide>(elements * size, Wide(1) << 62);
    }
    if (elements != Wide(in))
      return fail("collectiveShape has ", int64_t(elements),
                  " elements but src has ", in);
    int64_t rank = int64_t(shape.size());
    if (inst.collectiveDim < 0 || inst.collectiveDim >= rank)
      return fail("collectiveDim ", inst.collectiveDim, " is outside rank ",
                  rank);
    if (inst.opcode == Opcode::AllToAll &&
        (inst.concatDim < 0 || inst.concatDim >= rank))
      return fail("concatDim ", inst.concatDim, " is outside rank ", rank);
  }
  if ((inst.opcode == Opcode::AllReduce ||
       inst.opcode == Opcode::CollectivePermute ||
       inst.opcode == Opcode::AllToAll) &&
      in != out)
    return fail("src has ", in, " elements but dst has ", out);
  if (inst.opcode == Opcode::AllGather && (in == 0 || out % in != 0))
    return fail("dst has ", out, " elements, not a multiple of src's ", in);
  if ((inst.opcode == Opcode::ReduceScatter ||
       inst.opcode == Opcode::AllSlice) &&
      (out == 0 || in % out != 0))
    return fail("src has ", in, " elements, not a multiple of dst's ", out);
  return true;
}

} // namespace

bool validateInstructionWithin(const Instruction &instruction, Engine engine,
                               const Target &target, uint64_t hbmLimit,
                               std::string &error) {
  return InstructionChecker(instruction, engine, target, hbmLimit, error).run();
}

bool validateInstruction(const Instruction &instruction, Engine engine,
                         const Target &target, std::string &error) {
  return validateInstructionWithin(instruction, engine, target,
                                   target.hbmBytesPerCore, error);
}

} // namespace trnrt
