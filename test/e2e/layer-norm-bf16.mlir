// layer-norm.mlir in bf16: bf16 input, weight, bias, gradients and results;
// mean and rstd stay f32 (the decomposition computes in f32).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 13 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 2e-2 | FileCheck %s
// CHECK: 18 outputs match

func.func @layer_norm_bf16(%x: tensor<2x100x96xbf16> {trn.name = "x"}, %w: tensor<96xbf16> {trn.name = "w"},
                      %b: tensor<96xbf16> {trn.name = "b"}, %dy: tensor<2x100x96xbf16> {trn.name = "dy"},
                      %xw: tensor<130x600xbf16> {trn.name = "xw"}, %ww: tensor<600xbf16> {trn.name = "ww"},
                      %bw: tensor<600xbf16> {trn.name = "bw"}, %dyw: tensor<130x600xbf16> {trn.name = "dyw"},
                      %x2: tensor<4x50x12xbf16> {trn.name = "x2"}, %w2: tensor<50x12xbf16> {trn.name = "w2"},
                      %b2: tensor<50x12xbf16> {trn.name = "b2"}, %dy2: tensor<4x50x12xbf16> {trn.name = "dy2"})
    -> (tensor<2x100x96xbf16> {trn.name = "y"}, tensor<2x100xf32> {trn.name = "mean"},
        tensor<2x100xf32> {trn.name = "rstd"}, tensor<2x100x96xbf16> {trn.name = "dx"},
        tensor<96xbf16> {trn.name = "dw"}, tensor<96xbf16> {trn.name = "db"},
        tensor<130x600xbf16> {trn.name = "yw"}, tensor<130xf32> {trn.name = "meanw"},
        tensor<130xf32> {trn.name = "rstdw"}, tensor<130x600xbf16> {trn.name = "dxw"},
        tensor<600xbf16> {trn.name = "dww"}, tensor<600xbf16> {trn.name = "dbw"},
        tensor<4x50x12xbf16> {trn.name = "y2"}, tensor<4xf32> {trn.name = "mean2"},
        tensor<4xf32> {trn.name = "rstd2"}, tensor<4x50x12xbf16> {trn.name = "dx2"},
        tensor<50x12xbf16> {trn.name = "dw2"}, tensor<50x12xbf16> {trn.name = "db2"}) {
  %y:3 = trn.layer_norm %x, %w, %b, axis = 2, eps = 1.0e-05 : (tensor<2x100x96xbf16>, tensor<96xbf16>, tensor<96xbf16>) -> (tensor<2x100x96xbf16>, tensor<2x100xf32>, tensor<2x100xf32>)
  %g:3 = trn.layer_norm_grad %dy, %x, %y#1, %y#2, %w, axis = 2 : (tensor<2x100x96xbf16>, tensor<2x100x96xbf16>, tensor<2x100xf32>, tensor<2x100xf32>, tensor<96xbf16>) -> (tensor<2x100x96xbf16>, tensor<96xbf16>, tensor<96xbf16>)
  %yw:3 = trn.layer_norm %xw, %ww, %bw, axis = 1, eps = 1.0e-05 : (tensor<130x600xbf16>, tensor<600xbf16>, tensor<600xbf16>) -> (tensor<130x600xbf16>, tensor<130xf32>, tensor<130xf32>)
  %gw:3 = trn.layer_norm_grad %dyw, %xw, %yw#1, %yw#2, %ww, axis = 1 : (tensor<130x600xbf16>, tensor<130x600xbf16>, tensor<130xf32>, tensor<130xf32>, tensor<600xbf16>) -> (tensor<130x600xbf16>, tensor<600xbf16>, tensor<600xbf16>)
  %y2:3 = trn.layer_norm %x2, %w2, %b2, axis = 1, eps = 1.0e-05 : (tensor<4x50x12xbf16>, tensor<50x12xbf16>, tensor<50x12xbf16>) -> (tensor<4x50x12xbf16>, tensor<4xf32>, tensor<4xf32>)
  %g2:3 = trn.layer_norm_grad %dy2, %x2, %y2#1, %y2#2, %w2, axis = 1 : (tensor<4x50x12xbf16>, tensor<4x50x12xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<50x12xbf16>) -> (tensor<4x50x12xbf16>, tensor<50x12xbf16>, tensor<50x12xbf16>)
  return %y#0, %y#1, %y#2, %g#0, %g#1, %g#2, %yw#0, %yw#1, %yw#2, %gw#0, %gw#1, %gw#2, %y2#0, %y2#1, %y2#2, %g2#0, %g2#1, %g2#2
      : tensor<2x100x96xbf16>, tensor<2x100xf32>, tensor<2x100xf32>, tensor<2x100x96xbf16>, tensor<96xbf16>, tensor<96xbf16>,
        tensor<130x600xbf16>, tensor<130xf32>, tensor<130xf32>, tensor<130x600xbf16>, tensor<600xbf16>, tensor<600xbf16>,
        tensor<4x50x12xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4x50x12xbf16>, tensor<50x12xbf16>, tensor<50x12xbf16>
}
