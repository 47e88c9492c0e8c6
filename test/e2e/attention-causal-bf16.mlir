// Causal scaled dot-product attention and its gradient in bf16 (lse stays f32):
// batch 2, 2 heads, 200 queries and 200 keys (top-left aligned mask), head
// size 40, value size 24.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 16 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 2e-2 | FileCheck %s
// CHECK: outputs match

func.func @attention_causal_bf16(%q: tensor<2x2x200x40xbf16> {trn.name = "q"}, %k: tensor<2x2x200x40xbf16> {trn.name = "k"},
                     %v: tensor<2x2x200x24xbf16> {trn.name = "v"}, %do: tensor<2x2x200x24xbf16> {trn.name = "do"})
    -> (tensor<2x2x200x24xbf16> {trn.name = "o"}, tensor<2x2x200xf32> {trn.name = "lse"},
        tensor<2x2x200x40xbf16> {trn.name = "dq"}, tensor<2x2x200x40xbf16> {trn.name = "dk"},
        tensor<2x2x200x24xbf16> {trn.name = "dv"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.15811388300841897 causal : (tensor<2x2x200x40xbf16>, tensor<2x2x200x40xbf16>, tensor<2x2x200x24xbf16>) -> (tensor<2x2x200x24xbf16>, tensor<2x2x200xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.15811388300841897 causal : (tensor<2x2x200x40xbf16>, tensor<2x2x200x40xbf16>, tensor<2x2x200x24xbf16>, tensor<2x2x200x24xbf16>, tensor<2x2x200xf32>, tensor<2x2x200x24xbf16>) -> (tensor<2x2x200x40xbf16>, tensor<2x2x200x40xbf16>, tensor<2x2x200x24xbf16>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x2x200x24xbf16>, tensor<2x2x200xf32>, tensor<2x2x200x40xbf16>, tensor<2x2x200x40xbf16>, tensor<2x2x200x24xbf16>
}
