// A softmax over rows longer than a group holds (a masked-LM head's 30522
// logits): the row max and the sum of exponentials run in chunks, and the
// probabilities recompute the exponentials from the logits rather than
// reading back a stored copy. Compiled by trn-cc and run on the simulator,
// it matches the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 21 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 2 outputs match
func.func @softmax_long(%x: tensor<64x10000xf32>) -> (tensor<64x10000xf32>, tensor<64xf32>) {
  %m = trn.reduce max %x, dims = [1] : (tensor<64x10000xf32>) -> tensor<64xf32>
  %mb = trn.broadcast_in_dim %m, dims = [0] : (tensor<64xf32>) -> tensor<64x10000xf32>
  %d = trn.sub %x, %mb : tensor<64x10000xf32>
  %e = trn.exp %d : tensor<64x10000xf32>
  %s = trn.reduce sum %e, dims = [1] : (tensor<64x10000xf32>) -> tensor<64xf32>
  %sb = trn.broadcast_in_dim %s, dims = [0] : (tensor<64xf32>) -> tensor<64x10000xf32>
  %p = trn.div %e, %sb : tensor<64x10000xf32>
  return %p, %s : tensor<64x10000xf32>, tensor<64xf32>
}
