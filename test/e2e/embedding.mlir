// Token embedding forward (trn.gather of table rows by i32 ids) and backward
// (trn.scatter_add of the output gradient into a zero table; repeated ids
// accumulate): vocabulary 600, hidden 96, ids [2, 100], in f32 and (through
// sed) bf16. The reference evaluator runs the graph.
//
// NOT LOWERED YET: convert-trn-to-nc lowers neither trn.gather nor
// trn.scatter_add (the nc dialect's indirect DMA is not used yet), so trn-cc
// stops with an error naming trn.gather; embedding-grad.mlir checks the
// error for trn.scatter_add. With i64 ids the message is the same: gather is
// refused before its index type is looked at. Once they lower, replace the
// trn-cc checks with the lines of softmax.mlir (trn-cc compile, trn-eval
// --random 18 --int-max 50 so that ids repeat, trn-run --poison,
// compare.py 1e-4 for f32, 2e-2 for bf16; 2 outputs).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 18 --int-max 50 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: not trn-cc compile %s -o %t/a.trnart --no-cache 2>&1 | FileCheck %s
// RUN: not test -e %t/a.trnart
// RUN: sed 's/xf32>/xbf16>/g' %s | not trn-cc compile - -o %t/a.trnart --no-cache 2>&1 | FileCheck %s
// RUN: sed 's/xi32>/xi64>/g' %s | not trn-cc compile - -o %t/a.trnart --no-cache 2>&1 | FileCheck %s
// CHECK: trn-cc: error: {{.*}}:[[@LINE+5]]:{{[0-9]+}}: 'trn.gather' is not lowered to NeuronCore kernels yet

func.func @embedding(%table: tensor<600x96xf32> {trn.name = "table"}, %ids: tensor<2x100xi32> {trn.name = "ids"},
                     %dy: tensor<2x100x96xf32> {trn.name = "dy"})
    -> (tensor<2x100x96xf32> {trn.name = "y"}, tensor<600x96xf32> {trn.name = "dtable"}) {
  %y = trn.gather %table[%ids], axis = 0 : (tensor<600x96xf32>, tensor<2x100xi32>) -> tensor<2x100x96xf32>
  %zero = trn.constant dense<0.0> : tensor<600x96xf32>
  %dtable = trn.scatter_add %zero[%ids], %dy, axis = 0 : (tensor<600x96xf32>, tensor<2x100xi32>, tensor<2x100x96xf32>) -> tensor<600x96xf32>
  return %y, %dtable : tensor<2x100x96xf32>, tensor<600x96xf32>
}
