// RUN: trn-opt %s -dist-propagate -dist-spmd=dp-replicas=true -split-input-file | FileCheck %s
// Each function, run on the multi-rank reference evaluator, equals the
// unpartitioned function run on each replica's share of the inputs (results
// side by side where split over dp, else averaged):
// RUN: %trn_python %S/Inputs/check_partition.py %s --tools %trn_obj_root/bin -- -dist-propagate -dist-spmd=dp-replicas=true | FileCheck %s --check-prefix=EVAL
// EVAL: checked 7 functions (7 of one replica's step); skipped 0 splits

// One data-parallel replica's step: the traced batch (8) is each replica's,
// so dp splits no shape; the weight gradient, a sum over the split batch,
// is averaged over the replicas (as DDP averages gradients), and the
// function says which axes are bound when the program is loaded.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>}
// CHECK-SAME: attributes {dist.replica_axes = ["dp"], dist.spmd}
// CHECK: %[[G:.*]] = trn.dot_general {{.*}} -> tensor<16x4xf32>
// CHECK: dist.all_reduce mean %[[G]] on @mesh axes = ["dp"] : tensor<16x4xf32>
func.func @step(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
                %dy: tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>})
    -> tensor<16x4xf32> {
  %g = trn.dot_general %x, %dy, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  return %g : tensor<16x4xf32>
}

// -----

// A per-example result stays split over dp: the replicas' results side by
// side are the global one.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @per_example
// CHECK-SAME: -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>})
// CHECK-NOT: dist.all_gather
func.func @per_example(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>})
    -> tensor<8x16xf32> {
  %y = trn.exp %x : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A value wanted whole over dp is each replica's own value in the replica's
// step: nothing is gathered (DDP computes each replica's batch alone).
// (check_partition: replica's own result.)
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @whole
// CHECK-NOT: dist.all_gather
// CHECK: trn.exp
func.func @whole(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>})
    -> tensor<8x16xf32> {
  %w = dist.sharding_constraint %x <@mesh, [{}, {}]> : tensor<8x16xf32>
  %y = trn.exp %w : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A replica axis splits no shape, so it splits a batch of one too: the
// reshape merging the batch into the tokens keeps dp on the merged
// dimension (a size-1 dimension keeps a factor), and the contraction over
// the tokens is averaged over the replicas.
dist.mesh @mesh <dp = 2> {dist.replica_axes = ["dp"]}
// CHECK-LABEL: func.func @one
// CHECK: %[[G:.*]] = trn.dot_general {{.*}} -> tensor<8x8xf32>
// CHECK: dist.all_reduce mean %[[G]] on @mesh axes = ["dp"] : tensor<8x8xf32>
func.func @one(%x: tensor<1x4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}, {}]>, trn.role = "data"})
    -> tensor<8x8xf32> {
  %t = trn.reshape %x : (tensor<1x4x8xf32>) -> tensor<4x8xf32>
  %g = trn.dot_general %t, %t, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %g : tensor<8x8xf32>
}

// -----

// The count of labels not ignored, summed in int64 (PyTorch's
// cross_entropy decomposition) and averaged over the replicas as the
// loss's sum is: no integer mean is exact, so the mean is taken in f32,
// which is what its one use converts it to.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @count
// CHECK: %[[N:.*]] = trn.reduce sum {{.*}} -> tensor<i64>
// CHECK: %[[F:.*]] = trn.convert %[[N]] : tensor<i64> -> tensor<f32>
// CHECK: %[[MEAN:.*]] = dist.all_reduce mean %[[F]] on @mesh axes = ["dp"] : tensor<f32>
// CHECK-NOT: tensor<i64> -> tensor<f32>
// CHECK: return %[[MEAN]]
func.func @count(%kept: tensor<8xi64> {dist.sharding = #dist.sharding<@mesh, [{"dp"}]>}) -> tensor<f32> {
  %n = trn.reduce sum %kept, dims = [0] : (tensor<8xi64>) -> tensor<i64>
  %f = trn.convert %n : tensor<i64> -> tensor<f32>
  return %f : tensor<f32>
}

// -----

// A sum over the batch (split over the replica axis dp) and the sequence
// (split over tp, as sequence parallelism splits a norm region): a norm
// weight's gradient. Each axis stays pending on the dim that has it: the
// rank sums its own rows and the sum is all-reduced over tp and averaged
// over dp. (Both axes given to the batch, which cannot hold tp = 4 rows of
// 2, were dropped: the rows were gathered and the average over dp lost.)
dist.mesh @mesh <dp = 2, tp = 4>
// CHECK-LABEL: func.func @sum_over_batch_and_sequence
// CHECK-NOT: dist.all_gather
// CHECK: %[[S:.*]] = trn.reduce sum %arg0, dims = [0, 1] : (tensor<2x2x4xf32>) -> tensor<4xf32>
// CHECK-DAG: dist.all_reduce sum {{.*}} axes = ["tp"]
// CHECK-DAG: dist.all_reduce mean {{.*}} axes = ["dp"]
func.func @sum_over_batch_and_sequence(%g: tensor<2x8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {"tp"}, {}]>})
    -> tensor<4xf32> {
  %s = trn.reduce sum %g, dims = [0, 1] : (tensor<2x8x4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// The same sum returned whole (its result annotated): the sum over tp is
// made whole by a gather, and each replica's sum over its own batch is still
// averaged over dp (dp splits no shape, so nothing gathered it).
dist.mesh @mesh <dp = 2, tp = 4>
// CHECK-LABEL: func.func @sum_returned_whole
// CHECK: %[[S:.*]] = trn.reduce sum
// CHECK: dist.all_reduce mean %[[S]] on @mesh axes = ["dp"] : tensor<4xf32>
func.func @sum_returned_whole(%g: tensor<2x8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {"tp"}, {}]>})
    -> (tensor<4xf32> {dist.sharding = #dist.sharding<@mesh, [{}]>}) {
  %s = trn.reduce sum %g, dims = [0, 1] : (tensor<2x8x4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}
