// RUN: trn-opt %s | trn-opt | FileCheck %s
// RUN: trn-opt %s --mlir-print-op-generic | trn-opt | FileCheck %s

// CHECK-LABEL: func @matmul_tile
func.func @matmul_tile(%a: !nc.hbm<128x128xbf16>, %b: !nc.hbm<128x512xbf16>, %c: !nc.hbm<128x512xf32>) {
  // CHECK: %[[S:.*]] = nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64} : {{(!nc.tile)?}}<sbuf, 128x128xbf16>
  %s = nc.alloc {start_partition = 0, byte_offset = 0} : !nc.tile<sbuf, 128x128xbf16>
  %m = nc.alloc : !nc.tile<sbuf, 128x512xbf16>
  %p = nc.alloc : !nc.tile<psum, 128x512xf32>
  %o = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.view %{{.*}} strides [1] {partition_stride = 128 : i64} : !nc.hbm<128x128xbf16> -> {{(!nc.tile)?}}<hbm, 128x128xbf16>
  %av = nc.view %a strides [1] {partition_stride = 128} : !nc.hbm<128x128xbf16> -> !nc.tile<hbm, 128x128xbf16>
  %bv = nc.view %b strides [1] {partition_stride = 512} : !nc.hbm<128x512xbf16> -> !nc.tile<hbm, 128x512xbf16>
  %cv = nc.view %c strides [1] {partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x512xf32>
  // CHECK: nc.dma_copy %{{.*}}, %{{.*}} {queue = 1 : i64} : {{(!nc.tile)?}}<sbuf, 128x128xbf16>, {{(!nc.tile)?}}<hbm, 128x128xbf16>
  nc.dma_copy %s, %av {queue = 1} : !nc.tile<sbuf, 128x128xbf16>, !nc.tile<hbm, 128x128xbf16>
  nc.dma_copy %m, %bv : !nc.tile<sbuf, 128x512xbf16>, !nc.tile<hbm, 128x512xbf16>
  // CHECK: nc.matmul %{{.*}}, %{{.*}}, %{{.*}} : {{(!nc.tile)?}}<psum, 128x512xf32>, {{(!nc.tile)?}}<sbuf, 128x128xbf16>, {{(!nc.tile)?}}<sbuf, 128x512xbf16>
  nc.matmul %p, %s, %m : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x128xbf16>, !nc.tile<sbuf, 128x512xbf16>
  // CHECK: nc.matmul {{.*}} accumulate
  nc.matmul %p, %s, %m accumulate : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x128xbf16>, !nc.tile<sbuf, 128x512xbf16>
  // CHECK: nc.activation exp %{{.*}}, %{{.*}} {scale = 2.000000e+00 : f32} : {{(!nc.tile)?}}<sbuf, 128x512xf32>, {{(!nc.tile)?}}<psum, 128x512xf32>
  nc.activation exp %o, %p {scale = 2.0 : f32} : !nc.tile<sbuf, 128x512xf32>, !nc.tile<psum, 128x512xf32>
  nc.dma_copy %cv, %o {queue = 2} : !nc.tile<hbm, 128x512xf32>, !nc.tile<sbuf, 128x512xf32>
  return
}

// CHECK-LABEL: func @vector_ops
func.func @vector_ops() {
  %x = nc.alloc : !nc.tile<sbuf, 64x256xf32>
  %y = nc.alloc : !nc.tile<sbuf, 64x256xbf16>
  %c = nc.alloc : !nc.tile<sbuf, 64x1xf32>
  %r = nc.alloc : !nc.tile<sbuf, 64x1xf32>
  %pred = nc.alloc : !nc.tile<sbuf, 64x256xi1>
  %st = nc.alloc : !nc.tile<sbuf, 64x6xf32>
  %mv = nc.alloc : !nc.tile<sbuf, 64x2xf32>
  %i = nc.alloc : !nc.tile<sbuf, 64x256xi32>
  // CHECK: nc.tensor_tensor add
  nc.tensor_tensor add %x, %x, %y : !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x256xbf16>
  // CHECK: nc.tensor_tensor pow {{.*}} on gpsimd :
  nc.tensor_tensor pow %x, %x, %y on gpsimd : !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x256xbf16>
  // CHECK: nc.tensor_scalar multiply, add {{.*}} column0 {{.*}} {scalar1 = 1.000000e+00 : f32}
  nc.tensor_scalar multiply, add %y, %x column0 %c {scalar1 = 1.0 : f32} : !nc.tile<sbuf, 64x256xbf16>, !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x1xf32>
  // CHECK: nc.tensor_reduce max {{.*}} negate
  nc.tensor_reduce max %r, %x negate : !nc.tile<sbuf, 64x1xf32>, !nc.tile<sbuf, 64x256xf32>
  nc.tensor_copy %y, %x : !nc.tile<sbuf, 64x256xbf16>, !nc.tile<sbuf, 64x256xf32>
  nc.select %x, %pred, %x, %y : !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x256xi1>, !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x256xbf16>
  nc.memset %x, 0.0 : !nc.tile<sbuf, 64x256xf32>
  %h = nc.view %x strides [1] : !nc.tile<sbuf, 64x256xf32> -> !nc.tile<sbuf, 64x256xf32>
  // CHECK: nc.bn_stats
  nc.bn_stats %st, %h : !nc.tile<sbuf, 64x6xf32>, !nc.tile<sbuf, 64x256xf32>
  nc.bn_aggr %mv, %st : !nc.tile<sbuf, 64x2xf32>, !nc.tile<sbuf, 64x6xf32>
  // CHECK: nc.iota {{.*}}, base = 0, channel_multiplier = 256, steps = [1]
  nc.iota %i, base = 0, channel_multiplier = 256, steps = [1] : !nc.tile<sbuf, 64x256xi32>
  %seed = nc.alloc : !nc.tile<sbuf, 64x2xi32>
  // CHECK: nc.rng {{.*}}, stream = 3, base = 512, channel_multiplier = 256, steps = [1] {keep_below = 15099495 : i64}
  nc.rng %pred, %seed, stream = 3, base = 512, channel_multiplier = 256, steps = [1] {keep_below = 15099495 : i64} : !nc.tile<sbuf, 64x256xi1>, !nc.tile<sbuf, 64x2xi32>
  // CHECK: nc.rng {{.*}} {high = 3.000000e+00 : f32, low = -2.000000e+00 : f32}
  nc.rng %y, %seed, stream = 0, base = 0, channel_multiplier = 256, steps = [1] {low = -2.0 : f32, high = 3.0 : f32} : !nc.tile<sbuf, 64x256xbf16>, !nc.tile<sbuf, 64x2xi32>
  // CHECK: nc.affine_select ge
  nc.affine_select ge %x, %x, base = 0, channel_multiplier = 1, steps = [-1], fill = -3.0e+38 : !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x256xf32>
  // CHECK: nc.activation exp {{.*}} bias_column {{.*}} row_sum
  nc.activation exp %x, %x bias_column %c row_sum %r : !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x256xf32>, !nc.tile<sbuf, 64x1xf32>, !nc.tile<sbuf, 64x1xf32>
  return
}

// CHECK-LABEL: func @embedding
func.func @embedding(%table: !nc.hbm<1000x64xf32>) {
  %rows = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  %ids = nc.alloc : !nc.tile<sbuf, 128x1xi32>
  // CHECK: nc.dma_gather %{{.*}}, %{{.*}}[%{{.*}}]
  nc.dma_gather %rows, %table[%ids] : !nc.tile<sbuf, 128x64xf32>, !nc.hbm<1000x64xf32>, !nc.tile<sbuf, 128x1xi32>
  // CHECK: nc.dma_scatter_add %{{.*}}[%{{.*}}], %{{.*}}
  nc.dma_scatter_add %table[%ids], %rows : !nc.hbm<1000x64xf32>, !nc.tile<sbuf, 128x1xi32>, !nc.tile<sbuf, 128x64xf32>
  %t = nc.alloc : !nc.tile<psum, 64x128xf32>
  // CHECK: nc.transpose
  nc.transpose %t, %rows : !nc.tile<psum, 64x128xf32>, !nc.tile<sbuf, 128x64xf32>
  %s = nc.hbm_alloc "spill0" : !nc.hbm<128x64xf32>
  return
}

// HBM windows are DMA descriptors: their strides are not 16-bit bound (rows
// of a 50257-word vocabulary, a column of it).
// CHECK-LABEL: func @wide_hbm_rows
func.func @wide_hbm_rows(%logits: !nc.hbm<256x50257xf32>) {
  // CHECK: nc.view %{{.*}} strides [1] {offset = 40000 : i64, partition_stride = 50257 : i64}
  %rows = nc.view %logits strides [1] {offset = 40000, partition_stride = 50257} : !nc.hbm<256x50257xf32> -> !nc.tile<hbm, 128x2048xf32>
  // CHECK: nc.view %{{.*}} strides [50257] {offset = 7 : i64, partition_stride = 6432896 : i64}
  %column = nc.view %logits strides [50257] {offset = 7, partition_stride = 6432896} : !nc.hbm<256x50257xf32> -> !nc.tile<hbm, 2x128xf32>
  return
}

// CHECK-LABEL: func @row_window
// CHECK: nc.hbm_reshape %arg0 {offset = 16 : i64} : {{.*}}<4x8xbf16> -> {{.*}}<2x8xbf16>
func.func @row_window(%a: !nc.hbm<4x8xbf16>) {
  %r = nc.hbm_reshape %a {offset = 16} : !nc.hbm<4x8xbf16> -> !nc.hbm<2x8xbf16>
  return
}
