// RUN: trn-opt %s -split-input-file -trn-narrow-i64 -verify-diagnostics | FileCheck %s

// Labels arrive as i64: converted once, compared and selected in i32; an
// i64 result is widened back before the return; the signature is unchanged.
// CHECK-LABEL: func.func @labels
// CHECK-SAME: (%[[L:.*]]: tensor<8xi64>) -> (tensor<8xi64>, tensor<8xf32>)
// CHECK-NEXT: %[[N:.*]] = trn.convert %[[L]] : tensor<8xi64> -> tensor<8xi32>
// CHECK-NEXT: %[[IGN:.*]] = trn.constant dense<-100> : tensor<8xi32>
// CHECK-NEXT: %[[ZERO:.*]] = trn.constant dense<0> : tensor<8xi32>
// CHECK-NEXT: %[[EQ:.*]] = trn.compare eq, %[[N]], %[[IGN]] : tensor<8xi32>
// CHECK-NEXT: %[[SEL:.*]] = trn.select %[[EQ]], %[[ZERO]], %[[N]] : tensor<8xi1>, tensor<8xi32>
// CHECK-NEXT: %[[F:.*]] = trn.convert %[[SEL]] : tensor<8xi32> -> tensor<8xf32>
// CHECK-NEXT: %[[W:.*]] = trn.convert %[[SEL]] : tensor<8xi32> -> tensor<8xi64>
// CHECK-NEXT: return %[[W]], %[[F]]
func.func @labels(%labels: tensor<8xi64>) -> (tensor<8xi64>, tensor<8xf32>) {
  %ignore = trn.constant dense<-100> : tensor<8xi64>
  %zero = trn.constant dense<0> : tensor<8xi64>
  %eq = trn.compare eq, %labels, %ignore : tensor<8xi64>
  %safe = trn.select %eq, %zero, %labels : tensor<8xi1>, tensor<8xi64>
  %f = trn.convert %safe : tensor<8xi64> -> tensor<8xf32>
  return %safe, %f : tensor<8xi64>, tensor<8xf32>
}

// -----

// Dense constants are narrowed element by element; rng seeds stay i64.
// CHECK-LABEL: func.func @seed
// CHECK-NOT: trn.convert %arg0
// CHECK: trn.constant dense<[1, -2, 3, 2147483647]> : tensor<4xi32>
// CHECK: trn.rng_uniform %arg0
func.func @seed(%seed: tensor<i64>) -> (tensor<4xi64>, tensor<4xf32>) {
  %c = trn.constant dense<[1, -2, 3, 2147483647]> : tensor<4xi64>
  %u = trn.rng_uniform %seed, stream = 0 : tensor<i64> -> tensor<4xf32>
  return %c, %u : tensor<4xi64>, tensor<4xf32>
}

// -----

func.func @too_big() -> tensor<2xi64> {
  // expected-error @+1 {{'trn.constant' op i64 constant 4294967296 does not fit in i32: NeuronCore kernels compute integers in 32 bits}}
  %c = trn.constant dense<[1, 4294967296]> : tensor<2xi64>
  return %c : tensor<2xi64>
}
