// A graph trn1 cannot run yet: random numbers are not lowered to NeuronCore
// kernels, so the lowering rejects it (a deterministic compile error).
func.func @rng(%seed: tensor<i64>) -> tensor<4xf32> {
  %0 = trn.rng_uniform %seed, stream = 0 : tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
