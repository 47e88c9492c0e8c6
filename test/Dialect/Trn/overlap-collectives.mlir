// RUN: trn-opt %s -trn-overlap-collectives | FileCheck %s
// RUN: trn-opt %s -trn-overlap-collectives=per-collective=1 | FileCheck %s --check-prefix=ONE

dist.mesh @mesh <tp = 4>

// A weight gradient left after the collective's consumer, with its operands
// ready, moves in front of the consumer and runs while the all_gather
// transfers; the learning rate's negation (from the arguments alone) moves
// first so that the update's epilogue is ready too; a matmul that needs the
// consumer's result stays.
// CHECK-LABEL: func.func @overlap
// CHECK-NEXT: %[[LR:.*]] = trn.neg %arg4
// CHECK-NEXT: %[[G:.*]] = dist.all_gather %arg0
// CHECK-NEXT: %[[W1:.*]] = trn.dot_general %arg1, %arg2
// CHECK-NEXT: %[[W2:.*]] = trn.fusion(%arg1, %arg3, %[[LR]]
// CHECK: %[[C:.*]] = trn.exp %[[G]]
// CHECK-NEXT: %[[D:.*]] = trn.dot_general %[[C]], %arg1
// CHECK: return %[[D]], %[[W1]], %[[W2]]
// ONE-LABEL: func.func @overlap
// ONE: dist.all_gather
// ONE-NEXT: trn.dot_general %arg1, %arg2
// ONE-NEXT: trn.exp
func.func @overlap(%x: tensor<16x64xf32>, %a: tensor<64x32xf32>, %b: tensor<64x32xf32>, %w: tensor<32x32xf32>, %lr: tensor<f32>) -> (tensor<64x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) {
  %0 = dist.all_gather %x on @mesh axes = ["tp"] dim = 0 : tensor<16x64xf32> -> tensor<64x64xf32>
  %1 = trn.exp %0 : tensor<64x64xf32>
  %2 = trn.dot_general %1, %a, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %3 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
  %4 = trn.neg %lr : tensor<f32>
  %5 = trn.fusion(%a, %w, %4 : tensor<64x32xf32>, tensor<32x32xf32>, tensor<f32>) -> (tensor<32x32xf32>) {
  ^bb0(%p: tensor<64x32xf32>, %q: tensor<32x32xf32>, %r: tensor<f32>):
    %6 = trn.dot_general %p, %p, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
    %7 = trn.broadcast_in_dim %r, dims = [] : (tensor<f32>) -> tensor<32x32xf32>
    %8 = trn.mul %6, %7 : tensor<32x32xf32>
    %9 = trn.add %q, %8 : tensor<32x32xf32>
    trn.yield %9 : tensor<32x32xf32>
  }
  return %2, %3, %5 : tensor<64x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>
}
