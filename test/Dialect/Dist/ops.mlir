// RUN: trn-opt %s | trn-opt | FileCheck %s
// RUN: trn-opt %s --mlir-print-op-generic | trn-opt | FileCheck %s

// CHECK: dist.mesh @mesh <dp = 2, tp = 4>
dist.mesh @mesh <dp = 2, tp = 4>

// Shardings on arguments and results: the weight is column-parallel over
// tp, the batch split over dp, the result a partial sum over tp.
// CHECK-LABEL: func.func @collectives
// CHECK-SAME: dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>
// CHECK-SAME: dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>
// CHECK-SAME: dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}], partial = {"tp"}>
func.func @collectives(%x: tensor<4x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
                       %w: tensor<64x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>})
    -> (tensor<4x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}], partial = {"tp"}>}) {
  // CHECK: dist.all_reduce sum %{{.*}} on @mesh axes = ["tp"] : tensor<4x64xf32>
  %0 = dist.all_reduce sum %x on @mesh axes = ["tp"] : tensor<4x64xf32>
  // CHECK: dist.all_reduce max
  %1 = dist.all_reduce max %0 on @mesh axes = ["dp", "tp"] : tensor<4x64xf32>
  // CHECK: dist.all_gather %{{.*}} on @mesh axes = ["tp"] dim = 1 : tensor<64x32xf32> -> tensor<64x128xf32>
  %2 = dist.all_gather %w on @mesh axes = ["tp"] dim = 1 : tensor<64x32xf32> -> tensor<64x128xf32>
  // CHECK: dist.reduce_scatter sum %{{.*}} on @mesh axes = ["tp"] dim = 0 : tensor<64x128xf32> -> tensor<16x128xf32>
  %3 = dist.reduce_scatter sum %2 on @mesh axes = ["tp"] dim = 0 : tensor<64x128xf32> -> tensor<16x128xf32>
  // CHECK: dist.all_slice %{{.*}} on @mesh axes = ["tp"] dim = 0 : tensor<16x128xf32> -> tensor<4x128xf32>
  %s = dist.all_slice %3 on @mesh axes = ["tp"] dim = 0 : tensor<16x128xf32> -> tensor<4x128xf32>
  // CHECK: dist.all_to_all %{{.*}} on @mesh axes = ["tp"] split_dim = 1 concat_dim = 0 : tensor<16x128xf32> -> tensor<64x32xf32>
  %4 = dist.all_to_all %3 on @mesh axes = ["tp"] split_dim = 1 concat_dim = 0 : tensor<16x128xf32> -> tensor<64x32xf32>
  // CHECK: dist.collective_permute %{{.*}} on @mesh axes = ["dp"] shift = -1 : tensor<64x32xf32>
  %5 = dist.collective_permute %4 on @mesh axes = ["dp"] shift = -1 : tensor<64x32xf32>
  // CHECK: dist.axis_index on @mesh axes = ["tp"] : tensor<i32>
  %6 = dist.axis_index on @mesh axes = ["tp"] : tensor<i32>
  // CHECK: dist.sharding_constraint %{{.*}} <@mesh, [{"tp"}, {}]> : tensor<64x32xf32>
  %7 = dist.sharding_constraint %5 <@mesh, [{"tp"}, {}]> : tensor<64x32xf32>
  return %1 : tensor<4x64xf32>
}

// An op's results may carry their shardings (what propagation records).
// CHECK-LABEL: func.func @annotated
// CHECK: dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}]>]
func.func @annotated(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = trn.exp %a {dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}]>]} : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// A dimension split block-wise: a fused QKV weight's output features as 3
// blocks, each split over tp; the mean reduction.
// CHECK-LABEL: func.func @blocks
// CHECK-SAME: dist.sharding = #dist.sharding<@mesh, [3x{"tp"}, {}]>
// CHECK-SAME: dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>
// CHECK: dist.all_reduce mean
func.func @blocks(%w: tensor<96x64xf32> {dist.sharding = #dist.sharding<@mesh, [3x{"tp"}, {}]>},
                  %v: tensor<8x64xf32> {dist.sharding = #dist.sharding<@mesh, [1x{}, 1x{"tp"}]>}) -> tensor<96x64xf32> {
  %0 = dist.all_reduce mean %w on @mesh axes = ["dp"] : tensor<96x64xf32>
  return %0 : tensor<96x64xf32>
}

// Pipelines: a fragment of stage 1 of @pipe receives from stage 0 and
// sends back, its ports say how the runtime binds its arguments and
// results.
dist.mesh @pmesh <dp = 2, pp = 2>
// CHECK-LABEL: func.func @pipe.s1.forward
// CHECK-SAME: %{{.*}}: tensor<4xf32> {dist.port = #dist.port<"microbatch", 3>}
// CHECK-SAME: -> (tensor<4xf32> {dist.port = #dist.port<"stash", 0>})
// CHECK-SAME: attributes {dist.phase = "forward", dist.pipeline = @pipe, dist.stage = 1 : i64}
// CHECK: %[[R:.*]] = dist.recv from 0 on @pmesh axis = "pp" tag = 7 : tensor<4xf32>
// CHECK: dist.send %[[R]] to 0 on @pmesh axis = "pp" tag = 8 : tensor<4xf32>
func.func @pipe.s1.forward(%x: tensor<4xf32> {dist.port = #dist.port<"microbatch", 3>})
    -> (tensor<4xf32> {dist.port = #dist.port<"stash", 0>})
    attributes {dist.phase = "forward", dist.pipeline = @pipe, dist.stage = 1 : i64} {
  %0 = dist.recv from 0 on @pmesh axis = "pp" tag = 7 : tensor<4xf32>
  dist.send %0 to 0 on @pmesh axis = "pp" tag = 8 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// CHECK: dist.pipeline @pipe on @pmesh axis = "pp" microbatches = 4 schedule = "1f1b" {function_type = (tensor<8xf32>) -> tensor<f32>}
dist.pipeline @pipe on @pmesh axis = "pp" microbatches = 4 schedule = "1f1b" {function_type = (tensor<8xf32>) -> tensor<f32>}
