//===- DistDialect.cpp - dist dialect registration and attributes ---------===//

#include "trn/Dialect/Dist/IR/DistDialect.h"
#include "trn/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dist;

#include "trn/Dialect/Dist/IR/DistDialect.cpp.inc"
#include "trn/Dialect/Dist/IR/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "trn/Dialect/Dist/IR/DistAttrs.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "trn/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "trn/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

namespace {

/// `{"a", "b"}` (possibly empty) into an array of string attributes.
ParseResult parseAxisList(AsmParser &parser, ArrayAttr &axes) {
  SmallVector<Attribute> names;
  if (parser.parseLBrace())
    return failure();
  if (succeeded(parser.parseOptionalRBrace())) {
    axes = parser.getBuilder().getArrayAttr({});
    return success();
  }
  do {
    std::string name;
    if (parser.parseString(&name))
      return failure();
    names.push_back(parser.getBuilder().getStringAttr(name));
  } while (succeeded(parser.parseOptionalComma()));
  if (parser.parseRBrace())
    return failure();
  axes = parser.getBuilder().getArrayAttr(names);
  return success();
}

void printAxisList(AsmPrinter &printer, ArrayAttr axes) {
  printer << "{";
  llvm::interleaveComma(axes, printer, [&](Attribute axis) {
    printer << '"' << llvm::cast<StringAttr>(axis).getValue() << '"';
  });
  printer << "}";
}

} // namespace

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<Attribute> dims;
  ArrayAttr partial = parser.getBuilder().getArrayAttr({});
  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() || parser.parseLSquare())
    return {};
  SmallVector<int64_t> blocks;
  if (failed(parser.parseOptionalRSquare())) {
    do {
      // `3x{"tp"}`: the dimension split block-wise.
      int64_t count = 1;
      OptionalParseResult hasCount = parser.parseOptionalInteger(count);
      if (hasCount.has_value() &&
          (failed(*hasCount) || parser.parseKeyword("x")))
        return {};
      ArrayAttr axes;
      if (parseAxisList(parser, axes))
        return {};
      dims.push_back(axes);
      blocks.push_back(count);
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseRSquare())
      return {};
  }
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parseAxisList(parser, partial))
      return {};
  }
  if (parser.parseGreater())
    return {};
  // All-contiguous shardings store no blocks (one spelling per sharding).
  if (llvm::all_of(blocks, [](int64_t count) { return count == 1; }))
    blocks.clear();
  return parser.getChecked<ShardingAttr>(parser.getContext(), mesh,
                                         parser.getBuilder().getArrayAttr(dims),
                                         partial, blocks);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(llvm::enumerate(getDims()), printer, [&](auto dim) {
    if (int64_t count = blocksOf(dim.index()); count != 1)
      printer << count << "x";
    printAxisList(printer, llvm::cast<ArrayAttr>(dim.value()));
  });
  printer << "]";
  if (!getPartial().empty()) {
    printer << ", partial = ";
    printAxisList(printer, getPartial());
  }
  printer << ">";
}

LogicalResult PortAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               StringRef kind, int64_t index) {
  if (!llvm::is_contained(
          {"argument", "microbatch", "stash", "accumulator", "result"}, kind))
    return emitError() << "unknown port kind \"" << kind
                       << "\" (expected argument, microbatch, stash, "
                          "accumulator or result)";
  if (index < 0)
    return emitError() << "a port's index is >= 0, not " << index;
  return success();
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh, ArrayAttr dims,
                                   ArrayAttr partial,
                                   ArrayRef<int64_t> blocks) {
  if (!mesh)
    return emitError() << "a sharding names its mesh";
  llvm::StringSet<> seen;
  auto check = [&](Attribute list, StringRef where) -> LogicalResult {
    auto axes = llvm::dyn_cast<ArrayAttr>(list);
    if (!axes)
      return emitError() << where << " is not a list of mesh axes";
    for (Attribute axis : axes) {
      auto name = llvm::dyn_cast<StringAttr>(axis);
      if (!name || name.getValue().empty())
        return emitError() << where << " holds something that is not an axis "
                           << "name";
      if (!seen.insert(name.getValue()).second)
        return emitError() << "mesh axis \"" << name.getValue()
                           << "\" appears twice in a sharding (an axis splits "
                              "at most one dimension or sums one partial "
                              "value)";
    }
    return success();
  };
  for (auto [index, dim] : llvm::enumerate(dims))
    if (failed(check(dim, "dimension " + std::to_string(index))))
      return failure();
  if (!blocks.empty() && blocks.size() != dims.size())
    return emitError() << "a sharding gives " << blocks.size()
                       << " block counts for " << dims.size() << " dimensions";
  for (auto [index, count] : llvm::enumerate(blocks)) {
    if (count < 1)
      return emitError() << "dimension " << index << " has " << count
                         << " blocks; a block count is positive";
    if (count > 1 && llvm::cast<ArrayAttr>(dims[index]).empty())
      return emitError() << "dimension " << index << " is split into " << count
                         << " blocks over no mesh axis; write {} "
                         << "for a whole dimension";
  }
  return check(partial, "partial");
}

int64_t ShardingAttr::blocksOf(unsigned dim) const {
  return dim < getBlocks().size() ? getBlocks()[dim] : 1;
}

SmallVector<StringRef> ShardingAttr::axesOf(unsigned dim) const {
  SmallVector<StringRef> axes;
  if (dim < getDims().size())
    for (Attribute axis : llvm::cast<ArrayAttr>(getDims()[dim]))
      axes.push_back(llvm::cast<StringAttr>(axis).getValue());
  return axes;
}

bool ShardingAttr::isReplicated() const {
  return getPartial().empty() && llvm::all_of(getDims(), [](Attribute dim) {
           return llvm::cast<ArrayAttr>(dim).empty();
         });
}

//===----------------------------------------------------------------------===//
// dist.sharding on arguments, results and ops
//===----------------------------------------------------------------------===//

namespace {

/// A `dist.sharding` attached to a value of `type`: a sharding of the
/// tensor's rank whose mesh exists.
LogicalResult verifyValueSharding(Operation *op, Attribute attr, Type type,
                                  StringRef what) {
  auto sharding = llvm::dyn_cast<ShardingAttr>(attr);
  if (!sharding)
    return op->emitError() << "'dist.sharding' of " << what
                           << " must be a #dist.sharding, got " << attr;
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitError() << "'dist.sharding' on " << what
                           << ", which is not a ranked tensor";
  if (int64_t(sharding.getDims().size()) != tensor.getRank())
    return op->emitError() << "'dist.sharding' of " << what << " has "
                           << sharding.getDims().size()
                           << " dimensions but the tensor has rank "
                           << tensor.getRank();
  for (int64_t dim = 0; dim < tensor.getRank(); ++dim) {
    int64_t count = sharding.blocksOf(dim);
    if (count > 1 && !tensor.isDynamicDim(dim) &&
        tensor.getDimSize(dim) % count != 0)
      return op->emitError()
             << "'dist.sharding' of " << what << " splits dimension " << dim
             << " (size " << tensor.getDimSize(dim) << ") into " << count
             << " blocks, which do not divide it";
  }
  MeshOp mesh = lookupMesh(op, sharding.getMesh());
  if (!mesh)
    return op->emitError() << "'dist.sharding' of " << what << " names "
                           << sharding.getMesh()
                           << ", which is not a dist.mesh";
  for (ArrayAttr list : {sharding.getPartial()})
    for (Attribute axis : list)
      if (!mesh.sizeOf(llvm::cast<StringAttr>(axis).getValue()))
        return op->emitError()
               << "'dist.sharding' of " << what << " names axis " << axis
               << ", which " << sharding.getMesh() << " does not have";
  for (Attribute dim : sharding.getDims())
    for (Attribute axis : llvm::cast<ArrayAttr>(dim))
      if (!mesh.sizeOf(llvm::cast<StringAttr>(axis).getValue()))
        return op->emitError()
               << "'dist.sharding' of " << what << " names axis " << axis
               << ", which " << sharding.getMesh() << " does not have";
  return success();
}

/// A fragment's port: a #dist.port of a kind that fits its side.
LogicalResult verifyPort(Operation *op, Attribute value, bool isResult) {
  auto port = llvm::dyn_cast<PortAttr>(value);
  if (!port)
    return op->emitError("'dist.port' is a #dist.port");
  bool fits = isResult ? llvm::is_contained({"stash", "accumulator", "result"},
                                            port.getKind())
                       : port.getKind() != "result";
  if (!fits)
    return op->emitError() << "a fragment's "
                           << (isResult ? "result" : "argument")
                           << " cannot be a \"" << port.getKind() << "\" port";
  return success();
}

Type regionArgType(Operation *op, unsigned region, unsigned index) {
  if (auto function = llvm::dyn_cast<FunctionOpInterface>(op))
    return index < function.getNumArguments()
               ? function.getArgumentTypes()[index]
               : Type();
  Region &body = op->getRegion(region);
  return index < body.getNumArguments() ? body.getArgument(index).getType()
                                        : Type();
}

} // namespace

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned region,
                                                    unsigned index,
                                                    NamedAttribute attr) {
  if (attr.getName() == getPortAttrName())
    return verifyPort(op, attr.getValue(), /*isResult=*/false);
  if (attr.getName() == getStageAttrName()) {
    auto stage = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || stage.getInt() < 0)
      return op->emitError() << "'dist.stage' of argument " << index
                             << " is a pipeline stage index (an integer >= 0)";
    return success();
  }
  if (attr.getName() != getShardingAttrName())
    return op->emitError() << "unknown dist argument attribute '"
                           << attr.getName().getValue() << "'";
  return verifyValueSharding(op, attr.getValue(),
                             regionArgType(op, region, index),
                             "argument " + std::to_string(index));
}

LogicalResult DistDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned region,
                                                       unsigned index,
                                                       NamedAttribute attr) {
  if (attr.getName() == getPortAttrName())
    return verifyPort(op, attr.getValue(), /*isResult=*/true);
  if (attr.getName() != getShardingAttrName())
    return op->emitError() << "unknown dist result attribute '"
                           << attr.getName().getValue() << "'";
  auto function = llvm::dyn_cast<FunctionOpInterface>(op);
  Type type = function && index < function.getNumResults()
                  ? function.getResultTypes()[index]
                  : Type();
  return verifyValueSharding(op, attr.getValue(), type,
                             "result " + std::to_string(index));
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == getSpmdAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitError("'dist.spmd' is a unit attribute of a function");
    return success();
  }
  if (attr.getName() == getReplicaAxesAttrName()) {
    auto axes = llvm::dyn_cast<ArrayAttr>(attr.getValue());
    if (!axes || !(isa<FunctionOpInterface>(op) || isa<MeshOp>(op)) ||
        !llvm::all_of(
            axes, [](Attribute axis) { return llvm::isa<StringAttr>(axis); }))
      return op->emitError("'dist.replica_axes' is a list of mesh axis names "
                           "on a function or a mesh");
    return success();
  }
  if (attr.getName() == getStageAttrName()) {
    auto stage = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || stage.getInt() < 0)
      return op->emitError("'dist.stage' is a pipeline stage index (an "
                           "integer >= 0)");
    return success();
  }
  if (attr.getName() == getPhaseAttrName()) {
    auto phase = llvm::dyn_cast<StringAttr>(attr.getValue());
    if (!phase || !llvm::is_contained({"forward", "backward", "update"},
                                      phase.getValue()))
      return op->emitError("'dist.phase' is \"forward\", \"backward\" or "
                           "\"update\"");
    return success();
  }
  if (attr.getName() == getPipelineAttrName()) {
    if (!llvm::isa<FlatSymbolRefAttr>(attr.getValue()) ||
        !isa<FunctionOpInterface>(op))
      return op->emitError("'dist.pipeline' names the dist.pipeline a "
                           "function is a fragment of");
    return success();
  }
  if (attr.getName() != getShardingAttrName())
    return op->emitError() << "unknown dist attribute '"
                           << attr.getName().getValue() << "'";
  // On an op: one sharding per result.
  auto shardings = llvm::dyn_cast<ArrayAttr>(attr.getValue());
  if (!shardings || shardings.size() != op->getNumResults())
    return op->emitError() << "'dist.sharding' on an op is a list of one "
                              "sharding per result ("
                           << op->getNumResults() << ")";
  for (auto [index, sharding] : llvm::enumerate(shardings))
    if (failed(verifyValueSharding(op, sharding, op->getResult(index).getType(),
                                   "result " + std::to_string(index))))
      return failure();
  return success();
}
