// Token embedding backward alone: trn.scatter_add of the output gradient
// [2, 100, 96] into a zero table [600, 96] by i32 ids (repeated ids
// accumulate), in f32 and (through sed) bf16. The reference evaluator runs
// the graph.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 19 --int-max 50 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// RUN: sed 's/xf32>/xbf16>/g' %s > %t/v0.mlir
// RUN: trn-eval %t/v0.mlir --inputs %t/in.npz --outputs %t/ref0.npz > /dev/null
// RUN: trn-cc compile %t/v0.mlir -o %t/v0.trnart --no-cache -q
// RUN: trn-run %t/v0.trnart --inputs %t/in.npz --outputs %t/out0.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref0.npz %t/out0.npz 2e-2 | FileCheck %s
// CHECK: outputs match

func.func @embedding_grad(%ids: tensor<2x100xi32> {trn.name = "ids"}, %dy: tensor<2x100x96xf32> {trn.name = "dy"})
    -> (tensor<600x96xf32> {trn.name = "dtable"}) {
  %zero = trn.constant dense<0.0> : tensor<600x96xf32>
  %dtable = trn.scatter_add %zero[%ids], %dy, axis = 0 : (tensor<600x96xf32>, tensor<2x100xi32>, tensor<2x100x96xf32>) -> tensor<600x96xf32>
  return %dtable : tensor<600x96xf32>
}
