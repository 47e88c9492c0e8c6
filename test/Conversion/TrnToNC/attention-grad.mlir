// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s
// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=ABSENT

// The flash-style backward never writes a [S, T] matrix to HBM.
// ABSENT-LABEL: func.func @causal_grad_bf16(
// ABSENT-NOT: nc.hbm_alloc
// ABSENT: return

// Causal bf16 gradient, 160 queries and keys (a 128-row block and a 32-row
// one each), head size 32, value size 48. First -lse and -D = -rowsum(dO*O)
// per query block; then per (key block, query block) pair: S and dP as
// matmuls into PSUM, P = exp(scale*S - lse) as f16 (masked to 0 on the
// diagonal), dP - D, dS = P (dP - D) as bf16; dV and dK accumulate over the
// query blocks of a key block (overwrite, then accumulate), dS^T gives dQ;
// dK and dQ are scaled as they are evicted.
// CHECK-LABEL: func.func @causal_grad_bf16(
// CHECK: nc.tensor_scalar multiply, bypass {{.*}} {scalar0 = -1.000000e+00 : f32} : !nc.tile<sbuf, 128x1xf32>
// CHECK: nc.tensor_tensor multiply {{.*}} : <sbuf, 128x48xf32>, <sbuf, 128x48xbf16>, <sbuf, 128x48xf32>
// CHECK: nc.tensor_reduce add {{.*}} negate : <sbuf, 128x1xf32>, <sbuf, 128x48xf32>
// Key block 0 with query blocks 0 and 1: S, dP.
// CHECK: nc.matmul %[[S0:[0-9]+]], {{.*}} : <psum, 128x128xf32>, <sbuf, 32x128xbf16>, <sbuf, 32x128xbf16>
// CHECK: nc.matmul %[[DP0:[0-9]+]], {{.*}} : <psum, 128x128xf32>, <sbuf, 48x128xbf16>, <sbuf, 48x128xbf16>
// CHECK: nc.activation exp %[[P0:[0-9]+]], %[[S0]] bias_column {{.*}} {scale = 2.500000e-01 : f32} : !nc.tile<sbuf, 128x128xf16>, !nc.tile<psum, 128x128xf32>
// CHECK-NEXT: nc.affine_select ge %[[P0]], %[[P0]], base = 0, channel_multiplier = 1, steps = [-1], fill = 0.000000e+00
// CHECK: nc.activation copy %[[SH0:[0-9]+]], %[[DP0]] bias_column
// CHECK: nc.tensor_tensor multiply %[[DS0:[0-9]+]], %[[SH0]], %[[P0]] : <sbuf, 128x128xbf16>, <sbuf, 128x128xf32>, <sbuf, 128x128xf16>
// dV = P^T dO and dK = dS^T Q start their accumulation groups ...
// CHECK: nc.matmul %[[DV:[0-9]+]], %[[P0]], {{.*}} : <psum, 128x48xf32>, <sbuf, 128x128xf16>, <sbuf, 128x48xbf16>
// CHECK: nc.matmul %[[DK:[0-9]+]], %[[DS0]], {{.*}} : <psum, 128x32xf32>, <sbuf, 128x128xbf16>, <sbuf, 128x32xbf16>
// CHECK: nc.transpose {{.*}}, %[[DS0]] : <psum, 128x128xf32>, <sbuf, 128x128xbf16>
// ... and the second query block (32 rows) accumulates into them.
// CHECK: nc.matmul %[[DV]], {{.*}} accumulate : <psum, 128x48xf32>, <sbuf, 32x128xf16>, <sbuf, 32x48xbf16>
// CHECK: nc.matmul %[[DK]], {{.*}} accumulate : <psum, 128x32xf32>, <sbuf, 32x128xbf16>, <sbuf, 32x32xbf16>
// dV is evicted as is, dK scaled, both stored.
// CHECK: nc.activation copy {{.*}}, %[[DV]] : !nc.tile<sbuf, 128x48xbf16>, !nc.tile<psum, 128x48xf32>
// CHECK: nc.dma_copy
// CHECK: nc.activation copy {{.*}}, %[[DK]] {scale = 2.500000e-01 : f32} : !nc.tile<sbuf, 128x32xbf16>, !nc.tile<psum, 128x32xf32>
// CHECK: nc.dma_copy
// Key block 1 (keys 128..159) is only seen by query block 1: one pair.
// CHECK: nc.affine_select ge {{.*}}, base = 0, channel_multiplier = 1, steps = [-1], fill = 0.000000e+00 : <sbuf, 32x32xf16>
// dQ accumulated in SBUF over the key blocks, scaled when stored.
// CHECK: nc.tensor_tensor add {{.*}} : <sbuf, 32x32xf32>, <sbuf, 32x32xf32>, <psum, 32x32xf32>
// CHECK: nc.tensor_scalar multiply, bypass {{.*}} {scalar0 = 2.500000e-01 : f32} : !nc.tile<sbuf, 128x32xbf16>, !nc.tile<sbuf, 128x32xf32>
// CHECK: nc.tensor_scalar multiply, bypass {{.*}} {scalar0 = 2.500000e-01 : f32} : !nc.tile<sbuf, 32x32xbf16>, !nc.tile<sbuf, 32x32xf32>
func.func @causal_grad_bf16(%q: tensor<1x1x160x32xbf16>, %k: tensor<1x1x160x32xbf16>, %v: tensor<1x1x160x48xbf16>, %o: tensor<1x1x160x48xbf16>, %lse: tensor<1x1x160xf32>, %do: tensor<1x1x160x48xbf16>)
    -> (tensor<1x1x160x32xbf16>, tensor<1x1x160x32xbf16>, tensor<1x1x160x48xbf16>) {
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.25 causal : (tensor<1x1x160x32xbf16>, tensor<1x1x160x32xbf16>, tensor<1x1x160x48xbf16>, tensor<1x1x160x48xbf16>, tensor<1x1x160xf32>, tensor<1x1x160x48xbf16>) -> (tensor<1x1x160x32xbf16>, tensor<1x1x160x32xbf16>, tensor<1x1x160x48xbf16>)
  return %dq, %dk, %dv : tensor<1x1x160x32xbf16>, tensor<1x1x160x32xbf16>, tensor<1x1x160x48xbf16>
}

// -----

// Causal with more keys than queries: keys 128..199 are hidden from all 100
// queries, and their gradients are zeros (memset, stored).
// CHECK-LABEL: func.func @hidden_keys(
// CHECK: nc.memset {{.*}} 0.000000e+00 on gpsimd : <sbuf, 72x16xf32>
// CHECK-NEXT: nc.view
// CHECK-NEXT: nc.dma_copy
// CHECK: nc.memset {{.*}} 0.000000e+00 on gpsimd : <sbuf, 72x8xf32>
func.func @hidden_keys(%q: tensor<100x16xf32>, %k: tensor<200x16xf32>, %v: tensor<200x8xf32>, %o: tensor<100x8xf32>, %lse: tensor<100xf32>, %do: tensor<100x8xf32>)
    -> (tensor<100x16xf32>, tensor<200x16xf32>, tensor<200x8xf32>) {
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.25 causal : (tensor<100x16xf32>, tensor<200x16xf32>, tensor<200x8xf32>, tensor<100x8xf32>, tensor<100xf32>, tensor<100x8xf32>) -> (tensor<100x16xf32>, tensor<200x16xf32>, tensor<200x8xf32>)
  return %dq, %dk, %dv : tensor<100x16xf32>, tensor<200x16xf32>, tensor<200x8xf32>
}

// -----

// The backward takes a value size of at most 128 (dO^T is a stationary
// operand, its value dimension the contraction).
func.func @wide_value(%q: tensor<64x16xf32>, %k: tensor<64x16xf32>, %v: tensor<64x192xf32>, %o: tensor<64x192xf32>, %lse: tensor<64xf32>, %do: tensor<64x192xf32>)
    -> (tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x192xf32>) {
  // expected-error @+1 {{'trn.attention_grad' cannot be lowered as one fused kernel (value size 192 exceeds 128); run trn-decompose-composites first}}
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.25 : (tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x192xf32>, tensor<64x192xf32>, tensor<64xf32>, tensor<64x192xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x192xf32>)
  return %dq, %dk, %dv : tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x192xf32>
}

// -----

// Short heads (one block of queries and keys each): a group's three
// gradients stay in SBUF tiles of the group and go out with one DMA per
// tensor after its last head (three per head before).
// CHECK-LABEL: func.func @short_heads_grad(
// CHECK-COUNT-3: nc.dma_copy {{.*}} : <hbm, 64x3x16xf32>, <sbuf, 64x3x16xf32>
// CHECK-NOT: nc.dma_copy {{.*}}<hbm, 64x16xf32>, <sbuf
// CHECK: return
func.func @short_heads_grad(%q: tensor<3x64x16xf32>, %k: tensor<3x64x16xf32>, %v: tensor<3x64x16xf32>, %o: tensor<3x64x16xf32>, %lse: tensor<3x64xf32>, %do: tensor<3x64x16xf32>) -> (tensor<3x64x16xf32>, tensor<3x64x16xf32>, tensor<3x64x16xf32>) {
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.25 : (tensor<3x64x16xf32>, tensor<3x64x16xf32>, tensor<3x64x16xf32>, tensor<3x64x16xf32>, tensor<3x64xf32>, tensor<3x64x16xf32>) -> (tensor<3x64x16xf32>, tensor<3x64x16xf32>, tensor<3x64x16xf32>)
  return %dq, %dk, %dv : tensor<3x64x16xf32>, tensor<3x64x16xf32>, tensor<3x64x16xf32>
}
