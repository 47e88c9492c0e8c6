// Matmuls wide enough to reuse the stationary operand across N blocks: the
// row-major lhs is transposed once into a blocked HBM scratch (M, K not
// multiples of 128; a batched bf16 case), compiled by trn-cc and run on the
// simulator, match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 4 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s --check-prefix=IR
// CHECK: 2 outputs match
// One transpose per (M block, K tile) of each lhs: 3 x 6 + 2 x 2 x 3.
// IR-COUNT-30: nc.transpose
// IR-NOT: nc.transpose
func.func @mm(%a: tensor<300x700xf32>, %b: tensor<700x1100xf32>, %c: tensor<2x130x260xbf16>, %d: tensor<2x260x600xbf16>) -> (tensor<300x1100xf32>, tensor<2x130x600xf32>) {
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<300x700xf32>, tensor<700x1100xf32>) -> tensor<300x1100xf32>
  %1 = trn.dot_general %c, %d, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x130x260xbf16>, tensor<2x260x600xbf16>) -> tensor<2x130x600xf32>
  return %0, %1 : tensor<300x1100xf32>, tensor<2x130x600xf32>
}
