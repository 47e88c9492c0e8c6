// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s

// Inputs become HBM arguments, results outputs; an add streams [rows, cols]
// tiles: two loads, a Vector Engine add, one store.
// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[A:.*]]: !nc.hbm<4x8xf32> {nc.kind = "input", nc.name = "a"}, %[[B:.*]]: !nc.hbm<4x8xf32> {nc.kind = "input", nc.name = "arg1"}, %[[OUT:.*]]: !nc.hbm<4x8xf32> {nc.kind = "output", nc.name = "sum"})
// CHECK-NOT: nc.hbm_alloc
// CHECK: nc.dma_copy {{.*}} : <sbuf, 4x8xf32>, <hbm, 4x8xf32>
// CHECK: nc.dma_copy {{.*}} : <sbuf, 4x8xf32>, <hbm, 4x8xf32>
// CHECK: nc.tensor_tensor add
// The result is computed straight into the output argument.
// CHECK: nc.view %[[OUT]]
// CHECK: nc.dma_copy {{.*}} : <hbm, 4x8xf32>, <sbuf, 4x8xf32>
// CHECK-NEXT: return
func.func @add(%a: tensor<4x8xf32> {trn.name = "a"}, %b: tensor<4x8xf32>) -> (tensor<4x8xf32> {trn.name = "sum"}) {
  %0 = trn.add %a, %b : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A result that updates an input in place makes that input "inout".
// CHECK-LABEL: func.func @update
// CHECK-SAME: {nc.kind = "inout", nc.name = "p", nc.output_name = "result0"}
// CHECK: nc.hbm_alloc "t0"
// CHECK: nc.activation exp
func.func @update(%p: tensor<128xf32> {trn.name = "p"}) -> (tensor<128xf32> {trn.aliases = 0 : i64}) {
  %0 = trn.exp %p : tensor<128xf32>
  return %0 : tensor<128xf32>
}

// -----

// A matmul tiles K by 128 and accumulates in PSUM.
// CHECK-LABEL: func.func @matmul
// CHECK: nc.matmul %{{.*}} : <psum, 64x32xf32>, <sbuf, 128x64xbf16>, <sbuf, 128x32xbf16>
// CHECK: nc.matmul %{{.*}} accumulate : <psum, 64x32xf32>, <sbuf, 72x64xbf16>, <sbuf, 72x32xbf16>
// CHECK: nc.activation copy
func.func @matmul(%a: tensor<64x200xbf16>, %b: tensor<200x32xbf16>) -> tensor<64x32xf32> {
  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x200xbf16>, tensor<200x32xbf16>) -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @composite(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'trn.softmax' is not lowered to NeuronCore kernels yet (run trn-decompose-composites first)}}
  %0 = trn.softmax %a, dim = 1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @int64(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'trn.add' on i64 tensors is not lowered to NeuronCore kernels yet}}
  %0 = trn.add %a, %a : tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// A max over a middle dim with a small inner size: per inner index, the
// outer indices on partitions and the reduced ones strided along the free dim
// (rows 16 apart, elements 2 apart, results 2 apart). A sum over dims 0, 2
// and 3 takes two passes: the trailing run into f32 scratch, then the leading
// dim as a ones-column matmul.
// CHECK-LABEL: func.func @middle_reduce
// CHECK: %[[T:.*]] = nc.alloc : <sbuf, 4x8xf32>
// CHECK-NEXT: %[[IN0:.*]] = nc.view %arg0 strides [2] {partition_stride = 16 : i64}
// CHECK-NEXT: nc.dma_copy %[[T]], %[[IN0]]
// CHECK: nc.tensor_reduce max
// CHECK: %[[OUT0:.*]] = nc.view %arg2 strides [1] {partition_stride = 2 : i64}
// CHECK-NEXT: nc.dma_copy %[[OUT0]]
// CHECK: nc.view %arg0 strides [2] {offset = 1 : i64, partition_stride = 16 : i64}
// CHECK: nc.tensor_reduce max
// CHECK: nc.view %arg2 strides [1] {offset = 1 : i64, partition_stride = 2 : i64}
// CHECK: %[[SCRATCH:.*]] = nc.hbm_alloc "t0" : <2x3xf32>
// CHECK: nc.tensor_reduce add {{.*}} : <sbuf, 6x1xf32>, <sbuf, 6x20xf32>
// CHECK: nc.view %[[SCRATCH]]
// CHECK: nc.memset %{{.*}}, 1.000000e+00 : <sbuf, 128x1xf32>
// CHECK: nc.matmul {{.*}} : <psum, 1x3xf32>, <sbuf, 2x1xf32>, <sbuf, 2x3xf32>
// CHECK: nc.dma_copy %{{.*}} : <hbm, 1x3xf32>, <sbuf, 1x3xf32>
// CHECK-NEXT: return
func.func @middle_reduce(%a: tensor<4x8x2xf32>, %b: tensor<2x3x4x5xf32>) -> (tensor<4x2xf32>, tensor<3xf32>) {
  %0 = trn.reduce max %a, dims = [1] : (tensor<4x8x2xf32>) -> tensor<4x2xf32>
  %1 = trn.reduce sum %b, dims = [0, 2, 3] : (tensor<2x3x4x5xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<4x2xf32>, tensor<3xf32>
}

// -----

// A sum over leading dims runs on the Tensor Engine: a ones column (memset)
// is the stationary operand of one matmul per 128 contiguous rows, all
// accumulating into a [1, 512] PSUM tile per 512 kept columns.
// CHECK-LABEL: func.func @leading_sum
// CHECK: %[[ONES:.*]] = nc.alloc : <sbuf, 128x1xbf16>
// CHECK: nc.memset %[[ONES]], 1.000000e+00
// CHECK: %[[ACC:.*]] = nc.alloc : <psum, 1x512xf32>
// CHECK: nc.dma_copy {{.*}} : <sbuf, 128x512xbf16>, <hbm, 128x512xbf16>
// CHECK: nc.matmul %[[ACC]], %[[ONES]], %{{[0-9]+}} : <psum, 1x512xf32>
// CHECK: nc.dma_copy {{.*}} : <sbuf, 72x512xbf16>, <hbm, 72x512xbf16>
// CHECK: %[[PART:.*]] = nc.view %[[ONES]] {{.*}} -> <sbuf, 72x1xbf16>
// CHECK: nc.matmul %[[ACC]], %[[PART]], %{{[0-9]+}} accumulate :
// CHECK: nc.activation copy
// CHECK: %[[ACC2:.*]] = nc.alloc : <psum, 1x88xf32>
// CHECK-COUNT-2: nc.matmul %[[ACC2]]
// CHECK-NOT: nc.tensor_reduce
func.func @leading_sum(%a: tensor<2x100x600xbf16>) -> tensor<600xbf16> {
  %0 = trn.reduce sum %a, dims = [0, 1] : (tensor<2x100x600xbf16>) -> tensor<600xbf16>
  return %0 : tensor<600xbf16>
}

// -----

// Max over leading dims keeps the Vector Engine path (strided columns).
// CHECK-LABEL: func.func @leading_max
// CHECK: nc.tensor_reduce max
// CHECK-NOT: nc.matmul
func.func @leading_max(%a: tensor<100x6xf32>) -> tensor<6xf32> {
  %0 = trn.reduce max %a, dims = [0] : (tensor<100x6xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}
