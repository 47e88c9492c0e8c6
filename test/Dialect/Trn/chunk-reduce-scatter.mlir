// RUN: trn-opt %s -split-input-file -trn-chunk-reduce-scatter="min-bytes=1" | FileCheck %s
// RUN: trn-opt %s -split-input-file -trn-chunk-reduce-scatter | FileCheck %s --check-prefix=DEFAULT
// RUN: trn-opt %s -split-input-file -trn-chunk-reduce-scatter="min-bytes=1" -trn-hoist-slices | FileCheck %s --check-prefix=HOIST

dist.mesh @mesh <tp = 2>

// A row-parallel projection (a weight in PyTorch's [out, in] layout, read
// transposed) whose result only a reduce-scatter reads: four pieces of its
// output features, each scattered on its own, joined after. Pieces of the
// transposed weight are blocks of its rows: trn-hoist-slices makes each
// piece a matmul on one of them.
// CHECK-LABEL: func.func @row_parallel
// CHECK: %[[WT:.*]] = trn.transpose %arg1
// CHECK: %[[Y:.*]] = trn.dot_general %arg0, %[[WT]]
// CHECK: %[[P0:.*]] = trn.slice %[[Y]], start = [0, 0], limit = [64, 512]
// CHECK-NEXT: %[[R0:.*]] = dist.reduce_scatter sum %[[P0]] on @mesh axes = ["tp"] dim = 0 : tensor<64x512xf32> -> tensor<32x512xf32>
// CHECK-NEXT: trn.slice %[[Y]], start = [0, 512], limit = [64, 1024]
// CHECK-NEXT: %[[R1:.*]] = dist.reduce_scatter
// CHECK-NEXT: trn.slice %[[Y]], start = [0, 1024], limit = [64, 1536]
// CHECK-NEXT: %[[R2:.*]] = dist.reduce_scatter
// CHECK-NEXT: trn.slice %[[Y]], start = [0, 1536], limit = [64, 2048]
// CHECK-NEXT: %[[R3:.*]] = dist.reduce_scatter
// CHECK-NEXT: %[[J:.*]] = trn.concatenate %[[R0]], %[[R1]], %[[R2]], %[[R3]] dim = 1 : {{.*}} -> tensor<32x2048xf32>
// CHECK-NEXT: return %[[J]]
// Below the default 16 MiB nothing changes.
// DEFAULT-LABEL: func.func @row_parallel
// DEFAULT-NOT: trn.slice
// DEFAULT: dist.reduce_scatter sum %{{.*}} : tensor<64x2048xf32> -> tensor<32x2048xf32>
// HOIST-LABEL: func.func @row_parallel
// HOIST: %[[W0:.*]] = trn.slice %arg1, start = [0, 0], limit = [512, 16]
// HOIST-NEXT: %[[T0:.*]] = trn.transpose %[[W0]], perm = [1, 0]
// HOIST-NEXT: %[[D0:.*]] = trn.dot_general %arg0, %[[T0]]{{.*}} -> tensor<64x512xf32>
// HOIST-NEXT: dist.reduce_scatter sum %[[D0]]
// HOIST: trn.slice %arg1, start = [1536, 0], limit = [2048, 16]
func.func @row_parallel(%x: tensor<64x16xf32>, %w: tensor<2048x16xf32>) -> tensor<32x2048xf32> {
  %wt = trn.transpose %w, perm = [1, 0] : (tensor<2048x16xf32>) -> tensor<16x2048xf32>
  %y = trn.dot_general %x, %wt, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x16xf32>, tensor<16x2048xf32>) -> tensor<64x2048xf32>
  %r = dist.reduce_scatter sum %y on @mesh axes = ["tp"] dim = 0 : tensor<64x2048xf32> -> tensor<32x2048xf32>
  return %r : tensor<32x2048xf32>
}

// -----

dist.mesh @mesh <tp = 2>

// Fewer pieces when four would be narrower than 512 features: three
// here. The weight's rows are its output features already (contracting
// its dim 1): pieces of them are contiguous too.
// CHECK-LABEL: func.func @two_pieces
// CHECK-COUNT-3: dist.reduce_scatter sum %{{.*}} : tensor<64x512xf32> -> tensor<32x512xf32>
// CHECK: trn.concatenate
func.func @two_pieces(%x: tensor<64x16xf32>, %w: tensor<1536x16xf32>) -> tensor<32x1536xf32> {
  %y = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<64x16xf32>, tensor<1536x16xf32>) -> tensor<64x1536xf32>
  %r = dist.reduce_scatter sum %y on @mesh axes = ["tp"] dim = 0 : tensor<64x1536xf32> -> tensor<32x1536xf32>
  return %r : tensor<32x1536xf32>
}

// -----

dist.mesh @mesh <tp = 2>

// What stays whole: a matmul result that something else reads too (the
// pieces would not replace it); one whose pieces of the weight would be
// strided columns of a [in, out] weight (a copy each before its matmul);
// one whose only wide dim is the scattered one; one too narrow to cut.
// CHECK-LABEL: func.func @stays_whole
// CHECK-NOT: trn.slice
// CHECK-NOT: trn.concatenate
// CHECK: return
func.func @stays_whole(%x: tensor<64x16xf32>, %w: tensor<2048x16xf32>, %wkn: tensor<16x2048xf32>, %xt: tensor<2048x16xf32>, %narrow: tensor<768x16xf32>) -> (tensor<32x2048xf32>, tensor<64x2048xf32>, tensor<32x2048xf32>, tensor<1024x64xf32>, tensor<32x768xf32>) {
  %y = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<64x16xf32>, tensor<2048x16xf32>) -> tensor<64x2048xf32>
  %r = dist.reduce_scatter sum %y on @mesh axes = ["tp"] dim = 0 : tensor<64x2048xf32> -> tensor<32x2048xf32>
  %z = trn.dot_general %x, %wkn, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x16xf32>, tensor<16x2048xf32>) -> tensor<64x2048xf32>
  %rz = dist.reduce_scatter sum %z on @mesh axes = ["tp"] dim = 0 : tensor<64x2048xf32> -> tensor<32x2048xf32>
  %t = trn.dot_general %xt, %x, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2048x16xf32>, tensor<64x16xf32>) -> tensor<2048x64xf32>
  %rt = dist.reduce_scatter sum %t on @mesh axes = ["tp"] dim = 0 : tensor<2048x64xf32> -> tensor<1024x64xf32>
  %n = trn.dot_general %x, %narrow, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<64x16xf32>, tensor<768x16xf32>) -> tensor<64x768xf32>
  %rn = dist.reduce_scatter sum %n on @mesh axes = ["tp"] dim = 0 : tensor<64x768xf32> -> tensor<32x768xf32>
  return %r, %y, %rz, %rt, %rn : tensor<32x2048xf32>, tensor<64x2048xf32>, tensor<32x2048xf32>, tensor<1024x64xf32>, tensor<32x768xf32>
}
