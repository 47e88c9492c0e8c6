//===- Seed.cpp - dist-seed: the mesh and Megatron's weight shardings -----===//
//
// Megatron pairs a transformer's matmuls: one whose output feeds (through
// elementwise ops, reshapes, attention, ...) the next matmul's activation
// is split on its output features (column parallel) and the next on its
// input features (row parallel), so the pair needs one all-reduce. Here the
// pairs are found from the graph: a weight matmul's result is followed
// forward until it reaches another weight matmul.
//
//===----------------------------------------------------------------------===//

#include "trn/Partition/Passes.h"

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnDialect.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::trn::partition {
#define GEN_PASS_DEF_DISTSEED
#include "trn/Partition/Passes.h.inc"
} // namespace mlir::trn::partition

using namespace mlir;
using namespace mlir::trn;
using namespace mlir::trn::partition;

namespace {

/// A matmul with a 2-D weight argument.
struct WeightUse {
  DotGeneralOp dot;
  BlockArgument weight;
  unsigned weightOperand; ///< 0 (lhs) or 1 (rhs)
  int64_t contractedDim;  ///< the weight's contracted dimension
  Value activation;       ///< the dot's other operand
};

/// The weight a dot_general reads (directly or through one transpose), if
/// any: a 2-D argument of role parameter (any argument when the graph has
/// no roles) contracted over exactly one dimension.
std::optional<WeightUse> weightUseOf(DotGeneralOp dot, bool graphHasRoles) {
  if (!dot.getLhsBatchingDims().empty() ||
      dot.getLhsContractingDims().size() != 1)
    return std::nullopt;
  for (unsigned operand = 0; operand < 2; ++operand) {
    Value value = dot->getOperand(operand);
    int64_t contracted = operand == 0 ? dot.getLhsContractingDims()[0]
                                      : dot.getRhsContractingDims()[0];
    if (auto transpose = value.getDefiningOp<TransposeOp>()) {
      if (transpose.getPerm().size() != 2)
        continue;
      contracted = transpose.getPerm()[contracted];
      value = transpose.getOperand();
    }
    auto argument = dyn_cast<BlockArgument>(value);
    if (!argument || cast<RankedTensorType>(argument.getType()).getRank() != 2)
      continue;
    auto function = cast<func::FuncOp>(argument.getOwner()->getParentOp());
    auto role = function.getArgAttrOfType<StringAttr>(
        argument.getArgNumber(), TrnDialect::getRoleAttrName());
    if (graphHasRoles && (!role || role.getValue() != "parameter"))
      continue;
    return WeightUse{dot, argument, operand, contracted,
                     dot->getOperand(1 - operand)};
  }
  return std::nullopt;
}

LogicalResult parseMesh(StringRef spec, SmallVectorImpl<Attribute> &axes,
                        SmallVectorImpl<int64_t> &sizes, Builder &builder,
                        std::string &error) {
  SmallVector<StringRef> parts;
  spec.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    auto [name, size] = part.trim().split('=');
    int64_t value = 0;
    if (name.empty() || size.trim().getAsInteger(10, value) || value < 1) {
      error = ("mesh '" + spec + "': '" + part +
               "' is not axis=size with a positive size (e.g. dp=2,tp=4)")
                  .str();
      return failure();
    }
    axes.push_back(builder.getStringAttr(name.trim()));
    sizes.push_back(value);
  }
  if (axes.empty()) {
    error = "no mesh: give the mesh option, e.g. mesh=dp=2,tp=4";
    return failure();
  }
  return success();
}

struct DistSeedPass : mlir::trn::partition::impl::DistSeedBase<DistSeedPass> {
  using DistSeedBase::DistSeedBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder builder(module.getContext());
    dist::MeshOp mesh;
    auto meshes = module.getOps<dist::MeshOp>();
    if (!meshes.empty()) {
      mesh = *meshes.begin();
    } else {
      SmallVector<Attribute> axes;
      SmallVector<int64_t> sizes;
      std::string error;
      if (failed(parseMesh(meshSpec, axes, sizes, builder, error))) {
        module.emitError() << "dist-seed: " << error;
        return signalPassFailure();
      }
      OpBuilder atTop(module.getBodyRegion());
      mesh = atTop.create<dist::MeshOp>(
          module.getLoc(), builder.getStringAttr("mesh"),
          builder.getArrayAttr(axes), builder.getDenseI64ArrayAttr(sizes));
      if (failed(mlir::verify(mesh))) {
        mesh.erase();
        return signalPassFailure();
      }
    }
    // One replica's step over dp: dp splits no shape, so the batch is split
    // over it whatever its size (the factor arithmetic sees dp as 1).
    if (dpReplicas && mesh.sizeOf("dp").value_or(1) > 1)
      mesh->setAttr(dist::DistDialect::getReplicaAxesAttrName(),
                    builder.getStrArrayAttr({"dp"}));
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        seed(function, mesh);
    if (seedFailed)
      signalPassFailure();
  }

  void seed(func::FuncOp function, dist::MeshOp mesh) {
    MLIRContext *context = function.getContext();
    StringRef attrName = dist::DistDialect::getShardingAttrName();
    auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    auto shardingWith = [&](int64_t rank, int64_t dim, StringRef axis,
                            int64_t blocks = 1) {
      SmallVector<Attribute> dims;
      SmallVector<int64_t> counts;
      for (int64_t d = 0; d < rank; ++d) {
        dims.push_back(builder().getArrayAttr(
            d == dim ? ArrayRef<Attribute>{builder().getStringAttr(axis)}
                     : ArrayRef<Attribute>{}));
        counts.push_back(d == dim ? blocks : 1);
      }
      if (blocks == 1)
        counts.clear();
      return dist::ShardingAttr::get(context, meshRef,
                                     ArrayAttr::get(context, dims),
                                     ArrayAttr::get(context, {}), counts);
    };
    bool hasRoles = false;
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      hasRoles |= bool(function.getArgAttr(i, TrnDialect::getRoleAttrName()));

    // Data parallelism: batch inputs split on their first dimension.
    if (mesh.sizeOf("dp").value_or(1) > 1)
      for (unsigned i = 0; i < function.getNumArguments(); ++i) {
        auto role = function.getArgAttrOfType<StringAttr>(
            i, TrnDialect::getRoleAttrName());
        auto type = cast<RankedTensorType>(function.getArgumentTypes()[i]);
        if (role && (role.getValue() == "data" || role.getValue() == "label") &&
            type.getRank() > 0 && !function.getArgAttr(i, attrName))
          function.setArgAttr(i, attrName,
                              shardingWith(type.getRank(), 0, "dp"));
      }

    if (mesh.sizeOf("tp").value_or(1) <= 1)
      return;
    if (sequenceParallel)
      splitNormRegions(function, mesh, meshRef);
    // Weight matmuls in program order.
    SmallVector<WeightUse> uses;
    llvm::DenseMap<Operation *, size_t> useOf;
    function.walk([&](DotGeneralOp dot) {
      if (auto use = weightUseOf(dot, hasRoles)) {
        useOf[dot] = uses.size();
        uses.push_back(*use);
      }
    });
    int64_t tpDegree = mesh.sizeOf("tp").value_or(1);
    // Column (true) or row (false) per weight argument: first decision wins.
    llvm::DenseMap<BlockArgument, bool> column;
    // Fused column-parallel weights: how many equal blocks their output
    // features are cut into.
    llvm::DenseMap<BlockArgument, int64_t> blocksOf;
    // A weight's first matmul in program order is its forward one; the
    // pairs are decided on those (a backward matmul's activation is a
    // gradient, which any forward value reaches through the backward pass).
    llvm::DenseMap<BlockArgument, Operation *> forwardUse;
    for (const WeightUse &use : uses)
      forwardUse.try_emplace(use.weight, use.dot);
    for (const WeightUse &use : uses) {
      if (forwardUse.lookup(use.weight) != use.dot)
        continue;
      // A row-parallel matmul's output is complete after its all-reduce:
      // it starts no pair (the next matmul begins a new one).
      auto decided = column.find(use.weight);
      if (decided != column.end() && !decided->second)
        continue;
      // Follow the result forward to the weight matmuls it feeds.
      SmallVector<Value> worklist{use.dot->getResult(0)};
      llvm::SetVector<Operation *> seen;
      SmallVector<const WeightUse *> reached;
      while (!worklist.empty()) {
        Value value = worklist.pop_back_val();
        for (Operation *user : value.getUsers()) {
          if (!seen.insert(user))
            continue;
          auto it = useOf.find(user);
          if (it != useOf.end()) {
            const WeightUse &next = uses[it->second];
            if (next.activation == value &&
                forwardUse.lookup(next.weight) == next.dot)
              reached.push_back(&next);
            continue; // a weight matmul ends the path
          }
          for (Value result : user->getResults())
            worklist.push_back(result);
        }
      }
      if (reached.empty()) {
        // An LM head: its output features (the vocabulary) are normalised
        // by a softmax or cross-entropy and reach no other weight matmul.
        // Megatron splits it on the vocabulary; the softmax then reduces
        // its max and sum over tp instead of gathering the logits.
        bool normalised = llvm::any_of(seen, [](Operation *op) {
          return isa<SoftmaxOp, LogSoftmaxOp, CrossEntropyOp>(op);
        });
        if (normalised)
          column.try_emplace(use.weight, true);
        continue;
      }
      // Grouped-query attention with fewer key/value heads than tp: the
      // projection's output features are viewed as [heads, head_dim] and
      // the heads do not split over tp, so the weight stays whole on every
      // rank (NxD replicates such kv heads) and the attention slices its
      // heads locally.
      int64_t outFeatures = cast<RankedTensorType>(use.weight.getType())
                                .getDimSize(1 - use.contractedDim);
      bool wholeHeads = true;
      for (Operation *op : seen)
        if (auto reshape = dyn_cast<ReshapeOp>(op)) {
          ArrayRef<int64_t> in =
              cast<RankedTensorType>(reshape.getOperand().getType()).getShape();
          ArrayRef<int64_t> out =
              cast<RankedTensorType>(reshape.getType()).getShape();
          // The features viewed as [..., heads, head_dim] (or, fused,
          // [3, heads, head_dim]) at the end of the result.
          // (A fused projection's q, k or v is one block of its features.)
          int64_t features = in.empty() ? 0 : in.back();
          if (in.empty() || out.size() < 2 || features <= 0 ||
              outFeatures % features != 0 || out.back() == features ||
              out.back() == 1 || out[out.size() - 2] == 1)
            continue;
          int64_t trailing = 1;
          bool viewed = false;
          for (size_t j = out.size(); j-- > 0;) {
            trailing *= out[j];
            if (trailing == features && out.size() - j >= 2)
              viewed = true;
            if (trailing >= features)
              break;
          }
          if (!viewed)
            continue;
          int64_t heads = out[out.size() - 2];
          if (heads % tpDegree == 0)
            continue;
          if (tpDegree % heads != 0) {
            // Neither split nor replicated evenly: Megatron's plan needs
            // tp to divide the heads (or, for kv heads, the heads tp).
            auto name = function.getArgAttrOfType<StringAttr>(
                use.weight.getArgNumber(), TrnDialect::getNameAttrName());
            reshape.emitError()
                << "tp=" << tpDegree << " does not divide " << heads << " heads"
                << (name ? " of '" + name.getValue().str() + "'"
                         : std::string())
                << "; choose a tp that divides the heads";
            seedFailed = true;
          }
          wholeHeads = false;
        }
      if (!wholeHeads) {
        // Pinned whole, so that propagation does not split it either.
        unsigned index = use.weight.getArgNumber();
        if (!function.getArgAttr(index, attrName))
          function.setArgAttr(index, attrName,
                              shardingWith(2, /*dim=*/-1, "tp"));
        continue;
      }
      column.try_emplace(use.weight, true);
      // A fused projection (GPT's QKV as one matmul) is cut into equal
      // blocks of its output features by slices on the last dimension:
      // each block is split on its own, so every rank holds whole heads
      // of q, k and v.
      int64_t features = cast<RankedTensorType>(use.weight.getType())
                             .getDimSize(1 - use.contractedDim);
      for (Operation *op : seen) {
        auto slice = dyn_cast<SliceOp>(op);
        if (!slice)
          continue;
        auto in = cast<RankedTensorType>(slice.getOperand().getType());
        auto out = cast<RankedTensorType>(slice.getType());
        int64_t last = in.getRank() - 1;
        int64_t block = out.getDimSize(last);
        if (in.getDimSize(last) != features || block == features ||
            block <= 0 || features % block != 0 ||
            slice.getStart()[last] % block != 0 ||
            slice.getStrides()[last] != 1)
          continue;
        blocksOf.try_emplace(use.weight, features / block);
      }
      for (const WeightUse *next : reached)
        column.try_emplace(next->weight, false);
    }
    // Vocabulary-parallel embeddings: a 2-D table looked up along its
    // first dimension is split on it (each rank looks up the ids in its
    // range; the partial lookups sum).
    int64_t tp = mesh.sizeOf("tp").value_or(1);
    function.walk([&](GatherOp gather) {
      auto table = dyn_cast<BlockArgument>(gather.getOperand());
      if (!table || gather.getAxis() != 0 || gather.getBatchDims() != 0)
        return;
      // Token ids from the batch, not positions from an iota: Megatron
      // splits the word embedding, not the (small) position table.
      Value ids = gather.getIndices();
      while (isa_and_nonnull<ReshapeOp, ConvertOp>(ids.getDefiningOp()))
        ids = ids.getDefiningOp()->getOperand(0);
      auto idsArgument = dyn_cast<BlockArgument>(ids);
      auto idsRole = idsArgument ? function.getArgAttrOfType<StringAttr>(
                                       idsArgument.getArgNumber(),
                                       TrnDialect::getRoleAttrName())
                                 : StringAttr();
      if (!idsArgument ||
          (hasRoles && (!idsRole || idsRole.getValue() != "data")))
        return;
      auto type = cast<RankedTensorType>(table.getType());
      unsigned index = table.getArgNumber();
      auto role = function.getArgAttrOfType<StringAttr>(
          index, TrnDialect::getRoleAttrName());
      if (type.getRank() != 2 || type.isDynamicDim(0) ||
          type.getDimSize(0) % tp != 0 ||
          function.getArgAttr(index, attrName) ||
          (hasRoles && (!role || role.getValue() != "parameter")))
        return;
      function.setArgAttr(index, attrName, shardingWith(2, 0, "tp"));
    });
    for (const WeightUse &use : uses) {
      auto it = column.find(use.weight);
      unsigned index = use.weight.getArgNumber();
      if (it == column.end() || function.getArgAttr(index, attrName))
        continue;
      int64_t splitDim = it->second ? 1 - use.contractedDim : use.contractedDim;
      int64_t blocks =
          std::max<int64_t>(it->second ? blocksOf.lookup(use.weight) : 0, 1);
      // A dimension tp does not divide (GPT-2's 50,257-word LM head at
      // tp = 8) stays whole: never an error (padding it is future work).
      int64_t size =
          cast<RankedTensorType>(use.weight.getType()).getDimSize(splitDim);
      if (ShapedType::isDynamic(size) || size % blocks != 0 ||
          (size / blocks) % tpDegree != 0)
        continue;
      function.setArgAttr(index, attrName,
                          shardingWith(2, splitDim, "tp", blocks));
    }
  }

  /// Sequence parallelism: each norm's [batch, sequence, hidden] input
  /// split on the sequence over tp (a constraint propagation spreads over
  /// the residual stream and dist-spmd turns into all-gathers before the
  /// column-parallel matmuls and reduce-scatters after the row-parallel
  /// ones).
  void splitNormRegions(func::FuncOp function, dist::MeshOp mesh,
                        FlatSymbolRefAttr meshRef) {
    MLIRContext *context = function.getContext();
    int64_t tp = mesh.sizeOf("tp").value_or(1);
    SmallVector<std::pair<Operation *, unsigned>> inputs;
    function.walk([&](Operation *op) {
      // Over the last dimension of [batch, sequence, hidden], or of
      // [tokens, hidden] (batch and sequence merged).
      auto overHidden = [](Value input, int64_t axis) {
        int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
        return (rank == 2 || rank == 3) && axis == rank - 1;
      };
      if (auto norm = dyn_cast<LayerNormOp>(op)) {
        if (overHidden(norm.getInput(), norm.getAxis()))
          inputs.push_back({op, 0});
      } else if (auto norm = dyn_cast<RmsNormOp>(op)) {
        if (overHidden(norm.getInput(), norm.getAxis()))
          inputs.push_back({op, 0});
      } else if (auto reduce = dyn_cast<ReduceOp>(op)) {
        // A norm written out (Llama's x * rsqrt(mean(x^2))): its statistic
        // sums the hidden dimension of a [batch, sequence, hidden] tensor.
        if (reduce.getKind() == ReduceKind::sum &&
            reduce.getDims() == ArrayRef<int64_t>{2} &&
            cast<RankedTensorType>(reduce.getOperand().getType()).getRank() ==
                3)
          inputs.push_back({op, 0});
      }
    });
    auto tpAxis = ArrayAttr::get(context, {StringAttr::get(context, "tp")});
    auto none = ArrayAttr::get(context, {});
    for (auto [op, index] : inputs) {
      Value input = op->getOperand(index);
      auto type = cast<RankedTensorType>(input.getType());
      int64_t dp = mesh.sizeOf("dp").value_or(1);
      // What dp divides: nothing when it is a replica axis.
      const int64_t dpSplit = dist::isReplicaAxis(mesh, "dp") ? 1 : dp;
      auto dpAxis = StringAttr::get(context, "dp");
      auto tpName = StringAttr::get(context, "tp");
      ArrayAttr dims;
      if (type.getRank() == 3) {
        if (type.isDynamicDim(1) || type.getDimSize(1) % tp != 0)
          continue;
        // The batch keeps its data-parallel split.
        auto batch =
            dp > 1 && !type.isDynamicDim(0) && type.getDimSize(0) % dpSplit == 0
                ? ArrayAttr::get(context, {dpAxis})
                : none;
        dims = ArrayAttr::get(context, {batch, tpAxis, none});
      } else if (type.getRank() == 2) {
        // [tokens, hidden]: batch-major tokens, split over dp then tp.
        int64_t parts = tp * (dp > 1 ? dpSplit : 1);
        if (type.isDynamicDim(0) || type.getDimSize(0) % parts != 0)
          continue;
        SmallVector<Attribute> axes;
        if (dp > 1)
          axes.push_back(dpAxis);
        axes.push_back(tpName);
        dims = ArrayAttr::get(context, {ArrayAttr::get(context, axes), none});
      } else {
        continue;
      }
      OpBuilder builder(op);
      auto sharding = dist::ShardingAttr::get(context, meshRef, dims, none);
      auto constraint = builder.create<dist::ShardingConstraintOp>(
          op->getLoc(), type, input, sharding);
      op->setOperand(index, constraint.getResult());
    }
  }

  Builder &builder() {
    if (!builderStorage)
      builderStorage.emplace(&getContext());
    return *builderStorage;
  }
  std::optional<Builder> builderStorage;
  /// A mesh the graph cannot take (reported where it shows).
  bool seedFailed = false;
};

} // namespace
