//===- artifact-seeds.cpp - Writes the artifact fuzzer's seed corpus ------===//
//
// Usage: trn-artifact-seeds DIR. Writes valid artifacts of the sample
// programs into DIR, compressed and raw (raw ones expose the decoders to
// mutations directly).
//
//===----------------------------------------------------------------------===//

#include "ArtifactSamples.h"

#include <cstdio>
#include <string>

using namespace trnrt;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: trn-artifact-seeds DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  struct Seed {
    const char *name;
    Program program;
    ArtifactInfo info;
  };
  const Seed seeds[] = {
      {"empty", Program(), ArtifactInfo()},
      {"small", samples::makeSmallProgram(), ArtifactInfo()},
      {"small-info", samples::makeSmallProgram(), samples::makeInfo()},
      {"full", samples::makeFullProgram(), samples::makeInfo()},
  };
  for (const Seed &seed : seeds) {
    for (bool compress : {false, true}) {
      ArtifactWriteOptions options;
      options.compress = compress;
      std::string path =
          dir + "/" + seed.name + (compress ? ".trnart" : "-raw.trnart");
      std::string error;
      if (!writeArtifactFile(path, seed.program, seed.info, error, options)) {
        std::fprintf(stderr, "trn-artifact-seeds: %s\n", error.c_str());
        return 1;
      }
    }
  }
  return 0;
}
