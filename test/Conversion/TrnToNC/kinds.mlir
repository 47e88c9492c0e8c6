// RUN: trn-opt %s -trn-mark-optimizer -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s

// Every trn op's instructions are marked with its kind and its name (the
// origin profiles list): a matmul, elementwise ops, a transpose, the
// optimizer's update and the copies of results into their outputs.
// CHECK-LABEL: func.func @step
// CHECK: nc.kind "matmul" {origin = "step: trn.dot_general #0"}
// CHECK: nc.matmul
// CHECK: nc.kind "elementwise" {origin = "step: trn.exp #1"}
// CHECK-NEXT: nc.hbm_alloc
// CHECK: nc.activation exp
// CHECK: nc.kind "elementwise" {origin = "step: trn.mul #2"}
// CHECK: nc.tensor_tensor multiply
// CHECK: nc.kind "data_movement" {origin = "step: trn.transpose #3"}
// CHECK: nc.kind "optimizer" {origin = "step: trn.sub #4"}
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
