// trn-cc partitions an unpartitioned graph when given --mesh (dist-seed,
// dist-propagate, dist-spmd: Megatron's column-parallel fc and row-parallel
// proj at tp; at dp the graph is one replica's step, each rank its own
// batch) and compiles the program every rank runs; trn-run --mesh runs it
// and equals the unpartitioned graph on the whole batch. A graph that is
// already a dist.spmd program compiles as it is. dp stays out of the cache
// key, and the one artifact runs at dp = 2 and dp = 4.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 7 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s --mesh tp=2 -o %t/tp2.trnart --no-cache -q
// RUN: trn-run %t/tp2.trnart --mesh tp=2 --inputs %t/in.npz --outputs %t/tp2.npz | FileCheck %s --check-prefix=TP2
// TP2: mesh             dp=1,tp=2 (2 ranks, threads of one process)
// TP2: {{^0 .* 1$}}
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/tp2.npz 1e-5 | FileCheck %s
// The whole batch of dp replicas (8 rows each): the same graph at 16 and 32 rows.
// RUN: sed 's/tensor<8x/tensor<16x/g' %s > %t/batch16.mlir
// RUN: sed 's/tensor<8x/tensor<32x/g' %s > %t/batch32.mlir
// RUN: trn-eval %t/batch16.mlir --random 8 --save-inputs %t/in16.npz --outputs %t/ref16.npz > /dev/null
// RUN: trn-eval %t/batch32.mlir --random 9 --save-inputs %t/in32.npz --outputs %t/ref32.npz > /dev/null
// RUN: trn-cc compile %s --mesh dp=2,tp=2 -o %t/dp2tp2.trnart --no-cache -q
// RUN: trn-run %t/dp2tp2.trnart --mesh dp=2,tp=2 --inputs %t/in16.npz --outputs %t/dp2tp2.npz > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref16.npz %t/dp2tp2.npz 1e-5 | FileCheck %s
// RUN: trn-run %t/dp2tp2.trnart --mesh dp=4,tp=2 --inputs %t/in32.npz --outputs %t/dp4tp2.npz > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref32.npz %t/dp4tp2.npz 1e-5 | FileCheck %s
// --analyze simulates every rank of the compiled mesh (the slowest rank's time).
// RUN: trn-cc --analyze %s --mesh tp=2 | FileCheck %s --check-prefix=ANALYZE
// ANALYZE: instructions {{.*}} sync 1,
// ANALYZE: device time {{[0-9.]+}} us (estimated
// The partitioned program itself compiles as is (no second partitioning).
// RUN: trn-opt %s -dist-seed="mesh=tp=2" -dist-propagate -dist-spmd -o %t/part.mlir
// RUN: trn-cc compile %t/part.mlir --mesh tp=2 -o %t/part.trnart --no-cache -q
// RUN: trn-run %t/part.trnart --mesh tp=2 --inputs %t/in.npz --outputs %t/part.npz > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/part.npz 1e-5 | FileCheck %s
// The key ignores dp: --mesh dp=4,tp=2 hits the dp=2 entry.
// RUN: trn-cc compile %s --mesh dp=2,tp=2 --cache-dir %t/cache -o %t/k1.trnart > %t/keys.txt 2>&1
// RUN: trn-cc compile %s --mesh dp=4,tp=2 --cache-dir %t/cache -o %t/k2.trnart >> %t/keys.txt 2>&1
// RUN: FileCheck %s --check-prefix=KEY < %t/keys.txt
// KEY: trn-cc: compiled [[KEY:MODULE_[0-9a-f]+\+[0-9a-f]+]]
// KEY: trn-cc: cache hit [[KEY]]
// CHECK: 1 outputs match

func.func @mlp(%x: tensor<8x16xf32> {trn.name = "x", trn.role = "data"},
               %w1: tensor<16x32xf32> {trn.name = "fc.weight", trn.role = "parameter"},
               %w2: tensor<32x16xf32> {trn.name = "proj.weight", trn.role = "parameter"})
    -> (tensor<8x16xf32> {trn.name = "y", trn.role = "output"}) {
  %h = trn.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = trn.gelu %h approximate = tanh : tensor<8x32xf32>
  %y = trn.dot_general %a, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
