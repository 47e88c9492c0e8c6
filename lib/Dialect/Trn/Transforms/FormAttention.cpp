//===- FormAttention.cpp - attention written out, as trn.attention -------===//
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

#include <cmath>
#include <functional>

namespace mlir::trn {
#define GEN_PASS_DEF_TRNFORMATTENTION
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

/// A batched matmul `lhs @ rhs` of rank-r operands: every dimension but the
/// last two is a batch dimension, lhs's last contracts with rhs's
/// second-to-last (what PyTorch's `@` on 3-D and 4-D tensors traces to,
/// after trn-split-batch-dims).
bool isBatchedMatmul(DotGeneralOp dot) {
  int64_t rank = rankOf(dot.getLhs());
  if (rank < 3 || rankOf(dot.getRhs()) != rank)
    return false;
  auto batch = llvm::to_vector(llvm::seq<int64_t>(0, rank - 2));
  return dot.getLhsBatchingDims() == ArrayRef<int64_t>(batch) &&
         dot.getRhsBatchingDims() == ArrayRef<int64_t>(batch) &&
         dot.getLhsContractingDims() == ArrayRef<int64_t>{rank - 1} &&
         dot.getRhsContractingDims() == ArrayRef<int64_t>{rank - 2};
}

DotGeneralOp batchedMatmulOf(Value value) {
  auto dot = value.getDefiningOp<DotGeneralOp>();
  return dot && isBatchedMatmul(dot) ? dot : DotGeneralOp();
}

/// `value` as a transpose of a root value that is not one:
/// value = transpose(root, perm).
std::pair<Value, SmallVector<int64_t>> asTransposed(Value value) {
  SmallVector<int64_t> perm =
      llvm::to_vector(llvm::seq<int64_t>(0, rankOf(value)));
  while (auto transpose = value.getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t dim : perm)
      composed.push_back(transpose.getPerm()[dim]);
    perm = std::move(composed);
    value = transpose.getOperand();
  }
  return {value, perm};
}

/// Whether `swapped` is `value` with its last two dimensions exchanged.
bool isLastTwoSwapped(Value swapped, Value value) {
  auto [swappedRoot, swappedPerm] = asTransposed(swapped);
  auto [root, perm] = asTransposed(value);
  if (swappedRoot != root || swappedPerm.size() != perm.size())
    return false;
  int64_t rank = perm.size();
  for (int64_t i = 0; i < rank; ++i) {
    int64_t from = i == rank - 1 ? rank - 2 : i == rank - 2 ? rank - 1 : i;
    if (swappedPerm[i] != perm[from])
      return false;
  }
  return true;
}

/// The elements of `value` when it is a splat constant of element type T.
template <typename T> DenseElementsAttr splatOf(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  auto dense =
      constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !dense.isSplat() || !isa<T>(dense.getType().getElementType()))
    return nullptr;
  return dense;
}

/// The splat value of a float constant, if `value` is one.
std::optional<double> splatFloat(Value value) {
  if (DenseElementsAttr dense = splatOf<FloatType>(value))
    return dense.getSplatValue<APFloat>().convertToDouble();
  return std::nullopt;
}

std::optional<int64_t> splatInt(Value value) {
  if (DenseElementsAttr dense = splatOf<IntegerType>(value))
    return dense.getSplatValue<APInt>().getSExtValue();
  return std::nullopt;
}

/// `value` as a linear function of its indices, `sum(coef[d] * i_d) + k`:
/// iotas, integer splats, sums, differences and conversions of them, with
/// broadcasts and reshapes that add or drop size-1 dimensions between.
struct Linear {
  SmallVector<int64_t> coef;
  int64_t constant = 0;
};
std::optional<Linear> linearOf(Value value) {
  int64_t rank = rankOf(value);
  if (std::optional<int64_t> k = splatInt(value))
    return Linear{SmallVector<int64_t>(rank, 0), *k};
  Operation *op = value.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto iota = dyn_cast<IotaOp>(op)) {
    Linear l{SmallVector<int64_t>(rank, 0), 0};
    l.coef[iota.getDim()] = 1;
    return l;
  }
  if (auto broadcast = dyn_cast<BroadcastInDimOp>(op)) {
    std::optional<Linear> inner = linearOf(broadcast.getOperand());
    if (!inner)
      return std::nullopt;
    Linear l{SmallVector<int64_t>(rank, 0), inner->constant};
    for (auto [j, d] : llvm::enumerate(broadcast.getDims()))
      l.coef[d] = inner->coef[j];
    return l;
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    // Only size-1 dimensions come or go: the others keep their order.
    ArrayRef<int64_t> in =
                          cast<RankedTensorType>(reshape.getOperand().getType())
                              .getShape(),
                      out = cast<RankedTensorType>(value.getType()).getShape();
    std::optional<Linear> inner = linearOf(reshape.getOperand());
    if (!inner)
      return std::nullopt;
    Linear l{SmallVector<int64_t>(rank, 0), inner->constant};
    size_t o = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      if (in[d] == 1)
        continue;
      while (o < out.size() && out[o] == 1)
        ++o;
      if (o == out.size() || out[o] != in[d])
        return std::nullopt;
      l.coef[o++] = inner->coef[d];
    }
    for (; o < out.size(); ++o)
      if (out[o] != 1)
        return std::nullopt;
    return l;
  }
  if (auto convert = dyn_cast<ConvertOp>(op)) {
    if (!isa<IntegerType>(getElementTypeOrSelf(convert.getOperand())))
      return std::nullopt;
    return linearOf(convert.getOperand());
  }
  if (isa<AddOp, SubOp>(op)) {
    std::optional<Linear> a = linearOf(op->getOperand(0)),
                          b = linearOf(op->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    int64_t sign = isa<SubOp>(op) ? -1 : 1;
    for (auto [x, y] : llvm::zip(a->coef, b->coef))
      x += sign * y;
    a->constant += sign * b->constant;
    return a;
  }
  return std::nullopt;
}

/// `value` without the broadcasts and reshapes in front of it that only
/// add or repeat leading dimensions: its last two dimensions stay the
/// last two (a [S, S] mask broadcast over the batch and the heads).
Value peelLeading(Value value) {
  while (true) {
    auto type = cast<RankedTensorType>(value.getType());
    int64_t rank = type.getRank();
    if (rank < 2)
      return value;
    Value operand;
    if (auto broadcast = value.getDefiningOp<BroadcastInDimOp>()) {
      ArrayRef<int64_t> dims = broadcast.getDims();
      if (dims.size() >= 2 && dims[dims.size() - 2] == rank - 2 &&
          dims.back() == rank - 1)
        operand = broadcast.getOperand();
    } else if (auto reshape = value.getDefiningOp<ReshapeOp>()) {
      operand = reshape.getOperand();
    }
    if (!operand || rankOf(operand) < 2)
      return value;
    auto inner = cast<RankedTensorType>(operand.getType()).getShape();
    if (inner.take_back(2) != type.getShape().take_back(2) ||
        (isa_and_nonnull<ReshapeOp>(value.getDefiningOp()) &&
         llvm::any_of(inner.drop_back(2), [](int64_t d) { return d != 1; })))
      return value;
    value = operand;
  }
}

/// A boolean [..., S, S] `pred` that is the same along its leading
/// dimensions and depends on col - row alone (its last two dimensions):
/// whether it holds on the diagonal col - row = t, for t in (-S, S).
std::optional<std::function<bool(int64_t)>> onDiagonals(Value pred) {
  pred = peelLeading(pred);
  auto type = cast<RankedTensorType>(pred.getType());
  int64_t rank = type.getRank();
  if (rank < 2 || type.getDimSize(rank - 2) != type.getDimSize(rank - 1))
    return std::nullopt;
  if (std::optional<int64_t> k = splatInt(pred)) {
    bool value = *k != 0;
    return [value](int64_t) { return value; };
  }
  // select(p, true, false) is p.
  if (auto select = pred.getDefiningOp<SelectOp>()) {
    std::optional<int64_t> onTrue = splatInt(select.getOnTrue()),
                           onFalse = splatInt(select.getOnFalse());
    if (onTrue && onFalse && *onTrue != 0 && *onFalse == 0)
      return onDiagonals(select.getPred());
    return std::nullopt;
  }
  // a and b (a causal mask and a sliding window wider than the sequence).
  if (auto both = pred.getDefiningOp<AndOp>()) {
    auto lhs = onDiagonals(both.getLhs()), rhs = onDiagonals(both.getRhs());
    if (!lhs || !rhs)
      return std::nullopt;
    return [lhs, rhs](int64_t t) { return (*lhs)(t) && (*rhs)(t); };
  }
  auto compare = pred.getDefiningOp<CompareOp>();
  if (!compare)
    return std::nullopt;
  std::optional<Linear> lhs = linearOf(compare.getLhs()),
                        rhs = linearOf(compare.getRhs());
  if (!lhs || !rhs)
    return std::nullopt;
  // d = lhs - rhs over (row, col), the last two dimensions (the leading
  // ones are the batch's and the heads': the mask must not vary along
  // them); the predicate holds on d against 0.
  int64_t row = 0, col = 0;
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t c = lhs->coef[dim] - rhs->coef[dim];
    if (dim == rank - 2)
      row = c;
    else if (dim == rank - 1)
      col = c;
    else if (c != 0 && type.getDimSize(dim) != 1)
      return std::nullopt;
  }
  int64_t constant = lhs->constant - rhs->constant;
  // d is s * (col - row) + k: a function of the diagonal (eq and ne too).
  if (row != -col)
    return std::nullopt;
  ComparisonPredicate predicate = compare.getPredicate();
  return [=](int64_t colMinusRow) {
    int64_t value = col * colMinusRow + constant;
    switch (predicate) {
    case ComparisonPredicate::lt:
      return value < 0;
    case ComparisonPredicate::le:
      return value <= 0;
    case ComparisonPredicate::gt:
      return value > 0;
    case ComparisonPredicate::ge:
      return value >= 0;
    case ComparisonPredicate::eq:
      return value == 0;
    case ComparisonPredicate::ne:
      return value != 0;
    }
    return false;
  };
}

/// Whether the i1 [..., S, S] `pred` is true exactly where the key comes
/// after the query (col > row, a causal mask: PyTorch's
/// `ones(s, s).triu(1)` or `arange(s)[None, :] > arange(s)[:, None]`): true;
/// exactly where it does not (col <= row, the positions kept:
/// `ones(s, s).tril()`, what scaled_dot_product_attention's `is_causal`
/// builds, Hugging Face's mask): false; else none.
std::optional<bool> causalPolarity(Value pred) {
  std::optional<std::function<bool(int64_t)>> holds = onDiagonals(pred);
  if (!holds)
    return std::nullopt;
  int64_t size = cast<RankedTensorType>(pred.getType()).getShape().back();
  bool after = true, notAfter = true;
  for (int64_t t = 1 - size; t < size; ++t) {
    bool value = (*holds)(t);
    after &= value == (t > 0);
    notAfter &= value == (t <= 0);
  }
  if (after)
    return true; // col > row
  if (notAfter)
    return false; // col <= row
  return std::nullopt;
}

bool isCausalMask(Value mask) { return causalPolarity(mask) == true; }

/// Whether `bias` ([..., S, S] float, the same along the leading
/// dimensions) is 0 where col <= row and -inf (or the lowest float) where
/// col > row: `where(mask, -inf, 0)` or `where(keep, 0, -inf)`, the additive
/// form of a causal mask.
bool isCausalBias(Value bias) {
  auto select = peelLeading(bias).getDefiningOp<SelectOp>();
  if (!select)
    return false;
  std::optional<double> onTrue = splatFloat(select.getOnTrue()),
                        onFalse = splatFloat(select.getOnFalse());
  if (!onTrue || !onFalse)
    return false;
  std::optional<bool> polarity = causalPolarity(select.getPred());
  if (!polarity)
    return false;
  double masked = *polarity ? *onTrue : *onFalse;
  double kept = *polarity ? *onFalse : *onTrue;
  // -inf, or the lowest float (Hugging Face's mask value): exp gives 0
  // for both, and a causal row always keeps its diagonal.
  return masked <= -1e30 && kept == 0.0;
}

/// One attention found in the graph, forward and (when present) backward.
struct Match {
  // Forward: scores = q @ kT (* scale) (masked) -> softmax -> @ v.
  DotGeneralOp scores, output;
  Value query, keyTransposed, value;
  Operation *scaled = nullptr, *masked = nullptr;
  SoftmaxOp softmax;
  // The probabilities: the softmax, or PyTorch 2's safe softmax of it
  // (0 for rows of -inf only, which a causal or no mask never leaves).
  Value probs;
  Value scaleConstant, maskPred;
  bool additiveMask = false;
  double scale = 1.0;
  bool causal = false;
  // Backward (all null without one).
  SoftmaxGradOp softmaxGrad;
  DotGeneralOp gradProbs, gradValue, gradQuery, gradKeyTransposed;
  TransposeOp probsTransposed;
  Operation *gradMasked = nullptr, *gradScaled = nullptr;
  Value gradOutput;
};

/// `op` is `x * c` or `c * x` with c a float splat: x and c.
std::optional<std::pair<Value, Value>> scaledBy(Operation *op) {
  auto mul = dyn_cast_or_null<MulOp>(op);
  if (!mul)
    return std::nullopt;
  if (splatFloat(mul.getRhs()))
    return std::make_pair(mul.getLhs(), mul.getRhs());
  if (splatFloat(mul.getLhs()))
    return std::make_pair(mul.getRhs(), mul.getLhs());
  return std::nullopt;
}

/// The select that makes `softmax` PyTorch 2's safe softmax:
/// `select(broadcast(max(x) != -inf), softmax(x), 0)` over the softmax's
/// dimension, when that is x's only other use and the softmax's only use.
SelectOp safeSoftmaxOf(SoftmaxOp softmax) {
  Value x = softmax.getOperand();
  if (!softmax->hasOneUse() || !llvm::hasNItems(x.getUses(), 2))
    return {};
  auto select = dyn_cast<SelectOp>(*softmax->user_begin());
  std::optional<double> zero =
      select ? splatFloat(select.getOnFalse()) : std::nullopt;
  if (!select || select.getOnTrue() != softmax.getResult() || !zero ||
      *zero != 0.0)
    return {};
  auto broadcast = select.getPred().getDefiningOp<BroadcastInDimOp>();
  auto compare = broadcast ? broadcast.getOperand().getDefiningOp<CompareOp>()
                           : CompareOp();
  if (!compare || compare.getPredicate() != ComparisonPredicate::ne)
    return {};
  auto reduce = compare.getLhs().getDefiningOp<ReduceOp>();
  std::optional<double> limit = splatFloat(compare.getRhs());
  int64_t dim = softmax.getDim();
  if (!reduce || reduce.getOperand() != x ||
      reduce.getKind() != ReduceKind::max ||
      reduce.getDims() != ArrayRef<int64_t>{dim} || !limit ||
      !std::isinf(*limit) || *limit > 0)
    return {};
  auto kept = llvm::to_vector(llvm::seq<int64_t>(0, rankOf(x)));
  kept.erase(kept.begin() + dim);
  if (broadcast.getDims() != ArrayRef<int64_t>(kept))
    return {};
  return select;
}

/// The forward chain that ends in `softmax`, if it is attention.
std::optional<Match> matchForward(SoftmaxOp softmax) {
  Match m;
  if (!isa_and_nonnull<func::FuncOp>(softmax->getParentOp()))
    return std::nullopt; // not inside a fusion body or another region
  m.softmax = softmax;
  Value x = softmax.getOperand();
  int64_t rank = rankOf(x);
  if (rank < 3 || int64_t(softmax.getDim()) != rank - 1)
    return std::nullopt;
  m.probs = softmax.getResult();
  if (!x.hasOneUse()) {
    // softmax(x) kept where max(x) > -inf, else 0: aten._safe_softmax.
    SelectOp safe = safeSoftmaxOf(softmax);
    if (!safe)
      return std::nullopt;
    m.probs = safe.getResult();
  }
  // Masked with -inf where a causal mask holds.
  if (auto add = x.getDefiningOp<AddOp>()) {
    // Or plus a causal bias (scaled_dot_product_attention's is_causal).
    for (unsigned i = 0; i < 2 && !m.masked; ++i) {
      Value scores = add->getOperand(1 - i);
      if (isCausalBias(add->getOperand(i)) && scores.hasOneUse()) {
        m.masked = add;
        m.additiveMask = true;
        m.causal = true;
        x = scores;
      }
    }
    if (!m.masked)
      return std::nullopt;
  } else if (auto select = x.getDefiningOp<SelectOp>()) {
    std::optional<double> fill = splatFloat(select.getOnTrue());
    if (!fill || *fill > -1e30 || !isCausalMask(select.getPred()) ||
        !select.getOnFalse().hasOneUse())
      return std::nullopt;
    m.masked = select;
    m.maskPred = select.getPred();
    m.causal = true;
    x = select.getOnFalse();
  }
  if (auto scaled = scaledBy(x.getDefiningOp())) {
    if (!scaled->first.hasOneUse())
      return std::nullopt;
    m.scaled = x.getDefiningOp();
    m.scaleConstant = scaled->second;
    m.scale = *splatFloat(scaled->second);
    x = scaled->first;
  }
  m.scores = batchedMatmulOf(x);
  if (!m.scores)
    return std::nullopt;
  m.query = m.scores.getLhs();
  m.keyTransposed = m.scores.getRhs();
  // The probabilities' users: the output matmul, and the backward's.
  for (Operation *user : m.probs.getUsers()) {
    auto dot = dyn_cast<DotGeneralOp>(user);
    if (dot && isBatchedMatmul(dot) && dot.getLhs() == m.probs && !m.output) {
      m.output = dot;
      m.value = dot.getRhs();
    } else if (auto grad = dyn_cast<SoftmaxGradOp>(user);
               grad && grad.getOutput() == m.probs && !m.softmaxGrad) {
      m.softmaxGrad = grad;
    } else if (auto transpose = dyn_cast<TransposeOp>(user);
               transpose && !m.probsTransposed &&
               isLastTwoSwapped(transpose, m.probs)) {
      m.probsTransposed = transpose;
    } else {
      return std::nullopt; // the probabilities are needed as they are
    }
  }
  if (!m.output)
    return std::nullopt;
  return m;
}

/// The backward of `m` (PyTorch's autograd of the forward chain), if the
/// probabilities have backward users.
bool matchBackward(Match &m) {
  if (!m.softmaxGrad && !m.probsTransposed)
    return true; // forward only
  if (!m.softmaxGrad || !m.probsTransposed)
    return false;
  // dV = P^T @ dO.
  if (!m.probsTransposed->hasOneUse())
    return false;
  m.gradValue = dyn_cast<DotGeneralOp>(*m.probsTransposed->user_begin());
  if (!m.gradValue || !isBatchedMatmul(m.gradValue) ||
      m.gradValue.getLhs() != m.probsTransposed.getResult())
    return false;
  m.gradOutput = m.gradValue.getRhs();
  // dP = dO @ V^T.
  m.gradProbs = batchedMatmulOf(m.softmaxGrad.getGradOutput());
  if (!m.gradProbs || m.gradProbs.getLhs() != m.gradOutput ||
      !isLastTwoSwapped(m.gradProbs.getRhs(), m.value) ||
      int64_t(m.softmaxGrad.getDim()) != rankOf(m.value) - 1)
    return false;
  // dS = softmax_grad (masked with 0) (* scale), as the forward.
  Value ds = m.softmaxGrad.getResult();
  if (m.masked && !m.additiveMask) {
    // (An additive bias has no gradient to mask.)
    if (!ds.hasOneUse())
      return false;
    auto select = dyn_cast<SelectOp>(*ds.user_begin());
    std::optional<double> zero =
        select ? splatFloat(select.getOnTrue()) : std::nullopt;
    if (!select || select.getPred() != m.maskPred || !zero || *zero != 0.0 ||
        select.getOnFalse() != ds)
      return false;
    m.gradMasked = select;
    ds = select.getResult();
  }
  if (m.scaled) {
    if (!ds.hasOneUse())
      return false;
    auto scaled = scaledBy(*ds.user_begin());
    if (!scaled || scaled->first != ds ||
        splatFloat(scaled->second) != splatFloat(m.scaleConstant))
      return false;
    m.gradScaled = *ds.user_begin();
    ds = m.gradScaled->getResult(0);
  }
  // dQ = dS @ K and dK^T = Q^T @ dS.
  for (Operation *user : ds.getUsers()) {
    auto dot = dyn_cast<DotGeneralOp>(user);
    if (!dot || !isBatchedMatmul(dot))
      return false;
    if (dot.getLhs() == ds && !m.gradQuery &&
        isLastTwoSwapped(dot.getRhs(), m.keyTransposed))
      m.gradQuery = dot;
    else if (dot.getRhs() == ds && !m.gradKeyTransposed &&
             isLastTwoSwapped(dot.getLhs(), m.query))
      m.gradKeyTransposed = dot;
    else
      return false;
  }
  return m.gradQuery && m.gradKeyTransposed;
}

/// A transpose exchanging the last two dimensions of `value`.
Value swapLastTwo(OpBuilder &builder, Location loc, Value value) {
  int64_t rank = rankOf(value);
  auto perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return builder.create<TransposeOp>(loc, value, perm);
}

/// Replaces `m` by trn.attention (and trn.attention_grad); false when the
/// fused ops would not give the same types.
bool rewrite(Match &m) {
  OpBuilder builder(m.output);
  Location loc = m.output.getLoc();
  Value key = swapLastTwo(builder, loc, m.keyTransposed);
  auto attention = builder.create<AttentionOp>(
      loc, m.query, key, m.value, builder.getF64FloatAttr(m.scale),
      m.causal ? builder.getUnitAttr() : UnitAttr(), IntegerAttr());
  bool sameTypes = attention.getOutput().getType() == m.output.getType();
  AttentionGradOp grad;
  if (sameTypes && m.softmaxGrad) {
    // Before the first backward op that reads dO: every operand is made.
    Operation *first = m.gradValue->isBeforeInBlock(m.gradProbs)
                           ? m.gradValue.getOperation()
                           : m.gradProbs.getOperation();
    // The backward must come after the forward's output (as traced).
    if (first->getBlock() != m.output->getBlock() ||
        first->isBeforeInBlock(m.output)) {
      attention.erase();
      if (key.use_empty())
        key.getDefiningOp()->erase();
      return false;
    }
    builder.setInsertionPoint(first);
    grad = builder.create<AttentionGradOp>(
        m.gradValue.getLoc(), m.query, key, m.value, attention.getOutput(),
        attention.getLse(), m.gradOutput, builder.getF64FloatAttr(m.scale),
        m.causal ? builder.getUnitAttr() : UnitAttr(), IntegerAttr());
    sameTypes = grad.getGradQuery().getType() == m.gradQuery.getType() &&
                grad.getGradValue().getType() == m.gradValue.getType() &&
                grad.getGradKey().getType() == key.getType() &&
                key.getType() == m.gradQuery.getRhs().getType();
  }
  if (!sameTypes) {
    if (grad)
      grad.erase();
    attention.erase();
    if (key.use_empty())
      key.getDefiningOp()->erase();
    return false;
  }
  m.output.getResult().replaceAllUsesWith(attention.getOutput());
  if (grad) {
    m.gradValue.getResult().replaceAllUsesWith(grad.getGradValue());
    m.gradQuery.getResult().replaceAllUsesWith(grad.getGradQuery());
    builder.setInsertionPoint(m.gradKeyTransposed);
    m.gradKeyTransposed.getResult().replaceAllUsesWith(
        swapLastTwo(builder, m.gradKeyTransposed.getLoc(), grad.getGradKey()));
  }
  return true;
}

struct TrnFormAttentionPass
    : mlir::trn::impl::TrnFormAttentionBase<TrnFormAttentionPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    SmallVector<SoftmaxOp> softmaxes;
    function.walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    bool changed = false;
    for (SoftmaxOp softmax : softmaxes) {
      std::optional<Match> m = matchForward(softmax);
      if (m && matchBackward(*m))
        changed |= rewrite(*m);
    }
    // What the fused ops replaced is dead now.
    if (changed) {
      IRRewriter rewriter(function.getContext());
      (void)runRegionDCE(rewriter, function->getRegions());
    }
  }
};

} // namespace
