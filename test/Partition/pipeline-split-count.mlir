// RUN: trn-opt %s -split-input-file -dist-pipeline-stages=pp=2 -dist-pipeline-split=microbatches=2 | FileCheck %s
// RUN: trn-opt %s -split-input-file -dist-pipeline-stages=pp=2 -dist-pipeline-split=microbatches=2 | FileCheck %s --check-prefix=OWN

// A loss that is a mean over the examples whose label is not ignored (-1),
// as cross_entropy(ignore_index=...) is: the sum of the kept rows' losses
// divided by their count. The backward scales each kept row's gradient by
// 1 / count, so the count's all-reduce runs inside the microbatch
// (dist-pipeline-stages). Were it the microbatch's own count, the average of
// the microbatches' losses and gradients would differ from the whole
// batch's when the counts differ. It is computed from the labels alone, so
// stage 1 counts every microbatch's labels (an argument port of the whole
// replica's labels, sliced per microbatch), averages over the 2
// microbatches and all-reduces that: every microbatch scales by the whole
// batch's count (over 2), and the update's average of the microbatches is
// the whole batch's step.
// CHECK-LABEL: func.func @step.s1.forward
// CHECK-SAME: %[[LABELS:[a-z0-9]+]]: tensor<4xi32> {dist.port = #dist.port<"argument", 4>, dist.sharding = #dist.sharding<@mesh, [{"dp"}]>, trn.name = "labels.every_microbatch", trn.role = "label"}
// CHECK: %[[FIRST:.*]] = trn.slice %[[LABELS]], start = [0], limit = [2], strides = [1]
// CHECK: %[[KEPT0:.*]] = trn.compare ne, %[[FIRST]]
// CHECK: %[[COUNT0:.*]] = trn.reduce sum
// CHECK: %[[SECOND:.*]] = trn.slice %[[LABELS]], start = [2], limit = [4], strides = [1]
// CHECK: %[[KEPT1:.*]] = trn.compare ne, %[[SECOND]]
// CHECK: %[[COUNT1:.*]] = trn.reduce sum
// CHECK: %[[BOTH:.*]] = trn.add %[[COUNT0]], %[[COUNT1]] : tensor<f32>
// CHECK: %[[HALF:.*]] = trn.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[AVERAGE:.*]] = trn.mul %[[BOTH]], %[[HALF]] : tensor<f32>
// CHECK: dist.all_reduce mean %[[AVERAGE]] on @mesh axes = ["dp"] : tensor<f32>
// CHECK-LABEL: func.func @step.s1.backward
// The step still takes the labels per microbatch (of 2 rows) beside them.
// CHECK: dist.pipeline @step on @mesh axis = "pp" microbatches = 2
// CHECK-SAME: function_type = (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<4x4xf32>, tensor<4xi32>)

dist.mesh @mesh <dp = 2>
func.func @step(
    %w0: tensor<4x4xf32> {trn.name = "layers.0.weight", trn.role = "parameter"},
    %w1: tensor<4x4xf32> {trn.name = "layers.1.weight", trn.role = "parameter"},
    %lr: tensor<f32> {trn.name = "lr", trn.role = "hyperparameter"},
    %x: tensor<2x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x", trn.role = "data"},
    %labels: tensor<2xi32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}]>, trn.name = "labels", trn.role = "label"})
    -> (tensor<f32> {trn.name = "loss", trn.role = "loss"},
        tensor<4x4xf32> {trn.aliases = 0 : i64, trn.name = "layers.0.weight", trn.role = "parameter"},
        tensor<4x4xf32> {trn.aliases = 1 : i64, trn.name = "layers.1.weight", trn.role = "parameter"})
    attributes {dist.replica_axes = ["dp"], dist.spmd} {
  %h = trn.dot_general %x, %w0, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = trn.dot_general %h, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  // The count of kept rows, over the batch.
  %ignored = trn.constant dense<-1> : tensor<2xi32>
  %kept = trn.compare ne, %labels, %ignored : tensor<2xi32>
  %keptf = trn.convert %kept : tensor<2xi1> -> tensor<2xf32>
  %c = trn.reduce sum %keptf, dims = [0] : (tensor<2xf32>) -> tensor<f32>
  %count = dist.all_reduce mean %c on @mesh axes = ["dp"] : tensor<f32>
  // The kept rows' sum of squares over the count.
  %sq = trn.mul %y, %y : tensor<2x4xf32>
  %rows = trn.reduce sum %sq, dims = [1] : (tensor<2x4xf32>) -> tensor<2xf32>
  %keptrows = trn.mul %rows, %keptf : tensor<2xf32>
  %s = trn.reduce sum %keptrows, dims = [0] : (tensor<2xf32>) -> tensor<f32>
  %sr = dist.all_reduce mean %s on @mesh axes = ["dp"] : tensor<f32>
  %loss = trn.div %sr, %count : tensor<f32>
  // dloss/dy = 2 y kept / count.
  %two = trn.constant dense<2.0> : tensor<f32>
  %scale = trn.div %two, %count : tensor<f32>
  %scaleb = trn.broadcast_in_dim %scale, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %rowscale = trn.mul %keptf, %scaleb : tensor<2xf32>
  %rowscaleb = trn.broadcast_in_dim %rowscale, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>
  %dy = trn.mul %y, %rowscaleb : tensor<2x4xf32>
  %w1t = trn.transpose %w1, perm = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dh = trn.dot_general %dy, %w1t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %ht = trn.transpose %h, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g1 = trn.dot_general %ht, %dy, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
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

// -----

// A statistic of the activations (a batch norm's) is not the labels': it
// stays the microbatch's own.
// OWN-LABEL: func.func @statistic.s1.forward
// OWN-NOT: every_microbatch
// OWN: %[[SQ:.*]] = trn.mul
// OWN: %[[SUM:.*]] = trn.reduce sum %[[SQ]]
// OWN: dist.all_reduce mean %[[SUM]] on @mesh axes = ["dp"]
dist.mesh @mesh <dp = 2>
func.func @statistic(
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
  // The batch's mean square scales each example's gradient.
  %sq = trn.mul %y, %y : tensor<2x4xf32>
  %s = trn.reduce sum %sq, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %loss = dist.all_reduce mean %s on @mesh axes = ["dp"] : tensor<f32>
  %lossb = trn.broadcast_in_dim %loss, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
  %dy = trn.mul %y, %lossb : tensor<2x4xf32>
  %w1t = trn.transpose %w1, perm = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dh = trn.dot_general %dy, %w1t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %ht = trn.transpose %h, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g1 = trn.dot_general %ht, %dy, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
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

// -----

// A value the same in every microbatch (a slice of a buffer), made in a
// microbatch for the forward and read by the update too: the update makes
// it again from the buffer, rather than average it over the microbatches
// (which an integer could not be).
// RUN: trn-opt %s -split-input-file -dist-pipeline-stages=pp=2 -dist-pipeline-split=microbatches=2 | FileCheck %s --check-prefix=SAME
// SAME-LABEL: func.func @buffer.s1.update
// SAME-SAME: %[[TABLE:[a-z0-9]+]]: tensor<8x4xi32> {dist.port = #dist.port<"argument", 4>
// SAME: trn.slice %[[TABLE]], start = [0, 0], limit = [4, 4]
// SAME: return
dist.mesh @mesh <dp = 2>
func.func @buffer(
    %w0: tensor<4x4xf32> {trn.name = "layers.0.weight", trn.role = "parameter"},
    %w1: tensor<4x4xf32> {trn.name = "layers.1.weight", trn.role = "parameter"},
    %lr: tensor<f32> {trn.name = "lr", trn.role = "hyperparameter"},
    %x: tensor<2x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x", trn.role = "data"},
    %table: tensor<8x4xi32> {trn.name = "table", trn.role = "constant"})
    -> (tensor<f32> {trn.name = "loss", trn.role = "loss"},
        tensor<4x4xf32> {trn.aliases = 0 : i64, trn.name = "layers.0.weight", trn.role = "parameter"},
        tensor<4x4xf32> {trn.aliases = 1 : i64, trn.name = "layers.1.weight", trn.role = "parameter"})
    attributes {dist.replica_axes = ["dp"], dist.spmd} {
  %part = trn.slice %table, start = [0, 0], limit = [4, 4], strides = [1, 1] : (tensor<8x4xi32>) -> tensor<4x4xi32>
  %partf = trn.convert %part : tensor<4x4xi32> -> tensor<4x4xf32>
  %h = trn.dot_general %x, %w0, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y0 = trn.dot_general %h, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y1 = trn.dot_general %y0, %partf, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %sq = trn.mul %y1, %y1 : tensor<2x4xf32>
  %s = trn.reduce sum %sq, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %loss = dist.all_reduce mean %s on @mesh axes = ["dp"] : tensor<f32>
  %ht = trn.transpose %h, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g1 = trn.dot_general %ht, %y1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %g1r = dist.all_reduce mean %g1 on @mesh axes = ["dp"] : tensor<4x4xf32>
  %lrb = trn.broadcast_in_dim %lr, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %u1 = trn.mul %g1r, %lrb : tensor<4x4xf32>
  %d1 = trn.mul %u1, %partf : tensor<4x4xf32>
  %n1 = trn.sub %w1, %d1 : tensor<4x4xf32>
  return %loss, %w0, %n1 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
}
