// attention.mlir in bf16: bf16 q, k, v, grad_output, output and gradients;
// lse stays f32 (the decomposition computes in f32: the bf16 operands are
// converted before the matmuls).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 15 --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz --scale q:4
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 2e-2 | FileCheck %s
// CHECK: 5 outputs match

func.func @attention_bf16(%q: tensor<2x2x200x40xbf16> {trn.name = "q"}, %k: tensor<2x2x520x40xbf16> {trn.name = "k"},
                     %v: tensor<2x2x520x24xbf16> {trn.name = "v"}, %do: tensor<2x2x200x24xbf16> {trn.name = "do"})
    -> (tensor<2x2x200x24xbf16> {trn.name = "o"}, tensor<2x2x200xf32> {trn.name = "lse"},
        tensor<2x2x200x40xbf16> {trn.name = "dq"}, tensor<2x2x520x40xbf16> {trn.name = "dk"},
        tensor<2x2x520x24xbf16> {trn.name = "dv"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.15811388300841897 : (tensor<2x2x200x40xbf16>, tensor<2x2x520x40xbf16>, tensor<2x2x520x24xbf16>) -> (tensor<2x2x200x24xbf16>, tensor<2x2x200xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.15811388300841897 : (tensor<2x2x200x40xbf16>, tensor<2x2x520x40xbf16>, tensor<2x2x520x24xbf16>, tensor<2x2x200x24xbf16>, tensor<2x2x200xf32>, tensor<2x2x200x24xbf16>) -> (tensor<2x2x200x40xbf16>, tensor<2x2x520x40xbf16>, tensor<2x2x520x24xbf16>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x2x200x24xbf16>, tensor<2x2x200xf32>, tensor<2x2x200x40xbf16>, tensor<2x2x520x40xbf16>, tensor<2x2x520x24xbf16>
}
