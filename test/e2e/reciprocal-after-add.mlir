// 1 / (x*x + 2) and 1 / (x*x - 3): the add or subtract before a reciprocal is
// not folded into the Scalar Engine activation as a bias (trn1's reciprocal
// takes none), so the program passes the validator and matches the reference
// evaluator; a multiply before it still folds as the activation's scale.
// RUN: trn-cc compile %s -o %t.trnart --no-cache -q
// RUN: trn-run %t.trnart --random 3 --check-against %s | FileCheck %s
// CHECK: all outputs match
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = trn.mul %x, %x : tensor<4x8xf32>
  %two = trn.constant dense<2.0> : tensor<4x8xf32>
  %three = trn.constant dense<3.0> : tensor<4x8xf32>
  %1 = trn.add %0, %two : tensor<4x8xf32>
  %2 = trn.reciprocal %1 : tensor<4x8xf32>
  %3 = trn.sub %0, %three : tensor<4x8xf32>
  %4 = trn.reciprocal %3 : tensor<4x8xf32>
  %5 = trn.mul %1, %two : tensor<4x8xf32>
  %6 = trn.reciprocal %5 : tensor<4x8xf32>
  return %2, %4, %6 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
