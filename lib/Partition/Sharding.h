//===- Sharding.h - a value's sharding while a pass runs ------*- C++ -*-===//
//
// Private to lib/Partition: the mutable form of #dist.sharding the passes
// compute with.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_PARTITION_SHARDING_H
#define TRN_LIB_PARTITION_SHARDING_H

#include "trn/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::trn::partition {

using dist::ShardingAttr;

using Axes = SmallVector<StringAttr, 2>;

/// A value's sharding while the pass runs.
struct Sharding {
  SmallVector<Axes> dims;
  Axes partial;

  bool operator==(const Sharding &other) const {
    return dims == other.dims && partial == other.partial;
  }
  bool operator!=(const Sharding &other) const { return !(*this == other); }
  int64_t axisCount() const {
    int64_t count = partial.size();
    for (const Axes &axes : dims)
      count += axes.size();
    return count;
  }
  /// Every dimension's axes extend `other`'s (a finer split), same partial.
  bool refines(const Sharding &other) const {
    if (dims.size() != other.dims.size() || partial != other.partial)
      return false;
    for (auto [mine, theirs] : llvm::zip(dims, other.dims))
      if (mine.size() < theirs.size() ||
          !std::equal(theirs.begin(), theirs.end(), mine.begin()))
        return false;
    return *this != other;
  }

  static Sharding fromAttr(ShardingAttr attr) {
    Sharding sharding;
    for (Attribute dim : attr.getDims()) {
      Axes axes;
      for (Attribute axis : cast<ArrayAttr>(dim))
        axes.push_back(cast<StringAttr>(axis));
      sharding.dims.push_back(axes);
    }
    for (Attribute axis : attr.getPartial())
      sharding.partial.push_back(cast<StringAttr>(axis));
    return sharding;
  }
  ShardingAttr toAttr(MLIRContext *context, FlatSymbolRefAttr mesh) const {
    auto list = [&](const Axes &axes) {
      SmallVector<Attribute> names(axes.begin(), axes.end());
      return ArrayAttr::get(context, names);
    };
    SmallVector<Attribute> dimAttrs;
    for (const Axes &axes : dims)
      dimAttrs.push_back(list(axes));
    return ShardingAttr::get(context, mesh, ArrayAttr::get(context, dimAttrs),
                             list(partial));
  }
};

} // namespace mlir::trn::partition

#endif // TRN_LIB_PARTITION_SHARDING_H
