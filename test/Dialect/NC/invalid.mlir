// RUN: trn-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{a tile has a partition dimension and 1 to 4 free dimensions, got 1 dimensions}}
func.func @f(%a: !nc.tile<sbuf, 128xf32>) { return }

// -----

// expected-error @+1 {{tile dimension 70000 is outside [1, 65535]}}
func.func @f(%a: !nc.tile<sbuf, 128x70000xf32>) { return }

// -----

// expected-error @+1 {{tile element type 'f64' is not one of}}
func.func @f(%a: !nc.tile<sbuf, 128x4xf64>) { return }

// -----

// expected-error @+1 {{PSUM tiles hold f32 (matmul accumulators), got 'bf16'}}
func.func @f(%a: !nc.tile<psum, 128x4xbf16>) { return }

// -----

// expected-error @+1 {{unknown memory 'dram' (expected sbuf, psum or hbm)}}
func.func @f(%a: !nc.tile<dram, 128x4xf32>) { return }

// -----

// expected-error @+1 {{HBM tensor dimensions must be positive}}
func.func @f(%a: !nc.hbm<0x4xf32>) { return }

// -----

func.func @f() {
  // expected-error @+1 {{tile spans 256 partitions; a NeuronCore has 128}}
  %0 = nc.alloc : !nc.tile<sbuf, 256x4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{184320 bytes per partition exceed 180224 (usable SBUF per partition)}}
  %0 = nc.alloc : !nc.tile<sbuf, 128x46080xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{4096 bytes per partition exceed 2048 (one PSUM bank: a PSUM tile cannot cross a bank boundary)}}
  %0 = nc.alloc : !nc.tile<psum, 128x1024xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{start partition 32 is illegal for 64 partitions}}
  %0 = nc.alloc {start_partition = 32} : !nc.tile<sbuf, 64x4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{PSUM bytes 1024..3071 cross a 2048-byte bank boundary}}
  %0 = nc.alloc {byte_offset = 1024} : !nc.tile<psum, 128x512xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{bytes 180000..180399 lie outside SBUF (180224 bytes per partition)}}
  %0 = nc.alloc {byte_offset = 180000} : !nc.tile<sbuf, 128x100xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{byte offset 2 is not aligned to the element size}}
  %0 = nc.alloc {byte_offset = 2} : !nc.tile<sbuf, 128x100xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{allocates SBUF or PSUM tiles; use nc.hbm_alloc for HBM}}
  %0 = nc.alloc : !nc.tile<hbm, 128x100xf32>
  return
}

// -----

module attributes {nc.target = "trn9"} {
  func.func @f() {
    // expected-error @+1 {{unknown nc.target 'trn9' (expected "trn1" or "trn2")}}
    %0 = nc.alloc : !nc.tile<sbuf, 128x100xf32>
    return
  }
}

// -----

func.func @f(%t: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{needs one stride per free dimension of the result (2), got 1}}
  %0 = nc.view %t strides [1] : !nc.tile<sbuf, 128x64xf32> -> !nc.tile<sbuf, 128x8x8xf32>
  return
}

// -----

func.func @f(%t: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{stride 40000 does not fit in 16 bits (on-chip access-pattern strides are int16)}}
  %0 = nc.view %t strides [40000] : !nc.tile<sbuf, 128x64xf32> -> !nc.tile<sbuf, 128x1xf32>
  return
}

// -----

func.func @f(%h: !nc.hbm<2x8xf32>) {
  // expected-error @+1 {{HBM stride 2199023255553 is beyond 2^40 elements}}
  %0 = nc.view %h strides [1] {partition_stride = 2199023255553} : !nc.hbm<2x8xf32> -> !nc.tile<hbm, 1x8xf32>
  return
}

// -----

func.func @f(%t: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{a view keeps its source's memory and element type}}
  %0 = nc.view %t strides [1] : !nc.tile<sbuf, 128x64xf32> -> !nc.tile<sbuf, 128x64xbf16>
  return
}

// -----

func.func @f(%t: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{partitions 64..191 are outside the source's 128}}
  %0 = nc.view %t strides [1] {start_partition = 64} : !nc.tile<sbuf, 128x64xf32> -> !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%t: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{elements 0..64 are outside the source's 64 per partition}}
  %0 = nc.view %t strides [2] : !nc.tile<sbuf, 128x64xf32> -> !nc.tile<sbuf, 128x33xf32>
  return
}

// -----

func.func @f(%t: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{partition_stride applies to HBM views only}}
  %0 = nc.view %t strides [1] {partition_stride = 4} : !nc.tile<sbuf, 128x64xf32> -> !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%h: !nc.hbm<128x64xf32>) {
  // expected-error @+1 {{elements 1..8192 are outside the HBM tensor's 8192}}
  %0 = nc.view %h strides [1] {offset = 1, partition_stride = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 128x64xf32>
  return
}

// -----

func.func @f(%h: !nc.hbm<128x64xf32>) {
  // expected-error @+1 {{a view of an HBM tensor is an hbm tile of the same element type}}
  %0 = nc.view %h strides [1] : !nc.hbm<128x64xf32> -> !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%h: !nc.hbm<128x64xf32>) {
  // expected-error @+1 {{start_partition applies to on-chip views}}
  %0 = nc.view %h strides [1] {start_partition = 64} : !nc.hbm<128x64xf32> -> !nc.tile<hbm, 64x64xf32>
  return
}

// -----

func.func @f(%p: !nc.tile<sbuf, 128x512xf32>, %s: !nc.tile<sbuf, 128x128xbf16>, %m: !nc.tile<sbuf, 128x512xbf16>) {
  // expected-error @+1 {{writes its result to PSUM only}}
  nc.matmul %p, %s, %m : !nc.tile<sbuf, 128x512xf32>, !nc.tile<sbuf, 128x128xbf16>, !nc.tile<sbuf, 128x512xbf16>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x512xf32>, %s: !nc.tile<psum, 128x128xf32>, %m: !nc.tile<sbuf, 128x512xbf16>) {
  // expected-error @+1 {{reads stationary and moving from SBUF only}}
  nc.matmul %p, %s, %m : !nc.tile<psum, 128x512xf32>, !nc.tile<psum, 128x128xf32>, !nc.tile<sbuf, 128x512xbf16>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x512xf32>, %s: !nc.tile<sbuf, 64x128xbf16>, %m: !nc.tile<sbuf, 128x512xbf16>) {
  // expected-error @+1 {{need the same count, got 64 and 128}}
  nc.matmul %p, %s, %m : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 64x128xbf16>, !nc.tile<sbuf, 128x512xbf16>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x512xf32>, %s: !nc.tile<sbuf, 128x256xbf16>, %m: !nc.tile<sbuf, 128x512xbf16>) {
  // expected-error @+1 {{stationary free size M = 256 exceeds 128 (PE columns)}}
  nc.matmul %p, %s, %m : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x256xbf16>, !nc.tile<sbuf, 128x512xbf16>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x512xf32>, %s: !nc.tile<sbuf, 128x128xbf16>, %m: !nc.tile<sbuf, 128x640xbf16>) {
  // expected-error @+1 {{moving free size N = 640 exceeds 512 (one PSUM bank of fp32)}}
  nc.matmul %p, %s, %m : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x128xbf16>, !nc.tile<sbuf, 128x640xbf16>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 64x512xf32>, %s: !nc.tile<sbuf, 128x128xbf16>, %m: !nc.tile<sbuf, 128x512xbf16>) {
  // expected-error @+1 {{result must be [128, 512] (M partitions, N elements)}}
  nc.matmul %p, %s, %m : !nc.tile<psum, 64x512xf32>, !nc.tile<sbuf, 128x128xbf16>, !nc.tile<sbuf, 128x512xbf16>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x512xf32>, %s: !nc.tile<sbuf, 128x128xf32>, %m: !nc.tile<sbuf, 128x512xbf16>) {
  // expected-error @+1 {{an fp32 operand must be paired with an fp32 operand}}
  nc.matmul %p, %s, %m : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x128xf32>, !nc.tile<sbuf, 128x512xbf16>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x512xf32>, %s: !nc.tile<sbuf, 128x128xi32>, %m: !nc.tile<sbuf, 128x512xi32>) {
  // expected-error @+1 {{matmul inputs are floats}}
  nc.matmul %p, %s, %m : !nc.tile<psum, 128x512xf32>, !nc.tile<sbuf, 128x128xi32>, !nc.tile<sbuf, 128x512xi32>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x64xf32>, %s: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{result must be [64, 128], got}}
  nc.transpose %p, %s : !nc.tile<psum, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x128xf32>, %s: !nc.tile<psum, 128x128xf32>) {
  // expected-error @+1 {{transposes an SBUF tile into PSUM}}
  nc.transpose %p, %s : !nc.tile<psum, 128x128xf32>, !nc.tile<psum, 128x128xf32>
  return
}

// -----

// expected-error @+1 {{tile spans 256 partitions; a NeuronCore has 128}}
func.func @f(%s: !nc.tile<sbuf, 256x128xf32>) {
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %h: !nc.tile<hbm, 128x64xf32>) {
  // expected-error @+1 {{src must be in SBUF or PSUM (only DMA moves HBM data)}}
  nc.activation exp %a, %h : !nc.tile<sbuf, 128x64xf32>, !nc.tile<hbm, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %b: !nc.tile<sbuf, 64x64xf32>) {
  // expected-error @+1 {{dst spans 128 partitions but src spans 64}}
  nc.activation exp %a, %b : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 64x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %b: !nc.tile<sbuf, 128x32xf32>) {
  // expected-error @+1 {{dst has 64 elements per partition but src has 32}}
  nc.activation exp %a, %b : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x32xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %c: !nc.tile<sbuf, 128x2xf32>) {
  // expected-error @+1 {{bias_column must be a [128, 1] f32 column}}
  nc.activation exp %a, %a bias_column %c : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x2xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %c: !nc.tile<sbuf, 128x1xf32>) {
  // expected-error @+1 {{takes either scale_column or an immediate scale}}
  nc.activation exp %a, %a scale_column %c {scale = 2.0 : f32} : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x1xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %c: !nc.tile<sbuf, 128x1xf32>) {
  // expected-error @+1 {{takes either bias_column or an immediate bias}}
  nc.activation exp %a, %a bias_column %c {bias = 2.0 : f32} : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x1xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{runs on the vector or gpsimd engine, not scalar}}
  nc.tensor_tensor add %a, %a, %a on scalar : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %p: !nc.tile<psum, 128x64xf32>) {
  // expected-error @+1 {{the gpsimd engine cannot access PSUM}}
  nc.tensor_tensor add %a, %a, %p on gpsimd : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<psum, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %p: !nc.tile<psum, 128x64xf32>) {
  // expected-error @+1 {{at most one input may come from PSUM}}
  nc.tensor_tensor add %a, %p, %p : !nc.tile<sbuf, 128x64xf32>, !nc.tile<psum, 128x64xf32>, !nc.tile<psum, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{needs an operator}}
  nc.tensor_tensor bypass %a, %a, %a : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{pow runs on the gpsimd engine only}}
  nc.tensor_tensor pow %a, %a, %a : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{op0 cannot be bypass}}
  nc.tensor_scalar bypass, add %a, %a : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{op1 = bypass takes no second scalar}}
  nc.tensor_scalar add, bypass %a, %a {reverse1} : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %r: !nc.tile<sbuf, 128x2xf32>) {
  // expected-error @+1 {{reduces each partition's free elements into a [128, 1] tile}}
  nc.tensor_reduce add %r, %a : !nc.tile<sbuf, 128x2xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %r: !nc.tile<sbuf, 128x1xf32>) {
  // expected-error @+1 {{subtract is not a reduction operator}}
  nc.tensor_reduce subtract %r, %a : !nc.tile<sbuf, 128x1xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %b: !nc.tile<sbuf, 128x32xf32>) {
  // expected-error @+1 {{src has 32 elements per partition but dst has 64}}
  nc.tensor_copy %a, %b : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x32xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %p: !nc.tile<psum, 128x64xf32>) {
  // expected-error @+1 {{at most one input may come from PSUM}}
  nc.select %a, %a, %p, %p : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x64xf32>, !nc.tile<psum, 128x64xf32>, !nc.tile<psum, 128x64xf32>
  return
}

// -----

func.func @f(%s: !nc.tile<sbuf, 128x6xf32>, %a: !nc.tile<sbuf, 128x1024xf32>) {
  // expected-error @+1 {{free size 1024 exceeds 512 (bn_stats limit per instruction)}}
  nc.bn_stats %s, %a : !nc.tile<sbuf, 128x6xf32>, !nc.tile<sbuf, 128x1024xf32>
  return
}

// -----

func.func @f(%s: !nc.tile<sbuf, 128x5xf32>, %a: !nc.tile<sbuf, 128x512xf32>) {
  // expected-error @+1 {{result must be [128, 6] f32}}
  nc.bn_stats %s, %a : !nc.tile<sbuf, 128x5xf32>, !nc.tile<sbuf, 128x512xf32>
  return
}

// -----

func.func @f(%m: !nc.tile<sbuf, 128x2xf32>, %s: !nc.tile<sbuf, 128x7xf32>) {
  // expected-error @+1 {{source must hold f32 bn_stats tuples (a multiple of 6 per partition)}}
  nc.bn_aggr %m, %s : !nc.tile<sbuf, 128x2xf32>, !nc.tile<sbuf, 128x7xf32>
  return
}

// -----

func.func @f(%m: !nc.tile<sbuf, 128x3xf32>, %s: !nc.tile<sbuf, 128x12xf32>) {
  // expected-error @+1 {{result must be [128, 2] f32 (mean, variance)}}
  nc.bn_aggr %m, %s : !nc.tile<sbuf, 128x3xf32>, !nc.tile<sbuf, 128x12xf32>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x64xf32>) {
  // expected-error @+1 {{the gpsimd engine cannot access PSUM}}
  nc.memset %p, 0.0 on gpsimd : !nc.tile<psum, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x8x8xi32>) {
  // expected-error @+1 {{needs one step per free dimension (2), got 1}}
  nc.iota %a, base = 0, channel_multiplier = 1, steps = [1] : !nc.tile<sbuf, 128x8x8xi32>
  return
}

// -----

func.func @f(%a: !nc.tile<psum, 128x64xf32>) {
  // expected-error @+1 {{the gpsimd engine cannot access PSUM}}
  nc.affine_select ge %a, %a, base = 0, channel_multiplier = 1, steps = [-1], fill = 0.0 : !nc.tile<psum, 128x64xf32>, !nc.tile<psum, 128x64xf32>
  return
}

// -----

func.func @f(%a: !nc.tile<sbuf, 128x64xf32>, %h: !nc.tile<hbm, 128x64xf32>) {
  // expected-error @+1 {{DMA queue 16 is outside [0, 16)}}
  nc.dma_copy %a, %h {queue = 16} : !nc.tile<sbuf, 128x64xf32>, !nc.tile<hbm, 128x64xf32>
  return
}

// -----

func.func @f(%p: !nc.tile<psum, 128x64xf32>, %h: !nc.tile<hbm, 128x64xf32>) {
  // expected-error @+1 {{DMA cannot access PSUM (evict it to SBUF first)}}
  nc.dma_copy %h, %p : !nc.tile<hbm, 128x64xf32>, !nc.tile<psum, 128x64xf32>
  return
}

// -----

func.func @f(%h: !nc.tile<hbm, 128x64xf32>) {
  // expected-error @+1 {{moves data between HBM and SBUF or within SBUF, not HBM to HBM}}
  nc.dma_copy %h, %h : !nc.tile<hbm, 128x64xf32>, !nc.tile<hbm, 128x64xf32>
  return
}

// -----

func.func @f(%r: !nc.tile<sbuf, 128x32xf32>, %t: !nc.hbm<1000x64xf32>, %i: !nc.tile<sbuf, 128x1xi32>) {
  // expected-error @+1 {{each partition holds one row of 64 elements, got 32}}
  nc.dma_gather %r, %t[%i] : !nc.tile<sbuf, 128x32xf32>, !nc.hbm<1000x64xf32>, !nc.tile<sbuf, 128x1xi32>
  return
}

// -----

func.func @f(%r: !nc.tile<sbuf, 128x64xf32>, %t: !nc.hbm<1000x64xf32>, %i: !nc.tile<sbuf, 128x1xf32>) {
  // expected-error @+1 {{indices must be [128, 1] i32}}
  nc.dma_scatter_add %t[%i], %r : !nc.hbm<1000x64xf32>, !nc.tile<sbuf, 128x1xf32>, !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

func.func @f(%r: !nc.tile<sbuf, 128x64xf32>, %t: !nc.hbm<10x10x64xf32>, %i: !nc.tile<sbuf, 128x1xi32>) {
  // expected-error @+1 {{table must be 2-D [rows, row size]}}
  nc.dma_gather %r, %t[%i] : !nc.tile<sbuf, 128x64xf32>, !nc.hbm<10x10x64xf32>, !nc.tile<sbuf, 128x1xi32>
  return
}

// -----

func.func @f(%r: !nc.tile<psum, 128x64xf32>, %t: !nc.hbm<1000x64xf32>, %i: !nc.tile<sbuf, 128x1xi32>) {
  // expected-error @+1 {{rows and indices live in SBUF}}
  nc.dma_gather %r, %t[%i] : !nc.tile<psum, 128x64xf32>, !nc.hbm<1000x64xf32>, !nc.tile<sbuf, 128x1xi32>
  return
}

// -----

// expected-error @+1 {{nc.spilled_bytes is a non-negative integer attribute of a kernel}}
func.func @f() attributes {nc.spilled_bytes = -1 : i64} {
  return
}

// -----

func.func @f(%t: !nc.tile<sbuf, 128x64xf32>) {
  // expected-error @+1 {{nc.spilled_tiles is a non-negative integer attribute of a kernel}}
  nc.memset %t, 0.0 {nc.spilled_tiles = 1 : i64} : !nc.tile<sbuf, 128x64xf32>
  return
}

// -----

// expected-error @+1 {{unknown nc attribute 'nc.spills'}}
func.func @f() attributes {nc.spills = 1 : i64} {
  return
}

// -----

func.func @f(%m: !nc.tile<sbuf, 128x64xi1>, %seed: !nc.tile<sbuf, 64x2xi32>) {
  // expected-error @+1 {{seed must be [128, 2] i32 (low and high word on every partition of dst), got '!nc.tile<sbuf, 64x2xi32>'}}
  nc.rng %m, %seed, stream = 0, base = 0, channel_multiplier = 64, steps = [1] {keep_below = 8388608 : i64} : !nc.tile<sbuf, 128x64xi1>, !nc.tile<sbuf, 64x2xi32>
  return
}

// -----

func.func @f(%m: !nc.tile<sbuf, 128x64xi1>, %seed: !nc.tile<sbuf, 128x2xi32>) {
  // expected-error @+1 {{an i1 result needs keep_below (a uniform draw is not a mask)}}
  nc.rng %m, %seed, stream = 0, base = 0, channel_multiplier = 64, steps = [1] : !nc.tile<sbuf, 128x64xi1>, !nc.tile<sbuf, 128x2xi32>
  return
}

// -----

func.func @f(%m: !nc.tile<sbuf, 128x64xf32>, %seed: !nc.tile<sbuf, 128x2xi32>) {
  // expected-error @+1 {{keep_below 16777217 is outside [0, 2^24]}}
  nc.rng %m, %seed, stream = 0, base = 0, channel_multiplier = 64, steps = [1] {keep_below = 16777217 : i64} : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x2xi32>
  return
}

// -----

func.func @f(%m: !nc.tile<sbuf, 128x64xi32>, %seed: !nc.tile<sbuf, 128x2xi32>) {
  // expected-error @+1 {{writes floats or an i1 mask, not 'i32'}}
  nc.rng %m, %seed, stream = 0, base = 0, channel_multiplier = 64, steps = [1] : !nc.tile<sbuf, 128x64xi32>, !nc.tile<sbuf, 128x2xi32>
  return
}

// -----

func.func @f(%m: !nc.tile<sbuf, 128x8x8xf32>, %seed: !nc.tile<sbuf, 128x2xi32>) {
  // expected-error @+1 {{needs one step per free dimension (2), got 1}}
  nc.rng %m, %seed, stream = 0, base = 0, channel_multiplier = 64, steps = [1] : !nc.tile<sbuf, 128x8x8xf32>, !nc.tile<sbuf, 128x2xi32>
  return
}

// -----

func.func @f(%m: !nc.tile<sbuf, 128x64xf32>, %seed: !nc.tile<sbuf, 128x2xi32>) {
  // expected-error @+1 {{stream 4294967296 does not fit the 32-bit counter word}}
  nc.rng %m, %seed, stream = 4294967296, base = 0, channel_multiplier = 64, steps = [1] : !nc.tile<sbuf, 128x64xf32>, !nc.tile<sbuf, 128x2xi32>
  return
}

// -----

func.func @f(%m: !nc.tile<sbuf, 128x64xf32>, %seed: !nc.tile<hbm, 128x2xi32>) {
  // expected-error @+1 {{every operand must be in SBUF or PSUM (only DMA moves HBM data)}}
  nc.rng %m, %seed, stream = 0, base = 0, channel_multiplier = 64, steps = [1] : !nc.tile<sbuf, 128x64xf32>, !nc.tile<hbm, 128x2xi32>
  return
}

// -----

func.func @unknown_kind() {
  // expected-error @+1 {{'nc.kind' op kind 'gemm' is not one of other, matmul, attention, elementwise, optimizer, data_movement, collective}}
  nc.kind "gemm"
  return
}

// -----

func.func @reshape_count(%a: !nc.hbm<4x8xf32>) {
  // expected-error @+1 {{'nc.hbm_reshape' op reshapes keep the element type and count: '!nc.hbm<4x8xf32>' vs '!nc.hbm<3x8xf32>'}}
  %r = nc.hbm_reshape %a : !nc.hbm<4x8xf32> -> !nc.hbm<3x8xf32>
  return
}

// -----

func.func @row_window_outside(%a: !nc.hbm<4x8xf32>) {
  // expected-error @+1 {{'nc.hbm_reshape' op a window of 16 elements at offset 24 must lie inside '!nc.hbm<4x8xf32>' and keep its element type, got '!nc.hbm<2x8xf32>'}}
  %r = nc.hbm_reshape %a {offset = 24} : !nc.hbm<4x8xf32> -> !nc.hbm<2x8xf32>
  return
}
