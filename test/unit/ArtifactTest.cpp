//===- ArtifactTest.cpp - The artifact container: round trip and damage ---===//
//
// Exact round trips of a program that sets every field of every structure
// and uses every opcode; determinism; then damage: every truncation and
// every header/table bit flip of a small artifact, random flips inside
// sections (with checksums on, and off so the decoders see the damage),
// foreign files, newer versions, unknown targets, absurd counts and values
// patched into otherwise valid artifacts. Every failure must be a clean
// one-line error. The test knows the documented byte layout
// (docs/artifact-format.md) so it can patch fields and reseal checksums.
//
//===----------------------------------------------------------------------===//

#include "trnrt/Artifact.h"

#include "ArtifactSamples.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <limits>
#include <random>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace trnrt;
using namespace trnrt::samples;

namespace {

//===----------------------------------------------------------------------===//
// Layout knowledge (docs/artifact-format.md)
//===----------------------------------------------------------------------===//

constexpr size_t kHeaderSize = 40;
constexpr size_t kEntrySize = 40;
constexpr uint32_t kMetadataId = 1;
constexpr uint32_t kTensorsId = 2;
constexpr uint32_t kTensorStreamId = 8;
constexpr uint32_t kVectorStreamId = 9;

uint64_t load(const std::vector<uint8_t> &bytes, size_t offset, unsigned size) {
  uint64_t value = 0;
  for (unsigned i = 0; i < size; ++i)
    value |= uint64_t(bytes[offset + i]) << (8 * i);
  return value;
}

void store(std::vector<uint8_t> &bytes, size_t offset, unsigned size,
           uint64_t value) {
  for (unsigned i = 0; i < size; ++i)
    bytes[offset + i] = uint8_t(value >> (8 * i));
}

uint32_t sectionCount(const std::vector<uint8_t> &bytes) {
  return uint32_t(load(bytes, 16, 4));
}

size_t tableEnd(const std::vector<uint8_t> &bytes) {
  return kHeaderSize + sectionCount(bytes) * kEntrySize;
}

struct SectionLocation {
  size_t entry = 0; ///< byte offset of the table entry
  uint32_t flags = 0;
  size_t offset = 0;
  size_t storedSize = 0;
};

SectionLocation findSection(const std::vector<uint8_t> &bytes, uint32_t id) {
  for (uint32_t i = 0; i < sectionCount(bytes); ++i) {
    size_t entry = kHeaderSize + i * kEntrySize;
    if (load(bytes, entry, 4) == id)
      return {entry, uint32_t(load(bytes, entry + 4, 4)),
              size_t(load(bytes, entry + 8, 8)),
              size_t(load(bytes, entry + 16, 8))};
  }
  ADD_FAILURE() << "no section " << id;
  return {};
}

/// Recomputes every section checksum and the header checksum, so a patched
/// artifact passes the integrity checks and reaches the decoders.
void reseal(std::vector<uint8_t> &bytes) {
  for (uint32_t i = 0; i < sectionCount(bytes); ++i) {
    size_t entry = kHeaderSize + i * kEntrySize;
    size_t offset = load(bytes, entry + 8, 8);
    size_t storedSize = load(bytes, entry + 16, 8);
    if (offset > bytes.size() || storedSize > bytes.size() - offset)
      continue; // a patched range the reader must reject on its own
    store(bytes, entry + 32, 8, XXH3_64bits(bytes.data() + offset, storedSize));
  }
  std::vector<uint8_t> copy(bytes.begin(), bytes.begin() + tableEnd(bytes));
  std::memset(copy.data() + 32, 0, 8);
  store(bytes, 32, 8, XXH3_64bits(copy.data(), copy.size()));
}

std::vector<uint8_t> writeOrDie(const Program &program,
                                const ArtifactInfo &info = ArtifactInfo(),
                                bool compress = true) {
  std::vector<uint8_t> bytes;
  std::string error;
  ArtifactWriteOptions options;
  options.compress = compress;
  EXPECT_TRUE(writeArtifact(program, info, bytes, error, options)) << error;
  return bytes;
}

/// Every section stored raw, so tests can patch fields in place.
std::vector<uint8_t> writeRaw(const Program &program) {
  return writeOrDie(program, ArtifactInfo(), /*compress=*/false);
}

/// Reads `bytes` expecting failure; returns the error after checking that it
/// is one non-empty line.
std::string readError(const std::vector<uint8_t> &bytes,
                      ArtifactReadOptions options = {}) {
  Program program;
  ArtifactInfo info;
  std::string error;
  bool ok =
      readArtifact(bytes.data(), bytes.size(), program, info, error, options);
  EXPECT_FALSE(ok) << "an invalid artifact was accepted";
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

std::string writeError(const Program &program,
                       const ArtifactInfo &info = ArtifactInfo()) {
  std::vector<uint8_t> bytes;
  std::string error;
  EXPECT_FALSE(writeArtifact(program, info, bytes, error));
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

::testing::AssertionResult contains(const std::string &text,
                                    const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << text << "' does not contain '" << part << "'";
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST(ArtifactTest, FullProgramRoundTripsExactly) {
  Program program = makeFullProgram();
  ArtifactInfo info = makeInfo();
  std::vector<uint8_t> bytes = writeOrDie(program, info);

  Program read;
  ArtifactInfo readInfo;
  std::string error;
  ASSERT_TRUE(readArtifact(bytes.data(), bytes.size(), read, readInfo, error))
      << error;
  std::string difference;
  EXPECT_TRUE(programsEqual(program, read, &difference)) << difference;

  EXPECT_EQ(readInfo.formatVersion, kArtifactFormatVersion);
  EXPECT_EQ(readInfo.target, "trn1");
  EXPECT_EQ(readInfo.compilerVersion, info.compilerVersion);
  EXPECT_EQ(readInfo.cacheKey, info.cacheKey);
  ASSERT_TRUE(readInfo.estimatedDeviceTimeNs.has_value());
  EXPECT_EQ(*readInfo.estimatedDeviceTimeNs, 1234567.5);
  EXPECT_EQ(readInfo.report, info.report);
  EXPECT_EQ(readInfo.flops, UINT64_MAX);
  EXPECT_EQ(readInfo.sbufPeakBytesPerPartition, 180224u);
  EXPECT_EQ(readInfo.psumPeakBytesPerPartition, 16384u);
  EXPECT_EQ(readInfo.hbmPeakBytes, program.hbmBytes);

  // Inputs and outputs come from the tensor table.
  ASSERT_EQ(readInfo.inputs.size(), 2u);
  ASSERT_EQ(readInfo.outputs.size(), 2u);
  EXPECT_EQ(readInfo.inputs[0].tensorIndex, 0u);
  EXPECT_EQ(readInfo.inputs[1].name, "t4");
  EXPECT_EQ(readInfo.inputs[1].dtype, DType::F8E5M2);
  EXPECT_EQ(readInfo.inputs[1].shape, (std::vector<int64_t>{5, 8, 3}));
  EXPECT_EQ(readInfo.inputs[1].sizeInBytes, 120u);
  EXPECT_EQ(readInfo.inputs[1].offset, uint64_t(4) << 30);
  EXPECT_EQ(readInfo.outputs[0].tensorIndex, 1u);
  EXPECT_EQ(readInfo.outputs[0].aliasesInput, 0);
  EXPECT_EQ(readInfo.outputs[0].role, "param");
  EXPECT_EQ(readInfo.outputs[1].shape, std::vector<int64_t>{}); // scalar
  EXPECT_EQ(readInfo.outputs[1].sizeInBytes, 1u);               // one i1

  // The info-only reader agrees without decoding the streams.
  ArtifactInfo quickInfo;
  ASSERT_TRUE(readArtifactInfo(bytes.data(), bytes.size(), quickInfo, error))
      << error;
  EXPECT_EQ(quickInfo.report, readInfo.report);
  EXPECT_EQ(quickInfo.inputs.size(), 2u);
  EXPECT_EQ(quickInfo.outputs[0].name, readInfo.outputs[0].name);
  EXPECT_EQ(quickInfo.cacheKey, info.cacheKey);
}

TEST(ArtifactTest, WritingIsDeterministicAndCanonical) {
  Program program = makeFullProgram();
  ArtifactInfo info = makeInfo();
  std::vector<uint8_t> first = writeOrDie(program, info);
  EXPECT_EQ(writeOrDie(program, info), first);

  Program read;
  ArtifactInfo readInfo;
  std::string error;
  ASSERT_TRUE(readArtifact(first.data(), first.size(), read, readInfo, error));
  EXPECT_EQ(writeOrDie(read, readInfo), first);

  // Stored raw, the same program reads back identically too.
  std::vector<uint8_t> raw = writeOrDie(program, info, /*compress=*/false);
  EXPECT_GT(raw.size(), first.size());
  ASSERT_TRUE(readArtifact(raw.data(), raw.size(), read, readInfo, error))
      << error;
  std::string difference;
  EXPECT_TRUE(programsEqual(program, read, &difference)) << difference;
}

TEST(ArtifactTest, EmptyProgramRoundTrips) {
  Program program;
  std::vector<uint8_t> bytes = writeOrDie(program);
  Program read;
  ArtifactInfo info;
  std::string error;
  ASSERT_TRUE(readArtifact(bytes.data(), bytes.size(), read, info, error))
      << error;
  std::string difference;
  EXPECT_TRUE(programsEqual(program, read, &difference)) << difference;
  EXPECT_FALSE(info.estimatedDeviceTimeNs.has_value());
  EXPECT_TRUE(info.report.empty());
  // Header, 8 required sections (no DMA queues), all empty or tiny.
  EXPECT_EQ(sectionCount(bytes), 8u);
}

TEST(ArtifactTest, RepetitiveSectionsAreCompressedSmallOnesStoredRaw) {
  Program program = makeSmallProgram();
  program.origins = {"a", "b", "c"}; // everyField names one of 3
  for (int i = 0; i < 2000; ++i)
    program.engineStreams[1].push_back(everyField(Opcode::TensorTensor, i));
  std::vector<uint8_t> bytes = writeOrDie(program);
  SectionLocation vector = findSection(bytes, kVectorStreamId);
  EXPECT_EQ(vector.flags & 1u, 1u) << "stream.vector should be compressed";
  uint64_t rawSize = load(bytes, vector.entry + 24, 8);
  EXPECT_LT(vector.storedSize * 10, rawSize);
  // A one-instruction stream does not shrink: stored raw.
  EXPECT_EQ(findSection(bytes, kTensorStreamId).flags, 0u);

  Program read;
  ArtifactInfo info;
  std::string error;
  ASSERT_TRUE(readArtifact(bytes.data(), bytes.size(), read, info, error))
      << error;
  EXPECT_TRUE(programsEqual(program, read));
}

TEST(ArtifactTest, ProgramsEqualNamesTheFirstDifference) {
  Program a = makeFullProgram();
  Program b = a;
  std::string difference;
  EXPECT_TRUE(programsEqual(a, b, &difference));
  b.engineStreams[1][0].srcs[1].dims[1].stride = 4;
  EXPECT_FALSE(programsEqual(a, b, &difference));
  EXPECT_TRUE(contains(difference, "engineStreams[1][0].srcs[1].dims[1]."
                                   "stride: -9223372036854775808 vs 4"))
      << difference;
  b = a;
  b.engineStreams[2][0].bias.immediate = 1.0f;
  EXPECT_FALSE(programsEqual(a, b, &difference));
  EXPECT_TRUE(contains(difference, "engineStreams[2][0].bias.immediate"));
  b = a;
  b.tensors[2].data[5] ^= 1;
  EXPECT_FALSE(programsEqual(a, b, &difference));
  EXPECT_TRUE(contains(difference, "tensors[2].data[5]"));
  b = a;
  b.dmaQueues.pop_back();
  EXPECT_FALSE(programsEqual(a, b, &difference));
  EXPECT_TRUE(contains(difference, "dmaQueues.size: 16 vs 15"));
  // -0.0 and +0.0 differ bit for bit.
  b = a;
  b.engineStreams[0][1].value = -0.0f;
  EXPECT_FALSE(programsEqual(a, b));
}

TEST(ArtifactTest, FilesAreWrittenAtomicallyAndReadBack) {
  char dirTemplate[] = "/tmp/trn-artifact-test-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  std::string dir = dirTemplate;
  std::string path = dir + "/model.trnart";
  Program program = makeFullProgram();
  ArtifactInfo info = makeInfo();
  std::string error;
  ASSERT_TRUE(writeArtifactFile(path, program, info, error)) << error;
  // Overwrite in place: still one file, no temporaries left behind.
  ASSERT_TRUE(writeArtifactFile(path, program, info, error)) << error;
  int entries = 0;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *entry = readdir(d))
      if (entry->d_name[0] != '.')
        ++entries;
    closedir(d);
  }
  EXPECT_EQ(entries, 1);

  Program read;
  ArtifactInfo readInfo;
  ASSERT_TRUE(readArtifactFile(path, read, readInfo, error)) << error;
  EXPECT_TRUE(programsEqual(program, read));

  EXPECT_FALSE(readArtifactFile(dir + "/missing", read, readInfo, error));
  EXPECT_TRUE(contains(error, "cannot read '" + dir +
                                  "/missing': No such file or directory"));
  // Anything but a regular file is refused before it is read: /dev/zero
  // would never end.
  EXPECT_FALSE(readArtifactFile(dir, read, readInfo, error));
  EXPECT_EQ(error, dir + " is not a regular file (a directory)");
  EXPECT_FALSE(readArtifactFile("/dev/zero", read, readInfo, error));
  EXPECT_EQ(error, "/dev/zero is not a regular file (a character device)");
  EXPECT_FALSE(
      writeArtifactFile(dir + "/no/such/dir/a.trnart", program, info, error));
  EXPECT_TRUE(contains(error, "cannot create"));

  // A corrupt file names the path and the problem.
  std::vector<uint8_t> bytes = writeOrDie(makeSmallProgram());
  bytes[bytes.size() - 1] ^= 0x10;
  std::string corrupt = dir + "/corrupt.trnart";
  FILE *file = fopen(corrupt.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  fwrite(bytes.data(), 1, bytes.size(), file);
  fclose(file);
  EXPECT_FALSE(readArtifactFile(corrupt, read, readInfo, error));
  EXPECT_TRUE(contains(error, corrupt + ": section 'dma.0': checksum mismatch"))
      << error;

  unlink(path.c_str());
  unlink(corrupt.c_str());
  rmdir(dir.c_str());
}

//===----------------------------------------------------------------------===//
// Exhaustive damage
//===----------------------------------------------------------------------===//

TEST(ArtifactTest, EveryTruncationFailsCleanly) {
  std::vector<uint8_t> bytes = writeOrDie(makeSmallProgram(), makeInfo());
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + length);
    std::string error = readError(truncated);
    if (length >= 1 && length < kHeaderSize) {
      EXPECT_TRUE(contains(error, "header: truncated")) << length;
    } else if (length >= tableEnd(bytes)) {
      EXPECT_TRUE(contains(error, "truncated: the header says")) << length;
    }
  }
}

TEST(ArtifactTest, EveryBitFlipInHeaderAndTableFailsCleanly) {
  std::vector<uint8_t> bytes = writeOrDie(makeSmallProgram(), makeInfo());
  size_t end = tableEnd(bytes);
  for (size_t bit = 0; bit < end * 8; ++bit) {
    std::vector<uint8_t> flipped = bytes;
    flipped[bit / 8] ^= uint8_t(1u << (bit % 8));
    std::string error = readError(flipped);
    if (bit < 64) {
      EXPECT_EQ(error, "not a trn artifact (bad magic)");
    }
  }
}

TEST(ArtifactTest, RandomBitFlipsInSectionsFailCleanly) {
  std::vector<uint8_t> bytes = writeOrDie(makeFullProgram(), makeInfo());
  size_t end = tableEnd(bytes);
  std::mt19937_64 random(20240611);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> flipped = bytes;
    size_t bit = end * 8 + random() % ((bytes.size() - end) * 8);
    flipped[bit / 8] ^= uint8_t(1u << (bit % 8));
    EXPECT_TRUE(contains(readError(flipped), "checksum mismatch"));
  }
}

/// With checksums off, damage reaches zstd and the decoders: they must
/// reject it cleanly or decode something, never crash (ASan checks reads).
TEST(ArtifactTest, DamagedSectionsReachingTheDecodersNeverCrash) {
  ArtifactReadOptions unchecked;
  unchecked.verifyChecksums = false;
  unchecked.maxRawBytes = 64 << 20;
  std::mt19937_64 random(7);
  for (const Program &program : {makeSmallProgram(), makeFullProgram()})
    for (bool compress : {false, true}) {
      std::vector<uint8_t> bytes = writeOrDie(program, makeInfo(), compress);
      size_t end = tableEnd(bytes);
      int rejected = 0;
      for (int trial = 0; trial < 3000; ++trial) {
        std::vector<uint8_t> damaged = bytes;
        int flips = 1 + int(random() % 4);
        for (int f = 0; f < flips; ++f) {
          size_t bit = end * 8 + random() % ((damaged.size() - end) * 8);
          damaged[bit / 8] ^= uint8_t(1u << (bit % 8));
        }
        if (trial % 3 == 0) // and sometimes a random byte value
          damaged[end + random() % (damaged.size() - end)] = uint8_t(random());
        Program read;
        ArtifactInfo info;
        std::string error;
        if (!readArtifact(damaged.data(), damaged.size(), read, info, error,
                          unchecked)) {
          ++rejected;
          EXPECT_FALSE(error.empty());
          EXPECT_EQ(error.find('\n'), std::string::npos) << error;
        }
      }
      EXPECT_GT(rejected, 100);
    }
}

//===----------------------------------------------------------------------===//
// Specific bad input
//===----------------------------------------------------------------------===//

TEST(ArtifactTest, ForeignAndEmptyFilesAreNotArtifacts) {
  EXPECT_EQ(readError({}), "not a trn artifact (empty file)");
  std::vector<uint8_t> elf = {0x7F, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0};
  elf.resize(4096);
  EXPECT_EQ(readError(elf), "not a trn artifact (bad magic)");
  const char npy[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', ...}";
  EXPECT_EQ(readError(std::vector<uint8_t>(npy, npy + sizeof(npy))),
            "not a trn artifact (bad magic)");
  EXPECT_EQ(readError({'T', 'R', 'N'}),
            "header: truncated: 3 bytes, the header alone is 40");
}

TEST(ArtifactTest, NewerFormatAsksToRecompileOrUpgrade) {
  std::vector<uint8_t> bytes = writeOrDie(makeSmallProgram());
  store(bytes, 8, 4, kArtifactFormatVersion + 1);
  EXPECT_EQ(readError(bytes), "artifact format " +
                                  std::to_string(kArtifactFormatVersion + 1) +
                                  " is newer than this runtime (" +
                                  std::to_string(kArtifactFormatVersion) +
                                  "); recompile or upgrade");
  store(bytes, 8, 4, 0);
  EXPECT_EQ(readError(bytes), "header: format version 0 is invalid");
}

TEST(ArtifactTest, UnknownTargetIsRejected) {
  Program program = makeSmallProgram();
  std::vector<uint8_t> bytes = writeRaw(program);
  SectionLocation metadata = findSection(bytes, kMetadataId);
  ASSERT_EQ(metadata.flags, 0u);
  // The metadata starts with the target string: u32 length, then "trn1".
  ASSERT_EQ(load(bytes, metadata.offset, 4), 4u);
  bytes[metadata.offset + 4 + 3] = '9';
  reseal(bytes);
  EXPECT_EQ(readError(bytes), "section 'metadata': unknown target 'trn9' "
                              "(this runtime knows trn1, trn2)");

  program.target = "inferentia";
  EXPECT_TRUE(contains(writeError(program), "unknown target 'inferentia'"));
  // Text from the file is quoted so the message stays one line.
  program.target = "tr\n1'\\";
  EXPECT_TRUE(
      contains(writeError(program), "unknown target 'tr\\x0a1\\'\\\\'"));
}

TEST(ArtifactTest, AbsurdCountsAreRejectedBeforeAllocating) {
  Program program = makeSmallProgram();
  std::vector<uint8_t> original = writeRaw(program);

  // Section count.
  std::vector<uint8_t> bytes = original;
  store(bytes, 16, 4, 100000);
  EXPECT_EQ(readError(bytes), "header: section count 100000 out of range "
                              "(1..64)");

  // Instruction count of a stream.
  bytes = original;
  SectionLocation stream = findSection(bytes, kTensorStreamId + 2); // scalar
  ASSERT_EQ(stream.flags, 0u);
  store(bytes, stream.offset, 4, 0xFFFFFFFFu);
  reseal(bytes);
  EXPECT_TRUE(contains(readError(bytes),
                       "section 'stream.scalar': 4294967295 instructions "
                       "cannot fit in the"));

  // Tensor count.
  bytes = original;
  SectionLocation tensors = findSection(bytes, kTensorsId);
  ASSERT_EQ(tensors.flags, 0u);
  store(bytes, tensors.offset, 4, 0x7FFFFFFF);
  reseal(bytes);
  EXPECT_TRUE(contains(readError(bytes), "section 'tensors': 2147483647 "
                                         "tensors cannot fit"));

  // A string length far past the section.
  bytes = original;
  store(bytes, tensors.offset + 4, 4, 3000);
  reseal(bytes);
  EXPECT_TRUE(contains(readError(bytes), "section 'tensors': tensor 0: "
                                         "truncated"));
  store(bytes, tensors.offset + 4, 4, 0xFFFFFFF0u);
  reseal(bytes);
  EXPECT_TRUE(contains(readError(bytes),
                       "tensor 0: name length 4294967280 exceeds the limit"));

  // More instructions than the reader's budget (the decoded form is ~100x
  // larger than the smallest encoding).
  bytes = original;
  ArtifactReadOptions fewInstructions;
  fewInstructions.maxInstructions = 2;
  EXPECT_TRUE(contains(readError(bytes, fewInstructions),
                       "section 'dma.0': 1 instructions take the program past "
                       "the reader's limit of 0"));

  // A raw size past the reader's memory cap is refused before decompressing.
  bytes = original;
  SectionLocation metadata = findSection(bytes, kMetadataId);
  ArtifactReadOptions small;
  small.maxRawBytes = 16;
  EXPECT_TRUE(
      contains(readError(bytes, small), "section 'metadata': raw size"));
  store(bytes, metadata.entry + 24, 8, UINT64_MAX - 5);
  store(bytes, metadata.entry + 4, 4, 1); // claim zstd
  reseal(bytes);
  EXPECT_TRUE(contains(readError(bytes), "past the reader's limit"));
}

TEST(ArtifactTest, PatchedInstructionFieldsAreRejected) {
  Program program = makeSmallProgram();
  std::vector<uint8_t> original = writeRaw(program);
  SectionLocation stream = findSection(original, kTensorStreamId + 2);
  ASSERT_EQ(stream.flags, 0u);
  // Scalar stream: u32 count = 1; instruction: u8 opcode, u32 mask, then
  // waits (u32 count, u32 semaphore, i64 value), signal i32, dst AP (u8
  // memory, u8 dtype, u8 dims, u8 reserved, ...).
  size_t inst = stream.offset + 4;
  size_t dst = inst + 5 + 4 + 12 + 4;
  ASSERT_EQ(original[inst], uint8_t(Opcode::Activation));
  auto patched = [&](size_t offset, uint8_t value) {
    std::vector<uint8_t> bytes = original;
    bytes[offset] = value;
    reseal(bytes);
    return readError(bytes);
  };
  EXPECT_TRUE(contains(patched(inst, 200), "section 'stream.scalar': "
                                           "instruction 0: opcode 200 out of "
                                           "range"));
  // Bit 27, the first unknown field.
  EXPECT_TRUE(contains(patched(inst + 4, 0x08),
                       "instruction 0: unknown fields in presence mask"));
  EXPECT_TRUE(contains(patched(dst, 3), "instruction 0: dst: memory 3 out of "
                                        "range (0..2)"));
  EXPECT_TRUE(contains(patched(dst + 1, 8), "dst: dtype 8 out of range"));
  EXPECT_TRUE(contains(patched(dst + 2, 5), "dst: 5 free dims (limit 4)"));
  EXPECT_TRUE(contains(patched(dst + 3, 1), "dst: reserved byte is 0x01"));
  EXPECT_TRUE(contains(patched(inst + 5, 65), "65 semaphore waits (limit 64)"));
  // A waits count of 0 is the default: non-canonical.
  EXPECT_TRUE(contains(patched(inst + 5, 0), "unexpected bytes") ||
              contains(patched(inst + 5, 0), "default value"));

  // Signal -1 encoded explicitly: not canonical.
  std::vector<uint8_t> bytes = original;
  store(bytes, inst + 5 + 4 + 12, 4, 0xFFFFFFFFu);
  reseal(bytes);
  EXPECT_TRUE(contains(readError(bytes),
                       "field 'signal' is encoded with its default value"));
  store(bytes, inst + 5 + 4 + 12, 4, 0xFFFFFFF0u);
  reseal(bytes);
  EXPECT_TRUE(contains(readError(bytes), "signal semaphore -16 is negative"));
}

TEST(ArtifactTest, InconsistentTablesAreRejected) {
  std::vector<uint8_t> original = writeRaw(makeSmallProgram());
  size_t second = kHeaderSize + kEntrySize;
  auto patched = [&](size_t offset, unsigned size, uint64_t value) {
    std::vector<uint8_t> bytes = original;
    store(bytes, offset, size, value);
    reseal(bytes);
    return readError(bytes);
  };
  EXPECT_TRUE(contains(patched(second, 4, 1), "entry 1: section id 1 is out "
                                              "of order or repeated"));
  EXPECT_TRUE(contains(patched(second, 4, 14),
                       "section id 14 is unknown to this runtime"));
  EXPECT_TRUE(contains(patched(second + 4, 4, 4), "unknown flags"));
  EXPECT_TRUE(contains(patched(second + 4, 4, 2), "a required section is "
                                                  "marked optional"));
  EXPECT_TRUE(contains(patched(second + 8, 8, 1), "(sections are "
                                                  "contiguous)"));
  EXPECT_TRUE(contains(patched(second + 16, 8, 1u << 30), "run past the end"));
  EXPECT_TRUE(contains(patched(second + 24, 8, 1), "differs from raw size"));
  EXPECT_TRUE(contains(patched(12, 4, 1), "header: unknown flags"));
  EXPECT_TRUE(contains(patched(20, 4, 1), "header: reserved field"));
  EXPECT_TRUE(contains(patched(24, 8, original.size() - 1),
                       "1 trailing bytes after the artifact"));

  // An unknown section flagged optional is skipped.
  std::vector<uint8_t> bytes = original;
  size_t last = kHeaderSize + (sectionCount(bytes) - 1) * kEntrySize;
  ASSERT_EQ(load(bytes, last, 4), 16u); // dma.0
  store(bytes, last, 4, 200);
  store(bytes, last + 4, 4, 2);
  reseal(bytes);
  // ... but then dma.0 is missing while the metadata declares one queue.
  EXPECT_TRUE(contains(readError(bytes), "1 DMA queues declared, 0 present"));

  // A missing required section.
  bytes = original;
  store(bytes, kHeaderSize, 4, 0); // metadata -> an unknown optional id
  store(bytes, kHeaderSize + 4, 4, 2);
  reseal(bytes);
  EXPECT_EQ(readError(bytes), "section table: missing section 'metadata'");
}

TEST(ArtifactTest, WriterRefusesWhatTheReaderWouldReject) {
  Program base = makeSmallProgram();
  Program program = base;
  program.dmaQueues.resize(17);
  EXPECT_TRUE(contains(writeError(program), "17 DMA queues (limit 16)"));

  program = base;
  program.engineStreams[2][0].dst.dims.resize(5);
  EXPECT_EQ(writeError(program),
            "stream.scalar: instruction 0: dst: 5 free dims (limit 4)");

  program = base;
  program.engineStreams[2][0].srcs.resize(9);
  EXPECT_TRUE(contains(writeError(program), "9 sources (limit 8)"));

  program = base;
  program.engineStreams[2][0].scalar1.column.dtype = DType(42);
  EXPECT_TRUE(
      contains(writeError(program), "scalar1: column: dtype 42 out of range"));

  program = base;
  program.engineStreams[4][0].opcode = Opcode(99);
  EXPECT_TRUE(contains(writeError(program), "opcode 99 out of range"));

  program = base;
  program.tensors[1].name = "bad\xC3";
  EXPECT_TRUE(contains(writeError(program),
                       "tensor 1: name is not valid UTF-8 at byte 3"));
  program.tensors[1].name = "\xC0\xAF"; // overlong '/'
  EXPECT_TRUE(contains(writeError(program), "not valid UTF-8"));
  program.tensors[1].name = "\xED\xA0\x80"; // surrogate
  EXPECT_TRUE(contains(writeError(program), "not valid UTF-8"));

  program = base;
  program.tensors[0].shape = {4, -1};
  EXPECT_TRUE(contains(writeError(program), "negative dimension"));
  program.tensors[0].shape = {INT64_MAX, 2};
  EXPECT_TRUE(contains(writeError(program), "more than 2^63 bytes"));
  program.tensors[0].shape = std::vector<int64_t>(17, 1);
  EXPECT_TRUE(contains(writeError(program), "rank 17 (limit 16)"));

  program = base;
  program.tensors[2].aliasesInput = 3;
  EXPECT_TRUE(contains(writeError(program), "aliasesInput 3 out of range"));

  ArtifactInfo info;
  info.report["k"] = std::string("a\0b", 3);
  EXPECT_TRUE(contains(writeError(base, info), "report['k']: report value "
                                               "has a NUL byte at 1"));
  info = ArtifactInfo();
  info.estimatedDeviceTimeNs = std::nan("");
  EXPECT_TRUE(contains(writeError(base, info), "estimated device time"));
  info = ArtifactInfo();
  info.target = "trn2";
  EXPECT_TRUE(contains(writeError(base, info), "differs from the program's"));
  info.target = "trn1"; // equal is fine
  std::vector<uint8_t> bytes;
  std::string error;
  EXPECT_TRUE(writeArtifact(base, info, bytes, error)) << error;
}

} // namespace
