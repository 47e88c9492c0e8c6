// A small step graph for trn-cc: elementwise add and exp of two f32
// [256, 64] tensors (two row tiles of 128 partitions).
func.func @add_exp(%x: tensor<256x64xf32> {trn.name = "x"},
                   %y: tensor<256x64xf32> {trn.name = "y"})
    -> (tensor<256x64xf32> {trn.name = "z"}) {
  %0 = trn.add %x, %y : tensor<256x64xf32>
  %1 = trn.exp %0 : tensor<256x64xf32>
  return %1 : tensor<256x64xf32>
}
