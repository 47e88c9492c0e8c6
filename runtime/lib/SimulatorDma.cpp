//===- SimulatorDma.cpp - DMA copies --------------------------------------===//
//
// dma_copy, direct (any memory to any, casting through fp32) and indirect
// (gather and scatter-add of HBM rows by index), with the transfer shape the
// cost model reads and the traffic statistics (docs/isa.md §7).
//
//===----------------------------------------------------------------------===//

#include "SimulatorImpl.h"

#include <numeric>

namespace trnrt {
namespace sim {

//===----------------------------------------------------------------------===//
// DMA
//===----------------------------------------------------------------------===//

bool SimulatorCoreBase::execDmaCopy(const Instruction &inst,
                                    ExecResult &result) {
  return inst.indirect ? execIndirectDma(inst, result)
                       : execDirectDma(inst, result);
}

namespace {

/// Elements per contiguous run of a DMA side (docs/isa.md §7.3): runs never
/// cross an SBUF partition; HBM rows that follow each other merge.
int64_t runLength(const TileView &view) {
  const bool denseRow =
      view.sizes[0] == 1 && view.sizes[1] == 1 && view.sizes[2] == 1 &&
      (view.sizes[3] == 1 || view.strides[3] == int64_t(view.elementBytes));
  if (view.memory == Memory::Hbm && denseRow &&
      (view.partitions == 1 ||
       view.partitionPitch == view.freeElements * int64_t(view.elementBytes)))
    return view.totalElements();
  return std::max<int64_t>(1, view.runElements);
}

/// The DMA part of the cost shape: bytes, contiguous buffers (the pieces
/// both sides' run boundaries cut the transfer into), SBUF partitions and
/// how many sides are in HBM.
void dmaShape(const TileView &src, const TileView &dst, int64_t buffers,
              CostShape &shape) {
  const int64_t elements = dst.totalElements();
  shape.dmaBuffers = double(buffers);
  shape.dmaBytes =
      double(elements) * double(std::max(src.elementBytes, dst.elementBytes));
  shape.dmaPartitions = dst.partitions;
  shape.dmaHbmSides =
      unsigned(src.memory == Memory::Hbm) + unsigned(dst.memory == Memory::Hbm);
  shape.freeElements = dst.freeElements;
}

int64_t directBuffers(const TileView &src, const TileView &dst) {
  const int64_t elements = dst.totalElements();
  const int64_t runSrc = runLength(src), runDst = runLength(dst);
  const int64_t lcm = runSrc / std::gcd(runSrc, runDst) * runDst;
  return elements / runSrc + elements / runDst - elements / lcm;
}

} // namespace

void SimulatorCoreBase::noteDmaTraffic(const TileView &src, const TileView &dst,
                                       ExecResult &result) {
  const uint64_t srcBytes = uint64_t(src.totalElements()) * src.elementBytes;
  const uint64_t dstBytes = uint64_t(dst.totalElements()) * dst.elementBytes;
  const bool srcHbm = src.memory == Memory::Hbm,
             dstHbm = dst.memory == Memory::Hbm;
  if (srcHbm && dstHbm)
    result.hbmToHbmBytes += srcBytes;
  else if (srcHbm)
    result.hbmToSbufBytes += srcBytes;
  else if (dstHbm)
    result.sbufToHbmBytes += dstBytes;
  else
    result.sbufToSbufBytes += srcBytes;
  // The compiler places spill tensors apart from the other scratch tensors
  // (intermediates share bytes only among themselves), so the address tells
  // which kind a transfer touches.
  if (srcHbm) {
    const HbmTensor *tensor = findTensorAt(src.minByte);
    if (tensor && tensor->kind == HbmTensor::Kind::Scratch)
      (tensor->isSpill() ? result.spillReloadBytes
                         : result.scratchReloadBytes) += srcBytes;
  }
  if (dstHbm) {
    const HbmTensor *tensor = findTensorAt(dst.minByte);
    if (tensor && tensor->kind == HbmTensor::Kind::Scratch)
      (tensor->isSpill() ? result.spillSaveBytes : result.scratchSaveBytes) +=
          dstBytes;
  }
}

bool SimulatorCoreBase::execDirectDma(const Instruction &inst,
                                      ExecResult &result) {
  TileView src, dst;
  if (!operand(inst.srcs[0], "src (srcs[0])", src) ||
      !operand(inst.dst, "dst", dst) || !sameShape(src, dst, "src", "dst"))
    return false;
  // Timing only: costed below from the shapes alone. Casts go through fp32
  // (the DMA engines' datapath), integers too.
  if (!options.timingOnly)
    copyConverting(src, dst, /*exactIntegers=*/false);
  dmaShape(src, dst, directBuffers(src, dst), result.shape);
  noteDmaTraffic(src, dst, result);
  noteWrite(dst, result);
  return true;
}

bool SimulatorCoreBase::execIndirectDma(const Instruction &inst,
                                        ExecResult &result) {
  const bool gather = inst.srcs[0].memory == Memory::Hbm;
  const bool scatter = inst.dst.memory == Memory::Hbm;
  if (gather == scatter)
    return fail("an indirect dma_copy needs exactly one HBM side (the rows "
                "the indices select)");
  const AccessPattern &tableAp = gather ? inst.srcs[0] : inst.dst;
  const char *tableName = gather ? "src (srcs[0])" : "dst";
  const char *tileName = gather ? "dst" : "src (srcs[0])";
  TileView tile, indices, row;
  if (!operand(gather ? inst.dst : inst.srcs[0], tileName, tile) ||
      !operand(inst.indices, "indices", indices))
    return false;
  if (indices.memory != Memory::Sbuf ||
      (indices.dtype != DType::I32 && indices.dtype != DType::I64))
    return fail("indices must be an int32 or int64 SBUF tile");
  const unsigned P = tile.partitions;
  if (indices.partitions != P || indices.freeElements != 1)
    return fail("indices must be a [" + std::to_string(P) +
                ", 1] tile (one row index per partition)");
  // The HBM pattern describes the whole table (numPartitions rows,
  // partitionStride apart); the index picks the row for each partition.
  TileView table;
  if (!operand(tableAp, tableName, table, /*decoded=*/false))
    return false;
  AccessPattern rowAp = tableAp;
  rowAp.numPartitions = 1;
  if (!operand(rowAp, tableName, row))
    return false;
  if (row.freeElements != tile.freeElements)
    return fail(std::string("rows of ") + tableName + " have " +
                std::to_string(row.freeElements) + " elements but " + tileName +
                " has " + std::to_string(tile.freeElements) + " per partition");
  const int64_t rows = tableAp.numPartitions;
  const int64_t rowPitch = table.partitionPitch;

  const int64_t F = tile.freeElements;
  // Timing only: the indices (never computed) are not read; the cost does
  // not depend on which rows they pick.
  const unsigned valueRows = options.timingOnly ? 0 : P;
  ensureSize(intA, valueRows);
  if (valueRows)
    decodeTileInt(indices, intA.data());
  ensureSize(bufA, int64_t(valueRows) * F);
  ensureSize(bufB, F);
  if (!gather && valueRows)
    decodeTile(tile, bufA.data());
  for (unsigned p = 0; p < valueRows; ++p) {
    const int64_t index = intA[p];
    if (index < 0 || index >= rows) {
      const HbmTensor *tensor = findTensorAt(tableAp.byteOffset);
      return fail(
          "index " + std::to_string(index) + " at partition " +
          std::to_string(p) + " is outside the " + std::to_string(rows) +
          " rows of the table" +
          (tensor ? " (HBM tensor '" + tensor->name + "')" : std::string()));
    }
    TileView rowView = row;
    rowView.base = row.base + index * rowPitch;
    float *values = bufA.data() + int64_t(p) * F;
    if (gather) {
      decodeTile(rowView, values);
    } else if (inst.accumulate) {
      // Scatter-add: read-modify-write in fp32, partitions in increasing
      // order, so repeated indices all add.
      decodeTile(rowView, bufB.data());
      for (int64_t i = 0; i < F; ++i)
        bufB[i] += values[i];
      encodeTile(bufB.data(), rowView);
    } else {
      encodeTile(values, rowView);
    }
  }
  if (gather && valueRows)
    encodeTile(bufA.data(), tile);

  // Costed like a direct copy of P rows, each row's runs one buffer.
  TileView hbmSide = row;
  hbmSide.partitions = P;
  const TileView &from = gather ? hbmSide : tile;
  const TileView &to = gather ? tile : hbmSide;
  dmaShape(from, to, int64_t(P) * (F / std::max<int64_t>(1, row.runElements)),
           result.shape);
  noteDmaTraffic(from, to, result);
  if (gather)
    noteWrite(tile, result);
  return true;
}

} // namespace sim
} // namespace trnrt
