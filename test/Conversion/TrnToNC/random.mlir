// RUN: trn-opt %s -convert-trn-to-nc -split-input-file -verify-diagnostics | FileCheck %s

// A [300, 2500] mask is tiled [128, 2048]: each tile is one nc.rng whose
// counter is the element's row-major index (base = r0 * 2500 + c0,
// channel_multiplier = 2500). The seed's two words are broadcast once to
// every partition (partition stride 0); p = 0.9 becomes the exact integer
// threshold ceil(0.9 * 2^24).
// CHECK-LABEL: func.func @mask
// CHECK: %[[WORDS:.*]] = nc.view %arg0 strides [1] : !nc.hbm<i64> -> <hbm, 128x2xi32>
// CHECK: %[[SEED:.*]] = nc.alloc : <sbuf, 128x2xi32>
// CHECK: nc.dma_copy %[[SEED]], %[[WORDS]]
// CHECK: nc.rng %{{.*}}, %[[SEED]], stream = 3, base = 0, channel_multiplier = 2500, steps = [1] {keep_below = 15099495 : i64} : <sbuf, 128x2048xi1>, <sbuf, 128x2xi32>
// CHECK: nc.rng %{{.*}}, %[[SEED]], stream = 3, base = 2048, channel_multiplier = 2500, steps = [1] {keep_below = 15099495 : i64} : <sbuf, 128x452xi1>
// CHECK: nc.rng %{{.*}}, %[[SEED]], stream = 3, base = 320000, channel_multiplier = 2500
// The last 44 rows read a window of the seed tile.
// CHECK: %[[ROWS:.*]] = nc.view %[[SEED]] strides [1] : !nc.tile<sbuf, 128x2xi32> -> <sbuf, 44x2xi32>
// CHECK: nc.rng %{{.*}}, %[[ROWS]], stream = 3, base = 640000, channel_multiplier = 2500
func.func @mask(%seed: tensor<i64>) -> tensor<300x2500xi1> {
  %0 = trn.rng_bernoulli %seed, stream = 3, p = 0.9 : tensor<i64> -> tensor<300x2500xi1>
  return %0 : tensor<300x2500xi1>
}

// -----

// A uniform draw carries its bounds as f32 immediates.
// CHECK-LABEL: func.func @uniform
// CHECK: nc.rng {{.*}}, stream = 0, base = 0, channel_multiplier = 5, steps = [1] {high = 3.000000e+00 : f32, low = -2.000000e+00 : f32} : <sbuf, 7x5xbf16>
func.func @uniform(%seed: tensor<i64>) -> tensor<7x5xbf16> {
  %0 = trn.rng_uniform %seed, stream = 0 {low = -2.0 : f64, high = 3.0 : f64} : tensor<i64> -> tensor<7x5xbf16>
  return %0 : tensor<7x5xbf16>
}

// -----

func.func @inexact_bounds(%seed: tensor<i64>) -> tensor<8xf32> {
  // expected-error @+1 {{'trn.rng_uniform' bounds low = 1.000000e-01, high = 1.000000e+00 are not lowered to NeuronCore kernels: they must be exact f32 values}}
  %0 = trn.rng_uniform %seed, stream = 0 {low = 0.1 : f64} : tensor<i64> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
