// Reductions of a few very long rows (a loss summed over every element):
// each row splits over up to 128 partitions that reduce their pieces, then
// the pieces are reduced. Two rows of 2^20 (64 pieces each), a max over
// every element of a [4, 512, 512] tensor (128 pieces), and a row whose
// length has no divisor in [32, 128] (one partition, as before); compiled by
// trn-cc and run on the simulator, they match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 10 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 3 outputs match
func.func @long_rows(%x: tensor<2x1048576xf32>, %y: tensor<4x512x512xf32>, %z: tensor<1x1048583xf32>) -> (tensor<2xf32>, tensor<f32>, tensor<1xf32>) {
  %0 = trn.reduce sum %x, dims = [1] : (tensor<2x1048576xf32>) -> tensor<2xf32>
  %1 = trn.reduce max %y, dims = [0, 1, 2] : (tensor<4x512x512xf32>) -> tensor<f32>
  %2 = trn.reduce sum %z, dims = [1] : (tensor<1x1048583xf32>) -> tensor<1xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<f32>, tensor<1xf32>
}
