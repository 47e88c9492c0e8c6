//===- SimulatorCost.cpp - Per-instruction cost formulas ------------------===//
//
// The cost formulas of docs/isa.md §7 (from shared/reference/neuroncore.md
// §4.3 and §8), every constant from the Target table. The scheduler
// (Simulator.cpp) adds what depends on timing: the dependent-instruction
// overhead, the DMA fixed latency and the shared DMA data phase, ports.
//
//===----------------------------------------------------------------------===//

#include "SimulatorImpl.h"

#include <algorithm>
#include <cmath>

namespace trnrt {
namespace sim {

double engineClockGHz(const Target &target, Engine engine) {
  switch (engine) {
#define TRN_ENGINE(Name, mnemonic, reads, writes, clock, rule)                 \
  case Engine::Name:                                                           \
    return target.clock;
#include "trnrt/Isa.def"
  }
  return target.syncClockGHz;
}

namespace {

double ceilDiv(double value, double divisor) {
  return std::ceil(value / divisor);
}

} // namespace

double computeCycles(const Target &target, Engine engine, Opcode opcode,
                     const Instruction &inst, const CostShape &shape) {
  const double n = double(shape.freeElements);
  const double minII = double(target.minInitiationInterval);
  const double stride = shape.stridePenalty ? 2.0 : 1.0;
  const double fp32 =
      shape.fp32Inputs ? double(std::max(1u, target.fp32MatmulFactor)) : 1.0;
  if (opcode == Opcode::Nop)
    return 0.0;
  if (opcode == Opcode::Transpose)
    // The identity is the moving operand (N = P): max(P, min(64, F)).
    return std::max(double(shape.transposePartitions),
                    std::min(double(target.matmulInitCycles),
                             double(shape.transposeFree))) *
           fp32;
  if (engine == Engine::GpSimd) {
    // 128 lanes of 32 bits (256 of 16, 512 of 8): Ng = ceil(N * b / 4) per
    // tensor input, after the fixed start cost.
    double ng = ceilDiv(n * double(shape.maxElementBytes), 4.0);
    return double(target.gpsimdStartCycles) +
           stride * double(std::max(1u, shape.tensorInputs)) * ng;
  }
  if (engine == Engine::Scalar) {
    double cycles = std::max(minII, stride * n);
    // The row sum is read out of the accumulators by one more small
    // instruction (§2.4).
    if (opcode == Opcode::Activation && inst.accumulateRow)
      cycles += minII;
    return cycles;
  }
  // Vector Engine.
  const double nv =
      ceilDiv(n * double(target.partitions),
              double(std::max(1u, target.vectorElementsPerCycle)));
  double work;
  switch (opcode) {
  case Opcode::TensorTensor:
  case Opcode::Select:
    // Two input streams cost 2N unless one comes through the PSUM port or
    // the bf16 fast form applies.
    work = shape.psumInput || shape.fastBf16 ? nv : 2.0 * nv;
    break;
  case Opcode::TensorReduce:
  case Opcode::Memset:
    work = shape.fastBf16 ? ceilDiv(nv, 2.0) : nv;
    break;
  case Opcode::BnAggr:
    work = ceilDiv(13.0 * nv, 3.0);
    break;
  default: // tensor_scalar, tensor_copy, bn_stats
    work = nv;
    break;
  }
  return std::max(minII, stride * work);
}

double matmulCycles(const Target &target, const CostShape &shape) {
  double factor = shape.fp32Inputs ? double(target.fp32MatmulFactor) : 1.0;
  double init =
      std::min(double(target.matmulInitCycles), double(shape.matmulM));
  return std::max(init, double(shape.matmulN)) * factor;
}

double loadStationaryCycles(const Target &target, const CostShape &shape) {
  double factor = shape.fp32Inputs ? double(target.fp32MatmulFactor) : 1.0;
  double speedup = std::max(1u, target.loadStationarySpeedup);
  return std::ceil(double(shape.matmulM) / speedup) * factor;
}

unsigned dmaEnginesUsed(const Target &target, const CostShape &shape) {
  const unsigned engines = std::max(1u, target.dmaEngines);
  const unsigned perEngine = std::max(1u, target.partitions / engines);
  const unsigned partitions = std::max(1u, shape.dmaPartitions);
  return std::min(engines, (partitions + perEngine - 1) / perEngine);
}

double dmaTransferNs(const Target &target, const CostShape &shape) {
  const double engines = double(dmaEnginesUsed(target, shape));
  // Each engine moves its share of the bytes and pays a fixed cost per
  // contiguous buffer, so small buffers are inefficient (§2.6: < 256 B
  // poor, >= 2 KiB near peak).
  double ns = shape.dmaBytes / (engines * target.dmaBytesPerNsPerEngine) +
              std::ceil(shape.dmaBuffers / engines) * target.dmaDescriptorNs;
  if (shape.dmaHbmSides > 0 && target.hbmBytesPerNsPerCore > 0) {
    // HBM to HBM reads and writes the same HBM: half the share each way.
    double cap = target.hbmBytesPerNsPerCore / double(shape.dmaHbmSides);
    ns = std::max(ns, shape.dmaBytes / cap);
  }
  return ns;
}

} // namespace sim
} // namespace trnrt
