//===- Spmd.cpp - the reference evaluator over every rank of a mesh -------===//
//
// Every rank runs in its own thread; a collective meets the other members
// of the rank's replica group (the ranks that differ from it only along the
// collective's axes, ordered by their index along those axes, the first
// axis the most major): the k-th collective of a rank over a group meets
// the k-th of every other member. A pipeline's ranks run their stage's
// fragments in the schedule's order; dist.send posts to a mailbox that the
// matching dist.recv (same ranks, tag and microbatch) waits on.
//
//===----------------------------------------------------------------------===//

#include "trn/Eval/Spmd.h"

#include "Interpreter.h"

#include "trn/Dialect/Dist/IR/DistOps.h"

#include "trnrt/PipelineSchedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

using namespace mlir;
using namespace mlir::trn::eval;
using namespace mlir::trn::eval::detail;

namespace {

dist::MeshOp meshOf(func::FuncOp function) {
  auto module = function->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  auto meshes = module.getOps<dist::MeshOp>();
  return meshes.empty() ? dist::MeshOp() : *meshes.begin();
}

/// A rank's coordinates on the mesh axes (the first axis the most major).
std::vector<int64_t> coordinatesOf(dist::MeshOp mesh, int64_t rank) {
  ArrayRef<int64_t> sizes = mesh.getSizes();
  std::vector<int64_t> coords(sizes.size());
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    coords[d] = rank % sizes[d];
    rank /= sizes[d];
  }
  return coords;
}

int64_t axisIndex(dist::MeshOp mesh, StringRef axis) {
  for (auto [index, name] : llvm::enumerate(mesh.getAxes()))
    if (cast<StringAttr>(name).getValue() == axis)
      return index;
  return -1;
}

/// The position of coordinates `coords` along `axes` (first most major) and
/// the group size.
std::pair<int64_t, int64_t> positionAlong(dist::MeshOp mesh,
                                          ArrayRef<int64_t> coords,
                                          ArrayRef<StringRef> axes) {
  int64_t position = 0, size = 1;
  for (StringRef axis : axes) {
    int64_t index = axisIndex(mesh, axis);
    int64_t n = mesh.getSizes()[index];
    position = position * n + coords[index];
    size *= n;
  }
  return {position, size};
}

SmallVector<StringRef> namesOf(ArrayAttr axes) {
  SmallVector<StringRef> names;
  for (Attribute axis : axes)
    names.push_back(cast<StringAttr>(axis).getValue());
  return names;
}

void copyElement(const Tensor &from, int64_t i, Tensor &to, int64_t j) {
  if (to.isFloat())
    to.floats[j] = from.floats[i];
  else
    to.ints[j] = from.ints[i];
}

/// Chunk `index` of `parts` equal chunks of `x` along `dim`.
Tensor chunkOf(const Tensor &x, int64_t dim, int64_t index, int64_t parts) {
  std::vector<int64_t> shape = x.shape;
  int64_t size = shape[dim] / parts;
  shape[dim] = size;
  Tensor out = Tensor::zeros(x.dtype, shape);
  std::vector<int64_t> strides = stridesOf(x.shape);
  forEachIndex(out.shape, [&](int64_t linear, ArrayRef<int64_t> at) {
    int64_t source = 0;
    for (size_t d = 0; d < at.size(); ++d)
      source += (at[d] + (int64_t(d) == dim ? index * size : 0)) * strides[d];
    copyElement(x, source, out, linear);
  });
  return out;
}

/// `pieces` concatenated along `dim`, in order.
Tensor concatenate(ArrayRef<Tensor> pieces, int64_t dim) {
  std::vector<int64_t> shape = pieces.front().shape;
  int64_t size = shape[dim];
  shape[dim] = size * int64_t(pieces.size());
  Tensor out = Tensor::zeros(pieces.front().dtype, shape);
  std::vector<int64_t> strides = stridesOf(pieces.front().shape);
  forEachIndex(out.shape, [&](int64_t linear, ArrayRef<int64_t> at) {
    const Tensor &piece = pieces[at[dim] / size];
    int64_t source = 0;
    for (size_t d = 0; d < at.size(); ++d)
      source += (int64_t(d) == dim ? at[d] % size : at[d]) * strides[d];
    copyElement(piece, source, out, linear);
  });
  return out;
}

/// `x` with dimension `dim` seen as `blocks` blocks (a dimension of its
/// own before it), and back.
Tensor splitBlocks(Tensor x, int64_t dim, int64_t blocks) {
  x.shape[dim] /= blocks;
  x.shape.insert(x.shape.begin() + dim, blocks);
  return x;
}
Tensor mergeBlocks(Tensor x, int64_t dim) {
  x.shape[dim] *= x.shape[dim + 1];
  x.shape.erase(x.shape.begin() + dim + 1);
  return x;
}

/// Chunk `index` of `parts` of every one of `blocks` blocks along `dim`.
Tensor blockChunkOf(const Tensor &x, int64_t dim, int64_t index, int64_t parts,
                    int64_t blocks) {
  if (blocks == 1)
    return chunkOf(x, dim, index, parts);
  return mergeBlocks(
      chunkOf(splitBlocks(x, dim, blocks), dim + 1, index, parts), dim);
}

/// The inverse of blockChunkOf: `pieces` in order rebuild every block.
Tensor blockConcatenate(ArrayRef<Tensor> pieces, int64_t dim, int64_t blocks) {
  if (blocks == 1)
    return concatenate(pieces, dim);
  std::vector<Tensor> blocked;
  for (const Tensor &piece : pieces)
    blocked.push_back(splitBlocks(piece, dim, blocks));
  return mergeBlocks(concatenate(blocked, dim + 1), dim);
}

/// How the ranks' threads meet: a collective waits for the members of its
/// replica group only (ranks of different pipeline stages run different
/// collectives at the same time), a send posts to a mailbox that its
/// receive waits on. Abortable when a rank fails.
class Exchange {
public:
  /// Every member's `mine` in group order (`group`: world ranks in group
  /// order), once all of them called; std::nullopt if a rank failed.
  std::optional<std::vector<Tensor>> all(int64_t rank,
                                         const std::vector<int64_t> &group,
                                         int64_t position, const Tensor &mine) {
    std::unique_lock<std::mutex> lock(mutex);
    // The k-th collective of this rank over this group meets the k-th of
    // every other member.
    uint64_t sequence = sequences[{rank, group}]++;
    Meeting &meeting = meetings[{group, sequence}];
    if (meeting.slots.empty())
      meeting.slots.resize(group.size());
    meeting.slots[position] = mine;
    ++meeting.arrived;
    changed.notify_all();
    changed.wait(lock, [&] {
      return meeting.arrived == int64_t(group.size()) || aborted;
    });
    if (aborted)
      return std::nullopt;
    std::vector<Tensor> everyone = meeting.slots;
    if (++meeting.left == int64_t(group.size()))
      meetings.erase({group, sequence});
    return everyone;
  }

  void send(int64_t from, int64_t to, int64_t tag, int64_t microbatch,
            Tensor tensor) {
    std::lock_guard<std::mutex> lock(mutex);
    mailbox[{from, to, tag, microbatch}] = std::move(tensor);
    changed.notify_all();
  }

  /// What `from` sent to `to` with `tag` for `microbatch`; std::nullopt if
  /// a rank failed.
  std::optional<Tensor> receive(int64_t from, int64_t to, int64_t tag,
                                int64_t microbatch) {
    std::unique_lock<std::mutex> lock(mutex);
    std::array<int64_t, 4> key = {from, to, tag, microbatch};
    changed.wait(lock, [&] { return mailbox.count(key) || aborted; });
    if (aborted)
      return std::nullopt;
    Tensor tensor = std::move(mailbox[key]);
    mailbox.erase(key);
    return tensor;
  }

  void abort() {
    std::lock_guard<std::mutex> lock(mutex);
    aborted = true;
    changed.notify_all();
  }

private:
  struct Meeting {
    std::vector<Tensor> slots;
    int64_t arrived = 0, left = 0;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::pair<int64_t, std::vector<int64_t>>, uint64_t> sequences;
  std::map<std::pair<std::vector<int64_t>, uint64_t>, Meeting> meetings;
  std::map<std::array<int64_t, 4>, Tensor> mailbox;
  bool aborted = false;
};

class RankDistOps : public DistOpEvaluator {
public:
  RankDistOps(dist::MeshOp mesh, int64_t rank, Exchange &exchange)
      : mesh(mesh), rank(rank), coords(coordinatesOf(mesh, rank)),
        exchange(exchange) {}

  FailureOr<Tensor> evaluate(Operation *op,
                             ArrayRef<const Tensor *> operands) override;

  /// The microbatch a pipeline fragment runs for: it tells transfers of
  /// different microbatches apart.
  int64_t microbatch = 0;

private:
  /// The tensors of this rank's group along `axes`, in group order, and
  /// this rank's position in it.
  std::optional<std::vector<Tensor>> group(const Tensor &mine, ArrayAttr axes,
                                           int64_t &position);
  /// The world rank at index `peer` along `axis`, the other coordinates
  /// this rank's.
  int64_t peerRank(StringRef axis, int64_t peer);
  Tensor reduce(ArrayRef<Tensor> tensors, dist::ReductionKind kind);

  dist::MeshOp mesh;
  int64_t rank;
  std::vector<int64_t> coords;
  Exchange &exchange;
};

std::optional<std::vector<Tensor>>
RankDistOps::group(const Tensor &mine, ArrayAttr axes, int64_t &position) {
  SmallVector<StringRef> names = namesOf(axes);
  int64_t size;
  std::tie(position, size) = positionAlong(mesh, coords, names);
  SmallVector<int64_t> named;
  for (StringRef name : names)
    named.push_back(axisIndex(mesh, name));
  std::vector<int64_t> members(size);
  for (int64_t other = 0; other < mesh.numDevices(); ++other) {
    std::vector<int64_t> theirs = coordinatesOf(mesh, other);
    bool sameGroup = true;
    for (size_t d = 0; d < theirs.size(); ++d)
      if (!llvm::is_contained(named, int64_t(d)) && theirs[d] != coords[d])
        sameGroup = false;
    if (sameGroup)
      members[positionAlong(mesh, theirs, names).first] = other;
  }
  return exchange.all(rank, members, position, mine);
}

int64_t RankDistOps::peerRank(StringRef axis, int64_t peer) {
  std::vector<int64_t> theirs = coords;
  theirs[axisIndex(mesh, axis)] = peer;
  int64_t linear = 0;
  for (auto [coordinate, size] : llvm::zip(theirs, mesh.getSizes()))
    linear = linear * size + coordinate;
  return linear;
}

Tensor RankDistOps::reduce(ArrayRef<Tensor> tensors, dist::ReductionKind kind) {
  Tensor out = tensors.front();
  for (int64_t i = 0, n = out.numElements(); i < n; ++i) {
    double value = tensors.front().getDouble(i);
    for (const Tensor &tensor : tensors.drop_front()) {
      double other = tensor.getDouble(i);
      switch (kind) {
      case dist::ReductionKind::sum:
      case dist::ReductionKind::mean:
        value += other;
        break;
      case dist::ReductionKind::max:
        value = std::max(value, other);
        break;
      case dist::ReductionKind::min:
        value = std::min(value, other);
        break;
      }
    }
    if (kind == dist::ReductionKind::mean)
      value /= double(tensors.size());
    out.setDouble(i, value);
  }
  return out;
}

FailureOr<Tensor> RankDistOps::evaluate(Operation *op,
                                        ArrayRef<const Tensor *> operands) {
  auto aborted = [&]() -> FailureOr<Tensor> {
    return op->emitError("reference evaluator: another rank failed before ")
           << op->getName();
  };
  int64_t position = 0;
  return llvm::TypeSwitch<Operation *, FailureOr<Tensor>>(op)
      .Case([&](dist::AllReduceOp o) -> FailureOr<Tensor> {
        auto members = group(*operands[0], o.getAxes(), position);
        if (!members)
          return aborted();
        return reduce(*members, o.getReduction());
      })
      .Case([&](dist::AllGatherOp o) -> FailureOr<Tensor> {
        auto members = group(*operands[0], o.getAxes(), position);
        if (!members)
          return aborted();
        return concatenate(*members, o.getDim());
      })
      .Case([&](dist::ReduceScatterOp o) -> FailureOr<Tensor> {
        auto members = group(*operands[0], o.getAxes(), position);
        if (!members)
          return aborted();
        return chunkOf(reduce(*members, o.getReduction()), o.getDim(), position,
                       int64_t(members->size()));
      })
      .Case([&](dist::AllToAllOp o) -> FailureOr<Tensor> {
        auto members = group(*operands[0], o.getAxes(), position);
        if (!members)
          return aborted();
        std::vector<Tensor> received;
        for (const Tensor &member : *members)
          received.push_back(chunkOf(member, o.getSplitDim(), position,
                                     int64_t(members->size())));
        return concatenate(received, o.getConcatDim());
      })
      .Case([&](dist::CollectivePermuteOp o) -> FailureOr<Tensor> {
        auto members = group(*operands[0], o.getAxes(), position);
        if (!members)
          return aborted();
        int64_t n = int64_t(members->size());
        int64_t from = ((position - o.getShift()) % n + n) % n;
        return (*members)[from];
      })
      .Case([&](dist::AllSliceOp o) -> FailureOr<Tensor> {
        auto [at, size] = positionAlong(mesh, coords, namesOf(o.getAxes()));
        return chunkOf(*operands[0], o.getDim(), at, size);
      })
      .Case([&](dist::SendOp o) -> FailureOr<Tensor> {
        exchange.send(rank, peerRank(o.getAxis(), o.getPeer()), o.getTag(),
                      microbatch, *operands[0]);
        return Tensor();
      })
      .Case([&](dist::RecvOp o) -> FailureOr<Tensor> {
        std::optional<Tensor> received = exchange.receive(
            peerRank(o.getAxis(), o.getPeer()), rank, o.getTag(), microbatch);
        if (!received)
          return aborted();
        return std::move(*received);
      })
      .Case([&](dist::AxisIndexOp o) -> FailureOr<Tensor> {
        auto type = cast<RankedTensorType>(o.getType());
        Tensor out = Tensor::zeros(*dtypeOf(type.getElementType()), {});
        out.setInt(0, positionAlong(mesh, coords, namesOf(o.getAxes())).first);
        return out;
      })
      .Default([&](Operation *other) -> FailureOr<Tensor> {
        return other->emitError("reference evaluator: '")
               << other->getName() << "' is not evaluated";
      });
}

/// The sharding of argument or result `index` of `function`, if any.
dist::ShardingAttr shardingOf(func::FuncOp function, unsigned index,
                              bool isResult) {
  StringRef name = dist::DistDialect::getShardingAttrName();
  return isResult
             ? function.getResultAttrOfType<dist::ShardingAttr>(index, name)
             : function.getArgAttrOfType<dist::ShardingAttr>(index, name);
}

/// `type` with every dimension `sharding` splits multiplied by the size of
/// its axes: the global type of a local one.
RankedTensorType globalType(RankedTensorType type, dist::ShardingAttr sharding,
                            dist::MeshOp mesh) {
  SmallVector<int64_t> shape(type.getShape());
  for (unsigned dim = 0; sharding && dim < shape.size(); ++dim)
    for (StringRef axis : sharding.axesOf(dim))
      shape[dim] *= mesh.sizeOf(axis).value_or(1);
  return RankedTensorType::get(shape, type.getElementType());
}

/// The piece of `global` the rank at `coords` holds under `sharding`: split
/// dimensions, major axis first.
Tensor localPiece(const Tensor &global, dist::ShardingAttr sharding,
                  dist::MeshOp mesh, ArrayRef<int64_t> coords) {
  Tensor local = global;
  for (unsigned dim = 0; sharding && dim < sharding.getDims().size(); ++dim) {
    SmallVector<StringRef> axes = sharding.axesOf(dim);
    if (axes.empty())
      continue;
    auto [position, size] = positionAlong(mesh, coords, axes);
    local = blockChunkOf(local, dim, position, size, sharding.blocksOf(dim));
  }
  return local;
}

/// The global tensor from the pieces that ranks at `pieceCoords` hold
/// under `sharding` (each distinct piece at least once).
Tensor assemble(std::vector<Tensor> pieces,
                std::vector<std::vector<int64_t>> pieceCoords,
                dist::ShardingAttr sharding, dist::MeshOp mesh) {
  int64_t rank = int64_t(pieces.front().shape.size());
  // Concatenate dimension by dimension, innermost split first: the ranks
  // of one group along a dimension's axes hold consecutive chunks.
  for (int64_t dim = rank - 1; sharding && dim >= 0; --dim) {
    SmallVector<StringRef> axes = sharding.axesOf(dim);
    if (axes.empty())
      continue;
    // Merge the pieces that differ only along this dimension's axes.
    std::vector<Tensor> merged;
    std::vector<std::vector<int64_t>> mergedCoords;
    SmallVector<int64_t> named;
    for (StringRef axis : axes)
      named.push_back(axisIndex(mesh, axis));
    std::vector<bool> used(pieces.size(), false);
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (used[i])
        continue;
      int64_t size = positionAlong(mesh, pieceCoords[i], axes).second;
      std::vector<Tensor> ordered(size);
      for (size_t j = i; j < pieces.size(); ++j) {
        bool same = true;
        for (size_t d = 0; d < pieceCoords[j].size(); ++d)
          if (!llvm::is_contained(named, int64_t(d)) &&
              pieceCoords[j][d] != pieceCoords[i][d])
            same = false;
        if (!same)
          continue;
        used[j] = true;
        ordered[positionAlong(mesh, pieceCoords[j], axes).first] = pieces[j];
      }
      merged.push_back(blockConcatenate(ordered, dim, sharding.blocksOf(dim)));
      std::vector<int64_t> coordinates = pieceCoords[i];
      for (int64_t d : named)
        coordinates[d] = 0;
      mergedCoords.push_back(coordinates);
    }
    pieces = std::move(merged);
    pieceCoords = std::move(mergedCoords);
  }
  // What remains is replicated: every piece is the same; the first.
  return pieces.front();
}

/// Runs one thread per rank; on failure the others are stopped.
LogicalResult runRanks(int64_t ranks, Exchange &exchange,
                       llvm::function_ref<LogicalResult(int64_t)> body) {
  std::vector<char> ok(ranks, 0);
  // (MLIR's diagnostic engine takes a lock: ranks may report at once.)
  auto run = [&](int64_t rank) {
    ok[rank] = succeeded(body(rank));
    if (!ok[rank])
      exchange.abort();
  };
  std::vector<std::thread> threads;
  for (int64_t rank = 1; rank < ranks; ++rank)
    threads.emplace_back(run, rank);
  run(0);
  for (std::thread &thread : threads)
    thread.join();
  return success(llvm::all_of(ok, [](char value) { return value; }));
}

} // namespace

bool mlir::trn::eval::isSpmd(func::FuncOp function) {
  return function->hasAttr(dist::DistDialect::getSpmdAttrName()) &&
         meshOf(function);
}

RankedTensorType mlir::trn::eval::globalTypeOf(func::FuncOp function,
                                               unsigned index, bool isResult) {
  auto type =
      cast<RankedTensorType>(isResult ? function.getResultTypes()[index]
                                      : function.getArgumentTypes()[index]);
  dist::MeshOp mesh = meshOf(function);
  if (!mesh || !isSpmd(function))
    return type;
  return globalType(type, shardingOf(function, index, isResult), mesh);
}

FailureOr<std::vector<Tensor>>
mlir::trn::eval::evaluateSpmd(func::FuncOp function,
                              ArrayRef<Tensor> globalInputs) {
  dist::MeshOp mesh = meshOf(function);
  if (!mesh || !isSpmd(function))
    return evaluate(function, globalInputs);
  int64_t ranks = mesh.numDevices();
  if (globalInputs.size() != function.getNumArguments())
    return function.emitError("reference evaluator: got ")
           << globalInputs.size() << " inputs for "
           << function.getNumArguments() << " arguments";

  Exchange exchange;
  std::vector<std::vector<Tensor>> outputs(ranks);
  if (failed(runRanks(ranks, exchange, [&](int64_t rank) -> LogicalResult {
        std::vector<int64_t> coords = coordinatesOf(mesh, rank);
        std::vector<Tensor> inputs;
        for (auto [index, global] : llvm::enumerate(globalInputs))
          inputs.push_back(localPiece(
              global, shardingOf(function, index, false), mesh, coords));
        RankDistOps ops(mesh, rank, exchange);
        Interpreter interpreter(&ops);
        FailureOr<std::vector<Tensor>> result =
            interpreter.run(function, inputs);
        if (failed(result))
          return failure();
        outputs[rank] = std::move(*result);
        return success();
      })))
    return failure();

  std::vector<Tensor> globals;
  for (unsigned index = 0; index < function.getNumResults(); ++index) {
    std::vector<Tensor> pieces;
    std::vector<std::vector<int64_t>> pieceCoords;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      pieces.push_back(outputs[rank][index]);
      pieceCoords.push_back(coordinatesOf(mesh, rank));
    }
    globals.push_back(assemble(std::move(pieces), std::move(pieceCoords),
                               shardingOf(function, index, true), mesh));
  }
  return globals;
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

RankedTensorType mlir::trn::eval::pipelineGlobalType(dist::PipelineOp pipeline,
                                                     unsigned index,
                                                     bool isResult) {
  FunctionType type = pipeline.getFunctionType();
  auto local = cast<RankedTensorType>(isResult ? type.getResult(index)
                                               : type.getInput(index));
  std::optional<ArrayAttr> attrs =
      isResult ? pipeline.getResAttrs() : pipeline.getArgAttrs();
  dist::ShardingAttr sharding;
  if (attrs)
    sharding = cast<DictionaryAttr>((*attrs)[index])
                   .getAs<dist::ShardingAttr>(
                       dist::DistDialect::getShardingAttrName());
  auto mesh = SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(
      pipeline, pipeline.getMeshAttr());
  return mesh ? globalType(local, sharding, mesh) : local;
}

FailureOr<std::vector<Tensor>>
mlir::trn::eval::evaluatePipeline(dist::PipelineOp pipeline,
                                  ArrayRef<Tensor> globalInputs) {
  auto module = pipeline->getParentOfType<ModuleOp>();
  auto mesh = SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(
      pipeline, pipeline.getMeshAttr());
  if (!module || !mesh)
    return pipeline.emitError("reference evaluator: the pipeline's mesh is "
                              "missing");
  FunctionType stepType = pipeline.getFunctionType();
  if (globalInputs.size() != stepType.getNumInputs())
    return pipeline.emitError("reference evaluator: got ")
           << globalInputs.size() << " inputs for " << stepType.getNumInputs()
           << " arguments";
  trnrt::PipelineSchedule schedule;
  if (!trnrt::parsePipelineSchedule(pipeline.getSchedule().str(), schedule))
    return pipeline.emitError("reference evaluator: unknown schedule");
  const int64_t stages = *mesh.sizeOf(pipeline.getAxis());
  const int64_t microbatches = pipeline.getMicrobatches();
  const int64_t stageAxis = axisIndex(mesh, pipeline.getAxis());

  // The fragments by stage and phase.
  std::vector<std::array<func::FuncOp, 3>> fragments(stages);
  for (func::FuncOp function : module.getOps<func::FuncOp>()) {
    auto owner = function->getAttrOfType<FlatSymbolRefAttr>(
        dist::DistDialect::getPipelineAttrName());
    if (!owner || owner.getValue() != pipeline.getSymName())
      continue;
    auto stage = function->getAttrOfType<IntegerAttr>(
        dist::DistDialect::getStageAttrName());
    auto phase = function->getAttrOfType<StringAttr>(
        dist::DistDialect::getPhaseAttrName());
    if (!stage || !phase || stage.getInt() >= stages)
      return function.emitError("reference evaluator: a pipeline fragment "
                                "needs dist.stage (below ")
             << stages << ") and dist.phase";
    int slot = phase.getValue() == "forward"    ? 0
               : phase.getValue() == "backward" ? 1
                                                : 2;
    fragments[stage.getInt()][slot] = function;
  }
  for (int64_t s = 0; s < stages; ++s)
    for (func::FuncOp function : fragments[s])
      if (!function)
        return pipeline.emitError("reference evaluator: stage ")
               << s << " lacks a fragment";
  auto argSharding = [&](unsigned index) {
    std::optional<ArrayAttr> attrs = pipeline.getArgAttrs();
    return attrs ? cast<DictionaryAttr>((*attrs)[index])
                       .getAs<dist::ShardingAttr>(
                           dist::DistDialect::getShardingAttrName())
                 : dist::ShardingAttr();
  };

  int64_t ranks = mesh.numDevices();
  Exchange exchange;
  // Per rank: its step results by index.
  std::vector<std::map<int64_t, Tensor>> results(ranks);
  if (failed(runRanks(ranks, exchange, [&](int64_t rank) -> LogicalResult {
        std::vector<int64_t> coords = coordinatesOf(mesh, rank);
        const int64_t stage = coords[stageAxis];
        RankDistOps ops(mesh, rank, exchange);
        std::map<int64_t, Tensor> local; // this rank's piece of each input
        std::map<int64_t, Tensor> accumulators;
        std::map<std::pair<int64_t, int64_t>, Tensor> stash; // (m, index)
        auto run = [&](func::FuncOp function,
                       int64_t microbatch) -> LogicalResult {
          std::vector<Tensor> inputs;
          for (unsigned i = 0; i < function.getNumArguments(); ++i) {
            auto port = function.getArgAttrOfType<dist::PortAttr>(
                i, dist::DistDialect::getPortAttrName());
            auto type = cast<RankedTensorType>(function.getArgumentTypes()[i]);
            if (!port)
              return function.emitError("reference evaluator: argument ")
                     << i << " has no dist.port";
            StringRef kind = port.getKind();
            int64_t index = port.getIndex();
            if (kind == "argument" || kind == "microbatch") {
              if (index >= int64_t(globalInputs.size()))
                return function.emitError("reference evaluator: argument ")
                       << i << " names step argument " << index;
              if (!local.count(index))
                local[index] = localPiece(globalInputs[index],
                                          argSharding(index), mesh, coords);
              inputs.push_back(
                  kind == "argument"
                      ? local[index]
                      : chunkOf(local[index], 0, microbatch, microbatches));
            } else if (kind == "stash") {
              auto it = stash.find({microbatch, index});
              if (it == stash.end())
                return function.emitError("reference evaluator: stash ")
                       << index << " of microbatch " << microbatch
                       << " was never filled";
              inputs.push_back(std::move(it->second));
              stash.erase(it);
            } else {
              auto it = accumulators.find(index);
              inputs.push_back(
                  it != accumulators.end()
                      ? it->second
                      : Tensor::zeros(*dtypeOf(type.getElementType()),
                                      type.getShape()));
            }
          }
          ops.microbatch = microbatch;
          Interpreter interpreter(&ops);
          FailureOr<std::vector<Tensor>> outputs =
              interpreter.run(function, inputs);
          if (failed(outputs))
            return failure();
          for (unsigned i = 0; i < function.getNumResults(); ++i) {
            auto port = function.getResultAttrOfType<dist::PortAttr>(
                i, dist::DistDialect::getPortAttrName());
            if (!port)
              return function.emitError("reference evaluator: result ")
                     << i << " has no dist.port";
            Tensor &value = (*outputs)[i];
            if (port.getKind() == "stash")
              stash[{microbatch, port.getIndex()}] = std::move(value);
            else if (port.getKind() == "accumulator")
              accumulators[port.getIndex()] = std::move(value);
            else
              results[rank][port.getIndex()] = std::move(value);
          }
          return success();
        };
        for (const trnrt::PipelineAction &action :
             trnrt::pipelineStageOrder(schedule, stages, stage, microbatches))
          if (failed(run(fragments[stage][action.backward ? 1 : 0],
                         action.microbatch)))
            return failure();
        return run(fragments[stage][2], 0);
      })))
    return failure();

  // Each result from the ranks of the first stage that returns it.
  std::vector<Tensor> globals;
  for (unsigned index = 0; index < stepType.getNumResults(); ++index) {
    std::vector<Tensor> pieces;
    std::vector<std::vector<int64_t>> pieceCoords;
    std::optional<int64_t> from;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      auto it = results[rank].find(index);
      if (it == results[rank].end())
        continue;
      std::vector<int64_t> coords = coordinatesOf(mesh, rank);
      if (!from)
        from = coords[stageAxis];
      if (coords[stageAxis] != *from)
        continue;
      pieces.push_back(it->second);
      pieceCoords.push_back(coords);
    }
    if (pieces.empty())
      return pipeline.emitError("reference evaluator: no fragment returns "
                                "result ")
             << index;
    dist::ShardingAttr sharding;
    if (std::optional<ArrayAttr> attrs = pipeline.getResAttrs())
      sharding = cast<DictionaryAttr>((*attrs)[index])
                     .getAs<dist::ShardingAttr>(
                         dist::DistDialect::getShardingAttrName());
    globals.push_back(
        assemble(std::move(pieces), std::move(pieceCoords), sharding, mesh));
  }
  return globals;
}
