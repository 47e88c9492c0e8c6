//===- cache-bench.cpp - compile-cache latency, throughput, compression ---===//
//
//   bench-cache [--dir DIR] [--entries N] [--lookups N] [--artifact-kib N]
//               [--json out.json]
//
// Publishes N entries (a real trn graph as the stored graph, a synthetic
// artifact), then measures hit-lookup latency (p50/p99), lookup plus a
// verified artifact read, miss latency, and the graph compression ratio.
// Prints a table and writes JSON.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Cache.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace mlir::trn::cache;
using mlir::trn::hashBytes;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double percentile(std::vector<double> values, double p) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t index = std::min(values.size() - 1,
                          static_cast<size_t>(p * (values.size() - 1) + 0.5));
  return values[index];
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

} // namespace

int main(int argc, char **argv) {
  std::string dir, jsonPath;
  int entries = 200, lookups = 5000, artifactKiB = 256;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "bench-cache: " << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--dir")
      dir = next();
    else if (arg == "--entries")
      entries = std::stoi(next());
    else if (arg == "--lookups")
      lookups = std::stoi(next());
    else if (arg == "--artifact-kib")
      artifactKiB = std::stoi(next());
    else if (arg == "--json")
      jsonPath = next();
    else {
      std::cerr << "bench-cache: unknown option " << arg << "\n";
      return 2;
    }
  }
  bool ownDir = dir.empty();
  if (ownDir)
    dir = (std::filesystem::temp_directory_path() /
           ("trn-cache-bench-" + std::to_string(getpid())))
              .string();

  std::string graph =
      readFile(TRN_SOURCE_DIR "/test/Eval/transformer-block.mlir");
  if (graph.empty()) {
    std::cerr << "bench-cache: cannot read the sample graph\n";
    return 1;
  }
  CacheOptions options;
  options.root = dir;
  options.warn = [](const std::string &message) {
    std::cerr << "bench-cache: " << message << "\n";
  };
  Result<Cache> cache = Cache::open(options);
  if (!cache) {
    std::cerr << "bench-cache: " << cache.error << "\n";
    return 1;
  }

  // Artifacts compress like real ones only partly: half random, half zeros.
  std::mt19937_64 rng(42);
  std::vector<CacheKey> keys;
  auto publishStart = Clock::now();
  for (int i = 0; i < entries; ++i) {
    CacheKey key{hashBytes("graph-" + std::to_string(i)), hashBytes("flags")};
    CompileOutput output;
    output.artifact.resize(static_cast<size_t>(artifactKiB) * 1024);
    for (size_t b = 0; b < output.artifact.size() / 2; ++b)
      output.artifact[b] = static_cast<uint8_t>(rng());
    output.log = "bench compile\n";
    output.metadata.graphName = "bench-" + std::to_string(i);
    output.metadata.compilerVersion = compilerVersion();
    Result<Entry> entry =
        cache->publish(key, graph + std::to_string(i), output);
    if (!entry) {
      std::cerr << "bench-cache: publish failed: " << entry.error << "\n";
      return 1;
    }
    keys.push_back(key);
  }
  double publishSeconds = secondsSince(publishStart);

  std::vector<double> hitMs, readMs, missMs;
  std::uniform_int_distribution<size_t> pick(0, keys.size() - 1);
  for (int i = 0; i < lookups; ++i) {
    const CacheKey &key = keys[pick(rng)];
    auto start = Clock::now();
    std::optional<Entry> entry = cache->lookup(key);
    hitMs.push_back(secondsSince(start) * 1e3);
    if (!entry) {
      std::cerr << "bench-cache: lookup missed a published key\n";
      return 1;
    }
    if (i % 10 == 0) {
      start = Clock::now();
      Result<std::vector<uint8_t>> artifact = cache->readArtifact(*entry);
      readMs.push_back(secondsSince(start) * 1e3 + hitMs.back());
      if (!artifact) {
        std::cerr << "bench-cache: " << artifact.error << "\n";
        return 1;
      }
    }
    if (i % 10 == 5) {
      CacheKey missing{hashBytes("absent-" + std::to_string(i)), key.flags};
      start = Clock::now();
      if (cache->lookup(missing)) {
        std::cerr << "bench-cache: lookup hit an absent key\n";
        return 1;
      }
      missMs.push_back(secondsSince(start) * 1e3);
    }
  }

  int64_t graphBytes = 0, storedGraphBytes = 0, totalBytes = 0;
  for (const EntryListing &listing : cache->list())
    if (listing.entry) {
      graphBytes += listing.entry->graphBytes;
      storedGraphBytes += listing.entry->storedGraphBytes;
      totalBytes += listing.sizeBytes;
    }
  double ratio = storedGraphBytes ? double(graphBytes) / storedGraphBytes : 0;
  double publishPerSecond = entries / publishSeconds;
  double publishMiBps =
      (double(entries) * artifactKiB / 1024 + double(graphBytes) / (1 << 20)) /
      publishSeconds;

  std::printf("cache benchmark (%d entries, %d KiB artifacts, %d lookups, "
              "graph %zu bytes)\n",
              entries, artifactKiB, lookups, graph.size());
  std::printf("%-34s %12s\n", "metric", "value");
  std::printf("%-34s %12.3f\n", "hit lookup p50 (ms)", percentile(hitMs, 0.5));
  std::printf("%-34s %12.3f\n", "hit lookup p99 (ms)", percentile(hitMs, 0.99));
  std::printf("%-34s %12.3f\n", "lookup + artifact read p50 (ms)",
              percentile(readMs, 0.5));
  std::printf("%-34s %12.3f\n", "miss lookup p50 (ms)",
              percentile(missMs, 0.5));
  std::printf("%-34s %12.1f\n", "publish (entries/s)", publishPerSecond);
  std::printf("%-34s %12.1f\n", "publish (MiB/s)", publishMiBps);
  std::printf("%-34s %12.2f\n", "graph compression ratio", ratio);
  std::printf("%-34s %12.1f\n", "cache size (MiB)",
              totalBytes / double(1 << 20));

  if (!jsonPath.empty()) {
    nlohmann::json out = {{"benchmark", "cache"},
                          {"entries", entries},
                          {"artifact_kib", artifactKiB},
                          {"lookups", lookups},
                          {"hit_lookup_ms_p50", percentile(hitMs, 0.5)},
                          {"hit_lookup_ms_p99", percentile(hitMs, 0.99)},
                          {"lookup_and_read_ms_p50", percentile(readMs, 0.5)},
                          {"miss_lookup_ms_p50", percentile(missMs, 0.5)},
                          {"publish_entries_per_second", publishPerSecond},
                          {"publish_mib_per_second", publishMiBps},
                          {"graph_compression_ratio", ratio},
                          {"cache_bytes", totalBytes}};
    std::ofstream(jsonPath) << out.dump(2) << "\n";
  }
  if (ownDir)
    std::filesystem::remove_all(dir);
  return 0;
}
