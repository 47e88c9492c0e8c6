// RUN: trn-opt %s -split-input-file -trn-slice-before-views | FileCheck %s

// PyTorch 2's nn.MultiheadAttention selects q, k and v from its fused
// projection [S, B, 3E] through views: [S, B, 3, E], unsqueeze(0),
// transpose(0, -2), squeeze(-2), select. They become slices of the features.
// CHECK-LABEL: func.func @mha_in_projection
// CHECK-NOT: trn.transpose
// CHECK: %[[Q:.*]] = trn.slice %arg0, start = [0, 0, 0], limit = [16, 4, 64], strides = [1, 1, 1]
// CHECK: %[[K:.*]] = trn.slice %arg0, start = [0, 0, 64], limit = [16, 4, 128], strides = [1, 1, 1]
// CHECK: %[[V:.*]] = trn.slice %arg0, start = [0, 0, 128], limit = [16, 4, 192], strides = [1, 1, 1]
// CHECK-NOT: trn.transpose
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @mha_in_projection(%x: tensor<16x4x192xf32>) -> (tensor<16x4x64xf32>, tensor<16x4x64xf32>, tensor<16x4x64xf32>) {
  %0 = trn.reshape %x : (tensor<16x4x192xf32>) -> tensor<16x4x3x64xf32>
  %1 = trn.reshape %0 : (tensor<16x4x3x64xf32>) -> tensor<1x16x4x3x64xf32>
  %2 = trn.transpose %1, perm = [3, 1, 2, 0, 4] : (tensor<1x16x4x3x64xf32>) -> tensor<3x16x4x1x64xf32>
  %3 = trn.reshape %2 : (tensor<3x16x4x1x64xf32>) -> tensor<3x16x4x64xf32>
  %4 = trn.slice %3, start = [0, 0, 0, 0], limit = [1, 16, 4, 64], strides = [1, 1, 1, 1] : (tensor<3x16x4x64xf32>) -> tensor<1x16x4x64xf32>
  %q = trn.reshape %4 : (tensor<1x16x4x64xf32>) -> tensor<16x4x64xf32>
  %5 = trn.slice %3, start = [1, 0, 0, 0], limit = [2, 16, 4, 64], strides = [1, 1, 1, 1] : (tensor<3x16x4x64xf32>) -> tensor<1x16x4x64xf32>
  %k = trn.reshape %5 : (tensor<1x16x4x64xf32>) -> tensor<16x4x64xf32>
  %6 = trn.slice %3, start = [2, 0, 0, 0], limit = [3, 16, 4, 64], strides = [1, 1, 1, 1] : (tensor<3x16x4x64xf32>) -> tensor<1x16x4x64xf32>
  %v = trn.reshape %6 : (tensor<1x16x4x64xf32>) -> tensor<16x4x64xf32>
  return %q, %k, %v : tensor<16x4x64xf32>, tensor<16x4x64xf32>, tensor<16x4x64xf32>
}

// -----

// A slice of a transpose is the transpose of the permuted slice.
// CHECK-LABEL: func.func @through_transpose
// CHECK: %[[S:.*]] = trn.slice %arg0, start = [0, 2], limit = [8, 6], strides = [1, 1] : (tensor<8x6xf32>) -> tensor<8x4xf32>
// CHECK: trn.transpose %[[S]], perm = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
func.func @through_transpose(%x: tensor<8x6xf32>) -> tensor<4x8xf32> {
  %0 = trn.transpose %x, perm = [1, 0] : (tensor<8x6xf32>) -> tensor<6x8xf32>
  %1 = trn.slice %0, start = [2, 0], limit = [6, 8], strides = [1, 1] : (tensor<6x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Not rewritten: a view with another user than slices (it would be computed
// twice), a strided slice, a slice of the minor part of a split dimension
// (not one contiguous range), a slice cutting two dimensions of a reshape.
// CHECK-LABEL: func.func @kept_other_user
// CHECK: %[[T:.*]] = trn.transpose %arg0
// CHECK: trn.slice %[[T]]
func.func @kept_other_user(%x: tensor<8x6xf32>) -> (tensor<6x8xf32>, tensor<4x8xf32>) {
  %0 = trn.transpose %x, perm = [1, 0] : (tensor<8x6xf32>) -> tensor<6x8xf32>
  %1 = trn.slice %0, start = [2, 0], limit = [6, 8], strides = [1, 1] : (tensor<6x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<6x8xf32>, tensor<4x8xf32>
}
// CHECK-LABEL: func.func @kept_strided
// CHECK: %[[R:.*]] = trn.reshape %arg0 : (tensor<12xf32>) -> tensor<3x4xf32>
// CHECK: trn.slice %[[R]], start = [0, 0], limit = [3, 4], strides = [2, 1]
func.func @kept_strided(%y: tensor<12xf32>) -> tensor<2x4xf32> {
  %0 = trn.reshape %y : (tensor<12xf32>) -> tensor<3x4xf32>
  %1 = trn.slice %0, start = [0, 0], limit = [3, 4], strides = [2, 1] : (tensor<3x4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @kept_minor_part
// CHECK: %[[R:.*]] = trn.reshape %arg0 : (tensor<12xf32>) -> tensor<3x4xf32>
// CHECK: trn.slice %[[R]], start = [0, 1], limit = [3, 3], strides = [1, 1]
func.func @kept_minor_part(%y: tensor<12xf32>) -> tensor<3x2xf32> {
  %0 = trn.reshape %y : (tensor<12xf32>) -> tensor<3x4xf32>
  %1 = trn.slice %0, start = [0, 1], limit = [3, 3], strides = [1, 1] : (tensor<3x4xf32>) -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @kept_two_dims
// CHECK: %[[R:.*]] = trn.reshape %arg0 : (tensor<12xf32>) -> tensor<3x4xf32>
// CHECK: trn.slice %[[R]], start = [1, 1], limit = [2, 3], strides = [1, 1]
func.func @kept_two_dims(%y: tensor<12xf32>) -> tensor<1x2xf32> {
  %0 = trn.reshape %y : (tensor<12xf32>) -> tensor<3x4xf32>
  %1 = trn.slice %0, start = [1, 1], limit = [2, 3], strides = [1, 1] : (tensor<3x4xf32>) -> tensor<1x2xf32>
  return %1 : tensor<1x2xf32>
}

// -----

// A transpose that moves only unit dimensions is a reshape.
// CHECK-LABEL: func.func @unit_transpose
// CHECK-NOT: trn.transpose
// CHECK: trn.reshape %arg0 : (tensor<1x5x1x7xf32>) -> tensor<5x1x1x7xf32>
func.func @unit_transpose(%x: tensor<1x5x1x7xf32>) -> tensor<5x1x1x7xf32> {
  %0 = trn.transpose %x, perm = [1, 0, 2, 3] : (tensor<1x5x1x7xf32>) -> tensor<5x1x1x7xf32>
  return %0 : tensor<5x1x1x7xf32>
}
