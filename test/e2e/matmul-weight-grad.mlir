// Weight gradients dY^T X (the lhs K-major, M contiguous): one DMA loads a K
// tile of a group of up to eight M blocks. M not a multiple of 128 (a
// partial last group), K over several tiles and not a multiple of 128, a
// batched bf16 case; compiled by trn-cc and run on the simulator, they match
// the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 6 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 2 outputs match
func.func @grad(%dy: tensor<300x1100xf32>, %x: tensor<300x260xf32>, %dz: tensor<2x130x700xbf16>, %y: tensor<2x130x96xbf16>) -> (tensor<1100x260xf32>, tensor<2x700x96xf32>) {
  %0 = trn.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<300x1100xf32>, tensor<300x260xf32>) -> tensor<1100x260xf32>
  %1 = trn.dot_general %dz, %y, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<2x130x700xbf16>, tensor<2x130x96xbf16>) -> tensor<2x700x96xf32>
  return %0, %1 : tensor<1100x260xf32>, tensor<2x700x96xf32>
}
