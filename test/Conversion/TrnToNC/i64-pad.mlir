// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s

// An i64 input is read as its low i32 words (element stride 2); an i32
// value is written as i64: the value as the low word, (x < 0) * -1 as the
// high word.
// CHECK-LABEL: func.func @edges
// CHECK: nc.view %arg0 strides [2] {partition_stride = 16 : i64} : !nc.hbm<4x8xi64> -> <hbm, 4x8xi32>
// CHECK: nc.tensor_scalar is_less, multiply {{.*}} {scalar1 = -1.000000e+00 : f32}
// CHECK: nc.view %arg1 strides [2] {partition_stride = 16 : i64} : !nc.hbm<4x8xi64> -> <hbm, 4x8xi32>
// CHECK: nc.view %arg1 strides [2] {offset = 1 : i64, partition_stride = 16 : i64} : !nc.hbm<4x8xi64> -> <hbm, 4x8xi32>
func.func @edges(%x: tensor<4x8xi64>) -> tensor<4x8xi64> {
  %0 = trn.convert %x : tensor<4x8xi64> -> tensor<4x8xi32>
  %1 = trn.convert %0 : tensor<4x8xi32> -> tensor<4x8xi64>
  return %1 : tensor<4x8xi64>
}

// -----

// pad: the result is filled with the value, then the operand is copied into
// its window (offset 1 * 12 + 2).
// CHECK-LABEL: func.func @pad
// CHECK: nc.memset {{.*}}, -1.500000e+00
// CHECK: nc.view %arg1 strides [1] {offset = 14 : i64, partition_stride = 12 : i64} : !nc.hbm<5x12xf32> -> <hbm, 3x8xf32>
func.func @pad(%x: tensor<3x8xf32>) -> tensor<5x12xf32> {
  %0 = trn.pad %x, low = [1, 2], high = [1, 2], value = -1.5 : (tensor<3x8xf32>) -> tensor<5x12xf32>
  return %0 : tensor<5x12xf32>
}

// -----

func.func @wide_float(%x: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.convert' between i64 and 'f32' is not lowered to NeuronCore kernels (the engines have no 64-bit integers; run trn-narrow-i64 so that only i32 <-> i64 conversions remain)}}
  %0 = trn.convert %x : tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
