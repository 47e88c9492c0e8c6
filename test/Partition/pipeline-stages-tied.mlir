// RUN: trn-opt %s -dist-pipeline-stages=pp=2 | FileCheck %s --check-prefix=TIED

// A tied weight's gradient: a part from each stage, summed, then averaged
// over dp. The sum is taken once per step (update, on the first stage):
// each part is averaged over the microbatches on its own stage.
// TIED-LABEL: func.func @tied
// TIED: %[[A:.*]] = trn.dot_general {{.*}}{dist.phase = "backward", dist.stage = 0 : i64}
// TIED: %[[B:.*]] = trn.dot_general {{.*}}{dist.phase = "backward", dist.stage = 1 : i64}
// TIED: %[[S:.*]] = trn.add %[[A]], %[[B]] {dist.phase = "update", dist.stage = 0 : i64}
// TIED: dist.all_reduce mean %[[S]] {{.*}}{dist.phase = "update", dist.stage = 0 : i64}
dist.mesh @mesh <dp = 2>
func.func @tied(
    %w0: tensor<4x4xf32> {trn.name = "layers.0.weight", trn.role = "parameter"},
    %w1: tensor<4x4xf32> {trn.name = "layers.1.weight", trn.role = "parameter"},
    %x: tensor<2x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x", trn.role = "data"})
    -> (tensor<f32> {trn.name = "loss", trn.role = "loss"},
        tensor<4x4xf32> {trn.aliases = 0 : i64, trn.name = "layers.0.weight", trn.role = "parameter"})
    attributes {dist.replica_axes = ["dp"], dist.spmd} {
  %h = trn.dot_general %x, %w0, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = trn.dot_general %h, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = trn.reduce sum %y, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %loss = dist.all_reduce mean %s on @mesh axes = ["dp"] : tensor<f32>
  %xt = trn.transpose %x, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %ga = trn.dot_general %xt, %h, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %yt = trn.transpose %y, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %gb = trn.dot_general %yt, %y, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %g = trn.add %ga, %gb : tensor<4x4xf32>
  %gr = dist.all_reduce mean %g on @mesh axes = ["dp"] : tensor<4x4xf32>
  %n0 = trn.sub %w0, %gr : tensor<4x4xf32>
  return %loss, %n0 : tensor<f32>, tensor<4x4xf32>
}
