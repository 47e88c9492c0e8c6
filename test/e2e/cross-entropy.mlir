// Softmax cross-entropy with i32 labels and its gradient, reductions none,
// sum and mean, in f32: 200 rows (two partition tiles), 600 classes (the row
// reductions span two 512-column tiles); every 7th label is ignore_index
// (-100), so `mean` divides by the 171 rows that count. The scalars go
// through tensor<1xf32> (rank-0 inputs and outputs: see scalar-io.mlir).
//
// NOT LOWERED YET: the decomposition picks each row's label logit with
// trn.gather and adds the one-hot term of the gradient with trn.scatter_add;
// convert-trn-to-nc lowers neither, so trn-cc stops with an error naming
// trn.gather at the first cross_entropy. With i64 labels (the PyTorch
// default) it stops earlier, on the i64 compare of the ignore_index test
// (the NeuronCore-v2 engines have no 64-bit integers): e2e graphs use i32
// labels. The reference evaluator runs the graph, and
// cross-entropy-onehot.mlir checks the simulator against this
// reference with the same step spelled in primitives that lower.
// Once trn.gather and trn.scatter_add lower, replace the trn-cc checks with:
// trn-cc compile, trn-run --poison on %t/in.npz, compare.py with tolerance
// 1e-4 (6 outputs).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 17 --int-max 600 --save-inputs %t/in.npz > /dev/null
// RUN: %python %S/Inputs/edit_inputs.py %t/in.npz --every labels:7:-100 --scale logits:4
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: not trn-cc compile %s -o %t/a.trnart --no-cache 2>&1 | FileCheck %s
// RUN: not test -e %t/a.trnart
// RUN: sed 's/xi32>/xi64>/g' %s | not trn-cc compile - -o %t/a64.trnart --no-cache 2>&1 | FileCheck %s --check-prefix=I64
// CHECK: trn-cc: error: {{.*}}cross-entropy.mlir:[[@LINE+9]]:{{[0-9]+}}: 'trn.gather' is not lowered to NeuronCore kernels yet
// I64: trn-cc: error: <stdin>:[[@LINE+8]]:{{[0-9]+}}: 'trn.compare' on i64 tensors is not lowered to NeuronCore kernels yet (the NeuronCore-v2 engines have no 64-bit integers)

func.func @cross_entropy(%logits: tensor<200x600xf32> {trn.name = "logits"}, %labels: tensor<200xi32> {trn.name = "labels"},
                   %grad_rows: tensor<200xf32> {trn.name = "grad_rows"}, %grad1: tensor<1xf32> {trn.name = "grad"})
    -> (tensor<200xf32> {trn.name = "loss_none"}, tensor<1xf32> {trn.name = "loss_sum"}, tensor<1xf32> {trn.name = "loss_mean"},
        tensor<200x600xf32> {trn.name = "dlogits_none"}, tensor<200x600xf32> {trn.name = "dlogits_sum"},
        tensor<200x600xf32> {trn.name = "dlogits_mean"}) {
  %grad = trn.reshape %grad1 : (tensor<1xf32>) -> tensor<f32>
  %none = trn.cross_entropy none %logits, %labels : (tensor<200x600xf32>, tensor<200xi32>) -> tensor<200xf32>
  %sum = trn.cross_entropy sum %logits, %labels : (tensor<200x600xf32>, tensor<200xi32>) -> tensor<f32>
  %mean = trn.cross_entropy mean %logits, %labels : (tensor<200x600xf32>, tensor<200xi32>) -> tensor<f32>
  %dnone = trn.cross_entropy_grad none %logits, %labels, %grad_rows : (tensor<200x600xf32>, tensor<200xi32>, tensor<200xf32>) -> tensor<200x600xf32>
  %dsum = trn.cross_entropy_grad sum %logits, %labels, %grad : (tensor<200x600xf32>, tensor<200xi32>, tensor<f32>) -> tensor<200x600xf32>
  %dmean = trn.cross_entropy_grad mean %logits, %labels, %grad : (tensor<200x600xf32>, tensor<200xi32>, tensor<f32>) -> tensor<200x600xf32>
  %sum1 = trn.reshape %sum : (tensor<f32>) -> tensor<1xf32>
  %mean1 = trn.reshape %mean : (tensor<f32>) -> tensor<1xf32>
  return %none, %sum1, %mean1, %dnone, %dsum, %dmean : tensor<200xf32>, tensor<1xf32>, tensor<1xf32>, tensor<200x600xf32>, tensor<200x600xf32>, tensor<200x600xf32>
}
