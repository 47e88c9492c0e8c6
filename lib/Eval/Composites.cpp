//===- Composites.cpp - reference semantics of composite trn ops ---------===//
//
// Each composite is evaluated by its documented formula in f64 (see the op
// descriptions in TrnOps.td). Results are stored (rounded) once at the end.
//
//===----------------------------------------------------------------------===//

#include "Interpreter.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "llvm/ADT/TypeSwitch.h"

#include <deque>

using namespace mlir::trn::eval;
using namespace mlir::trn::eval::detail;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Softmax-family ops along `dim`: `lineFn(x, dy, out, base, stride, n)` is
/// called for every line.
template <typename LineFn>
Tensor alongLines(const Tensor &like, int64_t dim, LineFn lineFn) {
  Tensor out = Tensor::zeros(like.dtype, like.shape);
  Lines lines(like.shape, dim);
  std::vector<double> buffer(lines.n);
  lines.forEach([&](int64_t base, int64_t stride) {
    lineFn(base, stride, lines.n, buffer);
    for (int64_t k = 0; k < lines.n; ++k)
      out.setDouble(base + k * stride, buffer[k]);
  });
  return out;
}

/// log(sum(exp(v))) computed stably.
double logSumExp(const double *values, int64_t n) {
  double max = kNegInf;
  for (int64_t k = 0; k < n; ++k)
    max = std::max(max, values[k]);
  if (max == kNegInf)
    return kNegInf;
  double sum = 0.0;
  for (int64_t k = 0; k < n; ++k)
    sum += std::exp(values[k] - max);
  return max + std::log(sum);
}

/// Sizes of the leading (statistics) and normalised parts of a norm input.
struct NormShape {
  int64_t rows, n;
  NormShape(ArrayRef<int64_t> shape, int64_t axis)
      : rows(product(shape.take_front(axis))),
        n(product(shape.drop_front(axis))) {}
};

/// The leading (batch) size and the two trailing sizes of attention operands.
struct AttentionShape {
  int64_t batch, s, t, d, dv;
  AttentionShape(const Tensor &q, const Tensor &k, const Tensor &v) {
    size_t rank = q.shape.size();
    batch = product(ArrayRef<int64_t>(q.shape).drop_back(2));
    s = q.shape[rank - 2];
    d = q.shape[rank - 1];
    t = k.shape[rank - 2];
    dv = v.shape[rank - 1];
  }
};

/// An attention op's tensors in the canonical [batch..., S, D] order: with
/// `seq_dim`, operands are permuted into it and results back out of it.
class CanonicalAttention {
public:
  /// For a trn.attention or trn.attention_grad.
  template <typename AttentionLikeOp>
  explicit CanonicalAttention(AttentionLikeOp op) {
    int64_t rank = cast<RankedTensorType>(op.getQuery().getType()).getRank();
    int64_t seqDim = trnops::attentionSeqDim(op.getSeqDim(), rank);
    if (seqDim == rank - 2)
      return;
    toCanonical = trnops::attentionToCanonical(rank, seqDim);
    fromCanonical = invertPermutationVector(toCanonical);
  }
  const Tensor &operand(const Tensor &t) {
    if (toCanonical.empty())
      return t;
    copies.push_back(permute(t, toCanonical));
    return copies.back();
  }
  /// A zero result in canonical order, from the op's own `make`.
  Tensor result(const Tensor &zeros) {
    return toCanonical.empty() ? zeros : permute(zeros, toCanonical);
  }
  Tensor finish(Tensor canonical) {
    return toCanonical.empty() ? std::move(canonical)
                               : permute(canonical, fromCanonical);
  }

private:
  SmallVector<int64_t> toCanonical, fromCanonical;
  std::deque<Tensor> copies;
};

/// Scaled, masked scores of one batch: scores[i * t + j].
void attentionScores(const Tensor &q, const Tensor &k, const AttentionShape &a,
                     int64_t b, double scale, bool causal,
                     std::vector<double> &scores) {
  scores.assign(a.s * a.t, 0.0);
  for (int64_t i = 0; i < a.s; ++i)
    for (int64_t j = 0; j < a.t; ++j) {
      if (causal && j > i) {
        scores[i * a.t + j] = kNegInf;
        continue;
      }
      double dot = 0.0;
      for (int64_t c = 0; c < a.d; ++c)
        dot += q.floats[(b * a.s + i) * a.d + c] *
               k.floats[(b * a.t + j) * a.d + c];
      scores[i * a.t + j] = scale * dot;
    }
}

} // namespace

LogicalResult Interpreter::evalComposite(Operation *op) {
  using namespace trnops;
  // softmax(x) = exp(x - lse(x)) and log_softmax(x) = x - lse(x) along `dim`.
  auto softmaxAlong = [&](Value operand, int64_t dim, Value result, bool log) {
    const Tensor &x = get(operand);
    Tensor out = alongLines(
        x, dim,
        [&](int64_t base, int64_t stride, int64_t n, std::vector<double> &y) {
          for (int64_t k = 0; k < n; ++k)
            y[k] = x.floats[base + k * stride];
          double lse = logSumExp(y.data(), n);
          for (int64_t k = 0; k < n; ++k)
            y[k] = log ? y[k] - lse : std::exp(y[k] - lse);
        });
    values[result] = std::move(out);
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](SoftmaxOp o) {
        return softmaxAlong(o.getOperand(), o.getDim(), o.getResult(),
                            /*log=*/false);
      })
      .Case([&](LogSoftmaxOp o) {
        return softmaxAlong(o.getOperand(), o.getDim(), o.getResult(),
                            /*log=*/true);
      })
      .Case([&](SoftmaxGradOp o) {
        const Tensor &y = get(o.getOutput());
        const Tensor &dy = get(o.getGradOutput());
        Tensor out = alongLines(y, o.getDim(),
                                [&](int64_t base, int64_t stride, int64_t n,
                                    std::vector<double> &dx) {
                                  double dot = 0.0;
                                  for (int64_t k = 0; k < n; ++k)
                                    dot += y.floats[base + k * stride] *
                                           dy.floats[base + k * stride];
                                  for (int64_t k = 0; k < n; ++k)
                                    dx[k] =
                                        y.floats[base + k * stride] *
                                        (dy.floats[base + k * stride] - dot);
                                });
        values[o.getResult()] = std::move(out);
        return success();
      })
      .Case([&](LogSoftmaxGradOp o) {
        const Tensor &y = get(o.getOutput());
        const Tensor &dy = get(o.getGradOutput());
        Tensor out =
            alongLines(y, o.getDim(),
                       [&](int64_t base, int64_t stride, int64_t n,
                           std::vector<double> &dx) {
                         double sum = 0.0;
                         for (int64_t k = 0; k < n; ++k)
                           sum += dy.floats[base + k * stride];
                         for (int64_t k = 0; k < n; ++k)
                           dx[k] = dy.floats[base + k * stride] -
                                   std::exp(y.floats[base + k * stride]) * sum;
                       });
        values[o.getResult()] = std::move(out);
        return success();
      })
      .Case([&](LayerNormOp o) {
        const Tensor &x = get(o.getInput());
        const Tensor &w = get(o.getWeight());
        const Tensor &bias = get(o.getBias());
        double eps = o.getEpsilon().convertToDouble();
        Tensor out = make(o.getOutput()), mean = make(o.getMean()),
               rstd = make(o.getRstd());
        NormShape ns(x.shape, o.getAxis());
        for (int64_t r = 0; r < ns.rows; ++r) {
          const double *row = &x.floats[r * ns.n];
          double sum = 0.0;
          for (int64_t k = 0; k < ns.n; ++k)
            sum += row[k];
          double mu = sum / ns.n;
          double var = 0.0;
          for (int64_t k = 0; k < ns.n; ++k)
            var += (row[k] - mu) * (row[k] - mu);
          double inv = 1.0 / std::sqrt(var / ns.n + eps);
          for (int64_t k = 0; k < ns.n; ++k)
            out.setDouble(r * ns.n + k,
                          (row[k] - mu) * inv * w.floats[k] + bias.floats[k]);
          mean.setDouble(r, mu);
          rstd.setDouble(r, inv);
        }
        values[o.getOutput()] = std::move(out);
        values[o.getMean()] = std::move(mean);
        values[o.getRstd()] = std::move(rstd);
        return success();
      })
      .Case([&](LayerNormGradOp o) {
        const Tensor &dy = get(o.getGradOutput());
        const Tensor &x = get(o.getInput());
        const Tensor &mean = get(o.getMean());
        const Tensor &rstd = get(o.getRstd());
        const Tensor &w = get(o.getWeight());
        Tensor dx = make(o.getGradInput()), dw = make(o.getGradWeight()),
               db = make(o.getGradBias());
        NormShape ns(x.shape, o.getAxis());
        std::vector<double> dwSum(ns.n, 0.0), dbSum(ns.n, 0.0), xhat(ns.n),
            g(ns.n);
        for (int64_t r = 0; r < ns.rows; ++r) {
          double meanG = 0.0, meanGX = 0.0;
          for (int64_t k = 0; k < ns.n; ++k) {
            int64_t i = r * ns.n + k;
            xhat[k] = (x.floats[i] - mean.floats[r]) * rstd.floats[r];
            g[k] = dy.floats[i] * w.floats[k];
            meanG += g[k];
            meanGX += g[k] * xhat[k];
            dwSum[k] += dy.floats[i] * xhat[k];
            dbSum[k] += dy.floats[i];
          }
          meanG /= ns.n;
          meanGX /= ns.n;
          for (int64_t k = 0; k < ns.n; ++k)
            dx.setDouble(r * ns.n + k,
                         rstd.floats[r] * (g[k] - meanG - xhat[k] * meanGX));
        }
        for (int64_t k = 0; k < ns.n; ++k) {
          dw.setDouble(k, dwSum[k]);
          db.setDouble(k, dbSum[k]);
        }
        values[o.getGradInput()] = std::move(dx);
        values[o.getGradWeight()] = std::move(dw);
        values[o.getGradBias()] = std::move(db);
        return success();
      })
      .Case([&](RmsNormOp o) {
        const Tensor &x = get(o.getInput());
        const Tensor &w = get(o.getWeight());
        double eps = o.getEpsilon().convertToDouble();
        Tensor out = make(o.getOutput()), rstd = make(o.getRstd());
        NormShape ns(x.shape, o.getAxis());
        for (int64_t r = 0; r < ns.rows; ++r) {
          const double *row = &x.floats[r * ns.n];
          double squares = 0.0;
          for (int64_t k = 0; k < ns.n; ++k)
            squares += row[k] * row[k];
          double inv = 1.0 / std::sqrt(squares / ns.n + eps);
          for (int64_t k = 0; k < ns.n; ++k)
            out.setDouble(r * ns.n + k, row[k] * inv * w.floats[k]);
          rstd.setDouble(r, inv);
        }
        values[o.getOutput()] = std::move(out);
        values[o.getRstd()] = std::move(rstd);
        return success();
      })
      .Case([&](RmsNormGradOp o) {
        const Tensor &dy = get(o.getGradOutput());
        const Tensor &x = get(o.getInput());
        const Tensor &rstd = get(o.getRstd());
        const Tensor &w = get(o.getWeight());
        Tensor dx = make(o.getGradInput()), dw = make(o.getGradWeight());
        NormShape ns(x.shape, o.getAxis());
        std::vector<double> dwSum(ns.n, 0.0), xhat(ns.n), g(ns.n);
        for (int64_t r = 0; r < ns.rows; ++r) {
          double meanGX = 0.0;
          for (int64_t k = 0; k < ns.n; ++k) {
            int64_t i = r * ns.n + k;
            xhat[k] = x.floats[i] * rstd.floats[r];
            g[k] = dy.floats[i] * w.floats[k];
            meanGX += g[k] * xhat[k];
            dwSum[k] += dy.floats[i] * xhat[k];
          }
          meanGX /= ns.n;
          for (int64_t k = 0; k < ns.n; ++k)
            dx.setDouble(r * ns.n + k,
                         rstd.floats[r] * (g[k] - xhat[k] * meanGX));
        }
        for (int64_t k = 0; k < ns.n; ++k)
          dw.setDouble(k, dwSum[k]);
        values[o.getGradInput()] = std::move(dx);
        values[o.getGradWeight()] = std::move(dw);
        return success();
      })
      .Case([&](AttentionOp o) {
        CanonicalAttention canonical(o);
        const Tensor &q = canonical.operand(get(o.getQuery()));
        const Tensor &k = canonical.operand(get(o.getKey()));
        const Tensor &v = canonical.operand(get(o.getValue()));
        double scale = o.getScale().convertToDouble();
        Tensor out = canonical.result(make(o.getOutput())),
               lse = make(o.getLse());
        AttentionShape a(q, k, v);
        std::vector<double> scores;
        for (int64_t b = 0; b < a.batch; ++b) {
          attentionScores(q, k, a, b, scale, o.getCausal(), scores);
          for (int64_t i = 0; i < a.s; ++i) {
            double *row = &scores[i * a.t];
            double rowLse = logSumExp(row, a.t);
            lse.setDouble(b * a.s + i, rowLse);
            for (int64_t c = 0; c < a.dv; ++c) {
              double sum = 0.0;
              for (int64_t j = 0; j < a.t; ++j)
                if (row[j] != kNegInf)
                  sum += std::exp(row[j] - rowLse) *
                         v.floats[(b * a.t + j) * a.dv + c];
              out.setDouble((b * a.s + i) * a.dv + c, sum);
            }
          }
        }
        values[o.getOutput()] = canonical.finish(std::move(out));
        values[o.getLse()] = std::move(lse);
        return success();
      })
      .Case([&](AttentionGradOp o) {
        CanonicalAttention canonical(o);
        const Tensor &q = canonical.operand(get(o.getQuery()));
        const Tensor &k = canonical.operand(get(o.getKey()));
        const Tensor &v = canonical.operand(get(o.getValue()));
        const Tensor &out = canonical.operand(get(o.getOutput()));
        const Tensor &lse = get(o.getLse());
        const Tensor &dout = canonical.operand(get(o.getGradOutput()));
        double scale = o.getScale().convertToDouble();
        Tensor dq = canonical.result(make(o.getGradQuery())),
               dk = canonical.result(make(o.getGradKey())),
               dv = canonical.result(make(o.getGradValue()));
        AttentionShape a(q, k, v);
        std::vector<double> p, ds, dqAcc, dkAcc, dvAcc;
        for (int64_t b = 0; b < a.batch; ++b) {
          attentionScores(q, k, a, b, scale, o.getCausal(), p);
          for (int64_t i = 0; i < a.s; ++i)
            for (int64_t j = 0; j < a.t; ++j) {
              double &x = p[i * a.t + j];
              x = x == kNegInf ? 0.0 : std::exp(x - lse.floats[b * a.s + i]);
            }
          // ds = p * (do v^T - rowsum(do * out)).
          ds.assign(a.s * a.t, 0.0);
          for (int64_t i = 0; i < a.s; ++i) {
            double rowDot = 0.0;
            for (int64_t c = 0; c < a.dv; ++c)
              rowDot += dout.floats[(b * a.s + i) * a.dv + c] *
                        out.floats[(b * a.s + i) * a.dv + c];
            for (int64_t j = 0; j < a.t; ++j) {
              double dp = 0.0;
              for (int64_t c = 0; c < a.dv; ++c)
                dp += dout.floats[(b * a.s + i) * a.dv + c] *
                      v.floats[(b * a.t + j) * a.dv + c];
              ds[i * a.t + j] = p[i * a.t + j] * (dp - rowDot);
            }
          }
          dqAcc.assign(a.s * a.d, 0.0);
          dkAcc.assign(a.t * a.d, 0.0);
          dvAcc.assign(a.t * a.dv, 0.0);
          for (int64_t i = 0; i < a.s; ++i)
            for (int64_t j = 0; j < a.t; ++j) {
              double pij = p[i * a.t + j], dsij = ds[i * a.t + j];
              for (int64_t c = 0; c < a.dv; ++c)
                dvAcc[j * a.dv + c] +=
                    pij * dout.floats[(b * a.s + i) * a.dv + c];
              for (int64_t c = 0; c < a.d; ++c) {
                dqAcc[i * a.d + c] +=
                    scale * dsij * k.floats[(b * a.t + j) * a.d + c];
                dkAcc[j * a.d + c] +=
                    scale * dsij * q.floats[(b * a.s + i) * a.d + c];
              }
            }
          for (int64_t x = 0; x < a.s * a.d; ++x)
            dq.setDouble(b * a.s * a.d + x, dqAcc[x]);
          for (int64_t x = 0; x < a.t * a.d; ++x)
            dk.setDouble(b * a.t * a.d + x, dkAcc[x]);
          for (int64_t x = 0; x < a.t * a.dv; ++x)
            dv.setDouble(b * a.t * a.dv + x, dvAcc[x]);
        }
        values[o.getGradQuery()] = canonical.finish(std::move(dq));
        values[o.getGradKey()] = canonical.finish(std::move(dk));
        values[o.getGradValue()] = canonical.finish(std::move(dv));
        return success();
      })
      .Case<CrossEntropyOp, CrossEntropyGradOp>([&](auto o) -> LogicalResult {
        constexpr bool isGrad = std::is_same_v<decltype(o), CrossEntropyGradOp>;
        const Tensor &logits = get(o.getLogits());
        const Tensor &labels = get(o.getLabels());
        int64_t rows = logits.shape[0], classes = logits.shape[1];
        int64_t ignore = o.getIgnoreIndex();
        LossReduction reduction = o.getReduction();
        std::vector<double> rowLoss(rows, 0.0);
        int64_t counted = 0;
        for (int64_t r = 0; r < rows; ++r) {
          int64_t label = labels.ints[r];
          if (label == ignore)
            continue;
          if (label < 0 || label >= classes)
            return o.emitError("label ")
                   << label << " of row " << r << " is out of range [0, "
                   << classes << ") and is not ignore_index (" << ignore << ")";
          ++counted;
          const double *row = &logits.floats[r * classes];
          rowLoss[r] = logSumExp(row, classes) - row[label];
        }
        Tensor out = make(o->getResult(0));
        if constexpr (!isGrad) {
          if (reduction == LossReduction::none) {
            for (int64_t r = 0; r < rows; ++r)
              out.setDouble(r, rowLoss[r]);
          } else {
            double sum = 0.0;
            for (double l : rowLoss)
              sum += l;
            out.setDouble(
                0, reduction == LossReduction::sum
                       ? sum
                       : (counted ? sum / counted
                                  : std::numeric_limits<double>::quiet_NaN()));
          }
        } else {
          const Tensor &gradLoss = get(o.getGradLoss());
          for (int64_t r = 0; r < rows; ++r) {
            int64_t label = labels.ints[r];
            if (label == ignore)
              continue; // gradient row stays 0
            double g = reduction == LossReduction::none ? gradLoss.floats[r]
                       : reduction == LossReduction::sum
                           ? gradLoss.floats[0]
                           : gradLoss.floats[0] / counted;
            const double *row = &logits.floats[r * classes];
            double lse = logSumExp(row, classes);
            for (int64_t c = 0; c < classes; ++c)
              out.setDouble(r * classes + c,
                            g * (std::exp(row[c] - lse) - (c == label)));
          }
        }
        values[o->getResult(0)] = std::move(out);
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitError("reference evaluator: op '")
               << other->getName() << "' is not supported";
      });
}
