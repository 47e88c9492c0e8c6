//===- ArtifactCodec.h - byte codecs shared by the artifact's parts -------===//
//
// Private to the runtime library: the little-endian writer and the bounds-
// checked reader, the helpers that format problems and differences, and the
// instruction codec (ArtifactCodec.cpp) that Artifact.cpp's streams use.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_LIB_ARTIFACTCODEC_H
#define TRNRT_LIB_ARTIFACTCODEC_H

#include "trnrt/Artifact.h"
#include "trnrt/File.h"
#include "trnrt/Isa.h"

#include <cinttypes>
#include <cstdint>
#include <string>
#include <vector>

namespace trnrt {
namespace artifact {

// Number of values of each enum the format accepts (from trnrt/Isa.def and
// Numerics.h). Adding an enumerator means bumping kArtifactFormatVersion (an
// older reader must say "newer", not "out of range").
constexpr unsigned kNumDTypes = unsigned(DType::I64) + 1;

// Smallest encodings, used to bound counts by the bytes that remain.
constexpr size_t kMinInstructionBytes = 5;

std::string formatString(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

/// Prepends `context` to a problem found below it ("dst" + "dtype 9 ..." ->
/// "dst: dtype 9 ..."). Always returns false so callers can `return` it.
bool inContext(std::string &problem, const std::string &context);
/// "what N out of range (0..count-1)" unless value < count.
bool checkEnum(unsigned value, unsigned count, const char *what,
               std::string &problem);

/// Records "field: a vs b" in `diff` (if any) and returns false.
bool differ(std::string *diff, const char *field, const std::string &a,
            const std::string &b);
bool differ(std::string *diff, const char *field, int64_t a, int64_t b);
bool differInU64(std::string *diff, const char *field, uint64_t a, uint64_t b);
bool differInFloat(std::string *diff, const char *field, float a, float b);
/// Prefixes the difference found below with `prefix` and returns false.
bool nested(std::string *diff, const std::string &prefix);

template <typename T, typename Equal>
bool equalVectors(const std::vector<T> &a, const std::vector<T> &b,
                  std::string *diff, Equal equal) {
  if (a.size() != b.size())
    return differInU64(diff, "size", a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i], diff)) {
      if (diff)
        *diff = "[" + std::to_string(i) + "]" +
                ((!diff->empty() && (*diff)[0] == '[') ? "" : ".") + *diff;
      return false;
    }
  return true;
}

bool equalInts(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
               std::string *diff);

/// Appends little-endian values to a byte vector.
class ByteWriter {
public:
  explicit ByteWriter(std::vector<uint8_t> &out) : out(out) {}
  void u8(uint8_t value) { out.push_back(value); }
  void u32(uint32_t value) { append(value, 4); }
  void u64(uint64_t value) { append(value, 8); }
  void i32(int32_t value) { u32(uint32_t(value)); }
  void i64(int64_t value) { u64(uint64_t(value)); }
  void f32(float value) { u32(floatBits(value)); }
  void f64(double value) { u64(doubleBits(value)); }
  /// Length-prefixed; the checks bound every string far below 4 GiB.
  void string(const std::string &text) {
    u32(uint32_t(text.size()));
    out.insert(out.end(), text.begin(), text.end());
  }

private:
  void append(uint64_t value, unsigned size) {
    uint8_t bytes[8];
    storeLittleEndian(value, size, bytes);
    out.insert(out.end(), bytes, bytes + size);
  }
  std::vector<uint8_t> &out;
};

/// Reads little-endian values from a byte range; every read is bounds
/// checked. On failure records the problem in `problem` and returns false.
class Cursor {
public:
  Cursor(const uint8_t *data, size_t size, std::string &problem)
      : begin(data), pos(data), end(data + size), problem(problem) {}

  size_t remaining() const { return size_t(end - pos); }

  bool u8(uint8_t &value) {
    if (!need(1))
      return false;
    value = *pos++;
    return true;
  }
  bool u32(uint32_t &value) {
    if (!need(4))
      return false;
    value = uint32_t(loadLittleEndian(pos, 4));
    pos += 4;
    return true;
  }
  bool u64(uint64_t &value) {
    if (!need(8))
      return false;
    value = loadLittleEndian(pos, 8);
    pos += 8;
    return true;
  }
  bool i32(int32_t &value) {
    uint32_t bits;
    if (!u32(bits))
      return false;
    value = int32_t(bits);
    return true;
  }
  bool i64(int64_t &value) {
    uint64_t bits;
    if (!u64(bits))
      return false;
    value = int64_t(bits);
    return true;
  }
  bool f32(float &value) {
    uint32_t bits;
    if (!u32(bits))
      return false;
    value = floatFromBits(bits);
    return true;
  }
  bool f64(double &value) {
    uint64_t bits;
    if (!u64(bits))
      return false;
    value = doubleFromBits(bits);
    return true;
  }
  /// A length-prefixed string of at most `maxBytes` bytes.
  bool string(std::string &text, size_t maxBytes, const char *what) {
    uint32_t length;
    if (!u32(length))
      return false;
    if (length > maxBytes)
      return fail(formatString("%s length %" PRIu32 " exceeds the limit %zu",
                               what, length, maxBytes));
    if (!need(length))
      return false;
    text.assign(reinterpret_cast<const char *>(pos), length);
    pos += length;
    return true;
  }
  /// Checks that `count` items of at least `minBytes` each can fit in what
  /// remains, before anything is allocated for them.
  bool fits(uint64_t count, size_t minBytes, const char *what) {
    if (count <= remaining() / minBytes)
      return true;
    return fail(formatString("%" PRIu64 " %s cannot fit in the %zu bytes left",
                             count, what, remaining()));
  }
  /// A pointer to the next `count` bytes, skipped.
  bool bytes(const uint8_t *&at, uint64_t count) {
    if (count > remaining())
      return fail(formatString("%" PRIu64 " bytes declared, %zu left", count,
                               remaining()));
    at = pos;
    pos += count;
    return true;
  }
  bool expectEnd() {
    if (pos == end)
      return true;
    return fail(formatString("%zu unexpected bytes at the end", remaining()));
  }
  bool fail(std::string message) {
    problem = std::move(message);
    return false;
  }
  /// Prefixes the problem just found with `context`; returns false.
  bool within(const std::string &context) {
    return inContext(problem, context);
  }

private:
  bool need(size_t bytes) {
    if (bytes <= remaining())
      return true;
    return fail(formatString("truncated at byte %zu: need %zu bytes, %zu left",
                             size_t(pos - begin), bytes, remaining()));
  }

  const uint8_t *begin;
  const uint8_t *pos;
  const uint8_t *end;
  std::string &problem;
};

/// One instruction: checked for the format's limits (before writing),
/// written, read back (checked, canonical form enforced) and compared
/// bitwise with the path of the first difference.
bool checkInstruction(const Instruction &inst, std::string &problem);
void encodeInstruction(ByteWriter &w, const Instruction &inst);
bool decodeInstruction(Cursor &c, Instruction &inst);
bool equalInstruction(const Instruction &a, const Instruction &b,
                      std::string *diff);

} // namespace artifact
} // namespace trnrt

#endif // TRNRT_LIB_ARTIFACTCODEC_H
