// Transposes of the last two dims run on the Tensor Engine (128x128 blocks
// through PSUM, four per bank, stored in runs of up to 512 elements) rather
// than as element-strided DMA: batched bf16 with sizes off the 128 grid, f32
// over several 512-element spans both ways, and one smaller than a block;
// compiled by trn-cc and run on the simulator, they equal the reference
// exactly.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 11 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 0 | FileCheck %s
// CHECK: 3 outputs match
// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s --check-prefix=IR
// IR: nc.kind "data_movement" {origin = "transposes: trn.transpose #0"}
// IR-NOT: nc.kind
// IR: nc.transpose
func.func @transposes(%a: tensor<3x300x700xbf16>, %b: tensor<1100x1030xf32>, %c: tensor<40x72xf32>) -> (tensor<3x700x300xbf16>, tensor<1030x1100xf32>, tensor<72x40xf32>) {
  %0 = trn.transpose %a, perm = [0, 2, 1] : (tensor<3x300x700xbf16>) -> tensor<3x700x300xbf16>
  %1 = trn.transpose %b, perm = [1, 0] : (tensor<1100x1030xf32>) -> tensor<1030x1100xf32>
  %2 = trn.transpose %c, perm = [1, 0] : (tensor<40x72xf32>) -> tensor<72x40xf32>
  return %0, %1, %2 : tensor<3x700x300xbf16>, tensor<1030x1100xf32>, tensor<72x40xf32>
}
