// RUN: not trn-opt %s -split-input-file 2>&1 | FileCheck %s --implicit-check-not="Stack dump"

// Syntactically broken trn IR: every case gives a diagnostic and trn-opt exits
// non-zero (`not` also fails on a crash). The checks are in input order.

// CHECK: error: expected SSA operand
func.func @truncated_op(%a: tensor<4xf32>) {
  %0 = trn.add %a,
}

// -----

// CHECK: error: expected ':'
func.func @missing_type(%a: tensor<4xf32>) {
  %0 = trn.exp %a
  return
}

// -----

// CHECK: error: expected ','
func.func @missing_operand(%a: tensor<4xf32>) {
  %0 = trn.add %a : tensor<4xf32>
  return
}

// -----

// CHECK: error: use of undeclared SSA value name
func.func @undefined_value(%a: tensor<4xf32>) {
  %0 = trn.add %nope, %a : tensor<4xf32>
  return
}

// -----

// CHECK: error: custom op 'trn.frobnicate' is unknown
func.func @unknown_op(%a: tensor<4xf32>) {
  %0 = trn.frobnicate %a : tensor<4xf32>
  return
}

// -----

// CHECK: error: operation defines 1 results but was provided 2 to bind
func.func @result_count(%a: tensor<8x16xf32>) {
  %o:2 = trn.exp %a : tensor<8x16xf32>
  return
}

// -----

// CHECK: error: custom op 'trn.softmax' invalid kind of attribute specified
func.func @dim_is_string(%a: tensor<4x8xf32>) {
  %0 = trn.softmax %a, dim = "one" : tensor<4x8xf32>
  return
}

// -----

// CHECK: error: expected '['
func.func @dims_not_array(%a: tensor<4x8xf32>) {
  %0 = trn.reduce sum %a, dims = 1 : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// CHECK: error: custom op 'trn.layer_norm' invalid kind of attribute specified
func.func @eps_is_string(%a: tensor<4x8xf32>, %w: tensor<8xf32>) {
  %y:3 = trn.layer_norm %a, %w, %w, axis = 1, eps = "small" : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// CHECK: error: unexpected decimal integer literal for a floating point value
func.func @pad_value_int(%a: tensor<4xf32>) {
  %0 = trn.pad %a, low = [1], high = [1], value = 0 : (tensor<4xf32>) -> tensor<6xf32>
  return
}

// -----

// CHECK: error: expected attribute value
func.func @pad_value_nan_keyword(%a: tensor<4xf32>) {
  %0 = trn.pad %a, low = [1], high = [1], value = nan : (tensor<4xf32>) -> tensor<6xf32>
  return
}

// -----

// CHECK: error: custom op 'trn.dot_general' expected 'x'
func.func @dot_missing_x(%a: tensor<2x3xf32>) {
  %0 = trn.dot_general %a, %a, batching_dims = [] [], contracting_dims = [1] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

// CHECK: error: expected ':'
func.func @causal_with_value(%a: tensor<8x16xf32>) {
  %o:2 = trn.attention %a, %a, %a, scale = 1.0 causal = true : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

// CHECK: error: custom op 'trn.slice' expected integer value
// CHECK: error: expected ']'
func.func @unterminated_array(%a: tensor<4xf32>) {
  %0 = trn.slice %a, start = [0], limit = [4], strides = [1, : (tensor<4xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Out-of-range enum keywords and enum values
//===----------------------------------------------------------------------===//

// -----

// CHECK: error: custom op 'trn.reduce' expected string or keyword containing one of the following enum values for attribute 'kind' [sum, max, min, prod]
func.func @reduce_avg(%a: tensor<4x8xf32>) {
  %0 = trn.reduce avg %a, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// CHECK: error: custom op 'trn.compare' expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]
func.func @compare_lte(%a: tensor<4xf32>) {
  %0 = trn.compare lte, %a, %a : tensor<4xf32>
  return
}

// -----

// CHECK: error: custom op 'trn.gelu' expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]
func.func @gelu_enum_number(%a: tensor<4xf32>) {
  %0 = trn.gelu %a approximate = 1 : tensor<4xf32>
  return
}

// -----

// CHECK: error: custom op 'trn.cross_entropy' expected string or keyword containing one of the following enum values for attribute 'reduction' [none, mean, sum]
func.func @cross_entropy_enum_number(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  %0 = trn.cross_entropy 2 %l, %y : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

// CHECK: error: invalid properties {dims = array<i64: 1>, kind = 4 : i32} for op trn.reduce: Invalid attribute `kind` in property conversion: 4 : i32
func.func @reduce_kind_out_of_range(%a: tensor<4x8xf32>) {
  %0 = "trn.reduce"(%a) <{kind = 4 : i32, dims = array<i64: 1>}> : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// CHECK: error: invalid properties {approximate = "tanh"} for op trn.gelu: Invalid attribute `approximate` in property conversion: "tanh"
func.func @gelu_enum_string(%a: tensor<4xf32>) {
  %0 = "trn.gelu"(%a) <{approximate = "tanh"}> : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// CHECK: error: invalid properties {approximate = 1 : i32} for op trn.exp: this operation does not support properties
func.func @properties_on_exp(%a: tensor<4xf32>) {
  %0 = "trn.exp"(%a) <{approximate = 1 : i32}> : (tensor<4xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Huge numbers
//===----------------------------------------------------------------------===//

// -----

// CHECK: error: invalid dimension
func.func @huge_dim(%a: tensor<99999999999999999999xf32>) {
  return
}

// -----

// CHECK: error: custom op 'trn.reduce' integer value too large
func.func @huge_array_entry(%a: tensor<4x8xf32>) {
  %0 = trn.reduce sum %a, dims = [99999999999999999999] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// CHECK: error: integer constant out of range for attribute
func.func @huge_dim_attr(%a: tensor<4x8xf32>) {
  %0 = trn.softmax %a, dim = 18446744073709551616 : tensor<4x8xf32>
  return
}

// -----

// CHECK: error: integer constant out of range for attribute
func.func @huge_stream(%s: tensor<i64>) {
  %0 = trn.rng_uniform %s, stream = 99999999999999999999 : tensor<i64> -> tensor<4xf32>
  return
}

// -----

// CHECK: error: 'trn.reshape' op operand #0 must be statically shaped tensor of {{.*}} but got 'tensor<4611686018427387904x4611686018427387904xf32>'
func.func @huge_element_count(%a: tensor<4611686018427387904x4611686018427387904xf32>) {
  %0 = trn.reshape %a : (tensor<4611686018427387904x4611686018427387904xf32>) -> tensor<1xf32>
  return
}

// -----

// CHECK: error: 'trn.pad' op dimension 0: padded size does not fit in 64 bits
func.func @huge_padding(%a: tensor<9223372036854775807xf32>) {
  %0 = trn.pad %a, low = [1], high = [0], value = 0.0 : (tensor<9223372036854775807xf32>) -> tensor<1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Bad constants
//===----------------------------------------------------------------------===//

// -----

// CHECK: error: hexadecimal float constant out of range for type
func.func @f8_hex_too_wide() {
  %0 = trn.constant dense<0xFFFF> : tensor<2xf8E4M3FN>
  return
}

// -----

// CHECK: error: inferred shape of elements literal ([2]) does not match type ([3])
func.func @dense_count() {
  %0 = trn.constant dense<[1.0, 2.0]> : tensor<3xf32>
  return
}

// -----

// CHECK: error: expected attribute value
func.func @constant_without_value() {
  %0 = trn.constant : tensor<3xf32>
  return
}

// -----

// CHECK: error: integer constant out of range for type
func.func @bool_constant_two() {
  %0 = trn.constant dense<2> : tensor<3xi1>
  return
}

// -----

// CHECK: error: integer constant out of range for type
func.func @i32_constant_overflow() {
  %0 = trn.constant dense<4294967296> : tensor<3xi32>
  return
}

//===----------------------------------------------------------------------===//
// Garbage
//===----------------------------------------------------------------------===//

// -----

// CHECK: error: expected operation name in quotes
func.func @unclosed_brace(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = trn.exp %a : tensor<4xf32> {
  return %0 : tensor<4xf32>
}

// -----

// CHECK: error: expected operation name in quotes
func.func @unclosed_function(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = trn.exp %a : tensor<4xf32>
  return %0 : tensor<4xf32>

// -----

// CHECK: error: expected SSA operand
trn.exp

// -----

// CHECK: error: expected operation name in quotes
}}}{{{ %%% @@@ trn.add <<< >>>
