// rms_norm and rms_norm_grad, compiled by trn-cc and run on the simulator,
// match the reference evaluator: over the last dim of a [2, 100, 96] tensor
// (200 rows: two partition tiles), over 600 columns (the row statistics span
// two 512-column tiles; grad_weight sums 130 rows), and over the two trailing
// dims of a [4, 50, 12] tensor (weight [50, 12]).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 14 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 12 outputs match

func.func @rms_norm(%x: tensor<2x100x96xf32> {trn.name = "x"}, %w: tensor<96xf32> {trn.name = "w"},
                    %dy: tensor<2x100x96xf32> {trn.name = "dy"},
                    %xw: tensor<130x600xf32> {trn.name = "xw"}, %ww: tensor<600xf32> {trn.name = "ww"},
                    %dyw: tensor<130x600xf32> {trn.name = "dyw"},
                    %x2: tensor<4x50x12xf32> {trn.name = "x2"}, %w2: tensor<50x12xf32> {trn.name = "w2"},
                    %dy2: tensor<4x50x12xf32> {trn.name = "dy2"})
    -> (tensor<2x100x96xf32> {trn.name = "y"}, tensor<2x100xf32> {trn.name = "rstd"},
        tensor<2x100x96xf32> {trn.name = "dx"}, tensor<96xf32> {trn.name = "dw"},
        tensor<130x600xf32> {trn.name = "yw"}, tensor<130xf32> {trn.name = "rstdw"},
        tensor<130x600xf32> {trn.name = "dxw"}, tensor<600xf32> {trn.name = "dww"},
        tensor<4x50x12xf32> {trn.name = "y2"}, tensor<4xf32> {trn.name = "rstd2"},
        tensor<4x50x12xf32> {trn.name = "dx2"}, tensor<50x12xf32> {trn.name = "dw2"}) {
  %y:2 = trn.rms_norm %x, %w, axis = 2, eps = 1.0e-06 : (tensor<2x100x96xf32>, tensor<96xf32>) -> (tensor<2x100x96xf32>, tensor<2x100xf32>)
  %g:2 = trn.rms_norm_grad %dy, %x, %y#1, %w, axis = 2 : (tensor<2x100x96xf32>, tensor<2x100x96xf32>, tensor<2x100xf32>, tensor<96xf32>) -> (tensor<2x100x96xf32>, tensor<96xf32>)
  %yw:2 = trn.rms_norm %xw, %ww, axis = 1, eps = 1.0e-06 : (tensor<130x600xf32>, tensor<600xf32>) -> (tensor<130x600xf32>, tensor<130xf32>)
  %gw:2 = trn.rms_norm_grad %dyw, %xw, %yw#1, %ww, axis = 1 : (tensor<130x600xf32>, tensor<130x600xf32>, tensor<130xf32>, tensor<600xf32>) -> (tensor<130x600xf32>, tensor<600xf32>)
  %y2:2 = trn.rms_norm %x2, %w2, axis = 1, eps = 1.0e-06 : (tensor<4x50x12xf32>, tensor<50x12xf32>) -> (tensor<4x50x12xf32>, tensor<4xf32>)
  %g2:2 = trn.rms_norm_grad %dy2, %x2, %y2#1, %w2, axis = 1 : (tensor<4x50x12xf32>, tensor<4x50x12xf32>, tensor<4xf32>, tensor<50x12xf32>) -> (tensor<4x50x12xf32>, tensor<50x12xf32>)
  return %y#0, %y#1, %g#0, %g#1, %yw#0, %yw#1, %gw#0, %gw#1, %y2#0, %y2#1, %g2#0, %g2#1
      : tensor<2x100x96xf32>, tensor<2x100xf32>, tensor<2x100x96xf32>, tensor<96xf32>,
        tensor<130x600xf32>, tensor<130xf32>, tensor<130x600xf32>, tensor<600xf32>,
        tensor<4x50x12xf32>, tensor<4xf32>, tensor<4x50x12xf32>, tensor<50x12xf32>
}
