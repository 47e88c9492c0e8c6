// Two layers of a training step (x @ w0 @ w1, loss sum(y^2)/2), SGD: what a
// pipeline cuts at its layers (layers.0 and layers.1).
func.func @step(
    %w0: tensor<4x4xf32> {trn.name = "layers.0.weight", trn.role = "parameter"},
    %w1: tensor<4x4xf32> {trn.name = "layers.1.weight", trn.role = "parameter"},
    %lr: tensor<f32> {trn.name = "lr", trn.role = "hyperparameter"},
    %x: tensor<2x4xf32> {trn.name = "x", trn.role = "data"})
    -> (tensor<f32> {trn.name = "loss", trn.role = "loss"},
        tensor<4x4xf32> {trn.aliases = 0 : i64, trn.name = "layers.0.weight", trn.role = "parameter"},
        tensor<4x4xf32> {trn.aliases = 1 : i64, trn.name = "layers.1.weight", trn.role = "parameter"}) {
  %h = trn.dot_general %x, %w0, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = trn.dot_general %h, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %sq = trn.mul %y, %y : tensor<2x4xf32>
  %s = trn.reduce sum %sq, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %w1t = trn.transpose %w1, perm = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dh = trn.dot_general %y, %w1t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %ht = trn.transpose %h, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g1 = trn.dot_general %ht, %y, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %xt = trn.transpose %x, perm = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %g0 = trn.dot_general %xt, %dh, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %lrb = trn.broadcast_in_dim %lr, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %u0 = trn.mul %g0, %lrb : tensor<4x4xf32>
  %n0 = trn.sub %w0, %u0 : tensor<4x4xf32>
  %u1 = trn.mul %g1, %lrb : tensor<4x4xf32>
  %n1 = trn.sub %w1, %u1 : tensor<4x4xf32>
  return %s, %n0, %n1 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
}
