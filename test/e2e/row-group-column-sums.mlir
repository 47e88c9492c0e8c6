// Sums over rows joining a group that reduces along its rows (a layer
// norm's backward, whose weight and bias gradients sum its result and an
// input over the tokens): whole-row tiles keep a running fp32 total per
// column as well. 300 rows (two full row tiles and a partial one) of 1024
// columns, compiled by trn-cc and run on the simulator, match the reference
// evaluator; a 4096-column group keeps its sum apart.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 12 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// RUN: trn-cc compile %s --no-cache --mlir-print-ir-after-all -o %t/ir.trnart 2>&1 | FileCheck %s --check-prefix=IR
// CHECK: 5 outputs match
// IR: IR Dump After TrnFuseMatmulEpilogue
// IR: trn.fusion
// IR: trn.reduce sum %{{.*}}, dims = [1]
// IR: trn.reduce sum %{{.*}}, dims = [0] : (tensor<300x1024xf32>) -> tensor<1024xf32>
// IR: trn.yield
func.func @norm_backward(%g: tensor<300x1024xf32>, %x: tensor<300x1024xf32>, %wg: tensor<128x4096xf32>, %wx: tensor<128x4096xf32>) -> (tensor<300x1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<128x4096xf32>, tensor<4096xf32>) {
  %p = trn.mul %g, %x : tensor<300x1024xf32>
  %r = trn.reduce sum %p, dims = [1] : (tensor<300x1024xf32>) -> tensor<300xf32>
  %c = trn.broadcast_in_dim %r, dims = [0] : (tensor<300xf32>) -> tensor<300x1024xf32>
  %m = trn.mul %c, %x : tensor<300x1024xf32>
  %y = trn.sub %g, %m : tensor<300x1024xf32>
  %s1 = trn.reduce sum %y, dims = [0] : (tensor<300x1024xf32>) -> tensor<1024xf32>
  %s2 = trn.reduce sum %g, dims = [0] : (tensor<300x1024xf32>) -> tensor<1024xf32>
  %wp = trn.mul %wg, %wx : tensor<128x4096xf32>
  %wr = trn.reduce sum %wp, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
  %wc = trn.broadcast_in_dim %wr, dims = [0] : (tensor<128xf32>) -> tensor<128x4096xf32>
  %wm = trn.mul %wc, %wx : tensor<128x4096xf32>
  %s3 = trn.reduce sum %wm, dims = [0] : (tensor<128x4096xf32>) -> tensor<4096xf32>
  return %y, %s1, %s2, %wm, %s3 : tensor<300x1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<128x4096xf32>, tensor<4096xf32>
}
