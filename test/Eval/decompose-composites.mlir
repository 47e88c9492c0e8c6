// Every composite against its decomposition into primitives: trn-eval runs a
// function on random inputs (floats in [-1, 1), labels in [0, 5)), then runs
// the decomposed function on the same inputs, and compare_outputs.py checks
// that every output agrees. The reference evaluator computes a composite in
// f64 and rounds once; the decomposition computes in f32 and rounds after
// every primitive, so f32 outputs agree to a few f32 ulps (rtol 1e-5, atol
// 1e-6 of the tensor's scale; the worst case measured is within a fifth of
// that). bf16 outputs are equal or one bf16 ulp apart (at most 2^-7
// relative: rtol 2^-7), when an f32 result near a rounding tie of bf16
// rounds to the other side.
//
// RUN: trn-opt %s -trn-decompose-composites -o %t.decomposed.mlir
// RUN: FileCheck %s --input-file %t.decomposed.mlir --check-prefix=DECOMPOSED \
// RUN:   --implicit-check-not=trn.softmax --implicit-check-not=trn.log_softmax \
// RUN:   --implicit-check-not=trn.layer_norm --implicit-check-not=trn.rms_norm \
// RUN:   --implicit-check-not=trn.attention --implicit-check-not=trn.cross_entropy
// DECOMPOSED: func.func @softmax_f32
// DECOMPOSED: func.func @cross_entropy_all_ignored
//
// DEFINE: %{entry} =
// DEFINE: %{compare} = \
// DEFINE:   trn-eval %s --entry %{entry} --random 7 --int-max 5 \
// DEFINE:     --save-inputs %t.%{entry}.in.npz --outputs %t.%{entry}.composite.npz && \
// DEFINE:   trn-eval %t.decomposed.mlir --entry %{entry} \
// DEFINE:     --inputs %t.%{entry}.in.npz --outputs %t.%{entry}.decomposed.npz && \
// DEFINE:   %trn_python %S/Inputs/compare_outputs.py \
// DEFINE:     %t.%{entry}.composite.npz %t.%{entry}.decomposed.npz
// DEFINE: %{f32} = --rtol 1e-5 --atol 1e-6
// DEFINE: %{bf16} = --rtol 0.0078125 --atol 1e-6

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// Along every dimension; x * 100 needs the max subtraction (e^100 overflows
// f32).
// REDEFINE: %{entry} = softmax_f32
// RUN: %{compare} %{f32}
func.func @softmax_f32(%x: tensor<3x5x7xf32>)
    -> (tensor<3x5x7xf32> {trn.name = "softmax_dim0"},
        tensor<3x5x7xf32> {trn.name = "softmax_dim2"},
        tensor<3x5x7xf32> {trn.name = "log_softmax_dim1"},
        tensor<3x5x7xf32> {trn.name = "softmax_large"},
        tensor<3x5x7xf32> {trn.name = "log_softmax_large"}) {
  %0 = trn.softmax %x, dim = 0 : tensor<3x5x7xf32>
  %1 = trn.softmax %x, dim = 2 : tensor<3x5x7xf32>
  %2 = trn.log_softmax %x, dim = 1 : tensor<3x5x7xf32>
  %hundred = trn.constant dense<100.0> : tensor<3x5x7xf32>
  %large = trn.mul %x, %hundred : tensor<3x5x7xf32>
  %3 = trn.softmax %large, dim = 2 : tensor<3x5x7xf32>
  %4 = trn.log_softmax %large, dim = 2 : tensor<3x5x7xf32>
  return %0, %1, %2, %3, %4 : tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>
}

// REDEFINE: %{entry} = softmax_bf16
// RUN: %{compare} %{bf16}
func.func @softmax_bf16(%x: tensor<3x5x7xbf16>)
    -> (tensor<3x5x7xbf16> {trn.name = "softmax_dim0"},
        tensor<3x5x7xbf16> {trn.name = "softmax_dim2"},
        tensor<3x5x7xbf16> {trn.name = "log_softmax_dim1"},
        tensor<3x5x7xbf16> {trn.name = "softmax_large"},
        tensor<3x5x7xbf16> {trn.name = "log_softmax_large"}) {
  %0 = trn.softmax %x, dim = 0 : tensor<3x5x7xbf16>
  %1 = trn.softmax %x, dim = 2 : tensor<3x5x7xbf16>
  %2 = trn.log_softmax %x, dim = 1 : tensor<3x5x7xbf16>
  %hundred = trn.constant dense<100.0> : tensor<3x5x7xbf16>
  %large = trn.mul %x, %hundred : tensor<3x5x7xbf16>
  %3 = trn.softmax %large, dim = 2 : tensor<3x5x7xbf16>
  %4 = trn.log_softmax %large, dim = 2 : tensor<3x5x7xbf16>
  return %0, %1, %2, %3, %4 : tensor<3x5x7xbf16>, tensor<3x5x7xbf16>, tensor<3x5x7xbf16>, tensor<3x5x7xbf16>, tensor<3x5x7xbf16>
}

// The gradients of real forward outputs (decomposed too).
// REDEFINE: %{entry} = softmax_grad_f32
// RUN: %{compare} %{f32}
func.func @softmax_grad_f32(%x: tensor<3x5x7xf32>, %dy: tensor<3x5x7xf32>)
    -> (tensor<3x5x7xf32> {trn.name = "softmax_grad_dim2"},
        tensor<3x5x7xf32> {trn.name = "softmax_grad_dim0"},
        tensor<3x5x7xf32> {trn.name = "log_softmax_grad_dim1"}) {
  %y2 = trn.softmax %x, dim = 2 : tensor<3x5x7xf32>
  %0 = trn.softmax_grad %y2, %dy, dim = 2 : tensor<3x5x7xf32>
  %y0 = trn.softmax %x, dim = 0 : tensor<3x5x7xf32>
  %1 = trn.softmax_grad %y0, %dy, dim = 0 : tensor<3x5x7xf32>
  %ly = trn.log_softmax %x, dim = 1 : tensor<3x5x7xf32>
  %2 = trn.log_softmax_grad %ly, %dy, dim = 1 : tensor<3x5x7xf32>
  return %0, %1, %2 : tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>
}

// REDEFINE: %{entry} = softmax_grad_bf16
// RUN: %{compare} %{bf16}
func.func @softmax_grad_bf16(%x: tensor<3x5x7xbf16>, %dy: tensor<3x5x7xbf16>)
    -> (tensor<3x5x7xbf16> {trn.name = "softmax_grad_dim2"},
        tensor<3x5x7xbf16> {trn.name = "softmax_grad_dim0"},
        tensor<3x5x7xbf16> {trn.name = "log_softmax_grad_dim1"}) {
  %y2 = trn.softmax %x, dim = 2 : tensor<3x5x7xbf16>
  %0 = trn.softmax_grad %y2, %dy, dim = 2 : tensor<3x5x7xbf16>
  %y0 = trn.softmax %x, dim = 0 : tensor<3x5x7xbf16>
  %1 = trn.softmax_grad %y0, %dy, dim = 0 : tensor<3x5x7xbf16>
  %ly = trn.log_softmax %x, dim = 1 : tensor<3x5x7xbf16>
  %2 = trn.log_softmax_grad %ly, %dy, dim = 1 : tensor<3x5x7xbf16>
  return %0, %1, %2 : tensor<3x5x7xbf16>, tensor<3x5x7xbf16>, tensor<3x5x7xbf16>
}

//===----------------------------------------------------------------------===//
// Normalisations
//===----------------------------------------------------------------------===//

// Normalising the last dimension, the last two, and all three (0-d stats).
// REDEFINE: %{entry} = layer_norm_f32
// RUN: %{compare} %{f32}
func.func @layer_norm_f32(%x: tensor<2x3x16xf32>, %w: tensor<16xf32>,
                          %b: tensor<16xf32>, %w1: tensor<3x16xf32>,
                          %b1: tensor<3x16xf32>, %w0: tensor<2x3x16xf32>,
                          %b0: tensor<2x3x16xf32>)
    -> (tensor<2x3x16xf32> {trn.name = "y"}, tensor<2x3xf32> {trn.name = "mean"},
        tensor<2x3xf32> {trn.name = "rstd"},
        tensor<2x3x16xf32> {trn.name = "y_axis1"}, tensor<2xf32> {trn.name = "mean_axis1"},
        tensor<2xf32> {trn.name = "rstd_axis1"},
        tensor<2x3x16xf32> {trn.name = "y_axis0"}, tensor<f32> {trn.name = "mean_axis0"},
        tensor<f32> {trn.name = "rstd_axis0"}) {
  %y, %mean, %rstd = trn.layer_norm %x, %w, %b, axis = 2, eps = 1.0e-5 : (tensor<2x3x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x3x16xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  %y1, %mean1, %rstd1 = trn.layer_norm %x, %w1, %b1, axis = 1, eps = 1.0e-5 : (tensor<2x3x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>) -> (tensor<2x3x16xf32>, tensor<2xf32>, tensor<2xf32>)
  %y0, %mean0, %rstd0 = trn.layer_norm %x, %w0, %b0, axis = 0, eps = 1.0e-5 : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>) -> (tensor<2x3x16xf32>, tensor<f32>, tensor<f32>)
  return %y, %mean, %rstd, %y1, %mean1, %rstd1, %y0, %mean0, %rstd0 : tensor<2x3x16xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x16xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x3x16xf32>, tensor<f32>, tensor<f32>
}

// REDEFINE: %{entry} = layer_norm_bf16
// RUN: %{compare} %{bf16}
func.func @layer_norm_bf16(%x: tensor<2x3x16xbf16>, %w: tensor<16xbf16>,
                           %b: tensor<16xbf16>, %w1: tensor<3x16xbf16>,
                           %b1: tensor<3x16xbf16>)
    -> (tensor<2x3x16xbf16> {trn.name = "y"}, tensor<2x3xf32> {trn.name = "mean"},
        tensor<2x3xf32> {trn.name = "rstd"},
        tensor<2x3x16xbf16> {trn.name = "y_axis1"}, tensor<2xf32> {trn.name = "mean_axis1"},
        tensor<2xf32> {trn.name = "rstd_axis1"}) {
  %y, %mean, %rstd = trn.layer_norm %x, %w, %b, axis = 2, eps = 1.0e-5 : (tensor<2x3x16xbf16>, tensor<16xbf16>, tensor<16xbf16>) -> (tensor<2x3x16xbf16>, tensor<2x3xf32>, tensor<2x3xf32>)
  %y1, %mean1, %rstd1 = trn.layer_norm %x, %w1, %b1, axis = 1, eps = 1.0e-5 : (tensor<2x3x16xbf16>, tensor<3x16xbf16>, tensor<3x16xbf16>) -> (tensor<2x3x16xbf16>, tensor<2xf32>, tensor<2xf32>)
  return %y, %mean, %rstd, %y1, %mean1, %rstd1 : tensor<2x3x16xbf16>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x16xbf16>, tensor<2xf32>, tensor<2xf32>
}

// REDEFINE: %{entry} = layer_norm_grad_f32
// RUN: %{compare} %{f32}
func.func @layer_norm_grad_f32(%x: tensor<2x3x16xf32>, %dy: tensor<2x3x16xf32>,
                               %w: tensor<16xf32>, %b: tensor<16xf32>,
                               %w0: tensor<2x3x16xf32>)
    -> (tensor<2x3x16xf32> {trn.name = "dx"}, tensor<16xf32> {trn.name = "dw"},
        tensor<16xf32> {trn.name = "db"},
        tensor<2x3x16xf32> {trn.name = "dx_axis0"}, tensor<2x3x16xf32> {trn.name = "dw_axis0"},
        tensor<2x3x16xf32> {trn.name = "db_axis0"}) {
  %y, %mean, %rstd = trn.layer_norm %x, %w, %b, axis = 2, eps = 1.0e-5 : (tensor<2x3x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x3x16xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  %dx, %dw, %db = trn.layer_norm_grad %dy, %x, %mean, %rstd, %w, axis = 2 : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<16xf32>) -> (tensor<2x3x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %y0, %mean0, %rstd0 = trn.layer_norm %x, %w0, %w0, axis = 0, eps = 1.0e-5 : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>) -> (tensor<2x3x16xf32>, tensor<f32>, tensor<f32>)
  %dx0, %dw0, %db0 = trn.layer_norm_grad %dy, %x, %mean0, %rstd0, %w0, axis = 0 : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<f32>, tensor<f32>, tensor<2x3x16xf32>) -> (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>)
  return %dx, %dw, %db, %dx0, %dw0, %db0 : tensor<2x3x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>
}

// REDEFINE: %{entry} = layer_norm_grad_bf16
// RUN: %{compare} %{bf16}
func.func @layer_norm_grad_bf16(%x: tensor<2x3x16xbf16>, %dy: tensor<2x3x16xbf16>,
                                %w1: tensor<3x16xbf16>, %b1: tensor<3x16xbf16>)
    -> (tensor<2x3x16xbf16> {trn.name = "dx"}, tensor<3x16xbf16> {trn.name = "dw"},
        tensor<3x16xbf16> {trn.name = "db"}) {
  %y, %mean, %rstd = trn.layer_norm %x, %w1, %b1, axis = 1, eps = 1.0e-5 : (tensor<2x3x16xbf16>, tensor<3x16xbf16>, tensor<3x16xbf16>) -> (tensor<2x3x16xbf16>, tensor<2xf32>, tensor<2xf32>)
  %dx, %dw, %db = trn.layer_norm_grad %dy, %x, %mean, %rstd, %w1, axis = 1 : (tensor<2x3x16xbf16>, tensor<2x3x16xbf16>, tensor<2xf32>, tensor<2xf32>, tensor<3x16xbf16>) -> (tensor<2x3x16xbf16>, tensor<3x16xbf16>, tensor<3x16xbf16>)
  return %dx, %dw, %db : tensor<2x3x16xbf16>, tensor<3x16xbf16>, tensor<3x16xbf16>
}

// REDEFINE: %{entry} = rms_norm_f32
// RUN: %{compare} %{f32}
func.func @rms_norm_f32(%x: tensor<2x3x16xf32>, %w: tensor<16xf32>,
                        %w1: tensor<3x16xf32>)
    -> (tensor<2x3x16xf32> {trn.name = "y"}, tensor<2x3xf32> {trn.name = "rstd"},
        tensor<2x3x16xf32> {trn.name = "y_axis1"}, tensor<2xf32> {trn.name = "rstd_axis1"}) {
  %y, %rstd = trn.rms_norm %x, %w, axis = 2, eps = 1.0e-6 : (tensor<2x3x16xf32>, tensor<16xf32>) -> (tensor<2x3x16xf32>, tensor<2x3xf32>)
  %y1, %rstd1 = trn.rms_norm %x, %w1, axis = 1, eps = 1.0e-6 : (tensor<2x3x16xf32>, tensor<3x16xf32>) -> (tensor<2x3x16xf32>, tensor<2xf32>)
  return %y, %rstd, %y1, %rstd1 : tensor<2x3x16xf32>, tensor<2x3xf32>, tensor<2x3x16xf32>, tensor<2xf32>
}

// REDEFINE: %{entry} = rms_norm_bf16
// RUN: %{compare} %{bf16}
func.func @rms_norm_bf16(%x: tensor<2x3x16xbf16>, %w: tensor<16xbf16>)
    -> (tensor<2x3x16xbf16> {trn.name = "y"}, tensor<2x3xf32> {trn.name = "rstd"}) {
  %y, %rstd = trn.rms_norm %x, %w, axis = 2, eps = 1.0e-6 : (tensor<2x3x16xbf16>, tensor<16xbf16>) -> (tensor<2x3x16xbf16>, tensor<2x3xf32>)
  return %y, %rstd : tensor<2x3x16xbf16>, tensor<2x3xf32>
}

// REDEFINE: %{entry} = rms_norm_grad_f32
// RUN: %{compare} %{f32}
func.func @rms_norm_grad_f32(%x: tensor<2x3x16xf32>, %dy: tensor<2x3x16xf32>,
                             %w: tensor<16xf32>, %w1: tensor<3x16xf32>)
    -> (tensor<2x3x16xf32> {trn.name = "dx"}, tensor<16xf32> {trn.name = "dw"},
        tensor<2x3x16xf32> {trn.name = "dx_axis1"}, tensor<3x16xf32> {trn.name = "dw_axis1"}) {
  %y, %rstd = trn.rms_norm %x, %w, axis = 2, eps = 1.0e-6 : (tensor<2x3x16xf32>, tensor<16xf32>) -> (tensor<2x3x16xf32>, tensor<2x3xf32>)
  %dx, %dw = trn.rms_norm_grad %dy, %x, %rstd, %w, axis = 2 : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3xf32>, tensor<16xf32>) -> (tensor<2x3x16xf32>, tensor<16xf32>)
  %y1, %rstd1 = trn.rms_norm %x, %w1, axis = 1, eps = 1.0e-6 : (tensor<2x3x16xf32>, tensor<3x16xf32>) -> (tensor<2x3x16xf32>, tensor<2xf32>)
  %dx1, %dw1 = trn.rms_norm_grad %dy, %x, %rstd1, %w1, axis = 1 : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2xf32>, tensor<3x16xf32>) -> (tensor<2x3x16xf32>, tensor<3x16xf32>)
  return %dx, %dw, %dx1, %dw1 : tensor<2x3x16xf32>, tensor<16xf32>, tensor<2x3x16xf32>, tensor<3x16xf32>
}

// REDEFINE: %{entry} = rms_norm_grad_bf16
// RUN: %{compare} %{bf16}
func.func @rms_norm_grad_bf16(%x: tensor<2x3x16xbf16>, %dy: tensor<2x3x16xbf16>,
                              %w: tensor<16xbf16>)
    -> (tensor<2x3x16xbf16> {trn.name = "dx"}, tensor<16xbf16> {trn.name = "dw"}) {
  %y, %rstd = trn.rms_norm %x, %w, axis = 2, eps = 1.0e-6 : (tensor<2x3x16xbf16>, tensor<16xbf16>) -> (tensor<2x3x16xbf16>, tensor<2x3xf32>)
  %dx, %dw = trn.rms_norm_grad %dy, %x, %rstd, %w, axis = 2 : (tensor<2x3x16xbf16>, tensor<2x3x16xbf16>, tensor<2x3xf32>, tensor<16xbf16>) -> (tensor<2x3x16xbf16>, tensor<16xbf16>)
  return %dx, %dw : tensor<2x3x16xbf16>, tensor<16xbf16>
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// [batch, heads, S, D] with S = 5 queries and T = 6 keys, so that the causal
// mask (top-left aligned) hides the last key from every query; the causal
// scale is larger, for sharper weights.
// REDEFINE: %{entry} = attention_f32
// RUN: %{compare} %{f32}
func.func @attention_f32(%q: tensor<2x2x5x8xf32>, %k: tensor<2x2x6x8xf32>,
                         %v: tensor<2x2x6x4xf32>)
    -> (tensor<2x2x5x4xf32> {trn.name = "out"}, tensor<2x2x5xf32> {trn.name = "lse"},
        tensor<2x2x5x4xf32> {trn.name = "out_causal"},
        tensor<2x2x5xf32> {trn.name = "lse_causal"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.35355339059327373 : (tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>) -> (tensor<2x2x5x4xf32>, tensor<2x2x5xf32>)
  %oc, %lsec = trn.attention %q, %k, %v, scale = 2.0 causal : (tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>) -> (tensor<2x2x5x4xf32>, tensor<2x2x5xf32>)
  return %o, %lse, %oc, %lsec : tensor<2x2x5x4xf32>, tensor<2x2x5xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5xf32>
}

// Rank 2 (no batch dimensions) with more queries than keys.
// REDEFINE: %{entry} = attention_rank2_f32
// RUN: %{compare} %{f32}
func.func @attention_rank2_f32(%q: tensor<6x8xf32>, %k: tensor<4x8xf32>,
                               %v: tensor<4x3xf32>)
    -> (tensor<6x3xf32> {trn.name = "out"}, tensor<6xf32> {trn.name = "lse"},
        tensor<6x3xf32> {trn.name = "out_causal"}, tensor<6xf32> {trn.name = "lse_causal"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 1.0 : (tensor<6x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>) -> (tensor<6x3xf32>, tensor<6xf32>)
  %oc, %lsec = trn.attention %q, %k, %v, scale = 1.0 causal : (tensor<6x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>) -> (tensor<6x3xf32>, tensor<6xf32>)
  return %o, %lse, %oc, %lsec : tensor<6x3xf32>, tensor<6xf32>, tensor<6x3xf32>, tensor<6xf32>
}

// REDEFINE: %{entry} = attention_bf16
// RUN: %{compare} %{bf16}
func.func @attention_bf16(%q: tensor<2x2x5x8xbf16>, %k: tensor<2x2x6x8xbf16>,
                          %v: tensor<2x2x6x4xbf16>)
    -> (tensor<2x2x5x4xbf16> {trn.name = "out"}, tensor<2x2x5xf32> {trn.name = "lse"},
        tensor<2x2x5x4xbf16> {trn.name = "out_causal"},
        tensor<2x2x5xf32> {trn.name = "lse_causal"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.35355339059327373 : (tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>) -> (tensor<2x2x5x4xbf16>, tensor<2x2x5xf32>)
  %oc, %lsec = trn.attention %q, %k, %v, scale = 2.0 causal : (tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>) -> (tensor<2x2x5x4xbf16>, tensor<2x2x5xf32>)
  return %o, %lse, %oc, %lsec : tensor<2x2x5x4xbf16>, tensor<2x2x5xf32>, tensor<2x2x5x4xbf16>, tensor<2x2x5xf32>
}

// REDEFINE: %{entry} = attention_grad_f32
// RUN: %{compare} %{f32}
func.func @attention_grad_f32(%q: tensor<2x2x5x8xf32>, %k: tensor<2x2x6x8xf32>,
                              %v: tensor<2x2x6x4xf32>, %do: tensor<2x2x5x4xf32>)
    -> (tensor<2x2x5x8xf32> {trn.name = "dq"}, tensor<2x2x6x8xf32> {trn.name = "dk"},
        tensor<2x2x6x4xf32> {trn.name = "dv"},
        tensor<2x2x5x8xf32> {trn.name = "dq_causal"}, tensor<2x2x6x8xf32> {trn.name = "dk_causal"},
        tensor<2x2x6x4xf32> {trn.name = "dv_causal"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.35355339059327373 : (tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>) -> (tensor<2x2x5x4xf32>, tensor<2x2x5xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.35355339059327373 : (tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5xf32>, tensor<2x2x5x4xf32>) -> (tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>)
  %oc, %lsec = trn.attention %q, %k, %v, scale = 2.0 causal : (tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>) -> (tensor<2x2x5x4xf32>, tensor<2x2x5xf32>)
  %dqc, %dkc, %dvc = trn.attention_grad %q, %k, %v, %oc, %lsec, %do, scale = 2.0 causal : (tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5xf32>, tensor<2x2x5x4xf32>) -> (tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>)
  return %dq, %dk, %dv, %dqc, %dkc, %dvc : tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>, tensor<2x2x5x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x4xf32>
}

// REDEFINE: %{entry} = attention_grad_rank2_f32
// RUN: %{compare} %{f32}
func.func @attention_grad_rank2_f32(%q: tensor<6x8xf32>, %k: tensor<4x8xf32>,
                                    %v: tensor<4x3xf32>, %do: tensor<6x3xf32>)
    -> (tensor<6x8xf32> {trn.name = "dq"}, tensor<4x8xf32> {trn.name = "dk"},
        tensor<4x3xf32> {trn.name = "dv"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 1.0 causal : (tensor<6x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>) -> (tensor<6x3xf32>, tensor<6xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 1.0 causal : (tensor<6x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<6x3xf32>, tensor<6xf32>, tensor<6x3xf32>) -> (tensor<6x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>)
  return %dq, %dk, %dv : tensor<6x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>
}

// REDEFINE: %{entry} = attention_grad_bf16
// RUN: %{compare} %{bf16}
func.func @attention_grad_bf16(%q: tensor<2x2x5x8xbf16>, %k: tensor<2x2x6x8xbf16>,
                               %v: tensor<2x2x6x4xbf16>, %do: tensor<2x2x5x4xbf16>)
    -> (tensor<2x2x5x8xbf16> {trn.name = "dq"}, tensor<2x2x6x8xbf16> {trn.name = "dk"},
        tensor<2x2x6x4xbf16> {trn.name = "dv"},
        tensor<2x2x5x8xbf16> {trn.name = "dq_causal"}, tensor<2x2x6x8xbf16> {trn.name = "dk_causal"},
        tensor<2x2x6x4xbf16> {trn.name = "dv_causal"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.35355339059327373 : (tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>) -> (tensor<2x2x5x4xbf16>, tensor<2x2x5xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.35355339059327373 : (tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>, tensor<2x2x5x4xbf16>, tensor<2x2x5xf32>, tensor<2x2x5x4xbf16>) -> (tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>)
  %oc, %lsec = trn.attention %q, %k, %v, scale = 2.0 causal : (tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>) -> (tensor<2x2x5x4xbf16>, tensor<2x2x5xf32>)
  %dqc, %dkc, %dvc = trn.attention_grad %q, %k, %v, %oc, %lsec, %do, scale = 2.0 causal : (tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>, tensor<2x2x5x4xbf16>, tensor<2x2x5xf32>, tensor<2x2x5x4xbf16>) -> (tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>)
  return %dq, %dk, %dv, %dqc, %dkc, %dvc : tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>, tensor<2x2x5x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x4xbf16>
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

// 16 rows with labels in [0, 5), ignore_index = 3: some rows are ignored
// (seed 7 draws label 3 in 4 rows). logits * 100 needs the max subtraction.
// REDEFINE: %{entry} = cross_entropy_f32
// RUN: %{compare} %{f32}
func.func @cross_entropy_f32(%logits: tensor<16x5xf32>, %labels: tensor<16xi64>)
    -> (tensor<16xf32> {trn.name = "none"}, tensor<f32> {trn.name = "sum"},
        tensor<f32> {trn.name = "mean"}, tensor<16xf32> {trn.name = "none_large"}) {
  %0 = trn.cross_entropy none %logits, %labels {ignore_index = 3 : i64} : (tensor<16x5xf32>, tensor<16xi64>) -> tensor<16xf32>
  %1 = trn.cross_entropy sum %logits, %labels {ignore_index = 3 : i64} : (tensor<16x5xf32>, tensor<16xi64>) -> tensor<f32>
  %2 = trn.cross_entropy mean %logits, %labels {ignore_index = 3 : i64} : (tensor<16x5xf32>, tensor<16xi64>) -> tensor<f32>
  %hundred = trn.constant dense<100.0> : tensor<16x5xf32>
  %large = trn.mul %logits, %hundred : tensor<16x5xf32>
  %3 = trn.cross_entropy none %large, %labels {ignore_index = 3 : i64} : (tensor<16x5xf32>, tensor<16xi64>) -> tensor<16xf32>
  return %0, %1, %2, %3 : tensor<16xf32>, tensor<f32>, tensor<f32>, tensor<16xf32>
}

// REDEFINE: %{entry} = cross_entropy_bf16
// RUN: %{compare} %{bf16}
func.func @cross_entropy_bf16(%logits: tensor<16x5xbf16>, %labels: tensor<16xi64>)
    -> (tensor<16xbf16> {trn.name = "none"}, tensor<bf16> {trn.name = "sum"},
        tensor<bf16> {trn.name = "mean"}) {
  %0 = trn.cross_entropy none %logits, %labels {ignore_index = 3 : i64} : (tensor<16x5xbf16>, tensor<16xi64>) -> tensor<16xbf16>
  %1 = trn.cross_entropy sum %logits, %labels {ignore_index = 3 : i64} : (tensor<16x5xbf16>, tensor<16xi64>) -> tensor<bf16>
  %2 = trn.cross_entropy mean %logits, %labels {ignore_index = 3 : i64} : (tensor<16x5xbf16>, tensor<16xi64>) -> tensor<bf16>
  return %0, %1, %2 : tensor<16xbf16>, tensor<bf16>, tensor<bf16>
}

// REDEFINE: %{entry} = cross_entropy_grad_f32
// RUN: %{compare} %{f32}
func.func @cross_entropy_grad_f32(%logits: tensor<16x5xf32>, %labels: tensor<16xi64>,
                                  %grad_rows: tensor<16xf32>, %grad: tensor<f32>)
    -> (tensor<16x5xf32> {trn.name = "none"}, tensor<16x5xf32> {trn.name = "sum"},
        tensor<16x5xf32> {trn.name = "mean"}) {
  %0 = trn.cross_entropy_grad none %logits, %labels, %grad_rows {ignore_index = 3 : i64} : (tensor<16x5xf32>, tensor<16xi64>, tensor<16xf32>) -> tensor<16x5xf32>
  %1 = trn.cross_entropy_grad sum %logits, %labels, %grad {ignore_index = 3 : i64} : (tensor<16x5xf32>, tensor<16xi64>, tensor<f32>) -> tensor<16x5xf32>
  %2 = trn.cross_entropy_grad mean %logits, %labels, %grad {ignore_index = 3 : i64} : (tensor<16x5xf32>, tensor<16xi64>, tensor<f32>) -> tensor<16x5xf32>
  return %0, %1, %2 : tensor<16x5xf32>, tensor<16x5xf32>, tensor<16x5xf32>
}

// REDEFINE: %{entry} = cross_entropy_grad_bf16
// RUN: %{compare} %{bf16}
func.func @cross_entropy_grad_bf16(%logits: tensor<16x5xbf16>, %labels: tensor<16xi64>,
                                   %grad_rows: tensor<16xbf16>, %grad: tensor<bf16>)
    -> (tensor<16x5xbf16> {trn.name = "none"}, tensor<16x5xbf16> {trn.name = "sum"},
        tensor<16x5xbf16> {trn.name = "mean"}) {
  %0 = trn.cross_entropy_grad none %logits, %labels, %grad_rows {ignore_index = 3 : i64} : (tensor<16x5xbf16>, tensor<16xi64>, tensor<16xbf16>) -> tensor<16x5xbf16>
  %1 = trn.cross_entropy_grad sum %logits, %labels, %grad {ignore_index = 3 : i64} : (tensor<16x5xbf16>, tensor<16xi64>, tensor<bf16>) -> tensor<16x5xbf16>
  %2 = trn.cross_entropy_grad mean %logits, %labels, %grad {ignore_index = 3 : i64} : (tensor<16x5xbf16>, tensor<16xi64>, tensor<bf16>) -> tensor<16x5xbf16>
  return %0, %1, %2 : tensor<16x5xbf16>, tensor<16x5xbf16>, tensor<16x5xbf16>
}

// i32 labels, with the default ignore_index (-100, no row ignored) and with
// one that i32 cannot hold (matches no label).
// REDEFINE: %{entry} = cross_entropy_i32_labels
// RUN: %{compare} %{f32}
func.func @cross_entropy_i32_labels(%logits: tensor<16x5xf32>, %labels: tensor<16xi32>,
                                    %grad: tensor<f32>)
    -> (tensor<f32> {trn.name = "mean"}, tensor<f32> {trn.name = "sum_wide_ignore"},
        tensor<16x5xf32> {trn.name = "grad_mean"},
        tensor<16x5xf32> {trn.name = "grad_sum_wide_ignore"}) {
  %0 = trn.cross_entropy mean %logits, %labels : (tensor<16x5xf32>, tensor<16xi32>) -> tensor<f32>
  %1 = trn.cross_entropy sum %logits, %labels {ignore_index = 4294967296 : i64} : (tensor<16x5xf32>, tensor<16xi32>) -> tensor<f32>
  %2 = trn.cross_entropy_grad mean %logits, %labels, %grad : (tensor<16x5xf32>, tensor<16xi32>, tensor<f32>) -> tensor<16x5xf32>
  %3 = trn.cross_entropy_grad sum %logits, %labels, %grad {ignore_index = 4294967296 : i64} : (tensor<16x5xf32>, tensor<16xi32>, tensor<f32>) -> tensor<16x5xf32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<16x5xf32>, tensor<16x5xf32>
}

// Every row ignored, with an ignore_index outside [0, C): the mean is NaN
// (0 / 0), the sum and every gradient 0.
// REDEFINE: %{entry} = cross_entropy_all_ignored
// RUN: %{compare} %{f32}
func.func @cross_entropy_all_ignored(%logits: tensor<4x5xf32>, %grad_rows: tensor<4xf32>,
                                     %grad: tensor<f32>)
    -> (tensor<f32> {trn.name = "mean"}, tensor<f32> {trn.name = "sum"},
        tensor<4xf32> {trn.name = "none"}, tensor<4x5xf32> {trn.name = "grad_mean"},
        tensor<4x5xf32> {trn.name = "grad_none"}) {
  %labels = trn.constant dense<-1> : tensor<4xi64>
  %0 = trn.cross_entropy mean %logits, %labels {ignore_index = -1 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  %1 = trn.cross_entropy sum %logits, %labels {ignore_index = -1 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = trn.cross_entropy none %logits, %labels {ignore_index = -1 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<4xf32>
  %3 = trn.cross_entropy_grad mean %logits, %labels, %grad {ignore_index = -1 : i64} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  %4 = trn.cross_entropy_grad none %logits, %labels, %grad_rows {ignore_index = -1 : i64} : (tensor<4x5xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x5xf32>
  return %0, %1, %2, %3, %4 : tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4x5xf32>, tensor<4x5xf32>
}
