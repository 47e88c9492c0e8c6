// RUN: trn-opt %s -trn-mark-optimizer | FileCheck %s

// The update is what the optimizer state and the learning rate reach: the
// moment and the parameter updates, not the gradient's computation or the
// loss (a fusion is marked whole).
// CHECK-LABEL: func.func @sgd_momentum
// CHECK: %[[G:.*]] = trn.mul %arg0, %arg1 : tensor<4xf32>
// CHECK-NOT: trn.optimizer
// CHECK: trn.add %arg2, %[[G]] {trn.optimizer} : tensor<4xf32>
// CHECK: trn.fusion({{.*}}) attributes {trn.optimizer}
// CHECK: trn.sub %arg1, %{{.*}} {trn.optimizer} : tensor<4xf32>
// CHECK: %[[L:.*]] = trn.exp %[[G]] : tensor<4xf32>
// CHECK: return
func.func @sgd_momentum(%x: tensor<4xf32> {trn.role = "data"},
                        %w: tensor<4xf32> {trn.role = "parameter"},
                        %m: tensor<4xf32> {trn.role = "optimizer_state"},
                        %lr: tensor<4xf32> {trn.role = "hyperparameter"})
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %g = trn.mul %x, %w : tensor<4xf32>
  %m1 = trn.add %m, %g : tensor<4xf32>
  %step = trn.fusion(%m1, %lr : tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %p = trn.mul %a, %b : tensor<4xf32>
    trn.yield %p : tensor<4xf32>
  }
  %w1 = trn.sub %w, %step : tensor<4xf32>
  %loss = trn.exp %g : tensor<4xf32>
  return %w1, %m1, %loss : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
