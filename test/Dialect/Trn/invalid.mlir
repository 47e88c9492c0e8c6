// RUN: trn-opt %s -split-input-file -verify-diagnostics

// One case per user-facing diagnostic of the trn ops: ODS type and attribute
// constraints, the verifiers and the result type inference in TrnOps.cpp.
// An error from result type inference (InferTypeOpAdaptor ops) is followed by
// MLIR's generic "failed to infer returned types" at the same op.
//
// Not reachable from text, hence not tested: the "expects a ranked tensor"
// checks of the inference functions (the ODS operand constraints, or the
// custom parser's type kind check, fire first) and concatenate's "needs at
// least one input" (SameOperandsElementType fires first).

//===----------------------------------------------------------------------===//
// Element type and rank constraints
//===----------------------------------------------------------------------===//

func.func @exp_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.exp' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.exp %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @exp_f64(%a: tensor<4xf64>) -> tensor<4xf64> {
  // expected-error @+1 {{'trn.exp' op operand #0 must be statically shaped tensor of}}
  %0 = trn.exp %a : tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @exp_unranked(%a: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'trn.exp' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<*xf32>'}}
  %0 = "trn.exp"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @exp_unranked_custom(%a: tensor<*xf32>) -> tensor<*xf32> {
  // The custom form parses the type as a ranked tensor type.
  // expected-error @+1 {{custom op 'trn.exp' invalid kind of type specified}}
  %0 = trn.exp %a : tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @exp_vector(%a: vector<4xf32>) -> vector<4xf32> {
  // expected-error @+1 {{'trn.exp' op operand #0 must be statically shaped tensor of}}
  %0 = "trn.exp"(%a) : (vector<4xf32>) -> vector<4xf32>
  return %0 : vector<4xf32>
}

// -----

func.func @exp_scalar(%a: f32) -> f32 {
  // expected-error @+1 {{'trn.exp' op operand #0 must be statically shaped tensor of}}
  %0 = "trn.exp"(%a) : (f32) -> f32
  return %0 : f32
}

// -----

func.func @log_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.log' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.log %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @log1p_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.log1p' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.log1p %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @tanh_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.tanh' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.tanh %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sigmoid_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.sigmoid' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.sigmoid %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sqrt_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.sqrt' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.sqrt %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @rsqrt_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.rsqrt' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.rsqrt %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @reciprocal_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.reciprocal' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.reciprocal %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @erf_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.erf' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.erf %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @relu_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.relu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.relu %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @silu_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.silu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.silu %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sin_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.sin' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.sin %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @cos_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.cos' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.cos %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @floor_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.floor' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.floor %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sign_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.sign' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = trn.sign %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @neg_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.neg' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = trn.neg %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @abs_i8(%a: tensor<4xi8>) -> tensor<4xi8> {
  // expected-error @+1 {{'trn.abs' op operand #0 must be statically shaped tensor of}}
  %0 = trn.abs %a : tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

func.func @not_float(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.not' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = trn.not %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gelu_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.gelu' op operand #0 must be statically shaped tensor of}}
  %0 = trn.gelu %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @gelu_bad_approximation(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{custom op 'trn.gelu' expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]}}
  %0 = trn.gelu %a approximate = exact : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gelu_grad_int(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'trn.gelu_grad' op operand #0 must be statically shaped tensor of}}
  %0 = trn.gelu_grad %a, %a : tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @pow_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.pow' op operand #0 must be statically shaped tensor of}}
  %0 = trn.pow %a, %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @add_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.add' op operand #0 must be statically shaped tensor of}}
  %0 = trn.add %a, %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @sub_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.sub' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = trn.sub %a, %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @mul_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.mul' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = trn.mul %a, %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @div_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.div' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = trn.div %a, %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @max_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.max' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = trn.max %a, %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @min_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.min' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = trn.min %a, %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @and_float(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.and' op operand #0 must be statically shaped tensor of 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = trn.and %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @or_float(%a: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{'trn.or' op operand #0 must be statically shaped tensor of 1-bit signless integer}}
  %0 = trn.or %a, %a : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

func.func @add_unsigned(%a: tensor<4xui32>) -> tensor<4xui32> {
  // expected-error @+1 {{'trn.add' op operand #0 must be statically shaped tensor of}}
  %0 = trn.add %a, %a : tensor<4xui32>
  return %0 : tensor<4xui32>
}

// -----

//===----------------------------------------------------------------------===//
// SameOperandsAndResultType (only the generic form can break it)
//===----------------------------------------------------------------------===//

func.func @add_operand_types(%a: tensor<4xf32>, %b: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.add' op requires the same type for all operands and results}}
  %0 = "trn.add"(%a, %b) : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @add_shapes(%a: tensor<4xf32>, %b: tensor<2x2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.add' op all non-scalar operands/results must have the same shape and base type}}
  %0 = "trn.add"(%a, %b) : (tensor<4xf32>, tensor<2x2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @exp_result_type(%a: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'trn.exp' op requires the same type for all operands and results}}
  %0 = "trn.exp"(%a) : (tensor<4xf32>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

func.func @gelu_grad_types(%a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.gelu_grad' op all non-scalar operands/results must have the same shape and base type}}
  %0 = "trn.gelu_grad"(%a, %b) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @softmax_result_type(%a: tensor<4x8xf32>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'trn.softmax' op requires the same type for all operands and results}}
  %0 = "trn.softmax"(%a) <{dim = 1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

func.func @softmax_grad_types(%y: tensor<4x8xf32>, %dy: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'trn.softmax_grad' op requires the same type for all operands and results}}
  %0 = "trn.softmax_grad"(%y, %dy) <{dim = 1 : i64}> : (tensor<4x8xf32>, tensor<4x8xbf16>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @exp_two_operands(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.exp' op requires a single operand}}
  %0 = "trn.exp"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @exp_no_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{'trn.exp' op requires one result}}
  "trn.exp"(%a) : (tensor<4xf32>) -> ()
  return
}

// -----

//===----------------------------------------------------------------------===//
// compare, select, convert
//===----------------------------------------------------------------------===//

func.func @compare_operand_types(%a: tensor<4xf32>, %b: tensor<4xi32>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.compare' op requires all operands to have the same type}}
  %0 = "trn.compare"(%a, %b) <{predicate = 0 : i32}> : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @compare_result_type(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.compare' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = "trn.compare"(%a, %a) <{predicate = 0 : i32}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @compare_result_shape(%a: tensor<4xf32>) -> tensor<8xi1> {
  // expected-error @+1 {{'trn.compare' op all non-scalar operands/results must have the same shape and base type}}
  %0 = "trn.compare"(%a, %a) <{predicate = 0 : i32}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xi1>
  return %0 : tensor<8xi1>
}

// -----

func.func @compare_unranked(%a: tensor<*xf32>) {
  // expected-error @+1 {{custom op 'trn.compare' invalid kind of type specified}}
  %0 = trn.compare eq, %a, %a : tensor<*xf32>
  return
}

// -----

func.func @compare_unranked_generic(%a: tensor<*xf32>) {
  // expected-error @+1 {{'trn.compare' op operand #0 must be statically shaped tensor of}}
  %0 = "trn.compare"(%a, %a) <{predicate = 0 : i32}> : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xi1>
  return
}

// -----

func.func @compare_f64(%a: tensor<4xf64>) {
  // expected-error @+1 {{'trn.compare' op operand #0 must be statically shaped tensor of}}
  %0 = trn.compare eq, %a, %a : tensor<4xf64>
  return
}

// -----

func.func @compare_bad_predicate(%a: tensor<4xf32>) {
  // expected-error @+1 {{custom op 'trn.compare' expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]}}
  %0 = trn.compare ult, %a, %a : tensor<4xf32>
  return
}

// -----

func.func @compare_predicate_out_of_range(%a: tensor<4xf32>) {
  // expected-error @+1 {{invalid properties {predicate = 6 : i32} for op trn.compare: Invalid attribute `predicate` in property conversion: 6 : i32}}
  %0 = "trn.compare"(%a, %a) <{predicate = 6 : i32}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @select_pred_not_bool(%p: tensor<4xi32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.select' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi32>'}}
  %0 = trn.select %p, %a, %a : tensor<4xi32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_pred_shape(%p: tensor<2xi1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.select' op failed to verify that all of {pred, result} have same shape}}
  %0 = trn.select %p, %a, %a : tensor<2xi1>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_pred_scalar(%p: tensor<i1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // No implicit broadcasting, not even of a 0-d predicate.
  // expected-error @+1 {{'trn.select' op failed to verify that all of {pred, result} have same shape}}
  %0 = trn.select %p, %a, %a : tensor<i1>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_branch_types(%p: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.select' op failed to verify that all of {on_true, on_false, result} have same type}}
  %0 = "trn.select"(%p, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_branch_type_custom(%p: tensor<4xi1>, %b: tensor<4xbf16>) -> tensor<4xf32> {
  // In the custom form the branches take the result type.
  // expected-note @-2 {{prior use here}}
  // expected-error @+1 {{use of value '%b' expects different type than prior uses: 'tensor<4xf32>' vs 'tensor<4xbf16>'}}
  %0 = trn.select %p, %b, %b : tensor<4xi1>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @convert_shape(%a: tensor<4xf32>) -> tensor<2x2xbf16> {
  // expected-error @+1 {{'trn.convert' op failed to verify that all of {operand, result} have same shape}}
  %0 = trn.convert %a : tensor<4xf32> -> tensor<2x2xbf16>
  return %0 : tensor<2x2xbf16>
}

// -----

func.func @convert_to_f64(%a: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'trn.convert' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf64>'}}
  %0 = trn.convert %a : tensor<4xf32> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @convert_from_i8(%a: tensor<4xi8>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.convert' op operand #0 must be statically shaped tensor of}}
  %0 = trn.convert %a : tensor<4xi8> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @convert_to_f8_fnuz(%a: tensor<4xf32>) -> tensor<4xf8E4M3FNUZ> {
  // expected-error @+1 {{'trn.convert' op result #0 must be statically shaped tensor of}}
  %0 = trn.convert %a : tensor<4xf32> -> tensor<4xf8E4M3FNUZ>
  return %0 : tensor<4xf8E4M3FNUZ>
}

// -----

//===----------------------------------------------------------------------===//
// constant, iota, rng
//===----------------------------------------------------------------------===//

func.func @constant_sparse() -> tensor<4xf32> {
  // expected-error @+1 {{'trn.constant' op value must be a dense elements attribute (dense<...>), got sparse<0, 1.000000e+00> : tensor<4xf32>}}
  %0 = trn.constant sparse<[[0]], [1.0]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @constant_resource() -> tensor<4xf32> {
  // expected-error @+1 {{'trn.constant' op value must be a dense elements attribute (dense<...>), got dense_resource<blob> : tensor<4xf32>}}
  %0 = trn.constant dense_resource<blob> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @constant_f64() {
  // expected-error @+1 {{'trn.constant' op result #0 must be statically shaped tensor of}}
  %0 = trn.constant dense<1.0> : tensor<4xf64>
  return
}

// -----

func.func @constant_vector() {
  // expected-error @+1 {{'trn.constant' op result #0 must be statically shaped tensor of}}
  %0 = trn.constant dense<1.0> : vector<4xf32>
  return
}

// -----

func.func @constant_scalar() {
  // expected-error @+1 {{invalid kind of attribute specified}}
  %0 = trn.constant 1.0 : f32
  return
}

// -----

func.func @constant_type_mismatch() -> tensor<8xf32> {
  // expected-error @+1 {{'trn.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "trn.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @constant_missing_value() -> tensor<4xf32> {
  // expected-error @+1 {{'trn.constant' op requires attribute 'value'}}
  %0 = "trn.constant"() : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @iota_rank0() -> tensor<i32> {
  // expected-error @+1 {{'trn.iota' op result must have rank at least 1}}
  %0 = trn.iota dim = 0 : tensor<i32>
  return %0 : tensor<i32>
}

// -----

func.func @iota_dim() -> tensor<2x3xi32> {
  // expected-error @+1 {{'trn.iota' op dim 2 is out of range for rank 2}}
  %0 = trn.iota dim = 2 : tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

func.func @iota_negative_dim() -> tensor<2x3xi32> {
  // expected-error @+1 {{'trn.iota' op attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = trn.iota dim = -1 : tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

func.func @iota_bool() -> tensor<4xi1> {
  // expected-error @+1 {{'trn.iota' op result #0 must be statically shaped tensor of}}
  %0 = trn.iota dim = 0 : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @rng_seed_i32(%seed: tensor<i32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op operand #0 must be 0D tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %0 = trn.rng_uniform %seed, stream = 0 : tensor<i32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_seed_rank1(%seed: tensor<1xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op operand #0 must be 0D tensor of 64-bit signless integer values, but got 'tensor<1xi64>'}}
  %0 = trn.rng_uniform %seed, stream = 0 : tensor<1xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_seed_scalar(%seed: i64) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op operand #0 must be 0D tensor of 64-bit signless integer values, but got 'i64'}}
  %0 = "trn.rng_uniform"(%seed) <{stream = 0 : i64}> : (i64) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_uniform_int(%seed: tensor<i64>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.rng_uniform' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = trn.rng_uniform %seed, stream = 0 : tensor<i64> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @rng_uniform_low_high(%seed: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op needs finite low < high, got low = 1.000000e+00, high = 0.000000e+00}}
  %0 = trn.rng_uniform %seed, stream = 0 {low = 1.0 : f64, high = 0.0 : f64} : tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_uniform_empty_range(%seed: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op needs finite low < high, got low = 1.000000e+00, high = 1.000000e+00}}
  %0 = trn.rng_uniform %seed, stream = 0 {low = 1.0 : f64} : tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_uniform_infinite(%seed: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op needs finite low < high, got low = 0.000000e+00, high = INF}}
  %0 = trn.rng_uniform %seed, stream = 0 {high = 0x7FF0000000000000 : f64} : tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_uniform_nan(%seed: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op needs finite low < high, got low = nan}}
  %0 = trn.rng_uniform %seed, stream = 0 {low = 0x7FF8000000000000 : f64} : tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_uniform_low_f32(%seed: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op attribute 'low' failed to satisfy constraint: 64-bit float attribute}}
  %0 = trn.rng_uniform %seed, stream = 0 {low = 0.5 : f32} : tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_uniform_stream_32_bits(%seed: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op stream 4294967296 does not fit in 32 bits}}
  %0 = trn.rng_uniform %seed, stream = 4294967296 : tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_uniform_negative_stream(%seed: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.rng_uniform' op attribute 'stream' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = trn.rng_uniform %seed, stream = -1 : tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rng_bernoulli_p_above_one(%seed: tensor<i64>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.rng_bernoulli' op probability p = 1.500000e+00 is not in [0, 1]}}
  %0 = trn.rng_bernoulli %seed, stream = 0, p = 1.5 : tensor<i64> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @rng_bernoulli_p_negative(%seed: tensor<i64>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.rng_bernoulli' op probability p = -1.000000e-01 is not in [0, 1]}}
  %0 = trn.rng_bernoulli %seed, stream = 0, p = -0.1 : tensor<i64> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @rng_bernoulli_p_nan(%seed: tensor<i64>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.rng_bernoulli' op probability p = nan is not in [0, 1]}}
  %0 = trn.rng_bernoulli %seed, stream = 0, p = 0x7FF8000000000000 : tensor<i64> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @rng_bernoulli_stream_32_bits(%seed: tensor<i64>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.rng_bernoulli' op stream 9223372036854775807 does not fit in 32 bits}}
  %0 = trn.rng_bernoulli %seed, stream = 9223372036854775807, p = 0.5 : tensor<i64> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @rng_bernoulli_seed(%seed: tensor<2xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{'trn.rng_bernoulli' op operand #0 must be 0D tensor of 64-bit signless integer values, but got 'tensor<2xi64>'}}
  %0 = trn.rng_bernoulli %seed, stream = 0, p = 0.5 : tensor<2xi64> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @rng_bernoulli_int(%seed: tensor<i64>) -> tensor<4xi32> {
  // expected-error @+1 {{'trn.rng_bernoulli' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 1-bit signless integer values, but got 'tensor<4xi32>'}}
  %0 = trn.rng_bernoulli %seed, stream = 0, p = 0.5 : tensor<i64> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @rng_bernoulli_f8(%seed: tensor<i64>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{'trn.rng_bernoulli' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 1-bit signless integer values, but got 'tensor<4xf8E4M3FN>'}}
  %0 = trn.rng_bernoulli %seed, stream = 0, p = 0.5 : tensor<i64> -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

//===----------------------------------------------------------------------===//
// broadcast_in_dim, reshape
//===----------------------------------------------------------------------===//

func.func @broadcast_element_type(%a: tensor<3xf32>) -> tensor<2x3xbf16> {
  // expected-error @+1 {{'trn.broadcast_in_dim' op operand element type 'f32' differs from result element type 'bf16'}}
  %0 = trn.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xbf16>
  return %0 : tensor<2x3xbf16>
}

// -----

func.func @broadcast_dims_count(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'trn.broadcast_in_dim' op dims [0, 1] has 2 entries but the operand has rank 1}}
  %0 = trn.broadcast_in_dim %a, dims = [0, 1] : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @broadcast_dim_out_of_range(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'trn.broadcast_in_dim' op dims [2] has dimension 2 out of range for rank 2}}
  %0 = trn.broadcast_in_dim %a, dims = [2] : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @broadcast_negative_dim(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'trn.broadcast_in_dim' op dims [-1] has dimension -1 out of range for rank 2}}
  %0 = trn.broadcast_in_dim %a, dims = [-1] : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @broadcast_repeated_dim(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{'trn.broadcast_in_dim' op dims [1, 1] repeats dimension 1}}
  %0 = trn.broadcast_in_dim %a, dims = [1, 1] : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @broadcast_not_increasing(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{'trn.broadcast_in_dim' op dims [1, 0] must be strictly increasing}}
  %0 = trn.broadcast_in_dim %a, dims = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @broadcast_size(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'trn.broadcast_in_dim' op operand dimension 0 of size 3 cannot broadcast to result dimension 1 of size 4}}
  %0 = trn.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @broadcast_unranked(%a: tensor<*xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'trn.broadcast_in_dim' op operand #0 must be statically shaped tensor of}}
  %0 = trn.broadcast_in_dim %a, dims = [1] : (tensor<*xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @broadcast_dims_kind(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{invalid properties {dims = dense<1> : tensor<1xi64>} for op trn.broadcast_in_dim: Invalid attribute `dims` in property conversion: dense<1> : tensor<1xi64>}}
  %0 = "trn.broadcast_in_dim"(%a) <{dims = dense<1> : tensor<1xi64>}> : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reshape_element_type(%a: tensor<2x3xf32>) -> tensor<6xf16> {
  // expected-error @+1 {{'trn.reshape' op operand element type 'f32' differs from result element type 'f16'}}
  %0 = trn.reshape %a : (tensor<2x3xf32>) -> tensor<6xf16>
  return %0 : tensor<6xf16>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'trn.reshape' op cannot reshape 6 elements ('tensor<2x3xf32>') into 7 ('tensor<7xf32>')}}
  %0 = trn.reshape %a : (tensor<2x3xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @reshape_count_overflow(%a: tensor<4611686018427387904x4xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{'trn.reshape' op operand #0 must be statically shaped tensor of}}
  %0 = trn.reshape %a : (tensor<4611686018427387904x4xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

//===----------------------------------------------------------------------===//
// transpose, slice, concatenate, pad
//===----------------------------------------------------------------------===//

func.func @transpose_perm_size(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{'trn.transpose' op perm [1] has 1 entries but the operand has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.transpose %a, perm = [1] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_perm_range(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{'trn.transpose' op perm [2, 0] has dimension 2 out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.transpose %a, perm = [2, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_perm_repeat(%a: tensor<2x3xf32>) -> tensor<3x3xf32> {
  // expected-error @+2 {{'trn.transpose' op perm [1, 1] repeats dimension 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.transpose %a, perm = [1, 1] : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @transpose_result(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'trn.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'trn.transpose' op failed to infer returned types}}
  %0 = trn.transpose %a, perm = [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @transpose_result_element(%a: tensor<2x3xf32>) -> tensor<3x2xbf16> {
  // expected-error @+2 {{'trn.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<3x2xbf16>'}}
  // expected-error @+1 {{'trn.transpose' op failed to infer returned types}}
  %0 = trn.transpose %a, perm = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xbf16>
  return %0 : tensor<3x2xbf16>
}

// -----

func.func @slice_entries(%a: tensor<8x6xf32>) -> tensor<8x6xf32> {
  // expected-error @+2 {{'trn.slice' op start, limit and strides need 2 entries each (the operand rank), got 2, 2 and 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.slice %a, start = [0, 0], limit = [8, 6], strides = [1] : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// -----

func.func @slice_start_after_limit(%a: tensor<8x6xf32>) -> tensor<0x6xf32> {
  // expected-error @+2 {{'trn.slice' op dimension 0: needs 0 <= start (5) <= limit (4) <= size (8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.slice %a, start = [5, 0], limit = [4, 6], strides = [1, 1] : (tensor<8x6xf32>) -> tensor<0x6xf32>
  return %0 : tensor<0x6xf32>
}

// -----

func.func @slice_limit_past_end(%a: tensor<8x6xf32>) -> tensor<8x7xf32> {
  // expected-error @+2 {{'trn.slice' op dimension 1: needs 0 <= start (0) <= limit (7) <= size (6)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.slice %a, start = [0, 0], limit = [8, 7], strides = [1, 1] : (tensor<8x6xf32>) -> tensor<8x7xf32>
  return %0 : tensor<8x7xf32>
}

// -----

func.func @slice_negative_start(%a: tensor<8x6xf32>) -> tensor<8x6xf32> {
  // expected-error @+2 {{'trn.slice' op dimension 0: needs 0 <= start (-1) <= limit (8) <= size (8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.slice %a, start = [-1, 0], limit = [8, 6], strides = [1, 1] : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// -----

func.func @slice_zero_stride(%a: tensor<8x6xf32>) -> tensor<8x6xf32> {
  // expected-error @+2 {{'trn.slice' op dimension 1: stride 0 must be at least 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.slice %a, start = [0, 0], limit = [8, 6], strides = [1, 0] : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// -----

func.func @slice_result(%a: tensor<8x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+2 {{'trn.slice' op inferred type(s) 'tensor<3x6xf32>' are incompatible with return type(s) of operation 'tensor<4x6xf32>'}}
  // expected-error @+1 {{'trn.slice' op failed to infer returned types}}
  %0 = trn.slice %a, start = [1, 0], limit = [7, 6], strides = [2, 1] : (tensor<8x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @slice_huge_stride(%a: tensor<8xf32>) -> tensor<2xf32> {
  // A stride beyond the extent keeps one element (and must not overflow).
  // expected-error @+2 {{'trn.slice' op inferred type(s) 'tensor<1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'trn.slice' op failed to infer returned types}}
  %0 = trn.slice %a, start = [0], limit = [8], strides = [9223372036854775807] : (tensor<8xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @concatenate_dim(%a: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+2 {{'trn.concatenate' op dim 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "trn.concatenate"(%a, %a) <{dim = 2 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concatenate_rank0(%a: tensor<f32>) -> tensor<f32> {
  // expected-error @+2 {{'trn.concatenate' op dim 0 is out of range for rank 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "trn.concatenate"(%a, %a) <{dim = 0 : i64}> : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @concatenate_rank(%a: tensor<2x3xf32>, %b: tensor<6xf32>) -> tensor<2x6xf32> {
  // expected-error @+2 {{'trn.concatenate' op input 1 has a different rank than input 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "trn.concatenate"(%a, %b) <{dim = 1 : i64}> : (tensor<2x3xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concatenate_size(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+2 {{'trn.concatenate' op input 1 has size 4 in dimension 0 but input 0 has 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "trn.concatenate"(%a, %b) <{dim = 1 : i64}> : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concatenate_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xbf16>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'trn.concatenate' op requires the same element type for all operands}}
  %0 = "trn.concatenate"(%a, %b) <{dim = 1 : i64}> : (tensor<2x3xf32>, tensor<2x3xbf16>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concatenate_no_inputs() -> tensor<2x6xf32> {
  // expected-error @+1 {{'trn.concatenate' op expected 1 or more operands, but found 0}}
  %0 = "trn.concatenate"() <{dim = 1 : i64}> : () -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concatenate_result(%a: tensor<2x3xf32>) -> tensor<2x7xf32> {
  // expected-error @+2 {{'trn.concatenate' op inferred type(s) 'tensor<2x6xf32>' are incompatible with return type(s) of operation 'tensor<2x7xf32>'}}
  // expected-error @+1 {{'trn.concatenate' op failed to infer returned types}}
  %0 = "trn.concatenate"(%a, %a) <{dim = 1 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

func.func @concatenate_overflow(%a: tensor<4611686018427387904xf32>) -> tensor<1xf32> {
  // expected-error @+2 {{'trn.concatenate' op result size in dimension 0 does not fit in 64 bits}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "trn.concatenate"(%a, %a, %a) <{dim = 0 : i64}> : (tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @pad_entries(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{'trn.pad' op low and high need 2 entries each (the operand rank), got 1 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.pad %a, low = [1], high = [1, 0], value = 0.0 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @pad_negative(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{'trn.pad' op dimension 1: padding must be non-negative (use trn.slice to crop)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.pad %a, low = [0, 0], high = [0, -1], value = 0.0 : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @pad_result(%a: tensor<2x3xf32>) -> tensor<4x4xf32> {
  // expected-error @+2 {{'trn.pad' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x4xf32>'}}
  // expected-error @+1 {{'trn.pad' op failed to infer returned types}}
  %0 = trn.pad %a, low = [1, 0], high = [1, 0], value = 0.0 : (tensor<2x3xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @pad_overflow(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'trn.pad' op dimension 0: padded size does not fit in 64 bits}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.pad %a, low = [9223372036854775807], high = [9223372036854775807], value = 0.0 : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @pad_value_kind(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{unexpected decimal integer literal for a floating point value}}
  // expected-note @+1 {{add a trailing dot to make the literal a float}}
  %0 = trn.pad %a, low = [0, 0], high = [0, 0], value = 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// gather, scatter_add
//===----------------------------------------------------------------------===//

func.func @gather_axis(%t: tensor<10x4xf32>, %i: tensor<3xi32>) -> tensor<10x4x3xf32> {
  // expected-error @+2 {{'trn.gather' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.gather %t[%i], axis = 2 : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<10x4x3xf32>
  return %0 : tensor<10x4x3xf32>
}

// -----

func.func @gather_negative_axis(%t: tensor<10x4xf32>, %i: tensor<3xi32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'trn.gather' op attribute 'axis' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = trn.gather %t[%i], axis = -2 : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @gather_batch_dims_axis(%t: tensor<4x10xf32>, %i: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+2 {{'trn.gather' op batch_dims 1 must be at most axis (0) and the indices rank (1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.gather %t[%i], axis = 0, batch_dims = 1 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_batch_dims_indices(%t: tensor<4x10x3xf32>, %i: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+2 {{'trn.gather' op batch_dims 2 must be at most axis (2) and the indices rank (1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.gather %t[%i], axis = 2, batch_dims = 2 : (tensor<4x10x3xf32>, tensor<4xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_batch_size(%t: tensor<4x10xf32>, %i: tensor<5xi32>) -> tensor<4xf32> {
  // expected-error @+2 {{'trn.gather' op batch dimension 0 has size 4 in the operand but 5 in the indices}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.gather %t[%i], axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<5xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_float_indices(%t: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'trn.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = trn.gather %t[%i], axis = 0 : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @gather_result(%t: tensor<10x4xf32>, %i: tensor<3xi32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{'trn.gather' op inferred type(s) 'tensor<3x4xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{'trn.gather' op failed to infer returned types}}
  %0 = trn.gather %t[%i], axis = 0 : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @gather_missing_axis(%t: tensor<10x4xf32>, %i: tensor<3xi32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'trn.gather' op requires attribute 'axis'}}
  %0 = "trn.gather"(%t, %i) : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_add_updates(%t: tensor<10x4xf32>, %i: tensor<3xi32>, %u: tensor<3x5xf32>) -> tensor<10x4xf32> {
  // expected-error @+2 {{'trn.scatter_add' op updates must have type 'tensor<3x4xf32>' (the gather of operand by indices), got 'tensor<3x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.scatter_add %t[%i], %u, axis = 0 : (tensor<10x4xf32>, tensor<3xi32>, tensor<3x5xf32>) -> tensor<10x4xf32>
  return %0 : tensor<10x4xf32>
}

// -----

func.func @scatter_add_updates_element(%t: tensor<10x4xf32>, %i: tensor<3xi32>, %u: tensor<3x4xbf16>) -> tensor<10x4xf32> {
  // expected-error @+2 {{'trn.scatter_add' op updates must have type 'tensor<3x4xf32>' (the gather of operand by indices), got 'tensor<3x4xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.scatter_add %t[%i], %u, axis = 0 : (tensor<10x4xf32>, tensor<3xi32>, tensor<3x4xbf16>) -> tensor<10x4xf32>
  return %0 : tensor<10x4xf32>
}

// -----

func.func @scatter_add_axis(%t: tensor<10x4xf32>, %i: tensor<3xi32>, %u: tensor<3x4xf32>) -> tensor<10x4xf32> {
  // expected-error @+2 {{'trn.scatter_add' op axis 5 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.scatter_add %t[%i], %u, axis = 5 : (tensor<10x4xf32>, tensor<3xi32>, tensor<3x4xf32>) -> tensor<10x4xf32>
  return %0 : tensor<10x4xf32>
}

// -----

func.func @scatter_add_batch_dims(%t: tensor<4x10xf32>, %i: tensor<2xi32>, %u: tensor<4xf32>) -> tensor<4x10xf32> {
  // expected-error @+2 {{'trn.scatter_add' op batch dimension 0 has size 4 in the operand but 2 in the indices}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.scatter_add %t[%i], %u, axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<2xi32>, tensor<4xf32>) -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @scatter_add_bool(%t: tensor<10xi1>, %i: tensor<3xi32>, %u: tensor<3xi1>) -> tensor<10xi1> {
  // expected-error @+1 {{'trn.scatter_add' op operand #0 must be statically shaped tensor of}}
  %0 = trn.scatter_add %t[%i], %u, axis = 0 : (tensor<10xi1>, tensor<3xi32>, tensor<3xi1>) -> tensor<10xi1>
  return %0 : tensor<10xi1>
}

// -----

func.func @scatter_add_result(%t: tensor<10x4xf32>, %i: tensor<3xi32>, %u: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+2 {{'trn.scatter_add' op inferred type(s) 'tensor<10x4xf32>' are incompatible with return type(s) of operation 'tensor<3x4xf32>'}}
  // expected-error @+1 {{'trn.scatter_add' op failed to infer returned types}}
  %0 = trn.scatter_add %t[%i], %u, axis = 0 : (tensor<10x4xf32>, tensor<3xi32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// reduce, argmax, dot_general
//===----------------------------------------------------------------------===//

func.func @reduce_dim_range(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'trn.reduce' op dims [2] has dimension 2 out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.reduce sum %a, dims = [2] : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_dims_repeat(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'trn.reduce' op dims [1, 1] repeats dimension 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.reduce sum %a, dims = [1, 1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_dims_order(%a: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error @+2 {{'trn.reduce' op dims [1, 0] must be strictly increasing}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.reduce max %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @reduce_result(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{'trn.reduce' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'trn.reduce' op failed to infer returned types}}
  %0 = trn.reduce sum %a, dims = [1] : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_keepdims(%a: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // Reduced dimensions are removed, not kept with size 1.
  // expected-error @+2 {{'trn.reduce' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2x1xf32>'}}
  // expected-error @+1 {{'trn.reduce' op failed to infer returned types}}
  %0 = trn.reduce sum %a, dims = [1] : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @reduce_bool(%a: tensor<2x3xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{'trn.reduce' op operand #0 must be statically shaped tensor of}}
  %0 = trn.reduce sum %a, dims = [1] : (tensor<2x3xi1>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @reduce_bad_kind(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{custom op 'trn.reduce' expected string or keyword containing one of the following enum values for attribute 'kind' [sum, max, min, prod]}}
  %0 = trn.reduce mean %a, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @argmax_dim(%a: tensor<4x10xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{'trn.argmax' op dim 2 is out of range for rank 2}}
  %0 = trn.argmax %a, dim = 2 : (tensor<4x10xf32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @argmax_result(%a: tensor<4x10xf32>) -> tensor<10xi64> {
  // expected-error @+1 {{'trn.argmax' op result shape must be [4] (the operand without dimension 1), got [10]}}
  %0 = trn.argmax %a, dim = 1 : (tensor<4x10xf32>) -> tensor<10xi64>
  return %0 : tensor<10xi64>
}

// -----

func.func @argmax_float_result(%a: tensor<4x10xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.argmax' op result #0 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = trn.argmax %a, dim = 1 : (tensor<4x10xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dot_batch_count(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+1 {{'trn.dot_general' op lhs and rhs need the same number of batching dims, got [0] and []}}
  %0 = trn.dot_general %a, %b, batching_dims = [0] x [], contracting_dims = [2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

func.func @dot_contract_count(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'trn.dot_general' op lhs and rhs need the same number of contracting dims, got [1] and [0, 1]}}
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0, 1] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @dot_lhs_dim_range(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'trn.dot_general' op lhs batching and contracting dims [2] has dimension 2 out of range for rank 2}}
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @dot_rhs_dim_range(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'trn.dot_general' op rhs batching and contracting dims [-1] has dimension -1 out of range for rank 2}}
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [-1] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @dot_dim_batch_and_contract(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trn.dot_general' op lhs batching and contracting dims [0, 0] repeats dimension 0}}
  %0 = trn.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [0] x [1] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dot_batch_size(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+1 {{'trn.dot_general' op batching dims lhs 0 (size 2) and rhs 0 (size 3) differ in size}}
  %0 = trn.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

func.func @dot_contract_size(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'trn.dot_general' op contracting dims lhs 1 (size 4) and rhs 0 (size 5) differ in size}}
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @dot_result_shape(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'trn.dot_general' op result shape must be [3, 5] (batch, lhs free, rhs free), got [5, 3]}}
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @dot_narrow_result(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xbf16> {
  // expected-error @+1 {{'trn.dot_general' op result element type 'bf16' is narrower than the operand element type 'f32'}}
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xbf16>
  return %0 : tensor<3x5xbf16>
}

// -----

func.func @dot_operand_types(%a: tensor<3x4xbf16>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'trn.dot_general' op requires the same element type for all operands}}
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<3x4xbf16>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @dot_int(%a: tensor<3x4xi32>, %b: tensor<4x5xi32>) -> tensor<3x5xi32> {
  // expected-error @+1 {{'trn.dot_general' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<3x4xi32>'}}
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<3x4xi32>, tensor<4x5xi32>) -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}

// -----

//===----------------------------------------------------------------------===//
// softmax family
//===----------------------------------------------------------------------===//

func.func @softmax_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'trn.softmax' op dim 2 is out of range for rank 2}}
  %0 = trn.softmax %a, dim = 2 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @softmax_negative_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'trn.softmax' op attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = trn.softmax %a, dim = -1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @softmax_rank0(%a: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'trn.softmax' op dim 0 is out of range for rank 0}}
  %0 = trn.softmax %a, dim = 0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @softmax_int(%a: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // expected-error @+1 {{'trn.softmax' op operand #0 must be statically shaped tensor of}}
  %0 = trn.softmax %a, dim = 1 : tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}

// -----

func.func @log_softmax_int(%a: tensor<4x8xi64>) -> tensor<4x8xi64> {
  // expected-error @+1 {{'trn.log_softmax' op operand #0 must be statically shaped tensor of}}
  %0 = trn.log_softmax %a, dim = 1 : tensor<4x8xi64>
  return %0 : tensor<4x8xi64>
}

// -----

func.func @softmax_grad_int(%a: tensor<4x8xi64>) -> tensor<4x8xi64> {
  // expected-error @+1 {{'trn.softmax_grad' op operand #0 must be statically shaped tensor of}}
  %0 = trn.softmax_grad %a, %a, dim = 1 : tensor<4x8xi64>
  return %0 : tensor<4x8xi64>
}

// -----

func.func @log_softmax_grad_int(%a: tensor<4x8xi64>) -> tensor<4x8xi64> {
  // expected-error @+1 {{'trn.log_softmax_grad' op operand #0 must be statically shaped tensor of}}
  %0 = trn.log_softmax_grad %a, %a, dim = 1 : tensor<4x8xi64>
  return %0 : tensor<4x8xi64>
}

// -----

func.func @log_softmax_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'trn.log_softmax' op dim 5 is out of range for rank 2}}
  %0 = trn.log_softmax %a, dim = 5 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @softmax_grad_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'trn.softmax_grad' op dim 2 is out of range for rank 2}}
  %0 = trn.softmax_grad %a, %a, dim = 2 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @log_softmax_grad_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'trn.log_softmax_grad' op dim 2 is out of range for rank 2}}
  %0 = trn.log_softmax_grad %a, %a, dim = 2 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// layer_norm, rms_norm
//===----------------------------------------------------------------------===//

func.func @layer_norm_axis(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.layer_norm' op axis 2 is out of range for rank 2 (at least one dimension is normalised)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y:3 = trn.layer_norm %x, %w, %w, axis = 2, eps = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_weight(%x: tensor<4x8xf32>, %w: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'trn.layer_norm' op weight and bias must have type 'tensor<8xf32>' (the normalised dimensions of the input), got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y:3 = trn.layer_norm %x, %w, %b, axis = 1, eps = 1.0e-5 : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_bias_element(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'trn.layer_norm' op weight and bias must have type 'tensor<8xbf16>' (the normalised dimensions of the input), got 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y:3 = trn.layer_norm %x, %w, %b, axis = 1, eps = 1.0e-5 : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_result(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) {
  // The statistics are f32 whatever the input type.
  // expected-error @+2 {{'trn.layer_norm' op inferred type(s) 'tensor<4x8xbf16>', 'tensor<4xf32>', 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4x8xbf16>', 'tensor<4xbf16>', 'tensor<4xbf16>'}}
  // expected-error @+1 {{'trn.layer_norm' op failed to infer returned types}}
  %y:3 = trn.layer_norm %x, %w, %w, axis = 1, eps = 1.0e-5 : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4xbf16>, tensor<4xbf16>)
  return
}

// -----

func.func @layer_norm_eps_kind(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'trn.layer_norm' op attribute 'epsilon' failed to satisfy constraint: 64-bit float attribute}}
  %y:3 = "trn.layer_norm"(%x, %w, %w) <{axis = 1 : i64, epsilon = 1.0e-5 : f32}> : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_grad_stats(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>, %r: tensor<4x1xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.layer_norm_grad' op mean and rstd must have type 'tensor<4xf32>' (f32 over the leading dimensions), got 'tensor<4x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.layer_norm_grad %dy, %x, %m, %r, %w, axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x1xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_stats_element(%dy: tensor<4x8xbf16>, %x: tensor<4x8xbf16>, %m: tensor<4xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+2 {{'trn.layer_norm_grad' op mean and rstd must have type 'tensor<4xf32>' (f32 over the leading dimensions), got 'tensor<4xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.layer_norm_grad %dy, %x, %m, %m, %w, axis = 1 : (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
  return
}

// -----

func.func @layer_norm_grad_output(%dy: tensor<4x9xf32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.layer_norm_grad' op grad_output must have the input type 'tensor<4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.layer_norm_grad %dy, %x, %m, %m, %w, axis = 1 : (tensor<4x9xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_weight(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+2 {{'trn.layer_norm_grad' op weight and bias must have type 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.layer_norm_grad %dy, %x, %m, %m, %w, axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @layer_norm_grad_axis(%dy: tensor<4x8xf32>, %m: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.layer_norm_grad' op axis 3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.layer_norm_grad %dy, %dy, %m, %m, %w, axis = 3 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_result(%dy: tensor<4x8xf32>, %m: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.layer_norm_grad' op inferred type(s) 'tensor<4x8xf32>', 'tensor<8xf32>', 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>', 'tensor<4x8xf32>', 'tensor<8xf32>'}}
  // expected-error @+1 {{'trn.layer_norm_grad' op failed to infer returned types}}
  %g:3 = trn.layer_norm_grad %dy, %dy, %m, %m, %w, axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_axis(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.rms_norm' op axis 2 is out of range for rank 2 (at least one dimension is normalised)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y:2 = trn.rms_norm %x, %w, axis = 2, eps = 1.0e-6 : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rms_norm_weight(%x: tensor<4x8xf32>, %w: tensor<8xf16>) {
  // expected-error @+2 {{'trn.rms_norm' op weight and bias must have type 'tensor<8xf32>' (the normalised dimensions of the input), got 'tensor<8xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y:2 = trn.rms_norm %x, %w, axis = 1, eps = 1.0e-6 : (tensor<4x8xf32>, tensor<8xf16>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rms_norm_result(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.rms_norm' op inferred type(s) 'tensor<4x8xf32>', 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>', 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'trn.rms_norm' op failed to infer returned types}}
  %y:2 = trn.rms_norm %x, %w, axis = 1, eps = 1.0e-6 : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>)
  return
}

// -----

func.func @rms_norm_grad_stats(%dy: tensor<4x8xf32>, %r: tensor<8xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.rms_norm_grad' op mean and rstd must have type 'tensor<4xf32>' (f32 over the leading dimensions), got 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:2 = trn.rms_norm_grad %dy, %dy, %r, %w, axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_output(%dy: tensor<4x8xbf16>, %x: tensor<4x8xf32>, %r: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.rms_norm_grad' op grad_output must have the input type 'tensor<4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:2 = trn.rms_norm_grad %dy, %x, %r, %w, axis = 1 : (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_weight(%x: tensor<4x8xf32>, %r: tensor<4xf32>, %w: tensor<9xf32>) {
  // expected-error @+2 {{'trn.rms_norm_grad' op weight and bias must have type 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:2 = trn.rms_norm_grad %x, %x, %r, %w, axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<9xf32>) -> (tensor<4x8xf32>, tensor<9xf32>)
  return
}

// -----

func.func @rms_norm_grad_axis(%x: tensor<4x8xf32>, %r: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.rms_norm_grad' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:2 = trn.rms_norm_grad %x, %x, %r, %w, axis = 2 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_result(%x: tensor<4x8xf32>, %r: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'trn.rms_norm_grad' op inferred type(s) 'tensor<4x8xf32>', 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>', 'tensor<4xf32>'}}
  // expected-error @+1 {{'trn.rms_norm_grad' op failed to infer returned types}}
  %g:2 = trn.rms_norm_grad %x, %x, %r, %w, axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

func.func @attention_rank1(%q: tensor<8xf32>) {
  // expected-error @+2 {{'trn.attention' op query, key and value need the same rank, at least 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %o:2 = trn.attention %q, %q, %q, scale = 1.0 : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<f32>)
  return
}

// -----

func.func @attention_rank_mismatch(%q: tensor<2x8x16xf32>, %k: tensor<8x16xf32>) {
  // expected-error @+2 {{'trn.attention' op query, key and value need the same rank, at least 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %o:2 = trn.attention %q, %k, %k, scale = 1.0 : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @attention_element_type(%q: tensor<8x16xf32>, %k: tensor<8x16xbf16>) {
  // expected-error @+2 {{'trn.attention' op query, key and value need the same element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %o:2 = trn.attention %q, %k, %k, scale = 1.0 : (tensor<8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @attention_batch(%q: tensor<2x8x16xf32>, %k: tensor<3x8x16xf32>) {
  // expected-error @+2 {{'trn.attention' op query, key and value need equal leading (batch) dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %o:2 = trn.attention %q, %k, %k, scale = 1.0 : (tensor<2x8x16xf32>, tensor<3x8x16xf32>, tensor<3x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @attention_head_size(%q: tensor<8x16xf32>, %k: tensor<8x32xf32>) {
  // expected-error @+2 {{'trn.attention' op query head size 16 differs from key head size 32}}
  // expected-error @+1 {{failed to infer returned types}}
  %o:2 = trn.attention %q, %k, %k, scale = 1.0 : (tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8xf32>)
  return
}

// -----

func.func @attention_kv_length(%q: tensor<8x16xf32>, %k: tensor<10x16xf32>, %v: tensor<12x16xf32>) {
  // expected-error @+2 {{'trn.attention' op key length 10 differs from value length 12}}
  // expected-error @+1 {{failed to infer returned types}}
  %o:2 = trn.attention %q, %k, %v, scale = 1.0 : (tensor<8x16xf32>, tensor<10x16xf32>, tensor<12x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @attention_result(%q: tensor<8x16xbf16>) {
  // expected-error @+2 {{'trn.attention' op inferred type(s) 'tensor<8x16xbf16>', 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<8x16xbf16>', 'tensor<8xbf16>'}}
  // expected-error @+1 {{'trn.attention' op failed to infer returned types}}
  %o:2 = trn.attention %q, %q, %q, scale = 1.0 : (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> (tensor<8x16xbf16>, tensor<8xbf16>)
  return
}

// -----

func.func @attention_seq_dim_last(%q: tensor<2x8x16xf32>) {
  // expected-error @+2 {{'trn.attention' op seq_dim 2 must be below the last dim of rank-3 operands}}
  // expected-error @+1 {{failed to infer returned types}}
  %o:2 = trn.attention %q, %q, %q, scale = 1.0 seq_dim = 2 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x16xf32>)
  return
}

// -----

func.func @attention_seq_dim_batch(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x3x16xf32>) {
  // expected-error @+2 {{'trn.attention' op query, key and value need equal leading (batch) dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %o:2 = trn.attention %q, %k, %k, scale = 1.0 seq_dim = 1 : (tensor<2x8x4x16xf32>, tensor<2x8x3x16xf32>, tensor<2x8x3x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_seq_dim_lse(%q: tensor<2x8x4x16xf32>, %lse: tensor<2x8x4xf32>) {
  // expected-error @+2 {{'trn.attention_grad' op lse must have type 'tensor<2x4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.attention_grad %q, %q, %q, %q, %lse, %q, scale = 1.0 seq_dim = 1 : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
  return
}

// -----

func.func @attention_causal_kind(%q: tensor<8x16xf32>) {
  // expected-error @+1 {{invalid properties {causal = true, scale = 1.000000e+00 : f64} for op trn.attention: Invalid attribute `causal` in property conversion: true}}
  %o:2 = "trn.attention"(%q, %q, %q) <{scale = 1.0 : f64, causal = true}> : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @attention_grad_output(%q: tensor<8x16xf32>, %o: tensor<8x8xf32>, %lse: tensor<8xf32>) {
  // expected-error @+2 {{'trn.attention_grad' op output and grad_output must have type 'tensor<8x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.attention_grad %q, %q, %q, %o, %lse, %o, scale = 1.0 : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @attention_grad_grad_output(%q: tensor<8x16xf32>, %do: tensor<8x16xbf16>, %lse: tensor<8xf32>) {
  // expected-error @+2 {{'trn.attention_grad' op output and grad_output must have type 'tensor<8x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.attention_grad %q, %q, %q, %q, %lse, %do, scale = 1.0 : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16xbf16>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @attention_grad_lse(%q: tensor<8x16xbf16>, %lse: tensor<8xbf16>) {
  // expected-error @+2 {{'trn.attention_grad' op lse must have type 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.attention_grad %q, %q, %q, %q, %lse, %q, scale = 1.0 : (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8xbf16>, tensor<8x16xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>)
  return
}

// -----

func.func @attention_grad_shapes(%q: tensor<8x16xf32>, %k: tensor<8x32xf32>, %lse: tensor<8xf32>) {
  // expected-error @+2 {{'trn.attention_grad' op query head size 16 differs from key head size 32}}
  // expected-error @+1 {{failed to infer returned types}}
  %g:3 = trn.attention_grad %q, %k, %k, %q, %lse, %q, scale = 1.0 : (tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>)
  return
}

// -----

func.func @attention_grad_result(%q: tensor<8x16xf32>, %lse: tensor<8xf32>) {
  // expected-error @+2 {{'trn.attention_grad' op inferred type(s) 'tensor<8x16xf32>', 'tensor<8x16xf32>', 'tensor<8x16xf32>' are incompatible with return type(s) of operation 'tensor<8x16xf32>', 'tensor<8x16xf32>', 'tensor<8x8xf32>'}}
  // expected-error @+1 {{'trn.attention_grad' op failed to infer returned types}}
  %g:3 = trn.attention_grad %q, %q, %q, %q, %lse, %q, scale = 1.0 : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x8xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

func.func @cross_entropy_logits_rank(%l: tensor<2x4x10xf32>, %y: tensor<2xi64>) {
  // expected-error @+2 {{'trn.cross_entropy' op logits must be [N, C], got 'tensor<2x4x10xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.cross_entropy mean %l, %y : (tensor<2x4x10xf32>, tensor<2xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels_shape(%l: tensor<4x10xf32>, %y: tensor<5xi64>) {
  // expected-error @+2 {{'trn.cross_entropy' op labels must be [4] to match the logits, got 'tensor<5xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.cross_entropy mean %l, %y : (tensor<4x10xf32>, tensor<5xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels_rank(%l: tensor<4x10xf32>, %y: tensor<4x1xi64>) {
  // expected-error @+2 {{'trn.cross_entropy' op labels must be [4] to match the logits, got 'tensor<4x1xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.cross_entropy mean %l, %y : (tensor<4x10xf32>, tensor<4x1xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_float_labels(%l: tensor<4x10xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'trn.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = trn.cross_entropy mean %l, %y : (tensor<4x10xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_result_none(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+2 {{'trn.cross_entropy' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{'trn.cross_entropy' op failed to infer returned types}}
  %0 = trn.cross_entropy none %l, %y : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_result_mean(%l: tensor<4x10xbf16>, %y: tensor<4xi64>) {
  // expected-error @+2 {{'trn.cross_entropy' op inferred type(s) 'tensor<bf16>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{'trn.cross_entropy' op failed to infer returned types}}
  %0 = trn.cross_entropy mean %l, %y : (tensor<4x10xbf16>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_bad_reduction(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{custom op 'trn.cross_entropy' expected string or keyword containing one of the following enum values for attribute 'reduction' [none, mean, sum]}}
  %0 = trn.cross_entropy batchmean %l, %y : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_ignore_index_kind(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'trn.cross_entropy' op attribute 'ignore_index' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = trn.cross_entropy mean %l, %y {ignore_index = 1.0 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_loss(%l: tensor<4x10xf32>, %y: tensor<4xi64>, %g: tensor<4xf32>) {
  // expected-error @+2 {{'trn.cross_entropy_grad' op grad_loss must have type 'tensor<f32>' (the loss type for this reduction), got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.cross_entropy_grad mean %l, %y, %g : (tensor<4x10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x10xf32>
  return
}

// -----

func.func @cross_entropy_grad_loss_none(%l: tensor<4x10xf32>, %y: tensor<4xi64>, %g: tensor<f32>) {
  // expected-error @+2 {{'trn.cross_entropy_grad' op grad_loss must have type 'tensor<4xf32>' (the loss type for this reduction), got 'tensor<f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.cross_entropy_grad none %l, %y, %g : (tensor<4x10xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x10xf32>
  return
}

// -----

func.func @cross_entropy_grad_labels(%l: tensor<4x10xf32>, %y: tensor<3xi64>, %g: tensor<f32>) {
  // expected-error @+2 {{'trn.cross_entropy_grad' op labels must be [4] to match the logits, got 'tensor<3xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.cross_entropy_grad sum %l, %y, %g : (tensor<4x10xf32>, tensor<3xi64>, tensor<f32>) -> tensor<4x10xf32>
  return
}

// -----

func.func @cross_entropy_grad_logits(%l: tensor<10xf32>, %y: tensor<4xi64>, %g: tensor<f32>) {
  // expected-error @+2 {{'trn.cross_entropy_grad' op logits must be [N, C], got 'tensor<10xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = trn.cross_entropy_grad sum %l, %y, %g : (tensor<10xf32>, tensor<4xi64>, tensor<f32>) -> tensor<10xf32>
  return
}

// -----

func.func @cross_entropy_grad_result(%l: tensor<4x10xf32>, %y: tensor<4xi64>, %g: tensor<f32>) {
  // expected-error @+2 {{'trn.cross_entropy_grad' op inferred type(s) 'tensor<4x10xf32>' are incompatible with return type(s) of operation 'tensor<4x10xbf16>'}}
  // expected-error @+1 {{'trn.cross_entropy_grad' op failed to infer returned types}}
  %0 = trn.cross_entropy_grad sum %l, %y, %g : (tensor<4x10xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x10xbf16>
  return
}

// -----

func.func @rotate_half_odd(%x: tensor<4x7xf32>) {
  // expected-error @+1 {{'trn.rotate_half' op rotates the halves of the last dimension, which must have a static even size, got 'tensor<4x7xf32>'}}
  %0 = trn.rotate_half %x : tensor<4x7xf32>
  return
}

// -----

func.func @rotate_half_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{'trn.rotate_half' op needs a tensor of rank 1 or more, got 'tensor<f32>'}}
  %0 = trn.rotate_half %x : tensor<f32>
  return
}
