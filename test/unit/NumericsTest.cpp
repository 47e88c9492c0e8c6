//===- NumericsTest.cpp - Rounding and encoding of the float dtypes -------===//
//
// Checks the conversions against hand-computed cases (ties, overflow,
// subnormals, signed zero, NaN), exhaustively over every bit pattern of the
// 8- and 16-bit formats, and against independent oracles: the hardware
// double -> float conversion, GCC's _Float16, and a brute-force nearest-value
// search over all fp8 values.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Numerics.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

using namespace trnrt;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double pow2(int exponent) { return std::ldexp(1.0, exponent); }

/// Equality that also tells -0 from +0 and treats all NaNs as equal.
::testing::AssertionResult sameValue(double expected, double actual) {
  if (std::isnan(expected) && std::isnan(actual))
    return ::testing::AssertionSuccess();
  if (expected == actual && std::signbit(expected) == std::signbit(actual))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected " << expected << " but got " << actual << " ("
         << std::hexfloat << expected << " vs " << actual << ")";
}

/// Checks both the rounded value and its bit encoding.
void expectRounds(DType type, double input, double expected,
                  uint64_t expectedBits) {
  std::ostringstream trace;
  trace << dtypeName(type) << " input " << std::hexfloat << input;
  SCOPED_TRACE(trace.str());
  EXPECT_TRUE(sameValue(expected, roundToDType(input, type)));
  EXPECT_EQ(expectedBits, encodeFloat(input, type));
}

//===----------------------------------------------------------------------===//
// Dtype table
//===----------------------------------------------------------------------===//

TEST(DTypeTest, NamesSizesAndKinds) {
  struct Expected {
    DType type;
    const char *name;
    unsigned size;
    bool isFloat;
  };
  const Expected all[] = {
      {DType::F32, "f32", 4, true},
      {DType::BF16, "bf16", 2, true},
      {DType::F16, "f16", 2, true},
      {DType::F8E4M3FN, "f8E4M3FN", 1, true},
      {DType::F8E5M2, "f8E5M2", 1, true},
      {DType::I1, "i1", 1, false},
      {DType::I32, "i32", 4, false},
      {DType::I64, "i64", 8, false},
  };
  for (const Expected &e : all) {
    EXPECT_STREQ(e.name, dtypeName(e.type));
    EXPECT_EQ(e.size, dtypeSizeInBytes(e.type));
    EXPECT_EQ(e.isFloat, isFloatDType(e.type));
    DType parsed = DType::I64;
    ASSERT_TRUE(dtypeFromName(e.name, parsed)) << e.name;
    EXPECT_EQ(e.type, parsed);
  }
  DType untouched = DType::I32;
  EXPECT_FALSE(dtypeFromName("F32", untouched));
  EXPECT_FALSE(dtypeFromName("f8e4m3fn", untouched));
  EXPECT_FALSE(dtypeFromName("", untouched));
  EXPECT_FALSE(dtypeFromName("f32 ", untouched));
  EXPECT_EQ(DType::I32, untouched);
}

TEST(DTypeTest, FormatLimits) {
  struct Limits {
    DType type;
    double maxFinite;
    double minSubnormal;
    double minNormal;
  };
  const Limits all[] = {
      {DType::F32, FLT_MAX, pow2(-149), pow2(-126)},
      {DType::BF16, (2 - pow2(-7)) * pow2(127), pow2(-133), pow2(-126)},
      {DType::F16, 65504, pow2(-24), pow2(-14)},
      {DType::F8E4M3FN, 448, pow2(-9), pow2(-6)},
      {DType::F8E5M2, 57344, pow2(-16), pow2(-14)},
  };
  for (const Limits &l : all) {
    SCOPED_TRACE(dtypeName(l.type));
    FloatFormat format;
    ASSERT_TRUE(getFloatFormat(l.type, format));
    EXPECT_EQ(l.maxFinite, format.maxFinite);
    EXPECT_EQ(l.maxFinite, roundToDType(l.maxFinite, l.type));
    EXPECT_EQ(l.minSubnormal, roundToDType(l.minSubnormal, l.type));
    EXPECT_EQ(1u, encodeFloat(l.minSubnormal, l.type));
    EXPECT_EQ(uint64_t(1) << format.mantissaBits,
              encodeFloat(l.minNormal, l.type));
    EXPECT_EQ(l.minSubnormal, decodeFloat(1, l.type));
  }
  FloatFormat unused;
  EXPECT_FALSE(getFloatFormat(DType::I32, unused));
}

TEST(DTypeTest, IntegerDTypesPassValuesThrough) {
  EXPECT_EQ(2.5, roundToDType(2.5, DType::I32));
  EXPECT_EQ(0u, encodeFloat(2.5, DType::I64));
  EXPECT_EQ(0.0, decodeFloat(0x3F80, DType::I1));
}

//===----------------------------------------------------------------------===//
// bf16
//===----------------------------------------------------------------------===//

TEST(Bf16Test, TiesRoundToEvenInBothDirections) {
  // ulp(1) = 2^-7, so 1 + 2^-8 is halfway between 1 (even) and 1 + 2^-7.
  expectRounds(DType::BF16, 1 + pow2(-8), 1.0, 0x3F80);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  expectRounds(DType::BF16, 1 + 3 * pow2(-8), 1 + pow2(-6), 0x3F82);
  expectRounds(DType::BF16, -(1 + pow2(-8)), -1.0, 0xBF80);
  expectRounds(DType::BF16, -(1 + 3 * pow2(-8)), -(1 + pow2(-6)), 0xBF82);
}

TEST(Bf16Test, JustAboveAndBelowTies) {
  expectRounds(DType::BF16, 1 + pow2(-8) + pow2(-30), 1 + pow2(-7), 0x3F81);
  expectRounds(DType::BF16, 1 + pow2(-8) - pow2(-30), 1.0, 0x3F80);
  expectRounds(DType::BF16, 1 + 3 * pow2(-8) - pow2(-30), 1 + pow2(-7), 0x3F81);
  expectRounds(DType::BF16, 1 + 3 * pow2(-8) + pow2(-30), 1 + pow2(-6), 0x3F82);
}

TEST(Bf16Test, RoundsDirectlyFromDoubleWithoutDoubleRounding) {
  // Through f32 this would first become exactly 1 + 2^-8 (a tie) and then
  // round down to 1; rounded once it is above the tie and rounds up.
  double input = 1 + pow2(-8) + pow2(-40);
  ASSERT_EQ(1 + pow2(-8), double(float(input)));
  expectRounds(DType::BF16, input, 1 + pow2(-7), 0x3F81);
}

TEST(Bf16Test, SpecialValues) {
  expectRounds(DType::BF16, kInf, kInf, 0x7F80);
  expectRounds(DType::BF16, -kInf, -kInf, 0xFF80);
  expectRounds(DType::BF16, kNaN, kNaN, 0x7FC0);
  expectRounds(DType::BF16, -kNaN, -kNaN, 0xFFC0);
  EXPECT_TRUE(std::signbit(roundToDType(-kNaN, DType::BF16)));
  expectRounds(DType::BF16, 0.0, 0.0, 0x0000);
  expectRounds(DType::BF16, -0.0, -0.0, 0x8000);
  EXPECT_TRUE(std::isnan(decodeFloat(0x7F81, DType::BF16))); // Signalling.
  EXPECT_TRUE(sameValue(-kInf, decodeFloat(0xFF80, DType::BF16)));
}

TEST(Bf16Test, OverflowToInfinity) {
  const double maxFinite = (2 - pow2(-7)) * pow2(127); // 0x7F7F, odd mantissa.
  const double halfUlp = pow2(127 - 8);
  expectRounds(DType::BF16, maxFinite, maxFinite, 0x7F7F);
  expectRounds(DType::BF16, maxFinite + halfUlp - pow2(80), maxFinite, 0x7F7F);
  // The tie above the largest finite rounds to the even 2^128: overflow.
  expectRounds(DType::BF16, maxFinite + halfUlp, kInf, 0x7F80);
  expectRounds(DType::BF16, -(maxFinite + halfUlp), -kInf, 0xFF80);
  expectRounds(DType::BF16, 1e300, kInf, 0x7F80);
  expectRounds(DType::BF16, double(FLT_MAX), kInf, 0x7F80);
}

TEST(Bf16Test, Subnormals) {
  const double minSubnormal = pow2(-133);
  expectRounds(DType::BF16, minSubnormal, minSubnormal, 0x0001);
  // Halfway between 0 (even) and the smallest subnormal.
  expectRounds(DType::BF16, minSubnormal / 2, 0.0, 0x0000);
  expectRounds(DType::BF16, -minSubnormal / 2, -0.0, 0x8000);
  expectRounds(DType::BF16, minSubnormal / 2 * (1 + pow2(-40)), minSubnormal,
               0x0001);
  // Halfway between 1 (odd) and 2 (even) subnormal quanta.
  expectRounds(DType::BF16, 1.5 * minSubnormal, 2 * minSubnormal, 0x0002);
  expectRounds(DType::BF16, 2.5 * minSubnormal, 2 * minSubnormal, 0x0002);
  // Largest subnormal, and the tie above it rounding up into the normals.
  expectRounds(DType::BF16, 127 * minSubnormal, 127 * minSubnormal, 0x007F);
  expectRounds(DType::BF16, 127.5 * minSubnormal, pow2(-126), 0x0080);
  expectRounds(DType::BF16, pow2(-140), 0.0, 0x0000);
  expectRounds(DType::BF16, -pow2(-1070), -0.0, 0x8000);
  expectRounds(DType::BF16, doubleFromBits(1), 0.0, 0x0000); // 2^-1074.
}

TEST(Bf16Test, FastPathMatchesHandCases) {
  EXPECT_EQ(0x3F80, floatToBf16Bits(1.0f + 0x1p-8f));
  EXPECT_EQ(0x3F82, floatToBf16Bits(1.0f + 3 * 0x1p-8f));
  EXPECT_EQ(0x3F81, floatToBf16Bits(1.0f + 0x1p-8f + 0x1p-20f));
  EXPECT_EQ(0x7F80, floatToBf16Bits(FLT_MAX));
  EXPECT_EQ(0x7F80, floatToBf16Bits(std::numeric_limits<float>::infinity()));
  EXPECT_EQ(0xFF80, floatToBf16Bits(-std::numeric_limits<float>::infinity()));
  EXPECT_EQ(0x7FC0, floatToBf16Bits(floatFromBits(0x7F800001))); // sNaN.
  EXPECT_EQ(0xFFC0, floatToBf16Bits(floatFromBits(0xFFFFFFFF)));
  EXPECT_EQ(0x8000, floatToBf16Bits(-0.0f));
  // Subnormal ties: to the even 0 below, to the even 2 above.
  EXPECT_EQ(0x0000, floatToBf16Bits(floatFromBits(0x00008000)));
  EXPECT_EQ(0x0001, floatToBf16Bits(floatFromBits(0x00008001)));
  EXPECT_EQ(0x0002, floatToBf16Bits(floatFromBits(0x00018000)));
  EXPECT_EQ(0x0000, floatToBf16Bits(floatFromBits(0x00007FFF)));
  EXPECT_EQ(1.0f, bf16BitsToFloat(0x3F80));
  EXPECT_EQ(0x80000000u, floatBits(bf16BitsToFloat(0x8000)));
  EXPECT_TRUE(std::isnan(bf16BitsToFloat(0x7FC1)));
}

TEST(Bf16Test, FastPathAgreesWithGenericRoundingOnRandomFloats) {
  std::mt19937 generator(1234);
  std::uniform_int_distribution<uint32_t> anyBits;
  for (int i = 0; i < 2000000; ++i) {
    // Every float is as likely as any other bit pattern, so NaNs, infinities
    // and subnormals all occur; the low bits are forced to a tie now and then.
    uint32_t bits = anyBits(generator);
    if (i % 4 == 1)
      bits = (bits & 0xFFFF0000u) | 0x8000u;
    float value = floatFromBits(bits);
    uint16_t fast = floatToBf16Bits(value);
    ASSERT_EQ(encodeFloat(value, DType::BF16), fast)
        << std::hex << "input bits 0x" << bits;
    ASSERT_TRUE(
        sameValue(roundToDType(value, DType::BF16), bf16BitsToFloat(fast)))
        << std::hex << "input bits 0x" << bits;
  }
}

//===----------------------------------------------------------------------===//
// f16
//===----------------------------------------------------------------------===//

TEST(F16Test, TiesRoundToEvenInBothDirections) {
  expectRounds(DType::F16, 1 + pow2(-11), 1.0, 0x3C00);
  expectRounds(DType::F16, 1 + 3 * pow2(-11), 1 + pow2(-9), 0x3C02);
  expectRounds(DType::F16, -(1 + pow2(-11)), -1.0, 0xBC00);
  expectRounds(DType::F16, -(1 + 3 * pow2(-11)), -(1 + pow2(-9)), 0xBC02);
  // At a larger exponent: ulp(2048) = 2.
  expectRounds(DType::F16, 2049, 2048, 0x6800);
  expectRounds(DType::F16, 2051, 2052, 0x6802);
}

TEST(F16Test, JustAboveAndBelowTies) {
  expectRounds(DType::F16, 1 + pow2(-11) + pow2(-40), 1 + pow2(-10), 0x3C01);
  expectRounds(DType::F16, 1 + pow2(-11) - pow2(-40), 1.0, 0x3C00);
  expectRounds(DType::F16, 2049.000001, 2050, 0x6801);
  expectRounds(DType::F16, 2050.999999, 2050, 0x6801);
}

TEST(F16Test, SpecialValuesAndOverflow) {
  expectRounds(DType::F16, kInf, kInf, 0x7C00);
  expectRounds(DType::F16, -kInf, -kInf, 0xFC00);
  expectRounds(DType::F16, kNaN, kNaN, 0x7E00);
  expectRounds(DType::F16, -kNaN, -kNaN, 0xFE00);
  expectRounds(DType::F16, -0.0, -0.0, 0x8000);
  expectRounds(DType::F16, 65504, 65504, 0x7BFF);
  // ulp(65504) = 32; 65520 is the tie above the (odd) largest finite.
  expectRounds(DType::F16, 65519.99, 65504, 0x7BFF);
  expectRounds(DType::F16, 65520, kInf, 0x7C00);
  expectRounds(DType::F16, -65520, -kInf, 0xFC00);
  expectRounds(DType::F16, 1e10, kInf, 0x7C00);
}

TEST(F16Test, Subnormals) {
  const double minSubnormal = pow2(-24);
  expectRounds(DType::F16, minSubnormal, minSubnormal, 0x0001);
  expectRounds(DType::F16, minSubnormal / 2, 0.0, 0x0000);
  expectRounds(DType::F16, -minSubnormal / 2, -0.0, 0x8000);
  expectRounds(DType::F16, minSubnormal * 0.500001, minSubnormal, 0x0001);
  expectRounds(DType::F16, 1.5 * minSubnormal, 2 * minSubnormal, 0x0002);
  expectRounds(DType::F16, 1023 * minSubnormal, 1023 * minSubnormal, 0x03FF);
  expectRounds(DType::F16, 1023.5 * minSubnormal, pow2(-14), 0x0400);
}

#ifdef __FLT16_MAX__
TEST(F16Test, AgreesWithCompilerHalfOnRandomDoubles) {
  // GCC's _Float16 conversion (libgcc's __truncdfhf2) is an independent,
  // correctly rounded implementation.
  std::mt19937_64 generator(99);
  std::uniform_int_distribution<uint64_t> mantissa(0, (uint64_t(1) << 52) - 1);
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (int i = 0; i < 1000000; ++i) {
    double value =
        std::ldexp(1.0 + std::ldexp(double(mantissa(generator)), -52),
                   exponent(generator));
    if (i % 2)
      value = -value;
    if (i % 8 == 3) // An exact tie of the f16 grid at this magnitude.
      value = double(_Float16(value)) +
              std::ldexp(1.0, std::max(std::ilogb(value), -14) - 11);
    double expected = double(_Float16(value));
    ASSERT_TRUE(sameValue(expected, roundToDType(value, DType::F16)))
        << std::hexfloat << value;
  }
}
#endif

//===----------------------------------------------------------------------===//
// Exhaustive 16-bit round trips
//===----------------------------------------------------------------------===//

void checkAllPatternsRoundTrip(DType type, unsigned totalBits) {
  FloatFormat format;
  ASSERT_TRUE(getFloatFormat(type, format));
  const uint64_t signBit = uint64_t(1) << (totalBits - 1);
  unsigned nanCount = 0;
  double previous = -kInf;
  for (uint64_t bits = 0; bits < (uint64_t(1) << totalBits); ++bits) {
    double value = decodeFloat(bits, type);
    if (std::isnan(value)) {
      ++nanCount;
      // Every NaN re-encodes as the canonical quiet NaN of its sign.
      uint64_t canonical = encodeFloat(bits & signBit ? -kNaN : kNaN, type);
      ASSERT_EQ(canonical, encodeFloat(value, type)) << std::hex << bits;
      ASSERT_EQ(bool(bits & signBit), bool(std::signbit(value))) << bits;
      continue;
    }
    ASSERT_EQ(bits, encodeFloat(value, type)) << std::hex << "bits 0x" << bits;
    ASSERT_EQ(value, roundToDType(value, type)) << std::hex << bits;
    // Positive patterns decode in increasing order.
    if (bits < signBit) {
      ASSERT_LT(previous, value) << std::hex << bits;
      previous = value;
    }
  }
  unsigned expectedNaNs =
      format.hasInfinity
          ? 2 * ((1u << format.mantissaBits) - 1) // All-ones exponent, m != 0.
          : 2;                                    // S.1111.111 only.
  EXPECT_EQ(expectedNaNs, nanCount);
}

TEST(RoundTripTest, AllBf16Patterns) {
  checkAllPatternsRoundTrip(DType::BF16, 16);
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    double value = decodeFloat(bits, DType::BF16);
    ASSERT_TRUE(sameValue(value, bf16BitsToFloat(uint16_t(bits)))) << bits;
    if (!std::isnan(value)) {
      ASSERT_EQ(bits, floatToBf16Bits(float(value)));
    }
  }
}

TEST(RoundTripTest, AllF16Patterns) {
  checkAllPatternsRoundTrip(DType::F16, 16);
}

TEST(RoundTripTest, AllF8E4M3FNPatterns) {
  checkAllPatternsRoundTrip(DType::F8E4M3FN, 8);
  EXPECT_TRUE(std::isnan(decodeFloat(0x7F, DType::F8E4M3FN)));
  EXPECT_TRUE(std::isnan(decodeFloat(0xFF, DType::F8E4M3FN)));
  // The all-ones exponent holds finite values in this format.
  EXPECT_EQ(256.0, decodeFloat(0x78, DType::F8E4M3FN));
  EXPECT_EQ(448.0, decodeFloat(0x7E, DType::F8E4M3FN));
  EXPECT_EQ(-448.0, decodeFloat(0xFE, DType::F8E4M3FN));
}

TEST(RoundTripTest, AllF8E5M2Patterns) {
  checkAllPatternsRoundTrip(DType::F8E5M2, 8);
  EXPECT_TRUE(sameValue(kInf, decodeFloat(0x7C, DType::F8E5M2)));
  EXPECT_TRUE(sameValue(-kInf, decodeFloat(0xFC, DType::F8E5M2)));
  EXPECT_EQ(57344.0, decodeFloat(0x7B, DType::F8E5M2));
}

TEST(RoundTripTest, DecodeIgnoresBitsAboveTheFormat) {
  EXPECT_EQ(1.0, decodeFloat(0xF38, DType::F8E4M3FN));
  EXPECT_EQ(1.0, decodeFloat(0xABCD3C00, DType::F16));
}

//===----------------------------------------------------------------------===//
// fp8
//===----------------------------------------------------------------------===//

TEST(F8E4M3FNTest, SaturatesInsteadOfOverflowing) {
  expectRounds(DType::F8E4M3FN, 448, 448, 0x7E);
  expectRounds(DType::F8E4M3FN, 449, 448, 0x7E);
  expectRounds(DType::F8E4M3FN, 464, 448, 0x7E); // Tie with the NaN slot.
  expectRounds(DType::F8E4M3FN, 480, 448, 0x7E);
  expectRounds(DType::F8E4M3FN, 1e6, 448, 0x7E);
  expectRounds(DType::F8E4M3FN, -1e300, -448, 0xFE);
  expectRounds(DType::F8E4M3FN, kInf, 448, 0x7E);
  expectRounds(DType::F8E4M3FN, -kInf, -448, 0xFE);
  expectRounds(DType::F8E4M3FN, kNaN, kNaN, 0x7F);
  expectRounds(DType::F8E4M3FN, -kNaN, -kNaN, 0xFF);
}

TEST(F8E4M3FNTest, Ties) {
  // ulp(1) = 1/8.
  expectRounds(DType::F8E4M3FN, 1.0625, 1.0, 0x38);
  expectRounds(DType::F8E4M3FN, 1.1875, 1.25, 0x3A);
  expectRounds(DType::F8E4M3FN, -1.1875, -1.25, 0xBA);
  expectRounds(DType::F8E4M3FN, 1.0625 + 1e-9, 1.125, 0x39);
  expectRounds(DType::F8E4M3FN, 1.1875 - 1e-9, 1.125, 0x39);
  // ulp(256) = 32: 272 is a tie between 256 (even) and 288.
  expectRounds(DType::F8E4M3FN, 272, 256, 0x78);
  expectRounds(DType::F8E4M3FN, 304, 320, 0x7A);
}

TEST(F8E4M3FNTest, SubnormalsAndUnderflow) {
  const double minSubnormal = pow2(-9);
  expectRounds(DType::F8E4M3FN, minSubnormal, minSubnormal, 0x01);
  expectRounds(DType::F8E4M3FN, 7 * minSubnormal, 7 * minSubnormal, 0x07);
  expectRounds(DType::F8E4M3FN, pow2(-6), pow2(-6), 0x08); // Smallest normal.
  expectRounds(DType::F8E4M3FN, 7.5 * minSubnormal, pow2(-6), 0x08);
  expectRounds(DType::F8E4M3FN, 1.5 * minSubnormal, 2 * minSubnormal, 0x02);
  expectRounds(DType::F8E4M3FN, 2.5 * minSubnormal, 2 * minSubnormal, 0x02);
  expectRounds(DType::F8E4M3FN, minSubnormal / 2, 0.0, 0x00);
  expectRounds(DType::F8E4M3FN, minSubnormal / 2 + 1e-12, minSubnormal, 0x01);
  expectRounds(DType::F8E4M3FN, -minSubnormal / 2, -0.0, 0x80);
  expectRounds(DType::F8E4M3FN, pow2(-11), 0.0, 0x00);
  expectRounds(DType::F8E4M3FN, -pow2(-11), -0.0, 0x80);
  expectRounds(DType::F8E4M3FN, -0.0, -0.0, 0x80);
}

TEST(F8E5M2Test, OverflowToInfinity) {
  // ulp(57344) = 8192, and 57344 has an odd mantissa (11).
  expectRounds(DType::F8E5M2, 57344, 57344, 0x7B);
  expectRounds(DType::F8E5M2, 61439, 57344, 0x7B);
  expectRounds(DType::F8E5M2, 61440, kInf, 0x7C);
  expectRounds(DType::F8E5M2, -61440, -kInf, 0xFC);
  expectRounds(DType::F8E5M2, kInf, kInf, 0x7C);
  expectRounds(DType::F8E5M2, kNaN, kNaN, 0x7E);
}

TEST(F8E5M2Test, TiesAndSubnormals) {
  expectRounds(DType::F8E5M2, 1.125, 1.0, 0x3C);
  expectRounds(DType::F8E5M2, 1.375, 1.5, 0x3E);
  expectRounds(DType::F8E5M2, pow2(-16), pow2(-16), 0x01);
  expectRounds(DType::F8E5M2, pow2(-17), 0.0, 0x00);
  expectRounds(DType::F8E5M2, -pow2(-17), -0.0, 0x80);
  expectRounds(DType::F8E5M2, 3 * pow2(-17), 2 * pow2(-16), 0x02);
  expectRounds(DType::F8E5M2, 3.5 * pow2(-16), pow2(-14), 0x04);
}

/// The obviously correct, slow reference: scan every finite value of the
/// format for the nearest, preferring the even encoding on a tie. Overflow
/// follows the format's rule, checked against the midpoint between the
/// largest finite value and the next power of two.
double nearestBySearch(double value, DType type) {
  FloatFormat format;
  getFloatFormat(type, format);
  const double unboundedNext =
      format.maxFinite +
      std::ldexp(1.0, std::ilogb(format.maxFinite) - int(format.mantissaBits));
  if (std::fabs(value) >= (format.maxFinite + unboundedNext) / 2 &&
      !(std::fabs(value) == (format.maxFinite + unboundedNext) / 2 &&
        (encodeFloat(format.maxFinite, type) & 1) == 0))
    return std::copysign(format.hasInfinity ? kInf : format.maxFinite, value);
  double best = kNaN;
  uint64_t bestBits = 0;
  for (uint64_t bits = 0; bits < 128; ++bits) { // Non-negative patterns.
    double candidate = decodeFloat(bits, type);
    if (!std::isfinite(candidate))
      continue;
    double distance = std::fabs(std::fabs(value) - candidate);
    double bestDistance = std::fabs(std::fabs(value) - best);
    if (std::isnan(best) || distance < bestDistance ||
        (distance == bestDistance && (bits & 1) == 0 && (bestBits & 1))) {
      best = candidate;
      bestBits = bits;
    }
  }
  return std::copysign(best, value);
}

TEST(F8Test, AgreesWithBruteForceSearch) {
  for (DType type : {DType::F8E4M3FN, DType::F8E5M2}) {
    SCOPED_TRACE(dtypeName(type));
    std::vector<double> inputs;
    // Every value, every midpoint, and points just around each midpoint.
    for (uint64_t bits = 0; bits < 127; ++bits) {
      double low = decodeFloat(bits, type), high = decodeFloat(bits + 1, type);
      if (!std::isfinite(low) || !std::isfinite(high))
        continue;
      double middle = (low + high) / 2;
      for (double v : {low, middle, std::nextafter(middle, 0.0),
                       std::nextafter(middle, kInf)})
        inputs.push_back(v);
    }
    std::mt19937_64 generator(7);
    std::uniform_real_distribution<double> exponent(-20, 18);
    for (int i = 0; i < 200000; ++i)
      inputs.push_back(std::exp2(exponent(generator)));
    for (double input : inputs) {
      for (double signedInput : {input, -input}) {
        ASSERT_TRUE(sameValue(nearestBySearch(signedInput, type),
                              roundToDType(signedInput, type)))
            << std::hexfloat << signedInput;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// f32
//===----------------------------------------------------------------------===//

TEST(F32Test, AgreesWithHardwareConversion) {
  std::mt19937_64 generator(42);
  std::uniform_int_distribution<uint64_t> anyBits;
  std::uniform_int_distribution<int> nearFloatRange(-160, 130);
  for (int i = 0; i < 2000000; ++i) {
    double value;
    if (i % 3 == 0) {
      value = doubleFromBits(anyBits(generator)); // Any double at all.
    } else {
      // Magnitudes where f32 normals, subnormals and overflow all occur.
      uint64_t bits = anyBits(generator);
      value = std::ldexp(doubleFromBits((bits & 0x800FFFFFFFFFFFFFull) |
                                        0x3FF0000000000000ull),
                         nearFloatRange(generator));
      // Now and then land exactly on an f32 tie: of the 29 significand bits
      // f32 drops, keep only the highest.
      if (i % 3 == 2)
        value =
            doubleFromBits((doubleBits(value) & ~((uint64_t(1) << 29) - 1)) |
                           (uint64_t(1) << 28));
    }
    double expected = double(float(value));
    ASSERT_TRUE(sameValue(expected, roundToDType(value, DType::F32)))
        << std::hexfloat << value;
    if (!std::isnan(value)) {
      ASSERT_EQ(floatBits(float(value)), encodeFloat(value, DType::F32))
          << std::hexfloat << value;
    }
  }
}

TEST(F32Test, TiesAndSpecials) {
  expectRounds(DType::F32, 1 + pow2(-24), 1.0, 0x3F800000);
  expectRounds(DType::F32, 1 + 3 * pow2(-24), 1 + pow2(-22), 0x3F800002);
  expectRounds(DType::F32, kNaN, kNaN, 0x7FC00000);
  expectRounds(DType::F32, -0.0, -0.0, 0x80000000);
  expectRounds(DType::F32, pow2(-150), 0.0, 0x00000000);
  expectRounds(DType::F32, 3 * pow2(-150), pow2(-148), 0x00000002);
  expectRounds(DType::F32, double(FLT_MAX) + pow2(103), kInf, 0x7F800000);
}

} // namespace

// Tensors as doubles (Simulator::writeTensor/readTensor, trn-run's meshes):
// integers truncate toward zero and saturate, NaN becomes 0, i1 is nonzero,
// floats round as encodeFloat does.
TEST(TensorValuesTest, EncodeSaturatesIntegersAndRoundsFloats) {
  const double in[] = {2.9, -2.9, 3e9, -3e9, kNaN};
  uint8_t i32[sizeof(int32_t) * 5];
  encodeValues(DType::I32, in, 5, i32);
  int32_t ints[5];
  std::memcpy(ints, i32, sizeof(ints));
  EXPECT_EQ(ints[0], 2);
  EXPECT_EQ(ints[1], -2);
  EXPECT_EQ(ints[2], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(ints[3], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(ints[4], 0);

  const double big[] = {1e300, -1e300};
  uint8_t i64[sizeof(int64_t) * 2];
  encodeValues(DType::I64, big, 2, i64);
  int64_t longs[2];
  std::memcpy(longs, i64, sizeof(longs));
  EXPECT_EQ(longs[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(longs[1], std::numeric_limits<int64_t>::min());

  const double flags[] = {0.0, -0.5, 7.0};
  uint8_t i1[3];
  encodeValues(DType::I1, flags, 3, i1);
  EXPECT_EQ(i1[0], 0);
  EXPECT_EQ(i1[1], 1);
  EXPECT_EQ(i1[2], 1);

  const double floats[] = {1.0 + 0x1p-30, -kNaN, kInf};
  for (DType type : {DType::F32, DType::BF16, DType::F8E4M3FN}) {
    const unsigned size = dtypeSizeInBytes(type);
    std::vector<uint8_t> bytes(3 * size);
    encodeValues(type, floats, 3, bytes.data());
    for (int i = 0; i < 3; ++i) {
      uint64_t bits = 0;
      std::memcpy(&bits, bytes.data() + i * size, size);
      EXPECT_EQ(bits, encodeFloat(floats[i], type))
          << dtypeName(type) << " value " << i;
    }
  }
}

TEST(TensorValuesTest, DecodeIsTheInverseWhereValuesFit) {
  const double values[] = {-3.0, 0.0, 5.0, 1024.0};
  for (DType type :
       {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64}) {
    std::vector<uint8_t> bytes(4 * dtypeSizeInBytes(type));
    encodeValues(type, values, 4, bytes.data());
    double back[4];
    decodeValues(type, bytes.data(), 4, back);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(back[i], values[i]) << dtypeName(type) << " value " << i;
  }
  const uint8_t flags[] = {0, 1, 2};
  double back[3];
  decodeValues(DType::I1, flags, 3, back);
  EXPECT_EQ(back[0], 0.0);
  EXPECT_EQ(back[1], 1.0);
  EXPECT_EQ(back[2], 1.0);
}
