// trn.pipeline_stage is the identity wherever dist-pipeline-stages does not
// consume it: on the reference evaluator, in the lowering, and in a step
// trn-cc compiles without pipeline stages (which drops the marker).
// RUN: trn-eval %s --zeros | FileCheck %s
// CHECK: y : tensor<3xf32> = [-1, 1, 3]
// RUN: trn-opt %s -convert-trn-to-nc | FileCheck %s --check-prefix=LOWERED
// LOWERED-NOT: trn.pipeline_stage
// LOWERED: nc.hbm_constant
// RUN: trn-cc compile %s -o %t.trnart --no-cache -q
// RUN: trn-run %t.trnart --outputs %t.npz > /dev/null
// RUN: %trn_python -c "import numpy, sys; print(numpy.load(sys.argv[1])['y'].tolist())" %t.npz | FileCheck %s --check-prefix=SIM
// SIM: [-1.0, 1.0, 3.0]
func.func @marked() -> (tensor<3xf32> {trn.name = "y"}) {
  %x = trn.constant dense<[-2.0, 0.0, 2.0]> : tensor<3xf32>
  %c = trn.pipeline_stage %x : tensor<3xf32>
  %one = trn.constant dense<1.0> : tensor<3xf32>
  %y = trn.add %c, %one : tensor<3xf32>
  return %y : tensor<3xf32>
}
