// RUN: trn-opt %s -dist-pipeline-stages=pp=2 | FileCheck %s

// A two-layer step, partitioned for data parallelism (one replica's step):
// the forward reads x, layers.0 and layers.1 in turn; the loss is averaged
// over dp; the backward gives each weight's gradient, averaged over dp; SGD
// updates the weights.
//
// The pp axis joins the mesh after dp. Each layer's weights are a stage;
// the forward runs on the latest stage of its inputs, the backward beside
// its layer's weights, or where the activations and gradients it reads
// are (h, made on stage 0, is read by stage 1's forward, so h's transpose
// for layers.1's gradient is made on stage 1), the dp collectives and the
// update once per step beside the gradient or weight they read. The
// broadcast of the learning rate stays unmarked: every fragment that needs
// it makes its own.
// CHECK: dist.mesh @mesh <dp = 2, pp = 2>
// CHECK-LABEL: func.func @step
// CHECK-SAME: dist.stage = 0 : i64, trn.name = "layers.0.weight"
// CHECK-SAME: dist.stage = 1 : i64, trn.name = "layers.1.weight"
// CHECK-SAME: dist.stage = 0 : i64, trn.name = "x"
// CHECK: %[[H:.*]] = trn.dot_general %arg3, %arg0{{.*}}{dist.phase = "forward", dist.stage = 0 : i64}
// CHECK: %[[Y:.*]] = trn.dot_general %[[H]], %arg1{{.*}}{dist.phase = "forward", dist.stage = 1 : i64}
// CHECK: trn.mul {{.*}}{dist.phase = "forward", dist.stage = 1 : i64}
// CHECK: trn.reduce sum {{.*}}{dist.phase = "forward", dist.stage = 1 : i64}
// CHECK: dist.all_reduce mean {{.*}}{dist.phase = "update", dist.stage = 1 : i64} : tensor<f32>
// CHECK: trn.transpose %arg1{{.*}}{dist.phase = "backward", dist.stage = 1 : i64}
// CHECK: %[[DH:.*]] = trn.dot_general %[[Y]], {{.*}}{dist.phase = "backward", dist.stage = 1 : i64}
// CHECK: trn.transpose %[[H]]{{.*}}{dist.phase = "backward", dist.stage = 1 : i64}
// CHECK: %[[G1:.*]] = trn.dot_general {{.*}}{dist.phase = "backward", dist.stage = 1 : i64}
// CHECK: trn.transpose %arg3{{.*}}{dist.phase = "backward", dist.stage = 0 : i64}
// CHECK: %[[G0:.*]] = trn.dot_general {{.*}}, %[[DH]]{{.*}}{dist.phase = "backward", dist.stage = 0 : i64}
// CHECK: dist.all_reduce mean %[[G1]] {{.*}}{dist.phase = "update", dist.stage = 1 : i64}
// CHECK: dist.all_reduce mean %[[G0]] {{.*}}{dist.phase = "update", dist.stage = 0 : i64}
// CHECK: trn.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
// CHECK: trn.sub %arg0, {{.*}}{dist.phase = "update", dist.stage = 0 : i64}
// CHECK: trn.sub %arg1, {{.*}}{dist.phase = "update", dist.stage = 1 : i64}
dist.mesh @mesh <dp = 2>
func.func @step(
    %w0: tensor<4x4xf32> {trn.name = "layers.0.weight", trn.role = "parameter"},
    %w1: tensor<4x4xf32> {trn.name = "layers.1.weight", trn.role = "parameter"},
    %lr: tensor<f32> {trn.name = "lr", trn.role = "hyperparameter"},
    %x: tensor<2x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x", trn.role = "data"})
    -> (tensor<f32> {trn.name = "loss", trn.role = "loss"},
        tensor<4x4xf32> {trn.aliases = 0 : i64, trn.name = "layers.0.weight", trn.role = "parameter"},
        tensor<4x4xf32> {trn.aliases = 1 : i64, trn.name = "layers.1.weight", trn.role = "parameter"})
    attributes {dist.replica_axes = ["dp"], dist.spmd} {
  %h = trn.dot_general %x, %w0, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = trn.dot_general %h, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %sq = trn.mul %y, %y : tensor<2x4xf32>
  %s = trn.reduce sum %sq, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %loss = dist.all_reduce mean %s on @mesh axes = ["dp"] : tensor<f32>
  %w1t = trn.transpose %w1, perm = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dh = trn.dot_general %y, %w1t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %ht = trn.transpose %h, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g1 = trn.dot_general %ht, %y, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %xt = trn.transpose %x, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g0 = trn.dot_general %xt, %dh, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %g1r = dist.all_reduce mean %g1 on @mesh axes = ["dp"] : tensor<4x4xf32>
  %g0r = dist.all_reduce mean %g0 on @mesh axes = ["dp"] : tensor<4x4xf32>
  %lrb = trn.broadcast_in_dim %lr, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %u0 = trn.mul %g0r, %lrb : tensor<4x4xf32>
  %n0 = trn.sub %w0, %u0 : tensor<4x4xf32>
  %u1 = trn.mul %g1r, %lrb : tensor<4x4xf32>
  %n1 = trn.sub %w1, %u1 : tensor<4x4xf32>
  return %loss, %n0, %n1 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
}

