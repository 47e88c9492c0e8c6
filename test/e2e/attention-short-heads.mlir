// Attention and its gradient on short heads (BERT's 128 tokens): both
// kernels load each operand of eight heads with one DMA; the forward runs
// the group's heads phase by phase and stores their outputs and lse with
// one DMA each, the backward its dQ, dK and dV, when the heads are evenly
// spaced (not across the batch of a seq_dim layout). [batch 2, sequence
// 96, heads 6, D] as a projection leaves them (seq_dim = 1: the heads of a
// token are contiguous; 12 heads, groups of 8 and 4) and canonical
// [3, 5, 128, 32] operands (15 heads: groups of 8 and 7), causal and not;
// compiled by trn-cc and run on the simulator, they match the reference
// evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 13 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 10 outputs match
func.func @short_heads(%q: tensor<2x96x6x40xf32>, %k: tensor<2x96x6x40xf32>, %v: tensor<2x96x6x24xf32>, %do: tensor<2x96x6x24xf32>,
                       %q2: tensor<3x5x128x32xf32>, %k2: tensor<3x5x128x32xf32>, %v2: tensor<3x5x128x32xf32>, %do2: tensor<3x5x128x32xf32>)
    -> (tensor<2x96x6x24xf32>, tensor<2x6x96xf32>, tensor<2x96x6x40xf32>, tensor<2x96x6x40xf32>, tensor<2x96x6x24xf32>,
        tensor<3x5x128x32xf32>, tensor<3x5x128xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.15811388300841897 causal seq_dim = 1 : (tensor<2x96x6x40xf32>, tensor<2x96x6x40xf32>, tensor<2x96x6x24xf32>) -> (tensor<2x96x6x24xf32>, tensor<2x6x96xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.15811388300841897 causal seq_dim = 1 : (tensor<2x96x6x40xf32>, tensor<2x96x6x40xf32>, tensor<2x96x6x24xf32>, tensor<2x96x6x24xf32>, tensor<2x6x96xf32>, tensor<2x96x6x24xf32>) -> (tensor<2x96x6x40xf32>, tensor<2x96x6x40xf32>, tensor<2x96x6x24xf32>)
  %o2, %lse2 = trn.attention %q2, %k2, %v2, scale = 0.17677669529663687 : (tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>) -> (tensor<3x5x128x32xf32>, tensor<3x5x128xf32>)
  %dq2, %dk2, %dv2 = trn.attention_grad %q2, %k2, %v2, %o2, %lse2, %do2, scale = 0.17677669529663687 : (tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128xf32>, tensor<3x5x128x32xf32>) -> (tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>)
  return %o, %lse, %dq, %dk, %dv, %o2, %lse2, %dq2, %dk2, %dv2 : tensor<2x96x6x24xf32>, tensor<2x6x96xf32>, tensor<2x96x6x40xf32>, tensor<2x96x6x40xf32>, tensor<2x96x6x24xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>, tensor<3x5x128x32xf32>
}
