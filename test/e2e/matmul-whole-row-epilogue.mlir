// A layer norm as its projection's epilogue (trn-fuse-matmul-epilogue,
// whole rows): the matmul's 1024 result columns come out of one column
// block, its two PSUM banks are evicted into one SBUF tile of whole rows,
// and the norm (bias, residual, mean, variance, scale) runs on it; the
// backward's input gradient likewise takes its norm backward, the sibling
// product for the weight gradient and three sums over rows. 300 rows (a
// partial row tile) in bf16 with fp32 accumulation, compiled by trn-cc and
// run on the simulator, match the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 21 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 8e-3 | FileCheck %s
// RUN: trn-cc compile %s --no-cache --mlir-print-ir-after-all -o %t/ir.trnart 2>&1 | FileCheck %s --check-prefix=IR
// CHECK: 6 outputs match
// IR: IR Dump After TrnFuseMatmulEpilogue
// IR: trn.fusion
// IR-NEXT: ^bb0
// IR-NEXT: trn.dot_general
// IR: trn.reduce sum %{{.*}}, dims = [1]
// IR: trn.rsqrt
// IR: trn.yield
// IR: trn.fusion
// IR-NEXT: ^bb0
// IR-NEXT: trn.dot_general
// IR: trn.reduce sum %{{.*}}, dims = [1]
// IR: trn.reduce sum %{{.*}}, dims = [0] : (tensor<300x1024xf32>) -> tensor<1024xf32>
// IR: trn.yield
// IR: IR Dump After
func.func @norm_after_projection(%x: tensor<300x256xbf16>, %w: tensor<1024x256xbf16>, %b: tensor<1024xf32>, %res: tensor<300x1024xf32>, %gamma: tensor<1024xf32>, %dy: tensor<300x1024xbf16>, %w2: tensor<1024x1024xbf16>, %xhat: tensor<300x1024xf32>, %rstd: tensor<300xf32>) -> (tensor<300x1024xf32>, tensor<300x1024xbf16>, tensor<300x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>, tensor<300xf32>) {
  %mm = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<300x256xbf16>, tensor<1024x256xbf16>) -> tensor<300x1024xf32>
  %bb = trn.broadcast_in_dim %b, dims = [1] : (tensor<1024xf32>) -> tensor<300x1024xf32>
  %h0 = trn.add %mm, %bb : tensor<300x1024xf32>
  %h = trn.add %h0, %res : tensor<300x1024xf32>
  %sum = trn.reduce sum %h, dims = [1] : (tensor<300x1024xf32>) -> tensor<300xf32>
  %n = trn.constant dense<1024.0> : tensor<300xf32>
  %mean = trn.div %sum, %n : tensor<300xf32>
  %meanb = trn.broadcast_in_dim %mean, dims = [0] : (tensor<300xf32>) -> tensor<300x1024xf32>
  %c = trn.sub %h, %meanb : tensor<300x1024xf32>
  %sq = trn.mul %c, %c : tensor<300x1024xf32>
  %ss = trn.reduce sum %sq, dims = [1] : (tensor<300x1024xf32>) -> tensor<300xf32>
  %var = trn.div %ss, %n : tensor<300xf32>
  %eps = trn.constant dense<1.0e-5> : tensor<300xf32>
  %ve = trn.add %var, %eps : tensor<300xf32>
  %r = trn.rsqrt %ve : tensor<300xf32>
  %rb = trn.broadcast_in_dim %r, dims = [0] : (tensor<300xf32>) -> tensor<300x1024xf32>
  %nrm = trn.mul %c, %rb : tensor<300x1024xf32>
  %gb = trn.broadcast_in_dim %gamma, dims = [1] : (tensor<1024xf32>) -> tensor<300x1024xf32>
  %y = trn.mul %nrm, %gb : tensor<300x1024xf32>
  %yb = trn.convert %y : tensor<300x1024xf32> -> tensor<300x1024xbf16>

  %g = trn.dot_general %dy, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<300x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<300x1024xf32>
  %gx = trn.mul %g, %xhat : tensor<300x1024xf32>
  %gsum = trn.reduce sum %gx, dims = [1] : (tensor<300x1024xf32>) -> tensor<300xf32>
  %inv = trn.constant dense<9.765625e-04> : tensor<300xf32>
  %gmean = trn.mul %gsum, %inv : tensor<300xf32>
  %gmb = trn.broadcast_in_dim %gmean, dims = [0] : (tensor<300xf32>) -> tensor<300x1024xf32>
  %t = trn.mul %xhat, %gmb : tensor<300x1024xf32>
  %d = trn.sub %g, %t : tensor<300x1024xf32>
  %sb = trn.broadcast_in_dim %rstd, dims = [0] : (tensor<300xf32>) -> tensor<300x1024xf32>
  %dx = trn.mul %d, %sb : tensor<300x1024xf32>
  %dxb = trn.convert %dx : tensor<300x1024xf32> -> tensor<300x1024xbf16>
  %dgamma = trn.reduce sum %gx, dims = [0] : (tensor<300x1024xf32>) -> tensor<1024xf32>
  %dbeta = trn.reduce sum %g, dims = [0] : (tensor<300x1024xf32>) -> tensor<1024xf32>
  return %h, %yb, %dxb, %dgamma, %dbeta, %r : tensor<300x1024xf32>, tensor<300x1024xbf16>, tensor<300x1024xbf16>, tensor<1024xf32>, tensor<1024xf32>, tensor<300xf32>
}
