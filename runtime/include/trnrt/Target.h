//===- Target.h - NeuronCore hardware parameters ----------------*- C++ -*-===//
//
// Every hardware parameter the compiler, the verifier and the simulator use
// comes from one Target table (docs/isa.md): trn1 (NeuronCore-v2) now, trn2
// (NeuronCore-v3) as a second table, not a fork. Values are the public facts
// collected in shared/reference/neuroncore.md; each field says where from.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_TARGET_H
#define TRNRT_TARGET_H

#include <cstdint>
#include <string_view>
#include <vector>

namespace trnrt {

struct Target {
  const char *name; ///< "trn1", "trn2"

  // Memories (§1.2, §3.1).
  unsigned partitions;            ///< 128
  uint64_t sbufBytesPerPartition; ///< physical: 192 KiB (v2)
  uint64_t
      sbufUsableBytesPerPartition; ///< for kernels: 176 KiB (16 KiB reserved)
  uint64_t psumBytesPerPartition;  ///< 16 KiB
  unsigned psumBanks;              ///< 8
  uint64_t psumBankBytes;          ///< 2 KiB = 512 fp32
  uint64_t hbmBytesPerCore;        ///< 16 GiB (32 GiB per trn1 chip / 2 cores)

  // Tensor Engine (§2.2).
  unsigned matmulMaxK;              ///< contraction on partitions: 128
  unsigned matmulMaxStationaryFree; ///< M: 128
  unsigned matmulMaxMovingFree;     ///< N: 512 (one PSUM bank of fp32)
  unsigned matmulInitCycles;        ///< MM_INIT_LATENCY: 64
  unsigned fp32MatmulFactor;        ///< fp32 inputs cost 4x
  unsigned loadStationarySpeedup;   ///< LS up to 4x faster than an MM

  // Engine clocks in GHz (§1.3).
  double tensorClockGHz; ///< 2.8
  double vectorClockGHz; ///< 1.12
  double scalarClockGHz; ///< 1.4
  double gpsimdClockGHz; ///< 1.4
  double syncClockGHz;   ///< 1.4

  // Per-instruction costs in engine cycles (§4.3, §8).
  unsigned minInitiationInterval; ///< MIN_II: 64
  unsigned gpsimdStartCycles;     ///< ~150
  unsigned accessOverheadCycles;  ///< ~60 per dependent instruction
  uint64_t fastStrideBytes;       ///< innermost stride <= 16 B: full rate
  unsigned vectorMaxFreeSbuf;     ///< 64K elements per partition
  unsigned vectorMaxFreePsum;     ///< 4K elements per partition
  unsigned bnStatsMaxFree;        ///< 512

  // DMA (§2.6, §8.4).
  unsigned dmaEngines;           ///< 16
  unsigned dmaQueues;            ///< 16 queues per engine
  double dmaBytesPerNsPerEngine; ///< 17 B/ns on trn1 (272 GB/s per NC)
  double dmaFixedNs;             ///< ~1300 ns semaphore-to-start
  double hbmBytesPerNsPerCore;   ///< 410 GB/s (820 GB/s per chip / 2)

  // Access patterns (§3.2).
  unsigned maxApDims;               ///< 4 free dimensions
  int64_t maxApSize;                ///< uint16 sizes
  int64_t minApStride, maxApStride; ///< int16 strides (elements)

  // Added with the validator and the cost model (docs/isa.md).
  uint64_t psumMinAlignBytes;      ///< 4 B (psum_min_align, §3.1 via KLR)
  bool activationImmediateBias;    ///< v3+: bias may be an immediate (§2.4)
  bool activationReciprocalBias;   ///< v2: reciprocal takes no bias (§4.5)
  bool bitExactTranspose;          ///< v3+: transpose mode, keeps dtype (§7)
  bool nativeInt64;                ///< v3+: int64 on the engines (§4.1)
  bool vectorGpsimdShareSbufPort;  ///< v2: never concurrent on SBUF (§2.7)
  bool vectorScalarSharePsumPort;  ///< v2: never concurrent on PSUM (§2.7)
  unsigned vectorElementsPerCycle; ///< 128 (v2); 256 for 32-bit (v3) (§1.3)
  unsigned scalarAccessOverheadCycles; ///< 264 measured - MIN_II (§2.4)
  double dmaDescriptorNs;              ///< per DMA buffer per engine [derived]

  // Collectives (docs/simulator.md, "Collectives"): ring algorithms over
  // the chip-to-chip links inside an instance and the network between them.
  unsigned coresPerChip;               ///< 2 NeuronCores per Trainium1 chip
  unsigned chipsPerInstance;           ///< 16 chips in a trn1.32xlarge
  double linkBytesPerNsPerChip;        ///< NeuronLink-v2: 384 GB/s per chip
  double networkBytesPerNsPerInstance; ///< EFA: 800 Gbps = 100 GB/s
  double linkLatencyNs;                ///< one ring step inside an instance
  double networkLatencyNs;             ///< one ring step across instances

  /// Peak dense bf16 TFLOPS of one core: 128 x 128 PEs x 2 x clock.
  double peakBf16Tflops() const {
    return 128.0 * 128.0 * 2.0 * tensorClockGHz / 1000.0;
  }
  /// NeuronCores in one instance: 32 on a trn1.32xlarge.
  unsigned coresPerInstance() const { return coresPerChip * chipsPerInstance; }
};

/// The table for `name` ("trn1", "trn2"), or nullptr.
const Target *lookupTarget(std::string_view name);
/// Every target's name, the default (trn1) first.
const std::vector<std::string_view> &targetNames();
/// NeuronCore-v2 (Trainium1).
const Target &trn1Target();

} // namespace trnrt

#endif // TRNRT_TARGET_H
