// Attention forward with a value size of 320: a 128-row chunk of V spans
// 40960 elements, beyond a 16-bit stride; the resident V still loads with one
// DMA (HBM windows are not 16-bit bound). 300 keys: two full chunks and a
// tail; 130 queries: a full block and a 2-row one.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 17 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 2 outputs match

func.func @attention_wide_value(%q: tensor<1x2x130x64xf32> {trn.name = "q"}, %k: tensor<1x2x300x64xf32> {trn.name = "k"},
                                %v: tensor<1x2x300x320xf32> {trn.name = "v"})
    -> (tensor<1x2x130x320xf32> {trn.name = "o"}, tensor<1x2x130xf32> {trn.name = "lse"}) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.125 : (tensor<1x2x130x64xf32>, tensor<1x2x300x64xf32>, tensor<1x2x300x320xf32>) -> (tensor<1x2x130x320xf32>, tensor<1x2x130xf32>)
  return %o, %lse : tensor<1x2x130x320xf32>, tensor<1x2x130xf32>
}
