// RUN: trn-opt %s -trn-mark-optimizer -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s

// Each run of one kind of trn op is marked before its instructions: a
// matmul, elementwise ops, a transpose, the optimizer's update and the
// copy of a result into its output. Consecutive ops of a kind share one
// marker.
// CHECK-LABEL: func.func @step
// CHECK: nc.kind "matmul"
// CHECK: nc.matmul
// CHECK-NOT: nc.kind "matmul"
// CHECK: nc.kind "elementwise"
// CHECK-NOT: nc.kind
// CHECK: nc.activation exp
// CHECK-NOT: nc.kind
// CHECK: nc.tensor_tensor multiply
// CHECK: nc.kind "data_movement"
// CHECK: nc.kind "optimizer"
// CHECK: nc.tensor_tensor subtract
// CHECK: return
func.func @step(%x: tensor<128x64xbf16> {trn.role = "data"},
                %w: tensor<64x64xbf16> {trn.role = "parameter"},
                %lr: tensor<64x64xf32> {trn.role = "hyperparameter"},
                %v: tensor<64x64xf32> {trn.role = "parameter"})
    -> (tensor<128x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %y = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xbf16>, tensor<64x64xbf16>) -> tensor<128x64xf32>
  %e = trn.exp %y : tensor<128x64xf32>
  %m = trn.mul %e, %e : tensor<128x64xf32>
  %t = trn.transpose %v, perm = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %u = trn.sub %v, %lr : tensor<64x64xf32>
  return %m, %t, %u : tensor<128x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
