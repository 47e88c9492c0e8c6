// Matmuls against weights stored [N, K] (nn.Linear's layout: K contiguous)
// load the weight a chunk of rows at a time and transpose it into a resident
// panel, four row blocks per PSUM bank; M blocks are software-pipelined (the
// next block's lhs transposes run before this block's last matmuls). Cases:
// K over one 2048-element chunk and not a multiple of 128 with two column
// blocks (the second panel refilled while the first finishes), a batched
// bf16 case whose panels prefetch, N not a multiple of 128; compiled by
// trn-cc and run on the simulator, they match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 5 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 3 outputs match
func.func @mm(%a: tensor<300x2500xf32>, %w: tensor<1100x2500xf32>, %c: tensor<2x130x260xbf16>, %d: tensor<2x600x260xbf16>, %x: tensor<384x1024xbf16>, %v: tensor<700x1024xbf16>) -> (tensor<300x1100xf32>, tensor<2x130x600xf32>, tensor<384x700xf32>) {
  %0 = trn.dot_general %a, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<300x2500xf32>, tensor<1100x2500xf32>) -> tensor<300x1100xf32>
  %1 = trn.dot_general %c, %d, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x130x260xbf16>, tensor<2x600x260xbf16>) -> tensor<2x130x600xf32>
  %2 = trn.dot_general %x, %v, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<384x1024xbf16>, tensor<700x1024xbf16>) -> tensor<384x700xf32>
  return %0, %1, %2 : tensor<300x1100xf32>, tensor<2x130x600xf32>, tensor<384x700xf32>
}

