// Resharding collectives give the unpartitioned values: a pending sum
// reduce-scattered before a transpose (the constraint wants rows split over
// dp), and one passed through a transpose and all-reduced once for two uses.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 2 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-opt %s -dist-propagate -dist-spmd -o %t/part.mlir
// RUN: FileCheck %s --check-prefix=PART < %t/part.mlir
// PART: dist.reduce_scatter
// RUN: trn-eval %t/part.mlir --inputs %t/in.npz --outputs %t/out.npz > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-6 | FileCheck %s
// CHECK: 4 outputs match

dist.mesh @mesh <dp = 2>
func.func @reshard(%x: tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
                   %y: tensor<6x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>})
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %g = trn.dot_general %x, %y, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<6x8xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  %t = trn.transpose %g, perm = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %c = dist.sharding_constraint %t <@mesh, [{"dp"}, {}]> : tensor<4x8xf32>
  %a = trn.exp %c : tensor<4x8xf32>
  %b = trn.tanh %c : tensor<4x8xf32>
  %g2 = trn.dot_general %x, %y, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<6x8xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  %t2 = trn.transpose %g2, perm = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %e = trn.exp %t2 : tensor<4x8xf32>
  %h = trn.tanh %t2 : tensor<4x8xf32>
  return %a, %b, %e, %h : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
