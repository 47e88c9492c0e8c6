//===- ArtifactContainer.cpp - the artifact's header and sections ---------===//
//
// Layout (docs/artifact-format.md): a 40-byte header, a table of 40-byte
// section entries, then the sections back to back in table order. The table
// is checked entry by entry against the file's size and the format's limits,
// and each section's checksum before it is decoded.
//
//===----------------------------------------------------------------------===//

#include "ArtifactContainer.h"
#include "ArtifactCodec.h"

#include <xxhash.h>

#include <cinttypes>
#include <cstring>

namespace trnrt {
namespace artifact {

std::string sectionName(uint32_t id) {
  static const char *const kStreamNames[kNumEngineStreams] = {
      "stream.tensor", "stream.vector", "stream.scalar", "stream.gpsimd",
      "stream.sync"};
  if (id == kSectionMetadata)
    return "metadata";
  if (id == kSectionTensors)
    return "tensors";
  if (id == kSectionConstants)
    return "constants";
  if (id == kSectionMesh)
    return "mesh";
  if (id == kSectionPipeline)
    return "pipeline";
  if (id == kSectionSubroutines)
    return "subroutines";
  if (id == kSectionCalls)
    return "calls";
  if (id == kSectionKinds)
    return "kinds";
  if (id == kSectionOrigins)
    return "origins";
  if (id >= kSectionFirstEngineStream &&
      id < kSectionFirstEngineStream + kNumEngineStreams)
    return kStreamNames[id - kSectionFirstEngineStream];
  if (id >= kSectionFirstDmaQueue &&
      id < kSectionFirstDmaQueue + kArtifactMaxDmaQueues)
    return "dma." + std::to_string(id - kSectionFirstDmaQueue);
  return "#" + std::to_string(id);
}

bool isKnownSection(uint32_t id) {
  return id == kSectionMetadata || id == kSectionTensors ||
         id == kSectionConstants || id == kSectionMesh ||
         id == kSectionPipeline || id == kSectionSubroutines ||
         id == kSectionCalls ||
         (id >= kSectionFirstEngineStream &&
          id < kSectionFirstEngineStream + kNumEngineStreams) ||
         (id >= kSectionFirstDmaQueue &&
          id < kSectionFirstDmaQueue + kArtifactMaxDmaQueues);
}

uint64_t headerChecksum(const uint8_t *data, size_t tableEnd) {
  // The checksum covers the header and the table with its own field zeroed.
  std::vector<uint8_t> copy(data, data + tableEnd);
  std::memset(copy.data() + kHeaderChecksumOffset, 0, 8);
  return XXH3_64bits(copy.data(), copy.size());
}

bool parseContainer(const uint8_t *data, size_t size,
                    const ArtifactReadOptions &options, Container &container,
                    std::string &error) {
  if (size == 0) {
    error = "not a trn artifact (empty file)";
    return false;
  }
  if (std::memcmp(data, kMagic, std::min(size, sizeof(kMagic))) != 0) {
    error = "not a trn artifact (bad magic)";
    return false;
  }
  if (size < kHeaderSize) {
    error = formatString("header: truncated: %zu bytes, the header alone is "
                         "%zu",
                         size, kHeaderSize);
    return false;
  }
  uint32_t version = uint32_t(loadLittleEndian(data + 8, 4));
  if (version == 0) {
    error = "header: format version 0 is invalid";
    return false;
  }
  if (version > kArtifactFormatVersion) {
    error = formatString("artifact format %" PRIu32
                         " is newer than this runtime (%" PRIu32
                         "); recompile or upgrade",
                         version, kArtifactFormatVersion);
    return false;
  }
  container.version = version;
  uint32_t count = uint32_t(loadLittleEndian(data + 16, 4));
  if (count == 0 || count > kMaxSections) {
    error = formatString("header: section count %" PRIu32
                         " out of range (1..%" PRIu32 ")",
                         count, kMaxSections);
    return false;
  }
  size_t tableEnd = kHeaderSize + size_t(count) * kSectionEntrySize;
  if (size < tableEnd) {
    error = formatString("header: truncated: the section table ends at byte "
                         "%zu, the file has %zu",
                         tableEnd, size);
    return false;
  }
  uint64_t storedHeaderChecksum =
      loadLittleEndian(data + kHeaderChecksumOffset, 8);
  if (options.verifyChecksums) {
    uint64_t computed = headerChecksum(data, tableEnd);
    if (computed != storedHeaderChecksum) {
      error = formatString("header: checksum mismatch (stored 0x%016" PRIx64
                           ", computed 0x%016" PRIx64
                           "); the header or section table is corrupt",
                           storedHeaderChecksum, computed);
      return false;
    }
  }
  uint32_t headerFlags = uint32_t(loadLittleEndian(data + 12, 4));
  if (headerFlags != 0) {
    error = formatString("header: unknown flags 0x%08" PRIx32, headerFlags);
    return false;
  }
  if (loadLittleEndian(data + 20, 4) != 0) {
    error = "header: reserved field is not zero";
    return false;
  }
  uint64_t fileSize = loadLittleEndian(data + 24, 8);
  if (fileSize > size) {
    error = formatString("truncated: the header says %" PRIu64
                         " bytes, the file has %zu",
                         fileSize, size);
    return false;
  }
  if (fileSize < size) {
    error = formatString("%" PRIu64 " trailing bytes after the artifact "
                         "(the header says %" PRIu64 " bytes)",
                         uint64_t(size) - fileSize, fileSize);
    return false;
  }

  uint64_t expectedOffset = tableEnd;
  uint64_t totalRaw = 0;
  container.sections.clear();
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t *entryBytes = data + kHeaderSize + i * kSectionEntrySize;
    SectionEntry entry;
    entry.id = uint32_t(loadLittleEndian(entryBytes, 4));
    entry.flags = uint32_t(loadLittleEndian(entryBytes + 4, 4));
    entry.offset = loadLittleEndian(entryBytes + 8, 8);
    entry.storedSize = loadLittleEndian(entryBytes + 16, 8);
    entry.rawSize = loadLittleEndian(entryBytes + 24, 8);
    entry.checksum = loadLittleEndian(entryBytes + 32, 8);
    std::string where = "section '" + sectionName(entry.id) + "'";
    if (i > 0 && entry.id <= container.sections.back().id) {
      error =
          formatString("section table: entry %" PRIu32 ": section id %" PRIu32
                       " is out of order or repeated",
                       i, entry.id);
      return false;
    }
    if (entry.flags & ~kKnownSectionFlags) {
      error = where + formatString(": unknown flags 0x%08" PRIx32, entry.flags);
      return false;
    }
    if (entry.offset != expectedOffset) {
      error =
          where + formatString(": starts at byte %" PRIu64 ", expected %" PRIu64
                               " (sections are contiguous)",
                               entry.offset, expectedOffset);
      return false;
    }
    if (entry.storedSize > uint64_t(size) - entry.offset) {
      error = where + formatString(": %" PRIu64 " bytes at byte %" PRIu64
                                   " run past the end of the file (%zu bytes)",
                                   entry.storedSize, entry.offset, size);
      return false;
    }
    if (entry.rawSize > options.maxRawBytes - totalRaw) {
      error = where + formatString(": raw size %" PRIu64
                                   " takes the artifact past the reader's "
                                   "limit of %" PRIu64 " bytes",
                                   entry.rawSize, options.maxRawBytes);
      return false;
    }
    totalRaw += entry.rawSize;
    if (entry.flags & kSectionFlagZstd) {
      if (entry.storedSize >= entry.rawSize) {
        error = where + formatString(": compressed size %" PRIu64
                                     " is not below its raw size %" PRIu64,
                                     entry.storedSize, entry.rawSize);
        return false;
      }
    } else if (entry.storedSize != entry.rawSize) {
      error = where + formatString(": stored size %" PRIu64
                                   " differs from raw size %" PRIu64
                                   " in an uncompressed section",
                                   entry.storedSize, entry.rawSize);
      return false;
    }
    expectedOffset += entry.storedSize;
    int index = int(container.sections.size());
    container.sections.push_back(entry);

    if (entry.id == kSectionKinds && (entry.flags & kSectionFlagOptional)) {
      container.kinds = index;
      continue;
    }
    if (entry.id == kSectionOrigins && (entry.flags & kSectionFlagOptional)) {
      container.origins = index;
      continue;
    }
    if (!isKnownSection(entry.id)) {
      if (entry.flags & kSectionFlagOptional)
        continue; // A later minor addition this reader may skip.
      error = formatString("section table: section id %" PRIu32
                           " is unknown to this runtime (format %" PRIu32
                           ") and not optional",
                           entry.id, kArtifactFormatVersion);
      return false;
    }
    if (entry.flags & kSectionFlagOptional) {
      error = where + ": a required section is marked optional";
      return false;
    }
    if (entry.id == kSectionMetadata)
      container.metadata = index;
    else if (entry.id == kSectionTensors)
      container.tensors = index;
    else if (entry.id == kSectionConstants)
      container.constants = index;
    else if (entry.id == kSectionMesh)
      container.mesh = index;
    else if (entry.id == kSectionPipeline)
      container.pipeline = index;
    else if (entry.id == kSectionSubroutines)
      container.subroutines = index;
    else if (entry.id == kSectionCalls)
      container.calls = index;
    else if (entry.id < kSectionFirstDmaQueue)
      container.engineStreams[entry.id - kSectionFirstEngineStream] = index;
    else if (entry.id ==
             kSectionFirstDmaQueue + uint32_t(container.dmaQueues.size()))
      container.dmaQueues.push_back(index);
    else {
      error = where + formatString(": present without 'dma.%zu'",
                                   container.dmaQueues.size());
      return false;
    }
  }
  if (expectedOffset != size) {
    error = formatString("section table: the sections end at byte %" PRIu64
                         " but the file has %zu bytes",
                         expectedOffset, size);
    return false;
  }
  auto require = [&](int index, uint32_t id) {
    if (index >= 0)
      return true;
    error = "section table: missing section '" + sectionName(id) + "'";
    return false;
  };
  if (!require(container.metadata, kSectionMetadata) ||
      !require(container.tensors, kSectionTensors) ||
      !require(container.constants, kSectionConstants))
    return false;
  for (uint32_t e = 0; e < kNumEngineStreams; ++e)
    if (!require(container.engineStreams[e], kSectionFirstEngineStream + e))
      return false;

  if (options.verifyChecksums) {
    for (const SectionEntry &entry : container.sections) {
      uint64_t computed =
          XXH3_64bits(data + entry.offset, size_t(entry.storedSize));
      if (computed != entry.checksum) {
        error =
            "section '" + sectionName(entry.id) + "'" +
            formatString(": checksum mismatch (stored 0x%016" PRIx64
                         ", computed 0x%016" PRIx64 "); the section is corrupt",
                         entry.checksum, computed);
        return false;
      }
    }
  }
  return true;
}

bool loadSection(const uint8_t *data, const SectionEntry &entry,
                 ZSTD_DCtx *context, std::vector<uint8_t> &buffer,
                 const uint8_t *&raw, std::string &error) {
  const uint8_t *stored = data + entry.offset;
  size_t storedSize = size_t(entry.storedSize);
  if (!(entry.flags & kSectionFlagZstd)) {
    raw = stored;
    return true;
  }
  std::string where = "section '" + sectionName(entry.id) + "'";
  unsigned long long declared = ZSTD_getFrameContentSize(stored, storedSize);
  if (declared == ZSTD_CONTENTSIZE_ERROR) {
    error = where + ": not a valid zstd frame";
    return false;
  }
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN) {
    error = where + ": the zstd frame does not declare its size";
    return false;
  }
  if (declared != entry.rawSize) {
    error = where + formatString(": the zstd frame declares %llu bytes, the "
                                 "section table %" PRIu64,
                                 declared, entry.rawSize);
    return false;
  }
  size_t frameSize = ZSTD_findFrameCompressedSize(stored, storedSize);
  if (ZSTD_isError(frameSize) || frameSize != storedSize) {
    error = where + ": the stored bytes are not exactly one zstd frame";
    return false;
  }
  buffer.resize(size_t(entry.rawSize));
  size_t got = ZSTD_decompressDCtx(context, buffer.data(), buffer.size(),
                                   stored, storedSize);
  if (ZSTD_isError(got)) {
    error = where + ": zstd: " + ZSTD_getErrorName(got);
    return false;
  }
  if (got != buffer.size()) {
    error = where + formatString(": decompressed to %zu bytes, expected "
                                 "%" PRIu64,
                                 got, entry.rawSize);
    return false;
  }
  raw = buffer.data();
  return true;
}

bool createDContext(std::unique_ptr<ZSTD_DCtx, ZstdDContextDeleter> &context,
                    std::string &error) {
  context.reset(ZSTD_createDCtx());
  if (context)
    return true;
  error = "out of memory creating a zstd decompression context";
  return false;
}

} // namespace artifact
} // namespace trnrt
