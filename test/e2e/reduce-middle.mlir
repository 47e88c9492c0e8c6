// Reductions over dims that are neither all leading nor all trailing, compiled
// by trn-cc and run on the simulator, match the reference evaluator: a mean
// over the sequence of [batch, seq, hidden] (sums on the Tensor Engine per
// batch), a max over a middle dim with a small inner size (the outer indices
// on partitions, per inner index), a sum over dims 0 and 2 (two passes
// through f32 scratch), a bf16 sum and an i32 max over middle dims.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 31 --int-max 1000 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 'bf16_sum=2e-2' | FileCheck %s
// CHECK: 5 outputs match

func.func @reduce_middle(%x: tensor<3x200x96xf32> {trn.name = "x"}, %y: tensor<300x5x4xf32> {trn.name = "y"},
                         %z: tensor<4x50x30xf32> {trn.name = "z"}, %w: tensor<2x130x3x70xbf16> {trn.name = "w"},
                         %n: tensor<6x40x3xi32> {trn.name = "n"})
    -> (tensor<3x96xf32> {trn.name = "mean_seq"}, tensor<300x4xf32> {trn.name = "max_mid"},
        tensor<50xf32> {trn.name = "sum_outer"}, tensor<2x70xbf16> {trn.name = "bf16_sum"},
        tensor<6x3xi32> {trn.name = "int_max"}) {
  %sum = trn.reduce sum %x, dims = [1] : (tensor<3x200x96xf32>) -> tensor<3x96xf32>
  %inv = trn.constant dense<5.0e-03> : tensor<3x96xf32>
  %mean = trn.mul %sum, %inv : tensor<3x96xf32>
  %max = trn.reduce max %y, dims = [1] : (tensor<300x5x4xf32>) -> tensor<300x4xf32>
  %outer = trn.reduce sum %z, dims = [0, 2] : (tensor<4x50x30xf32>) -> tensor<50xf32>
  %bsum = trn.reduce sum %w, dims = [1, 2] : (tensor<2x130x3x70xbf16>) -> tensor<2x70xbf16>
  %imax = trn.reduce max %n, dims = [1] : (tensor<6x40x3xi32>) -> tensor<6x3xi32>
  return %mean, %max, %outer, %bsum, %imax : tensor<3x96xf32>, tensor<300x4xf32>, tensor<50xf32>, tensor<2x70xbf16>, tensor<6x3xi32>
}
