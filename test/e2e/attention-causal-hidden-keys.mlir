// Causal attention and its gradient with more keys than queries (top-left
// aligned): keys 100..299 are hidden from all 100 queries, so the backward
// kernel skips key blocks 1 and 2 and stores zero gradients for them, and
// key block 0 is only partly visible. f32, 2 heads, head size 24, value 16.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 18 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 5 outputs match

func.func @attention_hidden_keys(%q: tensor<2x100x24xf32> {trn.name = "q"}, %k: tensor<2x300x24xf32> {trn.name = "k"},
                                 %v: tensor<2x300x16xf32> {trn.name = "v"}, %do: tensor<2x100x16xf32> {trn.name = "do"})
    -> (tensor<2x100x16xf32> {trn.name = "o"}, tensor<2x100xf32> {trn.name = "lse"},
        tensor<2x100x24xf32> {trn.name = "dq"}, tensor<2x300x24xf32> {trn.name = "dk"},
        tensor<2x300x16xf32> {trn.name = "dv"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.2 causal : (tensor<2x100x24xf32>, tensor<2x300x24xf32>, tensor<2x300x16xf32>) -> (tensor<2x100x16xf32>, tensor<2x100xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.2 causal : (tensor<2x100x24xf32>, tensor<2x300x24xf32>, tensor<2x300x16xf32>, tensor<2x100x16xf32>, tensor<2x100xf32>, tensor<2x100x16xf32>) -> (tensor<2x100x24xf32>, tensor<2x300x24xf32>, tensor<2x300x16xf32>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x100x16xf32>, tensor<2x100xf32>, tensor<2x100x24xf32>, tensor<2x300x24xf32>, tensor<2x300x16xf32>
}
