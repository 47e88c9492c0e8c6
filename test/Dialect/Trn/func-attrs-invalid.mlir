// RUN: trn-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the argument and result attribute verifiers in
// TrnDialect.cpp. The errors are reported on the function.

// expected-error @+1 {{argument 0 has invalid trn.role (expected one of "parameter", "optimizer_state", "gradient", "hyperparameter", "data", "label", "seed", "constant")}}
func.func @unknown_arg_role(%a: tensor<4xf32> {trn.role = "weights"}) {
  return
}

// -----

// A result-only role is not valid on an argument.
// expected-error @+1 {{argument 1 has invalid trn.role (expected one of "parameter", "optimizer_state", "gradient", "hyperparameter", "data", "label", "seed", "constant")}}
func.func @result_role_on_arg(%a: tensor<4xf32>, %b: tensor<4xf32> {trn.role = "loss"}) {
  return
}

// -----

// expected-error @+1 {{argument 0 has invalid trn.role}}
func.func @arg_role_not_string(%a: tensor<4xf32> {trn.role = 1 : i64}) {
  return
}

// -----

// Roles are case-sensitive.
// expected-error @+1 {{argument 0 has invalid trn.role}}
func.func @arg_role_case(%a: tensor<4xf32> {trn.role = "Parameter"}) {
  return
}

// -----

// expected-error @+1 {{argument 0 has non-string trn.name}}
func.func @arg_name_not_string(%a: tensor<4xf32> {trn.name = 7 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument 0 has trn.aliases, which belongs on results (a result names the input it updates)}}
func.func @aliases_on_arg(%a: tensor<4xf32> {trn.aliases = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument 0 has unknown trn attribute 'trn.rol'}}
func.func @unknown_arg_attr(%a: tensor<4xf32> {trn.rol = "data"}) {
  return
}

// -----

// expected-error @+1 {{result 0 has invalid trn.role (expected one of "output", "loss", "parameter", "optimizer_state", "gradient")}}
func.func @unknown_result_role(%a: tensor<4xf32>) -> (tensor<4xf32> {trn.role = "weights"}) {
  return %a : tensor<4xf32>
}

// -----

// An argument-only role is not valid on a result.
// expected-error @+1 {{result 1 has invalid trn.role (expected one of "output", "loss", "parameter", "optimizer_state", "gradient")}}
func.func @arg_role_on_result(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32> {trn.role = "data"}) {
  return %a, %a : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 has invalid trn.role}}
func.func @result_role_not_string(%a: tensor<4xf32>) -> (tensor<4xf32> {trn.role = ["output"]}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 has non-string trn.name}}
func.func @result_name_not_string(%a: tensor<4xf32>) -> (tensor<4xf32> {trn.name = unit}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 has unknown trn attribute 'trn.alias'}}
func.func @unknown_result_attr(%a: tensor<4xf32>) -> (tensor<4xf32> {trn.alias = 0 : i64}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 has trn.aliases that is not an integer input index}}
func.func @alias_not_integer(%a: tensor<4xf32>) -> (tensor<4xf32> {trn.aliases = "0"}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 has trn.aliases that is not an integer input index}}
func.func @alias_float(%a: tensor<4xf32>) -> (tensor<4xf32> {trn.aliases = 0.0 : f32}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 aliases input 1, but the function has 1 inputs}}
func.func @alias_out_of_range(%a: tensor<4xf32>) -> (tensor<4xf32> {trn.aliases = 1 : i64}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 aliases input -1, but the function has 1 inputs}}
func.func @alias_negative(%a: tensor<4xf32>) -> (tensor<4xf32> {trn.aliases = -1 : i64}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 aliases input 0, but the function has 0 inputs}}
func.func @alias_no_inputs() -> (tensor<4xf32> {trn.aliases = 0 : i64}) {
  %0 = trn.constant dense<0.0> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An index wider than 64 bits must not be truncated (2^64 would read as 0).
// expected-error @+1 {{result 0 aliases input 18446744073709551616 : i128, but the function has 1 inputs}}
func.func @alias_wide_integer(%a: tensor<4xf32>) -> (tensor<4xf32> {trn.aliases = 18446744073709551616 : i128}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 aliases input 0 of a different type ('tensor<4xf32>' vs 'tensor<4xbf16>'); an in-place update keeps the type}}
func.func @alias_type_mismatch(%a: tensor<4xf32>) -> (tensor<4xbf16> {trn.aliases = 0 : i64}) {
  %0 = trn.convert %a : tensor<4xf32> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// expected-error @+1 {{result 1 aliases input 1 of a different type ('tensor<8xf32>' vs 'tensor<4xf32>'); an in-place update keeps the type}}
func.func @alias_shape_mismatch(%a: tensor<4xf32>, %b: tensor<8xf32>)
    -> (tensor<4xf32> {trn.aliases = 0 : i64}, tensor<4xf32> {trn.aliases = 1 : i64}) {
  return %a, %a : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{results 0 and 2 both alias input 1}}
func.func @two_results_one_input(%a: tensor<4xf32>, %b: tensor<4xf32>)
    -> (tensor<4xf32> {trn.aliases = 1 : i64}, tensor<4xf32>, tensor<4xf32> {trn.aliases = 1 : i64}) {
  return %a, %a, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The same index in another integer type is the same input.
// expected-error @+1 {{results 0 and 1 both alias input 0}}
func.func @two_results_one_input_types(%a: tensor<4xf32>)
    -> (tensor<4xf32> {trn.aliases = 0 : i64}, tensor<4xf32> {trn.aliases = 0 : i32}) {
  return %a, %a : tensor<4xf32>, tensor<4xf32>
}

// -----

// Declarations are checked too.
// expected-error @+1 {{result 0 aliases input 3, but the function has 1 inputs}}
func.func private @declaration(tensor<4xf32>) -> (tensor<4xf32> {trn.aliases = 3 : i64})

// -----

func.func @op_attr(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown trn attribute 'trn.bogus' on 'trn.exp' (trn.role, trn.name and trn.aliases belong on function arguments and results)}}
  %0 = trn.exp %a {trn.bogus = 1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{unknown trn attribute 'trn.role' on 'func.func'}}
func.func @func_attr(%a: tensor<4xf32>) -> tensor<4xf32> attributes {trn.role = "data"} {
  return %a : tensor<4xf32>
}

// -----

// trn.matmul_type (set by trn-auto-cast) is for the fused attention kernels.
func.func @matmul_type_on_add(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.matmul_type' belongs on trn.attention and trn.attention_grad, not on 'trn.add'}}
  %0 = trn.add %a, %a {trn.matmul_type = bf16} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @matmul_type_not_a_type(%q: tensor<1x8x4xf32>, %k: tensor<1x8x4xf32>, %v: tensor<1x8x4xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{'trn.matmul_type' must be the type bf16, f16 or f32, got "bf16"}}
  %o, %lse = trn.attention %q, %k, %v, scale = 0.5 {trn.matmul_type = "bf16"} : (tensor<1x8x4xf32>, tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> (tensor<1x8x4xf32>, tensor<1x8xf32>)
  return %o : tensor<1x8x4xf32>
}

// -----

func.func @matmul_type_fp8(%q: tensor<1x8x4xf32>, %k: tensor<1x8x4xf32>, %v: tensor<1x8x4xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{'trn.matmul_type' must be the type bf16, f16 or f32, got f8E4M3FN}}
  %o, %lse = trn.attention %q, %k, %v, scale = 0.5 {trn.matmul_type = f8E4M3FN} : (tensor<1x8x4xf32>, tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> (tensor<1x8x4xf32>, tensor<1x8xf32>)
  return %o : tensor<1x8x4xf32>
}
