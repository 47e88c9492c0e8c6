// Dropout masks and uniform draws (trn.rng_bernoulli, trn.rng_uniform)
// compiled by trn-cc and run on the simulator equal the reference
// evaluator's bit for bit: both draw Philox4x32-10 at each element's
// row-major index, so the tiling (300 rows = 128 + 128 + 44 partitions,
// 2500 columns = 2048 + 452) cannot change a value.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 11 --int-max 9000000000000000000 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 0 | FileCheck %s
// CHECK: mask: 0 of 750000 elements differ
// CHECK: 5 outputs match
// The i64 seed reaches the device and the evaluator exactly (not through a
// double, which keeps 53 bits).
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --check-against %s | FileCheck %s --check-prefix=AGAINST
// AGAINST: all outputs match

func.func @random(%seed: tensor<i64> {trn.name = "seed"}, %x: tensor<300x2500xf32> {trn.name = "x"})
    -> (tensor<300x2500xf32> {trn.name = "dropped"}, tensor<300x2500xi1> {trn.name = "mask"},
        tensor<7x3xbf16> {trn.name = "uniform_bf16"}, tensor<4097xf32> {trn.name = "uniform_f32"},
        tensor<2x3x130xf32> {trn.name = "mask_f32"}) {
  %keep = trn.rng_bernoulli %seed, stream = 3, p = 0.9 : tensor<i64> -> tensor<300x2500xi1>
  %scale = trn.constant dense<1.11111116> : tensor<300x2500xf32>
  %scaled = trn.mul %x, %scale : tensor<300x2500xf32>
  %zero = trn.constant dense<0.0> : tensor<300x2500xf32>
  %dropped = trn.select %keep, %scaled, %zero : tensor<300x2500xi1>, tensor<300x2500xf32>
  %u = trn.rng_uniform %seed, stream = 4 {low = -2.0 : f64, high = 3.0 : f64} : tensor<i64> -> tensor<7x3xbf16>
  %v = trn.rng_uniform %seed, stream = 5 : tensor<i64> -> tensor<4097xf32>
  %m = trn.rng_bernoulli %seed, stream = 6, p = 0.25 : tensor<i64> -> tensor<2x3x130xf32>
  return %dropped, %keep, %u, %v, %m : tensor<300x2500xf32>, tensor<300x2500xi1>, tensor<7x3xbf16>, tensor<4097xf32>, tensor<2x3x130xf32>
}
