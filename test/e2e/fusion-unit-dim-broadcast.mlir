// A fused group that reads a [rows, 1] statistic broadcast along a unit dim
// (RMSNorm as PyTorch writes it: x * rsqrt(mean(x^2, -1, keepdim) + eps) * w)
// takes the group's shape from its largest value, not from the first value of
// its rank it meets. Compiled by trn-cc and run on the simulator, it matches
// the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-opt %s -trn-fuse-elementwise | FileCheck %s --check-prefix=FUSED
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 5 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// FUSED: trn.fusion({{.*}} : tensor<4x16x64xf32>, tensor<4x16x1xf32>, tensor<64xf32>)
// FUSED: trn.broadcast_in_dim {{.*}} dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x64xf32>
// CHECK: 1 outputs match
func.func @rms(%x: tensor<4x16x64xf32>, %w: tensor<64xf32>) -> tensor<4x16x64xf32> {
  %sq = trn.mul %x, %x : tensor<4x16x64xf32>
  %sum = trn.reduce sum %sq, dims = [2] : (tensor<4x16x64xf32>) -> tensor<4x16xf32>
  %col = trn.reshape %sum : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
  %n = trn.constant dense<64.0> : tensor<4x16x1xf32>
  %eps = trn.constant dense<1.0e-5> : tensor<4x16x1xf32>
  %mean = trn.div %col, %n : tensor<4x16x1xf32>
  %shift = trn.add %mean, %eps : tensor<4x16x1xf32>
  %r = trn.rsqrt %shift : tensor<4x16x1xf32>
  %rb = trn.broadcast_in_dim %r, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x64xf32>
  %wb = trn.broadcast_in_dim %w, dims = [2] : (tensor<64xf32>) -> tensor<4x16x64xf32>
  %y = trn.mul %x, %rb : tensor<4x16x64xf32>
  %z = trn.mul %y, %wb : tensor<4x16x64xf32>
  return %z : tensor<4x16x64xf32>
}
