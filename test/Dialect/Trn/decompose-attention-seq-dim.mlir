// RUN: trn-opt %s -trn-decompose-composites | FileCheck %s --implicit-check-not=trn.attention

// Attention with seq_dim decomposes through the canonical [B, H, S, D]
// order: its operands are transposed into it, its results back out of it;
// lse needs neither. (test/e2e/attention-seq-dim.mlir checks the values.)
// CHECK-LABEL: func.func @attention_seq_dim(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<2x8x4x16xf32>, %[[DO:[^:]+]]: tensor<2x8x4x16xf32>
// CHECK-NEXT: %[[QT:.+]] = trn.transpose %[[Q]], perm = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK: %[[OT:.+]] = trn.dot_general {{.*}} -> tensor<2x4x8x16xf32>
// CHECK: %[[O:.+]] = trn.transpose %[[OT]], perm = [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
// CHECK: trn.transpose %[[DO]], perm = [0, 2, 1, 3]
// CHECK: %[[DQ:.+]] = trn.transpose %{{.+}}, perm = [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
// CHECK: return %[[O]], %[[DQ]]
func.func @attention_seq_dim(%q: tensor<2x8x4x16xf32>, %do: tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) {
  %o, %lse = trn.attention %q, %q, %q, scale = 0.25 causal seq_dim = 1 : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %q, %q, %o, %lse, %do, scale = 0.25 causal seq_dim = 1 : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
  return %o, %dq : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
}
