// RUN: trn-opt %s -nc-allocate -split-input-file -verify-diagnostics | FileCheck %s

// Next fit: a freed tile is not handed out again at once (so a loop's next
// tile lands in another buffer and engines overlap); memory is reused once the
// search wraps around. PSUM tiles take banks round robin.
// CHECK-LABEL: func @reuse
func.func @reuse(%h: !nc.hbm<128x512xf32>) {
  %hv = nc.view %h strides [1] {partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x512xf32>
  // CHECK: nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64} : <sbuf, 128x512xf32>
  %a = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.alloc {byte_offset = 2048 : i64, start_partition = 0 : i64} : <sbuf, 128x512xf32>
  %b = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  nc.dma_copy %a, %hv : !nc.tile<sbuf, 128x512xf32>, !nc.tile<hbm, 128x512xf32>
  nc.tensor_copy %b, %a : !nc.tile<sbuf, 128x512xf32>, !nc.tile<sbuf, 128x512xf32>
  // %a is dead, but %c goes after %b rather than into %a's bytes.
  // CHECK: nc.alloc {byte_offset = 4096 : i64, start_partition = 0 : i64} : <sbuf, 128x512xbf16>
  %c = nc.alloc : !nc.tile<sbuf, 128x512xbf16>
  nc.tensor_copy %c, %b : !nc.tile<sbuf, 128x512xbf16>, !nc.tile<sbuf, 128x512xf32>
  // CHECK: nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64} : <psum, 128x512xf32>
  %p = nc.alloc : !nc.tile<psum, 128x512xf32>
  // CHECK: nc.alloc {byte_offset = 2048 : i64, start_partition = 0 : i64} : <psum, 128x512xf32>
  %q = nc.alloc : !nc.tile<psum, 128x512xf32>
  nc.memset %p, 0.0 : !nc.tile<psum, 128x512xf32>
  nc.memset %q, 0.0 : !nc.tile<psum, 128x512xf32>
  return
}

// -----

// Next fit: a freed tile is not handed out again until the search wraps
// around the end of SBUF (tiles under 32 KiB per partition).
// CHECK-LABEL: func @wrap
func.func @wrap() {
  // CHECK: nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64} : <sbuf, 128x7000xf32>
  %t0 = nc.alloc : !nc.tile<sbuf, 128x7000xf32>
  nc.memset %t0, 0.0 : !nc.tile<sbuf, 128x7000xf32>
  // CHECK: nc.alloc {byte_offset = 28032 : i64, start_partition = 0 : i64} : <sbuf, 128x7000xf32>
  %t1 = nc.alloc : !nc.tile<sbuf, 128x7000xf32>
  nc.memset %t1, 0.0 : !nc.tile<sbuf, 128x7000xf32>
  // CHECK: nc.alloc {byte_offset = 56064 : i64, start_partition = 0 : i64} : <sbuf, 128x7000xf32>
  %t2 = nc.alloc : !nc.tile<sbuf, 128x7000xf32>
  nc.memset %t2, 0.0 : !nc.tile<sbuf, 128x7000xf32>
  // CHECK: nc.alloc {byte_offset = 84096 : i64, start_partition = 0 : i64} : <sbuf, 128x7000xf32>
  %t3 = nc.alloc : !nc.tile<sbuf, 128x7000xf32>
  nc.memset %t3, 0.0 : !nc.tile<sbuf, 128x7000xf32>
  // CHECK: nc.alloc {byte_offset = 112128 : i64, start_partition = 0 : i64} : <sbuf, 128x7000xf32>
  %t4 = nc.alloc : !nc.tile<sbuf, 128x7000xf32>
  nc.memset %t4, 0.0 : !nc.tile<sbuf, 128x7000xf32>
  // CHECK: nc.alloc {byte_offset = 140160 : i64, start_partition = 0 : i64} : <sbuf, 128x7000xf32>
  %t5 = nc.alloc : !nc.tile<sbuf, 128x7000xf32>
  nc.memset %t5, 0.0 : !nc.tile<sbuf, 128x7000xf32>
  // CHECK: nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64} : <sbuf, 128x7000xf32>
  %t6 = nc.alloc : !nc.tile<sbuf, 128x7000xf32>
  nc.memset %t6, 0.0 : !nc.tile<sbuf, 128x7000xf32>
  return
}

// -----

// Tiles of 32 KiB per partition or more are placed from the top of SBUF down,
// away from the small tiles that cycle next fit from the bottom.
// CHECK-LABEL: func @large_tiles_high
func.func @large_tiles_high() {
  // CHECK: nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64} : <sbuf, 128x1000xf32>
  %small = nc.alloc : !nc.tile<sbuf, 128x1000xf32>
  // CHECK: nc.alloc {byte_offset = 114688 : i64, start_partition = 0 : i64} : <sbuf, 128x16384xf32>
  %panel = nc.alloc : !nc.tile<sbuf, 128x16384xf32>
  // CHECK: nc.alloc {byte_offset = 4032 : i64, start_partition = 0 : i64} : <sbuf, 128x1000xf32>
  %small2 = nc.alloc : !nc.tile<sbuf, 128x1000xf32>
  // CHECK: nc.alloc {byte_offset = 49152 : i64, start_partition = 0 : i64} : <sbuf, 128x16384xf32>
  %panel2 = nc.alloc : !nc.tile<sbuf, 128x16384xf32>
  nc.memset %small, 0.0 : !nc.tile<sbuf, 128x1000xf32>
  nc.memset %panel, 0.0 : !nc.tile<sbuf, 128x16384xf32>
  nc.memset %small2, 0.0 : !nc.tile<sbuf, 128x1000xf32>
  nc.memset %panel2, 0.0 : !nc.tile<sbuf, 128x16384xf32>
  return
}

// -----

// One instruction touching more than SBUF holds is beyond what moving tiles
// can fix.
func.func @sbuf_full() {
  %a = nc.alloc : !nc.tile<sbuf, 128x40000xf32>
  // expected-error @+1 {{SBUF is full: the instruction that first uses this tile needs 200000 bytes per partition of tiles, more than the 180224 it has (the kernel must use smaller tiles)}}
  %b = nc.alloc : !nc.tile<sbuf, 128x10000xf32>
  nc.memset %a, 0.0 : !nc.tile<sbuf, 128x40000xf32>
  %a0 = nc.view %a strides [1] : !nc.tile<sbuf, 128x40000xf32> -> !nc.tile<sbuf, 128x10000xf32>
  nc.tensor_copy %b, %a0 : !nc.tile<sbuf, 128x10000xf32>, !nc.tile<sbuf, 128x10000xf32>
  return
}

// -----

// When %a is not needed until after %b's first use, it is spilled instead. Its
// 70000 elements per partition move in two DMAs each way (access-pattern sizes
// are 16-bit), on two queues; the views of the 2-D tile are flat windows of
// its free elements.
// CHECK-LABEL: func @spill_chunks
// CHECK-SAME: nc.spilled_bytes = 17920000 : i64, nc.spilled_tiles = 1 : i64
// CHECK: %[[A:.*]] = nc.alloc {byte_offset = 40192 : i64, start_partition = 0 : i64} : <sbuf, 128x35000x2xbf16>
// CHECK: %[[S:.*]] = nc.hbm_alloc "spill0" {byte_offset = 0 : i64} : <128x70000xbf16>
// CHECK-NEXT: %[[H0:.*]] = nc.view %[[S]] strides [1] {partition_stride = 65535 : i64} : !nc.hbm<128x70000xbf16> -> <hbm, 128x65535xbf16>
// CHECK-NEXT: %[[T0:.*]] = nc.view %[[A]] strides [1] : !nc.tile<sbuf, 128x35000x2xbf16> -> <sbuf, 128x65535xbf16>
// CHECK-NEXT: nc.dma_copy %[[H0]], %[[T0]] {queue = 12 : i64}
// CHECK-NEXT: %[[H1:.*]] = nc.view %[[S]] strides [1] {offset = 8388480 : i64, partition_stride = 4465 : i64} : !nc.hbm<128x70000xbf16> -> <hbm, 128x4465xbf16>
// CHECK-NEXT: %[[T1:.*]] = nc.view %[[A]] strides [1] {offset = 65535 : i64} : !nc.tile<sbuf, 128x35000x2xbf16> -> <sbuf, 128x4465xbf16>
// CHECK-NEXT: nc.dma_copy %[[H1]], %[[T1]] {queue = 13 : i64}
// CHECK-NEXT: nc.alloc {byte_offset = 136192 : i64, start_partition = 0 : i64} : <sbuf, 128x11000xf32>
// CHECK-NEXT: nc.memset
// CHECK-NEXT: %[[A2:.*]] = nc.alloc {byte_offset = 40192 : i64, start_partition = 0 : i64} : <sbuf, 128x35000x2xbf16>
// CHECK-NEXT: nc.view %[[S]]
// CHECK-NEXT: nc.view %[[A2]]
// CHECK-NEXT: nc.dma_copy {{.*}} : <sbuf, 128x65535xbf16>, <hbm, 128x65535xbf16>
// CHECK-NEXT: nc.view %[[S]]
// CHECK-NEXT: nc.view %[[A2]]
// CHECK-NEXT: nc.dma_copy {{.*}} {queue = 1 : i64} : <sbuf, 128x4465xbf16>, <hbm, 128x4465xbf16>
// CHECK-NEXT: %[[HALF:.*]] = nc.view %[[A2]] strides [1] : !nc.tile<sbuf, 128x35000x2xbf16> -> <sbuf, 128x35000xbf16>
// CHECK-NEXT: nc.dma_copy %{{.*}}, %[[HALF]]
func.func @spill_chunks(%h: !nc.hbm<128x35000x2xbf16>) {
  %hv = nc.view %h strides [1] {partition_stride = 70000} : !nc.hbm<128x35000x2xbf16> -> !nc.tile<hbm, 128x35000xbf16>
  %a = nc.alloc : !nc.tile<sbuf, 128x35000x2xbf16>
  %half = nc.view %a strides [1] : !nc.tile<sbuf, 128x35000x2xbf16> -> !nc.tile<sbuf, 128x35000xbf16>
  nc.dma_copy %half, %hv : !nc.tile<sbuf, 128x35000xbf16>, !nc.tile<hbm, 128x35000xbf16>
  %b = nc.alloc : !nc.tile<sbuf, 128x11000xf32>
  nc.memset %b, 0.0 : !nc.tile<sbuf, 128x11000xf32>
  nc.dma_copy %hv, %half : !nc.tile<hbm, 128x35000xbf16>, !nc.tile<sbuf, 128x35000xbf16>
  return
}

// -----

func.func @psum_full() {
  %p0 = nc.alloc : !nc.tile<psum, 128x512xf32>
  %p1 = nc.alloc : !nc.tile<psum, 128x512xf32>
  %p2 = nc.alloc : !nc.tile<psum, 128x512xf32>
  %p3 = nc.alloc : !nc.tile<psum, 128x512xf32>
  %p4 = nc.alloc : !nc.tile<psum, 128x512xf32>
  %p5 = nc.alloc : !nc.tile<psum, 128x512xf32>
  %p6 = nc.alloc : !nc.tile<psum, 128x512xf32>
  %p7 = nc.alloc : !nc.tile<psum, 128x512xf32>
  // expected-error @+1 {{all 8 PSUM banks hold live tiles}}
  %p8 = nc.alloc : !nc.tile<psum, 128x512xf32>
  nc.memset %p0, 0.0 : !nc.tile<psum, 128x512xf32>
  nc.memset %p1, 0.0 : !nc.tile<psum, 128x512xf32>
  nc.memset %p2, 0.0 : !nc.tile<psum, 128x512xf32>
  nc.memset %p3, 0.0 : !nc.tile<psum, 128x512xf32>
  nc.memset %p4, 0.0 : !nc.tile<psum, 128x512xf32>
  nc.memset %p5, 0.0 : !nc.tile<psum, 128x512xf32>
  nc.memset %p6, 0.0 : !nc.tile<psum, 128x512xf32>
  nc.memset %p7, 0.0 : !nc.tile<psum, 128x512xf32>
  nc.memset %p8, 0.0 : !nc.tile<psum, 128x512xf32>
  return
}

// -----

func.func @fixed_overlap() {
  %a = nc.alloc {start_partition = 0, byte_offset = 0} : !nc.tile<sbuf, 128x64xf32>
  // expected-error @+1 {{its fixed address overlaps a tile that is live at the same time}}
  %b = nc.alloc {start_partition = 0, byte_offset = 128} : !nc.tile<sbuf, 128x64xf32>
  nc.tensor_copy %b, %a : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

// HBM scratch tensors share the scratch region by liveness, first fit from
// 0: t1 is live while t0 is, t2 only after both died and reuses offset 0.
// CHECK-LABEL: func @hbm_scratch
// CHECK: nc.hbm_alloc "t0" {byte_offset = 0 : i64}
// CHECK: nc.hbm_alloc "t1" {byte_offset = 4096 : i64}
// CHECK: nc.hbm_alloc "t2" {byte_offset = 0 : i64}
func.func @hbm_scratch(%x: !nc.hbm<8x128xf32>) {
  %t0 = nc.hbm_alloc "t0" : !nc.hbm<8x128xf32>
  %t1 = nc.hbm_alloc "t1" : !nc.hbm<8x128xf32>
  %s = nc.alloc : !nc.tile<sbuf, 8x128xf32>
  %xv = nc.view %x strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  %v0 = nc.view %t0 strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  %v1 = nc.view %t1 strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  nc.dma_copy %s, %xv : !nc.tile<sbuf, 8x128xf32>, !nc.tile<hbm, 8x128xf32>
  nc.dma_copy %v0, %s : !nc.tile<hbm, 8x128xf32>, !nc.tile<sbuf, 8x128xf32>
  nc.dma_copy %v1, %s : !nc.tile<hbm, 8x128xf32>, !nc.tile<sbuf, 8x128xf32>
  %t2 = nc.hbm_alloc "t2" : !nc.hbm<8x128xf32>
  %v2 = nc.view %t2 strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  nc.dma_copy %v2, %s : !nc.tile<hbm, 8x128xf32>, !nc.tile<sbuf, 8x128xf32>
  return
}

// -----

// A collective reads its source while the engines go on: the source stays
// live until the collective's result is first read, so a tensor written
// meanwhile (the next piece of a matmul, t1) does not take its bytes and
// wait for the transfer; after that reader, t2 reuses them.
// CHECK-LABEL: func @collective_source_live_until_its_result_is_read
// CHECK: nc.hbm_alloc "t0" {byte_offset = 0 : i64}
// CHECK: nc.hbm_alloc "r0" {byte_offset = 4096 : i64}
// CHECK: nc.hbm_alloc "t1" {byte_offset = 6144 : i64}
// CHECK: nc.hbm_alloc "t2" {byte_offset = 0 : i64}
func.func @collective_source_live_until_its_result_is_read(%x: !nc.hbm<8x128xf32>, %y: !nc.hbm<4x128xf32>) attributes {nc.mesh_axes = ["tp"], nc.mesh_sizes = array<i64: 2>} {
  %s = nc.alloc : !nc.tile<sbuf, 8x128xf32>
  %xv = nc.view %x strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  nc.dma_copy %s, %xv : !nc.tile<sbuf, 8x128xf32>, !nc.tile<hbm, 8x128xf32>
  %t0 = nc.hbm_alloc "t0" : !nc.hbm<8x128xf32>
  %v0 = nc.view %t0 strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  nc.dma_copy %v0, %s : !nc.tile<hbm, 8x128xf32>, !nc.tile<sbuf, 8x128xf32>
  %r0 = nc.hbm_alloc "r0" : !nc.hbm<4x128xf32>
  nc.reduce_scatter sum %r0, %t0 axes = ["tp"] dim = 0 : <4x128xf32>, <8x128xf32>
  %t1 = nc.hbm_alloc "t1" : !nc.hbm<8x128xf32>
  %v1 = nc.view %t1 strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  nc.dma_copy %v1, %s : !nc.tile<hbm, 8x128xf32>, !nc.tile<sbuf, 8x128xf32>
  %r = nc.alloc : !nc.tile<sbuf, 4x128xf32>
  %rv = nc.view %r0 strides [1] {partition_stride = 128} : !nc.hbm<4x128xf32> -> !nc.tile<hbm, 4x128xf32>
  nc.dma_copy %r, %rv : !nc.tile<sbuf, 4x128xf32>, !nc.tile<hbm, 4x128xf32>
  %yv = nc.view %y strides [1] {partition_stride = 128} : !nc.hbm<4x128xf32> -> !nc.tile<hbm, 4x128xf32>
  nc.dma_copy %yv, %r : !nc.tile<hbm, 4x128xf32>, !nc.tile<sbuf, 4x128xf32>
  %t2 = nc.hbm_alloc "t2" : !nc.hbm<8x128xf32>
  %v2 = nc.view %t2 strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  nc.dma_copy %v2, %s : !nc.tile<hbm, 8x128xf32>, !nc.tile<sbuf, 8x128xf32>
  %w = nc.view %t1 strides [1] {partition_stride = 128} : !nc.hbm<8x128xf32> -> !nc.tile<hbm, 8x128xf32>
  nc.dma_copy %s, %w : !nc.tile<sbuf, 8x128xf32>, !nc.tile<hbm, 8x128xf32>
  return
}
