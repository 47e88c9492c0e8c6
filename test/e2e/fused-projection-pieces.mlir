// A fused QKV projection cut into q, k and v (BERT's and GPT's layers):
// trn-hoist-slices makes each piece a matmul on a block of the weight's
// rows, which the backend reads in place (an nc.hbm_reshape window at the
// block's offset, no copy), and the bias's pieces join the epilogues. A
// slice of the weight that something other than a matmul reads is copied
// as before. At -O1 and -O0 every output matches the reference evaluator.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 6 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/o1.trnart --no-cache -q
// RUN: trn-run %t/o1.trnart --inputs %t/in.npz --outputs %t/o1.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/o1.npz 2e-2 | FileCheck %s
// RUN: trn-cc compile %s -O0 -o %t/o0.trnart --no-cache -q
// RUN: trn-run %t/o0.trnart --inputs %t/in.npz --outputs %t/o0.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/o0.npz 2e-2 | FileCheck %s
// RUN: trn-cc compile %s --no-cache --mlir-print-ir-after-all -o %t/ir.trnart 2>&1 | FileCheck %s --check-prefix=IR
// CHECK: 4 outputs match
// IR: IR Dump After ConvertTrnToNC
// IR-DAG: nc.hbm_reshape %arg1 {offset = 32768 : i64} : <384x128xbf16> -> <128x128xbf16>
// IR-DAG: nc.hbm_reshape %arg1 {offset = 16384 : i64} : <384x128xbf16> -> <128x128xbf16>
func.func @qkv(%x: tensor<256x128xbf16>, %w: tensor<384x128xbf16>, %b: tensor<384xbf16>)
    -> (tensor<256x128xbf16>, tensor<256x128xbf16>, tensor<256x128xf32>, tensor<128x128xbf16>) {
  %y = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<256x128xbf16>, tensor<384x128xbf16>) -> tensor<256x384xf32>
  %bf = trn.convert %b : tensor<384xbf16> -> tensor<384xf32>
  %bb = trn.broadcast_in_dim %bf, dims = [1] : (tensor<384xf32>) -> tensor<256x384xf32>
  %z = trn.add %y, %bb : tensor<256x384xf32>
  %c = trn.convert %z : tensor<256x384xf32> -> tensor<256x384xbf16>
  %q = trn.slice %c, start = [0, 0], limit = [256, 128], strides = [1, 1] : (tensor<256x384xbf16>) -> tensor<256x128xbf16>
  %k = trn.slice %c, start = [0, 128], limit = [256, 256], strides = [1, 1] : (tensor<256x384xbf16>) -> tensor<256x128xbf16>
  %v = trn.slice %z, start = [0, 256], limit = [256, 384], strides = [1, 1] : (tensor<256x384xf32>) -> tensor<256x128xf32>
  %wk = trn.slice %w, start = [128, 0], limit = [256, 128], strides = [1, 1] : (tensor<384x128xbf16>) -> tensor<128x128xbf16>
  %e = trn.exp %wk : tensor<128x128xbf16>
  return %q, %k, %v, %e : tensor<256x128xbf16>, tensor<256x128xbf16>, tensor<256x128xf32>, tensor<128x128xbf16>
}
