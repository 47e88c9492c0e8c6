// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s

// A returned reshape aliases its source, so the source is computed straight
// into the output (seen in its own shape): no copy at the return. A value
// returned both as itself and reshaped has two outputs: the reshape is
// copied.
// CHECK-LABEL: func.func @reshaped
// CHECK-SAME: (%[[X:.*]]: !nc.hbm<128x64xf32> {{.*}}, %[[Y:.*]]: !nc.hbm<2x64x64xf32> {{.*}})
// CHECK: %[[R:.*]] = nc.hbm_reshape %[[Y]] : <2x64x64xf32> -> <128x64xf32>
// CHECK: nc.activation exp
// CHECK-NEXT: nc.view %[[R]]
// CHECK-NEXT: nc.dma_copy
// CHECK-NOT: origin = "reshaped: return"
// CHECK: return
func.func @reshaped(%x: tensor<128x64xf32>) -> tensor<2x64x64xf32> {
  %0 = trn.exp %x : tensor<128x64xf32>
  %1 = trn.reshape %0 : (tensor<128x64xf32>) -> tensor<2x64x64xf32>
  return %1 : tensor<2x64x64xf32>
}

// CHECK-LABEL: func.func @twice
// CHECK-SAME: (%{{.*}}: !nc.hbm<128x64xf32> {{.*}}, %[[A:.*]]: !nc.hbm<128x64xf32> {{.*}}, %[[B:.*]]: !nc.hbm<2x64x64xf32> {{.*}})
// CHECK: nc.activation exp
// CHECK-NEXT: nc.view %[[A]]
// CHECK: nc.kind "data_movement" {origin = "twice: return"}
// CHECK: nc.dma_copy
// CHECK: return
func.func @twice(%x: tensor<128x64xf32>) -> (tensor<128x64xf32>, tensor<2x64x64xf32>) {
  %0 = trn.exp %x : tensor<128x64xf32>
  %1 = trn.reshape %0 : (tensor<128x64xf32>) -> tensor<2x64x64xf32>
  return %0, %1 : tensor<128x64xf32>, tensor<2x64x64xf32>
}
