// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s

// A pipeline fragment (stage 1 of 2): it receives stage 0's activation,
// computes and sends the result back; the transfers become nc.recv and
// nc.send on whole HBM tensors along pp, a reshaped operand viewed with the
// shape the send sees.
// CHECK-LABEL: func.func @step.s1.forward(
// CHECK-SAME: attributes {nc.mesh_axes = ["dp", "pp"], nc.mesh_sizes = array<i64: 2, 2>}
// CHECK: %[[IN:.*]] = nc.hbm_alloc "t0" : <4x8xf32>
// CHECK: nc.recv %[[IN]] from 0 axes = ["pp"] tag = 3 : <4x8xf32>
// CHECK: %[[VIEW:.*]] = nc.hbm_reshape %{{.*}} : <4x8xf32> -> <32xf32>
// CHECK: nc.send %[[VIEW]] to 0 axes = ["pp"] tag = 4 : <32xf32>
dist.mesh @mesh <dp = 2, pp = 2>
func.func @step.s1.forward(%w: tensor<4x8xf32> {trn.name = "w"}) -> tensor<4x8xf32>
    attributes {dist.spmd, dist.stage = 1 : i64} {
  %x = dist.recv from 0 on @mesh axis = "pp" tag = 3 : tensor<4x8xf32>
  %y = trn.mul %x, %w : tensor<4x8xf32>
  %r = trn.reshape %y : (tensor<4x8xf32>) -> tensor<32xf32>
  dist.send %r to 0 on @mesh axis = "pp" tag = 4 : tensor<32xf32>
  return %y : tensor<4x8xf32>
}
