// Matmuls whose row-major lhs rows arrive in several 2048-element chunks of K
// (a partial last chunk and a partial last K tile), transposed while the first
// column block computes and stored to the scratch one chunk per DMA, with the
// moving panel resident (f32: reloaded per column block; bf16: the next
// panel prefetched while the current one computes, a narrow last block),
// compiled by trn-cc and run on the simulator, match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 4 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 2 outputs match
func.func @mm(%a: tensor<256x4200xf32>, %b: tensor<4200x1100xf32>, %c: tensor<200x2304xbf16>, %d: tensor<2304x1030xbf16>) -> (tensor<256x1100xf32>, tensor<200x1030xf32>) {
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x4200xf32>, tensor<4200x1100xf32>) -> tensor<256x1100xf32>
  %1 = trn.dot_general %c, %d, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<200x2304xbf16>, tensor<2304x1030xbf16>) -> tensor<200x1030xf32>
  return %0, %1 : tensor<256x1100xf32>, tensor<200x1030xf32>
}
