//===- CommandLineValues.cpp - sizes and durations on command lines -------===//
//
// A number, then a unit (case-insensitive, blanks around either allowed).
//
//===----------------------------------------------------------------------===//

#include "trn/Support/CommandLineValues.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace mlir::trn {

/// Splits "1.5G" into 1.5 and "G"; false if there is no leading number.
static bool splitNumber(const std::string &text, double &number,
                        std::string &unit) {
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  if (begin == std::string::npos)
    return false;
  std::string trimmed = text.substr(begin, end - begin + 1);
  size_t digits = 0;
  bool seenDigit = false, seenDot = false;
  while (digits < trimmed.size()) {
    char c = trimmed[digits];
    if (c >= '0' && c <= '9')
      seenDigit = true;
    else if (c == '.' && !seenDot)
      seenDot = true;
    else
      break;
    ++digits;
  }
  if (!seenDigit)
    return false;
  number = std::strtod(trimmed.substr(0, digits).c_str(), nullptr);
  unit = trimmed.substr(digits);
  unit.erase(0, std::min(unit.size(), unit.find_first_not_of(" \t")));
  for (char &c : unit)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::isfinite(number);
}

std::optional<int64_t> parseSize(const std::string &text) {
  double number = 0;
  std::string unit;
  if (!splitNumber(text, number, unit))
    return std::nullopt;
  static const std::map<std::string, double> units = {{"", 1},
                                                      {"b", 1},
                                                      {"k", 1024.0},
                                                      {"kb", 1024.0},
                                                      {"kib", 1024.0},
                                                      {"m", 1048576.0},
                                                      {"mb", 1048576.0},
                                                      {"mib", 1048576.0},
                                                      {"g", 1073741824.0},
                                                      {"gb", 1073741824.0},
                                                      {"gib", 1073741824.0},
                                                      {"t", 1099511627776.0},
                                                      {"tb", 1099511627776.0},
                                                      {"tib", 1099511627776.0}};
  auto found = units.find(unit);
  if (found == units.end())
    return std::nullopt;
  double bytes = number * found->second;
  if (bytes >= 9.2e18)
    return std::nullopt;
  return static_cast<int64_t>(bytes);
}

std::optional<double> parseDuration(const std::string &text) {
  double number = 0;
  std::string unit;
  if (!splitNumber(text, number, unit))
    return std::nullopt;
  static const std::map<std::string, double> units = {
      {"", 1},     {"s", 1},    {"sec", 1},   {"m", 60},
      {"min", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400}};
  auto found = units.find(unit);
  if (found == units.end())
    return std::nullopt;
  return number * found->second;
}

std::string formatSeconds(double seconds) {
  char text[32];
  if (seconds < 1.0)
    std::snprintf(text, sizeof(text), "%.1f ms", seconds * 1e3);
  else if (seconds < 60)
    std::snprintf(text, sizeof(text), "%.2f s", seconds);
  else if (seconds < 3600)
    std::snprintf(text, sizeof(text), "%dm%02ds", int(seconds) / 60,
                  int(seconds) % 60);
  else
    std::snprintf(text, sizeof(text), "%dh%02dm", int(seconds) / 3600,
                  int(seconds) % 3600 / 60);
  return text;
}

} // namespace mlir::trn
