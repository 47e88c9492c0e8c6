// A graph trn1 cannot run: the NeuronCore-v2 engines have no 64-bit integer
// arithmetic, so the lowering rejects it (a deterministic compile error).
func.func @add_i64(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = trn.add %a, %b : tensor<4xi64>
  return %0 : tensor<4xi64>
}
