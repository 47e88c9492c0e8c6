//===- NCCollectives.cpp - verifiers of the nc collectives ----------------===//
//
// A collective works on whole HBM tensors and names axes of its kernel's
// mesh (nc.mesh_axes / nc.mesh_sizes, which convert-trn-to-nc copies from
// the dist.mesh of a partitioned program). The shapes are checked against
// the compile-time group size; the runtime checks them again against the
// sizes a job binds.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/NC/IR/NCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::nc;

namespace {

/// The group size of `axes` in the kernel's mesh; emits an error naming
/// the problem (no mesh, unknown or repeated axis) otherwise.
FailureOr<int64_t> groupSizeOf(Operation *op, ArrayAttr axes, bool emit) {
  auto kernel = op->getParentOfType<func::FuncOp>();
  auto names =
      kernel
          ? kernel->getAttrOfType<ArrayAttr>(NCDialect::getMeshAxesAttrName())
          : ArrayAttr();
  auto sizes = kernel ? kernel->getAttrOfType<DenseI64ArrayAttr>(
                            NCDialect::getMeshSizesAttrName())
                      : DenseI64ArrayAttr();
  if (!names || !sizes || names.size() != sizes.size()) {
    if (emit)
      op->emitOpError("needs a kernel with a mesh (nc.mesh_axes and "
                      "nc.mesh_sizes of equal length)");
    return failure();
  }
  if (axes.empty()) {
    if (emit)
      op->emitOpError("names no mesh axis");
    return failure();
  }
  int64_t size = 1;
  llvm::SmallDenseSet<StringRef> seen;
  for (Attribute axis : axes) {
    auto name = dyn_cast<StringAttr>(axis);
    int64_t index = -1;
    for (auto [i, known] : llvm::enumerate(names))
      if (name && cast<StringAttr>(known) == name)
        index = static_cast<int64_t>(i);
    if (index < 0 || !seen.insert(name.getValue()).second) {
      if (emit)
        op->emitOpError("axis ")
            << axis
            << (index < 0 ? " is not an axis of the kernel's mesh "
                          : " is named twice in ")
            << names;
      return failure();
    }
    size *= sizes[index];
  }
  return size;
}

LogicalResult sameElementType(Operation *op, HbmType dst, HbmType src) {
  if (dst.getElementType() != src.getElementType())
    return op->emitOpError("dst holds ")
           << dst.getElementType() << " but src holds " << src.getElementType()
           << " (collectives do not convert)";
  return success();
}

/// dst's shape must be src's with dimension `dim` multiplied (grow) or
/// divided (!grow) by the group size `n`.
LogicalResult checkAlongDim(Operation *op, HbmType dst, HbmType src,
                            int64_t dim, int64_t n, bool grow,
                            StringRef what = "dim") {
  ArrayRef<int64_t> in = src.getShape(), out = dst.getShape();
  if (dim >= static_cast<int64_t>(in.size()) || in.size() != out.size())
    return op->emitOpError()
           << what << " " << dim << " must be a dimension of src and dst "
           << "(ranks " << in.size() << " and " << out.size() << ")";
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    int64_t expected = in[d];
    if (d == dim) {
      if (!grow && in[d] % n != 0)
        return op->emitOpError()
               << "src dimension " << d << " (" << in[d]
               << ") is not a multiple of the group size " << n;
      expected = grow ? in[d] * n : in[d] / n;
    }
    if (out[d] != expected)
      return op->emitOpError()
             << "dst dimension " << d << " must be " << expected
             << (d == dim ? (grow ? " (src's times the group size "
                                  : " (src's divided by the group size ")
                          : " (src's")
             << (d == dim ? std::to_string(n) : std::string()) << "), got "
             << out[d];
  }
  return success();
}

template <typename Op> LogicalResult checkCommon(Op op) {
  if (failed(groupSizeOf(op, op.getAxes(), /*emit=*/true)))
    return failure();
  return sameElementType(op, op.getDst().getType(), op.getSrc().getType());
}

LogicalResult checkReduction(Operation *op, CollectiveReduction reduction,
                             HbmType type) {
  Type element = type.getElementType();
  if (element.isSignlessInteger(1))
    return op->emitOpError("cannot reduce i1 values");
  if (reduction == CollectiveReduction::mean && !isa<FloatType>(element))
    return op->emitOpError("a mean needs a float type, got ") << element;
  return success();
}

} // namespace

#define NC_GROUP_SIZE(Op)                                                      \
  std::optional<int64_t> Op::groupSize() {                                     \
    FailureOr<int64_t> size = groupSizeOf(*this, getAxes(), /*emit=*/false);   \
    return succeeded(size) ? std::optional<int64_t>(*size) : std::nullopt;     \
  }
NC_GROUP_SIZE(AllReduceOp)
NC_GROUP_SIZE(AllGatherOp)
NC_GROUP_SIZE(ReduceScatterOp)
NC_GROUP_SIZE(AllSliceOp)
NC_GROUP_SIZE(AllToAllOp)
NC_GROUP_SIZE(CollectivePermuteOp)
NC_GROUP_SIZE(AxisIndexOp)
NC_GROUP_SIZE(SendOp)
NC_GROUP_SIZE(RecvOp)
#undef NC_GROUP_SIZE

namespace {

/// A transfer goes along one axis, to another index of it.
LogicalResult checkTransfer(Operation *op, ArrayAttr axes, int64_t peer) {
  FailureOr<int64_t> size = groupSizeOf(op, axes, /*emit=*/true);
  if (failed(size))
    return failure();
  if (axes.size() != 1)
    return op->emitOpError("goes along one mesh axis, not ") << axes;
  if (peer >= *size)
    return op->emitOpError("peer ")
           << peer << " is outside axis " << axes[0] << " of size " << *size;
  return success();
}

} // namespace

LogicalResult SendOp::verify() {
  return checkTransfer(*this, getAxes(), getPeer());
}

LogicalResult RecvOp::verify() {
  return checkTransfer(*this, getAxes(), getPeer());
}

LogicalResult AllReduceOp::verify() {
  if (failed(checkCommon(*this)) ||
      failed(checkReduction(*this, getReduction(), getSrc().getType())))
    return failure();
  if (getDst().getType().getShape() != getSrc().getType().getShape())
    return emitOpError("dst and src must have the same shape");
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (failed(checkCommon(*this)))
    return failure();
  return checkAlongDim(*this, getDst().getType(), getSrc().getType(), getDim(),
                       *groupSize(), /*grow=*/true);
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(checkCommon(*this)) ||
      failed(checkReduction(*this, getReduction(), getSrc().getType())))
    return failure();
  return checkAlongDim(*this, getDst().getType(), getSrc().getType(), getDim(),
                       *groupSize(), /*grow=*/false);
}

LogicalResult AllSliceOp::verify() {
  if (failed(checkCommon(*this)))
    return failure();
  return checkAlongDim(*this, getDst().getType(), getSrc().getType(), getDim(),
                       *groupSize(), /*grow=*/false);
}

LogicalResult AllToAllOp::verify() {
  if (failed(checkCommon(*this)))
    return failure();
  int64_t n = *groupSize();
  HbmType src = getSrc().getType(), dst = getDst().getType();
  int64_t rank = static_cast<int64_t>(src.getShape().size());
  if (getSplitDim() >= rank || getConcatDim() >= rank ||
      dst.getShape().size() != src.getShape().size())
    return emitOpError("split_dim ")
           << getSplitDim() << " and concat_dim " << getConcatDim()
           << " must be dimensions of src and dst (rank " << rank << ")";
  SmallVector<int64_t> expected(src.getShape());
  if (expected[getSplitDim()] % n != 0)
    return emitOpError("src dimension ")
           << getSplitDim() << " (" << expected[getSplitDim()]
           << ") is not a multiple of the group size " << n;
  expected[getSplitDim()] /= n;
  expected[getConcatDim()] *= n;
  if (ArrayRef<int64_t>(expected) != dst.getShape())
    return emitOpError("dst must have shape [")
           << expected << "] (split_dim divided, concat_dim multiplied by the "
           << "group size " << n << ")";
  return success();
}

LogicalResult CollectivePermuteOp::verify() {
  if (failed(checkCommon(*this)))
    return failure();
  if (getDst().getType().getShape() != getSrc().getType().getShape())
    return emitOpError("dst and src must have the same shape");
  if (getShift() == 0)
    return emitOpError("shift must not be 0");
  return success();
}

LogicalResult AxisIndexOp::verify() {
  if (failed(groupSizeOf(*this, getAxes(), /*emit=*/true)))
    return failure();
  HbmType dst = getDst().getType();
  int64_t elements = 1;
  for (int64_t size : dst.getShape())
    elements *= size;
  Type element = dst.getElementType();
  if (elements != 1 ||
      !(element.isSignlessInteger(32) || element.isSignlessInteger(64)))
    return emitOpError("dst must be one i32 or i64 element, got ") << dst;
  return success();
}
