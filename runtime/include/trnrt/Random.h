//===- Random.h - Counter-based random numbers ------------------*- C++ -*-===//
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11), the generator behind trn.rng_uniform / trn.rng_bernoulli and
// the simulator's rng instruction. It is counter-based: an element's value
// depends only on (seed, stream, index), so a tiled, partitioned or
// reordered program draws exactly the values of the reference evaluator.
// No LLVM or MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_RANDOM_H
#define TRNRT_RANDOM_H

#include <cstdint>

namespace trnrt {

/// Word 0 of Philox4x32-10 with key (seed low, seed high) and counter
/// (index low, index high, stream, 0).
uint32_t philoxWord(uint64_t seed, uint32_t stream, uint64_t index);

/// The 24-bit uniform draw: the top 24 bits of philoxWord, in [0, 2^24).
inline uint32_t philoxUniform24(uint64_t seed, uint32_t stream,
                                uint64_t index) {
  return philoxWord(seed, stream, index) >> 8;
}

/// The uniform draw in [0, 1): philoxUniform24 * 2^-24 (exact in float).
inline double philoxUniform(uint64_t seed, uint32_t stream, uint64_t index) {
  return philoxUniform24(seed, stream, index) * 0x1p-24;
}

/// The integer threshold T for which `philoxUniform(...) < p` holds exactly
/// when `philoxUniform24(...) < T`: ceil(p * 2^24) clamped to [0, 2^24].
/// Lets a Bernoulli draw compare integers instead of a rounded probability.
uint32_t bernoulliThreshold24(double p);

} // namespace trnrt

#endif // TRNRT_RANDOM_H
