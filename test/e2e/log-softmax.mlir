// Log-softmax and its gradient along the last dim (600 columns: the row
// reductions span two 512-column tiles; 200 rows: two partition tiles) and
// along the first dim of a 3-D tensor, compiled by trn-cc and run on the
// simulator, match the reference evaluator. The logits are scaled to
// [-8, 8) so that the result depends on subtracting the row max.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 12 --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz --scale x:8 --scale x3:8
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 4 outputs match

func.func @log_softmax(%x: tensor<200x600xf32> {trn.name = "x"}, %dy: tensor<200x600xf32> {trn.name = "dy"},
                       %x3: tensor<3x130x96xf32> {trn.name = "x3"}, %dy3: tensor<3x130x96xf32> {trn.name = "dy3"})
    -> (tensor<200x600xf32> {trn.name = "y"}, tensor<200x600xf32> {trn.name = "dx"},
        tensor<3x130x96xf32> {trn.name = "y3"}, tensor<3x130x96xf32> {trn.name = "dx3"}) {
  %y = trn.log_softmax %x, dim = 1 : tensor<200x600xf32>
  %dx = trn.log_softmax_grad %y, %dy, dim = 1 : tensor<200x600xf32>
  %y3 = trn.log_softmax %x3, dim = 0 : tensor<3x130x96xf32>
  %dx3 = trn.log_softmax_grad %y3, %dy3, dim = 0 : tensor<3x130x96xf32>
  return %y, %dx, %y3, %dx3 : tensor<200x600xf32>, tensor<200x600xf32>, tensor<3x130x96xf32>, tensor<3x130x96xf32>
}
