//===- DistOps.cpp - dist dialect operations ------------------------------===//
//
// Shape rules are checked by each op's verifier; what needs the mesh (axis
// names, group sizes) by verifySymbolUses, once the symbol table is known.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// Meshes
//===----------------------------------------------------------------------===//

/// `<dp = 2, tp = 4>`.
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &axes,
                                 DenseI64ArrayAttr &sizes) {
  SmallVector<Attribute> names;
  SmallVector<int64_t> counts;
  if (parser.parseLess())
    return failure();
  do {
    std::string name;
    int64_t size = 0;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(parser.getBuilder().getStringAttr(name));
    counts.push_back(size);
  } while (succeeded(parser.parseOptionalComma()));
  if (parser.parseGreater())
    return failure();
  axes = parser.getBuilder().getArrayAttr(names);
  sizes = parser.getBuilder().getDenseI64ArrayAttr(counts);
  return success();
}

static void printMeshAxes(OpAsmPrinter &printer, MeshOp, ArrayAttr axes,
                          DenseI64ArrayAttr sizes) {
  printer << "<";
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i)
      printer << ", ";
    printer.printKeywordOrString(cast<StringAttr>(axes[i]).getValue());
    printer << " = " << (i < sizes.size() ? sizes[i] : 0);
  }
  printer << ">";
}

LogicalResult MeshOp::verify() {
  if (getAxes().empty())
    return emitOpError("needs at least one axis");
  if (getAxes().size() != getSizes().size())
    return emitOpError() << "has " << getAxes().size() << " axes but "
                         << getSizes().size() << " sizes";
  llvm::StringSet<> seen;
  for (auto [axis, size] : llvm::zip(getAxes(), getSizes())) {
    StringRef name = cast<StringAttr>(axis).getValue();
    if (name.empty() ||
        !(std::isalpha(static_cast<unsigned char>(name[0])) ||
          name[0] == '_') ||
        !llvm::all_of(name, [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        }))
      return emitOpError() << "axis name \"" << name
                           << "\" is not an identifier";
    if (!seen.insert(name).second)
      return emitOpError() << "axis \"" << name << "\" appears twice";
    if (size < 1)
      return emitOpError() << "axis \"" << name << "\" has size " << size
                           << "; sizes are positive";
  }
  return success();
}

std::optional<int64_t> MeshOp::sizeOf(StringRef axis) {
  for (auto [name, size] : llvm::zip(getAxes(), getSizes()))
    if (cast<StringAttr>(name).getValue() == axis)
      return size;
  return std::nullopt;
}

int64_t MeshOp::numDevices() {
  int64_t count = 1;
  for (int64_t size : getSizes())
    count *= size;
  return count;
}

bool mlir::dist::isReplicaAxis(MeshOp mesh, StringRef axis) {
  auto axes = mesh ? mesh->getAttrOfType<ArrayAttr>(
                         DistDialect::getReplicaAxesAttrName())
                   : ArrayAttr();
  return axes && llvm::any_of(axes, [&](Attribute name) {
           auto text = llvm::dyn_cast<StringAttr>(name);
           return text && text.getValue() == axis;
         });
}

MeshOp mlir::dist::lookupMesh(Operation *from, FlatSymbolRefAttr symbol) {
  if (!symbol)
    return {};
  return SymbolTable::lookupNearestSymbolFrom<MeshOp>(from, symbol);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {

/// The mesh and the named axes exist, each once; `groupSize` is the product
/// of their sizes.
LogicalResult verifyAxes(Operation *op, FlatSymbolRefAttr meshName,
                         ArrayAttr axes, SymbolTableCollection &symbols,
                         int64_t &groupSize) {
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(op, meshName);
  if (!mesh)
    return op->emitOpError()
           << "names " << meshName << ", which is not a dist.mesh";
  if (axes.empty())
    return op->emitOpError("names no mesh axis");
  llvm::StringSet<> seen;
  groupSize = 1;
  for (Attribute axis : axes) {
    StringRef name = cast<StringAttr>(axis).getValue();
    std::optional<int64_t> size = mesh.sizeOf(name);
    if (!size)
      return op->emitOpError() << "names axis \"" << name << "\", which "
                               << meshName << " does not have";
    if (!seen.insert(name).second)
      return op->emitOpError() << "names axis \"" << name << "\" twice";
    groupSize *= *size;
  }
  return success();
}

int64_t groupSizeOf(Operation *op, FlatSymbolRefAttr meshName, ArrayAttr axes) {
  MeshOp mesh = lookupMesh(op, meshName);
  int64_t size = 1;
  if (mesh)
    for (Attribute axis : axes)
      size *= mesh.sizeOf(cast<StringAttr>(axis).getValue()).value_or(1);
  return size;
}

/// Same element type and rank, `dim` in range, and every dimension but
/// those in `changed` equal.
LogicalResult verifyReshaped(Operation *op, RankedTensorType in,
                             RankedTensorType out, ArrayRef<int64_t> changed) {
  if (in.getElementType() != out.getElementType())
    return op->emitOpError()
           << "changes the element type from " << in.getElementType() << " to "
           << out.getElementType();
  if (in.getRank() != out.getRank())
    return op->emitOpError() << "changes the rank from " << in.getRank()
                             << " to " << out.getRank();
  for (int64_t dim : changed)
    if (dim >= in.getRank())
      return op->emitOpError() << "dimension " << dim
                               << " is out of range for rank " << in.getRank();
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!llvm::is_contained(changed, d) &&
        in.getDimSize(d) != out.getDimSize(d))
      return op->emitOpError()
             << "changes dimension " << d << " from " << in.getDimSize(d)
             << " to " << out.getDimSize(d);
  return success();
}

/// `out[dim] == in[dim] * factor` (a gather) or `in[dim] == out[dim] *
/// factor` (a scatter).
LogicalResult verifyScaled(Operation *op, int64_t inSize, int64_t outSize,
                           int64_t dim, int64_t groupSize, bool grows,
                           StringRef what) {
  if (ShapedType::isDynamic(inSize) || ShapedType::isDynamic(outSize))
    return op->emitOpError("needs static shapes");
  if (grows ? outSize != inSize * groupSize : inSize != outSize * groupSize)
    return op->emitOpError()
           << what << " dimension " << dim << " must be "
           << (grows ? "the input's" : "the result's") << " times the group "
           << "size " << groupSize << " (" << (grows ? inSize : outSize)
           << " x " << groupSize << " = "
           << (grows ? inSize : outSize) * groupSize << "), got "
           << (grows ? outSize : inSize);
  return success();
}

} // namespace

#define DIST_GROUP_SIZE(OP)                                                    \
  int64_t OP::groupSize() {                                                    \
    return groupSizeOf(getOperation(), getMeshAttr(), getAxes());              \
  }
DIST_GROUP_SIZE(AllReduceOp)
DIST_GROUP_SIZE(AllGatherOp)
DIST_GROUP_SIZE(ReduceScatterOp)
DIST_GROUP_SIZE(AllToAllOp)
DIST_GROUP_SIZE(AllSliceOp)
DIST_GROUP_SIZE(CollectivePermuteOp)
#undef DIST_GROUP_SIZE

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  int64_t size;
  return verifyAxes(*this, getMeshAttr(), getAxes(), symbols, size);
}

/// The collectives that change one dimension `dim` by the group size:
/// all_gather grows it, reduce_scatter and all_slice shrink it.
template <typename OpTy> LogicalResult verifyOneDim(OpTy op) {
  return verifyReshaped(op, op.getInput().getType(), op.getResult().getType(),
                        {op.getDim()});
}

template <typename OpTy>
LogicalResult verifyOneDimSymbolUses(OpTy op, SymbolTableCollection &symbols,
                                     bool grows) {
  int64_t size;
  if (failed(verifyAxes(op, op.getMeshAttr(), op.getAxes(), symbols, size)))
    return failure();
  int64_t dim = op.getDim();
  return verifyScaled(op, op.getInput().getType().getDimSize(dim),
                      op.getResult().getType().getDimSize(dim), dim, size,
                      grows, grows ? "result" : "input");
}

LogicalResult AllGatherOp::verify() { return verifyOneDim(*this); }
LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyOneDimSymbolUses(*this, symbols, /*grows=*/true);
}
LogicalResult ReduceScatterOp::verify() { return verifyOneDim(*this); }
LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyOneDimSymbolUses(*this, symbols, /*grows=*/false);
}
LogicalResult AllSliceOp::verify() { return verifyOneDim(*this); }
LogicalResult AllSliceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyOneDimSymbolUses(*this, symbols, /*grows=*/false);
}

LogicalResult AllToAllOp::verify() {
  if (getSplitDim() == getConcatDim())
    return emitOpError("splits and concatenates the same dimension; that "
                       "is no exchange");
  return verifyReshaped(*this, getInput().getType(), getResult().getType(),
                        {getSplitDim(), getConcatDim()});
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  int64_t size;
  if (failed(verifyAxes(*this, getMeshAttr(), getAxes(), symbols, size)))
    return failure();
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (failed(verifyScaled(*this, in.getDimSize(split), out.getDimSize(split),
                          split, size, /*grows=*/false, "input")))
    return failure();
  return verifyScaled(*this, in.getDimSize(concat), out.getDimSize(concat),
                      concat, size, /*grows=*/true, "result");
}

LogicalResult CollectivePermuteOp::verify() {
  if (getShift() == 0)
    return emitOpError("shift 0 sends every value to itself; drop the op");
  return success();
}

LogicalResult
CollectivePermuteOp::verifySymbolUses(SymbolTableCollection &symbols) {
  int64_t size;
  return verifyAxes(*this, getMeshAttr(), getAxes(), symbols, size);
}

//===----------------------------------------------------------------------===//
// Rank queries and annotations
//===----------------------------------------------------------------------===//

LogicalResult AxisIndexOp::verifySymbolUses(SymbolTableCollection &symbols) {
  int64_t size;
  return verifyAxes(*this, getMeshAttr(), getAxes(), symbols, size);
}

LogicalResult ShardingConstraintOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (int64_t(getSharding().getDims().size()) != rank)
    return emitOpError() << "sharding has " << getSharding().getDims().size()
                         << " dimensions but the tensor has rank " << rank;
  return success();
}

LogicalResult
ShardingConstraintOp::verifySymbolUses(SymbolTableCollection &symbols) {
  ShardingAttr sharding = getSharding();
  auto mesh =
      symbols.lookupNearestSymbolFrom<MeshOp>(*this, sharding.getMesh());
  if (!mesh)
    return emitOpError() << "sharding names " << sharding.getMesh()
                         << ", which is not a dist.mesh";
  auto check = [&](ArrayAttr axes) -> LogicalResult {
    for (Attribute axis : axes)
      if (!mesh.sizeOf(cast<StringAttr>(axis).getValue()))
        return emitOpError() << "sharding names axis " << axis << ", which "
                             << sharding.getMesh() << " does not have";
    return success();
  };
  for (Attribute dim : sharding.getDims())
    if (failed(check(cast<ArrayAttr>(dim))))
      return failure();
  return check(sharding.getPartial());
}

namespace {

/// all_slice(all_gather(x, dim A), dim A) over the same axes is x; with
/// dim B != A (the gather used only there): rank r
/// keeps slice r along B of every rank's x, concatenated along A, which is
/// what all_to_all(x, split B, concat A) delivers, moving each input once
/// instead of gathering all of them everywhere (Llama's 8 kv heads repeated
/// for 64 query heads and gathered along the sequence, then sliced to each
/// rank's heads: a 128 MiB gather per rank became 4 MiB exchanged).
struct SliceOfGatherIsAllToAll : OpRewritePattern<AllSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllSliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto gather = slice.getInput().getDefiningOp<AllGatherOp>();
    if (!gather || gather.getMeshAttr() != slice.getMeshAttr() ||
        gather.getAxesAttr() != slice.getAxesAttr())
      return failure();
    // Along the same dim, each rank gets its own input back.
    if (gather.getDim() == slice.getDim()) {
      rewriter.replaceOp(slice, gather.getInput());
      return success();
    }
    if (!gather->hasOneUse())
      return failure();
    rewriter.replaceOpWithNewOp<AllToAllOp>(
        slice, slice.getType(), gather.getInput(), slice.getMeshAttr(),
        slice.getAxesAttr(), rewriter.getI64IntegerAttr(slice.getDim()),
        rewriter.getI64IntegerAttr(gather.getDim()));
    return success();
  }
};

} // namespace

void AllSliceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add<SliceOfGatherIsAllToAll>(context);
}

#define GET_OP_CLASSES
#include "trn/Dialect/Dist/IR/DistOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

namespace {

/// The mesh has `axis` and `peer` is an index along it.
LogicalResult verifyPeer(Operation *op, FlatSymbolRefAttr meshName,
                         StringRef axis, int64_t peer,
                         SymbolTableCollection &symbols) {
  int64_t size;
  Builder builder(op->getContext());
  if (failed(verifyAxes(op, meshName, builder.getStrArrayAttr({axis}), symbols,
                        size)))
    return failure();
  if (peer < 0 || peer >= size)
    return op->emitOpError() << "names stage " << peer << " of axis \"" << axis
                             << "\", which has " << size;
  // A fragment knows its own stage: a transfer to itself is a mistake.
  if (auto function = op->getParentOfType<mlir::FunctionOpInterface>())
    if (auto stage = function->template getAttrOfType<IntegerAttr>(
            DistDialect::getStageAttrName()))
      if (stage.getInt() == peer)
        return op->emitOpError()
               << "names its own stage " << peer << " as the peer";
  return success();
}

} // namespace

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, getMeshAttr(), getAxis(), getPeer(), symbols);
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, getMeshAttr(), getAxis(), getPeer(), symbols);
}

LogicalResult PipelineOp::verify() {
  if (getMicrobatches() < 1)
    return emitOpError() << "needs at least one microbatch, not "
                         << getMicrobatches();
  if (getSchedule() != "gpipe" && getSchedule() != "1f1b")
    return emitOpError() << "has an unknown schedule \"" << getSchedule()
                         << "\" (expected gpipe or 1f1b)";
  FunctionType type = getFunctionType();
  if (getArgAttrs() && getArgAttrs()->size() != type.getNumInputs())
    return emitOpError() << "has " << getArgAttrs()->size()
                         << " argument attribute dictionaries for "
                         << type.getNumInputs() << " arguments";
  if (getResAttrs() && getResAttrs()->size() != type.getNumResults())
    return emitOpError() << "has " << getResAttrs()->size()
                         << " result attribute dictionaries for "
                         << type.getNumResults() << " results";
  return success();
}

LogicalResult PipelineOp::verifySymbolUses(SymbolTableCollection &symbols) {
  int64_t size;
  Builder builder(getContext());
  return verifyAxes(*this, getMeshAttr(), builder.getStrArrayAttr({getAxis()}),
                    symbols, size);
}
