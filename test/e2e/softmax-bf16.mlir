// softmax.mlir in bf16: bf16 logits, gradients and results (the
// decomposition computes in f32 and rounds the results to bf16).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 11 --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz --scale x:8
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 2e-2 | FileCheck %s
// CHECK: 4 outputs match

func.func @softmax_bf16(%x: tensor<200x600xbf16> {trn.name = "x"}, %dy: tensor<200x600xbf16> {trn.name = "dy"})
    -> (tensor<200x600xbf16> {trn.name = "y"}, tensor<200x600xbf16> {trn.name = "dx"},
        tensor<200x600xbf16> {trn.name = "y_dim0"}, tensor<200x600xbf16> {trn.name = "dx_dim0"}) {
  %y = trn.softmax %x, dim = 1 : tensor<200x600xbf16>
  %dx = trn.softmax_grad %y, %dy, dim = 1 : tensor<200x600xbf16>
  %y0 = trn.softmax %x, dim = 0 : tensor<200x600xbf16>
  %dx0 = trn.softmax_grad %y0, %dy, dim = 0 : tensor<200x600xbf16>
  return %y, %dx, %y0, %dx0 : tensor<200x600xbf16>, tensor<200x600xbf16>, tensor<200x600xbf16>, tensor<200x600xbf16>
}
