// RUN: trn-opt %s -dist-seed="mesh=dp=2,tp=4" -split-input-file | FileCheck %s
// Seeded, propagated and partitioned, every function computes what it did
// unpartitioned (reference evaluator):
// RUN: %trn_python %S/Inputs/check_partition.py %s --tools %trn_obj_root/bin -- -dist-seed="mesh=dp=2,tp=4" -dist-propagate -dist-spmd | FileCheck %s --check-prefix=EVAL
// RUN: %trn_python %S/Inputs/check_partition.py %s --tools %trn_obj_root/bin -- -dist-seed="mesh=dp=2,tp=2 sequence-parallel=true" -dist-propagate -dist-spmd | FileCheck %s --check-prefix=EVAL
// EVAL: checked 3 functions (0 of one replica's step); skipped 0 splits

// Megatron's pairs found in the graph: the QKV projection feeds (through
// the attention) the output projection: column then row; the MLP's first
// matmul feeds its second through gelu. A weight read transposed (x @ W^T,
// torch's Linear layout) is split on the right dimension. The batch input
// is split over dp.
// CHECK: dist.mesh @mesh <dp = 2, tp = 4>
// CHECK-LABEL: func.func @block
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<8x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.role = "data"}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<64x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>, trn.role = "parameter"}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<64x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>, trn.role = "parameter"}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<256x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>, trn.role = "parameter"}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<256x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>, trn.role = "parameter"}
func.func @block(%x: tensor<8x64xf32> {trn.role = "data"},
                 %wq: tensor<64x64xf32> {trn.role = "parameter"},
                 %wo: tensor<64x64xf32> {trn.role = "parameter"},
                 %w1: tensor<256x64xf32> {trn.role = "parameter"},
                 %w2: tensor<256x64xf32> {trn.role = "parameter"})
    -> tensor<8x64xf32> {
  %q = trn.dot_general %x, %wq, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %s = trn.softmax %q, dim = 1 : tensor<8x64xf32>
  %o = trn.dot_general %s, %wo, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %w1t = trn.transpose %w1, perm = [1, 0] : (tensor<256x64xf32>) -> tensor<64x256xf32>
  %h = trn.dot_general %o, %w1t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %g = trn.gelu %h : tensor<8x256xf32>
  %y = trn.dot_general %g, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// A module with a mesh keeps it (the option is ignored); a user's sharding
// is left alone, and the pair it would start is not seeded from it.
dist.mesh @m <dp = 2, tp = 2>
// CHECK: dist.mesh @m <dp = 2, tp = 2>
// CHECK-NOT: dist.mesh
// CHECK-LABEL: func.func @keep
// CHECK-SAME: tensor<4x8xi64> {dist.sharding = #dist.sharding<@m, [{"dp"}, {}]>, trn.role = "label"}
// CHECK-SAME: tensor<8x8xf32> {dist.sharding = #dist.sharding<@m, [{}, {}]>, trn.role = "parameter"}
// CHECK-SAME: tensor<8x8xf32> {dist.sharding = #dist.sharding<@m, [{"tp"}, {}]>, trn.role = "parameter"}
func.func @keep(%labels: tensor<4x8xi64> {trn.role = "label"},
                %w: tensor<8x8xf32> {trn.role = "parameter", dist.sharding = #dist.sharding<@m, [{}, {}]>},
                %w2: tensor<8x8xf32> {trn.role = "parameter"}) -> tensor<8x8xf32> {
  %a = trn.dot_general %w, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %b = trn.dot_general %a, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}

// -----

// Sequence parallelism: every norm's [batch, sequence, hidden] input is
// constrained to be split on the sequence over tp (and the batch over dp):
// a layer norm, and a norm written out (its statistic sums the hidden
// dimension).
// RUN: trn-opt %s -dist-seed="mesh=dp=2,tp=2 sequence-parallel=true" -split-input-file | FileCheck %s --check-prefix=SP
// SP-LABEL: func.func @norms
// SP: %[[C:.*]] = dist.sharding_constraint %arg0 <@mesh, [{"dp"}, {"tp"}, {}]> : tensor<4x8x16xf32>
// SP: trn.layer_norm %[[C]]
// SP: %[[D:.*]] = dist.sharding_constraint %{{.*}} <@mesh, [{"dp"}, {"tp"}, {}]> : tensor<4x8x16xf32>
// SP: trn.reduce sum %[[D]], dims = [2]
func.func @norms(%x: tensor<4x8x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>) {
  %y, %m, %r = trn.layer_norm %x, %w, %b, axis = 2, eps = 1.0e-05 : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %sq = trn.mul %y, %y : tensor<4x8x16xf32>
  %s = trn.reduce sum %sq, dims = [2] : (tensor<4x8x16xf32>) -> tensor<4x8xf32>
  return %y, %s : tensor<4x8x16xf32>, tensor<4x8xf32>
}
