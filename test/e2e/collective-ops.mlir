// Every collective the partitioner emits, compiled by trn-cc and run on a
// 2 x 2 mesh of simulated NeuronCores (trn-run --mesh, one thread per rank),
// equals the multi-rank reference evaluator: all_reduce (sum, mean, max,
// min; a bf16 sum accumulates in f32 and rounds once), all_gather,
// reduce_scatter, all_slice, all_to_all, collective_permute and axis_index,
// with inputs split and outputs assembled by their shardings (a block-wise
// split included) and an in-place update of a sharded input.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 5 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache 2>&1 | FileCheck %s --check-prefix=CC
// CC: trn-cc: compiled
// RUN: trn-run %t/a.trnart --mesh dp=2,tp=2 --inputs %t/in.npz --outputs %t/out.npz | FileCheck %s --check-prefix=REPORT
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-6 | FileCheck %s
// RUN: mpirun --allow-run-as-root --oversubscribe -np 4 -x OMPI_MCA_btl_tcp_if_include=lo trn-run %t/a.trnart --mesh dp=2,tp=2 --inputs %t/in.npz --outputs %t/mpi.npz > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/out.npz %t/mpi.npz 0 | FileCheck %s
// RUN: not trn-run %t/a.trnart --random 1 2>&1 | FileCheck %s --check-prefix=NOMESH
// RUN: not trn-run %t/a.trnart --mesh dp=2,tp=4 --random 1 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not trn-run %t/a.trnart --mesh dp=4,tp=2 --random 1 2>&1 | FileCheck %s --check-prefix=DP
// RUN: not trn-run %t/a.trnart --mesh dp=2,tp=2 --inputs %t/in.npz --check-against %s 2>&1 | FileCheck %s --check-prefix=CHECKAGAINST
// RUN: trn-run %t/a.trnart --mesh dp=2,tp=2 --inputs %t/in.npz --profile %t/p.json > /dev/null
// RUN: FileCheck %s --check-prefix=PROFILE < %t/p.json
// RUN: trn-run %t/a.trnart --mesh dp=2,tp=2 --mirror-ranks --profile %t/mirror.json > /dev/null
// RUN: FileCheck %s --check-prefix=PROFILE < %t/mirror.json
// RUN: not trn-run %t/a.trnart --random 1 --collective-timeout 3 2>&1 | FileCheck %s --check-prefix=TIMEOUTFLAG
// RUN: not trn-run %t/a.trnart --mesh dp=2,tp=2 --collective-timeout 0 2>&1 | FileCheck %s --check-prefix=TIMEOUTVALUE
// RUN: not trn-run %t/a.trnart --mesh dp=2,tp=2 --inputs %S/Inputs/compare.py 2>&1 | FileCheck %s --check-prefix=BADINPUTS
// RUN: %trn_python -c "import numpy as np; d = dict(np.load('%t/in.npz')); d['x'] = d['x'][:4]; np.savez('%t/small.npz', **d)"
// RUN: not trn-run %t/a.trnart --mesh dp=2,tp=2 --inputs %t/small.npz 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: trn-run %t/a.trnart --mesh dp=2,tp=2 --inputs %t/in.npz --json | FileCheck %s --check-prefix=JSON
// CHECK: 10 outputs match
// REPORT: mesh             dp=2,tp=2 (4 ranks, threads of one process)
// REPORT: rank  device time (us)  communication (us)  waiting (us)  collectives
// REPORT: 0 {{.*}} 10
// REPORT: 3 {{.*}} 10
// NOMESH: trn-run: error: {{.*}}a.trnart is partitioned for mesh dp=2,tp=2; run every rank with trn-run --mesh dp=2,tp=2
// MISMATCH: trn-run: error: {{.*}}a.trnart: mesh axis 'tp': the artifact was compiled for tp=2 but --mesh gives tp=4; the program depends on it (only a replica axis, such as the dp of trn-cc --mesh, used solely in all_reduce sum/mean may differ): recompile with --mesh tp=4
// DP: trn-run: error: {{.*}}a.trnart: mesh axis 'dp': the artifact was compiled for dp=2 but --mesh gives dp=4
// CHECKAGAINST: trn-run: error: {{.*}} (under --mesh, --check-against takes the step's unpartitioned graph, whose inputs and outputs are the global ones; not a dist.spmd program)
// PROFILE: "name":"all_gather"
// TIMEOUTFLAG: trn-run: error: --collective-timeout needs --mesh
// TIMEOUTVALUE: trn-run: error: option '--collective-timeout': '0' is not a positive finite number
// BADINPUTS: trn-run: error: {{.*}}compare.py
// SHAPE: trn-run: error: {{.*}}small.npz: entry 'x' has shape [4, 8] but the global input under --mesh dp=2,tp=2 is [8, 8] f32
// JSON: "mesh": "dp=2,tp=2"
// JSON: "collectives": 10

dist.mesh @mesh <dp = 2, tp = 2>
func.func @step(%x: tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "x"},
                %w: tensor<8x6xf32> {dist.sharding = #dist.sharding<@mesh, [{}, 3x{"tp"}]>, trn.name = "w"},
                %h: tensor<4x8xbf16> {trn.name = "h"})
    -> (tensor<8x6xf32> {dist.sharding = #dist.sharding<@mesh, [{}, 3x{"tp"}]>, trn.aliases = 1 : i64, trn.name = "w"},
        tensor<4x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "gathered"},
        tensor<2x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {"tp"}]>, trn.name = "scattered"},
        tensor<i32> {dist.sharding = #dist.sharding<@mesh, []>, trn.name = "index"},
        tensor<2x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp", "tp"}, {}]>, trn.name = "sliced"},
        tensor<2x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp", "tp"}, {}]>, trn.name = "exchanged"},
        tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>, trn.name = "permuted"},
        tensor<4x8xf32> {trn.name = "maximum"},
        tensor<4x8xf32> {trn.name = "minimum"},
        tensor<4x8xbf16> {trn.name = "bf16_sum"})
    attributes {dist.spmd} {
  %m = dist.all_reduce mean %w on @mesh axes = ["dp"] : tensor<8x6xf32>
  %g = dist.all_gather %x on @mesh axes = ["tp"] dim = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
  %r = trn.reshape %x : (tensor<4x8xf32>) -> tensor<2x16xf32>
  %s = dist.reduce_scatter sum %r on @mesh axes = ["tp"] dim = 1 : tensor<2x16xf32> -> tensor<2x8xf32>
  %i = dist.axis_index on @mesh axes = ["dp", "tp"] : tensor<i32>
  %l = dist.all_slice %x on @mesh axes = ["tp"] dim = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  %a = dist.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<4x8xf32> -> tensor<2x16xf32>
  %p = dist.collective_permute %x on @mesh axes = ["dp"] shift = 1 : tensor<4x8xf32>
  %mx = dist.all_reduce max %x on @mesh axes = ["dp", "tp"] : tensor<4x8xf32>
  %mn = dist.all_reduce min %x on @mesh axes = ["dp"] : tensor<4x8xf32>
  %b = dist.all_reduce sum %h on @mesh axes = ["dp", "tp"] : tensor<4x8xbf16>
  return %m, %g, %s, %i, %l, %a, %p, %mx, %mn, %b : tensor<8x6xf32>, tensor<4x16xf32>, tensor<2x8xf32>, tensor<i32>, tensor<2x8xf32>, tensor<2x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>
}
