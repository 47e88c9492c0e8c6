// Sequence parallelism at tp = 2: the row-parallel projection's [4096, 1024]
// f32 result (16 MiB, trn-chunk-reduce-scatter's threshold) goes out in two
// pieces of 512 features, each reduce-scattered while the next is computed,
// and joined; every rank's output equals the unpartitioned graph.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 7 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s --mesh tp=2 --sequence-parallel -o %t/sp.trnart --no-cache -q --mlir-print-ir-after-all 2> %t/ir.txt
// RUN: FileCheck %s --check-prefix=IR < %t/ir.txt
// IR-LABEL: IR Dump After TrnOverlapCollectives
// IR: dist.all_gather
// IR: trn.dot_general {{.*}} -> tensor<4096x512xf32>
// IR-NEXT: dist.reduce_scatter sum {{.*}} : tensor<4096x512xf32> -> tensor<2048x512xf32>
// IR: trn.dot_general {{.*}} -> tensor<4096x512xf32>
// IR-NEXT: dist.reduce_scatter sum {{.*}} : tensor<4096x512xf32> -> tensor<2048x512xf32>
// IR-NEXT: trn.concatenate
// RUN: trn-run %t/sp.trnart --mesh tp=2 --inputs %t/in.npz --outputs %t/sp.npz | FileCheck %s --check-prefix=RANKS
// RANKS: {{^0 .* 3$}}
// RANKS: {{^1 .* 3$}}
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/sp.npz 1e-5 | FileCheck %s
// CHECK: 1 outputs match

func.func @block(%x: tensor<4096x1024xf32> {trn.name = "x", trn.role = "data"},
                 %ln_w: tensor<1024xf32> {trn.name = "ln.weight", trn.role = "parameter"},
                 %ln_b: tensor<1024xf32> {trn.name = "ln.bias", trn.role = "parameter"},
                 %w1: tensor<256x1024xf32> {trn.name = "fc.weight", trn.role = "parameter"},
                 %w2: tensor<1024x256xf32> {trn.name = "proj.weight", trn.role = "parameter"})
    -> (tensor<4096x1024xf32> {trn.name = "y", trn.role = "output"}) {
  %n:3 = trn.layer_norm %x, %ln_w, %ln_b, axis = 1, eps = 1.0e-05 : (tensor<4096x1024xf32>, tensor<1024xf32>, tensor<1024xf32>) -> (tensor<4096x1024xf32>, tensor<4096xf32>, tensor<4096xf32>)
  %w1t = trn.transpose %w1, perm = [1, 0] : (tensor<256x1024xf32>) -> tensor<1024x256xf32>
  %h = trn.dot_general %n#0, %w1t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4096x1024xf32>, tensor<1024x256xf32>) -> tensor<4096x256xf32>
  %a = trn.gelu %h approximate = tanh : tensor<4096x256xf32>
  %w2t = trn.transpose %w2, perm = [1, 0] : (tensor<1024x256xf32>) -> tensor<256x1024xf32>
  %p = trn.dot_general %a, %w2t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4096x256xf32>, tensor<256x1024xf32>) -> tensor<4096x1024xf32>
  %y = trn.add %x, %p : tensor<4096x1024xf32>
  return %y : tensor<4096x1024xf32>
}
