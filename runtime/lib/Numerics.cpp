//===- Numerics.cpp - Element types and correctly rounded conversions -----===//
//
// One rounding routine, parameterised by the format's exponent and mantissa
// widths, serves every float dtype; see docs/numerics.md.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace trnrt {

namespace {

/// One row per dtype: its name and size and, for floats, its layout
/// (exponentBits 0 for integers).
struct DTypeInfo {
  DType type;
  const char *name;
  unsigned sizeInBytes;
  unsigned exponentBits, mantissaBits;
  int bias;
  bool hasInfinity;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4, 8, 23, 127, true},
    {DType::BF16, "bf16", 2, 8, 7, 127, true},
    {DType::F16, "f16", 2, 5, 10, 15, true},
    {DType::F8E4M3FN, "f8E4M3FN", 1, 4, 3, 7, false},
    {DType::F8E5M2, "f8E5M2", 1, 5, 2, 15, true},
    {DType::I1, "i1", 1, 0, 0, 0, false},
    {DType::I32, "i32", 4, 0, 0, 0, false},
    {DType::I64, "i64", 8, 0, 0, 0, false},
};

const DTypeInfo *findInfo(DType type) {
  for (const DTypeInfo &info : kDTypes)
    if (info.type == type)
      return &info;
  return nullptr;
}

/// Largest finite value of an IEEE-like format: all-ones mantissa under the
/// largest exponent below the all-ones (inf/NaN) one.
double ieeeMaxFinite(unsigned exponentBits, unsigned mantissaBits, int bias) {
  int maxExponent = (1 << exponentBits) - 2 - bias;
  return std::ldexp(2.0 - std::ldexp(1.0, -int(mantissaBits)), maxExponent);
}

/// Largest finite value of an "FN" format: the all-ones exponent holds finite
/// values, and only the all-ones mantissa under it is NaN.
double finiteOnlyMaxFinite(unsigned exponentBits, unsigned mantissaBits,
                           int bias) {
  int maxExponent = (1 << exponentBits) - 1 - bias;
  return std::ldexp(2.0 - std::ldexp(1.0, 1 - int(mantissaBits)), maxExponent);
}

/// Rounds a non-negative value below 2^53 to the nearest integer, ties to
/// even. Written out rather than relying on the
/// current floating-point rounding mode (nearbyint), which callers may change.
double roundHalfToEven(double value) {
  double lower = std::floor(value);
  double fraction = value - lower; // Exact: both are below 2^53.
  if (fraction > 0.5)
    return lower + 1;
  if (fraction < 0.5)
    return lower;
  return std::fmod(lower, 2.0) == 0 ? lower : lower + 1;
}

double roundToFormat(double value, const FloatFormat &format) {
  if (std::isnan(value))
    return std::copysign(std::numeric_limits<double>::quiet_NaN(), value);
  if (std::isinf(value))
    return format.hasInfinity ? value : std::copysign(format.maxFinite, value);
  if (value == 0)
    return value; // Keeps the sign of zero.

  // The spacing of representable values (the quantum) around `value` is
  // 2^(e - mantissaBits) where e is the exponent of `value`, clamped below at
  // the smallest normal exponent: that clamp is what makes subnormals come
  // out right. Scaling by a power of two is exact in double here (the scaled
  // magnitude is below 2^(mantissaBits + 1) and, for our formats, at least
  // 2^-1074 * 2^133, far from double's subnormal range), so the only
  // rounding happens in roundHalfToEven.
  int minNormalExponent = 1 - format.bias;
  int exponent = std::ilogb(value);
  int quantumExponent =
      std::max(exponent, minNormalExponent) - int(format.mantissaBits);
  double scaled = std::ldexp(std::fabs(value), -quantumExponent);
  double magnitude = std::ldexp(roundHalfToEven(scaled), quantumExponent);

  // Rounding with an unbounded exponent and then comparing with the largest
  // finite value is the IEEE 754 overflow rule for round-to-nearest.
  if (magnitude > format.maxFinite)
    magnitude = format.hasInfinity ? std::numeric_limits<double>::infinity()
                                   : format.maxFinite;
  return std::copysign(magnitude, value);
}

uint64_t lowBitsMask(unsigned bits) {
  return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
}

} // namespace

const char *dtypeName(DType type) {
  const DTypeInfo *info = findInfo(type);
  return info ? info->name : "<invalid dtype>";
}

bool dtypeFromName(std::string_view name, DType &out) {
  for (const DTypeInfo &info : kDTypes) {
    if (name == info.name) {
      out = info.type;
      return true;
    }
  }
  return false;
}

unsigned dtypeSizeInBytes(DType type) {
  const DTypeInfo *info = findInfo(type);
  return info ? info->sizeInBytes : 0;
}

bool isFloatDType(DType type) {
  const DTypeInfo *info = findInfo(type);
  return info && info->exponentBits != 0;
}

bool getFloatFormat(DType type, FloatFormat &out) {
  const DTypeInfo *info = findInfo(type);
  if (!info || info->exponentBits == 0)
    return false;
  const unsigned e = info->exponentBits, m = info->mantissaBits;
  out = {e, m, info->bias, info->hasInfinity,
         info->hasInfinity ? ieeeMaxFinite(e, m, info->bias)
                           : finiteOnlyMaxFinite(e, m, info->bias)};
  return true;
}

double roundToDType(double value, DType type) {
  FloatFormat format;
  if (!getFloatFormat(type, format))
    return value;
  return roundToFormat(value, format);
}

uint64_t encodeFloat(double value, DType type) {
  FloatFormat format;
  if (!getFloatFormat(type, format))
    return 0;
  double rounded = roundToFormat(value, format);

  const unsigned mantissaBits = format.mantissaBits;
  const uint64_t allOnesExponent = lowBitsMask(format.exponentBits);
  const uint64_t signBit = uint64_t(1) << (format.exponentBits + mantissaBits);
  uint64_t magnitudeBits;
  if (std::isnan(rounded)) {
    // Canonical quiet NaN: IEEE formats set the top mantissa bit; the FN
    // formats have exactly one NaN, all ones.
    uint64_t mantissa = format.hasInfinity ? uint64_t(1) << (mantissaBits - 1)
                                           : lowBitsMask(mantissaBits);
    magnitudeBits = (allOnesExponent << mantissaBits) | mantissa;
  } else if (std::isinf(rounded)) {
    magnitudeBits = allOnesExponent << mantissaBits;
  } else if (rounded == 0) {
    magnitudeBits = 0;
  } else {
    // `rounded` is representable, so these scalings give exact integers.
    double magnitude = std::fabs(rounded);
    int minNormalExponent = 1 - format.bias;
    int exponent = std::ilogb(magnitude);
    if (exponent < minNormalExponent) {
      magnitudeBits = uint64_t(
          std::ldexp(magnitude, int(mantissaBits) - minNormalExponent));
    } else {
      uint64_t significand =
          uint64_t(std::ldexp(magnitude, int(mantissaBits) - exponent));
      uint64_t biasedExponent = uint64_t(exponent + format.bias);
      magnitudeBits = (biasedExponent << mantissaBits) |
                      (significand & lowBitsMask(mantissaBits));
    }
  }
  return (std::signbit(rounded) ? signBit : 0) | magnitudeBits;
}

double decodeFloat(uint64_t bits, DType type) {
  FloatFormat format;
  if (!getFloatFormat(type, format))
    return 0;
  const unsigned mantissaBits = format.mantissaBits;
  const uint64_t allOnesExponent = lowBitsMask(format.exponentBits);
  const double sign =
      (bits >> (format.exponentBits + mantissaBits)) & 1 ? -1.0 : 1.0;
  const uint64_t mantissa = bits & lowBitsMask(mantissaBits);
  const uint64_t biasedExponent = (bits >> mantissaBits) & allOnesExponent;

  if (biasedExponent == allOnesExponent) {
    if (format.hasInfinity) {
      if (mantissa == 0)
        return std::copysign(std::numeric_limits<double>::infinity(), sign);
      return std::copysign(std::numeric_limits<double>::quiet_NaN(), sign);
    }
    if (mantissa == lowBitsMask(mantissaBits))
      return std::copysign(std::numeric_limits<double>::quiet_NaN(), sign);
  }
  int minNormalExponent = 1 - format.bias;
  double magnitude;
  if (biasedExponent == 0) // Zero or subnormal: no implicit leading one.
    magnitude =
        std::ldexp(double(mantissa), minNormalExponent - int(mantissaBits));
  else
    magnitude =
        std::ldexp(double(mantissa | (uint64_t(1) << mantissaBits)),
                   int(biasedExponent) - format.bias - int(mantissaBits));
  return std::copysign(magnitude, sign);
}

uint16_t floatToBf16Bits(float value) {
  uint32_t bits = floatBits(value);
  if (std::isnan(value))
    return uint16_t(((bits >> 16) & 0x8000) | 0x7FC0);
  // Adding 0x7FFF plus the lowest kept bit carries into the kept half exactly
  // when the dropped half is above the tie, or at the tie with an odd kept
  // half. A carry out of the mantissa correctly bumps the exponent, and out
  // of the largest finite value it correctly gives infinity.
  uint32_t lowestKeptBit = (bits >> 16) & 1;
  bits += 0x7FFF + lowestKeptBit;
  return uint16_t(bits >> 16);
}

float bf16BitsToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

void encodeValues(DType dtype, const double *values, size_t count,
                  uint8_t *out) {
  const unsigned size = dtypeSizeInBytes(dtype);
  for (size_t i = 0; i < count; ++i) {
    const double value = values[i];
    uint64_t bits;
    switch (dtype) {
    case DType::I1:
      bits = value != 0.0 ? 1 : 0;
      break;
    case DType::I32:
    case DType::I64: {
      const bool narrow = dtype == DType::I32;
      const double low = narrow ? -2147483648.0 : -9223372036854775808.0;
      const double high = narrow ? 2147483647.0 : 9223372036854775807.0;
      int64_t integer;
      if (std::isnan(value))
        integer = 0;
      else if (value >= high)
        integer = narrow ? int64_t(std::numeric_limits<int32_t>::max())
                         : std::numeric_limits<int64_t>::max();
      else
        integer = int64_t(std::max(std::trunc(value), low));
      bits = uint64_t(integer);
      break;
    }
    case DType::F32:
      // roundToDType(x, F32) is (double)(float)x (docs/numerics.md), the
      // quick way; NaNs take encodeFloat's canonical form.
      bits = std::isnan(value) ? encodeFloat(value, DType::F32)
                               : floatBits(float(value));
      break;
    default:
      bits = encodeFloat(value, dtype);
      break;
    }
    std::memcpy(out + i * size, &bits, size); // little-endian host
  }
}

void decodeValues(DType dtype, const uint8_t *in, size_t count, double *out) {
  const unsigned size = dtypeSizeInBytes(dtype);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, in + i * size, size);
    switch (dtype) {
    case DType::I1:
      out[i] = bits != 0 ? 1.0 : 0.0;
      break;
    case DType::I32:
      out[i] = double(int32_t(uint32_t(bits)));
      break;
    case DType::I64:
      out[i] = double(int64_t(bits));
      break;
    default:
      out[i] = decodeFloat(bits, dtype);
      break;
    }
  }
}

} // namespace trnrt
