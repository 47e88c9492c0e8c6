// RUN: trn-opt %s --trn-assign-layouts --split-input-file | FileCheck %s

// The head transposes around a causal attention, forward and backward, as a
// projection and the output projection need them: both ops take [B, S, H, D]
// operands (seq_dim = 1) and every transpose disappears. The backward op
// sees the forward output through the transpose added for it, which it
// absorbs in turn.
// CHECK-LABEL: func.func @heads
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x16x4x8xf32>, %[[K:[^:]*]]: tensor<2x16x4x8xf32>, %[[V:[^:]*]]: tensor<2x16x4x8xf32>, %[[DO:[^:]*]]: tensor<2x16x4x8xf32>)
// CHECK-NOT: trn.transpose
// CHECK: %[[O:[^ ,]+]], %[[LSE:[^ ,]+]] = trn.attention %[[Q]], %[[K]], %[[V]], scale = 5.000000e-01 causal seq_dim = 1 : (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x4x16xf32>)
// CHECK-NEXT: %[[DQ:[^ ,]+]], %[[DK:[^ ,]+]], %[[DV:[^ ,]+]] = trn.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]], %[[DO]], scale = 5.000000e-01 causal seq_dim = 1
// CHECK-NOT: trn.transpose
// CHECK: return %[[O]], %[[DQ]], %[[DK]], %[[DV]]
func.func @heads(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x4x8xf32>, %v: tensor<2x16x4x8xf32>, %do: tensor<2x16x4x8xf32>)
    -> (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) {
  %qt = trn.transpose %q, perm = [0, 2, 1, 3] : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
  %kt = trn.transpose %k, perm = [0, 2, 1, 3] : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
  %vt = trn.transpose %v, perm = [0, 2, 1, 3] : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
  %ot, %lse = trn.attention %qt, %kt, %vt, scale = 0.5 causal : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
  %o = trn.transpose %ot, perm = [0, 2, 1, 3] : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32>
  %dot = trn.transpose %do, perm = [0, 2, 1, 3] : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
  %dqt, %dkt, %dvt = trn.attention_grad %qt, %kt, %vt, %ot, %lse, %dot, scale = 0.5 causal : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>)
  %dq = trn.transpose %dqt, perm = [0, 2, 1, 3] : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32>
  %dk = trn.transpose %dkt, perm = [0, 2, 1, 3] : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32>
  %dv = trn.transpose %dvt, perm = [0, 2, 1, 3] : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32>
  return %o, %dq, %dk, %dv : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
}

// -----

// Operands already canonical: nothing to gain, nothing changes.
// CHECK-LABEL: func.func @canonical
// CHECK-NEXT: trn.attention %{{.*}}, %{{.*}}, %{{.*}}, scale = 5.000000e-01 :
// CHECK-NEXT: return
func.func @canonical(%q: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %o, %lse = trn.attention %q, %q, %q, scale = 0.5 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
  return %o : tensor<2x4x16x8xf32>
}

// -----

// Only the query comes through a transpose: taking its layout would add
// transposes for the key, the value and the returned output (three tensors
// moved to save one), so the op stays as it is.
// CHECK-LABEL: func.func @not_worth_it
// CHECK-NEXT: %[[QT:[^ ]+]] = trn.transpose
// CHECK-NEXT: trn.attention %[[QT]], %{{.*}}, %{{.*}}, scale = 5.000000e-01 :
// CHECK-NEXT: return
func.func @not_worth_it(%q: tensor<2x16x4x8xf32>, %k: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %qt = trn.transpose %q, perm = [0, 2, 1, 3] : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
  %o, %lse = trn.attention %qt, %k, %k, scale = 0.5 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
  return %o : tensor<2x4x16x8xf32>
}

// -----

// The output has a user besides its transpose: the op still takes the
// layout of its three operands, and that user gets one transpose back (with
// seq_dim = 0, [S, B, H, D] operands). The discardable matmul type stays.
// CHECK-LABEL: func.func @output_also_canonical
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<16x2x4x8xbf16>)
// CHECK-NEXT: %[[O:[^ ,]+]], %{{.*}} = trn.attention %[[Q]], %[[Q]], %[[Q]], scale = 5.000000e-01 seq_dim = 0 {trn.matmul_type = f16} : (tensor<16x2x4x8xbf16>, tensor<16x2x4x8xbf16>, tensor<16x2x4x8xbf16>) -> (tensor<16x2x4x8xbf16>, tensor<2x4x16xf32>)
// CHECK-NEXT: %[[BACK:[^ ]+]] = trn.transpose %[[O]], perm = [1, 2, 0, 3] : (tensor<16x2x4x8xbf16>) -> tensor<2x4x16x8xbf16>
// CHECK-NEXT: return %[[O]], %[[BACK]]
func.func @output_also_canonical(%q: tensor<16x2x4x8xbf16>) -> (tensor<16x2x4x8xbf16>, tensor<2x4x16x8xbf16>) {
  %qt = trn.transpose %q, perm = [1, 2, 0, 3] : (tensor<16x2x4x8xbf16>) -> tensor<2x4x16x8xbf16>
  %ot, %lse = trn.attention %qt, %qt, %qt, scale = 0.5 {trn.matmul_type = f16} : (tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>) -> (tensor<2x4x16x8xbf16>, tensor<2x4x16xf32>)
  %o = trn.transpose %ot, perm = [2, 0, 1, 3] : (tensor<2x4x16x8xbf16>) -> tensor<16x2x4x8xbf16>
  return %o, %ot : tensor<16x2x4x8xbf16>, tensor<2x4x16x8xbf16>
}

// -----

// A transposed matmul operand is read in place: x^T w contracts x's rows,
// a w^T operand contracts w's columns; with a batch dim, the transpose of
// the two inner dims folds too.
// CHECK-LABEL: func.func @dots
// CHECK-SAME: (%[[X:[^:]*]]: tensor<16x32xf32>, %[[W:[^:]*]]: tensor<24x16xf32>, %[[A:[^:]*]]: tensor<3x8x5xf32>, %[[B:[^:]*]]: tensor<3x8x6xf32>)
// CHECK-NEXT: %[[XW:[^ ]+]] = trn.dot_general %[[X]], %[[W]], batching_dims = [] x [], contracting_dims = [0] x [1] : (tensor<16x32xf32>, tensor<24x16xf32>) -> tensor<32x24xf32>
// CHECK-NEXT: %[[AB:[^ ]+]] = trn.dot_general %[[A]], %[[B]], batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<3x8x5xf32>, tensor<3x8x6xf32>) -> tensor<3x5x6xf32>
// CHECK-NEXT: return %[[XW]], %[[AB]]
func.func @dots(%x: tensor<16x32xf32>, %w: tensor<24x16xf32>, %a: tensor<3x8x5xf32>, %b: tensor<3x8x6xf32>) -> (tensor<32x24xf32>, tensor<3x5x6xf32>) {
  %xt = trn.transpose %x, perm = [1, 0] : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %wt = trn.transpose %w, perm = [1, 0] : (tensor<24x16xf32>) -> tensor<16x24xf32>
  %xw = trn.dot_general %xt, %wt, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<32x16xf32>, tensor<16x24xf32>) -> tensor<32x24xf32>
  %at = trn.transpose %a, perm = [0, 2, 1] : (tensor<3x8x5xf32>) -> tensor<3x5x8xf32>
  %ab = trn.dot_general %at, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x5x8xf32>, tensor<3x8x6xf32>) -> tensor<3x5x6xf32>
  return %xw, %ab : tensor<32x24xf32>, tensor<3x5x6xf32>
}

// -----

// Not folded: a transpose something else also reads (the dot would trade a
// free operand orientation for nothing), and one that would move the batch
// dim out of the leading position the backend lowers.
// CHECK-LABEL: func.func @dots_kept
// CHECK-NEXT: %[[XT:[^ ]+]] = trn.transpose
// CHECK-NEXT: trn.dot_general %[[XT]]
// CHECK-NEXT: %[[AT:[^ ]+]] = trn.transpose
// CHECK-NEXT: trn.dot_general %[[AT]]
func.func @dots_kept(%x: tensor<16x32xf32>, %w: tensor<16x24xf32>, %a: tensor<8x3x5xf32>, %b: tensor<3x8x6xf32>) -> (tensor<32x24xf32>, tensor<32x16xf32>, tensor<3x5x6xf32>) {
  %xt = trn.transpose %x, perm = [1, 0] : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %xw = trn.dot_general %xt, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<32x16xf32>, tensor<16x24xf32>) -> tensor<32x24xf32>
  %at = trn.transpose %a, perm = [1, 2, 0] : (tensor<8x3x5xf32>) -> tensor<3x5x8xf32>
  %ab = trn.dot_general %at, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x5x8xf32>, tensor<3x8x6xf32>) -> tensor<3x5x6xf32>
  return %xw, %xt, %ab : tensor<32x24xf32>, tensor<32x16xf32>, tensor<3x5x6xf32>
}

// -----

// A partitioned backward gathers the activation gradient for dX = dY W and,
// transposed, for dW = dY^T X: the gather of the transpose becomes the
// transpose of a gather, which the weight-gradient matmul reads in place
// (contracting dim 0), and the two gathers of dY merge into the first.
// CHECK-LABEL: func.func @gather_once
// CHECK: %[[G:.*]] = dist.all_gather %arg0 on @mesh axes = ["tp"] dim = 0 : tensor<4x16xf32> -> tensor<16x16xf32>
// CHECK-NOT: dist.all_gather
// CHECK-NOT: trn.transpose
// CHECK-DAG: trn.dot_general %[[G]], %arg1, batching_dims = [] x [], contracting_dims = [0] x [0]
// CHECK-DAG: trn.dot_general %[[G]], %arg2, batching_dims = [] x [], contracting_dims = [1] x [1]
dist.mesh @mesh <tp = 4>
func.func @gather_once(%dy: tensor<4x16xf32>, %x: tensor<16x8xf32>, %w: tensor<8x16xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %t = trn.transpose %dy, perm = [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %gt = dist.all_gather %t on @mesh axes = ["tp"] dim = 1 : tensor<16x4xf32> -> tensor<16x16xf32>
  %dw = trn.dot_general %gt, %x, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %g = dist.all_gather %dy on @mesh axes = ["tp"] dim = 0 : tensor<4x16xf32> -> tensor<16x16xf32>
  %dx = trn.dot_general %g, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<16x16xf32>, tensor<8x16xf32>) -> tensor<16x8xf32>
  return %dw, %dx : tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// A gathered transpose that another op reads stays as it is (gathering first
// would transpose a tensor the group size times larger).
// CHECK-LABEL: func.func @gather_kept
// CHECK: trn.transpose %arg0
// CHECK-NEXT: dist.all_gather %{{.*}} dim = 1
dist.mesh @mesh <tp = 4>
func.func @gather_kept(%dy: tensor<4x16xf32>, %x: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x16xf32>) {
  %t = trn.transpose %dy, perm = [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %gt = dist.all_gather %t on @mesh axes = ["tp"] dim = 1 : tensor<16x4xf32> -> tensor<16x16xf32>
  %dw = trn.dot_general %gt, %x, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %e = trn.exp %gt : tensor<16x16xf32>
  return %dw, %e : tensor<16x8xf32>, tensor<16x16xf32>
}
