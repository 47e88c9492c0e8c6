// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s

// A scatter_add whose operand dies there adds into the operand's tensor (a
// cross-entropy's gradient, an embedding gradient's zeros): after the
// indices and updates load, the scatter itself, no copy of the operand.
// CHECK-LABEL: func.func @in_place
// CHECK: %[[T:.*]] = nc.hbm_alloc "t0" : <4x16xf32>
// CHECK: nc.kind "data_movement" {origin = "in_place: trn.scatter_add #1"}
// CHECK-NEXT: nc.hbm_reshape %[[T]] : <4x16xf32> -> <64x1xf32>
// CHECK-NOT: <hbm, 4x16xf32>
// CHECK: nc.dma_scatter_add
// CHECK-NOT: nc.hbm_alloc
// CHECK: return

// Returned: the operand is computed into the output, and the scatter adds
// there.
// CHECK-LABEL: func.func @returned
// CHECK-NOT: nc.hbm_alloc
// CHECK: nc.kind "data_movement"
// CHECK-NOT: <hbm, 4x16xf32>
// CHECK: nc.dma_scatter_add
// CHECK: return

// The operand is read again later: copied (into the output) first.
// CHECK-LABEL: func.func @operand_lives
// CHECK: nc.kind "data_movement"
// CHECK: nc.dma_copy {{.*}} : <sbuf, 4x16xf32>, <hbm, 4x16xf32>
// CHECK: nc.dma_copy {{.*}} : <hbm, 4x16xf32>, <sbuf, 4x16xf32>
// CHECK: nc.dma_scatter_add
func.func @in_place(%x: tensor<4x16xf32>, %i: tensor<4xi32>, %u: tensor<4xf32>) -> tensor<4x16xf32> {
  %0 = trn.exp %x : tensor<4x16xf32>
  %1 = trn.scatter_add %0[%i], %u, axis = 1, batch_dims = 1 : (tensor<4x16xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x16xf32>
  %2 = trn.exp %1 : tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
func.func @returned(%x: tensor<4x16xf32>, %i: tensor<4xi32>, %u: tensor<4xf32>) -> tensor<4x16xf32> {
  %0 = trn.exp %x : tensor<4x16xf32>
  %1 = trn.scatter_add %0[%i], %u, axis = 1, batch_dims = 1 : (tensor<4x16xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
func.func @operand_lives(%x: tensor<4x16xf32>, %i: tensor<4xi32>, %u: tensor<4xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = trn.exp %x : tensor<4x16xf32>
  %1 = trn.scatter_add %0[%i], %u, axis = 1, batch_dims = 1 : (tensor<4x16xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x16xf32>
  %2 = trn.add %0, %1 : tensor<4x16xf32>
  return %1, %2 : tensor<4x16xf32>, tensor<4x16xf32>
}
