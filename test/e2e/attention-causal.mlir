// Causal scaled dot-product attention and its gradient in f32:
// batch 2, 2 heads, 200 queries and 200 keys (top-left aligned mask), head
// size 40, value size 24.
//
// NOT LOWERED YET: the decomposition of `causal` builds the mask from
// trn.iota, which convert-trn-to-nc does not lower, so trn-cc stops with an
// error naming trn.iota at the attention op's location. The reference
// evaluator runs the graph. Once trn.iota lowers, replace the trn-cc check
// with the lines of attention.mlir (trn-cc compile, trn-eval --random 16,
// trn-run --poison, compare.py with tolerance 1e-4, 5 outputs).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 16 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: not trn-cc compile %s -o %t/a.trnart --no-cache 2>&1 | FileCheck %s
// RUN: not test -e %t/a.trnart
// CHECK: trn-cc: error: {{.*}}attention-causal.mlir:[[@LINE+7]]:{{[0-9]+}}: 'trn.iota' is not lowered to NeuronCore kernels yet

func.func @attention_causal(%q: tensor<2x2x200x40xf32> {trn.name = "q"}, %k: tensor<2x2x200x40xf32> {trn.name = "k"},
                     %v: tensor<2x2x200x24xf32> {trn.name = "v"}, %do: tensor<2x2x200x24xf32> {trn.name = "do"})
    -> (tensor<2x2x200x24xf32> {trn.name = "o"}, tensor<2x2x200xf32> {trn.name = "lse"},
        tensor<2x2x200x40xf32> {trn.name = "dq"}, tensor<2x2x200x40xf32> {trn.name = "dk"},
        tensor<2x2x200x24xf32> {trn.name = "dv"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.15811388300841897 causal : (tensor<2x2x200x40xf32>, tensor<2x2x200x40xf32>, tensor<2x2x200x24xf32>) -> (tensor<2x2x200x24xf32>, tensor<2x2x200xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.15811388300841897 causal : (tensor<2x2x200x40xf32>, tensor<2x2x200x40xf32>, tensor<2x2x200x24xf32>, tensor<2x2x200x24xf32>, tensor<2x2x200xf32>, tensor<2x2x200x24xf32>) -> (tensor<2x2x200x40xf32>, tensor<2x2x200x40xf32>, tensor<2x2x200x24xf32>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x2x200x24xf32>, tensor<2x2x200xf32>, tensor<2x2x200x40xf32>, tensor<2x2x200x40xf32>, tensor<2x2x200x24xf32>
}
