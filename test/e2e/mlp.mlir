// An MLP layer step (matmul, bias broadcast, gelu, reductions, transposed
// weights) compiled to NeuronCore kernels and run on the simulator matches the
// reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-opt %s -convert-trn-to-nc -nc-allocate -nc-insert-sync | trn-translate --nc-to-artifact -o %t/mlp.trnart
// RUN: trn-eval %s --random 5 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/mlp.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 5 outputs match
// --auto-cast: matmul inputs in bf16 or fp8_e4m3 (fp32 accumulation), or all
// elementwise arithmetic in bf16 too, stay within the cast type's error of
// the f32 reference.
// RUN: trn-cc compile %s -o %t/bf16.trnart --no-cache -q --auto-cast matmul
// RUN: trn-run %t/bf16.trnart --inputs %t/in.npz --outputs %t/bf16.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/bf16.npz 1e-2 | FileCheck %s
// RUN: trn-cc compile %s -o %t/fp8.trnart --no-cache -q --auto-cast matmul --auto-cast-type fp8_e4m3
// RUN: trn-run %t/fp8.trnart --inputs %t/in.npz --outputs %t/fp8.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/fp8.npz 1e-1 | FileCheck %s
// RUN: trn-cc compile %s -o %t/all.trnart --no-cache -q --auto-cast all
// RUN: trn-run %t/all.trnart --inputs %t/in.npz --outputs %t/all.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/all.npz 2e-2 | FileCheck %s
// RUN: not trn-cc compile %s -o %t/x.trnart --no-cache --auto-cast all --auto-cast-type fp8_e4m3 2>&1 | FileCheck %s --check-prefix=ALL-FP8
// ALL-FP8: trn-cc: error: {{.*}}mlp.mlir: --auto-cast all casts to bf16 only; use --auto-cast matmul with --auto-cast-type fp8_e4m3

func.func @mlp(%x: tensor<200x96xf32> {trn.name = "x"}, %w: tensor<160x96xf32> {trn.name = "w"},
               %b: tensor<160xf32> {trn.name = "b"}, %v: tensor<160x40xbf16> {trn.name = "v"})
    -> (tensor<200x160xf32> {trn.name = "h"}, tensor<200xf32> {trn.name = "row_max"},
        tensor<160xf32> {trn.name = "col_sum"}, tensor<200x40xf32> {trn.name = "y"},
        tensor<160x200xf32> {trn.name = "h_t"}) {
  // x @ w^T (nn.Linear layout) + b, then tanh-gelu.
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<200x96xf32>, tensor<160x96xf32>) -> tensor<200x160xf32>
  %1 = trn.broadcast_in_dim %b, dims = [1] : (tensor<160xf32>) -> tensor<200x160xf32>
  %2 = trn.add %0, %1 : tensor<200x160xf32>
  %h = trn.gelu %2 approximate = tanh : tensor<200x160xf32>
  %mx = trn.reduce max %h, dims = [1] : (tensor<200x160xf32>) -> tensor<200xf32>
  %cs = trn.reduce sum %h, dims = [0] : (tensor<200x160xf32>) -> tensor<160xf32>
  // A bf16 matmul: h (converted) @ v, accumulated in fp32.
  %hb = trn.convert %h : tensor<200x160xf32> -> tensor<200x160xbf16>
  %y = trn.dot_general %hb, %v, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<200x160xbf16>, tensor<160x40xbf16>) -> tensor<200x40xf32>
  %ht = trn.transpose %h, perm = [1, 0] : (tensor<200x160xf32>) -> tensor<160x200xf32>
  return %h, %mx, %cs, %y, %ht : tensor<200x160xf32>, tensor<200xf32>, tensor<160xf32>, tensor<200x40xf32>, tensor<160x200xf32>
}
