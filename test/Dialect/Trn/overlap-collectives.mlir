// RUN: trn-opt %s -trn-overlap-collectives | FileCheck %s
// RUN: trn-opt %s -trn-overlap-collectives=per-collective=1 | FileCheck %s --check-prefix=ONE

dist.mesh @mesh <tp = 4>

// A weight gradient left after the collective's consumer, with its operands
// ready, moves in front of the consumer and runs while the all_gather
// transfers; the learning rate's negation (from the arguments alone) moves
// up so that the update's epilogue is ready too, behind the gather (a
// collective of arguments starts first); a matmul that needs the consumer's
// result stays.
// CHECK-LABEL: func.func @overlap
// CHECK-NEXT: %[[G:.*]] = dist.all_gather %arg0
// CHECK-NEXT: %[[LR:.*]] = trn.neg %arg4
// CHECK-NEXT: %[[W1:.*]] = trn.dot_general %arg1, %arg2
// CHECK-NEXT: %[[W2:.*]] = trn.fusion(%arg1, %arg3, %[[LR]]
// CHECK: %[[C:.*]] = trn.exp %[[G]]
// CHECK-NEXT: %[[D:.*]] = trn.dot_general %[[C]], %arg1
// CHECK: return %[[D]], %[[W1]], %[[W2]]
// ONE-LABEL: func.func @overlap
// ONE: dist.all_gather
// ONE-NEXT: trn.neg
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

// An all_reduce moves up to just after its operand: the replicated weight's
// gradient is summed as soon as it is computed. The loss's sum is ready with
// no matmul before the next collective (the all_gather the backward waits
// for): it goes behind that one. Of the gathered tensor's two matmuls, the
// data gradient (which the rest of a backward would wait for) goes before
// the weight gradient.
// CHECK-LABEL: func.func @early_all_reduce
// CHECK: %[[L:.*]] = trn.reduce sum %arg0
// CHECK-NEXT: %[[DY:.*]] = trn.exp %arg1
// CHECK-NEXT: %[[G:.*]] = dist.all_gather %[[DY]]
// CHECK-NEXT: %[[LS:.*]] = dist.all_reduce sum %[[L]]
// CHECK-NEXT: %[[D:.*]] = trn.dot_general %[[G]], %arg3
// CHECK-NEXT: %[[W:.*]] = trn.dot_general %[[G]], %arg2
// CHECK-NEXT: %[[WS:.*]] = dist.all_reduce sum %[[W]]
// CHECK: return %[[LS]], %[[WS]], %[[D]]
func.func @early_all_reduce(%loss: tensor<16xf32>, %dy: tensor<16x64xf32>, %x: tensor<64x32xf32>, %w: tensor<64x32xf32>) -> (tensor<f32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  %0 = trn.reduce sum %loss, dims = [0] : (tensor<16xf32>) -> tensor<f32>
  %e = trn.exp %dy : tensor<16x64xf32>
  %1 = dist.all_gather %e on @mesh axes = ["tp"] dim = 0 : tensor<16x64xf32> -> tensor<64x64xf32>
  %2 = trn.dot_general %1, %x, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %3 = trn.dot_general %1, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %4 = dist.all_reduce sum %2 on @mesh axes = ["tp"] : tensor<64x32xf32>
  %5 = dist.all_reduce sum %0 on @mesh axes = ["tp"] : tensor<f32>
  return %5, %4, %3 : tensor<f32>, tensor<64x32xf32>, tensor<64x32xf32>
}

// A collective of arguments starts first, but never ahead of a pipeline
// transfer (the stages pair their sends and receives in program order).
// CHECK-LABEL: func.func @after_transfer
// CHECK: dist.recv
// CHECK-NEXT: dist.all_gather %arg0
func.func @after_transfer(%x: tensor<16x64xf32>) -> (tensor<4x8xf32>, tensor<64x64xf32>) {
  %r = dist.recv from 0 on @mesh axis = "tp" tag = 1 : tensor<4x8xf32>
  %e = trn.exp %r : tensor<4x8xf32>
  %g = dist.all_gather %x on @mesh axes = ["tp"] dim = 0 : tensor<16x64xf32> -> tensor<64x64xf32>
  return %e, %g : tensor<4x8xf32>, tensor<64x64xf32>
}
