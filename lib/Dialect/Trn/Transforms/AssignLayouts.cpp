//===- AssignLayouts.cpp - layouts that make transposes disappear ---------===//
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"
#include "trn/Dialect/Trn/Utils/MatmulForm.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Builders.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNASSIGNLAYOUTS
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

int64_t elementsOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

/// `x` when `value` is `trn.transpose x, perm = perm`, else null.
Value transposedFrom(Value value, ArrayRef<int64_t> perm) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  return transpose && transpose.getPerm() == perm ? transpose.getOperand()
                                                  : Value();
}

bool isTransposeWith(Operation *op, ArrayRef<int64_t> perm) {
  auto transpose = dyn_cast<TransposeOp>(op);
  return transpose && transpose.getPerm() == perm;
}

/// The operands and results of an attention op that carry its layout
/// (all but lse).
struct LayoutParts {
  SmallVector<unsigned> operands, results;
};

LayoutParts layoutParts(Operation *attention) {
  if (isa<AttentionOp>(attention))
    return {{0, 1, 2}, {0}};
  // attention_grad: query, key, value, output, (lse), grad_output.
  return {{0, 1, 2, 3, 5}, {0, 1, 2}};
}

class AssignLayoutsPass
    : public trn::impl::TrnAssignLayoutsBase<AssignLayoutsPass> {
public:
  void runOnOperation() override {
    SmallVector<Operation *> attentions;
    getOperation().walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionGradOp>(op))
        attentions.push_back(op);
    });
    // Forward ops come first, so a backward op sees the layout its forward
    // op took (through the transposes inserted for its other users).
    for (Operation *op : attentions)
      relayoutAttention(op);
    SmallVector<TransposeOp> transposes;
    getOperation().walk(
        [&](TransposeOp transpose) { transposes.push_back(transpose); });
    for (TransposeOp transpose : transposes)
      foldIntoDots(transpose);
    SmallVector<dist::AllGatherOp> gathers;
    getOperation().walk(
        [&](dist::AllGatherOp gather) { gathers.push_back(gather); });
    for (dist::AllGatherOp gather : gathers)
      gatherBeforeTranspose(gather);
    eraseDeadTransposes();
  }

private:
  /// Elements moved by the transposes that `attention` would absorb minus
  /// those it would add, were its operands in the layout that
  /// `toCanonical` takes to [batch..., S, D].
  static int64_t benefit(Operation *attention, const LayoutParts &parts,
                         ArrayRef<int64_t> toCanonical) {
    SmallVector<int64_t> fromCanonical = invertPermutationVector(toCanonical);
    int64_t total = 0;
    for (unsigned i : parts.operands) {
      Value operand = attention->getOperand(i);
      total += transposedFrom(operand, toCanonical) ? elementsOf(operand)
                                                    : -elementsOf(operand);
    }
    for (unsigned i : parts.results) {
      Value result = attention->getResult(i);
      bool otherUsers = false;
      for (Operation *user : result.getUsers()) {
        if (isTransposeWith(user, fromCanonical))
          total += elementsOf(result);
        else
          otherUsers = true;
      }
      if (otherUsers)
        total -= elementsOf(result);
    }
    return total;
  }

  void relayoutAttention(Operation *attention) {
    auto queryType = cast<RankedTensorType>(attention->getOperand(0).getType());
    int64_t rank = queryType.getRank();
    // Only ops still in the canonical layout are candidates.
    if (attention->hasAttr("seq_dim") || rank < 3)
      return;
    LayoutParts parts = layoutParts(attention);
    int64_t bestSeqDim = rank - 2, bestBenefit = 0;
    for (int64_t seqDim = 0; seqDim < rank - 2; ++seqDim) {
      int64_t gain =
          benefit(attention, parts, attentionToCanonical(rank, seqDim));
      if (gain > bestBenefit) {
        bestBenefit = gain;
        bestSeqDim = seqDim;
      }
    }
    if (bestSeqDim == rank - 2)
      return;

    SmallVector<int64_t> toCanonical = attentionToCanonical(rank, bestSeqDim);
    SmallVector<int64_t> fromCanonical = invertPermutationVector(toCanonical);
    OpBuilder builder(attention);
    Location loc = attention->getLoc();
    SmallVector<Value> operands(attention->getOperands());
    for (unsigned i : parts.operands) {
      Value source = transposedFrom(operands[i], toCanonical);
      operands[i] =
          source ? source
                 : builder.create<TransposeOp>(loc, operands[i], fromCanonical);
    }
    IntegerAttr seqDim = builder.getI64IntegerAttr(bestSeqDim);
    Operation *relaid;
    if (auto op = dyn_cast<AttentionOp>(attention)) {
      relaid = builder.create<AttentionOp>(loc, operands[0], operands[1],
                                           operands[2], op.getScaleAttr(),
                                           op.getCausalAttr(), seqDim);
    } else {
      auto grad = cast<AttentionGradOp>(attention);
      relaid = builder.create<AttentionGradOp>(
          loc, operands[0], operands[1], operands[2], operands[3], operands[4],
          operands[5], grad.getScaleAttr(), grad.getCausalAttr(), seqDim);
    }
    // Discardable attributes (trn-auto-cast's matmul type) carry over.
    relaid->setDiscardableAttrs(attention->getDiscardableAttrDictionary());

    builder.setInsertionPointAfter(relaid);
    for (unsigned i = 0; i < attention->getNumResults(); ++i) {
      Value old = attention->getResult(i), result = relaid->getResult(i);
      if (!llvm::is_contained(parts.results, i)) {
        old.replaceAllUsesWith(result);
        continue;
      }
      // Users that transposed the result into this layout read it as is.
      for (Operation *user : llvm::make_early_inc_range(old.getUsers()))
        if (isTransposeWith(user, fromCanonical)) {
          user->getResult(0).replaceAllUsesWith(result);
          user->erase();
        }
      if (!old.use_empty())
        old.replaceAllUsesWith(
            builder.create<TransposeOp>(loc, result, toCanonical));
    }
    attention->erase();
  }

  /// `transpose`'s uses by dot_generals, renumbered to read its operand in
  /// place; done only when every user is such a dot_general, so that the
  /// transpose disappears (a dot_general reading a still-needed transpose
  /// might otherwise trade a free operand orientation for transposes on
  /// the Tensor Engine).
  void foldIntoDots(TransposeOp transpose) {
    if (transpose->use_empty())
      return;
    ArrayRef<int64_t> perm = transpose.getPerm();
    for (OpOperand &use : transpose->getUses())
      if (!foldedDot(use, perm, Value()))
        return;
    while (!transpose->use_empty())
      if (!foldedDot(*transpose->getUses().begin(), perm,
                     transpose.getOperand()))
        return;
  }

  /// Whether the dot_general owning `use` could read, instead of its
  /// operand, a tensor that `perm` transposes into that operand; with
  /// `source` (that tensor), replaces the dot_general by one that does.
  static bool foldedDot(OpOperand &use, ArrayRef<int64_t> perm, Value source) {
    auto dot = dyn_cast<DotGeneralOp>(use.getOwner());
    if (!dot)
      return false;
    bool isLhs = use.getOperandNumber() == 0;
    auto map = [&](ArrayRef<int64_t> dims) {
      SmallVector<int64_t> mapped;
      for (int64_t d : dims)
        mapped.push_back(perm[d]);
      return mapped;
    };
    SmallVector<int64_t> lhsBatching(dot.getLhsBatchingDims()),
        rhsBatching(dot.getRhsBatchingDims()),
        lhsContracting(dot.getLhsContractingDims()),
        rhsContracting(dot.getRhsContractingDims());
    SmallVector<int64_t> &batching = isLhs ? lhsBatching : rhsBatching;
    SmallVector<int64_t> &contracting = isLhs ? lhsContracting : rhsContracting;
    // The result lists the free dims in operand order: they must keep it.
    int64_t previous = -1;
    for (int64_t d = 0; d < static_cast<int64_t>(perm.size()); ++d) {
      if (llvm::is_contained(batching, d) || llvm::is_contained(contracting, d))
        continue;
      if (perm[d] < previous)
        return false;
      previous = perm[d];
    }
    batching = map(batching);
    contracting = map(contracting);
    int64_t rank = perm.size();
    int64_t otherRank =
        cast<RankedTensorType>(dot->getOperand(isLhs ? 1 : 0).getType())
            .getRank();
    if (!isMatmulForm(isLhs ? rank : otherRank, isLhs ? otherRank : rank,
                      lhsBatching, rhsBatching, lhsContracting, rhsContracting))
      return false;
    if (!source)
      return true;
    OpBuilder builder(dot);
    Value lhs = isLhs ? source : dot.getLhs();
    Value rhs = isLhs ? dot.getRhs() : source;
    // Batch sizes and the order of free dims are unchanged, so is the type.
    auto folded = builder.create<DotGeneralOp>(dot.getLoc(), dot.getType(), lhs,
                                               rhs, lhsBatching, rhsBatching,
                                               lhsContracting, rhsContracting);
    folded->setDiscardableAttrs(dot->getDiscardableAttrDictionary());
    dot.replaceAllUsesWith(folded.getResult());
    dot->erase();
    return true;
  }

  /// A gather of a transpose that only dot_generals read becomes the
  /// transpose of a gather (of the untransposed tensor, along the dim the
  /// transpose moves to the gathered one), which the dot_generals then read
  /// in place: a partitioned backward gathers an activation gradient once
  /// for both of its matmuls (dX = dY W and dW = dY^T X) instead of once
  /// per orientation. Gathers of one tensor along one dim then merge.
  void gatherBeforeTranspose(dist::AllGatherOp gather) {
    auto transpose = gather.getInput().getDefiningOp<TransposeOp>();
    if (!transpose || gather->use_empty())
      return;
    ArrayRef<int64_t> perm = transpose.getPerm();
    for (OpOperand &use : gather->getUses())
      if (!foldedDot(use, perm, Value()))
        return;
    Value input = transpose.getOperand();
    int64_t dim = perm[gather.getDim()];
    auto inputType = cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> shape(inputType.getShape());
    int64_t groupSize =
        cast<RankedTensorType>(gather.getType()).getDimSize(gather.getDim()) /
        cast<RankedTensorType>(gather.getInput().getType())
            .getDimSize(gather.getDim());
    shape[dim] *= groupSize;
    // An equivalent gather of the input in this block serves (moved up to
    // this one's place if it comes later: its input is defined before
    // both); else one takes this one's place.
    dist::AllGatherOp source;
    for (Operation *user : input.getUsers()) {
      auto other = dyn_cast<dist::AllGatherOp>(user);
      if (other && other->getBlock() == gather->getBlock() &&
          other.getDim() == dim && other.getMesh() == gather.getMesh() &&
          other.getAxes() == gather.getAxes() &&
          (!source || other->isBeforeInBlock(source)))
        source = other;
    }
    if (source && gather->isBeforeInBlock(source))
      source->moveBefore(gather);
    if (!source) {
      OpBuilder builder(gather);
      source = builder.create<dist::AllGatherOp>(
          gather.getLoc(),
          RankedTensorType::get(shape, inputType.getElementType()), input,
          gather.getMeshAttr(), gather.getAxesAttr(),
          builder.getI64IntegerAttr(dim));
      source->setDiscardableAttrs(gather->getDiscardableAttrDictionary());
    }
    while (!gather->use_empty())
      if (!foldedDot(*gather->getUses().begin(), perm, source.getResult()))
        return;
    gather->erase();
    if (transpose->use_empty())
      transpose->erase();
  }

  void eraseDeadTransposes() {
    SmallVector<TransposeOp> transposes;
    getOperation().walk(
        [&](TransposeOp transpose) { transposes.push_back(transpose); });
    // Last first, so that a chain of dead transposes goes in one sweep.
    for (TransposeOp transpose : llvm::reverse(transposes))
      if (transpose->use_empty()) {
        transpose->erase();
      }
  }
};

} // namespace
