// Scaled dot-product attention (not causal) and its gradient, compiled by
// trn-cc and run on the simulator, match the reference evaluator. Batch 2,
// 2 heads, 200 queries (two partition tiles), 520 keys (q k^T has N = 520 >
// 512 and p v contracts K = 520 > 128 in five K tiles), head size 40 and
// value size 24. trn.attention lowers through its decomposition (scores,
// softmax with lse, p v); the gradient recomputes p from lse.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 15 --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz --scale q:4
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 5 outputs match

func.func @attention(%q: tensor<2x2x200x40xf32> {trn.name = "q"}, %k: tensor<2x2x520x40xf32> {trn.name = "k"},
                     %v: tensor<2x2x520x24xf32> {trn.name = "v"}, %do: tensor<2x2x200x24xf32> {trn.name = "do"})
    -> (tensor<2x2x200x24xf32> {trn.name = "o"}, tensor<2x2x200xf32> {trn.name = "lse"},
        tensor<2x2x200x40xf32> {trn.name = "dq"}, tensor<2x2x520x40xf32> {trn.name = "dk"},
        tensor<2x2x520x24xf32> {trn.name = "dv"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.15811388300841897 : (tensor<2x2x200x40xf32>, tensor<2x2x520x40xf32>, tensor<2x2x520x24xf32>) -> (tensor<2x2x200x24xf32>, tensor<2x2x200xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.15811388300841897 : (tensor<2x2x200x40xf32>, tensor<2x2x520x40xf32>, tensor<2x2x520x24xf32>, tensor<2x2x200x24xf32>, tensor<2x2x200xf32>, tensor<2x2x200x24xf32>) -> (tensor<2x2x200x40xf32>, tensor<2x2x520x40xf32>, tensor<2x2x520x24xf32>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x2x200x24xf32>, tensor<2x2x200xf32>, tensor<2x2x200x40xf32>, tensor<2x2x520x40xf32>, tensor<2x2x520x24xf32>
}
