// One artifact serves every data-parallel degree: a dp-only step that is one
// replica's step (dist.replica_axes = ["dp"]: each rank its own batch of 4
// rows, the gradient and the loss averaged over dp by all_reduce mean)
// compiled once for dp = 2 loads at dp = 1, 2 and 4. The
// global batch follows the degree (4 x dp rows), and every run equals the
// multi-rank reference evaluator on the same program declared at that
// degree. A degree that changes local shapes (a gather over dp) is refused.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/dp.trnart --no-cache -q
// RUN: sed 's/<dp = 2>/<dp = 1>/' %s > %t/dp1.mlir
// RUN: sed 's/<dp = 2>/<dp = 4>/' %s > %t/dp4.mlir
// RUN: trn-eval %t/dp1.mlir --random 1 --save-inputs %t/in1.npz --outputs %t/ref1.npz > /dev/null
// RUN: trn-eval %s --random 2 --save-inputs %t/in2.npz --outputs %t/ref2.npz > /dev/null
// RUN: trn-eval %t/dp4.mlir --random 4 --save-inputs %t/in4.npz --outputs %t/ref4.npz > /dev/null
// RUN: trn-run %t/dp.trnart --mesh dp=1 --inputs %t/in1.npz --outputs %t/out1.npz | FileCheck %s --check-prefix=DP1
// RUN: trn-run %t/dp.trnart --mesh dp=2 --inputs %t/in2.npz --outputs %t/out2.npz | FileCheck %s --check-prefix=DP2
// RUN: trn-run %t/dp.trnart --mesh dp=4 --inputs %t/in4.npz --outputs %t/out4.npz | FileCheck %s --check-prefix=DP4
// RUN: %trn_python %S/Inputs/compare.py %t/ref1.npz %t/out1.npz 1e-5 | FileCheck %s
// RUN: %trn_python %S/Inputs/compare.py %t/ref2.npz %t/out2.npz 1e-5 | FileCheck %s
// RUN: %trn_python %S/Inputs/compare.py %t/ref4.npz %t/out4.npz 1e-5 | FileCheck %s
// RUN: mpirun --allow-run-as-root --oversubscribe -np 4 -x OMPI_MCA_btl_tcp_if_include=lo trn-run %t/dp.trnart --mesh dp=4 --inputs %t/in4.npz --outputs %t/mpi4.npz > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/out4.npz %t/mpi4.npz 0 | FileCheck %s
// The global batch must follow the degree:
// RUN: not trn-run %t/dp.trnart --mesh dp=4 --inputs %t/in2.npz 2>&1 | FileCheck %s --check-prefix=BATCH
// Without the replica marker the degree is the compiled one:
// RUN: sed 's/dist.replica_axes = \["dp"\], //' %s > %t/plain.mlir
// RUN: trn-cc compile %t/plain.mlir -o %t/plain.trnart --no-cache -q
// RUN: not trn-run %t/plain.trnart --mesh dp=4 --random 1 2>&1 | FileCheck %s --check-prefix=FIXED-PLAIN
// FIXED-PLAIN: trn-run: error: {{.*}}plain.trnart: mesh axis 'dp': the artifact was compiled for dp=2 but --mesh gives dp=4
// Nor is a program whose local shapes depend on dp (a gather over it):
// RUN: cp %s %t/gather.mlir
// RUN: sed -i 's/%grad = dist.all_reduce mean %gl on @mesh axes = \["dp"\] : tensor<8x2xf32>/%gathered = dist.all_gather %gl on @mesh axes = ["dp"] dim = 0 : tensor<8x2xf32> -> tensor<16x2xf32>\n  %grad = trn.slice %gathered, start = [0, 0], limit = [8, 2], strides = [1, 1] : (tensor<16x2xf32>) -> tensor<8x2xf32>/' %t/gather.mlir
// RUN: trn-cc compile %t/gather.mlir -o %t/gather.trnart --no-cache -q
// RUN: not trn-run %t/gather.trnart --mesh dp=4 --random 1 2>&1 | FileCheck %s --check-prefix=FIXED
// CHECK: 2 outputs match
// DP1: mesh             dp=1 (1 ranks, threads of one process)
// DP2: mesh             dp=2 (2 ranks, threads of one process)
// DP4: mesh             dp=4 (4 ranks, threads of one process)
// BATCH: trn-run: error: {{.*}}in2.npz: entry 'x' has shape [8, 8] but the global input under --mesh dp=4 is [16, 8] f32
// FIXED: trn-run: error: {{.*}}gather.trnart: mesh axis 'dp': the artifact was compiled for dp=2 but --mesh gives dp=4; the program depends on it (only a replica axis, such as the dp of trn-cc --mesh, used solely in all_reduce sum/mean may differ): recompile with --mesh dp=4

dist.mesh @mesh <dp = 2>
func.func @step(%x: tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x", trn.role = "data"},
                %w: tensor<8x2xf32> {trn.name = "w", trn.role = "parameter"})
    -> (tensor<8x2xf32> {trn.name = "grad"}, tensor<f32> {trn.name = "loss"})
    attributes {dist.replica_axes = ["dp"], dist.spmd} {
  // The loss 0.5 * mean((x w)^2) of this rank's batch and its gradient
  // x^T (x w) / 8, averaged over the replicas.
  %p = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %sq = trn.mul %p, %p : tensor<4x2xf32>
  %sum = trn.reduce sum %sq, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  %scale = trn.constant dense<0.0625> : tensor<f32>
  %l = trn.mul %sum, %scale : tensor<f32>
  %xp = trn.dot_general %x, %p, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %inv = trn.constant dense<0.125> : tensor<8x2xf32>
  %gl = trn.mul %xp, %inv : tensor<8x2xf32>
  %grad = dist.all_reduce mean %gl on @mesh axes = ["dp"] : tensor<8x2xf32>
  %loss = dist.all_reduce mean %l on @mesh axes = ["dp"] : tensor<f32>
  return %grad, %loss : tensor<8x2xf32>, tensor<f32>
}
