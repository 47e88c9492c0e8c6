//===- ShardingRule.cpp - factor rules of the trn ops ---------------------===//

#include "trn/Partition/ShardingRule.h"

#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::trn;
using namespace mlir::trn::partition;

namespace {

/// Builds a rule with one slot per operand and result.
class RuleBuilder {
public:
  explicit RuleBuilder(Operation *op) : op(op) {
    for (Value operand : op->getOperands())
      rule.operands.emplace_back(shapeOf(operand).size());
    for (Value result : op->getResults())
      rule.results.emplace_back(shapeOf(result).size());
  }
  int64_t factor(int64_t size, FactorKind kind = FactorKind::Parallel) {
    return rule.addFactor(size, kind);
  }
  void operand(unsigned index, unsigned dim, int64_t f) {
    rule.operands[index][dim].push_back(f);
  }
  void result(unsigned index, unsigned dim, int64_t f) {
    rule.results[index][dim].push_back(f);
  }
  /// One factor per dimension of result 0, shared by every operand and
  /// result of the same shape (elementwise).
  void sameShape(ArrayRef<unsigned> replicatedDims = {}) {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    for (unsigned d = 0; d < shape.size(); ++d) {
      int64_t f = factor(shape[d], llvm::is_contained(replicatedDims, d)
                                       ? FactorKind::Replicated
                                       : FactorKind::Parallel);
      for (auto [i, value] : llvm::enumerate(op->getOperands()))
        if (shapeOf(value) == shape)
          operand(i, d, f);
      for (auto [i, value] : llvm::enumerate(op->getResults()))
        if (shapeOf(value) == shape)
          result(i, d, f);
    }
  }
  ShardingRule take() { return std::move(rule); }

  Operation *op;
  ShardingRule rule;
};

/// Dimensions `0 ..< axis` (leading, kept) are parallel; `axis ..< rank`
/// (normalised) replicated. Values of the input's shape map to every
/// factor, the `statistics` (shape `shape[:axis]`) to the leading ones and
/// the `weights` (weights, biases and their gradients, shape `shape[axis:]`)
/// to the normalised ones: named, not told apart by shape, which is the same
/// for both when the leading dims equal the normalised ones (2048 tokens of
/// hidden size 2048). In a gradient the leading factors are summed for the
/// weight gradients, which lack them: `leading` is then Reduction (present
/// in a result it still splits it; absent, a split makes the result a
/// partial sum).
std::optional<ShardingRule>
normRule(Operation *op, Value input, int64_t axis, ValueRange statistics,
         ValueRange weights, FactorKind leading = FactorKind::Parallel) {
  RuleBuilder b(op);
  ArrayRef<int64_t> shape = shapeOf(input);
  if (axis < 0 || axis > int64_t(shape.size()))
    return std::nullopt;
  SmallVector<int64_t> factors;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    factors.push_back(
        b.factor(shape[d], d < axis ? leading : FactorKind::Replicated));
  auto map = [&](Value value, auto &&assign) {
    ArrayRef<int64_t> valueShape = shapeOf(value);
    if (llvm::is_contained(statistics, value)) {
      if (valueShape == shape.take_front(axis))
        for (unsigned d = 0; d < axis; ++d)
          assign(d, factors[d]);
    } else if (llvm::is_contained(weights, value)) {
      if (valueShape == shape.drop_front(axis))
        for (unsigned d = 0; d < shape.size() - axis; ++d)
          assign(d, factors[axis + d]);
    } else if (valueShape == shape) {
      for (unsigned d = 0; d < shape.size(); ++d)
        assign(d, factors[d]);
    }
  };
  for (auto [i, value] : llvm::enumerate(op->getOperands()))
    map(value, [&](unsigned d, int64_t f) { b.operand(i, d, f); });
  for (auto [i, value] : llvm::enumerate(op->getResults()))
    map(value, [&](unsigned d, int64_t f) { b.result(i, d, f); });
  return b.take();
}

/// The rule of a reshape that only moves, adds or drops size-1 dimensions,
/// if it is one: the other dimensions keep their order, size-1 dimensions
/// on both sides pair up in order, an input's one left over joins the kept
/// dimension before it (after it, as its major part, when it leads: a
/// replica axis on a batch of one stays on the batch's tokens), and an
/// output's one left over is new, with no axis.
std::optional<ShardingRule> unitMoveRule(ReshapeOp op) {
  ArrayRef<int64_t> in = shapeOf(op.getOperand()),
                    out = shapeOf(op.getResult());
  auto kept = [](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> dims;
    for (auto [d, size] : llvm::enumerate(shape))
      if (size != 1)
        dims.push_back(d);
    return dims;
  };
  auto ones = [](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> dims;
    for (auto [d, size] : llvm::enumerate(shape))
      if (size == 1)
        dims.push_back(d);
    return dims;
  };
  SmallVector<int64_t> inKept = kept(in), outKept = kept(out),
                       inOnes = ones(in), outOnes = ones(out);
  if ((inOnes.empty() && outOnes.empty()) || inKept.size() != outKept.size() ||
      !llvm::all_of(llvm::zip(inKept, outKept), [&](auto pair) {
        return in[std::get<0>(pair)] == out[std::get<1>(pair)];
      }))
    return std::nullopt;
  RuleBuilder b(op);
  auto &inDims = b.rule.operands[0], &outDims = b.rule.results[0];
  for (auto [d, e] : llvm::zip(inKept, outKept)) {
    int64_t f = b.factor(in[d]);
    inDims[d].push_back(f);
    outDims[e].push_back(f);
  }
  size_t paired = std::min(inOnes.size(), outOnes.size());
  for (size_t k = 0; k < paired; ++k) {
    int64_t f = b.factor(1);
    inDims[inOnes[k]].push_back(f);
    outDims[outOnes[k]].push_back(f);
  }
  // A size-1 dimension left over on one side joins a kept dimension: the
  // k-th kept dimension of one side is the k-th of the other.
  auto join = [&](ArrayRef<int64_t> leftOver, ArrayRef<int64_t> ownKept,
                  auto &ownDims, ArrayRef<int64_t> otherKept, auto &otherDims) {
    for (int64_t d : leftOver) {
      if (ownKept.empty())
        return;
      auto after = llvm::upper_bound(ownKept, d);
      bool leads = after == ownKept.begin();
      size_t k = leads ? 0 : (after - ownKept.begin()) - 1;
      int64_t f = b.factor(1);
      ownDims[d].push_back(f);
      auto &target = otherDims[otherKept[k]];
      target.insert(leads ? target.begin() : target.end(), f);
    }
  };
  join(ArrayRef(inOnes).drop_front(paired), inKept, inDims, outKept, outDims);
  // A size-1 dimension made (one more than the input has) is a new
  // dimension of one: it takes no axis. ([B, H, S, D] -> [1, B, H, S, D], q
  // of a stacked q, k and v: the batch stays on B.)
  return b.take();
}

/// A reshape as a sequence of groups whose element counts match: a group of
/// one input and one output dimension of equal size shares a factor; a
/// group that splits or merges dimensions gets one factor per dimension of
/// its finer side, and each coarse dimension is made of those factors
/// (major first); a group that does both gets the factors both sides
/// share, where they exist. A size-1 dimension next to others it merges with or
/// splits from keeps a factor of size 1: nothing real splits it, but a
/// replica axis does (data parallelism over a traced batch of one).
///
/// Such a size-1 dimension on one side only joins the group before it (a
/// batch of one in [S, 1, D] -> [S, D] merges into the tokens, the minor
/// part of S), or the next group when it leads ([1, S, D] -> [S, D]): never
/// the features after it, where a replica axis would make a contraction
/// over features a sum over replicas.
///
/// A reshape that only moves size-1 dimensions (the transpose of a row
/// vector, [1, D] -> [D, 1]; a batch of one moved second, [1, S, D] ->
/// [S, 1, D]) pairs them in order instead: the batch stays the batch.
std::optional<ShardingRule> reshapeRule(ReshapeOp op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> in = shapeOf(op.getOperand()),
                    out = shapeOf(op.getResult());
  if (std::optional<ShardingRule> moved = unitMoveRule(op))
    return moved;
  size_t i = 0, o = 0;
  // Size-1 dimensions on both sides pair up.
  auto skipOnes = [&] {
    while (i < in.size() && o < out.size() && in[i] == 1 && out[o] == 1) {
      int64_t f = b.factor(1);
      b.operand(0, i++, f);
      b.result(0, o++, f);
    }
  };
  skipOnes();
  while (i < in.size() && o < out.size()) {
    // The smallest prefix groups with equal products (a leading size-1
    // dimension on one side joins this first group).
    size_t i1 = i + 1, o1 = o + 1;
    int64_t inProduct = in[i], outProduct = out[o];
    while (inProduct != outProduct) {
      if (inProduct < outProduct) {
        if (i1 >= in.size())
          return std::nullopt;
        inProduct *= in[i1++];
      } else {
        if (o1 >= out.size())
          return std::nullopt;
        outProduct *= out[o1++];
      }
    }
    if (i1 - i == 1 && o1 - o == 1) {
      int64_t f = b.factor(in[i]);
      b.operand(0, i, f);
      b.result(0, o, f);
    } else if (i1 - i == 1) {
      // One input dimension split into several output dimensions.
      for (size_t d = o; d < o1; ++d) {
        int64_t f = b.factor(out[d]);
        b.result(0, d, f);
        b.operand(0, i, f);
      }
    } else if (o1 - o == 1) {
      // Several input dimensions merged into one output dimension.
      for (size_t d = i; d < i1; ++d) {
        int64_t f = b.factor(in[d]);
        b.operand(0, d, f);
        b.result(0, o, f);
      }
    } else {
      // Many to many: the common refinement of both sides, when the
      // running products of the two sides, taken together, divide each
      // other in turn ([B*H, D] -> [B, H*D] is made of B, H and D; the
      // dimensions of [6, 4] -> [4, 6] have none and stay replicated).
      SmallVector<int64_t> cuts;
      int64_t running = 1;
      for (size_t d = i; d < i1; ++d)
        cuts.push_back(running *= in[d]);
      running = 1;
      for (size_t d = o; d < o1; ++d)
        cuts.push_back(running *= out[d]);
      llvm::sort(cuts);
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      // (Not with a size-1 dimension in the group: a batch of one carrying
      // a replica axis would land on whatever shares its place.)
      bool chain =
          llvm::none_of(in.slice(i, i1 - i),
                        [](int64_t d) { return d == 1; }) &&
          llvm::none_of(out.slice(o, o1 - o), [](int64_t d) { return d == 1; });
      for (size_t k = 1; k < cuts.size(); ++k)
        chain &= cuts[k] % cuts[k - 1] == 0;
      if (chain) {
        SmallVector<int64_t> factors;
        int64_t previous = 1;
        for (int64_t cut : cuts) {
          factors.push_back(b.factor(cut / previous));
          previous = cut;
        }
        // Each dimension is made of the factors between its running
        // products before and after it.
        auto assign = [&](ArrayRef<int64_t> shape, size_t from, size_t to,
                          auto &&add) {
          int64_t before = 1;
          for (size_t d = from; d < to; ++d) {
            int64_t after = before * shape[d];
            for (auto [k, cut] : llvm::enumerate(cuts))
              if (cut > before && cut <= after)
                add(d, factors[k]);
            before = after;
          }
        };
        assign(in, i, i1, [&](size_t d, int64_t f) { b.operand(0, d, f); });
        assign(out, o, o1, [&](size_t d, int64_t f) { b.result(0, d, f); });
      }
    }
    // Size-1 dimensions after the group, on one side only, join it as the
    // minor factor of the other side's last dimension.
    while (true) {
      bool inOne = i1 < in.size() && in[i1] == 1;
      bool outOne = o1 < out.size() && out[o1] == 1;
      if (inOne == outOne)
        break;
      int64_t f = b.factor(1);
      if (inOne) {
        b.operand(0, i1++, f);
        b.result(0, o1 - 1, f);
      } else {
        b.result(0, o1++, f);
        b.operand(0, i1 - 1, f);
      }
    }
    i = i1;
    o = o1;
    skipOnes();
  }
  return b.take();
}

/// trn.gather's and trn.scatter_add's index space: the table (operand 0),
/// the indices (operand 1) and the values looked up (gather's result,
/// scatter_add's updates, operand 2) are
/// `looked = table[:axis] + indices[batch:] + table[axis+1:]`.
/// Gather: a split indexed dimension (a vocabulary-parallel embedding) is a
/// reduction factor: each rank looks up the indices in its range, zeros the
/// others, and the results sum (dist-spmd masks). Scatter_add, its adjoint:
/// the indices' own dimensions are summed into the result (reduction
/// factors: split, they leave partial sums, e.g. an embedding gradient under
/// data parallelism), and a split indexed dimension has each rank add the
/// updates whose index is in its range.
std::optional<ShardingRule> lookupRule(Operation *op, int64_t axis,
                                       int64_t batch, bool scatter) {
  RuleBuilder b(op);
  ArrayRef<int64_t> table = shapeOf(op->getOperand(0)),
                    ids = shapeOf(op->getOperand(1));
  if (batch > axis || axis >= int64_t(table.size()) ||
      batch > int64_t(ids.size()))
    return std::nullopt;
  // A dimension of the table (scatter_add's result is the table updated).
  auto tableDim = [&](int64_t d, int64_t f) {
    b.operand(0, d, f);
    if (scatter)
      b.result(0, d, f);
  };
  unsigned next = 0;
  auto lookedDim = [&](int64_t f) {
    if (scatter)
      b.operand(2, next++, f);
    else
      b.result(0, next++, f);
  };
  for (int64_t d = 0; d < axis; ++d) {
    int64_t f = b.factor(table[d]);
    tableDim(d, f);
    if (d < batch)
      b.operand(1, d, f);
    lookedDim(f);
  }
  tableDim(axis, b.factor(table[axis], scatter ? FactorKind::Parallel
                                               : FactorKind::Reduction));
  for (int64_t d = batch; d < int64_t(ids.size()); ++d) {
    int64_t f = b.factor(ids[d], scatter ? FactorKind::Reduction
                                         : FactorKind::Parallel);
    b.operand(1, d, f);
    lookedDim(f);
  }
  for (int64_t d = axis + 1; d < int64_t(table.size()); ++d) {
    int64_t f = b.factor(table[d]);
    tableDim(d, f);
    lookedDim(f);
  }
  return b.take();
}

std::optional<ShardingRule> dotRule(DotGeneralOp op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> lhs = shapeOf(op.getLhs()), rhs = shapeOf(op.getRhs());
  ArrayRef<int64_t> lhsBatch = op.getLhsBatchingDims(),
                    rhsBatch = op.getRhsBatchingDims(),
                    lhsContract = op.getLhsContractingDims(),
                    rhsContract = op.getRhsContractingDims();
  if (lhsBatch.size() != rhsBatch.size() ||
      lhsContract.size() != rhsContract.size())
    return std::nullopt;
  // Result: batch dims, then lhs free dims, then rhs free dims.
  unsigned r = 0;
  for (auto [l, rr] : llvm::zip(lhsBatch, rhsBatch)) {
    int64_t f = b.factor(lhs[l]);
    b.operand(0, l, f);
    b.operand(1, rr, f);
    b.result(0, r++, f);
  }
  for (unsigned d = 0; d < lhs.size(); ++d)
    if (!llvm::is_contained(lhsBatch, d) &&
        !llvm::is_contained(lhsContract, d)) {
      int64_t f = b.factor(lhs[d]);
      b.operand(0, d, f);
      b.result(0, r++, f);
    }
  for (unsigned d = 0; d < rhs.size(); ++d)
    if (!llvm::is_contained(rhsBatch, d) &&
        !llvm::is_contained(rhsContract, d)) {
      int64_t f = b.factor(rhs[d]);
      b.operand(1, d, f);
      b.result(0, r++, f);
    }
  for (auto [l, rr] : llvm::zip(lhsContract, rhsContract)) {
    int64_t f = b.factor(lhs[l], FactorKind::Reduction);
    b.operand(0, l, f);
    b.operand(1, rr, f);
  }
  return b.take();
}

} // namespace

std::optional<ShardingRule>
mlir::trn::partition::getShardingRule(Operation *op) {
  for (Type type : op->getOperandTypes())
    if (!isa<RankedTensorType>(type))
      return std::nullopt;
  for (Type type : op->getResultTypes())
    if (!isa<RankedTensorType>(type))
      return std::nullopt;
  if (op->getNumResults() == 0)
    return std::nullopt;
  if (op->hasTrait<OpTrait::Elementwise>()) {
    RuleBuilder b(op);
    b.sameShape();
    return b.take();
  }
  return llvm::TypeSwitch<Operation *, std::optional<ShardingRule>>(op)
      .Case([&](ConstantOp o) -> std::optional<ShardingRule> {
        // A splat is the same on every shard; other constants stay whole
        // (a use that wants them split slices them locally).
        auto dense = dyn_cast<DenseElementsAttr>(o.getValue());
        if (!dense || !dense.isSplat())
          return std::nullopt;
        RuleBuilder b(op);
        b.sameShape();
        return b.take();
      })
      .Case([&](PipelineStageOp) -> std::optional<ShardingRule> {
        // An identity: the marker keeps its input's split.
        RuleBuilder b(op);
        b.sameShape();
        return b.take();
      })
      .Case([&](IotaOp o) {
        // The counted dimension stays whole: a shard of it would need its
        // rank's offset.
        RuleBuilder b(op);
        b.sameShape({unsigned(o.getDim())});
        return std::optional<ShardingRule>(b.take());
      })
      .Case([&](BroadcastInDimOp o) -> std::optional<ShardingRule> {
        RuleBuilder b(op);
        ArrayRef<int64_t> in = shapeOf(o.getOperand()),
                          out = shapeOf(o.getResult());
        SmallVector<int64_t> factors;
        for (int64_t size : out)
          factors.push_back(b.factor(size));
        for (unsigned d = 0; d < out.size(); ++d)
          b.result(0, d, factors[d]);
        for (auto [k, dim] : llvm::enumerate(o.getDims()))
          if (in[k] == out[dim])
            b.operand(0, k, factors[dim]);
        return b.take();
      })
      .Case([&](TransposeOp o) -> std::optional<ShardingRule> {
        RuleBuilder b(op);
        ArrayRef<int64_t> in = shapeOf(o.getOperand());
        SmallVector<int64_t> factors;
        for (int64_t size : in)
          factors.push_back(b.factor(size));
        for (unsigned d = 0; d < in.size(); ++d)
          b.operand(0, d, factors[d]);
        for (auto [i, source] : llvm::enumerate(o.getPerm()))
          b.result(0, i, factors[source]);
        return b.take();
      })
      .Case([&](ReshapeOp o) { return reshapeRule(o); })
      .Case([&](DotGeneralOp o) { return dotRule(o); })
      .Case([&](ReduceOp o) -> std::optional<ShardingRule> {
        RuleBuilder b(op);
        ArrayRef<int64_t> in = shapeOf(o.getOperand());
        FactorKind reduced = o.getKind() == ReduceKind::sum
                                 ? FactorKind::Reduction
                                 : FactorKind::Replicated;
        unsigned r = 0;
        for (unsigned d = 0; d < in.size(); ++d) {
          bool isReduced = llvm::is_contained(o.getDims(), int64_t(d));
          int64_t f =
              b.factor(in[d], isReduced ? reduced : FactorKind::Parallel);
          b.operand(0, d, f);
          if (!isReduced)
            b.result(0, r++, f);
        }
        return b.take();
      })
      .Case([&](RotateHalfOp) {
        // The rotated dimension stays whole; the others pass through.
        RuleBuilder b(op);
        unsigned last = shapeOf(op->getResult(0)).size() - 1;
        b.sameShape({last});
        return std::optional<ShardingRule>(b.take());
      })
      .Case<SoftmaxOp, LogSoftmaxOp, SoftmaxGradOp, LogSoftmaxGradOp>(
          [&](Operation *) {
            // The normalised dimension may be split (a vocabulary-parallel
            // LM head's logits): dist-spmd then reduces the max and the sum
            // over its axes.
            RuleBuilder b(op);
            b.sameShape();
            return std::optional<ShardingRule>(b.take());
          })
      .Case([&](LayerNormOp o) {
        return normRule(op, o.getInput(), o.getAxis(),
                        {o.getMean(), o.getRstd()},
                        {o.getWeight(), o.getBias()});
      })
      .Case([&](LayerNormGradOp o) {
        return normRule(op, o.getInput(), o.getAxis(),
                        {o.getMean(), o.getRstd()},
                        {o.getWeight(), o.getGradWeight(), o.getGradBias()},
                        FactorKind::Reduction);
      })
      .Case([&](RmsNormOp o) {
        return normRule(op, o.getInput(), o.getAxis(), {o.getRstd()},
                        {o.getWeight()});
      })
      .Case([&](RmsNormGradOp o) {
        return normRule(op, o.getInput(), o.getAxis(), {o.getRstd()},
                        {o.getWeight(), o.getGradWeight()},
                        FactorKind::Reduction);
      })
      .Case<SliceOp, PadOp>([&](Operation *) -> std::optional<ShardingRule> {
        // Dimensions the op leaves alone pass through; the others stay
        // whole, but for a slice taking one whole block of a dimension seen
        // as equal blocks (q, k or v of a fused QKV projection): the
        // operand's dimension is then [blocks, block] and the block factor
        // passes, so the split of each block carries over.
        RuleBuilder b(op);
        ArrayRef<int64_t> in = shapeOf(op->getOperand(0)),
                          out = shapeOf(op->getResult(0));
        auto slice = dyn_cast<SliceOp>(op);
        for (unsigned d = 0; d < in.size(); ++d) {
          bool same = in[d] == out[d];
          bool block = slice && !same && out[d] > 0 && in[d] % out[d] == 0 &&
                       slice.getStrides()[d] == 1 &&
                       slice.getStart()[d] % out[d] == 0;
          if (block) {
            b.operand(0, d, b.factor(in[d] / out[d], FactorKind::Replicated));
            int64_t f = b.factor(out[d]);
            b.operand(0, d, f);
            b.result(0, d, f);
            continue;
          }
          int64_t f = b.factor(in[d], same ? FactorKind::Parallel
                                           : FactorKind::Replicated);
          b.operand(0, d, f);
          if (same)
            b.result(0, d, f);
        }
        return b.take();
      })
      .Case([&](GatherOp o) {
        return lookupRule(op, o.getAxis(), o.getBatchDims(), /*scatter=*/false);
      })
      .Case([&](ScatterAddOp o) {
        return lookupRule(op, o.getAxis(), o.getBatchDims(), /*scatter=*/true);
      })
      .Case([&](AttentionOp o) -> std::optional<ShardingRule> {
        // q [..., S, D], k [..., T, D], v [..., T, Dv] -> out [..., S, Dv],
        // lse [..., S]: the batch and head dimensions and the queries are
        // parallel (Megatron splits the heads); the keys (each row's
        // softmax) and the head dimension stay whole.
        if (o.getSeqDim())
          return std::nullopt;
        RuleBuilder b(op);
        ArrayRef<int64_t> q = shapeOf(o.getQuery()), v = shapeOf(o.getValue());
        int64_t rank = q.size();
        if (rank < 2 || shapeOf(o.getKey()).size() != size_t(rank) ||
            v.size() != size_t(rank))
          return std::nullopt;
        for (int64_t d = 0; d < rank - 2; ++d) {
          int64_t f = b.factor(q[d]);
          for (unsigned i = 0; i < 3; ++i)
            b.operand(i, d, f);
          b.result(0, d, f);
          b.result(1, d, f);
        }
        int64_t queries = b.factor(q[rank - 2]);
        b.operand(0, rank - 2, queries);
        b.result(0, rank - 2, queries);
        b.result(1, rank - 2, queries);
        int64_t keys = b.factor(v[rank - 2], FactorKind::Replicated);
        b.operand(1, rank - 2, keys);
        b.operand(2, rank - 2, keys);
        int64_t head = b.factor(q[rank - 1], FactorKind::Replicated);
        b.operand(0, rank - 1, head);
        b.operand(1, rank - 1, head);
        int64_t valueHead = b.factor(v[rank - 1], FactorKind::Replicated);
        b.operand(2, rank - 1, valueHead);
        b.result(0, rank - 1, valueHead);
        return b.take();
      })
      .Case([&](AttentionGradOp o) -> std::optional<ShardingRule> {
        // Operands q, k, v, out, lse, grad_out; results grad q, k, v. The
        // batch and heads are parallel; the queries are a reduction factor
        // for the key and value gradients (they sum over the queries).
        if (o.getSeqDim())
          return std::nullopt;
        RuleBuilder b(op);
        ArrayRef<int64_t> q = shapeOf(o.getQuery()), v = shapeOf(o.getValue());
        int64_t rank = q.size();
        if (rank < 2 || v.size() != size_t(rank))
          return std::nullopt;
        for (int64_t d = 0; d < rank - 2; ++d) {
          int64_t f = b.factor(q[d]);
          for (unsigned i = 0; i < 6; ++i)
            b.operand(i, d, f);
          for (unsigned i = 0; i < 3; ++i)
            b.result(i, d, f);
        }
        int64_t queries = b.factor(q[rank - 2], FactorKind::Reduction);
        for (unsigned i : {0u, 3u, 4u, 5u})
          b.operand(i, rank - 2, queries);
        b.result(0, rank - 2, queries);
        int64_t keys = b.factor(v[rank - 2], FactorKind::Replicated);
        for (unsigned i : {1u, 2u})
          b.operand(i, rank - 2, keys);
        b.result(1, rank - 2, keys);
        b.result(2, rank - 2, keys);
        int64_t head = b.factor(q[rank - 1], FactorKind::Replicated);
        b.operand(0, rank - 1, head);
        b.operand(1, rank - 1, head);
        b.result(0, rank - 1, head);
        b.result(1, rank - 1, head);
        int64_t valueHead = b.factor(v[rank - 1], FactorKind::Replicated);
        for (unsigned i : {2u, 3u, 5u})
          b.operand(i, rank - 1, valueHead);
        b.result(2, rank - 1, valueHead);
        return b.take();
      })
      .Case<CrossEntropyOp, CrossEntropyGradOp>(
          [&](Operation *) -> std::optional<ShardingRule> {
            // logits [N, C], labels [N] (and the gradient's grad_loss: [N]
            // for `none`, a scalar otherwise). The rows are parallel, or a
            // reduction for the loss of `sum` and `mean`; the classes stay
            // whole. A `mean` divides by the whole count of rows, so its
            // rows split only over replica axes (dist-spmd checks).
            RuleBuilder b(op);
            ArrayRef<int64_t> logits = shapeOf(op->getOperand(0));
            if (logits.size() != 2)
              return std::nullopt;
            bool gradient = isa<CrossEntropyGradOp>(op);
            auto reduction =
                op->getAttrOfType<LossReductionAttr>("reduction").getValue();
            bool rowsKept = gradient || reduction == LossReduction::none;
            int64_t rows =
                b.factor(logits[0], rowsKept ? FactorKind::Parallel
                                             : FactorKind::Reduction);
            b.operand(0, 0, rows);
            b.operand(1, 0, rows);
            b.operand(0, 1, b.factor(logits[1], FactorKind::Replicated));
            if (gradient) {
              if (reduction == LossReduction::none)
                b.operand(2, 0, rows);
              b.result(0, 0, rows);
              b.result(0, 1, b.rule.operands[0][1].front());
            } else if (reduction == LossReduction::none) {
              b.result(0, 0, rows);
            }
            return b.take();
          })
      .Case([&](ConcatenateOp o) -> std::optional<ShardingRule> {
        RuleBuilder b(op);
        ArrayRef<int64_t> out = shapeOf(o.getResult());
        for (unsigned d = 0; d < out.size(); ++d) {
          if (int64_t(d) == o.getDim()) {
            // Equal pieces make the result's dimension [pieces, piece]:
            // pieces split alike give it split block-wise (the gradient of
            // a fused QKV projection). Unequal ones stay whole.
            int64_t piece = shapeOf(o.getInputs().front())[d];
            if (!llvm::all_of(o.getInputs(), [&](Value input) {
                  return shapeOf(input)[d] == piece;
                }))
              continue;
            b.result(0, d,
                     b.factor(o.getInputs().size(), FactorKind::Replicated));
            int64_t f = b.factor(piece);
            b.result(0, d, f);
            for (unsigned i = 0; i < o.getInputs().size(); ++i)
              b.operand(i, d, f);
            continue;
          }
          int64_t f = b.factor(out[d]);
          b.result(0, d, f);
          for (unsigned i = 0; i < o.getInputs().size(); ++i)
            b.operand(i, d, f);
        }
        return b.take();
      })
      .Default([](Operation *) { return std::nullopt; });
}
