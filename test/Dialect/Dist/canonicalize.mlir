// RUN: trn-opt %s -canonicalize -split-input-file | FileCheck %s

dist.mesh @mesh <dp = 2, tp = 4>

// A slice along heads of a gather along the sequence, over the same axes,
// is one all_to_all: each rank gets its heads of every rank's rows.
// CHECK-LABEL: func.func @slice_of_gather
// CHECK-NEXT: %[[R:.*]] = dist.all_to_all %arg0 on @mesh axes = ["tp"] split_dim = 1 concat_dim = 2 : tensor<1x8x16x4xf32> -> tensor<1x2x64x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @slice_of_gather(%x: tensor<1x8x16x4xf32>) -> tensor<1x2x64x4xf32> {
  %0 = dist.all_gather %x on @mesh axes = ["tp"] dim = 2 : tensor<1x8x16x4xf32> -> tensor<1x8x64x4xf32>
  %1 = dist.all_slice %0 on @mesh axes = ["tp"] dim = 1 : tensor<1x8x64x4xf32> -> tensor<1x2x64x4xf32>
  return %1 : tensor<1x2x64x4xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>

// Left alone: the gathered value has another user, or the axes differ. A
// slice along the gather's own dim gives each rank its input back.
// CHECK-LABEL: func.func @slice_of_gather_not
// CHECK-COUNT-2: dist.all_gather
// CHECK-NOT: dist.all_to_all
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %arg0 :
func.func @slice_of_gather_not(%x: tensor<8x16xf32>) -> (tensor<8x64xf32>, tensor<2x64xf32>, tensor<4x64xf32>, tensor<8x16xf32>) {
  %0 = dist.all_gather %x on @mesh axes = ["tp"] dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  %1 = dist.all_slice %0 on @mesh axes = ["tp"] dim = 0 : tensor<8x64xf32> -> tensor<2x64xf32>
  %2 = dist.all_gather %x on @mesh axes = ["tp"] dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  %3 = dist.all_slice %2 on @mesh axes = ["dp"] dim = 0 : tensor<8x64xf32> -> tensor<4x64xf32>
  %4 = dist.all_gather %x on @mesh axes = ["tp"] dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  %5 = dist.all_slice %4 on @mesh axes = ["tp"] dim = 1 : tensor<8x64xf32> -> tensor<8x16xf32>
  return %0, %1, %3, %5 : tensor<8x64xf32>, tensor<2x64xf32>, tensor<4x64xf32>, tensor<8x16xf32>
}
