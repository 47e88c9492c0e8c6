//===- OutlineLayers.cpp - repeated layers as calls of one function ------===//
//
// A traced step is flat: a 10-layer pipeline stage has its layer's ops ten
// times over (and its backward's), and the backend would lower, allocate
// and export each copy. This pass finds runs of consecutive blocks that
// compute the same thing and outlines one of them into a private function
// that every block becomes a call of; the backend compiles that function
// once (nc.call, docs/isa.md "Subroutines").
//
// The search works on a structural signature per op (name, attributes,
// types, regions; not operands): for every period P, the maximal runs
// where sig[i] == sig[i + P] give candidate repeats; the candidate that
// saves the most ops wins (ties: the shortest period). A candidate is then
// checked exactly, block by block against the first: ops equal (nested
// regions included) and operands alike, from the same op of the block or
// from outside it in the same order of first use.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"

namespace mlir::trn {
#define GEN_PASS_DEF_TRNOUTLINELAYERS
#include "trn/Dialect/Trn/Transforms/Passes.h.inc"
} // namespace mlir::trn

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kSubroutineAttr = "trn.subroutine";
/// Outlinings per function at most (each a run of one kind of layer).
constexpr int kMaxOutlinings = 16;
/// Candidates checked exactly per search before giving up.
constexpr int kMaxCandidates = 32;

/// What an op computes, operands aside.
llvm::hash_code structuralHash(Operation *op) {
  llvm::hash_code hash = llvm::hash_combine(
      op->getName().getAsOpaquePointer(),
      op->getRawDictionaryAttrs().getAsOpaquePointer(), op->hashProperties());
  for (Type type : op->getResultTypes())
    hash = llvm::hash_combine(hash, type.getAsOpaquePointer());
  for (Value operand : op->getOperands())
    hash = llvm::hash_combine(hash, operand.getType().getAsOpaquePointer());
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &nested : block)
        hash = llvm::hash_combine(hash, structuralHash(&nested));
  return hash;
}

/// Whether `a` and `b` are the same op: name, attributes, types, and
/// nested regions op for op, nested operands alike under `map` (values of
/// `a`'s regions to `b`'s). Top-level operands are the caller's to check.
bool sameStructure(Operation *a, Operation *b, IRMapping &map, bool topLevel) {
  if (a->getName() != b->getName() ||
      a->getRawDictionaryAttrs() != b->getRawDictionaryAttrs() ||
      !a->getName().compareOpProperties(a->getPropertiesStorage(),
                                        b->getPropertiesStorage()) ||
      a->getResultTypes() != b->getResultTypes() ||
      a->getNumOperands() != b->getNumOperands() ||
      a->getNumRegions() != b->getNumRegions() || a->getNumSuccessors() != 0 ||
      b->getNumSuccessors() != 0)
    return false;
  if (!topLevel)
    for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands()))
      if (map.lookupOrDefault(x) != y)
        return false;
  for (auto [x, y] : llvm::zip(a->getResults(), b->getResults()))
    map.map(x, y);
  for (auto [ra, rb] : llvm::zip(a->getRegions(), b->getRegions())) {
    if (ra.getBlocks().size() != rb.getBlocks().size())
      return false;
    for (auto [ba, bb] : llvm::zip(ra, rb)) {
      if (ba.getNumArguments() != bb.getNumArguments() ||
          ba.getOperations().size() != bb.getOperations().size())
        return false;
      for (auto [x, y] : llvm::zip(ba.getArguments(), bb.getArguments())) {
        if (x.getType() != y.getType())
          return false;
        map.map(x, y);
      }
      for (auto [oa, ob] : llvm::zip(ba, bb))
        if (!sameStructure(&oa, &ob, map, /*topLevel=*/false))
          return false;
    }
  }
  return true;
}

/// Consecutive blocks of `period` ops from `start`, `repeats` of them.
struct Run {
  size_t start = 0, period = 0, repeats = 0;
  size_t saved() const { return (repeats - 1) * period; }
};

/// How a block's op reads an operand: from op `op` (block-relative) result
/// `index`, or (op = -1) the block's input `index` in order of first use.
struct OperandSource {
  int64_t op, index;
  bool operator==(const OperandSource &other) const {
    return op == other.op && index == other.index;
  }
};

class Outliner {
public:
  Outliner(func::FuncOp function, SymbolTable &symbols, int64_t minOps,
           int64_t minRepeats)
      : function(function), symbols(symbols), minOps(minOps),
        minRepeats(minRepeats) {}

  /// Outlines runs until none is left; the number outlined.
  int run() {
    int outlined = 0;
    while (outlined < kMaxOutlinings && outlineOne())
      ++outlined;
    return outlined;
  }

private:
  bool outlineOne() {
    ops.clear();
    for (Operation &op : function.getBody().front().without_terminator())
      ops.push_back(&op);
    position.clear();
    for (auto [i, op] : llvm::enumerate(ops))
      position[op] = static_cast<int64_t>(i);
    std::vector<size_t> sig(ops.size());
    for (auto [i, op] : llvm::enumerate(ops))
      // A call (of a run outlined before) matches nothing: one level.
      sig[i] = isa<func::CallOp>(op) ? llvm::hash_value(i) ^ 0x5bd1e995
                                     : size_t(structuralHash(op));

    // An op's weight: itself and the ops of its regions (a group's body).
    weightsBefore.assign(ops.size() + 1, 0);
    for (auto [i, op] : llvm::enumerate(ops)) {
      int64_t weight = 0;
      op->walk([&](Operation *) { ++weight; });
      weightsBefore[i + 1] = weightsBefore[i] + weight;
    }
    std::vector<Run> candidates = findCandidates(sig);
    int tried = 0;
    for (const Run &candidate : candidates) {
      if (++tried > kMaxCandidates)
        break;
      std::optional<Run> run = checkRun(candidate);
      if (run && static_cast<int64_t>(run->repeats) >= minRepeats) {
        outline(*run);
        return true;
      }
    }
    return false;
  }

  /// The best runs first: most ops saved, then shortest period.
  std::vector<Run> findCandidates(const std::vector<size_t> &sig) {
    std::vector<Run> runs;
    size_t n = sig.size();
    size_t repeats = static_cast<size_t>(std::max<int64_t>(minRepeats, 2));
    for (size_t period = 1; period * repeats <= n; ++period) {
      size_t i = 0;
      while (i + period < n) {
        if (sig[i] != sig[i + period]) {
          ++i;
          continue;
        }
        size_t j = i;
        while (j + period < n && sig[j] == sig[j + period])
          ++j;
        // Matches over [i, j): blocks at i, i + P, ... while they fit.
        size_t length = j - i;
        size_t count = length / period + 1;
        if (count >= repeats &&
            weightsBefore[i + period] - weightsBefore[i] >= minOps)
          runs.push_back({i, period, count});
        i = j;
      }
    }
    std::stable_sort(runs.begin(), runs.end(), [](const Run &a, const Run &b) {
      if (a.saved() != b.saved())
        return a.saved() > b.saved();
      return a.period < b.period;
    });
    return runs;
  }

  /// How every op of the block at `start` reads its operands.
  std::vector<std::vector<OperandSource>> sourcesOf(size_t start,
                                                    size_t period) {
    std::vector<std::vector<OperandSource>> sources(period);
    llvm::DenseMap<Value, int64_t> inputs;
    for (size_t j = 0; j < period; ++j) {
      Operation *op = ops[start + j];
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        auto found = def ? position.find(def) : position.end();
        if (found != position.end() &&
            found->second >= static_cast<int64_t>(start) &&
            found->second < static_cast<int64_t>(start + period)) {
          sources[j].push_back(
              {found->second - static_cast<int64_t>(start),
               static_cast<int64_t>(
                   cast<OpResult>(operand).getResultNumber())});
          continue;
        }
        auto [it, inserted] =
            inputs.try_emplace(operand, static_cast<int64_t>(inputs.size()));
        sources[j].push_back({-1, it->second});
      }
    }
    return sources;
  }

  /// The longest prefix of `candidate`'s blocks that match its first
  /// exactly; nullopt when it is shorter than two.
  std::optional<Run> checkRun(const Run &candidate) {
    auto reference = sourcesOf(candidate.start, candidate.period);
    size_t repeats = 1;
    for (; repeats < candidate.repeats; ++repeats) {
      size_t start = candidate.start + repeats * candidate.period;
      if (sourcesOf(start, candidate.period) != reference)
        break;
      IRMapping map;
      bool same = true;
      for (size_t j = 0; same && j < candidate.period; ++j)
        same = sameStructure(ops[candidate.start + j], ops[start + j], map,
                             /*topLevel=*/true);
      if (!same)
        break;
    }
    if (repeats < 2)
      return std::nullopt;
    return Run{candidate.start, candidate.period, repeats};
  }

  void outline(const Run &run) {
    // The results some block's outside users read, by block-relative op
    // and result number: the union over the blocks.
    std::vector<std::pair<int64_t, unsigned>> outputs;
    for (size_t r = 0; r < run.repeats; ++r) {
      int64_t begin = static_cast<int64_t>(run.start + r * run.period);
      int64_t end = begin + static_cast<int64_t>(run.period);
      for (int64_t j = begin; j < end; ++j)
        for (OpResult result : ops[j]->getResults()) {
          bool outside = llvm::any_of(result.getUsers(), [&](Operation *user) {
            Operation *top =
                function.getBody().front().findAncestorOpInBlock(*user);
            auto it = top ? position.find(top) : position.end();
            return it == position.end() || it->second < begin ||
                   it->second >= end;
          });
          std::pair<int64_t, unsigned> key{j - begin, result.getResultNumber()};
          if (outside && !llvm::is_contained(outputs, key))
            outputs.push_back(key);
        }
    }
    llvm::sort(outputs);

    // The function: the first block's ops on its inputs.
    OpBuilder builder(function.getContext());
    SmallVector<Value> inputs;
    llvm::DenseMap<Value, size_t> inputIndex;
    for (size_t j = 0; j < run.period; ++j)
      for (Value operand : ops[run.start + j]->getOperands()) {
        Operation *def = operand.getDefiningOp();
        auto found = def ? position.find(def) : position.end();
        bool inside =
            found != position.end() &&
            found->second >= static_cast<int64_t>(run.start) &&
            found->second < static_cast<int64_t>(run.start + run.period);
        if (!inside && inputIndex.try_emplace(operand, inputs.size()).second)
          inputs.push_back(operand);
      }
    SmallVector<Type> inputTypes, outputTypes;
    for (Value input : inputs)
      inputTypes.push_back(input.getType());
    for (auto [j, number] : outputs)
      outputTypes.push_back(ops[run.start + j]->getResult(number).getType());
    auto callee = func::FuncOp::create(
        ops[run.start]->getLoc(), (function.getSymName() + ".layer").str(),
        builder.getFunctionType(inputTypes, outputTypes));
    callee.setPrivate();
    callee->setAttr(kSubroutineAttr, builder.getUnitAttr());
    // A partitioned step's collectives lower only in a dist.spmd function.
    if (Attribute spmd = function->getAttr("dist.spmd"))
      callee->setAttr("dist.spmd", spmd);
    symbols.insert(callee, std::next(function->getIterator()));
    Block *body = callee.addEntryBlock();
    builder.setInsertionPointToEnd(body);
    IRMapping mapping;
    for (auto [input, argument] : llvm::zip(inputs, body->getArguments()))
      mapping.map(input, argument);
    for (size_t j = 0; j < run.period; ++j)
      builder.clone(*ops[run.start + j], mapping);
    SmallVector<Value> returned;
    for (auto [j, number] : outputs)
      returned.push_back(mapping.lookup(ops[run.start + j]->getResult(number)));
    builder.create<func::ReturnOp>(callee.getLoc(), returned);

    // Every block becomes a call of it.
    for (size_t r = 0; r < run.repeats; ++r) {
      size_t begin = run.start + r * run.period;
      SmallVector<Value> operands;
      llvm::DenseMap<Value, bool> seen;
      for (size_t j = 0; j < run.period; ++j)
        for (Value operand : ops[begin + j]->getOperands()) {
          Operation *def = operand.getDefiningOp();
          auto found = def ? position.find(def) : position.end();
          bool inside =
              found != position.end() &&
              found->second >= static_cast<int64_t>(begin) &&
              found->second < static_cast<int64_t>(begin + run.period);
          if (!inside && seen.try_emplace(operand, true).second)
            operands.push_back(operand);
        }
      builder.setInsertionPoint(ops[begin]);
      auto call =
          builder.create<func::CallOp>(ops[begin]->getLoc(), callee, operands);
      for (auto [k, output] : llvm::enumerate(outputs))
        ops[begin + output.first]
            ->getResult(output.second)
            .replaceAllUsesWith(call.getResult(k));
      for (size_t j = run.period; j-- > 0;)
        ops[begin + j]->erase();
    }
  }

  func::FuncOp function;
  /// Per op index i, the total weight of ops [0, i).
  std::vector<int64_t> weightsBefore;
  SymbolTable &symbols;
  int64_t minOps, minRepeats;
  std::vector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> position;
};

struct TrnOutlineLayersPass
    : mlir::trn::impl::TrnOutlineLayersBase<TrnOutlineLayersPass> {
  using TrnOutlineLayersBase::TrnOutlineLayersBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (minOps < 1 || minRepeats < 2) {
      module.emitError("trn-outline-layers: min-ops must be at least 1 and "
                       "min-repeats at least 2, got ")
          << minOps << " and " << minRepeats;
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal() && function.getBody().hasOneBlock() &&
          !function->hasAttr(kSubroutineAttr))
        functions.push_back(function);
    for (func::FuncOp function : functions)
      Outliner(function, symbols, minOps, minRepeats).run();
  }
};

} // namespace
