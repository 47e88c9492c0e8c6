//===- CheckAgainst.cpp - compare a run with the reference evaluator -----===//

#include "CheckAgainst.h"

#include "trn/Cache/Text.h"

#include "trn/Dialect/Trn/Utils/Precision.h"
#include "trn/Eval/Evaluator.h"
#include "trn/InitAll.h"
#include "trn/Support/InputFile.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace mlir;
using mlir::trn::eval::Tensor;

double toleranceFor(trnrt::DType dtype) {
  switch (dtype) {
  case trnrt::DType::F32:
    return 1e-4;
  case trnrt::DType::F16:
    return 1e-3;
  case trnrt::DType::BF16:
    return 2e-2;
  case trnrt::DType::F8E4M3FN:
  case trnrt::DType::F8E5M2:
    return 0.25;
  default:
    return 0.0;
  }
}

namespace {
std::string nameOf(func::FuncOp function, unsigned index, bool result) {
  auto name = result
                  ? function.getResultAttrOfType<StringAttr>(index, "trn.name")
                  : function.getArgAttrOfType<StringAttr>(index, "trn.name");
  if (name)
    return name.str();
  return (result ? "result" : "arg") + std::to_string(index);
}
} // namespace

bool checkAgainstGraph(const std::string &graphPath,
                       const std::vector<NamedTensor> &inputs,
                       const std::vector<NamedTensor> &outputs,
                       const CheckOptions &options,
                       std::vector<OutputComparison> &comparisons,
                       std::string &error) {
  DialectRegistry registry;
  mlir::trn::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diagnostics.empty())
      diagnostics = diag.str();
    return success();
  });
  FailureOr<mlir::trn::AutoCastAssumption> autoCast = mlir::trn::parseAutoCast(
      &context, options.autoCast, options.autoCastType);
  if (failed(autoCast)) {
    error = "the artifact records an unknown auto-cast '" + options.autoCast +
            "' to '" + options.autoCastType + "'";
    return false;
  }
  // A directory, /dev/zero or a FIFO is refused unread.
  auto file = mlir::trn::readInputFile(graphPath, error);
  if (!file)
    return false;
  if (isBytecode(*file)) {
    error = graphPath + " is MLIR bytecode; pass the textual graph";
    return false;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module) {
    error = graphPath + ": " + diagnostics;
    return false;
  }
  SmallVector<func::FuncOp> functions(module->getOps<func::FuncOp>());
  func::FuncOp function = functions.size() == 1
                              ? functions.front()
                              : module->lookupSymbol<func::FuncOp>("main");
  if (!function) {
    error = graphPath + " has several functions and none is @main";
    return false;
  }
  std::vector<Tensor> arguments;
  for (auto [i, type] : llvm::enumerate(function.getArgumentTypes())) {
    std::string name = nameOf(function, i, /*result=*/false);
    auto it =
        std::find_if(inputs.begin(), inputs.end(),
                     [&](const NamedTensor &t) { return t.name == name; });
    auto tensorType = dyn_cast<RankedTensorType>(type);
    auto dtype = tensorType
                     ? mlir::trn::eval::dtypeOf(tensorType.getElementType())
                     : std::nullopt;
    if (it == inputs.end() || !dtype) {
      error = graphPath + ": argument '" + name +
              "' matches no input of the artifact";
      return false;
    }
    if (llvm::ArrayRef<int64_t>(it->shape) != tensorType.getShape()) {
      error = graphPath + ": argument '" + name +
              "' has another shape than the artifact's input";
      return false;
    }
    Tensor tensor = Tensor::zeros(*dtype, tensorType.getShape());
    if (!it->ints.empty()) {
      for (size_t e = 0; e < it->ints.size(); ++e)
        tensor.setInt(e, it->ints[e]);
    } else {
      for (size_t e = 0; e < it->values.size(); ++e)
        tensor.setDouble(e, it->values[e]);
    }
    arguments.push_back(std::move(tensor));
  }
  FailureOr<std::vector<Tensor>> results =
      mlir::trn::eval::evaluate(function, arguments);
  if (failed(results)) {
    error = graphPath + ": the reference evaluator failed: " + diagnostics;
    return false;
  }
  for (auto [i, reference] : llvm::enumerate(*results)) {
    std::string name = nameOf(function, i, /*result=*/true);
    auto it =
        std::find_if(outputs.begin(), outputs.end(),
                     [&](const NamedTensor &t) { return t.name == name; });
    if (it == outputs.end()) {
      error = graphPath + ": result '" + name +
              "' matches no output of the artifact";
      return false;
    }
    if (it->values.size() != static_cast<size_t>(reference.numElements())) {
      error = "output '" + name + "' has " + std::to_string(it->values.size()) +
              " elements, the graph " + std::to_string(reference.numElements());
      return false;
    }
    OutputComparison comparison;
    comparison.name = name;
    if (options.rtol) {
      comparison.tolerance = *options.rtol;
      comparison.toleranceReason = "--rtol";
    } else if (!trnrt::isFloatDType(reference.dtype)) {
      comparison.toleranceReason =
          std::string(trnrt::dtypeName(reference.dtype)) + ", exact";
    } else {
      // The least precise step that led to the output, not its own type,
      // bounds how closely the device can match: an f32 gradient of bf16
      // matmuls is only as good as bf16.
      Value result = function.front().getTerminator()->getOperand(i);
      mlir::trn::ComputePrecision precision =
          mlir::trn::computePrecision(result, *autoCast);
      trnrt::DType computed = reference.dtype;
      if (precision.type)
        computed = mlir::trn::eval::dtypeOf(precision.type).value_or(computed);
      comparison.tolerance = toleranceFor(computed);
      comparison.toleranceReason =
          std::string("computed in ") + trnrt::dtypeName(computed);
      if (precision.byAutoCast)
        comparison.toleranceReason += " by --auto-cast " + options.autoCast;
    }
    double scale = 0;
    bool finite = true;
    for (int64_t e = 0; e < reference.numElements(); ++e) {
      double want = reference.getDouble(e), got = it->values[e];
      if (std::isnan(want) != std::isnan(got)) {
        finite = false;
        continue;
      }
      if (std::isnan(want))
        continue;
      scale = std::max(scale, std::fabs(want));
      comparison.maxAbsError =
          std::max(comparison.maxAbsError, std::fabs(want - got));
    }
    comparison.maxRelError = comparison.maxAbsError / std::max(scale, 1e-30);
    comparison.passed =
        finite && (comparison.maxAbsError == 0 ||
                   comparison.maxRelError <= comparison.tolerance);
    comparisons.push_back(comparison);
  }
  return true;
}

namespace {

/// 2e-2, 1e-4, 0.25: a tolerance as one would write it.
std::string toleranceText(double tolerance) {
  char text[32];
  if (tolerance != 0 && (tolerance < 1e-2 || tolerance >= 1e4)) {
    std::snprintf(text, sizeof(text), "%.2e", tolerance);
    // 1.00e-04 -> 1e-4, 2.50e-03 -> 2.5e-3.
    std::string mantissa(text, std::strchr(text, 'e'));
    while (mantissa.back() == '0')
      mantissa.pop_back();
    if (mantissa.back() == '.')
      mantissa.pop_back();
    int exponent = std::atoi(std::strchr(text, 'e') + 1);
    return mantissa + "e" + std::to_string(exponent);
  }
  std::snprintf(text, sizeof(text), "%.3g", tolerance);
  return text;
}

} // namespace

CheckOptions checkOptionsFor(const std::map<std::string, std::string> &report,
                             std::optional<double> rtol) {
  CheckOptions options;
  options.rtol = rtol;
  auto recorded = report.find("normalized_flags");
  std::map<std::string, std::string> flags =
      mlir::trn::cache::parseNormalizedFlags(
          recorded == report.end() ? std::string() : recorded->second);
  if (flags.count("auto-cast"))
    options.autoCast = flags["auto-cast"];
  if (flags.count("auto-cast-type"))
    options.autoCastType = flags["auto-cast-type"];
  return options;
}

bool printComparisons(const std::string &graphPath,
                      const std::vector<OutputComparison> &comparisons,
                      std::FILE *out) {
  bool allPassed = true;
  for (const OutputComparison &c : comparisons) {
    std::fprintf(out,
                 "check %-24s max abs %.3g, max rel %.3g, rtol %s (%s): %s\n",
                 c.name.c_str(), c.maxAbsError, c.maxRelError,
                 toleranceText(c.tolerance).c_str(), c.toleranceReason.c_str(),
                 c.passed ? "ok" : "DIFFERS");
    allPassed &= c.passed;
  }
  std::fprintf(out, "check against %s: %s\n", graphPath.c_str(),
               allPassed ? "all outputs match" : "FAILED");
  return allPassed;
}
