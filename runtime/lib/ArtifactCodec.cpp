//===- ArtifactCodec.cpp - the instruction codec of trn artifacts ---------===//
//
// An instruction is its opcode, a presence mask and the fields that differ
// from a default-constructed Instruction, in the order of trnrt/Isa.def's
// TRN_INSTRUCTION_FIELD table (docs/artifact-format.md). Each row names a
// codec; the writer, the reader, the equality and the writer's limit checks
// are the codecs applied row by row, so a new field is one row.
//
//===----------------------------------------------------------------------===//

#include "ArtifactCodec.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <type_traits>

namespace trnrt {
namespace artifact {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

std::string formatString(const char *format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  int length = std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  if (length < 0)
    return format;
  return std::string(buffer,
                     std::min<size_t>(size_t(length), sizeof(buffer) - 1));
}

/// Prepends `context` to a problem found below it ("dst" + "dtype 9 ..." ->
/// "dst: dtype 9 ..."). Always returns false so callers can `return` it.
bool inContext(std::string &problem, const std::string &context) {
  problem = context + ": " + problem;
  return false;
}

bool checkEnum(unsigned value, unsigned count, const char *what,
               std::string &problem) {
  if (value < count)
    return true;
  problem = formatString("%s %u out of range (0..%u)", what, value, count - 1);
  return false;
}

/// Records "field: a vs b" in `diff` (if any) and returns false.
bool differ(std::string *diff, const char *field, const std::string &a,
            const std::string &b) {
  if (diff)
    *diff = std::string(field) + ": " + a + " vs " + b;
  return false;
}

bool differ(std::string *diff, const char *field, int64_t a, int64_t b) {
  return differ(diff, field, std::to_string(a), std::to_string(b));
}

bool differInU64(std::string *diff, const char *field, uint64_t a, uint64_t b) {
  return differ(diff, field, std::to_string(a), std::to_string(b));
}

bool differInFloat(std::string *diff, const char *field, float a, float b) {
  return differ(diff, field,
                formatString("%.9g (0x%08" PRIx32 ")", a, floatBits(a)),
                formatString("%.9g (0x%08" PRIx32 ")", b, floatBits(b)));
}

/// Prefixes the difference found below with `prefix` and returns false.
bool nested(std::string *diff, const std::string &prefix) {
  if (diff)
    *diff = prefix + ((!diff->empty() && (*diff)[0] == '[') ? "" : ".") + *diff;
  return false;
}

bool equalInts(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
               std::string *diff) {
  return equalVectors(a, b, diff, [](int64_t x, int64_t y, std::string *d) {
    return x == y || differ(d, "value", x, y);
  });
}

namespace {

bool equalAp(const AccessPattern &a, const AccessPattern &b,
             std::string *diff) {
  if (a.memory != b.memory)
    return differ(diff, "memory", int(a.memory), int(b.memory));
  if (a.dtype != b.dtype)
    return differ(diff, "dtype", int(a.dtype), int(b.dtype));
  if (a.startPartition != b.startPartition)
    return differ(diff, "startPartition", a.startPartition, b.startPartition);
  if (a.numPartitions != b.numPartitions)
    return differ(diff, "numPartitions", a.numPartitions, b.numPartitions);
  if (a.byteOffset != b.byteOffset)
    return differ(diff, "byteOffset", a.byteOffset, b.byteOffset);
  if (a.partitionStride != b.partitionStride)
    return differ(diff, "partitionStride", a.partitionStride,
                  b.partitionStride);
  if (!equalVectors(a.dims, b.dims, diff,
                    [](const ApDim &x, const ApDim &y, std::string *d) {
                      if (x.size != y.size)
                        return differ(d, "size", x.size, y.size);
                      if (x.stride != y.stride)
                        return differ(d, "stride", x.stride, y.stride);
                      return true;
                    }))
    return nested(diff, "dims");
  return true;
}

bool equalScalar(const ScalarOperand &a, const ScalarOperand &b,
                 std::string *diff) {
  if (a.isImmediate != b.isImmediate)
    return differ(diff, "isImmediate", a.isImmediate, b.isImmediate);
  if (floatBits(a.immediate) != floatBits(b.immediate))
    return differInFloat(diff, "immediate", a.immediate, b.immediate);
  if (!equalAp(a.column, b.column, diff))
    return nested(diff, "column");
  return true;
}

bool equalWaits(const std::vector<SemaphoreWait> &a,
                const std::vector<SemaphoreWait> &b, std::string *diff) {
  return equalVectors(
      a, b, diff,
      [](const SemaphoreWait &x, const SemaphoreWait &y, std::string *d) {
        if (x.semaphore != y.semaphore)
          return differ(d, "semaphore", x.semaphore, y.semaphore);
        if (x.value != y.value)
          return differ(d, "value", x.value, y.value);
        return true;
      });
}

constexpr unsigned kNumMemories = 0
#define TRN_MEMORY(...) +1
#include "trnrt/Isa.def"
    ;

// Smallest encodings, used to bound counts by the bytes that remain.
constexpr size_t kMinApBytes = 28;
constexpr size_t kApDimBytes = 16;
constexpr size_t kWaitBytes = 12;

//===----------------------------------------------------------------------===//
// Operands: access patterns and scalar operands
//===----------------------------------------------------------------------===//

bool checkAccessPattern(const AccessPattern &ap, std::string &problem) {
  if (!checkEnum(unsigned(ap.memory), kNumMemories, "memory", problem) ||
      !checkEnum(unsigned(ap.dtype), kNumDTypes, "dtype", problem))
    return false;
  if (ap.dims.size() > kArtifactMaxApDims) {
    problem = formatString("%zu free dims (limit %u)", ap.dims.size(),
                           kArtifactMaxApDims);
    return false;
  }
  return true;
}

bool checkScalarOperand(const ScalarOperand &operand, std::string &problem) {
  if (!checkAccessPattern(operand.column, problem))
    return inContext(problem, "column");
  return true;
}

void encodeAp(ByteWriter &w, const AccessPattern &ap) {
  w.u8(uint8_t(ap.memory));
  w.u8(uint8_t(ap.dtype));
  w.u8(uint8_t(ap.dims.size()));
  w.u8(0); // reserved
  w.u32(ap.startPartition);
  w.u32(ap.numPartitions);
  w.i64(ap.byteOffset);
  w.i64(ap.partitionStride);
  for (const ApDim &dim : ap.dims) {
    w.i64(dim.size);
    w.i64(dim.stride);
  }
}

void encodeScalar(ByteWriter &w, const ScalarOperand &operand) {
  w.u8(operand.isImmediate ? 1 : 0);
  w.f32(operand.immediate);
  encodeAp(w, operand.column);
}

bool decodeAp(Cursor &c, AccessPattern &ap) {
  uint8_t memory, dtype, numDims, reserved;
  if (!c.u8(memory) || !c.u8(dtype) || !c.u8(numDims) || !c.u8(reserved))
    return false;
  if (reserved != 0)
    return c.fail(formatString("reserved byte is 0x%02x, not 0", reserved));
  if (numDims > kArtifactMaxApDims)
    return c.fail(
        formatString("%u free dims (limit %u)", numDims, kArtifactMaxApDims));
  ap.memory = Memory(memory);
  ap.dtype = DType(dtype);
  if (!c.u32(ap.startPartition) || !c.u32(ap.numPartitions) ||
      !c.i64(ap.byteOffset) || !c.i64(ap.partitionStride) ||
      !c.fits(numDims, kApDimBytes, "free dims"))
    return false;
  ap.dims.resize(numDims);
  for (ApDim &dim : ap.dims)
    if (!c.i64(dim.size) || !c.i64(dim.stride))
      return false;
  return true;
}

bool decodeScalar(Cursor &c, ScalarOperand &operand) {
  uint8_t isImmediate;
  if (!c.u8(isImmediate))
    return false;
  if (isImmediate > 1)
    return c.fail(formatString("isImmediate is %u, not 0 or 1", isImmediate));
  operand.isImmediate = isImmediate == 1;
  if (!c.f32(operand.immediate))
    return false;
  return decodeAp(c, operand.column) || c.within("column");
}

//===----------------------------------------------------------------------===//
// Field codecs
//===----------------------------------------------------------------------===//

// A codec writes, reads, compares and checks the value of one field. Field
// F (generated below from Isa.def) gives its name and the member F::of(inst).

/// An integer written in its own width.
struct IntCodec {
  template <typename F>
  static void encode(ByteWriter &w, const Instruction &i) {
    put(w, F::of(i));
  }
  template <typename F> static bool decode(Cursor &c, Instruction &i) {
    return get(c, F::of(i));
  }
  template <typename F>
  static bool equal(const Instruction &a, const Instruction &b,
                    std::string *diff) {
    return F::of(a) == F::of(b) || differ(diff, F::name, F::of(a), F::of(b));
  }
  template <typename F> static bool check(const Instruction &, std::string &) {
    return true;
  }

private:
  static void put(ByteWriter &w, int32_t v) { w.i32(v); }
  static void put(ByteWriter &w, uint32_t v) { w.u32(v); }
  static void put(ByteWriter &w, int64_t v) { w.i64(v); }
  static bool get(Cursor &c, int32_t &v) { return c.i32(v); }
  static bool get(Cursor &c, uint32_t &v) { return c.u32(v); }
  static bool get(Cursor &c, int64_t &v) { return c.i64(v); }
};
using I64Codec = IntCodec;
using U32Codec = IntCodec;

/// The semaphore an instruction signals: -1 for none.
struct SignalCodec : IntCodec {
  template <typename F>
  static bool check(const Instruction &i, std::string &problem) {
    if (F::of(i) >= -1)
      return true;
    problem = formatString("signal semaphore %d is negative", F::of(i));
    return false;
  }
};

/// Compared and written by its bits, so -0 and NaN payloads survive.
struct F32Codec {
  template <typename F>
  static void encode(ByteWriter &w, const Instruction &i) {
    w.f32(F::of(i));
  }
  template <typename F> static bool decode(Cursor &c, Instruction &i) {
    return c.f32(F::of(i));
  }
  template <typename F>
  static bool equal(const Instruction &a, const Instruction &b,
                    std::string *diff) {
    return floatBits(F::of(a)) == floatBits(F::of(b)) ||
           differInFloat(diff, F::name, F::of(a), F::of(b));
  }
  template <typename F> static bool check(const Instruction &, std::string &) {
    return true;
  }
};

/// How many values the reader accepts for an enum of Isa.def.
constexpr unsigned enumCount(AluOp) { return kNumAluOps; }
constexpr unsigned enumCount(ActivationFunc) { return kNumActivationFuncs; }
constexpr unsigned enumCount(CompareOp) { return kNumCompareOps; }

/// One byte; the reader keeps any value and the check refuses those beyond
/// the enum.
struct EnumCodec {
  template <typename F>
  static void encode(ByteWriter &w, const Instruction &i) {
    w.u8(uint8_t(F::of(i)));
  }
  template <typename F> static bool decode(Cursor &c, Instruction &i) {
    uint8_t byte;
    if (!c.u8(byte))
      return false;
    F::of(i) = std::remove_reference_t<decltype(F::of(i))>(byte);
    return true;
  }
  template <typename F>
  static bool equal(const Instruction &a, const Instruction &b,
                    std::string *diff) {
    return F::of(a) == F::of(b) ||
           differ(diff, F::name, int(F::of(a)), int(F::of(b)));
  }
  template <typename F>
  static bool check(const Instruction &i, std::string &problem) {
    return checkEnum(unsigned(F::of(i)), enumCount(F::of(i)), F::name, problem);
  }
};

struct ApCodec {
  template <typename F>
  static void encode(ByteWriter &w, const Instruction &i) {
    encodeAp(w, F::of(i));
  }
  template <typename F> static bool decode(Cursor &c, Instruction &i) {
    return decodeAp(c, F::of(i)) || c.within(F::name);
  }
  template <typename F>
  static bool equal(const Instruction &a, const Instruction &b,
                    std::string *diff) {
    return equalAp(F::of(a), F::of(b), diff) || nested(diff, F::name);
  }
  template <typename F>
  static bool check(const Instruction &i, std::string &problem) {
    return checkAccessPattern(F::of(i), problem) || inContext(problem, F::name);
  }
};

struct ScalarCodec {
  template <typename F>
  static void encode(ByteWriter &w, const Instruction &i) {
    encodeScalar(w, F::of(i));
  }
  template <typename F> static bool decode(Cursor &c, Instruction &i) {
    return decodeScalar(c, F::of(i)) || c.within(F::name);
  }
  template <typename F>
  static bool equal(const Instruction &a, const Instruction &b,
                    std::string *diff) {
    return equalScalar(F::of(a), F::of(b), diff) || nested(diff, F::name);
  }
  template <typename F>
  static bool check(const Instruction &i, std::string &problem) {
    return checkScalarOperand(F::of(i), problem) || inContext(problem, F::name);
  }
};

/// A u8 count of access patterns.
struct SourcesCodec {
  template <typename F>
  static void encode(ByteWriter &w, const Instruction &i) {
    w.u8(uint8_t(F::of(i).size()));
    for (const AccessPattern &src : F::of(i))
      encodeAp(w, src);
  }
  template <typename F> static bool decode(Cursor &c, Instruction &i) {
    uint8_t count;
    if (!c.u8(count))
      return false;
    if (count > kArtifactMaxSources)
      return c.fail(
          formatString("%u sources (limit %u)", count, kArtifactMaxSources));
    if (!c.fits(count, kMinApBytes, "sources"))
      return false;
    F::of(i).resize(count);
    for (size_t k = 0; k < count; ++k)
      if (!decodeAp(c, F::of(i)[k]))
        return c.within(std::string(F::name) + "[" + std::to_string(k) + "]");
    return true;
  }
  template <typename F>
  static bool equal(const Instruction &a, const Instruction &b,
                    std::string *diff) {
    return equalVectors(F::of(a), F::of(b), diff, equalAp) ||
           nested(diff, F::name);
  }
  template <typename F>
  static bool check(const Instruction &i, std::string &problem) {
    if (F::of(i).size() > kArtifactMaxSources) {
      problem = formatString("%zu sources (limit %u)", F::of(i).size(),
                             kArtifactMaxSources);
      return false;
    }
    for (size_t k = 0; k < F::of(i).size(); ++k)
      if (!checkAccessPattern(F::of(i)[k], problem))
        return inContext(problem,
                         std::string(F::name) + "[" + std::to_string(k) + "]");
    return true;
  }
};

/// A u32 count of (semaphore u32, value i64).
struct WaitsCodec {
  template <typename F>
  static void encode(ByteWriter &w, const Instruction &i) {
    w.u32(uint32_t(F::of(i).size()));
    for (const SemaphoreWait &wait : F::of(i)) {
      w.u32(wait.semaphore);
      w.i64(wait.value);
    }
  }
  template <typename F> static bool decode(Cursor &c, Instruction &i) {
    uint32_t count;
    if (!c.u32(count))
      return false;
    if (count > kArtifactMaxWaits)
      return c.fail(formatString("%" PRIu32 " semaphore waits (limit %u)",
                                 count, kArtifactMaxWaits));
    if (!c.fits(count, kWaitBytes, "semaphore waits"))
      return false;
    F::of(i).resize(count);
    for (SemaphoreWait &wait : F::of(i))
      if (!c.u32(wait.semaphore) || !c.i64(wait.value))
        return false;
    return true;
  }
  template <typename F>
  static bool equal(const Instruction &a, const Instruction &b,
                    std::string *diff) {
    return equalWaits(F::of(a), F::of(b), diff) || nested(diff, F::name);
  }
  template <typename F>
  static bool check(const Instruction &i, std::string &problem) {
    if (F::of(i).size() <= kArtifactMaxWaits)
      return true;
    problem = formatString("%zu semaphore waits (limit %u)", F::of(i).size(),
                           kArtifactMaxWaits);
    return false;
  }
};

/// A u8 count of int64 values, at most `Max` of them (at least one if
/// `NonEmpty`); `What` names them in messages.
template <unsigned Max, bool NonEmpty, const char *What> struct IntListCodec {
  template <typename F>
  static void encode(ByteWriter &w, const Instruction &i) {
    w.u8(uint8_t(F::of(i).size()));
    for (int64_t value : F::of(i))
      w.i64(value);
  }
  template <typename F> static bool decode(Cursor &c, Instruction &i) {
    uint8_t count;
    if (!c.u8(count))
      return false;
    if (NonEmpty && (count == 0 || count > Max))
      return c.fail(formatString("%s of rank %u (1..%u)", What, count, Max));
    if (!NonEmpty && count > Max)
      return c.fail(formatString("%u %s (limit %u)", count, What, Max));
    if (!c.fits(count, 8, What))
      return false;
    F::of(i).resize(count);
    for (int64_t &value : F::of(i))
      if (!c.i64(value))
        return false;
    return true;
  }
  template <typename F>
  static bool equal(const Instruction &a, const Instruction &b,
                    std::string *diff) {
    return equalInts(F::of(a), F::of(b), diff) || nested(diff, F::name);
  }
  template <typename F>
  static bool check(const Instruction &i, std::string &problem) {
    if (F::of(i).size() <= Max)
      return true;
    problem = NonEmpty ? formatString("%s of rank %zu (limit %u)", What,
                                      F::of(i).size(), Max)
                       : formatString("%zu %s (limit %u)", F::of(i).size(),
                                      What, Max);
    return false;
  }
};
constexpr char kIotaSteps[] = "iota steps";
constexpr char kCollectiveShape[] = "collective shape";
using IotaStepsCodec = IntListCodec<kArtifactMaxApDims, false, kIotaSteps>;
using ShapeCodec = IntListCodec<kArtifactMaxRank, true, kCollectiveShape>;

/// The boolean members of TRN_INSTRUCTION_FLAG, one bit each.
struct InstructionFlag {
  const char *name;
  bool Instruction::*member;
};
constexpr InstructionFlag kFlags[] = {
#define TRN_INSTRUCTION_FLAG(member) {#member, &Instruction::member},
#include "trnrt/Isa.def"
};
constexpr uint8_t kKnownInstructionFlags = (1u << std::size(kFlags)) - 1;

uint8_t instructionFlags(const Instruction &inst) {
  uint8_t bits = 0;
  for (unsigned bit = 0; bit < std::size(kFlags); ++bit)
    if (inst.*kFlags[bit].member)
      bits |= 1u << bit;
  return bits;
}

struct FlagsCodec {
  template <typename F>
  static void encode(ByteWriter &w, const Instruction &i) {
    w.u8(instructionFlags(i));
  }
  template <typename F> static bool decode(Cursor &c, Instruction &i) {
    uint8_t flags;
    if (!c.u8(flags))
      return false;
    if (flags & ~kKnownInstructionFlags)
      return c.fail(formatString("unknown instruction flags 0x%02x", flags));
    for (unsigned bit = 0; bit < std::size(kFlags); ++bit)
      i.*kFlags[bit].member = (flags >> bit) & 1;
    return true;
  }
  template <typename F>
  static bool equal(const Instruction &a, const Instruction &b,
                    std::string *diff) {
    for (const InstructionFlag &flag : kFlags)
      if (a.*flag.member != b.*flag.member)
        return differ(diff, flag.name, a.*flag.member, b.*flag.member);
    return true;
  }
  template <typename F> static bool check(const Instruction &, std::string &) {
    return true;
  }
};

//===----------------------------------------------------------------------===//
// The field table
//===----------------------------------------------------------------------===//

// One type per row: its name and, except for `flags`, its member (a
// template, so the flags row never names Instruction::flags).
#define TRN_INSTRUCTION_FIELD(member, Kind)                                    \
  struct Field_##member {                                                      \
    static constexpr const char *name = #member;                               \
    template <typename I> static auto &of(I &inst) { return inst.member; }     \
  };
#include "trnrt/Isa.def"

struct FieldCodec {
  void (*encode)(ByteWriter &, const Instruction &);
  bool (*decode)(Cursor &, Instruction &);
  bool (*equal)(const Instruction &, const Instruction &, std::string *);
  bool (*check)(const Instruction &, std::string &);
  const char *name;
};
constexpr FieldCodec kFields[] = {
#define TRN_INSTRUCTION_FIELD(member, Kind)                                    \
  {&Kind##Codec::encode<Field_##member>, &Kind##Codec::decode<Field_##member>, \
   &Kind##Codec::equal<Field_##member>, &Kind##Codec::check<Field_##member>,   \
   #member},
#include "trnrt/Isa.def"
};
constexpr unsigned kNumFields = std::size(kFields);
static_assert(kNumFields <= 32, "the presence mask is a u32");
constexpr uint32_t kKnownFieldMask = uint32_t((uint64_t(1) << kNumFields) - 1);

/// The presence mask of `inst`: fields that differ from their default.
uint32_t presentFields(const Instruction &inst) {
  static const Instruction kDefault;
  uint32_t mask = 0;
  for (unsigned field = 0; field < kNumFields; ++field)
    if (!kFields[field].equal(inst, kDefault, nullptr))
      mask |= 1u << field;
  return mask;
}

} // namespace

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

bool checkInstruction(const Instruction &inst, std::string &problem) {
  if (!checkEnum(unsigned(inst.opcode), kNumOpcodes, "opcode", problem))
    return false;
  for (const FieldCodec &field : kFields)
    if (!field.check(inst, problem))
      return false;
  return true;
}

void encodeInstruction(ByteWriter &w, const Instruction &inst) {
  uint32_t mask = presentFields(inst);
  w.u8(uint8_t(inst.opcode));
  w.u32(mask);
  for (unsigned field = 0; field < kNumFields; ++field)
    if ((mask >> field) & 1)
      kFields[field].encode(w, inst);
}

bool decodeInstruction(Cursor &c, Instruction &inst) {
  uint8_t opcode;
  uint32_t mask;
  if (!c.u8(opcode) || !c.u32(mask))
    return false;
  inst.opcode = Opcode(opcode);
  if (mask & ~kKnownFieldMask)
    return c.fail(
        formatString("unknown fields in presence mask 0x%08" PRIx32, mask));
  for (unsigned field = 0; field < kNumFields; ++field)
    if (((mask >> field) & 1) && !kFields[field].decode(c, inst))
      return false;

  std::string problem;
  if (!checkInstruction(inst, problem))
    return c.fail(problem);
  // Canonical form: a field is present exactly when it is not its default.
  uint32_t expected = presentFields(inst);
  if (expected != mask) {
    unsigned field = 0;
    while (!(((expected ^ mask) >> field) & 1))
      ++field;
    return c.fail(std::string("field '") + kFields[field].name +
                  "' is encoded with its default value");
  }
  return true;
}

bool equalInstruction(const Instruction &a, const Instruction &b,
                      std::string *diff) {
  if (a.opcode != b.opcode)
    return differ(diff, "opcode", int(a.opcode), int(b.opcode));
  if (a.kind != b.kind)
    return differ(diff, "kind", int(a.kind), int(b.kind));
  if (a.origin != b.origin)
    return differ(diff, "origin", int64_t(a.origin), int64_t(b.origin));
  for (const FieldCodec &field : kFields)
    if (!field.equal(a, b, diff))
      return false;
  return true;
}

} // namespace artifact
} // namespace trnrt
