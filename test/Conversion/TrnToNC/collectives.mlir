// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s

// A partitioned program (dist.spmd): the kernel records the mesh (axis names
// and compile-time sizes) and every argument's sharding as mesh axis indices
// (blocks only where a dimension is split block-wise); an in-place update
// records its updated value's sharding too. Collectives become nc
// collectives on whole HBM tensors; a reshaped operand is viewed with the
// shape the collective sees.
// CHECK: dist.mesh @mesh <dp = 2, tp = 2>
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %arg0: !nc.hbm<4x8xf32> {nc.kind = "input", nc.name = "x", nc.sharding = [array<i64: 0>, array<i64>]}
// CHECK-SAME: %arg1: !nc.hbm<8x6xf32> {nc.blocks = array<i64: 1, 3>, nc.kind = "inout", nc.name = "w", nc.output_blocks = array<i64: 1, 3>, nc.output_name = "result0", nc.output_sharding = [array<i64>, array<i64: 1>], nc.sharding = [array<i64>, array<i64: 1>]}
// CHECK-SAME: %arg2: !nc.hbm<4x16xf32> {nc.kind = "output", nc.name = "result1"}
// CHECK-SAME: attributes {nc.mesh_axes = ["dp", "tp"], nc.mesh_sizes = array<i64: 2, 2>}
// CHECK: %[[MEAN:.*]] = nc.hbm_alloc "t0" : <8x6xf32>
// CHECK: nc.all_reduce mean %[[MEAN]], %arg1 axes = ["dp"] : <8x6xf32>, <8x6xf32>
// CHECK: nc.all_gather %arg2, %arg0 axes = ["tp"] dim = 1 : <4x16xf32>, <4x8xf32>
// CHECK: %[[VIEW:.*]] = nc.hbm_reshape %arg0 : <4x8xf32> -> <2x16xf32>
// CHECK: nc.reduce_scatter sum %arg3, %[[VIEW]] axes = ["tp"] dim = 1 : <2x8xf32>, <2x16xf32>
// CHECK: nc.axis_index %arg4 axes = ["dp", "tp"] : <i32>
// CHECK: nc.all_slice %{{.*}}, %arg0 axes = ["tp"] dim = 0 : <2x8xf32>, <4x8xf32>
// CHECK: nc.all_to_all %{{.*}}, %arg0 axes = ["tp"] split_dim = 0 concat_dim = 1 : <2x16xf32>, <4x8xf32>
// CHECK: nc.collective_permute %{{.*}}, %arg0 axes = ["dp"] shift = 1 : <4x8xf32>, <4x8xf32>
// CHECK: nc.all_reduce max %{{.*}}, %arg0 axes = ["dp", "tp"]
dist.mesh @mesh <dp = 2, tp = 2>
func.func @step(%x: tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x"},
                %w: tensor<8x6xf32> {dist.sharding = #dist.sharding<@mesh, [{}, 3x{"tp"}]>, trn.name = "w"})
    -> (tensor<8x6xf32> {dist.sharding = #dist.sharding<@mesh, [{}, 3x{"tp"}]>, trn.aliases = 1 : i64},
        tensor<4x16xf32>, tensor<2x8xf32>, tensor<i32>, tensor<2x8xf32>,
        tensor<2x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    attributes {dist.spmd} {
  %m = dist.all_reduce mean %w on @mesh axes = ["dp"] : tensor<8x6xf32>
  %g = dist.all_gather %x on @mesh axes = ["tp"] dim = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
  %r = trn.reshape %x : (tensor<4x8xf32>) -> tensor<2x16xf32>
  %s = dist.reduce_scatter sum %r on @mesh axes = ["tp"] dim = 1 : tensor<2x16xf32> -> tensor<2x8xf32>
  %i = dist.axis_index on @mesh axes = ["dp", "tp"] : tensor<i32>
  %l = dist.all_slice %x on @mesh axes = ["tp"] dim = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  %a = dist.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<4x8xf32> -> tensor<2x16xf32>
  %p = dist.collective_permute %x on @mesh axes = ["dp"] shift = 1 : tensor<4x8xf32>
  %mx = dist.all_reduce max %x on @mesh axes = ["dp", "tp"] : tensor<4x8xf32>
  return %m, %g, %s, %i, %l, %a, %p, %mx : tensor<8x6xf32>, tensor<4x16xf32>, tensor<2x8xf32>, tensor<i32>, tensor<2x8xf32>, tensor<2x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
