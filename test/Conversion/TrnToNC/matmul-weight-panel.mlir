// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s --check-prefix=LOAD
// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s --check-prefix=EVICT
// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s --check-prefix=TRANSPOSE

// A weight stored [N, K] (K contiguous) fills the resident panel by rows:
// one DMA per 128 rows of N (all of K up to 2048 elements), then per K tile
// the transposes of every row block into one PSUM bank and one eviction
// into the panel, not a DMA, a transpose and an eviction per 128x128 block.
// 256x512 @ (384x512)^T: three row loads, four panel evictions of
// [128, 384]; transposes: 3 x 4 of the weight, 2 x 4 of the lhs.
// LOAD-COUNT-3: nc.view %arg1 strides [1] {{{.*}}partition_stride = 512 : i64} : !nc.hbm<384x512xbf16> -> <hbm, 128x512xbf16>
// LOAD-NOT: nc.view %arg1
// EVICT-COUNT-4: <sbuf, 128x384xbf16>, {{.*}}<psum, 128x384xf32>
// EVICT-NOT: <sbuf, 128x384xbf16>, {{.*}}<psum, 128x384xf32>
// TRANSPOSE-COUNT-20: nc.transpose
// TRANSPOSE-NOT: nc.transpose
func.func @weight_rows(%x: tensor<256x512xbf16>, %w: tensor<384x512xbf16>) -> tensor<256x384xf32> {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<256x512xbf16>, tensor<384x512xbf16>) -> tensor<256x384xf32>
  return %0 : tensor<256x384xf32>
}

// A K-major lhs (a weight gradient dY^T X: M contiguous) loads K tile kt of
// eight M blocks with one DMA of 2 KiB runs, not one of 256-byte runs per
// M block: two K tiles, two DMAs of [128, 1024].
// LOAD-LABEL: func @weight_gradient
// LOAD-COUNT-2: nc.view %arg0 strides [1] {{{.*}}partition_stride = 1024 : i64} : !nc.hbm<256x1024xbf16> -> <hbm, 128x1024xbf16>
// LOAD-NOT: nc.view %arg0
func.func @weight_gradient(%dy: tensor<256x1024xbf16>, %x: tensor<256x512xbf16>) -> tensor<1024x512xf32> {
  %0 = trn.dot_general %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<256x1024xbf16>, tensor<256x512xbf16>) -> tensor<1024x512xf32>
  return %0 : tensor<1024x512xf32>
}
