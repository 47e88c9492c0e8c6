// RUN: trn-opt %s -nc-allocate -nc-insert-sync | FileCheck %s
// RUN: not trn-opt %s -nc-insert-sync 2>&1 | FileCheck %s --check-prefix=NOALLOC

// Load, matmul, evict, store: each consumer waits for its producer's stream.
// Semaphores: 0 tensor, 1 vector, 2 scalar, 3 gpsimd, 5+q DMA queue q.
// CHECK-LABEL: func @matmul_tile
func.func @matmul_tile(%a: !nc.hbm<128x128xbf16>, %b: !nc.hbm<128x512xbf16>, %c: !nc.hbm<128x512xf32>) {
  %av = nc.view %a strides [1] {partition_stride = 128} : !nc.hbm<128x128xbf16> -> !nc.tile<hbm, 128x128xbf16>
  %bv = nc.view %b strides [1] {partition_stride = 512} : !nc.hbm<128x512xbf16> -> !nc.tile<hbm, 128x512xbf16>
  %cv = nc.view %c strides [1] {partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x512xf32>
  %s = nc.alloc : !nc.tile<sbuf, 128x128xbf16>
  %m = nc.alloc : !nc.tile<sbuf, 128x512xbf16>
  %p = nc.alloc : !nc.tile<psum, 128x512xf32>
  %o = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 5 : i64}
  nc.dma_copy %s, %av : !nc.tile<sbuf, 128x128xbf16>, !nc.tile<hbm, 128x128xbf16>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 6 : i64, queue = 1 : i64}
  nc.dma_copy %m, %bv {queue = 1} : !nc.tile<sbuf, 128x512xbf16>, !nc.tile<hbm, 128x512xbf16>
  // CHECK: nc.matmul {{.*}} {nc.signal = 0 : i64, nc.waits = [array<i64: 5, 1>, array<i64: 6, 1>]}
  nc.matmul %p, %s, %m : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x128xbf16>, !nc.tile<sbuf, 128x512xbf16>
  // CHECK: nc.activation copy {{.*}} {nc.signal = 2 : i64, nc.waits = [array<i64: 0, 1>]}
  nc.activation copy %o, %p : !nc.tile<sbuf, 128x512xf32>, !nc.tile<psum, 128x512xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 7 : i64, nc.waits = [array<i64: 2, 1>], queue = 2 : i64}
  nc.dma_copy %cv, %o {queue = 2} : !nc.tile<hbm, 128x512xf32>, !nc.tile<sbuf, 128x512xf32>
  return
}

// NOALLOC: error: operand tile has no address; run nc-allocate before nc-insert-sync

// Per-partition scalar columns are read too: a Vector Engine tensor_scalar
// whose column0 the Scalar Engine wrote waits for it, and so does an
// activation's bias column.
// CHECK-LABEL: func @column_operands
func.func @column_operands(%x: !nc.hbm<128x64xf32>) {
  %xv = nc.view %x strides [1] {partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  %t = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  %c = nc.alloc : !nc.tile<sbuf, 128x1xf32>
  %r = nc.alloc : !nc.tile<sbuf, 128x1xf32>
  %o = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  %o2 = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  nc.dma_copy %t, %xv : !nc.tile<sbuf, 128x64xf32>, !nc.tile<hbm, 128x64xf32>
  // CHECK: nc.tensor_reduce {{.*}} {nc.signal = 1 : i64, nc.waits = [array<i64: 5, 1>]}
  nc.tensor_reduce add %c, %t : !nc.tile<sbuf, 128x1xf32>, !nc.tile<sbuf, 128x64xf32>
  // CHECK: nc.activation rsqrt {{.*}} {nc.signal = 2 : i64, nc.waits = [array<i64: 1, 1>]}
  nc.activation rsqrt %r, %c : !nc.tile<sbuf, 128x1xf32>, !nc.tile<sbuf, 128x1xf32>
  // CHECK: nc.tensor_scalar multiply, bypass {{.*}} column0 {{.*}} {nc.signal = 1 : i64, nc.waits = [array<i64: 2, 1>, {{.*}}]}
  nc.tensor_scalar multiply, bypass %o, %t column0 %r : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x1xf32>
  // CHECK: nc.activation exp {{.*}} bias_column {{.*}} {nc.signal = 2 : i64, nc.waits = [array<i64: 1, 2>]}
  nc.activation exp %o2, %o bias_column %c : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x1xf32>
  return
}

// Placed HBM scratch tensors are tracked by bytes: t1 reuses t0's bytes, so
// its write (queue 2) waits for the read of t0 (queue 1), though they are
// different tensors.
// CHECK-LABEL: func @scratch_reuse
func.func @scratch_reuse(%x: !nc.hbm<8x128xf32>) {
  %t0 = nc.hbm_alloc "t0" {byte_offset = 0} : !nc.hbm<8x128xf32>
  %s = nc.alloc : !nc.tile<sbuf, 8x128xf32>
  %r = nc.alloc : !nc.tile<sbuf, 8x128xf32>
  %xv = nc.view %x strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  %v0 = nc.view %t0 strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 5 : i64}
  nc.dma_copy %s, %xv : !nc.tile<sbuf, 8x128xf32>, !nc.tile<hbm, 8x128xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 5 : i64}
  nc.dma_copy %v0, %s : !nc.tile<hbm, 8x128xf32>, !nc.tile<sbuf, 8x128xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 6 : i64, nc.waits = [array<i64: 5, 2>], queue = 1 : i64}
  nc.dma_copy %r, %v0 {queue = 1} : !nc.tile<sbuf, 8x128xf32>, !nc.tile<hbm, 8x128xf32>
  %t1 = nc.hbm_alloc "t1" {byte_offset = 0} : !nc.hbm<8x128xf32>
  %v1 = nc.view %t1 strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 7 : i64, nc.waits = [array<i64: 5, 2>, array<i64: 6, 1>], queue = 2 : i64}
  nc.dma_copy %v1, %s {queue = 2} : !nc.tile<hbm, 8x128xf32>, !nc.tile<sbuf, 8x128xf32>
  return
}

// A view's footprint is its own bytes: a matmul reading K tile 0 of a panel
// waits for the load of that tile only, not for the load of tile 1 into the
// same allocation; overlapping views still order (the second load of tile 0
// waits for the matmul that read it).
// CHECK-LABEL: func @panel_views
func.func @panel_views(%a: !nc.hbm<128x128xbf16>, %b: !nc.hbm<128x1024xbf16>) {
  %av = nc.view %a strides [1] {partition_stride = 128} : !nc.hbm<128x128xbf16> -> !nc.tile<hbm, 128x128xbf16>
  %b0 = nc.view %b strides [1] {partition_stride = 1024} : !nc.hbm<128x1024xbf16> -> !nc.tile<hbm, 128x512xbf16>
  %b1 = nc.view %b strides [1] {offset = 512, partition_stride = 1024} : !nc.hbm<128x1024xbf16> -> !nc.tile<hbm, 128x512xbf16>
  %s = nc.alloc : !nc.tile<sbuf, 128x128xbf16>
  %panel = nc.alloc : !nc.tile<sbuf, 128x1024xbf16>
  %t0 = nc.view %panel strides [1] : !nc.tile<sbuf, 128x1024xbf16> -> !nc.tile<sbuf, 128x512xbf16>
  %t1 = nc.view %panel strides [1] {offset = 512} : !nc.tile<sbuf, 128x1024xbf16> -> !nc.tile<sbuf, 128x512xbf16>
  %p = nc.alloc : !nc.tile<psum, 128x512xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 5 : i64}
  nc.dma_copy %s, %av : !nc.tile<sbuf, 128x128xbf16>, !nc.tile<hbm, 128x128xbf16>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 6 : i64, queue = 1 : i64}
  nc.dma_copy %t0, %b0 {queue = 1} : !nc.tile<sbuf, 128x512xbf16>, !nc.tile<hbm, 128x512xbf16>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 7 : i64, queue = 2 : i64}
  nc.dma_copy %t1, %b1 {queue = 2} : !nc.tile<sbuf, 128x512xbf16>, !nc.tile<hbm, 128x512xbf16>
  // CHECK: nc.matmul {{.*}} {nc.signal = 0 : i64, nc.waits = [array<i64: 5, 1>, array<i64: 6, 1>]}
  nc.matmul %p, %s, %t0 : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x128xbf16>, !nc.tile<sbuf, 128x512xbf16>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 8 : i64, nc.waits = [array<i64: 0, 1>, array<i64: 6, 1>], queue = 3 : i64}
  nc.dma_copy %t0, %b1 {queue = 3} : !nc.tile<sbuf, 128x512xbf16>, !nc.tile<hbm, 128x512xbf16>
  return
}

// Stores of different tiles of one output touch disjoint bytes and do not
// wait for each other (each would otherwise pay the DMA latency in series);
// a store over bytes another queue wrote or read waits for it. A view of a
// reshape of the tensor is bounded the same way.
// CHECK-LABEL: func @hbm_ranges
func.func @hbm_ranges(%c: !nc.hbm<256x512xf32>) {
  %c0 = nc.view %c strides [1] {partition_stride = 512} : !nc.hbm<256x512xf32> -> !nc.tile<hbm, 128x512xf32>
  %c1 = nc.view %c strides [1] {offset = 65536, partition_stride = 512} : !nc.hbm<256x512xf32> -> !nc.tile<hbm, 128x512xf32>
  %r = nc.hbm_reshape %c : !nc.hbm<256x512xf32> -> !nc.hbm<512x256xf32>
  %r1 = nc.view %r strides [1] {offset = 65792, partition_stride = 256} : !nc.hbm<512x256xf32> -> !nc.tile<hbm, 1x256xf32>
  %t = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  %u = nc.alloc : !nc.tile<sbuf, 1x256xf32>
  // CHECK: nc.memset {{.*}} {nc.signal = 1 : i64}
  nc.memset %t, 0.0 : !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 5 : i64, nc.waits = [array<i64: 1, 1>]}
  nc.dma_copy %c0, %t : !nc.tile<hbm, 128x512xf32>, !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 6 : i64, nc.waits = [array<i64: 1, 1>], queue = 1 : i64}
  nc.dma_copy %c1, %t {queue = 1} : !nc.tile<hbm, 128x512xf32>, !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 7 : i64, nc.waits = [array<i64: 6, 1>], queue = 2 : i64}
  nc.dma_copy %u, %r1 {queue = 2} : !nc.tile<sbuf, 1x256xf32>, !nc.tile<hbm, 1x256xf32>
  return
}

// A window of rows (an hbm_reshape at an offset: a slice needing no copy)
// touches its bytes of the tensor: a load through it waits for the store of
// those rows only.
// CHECK-LABEL: func @hbm_row_window
func.func @hbm_row_window(%c: !nc.hbm<256x512xf32>) {
  %c0 = nc.view %c strides [1] {partition_stride = 512} : !nc.hbm<256x512xf32> -> !nc.tile<hbm, 128x512xf32>
  %c1 = nc.view %c strides [1] {offset = 65536, partition_stride = 512} : !nc.hbm<256x512xf32> -> !nc.tile<hbm, 128x512xf32>
  %w = nc.hbm_reshape %c {offset = 65536} : !nc.hbm<256x512xf32> -> !nc.hbm<128x512xf32>
  %w0 = nc.view %w strides [1] {partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x512xf32>
  %t = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  %u = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.memset {{.*}} {nc.signal = 1 : i64}
  nc.memset %t, 0.0 : !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 5 : i64, nc.waits = [array<i64: 1, 1>]}
  nc.dma_copy %c0, %t : !nc.tile<hbm, 128x512xf32>, !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 6 : i64, nc.waits = [array<i64: 1, 1>], queue = 1 : i64}
  nc.dma_copy %c1, %t {queue = 1} : !nc.tile<hbm, 128x512xf32>, !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.dma_copy {{.*}} {nc.signal = 7 : i64, nc.waits = [array<i64: 6, 1>], queue = 2 : i64}
  nc.dma_copy %u, %w0 {queue = 2} : !nc.tile<sbuf, 128x512xf32>, !nc.tile<hbm, 128x512xf32>
  return
}
