// The exporter lays out HBM in argument order and turns each instruction into
// its stream's entry with the semaphores nc-insert-sync chose; the result is
// checked by the runtime's validator before it is printed or written.
// RUN: trn-opt %s -nc-allocate -nc-insert-sync | trn-translate --nc-to-program-summary | FileCheck %s
// RUN: trn-opt %s -nc-allocate -nc-insert-sync | trn-translate --nc-to-artifact -o %t.trnart
// RUN: not trn-translate --nc-to-program-summary %s 2>&1 | FileCheck %s --check-prefix=NOALLOC

// CHECK: target trn1, hbm 425984 bytes, 8 semaphores
// CHECK: tensor a @0
// CHECK: tensor b @32768
// CHECK: tensor c @163840
// CHECK: tensor[0] matmul psum:f32@0 p0+128 [512:1] <- sbuf:bf16@0 p0+128 [128:1] <- sbuf:bf16@256 p0+128 [512:1] wait(s5>=1) wait(s6>=1) signal(s0)
// CHECK: scalar[0] activation sbuf:f32@1280 p0+128 [512:1] <- psum:f32@0 p0+128 [512:1] wait(s0>=1) signal(s2)
// CHECK: dma0[0] dma_copy sbuf:bf16@0 p0+128 [128:1] <- hbm:bf16@0 p128x128 [128:1] signal(s5)
// CHECK: dma1[0] dma_copy sbuf:bf16@256 p0+128 [512:1] <- hbm:bf16@32768 p128x512 [512:1] signal(s6)
// CHECK: dma2[0] dma_copy hbm:f32@163840 p128x512 [512:1] <- sbuf:f32@1280 p0+128 [512:1] wait(s2>=1) signal(s7)
// NOALLOC: error: operand tile has no address; run nc-allocate before exporting

func.func @matmul_tile(%a: !nc.hbm<128x128xbf16> {nc.name = "a"}, %b: !nc.hbm<128x512xbf16> {nc.name = "b"},
                       %c: !nc.hbm<128x512xf32> {nc.name = "c", nc.kind = "output"}) {
  %av = nc.view %a strides [1] {partition_stride = 128} : !nc.hbm<128x128xbf16> -> !nc.tile<hbm, 128x128xbf16>
  %bv = nc.view %b strides [1] {partition_stride = 512} : !nc.hbm<128x512xbf16> -> !nc.tile<hbm, 128x512xbf16>
  %cv = nc.view %c strides [1] {partition_stride = 512} : !nc.hbm<128x512xf32> -> !nc.tile<hbm, 128x512xf32>
  %s = nc.alloc : !nc.tile<sbuf, 128x128xbf16>
  %m = nc.alloc : !nc.tile<sbuf, 128x512xbf16>
  %p = nc.alloc : !nc.tile<psum, 128x512xf32>
  %o = nc.alloc : !nc.tile<sbuf, 128x512xf32>
  nc.dma_copy %s, %av : !nc.tile<sbuf, 128x128xbf16>, !nc.tile<hbm, 128x128xbf16>
  nc.dma_copy %m, %bv {queue = 1} : !nc.tile<sbuf, 128x512xbf16>, !nc.tile<hbm, 128x512xbf16>
  nc.matmul %p, %s, %m : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x128xbf16>, !nc.tile<sbuf, 128x512xbf16>
  nc.activation copy %o, %p : !nc.tile<sbuf, 128x512xf32>, !nc.tile<psum, 128x512xf32>
  nc.dma_copy %cv, %o {queue = 2} : !nc.tile<hbm, 128x512xf32>, !nc.tile<sbuf, 128x512xf32>
  return
}
