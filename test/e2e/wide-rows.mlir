// An LM head over a 33000-word vocabulary (forward, loss, backward): rows of
// 33000 elements lie further apart than a 16-bit stride reaches. HBM windows
// are DMA descriptors without that limit, so every op lowers: matmuls whose
// K or N rows are 33000 apart (logits, dW, dh), the fused bias add and
// cross-entropy over the wide rows, a ones-matmul column sum (the bias
// gradient) and a max over rows. Compiled by trn-cc and run on the
// simulator, it matches the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 29 --int-max 33000 --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz --scale w:0.25
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 6 outputs match

func.func @wide_rows(%h: tensor<130x32xf32> {trn.name = "h"}, %w: tensor<32x33000xf32> {trn.name = "w"},
                     %b: tensor<33000xf32> {trn.name = "b"}, %labels: tensor<130xi32> {trn.name = "labels"})
    -> (tensor<f32> {trn.name = "loss"}, tensor<32x33000xf32> {trn.name = "dw"}, tensor<33000xf32> {trn.name = "db"},
        tensor<130x32xf32> {trn.name = "dh"}, tensor<33000xf32> {trn.name = "max_logit"},
        tensor<130x33000xf32> {trn.name = "dlogits"}) {
  %mm = trn.dot_general %h, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<130x32xf32>, tensor<32x33000xf32>) -> tensor<130x33000xf32>
  %bb = trn.broadcast_in_dim %b, dims = [1] : (tensor<33000xf32>) -> tensor<130x33000xf32>
  %logits = trn.add %mm, %bb : tensor<130x33000xf32>
  %loss = trn.cross_entropy mean %logits, %labels : (tensor<130x33000xf32>, tensor<130xi32>) -> tensor<f32>
  %one = trn.constant dense<1.0> : tensor<f32>
  %dlogits = trn.cross_entropy_grad mean %logits, %labels, %one : (tensor<130x33000xf32>, tensor<130xi32>, tensor<f32>) -> tensor<130x33000xf32>
  %dw = trn.dot_general %h, %dlogits, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<130x32xf32>, tensor<130x33000xf32>) -> tensor<32x33000xf32>
  %db = trn.reduce sum %dlogits, dims = [0] : (tensor<130x33000xf32>) -> tensor<33000xf32>
  %dh = trn.dot_general %dlogits, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<130x33000xf32>, tensor<32x33000xf32>) -> tensor<130x32xf32>
  %max = trn.reduce max %logits, dims = [0] : (tensor<130x33000xf32>) -> tensor<33000xf32>
  return %loss, %dw, %db, %dh, %max, %dlogits : tensor<f32>, tensor<32x33000xf32>, tensor<33000xf32>, tensor<130x32xf32>, tensor<33000xf32>, tensor<130x33000xf32>
}
