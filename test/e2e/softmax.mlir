// Softmax and its gradient along the last dim (600 columns: the row reductions
// span two 512-column tiles; 200 rows: two partition tiles) and along the
// first dim (a reduction over rows), compiled by trn-cc and run on the
// simulator, match the reference evaluator. The logits are scaled to [-8, 8)
// so that the result depends on subtracting the row max.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 11 --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz --scale x:8
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 4 outputs match

func.func @softmax(%x: tensor<200x600xf32> {trn.name = "x"}, %dy: tensor<200x600xf32> {trn.name = "dy"})
    -> (tensor<200x600xf32> {trn.name = "y"}, tensor<200x600xf32> {trn.name = "dx"},
        tensor<200x600xf32> {trn.name = "y_dim0"}, tensor<200x600xf32> {trn.name = "dx_dim0"}) {
  %y = trn.softmax %x, dim = 1 : tensor<200x600xf32>
  %dx = trn.softmax_grad %y, %dy, dim = 1 : tensor<200x600xf32>
  %y0 = trn.softmax %x, dim = 0 : tensor<200x600xf32>
  %dx0 = trn.softmax_grad %y0, %dy, dim = 0 : tensor<200x600xf32>
  return %y, %dx, %y0, %dx0 : tensor<200x600xf32>, tensor<200x600xf32>, tensor<200x600xf32>, tensor<200x600xf32>
}
