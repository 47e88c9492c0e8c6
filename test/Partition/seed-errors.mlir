// RUN: not trn-opt %s -dist-seed="mesh=dp=2,tp" 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not trn-opt %s -dist-seed 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not trn-opt %s -dist-seed="mesh=tp=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// SIZE: error: dist-seed: mesh 'dp=2,tp': 'tp' is not axis=size with a positive size (e.g. dp=2,tp=4)
// NONE: error: dist-seed: no mesh: give the mesh option, e.g. mesh=dp=2,tp=4
// ZERO: error: dist-seed: mesh 'tp=0': 'tp=0' is not axis=size with a positive size (e.g. dp=2,tp=4)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

