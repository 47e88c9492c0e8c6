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
