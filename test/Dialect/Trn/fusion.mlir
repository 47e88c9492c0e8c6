// RUN: trn-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: trn-opt %s -split-input-file -verify-diagnostics --mlir-print-op-generic | trn-opt -split-input-file | FileCheck %s

// A fusion group round-trips in pretty and generic form.
// CHECK-LABEL: func.func @group
// CHECK: %[[R:.*]]:2 = trn.fusion(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
// CHECK: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>):
// CHECK: trn.broadcast_in_dim %[[B]]
// CHECK: trn.reduce sum
// CHECK: trn.yield %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4xf32>
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @group(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %0:2 = trn.fusion(%x, %b : tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
    %1 = trn.broadcast_in_dim %c, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
    %2 = trn.add %a, %1 : tensor<4x8xf32>
    %3 = trn.reduce sum %2, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    trn.yield %2, %3 : tensor<4x8xf32>, tensor<4xf32>
  }
  return %0#0, %0#1 : tensor<4x8xf32>, tensor<4xf32>
}

// -----

// A matmul and its epilogue.
// CHECK-LABEL: func.func @epilogue
// CHECK: trn.fusion
// CHECK-NEXT: ^bb0
// CHECK-NEXT: trn.dot_general
// CHECK: trn.tanh
func.func @epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = trn.fusion(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>):
    %1 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %2 = trn.tanh %1 : tensor<4x16xf32>
    trn.yield %2 : tensor<4x16xf32>
  }
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @no_inputs
// CHECK: trn.fusion -> (tensor<4xf32>)
func.func @no_inputs() -> tensor<4xf32> {
  %0 = trn.fusion -> (tensor<4xf32>) {
    %1 = trn.constant dense<1.0> : tensor<4xf32>
    %2 = trn.exp %1 : tensor<4xf32>
    trn.yield %2 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @arg_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.fusion' op body has 0 arguments for 1 inputs}}
  %0 = trn.fusion(%x : tensor<4xf32>) -> (tensor<4xf32>) {
    %1 = trn.constant dense<1.0> : tensor<4xf32>
    trn.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @arg_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.fusion' op body argument 0 has type 'tensor<4xbf16>' but input 0 has type 'tensor<4xf32>'}}
  %0 = trn.fusion(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xbf16>):
    %1 = trn.constant dense<1.0> : tensor<4xf32>
    trn.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @yield_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.fusion' op yields ('tensor<8xf32>') but has results ('tensor<4xf32>')}}
  %0 = trn.fusion(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %1 = trn.constant dense<1.0> : tensor<8xf32>
    trn.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @matmul_not_first(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = trn.fusion(%x : tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    %1 = trn.exp %a : tensor<4x4xf32>
    // expected-error @+1 {{'trn.dot_general' op in a trn.fusion body must be its first op}}
    %2 = trn.dot_general %1, %a, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    trn.yield %2 : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

func.func @second_matmul(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = trn.fusion(%x : tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    %1 = trn.dot_general %a, %a, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // expected-error @+1 {{'trn.dot_general' op in a trn.fusion body must be its first op}}
    %2 = trn.dot_general %a, %a, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = trn.add %1, %2 : tensor<4x4xf32>
    trn.yield %3 : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

func.func @transpose_inside(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = trn.fusion(%x : tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{'trn.transpose' op cannot be in a trn.fusion body (only elementwise ops, broadcast_in_dim, constant, reduce and a leading dot_general can)}}
    %1 = trn.transpose %a, perm = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    trn.yield %1 : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

// -----

func.func @captures(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = trn.fusion -> (tensor<4xf32>) {
    // expected-error @+1 {{using value defined outside the region}}
    %1 = trn.exp %x : tensor<4xf32>
    trn.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @stray_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.yield' op expects parent op 'trn.fusion'}}
  trn.yield %x : tensor<4xf32>
}
