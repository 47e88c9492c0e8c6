//===- Pipeline.h - trn graph to NeuronCore program -------------*- C++ -*-===//
//
// The compiler pipeline behind trn-cc: a verified `trn` step graph is
// partitioned for its mesh, lowered to an `nc` kernel (convert-trn-to-nc),
// its tiles are given addresses (nc-allocate) and its streams ordered
// (nc-insert-sync), then exported as a trnrt::Program that the artifact
// writer serialises.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DRIVER_PIPELINE_H
#define TRN_DRIVER_PIPELINE_H

#include "trn/Partition/Fit.h"
#include "trnrt/Isa.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LogicalResult.h"
#include "mlir/Support/Timing.h"

#include <array>
#include <cstdint>
#include <string>

namespace mlir::trn {

/// The size of what a compile produced (for --timing and benchmarks): set
/// once the kernel is exported, before the program is validated, so that a
/// program the checks reject is measured too.
struct CompileStats {
  uint64_t kernelOps = 0;                       ///< ops in the nc kernel
  std::array<uint64_t, 5> engineInstructions{}; ///< Tensor..Sync
  uint64_t dmaInstructions = 0;
  uint64_t hbmBytes = 0;
  bool exported = false;
};

/// Codegen options (the normalised flags of the cache key decide them).
struct CompileOptions {
  std::string target = "trn1";       ///< "trn1" or "trn2"
  int optLevel = 2;                  ///< 0..3
  std::string autoCast = "none";     ///< none | matmul | all
  std::string autoCastType = "bf16"; ///< bf16 | fp8_e4m3
  /// Partitioning (--mesh): a graph that is not already a dist.spmd program
  /// is partitioned over {dp, tp} first when either degree is above 1. The
  /// DP degree is not in the cache key (one artifact serves every DP degree:
  /// the runtime rebinds dp when the program uses it only in all_reduce).
  int64_t tp = 1;
  int64_t dp = 1;
  bool zero1 = false; ///< --zero1 (then the program is per dp)
  /// --dp-whole-batch: the graph is the whole batch, split over dp (then
  /// the program is per dp); else one replica's step.
  bool dpWholeBatch = false;
  /// Pipeline parallelism (--pp > 1): the step is cut into `pp` stages of
  /// `microbatches` microbatches ordered by `pipelineSchedule`, and only
  /// stage `stage`'s fragments are compiled (one artifact per stage).
  /// Microbatches at pp = 1 are gradient accumulation inside the step: a
  /// pipeline of one stage.
  int64_t pp = 1;
  int64_t microbatches = 1;
  std::string pipelineSchedule = "1f1b";
  int64_t stage = 0;
  /// --recompute-activations: each stage's backward recomputes its forward
  /// (activation checkpointing) instead of stashing its activations.
  bool recomputeActivations = false;
  bool sequenceParallel = false; ///< --sequence-parallel
  /// A run of repeated layers compiles once, called per layer
  /// (trn-outline-layers, nc.call); --no-layer-reuse compiles each copy.
  bool layerReuse = true;
  bool printIRAfterAll = false; ///< --mlir-print-ir-after-all
  /// --timing: when set, the passes and the export phases are timed in a
  /// scope nested here. Output-neutral, like printIRAfterAll.
  TimingScope *timing = nullptr;
  /// When set, receives the kernel's size.
  CompileStats *stats = nullptr;

  /// The step is cut into forward, backward and update fragments: pipeline
  /// stages, or microbatches accumulated by one stage.
  bool pipelined() const { return pp > 1 || microbatches > 1; }
};

// The passes, in the order compileToPrograms runs them (each part in a pass
// manager of its own), built here only:

/// With a mesh: the partitioner's passes, then with --pp the stage cut and
/// split (dist-pipeline-stages, dist-pipeline-split).
void buildPartitionPipeline(OpPassManager &pm, const CompileOptions &options);

/// The graph passes, before convert-trn-to-nc, ending with
/// trn-mark-optimizer and trn-outline-layers.
void buildTrnGraphPipeline(OpPassManager &pm, const CompileOptions &options);

/// convert-trn-to-nc.
void buildLoweringPipeline(OpPassManager &pm);

/// nc-allocate and (with `insertSync`) nc-insert-sync on every kernel of the
/// module. compileToProgram leaves the semaphores to the exporter (the same
/// analysis, without storing them as attributes) unless it prints the IR.
void buildNCKernelPipeline(OpPassManager &pm, bool insertSync = true);

/// All of them in one pass manager, after a pass that does what
/// compileToPrograms does around them (drops pipeline cuts without --pp,
/// partitions a graph that is not yet dist.spmd, keeps stage
/// options.stage's fragments, sets nc.target), with nc-insert-sync: the IR
/// trn-cc's --mlir-print-ir-after-all shows last.
void buildCompilePipeline(OpPassManager &pm, const CompileOptions &options);

/// Registers buildCompilePipeline as the pass pipeline "trn-compile", its
/// option `flags` the codegen flags as trn-cc takes them:
///   trn-opt --pass-pipeline='builtin.module(trn-compile{flags="--tp 2"})'
/// replays `trn-cc compile GRAPH --tp 2` up to the export.
void registerCompilePipeline();

/// Runs the pipeline on `module` in place and exports the kernel. Errors
/// (an op the backend cannot lower yet, a kernel that does not fit) are
/// emitted as diagnostics at the offending op.
FailureOr<trnrt::Program> compileToProgram(ModuleOp module,
                                           const CompileOptions &options);

/// compileToProgram for any step: one program, or when options.pipelined()
/// the forward, backward and update fragments of stage options.stage.
FailureOr<std::vector<trnrt::Program>>
compileToPrograms(ModuleOp module, const CompileOptions &options);

/// dist-pipeline-split's options for `options` (when pipelined).
partition::DistPipelineSplitOptions
pipelineSplitOptionsFor(const CompileOptions &options);

/// The partitioner's options for the mesh of `options`, as trn-cc compiles
/// it: data parallelism as one replica's step at a nominal dp = 2 (the shapes
/// do not depend on the degree), unless ZeRO-1 partitions at the degree; a
/// pipeline is one replica's step even at dp = 1 (its microbatches end at the
/// dp collectives).
partition::PartitionOptions partitionOptionsFor(const CompileOptions &options);

/// "dp=2,pp=4,tp=8" (pp only when above 1).
std::string meshTextOf(const CompileOptions &options);

/// One rank's HBM before compiling: the graph partitioned (no lowering) for
/// the mesh of `options`, by pipeline stage (one entry without --pp).
struct MeshFootprint {
  std::string mesh; ///< "dp=2,pp=4,tp=8"
  std::vector<partition::RankFootprint> stages;
  bool pipelined = false;
  /// The index of the stage whose rank needs the most.
  size_t worstStage() const;
};

/// std::nullopt when `options` give no mesh or the graph is already one
/// rank's program (dist.spmd); failure when a partitioning pass fails (it
/// has emitted the diagnostic naming the problem). The module is not
/// changed.
FailureOr<std::optional<MeshFootprint>>
measureMeshFootprint(ModuleOp module, const CompileOptions &options);

} // namespace mlir::trn

#endif // TRN_DRIVER_PIPELINE_H
