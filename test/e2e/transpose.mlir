// Transposes the layout pass cannot absorb, copied through SBUF: head
// transposes both ways ([B, H, S, D] <-> [B, S, H, D]; the copy puts the
// sequence, not the 3 heads, on partitions), a matrix transpose (on the
// Tensor Engine) and a 3-D rotation, in f32 and bf16.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 3 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 0 | FileCheck %s
// CHECK: outputs match

func.func @transposes(%x: tensor<2x3x200x40xf32> {trn.name = "x"}, %m: tensor<300x130xbf16> {trn.name = "m"},
                      %r: tensor<5x140x7xf32> {trn.name = "r"})
    -> (tensor<2x200x3x40xf32> {trn.name = "bshd"}, tensor<2x3x200x40xf32> {trn.name = "bhsd"},
        tensor<130x300xbf16> {trn.name = "mt"}, tensor<7x5x140xf32> {trn.name = "rot"}) {
  %0 = trn.transpose %x, perm = [0, 2, 1, 3] : (tensor<2x3x200x40xf32>) -> tensor<2x200x3x40xf32>
  %1 = trn.exp %0 : tensor<2x200x3x40xf32>
  %2 = trn.transpose %1, perm = [0, 2, 1, 3] : (tensor<2x200x3x40xf32>) -> tensor<2x3x200x40xf32>
  %3 = trn.transpose %m, perm = [1, 0] : (tensor<300x130xbf16>) -> tensor<130x300xbf16>
  %4 = trn.transpose %r, perm = [2, 0, 1] : (tensor<5x140x7xf32>) -> tensor<7x5x140xf32>
  return %0, %2, %3, %4 : tensor<2x200x3x40xf32>, tensor<2x3x200x40xf32>, tensor<130x300xbf16>, tensor<7x5x140xf32>
}
