// RUN: trn-opt %s -split-input-file -trn-auto-cast | FileCheck %s --check-prefix=MATMUL
// RUN: trn-opt %s -split-input-file -trn-auto-cast="type=fp8_e4m3" | FileCheck %s --check-prefix=FP8
// RUN: trn-opt %s -split-input-file -trn-auto-cast="mode=all" -canonicalize | FileCheck %s --check-prefix=ALL
// RUN: not trn-opt %s -split-input-file -trn-auto-cast="mode=all type=fp8_e4m3" 2>&1 | FileCheck %s --check-prefix=ALL-FP8
// RUN: not trn-opt %s -split-input-file -trn-auto-cast="mode=some" 2>&1 | FileCheck %s --check-prefix=BAD

// matmul: both f32 operands go to bf16 (or fp8); the product stays f32 and
// the elementwise ops are untouched.
// MATMUL-LABEL: func.func @layer
// MATMUL: %[[X:.*]] = trn.convert %arg0 : tensor<64x32xf32> -> tensor<64x32xbf16>
// MATMUL: %[[W:.*]] = trn.convert %arg1 : tensor<32x16xf32> -> tensor<32x16xbf16>
// MATMUL: trn.dot_general %[[X]], %[[W]], {{.*}} : (tensor<64x32xbf16>, tensor<32x16xbf16>) -> tensor<64x16xf32>
// MATMUL: trn.tanh {{.*}} : tensor<64x16xf32>
// FP8-LABEL: func.func @layer
// FP8: trn.dot_general {{.*}} : (tensor<64x32xf8E4M3FN>, tensor<32x16xf8E4M3FN>) -> tensor<64x16xf32>
// all: elementwise ops run in bf16 too; back-to-back conversions between
// them fold away; the reduction and the results stay f32.
// ALL-LABEL: func.func @layer
// ALL: %[[D:.*]] = trn.dot_general {{.*}} -> tensor<64x16xf32>
// ALL-NEXT: %[[DB:.*]] = trn.convert %[[D]] : tensor<64x16xf32> -> tensor<64x16xbf16>
// ALL-NEXT: %[[T:.*]] = trn.tanh %[[DB]] : tensor<64x16xbf16>
// ALL-NEXT: %[[E:.*]] = trn.exp %[[T]] : tensor<64x16xbf16>
// ALL-NEXT: %[[EF:.*]] = trn.convert %[[E]] : tensor<64x16xbf16> -> tensor<64x16xf32>
// ALL-NEXT: trn.reduce sum %[[EF]]
// ALL-FP8: error: trn-auto-cast: mode=all casts to bf16 only
// BAD: error: trn-auto-cast: mode must be matmul or all and type bf16 or fp8_e4m3, got mode=some type=bf16
func.func @layer(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>) -> (tensor<64x16xf32>, tensor<64xf32>) {
  %d = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
  %t = trn.tanh %d : tensor<64x16xf32>
  %e = trn.exp %t : tensor<64x16xf32>
  %s = trn.reduce sum %e, dims = [1] : (tensor<64x16xf32>) -> tensor<64xf32>
  return %e, %s : tensor<64x16xf32>, tensor<64xf32>
}

// -----

// A matmul that is already narrow is left as it is.
// MATMUL-LABEL: func.func @narrow
// MATMUL-NOT: trn.convert
// MATMUL: return
func.func @narrow(%x: tensor<8x8xbf16>) -> tensor<8x8xf32> {
  %d = trn.dot_general %x, %x, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}

// -----

// attention and attention_grad keep their operands (their fused kernels
// convert them as they load them): with bf16, f32 ones are marked
// trn.matmul_type = bf16; fp8 scores and probabilities would lose too much,
// so with fp8_e4m3 they stay f32, unmarked. A bf16 attention is left alone.
// MATMUL-LABEL: func.func @attention
// MATMUL-NOT: trn.convert
// MATMUL: %[[O:[^,]+]], %[[LSE:[^ ]+]] = trn.attention %arg0, %arg1, %arg2, scale = 2.500000e-01 causal {trn.matmul_type = bf16} : (tensor<2x100x16xf32>, tensor<2x100x16xf32>, tensor<2x100x8xf32>)
// MATMUL-NEXT: trn.attention_grad %arg0, %arg1, %arg2, %[[O]], %[[LSE]], %arg3, scale = 2.500000e-01 causal {trn.matmul_type = bf16} : (tensor<2x100x16xf32>,
// MATMUL-NEXT: trn.attention %arg4, %arg4, %arg4, scale = 2.500000e-01 : (tensor<64x16xbf16>, tensor<64x16xbf16>, tensor<64x16xbf16>)
// MATMUL-NEXT: return
// FP8-LABEL: func.func @attention
// FP8-NOT: trn.matmul_type
// FP8-NOT: trn.convert
// FP8: return
// ALL-LABEL: func.func @attention
// ALL-NOT: trn.convert
// ALL: trn.attention {{.*}} {trn.matmul_type = bf16} : (tensor<2x100x16xf32>,
// ALL-NEXT: trn.attention_grad {{.*}} {trn.matmul_type = bf16} : (tensor<2x100x16xf32>,
// ALL-NEXT: trn.attention %arg4, %arg4, %arg4, scale = 2.500000e-01 : (tensor<64x16xbf16>
// ALL-NEXT: return
func.func @attention(%q: tensor<2x100x16xf32>, %k: tensor<2x100x16xf32>, %v: tensor<2x100x8xf32>, %do: tensor<2x100x8xf32>, %x: tensor<64x16xbf16>) -> (tensor<2x100x8xf32>, tensor<2x100xf32>, tensor<2x100x16xf32>, tensor<2x100x16xf32>, tensor<2x100x8xf32>, tensor<64x16xbf16>) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.25 causal : (tensor<2x100x16xf32>, tensor<2x100x16xf32>, tensor<2x100x8xf32>) -> (tensor<2x100x8xf32>, tensor<2x100xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.25 causal : (tensor<2x100x16xf32>, tensor<2x100x16xf32>, tensor<2x100x8xf32>, tensor<2x100x8xf32>, tensor<2x100xf32>, tensor<2x100x8xf32>) -> (tensor<2x100x16xf32>, tensor<2x100x16xf32>, tensor<2x100x8xf32>)
  %ob, %lseb = trn.attention %x, %x, %x, scale = 0.25 : (tensor<64x16xbf16>, tensor<64x16xbf16>, tensor<64x16xbf16>) -> (tensor<64x16xbf16>, tensor<64xf32>)
  return %o, %lse, %dq, %dk, %dv, %ob : tensor<2x100x8xf32>, tensor<2x100xf32>, tensor<2x100x16xf32>, tensor<2x100x16xf32>, tensor<2x100x8xf32>, tensor<64x16xbf16>
}

// -----

// all: the optimizer update (what depends on an optimizer state or a
// hyper-parameter) stays f32, the gradient computation goes to bf16.
// ALL-LABEL: func.func @sgd_momentum
// ALL: %[[G:.*]] = trn.mul {{.*}} : tensor<8xbf16>
// ALL: %[[GF:.*]] = trn.convert %[[G]] : tensor<8xbf16> -> tensor<8xf32>
// ALL: %[[BUF:.*]] = trn.mul %arg1, {{.*}} : tensor<8xf32>
// ALL: trn.add %[[BUF]], %[[GF]] : tensor<8xf32>
// ALL: trn.mul {{.*}} : tensor<8xf32>
// ALL-NOT: bf16
// ALL: return
func.func @sgd_momentum(%p: tensor<8xf32> {trn.role = "parameter"},
                        %buf: tensor<8xf32> {trn.role = "optimizer_state"},
                        %lr: tensor<f32> {trn.role = "hyperparameter"},
                        %x: tensor<8xf32> {trn.role = "data"})
    -> (tensor<8xf32> {trn.role = "parameter", trn.aliases = 0 : i64},
        tensor<8xf32> {trn.role = "optimizer_state", trn.aliases = 1 : i64}) {
  %g = trn.mul %p, %x : tensor<8xf32>
  %m = trn.constant dense<0.9> : tensor<8xf32>
  %decayed = trn.mul %buf, %m : tensor<8xf32>
  %newbuf = trn.add %decayed, %g : tensor<8xf32>
  %lrb = trn.broadcast_in_dim %lr, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %step = trn.mul %newbuf, %lrb : tensor<8xf32>
  %newp = trn.sub %p, %step : tensor<8xf32>
  return %newp, %newbuf : tensor<8xf32>, tensor<8xf32>
}
