//===- NCToProgram.cpp - nc kernels to runtime programs ------------------===//

#include "trn/Target/NCToProgram.h"

#include "trn/Dialect/NC/IR/NCOps.h"
#include "trn/Dialect/NC/Transforms/Sync.h"

#include "trnrt/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>
#include <type_traits>

using namespace mlir;
using namespace mlir::nc;

namespace {

// The nc enums list their cases in the order of trnrt/Isa.def's tables
// (test/unit/IsaTableTest.cpp), so a value converts by its number.
static_assert(getMaxEnumValForAluOp() + 1 == trnrt::kNumAluOps);
static_assert(getMaxEnumValForActivationFunc() + 1 ==
              trnrt::kNumActivationFuncs);
static_assert(getMaxEnumValForCompareOp() + 1 == trnrt::kNumCompareOps);
static_assert(getMaxEnumValForMemorySpace() + 1 == trnrt::kNumMemories);

std::optional<trnrt::DType> dtypeOf(Type type) {
  if (type.isF32())
    return trnrt::DType::F32;
  if (type.isBF16())
    return trnrt::DType::BF16;
  if (type.isF16())
    return trnrt::DType::F16;
  if (type.isFloat8E4M3FN())
    return trnrt::DType::F8E4M3FN;
  if (type.isFloat8E5M2())
    return trnrt::DType::F8E5M2;
  if (type.isSignlessInteger(1))
    return trnrt::DType::I1;
  if (type.isSignlessInteger(32))
    return trnrt::DType::I32;
  if (type.isSignlessInteger(64))
    return trnrt::DType::I64;
  return std::nullopt;
}

int64_t elementBytes(trnrt::DType dtype) {
  return trnrt::dtypeSizeInBytes(dtype);
}

trnrt::Memory memoryOf(MemorySpace memory) {
  return static_cast<trnrt::Memory>(memory);
}

class Exporter {
public:
  Exporter(func::FuncOp kernel, bool synchronize)
      : kernel(kernel), synchronize(synchronize) {}
  FailureOr<trnrt::Program> run();

private:
  LogicalResult layoutHbm();
  LogicalResult readMesh();
  /// nc.pipeline: the kernel is a pipeline fragment.
  LogicalResult readPipeline();
  std::vector<trnrt::DimSharding> shardingOf(unsigned argument, bool output);
  /// nc.port (or nc.output_port) of a kernel argument.
  trnrt::TensorPort portOf(unsigned argument, bool output);
  /// A whole HBM tensor as a collective operand (docs/isa.md §5.6).
  FailureOr<trnrt::AccessPattern> wholeTensor(Operation *user, Value tensor);
  /// The bitmask of `axes` in the kernel's mesh.
  uint32_t meshAxesOf(ArrayAttr axes);
  FailureOr<trnrt::AccessPattern> accessPattern(Operation *user, Value value);
  FailureOr<trnrt::AccessPattern> hbmTensorPattern(Operation *user,
                                                   Value tensor);
  FailureOr<trnrt::ScalarOperand> scalar(Operation *user, Value column,
                                         float immediate);
  LogicalResult emit(Operation *op);
  void append(Operation *op, trnrt::Engine engine, int64_t queue,
              trnrt::Instruction instruction);

  /// The semaphores of one instruction computed by synchronizeKernel: its
  /// waits are waits[firstWait, firstWait + numWaits).
  struct Sync {
    Operation *op;
    int32_t signal;
    uint32_t firstWait, numWaits;
  };

  func::FuncOp kernel;
  bool synchronize;
  std::vector<Sync> syncs; ///< in program order
  std::vector<StreamWait> waits;
  size_t nextSync = 0;
  trnrt::Program program;
  uint32_t maxSemaphore = 0;
  /// The kind of the trn op being exported (the latest nc.kind).
  trnrt::InstructionKind currentKind = trnrt::InstructionKind::Other;
  /// The latest nc.kind's origin (Instruction::origin) and the table's
  /// index of each origin.
  uint32_t currentOrigin = 0;
  llvm::StringMap<uint32_t> originIndex;

public:
  /// The kernels nc.call names, in order of first call: CallSite::callee
  /// indexes this list.
  std::vector<std::string> calleeNames;
  /// Where the scratch region starts and every HBM value's byte offset.
  uint64_t scratchBase = 0;
  llvm::DenseMap<Value, uint64_t> hbmOffsets;
};

} // namespace

LogicalResult Exporter::layoutHbm() {
  uint64_t next = 0;
  auto place = [&](Value value, std::string name, trnrt::HbmTensor::Kind kind,
                   std::optional<uint64_t> fixedOffset) -> LogicalResult {
    auto type = cast<HbmType>(value.getType());
    std::optional<trnrt::DType> dtype = dtypeOf(type.getElementType());
    if (!dtype)
      return kernel.emitError("unsupported HBM element type ")
             << type.getElementType();
    uint64_t bytes = elementBytes(*dtype);
    for (int64_t size : type.getShape())
      bytes *= size;
    uint64_t offset = fixedOffset ? *fixedOffset : (next + 63) / 64 * 64;
    next = std::max(next, offset + bytes);
    hbmOffsets[value] = offset;
    trnrt::HbmTensor tensor;
    tensor.name = std::move(name);
    tensor.dtype = *dtype;
    tensor.shape.assign(type.getShape().begin(), type.getShape().end());
    tensor.offset = offset;
    tensor.kind = kind;
    program.tensors.push_back(tensor);
    return success();
  };
  for (BlockArgument argument : kernel.getArguments()) {
    unsigned index = argument.getArgNumber();
    if (!isa<HbmType>(argument.getType()))
      return kernel.emitError("kernel argument ")
             << index << " must be an !nc.hbm tensor, got "
             << argument.getType();
    auto nameAttr = kernel.getArgAttrOfType<StringAttr>(
        index, NCDialect::getNameAttrName());
    std::string name =
        nameAttr ? nameAttr.str() : "arg" + std::to_string(index);
    auto kindAttr = kernel.getArgAttrOfType<StringAttr>(
        index, NCDialect::getKindAttrName());
    StringRef kind = kindAttr ? kindAttr.getValue() : "input";
    if (failed(place(argument, name,
                     kind == "output" ? trnrt::HbmTensor::Kind::Output
                                      : trnrt::HbmTensor::Kind::Input,
                     std::nullopt)))
      return failure();
    program.tensors.back().sharding = shardingOf(index, /*output=*/false);
    program.tensors.back().port = portOf(index, /*output=*/false);
    if (kind == "inout") {
      // The updated value is an output aliasing the input in place.
      trnrt::HbmTensor output = program.tensors.back();
      output.kind = trnrt::HbmTensor::Kind::Output;
      output.aliasesInput = static_cast<int32_t>(program.tensors.size() - 1);
      output.sharding = shardingOf(index, /*output=*/true);
      output.port = portOf(index, /*output=*/true);
      program.tensors.push_back(output);
    }
  }
  for (auto constant : kernel.getOps<HbmConstantOp>()) {
    if (failed(place(constant.getResult(), constant.getName().str(),
                     trnrt::HbmTensor::Kind::Constant, std::nullopt)))
      return failure();
    // The bytes of every element in the tensor's dtype, little-endian.
    auto dense = cast<DenseElementsAttr>(constant.getValue());
    trnrt::HbmTensor &tensor = program.tensors.back();
    int64_t bytes = elementBytes(tensor.dtype);
    auto appendBits = [&](uint64_t bits) {
      for (int64_t i = 0; i < bytes; ++i)
        tensor.data.push_back(static_cast<uint8_t>(bits >> (8 * i)));
    };
    if (trnrt::isFloatDType(tensor.dtype)) {
      for (APFloat value : dense.getValues<APFloat>())
        appendBits(value.bitcastToAPInt().getZExtValue());
    } else {
      for (const APInt &value : dense.getValues<APInt>())
        appendBits(value.getZExtValue());
    }
  }
  // Scratch offsets (from nc-allocate) are relative to the scratch region,
  // which follows the arguments and constants.
  scratchBase = (next + 63) / 64 * 64;
  for (auto alloc : kernel.getOps<HbmAllocOp>()) {
    std::optional<uint64_t> fixed;
    if (auto offset = alloc.getByteOffset()) {
      if (*offset < 0)
        return alloc.emitError("negative scratch byte_offset ") << *offset;
      fixed = scratchBase + static_cast<uint64_t>(*offset);
    }
    if (failed(place(alloc.getResult(), alloc.getName().str(),
                     trnrt::HbmTensor::Kind::Scratch, fixed)))
      return failure();
  }
  program.hbmBytes = (next + 63) / 64 * 64;
  return success();
}

LogicalResult Exporter::readMesh() {
  auto names =
      kernel->getAttrOfType<ArrayAttr>(NCDialect::getMeshAxesAttrName());
  auto sizes = kernel->getAttrOfType<DenseI64ArrayAttr>(
      NCDialect::getMeshSizesAttrName());
  if (!names && !sizes)
    return success();
  if (!names || !sizes || names.size() != sizes.size())
    return kernel.emitError("a partitioned kernel needs nc.mesh_axes and "
                            "nc.mesh_sizes of equal length");
  for (auto [name, size] : llvm::zip(names, sizes.asArrayRef()))
    program.mesh.push_back({cast<StringAttr>(name).str(), size});
  if (auto replicas =
          kernel->getAttrOfType<ArrayAttr>(NCDialect::getReplicaAxesAttrName()))
    for (Attribute replica : replicas)
      for (trnrt::MeshAxis &axis : program.mesh)
        if (axis.name == cast<StringAttr>(replica).getValue())
          axis.replica = true;
  return success();
}

trnrt::TensorPort Exporter::portOf(unsigned argument, bool output) {
  trnrt::TensorPort port;
  auto attr = kernel.getArgAttrOfType<DenseI64ArrayAttr>(
      argument, output ? NCDialect::getOutputPortAttrName()
                       : NCDialect::getPortAttrName());
  if (attr && attr.size() == 2) {
    port.kind = static_cast<trnrt::TensorPort::Kind>(attr[0]);
    port.index = attr[1];
  }
  return port;
}

LogicalResult Exporter::readPipeline() {
  auto dict =
      kernel->getAttrOfType<DictionaryAttr>(NCDialect::getPipelineAttrName());
  if (!dict)
    return success();
  trnrt::PipelineFragment &p = program.pipeline;
  p.step = dict.getAs<StringAttr>("step").str();
  p.stage = dict.getAs<IntegerAttr>("stage").getInt();
  p.stages = dict.getAs<IntegerAttr>("stages").getInt();
  p.microbatches = dict.getAs<IntegerAttr>("microbatches").getInt();
  p.schedule = dict.getAs<StringAttr>("schedule").str();
  p.phase = dict.getAs<StringAttr>("phase").str();
  StringRef axis = dict.getAs<StringAttr>("axis").getValue();
  for (size_t a = 0; a < program.mesh.size(); ++a)
    if (program.mesh[a].name == axis)
      p.axis = static_cast<uint32_t>(a);
  return success();
}

std::vector<trnrt::DimSharding> Exporter::shardingOf(unsigned argument,
                                                     bool output) {
  std::vector<trnrt::DimSharding> sharding;
  auto dims = kernel.getArgAttrOfType<ArrayAttr>(
      argument, output ? NCDialect::getOutputShardingAttrName()
                       : NCDialect::getShardingAttrName());
  if (!dims)
    return sharding;
  auto blocks = kernel.getArgAttrOfType<DenseI64ArrayAttr>(
      argument, output ? NCDialect::getOutputBlocksAttrName()
                       : NCDialect::getBlocksAttrName());
  for (auto [d, dim] : llvm::enumerate(dims)) {
    trnrt::DimSharding entry;
    for (int64_t axis : cast<DenseI64ArrayAttr>(dim).asArrayRef())
      entry.axes.push_back(static_cast<uint32_t>(axis));
    if (blocks && d < blocks.size())
      entry.blocks = blocks[d];
    sharding.push_back(std::move(entry));
  }
  return sharding;
}

uint32_t Exporter::meshAxesOf(ArrayAttr axes) {
  uint32_t mask = 0;
  for (Attribute axis : axes)
    for (size_t a = 0; a < program.mesh.size(); ++a)
      if (program.mesh[a].name == cast<StringAttr>(axis).getValue())
        mask |= 1u << a;
  return mask;
}

FailureOr<trnrt::AccessPattern> Exporter::wholeTensor(Operation *user,
                                                      Value tensor) {
  auto it = hbmOffsets.find(tensor);
  if (it == hbmOffsets.end())
    return user->emitError("collective operand is not a kernel argument, an "
                           "nc.hbm_alloc, an nc.hbm_constant or a reshape "
                           "of one");
  auto type = cast<HbmType>(tensor.getType());
  trnrt::AccessPattern pattern;
  pattern.memory = trnrt::Memory::Hbm;
  pattern.dtype = *dtypeOf(type.getElementType());
  pattern.byteOffset = it->second;
  int64_t elements = 1;
  for (int64_t size : type.getShape())
    elements *= size;
  if (elements < 1 || elements > std::numeric_limits<uint32_t>::max())
    return user->emitError("collective operand of ")
           << elements << " elements (1 to 2^32 - 1 allowed)";
  pattern.numPartitions = static_cast<uint32_t>(elements);
  pattern.partitionStride = 1;
  pattern.dims = {{1, 1}};
  return pattern;
}

FailureOr<trnrt::AccessPattern> Exporter::hbmTensorPattern(Operation *user,
                                                           Value tensor) {
  auto it = hbmOffsets.find(tensor);
  if (it == hbmOffsets.end())
    return user->emitError("HBM operand is not a kernel argument, an "
                           "nc.hbm_alloc or an nc.hbm_constant");
  auto type = cast<HbmType>(tensor.getType());
  trnrt::AccessPattern pattern;
  pattern.memory = trnrt::Memory::Hbm;
  pattern.dtype = *dtypeOf(type.getElementType());
  pattern.byteOffset = it->second;
  // Indirect DMA: the pattern spans the whole table, one row per
  // "partition" (docs/isa.md, DmaCopy indirect).
  pattern.numPartitions = type.getShape().front();
  int64_t rowElements = type.getShape().back();
  pattern.partitionStride = rowElements;
  pattern.dims = {{rowElements, 1}};
  return pattern;
}

FailureOr<trnrt::AccessPattern> Exporter::accessPattern(Operation *user,
                                                        Value value) {
  auto type = cast<TileType>(value.getType());
  trnrt::AccessPattern pattern;
  pattern.memory = memoryOf(type.getMemory());
  pattern.dtype = *dtypeOf(type.getElementType());
  pattern.numPartitions = type.getPartitions();
  int64_t bytes = elementBytes(pattern.dtype);

  auto fromAlloc = [&](AllocOp alloc, int64_t startPartition, int64_t offset,
                       ArrayRef<int64_t> sizes,
                       ArrayRef<int64_t> strides) -> LogicalResult {
    if (!alloc.getStartPartition() || !alloc.getByteOffset())
      return user->emitError("operand tile has no address; run nc-allocate "
                             "before exporting");
    pattern.startPartition = *alloc.getStartPartition() + startPartition;
    pattern.byteOffset = *alloc.getByteOffset() + offset * bytes;
    for (auto [size, stride] : llvm::zip(sizes, strides))
      pattern.dims.push_back({size, stride});
    return success();
  };
  auto rowMajorStrides = [](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> strides(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    return strides;
  };

  if (auto alloc = value.getDefiningOp<AllocOp>()) {
    if (failed(fromAlloc(alloc, 0, 0, type.getFreeShape(),
                         rowMajorStrides(type.getFreeShape()))))
      return failure();
    return pattern;
  }
  auto view = value.getDefiningOp<ViewOp>();
  if (!view)
    return user->emitError("tile operand must come from nc.alloc or nc.view");
  Value source = view.getSource();
  if (isa<HbmType>(source.getType())) {
    auto it = hbmOffsets.find(source);
    if (it == hbmOffsets.end())
      return user->emitError("HBM view of a value that is neither a kernel "
                             "argument nor an nc.hbm_alloc");
    pattern.byteOffset = it->second + view.getOffset() * bytes;
    pattern.partitionStride = view.getPartitionStride();
    for (auto [size, stride] :
         llvm::zip(type.getFreeShape(), view.getStrides()))
      pattern.dims.push_back({size, stride});
    return pattern;
  }
  auto alloc = source.getDefiningOp<AllocOp>();
  if (!alloc)
    return user->emitError("views of views are not exported; view the "
                           "nc.alloc directly");
  if (failed(fromAlloc(alloc, view.getStartPartition(), view.getOffset(),
                       type.getFreeShape(), view.getStrides())))
    return failure();
  return pattern;
}

FailureOr<trnrt::ScalarOperand> Exporter::scalar(Operation *user, Value column,
                                                 float immediate) {
  trnrt::ScalarOperand operand;
  operand.isImmediate = !column;
  operand.immediate = immediate;
  if (column) {
    auto pattern = accessPattern(user, column);
    if (failed(pattern))
      return failure();
    operand.column = *pattern;
  }
  return operand;
}

void Exporter::append(Operation *op, trnrt::Engine engine, int64_t queue,
                      trnrt::Instruction instruction) {
  instruction.kind = currentKind;
  instruction.origin = currentOrigin;
  if (synchronize) {
    // synchronizeKernel and emit visit the instructions in the same order.
    if (nextSync < syncs.size() && syncs[nextSync].op == op) {
      const Sync &sync = syncs[nextSync++];
      instruction.waits.reserve(sync.numWaits);
      for (uint32_t i = 0; i < sync.numWaits; ++i) {
        StreamWait wait = waits[sync.firstWait + i];
        instruction.waits.push_back({wait.stream, wait.count});
        maxSemaphore = std::max<uint32_t>(maxSemaphore, wait.stream + 1);
      }
      instruction.signal = sync.signal;
      maxSemaphore = std::max<uint32_t>(maxSemaphore, instruction.signal + 1);
    }
  } else {
    if (auto waits =
            op->getAttrOfType<ArrayAttr>(NCDialect::getWaitsAttrName()))
      for (Attribute wait : waits) {
        auto pair = cast<DenseI64ArrayAttr>(wait);
        instruction.waits.push_back({static_cast<uint32_t>(pair[0]), pair[1]});
        maxSemaphore = std::max<uint32_t>(maxSemaphore, pair[0] + 1);
      }
    if (auto signal =
            op->getAttrOfType<IntegerAttr>(NCDialect::getSignalAttrName())) {
      instruction.signal = static_cast<int32_t>(signal.getInt());
      maxSemaphore = std::max<uint32_t>(maxSemaphore, instruction.signal + 1);
    }
  }
  if (engine == trnrt::Engine::Dma) {
    if (program.dmaQueues.size() <= static_cast<size_t>(queue))
      program.dmaQueues.resize(queue + 1);
    program.dmaQueues[queue].push_back(std::move(instruction));
    return;
  }
  program.engineStreams[static_cast<size_t>(engine)].push_back(
      std::move(instruction));
}

LogicalResult Exporter::emit(Operation *op) {
  using trnrt::Engine;
  trnrt::Instruction inst;
  auto ap = [&](Value value) -> FailureOr<trnrt::AccessPattern> {
    return accessPattern(op, value);
  };
  auto engineOf = [](nc::Engine engine) {
    return engine == nc::Engine::gpsimd ? Engine::GpSimd : Engine::Vector;
  };
  // Fills dst and srcs; fails if any operand cannot be resolved.
  auto operands = [&](Value dst, ArrayRef<Value> srcs) -> LogicalResult {
    auto d = ap(dst);
    if (failed(d))
      return failure();
    inst.dst = *d;
    for (Value src : srcs) {
      auto s = ap(src);
      if (failed(s))
        return failure();
      inst.srcs.push_back(*s);
    }
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<AllocOp, ViewOp, HbmAllocOp, HbmConstantOp, func::ReturnOp>(
          [](Operation *) { return success(); })
      .Case([&](KindOp o) -> LogicalResult {
        currentKind =
            llvm::StringSwitch<trnrt::InstructionKind>(o.getKind())
                .Case("matmul", trnrt::InstructionKind::Matmul)
                .Case("attention", trnrt::InstructionKind::Attention)
                .Case("elementwise", trnrt::InstructionKind::Elementwise)
                .Case("optimizer", trnrt::InstructionKind::Optimizer)
                .Case("data_movement", trnrt::InstructionKind::DataMovement)
                .Case("collective", trnrt::InstructionKind::Collective)
                .Default(trnrt::InstructionKind::Other);
        currentOrigin = 0;
        if (std::optional<StringRef> origin = o.getOrigin()) {
          auto [it, inserted] = originIndex.try_emplace(
              *origin, static_cast<uint32_t>(program.origins.size() + 1));
          if (inserted)
            program.origins.push_back(origin->str());
          currentOrigin = it->second;
        }
        return success();
      })
      .Case([&](CallOp o) -> LogicalResult {
        // A call site: where the caller's streams stand and the addresses
        // of the tensors bound to the callee's arguments.
        trnrt::CallSite call;
        auto known = llvm::find(calleeNames, o.getCallee());
        call.callee = static_cast<uint32_t>(known - calleeNames.begin());
        if (known == calleeNames.end())
          calleeNames.push_back(o.getCallee().str());
        for (const auto &stream : program.engineStreams)
          call.positions.push_back(stream.size());
        for (const auto &queue : program.dmaQueues)
          call.positions.push_back(queue.size());
        for (Value operand : o.getOperands()) {
          auto it = hbmOffsets.find(operand);
          if (it == hbmOffsets.end())
            return o.emitError("nc.call binds an HBM value that was not laid "
                               "out");
          call.arguments.push_back(it->second);
        }
        program.calls.push_back(std::move(call));
        return success();
      })
      .Case([&](HbmReshapeOp o) -> LogicalResult {
        // Same bytes, another shape (from `offset` on): alias the source's
        // placement.
        auto it = hbmOffsets.find(o.getSource());
        if (it == hbmOffsets.end())
          return o.emitError("reshape of an HBM value that was not laid out");
        std::optional<trnrt::DType> dtype =
            dtypeOf(o.getType().getElementType());
        if (!dtype)
          return o.emitError("unsupported HBM element type");
        hbmOffsets[o.getResult()] =
            it->second +
            uint64_t(o.getOffset().value_or(0)) * elementBytes(*dtype);
        return success();
      })
      .Case([&](MatmulOp o) {
        inst.opcode = trnrt::Opcode::Matmul;
        inst.accumulate = o.getAccumulate();
        if (failed(operands(o.getDst(), {o.getStationary(), o.getMoving()})))
          return failure();
        append(o, Engine::Tensor, 0, std::move(inst));
        return success();
      })
      .Case([&](TransposeOp o) {
        inst.opcode = trnrt::Opcode::Transpose;
        if (failed(operands(o.getDst(), {o.getSrc()})))
          return failure();
        append(o, Engine::Tensor, 0, std::move(inst));
        return success();
      })
      .Case([&](ActivationOp o) {
        inst.opcode = trnrt::Opcode::Activation;
        inst.func = static_cast<trnrt::ActivationFunc>(o.getFunc());
        auto scale =
            scalar(o, o.getScaleColumn(), o.getScale().convertToFloat());
        auto bias = scalar(o, o.getBiasColumn(), o.getBias().convertToFloat());
        if (failed(operands(o.getDst(), {o.getSrc()})) || failed(scale) ||
            failed(bias))
          return failure();
        inst.scale = *scale;
        inst.bias = *bias;
        if (Value rowSum = o.getRowSum()) {
          auto sum = ap(rowSum);
          if (failed(sum))
            return failure();
          inst.accumulateRow = true;
          inst.reduceDst = *sum;
        }
        append(o, Engine::Scalar, 0, std::move(inst));
        return success();
      })
      .Case([&](TensorTensorOp o) {
        inst.opcode = trnrt::Opcode::TensorTensor;
        inst.op0 = static_cast<trnrt::AluOp>(o.getOp());
        if (failed(operands(o.getDst(), {o.getLhs(), o.getRhs()})))
          return failure();
        append(o, engineOf(o.getEngine()), 0, std::move(inst));
        return success();
      })
      .Case([&](TensorScalarOp o) {
        inst.opcode = trnrt::Opcode::TensorScalar;
        inst.op0 = static_cast<trnrt::AluOp>(o.getOp0());
        inst.op1 = static_cast<trnrt::AluOp>(o.getOp1());
        inst.reverse0 = o.getReverse0();
        inst.reverse1 = o.getReverse1();
        auto s0 = scalar(o, o.getColumn0(), o.getScalar0().convertToFloat());
        auto s1 = scalar(o, o.getColumn1(), o.getScalar1().convertToFloat());
        if (failed(operands(o.getDst(), {o.getSrc()})) || failed(s0) ||
            failed(s1))
          return failure();
        inst.scalar0 = *s0;
        inst.scalar1 = *s1;
        append(o, engineOf(o.getEngine()), 0, std::move(inst));
        return success();
      })
      .Case([&](TensorReduceOp o) {
        inst.opcode = trnrt::Opcode::TensorReduce;
        inst.op0 = static_cast<trnrt::AluOp>(o.getOp());
        inst.negate = o.getNegate();
        if (failed(operands(o.getDst(), {o.getSrc()})))
          return failure();
        append(o, engineOf(o.getEngine()), 0, std::move(inst));
        return success();
      })
      .Case([&](TensorCopyOp o) {
        inst.opcode = trnrt::Opcode::TensorCopy;
        if (failed(operands(o.getDst(), {o.getSrc()})))
          return failure();
        append(o, engineOf(o.getEngine()), 0, std::move(inst));
        return success();
      })
      .Case([&](SelectOp o) {
        inst.opcode = trnrt::Opcode::Select;
        if (failed(operands(o.getDst(),
                            {o.getPred(), o.getOnTrue(), o.getOnFalse()})))
          return failure();
        append(o, Engine::Vector, 0, std::move(inst));
        return success();
      })
      .Case([&](BnStatsOp o) {
        inst.opcode = trnrt::Opcode::BnStats;
        if (failed(operands(o.getDst(), {o.getSrc()})))
          return failure();
        append(o, Engine::Vector, 0, std::move(inst));
        return success();
      })
      .Case([&](BnAggrOp o) {
        inst.opcode = trnrt::Opcode::BnAggr;
        if (failed(operands(o.getDst(), {o.getSrc()})))
          return failure();
        append(o, Engine::Vector, 0, std::move(inst));
        return success();
      })
      .Case([&](MemsetOp o) {
        inst.opcode = trnrt::Opcode::Memset;
        inst.value = o.getValue().convertToFloat();
        if (failed(operands(o.getDst(), {})))
          return failure();
        append(o, engineOf(o.getEngine()), 0, std::move(inst));
        return success();
      })
      .Case([&](IotaOp o) {
        inst.opcode = trnrt::Opcode::Iota;
        inst.base = o.getBase();
        inst.channelMultiplier = o.getChannelMultiplier();
        inst.steps.assign(o.getSteps().begin(), o.getSteps().end());
        if (failed(operands(o.getDst(), {})))
          return failure();
        append(o, Engine::GpSimd, 0, std::move(inst));
        return success();
      })
      .Case([&](RngOp o) {
        inst.opcode = trnrt::Opcode::Rng;
        inst.rngStream = static_cast<uint32_t>(o.getStream());
        inst.base = o.getBase();
        inst.channelMultiplier = o.getChannelMultiplier();
        inst.steps.assign(o.getSteps().begin(), o.getSteps().end());
        if (std::optional<int64_t> keepBelow = o.getKeepBelow()) {
          inst.bernoulli = true;
          inst.value = static_cast<float>(*keepBelow);
        } else {
          inst.scalar0.immediate = o.getLow().convertToFloat();
          inst.scalar1.immediate = o.getHigh().convertToFloat();
        }
        if (failed(operands(o.getDst(), {o.getSeed()})))
          return failure();
        append(o, Engine::Vector, 0, std::move(inst));
        return success();
      })
      .Case([&](AffineSelectOp o) {
        inst.opcode = trnrt::Opcode::AffineSelect;
        inst.compare = static_cast<trnrt::CompareOp>(o.getCompare());
        inst.base = o.getBase();
        inst.channelMultiplier = o.getChannelMultiplier();
        inst.steps.assign(o.getSteps().begin(), o.getSteps().end());
        inst.value = o.getFill().convertToFloat();
        if (failed(operands(o.getDst(), {o.getSrc()})))
          return failure();
        append(o, Engine::GpSimd, 0, std::move(inst));
        return success();
      })
      .Case([&](DmaCopyOp o) {
        inst.opcode = trnrt::Opcode::DmaCopy;
        if (failed(operands(o.getDst(), {o.getSrc()})))
          return failure();
        append(o, Engine::Dma, o.getQueue(), std::move(inst));
        return success();
      })
      .Case([&](DmaGatherOp o) {
        inst.opcode = trnrt::Opcode::DmaCopy;
        inst.indirect = true;
        auto table = hbmTensorPattern(o, o.getTable());
        auto dst = ap(o.getDst());
        auto indices = ap(o.getIndices());
        if (failed(table) || failed(dst) || failed(indices))
          return failure();
        inst.dst = *dst;
        inst.srcs.push_back(*table);
        inst.indices = *indices;
        append(o, Engine::Dma, o.getQueue(), std::move(inst));
        return success();
      })
      .Case([&](DmaScatterAddOp o) {
        inst.opcode = trnrt::Opcode::DmaCopy;
        inst.indirect = true;
        inst.accumulate = true;
        auto table = hbmTensorPattern(o, o.getTable());
        auto src = ap(o.getSrc());
        auto indices = ap(o.getIndices());
        if (failed(table) || failed(src) || failed(indices))
          return failure();
        inst.dst = *table;
        inst.srcs.push_back(*src);
        inst.indices = *indices;
        append(o, Engine::Dma, o.getQueue(), std::move(inst));
        return success();
      })
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllSliceOp, AllToAllOp,
            CollectivePermuteOp>([&](auto o) -> LogicalResult {
        auto src = wholeTensor(o, o.getSrc());
        auto dst = wholeTensor(o, o.getDst());
        if (failed(src) || failed(dst))
          return failure();
        inst.srcs.push_back(*src);
        inst.dst = *dst;
        inst.meshAxes = meshAxesOf(o.getAxes());
        auto shape = o.getSrc().getType().getShape();
        using T = std::decay_t<decltype(o)>;
        auto reduction = [&](CollectiveReduction kind) {
          inst.op0 = kind == CollectiveReduction::max   ? trnrt::AluOp::Max
                     : kind == CollectiveReduction::min ? trnrt::AluOp::Min
                                                        : trnrt::AluOp::Add;
          if (kind == CollectiveReduction::mean)
            inst.op1 = trnrt::AluOp::Divide;
        };
        if constexpr (std::is_same_v<T, AllReduceOp>) {
          inst.opcode = trnrt::Opcode::AllReduce;
          reduction(o.getReduction());
        } else if constexpr (std::is_same_v<T, CollectivePermuteOp>) {
          inst.opcode = trnrt::Opcode::CollectivePermute;
          inst.shift = o.getShift();
        } else {
          inst.collectiveShape.assign(shape.begin(), shape.end());
          if constexpr (std::is_same_v<T, AllToAllOp>) {
            inst.opcode = trnrt::Opcode::AllToAll;
            inst.collectiveDim = o.getSplitDim();
            inst.concatDim = o.getConcatDim();
          } else {
            inst.collectiveDim = o.getDim();
            if constexpr (std::is_same_v<T, AllGatherOp>)
              inst.opcode = trnrt::Opcode::AllGather;
            if constexpr (std::is_same_v<T, AllSliceOp>)
              inst.opcode = trnrt::Opcode::AllSlice;
            if constexpr (std::is_same_v<T, ReduceScatterOp>) {
              inst.opcode = trnrt::Opcode::ReduceScatter;
              reduction(o.getReduction());
            }
          }
        }
        append(o, Engine::Sync, 0, std::move(inst));
        return success();
      })
      .Case([&](SendOp o) -> LogicalResult {
        auto src = wholeTensor(o, o.getSrc());
        if (failed(src))
          return failure();
        inst.opcode = trnrt::Opcode::Send;
        inst.srcs.push_back(*src);
        inst.meshAxes = meshAxesOf(o.getAxes());
        inst.peer = o.getPeer();
        inst.tag = o.getTag();
        append(o, Engine::Sync, 0, std::move(inst));
        return success();
      })
      .Case([&](RecvOp o) -> LogicalResult {
        auto dst = wholeTensor(o, o.getDst());
        if (failed(dst))
          return failure();
        inst.opcode = trnrt::Opcode::Recv;
        inst.dst = *dst;
        inst.meshAxes = meshAxesOf(o.getAxes());
        inst.peer = o.getPeer();
        inst.tag = o.getTag();
        append(o, Engine::Sync, 0, std::move(inst));
        return success();
      })
      .Case([&](AxisIndexOp o) -> LogicalResult {
        auto dst = wholeTensor(o, o.getDst());
        if (failed(dst))
          return failure();
        inst.opcode = trnrt::Opcode::AxisIndex;
        inst.dst = *dst;
        inst.meshAxes = meshAxesOf(o.getAxes());
        append(o, Engine::Sync, 0, std::move(inst));
        return success();
      })
      .Default([](Operation *other) {
        return other->emitError("op '")
               << other->getName() << "' cannot be exported to a program";
      });
}

FailureOr<trnrt::Program> Exporter::run() {
  if (kernel.isExternal() || !kernel.getBody().hasOneBlock())
    return kernel.emitError("a kernel is a func.func with one block");
  const trnrt::Target *target = getTarget(kernel);
  if (!target)
    return failure();
  program.target = target->name;
  if (failed(readMesh()) || failed(layoutHbm()) || failed(readPipeline()))
    return failure();
  if (synchronize) {
    auto record = [&](Operation *op, int64_t stream,
                      ArrayRef<StreamWait> instructionWaits) {
      syncs.push_back({op, static_cast<int32_t>(stream),
                       static_cast<uint32_t>(waits.size()),
                       static_cast<uint32_t>(instructionWaits.size())});
      waits.insert(waits.end(), instructionWaits.begin(),
                   instructionWaits.end());
    };
    if (failed(synchronizeKernel(kernel, record)))
      return failure();
  }
  // Each stream's instructions, counted first: growing the vectors of a
  // large kernel would copy hundreds of megabytes.
  {
    SmallVector<size_t> engineCounts(program.engineStreams.size(), 0);
    std::vector<size_t> queueCounts;
    for (Operation &op : kernel.getBody().front()) {
      int64_t stream = streamOf(&op);
      if (stream < 0)
        continue;
      if (stream < kDmaStreamBase) {
        if (static_cast<size_t>(stream) < engineCounts.size())
          ++engineCounts[stream];
        continue;
      }
      size_t queue = static_cast<size_t>(stream - kDmaStreamBase);
      if (queueCounts.size() <= queue)
        queueCounts.resize(queue + 1);
      ++queueCounts[queue];
    }
    for (size_t engine = 0; engine < engineCounts.size(); ++engine)
      program.engineStreams[engine].reserve(engineCounts[engine]);
    program.dmaQueues.resize(queueCounts.size());
    for (size_t queue = 0; queue < queueCounts.size(); ++queue)
      program.dmaQueues[queue].reserve(queueCounts[queue]);
  }
  for (Operation &op : kernel.getBody().front())
    if (failed(emit(&op)))
      return failure();
  if (synchronize && nextSync != syncs.size())
    return kernel.emitError("internal error: the exporter and the semaphore "
                            "analysis disagree on the instructions");
  program.numSemaphores = maxSemaphore;
  // Every call names every stream, those a later instruction opened too.
  for (trnrt::CallSite &call : program.calls)
    call.positions.resize(5 + program.dmaQueues.size(), 0);
  // Moved, not copied: a large kernel's program is hundreds of megabytes.
  return std::move(program);
}

/// Places each call's callee scratch (CallSite::scratch) first fit in the
/// kernel's scratch region, clear of every scratch tensor live at the call
/// (from its nc.hbm_alloc to its last use, views included).
static void placeCallScratch(func::FuncOp kernel, trnrt::Program &program,
                             uint64_t scratchBase,
                             const llvm::DenseMap<Value, uint64_t> &offsets,
                             function_ref<uint64_t(StringRef)> scratchBytesOf) {
  struct Live {
    int64_t def, lastUse;
    uint64_t begin, end;
  };
  llvm::DenseMap<Value, int64_t> lastUse;
  SmallVector<std::pair<int64_t, CallOp>> calls;
  int64_t index = 0;
  for (Operation &op : kernel.getBody().front()) {
    for (Value operand : op.getOperands())
      lastUse[rootOf(operand)] = index;
    if (auto call = dyn_cast<CallOp>(op))
      calls.push_back({index, call});
    ++index;
  }
  std::vector<Live> scratch;
  index = 0;
  for (Operation &op : kernel.getBody().front()) {
    if (auto alloc = dyn_cast<HbmAllocOp>(op)) {
      uint64_t bytes = static_cast<uint64_t>(hbmBytes(alloc.getType()));
      uint64_t begin = offsets.lookup(alloc.getResult());
      // Unplaced scratch is laid out apart and live throughout.
      bool placed = alloc.getByteOffset().has_value();
      scratch.push_back({placed ? index : -1,
                         placed ? lastUse.lookup(alloc.getResult())
                                : std::numeric_limits<int64_t>::max(),
                         begin, begin + bytes});
    }
    ++index;
  }
  for (auto [i, entry] : llvm::enumerate(calls)) {
    auto [at, call] = entry;
    uint64_t bytes = scratchBytesOf(call.getCallee());
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const Live &live : scratch)
      if (live.def < at && live.lastUse >= at)
        busy.push_back({live.begin, live.end});
    llvm::sort(busy);
    uint64_t address = (scratchBase + 63) / 64 * 64;
    for (auto [begin, end] : busy) {
      if (address + bytes <= begin)
        break;
      address = std::max(address, (end + 63) / 64 * 64);
    }
    program.calls[i].scratch = address;
    program.hbmBytes =
        std::max(program.hbmBytes, (address + bytes + 63) / 64 * 64);
  }
}

FailureOr<trnrt::Program>
mlir::nc::exportProgram(func::FuncOp kernel, bool synchronize,
                        std::vector<std::string> *calleeNames,
                        function_ref<uint64_t(StringRef)> scratchBytesOf) {
  Exporter exporter(kernel, synchronize);
  FailureOr<trnrt::Program> program = exporter.run();
  if (failed(program))
    return failure();
  if (program->calls.empty())
    return program;
  if (!calleeNames || !scratchBytesOf)
    return kernel.emitError("the kernel calls subroutines; export them with "
                            "the caller (trn::compileToPrograms)");
  *calleeNames = std::move(exporter.calleeNames);
  placeCallScratch(kernel, *program, exporter.scratchBase, exporter.hbmOffsets,
                   scratchBytesOf);
  return program;
}
