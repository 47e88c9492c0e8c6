// A graph trn1 cannot run: uniform bounds that are not f32 values cannot be
// carried by the rng instruction, so the lowering rejects it (a
// deterministic compile error).
func.func @rng(%seed: tensor<i64>) -> tensor<4xf32> {
  %0 = trn.rng_uniform %seed, stream = 0 {low = 0.1 : f64} : tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
