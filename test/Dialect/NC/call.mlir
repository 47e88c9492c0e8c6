// RUN: trn-opt %s -split-input-file -nc-allocate -nc-insert-sync -verify-diagnostics | FileCheck %s

// A call counts its callee's instructions on every stream: the caller's
// load after it is the third on DMA queue 0 (the callee's is the second),
// which the Scalar Engine's copy waits for: counts of the expanded program
// (trnrt::expandCalls).
// CHECK-LABEL: func.func @caller
// CHECK: nc.activation copy {{.*}} {nc.signal = 2 : i64, nc.waits = [array<i64: 5, 1>]}
// CHECK: nc.call @double(%{{.*}}) outs(%{{.*}})
// CHECK: nc.activation copy {{.*}} {nc.signal = 2 : i64, nc.waits = [array<i64: 5, 3>]}
func.func @caller(%x: !nc.hbm<128x64xf32>, %y: !nc.hbm<128x64xf32>) {
  %xv = nc.view %x strides [1] {partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  %t = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  nc.dma_copy %t, %xv : !nc.tile<sbuf, 128x64xf32>, !nc.tile<hbm, 128x64xf32>
  %u = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  nc.activation copy %u, %t : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  %mid = nc.hbm_alloc "mid" : !nc.hbm<128x64xf32>
  %midv = nc.view %mid strides [1] {partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  nc.dma_copy %midv, %u {queue = 1} : !nc.tile<hbm, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  %out = nc.hbm_alloc "out" : !nc.hbm<128x64xf32>
  nc.call @double(%mid) outs(%out) : (!nc.hbm<128x64xf32>) -> (!nc.hbm<128x64xf32>)
  %outv = nc.view %out strides [1] {partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  %r = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  nc.dma_copy %r, %outv : !nc.tile<sbuf, 128x64xf32>, !nc.tile<hbm, 128x64xf32>
  %s = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  nc.activation copy %s, %r : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  %yv = nc.view %y strides [1] {partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  nc.dma_copy %yv, %s {queue = 1} : !nc.tile<hbm, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// One load, one Scalar Engine instruction, one store.
func.func private @double(%a: !nc.hbm<128x64xf32>, %b: !nc.hbm<128x64xf32>) attributes {nc.subroutine} {
  %av = nc.view %a strides [1] {partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  %bv = nc.view %b strides [1] {partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  %t = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  nc.dma_copy %t, %av : !nc.tile<sbuf, 128x64xf32>, !nc.tile<hbm, 128x64xf32>
  %u = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  nc.activation copy %u, %t : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  nc.dma_copy %bv, %u {queue = 1} : !nc.tile<hbm, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

// The caller keeps nothing on chip across a call.
func.func @live_across(%x: !nc.hbm<128x64xf32>, %y: !nc.hbm<128x64xf32>) {
  %xv = nc.view %x strides [1] {partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  %t = nc.alloc : !nc.tile<sbuf, 128x64xf32>
  nc.dma_copy %t, %xv : !nc.tile<sbuf, 128x64xf32>, !nc.tile<hbm, 128x64xf32>
  // expected-error @+1 {{internal error: a tile is live across nc.call copy}}
  nc.call @copy(%x) outs(%y) : (!nc.hbm<128x64xf32>) -> (!nc.hbm<128x64xf32>)
  %yv = nc.view %y strides [1] {partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  nc.dma_copy %yv, %t : !nc.tile<hbm, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}
func.func private @copy(%a: !nc.hbm<128x64xf32>, %b: !nc.hbm<128x64xf32>) attributes {nc.subroutine} {
  return
}

// -----

func.func @no_callee(%x: !nc.hbm<128x64xf32>, %y: !nc.hbm<128x64xf32>) {
  // expected-error @+1 {{'nc.call' op calls 'missing', which is not a function of the module}}
  nc.call @missing(%x) outs(%y) : (!nc.hbm<128x64xf32>) -> (!nc.hbm<128x64xf32>)
  return
}

// -----

func.func @bytes(%x: !nc.hbm<128x64xf32>, %y: !nc.hbm<128x32xf32>) {
  // expected-error @+1 {{'nc.call' op binds '!nc.hbm<128x32xf32>' to argument 1 of 'copy2', '!nc.hbm<128x64xf32>' (the byte sizes must match)}}
  nc.call @copy2(%x) outs(%y) : (!nc.hbm<128x64xf32>) -> (!nc.hbm<128x32xf32>)
  return
}
func.func private @copy2(%a: !nc.hbm<128x64xf32>, %b: !nc.hbm<128x64xf32>) attributes {nc.subroutine} {
  return
}

// -----

func.func @arity(%x: !nc.hbm<128x64xf32>) {
  // expected-error @+1 {{'nc.call' op binds 3 tensors to 'copy3', which has 2 arguments}}
  nc.call @copy3(%x, %x) outs(%x) : (!nc.hbm<128x64xf32>, !nc.hbm<128x64xf32>) -> (!nc.hbm<128x64xf32>)
  return
}
func.func private @copy3(%a: !nc.hbm<128x64xf32>, %b: !nc.hbm<128x64xf32>) attributes {nc.subroutine} {
  return
}
