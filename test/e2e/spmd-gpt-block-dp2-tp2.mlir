// The same GPT block on a 2-D mesh, dp = 2 x tp = 2: the token rows split
// over dp, the weights over tp as Megatron does. The partitioned program
// (two all-reduces over tp; keys and values gathered over dp, since this
// block's rows are one sequence) evaluated on all 4 ranks equals the
// unpartitioned block.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 3 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-opt %s -dist-propagate -dist-spmd -o %t/part.mlir
// RUN: FileCheck %s --check-prefix=PART < %t/part.mlir
// PART-COUNT-2: dist.all_gather {{.*}} axes = ["dp"] dim = 1
// PART-COUNT-2: dist.all_reduce sum {{.*}} axes = ["tp"]
// RUN: trn-eval %t/part.mlir --inputs %t/in.npz --outputs %t/out.npz > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-6 | FileCheck %s
// CHECK: 1 outputs match

dist.mesh @mesh <dp = 2, tp = 2>
func.func @gpt_block(%x: tensor<8x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>}, %lw: tensor<64xf32>, %lb: tensor<64xf32>,
    %wq: tensor<64x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
    %wk: tensor<64x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
    %wv: tensor<64x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
    %wo: tensor<64x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>},
    %w1: tensor<64x256xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
    %w2: tensor<256x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x64xf32> {
  %ln, %m, %r = trn.layer_norm %x, %lw, %lb, axis = 1, eps = 1.0e-05 : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8xf32>, tensor<8xf32>)
  %q = trn.dot_general %ln, %wq, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %k = trn.dot_general %ln, %wk, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %v = trn.dot_general %ln, %wv, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %q3 = trn.reshape %q : (tensor<8x64xf32>) -> tensor<8x4x16xf32>
  %k3 = trn.reshape %k : (tensor<8x64xf32>) -> tensor<8x4x16xf32>
  %v3 = trn.reshape %v : (tensor<8x64xf32>) -> tensor<8x4x16xf32>
  %qh = trn.transpose %q3, perm = [1, 0, 2] : (tensor<8x4x16xf32>) -> tensor<4x8x16xf32>
  %kh = trn.transpose %k3, perm = [1, 0, 2] : (tensor<8x4x16xf32>) -> tensor<4x8x16xf32>
  %vh = trn.transpose %v3, perm = [1, 0, 2] : (tensor<8x4x16xf32>) -> tensor<4x8x16xf32>
  %s = trn.dot_general %qh, %kh, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  %p = trn.softmax %s, dim = 2 : tensor<4x8x8xf32>
  %c = trn.dot_general %p, %vh, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %ct = trn.transpose %c, perm = [1, 0, 2] : (tensor<4x8x16xf32>) -> tensor<8x4x16xf32>
  %c2 = trn.reshape %ct : (tensor<8x4x16xf32>) -> tensor<8x64xf32>
  %o = trn.dot_general %c2, %wo, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %x1 = trn.add %x, %o : tensor<8x64xf32>
  %h = trn.dot_general %x1, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %g = trn.gelu %h : tensor<8x256xf32>
  %y = trn.dot_general %g, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  %x2 = trn.add %x1, %y : tensor<8x64xf32>
  return %x2 : tensor<8x64xf32>
}
