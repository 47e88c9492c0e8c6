// Sums over leading dims (as in bias gradients) run on the Tensor Engine as
// ones-column matmuls over contiguous row tiles (partial row tiles, a
// partial 512-column block, f32 and bf16), compiled by trn-cc and run on the
// simulator, match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 4 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 2 outputs match
func.func @sums(%a: tensor<3x100x700xf32>, %b: tensor<300x520xbf16>) -> (tensor<700xf32>, tensor<520xbf16>) {
  %0 = trn.reduce sum %a, dims = [0, 1] : (tensor<3x100x700xf32>) -> tensor<700xf32>
  %1 = trn.reduce sum %b, dims = [0] : (tensor<300x520xbf16>) -> tensor<520xbf16>
  return %0, %1 : tensor<700xf32>, tensor<520xbf16>
}
