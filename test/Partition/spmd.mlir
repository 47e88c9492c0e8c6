// RUN: trn-opt %s -dist-propagate -dist-spmd -split-input-file -verify-diagnostics | FileCheck %s
// Every function also computes what it did unpartitioned (on the reference
// evaluator, all ranks against one device):
// RUN: %trn_python %S/Inputs/check_partition.py %s --tools %trn_obj_root/bin -- -dist-propagate -dist-spmd | FileCheck %s --check-prefix=EVAL
// EVAL: checked 9 functions (0 of one replica's step); skipped 1 splits that expect errors

// A GPT block's forward at tp = 4 with Megatron's weight shardings (QKV and
// MLP-in column-parallel, attention-out and MLP-out row-parallel): heads
// split through reshape and transpose, and exactly Megatron's two
// all-reduces (after the attention projection and after the MLP), nothing
// gathered. Every rank holds a quarter of each weight.
dist.mesh @mesh <tp = 4>
// CHECK-LABEL: func.func @gpt_block
// CHECK-SAME: tensor<64x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}
// CHECK-SAME: tensor<16x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: -> (tensor<8x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>})
// CHECK-NOT: dist.all_gather
// CHECK: trn.reshape {{.*}} : (tensor<8x16xf32>) -> tensor<8x1x16xf32>
// CHECK: trn.softmax {{.*}} : tensor<1x8x8xf32>
// CHECK: %[[ATTN:.*]] = trn.dot_general {{.*}} -> tensor<8x64xf32>
// CHECK: dist.all_reduce sum %[[ATTN]] on @mesh axes = ["tp"] : tensor<8x64xf32>
// CHECK-NOT: dist.all_gather
// CHECK: trn.gelu {{.*}} : tensor<8x64xf32>
// CHECK: %[[MLP:.*]] = trn.dot_general {{.*}} -> tensor<8x64xf32>
// CHECK: dist.all_reduce sum %[[MLP]] on @mesh axes = ["tp"] : tensor<8x64xf32>
// CHECK-NOT: dist.all_
// CHECK: return
func.func @gpt_block(%x: tensor<8x64xf32>, %lw: tensor<64xf32>, %lb: tensor<64xf32>,
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

// -----

// Resharding where a use wants another split: the softmax over dimension 1
// keeps the argument's column split (a fixed argument's split is kept
// before a constraint's), reducing its max and sum over tp; the constraint
// then asks for rows, so the columns are gathered and the rows sliced.
dist.mesh @mesh <tp = 2>
// CHECK-LABEL: func.func @reshard
// CHECK: dist.all_reduce max {{.*}} : tensor<4xf32>
// CHECK: dist.all_reduce sum {{.*}} : tensor<4xf32>
// CHECK: %[[S:.*]] = trn.div {{.*}} : tensor<4x8xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[S]] on @mesh axes = ["tp"] dim = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK: %[[L:.*]] = dist.all_slice %[[G]] on @mesh axes = ["tp"] dim = 0 : tensor<4x16xf32> -> tensor<2x16xf32>
// CHECK: return %[[L]]
func.func @reshard(%x: tensor<4x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<4x16xf32> {
  %s = trn.softmax %x, dim = 1 : tensor<4x16xf32>
  %c = dist.sharding_constraint %s <@mesh, [{"tp"}, {}]> : tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// -----

dist.mesh @mesh <tp = 4>
// expected-error @+1 {{argument 0 dimension 1 (size 50) is not divisible by the 4 devices of tp}}
func.func @uneven(%x: tensor<8x50xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8x50xf32> {
  return %x : tensor<8x50xf32>
}

// -----

// A pending sum passes through a transpose (it only moves elements) and is
// reduced once for the two uses that want it whole.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @pass_through
// CHECK: %[[P:.*]] = trn.dot_general
// CHECK: %[[T:.*]] = trn.transpose %[[P]]
// CHECK: %[[R:.*]] = dist.all_reduce sum %[[T]] on @mesh axes = ["dp"] : tensor<4x8xf32>
// CHECK-NOT: dist.
// CHECK: trn.exp %[[R]]
// CHECK: trn.tanh %[[R]]
func.func @pass_through(%x: tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
                        %y: tensor<6x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>})
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %g = trn.dot_general %x, %y, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<6x8xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  %t = trn.transpose %g, perm = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %a = trn.exp %t : tensor<4x8xf32>
  %b = trn.tanh %t : tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A slice along a whole dimension of a split tensor keeps the split: its
// window on the split dimension becomes the local size.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @slice
// CHECK: trn.slice %{{.*}}, start = [0, 2], limit = [4, 6], strides = [1, 1] : (tensor<4x8xf32>) -> tensor<4x4xf32>
func.func @slice(%x: tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<8x4xf32> {
  %s = trn.slice %x, start = [0, 2], limit = [8, 6], strides = [1, 1] : (tensor<8x8xf32>) -> tensor<8x4xf32>
  %c = dist.sharding_constraint %s <@mesh, [{"dp"}, {}]> : tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

// A pending sum wanted split on the reduced axis is reduce-scattered, not
// all-reduced then sliced (here before the transpose, whose result the
// constraint wants split on dp); the two uses share the value.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @reduce_scatter
// CHECK: %[[P:.*]] = trn.dot_general {{.*}} -> tensor<8x4xf32>
// CHECK: %[[RS:.*]] = dist.reduce_scatter sum %[[P]] on @mesh axes = ["dp"] dim = 1 : tensor<8x4xf32> -> tensor<8x2xf32>
// CHECK: %[[T:.*]] = trn.transpose %[[RS]], perm = [1, 0] : (tensor<8x2xf32>) -> tensor<2x8xf32>
// CHECK-NOT: dist.
// CHECK: trn.exp %[[T]]
// CHECK: trn.tanh %[[T]]
func.func @reduce_scatter(%x: tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
                          %y: tensor<6x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>})
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %g = trn.dot_general %x, %y, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<6x8xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  %t = trn.transpose %g, perm = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %c = dist.sharding_constraint %t <@mesh, [{"dp"}, {}]> : tensor<4x8xf32>
  %a = trn.exp %c : tensor<4x8xf32>
  %b = trn.tanh %c : tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Block-wise splits in the SPMD program: each rank's part of a fused QKV
// projection holds its heads of q, k and v, so the slices take the local
// block windows ([0, 8), [8, 16), [16, 24) of 24 local features) and
// nothing moves; a use that wants the contiguous split gathers the blocks
// (reshaped to [blocks, block]) and slices.
dist.mesh @mesh <tp = 2>
// CHECK-LABEL: func.func @fused_qkv
// CHECK-SAME: tensor<16x24xf32> {dist.sharding = #dist.sharding<@mesh, [{}, 3x{"tp"}]>}
// CHECK: trn.dot_general {{.*}} -> tensor<8x24xf32>
// CHECK: trn.slice %{{.*}}, start = [0, 0], limit = [8, 8]
// CHECK: trn.slice %{{.*}}, start = [0, 8], limit = [8, 16]
// CHECK: trn.slice %{{.*}}, start = [0, 16], limit = [8, 24]
// CHECK: %[[B:.*]] = trn.reshape %{{.*}} : (tensor<8x24xf32>) -> tensor<8x3x8xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[B]] on @mesh axes = ["tp"] dim = 2 : tensor<8x3x8xf32> -> tensor<8x3x16xf32>
// CHECK: %[[M:.*]] = trn.reshape %[[G]] : (tensor<8x3x16xf32>) -> tensor<8x48xf32>
// CHECK: dist.all_slice %[[M]] on @mesh axes = ["tp"] dim = 1 : tensor<8x48xf32> -> tensor<8x24xf32>
func.func @fused_qkv(%x: tensor<8x16xf32>,
                     %w: tensor<16x48xf32> {dist.sharding = #dist.sharding<@mesh, [{}, 3x{"tp"}]>})
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x48xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}) {
  %qkv = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x48xf32>) -> tensor<8x48xf32>
  %q = trn.slice %qkv, start = [0, 0], limit = [8, 16], strides = [1, 1] : (tensor<8x48xf32>) -> tensor<8x16xf32>
  %k = trn.slice %qkv, start = [0, 16], limit = [8, 32], strides = [1, 1] : (tensor<8x48xf32>) -> tensor<8x16xf32>
  %v = trn.slice %qkv, start = [0, 32], limit = [8, 48], strides = [1, 1] : (tensor<8x48xf32>) -> tensor<8x16xf32>
  %c = dist.sharding_constraint %qkv <@mesh, [{}, {"tp"}]> : tensor<8x48xf32>
  return %q, %k, %v, %c : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x48xf32>
}

// -----

// Two column-parallel matmuls read one input (Llama's gate and up): their
// input gradients are pending sums over tp, added while pending and
// all-reduced once. A pending sum plus a complete value (the residual) is
// reduced first. One splat constant serves a row- and a column-split use:
// it is made again at each use's sharding, never moved.
dist.mesh @mesh <tp = 2>
// CHECK-LABEL: func.func @pending_add
// CHECK: %[[A:.*]] = trn.dot_general {{.*}} -> tensor<8x16xf32>
// CHECK: %[[B:.*]] = trn.dot_general {{.*}} -> tensor<8x16xf32>
// CHECK: %[[S:.*]] = trn.add %[[A]], %[[B]] : tensor<8x16xf32>
// CHECK: %[[R:.*]] = dist.all_reduce sum %[[S]] on @mesh axes = ["tp"]
// CHECK: trn.add %[[R]], %{{.*}} : tensor<8x16xf32>
// CHECK-NOT: dist.all_
// CHECK: trn.constant dense<5.000000e-01> : tensor<8x16xf32>
// CHECK-NOT: dist.all_
// CHECK: trn.constant dense<5.000000e-01> : tensor<16x8xf32>
// CHECK-NOT: dist.all_
// CHECK: return
func.func @pending_add(%dg: tensor<8x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
                       %du: tensor<8x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
                       %wg: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
                       %wu: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
                       %res: tensor<8x16xf32>,
                       %p: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>},
                       %q: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>})
    -> (tensor<8x16xf32>, tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>},
        tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}) {
  %a = trn.dot_general %dg, %wg, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  %b = trn.dot_general %du, %wu, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  %s = trn.add %a, %b : tensor<8x16xf32>
  %t = trn.add %s, %res : tensor<8x16xf32>
  %half = trn.constant dense<0.5> : tensor<16x16xf32>
  %pp = trn.mul %p, %half : tensor<16x16xf32>
  %qq = trn.mul %q, %half : tensor<16x16xf32>
  return %t, %pp, %qq : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

// Vocabulary parallelism: the embedding table split on the vocabulary
// looks up only the ids in this rank's range (ids shifted by its offset,
// the others masked to zero) and the partial lookups are all-reduced; the
// log-softmax over the split vocabulary reduces its max and sum over tp
// instead of gathering the logits.
dist.mesh @mesh <tp = 2>
// CHECK-LABEL: func.func @vocab
// CHECK: %[[R:.*]] = dist.axis_index on @mesh axes = ["tp"] : tensor<i32>
// CHECK: %[[LOCAL:.*]] = trn.sub %arg1, %{{.*}} : tensor<8xi64>
// CHECK: %[[IN:.*]] = trn.and
// CHECK: %[[IDS:.*]] = trn.select %[[IN]], %[[LOCAL]], %{{.*}} : tensor<8xi1>, tensor<8xi64>
// CHECK: %[[G:.*]] = trn.gather %arg0[%[[IDS]]], axis = 0 : (tensor<16x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
// CHECK: %[[M:.*]] = trn.select %{{.*}}, %[[G]], %{{.*}} : tensor<8x4xi1>, tensor<8x4xf32>
// CHECK: %[[MAX:.*]] = trn.reduce max %arg2, dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
// CHECK: dist.all_reduce max %[[MAX]] on @mesh axes = ["tp"] : tensor<8xf32>
// CHECK: trn.exp
// CHECK: %[[SUM:.*]] = trn.reduce sum %{{.*}}, dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
// CHECK: dist.all_reduce sum %[[SUM]] on @mesh axes = ["tp"] : tensor<8xf32>
// CHECK: trn.log
// CHECK: dist.all_reduce sum %[[M]] on @mesh axes = ["tp"] : tensor<8x4xf32>
// CHECK-NOT: dist.all_gather
func.func @vocab(%table: tensor<32x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>},
                 %ids: tensor<8xi64>,
                 %logits: tensor<8x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>})
    -> (tensor<8x4xf32>, tensor<8x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}) {
  %e = trn.gather %table[%ids], axis = 0 : (tensor<32x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
  %l = trn.log_softmax %logits, dim = 1 : tensor<8x32xf32>
  return %e, %l : tensor<8x4xf32>, tensor<8x32xf32>
}

// -----

// A squared norm over every dimension of a column-split gradient (gradient
// clipping): each rank sums its own columns and one all_reduce adds the
// ranks' sums; the gradient is not moved to a row split first.
dist.mesh @mesh <tp = 2>
// CHECK-LABEL: func.func @column_split_norm
// CHECK-NOT: dist.all_gather
// CHECK-NOT: dist.all_slice
// CHECK: trn.reduce sum {{.*}} : (tensor<8x4xf32>) -> tensor<f32>
// CHECK-NEXT: dist.all_reduce sum {{.*}} on @mesh axes = ["tp"] : tensor<f32>
func.func @column_split_norm(%g: tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<f32> {
  %sq = trn.mul %g, %g : tensor<8x8xf32>
  %n = trn.reduce sum %sq, dims = [0, 1] : (tensor<8x8xf32>) -> tensor<f32>
  return %n : tensor<f32>
}
