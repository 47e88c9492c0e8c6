//===- SimulatorTensorEngine.cpp - matmul and transpose -------------------===//
//
// The Tensor Engine's two opcodes: matmul through OpenBLAS (one thread per
// simulated core) and the exact transpose (docs/isa.md §5).
//
//===----------------------------------------------------------------------===//

#include "SimulatorImpl.h"

#include <cblas.h>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <mutex>

namespace trnrt {
namespace sim {

namespace {

/// The binary exponents of a block's nonzero values, from their exponent
/// fields: the largest (floor(log2 |x|)) and the smallest, counting every
/// subnormal as 2^-149. Computed without branches on the values (it runs on
/// every matmul operand).
struct ExponentRange {
  int highest = -150, lowest = 128;
  bool subnormal() const { return lowest < -126; }
  /// NaN or infinity among the values.
  bool nonFinite() const { return highest > 127; }
};

ExponentRange exponentRange(const float *data, int64_t rows, int64_t columns,
                            int64_t pitch) {
  // Exponent fields; a zero counts as 0x1ff (above any field), a subnormal's
  // field is 0. Signed ints and selects on locals: the loop vectorizes.
  int32_t highest = 0, lowest = 0x1ff;
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t *row = reinterpret_cast<const uint32_t *>(data + r * pitch);
    int32_t rowHighest = highest, rowLowest = lowest;
    for (int64_t c = 0; c < columns; ++c) {
      const int32_t magnitude = int32_t(row[c] & 0x7fffffffu);
      const int32_t field = magnitude >> 23;
      rowHighest = rowHighest > field ? rowHighest : field;
      const int32_t key = field | (((magnitude - 1) >> 31) & 0x1ff);
      rowLowest = rowLowest < key ? rowLowest : key;
    }
    highest = rowHighest;
    lowest = rowLowest;
  }
  ExponentRange range;
  if (lowest == 0x1ff)
    return range; // all zeros
  range.highest = highest == 0xff ? 128 : highest == 0 ? -127 : highest - 127;
  range.lowest = lowest == 0 ? -149 : lowest - 127;
  return range;
}

/// Multiplies the [rows, columns] block at `data`, whose values lie in
/// `range`, by 2^shift in place, exactly, by their exponent fields: the
/// caller's shift keeps every nonzero value normal, and no fp32 operation
/// here takes a subnormal operand.
void scaleByPowerOfTwo(float *data, int64_t rows, int64_t columns,
                       int64_t pitch, const ExponentRange &range, int shift) {
  if (shift == 0)
    return;
  const uint32_t exponentStep = uint32_t(int32_t(shift) * (1 << 23));
  if (!range.subnormal()) {
    for (int64_t r = 0; r < rows; ++r) {
      float *row = data + r * pitch;
      for (int64_t c = 0; c < columns; ++c) {
        uint32_t bits;
        std::memcpy(&bits, &row[c], sizeof(bits));
        bits += (bits & 0x7fffffffu) != 0 ? exponentStep : 0;
        std::memcpy(&row[c], &bits, sizeof(bits));
      }
    }
    return;
  }
  // A subnormal's value is its mantissa (an integer below 2^23) times
  // 2^-149: the integer converts exactly, and 2^(shift - 149) is normal
  // (shift >= 23 when there are subnormals).
  const float subnormalUnit = std::ldexp(1.0f, shift - 149);
  for (int64_t r = 0; r < rows; ++r) {
    float *row = data + r * pitch;
    for (int64_t c = 0; c < columns; ++c) {
      uint32_t bits;
      std::memcpy(&bits, &row[c], sizeof(bits));
      const uint32_t magnitude = bits & 0x7fffffffu;
      const float fromMantissa =
          float(int32_t(magnitude & 0x7fffffu)) * subnormalUnit;
      uint32_t scaled;
      std::memcpy(&scaled, &fromMantissa, sizeof(scaled));
      scaled |= bits & 0x80000000u;
      // A zero's mantissa path gives it back, with its sign.
      bits = (magnitude >> 23) != 0 ? bits + exponentStep : scaled;
      std::memcpy(&row[c], &bits, sizeof(bits));
    }
  }
}

/// ceil(log2 K): a sum of K values below 2^e is below 2^(e + sumBits(K)).
int sumBits(int64_t K) {
  int bits = 0;
  while ((int64_t(1) << bits) < K)
    ++bits;
  return bits;
}

/// The exponent a scaled stationary operand's largest value gets: products
/// with a moving operand up to 2^63 and their sums over K <= 2^7 stay
/// below 2^127.
constexpr int kScaledHighest = 55;

/// c[M,N] (+)= (a 2^-shiftA)[K,M]^T b[K,N] in double, rounded once to
/// fp32: the fallback for blocks whose subnormal operands no scaling makes
/// normal (see matmulValues); `a` may be scaled already (by 2^shiftA).
void matmulInDouble(int64_t M, int64_t N, int64_t K, const float *a,
                    int64_t lda, int shiftA, const float *b, int64_t ldb,
                    bool accumulate, float *c, int64_t ldc) {
  const double unscaleA = std::ldexp(1.0, -shiftA);
  thread_local std::vector<double> da, db, dc;
  da.resize(size_t(K * M));
  db.resize(size_t(K * N));
  dc.resize(size_t(M * N));
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t m = 0; m < M; ++m)
      da[size_t(k * M + m)] = a[k * lda + m] * unscaleA;
    for (int64_t n = 0; n < N; ++n)
      db[size_t(k * N + n)] = b[k * ldb + n];
  }
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      dc[size_t(m * N + n)] = accumulate ? double(c[m * ldc + n]) : 0.0;
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(M), int(N), int(K),
              1.0, da.data(), int(M), db.data(), int(N), 1.0, dc.data(),
              int(N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      c[m * ldc + n] = float(dc[size_t(m * N + n)]);
}

/// c[M,N] (+)= (a 2^shiftA)^T (b 2^shiftB) 2^-(shiftA + shiftB), the scaled
/// operands' product in fp32 and its scaling back (with the accumulation)
/// rounded once to fp32. `a` and `b` are already scaled.
void matmulScaled(int64_t M, int64_t N, int64_t K, const float *a, int64_t lda,
                  const float *b, int64_t ldb, bool accumulate, float *c,
                  int64_t ldc, int shift) {
  thread_local std::vector<float> product;
  product.resize(size_t(M * N));
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(M), int(N), int(K),
              1.0f, a, int(lda), b, int(ldb), 0.0f, product.data(), int(N));
  const double unscale = std::ldexp(1.0, -shift);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double value = double(product[size_t(m * N + n)]) * unscale;
      c[m * ldc + n] =
          float(accumulate ? double(c[m * ldc + n]) + value : value);
    }
}

template <typename T>
void transposeTyped(const uint8_t *in, int64_t inPitch, int64_t inStride,
                    uint8_t *out, int64_t outPitch, int64_t outStride,
                    int64_t P, int64_t F) {
  // 32x32 blocks keep both sides' lines in cache.
  constexpr int64_t kBlock = 32;
  for (int64_t p0 = 0; p0 < P; p0 += kBlock)
    for (int64_t f0 = 0; f0 < F; f0 += kBlock) {
      const int64_t pEnd = std::min(P, p0 + kBlock),
                    fEnd = std::min(F, f0 + kBlock);
      for (int64_t p = p0; p < pEnd; ++p) {
        const uint8_t *row = in + p * inPitch;
        uint8_t *column = out + p * outStride;
        for (int64_t f = f0; f < fEnd; ++f) {
          T value;
          std::memcpy(&value, row + f * inStride, sizeof(T));
          std::memcpy(column + f * outPitch, &value, sizeof(T));
        }
      }
    }
}

/// out(f, p) = in(p, f) for a [P, F] tile of `size`-byte elements: element
/// (p, f) of `in` at p * inPitch + f * inStride bytes, element (f, p) of
/// `out` at f * outPitch + p * outStride.
void transposeBytes(const uint8_t *in, int64_t inPitch, int64_t inStride,
                    uint8_t *out, int64_t outPitch, int64_t outStride,
                    int64_t P, int64_t F, unsigned size) {
  switch (size) {
  case 1:
    return transposeTyped<uint8_t>(in, inPitch, inStride, out, outPitch,
                                   outStride, P, F);
  case 2:
    return transposeTyped<uint16_t>(in, inPitch, inStride, out, outPitch,
                                    outStride, P, F);
  case 4:
    return transposeTyped<uint32_t>(in, inPitch, inStride, out, outPitch,
                                    outStride, P, F);
  default:
    return transposeTyped<uint64_t>(in, inPitch, inStride, out, outPitch,
                                    outStride, P, F);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Tensor Engine
//===----------------------------------------------------------------------===//

namespace {
// Simulators may run on several threads at once (one per simulated core):
// the first to start saves the caller's thread count, the last to finish
// restores it.
std::mutex blasThreadsMutex;
unsigned activeRuns = 0;
int savedBlasThreads = 1;
} // namespace

SingleThreadedBlas::SingleThreadedBlas() {
  std::lock_guard<std::mutex> lock(blasThreadsMutex);
  if (activeRuns++ == 0) {
    savedBlasThreads = openblas_get_num_threads();
    if (savedBlasThreads != 1)
      openblas_set_num_threads(1);
  }
}

SingleThreadedBlas::~SingleThreadedBlas() {
  std::lock_guard<std::mutex> lock(blasThreadsMutex);
  if (--activeRuns == 0 && savedBlasThreads != 1)
    openblas_set_num_threads(savedBlasThreads);
}

/// Decodes `view` ([P, F]) into rows `pitch` floats apart.
static void stageRows(const TileView &view, float *out, int64_t pitch) {
  const int64_t F = view.freeElements;
  if (view.isDenseF32()) {
    for (unsigned p = 0; p < view.partitions; ++p)
      std::memcpy(out + p * pitch, view.base + int64_t(p) * view.partitionPitch,
                  size_t(F) * 4);
    return;
  }
  for (unsigned p = 0; p < view.partitions; ++p)
    decodeTile(partitionSlice(view, p, 1), out + p * pitch);
}

bool SimulatorCoreBase::execMatmul(const Instruction &inst,
                                   ExecResult &result) {
  TileView stationary, moving, dst;
  if (!operand(inst.srcs[0], "stationary (srcs[0])", stationary) ||
      !operand(inst.srcs[1], "moving (srcs[1])", moving) ||
      !operand(inst.dst, "dst", dst))
    return false;
  if (stationary.memory != Memory::Sbuf || moving.memory != Memory::Sbuf)
    return fail("matmul inputs must be in SBUF (the Tensor Engine cannot "
                "read PSUM)");
  if (dst.memory != Memory::Psum || dst.dtype != DType::F32)
    return fail("matmul dst must be an fp32 PSUM tile");
  if (!isFloatDType(stationary.dtype) || !isFloatDType(moving.dtype))
    return fail("matmul inputs must be float dtypes");
  bool stationaryF32 = stationary.dtype == DType::F32;
  bool movingF32 = moving.dtype == DType::F32;
  if (stationaryF32 != movingF32)
    return fail(std::string("matmul mixes ") + dtypeName(stationary.dtype) +
                " and " + dtypeName(moving.dtype) +
                "; fp32 inputs must be paired with fp32");
  const int64_t K = stationary.partitions, M = stationary.freeElements,
                N = moving.freeElements;
  if (moving.partitions != K)
    return fail("matmul contraction mismatch: stationary has " +
                std::to_string(K) + " partitions, moving " +
                std::to_string(moving.partitions));
  if (K > target.matmulMaxK || M > target.matmulMaxStationaryFree ||
      N > target.matmulMaxMovingFree)
    return fail("matmul K=" + std::to_string(K) + " M=" + std::to_string(M) +
                " N=" + std::to_string(N) +
                " exceeds the limits K<=" + std::to_string(target.matmulMaxK) +
                " M<=" + std::to_string(target.matmulMaxStationaryFree) +
                " N<=" + std::to_string(target.matmulMaxMovingFree));
  if (dst.partitions != M || dst.freeElements != N)
    return fail("matmul dst is [" + std::to_string(dst.partitions) + ", " +
                std::to_string(dst.freeElements) + "], expected [" +
                std::to_string(M) + ", " + std::to_string(N) + "]");
  const int64_t bank = int64_t(target.psumBankBytes);
  if (dst.minByte / bank != (dst.endByte - 1) / bank)
    return fail("matmul dst bytes [" + std::to_string(dst.minByte) + ", " +
                std::to_string(dst.endByte) + ") cross a PSUM bank boundary");

  // The inputs are staged into contiguous fp32 buffers whose row pitch is
  // the row plus 64 bytes: SBUF's partition pitch (192 KiB) is a multiple of
  // 4 KiB, and BLAS packing rows that far apart maps them all to one cache
  // set.
  if (!options.timingOnly)
    matmulValues(inst, stationary, moving, dst);
  result.shape.matmulK = K;
  result.shape.matmulM = M;
  result.shape.matmulN = N;
  result.shape.fp32Inputs = stationaryF32;
  result.shape.freeElements = N;
  result.flops = uint64_t(2) * uint64_t(M) * uint64_t(N) * uint64_t(K);
  noteWrite(dst, result);
  return true;
}

/// dst[M,N] (+)= stationary[K,M]^T moving[K,N], accumulated in fp32.
void SimulatorCoreBase::matmulValues(const Instruction &inst,
                                     const TileView &stationary,
                                     const TileView &moving,
                                     const TileView &dst) {
  const int64_t K = stationary.partitions, M = stationary.freeElements,
                N = moving.freeElements;
  const int lda = int(M) + 16, ldb = int(N) + 16;
  ensureSize(bufA, K * lda);
  ensureSize(bufB, K * ldb);
  float *a = bufA.data(), *b = bufB.data();
  stageRows(stationary, a, lda);
  // A moving tile with one free dim is staged by each piece, its columns
  // only; others here, whole.
  const bool movingOneDim =
      moving.sizes[0] == 1 && moving.sizes[1] == 1 && moving.sizes[2] == 1;
  if (!movingOneDim)
    stageRows(moving, b, ldb);
  const bool inPlace = dst.isDenseF32();
  float *c;
  int ldc;
  if (inPlace) {
    c = reinterpret_cast<float *>(dst.base);
    ldc = int(dst.partitionPitch / 4);
  } else {
    ensureSize(bufC, M * N);
    c = bufC.data();
    ldc = int(N);
    if (inst.accumulate)
      decodeTile(dst, c);
  }
  // ldc is at least the row length (BLAS requires it) because a dense
  // view's pitch covers its row.
  ldc = std::max(ldc, int(N));
  // dst[M,N] (+)= stationary[K,M]^T moving[K,N], accumulated in fp32. With
  // beta = 0 BLAS does not read C, so stale PSUM (even NaN) is overwritten.
  // Wide matmuls are two GEMMs over column halves (cut at a multiple of 16,
  // by the shape alone), which run on two threads when there are.
  const int64_t pieces = N >= 256 ? 2 : 1;
  // Subnormal operands (GELU's far tail, its gradient) are kept, not flushed
  // (docs/numerics.md), but fp32 BLAS kernels take a microcode assist for
  // each subnormal operand or product on Intel cores (about 140 times
  // slower). Such a block runs on operands scaled by powers of two into the
  // normal range (exact), its product scaled back once; in double when no
  // scaling fits both operands' ranges. Each is an fp32-accumulating matmul
  // as sgemm is, each output rounded once from the block's sum.
  const ExponentRange stationaryRange = exponentRange(a, K, M, lda);
  int shiftA = 0;
  if (stationaryRange.subnormal() && !stationaryRange.nonFinite() &&
      stationaryRange.lowest - stationaryRange.highest + kScaledHighest >=
          -126) {
    shiftA = kScaledHighest - stationaryRange.highest;
    scaleByPowerOfTwo(a, K, M, lda, stationaryRange, shiftA);
  }
  const int highestA = stationaryRange.highest + shiftA,
            lowestA = stationaryRange.lowest + shiftA;
  forEachPiece(pieces, [&](int64_t i) {
    const int64_t first = i == 0 ? 0 : (N / pieces) / 16 * 16;
    const int64_t end = i + 1 == pieces ? N : (N / pieces) / 16 * 16;
    if (movingOneDim) {
      TileView columns = moving;
      columns.base = moving.base + first * moving.strides[3];
      columns.sizes[3] = end - first;
      columns.freeElements = end - first;
      stageRows(columns, b + first, ldb);
    }
    const int64_t width = end - first;
    const ExponentRange movingRange = exponentRange(b + first, K, width, ldb);
    if (!stationaryRange.subnormal() && !movingRange.subnormal()) {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(M), int(width),
                  int(K), 1.0f, a, lda, b + first, ldb,
                  inst.accumulate ? 1.0f : 0.0f, c + first, ldc);
      return;
    }
    // The moving operand's shift makes its values and their products with
    // the (scaled) stationary values normal, if the sums then fit.
    int shiftB = std::max(-126 - movingRange.lowest,
                          -126 - lowestA - movingRange.lowest);
    if (!movingRange.subnormal())
      shiftB = std::max(shiftB, 0);
    const bool scalable =
        !stationaryRange.nonFinite() && !movingRange.nonFinite() &&
        lowestA >= -126 && movingRange.highest + shiftB <= 126 &&
        highestA + movingRange.highest + shiftB + 2 + sumBits(K) <= 127;
    if (!scalable) {
      matmulInDouble(M, width, K, a, lda, shiftA, b + first, ldb,
                     inst.accumulate, c + first, ldc);
      return;
    }
    scaleByPowerOfTwo(b + first, K, width, ldb, movingRange, shiftB);
    matmulScaled(M, width, K, a, lda, b + first, ldb, inst.accumulate,
                 c + first, ldc, shiftA + shiftB);
  });
  if (!inPlace)
    encodeTile(c, dst);
}

bool SimulatorCoreBase::execTranspose(const Instruction &inst,
                                      ExecResult &result) {
  TileView src, dst;
  if (!operand(inst.srcs[0], "src (srcs[0])", src) ||
      !operand(inst.dst, "dst", dst))
    return false;
  if (src.memory != Memory::Sbuf || dst.memory != Memory::Psum)
    return fail("transpose reads SBUF and writes PSUM");
  if (!target.bitExactTranspose && dst.dtype != DType::F32)
    return fail("transpose dst must be fp32 on this target (it is a matmul "
                "with an identity)");
  const int64_t P = src.partitions, F = src.freeElements;
  if (P > target.matmulMaxK || F > target.matmulMaxStationaryFree)
    return fail("transpose of [" + std::to_string(P) + ", " +
                std::to_string(F) + "] exceeds [" +
                std::to_string(target.matmulMaxK) + ", " +
                std::to_string(target.matmulMaxStationaryFree) + "]");
  if (dst.partitions != F || dst.freeElements != P)
    return fail("transpose dst is [" + std::to_string(dst.partitions) + ", " +
                std::to_string(dst.freeElements) + "], expected [" +
                std::to_string(F) + ", " + std::to_string(P) + "]");
  const int64_t bank = int64_t(target.psumBankBytes);
  if (dst.minByte / bank != (dst.endByte - 1) / bank)
    return fail("transpose dst crosses a PSUM bank boundary");

  // An exact copy (docs/isa.md §5.1). NeuronCore-v2 hardware transposes by
  // an identity matmul, which turns a column holding NaN/Inf into NaN and
  // -0 into +0; the compiler must not rely on transposing non-finite data.
  if (options.timingOnly) {
    // Costed below from the shapes alone.
  } else if (src.dtype == dst.dtype) {
    // src (SBUF) and dst (PSUM) never overlap. The tile goes through
    // contiguous [P][F] and [F][P] buffers: the memories' partition pitches
    // are multiples of 4 KiB, so transposing between them directly would
    // map every row of a block to the same cache set. A dst with one free
    // dim is cut into pieces by source partitions (its columns).
    const int64_t size = src.elementBytes;
    ensureSize(rawA, 2 * P * F * size);
    uint8_t *in = rawA.data(), *out = rawA.data() + P * F * size;
    const bool oneDim =
        dst.sizes[0] == 1 && dst.sizes[1] == 1 && dst.sizes[2] == 1;
    const int64_t pieces = oneDim ? partitionPieces(unsigned(P), P * F) : 1;
    forEachPiece(pieces, [&](int64_t i) {
      const int64_t first = P * i / pieces, end = P * (i + 1) / pieces;
      const int64_t count = end - first;
      uint8_t *pieceIn = in + first * F * size,
              *pieceOut = out + first * F * size;
      gatherBytes(partitionSlice(src, unsigned(first), unsigned(count)),
                  pieceIn);
      transposeBytes(pieceIn, F * size, size, pieceOut, count * size, size,
                     count, F, src.elementBytes);
      // dst columns [first, end) of every dst partition.
      TileView columns = dst;
      if (pieces > 1) {
        columns.base = dst.base + first * dst.strides[3];
        columns.sizes[3] = count;
        columns.freeElements = count;
      }
      scatterBytes(pieceOut, columns);
    });
  } else {
    ensureSize(bufA, 2 * P * F);
    float *in = bufA.data(), *out = in + P * F;
    decodeTile(src, in);
    for (int64_t p = 0; p < P; ++p)
      for (int64_t f = 0; f < F; ++f)
        out[f * P + p] = in[p * F + f];
    encodeTile(out, dst);
  }
  result.shape.transposePartitions = P;
  result.shape.transposeFree = F;
  result.shape.freeElements = F;
  result.shape.fp32Inputs = src.dtype == DType::F32;
  result.transposeFlops = uint64_t(2) * uint64_t(P) * uint64_t(F) * uint64_t(P);
  noteWrite(dst, result);
  return true;
}

} // namespace sim
} // namespace trnrt
