// RUN: trn-opt %s -split-input-file -verify-diagnostics

// The dialect is defined on statically shaped tensors, but its type
// constraints (RankedTensorOf in TrnBase.td) accept dynamic dimensions: most
// ops take `?` silently, and the shape computations then treat it as the
// number -2^63 (e.g. trn.pad infers tensor<-9223372036854775806x5xf32>).
// Expected to pass once the constraints are StaticShapeTensorOf.

func.func @exp_dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'trn.exp' op operand #0 must be statically shaped tensor of}}
  %0 = trn.exp %a : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @broadcast_dynamic(%a: tensor<?x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'trn.broadcast_in_dim' op operand #0 must be statically shaped tensor of}}
  %0 = trn.broadcast_in_dim %a, dims = [0, 1] : (tensor<?x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @reshape_dynamic(%a: tensor<?x3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'trn.reshape' op operand #0 must be statically shaped tensor of}}
  %0 = trn.reshape %a : (tensor<?x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @pad_dynamic(%a: tensor<?x3xf32>) -> tensor<?x5xf32> {
  // expected-error @+1 {{'trn.pad' op operand #0 must be statically shaped tensor of}}
  %0 = trn.pad %a, low = [1, 1], high = [1, 1], value = 0.0 : (tensor<?x3xf32>) -> tensor<?x5xf32>
  return %0 : tensor<?x5xf32>
}

// -----

func.func @iota_dynamic() -> tensor<?xi32> {
  // expected-error @+1 {{'trn.iota' op result #0 must be statically shaped tensor of}}
  %0 = trn.iota dim = 0 : tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

func.func @rng_dynamic(%seed: tensor<i64>) -> tensor<?xi1> {
  // expected-error @+1 {{'trn.rng_bernoulli' op result #0 must be statically shaped tensor of}}
  %0 = trn.rng_bernoulli %seed, stream = 0, p = 0.5 : tensor<i64> -> tensor<?xi1>
  return %0 : tensor<?xi1>
}

// -----

func.func @dot_dynamic(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'trn.dot_general' op operand #0 must be statically shaped tensor of}}
  %0 = trn.dot_general %a, %a, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
