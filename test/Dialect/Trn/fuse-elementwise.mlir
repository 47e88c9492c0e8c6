// RUN: trn-opt %s -split-input-file -trn-fuse-elementwise | FileCheck %s
// RUN: trn-opt %s -split-input-file -trn-fuse-elementwise="max-reduction-row=64" | FileCheck %s --check-prefix=SHORT
// RUN: trn-opt %s -split-input-file -trn-fuse-elementwise="max-ops=2" | FileCheck %s --check-prefix=SMALL

// Softmax along rows: both row reductions, the broadcasts of their results
// and the elementwise ops form one group that yields only the result.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT: %[[F:.*]] = trn.fusion(%arg0 : tensor<200x600xf32>) -> (tensor<200x600xf32>) {
// CHECK: trn.reduce max
// CHECK: trn.broadcast_in_dim {{.*}} dims = [0]
// CHECK: trn.sub
// CHECK: trn.exp
// CHECK: trn.reduce sum
// CHECK: trn.div
// CHECK-NEXT: trn.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
// Rows longer than max-reduction-row are reduced outside a group; the
// division recomputes the exponentials from x and the max instead of
// reading them back (the sum's group need not store them).
// SHORT-LABEL: func.func @softmax
// SHORT-NEXT: %[[M:.*]] = trn.reduce max %arg0
// SHORT-NEXT: %[[E:.*]] = trn.fusion(%arg0, %[[M]] :
// SHORT: trn.exp
// SHORT: %[[S:.*]] = trn.reduce sum %[[E]]
// SHORT-NEXT: trn.fusion(%arg0, %[[M]], %[[S]] :
// SHORT: trn.exp
// SHORT-NEXT: trn.div
// SMALL-LABEL: func.func @softmax
// SMALL-COUNT-4: trn.fusion
// SMALL-NOT: trn.fusion
// SMALL: return
func.func @softmax(%x: tensor<200x600xf32>) -> tensor<200x600xf32> {
  %0 = trn.reduce max %x, dims = [1] : (tensor<200x600xf32>) -> tensor<200xf32>
  %1 = trn.broadcast_in_dim %0, dims = [0] : (tensor<200xf32>) -> tensor<200x600xf32>
  %2 = trn.sub %x, %1 : tensor<200x600xf32>
  %3 = trn.exp %2 : tensor<200x600xf32>
  %4 = trn.reduce sum %3, dims = [1] : (tensor<200x600xf32>) -> tensor<200xf32>
  %5 = trn.broadcast_in_dim %4, dims = [0] : (tensor<200xf32>) -> tensor<200x600xf32>
  %6 = trn.div %3, %5 : tensor<200x600xf32>
  return %6 : tensor<200x600xf32>
}

// -----

// A broadcast input and a splat constant are copied into the group (read
// through a DMA window, an immediate); the originals go away when unused.
// The broadcast that also feeds a non-fusible op stays for it.
// CHECK-LABEL: func.func @bias_gelu
// CHECK-NEXT: %[[BB:.*]] = trn.broadcast_in_dim %arg1
// CHECK-NEXT: %[[F:.*]] = trn.fusion(%arg0, %arg1 : tensor<256x64xf32>, tensor<64xf32>) -> (tensor<256x64xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<256x64xf32>, %[[B:.*]]: tensor<64xf32>):
// CHECK-NEXT: %[[BC:.*]] = trn.broadcast_in_dim %[[B]], dims = [1]
// CHECK-NEXT: %[[HALF:.*]] = trn.constant dense<5.000000e-01>
// CHECK-NEXT: %[[ADD:.*]] = trn.add %[[X]], %[[BC]]
// CHECK-NEXT: %[[MUL:.*]] = trn.mul %[[ADD]], %[[HALF]]
// CHECK-NEXT: %[[G:.*]] = trn.gelu %[[MUL]]
// CHECK-NEXT: trn.yield %[[G]]
// CHECK: trn.dot_general %[[F]], %[[BB]]
// CHECK-NOT: trn.constant
func.func @bias_gelu(%x: tensor<256x64xf32>, %b: tensor<64xf32>) -> tensor<256x256xf32> {
  %half = trn.constant dense<0.5> : tensor<256x64xf32>
  %bb = trn.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<256x64xf32>
  %0 = trn.add %x, %bb : tensor<256x64xf32>
  %1 = trn.mul %0, %half : tensor<256x64xf32>
  %2 = trn.gelu %1 : tensor<256x64xf32>
  %3 = trn.dot_general %2, %bb, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<256x64xf32>, tensor<256x64xf32>) -> tensor<256x256xf32>
  return %3 : tensor<256x256xf32>
}

// -----

// Once an op outside a group reads one of its values, the group is closed:
// the later add starts a new group that reads the first group's result.
// CHECK-LABEL: func.func @closed
// CHECK: %[[A:.*]] = trn.fusion(%arg0 : tensor<128x128xf32>) -> (tensor<128x128xf32>)
// CHECK: trn.exp
// CHECK: %[[D:.*]] = trn.dot_general %[[A]]
// CHECK: trn.fusion(%[[A]], %[[D]] : tensor<128x128xf32>, tensor<128x128xf32>)
// CHECK: trn.add
func.func @closed(%x: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %a = trn.exp %x : tensor<128x128xf32>
  %d = trn.dot_general %a, %a, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x128xf32>, tensor<128x128xf32>) -> tensor<128x128xf32>
  %c = trn.add %a, %d : tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}

// -----

// Not fused: reductions over leading dims (moved down to their first
// user, here the return), i64 arithmetic, rank-0 ops, and broadcasts whose
// DMA window would cover fewer than 128 rows.
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT: trn.add %arg1, %arg1 : tensor<4xi64>
// CHECK-NEXT: trn.add %arg2, %arg2 : tensor<f32>
// CHECK-NEXT: %[[BC:.*]] = trn.broadcast_in_dim %arg3, dims = [0, 2]
// CHECK-NEXT: trn.fusion(%arg4, %[[BC]] :
// CHECK: trn.reduce sum %arg0, dims = [0]
// CHECK-NEXT: return
func.func @left_alone(%x: tensor<8x16xf32>, %i: tensor<4xi64>, %s: tensor<f32>, %m: tensor<16x8xf32>, %y: tensor<16x4x8xf32>)
    -> (tensor<16xf32>, tensor<4xi64>, tensor<f32>, tensor<16x4x8xf32>) {
  %0 = trn.reduce sum %x, dims = [0] : (tensor<8x16xf32>) -> tensor<16xf32>
  %1 = trn.add %i, %i : tensor<4xi64>
  %2 = trn.add %s, %s : tensor<f32>
  %3 = trn.broadcast_in_dim %m, dims = [0, 2] : (tensor<16x8xf32>) -> tensor<16x4x8xf32>
  %4 = trn.mul %y, %3 : tensor<16x4x8xf32>
  return %0, %1, %2, %4 : tensor<16xf32>, tensor<4xi64>, tensor<f32>, tensor<16x4x8xf32>
}

// -----

// Per-row values (shape S[:-1]) computed from a reduction join the group as
// columns, with their own elementwise ops; both the row values and the
// full-width result are yielded.
// CHECK-LABEL: func.func @row_values
// CHECK: %[[F:.*]]:2 = trn.fusion(%arg0 : tensor<64x32xf32>) -> (tensor<64xf32>, tensor<64x32xf32>)
// CHECK: trn.reduce sum
// CHECK: trn.mul {{.*}} : tensor<64xf32>
// CHECK: trn.rsqrt {{.*}} : tensor<64xf32>
// CHECK: trn.yield
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @row_values(%x: tensor<64x32xf32>) -> (tensor<64xf32>, tensor<64x32xf32>) {
  %inv = trn.constant dense<0.03125> : tensor<64xf32>
  %sq = trn.mul %x, %x : tensor<64x32xf32>
  %s = trn.reduce sum %sq, dims = [1] : (tensor<64x32xf32>) -> tensor<64xf32>
  %m = trn.mul %s, %inv : tensor<64xf32>
  %r = trn.rsqrt %m : tensor<64xf32>
  %rb = trn.broadcast_in_dim %r, dims = [0] : (tensor<64xf32>) -> tensor<64x32xf32>
  %y = trn.mul %x, %rb : tensor<64x32xf32>
  return %r, %y : tensor<64xf32>, tensor<64x32xf32>
}

// -----

// Two open groups of one shape that an op reads become one group (AdamW's
// moments and parameter chains): neither's value round-trips through HBM.
// CHECK-LABEL: func.func @merge
// CHECK: %[[F:.*]] = trn.fusion(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
// CHECK-NOT: trn.fusion
// CHECK: return %[[F]]
func.func @merge(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = trn.exp %a : tensor<4x8xf32>
  %1 = trn.exp %b : tensor<4x8xf32>
  %2 = trn.add %0, %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// A group another op already read (a product, which no group holds) is
// closed: it is not merged, and the add joins the other group.
// CHECK-LABEL: func.func @closed
// CHECK: %[[A:.*]] = trn.fusion(%arg0 : tensor<4x8xf32>) -> (tensor<4x8xf32>)
// CHECK: trn.reduce prod %[[A]]
// CHECK: trn.fusion(%arg1, %[[A]] : tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
func.func @closed(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4xf32>) {
  %0 = trn.exp %a : tensor<4x8xf32>
  %r = trn.reduce prod %0, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %1 = trn.exp %b : tensor<4x8xf32>
  %2 = trn.add %0, %1 : tensor<4x8xf32>
  return %2, %r : tensor<4x8xf32>, tensor<4xf32>
}

// -----

// Open groups of one shape merge only for an op that joins them: groups
// read by a matmul (which can take one as its epilogue) or by the return
// stay apart.
// CHECK-LABEL: func.func @no_merge_at_matmul_or_return
// CHECK-NEXT: trn.fusion(%arg0 :
// CHECK: trn.exp
// CHECK: trn.fusion(%arg1 :
// CHECK: trn.tanh
// CHECK: trn.dot_general
// CHECK-NEXT: trn.fusion(%arg0 :
// CHECK: trn.neg
// CHECK: trn.fusion(%arg1 :
// CHECK: trn.abs
// CHECK: return
func.func @no_merge_at_matmul_or_return(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %0 = trn.exp %x : tensor<64x64xf32>
  %1 = trn.tanh %y : tensor<64x64xf32>
  %2 = trn.dot_general %0, %1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %3 = trn.neg %x : tensor<64x64xf32>
  %4 = trn.abs %y : tensor<64x64xf32>
  return %2, %3, %4 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// Rotary embeddings as traced (GPT-NeoX / Llama layout): cat(-x2, x1) is
// trn.rotate_half and joins the group that applies the embedding; the
// backward's cat(g2, -g1) is its negation. The slices and negations go.
// CHECK-LABEL: func.func @rope
// CHECK-NOT: trn.slice
// CHECK-NOT: trn.concatenate
// CHECK: trn.fusion
// CHECK: %[[R:.*]] = trn.rotate_half %{{.*}} : tensor<2x16x8xf32>
// CHECK: trn.mul %[[R]]
// CHECK: trn.fusion
// CHECK: %[[A:.*]] = trn.rotate_half %{{.*}} : tensor<2x16x8xf32>
// CHECK-NEXT: trn.neg %[[A]]
func.func @rope(%x: tensor<2x16x8xf32>, %cos: tensor<16x8xf32>, %sin: tensor<16x8xf32>, %g: tensor<2x16x8xf32>) -> (tensor<2x16x8xf32>, tensor<2x16x8xf32>) {
  %lo = trn.slice %x, start = [0, 0, 0], limit = [2, 16, 4], strides = [1, 1, 1] : (tensor<2x16x8xf32>) -> tensor<2x16x4xf32>
  %hi = trn.slice %x, start = [0, 0, 4], limit = [2, 16, 8], strides = [1, 1, 1] : (tensor<2x16x8xf32>) -> tensor<2x16x4xf32>
  %nhi = trn.neg %hi : tensor<2x16x4xf32>
  %rot = trn.concatenate %nhi, %lo dim = 2 : (tensor<2x16x4xf32>, tensor<2x16x4xf32>) -> tensor<2x16x8xf32>
  %c = trn.broadcast_in_dim %cos, dims = [1, 2] : (tensor<16x8xf32>) -> tensor<2x16x8xf32>
  %s = trn.broadcast_in_dim %sin, dims = [1, 2] : (tensor<16x8xf32>) -> tensor<2x16x8xf32>
  %a = trn.mul %x, %c : tensor<2x16x8xf32>
  %b = trn.mul %rot, %s : tensor<2x16x8xf32>
  %r = trn.add %a, %b : tensor<2x16x8xf32>
  %glo = trn.slice %g, start = [0, 0, 0], limit = [2, 16, 4], strides = [1, 1, 1] : (tensor<2x16x8xf32>) -> tensor<2x16x4xf32>
  %ghi = trn.slice %g, start = [0, 0, 4], limit = [2, 16, 8], strides = [1, 1, 1] : (tensor<2x16x8xf32>) -> tensor<2x16x4xf32>
  %nglo = trn.neg %glo : tensor<2x16x4xf32>
  %adj = trn.concatenate %ghi, %nglo dim = 2 : (tensor<2x16x4xf32>, tensor<2x16x4xf32>) -> tensor<2x16x8xf32>
  %e = trn.exp %adj : tensor<2x16x8xf32>
  return %r, %e : tensor<2x16x8xf32>, tensor<2x16x8xf32>
}

// -----

// Not a rotation: halves of two different tensors, halves not swapped, and
// a concatenation along another dimension stay as they are.
// CHECK-LABEL: func.func @not_rope
// CHECK-NOT: trn.rotate_half
// CHECK-COUNT-3: trn.concatenate
func.func @not_rope(%x: tensor<16x8xf32>, %y: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
  %xlo = trn.slice %x, start = [0, 0], limit = [16, 4], strides = [1, 1] : (tensor<16x8xf32>) -> tensor<16x4xf32>
  %xhi = trn.slice %x, start = [0, 4], limit = [16, 8], strides = [1, 1] : (tensor<16x8xf32>) -> tensor<16x4xf32>
  %ylo = trn.slice %y, start = [0, 0], limit = [16, 4], strides = [1, 1] : (tensor<16x8xf32>) -> tensor<16x4xf32>
  %nxhi = trn.neg %xhi : tensor<16x4xf32>
  %mixed = trn.concatenate %nxhi, %ylo dim = 1 : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x8xf32>
  %nxlo = trn.neg %xlo : tensor<16x4xf32>
  %same = trn.concatenate %nxlo, %xhi dim = 1 : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x8xf32>
  %top = trn.slice %x, start = [0, 0], limit = [8, 8], strides = [1, 1] : (tensor<16x8xf32>) -> tensor<8x8xf32>
  %bottom = trn.slice %x, start = [8, 0], limit = [16, 8], strides = [1, 1] : (tensor<16x8xf32>) -> tensor<8x8xf32>
  %nbottom = trn.neg %bottom : tensor<8x8xf32>
  %rows = trn.concatenate %nbottom, %top dim = 0 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  return %mixed, %same, %rows : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// A sum over rows right after the value it sums (a norm weight's gradient)
// moves down to its first user, so that the cast after it joins the
// value's group instead of starting a group that reads the value back.
// CHECK-LABEL: func.func @sum_moves_down
// CHECK-NEXT: %[[G:.*]]:2 = trn.fusion(%arg0, %arg1 :
// CHECK: trn.mul
// CHECK: trn.convert
// CHECK: trn.yield
// CHECK-NEXT: }
// CHECK-NEXT: trn.reduce sum %[[G]]#0, dims = [0]
func.func @sum_moves_down(%g: tensor<256x64xf32>, %x: tensor<256x64xf32>) -> (tensor<64xf32>, tensor<256x64xbf16>) {
  %0 = trn.mul %g, %x : tensor<256x64xf32>
  %1 = trn.reduce sum %0, dims = [0] : (tensor<256x64xf32>) -> tensor<64xf32>
  %2 = trn.convert %0 : tensor<256x64xf32> -> tensor<256x64xbf16>
  return %1, %2 : tensor<64xf32>, tensor<256x64xbf16>
}
