// RUN: trn-opt %s -split-input-file -dist-combine-all-reduces | FileCheck %s
// RUN: trn-opt %s -split-input-file -dist-combine-all-reduces=bucket-elements=100 | FileCheck %s --check-prefix=SMALL
// RUN: not trn-opt %s -split-input-file -dist-combine-all-reduces=bucket-elements=0 2>&1 | FileCheck %s --check-prefix=BAD

// An update's gradient all-reduces (each average of the microbatches
// all-reduced over dp, then used by the optimizer) become one over the
// gradients flattened and concatenated, sliced back before the first use;
// the second gradient's average moves up to it.
// CHECK-LABEL: func.func @step.s0.update
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<8x4xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[C:[a-z0-9]+]]: tensor<2x2xbf16>
// CHECK-DAG: %[[AM:.*]] = trn.mul %[[A]]
// CHECK-DAG: %[[BM:.*]] = trn.mul %[[B]]
// CHECK: %[[AF:.*]] = trn.reshape %[[AM]] : (tensor<8x4xf32>) -> tensor<32xf32>
// CHECK: %[[J:.*]] = trn.concatenate %[[AF]], %[[BM]] dim = 0 : (tensor<32xf32>, tensor<16xf32>) -> tensor<48xf32>
// CHECK: %[[R:.*]] = dist.all_reduce mean %[[J]] on @mesh axes = ["dp"] : tensor<48xf32>
// CHECK: %[[AS:.*]] = trn.slice %[[R]], start = [0], limit = [32], strides = [1]
// CHECK: %[[AR:.*]] = trn.reshape %[[AS]] : (tensor<32xf32>) -> tensor<8x4xf32>
// CHECK: %[[BS:.*]] = trn.slice %[[R]], start = [32], limit = [48], strides = [1]
// CHECK: trn.sub %{{.*}}, %[[AR]]
// CHECK: trn.sub %{{.*}}, %[[BS]]
// The bf16 gradient's all-reduce is one of its own (another element type).
// CHECK: dist.all_reduce mean %{{.*}} on @mesh axes = ["dp"] : tensor<2x2xbf16>
// CHECK-NOT: dist.all_reduce
// CHECK: return
// With buckets of 100 elements, the same.
// SMALL-LABEL: func.func @step.s0.update
// SMALL-COUNT-1: dist.all_reduce mean %{{.*}} : tensor<48xf32>
// BAD: dist-combine-all-reduces: bucket-elements must be positive, not 0
dist.mesh @mesh <dp = 2>
func.func @step.s0.update(%a: tensor<8x4xf32>, %b: tensor<16xf32>, %c: tensor<2x2xbf16>,
                          %pa: tensor<8x4xf32>, %pb: tensor<16xf32>, %pc: tensor<2x2xbf16>)
    -> (tensor<8x4xf32>, tensor<16xf32>, tensor<2x2xbf16>)
    attributes {dist.phase = "update", dist.spmd} {
  %half = trn.constant dense<5.000000e-01> : tensor<8x4xf32>
  %am = trn.mul %a, %half : tensor<8x4xf32>
  %ar = dist.all_reduce mean %am on @mesh axes = ["dp"] : tensor<8x4xf32>
  %pa2 = trn.sub %pa, %ar : tensor<8x4xf32>
  %halfb = trn.constant dense<5.000000e-01> : tensor<16xf32>
  %bm = trn.mul %b, %halfb : tensor<16xf32>
  %br = dist.all_reduce mean %bm on @mesh axes = ["dp"] : tensor<16xf32>
  %pb2 = trn.sub %pb, %br : tensor<16xf32>
  %cr = dist.all_reduce mean %c on @mesh axes = ["dp"] : tensor<2x2xbf16>
  %pc2 = trn.sub %pc, %cr : tensor<2x2xbf16>
  return %pa2, %pb2, %pc2 : tensor<8x4xf32>, tensor<16xf32>, tensor<2x2xbf16>
}

// -----

// Buckets hold at most bucket-elements: at 100, two gradients of 64 are
// two all-reduces. An all-reduce whose input depends on a bucket member's
// result (a norm of the reduced gradient, over tp) is not combined with
// it, and one over other axes or with another reduction never is.
// CHECK-LABEL: func.func @step.s0.update
// CHECK: dist.all_reduce mean %{{.*}} on @mesh axes = ["dp"] : tensor<128xf32>
// CHECK: dist.all_reduce sum %{{.*}} on @mesh axes = ["tp"] : tensor<f32>
// CHECK: dist.all_reduce max %{{.*}} on @mesh axes = ["dp"] : tensor<f32>
// CHECK-NOT: dist.all_reduce
// SMALL-LABEL: func.func @step.s0.update
// SMALL: dist.all_reduce mean %{{.*}} on @mesh axes = ["dp"] : tensor<64xf32>
// SMALL: dist.all_reduce mean %{{.*}} on @mesh axes = ["dp"] : tensor<64xf32>
dist.mesh @mesh <dp = 2, tp = 2>
func.func @step.s0.update(%a: tensor<64xf32>, %b: tensor<64xf32>, %m: tensor<f32>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<f32>)
    attributes {dist.phase = "update", dist.spmd} {
  %ar = dist.all_reduce mean %a on @mesh axes = ["dp"] : tensor<64xf32>
  %sq = trn.mul %ar, %ar : tensor<64xf32>
  %norm = trn.reduce sum %sq, dims = [0] : (tensor<64xf32>) -> tensor<f32>
  %total = dist.all_reduce sum %norm on @mesh axes = ["tp"] : tensor<f32>
  %br = dist.all_reduce mean %b on @mesh axes = ["dp"] : tensor<64xf32>
  %mx = dist.all_reduce max %m on @mesh axes = ["dp"] : tensor<f32>
  return %ar, %br, %total, %mx : tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<f32>
}

// -----

// Outside an update (a forward, once per microbatch), a loss's sum and
// its label count are one all-reduce: little moves up to it.
// CHECK-LABEL: func.func @step.s0.forward
// CHECK: %[[J:.*]] = trn.concatenate
// CHECK-SAME: -> tensor<2xf32>
// CHECK: dist.all_reduce mean %[[J]] on @mesh axes = ["dp"] : tensor<2xf32>
// CHECK-NOT: dist.all_reduce
// CHECK: trn.div
dist.mesh @mesh <dp = 2>
func.func @step.s0.forward(%losses: tensor<8xf32>, %kept: tensor<8xf32>) -> tensor<f32>
    attributes {dist.phase = "forward", dist.spmd} {
  %sum = trn.reduce sum %losses, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  %total = dist.all_reduce mean %sum on @mesh axes = ["dp"] : tensor<f32>
  %count = trn.reduce sum %kept, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  %all = dist.all_reduce mean %count on @mesh axes = ["dp"] : tensor<f32>
  %loss = trn.div %total, %all : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Outside an update a layer's gradient all-reduces (over tp, under
// sequence parallelism) are left alone: combined across layers they would
// make the layers differ.
// CHECK-LABEL: func.func @step.s0.backward
// CHECK-COUNT-2: dist.all_reduce sum %{{.*}} on @mesh axes = ["tp"] : tensor<8xf32>
// CHECK-NOT: trn.concatenate
dist.mesh @mesh <dp = 2, tp = 2>
func.func @step.s0.backward(%g0: tensor<8xf32>, %g1: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {dist.phase = "backward", dist.spmd} {
  %r0 = dist.all_reduce sum %g0 on @mesh axes = ["tp"] : tensor<8xf32>
  %r1 = dist.all_reduce sum %g1 on @mesh axes = ["tp"] : tensor<8xf32>
  return %r0, %r1 : tensor<8xf32>, tensor<8xf32>
}
