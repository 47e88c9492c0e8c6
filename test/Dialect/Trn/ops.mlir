// RUN: trn-opt %s | trn-opt | FileCheck %s
// RUN: trn-opt %s --mlir-print-op-generic | trn-opt | FileCheck %s
// RUN: trn-opt %s --verify-roundtrip | FileCheck %s

// Round-trip of every trn op: the pretty form, and the generic form read back
// into the pretty form, print the same; --verify-roundtrip also checks that
// the generic form and bytecode read back to the same IR.

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary_float
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
func.func @unary_float(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NEXT: %[[NEG:.*]] = trn.neg %[[X]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[ABS:.*]] = trn.abs %[[NEG]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[EXP:.*]] = trn.exp %[[ABS]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[LOG:.*]] = trn.log %[[EXP]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[LOG1P:.*]] = trn.log1p %[[LOG]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[TANH:.*]] = trn.tanh %[[LOG1P]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[SIG:.*]] = trn.sigmoid %[[TANH]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[SQRT:.*]] = trn.sqrt %[[SIG]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[RSQRT:.*]] = trn.rsqrt %[[SQRT]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[RCP:.*]] = trn.reciprocal %[[RSQRT]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[ERF:.*]] = trn.erf %[[RCP]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[RELU:.*]] = trn.relu %[[ERF]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[SILU:.*]] = trn.silu %[[RELU]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[SIN:.*]] = trn.sin %[[SILU]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[COS:.*]] = trn.cos %[[SIN]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[FLOOR:.*]] = trn.floor %[[COS]] : tensor<2x3xf32>
  // CHECK-NEXT: %[[SIGN:.*]] = trn.sign %[[FLOOR]] : tensor<2x3xf32>
  // CHECK-NEXT: return %[[SIGN]] : tensor<2x3xf32>
  %0 = trn.neg %x : tensor<2x3xf32>
  %1 = trn.abs %0 : tensor<2x3xf32>
  %2 = trn.exp %1 : tensor<2x3xf32>
  %3 = trn.log %2 : tensor<2x3xf32>
  %4 = trn.log1p %3 : tensor<2x3xf32>
  %5 = trn.tanh %4 : tensor<2x3xf32>
  %6 = trn.sigmoid %5 : tensor<2x3xf32>
  %7 = trn.sqrt %6 : tensor<2x3xf32>
  %8 = trn.rsqrt %7 : tensor<2x3xf32>
  %9 = trn.reciprocal %8 : tensor<2x3xf32>
  %10 = trn.erf %9 : tensor<2x3xf32>
  %11 = trn.relu %10 : tensor<2x3xf32>
  %12 = trn.silu %11 : tensor<2x3xf32>
  %13 = trn.sin %12 : tensor<2x3xf32>
  %14 = trn.cos %13 : tensor<2x3xf32>
  %15 = trn.floor %14 : tensor<2x3xf32>
  %16 = trn.sign %15 : tensor<2x3xf32>
  return %16 : tensor<2x3xf32>
}

// Low-precision float element types and 0-d tensors are accepted too.
// CHECK-LABEL: func.func @unary_low_precision
// CHECK-SAME: (%[[A:[^:]*]]: tensor<8xbf16>, %[[B:[^:]*]]: tensor<f16>, %[[C:[^:]*]]: tensor<4xf8E4M3FN>, %[[D:[^:]*]]: tensor<4xf8E5M2>)
func.func @unary_low_precision(%a: tensor<8xbf16>, %b: tensor<f16>,
                               %c: tensor<4xf8E4M3FN>, %d: tensor<4xf8E5M2>)
    -> (tensor<8xbf16>, tensor<f16>, tensor<4xf8E4M3FN>, tensor<4xf8E5M2>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.exp %[[A]] : tensor<8xbf16>
  // CHECK-NEXT: %[[R1:.*]] = trn.rsqrt %[[B]] : tensor<f16>
  // CHECK-NEXT: %[[R2:.*]] = trn.relu %[[C]] : tensor<4xf8E4M3FN>
  // CHECK-NEXT: %[[R3:.*]] = trn.tanh %[[D]] : tensor<4xf8E5M2>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
  %0 = trn.exp %a : tensor<8xbf16>
  %1 = trn.rsqrt %b : tensor<f16>
  %2 = trn.relu %c : tensor<4xf8E4M3FN>
  %3 = trn.tanh %d : tensor<4xf8E5M2>
  return %0, %1, %2, %3 : tensor<8xbf16>, tensor<f16>, tensor<4xf8E4M3FN>, tensor<4xf8E5M2>
}

// neg, abs and sign also take integers.
// CHECK-LABEL: func.func @unary_int
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4xi32>, %[[B:[^:]*]]: tensor<4xi64>)
func.func @unary_int(%a: tensor<4xi32>, %b: tensor<4xi64>) -> (tensor<4xi32>, tensor<4xi64>, tensor<4xi64>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.neg %[[A]] : tensor<4xi32>
  // CHECK-NEXT: %[[R1:.*]] = trn.abs %[[B]] : tensor<4xi64>
  // CHECK-NEXT: %[[R2:.*]] = trn.sign %[[B]] : tensor<4xi64>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]]
  %0 = trn.neg %a : tensor<4xi32>
  %1 = trn.abs %b : tensor<4xi64>
  %2 = trn.sign %b : tensor<4xi64>
  return %0, %1, %2 : tensor<4xi32>, tensor<4xi64>, tensor<4xi64>
}

// CHECK-LABEL: func.func @not
// CHECK-SAME: (%[[P:.*]]: tensor<2x2xi1>)
func.func @not(%p: tensor<2x2xi1>) -> tensor<2x2xi1> {
  // CHECK-NEXT: %[[R:.*]] = trn.not %[[P]] : tensor<2x2xi1>
  // CHECK-NEXT: return %[[R]]
  %0 = trn.not %p : tensor<2x2xi1>
  return %0 : tensor<2x2xi1>
}

// The default approximation (none) is elided when printing.
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
func.func @gelu(%x: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.gelu %[[X]] : tensor<4xbf16>
  // CHECK-NEXT: %[[R1:.*]] = trn.gelu %[[X]] : tensor<4xbf16>
  // CHECK-NEXT: %[[R2:.*]] = trn.gelu %[[X]] approximate = tanh : tensor<4xbf16>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]]
  %0 = trn.gelu %x : tensor<4xbf16>
  %1 = trn.gelu %x approximate = none : tensor<4xbf16>
  %2 = trn.gelu %x approximate = tanh : tensor<4xbf16>
  return %0, %1, %2 : tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>
}

// CHECK-LABEL: func.func @gelu_grad
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<4xf32>, %[[X:[^:]*]]: tensor<4xf32>)
func.func @gelu_grad(%dy: tensor<4xf32>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.gelu_grad %[[DY]], %[[X]] : tensor<4xf32>
  // CHECK-NEXT: %[[R1:.*]] = trn.gelu_grad %[[DY]], %[[X]] approximate = tanh : tensor<4xf32>
  // CHECK-NEXT: return %[[R0]], %[[R1]]
  %0 = trn.gelu_grad %dy, %x : tensor<4xf32>
  %1 = trn.gelu_grad %dy, %x approximate = tanh : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops, compare, select, convert
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary_float
// CHECK-SAME: (%[[A:[^:]*]]: tensor<3xf32>, %[[B:[^:]*]]: tensor<3xf32>)
func.func @binary_float(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK-NEXT: %[[ADD:.*]] = trn.add %[[A]], %[[B]] : tensor<3xf32>
  // CHECK-NEXT: %[[SUB:.*]] = trn.sub %[[ADD]], %[[B]] : tensor<3xf32>
  // CHECK-NEXT: %[[MUL:.*]] = trn.mul %[[SUB]], %[[B]] : tensor<3xf32>
  // CHECK-NEXT: %[[DIV:.*]] = trn.div %[[MUL]], %[[B]] : tensor<3xf32>
  // CHECK-NEXT: %[[POW:.*]] = trn.pow %[[DIV]], %[[B]] : tensor<3xf32>
  // CHECK-NEXT: %[[MAX:.*]] = trn.max %[[POW]], %[[B]] : tensor<3xf32>
  // CHECK-NEXT: %[[MIN:.*]] = trn.min %[[MAX]], %[[B]] : tensor<3xf32>
  // CHECK-NEXT: return %[[MIN]]
  %0 = trn.add %a, %b : tensor<3xf32>
  %1 = trn.sub %0, %b : tensor<3xf32>
  %2 = trn.mul %1, %b : tensor<3xf32>
  %3 = trn.div %2, %b : tensor<3xf32>
  %4 = trn.pow %3, %b : tensor<3xf32>
  %5 = trn.max %4, %b : tensor<3xf32>
  %6 = trn.min %5, %b : tensor<3xf32>
  return %6 : tensor<3xf32>
}

// CHECK-LABEL: func.func @binary_int
// CHECK-SAME: (%[[A:[^:]*]]: tensor<3xi32>, %[[B:[^:]*]]: tensor<3xi32>)
func.func @binary_int(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {
  // CHECK-NEXT: %[[ADD:.*]] = trn.add %[[A]], %[[B]] : tensor<3xi32>
  // CHECK-NEXT: %[[SUB:.*]] = trn.sub %[[ADD]], %[[B]] : tensor<3xi32>
  // CHECK-NEXT: %[[MUL:.*]] = trn.mul %[[SUB]], %[[B]] : tensor<3xi32>
  // CHECK-NEXT: %[[DIV:.*]] = trn.div %[[MUL]], %[[B]] : tensor<3xi32>
  // CHECK-NEXT: %[[MAX:.*]] = trn.max %[[DIV]], %[[B]] : tensor<3xi32>
  // CHECK-NEXT: %[[MIN:.*]] = trn.min %[[MAX]], %[[B]] : tensor<3xi32>
  // CHECK-NEXT: %[[AND:.*]] = trn.and %[[MIN]], %[[B]] : tensor<3xi32>
  // CHECK-NEXT: %[[OR:.*]] = trn.or %[[AND]], %[[B]] : tensor<3xi32>
  // CHECK-NEXT: return %[[OR]]
  %0 = trn.add %a, %b : tensor<3xi32>
  %1 = trn.sub %0, %b : tensor<3xi32>
  %2 = trn.mul %1, %b : tensor<3xi32>
  %3 = trn.div %2, %b : tensor<3xi32>
  %4 = trn.max %3, %b : tensor<3xi32>
  %5 = trn.min %4, %b : tensor<3xi32>
  %6 = trn.and %5, %b : tensor<3xi32>
  %7 = trn.or %6, %b : tensor<3xi32>
  return %7 : tensor<3xi32>
}

// CHECK-LABEL: func.func @binary_bool
// CHECK-SAME: (%[[A:[^:]*]]: tensor<3xi1>, %[[B:[^:]*]]: tensor<3xi1>, %[[C:[^:]*]]: tensor<3xi64>)
func.func @binary_bool(%a: tensor<3xi1>, %b: tensor<3xi1>, %c: tensor<3xi64>) -> (tensor<3xi1>, tensor<3xi64>) {
  // CHECK-NEXT: %[[AND:.*]] = trn.and %[[A]], %[[B]] : tensor<3xi1>
  // CHECK-NEXT: %[[OR:.*]] = trn.or %[[AND]], %[[B]] : tensor<3xi1>
  // CHECK-NEXT: %[[ADD:.*]] = trn.add %[[C]], %[[C]] : tensor<3xi64>
  // CHECK-NEXT: return %[[OR]], %[[ADD]]
  %0 = trn.and %a, %b : tensor<3xi1>
  %1 = trn.or %0, %b : tensor<3xi1>
  %2 = trn.add %c, %c : tensor<3xi64>
  return %1, %2 : tensor<3xi1>, tensor<3xi64>
}

// CHECK-LABEL: func.func @compare
// CHECK-SAME: (%[[A:[^:]*]]: tensor<2x3xbf16>, %[[B:[^:]*]]: tensor<2x3xbf16>, %[[I:[^:]*]]: tensor<4xi32>, %[[P:[^:]*]]: tensor<i1>)
func.func @compare(%a: tensor<2x3xbf16>, %b: tensor<2x3xbf16>, %i: tensor<4xi32>, %p: tensor<i1>)
    -> (tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>,
        tensor<2x3xi1>, tensor<2x3xi1>, tensor<4xi1>, tensor<i1>) {
  // CHECK-NEXT: %[[EQ:.*]] = trn.compare eq, %[[A]], %[[B]] : tensor<2x3xbf16>
  // CHECK-NEXT: %[[NE:.*]] = trn.compare ne, %[[A]], %[[B]] : tensor<2x3xbf16>
  // CHECK-NEXT: %[[LT:.*]] = trn.compare lt, %[[A]], %[[B]] : tensor<2x3xbf16>
  // CHECK-NEXT: %[[LE:.*]] = trn.compare le, %[[A]], %[[B]] : tensor<2x3xbf16>
  // CHECK-NEXT: %[[GT:.*]] = trn.compare gt, %[[A]], %[[B]] : tensor<2x3xbf16>
  // CHECK-NEXT: %[[GE:.*]] = trn.compare ge, %[[A]], %[[B]] : tensor<2x3xbf16>
  // CHECK-NEXT: %[[II:.*]] = trn.compare lt, %[[I]], %[[I]] : tensor<4xi32>
  // CHECK-NEXT: %[[PP:.*]] = trn.compare eq, %[[P]], %[[P]] : tensor<i1>
  // CHECK-NEXT: return %[[EQ]], %[[NE]], %[[LT]], %[[LE]], %[[GT]], %[[GE]], %[[II]], %[[PP]]
  %0 = trn.compare eq, %a, %b : tensor<2x3xbf16>
  %1 = trn.compare ne, %a, %b : tensor<2x3xbf16>
  %2 = trn.compare lt, %a, %b : tensor<2x3xbf16>
  %3 = trn.compare le, %a, %b : tensor<2x3xbf16>
  %4 = trn.compare gt, %a, %b : tensor<2x3xbf16>
  %5 = trn.compare ge, %a, %b : tensor<2x3xbf16>
  %6 = trn.compare lt, %i, %i : tensor<4xi32>
  %7 = trn.compare eq, %p, %p : tensor<i1>
  return %0, %1, %2, %3, %4, %5, %6, %7
      : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>,
        tensor<2x3xi1>, tensor<2x3xi1>, tensor<4xi1>, tensor<i1>
}

// CHECK-LABEL: func.func @select
// CHECK-SAME: (%[[P:[^:]*]]: tensor<2x3xi1>, %[[A:[^:]*]]: tensor<2x3xf32>, %[[B:[^:]*]]: tensor<2x3xf32>, %[[I:[^:]*]]: tensor<2x3xi64>)
func.func @select(%p: tensor<2x3xi1>, %a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %i: tensor<2x3xi64>)
    -> (tensor<2x3xf32>, tensor<2x3xi64>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.select %[[P]], %[[A]], %[[B]] : tensor<2x3xi1>, tensor<2x3xf32>
  // CHECK-NEXT: %[[R1:.*]] = trn.select %[[P]], %[[I]], %[[I]] : tensor<2x3xi1>, tensor<2x3xi64>
  // CHECK-NEXT: return %[[R0]], %[[R1]]
  %0 = trn.select %p, %a, %b : tensor<2x3xi1>, tensor<2x3xf32>
  %1 = trn.select %p, %i, %i : tensor<2x3xi1>, tensor<2x3xi64>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xi64>
}

// CHECK-LABEL: func.func @convert
// CHECK-SAME: (%[[X:.*]]: tensor<2x2xf32>)
func.func @convert(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  // CHECK-NEXT: %[[BF16:.*]] = trn.convert %[[X]] : tensor<2x2xf32> -> tensor<2x2xbf16>
  // CHECK-NEXT: %[[F16:.*]] = trn.convert %[[BF16]] : tensor<2x2xbf16> -> tensor<2x2xf16>
  // CHECK-NEXT: %[[E4:.*]] = trn.convert %[[F16]] : tensor<2x2xf16> -> tensor<2x2xf8E4M3FN>
  // CHECK-NEXT: %[[E5:.*]] = trn.convert %[[E4]] : tensor<2x2xf8E4M3FN> -> tensor<2x2xf8E5M2>
  // CHECK-NEXT: %[[I32:.*]] = trn.convert %[[E5]] : tensor<2x2xf8E5M2> -> tensor<2x2xi32>
  // CHECK-NEXT: %[[I64:.*]] = trn.convert %[[I32]] : tensor<2x2xi32> -> tensor<2x2xi64>
  // CHECK-NEXT: %[[I1:.*]] = trn.convert %[[I64]] : tensor<2x2xi64> -> tensor<2x2xi1>
  // CHECK-NEXT: %[[BACK:.*]] = trn.convert %[[I1]] : tensor<2x2xi1> -> tensor<2x2xf32>
  // CHECK-NEXT: %[[SAME:.*]] = trn.convert %[[X]] : tensor<2x2xf32> -> tensor<2x2xf32>
  // CHECK-NEXT: return %[[BACK]], %[[SAME]]
  %0 = trn.convert %x : tensor<2x2xf32> -> tensor<2x2xbf16>
  %1 = trn.convert %0 : tensor<2x2xbf16> -> tensor<2x2xf16>
  %2 = trn.convert %1 : tensor<2x2xf16> -> tensor<2x2xf8E4M3FN>
  %3 = trn.convert %2 : tensor<2x2xf8E4M3FN> -> tensor<2x2xf8E5M2>
  %4 = trn.convert %3 : tensor<2x2xf8E5M2> -> tensor<2x2xi32>
  %5 = trn.convert %4 : tensor<2x2xi32> -> tensor<2x2xi64>
  %6 = trn.convert %5 : tensor<2x2xi64> -> tensor<2x2xi1>
  %7 = trn.convert %6 : tensor<2x2xi1> -> tensor<2x2xf32>
  %8 = trn.convert %x : tensor<2x2xf32> -> tensor<2x2xf32>
  return %7, %8 : tensor<2x2xf32>, tensor<2x2xf32>
}

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @constant
func.func @constant() {
  // CHECK-NEXT: trn.constant dense<1.000000e+00> : tensor<2x3xf32>
  // CHECK-NEXT: trn.constant dense<[1.000000e+00, -2.500000e+00, 0.000000e+00]> : tensor<3xf32>
  // CHECK-NEXT: trn.constant dense<-0.000000e+00> : tensor<f32>
  // CHECK-NEXT: trn.constant dense<1.250000e-01> : tensor<4xbf16>
  // CHECK-NEXT: trn.constant dense<[1.000000e+00, 3.000000e+00]> : tensor<2xbf16>
  // CHECK-NEXT: trn.constant dense<[0.000000e+00, 6.550400e+04]> : tensor<2xf16>
  // CHECK-NEXT: trn.constant dense<4.480000e+02> : tensor<2xf8E4M3FN>
  // CHECK-NEXT: trn.constant dense<[1.000000e+00, -2.500000e+00]> : tensor<2xf8E4M3FN>
  // CHECK-NEXT: trn.constant dense<[5.734400e+04, 1.525880e-05]> : tensor<2xf8E5M2>
  // CHECK-NEXT: trn.constant dense<true> : tensor<4xi1>
  // CHECK-NEXT: trn.constant dense<[true, false]> : tensor<2xi1>
  // CHECK-NEXT: trn.constant dense<7> : tensor<2x2xi32>
  // CHECK-NEXT: trn.constant dense<[-9223372036854775808, 9223372036854775807]> : tensor<2xi64>
  // CHECK-NEXT: trn.constant dense<> : tensor<0xf32>
  %0 = trn.constant dense<1.0> : tensor<2x3xf32>
  %1 = trn.constant dense<[1.0, -2.5, 0.0]> : tensor<3xf32>
  %2 = trn.constant dense<-0.0> : tensor<f32>
  %3 = trn.constant dense<0.125> : tensor<4xbf16>
  %4 = trn.constant dense<[1.0, 3.0]> : tensor<2xbf16>
  %5 = trn.constant dense<[0.0, 65504.0]> : tensor<2xf16>
  %6 = trn.constant dense<448.0> : tensor<2xf8E4M3FN>
  %7 = trn.constant dense<[1.0, -2.5]> : tensor<2xf8E4M3FN>
  %8 = trn.constant dense<[57344.0, 1.52587890625e-05]> : tensor<2xf8E5M2>
  %9 = trn.constant dense<true> : tensor<4xi1>
  %10 = trn.constant dense<[true, false]> : tensor<2xi1>
  %11 = trn.constant dense<7> : tensor<2x2xi32>
  %12 = trn.constant dense<[-9223372036854775808, 9223372036854775807]> : tensor<2xi64>
  %13 = trn.constant dense<> : tensor<0xf32>
  return
}

// CHECK-LABEL: func.func @iota
func.func @iota() -> (tensor<4xi32>, tensor<2x3xf32>, tensor<2x3xi64>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.iota dim = 0 : tensor<4xi32>
  // CHECK-NEXT: %[[R1:.*]] = trn.iota dim = 1 : tensor<2x3xf32>
  // CHECK-NEXT: %[[R2:.*]] = trn.iota dim = 0 : tensor<2x3xi64>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]]
  %0 = trn.iota dim = 0 : tensor<4xi32>
  %1 = trn.iota dim = 1 : tensor<2x3xf32>
  %2 = trn.iota dim = 0 : tensor<2x3xi64>
  return %0, %1, %2 : tensor<4xi32>, tensor<2x3xf32>, tensor<2x3xi64>
}

// The default low = 0 and high = 1 are elided when printing.
// CHECK-LABEL: func.func @rng_uniform
// CHECK-SAME: (%[[S:.*]]: tensor<i64>)
func.func @rng_uniform(%seed: tensor<i64>) -> (tensor<4xf32>, tensor<2x3xbf16>, tensor<8xf32>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.rng_uniform %[[S]], stream = 0 : tensor<i64> -> tensor<4xf32>
  // CHECK-NEXT: %[[R1:.*]] = trn.rng_uniform %[[S]], stream = 7 {high = 2.000000e+00 : f64, low = -1.000000e+00 : f64} : tensor<i64> -> tensor<2x3xbf16>
  // CHECK-NEXT: %[[R2:.*]] = trn.rng_uniform %[[S]], stream = 4294967295 {low = 5.000000e-01 : f64} : tensor<i64> -> tensor<8xf32>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]]
  %0 = trn.rng_uniform %seed, stream = 0 : tensor<i64> -> tensor<4xf32>
  %1 = trn.rng_uniform %seed, stream = 7 {low = -1.0 : f64, high = 2.0 : f64} : tensor<i64> -> tensor<2x3xbf16>
  %2 = trn.rng_uniform %seed, stream = 4294967295 {low = 0.5 : f64, high = 1.0 : f64} : tensor<i64> -> tensor<8xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<2x3xbf16>, tensor<8xf32>
}

// CHECK-LABEL: func.func @rng_bernoulli
// CHECK-SAME: (%[[S:.*]]: tensor<i64>)
func.func @rng_bernoulli(%seed: tensor<i64>) -> (tensor<4x4xi1>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf16>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.rng_bernoulli %[[S]], stream = 1, p = 9.000000e-01 : tensor<i64> -> tensor<4x4xi1>
  // CHECK-NEXT: %[[R1:.*]] = trn.rng_bernoulli %[[S]], stream = 2, p = 0.000000e+00 : tensor<i64> -> tensor<4xf32>
  // CHECK-NEXT: %[[R2:.*]] = trn.rng_bernoulli %[[S]], stream = 3, p = 1.000000e+00 : tensor<i64> -> tensor<4xbf16>
  // CHECK-NEXT: %[[R3:.*]] = trn.rng_bernoulli %[[S]], stream = 4, p = 5.000000e-01 : tensor<i64> -> tensor<4xf16>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
  %0 = trn.rng_bernoulli %seed, stream = 1, p = 0.9 : tensor<i64> -> tensor<4x4xi1>
  %1 = trn.rng_bernoulli %seed, stream = 2, p = 0.0 : tensor<i64> -> tensor<4xf32>
  %2 = trn.rng_bernoulli %seed, stream = 3, p = 1.0 : tensor<i64> -> tensor<4xbf16>
  %3 = trn.rng_bernoulli %seed, stream = 4, p = 0.5 : tensor<i64> -> tensor<4xf16>
  return %0, %1, %2, %3 : tensor<4x4xi1>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf16>
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @broadcast_in_dim
// CHECK-SAME: (%[[A:[^:]*]]: tensor<3xf32>, %[[B:[^:]*]]: tensor<1x3xi1>, %[[C:[^:]*]]: tensor<f32>)
func.func @broadcast_in_dim(%a: tensor<3xf32>, %b: tensor<1x3xi1>, %c: tensor<f32>)
    -> (tensor<2x3xf32>, tensor<4x3xi1>, tensor<2x2xf32>, tensor<3xf32>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.broadcast_in_dim %[[A]], dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %[[R1:.*]] = trn.broadcast_in_dim %[[B]], dims = [0, 1] : (tensor<1x3xi1>) -> tensor<4x3xi1>
  // CHECK-NEXT: %[[R2:.*]] = trn.broadcast_in_dim %[[C]], dims = [] : (tensor<f32>) -> tensor<2x2xf32>
  // CHECK-NEXT: %[[R3:.*]] = trn.broadcast_in_dim %[[A]], dims = [0] : (tensor<3xf32>) -> tensor<3xf32>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
  %0 = trn.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %1 = trn.broadcast_in_dim %b, dims = [0, 1] : (tensor<1x3xi1>) -> tensor<4x3xi1>
  %2 = trn.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
  %3 = trn.broadcast_in_dim %a, dims = [0] : (tensor<3xf32>) -> tensor<3xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<4x3xi1>, tensor<2x2xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x4xbf16>)
func.func @reshape(%a: tensor<2x3x4xbf16>) -> (tensor<6x4xbf16>, tensor<24xbf16>, tensor<1x1xbf16>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.reshape %[[A]] : (tensor<2x3x4xbf16>) -> tensor<6x4xbf16>
  // CHECK-NEXT: %[[R1:.*]] = trn.reshape %[[R0]] : (tensor<6x4xbf16>) -> tensor<24xbf16>
  // CHECK-NEXT: %[[S:.*]] = trn.slice %[[R1]]
  // CHECK-NEXT: %[[R2:.*]] = trn.reshape %[[S]] : (tensor<1xbf16>) -> tensor<bf16>
  // CHECK-NEXT: %[[R3:.*]] = trn.reshape %[[R2]] : (tensor<bf16>) -> tensor<1x1xbf16>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R3]]
  %0 = trn.reshape %a : (tensor<2x3x4xbf16>) -> tensor<6x4xbf16>
  %1 = trn.reshape %0 : (tensor<6x4xbf16>) -> tensor<24xbf16>
  %2 = trn.slice %1, start = [0], limit = [1], strides = [1] : (tensor<24xbf16>) -> tensor<1xbf16>
  %3 = trn.reshape %2 : (tensor<1xbf16>) -> tensor<bf16>
  %4 = trn.reshape %3 : (tensor<bf16>) -> tensor<1x1xbf16>
  return %0, %1, %4 : tensor<6x4xbf16>, tensor<24xbf16>, tensor<1x1xbf16>
}

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x4xf32>)
func.func @transpose(%a: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.transpose %[[A]], perm = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK-NEXT: %[[R1:.*]] = trn.transpose %[[A]], perm = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: return %[[R0]], %[[R1]]
  %0 = trn.transpose %a, perm = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = trn.transpose %a, perm = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0, %1 : tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[A:.*]]: tensor<8x6xi32>)
func.func @slice(%a: tensor<8x6xi32>) -> (tensor<3x2xi32>, tensor<0x6xi32>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.slice %[[A]], start = [1, 0], limit = [7, 6], strides = [2, 3] : (tensor<8x6xi32>) -> tensor<3x2xi32>
  // CHECK-NEXT: %[[R1:.*]] = trn.slice %[[A]], start = [4, 0], limit = [4, 6], strides = [1, 1] : (tensor<8x6xi32>) -> tensor<0x6xi32>
  // CHECK-NEXT: return %[[R0]], %[[R1]]
  %0 = trn.slice %a, start = [1, 0], limit = [7, 6], strides = [2, 3] : (tensor<8x6xi32>) -> tensor<3x2xi32>
  %1 = trn.slice %a, start = [4, 0], limit = [4, 6], strides = [1, 1] : (tensor<8x6xi32>) -> tensor<0x6xi32>
  return %0, %1 : tensor<3x2xi32>, tensor<0x6xi32>
}

// CHECK-LABEL: func.func @concatenate
// CHECK-SAME: (%[[A:[^:]*]]: tensor<2x3xf16>, %[[B:[^:]*]]: tensor<2x5xf16>, %[[C:[^:]*]]: tensor<0x3xf16>)
func.func @concatenate(%a: tensor<2x3xf16>, %b: tensor<2x5xf16>, %c: tensor<0x3xf16>)
    -> (tensor<2x11xf16>, tensor<4x3xf16>, tensor<2x3xf16>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.concatenate %[[A]], %[[B]], %[[A]] dim = 1 : (tensor<2x3xf16>, tensor<2x5xf16>, tensor<2x3xf16>) -> tensor<2x11xf16>
  // CHECK-NEXT: %[[R1:.*]] = trn.concatenate %[[A]], %[[C]], %[[A]] dim = 0 : (tensor<2x3xf16>, tensor<0x3xf16>, tensor<2x3xf16>) -> tensor<4x3xf16>
  // CHECK-NEXT: %[[R2:.*]] = trn.concatenate %[[A]] dim = 0 : (tensor<2x3xf16>) -> tensor<2x3xf16>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]]
  %0 = trn.concatenate %a, %b, %a dim = 1 : (tensor<2x3xf16>, tensor<2x5xf16>, tensor<2x3xf16>) -> tensor<2x11xf16>
  %1 = trn.concatenate %a, %c, %a dim = 0 : (tensor<2x3xf16>, tensor<0x3xf16>, tensor<2x3xf16>) -> tensor<4x3xf16>
  %2 = trn.concatenate %a dim = 0 : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %0, %1, %2 : tensor<2x11xf16>, tensor<4x3xf16>, tensor<2x3xf16>
}

// CHECK-LABEL: func.func @pad
// CHECK-SAME: (%[[A:[^:]*]]: tensor<2x3xf32>, %[[B:[^:]*]]: tensor<4xi1>)
func.func @pad(%a: tensor<2x3xf32>, %b: tensor<4xi1>) -> (tensor<5x4xf32>, tensor<6xi1>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.pad %[[A]], low = [1, 0], high = [2, 1], value = -1.000000e+00 : (tensor<2x3xf32>) -> tensor<5x4xf32>
  // CHECK-NEXT: %[[R1:.*]] = trn.pad %[[B]], low = [2], high = [0], value = 1.000000e+00 : (tensor<4xi1>) -> tensor<6xi1>
  // CHECK-NEXT: return %[[R0]], %[[R1]]
  %0 = trn.pad %a, low = [1, 0], high = [2, 1], value = -1.0 : (tensor<2x3xf32>) -> tensor<5x4xf32>
  %1 = trn.pad %b, low = [2], high = [0], value = 1.0 : (tensor<4xi1>) -> tensor<6xi1>
  return %0, %1 : tensor<5x4xf32>, tensor<6xi1>
}

// An embedding lookup (axis 0) and the label logit of each row (batch_dims 1).
// The default batch_dims = 0 is elided when printing.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[T:[^:]*]]: tensor<100x16xbf16>, %[[IDS:[^:]*]]: tensor<2x8xi32>, %[[L:[^:]*]]: tensor<4x10xf32>, %[[Y:[^:]*]]: tensor<4xi64>)
func.func @gather(%table: tensor<100x16xbf16>, %ids: tensor<2x8xi32>,
                  %logits: tensor<4x10xf32>, %labels: tensor<4xi64>)
    -> (tensor<2x8x16xbf16>, tensor<4xf32>, tensor<2x8x16xbf16>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.gather %[[T]][%[[IDS]]], axis = 0 : (tensor<100x16xbf16>, tensor<2x8xi32>) -> tensor<2x8x16xbf16>
  // CHECK-NEXT: %[[R1:.*]] = trn.gather %[[L]][%[[Y]]], axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  // CHECK-NEXT: %[[R2:.*]] = trn.gather %[[T]][%[[IDS]]], axis = 0 : (tensor<100x16xbf16>, tensor<2x8xi32>) -> tensor<2x8x16xbf16>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]]
  %0 = trn.gather %table[%ids], axis = 0 : (tensor<100x16xbf16>, tensor<2x8xi32>) -> tensor<2x8x16xbf16>
  %1 = trn.gather %logits[%labels], axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  %2 = trn.gather %table[%ids], axis = 0, batch_dims = 0 : (tensor<100x16xbf16>, tensor<2x8xi32>) -> tensor<2x8x16xbf16>
  return %0, %1, %2 : tensor<2x8x16xbf16>, tensor<4xf32>, tensor<2x8x16xbf16>
}

// CHECK-LABEL: func.func @scatter_add
// CHECK-SAME: (%[[T:[^:]*]]: tensor<100x16xf32>, %[[IDS:[^:]*]]: tensor<2x8xi32>, %[[U:[^:]*]]: tensor<2x8x16xf32>, %[[L:[^:]*]]: tensor<4x10xi32>, %[[Y:[^:]*]]: tensor<4xi64>, %[[V:[^:]*]]: tensor<4xi32>)
func.func @scatter_add(%table: tensor<100x16xf32>, %ids: tensor<2x8xi32>, %updates: tensor<2x8x16xf32>,
                       %acc: tensor<4x10xi32>, %labels: tensor<4xi64>, %values: tensor<4xi32>)
    -> (tensor<100x16xf32>, tensor<4x10xi32>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.scatter_add %[[T]][%[[IDS]]], %[[U]], axis = 0 : (tensor<100x16xf32>, tensor<2x8xi32>, tensor<2x8x16xf32>) -> tensor<100x16xf32>
  // CHECK-NEXT: %[[R1:.*]] = trn.scatter_add %[[L]][%[[Y]]], %[[V]], axis = 1, batch_dims = 1 : (tensor<4x10xi32>, tensor<4xi64>, tensor<4xi32>) -> tensor<4x10xi32>
  // CHECK-NEXT: return %[[R0]], %[[R1]]
  %0 = trn.scatter_add %table[%ids], %updates, axis = 0 : (tensor<100x16xf32>, tensor<2x8xi32>, tensor<2x8x16xf32>) -> tensor<100x16xf32>
  %1 = trn.scatter_add %acc[%labels], %values, axis = 1, batch_dims = 1 : (tensor<4x10xi32>, tensor<4xi64>, tensor<4xi32>) -> tensor<4x10xi32>
  return %0, %1 : tensor<100x16xf32>, tensor<4x10xi32>
}

//===----------------------------------------------------------------------===//
// Reductions and contractions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[A:[^:]*]]: tensor<2x3x4xf32>, %[[I:[^:]*]]: tensor<5x6xi64>)
func.func @reduce(%a: tensor<2x3x4xf32>, %i: tensor<5x6xi64>)
    -> (tensor<2xf32>, tensor<2x3xf32>, tensor<f32>, tensor<6xi64>, tensor<2x3x4xf32>) {
  // CHECK-NEXT: %[[SUM:.*]] = trn.reduce sum %[[A]], dims = [1, 2] : (tensor<2x3x4xf32>) -> tensor<2xf32>
  // CHECK-NEXT: %[[MAX:.*]] = trn.reduce max %[[A]], dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %[[MIN:.*]] = trn.reduce min %[[A]], dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK-NEXT: %[[PROD:.*]] = trn.reduce prod %[[I]], dims = [0] : (tensor<5x6xi64>) -> tensor<6xi64>
  // CHECK-NEXT: %[[NONE:.*]] = trn.reduce sum %[[A]], dims = [] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: return %[[SUM]], %[[MAX]], %[[MIN]], %[[PROD]], %[[NONE]]
  %0 = trn.reduce sum %a, dims = [1, 2] : (tensor<2x3x4xf32>) -> tensor<2xf32>
  %1 = trn.reduce max %a, dims = [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %2 = trn.reduce min %a, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  %3 = trn.reduce prod %i, dims = [0] : (tensor<5x6xi64>) -> tensor<6xi64>
  %4 = trn.reduce sum %a, dims = [] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0, %1, %2, %3, %4 : tensor<2xf32>, tensor<2x3xf32>, tensor<f32>, tensor<6xi64>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @argmax
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4x10xbf16>, %[[B:[^:]*]]: tensor<7xi32>)
func.func @argmax(%a: tensor<4x10xbf16>, %b: tensor<7xi32>) -> (tensor<4xi64>, tensor<10xi32>, tensor<i32>) {
  // CHECK-NEXT: %[[R0:.*]] = trn.argmax %[[A]], dim = 1 : (tensor<4x10xbf16>) -> tensor<4xi64>
  // CHECK-NEXT: %[[R1:.*]] = trn.argmax %[[A]], dim = 0 : (tensor<4x10xbf16>) -> tensor<10xi32>
  // CHECK-NEXT: %[[R2:.*]] = trn.argmax %[[B]], dim = 0 : (tensor<7xi32>) -> tensor<i32>
  // CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]]
  %0 = trn.argmax %a, dim = 1 : (tensor<4x10xbf16>) -> tensor<4xi64>
  %1 = trn.argmax %a, dim = 0 : (tensor<4x10xbf16>) -> tensor<10xi32>
  %2 = trn.argmax %b, dim = 0 : (tensor<7xi32>) -> tensor<i32>
  return %0, %1, %2 : tensor<4xi64>, tensor<10xi32>, tensor<i32>
}

// CHECK-LABEL: func.func @dot_general
// CHECK-SAME: (%[[A:[^:]*]]: tensor<8x16xf32>, %[[B:[^:]*]]: tensor<16x32xf32>, %[[Q:[^:]*]]: tensor<4x8x16xbf16>, %[[K:[^:]*]]: tensor<4x16x32xbf16>, %[[W:[^:]*]]: tensor<32x16xbf16>)
func.func @dot_general(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>,
                       %q: tensor<4x8x16xbf16>, %k: tensor<4x16x32xbf16>, %w: tensor<32x16xbf16>)
    -> (tensor<8x32xf32>, tensor<4x8x32xbf16>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<16x16xf32>) {
  // CHECK-NEXT: %[[MM:.*]] = trn.dot_general %[[A]], %[[B]], batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  // CHECK-NEXT: %[[BMM:.*]] = trn.dot_general %[[Q]], %[[K]], batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x8x16xbf16>, tensor<4x16x32xbf16>) -> tensor<4x8x32xbf16>
  // CHECK-NEXT: %[[WIDE:.*]] = trn.dot_general %[[Q]], %[[K]], batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x8x16xbf16>, tensor<4x16x32xbf16>) -> tensor<4x8x32xf32>
  // CHECK-NEXT: %[[NT:.*]] = trn.dot_general %[[Q]], %[[W]], batching_dims = [] x [], contracting_dims = [2] x [1] : (tensor<4x8x16xbf16>, tensor<32x16xbf16>) -> tensor<4x8x32xf32>
  // CHECK-NEXT: %[[OUTER:.*]] = trn.dot_general %[[A]], %[[A]], batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  // CHECK-NEXT: return %[[MM]], %[[BMM]], %[[WIDE]], %[[NT]], %[[OUTER]]
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = trn.dot_general %q, %k, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x8x16xbf16>, tensor<4x16x32xbf16>) -> tensor<4x8x32xbf16>
  %2 = trn.dot_general %q, %k, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x8x16xbf16>, tensor<4x16x32xbf16>) -> tensor<4x8x32xf32>
  %3 = trn.dot_general %q, %w, batching_dims = [] x [], contracting_dims = [2] x [1] : (tensor<4x8x16xbf16>, tensor<32x16xbf16>) -> tensor<4x8x32xf32>
  %4 = trn.dot_general %a, %a, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  return %0, %1, %2, %3, %4 : tensor<8x32xf32>, tensor<4x8x32xbf16>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<16x16xf32>
}

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8xf32>, %[[DY:[^:]*]]: tensor<2x8xf32>)
func.func @softmax(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>)
    -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK-NEXT: %[[SM:.*]] = trn.softmax %[[X]], dim = 1 : tensor<2x8xf32>
  // CHECK-NEXT: %[[LSM:.*]] = trn.log_softmax %[[X]], dim = 0 : tensor<2x8xf32>
  // CHECK-NEXT: %[[SMG:.*]] = trn.softmax_grad %[[SM]], %[[DY]], dim = 1 : tensor<2x8xf32>
  // CHECK-NEXT: %[[LSMG:.*]] = trn.log_softmax_grad %[[LSM]], %[[DY]], dim = 0 : tensor<2x8xf32>
  // CHECK-NEXT: return %[[SM]], %[[LSM]], %[[SMG]], %[[LSMG]]
  %0 = trn.softmax %x, dim = 1 : tensor<2x8xf32>
  %1 = trn.log_softmax %x, dim = 0 : tensor<2x8xf32>
  %2 = trn.softmax_grad %0, %dy, dim = 1 : tensor<2x8xf32>
  %3 = trn.log_softmax_grad %1, %dy, dim = 0 : tensor<2x8xf32>
  return %0, %1, %2, %3 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x4x8xbf16>, %[[W:[^:]*]]: tensor<8xbf16>, %[[B:[^:]*]]: tensor<8xbf16>, %[[DY:[^:]*]]: tensor<2x4x8xbf16>, %[[W2:[^:]*]]: tensor<4x8xbf16>)
func.func @layer_norm(%x: tensor<2x4x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xbf16>,
                      %dy: tensor<2x4x8xbf16>, %w2: tensor<4x8xbf16>)
    -> (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<2x4x8xbf16>, tensor<2xf32>) {
  // CHECK-NEXT: %[[Y:[^ ,]+]], %[[MEAN:[^ ,]+]], %[[RSTD:[^ ,]+]] = trn.layer_norm %[[X]], %[[W]], %[[B]], axis = 2, eps = 1.000000e-05 : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
  // CHECK-NEXT: %[[DX:[^ ,]+]], %[[DW:[^ ,]+]], %[[DB:[^ ,]+]] = trn.layer_norm_grad %[[DY]], %[[X]], %[[MEAN]], %[[RSTD]], %[[W]], axis = 2 : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
  // CHECK-NEXT: %[[Y2:[^ ,]+]], %{{.*}}, %[[RSTD2:[^ ,]+]] = trn.layer_norm %[[X]], %[[W2]], %[[W2]], axis = 1, eps = 9.9999999999999998E-13 : (tensor<2x4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2xf32>, tensor<2xf32>)
  // CHECK-NEXT: return %[[Y]], %[[DW]], %[[DB]], %[[Y2]], %[[RSTD2]]
  %y, %mean, %rstd = trn.layer_norm %x, %w, %b, axis = 2, eps = 1.0e-5 : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
  %dx, %dw, %db = trn.layer_norm_grad %dy, %x, %mean, %rstd, %w, axis = 2 : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
  %y2:3 = trn.layer_norm %x, %w2, %w2, axis = 1, eps = 1.0e-12 : (tensor<2x4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2xf32>, tensor<2xf32>)
  return %y, %dw, %db, %y2#0, %y2#2 : tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<2x4x8xbf16>, tensor<2xf32>
}

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32>, %[[W:[^:]*]]: tensor<8xf32>, %[[DY:[^:]*]]: tensor<4x8xf32>)
func.func @rms_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  // CHECK-NEXT: %[[Y:[^ ,]+]], %[[RSTD:[^ ,]+]] = trn.rms_norm %[[X]], %[[W]], axis = 1, eps = 9.9999999999999995E-7 : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  // CHECK-NEXT: %[[DX:[^ ,]+]], %[[DW:[^ ,]+]] = trn.rms_norm_grad %[[DY]], %[[X]], %[[RSTD]], %[[W]], axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  // CHECK-NEXT: return %[[Y]], %[[DX]], %[[DW]]
  %y, %rstd = trn.rms_norm %x, %w, axis = 1, eps = 1.0e-6 : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  %dx, %dw = trn.rms_norm_grad %dy, %x, %rstd, %w, axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return %y, %dx, %dw : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// Cross-attention (S = 8 queries, T = 16 keys, Dv = 32), causal and not.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x4x8x64xbf16>, %[[K:[^:]*]]: tensor<2x4x16x64xbf16>, %[[V:[^:]*]]: tensor<2x4x16x32xbf16>, %[[DO:[^:]*]]: tensor<2x4x8x32xbf16>)
func.func @attention(%q: tensor<2x4x8x64xbf16>, %k: tensor<2x4x16x64xbf16>,
                     %v: tensor<2x4x16x32xbf16>, %do: tensor<2x4x8x32xbf16>)
    -> (tensor<2x4x8x32xbf16>, tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>) {
  // CHECK-NEXT: %[[O:[^ ,]+]], %[[LSE:[^ ,]+]] = trn.attention %[[Q]], %[[K]], %[[V]], scale = 1.250000e-01 : (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>) -> (tensor<2x4x8x32xbf16>, tensor<2x4x8xf32>)
  // CHECK-NEXT: %[[OC:[^ ,]+]], %[[LSEC:[^ ,]+]] = trn.attention %[[Q]], %[[K]], %[[V]], scale = 1.250000e-01 causal : (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>) -> (tensor<2x4x8x32xbf16>, tensor<2x4x8xf32>)
  // CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = trn.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]], %[[DO]], scale = 1.250000e-01 : (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>, tensor<2x4x8x32xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x32xbf16>) -> (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>)
  // CHECK-NEXT: %[[DQ:[^ ,]+]], %[[DK:[^ ,]+]], %[[DV:[^ ,]+]] = trn.attention_grad %[[Q]], %[[K]], %[[V]], %[[OC]], %[[LSEC]], %[[DO]], scale = 1.250000e-01 causal : (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>, tensor<2x4x8x32xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x32xbf16>) -> (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>)
  // CHECK-NEXT: return %[[OC]], %[[DQ]], %[[DK]], %[[DV]]
  %o, %lse = trn.attention %q, %k, %v, scale = 0.125 : (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>) -> (tensor<2x4x8x32xbf16>, tensor<2x4x8xf32>)
  %oc, %lsec = trn.attention %q, %k, %v, scale = 0.125 causal : (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>) -> (tensor<2x4x8x32xbf16>, tensor<2x4x8xf32>)
  %g:3 = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.125 : (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>, tensor<2x4x8x32xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x32xbf16>) -> (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %oc, %lsec, %do, scale = 0.125 causal : (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>, tensor<2x4x8x32xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x32xbf16>) -> (tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>)
  return %oc, %dq, %dk, %dv : tensor<2x4x8x32xbf16>, tensor<2x4x8x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x32xbf16>
}

// Rank-2 attention (no batch dimensions) is the smallest accepted form.
// CHECK-LABEL: func.func @attention_rank2
// CHECK-SAME: (%[[Q:.*]]: tensor<8x16xf32>)
func.func @attention_rank2(%q: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  // CHECK-NEXT: %[[O:[^ ,]+]], %[[LSE:[^ ,]+]] = trn.attention %[[Q]], %[[Q]], %[[Q]], scale = 2.500000e-01 causal : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  // CHECK-NEXT: return %[[O]], %[[LSE]]
  %o, %lse = trn.attention %q, %q, %q, scale = 0.25 causal : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return %o, %lse : tensor<8x16xf32>, tensor<8xf32>
}

// seq_dim = 1: [B, S, H, D] operands and output; lse stays [B, H, S].
// CHECK-LABEL: func.func @attention_seq_dim
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x8x4x16xf32>, %[[K:[^:]*]]: tensor<2x12x4x16xf32>, %[[DO:[^:]*]]: tensor<2x8x4x16xf32>)
func.func @attention_seq_dim(%q: tensor<2x8x4x16xf32>, %k: tensor<2x12x4x16xf32>, %do: tensor<2x8x4x16xf32>)
    -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x8x4x16xf32>) {
  // CHECK-NEXT: %[[O:[^ ,]+]], %[[LSE:[^ ,]+]] = trn.attention %[[Q]], %[[K]], %[[K]], scale = 2.500000e-01 causal seq_dim = 1 : (tensor<2x8x4x16xf32>, tensor<2x12x4x16xf32>, tensor<2x12x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  // CHECK-NEXT: %[[DQ:[^ ,]+]], %{{.*}}, %{{.*}} = trn.attention_grad %[[Q]], %[[K]], %[[K]], %[[O]], %[[LSE]], %[[DO]], scale = 2.500000e-01 seq_dim = 1 : (tensor<2x8x4x16xf32>, tensor<2x12x4x16xf32>, tensor<2x12x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x12x4x16xf32>, tensor<2x12x4x16xf32>)
  // CHECK-NEXT: return %[[O]], %[[LSE]], %[[DQ]]
  %o, %lse = trn.attention %q, %k, %k, scale = 0.25 causal seq_dim = 1 : (tensor<2x8x4x16xf32>, tensor<2x12x4x16xf32>, tensor<2x12x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %k, %o, %lse, %do, scale = 0.25 seq_dim = 1 : (tensor<2x8x4x16xf32>, tensor<2x12x4x16xf32>, tensor<2x12x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x12x4x16xf32>, tensor<2x12x4x16xf32>)
  return %o, %lse, %dq : tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x8x4x16xf32>
}

// The default ignore_index = -100 is elided when printing.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[L:[^:]*]]: tensor<4x10xf32>, %[[Y:[^:]*]]: tensor<4xi64>, %[[Y32:[^:]*]]: tensor<4xi32>)
func.func @cross_entropy(%logits: tensor<4x10xf32>, %labels: tensor<4xi64>, %labels32: tensor<4xi32>)
    -> (tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  // CHECK-NEXT: %[[NONE:.*]] = trn.cross_entropy none %[[L]], %[[Y]] : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  // CHECK-NEXT: %[[MEAN:.*]] = trn.cross_entropy mean %[[L]], %[[Y]] : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  // CHECK-NEXT: %[[SUM:.*]] = trn.cross_entropy sum %[[L]], %[[Y32]] : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  // CHECK-NEXT: %[[IGN:.*]] = trn.cross_entropy mean %[[L]], %[[Y]] {ignore_index = 0 : i64} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  // CHECK-NEXT: %[[DEF:.*]] = trn.cross_entropy mean %[[L]], %[[Y]] : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  // CHECK-NEXT: return %[[NONE]], %[[MEAN]], %[[SUM]], %[[IGN]], %[[DEF]]
  %0 = trn.cross_entropy none %logits, %labels : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  %1 = trn.cross_entropy mean %logits, %labels : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = trn.cross_entropy sum %logits, %labels32 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  %3 = trn.cross_entropy mean %logits, %labels {ignore_index = 0} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  %4 = trn.cross_entropy mean %logits, %labels {ignore_index = -100} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK-SAME: (%[[L:[^:]*]]: tensor<4x10xbf16>, %[[Y:[^:]*]]: tensor<4xi64>, %[[G:[^:]*]]: tensor<bf16>, %[[GN:[^:]*]]: tensor<4xbf16>)
func.func @cross_entropy_grad(%logits: tensor<4x10xbf16>, %labels: tensor<4xi64>,
                              %g: tensor<bf16>, %gn: tensor<4xbf16>)
    -> (tensor<4x10xbf16>, tensor<4x10xbf16>, tensor<4x10xbf16>) {
  // CHECK-NEXT: %[[MEAN:.*]] = trn.cross_entropy_grad mean %[[L]], %[[Y]], %[[G]] : (tensor<4x10xbf16>, tensor<4xi64>, tensor<bf16>) -> tensor<4x10xbf16>
  // CHECK-NEXT: %[[SUM:.*]] = trn.cross_entropy_grad sum %[[L]], %[[Y]], %[[G]] {ignore_index = 3 : i64} : (tensor<4x10xbf16>, tensor<4xi64>, tensor<bf16>) -> tensor<4x10xbf16>
  // CHECK-NEXT: %[[NONE:.*]] = trn.cross_entropy_grad none %[[L]], %[[Y]], %[[GN]] : (tensor<4x10xbf16>, tensor<4xi64>, tensor<4xbf16>) -> tensor<4x10xbf16>
  // CHECK-NEXT: return %[[MEAN]], %[[SUM]], %[[NONE]]
  %0 = trn.cross_entropy_grad mean %logits, %labels, %g : (tensor<4x10xbf16>, tensor<4xi64>, tensor<bf16>) -> tensor<4x10xbf16>
  %1 = trn.cross_entropy_grad sum %logits, %labels, %g {ignore_index = 3} : (tensor<4x10xbf16>, tensor<4xi64>, tensor<bf16>) -> tensor<4x10xbf16>
  %2 = trn.cross_entropy_grad none %logits, %labels, %gn : (tensor<4x10xbf16>, tensor<4xi64>, tensor<4xbf16>) -> tensor<4x10xbf16>
  return %0, %1, %2 : tensor<4x10xbf16>, tensor<4x10xbf16>, tensor<4x10xbf16>
}

// CHECK-LABEL: func.func @rotate_half
// CHECK-NEXT: %[[R:.*]] = trn.rotate_half %arg0 : tensor<2x8x64xbf16>
// CHECK-NEXT: return %[[R]]
func.func @rotate_half(%x: tensor<2x8x64xbf16>) -> tensor<2x8x64xbf16> {
  %0 = trn.rotate_half %x : tensor<2x8x64xbf16>
  return %0 : tensor<2x8x64xbf16>
}
