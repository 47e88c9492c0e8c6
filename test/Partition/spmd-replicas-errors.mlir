// RUN: trn-opt %s -dist-propagate -dist-spmd=dp-replicas=true -split-input-file -verify-diagnostics

// An integer sum over the batch used as an integer: its average over the
// replicas has no exact integer value.
dist.mesh @mesh <dp = 2>
func.func @integer_count(%kept: tensor<8xi64> {dist.sharding = #dist.sharding<@mesh, [{"dp"}]>}) -> tensor<i64> {
  // expected-error @+1 {{an integer value summed over the batch ('tensor<i64>') is averaged over the data-parallel replicas, which has no exact integer result; convert it to a float type before using it}}
  %n = trn.reduce sum %kept, dims = [0] : (tensor<8xi64>) -> tensor<i64>
  %d = trn.mul %n, %n : tensor<i64>
  return %d : tensor<i64>
}
