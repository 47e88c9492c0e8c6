//===- TrnToNC.cpp - lower a trn step graph to an nc kernel --------------===//
//
// The first, unfused lowering (see the pass description in Passes.td): every
// trn value lives in an HBM tensor; each op streams tiles through SBUF.
//
// This file is the driver (the kernel's signature, the walk over the graph's
// ops, the pass) and the dispatch by op; elementwise ops, constants and calls
// lower here, every other family of ops in a file of its own (Lowering.h
// names them).
//
//===----------------------------------------------------------------------===//

#include "trn/Conversion/Passes.h"

#include "Lowering.h"

#include <utility>

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/NC/IR/NCOps.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::trn {
#define GEN_PASS_DEF_CONVERTTRNTONC
#include "trn/Conversion/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::nc;

namespace mlir::trntonc {

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t product(ArrayRef<int64_t> values) {
  int64_t result = 1;
  for (int64_t v : values)
    result *= v;
  return result;
}

SmallVector<int64_t> hbmShape(ArrayRef<int64_t> shape) {
  return SmallVector<int64_t>(shape);
}

AluOp aluOpFor(trn::ComparisonPredicate predicate) {
  switch (predicate) {
  case trn::ComparisonPredicate::eq:
    return AluOp::is_equal;
  case trn::ComparisonPredicate::ne:
    return AluOp::is_not_equal;
  case trn::ComparisonPredicate::lt:
    return AluOp::is_less;
  case trn::ComparisonPredicate::le:
    return AluOp::is_less_equal;
  case trn::ComparisonPredicate::gt:
    return AluOp::is_greater;
  case trn::ComparisonPredicate::ge:
    return AluOp::is_greater_equal;
  }
  return AluOp::is_equal;
}

/// The ALU op of a binary elementwise trn op, if it is one.
std::optional<AluOp> binaryAluOpFor(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<AluOp>>(op)
      .Case([](trn::AddOp) { return AluOp::add; })
      .Case([](trn::SubOp) { return AluOp::subtract; })
      .Case([](trn::MulOp) { return AluOp::multiply; })
      .Case([](trn::DivOp) { return AluOp::divide; })
      .Case([](trn::MaxOp) { return AluOp::max; })
      .Case([](trn::MinOp) { return AluOp::min; })
      .Case([](trn::PowOp) { return AluOp::pow; })
      .Case([](trn::AndOp) { return AluOp::logical_and; })
      .Case([](trn::OrOp) { return AluOp::logical_or; })
      .Case([](trn::CompareOp o) { return aluOpFor(o.getPredicate()); })
      .Default([](Operation *) { return std::nullopt; });
}

/// The Scalar Engine function of a unary trn op, if it is one.
std::optional<ActivationFunc> activationFor(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<ActivationFunc>>(op)
      .Case([](trn::ExpOp) { return ActivationFunc::exp; })
      .Case([](trn::LogOp) { return ActivationFunc::log; })
      .Case([](trn::Log1pOp) { return ActivationFunc::log1p; })
      .Case([](trn::TanhOp) { return ActivationFunc::tanh; })
      .Case([](trn::SigmoidOp) { return ActivationFunc::sigmoid; })
      .Case([](trn::SqrtOp) { return ActivationFunc::sqrt; })
      .Case([](trn::RsqrtOp) { return ActivationFunc::rsqrt; })
      .Case([](trn::ReciprocalOp) { return ActivationFunc::reciprocal; })
      .Case([](trn::ErfOp) { return ActivationFunc::erf; })
      .Case([](trn::ReluOp) { return ActivationFunc::relu; })
      .Case([](trn::SiluOp) { return ActivationFunc::silu; })
      .Case([](trn::SinOp) { return ActivationFunc::sin; })
      .Case([](trn::CosOp) { return ActivationFunc::cos; })
      .Case([](trn::FloorOp) { return ActivationFunc::floor; })
      .Case([](trn::SignOp) { return ActivationFunc::sign; })
      .Case([](trn::AbsOp) { return ActivationFunc::abs; })
      .Case([](trn::NegOp) { return ActivationFunc::negate; })
      .Case([](trn::GeluOp o) {
        return o.getApproximate() == trn::GeluApproximation::tanh
                   ? ActivationFunc::gelu_tanh
                   : ActivationFunc::gelu;
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace mlir::trntonc

using namespace mlir::trntonc;

/// Element types a tile can hold: trn1 has no int64 arithmetic.
LogicalResult Lowering::checkTileable(Operation *op) {
  auto check = [&](Type type) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && tensor.getElementType().isSignlessInteger(64))
      return op->emitError("'")
             << op->getName()
             << "' on i64 tensors is not lowered to NeuronCore kernels yet "
                "(the NeuronCore-v2 engines have no 64-bit integers)";
    return success();
  };
  for (Type type : op->getOperandTypes())
    if (failed(check(type)))
      return failure();
  for (Type type : op->getResultTypes())
    if (failed(check(type)))
      return failure();
  return success();
}

LogicalResult
Lowering::elementwise(Operation *op,
                      function_ref<void(Value dst, ArrayRef<Value>)> body) {
  if (failed(checkTileable(op)))
    return failure();
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  Value out = newTensor(op->getResult(0));
  SmallVector<Value> inputs;
  for (Value operand : op->getOperands())
    inputs.push_back(hbmOf(operand));
  int64_t cols = type.getShape().empty() ? 1 : type.getShape().back();
  forEachTile(type.getShape(), [&](int64_t r0, int64_t rows, int64_t c0,
                                   int64_t width) {
    SmallVector<Value> tiles;
    for (auto [operand, hbm] : llvm::zip(op->getOperands(), inputs)) {
      Type elementType =
          cast<RankedTensorType>(operand.getType()).getElementType();
      Value t = kb.tile(MemorySpace::sbuf, rows, {width}, elementType);
      kb.dma(t, kb.rowTile(hbm, cols, r0, rows, c0, width));
      tiles.push_back(t);
    }
    Value result =
        kb.tile(MemorySpace::sbuf, rows, {width}, type.getElementType());
    body(result, tiles);
    kb.dma(kb.rowTile(out, cols, r0, rows, c0, width), result);
  });
  return success();
}

LogicalResult Lowering::lowerConstant(trn::ConstantOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  auto dense = cast<DenseElementsAttr>(op.getValue());
  if (dense.isSplat() && !type.getElementType().isSignlessInteger(64)) {
    // A splat is cheaper to make than to store: memset tiles.
    Value out = newTensor(op.getResult());
    double value =
        type.getElementType().isIntOrIndex()
            ? static_cast<double>(dense.getSplatValue<APInt>().getSExtValue())
            : dense.getSplatValue<APFloat>().convertToDouble();
    if (type.getElementType().isSignlessInteger(1))
      value = dense.getSplatValue<APInt>().getZExtValue();
    int64_t cols = type.getShape().empty() ? 1 : type.getShape().back();
    forEachTile(type.getShape(), [&](int64_t r0, int64_t rows, int64_t c0,
                                     int64_t width) {
      Value t =
          kb.tile(MemorySpace::sbuf, rows, {width}, type.getElementType());
      builder.create<MemsetOp>(
          kb.loc, t, llvm::APFloat(static_cast<float>(value)), Engine::vector);
      kb.dma(kb.rowTile(out, cols, r0, rows, c0, width), t);
    });
    return success();
  }
  auto hbmType = HbmType::get(builder.getContext(), hbmShape(type.getShape()),
                              type.getElementType());
  DenseElementsAttr stored = dense.reshape(
      RankedTensorType::get(hbmShape(type.getShape()), type.getElementType()));
  values[op.getResult()] = builder.create<HbmConstantOp>(
      kb.loc, hbmType,
      builder.getStringAttr("c" + std::to_string(kb.counter++)), stored);
  return success();
}

/// What the instructions of `op` compute (nc.kind, for the simulator's time
/// split): the optimizer's slice (trn-mark-optimizer) first, then by op.
static StringRef kindOf(Operation *op) {
  // A matmul and its epilogue: the epilogue's instructions take the group's
  // own kind (FusionLowering marks them).
  if (auto fusion = dyn_cast<trn::FusionOp>(op);
      fusion && isa<trn::DotGeneralOp>(fusion.getBody().front().front()))
    return "matmul";
  if (op->hasAttr("trn.optimizer"))
    return "optimizer";
  if (isa_and_nonnull<dist::DistDialect>(op->getDialect()))
    return "collective";
  if (isa<trn::DotGeneralOp>(op))
    return "matmul";
  if (isa<trn::AttentionOp, trn::AttentionGradOp>(op))
    return "attention";
  if (isa<trn::TransposeOp, trn::ReshapeOp, trn::BroadcastInDimOp, trn::SliceOp,
          trn::ConcatenateOp, trn::GatherOp, trn::ScatterAddOp, trn::PadOp>(op))
    return "data_movement";
  return "elementwise";
}

/// A call of an outlined layer (trn-outline-layers): the callee lowers to
/// a kernel of its own, its arguments the HBM tensors of the operands, then
/// of the results.
LogicalResult Lowering::lowerCall(func::CallOp call) {
  SmallVector<Value> inputs, outputs;
  for (Value operand : call.getOperands()) {
    Value hbm = hbmOf(operand);
    if (!hbm)
      return call.emitError("an operand of the call was not lowered");
    inputs.push_back(hbm);
  }
  for (Value result : call.getResults()) {
    if (!isa<RankedTensorType>(result.getType()))
      return call.emitError("a call result is not a tensor");
    outputs.push_back(newTensor(result));
  }
  builder.create<nc::CallOp>(kb.loc, call.getCalleeAttr(), inputs, outputs);
  return success();
}

LogicalResult Lowering::lower(Operation *op) {
  auto activation = [&](ActivationFunc func) {
    return elementwise(op, [&](Value dst, ArrayRef<Value> srcs) {
      builder.create<ActivationOp>(kb.loc, func, dst, srcs[0], Value(), Value(),
                                   Value(), llvm::APFloat(1.0f),
                                   llvm::APFloat(0.0f));
    });
  };
  auto binary = [&](AluOp alu, Engine engine = Engine::vector) {
    return elementwise(op, [&](Value dst, ArrayRef<Value> srcs) {
      builder.create<TensorTensorOp>(kb.loc, alu, dst, srcs[0], srcs[1],
                                     engine);
    });
  };
  auto alias = [&](Value from, Value to) {
    values[to] = hbmOf(from);
    return success();
  };

  if (std::optional<ActivationFunc> func = activationFor(op))
    return activation(*func);
  // The Vector Engine has no pow (docs/isa.md); GpSimd computes it.
  if (std::optional<AluOp> alu = binaryAluOpFor(op))
    return binary(*alu, *alu == AluOp::pow ? Engine::gpsimd : Engine::vector);
  if (auto call = dyn_cast<func::CallOp>(op))
    return lowerCall(call);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](trn::SelectOp) {
        return elementwise(op, [&](Value dst, ArrayRef<Value> srcs) {
          builder.create<SelectOp>(kb.loc, dst, srcs[0], srcs[1], srcs[2]);
        });
      })
      .Case([&](trn::ConvertOp o) {
        if (isa<RankedTensorType>(o.getOperand().getType()) &&
            (cast<RankedTensorType>(o.getOperand().getType())
                 .getElementType()
                 .isSignlessInteger(64) ||
             cast<RankedTensorType>(o.getType())
                 .getElementType()
                 .isSignlessInteger(64)))
          return lowerConvertI64(o);
        return elementwise(op, [&](Value dst, ArrayRef<Value> srcs) {
          builder.create<TensorCopyOp>(kb.loc, dst, srcs[0], Engine::vector);
        });
      })
      .Case([&](trn::ConstantOp o) { return lowerConstant(o); })
      .Case([&](trn::ReshapeOp o) {
        return alias(o.getOperand(), o.getResult());
      })
      .Case([&](trn::PipelineStageOp o) {
        return alias(o.getInput(), o.getResult());
      })
      .Case([&](trn::TransposeOp o) { return lowerTranspose(o); })
      .Case([&](trn::BroadcastInDimOp o) { return lowerBroadcastInDim(o); })
      .Case([&](trn::RotateHalfOp o) { return lowerRotateHalf(o); })
      .Case([&](trn::SliceOp o) { return lowerSlice(o); })
      .Case([&](trn::PadOp o) { return lowerPad(o); })
      .Case([&](trn::ConcatenateOp o) { return lowerConcatenate(o); })
      .Case([&](trn::DotGeneralOp o) {
        if (failed(checkTileable(o)))
          return failure();
        return lowerDot(o);
      })
      .Case([&](trn::ReduceOp o) { return lowerReduce(o); })
      .Case([&](trn::IotaOp o) { return lowerIota(o); })
      .Case<trn::RngUniformOp, trn::RngBernoulliOp>(
          [&](Operation *o) { return lowerRandom(o); })
      .Case([&](trn::GatherOp o) { return lowerGather(o); })
      .Case([&](trn::ScatterAddOp o) { return lowerScatterAdd(o); })
      .Case([&](trn::FusionOp o) { return lowerFusion(o); })
      .Case([&](trn::AttentionOp o) { return lowerAttention(o); })
      .Case([&](trn::AttentionGradOp o) { return lowerAttentionGrad(o); })
      .Case<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
            dist::AllSliceOp, dist::AllToAllOp, dist::CollectivePermuteOp,
            dist::AxisIndexOp, dist::ShardingConstraintOp, dist::SendOp,
            dist::RecvOp>([&](Operation *o) { return lowerCollective(o); })
      .Case([&](trn::GeluGradOp o) {
        ActivationFunc derivative =
            o.getApproximate() == trn::GeluApproximation::tanh
                ? ActivationFunc::gelu_tanh_dx
                : ActivationFunc::gelu_dx;
        return elementwise(op, [&](Value dst, ArrayRef<Value> srcs) {
          auto srcType = cast<TileType>(srcs[1].getType());
          Value slope = kb.tile(MemorySpace::sbuf, srcType.getPartitions(),
                                srcType.getFreeShape(), builder.getF32Type());
          builder.create<ActivationOp>(
              kb.loc, derivative, slope, srcs[1], Value(), Value(), Value(),
              llvm::APFloat(1.0f), llvm::APFloat(0.0f));
          builder.create<TensorTensorOp>(kb.loc, AluOp::multiply, dst, srcs[0],
                                         slope, Engine::vector);
        });
      })
      .Default([&](Operation *other) {
        return other->emitError("'")
               << other->getName()
               << "' is not lowered to NeuronCore kernels yet"
               << (isa<trn::SoftmaxOp, trn::LogSoftmaxOp, trn::LayerNormOp,
                       trn::RmsNormOp, trn::AttentionOp, trn::CrossEntropyOp>(
                       other)
                       ? " (run trn-decompose-composites first)"
                       : "");
      });
}

FailureOr<func::FuncOp> Lowering::run() {
  MLIRContext *context = builder.getContext();
  if (!graph.getBody().hasOneBlock())
    return graph.emitError("a step graph has a single block");
  if (failed(findMesh()))
    return failure();
  StringRef shardingName = dist::DistDialect::getShardingAttrName();
  // Kernel signature: inputs, then outputs not updating an input in place.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  auto hbmTypeOf = [&](Type type) {
    auto tensor = cast<RankedTensorType>(type);
    return HbmType::get(context, hbmShape(tensor.getShape()),
                        tensor.getElementType());
  };
  auto nameOf = [&](StringAttr name, std::string fallback) {
    return name ? name.getValue().str() : fallback;
  };
  unsigned numInputs = graph.getNumArguments();
  SmallVector<int64_t> aliasOf(graph.getNumResults(), -1);
  SmallVector<bool> updated(numInputs, false);
  for (unsigned r = 0; r < graph.getNumResults(); ++r)
    if (auto alias = graph.getResultAttrOfType<IntegerAttr>(r, "trn.aliases")) {
      aliasOf[r] = alias.getInt();
      updated[alias.getInt()] = true;
    }
  // A pipeline fragment's ports: #dist.port as array<i64: kind, index>.
  auto portOf = [&](DictionaryAttr attrs) -> Attribute {
    auto port =
        attrs
            ? attrs.getAs<dist::PortAttr>(dist::DistDialect::getPortAttrName())
            : dist::PortAttr();
    if (!port)
      return {};
    int64_t kind = llvm::StringSwitch<int64_t>(port.getKind())
                       .Case("argument", 1)
                       .Case("microbatch", 2)
                       .Case("stash", 3)
                       .Case("accumulator", 4)
                       .Case("result", 5)
                       .Default(0);
    return DenseI64ArrayAttr::get(context, {kind, port.getIndex()});
  };
  for (unsigned i = 0; i < numInputs; ++i) {
    if (!isa<RankedTensorType>(graph.getArgumentTypes()[i]))
      return graph.emitError("argument ") << i << " is not a tensor";
    argTypes.push_back(hbmTypeOf(graph.getArgumentTypes()[i]));
    NamedAttrList attrs;
    attrs.set(
        "nc.name",
        StringAttr::get(
            context, nameOf(graph.getArgAttrOfType<StringAttr>(i, "trn.name"),
                            "arg" + std::to_string(i))));
    attrs.set("nc.kind",
              StringAttr::get(context, updated[i] ? "inout" : "input"));
    if (failed(addSharding(graph.getArgAttr(i, shardingName), graph.getLoc(),
                           attrs, /*output=*/false)))
      return failure();
    for (unsigned r = 0; r < graph.getNumResults(); ++r)
      if (aliasOf[r] == static_cast<int64_t>(i) &&
          failed(addSharding(graph.getResultAttr(r, shardingName),
                             graph.getLoc(), attrs, /*output=*/true)))
        return failure();
    if (Attribute port = portOf(graph.getArgAttrDict(i)))
      attrs.set(NCDialect::getPortAttrName(), port);
    for (unsigned r = 0; r < graph.getNumResults(); ++r)
      if (aliasOf[r] == static_cast<int64_t>(i))
        if (Attribute port = portOf(graph.getResultAttrDict(r)))
          attrs.set(NCDialect::getOutputPortAttrName(), port);
    // The updated value keeps the name the graph gives its result.
    for (unsigned r = 0; r < graph.getNumResults(); ++r)
      if (aliasOf[r] == static_cast<int64_t>(i))
        attrs.set("nc.output_name",
                  StringAttr::get(context,
                                  nameOf(graph.getResultAttrOfType<StringAttr>(
                                             r, "trn.name"),
                                         "result" + std::to_string(r))));
    argAttrs.push_back(attrs.getDictionary(context));
  }
  SmallVector<int64_t> outputArg(graph.getNumResults(), -1);
  for (unsigned r = 0; r < graph.getNumResults(); ++r) {
    if (aliasOf[r] >= 0) {
      outputArg[r] = aliasOf[r];
      continue;
    }
    outputArg[r] = argTypes.size();
    argTypes.push_back(hbmTypeOf(graph.getResultTypes()[r]));
    NamedAttrList attrs;
    attrs.set("nc.name",
              StringAttr::get(
                  context,
                  nameOf(graph.getResultAttrOfType<StringAttr>(r, "trn.name"),
                         "result" + std::to_string(r))));
    attrs.set("nc.kind", StringAttr::get(context, "output"));
    if (failed(addSharding(graph.getResultAttr(r, shardingName), graph.getLoc(),
                           attrs, /*output=*/false)))
      return failure();
    if (Attribute port = portOf(graph.getResultAttrDict(r)))
      attrs.set(NCDialect::getPortAttrName(), port);
    argAttrs.push_back(attrs.getDictionary(context));
  }

  auto kernel = func::FuncOp::create(graph.getLoc(), graph.getSymName(),
                                     FunctionType::get(context, argTypes, {}));
  // Erased with its ops unless the lowering succeeds.
  auto eraseOnFailure = llvm::make_scope_exit([&] {
    if (kernel && !kernel->getBlock())
      kernel.erase();
  });
  kernel.setAllArgAttrs(argAttrs);
  if (graph->hasAttr("trn.subroutine")) {
    kernel->setAttr(NCDialect::getSubroutineAttrName(), builder.getUnitAttr());
    kernel.setPrivate();
  }
  if (!meshAxes.empty()) {
    SmallVector<Attribute> names;
    for (const std::string &axis : meshAxes)
      names.push_back(StringAttr::get(context, axis));
    kernel->setAttr(NCDialect::getMeshAxesAttrName(),
                    ArrayAttr::get(context, names));
    kernel->setAttr(NCDialect::getMeshSizesAttrName(),
                    DenseI64ArrayAttr::get(context, meshSizes));
    if (!replicaAxes.empty()) {
      SmallVector<Attribute> replicas;
      for (const std::string &axis : replicaAxes)
        replicas.push_back(StringAttr::get(context, axis));
      kernel->setAttr(NCDialect::getReplicaAxesAttrName(),
                      ArrayAttr::get(context, replicas));
    }
  }
  if (failed(setPipeline(kernel)))
    return failure();
  Block *body = kernel.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  for (unsigned i = 0; i < numInputs; ++i)
    values[graph.getArgument(i)] = body->getArgument(i);
  auto ret = cast<func::ReturnOp>(graph.getBody().front().getTerminator());
  for (auto [r, value] : llvm::enumerate(ret.getOperands()))
    if (aliasOf[r] < 0 && !isa<BlockArgument>(value) &&
        !directOutputs.count(value))
      directOutputs[value] = body->getArgument(outputArg[r]);
  // A returned reshape (a layer's saved activation in the attention's
  // layout) aliases its source: the source is computed straight into the
  // output unless it has an output of its own, instead of being copied
  // there at the return.
  for (auto [r, value] : llvm::enumerate(ret.getOperands())) {
    if (aliasOf[r] >= 0 ||
        directOutputs.lookup(value) != body->getArgument(outputArg[r]))
      continue;
    Value source = value;
    while (auto reshape = source.getDefiningOp<trn::ReshapeOp>())
      source = reshape.getOperand();
    if (source != value && !isa<BlockArgument>(source) &&
        !directOutputs.count(source))
      directOutputs[source] = body->getArgument(outputArg[r]);
  }
  // A returned scatter_add (an embedding's gradient) adds into its output,
  // where its operand, if nothing else reads it, is computed.
  for (auto [r, value] : llvm::enumerate(ret.getOperands())) {
    auto scatter = value.getDefiningOp<trn::ScatterAddOp>();
    if (!scatter || aliasOf[r] >= 0 ||
        directOutputs.lookup(value) != body->getArgument(outputArg[r]))
      continue;
    Value operand = scatter.getOperand();
    if (operand.getDefiningOp() && operand.hasOneUse() &&
        !isa<trn::ReshapeOp>(operand.getDefiningOp()) &&
        !directOutputs.count(operand))
      directOutputs[operand] = body->getArgument(outputArg[r]);
  }

  planConcatsInPlace(graph);

  int64_t opIndex = 0; // names each op's instructions (nc.kind origin)
  for (Operation &op : graph.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      // Copy each result into its output (or the input it updates), under
      // one marker.
      bool marked = false;
      for (auto [r, value] : llvm::enumerate(ret.getOperands())) {
        Value target = body->getArgument(outputArg[r]);
        Value source = hbmOf(value);
        // Computed in place, perhaps in another shape (a returned reshape).
        if (auto reshaped = source.getDefiningOp<HbmReshapeOp>();
            source == target || (reshaped && reshaped.getSource() == target))
          continue;
        if (!std::exchange(marked, true))
          builder.create<KindOp>(
              ret.getLoc(), builder.getStringAttr("data_movement"),
              builder.getStringAttr(graph.getSymName() + ": return"));
        auto shape = cast<HbmType>(target.getType()).getShape();
        Side src{source, 0, rowMajorStrides(shape)};
        Side dst{target, 0, rowMajorStrides(shape)};
        if (failed(copy(ret, shape, src, dst)))
          return failure();
      }
      break;
    }
    kb.loc = op.getLoc();
    // Every op's instructions carry its kind and name (a call's are the
    // callee's).
    origin = builder.getStringAttr(graph.getSymName() + ": " +
                                   op.getName().getStringRef() + " #" +
                                   Twine(opIndex));
    if (!isa<func::CallOp>(op))
      builder.create<KindOp>(kb.loc, builder.getStringAttr(kindOf(&op)),
                             origin);
    ++opIndex;
    if (failed(lower(&op)))
      return failure();
  }
  builder.create<func::ReturnOp>(graph.getLoc());
  eraseOnFailure.release();
  return kernel;
}

namespace {
struct ConvertTrnToNCPass
    : mlir::trn::impl::ConvertTrnToNCBase<ConvertTrnToNCPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> graphs;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        graphs.push_back(function);
    // Each graph (a pipeline stage has three) lowers on its own thread
    // into a kernel outside the module: the module is only read meanwhile.
    SmallVector<func::FuncOp> kernels(graphs.size());
    LogicalResult lowered = failableParallelForEachN(
        module.getContext(), 0, graphs.size(), [&](size_t i) {
          OpBuilder builder(module.getContext());
          FailureOr<func::FuncOp> kernel = Lowering(graphs[i], builder).run();
          if (failed(kernel))
            return failure();
          kernels[i] = *kernel;
          return success();
        });
    if (failed(lowered)) {
      for (func::FuncOp kernel : kernels)
        if (kernel)
          kernel.erase();
      return signalPassFailure();
    }
    for (auto [graph, kernel] : llvm::zip(graphs, kernels)) {
      module.getBody()->getOperations().insert(graph->getIterator(), kernel);
      graph.erase();
    }
  }
};
} // namespace
