// The reference for attention-seq-dim.mlir: the same attention with head
// transposes around canonical [B, H, S, D] operands.
func.func @attention_transposed(%q: tensor<2x200x3x40xf32> {trn.name = "q"}, %k: tensor<2x200x3x40xf32> {trn.name = "k"},
                     %v: tensor<2x200x3x24xf32> {trn.name = "v"}, %do: tensor<2x200x3x24xf32> {trn.name = "do"})
    -> (tensor<2x200x3x24xf32> {trn.name = "o"}, tensor<2x3x200xf32> {trn.name = "lse"},
        tensor<2x200x3x40xf32> {trn.name = "dq"}, tensor<2x200x3x40xf32> {trn.name = "dk"},
        tensor<2x200x3x24xf32> {trn.name = "dv"}) {
  %qt = trn.transpose %q, perm = [0, 2, 1, 3] : (tensor<2x200x3x40xf32>) -> tensor<2x3x200x40xf32>
  %kt = trn.transpose %k, perm = [0, 2, 1, 3] : (tensor<2x200x3x40xf32>) -> tensor<2x3x200x40xf32>
  %vt = trn.transpose %v, perm = [0, 2, 1, 3] : (tensor<2x200x3x24xf32>) -> tensor<2x3x200x24xf32>
  %dot = trn.transpose %do, perm = [0, 2, 1, 3] : (tensor<2x200x3x24xf32>) -> tensor<2x3x200x24xf32>
  %ot, %lse = trn.attention %qt, %kt, %vt, scale = 0.15811388300841897 causal : (tensor<2x3x200x40xf32>, tensor<2x3x200x40xf32>, tensor<2x3x200x24xf32>) -> (tensor<2x3x200x24xf32>, tensor<2x3x200xf32>)
  %dqt, %dkt, %dvt = trn.attention_grad %qt, %kt, %vt, %ot, %lse, %dot, scale = 0.15811388300841897 causal : (tensor<2x3x200x40xf32>, tensor<2x3x200x40xf32>, tensor<2x3x200x24xf32>, tensor<2x3x200x24xf32>, tensor<2x3x200xf32>, tensor<2x3x200x24xf32>) -> (tensor<2x3x200x40xf32>, tensor<2x3x200x40xf32>, tensor<2x3x200x24xf32>)
  %o = trn.transpose %ot, perm = [0, 2, 1, 3] : (tensor<2x3x200x24xf32>) -> tensor<2x200x3x24xf32>
  %dq = trn.transpose %dqt, perm = [0, 2, 1, 3] : (tensor<2x3x200x40xf32>) -> tensor<2x200x3x40xf32>
  %dk = trn.transpose %dkt, perm = [0, 2, 1, 3] : (tensor<2x3x200x40xf32>) -> tensor<2x200x3x40xf32>
  %dv = trn.transpose %dvt, perm = [0, 2, 1, 3] : (tensor<2x3x200x24xf32>) -> tensor<2x200x3x24xf32>
  return %o, %lse, %dq, %dk, %dv : tensor<2x200x3x24xf32>, tensor<2x3x200xf32>, tensor<2x200x3x40xf32>, tensor<2x200x3x40xf32>, tensor<2x200x3x24xf32>
}
