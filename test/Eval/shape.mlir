// Hand-computed results of shape, reduction and index ops.
// RUN: trn-eval %s --entry movement --zeros | FileCheck %s --check-prefix=MOVE
// RUN: trn-eval %s --entry reductions --zeros | FileCheck %s --check-prefix=RED

// MOVE: bcast : tensor<2x3xf32> = [1, 1, 1, 2, 2, 2]
// MOVE: transpose : tensor<3x2xf32> = [0, 3, 1, 4, 2, 5]
// MOVE: slice : tensor<2x2xf32> = [0, 2, 3, 5]
// MOVE: concat : tensor<2x4xf32> = [0, 1, 2, 9, 3, 4, 5, 9]
// MOVE: pad : tensor<2x4xf32> = [7, 0, 1, 2, 7, 3, 4, 5]
// MOVE: reshape : tensor<3x2xf32> = [0, 1, 2, 3, 4, 5]
func.func @movement() -> (tensor<2x3xf32> {trn.name = "bcast"}, tensor<3x2xf32> {trn.name = "transpose"},
                          tensor<2x2xf32> {trn.name = "slice"}, tensor<2x4xf32> {trn.name = "concat"},
                          tensor<2x4xf32> {trn.name = "pad"}, tensor<3x2xf32> {trn.name = "reshape"}) {
  %v = trn.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %0 = trn.broadcast_in_dim %v, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x3xf32>
  %x = trn.constant dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]> : tensor<2x3xf32>
  %1 = trn.transpose %x, perm = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = trn.slice %x, start = [0, 0], limit = [2, 3], strides = [1, 2] : (tensor<2x3xf32>) -> tensor<2x2xf32>
  %n = trn.constant dense<9.0> : tensor<2x1xf32>
  %3 = trn.concatenate %x, %n dim = 1 : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %4 = trn.pad %x, low = [0, 1], high = [0, 0], value = 7.0 : (tensor<2x3xf32>) -> tensor<2x4xf32>
  %5 = trn.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x2xf32>
}

// RED: sum0 : tensor<3xf32> = [3, 5, 7]
// RED: max1 : tensor<2xf32> = [2, 5]
// RED: prod : tensor<f32> = [0]
// RED: min_nan : tensor<2xf32> = [nan, 3]
// RED: argmax : tensor<2xi64> = [2, 0]
// RED: argmax_nan : tensor<2xi32> = [1, 2]
// RED: bcast_scalar : tensor<2x2xi32> = [5, 5, 5, 5]
func.func @reductions() -> (tensor<3xf32> {trn.name = "sum0"}, tensor<2xf32> {trn.name = "max1"},
                            tensor<f32> {trn.name = "prod"}, tensor<2xf32> {trn.name = "min_nan"},
                            tensor<2xi64> {trn.name = "argmax"}, tensor<2xi32> {trn.name = "argmax_nan"},
                            tensor<2x2xi32> {trn.name = "bcast_scalar"}) {
  %x = trn.constant dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]> : tensor<2x3xf32>
  %0 = trn.reduce sum %x, dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
  %1 = trn.reduce max %x, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %2 = trn.reduce prod %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  %y = trn.constant dense<[[1.0, 0x7FC00000, 0.0], [3.0, 4.0, 5.0]]> : tensor<2x3xf32>
  %3 = trn.reduce min %y, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %z = trn.constant dense<[[1.0, 1.0, 2.0], [3.0, 3.0, 1.0]]> : tensor<2x3xf32>
  %4 = trn.argmax %z, dim = 1 : (tensor<2x3xf32>) -> tensor<2xi64>
  %5 = trn.argmax %y, dim = 1 : (tensor<2x3xf32>) -> tensor<2xi32>
  %s = trn.constant dense<5> : tensor<i32>
  %6 = trn.broadcast_in_dim %s, dims = [] : (tensor<i32>) -> tensor<2x2xi32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<3xf32>, tensor<2xf32>, tensor<f32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi32>, tensor<2x2xi32>
}
