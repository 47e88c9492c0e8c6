// RUN: trn-opt %s -split-input-file -trn-outline-layers="min-ops=6" | FileCheck %s

// A block's size counts the ops inside its groups: layers of one group of
// three ops (four with the group) and one more op are outlined at
// min-ops=6 when the group has four body ops (a layer of six), not when it
// has two (a layer of four).
// CHECK-LABEL: func.func @groups
// CHECK-NEXT: %[[Y0:.*]] = call @groups.layer(%arg0, %arg1)
// CHECK-NEXT: %[[Y1:.*]] = call @groups.layer(%[[Y0]], %arg2)
// CHECK-NEXT: return %[[Y1]]
// CHECK: func.func private @groups.layer
// CHECK-NEXT: trn.fusion
func.func @groups(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = trn.fusion(%x, %w0 : tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
    %s = trn.add %p, %q : tensor<4xf32>
    %m = trn.mul %s, %s : tensor<4xf32>
    %e = trn.exp %m : tensor<4xf32>
    trn.yield %e : tensor<4xf32>
  }
  %b0 = trn.tanh %a0 : tensor<4xf32>
  %a1 = trn.fusion(%b0, %w1 : tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
    %s = trn.add %p, %q : tensor<4xf32>
    %m = trn.mul %s, %s : tensor<4xf32>
    %e = trn.exp %m : tensor<4xf32>
    trn.yield %e : tensor<4xf32>
  }
  %b1 = trn.tanh %a1 : tensor<4xf32>
  return %b1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @small_groups
// CHECK-NOT: call
// CHECK: return
func.func @small_groups(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = trn.fusion(%x, %w0 : tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
    %s = trn.add %p, %q : tensor<4xf32>
    trn.yield %s : tensor<4xf32>
  }
  %b0 = trn.tanh %a0 : tensor<4xf32>
  %a1 = trn.fusion(%b0, %w1 : tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
    %s = trn.add %p, %q : tensor<4xf32>
    trn.yield %s : tensor<4xf32>
  }
  %b1 = trn.tanh %a1 : tensor<4xf32>
  return %b1 : tensor<4xf32>
}
