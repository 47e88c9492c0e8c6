// RUN: trn-opt %s -convert-trn-to-nc -split-input-file | FileCheck %s

// A matmul with its epilogue (trn-fuse-matmul-epilogue): per M block, the
// bias add reads the accumulator in PSUM directly (one input in PSUM: one
// pass), GELU writes bf16 at once (the cast is the activation's rounding),
// and only the group's result is stored; the bias, the same for every row,
// is loaded once for the column block and read by both M blocks.
// CHECK-LABEL: func.func @bias_gelu
// CHECK-SAME: (%{{.*}}: !nc.hbm<256x64xbf16> {{.*}}, %{{.*}}: !nc.hbm<64x128xbf16> {{.*}}, %[[B:.*]]: !nc.hbm<128xf32> {{.*}}, %[[Y:.*]]: !nc.hbm<256x128xbf16>
// The epilogue's instructions are the group's kind, the matmul's matmul.
// CHECK: nc.kind "matmul" {origin = "bias_gelu: trn.fusion #0"}
// CHECK: nc.matmul %[[ACC:[0-9]+]],
// CHECK-NEXT: nc.kind "elementwise" {origin = "bias_gelu: trn.fusion #0"}
// CHECK-NEXT: %[[BT:.*]] = nc.alloc : <sbuf, 128x128xf32>
// CHECK-NEXT: %[[BV:.*]] = nc.view %[[B]] strides [1] : !nc.hbm<128xf32> -> <hbm, 128x128xf32>
// CHECK-NEXT: nc.dma_copy %[[BT]], %[[BV]]
// CHECK-NEXT: %[[PRE:.*]] = nc.alloc : <sbuf, 128x128xf32>
// CHECK-NEXT: nc.tensor_tensor add %[[PRE]], %[[ACC]], %[[BT]] : <sbuf, 128x128xf32>, <psum, 128x128xf32>, <sbuf, 128x128xf32>
// CHECK-NEXT: %[[H:.*]] = nc.alloc : <sbuf, 128x128xbf16>
// CHECK-NEXT: nc.activation gelu_tanh %[[H]], %[[PRE]] : !nc.tile<sbuf, 128x128xbf16>, !nc.tile<sbuf, 128x128xf32>
// CHECK-NEXT: nc.view %[[Y]] strides [1] {partition_stride = 128 : i64}
// CHECK-NEXT: nc.dma_copy
// CHECK-NEXT: nc.kind "matmul" {origin = "bias_gelu: trn.fusion #0"}
// The second M block.
// CHECK: nc.matmul %[[ACC2:[0-9]+]],
// CHECK-NOT: nc.dma_copy
// CHECK: nc.tensor_tensor add %{{.*}}, %[[ACC2]], %[[BT]]
// CHECK: nc.activation gelu_tanh
// CHECK: nc.view %[[Y]] strides [1] {offset = 16384 : i64, partition_stride = 128 : i64}
// CHECK-NEXT: nc.dma_copy
// CHECK-NEXT: nc.kind "matmul"
// CHECK-NEXT: return
func.func @bias_gelu(%x: tensor<256x64xbf16>, %w: tensor<64x128xbf16>, %b: tensor<128xf32>) -> tensor<256x128xbf16> {
  %1 = trn.fusion(%x, %w, %b : tensor<256x64xbf16>, tensor<64x128xbf16>, tensor<128xf32>) -> (tensor<256x128xbf16>) {
  ^bb0(%a: tensor<256x64xbf16>, %v: tensor<64x128xbf16>, %c: tensor<128xf32>):
    %0 = trn.dot_general %a, %v, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<256x128xf32>
    %2 = trn.broadcast_in_dim %c, dims = [1] : (tensor<128xf32>) -> tensor<256x128xf32>
    %3 = trn.add %0, %2 : tensor<256x128xf32>
    %4 = trn.gelu %3 approximate = tanh : tensor<256x128xf32>
    %5 = trn.convert %4 : tensor<256x128xf32> -> tensor<256x128xbf16>
    trn.yield %5 : tensor<256x128xbf16>
  }
  return %1 : tensor<256x128xbf16>
}

// -----

// The matmul's result is also yielded (another user reads it): each tile
// is evicted to SBUF by the Scalar Engine, stored, and the epilogue reads
// the evicted tile; nothing is loaded back from HBM. The epilogue's other
// input is loaded before the eviction.
// CHECK-LABEL: func.func @stored_result
// CHECK-SAME: %[[R:[a-z0-9]+]]: !nc.hbm<128x128xf32> {{.*}}, %[[Y:.*]]: !nc.hbm<128x128xf32> {{.*}}, %[[D:.*]]: !nc.hbm<128x128xf32>
// CHECK: nc.matmul %[[ACC:[0-9]+]],
// CHECK-NEXT: nc.kind "elementwise"
// CHECK-NEXT: %[[RT:.*]] = nc.alloc : <sbuf, 128x128xf32>
// CHECK-NEXT: nc.view %[[R]]
// CHECK-NEXT: nc.dma_copy %[[RT]]
// CHECK-NEXT: %[[T:.*]] = nc.alloc : <sbuf, 128x128xf32>
// CHECK-NEXT: nc.activation copy %[[T]], %[[ACC]]
// CHECK-NEXT: nc.view %[[D]]
// CHECK-NEXT: nc.dma_copy %{{.*}}, %[[T]]
// CHECK: nc.tensor_tensor add %{{.*}}, %[[T]], %[[RT]]
// CHECK: nc.view %[[Y]]
// CHECK-NEXT: nc.dma_copy
// CHECK-NEXT: nc.kind "matmul"
// CHECK-NEXT: return
func.func @stored_result(%x: tensor<128x64xf32>, %w: tensor<64x128xf32>, %r: tensor<128x128xf32>) -> (tensor<128x128xf32>, tensor<128x128xf32>) {
  %1:2 = trn.fusion(%x, %w, %r : tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x128xf32>) -> (tensor<128x128xf32>, tensor<128x128xf32>) {
  ^bb0(%a: tensor<128x64xf32>, %v: tensor<64x128xf32>, %c: tensor<128x128xf32>):
    %0 = trn.dot_general %a, %v, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<128x128xf32>
    %2 = trn.add %0, %c : tensor<128x128xf32>
    trn.yield %2, %0 : tensor<128x128xf32>, tensor<128x128xf32>
  }
  return %1#0, %1#1 : tensor<128x128xf32>, tensor<128x128xf32>
}

// -----

// An epilogue that reduces rows of a result that comes out whole (1024
// columns, one column block of two PSUM banks): both banks are evicted into
// one SBUF tile of whole rows, which the row sum reads.
// CHECK-LABEL: func.func @whole_rows
// CHECK: %[[ROWS:.*]] = nc.alloc : <sbuf, 128x1024xf32>
// CHECK: %[[LO:.*]] = nc.view %[[ROWS]] strides [1] : !nc.tile<sbuf, 128x1024xf32> -> <sbuf, 128x512xf32>
// CHECK: %[[HI:.*]] = nc.view %[[ROWS]] strides [1] {offset = 512 : i64} : !nc.tile<sbuf, 128x1024xf32> -> <sbuf, 128x512xf32>
// CHECK: nc.tensor_reduce add %{{.*}}, %[[ROWS]] : <sbuf, 128x1xf32>, <sbuf, 128x1024xf32>
func.func @whole_rows(%x: tensor<128x64xbf16>, %w: tensor<64x1024xbf16>) -> tensor<128x1024xf32> {
  %0 = trn.fusion(%x, %w : tensor<128x64xbf16>, tensor<64x1024xbf16>) -> (tensor<128x1024xf32>) {
  ^bb0(%a: tensor<128x64xbf16>, %b: tensor<64x1024xbf16>):
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xbf16>, tensor<64x1024xbf16>) -> tensor<128x1024xf32>
    %2 = trn.reduce sum %1, dims = [1] : (tensor<128x1024xf32>) -> tensor<128xf32>
    %3 = trn.broadcast_in_dim %2, dims = [0] : (tensor<128xf32>) -> tensor<128x1024xf32>
    %4 = trn.sub %1, %3 : tensor<128x1024xf32>
    trn.yield %4 : tensor<128x1024xf32>
  }
  return %0 : tensor<128x1024xf32>
}

// -----

// An online sum of exponentials over rows wider than a tile: per tile, the
// Scalar Engine's exp(x - m) with m the running max (a negated column as
// the bias) sums the tile's part of each row; from the second tile on, the
// running sum is rescaled by exp(m_before - m) before the part is added.
// CHECK-LABEL: func.func @online_exp_sum
// CHECK: nc.tensor_reduce max
// CHECK: nc.tensor_scalar multiply, bypass %[[NEG:.*]], %{{.*}} {scalar0 = -1.000000e+00 : f32}
// CHECK: nc.activation exp %{{.*}}, %{{.*}} bias_column %[[NEG]] row_sum %[[PART:[^ ]*]]
// CHECK: nc.tensor_reduce max
// CHECK: nc.tensor_scalar multiply, bypass %[[NEG2:.*]], %{{.*}} {scalar0 = -1.000000e+00 : f32}
// CHECK: nc.activation exp %{{.*}}, %{{.*}} bias_column %[[NEG2]] row_sum %[[PART2:[^ ]*]]
// CHECK: nc.activation exp %[[SCALE:.*]], %{{.*}} bias_column %[[NEG2]] :
// CHECK: nc.tensor_tensor multiply %[[RESCALED:.*]], %{{.*}}, %[[SCALE]]
// CHECK: nc.tensor_tensor add %{{.*}}, %[[RESCALED]], %[[PART2]]
func.func @online_exp_sum(%h: tensor<128x64xbf16>, %w: tensor<64x1024xbf16>) -> (tensor<128xf32>, tensor<128xf32>) {
  %0:2 = trn.fusion(%h, %w : tensor<128x64xbf16>, tensor<64x1024xbf16>) -> (tensor<128xf32>, tensor<128xf32>) {
  ^bb0(%a: tensor<128x64xbf16>, %b: tensor<64x1024xbf16>):
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xbf16>, tensor<64x1024xbf16>) -> tensor<128x1024xf32>
    %2 = trn.reduce max %1, dims = [1] : (tensor<128x1024xf32>) -> tensor<128xf32>
    %3 = trn.broadcast_in_dim %2, dims = [0] : (tensor<128xf32>) -> tensor<128x1024xf32>
    %4 = trn.sub %1, %3 : tensor<128x1024xf32>
    %5 = trn.exp %4 : tensor<128x1024xf32>
    %6 = trn.reduce sum %5, dims = [1] : (tensor<128x1024xf32>) -> tensor<128xf32>
    trn.yield %2, %6 : tensor<128xf32>, tensor<128xf32>
  }
  return %0#0, %0#1 : tensor<128xf32>, tensor<128xf32>
}

// -----

// An epilogue over a column block of two PSUM banks: its full input is
// loaded for the block with the first bank's tile, and its result is
// computed into one block-wide tile, stored once after the second bank's
// (one [128, 1024] transfer each instead of two [128, 512] ones).
// CHECK-LABEL: func.func @two_bank_block
// CHECK: %[[OUT:.*]] = nc.alloc : <sbuf, 128x1024xbf16>
// CHECK: %[[IN:.*]] = nc.alloc : <sbuf, 128x1024xf32>
// CHECK: nc.dma_copy %[[IN]], %{{.*}} : <sbuf, 128x1024xf32>, <hbm, 128x1024xf32>
// CHECK-NOT: nc.dma_copy %{{.*}} : <hbm, 128x512xbf16>
// CHECK: nc.dma_copy %{{.*}}, %[[OUT]] {{.*}} : <hbm, 128x1024xbf16>, <sbuf, 128x1024xbf16>
func.func @two_bank_block(%x: tensor<128x64xbf16>, %w: tensor<64x1024xbf16>, %r: tensor<128x1024xf32>) -> tensor<128x1024xbf16> {
  %0 = trn.fusion(%x, %w, %r : tensor<128x64xbf16>, tensor<64x1024xbf16>, tensor<128x1024xf32>) -> (tensor<128x1024xbf16>) {
  ^bb0(%a: tensor<128x64xbf16>, %b: tensor<64x1024xbf16>, %c: tensor<128x1024xf32>):
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xbf16>, tensor<64x1024xbf16>) -> tensor<128x1024xf32>
    %2 = trn.add %1, %c : tensor<128x1024xf32>
    %3 = trn.convert %2 : tensor<128x1024xf32> -> tensor<128x1024xbf16>
    trn.yield %3 : tensor<128x1024xbf16>
  }
  return %0 : tensor<128x1024xbf16>
}

// -----

// A bias over a two-bank column block is kept once per bank: each of the two
// M blocks evicts both banks in turn, and a single cached tile was reloaded
// for every bank (the MLM logits matmul re-read its bias 960 times).
// CHECK-LABEL: func.func @bias_per_bank
// CHECK-COUNT-2: nc.view %arg2 {{.*}}: !nc.hbm<1024xf32> -> <hbm, 128x512xf32>
// CHECK-NOT: nc.view %arg2
// CHECK: return
func.func @bias_per_bank(%x: tensor<256x64xbf16>, %w: tensor<64x1024xbf16>, %b: tensor<1024xf32>) -> tensor<256x1024xbf16> {
  %0 = trn.fusion(%x, %w, %b : tensor<256x64xbf16>, tensor<64x1024xbf16>, tensor<1024xf32>) -> (tensor<256x1024xbf16>) {
  ^bb0(%a: tensor<256x64xbf16>, %c: tensor<64x1024xbf16>, %bias: tensor<1024xf32>):
    %1 = trn.dot_general %a, %c, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x64xbf16>, tensor<64x1024xbf16>) -> tensor<256x1024xf32>
    %2 = trn.broadcast_in_dim %bias, dims = [1] : (tensor<1024xf32>) -> tensor<256x1024xf32>
    %3 = trn.add %1, %2 : tensor<256x1024xf32>
    %4 = trn.convert %3 : tensor<256x1024xf32> -> tensor<256x1024xbf16>
    trn.yield %4 : tensor<256x1024xbf16>
  }
  return %0 : tensor<256x1024xbf16>
}
