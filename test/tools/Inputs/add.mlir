func.func @main(%x: tensor<2x3xf32> {trn.name = "x"}, %ids: tensor<2xi64> {trn.name = "ids"})
    -> (tensor<2x3xf32> {trn.name = "y"}, tensor<2xi64> {trn.name = "ids_out"}, tensor<2x3xbf16> {trn.name = "y_bf16"}) {
  %0 = trn.add %x, %x : tensor<2x3xf32>
  %1 = trn.convert %0 : tensor<2x3xf32> -> tensor<2x3xbf16>
  return %0, %ids, %1 : tensor<2x3xf32>, tensor<2xi64>, tensor<2x3xbf16>
}
