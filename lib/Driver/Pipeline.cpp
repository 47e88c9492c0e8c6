//===- Pipeline.cpp - trn graph to NeuronCore program ---------------------===//
//
// The pass pipeline behind trn-cc and the checks around it: the exported
// program must satisfy every hardware rule and its semaphores must let every
// stream finish. A program that does not is a compiler bug, reported as such
// before anything could run it. The passes are built here only, and
// registered as trn-opt's trn-compile pipeline, so that trn-opt replays what
// trn-cc runs.
//
//===----------------------------------------------------------------------===//

#include "trn/Driver/Pipeline.h"

#include "trn/Conversion/Passes.h"
#include "trn/Dialect/NC/IR/NCDialect.h"
#include "trn/Dialect/NC/IR/NCOps.h"
#include "trn/Dialect/NC/Transforms/Passes.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"
#include "trn/Driver/CompileFlags.h"
#include "trn/Driver/CompileGraph.h"
#include "trn/Partition/Passes.h"
#include "trn/Target/NCToProgram.h"

#include "trnrt/IsaValidate.h"
#include "trnrt/Subroutines.h"
#include "trnrt/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Threading.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>

using namespace mlir;

namespace {

/// A kernel takes HBM tensors (the exporter's contract) and holds nc
/// instructions; the trn graph it came from takes tensors.
bool isKernel(func::FuncOp function) {
  if (function.isExternal())
    return false;
  if (llvm::any_of(function.getArgumentTypes(),
                   [](Type type) { return isa<nc::HbmType>(type); }))
    return true;
  WalkResult walk = function.walk([](Operation *op) {
    return isa_and_nonnull<nc::NCDialect>(op->getDialect())
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return walk.wasInterrupted();
}

/// The highest byte any allocated tile of `memory` reaches in a partition.
/// nc-allocate places tiles first-fit from offset 0, so this is the
/// allocator's high-water mark.
uint64_t peakBytesPerPartition(func::FuncOp kernel, nc::MemorySpace memory) {
  uint64_t peak = 0;
  kernel.walk([&](nc::AllocOp alloc) {
    auto type = cast<nc::TileType>(alloc.getType());
    if (type.getMemory() != memory || !alloc.getByteOffset())
      return;
    uint64_t end = static_cast<uint64_t>(*alloc.getByteOffset()) +
                   static_cast<uint64_t>(type.getFreeBytes());
    peak = std::max(peak, end);
  });
  return peak;
}

/// Tensor Engine FLOPs: 2*K*M*N per matmul (stationary [K, M], moving
/// [K, N]), the figure MFU is measured against. Transposes are data
/// movement and are not counted.
uint64_t matmulFlops(const trnrt::Program &program) {
  uint64_t flops = 0;
  for (const trnrt::Instruction &instruction :
       program.engineStreams[static_cast<size_t>(trnrt::Engine::Tensor)]) {
    if (instruction.opcode != trnrt::Opcode::Matmul ||
        instruction.srcs.size() < 2)
      continue;
    uint64_t k = instruction.srcs[0].numPartitions;
    uint64_t m = static_cast<uint64_t>(instruction.srcs[0].freeElements());
    uint64_t n = static_cast<uint64_t>(instruction.srcs[1].freeElements());
    flops += 2 * k * m * n;
  }
  return flops;
}

} // namespace

void mlir::trn::buildTrnGraphPipeline(OpPassManager &pm,
                                      const CompileOptions &options) {
  OpPassManager &graph = pm.nest<func::FuncOp>();
  // Attention a model writes out becomes trn.attention (flash kernels):
  // found on the batched matmuls trn-split-batch-dims restores. A
  // partitioned step had both before partitioning.
  // A fused projection's pieces are slices of it, whatever views the trace
  // put between (PyTorch 2's nn.MultiheadAttention selects q, k and v).
  graph.addPass(createTrnSliceBeforeViews());
  graph.addPass(createTrnSplitBatchDims());
  graph.addPass(createCSEPass());
  graph.addPass(createTrnFormAttention());
  // The lowering takes primitives only (see convert-trn-to-nc), and the
  // attention ops its flash-style kernels take.
  TrnDecomposeCompositesOptions decompose;
  decompose.keepFlashAttention = true;
  graph.addPass(createTrnDecomposeComposites(decompose));
  // The engines have no 64-bit integers: indices and labels go to i32.
  graph.addPass(createTrnNarrowI64());
  if (options.autoCast != "none") {
    TrnAutoCastOptions cast;
    cast.mode = options.autoCast;
    cast.castType = options.autoCastType;
    graph.addPass(createTrnAutoCast(cast));
  }
  // -O0 lowers the graph as written, which is what one wants when bisecting
  // a miscompile; every other level simplifies it first.
  if (options.optLevel > 0) {
    // A tp sum all-reduced, finished whole and then sliced to the rank's
    // part of the sequence is reduce-scattered and finished on the part.
    graph.addPass(createTrnSliceBeforeCompute());
    graph.addPass(createCanonicalizerPass());
    graph.addPass(createCSEPass());
    // A reduce-scattered matmul result goes out piece by piece, each while
    // the next is computed (trn-hoist-slices makes the pieces matmuls).
    graph.addPass(createTrnChunkReduceScatter());
    // A fused projection cut into pieces computes the pieces instead.
    graph.addPass(createTrnHoistSlices());
    // Attention and matmuls read transposed operands in place.
    graph.addPass(createTrnAssignLayouts());
    // Elementwise chains and row reductions become one kernel each.
    graph.addPass(createTrnFuseElementwise());
    // A group that reads a matmul's result runs as the matmul's epilogue.
    graph.addPass(createTrnFuseMatmulEpilogue());
    // Matmuls that are ready run while a collective transfers, timed at
    // the target's rates (a rank drives its share of its chip's links).
    const trnrt::Target *target = trnrt::lookupTarget(options.target);
    TrnOverlapCollectivesOptions overlap;
    if (target) {
      overlap.matmulFlopsPerNs = target->peakBf16Tflops() * 1000.0;
      overlap.collectiveBytesPerNs =
          target->linkBytesPerNsPerChip / target->coresPerChip;
    }
    graph.addPass(createTrnOverlapCollectives(overlap));
  }
  // A run of repeated layers compiles once: its blocks become calls of one
  // function (a subroutine of the program).
  graph.addPass(createTrnMarkOptimizer());
  if (options.layerReuse)
    pm.addPass(createTrnOutlineLayers());
}

void mlir::trn::buildLoweringPipeline(OpPassManager &pm) {
  pm.addPass(createConvertTrnToNC());
}

void mlir::trn::buildNCKernelPipeline(OpPassManager &pm, bool insertSync) {
  OpPassManager &kernel = pm.nest<func::FuncOp>();
  kernel.addPass(nc::createNCAllocate());
  if (insertSync)
    kernel.addPass(nc::createNCInsertSync());
}

void mlir::trn::buildPartitionPipeline(OpPassManager &pm,
                                       const CompileOptions &options) {
  trn::partition::addPartitionPasses(pm, partitionOptionsFor(options));
  if (options.pipelined()) {
    trn::partition::DistPipelineStagesOptions stages;
    stages.pp = options.pp;
    pm.addPass(trn::partition::createDistPipelineStages(stages));
    pm.addPass(trn::partition::createDistPipelineSplit(
        pipelineSplitOptionsFor(options)));
    pm.addPass(trn::partition::createDistCombineAllReduces());
  }
}

/// A graph that is already the program every rank runs (dist.spmd)
/// compiles as is; otherwise a mesh partitions it first.
static bool needsPartitioning(ModuleOp module,
                              const mlir::trn::CompileOptions &options) {
  if (options.tp <= 1 && options.dp <= 1 && !options.pipelined())
    return false;
  return llvm::none_of(module.getOps<func::FuncOp>(), [](func::FuncOp f) {
    return f->hasAttr(dist::DistDialect::getSpmdAttrName());
  });
}

/// One stage is compiled (one artifact per stage): the others' fragments go.
static void keepStage(ModuleOp module,
                      const mlir::trn::CompileOptions &options) {
  if (options.pp <= 1)
    return;
  for (func::FuncOp function :
       llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    auto stage = function->getAttrOfType<IntegerAttr>(
        dist::DistDialect::getStageAttrName());
    if (stage && stage.getInt() != options.stage)
      function.erase();
  }
}

/// Partitions `module` for --mesh dp=D,tp=T. The cache key records whether
/// the program is data-parallel (D > 1), not the degree, so the program must
/// not depend on D: with D > 1 the graph is one data-parallel replica's step
/// (dist-spmd dp-replicas: dp splits no shape, gradients are averaged over
/// dp, the degree is bound at load time), partitioned at a nominal dp = 2
/// whatever D is, so every degree gives the same artifact bytes. With D = 1
/// the program is partitioned for tp alone (no replica axis: it runs at
/// dp = 1 only). ZeRO-1 splits the optimizer states by the degree: then it
/// is partitioned at it (the key keeps the degree). A pipeline finds the end
/// of a microbatch's work at the dp collectives: it is partitioned as one
/// replica's step even at dp = 1.
static LogicalResult
partitionForMesh(ModuleOp module, const mlir::trn::CompileOptions &options) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  mlir::trn::buildPartitionPipeline(pm, options);
  std::optional<TimingScope> timing;
  if (options.timing) {
    timing.emplace(options.timing->nest("partition"));
    pm.enableTiming(*timing);
  }
  if (failed(pm.run(module)))
    return failure(); // a failing pass has emitted the diagnostic
  keepStage(module, options);
  return success();
}

/// Exports one kernel and checks it: it fits the core's HBM, keeps the
/// hardware's rules and cannot deadlock.
/// The exported subroutine kernels (nc.subroutine) by name, each moved
/// into the one program that calls it.
using SubroutinePrograms = llvm::StringMap<std::optional<trnrt::Program>>;

static FailureOr<trnrt::Program>
exportKernel(func::FuncOp kernel, const trnrt::Target &targetRef,
             const mlir::trn::CompileOptions &options, bool syncInExport,
             TimingScope &timing, mlir::trn::CompileStats *kernelStats,
             SubroutinePrograms *subroutines) {
  const trnrt::Target *target = &targetRef;
  TimingScope exportTiming = timing.nest("export program");
  std::vector<std::string> calleeNames;
  auto scratchBytesOf = [&](StringRef name) -> uint64_t {
    auto it = subroutines->find(name);
    return it != subroutines->end() && it->second
               ? trnrt::subroutineScratchBytes(*it->second)
               : 0;
  };
  FailureOr<trnrt::Program> program = nc::exportProgram(
      kernel, /*synchronize=*/syncInExport,
      subroutines ? &calleeNames : nullptr,
      subroutines ? function_ref<uint64_t(StringRef)>(scratchBytesOf)
                  : nullptr);
  if (failed(program))
    return failure();
  program->flops = matmulFlops(*program);
  program->sbufPeakBytesPerPartition =
      peakBytesPerPartition(kernel, nc::MemorySpace::sbuf);
  program->psumPeakBytesPerPartition =
      peakBytesPerPartition(kernel, nc::MemorySpace::psum);
  // The callees join their caller: flops per call, peaks, semaphores and
  // DMA queues as the expanded program has them.
  for (const std::string &name : calleeNames) {
    auto it = subroutines->find(name);
    if (it == subroutines->end() || !it->second)
      return kernel.emitError("internal compiler error: the subroutine '")
             << name << "' was not exported (or has two callers)";
    program->subroutines.push_back(std::move(*it->second));
    it->second.reset();
  }
  for (const trnrt::CallSite &call : program->calls)
    program->flops += program->subroutines[call.callee].flops;
  for (const trnrt::Program &callee : program->subroutines) {
    program->sbufPeakBytesPerPartition = std::max(
        program->sbufPeakBytesPerPartition, callee.sbufPeakBytesPerPartition);
    program->psumPeakBytesPerPartition = std::max(
        program->psumPeakBytesPerPartition, callee.psumPeakBytesPerPartition);
    program->numSemaphores =
        std::max(program->numSemaphores, callee.numSemaphores);
    if (program->dmaQueues.size() < callee.dmaQueues.size())
      program->dmaQueues.resize(callee.dmaQueues.size());
  }
  for (trnrt::CallSite &call : program->calls)
    call.positions.resize(5 + program->dmaQueues.size(), 0);
  exportTiming.stop();
  uint64_t hbmBytes = trnrt::expandedHbmBytes(*program);
  if (kernelStats) {
    mlir::trn::CompileStats &stats = *kernelStats;
    kernel.walk([&](Operation *) { ++stats.kernelOps; });
    std::vector<uint64_t> sizes = trnrt::expandedStreamSizes(*program);
    for (size_t s = 0; s < sizes.size(); ++s)
      (s < stats.engineInstructions.size() ? stats.engineInstructions[s]
                                           : stats.dmaInstructions) += sizes[s];
    stats.hbmBytes = std::max(stats.hbmBytes, hbmBytes);
    stats.exported = true;
  }

  // A step larger than the core's HBM is the user's problem to solve (by
  // partitioning or a smaller batch), not a compiler bug: say so plainly.
  if (hbmBytes > target->hbmBytesPerCore) {
    auto gib = [](uint64_t bytes) {
      return llvm::formatv("{0:F1} GiB", static_cast<double>(bytes) /
                                             static_cast<double>(1ull << 30))
          .str();
    };
    // A pipeline fragment says which.
    std::string what = "the step";
    if (program->pipeline.isFragment())
      what = "stage " + std::to_string(program->pipeline.stage) + "'s " +
             program->pipeline.phase + " fragment";
    return kernel.emitError(what + " needs ")
           << gib(hbmBytes) << " of device memory (HBM) for its "
           << "inputs, outputs and intermediates, more than the "
           << gib(target->hbmBytesPerCore) << " of one " << target->name
           << " core; reduce the batch size or sequence length, or partition "
              "the model over more cores";
  }

  // The lowering must only produce programs the hardware accepts and that
  // cannot deadlock: a violation is our bug, not the user's graph.
  std::string error;
  TimingScope validateTiming = timing.nest("validate program");
  if (!trnrt::validateProgram(*program, *target, error))
    return kernel.emitError("internal compiler error: the compiled program "
                            "breaks a hardware rule: ")
           << error << "; this is a trn bug, please report it with the graph";
  validateTiming.stop();
  TimingScope deadlockTiming = timing.nest("check semaphores (deadlock)");
  if (!trnrt::checkSemaphoresCanComplete(*program, error))
    return kernel.emitError("internal compiler error: the compiled program "
                            "can deadlock: ")
           << error << "; this is a trn bug, please report it with the graph";
  return program;
}

FailureOr<trnrt::Program>
mlir::trn::compileToProgram(ModuleOp module, const CompileOptions &options) {
  FailureOr<std::vector<trnrt::Program>> programs =
      compileToPrograms(module, options);
  if (failed(programs))
    return failure();
  if (programs->size() != 1)
    return module.emitError("the step compiles to ")
           << programs->size()
           << " programs (pipeline fragments); use compileToPrograms";
  return std::move(programs->front());
}

FailureOr<std::vector<trnrt::Program>>
mlir::trn::compileToPrograms(ModuleOp module, const CompileOptions &options) {
  const trnrt::Target *target = trnrt::lookupTarget(options.target);
  if (!target)
    return module.emitError("unknown target '")
           << options.target << "' (expected trn1 or trn2)";
  if (options.autoCast != "none" && options.autoCast != "matmul" &&
      options.autoCast != "all")
    return module.emitError("unknown --auto-cast ")
           << options.autoCast << " (expected none, matmul or all)";
  if (options.autoCastType != "bf16" && options.autoCastType != "fp8_e4m3")
    return module.emitError("unknown --auto-cast-type ")
           << options.autoCastType << " (expected bf16 or fp8_e4m3)";
  if (options.autoCast == "all" && options.autoCastType != "bf16")
    return module.emitError("--auto-cast all casts to bf16 only; use "
                            "--auto-cast matmul with --auto-cast-type "
                            "fp8_e4m3");
  if (options.tp < 1 || options.dp < 1 || options.pp < 1)
    return module.emitError("mesh degrees must be positive (dp=")
           << options.dp << ", pp=" << options.pp << ", tp=" << options.tp
           << ")";
  if (options.pipelined() &&
      (options.stage < 0 || options.stage >= options.pp ||
       options.microbatches < 1 ||
       (options.pipelineSchedule != "gpipe" &&
        options.pipelineSchedule != "1f1b")))
    return module.emitError("pipeline options: stage ")
           << options.stage << " of pp=" << options.pp << ", "
           << options.microbatches << " microbatches, schedule '"
           << options.pipelineSchedule << "'";
  // Pipeline cuts (trn.pipeline_stage) mean something only to
  // dist-pipeline-stages, which removes them.
  if (options.pp <= 1)
    dropPipelineStageMarkers(module);
  if (needsPartitioning(module, options) &&
      failed(partitionForMesh(module, options)))
    return failure();

  // The nc verifiers and passes read the hardware table from this attribute.
  module->setAttr("nc.target",
                  StringAttr::get(module.getContext(), target->name));

  // Three pass managers: the IR is verified after the graph passes, which
  // rewrite the user's graph; the lowering's kernel (millions of nc ops:
  // verifying it costs a GPT-3 175B stage 1.3 s of 10) only when
  // TRN_VERIFY_IR is set, as the test suite does: what it makes is checked
  // again as a program below (every operand against the target, the
  // semaphores for deadlock); nc-allocate and nc-insert-sync only add
  // addresses and semaphores.
  PassManager graphPasses(module.getContext(), ModuleOp::getOperationName());
  PassManager lowering(module.getContext(), ModuleOp::getOperationName());
  PassManager nc(module.getContext(), ModuleOp::getOperationName());
  const char *verifyIR = std::getenv("TRN_VERIFY_IR");
  lowering.enableVerifier(verifyIR && *verifyIR &&
                          std::string(verifyIR) != "0");
  nc.enableVerifier(false);
  // A pipeline stage's forward, backward and update are independent kernels:
  // lowered, allocated and exported on the host's cores side by side.
  if (options.pipelined() && !options.printIRAfterAll)
    module.getContext()->enableMultithreading();
  if (options.printIRAfterAll) {
    // Printing per pass from several threads would interleave the dumps.
    module.getContext()->disableMultithreading();
    for (PassManager *pm : {&graphPasses, &lowering, &nc})
      pm->enableIRPrinting(
          /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
          /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
          /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
          /*printAfterOnlyOnFailure=*/false, llvm::errs());
  }
  buildTrnGraphPipeline(graphPasses, options);
  buildLoweringPipeline(lowering);
  // nc-insert-sync's analysis runs inside the export unless the IR is
  // printed: its semaphores as attributes cost a large kernel (a BERT-large
  // step: a million instructions) several seconds of attribute uniquing.
  bool syncInExport = !options.printIRAfterAll;
  buildNCKernelPipeline(nc, /*insertSync=*/!syncInExport);
  TimingScope inactive;
  TimingScope &timing = options.timing ? *options.timing : inactive;
  for (PassManager *pm : {&graphPasses, &lowering, &nc}) {
    if (options.timing)
      pm->enableTiming(timing);
    if (failed(pm->run(module)))
      return failure(); // the failing pass has emitted the diagnostic
  }

  // Programs, then the subroutines they call (exported with them).
  SmallVector<func::FuncOp> kernels, subroutines;
  for (func::FuncOp function : module.getOps<func::FuncOp>())
    if (isKernel(function))
      (function->hasAttr(nc::NCDialect::getSubroutineAttrName()) ? subroutines
                                                                 : kernels)
          .push_back(function);
  // One kernel, or a pipeline stage's forward, backward and update.
  const size_t expected = options.pipelined() ? 3 : 1;
  if (kernels.size() != expected)
    return module.emitError("internal compiler error: the pipeline produced ")
           << kernels.size() << " nc kernel functions, expected " << expected
           << "; this is a trn bug, please report it with the graph";
  // A pipeline stage's fragments export side by side (they only read the
  // IR); with --timing one after another, so that the report nests.
  // Subroutines first (each is a program of its own, checked alone), side
  // by side; then the programs that call them.
  SubroutinePrograms subroutinePrograms;
  for (func::FuncOp subroutine : subroutines)
    subroutinePrograms[subroutine.getSymName()];
  uint64_t subroutineOps = 0;
  if (!subroutines.empty()) {
    std::optional<TimingScope> subroutineTiming;
    if (options.timing)
      subroutineTiming.emplace(timing.nest("export subroutines"));
    if (failed(failableParallelForEachN(
            module.getContext(), 0, subroutines.size(), [&](size_t i) {
              TimingScope untimed;
              FailureOr<trnrt::Program> program =
                  exportKernel(subroutines[i], *target, options, syncInExport,
                               untimed, nullptr, nullptr);
              if (failed(program))
                return failure();
              subroutinePrograms[subroutines[i].getSymName()] =
                  std::move(*program);
              return success();
            })))
      return failure();
    if (options.stats)
      for (func::FuncOp subroutine : subroutines)
        subroutine.walk([&](Operation *) { ++subroutineOps; });
  }
  std::vector<std::optional<trnrt::Program>> exported(kernels.size());
  std::vector<mlir::trn::CompileStats> kernelStats(kernels.size());
  auto exportOne = [&](size_t i, TimingScope &scope) -> LogicalResult {
    FailureOr<trnrt::Program> program = exportKernel(
        kernels[i], *target, options, syncInExport, scope,
        options.stats ? &kernelStats[i] : nullptr, &subroutinePrograms);
    if (failed(program))
      return failure();
    exported[i] = std::move(*program);
    return success();
  };
  // options.timing is set (inactive) whenever the caller may time.
  bool timed = options.timing && static_cast<bool>(*options.timing);
  if (timed || kernels.size() == 1) {
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (kernels.size() == 1) {
        if (failed(exportOne(i, timing)))
          return failure();
        continue;
      }
      // A stage's report has one line per fragment.
      TimingScope fragment = timing.nest(kernels[i].getSymName().str());
      if (failed(exportOne(i, fragment)))
        return failure();
    }
  } else if (failed(failableParallelForEachN(module.getContext(), 0,
                                             kernels.size(), [&](size_t i) {
                                               TimingScope untimed;
                                               return exportOne(i, untimed);
                                             }))) {
    return failure();
  }
  std::vector<trnrt::Program> programs;
  if (options.stats) {
    // Summed over a pipeline stage's fragments.
    mlir::trn::CompileStats &stats = *options.stats;
    stats = mlir::trn::CompileStats();
    stats.kernelOps = subroutineOps;
    for (const mlir::trn::CompileStats &one : kernelStats) {
      stats.kernelOps += one.kernelOps;
      for (size_t e = 0; e < stats.engineInstructions.size(); ++e)
        stats.engineInstructions[e] += one.engineInstructions[e];
      stats.dmaInstructions += one.dmaInstructions;
      stats.hbmBytes = std::max(stats.hbmBytes, one.hbmBytes);
      stats.exported |= one.exported;
    }
  }
  for (std::optional<trnrt::Program> &program : exported)
    programs.push_back(std::move(*program));
  return programs;
}

trn::partition::DistPipelineSplitOptions
mlir::trn::pipelineSplitOptionsFor(const CompileOptions &options) {
  trn::partition::DistPipelineSplitOptions split;
  split.microbatches = options.microbatches;
  split.schedule = options.pipelineSchedule;
  split.recompute = options.recomputeActivations;
  return split;
}

trn::partition::PartitionOptions
mlir::trn::partitionOptionsFor(const CompileOptions &options) {
  // ZeRO-1 and --dp-whole-batch partition the whole batch's graph for real
  // over dp; otherwise the graph is one replica's step.
  const bool wholeBatch =
      (options.zero1 || options.dpWholeBatch) && options.dp > 1;
  const bool replicas = (options.dp > 1 || options.pipelined()) && !wholeBatch;
  trn::partition::PartitionOptions partitionOptions;
  partitionOptions.mesh = {{"dp", replicas ? 2 : options.dp},
                           {"tp", options.tp}};
  partitionOptions.dpReplicas = replicas;
  partitionOptions.zero1 = options.zero1;
  partitionOptions.sequenceParallel = options.sequenceParallel;
  return partitionOptions;
}

std::string mlir::trn::meshTextOf(const CompileOptions &options) {
  return "dp=" + std::to_string(options.dp) +
         (options.pp > 1 ? ",pp=" + std::to_string(options.pp)
                         : std::string()) +
         ",tp=" + std::to_string(options.tp);
}

size_t mlir::trn::MeshFootprint::worstStage() const {
  size_t worst = 0;
  for (size_t s = 1; s < stages.size(); ++s)
    if (stages[s].total() > stages[worst].total())
      worst = s;
  return worst;
}

FailureOr<std::optional<mlir::trn::MeshFootprint>>
mlir::trn::measureMeshFootprint(ModuleOp module,
                                const CompileOptions &options) {
  if (options.tp <= 1 && options.dp <= 1 && !options.pipelined())
    return std::optional<MeshFootprint>();
  for (auto function : module.getOps<func::FuncOp>())
    if (function->hasAttr(dist::DistDialect::getSpmdAttrName()))
      return std::optional<MeshFootprint>(); // already one rank's program
  MeshFootprint footprint;
  footprint.mesh = meshTextOf(options);
  footprint.pipelined = options.pipelined();
  // The intermediates counted are those the lowering gets: after the graph
  // passes (fusion), with each layer kept in place (not outlined).
  CompileOptions graphOnly = options;
  graphOnly.layerReuse = false;
  graphOnly.timing = nullptr;
  auto graphPasses = [&](OpPassManager &pm) {
    buildTrnGraphPipeline(pm, graphOnly);
  };
  if (footprint.pipelined) {
    FailureOr<std::vector<trn::partition::RankFootprint>> stages =
        trn::partition::partitionedPipelineFootprints(
            module, partitionOptionsFor(options), options.pp,
            pipelineSplitOptionsFor(options), graphPasses);
    if (failed(stages))
      return failure();
    footprint.stages = std::move(*stages);
  } else {
    FailureOr<trn::partition::RankFootprint> one =
        trn::partition::partitionedFootprint(
            module, partitionOptionsFor(options), graphPasses);
    if (failed(one))
      return failure();
    footprint.stages.push_back(*one);
  }
  return std::optional<MeshFootprint>(std::move(footprint));
}

//===----------------------------------------------------------------------===//
// The trn-compile pipeline
//===----------------------------------------------------------------------===//

namespace {

/// What compileToPrograms does to a module before its pass managers, as a
/// pass: drops pipeline cuts (without --pp), partitions for the mesh (a
/// dynamic pipeline: a dist.spmd graph is not partitioned again), keeps one
/// stage's fragments and sets the target.
struct CompileSetupPass
    : public PassWrapper<CompileSetupPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CompileSetupPass)

  explicit CompileSetupPass(const mlir::trn::CompileOptions &options)
      : options(options), partition(ModuleOp::getOperationName()) {
    mlir::trn::buildPartitionPipeline(partition, options);
  }
  StringRef getArgument() const final { return "trn-compile-setup"; }
  StringRef getDescription() const final {
    return "what trn-cc does before its passes: partition for the mesh, "
           "keep one pipeline stage, set nc.target";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    partition.getDependentDialects(registry);
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (options.pp <= 1)
      mlir::trn::dropPipelineStageMarkers(module);
    if (needsPartitioning(module, options)) {
      if (failed(runPipeline(partition, module)))
        return signalPassFailure();
      keepStage(module, options);
    }
    module->setAttr("nc.target",
                    StringAttr::get(module.getContext(), options.target));
  }

  mlir::trn::CompileOptions options;
  OpPassManager partition;
};

struct CompilePipelineOptions
    : public PassPipelineOptions<CompilePipelineOptions> {
  Option<std::string> flags{
      *this, "flags",
      llvm::cl::desc("codegen flags as trn-cc takes them (\"--tp 2 -O1\")"),
      llvm::cl::init("")};
};

} // namespace

void mlir::trn::buildCompilePipeline(OpPassManager &pm,
                                     const CompileOptions &options) {
  pm.addPass(std::make_unique<CompileSetupPass>(options));
  buildTrnGraphPipeline(pm, options);
  buildLoweringPipeline(pm);
  buildNCKernelPipeline(pm, /*insertSync=*/true);
}

void mlir::trn::registerCompilePipeline() {
  registerPassPipeline(
      "trn-compile",
      "the passes trn-cc runs on a graph (as with --mlir-print-ir-after-all: "
      "nc-insert-sync stores its semaphores), for the codegen flags in "
      "`flags`",
      [](OpPassManager &pm, StringRef optionsText,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CompilePipelineOptions pipelineOptions;
        if (failed(pipelineOptions.parseFromString(optionsText)))
          return failure();
        // MLIR 19 keeps the quotes of an empty quoted value (flags="").
        std::string text = pipelineOptions.flags;
        if (text == "\"\"" || text == "''")
          text.clear();
        std::vector<std::string> args;
        std::istringstream words(text);
        for (std::string word; words >> word;)
          args.push_back(word);
        std::string error;
        std::optional<cache::NormalizedFlags> flags =
            normalizeFlags(args, error);
        if (!flags)
          return errorHandler("trn-compile: " + error);
        CompileOptions options = compileOptionsFromFlags(*flags);
        options.dp = dpDegreeOf(args);
        buildCompilePipeline(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optionsHandler) {
        optionsHandler(CompilePipelineOptions());
      });
}
