//===- Npy.cpp - Reading and writing NumPy .npy and .npz files ------------===//
//
// The .npy format: "\x93NUMPY", a version (1.0, 2.0 or 3.0), a little-endian
// header length (2 bytes for 1.0, 4 otherwise), a Python dict literal with
// 'descr', 'fortran_order' and 'shape', then the raw data. Every length and
// count read from a file is checked before use, so a corrupt file gives an
// error rather than a crash or an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Npy.h"

#include "trnrt/File.h"
#include "trnrt/Numerics.h"

#include <zip.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <memory>
#include <set>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace trnrt {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// NumPy aligns the data to 64 bytes so it can be memory-mapped.
constexpr size_t kHeaderAlignment = 64;
// NumPy itself allows at most 64 dimensions.
constexpr size_t kMaxRank = 64;
constexpr const char *kSupportedDescrs =
    "<f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1";

bool isSupportedDType(char kind, unsigned itemSize) {
  switch (kind) {
  case 'f':
    return itemSize == 2 || itemSize == 4 || itemSize == 8;
  case 'i':
  case 'u':
    return itemSize == 1 || itemSize == 2 || itemSize == 4 || itemSize == 8;
  case 'b':
    return itemSize == 1;
  default:
    return false;
  }
}

bool isHostLittleEndian() {
  const uint16_t probe = 1;
  uint8_t firstByte;
  std::memcpy(&firstByte, &probe, 1);
  return firstByte == 1;
}

/// Printable excerpt of untrusted header text for error messages.
std::string excerpt(std::string_view text, size_t maxChars = 80) {
  std::string result;
  for (size_t i = 0; i < text.size() && i < maxChars; ++i) {
    unsigned char c = text[i];
    if (c >= 0x20 && c < 0x7F) {
      result += char(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      result += "\\x";
      result += kHex[c >> 4];
      result += kHex[c & 15];
    }
  }
  if (text.size() > maxChars)
    result += "...";
  return result;
}

std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string result = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      result += ", ";
    result += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    result += ",";
  return result + ")";
}

/// Number of elements and bytes of an array, or false if the shape has a
/// negative dimension or the byte count does not fit in size_t.
bool computeSizes(const std::vector<int64_t> &shape, unsigned itemSize,
                  uint64_t &numElements, size_t &numBytes, std::string &error) {
  numElements = 1;
  for (int64_t dim : shape) {
    if (dim < 0) {
      error = "shape " + shapeToString(shape) + " has a negative dimension";
      return false;
    }
  }
  bool overflow = false;
  for (int64_t dim : shape)
    overflow |=
        __builtin_mul_overflow(numElements, uint64_t(dim), &numElements);
  uint64_t bytes = 0;
  overflow |= __builtin_mul_overflow(numElements, uint64_t(itemSize), &bytes);
  if (overflow || bytes > std::numeric_limits<size_t>::max() ||
      numElements > uint64_t(std::numeric_limits<int64_t>::max())) {
    error = "shape " + shapeToString(shape) +
            " is too large: its byte count overflows; the header is corrupt";
    return false;
  }
  numBytes = size_t(bytes);
  return true;
}

//===----------------------------------------------------------------------===//
// Header dict parsing
//===----------------------------------------------------------------------===//

/// Parses the subset of Python literal syntax NumPy writes in .npy headers:
/// a dict with string keys whose values are strings, True/False, or tuples
/// of integers. Structured dtypes (a list as 'descr') are recognised only to
/// reject them with a clear message.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text(text) {}

  bool parse(std::string &descr, bool &fortranOrder,
             std::vector<int64_t> &shape, std::string &error) {
    bool sawDescr = false, sawFortranOrder = false, sawShape = false;
    if (!expect('{', error))
      return false;
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key, error) || !expect(':', error))
        return false;
      skipSpace();
      if (key == "descr") {
        if (sawDescr)
          return fail("duplicate key 'descr'", error);
        sawDescr = true;
        if (peek() == '[' || peek() == '{')
          return fail("structured dtypes are not supported; save each field "
                      "as its own array",
                      error, /*showPosition=*/false);
        if (!parseString(descr, error))
          return false;
      } else if (key == "fortran_order") {
        if (sawFortranOrder)
          return fail("duplicate key 'fortran_order'", error);
        sawFortranOrder = true;
        if (!parseBool(fortranOrder, error))
          return false;
      } else if (key == "shape") {
        if (sawShape)
          return fail("duplicate key 'shape'", error);
        sawShape = true;
        if (!parseShape(shape, error))
          return false;
      } else {
        return fail("unexpected key '" + excerpt(key, 40) + "'", error);
      }
      skipSpace();
      if (consume('}'))
        break;
      if (!expect(',', error))
        return false;
    }
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the dict", error);
    if (!sawDescr || !sawFortranOrder || !sawShape)
      return fail(std::string("missing key '") +
                      (!sawDescr          ? "descr"
                       : !sawFortranOrder ? "fortran_order"
                                          : "shape") +
                      "'",
                  error, /*showPosition=*/false);
    return true;
  }

private:
  std::string_view text;
  size_t pos = 0;

  char peek() const { return pos < text.size() ? text[pos] : '\0'; }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool consume(char c) {
    if (peek() != c || pos >= text.size())
      return false;
    ++pos;
    return true;
  }

  bool fail(const std::string &what, std::string &error,
            bool showPosition = true) {
    error = "malformed .npy header: " + what;
    if (showPosition)
      error += " at character " + std::to_string(pos);
    error += " in \"" + excerpt(text) +
             "\"; the file is corrupt or was not "
             "written by NumPy";
    return false;
  }

  bool expect(char c, std::string &error) {
    skipSpace();
    if (consume(c))
      return true;
    return fail(std::string("expected '") + c + "'", error);
  }

  bool parseString(std::string &out, std::string &error) {
    skipSpace();
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return fail("expected a quoted string", error);
    ++pos;
    size_t start = pos;
    // NumPy's keys and dtype strings never contain escapes or quotes.
    while (pos < text.size() && text[pos] != quote) {
      if (text[pos] == '\\' || text[pos] == '\n')
        return fail("unsupported character in string", error);
      ++pos;
    }
    if (pos >= text.size())
      return fail("unterminated string", error);
    out.assign(text.substr(start, pos - start));
    ++pos;
    return true;
  }

  bool parseBool(bool &out, std::string &error) {
    skipSpace();
    if (text.substr(pos, 4) == "True") {
      pos += 4;
      out = true;
      return true;
    }
    if (text.substr(pos, 5) == "False") {
      pos += 5;
      out = false;
      return true;
    }
    return fail("expected True or False", error);
  }

  bool parseInt(int64_t &out, std::string &error) {
    skipSpace();
    bool negative = consume('-');
    if (peek() < '0' || peek() > '9')
      return fail("expected an integer", error);
    uint64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      value = value * 10 + uint64_t(peek() - '0');
      if (value > uint64_t(std::numeric_limits<int64_t>::max()))
        return fail("dimension does not fit in 64 bits", error);
      ++pos;
    }
    consume('L'); // Python 2 long literals, as old NumPy wrote them.
    if (negative)
      return fail("negative dimension", error);
    out = int64_t(value);
    return true;
  }

  bool parseShape(std::vector<int64_t> &shape, std::string &error) {
    skipSpace();
    char close;
    if (consume('('))
      close = ')';
    else if (consume('['))
      close = ']';
    else
      return fail("expected a tuple for 'shape'", error);
    shape.clear();
    while (true) {
      skipSpace();
      if (consume(close))
        return true;
      int64_t dim;
      if (!parseInt(dim, error))
        return false;
      if (shape.size() == kMaxRank)
        return fail("more than " + std::to_string(kMaxRank) + " dimensions",
                    error);
      shape.push_back(dim);
      skipSpace();
      if (consume(close))
        return true;
      if (!expect(',', error))
        return false;
    }
  }
};

/// Interprets a descr string such as "<f4". Sets `byteSwap` when the data is
/// stored in the other byte order than little-endian.
bool parseDescr(const std::string &descr, char &kind, unsigned &itemSize,
                bool &byteSwap, std::string &error) {
  auto unsupported = [&](const char *what) {
    error = "unsupported dtype '" + excerpt(descr, 40) + "'" + what +
            "; supported: " + kSupportedDescrs +
            " (convert with .astype() before saving)";
    return false;
  };
  if (descr.size() < 2)
    return unsupported("");
  char order = descr[0];
  if (order != '<' && order != '>' && order != '=' && order != '|')
    return unsupported(" (no byte-order mark)");
  kind = descr[1];
  std::string sizeText = descr.substr(2);
  bool allDigits = !sizeText.empty() && sizeText.size() <= 2;
  for (char c : sizeText)
    allDigits &= c >= '0' && c <= '9';
  switch (kind) {
  case 'c':
    return unsupported(" (complex)");
  case 'O':
    return unsupported(" (Python objects)");
  case 'U':
  case 'S':
  case 'a':
    return unsupported(" (strings)");
  case 'V':
    return unsupported(" (raw or structured records)");
  case 'M':
  case 'm':
    return unsupported(" (dates and times)");
  default:
    break;
  }
  if (!allDigits)
    return unsupported("");
  itemSize = 0;
  for (char c : sizeText)
    itemSize = itemSize * 10 + unsigned(c - '0');
  if (!isSupportedDType(kind, itemSize))
    return unsupported("");
  if (itemSize > 1 && order == '|') {
    error = "dtype '" + descr + "' has no byte order but its items have " +
            std::to_string(itemSize) + " bytes; expected '<" + kind + sizeText +
            "' or '>" + kind + sizeText + "'";
    return false;
  }
  bool dataLittleEndian =
      order == '<' || (order == '=' && isHostLittleEndian());
  byteSwap = itemSize > 1 && !dataLittleEndian;
  return true;
}

/// Reorders `numElements` items from Fortran (column-major) to C order. The
/// parser has already limited the rank to kMaxRank.
std::vector<uint8_t> fortranToCOrder(const std::vector<uint8_t> &data,
                                     const std::vector<int64_t> &shape,
                                     unsigned itemSize, uint64_t numElements) {
  std::vector<uint8_t> result(data.size());
  const size_t rank = shape.size();
  // Fortran strides in elements: the first index varies fastest.
  std::array<uint64_t, kMaxRank> strides{};
  uint64_t stride = 1;
  for (size_t d = 0; d < rank; ++d) {
    strides[d] = stride;
    stride *= uint64_t(shape[d]);
  }
  std::array<int64_t, kMaxRank> index{};
  uint64_t fortranOffset = 0;
  for (uint64_t c = 0; c < numElements; ++c) {
    std::memcpy(&result[c * itemSize], &data[fortranOffset * itemSize],
                itemSize);
    // Advance the C-order multi-index (last index fastest), carrying.
    for (size_t d = rank; d > 0; --d) {
      size_t axis = d - 1;
      fortranOffset += strides[axis];
      if (++index[axis] < shape[axis])
        break;
      fortranOffset -= strides[axis] * uint64_t(shape[axis]);
      index[axis] = 0;
    }
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

std::string errnoMessage() { return std::strerror(errno); }

/// Inputs and outputs of a step are at most a core's HBM; .npy/.npz files
/// larger than this are refused before they are read (docs/cli.md).
constexpr uint64_t kMaxNpyFileBytes = uint64_t(64) << 30;

bool readWholeFile(const std::string &path, std::vector<uint8_t> &out,
                   std::string &error) {
  // Bounded, and a FIFO or device is refused without being opened.
  std::string bytes;
  if (!readRegularFile(path, kMaxNpyFileBytes, bytes, error))
    return false;
  out.assign(bytes.begin(), bytes.end());
  return true;
}

/// A name next to `path` (same directory, hence same filesystem, so rename is
/// atomic) that no other writer, thread or process, will pick.
std::string temporaryPathFor(const std::string &path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

bool publish(const std::string &temporaryPath, const std::string &path,
             std::string &error) {
  std::string kindError;
  if (classifyOutput(path, kindError) == OutputKind::InPlace) {
    // A device or a pipe takes the archive's bytes; renaming would
    // replace it.
    std::string bytes;
    bool read = readRegularFile(temporaryPath, uint64_t(1) << 62, bytes, error);
    ::unlink(temporaryPath.c_str());
    return read && writeInPlace(path, bytes.data(), bytes.size(), error);
  }
  if (::rename(temporaryPath.c_str(), path.c_str()) != 0) {
    error = path +
            ": cannot rename the temporary file into place: " + errnoMessage();
    ::unlink(temporaryPath.c_str());
    return false;
  }
  return true;
}

struct ZipDiscarder {
  void operator()(zip_t *archive) const { zip_discard(archive); }
};
using ZipArchive = std::unique_ptr<zip_t, ZipDiscarder>;

struct ZipFileCloser {
  void operator()(zip_file_t *file) const { zip_fclose(file); }
};
using ZipFile = std::unique_ptr<zip_file_t, ZipFileCloser>;

std::string zipErrorMessage(int code) {
  zip_error_t zipError;
  zip_error_init_with_code(&zipError, code);
  std::string message = zip_error_strerror(&zipError);
  zip_error_fini(&zipError);
  return message;
}

bool endsWith(const std::string &text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// NpyArray
//===----------------------------------------------------------------------===//

int64_t NpyArray::numElements() const {
  int64_t product = 1;
  bool saturated = false;
  for (int64_t dim : shape) {
    if (dim <= 0)
      return 0;
    if (!saturated && __builtin_mul_overflow(product, dim, &product))
      saturated = true;
  }
  return saturated ? std::numeric_limits<int64_t>::max() : product;
}

double NpyArray::getDouble(int64_t index) const {
  if (index < 0 || !isSupportedDType(kind, itemSize) ||
      uint64_t(index) >= data.size() / itemSize)
    return std::numeric_limits<double>::quiet_NaN();
  uint64_t bits = loadLittleEndian(&data[size_t(index) * itemSize], itemSize);
  switch (kind) {
  case 'f':
    if (itemSize == 2)
      return decodeFloat(bits, DType::F16);
    if (itemSize == 4)
      return floatFromBits(uint32_t(bits));
    return doubleFromBits(bits);
  case 'i': {
    // Sign-extend from the item width.
    unsigned unusedBits = 64 - 8 * itemSize;
    return double(int64_t(bits << unusedBits) >> unusedBits);
  }
  case 'u':
    return double(bits);
  default: // 'b'
    return bits != 0 ? 1.0 : 0.0;
  }
}

int64_t NpyArray::getInt64(int64_t index) const {
  if (index < 0 || !isSupportedDType(kind, itemSize) ||
      uint64_t(index) >= data.size() / itemSize)
    return 0;
  if (kind == 'f') {
    double value = getDouble(index);
    // Converting an out-of-range double to an integer is undefined behaviour,
    // so saturate first. 2^63 is exact in double.
    constexpr double kTwoTo63 = 9223372036854775808.0;
    if (std::isnan(value))
      return 0;
    if (value >= kTwoTo63)
      return std::numeric_limits<int64_t>::max();
    if (value < -kTwoTo63)
      return std::numeric_limits<int64_t>::min();
    return int64_t(value); // Truncates toward zero.
  }
  uint64_t bits = loadLittleEndian(&data[size_t(index) * itemSize], itemSize);
  switch (kind) {
  case 'i': {
    unsigned unusedBits = 64 - 8 * itemSize;
    return int64_t(bits << unusedBits) >> unusedBits;
  }
  case 'u':
    return bits > uint64_t(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : int64_t(bits);
  default: // 'b'
    return bits != 0 ? 1 : 0;
  }
}

NpyArray NpyArray::fromDoubles(std::vector<int64_t> shape,
                               const std::vector<double> &values,
                               unsigned itemSize) {
  NpyArray array;
  array.kind = 'f';
  array.itemSize = itemSize;
  array.shape = std::move(shape);
  if (!isSupportedDType('f', itemSize))
    return array; // validate() reports the item size.
  array.data.resize(values.size() * itemSize);
  for (size_t i = 0; i < values.size(); ++i) {
    // encodeFloat rather than a cast to float: it rounds to nearest even
    // whatever floating-point rounding mode the caller has set.
    uint64_t bits;
    if (itemSize == 2)
      bits = encodeFloat(values[i], DType::F16);
    else if (itemSize == 4)
      bits = encodeFloat(values[i], DType::F32);
    else
      bits = doubleBits(values[i]);
    storeLittleEndian(bits, itemSize, &array.data[i * itemSize]);
  }
  return array;
}

NpyArray NpyArray::fromInt64s(std::vector<int64_t> shape,
                              const std::vector<int64_t> &values, char kind,
                              unsigned itemSize) {
  NpyArray array;
  array.kind = kind;
  array.itemSize = itemSize;
  array.shape = std::move(shape);
  if (kind == 'f' || !isSupportedDType(kind, itemSize))
    return array; // validate() reports the dtype.
  array.data.resize(values.size() * itemSize);
  for (size_t i = 0; i < values.size(); ++i) {
    uint64_t bits =
        kind == 'b' ? uint64_t(values[i] != 0) : uint64_t(values[i]);
    storeLittleEndian(bits, itemSize, &array.data[i * itemSize]);
  }
  return array;
}

std::string NpyArray::descr() const {
  std::string result;
  result += itemSize == 1 ? '|' : '<';
  result += kind;
  result += std::to_string(itemSize);
  return result;
}

bool NpyArray::validate(std::string &error) const {
  if (!isSupportedDType(kind, itemSize)) {
    error = "unsupported dtype '" + excerpt(descr(), 40) +
            "'; supported: " + kSupportedDescrs;
    return false;
  }
  if (shape.size() > kMaxRank) {
    error = "array has " + std::to_string(shape.size()) +
            " dimensions; NumPy allows at most " + std::to_string(kMaxRank);
    return false;
  }
  uint64_t count;
  size_t bytes;
  if (!computeSizes(shape, itemSize, count, bytes, error))
    return false;
  if (data.size() != bytes) {
    error = "array data has " + std::to_string(data.size()) +
            " bytes but shape " + shapeToString(shape) + " of " + descr() +
            " needs " + std::to_string(bytes);
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

bool parseNpy(const uint8_t *bytes, size_t size, NpyArray &out,
              std::string &error) {
  size_t magicPrefix = std::min(size, kMagicSize);
  if (size == 0 || std::memcmp(bytes, kMagic, magicPrefix) != 0) {
    error = "not a .npy file: it does not start with the magic "
            "\"\\x93NUMPY\" (found \"" +
            excerpt(std::string_view(reinterpret_cast<const char *>(bytes),
                                     magicPrefix)) +
            "\")";
    return false;
  }
  if (size < kMagicSize + 2) {
    error = "truncated .npy file: " + std::to_string(size) +
            " bytes, too short to hold the format version";
    return false;
  }
  unsigned major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    error = "unsupported .npy format version " + std::to_string(major) + "." +
            std::to_string(minor) + "; this reader handles 1.0, 2.0 and 3.0";
    return false;
  }
  // Version 1.0 has a 2-byte header length, 2.0 and 3.0 a 4-byte one.
  size_t lengthSize = major == 1 ? 2 : 4;
  size_t preambleSize = kMagicSize + 2 + lengthSize;
  if (size < preambleSize) {
    error = "truncated .npy file: " + std::to_string(size) +
            " bytes, shorter than the " + std::to_string(preambleSize) +
            "-byte preamble";
    return false;
  }
  uint64_t headerLength = loadLittleEndian(bytes + 8, unsigned(lengthSize));
  if (headerLength > size - preambleSize) {
    error = "truncated .npy header: header length says " +
            std::to_string(headerLength) + " bytes but only " +
            std::to_string(size - preambleSize) + " follow";
    return false;
  }
  std::string_view headerText(
      reinterpret_cast<const char *>(bytes + preambleSize),
      size_t(headerLength));

  std::string descrText;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  HeaderParser parser(headerText);
  if (!parser.parse(descrText, fortranOrder, shape, error))
    return false;

  char kind = 0;
  unsigned itemSize = 0;
  bool byteSwap = false;
  if (!parseDescr(descrText, kind, itemSize, byteSwap, error))
    return false;

  uint64_t numElements;
  size_t numBytes;
  if (!computeSizes(shape, itemSize, numElements, numBytes, error))
    return false;
  size_t dataOffset = preambleSize + size_t(headerLength);
  size_t available = size - dataOffset;
  if (available != numBytes) {
    error = std::string(available < numBytes ? "truncated data"
                                             : "unexpected trailing bytes") +
            ": header says " + std::to_string(numElements) + " elements of " +
            descrText + " (" + std::to_string(numBytes) + " bytes) but " +
            std::to_string(available) + " bytes follow";
    return false;
  }

  NpyArray array;
  array.kind = kind;
  array.itemSize = itemSize;
  array.shape = std::move(shape);
  array.data.assign(bytes + dataOffset, bytes + size);
  if (byteSwap) {
    for (size_t offset = 0; offset < numBytes; offset += itemSize)
      std::reverse(&array.data[offset], &array.data[offset] + itemSize);
  }
  if (fortranOrder && array.shape.size() > 1)
    array.data =
        fortranToCOrder(array.data, array.shape, itemSize, numElements);
  out = std::move(array);
  return true;
}

bool serializeNpy(const NpyArray &array, std::vector<uint8_t> &out,
                  std::string &error) {
  if (!array.validate(error))
    return false;
  std::string header =
      "{'descr': '" + array.descr() +
      "', 'fortran_order': False, 'shape': " + shapeToString(array.shape) +
      ", }";
  // Pad with spaces and end with a newline so the data starts aligned, as
  // NumPy does. Prefer version 1.0, which every reader understands.
  unsigned major = 1;
  size_t preambleSize = kMagicSize + 2 + 2;
  size_t unpadded = preambleSize + header.size() + 1;
  if (unpadded + kHeaderAlignment > 0xFFFF + preambleSize) {
    major = 2;
    preambleSize = kMagicSize + 2 + 4;
    unpadded = preambleSize + header.size() + 1;
  }
  size_t padding =
      (kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment;
  header.append(padding, ' ');
  header += '\n';

  out.clear();
  out.reserve(preambleSize + header.size() + array.data.size());
  out.insert(out.end(), kMagic, kMagic + kMagicSize);
  out.push_back(uint8_t(major));
  out.push_back(0);
  size_t lengthSize = preambleSize - kMagicSize - 2;
  out.resize(out.size() + lengthSize);
  storeLittleEndian(header.size(), unsigned(lengthSize), &out[kMagicSize + 2]);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return true;
}

bool readNpy(const std::string &path, NpyArray &out, std::string &error) {
  std::vector<uint8_t> bytes;
  if (!readWholeFile(path, bytes, error))
    return false;
  if (!parseNpy(bytes.data(), bytes.size(), out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error) {
  std::vector<uint8_t> bytes;
  if (!serializeNpy(array, bytes, error)) {
    error = path + ": " + error;
    return false;
  }
  return writeFileAtomically(path, bytes.data(), bytes.size(), error);
}

//===----------------------------------------------------------------------===//
// .npz
//===----------------------------------------------------------------------===//

bool readNpz(const std::string &path,
             std::vector<std::pair<std::string, NpyArray>> &out,
             std::string &error) {
  // libzip would open a FIFO (and wait) or a device: check the path first.
  int checked = openRegularFile(path, kMaxNpyFileBytes, error);
  if (checked < 0)
    return false;
  ::close(checked);
  int openError = 0;
  ZipArchive archive(zip_open(path.c_str(), ZIP_RDONLY, &openError));
  if (!archive) {
    error = path + ": cannot open as an .npz (zip) archive: " +
            zipErrorMessage(openError);
    return false;
  }
  struct stat archiveStatus;
  uint64_t archiveBytes = ::stat(path.c_str(), &archiveStatus) == 0
                              ? uint64_t(archiveStatus.st_size)
                              : 0;
  std::vector<std::pair<std::string, NpyArray>> arrays;
  std::set<std::string> names;
  zip_int64_t numEntries = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < numEntries; ++i) {
    zip_stat_t status;
    if (zip_stat_index(archive.get(), zip_uint64_t(i), 0, &status) != 0 ||
        !(status.valid & ZIP_STAT_NAME) || !(status.valid & ZIP_STAT_SIZE)) {
      error = path + ": cannot read zip entry " + std::to_string(i) + ": " +
              zip_strerror(archive.get());
      return false;
    }
    std::string name = status.name;
    if (endsWith(name, "/"))
      continue; // A directory, not an array.
    if (endsWith(name, ".npy"))
      name.resize(name.size() - 4);
    std::string context = path + ": entry '" + excerpt(name, 100) + "': ";

    ZipFile file(zip_fopen_index(archive.get(), zip_uint64_t(i), 0));
    if (!file) {
      error = context + "cannot open: " + zip_strerror(archive.get());
      return false;
    }
    // Grow the buffer as data actually arrives. The declared size is only a
    // hint, trusted up to what the archive's size could hold (deflate expands
    // at most about 1032 times), so a corrupt size cannot force a huge
    // allocation.
    std::vector<uint8_t> bytes;
    constexpr size_t kChunk = size_t(1) << 20;
    uint64_t plausibleSize = archiveBytes > (uint64_t(1) << 40)
                                 ? status.size
                                 : archiveBytes * 1032 + kChunk;
    bytes.reserve(size_t(std::min<uint64_t>(status.size, plausibleSize)));
    while (true) {
      size_t used = bytes.size();
      bytes.resize(used + kChunk);
      zip_int64_t n = zip_fread(file.get(), bytes.data() + used, kChunk);
      if (n < 0) {
        error = context + "cannot decompress: " + zip_file_strerror(file.get());
        return false;
      }
      bytes.resize(used + size_t(n));
      if (n == 0)
        break;
    }
    if (bytes.size() != status.size) {
      error = context + "is " + std::to_string(bytes.size()) +
              " bytes but the archive directory says " +
              std::to_string(status.size) + "; the archive is corrupt";
      return false;
    }

    if (!names.insert(name).second) {
      error = context + "duplicate array name '" + excerpt(name, 100) + "'";
      return false;
    }
    NpyArray array;
    std::string parseError;
    if (!parseNpy(bytes.data(), bytes.size(), array, parseError)) {
      error = context + parseError;
      return false;
    }
    arrays.emplace_back(std::move(name), std::move(array));
  }
  out = std::move(arrays);
  return true;
}

bool writeNpz(const std::string &path,
              const std::vector<std::pair<std::string, NpyArray>> &arrays,
              std::string &error) {
  // Serialise everything first: libzip reads the buffers only at zip_close.
  std::vector<std::vector<uint8_t>> files(arrays.size());
  std::set<std::string> names;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const std::string &name = arrays[i].first;
    if (name.empty()) {
      error = path + ": array " + std::to_string(i) + " has an empty name";
      return false;
    }
    if (!names.insert(name).second) {
      error = path + ": duplicate array name '" + name + "'";
      return false;
    }
    std::string serializeError;
    if (!serializeNpy(arrays[i].second, files[i], serializeError)) {
      error = path + ": array '" + name + "': " + serializeError;
      return false;
    }
  }

  if (arrays.empty()) {
    // libzip deletes an archive left empty, so write the 22-byte end of
    // central directory record of an empty zip (as np.savez does) ourselves.
    const uint8_t emptyZip[22] = {'P', 'K', 5, 6};
    return writeFileAtomically(path, emptyZip, sizeof(emptyZip), error);
  }

  std::string kindError;
  OutputKind kind = classifyOutput(path, kindError);
  if (kind == OutputKind::Refuse) {
    error = kindError;
    return false;
  }
  // Beside the output, so that the rename is atomic; for a device or a
  // pipe (whose directory may not be writable, /dev) in the temporary
  // directory, copied in by publish.
  std::string temporaryPath = temporaryPathFor(
      kind == OutputKind::InPlace
          ? std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") +
                "/trn-npz"
          : path);
  int openError = 0;
  ZipArchive archive(
      zip_open(temporaryPath.c_str(), ZIP_CREATE | ZIP_EXCL, &openError));
  if (!archive) {
    error = path + ": cannot create a temporary archive next to it: " +
            zipErrorMessage(openError) +
            "; check that the directory exists and is writable";
    return false;
  }
  for (size_t i = 0; i < arrays.size(); ++i) {
    std::string entryName = arrays[i].first + ".npy";
    zip_source_t *source =
        zip_source_buffer(archive.get(), files[i].data(), files[i].size(), 0);
    zip_int64_t index = source ? zip_file_add(archive.get(), entryName.c_str(),
                                              source, ZIP_FL_ENC_UTF_8)
                               : -1;
    if (index < 0) {
      if (source)
        zip_source_free(source);
      error = path + ": cannot add '" + entryName +
              "': " + zip_strerror(archive.get());
      return false;
    }
    // A fixed timestamp (1980-01-01, the earliest DOS time) makes the same
    // arrays give the same bytes, so outputs can be compared and cached.
    if (zip_file_set_mtime(archive.get(), zip_uint64_t(index), 315532800, 0) !=
        0) {
      error = path + ": cannot set the time of '" + entryName +
              "': " + zip_strerror(archive.get());
      return false;
    }
    if (zip_set_file_compression(archive.get(), zip_uint64_t(index),
                                 ZIP_CM_STORE, 0) != 0) {
      error = path + ": cannot store '" + entryName +
              "' uncompressed: " + zip_strerror(archive.get());
      return false;
    }
  }
  // zip_close writes the archive (itself through a temporary file); on
  // failure the handle stays open and the deleter discards it.
  if (zip_close(archive.get()) != 0) {
    error = path + ": cannot write the archive: " + zip_strerror(archive.get());
    ::unlink(temporaryPath.c_str());
    return false;
  }
  archive.release();
  return publish(temporaryPath, path, error);
}

} // namespace trnrt
