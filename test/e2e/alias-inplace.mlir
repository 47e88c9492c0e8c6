// In-place updates: a result with trn.aliases = N (the new value of input N,
// as every optimizer step returns its parameters) is written into the input's
// HBM tensor; the output may carry the input's name.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 1 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-6 | FileCheck %s
// CHECK: 2 outputs match

func.func @alias_inplace(%p: tensor<4x8xf32> {trn.name = "p", trn.role = "parameter"},
                         %g: tensor<4x8xf32> {trn.name = "g", trn.role = "data"})
    -> (tensor<4x8xf32> {trn.name = "p", trn.role = "parameter", trn.aliases = 0},
        tensor<4x8xf32> {trn.name = "pg", trn.role = "output"}) {
  %0 = trn.sub %p, %g : tensor<4x8xf32>
  %1 = trn.mul %g, %p : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
