// Layer norm over rows longer than a column chunk (5600 f32 columns, two
// 128-row tiles of 200 rows), forward and backward, matches the reference
// evaluator. The groups reduce whole rows, then run the rest per chunk of
// 2048 columns reading the rows as windows (2048 + 2048 + 1504); w and b,
// the same for every row, are loaded once (the third such row, s, does not
// fit the budget and is loaded per tile: which ones are kept must not depend
// on where values sit in memory, so two compiles give the same bytes); the
// forward's 1/sigma, broadcast for the backward, is passed as a [rows]
// column (not a full tensor).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-opt %s --trn-fuse-elementwise | FileCheck %s --check-prefix=FUSED
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-cc compile %s -o %t/b.trnart --no-cache -q
// RUN: cmp %t/a.trnart %t/b.trnart
// RUN: trn-eval %s --random 11 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 y=2e-2 | FileCheck %s
// CHECK: 5 outputs match
// FUSED: %[[F:.*]]:4 = trn.fusion(%arg0, %arg1, %arg2, %arg3, %arg5 : {{.*}}) -> (tensor<200x5600xf32>, tensor<200xf32>, tensor<200x5600xf32>, tensor<200x5600xbf16>)
// FUSED: trn.fusion({{.*}}%[[F]]#1{{.*}}tensor<200xf32>

func.func @layer_norm_wide(%x: tensor<200x5600xf32> {trn.name = "x"}, %r: tensor<200x5600xf32> {trn.name = "r"},
                           %w: tensor<5600xf32> {trn.name = "w"}, %b: tensor<5600xf32> {trn.name = "b"},
                           %dy: tensor<200x5600xf32> {trn.name = "dy"}, %sc: tensor<5600xf32> {trn.name = "s"})
    -> (tensor<200x5600xf32> {trn.name = "h"}, tensor<200x5600xf32> {trn.name = "xhat"},
        tensor<200x5600xbf16> {trn.name = "y"}, tensor<200x5600xf32> {trn.name = "dx"},
        tensor<5600xf32> {trn.name = "colsum"}) {
  %n = trn.constant dense<5.600000e+03> : tensor<200xf32>
  %eps = trn.constant dense<1.0e-05> : tensor<200xf32>
  %wb = trn.broadcast_in_dim %w, dims = [1] : (tensor<5600xf32>) -> tensor<200x5600xf32>
  %bb = trn.broadcast_in_dim %b, dims = [1] : (tensor<5600xf32>) -> tensor<200x5600xf32>
  %h = trn.add %x, %r : tensor<200x5600xf32>
  %s = trn.reduce sum %h, dims = [1] : (tensor<200x5600xf32>) -> tensor<200xf32>
  %mean = trn.div %s, %n : tensor<200xf32>
  %meanb = trn.broadcast_in_dim %mean, dims = [0] : (tensor<200xf32>) -> tensor<200x5600xf32>
  %d = trn.sub %h, %meanb : tensor<200x5600xf32>
  %sq = trn.mul %d, %d : tensor<200x5600xf32>
  %ss = trn.reduce sum %sq, dims = [1] : (tensor<200x5600xf32>) -> tensor<200xf32>
  %var = trn.div %ss, %n : tensor<200xf32>
  %ve = trn.add %var, %eps : tensor<200xf32>
  %rstd = trn.rsqrt %ve : tensor<200xf32>
  %rb = trn.broadcast_in_dim %rstd, dims = [0] : (tensor<200xf32>) -> tensor<200x5600xf32>
  %xhat = trn.mul %d, %rb : tensor<200x5600xf32>
  %yw = trn.mul %xhat, %wb : tensor<200x5600xf32>
  %ysum = trn.add %yw, %bb : tensor<200x5600xf32>
  %sb = trn.broadcast_in_dim %sc, dims = [1] : (tensor<5600xf32>) -> tensor<200x5600xf32>
  %y32 = trn.mul %ysum, %sb : tensor<200x5600xf32>
  %y = trn.convert %y32 : tensor<200x5600xf32> -> tensor<200x5600xbf16>
  // A reduction over rows (not a group's) reads x-hat: the forward group
  // closes, as the matmuls between a forward and its backward close it.
  %colsum = trn.reduce sum %xhat, dims = [0] : (tensor<200x5600xf32>) -> tensor<5600xf32>
  // The backward reads the saved 1/sigma broadcast (%rb) and x-hat.
  %e = trn.exp %dy : tensor<200x5600xf32>
  %g = trn.mul %e, %wb : tensor<200x5600xf32>
  %s1 = trn.reduce sum %g, dims = [1] : (tensor<200x5600xf32>) -> tensor<200xf32>
  %m1 = trn.div %s1, %n : tensor<200xf32>
  %m1b = trn.broadcast_in_dim %m1, dims = [0] : (tensor<200xf32>) -> tensor<200x5600xf32>
  %gx = trn.mul %g, %xhat : tensor<200x5600xf32>
  %s2 = trn.reduce sum %gx, dims = [1] : (tensor<200x5600xf32>) -> tensor<200xf32>
  %m2 = trn.div %s2, %n : tensor<200xf32>
  %m2b = trn.broadcast_in_dim %m2, dims = [0] : (tensor<200xf32>) -> tensor<200x5600xf32>
  %t1 = trn.mul %xhat, %m2b : tensor<200x5600xf32>
  %t2 = trn.sub %g, %m1b : tensor<200x5600xf32>
  %t3 = trn.sub %t2, %t1 : tensor<200x5600xf32>
  %t4 = trn.mul %rb, %t3 : tensor<200x5600xf32>
  %dx = trn.add %h, %t4 : tensor<200x5600xf32>
  return %h, %xhat, %y, %dx, %colsum : tensor<200x5600xf32>, tensor<200x5600xf32>, tensor<200x5600xbf16>, tensor<200x5600xf32>, tensor<5600xf32>
}
