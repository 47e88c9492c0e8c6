// RUN: trn-opt %s -split-input-file -trn-hoist-slices | FileCheck %s

// A fused QKV projection (x Wᵀ + b, rounded to bf16) cut into q, k and v:
// each piece is its own matmul on a block of W's rows with its part of b;
// a slice of the f32 sum (v, before the rounding) splits the same way.
// CHECK-LABEL: func.func @qkv
// CHECK-NOT: tensor<16x24x
// CHECK: %[[W0:.*]] = trn.slice %arg1, start = [0, 0], limit = [8, 8]
// CHECK: %[[D0:.*]] = trn.dot_general %arg0, %[[W0]], batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<16x8xbf16>, tensor<8x8xbf16>) -> tensor<16x8xf32>
// CHECK: trn.slice %{{.*}}, start = [0], limit = [8]{{.*}} -> tensor<8xf32>
// CHECK: trn.broadcast_in_dim {{.*}} : (tensor<8xf32>) -> tensor<16x8xf32>
// CHECK: trn.slice %arg1, start = [8, 0], limit = [16, 8]
// CHECK-NEXT: trn.dot_general
// CHECK: trn.slice %arg1, start = [16, 0], limit = [24, 8]
// CHECK-NEXT: trn.dot_general
func.func @qkv(%x: tensor<16x8xbf16>, %w: tensor<24x8xbf16>, %b: tensor<24xbf16>) -> (tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<16x8xf32>) {
  %y = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<16x8xbf16>, tensor<24x8xbf16>) -> tensor<16x24xf32>
  %bf = trn.convert %b : tensor<24xbf16> -> tensor<24xf32>
  %bb = trn.broadcast_in_dim %bf, dims = [1] : (tensor<24xf32>) -> tensor<16x24xf32>
  %z = trn.add %y, %bb : tensor<16x24xf32>
  %c = trn.convert %z : tensor<16x24xf32> -> tensor<16x24xbf16>
  %q = trn.slice %c, start = [0, 0], limit = [16, 8], strides = [1, 1] : (tensor<16x24xbf16>) -> tensor<16x8xbf16>
  %k = trn.slice %c, start = [0, 8], limit = [16, 16], strides = [1, 1] : (tensor<16x24xbf16>) -> tensor<16x8xbf16>
  %v = trn.slice %z, start = [0, 16], limit = [16, 24], strides = [1, 1] : (tensor<16x24xf32>) -> tensor<16x8xf32>
  return %q, %k, %v : tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<16x8xf32>
}

// -----

// A slice of the rows of a batched matmul slices the lhs only; a slice of
// the batch slices both operands.
// CHECK-LABEL: func.func @batched
// CHECK: %[[A:.*]] = trn.slice %arg0, start = [0, 0, 0], limit = [2, 4, 8]
// CHECK: trn.dot_general %[[A]], %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
// CHECK: %[[L:.*]] = trn.slice %arg0, start = [1, 0, 0], limit = [2, 16, 8]
// CHECK: %[[R:.*]] = trn.slice %arg1, start = [1, 0, 0], limit = [2, 8, 6]
// CHECK: trn.dot_general %[[L]], %[[R]]
func.func @batched(%a: tensor<2x16x8xf32>, %b: tensor<2x8x6xf32>) -> (tensor<2x4x6xf32>, tensor<1x16x6xf32>) {
  %d = trn.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x16x8xf32>, tensor<2x8x6xf32>) -> tensor<2x16x6xf32>
  %rows = trn.slice %d, start = [0, 0, 0], limit = [2, 4, 6], strides = [1, 1, 1] : (tensor<2x16x6xf32>) -> tensor<2x4x6xf32>
  %batch = trn.slice %d, start = [1, 0, 0], limit = [2, 16, 6], strides = [1, 1, 1] : (tensor<2x16x6xf32>) -> tensor<1x16x6xf32>
  return %rows, %batch : tensor<2x4x6xf32>, tensor<1x16x6xf32>
}

// -----

// What stays: a matmul whose result something other than a slice reads
// (splitting would compute it twice), a strided slice, and halves of a
// value that no matmul makes (a rotary embedding's gradient times sin, whose
// rotation trn-fuse-elementwise finds whole).
// CHECK-LABEL: func.func @kept
// CHECK: %[[D:.*]] = trn.dot_general %arg0, %arg1{{.*}} -> tensor<16x24xf32>
// CHECK: trn.slice %[[D]]
// CHECK: trn.exp %[[D]]
// CHECK: %[[E:.*]] = trn.dot_general %arg0, %arg1{{.*}} -> tensor<16x24xf32>
// CHECK: trn.slice %[[E]], start = [0, 0], limit = [16, 24], strides = [1, 2]
// CHECK: %[[M:.*]] = trn.mul %arg2, %arg3 : tensor<16x8xf32>
// CHECK: trn.slice %[[M]], start = [0, 0], limit = [16, 4]
// CHECK: trn.slice %[[M]], start = [0, 4], limit = [16, 8]
func.func @kept(%x: tensor<16x8xf32>, %w: tensor<24x8xf32>, %g: tensor<16x8xf32>, %s: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x24xf32>, tensor<16x12xf32>, tensor<16x4xf32>, tensor<16x4xf32>) {
  %d = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<16x8xf32>, tensor<24x8xf32>) -> tensor<16x24xf32>
  %q = trn.slice %d, start = [0, 0], limit = [16, 8], strides = [1, 1] : (tensor<16x24xf32>) -> tensor<16x8xf32>
  %e = trn.exp %d : tensor<16x24xf32>
  %d2 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<16x8xf32>, tensor<24x8xf32>) -> tensor<16x24xf32>
  %odd = trn.slice %d2, start = [0, 0], limit = [16, 24], strides = [1, 2] : (tensor<16x24xf32>) -> tensor<16x12xf32>
  %m = trn.mul %g, %s : tensor<16x8xf32>
  %lo = trn.slice %m, start = [0, 0], limit = [16, 4], strides = [1, 1] : (tensor<16x8xf32>) -> tensor<16x4xf32>
  %hi = trn.slice %m, start = [0, 4], limit = [16, 8], strides = [1, 1] : (tensor<16x8xf32>) -> tensor<16x4xf32>
  return %q, %e, %odd, %lo, %hi : tensor<16x8xf32>, tensor<16x24xf32>, tensor<16x12xf32>, tensor<16x4xf32>, tensor<16x4xf32>
}

// -----

// A transposed weight cut into pieces that matmuls read: pieces of the
// weight (blocks of its rows), each transposed. A transpose whose pieces
// something else reads stays whole.
// CHECK-LABEL: func.func @transposed_weight_pieces
// CHECK: %[[W0:.*]] = trn.slice %arg1, start = [0, 0], limit = [8, 4]
// CHECK-NEXT: %[[T0:.*]] = trn.transpose %[[W0]], perm = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[W1:.*]] = trn.slice %arg1, start = [8, 0], limit = [16, 4]
// CHECK-NEXT: %[[T1:.*]] = trn.transpose %[[W1]]
// CHECK-NEXT: trn.dot_general %arg0, %[[T0]]
// CHECK-NEXT: trn.dot_general %arg0, %[[T1]]
// CHECK: %[[T:.*]] = trn.transpose %arg2, perm = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
// CHECK: trn.slice %[[T]]
// CHECK: trn.exp
func.func @transposed_weight_pieces(%x: tensor<2x4xf32>, %w: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<4x8xf32>) {
  %wt = trn.transpose %w, perm = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %a = trn.slice %wt, start = [0, 0], limit = [4, 8], strides = [1, 1] : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %b = trn.slice %wt, start = [0, 8], limit = [4, 16], strides = [1, 1] : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %ya = trn.dot_general %x, %a, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %yb = trn.dot_general %x, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %vt = trn.transpose %v, perm = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %c = trn.slice %vt, start = [0, 0], limit = [4, 8], strides = [1, 1] : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %e = trn.exp %c : tensor<4x8xf32>
  return %ya, %yb, %e : tensor<2x8xf32>, tensor<2x8xf32>, tensor<4x8xf32>
}
