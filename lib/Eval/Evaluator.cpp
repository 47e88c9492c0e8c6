//===- Evaluator.cpp - reference evaluator for trn graphs ----------------===//
//
// One function per op, each a direct transcription of the op's documented
// semantics in f64. Shapes and attributes are trusted because the graph has
// been verified; data-dependent conditions (indices, labels, integer
// division) are checked here and reported at the op's location.
//
//===----------------------------------------------------------------------===//

#include "trn/Eval/Evaluator.h"

#include "Interpreter.h"

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trnrt/Random.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::trn::eval;
using namespace mlir::trn::eval::detail;
namespace trnops = mlir::trn;

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

int64_t mlir::trn::eval::checkedNumElements(ArrayRef<int64_t> shape) {
  constexpr int64_t kMaxElements = kMaxTensorElements;
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0)
      return -1;
    if (size != 0 && count > kMaxElements / size)
      return -1;
    count *= size;
  }
  return count;
}

Tensor Tensor::zeros(DType dtype, ArrayRef<int64_t> shape) {
  Tensor tensor;
  tensor.dtype = dtype;
  tensor.shape.assign(shape.begin(), shape.end());
  int64_t count = checkedNumElements(shape);
  if (tensor.isFloat())
    tensor.floats.assign(count, 0.0);
  else
    tensor.ints.assign(count, 0);
  return tensor;
}

int64_t Tensor::numElements() const {
  return isFloat() ? floats.size() : ints.size();
}

double Tensor::getDouble(int64_t i) const {
  return isFloat() ? floats[i] : static_cast<double>(ints[i]);
}

int64_t Tensor::getInt(int64_t i) const {
  return isFloat() ? static_cast<int64_t>(storeValue(floats[i], DType::I64))
                   : ints[i];
}

double mlir::trn::eval::storeValue(double value, DType dtype) {
  switch (dtype) {
  case DType::I1:
    return value != 0.0 ? 1.0 : 0.0;
  case DType::I32:
  case DType::I64: {
    if (std::isnan(value))
      return 0.0;
    double low = dtype == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
    double high = dtype == DType::I32 ? 2147483647.0 : 9223372036854775807.0;
    return std::clamp(std::trunc(value), low, high);
  }
  default:
    return trnrt::roundToDType(value, dtype);
  }
}

void Tensor::setDouble(int64_t i, double value) {
  if (isFloat()) {
    floats[i] = trnrt::roundToDType(value, dtype);
    return;
  }
  double stored = storeValue(value, dtype);
  // 2^63 does not fit in int64: saturate explicitly.
  ints[i] = stored >= 9223372036854775807.0 ? INT64_MAX
                                            : static_cast<int64_t>(stored);
}

void Tensor::setInt(int64_t i, int64_t value) {
  switch (dtype) {
  case DType::I1:
    ints[i] = value != 0;
    return;
  case DType::I32:
    // Two's complement wrap, as integer arithmetic on hardware.
    ints[i] = static_cast<int32_t>(static_cast<uint32_t>(value));
    return;
  case DType::I64:
    ints[i] = value;
    return;
  default:
    floats[i] = trnrt::roundToDType(static_cast<double>(value), dtype);
  }
}

std::optional<DType> mlir::trn::eval::dtypeOf(Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isBF16())
    return DType::BF16;
  if (type.isF16())
    return DType::F16;
  if (type.isFloat8E4M3FN())
    return DType::F8E4M3FN;
  if (type.isFloat8E5M2())
    return DType::F8E5M2;
  if (type.isSignlessInteger(1))
    return DType::I1;
  if (type.isSignlessInteger(32))
    return DType::I32;
  if (type.isSignlessInteger(64))
    return DType::I64;
  return std::nullopt;
}

LogicalResult Interpreter::checkResultSizes(Operation *op) {
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || !dtypeOf(type.getElementType()))
      return op->emitError("reference evaluator: unsupported result type ")
             << result.getType();
    if (checkedNumElements(type.getShape()) < 0)
      return op->emitError("reference evaluator: result ")
             << type << " has more than 2^27 elements, the evaluator's limit";
  }
  return success();
}

FailureOr<std::vector<Tensor>> Interpreter::run(func::FuncOp function,
                                                ArrayRef<Tensor> inputs) {
  if (function.isExternal())
    return function.emitError("reference evaluator: function @")
           << function.getSymName() << " has no body";
  if (!function.getBody().hasOneBlock())
    return function.emitError(
        "reference evaluator: step graphs have a single block");
  Block &body = function.getBody().front();
  if (inputs.size() != body.getNumArguments())
    return function.emitError("reference evaluator: got ")
           << inputs.size() << " inputs for " << body.getNumArguments()
           << " arguments";
  for (auto [i, argument] : llvm::enumerate(body.getArguments())) {
    auto type = dyn_cast<RankedTensorType>(argument.getType());
    std::optional<DType> dtype =
        type ? dtypeOf(type.getElementType()) : std::nullopt;
    if (!dtype)
      return function.emitError("reference evaluator: argument ")
             << i << " has unsupported type " << argument.getType();
    if (inputs[i].dtype != *dtype ||
        ArrayRef<int64_t>(inputs[i].shape) != type.getShape() ||
        inputs[i].numElements() != checkedNumElements(type.getShape()))
      return function.emitError("reference evaluator: input ")
             << i << " does not match argument type " << type;
    values[argument] = inputs[i];
  }
  // Free every value after its last use, so that the live set (not the
  // whole graph) bounds memory; the budget turns a graph too big for the
  // evaluator into an error instead of an allocation failure.
  llvm::DenseMap<Value, Operation *> lastUser;
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      lastUser[operand] = &op;
  int64_t liveBytes = 0;
  for (auto &[value, tensor] : values)
    liveBytes += tensor.numElements() * 8;
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> outputs;
      for (Value operand : ret.getOperands())
        outputs.push_back(get(operand));
      return outputs;
    }
    if (failed(checkResultSizes(&op)))
      return failure();
    for (Value result : op.getResults())
      liveBytes += checkedNumElements(
                       cast<RankedTensorType>(result.getType()).getShape()) *
                   8;
    if (liveBytes > kMaxLiveBytes)
      return op.emitError("reference evaluator: live tensors would take ")
             << liveBytes / (1 << 20) << " MiB, above the evaluator's limit of "
             << kMaxLiveBytes / (1 << 20) << " MiB";
    if (failed(evalOp(&op)))
      return failure();
    for (Value operand : op.getOperands()) {
      auto it = values.find(operand);
      if (lastUser.lookup(operand) == &op && it != values.end()) {
        liveBytes -= it->second.numElements() * 8;
        values.erase(it);
      }
    }
  }
  return function.emitError("reference evaluator: missing func.return");
}

LogicalResult Interpreter::unary(Operation *op, double (*fn)(double)) {
  const Tensor &x = get(op->getOperand(0));
  Tensor out = make(op->getResult(0));
  for (int64_t i = 0, e = x.numElements(); i < e; ++i)
    out.setDouble(i, fn(x.getDouble(i)));
  values[op->getResult(0)] = std::move(out);
  return success();
}

template <typename FloatFn, typename IntFn>
LogicalResult Interpreter::binary(Operation *op, FloatFn floatFn, IntFn intFn) {
  const Tensor &a = get(op->getOperand(0));
  const Tensor &b = get(op->getOperand(1));
  Tensor out = make(op->getResult(0));
  for (int64_t i = 0, e = a.numElements(); i < e; ++i) {
    if (a.isFloat()) {
      out.setDouble(i, floatFn(a.floats[i], b.floats[i]));
      continue;
    }
    std::optional<int64_t> value = intFn(a.ints[i], b.ints[i]);
    if (!value)
      return op->emitError("integer division by zero at element ") << i;
    out.setInt(i, *value);
  }
  values[op->getResult(0)] = std::move(out);
  return success();
}

namespace {
// Integer helpers that wrap instead of overflowing (undefined in C++).
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}
} // namespace

LogicalResult Interpreter::evalOp(Operation *op) {
  using namespace trnops;
  auto some = [](int64_t v) { return std::optional<int64_t>(v); };
  auto set = [&](Value result, Tensor tensor) {
    values[result] = std::move(tensor);
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // Unary.
      .Case([&](NegOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        for (int64_t i = 0, e = x.numElements(); i < e; ++i)
          x.isFloat() ? out.setDouble(i, -x.floats[i])
                      : out.setInt(i, wrapSub(0, x.ints[i]));
        return set(o.getResult(), std::move(out));
      })
      .Case([&](AbsOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        for (int64_t i = 0, e = x.numElements(); i < e; ++i)
          x.isFloat() ? out.setDouble(i, std::fabs(x.floats[i]))
                      : out.setInt(i, x.ints[i] < 0 ? wrapSub(0, x.ints[i])
                                                    : x.ints[i]);
        return set(o.getResult(), std::move(out));
      })
      .Case([&](SignOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        for (int64_t i = 0, e = x.numElements(); i < e; ++i) {
          double v = x.getDouble(i);
          out.setDouble(i, std::isnan(v) ? v : (v > 0) - (v < 0));
        }
        return set(o.getResult(), std::move(out));
      })
      .Case([&](NotOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        for (int64_t i = 0, e = x.numElements(); i < e; ++i)
          out.setInt(i, !x.ints[i]);
        return set(o.getResult(), std::move(out));
      })
      .Case([&](ExpOp o) {
        return unary(o, [](double x) { return std::exp(x); });
      })
      .Case([&](LogOp o) {
        return unary(o, [](double x) { return std::log(x); });
      })
      .Case([&](Log1pOp o) {
        return unary(o, [](double x) { return std::log1p(x); });
      })
      .Case([&](TanhOp o) {
        return unary(o, [](double x) { return std::tanh(x); });
      })
      .Case([&](SigmoidOp o) {
        return unary(o, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
      })
      .Case([&](SqrtOp o) {
        return unary(o, [](double x) { return std::sqrt(x); });
      })
      .Case([&](RsqrtOp o) {
        return unary(o, [](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case([&](ReciprocalOp o) {
        return unary(o, [](double x) { return 1.0 / x; });
      })
      .Case([&](ErfOp o) {
        return unary(o, [](double x) { return std::erf(x); });
      })
      .Case([&](ReluOp o) {
        // NaN stays NaN, as torch.relu.
        return unary(o, [](double x) { return x < 0.0 ? 0.0 : x; });
      })
      .Case([&](SiluOp o) {
        return unary(o, [](double x) { return x / (1.0 + std::exp(-x)); });
      })
      .Case([&](SinOp o) {
        return unary(o, [](double x) { return std::sin(x); });
      })
      .Case([&](CosOp o) {
        return unary(o, [](double x) { return std::cos(x); });
      })
      .Case([&](FloorOp o) {
        return unary(o, [](double x) { return std::floor(x); });
      })
      .Case([&](GeluOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        for (int64_t i = 0, e = x.numElements(); i < e; ++i)
          out.setDouble(i, gelu(x.floats[i], o.getApproximate()));
        return set(o.getResult(), std::move(out));
      })
      .Case([&](GeluGradOp o) {
        const Tensor &dy = get(o.getGradOutput());
        const Tensor &x = get(o.getInput());
        Tensor out = make(o.getResult());
        for (int64_t i = 0, e = x.numElements(); i < e; ++i)
          out.setDouble(i, dy.floats[i] *
                               geluDerivative(x.floats[i], o.getApproximate()));
        return set(o.getResult(), std::move(out));
      })
      // Binary.
      .Case([&](AddOp o) {
        return binary(
            o, [](double a, double b) { return a + b; },
            [&](int64_t a, int64_t b) { return some(wrapAdd(a, b)); });
      })
      .Case([&](SubOp o) {
        return binary(
            o, [](double a, double b) { return a - b; },
            [&](int64_t a, int64_t b) { return some(wrapSub(a, b)); });
      })
      .Case([&](MulOp o) {
        return binary(
            o, [](double a, double b) { return a * b; },
            [&](int64_t a, int64_t b) { return some(wrapMul(a, b)); });
      })
      .Case([&](DivOp o) {
        return binary(
            o, [](double a, double b) { return a / b; },
            [](int64_t a, int64_t b) -> std::optional<int64_t> {
              if (b == 0)
                return std::nullopt;
              if (a == INT64_MIN && b == -1)
                return a; // wraps
              return a / b;
            });
      })
      .Case([&](PowOp o) {
        return binary(
            o, [](double a, double b) { return std::pow(a, b); },
            [&](int64_t a, int64_t) { return some(a); });
      })
      .Case([&](MaxOp o) {
        return binary(o, nanMax, [&](int64_t a, int64_t b) {
          return some(std::max(a, b));
        });
      })
      .Case([&](MinOp o) {
        return binary(o, nanMin, [&](int64_t a, int64_t b) {
          return some(std::min(a, b));
        });
      })
      .Case([&](AndOp o) {
        return binary(
            o, [](double, double) { return 0.0; },
            [&](int64_t a, int64_t b) { return some(a & b); });
      })
      .Case([&](OrOp o) {
        return binary(
            o, [](double, double) { return 0.0; },
            [&](int64_t a, int64_t b) { return some(a | b); });
      })
      .Case([&](CompareOp o) {
        const Tensor &a = get(o.getLhs());
        const Tensor &b = get(o.getRhs());
        Tensor out = make(o.getResult());
        auto compare = [&](auto x, auto y) {
          switch (o.getPredicate()) {
          case ComparisonPredicate::eq:
            return x == y;
          case ComparisonPredicate::ne:
            return x != y;
          case ComparisonPredicate::lt:
            return x < y;
          case ComparisonPredicate::le:
            return x <= y;
          case ComparisonPredicate::gt:
            return x > y;
          case ComparisonPredicate::ge:
            return x >= y;
          }
          return false;
        };
        for (int64_t i = 0, e = a.numElements(); i < e; ++i)
          out.setInt(i, a.isFloat() ? compare(a.floats[i], b.floats[i])
                                    : compare(a.ints[i], b.ints[i]));
        return set(o.getResult(), std::move(out));
      })
      .Case([&](SelectOp o) {
        const Tensor &pred = get(o.getPred());
        const Tensor &t = get(o.getOnTrue());
        const Tensor &f = get(o.getOnFalse());
        Tensor out = pred.ints.empty() ? make(o.getResult()) : t;
        for (int64_t i = 0, e = pred.numElements(); i < e; ++i)
          if (!pred.ints[i]) {
            if (out.isFloat())
              out.floats[i] = f.floats[i];
            else
              out.ints[i] = f.ints[i];
          }
        return set(o.getResult(), std::move(out));
      })
      .Case([&](ConvertOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        for (int64_t i = 0, e = x.numElements(); i < e; ++i) {
          if (x.isFloat())
            out.setDouble(i, x.floats[i]);
          else if (out.isFloat())
            out.setDouble(i, static_cast<double>(x.ints[i]));
          else
            out.setInt(i, x.ints[i]);
        }
        return set(o.getResult(), std::move(out));
      })
      // Constants and generators.
      .Case([&](ConstantOp o) -> LogicalResult {
        auto dense = dyn_cast<DenseElementsAttr>(o.getValue());
        if (!dense)
          return o.emitError("reference evaluator: only dense constants");
        Tensor out = make(o.getResult());
        int64_t i = 0;
        if (out.isFloat()) {
          for (APFloat value : dense.getValues<APFloat>()) {
            bool lost = false;
            value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                          &lost);
            out.floats[i++] = value.convertToDouble();
          }
        } else {
          bool isBool = out.dtype == DType::I1;
          for (const APInt &value : dense.getValues<APInt>())
            out.ints[i++] = isBool ? static_cast<int64_t>(value.getZExtValue())
                                   : value.getSExtValue();
        }
        return set(o.getResult(), std::move(out));
      })
      .Case([&](IotaOp o) {
        Tensor out = make(o.getResult());
        int64_t dim = o.getDim();
        forEachIndex(out.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
          out.setInt(linear, index[dim]);
        });
        return set(o.getResult(), std::move(out));
      })
      .Case([&](RngUniformOp o) {
        uint64_t seed = static_cast<uint64_t>(get(o.getSeed()).ints[0]);
        uint32_t stream = static_cast<uint32_t>(o.getStream());
        double low = o.getLow().convertToDouble();
        double high = o.getHigh().convertToDouble();
        Tensor out = make(o.getResult());
        for (int64_t i = 0, e = out.numElements(); i < e; ++i)
          out.setDouble(i, low + (high - low) *
                                     trnrt::philoxUniform(seed, stream, i));
        return set(o.getResult(), std::move(out));
      })
      .Case([&](RngBernoulliOp o) {
        uint64_t seed = static_cast<uint64_t>(get(o.getSeed()).ints[0]);
        uint32_t stream = static_cast<uint32_t>(o.getStream());
        double p = o.getP().convertToDouble();
        Tensor out = make(o.getResult());
        for (int64_t i = 0, e = out.numElements(); i < e; ++i)
          out.setDouble(i,
                        trnrt::philoxUniform(seed, stream, i) < p ? 1.0 : 0.0);
        return set(o.getResult(), std::move(out));
      })
      // Shape ops.
      .Case([&](BroadcastInDimOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        ArrayRef<int64_t> dims = o.getDims();
        std::vector<int64_t> strides = stridesOf(x.shape);
        forEachIndex(out.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
          int64_t source = 0;
          for (size_t k = 0; k < dims.size(); ++k)
            if (x.shape[k] != 1)
              source += index[dims[k]] * strides[k];
          x.isFloat() ? void(out.floats[linear] = x.floats[source])
                      : void(out.ints[linear] = x.ints[source]);
        });
        return set(o.getResult(), std::move(out));
      })
      .Case([&](ReshapeOp o) {
        Tensor out = get(o.getOperand());
        auto type = cast<RankedTensorType>(o.getType());
        out.shape.assign(type.getShape().begin(), type.getShape().end());
        return set(o.getResult(), std::move(out));
      })
      .Case([&](TransposeOp o) {
        return set(o.getResult(), permute(get(o.getOperand()), o.getPerm()));
      })
      .Case([&](PipelineStageOp o) {
        return set(o.getResult(), get(o.getInput()));
      })
      .Case([&](SliceOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        ArrayRef<int64_t> start = o.getStart(), steps = o.getStrides();
        std::vector<int64_t> strides = stridesOf(x.shape);
        forEachIndex(out.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
          int64_t source = 0;
          for (size_t d = 0; d < index.size(); ++d)
            source += (start[d] + index[d] * steps[d]) * strides[d];
          x.isFloat() ? void(out.floats[linear] = x.floats[source])
                      : void(out.ints[linear] = x.ints[source]);
        });
        return set(o.getResult(), std::move(out));
      })
      .Case([&](RotateHalfOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        int64_t last = x.shape.empty() ? 1 : x.shape.back(), half = last / 2;
        for (int64_t row = 0, e = out.numElements(); row < e; row += last)
          for (int64_t k = 0; k < last; ++k) {
            // out[k] = -x[k + D/2] for k < D/2, x[k - D/2] after.
            int64_t source = row + (k < half ? k + half : k - half);
            if (x.isFloat())
              out.setDouble(row + k,
                            k < half ? -x.floats[source] : x.floats[source]);
            else
              out.setInt(row + k, k < half ? wrapSub(0, x.ints[source])
                                           : x.ints[source]);
          }
        return set(o.getResult(), std::move(out));
      })
      .Case([&](ConcatenateOp o) {
        Tensor out = make(o.getResult());
        int64_t dim = o.getDim();
        Lines outLines(out.shape, dim);
        int64_t offset = 0;
        for (Value input : o.getInputs()) {
          const Tensor &x = get(input);
          Lines lines(x.shape, dim);
          for (int64_t outer = 0; outer < lines.outer; ++outer)
            for (int64_t k = 0; k < lines.n * lines.inner; ++k) {
              int64_t source = outer * lines.n * lines.inner + k;
              int64_t target = outer * outLines.n * outLines.inner +
                               offset * lines.inner + k;
              x.isFloat() ? void(out.floats[target] = x.floats[source])
                          : void(out.ints[target] = x.ints[source]);
            }
          offset += lines.n;
        }
        return set(o.getResult(), std::move(out));
      })
      .Case([&](PadOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        double fill = o.getValue().convertToDouble();
        for (int64_t i = 0, e = out.numElements(); i < e; ++i)
          out.setDouble(i, fill);
        ArrayRef<int64_t> low = o.getLow();
        std::vector<int64_t> outStrides = stridesOf(out.shape);
        forEachIndex(x.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
          int64_t target = 0;
          for (size_t d = 0; d < index.size(); ++d)
            target += (index[d] + low[d]) * outStrides[d];
          x.isFloat() ? void(out.floats[target] = x.floats[linear])
                      : void(out.ints[target] = x.ints[linear]);
        });
        return set(o.getResult(), std::move(out));
      })
      .Case<GatherOp, ScatterAddOp>([&](auto o) -> LogicalResult {
        constexpr bool isScatter = std::is_same_v<decltype(o), ScatterAddOp>;
        const Tensor &operand = get(o.getOperand());
        const Tensor &indices = get(o.getIndices());
        int64_t axis = o.getAxis(), batchDims = o.getBatchDims();
        int64_t indexRank = static_cast<int64_t>(indices.shape.size());
        int64_t axisSize = operand.shape[axis];
        std::vector<int64_t> operandStrides = stridesOf(operand.shape);
        std::vector<int64_t> indexStrides = stridesOf(indices.shape);
        // Iterate over the gathered shape (the result of a gather, the
        // updates of a scatter).
        const Tensor *updates = nullptr;
        Tensor out;
        std::vector<int64_t> gatheredShape;
        if constexpr (isScatter) {
          updates = &get(o.getUpdates());
          gatheredShape = updates->shape;
          out = operand;
        } else {
          out = make(o.getResult());
          gatheredShape = out.shape;
        }
        std::vector<double> sums;
        if constexpr (isScatter)
          if (out.isFloat())
            sums = out.floats; // accumulate in f64, round once at the end
        LogicalResult status = success();
        forEachIndex(gatheredShape, [&](int64_t linear, ArrayRef<int64_t> idx) {
          if (failed(status))
            return;
          int64_t indexPos = 0;
          for (int64_t d = 0; d < batchDims; ++d)
            indexPos += idx[d] * indexStrides[d];
          for (int64_t d = batchDims; d < indexRank; ++d)
            indexPos += idx[axis + d - batchDims] * indexStrides[d];
          int64_t where = indices.ints[indexPos];
          if (where < 0 || where >= axisSize) {
            status = o.emitError("index ") << where << " is out of range [0, "
                                           << axisSize << ") for axis " << axis;
            return;
          }
          int64_t source = where * operandStrides[axis];
          for (int64_t d = 0; d < axis; ++d)
            source += idx[d] * operandStrides[d];
          for (int64_t d = axis + 1;
               d < static_cast<int64_t>(operand.shape.size()); ++d)
            source += idx[d - 1 + (indexRank - batchDims)] * operandStrides[d];
          if constexpr (isScatter) {
            if (out.isFloat())
              sums[source] += updates->floats[linear];
            else
              out.setInt(source,
                         wrapAdd(out.ints[source], updates->ints[linear]));
          } else {
            operand.isFloat()
                ? void(out.floats[linear] = operand.floats[source])
                : void(out.ints[linear] = operand.ints[source]);
          }
        });
        if (failed(status))
          return failure();
        if constexpr (isScatter)
          for (size_t i = 0; i < sums.size(); ++i)
            out.setDouble(i, sums[i]);
        return set(o.getResult(), std::move(out));
      })
      // Reductions.
      .Case([&](ReduceOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        ArrayRef<int64_t> dims = o.getDims();
        ReduceKind kind = o.getKind();
        double init = kind == ReduceKind::sum    ? 0.0
                      : kind == ReduceKind::prod ? 1.0
                      : kind == ReduceKind::max
                          ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity();
        std::vector<double> acc(out.numElements(), init);
        std::vector<int64_t> outStrides = stridesOf(out.shape);
        forEachIndex(x.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
          int64_t target = 0, k = 0;
          for (size_t d = 0; d < index.size(); ++d)
            if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
              target += index[d] * outStrides[k++];
          double v = x.getDouble(linear);
          double &a = acc[target];
          switch (kind) {
          case ReduceKind::sum:
            a += v;
            break;
          case ReduceKind::prod:
            a *= v;
            break;
          case ReduceKind::max:
            a = nanMax(a, v);
            break;
          case ReduceKind::min:
            a = nanMin(a, v);
            break;
          }
        });
        for (size_t i = 0; i < acc.size(); ++i)
          out.setDouble(i, acc[i]);
        return set(o.getResult(), std::move(out));
      })
      .Case([&](ArgMaxOp o) {
        const Tensor &x = get(o.getOperand());
        Tensor out = make(o.getResult());
        Lines lines(x.shape, o.getDim());
        int64_t line = 0;
        for (int64_t outer = 0; outer < lines.outer; ++outer)
          for (int64_t inner = 0; inner < lines.inner; ++inner) {
            int64_t base = outer * lines.n * lines.inner + inner;
            int64_t best = 0;
            double bestValue = x.getDouble(base);
            for (int64_t k = 1; k < lines.n && !std::isnan(bestValue); ++k) {
              double v = x.getDouble(base + k * lines.inner);
              if (std::isnan(v) || v > bestValue) {
                best = k;
                bestValue = v;
              }
            }
            out.setInt(line++, best);
          }
        return set(o.getResult(), std::move(out));
      })
      .Case([&](DotGeneralOp o) {
        const Tensor &lhs = get(o.getLhs());
        const Tensor &rhs = get(o.getRhs());
        Tensor out = make(o.getResult());
        ArrayRef<int64_t> lb = o.getLhsBatchingDims(),
                          rb = o.getRhsBatchingDims();
        ArrayRef<int64_t> lc = o.getLhsContractingDims(),
                          rc = o.getRhsContractingDims();
        auto freeDims = [](size_t rank, ArrayRef<int64_t> a,
                           ArrayRef<int64_t> b) {
          std::vector<int64_t> dims;
          for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
            if (!llvm::is_contained(a, d) && !llvm::is_contained(b, d))
              dims.push_back(d);
          return dims;
        };
        std::vector<int64_t> lf = freeDims(lhs.shape.size(), lb, lc);
        std::vector<int64_t> rf = freeDims(rhs.shape.size(), rb, rc);
        std::vector<int64_t> ls = stridesOf(lhs.shape),
                             rs = stridesOf(rhs.shape);
        // Offsets of every batch, free and contracting position.
        auto offsets = [](ArrayRef<int64_t> shape, ArrayRef<int64_t> strides,
                          ArrayRef<int64_t> dims) {
          std::vector<int64_t> sub;
          for (int64_t d : dims)
            sub.push_back(shape[d]);
          std::vector<int64_t> result;
          forEachIndex(sub, [&](int64_t, ArrayRef<int64_t> index) {
            int64_t offset = 0;
            for (size_t k = 0; k < dims.size(); ++k)
              offset += index[k] * strides[dims[k]];
            result.push_back(offset);
          });
          return result;
        };
        std::vector<int64_t> lBatch = offsets(lhs.shape, ls, lb),
                             rBatch = offsets(rhs.shape, rs, rb),
                             lFree = offsets(lhs.shape, ls, lf),
                             rFree = offsets(rhs.shape, rs, rf),
                             lCon = offsets(lhs.shape, ls, lc),
                             rCon = offsets(rhs.shape, rs, rc);
        int64_t target = 0;
        for (size_t b = 0; b < lBatch.size(); ++b)
          for (int64_t lo : lFree)
            for (int64_t ro : rFree) {
              double sum = 0.0;
              for (size_t k = 0; k < lCon.size(); ++k)
                sum += lhs.floats[lBatch[b] + lo + lCon[k]] *
                       rhs.floats[rBatch[b] + ro + rCon[k]];
              out.setDouble(target++, sum);
            }
        return set(o.getResult(), std::move(out));
      })
      .Case([&](FusionOp o) -> LogicalResult {
        // The group means its body: evaluate it op by op.
        Block &body = o.getBody().front();
        for (auto [argument, input] :
             llvm::zip(body.getArguments(), o.getInputs())) {
          // Copy first: inserting may grow the map under get's reference.
          Tensor copy = get(input);
          values[argument] = std::move(copy);
        }
        for (Operation &inner : body) {
          if (auto yield = dyn_cast<YieldOp>(inner)) {
            for (auto [result, value] :
                 llvm::zip(o.getResults(), yield.getValues())) {
              Tensor copy = get(value);
              values[result] = std::move(copy);
            }
            break;
          }
          if (failed(checkResultSizes(&inner)) || failed(evalOp(&inner)))
            return failure();
        }
        for (Operation &inner : body)
          for (Value result : inner.getResults())
            values.erase(result);
        for (BlockArgument argument : body.getArguments())
          values.erase(argument);
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        if (other->getDialect() &&
            other->getDialect()->getNamespace() == "dist") {
          // A sharding constraint only says where a value lives.
          if (other->getName().getStringRef() == "dist.sharding_constraint")
            return set(other->getResult(0), get(other->getOperand(0)));
          if (!distOps || other->getNumResults() > 1)
            return other->emitError("reference evaluator: '")
                   << other->getName()
                   << "' runs only on the ranks of a mesh (a dist.spmd "
                      "function or a dist.pipeline)";
          SmallVector<const Tensor *> operands;
          for (Value operand : other->getOperands())
            operands.push_back(&get(operand));
          FailureOr<Tensor> result = distOps->evaluate(other, operands);
          if (failed(result))
            return failure();
          // A send gives nothing back.
          if (other->getNumResults() == 0)
            return success();
          return set(other->getResult(0), std::move(*result));
        }
        return evalComposite(other);
      });
}

FailureOr<std::vector<Tensor>>
mlir::trn::eval::evaluate(func::FuncOp function, ArrayRef<Tensor> inputs) {
  Interpreter interpreter;
  return interpreter.run(function, inputs);
}
