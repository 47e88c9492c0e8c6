// An MLP layer step in bf16 (bf16 inputs and weights, matmuls accumulating
// in f32, elementwise math in f32), forward and backward, compiled by trn-cc
// and run on the simulator, matches the reference evaluator. Shapes exercise
// the matmul tiling: 200 rows (two M tiles), x @ w^T with N = 640 > 512 (two
// PSUM banks) and K = 160 > 128, h @ v with K = 640 (five K tiles), the
// weight gradients contract the 200 rows (K = 200), dy @ v^T has N = 640.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 20 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 2e-2 | FileCheck %s
// CHECK: 9 outputs match

func.func @mlp_bf16(%x: tensor<200x160xbf16> {trn.name = "x"}, %w: tensor<640x160xbf16> {trn.name = "w"},
                    %b: tensor<640xbf16> {trn.name = "b"}, %v: tensor<640x96xbf16> {trn.name = "v"},
                    %dy: tensor<200x96xbf16> {trn.name = "dy"})
    -> (tensor<200x640xbf16> {trn.name = "h"}, tensor<200x96xf32> {trn.name = "y"},
        tensor<200xf32> {trn.name = "row_max"}, tensor<640x200xbf16> {trn.name = "h_t"},
        tensor<640x96xf32> {trn.name = "dv"}, tensor<200x640xf32> {trn.name = "dh_pre"},
        tensor<640x160xf32> {trn.name = "dw"}, tensor<640xf32> {trn.name = "db"},
        tensor<200x160xf32> {trn.name = "dx"}) {
  // Forward: h = gelu_tanh(x @ w^T + b) (nn.Linear layout), y = h @ v.
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<200x160xbf16>, tensor<640x160xbf16>) -> tensor<200x640xf32>
  %bf = trn.convert %b : tensor<640xbf16> -> tensor<640xf32>
  %1 = trn.broadcast_in_dim %bf, dims = [1] : (tensor<640xf32>) -> tensor<200x640xf32>
  %pre = trn.add %0, %1 : tensor<200x640xf32>
  %h = trn.gelu %pre approximate = tanh : tensor<200x640xf32>
  %hb = trn.convert %h : tensor<200x640xf32> -> tensor<200x640xbf16>
  %y = trn.dot_general %hb, %v, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<200x640xbf16>, tensor<640x96xbf16>) -> tensor<200x96xf32>
  %mx = trn.reduce max %h, dims = [1] : (tensor<200x640xf32>) -> tensor<200xf32>
  %ht = trn.transpose %hb, perm = [1, 0] : (tensor<200x640xbf16>) -> tensor<640x200xbf16>
  // Backward from dy.
  %dv = trn.dot_general %hb, %dy, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<200x640xbf16>, tensor<200x96xbf16>) -> tensor<640x96xf32>
  %dh = trn.dot_general %dy, %v, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<200x96xbf16>, tensor<640x96xbf16>) -> tensor<200x640xf32>
  // gelu_grad (tanh approximation) in primitives, as trn.gelu_grad is not
  // lowered yet (gelu-grad.mlir): with u = c (x + k x^3), t = tanh(u),
  // d gelu / dx = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2).
  %c = trn.constant dense<0.7978845608028654> : tensor<200x640xf32>
  %k = trn.constant dense<0.044715> : tensor<200x640xf32>
  %k3 = trn.constant dense<0.134145> : tensor<200x640xf32>
  %one = trn.constant dense<1.0> : tensor<200x640xf32>
  %half = trn.constant dense<0.5> : tensor<200x640xf32>
  %x2 = trn.mul %pre, %pre : tensor<200x640xf32>
  %x3 = trn.mul %x2, %pre : tensor<200x640xf32>
  %kx3 = trn.mul %k, %x3 : tensor<200x640xf32>
  %inner = trn.add %pre, %kx3 : tensor<200x640xf32>
  %u = trn.mul %c, %inner : tensor<200x640xf32>
  %t = trn.tanh %u : tensor<200x640xf32>
  %onept = trn.add %one, %t : tensor<200x640xf32>
  %left = trn.mul %half, %onept : tensor<200x640xf32>
  %t2 = trn.mul %t, %t : tensor<200x640xf32>
  %sech2 = trn.sub %one, %t2 : tensor<200x640xf32>
  %k3x2 = trn.mul %k3, %x2 : tensor<200x640xf32>
  %poly0 = trn.add %one, %k3x2 : tensor<200x640xf32>
  %poly = trn.mul %c, %poly0 : tensor<200x640xf32>
  %hx = trn.mul %half, %pre : tensor<200x640xf32>
  %r0 = trn.mul %hx, %sech2 : tensor<200x640xf32>
  %right = trn.mul %r0, %poly : tensor<200x640xf32>
  %dgelu = trn.add %left, %right : tensor<200x640xf32>
  %dpre = trn.mul %dh, %dgelu : tensor<200x640xf32>
  %dpreb = trn.convert %dpre : tensor<200x640xf32> -> tensor<200x640xbf16>
  %dw = trn.dot_general %dpreb, %x, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<200x640xbf16>, tensor<200x160xbf16>) -> tensor<640x160xf32>
  %db = trn.reduce sum %dpre, dims = [0] : (tensor<200x640xf32>) -> tensor<640xf32>
  %dx = trn.dot_general %dpreb, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<200x640xbf16>, tensor<640x160xbf16>) -> tensor<200x160xf32>
  return %hb, %y, %mx, %ht, %dv, %dpre, %dw, %db, %dx
      : tensor<200x640xbf16>, tensor<200x96xf32>, tensor<200xf32>, tensor<640x200xbf16>,
        tensor<640x96xf32>, tensor<200x640xf32>, tensor<640x160xf32>, tensor<640xf32>, tensor<200x160xf32>
}
