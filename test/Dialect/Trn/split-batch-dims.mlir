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
