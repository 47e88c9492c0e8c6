// Matmuls whose K is too large for a resident panel and whose result fits
// in SBUF (an MLM head's input gradient: K = the vocabulary) run K in chunks
// outermost: each chunk's panel is resident, each M block's partial sums
// accumulate in fp32 SBUF across chunks. K not a multiple of 128 over two
// chunks (48 + 7 K tiles), M over two blocks, an epilogue (bias, ReLU) and
// a weight stored [N, K]; compiled by trn-cc and run on the simulator, they
// match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 7 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 2 outputs match
// One Vector add per M block of each matmul (the second chunk's sums into
// the first's), none other.
// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s --check-prefix=IR
// IR-COUNT-4: nc.tensor_tensor add {{.*}}, <psum, {{[0-9]+}}x300xf32>
// IR-NOT: nc.tensor_tensor add {{.*}}, <psum
func.func @mm(%a: tensor<200x7000xf32>, %b: tensor<7000x300xf32>, %bias: tensor<300xf32>, %c: tensor<300x7000xf32>) -> (tensor<200x300xf32>, tensor<200x300xf32>) {
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<200x7000xf32>, tensor<7000x300xf32>) -> tensor<200x300xf32>
  %1 = trn.broadcast_in_dim %bias, dims = [1] : (tensor<300xf32>) -> tensor<200x300xf32>
  %2 = trn.add %0, %1 : tensor<200x300xf32>
  %3 = trn.constant dense<0.0> : tensor<200x300xf32>
  %4 = trn.max %2, %3 : tensor<200x300xf32>
  %5 = trn.dot_general %a, %c, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<200x7000xf32>, tensor<300x7000xf32>) -> tensor<200x300xf32>
  return %4, %5 : tensor<200x300xf32>, tensor<200x300xf32>
}
