//===- trnrt.hpp - C++ wrapper over the trn runtime C API -------*- C++ -*-===//
//
// Header-only RAII classes over trnrt.h for C++ callers: a failed call throws
// trnrt::Error, which carries the C status code and trnrt_last_error()'s
// one-line message. Exceptions exist on this side of the boundary only; the
// runtime library itself never throws (it is built without exceptions), so
// include this header from code compiled with exceptions enabled.
//
//   trnrt::Runtime runtime;                   // or runtime(options)
//   trnrt::Model model = runtime.loadFile("step.trnart");
//   model.tensor("x").write(values);          // std::vector<double>
//   model.execute();
//   std::vector<double> loss = model.tensor("loss").read();
//   trnrt_stats stats = model.stats();
//
// Lifetimes: a Model keeps its Runtime's handle alive, and a Tensor keeps its
// Model's handle alive, so destruction order never matters. Objects are
// movable, not copyable (Tensor is copyable: it is a named handle).
//
//===----------------------------------------------------------------------===//

#ifndef TRNRT_TRNRT_HPP
#define TRNRT_TRNRT_HPP

#include "trnrt/trnrt.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trnrt {

/// A failed runtime call: status() is the C API's status code, what() the
/// one-line message trnrt_last_error() gave.
class Error : public std::runtime_error {
public:
  Error(trnrt_status status, const std::string &message)
      : std::runtime_error(message), code(status) {}
  trnrt_status status() const noexcept { return code; }

private:
  trnrt_status code;
};

namespace detail {

/// Throws Error for any status but TRNRT_OK.
inline void check(trnrt_status status) {
  if (status != TRNRT_OK)
    throw Error(status, trnrt_last_error());
}

struct RuntimeDeleter {
  void operator()(trnrt_runtime *runtime) const { trnrt_close(runtime); }
};
struct ModelDeleter {
  void operator()(trnrt_model *model) const { trnrt_unload(model); }
};

/// A model's handle together with the runtime it was loaded by, so the
/// runtime outlives every model and tensor handle.
struct ModelHandle {
  std::shared_ptr<trnrt_runtime> runtime;
  std::unique_ptr<trnrt_model, ModelDeleter> model;
};

} // namespace detail

/// An input or output of a loaded model.
struct TensorInfo {
  std::string name;
  trnrt_dtype dtype = TRNRT_F32;
  std::vector<int64_t> shape;
  size_t elements = 0;

  static TensorInfo from(const trnrt_tensor_info &info) {
    TensorInfo out;
    out.name = info.name;
    out.dtype = info.dtype;
    out.shape.assign(info.shape, info.shape + info.rank);
    out.elements = info.elements;
    return out;
  }
};

/// A named HBM tensor of a model (an input, an output, or any tensor the
/// program names). Reading and writing go through the C API, so an unknown
/// name or a wrong element count throws TRNRT_INVALID_ARGUMENT.
class Tensor {
public:
  const std::string &name() const { return tensorName; }

  /// Writes the whole tensor; values are rounded to its dtype.
  void write(const double *values, size_t count) {
    detail::check(trnrt_write_tensor(handle->model.get(), tensorName.c_str(),
                                     values, count));
  }
  void write(const std::vector<double> &values) {
    write(values.data(), values.size());
  }
  /// Reads the whole tensor into `values` (`count` = its element count).
  void read(double *values, size_t count) const {
    detail::check(trnrt_read_tensor(handle->model.get(), tensorName.c_str(),
                                    values, count));
  }
  /// Reads the whole tensor; `elements` is its element count.
  std::vector<double> read(size_t elements) const {
    std::vector<double> values(elements);
    read(values.data(), values.size());
    return values;
  }

private:
  friend class Model;
  Tensor(std::shared_ptr<detail::ModelHandle> handle, std::string name)
      : handle(std::move(handle)), tensorName(std::move(name)) {}

  std::shared_ptr<detail::ModelHandle> handle;
  std::string tensorName;
};

/// A loaded, validated artifact on a simulated NeuronCore.
class Model {
public:
  Model(Model &&) noexcept = default;
  Model &operator=(Model &&) noexcept = default;
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  std::vector<TensorInfo> inputs() const {
    return describe(trnrt_input_count(raw()), trnrt_input_info);
  }
  std::vector<TensorInfo> outputs() const {
    return describe(trnrt_output_count(raw()), trnrt_output_info);
  }

  /// A handle to the tensor `name`; existence is checked when it is read or
  /// written.
  Tensor tensor(const std::string &name) const { return Tensor(handle, name); }

  /// Reads a whole input or output by name, sized from the signature.
  std::vector<double> read(const std::string &name) const {
    for (const auto &list : {inputs(), outputs()})
      for (const TensorInfo &info : list)
        if (info.name == name)
          return tensor(name).read(info.elements);
    throw Error(TRNRT_INVALID_ARGUMENT,
                "the model has no input or output named '" + name + "'");
  }
  void write(const std::string &name, const std::vector<double> &values) {
    tensor(name).write(values);
  }

  /// Runs the program once.
  void execute() { detail::check(trnrt_execute(raw())); }
  /// Statistics of the last successful execute().
  trnrt_stats stats() const {
    trnrt_stats out;
    trnrt_stats_default(&out);
    detail::check(trnrt_get_stats(raw(), &out));
    return out;
  }

  trnrt_model *get() const { return raw(); }

private:
  friend class Runtime;
  explicit Model(std::shared_ptr<detail::ModelHandle> handle)
      : handle(std::move(handle)) {}

  trnrt_model *raw() const {
    if (!handle)
      throw Error(TRNRT_INVALID_ARGUMENT, "the model was moved from");
    return handle->model.get();
  }

  template <typename Info>
  std::vector<TensorInfo> describe(size_t count, Info info) const {
    std::vector<TensorInfo> out;
    out.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      trnrt_tensor_info raw{};
      detail::check(info(this->raw(), i, &raw));
      out.push_back(TensorInfo::from(raw));
    }
    return out;
  }

  std::shared_ptr<detail::ModelHandle> handle;
};

/// The runtime: loads artifacts. Models it loaded stay valid after it is
/// destroyed.
class Runtime {
public:
  /// A runtime with the default options.
  Runtime() : runtime(create(nullptr)) {}
  /// A runtime with `options`, set up by trnrt_init_options_default (a
  /// struct_size below TRNRT_INIT_OPTIONS_MIN_SIZE throws
  /// TRNRT_INVALID_ARGUMENT, an unknown flag TRNRT_UNSUPPORTED).
  explicit Runtime(const trnrt_init_options &options)
      : runtime(create(&options)) {}
  Runtime(Runtime &&) noexcept = default;
  Runtime &operator=(Runtime &&) noexcept = default;
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  /// Loads and validates an artifact file (TRNRT_IO_ERROR if it cannot be
  /// read, TRNRT_BAD_ARTIFACT if it is damaged, TRNRT_INVALID_PROGRAM,
  /// TRNRT_OUT_OF_MEMORY).
  Model loadFile(const std::string &path) const {
    trnrt_model *model = nullptr;
    detail::check(trnrt_load_file(raw(), path.c_str(), &model));
    return wrap(model);
  }
  /// Loads an artifact from memory (the bytes are not kept).
  Model loadMemory(const void *data, size_t size) const {
    trnrt_model *model = nullptr;
    detail::check(trnrt_load_memory(raw(), data, size, &model));
    return wrap(model);
  }
  Model loadMemory(const std::vector<uint8_t> &bytes) const {
    return loadMemory(bytes.data(), bytes.size());
  }

  trnrt_runtime *get() const { return raw(); }

private:
  static std::shared_ptr<trnrt_runtime>
  create(const trnrt_init_options *options) {
    trnrt_runtime *raw = nullptr;
    detail::check(trnrt_init(options, &raw));
    return std::shared_ptr<trnrt_runtime>(raw, detail::RuntimeDeleter());
  }

  trnrt_runtime *raw() const {
    if (!runtime)
      throw Error(TRNRT_INVALID_ARGUMENT, "the runtime was moved from");
    return runtime.get();
  }

  Model wrap(trnrt_model *model) const {
    std::unique_ptr<trnrt_model, detail::ModelDeleter> owned(model);
    auto handle = std::make_shared<detail::ModelHandle>();
    handle->model = std::move(owned);
    handle->runtime = runtime;
    return Model(std::move(handle));
  }

  std::shared_ptr<trnrt_runtime> runtime;
};

} // namespace trnrt

#endif // TRNRT_TRNRT_HPP
