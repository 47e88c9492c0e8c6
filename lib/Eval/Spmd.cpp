//===- Spmd.cpp - the reference evaluator over every rank of a mesh -------===//
//
// Every rank runs the same program in its own thread; a collective is a
// world-wide exchange (every rank executes every collective in the same
// order, so all of them meet at each one), after which each rank combines
// the tensors of its replica group: the ranks that differ from it only along
// the collective's axes, ordered by their index along those axes (the first
// axis the most major).
//
//===----------------------------------------------------------------------===//

#include "trn/Eval/Spmd.h"

#include "Interpreter.h"

#include "trn/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <condition_variable>
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

/// A barrier-based exchange among every rank, abortable when one fails.
class Exchange {
public:
  explicit Exchange(int64_t ranks) : ranks(ranks), slots(ranks) {}

  /// Every rank's `mine`, once all ranks called; std::nullopt if aborted.
  std::optional<std::vector<Tensor>> all(int64_t rank, const Tensor &mine) {
    std::unique_lock<std::mutex> lock(mutex);
    slots[rank] = &mine;
    if (!barrier(lock))
      return std::nullopt;
    std::vector<Tensor> everyone;
    for (const Tensor *slot : slots)
      everyone.push_back(*slot);
    // The slots are reused by the next collective only after every rank
    // has copied them.
    if (!barrier(lock))
      return std::nullopt;
    return everyone;
  }
  void abort() {
    std::lock_guard<std::mutex> lock(mutex);
    aborted = true;
    changed.notify_all();
  }

private:
  bool barrier(std::unique_lock<std::mutex> &lock) {
    uint64_t generation = this->generation;
    if (++arrived == ranks) {
      arrived = 0;
      ++this->generation;
      changed.notify_all();
    } else {
      changed.wait(lock,
                   [&] { return this->generation != generation || aborted; });
    }
    return !aborted;
  }

  int64_t ranks;
  std::vector<const Tensor *> slots;
  std::mutex mutex;
  std::condition_variable changed;
  int64_t arrived = 0;
  uint64_t generation = 0;
  bool aborted = false;
};

class RankDistOps : public DistOpEvaluator {
public:
  RankDistOps(dist::MeshOp mesh, int64_t rank, Exchange &exchange)
      : mesh(mesh), rank(rank), coords(coordinatesOf(mesh, rank)),
        exchange(exchange) {}

  FailureOr<Tensor> evaluate(Operation *op,
                             ArrayRef<const Tensor *> operands) override;

private:
  /// The tensors of this rank's group along `axes`, in group order, and
  /// this rank's position in it.
  std::optional<std::vector<Tensor>> group(const Tensor &mine, ArrayAttr axes,
                                           int64_t &position);
  Tensor reduce(ArrayRef<Tensor> tensors, dist::ReductionKind kind);

  dist::MeshOp mesh;
  int64_t rank;
  std::vector<int64_t> coords;
  Exchange &exchange;
};

std::optional<std::vector<Tensor>>
RankDistOps::group(const Tensor &mine, ArrayAttr axes, int64_t &position) {
  std::optional<std::vector<Tensor>> everyone = exchange.all(rank, mine);
  if (!everyone)
    return std::nullopt;
  SmallVector<StringRef> names = namesOf(axes);
  int64_t size;
  std::tie(position, size) = positionAlong(mesh, coords, names);
  std::vector<Tensor> members(size);
  SmallVector<int64_t> named;
  for (StringRef name : names)
    named.push_back(axisIndex(mesh, name));
  for (int64_t other = 0; other < int64_t(everyone->size()); ++other) {
    std::vector<int64_t> theirs = coordinatesOf(mesh, other);
    bool sameGroup = true;
    for (size_t d = 0; d < theirs.size(); ++d)
      if (!llvm::is_contained(named, int64_t(d)) && theirs[d] != coords[d])
        sameGroup = false;
    if (sameGroup)
      members[positionAlong(mesh, theirs, names).first] =
          std::move((*everyone)[other]);
  }
  return members;
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

/// The axes that split each dimension of argument or result `index`.
SmallVector<SmallVector<StringRef>> splitAxes(func::FuncOp function,
                                              unsigned index, bool isResult) {
  StringRef name = dist::DistDialect::getShardingAttrName();
  auto attr =
      isResult ? function.getResultAttrOfType<dist::ShardingAttr>(index, name)
               : function.getArgAttrOfType<dist::ShardingAttr>(index, name);
  auto type =
      cast<RankedTensorType>(isResult ? function.getResultTypes()[index]
                                      : function.getArgumentTypes()[index]);
  SmallVector<SmallVector<StringRef>> dims(type.getRank());
  if (attr)
    for (unsigned d = 0; d < dims.size(); ++d)
      dims[d] = attr.axesOf(d);
  return dims;
}

/// How many blocks each dimension of argument or result `index` is split
/// in (1: contiguously).
SmallVector<int64_t> splitBlocks(func::FuncOp function, unsigned index,
                                 bool isResult) {
  StringRef name = dist::DistDialect::getShardingAttrName();
  auto attr =
      isResult ? function.getResultAttrOfType<dist::ShardingAttr>(index, name)
               : function.getArgAttrOfType<dist::ShardingAttr>(index, name);
  auto type =
      cast<RankedTensorType>(isResult ? function.getResultTypes()[index]
                                      : function.getArgumentTypes()[index]);
  SmallVector<int64_t> blocks(type.getRank(), 1);
  if (attr)
    for (unsigned d = 0; d < blocks.size(); ++d)
      blocks[d] = attr.blocksOf(d);
  return blocks;
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
  SmallVector<int64_t> shape(type.getShape());
  for (auto [dim, axes] : llvm::enumerate(splitAxes(function, index, isResult)))
    for (StringRef axis : axes)
      shape[dim] *= mesh.sizeOf(axis).value_or(1);
  return RankedTensorType::get(shape, type.getElementType());
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

  // Each rank's shard of each input: split dimensions, major axis first.
  std::vector<std::vector<Tensor>> inputs(ranks);
  for (int64_t rank = 0; rank < ranks; ++rank) {
    std::vector<int64_t> coords = coordinatesOf(mesh, rank);
    for (auto [index, global] : llvm::enumerate(globalInputs)) {
      Tensor local = global;
      SmallVector<int64_t> blocks = splitBlocks(function, index, false);
      for (auto [dim, axes] :
           llvm::enumerate(splitAxes(function, index, false))) {
        if (axes.empty())
          continue;
        auto [position, size] = positionAlong(mesh, coords, axes);
        local = blockChunkOf(local, dim, position, size, blocks[dim]);
      }
      inputs[rank].push_back(std::move(local));
    }
  }

  Exchange exchange(ranks);
  std::vector<FailureOr<std::vector<Tensor>>> outputs(
      ranks, FailureOr<std::vector<Tensor>>(failure()));
  // (MLIR's diagnostic engine takes a lock: ranks may report at once.)
  auto runRank = [&](int64_t rank) {
    RankDistOps ops(mesh, rank, exchange);
    Interpreter interpreter(&ops);
    FailureOr<std::vector<Tensor>> result =
        interpreter.run(function, inputs[rank]);
    if (failed(result))
      exchange.abort();
    outputs[rank] = std::move(result);
  };
  std::vector<std::thread> threads;
  for (int64_t rank = 1; rank < ranks; ++rank)
    threads.emplace_back(runRank, rank);
  runRank(0);
  for (std::thread &thread : threads)
    thread.join();
  for (const auto &output : outputs)
    if (failed(output))
      return failure();

  // Assemble each result from the ranks that hold its distinct pieces.
  std::vector<Tensor> globals;
  for (unsigned index = 0; index < function.getNumResults(); ++index) {
    SmallVector<SmallVector<StringRef>> dims = splitAxes(function, index, true);
    SmallVector<int64_t> blocks = splitBlocks(function, index, true);
    // Concatenate dimension by dimension, innermost split first: the ranks
    // of one group along a dimension's axes hold consecutive chunks.
    std::vector<Tensor> pieces;
    std::vector<std::vector<int64_t>> pieceCoords;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      pieces.push_back((*outputs[rank])[index]);
      pieceCoords.push_back(coordinatesOf(mesh, rank));
    }
    for (int64_t dim = int64_t(dims.size()) - 1; dim >= 0; --dim) {
      if (dims[dim].empty())
        continue;
      // Merge the pieces that differ only along this dimension's axes.
      std::vector<Tensor> merged;
      std::vector<std::vector<int64_t>> mergedCoords;
      SmallVector<int64_t> named;
      for (StringRef axis : dims[dim])
        named.push_back(axisIndex(mesh, axis));
      std::vector<bool> used(pieces.size(), false);
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (used[i])
          continue;
        auto [unused, size] = positionAlong(mesh, pieceCoords[i], dims[dim]);
        (void)unused;
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
          ordered[positionAlong(mesh, pieceCoords[j], dims[dim]).first] =
              pieces[j];
        }
        merged.push_back(blockConcatenate(ordered, dim, blocks[dim]));
        std::vector<int64_t> coordinates = pieceCoords[i];
        for (int64_t d : named)
          coordinates[d] = 0;
        mergedCoords.push_back(coordinates);
      }
      pieces = std::move(merged);
      pieceCoords = std::move(mergedCoords);
    }
    // What remains is replicated: every piece is the same; rank 0's.
    globals.push_back(pieces.front());
  }
  return globals;
}
