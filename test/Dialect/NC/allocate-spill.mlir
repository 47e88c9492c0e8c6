// RUN: trn-opt %s -nc-allocate=sbuf-bytes=2048 -split-input-file -verify-diagnostics | FileCheck %s
// RUN: not trn-opt %s -nc-allocate=sbuf-bytes=999999 -split-input-file 2>&1 | FileCheck %s --check-prefix=RANGE

// SBUF holds two of these tiles (sbuf-bytes=2048). %c needs room while %a and
// %b are live: %b, needed after %a, is the victim (Belady). It is stored to an
// HBM scratch tensor just before %c and reloaded into a new tile just before
// its next use, which then reads the new tile.
// RANGE: error: nc-allocate sbuf-bytes=999999 is outside [1, 180224] (trn1's usable SBUF per partition)
// CHECK-LABEL: func @belady
// CHECK-SAME: attributes {nc.spilled_bytes = 131072 : i64, nc.spilled_tiles = 1 : i64}
// CHECK: %[[A:.*]] = nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64}
// CHECK: %[[B:.*]] = nc.alloc {byte_offset = 1024 : i64, start_partition = 0 : i64}
// CHECK: nc.dma_copy %[[A]]
// CHECK: nc.dma_copy %[[B]]
// CHECK-NEXT: %[[SPILL:.*]] = nc.hbm_alloc "spill0" {byte_offset = 0 : i64} : <128x256xf32>
// CHECK-NEXT: %[[TO:.*]] = nc.view %[[SPILL]] strides [1] {partition_stride = 256 : i64} : !nc.hbm<128x256xf32> -> <hbm, 128x256xf32>
// CHECK-NEXT: nc.dma_copy %[[TO]], %[[B]] {queue = 12 : i64}
// CHECK-NEXT: %[[C:.*]] = nc.alloc {byte_offset = 1024 : i64, start_partition = 0 : i64}
// CHECK-NEXT: nc.tensor_copy %[[C]], %[[A]]
// CHECK-NEXT: nc.dma_copy %{{.*}}, %[[C]]
// CHECK-NEXT: nc.dma_copy %{{.*}}, %[[A]]
// CHECK-NEXT: %[[B2:.*]] = nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64}
// CHECK-NEXT: %[[FROM:.*]] = nc.view %[[SPILL]] strides [1] {partition_stride = 256 : i64}
// CHECK-NEXT: nc.dma_copy %[[B2]], %[[FROM]] : <sbuf
// CHECK-NEXT: nc.dma_copy %{{.*}}, %[[B2]]
// CHECK-NEXT: return
func.func @belady(%h: !nc.hbm<128x256xf32>) {
  %hv = nc.view %h strides [1] {partition_stride = 256} : !nc.hbm<128x256xf32> -> !nc.tile<hbm, 128x256xf32>
  %a = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  %b = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %a, %hv : !nc.tile<sbuf, 128x256xf32>, !nc.tile<hbm, 128x256xf32>
  nc.dma_copy %b, %hv : !nc.tile<sbuf, 128x256xf32>, !nc.tile<hbm, 128x256xf32>
  %c = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.tensor_copy %c, %a : !nc.tile<sbuf, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %hv, %c : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %hv, %a : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %hv, %b : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  return
}

// -----

// A tile allocated long before its first use holds no data yet: it moves to
// just before that use without a copy (no spill is recorded), and its old
// allocation goes away.
// CHECK-LABEL: func @no_data
// CHECK-NOT: nc.spilled
// CHECK-NOT: hbm_alloc
// CHECK: %[[A:.*]] = nc.alloc {byte_offset = 1024 : i64, start_partition = 0 : i64}
// CHECK-NEXT: nc.dma_copy %[[A]]
// CHECK-NEXT: %[[B:.*]] = nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64}
// CHECK-NEXT: nc.tensor_copy %[[B]], %[[A]]
// CHECK-NEXT: nc.dma_copy %{{.*}}, %[[B]]
// CHECK-NEXT: %[[EARLY:.*]] = nc.alloc {byte_offset = 1024 : i64, start_partition = 0 : i64}
// CHECK-NEXT: nc.memset %[[EARLY]]
// CHECK-NEXT: nc.dma_copy %{{.*}}, %[[EARLY]]
// CHECK-NEXT: return
func.func @no_data(%h: !nc.hbm<128x256xf32>) {
  %hv = nc.view %h strides [1] {partition_stride = 256} : !nc.hbm<128x256xf32> -> !nc.tile<hbm, 128x256xf32>
  %early = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  %a = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %a, %hv : !nc.tile<sbuf, 128x256xf32>, !nc.tile<hbm, 128x256xf32>
  %b = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.tensor_copy %b, %a : !nc.tile<sbuf, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %hv, %b : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  nc.memset %early, 0.0 : !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %hv, %early : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  return
}

// -----

// A reloaded tile can be spilled again; the second spill stores what the
// instructions in between wrote (the in-place add), and its scratch reuses
// the first spill's bytes, which are dead by then. Views of the tile used
// after the reload are rebuilt on the new tile.
// CHECK-LABEL: func @twice
// CHECK-SAME: nc.spilled_bytes = 262144 : i64, nc.spilled_tiles = 2 : i64
// CHECK: %[[S0:.*]] = nc.hbm_alloc "spill0" {byte_offset = 0 : i64}
// CHECK: nc.memset
// CHECK: %[[A1:.*]] = nc.alloc
// CHECK-NEXT: %[[F0:.*]] = nc.view %[[S0]]
// CHECK-NEXT: nc.dma_copy %[[A1]], %[[F0]]
// CHECK-NEXT: nc.tensor_tensor add %[[A1]], %[[A1]], %[[A1]]
// CHECK-NEXT: %[[S1:.*]] = nc.hbm_alloc "spill1" {byte_offset = 0 : i64}
// CHECK-NEXT: %[[T1:.*]] = nc.view %[[S1]]
// CHECK-NEXT: nc.dma_copy %[[T1]], %[[A1]]
// CHECK: nc.memset
// CHECK-NEXT: %[[D:.*]] = nc.alloc
// CHECK-NEXT: %[[A2:.*]] = nc.alloc
// CHECK-NEXT: %[[F1:.*]] = nc.view %[[S1]]
// CHECK-NEXT: nc.dma_copy %[[A2]], %[[F1]]
// CHECK-NEXT: %[[HALF:.*]] = nc.view %[[A2]] strides [2] {offset = 1 : i64} : !nc.tile<sbuf, 128x256xf32> -> <sbuf, 128x128xf32>
// CHECK-NEXT: nc.tensor_copy %[[D]], %[[HALF]]
// CHECK-NOT: nc.view %{{.*}} strides [2]
// CHECK: return
func.func @twice(%h: !nc.hbm<128x256xf32>) {
  %hv = nc.view %h strides [1] {partition_stride = 256} : !nc.hbm<128x256xf32> -> !nc.tile<hbm, 128x256xf32>
  %a = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %a, %hv : !nc.tile<sbuf, 128x256xf32>, !nc.tile<hbm, 128x256xf32>
  %half = nc.view %a strides [2] {offset = 1} : !nc.tile<sbuf, 128x256xf32> -> !nc.tile<sbuf, 128x128xf32>
  %b = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  nc.memset %b, 1.0 : !nc.tile<sbuf, 128x512xf32>
  nc.tensor_tensor add %a, %a, %a : !nc.tile<sbuf, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  %c = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  nc.memset %c, 1.0 : !nc.tile<sbuf, 128x512xf32>
  %d = nc.alloc : !nc.tile<sbuf, 128x128xf32>
  nc.tensor_copy %d, %half : !nc.tile<sbuf, 128x128xf32>, !nc.tile<sbuf, 128x128xf32>
  nc.dma_copy %hv, %a : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  return
}

// -----

// Nothing helps when one instruction's tiles exceed SBUF.
func.func @all_needed(%h: !nc.hbm<128x256xf32>) {
  %hv = nc.view %h strides [1] {partition_stride = 256} : !nc.hbm<128x256xf32> -> !nc.tile<hbm, 128x256xf32>
  %a = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  %b = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %a, %hv : !nc.tile<sbuf, 128x256xf32>, !nc.tile<hbm, 128x256xf32>
  nc.dma_copy %b, %hv : !nc.tile<sbuf, 128x256xf32>, !nc.tile<hbm, 128x256xf32>
  // expected-error @+1 {{SBUF is full: the instruction that first uses this tile needs 3072 bytes per partition of tiles, more than the 2048 it has (the kernel must use smaller tiles)}}
  %c = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.tensor_tensor add %c, %a, %b : !nc.tile<sbuf, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  return
}

// -----

// PSUM tiles are never spilled, and tiles at fixed addresses stay put: with
// the only other live tile fixed, %c has nowhere to go.
func.func @fixed_not_spilled(%h: !nc.hbm<128x256xf32>) {
  %hv = nc.view %h strides [1] {partition_stride = 256} : !nc.hbm<128x256xf32> -> !nc.tile<hbm, 128x256xf32>
  %a = nc.alloc {start_partition = 0, byte_offset = 512} : !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %a, %hv : !nc.tile<sbuf, 128x256xf32>, !nc.tile<hbm, 128x256xf32>
  // expected-error @+1 {{SBUF is full: 1024 more bytes per partition do not fit next to the 1024 in use (of 2048)}}
  %c = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.memset %c, 0.0 : !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %hv, %a : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  return
}

// -----

// Four 512-byte tiles fill SBUF; %d (1 KiB) is needed with %a and %c, at 0
// and 1024. Spilling %b and %e (needed later) would free two 512-byte holes,
// too small: %d first moves down to the add, where a window of SBUF is
// cleared: %a (needed by the add, so reloaded elsewhere before it) and %b;
// %e, needed last, spills to make room for %a's reload.
// CHECK-LABEL: func @fragmented
// CHECK-SAME: nc.spilled_tiles = 3 : i64
// CHECK: %[[A:.*]] = nc.alloc {byte_offset = 0 : i64
// CHECK: %[[B:.*]] = nc.alloc {byte_offset = 512 : i64
// CHECK: %[[C:.*]] = nc.alloc {byte_offset = 1024 : i64
// CHECK: %[[E:.*]] = nc.alloc {byte_offset = 1536 : i64
// CHECK: nc.hbm_alloc "spill0"
// CHECK: nc.dma_copy %{{.*}}, %[[A]] {queue = 12 : i64}
// CHECK: nc.hbm_alloc "spill1"
// CHECK: nc.dma_copy %{{.*}}, %[[B]] {queue = 13 : i64}
// CHECK-NEXT: %[[D:.*]] = nc.alloc {byte_offset = 0 : i64, start_partition = 0 : i64} : <sbuf, 128x256xf32>
// CHECK-NEXT: nc.view %[[D]]
// CHECK-NEXT: nc.hbm_alloc "spill2"
// CHECK: nc.dma_copy %{{.*}}, %[[E]] {queue = 14 : i64}
// CHECK-NEXT: %[[A2:.*]] = nc.alloc {byte_offset = 1536 : i64
// CHECK-NEXT: nc.view
// CHECK-NEXT: nc.dma_copy %[[A2]]
// CHECK-NEXT: nc.tensor_tensor add %{{.*}}, %[[A2]], %[[C]]
func.func @fragmented(%h: !nc.hbm<128x128xf32>, %o: !nc.hbm<128x512xf32>) {
  %hv = nc.view %h strides [1] {partition_stride = 128} : !nc.hbm<128x128xf32> -> !nc.tile<hbm, 128x128xf32>
  %a = nc.alloc : !nc.tile<sbuf, 128x128xf32>
  nc.dma_copy %a, %hv : !nc.tile<sbuf, 128x128xf32>, !nc.tile<hbm, 128x128xf32>
  %b = nc.alloc : !nc.tile<sbuf, 128x128xf32>
  nc.dma_copy %b, %hv : !nc.tile<sbuf, 128x128xf32>, !nc.tile<hbm, 128x128xf32>
  %c = nc.alloc : !nc.tile<sbuf, 128x128xf32>
  nc.dma_copy %c, %hv : !nc.tile<sbuf, 128x128xf32>, !nc.tile<hbm, 128x128xf32>
  %e = nc.alloc : !nc.tile<sbuf, 128x128xf32>
  nc.dma_copy %e, %hv : !nc.tile<sbuf, 128x128xf32>, !nc.tile<hbm, 128x128xf32>
  %d = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  %d0 = nc.view %d strides [1] : !nc.tile<sbuf, 128x256xf32> -> !nc.tile<sbuf, 128x128xf32>
  nc.tensor_tensor add %d0, %a, %c : !nc.tile<sbuf, 128x128xf32>, !nc.tile<sbuf, 128x128xf32>, !nc.tile<sbuf, 128x128xf32>
  %o0 = nc.view %o strides [1] {partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x256xf32>
  nc.dma_copy %o0, %d : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  %o1 = nc.view %o strides [1] {offset = 256, partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x128xf32>
  nc.dma_copy %o1, %b : !nc.tile<hbm, 128x128xf32>, !nc.tile<sbuf, 128x128xf32>
  %o2 = nc.view %o strides [1] {offset = 384, partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x128xf32>
  nc.dma_copy %o2, %e : !nc.tile<hbm, 128x128xf32>, !nc.tile<sbuf, 128x128xf32>
  return
}

// -----

// %early holds no data until the memset, but is allocated before the add that
// needs %a and %b: it moves down to the memset, where %b is dead.
// CHECK-LABEL: func @early
// CHECK-NOT: nc.spilled
// CHECK: nc.tensor_tensor add
// CHECK-NEXT: %[[EARLY:.*]] = nc.alloc {byte_offset = 1024 : i64, start_partition = 0 : i64}
// CHECK-NEXT: nc.memset %[[EARLY]]
func.func @early(%h: !nc.hbm<128x256xf32>, %o: !nc.hbm<128x512xf32>) {
  %hv = nc.view %h strides [1] {partition_stride = 256} : !nc.hbm<128x256xf32> -> !nc.tile<hbm, 128x256xf32>
  %a = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %a, %hv : !nc.tile<sbuf, 128x256xf32>, !nc.tile<hbm, 128x256xf32>
  %b = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.dma_copy %b, %hv : !nc.tile<sbuf, 128x256xf32>, !nc.tile<hbm, 128x256xf32>
  %early = nc.alloc : !nc.tile<sbuf, 128x256xf32>
  nc.tensor_tensor add %a, %a, %b : !nc.tile<sbuf, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  nc.memset %early, 2.0 : !nc.tile<sbuf, 128x256xf32>
  %o0 = nc.view %o strides [1] {partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x256xf32>
  nc.dma_copy %o0, %early : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  %o1 = nc.view %o strides [1] {offset = 256, partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x256xf32>
  nc.dma_copy %o1, %a : !nc.tile<hbm, 128x256xf32>, !nc.tile<sbuf, 128x256xf32>
  return
}
