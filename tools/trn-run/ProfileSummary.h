//===- ProfileSummary.h - neuron-profile-style text summary -----*- C++ -*-===//
//
// The summary `trn-run --profile-summary` prints after a run: device time,
// Tensor Engine utilisation and MFU, DMA and on-chip (SBUF/PSUM) traffic, one
// row per engine stream and DMA queue (busy time, instructions, time stalled
// on semaphores, ports and the shared DMA engines), time per opcode, and the
// longest instructions. docs/cli.md shows an example.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_TOOLS_TRN_RUN_PROFILESUMMARY_H
#define TRN_TOOLS_TRN_RUN_PROFILESUMMARY_H

#include "trnrt/Isa.h"
#include "trnrt/Simulator.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace trnrt {

/// The summary as text (every line ends in '\n'). `stats` must come from a
/// run with SimulatorOptions::recordInstructions (for the opcode and
/// instruction tables); `top` is how many instructions (and trn ops, named
/// by the program's `origins`) the last tables list.
std::string formatProfileSummary(const SimulationStats &stats,
                                 const std::string &target, size_t top,
                                 const std::vector<std::string> &origins = {});

/// The same figures as JSON: "sbuf_read_bytes" and the other on-chip byte
/// counts, "streams", "opcodes" and "top_instructions" (times in ns).
nlohmann::json profileSummaryJson(const SimulationStats &stats, size_t top,
                                  const std::vector<std::string> &origins = {});

/// The device time split by kind (SimulationStats::kindNs, idleNs):
/// {"matmul": ns, ..., "idle": ns}.
nlohmann::json timeByKindJson(const SimulationStats &stats);

/// "time by kind     matmul 45.1%, ..., idle 3.0%\n" (the kinds that ran,
/// "other" last), or nothing for an empty run.
std::string formatTimeByKind(const SimulationStats &stats);

/// Writes the run's timeline to `path` as Chrome-trace JSON (Perfetto): a
/// track per engine stream and DMA queue, one slice per instruction with the
/// trn op it implements (when the program records origins). `stats` must
/// come from a run with SimulatorOptions::recordInstructions.
bool writeProfile(const std::string &path, const SimulationStats &stats,
                  const Program &program, std::string &error);

/// Writes Chrome-trace `events` (a JSON array) to `path`; false with a
/// one-line `error` when the file cannot be written.
bool writeTraceEvents(const std::string &path, const nlohmann::json &events,
                      std::string &error);

} // namespace trnrt

#endif // TRN_TOOLS_TRN_RUN_PROFILESUMMARY_H
