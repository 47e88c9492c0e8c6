// RUN: trn-opt %s -dist-seed="mesh=tp=4" -verify-diagnostics -o /dev/null

// tp must divide the attention heads (or, for key/value heads fewer than
// tp, be a multiple of them): 6 heads at tp = 4 is neither.
func.func @heads(%x: tensor<8x48xf32>,
                 %wq: tensor<48x48xf32> {trn.role = "parameter", trn.name = "attn.q.weight"},
                 %wo: tensor<48x48xf32> {trn.role = "parameter", trn.name = "attn.o.weight"}) -> tensor<8x48xf32> {
  %q = trn.dot_general %x, %wq, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x48xf32>, tensor<48x48xf32>) -> tensor<8x48xf32>
  // expected-error @+1 {{tp=4 does not divide 6 heads of 'attn.q.weight'; choose a tp that divides the heads}}
  %h = trn.reshape %q : (tensor<8x48xf32>) -> tensor<8x6x8xf32>
  %e = trn.exp %h : tensor<8x6x8xf32>
  %g = trn.reshape %e : (tensor<8x6x8xf32>) -> tensor<8x48xf32>
  %y = trn.dot_general %g, %wo, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x48xf32>, tensor<48x48xf32>) -> tensor<8x48xf32>
  return %y : tensor<8x48xf32>
}
