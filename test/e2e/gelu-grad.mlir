// trn.gelu_grad (both approximations), the backward of the MLP activation,
// on [200, 600] in f32 and (through sed) bf16. The reference evaluator runs
// the graph.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 21 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// RUN: sed 's/xf32>/xbf16>/g' %s > %t/v0.mlir
// RUN: trn-eval %t/v0.mlir --inputs %t/in.npz --outputs %t/ref0.npz > /dev/null
// RUN: trn-cc compile %t/v0.mlir -o %t/v0.trnart --no-cache -q
// RUN: trn-run %t/v0.trnart --inputs %t/in.npz --outputs %t/out0.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref0.npz %t/out0.npz 2e-2 | FileCheck %s
// CHECK: outputs match

func.func @gelu_grad(%dy: tensor<200x600xf32> {trn.name = "dy"}, %x: tensor<200x600xf32> {trn.name = "x"})
    -> (tensor<200x600xf32> {trn.name = "dx_tanh"}, tensor<200x600xf32> {trn.name = "dx_erf"}) {
  %0 = trn.gelu_grad %dy, %x approximate = tanh : tensor<200x600xf32>
  %1 = trn.gelu_grad %dy, %x : tensor<200x600xf32>
  return %0, %1 : tensor<200x600xf32>, tensor<200x600xf32>
}
