// RUN: trn-opt %S/pipeline-stages.mlir -dist-pipeline-stages=pp=2 -dist-pipeline-split=microbatches=2 | FileCheck %s
// RUN: trn-opt %S/pipeline-stages.mlir -dist-pipeline-stages=pp=2 -dist-pipeline-split="microbatches=4 schedule=gpipe" | FileCheck %s --check-prefix=GPIPE

// The two-layer step of pipeline-stages.mlir cut into fragments. Stage 0's
// forward sends h to stage 1 as soon as it is made; stage 1's forward
// receives it, stashes it and y for its backward, and adds the microbatch's
// loss to an accumulator; its backward sends the gradient of h back;
// stage 0's backward adds x^T dh to the accumulator of layers.0's gradient.
// The updates average the accumulators over the 2 microbatches before the
// dp all-reduce, then apply SGD; each returns its stage's results.
// CHECK: dist.mesh @mesh <dp = 2, pp = 2>
// CHECK-LABEL: func.func @step.s0.forward
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {dist.port = #dist.port<"microbatch", 3>
// CHECK-SAME: %[[W0:[a-z0-9]+]]: tensor<4x4xf32> {dist.port = #dist.port<"argument", 0>
// CHECK-SAME: attributes {dist.phase = "forward", dist.pipeline = @step, dist.replica_axes = ["dp"], dist.spmd, dist.stage = 0 : i64}
// CHECK: %[[H:.*]] = trn.dot_general %[[X]], %[[W0]]
// CHECK-NEXT: dist.send %[[H]] to 1 on @mesh axis = "pp" tag = 0 : tensor<2x4xf32>
// CHECK-NEXT: return
// CHECK-LABEL: func.func @step.s0.backward
// CHECK-SAME: #dist.port<"microbatch", 3>
// CHECK-SAME: %[[ACC0:[a-z0-9]+]]: tensor<4x4xf32> {dist.port = #dist.port<"accumulator", 2>})
// CHECK-SAME: -> (tensor<4x4xf32> {dist.port = #dist.port<"accumulator", 2>, trn.aliases = 1 : i64})
// CHECK: %[[DH:.*]] = dist.recv from 1 on @mesh axis = "pp" tag = 1 : tensor<2x4xf32>
// CHECK: %[[G0:.*]] = trn.dot_general %{{.*}}, %[[DH]]
// CHECK: trn.add %[[ACC0]], %[[G0]]
// CHECK-LABEL: func.func @step.s0.update
// CHECK-SAME: %[[SUM0:[a-z0-9]+]]: tensor<4x4xf32> {dist.port = #dist.port<"accumulator", 2>}
// CHECK-SAME: -> (tensor<4x4xf32> {dist.port = #dist.port<"result", 1>, trn.aliases = 2 : i64, trn.name = "layers.0.weight"
// CHECK: %[[HALF:.*]] = trn.constant dense<5.000000e-01> : tensor<4x4xf32>
// CHECK: %[[MEAN:.*]] = trn.mul %[[SUM0]], %[[HALF]]
// CHECK: dist.all_reduce mean %[[MEAN]] on @mesh axes = ["dp"]
// CHECK: trn.sub
// CHECK-LABEL: func.func @step.s1.forward
// CHECK-SAME: -> (tensor<f32> {dist.port = #dist.port<"accumulator", 0>, trn.aliases = 1 : i64}, tensor<2x4xf32> {dist.port = #dist.port<"stash", 0>}, tensor<2x4xf32> {dist.port = #dist.port<"stash", 1>})
// CHECK: %[[RH:.*]] = dist.recv from 0 on @mesh axis = "pp" tag = 0 : tensor<2x4xf32>
// CHECK: %[[Y:.*]] = trn.dot_general %[[RH]]
// CHECK: return %{{.*}}, %[[Y]], %[[RH]]
// CHECK-LABEL: func.func @step.s1.backward
// CHECK-SAME: %[[SY:[a-z0-9]+]]: tensor<2x4xf32> {dist.port = #dist.port<"stash", 0>}
// CHECK-SAME: %[[SH:[a-z0-9]+]]: tensor<2x4xf32> {dist.port = #dist.port<"stash", 1>}
// CHECK: %[[D:.*]] = trn.dot_general %[[SY]]
// CHECK-NEXT: dist.send %[[D]] to 0 on @mesh axis = "pp" tag = 1
// CHECK: trn.transpose %[[SH]]
// CHECK-LABEL: func.func @step.s1.update
// CHECK-SAME: -> (tensor<f32> {dist.port = #dist.port<"result", 0>, trn.name = "loss", trn.role = "loss"}, tensor<4x4xf32> {dist.port = #dist.port<"result", 2>
// CHECK: dist.all_reduce mean {{.*}} : tensor<f32>
// The step as callers see it: x holds both microbatches.
// CHECK: dist.pipeline @step on @mesh axis = "pp" microbatches = 2 schedule = "1f1b"
// CHECK-SAME: function_type = (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<4x4xf32>) -> (tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>)

// GPIPE: dist.pipeline @step on @mesh axis = "pp" microbatches = 4 schedule = "gpipe"
// GPIPE-SAME: function_type = (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<8x4xf32>)
// GPIPE-NOT: func.func @step(
