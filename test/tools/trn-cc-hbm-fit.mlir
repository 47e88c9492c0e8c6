// A step whose tensors do not fit one core's HBM is the user's to fix (a
// smaller batch, partitioning), not an internal compiler error: trn-cc says
// how much it needs against what the core has, and exits 1 in a fraction of a
// second (the lowering of a 16 GiB elementwise op is cheap).
// RUN: not trn-cc compile %s --no-cache -o %t.trnart 2>&1 | FileCheck %s
// RUN: not trn-cc compile %s --no-cache -o %t.trnart --target trn2 2>&1 | FileCheck %s --check-prefix=TRN2
// CHECK: trn-cc: error: {{.*}}trn-cc-hbm-fit.mlir:{{[0-9]+}}:{{[0-9]+}}: the step needs 32.0 GiB of device memory (HBM) for its inputs, outputs and intermediates, more than the 16.0 GiB of one trn1 core; reduce the batch size or sequence length, or partition the model over more cores
// CHECK-NOT: internal compiler error
// TRN2: more than the {{[0-9.]+}} GiB of one trn2 core
func.func @big(%a: tensor<4x1073741824xf32>) -> tensor<4x1073741824xf32> {
  %0 = trn.neg %a : tensor<4x1073741824xf32>
  return %0 : tensor<4x1073741824xf32>
}
