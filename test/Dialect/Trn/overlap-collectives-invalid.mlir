// RUN: trn-opt %s -trn-overlap-collectives -verify-diagnostics

// The time estimates come from the module's target: an unknown one is an
// error, not a guess.
module attributes {nc.target = "trn9"} {
  dist.mesh @mesh <tp = 4>
  // expected-error @+1 {{unknown nc.target 'trn9' (expected "trn1" or "trn2")}}
  func.func @unknown_target(%x: tensor<16x64xf32>) -> tensor<64x64xf32> {
    %g = dist.all_gather %x on @mesh axes = ["tp"] dim = 0 : tensor<16x64xf32> -> tensor<64x64xf32>
    return %g : tensor<64x64xf32>
  }
}
