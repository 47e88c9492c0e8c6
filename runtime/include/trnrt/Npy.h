//===- Npy.h - Reading and writing NumPy .npy and .npz files ----*- C++ -*-===//
//
// Arrays in NumPy's formats, so users can feed inputs and compare results with
// np.load / np.save / np.savez. The .npy header is parsed here (versions 1.0,
// 2.0, 3.0); the .npz zip container goes through libzip. Functions return
// false with a one-line message in `error` and never throw.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_NPY_H
#define TRNRT_NPY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trnrt {

/// A NumPy array with a supported dtype: f2 f4 f8, i1 i2 i4 i8, u1 u2 u4 u8,
/// b1. Data is always little-endian and in C (row-major) order; the readers
/// convert big-endian and Fortran-order files.
struct NpyArray {
  char kind = 'f'; // 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool
  unsigned itemSize = 4; // Bytes per element.
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; // Little-endian, C order.

  /// Product of the shape (1 for a 0-d array). Saturates at INT64_MAX.
  int64_t numElements() const;

  /// Element `index` (in C order) as a double; f2 decodes as IEEE half.
  /// Returns NaN when `index` is outside the data or the dtype is unsupported.
  double getDouble(int64_t index) const;

  /// Element `index` as an integer. Floats are truncated toward zero and
  /// saturated to the int64 range, NaN gives 0; u8 values above INT64_MAX
  /// saturate. Returns 0 when `index` is outside the data.
  int64_t getInt64(int64_t index) const;

  /// A float array of item size 2, 4 or 8 holding `values` rounded to nearest
  /// even (as roundToDType with F16 or F32; NaNs become canonical). If
  /// values.size() does not match the shape, or the item size is unsupported,
  /// the result is inconsistent and validate() reports it.
  static NpyArray fromDoubles(std::vector<int64_t> shape,
                              const std::vector<double> &values,
                              unsigned itemSize);

  /// An integer ('i' or 'u', item size 1, 2, 4 or 8, values wrap modulo
  /// 2^(8*itemSize)) or bool ('b', item size 1, nonzero stores 1) array.
  /// Inconsistent input is reported by validate() as for fromDoubles.
  static NpyArray fromInt64s(std::vector<int64_t> shape,
                             const std::vector<int64_t> &values, char kind,
                             unsigned itemSize);

  /// NumPy's dtype string, e.g. "<f4", "|b1", "|u1".
  std::string descr() const;

  /// Checks that the dtype is supported, the shape non-negative, and the data
  /// exactly numElements() * itemSize bytes.
  bool validate(std::string &error) const;
};

/// Parses a complete .npy file held in memory.
bool parseNpy(const uint8_t *bytes, size_t size, NpyArray &out,
              std::string &error);

/// Writes `array` as .npy (format 1.0, or 2.0 if the header needs it).
bool serializeNpy(const NpyArray &array, std::vector<uint8_t> &out,
                  std::string &error);

bool readNpy(const std::string &path, NpyArray &out, std::string &error);

/// Writes atomically: a temporary file in the same directory renamed over
/// `path`, so a failed write never leaves a partial file.
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);

/// Reads every entry of an .npz (np.savez or np.savez_compressed), in archive
/// order. Names are given without the ".npy" suffix.
bool readNpz(const std::string &path,
             std::vector<std::pair<std::string, NpyArray>> &out,
             std::string &error);

/// Writes an uncompressed .npz like np.savez, atomically as writeNpy does.
/// Each entry is stored as "<name>.npy"; names must be unique and non-empty.
bool writeNpz(const std::string &path,
              const std::vector<std::pair<std::string, NpyArray>> &arrays,
              std::string &error);

} // namespace trnrt

#endif // TRNRT_NPY_H
