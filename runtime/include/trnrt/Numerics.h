//===- Numerics.h - Element types and rounding conversions ------*- C++ -*-===//
//
// The element types the runtime and the simulator handle, and conversions
// between doubles and the narrow float formats (bf16, f16, fp8). Every
// conversion rounds to nearest, ties to even, directly from double; the rules
// and their reasons are in docs/numerics.md. No LLVM or MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_NUMERICS_H
#define TRNRT_NUMERICS_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace trnrt {

/// The bits of a float or a double, and back (std::bit_cast before C++20).
inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
inline float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
inline uint64_t doubleBits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
inline double doubleFromBits(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Element types. Names follow MLIR's spelling of the builtin types.
enum class DType : uint8_t { F32, BF16, F16, F8E4M3FN, F8E5M2, I1, I32, I64 };

/// "f32", "bf16", "f16", "f8E4M3FN", "f8E5M2", "i1", "i32", "i64".
const char *dtypeName(DType type);

/// Parses a name printed by dtypeName (exact, case-sensitive match). Returns
/// false and leaves `out` unchanged for any other string.
bool dtypeFromName(std::string_view name, DType &out);

/// Storage size of one element: 4, 2, 2, 1, 1, 1, 4, 8 (i1 takes a byte).
unsigned dtypeSizeInBytes(DType type);

/// True for F32, BF16, F16, F8E4M3FN and F8E5M2.
bool isFloatDType(DType type);
/// Whether `type` is one of the enum's values.
inline bool isValidDType(DType type) {
  return uint8_t(type) <= uint8_t(DType::I64);
}

/// Layout of a binary floating-point format.
struct FloatFormat {
  unsigned exponentBits;
  unsigned mantissaBits; // Stored fraction bits, without the implicit one.
  int bias;
  /// IEEE-like formats reserve the all-ones exponent for inf and NaN. Formats
  /// without inf (the "FN" fp8 formats) use it for finite values except the
  /// all-ones mantissa, which is their only NaN.
  bool hasInfinity;
  /// Largest finite value.
  double maxFinite;
};

/// The layout of float dtype `type`. Returns false for integer dtypes.
bool getFloatFormat(DType type, FloatFormat &out);

/// Correctly rounded (round to nearest, ties to even) conversion of a double
/// to the nearest value representable in float dtype `type`, returned as a
/// double. Rounds directly from double (no double rounding through f32).
/// Subnormals of the target are produced correctly; negative zero stays
/// negative zero; NaN stays NaN (quiet, sign kept). Overflow: f32, bf16, f16
/// and f8E5M2 give +-inf (IEEE: a value that rounds past the largest finite
/// becomes inf); f8E4M3FN has no inf and saturates to +-448 for finite
/// overflow and for +-inf. For integer dtypes, returns `value` unchanged.
double roundToDType(double value, DType type);

/// Bit encoding of `value` in float dtype `type`, rounded as roundToDType, in
/// the low dtypeSizeInBytes(type)*8 bits. NaN encodes as the canonical quiet
/// NaN with the sign of `value` (0x7FC0 for bf16, 0x7E00 for f16, 0x7F for
/// f8E4M3FN, 0x7E for f8E5M2, 0x7FC00000 for f32). Returns 0 for integer
/// dtypes.
uint64_t encodeFloat(double value, DType type);

/// Value of the encoding in the low bits of `bits` (higher bits are ignored).
/// Every NaN encoding decodes to a quiet NaN of the same sign. Returns 0 for
/// integer dtypes.
double decodeFloat(uint64_t bits, DType type);

/// Fast f32 -> bf16 for the simulator: round to nearest even; NaN gives the
/// canonical quiet NaN with the sign kept. Agrees with encodeFloat(x, BF16).
uint16_t floatToBf16Bits(float value);

/// Exact bf16 -> f32 (bf16 is the upper half of an f32).
float bf16BitsToFloat(uint16_t bits);

/// Stores `count` values as elements of `dtype` at `out` (host byte order,
/// dtypeSizeInBytes each): floats rounded as encodeFloat does; integers
/// truncated toward zero and saturated, NaN -> 0; i1 is nonzero -> 1.
void encodeValues(DType dtype, const double *values, size_t count,
                  uint8_t *out);
/// The `count` elements of `dtype` at `in` as doubles (integers exactly
/// where a double can hold them).
void decodeValues(DType dtype, const uint8_t *in, size_t count, double *out);

} // namespace trnrt

#endif // TRNRT_NUMERICS_H
