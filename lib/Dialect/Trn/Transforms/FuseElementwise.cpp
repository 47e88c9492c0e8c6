//===- FuseElementwise.cpp - form trn.fusion groups -----------------------===//
//
// See the pass description in Passes.td. One walk in program order decides
// each op's group; the groups are then materialised as trn.fusion ops.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"
#include "trn/Dialect/Trn/Utils/FusionLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNFUSEELEMENTWISE
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

constexpr int64_t kPartitions = 128;
/// Free elements per tile in a group without a row reduction (the
/// lowering's column chunk).
constexpr int64_t kChunkColumns = 2048;

bool hasI64(Operation *op) {
  auto isI64 = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.getElementType().isSignlessInteger(64);
  };
  return llvm::any_of(op->getOperandTypes(), isI64) ||
         llvm::any_of(op->getResultTypes(), isI64);
}

bool isSplat(Operation *op) {
  auto constant = dyn_cast_or_null<ConstantOp>(op);
  if (!constant || hasI64(op))
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  return dense && dense.isSplat();
}

/// dims [0, 1, ..., n - 1].
bool isLeadingIdentity(ArrayRef<int64_t> dims, int64_t n) {
  if (static_cast<int64_t>(dims.size()) != n)
    return false;
  for (auto [i, d] : llvm::enumerate(dims))
    if (d != static_cast<int64_t>(i))
      return false;
  return true;
}

struct Group {
  SmallVector<int64_t> shape;
  SmallVector<Operation *> members;
  /// Broadcasts and splats copied into the body rather than read as inputs.
  llvm::SmallPtrSet<Operation *, 8> clones;
  /// Member results that are per-row values (shape S[:-1]) or columns.
  llvm::DenseSet<Value> narrow;
  bool open = true;
  /// A row reduction or a rotation (trn.rotate_half): every tile spans
  /// whole rows.
  bool wholeRows = false;

  int64_t columns() const { return shape.back(); }
  int64_t tileColumns() const {
    return wholeRows ? columns() : std::min(columns(), kChunkColumns);
  }
};

class Fuser {
public:
  Fuser(func::FuncOp function, int64_t maxReductionRow, int64_t sbufBudget,
        int64_t maxOps)
      : function(function), maxReductionRow(maxReductionRow),
        sbufBudget(sbufBudget), maxOps(maxOps) {}
  void run();

private:
  std::optional<unsigned> groupOf(Value value) const {
    Operation *def = value.getDefiningOp();
    auto it = def ? memberGroup.find(def) : memberGroup.end();
    if (it == memberGroup.end())
      return std::nullopt;
    return it->second;
  }
  bool tryJoin(Operation *op, unsigned g);
  bool tryStart(Operation *op);
  /// Moves open group `from`'s members into open group `into` (same shape)
  /// when the union keeps the budget: an op that reads both then joins one
  /// group instead of closing the other (its values would round-trip
  /// through HBM).
  bool tryMerge(unsigned into, unsigned from);
  /// Whether broadcast `op` can be read by group `g` through a DMA window.
  bool canReadBroadcast(BroadcastInDimOp op, unsigned gi) const;
  int64_t peakLiveTileBytes(const Group &g, ArrayRef<Operation *> extraMembers,
                            bool withReduction) const;
  void materialise(Group &g);

  func::FuncOp function;
  int64_t maxReductionRow, sbufBudget, maxOps;
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, unsigned> memberGroup;
};

bool Fuser::canReadBroadcast(BroadcastInDimOp op, unsigned gi) const {
  const Group &g = groups[gi];
  if (groupOf(op.getOperand()) == gi ||
      shapeOf(op.getResult()) != ArrayRef(g.shape))
    return false;
  if (hasI64(op))
    return false;
  BroadcastAccess access =
      computeBroadcastAccess(shapeOf(op.getOperand()), op.getDims(), g.shape);
  int64_t rows = 1;
  for (int64_t d : ArrayRef(g.shape).drop_back())
    rows *= d;
  return access.rowBlock >= std::min(rows, kPartitions);
}

/// Peak bytes per partition of the group's live full-width tiles, if
/// `extraMembers` joined: inputs live from their first use to their last,
/// results from their definition to their last use inside the group.
int64_t Fuser::peakLiveTileBytes(const Group &g,
                                 ArrayRef<Operation *> extraMembers,
                                 bool withReduction) const {
  SmallVector<Operation *> members(g.members);
  llvm::append_range(members, extraMembers);
  llvm::SmallPtrSet<Operation *, 16> memberSet(members.begin(), members.end());
  int64_t columns =
      withReduction ? g.columns() : std::min(g.columns(), kChunkColumns);
  // Last use index of every full-width value read or defined by a member.
  llvm::MapVector<Value, std::pair<int64_t, int64_t>> live; // first, last
  auto isFull = [&](Value value) {
    return shapeOf(value) == ArrayRef(g.shape);
  };
  for (auto [index, op] : llvm::enumerate(members)) {
    for (Value operand : op->getOperands()) {
      if (!isFull(operand) || isSplat(operand.getDefiningOp()))
        continue;
      // A column broadcast member reads a [rows, 1] column: not full width.
      Operation *def = operand.getDefiningOp();
      if (def && memberSet.count(def) && isa<BroadcastInDimOp>(def))
        continue;
      auto [it, inserted] =
          live.insert({operand, {static_cast<int64_t>(index), 0}});
      it->second.second = index;
    }
    if (!isa<BroadcastInDimOp>(op))
      for (Value result : op->getResults())
        if (isFull(result))
          live.insert(
              {result,
               {static_cast<int64_t>(index), static_cast<int64_t>(index)}});
  }
  int64_t peak = 0;
  for (int64_t i = 0, e = members.size(); i < e; ++i) {
    int64_t bytes = 0;
    for (auto &[value, range] : live)
      if (range.first <= i && i <= range.second)
        bytes += columns *
                 std::max<int64_t>(4, cast<RankedTensorType>(value.getType())
                                              .getElementTypeBitWidth() /
                                          8);
    peak = std::max(peak, bytes);
  }
  return peak;
}

bool Fuser::tryJoin(Operation *op, unsigned gi) {
  Group &g = groups[gi];
  if (!g.open || static_cast<int64_t>(g.members.size()) >= maxOps)
    return false;
  ArrayRef<int64_t> full = g.shape, row = full.drop_back();
  SmallVector<Operation *> newClones;
  bool wholeRows = false;

  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    // A row reduction of one of the group's full-width values.
    if (reduce.getKind() == ReduceKind::prod || hasI64(op) ||
        groupOf(reduce.getOperand()) != gi ||
        shapeOf(reduce.getOperand()) != full ||
        reduce.getDims() !=
            ArrayRef<int64_t>{static_cast<int64_t>(full.size() - 1)} ||
        g.columns() > maxReductionRow)
      return false;
    wholeRows = true;
  } else if (auto rotate = dyn_cast<RotateHalfOp>(op)) {
    // Rotates whole rows of a full-width value (of the group, or read
    // whole as an input): tiles must span them.
    Value operand = rotate.getOperand();
    if (hasI64(op) || shapeOf(rotate.getResult()) != full ||
        g.narrow.count(operand) || g.columns() > kChunkColumns)
      return false;
    wholeRows = true;
  } else if (auto broadcast = dyn_cast<BroadcastInDimOp>(op)) {
    // A per-row value of the group back to full width: a column.
    if (groupOf(broadcast.getOperand()) != gi ||
        !g.narrow.count(broadcast.getOperand()) ||
        shapeOf(broadcast.getResult()) != full ||
        !isLeadingIdentity(broadcast.getDims(), full.size() - 1))
      return false;
  } else {
    if (!op->hasTrait<OpTrait::Elementwise>() || hasI64(op) ||
        op->getNumResults() != 1)
      return false;
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    bool isFullOp = shape == full;
    if (!isFullOp && shape != row)
      return false;
    for (Value operand : op->getOperands()) {
      if (groupOf(operand) == gi)
        continue;
      Operation *def = operand.getDefiningOp();
      if (isSplat(def)) {
        newClones.push_back(def);
        continue;
      }
      // Another group's broadcast of one of its per-row values is copied
      // too: this group reads the [rows] value as a column instead of the
      // full-width tensor (a layer norm's 1/sigma saved for its backward).
      // Any other broadcast that is a member of a group is that group's
      // result, read as an input.
      auto broadcast = dyn_cast_or_null<BroadcastInDimOp>(def);
      auto owner = broadcast ? memberGroup.find(def) : memberGroup.end();
      bool columnOfGroup =
          owner != memberGroup.end() &&
          groups[owner->second].narrow.count(broadcast.getOperand()) &&
          isLeadingIdentity(broadcast.getDims(),
                            shapeOf(broadcast.getOperand()).size());
      if (isFullOp && broadcast &&
          (owner == memberGroup.end() || columnOfGroup) &&
          canReadBroadcast(broadcast, gi))
        newClones.push_back(def);
      // Anything else is an input read directly.
    }
  }
  if (peakLiveTileBytes(g, op, g.wholeRows || wholeRows) > sbufBudget)
    return false;
  g.members.push_back(op);
  memberGroup[op] = gi;
  g.wholeRows |= wholeRows;
  g.clones.insert(newClones.begin(), newClones.end());
  if (isa<ReduceOp>(op) || (!isa<BroadcastInDimOp>(op) &&
                            shapeOf(op->getResult(0)) != ArrayRef(g.shape)))
    g.narrow.insert(op->getResult(0));
  return true;
}

bool Fuser::tryMerge(unsigned into, unsigned from) {
  Group &a = groups[into], &b = groups[from];
  if (!a.open || !b.open || a.shape != b.shape ||
      static_cast<int64_t>(a.members.size() + b.members.size()) > maxOps)
    return false;
  bool wholeRows = a.wholeRows || b.wholeRows;
  if (wholeRows && a.columns() > maxReductionRow)
    return false;
  // Members stay in program order: the body is cloned in that order.
  SmallVector<Operation *> members(a.members);
  llvm::append_range(members, b.members);
  llvm::sort(members,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  Group merged = a;
  merged.members.clear();
  if (peakLiveTileBytes(merged, members, wholeRows) > sbufBudget)
    return false;
  a.members = std::move(members);
  a.wholeRows = wholeRows;
  a.clones.insert(b.clones.begin(), b.clones.end());
  for (Value value : b.narrow)
    a.narrow.insert(value);
  for (Operation *member : b.members)
    memberGroup[member] = into;
  b.members.clear();
  b.clones.clear();
  b.narrow.clear();
  b.open = false;
  return true;
}

bool Fuser::tryStart(Operation *op) {
  Group g;
  auto reduce = dyn_cast<ReduceOp>(op);
  if (reduce) {
    // A group that starts with a row reduction reads the reduced tensor.
    ArrayRef<int64_t> shape = shapeOf(reduce.getOperand());
    if (shape.empty() || reduce.getKind() == ReduceKind::prod || hasI64(op) ||
        reduce.getDims() !=
            ArrayRef<int64_t>{static_cast<int64_t>(shape.size() - 1)} ||
        shape.back() > maxReductionRow)
      return false;
    g.shape.assign(shape.begin(), shape.end());
  } else if ((op->hasTrait<OpTrait::Elementwise>() || isa<RotateHalfOp>(op)) &&
             op->getNumResults() == 1 && !hasI64(op)) {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    if (shape.empty())
      return false;
    g.shape.assign(shape.begin(), shape.end());
  } else {
    return false;
  }
  groups.push_back(std::move(g));
  unsigned index = groups.size() - 1;
  if (!reduce)
    return tryJoin(op, index) || (groups.pop_back(), false);
  Group &fresh = groups.back();
  if (peakLiveTileBytes(fresh, op, /*withReduction=*/true) > sbufBudget) {
    groups.pop_back();
    return false;
  }
  fresh.members.push_back(op);
  memberGroup[op] = index;
  fresh.wholeRows = true;
  fresh.narrow.insert(reduce.getResult());
  return true;
}

void Fuser::materialise(Group &g) {
  llvm::SmallPtrSet<Operation *, 16> memberSet(g.members.begin(),
                                               g.members.end());
  // Inputs in order of first use; clones in program order.
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> clones;
  for (Operation *op : g.members)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && memberSet.count(def))
        continue;
      if (def && g.clones.count(def)) {
        clones.insert(def);
        for (Value cloneOperand : def->getOperands())
          inputs.insert(cloneOperand);
        continue;
      }
      inputs.insert(operand);
    }
  SmallVector<Value> results;
  for (Operation *op : g.members)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !memberSet.count(user); }))
        results.push_back(result);

  Operation *last = g.members.back();
  OpBuilder builder(last->getContext());
  builder.setInsertionPointAfter(last);
  Location loc =
      g.members.size() == 1
          ? last->getLoc()
          : builder.getFusedLoc(llvm::to_vector(llvm::map_range(
                g.members, [](Operation *op) { return op->getLoc(); })));
  SmallVector<Type> resultTypes(
      llvm::map_range(results, [](Value v) { return v.getType(); }));
  auto fusion =
      builder.create<FusionOp>(loc, resultTypes, inputs.getArrayRef());
  Block *body = builder.createBlock(&fusion.getBody());
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
  builder.setInsertionPointToEnd(body);
  for (Operation *clone : clones)
    builder.clone(*clone, mapping);
  for (Operation *op : g.members)
    builder.clone(*op, mapping);
  builder.create<YieldOp>(
      loc, llvm::to_vector(llvm::map_range(
               results, [&](Value v) { return mapping.lookup(v); })));

  for (auto [original, replacement] : llvm::zip(results, fusion.getResults()))
    original.replaceUsesWithIf(replacement, [&](OpOperand &use) {
      return !memberSet.count(use.getOwner());
    });
  for (Operation *op : llvm::reverse(g.members))
    op->erase();
  // A copied broadcast that belongs to another group goes with that group.
  for (Operation *clone : clones)
    if (clone->use_empty() && !memberGroup.count(clone))
      clone->erase();
}

void Fuser::run() {
  Block &block = function.getBody().front();
  for (Operation &op : block) {
    // Open groups of one shape that this op reads become one group first,
    // if the op may join a group at all (merging at a matmul or a return
    // gains nothing, and a matmul can take only one group as its epilogue).
    SmallVector<unsigned> operandGroups;
    if (isFusibleBodyOp(&op))
      for (Value operand : op.getOperands())
        if (std::optional<unsigned> g = groupOf(operand);
            g && groups[*g].open && !llvm::is_contained(operandGroups, *g))
          operandGroups.push_back(*g);
    for (size_t i = 1; i < operandGroups.size(); ++i)
      tryMerge(operandGroups.front(), operandGroups[i]);
    // Join the first open group among the operands' groups, else start one.
    bool placed = false;
    for (Value operand : op.getOperands()) {
      std::optional<unsigned> g = groupOf(operand);
      if (g && tryJoin(&op, *g)) {
        placed = true;
        break;
      }
    }
    if (!placed)
      placed = tryStart(&op);
    std::optional<unsigned> own =
        placed ? std::optional<unsigned>(memberGroup[&op]) : std::nullopt;
    // A group whose value is read from outside it cannot grow any more.
    for (Value operand : op.getOperands())
      if (std::optional<unsigned> g = groupOf(operand); g && g != own)
        groups[*g].open = false;
  }
  // Last group first: a group that copies another's broadcast no longer
  // reads it when that group decides what it yields.
  for (Group &g : llvm::reverse(groups))
    if (!g.members.empty())
      materialise(g);
}

/// `x` when `value` is `slice x` taking, of the last dimension D, the half
/// starting at `D/2 * upper` and all of every other dimension.
Value halfOf(Value value, bool upper) {
  auto slice = value ? value.getDefiningOp<SliceOp>() : SliceOp();
  if (!slice)
    return Value();
  ArrayRef<int64_t> in = shapeOf(slice.getOperand());
  if (in.empty() || in.back() % 2 != 0)
    return Value();
  int64_t last = in.size() - 1, half = in.back() / 2;
  for (int64_t d = 0; d <= last; ++d) {
    int64_t start = d == last && upper ? half : 0;
    int64_t limit = d == last ? start + half : in[d];
    if (slice.getStart()[d] != start || slice.getLimit()[d] != limit ||
        slice.getStrides()[d] != 1)
      return Value();
  }
  return slice.getOperand();
}

/// The rotary embeddings' rotation as traced (`cat(-x2, x1)` along the last
/// dim, and its adjoint `cat(g2, -g1)`) becomes trn.rotate_half (negated
/// for the adjoint), which a group computes on its tiles; the slices and
/// negations are left to die.
void formRotations(func::FuncOp function) {
  SmallVector<ConcatenateOp> concats;
  function.walk([&](ConcatenateOp concat) { concats.push_back(concat); });
  for (ConcatenateOp concat : concats) {
    ArrayRef<int64_t> shape = shapeOf(concat.getResult());
    if (concat.getInputs().size() != 2 || shape.empty() ||
        concat.getDim() != static_cast<int64_t>(shape.size() - 1))
      continue;
    Value first = concat.getInputs()[0], second = concat.getInputs()[1];
    auto negated = [](Value value) {
      auto neg = value.getDefiningOp<NegOp>();
      return neg ? neg.getOperand() : Value();
    };
    // cat(-x[D/2:], x[:D/2]) or cat(x[D/2:], -x[:D/2]).
    Value x;
    bool isAdjoint = false;
    if (Value hi = halfOf(negated(first), true);
        hi && hi == halfOf(second, false)) {
      x = hi;
    } else if (Value hi = halfOf(first, true);
               hi && hi == halfOf(negated(second), false)) {
      x = hi;
      isAdjoint = true;
    }
    if (!x || shapeOf(x) != shape)
      continue;
    OpBuilder builder(concat);
    Value rotated = builder.create<RotateHalfOp>(concat.getLoc(), x);
    if (isAdjoint)
      rotated = builder.create<NegOp>(concat.getLoc(), rotated);
    concat.replaceAllUsesWith(rotated);
    concat->erase();
    // The chain's negation, then its slices, when nothing else reads them.
    for (Value piece : {first, second}) {
      Operation *def = piece.getDefiningOp();
      Operation *slice =
          isa<NegOp>(def) ? def->getOperand(0).getDefiningOp() : nullptr;
      for (Operation *op : {def, slice})
        if (op && op->use_empty())
          op->erase();
    }
  }
}

/// The ops of the elementwise chain that computes `value` from values it
/// does not compute (leaves: values not of the chain's shape, or read by
/// anything else), in program order, when it is short (at most `maxOps`) and
/// reads at most one full-size leaf (others are broadcasts, which a group
/// reads as columns, or splats); else none.
std::optional<SmallVector<Operation *>> cheapChain(Value value,
                                                   int64_t maxOps = 3) {
  SmallVector<Operation *> chain;
  llvm::SetVector<Value> fullLeaves;
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    Operation *def = v.getDefiningOp();
    // A value something else reads is stored anyway: a leaf.
    bool member = def && def->hasTrait<OpTrait::Elementwise>() &&
                  def->getNumResults() == 1 && !hasI64(def) &&
                  shapeOf(v) == shapeOf(value) && (v == value || v.hasOneUse());
    if (!member) {
      if (!def || (!isa<BroadcastInDimOp>(def) && !isSplat(def)))
        fullLeaves.insert(v);
      continue;
    }
    if (llvm::is_contained(chain, def))
      continue;
    chain.push_back(def);
    if (static_cast<int64_t>(chain.size()) > maxOps)
      return std::nullopt;
    llvm::append_range(worklist, def->getOperands());
  }
  if (chain.empty() || fullLeaves.size() > 1)
    return std::nullopt;
  llvm::sort(chain,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return chain;
}

/// A value a row reduction reads and other elementwise ops read too (a
/// softmax's exponentials: their row sum, and the probabilities divided by
/// it) is stored by the reduction's group for the others when its rows are
/// too long for one group to hold both (longer than max-reduction-row): when
/// it is
/// a short chain over one full-size tensor (exp(x - max)), the others
/// recompute it from that tensor instead, which they read in its place.
/// (The MLM head's [2048, 30522] f32 exponentials were written and read
/// back whole.)
void rematerializeForReductions(func::FuncOp function,
                                int64_t maxReductionRow) {
  SmallVector<ReduceOp> reductions;
  function.walk([&](ReduceOp reduce) { reductions.push_back(reduce); });
  for (ReduceOp reduce : reductions) {
    Value value = reduce.getOperand();
    ArrayRef<int64_t> shape = shapeOf(value);
    // Rows that fit a group hold the reduction and its readers together:
    // nothing is stored.
    if (shape.empty() || value.hasOneUse() || shape.back() <= maxReductionRow ||
        reduce.getKind() == ReduceKind::prod ||
        reduce.getDims() !=
            ArrayRef<int64_t>{static_cast<int64_t>(shape.size() - 1)})
      continue;
    // Each reader once (one may read the value twice).
    llvm::SetVector<Operation *> others;
    for (Operation *user : value.getUsers())
      if (user != reduce.getOperation())
        others.insert(user);
    if (!llvm::all_of(others, [&](Operation *user) {
          return user->hasTrait<OpTrait::Elementwise>() &&
                 user->getBlock() == reduce->getBlock();
        }))
      continue;
    // Exponentials only: recomputing them costs the Scalar Engine, which
    // the groups around a softmax leave idle; the Vector-bound chains of a
    // norm (its centred values) are cheaper stored (a GPT-3 layer ran 13%
    // slower recomputing them).
    std::optional<SmallVector<Operation *>> chain = cheapChain(value);
    if (!chain ||
        !llvm::any_of(*chain, [](Operation *op) { return isa<ExpOp>(op); }))
      continue;
    for (Operation *user : others) {
      OpBuilder builder(user);
      IRMapping mapping;
      for (Operation *op : *chain)
        builder.clone(*op, mapping);
      user->replaceUsesOfWith(value, mapping.lookup(value));
    }
  }
}

/// Sums over rows (a bias or norm weight's gradient: dims [0]) move down to
/// their first user. Grouping walks in program order and closes a group once
/// an op outside it reads one of its values: a sum taken right after the
/// value it sums kept the ops after it (the cast of a norm backward's
/// result) out of that value's group, though trn-fuse-matmul-epilogue then
/// takes the sum into the group anyway.
void sinkColumnSums(func::FuncOp function) {
  SmallVector<ReduceOp> sums;
  function.walk([&](ReduceOp reduce) {
    // Only the sums trn-fuse-matmul-epilogue takes into a group that reduces
    // along rows (a GPT-3 norm's 6144-column group, Vector-bound, ran 1%
    // slower with its cast joined).
    ArrayRef<int64_t> shape = shapeOf(reduce.getOperand());
    if (reduce.getDims() == ArrayRef<int64_t>{0} && shape.size() == 2 &&
        shape[1] <= kMaxWholeRowSumColumns)
      sums.push_back(reduce);
  });
  for (ReduceOp reduce : sums) {
    Block *block = reduce->getBlock();
    Operation *first = block->getTerminator();
    for (Operation *user : reduce->getUsers())
      if (Operation *at = block->findAncestorOpInBlock(*user);
          at && at->isBeforeInBlock(first))
        first = at;
    if (reduce->getNextNode() != first)
      reduce->moveBefore(first);
  }
}

struct TrnFuseElementwisePass
    : mlir::trn::impl::TrnFuseElementwiseBase<TrnFuseElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal() || !function.getBody().hasOneBlock())
      return;
    formRotations(function);
    rematerializeForReductions(function, maxReductionRow);
    sinkColumnSums(function);
    Fuser(function, maxReductionRow, sbufBudget, maxOps).run();
  }
};

} // namespace
