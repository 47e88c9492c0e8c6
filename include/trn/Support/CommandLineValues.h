//===- CommandLineValues.h - sizes and durations the tools take -*- C++ -*-===//
//
// The values people type for a size or a duration, shared by trn-cc
// (--lock-timeout), trn-cache (--older-than, --max-size) and
// trn-parallel-compile (--timeout-per-graph), and the one way durations are
// printed back (trn-cc, trn-parallel-compile, the cache's messages). Plain
// C++17, no MLIR or LLVM: the MLIR-free tools and the cache link it too.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_SUPPORT_COMMANDLINEVALUES_H
#define TRN_SUPPORT_COMMANDLINEVALUES_H

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::trn {

/// Parses sizes like `10G`, `512M`, `1.5T`, `4096` (bytes; K/M/G/T are powers
/// of 1024) and durations like `30s`, `15m`, `2h`, `7d`.
std::optional<int64_t> parseSize(const std::string &text);
std::optional<double> parseDuration(const std::string &text);

/// A duration in messages: "12.5 ms" below a second, "2.35 s" below a
/// minute, then "4m05s" and "2h03m".
std::string formatSeconds(double seconds);

} // namespace mlir::trn

#endif // TRN_SUPPORT_COMMANDLINEVALUES_H
