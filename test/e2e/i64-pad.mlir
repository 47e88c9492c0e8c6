// i64 inputs and results (computed in i32 by trn-narrow-i64: read as low
// words, written back sign-extended, negative values included) and trn.pad,
// compiled by trn-cc and run on the simulator, match the reference
// evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 5 --int-max 1000 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-6 | FileCheck %s
// CHECK: 4 outputs match

func.func @i64_pad(%labels: tensor<300x7xi64> {trn.name = "labels"}, %x: tensor<130x40xf32> {trn.name = "x"})
    -> (tensor<300x7xi64> {trn.name = "shifted"}, tensor<300x7xf32> {trn.name = "as_float"},
        tensor<131x47xf32> {trn.name = "padded"}, tensor<2x300x7xi64> {trn.name = "stacked"}) {
  %offset = trn.constant dense<-500> : tensor<300x7xi64>
  %shifted = trn.add %labels, %offset : tensor<300x7xi64>
  %f = trn.convert %shifted : tensor<300x7xi64> -> tensor<300x7xf32>
  %p = trn.pad %x, low = [1, 3], high = [0, 4], value = -2.5 : (tensor<130x40xf32>) -> tensor<131x47xf32>
  %b = trn.broadcast_in_dim %shifted, dims = [1, 2] : (tensor<300x7xi64>) -> tensor<2x300x7xi64>
  return %shifted, %f, %p, %b : tensor<300x7xi64>, tensor<300x7xf32>, tensor<131x47xf32>, tensor<2x300x7xi64>
}
