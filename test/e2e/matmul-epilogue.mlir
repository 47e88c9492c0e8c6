// Matmuls with their epilogues (trn-fuse-matmul-epilogue) compute what the
// reference evaluator computes: a bias and tanh GELU read from PSUM and
// written as bf16; a result that is also returned (evicted, stored, and
// read by the residual add in SBUF); a bf16 matmul result (rounded on
// eviction) through SiLU and a SwiGLU gate; ReLU; a batched matmul with a
// per-batch bias and a per-row scale. 200 rows (a partial M block), 640
// columns (two PSUM banks), K = 160 (two K tiles).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-opt %s --trn-fuse-elementwise --trn-fuse-matmul-epilogue | FileCheck %s --check-prefix=FUSED
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 7 --save-inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 2e-2 | FileCheck %s
// CHECK: 6 outputs match
// The profile names the trn op each instruction comes from.
// RUN: trn-run %t/a.trnart --zeros --timing-only --profile %t/trace.json > /dev/null
// RUN: FileCheck %s --check-prefix=TRACE < %t/trace.json
// TRACE: "args":{"index":{{[0-9]+}},"op":"epilogues: trn.fusion #{{[0-9]+}}"}
// Every matmul is fused with its epilogue: each is in a group's body (none
// is left in the function itself).
// FUSED-NOT: {{^    %[0-9:]+ = trn.dot_general}}
// FUSED: {{^      %[0-9]+ = trn.dot_general}}
// FUSED-NOT: {{^    %[0-9:]+ = trn.dot_general}}
// FUSED: {{^      %[0-9]+ = trn.dot_general}}
// FUSED-NOT: {{^    %[0-9:]+ = trn.dot_general}}
// FUSED: {{^      %[0-9]+ = trn.dot_general}}
// FUSED-NOT: {{^    %[0-9:]+ = trn.dot_general}}
// FUSED: {{^      %[0-9]+ = trn.dot_general}}
// FUSED-NOT: {{^    %[0-9:]+ = trn.dot_general}}
// FUSED: {{^      %[0-9]+ = trn.dot_general}}
// FUSED-NOT: trn.dot_general

func.func @epilogues(%x: tensor<200x160xbf16> {trn.name = "x"}, %w: tensor<640x160xbf16> {trn.name = "w"},
                     %b: tensor<640xbf16> {trn.name = "b"}, %r: tensor<200x640xf32> {trn.name = "r"},
                     %u: tensor<160x640xbf16> {trn.name = "u"}, %g: tensor<200x640xf32> {trn.name = "g"},
                     %bx: tensor<3x200x64xf32> {trn.name = "bx"}, %bw: tensor<3x64x96xf32> {trn.name = "bw"},
                     %bb: tensor<3x96xf32> {trn.name = "bb"}, %bs: tensor<3x200xf32> {trn.name = "bs"})
    -> (tensor<200x640xbf16> {trn.name = "h"}, tensor<200x640xf32> {trn.name = "pre"},
        tensor<200x640xf32> {trn.name = "res"}, tensor<200x640xf32> {trn.name = "swiglu"},
        tensor<200x640xf32> {trn.name = "relu"}, tensor<3x200x96xf32> {trn.name = "batched"}) {
  // Bias and tanh GELU, cast to bf16.
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<200x160xbf16>, tensor<640x160xbf16>) -> tensor<200x640xf32>
  %bf = trn.convert %b : tensor<640xbf16> -> tensor<640xf32>
  %1 = trn.broadcast_in_dim %bf, dims = [1] : (tensor<640xf32>) -> tensor<200x640xf32>
  %2 = trn.add %0, %1 : tensor<200x640xf32>
  %3 = trn.gelu %2 approximate = tanh : tensor<200x640xf32>
  %h = trn.convert %3 : tensor<200x640xf32> -> tensor<200x640xbf16>
  // A residual add whose matmul result is returned too.
  %4 = trn.dot_general %x, %u, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<200x160xbf16>, tensor<160x640xbf16>) -> tensor<200x640xf32>
  %res = trn.add %4, %r : tensor<200x640xf32>
  // A bf16 result: SiLU of it times a gate (SwiGLU).
  %5 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<200x160xbf16>, tensor<640x160xbf16>) -> tensor<200x640xbf16>
  %6 = trn.convert %5 : tensor<200x640xbf16> -> tensor<200x640xf32>
  %7 = trn.sigmoid %6 : tensor<200x640xf32>
  %8 = trn.mul %6, %7 : tensor<200x640xf32>
  %sw = trn.mul %8, %g : tensor<200x640xf32>
  // ReLU.
  %9 = trn.dot_general %x, %u, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<200x160xbf16>, tensor<160x640xbf16>) -> tensor<200x640xf32>
  %zero = trn.constant dense<0.0> : tensor<200x640xf32>
  %relu = trn.max %9, %zero : tensor<200x640xf32>
  // Batched, with a per-batch bias and a per-row scale.
  %10 = trn.dot_general %bx, %bw, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x200x64xf32>, tensor<3x64x96xf32>) -> tensor<3x200x96xf32>
  %11 = trn.broadcast_in_dim %bb, dims = [0, 2] : (tensor<3x96xf32>) -> tensor<3x200x96xf32>
  %12 = trn.broadcast_in_dim %bs, dims = [0, 1] : (tensor<3x200xf32>) -> tensor<3x200x96xf32>
  %13 = trn.add %10, %11 : tensor<3x200x96xf32>
  %batched = trn.mul %13, %12 : tensor<3x200x96xf32>
  return %h, %4, %res, %sw, %relu, %batched : tensor<200x640xbf16>, tensor<200x640xf32>, tensor<200x640xf32>, tensor<200x640xf32>, tensor<200x640xf32>, tensor<3x200x96xf32>
}
