// RUN: trn-opt %s -trn-overlap-collectives -verify-diagnostics

// The time estimates need the target's rates, which trn-cc passes: the pass
// knows no hardware, and does not guess.
dist.mesh @mesh <tp = 4>
// expected-error @+1 {{trn-overlap-collectives needs matmul-flops-per-ns and collective-bytes-per-ns (trn-cc passes its target's)}}
func.func @no_rates(%x: tensor<16x64xf32>) -> tensor<64x64xf32> {
  %g = dist.all_gather %x on @mesh axes = ["tp"] dim = 0 : tensor<16x64xf32> -> tensor<64x64xf32>
  return %g : tensor<64x64xf32>
}
