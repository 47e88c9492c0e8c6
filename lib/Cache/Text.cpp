//===- Text.cpp - text helpers of the MLIR-free tools ---------------------===//

#include "trn/Cache/Text.h"

#include "trn/Cache/Key.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace mlir::trn::cache {

std::string toolVersion(std::string_view tool,
                        const std::vector<std::string_view> &targets) {
  std::string text = std::string(tool) + " " + TRN_VERSION_STRING + "\n";
  text += std::string("compiler version ") + compilerVersion() +
          " (cache entries under <cache-dir>/trncc-" + compilerVersion() +
          "/)\n";
  text += std::string("LLVM/MLIR ") + TRN_LLVM_VERSION_STRING + "\n";
  if (!targets.empty()) {
    text += "targets:";
    for (std::string_view target : targets)
      text.append(" ").append(target);
    text += " (default " + std::string(targets.front()) + ")\n";
  }
  return text;
}

std::map<std::string, std::string> parseNormalizedFlags(std::string_view text) {
  std::map<std::string, std::string> values;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find(';', begin);
    std::string_view item = text.substr(begin, end == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : end - begin);
    size_t equals = item.find('=');
    if (!item.empty())
      values[std::string(item.substr(0, equals))] =
          equals == std::string_view::npos
              ? ""
              : std::string(item.substr(equals + 1));
    begin = end == std::string_view::npos ? text.size() : end + 1;
  }
  return values;
}

std::string countOf(int64_t count, std::string_view noun,
                    std::string_view plural) {
  std::string text = std::to_string(count) + " ";
  if (count == 1)
    return text.append(noun);
  if (!plural.empty())
    return text.append(plural);
  return text.append(noun).append("s");
}

std::string formatSize(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit ? "%.1f %s" : "%.0f %s", value,
                units[unit]);
  return text;
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

} // namespace mlir::trn::cache
