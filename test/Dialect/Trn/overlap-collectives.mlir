// RUN: trn-opt %s -trn-overlap-collectives="matmul-flops-per-ns=91750.4 collective-bytes-per-ns=192" | FileCheck %s
// RUN: trn-opt %s -trn-overlap-collectives="per-collective=1 matmul-flops-per-ns=91750.4 collective-bytes-per-ns=192" | FileCheck %s --check-prefix=ONE
// RUN: trn-opt %s -trn-overlap-collectives="matmul-flops-per-ns=91750.4 collective-bytes-per-ns=1000000" | FileCheck %s --check-prefix=SMALL
// (trn1's rates, as trn-cc passes them: 128 x 128 x 2 flops at 2.8 GHz, a core's
// half of its chip's 384 GB/s of NeuronLink.)

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

// A backward's tail: the reduce-scatter of an input gradient has two weight
// gradients to overlap (~0.75 ms of matmuls for ~0.13 ms of transfer), the
// all-gather after it none. The later weight gradient moves behind the
// all-gather, in front of its consumer; the reduce-scatter keeps the other.
// CHECK-LABEL: func.func @fill_uncovered
// CHECK: %[[R:.*]] = dist.reduce_scatter
// CHECK-NEXT: %[[G1:.*]] = trn.dot_general %arg0, %arg3
// CHECK-NEXT: %[[E:.*]] = trn.exp %[[R]]
// CHECK-NEXT: %[[A:.*]] = dist.all_gather %[[E]]
// CHECK-NEXT: %[[G2:.*]] = trn.dot_general %arg0, %arg4
// CHECK-NEXT: %[[D:.*]] = trn.dot_general %[[A]], %arg2
// CHECK-NEXT: return %[[G1]], %[[G2]], %[[D]]
// Collectives shorter than 20 µs do not take matmuls: over a link thousands
// of times faster the same graph stays as it is.
// SMALL-LABEL: func.func @fill_uncovered
// SMALL: trn.dot_general %arg0, %arg3
// SMALL-NEXT: trn.dot_general %arg0, %arg4
// SMALL-NEXT: trn.exp
func.func @fill_uncovered(%dy: tensor<4096x2048xf32>, %w1: tensor<2048x2048xf32>, %w2: tensor<2048x2048xf32>, %x1: tensor<4096x2048xf32>, %x2: tensor<4096x2048xf32>) -> (tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<4096x2048xf32>) {
  %a = trn.dot_general %dy, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4096x2048xf32>, tensor<2048x2048xf32>) -> tensor<4096x2048xf32>
  %r = dist.reduce_scatter sum %a on @mesh axes = ["tp"] dim = 0 : tensor<4096x2048xf32> -> tensor<1024x2048xf32>
  %g1 = trn.dot_general %dy, %x1, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<4096x2048xf32>, tensor<4096x2048xf32>) -> tensor<2048x2048xf32>
  %g2 = trn.dot_general %dy, %x2, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<4096x2048xf32>, tensor<4096x2048xf32>) -> tensor<2048x2048xf32>
  %e = trn.exp %r : tensor<1024x2048xf32>
  %ag = dist.all_gather %e on @mesh axes = ["tp"] dim = 0 : tensor<1024x2048xf32> -> tensor<4096x2048xf32>
  %d = trn.dot_general %ag, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4096x2048xf32>, tensor<2048x2048xf32>) -> tensor<4096x2048xf32>
  return %g1, %g2, %d : tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<4096x2048xf32>
}

// A pipeline backward: an all-gather of a plain argument (a ZeRO-1 shard)
// moves to the start, one of a stashed shard (selective recomputation
// gathers it again where it is first needed) stays: hoisted, every layer's
// gathered copy would be held through the whole backward.
// CHECK-LABEL: func.func @stashed_shard
// CHECK-NEXT: %[[P:.*]] = dist.all_gather %arg1
// CHECK-NEXT: trn.dot_general %arg2, %arg3
// CHECK-NEXT: dist.all_gather %arg0
func.func @stashed_shard(%stash: tensor<1024x2048xf32> {dist.port = #dist.port<"stash", 0>},
                         %shard: tensor<1024x2048xf32>, %dy: tensor<4096x2048xf32>,
                         %w: tensor<2048x2048xf32>)
    -> (tensor<4096x2048xf32>, tensor<4096x2048xf32>, tensor<4096x2048xf32>) {
  %a = trn.dot_general %dy, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4096x2048xf32>, tensor<2048x2048xf32>) -> tensor<4096x2048xf32>
  %x = dist.all_gather %stash on @mesh axes = ["tp"] dim = 0 : tensor<1024x2048xf32> -> tensor<4096x2048xf32>
  %p = dist.all_gather %shard on @mesh axes = ["tp"] dim = 0 : tensor<1024x2048xf32> -> tensor<4096x2048xf32>
  return %a, %x, %p : tensor<4096x2048xf32>, tensor<4096x2048xf32>, tensor<4096x2048xf32>
}
