// RUN: trn-opt %s -trn-form-attention -split-input-file | FileCheck %s

// Causal attention written out, forward and backward, as PyTorch traces it
// (after trn-split-batch-dims): q @ k^T, * scale, masked_fill(triu(1),
// -inf), softmax, @ v; autograd's p^T @ do, do @ v^T, softmax_backward, the
// mask's and the scale's backward, ds @ k, q^T @ ds. It becomes one
// trn.attention and one trn.attention_grad; the [S, S] ops are gone.
// CHECK-LABEL: func.func @causal
// CHECK: %[[K:.*]] = trn.transpose %[[KT:.*]], perm = [0, 1, 3, 2]
// CHECK: %[[O:.*]], %[[LSE:.*]] = trn.attention %arg0, %[[K]], %arg2, scale = 5.000000e-01 causal
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = trn.attention_grad %arg0, %[[K]], %arg2, %[[O]], %[[LSE]], %arg3, scale = 5.000000e-01 causal
// CHECK: %[[DKT:.*]] = trn.transpose %[[DK]], perm = [0, 1, 3, 2]
// CHECK-NOT: trn.softmax
// CHECK-NOT: trn.select
// CHECK: return %[[O]], %[[DQ]], %[[DKT]], %[[DV]]
func.func @causal(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>,
                  %do: tensor<1x2x4x8xf32>)
    -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) {
  %s = trn.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c = trn.constant dense<0.5> : tensor<1x2x4x4xf32>
  %scaled = trn.mul %s, %c : tensor<1x2x4x4xf32>
  %row = trn.iota dim = 0 : tensor<4x4xi32>
  %col = trn.iota dim = 1 : tensor<4x4xi32>
  %diff = trn.sub %col, %row : tensor<4x4xi32>
  %one = trn.constant dense<1> : tensor<4x4xi32>
  %upper = trn.compare ge, %diff, %one : tensor<4x4xi32>
  %true = trn.constant dense<true> : tensor<4x4xi1>
  %false = trn.constant dense<false> : tensor<4x4xi1>
  %mask = trn.select %upper, %true, %false : tensor<4x4xi1>, tensor<4x4xi1>
  %mask4 = trn.broadcast_in_dim %mask, dims = [2, 3] : (tensor<4x4xi1>) -> tensor<1x2x4x4xi1>
  %ninf = trn.constant dense<0xFF800000> : tensor<1x2x4x4xf32>
  %masked = trn.select %mask4, %ninf, %scaled : tensor<1x2x4x4xi1>, tensor<1x2x4x4xf32>
  %p = trn.softmax %masked, dim = 3 : tensor<1x2x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %pt = trn.transpose %p, perm = [0, 1, 3, 2] : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %dv = trn.dot_general %pt, %do, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %vt = trn.transpose %v, perm = [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %dp = trn.dot_general %do, %vt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %dsm = trn.softmax_grad %p, %dp, dim = 3 : tensor<1x2x4x4xf32>
  %zero = trn.constant dense<0.0> : tensor<1x2x4x4xf32>
  %dsk = trn.select %mask4, %zero, %dsm : tensor<1x2x4x4xi1>, tensor<1x2x4x4xf32>
  %ds = trn.mul %dsk, %c : tensor<1x2x4x4xf32>
  %k = trn.transpose %kt, perm = [0, 1, 3, 2] : (tensor<1x2x8x4xf32>) -> tensor<1x2x4x8xf32>
  %dq = trn.dot_general %ds, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %qt = trn.transpose %q, perm = [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %dkt = trn.dot_general %qt, %ds, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x8x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x8x4xf32>
  return %o, %dq, %dkt, %dv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>
}

// -----

// A forward alone (an evaluation step), without scale or mask, and the
// mask as PyTorch's arange comparison.
// CHECK-LABEL: func.func @forward_only
// CHECK: trn.attention %arg0, {{.*}}, %arg2, scale = 1.000000e+00 :
// CHECK-NOT: trn.softmax
// CHECK-LABEL: func.func @arange_mask
// CHECK: trn.attention {{.*}} causal
func.func @forward_only(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = trn.dot_general %q, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = trn.softmax %s, dim = 2 : tensor<2x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
func.func @arange_mask(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = trn.dot_general %q, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %i = trn.iota dim = 0 : tensor<4xi64>
  %rows = trn.broadcast_in_dim %i, dims = [0] : (tensor<4xi64>) -> tensor<4x4xi64>
  %cols = trn.broadcast_in_dim %i, dims = [1] : (tensor<4xi64>) -> tensor<4x4xi64>
  %later = trn.compare gt, %cols, %rows : tensor<4x4xi64>
  %mask = trn.broadcast_in_dim %later, dims = [1, 2] : (tensor<4x4xi1>) -> tensor<2x4x4xi1>
  %ninf = trn.constant dense<0xFF800000> : tensor<2x4x4xf32>
  %masked = trn.select %mask, %ninf, %s : tensor<2x4x4xi1>, tensor<2x4x4xf32>
  %p = trn.softmax %masked, dim = 2 : tensor<2x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Left as written: a mask that is not causal (triu(2) hides the next key
// too), a mask passed in (its values are unknown), and probabilities with
// another user (returned, as dropout or a debug output would).
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: trn.attention
// CHECK: trn.softmax
// CHECK-LABEL: func.func @mask_argument
// CHECK-NOT: trn.attention
// CHECK: trn.softmax
// CHECK-LABEL: func.func @probabilities_used
// CHECK-NOT: trn.attention
// CHECK: trn.softmax
func.func @not_causal(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = trn.dot_general %q, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %row = trn.iota dim = 0 : tensor<4x4xi32>
  %col = trn.iota dim = 1 : tensor<4x4xi32>
  %diff = trn.sub %col, %row : tensor<4x4xi32>
  %two = trn.constant dense<2> : tensor<4x4xi32>
  %upper = trn.compare ge, %diff, %two : tensor<4x4xi32>
  %mask = trn.broadcast_in_dim %upper, dims = [1, 2] : (tensor<4x4xi1>) -> tensor<2x4x4xi1>
  %ninf = trn.constant dense<0xFF800000> : tensor<2x4x4xf32>
  %masked = trn.select %mask, %ninf, %s : tensor<2x4x4xi1>, tensor<2x4x4xf32>
  %p = trn.softmax %masked, dim = 2 : tensor<2x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
func.func @mask_argument(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %future: tensor<4x4xi1>) -> tensor<2x4x8xf32> {
  %s = trn.dot_general %q, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %mask = trn.broadcast_in_dim %future, dims = [1, 2] : (tensor<4x4xi1>) -> tensor<2x4x4xi1>
  %ninf = trn.constant dense<0xFF800000> : tensor<2x4x4xf32>
  %masked = trn.select %mask, %ninf, %s : tensor<2x4x4xi1>, tensor<2x4x4xf32>
  %p = trn.softmax %masked, dim = 2 : tensor<2x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
func.func @probabilities_used(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %s = trn.dot_general %q, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = trn.softmax %s, dim = 2 : tensor<2x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o, %p : tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// -----

// PyTorch 2's scaled_dot_product_attention(is_causal=True), math path, as
// traced: q and k^T each scaled by sqrt(scale), the causal mask as an
// additive bias where(tril, 0, -inf), and the safe softmax (0 for rows all
// -inf, which a causal mask never leaves: its diagonal is kept). The bias
// has no gradient, so the backward has no mask select.
// CHECK-LABEL: func.func @sdpa_causal
// CHECK: %[[Q:.*]] = trn.mul %arg0
// CHECK: %[[KT:.*]] = trn.mul %arg1
// CHECK: %[[K:.*]] = trn.transpose %[[KT]], perm = [0, 1, 3, 2]
// CHECK: %[[O:.*]], %[[LSE:.*]] = trn.attention %[[Q]], %[[K]], %arg2, scale = 1.000000e+00 causal
// CHECK: trn.attention_grad %[[Q]], %[[K]], %arg2, %[[O]], %[[LSE]], %arg3, scale = 1.000000e+00 causal
// CHECK-NOT: trn.softmax
// CHECK-NOT: trn.reduce
func.func @sdpa_causal(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>,
                       %do: tensor<1x2x4x8xf32>)
    -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) {
  %half = trn.constant dense<0.5> : tensor<1x2x4x8xf32>
  %halft = trn.constant dense<0.5> : tensor<1x2x8x4xf32>
  %qs = trn.mul %q, %half : tensor<1x2x4x8xf32>
  %kts = trn.mul %kt, %halft : tensor<1x2x8x4xf32>
  %s = trn.dot_general %qs, %kts, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %row = trn.iota dim = 0 : tensor<4x4xi32>
  %col = trn.iota dim = 1 : tensor<4x4xi32>
  %diff = trn.sub %col, %row : tensor<4x4xi32>
  %zi = trn.constant dense<0> : tensor<4x4xi32>
  %lower = trn.compare le, %diff, %zi : tensor<4x4xi32>
  %true = trn.constant dense<true> : tensor<4x4xi1>
  %false = trn.constant dense<false> : tensor<4x4xi1>
  %keep = trn.select %lower, %true, %false : tensor<4x4xi1>, tensor<4x4xi1>
  %z2 = trn.constant dense<0.0> : tensor<4x4xf32>
  %ninf2 = trn.constant dense<0xFF800000> : tensor<4x4xf32>
  %bias = trn.select %keep, %z2, %ninf2 : tensor<4x4xi1>, tensor<4x4xf32>
  %bias4 = trn.broadcast_in_dim %bias, dims = [2, 3] : (tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %biased = trn.add %s, %bias4 : tensor<1x2x4x4xf32>
  %sm = trn.softmax %biased, dim = 3 : tensor<1x2x4x4xf32>
  %max = trn.reduce max %biased, dims = [3] : (tensor<1x2x4x4xf32>) -> tensor<1x2x4xf32>
  %ninf3 = trn.constant dense<0xFF800000> : tensor<1x2x4xf32>
  %finite = trn.compare ne, %max, %ninf3 : tensor<1x2x4xf32>
  %finite4 = trn.broadcast_in_dim %finite, dims = [0, 1, 2] : (tensor<1x2x4xi1>) -> tensor<1x2x4x4xi1>
  %zero = trn.constant dense<0.0> : tensor<1x2x4x4xf32>
  %p = trn.select %finite4, %sm, %zero : tensor<1x2x4x4xi1>, tensor<1x2x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %pt = trn.transpose %p, perm = [0, 1, 3, 2] : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %dv = trn.dot_general %pt, %do, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %vt = trn.transpose %v, perm = [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %dp = trn.dot_general %do, %vt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %ds = trn.softmax_grad %p, %dp, dim = 3 : tensor<1x2x4x4xf32>
  %k = trn.transpose %kts, perm = [0, 1, 3, 2] : (tensor<1x2x8x4xf32>) -> tensor<1x2x4x8xf32>
  %dq = trn.dot_general %ds, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %qt = trn.transpose %qs, perm = [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %dkt = trn.dot_general %qt, %ds, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x2x8x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x8x4xf32>
  return %o, %dq, %dkt, %dv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>
}

// -----

// The safe softmax over a bias that is not causal (here anti-causal: row 0
// keeps nothing but column 3... any row may be all -inf): left as it is.
// CHECK-LABEL: func.func @safe_softmax_not_causal
// CHECK-NOT: trn.attention
// CHECK: trn.softmax
func.func @safe_softmax_not_causal(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = trn.dot_general %q, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %row = trn.iota dim = 0 : tensor<4x4xi32>
  %col = trn.iota dim = 1 : tensor<4x4xi32>
  %diff = trn.sub %col, %row : tensor<4x4xi32>
  %zi = trn.constant dense<0> : tensor<4x4xi32>
  %upper = trn.compare ge, %diff, %zi : tensor<4x4xi32>
  %z2 = trn.constant dense<0.0> : tensor<4x4xf32>
  %ninf2 = trn.constant dense<0xFF800000> : tensor<4x4xf32>
  %bias = trn.select %upper, %z2, %ninf2 : tensor<4x4xi1>, tensor<4x4xf32>
  %bias3 = trn.broadcast_in_dim %bias, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %biased = trn.add %s, %bias3 : tensor<2x4x4xf32>
  %sm = trn.softmax %biased, dim = 2 : tensor<2x4x4xf32>
  %max = trn.reduce max %biased, dims = [2] : (tensor<2x4x4xf32>) -> tensor<2x4xf32>
  %ninf3 = trn.constant dense<0xFF800000> : tensor<2x4xf32>
  %finite = trn.compare ne, %max, %ninf3 : tensor<2x4xf32>
  %finite3 = trn.broadcast_in_dim %finite, dims = [0, 1] : (tensor<2x4xi1>) -> tensor<2x4x4xi1>
  %zero = trn.constant dense<0.0> : tensor<2x4x4xf32>
  %p = trn.select %finite3, %sm, %zero : tensor<2x4x4xi1>, tensor<2x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Hugging Face's eager attention: the causal mask built once for the batch
// ([B, 1, S, S] from reshaped aranges, `kv_idx <= q_idx`), as an additive
// bias of 0 and the lowest float (not -inf), broadcast over the heads; and
// Mistral's, whose mask is also within a sliding window wider than the
// sequence (`kv_idx > q_idx - 4096`, true everywhere here) and'ed with a
// splat true.
// CHECK-LABEL: func.func @hf_causal
// CHECK: trn.attention {{.*}} causal
// CHECK-NOT: trn.softmax
// CHECK-LABEL: func.func @hf_sliding_window
// CHECK: trn.attention {{.*}} causal
// CHECK-NOT: trn.softmax
// CHECK-LABEL: func.func @hf_window_narrower
// CHECK: trn.softmax
func.func @hf_causal(%q: tensor<2x4x4x8xf32>, %kt: tensor<2x4x8x4xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %i = trn.iota dim = 0 : tensor<4xi64>
  %q_idx = trn.reshape %i : (tensor<4xi64>) -> tensor<1x1x4x1xi64>
  %kv_idx = trn.reshape %i : (tensor<4xi64>) -> tensor<1x1x1x4xi64>
  %cols = trn.broadcast_in_dim %kv_idx, dims = [0, 1, 2, 3] : (tensor<1x1x1x4xi64>) -> tensor<1x1x4x4xi64>
  %rows = trn.broadcast_in_dim %q_idx, dims = [0, 1, 2, 3] : (tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi64>
  %keep = trn.compare le, %cols, %rows : tensor<1x1x4x4xi64>
  %keep_b = trn.broadcast_in_dim %keep, dims = [0, 1, 2, 3] : (tensor<1x1x4x4xi1>) -> tensor<2x1x4x4xi1>
  %zero = trn.constant dense<0.0> : tensor<2x1x4x4xf32>
  %low = trn.constant dense<-3.40282347E+38> : tensor<2x1x4x4xf32>
  %bias = trn.select %keep_b, %zero, %low : tensor<2x1x4x4xi1>, tensor<2x1x4x4xf32>
  %s = trn.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>) -> tensor<2x4x4x4xf32>
  %bias_h = trn.broadcast_in_dim %bias, dims = [0, 1, 2, 3] : (tensor<2x1x4x4xf32>) -> tensor<2x4x4x4xf32>
  %masked = trn.add %s, %bias_h : tensor<2x4x4x4xf32>
  %p = trn.softmax %masked, dim = 3 : tensor<2x4x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}
func.func @hf_sliding_window(%q: tensor<2x4x4x8xf32>, %kt: tensor<2x4x8x4xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %i = trn.iota dim = 0 : tensor<4xi64>
  %q_idx = trn.reshape %i : (tensor<4xi64>) -> tensor<1x1x4x1xi64>
  %kv_idx = trn.reshape %i : (tensor<4xi64>) -> tensor<1x1x1x4xi64>
  %window = trn.constant dense<4096> : tensor<1x1x4x1xi64>
  %start = trn.sub %q_idx, %window : tensor<1x1x4x1xi64>
  %cols = trn.broadcast_in_dim %kv_idx, dims = [0, 1, 2, 3] : (tensor<1x1x1x4xi64>) -> tensor<1x1x4x4xi64>
  %starts = trn.broadcast_in_dim %start, dims = [0, 1, 2, 3] : (tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi64>
  %rows = trn.broadcast_in_dim %q_idx, dims = [0, 1, 2, 3] : (tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi64>
  %within = trn.compare gt, %cols, %starts : tensor<1x1x4x4xi64>
  %true = trn.constant dense<true> : tensor<1x1x4x4xi1>
  %in_window = trn.and %within, %true : tensor<1x1x4x4xi1>
  %past = trn.compare le, %cols, %rows : tensor<1x1x4x4xi64>
  %keep = trn.and %in_window, %past : tensor<1x1x4x4xi1>
  %keep_b = trn.broadcast_in_dim %keep, dims = [0, 1, 2, 3] : (tensor<1x1x4x4xi1>) -> tensor<2x1x4x4xi1>
  %zero = trn.constant dense<0.0> : tensor<2x1x4x4xf32>
  %low = trn.constant dense<-3.40282347E+38> : tensor<2x1x4x4xf32>
  %bias = trn.select %keep_b, %zero, %low : tensor<2x1x4x4xi1>, tensor<2x1x4x4xf32>
  %s = trn.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>) -> tensor<2x4x4x4xf32>
  %bias_h = trn.broadcast_in_dim %bias, dims = [0, 1, 2, 3] : (tensor<2x1x4x4xf32>) -> tensor<2x4x4x4xf32>
  %masked = trn.add %s, %bias_h : tensor<2x4x4x4xf32>
  %p = trn.softmax %masked, dim = 3 : tensor<2x4x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}
func.func @hf_window_narrower(%q: tensor<2x4x4x8xf32>, %kt: tensor<2x4x8x4xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %i = trn.iota dim = 0 : tensor<4xi64>
  %q_idx = trn.reshape %i : (tensor<4xi64>) -> tensor<1x1x4x1xi64>
  %kv_idx = trn.reshape %i : (tensor<4xi64>) -> tensor<1x1x1x4xi64>
  %window = trn.constant dense<2> : tensor<1x1x4x1xi64>
  %start = trn.sub %q_idx, %window : tensor<1x1x4x1xi64>
  %cols = trn.broadcast_in_dim %kv_idx, dims = [0, 1, 2, 3] : (tensor<1x1x1x4xi64>) -> tensor<1x1x4x4xi64>
  %starts = trn.broadcast_in_dim %start, dims = [0, 1, 2, 3] : (tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi64>
  %rows = trn.broadcast_in_dim %q_idx, dims = [0, 1, 2, 3] : (tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi64>
  %within = trn.compare gt, %cols, %starts : tensor<1x1x4x4xi64>
  %past = trn.compare le, %cols, %rows : tensor<1x1x4x4xi64>
  %keep = trn.and %within, %past : tensor<1x1x4x4xi1>
  %keep_b = trn.broadcast_in_dim %keep, dims = [0, 1, 2, 3] : (tensor<1x1x4x4xi1>) -> tensor<2x1x4x4xi1>
  %zero = trn.constant dense<0.0> : tensor<2x1x4x4xf32>
  %low = trn.constant dense<-3.40282347E+38> : tensor<2x1x4x4xf32>
  %bias = trn.select %keep_b, %zero, %low : tensor<2x1x4x4xi1>, tensor<2x1x4x4xf32>
  %s = trn.dot_general %q, %kt, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>) -> tensor<2x4x4x4xf32>
  %bias_h = trn.broadcast_in_dim %bias, dims = [0, 1, 2, 3] : (tensor<2x1x4x4xf32>) -> tensor<2x4x4x4xf32>
  %masked = trn.add %s, %bias_h : tensor<2x4x4x4xf32>
  %p = trn.softmax %masked, dim = 3 : tensor<2x4x4x4xf32>
  %o = trn.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}
