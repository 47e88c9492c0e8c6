// Sums over rows of a matmul epilogue's results (a bias's gradient) run in
// the epilogue: running fp32 totals per column, the partitions summed once
// per column block. M over several blocks with a partial last one, M under
// one block, N over two column blocks of two banks, and the K-chunked
// matmul (K too large for a resident panel); compiled by trn-cc and run on
// the simulator, they match the reference evaluator. An elementwise group
// (a cast) sums its result over rows the same way, the sum its only use,
// and another sums an input it reads. Reductions over an epilogue's rows
// (a row max across two column blocks, a row sum after the K-chunked
// matmul) keep a running column per row block.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 9 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 11 outputs match
func.func @sums(%x: tensor<300x64xbf16>, %w: tensor<64x1100xbf16>, %s: tensor<300x1100xf32>, %y: tensor<100x96xf32>, %v: tensor<96x200xf32>, %a: tensor<200x7000xf32>, %b: tensor<7000x300xf32>, %g: tensor<300x2500xbf16>, %h: tensor<260x700xf32>) -> (tensor<300x1100xf32>, tensor<1100xf32>, tensor<100x200xf32>, tensor<200xf32>, tensor<300xf32>, tensor<200x300xf32>, tensor<2500xf32>, tensor<260x700xf32>, tensor<700xf32>, tensor<300xf32>, tensor<200xf32>) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<300x64xbf16>, tensor<64x1100xbf16>) -> tensor<300x1100xf32>
  %1 = trn.mul %0, %s : tensor<300x1100xf32>
  %3 = trn.reduce sum %1, dims = [0] : (tensor<300x1100xf32>) -> tensor<1100xf32>
  %4 = trn.dot_general %y, %v, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<100x96xf32>, tensor<96x200xf32>) -> tensor<100x200xf32>
  %5 = trn.tanh %4 : tensor<100x200xf32>
  %6 = trn.reduce sum %5, dims = [0] : (tensor<100x200xf32>) -> tensor<200xf32>
  %7 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<200x7000xf32>, tensor<7000x300xf32>) -> tensor<200x300xf32>
  %8 = trn.tanh %7 : tensor<200x300xf32>
  %9 = trn.reduce sum %8, dims = [0] : (tensor<200x300xf32>) -> tensor<300xf32>
  %10 = trn.convert %g : tensor<300x2500xbf16> -> tensor<300x2500xf32>
  %11 = trn.reduce sum %10, dims = [0] : (tensor<300x2500xf32>) -> tensor<2500xf32>
  %12 = trn.exp %h : tensor<260x700xf32>
  %13 = trn.reduce sum %h, dims = [0] : (tensor<260x700xf32>) -> tensor<700xf32>
  %14 = trn.reduce max %1, dims = [1] : (tensor<300x1100xf32>) -> tensor<300xf32>
  %15 = trn.reduce sum %8, dims = [1] : (tensor<200x300xf32>) -> tensor<200xf32>
  return %1, %3, %5, %6, %9, %8, %11, %12, %13, %14, %15 : tensor<300x1100xf32>, tensor<1100xf32>, tensor<100x200xf32>, tensor<200xf32>, tensor<300xf32>, tensor<200x300xf32>, tensor<2500xf32>, tensor<260x700xf32>, tensor<700xf32>, tensor<300xf32>, tensor<200xf32>
}
