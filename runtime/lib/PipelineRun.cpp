//===- PipelineRun.cpp - running a pipelined step on every rank -----------===//

#include "trnrt/PipelineRun.h"

#include "trnrt/Collectives.h"
#include "trnrt/Simulator.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <string_view>

namespace trnrt {

namespace {

int phaseIndex(const std::string &phase) {
  return phase == "forward" ? 0 : phase == "backward" ? 1 : 2;
}

uint64_t bytesOf(DType dtype, const std::vector<int64_t> &shape) {
  uint64_t count = 1;
  for (int64_t dim : shape)
    count *= uint64_t(dim);
  return count * dtypeSizeInBytes(dtype);
}

/// Records what a port says of the step's argument or result `index`.
bool note(std::vector<PipelineValue> &values, int64_t index,
          const HbmTensor &tensor, std::vector<int64_t> shape, const char *what,
          std::string &error) {
  if (index < 0 || index > (int64_t(1) << 20)) {
    error = std::string(what) + " index " + std::to_string(index) +
            " is out of range";
    return false;
  }
  if (size_t(index) >= values.size())
    values.resize(size_t(index) + 1);
  PipelineValue &value = values[size_t(index)];
  if (value.present && (value.dtype != tensor.dtype || value.shape != shape)) {
    error = std::string(what) + " " + std::to_string(index) + " ('" +
            tensor.name + "') has different types in different fragments";
    return false;
  }
  value.present = true;
  // The argument's own name, also when only its every-microbatch input
  // names it.
  std::string_view name = tensor.name, suffix = kEveryMicrobatchSuffix;
  if (name.size() > suffix.size() &&
      name.substr(name.size() - suffix.size()) == suffix)
    name.remove_suffix(suffix.size());
  value.name = std::string(name);
  value.dtype = tensor.dtype;
  value.shape = std::move(shape);
  return true;
}

/// What a timing-only fragment run did, as the rank's schedule uses it: its
/// figures and its transfers.
struct FragmentTimeline {
  double deviceTimeNs = 0, collectiveWaitNs = 0, idleNs = 0;
  std::array<double, kNumInstructionKinds> kindNs{};
  uint64_t matmulFlops = 0, collectives = 0;
  std::vector<TransferRecord> transfers;
  bool recorded = false;
};

/// "send tag 3 of microbatch 5 to rank 64", as the simulator says it.
std::string transferName(const TransferRecord &transfer, int64_t microbatch) {
  return std::string(transfer.send ? "send" : "recv") + " tag " +
         std::to_string(transfer.tag) + " of microbatch " +
         std::to_string(microbatch) +
         (transfer.send ? " to rank " : " from rank ") +
         std::to_string(transfer.peer);
}

uint64_t transferKey(int64_t tag, int64_t microbatch) {
  return (uint64_t(tag) << 24) | uint64_t(microbatch);
}

/// A rank's communicator with some of a fragment's transfers already done
/// (by a replay that stopped at a receive arriving otherwise than recorded):
/// the simulated run that follows posts the same sends again and receives
/// the same messages, which this answers without the peer.
class ResumingCommunicator : public Communicator {
public:
  explicit ResumingCommunicator(Communicator &inner) : inner(inner) {}
  int rank() const override { return inner.rank(); }
  int size() const override { return inner.size(); }
  bool exchange(const CollectiveCall &call, const std::vector<uint8_t> &mine,
                double startNs, std::vector<std::vector<uint8_t>> &theirs,
                std::vector<double> &startsNs, std::string &error) override {
    return inner.exchange(call, mine, startNs, theirs, startsNs, error);
  }
  bool send(int to, uint64_t key, const std::vector<uint8_t> &bytes,
            double sentNs, const std::string &description,
            std::string &error) override {
    if (posted.erase({to, key}))
      return true;
    return inner.send(to, key, bytes, sentNs, description, error);
  }
  bool receive(int from, uint64_t key, std::vector<uint8_t> &bytes,
               double &sentNs, const std::string &description,
               std::string &error) override {
    auto it = received.find({from, key});
    if (it == received.end())
      return inner.receive(from, key, bytes, sentNs, description, error);
    bytes.clear();
    sentNs = it->second;
    received.erase(it);
    return true;
  }
  void abort(const std::string &message) override { inner.abort(message); }
  void stall() override { inner.stall(); }
  bool mirrorsCollectives() const override {
    return inner.mirrorsCollectives();
  }

  std::set<std::pair<int, uint64_t>> posted;
  std::map<std::pair<int, uint64_t>, double> received;

private:
  Communicator &inner;
};

} // namespace

bool bindPipeline(const std::vector<StageArtifact> &stages,
                  const std::vector<MeshAxis> &requested,
                  BoundPipeline &pipeline, std::string &error) {
  pipeline = BoundPipeline();
  const Program *first = nullptr;
  for (const StageArtifact &stage : stages)
    for (const Program &program : stage.fragments) {
      const PipelineFragment &p = program.pipeline;
      if (!p.isFragment()) {
        error = "an artifact is not a pipeline fragment (compile the step "
                "with trn-cc --pp)";
        return false;
      }
      if (!first) {
        first = &program;
        pipeline.step = p.step;
        pipeline.microbatches = p.microbatches;
        pipeline.axis = p.axis;
        parsePipelineSchedule(p.schedule, pipeline.schedule);
        pipeline.fragments.assign(size_t(p.stages),
                                  {nullptr, nullptr, nullptr});
      }
      const PipelineFragment &q = first->pipeline;
      if (p.step != q.step || p.stages != q.stages ||
          p.microbatches != q.microbatches || p.schedule != q.schedule ||
          p.axis != q.axis) {
        error = "the artifacts are fragments of different pipelines ('" +
                q.step + "' of " + std::to_string(q.stages) + " stages and '" +
                p.step + "' of " + std::to_string(p.stages) + ")";
        return false;
      }
      const Program *&slot =
          pipeline.fragments[size_t(p.stage)][size_t(phaseIndex(p.phase))];
      if (slot) {
        error = "stage " + std::to_string(p.stage) + "'s " + p.phase +
                " fragment is given twice";
        return false;
      }
      slot = &program;
    }
  if (!first) {
    error = "no pipeline stage given";
    return false;
  }
  for (size_t s = 0; s < pipeline.fragments.size(); ++s)
    for (int phase = 0; phase < 3; ++phase)
      if (!pipeline.fragments[s][size_t(phase)]) {
        static const char *const kNames[] = {"forward", "backward", "update"};
        error = "stage " + std::to_string(s) + "'s " + kNames[phase] +
                " fragment is missing: give one artifact per stage (" +
                std::to_string(pipeline.fragments.size()) + " stages)";
        return false;
      }
  // Every fragment binds the mesh alike.
  for (const auto &stage : pipeline.fragments)
    for (const Program *program : stage) {
      std::vector<MeshAxis> bound;
      if (!bindMesh(*program, requested, bound, error))
        return false;
      if (pipeline.bound.empty()) {
        pipeline.bound = bound;
        continue;
      }
      for (size_t a = 0; a < bound.size(); ++a)
        if (bound.size() != pipeline.bound.size() ||
            bound[a].size != pipeline.bound[a].size) {
          error = "the fragments' meshes differ";
          return false;
        }
    }
  // The step's signature, from the ports.
  for (const auto &stage : pipeline.fragments)
    for (const Program *program : stage)
      for (const HbmTensor &tensor : program->tensors) {
        std::vector<int64_t> shape = globalShape(tensor, pipeline.bound);
        switch (tensor.port.kind) {
        case TensorPort::Kind::Microbatch:
          if (shape.empty()) {
            error = "microbatch input '" + tensor.name + "' has no dimension";
            return false;
          }
          shape[0] *= pipeline.microbatches;
          [[fallthrough]];
        case TensorPort::Kind::Argument:
          if (!note(pipeline.arguments, tensor.port.index, tensor, shape,
                    "argument", error))
            return false;
          break;
        case TensorPort::Kind::Result:
          if (!note(pipeline.results, tensor.port.index, tensor, shape,
                    "result", error))
            return false;
          break;
        default:
          break;
        }
      }
  return true;
}

bool runPipelineRank(const Target &target, const BoundPipeline &pipeline,
                     const std::vector<std::vector<uint8_t>> &globalInputs,
                     Communicator &communicator, const MeshRunOptions &options,
                     PipelineRankRun &run, std::string &error) {
  const int rank = communicator.rank();
  const std::vector<int64_t> coords = rankCoordinates(pipeline.bound, rank);
  const int64_t stage = coords[pipeline.axis];
  const int64_t microbatches = pipeline.microbatches;
  static const char *const kPhases[] = {"forward", "backward", "update"};
  auto failWith = [&](const std::string &message) {
    error = "rank " + std::to_string(rank) + " (stage " +
            std::to_string(stage) + "): " + message;
    communicator.abort(error);
    return false;
  };
  CollectiveContext context = options.rankContext(pipeline.bound, communicator);
  SimulatorOptions simulatorOptions = options.simulator;
  simulatorOptions.collectives = &context;
  std::vector<std::unique_ptr<Simulator>> simulators;
  std::string problem;
  for (int phase = 0; phase < 3; ++phase) {
    simulators.push_back(std::make_unique<Simulator>(target, simulatorOptions));
    if (!simulators.back()->load(*pipeline.fragments[size_t(stage)][phase],
                                 problem))
      return failWith(std::string(kPhases[phase]) + ": " + problem);
  }

  // This rank's piece of each step argument it reads (whole microbatches).
  std::map<int64_t, std::vector<uint8_t>> pieces;
  std::map<std::pair<int64_t, int64_t>, std::vector<uint8_t>> stash;
  std::map<int64_t, std::vector<uint8_t>> accumulators;
  run = PipelineRankRun();
  run.rank = rank;
  double clock = 0;
  const bool values = !options.simulator.timingOnly;
  // Timing only, a fragment whose receives arrive as in its last simulated
  // run repeats that run's timeline to the bit (the simulator is
  // deterministic and its times start at 0 in every run): the recorded
  // sends are posted again at their times on this run's clock and the
  // figures reused. A 1F1B schedule's steady state is such runs.
  FragmentTimeline timelines[3];
  const bool reuse =
      !values && options.reuseTimelines && communicator.mirrorsCollectives();
  auto replay = [&](const FragmentTimeline &timeline, int64_t microbatch,
                    ResumingCommunicator &resume, bool &matched) -> bool {
    matched = false;
    std::string problem;
    for (const TransferRecord &transfer : timeline.transfers) {
      const uint64_t key = transferKey(transfer.tag, microbatch);
      const std::string what = transferName(transfer, microbatch);
      if (transfer.send) {
        if (!communicator.send(transfer.peer, key, {}, transfer.sentNs + clock,
                               what, problem))
          return failWith(problem);
        resume.posted.insert({transfer.peer, key});
        continue;
      }
      std::vector<uint8_t> bytes;
      double sentNs = 0;
      if (!communicator.receive(transfer.peer, key, bytes, sentNs, what,
                                problem))
        return failWith(problem);
      resume.received[{transfer.peer, key}] = sentNs;
      // The same arrival, or one that finds the receive ready as the
      // recorded one did (it then neither waits nor lasts).
      const double sent = sentNs - clock;
      const bool same =
          sent == transfer.sentNs ||
          (transfer.sentNs + transfer.linkNs <= transfer.startNs &&
           sent + transfer.linkNs <= transfer.startNs);
      if (!same)
        return true;
    }
    matched = true;
    return true;
  };

  auto runFragment = [&](int phase, int64_t microbatch) -> bool {
    const Program &program = *pipeline.fragments[size_t(stage)][phase];
    Simulator &simulator = *simulators[size_t(phase)];
    const std::string where = std::string(kPhases[phase]) + " of microbatch " +
                              std::to_string(microbatch);
    for (const HbmTensor &tensor : program.tensors) {
      if (tensor.kind != HbmTensor::Kind::Input || !values)
        continue;
      const uint64_t size = bytesOf(tensor.dtype, tensor.shape);
      const int64_t index = tensor.port.index;
      std::vector<uint8_t> local;
      switch (tensor.port.kind) {
      case TensorPort::Kind::Argument:
      case TensorPort::Kind::Microbatch: {
        const bool split = tensor.port.kind == TensorPort::Kind::Microbatch;
        if (size_t(index) >= globalInputs.size())
          return failWith(where + ": no value for argument " +
                          std::to_string(index) + " ('" + tensor.name + "')");
        auto it = pieces.find(index);
        if (it == pieces.end()) {
          // The rank's piece of the whole argument: for a per-example one,
          // every microbatch of its replica.
          HbmTensor whole = tensor;
          if (split)
            whole.shape[0] *= microbatches;
          const std::vector<uint8_t> &global = globalInputs[size_t(index)];
          if (global.size() !=
              bytesOf(whole.dtype, globalShape(whole, pipeline.bound)))
            return failWith("argument " + std::to_string(index) + " ('" +
                            tensor.name + "') has " +
                            std::to_string(global.size()) +
                            " bytes, not its global shape's");
          std::vector<uint8_t> piece(bytesOf(whole.dtype, whole.shape));
          copyShard(whole, pipeline.bound, rank,
                    const_cast<uint8_t *>(global.data()), piece.data(),
                    /*toLocal=*/true);
          it = pieces.emplace(index, std::move(piece)).first;
        }
        if (split)
          local.assign(it->second.begin() + microbatch * size,
                       it->second.begin() + (microbatch + 1) * size);
        else
          local = it->second;
        break;
      }
      case TensorPort::Kind::Stash: {
        auto it = stash.find({microbatch, index});
        if (it == stash.end())
          return failWith(where + ": stash " + std::to_string(index) +
                          " was never filled (the stage's fragments do not "
                          "match)");
        local = std::move(it->second);
        stash.erase(it);
        break;
      }
      case TensorPort::Kind::Accumulator: {
        auto it = accumulators.find(index);
        local = it != accumulators.end() ? it->second
                                         : std::vector<uint8_t>(size, 0);
        break;
      }
      default:
        return failWith(where + ": input '" + tensor.name + "' has no port");
      }
      if (local.size() != size)
        return failWith(where + ": input '" + tensor.name + "' gets " +
                        std::to_string(local.size()) + " bytes, not " +
                        std::to_string(size));
      if (!simulator.writeTensorBytes(tensor.name, local.data(), local.size(),
                                      problem))
        return failWith(where + ": " + problem);
    }
    context.microbatch = microbatch;
    context.clockOffsetNs = clock;
    FragmentTimeline &timeline = timelines[phase];
    ResumingCommunicator resume(communicator);
    bool replayed = false;
    if (reuse && timeline.recorded &&
        !replay(timeline, microbatch, resume, replayed))
      return false;
    if (replayed) {
      context.sequence += timeline.collectives;
      ++run.fragmentsReplayed;
    } else {
      SimulationStats stats;
      context.communicator = &resume;
      const bool ok = simulator.run(stats, problem);
      context.communicator = &communicator;
      if (!ok)
        return failWith(where + ": " + problem);
      timeline.deviceTimeNs = stats.deviceTimeNs;
      timeline.collectiveWaitNs = stats.collectiveWaitNs;
      timeline.kindNs = stats.kindNs;
      timeline.idleNs = stats.idleNs;
      timeline.matmulFlops = stats.matmulFlops;
      timeline.collectives = stats.collectives;
      timeline.transfers = std::move(stats.transfers);
      timeline.recorded = true;
      if (options.simulator.recordInstructions) {
        run.profiled[phase] =
            std::make_shared<const SimulationStats>(std::move(stats));
        run.profiledMicrobatch[phase] = microbatch;
      }
    }
    run.spans.push_back({phase, microbatch, clock,
                         clock + timeline.deviceTimeNs,
                         timeline.collectiveWaitNs});
    clock += onTransferClock(timeline.deviceTimeNs);
    run.computeNs +=
        std::max(0.0, timeline.deviceTimeNs - timeline.collectiveWaitNs);
    ++run.fragmentsRun;
    run.matmulFlops += timeline.matmulFlops;
    for (size_t kind = 0; kind < kNumInstructionKinds; ++kind)
      run.kindNs[kind] += timeline.kindNs[kind];
    run.idleNs += timeline.idleNs;
    for (const HbmTensor &tensor : program.tensors) {
      if (tensor.kind != HbmTensor::Kind::Output || !values)
        continue;
      std::vector<uint8_t> bytes;
      if (!simulator.readTensorBytes(tensor.name, bytes, problem))
        return failWith(where + ": " + problem);
      const int64_t index = tensor.port.index;
      switch (tensor.port.kind) {
      case TensorPort::Kind::Stash:
        stash[{microbatch, index}] = std::move(bytes);
        break;
      case TensorPort::Kind::Accumulator:
        accumulators[index] = std::move(bytes);
        break;
      case TensorPort::Kind::Result:
        run.results[index] = std::move(bytes);
        break;
      default:
        return failWith(where + ": output '" + tensor.name + "' has no port");
      }
    }
    return true;
  };

  for (const PipelineAction &action :
       pipelineStageOrder(pipeline.schedule, int64_t(pipeline.fragments.size()),
                          stage, microbatches))
    if (!runFragment(action.backward ? 1 : 0, action.microbatch))
      return false;
  if (!runFragment(2, 0))
    return false;
  run.stepNs = clock;
  return true;
}

namespace {
/// Fixed-size fields appended in order (host byte order).
struct Writer {
  std::vector<uint8_t> bytes;
  template <typename T> void put(T value) {
    const uint8_t *raw = reinterpret_cast<const uint8_t *>(&value);
    bytes.insert(bytes.end(), raw, raw + sizeof(T));
  }
  void putBytes(const std::vector<uint8_t> &data) {
    put<uint64_t>(data.size());
    bytes.insert(bytes.end(), data.begin(), data.end());
  }
};

/// What a Writer wrote, read back in order; false past the end.
struct Reader {
  const std::vector<uint8_t> &bytes;
  size_t at = 0;
  template <typename T> bool take(T &value) {
    if (bytes.size() - at < sizeof(T))
      return false;
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return true;
  }
  bool takeBytes(std::vector<uint8_t> &data) {
    uint64_t size = 0;
    if (!take(size) || bytes.size() - at < size)
      return false;
    data.assign(bytes.begin() + long(at), bytes.begin() + long(at + size));
    at += size;
    return true;
  }
  bool done() const { return at == bytes.size(); }
};

constexpr uint32_t kRankRunFormat = 0x50524e33; // "PRN3"
} // namespace

std::vector<uint8_t> encodePipelineRankRun(const PipelineRankRun &run) {
  Writer fields;
  fields.put(kRankRunFormat);
  fields.put<int64_t>(run.rank);
  fields.put(run.stepNs);
  fields.put(run.computeNs);
  fields.put<uint64_t>(run.fragmentsRun);
  fields.put<uint64_t>(run.fragmentsReplayed);
  for (double ns : run.kindNs)
    fields.put(ns);
  fields.put(run.idleNs);
  fields.put<uint64_t>(run.matmulFlops);
  fields.put<uint64_t>(run.spans.size());
  for (const PipelineSpan &span : run.spans) {
    fields.put<int64_t>(span.phase);
    fields.put<int64_t>(span.microbatch);
    fields.put(span.startNs);
    fields.put(span.endNs);
    fields.put(span.waitNs);
  }
  fields.put<uint64_t>(run.results.size());
  for (const auto &[index, result] : run.results) {
    fields.put<int64_t>(index);
    fields.putBytes(result);
  }
  return std::move(fields.bytes);
}

bool decodePipelineRankRun(const std::vector<uint8_t> &bytes,
                           PipelineRankRun &run, std::string &error) {
  Reader fields{bytes};
  run = PipelineRankRun();
  uint32_t format = 0;
  int64_t rank = 0;
  uint64_t spans = 0, results = 0;
  bool ok = fields.take(format) && format == kRankRunFormat &&
            fields.take(rank) && fields.take(run.stepNs) &&
            fields.take(run.computeNs) && fields.take(run.fragmentsRun) &&
            fields.take(run.fragmentsReplayed) &&
            std::all_of(run.kindNs.begin(), run.kindNs.end(),
                        [&](double &ns) { return fields.take(ns); }) &&
            fields.take(run.idleNs) && fields.take(run.matmulFlops) &&
            fields.take(spans);
  run.rank = int(rank);
  for (uint64_t s = 0; ok && s < spans; ++s) {
    PipelineSpan span;
    int64_t phase = 0;
    ok = fields.take(phase) && fields.take(span.microbatch) &&
         fields.take(span.startNs) && fields.take(span.endNs) &&
         fields.take(span.waitNs);
    span.phase = int(phase);
    run.spans.push_back(span);
  }
  ok = ok && fields.take(results);
  for (uint64_t r = 0; ok && r < results; ++r) {
    int64_t index = 0;
    ok = fields.take(index) && fields.takeBytes(run.results[index]);
  }
  if (!ok || !fields.done()) {
    error = "a rank's run does not decode (" + std::to_string(bytes.size()) +
            " bytes; the ranks must run the same trn build)";
    return false;
  }
  return true;
}

bool runPipelineInProcess(const Target &target, const BoundPipeline &pipeline,
                          const std::vector<std::vector<uint8_t>> &globalInputs,
                          const MeshRunOptions &options,
                          std::vector<PipelineRankRun> &runs,
                          std::string &error) {
  int ranks = rankCount(pipeline.bound);
  runs.clear();
  runs.resize(size_t(ranks));
  return runEveryRankInProcess(
      pipeline.bound, options.collectiveTimeoutSeconds,
      [&](int rank, Communicator &communicator, std::string &rankError) {
        return runPipelineRank(target, pipeline, globalInputs, communicator,
                               options, runs[size_t(rank)], rankError);
      },
      error);
}

bool runPipelineMirrored(const Target &target, const BoundPipeline &pipeline,
                         const MeshRunOptions &options,
                         std::vector<PipelineRankRun> &runs,
                         std::string &error) {
  const int stages = int(pipeline.fragments.size());
  const int world = rankCount(pipeline.bound);
  // Row-major ranks: stage s's first rank is s times the pipeline axis's
  // stride.
  int stride = 1;
  for (size_t a = pipeline.axis + 1; a < pipeline.bound.size(); ++a)
    stride *= int(pipeline.bound[a].size);
  auto simulatedIndex = [stride, stages](int worldRank) {
    return worldRank % stride == 0 && worldRank / stride < stages
               ? worldRank / stride
               : -1;
  };
  MeshRunOptions mirrored = options;
  mirrored.simulator.timingOnly = true;
  runs.clear();
  runs.resize(size_t(stages));
  return runRanksInProcess(
      stages, options.collectiveTimeoutSeconds,
      [&](int stage, Communicator &stageRanks, std::string &stageError) {
        MirrorCommunicator communicator(stage * stride, world, simulatedIndex,
                                        &stageRanks);
        return runPipelineRank(target, pipeline, {}, communicator, mirrored,
                               runs[size_t(stage)], stageError);
      },
      error);
}

void assemblePipelineResults(const BoundPipeline &pipeline,
                             const std::vector<PipelineRankRun> &runs,
                             std::vector<std::vector<uint8_t>> &globalResults) {
  globalResults.assign(pipeline.results.size(), {});
  for (size_t index = 0; index < pipeline.results.size(); ++index) {
    // The first stage whose update returns it, and its tensor there.
    const HbmTensor *tensor = nullptr;
    int64_t home = -1;
    for (size_t s = 0; s < pipeline.fragments.size() && !tensor; ++s)
      for (const HbmTensor &candidate : pipeline.fragments[s][2]->tensors)
        if (candidate.kind == HbmTensor::Kind::Output &&
            candidate.port.kind == TensorPort::Kind::Result &&
            candidate.port.index == int64_t(index)) {
          tensor = &candidate;
          home = int64_t(s);
          break;
        }
    if (!tensor)
      continue;
    std::vector<uint8_t> &global = globalResults[index];
    global.assign(bytesOf(tensor->dtype, globalShape(*tensor, pipeline.bound)),
                  0);
    for (size_t rank = 0; rank < runs.size(); ++rank) {
      bool take =
          rankCoordinates(pipeline.bound, int(rank))[pipeline.axis] == home &&
          holdsCanonicalPiece(*tensor, pipeline.bound, int(rank),
                              pipeline.axis);
      auto it = runs[rank].results.find(int64_t(index));
      if (!take || it == runs[rank].results.end())
        continue;
      copyShard(*tensor, pipeline.bound, int(rank), global.data(),
                const_cast<uint8_t *>(it->second.data()), /*toLocal=*/false);
    }
  }
}

} // namespace trnrt
