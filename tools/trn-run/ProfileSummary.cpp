//===- ProfileSummary.cpp - summary and timeline of a simulated run -------===//

#include "ProfileSummary.h"

#include "trnrt/Artifact.h"
#include "trnrt/IsaValidate.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <map>
#include <tuple>
#include <vector>

namespace trnrt {

namespace {

struct StreamRow {
  unsigned stream;
  const StreamStats *stats;
};

struct OpcodeRow {
  std::string engine;
  Opcode opcode;
  uint64_t count = 0;
  double totalNs = 0.0;
};

std::string engineOfStream(uint32_t stream) {
  return stream < kNumEngineStreams ? engineName(Engine(stream)) : "dma";
}

std::vector<StreamRow> usedStreams(const SimulationStats &stats) {
  std::vector<StreamRow> rows;
  for (unsigned e = 0; e < kNumEngineStreams; ++e)
    if (stats.engines[e].instructions)
      rows.push_back({e, &stats.engines[e]});
  for (unsigned q = 0; q < stats.dmaQueues.size(); ++q)
    if (stats.dmaQueues[q].instructions)
      rows.push_back({kNumEngineStreams + q, &stats.dmaQueues[q]});
  return rows;
}

/// Opcodes by total time (descending; ties by engine, then opcode).
std::vector<OpcodeRow> opcodeRows(const SimulationStats &stats) {
  std::map<std::pair<std::string, Opcode>, OpcodeRow> byKey;
  for (const InstructionRecord &record : stats.records) {
    std::string engine = engineOfStream(record.stream);
    OpcodeRow &row = byKey[{engine, record.opcode}];
    row.engine = engine;
    row.opcode = record.opcode;
    ++row.count;
    row.totalNs += record.endNs - record.startNs;
  }
  std::vector<OpcodeRow> rows;
  for (auto &[key, row] : byKey)
    rows.push_back(row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const OpcodeRow &a, const OpcodeRow &b) {
                     return a.totalNs > b.totalNs;
                   });
  return rows;
}

/// The `top` longest instructions (ties: earlier start, lower stream, lower
/// index first).
std::vector<InstructionRecord> longest(const SimulationStats &stats,
                                       size_t top) {
  std::vector<InstructionRecord> records = stats.records;
  auto key = [](const InstructionRecord &r) {
    return std::make_tuple(-(r.endNs - r.startNs), r.startNs, r.stream,
                           r.index);
  };
  const size_t count = std::min(top, records.size());
  std::partial_sort(
      records.begin(), records.begin() + count, records.end(),
      [&](const InstructionRecord &a, const InstructionRecord &b) {
        return key(a) < key(b);
      });
  records.resize(count);
  return records;
}

void appendf(std::string &out, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

void appendf(std::string &out, const char *format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  out += line;
}

double mib(uint64_t bytes) { return double(bytes) / 1048576.0; }

} // namespace

namespace {
/// The `top` origins by compute-engine time, then DMA bytes.
std::vector<size_t> topOrigins(const SimulationStats &stats, size_t top) {
  std::vector<size_t> order;
  for (size_t i = 1; i < stats.originBusyNs.size(); ++i)
    if (stats.originBusyNs[i] > 0.0 || stats.originDmaBytes[i] > 0)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (stats.originBusyNs[a] != stats.originBusyNs[b])
      return stats.originBusyNs[a] > stats.originBusyNs[b];
    return stats.originDmaBytes[a] > stats.originDmaBytes[b];
  });
  if (order.size() > top)
    order.resize(top);
  return order;
}
} // namespace

std::string formatProfileSummary(const SimulationStats &stats,
                                 const std::string &target, size_t top,
                                 const std::vector<std::string> &origins) {
  std::string out;
  const double device = stats.deviceTimeNs;
  auto percent = [device](double ns) {
    return device > 0.0 ? 100.0 * ns / device : 0.0;
  };
  appendf(out, "profile summary (simulated %s NeuronCore)\n", target.c_str());
  appendf(out, "  device time          %.3f us\n", device / 1000.0);
  appendf(out, "  instructions         %llu\n",
          static_cast<unsigned long long>(stats.instructions));
  appendf(out, "  tensor engine        %.1f%% utilisation\n",
          stats.tensorEngineUtilisation * 100.0);
  appendf(out,
          "  mfu                  %.1f%% (%.1f%% of the bf16 peak, %.1f%% of "
          "the fp32 peak)\n",
          stats.mfu * 100.0, stats.mfuBf16Peak * 100.0,
          stats.mfuFp32Peak * 100.0);
  appendf(out,
          "  matmul flops         %llu (%llu with fp32 inputs), transposes "
          "%llu\n",
          static_cast<unsigned long long>(stats.matmulFlops),
          static_cast<unsigned long long>(stats.fp32MatmulFlops),
          static_cast<unsigned long long>(stats.transposeFlops));
  appendf(out,
          "  dma traffic          hbm->sbuf %.3f MiB, sbuf->hbm %.3f MiB, "
          "sbuf->sbuf %.3f MiB, hbm->hbm %.3f MiB\n",
          mib(stats.hbmToSbufBytes), mib(stats.sbufToHbmBytes),
          mib(stats.sbufToSbufBytes), mib(stats.hbmToHbmBytes));
  appendf(out,
          "  on-chip traffic      sbuf read %.3f MiB, sbuf write %.3f MiB, "
          "psum read %.3f MiB, psum write %.3f MiB\n",
          mib(stats.sbufReadBytes), mib(stats.sbufWriteBytes),
          mib(stats.psumReadBytes), mib(stats.psumWriteBytes));
  appendf(out, "  spills               %.3f MiB saved, %.3f MiB reloaded\n",
          mib(stats.spillSaveBytes), mib(stats.spillReloadBytes));
  appendf(out,
          "  scratch              %.3f MiB written, %.3f MiB read "
          "(intermediates in HBM)\n",
          mib(stats.scratchSaveBytes), mib(stats.scratchReloadBytes));
  appendf(out,
          "  dma transfers        %llu, average %.0f bytes, queues active "
          "%.1f%%\n",
          static_cast<unsigned long long>(stats.dmaCount),
          stats.averageDmaBytes, stats.dmaActivePercent);

  appendf(out, "\n%-14s %8s %12s %7s %12s %12s %12s\n", "stream", "instrs",
          "busy us", "busy %", "sem wait us", "port wait us", "dma wait us");
  for (const StreamRow &row : usedStreams(stats)) {
    const StreamStats &s = *row.stats;
    appendf(out, "%-14s %8llu %12.3f %6.1f%% %12.3f %12.3f %12.3f\n",
            streamName(row.stream).c_str(),
            static_cast<unsigned long long>(s.instructions), s.busyNs / 1000.0,
            s.busyPercent, s.semaphoreWaitNs / 1000.0, s.portWaitNs / 1000.0,
            s.dmaEngineWaitNs / 1000.0);
  }

  appendf(out, "\n%-14s %-7s %8s %12s %9s %12s\n", "opcode", "engine", "count",
          "total us", "% device", "mean ns");
  for (const OpcodeRow &row : opcodeRows(stats))
    appendf(out, "%-14s %-7s %8llu %12.3f %8.1f%% %12.1f\n",
            opcodeName(row.opcode), row.engine.c_str(),
            static_cast<unsigned long long>(row.count), row.totalNs / 1000.0,
            percent(row.totalNs), row.totalNs / double(row.count));

  std::vector<InstructionRecord> slowest = longest(stats, top);
  appendf(out, "\ntop %zu instructions by time\n", slowest.size());
  appendf(out, "%-14s %8s %-14s %12s %12s\n", "stream", "index", "opcode",
          "start us", "duration ns");
  for (const InstructionRecord &record : slowest)
    appendf(out, "%-14s %8u %-14s %12.3f %12.1f\n",
            streamName(record.stream).c_str(), record.index,
            opcodeName(record.opcode), record.startNs / 1000.0,
            record.endNs - record.startNs);
  std::vector<size_t> ops = topOrigins(stats, top);
  if (!ops.empty()) {
    appendf(out, "\ntop %zu trn ops by engine time (subroutines: all calls)\n",
            ops.size());
    appendf(out, "%12s %12s  %s\n", "engine us", "dma MiB", "op");
    for (size_t i : ops)
      appendf(out, "%12.3f %12.3f  %s\n", stats.originBusyNs[i] / 1000.0,
              mib(stats.originDmaBytes[i]),
              i - 1 < origins.size() ? origins[i - 1].c_str() : "?");
  }
  return out;
}

nlohmann::json profileSummaryJson(const SimulationStats &stats, size_t top,
                                  const std::vector<std::string> &origins) {
  nlohmann::json streams = nlohmann::json::array();
  for (const StreamRow &row : usedStreams(stats))
    streams.push_back({{"stream", streamName(row.stream)},
                       {"instructions", row.stats->instructions},
                       {"busy_ns", row.stats->busyNs},
                       {"busy_percent", row.stats->busyPercent},
                       {"semaphore_wait_ns", row.stats->semaphoreWaitNs},
                       {"port_wait_ns", row.stats->portWaitNs},
                       {"dma_engine_wait_ns", row.stats->dmaEngineWaitNs}});
  nlohmann::json opcodes = nlohmann::json::array();
  for (const OpcodeRow &row : opcodeRows(stats))
    opcodes.push_back({{"opcode", opcodeName(row.opcode)},
                       {"engine", row.engine},
                       {"count", row.count},
                       {"total_ns", row.totalNs}});
  nlohmann::json slowest = nlohmann::json::array();
  for (const InstructionRecord &record : longest(stats, top))
    slowest.push_back({{"stream", streamName(record.stream)},
                       {"index", record.index},
                       {"opcode", opcodeName(record.opcode)},
                       {"start_ns", record.startNs},
                       {"duration_ns", record.endNs - record.startNs}});
  return {{"spill_save_bytes", stats.spillSaveBytes},
          {"spill_reload_bytes", stats.spillReloadBytes},
          {"scratch_write_bytes", stats.scratchSaveBytes},
          {"scratch_read_bytes", stats.scratchReloadBytes},
          {"sbuf_read_bytes", stats.sbufReadBytes},
          {"sbuf_write_bytes", stats.sbufWriteBytes},
          {"psum_read_bytes", stats.psumReadBytes},
          {"psum_write_bytes", stats.psumWriteBytes},
          {"streams", streams},
          {"opcodes", opcodes},
          {"top_instructions", slowest},
          {"top_ops", [&] {
             nlohmann::json ops = nlohmann::json::array();
             for (size_t i : topOrigins(stats, top))
               ops.push_back(
                   {{"op", i - 1 < origins.size() ? origins[i - 1] : "?"},
                    {"engine_ns", stats.originBusyNs[i]},
                    {"dma_bytes", stats.originDmaBytes[i]}});
             return ops;
           }()}};
}

nlohmann::json timeByKindJson(const SimulationStats &stats) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t k = 0; k < kNumInstructionKinds; ++k)
    out[instructionKindName(InstructionKind(k))] = stats.kindNs[k];
  out["idle"] = stats.idleNs;
  return out;
}

std::string formatTimeByKind(const SimulationStats &stats) {
  if (stats.deviceTimeNs <= 0.0)
    return "";
  std::string out = "time by kind     ";
  for (size_t k = 1; k <= kNumInstructionKinds; ++k) {
    size_t kind = k % kNumInstructionKinds; // "other" last
    if (stats.kindNs[kind] > 0.0)
      appendf(out, "%s %.1f%%, ", instructionKindName(InstructionKind(kind)),
              100.0 * stats.kindNs[kind] / stats.deviceTimeNs);
  }
  appendf(out, "idle %.1f%%\n", 100.0 * stats.idleNs / stats.deviceTimeNs);
  return out;
}

/// The Chrome-trace JSON of one run: a process per core, a thread per
/// stream, one complete ("X") event per instruction, times in microseconds.
/// An instruction's args name the trn op it implements (when the artifact
/// records origins), so the timeline shows where each op runs.
bool writeProfile(const std::string &path, const SimulationStats &stats,
                  const Program &program, std::string &error) {
  nlohmann::json events = nlohmann::json::array();
  std::map<uint32_t, bool> streams;
  auto originOf = [&](const InstructionRecord &record) -> const std::string * {
    uint32_t origin = record.origin;
    if (origin == 0 || origin > program.origins.size())
      return nullptr;
    return &program.origins[origin - 1];
  };
  for (const InstructionRecord &record : stats.records) {
    streams[record.stream] = true;
    nlohmann::json args = {{"index", record.index}};
    if (const std::string *origin = originOf(record))
      args["op"] = *origin;
    events.push_back({{"name", opcodeName(record.opcode)},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", record.stream},
                      {"ts", record.startNs / 1000.0},
                      {"dur", (record.endNs - record.startNs) / 1000.0},
                      {"args", std::move(args)}});
  }
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", "NeuronCore 0 (simulated)"}}}});
  for (const auto &[stream, used] : streams)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", stream},
                      {"args", {{"name", streamName(stream)}}}});
  return writeTraceEvents(path, events, error);
}

bool writeTraceEvents(const std::string &path, const nlohmann::json &events,
                      std::string &error) {
  std::ofstream out(path);
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}
             .dump();
  if (!out) {
    error = path + ": cannot write the profile";
    return false;
  }
  return true;
}

} // namespace trnrt
