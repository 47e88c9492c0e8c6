//===- Pipeline.cpp - the partitioning passes in order --------------------===//
//
// One place that says which passes partition a step graph, for trn-cc's
// pipeline and any tool that wants the same program.
//
//===----------------------------------------------------------------------===//

#include "trn/Partition/Passes.h"

#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::trn::partition {

void addPartitionPasses(OpPassManager &pm, const PartitionOptions &options) {
  std::string meshSpec;
  bool partitioned = false;
  for (const auto &[axis, degree] : options.mesh) {
    if (!meshSpec.empty())
      meshSpec += ",";
    meshSpec += axis + "=" + std::to_string(degree);
    partitioned |= degree > 1;
  }
  if (!partitioned)
    return;
  // Batched matmuls keep [B, H] apart, so dp and tp can split them both;
  // the trace's repeated views of one value become one (one gather for q,
  // k and v under sequence parallelism).
  // Slices of a fused projection are found as slices (dist-seed), not
  // hidden behind the views a trace puts between.
  pm.addNestedPass<func::FuncOp>(createTrnSliceBeforeViews());
  pm.addNestedPass<func::FuncOp>(createTrnSplitBatchDims());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // Attention written out becomes trn.attention before it is split (its
  // rule splits heads; the [S, S] scores are never made).
  pm.addNestedPass<func::FuncOp>(createTrnFormAttention());
  DistSeedOptions seed;
  seed.meshSpec = meshSpec;
  seed.sequenceParallel = options.sequenceParallel;
  seed.dpReplicas = options.dpReplicas && !options.zero1;
  pm.addPass(createDistSeed(seed));
  DistPropagateOptions propagate;
  propagate.zero1 = options.zero1;
  pm.addPass(createDistPropagate(propagate));
  DistSpmdOptions spmd;
  spmd.dpReplicas = options.dpReplicas && !options.zero1;
  pm.addPass(createDistSpmd(spmd));
}

} // namespace mlir::trn::partition
