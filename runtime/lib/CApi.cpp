//===- CApi.cpp - the trn runtime C API ----------------------------------===//
//
// A thin layer over the artifact reader, the validator and the simulator.
// Nothing throws (the runtime builds without exceptions); errors are kept
// per thread for trnrt_last_error().
//
//===----------------------------------------------------------------------===//

#include "trnrt/trnrt.h"

#include "trnrt/Artifact.h"
#include "trnrt/File.h"
#include "trnrt/IsaValidate.h"
#include "trnrt/Simulator.h"
#include "trnrt/Subroutines.h"
#include "trnrt/Target.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace trnrt;

struct trnrt_runtime {
  SimulatorOptions options;
};

struct trnrt_model {
  Program program;
  ArtifactInfo info;
  std::unique_ptr<Simulator> simulator;
  SimulationStats stats;
  bool hasStats = false;
};

namespace {

thread_local std::string lastError;

trnrt_status fail(trnrt_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

trnrt_status ok() {
  lastError.clear();
  return TRNRT_OK;
}

/// Validates, lays out and wraps a decoded program.
/// Models are read as written, validated, then their calls resolved
/// (finishLoad).
const ArtifactReadOptions kValidatedFirst = [] {
  ArtifactReadOptions options;
  options.calls = ArtifactReadOptions::Calls::Keep;
  return options;
}();

trnrt_status finishLoad(const trnrt_runtime &runtime, trnrt_model *model,
                        trnrt_model **out) {
  std::unique_ptr<trnrt_model> owned(model);
  std::string error;
  const Target *target = lookupTarget(model->program.target);
  if (!target)
    return fail(TRNRT_BAD_ARTIFACT,
                "unknown target '" + model->program.target + "'");
  // A program larger than the core's HBM is out of memory (the simulator's
  // message names the first tensor that does not fit), not invalid.
  if (expandedHbmBytes(model->program) > target->hbmBytesPerCore) {
    if (!resolveCalls(model->program, error))
      return fail(TRNRT_INVALID_PROGRAM, error);
    Simulator probe(*target);
    if (!probe.load(model->program, error))
      return fail(TRNRT_OUT_OF_MEMORY, error);
  }
  if (!validateProgram(model->program, *target, error) ||
      !checkSemaphoresCanComplete(model->program, error) ||
      !resolveCalls(model->program, error))
    return fail(TRNRT_INVALID_PROGRAM, error);
  model->simulator = std::make_unique<Simulator>(*target, runtime.options);
  if (!model->simulator->load(model->program, error))
    return fail(error.find("HBM") != std::string::npos ? TRNRT_OUT_OF_MEMORY
                                                       : TRNRT_INVALID_PROGRAM,
                error);
  *out = owned.release();
  return ok();
}

std::string sizeError(const char *type, size_t size, size_t minimum) {
  return std::string(type) + " struct_size " + std::to_string(size) +
         " is below the minimum " + std::to_string(minimum) + " (set it with " +
         type + "_default)";
}

// Every field is 8 bytes, so the struct has no padding and a newer header's
// first new field starts right at sizeof(trnrt_init_options).
static_assert(sizeof(trnrt_init_options) ==
                  offsetof(trnrt_init_options, threads) + sizeof(uint64_t),
              "trnrt_init_options has no tail padding");

/// Reads the caller's options into `known` (which holds the defaults): each
/// field only if the caller's struct_size covers it.
trnrt_status readInitOptions(const trnrt_init_options *options,
                             trnrt_init_options &known) {
  if (!options)
    return TRNRT_OK;
  const size_t callerSize = options->struct_size;
  if (callerSize < TRNRT_INIT_OPTIONS_MIN_SIZE)
    return fail(TRNRT_INVALID_ARGUMENT,
                sizeError("trnrt_init_options", callerSize,
                          TRNRT_INIT_OPTIONS_MIN_SIZE));
  // Fields of a newer header are fine while they hold their defaults (zero
  // bytes); one that is set asks for something this runtime cannot do.
  const auto *bytes = reinterpret_cast<const uint8_t *>(options);
  for (size_t i = sizeof(known); i < callerSize; ++i)
    if (bytes[i])
      return fail(TRNRT_UNSUPPORTED,
                  "trnrt_init_options sets a field at byte " +
                      std::to_string(i) + " that this runtime (struct_size " +
                      std::to_string(sizeof(known)) + ") does not know");
  auto covers = [&](size_t offset, size_t size) {
    return offset + size <= callerSize;
  };
  known.flags = options->flags;
  if (covers(offsetof(trnrt_init_options, threads), sizeof(known.threads)))
    known.threads = options->threads;
  constexpr uint64_t knownFlags =
      TRNRT_INIT_POISON_MEMORY | TRNRT_INIT_TIMING_ONLY;
  if (known.flags & ~knownFlags)
    return fail(TRNRT_UNSUPPORTED,
                "trnrt_init_options flags " + std::to_string(known.flags) +
                    " include bits this runtime does not know: " +
                    std::to_string(known.flags & ~knownFlags));
  return TRNRT_OK;
}

trnrt_status describe(const std::vector<ArtifactTensorInfo> &tensors,
                      size_t index, trnrt_tensor_info *info) {
  if (!info)
    return fail(TRNRT_INVALID_ARGUMENT, "info is null");
  if (index >= tensors.size())
    return fail(TRNRT_INVALID_ARGUMENT,
                "tensor index " + std::to_string(index) + " is out of range (" +
                    std::to_string(tensors.size()) + " tensors)");
  const ArtifactTensorInfo &tensor = tensors[index];
  info->name = tensor.name.c_str();
  info->dtype = static_cast<trnrt_dtype>(tensor.dtype);
  info->rank = tensor.shape.size();
  info->shape = tensor.shape.data();
  size_t elements = 1;
  for (int64_t size : tensor.shape)
    elements *= static_cast<size_t>(size);
  info->elements = elements;
  return ok();
}

} // namespace

static_assert(static_cast<int>(DType::I64) == TRNRT_I64,
              "trnrt_dtype follows trnrt::DType");

extern "C" {

const char *trnrt_last_error(void) { return lastError.c_str(); }

trnrt_status trnrt_init(const trnrt_init_options *options,
                        trnrt_runtime **runtime) {
  if (!runtime)
    return fail(TRNRT_INVALID_ARGUMENT, "runtime is null");
  *runtime = nullptr;
  trnrt_init_options known;
  trnrt_init_options_default(&known);
  if (trnrt_status status = readInitOptions(options, known))
    return status;
  *runtime = new (std::nothrow) trnrt_runtime();
  if (!*runtime)
    return fail(TRNRT_OUT_OF_MEMORY, "cannot allocate the runtime");
  SimulatorOptions &simulator = (*runtime)->options;
  simulator.poisonMemory = known.flags & TRNRT_INIT_POISON_MEMORY;
  simulator.timingOnly = known.flags & TRNRT_INIT_TIMING_ONLY;
  // The simulator clamps the count to the cores it sees (as an int).
  simulator.threads = unsigned(std::min<uint64_t>(known.threads, INT32_MAX));
  return ok();
}

void trnrt_close(trnrt_runtime *runtime) { delete runtime; }

trnrt_status trnrt_load_memory(trnrt_runtime *runtime, const void *data,
                               size_t size, trnrt_model **model) {
  if (!runtime || !data || !model)
    return fail(TRNRT_INVALID_ARGUMENT, "runtime, data and model are required");
  auto *loaded = new (std::nothrow) trnrt_model();
  if (!loaded)
    return fail(TRNRT_OUT_OF_MEMORY, "cannot allocate the model");
  std::string error;
  if (!readArtifact(static_cast<const uint8_t *>(data), size, loaded->program,
                    loaded->info, error, kValidatedFirst)) {
    delete loaded;
    return fail(TRNRT_BAD_ARTIFACT, error);
  }
  return finishLoad(*runtime, loaded, model);
}

trnrt_status trnrt_load_file(trnrt_runtime *runtime, const char *path,
                             trnrt_model **model) {
  if (!runtime || !path || !model)
    return fail(TRNRT_INVALID_ARGUMENT, "runtime, path and model are required");
  // A file that cannot be read at all (missing, a directory, a device, a
  // FIFO) is an I/O error; one over the format's size limit is a bad
  // artifact, as is anything readArtifact refuses.
  std::string bytes, error;
  ReadFailure failure;
  if (!readRegularFile(path, maxArtifactFileBytes(), bytes, error, &failure))
    return fail(failure.kind == ReadFailure::TooLarge ? TRNRT_BAD_ARTIFACT
                                                      : TRNRT_IO_ERROR,
                error);
  auto *loaded = new (std::nothrow) trnrt_model();
  if (!loaded)
    return fail(TRNRT_OUT_OF_MEMORY, "cannot allocate the model");
  if (!readArtifact(reinterpret_cast<const uint8_t *>(bytes.data()),
                    bytes.size(), loaded->program, loaded->info, error,
                    kValidatedFirst)) {
    delete loaded;
    return fail(TRNRT_BAD_ARTIFACT, std::string(path) + ": " + error);
  }
  return finishLoad(*runtime, loaded, model);
}

void trnrt_unload(trnrt_model *model) { delete model; }

size_t trnrt_input_count(const trnrt_model *model) {
  return model ? model->info.inputs.size() : 0;
}

size_t trnrt_output_count(const trnrt_model *model) {
  return model ? model->info.outputs.size() : 0;
}

trnrt_status trnrt_input_info(const trnrt_model *model, size_t index,
                              trnrt_tensor_info *info) {
  if (!model)
    return fail(TRNRT_INVALID_ARGUMENT, "model is null");
  return describe(model->info.inputs, index, info);
}

trnrt_status trnrt_output_info(const trnrt_model *model, size_t index,
                               trnrt_tensor_info *info) {
  if (!model)
    return fail(TRNRT_INVALID_ARGUMENT, "model is null");
  return describe(model->info.outputs, index, info);
}

trnrt_status trnrt_write_tensor(trnrt_model *model, const char *name,
                                const double *values, size_t count) {
  if (!model || !name || (!values && count))
    return fail(TRNRT_INVALID_ARGUMENT, "model, name and values are required");
  std::string error;
  if (!model->simulator->writeTensor(name, values, count, error))
    return fail(TRNRT_INVALID_ARGUMENT, error);
  return ok();
}

trnrt_status trnrt_read_tensor(const trnrt_model *model, const char *name,
                               double *values, size_t count) {
  if (!model || !name || (!values && count))
    return fail(TRNRT_INVALID_ARGUMENT, "model, name and values are required");
  std::vector<double> data;
  std::string error;
  if (!model->simulator->readTensor(name, data, error))
    return fail(TRNRT_INVALID_ARGUMENT, error);
  if (data.size() != count)
    return fail(TRNRT_INVALID_ARGUMENT,
                std::string("tensor '") + name + "' has " +
                    std::to_string(data.size()) + " elements, not " +
                    std::to_string(count));
  std::copy(data.begin(), data.end(), values);
  return ok();
}

trnrt_status trnrt_write_tensor_bytes(trnrt_model *model, const char *name,
                                      const void *bytes, size_t size) {
  if (!model || !name || (!bytes && size))
    return fail(TRNRT_INVALID_ARGUMENT, "model, name and bytes are required");
  std::string error;
  if (!model->simulator->writeTensorBytes(name, bytes, size, error))
    return fail(TRNRT_INVALID_ARGUMENT, error);
  return ok();
}

trnrt_status trnrt_read_tensor_bytes(const trnrt_model *model, const char *name,
                                     void *bytes, size_t size) {
  if (!model || !name || (!bytes && size))
    return fail(TRNRT_INVALID_ARGUMENT, "model, name and bytes are required");
  std::vector<uint8_t> data;
  std::string error;
  if (!model->simulator->readTensorBytes(name, data, error))
    return fail(TRNRT_INVALID_ARGUMENT, error);
  if (data.size() != size)
    return fail(TRNRT_INVALID_ARGUMENT,
                std::string("tensor '") + name + "' has " +
                    std::to_string(data.size()) + " bytes, not " +
                    std::to_string(size));
  std::copy(data.begin(), data.end(), static_cast<uint8_t *>(bytes));
  return ok();
}

trnrt_status trnrt_execute(trnrt_model *model) {
  if (!model)
    return fail(TRNRT_INVALID_ARGUMENT, "model is null");
  std::string error;
  if (!model->simulator->run(model->stats, error)) {
    model->hasStats = false;
    return fail(TRNRT_EXECUTION_ERROR, error);
  }
  model->hasStats = true;
  return ok();
}

trnrt_status trnrt_get_stats(const trnrt_model *model, trnrt_stats *stats) {
  if (!model || !stats)
    return fail(TRNRT_INVALID_ARGUMENT, "model and stats are required");
  const size_t callerSize = stats->struct_size;
  if (callerSize < TRNRT_STATS_MIN_SIZE)
    return fail(TRNRT_INVALID_ARGUMENT,
                sizeError("trnrt_stats", callerSize, TRNRT_STATS_MIN_SIZE));
  if (!model->hasStats)
    return fail(TRNRT_INVALID_ARGUMENT,
                "no statistics: the model has not run successfully");
  // Everything is gathered in a whole struct of this runtime's layout, then
  // copied up to the caller's struct_size: an older caller's struct ends
  // sooner, a newer one's later fields stay as they were.
  const SimulationStats &s = model->stats;
  trnrt_stats full;
  trnrt_stats_default(&full);
  full.struct_size = callerSize;
  full.version = TRNRT_STATS_VERSION;
  full.device_time_ns = s.deviceTimeNs;
  full.tensor_engine_utilisation = s.tensorEngineUtilisation;
  full.mfu = s.mfu;
  for (int e = 0; e < 4; ++e)
    full.engine_busy_percent[e] = s.engines[e].busyPercent;
  full.instructions = s.instructions;
  full.matmul_flops = s.matmulFlops;
  full.dma_count = s.dmaCount;
  full.hbm_to_sbuf_bytes = s.hbmToSbufBytes;
  full.sbuf_to_hbm_bytes = s.sbufToHbmBytes;
  full.spill_bytes = s.spillBytes();
  std::memcpy(stats, &full, std::min(callerSize, sizeof(full)));
  return ok();
}

} // extern "C"
