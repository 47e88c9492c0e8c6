//===- artifact-fuzzer.cpp - libFuzzer target for the artifact reader -----===//
//
// Feeds arbitrary bytes to readArtifact twice: as is (checksums on, so
// almost every mutation stops at a checksum) and with checksum verification
// off, so mutations reach zstd and the section decoders. Besides "no crash,
// no out-of-bounds access" (ASan, UBSan) it checks the reader's contract:
// failures are one non-empty line, and whatever it accepts writes back and
// reads back to the same program.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Artifact.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "artifact-fuzzer: %s: %s\n", what, detail.c_str());
  __builtin_trap();
}

void checkOneInput(const uint8_t *data, size_t size, bool verifyChecksums) {
  trnrt::ArtifactReadOptions options;
  options.verifyChecksums = verifyChecksums;
  // Keep memory small: a fuzzer-made zstd frame may legitimately declare and
  // produce megabytes of tiny instructions.
  options.maxRawBytes = uint64_t(16) << 20;
  options.maxInstructions = 1 << 18;
  trnrt::Program program;
  trnrt::ArtifactInfo info;
  std::string error;
  bool ok = trnrt::readArtifact(data, size, program, info, error, options);

  trnrt::ArtifactInfo quickInfo;
  std::string quickError;
  bool quickOk =
      trnrt::readArtifactInfo(data, size, quickInfo, quickError, options);
  if (ok && !quickOk)
    fail("readArtifactInfo rejected what readArtifact accepted", quickError);
  if (!quickOk &&
      (quickError.empty() || quickError.find('\n') != std::string::npos))
    fail("readArtifactInfo error is not one non-empty line", quickError);

  if (!ok) {
    if (error.empty() || error.find('\n') != std::string::npos)
      fail("error is not one non-empty line", error);
    return;
  }
  std::vector<uint8_t> bytes;
  if (!trnrt::writeArtifact(program, info, bytes, error))
    fail("an accepted program does not write", error);
  trnrt::Program again;
  trnrt::ArtifactInfo againInfo;
  if (!trnrt::readArtifact(bytes.data(), bytes.size(), again, againInfo, error))
    fail("a rewritten artifact does not read", error);
  std::string difference;
  if (!trnrt::programsEqual(program, again, &difference))
    fail("the round trip changed the program", difference);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  checkOneInput(data, size, /*verifyChecksums=*/true);
  checkOneInput(data, size, /*verifyChecksums=*/false);
  return 0;
}
