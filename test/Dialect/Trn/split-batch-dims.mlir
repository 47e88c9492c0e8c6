// RUN: trn-opt %s -trn-split-batch-dims -split-input-file | FileCheck %s

// Attention's q @ k^T as traced: [B, H, S, D] merged to [B*H, S, D] for
// bmm and viewed back. The batched matmul gets its two batch dimensions
// back and the merges and views fold away.
// CHECK-LABEL: func.func @scores
// CHECK-NEXT: %[[KT:.*]] = trn.transpose %arg1, perm = [0, 1, 3, 2] : (tensor<2x4x8x16xf32>) -> tensor<2x4x16x8xf32>
// CHECK-NEXT: %[[S:.*]] = trn.dot_general %arg0, %[[KT]], batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
// CHECK-NEXT: return %[[S]]
func.func @scores(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32> {
  %kt = trn.transpose %k, perm = [0, 1, 3, 2] : (tensor<2x4x8x16xf32>) -> tensor<2x4x16x8xf32>
  %q3 = trn.reshape %q : (tensor<2x4x8x16xf32>) -> tensor<8x8x16xf32>
  %k3 = trn.reshape %kt : (tensor<2x4x16x8xf32>) -> tensor<8x16x8xf32>
  %s = trn.dot_general %q3, %k3, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32>
  %s4 = trn.reshape %s : (tensor<8x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %s4 : tensor<2x4x8x8xf32>
}

// -----

// The backward's form: a transpose after the merge (keeping the batch
// first) moves before it; an operand that is no merge (a grouped-query
// key merged from [B, KV, rep]) is viewed as [B, H] by a reshape.
// CHECK-LABEL: func.func @backward
// CHECK: %[[T:.*]] = trn.transpose %arg0, perm = [0, 1, 3, 2] : (tensor<2x4x8x16xf32>) -> tensor<2x4x16x8xf32>
// CHECK: %[[K:.*]] = trn.reshape %arg1 : (tensor<2x2x2x8x8xf32>) -> tensor<2x4x8x8xf32>
// CHECK: trn.dot_general %[[T]], %[[K]], batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x4x16x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x16x8xf32>
func.func @backward(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x2x8x8xf32>) -> tensor<8x16x8xf32> {
  %q3 = trn.reshape %q : (tensor<2x4x8x16xf32>) -> tensor<8x8x16xf32>
  %qt = trn.transpose %q3, perm = [0, 2, 1] : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %k3 = trn.reshape %k : (tensor<2x2x2x8x8xf32>) -> tensor<8x8x8xf32>
  %d = trn.dot_general %qt, %k3, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x16x8xf32>, tensor<8x8x8xf32>) -> tensor<8x16x8xf32>
  return %d : tensor<8x16x8xf32>
}

// -----

// A batched matmul whose batch is no merge is left alone.
// CHECK-LABEL: func.func @plain
// CHECK: batching_dims = [0] x [0]
func.func @plain(%a: tensor<8x8x16xf32>, %b: tensor<8x16x8xf32>) -> tensor<8x8x8xf32> {
  %d = trn.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32>
  return %d : tensor<8x8x8xf32>
}

// -----

// nn.MultiheadAttention's value: [S, B*H, D] moved to [B*H, S, D] and split
// to [B, H, S, D] forward, moved to [B*H, D, S] and split backward. The
// splits happen before the transposes, so both are transposes of one
// [S, B, H, D] value (once CSE merges the two equal reshapes).
// CHECK-LABEL: func.func @split_before_transpose
// CHECK: %[[V:.*]] = trn.reshape %arg0 : (tensor<16x8x4xf32>) -> tensor<16x2x4x4xf32>
// CHECK: trn.transpose %[[V]], perm = [1, 2, 0, 3] : (tensor<16x2x4x4xf32>) -> tensor<2x4x16x4xf32>
// CHECK: %[[W:.*]] = trn.reshape %arg0 : (tensor<16x8x4xf32>) -> tensor<16x2x4x4xf32>
// CHECK: trn.transpose %[[W]], perm = [1, 2, 3, 0] : (tensor<16x2x4x4xf32>) -> tensor<2x4x4x16xf32>
func.func @split_before_transpose(%v: tensor<16x8x4xf32>) -> (tensor<2x4x16x4xf32>, tensor<2x4x4x16xf32>) {
  %0 = trn.transpose %v, perm = [1, 0, 2] : (tensor<16x8x4xf32>) -> tensor<8x16x4xf32>
  %1 = trn.reshape %0 : (tensor<8x16x4xf32>) -> tensor<2x4x16x4xf32>
  %2 = trn.transpose %v, perm = [1, 2, 0] : (tensor<16x8x4xf32>) -> tensor<8x4x16xf32>
  %3 = trn.reshape %2 : (tensor<8x4x16xf32>) -> tensor<2x4x4x16xf32>
  return %1, %3 : tensor<2x4x16x4xf32>, tensor<2x4x4x16xf32>
}

// -----

// Not rewritten: a reshape that merges, and a transpose with another user
// (it would be computed twice).
// CHECK-LABEL: func.func @split_kept
// CHECK: %[[T:.*]] = trn.transpose %arg0, perm = [1, 0, 2]
// CHECK: trn.reshape %[[T]] : (tensor<8x16x4xf32>) -> tensor<8x64xf32>
// CHECK: %[[U:.*]] = trn.transpose %arg0, perm = [1, 2, 0]
// CHECK: trn.reshape %[[U]] : (tensor<8x4x16xf32>) -> tensor<2x4x4x16xf32>
func.func @split_kept(%v: tensor<16x8x4xf32>) -> (tensor<8x64xf32>, tensor<2x4x4x16xf32>, tensor<8x4x16xf32>) {
  %0 = trn.transpose %v, perm = [1, 0, 2] : (tensor<16x8x4xf32>) -> tensor<8x16x4xf32>
  %1 = trn.reshape %0 : (tensor<8x16x4xf32>) -> tensor<8x64xf32>
  %2 = trn.transpose %v, perm = [1, 2, 0] : (tensor<16x8x4xf32>) -> tensor<8x4x16xf32>
  %3 = trn.reshape %2 : (tensor<8x4x16xf32>) -> tensor<2x4x4x16xf32>
  return %1, %3, %2 : tensor<8x64xf32>, tensor<2x4x4x16xf32>, tensor<8x4x16xf32>
}

// -----

// q, k and v selected from a stacked [3, B, H, S, D] are [1, B, H, S, D]:
// their leading unit dimension is not a batch dimension. Merged to
// [B*H, S, D] beside an operand merged from [B, H, ...], the batch is
// [B, H] for both.
// CHECK-LABEL: func.func @unit_leading
// CHECK: %[[V:.*]] = trn.reshape %arg1 : (tensor<1x2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
// CHECK: trn.dot_general %arg0, %[[V]], batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
func.func @unit_leading(%p: tensor<2x4x8x8xf32>, %v: tensor<1x2x4x8x8xf32>) -> tensor<8x8x8xf32> {
  %p3 = trn.reshape %p : (tensor<2x4x8x8xf32>) -> tensor<8x8x8xf32>
  %v3 = trn.reshape %v : (tensor<1x2x4x8x8xf32>) -> tensor<8x8x8xf32>
  %o = trn.dot_general %p3, %v3, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x8x8xf32>, tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  return %o : tensor<8x8x8xf32>
}
