// trn.gelu_grad (both approximations), the backward of the MLP activation,
// on [200, 600] in f32 and (through sed) bf16. The reference evaluator runs
// the graph.
//
// NOT LOWERED YET: trn.gelu_grad is neither decomposed by
// trn-decompose-composites nor lowered by convert-trn-to-nc, so trn-cc stops
// with an error naming it. mlp-bf16.mlir and the gpt-block tests spell the
// tanh form out in primitives instead. Once it lowers, replace the trn-cc
// checks with the lines of softmax.mlir (trn-cc compile, trn-eval
// --random 21, trn-run --poison, compare.py 1e-4 for f32, 2e-2 for bf16; 2
// outputs).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 21 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: not trn-cc compile %s -o %t/a.trnart --no-cache 2>&1 | FileCheck %s
// RUN: not test -e %t/a.trnart
// RUN: sed 's/xf32>/xbf16>/g' %s | not trn-cc compile - -o %t/a.trnart --no-cache 2>&1 | FileCheck %s
// CHECK: trn-cc: error: {{.*}}:[[@LINE+4]]:{{[0-9]+}}: 'trn.gelu_grad' is not lowered to NeuronCore kernels yet

func.func @gelu_grad(%dy: tensor<200x600xf32> {trn.name = "dy"}, %x: tensor<200x600xf32> {trn.name = "x"})
    -> (tensor<200x600xf32> {trn.name = "dx_tanh"}, tensor<200x600xf32> {trn.name = "dx_erf"}) {
  %0 = trn.gelu_grad %dy, %x approximate = tanh : tensor<200x600xf32>
  %1 = trn.gelu_grad %dy, %x : tensor<200x600xf32>
  return %0, %1 : tensor<200x600xf32>, tensor<200x600xf32>
}
