// RUN: trn-opt %s -trn-decompose-composites | FileCheck %s \
// RUN:   --implicit-check-not=trn.softmax --implicit-check-not=trn.log_softmax \
// RUN:   --implicit-check-not=trn.layer_norm --implicit-check-not=trn.rms_norm \
// RUN:   --implicit-check-not=trn.attention --implicit-check-not=trn.cross_entropy
// RUN: trn-opt %s -trn-decompose-composites="ops=softmax,trn.attention_grad" \
// RUN:   | FileCheck %s --check-prefix=SOME
// RUN: not trn-opt %s -trn-decompose-composites="ops=softmax,gelu" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN
// RUN: trn-opt %s -trn-decompose-composites="keep-flash-attention=1" \
// RUN:   | FileCheck %s --check-prefix=KEEP

// The numerical agreement of every decomposition with the reference
// evaluator is checked in test/Eval/decompose-composites.mlir; this file
// checks the primitives each composite becomes.

// SOME-LABEL: func.func @softmax
// SOME-NOT: trn.softmax
// SOME: trn.log_softmax
// SOME-LABEL: func.func @attention
// SOME: trn.attention {{.*}} causal
// SOME-NOT: trn.attention_grad
// SOME-LABEL: func.func @cross_entropy
// SOME: trn.cross_entropy mean
// SOME: trn.cross_entropy_grad sum

// keep-flash-attention: attention and attention_grad ops whose shapes the
// backend's flash-style kernels take (flashAttentionBlocker) stay whole, the
// others and every other composite are decomposed as without it.
// KEEP-LABEL: func.func @softmax(
// KEEP-NOT: trn.softmax
// KEEP: trn.exp
// KEEP-LABEL: func.func @attention(
// KEEP-SAME: %[[Q:[^:]+]]: tensor<2x4x16xbf16>, %[[K:[^:]+]]: tensor<2x6x16xbf16>, %[[V:[^:]+]]: tensor<2x6x8xbf16>, %[[DO:[^:]+]]: tensor<2x4x8xbf16>
// KEEP-NEXT: %[[O:[^,]+]], %[[LSE:[^ ]+]] = trn.attention %[[Q]], %[[K]], %[[V]], scale = 2.500000e-01 causal :
// KEEP-NEXT: trn.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]], %[[DO]], scale = 2.500000e-01 causal :
// KEEP-NEXT: return
// KEEP-LABEL: func.func @attention_noncausal(
// KEEP-NEXT: trn.attention %{{.+}}, scale = 2.500000e-01 :
// KEEP-NEXT: return
// Head size 256 exceeds the 128 partitions of a contraction: both ops are
// decomposed.
// KEEP-LABEL: func.func @attention_head_size_256(
// KEEP-NOT: trn.attention
// KEEP: trn.dot_general %{{.+}}, %{{.+}}, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x4x256xbf16>, tensor<2x4x256xbf16>) -> tensor<2x4x4xf32>
// KEEP-NOT: trn.attention
// KEEP: return
// Value size 192: within the forward kernel's 512 (one PSUM bank) but over
// the backward kernel's 128, so the forward op stays and the gradient is
// decomposed, reading the kept op's output and lse.
// KEEP-LABEL: func.func @attention_value_size_192(
// KEEP-NEXT: %[[O:[^,]+]], %[[LSE:[^ ]+]] = trn.attention {{.*}} -> (tensor<4x192xf32>, tensor<4xf32>)
// KEEP-NOT: trn.attention_grad
// KEEP: trn.broadcast_in_dim %[[LSE]]
// KEEP: trn.mul %{{.+}}, %[[O]] : tensor<4x192xf32>
// KEEP-NOT: trn.attention_grad
// KEEP: return
// A head's K^T and V must stay in 96 KiB per partition: 24576 f32 keys of
// head size 16 take 24576 * 4 + 192 chunks * 16 * 4 = 110592 bytes
// (decomposed), as bf16 half that (kept).
// KEEP-LABEL: func.func @attention_resident_budget(
// KEEP-NOT: trn.attention
// KEEP: trn.dot_general %{{.+}}, %{{.+}} : (tensor<8x16xf32>, tensor<24576x16xf32>) -> tensor<8x24576xf32>
// KEEP-NOT: trn.attention
// KEEP: trn.attention %{{.+}} : (tensor<8x16xbf16>, tensor<24576x16xbf16>, tensor<24576x16xbf16>)
// KEEP-NEXT: return
// The backward keeps more resident (150 KiB per partition): Q^T, K^T, V^T
// and dO^T rows, Q, K and dO chunks and the f32 dQ accumulator of 8192 bf16
// queries and keys at head size 128 take 147456 bytes (kept, Llama3-70B's
// sequence), of 9216 take 165888 (decomposed).
// KEEP-LABEL: func.func @attention_grad_resident_budget(
// KEEP: trn.attention_grad %{{.+}} : (tensor<8192x128xbf16>,
// KEEP-NOT: trn.attention_grad
// KEEP: return

// UNKNOWN: error: trn-decompose-composites: 'gelu' in ops= is not a composite op; composites are softmax, log_softmax, softmax_grad, log_softmax_grad, layer_norm, layer_norm_grad, rms_norm, rms_norm_grad, attention, attention_grad, cross_entropy, cross_entropy_grad

// bf16 is computed in f32: convert up once, convert the result down once.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x8xbf16>
// CHECK-NEXT: %[[XF:.+]] = trn.convert %[[X]] : tensor<2x8xbf16> -> tensor<2x8xf32>
// CHECK-NEXT: %[[MAX:.+]] = trn.reduce max %[[XF]], dims = [1] : (tensor<2x8xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[MAXB:.+]] = trn.broadcast_in_dim %[[MAX]], dims = [0] : (tensor<2xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[SHIFT:.+]] = trn.sub %[[XF]], %[[MAXB]] : tensor<2x8xf32>
// CHECK-NEXT: %[[EXP:.+]] = trn.exp %[[SHIFT]] : tensor<2x8xf32>
// CHECK-NEXT: %[[SUM:.+]] = trn.reduce sum %[[EXP]], dims = [1] : (tensor<2x8xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[SUMB:.+]] = trn.broadcast_in_dim %[[SUM]], dims = [0] : (tensor<2xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[Y:.+]] = trn.div %[[EXP]], %[[SUMB]] : tensor<2x8xf32>
// CHECK-NEXT: %[[SM:.+]] = trn.convert %[[Y]] : tensor<2x8xf32> -> tensor<2x8xbf16>
// log_softmax along dim 0: x - max - log(sum(exp(x - max))).
// CHECK-NEXT: %[[XF0:.+]] = trn.convert %[[X]]
// CHECK-NEXT: %[[MAX0:.+]] = trn.reduce max %[[XF0]], dims = [0] : (tensor<2x8xf32>) -> tensor<8xf32>
// CHECK-NEXT: %[[MAXB0:.+]] = trn.broadcast_in_dim %[[MAX0]], dims = [1]
// CHECK-NEXT: %[[SHIFT0:.+]] = trn.sub %[[XF0]], %[[MAXB0]]
// CHECK-NEXT: %[[EXP0:.+]] = trn.exp %[[SHIFT0]]
// CHECK-NEXT: %[[SUM0:.+]] = trn.reduce sum %[[EXP0]], dims = [0]
// CHECK-NEXT: %[[LOG0:.+]] = trn.log %[[SUM0]] : tensor<8xf32>
// CHECK-NEXT: %[[LOGB0:.+]] = trn.broadcast_in_dim %[[LOG0]], dims = [1]
// CHECK-NEXT: %[[LSM:.+]] = trn.sub %[[SHIFT0]], %[[LOGB0]] : tensor<2x8xf32>
// CHECK-NEXT: %[[LSMB:.+]] = trn.convert %[[LSM]] : tensor<2x8xf32> -> tensor<2x8xbf16>
// CHECK-NEXT: return %[[SM]], %[[LSMB]]
func.func @softmax(%x: tensor<2x8xbf16>) -> (tensor<2x8xbf16>, tensor<2x8xbf16>) {
  %0 = trn.softmax %x, dim = 1 : tensor<2x8xbf16>
  %1 = trn.log_softmax %x, dim = 0 : tensor<2x8xbf16>
  return %0, %1 : tensor<2x8xbf16>, tensor<2x8xbf16>
}

// f32 needs no conversion.
// CHECK-LABEL: func.func @softmax_grads(
// CHECK-SAME: %[[Y:[^:]+]]: tensor<2x8xf32>, %[[DY:[^:]+]]: tensor<2x8xf32>
// y * (dy - sum(dy * y))
// CHECK-NEXT: %[[P:.+]] = trn.mul %[[DY]], %[[Y]]
// CHECK-NEXT: %[[DOT:.+]] = trn.reduce sum %[[P]], dims = [1]
// CHECK-NEXT: %[[DOTB:.+]] = trn.broadcast_in_dim %[[DOT]], dims = [0]
// CHECK-NEXT: %[[D:.+]] = trn.sub %[[DY]], %[[DOTB]]
// CHECK-NEXT: %[[SMG:.+]] = trn.mul %[[Y]], %[[D]]
// dy - exp(y) * sum(dy)
// CHECK-NEXT: %[[S:.+]] = trn.reduce sum %[[DY]], dims = [1]
// CHECK-NEXT: %[[SB:.+]] = trn.broadcast_in_dim %[[S]], dims = [0]
// CHECK-NEXT: %[[E:.+]] = trn.exp %[[Y]]
// CHECK-NEXT: %[[ES:.+]] = trn.mul %[[E]], %[[SB]]
// CHECK-NEXT: %[[LSMG:.+]] = trn.sub %[[DY]], %[[ES]]
// CHECK-NEXT: return %[[SMG]], %[[LSMG]]
func.func @softmax_grads(%y: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = trn.softmax_grad %y, %dy, dim = 1 : tensor<2x8xf32>
  %1 = trn.log_softmax_grad %y, %dy, dim = 1 : tensor<2x8xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// Two-pass variance; the statistics are the f32 results themselves.
// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x4x8xf32>, %[[W:[^:]+]]: tensor<8xf32>, %[[B:[^:]+]]: tensor<8xf32>, %[[DY:[^:]+]]: tensor<2x4x8xf32>
// CHECK-NEXT: %[[SUM:.+]] = trn.reduce sum %[[X]], dims = [2] : (tensor<2x4x8xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[N:.+]] = trn.constant dense<8.000000e+00> : tensor<2x4xf32>
// CHECK-NEXT: %[[MEAN:.+]] = trn.div %[[SUM]], %[[N]]
// CHECK-NEXT: %[[MEANB:.+]] = trn.broadcast_in_dim %[[MEAN]], dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[C:.+]] = trn.sub %[[X]], %[[MEANB]]
// CHECK-NEXT: %[[C2:.+]] = trn.mul %[[C]], %[[C]]
// CHECK-NEXT: %[[SS:.+]] = trn.reduce sum %[[C2]], dims = [2]
// CHECK-NEXT: %[[N2:.+]] = trn.constant dense<8.000000e+00>
// CHECK-NEXT: %[[VAR:.+]] = trn.div %[[SS]], %[[N2]]
// CHECK-NEXT: %[[EPS:.+]] = trn.constant dense<9.99999974E-6> : tensor<2x4xf32>
// CHECK-NEXT: %[[VE:.+]] = trn.add %[[VAR]], %[[EPS]]
// CHECK-NEXT: %[[RSTD:.+]] = trn.rsqrt %[[VE]] : tensor<2x4xf32>
// CHECK-NEXT: %[[RSTDB:.+]] = trn.broadcast_in_dim %[[RSTD]], dims = [0, 1]
// CHECK-NEXT: %[[XHAT:.+]] = trn.mul %[[C]], %[[RSTDB]]
// CHECK-NEXT: %[[WB:.+]] = trn.broadcast_in_dim %[[W]], dims = [2] : (tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[BB:.+]] = trn.broadcast_in_dim %[[B]], dims = [2] : (tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[XW:.+]] = trn.mul %[[XHAT]], %[[WB]]
// CHECK-NEXT: %[[OUT:.+]] = trn.add %[[XW]], %[[BB]]
// layer_norm_grad: grad_weight and grad_bias sum over the leading dims.
// CHECK: %[[DW:.+]] = trn.reduce sum %{{.+}}, dims = [0, 1] : (tensor<2x4x8xf32>) -> tensor<8xf32>
// CHECK-NEXT: %[[DB:.+]] = trn.reduce sum %[[DY]], dims = [0, 1] : (tensor<2x4x8xf32>) -> tensor<8xf32>
// CHECK-NEXT: return %[[OUT]], %[[MEAN]], %[[RSTD]], %{{.+}}, %[[DW]], %[[DB]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>, %dy: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %y, %mean, %rstd = trn.layer_norm %x, %w, %b, axis = 2, eps = 1.0e-5 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %dx, %dw, %db = trn.layer_norm_grad %dy, %x, %mean, %rstd, %w, axis = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %y, %mean, %rstd, %dx, %dw, %db : tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// Normalising every dimension (axis 0): 0-d statistics, and grad_weight is
// not reduced at all.
// CHECK-LABEL: func.func @layer_norm_axis0(
// CHECK: trn.reduce sum %{{.+}}, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<f32>
// CHECK: trn.rsqrt %{{.+}} : tensor<f32>
// CHECK-NOT: trn.reduce
// CHECK: return
func.func @layer_norm_axis0(%x: tensor<2x8xf32>, %w: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<f32>, tensor<f32>) {
  %y, %mean, %rstd = trn.layer_norm %x, %w, %w, axis = 0, eps = 1.0e-5 : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<f32>, tensor<f32>)
  return %y, %mean, %rstd : tensor<2x8xf32>, tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @rms_norm(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xbf16>, %[[W:[^:]+]]: tensor<8xbf16>
// CHECK-NEXT: %[[XF:.+]] = trn.convert %[[X]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: %[[SQ:.+]] = trn.mul %[[XF]], %[[XF]]
// CHECK-NEXT: trn.reduce sum %[[SQ]], dims = [1]
// CHECK: %[[RSTD:.+]] = trn.rsqrt %{{.+}} : tensor<4xf32>
// CHECK: %[[WF:.+]] = trn.convert %[[W]] : tensor<8xbf16> -> tensor<8xf32>
// CHECK: %[[OUT:.+]] = trn.convert %{{.+}} : tensor<4x8xf32> -> tensor<4x8xbf16>
// rms_norm_grad
// CHECK: %[[DX:.+]] = trn.convert %{{.+}} : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[DW:.+]] = trn.convert %{{.+}} : tensor<8xf32> -> tensor<8xbf16>
// CHECK-NEXT: return %[[OUT]], %[[RSTD]], %[[DX]], %[[DW]]
func.func @rms_norm(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %dy: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4xf32>, tensor<4x8xbf16>, tensor<8xbf16>) {
  %y, %rstd = trn.rms_norm %x, %w, axis = 1, eps = 1.0e-6 : (tensor<4x8xbf16>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4xf32>)
  %dx, %dw = trn.rms_norm_grad %dy, %x, %rstd, %w, axis = 1 : (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xf32>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<8xbf16>)
  return %y, %rstd, %dx, %dw : tensor<4x8xbf16>, tensor<4xf32>, tensor<4x8xbf16>, tensor<8xbf16>
}

// Causal attention, 4 queries and 6 keys: bf16 q k^T with an f32 result,
// scaled, -inf where key j > query i, then a stable softmax.
// CHECK-LABEL: func.func @attention(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<2x4x16xbf16>, %[[K:[^:]+]]: tensor<2x6x16xbf16>, %[[V:[^:]+]]: tensor<2x6x8xbf16>, %[[DO:[^:]+]]: tensor<2x4x8xbf16>
// CHECK-NEXT: %[[QK:.+]] = trn.dot_general %[[Q]], %[[K]], batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x4x16xbf16>, tensor<2x6x16xbf16>) -> tensor<2x4x6xf32>
// CHECK-NEXT: %[[SCALE:.+]] = trn.constant dense<2.500000e-01> : tensor<2x4x6xf32>
// CHECK-NEXT: %[[SCORES:.+]] = trn.mul %[[QK]], %[[SCALE]]
// CHECK-NEXT: %[[I:.+]] = trn.iota dim = 0 : tensor<4x6xi32>
// CHECK-NEXT: %[[J:.+]] = trn.iota dim = 1 : tensor<4x6xi32>
// CHECK-NEXT: %[[HIDDEN:.+]] = trn.compare gt, %[[J]], %[[I]] : tensor<4x6xi32>
// CHECK-NEXT: %[[MASK:.+]] = trn.broadcast_in_dim %[[HIDDEN]], dims = [1, 2] : (tensor<4x6xi1>) -> tensor<2x4x6xi1>
// CHECK-NEXT: %[[NEGINF:.+]] = trn.constant dense<0xFF800000> : tensor<2x4x6xf32>
// CHECK-NEXT: %[[MASKED:.+]] = trn.select %[[MASK]], %[[NEGINF]], %[[SCORES]]
// CHECK-NEXT: %[[MAX:.+]] = trn.reduce max %[[MASKED]], dims = [2]
// CHECK-NEXT: %[[MAXB:.+]] = trn.broadcast_in_dim %[[MAX]], dims = [0, 1]
// CHECK-NEXT: %[[SHIFT:.+]] = trn.sub %[[MASKED]], %[[MAXB]]
// CHECK-NEXT: %[[EXP:.+]] = trn.exp %[[SHIFT]]
// CHECK-NEXT: %[[SUM:.+]] = trn.reduce sum %[[EXP]], dims = [2]
// CHECK-NEXT: %[[SUMB:.+]] = trn.broadcast_in_dim %[[SUM]], dims = [0, 1]
// CHECK-NEXT: %[[P:.+]] = trn.div %[[EXP]], %[[SUMB]] : tensor<2x4x6xf32>
// CHECK-NEXT: %[[VF:.+]] = trn.convert %[[V]] : tensor<2x6x8xbf16> -> tensor<2x6x8xf32>
// CHECK-NEXT: %[[PV:.+]] = trn.dot_general %[[P]], %[[VF]], batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[OUT:.+]] = trn.convert %[[PV]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// lse = max + log(sum)
// CHECK-NEXT: %[[LOG:.+]] = trn.log %[[SUM]] : tensor<2x4xf32>
// CHECK-NEXT: %[[LSE:.+]] = trn.add %[[MAX]], %[[LOG]] : tensor<2x4xf32>
// attention_grad recomputes p = exp(masked scores - lse).
// CHECK: %[[MASKED2:.+]] = trn.select
// CHECK-NEXT: %[[LSEB:.+]] = trn.broadcast_in_dim %[[LSE]], dims = [0, 1]
// CHECK-NEXT: %[[S2:.+]] = trn.sub %[[MASKED2]], %[[LSEB]]
// CHECK-NEXT: %[[P2:.+]] = trn.exp %[[S2]]
// grad_value = p^T do
// CHECK-NEXT: %[[DOF:.+]] = trn.convert %[[DO]]
// CHECK-NEXT: %[[DV:.+]] = trn.dot_general %[[P2]], %[[DOF]], batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<2x4x6xf32>, tensor<2x4x8xf32>) -> tensor<2x6x8xf32>
// do v^T
// CHECK-NEXT: %[[DP:.+]] = trn.dot_general %[[DO]], %[[V]], batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x4x8xbf16>, tensor<2x6x8xbf16>) -> tensor<2x4x6xf32>
// rowsum(do * output)
// CHECK-NEXT: %[[OF:.+]] = trn.convert %[[OUT]]
// CHECK-NEXT: %[[DOO:.+]] = trn.mul %[[DOF]], %[[OF]]
// CHECK-NEXT: %[[ROW:.+]] = trn.reduce sum %[[DOO]], dims = [2]
// CHECK-NEXT: %[[ROWB:.+]] = trn.broadcast_in_dim %[[ROW]], dims = [0, 1]
// CHECK-NEXT: %[[D:.+]] = trn.sub %[[DP]], %[[ROWB]]
// CHECK-NEXT: %[[DS:.+]] = trn.mul %[[P2]], %[[D]]
// CHECK-NEXT: %[[SCALE2:.+]] = trn.constant dense<2.500000e-01>
// CHECK-NEXT: %[[DSS:.+]] = trn.mul %[[DS]], %[[SCALE2]]
// grad_query = scale * ds k, grad_key = scale * ds^T q
// CHECK-NEXT: %[[KF:.+]] = trn.convert %[[K]]
// CHECK-NEXT: %[[DQ:.+]] = trn.dot_general %[[DSS]], %[[KF]], batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x6xf32>, tensor<2x6x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[QF:.+]] = trn.convert %[[Q]]
// CHECK-NEXT: %[[DK:.+]] = trn.dot_general %[[DSS]], %[[QF]], batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<2x4x6xf32>, tensor<2x4x16xf32>) -> tensor<2x6x16xf32>
// CHECK-NEXT: %[[DQB:.+]] = trn.convert %[[DQ]] : tensor<2x4x16xf32> -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[DKB:.+]] = trn.convert %[[DK]] : tensor<2x6x16xf32> -> tensor<2x6x16xbf16>
// CHECK-NEXT: %[[DVB:.+]] = trn.convert %[[DV]] : tensor<2x6x8xf32> -> tensor<2x6x8xbf16>
// CHECK-NEXT: return %[[OUT]], %[[LSE]], %[[DQB]], %[[DKB]], %[[DVB]]
func.func @attention(%q: tensor<2x4x16xbf16>, %k: tensor<2x6x16xbf16>, %v: tensor<2x6x8xbf16>, %do: tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4x16xbf16>, tensor<2x6x16xbf16>, tensor<2x6x8xbf16>) {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.25 causal : (tensor<2x4x16xbf16>, tensor<2x6x16xbf16>, tensor<2x6x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = 0.25 causal : (tensor<2x4x16xbf16>, tensor<2x6x16xbf16>, tensor<2x6x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4x8xbf16>) -> (tensor<2x4x16xbf16>, tensor<2x6x16xbf16>, tensor<2x6x8xbf16>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4x16xbf16>, tensor<2x6x16xbf16>, tensor<2x6x8xbf16>
}

// Without causal there is no mask; rank 2 has no batch dimensions.
// CHECK-LABEL: func.func @attention_noncausal(
// CHECK-NOT: trn.select
// CHECK: trn.dot_general %{{.+}}, %{{.+}}, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x4xf32>
// CHECK-NOT: trn.select
// CHECK: return
func.func @attention_noncausal(%q: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4xf32>) {
  %o, %lse = trn.attention %q, %q, %q, scale = 0.25 : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4xf32>)
  return %o, %lse : tensor<4x16xf32>, tensor<4xf32>
}

// Ignored labels (-100 by default) become class 0 before gather and
// scatter_add; their rows are zeroed with select; mean divides by the count.
// CHECK-LABEL: func.func @cross_entropy(
// CHECK-SAME: %[[L:[^:]+]]: tensor<4x10xf32>, %[[Y:[^:]+]]: tensor<4xi32>, %[[G:[^:]+]]: tensor<f32>
// CHECK-NEXT: %[[IGNORE:.+]] = trn.constant dense<-100> : tensor<4xi32>
// CHECK-NEXT: %[[COUNTED:.+]] = trn.compare ne, %[[Y]], %[[IGNORE]] : tensor<4xi32>
// CHECK-NEXT: %[[MAX:.+]] = trn.reduce max %[[L]], dims = [1]
// CHECK:      %[[SUM:.+]] = trn.reduce sum %{{.+}}, dims = [1]
// CHECK-NEXT: %[[LOG:.+]] = trn.log %[[SUM]]
// CHECK-NEXT: %[[LSE:.+]] = trn.add %[[MAX]], %[[LOG]] : tensor<4xf32>
// CHECK-NEXT: %[[ZERO:.+]] = trn.constant dense<0> : tensor<4xi32>
// CHECK-NEXT: %[[SAFE:.+]] = trn.select %[[COUNTED]], %[[Y]], %[[ZERO]] : tensor<4xi1>, tensor<4xi32>
// CHECK-NEXT: %[[PICK:.+]] = trn.gather %[[L]][%[[SAFE]]], axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<4xf32>
// CHECK-NEXT: %[[ZEROS:.+]] = trn.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[ROW:.+]] = trn.sub %[[LSE]], %[[PICK]]
// CHECK-NEXT: %[[ROWLOSS:.+]] = trn.select %[[COUNTED]], %[[ROW]], %[[ZEROS]]
// CHECK-NEXT: %[[ONES:.+]] = trn.convert %[[COUNTED]] : tensor<4xi1> -> tensor<4xf32>
// CHECK-NEXT: %[[COUNT:.+]] = trn.reduce sum %[[ONES]], dims = [0] : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[TOTAL:.+]] = trn.reduce sum %[[ROWLOSS]], dims = [0] : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[MEAN:.+]] = trn.div %[[TOTAL]], %[[COUNT]] : tensor<f32>
// cross_entropy_grad sum: g * softmax, then -g scattered at the label.
// CHECK:      %[[PROBS:.+]] = trn.div
// CHECK-NEXT: %[[GB:.+]] = trn.broadcast_in_dim %[[G]], dims = [] : (tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: %[[ZEROS2:.+]] = trn.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[ROWG:.+]] = trn.select %{{.+}}, %[[GB]], %[[ZEROS2]]
// CHECK-NEXT: %[[ROWGB:.+]] = trn.broadcast_in_dim %[[ROWG]], dims = [0] : (tensor<4xf32>) -> tensor<4x10xf32>
// CHECK-NEXT: %[[SCALED:.+]] = trn.mul %[[ROWGB]], %[[PROBS]]
// CHECK-NEXT: %[[NEG:.+]] = trn.neg %[[ROWG]]
// CHECK:      %[[SAFE2:.+]] = trn.select
// CHECK-NEXT: %[[GRAD:.+]] = trn.scatter_add %[[SCALED]][%[[SAFE2]]], %[[NEG]], axis = 1, batch_dims = 1 : (tensor<4x10xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x10xf32>
// CHECK-NEXT: return %[[MEAN]], %[[GRAD]]
func.func @cross_entropy(%logits: tensor<4x10xf32>, %labels: tensor<4xi32>, %g: tensor<f32>) -> (tensor<f32>, tensor<4x10xf32>) {
  %0 = trn.cross_entropy mean %logits, %labels : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  %1 = trn.cross_entropy_grad sum %logits, %labels, %g : (tensor<4x10xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x10xf32>
  return %0, %1 : tensor<f32>, tensor<4x10xf32>
}

// An ignore_index that i32 labels cannot hold ignores nothing: the compare
// and selects fold away; the bf16 label logit is gathered before conversion.
// CHECK-LABEL: func.func @cross_entropy_wide_ignore(
// CHECK-SAME: %[[L:[^:]+]]: tensor<4x10xbf16>, %[[Y:[^:]+]]: tensor<4xi32>
// CHECK-NOT: trn.compare
// CHECK-NOT: trn.select
// CHECK: trn.gather %[[L]][%[[Y]]], axis = 1, batch_dims = 1 : (tensor<4x10xbf16>, tensor<4xi32>) -> tensor<4xbf16>
// CHECK-NOT: trn.select
// CHECK: trn.scatter_add %{{.+}}[%[[Y]]]
// CHECK: return
func.func @cross_entropy_wide_ignore(%logits: tensor<4x10xbf16>, %labels: tensor<4xi32>, %g: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4x10xbf16>) {
  %0 = trn.cross_entropy none %logits, %labels {ignore_index = 4294967296 : i64} : (tensor<4x10xbf16>, tensor<4xi32>) -> tensor<4xbf16>
  %1 = trn.cross_entropy_grad none %logits, %labels, %g {ignore_index = 4294967296 : i64} : (tensor<4x10xbf16>, tensor<4xi32>, tensor<4xbf16>) -> tensor<4x10xbf16>
  return %0, %1 : tensor<4xbf16>, tensor<4x10xbf16>
}

// Elementwise ops with one activation function each are primitives, and the
// rest of the graph is left alone (not even folded).
// CHECK-LABEL: func.func @primitives_kept(
// CHECK-NEXT: trn.gelu %{{.+}} approximate = tanh
// CHECK-NEXT: trn.gelu_grad
// CHECK-NEXT: trn.silu
// CHECK-NEXT: trn.sigmoid
// CHECK-NEXT: trn.constant dense<1.000000e+00>
// CHECK-NEXT: trn.mul
// CHECK-NEXT: return
func.func @primitives_kept(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = trn.gelu %x approximate = tanh : tensor<4xf32>
  %1 = trn.gelu_grad %x, %x approximate = tanh : tensor<4xf32>
  %2 = trn.silu %x : tensor<4xf32>
  %3 = trn.sigmoid %x : tensor<4xf32>
  %one = trn.constant dense<1.0> : tensor<4xf32>
  %4 = trn.mul %x, %one : tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

func.func @attention_head_size_256(%q: tensor<2x4x256xbf16>, %do: tensor<2x4x256xbf16>) -> (tensor<2x4x256xbf16>, tensor<2x4xf32>, tensor<2x4x256xbf16>, tensor<2x4x256xbf16>, tensor<2x4x256xbf16>) {
  %o, %lse = trn.attention %q, %q, %q, scale = 0.0625 causal : (tensor<2x4x256xbf16>, tensor<2x4x256xbf16>, tensor<2x4x256xbf16>) -> (tensor<2x4x256xbf16>, tensor<2x4xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %q, %q, %o, %lse, %do, scale = 0.0625 causal : (tensor<2x4x256xbf16>, tensor<2x4x256xbf16>, tensor<2x4x256xbf16>, tensor<2x4x256xbf16>, tensor<2x4xf32>, tensor<2x4x256xbf16>) -> (tensor<2x4x256xbf16>, tensor<2x4x256xbf16>, tensor<2x4x256xbf16>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x4x256xbf16>, tensor<2x4xf32>, tensor<2x4x256xbf16>, tensor<2x4x256xbf16>, tensor<2x4x256xbf16>
}

func.func @attention_value_size_192(%q: tensor<4x16xf32>, %v: tensor<4x192xf32>, %do: tensor<4x192xf32>) -> (tensor<4x192xf32>, tensor<4xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x192xf32>) {
  %o, %lse = trn.attention %q, %q, %v, scale = 0.25 : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x192xf32>) -> (tensor<4x192xf32>, tensor<4xf32>)
  %dq, %dk, %dv = trn.attention_grad %q, %q, %v, %o, %lse, %do, scale = 0.25 : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x192xf32>, tensor<4x192xf32>, tensor<4xf32>, tensor<4x192xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x192xf32>)
  return %o, %lse, %dq, %dk, %dv : tensor<4x192xf32>, tensor<4xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x192xf32>
}

func.func @attention_resident_budget(%q: tensor<8x16xf32>, %k: tensor<24576x16xf32>, %qb: tensor<8x16xbf16>, %kb: tensor<24576x16xbf16>) -> (tensor<8x16xf32>, tensor<8xf32>, tensor<8x16xbf16>, tensor<8xf32>) {
  %o, %lse = trn.attention %q, %k, %k, scale = 0.25 : (tensor<8x16xf32>, tensor<24576x16xf32>, tensor<24576x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  %ob, %lseb = trn.attention %qb, %kb, %kb, scale = 0.25 : (tensor<8x16xbf16>, tensor<24576x16xbf16>, tensor<24576x16xbf16>) -> (tensor<8x16xbf16>, tensor<8xf32>)
  return %o, %lse, %ob, %lseb : tensor<8x16xf32>, tensor<8xf32>, tensor<8x16xbf16>, tensor<8xf32>
}

func.func @attention_grad_resident_budget(%q: tensor<8192x128xbf16>, %l: tensor<8192xf32>, %r: tensor<9216x128xbf16>, %m: tensor<9216xf32>) -> (tensor<8192x128xbf16>, tensor<9216x128xbf16>) {
  %dq, %dk, %dv = trn.attention_grad %q, %q, %q, %q, %l, %q, scale = 0.125 causal : (tensor<8192x128xbf16>, tensor<8192x128xbf16>, tensor<8192x128xbf16>, tensor<8192x128xbf16>, tensor<8192xf32>, tensor<8192x128xbf16>) -> (tensor<8192x128xbf16>, tensor<8192x128xbf16>, tensor<8192x128xbf16>)
  %rq, %rk, %rv = trn.attention_grad %r, %r, %r, %r, %m, %r, scale = 0.125 causal : (tensor<9216x128xbf16>, tensor<9216x128xbf16>, tensor<9216x128xbf16>, tensor<9216x128xbf16>, tensor<9216xf32>, tensor<9216x128xbf16>) -> (tensor<9216x128xbf16>, tensor<9216x128xbf16>, tensor<9216x128xbf16>)
  return %dq, %rq : tensor<8192x128xbf16>, tensor<9216x128xbf16>
}
