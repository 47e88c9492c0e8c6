//===- CacheKeyTest.cpp - canonical graph hash and flag normalisation -----===//
//
// Key stability: the same graph printed or written differently gets one key;
// every semantic change gets a new one. Flags: spelling does not matter,
// output-neutral flags are dropped, mistakes are explained.
//
//===----------------------------------------------------------------------===//

#include "trn/Cache/Key.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trn/Dialect/Trn/Utils/GraphHash.h"
#include "trn/Driver/CompileFlags.h"
#include "trn/Driver/ToolCommandLine.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::trn;
using cache::CacheKey;

namespace {

//===----------------------------------------------------------------------===//
// Graph hash
//===----------------------------------------------------------------------===//

// A small step graph that exercises every kind of field in the key: argument
// and result attributes, an inherent enum attribute, array attributes, a dense
// and a splat constant.
constexpr const char *kStep = R"mlir(
func.func @step(%w: tensor<4x8xf32> {trn.role = "parameter", trn.name = "w"},
                %x: tensor<2x8xf32> {trn.role = "data", trn.name = "x"},
                %m: tensor<4x8xf32> {trn.role = "optimizer_state", trn.name = "m"})
    -> (tensor<2x4xf32> {trn.role = "output", trn.name = "y"},
        tensor<4x8xf32> {trn.role = "parameter", trn.name = "w", trn.aliases = 0},
        tensor<4x8xf32> {trn.role = "optimizer_state", trn.name = "m"}) {
  %y = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %g = trn.gelu %y approximate = tanh : tensor<2x4xf32>
  %c = trn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = trn.broadcast_in_dim %c, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
  %p = trn.pad %b, low = [1, 0], high = [0, 0], value = 0.0 : (tensor<1x4xf32>) -> tensor<2x4xf32>
  %s = trn.sub %g, %p : tensor<2x4xf32>
  %h = trn.constant dense<0.5> : tensor<4x8xf32>
  %w2 = trn.mul %w, %h : tensor<4x8xf32>
  %m2 = trn.add %m, %w2 : tensor<4x8xf32>
  return %s, %w2, %m2 : tensor<2x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
)mlir";

// kStep written differently: other SSA and function names, locations,
// comments, spacing, attribute order in the dictionaries.
constexpr const char *kStepRewritten = R"mlir(
// A comment that must not matter.
#loc = loc("model.py":10:2)
func.func @training_step_renamed(
    %weight : tensor<4x8xf32> {trn.name = "w", trn.role = "parameter"} loc("model.py":1:1),
    %input : tensor<2x8xf32> {trn.name = "x", trn.role = "data"} loc(unknown),
    %adam_m : tensor<4x8xf32> {trn.name = "m", trn.role = "optimizer_state"})
      -> (tensor<2x4xf32> {trn.name = "y", trn.role = "output"},
          tensor<4x8xf32> {trn.aliases = 0, trn.name = "w", trn.role = "parameter"},
          tensor<4x8xf32> {trn.role = "optimizer_state", trn.name = "m"}) {
  %0 = trn.dot_general %input,%weight, batching_dims = [] x [],
         contracting_dims = [1] x [1]
         : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32> loc(#loc)
  %1 = trn.gelu %0 approximate = tanh : tensor<2x4xf32> loc(fused["a", "b"])
  %2 = trn.constant dense<[1.000000e+00, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %3 = trn.broadcast_in_dim %2, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
  %pad = trn.pad %3,low=[1,0],high=[0,0],value=0.000000e+00:(tensor<1x4xf32>)->tensor<2x4xf32>
  %4 = trn.sub %1, %pad : tensor<2x4xf32> loc(callsite("f" at "g.py":3:4))
  %5 = trn.constant dense<5.000000e-01> : tensor<4x8xf32>
  %6 = trn.mul %weight, %5 : tensor<4x8xf32>
  %new_m = "trn.add"(%adam_m, %6) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %4, %6, %new_m : tensor<2x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
} loc("model.py":0:0)
)mlir";

class GraphHashTest : public ::testing::Test {
protected:
  GraphHashTest() { context.loadDialect<TrnDialect, func::FuncDialect>(); }

  OwningOpRef<ModuleOp> parse(const std::string &source) {
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return success();
    });
    auto module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << diagnostics << source;
    return module;
  }

  Hash128 key(const std::string &source) {
    auto module = parse(source);
    if (!module)
      return Hash128{};
    return hashGraph(*module);
  }

  std::string print(ModuleOp module, OpPrintingFlags flags) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, flags);
    return text;
  }

  /// `source` with the first occurrence of `from` replaced by `to`; fails
  /// the test if `from` is absent, so a typo cannot make a test vacuous.
  static std::string replaceOnce(std::string source, const std::string &from,
                                 const std::string &to) {
    size_t at = source.find(from);
    EXPECT_NE(at, std::string::npos) << "'" << from << "' not in source";
    if (at != std::string::npos)
      source.replace(at, from.size(), to);
    return source;
  }
  static std::string replaceAll(std::string source, const std::string &from,
                                const std::string &to) {
    size_t count = 0;
    for (size_t at = source.find(from); at != std::string::npos;
         at = source.find(from, at + to.size())) {
      source.replace(at, from.size(), to);
      ++count;
    }
    EXPECT_GT(count, 0u) << "'" << from << "' not in source";
    return source;
  }

  /// Every round trip through the printer gives the same key as `source`.
  void expectStableUnderPrinting(const std::string &source) {
    auto module = parse(source);
    ASSERT_TRUE(module);
    Hash128 expected = hashGraph(*module);
    std::string form = canonicalForm(*module);

    std::vector<std::pair<std::string, OpPrintingFlags>> printings;
    printings.push_back({"pretty", OpPrintingFlags()});
    printings.push_back({"generic", OpPrintingFlags().printGenericOpForm()});
    printings.push_back({"debuginfo", OpPrintingFlags().enableDebugInfo()});
    printings.push_back(
        {"generic debuginfo",
         OpPrintingFlags().printGenericOpForm().enableDebugInfo()});
    printings.push_back({"local scope", OpPrintingFlags().useLocalScope()});
    for (auto &[name, flags] : printings) {
      std::string printed = print(*module, flags);
      auto reparsed = parse(printed);
      ASSERT_TRUE(reparsed) << name;
      EXPECT_EQ(hashGraph(*reparsed), expected) << name << "\n" << printed;
      EXPECT_EQ(canonicalForm(*reparsed), form) << name;
    }
  }

  MLIRContext context;
};

TEST_F(GraphHashTest, HashIsXxh3OfTheVersionedCanonicalForm) {
  auto module = parse(kStep);
  ASSERT_TRUE(module);
  std::string form = canonicalForm(*module);
  EXPECT_EQ(form.rfind(std::string(kGraphHashVersion) + "\n", 0), 0u) << form;
  EXPECT_EQ(hashGraph(*module), hashBytes(form));

  GraphHashStats stats;
  hashGraph(*module, &stats);
  EXPECT_EQ(stats.canonicalBytes, form.size());
  EXPECT_EQ(stats.operations, 12u); // module, func, 9 trn ops, return

  // No SSA names, no function name, no locations.
  EXPECT_EQ(form.find("%w2"), std::string::npos) << form;
  EXPECT_EQ(form.find("step"), std::string::npos) << form;
  EXPECT_EQ(form.find("loc("), std::string::npos) << form;
  EXPECT_NE(form.find("trn.gelu(%"), std::string::npos) << form;
  EXPECT_NE(form.find("\"trn.role\" = \"parameter\""), std::string::npos)
      << form;
}

TEST_F(GraphHashTest, SameGraphWrittenDifferentlyHasOneKey) {
  EXPECT_EQ(key(kStep), key(kStepRewritten));
  expectStableUnderPrinting(kStep);
  expectStableUnderPrinting(kStepRewritten);
}

TEST_F(GraphHashTest, HandWrittenGenericFormHasTheSameKey) {
  const char *generic = R"mlir(
"builtin.module"() ({
  "func.func"() <{
      arg_attrs = [{trn.name = "w", trn.role = "parameter"},
                   {trn.name = "x", trn.role = "data"},
                   {trn.name = "m", trn.role = "optimizer_state"}],
      function_type = (tensor<4x8xf32>, tensor<2x8xf32>, tensor<4x8xf32>)
          -> (tensor<2x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>),
      res_attrs = [{trn.name = "y", trn.role = "output"},
                   {trn.aliases = 0 : i64, trn.name = "w", trn.role = "parameter"},
                   {trn.name = "m", trn.role = "optimizer_state"}],
      sym_name = "generic"}> ({
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<2x8xf32>, %c: tensor<4x8xf32>):
    %0 = "trn.dot_general"(%b, %a) <{lhs_batching_dims = array<i64>,
        rhs_batching_dims = array<i64>, lhs_contracting_dims = array<i64: 1>,
        rhs_contracting_dims = array<i64: 1>}>
        : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    %1 = "trn.gelu"(%0) <{approximate = 1 : i32}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %2 = "trn.constant"() <{value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>}> : () -> tensor<4xf32>
    %3 = "trn.broadcast_in_dim"(%2) <{dims = array<i64: 1>}> : (tensor<4xf32>) -> tensor<1x4xf32>
    %p = "trn.pad"(%3) <{value = 0.0 : f64, low = array<i64: 1, 0>,
        high = array<i64: 0, 0>}> : (tensor<1x4xf32>) -> tensor<2x4xf32>
    %4 = "trn.sub"(%1, %p) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %5 = "trn.constant"() <{value = dense<0.5> : tensor<4x8xf32>}> : () -> tensor<4x8xf32>
    %6 = "trn.mul"(%a, %5) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %7 = "trn.add"(%c, %6) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    "func.return"(%4, %6, %7) : (tensor<2x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
)mlir";
  EXPECT_EQ(key(generic), key(kStep));
}

TEST_F(GraphHashTest, DefaultValuedAttributeWrittenOrNotHasOneKey) {
  // `approximate` defaults to none: writing it explicitly changes nothing.
  std::string implicitDefault = replaceOnce(kStep, " approximate = tanh", "");
  std::string explicitDefault =
      replaceOnce(implicitDefault, "%g = trn.gelu %y : tensor<2x4xf32>",
                  "%g = \"trn.gelu\"(%y) <{approximate = 0 : i32}> : "
                  "(tensor<2x4xf32>) -> tensor<2x4xf32>");
  EXPECT_EQ(key(implicitDefault), key(explicitDefault));
  EXPECT_NE(key(implicitDefault), key(kStep));
}

TEST_F(GraphHashTest, EverySemanticChangeGivesANewKey) {
  struct Change {
    const char *what;
    std::string source;
  };
  const std::string step = kStep;
  // The result signature and the return with results 1 and 2 (same type)
  // swapped, separately and together.
  const std::string results =
      "        tensor<4x8xf32> {trn.role = \"parameter\", trn.name = \"w\", "
      "trn.aliases = 0},\n"
      "        tensor<4x8xf32> {trn.role = \"optimizer_state\", trn.name = "
      "\"m\"}) {";
  const std::string swappedResults =
      "        tensor<4x8xf32> {trn.role = \"optimizer_state\", trn.name = "
      "\"m\"},\n"
      "        tensor<4x8xf32> {trn.role = \"parameter\", trn.name = \"w\", "
      "trn.aliases = 0}) {";
  const std::string returned = "return %s, %w2, %m2";
  const std::string swappedReturned = "return %s, %m2, %w2";
  const std::string arguments =
      "func.func @step(%w: tensor<4x8xf32> {trn.role = \"parameter\", "
      "trn.name = \"w\"},";
  const std::string optimizerArgument =
      "                %m: tensor<4x8xf32> {trn.role = \"optimizer_state\", "
      "trn.name = \"m\"})";

  std::vector<Change> changes = {
      {"op changed", replaceOnce(step, "trn.sub %g", "trn.add %g")},
      {"operands swapped",
       replaceOnce(step, "trn.sub %g, %p", "trn.sub %p, %g")},
      {"operand rewired",
       replaceOnce(step, "trn.mul %w, %h", "trn.mul %h, %h")},
      {"enum attribute", replaceOnce(step, " approximate = tanh", "")},
      {"array attribute", replaceOnce(step, "low = [1, 0], high = [0, 0]",
                                      "low = [0, 0], high = [1, 0]")},
      {"float attribute", replaceOnce(step, "value = 0.0", "value = -0.0")},
      {"one constant element", replaceOnce(step, "3.0, 4.0", "3.5, 4.0")},
      {"splat value", replaceOnce(step, "dense<0.5>", "dense<0.25>")},
      {"element type f32 -> bf16", replaceAll(step, "f32", "bf16")},
      {"shape",
       replaceOnce(replaceAll(replaceAll(step, "2x8x", "3x8x"), "2x4x", "3x4x"),
                   "low = [1, 0]", "low = [2, 0]")},
      {"argument role",
       replaceOnce(step, "trn.role = \"data\"", "trn.role = \"label\"")},
      {"result role",
       replaceOnce(step, "trn.role = \"output\"", "trn.role = \"loss\"")},
      {"alias added", replaceOnce(step, "trn.name = \"m\"}) {",
                                  "trn.name = \"m\", trn.aliases = 2}) {")},
      {"alias changed",
       replaceOnce(step, "trn.aliases = 0", "trn.aliases = 2")},
      {"trn.name",
       replaceOnce(step, "trn.name = \"x\"", "trn.name = \"input\"")},
      {"discardable attribute added",
       replaceOnce(step, "%h = trn.constant dense<0.5>",
                   "%h = trn.constant {mark = 1} dense<0.5>")},
      {"result attributes swapped", replaceOnce(step, results, swappedResults)},
      {"returned values swapped", replaceOnce(step, returned, swappedReturned)},
      {"result order", replaceOnce(replaceOnce(step, results, swappedResults),
                                   returned, swappedReturned)},
      {"argument order",
       replaceOnce(
           replaceOnce(step, optimizerArgument,
                       "                %w: tensor<4x8xf32> {trn.role = "
                       "\"parameter\", trn.name = \"w\"})"),
           arguments,
           "func.func @step(%m: tensor<4x8xf32> {trn.role = "
           "\"optimizer_state\", trn.name = \"m\"},")},
      {"ops reordered",
       replaceOnce(
           replaceOnce(
               step, "  %h = trn.constant dense<0.5> : tensor<4x8xf32>\n", ""),
           "  %y = trn.dot_general",
           "  %h = trn.constant dense<0.5> : tensor<4x8xf32>\n"
           "  %y = trn.dot_general")},
  };

  std::vector<std::pair<std::string, Hash128>> seen = {{"original", key(step)}};
  for (const Change &change : changes) {
    Hash128 changed = key(change.source);
    EXPECT_NE(changed, Hash128{}) << change.what;
    for (const auto &[what, hash] : seen)
      EXPECT_NE(changed, hash) << change.what << " collides with " << what;
    seen.push_back({change.what, changed});
  }
}

TEST_F(GraphHashTest, TransformerBlockKeyIsStable) {
  std::string path =
      std::string(TRN_SOURCE_DIR) + "/test/Eval/transformer-block.mlir";
  auto module = parseSourceFile<ModuleOp>(path, &context);
  ASSERT_TRUE(module) << path;

  GraphHashStats stats;
  Hash128 original = hashGraph(*module, &stats);
  EXPECT_EQ(stats.operations, 377u + 3u); // + module, func and return

  expectStableUnderPrinting(print(*module, OpPrintingFlags()));

  // Renaming the function changes nothing; a role does.
  auto function = *module->getOps<func::FuncOp>().begin();
  EXPECT_EQ(hashGraph(function), [&] {
    function.setSymName("another_name");
    return hashGraph(function);
  }());
  EXPECT_EQ(hashGraph(*module), original);
  function.setArgAttr(0, "trn.role", StringAttr::get(&context, "constant"));
  EXPECT_NE(hashGraph(*module), original);
}

TEST_F(GraphHashTest, SymbolReferencesUseFunctionIndices) {
  const char *twoFunctions = R"mlir(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = trn.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = trn.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)mlir";
  Hash128 original = key(twoFunctions);
  EXPECT_EQ(original, key(replaceAll(twoFunctions, "@helper", "@h2")));
  EXPECT_EQ(original, key(replaceAll(twoFunctions, "@main", "@entry")));
  // Calling the other (identical) function is a different graph.
  EXPECT_NE(original,
            key(replaceOnce(twoFunctions, "call @helper", "call @other")));
  EXPECT_NE(original, key(replaceOnce(twoFunctions, "trn.exp", "trn.log")));
  EXPECT_NE(original, key(replaceOnce(twoFunctions, "func.func private @other",
                                      "func.func @other")));
}

TEST_F(GraphHashTest, RegionsAndBlocksAreHashedGenerically) {
  // Ops of other dialects, several blocks (a successor used before its block
  // appears), a nested region and properties of an unregistered op.
  context.allowUnregisteredDialects();
  const char *cfg = R"mlir(
func.func @f(%a: i32, %c: i1) -> i32 {
  "test.cond_br"(%c)[^exit, ^body] : (i1) -> ()
^body:
  %0 = "test.op"(%a) <{kind = 1 : i32}> : (i32) -> i32
  "test.br"()[^exit] : () -> ()
^exit:
  "test.region"() ({
  ^bb0(%x: i32):
    "test.use"(%x, %a) : (i32, i32) -> ()
  }) : () -> ()
  "test.return"(%a) : (i32) -> ()
}
)mlir";
  Hash128 original = key(cfg);
  EXPECT_EQ(original,
            key(replaceAll(replaceAll(cfg, "^body", "^bb7"), "^exit", "^bb3")));
  EXPECT_NE(original,
            key(replaceOnce(cfg, "[^exit, ^body]", "[^body, ^exit]")));
  EXPECT_NE(original, key(replaceOnce(cfg, "kind = 1", "kind = 2")));
  EXPECT_NE(original, key(replaceOnce(cfg, "\"test.use\"(%x, %a)",
                                      "\"test.use\"(%a, %x)")));
  EXPECT_NE(original,
            key(replaceOnce(replaceOnce(cfg, "%x: i32", "%x: i64"),
                            ": (i32, i32) -> ()", ": (i64, i32) -> ()")));
}

TEST_F(GraphHashTest, LargeConstantsAreHashedByContent) {
  // 64 elements: above the inline size, so hashed as a digest.
  auto constant = [](int changedIndex) {
    std::string values;
    for (int i = 0; i < 64; ++i)
      values += (i ? ", " : "") + std::to_string(i == changedIndex ? 1000 : i);
    return "func.func @f() -> tensor<64xi32> {\n"
           "  %0 = trn.constant dense<[" +
           values +
           "]> : tensor<64xi32>\n"
           "  return %0 : tensor<64xi32>\n}\n";
  };
  Hash128 original = key(constant(-1));
  EXPECT_EQ(original, key(constant(-1)));
  EXPECT_NE(original, key(constant(0)));
  EXPECT_NE(original, key(constant(63)));
  auto module = parse(constant(-1));
  EXPECT_NE(canonicalForm(*module).find("256 bytes xxh3:"), std::string::npos)
      << canonicalForm(*module);
}

//===----------------------------------------------------------------------===//
// Flags
//===----------------------------------------------------------------------===//

std::string canonicalFlags(const std::vector<std::string> &args) {
  std::string error;
  auto flags = trn::normalizeFlags(args, error);
  EXPECT_TRUE(flags) << error;
  return flags ? flags->canonical() : "<error: " + error + ">";
}

std::string flagError(const std::vector<std::string> &args) {
  std::string error;
  auto flags = trn::normalizeFlags(args, error);
  EXPECT_FALSE(flags) << flags->canonical();
  return error;
}

Hash128 flagHash(const std::vector<std::string> &args) {
  std::string error;
  auto flags = trn::normalizeFlags(args, error);
  EXPECT_TRUE(flags) << error;
  return flags ? cache::hashFlags(*flags) : Hash128{};
}

TEST(CacheFlagsTest, DefaultsAreFilledIn) {
  EXPECT_EQ(canonicalFlags({}),
            "auto-cast=none;auto-cast-type=bf16;microbatches=1;opt-level=2;"
            "pipeline-schedule=1f1b;pp=1;target=trn1;tp=1");
  EXPECT_EQ(
      canonicalFlags({"--target", "trn1", "-O2", "--auto-cast=none",
                      "--auto-cast-type", "bf16", "--mesh", "pp=1,tp=1",
                      "--microbatches", "1", "--pipeline-schedule", "1f1b"}),
      canonicalFlags({}));
}

TEST(CacheFlagsTest, SpellingAndOrderDoNotMatter) {
  std::string expected = canonicalFlags(
      {"--target=trn2", "--opt-level=3", "--auto-cast=matmul", "--tp=8"});
  EXPECT_EQ(canonicalFlags({"--tp", "8", "--auto-cast", "matmul", "-O3",
                            "--target", "trn2"}),
            expected);
  EXPECT_EQ(canonicalFlags({"  --target = trn2 ", "--opt-level 3",
                            "--auto-cast=MATMUL", "--mesh=tp=8"}),
            expected);
  EXPECT_EQ(canonicalFlags({"-target", "trn2", "-O3", "--auto-cast", "matmul",
                            "--mesh", " tp = 08 "}),
            expected);
}

TEST(CacheFlagsTest, OptLevelForms) {
  EXPECT_EQ(flagHash({"-O2"}), flagHash({"--opt-level=2"}));
  EXPECT_EQ(flagHash({"-O2"}), flagHash({}));
  EXPECT_EQ(flagHash({"--opt-level", "2"}), flagHash({}));
  EXPECT_NE(flagHash({"-O3"}), flagHash({}));
  EXPECT_NE(flagHash({"-O0"}), flagHash({"-O1"}));
}

TEST(CacheFlagsTest, RepeatedFlagsLastWins) {
  EXPECT_EQ(flagHash({"-O1", "--opt-level=3"}), flagHash({"-O3"}));
  EXPECT_EQ(flagHash({"--target", "trn2", "--target", "trn1"}), flagHash({}));
  EXPECT_EQ(flagHash({"--mesh", "tp=4,pp=2", "--mesh", "tp=2"}),
            flagHash({"--tp", "2"}));
}

TEST(CacheFlagsTest, MeshForms) {
  Hash128 expected = flagHash({"--pp", "4", "--tp", "8", "--dp", "2"});
  EXPECT_EQ(flagHash({"--mesh", "dp=2,pp=4,tp=8"}), expected);
  EXPECT_EQ(flagHash({"--mesh=pp=4, tp=8, dp=16"}), expected);
  EXPECT_EQ(flagHash({"--mesh", "pp=4", "--tp", "8", "--dp=2"}), expected);
  Hash128 noDp = flagHash({"--pp", "4", "--tp", "8"});
  EXPECT_EQ(flagHash({"--mesh", "tp=8,pp=4"}), noDp);
  // The same degree from both forms is not a conflict.
  EXPECT_EQ(flagHash({"--mesh", "pp=4,tp=8", "--tp", "8"}), noDp);
  EXPECT_NE(flagHash({"--tp", "4"}), flagHash({}));
  EXPECT_NE(flagHash({"--pp", "2"}), flagHash({}));
  EXPECT_NE(flagHash({"--pp", "2"}), flagHash({"--tp", "2"}));
}

TEST(CacheFlagsTest, DataParallelDegreeIsNotInTheKey) {
  // A data-parallel program is one replica's step and serves every degree:
  // the key says whether the program is data-parallel, not how wide.
  EXPECT_EQ(flagHash({"--dp", "8"}), flagHash({"--dp", "2"}));
  EXPECT_EQ(flagHash({"--mesh", "dp=64,tp=8"}),
            flagHash({"--tp", "8", "--dp", "4"}));
  EXPECT_EQ(flagHash({"--dp", "1"}), flagHash({}));
  // With dp > 1 the program averages its gradients over dp: not the
  // single-device program.
  EXPECT_NE(flagHash({"--dp", "8"}), flagHash({}));
  EXPECT_EQ(canonicalFlags({"--dp", "8"}).find("dp=8"), std::string::npos);
}

TEST(CacheFlagsTest, PartitioningSwitches) {
  // Off by default and then absent: existing keys do not change.
  EXPECT_EQ(canonicalFlags({}).find("zero1"), std::string::npos);
  EXPECT_NE(flagHash({"--tp", "2", "--sequence-parallel"}),
            flagHash({"--tp", "2"}));
  // ZeRO-1 splits the optimizer states by the dp degree: then it is kept.
  EXPECT_NE(flagHash({"--dp", "2", "--zero1"}),
            flagHash({"--dp", "4", "--zero1"}));
  EXPECT_NE(canonicalFlags({"--dp", "4", "--zero1"}).find("dp=4"),
            std::string::npos);
  // A switch takes no value.
  std::string error;
  EXPECT_FALSE(normalizeFlags({"--zero1=on"}, error).has_value());
}

TEST(CacheFlagsTest, OutputNeutralFlagsAreDropped) {
  Hash128 expected = flagHash({"--target", "trn2"});
  EXPECT_EQ(flagHash({"--target",
                      "trn2",
                      "--cache-dir",
                      "/tmp/c",
                      "--no-cache",
                      "-v",
                      "--verbose",
                      "-q",
                      "--quiet",
                      "--report=r.json",
                      "-o",
                      "out.neff",
                      "--output",
                      "x",
                      "--retry-failed",
                      "--timeout",
                      "600",
                      "--lock-timeout=30",
                      "--jobs",
                      "4",
                      "-j",
                      "2",
                      "-j8",
                      "--mlir-print-ir-after-all",
                      "--color"}),
            expected);
  EXPECT_EQ(flagHash({"-oout.neff", "--color=never", "--target=trn2"}),
            expected);
}

TEST(CacheFlagsTest, EveryCodegenFlagChangesTheHash) {
  std::vector<std::vector<std::string>> variants = {
      {},
      {"--target", "trn2"},
      {"-O0"},
      {"-O1"},
      {"-O3"},
      {"--auto-cast", "matmul"},
      {"--auto-cast", "all"},
      {"--auto-cast-type", "fp8_e4m3"},
      {"--tp", "2"},
      {"--pp", "2"},
      {"--pp", "2", "--microbatches", "4"},
      {"--pp", "2", "--pipeline-schedule", "gpipe"},
      {"--pp", "2", "--stage", "1"},
      {"--pp", "2", "--recompute-activations"},
  };
  std::vector<Hash128> hashes;
  for (const auto &args : variants) {
    Hash128 hash = flagHash(args);
    for (size_t i = 0; i < hashes.size(); ++i)
      EXPECT_NE(hash, hashes[i]) << variants[i].size() << " vs " << args[0];
    hashes.push_back(hash);
  }
}

TEST(CacheFlagsTest, PipelineFlagsNeedStages) {
  // Microbatches without stages: gradient accumulation in the step, with
  // or without recomputation; the key tells them from the whole step.
  EXPECT_EQ(canonicalFlags({"--microbatches", "4", "--recompute-activations"}),
            "auto-cast=none;auto-cast-type=bf16;microbatches=4;opt-level=2;"
            "pipeline-schedule=1f1b;pp=1;recompute-activations=on;target=trn1;"
            "tp=1");
  EXPECT_NE(flagHash({"--microbatches", "4"}), flagHash({}));
  EXPECT_EQ(flagHash({"--microbatches", "1"}), flagHash({}));
  EXPECT_EQ(flagError({"--stage", "0"}),
            "--stage applies to pipeline parallelism (--pp > 1)");
  EXPECT_EQ(flagError({"--recompute-activations"}),
            "--recompute-activations applies to a step cut into microbatches "
            "or pipeline stages (--microbatches > 1 or --pp > 1)");
  EXPECT_EQ(flagError({"--pp", "2", "--stage", "2"}),
            "--stage 2 is not a stage of --pp 2 (stages count from 0)");
  EXPECT_EQ(flagError({"--pp", "2", "--stage", "-1"}),
            "invalid value '-1' for '--stage'; expected a non-negative "
            "integer");
}

TEST(CacheFlagsTest, UnknownFlagsSuggestTheClosest) {
  EXPECT_EQ(flagError({"--auto-cats", "matmul"}),
            "unknown flag '--auto-cats'; did you mean '--auto-cast'?");
  EXPECT_EQ(flagError({"--targte=trn2"}),
            "unknown flag '--targte'; did you mean '--target'?");
  EXPECT_EQ(flagError({"--microbatch", "4"}),
            "unknown flag '--microbatch'; did you mean '--microbatches'?");
  EXPECT_EQ(flagError({"--frobnicate"}), "unknown flag '--frobnicate'");
  EXPECT_EQ(flagError({"input.mlir"}),
            "unexpected argument 'input.mlir'; only codegen flags are "
            "accepted");
}

TEST(CacheFlagsTest, BadValuesListWhatIsAllowed) {
  EXPECT_EQ(flagError({"--target", "trn3"}),
            "invalid value 'trn3' for '--target'; allowed: trn1, trn2");
  EXPECT_EQ(
      flagError({"--auto-cast=fp8"}),
      "invalid value 'fp8' for '--auto-cast'; allowed: none, matmul, all");
  EXPECT_EQ(flagError({"--auto-cast-type", "fp16"}),
            "invalid value 'fp16' for '--auto-cast-type'; allowed: bf16, "
            "fp8_e4m3");
  EXPECT_EQ(flagError({"--pipeline-schedule", "zb"}),
            "invalid value 'zb' for '--pipeline-schedule'; allowed: gpipe, "
            "1f1b");
  EXPECT_EQ(flagError({"-O4"}),
            "invalid value '4' for '-O4'; allowed: 0, 1, 2, 3 (as -O<N> or "
            "--opt-level=<N>)");
  EXPECT_EQ(flagError({"--opt-level=fast"}),
            "invalid value 'fast' for '--opt-level'; allowed: 0, 1, 2, 3 (as "
            "-O<N> or --opt-level=<N>)");
  EXPECT_EQ(flagError({"--microbatches", "0"}),
            "invalid value '0' for '--microbatches'; expected a positive "
            "integer");
  EXPECT_EQ(flagError({"--tp", "-2"}),
            "invalid value '-2' for '--tp'; expected a positive integer");
  EXPECT_EQ(flagError({"--jobs", "many"}),
            "invalid value 'many' for '--jobs'; expected a positive integer");
  EXPECT_EQ(flagError({"--tp", "99999999999999"}),
            "invalid value '99999999999999' for '--tp'; expected a positive "
            "integer");
  EXPECT_EQ(flagError({"-O"}),
            "invalid value '' for '-O'; allowed: 0, 1, 2, 3 (as -O<N> or "
            "--opt-level=<N>)");
  EXPECT_EQ(flagError({"--target"}), "flag '--target' needs a value");
  EXPECT_EQ(flagError({"--target", "--tp", "2"}),
            "flag '--target' needs a value");
  EXPECT_EQ(flagError({"--verbose=yes"}), "flag '--verbose' takes no value");
}

TEST(CacheFlagsTest, MeshErrors) {
  EXPECT_EQ(flagError({"--mesh", "tp=2", "--tp", "4"}),
            "conflicting degrees for mesh axis 'tp': --mesh tp=2 but --tp 4");
  EXPECT_EQ(flagError({"--tp", "4", "--mesh", "tp=2"}),
            "conflicting degrees for mesh axis 'tp': --mesh tp=2 but --tp 4");
  EXPECT_EQ(flagError({"--mesh", "dp=2", "--dp", "4"}),
            "conflicting degrees for mesh axis 'dp': --mesh dp=2 but --dp 4");
  EXPECT_EQ(flagError({"--mesh", "ep=2"}),
            "unknown mesh axis 'ep' for '--mesh'; allowed: dp, pp, tp");
  EXPECT_EQ(flagError({"--mesh", "tp=2,tp=4"}),
            "mesh axis 'tp' given twice in '--mesh'");
  EXPECT_EQ(flagError({"--mesh", "tp"}),
            "invalid mesh entry 'tp' for '--mesh'; expected axis=degree with "
            "axes dp, pp, tp");
  EXPECT_EQ(flagError({"--mesh", "tp=0"}),
            "invalid degree '0' for mesh axis 'tp'; expected a positive "
            "integer");
  EXPECT_EQ(flagError({"--mesh", "tp=2,"}),
            "invalid mesh entry '' for '--mesh'; expected axis=degree with "
            "axes dp, pp, tp");
}

TEST(CacheFlagsTest, StagesToCompile) {
  EXPECT_EQ(stagesToCompile({}), 0);
  EXPECT_EQ(stagesToCompile({"--tp", "2"}), 0);
  EXPECT_EQ(stagesToCompile({"--pp", "4"}), 4);
  EXPECT_EQ(stagesToCompile({"--mesh", "dp=2,pp=3"}), 3);
  EXPECT_EQ(stagesToCompile({"--pp", "4", "--stage", "1"}), 0);
  EXPECT_EQ(stagesToCompile({"--pp=4", "--stage=1"}), 0);
  EXPECT_EQ(stagesToCompile({"--pp", "4", "--frobnicate"}), 0);
}

/// parseToolArgs with a tool that has two options of its own: the uses it
/// reports, or its error.
std::string toolArgs(const std::vector<std::string> &args,
                     std::vector<std::string> *codegen = nullptr,
                     bool takesCodegenFlags = true,
                     std::vector<std::string> *command = nullptr) {
  ToolCommandLine tool;
  tool.tool = "tool";
  tool.notOurs = "it runs no workers";
  tool.takesCodegenFlags = takesCodegenFlags;
  tool.takesCommandAfterSeparator = command != nullptr;
  tool.flags = {{"output", true, 'o', 0, ""},
                {"analyze", false, 0, 1, ""},
                {"num-parallel", true, 'j', 2, ""},
                {"flags", true, 0, 3, "", /*valueMayBeAFlag=*/true}};
  std::string uses;
  ParsedToolArgs parsed;
  auto onFlag = [&](const ToolFlagUse &use) -> std::optional<std::string> {
    uses += std::string(use.flag->name) + "(" + use.spelled + "=" +
            use.value.value_or("-") + ") ";
    return std::nullopt;
  };
  if (auto error = parseToolArgs(args, tool, onFlag, parsed))
    return *error;
  for (const std::string &positional : parsed.positionals)
    uses += "[" + positional + "] ";
  if (codegen)
    *codegen = parsed.codegenArgs;
  if (command)
    *command = parsed.command;
  return uses;
}

TEST(CacheFlagsTest, ToolCommandLines) {
  std::vector<std::string> codegen;
  EXPECT_EQ(toolArgs({"compile", "g.mlir", "-o", "a", "--target", "trn2", "-O1",
                      "--analyze", "-"},
                     &codegen),
            "output(-o=a) analyze(--analyze=-) [compile] [g.mlir] [-] ");
  EXPECT_EQ(codegen, (std::vector<std::string>{"--target", "trn2", "-O1"}));
  EXPECT_EQ(toolArgs({"-oa", "-o=b", "--output=c", "-output", "d"}),
            "output(-o=a) output(-o=b) output(--output=c) output(-output=d) ");
  EXPECT_EQ(toolArgs({"-j4", "--num_parallel", "2", "--flags", "--tp 2"}),
            "num-parallel(-j=4) num-parallel(--num-parallel=2) "
            "flags(--flags=--tp 2) ");
  EXPECT_EQ(toolArgs({"--anlyze"}),
            "unknown option '--anlyze'; did you mean '--analyze'?");
  EXPECT_EQ(toolArgs({"--auto-cats", "all"}),
            "unknown option '--auto-cats'; did you mean '--auto-cast'?");
  EXPECT_EQ(toolArgs({"--frobnicate=2"}),
            "unknown option '--frobnicate' (see tool --help)");
  EXPECT_EQ(toolArgs({"-x"}), "unknown option '-x' (see tool --help)");
  EXPECT_EQ(toolArgs({"--output"}), "option '--output' needs a value");
  EXPECT_EQ(toolArgs({"-o", "--analyze"}), "option '-o' needs a value");
  EXPECT_EQ(toolArgs({"--analyze=yes"}), "option '--analyze' takes no value");
  EXPECT_EQ(toolArgs({"--jobs", "4"}),
            "option '--jobs' is not a tool option (it runs no workers)");
  // A tool without codegen flags refuses them as not its own.
  EXPECT_EQ(toolArgs({"--target", "trn2"}, nullptr, false),
            "option '--target' is not a tool option (it runs no workers)");
  EXPECT_EQ(toolArgs({"-O2"}, nullptr, false),
            "unknown option '-O2' (see tool --help)");
  // "--" ends the options where the tool takes a command after it.
  std::vector<std::string> command;
  EXPECT_EQ(toolArgs({"-j", "2", "--", "python3", "-O", "--x"}, nullptr, false,
                     &command),
            "num-parallel(-j=2) ");
  EXPECT_EQ(command, (std::vector<std::string>{"python3", "-O", "--x"}));
}

TEST(CacheFlagsTest, OptionValues) {
  EXPECT_EQ(parseInteger("12", 0), 12);
  EXPECT_EQ(parseInteger("-3", -5), -3);
  EXPECT_FALSE(parseInteger("-3", 0));
  EXPECT_FALSE(parseInteger("+3", 0));
  EXPECT_FALSE(parseInteger(" 3", 0));
  EXPECT_FALSE(parseInteger("3x", 0));
  EXPECT_FALSE(parseInteger("", 0));
  EXPECT_FALSE(parseInteger("99999999999999999999", 0));
  EXPECT_EQ(parsePositive("0.5"), 0.5);
  EXPECT_FALSE(parsePositive("0"));
  EXPECT_FALSE(parsePositive("nan"));
  EXPECT_FALSE(parsePositive("inf"));
  EXPECT_FALSE(parsePositive("1e-400"));
  EXPECT_EQ(didYouMean("compil", {"compile", "clean"}),
            "; did you mean 'compile'?");
  EXPECT_EQ(didYouMean("zzzzzz", {"compile"}), "");
}

TEST(CacheFlagsTest, HashCoversAVersionedRecord) {
  std::string error;
  auto flags = trn::normalizeFlags({}, error);
  ASSERT_TRUE(flags);
  std::string record = std::string("trn-flags-v1") + '\0' + flags->canonical() +
                       '\0' + cache::compilerVersion();
  EXPECT_EQ(cache::hashFlags(*flags), hashBytes(record));
  EXPECT_STREQ(cache::compilerVersion(), "0.14.0");
}

//===----------------------------------------------------------------------===//
// Hash128 and CacheKey
//===----------------------------------------------------------------------===//

TEST(CacheKeyTest, HexRoundTrip) {
  Hash128 hash{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_EQ(hash.hex(), "0123456789abcdeffedcba9876543210");
  EXPECT_EQ(Hash128::fromHex(hash.hex()), hash);
  EXPECT_EQ(Hash128{}.hex(), std::string(32, '0'));
  Hash128 other = hashBytes("trn");
  EXPECT_EQ(Hash128::fromHex(other.hex()), other);

  EXPECT_FALSE(Hash128::fromHex(""));
  EXPECT_FALSE(Hash128::fromHex("0123456789abcdeffedcba987654321"));
  EXPECT_FALSE(Hash128::fromHex("0123456789abcdeffedcba98765432100"));
  EXPECT_FALSE(Hash128::fromHex("0123456789abcdeffedcba987654321g"));
  EXPECT_FALSE(Hash128::fromHex("0123456789ABCDEFfedcba9876543210"));
}

TEST(CacheKeyTest, DirNameRoundTrip) {
  CacheKey key{hashBytes("graph"), hashBytes("flags")};
  std::string name = key.dirName();
  EXPECT_EQ(name, "MODULE_" + key.graph.hex() + "+" + key.flags.hex());
  EXPECT_EQ(CacheKey::parse(name), key);
  EXPECT_EQ(CacheKey::parse(key.graph.hex() + "+" + key.flags.hex()), key);
  EXPECT_FALSE(key < key);
}

TEST(CacheKeyTest, ParseRejectsMalformedNames) {
  std::string graph = hashBytes("graph").hex();
  std::string flags = hashBytes("flags").hex();
  for (const std::string &bad : std::vector<std::string>{
           "", "MODULE_", graph, "MODULE_" + graph, graph + "+",
           "MODULE_" + graph + "-" + flags, "module_" + graph + "+" + flags,
           "MODULE_" + graph + "+" + flags + "/", " " + graph + "+" + flags,
           "MODULE_" + graph + "+" + flags.substr(1),
           "MODULE_" + graph + "+" + flags + "0", "MODULE_MODULE_" + graph,
           graph + "+" + flags + ".tmp", "tmp." + graph + "+" + flags}) {
    EXPECT_FALSE(CacheKey::parse(bad)) << bad;
  }
}

} // namespace
