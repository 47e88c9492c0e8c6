// RUN: trn-opt %s | trn-opt | FileCheck %s
// RUN: trn-opt %s --mlir-print-op-generic | trn-opt | FileCheck %s
// RUN: trn-opt %s --verify-roundtrip | FileCheck %s

// The argument and result attributes that describe a step graph's inputs and
// outputs: every trn.role, trn.name and trn.aliases.

// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{[^:]*}}: tensor<4xf32> {trn.name = "w", trn.role = "parameter"}
// CHECK-SAME: %{{[^:]*}}: tensor<4xf32> {trn.name = "w.m", trn.role = "optimizer_state"}
// CHECK-SAME: %{{[^:]*}}: tensor<2x4xf32> {trn.name = "tokens", trn.role = "data"}
// CHECK-SAME: %{{[^:]*}}: tensor<2xi64> {trn.role = "label"}
// CHECK-SAME: %{{[^:]*}}: tensor<i64> {trn.role = "seed"}
// CHECK-SAME: %{{[^:]*}}: tensor<4xf32> {trn.role = "constant"}
// CHECK-SAME: %{{[^:]*}}: tensor<4xf32>)
// CHECK-SAME: -> (tensor<f32> {trn.name = "loss", trn.role = "loss"},
// CHECK-SAME: tensor<4xf32> {trn.aliases = 0 : i64, trn.role = "parameter"},
// CHECK-SAME: tensor<4xf32> {trn.aliases = 1 : i64, trn.name = "w.m", trn.role = "optimizer_state"},
// CHECK-SAME: tensor<4xf32> {trn.role = "gradient"},
// CHECK-SAME: tensor<2x4xf32> {trn.role = "output"},
// CHECK-SAME: tensor<4xf32> {trn.aliases = 6 : i64})
func.func @step(%w: tensor<4xf32> {trn.role = "parameter", trn.name = "w"},
                %m: tensor<4xf32> {trn.role = "optimizer_state", trn.name = "w.m"},
                %x: tensor<2x4xf32> {trn.role = "data", trn.name = "tokens"},
                %y: tensor<2xi64> {trn.role = "label"},
                %s: tensor<i64> {trn.role = "seed"},
                %c: tensor<4xf32> {trn.role = "constant"},
                %buf: tensor<4xf32>)
    -> (tensor<f32> {trn.role = "loss", trn.name = "loss"},
        tensor<4xf32> {trn.role = "parameter", trn.aliases = 0},
        tensor<4xf32> {trn.role = "optimizer_state", trn.aliases = 1 : i64, trn.name = "w.m"},
        tensor<4xf32> {trn.role = "gradient"},
        tensor<2x4xf32> {trn.role = "output"},
        tensor<4xf32> {trn.aliases = 6}) {
  %l = trn.constant dense<0.0> : tensor<f32>
  return %l, %w, %m, %c, %x, %buf
      : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xf32>
}

// Declarations carry the attributes too; an alias index may be any integer
// type.
// CHECK-LABEL: func.func private @declaration
// CHECK-SAME: (tensor<4xf32> {trn.role = "parameter"}, tensor<8xbf16>)
// CHECK-SAME: -> (tensor<8xbf16> {trn.aliases = 1 : i32}, tensor<4xf32> {trn.aliases = 0 : i64})
func.func private @declaration(tensor<4xf32> {trn.role = "parameter"}, tensor<8xbf16>)
    -> (tensor<8xbf16> {trn.aliases = 1 : i32}, tensor<4xf32> {trn.aliases = 0})

// Attributes of other dialects are left alone.
// CHECK-LABEL: func.func @other_dialects
// CHECK-SAME: (%{{[^:]*}}: tensor<4xf32> {other.role = "anything", trn.role = "data"})
// CHECK-SAME: -> (tensor<4xf32> {other.aliases = "x"})
func.func @other_dialects(%a: tensor<4xf32> {trn.role = "data", other.role = "anything"})
    -> (tensor<4xf32> {other.aliases = "x"}) {
  return %a : tensor<4xf32>
}
