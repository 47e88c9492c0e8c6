//===- SimulatorExecute.cpp - Vector, Scalar and GpSimd semantics ---------===//
//
// Each instruction resolves its operands (bounds-checked views), decodes them
// to fp32 (or int64 on the integer paths) once, computes over contiguous
// buffers with the operator chosen outside the element loop, and rounds the
// results into the destination dtype. docs/simulator.md states the rules.
//
//===----------------------------------------------------------------------===//

#include "SimulatorImpl.h"

#include "trnrt/Random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

namespace trnrt {
namespace sim {

namespace {

bool isIntegerDType(DType dtype) { return !isFloatDType(dtype); }

inline int32_t toInt32(float value) {
  return int32_t(floatToInteger(value, DType::I32));
}

/// The semantics of each ALU op of Isa.def, one static function per op named
/// after it, per element type. Comparisons and logical ops give 1 or 0.
template <typename T> struct AluCommon {
  static T Bypass(T a, T) { return a; }
  static T IsEqual(T a, T b) { return T(a == b); }
  static T IsNotEqual(T a, T b) { return T(a != b); }
  static T IsLess(T a, T b) { return T(a < b); }
  static T IsLessEqual(T a, T b) { return T(a <= b); }
  static T IsGreater(T a, T b) { return T(a > b); }
  static T IsGreaterEqual(T a, T b) { return T(a >= b); }
  static T LogicalAnd(T a, T b) { return T(a != T(0) && b != T(0)); }
  static T LogicalOr(T a, T b) { return T(a != T(0) || b != T(0)); }
};

/// fp32: IEEE, with Max and Min propagating NaN (a NaN operand gives NaN)
/// so poisoned reads stay visible; bitwise ops on the int32 values.
struct AluFloat : AluCommon<float> {
  static float Add(float a, float b) { return a + b; }
  static float Subtract(float a, float b) { return a - b; }
  static float Multiply(float a, float b) { return a * b; }
  static float Divide(float a, float b) { return a / b; }
  static float Max(float a, float b) { return (a > b || a != a) ? a : b; }
  static float Min(float a, float b) { return (a < b || a != a) ? a : b; }
  static float Pow(float a, float b) { return std::pow(a, b); }
  static float BitwiseAnd(float a, float b) {
    return float(toInt32(a) & toInt32(b));
  }
  static float BitwiseOr(float a, float b) {
    return float(toInt32(a) | toInt32(b));
  }
};

/// Integers (GpSimd int32 math, bitwise ops): wrapping arithmetic, division
/// truncating toward zero with x / 0 = 0.
struct AluInt : AluCommon<int64_t> {
  static int64_t Add(int64_t a, int64_t b) {
    return int64_t(uint64_t(a) + uint64_t(b));
  }
  static int64_t Subtract(int64_t a, int64_t b) {
    return int64_t(uint64_t(a) - uint64_t(b));
  }
  static int64_t Multiply(int64_t a, int64_t b) {
    return int64_t(uint64_t(a) * uint64_t(b));
  }
  static int64_t Divide(int64_t a, int64_t b) {
    if (b == 0)
      return 0;
    if (b == -1)
      return int64_t(0 - uint64_t(a));
    return a / b;
  }
  static int64_t Max(int64_t a, int64_t b) { return std::max(a, b); }
  static int64_t Min(int64_t a, int64_t b) { return std::min(a, b); }
  static int64_t Pow(int64_t a, int64_t b) {
    return floatToInteger(float(std::pow(double(a), double(b))), DType::I64);
  }
  static int64_t BitwiseAnd(int64_t a, int64_t b) { return a & b; }
  static int64_t BitwiseOr(int64_t a, int64_t b) { return a | b; }
};

/// Calls visit(f) with f(a, b) the semantics of `op` on T (float or
/// int64_t); returns false for an unknown op. The operator is chosen once,
/// outside the element loop.
template <typename T, typename Visit>
bool dispatchAlu(AluOp op, Visit &&visit) {
  using A = std::conditional_t<std::is_same_v<T, float>, AluFloat, AluInt>;
  switch (op) {
#define TRN_ALU_OP(Name, ...)                                                  \
  case AluOp::Name:                                                            \
    visit([](T a, T b) { return A::Name(a, b); });                             \
    return true;
#include "trnrt/Isa.def"
  }
  return false;
}

/// e^x in double, branch-free so element loops vectorise (glibc's exp is a
/// call per element). Relative error < 1e-14, far below the half ulp of
/// fp32 the result is rounded to. Inputs are clamped to [-708, 710]: below,
/// exp stays a tiny normal double (0 in fp32, and 1 + e^x is 1); above, the
/// scale 2^1024 is inf, as exp overflows.
inline double vectorExp(double x) {
  x = x < -708.0 ? -708.0 : x; // NaN passes through both clamps
  x = x > 710.0 ? 710.0 : x;
  // n = round(x / ln 2) in the low bits of a shifted double; r = x - n ln 2.
  const double shifter = 0x1.8p52;
  double shifted = x * 0x1.71547652b82fep0 + shifter;
  uint64_t bits;
  std::memcpy(&bits, &shifted, 8);
  double n = shifted - shifter;
  double r = x - n * 0x1.62e42fefa39efp-1 - n * 0x1.abc9e3b39803fp-56;
  // Taylor series to degree 12 on |r| <= ln(2)/2.
  double p = 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^n: the low bits of `shifted` hold n + 0x8000000000000 (plus the
  // shifter's exponent), so rebuild the exponent field from them.
  uint64_t scaleBits = (bits - 0x4338000000000000ull + 1023u) << 52;
  double scale;
  std::memcpy(&scale, &scaleBits, 8);
  return p * scale;
}

/// e^x - 1 in double, branch-free: a degree-14 Taylor polynomial for
/// |x| < ln(2)/2 (truncation < 1e-18 relative), vectorExp(x) - 1 beyond (it
/// is then at least 0.29 in magnitude, so the subtraction loses < 2 bits).
/// Relative error < 1e-15.
inline double vectorExpm1(double x) {
  double p = 1.0 / 87178291200.0; // 1/14!
  p = p * x + 1.0 / 6227020800.0;
  p = p * x + 1.0 / 479001600.0;
  p = p * x + 1.0 / 39916800.0;
  p = p * x + 1.0 / 3628800.0;
  p = p * x + 1.0 / 362880.0;
  p = p * x + 1.0 / 40320.0;
  p = p * x + 1.0 / 5040.0;
  p = p * x + 1.0 / 720.0;
  p = p * x + 1.0 / 120.0;
  p = p * x + 1.0 / 24.0;
  p = p * x + 1.0 / 6.0;
  p = p * x + 0.5;
  p = p * x + 1.0;
  const double small = p * x;
  const double large = vectorExp(x) - 1.0;
  return std::fabs(x) < 0.34657359027997264 ? small : large;
}

/// tanh in double from one expm1 of -2|x| without cancellation:
/// tanh|x| = -m / (2 + m), m = e^(-2|x|) - 1. Relative error < 2e-15; keeps
/// the sign of zero; NaN stays NaN.
inline double vectorTanh(double x) {
  const double m = vectorExpm1(-2.0 * std::fabs(x));
  return std::copysign(-m / (2.0 + m), x);
}

template <typename F> inline void mapInPlace(float *x, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(f(double(x[i])));
}

/// row[i] = f(row[i], s), or f(s, row[i]) when `reverse`.
template <typename T, typename F>
inline void applyScalar(T *row, int64_t n, T s, bool reverse, F f) {
  if (reverse)
    for (int64_t i = 0; i < n; ++i)
      row[i] = f(s, row[i]);
  else
    for (int64_t i = 0; i < n; ++i)
      row[i] = f(row[i], s);
}

bool isAluOp(AluOp op) { return unsigned(op) <= unsigned(AluOp::BitwiseOr); }

bool isActivationFunc(ActivationFunc func) {
  return unsigned(func) <= unsigned(ActivationFunc::Negate);
}

/// func over x[0..n): evaluated in double on the fp32 input and rounded to
/// fp32 (docs/isa.md §5.4). Exact functions stand in for the hardware's
/// piecewise polynomials, which are invalid outside their input ranges.
bool applyActivation(ActivationFunc func, float *x, int64_t n) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  constexpr double kInvSqrt2 = 0.70710678118654752440;
  constexpr double kInvSqrt2Pi = 0.39894228040143267794;
  constexpr double kGeluCubic = 0.044715;
  switch (func) {
  case ActivationFunc::Copy:
    return true;
  case ActivationFunc::Exp:
    mapInPlace(x, n, [](double v) { return vectorExp(v); });
    return true;
  case ActivationFunc::Log:
    mapInPlace(x, n, [](double v) { return std::log(v); });
    return true;
  case ActivationFunc::Tanh:
    mapInPlace(x, n, [](double v) { return vectorTanh(v); });
    return true;
  case ActivationFunc::Sigmoid:
    mapInPlace(x, n, [](double v) { return 1.0 / (1.0 + vectorExp(-v)); });
    return true;
  case ActivationFunc::Relu:
    mapInPlace(x, n, [](double v) { return v > 0.0 || v != v ? v : 0.0; });
    return true;
  case ActivationFunc::Gelu:
    mapInPlace(x, n, [](double v) {
      return 0.5 * v * (1.0 + std::erf(v * kInvSqrt2));
    });
    return true;
  case ActivationFunc::GeluTanh:
    // 0.5 v (1 + tanh u) = v / (1 + e^(-2u)): one exp, and no cancellation
    // in 1 + tanh u for negative u.
    mapInPlace(x, n, [](double v) {
      double inner = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
      return v / (1.0 + vectorExp(-2.0 * inner));
    });
    return true;
  case ActivationFunc::GeluDerivative:
    mapInPlace(x, n, [](double v) {
      double cdf = 0.5 * (1.0 + std::erf(v * kInvSqrt2));
      double pdf = kInvSqrt2Pi * vectorExp(-0.5 * v * v);
      return cdf + v * pdf;
    });
    return true;
  case ActivationFunc::GeluTanhDerivative:
    // 0.5 (1 + tanh u) + 0.5 v (1 - tanh^2 u) u'. With e = e^(-2|u|) and
    // s = 1 / (1 + e): 0.5 (1 + tanh u) is s (u >= 0) or e s (u < 0), and
    // 1 - tanh^2 u = 4 e s^2, free of cancellation in both tails. Beyond
    // |u| = 354 e^(-2|u|) is below double's range (the exp clamps), so the
    // sech^2 term is 0 there, as it is in double arithmetic.
    mapInPlace(x, n, [](double v) {
      double inner = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
      double dInner = kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * v * v);
      double a = std::fabs(inner);
      double e = vectorExp(-2.0 * a);
      double s = 1.0 / (1.0 + e);
      double half = inner >= 0.0 ? s : e * s;
      double sech2 = a > 354.0 ? 0.0 : 4.0 * e * s * s;
      return half + 0.5 * v * sech2 * dInner;
    });
    return true;
  case ActivationFunc::Silu:
    mapInPlace(x, n, [](double v) { return v / (1.0 + vectorExp(-v)); });
    return true;
  case ActivationFunc::Erf:
    mapInPlace(x, n, [](double v) { return std::erf(v); });
    return true;
  case ActivationFunc::Sqrt:
    mapInPlace(x, n, [](double v) { return std::sqrt(v); });
    return true;
  case ActivationFunc::Rsqrt:
    mapInPlace(x, n, [](double v) { return 1.0 / std::sqrt(v); });
    return true;
  case ActivationFunc::Reciprocal:
    mapInPlace(x, n, [](double v) { return 1.0 / v; });
    return true;
  case ActivationFunc::Square:
    mapInPlace(x, n, [](double v) { return v * v; });
    return true;
  case ActivationFunc::Sin:
    mapInPlace(x, n, [](double v) { return std::sin(v); });
    return true;
  case ActivationFunc::Cos:
    mapInPlace(x, n, [](double v) { return std::cos(v); });
    return true;
  case ActivationFunc::Abs:
    mapInPlace(x, n, [](double v) { return std::fabs(v); });
    return true;
  case ActivationFunc::Sign:
    mapInPlace(x, n, [](double v) {
      return v > 0.0 ? 1.0 : v < 0.0 ? -1.0 : v; // keeps +-0 and NaN
    });
    return true;
  case ActivationFunc::Floor:
    mapInPlace(x, n, [](double v) { return std::floor(v); });
    return true;
  case ActivationFunc::Log1p:
    mapInPlace(x, n, [](double v) { return std::log1p(v); });
    return true;
  case ActivationFunc::Negate:
    mapInPlace(x, n, [](double v) { return -v; });
    return true;
  }
  return false;
}

/// Calls fn(p, linearIndex, affineFreePart) over the access pattern's logical
/// index space (its own dims, before any merging), in element order.
template <typename Fn>
void forEachLogicalIndex(const AccessPattern &ap,
                         const std::vector<int64_t> &steps, Fn &&fn) {
  int64_t sizes[4] = {1, 1, 1, 1};
  int64_t stepOf[4] = {0, 0, 0, 0};
  const size_t dims = ap.dims.size();
  for (size_t d = 0; d < dims; ++d) {
    sizes[4 - dims + d] = ap.dims[d].size;
    stepOf[4 - dims + d] = steps[d];
  }
  int64_t index = 0;
  for (unsigned p = 0; p < ap.numPartitions; ++p)
    for (int64_t i0 = 0; i0 < sizes[0]; ++i0)
      for (int64_t i1 = 0; i1 < sizes[1]; ++i1)
        for (int64_t i2 = 0; i2 < sizes[2]; ++i2)
          for (int64_t i3 = 0; i3 < sizes[3]; ++i3)
            fn(p, index++,
               i0 * stepOf[0] + i1 * stepOf[1] + i2 * stepOf[2] +
                   i3 * stepOf[3]);
}

bool compareWithZero(CompareOp compare, int64_t value) {
  switch (compare) {
  case CompareOp::Eq:
    return value == 0;
  case CompareOp::Ne:
    return value != 0;
  case CompareOp::Lt:
    return value < 0;
  case CompareOp::Le:
    return value <= 0;
  case CompareOp::Gt:
    return value > 0;
  case CompareOp::Ge:
    return value >= 0;
  }
  return false;
}

} // namespace

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

bool SimulatorCoreBase::operand(const AccessPattern &ap, const char *name,
                                TileView &view, bool decoded) {
  if (!makeView(ap, name, view, decoded))
    return false;
  switch (currentEngine) {
  case Engine::Dma:
    if (ap.memory == Memory::Psum)
      return fail(std::string(name) +
                  " is in PSUM; DMA moves data between HBM and SBUF only");
    return true;
  case Engine::GpSimd:
    if (ap.memory != Memory::Sbuf)
      return fail(std::string(name) + " is in " + memoryName(ap.memory) +
                  "; GpSimd accesses SBUF only");
    return true;
  default:
    if (ap.memory == Memory::Hbm)
      return fail(std::string(name) +
                  " is in HBM; compute engines access SBUF and PSUM only");
    return true;
  }
}

bool SimulatorCoreBase::sameShape(const TileView &a, const TileView &b,
                                  const char *aName, const char *bName) {
  if (a.partitions == b.partitions && a.freeElements == b.freeElements)
    return true;
  return fail(std::string(aName) + " is [" + std::to_string(a.partitions) +
              ", " + std::to_string(a.freeElements) + "] but " + bName +
              " is [" + std::to_string(b.partitions) + ", " +
              std::to_string(b.freeElements) + "]");
}

bool SimulatorCoreBase::scalarValues(const ScalarOperand &scalar,
                                     unsigned partitions, const char *name,
                                     float *out) {
  if (scalar.isImmediate) {
    std::fill(out, out + partitions, scalar.immediate);
    return true;
  }
  TileView view;
  if (!operand(scalar.column, name, view))
    return false;
  if (view.partitions != partitions || view.freeElements != 1)
    return fail(std::string(name) + " must be a [" +
                std::to_string(partitions) + ", 1] column, not [" +
                std::to_string(view.partitions) + ", " +
                std::to_string(view.freeElements) + "]");
  // Timing only: checked, not read (no arithmetic uses the values).
  if (!options.timingOnly)
    decodeTile(view, out);
  return true;
}

void SimulatorCoreBase::noteWrite(const TileView &view, ExecResult &result) {
  if (view.memory == Memory::Hbm)
    return;
  result.written.valid = true;
  result.written.memory = view.memory;
  result.written.firstPartition = view.startPartition;
  result.written.endPartition = view.startPartition + view.partitions;
  result.written.minByte = view.minByte;
  result.written.endByte = view.endByte;
}

void SimulatorCoreBase::copySameDType(const TileView &src,
                                      const TileView &dst) {
  if (!viewsMayOverlap(src, dst)) {
    // Element order is [partition][free] on both sides, so partition p of
    // src goes to partition p of dst.
    const unsigned P = src.partitions;
    const int64_t pieces = partitionPieces(P, src.totalElements());
    forEachPiece(pieces, [&](int64_t i) {
      const unsigned first = unsigned(P * i / pieces),
                     end = unsigned(P * (i + 1) / pieces);
      copyElements(partitionSlice(src, first, end - first),
                   partitionSlice(dst, first, end - first));
    });
    return;
  }
  // Overlapping views: every element is read before any is written.
  ensureSize(rawA, src.totalElements() * int64_t(src.elementBytes));
  gatherBytes(src, rawA.data());
  scatterBytes(rawA.data(), dst);
}

void SimulatorCoreBase::copyConverting(const TileView &src, const TileView &dst,
                                       bool exactIntegers) {
  const int64_t count = src.totalElements();
  if (src.dtype == dst.dtype) {
    copySameDType(src, dst);
  } else if (exactIntegers && isIntegerDType(src.dtype) &&
             isIntegerDType(dst.dtype)) {
    ensureSize(intA, count);
    decodeTileInt(src, intA.data());
    encodeTileInt(intA.data(), dst);
  } else {
    ensureSize(bufA, count);
    decodeTile(src, bufA.data());
    encodeTile(bufA.data(), dst);
  }
}

/// GpSimd computes add and multiply on integer operands in int32 (§2.5);
/// bitwise operators work on integer bits everywhere. Everything else is
/// fp32.
static bool usesIntegerAlu(Engine engine, AluOp op) {
  return isBitwise(op) || (engine == Engine::GpSimd &&
                           (op == AluOp::Add || op == AluOp::Multiply));
}

static unsigned maxElementBytes(std::initializer_list<const TileView *> views) {
  unsigned bytes = 1;
  for (const TileView *view : views)
    bytes = std::max(bytes, view->elementBytes);
  return bytes;
}

static bool anyStridePenalty(const Target &target,
                             std::initializer_list<const TileView *> views) {
  for (const TileView *view : views)
    if (view && std::abs(view->innermostStride) * int64_t(view->elementBytes) >
                    int64_t(target.fastStrideBytes))
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

bool SimulatorCoreBase::execute(Engine engine, const Instruction &inst,
                                ExecResult &result) {
  currentEngine = engine;
  const OpcodeInfo *info = opcodeInfo(inst.opcode);
  if (!info)
    return fail("unknown opcode " + std::to_string(unsigned(inst.opcode)));
  if (info->sources != kAnySources && inst.srcs.size() != size_t(info->sources))
    return fail("expects " + std::to_string(info->sources) +
                " source operand(s), has " + std::to_string(inst.srcs.size()));
  switch (inst.opcode) {
#define TRN_OPCODE(Name, mnemonic, engines, sources, sourceNames, Semantics)   \
  case Opcode::Name:                                                           \
    return exec##Semantics(inst, result);
#include "trnrt/Isa.def"
  }
  return fail("unknown opcode " + std::to_string(unsigned(inst.opcode)));
}

bool SimulatorCoreBase::execCollective(const Instruction &, ExecResult &) {
  // The simulator runs collectives through executeCollective.
  return fail("collectives are not supported yet by the simulator");
}

//===----------------------------------------------------------------------===//
// Scalar Engine
//===----------------------------------------------------------------------===//

bool SimulatorCoreBase::execActivation(const Instruction &inst,
                                       ExecResult &result) {
  TileView src, dst;
  if (!operand(inst.srcs[0], "src (srcs[0])", src) ||
      !operand(inst.dst, "dst", dst) || !sameShape(src, dst, "src", "dst"))
    return false;
  const unsigned P = src.partitions;
  const int64_t F = src.freeElements;
  ensureSize(bufA, P * F);
  ensureSize(bufB, 3 * int64_t(P));
  float *scale = bufB.data(), *bias = scale + P, *sums = bias + P;
  if (!scalarValues(inst.scale, P, "scale column", scale) ||
      !scalarValues(inst.bias, P, "bias column", bias))
    return false;
  TileView reduceDst;
  if (inst.accumulateRow) {
    if (!operand(inst.reduceDst, "reduceDst", reduceDst))
      return false;
    if (reduceDst.partitions != P || reduceDst.freeElements != 1)
      return fail("reduceDst must be a [" + std::to_string(P) + ", 1] tile");
  }
  if (!isActivationFunc(inst.func))
    return fail("unknown activation function " +
                std::to_string(unsigned(inst.func)));
  float *x = bufA.data();
  if (!options.timingOnly)
    elementwisePieces(
        P, int64_t(P) * F, viewsMayOverlap(src, dst),
        [&](unsigned first, unsigned count) {
          decodeTile(partitionSlice(src, first, count), x + int64_t(first) * F);
        },
        [&](unsigned first, unsigned count) {
          for (unsigned p = first; p < first + count; ++p) {
            float *row = x + int64_t(p) * F;
            const float s = scale[p], b = bias[p];
            for (int64_t j = 0; j < F; ++j)
              row[j] = row[j] * s + b;
          }
          applyActivation(inst.func, x + int64_t(first) * F,
                          int64_t(count) * F);
          if (inst.accumulateRow) {
            // The accumulator adds the fp32 results, before the output cast.
            for (unsigned p = first; p < first + count; ++p) {
              const float *row = x + int64_t(p) * F;
              float sum = 0.0f;
              for (int64_t j = 0; j < F; ++j)
                sum += row[j];
              sums[p] = sum;
            }
          }
          encodeTile(x + int64_t(first) * F, partitionSlice(dst, first, count));
        });
  if (inst.accumulateRow && !options.timingOnly)
    encodeTile(sums, reduceDst);
  result.shape.freeElements = F;
  result.shape.stridePenalty = anyStridePenalty(target, {&src, &dst});
  noteWrite(dst, result);
  return true;
}

//===----------------------------------------------------------------------===//
// Vector Engine and GpSimd
//===----------------------------------------------------------------------===//

bool SimulatorCoreBase::execTensorTensor(const Instruction &inst,
                                         ExecResult &result) {
  const Engine engine = currentEngine;
  TileView a, b, dst;
  if (!operand(inst.srcs[0], "srcs[0]", a) ||
      !operand(inst.srcs[1], "srcs[1]", b) || !operand(inst.dst, "dst", dst) ||
      !sameShape(a, b, "srcs[0]", "srcs[1]") ||
      !sameShape(a, dst, "srcs[0]", "dst"))
    return false;
  if (a.memory == Memory::Psum && b.memory == Memory::Psum)
    return fail("tensor_tensor cannot read both inputs from PSUM");
  const int64_t count = a.totalElements();
  const AluOp op = inst.op0;
  const bool intPath = isIntegerDType(a.dtype) && isIntegerDType(b.dtype) &&
                       isIntegerDType(dst.dtype) && usesIntegerAlu(engine, op);
  bool known;
  if (options.timingOnly) {
    known = intPath ? dispatchAlu<int64_t>(op, [](auto) {}) : isAluOp(op);
  } else if (intPath) {
    ensureSize(intA, count);
    ensureSize(intB, count);
    int64_t *x = intA.data();
    const int64_t *y = intB.data();
    decodeTileInt(a, x);
    decodeTileInt(b, intB.data());
    known = dispatchAlu<int64_t>(op, [&](auto f) {
      for (int64_t i = 0; i < count; ++i)
        x[i] = f(x[i], y[i]);
    });
    if (known)
      encodeTileInt(x, dst);
  } else if ((known = isAluOp(op))) {
    ensureSize(bufA, count);
    ensureSize(bufB, count);
    float *x = bufA.data(), *y = bufB.data();
    const unsigned P = a.partitions;
    const int64_t F = a.freeElements;
    elementwisePieces(
        P, count, viewsMayOverlap(a, dst) || viewsMayOverlap(b, dst),
        [&](unsigned first, unsigned rows) {
          decodeTile(partitionSlice(a, first, rows), x + first * F);
          decodeTile(partitionSlice(b, first, rows), y + first * F);
        },
        [&](unsigned first, unsigned rows) {
          float *xs = x + first * F;
          const float *ys = y + first * F;
          const int64_t n = int64_t(rows) * F;
          dispatchAlu<float>(op, [&](auto f) {
            for (int64_t i = 0; i < n; ++i)
              xs[i] = f(xs[i], ys[i]);
          });
          encodeTile(xs, partitionSlice(dst, first, rows));
        });
  }
  if (!known)
    return fail("unknown ALU op " + std::to_string(unsigned(op)));
  result.shape.freeElements = a.freeElements;
  result.shape.psumInput = a.memory == Memory::Psum || b.memory == Memory::Psum;
  result.shape.fastBf16 =
      a.dtype == DType::BF16 && b.dtype == DType::BF16 &&
      dst.dtype == DType::BF16 && a.memory == Memory::Sbuf &&
      b.memory == Memory::Sbuf &&
      (op == AluOp::Add || op == AluOp::Subtract || op == AluOp::Multiply) &&
      a.innermostStride == 1 && b.innermostStride == 1 &&
      dst.innermostStride == 1;
  result.shape.stridePenalty = anyStridePenalty(target, {&a, &b, &dst});
  result.shape.tensorInputs = 2;
  result.shape.maxElementBytes = maxElementBytes({&a, &b, &dst});
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execTensorScalar(const Instruction &inst,
                                         ExecResult &result) {
  const Engine engine = currentEngine;
  TileView src, dst;
  if (!operand(inst.srcs[0], "src (srcs[0])", src) ||
      !operand(inst.dst, "dst", dst) || !sameShape(src, dst, "src", "dst"))
    return false;
  const unsigned P = src.partitions;
  const int64_t F = src.freeElements;
  ensureSize(bufB, 2 * int64_t(P));
  float *s0 = bufB.data(), *s1 = s0 + P;
  if ((inst.op0 != AluOp::Bypass &&
       !scalarValues(inst.scalar0, P, "scalar0 column", s0)) ||
      (inst.op1 != AluOp::Bypass &&
       !scalarValues(inst.scalar1, P, "scalar1 column", s1)))
    return false;
  const bool intPath =
      isIntegerDType(src.dtype) && isIntegerDType(dst.dtype) &&
      (inst.op0 == AluOp::Bypass || usesIntegerAlu(engine, inst.op0)) &&
      (inst.op1 == AluOp::Bypass || usesIntegerAlu(engine, inst.op1)) &&
      (inst.op0 != AluOp::Bypass || inst.op1 != AluOp::Bypass);
  struct Step {
    AluOp op;
    const float *scalars;
    bool reverse;
  } steps[2] = {{inst.op0, s0, inst.reverse0}, {inst.op1, s1, inst.reverse1}};
  if (intPath) {
    ensureSize(intA, int64_t(P) * F);
    int64_t *x = intA.data();
    if (!options.timingOnly)
      decodeTileInt(src, x);
    for (const Step &step : steps) {
      if (step.op == AluOp::Bypass)
        continue;
      bool known = dispatchAlu<int64_t>(step.op, [&](auto f) {
        if (options.timingOnly)
          return;
        for (unsigned p = 0; p < P; ++p) {
          int64_t *row = x + int64_t(p) * F;
          // Immediates and columns convert toward zero (docs/isa.md §5.2).
          applyScalar(row, F, floatToInteger(step.scalars[p], DType::I32),
                      step.reverse, f);
        }
      });
      if (!known)
        return fail("unknown ALU op " + std::to_string(unsigned(step.op)));
    }
    if (!options.timingOnly)
      encodeTileInt(x, dst);
  } else {
    for (const Step &step : steps)
      if (!isAluOp(step.op))
        return fail("unknown ALU op " + std::to_string(unsigned(step.op)));
    ensureSize(bufA, int64_t(P) * F);
    float *x = bufA.data();
    if (!options.timingOnly)
      elementwisePieces(
          P, int64_t(P) * F, viewsMayOverlap(src, dst),
          [&](unsigned first, unsigned count) {
            decodeTile(partitionSlice(src, first, count), x + first * F);
          },
          [&](unsigned first, unsigned count) {
            for (const Step &step : steps) {
              if (step.op == AluOp::Bypass)
                continue;
              dispatchAlu<float>(step.op, [&](auto f) {
                for (unsigned p = first; p < first + count; ++p) {
                  applyScalar(x + int64_t(p) * F, F, step.scalars[p],
                              step.reverse, f);
                }
              });
            }
            encodeTile(x + first * F, partitionSlice(dst, first, count));
          });
  }
  result.shape.freeElements = F;
  result.shape.stridePenalty = anyStridePenalty(target, {&src, &dst});
  result.shape.maxElementBytes = maxElementBytes({&src, &dst});
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execTensorReduce(const Instruction &inst,
                                         ExecResult &result) {
  const Engine engine = currentEngine;
  TileView src, dst;
  if (!operand(inst.srcs[0], "src (srcs[0])", src) ||
      !operand(inst.dst, "dst", dst))
    return false;
  const unsigned P = src.partitions;
  const int64_t F = src.freeElements;
  if (dst.partitions != P || dst.freeElements != 1)
    return fail("tensor_reduce dst must be a [" + std::to_string(P) +
                ", 1] tile");
  const AluOp op = inst.op0;
  if (!isReduction(op))
    return fail(std::string("ALU op ") + aluOpName(op) + " is not a reduction");
  const bool intPath = isIntegerDType(src.dtype) && isIntegerDType(dst.dtype) &&
                       usesIntegerAlu(engine, op);
  if (options.timingOnly) {
    // Costed below from the shapes alone.
  } else if (intPath) {
    ensureSize(intA, int64_t(P) * F + P);
    int64_t *x = intA.data(), *out = x + int64_t(P) * F;
    decodeTileInt(src, x);
    dispatchAlu<int64_t>(op, [&](auto f) {
      for (unsigned p = 0; p < P; ++p) {
        const int64_t *row = x + int64_t(p) * F;
        int64_t acc = row[0];
        for (int64_t i = 1; i < F; ++i)
          acc = f(acc, row[i]);
        out[p] = inst.negate ? int64_t(0 - uint64_t(acc)) : acc;
      }
    });
    encodeTileInt(out, dst);
  } else {
    ensureSize(bufA, int64_t(P) * F + P);
    float *x = bufA.data(), *out = x + int64_t(P) * F;
    decodeTile(src, x);
    // Sequential fp32 accumulation along the free dims, as the lane streams.
    dispatchAlu<float>(op, [&](auto f) {
      for (unsigned p = 0; p < P; ++p) {
        const float *row = x + int64_t(p) * F;
        float acc = row[0];
        for (int64_t i = 1; i < F; ++i)
          acc = f(acc, row[i]);
        out[p] = inst.negate ? -acc : acc;
      }
    });
    encodeTile(out, dst);
  }
  result.shape.freeElements = F;
  result.shape.fastBf16 = src.dtype == DType::BF16 &&
                          dst.dtype == DType::BF16 &&
                          (op == AluOp::Add || op == AluOp::Max);
  result.shape.stridePenalty = anyStridePenalty(target, {&src});
  result.shape.maxElementBytes = maxElementBytes({&src, &dst});
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execTensorCopy(const Instruction &inst,
                                       ExecResult &result) {
  TileView src, dst;
  if (!operand(inst.srcs[0], "src (srcs[0])", src) ||
      !operand(inst.dst, "dst", dst) || !sameShape(src, dst, "src", "dst"))
    return false;
  // Timing only: costed below from the shapes alone.
  if (!options.timingOnly)
    copyConverting(src, dst, /*exactIntegers=*/true);
  result.shape.freeElements = src.freeElements;
  result.shape.stridePenalty = anyStridePenalty(target, {&src, &dst});
  result.shape.maxElementBytes = maxElementBytes({&src, &dst});
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execSelect(const Instruction &inst,
                                   ExecResult &result) {
  TileView pred, onTrue, onFalse, dst;
  if (!operand(inst.srcs[0], "predicate (srcs[0])", pred) ||
      !operand(inst.srcs[1], "on_true (srcs[1])", onTrue) ||
      !operand(inst.srcs[2], "on_false (srcs[2])", onFalse) ||
      !operand(inst.dst, "dst", dst) ||
      !sameShape(pred, dst, "predicate", "dst") ||
      !sameShape(onTrue, dst, "on_true", "dst") ||
      !sameShape(onFalse, dst, "on_false", "dst"))
    return false;
  const int64_t count = dst.totalElements();
  ensureSize(bufC, count);
  float *predicate = bufC.data();
  if (!options.timingOnly)
    decodeTile(pred, predicate);
  if (options.timingOnly) {
    // Costed below from the shapes alone.
  } else if (onTrue.dtype == dst.dtype && onFalse.dtype == dst.dtype) {
    // Same dtype everywhere: a bit-exact choice between the two inputs.
    const size_t size = dst.elementBytes;
    ensureSize(rawA, 2 * count * int64_t(size));
    uint8_t *x = rawA.data(), *y = x + size_t(count) * size;
    gatherBytes(onTrue, x);
    gatherBytes(onFalse, y);
    for (int64_t i = 0; i < count; ++i)
      if (predicate[i] == 0.0f)
        std::memcpy(x + size_t(i) * size, y + size_t(i) * size, size);
    scatterBytes(x, dst);
  } else if (isIntegerDType(onTrue.dtype) && isIntegerDType(onFalse.dtype) &&
             isIntegerDType(dst.dtype)) {
    ensureSize(intA, count);
    ensureSize(intB, count);
    decodeTileInt(onTrue, intA.data());
    decodeTileInt(onFalse, intB.data());
    for (int64_t i = 0; i < count; ++i)
      if (predicate[i] == 0.0f)
        intA[i] = intB[i];
    encodeTileInt(intA.data(), dst);
  } else {
    ensureSize(bufA, count);
    ensureSize(bufB, count);
    float *x = bufA.data();
    const float *y = bufB.data();
    decodeTile(onTrue, x);
    decodeTile(onFalse, bufB.data());
    for (int64_t i = 0; i < count; ++i)
      x[i] = predicate[i] != 0.0f ? x[i] : y[i];
    encodeTile(x, dst);
  }
  result.shape.freeElements = dst.freeElements;
  result.shape.psumInput = pred.memory == Memory::Psum ||
                           onTrue.memory == Memory::Psum ||
                           onFalse.memory == Memory::Psum;
  result.shape.stridePenalty =
      anyStridePenalty(target, {&pred, &onTrue, &onFalse, &dst});
  result.shape.tensorInputs = 3;
  result.shape.maxElementBytes =
      maxElementBytes({&pred, &onTrue, &onFalse, &dst});
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execBnStats(const Instruction &inst,
                                    ExecResult &result) {
  TileView src, dst;
  if (!operand(inst.srcs[0], "src (srcs[0])", src) ||
      !operand(inst.dst, "dst", dst))
    return false;
  const unsigned P = src.partitions;
  const int64_t F = src.freeElements;
  if (F > int64_t(target.bnStatsMaxFree))
    return fail("bn_stats over " + std::to_string(F) +
                " elements per partition; at most " +
                std::to_string(target.bnStatsMaxFree));
  if (dst.partitions != P || dst.freeElements != 6)
    return fail("bn_stats dst must be a [" + std::to_string(P) + ", 6] tile");
  ensureSize(bufA, int64_t(P) * F + 6 * int64_t(P));
  float *x = bufA.data(), *out = x + int64_t(P) * F;
  if (!options.timingOnly)
    decodeTile(src, x);
  for (unsigned p = 0; p < P && !options.timingOnly; ++p) {
    const float *row = x + int64_t(p) * F;
    // (count, mean, M2 = sum of squared deviations) of the elements at even
    // free indices, then of those at odd ones; fp32, two passes.
    for (int parity = 0; parity < 2; ++parity) {
      float count = 0.0f, sum = 0.0f;
      for (int64_t i = parity; i < F; i += 2) {
        sum += row[i];
        count += 1.0f;
      }
      float mean = count > 0.0f ? sum / count : 0.0f;
      float m2 = 0.0f;
      for (int64_t i = parity; i < F; i += 2) {
        float d = row[i] - mean;
        m2 += d * d;
      }
      float *tuple = out + 6 * int64_t(p) + 3 * parity;
      tuple[0] = count;
      tuple[1] = mean;
      tuple[2] = m2;
    }
  }
  if (!options.timingOnly)
    encodeTile(out, dst);
  result.shape.freeElements = F;
  result.shape.stridePenalty = anyStridePenalty(target, {&src});
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execBnAggr(const Instruction &inst,
                                   ExecResult &result) {
  TileView src, dst;
  if (!operand(inst.srcs[0], "src (srcs[0])", src) ||
      !operand(inst.dst, "dst", dst))
    return false;
  const unsigned P = src.partitions;
  const int64_t F = src.freeElements;
  if (F % 3 != 0)
    return fail("bn_aggr input has " + std::to_string(F) +
                " elements per partition, not a whole number of (count, "
                "mean, M2) tuples");
  if (dst.partitions != P || dst.freeElements != 2)
    return fail("bn_aggr dst must be a [" + std::to_string(P) + ", 2] tile");
  ensureSize(bufA, int64_t(P) * F + 2 * int64_t(P));
  float *x = bufA.data(), *out = x + int64_t(P) * F;
  if (!options.timingOnly)
    decodeTile(src, x);
  for (unsigned p = 0; p < P && !options.timingOnly; ++p) {
    const float *row = x + int64_t(p) * F;
    // Chan's parallel formula in two passes (docs/isa.md §5.2): the pooled
    // mean, then the within-tuple M2s plus the between-tuple spread.
    float count = 0.0f, weighted = 0.0f;
    for (int64_t t = 0; t < F; t += 3) {
      count += row[t];
      weighted += row[t] * row[t + 1];
    }
    float mean = 0.0f, variance = 0.0f;
    if (count > 0.0f) {
      mean = weighted / count;
      float m2 = 0.0f;
      for (int64_t t = 0; t < F; t += 3) {
        float delta = row[t + 1] - mean;
        m2 += row[t + 2] + row[t] * delta * delta;
      }
      variance = m2 / count;
    }
    out[2 * p] = mean;
    out[2 * p + 1] = variance;
  }
  if (!options.timingOnly)
    encodeTile(out, dst);
  result.shape.freeElements = F;
  result.shape.stridePenalty = anyStridePenalty(target, {&src});
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execMemset(const Instruction &inst,
                                   ExecResult &result) {
  TileView dst;
  if (!operand(inst.dst, "dst", dst))
    return false;
  const int64_t count = dst.totalElements();
  if (!options.timingOnly) {
    ensureSize(bufA, count);
    std::fill(bufA.begin(), bufA.begin() + count, inst.value);
    encodeTile(bufA.data(), dst);
  }
  result.shape.freeElements = dst.freeElements;
  result.shape.fastBf16 = inst.value == 0.0f &&
                          (dst.dtype == DType::BF16 || dst.dtype == DType::F16);
  result.shape.stridePenalty = anyStridePenalty(target, {&dst});
  result.shape.maxElementBytes = dst.elementBytes;
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execIota(const Instruction &inst, ExecResult &result) {
  TileView dst;
  if (!operand(inst.dst, "dst", dst))
    return false;
  if (inst.steps.size() != inst.dst.dims.size())
    return fail("iota has " + std::to_string(inst.steps.size()) +
                " steps for " + std::to_string(inst.dst.dims.size()) +
                " free dims");
  const int64_t count = options.timingOnly ? 0 : dst.totalElements();
  ensureSize(intA, count);
  int64_t *values = intA.data();
  // int32 arithmetic (wrapping), p counted from the tile's first partition.
  if (!options.timingOnly)
    forEachLogicalIndex(
        inst.dst, inst.steps, [&](unsigned p, int64_t index, int64_t freePart) {
          uint64_t value = uint64_t(inst.base) +
                           uint64_t(p) * uint64_t(inst.channelMultiplier) +
                           uint64_t(freePart);
          values[index] = int32_t(uint32_t(value));
        });
  if (options.timingOnly) {
    // Costed below from the shapes alone.
  } else if (isIntegerDType(dst.dtype)) {
    encodeTileInt(values, dst);
  } else {
    ensureSize(bufA, count);
    for (int64_t i = 0; i < count; ++i)
      bufA[i] = float(values[i]);
    encodeTile(bufA.data(), dst);
  }
  result.shape.freeElements = dst.freeElements;
  result.shape.stridePenalty = anyStridePenalty(target, {&dst});
  result.shape.maxElementBytes = dst.elementBytes;
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execAffineSelect(const Instruction &inst,
                                         ExecResult &result) {
  TileView src, dst;
  if (!operand(inst.srcs[0], "on_true (srcs[0])", src) ||
      !operand(inst.dst, "dst", dst) || !sameShape(src, dst, "on_true", "dst"))
    return false;
  if (inst.steps.size() != inst.dst.dims.size())
    return fail("affine_select has " + std::to_string(inst.steps.size()) +
                " steps for " + std::to_string(inst.dst.dims.size()) +
                " free dims of dst");
  const int64_t count = dst.totalElements();
  // keep[i]: the affine expression (int32, wrapping, as iota) compares true.
  ensureSize(rawA, options.timingOnly ? 0 : count);
  uint8_t *keep = rawA.data();
  if (!options.timingOnly)
    forEachLogicalIndex(
        inst.dst, inst.steps, [&](unsigned p, int64_t index, int64_t freePart) {
          uint64_t value = uint64_t(inst.base) +
                           uint64_t(p) * uint64_t(inst.channelMultiplier) +
                           uint64_t(freePart);
          keep[index] = compareWithZero(inst.compare, int32_t(uint32_t(value)));
        });
  if (options.timingOnly) {
    // Costed below from the shapes alone.
  } else if (isIntegerDType(src.dtype) && isIntegerDType(dst.dtype)) {
    ensureSize(intA, count);
    int64_t *x = intA.data();
    decodeTileInt(src, x);
    const int64_t fill = floatToInteger(inst.value, DType::I64);
    for (int64_t i = 0; i < count; ++i)
      if (!keep[i])
        x[i] = fill;
    encodeTileInt(x, dst);
  } else {
    ensureSize(bufA, count);
    float *x = bufA.data();
    decodeTile(src, x);
    for (int64_t i = 0; i < count; ++i)
      if (!keep[i])
        x[i] = inst.value;
    encodeTile(x, dst);
  }
  result.shape.freeElements = dst.freeElements;
  result.shape.stridePenalty = anyStridePenalty(target, {&src, &dst});
  result.shape.maxElementBytes = maxElementBytes({&src, &dst});
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execRng(const Instruction &inst, ExecResult &result) {
  TileView seedView, dst;
  if (!operand(inst.srcs[0], "seed (srcs[0])", seedView) ||
      !operand(inst.dst, "dst", dst))
    return false;
  if (inst.steps.size() != inst.dst.dims.size())
    return fail("rng has " + std::to_string(inst.steps.size()) + " steps for " +
                std::to_string(inst.dst.dims.size()) + " free dims of dst");
  if (seedView.dtype != DType::I32 || seedView.freeElements != 2 ||
      seedView.partitions != dst.partitions)
    return fail("rng seed is not [P, 2] int32 over dst's partitions");
  const int64_t count = options.timingOnly ? 0 : dst.totalElements();
  ensureSize(intB, seedView.totalElements());
  int64_t *seedWords = intB.data();
  decodeTileInt(seedView, seedWords);
  ensureSize(bufA, count);
  float *out = bufA.data();
  const double low = inst.scalar0.immediate, high = inst.scalar1.immediate;
  const uint32_t threshold = uint32_t(inst.value);
  // The counter is int64 (no wrap): element indices of large tensors pass
  // 2^31. Each partition reads its own copy of the seed.
  if (!options.timingOnly)
    forEachLogicalIndex(
        inst.dst, inst.steps, [&](unsigned p, int64_t index, int64_t freePart) {
          uint64_t seed = uint64_t(uint32_t(seedWords[2 * p])) |
                          uint64_t(uint32_t(seedWords[2 * p + 1])) << 32;
          uint64_t counter = uint64_t(inst.base) +
                             uint64_t(p) * uint64_t(inst.channelMultiplier) +
                             uint64_t(freePart);
          uint32_t draw = philoxUniform24(seed, inst.rngStream, counter);
          out[index] =
              inst.bernoulli
                  ? (draw < threshold ? 1.0f : 0.0f)
                  : float(roundToDType(low + (high - low) * (draw * 0x1p-24),
                                       dst.dtype));
        });
  if (!options.timingOnly)
    encodeTile(out, dst);
  result.shape.freeElements = dst.freeElements;
  result.shape.stridePenalty = anyStridePenalty(target, {&seedView, &dst});
  result.shape.maxElementBytes = dst.elementBytes;
  noteWrite(dst, result);
  return true;
}

} // namespace sim
} // namespace trnrt
