// Row reductions whose results are only yielded (the sum of a cross-entropy's
// exponentials) run per column chunk of the row, each chunk adding its part
// to a running column, so rows need not fit in SBUF whole: rows of 5000 and
// 2100 columns (chunks of 2048 and a remainder), sum and max, M off the
// 128 grid; compiled by trn-cc and run on the simulator, they match the
// reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 12 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 3 outputs match
// The sum's group tiles its rows by 2048 columns, not whole (5000).
// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s --check-prefix=IR
// IR: nc.kind "elementwise" {origin = "chunks: trn.fusion #0"}
// IR-NOT: 128x5000xf32
// IR: nc.kind
func.func @chunks(%x: tensor<300x5000xf32>, %m: tensor<300xf32>, %y: tensor<130x2100xf32>) -> (tensor<300x5000xf32>, tensor<300xf32>, tensor<130xf32>) {
  %0:2 = trn.fusion(%x, %m : tensor<300x5000xf32>, tensor<300xf32>) -> (tensor<300x5000xf32>, tensor<300xf32>) {
  ^bb0(%a: tensor<300x5000xf32>, %b: tensor<300xf32>):
    %1 = trn.broadcast_in_dim %b, dims = [0] : (tensor<300xf32>) -> tensor<300x5000xf32>
    %2 = trn.sub %a, %1 : tensor<300x5000xf32>
    %3 = trn.exp %2 : tensor<300x5000xf32>
    %4 = trn.reduce sum %3, dims = [1] : (tensor<300x5000xf32>) -> tensor<300xf32>
    trn.yield %3, %4 : tensor<300x5000xf32>, tensor<300xf32>
  }
  %5 = trn.fusion(%y : tensor<130x2100xf32>) -> (tensor<130xf32>) {
  ^bb0(%c: tensor<130x2100xf32>):
    %6 = trn.tanh %c : tensor<130x2100xf32>
    %7 = trn.reduce max %6, dims = [1] : (tensor<130x2100xf32>) -> tensor<130xf32>
    trn.yield %7 : tensor<130xf32>
  }
  return %0#0, %0#1, %5 : tensor<300x5000xf32>, tensor<300xf32>, tensor<130xf32>
}
