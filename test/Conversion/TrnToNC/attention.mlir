// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s
// What must not appear anywhere in a kernel (a CHECK-NOT covers only the
// span between two matches, ABSENT the whole function). Above all, the
// point of the flash-style kernel: scores and probabilities live in SBUF
// and PSUM only, so no kernel allocates an HBM scratch tensor.
// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=ABSENT
// ABSENT-LABEL: func.func @causal_bf16(
// ABSENT-NOT: nc.hbm_alloc
// (P and P^T are f16, never bf16.)
// ABSENT-NOT: <sbuf, 128x128xbf16>
// ABSENT-LABEL: func.func @f32(
// ABSENT-NOT: nc.hbm_alloc
// ABSENT-NOT: f16
// ABSENT-NOT: nc.affine_select
// ABSENT-LABEL: func.func @f32_matmul_bf16(
// ABSENT-NOT: nc.hbm_alloc
// (No f32 copy of q, k, q^T, k^T or v in SBUF.)
// ABSENT-NOT: <sbuf, 100x16xf32>
// ABSENT-NOT: <sbuf, 16x100xf32>
// ABSENT-NOT: <sbuf, 100x8xf32>, <hbm
// ABSENT-LABEL: func.func @online_softmax(
// ABSENT-NOT: nc.hbm_alloc
// ABSENT-NOT: nc.affine_select
// ABSENT: return

// Causal bf16 attention, 2 heads of 160 queries and 160 keys, head size 32,
// value size 48: per head K (a full 128-row chunk and a 32-row tail) is
// transposed on the Tensor Engine into a resident K^T [32, 160]; per block
// of queries (128, then 32) the scores are one matmul into PSUM, evicted
// scaled to SBUF and masked on the diagonal blocks; exp writes f16
// probabilities and their row sums; P^T (128-key chunks) times bf16 V
// accumulates the output, divided by the row sums at the end.
// CHECK-LABEL: func.func @causal_bf16(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: !nc.hbm<1x2x160x32xbf16> {{.*}}, %[[K:[a-z0-9]+]]: !nc.hbm<1x2x160x32xbf16> {{.*}}, %[[V:[a-z0-9]+]]: !nc.hbm<1x2x160x48xbf16> {{.*}}, %[[O:[a-z0-9]+]]: !nc.hbm<1x2x160x48xbf16> {{.*}}, %[[LSE:[a-z0-9]+]]: !nc.hbm<1x2x160xf32> {nc.kind = "output"
// Head 0: K rows, 128 on partitions in one DMA, then the 32-row tail.
// CHECK: %[[KROWS:[0-9]+]] = nc.alloc : <sbuf, 128x1x32xbf16>
// CHECK-NEXT: %[[KV:[0-9]+]] = nc.view %[[K]] strides [4096, 1] {partition_stride = 32 : i64} : !nc.hbm<1x2x160x32xbf16> -> <hbm, 128x1x32xbf16>
// CHECK-NEXT: nc.dma_copy %[[KROWS]], %[[KV]]
// CHECK-NEXT: %[[KTAIL:[0-9]+]] = nc.alloc : <sbuf, 32x32xbf16>
// CHECK-NEXT: %[[KTV:[0-9]+]] = nc.view %[[K]] strides [1] {offset = 4096 : i64, partition_stride = 32 : i64} : !nc.hbm<1x2x160x32xbf16> -> <hbm, 32x32xbf16>
// CHECK-NEXT: nc.dma_copy %[[KTAIL]], %[[KTV]]
// K^T [32, 160]: each chunk transposed through PSUM into its columns (evicted
// by the Vector and the Scalar Engine in turn).
// CHECK-NEXT: %[[KT:[0-9]+]] = nc.alloc : <sbuf, 32x160xbf16>
// CHECK-NEXT: %[[K0:[0-9]+]] = nc.view %[[KROWS]] strides [1] : !nc.tile<sbuf, 128x1x32xbf16> -> <sbuf, 128x32xbf16>
// CHECK-NEXT: %[[KT0:[0-9]+]] = nc.view %[[KT]] strides [1] : !nc.tile<sbuf, 32x160xbf16> -> <sbuf, 32x128xbf16>
// CHECK-NEXT: %[[T0:[0-9]+]] = nc.alloc : <psum, 32x128xf32>
// CHECK-NEXT: nc.transpose %[[T0]], %[[K0]] : <psum, 32x128xf32>, <sbuf, 128x32xbf16>
// CHECK-NEXT: nc.tensor_copy %[[KT0]], %[[T0]] : <sbuf, 32x128xbf16>, <psum, 32x128xf32>
// CHECK-NEXT: %[[KT1:[0-9]+]] = nc.view %[[KT]] strides [1] {offset = 128 : i64} : !nc.tile<sbuf, 32x160xbf16> -> <sbuf, 32x32xbf16>
// CHECK-NEXT: %[[T1:[0-9]+]] = nc.alloc : <psum, 32x32xf32>
// CHECK-NEXT: nc.transpose %[[T1]], %[[KTAIL]] : <psum, 32x32xf32>, <sbuf, 32x32xbf16>
// CHECK-NEXT: nc.activation copy %[[KT1]], %[[T1]] : !nc.tile<sbuf, 32x32xbf16>, !nc.tile<psum, 32x32xf32>
// V stays as rows, 128-key chunks on partitions.
// CHECK-NEXT: %[[VROWS:[0-9]+]] = nc.alloc : <sbuf, 128x1x48xbf16>
// CHECK-NEXT: nc.view %[[V]] strides [6144, 1] {partition_stride = 48 : i64} : !nc.hbm<1x2x160x48xbf16> -> <hbm, 128x1x48xbf16>
// CHECK-NEXT: nc.dma_copy %[[VROWS]]
// CHECK-NEXT: %[[VTAIL:[0-9]+]] = nc.alloc : <sbuf, 32x48xbf16>
// CHECK-NEXT: nc.view %[[V]] strides [1] {offset = 6144 : i64, partition_stride = 48 : i64} : !nc.hbm<1x2x160x48xbf16> -> <hbm, 32x48xbf16>
// CHECK-NEXT: nc.dma_copy %[[VTAIL]]
// Q^T of the two query blocks.
// CHECK-NEXT: %[[QROWS0:[0-9]+]] = nc.alloc : <sbuf, 128x32xbf16>
// CHECK-NEXT: nc.view %[[Q]] strides [1] {partition_stride = 32 : i64} : !nc.hbm<1x2x160x32xbf16> -> <hbm, 128x32xbf16>
// CHECK-NEXT: nc.dma_copy %[[QROWS0]]
// CHECK-NEXT: %[[QT0:[0-9]+]] = nc.alloc : <sbuf, 32x128xbf16>
// CHECK-NEXT: %[[T2:[0-9]+]] = nc.alloc : <psum, 32x128xf32>
// CHECK-NEXT: nc.transpose %[[T2]], %[[QROWS0]]
// CHECK-NEXT: nc.tensor_copy %[[QT0]], %[[T2]]
// CHECK-NEXT: %[[QROWS1:[0-9]+]] = nc.alloc : <sbuf, 32x32xbf16>
// CHECK-NEXT: nc.view %[[Q]] strides [1] {offset = 4096 : i64, partition_stride = 32 : i64} : !nc.hbm<1x2x160x32xbf16> -> <hbm, 32x32xbf16>
// CHECK-NEXT: nc.dma_copy %[[QROWS1]]
// CHECK-NEXT: %[[QT1:[0-9]+]] = nc.alloc : <sbuf, 32x32xbf16>
// CHECK-NEXT: %[[T3:[0-9]+]] = nc.alloc : <psum, 32x32xf32>
// CHECK-NEXT: nc.transpose %[[T3]], %[[QROWS1]]
// CHECK-NEXT: nc.activation copy %[[QT1]], %[[T3]]
// Block 0 (queries 0..127) sees keys 0..127 only: [128, 128] scores, the
// mask keeps key j for query p where 0 + p - j >= 0.
// CHECK-NEXT: %[[S0:[0-9]+]] = nc.alloc : <psum, 128x128xf32>
// CHECK-NEXT: %[[KW0:[0-9]+]] = nc.view %[[KT]] strides [1] : !nc.tile<sbuf, 32x160xbf16> -> <sbuf, 32x128xbf16>
// CHECK-NEXT: nc.matmul %[[S0]], %[[QT0]], %[[KW0]] : <psum, 128x128xf32>, <sbuf, 32x128xbf16>, <sbuf, 32x128xbf16>
// CHECK-NEXT: %[[X0:[0-9]+]] = nc.alloc : <sbuf, 128x128xf32>
// CHECK-NEXT: nc.activation copy %[[X0]], %[[S0]] {scale = 0.176776692 : f32}
// CHECK-NEXT: nc.affine_select ge %[[X0]], %[[X0]], base = 0, channel_multiplier = 1, steps = [-1], fill = 0xFF800000 : <sbuf, 128x128xf32>
// Block 1 (queries 128..159) sees all 160 keys; mask 128 + p - j >= 0.
// CHECK-NEXT: %[[S1:[0-9]+]] = nc.alloc : <psum, 32x160xf32>
// CHECK-NEXT: %[[KW1:[0-9]+]] = nc.view %[[KT]] strides [1] : !nc.tile<sbuf, 32x160xbf16> -> <sbuf, 32x160xbf16>
// CHECK-NEXT: nc.matmul %[[S1]], %[[QT1]], %[[KW1]] : <psum, 32x160xf32>, <sbuf, 32x32xbf16>, <sbuf, 32x160xbf16>
// CHECK-NEXT: %[[X1:[0-9]+]] = nc.alloc : <sbuf, 32x160xf32>
// CHECK-NEXT: nc.activation copy %[[X1]], %[[S1]] {scale = 0.176776692 : f32}
// CHECK-NEXT: nc.affine_select ge %[[X1]], %[[X1]], base = 128, channel_multiplier = 1, steps = [-1], fill = 0xFF800000 : <sbuf, 32x160xf32>
// Row maxima, negated: the exponentials' bias.
// CHECK-NEXT: %[[M0:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.tensor_reduce max %[[M0]], %[[X0]] : <sbuf, 128x1xf32>, <sbuf, 128x128xf32>
// CHECK-NEXT: %[[NM0:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.tensor_scalar multiply, bypass %[[NM0]], %[[M0]] {scalar0 = -1.000000e+00 : f32}
// CHECK-NEXT: %[[M1:[0-9]+]] = nc.alloc : <sbuf, 32x1xf32>
// CHECK-NEXT: nc.tensor_reduce max %[[M1]], %[[X1]] : <sbuf, 32x1xf32>, <sbuf, 32x160xf32>
// CHECK-NEXT: %[[NM1:[0-9]+]] = nc.alloc : <sbuf, 32x1xf32>
// CHECK-NEXT: nc.tensor_scalar multiply, bypass %[[NM1]], %[[M1]] {scalar0 = -1.000000e+00 : f32}
// f16 probabilities exp(s - max) and their fp32 row sums.
// CHECK-NEXT: %[[P0:[0-9]+]] = nc.alloc : <sbuf, 128x128xf16>
// CHECK-NEXT: %[[L0:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.activation exp %[[P0]], %[[X0]] bias_column %[[NM0]] row_sum %[[L0]] : !nc.tile<sbuf, 128x128xf16>, !nc.tile<sbuf, 128x128xf32>
// CHECK-NEXT: %[[P1:[0-9]+]] = nc.alloc : <sbuf, 32x160xf16>
// CHECK-NEXT: %[[L1:[0-9]+]] = nc.alloc : <sbuf, 32x1xf32>
// CHECK-NEXT: nc.activation exp %[[P1]], %[[X1]] bias_column %[[NM1]] row_sum %[[L1]] : !nc.tile<sbuf, 32x160xf16>, !nc.tile<sbuf, 32x160xf32>
// P^T of block 0: one [128, 128] transpose, evicted as f16.
// CHECK: %[[PT0P:[0-9]+]] = nc.alloc : <psum, 128x128xf32>
// CHECK-NEXT: %[[P0W:[0-9]+]] = nc.view %[[P0]] strides [1] : !nc.tile<sbuf, 128x128xf16> -> <sbuf, 128x128xf16>
// CHECK-NEXT: %[[PT0PW:[0-9]+]] = nc.view %[[PT0P]]
// CHECK-NEXT: nc.transpose %[[PT0PW]], %[[P0W]] : <psum, 128x128xf32>, <sbuf, 128x128xf16>
// CHECK-NEXT: %[[PT0:[0-9]+]] = nc.alloc : <sbuf, 128x128xf16>
// CHECK-NEXT: nc.tensor_copy %[[PT0]], %[[PT0P]] : <sbuf, 128x128xf16>, <psum, 128x128xf32>
// CHECK-NEXT: %[[PT0W:[0-9]+]] = nc.view %[[PT0]]
// P^T of block 1: keys 0..127 and 128..159, [128, 32] and [32, 32].
// CHECK: %[[PT1P:[0-9]+]] = nc.alloc : <psum, 128x32xf32>
// CHECK-NEXT: %[[P1A:[0-9]+]] = nc.view %[[P1]] strides [1] : !nc.tile<sbuf, 32x160xf16> -> <sbuf, 32x128xf16>
// CHECK-NEXT: %[[PT1PW:[0-9]+]] = nc.view %[[PT1P]]
// CHECK-NEXT: nc.transpose %[[PT1PW]], %[[P1A]] : <psum, 128x32xf32>, <sbuf, 32x128xf16>
// CHECK-NEXT: %[[PT1:[0-9]+]] = nc.alloc : <sbuf, 128x32xf16>
// CHECK-NEXT: nc.activation copy %[[PT1]], %[[PT1P]]
// CHECK-NEXT: %[[PT1W:[0-9]+]] = nc.view %[[PT1]]
// CHECK-NEXT: %[[PT2P:[0-9]+]] = nc.alloc : <psum, 32x32xf32>
// CHECK-NEXT: %[[P1B:[0-9]+]] = nc.view %[[P1]] strides [1] {offset = 128 : i64} : !nc.tile<sbuf, 32x160xf16> -> <sbuf, 32x32xf16>
// CHECK-NEXT: %[[PT2PW:[0-9]+]] = nc.view %[[PT2P]]
// CHECK-NEXT: nc.transpose %[[PT2PW]], %[[P1B]] : <psum, 32x32xf32>, <sbuf, 32x32xf16>
// CHECK-NEXT: %[[PT2:[0-9]+]] = nc.alloc : <sbuf, 32x32xf16>
// CHECK-NEXT: nc.tensor_copy %[[PT2]], %[[PT2P]]
// CHECK-NEXT: %[[PT2W:[0-9]+]] = nc.view %[[PT2]]
// P V: f16 P^T against bf16 V, accumulating over the key chunks in PSUM.
// CHECK-NEXT: %[[A0:[0-9]+]] = nc.alloc : <psum, 128x48xf32>
// CHECK-NEXT: nc.matmul %[[A0]], %[[PT0W]], %{{[0-9]+}} : <psum, 128x48xf32>, <sbuf, 128x128xf16>, <sbuf, 128x48xbf16>
// CHECK-NEXT: %[[ACC0:[0-9]+]] = nc.alloc : <sbuf, 128x48xf32>
// CHECK-NEXT: nc.tensor_copy %[[ACC0]], %[[A0]]
// CHECK-NEXT: %[[A1:[0-9]+]] = nc.alloc : <psum, 32x48xf32>
// CHECK-NEXT: nc.matmul %[[A1]], %[[PT1W]], %{{[0-9]+}} : <psum, 32x48xf32>, <sbuf, 128x32xf16>, <sbuf, 128x48xbf16>
// CHECK-NEXT: nc.matmul %[[A1]], %[[PT2W]], %{{[0-9]+}} accumulate : <psum, 32x48xf32>, <sbuf, 32x32xf16>, <sbuf, 32x48xbf16>
// CHECK-NEXT: %[[ACC1:[0-9]+]] = nc.alloc : <sbuf, 32x48xf32>
// CHECK-NEXT: nc.tensor_copy %[[ACC1]], %[[A1]]
// output = acc / sum, stored as bf16; lse = log(sum) + max stored as f32.
// CHECK-NEXT: %[[R0:[0-9]+]] = nc.alloc : <sbuf, 128x48xbf16>
// CHECK-NEXT: nc.tensor_scalar divide, bypass %[[R0]], %[[ACC0]] column0 %[[L0]]
// CHECK-NEXT: %[[OV0:[0-9]+]] = nc.view %[[O]] strides [1] {partition_stride = 48 : i64} : !nc.hbm<1x2x160x48xbf16> -> <hbm, 128x48xbf16>
// CHECK-NEXT: nc.dma_copy %[[OV0]], %[[R0]]
// CHECK-NEXT: %[[LOG0:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.activation log %[[LOG0]], %[[L0]]
// CHECK-NEXT: %[[LSE0:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.tensor_tensor subtract %[[LSE0]], %[[LOG0]], %[[NM0]]
// CHECK-NEXT: %[[LV0:[0-9]+]] = nc.view %[[LSE]] strides [1] {partition_stride = 1 : i64} : !nc.hbm<1x2x160xf32> -> <hbm, 128x1xf32>
// CHECK-NEXT: nc.dma_copy %[[LV0]], %[[LSE0]]
// CHECK-NEXT: %[[R1:[0-9]+]] = nc.alloc : <sbuf, 32x48xbf16>
// CHECK-NEXT: nc.tensor_scalar divide, bypass %[[R1]], %[[ACC1]] column0 %[[L1]]
// CHECK-NEXT: %[[OV1:[0-9]+]] = nc.view %[[O]] strides [1] {offset = 6144 : i64, partition_stride = 48 : i64} : !nc.hbm<1x2x160x48xbf16> -> <hbm, 32x48xbf16>
// CHECK-NEXT: nc.dma_copy %[[OV1]], %[[R1]]
// CHECK: nc.tensor_tensor subtract
// CHECK-NEXT: %[[LV1:[0-9]+]] = nc.view %[[LSE]] strides [1] {offset = 128 : i64, partition_stride = 1 : i64} : !nc.hbm<1x2x160xf32> -> <hbm, 32x1xf32>
// CHECK-NEXT: nc.dma_copy %[[LV1]]
// Head 1: the same kernel on the second head's rows.
// CHECK-NEXT: nc.alloc : <sbuf, 128x1x32xbf16>
// CHECK-NEXT: nc.view %[[K]] strides [4096, 1] {offset = 5120 : i64, partition_stride = 32 : i64}
// CHECK-COUNT-2: nc.affine_select ge
// CHECK-NOT: nc.affine_select
// CHECK: nc.view %[[O]] strides [1] {offset = 13824 : i64, partition_stride = 48 : i64} : !nc.hbm<1x2x160x48xbf16> -> <hbm, 32x48xbf16>
// CHECK: nc.view %[[LSE]] strides [1] {offset = 288 : i64, partition_stride = 1 : i64} : !nc.hbm<1x2x160xf32> -> <hbm, 32x1xf32>
// CHECK-NEXT: nc.dma_copy
// CHECK-NEXT: return
func.func @causal_bf16(%q: tensor<1x2x160x32xbf16>, %k: tensor<1x2x160x32xbf16>, %v: tensor<1x2x160x48xbf16>) -> (tensor<1x2x160x48xbf16>, tensor<1x2x160xf32>) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.17677669529663687 causal : (tensor<1x2x160x32xbf16>, tensor<1x2x160x32xbf16>, tensor<1x2x160x48xbf16>) -> (tensor<1x2x160x48xbf16>, tensor<1x2x160xf32>)
  return %o, %lse : tensor<1x2x160x48xbf16>, tensor<1x2x160xf32>
}

// -----

// f32 attention (not causal): the operands stay f32 in SBUF, the matmuls
// are f32 x f32 and the probabilities are f32 (f32 pairs only with f32 on
// the Tensor Engine); no mask.
// Both heads are short (one block of queries and of keys): Q, K and V each
// load for the two heads with one DMA.
// CHECK-LABEL: func.func @f32(
// CHECK: nc.dma_copy {{.*}} : <sbuf, 100x2x16xf32>, <hbm, 100x2x16xf32>
// CHECK: nc.dma_copy {{.*}} : <sbuf, 100x2x16xf32>, <hbm, 100x2x16xf32>
// CHECK: nc.dma_copy {{.*}} : <sbuf, 100x2x8xf32>, <hbm, 100x2x8xf32>
// CHECK: nc.transpose {{.*}} : <psum, 16x100xf32>, <sbuf, 100x16xf32>
// CHECK: nc.matmul {{.*}} : <psum, 100x100xf32>, <sbuf, 16x100xf32>, <sbuf, 16x100xf32>
// CHECK: nc.activation copy {{.*}} {scale = 2.500000e-01 : f32} : !nc.tile<sbuf, 100x100xf32>, !nc.tile<psum, 100x100xf32>
// CHECK-NOT: nc.affine_select
// CHECK: nc.tensor_reduce max
// CHECK: %[[P:[0-9]+]] = nc.alloc : <sbuf, 100x100xf32>
// CHECK-NEXT: %[[L:[0-9]+]] = nc.alloc : <sbuf, 100x1xf32>
// CHECK-NEXT: nc.activation exp %[[P]], {{.*}} row_sum %[[L]] : !nc.tile<sbuf, 100x100xf32>, !nc.tile<sbuf, 100x100xf32>
// CHECK: nc.transpose {{.*}} : <psum, 100x100xf32>, <sbuf, 100x100xf32>
// CHECK: nc.matmul {{.*}} : <psum, 100x8xf32>, <sbuf, 100x100xf32>, <sbuf, 100x8xf32>
// CHECK: nc.tensor_scalar divide, bypass {{.*}} column0 %[[L]] : !nc.tile<sbuf, 100x8xf32>
func.func @f32(%q: tensor<2x100x16xf32>, %k: tensor<2x100x16xf32>, %v: tensor<2x100x8xf32>) -> (tensor<2x100x8xf32>, tensor<2x100xf32>) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.25 : (tensor<2x100x16xf32>, tensor<2x100x16xf32>, tensor<2x100x8xf32>) -> (tensor<2x100x8xf32>, tensor<2x100xf32>)
  return %o, %lse : tensor<2x100x8xf32>, tensor<2x100xf32>
}

// -----

// The same f32 attention as trn-auto-cast leaves it: the DMAs convert the
// f32 operands to bf16 tiles as they load them, the matmuls are bf16 and
// the probabilities f16; statistics, accumulator and output stay f32. The
// two short heads run as one group, phase by phase.
// CHECK-LABEL: func.func @f32_matmul_bf16(
// CHECK: nc.dma_copy {{.*}} : <sbuf, 100x2x16xbf16>, <hbm, 100x2x16xf32>
// CHECK: nc.dma_copy {{.*}} : <sbuf, 100x2x16xbf16>, <hbm, 100x2x16xf32>
// CHECK: nc.dma_copy {{.*}} : <sbuf, 100x2x8xbf16>, <hbm, 100x2x8xf32>
// CHECK: nc.transpose {{.*}} : <psum, 16x100xf32>, <sbuf, 100x16xbf16>
// CHECK: nc.matmul {{.*}} : <psum, 100x100xf32>, <sbuf, 16x100xbf16>, <sbuf, 16x100xbf16>
// CHECK: nc.activation copy {{.*}} : !nc.tile<sbuf, 100x100xf32>, !nc.tile<psum, 100x100xf32>
// CHECK: nc.activation exp {{.*}} : !nc.tile<sbuf, 100x100xf16>, !nc.tile<sbuf, 100x100xf32>
// CHECK: nc.transpose {{.*}} : <psum, 100x100xf32>, <sbuf, 100x100xf16>
// CHECK: nc.matmul {{.*}} : <psum, 100x8xf32>, <sbuf, 100x100xf16>, <sbuf, 100x8xbf16>
// CHECK: nc.tensor_scalar divide, bypass {{.*}} : !nc.tile<sbuf, 100x8xf32>, !nc.tile<sbuf, 100x8xf32>
// Both heads' outputs go out with one DMA, their lse with another.
// CHECK: nc.view %arg3 strides [800, 1] {partition_stride = 8 : i64} : !nc.hbm<2x100x8xf32> -> <hbm, 100x2x8xf32>
// CHECK-NEXT: nc.dma_copy {{.*}} : <hbm, 100x2x8xf32>, <sbuf, 100x2x8xf32>
// CHECK-NEXT: nc.view %arg4 strides [100] {partition_stride = 1 : i64} : !nc.hbm<2x100xf32> -> <hbm, 100x2xf32>
// CHECK-NEXT: nc.dma_copy {{.*}} : <hbm, 100x2xf32>, <sbuf, 100x2xf32>
func.func @f32_matmul_bf16(%q: tensor<2x100x16xf32>, %k: tensor<2x100x16xf32>, %v: tensor<2x100x8xf32>) -> (tensor<2x100x8xf32>, tensor<2x100xf32>) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.25 {trn.matmul_type = bf16} : (tensor<2x100x16xf32>, tensor<2x100x16xf32>, tensor<2x100x8xf32>) -> (tensor<2x100x8xf32>, tensor<2x100xf32>)
  return %o, %lse : tensor<2x100x8xf32>, tensor<2x100xf32>
}

// -----

// 640 keys: the scores of one query block are two PSUM tiles of at most 512
// columns, [128, 512] then [128, 128], with an online softmax: the second
// block's -max is min(-its max, the running -max); the correction
// exp(old max - new max) rescales the running sum and output accumulator.
// The [128, 512] block's P^T is four [128, 128] transposes side by side in
// one PSUM bank and its P V four accumulating matmuls.
// CHECK-LABEL: func.func @online_softmax(
// CHECK: %[[S0:[0-9]+]] = nc.alloc : <psum, 128x512xf32>
// CHECK-NEXT: %[[KW0:[0-9]+]] = nc.view %{{[0-9]+}} strides [1] : !nc.tile<sbuf, 16x640xbf16> -> <sbuf, 16x512xbf16>
// CHECK-NEXT: nc.matmul %[[S0]], %[[QT:[0-9]+]], %[[KW0]] : <psum, 128x512xf32>
// CHECK-NEXT: %[[X0:[0-9]+]] = nc.alloc : <sbuf, 128x512xf32>
// CHECK-NEXT: nc.activation copy %[[X0]], %[[S0]]
// CHECK-NEXT: %[[M0:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.tensor_reduce max %[[M0]], %[[X0]]
// CHECK-NEXT: %[[NM0:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.tensor_scalar multiply, bypass %[[NM0]], %[[M0]] {scalar0 = -1.000000e+00 : f32}
// CHECK-NEXT: %[[P0:[0-9]+]] = nc.alloc : <sbuf, 128x512xf16>
// CHECK-NEXT: %[[L0:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.activation exp %[[P0]], %[[X0]] bias_column %[[NM0]] row_sum %[[L0]]
// CHECK-NEXT: %[[S1:[0-9]+]] = nc.alloc : <psum, 128x128xf32>
// CHECK-NEXT: %[[KW1:[0-9]+]] = nc.view %{{[0-9]+}} strides [1] {offset = 512 : i64} : !nc.tile<sbuf, 16x640xbf16> -> <sbuf, 16x128xbf16>
// CHECK-NEXT: nc.matmul %[[S1]], %[[QT]], %[[KW1]] : <psum, 128x128xf32>
// CHECK-NEXT: %[[X1:[0-9]+]] = nc.alloc : <sbuf, 128x128xf32>
// CHECK-NEXT: nc.activation copy %[[X1]], %[[S1]]
// CHECK: %[[PTP:[0-9]+]] = nc.alloc : <psum, 128x512xf32>
// CHECK-COUNT-4: nc.transpose {{.*}} : <psum, 128x128xf32>, <sbuf, 128x128xf16>
// CHECK-NEXT: %[[PT:[0-9]+]] = nc.alloc : <sbuf, 128x512xf16>
// CHECK-NEXT: nc.tensor_copy %[[PT]], %[[PTP]]
// CHECK: %[[M1:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.tensor_reduce max %[[M1]], %[[X1]]
// CHECK-NEXT: %[[NM1:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.tensor_scalar multiply, min %[[NM1]], %[[M1]] column1 %[[NM0]] {scalar0 = -1.000000e+00 : f32}
// CHECK-NEXT: %[[A0:[0-9]+]] = nc.alloc : <psum, 128x16xf32>
// CHECK-NEXT: nc.matmul %[[A0]], {{.*}} : <psum, 128x16xf32>, <sbuf, 128x128xf16>, <sbuf, 128x16xbf16>
// CHECK-COUNT-3: nc.matmul %[[A0]], {{.*}} accumulate : <psum, 128x16xf32>, <sbuf, 128x128xf16>, <sbuf, 128x16xbf16>
// CHECK-NEXT: %[[ACC0:[0-9]+]] = nc.alloc : <sbuf, 128x16xf32>
// CHECK-NEXT: nc.tensor_copy %[[ACC0]], %[[A0]]
// CHECK-NEXT: %[[P1:[0-9]+]] = nc.alloc : <sbuf, 128x128xf16>
// CHECK-NEXT: %[[L1:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.activation exp %[[P1]], %[[X1]] bias_column %[[NM1]] row_sum %[[L1]]
// CHECK-NEXT: %[[C:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.activation exp %[[C]], %[[NM0]] bias_column %[[NM1]] {scale = -1.000000e+00 : f32}
// CHECK-NEXT: %[[SUM:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.tensor_scalar multiply, add %[[SUM]], %[[L0]] column0 %[[C]] column1 %[[L1]]
// CHECK: %[[A1:[0-9]+]] = nc.alloc : <psum, 128x16xf32>
// CHECK-NEXT: nc.matmul %[[A1]], {{.*}} : <psum, 128x16xf32>, <sbuf, 128x128xf16>, <sbuf, 128x16xbf16>
// CHECK-NEXT: %[[ACC1:[0-9]+]] = nc.alloc : <sbuf, 128x16xf32>
// CHECK-NEXT: nc.tensor_scalar multiply, bypass %[[ACC1]], %[[ACC0]] column0 %[[C]]
// CHECK-NEXT: nc.tensor_tensor add %[[ACC1]], %[[ACC1]], %[[A1]]
// CHECK-NEXT: %[[R:[0-9]+]] = nc.alloc : <sbuf, 128x16xbf16>
// CHECK-NEXT: nc.tensor_scalar divide, bypass %[[R]], %[[ACC1]] column0 %[[SUM]]
// CHECK: nc.activation log %[[LOG:[0-9]+]], %[[SUM]]
// CHECK-NEXT: %[[LSE:[0-9]+]] = nc.alloc : <sbuf, 128x1xf32>
// CHECK-NEXT: nc.tensor_tensor subtract %[[LSE]], %[[LOG]], %[[NM1]]
// CHECK-NOT: nc.matmul
// CHECK: return
func.func @online_softmax(%q: tensor<1x128x16xbf16>, %k: tensor<1x640x16xbf16>, %v: tensor<1x640x16xbf16>) -> (tensor<1x128x16xbf16>, tensor<1x128xf32>) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.25 : (tensor<1x128x16xbf16>, tensor<1x640x16xbf16>, tensor<1x640x16xbf16>) -> (tensor<1x128x16xbf16>, tensor<1x128xf32>)
  return %o, %lse : tensor<1x128x16xbf16>, tensor<1x128xf32>
}

// -----

func.func @head_size_256(%q: tensor<1x64x256xbf16>, %k: tensor<1x64x256xbf16>, %v: tensor<1x64x64xbf16>) -> (tensor<1x64x64xbf16>, tensor<1x64xf32>) {
  // expected-error @+1 {{'trn.attention' cannot be lowered as one fused kernel (head size 256 exceeds 128); run trn-decompose-composites first}}
  %o, %lse = trn.attention %q, %k, %v, scale = 0.0625 : (tensor<1x64x256xbf16>, tensor<1x64x256xbf16>, tensor<1x64x64xbf16>) -> (tensor<1x64x64xbf16>, tensor<1x64xf32>)
  return %o, %lse : tensor<1x64x64xbf16>, tensor<1x64xf32>
}

// -----

func.func @value_size_640(%q: tensor<1x64x64xbf16>, %k: tensor<1x64x64xbf16>, %v: tensor<1x64x640xbf16>) -> (tensor<1x64x640xbf16>, tensor<1x64xf32>) {
  // expected-error @+1 {{'trn.attention' cannot be lowered as one fused kernel (value size 640 exceeds 512); run trn-decompose-composites first}}
  %o, %lse = trn.attention %q, %k, %v, scale = 0.125 causal : (tensor<1x64x64xbf16>, tensor<1x64x64xbf16>, tensor<1x64x640xbf16>) -> (tensor<1x64x640xbf16>, tensor<1x64xf32>)
  return %o, %lse : tensor<1x64x640xbf16>, tensor<1x64xf32>
}
