//===- Interpreter.h - reference evaluator internals -----------*- C++ -*-===//
//
// Shared by Evaluator.cpp (primitives) and Composites.cpp (composite ops).
//
//===----------------------------------------------------------------------===//

#ifndef TRN_LIB_EVAL_INTERPRETER_H
#define TRN_LIB_EVAL_INTERPRETER_H

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Eval/Evaluator.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <limits>
#include <numeric>

namespace mlir::trn::eval::detail {
using namespace mlir;
namespace trnops = mlir::trn;

//===----------------------------------------------------------------------===//
// Index helpers
//===----------------------------------------------------------------------===//

inline std::vector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Iterates over every multi-index of `shape` in row-major order.
template <typename Fn> void forEachIndex(ArrayRef<int64_t> shape, Fn fn) {
  int64_t count = checkedNumElements(shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t linear = 0; linear < count; ++linear) {
    fn(linear, ArrayRef<int64_t>(index));
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// `x` with its dims permuted: result dim i is x's dim perm[i].
inline Tensor permute(const Tensor &x, ArrayRef<int64_t> perm) {
  std::vector<int64_t> shape;
  for (int64_t d : perm)
    shape.push_back(x.shape[d]);
  Tensor out = Tensor::zeros(x.dtype, shape);
  std::vector<int64_t> strides = stridesOf(x.shape);
  forEachIndex(out.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    int64_t source = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      source += index[d] * strides[perm[d]];
    x.isFloat() ? void(out.floats[linear] = x.floats[source])
                : void(out.ints[linear] = x.ints[source]);
  });
  return out;
}

inline int64_t product(ArrayRef<int64_t> values) {
  return std::accumulate(values.begin(), values.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

/// A tensor viewed as [outer, n, inner] around one dimension, so that element
/// k of line (o, i) is at (o * n + k) * inner + i.
struct Lines {
  int64_t outer, n, inner;
  Lines(ArrayRef<int64_t> shape, int64_t dim)
      : outer(product(shape.take_front(dim))), n(shape[dim]),
        inner(product(shape.drop_front(dim + 1))) {}
  template <typename Fn> void forEach(Fn fn) const {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        fn(o * n * inner + i, inner);
  }
};

inline double gelu(double x, trnops::GeluApproximation approximation) {
  if (approximation == trnops::GeluApproximation::tanh) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

inline double geluDerivative(double x,
                             trnops::GeluApproximation approximation) {
  if (approximation == trnops::GeluApproximation::tanh) {
    const double k = std::sqrt(2.0 / M_PI);
    double t = std::tanh(k * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) +
           0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
  }
  double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  return cdf + x * pdf;
}

inline double nanMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return std::max(a, b);
}
inline double nanMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return std::min(a, b);
}

//===----------------------------------------------------------------------===//
// The interpreter
//===----------------------------------------------------------------------===//

/// Evaluates the `dist` ops of one rank in a multi-rank evaluation
/// (Spmd.cpp): collectives exchange tensors with the other ranks.
class DistOpEvaluator {
public:
  virtual ~DistOpEvaluator() = default;
  virtual FailureOr<Tensor> evaluate(Operation *op,
                                     ArrayRef<const Tensor *> operands) = 0;
};

class Interpreter {
public:
  explicit Interpreter(DistOpEvaluator *distOps = nullptr) : distOps(distOps) {}
  FailureOr<std::vector<Tensor>> run(func::FuncOp function,
                                     ArrayRef<Tensor> inputs);

private:
  const Tensor &get(Value value) { return values.find(value)->second; }
  Tensor make(Value result) {
    auto type = cast<RankedTensorType>(result.getType());
    return Tensor::zeros(*dtypeOf(type.getElementType()), type.getShape());
  }
  LogicalResult checkResultSizes(Operation *op);
  LogicalResult evalOp(Operation *op);
  /// Composite ops (softmax, norms, attention, cross-entropy), Composites.cpp.
  LogicalResult evalComposite(Operation *op);

  LogicalResult unary(Operation *op, double (*fn)(double));
  template <typename FloatFn, typename IntFn>
  LogicalResult binary(Operation *op, FloatFn floatFn, IntFn intFn);

  llvm::DenseMap<Value, Tensor> values;
  DistOpEvaluator *distOps;
};

} // namespace mlir::trn::eval::detail

#endif // TRN_LIB_EVAL_INTERPRETER_H
