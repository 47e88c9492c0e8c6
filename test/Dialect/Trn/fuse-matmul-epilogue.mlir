// RUN: trn-opt %s -split-input-file -trn-fuse-matmul-epilogue | FileCheck %s

// Bias and GELU on a matmul's result: the group starts with the matmul and
// reads its operands; nothing outside the group reads the result.
// CHECK-LABEL: func.func @bias_gelu
// CHECK-NEXT: %[[F:.*]] = trn.fusion(%arg0, %arg1, %arg2 : tensor<256x64xbf16>, tensor<64x128xbf16>, tensor<128xf32>) -> (tensor<256x128xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<256x64xbf16>, %[[W:.*]]: tensor<64x128xbf16>, %[[B:.*]]: tensor<128xf32>):
// CHECK-NEXT: %[[D:.*]] = trn.dot_general %[[X]], %[[W]]
// CHECK-NEXT: trn.broadcast_in_dim %[[B]]
// CHECK-NEXT: trn.add %[[D]]
// CHECK-NEXT: trn.gelu
// CHECK-NEXT: trn.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
func.func @bias_gelu(%x: tensor<256x64xbf16>, %w: tensor<64x128xbf16>, %b: tensor<128xf32>) -> tensor<256x128xf32> {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<256x128xf32>
  %1 = trn.fusion(%0, %b : tensor<256x128xf32>, tensor<128xf32>) -> (tensor<256x128xf32>) {
  ^bb0(%a: tensor<256x128xf32>, %c: tensor<128xf32>):
    %2 = trn.broadcast_in_dim %c, dims = [1] : (tensor<128xf32>) -> tensor<256x128xf32>
    %3 = trn.add %a, %2 : tensor<256x128xf32>
    %4 = trn.gelu %3 approximate = tanh : tensor<256x128xf32>
    trn.yield %4 : tensor<256x128xf32>
  }
  return %1 : tensor<256x128xf32>
}

// -----

// The result has another user (saved for the backward): the group also
// yields it, so it is stored once and never loaded back.
// CHECK-LABEL: func.func @result_also_used
// CHECK-NEXT: %[[F:.*]]:2 = trn.fusion(%arg0, %arg1, %arg2 : {{.*}}) -> (tensor<256x128xbf16>, tensor<256x128xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[D:.*]] = trn.dot_general
// CHECK: trn.yield %{{.*}}, %[[D]] : tensor<256x128xbf16>, tensor<256x128xf32>
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @result_also_used(%x: tensor<256x64xbf16>, %w: tensor<64x128xbf16>, %r: tensor<256x128xf32>) -> (tensor<256x128xbf16>, tensor<256x128xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<256x128xf32>
  %1 = trn.fusion(%0, %r : tensor<256x128xf32>, tensor<256x128xf32>) -> (tensor<256x128xbf16>) {
  ^bb0(%a: tensor<256x128xf32>, %c: tensor<256x128xf32>):
    %2 = trn.add %a, %c : tensor<256x128xf32>
    %3 = trn.convert %2 : tensor<256x128xf32> -> tensor<256x128xbf16>
    trn.yield %3 : tensor<256x128xbf16>
  }
  return %1, %0 : tensor<256x128xbf16>, tensor<256x128xf32>
}

// -----

// A user of the result comes before the group: the fused op takes the
// matmul's place (the residual is defined before it), and that user reads
// the yielded result.
// CHECK-LABEL: func.func @user_before_group
// CHECK-NEXT: %[[F:.*]]:2 = trn.fusion(%arg0, %arg1, %arg2
// CHECK: trn.transpose %[[F]]#1
// CHECK: return %[[F]]#0
func.func @user_before_group(%x: tensor<256x64xf32>, %w: tensor<64x128xf32>, %r: tensor<256x128xf32>) -> (tensor<256x128xf32>, tensor<128x256xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x64xf32>, tensor<64x128xf32>) -> tensor<256x128xf32>
  %t = trn.transpose %0, perm = [1, 0] : (tensor<256x128xf32>) -> tensor<128x256xf32>
  %1 = trn.fusion(%0, %r : tensor<256x128xf32>, tensor<256x128xf32>) -> (tensor<256x128xf32>) {
  ^bb0(%a: tensor<256x128xf32>, %c: tensor<256x128xf32>):
    %2 = trn.mul %a, %c : tensor<256x128xf32>
    trn.yield %2 : tensor<256x128xf32>
  }
  return %1, %t : tensor<256x128xf32>, tensor<128x256xf32>
}

// -----

// Must not fuse: a user comes before the group and the group reads a value
// computed after the matmul (neither place has every operand).
// CHECK-LABEL: func.func @no_place
// CHECK-NEXT: trn.dot_general
// CHECK-NEXT: trn.transpose
// CHECK-NEXT: trn.exp
// CHECK-NEXT: trn.fusion
func.func @no_place(%x: tensor<128x64xf32>, %w: tensor<64x128xf32>) -> (tensor<128x128xf32>, tensor<128x128xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<128x128xf32>
  %t = trn.transpose %0, perm = [1, 0] : (tensor<128x128xf32>) -> tensor<128x128xf32>
  %e = trn.exp %t : tensor<128x128xf32>
  %1 = trn.fusion(%0, %e : tensor<128x128xf32>, tensor<128x128xf32>) -> (tensor<128x128xf32>) {
  ^bb0(%a: tensor<128x128xf32>, %c: tensor<128x128xf32>):
    %2 = trn.mul %a, %c : tensor<128x128xf32>
    trn.yield %2 : tensor<128x128xf32>
  }
  return %1, %t : tensor<128x128xf32>, tensor<128x128xf32>
}

// -----

// The group reduces rows (a result tile holds at most 512 columns of a row):
// the elementwise ops before the reduction (here the exp) become the
// matmul's epilogue, and the reduction, whose result is only yielded, joins
// it too (each tile adds its part to a running column); the exp's result is
// then never stored.
// CHECK-LABEL: func.func @no_row_reduction
// CHECK-NEXT: %[[E:.*]] = trn.fusion(%arg0, %arg1
// CHECK-NEXT: ^bb0
// CHECK-NEXT: trn.dot_general
// CHECK-NEXT: trn.exp
// CHECK-NEXT: trn.reduce sum %{{.*}}, dims = [1]
// CHECK-NEXT: trn.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[E]]
func.func @no_row_reduction(%x: tensor<128x64xf32>, %w: tensor<64x128xf32>) -> tensor<128xf32> {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<128x128xf32>
  %1 = trn.fusion(%0 : tensor<128x128xf32>) -> (tensor<128xf32>) {
  ^bb0(%a: tensor<128x128xf32>):
    %2 = trn.exp %a : tensor<128x128xf32>
    %3 = trn.reduce sum %2, dims = [1] : (tensor<128x128xf32>) -> tensor<128xf32>
    trn.yield %3 : tensor<128xf32>
  }
  return %1 : tensor<128xf32>
}

// -----

// A layer norm after a projection whose rows do not come out of the matmul
// whole (2048 columns: two column blocks): bias and residual (the
// elementwise prefix, with the bias's broadcast) become the epilogue, which
// yields the sum the norm reads and the group returned; the norm keeps its
// reductions and its weight.
// CHECK-LABEL: func.func @layer_norm_prefix
// CHECK-NEXT: %[[E:.*]] = trn.fusion(%arg0, %arg1, %arg2, %arg3 : {{.*}}) -> (tensor<256x2048xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: trn.dot_general
// CHECK-NEXT: trn.broadcast_in_dim
// CHECK-NEXT: trn.add
// CHECK-NEXT: trn.add
// CHECK-NEXT: trn.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[N:.*]] = trn.fusion(%arg4, %[[E]] : tensor<2048xf32>, tensor<256x2048xf32>) -> (tensor<256x2048xf32>) {
// CHECK-NOT: trn.add %
// CHECK: trn.reduce sum
// CHECK: return %[[N]], %[[E]]
func.func @layer_norm_prefix(%x: tensor<256x64xf32>, %w: tensor<64x2048xf32>, %b: tensor<2048xf32>, %r: tensor<256x2048xf32>, %g: tensor<2048xf32>) -> (tensor<256x2048xf32>, tensor<256x2048xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x64xf32>, tensor<64x2048xf32>) -> tensor<256x2048xf32>
  %1:2 = trn.fusion(%0, %b, %r, %g : tensor<256x2048xf32>, tensor<2048xf32>, tensor<256x2048xf32>, tensor<2048xf32>) -> (tensor<256x2048xf32>, tensor<256x2048xf32>) {
  ^bb0(%a: tensor<256x2048xf32>, %bias: tensor<2048xf32>, %res: tensor<256x2048xf32>, %gamma: tensor<2048xf32>):
    %2 = trn.broadcast_in_dim %bias, dims = [1] : (tensor<2048xf32>) -> tensor<256x2048xf32>
    %3 = trn.add %a, %2 : tensor<256x2048xf32>
    %4 = trn.add %3, %res : tensor<256x2048xf32>
    %5 = trn.reduce sum %4, dims = [1] : (tensor<256x2048xf32>) -> tensor<256xf32>
    %6 = trn.broadcast_in_dim %5, dims = [0] : (tensor<256xf32>) -> tensor<256x2048xf32>
    %7 = trn.sub %4, %6 : tensor<256x2048xf32>
    %8 = trn.broadcast_in_dim %gamma, dims = [1] : (tensor<2048xf32>) -> tensor<256x2048xf32>
    %9 = trn.mul %7, %8 : tensor<256x2048xf32>
    trn.yield %9, %4 : tensor<256x2048xf32>, tensor<256x2048xf32>
  }
  return %1#0, %1#1 : tensor<256x2048xf32>, tensor<256x2048xf32>
}

// -----

// Not split (rows not whole either): the rest would read two prefix values
// (twice the result's bytes), or the norm reads the matmul's result itself.
// CHECK-LABEL: func.func @prefix_hands_on_more
// CHECK-NEXT: trn.dot_general
// CHECK-NEXT: trn.fusion(%0
// CHECK-LABEL: func.func @result_read_by_reduction
// CHECK-NEXT: trn.dot_general
// CHECK-NEXT: trn.fusion(%0
func.func @prefix_hands_on_more(%x: tensor<128x64xf32>, %w: tensor<64x2048xf32>) -> tensor<128x2048xf32> {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x2048xf32>) -> tensor<128x2048xf32>
  %1 = trn.fusion(%0 : tensor<128x2048xf32>) -> (tensor<128x2048xf32>) {
  ^bb0(%a: tensor<128x2048xf32>):
    %2 = trn.exp %a : tensor<128x2048xf32>
    %3 = trn.tanh %a : tensor<128x2048xf32>
    %4 = trn.reduce sum %2, dims = [1] : (tensor<128x2048xf32>) -> tensor<128xf32>
    %5 = trn.broadcast_in_dim %4, dims = [0] : (tensor<128xf32>) -> tensor<128x2048xf32>
    %6 = trn.mul %3, %5 : tensor<128x2048xf32>
    %7 = trn.add %6, %2 : tensor<128x2048xf32>
    trn.yield %7 : tensor<128x2048xf32>
  }
  return %1 : tensor<128x2048xf32>
}
func.func @result_read_by_reduction(%x: tensor<128x64xf32>, %w: tensor<64x2048xf32>) -> tensor<128x2048xf32> {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x2048xf32>) -> tensor<128x2048xf32>
  %1 = trn.fusion(%0 : tensor<128x2048xf32>) -> (tensor<128x2048xf32>) {
  ^bb0(%a: tensor<128x2048xf32>):
    %2 = trn.exp %a : tensor<128x2048xf32>
    %3 = trn.reduce sum %a, dims = [1] : (tensor<128x2048xf32>) -> tensor<128xf32>
    %4 = trn.broadcast_in_dim %3, dims = [0] : (tensor<128xf32>) -> tensor<128x2048xf32>
    %5 = trn.mul %2, %4 : tensor<128x2048xf32>
    trn.yield %5 : tensor<128x2048xf32>
  }
  return %1 : tensor<128x2048xf32>
}

// -----

// Must not fuse: the group computes another shape than the matmul's (it
// broadcasts the result to a larger shape).
// CHECK-LABEL: func.func @no_other_shape
// CHECK-NEXT: trn.dot_general
// CHECK-NEXT: trn.fusion(%0
func.func @no_other_shape(%x: tensor<128x64xf32>, %w: tensor<64x128xf32>, %y: tensor<2x128x128xf32>) -> tensor<2x128x128xf32> {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<128x128xf32>
  %1 = trn.fusion(%0, %y : tensor<128x128xf32>, tensor<2x128x128xf32>) -> (tensor<2x128x128xf32>) {
  ^bb0(%a: tensor<128x128xf32>, %b: tensor<2x128x128xf32>):
    %2 = trn.broadcast_in_dim %a, dims = [1, 2] : (tensor<128x128xf32>) -> tensor<2x128x128xf32>
    %3 = trn.add %2, %b : tensor<2x128x128xf32>
    trn.yield %3 : tensor<2x128x128xf32>
  }
  return %1 : tensor<2x128x128xf32>
}

// -----

// Must not fuse: the group reads the result through two inputs.
// CHECK-LABEL: func.func @no_two_reads
// CHECK-NEXT: trn.dot_general
// CHECK-NEXT: trn.fusion(%0, %0
func.func @no_two_reads(%x: tensor<128x64xf32>, %w: tensor<64x128xf32>) -> tensor<128x128xf32> {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<128x128xf32>
  %1 = trn.fusion(%0, %0 : tensor<128x128xf32>, tensor<128x128xf32>) -> (tensor<128x128xf32>) {
  ^bb0(%a: tensor<128x128xf32>, %b: tensor<128x128xf32>):
    %2 = trn.mul %a, %b : tensor<128x128xf32>
    trn.yield %2 : tensor<128x128xf32>
  }
  return %1 : tensor<128x128xf32>
}

// -----

// Two groups read one matmul: the first takes it as its epilogue and yields
// the result, which the second reads from HBM.
// CHECK-LABEL: func.func @two_groups
// CHECK-NEXT: %[[F:.*]]:2 = trn.fusion(%arg0, %arg1 :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: trn.dot_general
// CHECK: trn.fusion(%[[F]]#1 :
// CHECK-NOT: trn.dot_general
// CHECK: return
func.func @two_groups(%x: tensor<128x64xf32>, %w: tensor<64x128xf32>) -> (tensor<128x128xf32>, tensor<128x128xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<128x128xf32>
  %1 = trn.fusion(%0 : tensor<128x128xf32>) -> (tensor<128x128xf32>) {
  ^bb0(%a: tensor<128x128xf32>):
    %2 = trn.exp %a : tensor<128x128xf32>
    trn.yield %2 : tensor<128x128xf32>
  }
  %3 = trn.fusion(%0 : tensor<128x128xf32>) -> (tensor<128x128xf32>) {
  ^bb0(%a: tensor<128x128xf32>):
    %4 = trn.tanh %a : tensor<128x128xf32>
    trn.yield %4 : tensor<128x128xf32>
  }
  return %1, %3 : tensor<128x128xf32>, tensor<128x128xf32>
}

// -----

// A batched matmul: the group reads a per-batch bias [B, N] and a per-row
// scale [B, M] (a column) per result tile.
// CHECK-LABEL: func.func @batched
// CHECK-NEXT: trn.fusion
// CHECK-NEXT: ^bb0
// CHECK-NEXT: trn.dot_general
func.func @batched(%x: tensor<2x192x64xf32>, %w: tensor<2x64x96xf32>, %b: tensor<2x96xf32>, %s: tensor<2x192xf32>) -> tensor<2x192x96xf32> {
  %0 = trn.dot_general %x, %w, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x192x64xf32>, tensor<2x64x96xf32>) -> tensor<2x192x96xf32>
  %1 = trn.fusion(%0, %b, %s : tensor<2x192x96xf32>, tensor<2x96xf32>, tensor<2x192xf32>) -> (tensor<2x192x96xf32>) {
  ^bb0(%a: tensor<2x192x96xf32>, %c: tensor<2x96xf32>, %d: tensor<2x192xf32>):
    %2 = trn.broadcast_in_dim %c, dims = [0, 2] : (tensor<2x96xf32>) -> tensor<2x192x96xf32>
    %3 = trn.broadcast_in_dim %d, dims = [0, 1] : (tensor<2x192xf32>) -> tensor<2x192x96xf32>
    %4 = trn.add %a, %2 : tensor<2x192x96xf32>
    %5 = trn.mul %4, %3 : tensor<2x192x96xf32>
    trn.yield %5 : tensor<2x192x96xf32>
  }
  return %1 : tensor<2x192x96xf32>
}

// -----

// A bias's gradient: sums over rows (dims [0]) of the epilogue's f32 results
// join the group (the backend keeps a running total per column as tiles
// leave PSUM), and so does a reduction over a result's rows (each tile
// reduces its part into a running column); the mul's result, which only
// these read, is no longer stored; a sum of the bf16 result stays outside.
// CHECK-LABEL: func.func @column_sums
// CHECK-NEXT: %[[G:.*]]:4 = trn.fusion
// CHECK: trn.dot_general
// CHECK: %[[M:.*]] = trn.mul
// CHECK: %[[C:.*]] = trn.convert
// CHECK: %[[E:.*]] = trn.exp
// CHECK-NEXT: %[[S:.*]] = trn.reduce sum %[[M]], dims = [0]
// CHECK-NEXT: %[[R:.*]] = trn.reduce sum %[[M]], dims = [1]
// CHECK-NEXT: trn.yield %[[C]], %[[E]], %[[S]], %[[R]]
// CHECK: %[[B:.*]] = trn.reduce sum %[[G]]#0, dims = [0]
// CHECK: return %[[G]]#2, %[[G]]#3, %[[B]], %[[G]]#1
func.func @column_sums(%x: tensor<256x64xf32>, %w: tensor<64x640xf32>, %s: tensor<256x640xf32>) -> (tensor<640xf32>, tensor<256xf32>, tensor<640xbf16>, tensor<256x640xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x64xf32>, tensor<64x640xf32>) -> tensor<256x640xf32>
  %1:3 = trn.fusion(%0, %s : tensor<256x640xf32>, tensor<256x640xf32>) -> (tensor<256x640xf32>, tensor<256x640xbf16>, tensor<256x640xf32>) {
  ^bb0(%a: tensor<256x640xf32>, %b: tensor<256x640xf32>):
    %2 = trn.mul %a, %b : tensor<256x640xf32>
    %3 = trn.convert %2 : tensor<256x640xf32> -> tensor<256x640xbf16>
    %4 = trn.exp %a : tensor<256x640xf32>
    trn.yield %2, %3, %4 : tensor<256x640xf32>, tensor<256x640xbf16>, tensor<256x640xf32>
  }
  %5 = trn.reduce sum %1#0, dims = [0] : (tensor<256x640xf32>) -> tensor<640xf32>
  %6 = trn.reduce sum %1#0, dims = [1] : (tensor<256x640xf32>) -> tensor<256xf32>
  %7 = trn.reduce sum %1#1, dims = [0] : (tensor<256x640xbf16>) -> tensor<640xbf16>
  return %5, %6, %7, %1#2 : tensor<640xf32>, tensor<256xf32>, tensor<640xbf16>, tensor<256x640xf32>
}

// -----

// An elementwise group's sum over rows joins it too; a result only the sum
// read is no longer yielded (never stored).
// CHECK-LABEL: func.func @group_column_sum
// CHECK-NEXT: %[[G:.*]] = trn.fusion(%arg0 : tensor<64x96xbf16>) -> (tensor<96xf32>) {
// CHECK: trn.convert
// CHECK-NEXT: %[[S:.*]] = trn.reduce sum %{{.*}}, dims = [0]
// CHECK-NEXT: trn.yield %[[S]] : tensor<96xf32>
// CHECK: return %[[G]]
func.func @group_column_sum(%x: tensor<64x96xbf16>) -> tensor<96xf32> {
  %0 = trn.fusion(%x : tensor<64x96xbf16>) -> (tensor<64x96xf32>) {
  ^bb0(%a: tensor<64x96xbf16>):
    %1 = trn.convert %a : tensor<64x96xbf16> -> tensor<64x96xf32>
    trn.yield %1 : tensor<64x96xf32>
  }
  %2 = trn.reduce sum %0, dims = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  return %2 : tensor<96xf32>
}

// -----

// A sum over rows of an input the group reads anyway (a scattered gradient
// that a cast also reads) is taken from the group's tiles; one whose result
// is needed before the group stays.
// CHECK-LABEL: func.func @input_column_sum
// CHECK-NEXT: %[[E:.*]] = trn.reduce sum %arg1, dims = [0]
// CHECK-NEXT: %[[G:.*]]:2 = trn.fusion(%arg0, %arg1
// CHECK: trn.convert
// CHECK: %[[S:.*]] = trn.reduce sum %{{.*}}, dims = [0]
// CHECK-NEXT: trn.yield %{{.*}}, %[[S]]
// CHECK: return %[[G]]#0, %[[G]]#1, %[[E]]
func.func @input_column_sum(%x: tensor<64x96xf32>, %y: tensor<64x96xf32>) -> (tensor<64x96xbf16>, tensor<96xf32>, tensor<96xf32>) {
  %e = trn.reduce sum %y, dims = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  %0 = trn.fusion(%x, %y, %e : tensor<64x96xf32>, tensor<64x96xf32>, tensor<96xf32>) -> (tensor<64x96xbf16>) {
  ^bb0(%a: tensor<64x96xf32>, %b: tensor<64x96xf32>, %c: tensor<96xf32>):
    %1 = trn.broadcast_in_dim %c, dims = [1] : (tensor<96xf32>) -> tensor<64x96xf32>
    %2 = trn.add %a, %b : tensor<64x96xf32>
    %3 = trn.add %2, %1 : tensor<64x96xf32>
    %4 = trn.convert %3 : tensor<64x96xf32> -> tensor<64x96xbf16>
    trn.yield %4 : tensor<64x96xbf16>
  }
  %5 = trn.reduce sum %x, dims = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  return %0, %5, %e : tensor<64x96xbf16>, tensor<96xf32>, tensor<96xf32>
}

// -----

// A reduction over rows of an elementwise group's result, left outside the
// group (rows too long to keep whole), joins it: the group accumulates it
// per column chunk.
// CHECK-LABEL: func.func @group_row_sum
// CHECK-NEXT: %[[G:.*]]:2 = trn.fusion(%arg0 : tensor<64x40000xf32>)
// CHECK: trn.exp
// CHECK-NEXT: trn.reduce sum %{{.*}}, dims = [1]
// CHECK: return %[[G]]#0, %[[G]]#1
func.func @group_row_sum(%x: tensor<64x40000xf32>) -> (tensor<64x40000xf32>, tensor<64xf32>) {
  %0 = trn.fusion(%x : tensor<64x40000xf32>) -> (tensor<64x40000xf32>) {
  ^bb0(%a: tensor<64x40000xf32>):
    %1 = trn.exp %a : tensor<64x40000xf32>
    trn.yield %1 : tensor<64x40000xf32>
  }
  %2 = trn.reduce sum %0, dims = [1] : (tensor<64x40000xf32>) -> tensor<64xf32>
  return %0, %2 : tensor<64x40000xf32>, tensor<64xf32>
}

// -----

// A group that reduces along rows (a layer norm's backward) takes sums over
// rows of its result and of an input it reads (the norm weight's and bias's
// gradients) when its rows are at most 2048 wide; a wider one keeps them
// apart, and sums along rows never join it.
// CHECK-LABEL: func.func @norm_backward_sums
// CHECK: %[[G:.*]]:3 = trn.fusion
// CHECK: trn.reduce sum %{{.*}}, dims = [1]
// CHECK: trn.reduce sum %{{.*}}, dims = [0]
// CHECK: trn.reduce sum %{{.*}}, dims = [0]
// CHECK: trn.yield
// CHECK-NOT: trn.reduce
// CHECK: trn.fusion
// CHECK: trn.reduce sum %{{.*}}, dims = [1]
// CHECK: trn.yield
// CHECK: trn.reduce sum %{{.*}}, dims = [0] : (tensor<128x4096xf32>)
func.func @norm_backward_sums(%g: tensor<128x1024xf32>, %x: tensor<128x1024xf32>, %wg: tensor<128x4096xf32>, %wx: tensor<128x4096xf32>) -> (tensor<128x1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<128x4096xf32>, tensor<4096xf32>) {
  %0 = trn.fusion(%g, %x : tensor<128x1024xf32>, tensor<128x1024xf32>) -> (tensor<128x1024xf32>) {
  ^bb0(%a: tensor<128x1024xf32>, %b: tensor<128x1024xf32>):
    %p = trn.mul %a, %b : tensor<128x1024xf32>
    %r = trn.reduce sum %p, dims = [1] : (tensor<128x1024xf32>) -> tensor<128xf32>
    %c = trn.broadcast_in_dim %r, dims = [0] : (tensor<128xf32>) -> tensor<128x1024xf32>
    %m = trn.mul %c, %b : tensor<128x1024xf32>
    %y = trn.sub %a, %m : tensor<128x1024xf32>
    trn.yield %y : tensor<128x1024xf32>
  }
  %1 = trn.reduce sum %0, dims = [0] : (tensor<128x1024xf32>) -> tensor<1024xf32>
  %2 = trn.reduce sum %g, dims = [0] : (tensor<128x1024xf32>) -> tensor<1024xf32>
  %3 = trn.fusion(%wg, %wx : tensor<128x4096xf32>, tensor<128x4096xf32>) -> (tensor<128x4096xf32>) {
  ^bb0(%a: tensor<128x4096xf32>, %b: tensor<128x4096xf32>):
    %p = trn.mul %a, %b : tensor<128x4096xf32>
    %r = trn.reduce sum %p, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
    %c = trn.broadcast_in_dim %r, dims = [0] : (tensor<128xf32>) -> tensor<128x4096xf32>
    %m = trn.mul %c, %b : tensor<128x4096xf32>
    trn.yield %m : tensor<128x4096xf32>
  }
  %4 = trn.reduce sum %3, dims = [0] : (tensor<128x4096xf32>) -> tensor<4096xf32>
  return %0, %1, %2, %3, %4 : tensor<128x1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<128x4096xf32>, tensor<4096xf32>
}

// -----

// Rows that come out of the matmul whole (512 columns, one column block):
// the whole layer norm, reductions included, is the matmul's epilogue, and
// the residual sum it yields is stored from it.
// CHECK-LABEL: func.func @whole_row_norm
// CHECK-NEXT: %[[E:.*]]:2 = trn.fusion(%arg0, %arg1, %arg2, %arg3, %arg4 : {{.*}}) -> (tensor<256x512xf32>, tensor<256x512xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: trn.dot_general
// CHECK: trn.add
// CHECK: trn.reduce sum %{{.*}}, dims = [1]
// CHECK: trn.mul
// CHECK: trn.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[E]]#0, %[[E]]#1
func.func @whole_row_norm(%x: tensor<256x64xf32>, %w: tensor<64x512xf32>, %b: tensor<512xf32>, %r: tensor<256x512xf32>, %g: tensor<512xf32>) -> (tensor<256x512xf32>, tensor<256x512xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x64xf32>, tensor<64x512xf32>) -> tensor<256x512xf32>
  %1:2 = trn.fusion(%0, %b, %r, %g : tensor<256x512xf32>, tensor<512xf32>, tensor<256x512xf32>, tensor<512xf32>) -> (tensor<256x512xf32>, tensor<256x512xf32>) {
  ^bb0(%a: tensor<256x512xf32>, %bias: tensor<512xf32>, %res: tensor<256x512xf32>, %gamma: tensor<512xf32>):
    %2 = trn.broadcast_in_dim %bias, dims = [1] : (tensor<512xf32>) -> tensor<256x512xf32>
    %3 = trn.add %a, %2 : tensor<256x512xf32>
    %4 = trn.add %3, %res : tensor<256x512xf32>
    %5 = trn.reduce sum %4, dims = [1] : (tensor<256x512xf32>) -> tensor<256xf32>
    %6 = trn.broadcast_in_dim %5, dims = [0] : (tensor<256xf32>) -> tensor<256x512xf32>
    %7 = trn.sub %4, %6 : tensor<256x512xf32>
    %8 = trn.broadcast_in_dim %gamma, dims = [1] : (tensor<512xf32>) -> tensor<256x512xf32>
    %9 = trn.mul %7, %8 : tensor<256x512xf32>
    trn.yield %9, %4 : tensor<256x512xf32>, tensor<256x512xf32>
  }
  return %1#0, %1#1 : tensor<256x512xf32>, tensor<256x512xf32>
}

// -----

// A norm's backward after an input gradient (1024 columns: two banks, one
// column block): the elementwise group that also reads the gradient (for
// the norm weight's gradient) merges into the norm's group, which takes the
// matmul; the sums over rows of the gradient (a bias's gradient) and of the
// sibling's product join it, so no [256, 1024] value is stored.
// CHECK-LABEL: func.func @whole_row_norm_backward
// CHECK-NEXT: %[[E:.*]]:3 = trn.fusion(%arg0, %arg1, %arg2, %arg3 : {{.*}}) -> (tensor<256x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: trn.dot_general
// CHECK: trn.reduce sum %{{.*}}, dims = [1]
// CHECK: trn.reduce sum %{{.*}}, dims = [0]
// CHECK: trn.reduce sum %{{.*}}, dims = [0]
// CHECK: trn.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[E]]#0, %[[E]]#1, %[[E]]#2
func.func @whole_row_norm_backward(%dy: tensor<256x1024xbf16>, %w: tensor<1024x1024xbf16>, %xhat: tensor<256x1024xf32>, %rstd: tensor<256xf32>) -> (tensor<256x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>) {
  %0 = trn.dot_general %dy, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<256x1024xf32>
  %1 = trn.fusion(%0, %xhat : tensor<256x1024xf32>, tensor<256x1024xf32>) -> (tensor<256x1024xf32>) {
  ^bb0(%a: tensor<256x1024xf32>, %h: tensor<256x1024xf32>):
    %2 = trn.mul %a, %h : tensor<256x1024xf32>
    trn.yield %2 : tensor<256x1024xf32>
  }
  %3 = trn.fusion(%0, %xhat, %rstd : tensor<256x1024xf32>, tensor<256x1024xf32>, tensor<256xf32>) -> (tensor<256x1024xbf16>) {
  ^bb0(%a: tensor<256x1024xf32>, %h: tensor<256x1024xf32>, %s: tensor<256xf32>):
    %4 = trn.reduce sum %a, dims = [1] : (tensor<256x1024xf32>) -> tensor<256xf32>
    %5 = trn.broadcast_in_dim %4, dims = [0] : (tensor<256xf32>) -> tensor<256x1024xf32>
    %6 = trn.sub %a, %5 : tensor<256x1024xf32>
    %7 = trn.broadcast_in_dim %s, dims = [0] : (tensor<256xf32>) -> tensor<256x1024xf32>
    %8 = trn.mul %6, %7 : tensor<256x1024xf32>
    %9 = trn.convert %8 : tensor<256x1024xf32> -> tensor<256x1024xbf16>
    trn.yield %9 : tensor<256x1024xbf16>
  }
  %10 = trn.reduce sum %1, dims = [0] : (tensor<256x1024xf32>) -> tensor<1024xf32>
  %11 = trn.reduce sum %0, dims = [0] : (tensor<256x1024xf32>) -> tensor<1024xf32>
  return %3, %10, %11 : tensor<256x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>
}

// -----

// A sibling whose result the norm's group reads merges into it (the value
// is computed inside, not read back).
// CHECK-LABEL: func.func @sibling_read_by_norm
// CHECK-NEXT: %[[E:.*]]:2 = trn.fusion(%arg0, %arg1 : {{.*}}) -> (tensor<128x512xf32>, tensor<128x512xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: trn.dot_general
// CHECK-NEXT: trn.exp
// CHECK-NEXT: trn.reduce max
// CHECK: return %[[E]]#0, %[[E]]#1
func.func @sibling_read_by_norm(%x: tensor<128x64xf32>, %w: tensor<64x512xf32>) -> (tensor<128x512xf32>, tensor<128x512xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x512xf32>) -> tensor<128x512xf32>
  %1 = trn.fusion(%0 : tensor<128x512xf32>) -> (tensor<128x512xf32>) {
  ^bb0(%a: tensor<128x512xf32>):
    %2 = trn.exp %a : tensor<128x512xf32>
    trn.yield %2 : tensor<128x512xf32>
  }
  %3 = trn.fusion(%0, %1 : tensor<128x512xf32>, tensor<128x512xf32>) -> (tensor<128x512xf32>) {
  ^bb0(%a: tensor<128x512xf32>, %e: tensor<128x512xf32>):
    %4 = trn.reduce max %a, dims = [1] : (tensor<128x512xf32>) -> tensor<128xf32>
    %5 = trn.broadcast_in_dim %4, dims = [0] : (tensor<128xf32>) -> tensor<128x512xf32>
    %6 = trn.sub %e, %5 : tensor<128x512xf32>
    trn.yield %6 : tensor<128x512xf32>
  }
  return %3, %1 : tensor<128x512xf32>, tensor<128x512xf32>
}

// -----

// Must not merge: another op uses the sibling's result before the norm's
// group. The norm still takes the matmul (placed at the matmul), and yields
// its result for the sibling to read.
// CHECK-LABEL: func.func @sibling_used_early
// CHECK-NEXT: %[[E:.*]]:2 = trn.fusion(%arg0, %arg1 : {{.*}}) -> (tensor<128x512xf32>, tensor<128x512xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: trn.dot_general
// CHECK-NEXT: trn.reduce max
// CHECK: }
// CHECK-NEXT: %[[S:.*]] = trn.fusion(%[[E]]#1
// CHECK: trn.exp
// CHECK: return %[[E]]#0, %{{.*}}
func.func @sibling_used_early(%x: tensor<128x64xf32>, %w: tensor<64x512xf32>) -> (tensor<128x512xf32>, tensor<128x512xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xf32>, tensor<64x512xf32>) -> tensor<128x512xf32>
  %1 = trn.fusion(%0 : tensor<128x512xf32>) -> (tensor<128x512xf32>) {
  ^bb0(%a: tensor<128x512xf32>):
    %2 = trn.exp %a : tensor<128x512xf32>
    trn.yield %2 : tensor<128x512xf32>
  }
  %7 = trn.neg %1 : tensor<128x512xf32>
  %3 = trn.fusion(%0 : tensor<128x512xf32>) -> (tensor<128x512xf32>) {
  ^bb0(%a: tensor<128x512xf32>):
    %4 = trn.reduce max %a, dims = [1] : (tensor<128x512xf32>) -> tensor<128xf32>
    %5 = trn.broadcast_in_dim %4, dims = [0] : (tensor<128xf32>) -> tensor<128x512xf32>
    %6 = trn.sub %a, %5 : tensor<128x512xf32>
    trn.yield %6 : tensor<128x512xf32>
  }
  return %3, %7 : tensor<128x512xf32>, tensor<128x512xf32>
}

// -----

// A normaliser over logits wider than a row block's tiles (the group that
// sums exp(x - max(x)) after the epilogue yields x and max(x)) joins the
// epilogue, which yields the sum after its results (online softmax in the
// backend): the logits are not read back for it.
// CHECK-LABEL: func.func @exp_sum_joins
// CHECK-NEXT: %[[E:.*]]:3 = trn.fusion(%arg0, %arg1 : {{.*}}) -> (tensor<128x4096xf32>, tensor<128xf32>, tensor<128xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[D:.*]] = trn.dot_general
// CHECK-NEXT: %[[M:.*]] = trn.reduce max %[[D]], dims = [1]
// CHECK-NEXT: %[[B:.*]] = trn.broadcast_in_dim %[[M]], dims = [0]
// CHECK-NEXT: %[[S:.*]] = trn.sub %[[D]], %[[B]]
// CHECK-NEXT: %[[X:.*]] = trn.exp %[[S]]
// CHECK-NEXT: %[[T:.*]] = trn.reduce sum %[[X]], dims = [1]
// CHECK-NEXT: trn.yield %[[D]], %[[M]], %[[T]]
// CHECK: return %[[E]]#0, %[[E]]#2
func.func @exp_sum_joins(%h: tensor<128x64xbf16>, %w: tensor<64x4096xbf16>) -> (tensor<128x4096xf32>, tensor<128xf32>) {
  %0:2 = trn.fusion(%h, %w : tensor<128x64xbf16>, tensor<64x4096xbf16>) -> (tensor<128x4096xf32>, tensor<128xf32>) {
  ^bb0(%a: tensor<128x64xbf16>, %b: tensor<64x4096xbf16>):
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xbf16>, tensor<64x4096xbf16>) -> tensor<128x4096xf32>
    %2 = trn.reduce max %1, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
    trn.yield %1, %2 : tensor<128x4096xf32>, tensor<128xf32>
  }
  %3 = trn.fusion(%0#0, %0#1 : tensor<128x4096xf32>, tensor<128xf32>) -> (tensor<128xf32>) {
  ^bb0(%x: tensor<128x4096xf32>, %m: tensor<128xf32>):
    %4 = trn.broadcast_in_dim %m, dims = [0] : (tensor<128xf32>) -> tensor<128x4096xf32>
    %5 = trn.sub %x, %4 : tensor<128x4096xf32>
    %6 = trn.exp %5 : tensor<128x4096xf32>
    %7 = trn.reduce sum %6, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
    trn.yield %7 : tensor<128xf32>
  }
  return %0#0, %3 : tensor<128x4096xf32>, tensor<128xf32>
}

// -----

// Must not join: the group subtracts something else than the epilogue's max
// (here, a max it was given), or does more than sum the exponentials.
// CHECK-LABEL: func.func @exp_sum_other_max
// CHECK: trn.fusion(%arg0, %arg1
// CHECK: trn.fusion(%{{.*}}#0, %arg2
// CHECK-LABEL: func.func @exp_sum_more
// CHECK: trn.fusion(%arg0, %arg1
// CHECK: trn.fusion(%{{.*}}#0, %{{.*}}#1
func.func @exp_sum_other_max(%h: tensor<128x64xbf16>, %w: tensor<64x4096xbf16>, %m0: tensor<128xf32>) -> (tensor<128x4096xf32>, tensor<128xf32>, tensor<128xf32>) {
  %0:2 = trn.fusion(%h, %w : tensor<128x64xbf16>, tensor<64x4096xbf16>) -> (tensor<128x4096xf32>, tensor<128xf32>) {
  ^bb0(%a: tensor<128x64xbf16>, %b: tensor<64x4096xbf16>):
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xbf16>, tensor<64x4096xbf16>) -> tensor<128x4096xf32>
    %2 = trn.reduce max %1, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
    trn.yield %1, %2 : tensor<128x4096xf32>, tensor<128xf32>
  }
  %3 = trn.fusion(%0#0, %m0 : tensor<128x4096xf32>, tensor<128xf32>) -> (tensor<128xf32>) {
  ^bb0(%x: tensor<128x4096xf32>, %m: tensor<128xf32>):
    %4 = trn.broadcast_in_dim %m, dims = [0] : (tensor<128xf32>) -> tensor<128x4096xf32>
    %5 = trn.sub %x, %4 : tensor<128x4096xf32>
    %6 = trn.exp %5 : tensor<128x4096xf32>
    %7 = trn.reduce sum %6, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
    trn.yield %7 : tensor<128xf32>
  }
  return %0#0, %0#1, %3 : tensor<128x4096xf32>, tensor<128xf32>, tensor<128xf32>
}
func.func @exp_sum_more(%h: tensor<128x64xbf16>, %w: tensor<64x4096xbf16>) -> (tensor<128x4096xf32>, tensor<128xf32>) {
  %0:2 = trn.fusion(%h, %w : tensor<128x64xbf16>, tensor<64x4096xbf16>) -> (tensor<128x4096xf32>, tensor<128xf32>) {
  ^bb0(%a: tensor<128x64xbf16>, %b: tensor<64x4096xbf16>):
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<128x64xbf16>, tensor<64x4096xbf16>) -> tensor<128x4096xf32>
    %2 = trn.reduce max %1, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
    trn.yield %1, %2 : tensor<128x4096xf32>, tensor<128xf32>
  }
  %3 = trn.fusion(%0#0, %0#1 : tensor<128x4096xf32>, tensor<128xf32>) -> (tensor<128xf32>) {
  ^bb0(%x: tensor<128x4096xf32>, %m: tensor<128xf32>):
    %4 = trn.broadcast_in_dim %m, dims = [0] : (tensor<128xf32>) -> tensor<128x4096xf32>
    %5 = trn.sub %x, %4 : tensor<128x4096xf32>
    %6 = trn.exp %5 : tensor<128x4096xf32>
    %8 = trn.mul %6, %6 : tensor<128x4096xf32>
    %7 = trn.reduce sum %8, dims = [1] : (tensor<128x4096xf32>) -> tensor<128xf32>
    trn.yield %7 : tensor<128xf32>
  }
  return %0#0, %3 : tensor<128x4096xf32>, tensor<128xf32>
}
