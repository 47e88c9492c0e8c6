// Rank-0 inputs and outputs keep their shape [] through the artifact, so the
// evaluator's and the simulator's .npz files agree.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 1 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-6 | FileCheck %s
// CHECK: 2 outputs match

func.func @scalar_io(%a: tensor<f32> {trn.name = "a"}, %x: tensor<3x5xf32> {trn.name = "x"})
    -> (tensor<f32> {trn.name = "b"}, tensor<3x5xf32> {trn.name = "y"}) {
  %b = trn.neg %a : tensor<f32>
  %ab = trn.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
  %y = trn.mul %x, %ab : tensor<3x5xf32>
  return %b, %y : tensor<f32>, tensor<3x5xf32>
}
