// The multi-rank reference evaluator: each collective against values
// computed by hand on a 2 x 2 mesh. Global inputs are split by the argument
// shardings and results assembled by the result shardings.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %trn_python -c "import numpy as np; np.savez('%t/in.npz', x=np.arange(16, dtype=np.float32).reshape(4, 4))"
// RUN: trn-eval %s --entry collectives --inputs %t/in.npz --outputs %t/out.npz | FileCheck %s
// RUN: %trn_python -c "import numpy as np; o = np.load('%t/out.npz'); x = np.arange(16, dtype=np.float32).reshape(4, 4); print(np.array_equal(o['sum'], x[0:2] + x[2:4]), np.array_equal(o['gathered'], x), np.array_equal(o['index'], [[0., 1.], [0., 1.]]), np.array_equal(o['shifted'], np.roll(x, 2, axis=0)), np.array_equal(o['mean'], (x[0:2] + x[2:4]) / 2))" | FileCheck %s --check-prefix=VALUES
// CHECK: sum : tensor<2x4xf32>
// VALUES: True True True True True
// RUN: not trn-eval %s --entry unpartitioned --zeros 2>&1 | FileCheck %s --check-prefix=NOT-SPMD
// NOT-SPMD: error: reference evaluator: 'dist.all_reduce' runs only on the ranks of a mesh (a dist.spmd function or a dist.pipeline)

dist.mesh @mesh <dp = 2, tp = 2>

// Rank (dp, tp) holds rows [2 dp, 2 dp + 2) of x; all_reduce over dp sums
// the two row blocks; all_gather over dp rebuilds x on every rank; the
// permute over dp swaps the row blocks; axis_index over tp is 0 or 1.
func.func @collectives(%x: tensor<2x4xf32> {trn.name = "x", dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>})
    -> (tensor<2x4xf32> {trn.name = "sum", dist.sharding = #dist.sharding<@mesh, [{}, {}]>},
        tensor<4x4xf32> {trn.name = "gathered", dist.sharding = #dist.sharding<@mesh, [{}, {}]>},
        tensor<1x1xf32> {trn.name = "index", dist.sharding = #dist.sharding<@mesh, [{"dp"}, {"tp"}]>},
        tensor<2x4xf32> {trn.name = "shifted", dist.sharding = #dist.sharding<@mesh, [{"dp"}, {}]>},
        tensor<2x4xf32> {trn.name = "mean", dist.sharding = #dist.sharding<@mesh, [{}, {}]>})
    attributes {dist.spmd} {
  %sum = dist.all_reduce sum %x on @mesh axes = ["dp"] : tensor<2x4xf32>
  %all = dist.all_gather %x on @mesh axes = ["dp"] dim = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  %i = dist.axis_index on @mesh axes = ["tp"] : tensor<i32>
  %f = trn.convert %i : tensor<i32> -> tensor<f32>
  %b = trn.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
  %s = dist.collective_permute %x on @mesh axes = ["dp"] shift = 1 : tensor<2x4xf32>
  %mean = dist.all_reduce mean %x on @mesh axes = ["dp"] : tensor<2x4xf32>
  return %sum, %all, %b, %s, %mean : tensor<2x4xf32>, tensor<4x4xf32>, tensor<1x1xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

func.func @unpartitioned(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %sum = dist.all_reduce sum %x on @mesh axes = ["dp"] : tensor<2x4xf32>
  return %sum : tensor<2x4xf32>
}
