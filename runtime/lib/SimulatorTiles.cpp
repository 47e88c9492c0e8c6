//===- SimulatorTiles.cpp - Access patterns and dtype conversions ---------===//
//
// Resolves access patterns to host memory with bounds checks, and moves
// tiles between simulated memory and fp32 (or int64) host buffers. The loops
// run over contiguous rows with the dtype switch outside the inner loop, so
// the compiler can vectorise the common (contiguous bf16/fp32) cases.
//
//===----------------------------------------------------------------------===//

#include "SimulatorImpl.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnrt {
namespace sim {

namespace {

/// Operands larger than this are rejected rather than decoded: it bounds the
/// host memory one instruction can ask for (1 GiB of fp32).
constexpr int64_t kMaxOperandElements = int64_t(1) << 28;

template <typename T> inline T loadAs(const uint8_t *address) {
  T value;
  std::memcpy(&value, address, sizeof(T));
  return value;
}

template <typename T> inline void storeAs(uint8_t *address, T value) {
  std::memcpy(address, &value, sizeof(T));
}

inline uint16_t roundToBf16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t(((bits >> 16) & 0x8000u) | 0x7fc0u);
  // Round to nearest even on the 16 dropped bits; a carry into the exponent
  // is the correct result (up to inf).
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float widenBf16(uint16_t bits) {
  return floatFromBits(uint32_t(bits) << 16);
}

/// Layout of the narrow formats for the fast encoder; agrees with
/// Numerics.cpp (the tests compare them).
struct NarrowFormat {
  unsigned mantissaBits;
  int bias;
  bool hasInfinity;
  uint32_t maxFiniteBits; ///< magnitude bits of the largest finite value
  uint32_t infinityBits;  ///< magnitude bits of inf (when hasInfinity)
  uint32_t nanBits;       ///< magnitude bits of the canonical NaN
  unsigned signShift;
};

const NarrowFormat &narrowFormat(DType dtype) {
  static const NarrowFormat f16{10, 15, true, 0x7bff, 0x7c00, 0x7e00, 15};
  static const NarrowFormat e5m2{2, 15, true, 0x7b, 0x7c, 0x7e, 7};
  static const NarrowFormat e4m3fn{3, 7, false, 0x7e, 0x7e, 0x7f, 7};
  switch (dtype) {
  case DType::F16:
    return f16;
  case DType::F8E5M2:
    return e5m2;
  default:
    return e4m3fn;
  }
}

inline uint32_t encodeNarrow(float value, const NarrowFormat &format) {
  uint32_t bits = floatBits(value);
  uint32_t sign = (bits >> 31) << format.signShift;
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return sign | format.nanBits;
  if (magnitude == 0x7f800000u)
    return sign |
           (format.hasInfinity ? format.infinityBits : format.maxFiniteBits);
  int exponent = int(magnitude >> 23);
  // f32 subnormals (< 2^-126) are far below half the smallest subnormal of
  // every narrow format.
  if (exponent == 0)
    return sign;
  int targetExponent = exponent - 127 + format.bias;
  uint64_t significand = (uint64_t(1) << 23) | (magnitude & 0x7fffffu);
  int shift = 23 - int(format.mantissaBits);
  if (targetExponent < 1)
    shift += 1 - targetExponent; // subnormal in the target: fixed spacing
  if (shift > 25)
    return sign; // below half the smallest subnormal
  uint64_t kept = significand >> shift;
  uint64_t dropped = significand & ((uint64_t(1) << shift) - 1);
  uint64_t half = uint64_t(1) << (shift - 1);
  if (dropped > half || (dropped == half && (kept & 1)))
    ++kept;
  // Normal: the implicit one of `kept` adds one to the exponent field, hence
  // (targetExponent - 1); a carry out of the mantissa lands in the exponent.
  uint64_t result =
      targetExponent >= 1
          ? (uint64_t(targetExponent - 1) << format.mantissaBits) + kept
          : kept;
  if (result > format.maxFiniteBits)
    return sign |
           (format.hasInfinity ? format.infinityBits : format.maxFiniteBits);
  return sign | uint32_t(result);
}

const float *f16Table() {
  static const std::vector<float> table = [] {
    std::vector<float> values(65536);
    for (uint32_t bits = 0; bits < 65536; ++bits)
      values[bits] = float(decodeFloat(bits, DType::F16));
    return values;
  }();
  return table.data();
}

const float *f8Table(DType dtype) {
  static const std::vector<float> e4m3 = [] {
    std::vector<float> values(256);
    for (uint32_t bits = 0; bits < 256; ++bits)
      values[bits] = float(decodeFloat(bits, DType::F8E4M3FN));
    return values;
  }();
  static const std::vector<float> e5m2 = [] {
    std::vector<float> values(256);
    for (uint32_t bits = 0; bits < 256; ++bits)
      values[bits] = float(decodeFloat(bits, DType::F8E5M2));
    return values;
  }();
  return dtype == DType::F8E4M3FN ? e4m3.data() : e5m2.data();
}

inline int64_t truncToInteger(float value, DType dtype) {
  if (std::isnan(value))
    return 0;
  switch (dtype) {
  case DType::I1:
    return value != 0.0f ? 1 : 0;
  case DType::I32:
    if (value >= 2147483648.0f)
      return std::numeric_limits<int32_t>::max();
    if (value <= -2147483648.0f)
      return std::numeric_limits<int32_t>::min();
    return int64_t(value);
  default:
    if (value >= 9223372036854775808.0f)
      return std::numeric_limits<int64_t>::max();
    if (value <= -9223372036854775808.0f)
      return std::numeric_limits<int64_t>::min();
    return int64_t(value);
  }
}

/// Calls fn(rowAddress, count, strideBytes) for every innermost row, in the
/// view's element order.
template <typename Fn> inline void forEachRow(const TileView &view, Fn &&fn) {
  const int64_t size0 = view.sizes[0], size1 = view.sizes[1],
                size2 = view.sizes[2], count = view.sizes[3];
  const int64_t stride0 = view.strides[0], stride1 = view.strides[1],
                stride2 = view.strides[2], stride3 = view.strides[3];
  for (unsigned p = 0; p < view.partitions; ++p) {
    uint8_t *partitionBase = view.base + int64_t(p) * view.partitionPitch;
    for (int64_t i0 = 0; i0 < size0; ++i0)
      for (int64_t i1 = 0; i1 < size1; ++i1)
        for (int64_t i2 = 0; i2 < size2; ++i2)
          fn(partitionBase + i0 * stride0 + i1 * stride1 + i2 * stride2, count,
             stride3);
  }
}

template <typename T, typename Convert>
inline void decodeLoop(const uint8_t *row, int64_t count, int64_t stride,
                       float *out, Convert convert) {
  if (stride == int64_t(sizeof(T))) {
    for (int64_t i = 0; i < count; ++i)
      out[i] = convert(loadAs<T>(row + i * int64_t(sizeof(T))));
  } else {
    for (int64_t i = 0; i < count; ++i)
      out[i] = convert(loadAs<T>(row + i * stride));
  }
}

template <typename T, typename Convert>
inline void encodeLoop(const float *in, int64_t count, uint8_t *row,
                       int64_t stride, Convert convert) {
  if (stride == int64_t(sizeof(T))) {
    for (int64_t i = 0; i < count; ++i)
      storeAs<T>(row + i * int64_t(sizeof(T)), convert(in[i]));
  } else {
    for (int64_t i = 0; i < count; ++i)
      storeAs<T>(row + i * stride, convert(in[i]));
  }
}

void decodeRow(const uint8_t *row, int64_t count, int64_t stride, DType dtype,
               float *out) {
  switch (dtype) {
  case DType::F32:
    if (stride == 4) {
      std::memcpy(out, row, size_t(count) * 4);
      return;
    }
    decodeLoop<float>(row, count, stride, out, [](float v) { return v; });
    return;
  case DType::BF16:
    decodeLoop<uint16_t>(row, count, stride, out,
                         [](uint16_t bits) { return widenBf16(bits); });
    return;
  case DType::F16: {
    const float *table = f16Table();
    decodeLoop<uint16_t>(row, count, stride, out,
                         [table](uint16_t bits) { return table[bits]; });
    return;
  }
  case DType::F8E4M3FN:
  case DType::F8E5M2: {
    const float *table = f8Table(dtype);
    decodeLoop<uint8_t>(row, count, stride, out,
                        [table](uint8_t bits) { return table[bits]; });
    return;
  }
  case DType::I1:
    decodeLoop<uint8_t>(row, count, stride, out,
                        [](uint8_t v) { return v != 0 ? 1.0f : 0.0f; });
    return;
  case DType::I32:
    decodeLoop<int32_t>(row, count, stride, out,
                        [](int32_t v) { return float(v); });
    return;
  case DType::I64:
    decodeLoop<int64_t>(row, count, stride, out,
                        [](int64_t v) { return float(v); });
    return;
  }
}

void encodeRow(const float *in, int64_t count, uint8_t *row, int64_t stride,
               DType dtype) {
  switch (dtype) {
  case DType::F32:
    if (stride == 4) {
      std::memcpy(row, in, size_t(count) * 4);
      return;
    }
    encodeLoop<float>(in, count, row, stride, [](float v) { return v; });
    return;
  case DType::BF16:
    encodeLoop<uint16_t>(in, count, row, stride,
                         [](float v) { return roundToBf16(v); });
    return;
  case DType::F16: {
    const NarrowFormat &format = narrowFormat(dtype);
    encodeLoop<uint16_t>(in, count, row, stride, [&format](float v) {
      return uint16_t(encodeNarrow(v, format));
    });
    return;
  }
  case DType::F8E4M3FN:
  case DType::F8E5M2: {
    const NarrowFormat &format = narrowFormat(dtype);
    encodeLoop<uint8_t>(in, count, row, stride, [&format](float v) {
      return uint8_t(encodeNarrow(v, format));
    });
    return;
  }
  case DType::I1:
  case DType::I32:
  case DType::I64:
    for (int64_t i = 0; i < count; ++i) {
      int64_t value = truncToInteger(in[i], dtype);
      uint8_t *address = row + i * stride;
      if (dtype == DType::I1)
        *address = uint8_t(value);
      else if (dtype == DType::I32)
        storeAs<int32_t>(address, int32_t(value));
      else
        storeAs<int64_t>(address, value);
    }
    return;
  }
}

} // namespace

uint16_t floatToBf16(float value) { return roundToBf16(value); }
float bf16ToFloat(uint16_t bits) { return widenBf16(bits); }

uint32_t encodeNarrowFloat(float value, DType dtype) {
  return encodeNarrow(value, narrowFormat(dtype));
}

int64_t floatToInteger(float value, DType dtype) {
  return truncToInteger(value, dtype);
}

bool TileView::isDenseF32() const {
  return dtype == DType::F32 && sizes[0] == 1 && sizes[1] == 1 &&
         sizes[2] == 1 && (strides[3] == 4 || sizes[3] == 1) &&
         reinterpret_cast<uintptr_t>(base) % 4 == 0 && partitionPitch % 4 == 0;
}

void decodeTile(const TileView &view, float *out) {
  forEachRow(view, [&](const uint8_t *row, int64_t count, int64_t stride) {
    decodeRow(row, count, stride, view.dtype, out);
    out += count;
  });
}

void encodeTile(const float *in, const TileView &view) {
  forEachRow(view, [&](uint8_t *row, int64_t count, int64_t stride) {
    encodeRow(in, count, row, stride, view.dtype);
    in += count;
  });
}

void decodeTileInt(const TileView &view, int64_t *out) {
  const DType dtype = view.dtype;
  forEachRow(view, [&](const uint8_t *row, int64_t count, int64_t stride) {
    for (int64_t i = 0; i < count; ++i) {
      const uint8_t *address = row + i * stride;
      switch (dtype) {
      case DType::I1:
        out[i] = *address != 0;
        break;
      case DType::I32:
        out[i] = loadAs<int32_t>(address);
        break;
      case DType::I64:
        out[i] = loadAs<int64_t>(address);
        break;
      default: {
        float value = 0.0f;
        decodeRow(address, 1, 0, dtype, &value);
        out[i] = truncToInteger(value, DType::I64);
        break;
      }
      }
    }
    out += count;
  });
}

void encodeTileInt(const int64_t *in, const TileView &view) {
  const DType dtype = view.dtype;
  forEachRow(view, [&](uint8_t *row, int64_t count, int64_t stride) {
    for (int64_t i = 0; i < count; ++i) {
      uint8_t *address = row + i * stride;
      switch (dtype) {
      case DType::I1:
        *address = in[i] != 0;
        break;
      case DType::I32:
        // Two's complement wrap, as int32 hardware arithmetic does.
        storeAs<int32_t>(address, int32_t(uint32_t(uint64_t(in[i]))));
        break;
      case DType::I64:
        storeAs<int64_t>(address, in[i]);
        break;
      default: {
        float value = float(in[i]);
        encodeRow(&value, 1, address, 0, dtype);
        break;
      }
      }
    }
    in += count;
  });
}

void gatherBytes(const TileView &view, uint8_t *out) {
  const size_t size = view.elementBytes;
  forEachRow(view, [&](const uint8_t *row, int64_t count, int64_t stride) {
    if (stride == int64_t(size)) {
      std::memcpy(out, row, size_t(count) * size);
    } else {
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(out + size_t(i) * size, row + i * stride, size);
    }
    out += size_t(count) * size;
  });
}

void scatterBytes(const uint8_t *in, const TileView &view) {
  const size_t size = view.elementBytes;
  forEachRow(view, [&](uint8_t *row, int64_t count, int64_t stride) {
    if (stride == int64_t(size)) {
      std::memmove(row, in, size_t(count) * size);
    } else {
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(row + i * stride, in + size_t(i) * size, size);
    }
    in += size_t(count) * size;
  });
}

namespace {

/// The start address of every innermost row of a view, in element order.
class RowWalker {
public:
  explicit RowWalker(const TileView &view) : view(view) {}

  /// The next row's address, or nullptr after the last row.
  uint8_t *next() {
    if (p >= view.partitions)
      return nullptr;
    uint8_t *row = view.base + int64_t(p) * view.partitionPitch +
                   i0 * view.strides[0] + i1 * view.strides[1] +
                   i2 * view.strides[2];
    if (++i2 == view.sizes[2]) {
      i2 = 0;
      if (++i1 == view.sizes[1]) {
        i1 = 0;
        if (++i0 == view.sizes[0]) {
          i0 = 0;
          ++p;
        }
      }
    }
    return row;
  }

private:
  const TileView &view;
  unsigned p = 0;
  int64_t i0 = 0, i1 = 0, i2 = 0;
};

template <typename T>
inline void copyStrided(const uint8_t *from, int64_t fromStride, uint8_t *to,
                        int64_t toStride, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    storeAs<T>(to + i * toStride, loadAs<T>(from + i * fromStride));
}

/// [begin, end) of the bytes a view can touch, as offsets in its memory.
void byteBox(const TileView &view, int64_t &begin, int64_t &end) {
  if (view.memory == Memory::Hbm) {
    const int64_t span = int64_t(view.partitions - 1) * view.partitionPitch;
    begin = view.minByte + std::min<int64_t>(0, span);
    end = view.endByte + std::max<int64_t>(0, span);
  } else {
    begin = view.minByte;
    end = view.endByte;
  }
}

} // namespace

bool viewsMayOverlap(const TileView &a, const TileView &b) {
  if (a.memory != b.memory)
    return false;
  if (a.memory != Memory::Hbm &&
      (a.startPartition >= b.startPartition + b.partitions ||
       b.startPartition >= a.startPartition + a.partitions))
    return false;
  int64_t aBegin, aEnd, bBegin, bEnd;
  byteBox(a, aBegin, aEnd);
  byteBox(b, bBegin, bEnd);
  return aBegin < bEnd && bBegin < aEnd;
}

void copyElements(const TileView &src, const TileView &dst) {
  const int64_t size = src.elementBytes;
  const int64_t srcStride = src.strides[3], dstStride = dst.strides[3];
  const bool contiguous = srcStride == size && dstStride == size;
  RowWalker srcRows(src), dstRows(dst);
  const uint8_t *from = nullptr;
  uint8_t *to = nullptr;
  int64_t srcLeft = 0, dstLeft = 0;
  for (;;) {
    if (srcLeft == 0) {
      from = srcRows.next();
      if (!from)
        return;
      srcLeft = src.sizes[3];
    }
    if (dstLeft == 0) {
      to = dstRows.next();
      if (!to)
        return;
      dstLeft = dst.sizes[3];
    }
    const int64_t count = std::min(srcLeft, dstLeft);
    if (contiguous || count == 1) {
      std::memcpy(to, from, size_t(count * size));
    } else {
      switch (size) {
      case 1:
        copyStrided<uint8_t>(from, srcStride, to, dstStride, count);
        break;
      case 2:
        copyStrided<uint16_t>(from, srcStride, to, dstStride, count);
        break;
      case 4:
        copyStrided<uint32_t>(from, srcStride, to, dstStride, count);
        break;
      default:
        copyStrided<uint64_t>(from, srcStride, to, dstStride, count);
        break;
      }
    }
    from += count * srcStride;
    to += count * dstStride;
    srcLeft -= count;
    dstLeft -= count;
  }
}

TileView partitionSlice(const TileView &view, unsigned first, unsigned count) {
  TileView slice = view;
  slice.base = view.base + int64_t(first) * view.partitionPitch;
  slice.partitions = count;
  if (view.memory == Memory::Hbm) {
    slice.minByte += int64_t(first) * view.partitionPitch;
    slice.endByte += int64_t(first) * view.partitionPitch;
  } else {
    slice.startPartition = view.startPartition + first;
  }
  return slice;
}

//===----------------------------------------------------------------------===//
// Resolving access patterns
//===----------------------------------------------------------------------===//

namespace {

std::string describe(const char *operand, const AccessPattern &ap) {
  std::string text = operand;
  text += " (";
  text += memoryName(ap.memory);
  text += ' ';
  const char *dtype = dtypeName(ap.dtype);
  text += dtype ? dtype : "?";
  text += ')';
  return text;
}

std::string range(__int128 begin, __int128 end) {
  return "[" + std::to_string(int64_t(begin)) + ", " +
         std::to_string(int64_t(end)) + ")";
}

} // namespace

bool SimulatorCoreBase::makeView(const AccessPattern &ap, const char *operand,
                                 TileView &view, bool decoded) {
  if (unsigned(ap.dtype) > unsigned(DType::I64))
    return fail(std::string(operand) + " has an unknown dtype");
  if (unsigned(ap.memory) > unsigned(Memory::Psum))
    return fail(std::string(operand) + " has an unknown memory");
  const unsigned elementBytes = dtypeSizeInBytes(ap.dtype);
  if (ap.dims.size() > 4)
    return fail(describe(operand, ap) + " has " +
                std::to_string(ap.dims.size()) +
                " free dims; access patterns have at most 4");
  if (ap.numPartitions == 0)
    return fail(describe(operand, ap) + " covers no partitions");

  __int128 low = 0, high = 0, elements = 1;
  for (size_t d = 0; d < ap.dims.size(); ++d) {
    const ApDim &dim = ap.dims[d];
    if (dim.size < 1)
      return fail(describe(operand, ap) + " free dim " + std::to_string(d) +
                  " has size " + std::to_string(dim.size));
    __int128 span = __int128(dim.size - 1) * dim.stride;
    (span < 0 ? low : high) += span;
    elements *= dim.size;
    if (decoded && elements * ap.numPartitions > kMaxOperandElements)
      return fail(describe(operand, ap) + " has more than " +
                  std::to_string(kMaxOperandElements) +
                  " elements, the simulator's limit per operand");
  }

  view = TileView();
  view.memory = ap.memory;
  view.dtype = ap.dtype;
  view.elementBytes = elementBytes;
  view.partitions = ap.numPartitions;
  view.freeElements = int64_t(elements);

  if (ap.memory == Memory::Hbm) {
    __int128 partitionSpan =
        __int128(int64_t(ap.numPartitions) - 1) * ap.partitionStride;
    __int128 begin =
        ap.byteOffset +
        (std::min<__int128>(0, partitionSpan) + low) * __int128(elementBytes);
    __int128 end =
        ap.byteOffset + (std::max<__int128>(0, partitionSpan) + high + 1) *
                            __int128(elementBytes);
    if (begin < 0 || end > __int128(hbmSize))
      return fail(describe(operand, ap) + " reads or writes HBM bytes " +
                  range(begin, end) + ", outside the program's " +
                  std::to_string(hbmSize) + " bytes of HBM");
    view.base = hbm.get() + ap.byteOffset;
    // One row: the stride is never used (and may be any int64).
    view.partitionPitch =
        ap.numPartitions > 1 ? ap.partitionStride * int64_t(elementBytes) : 0;
    view.minByte = int64_t(ap.byteOffset + low * elementBytes);
    view.endByte = int64_t(ap.byteOffset + (high + 1) * elementBytes);
  } else {
    const bool isSbuf = ap.memory == Memory::Sbuf;
    const uint64_t partitionBytes =
        isSbuf ? target.sbufBytesPerPartition : target.psumBytesPerPartition;
    if (uint64_t(ap.startPartition) + ap.numPartitions > target.partitions)
      return fail(describe(operand, ap) + " partitions " +
                  range(ap.startPartition,
                        uint64_t(ap.startPartition) + ap.numPartitions) +
                  " exceed the " + std::to_string(target.partitions) +
                  " partitions");
    __int128 begin = ap.byteOffset + low * __int128(elementBytes);
    __int128 end = ap.byteOffset + (high + 1) * __int128(elementBytes);
    if (begin < 0 || end > __int128(partitionBytes))
      return fail(describe(operand, ap) + " bytes " + range(begin, end) +
                  " of each partition are outside the " +
                  std::to_string(partitionBytes) + "-byte " +
                  memoryName(ap.memory) + " partition");
    uint8_t *memory = isSbuf ? sbuf.data() : psum.data();
    view.partitionPitch = int64_t(partitionBytes);
    view.startPartition = ap.startPartition;
    view.base =
        memory + uint64_t(ap.startPartition) * partitionBytes + ap.byteOffset;
    view.minByte = int64_t(begin);
    view.endByte = int64_t(end);
  }

  // Innermost real stride, for the engines' >16 B stride penalty.
  for (size_t d = ap.dims.size(); d-- > 0;) {
    if (ap.dims[d].size > 1) {
      view.innermostStride = ap.dims[d].stride;
      break;
    }
  }

  // Drop unit dims and merge contiguous neighbours (outermost first).
  int64_t sizes[4], strides[4];
  unsigned count = 0;
  for (const ApDim &dim : ap.dims) {
    if (dim.size == 1)
      continue;
    int64_t strideBytes = dim.stride * int64_t(elementBytes);
    if (count > 0 && strides[count - 1] == dim.size * strideBytes) {
      sizes[count - 1] *= dim.size;
      strides[count - 1] = strideBytes;
      continue;
    }
    sizes[count] = dim.size;
    strides[count] = strideBytes;
    ++count;
  }
  if (count == 0) {
    sizes[0] = 1;
    strides[0] = elementBytes;
    count = 1;
  }
  for (unsigned d = 0; d < 4; ++d) {
    unsigned from = d + count;
    if (from < 4) {
      view.sizes[d] = 1;
      view.strides[d] = 0;
    } else {
      view.sizes[d] = sizes[from - 4];
      view.strides[d] = strides[from - 4];
    }
  }
  view.runElements =
      view.strides[3] == int64_t(elementBytes) ? view.sizes[3] : 1;
  return true;
}

} // namespace sim
} // namespace trnrt
