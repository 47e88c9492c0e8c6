// RUN: trn-opt %s -split-input-file -verify-diagnostics

func.func @f(%a: !nc.hbm<4xf32>, %b: !nc.hbm<4xf32>) {
  // expected-error @+1 {{needs a kernel with a mesh (nc.mesh_axes and nc.mesh_sizes of equal length)}}
  nc.all_reduce sum %a, %b axes = ["tp"] : <4xf32>, <4xf32>
  return
}

// -----

func.func @f(%a: !nc.hbm<4xf32>, %b: !nc.hbm<4xf32>) attributes {nc.mesh_axes = ["dp", "tp"], nc.mesh_sizes = array<i64: 2, 4>} {
  // expected-error @+1 {{axis "pp" is not an axis of the kernel's mesh ["dp", "tp"]}}
  nc.all_reduce sum %a, %b axes = ["pp"] : <4xf32>, <4xf32>
  return
}

// -----

func.func @f(%a: !nc.hbm<4x12xf32>, %b: !nc.hbm<4x4xf32>) attributes {nc.mesh_axes = ["dp", "tp"], nc.mesh_sizes = array<i64: 2, 4>} {
  // expected-error @+1 {{dst dimension 1 must be 16 (src's times the group size 4), got 12}}
  nc.all_gather %a, %b axes = ["tp"] dim = 1 : <4x12xf32>, <4x4xf32>
  return
}

// -----

func.func @f(%a: !nc.hbm<3xf32>, %b: !nc.hbm<6xf32>) attributes {nc.mesh_axes = ["dp", "tp"], nc.mesh_sizes = array<i64: 2, 4>} {
  // expected-error @+1 {{src dimension 0 (6) is not a multiple of the group size 4}}
  nc.reduce_scatter sum %a, %b axes = ["tp"] dim = 0 : <3xf32>, <6xf32>
  return
}

// -----

func.func @f(%a: !nc.hbm<4xbf16>, %b: !nc.hbm<4xf32>) attributes {nc.mesh_axes = ["dp"], nc.mesh_sizes = array<i64: 2>} {
  // expected-error @+1 {{dst holds 'bf16' but src holds 'f32' (collectives do not convert)}}
  nc.collective_permute %a, %b axes = ["dp"] shift = 1 : <4xbf16>, <4xf32>
  return
}

// -----

func.func @f(%a: !nc.hbm<2xi32>) attributes {nc.mesh_axes = ["dp"], nc.mesh_sizes = array<i64: 2>} {
  // expected-error @+1 {{dst must be one i32 or i64 element, got '!nc.hbm<2xi32>'}}
  nc.axis_index %a axes = ["dp"] : <2xi32>
  return
}

// -----

func.func @f(%a: !nc.hbm<4xi32>, %b: !nc.hbm<4xi32>) attributes {nc.mesh_axes = ["dp"], nc.mesh_sizes = array<i64: 2>} {
  // expected-error @+1 {{a mean needs a float type, got 'i32'}}
  nc.all_reduce mean %a, %b axes = ["dp"] : <4xi32>, <4xi32>
  return
}

// -----

func.func @f(%a: !nc.hbm<4x4xf32>, %b: !nc.hbm<4x4xf32>) attributes {nc.mesh_axes = ["dp"], nc.mesh_sizes = array<i64: 2>} {
  // expected-error @+1 {{dst must have shape [2, 8] (split_dim divided, concat_dim multiplied by the group size 2)}}
  nc.all_to_all %a, %b axes = ["dp"] split_dim = 0 concat_dim = 1 : <4x4xf32>, <4x4xf32>
  return
}
