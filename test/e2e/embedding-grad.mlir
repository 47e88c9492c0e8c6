// Token embedding backward alone: trn.scatter_add of the output gradient
// [2, 100, 96] into a zero table [600, 96] by i32 ids (repeated ids
// accumulate), in f32 and (through sed) bf16. The reference evaluator runs
// the graph.
//
// NOT LOWERED YET: convert-trn-to-nc does not lower trn.scatter_add, so
// trn-cc stops with an error naming it. Once it lowers, replace the trn-cc
// checks with the lines of softmax.mlir (trn-cc compile, trn-eval --random 19
// --int-max 50 so that ids repeat, trn-run --poison, compare.py 1e-4 for
// f32, 2e-2 for bf16; 1 output).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 19 --int-max 50 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: not trn-cc compile %s -o %t/a.trnart --no-cache 2>&1 | FileCheck %s
// RUN: not test -e %t/a.trnart
// RUN: sed 's/xf32>/xbf16>/g' %s | not trn-cc compile - -o %t/a.trnart --no-cache 2>&1 | FileCheck %s
// CHECK: trn-cc: error: {{.*}}:[[@LINE+5]]:{{[0-9]+}}: 'trn.scatter_add' is not lowered to NeuronCore kernels yet

func.func @embedding_grad(%ids: tensor<2x100xi32> {trn.name = "ids"}, %dy: tensor<2x100x96xf32> {trn.name = "dy"})
    -> (tensor<600x96xf32> {trn.name = "dtable"}) {
  %zero = trn.constant dense<0.0> : tensor<600x96xf32>
  %dtable = trn.scatter_add %zero[%ids], %dy, axis = 0 : (tensor<600x96xf32>, tensor<2x100xi32>, tensor<2x100x96xf32>) -> tensor<600x96xf32>
  return %dtable : tensor<600x96xf32>
}
