// RUN: trn-opt %s -dist-pipeline-stages=pp=2 -split-input-file -verify-diagnostics
// RUN: not trn-opt %s -dist-pipeline-stages=pp=0 -split-input-file 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not trn-opt %S/pipeline-stages.mlir -dist-pipeline-stages=pp=2 -dist-pipeline-split=schedule=zigzag 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not trn-opt %S/pipeline-stages.mlir -dist-pipeline-stages=pp=2 -dist-pipeline-split=microbatches=0 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: not trn-opt %S/pipeline-stages.mlir -dist-pipeline-split 2>&1 | FileCheck %s --check-prefix=NOPP
// RUN: sed -e 's/<dp = 2>/<tp = 2>/' -e 's/"dp"/"tp"/g' %S/pipeline-stages.mlir | not trn-opt -dist-pipeline-stages=pp=2 2>&1 | FileCheck %s --check-prefix=NODP

// ZERO: error: pp=0 must be at least 1
// SCHEDULE: error: unknown pipeline schedule 'zigzag' (expected gpipe or 1f1b)
// MICRO: error: microbatches=0 must be at least 1
// NOPP: error: dist-pipeline-split needs a mesh with a pp axis (run dist-pipeline-stages first)
// NODP: error: pipeline stages need the step partitioned over a mesh with a dp axis (dist-seed, dist-propagate and dist-spmd first): the dp collectives mark where a microbatch's work ends

dist.mesh @mesh <dp = 2>
// expected-error@+1 {{cannot cut the step into 2 pipeline stages: no parameter name has a layer index (like 'layers.3.weight')}}
func.func @noLayers(%w: tensor<4xf32> {trn.name = "weight", trn.role = "parameter"},
                    %x: tensor<2x4xf32> {trn.name = "x", trn.role = "data"})
    -> (tensor<4xf32> {trn.name = "loss", trn.role = "loss"}) {
  %y = trn.mul %w, %w : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dist.mesh @mesh <dp = 2>
// expected-error@+1 {{2 pipeline stages need at least 2 layers; the model has 1}}
func.func @oneLayer(%w: tensor<4xf32> {trn.name = "layers.0.weight", trn.role = "parameter"},
                    %x: tensor<2x4xf32> {trn.name = "x", trn.role = "data"})
    -> (tensor<4xf32> {trn.name = "loss", trn.role = "loss"}) {
  %y = trn.mul %w, %w : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dist.mesh @mesh <dp = 2>
// expected-error@+1 {{cannot tell the forward pass from the backward to cut the step into pipeline stages or microbatches: no result is the loss (trn.role = "loss")}}
func.func @noLoss(%w: tensor<4xf32> {trn.name = "layers.0.weight", trn.role = "parameter"},
                  %x: tensor<2x4xf32> {trn.name = "x", trn.role = "data"})
    -> tensor<4xf32> {
  %y = trn.mul %w, %w : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dist.mesh @mesh <dp = 2, pp = 4>
// expected-error@above {{the mesh's pp axis has size 4, not 2}}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}
