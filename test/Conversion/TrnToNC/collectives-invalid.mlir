// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics

// A collective outside a partitioned program: the graph was not partitioned.
dist.mesh @mesh <tp = 2>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce' is lowered only in a partitioned program (a function marked dist.spmd); partition the graph first (trn-cc --mesh, or trn-opt -dist-seed -dist-propagate -dist-spmd)}}
  %0 = dist.all_reduce sum %x on @mesh axes = ["tp"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Inputs and outputs are complete values.
dist.mesh @mesh <tp = 2>
// expected-error @+1 {{a partitioned program's argument is a partial sum over ["tp"]; inputs and outputs must be complete values (all-reduce them in the program)}}
func.func @f(%x: tensor<4xf32> {dist.sharding = #dist.sharding<@mesh, [{}], partial = {"tp"}>}) -> tensor<4xf32> attributes {dist.spmd} {
  return %x : tensor<4xf32>
}

// -----

dist.mesh @mesh <dp = 2>
func.func @f(%x: tensor<4xi32>) -> tensor<4xi32> attributes {dist.spmd} {
  // expected-error @+1 {{'dist.all_reduce mean' of 'i32' values is not lowered: a mean needs a float type}}
  %0 = dist.all_reduce mean %x on @mesh axes = ["dp"] : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

dist.mesh @mesh <dp = 2>
func.func @f(%x: tensor<4xi1>) -> tensor<4xi1> attributes {dist.spmd} {
  // expected-error @+1 {{'dist.all_reduce' of i1 values is not lowered: convert them to i32 first}}
  %0 = dist.all_reduce max %x on @mesh axes = ["dp"] : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// One program, one mesh.
dist.mesh @a <dp = 2>
dist.mesh @b <tp = 2>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.spmd} {
  %0 = dist.all_reduce sum %x on @a axes = ["dp"] : tensor<4xf32>
  // expected-error @+1 {{a partitioned program runs on one mesh, but it names both @a and @b}}
  %1 = dist.all_reduce sum %0 on @b axes = ["tp"] : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// The ISA binds a collective's axes in mesh order: listed in another order
// they would mean another layout, so the lowering refuses them.
dist.mesh @mesh <dp = 2, tp = 2>
func.func @f(%x: tensor<8xf32>) -> tensor<2xf32> attributes {dist.spmd} {
  // expected-error @+1 {{'dist.all_slice' names its axes ["tp", "dp"] out of the mesh's order; list them major first as the mesh does, or use one collective per axis}}
  %0 = dist.all_slice %x on @mesh axes = ["tp", "dp"] dim = 0 : tensor<8xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
