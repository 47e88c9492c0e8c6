// RUN: trn-opt %s -split-input-file -dist-pipeline-stages=pp=2 -verify-diagnostics | FileCheck %s

// Explicit cuts: a trn.pipeline_stage marker after the first of three
// layers (whose names carry no layer index) puts the first layer on stage 0
// and the other two on stage 1, not equal runs. A parameter takes the stage
// of the forward ops that first use it; the markers are gone afterwards.
// CHECK-LABEL: func.func @marked
// CHECK-SAME: dist.stage = 0 : i64, trn.name = "embed.weight"
// CHECK-SAME: dist.stage = 1 : i64, trn.name = "mid.weight"
// CHECK-SAME: dist.stage = 1 : i64, trn.name = "head.weight"
// CHECK-NOT: trn.pipeline_stage
// CHECK: %[[H:.*]] = trn.dot_general %arg4, %arg0{{.*}}{dist.phase = "forward", dist.stage = 0 : i64}
// CHECK: %[[M:.*]] = trn.dot_general %[[H]], %arg1{{.*}}{dist.phase = "forward", dist.stage = 1 : i64}
// CHECK: trn.dot_general %[[M]], %arg2{{.*}}{dist.phase = "forward", dist.stage = 1 : i64}
dist.mesh @mesh <dp = 2>
func.func @marked(
    %w0: tensor<4x4xf32> {trn.name = "embed.weight", trn.role = "parameter"},
    %w1: tensor<4x4xf32> {trn.name = "mid.weight", trn.role = "parameter"},
    %w2: tensor<4x4xf32> {trn.name = "head.weight", trn.role = "parameter"},
    %lr: tensor<f32> {trn.name = "lr", trn.role = "hyperparameter"},
    %x: tensor<2x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x", trn.role = "data"})
    -> (tensor<f32> {trn.name = "loss", trn.role = "loss"},
        tensor<4x4xf32> {trn.aliases = 0 : i64, trn.name = "embed.weight", trn.role = "parameter"},
        tensor<4x4xf32> {trn.aliases = 1 : i64, trn.name = "mid.weight", trn.role = "parameter"},
        tensor<4x4xf32> {trn.aliases = 2 : i64, trn.name = "head.weight", trn.role = "parameter"})
    attributes {dist.replica_axes = ["dp"], dist.spmd} {
  %h = trn.dot_general %x, %w0, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %cut = trn.pipeline_stage %h : tensor<2x4xf32>
  %m = trn.dot_general %cut, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = trn.dot_general %m, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %sq = trn.mul %y, %y : tensor<2x4xf32>
  %s = trn.reduce sum %sq, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %loss = dist.all_reduce mean %s on @mesh axes = ["dp"] : tensor<f32>
  %w2t = trn.transpose %w2, perm = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dm = trn.dot_general %y, %w2t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %w1t = trn.transpose %w1, perm = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dh = trn.dot_general %dm, %w1t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %mt = trn.transpose %m, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g2 = trn.dot_general %mt, %y, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %ht = trn.transpose %cut, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g1 = trn.dot_general %ht, %dm, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %xt = trn.transpose %x, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g0 = trn.dot_general %xt, %dh, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %g2r = dist.all_reduce mean %g2 on @mesh axes = ["dp"] : tensor<4x4xf32>
  %g1r = dist.all_reduce mean %g1 on @mesh axes = ["dp"] : tensor<4x4xf32>
  %g0r = dist.all_reduce mean %g0 on @mesh axes = ["dp"] : tensor<4x4xf32>
  %lrb = trn.broadcast_in_dim %lr, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %u0 = trn.mul %g0r, %lrb : tensor<4x4xf32>
  %n0 = trn.sub %w0, %u0 : tensor<4x4xf32>
  %u1 = trn.mul %g1r, %lrb : tensor<4x4xf32>
  %n1 = trn.sub %w1, %u1 : tensor<4x4xf32>
  %u2 = trn.mul %g2r, %lrb : tensor<4x4xf32>
  %n2 = trn.sub %w2, %u2 : tensor<4x4xf32>
  return %loss, %n0, %n1, %n2 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Two markers cut three stages; the mesh has two.
dist.mesh @mesh <dp = 2>
// expected-error @+1 {{the model's trn.pipeline_stage() markers cut its forward into 3 stages but the mesh has pp=2; mark 1 cuts, or drop the markers to cut equal runs of layers}}
func.func @too_many(
    %w0: tensor<4x4xf32> {trn.name = "a.weight", trn.role = "parameter"},
    %x: tensor<2x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x", trn.role = "data"})
    -> (tensor<f32> {trn.name = "loss", trn.role = "loss"})
    attributes {dist.replica_axes = ["dp"], dist.spmd} {
  %c0 = trn.pipeline_stage %x : tensor<2x4xf32>
  %c1 = trn.pipeline_stage %c0 : tensor<2x4xf32>
  %h = trn.dot_general %c1, %w0, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = trn.reduce sum %h, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %loss = dist.all_reduce mean %s on @mesh axes = ["dp"] : tensor<f32>
  return %loss : tensor<f32>
}
