//===- Random.cpp - Counter-based random numbers --------------------------===//

#include "trnrt/Random.h"

#include <cmath>

namespace trnrt {

uint32_t philoxWord(uint64_t seed, uint32_t stream, uint64_t index) {
  // Multipliers and Weyl key increments from the Philox paper.
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  uint32_t key0 = static_cast<uint32_t>(seed);
  uint32_t key1 = static_cast<uint32_t>(seed >> 32);
  uint32_t c0 = static_cast<uint32_t>(index);
  uint32_t c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = stream, c3 = 0;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kWeyl0;
      key1 += kWeyl1;
    }
    uint64_t product0 = uint64_t(kMul0) * c0;
    uint64_t product1 = uint64_t(kMul1) * c2;
    uint32_t hi0 = product0 >> 32, lo0 = static_cast<uint32_t>(product0);
    uint32_t hi1 = product1 >> 32, lo1 = static_cast<uint32_t>(product1);
    c0 = hi1 ^ c1 ^ key0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ key1;
    c3 = lo0;
  }
  return c0;
}

uint32_t bernoulliThreshold24(double p) {
  // k * 2^-24 < p  <=>  k < p * 2^24  <=>  k < ceil(p * 2^24) for integer k;
  // the scaling by a power of two is exact.
  if (!(p > 0.0))
    return 0;
  constexpr double kOne = 16777216.0; // 2^24
  if (p >= 1.0)
    return static_cast<uint32_t>(kOne);
  return static_cast<uint32_t>(std::ceil(p * kOne));
}

} // namespace trnrt
