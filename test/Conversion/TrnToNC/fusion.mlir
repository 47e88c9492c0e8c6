// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s

// A row group: per 128-row tile, x is loaded once; the row sum is a [P, 1]
// column that tensor_scalar reads directly; the bias is read through a
// window whose partition stride is 0 (its broadcast); the per-row result is
// stored as a column of the [rows] output.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.*]]: !nc.hbm<200x96xf32> {{.*}}, %[[B:.*]]: !nc.hbm<96xf32> {{.*}}, %[[S:.*]]: !nc.hbm<200xf32> {{.*}}, %[[Y:.*]]: !nc.hbm<200x96xf32>
// CHECK: %[[XT:.*]] = nc.alloc : <sbuf, 128x96xf32>
// CHECK-NEXT: %[[XV:.*]] = nc.view %[[X]] strides [1] {partition_stride = 96 : i64}
// CHECK-NEXT: nc.dma_copy %[[XT]], %[[XV]]
// The tile's inputs are all loaded as it starts, ahead of their first use.
// CHECK-NEXT: %[[BT:.*]] = nc.alloc : <sbuf, 128x96xf32>
// CHECK-NEXT: %[[BV:.*]] = nc.view %[[B]] strides [1] : !nc.hbm<96xf32> -> <hbm, 128x96xf32>
// CHECK-NEXT: nc.dma_copy %[[BT]], %[[BV]]
// CHECK: nc.tensor_reduce add %[[SUM:.*]], %[[XT]] : <sbuf, 128x1xf32>, <sbuf, 128x96xf32>
// Results are stored as soon as they are computed.
// CHECK-NEXT: nc.view %[[S]] strides [1] {partition_stride = 1 : i64} : !nc.hbm<200xf32> -> <hbm, 128x1xf32>
// CHECK-NEXT: nc.dma_copy
// CHECK: nc.tensor_scalar multiply, bypass %[[MEAN:.*]], %[[SUM]] {scalar0 = 0.010416667{{.*}} : f32}
// x - mean goes to the Scalar Engine, which has less work (the Vector Engine
// reduced): a copy whose bias column is the negated mean.
// CHECK: nc.tensor_scalar multiply, bypass %[[NEG:.*]], %[[MEAN]] {scalar0 = -1.000000e+00 : f32}
// CHECK-NEXT: nc.activation copy %[[D:.*]], %[[XT]] bias_column %[[NEG]]
// CHECK: nc.tensor_tensor add %{{.*}}, %[[D]], %[[BT]]
// CHECK: nc.view %[[Y]] strides [1] {partition_stride = 96 : i64}
// The second tile covers the last 72 rows.
// CHECK: nc.view %[[X]] strides [1] {offset = 12288 : i64, partition_stride = 96 : i64} : !nc.hbm<200x96xf32> -> <hbm, 72x96xf32>
// CHECK: nc.view %[[S]] strides [1] {offset = 128 : i64, partition_stride = 1 : i64}
func.func @rows(%x: tensor<200x96xf32>, %b: tensor<96xf32>) -> (tensor<200xf32>, tensor<200x96xf32>) {
  %0:2 = trn.fusion(%x, %b : tensor<200x96xf32>, tensor<96xf32>) -> (tensor<200xf32>, tensor<200x96xf32>) {
  ^bb0(%a: tensor<200x96xf32>, %c: tensor<96xf32>):
    %inv = trn.constant dense<0.010416667> : tensor<200xf32>
    %bc = trn.broadcast_in_dim %c, dims = [1] : (tensor<96xf32>) -> tensor<200x96xf32>
    %s = trn.reduce sum %a, dims = [1] : (tensor<200x96xf32>) -> tensor<200xf32>
    %m = trn.mul %s, %inv : tensor<200xf32>
    %mb = trn.broadcast_in_dim %m, dims = [0] : (tensor<200xf32>) -> tensor<200x96xf32>
    %d = trn.sub %a, %mb : tensor<200x96xf32>
    %y = trn.add %d, %bc : tensor<200x96xf32>
    trn.yield %s, %y : tensor<200xf32>, tensor<200x96xf32>
  }
  return %0#0, %0#1 : tensor<200xf32>, tensor<200x96xf32>
}

// -----

// An elementwise group over few long rows is spread over all 128
// partitions ([4, 1024] as [128, 32]); a rank-0 input is a column read with
// partition stride 0.
// CHECK-LABEL: func.func @flat
// CHECK: nc.view %arg0 strides [1] {partition_stride = 32 : i64} : !nc.hbm<4x1024xf32> -> <hbm, 128x32xf32>
// CHECK: nc.view %arg1 strides [1] : !nc.hbm<f32> -> <hbm, 128x1xf32>
// CHECK: nc.tensor_scalar multiply, bypass {{.*}} column0
// CHECK: nc.view %arg2 strides [1] {partition_stride = 32 : i64} : !nc.hbm<4x1024xf32> -> <hbm, 128x32xf32>
// CHECK-NEXT: nc.dma_copy
// CHECK-NOT: nc.dma_copy
// CHECK: return
func.func @flat(%x: tensor<4x1024xf32>, %lr: tensor<f32>) -> tensor<4x1024xf32> {
  %0 = trn.fusion(%x, %lr : tensor<4x1024xf32>, tensor<f32>) -> (tensor<4x1024xf32>) {
  ^bb0(%a: tensor<4x1024xf32>, %s: tensor<f32>):
    %sb = trn.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<4x1024xf32>
    %y = trn.mul %a, %sb : tensor<4x1024xf32>
    trn.yield %y : tensor<4x1024xf32>
  }
  return %0 : tensor<4x1024xf32>
}

// -----

// A [128, 64] mask broadcast over a leading dim of 4: each block of 128 rows
// reads the mask from offset 0 with partition stride 64.
// CHECK-LABEL: func.func @blocks
// CHECK-COUNT-4: nc.view %arg1 strides [1] {partition_stride = 64 : i64} : !nc.hbm<128x64xf32> -> <hbm, 128x64xf32>
func.func @blocks(%x: tensor<4x128x64xf32>, %mask: tensor<128x64xf32>) -> tensor<4x128x64xf32> {
  %0 = trn.fusion(%x, %mask : tensor<4x128x64xf32>, tensor<128x64xf32>) -> (tensor<4x128x64xf32>) {
  ^bb0(%a: tensor<4x128x64xf32>, %m: tensor<128x64xf32>):
    %mb = trn.broadcast_in_dim %m, dims = [1, 2] : (tensor<128x64xf32>) -> tensor<4x128x64xf32>
    %y = trn.add %a, %mb : tensor<4x128x64xf32>
    trn.yield %y : tensor<4x128x64xf32>
  }
  return %0 : tensor<4x128x64xf32>
}

// -----

func.func @leading_reduce(%x: tensor<8x8xf32>) -> tensor<8xf32> {
  %0 = trn.fusion(%x : tensor<8x8xf32>) -> (tensor<8xf32>) {
  ^bb0(%a: tensor<8x8xf32>):
    // expected-error @+1 {{'trn.fusion' cannot be lowered: only sum, max and min over the last dimension of the group's shape are lowered in a group}}
    %s = trn.reduce max %a, dims = [0] : (tensor<8x8xf32>) -> tensor<8xf32>
    trn.yield %s : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

func.func @other_shape(%x: tensor<8x16xf32>, %y: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0:2 = trn.fusion(%x, %y : tensor<8x16xf32>, tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<4x16xf32>) {
  ^bb0(%a: tensor<8x16xf32>, %b: tensor<4x16xf32>):
    %e = trn.exp %a : tensor<8x16xf32>
    // expected-error @+1 {{'trn.fusion' cannot be lowered: its result is neither of the group's shape nor a per-row value}}
    %f = trn.exp %b : tensor<4x16xf32>
    trn.yield %e, %f : tensor<8x16xf32>, tensor<4x16xf32>
  }
  return %0#0 : tensor<8x16xf32>
}

// -----

func.func @row_as_column(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = trn.fusion(%x : tensor<16x16xf32>) -> (tensor<16x16xf32>) {
  ^bb0(%a: tensor<16x16xf32>):
    %r = trn.reduce sum %a, dims = [1] : (tensor<16x16xf32>) -> tensor<16xf32>
    // expected-error @+1 {{'trn.fusion' cannot be lowered: it broadcasts a value of the group other than a per-row value}}
    %t = trn.broadcast_in_dim %r, dims = [1] : (tensor<16xf32>) -> tensor<16x16xf32>
    %y = trn.add %a, %t : tensor<16x16xf32>
    trn.yield %y : tensor<16x16xf32>
  }
  return %0 : tensor<16x16xf32>
}

// -----

func.func @input_other_shape(%x: tensor<16x16xf32>, %v: tensor<16xf32>) -> tensor<16xf32> {
  %0 = trn.fusion(%x, %v : tensor<16x16xf32>, tensor<16xf32>) -> (tensor<16xf32>) {
  ^bb0(%a: tensor<16x16xf32>, %b: tensor<16xf32>):
    %r = trn.reduce sum %a, dims = [1] : (tensor<16x16xf32>) -> tensor<16xf32>
    // expected-error @+1 {{'trn.fusion' cannot be lowered: it broadcasts an input to another shape than the group's}}
    %t = trn.broadcast_in_dim %b, dims = [0] : (tensor<16xf32>) -> tensor<16xf32>
    %y = trn.add %r, %t : tensor<16xf32>
    trn.yield %y : tensor<16xf32>
  }
  return %0 : tensor<16xf32>
}

// -----

// Folded into the Scalar Engine's func(x * scale + bias): x - max becomes a
// negated max column as the bias of exp, whose row_sum is the reduce sum;
// x * 0.5 is tanh's immediate scale; x + 1 is sigmoid's bias, a memset
// column (trn1 takes only 0 as an immediate bias).
// CHECK-LABEL: func.func @affine
// CHECK: nc.tensor_reduce max %[[MAX:.*]], %[[X:.*]] :
// CHECK: nc.tensor_scalar multiply, bypass %[[NEG:.*]], %[[MAX]] {scalar0 = -1.000000e+00 : f32}
// CHECK-NEXT: %[[E:.*]] = nc.alloc : <sbuf, 64x32xf32>
// CHECK-NEXT: %[[SUM:.*]] = nc.alloc : <sbuf, 64x1xf32>
// CHECK-NEXT: nc.activation exp %[[E]], %[[X]] bias_column %[[NEG]] row_sum %[[SUM]]
// CHECK-NOT: nc.tensor_reduce
// CHECK: nc.tensor_scalar divide, bypass {{.*}}, %[[E]] column0 %[[SUM]]
// CHECK: nc.activation tanh {{.*}}, %[[X]] {scale = 5.000000e-01 : f32}
// CHECK: %[[ONE:.*]] = nc.alloc : <sbuf, 64x1xf32>
// CHECK-NEXT: nc.memset %[[ONE]], 1.000000e+00
// CHECK-NEXT: nc.alloc
// CHECK-NEXT: nc.activation sigmoid {{.*}}, %[[X]] bias_column %[[ONE]] :
func.func @affine(%x: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  %0:3 = trn.fusion(%x : tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  ^bb0(%a: tensor<64x32xf32>):
    %half = trn.constant dense<0.5> : tensor<64x32xf32>
    %one = trn.constant dense<1.0> : tensor<64x32xf32>
    %m = trn.reduce max %a, dims = [1] : (tensor<64x32xf32>) -> tensor<64xf32>
    %mb = trn.broadcast_in_dim %m, dims = [0] : (tensor<64xf32>) -> tensor<64x32xf32>
    %d = trn.sub %a, %mb : tensor<64x32xf32>
    %e = trn.exp %d : tensor<64x32xf32>
    %s = trn.reduce sum %e, dims = [1] : (tensor<64x32xf32>) -> tensor<64xf32>
    %sb = trn.broadcast_in_dim %s, dims = [0] : (tensor<64xf32>) -> tensor<64x32xf32>
    %y = trn.div %e, %sb : tensor<64x32xf32>
    %h = trn.mul %a, %half : tensor<64x32xf32>
    %t = trn.tanh %h : tensor<64x32xf32>
    %p = trn.add %a, %one : tensor<64x32xf32>
    %u = trn.sigmoid %p : tensor<64x32xf32>
    trn.yield %y, %t, %u : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  }
  return %0#0, %0#1, %0#2 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
}

// -----

// Two per-row steps on a tile in a row ((e / sum) / count, the f32 middle
// read by nothing else) are one tensor_scalar with two ops on the Vector
// Engine; a middle value the group also yields keeps its own.
// CHECK-LABEL: func.func @two_row_steps
// CHECK: nc.tensor_scalar divide, divide %{{.*}}, %{{.*}} column0 %{{.*}} column1 %{{.*}} : !nc.tile<sbuf, 128x64xf32>
// CHECK-NOT: nc.tensor_scalar divide, bypass
// CHECK-LABEL: func.func @middle_yielded
// CHECK: nc.tensor_scalar divide, bypass
func.func @two_row_steps(%e: tensor<128x64xf32>, %s: tensor<128xf32>, %c: tensor<128xf32>) -> tensor<128x64xf32> {
  %0 = trn.fusion(%e, %s, %c : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) -> (tensor<128x64xf32>) {
  ^bb0(%a: tensor<128x64xf32>, %b: tensor<128xf32>, %d: tensor<128xf32>):
    %bb = trn.broadcast_in_dim %b, dims = [0] : (tensor<128xf32>) -> tensor<128x64xf32>
    %db = trn.broadcast_in_dim %d, dims = [0] : (tensor<128xf32>) -> tensor<128x64xf32>
    %p = trn.div %a, %bb : tensor<128x64xf32>
    %q = trn.div %p, %db : tensor<128x64xf32>
    trn.yield %q : tensor<128x64xf32>
  }
  return %0 : tensor<128x64xf32>
}
func.func @middle_yielded(%e: tensor<128x64xf32>, %s: tensor<128xf32>, %c: tensor<128xf32>) -> (tensor<128x64xf32>, tensor<128x64xf32>) {
  %0:2 = trn.fusion(%e, %s, %c : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) -> (tensor<128x64xf32>, tensor<128x64xf32>) {
  ^bb0(%a: tensor<128x64xf32>, %b: tensor<128xf32>, %d: tensor<128xf32>):
    %bb = trn.broadcast_in_dim %b, dims = [0] : (tensor<128xf32>) -> tensor<128x64xf32>
    %db = trn.broadcast_in_dim %d, dims = [0] : (tensor<128xf32>) -> tensor<128x64xf32>
    %p = trn.div %a, %bb : tensor<128x64xf32>
    %q = trn.div %p, %db : tensor<128x64xf32>
    trn.yield %q, %p : tensor<128x64xf32>, tensor<128x64xf32>
  }
  return %0#0, %0#1 : tensor<128x64xf32>, tensor<128x64xf32>
}

// -----

// A hand-written group that rotates rows wider than a tile holds.
func.func @rotate_wide_rows(%x: tensor<4x4096xf32>) -> tensor<4x4096xf32> {
  // expected-error @+1 {{'trn.fusion' cannot be lowered: a group that rotates rows needs them whole in a tile: no matmul, and rows of at most 2048 elements}}
  %0 = trn.fusion(%x : tensor<4x4096xf32>) -> (tensor<4x4096xf32>) {
  ^bb0(%a: tensor<4x4096xf32>):
    %r = trn.rotate_half %a : tensor<4x4096xf32>
    trn.yield %r : tensor<4x4096xf32>
  }
  return %0 : tensor<4x4096xf32>
}

// -----

// PSUM staging: in a group of elementwise ops, an f32 value the Scalar
// Engine computes only for a Vector Engine tensor_tensor is written to PSUM
// (one input through the PSUM port: one pass instead of two), and tiles
// wider than one bank of fp32 compute per 512 columns, their inputs loaded
// for the whole tile.
// CHECK-LABEL: func.func @psum_staging
// CHECK: nc.dma_copy %{{.*}}, %{{.*}} : <sbuf, 128x1024xf32>, <hbm, 128x1024xf32>
// CHECK: nc.dma_copy %{{.*}}, %{{.*}} {queue = 1 : i64} : <sbuf, 128x1024xf32>, <hbm, 128x1024xf32>
// CHECK: %[[S:.*]] = nc.alloc : <psum, 128x512xf32>
// CHECK: nc.activation square %[[S]], %{{.*}} : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x512xf32>
// CHECK: nc.tensor_tensor add %[[R:.*]], %[[S]], %{{.*}} : <sbuf, 128x512xf32>, <psum, 128x512xf32>, <sbuf, 128x512xf32>
// CHECK: nc.dma_copy %{{.*}}, %[[R]] {{.*}} : <hbm, 128x512xf32>, <sbuf, 128x512xf32>
// CHECK: %[[S2:.*]] = nc.alloc : <psum, 128x512xf32>
// CHECK: nc.activation square %[[S2]]
// CHECK: nc.tensor_tensor add %{{.*}}, %[[S2]], %{{.*}} : <sbuf, 128x512xf32>, <psum, 128x512xf32>
func.func @psum_staging(%m: tensor<128x1024xf32>, %g: tensor<128x1024xf32>) -> tensor<128x1024xf32> {
  %0 = trn.fusion(%m, %g : tensor<128x1024xf32>, tensor<128x1024xf32>) -> (tensor<128x1024xf32>) {
  ^bb0(%a: tensor<128x1024xf32>, %b: tensor<128x1024xf32>):
    %c = trn.constant dense<0.1> : tensor<128x1024xf32>
    %1 = trn.mul %b, %c : tensor<128x1024xf32>
    %2 = trn.mul %a, %a : tensor<128x1024xf32>
    %3 = trn.add %2, %1 : tensor<128x1024xf32>
    trn.yield %3 : tensor<128x1024xf32>
  }
  return %0 : tensor<128x1024xf32>
}

// -----

// A sum over rows runs on the Vector Engine and counts from the start of
// each tile, so the cast before it goes to the Scalar Engine.
// CHECK-LABEL: func.func @cast_beside_column_sum
// CHECK: nc.activation copy %{{.*}} : !nc.tile<sbuf, 128x256xbf16>, !nc.tile<sbuf, 128x256xf32>
// CHECK-NOT: nc.tensor_copy %{{.*}} : <sbuf, 128x256xbf16>, <sbuf, 128x256xf32>
// CHECK: return
func.func @cast_beside_column_sum(%g: tensor<256x256xf32>) -> (tensor<256x256xbf16>, tensor<256xf32>) {
  %0:2 = trn.fusion(%g : tensor<256x256xf32>) -> (tensor<256x256xbf16>, tensor<256xf32>) {
  ^bb0(%a: tensor<256x256xf32>):
    %1 = trn.convert %a : tensor<256x256xf32> -> tensor<256x256xbf16>
    %2 = trn.reduce sum %a, dims = [0] : (tensor<256x256xf32>) -> tensor<256xf32>
    trn.yield %1, %2 : tensor<256x256xbf16>, tensor<256xf32>
  }
  return %0#0, %0#1 : tensor<256x256xbf16>, tensor<256xf32>
}

// -----

// A layer norm's statistics over 4096 bf16 features: the input's widening
// to f32 is the Scalar Engine's copy, whose row_sum is the mean's sum (no
// Vector Engine copy or reduction); the squares of x - mean are only
// summed, so they are written 2048 columns at a time into one bf16 scratch
// tile, each chunk's row sum added to the first's, and no full f32 row of
// them is kept.
// CHECK-LABEL: func.func @norm_statistics
// CHECK: %[[XF:.*]] = nc.alloc : <sbuf, 128x4096xf32>
// CHECK-NEXT: %[[SUM:.*]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.activation copy %[[XF]], %{{.*}} row_sum %[[SUM]] : !nc.tile<sbuf, 128x4096xf32>, !nc.tile<sbuf, 128x4096xbf16>
// CHECK-NOT: nc.tensor_reduce
// CHECK-NOT: nc.tensor_copy
// CHECK: nc.tensor_scalar subtract
// CHECK-NEXT: %[[SQ:.*]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: %[[SCRATCH:.*]] = nc.alloc : <sbuf, 128x2048xbf16>
// CHECK: %[[W0:.*]] = nc.view %[[SCRATCH]]
// CHECK: nc.activation square %[[W0]], %{{.*}} row_sum %[[SQ]] : !nc.tile<sbuf, 128x2048xbf16>, !nc.tile<sbuf, 128x2048xf32>
// CHECK: %[[PART:.*]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK: nc.activation square %{{.*}}, %{{.*}} row_sum %[[PART]] : !nc.tile<sbuf, 128x2048xbf16>, !nc.tile<sbuf, 128x2048xf32>
// CHECK-NEXT: nc.tensor_tensor add %[[SQ]], %[[SQ]], %[[PART]]
// CHECK-NOT: nc.activation square
// CHECK-NOT: 128x4096xf32>, !nc.tile<sbuf, 128x1xf32>
// CHECK: return
func.func @norm_statistics(%x: tensor<128x4096xbf16>) -> (tensor<128xf32>, tensor<128xf32>) {
  %0:2 = trn.fusion(%x : tensor<128x4096xbf16>) -> (tensor<128xf32>, tensor<128xf32>) {
  ^bb0(%a: tensor<128x4096xbf16>):
    %n = trn.constant dense<4096.0> : tensor<128xf32>
    %f = trn.convert %a : tensor<128x4096xbf16> -> tensor<128x4096xf32>
    %s = trn.reduce sum %f, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
    %mean = trn.div %s, %n : tensor<128xf32>
    %mb = trn.broadcast_in_dim %mean, dims = [0] : (tensor<128xf32>) -> tensor<128x4096xf32>
    %d = trn.sub %f, %mb : tensor<128x4096xf32>
    %sq = trn.mul %d, %d : tensor<128x4096xf32>
    %v = trn.reduce sum %sq, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
    %var = trn.div %v, %n : tensor<128xf32>
    trn.yield %mean, %var : tensor<128xf32>, tensor<128xf32>
  }
  return %0#0, %0#1 : tensor<128xf32>, tensor<128xf32>
}

// -----

// not of a boolean (0 or 1 in a tile) is x == 0: one tensor_scalar.
// CHECK-LABEL: func.func @logical_not
// CHECK: nc.tensor_scalar is_equal, bypass
// CHECK: return
func.func @logical_not(%x: tensor<128x64xf32>, %y: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %0 = trn.fusion(%x, %y : tensor<128x64xf32>, tensor<128x64xf32>) -> (tensor<128x64xf32>) {
  ^bb0(%a: tensor<128x64xf32>, %b: tensor<128x64xf32>):
    %m = trn.compare lt, %a, %b : tensor<128x64xf32>
    %n = trn.not %m : tensor<128x64xi1>
    %z = trn.select %n, %a, %b : tensor<128x64xi1>, tensor<128x64xf32>
    trn.yield %z : tensor<128x64xf32>
  }
  return %0 : tensor<128x64xf32>
}

// -----

// A batch of one: the mean of a [1] vector (a loss over one example) sums
// a row of one element, which is the element: no reduction is emitted
// (a size-1 input is loaded as a column, constant along its one-wide row).
// CHECK-LABEL: func.func @sum_of_one
// CHECK-NOT: nc.tensor_reduce
// CHECK: nc.tensor_tensor divide
// CHECK: return
func.func @sum_of_one(%x: tensor<1xf32>, %n: tensor<1xf32>) -> tensor<f32> {
  %0 = trn.fusion(%x, %n : tensor<1xf32>, tensor<1xf32>) -> (tensor<f32>) {
  ^bb0(%a: tensor<1xf32>, %b: tensor<1xf32>):
    %s = trn.reduce sum %a, dims = [0] : (tensor<1xf32>) -> tensor<f32>
    %c = trn.reduce sum %b, dims = [0] : (tensor<1xf32>) -> tensor<f32>
    %m = trn.div %s, %c : tensor<f32>
    trn.yield %m : tensor<f32>
  }
  return %0 : tensor<f32>
}
