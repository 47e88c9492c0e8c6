//===- trn-eval.cpp - run a trn graph on the reference evaluator ---------===//
//
//   trn-eval GRAPH.mlir [--entry NAME] (--inputs in.npz | --random SEED |
//            --zeros) [--outputs out.npz] [--save-inputs in.npz]
//
// Inputs and outputs are NumPy .npz archives keyed by each argument's and
// result's `trn.name` (else `arg<i>` / `result<i>`), so PyTorch and NumPy
// can produce and check the data. A module holding a dist.pipeline (a step
// cut into pipeline stages) runs that step on every rank of its mesh.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Text.h"
#include "trn/Driver/ToolCommandLine.h"
#include "trn/Eval/Evaluator.h"
#include "trn/Eval/Spmd.h"
#include "trn/InitAll.h"
#include "trn/Support/InputFile.h"

#include "trnrt/Npy.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

#include <map>
#include <random>

using namespace mlir;
using mlir::trn::eval::Tensor;
using trnrt::DType;

static const char *kUsage =
    R"(usage: trn-eval GRAPH.mlir (--inputs in.npz | --random SEED | --zeros)
                [--entry NAME] [--outputs out.npz] [--save-inputs in.npz]
                [--int-max N]

Runs a trn step graph on the reference evaluator (GRAPH.mlir may be - for
standard input). Inputs and outputs are NumPy .npz archives keyed by each
argument's and result's name; a pipelined step runs on every rank of its mesh.

options:
  --inputs FILE       read the inputs from this .npz
  --random SEED       random inputs: floats in [-1, 1), integers in
                      [0, --int-max)
  --zeros             every input zero
  --int-max N         bound of random integer inputs (default 2)
  --entry NAME        the function or pipeline to run (default: the only
                      one, or @main)
  --outputs FILE      write the outputs to this .npz
  --save-inputs FILE  write the inputs used to this .npz
  -h, --help          this help
  --version           versions

exit status: 0 success, 1 the graph or its data failed, 2 bad command line
)";

// The command line (parseCommandLine).
static std::string inputFile = "-", entryName, inputsFile, outputsFile,
                   saveInputsFile;
static long long randomSeed = -1, intMax = 2;
static bool zeros = false;

enum FlagId { Entry, Inputs, Random, IntMax, Zeros, Outputs, SaveInputs };

/// Parses argv into the globals above; a usage error is one line.
static std::optional<std::string> parseCommandLine(int argc, char **argv,
                                                   bool &help, bool &version) {
  mlir::trn::ToolCommandLine line;
  line.tool = "trn-eval";
  line.notOurs = "it is a compile flag: trn-eval runs the graph as written";
  line.flags = {
      {"entry", true, 0, Entry},           {"inputs", true, 0, Inputs},
      {"random", true, 0, Random},         {"int-max", true, 0, IntMax},
      {"zeros", false, 0, Zeros},          {"outputs", true, 0, Outputs},
      {"save-inputs", true, 0, SaveInputs}};
  auto onFlag =
      [&](const mlir::trn::ToolFlagUse &use) -> std::optional<std::string> {
    const std::string value = use.value.value_or("");
    switch (use.flag->id) {
    case Entry:
      entryName = value;
      break;
    case Inputs:
      inputsFile = value;
      break;
    case Random:
      return mlir::trn::takeInteger(use, 0, randomSeed);
    case IntMax:
      return mlir::trn::takeInteger(use, 1, intMax);
    case Zeros:
      zeros = true;
      break;
    case Outputs:
      outputsFile = value;
      break;
    case SaveInputs:
      saveInputsFile = value;
      break;
    }
    return std::nullopt;
  };
  mlir::trn::ParsedToolArgs parsed;
  if (auto problem = mlir::trn::parseToolArgs(
          std::vector<std::string>(argv + 1, argv + argc), line, onFlag,
          parsed))
    return problem;
  help = parsed.help;
  version = parsed.version;
  if (help || version)
    return std::nullopt;
  if (parsed.positionals.size() > 1)
    return "unexpected argument '" + parsed.positionals[1] +
           "'; trn-eval runs one graph";
  if (parsed.positionals.empty())
    return std::string("no graph given: trn-eval GRAPH.mlir --zeros (or - "
                       "for standard input; see trn-eval --help)");
  inputFile = parsed.positionals.front();
  int sources = !inputsFile.empty() + (randomSeed >= 0) + zeros;
  if (sources != 1)
    return std::string("give exactly one of --inputs FILE.npz, --random SEED "
                       "or --zeros");
  return std::nullopt;
}

static int fail(const llvm::Twine &message) {
  llvm::errs() << "trn-eval: error: " << message << "\n";
  return 1;
}

static std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

static std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The npz key of argument or result `index`.
static std::string valueName(func::FuncOp function, unsigned index,
                             bool isResult) {
  auto name = isResult
                  ? function.getResultAttrOfType<StringAttr>(index, "trn.name")
                  : function.getArgAttrOfType<StringAttr>(index, "trn.name");
  if (name)
    return name.str();
  return (isResult ? "result" : "arg") + std::to_string(index);
}

/// Converts a NumPy array to the argument's tensor type, or explains why not.
static std::optional<std::string>
fromNpy(const trnrt::NpyArray &array, RankedTensorType type, Tensor &tensor) {
  DType dtype = *mlir::trn::eval::dtypeOf(type.getElementType());
  if (llvm::ArrayRef<int64_t>(array.shape) != type.getShape())
    return "has shape " + shapeString(array.shape) + " but the argument is " +
           typeString(type);
  bool arrayIsFloat = array.kind == 'f';
  if (!trnrt::isFloatDType(dtype) && arrayIsFloat)
    return "holds floats (" + array.descr() + ") but the argument is " +
           typeString(type) + "; pass integers";
  tensor = Tensor::zeros(dtype, type.getShape());
  for (int64_t i = 0, e = array.numElements(); i < e; ++i) {
    if (arrayIsFloat || (array.itemSize == 8 && array.kind == 'u'))
      tensor.setDouble(i, array.getDouble(i));
    else if (tensor.isFloat())
      tensor.setDouble(i, static_cast<double>(array.getInt64(i)));
    else
      tensor.setInt(i, array.getInt64(i));
  }
  return std::nullopt;
}

/// The NumPy form of a tensor: float32 for f32/bf16/f16/f8 (exact), i64, i32
/// or bool for the integer types.
static trnrt::NpyArray toNpy(const Tensor &tensor) {
  switch (tensor.dtype) {
  case DType::I1:
    return trnrt::NpyArray::fromInt64s(tensor.shape, tensor.ints, 'b', 1);
  case DType::I32:
    return trnrt::NpyArray::fromInt64s(tensor.shape, tensor.ints, 'i', 4);
  case DType::I64:
    return trnrt::NpyArray::fromInt64s(tensor.shape, tensor.ints, 'i', 8);
  default:
    return trnrt::NpyArray::fromDoubles(tensor.shape, tensor.floats, 4);
  }
}

/// One line per output: its name, type and a summary of its values.
static void printSummary(llvm::StringRef name, Type type, const Tensor &t) {
  llvm::outs() << name << " : " << type;
  int64_t n = t.numElements();
  if (n == 0) {
    llvm::outs() << " (empty)\n";
    return;
  }
  if (n <= 8) {
    llvm::outs() << " = [";
    for (int64_t i = 0; i < n; ++i) {
      llvm::outs() << (i ? ", " : "");
      if (t.isFloat())
        llvm::outs() << llvm::format("%.8g", t.floats[i]);
      else
        llvm::outs() << t.ints[i];
    }
    llvm::outs() << "]\n";
    return;
  }
  // NaNs are counted, not folded into the figures (a mean of -nan would
  // hide how many there are and what the rest look like).
  double lo = INFINITY, hi = -INFINITY, sum = 0.0;
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.getDouble(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  if (nans == n) {
    llvm::outs() << " all " << n << " values NaN\n";
    return;
  }
  llvm::outs() << llvm::format(" min %.6g max %.6g mean %.6g", lo, hi,
                               sum / double(n - nans));
  if (nans)
    llvm::outs() << " (NaN: " << nans << " of " << n << ", left out)";
  llvm::outs() << "\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  bool help = false, version = false;
  if (auto problem = parseCommandLine(argc, argv, help, version))
    return mlir::trn::usageError("trn-eval", *problem);
  if (help) {
    llvm::outs() << kUsage;
    return 0;
  }
  if (version) {
    llvm::outs() << mlir::trn::cache::toolVersion("trn-eval");
    return 0;
  }

  DialectRegistry registry;
  mlir::trn::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  // A directory, /dev/zero or a FIFO is refused unread; files and stdin stop
  // at kMaxInputFileBytes.
  std::string errorMessage;
  auto file = mlir::trn::readInputFile(inputFile, errorMessage);
  if (!file)
    return fail(errorMessage);
  // LLVM 19's bytecode reader does not validate corrupt input; trn reads text.
  if (isBytecode(*file))
    return fail(inputFile + " is MLIR bytecode, which trn does not read; "
                            "pass the textual form");
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1; // the parser or verifier has reported the problem

  // Pick the entry: a pipelined step (dist-pipeline-split's output) or a
  // function.
  func::FuncOp function;
  dist::PipelineOp pipeline;
  llvm::SmallVector<func::FuncOp> functions(module->getOps<func::FuncOp>());
  llvm::SmallVector<dist::PipelineOp> pipelines(
      module->getOps<dist::PipelineOp>());
  if (!entryName.empty()) {
    pipeline = module->lookupSymbol<dist::PipelineOp>(entryName);
    function = module->lookupSymbol<func::FuncOp>(entryName);
    if (!function && !pipeline)
      return fail("no function or pipeline @" + entryName + " in " + inputFile);
  } else if (pipelines.size() == 1) {
    pipeline = pipelines.front();
  } else if (functions.size() == 1) {
    function = functions.front();
  } else {
    function = module->lookupSymbol<func::FuncOp>("main");
    if (!function)
      return fail(llvm::Twine(functions.size()) +
                  " functions in the module and none is @main; choose one "
                  "with --entry NAME");
  }
  // A partitioned (SPMD) graph or a pipeline takes and gives global
  // tensors: the evaluator splits them over its mesh's ranks and assembles
  // the results.
  const bool spmd = function && mlir::trn::eval::isSpmd(function);
  FunctionType signature =
      pipeline ? pipeline.getFunctionType() : function.getFunctionType();
  auto valueType = [&](unsigned index, bool isResult) -> Type {
    if (pipeline)
      return mlir::trn::eval::pipelineGlobalType(pipeline, index, isResult);
    if (spmd)
      return mlir::trn::eval::globalTypeOf(function, index, isResult);
    return isResult ? signature.getResult(index) : signature.getInput(index);
  };
  auto nameOf = [&](unsigned index, bool isResult) -> std::string {
    if (!pipeline)
      return valueName(function, index, isResult);
    std::optional<ArrayAttr> attrs =
        isResult ? pipeline.getResAttrs() : pipeline.getArgAttrs();
    if (attrs)
      if (auto name = cast<DictionaryAttr>((*attrs)[index])
                          .getAs<StringAttr>("trn.name"))
        return name.str();
    return (isResult ? "result" : "arg") + std::to_string(index);
  };

  // Gather the inputs.
  std::map<std::string, trnrt::NpyArray> provided;
  if (!inputsFile.empty()) {
    std::vector<std::pair<std::string, trnrt::NpyArray>> arrays;
    if (!trnrt::readNpz(inputsFile, arrays, errorMessage))
      return fail(errorMessage);
    for (auto &[name, array] : arrays)
      provided.emplace(name, std::move(array));
  }
  std::mt19937_64 rng(randomSeed >= 0 ? randomSeed : 0);
  std::vector<Tensor> inputs;
  for (auto [i, type] : llvm::enumerate(signature.getInputs())) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    if (tensorType)
      tensorType = cast<RankedTensorType>(valueType(i, false));
    if (!tensorType || !mlir::trn::eval::dtypeOf(tensorType.getElementType()))
      return fail("argument " + llvm::Twine(i) + " has type " +
                  typeString(type) + ", which the evaluator does not support");
    if (mlir::trn::eval::checkedNumElements(tensorType.getShape()) < 0)
      return fail("argument " + llvm::Twine(i) + " (" + typeString(type) +
                  ") has more than 2^27 elements, the evaluator's limit");
    std::string name = nameOf(i, /*isResult=*/false);
    Tensor tensor =
        Tensor::zeros(*mlir::trn::eval::dtypeOf(tensorType.getElementType()),
                      tensorType.getShape());
    if (!inputsFile.empty()) {
      auto it = provided.find(name);
      if (it == provided.end())
        return fail(inputsFile + " has no entry '" + name + "' for argument " +
                    llvm::Twine(i) + " (" + typeString(type) + ")");
      if (auto problem = fromNpy(it->second, tensorType, tensor))
        return fail(inputsFile + ": entry '" + name + "' " + *problem);
      provided.erase(it);
    } else if (randomSeed >= 0) {
      std::uniform_real_distribution<double> uniform(-1.0, 1.0);
      std::uniform_int_distribution<int64_t> integers(0, intMax - 1);
      for (int64_t e = 0, n = tensor.numElements(); e < n; ++e)
        tensor.isFloat() ? tensor.setDouble(e, uniform(rng))
                         : tensor.setInt(e, integers(rng));
    }
    inputs.push_back(std::move(tensor));
  }
  for (auto &[name, array] : provided)
    llvm::errs() << "trn-eval: warning: " << inputsFile << " entry '" << name
                 << "' matches no argument and is ignored\n";

  if (!saveInputsFile.empty()) {
    std::vector<std::pair<std::string, trnrt::NpyArray>> arrays;
    for (auto [i, tensor] : llvm::enumerate(inputs))
      arrays.emplace_back(nameOf(i, false), toNpy(tensor));
    if (!trnrt::writeNpz(saveInputsFile, arrays, errorMessage))
      return fail(errorMessage);
  }

  FailureOr<std::vector<Tensor>> outputs =
      pipeline ? mlir::trn::eval::evaluatePipeline(pipeline, inputs)
      : spmd   ? mlir::trn::eval::evaluateSpmd(function, inputs)
               : mlir::trn::eval::evaluate(function, inputs);
  if (failed(outputs))
    return 1; // the evaluator has reported the problem at the op

  std::vector<std::pair<std::string, trnrt::NpyArray>> arrays;
  for (auto [i, tensor] : llvm::enumerate(*outputs)) {
    std::string name = nameOf(i, /*isResult=*/true);
    printSummary(name, valueType(i, true), tensor);
    arrays.emplace_back(name, toNpy(tensor));
  }
  if (!outputsFile.empty() &&
      !trnrt::writeNpz(outputsFile, arrays, errorMessage))
    return fail(errorMessage);
  return 0;
}
