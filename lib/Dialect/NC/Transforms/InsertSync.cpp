//===- InsertSync.cpp - semaphores between engine streams ----------------===//

#include "trn/Dialect/NC/Transforms/Passes.h"

#include "Footprint.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::nc {
#define GEN_PASS_DEF_NCINSERTSYNC
#include "trn/Dialect/NC/Transforms/Passes.h.inc"
} // namespace mlir::nc

using namespace mlir;
using namespace mlir::nc;

namespace {

/// Streams are numbered like their semaphores: the four compute engines,
/// the sync engine, then DMA queue q as 5 + q.
constexpr int64_t kDmaStreamBase = 5;

/// The stream an instruction runs on, or -1 for non-instructions.
int64_t streamOf(Operation *op) {
  auto vectorLike = [](Engine engine) -> int64_t {
    return engine == Engine::gpsimd ? 3 : 1;
  };
  if (isa<MatmulOp, TransposeOp>(op))
    return 0;
  if (isa<ActivationOp>(op))
    return 2;
  if (auto o = dyn_cast<TensorTensorOp>(op))
    return vectorLike(o.getEngine());
  if (auto o = dyn_cast<TensorScalarOp>(op))
    return vectorLike(o.getEngine());
  if (auto o = dyn_cast<TensorReduceOp>(op))
    return vectorLike(o.getEngine());
  if (auto o = dyn_cast<TensorCopyOp>(op))
    return vectorLike(o.getEngine());
  if (auto o = dyn_cast<MemsetOp>(op))
    return vectorLike(o.getEngine());
  if (isa<SelectOp, BnStatsOp, BnAggrOp>(op))
    return 1;
  if (isa<IotaOp, AffineSelectOp>(op))
    return 3;
  if (auto o = dyn_cast<DmaCopyOp>(op))
    return kDmaStreamBase + o.getQueue();
  if (auto o = dyn_cast<DmaGatherOp>(op))
    return kDmaStreamBase + o.getQueue();
  if (auto o = dyn_cast<DmaScatterAddOp>(op))
    return kDmaStreamBase + o.getQueue();
  return -1;
}

/// What one issued instruction touched, and its count on its stream.
struct Issued {
  SmallVector<Footprint> reads, writes;
  int64_t count;
};

bool conflicts(const Issued &earlier, ArrayRef<Footprint> reads,
               ArrayRef<Footprint> writes) {
  for (const Footprint &w : earlier.writes) {
    for (const Footprint &r : reads)
      if (w.overlaps(r))
        return true; // read after write
    for (const Footprint &x : writes)
      if (w.overlaps(x))
        return true; // write after write
  }
  for (const Footprint &r : earlier.reads)
    for (const Footprint &x : writes)
      if (r.overlaps(x))
        return true; // write after read
  return false;
}

struct NCInsertSyncPass : nc::impl::NCInsertSyncBase<NCInsertSyncPass> {
  void runOnOperation() override;
};

} // namespace

void NCInsertSyncPass::runOnOperation() {
  func::FuncOp kernel = getOperation();
  if (kernel.isExternal())
    return;
  OpBuilder builder(kernel.getContext());
  // Per stream, the instructions issued so far (in program order).
  llvm::DenseMap<int64_t, std::vector<Issued>> streams;
  WalkResult result = kernel.walk([&](Operation *op) -> WalkResult {
    int64_t stream = streamOf(op);
    if (stream < 0)
      return WalkResult::advance();
    Issued issued;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    SmallVector<MemoryEffects::EffectInstance> instances;
    if (effects)
      effects.getEffects(instances);
    for (auto &instance : instances) {
      Value value = instance.getValue();
      if (!value)
        continue;
      Footprint footprint = footprintOf(value);
      if (footprint.memory != MemorySpace::hbm && !footprint.hasAddress()) {
        op->emitError("operand tile has no address; run nc-allocate before "
                      "nc-insert-sync (reused memory creates dependencies)");
        return WalkResult::interrupt();
      }
      if (isa<MemoryEffects::Write>(instance.getEffect()))
        issued.writes.push_back(footprint);
      else if (isa<MemoryEffects::Read>(instance.getEffect()))
        issued.reads.push_back(footprint);
    }
    // One wait per other stream: for its latest conflicting instruction
    // (semaphores count completions, so that covers all earlier ones).
    SmallVector<Attribute> waits;
    for (auto &[other, issuedThere] : streams) {
      if (other == stream)
        continue; // a stream runs in order
      for (auto it = issuedThere.rbegin(); it != issuedThere.rend(); ++it)
        if (conflicts(*it, issued.reads, issued.writes)) {
          waits.push_back(builder.getDenseI64ArrayAttr({other, it->count}));
          break;
        }
    }
    std::vector<Issued> &mine = streams[stream];
    issued.count = static_cast<int64_t>(mine.size()) + 1;
    mine.push_back(std::move(issued));
    // Deterministic output: waits sorted by semaphore.
    llvm::sort(waits, [](Attribute a, Attribute b) {
      return cast<DenseI64ArrayAttr>(a)[0] < cast<DenseI64ArrayAttr>(b)[0];
    });
    op->setAttr(NCDialect::getSignalAttrName(),
                builder.getI64IntegerAttr(stream));
    if (waits.empty())
      op->removeAttr(NCDialect::getWaitsAttrName());
    else
      op->setAttr(NCDialect::getWaitsAttrName(), builder.getArrayAttr(waits));
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    signalPassFailure();
}
