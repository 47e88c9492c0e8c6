// Fusion kernels give x * c, x + c, x - c and c - x (c a per-row column) to
// the Scalar Engine while it has less work than the Vector Engine, as a copy
// with a scale and a bias column: the results match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-opt %s --trn-fuse-elementwise --convert-trn-to-nc | FileCheck %s --check-prefix=NC
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 5 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 5 outputs match
// The per-row column c and the Vector Engine's reduction come first.
// NC: nc.tensor_reduce add
// NC: nc.tensor_scalar multiply, bypass %[[C:.*]], %{{.*}} {scalar0 = 0.00999999977 : f32}
// x * c: a scale column.
// NC: nc.activation copy %{{.*}}, %{{.*}} scale_column %[[C]]
// NC: nc.tensor_tensor max
// x - c: the negated column as the bias.
// NC: nc.tensor_scalar multiply, bypass %[[NEG:.*]], %[[C]] {scalar0 = -1.000000e+00 : f32}
// NC-NEXT: nc.activation copy %{{.*}}, %{{.*}} bias_column %[[NEG]]
// c - x: scale -1 and the column as the bias.
// NC: nc.activation copy %{{.*}}, %{{.*}} bias_column %[[C]] {scale = -1.000000e+00 : f32}
// x + c: the column as the bias.
// NC: nc.activation copy %{{.*}}, %{{.*}} bias_column %[[C]] :

func.func @columns(%x: tensor<200x300xf32> {trn.name = "x"})
    -> (tensor<200x300xf32> {trn.name = "a"}, tensor<200x300xf32> {trn.name = "m"},
        tensor<200x300xf32> {trn.name = "d"}, tensor<200x300xf32> {trn.name = "e"},
        tensor<200x300xf32> {trn.name = "b"}) {
  %k = trn.constant dense<0.01> : tensor<200xf32>
  %s = trn.reduce sum %x, dims = [1] : (tensor<200x300xf32>) -> tensor<200xf32>
  %c = trn.mul %s, %k : tensor<200xf32>
  %cb = trn.broadcast_in_dim %c, dims = [0] : (tensor<200xf32>) -> tensor<200x300xf32>
  %a = trn.mul %x, %cb : tensor<200x300xf32>
  %m = trn.max %a, %x : tensor<200x300xf32>
  %d = trn.sub %m, %cb : tensor<200x300xf32>
  %e = trn.sub %cb, %d : tensor<200x300xf32>
  %b = trn.add %e, %cb : tensor<200x300xf32>
  return %a, %m, %d, %e, %b : tensor<200x300xf32>, tensor<200x300xf32>, tensor<200x300xf32>, tensor<200x300xf32>, tensor<200x300xf32>
}
