// The gradients of a fused QKV projection's q, k and v, concatenated into
// [tokens, 3 x hidden] rows for the projection's backward: the attention
// backward writes each straight into its columns of the concatenation (the
// concatenation copies nothing), for short heads (one DMA per group of
// heads) and for a 160-token sequence (two blocks). A concatenation the
// gradients are not alone in (a tensor of the graph's own as a fourth
// piece) still holds every piece. Compiled by trn-cc and run on the
// simulator, both match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 17 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 2 outputs match
func.func @qkv_grad(%q: tensor<2x128x4x32xf32>, %k: tensor<2x128x4x32xf32>, %v: tensor<2x128x4x32xf32>, %do: tensor<2x128x4x32xf32>, %w: tensor<384x64xf32>,
                    %q2: tensor<1x160x2x32xf32>, %k2: tensor<1x160x2x32xf32>, %v2: tensor<1x160x2x32xf32>, %do2: tensor<1x160x2x32xf32>, %extra: tensor<160x16xf32>)
    -> (tensor<256x64xf32>, tensor<160x208xf32>) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.17677669529663687 seq_dim = 1 : (tensor<2x128x4x32xf32>, tensor<2x128x4x32xf32>, tensor<2x128x4x32xf32>) -> (tensor<2x128x4x32xf32>, tensor<2x4x128xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.17677669529663687 seq_dim = 1 : (tensor<2x128x4x32xf32>, tensor<2x128x4x32xf32>, tensor<2x128x4x32xf32>, tensor<2x128x4x32xf32>, tensor<2x4x128xf32>, tensor<2x128x4x32xf32>) -> (tensor<2x128x4x32xf32>, tensor<2x128x4x32xf32>, tensor<2x128x4x32xf32>)
  %rq = trn.reshape %dq : (tensor<2x128x4x32xf32>) -> tensor<256x128xf32>
  %rk = trn.reshape %dk : (tensor<2x128x4x32xf32>) -> tensor<256x128xf32>
  %rv = trn.reshape %dv : (tensor<2x128x4x32xf32>) -> tensor<256x128xf32>
  %c = trn.concatenate %rq, %rk, %rv dim = 1 : (tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x384xf32>
  %dx = trn.dot_general %c, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x384xf32>, tensor<384x64xf32>) -> tensor<256x64xf32>
  %o2, %lse2 = trn.attention %q2, %k2, %v2, scale = 0.17677669529663687 causal seq_dim = 1 : (tensor<1x160x2x32xf32>, tensor<1x160x2x32xf32>, tensor<1x160x2x32xf32>) -> (tensor<1x160x2x32xf32>, tensor<1x2x160xf32>)
  %dq2, %dk2, %dv2 = trn.attention_grad %q2, %k2, %v2, %o2, %lse2, %do2, scale = 0.17677669529663687 causal seq_dim = 1 : (tensor<1x160x2x32xf32>, tensor<1x160x2x32xf32>, tensor<1x160x2x32xf32>, tensor<1x160x2x32xf32>, tensor<1x2x160xf32>, tensor<1x160x2x32xf32>) -> (tensor<1x160x2x32xf32>, tensor<1x160x2x32xf32>, tensor<1x160x2x32xf32>)
  %sq = trn.reshape %dq2 : (tensor<1x160x2x32xf32>) -> tensor<160x64xf32>
  %sk = trn.reshape %dk2 : (tensor<1x160x2x32xf32>) -> tensor<160x64xf32>
  %sv = trn.reshape %dv2 : (tensor<1x160x2x32xf32>) -> tensor<160x64xf32>
  %c2 = trn.concatenate %sq, %extra, %sk, %sv dim = 1 : (tensor<160x64xf32>, tensor<160x16xf32>, tensor<160x64xf32>, tensor<160x64xf32>) -> tensor<160x208xf32>
  return %dx, %c2 : tensor<256x64xf32>, tensor<160x208xf32>
}
