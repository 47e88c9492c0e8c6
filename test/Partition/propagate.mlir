// RUN: trn-opt %s -dist-propagate -split-input-file | FileCheck %s
// Partitioned (dist-spmd), every function computes what it did unpartitioned
// (reference evaluator, all ranks against one device; one replica's step
// against the function on each replica's share):
// RUN: %trn_python %S/Inputs/check_partition.py %s --tools %trn_obj_root/bin -- -dist-propagate -dist-spmd | FileCheck %s --check-prefix=EVAL
// EVAL: checked 20 functions (4 of one replica's step); skipped 0 splits

// Megatron's MLP: the seeds are the weights (W1 column-parallel, W2
// row-parallel). The hidden activation is split on its ffn dimension, gelu
// keeps it, and the second matmul contracts the split dimension: its result
// is a partial sum over tp (the partitioner's one all-reduce).
dist.mesh @mesh <tp = 4>
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>}
// CHECK-SAME: -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}], partial = {"tp"}>})
// CHECK: trn.dot_general {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}]>]}
// CHECK: trn.gelu {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}]>]}
// CHECK: trn.dot_general {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {}], partial = {"tp"}>]}
func.func @mlp(%x: tensor<8x16xf32>,
               %w1: tensor<16x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
               %w2: tensor<64x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x16xf32> {
  %h = trn.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %g = trn.gelu %h : tensor<8x64xf32>
  %y = trn.dot_general %g, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Heads: a [B*S, H*D] projection reshaped to [B, S, H, D] carries the tp
// split of its hidden dimension to the heads dimension (H = 8 divides by 4);
// the softmax over keys keeps it (its own dimension stays whole).
dist.mesh @mesh <tp = 4>
// CHECK-LABEL: func.func @heads
// CHECK: trn.reshape {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {}, {"tp"}, {}]>]}
// CHECK: trn.transpose {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}, {}, {}]>]}
// CHECK: trn.softmax {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}, {}, {}]>]}
func.func @heads(%q: tensor<32x512xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<2x8x16x64xf32> {
  %r = trn.reshape %q : (tensor<32x512xf32>) -> tensor<2x16x8x64xf32>
  %t = trn.transpose %r, perm = [0, 2, 1, 3] : (tensor<2x16x8x64xf32>) -> tensor<2x8x16x64xf32>
  %s = trn.softmax %t, dim = 3 : tensor<2x8x16x64xf32>
  return %s : tensor<2x8x16x64xf32>
}

// -----

// A rotation (rotary embeddings) keeps its rows' sharding; the rotated
// dimension stays whole.
dist.mesh @mesh <tp = 4>
// CHECK-LABEL: func.func @rotate_half
// CHECK: trn.rotate_half {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"tp"}, {}]>]}
func.func @rotate_half(%x: tensor<8x64xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x64xf32> {
  %r = trn.rotate_half %x : tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

// A softmax over a split dimension keeps it split (vocabulary-parallel
// logits): dist-spmd reduces its max and sum over the axis.
dist.mesh @mesh <tp = 4>
// CHECK-LABEL: func.func @softmax_dim
// CHECK: trn.softmax {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}]>]}
func.func @softmax_dim(%x: tensor<8x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8x64xf32> {
  %s = trn.softmax %x, dim = 1 : tensor<8x64xf32>
  return %s : tensor<8x64xf32>
}

// -----

// Backward propagation: a constrained result gives its unannotated
// operands their sharding (the batch split over dp reaches the argument).
dist.mesh @mesh <dp = 2, tp = 4>
// CHECK-LABEL: func.func @backward
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>}
// CHECK: trn.exp {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"dp"}, {}]>]}
// CHECK: dist.sharding_constraint
func.func @backward(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = trn.exp %x : tensor<8x16xf32>
  %c = dist.sharding_constraint %e <@mesh, [{"dp"}, {}]> : tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// Conflicts: the weight (user-annotated) wins over the activation's split
// of the same factor; a sum over a split dimension is a partial sum, a max
// over it is not allowed to split (the reduced dimension stays whole).
dist.mesh @mesh <dp = 2, tp = 4>
// CHECK-LABEL: func.func @conflict
// CHECK: trn.add {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}]>]}
// CHECK: trn.reduce sum {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}], partial = {"tp"}>]}
// CHECK: trn.reduce max {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}]>]}
func.func @conflict(%a: tensor<8x64xf32>,
                    %b: tensor<8x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>})
    -> (tensor<8xf32>, tensor<8xf32>) {
  %s = trn.add %a, %b : tensor<8x64xf32>
  %r = trn.reduce sum %s, dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  %m = trn.reduce max %s, dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  return %r, %m : tensor<8xf32>, tensor<8xf32>
}

// -----

// Layer norm: leading (token) dimensions pass, the normalised one stays
// whole; the statistics follow the leading dimensions.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @norm
// CHECK: trn.layer_norm {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"dp"}, {}]>, #dist.sharding<@mesh, [{"dp"}]>, #dist.sharding<@mesh, [{"dp"}]>]}
func.func @norm(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
                %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %y, %mean, %rstd = trn.layer_norm %x, %w, %b, axis = 1, eps = 1.0e-05 : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>)
  return %y : tensor<8x16xf32>
}

// -----

// As many tokens as features (2048 tokens of hidden size 2048): the weight,
// the bias and their gradients stay whole, the statistics split with the
// tokens, told apart by their place in the op, not by shape.
dist.mesh @mesh <tp = 2>
// CHECK-LABEL: func.func @square_norm
// CHECK-SAME: %arg1: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{}]>}, %arg2: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{}]>}
// CHECK: trn.layer_norm {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"tp"}, {}]>, #dist.sharding<@mesh, [{"tp"}]>, #dist.sharding<@mesh, [{"tp"}]>]}
// CHECK: trn.layer_norm_grad {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"tp"}, {}]>, #dist.sharding<@mesh, [{}], partial = {"tp"}>, #dist.sharding<@mesh, [{}], partial = {"tp"}>]}
// CHECK: trn.rms_norm {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"tp"}, {}]>, #dist.sharding<@mesh, [{"tp"}]>]}
// CHECK: trn.rms_norm_grad {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"tp"}, {}]>, #dist.sharding<@mesh, [{}], partial = {"tp"}>]}
func.func @square_norm(%x: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>},
                       %w: tensor<16xf32>, %b: tensor<16xf32>, %dy: tensor<16x16xf32>)
    -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>) {
  %y, %mean, %rstd = trn.layer_norm %x, %w, %b, axis = 1, eps = 1.0e-05 : (tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %dx, %dw, %db = trn.layer_norm_grad %dy, %x, %mean, %rstd, %w, axis = 1 : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %z, %r = trn.rms_norm %x, %w, axis = 1, eps = 1.0e-05 : (tensor<16x16xf32>, tensor<16xf32>) -> (tensor<16x16xf32>, tensor<16xf32>)
  %dz, %dg = trn.rms_norm_grad %dy, %x, %r, %w, axis = 1 : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16x16xf32>, tensor<16xf32>)
  return %y, %dx, %dw, %db, %z, %dz, %dg : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>
}

// -----

// No mesh: nothing to partition, the graph is left alone.
// CHECK-LABEL: func.func @no_mesh
// CHECK-NOT: dist.sharding
func.func @no_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = trn.exp %x : tensor<8xf32>
  return %e : tensor<8xf32>
}

// -----

// Embedding lookup and its gradient: the ids' batch split reaches the
// gathered rows; scattering split updates back into the table sums over the
// batch, so the table gradient is a partial sum over dp. The indexed
// (vocabulary) dimension stays whole.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @embedding
// CHECK: trn.gather {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"dp"}, {}, {}]>]}
// CHECK: trn.scatter_add {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {}], partial = {"dp"}>]}
func.func @embedding(%table: tensor<16x8xf32>,
                     %ids: tensor<4x6xi32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
                     %grad: tensor<4x6x8xf32>) -> (tensor<4x6x8xf32>, tensor<16x8xf32>) {
  %rows = trn.gather %table[%ids], axis = 0 : (tensor<16x8xf32>, tensor<4x6xi32>) -> tensor<4x6x8xf32>
  %zero = trn.constant dense<0.0> : tensor<16x8xf32>
  %dtable = trn.scatter_add %zero[%ids], %rows, axis = 0 : (tensor<16x8xf32>, tensor<4x6xi32>, tensor<4x6x8xf32>) -> tensor<16x8xf32>
  return %rows, %dtable : tensor<4x6x8xf32>, tensor<16x8xf32>
}

// -----

// A tied embedding's gradient: the lookup's part is a pending sum over dp,
// the LM head's part is split over tp on the vocabulary. The pending sum is
// split like its use (each rank scatters only its vocabulary rows) and stays
// pending: no whole table on every rank.
dist.mesh @mesh <dp = 2, tp = 2>
// CHECK-LABEL: func.func @tied_embedding_gradient
// CHECK: trn.scatter_add {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"tp"}, {}], partial = {"dp"}>]}
// CHECK: trn.add {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{"tp"}, {}]{{.*}}>]}
func.func @tied_embedding_gradient(%ids: tensor<4x6xi32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
                                   %rows: tensor<4x6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}, {}]>},
                                   %head: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<16x8xf32> {
  %zero = trn.constant dense<0.0> : tensor<16x8xf32>
  %dtable = trn.scatter_add %zero[%ids], %rows, axis = 0 : (tensor<16x8xf32>, tensor<4x6xi32>, tensor<4x6x8xf32>) -> tensor<16x8xf32>
  %sum = trn.add %head, %dtable : tensor<16x8xf32>
  return %sum : tensor<16x8xf32>
}

// -----

// ZeRO-1: once settled, every optimizer state is further split over dp on
// the first dimension the split divides (after its tp split), and so is its
// updated value (the same buffer).
dist.mesh @mesh <dp = 2, tp = 2>
// RUN: trn-opt %s -dist-propagate=zero1=true -split-input-file | FileCheck %s --check-prefix=ZERO
// ZERO-LABEL: func.func @zero1
// ZERO-SAME: tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {"tp"}]>, trn.role = "optimizer_state"}
// ZERO-SAME: tensor<3xf32> {dist.sharding = #dist.sharding<@mesh, [{}]>, trn.role = "optimizer_state"}
// ZERO-SAME: -> (tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {"tp"}]>, trn.aliases = 1 : i64}
func.func @zero1(%p: tensor<8x4xf32> {trn.role = "parameter", dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>},
                 %m: tensor<8x4xf32> {trn.role = "optimizer_state"},
                 %odd: tensor<3xf32> {trn.role = "optimizer_state"})
    -> (tensor<8x4xf32> {trn.aliases = 1 : i64}, tensor<3xf32> {trn.aliases = 2 : i64}) {
  %n = trn.add %m, %p : tensor<8x4xf32>
  %o = trn.exp %odd : tensor<3xf32>
  return %n, %o : tensor<8x4xf32>, tensor<3xf32>
}

// -----

// A fused QKV projection: the weight's output features are 3 blocks (q, k,
// v) each split over tp. A slice taking one whole block is split
// contiguously; concatenating the three blocks' gradients gives the
// block-wise split back.
dist.mesh @mesh <tp = 2>
// CHECK-LABEL: func.func @fused_qkv
// CHECK: trn.dot_general {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, 3x{"tp"}]>]}
// CHECK-COUNT-3: trn.slice {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}]>]}
// CHECK: trn.concatenate {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, 3x{"tp"}]>]}
func.func @fused_qkv(%x: tensor<8x16xf32>,
                     %w: tensor<16x48xf32> {dist.sharding = #dist.sharding<@mesh, [{}, 3x{"tp"}]>}) -> tensor<8x48xf32> {
  %qkv = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x48xf32>) -> tensor<8x48xf32>
  %q = trn.slice %qkv, start = [0, 0], limit = [8, 16], strides = [1, 1] : (tensor<8x48xf32>) -> tensor<8x16xf32>
  %k = trn.slice %qkv, start = [0, 16], limit = [8, 32], strides = [1, 1] : (tensor<8x48xf32>) -> tensor<8x16xf32>
  %v = trn.slice %qkv, start = [0, 32], limit = [8, 48], strides = [1, 1] : (tensor<8x48xf32>) -> tensor<8x16xf32>
  %eq = trn.exp %q : tensor<8x16xf32>
  %ek = trn.exp %k : tensor<8x16xf32>
  %ev = trn.exp %v : tensor<8x16xf32>
  %g = trn.concatenate %eq, %ek, %ev dim = 1 : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x48xf32>
  return %g : tensor<8x48xf32>
}

// -----

// Merging [B, H] for a batched matmul while H is split gives the merged
// dimension split block-wise (B blocks), and the matmul's batch factor
// takes it: no gather around the attention.
dist.mesh @mesh <tp = 2>
// CHECK-LABEL: func.func @merged_heads
// CHECK: trn.reshape {{.*}} {dist.sharding = [#dist.sharding<@mesh, [2x{"tp"}, {}, {}]>]}
// CHECK: trn.dot_general {{.*}} {dist.sharding = [#dist.sharding<@mesh, [2x{"tp"}, {}, {}]>]}
// CHECK: trn.reshape {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"tp"}, {}, {}]>]}
func.func @merged_heads(%q: tensor<2x4x8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}, {}, {}]>},
                        %k: tensor<2x4x16x8xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}, {}, {}]>}) -> tensor<2x4x8x8xf32> {
  %q3 = trn.reshape %q : (tensor<2x4x8x16xf32>) -> tensor<8x8x16xf32>
  %k3 = trn.reshape %k : (tensor<2x4x16x8xf32>) -> tensor<8x16x8xf32>
  %s = trn.dot_general %q3, %k3, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32>
  %s4 = trn.reshape %s : (tensor<8x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %s4 : tensor<2x4x8x8xf32>
}

// -----

// A reshape that splits and merges at once ([S, B*H, D] -> [S, B, H*D], the
// view nn.MultiheadAttention's batch-second attention output takes) is made
// of the factors both sides share: B, H and D. A split of B on dp goes
// through it.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @merged_heads
// CHECK: trn.reshape {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"dp"}, {}]>]} : (tensor<8x8x8xf32>) -> tensor<8x2x32xf32>
func.func @merged_heads(%x: tensor<8x8x8xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"dp"}, {}]>}) -> tensor<8x2x32xf32> {
  %0 = trn.reshape %x : (tensor<8x8x8xf32>) -> tensor<8x2x32xf32>
  return %0 : tensor<8x2x32xf32>
}

// -----

// Without shared factors ([6, 4] -> [4, 6]) the dimensions stay whole.
dist.mesh @mesh <dp = 2>
// CHECK-LABEL: func.func @no_shared_factors
// CHECK: trn.reshape {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {}]>]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
func.func @no_shared_factors(%x: tensor<6x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<4x6xf32> {
  %0 = trn.reshape %x : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// A batch of one second ([S, 1, D], nn.MultiheadAttention's layout) merged
// away joins the tokens before it, not the features after it: a replica
// axis on it lands on the tokens (their minor part: 4 blocks of one),
// never where a matmul contracts features.
dist.mesh @mesh <dp = 2> {dist.replica_axes = ["dp"]}
// CHECK-LABEL: func.func @batch_of_one_second
// CHECK: trn.reshape {{.*}} {dist.sharding = [#dist.sharding<@mesh, [4x{"dp"}, {}]>]} : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
func.func @batch_of_one_second(%x: tensor<4x1x8xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {"dp"}, {}]>}) -> tensor<4x8xf32> {
  %0 = trn.reshape %x : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A reshape that only moves a size-1 dimension (a batch of one's row
// vector transposed, [1, D] -> [D, 1], as a weight gradient's x^T is): the
// replica axis moves with it, so the matmul over it is a sum over the
// replicas, not a split of the weight's rows (BERT's pooler at one example
// per microbatch).
dist.mesh @mesh <dp = 2> {dist.replica_axes = ["dp"]}
// CHECK-LABEL: func.func @row_vector_transposed
// CHECK: trn.reshape {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"dp"}]>]} : (tensor<1x8xf32>) -> tensor<8x1xf32>
// CHECK: trn.dot_general {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {}], partial = {"dp"}>]}
func.func @row_vector_transposed(%dy: tensor<1x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
                                 %x: tensor<1x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<8x8xf32> {
  %t = trn.reshape %dy : (tensor<1x8xf32>) -> tensor<8x1xf32>
  %g = trn.dot_general %t, %x, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x1xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
  return %g : tensor<8x8xf32>
}

// -----

// A size-1 dimension a reshape adds ([B, H, S, D] -> [1, B, H, S, D], q
// before it is stacked with k and v) is new: the replica axis stays on the
// batch, never on the new dimension (which the stacking then uses).
dist.mesh @mesh <dp = 2> {dist.replica_axes = ["dp"]}
// CHECK-LABEL: func.func @unit_dimension_added
// CHECK: trn.reshape {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}, {"dp"}, {}, {}, {}]>]} : (tensor<2x2x6x4xf32>) -> tensor<1x2x2x6x4xf32>
func.func @unit_dimension_added(%q: tensor<2x2x6x4xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}, {}, {}]>}) -> tensor<1x2x2x6x4xf32> {
  %0 = trn.reshape %q : (tensor<2x2x6x4xf32>) -> tensor<1x2x2x6x4xf32>
  return %0 : tensor<1x2x2x6x4xf32>
}

// -----

// A bias gradient (a sum over the batch) whose user is reached before its
// operand's split: the sum still becomes pending over dp (it was fixed
// whole, and nothing averaged it over the replicas).
dist.mesh @mesh <dp = 2> {dist.replica_axes = ["dp"]}
// CHECK-LABEL: func.func @bias_gradient
// CHECK: trn.reduce sum {{.*}} {dist.sharding = [#dist.sharding<@mesh, [{}], partial = {"dp"}>]}
func.func @bias_gradient(%b: tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [{}]>, trn.role = "parameter"},
                         %g: tensor<4x2x8xf32> {trn.role = "data"}) -> (tensor<8xf32> {trn.aliases = 0 : i64}) {
  %t = trn.transpose %g, perm = [1, 0, 2] : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  %c = trn.constant dense<1.0> : tensor<2x4x8xf32>
  %m = trn.mul %t, %c : tensor<2x4x8xf32>
  %u = trn.transpose %m, perm = [1, 0, 2] : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
  %s = trn.reduce sum %u, dims = [0, 1] : (tensor<4x2x8xf32>) -> tensor<8xf32>
  %n = trn.add %b, %s : tensor<8xf32>
  %k = dist.sharding_constraint %t <@mesh, [{"dp"}, {}, {}]> : tensor<2x4x8xf32>
  return %n : tensor<8xf32>
}
