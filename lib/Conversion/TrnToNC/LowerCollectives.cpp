//===- LowerCollectives.cpp - dist collectives to nc collectives ----------===//
//
// A partitioned graph (a func.func marked dist.spmd: the program every rank
// runs, on local shapes) lowers like any other graph, and its collectives
// become nc collectives on the Sync engine that read and write whole HBM
// tensors. The kernel records the mesh (nc.mesh_axes, nc.mesh_sizes: the
// axes collectives name and their compile-time sizes) and, per argument, how
// the global tensor maps to the local one (nc.sharding, nc.blocks), which
// the exporter writes into the artifact so that a runtime can split global
// inputs and assemble global outputs as the reference evaluator does.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "trn/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::trntonc;

namespace {

/// The mesh symbol an op or attribute of the graph refers to, if any.
FlatSymbolRefAttr meshRefOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, FlatSymbolRefAttr>(op)
      .Case<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
            dist::AllSliceOp, dist::AllToAllOp, dist::CollectivePermuteOp,
            dist::AxisIndexOp, dist::SendOp, dist::RecvOp>(
          [](auto o) { return o.getMeshAttr(); })
      .Default([](Operation *) { return FlatSymbolRefAttr(); });
}

CollectiveReduction reductionOf(dist::ReductionKind kind) {
  switch (kind) {
  case dist::ReductionKind::sum:
    return CollectiveReduction::sum;
  case dist::ReductionKind::max:
    return CollectiveReduction::max;
  case dist::ReductionKind::min:
    return CollectiveReduction::min;
  case dist::ReductionKind::mean:
    return CollectiveReduction::mean;
  }
  return CollectiveReduction::sum;
}

} // namespace

LogicalResult Lowering::findMesh() {
  bool spmd = graph->hasAttr(dist::DistDialect::getSpmdAttrName());
  // Every mesh the graph names: its shardings' and its collectives'.
  SmallVector<std::pair<FlatSymbolRefAttr, Location>> refs;
  auto noteSharding = [&](Attribute attr, Location loc) {
    if (auto sharding = dyn_cast_or_null<dist::ShardingAttr>(attr))
      refs.push_back({sharding.getMesh(), loc});
  };
  StringRef name = dist::DistDialect::getShardingAttrName();
  for (unsigned i = 0; i < graph.getNumArguments(); ++i)
    noteSharding(graph.getArgAttr(i, name), graph.getLoc());
  for (unsigned r = 0; r < graph.getNumResults(); ++r)
    noteSharding(graph.getResultAttr(r, name), graph.getLoc());
  WalkResult walk = graph.walk([&](Operation *op) {
    if (!isa_and_nonnull<dist::DistDialect>(op->getDialect()))
      return WalkResult::advance();
    if (!spmd && !isa<dist::ShardingConstraintOp>(op)) {
      op->emitError("'")
          << op->getName()
          << "' is lowered only in a partitioned program (a function marked "
             "dist.spmd); partition the graph first (trn-cc --mesh, or "
             "trn-opt -dist-seed -dist-propagate -dist-spmd)";
      return WalkResult::interrupt();
    }
    if (FlatSymbolRefAttr ref = meshRefOf(op))
      refs.push_back({ref, op->getLoc()});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (!spmd)
    return success(); // shardings alone are annotations: lowered as given
  if (refs.empty())
    return success(); // nothing is split and nothing communicates
  for (auto &[ref, loc] : refs)
    if (ref != refs.front().first)
      return mlir::emitError(loc, "a partitioned program runs on one mesh, "
                                  "but it names both ")
             << refs.front().first << " and " << ref;
  meshSymbol = refs.front().first;
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(graph, meshSymbol);
  if (!mesh)
    return graph.emitError("the partitioned program names mesh ")
           << meshSymbol << ", which the module does not declare";
  constexpr size_t kMaxAxes = 16; // trnrt::kMaxMeshAxes
  if (mesh.getAxes().size() > kMaxAxes)
    return mesh.emitError("a mesh has at most ")
           << kMaxAxes << " axes on NeuronCores, this one has "
           << mesh.getAxes().size();
  for (auto [axis, size] : llvm::zip(
           mesh.getAxes().getAsValueRange<StringAttr>(), mesh.getSizes())) {
    meshAxes.push_back(axis.str());
    meshSizes.push_back(size);
  }
  if (auto replicas = graph->getAttrOfType<ArrayAttr>(
          dist::DistDialect::getReplicaAxesAttrName()))
    for (StringRef axis : replicas.getAsValueRange<StringAttr>()) {
      if (!llvm::is_contained(meshAxes, axis.str()))
        return graph.emitError("replica axis '")
               << axis << "' is not an axis of mesh " << meshSymbol;
      replicaAxes.push_back(axis.str());
    }
  return success();
}

LogicalResult Lowering::addSharding(Attribute attr, Location loc,
                                    NamedAttrList &attrs, bool output) {
  auto sharding = dyn_cast_or_null<dist::ShardingAttr>(attr);
  if (!sharding || meshAxes.empty())
    return success();
  if (!sharding.getPartial().empty())
    return mlir::emitError(loc, "a partitioned program's ")
           << (output ? "result" : "argument") << " is a partial sum over "
           << sharding.getPartial()
           << "; inputs and outputs must be complete values (all-reduce "
              "them in the program)";
  MLIRContext *context = builder.getContext();
  SmallVector<Attribute> dims;
  SmallVector<int64_t> blocks;
  bool anyBlocks = false;
  for (unsigned d = 0; d < sharding.getDims().size(); ++d) {
    SmallVector<int64_t> axes;
    for (StringRef axis : sharding.axesOf(d)) {
      auto it = llvm::find(meshAxes, axis.str());
      if (it == meshAxes.end())
        return mlir::emitError(loc, "sharding axis '")
               << axis << "' is not an axis of mesh " << meshSymbol;
      axes.push_back(it - meshAxes.begin());
    }
    dims.push_back(DenseI64ArrayAttr::get(context, axes));
    blocks.push_back(sharding.blocksOf(d));
    anyBlocks |= blocks.back() != 1;
  }
  attrs.set(output ? NCDialect::getOutputShardingAttrName()
                   : NCDialect::getShardingAttrName(),
            ArrayAttr::get(context, dims));
  if (anyBlocks)
    attrs.set(output ? NCDialect::getOutputBlocksAttrName()
                     : NCDialect::getBlocksAttrName(),
              DenseI64ArrayAttr::get(context, blocks));
  return success();
}

LogicalResult Lowering::lowerCollective(Operation *op) {
  // The HBM tensor of an operand with the shape the op sees: a trn.reshape
  // only renames its operand's bytes, so view them with this shape.
  auto source = [&](Value value) -> Value {
    Value hbm = hbmOf(value);
    auto tensor = cast<RankedTensorType>(value.getType());
    auto type = cast<HbmType>(hbm.getType());
    if (type.getShape() == tensor.getShape())
      return hbm;
    return builder.create<HbmReshapeOp>(
        kb.loc,
        HbmType::get(builder.getContext(), hbmShape(tensor.getShape()),
                     tensor.getElementType()),
        hbm);
  };
  auto elements = [](Value value) {
    return cast<RankedTensorType>(value.getType()).getNumElements();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](dist::ShardingConstraintOp o) {
        values[o.getResult()] = hbmOf(o.getInput());
        return success();
      })
      .Case([&](dist::AxisIndexOp o) {
        builder.create<AxisIndexOp>(kb.loc, newTensor(o.getResult()),
                                    o.getAxes());
        return success();
      })
      .Case([&](dist::SendOp o) {
        if (elements(o.getInput()) == 0)
          return success(); // nothing to move
        builder.create<SendOp>(kb.loc, source(o.getInput()),
                               builder.getStrArrayAttr({o.getAxis()}),
                               o.getPeer(), o.getTag());
        return success();
      })
      .Case([&](dist::RecvOp o) {
        Value dst = newTensor(o.getResult());
        if (elements(o.getResult()) != 0)
          builder.create<RecvOp>(kb.loc, dst,
                                 builder.getStrArrayAttr({o.getAxis()}),
                                 o.getPeer(), o.getTag());
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        Value input = other->getOperand(0);
        Value result = other->getResult(0);
        std::optional<dist::ReductionKind> kind;
        if (auto o = dyn_cast<dist::AllReduceOp>(other))
          kind = o.getReduction();
        if (auto o = dyn_cast<dist::ReduceScatterOp>(other))
          kind = o.getReduction();
        Type element = cast<RankedTensorType>(input.getType()).getElementType();
        if (kind && element.isSignlessInteger(1))
          return other->emitError("'")
                 << other->getName()
                 << "' of i1 values is not lowered: convert them to i32 "
                    "first";
        if (kind == dist::ReductionKind::mean && !isa<FloatType>(element))
          return other->emitError("'")
                 << other->getName() << " mean' of " << element
                 << " values is not lowered: a mean needs a float type";
        // The ISA names a collective's axes as a set, bound in mesh order
        // (major first); several listed in another order would be another
        // layout than the program means (a reduction does not care).
        if (!isa<dist::AllReduceOp>(other))
          if (auto axes = other->getAttrOfType<ArrayAttr>("axes")) {
            int64_t previous = -1;
            for (StringRef axis : axes.getAsValueRange<StringAttr>()) {
              int64_t index =
                  llvm::find(meshAxes, axis.str()) - meshAxes.begin();
              if (index <= previous)
                return other->emitError("'")
                       << other->getName() << "' names its axes " << axes
                       << " out of the mesh's order; list them major first "
                          "as the mesh does, or use one collective per axis";
              previous = index;
            }
          }
        Value src = source(input);
        Value dst = newTensor(result);
        // Nothing to move: every rank's tensor is empty.
        if (elements(input) == 0 || elements(result) == 0)
          return success();
        llvm::TypeSwitch<Operation *>(other)
            .Case([&](dist::AllReduceOp o) {
              builder.create<AllReduceOp>(kb.loc, reductionOf(o.getReduction()),
                                          dst, src, o.getAxes());
            })
            .Case([&](dist::AllGatherOp o) {
              builder.create<AllGatherOp>(kb.loc, dst, src, o.getAxes(),
                                          o.getDim());
            })
            .Case([&](dist::ReduceScatterOp o) {
              builder.create<ReduceScatterOp>(
                  kb.loc, reductionOf(o.getReduction()), dst, src, o.getAxes(),
                  o.getDim());
            })
            .Case([&](dist::AllSliceOp o) {
              builder.create<AllSliceOp>(kb.loc, dst, src, o.getAxes(),
                                         o.getDim());
            })
            .Case([&](dist::AllToAllOp o) {
              builder.create<AllToAllOp>(kb.loc, dst, src, o.getAxes(),
                                         o.getSplitDim(), o.getConcatDim());
            })
            .Case([&](dist::CollectivePermuteOp o) {
              builder.create<CollectivePermuteOp>(kb.loc, dst, src, o.getAxes(),
                                                  o.getShift());
            });
        return success();
      });
}

LogicalResult Lowering::setPipeline(func::FuncOp kernel) {
  auto owner = graph->getAttrOfType<FlatSymbolRefAttr>(
      dist::DistDialect::getPipelineAttrName());
  if (!owner)
    return success();
  auto pipeline =
      SymbolTable::lookupNearestSymbolFrom<dist::PipelineOp>(graph, owner);
  auto stage =
      graph->getAttrOfType<IntegerAttr>(dist::DistDialect::getStageAttrName());
  auto phase =
      graph->getAttrOfType<StringAttr>(dist::DistDialect::getPhaseAttrName());
  if (!pipeline || !stage || !phase)
    return graph.emitError("a pipeline fragment needs its dist.pipeline ")
           << owner << ", dist.stage and dist.phase";
  auto mesh = SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(
      graph, pipeline.getMeshAttr());
  std::optional<int64_t> stages =
      mesh ? mesh.sizeOf(pipeline.getAxis()) : std::nullopt;
  if (!stages)
    return graph.emitError("the pipeline's axis is not a mesh axis");
  Builder b(graph.getContext());
  kernel->setAttr(
      NCDialect::getPipelineAttrName(),
      b.getDictionaryAttr({
          b.getNamedAttr("step", b.getStringAttr(pipeline.getSymName())),
          b.getNamedAttr("stage", b.getI64IntegerAttr(stage.getInt())),
          b.getNamedAttr("stages", b.getI64IntegerAttr(*stages)),
          b.getNamedAttr("microbatches",
                         b.getI64IntegerAttr(pipeline.getMicrobatches())),
          b.getNamedAttr("schedule", pipeline.getScheduleAttr()),
          b.getNamedAttr("phase", phase),
          b.getNamedAttr("axis", pipeline.getAxisAttr()),
      }));
  return success();
}
