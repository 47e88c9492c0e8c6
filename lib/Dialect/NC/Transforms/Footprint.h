//===- Footprint.h - memory an nc operand touches ---------------*- C++ -*-===//
//
// Shared by nc-allocate (liveness: which allocation a value belongs to) and
// nc-insert-sync (which instructions touch overlapping memory).
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_DIALECT_NC_TRANSFORMS_FOOTPRINT_H
#define TRN_LIB_DIALECT_NC_TRANSFORMS_FOOTPRINT_H

#include "trn/Dialect/NC/IR/NCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::nc {

/// A conservative box of memory: partitions [p0, p1) x bytes [b0, b1) of
/// one memory. An HBM footprint is bytes [b0, b1) of the tensor `root`
/// (the hull of the elements a view can touch: stores of different tiles of
/// one output do not wait for each other); a placed scratch tensor
/// (nc.hbm_alloc with a byte_offset, which may share bytes with other
/// scratch tensors live at other times) also has `scratchOffset`, where its
/// bytes start in the scratch region.
struct Footprint {
  MemorySpace memory = MemorySpace::sbuf;
  Value root; ///< HBM tensor, or the alloc when it has no address yet
  int64_t p0 = 0, p1 = 0, b0 = 0, b1 = 0;
  std::optional<int64_t> scratchOffset;

  bool overlaps(const Footprint &other) const {
    if (memory != other.memory)
      return false;
    if (memory == MemorySpace::hbm) {
      if (scratchOffset && other.scratchOffset)
        return *scratchOffset + b0 < *other.scratchOffset + other.b1 &&
               *other.scratchOffset + other.b0 < *scratchOffset + b1;
      return root == other.root && b0 < other.b1 && other.b0 < b1;
    }
    if (!hasAddress() || !other.hasAddress())
      return root == other.root;
    return p0 < other.p1 && other.p0 < p1 && b0 < other.b1 && other.b0 < b1;
  }
  bool hasAddress() const { return b1 > b0; }
};

/// Bytes [first, last + 1) of its source that an HBM view can touch, or
/// nothing when they cannot be bounded (a negative stride).
inline std::optional<std::pair<int64_t, int64_t>> hbmViewBytes(ViewOp view) {
  auto viewType = cast<TileType>(view.getType());
  ArrayRef<int64_t> shape = viewType.getShape();
  ArrayRef<int64_t> strides = view.getStrides();
  if (shape.empty() || shape.size() != strides.size() + 1 ||
      view.getOffset() < 0 || view.getPartitionStride() < 0)
    return std::nullopt;
  int64_t lastElement = view.getOffset();
  lastElement += (shape[0] - 1) * view.getPartitionStride();
  for (auto [size, stride] : llvm::zip(shape.drop_front(), strides)) {
    if (stride < 0 || size < 1)
      return std::nullopt;
    lastElement += (size - 1) * stride;
  }
  int64_t bytes = (viewType.getElementType().getIntOrFloatBitWidth() + 7) / 8;
  return std::make_pair(view.getOffset() * bytes, (lastElement + 1) * bytes);
}

/// The footprint of operand `value` (a tile or an HBM tensor).
inline Footprint footprintOf(Value value) {
  Footprint footprint;
  Value root = rootOf(value);
  footprint.root = root;
  if (auto hbm = dyn_cast<HbmType>(root.getType())) {
    footprint.memory = MemorySpace::hbm;
    footprint.b1 = hbmBytes(hbm);
    if (auto alloc = root.getDefiningOp<HbmAllocOp>())
      footprint.scratchOffset = alloc.getByteOffset();
    // A view of the tensor (directly or of a reshape of it, which keeps the
    // row-major bytes) touches only its hull; a view of a view keeps the
    // whole tensor.
    auto view = value.getDefiningOp<ViewOp>();
    if (!view)
      return footprint;
    Value source = view.getSource();
    // A window of rows (a reshape at an offset) shifts the view's bytes.
    int64_t shift = 0;
    while (auto reshape = source.getDefiningOp<HbmReshapeOp>()) {
      int64_t bytes =
          (reshape.getType().getElementType().getIntOrFloatBitWidth() + 7) / 8;
      shift += static_cast<int64_t>(reshape.getOffset().value_or(0)) * bytes;
      source = reshape.getSource();
    }
    if (source != root)
      return footprint;
    if (auto bytes = hbmViewBytes(view);
        bytes && bytes->first < bytes->second &&
        shift + bytes->second <= footprint.b1) {
      footprint.b0 = shift + bytes->first;
      footprint.b1 = shift + bytes->second;
    }
    return footprint;
  }
  auto rootType = cast<TileType>(root.getType());
  footprint.memory = rootType.getMemory();
  auto alloc = root.getDefiningOp<AllocOp>();
  if (!alloc || !alloc.getStartPartition() || !alloc.getByteOffset())
    return footprint; // identity only
  // All partitions of the allocation (the partition bands of nc-insert-sync
  // are cut at allocation boundaries only) and, for a view of it, the bytes
  // between its first and last element: matmuls reading one K tile of a
  // resident panel must not wait for the loads of the others.
  footprint.p0 = *alloc.getStartPartition();
  footprint.p1 = footprint.p0 + rootType.getPartitions();
  footprint.b0 = *alloc.getByteOffset();
  footprint.b1 = footprint.b0 + rootType.getFreeBytes();
  auto view = value.getDefiningOp<ViewOp>();
  if (!view || view.getSource() != root)
    return footprint;
  auto viewType = cast<TileType>(value.getType());
  ArrayRef<int64_t> sizes = viewType.getFreeShape();
  ArrayRef<int64_t> strides = view.getStrides();
  if (sizes.size() != strides.size())
    return footprint;
  int64_t lastElement = static_cast<int64_t>(view.getOffset());
  for (auto [size, stride] : llvm::zip(sizes, strides)) {
    if (stride < 0 || size < 1)
      return footprint;
    lastElement += (size - 1) * stride;
  }
  int64_t bytes = (viewType.getElementType().getIntOrFloatBitWidth() + 7) / 8;
  int64_t b0 = footprint.b0 + static_cast<int64_t>(view.getOffset()) * bytes;
  int64_t b1 = footprint.b0 + (lastElement + 1) * bytes;
  if (b0 >= footprint.b0 && b1 <= footprint.b1 && b0 < b1) {
    footprint.b0 = b0;
    footprint.b1 = b1;
  }
  return footprint;
}

} // namespace mlir::nc

#endif // TRN_LIB_DIALECT_NC_TRANSFORMS_FOOTPRINT_H
