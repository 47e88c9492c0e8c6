//===- Precision.h - The precision a trn value is computed in ---*- C++ -*-===//
//
// A mixed-precision graph stores many values wider than it computes them: a
// gradient kept in f32 comes out of bf16 matmuls, and the f32 Adam moments
// are fed by that gradient. How far a compiled program may drift from the
// reference evaluator on such a value follows from the least precise step
// that led to it, not from its own type: the device computes each step in
// f32 engine math and rounds where the graph rounds, the evaluator in f64,
// and a tiny difference before a rounding to bf16 becomes a whole bf16 ulp
// after it. trn-run --check-against picks each output's tolerance from
// computePrecision.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_TRN_UTILS_PRECISION_H
#define TRN_DIALECT_TRN_UTILS_PRECISION_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::trn {

/// What trn-cc --auto-cast does to a graph. The trn-auto-cast pass runs
/// inside the compiler, so the graph a user holds does not show it; the
/// analysis applies it to the graph as written.
struct AutoCastAssumption {
  enum class Mode {
    /// The graph is computed as written.
    None,
    /// f32 dot_generals compute in `type`; so does f32 attention when `type`
    /// is bf16 (the fused kernels take bf16 only) or when the attention is
    /// decomposed into dot_generals (it does not fit a fused kernel).
    Matmul,
    /// Matmul, and every f32 elementwise op computes in `type` (bf16), as do
    /// the composites whose decompositions are elementwise ops (softmax, the
    /// norms, cross-entropy).
    All,
  } mode = Mode::None;
  /// bf16 or f8E4M3FN; unused when `mode` is None.
  FloatType type;
};

/// Parses trn-cc's --auto-cast (`none`, `matmul`, `all`) and --auto-cast-type
/// (`bf16`, `fp8_e4m3`) values, as an artifact records them in its
/// normalised flags. Fails on any other value.
FailureOr<AutoCastAssumption> parseAutoCast(MLIRContext *context,
                                            StringRef mode, StringRef type);

/// The least precise float type a value is computed in.
struct ComputePrecision {
  /// Null when no float value is involved (integers from integers).
  FloatType type;
  /// `type` comes from the auto-cast assumption, not from the graph's types
  /// or a `trn.matmul_type` it carries.
  bool byAutoCast = false;
};

/// The least precise float element type (fewest significand bits) among the
/// operands and results of every op `value` transitively depends on - its
/// backward slice, ops nested in regions such as trn.fusion included - and
/// of `value` itself; the matmul type an attention op is marked with
/// (`trn.matmul_type`) and what `autoCast` narrows count as well.
ComputePrecision computePrecision(Value value,
                                  const AutoCastAssumption &autoCast = {});

/// Whether `a` has fewer significand bits than `b` (f8E5M2 < f8E4M3FN <
/// bf16 < f16 < f32); a null type is more precise than any.
bool isLessPrecise(FloatType a, FloatType b);

} // namespace mlir::trn

#endif // TRN_DIALECT_TRN_UTILS_PRECISION_H
