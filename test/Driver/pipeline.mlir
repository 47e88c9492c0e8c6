// trn-opt's trn-compile pipeline is the pass pipeline trn-cc runs, built in
// one place (lib/Driver/Pipeline.cpp): on a graph it prints the IR that
// trn-cc's --mlir-print-ir-after-all shows last (after nc-insert-sync, before
// the export), by default, with codegen flags, and for one stage of a
// partitioned pipeline (the pipeline's first pass partitions and keeps the
// stage).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-opt %s --pass-pipeline='builtin.module(trn-compile)' > %t/opt.mlir
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q --mlir-print-ir-after-all 2> %t/ir.txt
// RUN: awk '/IR Dump After NCInsertSync/ { n = NR } { line[NR] = $0 } END { for (i = n + 1; i <= NR; i++) if (line[i] != "") print line[i] }' %t/ir.txt > %t/cc.mlir
// RUN: grep -v '^$' %t/opt.mlir | diff - %t/cc.mlir
// RUN: FileCheck %s < %t/opt.mlir

// RUN: trn-opt %s --pass-pipeline='builtin.module(trn-compile{flags="--target trn2 --auto-cast matmul -O1"})' > %t/opt-bf16.mlir
// RUN: trn-cc compile %s -o %t/b.trnart --no-cache -q --mlir-print-ir-after-all --target trn2 --auto-cast matmul -O1 2> %t/ir-bf16.txt
// RUN: awk '/IR Dump After NCInsertSync/ { n = NR } { line[NR] = $0 } END { for (i = n + 1; i <= NR; i++) if (line[i] != "") print line[i] }' %t/ir-bf16.txt > %t/cc-bf16.mlir
// RUN: grep -v '^$' %t/opt-bf16.mlir | diff - %t/cc-bf16.mlir
// RUN: FileCheck %s --check-prefix=BF16 < %t/opt-bf16.mlir

// RUN: trn-opt %S/../tools/Inputs/two-layer-step.mlir --pass-pipeline='builtin.module(trn-compile{flags="--mesh dp=2,pp=2 --microbatches 2 --stage 1"})' > %t/opt-stage.mlir
// RUN: trn-cc compile %S/../tools/Inputs/two-layer-step.mlir -o %t/s.trnart --no-cache -q --mlir-print-ir-after-all --mesh dp=2,pp=2 --microbatches 2 --stage 1 2> %t/ir-stage.txt
// RUN: awk '/IR Dump After NCInsertSync/ { n = NR } { line[NR] = $0 } END { for (i = n + 1; i <= NR; i++) if (line[i] != "") print line[i] }' %t/ir-stage.txt > %t/cc-stage.mlir
// RUN: grep -v '^$' %t/opt-stage.mlir | diff - %t/cc-stage.mlir
// RUN: FileCheck %s --check-prefix=STAGE < %t/opt-stage.mlir

// The flags are trn-cc's, checked by the same table.
// RUN: not trn-opt %s --pass-pipeline='builtin.module(trn-compile{flags="--tagret trn2"})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: trn-compile: unknown flag '--tagret'; did you mean '--target'?

// CHECK: module attributes {nc.target = "trn1"}
// CHECK: func.func @layer(%arg0: !nc.hbm<256x128xf32> {nc.kind = "input", nc.name = "x"}
// CHECK-SAME: %arg3: !nc.hbm<256x64xf32> {nc.kind = "output", nc.name = "y"})
// CHECK: nc.kind "matmul"
// CHECK: nc.matmul {{.*}} {nc.signal = {{[0-9]+}} : i64, nc.waits = {{.*}}} : <psum, 128x64xf32>, <sbuf, 128x128xf32>, <sbuf, 128x64xf32>
// CHECK: nc.activation exp
// CHECK-NOT: {{= trn\.|^ *trn\.}}

// BF16: module attributes {nc.target = "trn2"}
// BF16: nc.matmul {{.*}} : <psum, 128x64xf32>, <sbuf, 128x128xbf16>, <sbuf, 128x64xbf16>

// Stage 1's forward, backward and update fragments, and nothing of stage 0.
// STAGE-NOT: @step.s0
// STAGE: func.func @step.s1.forward
// STAGE: func.func @step.s1.backward
// STAGE: func.func @step.s1.update
// STAGE-NOT: @step.s0

func.func @layer(%x: tensor<256x128xf32> {trn.name = "x"}, %w: tensor<128x64xf32> {trn.name = "w"}, %b: tensor<64xf32> {trn.name = "b"}) -> (tensor<256x64xf32> {trn.name = "y"}) {
  %0 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<256x128xf32>, tensor<128x64xf32>) -> tensor<256x64xf32>
  %1 = trn.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<256x64xf32>
  %2 = trn.add %0, %1 : tensor<256x64xf32>
  %3 = trn.exp %2 : tensor<256x64xf32>
  return %3 : tensor<256x64xf32>
}
