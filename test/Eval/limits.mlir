// Graphs too big for the reference evaluator are an error, not an allocation
// failure.
// RUN: not trn-eval %s --zeros --entry huge_constant 2>&1 | FileCheck %s --check-prefix=CONST
// RUN: not trn-eval %s --zeros --entry huge_argument 2>&1 | FileCheck %s --check-prefix=ARG

// CONST: error: reference evaluator: result 'tensor<100000x100000xf32>' has more than 2^27 elements
func.func @huge_constant() -> tensor<100000x100000xf32> {
  %0 = trn.constant dense<0.0> : tensor<100000x100000xf32>
  return %0 : tensor<100000x100000xf32>
}

// ARG: trn-eval: error: argument 0 (tensor<9223372036854775807x2xf32>) has more than 2^27 elements
func.func @huge_argument(%x: tensor<9223372036854775807x2xf32>) -> tensor<9223372036854775807x2xf32> {
  return %x : tensor<9223372036854775807x2xf32>
}
