// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics

// A hand-written group that starts with a matmul and uses a row reduction
// inside it, over rows that do not come out of the matmul whole (2048
// columns: two column blocks): refused, not lowered into partial sums (a
// reduction only yielded is fine: each tile adds its part to a running
// column; rows of up to one column block are reduced whole,
// e2e/matmul-whole-row-epilogue.mlir).
func.func @epilogue_reduces(%x: tensor<128x64xf32>, %w: tensor<64x2048xf32>) -> tensor<128x2048xf32> {
  // expected-error @+1 {{'trn.fusion' cannot be lowered: a group that starts with a matmul cannot reduce rows unless the matmul yields them whole (2048 columns here)}}
  %0 = trn.fusion(%x, %w : tensor<128x64xf32>, tensor<64x2048xf32>) -> (tensor<128x2048xf32>) {
  ^bb0(%a: tensor<128x64xf32>, %b: tensor<64x2048xf32>):
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x2048xf32>) -> tensor<128x2048xf32>
    %2 = trn.reduce sum %1, dims = [1] : (tensor<128x2048xf32>) -> tensor<128xf32>
    %3 = trn.broadcast_in_dim %2, dims = [0] : (tensor<128xf32>) -> tensor<128x2048xf32>
    %4 = trn.sub %1, %3 : tensor<128x2048xf32>
    trn.yield %4 : tensor<128x2048xf32>
  }
  return %0 : tensor<128x2048xf32>
}

// -----

// A leading matmul in a form the backend does not lower: the matmul's own
// diagnostic.
func.func @epilogue_matmul_form(%x: tensor<2x128x64xf32>, %w: tensor<64x128xf32>) -> tensor<2x128x128xf32> {
  %0 = trn.fusion(%x, %w : tensor<2x128x64xf32>, tensor<64x128xf32>) -> (tensor<2x128x128xf32>) {
  ^bb0(%a: tensor<2x128x64xf32>, %b: tensor<64x128xf32>):
    // expected-error @+1 {{'trn.dot_general' is lowered for leading batch dims and one free and one contracting dim per operand; this form is not lowered yet}}
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x128x64xf32>, tensor<64x128xf32>) -> tensor<2x128x128xf32>
    %2 = trn.exp %1 : tensor<2x128x128xf32>
    trn.yield %2 : tensor<2x128x128xf32>
  }
  return %0 : tensor<2x128x128xf32>
}

// -----

// A hand-written epilogue summing a bf16 value over rows: the running
// totals are fp32 sums of fp32 tiles.
func.func @epilogue_column_sum_bf16(%x: tensor<128x64xf32>, %w: tensor<64x256xf32>) -> tensor<256xbf16> {
  %0 = trn.fusion(%x, %w : tensor<128x64xf32>, tensor<64x256xf32>) -> (tensor<256xbf16>) {
  ^bb0(%a: tensor<128x64xf32>, %b: tensor<64x256xf32>):
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x256xf32>) -> tensor<128x256xf32>
    %2 = trn.convert %1 : tensor<128x256xf32> -> tensor<128x256xbf16>
    // expected-error @+1 {{'trn.fusion' cannot be lowered: an epilogue's sum over rows must take an f32 value of the matmul's shape and only be yielded}}
    %3 = trn.reduce sum %2, dims = [0] : (tensor<128x256xbf16>) -> tensor<256xbf16>
    trn.yield %3 : tensor<256xbf16>
  }
  return %0 : tensor<256xbf16>
}
