//===- Target.cpp - NeuronCore hardware parameter tables ------------------===//
//
// The trn1 (NeuronCore-v2) and trn2 (NeuronCore-v3) tables. Section numbers
// (§) refer to shared/reference/neuroncore.md; docs/isa.md explains how each
// value is used. Values the reference gives only for NeuronCore-v2 are reused
// for trn2 and marked "v2 value".
//
//===----------------------------------------------------------------------===//

#include "trnrt/Target.h"

namespace trnrt {

namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t GiB = 1024 * 1024 * 1024;

Target makeTrn1() {
  Target t{};
  t.name = "trn1";

  // Memories.
  t.partitions = 128;                        // §1.2, §3.1
  t.sbufBytesPerPartition = 192 * KiB;       // §3.1: 24 MiB / 128
  t.sbufUsableBytesPerPartition = 176 * KiB; // §3.1: 16 KiB for the compiler
  t.psumBytesPerPartition = 16 * KiB;        // §1.2: 2 MiB / 128
  t.psumBanks = 8;                           // §1.2
  t.psumBankBytes = 2 * KiB;                 // §1.2: 512 fp32
  t.hbmBytesPerCore = 16 * GiB;              // §1.1: 32 GiB per 2-core chip

  // Tensor Engine.
  t.matmulMaxK = 128;              // §2.2: PE rows
  t.matmulMaxStationaryFree = 128; // §2.2: PE columns
  t.matmulMaxMovingFree = 512;     // §2.2: one PSUM bank of fp32
  t.matmulInitCycles = 64;         // §2.2: MM_INIT_LATENCY
  t.fp32MatmulFactor = 4;          // §2.2: 92 vs 23 TFLOPS
  t.loadStationarySpeedup = 4;     // §2.2: fast LoadStationary

  // Clocks.
  t.tensorClockGHz = 2.8;  // §1.3
  t.vectorClockGHz = 1.12; // §1.3
  t.scalarClockGHz = 1.4;  // §1.3
  t.gpsimdClockGHz = 1.4;  // §1.3
  t.syncClockGHz = 1.4;    // §8.1: "SyncE: use 1.4"

  // Per-instruction costs.
  t.minInitiationInterval = 64; // §2.3, §8.2: MIN_II
  t.gpsimdStartCycles = 150;    // §2.5: GPSIMD_START
  t.accessOverheadCycles = 60;  // §3.2, §8.2
  t.fastStrideBytes = 16;       // §3.2: bandwidth penalty above 16 B
  t.vectorMaxFreeSbuf = 65536;  // §2.3: 64K elements
  t.vectorMaxFreePsum = 4096;   // §2.3: 4K elements
  t.bnStatsMaxFree = 512;       // §2.3, §3.1: bn_stats_fmax

  // DMA.
  t.dmaEngines = 16;               // §2.6
  t.dmaQueues = 16;                // §2.6: queue IDs 0-15
  t.dmaBytesPerNsPerEngine = 17.0; // §2.6, §9: 17 B/ns (272 GB/s per core)
  t.dmaFixedNs = 1300.0;           // §2.6: semaphore-to-start latency
  t.hbmBytesPerNsPerCore = 410.0;  // §8.4: 820 GB/s per chip / 2 cores

  // Access patterns.
  t.maxApDims = 4;        // §3.2
  t.maxApSize = 65535;    // §3.2: uint16 sizes
  t.minApStride = -32768; // §3.2: int16 strides
  t.maxApStride = 32767;

  // Features and modelling parameters.
  t.psumMinAlignBytes = 4;            // §3.1, §9: KLR's psum_min_align
  t.activationImmediateBias = false;  // §2.4: v2 bias is a [P,1] tile
  t.activationReciprocalBias = false; // §4.5: no bias with reciprocal on v2
  t.bitExactTranspose = false;        // §2.2: v2 transposes by matmul
  t.nativeInt64 = false;              // §4.1: no int64 in v2 hardware
  t.vectorGpsimdShareSbufPort = true; // §2.7 (1)
  t.vectorScalarSharePsumPort = true; // §2.7 (2)
  t.vectorElementsPerCycle = 128;     // §1.3
  t.scalarAccessOverheadCycles = 200; // §2.4: 264 measured - MIN_II
  // §2.6 "cost per buffer": 30 ns per contiguous buffer puts 256 B buffers
  // at ~33% and 2 KiB at ~80% of the engine rate, the curve of §8.4.
  t.dmaDescriptorNs = 30.0;

  // Collectives. §1.1: 2 cores per chip, 16 chips per trn1.32xlarge,
  // NeuronLink-v2 384 GB/s per chip, EFA 800 Gbps per instance. The
  // latencies are not published: a ring step inside an instance is a DMA
  // between chips (the §2.6 fixed cost); across instances we assume 10 us,
  // the order of an EFA round trip (docs/simulator.md says so).
  t.coresPerChip = 2;
  t.chipsPerInstance = 16;
  t.linkBytesPerNsPerChip = 384.0;
  t.networkBytesPerNsPerInstance = 100.0;
  t.linkLatencyNs = 1300.0;
  t.networkLatencyNs = 10000.0;
  return t;
}

Target makeTrn2() {
  Target t = makeTrn1();
  t.name = "trn2";

  t.sbufBytesPerPartition = 224 * KiB;    // §3.1, §7
  t.sbufUsableBytesPerPartition = 212984; // §3.1: KLR's usable size
  t.hbmBytesPerCore = 12 * GiB;           // §7: 96 GiB per 8-core chip
  // PSUM, matmul limits (without double-FP8) and AP limits: unchanged (§7).

  t.tensorClockGHz = 2.4;  // §1.3, §7
  t.vectorClockGHz = 0.96; // §1.3, §7
  t.scalarClockGHz = 1.2;  // §1.3, §7
  t.gpsimdClockGHz = 1.2;  // §1.3, §7
  t.syncClockGHz = 1.2;    // like ScalarE (not given)

  t.dmaBytesPerNsPerEngine = 23.0; // §2.6: 23 B/ns (368 GB/s per core)
  t.hbmBytesPerNsPerCore = 365.0;  // §8.4: ~2.9 TB/s / 8 cores

  t.activationImmediateBias = true;    // §2.4: scalar bias from v3
  t.activationReciprocalBias = true;   // §4.5 restricts only NC-v2
  t.bitExactTranspose = true;          // §7: transpose mode
  t.nativeInt64 = true;                // §4.1, §7
  t.vectorGpsimdShareSbufPort = false; // §2.7 (4)
  t.vectorScalarSharePsumPort = false; // §2.7 (4)
  t.vectorElementsPerCycle = 256;      // §1.3: 256 for 32-bit dtypes
  // §7: trn2.48xlarge, 16 chips of 8 cores, 1,024 GB/s per chip inside the
  // instance. Its EFA is not in our reference: trn1's 100 GB/s is kept.
  t.coresPerChip = 8;
  t.linkBytesPerNsPerChip = 1024.0;
  return t;
}

// Function-local statics: safe to use from other translation units' static
// initialisers.
const Target &trn2Target() {
  static const Target target = makeTrn2();
  return target;
}

} // namespace

const Target &trn1Target() {
  static const Target target = makeTrn1();
  return target;
}

namespace {

struct NamedTarget {
  std::string_view name;
  const Target &(*table)();
};

/// Every target, the default first.
constexpr NamedTarget kTargets[] = {{"trn1", trn1Target}, {"trn2", trn2Target}};

} // namespace

const Target *lookupTarget(std::string_view name) {
  for (const NamedTarget &target : kTargets)
    if (target.name == name)
      return &target.table();
  return nullptr;
}

const std::vector<std::string_view> &targetNames() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> all;
    for (const NamedTarget &target : kTargets)
      all.push_back(target.name);
    return all;
  }();
  return names;
}

} // namespace trnrt
