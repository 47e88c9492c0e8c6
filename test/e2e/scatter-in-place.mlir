// scatter_add into the tensor of an operand that dies there (an
// intermediate, and one computed straight into the returned output), and
// with a copy when the operand is read again; run on the simulator, they
// match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 8 --int-max 40 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-5 | FileCheck %s
// CHECK: 3 outputs match
func.func @scatter(%x: tensor<300x40xf32>, %i: tensor<300xi32>, %u: tensor<300xf32>, %rows: tensor<50xi32>, %g: tensor<50x40xf32>) -> (tensor<300x40xf32>, tensor<300x40xf32>, tensor<300x40xf32>) {
  %0 = trn.exp %x : tensor<300x40xf32>
  %1 = trn.scatter_add %0[%i], %u, axis = 1, batch_dims = 1 : (tensor<300x40xf32>, tensor<300xi32>, tensor<300xf32>) -> tensor<300x40xf32>
  %2 = trn.tanh %1 : tensor<300x40xf32>
  %3 = trn.neg %x : tensor<300x40xf32>
  %4 = trn.scatter_add %3[%rows], %g, axis = 0, batch_dims = 0 : (tensor<300x40xf32>, tensor<50xi32>, tensor<50x40xf32>) -> tensor<300x40xf32>
  %5 = trn.tanh %x : tensor<300x40xf32>
  %6 = trn.scatter_add %5[%i], %u, axis = 1, batch_dims = 1 : (tensor<300x40xf32>, tensor<300xi32>, tensor<300xf32>) -> tensor<300x40xf32>
  %7 = trn.add %5, %6 : tensor<300x40xf32>
  return %2, %4, %7 : tensor<300x40xf32>, tensor<300x40xf32>, tensor<300x40xf32>
}
