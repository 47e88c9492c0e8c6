//===- Evaluator.h - reference evaluator for trn graphs ---------*- C++ -*-===//
//
// A plain interpreter that says what a `trn` graph means. It is the oracle
// against which lowering, partitioning and the frontend are tested, so it
// favours obvious correctness over speed: every float op computes in f64 and
// rounds once, to nearest even, when it stores into its result's element
// type; reductions and contractions accumulate in f64.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_EVAL_EVALUATOR_H
#define TRN_EVAL_EVALUATOR_H

#include "trnrt/Numerics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace mlir::trn::eval {

using trnrt::DType;

/// A host tensor. Float elements are held as doubles that are exactly
/// representable in `dtype`; integer and boolean elements as int64 (i1 is 0
/// or 1, i32 values are in the i32 range).
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> floats;
  std::vector<int64_t> ints;

  /// A zero tensor; `shape` must already be checked by checkedNumElements.
  static Tensor zeros(DType dtype, llvm::ArrayRef<int64_t> shape);
  int64_t numElements() const;
  bool isFloat() const { return trnrt::isFloatDType(dtype); }
  /// Element `i` as a double, whatever the dtype.
  double getDouble(int64_t i) const;
  /// Element `i` as an integer (floats truncated toward zero).
  int64_t getInt(int64_t i) const;
  /// Stores `value` at `i`, rounding (floats) or wrapping (i32) it to dtype.
  void setDouble(int64_t i, double value);
  void setInt(int64_t i, int64_t value);
};

/// Rounds `value` to a value of `dtype` as a store does: RNE for floats,
/// truncation with saturation for integers (NaN gives 0), `!= 0` for i1.
double storeValue(double value, DType dtype);

/// Limits that keep the evaluator (which holds every element as 8 bytes) from
/// exhausting memory: elements per tensor, and bytes of live tensors.
constexpr int64_t kMaxTensorElements = int64_t(1) << 27;
constexpr int64_t kMaxLiveBytes = int64_t(8) << 30;

/// The element count of `shape`, or -1 if it overflows or exceeds
/// kMaxTensorElements.
int64_t checkedNumElements(llvm::ArrayRef<int64_t> shape);

/// The trn dtype of an MLIR element type, if it is one.
std::optional<DType> dtypeOf(mlir::Type elementType);

/// Evaluates `function` (a verified trn step graph) on `inputs`, which must
/// match its argument types. On failure an error has been emitted at the
/// location of the offending op (e.g. an out-of-range gather index).
mlir::FailureOr<std::vector<Tensor>> evaluate(mlir::func::FuncOp function,
                                              llvm::ArrayRef<Tensor> inputs);

} // namespace mlir::trn::eval

#endif // TRN_EVAL_EVALUATOR_H
