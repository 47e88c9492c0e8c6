// Causal attention and its gradient with `seq_dim = 1`: query, key, value,
// output and their gradients are [batch 2, sequence 200, heads 3, D] as a
// projection leaves them (no head transposes), head size 40, value size 24.
// The compiled kernels, the evaluator and the decomposition must agree, and
// the evaluator must agree with the same attention written with explicit
// transposes around canonical [B, H, S, D] operands
// (Inputs/attention-seq-dim-transposed.mlir).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 17 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-eval %S/Inputs/attention-seq-dim-transposed.mlir --inputs %t/in.npz --outputs %t/transposed.npz > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/transposed.npz %t/ref.npz 1e-12 | FileCheck %s
// RUN: trn-opt %s --trn-decompose-composites -o %t/decomposed.mlir
// RUN: trn-eval %t/decomposed.mlir --inputs %t/in.npz --outputs %t/decomposed.npz > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/decomposed.npz 1e-6 | FileCheck %s
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: outputs match

func.func @attention_seq_dim(%q: tensor<2x200x3x40xf32> {trn.name = "q"}, %k: tensor<2x200x3x40xf32> {trn.name = "k"},
                     %v: tensor<2x200x3x24xf32> {trn.name = "v"}, %do: tensor<2x200x3x24xf32> {trn.name = "do"})
    -> (tensor<2x200x3x24xf32> {trn.name = "o"}, tensor<2x3x200xf32> {trn.name = "lse"},
        tensor<2x200x3x40xf32> {trn.name = "dq"}, tensor<2x200x3x40xf32> {trn.name = "dk"},
        tensor<2x200x3x24xf32> {trn.name = "dv"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.15811388300841897 causal seq_dim = 1 : (tensor<2x200x3x40xf32>, tensor<2x200x3x40xf32>, tensor<2x200x3x24xf32>) -> (tensor<2x200x3x24xf32>, tensor<2x3x200xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.15811388300841897 causal seq_dim = 1 : (tensor<2x200x3x40xf32>, tensor<2x200x3x40xf32>, tensor<2x200x3x24xf32>, tensor<2x200x3x24xf32>, tensor<2x3x200xf32>, tensor<2x200x3x24xf32>) -> (tensor<2x200x3x40xf32>, tensor<2x200x3x40xf32>, tensor<2x200x3x24xf32>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x200x3x24xf32>, tensor<2x3x200xf32>, tensor<2x200x3x40xf32>, tensor<2x200x3x40xf32>, tensor<2x200x3x24xf32>
}
