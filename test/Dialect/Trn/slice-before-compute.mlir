// RUN: trn-opt %s -split-input-file -trn-slice-before-compute | FileCheck %s

dist.mesh @mesh <tp = 2>

// A row-parallel projection's tp sum, its bias added on the whole result,
// viewed as [1, S, H] and sliced to the rank's part of the sequence (what
// sequence parallelism left in a pipeline stage): the slice moves before the
// view and the add, and the all-reduce and slice become a reduce-scatter.
// CHECK-LABEL: func.func @bias_then_slice
// CHECK-NOT: dist.all_reduce
// CHECK-DAG: %[[RS:.*]] = dist.reduce_scatter sum %arg0 on @mesh axes = ["tp"] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-DAG: %[[B:.*]] = trn.broadcast_in_dim %arg1, dims = [1] : (tensor<4xf32>) -> tensor<4x4xf32>
// CHECK: %[[ADD:.*]] = trn.add %[[B]], %[[RS]] : tensor<4x4xf32>
// CHECK: trn.reshape %[[ADD]] : (tensor<4x4xf32>) -> tensor<1x4x4xf32>
// CHECK-NOT: dist.all_slice
func.func @bias_then_slice(%partial: tensor<8x4xf32>, %bias: tensor<4xf32>) -> tensor<1x4x4xf32> attributes {dist.spmd} {
  %sum = dist.all_reduce sum %partial on @mesh axes = ["tp"] : tensor<8x4xf32>
  %b = trn.broadcast_in_dim %bias, dims = [1] : (tensor<4xf32>) -> tensor<8x4xf32>
  %add = trn.add %b, %sum : tensor<8x4xf32>
  %view = trn.reshape %add : (tensor<8x4xf32>) -> tensor<1x8x4xf32>
  %mine = dist.all_slice %view on @mesh axes = ["tp"] dim = 1 : tensor<1x8x4xf32> -> tensor<1x4x4xf32>
  return %mine : tensor<1x4x4xf32>
}

// -----

dist.mesh @mesh <tp = 2>

// A broadcast operand that has the sliced dim is sliced with the rest.
// CHECK-LABEL: func.func @broadcast_with_the_sliced_dim
// CHECK-DAG: %[[RS:.*]] = dist.reduce_scatter sum %arg0 on @mesh axes = ["tp"] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-DAG: %[[S:.*]] = dist.all_slice %arg1 on @mesh axes = ["tp"] dim = 0 : tensor<8xf32> -> tensor<4xf32>
// CHECK: %[[B:.*]] = trn.broadcast_in_dim %[[S]], dims = [0] : (tensor<4xf32>) -> tensor<4x4xf32>
// CHECK: trn.mul %[[RS]], %[[B]] : tensor<4x4xf32>
func.func @broadcast_with_the_sliced_dim(%partial: tensor<8x4xf32>, %scale: tensor<8xf32>) -> tensor<4x4xf32> attributes {dist.spmd} {
  %sum = dist.all_reduce sum %partial on @mesh axes = ["tp"] : tensor<8x4xf32>
  %s = trn.broadcast_in_dim %scale, dims = [0] : (tensor<8xf32>) -> tensor<8x4xf32>
  %mul = trn.mul %sum, %s : tensor<8x4xf32>
  %mine = dist.all_slice %mul on @mesh axes = ["tp"] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  return %mine : tensor<4x4xf32>
}

// -----

dist.mesh @mesh <tp = 2>

// Left alone: the all-reduced sum has another reader (it is needed whole),
// an elementwise op with two whole operands (a slice each instead of one),
// and a reshape that merges dims.
// CHECK-LABEL: func.func @left_alone
// CHECK: dist.all_reduce sum %arg0
// CHECK: dist.all_slice
// CHECK: trn.add %arg1, %arg2
// CHECK: dist.all_slice
// CHECK: trn.reshape %arg3 : (tensor<2x4x4xf32>) -> tensor<8x4xf32>
// CHECK: dist.all_slice
func.func @left_alone(%partial: tensor<8x4xf32>, %x: tensor<8x4xf32>, %y: tensor<8x4xf32>, %z: tensor<2x4x4xf32>) -> (tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) attributes {dist.spmd} {
  %sum = dist.all_reduce sum %partial on @mesh axes = ["tp"] : tensor<8x4xf32>
  %s1 = dist.all_slice %sum on @mesh axes = ["tp"] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  %add = trn.add %x, %y : tensor<8x4xf32>
  %s2 = dist.all_slice %add on @mesh axes = ["tp"] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  %merged = trn.reshape %z : (tensor<2x4x4xf32>) -> tensor<8x4xf32>
  %s3 = dist.all_slice %merged on @mesh axes = ["tp"] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  return %sum, %s1, %s2, %s3 : tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

dist.mesh @mesh <tp = 4>

// Grouped-query attention's v under sequence parallelism: gathered along
// the sequence, viewed as [1, kv heads, 1, S, D], repeated to the query
// heads and sliced to this rank's head. The views apply to the local
// shard and the gather follows them; all_slice(all_gather) along another
// dim is then an all_to_all (each rank receives its head's rows).
// CHECK-LABEL: func.func @repeated_kv_heads
// CHECK-NOT: dist.all_gather
// CHECK: %[[V:.*]] = trn.reshape %arg0 : (tensor<2x16xbf16>) -> tensor<1x1x2x2x8xbf16>
// CHECK: %[[T:.*]] = trn.transpose %[[V]], perm = [0, 3, 1, 2, 4] : (tensor<1x1x2x2x8xbf16>) -> tensor<1x2x1x2x8xbf16>
// CHECK: %[[B:.*]] = trn.broadcast_in_dim %[[T]], dims = [0, 1, 2, 3, 4] : (tensor<1x2x1x2x8xbf16>) -> tensor<1x2x2x2x8xbf16>
// CHECK: %[[R:.*]] = trn.reshape %[[B]] : (tensor<1x2x2x2x8xbf16>) -> tensor<1x4x2x8xbf16>
// CHECK: dist.all_to_all %[[R]] on @mesh axes = ["tp"] split_dim = 1 concat_dim = 2 : tensor<1x4x2x8xbf16> -> tensor<1x1x8x8xbf16>
// CHECK-NOT: dist.all_slice
func.func @repeated_kv_heads(%v: tensor<2x16xbf16>) -> tensor<1x1x8x8xbf16> attributes {dist.spmd} {
  %g = dist.all_gather %v on @mesh axes = ["tp"] dim = 0 : tensor<2x16xbf16> -> tensor<8x16xbf16>
  %0 = trn.reshape %g : (tensor<8x16xbf16>) -> tensor<1x1x8x2x8xbf16>
  %1 = trn.transpose %0, perm = [0, 3, 1, 2, 4] : (tensor<1x1x8x2x8xbf16>) -> tensor<1x2x1x8x8xbf16>
  %2 = trn.broadcast_in_dim %1, dims = [0, 1, 2, 3, 4] : (tensor<1x2x1x8x8xbf16>) -> tensor<1x2x2x8x8xbf16>
  %3 = trn.reshape %2 : (tensor<1x2x2x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  %4 = dist.all_slice %3 on @mesh axes = ["tp"] dim = 1 : tensor<1x4x8x8xbf16> -> tensor<1x1x8x8xbf16>
  return %4 : tensor<1x1x8x8xbf16>
}

// -----

dist.mesh @mesh <tp = 4>

// Left alone: a view that merges the gathered dim with another (the gather
// cannot follow it).
// CHECK-LABEL: func.func @gathered_dim_merged
// CHECK: dist.all_gather
// CHECK: dist.all_slice
func.func @gathered_dim_merged(%v: tensor<2x16xbf16>) -> tensor<32xbf16> attributes {dist.spmd} {
  %g = dist.all_gather %v on @mesh axes = ["tp"] dim = 0 : tensor<2x16xbf16> -> tensor<8x16xbf16>
  %0 = trn.reshape %g : (tensor<8x16xbf16>) -> tensor<128xbf16>
  %1 = dist.all_slice %0 on @mesh axes = ["tp"] dim = 0 : tensor<128xbf16> -> tensor<32xbf16>
  return %1 : tensor<32xbf16>
}
