// Reductions over a few slices of many elements (GQA's key and value
// gradients summed over the query heads sharing them): each slice fills the
// 128 partitions as [128, C / 128] tiles and the Vector Engine combines
// them. A bf16 sum over 8 heads per group (columns in two 2048-wide
// chunks), an f32 max over a leading dim of 3, and an i32 sum; compiled by
// trn-cc and run on the simulator, they match the reference evaluator. The
// profile shows tensor_tensor combines and no matmul.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 3 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison --profile-summary | FileCheck %s --check-prefix=PROFILE
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-2 | FileCheck %s
// CHECK: 3 outputs match
// PROFILE: tensor_tensor
// PROFILE-NOT: matmul
func.func @few_slices(%k: tensor<2x8x256x2048xbf16>, %m: tensor<3x128x64xf32>, %i: tensor<4x2x1024xi32>) -> (tensor<2x256x2048xbf16>, tensor<128x64xf32>, tensor<4x1024xi32>) {
  %0 = trn.reduce sum %k, dims = [1] : (tensor<2x8x256x2048xbf16>) -> tensor<2x256x2048xbf16>
  %1 = trn.reduce max %m, dims = [0] : (tensor<3x128x64xf32>) -> tensor<128x64xf32>
  %2 = trn.reduce sum %i, dims = [1] : (tensor<4x2x1024xi32>) -> tensor<4x1024xi32>
  return %0, %1, %2 : tensor<2x256x2048xbf16>, tensor<128x64xf32>, tensor<4x1024xi32>
}
