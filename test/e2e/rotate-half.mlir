// Rotary embeddings in the GPT-NeoX / Llama layout, as a model traces them
// (slices, a negation and a concatenation), compiled at -O1: the rotation
// becomes trn.rotate_half inside the group that applies the embedding
// (half-row windows of SBUF tiles) and the backward's adjoint its negation;
// at -O0 the same graph runs as written. A hand-written trn.rotate_half
// outside any group (-O0, bf16; i32 exact) and a rotation of 4096-element
// rows (wider than one tile, so its group is refused and it runs alone)
// match too. Every output matches the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 4 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/o1.trnart --no-cache -q
// RUN: trn-run %t/o1.trnart --inputs %t/in.npz --outputs %t/o1.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/o1.npz 0 | FileCheck %s
// RUN: trn-cc compile %s -O0 -o %t/o0.trnart --no-cache -q
// RUN: trn-run %t/o0.trnart --inputs %t/in.npz --outputs %t/o0.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/o0.npz 0 | FileCheck %s
// RUN: trn-cc compile %s --no-cache --mlir-print-ir-after-all -o %t/ir.trnart 2>&1 | FileCheck %s --check-prefix=IR
// CHECK: 5 outputs match
// IR: IR Dump After TrnFuseElementwise
// IR: trn.fusion
// IR: trn.rotate_half %{{.*}} : tensor<2x256x128xbf16>
// IR: trn.rotate_half %{{.*}} : tensor<2x256x128xf32>
// IR-NEXT: trn.neg
func.func @rope(%q: tensor<2x256x128xbf16>, %cos: tensor<256x128xbf16>, %sin: tensor<256x128xbf16>, %g: tensor<2x256x128xf32>, %x: tensor<200x64xbf16>, %i: tensor<8x16xi32>, %w: tensor<4x4096xf32>)
    -> (tensor<2x256x128xbf16>, tensor<2x256x128xf32>, tensor<200x64xbf16>, tensor<8x16xi32>, tensor<4x4096xf32>) {
  %lo = trn.slice %q, start = [0, 0, 0], limit = [2, 256, 64], strides = [1, 1, 1] : (tensor<2x256x128xbf16>) -> tensor<2x256x64xbf16>
  %hi = trn.slice %q, start = [0, 0, 64], limit = [2, 256, 128], strides = [1, 1, 1] : (tensor<2x256x128xbf16>) -> tensor<2x256x64xbf16>
  %nhi = trn.neg %hi : tensor<2x256x64xbf16>
  %rot = trn.concatenate %nhi, %lo dim = 2 : (tensor<2x256x64xbf16>, tensor<2x256x64xbf16>) -> tensor<2x256x128xbf16>
  %c = trn.broadcast_in_dim %cos, dims = [1, 2] : (tensor<256x128xbf16>) -> tensor<2x256x128xbf16>
  %s = trn.broadcast_in_dim %sin, dims = [1, 2] : (tensor<256x128xbf16>) -> tensor<2x256x128xbf16>
  %a = trn.mul %q, %c : tensor<2x256x128xbf16>
  %b = trn.mul %rot, %s : tensor<2x256x128xbf16>
  %r = trn.add %a, %b : tensor<2x256x128xbf16>
  %glo = trn.slice %g, start = [0, 0, 0], limit = [2, 256, 64], strides = [1, 1, 1] : (tensor<2x256x128xf32>) -> tensor<2x256x64xf32>
  %ghi = trn.slice %g, start = [0, 0, 64], limit = [2, 256, 128], strides = [1, 1, 1] : (tensor<2x256x128xf32>) -> tensor<2x256x64xf32>
  %nglo = trn.neg %glo : tensor<2x256x64xf32>
  %adj = trn.concatenate %ghi, %nglo dim = 2 : (tensor<2x256x64xf32>, tensor<2x256x64xf32>) -> tensor<2x256x128xf32>
  %e = trn.mul %adj, %adj : tensor<2x256x128xf32>
  %hx = trn.rotate_half %x : tensor<200x64xbf16>
  %hi32 = trn.rotate_half %i : tensor<8x16xi32>
  %hw = trn.rotate_half %w : tensor<4x4096xf32>
  %ew = trn.add %hw, %w : tensor<4x4096xf32>
  return %r, %e, %hx, %hi32, %ew : tensor<2x256x128xbf16>, tensor<2x256x128xf32>, tensor<200x64xbf16>, tensor<8x16xi32>, tensor<4x4096xf32>
}
