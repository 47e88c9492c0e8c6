// RUN: trn-opt %s -dist-pipeline-stages=pp=2 -dist-pipeline-split=microbatches=2 -split-input-file -verify-diagnostics

// A step that returns a per-example value (the logits, split over dp)
// cannot be cut into microbatches: only batch-reduced results can be.
dist.mesh @mesh <dp = 2>
// expected-error@+1 {{result 1 is computed per example; a step split into microbatches returns only values reduced over the batch}}
func.func @step(
    %w0: tensor<4x4xf32> {trn.name = "layers.0.weight", trn.role = "parameter"},
    %w1: tensor<4x4xf32> {trn.name = "layers.1.weight", trn.role = "parameter"},
    %x: tensor<2x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x", trn.role = "data"})
    -> (tensor<f32> {trn.name = "loss", trn.role = "loss"},
        tensor<2x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "logits"})
    attributes {dist.replica_axes = ["dp"], dist.spmd} {
  %h = trn.dot_general %x, %w0, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = trn.dot_general %h, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = trn.reduce sum %y, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %loss = dist.all_reduce mean %s on @mesh axes = ["dp"] : tensor<f32>
  return %loss, %y : tensor<f32>, tensor<2x4xf32>
}
