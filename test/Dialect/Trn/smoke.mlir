// RUN: trn-opt %s | FileCheck %s
// CHECK-LABEL: func @f
// CHECK: trn.exp
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = trn.exp %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
