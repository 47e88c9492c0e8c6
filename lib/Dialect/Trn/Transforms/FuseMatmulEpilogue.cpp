//===- FuseMatmulEpilogue.cpp - a matmul and the group that reads it ------===//
//
// See the pass description in Passes.td. A trn.dot_general whose result a
// trn.fusion group reads tile for tile becomes the group's first op: the
// backend applies the group to each result tile on its way out of PSUM
// instead of storing the matmul's result and loading it back.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"
#include "trn/Dialect/Trn/Utils/FusionLayout.h"
#include "trn/Dialect/Trn/Utils/MatmulForm.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNFUSEMATMULEPILOGUE
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

constexpr int64_t kPartitions = 128;

Type elementTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

/// The dims [0, n).
SmallVector<int64_t> leadingDims(int64_t n) {
  return llvm::to_vector(llvm::seq<int64_t>(0, n));
}

/// Whether the group rotates rows (trn.rotate_half): its tiles need them
/// whole.
bool rotatesRows(FusionOp group) {
  return llvm::any_of(group.getBody().front(),
                      [](Operation &op) { return isa<RotateHalfOp>(op); });
}

/// A group at `group`'s place with its body (moved), yielding `yielded`
/// (values of that body) instead; `group` is left empty for the caller to
/// replace and erase.
FusionOp regroup(FusionOp group, ArrayRef<Value> yielded) {
  OpBuilder builder(group);
  SmallVector<Type> types;
  for (Value value : yielded)
    types.push_back(value.getType());
  auto fused =
      builder.create<FusionOp>(group.getLoc(), types, group.getInputs());
  fused->setDiscardableAttrs(group->getDiscardableAttrDictionary());
  Operation *oldYield = group.getBody().front().getTerminator();
  fused.getBody().takeBody(group.getBody());
  builder.setInsertionPoint(oldYield);
  builder.create<YieldOp>(oldYield->getLoc(), yielded);
  oldYield->erase();
  return fused;
}

/// Whether the backend computes each row block of the matmul's result
/// whole (trn::matmulYieldsWholeRows): its epilogue may then reduce rows.
bool yieldsWholeRows(DotGeneralOp dot) {
  auto lhsType = cast<RankedTensorType>(dot.getLhs().getType());
  auto resultType = cast<RankedTensorType>(dot.getType());
  if (!lhsType.hasStaticShape() || !resultType.hasStaticShape() ||
      dot.getLhsContractingDims().size() != 1)
    return false;
  int64_t k = lhsType.getDimSize(dot.getLhsContractingDims()[0]);
  int64_t inBytes = (lhsType.getElementTypeBitWidth() + 7) / 8;
  return matmulYieldsWholeRows(k, resultType.getShape().back(), inBytes);
}

/// Why `fusion` cannot take `dot` (whose result its block argument `arg`
/// is) as its first op; empty when it can.
std::string epilogueBlocker(DotGeneralOp dot, FusionOp fusion,
                            BlockArgument arg) {
  auto lhsType = cast<RankedTensorType>(dot.getLhs().getType());
  auto rhsType = cast<RankedTensorType>(dot.getRhs().getType());
  if (!isMatmulForm(lhsType.getRank(), rhsType.getRank(),
                    dot.getLhsBatchingDims(), dot.getRhsBatchingDims(),
                    dot.getLhsContractingDims(), dot.getRhsContractingDims()))
    return "the matmul is not in the form the backend lowers";
  if (!lhsType.hasStaticShape() || !rhsType.hasStaticShape())
    return "dynamic shapes";
  ArrayRef<int64_t> full = shapeOf(dot.getResult());
  ArrayRef<int64_t> row = full.drop_back();
  Block &body = fusion.getBody().front();
  bool wholeRows = yieldsWholeRows(dot);
  for (Operation &op : body) {
    if (isa<DotGeneralOp>(op))
      return "the group already has a matmul";
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (!wholeRows)
        return "the group reduces rows, which a result tile does not hold";
      int64_t rank = full.size();
      bool alongRows = reduce.getDims() == ArrayRef<int64_t>{rank - 1} &&
                       reduce.getKind() != ReduceKind::prod;
      bool overRows = rank == 2 && reduce.getDims() == ArrayRef<int64_t>{0} &&
                      reduce.getKind() == ReduceKind::sum;
      // (A sum over rows is only yielded, of f32: the backend keeps its
      // running total as the row blocks come.)
      overRows &= elementTypeOf(reduce.getOperand()).isF32() &&
                  elementTypeOf(reduce.getResult()).isF32() &&
                  llvm::all_of(reduce->getUsers(), [](Operation *user) {
                    return isa<YieldOp>(user);
                  });
      if (shapeOf(reduce.getOperand()) != full || (!alongRows && !overRows))
        return "the group reduces another way than along or over the "
               "matmul's rows";
      continue;
    }
    if (isa<RotateHalfOp>(op))
      return "the group rotates rows, which a result tile does not hold";
    for (Value result : op.getResults())
      if (shapeOf(result) != full && shapeOf(result) != row)
        return "the group computes another shape than the matmul's";
  }
  // The matmul's result is read as it is, tile for tile.
  for (Operation *user : arg.getUsers())
    if (isa<BroadcastInDimOp>(user))
      return "the group broadcasts the matmul's result";
  if (llvm::count(fusion.getInputs(), dot.getResult()) != 1)
    return "the group reads the matmul's result twice";
  // Every other input is read through a DMA window per result tile; a tile
  // (up to 128 rows of one batch) must lie inside one row block.
  int64_t batchRank = dot.getLhsBatchingDims().size();
  int64_t rows = full[full.size() - 2];
  int64_t batches = 1;
  for (int64_t d : full.take_front(batchRank))
    batches *= d;
  auto tilesFit = [&](const BroadcastAccess &access) {
    if (access.rowBlock <= 0)
      return false;
    for (int64_t batch = 0; batch < batches; ++batch)
      for (int64_t m0 = 0; m0 < rows; m0 += kPartitions) {
        int64_t first = batch * rows + m0;
        int64_t last = first + std::min(kPartitions, rows - m0) - 1;
        if (first / access.rowBlock != last / access.rowBlock)
          return false;
      }
    return true;
  };
  for (BlockArgument input : body.getArguments()) {
    if (input == arg)
      continue;
    for (Operation *user : input.getUsers()) {
      BroadcastAccess access;
      if (auto broadcast = dyn_cast<BroadcastInDimOp>(user)) {
        if (shapeOf(broadcast.getResult()) != full)
          return "the group broadcasts an input to another shape";
        access =
            computeBroadcastAccess(shapeOf(input), broadcast.getDims(), full);
      } else if (shapeOf(input) == full || shapeOf(input) == row) {
        access = computeBroadcastAccess(
            shapeOf(input), leadingDims(shapeOf(input).size()), full);
      } else {
        return "the group reads an input of another shape";
      }
      if (!tilesFit(access))
        return "an input's rows cannot be read per result tile";
    }
  }
  return "";
}

/// Where the fused op goes: at the group when nothing between the matmul
/// and the group uses the matmul's result (the matmul moves down), else at
/// the matmul when every other input of the group is defined before it.
Operation *insertionPoint(DotGeneralOp dot, FusionOp fusion,
                          DominanceInfo &dominance) {
  // (A user in another block counts as before: the matmul stays put.)
  bool usedBefore = llvm::any_of(dot->getUsers(), [&](Operation *user) {
    return user != fusion && (user->getBlock() != fusion->getBlock() ||
                              !fusion->isBeforeInBlock(user));
  });
  if (!usedBefore)
    return fusion;
  for (Value input : fusion.getInputs())
    if (input != dot.getResult() && !dominance.properlyDominates(input, dot))
      return nullptr;
  return dot;
}

void fuse(DotGeneralOp dot, FusionOp fusion, Operation *at) {
  OpBuilder builder(at);
  Block &oldBody = fusion.getBody().front();
  SmallVector<Value> inputs{dot.getLhs(), dot.getRhs()};
  for (Value input : fusion.getInputs())
    if (input != dot.getResult())
      inputs.push_back(input);
  bool resultLives = llvm::any_of(
      dot->getUsers(), [&](Operation *user) { return user != fusion; });
  SmallVector<Type> resultTypes(fusion.getResultTypes());
  if (resultLives)
    resultTypes.push_back(dot.getType());

  auto fused = builder.create<FusionOp>(fusion.getLoc(), resultTypes, inputs);
  fused->setDiscardableAttrs(fusion->getDiscardableAttrDictionary());
  Block *body = builder.createBlock(&fused.getBody());
  IRMapping mapping;
  for (Value input : inputs)
    body->addArgument(input.getType(), input.getLoc());
  mapping.map(dot.getLhs(), body->getArgument(0));
  mapping.map(dot.getRhs(), body->getArgument(1));
  Operation *innerDot = builder.clone(*dot, mapping);
  unsigned next = 2;
  for (auto [input, oldArg] :
       llvm::zip(fusion.getInputs(), oldBody.getArguments()))
    mapping.map(oldArg, input == dot.getResult()
                            ? Value(innerDot->getResult(0))
                            : Value(body->getArgument(next++)));
  auto oldYield = cast<YieldOp>(oldBody.getTerminator());
  for (Operation &op : oldBody.without_terminator())
    builder.clone(op, mapping);
  SmallVector<Value> yielded;
  for (Value value : oldYield.getValues())
    yielded.push_back(mapping.lookup(value));
  if (resultLives)
    yielded.push_back(innerDot->getResult(0));
  builder.create<YieldOp>(oldYield.getLoc(), yielded);

  for (auto [oldResult, newResult] :
       llvm::zip(fusion.getResults(), fused.getResults()))
    oldResult.replaceAllUsesWith(newResult);
  if (resultLives)
    dot.getResult().replaceAllUsesExcept(fused.getResults().back(), fusion);
  fusion.erase();
  dot.erase();
}

/// A new group with `like`'s attributes at the builder's place, its block
/// arguments mapping `args` (values of the old body), the builder left at
/// the start of its body.
FusionOp createGroup(OpBuilder &builder, FusionOp like, TypeRange types,
                     ValueRange inputs, ArrayRef<Value> args,
                     IRMapping &mapping) {
  auto group = builder.create<FusionOp>(like.getLoc(), types, inputs);
  group->setDiscardableAttrs(like->getDiscardableAttrDictionary());
  Block *body = builder.createBlock(&group.getBody());
  for (Value value : args)
    mapping.map(value, body->addArgument(value.getType(), value.getLoc()));
  return group;
}

/// A group that reads a matmul's result but also reduces rows (a layer norm
/// after a projection, bias and residual) gives the elementwise ops that
/// the result flows into before any reduction (its prefix) a group of their
/// own, which becomes the matmul's epilogue; the rest reads the prefix's
/// values instead of the matmul's result. Done when the prefix hands on no
/// more bytes than the result (so no traffic is added) and the new group
/// can be an epilogue; returns the prefix group, or null.
FusionOp splitElementwisePrefix(DotGeneralOp dot, FusionOp fusion,
                                BlockArgument arg) {
  Block &body = fusion.getBody().front();
  ArrayRef<int64_t> full = shapeOf(dot.getResult());
  auto isBlockInput = [&](Value value) {
    auto input = dyn_cast<BlockArgument>(value);
    return input && input.getOwner() == &body && input != arg;
  };
  // Operands a prefix op may take besides the result and other prefix
  // values: the group's other inputs, broadcasts of them and constants
  // (cloned into the prefix group).
  auto isAvailable = [&](Value value) {
    if (isBlockInput(value))
      return true;
    Operation *def = value.getDefiningOp();
    if (auto broadcast = dyn_cast_or_null<BroadcastInDimOp>(def))
      return isBlockInput(broadcast.getOperand());
    return isa_and_nonnull<ConstantOp>(def);
  };
  llvm::SetVector<Operation *> prefix;
  llvm::DenseSet<Value> prefixValues{arg};
  for (Operation &op : body.without_terminator()) {
    if (isa<ReduceOp, BroadcastInDimOp, ConstantOp, DotGeneralOp, RotateHalfOp>(
            op) ||
        op.getNumResults() != 1 || shapeOf(op.getResult(0)) != full)
      continue;
    bool readsPrefix = false, ready = true;
    for (Value operand : op.getOperands()) {
      if (prefixValues.contains(operand))
        readsPrefix = true;
      else if (!isAvailable(operand))
        ready = false;
    }
    if (!readsPrefix || !ready)
      continue;
    prefix.insert(&op);
    prefixValues.insert(op.getResult(0));
  }
  if (prefix.empty() || llvm::any_of(arg.getUsers(), [&](Operation *user) {
        return !prefix.contains(user);
      }))
    return nullptr;
  // The values the rest reads or the group yields.
  SmallVector<Value> handedOn;
  int64_t handedBytes = 0;
  for (Operation *op : prefix) {
    Value value = op->getResult(0);
    if (llvm::any_of(value.getUsers(),
                     [&](Operation *user) { return !prefix.contains(user); })) {
      handedOn.push_back(value);
      handedBytes += tensorBytes(value.getType());
    }
  }
  if (handedOn.empty() || handedBytes > tensorBytes(dot.getType()))
    return nullptr;

  // The prefix group, at the group's place.
  OpBuilder builder(fusion);
  SmallVector<BlockArgument> prefixArgs{arg};
  auto noteArg = [&](Value value) {
    if (auto broadcast = value.getDefiningOp<BroadcastInDimOp>())
      value = broadcast.getOperand();
    if (auto input = dyn_cast<BlockArgument>(value);
        input && input.getOwner() == &body &&
        !llvm::is_contained(prefixArgs, input))
      prefixArgs.push_back(input);
  };
  for (Operation *op : prefix)
    for (Value operand : op->getOperands())
      noteArg(operand);
  SmallVector<Value> prefixInputs;
  for (BlockArgument input : prefixArgs)
    prefixInputs.push_back(fusion.getInputs()[input.getArgNumber()]);
  SmallVector<Type> handedTypes;
  for (Value value : handedOn)
    handedTypes.push_back(value.getType());
  FusionOp head;
  {
    OpBuilder::InsertionGuard guard(builder);
    IRMapping mapping;
    head = createGroup(builder, fusion, handedTypes, prefixInputs,
                       SmallVector<Value>(prefixArgs.begin(), prefixArgs.end()),
                       mapping);
    for (Operation *op : prefix) {
      for (Value operand : op->getOperands())
        if (!mapping.contains(operand))
          builder.clone(*operand.getDefiningOp(), mapping);
      builder.clone(*op, mapping);
    }
    SmallVector<Value> yielded;
    for (Value value : handedOn)
      yielded.push_back(mapping.lookup(value));
    builder.create<YieldOp>(fusion.getLoc(), yielded);
  }
  if (!epilogueBlocker(dot, head, head.getBody().front().getArgument(0))
           .empty()) {
    head.erase();
    return nullptr;
  }

  // The rest: the group without the prefix, reading the handed-on values.
  auto oldYield = cast<YieldOp>(body.getTerminator());
  llvm::DenseSet<Operation *> live;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (prefix.contains(&op))
      continue;
    bool used = llvm::any_of(op.getUsers(), [&](Operation *user) {
      return live.contains(user) || user == oldYield;
    });
    if (used)
      live.insert(&op);
  }
  auto readByRest = [&](Value value) {
    return llvm::any_of(value.getUsers(),
                        [&](Operation *user) { return live.contains(user); });
  };
  SmallVector<Value> restInputs, restArgs;
  for (BlockArgument input : body.getArguments())
    if (readByRest(input)) {
      restInputs.push_back(fusion.getInputs()[input.getArgNumber()]);
      restArgs.push_back(input);
    }
  for (auto [value, result] : llvm::zip(handedOn, head.getResults()))
    if (readByRest(value)) {
      restInputs.push_back(result);
      restArgs.push_back(value);
    }
  SmallVector<Value> restYielded;
  SmallVector<Type> restTypes;
  for (Value value : oldYield.getValues())
    if (!prefixValues.contains(value)) {
      restYielded.push_back(value);
      restTypes.push_back(value.getType());
    }
  FusionOp rest;
  if (!restYielded.empty()) {
    OpBuilder::InsertionGuard guard(builder);
    IRMapping mapping;
    rest =
        createGroup(builder, fusion, restTypes, restInputs, restArgs, mapping);
    for (Operation &op : body.without_terminator())
      if (live.contains(&op))
        builder.clone(op, mapping);
    SmallVector<Value> yielded;
    for (Value value : restYielded)
      yielded.push_back(mapping.lookup(value));
    builder.create<YieldOp>(oldYield.getLoc(), yielded);
  }
  unsigned restIndex = 0;
  for (auto [result, value] :
       llvm::zip(fusion.getResults(), oldYield.getValues())) {
    if (prefixValues.contains(value)) {
      auto *at = llvm::find(handedOn, value);
      result.replaceAllUsesWith(head.getResult(at - handedOn.begin()));
    } else {
      result.replaceAllUsesWith(rest.getResult(restIndex++));
    }
  }
  fusion.erase();
  return head;
}

/// `from` (a group before `into`) merged into `into`: one group at
/// `into`'s place computing both, yielding `into`'s results then `from`'s
/// (what `into` read of them it now computes). Null (nothing changed) when
/// something else before `into` uses `from`'s results.
FusionOp mergeSibling(FusionOp into, FusionOp from) {
  Block *block = into->getBlock();
  if (from->getBlock() != block || !from->isBeforeInBlock(into))
    return nullptr;
  for (Value result : from.getResults())
    for (Operation *user : result.getUsers()) {
      Operation *at = block->findAncestorOpInBlock(*user);
      if (!at || (at != into && !into->isBeforeInBlock(at)))
        return nullptr;
    }
  auto isFromResult = [&](Value value) {
    return value.getDefiningOp() == from.getOperation();
  };
  SmallVector<Value> inputs;
  for (FusionOp group : {into, from})
    for (Value input : group.getInputs())
      if (!isFromResult(input) && !llvm::is_contained(inputs, input))
        inputs.push_back(input);
  SmallVector<Type> types(into.getResultTypes());
  llvm::append_range(types, from.getResultTypes());
  OpBuilder builder(into);
  auto merged = builder.create<FusionOp>(into.getLoc(), types, inputs);
  merged->setDiscardableAttrs(into->getDiscardableAttrDictionary());
  Block *body = builder.createBlock(&merged.getBody());
  for (Value input : inputs)
    body->addArgument(input.getType(), input.getLoc());
  IRMapping mapping;
  SmallVector<Value> yielded;
  Block &fromBody = from.getBody().front();
  for (FusionOp group : {from, into}) {
    Block &groupBody = group.getBody().front();
    for (auto [input, arg] :
         llvm::zip(group.getInputs(), groupBody.getArguments()))
      mapping.map(
          arg,
          isFromResult(input)
              ? mapping.lookup(fromBody.getTerminator()->getOperand(
                    cast<OpResult>(input).getResultNumber()))
              : body->getArgument(llvm::find(inputs, input) - inputs.begin()));
    for (Operation &op : groupBody.without_terminator())
      builder.clone(op, mapping);
  }
  for (FusionOp group : {into, from})
    for (Value value :
         cast<YieldOp>(group.getBody().front().getTerminator()).getValues())
      yielded.push_back(mapping.lookup(value));
  builder.create<YieldOp>(into.getLoc(), yielded);
  unsigned intoResults = into.getNumResults();
  for (auto [index, result] : llvm::enumerate(into.getResults()))
    result.replaceAllUsesWith(merged.getResult(index));
  for (auto [index, result] : llvm::enumerate(from.getResults()))
    result.replaceAllUsesWith(merged.getResult(intoResults + index));
  into.erase();
  from.erase();
  return merged;
}

/// Whether the group reduces along its rows (a norm's statistics): its
/// tiles hold whole rows, and only sums over rows may join it.
bool reducesRows(FusionOp group) {
  return llvm::any_of(group.getBody().front(),
                      [](Operation &op) { return isa<ReduceOp>(op); });
}

/// Sums over rows (dims [0]) of a group's [M, N] f32 results (a bias's
/// gradient) join the group: the backend adds each result tile into a
/// running [128, N] total as it is computed (as it leaves the matmul, for an
/// epilogue) and sums the partitions once per column block, instead of
/// reading the whole result back. A group that reduces along rows keeps its
/// sums apart when its rows are wider than kMaxWholeRowSumColumns.
///
/// The [M, N] shape of a group that reductions may join (its matmul's, else
/// its largest value's), or none: a matmul that batches, a rotation, or not
/// 2-D.
std::optional<SmallVector<int64_t>> joinableShape(FusionOp group) {
  Block &body = group.getBody().front();
  auto dot = dyn_cast<DotGeneralOp>(body.front());
  if ((dot && !dot.getLhsBatchingDims().empty()) || rotatesRows(group))
    return std::nullopt;
  SmallVector<int64_t> full;
  int64_t largest = -1;
  auto consider = [&](Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getNumElements() > largest) {
      largest = type.getNumElements();
      full.assign(type.getShape().begin(), type.getShape().end());
    }
  };
  if (dot) {
    consider(dot.getResult());
  } else {
    for (Value input : body.getArguments())
      consider(input);
    for (Operation &op : body)
      for (Value result : op.getResults())
        consider(result);
  }
  if (full.size() != 2)
    return std::nullopt;
  return full;
}

/// Whether a reduction of `value` (f32 [M, N] of a group of shape `full`)
/// can join the group: a sum over rows (dims [0]), or, of a result, a sum,
/// max or min along them (dims [1]), into f32.
bool reductionJoins(ReduceKind kind, ArrayRef<int64_t> dims, Value value,
                    Type resultType, ArrayRef<int64_t> full, bool isInput) {
  auto type = cast<RankedTensorType>(value.getType());
  bool columnSum = kind == ReduceKind::sum && dims == ArrayRef<int64_t>{0};
  bool rowReduction =
      !isInput && kind != ReduceKind::prod && dims == ArrayRef<int64_t>{1};
  return (columnSum || rowReduction) && type.getShape() == full &&
         type.getElementType().isF32() &&
         cast<RankedTensorType>(resultType).getElementType().isF32();
}

void absorbColumnSums(FusionOp group) {
  std::optional<SmallVector<int64_t>> full = joinableShape(group);
  if (!full)
    return;
  auto dot = dyn_cast<DotGeneralOp>(group.getBody().front().front());
  bool rowsReduced = reducesRows(group);
  SmallVector<ReduceOp> sums;
  auto collect = [&](Value value, bool isInput) {
    for (Operation *user : value.getUsers()) {
      auto reduce = dyn_cast<ReduceOp>(user);
      if (!reduce || reduce->getBlock() != group->getBlock() ||
          llvm::is_contained(sums, reduce) ||
          !reductionJoins(reduce.getKind(), reduce.getDims(), value,
                          reduce.getType(), *full, isInput) ||
          (rowsReduced && (reduce.getDims() != ArrayRef<int64_t>{0} ||
                           full->back() > kMaxWholeRowSumColumns)))
        continue;
      // A sum of an input the group reads anyway (a gradient a cast also
      // reads) is taken from the group's tiles when nothing needs it
      // earlier.
      if (isInput && (reduce->isBeforeInBlock(group) ||
                      llvm::any_of(reduce->getUsers(), [&](Operation *sumUser) {
                        Operation *at =
                            group->getBlock()->findAncestorOpInBlock(*sumUser);
                        return !at || !group->isBeforeInBlock(at);
                      })))
        continue;
      sums.push_back(reduce);
    }
  };
  for (Value result : group.getResults())
    collect(result, /*isInput=*/false);
  for (Value input : group.getInputs())
    if (!dot || (input != dot.getLhs() && input != dot.getRhs()))
      collect(input, /*isInput=*/true);
  if (sums.empty())
    return;
  // Results only the sums read are no longer stored.
  SmallVector<unsigned> kept;
  for (OpResult result : group->getResults())
    if (llvm::any_of(result.getUsers(), [&](Operation *user) {
          auto reduce = dyn_cast<ReduceOp>(user);
          return !reduce || !llvm::is_contained(sums, reduce);
        }))
      kept.push_back(result.getResultNumber());
  Block &body = group.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  SmallVector<Value> yielded;
  for (unsigned index : kept)
    yielded.push_back(yield.getValues()[index]);
  OpBuilder builder(yield);
  for (ReduceOp reduce : sums) {
    Value inner;
    if (auto result = dyn_cast<OpResult>(reduce.getOperand());
        result && result.getOwner() == group)
      inner = yield.getValues()[result.getResultNumber()];
    else
      inner =
          body.getArgument(llvm::find(group.getInputs(), reduce.getOperand()) -
                           group.getInputs().begin());
    yielded.push_back(builder.create<ReduceOp>(
        reduce.getLoc(), reduce.getType(), reduce.getKindAttr(), inner,
        reduce.getDimsAttr()));
  }
  FusionOp fused = regroup(group, yielded);
  for (auto [position, index] : llvm::enumerate(kept))
    group.getResult(index).replaceAllUsesWith(fused.getResult(position));
  for (auto [position, reduce] : llvm::enumerate(sums)) {
    reduce.getResult().replaceAllUsesWith(
        fused.getResult(kept.size() + position));
    reduce.erase();
  }
  group.erase();
}

/// A group that reduces rows of a matmul's result (a layer norm after a
/// projection and its residual, or its backward after the input gradient)
/// takes the matmul whole when the backend yields the result a whole row
/// block at a time (trn::matmulYieldsWholeRows), together with the other
/// elementwise groups that read the result (merged into it): the result
/// then never goes through HBM. Split into an epilogue and the rest, the
/// result (fp32) was written and read back: 16 MB per norm of a BERT-large
/// layer.
void fuseWholeRowEpilogues(func::FuncOp function) {
  SmallVector<FusionOp> reducing;
  function.walk([&](FusionOp fusion) {
    Block &body = fusion.getBody().front();
    if (!isa<DotGeneralOp>(body.front()) && reducesRows(fusion) &&
        !rotatesRows(fusion))
      reducing.push_back(fusion);
  });
  for (FusionOp group : reducing) {
    DotGeneralOp dot;
    for (Value input : group.getInputs()) {
      auto candidate = input.getDefiningOp<DotGeneralOp>();
      if (candidate && candidate->getBlock() == group->getBlock() &&
          yieldsWholeRows(candidate) &&
          llvm::count(group.getInputs(), input) == 1) {
        dot = candidate;
        break;
      }
    }
    if (!dot)
      continue;
    llvm::SetVector<FusionOp> siblings;
    for (Operation *user : dot->getUsers()) {
      auto sibling = dyn_cast<FusionOp>(user);
      if (sibling && sibling != group && !reducesRows(sibling) &&
          !isa<DotGeneralOp>(sibling.getBody().front().front()) &&
          !rotatesRows(sibling))
        siblings.insert(sibling);
    }
    for (FusionOp sibling : siblings)
      if (FusionOp merged = mergeSibling(group, sibling))
        group = merged;
    BlockArgument arg = group.getBody().front().getArgument(
        llvm::find(group.getInputs(), dot.getResult()) -
        group.getInputs().begin());
    if (!epilogueBlocker(dot, group, arg).empty())
      continue;
    DominanceInfo dominance(function);
    if (Operation *at = insertionPoint(dot, group, dominance))
      fuse(dot, group, at);
  }
}

/// A group that only sums exp(x - max(x)) along the rows of an epilogue's
/// results x and max(x) (a softmax's or cross-entropy's normaliser over
/// logits too wide for a row block to come whole) joins the epilogue, which
/// yields the sum too: the backend keeps a running sum rescaled whenever the
/// running max grows (online softmax), instead of the group reading every
/// logit back. The MLM head's [2048, 30522] fp32 logits: 250 MB. Returns
/// the group absorbed (erased), or null.
Operation *absorbExpSums(FusionOp group) {
  Block &body = group.getBody().front();
  if (!isa<DotGeneralOp>(body.front()))
    return nullptr;
  auto yield = cast<YieldOp>(body.getTerminator());
  ArrayRef<int64_t> full = shapeOf(body.front().getResult(0));
  if (full.size() != 2)
    return nullptr;
  for (OpResult maxResult : group->getResults()) {
    auto max = yield.getValues()[maxResult.getResultNumber()]
                   .getDefiningOp<ReduceOp>();
    if (!max || max.getKind() != ReduceKind::max ||
        max.getDims() != ArrayRef<int64_t>{1} ||
        !elementTypeOf(max.getResult()).isF32())
      continue;
    Value logits = max.getOperand();
    auto logitsAt = llvm::find(yield.getValues(), logits);
    if (logitsAt == yield.getValues().end())
      continue;
    OpResult logitsResult =
        group->getResult(logitsAt - yield.getValues().begin());
    for (Operation *user : llvm::make_early_inc_range(maxResult.getUsers())) {
      auto sums = dyn_cast<FusionOp>(user);
      if (!sums || sums->getBlock() != group->getBlock() ||
          sums.getInputs().size() != 2 || sums.getNumResults() != 1)
        continue;
      Block &sumsBody = sums.getBody().front();
      auto inputs = sums.getInputs();
      BlockArgument xArg, maxArg;
      for (auto [input, arg] : llvm::zip(inputs, sumsBody.getArguments())) {
        if (input == logitsResult)
          xArg = arg;
        else if (input == maxResult)
          maxArg = arg;
      }
      auto sumsYield = cast<YieldOp>(sumsBody.getTerminator());
      auto sum = sumsYield.getValues()[0].getDefiningOp<ReduceOp>();
      std::optional<ShiftedExpSum> parts =
          sum ? matchShiftedExpSum(sum) : std::nullopt;
      // (The body holds nothing else: the broadcast, subtraction,
      // exponential, sum and yield.)
      if (!xArg || !maxArg || !parts || parts->sub.getLhs() != xArg ||
          parts->broadcast.getOperand() != maxArg ||
          std::distance(sumsBody.begin(), sumsBody.end()) != 5)
        continue;
      // The sum joins the epilogue, yielded after its results.
      OpBuilder builder(yield);
      IRMapping mapping;
      mapping.map(xArg, logits);
      mapping.map(maxArg, max.getResult());
      for (Operation &op : sumsBody.without_terminator())
        builder.clone(op, mapping);
      SmallVector<Value> yielded(yield.getValues());
      yielded.push_back(mapping.lookup(sum.getResult()));
      FusionOp fused = regroup(group, yielded);
      for (auto [oldResult, newResult] :
           llvm::zip(group.getResults(), fused.getResults()))
        oldResult.replaceAllUsesWith(newResult);
      sums.getResult(0).replaceAllUsesWith(fused.getResults().back());
      Operation *absorbed = sums.getOperation();
      sums.erase();
      group.erase();
      return absorbed;
    }
  }
  return nullptr;
}

struct FuseMatmulEpilogue
    : trn::impl::TrnFuseMatmulEpilogueBase<FuseMatmulEpilogue> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    fuseWholeRowEpilogues(function);
    // Groups that reduce rows hand their elementwise prefix to the matmul
    // they read first.
    SmallVector<FusionOp> reducing;
    function.walk([&](FusionOp fusion) { reducing.push_back(fusion); });
    for (FusionOp fusion : reducing) {
      Block &body = fusion.getBody().front();
      if (!llvm::any_of(body, [](Operation &op) { return isa<ReduceOp>(op); }))
        continue;
      for (auto [input, arg] :
           llvm::zip(fusion.getInputs(), body.getArguments())) {
        auto dot = input.getDefiningOp<DotGeneralOp>();
        if (dot && dot->getBlock() == fusion->getBlock() &&
            llvm::count(fusion.getInputs(), dot.getResult()) == 1 &&
            splitElementwisePrefix(dot, fusion, arg))
          break;
      }
    }
    SmallVector<FusionOp> fusions;
    function.walk([&](FusionOp fusion) { fusions.push_back(fusion); });
    DominanceInfo dominance(function);
    for (FusionOp fusion : fusions) {
      Block &body = fusion.getBody().front();
      for (auto [input, arg] :
           llvm::zip(fusion.getInputs(), body.getArguments())) {
        auto dot = input.getDefiningOp<DotGeneralOp>();
        // One group per matmul: a matmul already in a group is not seen
        // here, since its result is now that group's.
        if (!dot || dot->getBlock() != fusion->getBlock() ||
            !epilogueBlocker(dot, fusion, arg).empty())
          continue;
        Operation *at = insertionPoint(dot, fusion, dominance);
        if (!at)
          continue;
        fuse(dot, fusion, at);
        break;
      }
    }
    // A group of one reduction over an epilogue's result (trn-fuse-
    // elementwise groups row reductions) becomes a plain reduce again, for
    // the epilogue to take.
    SmallVector<FusionOp> lone;
    function.walk([&](FusionOp fusion) {
      Block &body = fusion.getBody().front();
      auto reduce = dyn_cast<ReduceOp>(body.front());
      auto producer = fusion.getInputs().size() == 1
                          ? fusion.getInputs()[0].getDefiningOp<FusionOp>()
                          : FusionOp();
      if (!reduce || fusion.getNumResults() != 1 ||
          std::next(body.begin()) != std::prev(body.end()) ||
          reduce.getOperand() != body.getArgument(0) ||
          body.getTerminator()->getOperand(0) != reduce.getResult() ||
          !producer || !isa<DotGeneralOp>(producer.getBody().front().front()))
        return;
      // Only a reduction the epilogue will take.
      std::optional<SmallVector<int64_t>> full = joinableShape(producer);
      if (full && reductionJoins(reduce.getKind(), reduce.getDims(),
                                 fusion.getInputs()[0], reduce.getType(), *full,
                                 /*isInput=*/false))
        lone.push_back(fusion);
    });
    for (FusionOp fusion : lone) {
      auto inner = cast<ReduceOp>(fusion.getBody().front().front());
      OpBuilder builder(fusion);
      auto reduce = builder.create<ReduceOp>(
          inner.getLoc(), inner.getType(), inner.getKindAttr(),
          fusion.getInputs()[0], inner.getDimsAttr());
      fusion.getResult(0).replaceAllUsesWith(reduce.getResult());
      fusion.erase();
    }
    SmallVector<FusionOp> groups;
    function.walk([&](FusionOp fusion) { groups.push_back(fusion); });
    for (FusionOp group : groups)
      absorbColumnSums(group);
    groups.clear();
    function.walk([&](FusionOp fusion) { groups.push_back(fusion); });
    llvm::SmallPtrSet<Operation *, 4> absorbed;
    for (FusionOp group : groups)
      if (!absorbed.contains(group.getOperation()))
        if (Operation *sums = absorbExpSums(group))
          absorbed.insert(sums);
  }
};

} // namespace
