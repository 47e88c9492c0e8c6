//===- OverlapCollectives.cpp - matmuls while a collective runs ----------===//
//
// See the pass description in Passes.td. A collective runs on the Sync
// engine's stream while the compute engines go on with whatever does not
// need its result; in the order partitioning leaves, the op after a
// collective is usually its consumer, so the engines wait. A matmul that
// does not need the collective and whose operands are ready (a weight
// gradient, which partitioned backward passes leave at the end) moves to
// just before the collective's first consumer.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Dist/IR/DistOps.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNOVERLAPCOLLECTIVES
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;
using namespace mlir::trn;

namespace {

bool isCollective(Operation *op) {
  return op->getDialect() && op->getDialect()->getNamespace() == "dist" &&
         op->getNumResults() > 0;
}

/// A matmul, alone or with its epilogue.
bool isMatmul(Operation *op) {
  if (isa<DotGeneralOp>(op))
    return true;
  auto fusion = dyn_cast<FusionOp>(op);
  return fusion && isa<DotGeneralOp>(fusion.getBody().front().front());
}

/// Shorter collectives are not worth moving a matmul for: the ring's
/// latency is most of them.
constexpr double kMinGapNs = 20000;
/// How many of the matmuls before a collective that no matmul overlaps are
/// considered for it.
constexpr size_t kMaxCandidates = 32;

/// 2·M·N·K of a matmul (alone or with its epilogue).
double matmulFlops(Operation *op) {
  if (auto fusion = dyn_cast<FusionOp>(op))
    op = &fusion.getBody().front().front();
  auto dot = dyn_cast<DotGeneralOp>(op);
  if (!dot)
    return 0;
  auto lhs = cast<RankedTensorType>(dot.getLhs().getType());
  auto result = cast<RankedTensorType>(dot.getType());
  if (!lhs.hasStaticShape() || !result.hasStaticShape())
    return 0;
  double k = 1;
  for (int64_t d : dot.getLhsContractingDims())
    k *= static_cast<double>(lhs.getDimSize(d));
  return 2.0 * static_cast<double>(result.getNumElements()) * k;
}

/// The bytes a ring algorithm moves per rank for `op` (docs/simulator.md,
/// "Collectives").
double collectiveBytes(Operation *op) {
  auto ring = [](int64_t n, double bytes) {
    return n > 1 ? bytes * static_cast<double>(n - 1) / n : 0.0;
  };
  return llvm::TypeSwitch<Operation *, double>(op)
      .Case([&](dist::AllGatherOp o) {
        return ring(o.groupSize(), tensorBytes(o.getResult().getType()));
      })
      .Case([&](dist::ReduceScatterOp o) {
        return ring(o.groupSize(), tensorBytes(o.getInput().getType()));
      })
      .Case([&](dist::AllReduceOp o) {
        return 2 * ring(o.groupSize(), tensorBytes(o.getInput().getType()));
      })
      .Case([&](dist::AllToAllOp o) {
        return ring(o.groupSize(), tensorBytes(o.getInput().getType()));
      })
      .Default([](Operation *op) {
        return op->getNumOperands()
                   ? double(tensorBytes(op->getOperand(0).getType()))
                   : 0;
      });
}

struct OverlapCollectives
    : trn::impl::TrnOverlapCollectivesBase<OverlapCollectives> {
  using Base::Base;

  /// The first op of `block` that computes with `value`, looking through
  /// reshapes (views: nothing waits there).
  static Operation *firstComputingUse(Block &block, Value value) {
    Operation *first = nullptr;
    SmallVector<Value> pending{value};
    while (!pending.empty()) {
      Value next = pending.pop_back_val();
      for (Operation *user : next.getUsers()) {
        Operation *at = block.findAncestorOpInBlock(*user);
        if (!at)
          continue;
        if (auto reshape = dyn_cast<ReshapeOp>(at)) {
          pending.push_back(reshape.getResult());
          continue;
        }
        if (!first || at->isBeforeInBlock(first))
          first = at;
      }
    }
    return first;
  }

  /// Moves matmuls later, from collectives that have more than enough to
  /// overlap to those that have none (see the pass description).
  void fillUncoveredCollectives(Block &block) {
    struct Window {
      Operation *collective, *consumer;
      double time, cover = 0;
    };
    SmallVector<Window> windows;
    for (Operation &op : block)
      if (isCollective(&op) && !isa<dist::SendOp, dist::RecvOp>(op))
        if (Operation *consumer = firstComputingUse(block, op.getResult(0)))
          windows.push_back(
              {&op, consumer, collectiveBytes(&op) / linkBytesPerNs});
    if (windows.empty())
      return;
    auto time = [&](Operation *matmul) {
      return matmulFlops(matmul) / flopsPerNs;
    };
    auto inside = [](Operation *op, const Window &window) {
      return window.collective->isBeforeInBlock(op) &&
             op->isBeforeInBlock(window.consumer);
    };
    SmallVector<Operation *> matmuls;
    for (Operation &op : block)
      if (isMatmul(&op) && !isCollective(&op))
        matmuls.push_back(&op);
    for (Window &window : windows)
      for (Operation *matmul : matmuls)
        if (inside(matmul, window))
          window.cover += time(matmul);
    for (Window &needy : windows) {
      if (needy.time < kMinGapNs || needy.cover >= needy.time)
        continue;
      // The nearest matmuls before the collective, the latest first: a
      // bounded search, and the least change to the order.
      SmallVector<Operation *> nearest;
      for (Operation *op : llvm::reverse(matmuls))
        if (op->isBeforeInBlock(needy.collective) &&
            nearest.size() < kMaxCandidates)
          nearest.push_back(op);
      for (Operation *op : nearest) {
        if (needy.cover >= needy.time)
          break;
        double t = time(op);
        // Every reader after the consumer it is moved in front of.
        bool readersLater = llvm::all_of(op->getUsers(), [&](Operation *u) {
          Operation *at = block.findAncestorOpInBlock(*u);
          return at && !at->isBeforeInBlock(needy.consumer);
        });
        // Only from a collective it overlaps, which keeps enough.
        bool overlaps = false, donorsKeep = true;
        for (Window &w : windows)
          if (&w != &needy && inside(op, w)) {
            overlaps = true;
            donorsKeep &= w.cover - t >= w.time;
          }
        if (!readersLater || !overlaps || !donorsKeep || t <= 0)
          continue;
        for (Window &w : windows)
          if (inside(op, w))
            w.cover -= t;
        op->moveBefore(needy.consumer);
        for (Window &w : windows)
          if (inside(op, w))
            w.cover += t;
      }
    }
  }

  /// The rates the time estimates use (the driver passes the target's).
  double flopsPerNs = 0, linkBytesPerNs = 0;

  void runOnOperation() override {
    flopsPerNs = matmulFlopsPerNs;
    linkBytesPerNs = collectiveBytesPerNs;
    if (flopsPerNs <= 0 || linkBytesPerNs <= 0) {
      getOperation().emitError(
          "trn-overlap-collectives needs matmul-flops-per-ns and "
          "collective-bytes-per-ns (trn-cc passes its target's)");
      return signalPassFailure();
    }
    Block &block = getOperation().getBody().front();
    // Small values made from the arguments alone (the learning rate's
    // negation and cast, which the update of every weight reads) go first,
    // so that they do not hold weight-gradient matmuls back.
    llvm::SetVector<Operation *> early;
    for (Operation &op : block) {
      if (isCollective(&op) || isMatmul(&op) || !isPure(&op) ||
          op.getNumRegions() > 0 || op.hasTrait<OpTrait::IsTerminator>() ||
          op.getNumResults() == 0)
        continue;
      bool fromArguments = llvm::all_of(op.getOperands(), [&](Value operand) {
        if (isa<BlockArgument>(operand))
          return true;
        Operation *def = operand.getDefiningOp();
        return def && early.contains(def);
      });
      bool small = llvm::all_of(op.getResultTypes(), [](Type type) {
        auto tensor = dyn_cast<RankedTensorType>(type);
        return tensor && tensor.hasStaticShape() &&
               tensor.getNumElements() <= 4096;
      });
      if (fromArguments && small)
        early.insert(&op);
    }
    // In reverse, each before the block's first op: their order stays.
    for (Operation *op : llvm::reverse(early))
      if (op != &block.front())
        op->moveBefore(&block.front());
    SmallVector<Operation *> collectives;
    for (Operation &op : block)
      if (isCollective(&op))
        collectives.push_back(&op);
    // An all-reduce, or any collective of arguments (a rotary table's
    // gather), starts as soon as its operands are ready (the gradients of
    // replicated weights are summed while the rest of the backward runs
    // instead of after it), but behind a collective that follows with no
    // matmul in between: the Sync engine runs collectives in order, and
    // that one is what the compute engines are about to wait for.
    // A stashed shard is gathered again where it is first needed (the
    // pipeline's selective recomputation): hoisted, every layer's gathered
    // copy would be held through the whole backward.
    auto stashed = [&](Value v) {
      auto argument = dyn_cast<BlockArgument>(v);
      if (!argument || argument.getOwner() != &block)
        return false;
      auto port = getOperation().getArgAttrOfType<dist::PortAttr>(
          argument.getArgNumber(), dist::DistDialect::getPortAttrName());
      return port && port.getKind() == "stash";
    };
    for (Operation *collective : collectives) {
      bool ofArguments = collective->getNumOperands() > 0 &&
                         llvm::all_of(collective->getOperands(), [&](Value v) {
                           return isa<BlockArgument>(v) && !stashed(v);
                         });
      if (isa<dist::SendOp, dist::RecvOp>(collective) ||
          (!isa<dist::AllReduceOp>(collective) && !ofArguments))
        continue;
      Operation *after = nullptr;
      for (Value operand : collective->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *at = block.findAncestorOpInBlock(*def);
              at && (!after || after->isBeforeInBlock(at)))
            after = at;
      // Never across a pipeline transfer: the stages' programs pair their
      // sends and receives in program order.
      for (Operation *op = collective->getPrevNode();
           op && (!after || after->isBeforeInBlock(op)); op = op->getPrevNode())
        if (isa<dist::SendOp, dist::RecvOp>(op)) {
          after = op;
          break;
        }
      Operation *next = after ? after->getNextNode() : &block.front();
      for (Operation *op = next; op && op != collective && !isMatmul(op);
           op = op->getNextNode())
        if (isCollective(op)) {
          after = op;
          break;
        }
      if (after)
        collective->moveAfter(after);
      else
        collective->moveBefore(&block.front());
    }
    for (Operation *collective : collectives) {
      // The collective's first consumer in the block.
      Operation *firstUse = nullptr;
      for (Operation *user : collective->getUsers()) {
        Operation *at = block.findAncestorOpInBlock(*user);
        if (at && (!firstUse || at->isBeforeInBlock(firstUse)))
          firstUse = at;
      }
      if (!firstUse)
        continue;
      // Matmuls whose operands are all defined before the first consumer
      // move in front of it: those that do not read the collective run
      // while it transfers; one that does (the data gradient next to a
      // weight gradient of one gathered tensor) goes first, so that the rest
      // of the backward, which it feeds, is not held behind the weight
      // gradient (a leaf).
      int64_t moved = 0;
      for (Operation *op = firstUse->getNextNode(); op && moved < perCollective;
           op = op->getNextNode()) {
        if (!isMatmul(op) || isCollective(op))
          continue;
        bool ready = llvm::all_of(op->getOperands(), [&](Value operand) {
          Operation *def = operand.getDefiningOp();
          Operation *at = def ? block.findAncestorOpInBlock(*def) : nullptr;
          return !at || at->isBeforeInBlock(firstUse);
        });
        if (!ready)
          continue;
        Operation *candidate = op;
        op = op->getPrevNode();
        candidate->moveBefore(firstUse);
        ++moved;
      }
    }
    fillUncoveredCollectives(block);
  }
};

} // namespace
