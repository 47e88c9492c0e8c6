//===- NCDialect.cpp - nc dialect registration and types -----------------===//

#include "trn/Dialect/NC/IR/NCDialect.h"
#include "trn/Dialect/NC/IR/NCOps.h"

#include "trnrt/Target.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::nc;

#include "trn/Dialect/NC/IR/NCDialect.cpp.inc"
#include "trn/Dialect/NC/IR/NCEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "trn/Dialect/NC/IR/NCTypes.cpp.inc"

void NCDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "trn/Dialect/NC/IR/NCTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "trn/Dialect/NC/IR/NCOps.cpp.inc"
      >();
}

const trnrt::Target *mlir::nc::getTarget(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  auto name =
      module ? module->getAttrOfType<StringAttr>("nc.target") : StringAttr();
  if (!name)
    return &trnrt::trn1Target();
  if (const trnrt::Target *target = trnrt::lookupTarget(name.getValue()))
    return target;
  op->emitError("unknown nc.target '")
      << name.getValue() << "' (expected \"trn1\" or \"trn2\")";
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult NCDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  Attribute value = attribute.getValue();
  if (name == getTargetAttrName()) {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(value))
      return op->emitError() << name << " is a string attribute of the module";
    return success();
  }
  if (name == getSignalAttrName()) {
    auto signal = dyn_cast<IntegerAttr>(value);
    if (!signal || signal.getValue().isNegative() ||
        signal.getValue().getActiveBits() > 31)
      return op->emitError() << name
                             << " must be a semaphore index (a non-negative "
                                "integer below 2^31)";
    return success();
  }
  if (name == getWaitsAttrName()) {
    auto waits = dyn_cast<ArrayAttr>(value);
    bool ok = static_cast<bool>(waits);
    for (Attribute wait : waits ? waits.getValue() : ArrayRef<Attribute>()) {
      auto pair = dyn_cast<DenseI64ArrayAttr>(wait);
      ok &= pair && pair.size() == 2 && pair[0] >= 0 && pair[1] >= 0 &&
            pair[0] < (int64_t(1) << 31);
    }
    if (!ok)
      return op->emitError() << name
                             << " must be a list of [semaphore, value] pairs "
                                "of non-negative integers, e.g. "
                                "[array<i64: 0, 3>]";
    return success();
  }
  if (name == getSubroutineAttrName()) {
    if (!isa<FunctionOpInterface>(op) || !isa<UnitAttr>(value))
      return op->emitError() << name << " is a unit attribute of a kernel";
    return success();
  }
  if (name == getMeshAxesAttrName() || name == getReplicaAxesAttrName()) {
    auto axes = dyn_cast<ArrayAttr>(value);
    if (!isa<FunctionOpInterface>(op) || !axes ||
        !llvm::all_of(axes, [](Attribute axis) {
          auto text = dyn_cast<StringAttr>(axis);
          return text && !text.getValue().empty();
        }))
      return op->emitError()
             << name << " is a kernel's list of mesh axis names";
    return success();
  }
  if (name == getPipelineAttrName()) {
    auto dict = dyn_cast<DictionaryAttr>(value);
    bool ok = dict && isa<FunctionOpInterface>(op);
    for (StringRef key : {"step", "schedule", "phase", "axis"})
      ok = ok && dict.getAs<StringAttr>(key);
    for (StringRef key : {"stage", "stages", "microbatches"})
      ok = ok && dict.getAs<IntegerAttr>(key);
    if (!ok)
      return op->emitError()
             << name
             << " is a kernel's {step, stage, stages, microbatches, "
                "schedule, phase, axis}";
    return success();
  }
  if (name == getMeshSizesAttrName()) {
    auto sizes = dyn_cast<DenseI64ArrayAttr>(value);
    if (!isa<FunctionOpInterface>(op) || !sizes ||
        llvm::any_of(sizes.asArrayRef(), [](int64_t size) { return size < 1; }))
      return op->emitError()
             << name << " is a kernel's list of positive mesh sizes";
    return success();
  }
  if (name == getSpilledTilesAttrName() || name == getSpilledBytesAttrName()) {
    auto count = dyn_cast<IntegerAttr>(value);
    if (!isa<FunctionOpInterface>(op) || !count ||
        count.getValue().isNegative())
      return op->emitError()
             << name << " is a non-negative integer attribute of a kernel";
    return success();
  }
  return op->emitError() << "unknown nc attribute '" << name << "'";
}

LogicalResult NCDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned argIndex,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == getNameAttrName()) {
    if (!isa<StringAttr>(attribute.getValue()))
      return op->emitError()
             << "argument " << argIndex << " has non-string " << name;
    return success();
  }
  if (name == getOutputNameAttrName()) {
    if (!isa<StringAttr>(attribute.getValue()))
      return op->emitError()
             << "argument " << argIndex << " has non-string " << name;
    return success();
  }
  if (name == getShardingAttrName() || name == getOutputShardingAttrName()) {
    auto dims = dyn_cast<ArrayAttr>(attribute.getValue());
    if (!dims || !llvm::all_of(dims, [](Attribute dim) {
          auto axes = dyn_cast<DenseI64ArrayAttr>(dim);
          return axes && llvm::all_of(axes.asArrayRef(),
                                      [](int64_t a) { return a >= 0; });
        }))
      return op->emitError()
             << "argument " << argIndex << " has invalid " << name
             << " (expected one array<i64> of mesh axis "
                "indices per dimension)";
    return success();
  }
  if (name == getBlocksAttrName() || name == getOutputBlocksAttrName()) {
    auto blocks = dyn_cast<DenseI64ArrayAttr>(attribute.getValue());
    if (!blocks ||
        llvm::any_of(blocks.asArrayRef(), [](int64_t b) { return b < 1; }))
      return op->emitError() << "argument " << argIndex << " has invalid "
                             << name << " (expected positive block counts)";
    return success();
  }
  if (name == getPortAttrName() || name == getOutputPortAttrName()) {
    auto port = dyn_cast<DenseI64ArrayAttr>(attribute.getValue());
    if (!port || port.size() != 2 || port[0] < 1 || port[0] > 5 || port[1] < 0)
      return op->emitError()
             << "argument " << argIndex << " has invalid " << name
             << " (expected array<i64: kind 1..5, index>)";
    return success();
  }
  if (name == getKindAttrName()) {
    auto kind = dyn_cast<StringAttr>(attribute.getValue());
    if (!kind || (kind.getValue() != "input" && kind.getValue() != "output" &&
                  kind.getValue() != "inout"))
      return op->emitError()
             << "argument " << argIndex << " has invalid " << name
             << " (expected \"input\", \"output\" or "
                "\"inout\")";
    return success();
  }
  return op->emitError() << "argument " << argIndex
                         << " has unknown nc attribute '" << name << "'";
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

namespace {
/// Element types a NeuronCore tile may hold (i1 is a byte-sized predicate).
bool isTileElementType(Type type) {
  return type.isF32() || type.isBF16() || type.isF16() ||
         type.isFloat8E4M3FN() || type.isFloat8E5M2() ||
         type.isSignlessInteger(1) || type.isSignlessInteger(32);
}

int64_t elementBytes(Type type) {
  if (type.isSignlessInteger(1))
    return 1;
  return (type.getIntOrFloatBitWidth() + 7) / 8;
}

/// Parses `AxBxC x T` (a static shape and an element type).
ParseResult parseShapeAndType(AsmParser &parser,
                              SmallVectorImpl<int64_t> &shape, Type &type) {
  if (parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(type))
    return failure();
  return success();
}

void printShapeAndType(AsmPrinter &printer, ArrayRef<int64_t> shape,
                       Type type) {
  for (int64_t size : shape)
    printer << size << "x";
  printer << type;
}
} // namespace

int64_t TileType::getFreeElements() const {
  int64_t count = 1;
  for (int64_t size : getFreeShape())
    count *= size;
  return count;
}

int64_t TileType::getFreeBytes() const {
  return getFreeElements() * elementBytes(getElementType());
}

Type TileType::parse(AsmParser &parser) {
  std::string memoryName;
  SmallVector<int64_t> shape;
  Type elementType;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeywordOrString(&memoryName) ||
      parser.parseComma() || parseShapeAndType(parser, shape, elementType) ||
      parser.parseGreater())
    return {};
  std::optional<MemorySpace> memory = symbolizeMemorySpace(memoryName);
  if (!memory) {
    parser.emitError(loc, "unknown memory '")
        << memoryName << "' (expected sbuf, psum or hbm)";
    return {};
  }
  return parser.getChecked<TileType>(loc, parser.getContext(), *memory, shape,
                                     elementType);
}

void TileType::print(AsmPrinter &printer) const {
  printer << "<" << stringifyMemorySpace(getMemory()) << ", ";
  printShapeAndType(printer, getShape(), getElementType());
  printer << ">";
}

LogicalResult TileType::verify(function_ref<InFlightDiagnostic()> emitError,
                               MemorySpace memory, ArrayRef<int64_t> shape,
                               Type elementType) {
  if (shape.size() < 2 || shape.size() > 5)
    return emitError() << "a tile has a partition dimension and 1 to 4 free "
                          "dimensions, got "
                       << shape.size() << " dimensions";
  // Every NeuronCore generation has 128 partitions (trnrt::Target).
  if (shape.front() > 128)
    return emitError() << "tile spans " << shape.front()
                       << " partitions; a NeuronCore has 128";
  for (int64_t size : shape)
    if (size < 1 || size > 65535)
      return emitError() << "tile dimension " << size
                         << " is outside [1, 65535] (access-pattern sizes "
                            "are 16-bit)";
  if (!isTileElementType(elementType))
    return emitError() << "tile element type " << elementType
                       << " is not one of f32, bf16, f16, f8E4M3FN, f8E5M2, "
                          "i1, i32";
  if (memory == MemorySpace::psum && !elementType.isF32())
    return emitError() << "PSUM tiles hold f32 (matmul accumulators), got "
                       << elementType;
  return success();
}

Type HbmType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parseShapeAndType(parser, shape, elementType) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<HbmType>(loc, parser.getContext(), shape,
                                    elementType);
}

void HbmType::print(AsmPrinter &printer) const {
  printer << "<";
  printShapeAndType(printer, getShape(), getElementType());
  printer << ">";
}

LogicalResult HbmType::verify(function_ref<InFlightDiagnostic()> emitError,
                              ArrayRef<int64_t> shape, Type elementType) {
  int64_t count = 1; // a rank-0 tensor is one element
  for (int64_t size : shape)
    if (size < 1 || llvm::MulOverflow(count, size, count))
      return emitError() << "HBM tensor dimensions must be positive and "
                            "their product fit in 64 bits";
  if (!isTileElementType(elementType) && !elementType.isSignlessInteger(64))
    return emitError() << "HBM element type " << elementType
                       << " is not one of f32, bf16, f16, f8E4M3FN, f8E5M2, "
                          "i1, i32, i64";
  return success();
}
