// Softmax cross-entropy with i32 (and i64) labels and its gradient, reductions none,
// sum and mean, in bf16: 200 rows (two partition tiles), 600 classes (the row
// reductions span two 512-column tiles); every 7th label is ignore_index
// (-100), so `mean` divides by the 171 rows that count. The scalars go
// through tensor<1xbf16> (rank-0 inputs and outputs: see scalar-io.mlir).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 17 --int-max 600 --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz --every labels:7:-100 --scale logits:4
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 2e-2 | FileCheck %s
// RUN: sed 's/xi32>/xi64>/g' %s > %t/v0.mlir
// i64 labels (as frameworks write them) are computed in i32 on the device.
// RUN: %trn_python -c "import numpy as np, sys; d = dict(np.load(sys.argv[1])); d['labels'] = d['labels'].astype(np.int64); np.savez(sys.argv[2], **d)" %t/in.npz %t/in64.npz
// RUN: trn-eval %t/v0.mlir --inputs %t/in64.npz --outputs %t/ref64.npz > /dev/null
// RUN: trn-cc compile %t/v0.mlir -o %t/v0.trnart --no-cache -q
// RUN: trn-run %t/v0.trnart --inputs %t/in64.npz --outputs %t/out64.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref64.npz %t/out64.npz 2e-2 | FileCheck %s
// CHECK: outputs match

func.func @cross_entropy_bf16(%logits: tensor<200x600xbf16> {trn.name = "logits"}, %labels: tensor<200xi32> {trn.name = "labels"},
                   %grad_rows: tensor<200xbf16> {trn.name = "grad_rows"}, %grad1: tensor<1xbf16> {trn.name = "grad"})
    -> (tensor<200xbf16> {trn.name = "loss_none"}, tensor<1xbf16> {trn.name = "loss_sum"}, tensor<1xbf16> {trn.name = "loss_mean"},
        tensor<200x600xbf16> {trn.name = "dlogits_none"}, tensor<200x600xbf16> {trn.name = "dlogits_sum"},
        tensor<200x600xbf16> {trn.name = "dlogits_mean"}) {
  %grad = trn.reshape %grad1 : (tensor<1xbf16>) -> tensor<bf16>
  %none = trn.cross_entropy none %logits, %labels : (tensor<200x600xbf16>, tensor<200xi32>) -> tensor<200xbf16>
  %sum = trn.cross_entropy sum %logits, %labels : (tensor<200x600xbf16>, tensor<200xi32>) -> tensor<bf16>
  %mean = trn.cross_entropy mean %logits, %labels : (tensor<200x600xbf16>, tensor<200xi32>) -> tensor<bf16>
  %dnone = trn.cross_entropy_grad none %logits, %labels, %grad_rows : (tensor<200x600xbf16>, tensor<200xi32>, tensor<200xbf16>) -> tensor<200x600xbf16>
  %dsum = trn.cross_entropy_grad sum %logits, %labels, %grad : (tensor<200x600xbf16>, tensor<200xi32>, tensor<bf16>) -> tensor<200x600xbf16>
  %dmean = trn.cross_entropy_grad mean %logits, %labels, %grad : (tensor<200x600xbf16>, tensor<200xi32>, tensor<bf16>) -> tensor<200x600xbf16>
  %sum1 = trn.reshape %sum : (tensor<bf16>) -> tensor<1xbf16>
  %mean1 = trn.reshape %mean : (tensor<bf16>) -> tensor<1xbf16>
  return %none, %sum1, %mean1, %dnone, %dsum, %dmean : tensor<200xbf16>, tensor<1xbf16>, tensor<1xbf16>, tensor<200x600xbf16>, tensor<200x600xbf16>, tensor<200x600xbf16>
}
