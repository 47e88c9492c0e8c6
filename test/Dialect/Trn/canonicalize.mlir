// RUN: trn-opt %s -canonicalize -split-input-file | FileCheck %s

// Every folder in TrnFolds.cpp, and the cases each must leave alone.

//===----------------------------------------------------------------------===//
// add
//===----------------------------------------------------------------------===//

// x + -0.0 == x for every float x, on either side.
// CHECK-LABEL: func.func @add_neg_zero_float
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]], %[[X]]
func.func @add_neg_zero_float(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %z = trn.constant dense<-0.0> : tensor<4xf32>
  %0 = trn.add %x, %z : tensor<4xf32>
  %1 = trn.add %z, %x : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// x + +0.0 is not x when x is -0.0 (the sum is +0.0): no fold.
// CHECK-LABEL: func.func @add_pos_zero_float
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK-NEXT: %[[Z:.*]] = trn.constant dense<0.000000e+00> : tensor<4xbf16>
// CHECK-NEXT: %[[R:.*]] = trn.add %[[X]], %[[Z]] : tensor<4xbf16>
// CHECK-NEXT: return %[[R]]
func.func @add_pos_zero_float(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %z = trn.constant dense<0.0> : tensor<4xbf16>
  %0 = trn.add %x, %z : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// Only splats fold: x + [-0.0, +0.0] is not x. (A dense constant whose
// elements are all equal, like dense<[-0.0, -0.0]>, is a splat.)
// CHECK-LABEL: func.func @add_dense_zero
// CHECK: trn.add
func.func @add_dense_zero(%x: tensor<2xf32>) -> tensor<2xf32> {
  %z = trn.constant dense<[-0.0, 0.0]> : tensor<2xf32>
  %0 = trn.add %x, %z : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @add_zero_int
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xi32>, %[[Y:[^:]*]]: tensor<2xi64>)
// CHECK-NEXT: return %[[X]], %[[Y]]
func.func @add_zero_int(%x: tensor<4xi32>, %y: tensor<2xi64>) -> (tensor<4xi32>, tensor<2xi64>) {
  %z = trn.constant dense<0> : tensor<4xi32>
  %z64 = trn.constant dense<0> : tensor<2xi64>
  %0 = trn.add %x, %z : tensor<4xi32>
  %1 = trn.add %z64, %y : tensor<2xi64>
  return %0, %1 : tensor<4xi32>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @add_splats
// CHECK-DAG: %[[F:.*]] = trn.constant dense<3.500000e+00> : tensor<2x2xf32>
// CHECK-DAG: %[[I:.*]] = trn.constant dense<-5> : tensor<3xi64>
// CHECK-DAG: %[[W:.*]] = trn.constant dense<-2147483648> : tensor<3xi32>
// CHECK-NOT: trn.add
// CHECK: return %[[F]], %[[I]], %[[W]]
func.func @add_splats() -> (tensor<2x2xf32>, tensor<3xi64>, tensor<3xi32>) {
  %a = trn.constant dense<1.5> : tensor<2x2xf32>
  %b = trn.constant dense<2.0> : tensor<2x2xf32>
  %0 = trn.add %a, %b : tensor<2x2xf32>
  %c = trn.constant dense<-7> : tensor<3xi64>
  %d = trn.constant dense<2> : tensor<3xi64>
  %1 = trn.add %c, %d : tensor<3xi64>
  // i32 arithmetic wraps around.
  %e = trn.constant dense<2147483647> : tensor<3xi32>
  %f = trn.constant dense<1> : tensor<3xi32>
  %2 = trn.add %e, %f : tensor<3xi32>
  return %0, %1, %2 : tensor<2x2xf32>, tensor<3xi64>, tensor<3xi32>
}

// -----

// Splat arithmetic rounds in the element type, ties to even: in bf16,
// 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and rounds to 1, while
// 1 + 3 * 2^-8 rounds up to 1 + 2^-6 = 1.015625.
// CHECK-LABEL: func.func @add_bf16_rounding
// CHECK-DAG: %[[ONE:.*]] = trn.constant dense<1.000000e+00> : tensor<4xbf16>
// CHECK-DAG: %[[UP:.*]] = trn.constant dense<1.015630e+00> : tensor<4xbf16>
// CHECK-NOT: trn.add
// CHECK: return %[[ONE]], %[[UP]]
func.func @add_bf16_rounding() -> (tensor<4xbf16>, tensor<4xbf16>) {
  %one = trn.constant dense<1.0> : tensor<4xbf16>
  %tie = trn.constant dense<0.00390625> : tensor<4xbf16>
  %above = trn.constant dense<0.01171875> : tensor<4xbf16>
  %0 = trn.add %one, %tie : tensor<4xbf16>
  %1 = trn.add %one, %above : tensor<4xbf16>
  return %0, %1 : tensor<4xbf16>, tensor<4xbf16>
}

// -----

// In f8E5M2, overflow gives infinity, as in the evaluator.
// CHECK-LABEL: func.func @add_f8E5M2_overflow
// CHECK-NEXT: %[[INF:.*]] = trn.constant dense<0x7C> : tensor<2xf8E5M2>
// CHECK-NEXT: return %[[INF]]
func.func @add_f8E5M2_overflow() -> tensor<2xf8E5M2> {
  %max = trn.constant dense<57344.0> : tensor<2xf8E5M2>
  %0 = trn.add %max, %max : tensor<2xf8E5M2>
  return %0 : tensor<2xf8E5M2>
}

// -----

// f8E4M3FN has no infinity: APFloat would give NaN where the evaluator
// saturates to 448, so an overflowing sum is not folded. A sum that rounds
// back into range is.
// CHECK-LABEL: func.func @add_f8E4M3FN_overflow
// CHECK-DAG: %[[MAX:.*]] = trn.constant dense<4.480000e+02> : tensor<2xf8E4M3FN>
// CHECK-DAG: %[[C:.*]] = trn.constant dense<3.200000e+01> : tensor<2xf8E4M3FN>
// CHECK-DAG: %[[NMAX:.*]] = trn.constant dense<-4.480000e+02> : tensor<2xf8E4M3FN>
// CHECK: %[[R:.*]] = trn.add %[[MAX]], %[[C]] : tensor<2xf8E4M3FN>
// CHECK-NEXT: return %[[R]], %[[NMAX]]
func.func @add_f8E4M3FN_overflow() -> (tensor<2xf8E4M3FN>, tensor<2xf8E4M3FN>) {
  %max = trn.constant dense<448.0> : tensor<2xf8E4M3FN>
  %c = trn.constant dense<32.0> : tensor<2xf8E4M3FN>
  %0 = trn.add %max, %c : tensor<2xf8E4M3FN>
  // -448 - 1 = -449 rounds to -448.
  %nmax = trn.constant dense<-448.0> : tensor<2xf8E4M3FN>
  %one = trn.constant dense<1.0> : tensor<2xf8E4M3FN>
  %1 = trn.sub %nmax, %one : tensor<2xf8E4M3FN>
  return %0, %1 : tensor<2xf8E4M3FN>, tensor<2xf8E4M3FN>
}

// -----

//===----------------------------------------------------------------------===//
// sub, mul, div
//===----------------------------------------------------------------------===//

// x - +0.0 == x for every float x; x - -0.0 is not (-0.0 - -0.0 == +0.0).
// CHECK-LABEL: func.func @sub_zero
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32>, %[[I:[^:]*]]: tensor<4xi32>)
// CHECK-NEXT: %[[NZ:.*]] = trn.constant dense<-0.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[R:.*]] = trn.sub %[[X]], %[[NZ]] : tensor<4xf32>
// CHECK-NEXT: return %[[X]], %[[R]], %[[I]]
func.func @sub_zero(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %pz = trn.constant dense<0.0> : tensor<4xf32>
  %nz = trn.constant dense<-0.0> : tensor<4xf32>
  %iz = trn.constant dense<0> : tensor<4xi32>
  %0 = trn.sub %x, %pz : tensor<4xf32>
  %1 = trn.sub %x, %nz : tensor<4xf32>
  %2 = trn.sub %i, %iz : tensor<4xi32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// -----

// 0 - x is not x.
// CHECK-LABEL: func.func @sub_from_zero
// CHECK: trn.sub
func.func @sub_from_zero(%x: tensor<4xi32>) -> tensor<4xi32> {
  %z = trn.constant dense<0> : tensor<4xi32>
  %0 = trn.sub %z, %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @sub_splats
// CHECK-DAG: %[[F:.*]] = trn.constant dense<-5.000000e-01> : tensor<3xf16>
// CHECK-DAG: %[[I:.*]] = trn.constant dense<9> : tensor<3xi32>
// CHECK-NOT: trn.sub
// CHECK: return %[[F]], %[[I]]
func.func @sub_splats() -> (tensor<3xf16>, tensor<3xi32>) {
  %a = trn.constant dense<1.5> : tensor<3xf16>
  %b = trn.constant dense<2.0> : tensor<3xf16>
  %0 = trn.sub %a, %b : tensor<3xf16>
  %c = trn.constant dense<4> : tensor<3xi32>
  %d = trn.constant dense<-5> : tensor<3xi32>
  %1 = trn.sub %c, %d : tensor<3xi32>
  return %0, %1 : tensor<3xf16>, tensor<3xi32>
}

// -----

// CHECK-LABEL: func.func @mul_one
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32>, %[[Y:[^:]*]]: tensor<4xbf16>, %[[I:[^:]*]]: tensor<4xi64>)
// CHECK-NEXT: return %[[X]], %[[Y]], %[[I]]
func.func @mul_one(%x: tensor<4xf32>, %y: tensor<4xbf16>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xi64>) {
  %one = trn.constant dense<1.0> : tensor<4xf32>
  %onebf = trn.constant dense<1.0> : tensor<4xbf16>
  %ione = trn.constant dense<1> : tensor<4xi64>
  %0 = trn.mul %x, %one : tensor<4xf32>
  %1 = trn.mul %onebf, %y : tensor<4xbf16>
  %2 = trn.mul %i, %ione : tensor<4xi64>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xbf16>, tensor<4xi64>
}

// -----

// x * 0 is not 0 for floats (NaN, inf, -0.0) and is not folded.
// CHECK-LABEL: func.func @mul_zero
// CHECK: trn.mul
func.func @mul_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = trn.constant dense<0.0> : tensor<4xf32>
  %0 = trn.mul %x, %z : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @mul_splats
// CHECK-DAG: %[[F:.*]] = trn.constant dense<-7.500000e-01> : tensor<2xbf16>
// CHECK-DAG: %[[I:.*]] = trn.constant dense<-42> : tensor<2xi32>
// CHECK-NOT: trn.mul
// CHECK: return %[[F]], %[[I]]
func.func @mul_splats() -> (tensor<2xbf16>, tensor<2xi32>) {
  %a = trn.constant dense<1.5> : tensor<2xbf16>
  %b = trn.constant dense<-0.5> : tensor<2xbf16>
  %0 = trn.mul %a, %b : tensor<2xbf16>
  %c = trn.constant dense<6> : tensor<2xi32>
  %d = trn.constant dense<-7> : tensor<2xi32>
  %1 = trn.mul %c, %d : tensor<2xi32>
  return %0, %1 : tensor<2xbf16>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @div_one
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32>, %[[I:[^:]*]]: tensor<4xi32>)
// CHECK-NEXT: return %[[X]], %[[I]]
func.func @div_one(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %one = trn.constant dense<1.0> : tensor<4xf32>
  %ione = trn.constant dense<1> : tensor<4xi32>
  %0 = trn.div %x, %one : tensor<4xf32>
  %1 = trn.div %i, %ione : tensor<4xi32>
  return %0, %1 : tensor<4xf32>, tensor<4xi32>
}

// -----

// 1 / x is not x.
// CHECK-LABEL: func.func @one_div
// CHECK: trn.div
func.func @one_div(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = trn.constant dense<1.0> : tensor<4xf32>
  %0 = trn.div %one, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Float division rounds in the element type; integer division truncates.
// CHECK-LABEL: func.func @div_splats
// CHECK-DAG: %[[THIRD:.*]] = trn.constant dense<3.339840e-01> : tensor<4xbf16>
// CHECK-DAG: %[[INF:.*]] = trn.constant dense<0x7F800000> : tensor<4xf32>
// CHECK-DAG: %[[Q:.*]] = trn.constant dense<-3> : tensor<4xi32>
// CHECK-NOT: trn.div
// CHECK: return %[[THIRD]], %[[INF]], %[[Q]]
func.func @div_splats() -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xi32>) {
  %one = trn.constant dense<1.0> : tensor<4xbf16>
  %three = trn.constant dense<3.0> : tensor<4xbf16>
  %0 = trn.div %one, %three : tensor<4xbf16>
  %f1 = trn.constant dense<1.0> : tensor<4xf32>
  %f0 = trn.constant dense<0.0> : tensor<4xf32>
  %1 = trn.div %f1, %f0 : tensor<4xf32>
  %a = trn.constant dense<-7> : tensor<4xi32>
  %b = trn.constant dense<2> : tensor<4xi32>
  %2 = trn.div %a, %b : tensor<4xi32>
  return %0, %1, %2 : tensor<4xbf16>, tensor<4xf32>, tensor<4xi32>
}

// -----

// Integer division by zero is an evaluation error, and INT_MIN / -1
// overflows: neither is folded.
// CHECK-LABEL: func.func @div_int_not_folded
// CHECK: %[[A:.*]] = trn.div
// CHECK: %[[B:.*]] = trn.div
// CHECK: return %[[A]], %[[B]]
func.func @div_int_not_folded() -> (tensor<4xi32>, tensor<4xi64>) {
  %a = trn.constant dense<7> : tensor<4xi32>
  %z = trn.constant dense<0> : tensor<4xi32>
  %0 = trn.div %a, %z : tensor<4xi32>
  %min = trn.constant dense<-9223372036854775808> : tensor<4xi64>
  %m1 = trn.constant dense<-1> : tensor<4xi64>
  %1 = trn.div %min, %m1 : tensor<4xi64>
  return %0, %1 : tensor<4xi32>, tensor<4xi64>
}

// -----

// A NaN result is left to the evaluator, which canonicalises NaNs and
// saturates f8E4M3FN (APFloat would give NaN for 1 / 0 there).
// CHECK-LABEL: func.func @div_nan_not_folded
// CHECK: %[[A:.*]] = trn.div
// CHECK: %[[B:.*]] = trn.div
// CHECK: return %[[A]], %[[B]]
func.func @div_nan_not_folded() -> (tensor<4xf32>, tensor<2xf8E4M3FN>) {
  %z = trn.constant dense<0.0> : tensor<4xf32>
  %0 = trn.div %z, %z : tensor<4xf32>
  %one = trn.constant dense<1.0> : tensor<2xf8E4M3FN>
  %z8 = trn.constant dense<0.0> : tensor<2xf8E4M3FN>
  %1 = trn.div %one, %z8 : tensor<2xf8E4M3FN>
  return %0, %1 : tensor<4xf32>, tensor<2xf8E4M3FN>
}

// -----

//===----------------------------------------------------------------------===//
// Involutions, select, convert
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @neg_neg
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32>, %[[I:[^:]*]]: tensor<4xi32>)
// CHECK-NEXT: %[[N:.*]] = trn.neg %[[X]]
// CHECK-NEXT: return %[[X]], %[[I]], %[[N]]
func.func @neg_neg(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xf32>) {
  %0 = trn.neg %x : tensor<4xf32>
  %1 = trn.neg %0 : tensor<4xf32>
  %2 = trn.neg %i : tensor<4xi32>
  %3 = trn.neg %2 : tensor<4xi32>
  // Three negations are one.
  %4 = trn.neg %1 : tensor<4xf32>
  return %1, %3, %4 : tensor<4xf32>, tensor<4xi32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @not_not
// CHECK-SAME: (%[[P:.*]]: tensor<2x2xi1>)
// CHECK-NEXT: return %[[P]]
func.func @not_not(%p: tensor<2x2xi1>) -> tensor<2x2xi1> {
  %0 = trn.not %p : tensor<2x2xi1>
  %1 = trn.not %0 : tensor<2x2xi1>
  return %1 : tensor<2x2xi1>
}

// -----

// CHECK-LABEL: func.func @select_same_branches
// CHECK-SAME: (%[[P:[^:]*]]: tensor<4xi1>, %[[X:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @select_same_branches(%p: tensor<4xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = trn.select %p, %x, %x : tensor<4xi1>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @select_splat_pred
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @select_splat_pred(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %t = trn.constant dense<true> : tensor<4xi1>
  %f = trn.constant dense<false> : tensor<4xi1>
  %0 = trn.select %t, %a, %b : tensor<4xi1>, tensor<4xf32>
  %1 = trn.select %f, %a, %b : tensor<4xi1>, tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A non-splat predicate is not folded.
// CHECK-LABEL: func.func @select_dense_pred
// CHECK: trn.select
func.func @select_dense_pred(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %p = trn.constant dense<[true, false]> : tensor<2xi1>
  %0 = trn.select %p, %a, %b : tensor<2xi1>, tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @convert_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK-NEXT: %[[C:.*]] = trn.convert %[[X]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NEXT: return %[[X]], %[[C]]
func.func @convert_same_type(%x: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %0 = trn.convert %x : tensor<4xbf16> -> tensor<4xbf16>
  %1 = trn.convert %x : tensor<4xbf16> -> tensor<4xf32>
  return %0, %1 : tensor<4xbf16>, tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @broadcast_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @broadcast_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = trn.broadcast_in_dim %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_splat
// CHECK-NEXT: %[[C:.*]] = trn.constant dense<2.500000e+00> : tensor<4x3xbf16>
// CHECK-NEXT: return %[[C]]
func.func @broadcast_splat() -> tensor<4x3xbf16> {
  %c = trn.constant dense<2.5> : tensor<3xbf16>
  %0 = trn.broadcast_in_dim %c, dims = [1] : (tensor<3xbf16>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// A real broadcast of a non-constant, or of a dense constant, stays.
// CHECK-LABEL: func.func @broadcast_kept
// CHECK-COUNT-2: trn.broadcast_in_dim
func.func @broadcast_kept(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x2xi32>) {
  %0 = trn.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %c = trn.constant dense<[1, 2]> : tensor<2xi32>
  %1 = trn.broadcast_in_dim %c, dims = [0] : (tensor<2xi32>) -> tensor<2x2xi32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x2xi32>
}

// -----

// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = trn.reshape %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_constant
// CHECK-DAG: %[[D:.*]] = trn.constant dense<{{\[\[}}1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
// CHECK-DAG: %[[S:.*]] = trn.constant dense<true> : tensor<2x2xi1>
// CHECK-NOT: trn.reshape
// CHECK: return %[[D]], %[[S]]
func.func @reshape_constant() -> (tensor<3x2xi32>, tensor<2x2xi1>) {
  %c = trn.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %0 = trn.reshape %c : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %t = trn.constant dense<true> : tensor<4xi1>
  %1 = trn.reshape %t : (tensor<4xi1>) -> tensor<2x2xi1>
  return %0, %1 : tensor<3x2xi32>, tensor<2x2xi1>
}

// -----

// CHECK-LABEL: func.func @reshape_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = trn.reshape %[[X]] : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = trn.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %1 = trn.reshape %0 : (tensor<24xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// reshape(reshape(x)) back to x's type is x.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = trn.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
  %1 = trn.reshape %0 : (tensor<6xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = trn.transpose %[[X]], perm = [1, 0, 2]
// CHECK-NEXT: return %[[X]], %[[T]]
func.func @transpose_identity(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3x2x4xf32>) {
  %0 = trn.transpose %x, perm = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = trn.transpose %x, perm = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  return %0, %1 : tensor<2x3x4xf32>, tensor<3x2x4xf32>
}

// -----

// A transpose of a transpose is one transpose, none when they cancel.
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = trn.transpose %[[X]], perm = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[X]], %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %0 = trn.transpose %x, perm = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = trn.transpose %0, perm = [1, 0, 2] : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  %2 = trn.transpose %0, perm = [2, 1, 0] : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  return %1, %2 : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// -----

// A transpose that keeps the type but permutes equal-sized dimensions is not
// the identity.
// CHECK-LABEL: func.func @transpose_square
// CHECK: trn.transpose
func.func @transpose_square(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = trn.transpose %x, perm = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_splat
// CHECK-NEXT: %[[C:.*]] = trn.constant dense<7> : tensor<3x2xi64>
// CHECK-NEXT: return %[[C]]
func.func @transpose_splat() -> tensor<3x2xi64> {
  %c = trn.constant dense<7> : tensor<2x3xi64>
  %0 = trn.transpose %c, perm = [1, 0] : (tensor<2x3xi64>) -> tensor<3x2xi64>
  return %0 : tensor<3x2xi64>
}

// -----

// CHECK-LABEL: func.func @slice_full
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK-NEXT: %[[S:.*]] = trn.slice %[[X]], start = [0, 1]
// CHECK-NEXT: return %[[X]], %[[S]]
func.func @slice_full(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x5xf32>) {
  %0 = trn.slice %x, start = [0, 0], limit = [4, 6], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %1 = trn.slice %x, start = [0, 1], limit = [4, 6], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x5xf32>
  return %0, %1 : tensor<4x6xf32>, tensor<4x5xf32>
}

// -----

// CHECK-LABEL: func.func @slice_splat
// CHECK-NEXT: %[[C:.*]] = trn.constant dense<-1.000000e+00> : tensor<2x3xf32>
// CHECK-NEXT: return %[[C]]
func.func @slice_splat() -> tensor<2x3xf32> {
  %c = trn.constant dense<-1.0> : tensor<4x6xf32>
  %0 = trn.slice %c, start = [0, 0], limit = [4, 6], strides = [2, 2] : (tensor<4x6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @concatenate_single
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[C:.*]] = trn.concatenate %[[X]], %[[X]] dim = 0
// CHECK-NEXT: return %[[X]], %[[C]]
func.func @concatenate_single(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %0 = trn.concatenate %x dim = 1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = trn.concatenate %x, %x dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @pad_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[P:.*]] = trn.pad %[[X]], low = [0, 1]
// CHECK-NEXT: return %[[X]], %[[P]]
func.func @pad_zero(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>) {
  %0 = trn.pad %x, low = [0, 0], high = [0, 0], value = 5.0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = trn.pad %x, low = [0, 1], high = [0, 0], value = 5.0 : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_no_dims
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[R:.*]] = trn.reduce max %[[X]], dims = [1]
// CHECK-NEXT: return %[[X]], %[[X]], %[[R]]
func.func @reduce_no_dims(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) {
  %0 = trn.reduce sum %x, dims = [] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = trn.reduce prod %x, dims = [] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = trn.reduce max %x, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>
}

// -----

// Folds chain: the broadcast of a splat sum feeds a multiplication by one.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[C:.*]] = trn.constant dense<3.000000e+00> : tensor<2x4xf32>
// CHECK-NEXT: return %[[C]]
func.func @chain() -> tensor<2x4xf32> {
  %a = trn.constant dense<1.0> : tensor<4xf32>
  %b = trn.constant dense<2.0> : tensor<4xf32>
  %s = trn.add %a, %b : tensor<4xf32>
  %bc = trn.broadcast_in_dim %s, dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
  %one = trn.constant dense<1.0> : tensor<2x4xf32>
  %r = trn.mul %bc, %one : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// A round trip through a wider float type is the identity; one through a
// narrower type rounds and stays.
// CHECK-LABEL: func.func @convert_round_trip
// CHECK-NEXT: %[[N:.*]] = trn.convert %arg1 : tensor<4xf32> -> tensor<4xbf16>
// CHECK-NEXT: %[[W:.*]] = trn.convert %[[N]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NEXT: return %arg0, %[[W]]
func.func @convert_round_trip(%a: tensor<4xbf16>, %b: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %0 = trn.convert %a : tensor<4xbf16> -> tensor<4xf32>
  %1 = trn.convert %0 : tensor<4xf32> -> tensor<4xbf16>
  %2 = trn.convert %b : tensor<4xf32> -> tensor<4xbf16>
  %3 = trn.convert %2 : tensor<4xbf16> -> tensor<4xf32>
  return %1, %3 : tensor<4xbf16>, tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// convert of slices
//===----------------------------------------------------------------------===//

// -----

// Every slice of x is cast to one type (q, k and v of a fused projection):
// x is cast once, then sliced.
// CHECK-LABEL: func.func @cast_before_slices
// CHECK-NEXT: %[[X:.*]] = trn.exp %arg0
// CHECK-NEXT: %[[C:.*]] = trn.convert %[[X]] : tensor<4x6xf32> -> tensor<4x6xbf16>
// CHECK-NEXT: trn.slice %[[C]], start = [0, 0], limit = [4, 2]
// CHECK-NEXT: trn.slice %[[C]], start = [0, 2], limit = [4, 4]
// CHECK-NEXT: trn.slice %[[C]], start = [0, 4], limit = [4, 6]
// CHECK-NEXT: return
func.func @cast_before_slices(%a: tensor<4x6xf32>) -> (tensor<4x2xbf16>, tensor<4x2xbf16>, tensor<4x2xbf16>) {
  %x = trn.exp %a : tensor<4x6xf32>
  %0 = trn.slice %x, start = [0, 0], limit = [4, 2], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %1 = trn.convert %0 : tensor<4x2xf32> -> tensor<4x2xbf16>
  %2 = trn.slice %x, start = [0, 2], limit = [4, 4], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %3 = trn.convert %2 : tensor<4x2xf32> -> tensor<4x2xbf16>
  %4 = trn.slice %x, start = [0, 4], limit = [4, 6], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %5 = trn.convert %4 : tensor<4x2xf32> -> tensor<4x2xbf16>
  return %1, %3, %5 : tensor<4x2xbf16>, tensor<4x2xbf16>, tensor<4x2xbf16>
}

// -----

// Left alone: x has another user (it is needed in f32 anyway).
// CHECK-LABEL: func.func @cast_slices_other_user
// CHECK: trn.slice %{{.*}} : (tensor<4x6xf32>)
// CHECK: trn.slice %{{.*}} : (tensor<4x6xf32>)
func.func @cast_slices_other_user(%a: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x2xbf16>, tensor<4x4xbf16>) {
  %x = trn.exp %a : tensor<4x6xf32>
  %0 = trn.slice %x, start = [0, 0], limit = [4, 2], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %1 = trn.convert %0 : tensor<4x2xf32> -> tensor<4x2xbf16>
  %2 = trn.slice %x, start = [0, 2], limit = [4, 6], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x4xf32>
  %3 = trn.convert %2 : tensor<4x4xf32> -> tensor<4x4xbf16>
  return %x, %1, %3 : tensor<4x6xf32>, tensor<4x2xbf16>, tensor<4x4xbf16>
}

// -----

// Left alone: the slices are cast to different types.
// CHECK-LABEL: func.func @cast_slices_two_types
// CHECK: trn.slice %{{.*}} : (tensor<4x6xf32>)
// CHECK: trn.slice %{{.*}} : (tensor<4x6xf32>)
func.func @cast_slices_two_types(%a: tensor<4x6xf32>) -> (tensor<4x2xbf16>, tensor<4x4xf16>) {
  %x = trn.exp %a : tensor<4x6xf32>
  %0 = trn.slice %x, start = [0, 0], limit = [4, 2], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %1 = trn.convert %0 : tensor<4x2xf32> -> tensor<4x2xbf16>
  %2 = trn.slice %x, start = [0, 2], limit = [4, 6], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x4xf32>
  %3 = trn.convert %2 : tensor<4x4xf32> -> tensor<4x4xf16>
  return %1, %3 : tensor<4x2xbf16>, tensor<4x4xf16>
}

// -----

// Left alone: the slices leave part of x (casting all of it costs more).
// CHECK-LABEL: func.func @cast_slices_partial
// CHECK: trn.slice %{{.*}} : (tensor<4x6xf32>)
// CHECK: trn.slice %{{.*}} : (tensor<4x6xf32>)
func.func @cast_slices_partial(%a: tensor<4x6xf32>) -> (tensor<4x2xbf16>, tensor<4x2xbf16>) {
  %x = trn.exp %a : tensor<4x6xf32>
  %0 = trn.slice %x, start = [0, 0], limit = [4, 2], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %1 = trn.convert %0 : tensor<4x2xf32> -> tensor<4x2xbf16>
  %2 = trn.slice %x, start = [0, 2], limit = [4, 4], strides = [1, 1] : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %3 = trn.convert %2 : tensor<4x2xf32> -> tensor<4x2xbf16>
  return %1, %3 : tensor<4x2xbf16>, tensor<4x2xbf16>
}

// -----

// A cast after a reshape used only by it moves before the reshape, so that it
// can join x's producer: a narrowing cast through any reshape, and
// reshape(reshape(y)) back to y's shape folds away.
// CHECK-LABEL: func.func @cast_before_reshape
// CHECK-NEXT: %[[X:.*]] = trn.exp %arg0
// CHECK-NEXT: %[[C:.*]] = trn.convert %[[X]] : tensor<8x6xf32> -> tensor<8x6xbf16>
// CHECK-NEXT: return %[[C]]
func.func @cast_before_reshape(%a: tensor<8x6xf32>) -> tensor<8x6xbf16> {
  %x = trn.exp %a : tensor<8x6xf32>
  %0 = trn.reshape %x : (tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %1 = trn.convert %0 : tensor<2x4x6xf32> -> tensor<2x4x6xbf16>
  %2 = trn.reshape %1 : (tensor<2x4x6xbf16>) -> tensor<8x6xbf16>
  return %2 : tensor<8x6xbf16>
}

// -----

// Narrowing through a reshape that changes the rows; a widening cast through
// a reshape that keeps the last dimension (a view).
// CHECK-LABEL: func.func @cast_before_reshape_kinds
// CHECK-NEXT: %[[N:.*]] = trn.convert %arg0 : tensor<8x6xf32> -> tensor<8x6xbf16>
// CHECK-NEXT: trn.reshape %[[N]] : (tensor<8x6xbf16>) -> tensor<4x12xbf16>
// CHECK-NEXT: %[[W:.*]] = trn.convert %arg1 : tensor<8x6xbf16> -> tensor<8x6xf32>
// CHECK-NEXT: trn.reshape %[[W]] : (tensor<8x6xf32>) -> tensor<2x4x6xf32>
func.func @cast_before_reshape_kinds(%a: tensor<8x6xf32>, %b: tensor<8x6xbf16>) -> (tensor<4x12xbf16>, tensor<2x4x6xf32>) {
  %0 = trn.reshape %a : (tensor<8x6xf32>) -> tensor<4x12xf32>
  %1 = trn.convert %0 : tensor<4x12xf32> -> tensor<4x12xbf16>
  %2 = trn.reshape %b : (tensor<8x6xbf16>) -> tensor<2x4x6xbf16>
  %3 = trn.convert %2 : tensor<2x4x6xbf16> -> tensor<2x4x6xf32>
  return %1, %3 : tensor<4x12xbf16>, tensor<2x4x6xf32>
}

// -----

// Left alone: a widening cast through a reshape that changes the rows (the
// reshape would copy the wider data), and a reshape with another user.
// CHECK-LABEL: func.func @cast_before_reshape_left_alone
// CHECK-NEXT: %[[R:.*]] = trn.reshape %arg0 : (tensor<8x6xbf16>) -> tensor<4x12xbf16>
// CHECK-NEXT: trn.convert %[[R]] : tensor<4x12xbf16> -> tensor<4x12xf32>
// CHECK-NEXT: %[[S:.*]] = trn.reshape %arg1 : (tensor<8x6xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT: trn.convert %[[S]] : tensor<2x4x6xf32> -> tensor<2x4x6xbf16>
func.func @cast_before_reshape_left_alone(%a: tensor<8x6xbf16>, %b: tensor<8x6xf32>) -> (tensor<4x12xf32>, tensor<2x4x6xbf16>, tensor<2x4x6xf32>) {
  %0 = trn.reshape %a : (tensor<8x6xbf16>) -> tensor<4x12xbf16>
  %1 = trn.convert %0 : tensor<4x12xbf16> -> tensor<4x12xf32>
  %2 = trn.reshape %b : (tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %3 = trn.convert %2 : tensor<2x4x6xf32> -> tensor<2x4x6xbf16>
  return %1, %3, %2 : tensor<4x12xf32>, tensor<2x4x6xbf16>, tensor<2x4x6xf32>
}

// -----

// The sum along the scattered axis of a scatter_add into zeros, one index per
// row (a cross-entropy's gradient), is the updates; not with another operand,
// another axis, or several indices per row.
// CHECK-LABEL: func.func @reduce_of_one_hot_scatter
// CHECK: %[[S:.*]] = trn.scatter_add
// CHECK-NEXT: return %arg1, %[[S]]
func.func @reduce_of_one_hot_scatter(%idx: tensor<4xi32>, %upd: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x10xf32>) {
  %zero = trn.constant dense<0.0> : tensor<4x10xf32>
  %0 = trn.scatter_add %zero[%idx], %upd, axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x10xf32>
  %1 = trn.reduce sum %0, dims = [1] : (tensor<4x10xf32>) -> tensor<4xf32>
  return %1, %0 : tensor<4xf32>, tensor<4x10xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_of_scatter_left_alone
// CHECK-COUNT-3: trn.reduce
func.func @reduce_of_scatter_left_alone(%idx: tensor<4xi32>, %upd: tensor<4xf32>, %x: tensor<4x10xf32>, %idx2: tensor<4x2xi32>, %upd2: tensor<4x2xf32>) -> (tensor<4xf32>, tensor<10xf32>, tensor<4xf32>) {
  %zero = trn.constant dense<0.0> : tensor<4x10xf32>
  %0 = trn.scatter_add %x[%idx], %upd, axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x10xf32>
  %1 = trn.reduce sum %0, dims = [1] : (tensor<4x10xf32>) -> tensor<4xf32>
  %2 = trn.scatter_add %zero[%idx], %upd, axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x10xf32>
  %3 = trn.reduce sum %2, dims = [0] : (tensor<4x10xf32>) -> tensor<10xf32>
  %4 = trn.scatter_add %zero[%idx2], %upd2, axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<4x2xi32>, tensor<4x2xf32>) -> tensor<4x10xf32>
  %5 = trn.reduce sum %4, dims = [1] : (tensor<4x10xf32>) -> tensor<4xf32>
  return %1, %3, %5 : tensor<4xf32>, tensor<10xf32>, tensor<4xf32>
}
