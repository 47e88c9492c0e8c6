// RUN: trn-opt %s -cse | FileCheck %s

// trn ops have no side effects, so -cse merges identical ones (same operands,
// attributes and result types) and keeps the others.

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32>, %[[Y:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT: %[[E:.*]] = trn.exp %[[X]]
// CHECK-NEXT: %[[A:.*]] = trn.add %[[E]], %[[Y]]
// CHECK-NEXT: %[[G:.*]] = trn.gelu %[[X]] : tensor<4xf32>
// CHECK-NEXT: %[[GT:.*]] = trn.gelu %[[X]] approximate = tanh
// CHECK-NEXT: return %[[A]], %[[A]], %[[G]], %[[GT]], %[[G]]
func.func @elementwise(%x: tensor<4xf32>, %y: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = trn.exp %x : tensor<4xf32>
  %1 = trn.exp %x : tensor<4xf32>
  %2 = trn.add %0, %y : tensor<4xf32>
  %3 = trn.add %1, %y : tensor<4xf32>
  // A different attribute is a different op; the default value is the same.
  %4 = trn.gelu %x : tensor<4xf32>
  %5 = trn.gelu %x approximate = tanh : tensor<4xf32>
  %6 = trn.gelu %x approximate = none : tensor<4xf32>
  return %2, %3, %4, %5, %6 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @constants
// CHECK-NEXT: %[[A:.*]] = trn.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[B:.*]] = trn.constant dense<1.000000e+00> : tensor<4xbf16>
// CHECK-NEXT: return %[[A]], %[[A]], %[[B]]
func.func @constants() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>) {
  %0 = trn.constant dense<1.0> : tensor<4xf32>
  %1 = trn.constant dense<1.0> : tensor<4xf32>
  %2 = trn.constant dense<1.0> : tensor<4xbf16>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>
}

// CHECK-LABEL: func.func @shape_ops
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[T:.*]] = trn.transpose %[[X]], perm = [1, 0]
// CHECK-NEXT: %[[R:.*]] = trn.reduce sum %[[X]], dims = [1]
// CHECK-NEXT: %[[M:.*]] = trn.reduce max %[[X]], dims = [1]
// CHECK-NEXT: %[[D:.*]] = trn.dot_general %[[X]], %[[T]]
// CHECK-NEXT: return %[[T]], %[[T]], %[[R]], %[[R]], %[[M]], %[[D]], %[[D]]
func.func @shape_ops(%x: tensor<2x3xf32>)
    -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %0 = trn.transpose %x, perm = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = trn.transpose %x, perm = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = trn.reduce sum %x, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %3 = trn.reduce sum %x, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %4 = trn.reduce max %x, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %5 = trn.dot_general %x, %0, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %6 = trn.dot_general %x, %1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0, %1, %2, %3, %4, %5, %6
      : tensor<3x2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// Random numbers depend only on (seed, stream, index): two draws with the same
// seed and stream are the same tensor; another stream is independent.
// CHECK-LABEL: func.func @rng
// CHECK-SAME: (%[[S:.*]]: tensor<i64>)
// CHECK-NEXT: %[[U:.*]] = trn.rng_uniform %[[S]], stream = 0
// CHECK-NEXT: %[[V:.*]] = trn.rng_uniform %[[S]], stream = 1
// CHECK-NEXT: %[[M:.*]] = trn.rng_bernoulli %[[S]], stream = 2, p = 5.000000e-01
// CHECK-NEXT: return %[[U]], %[[U]], %[[V]], %[[M]], %[[M]]
func.func @rng(%seed: tensor<i64>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xi1>) {
  %0 = trn.rng_uniform %seed, stream = 0 : tensor<i64> -> tensor<4xf32>
  %1 = trn.rng_uniform %seed, stream = 0 : tensor<i64> -> tensor<4xf32>
  %2 = trn.rng_uniform %seed, stream = 1 : tensor<i64> -> tensor<4xf32>
  %3 = trn.rng_bernoulli %seed, stream = 2, p = 0.5 : tensor<i64> -> tensor<4xi1>
  %4 = trn.rng_bernoulli %seed, stream = 2, p = 0.5 : tensor<i64> -> tensor<4xi1>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xi1>
}

// Multi-result composites are merged as a whole.
// CHECK-LABEL: func.func @composites
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32>, %[[W:[^:]*]]: tensor<8xf32>)
// CHECK-NEXT: %[[Y:[^ ,]+]], %[[R:[^ ,]+]] = trn.rms_norm %[[X]], %[[W]]
// CHECK-NEXT: %[[S:.*]] = trn.softmax %[[X]], dim = 1
// CHECK-NEXT: return %[[Y]], %[[R]], %[[Y]], %[[S]], %[[S]]
func.func @composites(%x: tensor<4x8xf32>, %w: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %y, %r = trn.rms_norm %x, %w, axis = 1, eps = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  %y2, %r2 = trn.rms_norm %x, %w, axis = 1, eps = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  %s = trn.softmax %x, dim = 1 : tensor<4x8xf32>
  %s2 = trn.softmax %x, dim = 1 : tensor<4x8xf32>
  return %y, %r, %y2, %s, %s2 : tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
