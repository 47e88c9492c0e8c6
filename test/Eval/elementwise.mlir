// Hand-computed results of elementwise ops on the reference evaluator.
// RUN: trn-eval %s --entry unary --zeros | FileCheck %s --check-prefix=UNARY
// RUN: trn-eval %s --entry binary --zeros | FileCheck %s --check-prefix=BINARY
// RUN: trn-eval %s --entry ints --zeros | FileCheck %s --check-prefix=INTS
// RUN: trn-eval %s --entry rounding --zeros | FileCheck %s --check-prefix=ROUND

// UNARY: neg : tensor<4xf32> = [1, -0, -2, 0.5]
// UNARY: exp : tensor<4xf32> = [0.36787945, 1, 7.3890562, 0.60653067]
// UNARY: relu : tensor<4xf32> = [0, 0, 2, 0]
// UNARY: gelu_tanh : tensor<2xf32> = [0.84119201, -0.15880801]
// UNARY: gelu : tensor<2xf32> = [0.84134477, -0.15865526]
// UNARY: sign : tensor<4xf32> = [-1, 0, 1, -1]
// UNARY: floor : tensor<4xf32> = [-1, 0, 2, -1]
func.func @unary() -> (tensor<4xf32> {trn.name = "neg"}, tensor<4xf32> {trn.name = "exp"},
                       tensor<4xf32> {trn.name = "relu"}, tensor<2xf32> {trn.name = "gelu_tanh"},
                       tensor<2xf32> {trn.name = "gelu"}, tensor<4xf32> {trn.name = "sign"},
                       tensor<4xf32> {trn.name = "floor"}) {
  %x = trn.constant dense<[-1.0, 0.0, 2.0, -0.5]> : tensor<4xf32>
  %0 = trn.neg %x : tensor<4xf32>
  %1 = trn.exp %x : tensor<4xf32>
  %2 = trn.relu %x : tensor<4xf32>
  %g = trn.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %3 = trn.gelu %g approximate = tanh : tensor<2xf32>
  %4 = trn.gelu %g : tensor<2xf32>
  %5 = trn.sign %x : tensor<4xf32>
  %6 = trn.floor %x : tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>
}

// BINARY: sub : tensor<3xf32> = [-2, 4, 0.5]
// BINARY: div : tensor<3xf32> = [0, inf, 2]
// BINARY: max : tensor<3xf32> = [1, nan, 2]
// BINARY: pow : tensor<3xf32> = [1, 8, 0.25]
// BINARY: lt : tensor<3xi1> = [1, 0, 0]
// BINARY: select : tensor<3xf32> = [0, 3, -2]
func.func @binary() -> (tensor<3xf32> {trn.name = "sub"}, tensor<3xf32> {trn.name = "div"},
                        tensor<3xf32> {trn.name = "max"}, tensor<3xf32> {trn.name = "pow"},
                        tensor<3xi1> {trn.name = "lt"}, tensor<3xf32> {trn.name = "select"}) {
  %a = trn.constant dense<[0.0, 4.0, 1.0]> : tensor<3xf32>
  %b = trn.constant dense<[2.0, 0.0, 0.5]> : tensor<3xf32>
  %nan = trn.constant dense<[1.0, 0x7FC00000, -1.0]> : tensor<3xf32>
  %two = trn.constant dense<[1.0, 2.0, 2.0]> : tensor<3xf32>
  %e = trn.constant dense<[0.0, 3.0, -2.0]> : tensor<3xf32>
  %0 = trn.sub %a, %b : tensor<3xf32>
  %1 = trn.div %a, %b : tensor<3xf32>
  %2 = trn.max %two, %nan : tensor<3xf32>
  %3 = trn.pow %two, %e : tensor<3xf32>
  %4 = trn.compare lt, %a, %b : tensor<3xf32>
  %5 = trn.select %4, %a, %e : tensor<3xi1>, tensor<3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi1>, tensor<3xf32>
}

// INTS: add : tensor<3xi32> = [-2147483648, 0, 7]
// INTS: div : tensor<3xi64> = [-3, 3, 0]
// INTS: to_int : tensor<4xi32> = [-1, 2147483647, 0, 2]
// INTS: iota : tensor<2x3xi64> = [0, 1, 2, 0, 1, 2]
func.func @ints() -> (tensor<3xi32> {trn.name = "add"}, tensor<3xi64> {trn.name = "div"},
                      tensor<4xi32> {trn.name = "to_int"}, tensor<2x3xi64> {trn.name = "iota"}) {
  %a = trn.constant dense<[2147483647, -1, 3]> : tensor<3xi32>
  %b = trn.constant dense<[1, 1, 4]> : tensor<3xi32>
  %0 = trn.add %a, %b : tensor<3xi32>
  %c = trn.constant dense<[-7, 7, 1]> : tensor<3xi64>
  %d = trn.constant dense<[2, 2, 2]> : tensor<3xi64>
  %1 = trn.div %c, %d : tensor<3xi64>
  %f = trn.constant dense<[-1.9, 1.0e10, 0x7FC00000, 2.5]> : tensor<4xf32>
  %2 = trn.convert %f : tensor<4xf32> -> tensor<4xi32>
  %3 = trn.iota dim = 1 : tensor<2x3xi64>
  return %0, %1, %2, %3 : tensor<3xi32>, tensor<3xi64>, tensor<4xi32>, tensor<2x3xi64>
}

// 1 + 2^-8 is a tie between bf16 neighbours 1 and 1 + 2^-7: even is 1.
// 1 + 3 * 2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
// f8E4M3FN saturates at 448; f8E5M2 overflows to inf.
// ROUND: bf16 : tensor<3xbf16> = [1, 1.015625, 1.0078125]
// ROUND: f8e4 : tensor<3xf8E4M3FN> = [448, -448, 0.015625]
// ROUND: f8e5 : tensor<2xf8E5M2> = [inf, 57344]
// ROUND: sum_bf16 : tensor<bf16> = [1.0078125]
func.func @rounding() -> (tensor<3xbf16> {trn.name = "bf16"}, tensor<3xf8E4M3FN> {trn.name = "f8e4"},
                          tensor<2xf8E5M2> {trn.name = "f8e5"}, tensor<bf16> {trn.name = "sum_bf16"}) {
  %x = trn.constant dense<[1.00390625, 1.01171875, 1.0078125]> : tensor<3xf32>
  %0 = trn.convert %x : tensor<3xf32> -> tensor<3xbf16>
  %y = trn.constant dense<[1000.0, -449.0, 0.0166]> : tensor<3xf32>
  %1 = trn.convert %y : tensor<3xf32> -> tensor<3xf8E4M3FN>
  %z = trn.constant dense<[70000.0, 57344.0]> : tensor<2xf32>
  %2 = trn.convert %z : tensor<2xf32> -> tensor<2xf8E5M2>
  // A bf16 sum accumulates in f64 and rounds once: 1 + 4 * 2^-9 = 1 + 2^-7.
  %w = trn.constant dense<[1.0, 0.001953125, 0.001953125, 0.001953125, 0.001953125]> : tensor<5xbf16>
  %3 = trn.reduce sum %w, dims = [0] : (tensor<5xbf16>) -> tensor<bf16>
  return %0, %1, %2, %3 : tensor<3xbf16>, tensor<3xf8E4M3FN>, tensor<2xf8E5M2>, tensor<bf16>
}

// -----
// A summary counts NaNs rather than folding them into the figures (a mean of
// -nan would hide how many there are); all NaN says so.
// RUN: trn-eval %s --entry nan_summary --zeros | FileCheck %s --check-prefix=NANS
// NANS: some : tensor<64xf32> min 0.693147 max 0.693147 mean 0.693147 (NaN: 10 of 64, left out)
// NANS: all : tensor<64xf32> all 64 values NaN
func.func @nan_summary() -> (tensor<64xf32> {trn.name = "some"}, tensor<64xf32> {trn.name = "all"}) {
  %neg = trn.constant dense<-1.0> : tensor<10xf32>
  %two = trn.constant dense<2.0> : tensor<54xf32>
  %x = trn.concatenate %neg, %two dim = 0 : (tensor<10xf32>, tensor<54xf32>) -> tensor<64xf32>
  %some = trn.log %x : tensor<64xf32>
  %all_neg = trn.constant dense<-1.0> : tensor<64xf32>
  %all = trn.log %all_neg : tensor<64xf32>
  return %some, %all : tensor<64xf32>, tensor<64xf32>
}
