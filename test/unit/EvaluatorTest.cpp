//===- EvaluatorTest.cpp - reference evaluator against hand-computed values
//===//

#include "trn/Eval/Evaluator.h"

#include "trn/Dialect/Trn/IR/TrnOps.h"
#include "trnrt/Random.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace mlir::trn::eval;

namespace {

class EvaluatorTest : public ::testing::Test {
protected:
  EvaluatorTest() {
    context.loadDialect<trn::TrnDialect, func::FuncDialect>();
    handler = std::make_unique<ScopedDiagnosticHandler>(
        &context, [this](Diagnostic &diag) {
          diagnostics += diag.str() + "\n";
          return success();
        });
  }

  /// Parses `source` and evaluates its only function.
  FailureOr<std::vector<Tensor>> run(const char *source,
                                     std::vector<Tensor> inputs = {}) {
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return failure();
    auto function = *module->getOps<func::FuncOp>().begin();
    return evaluate(function, inputs);
  }

  static Tensor f32(std::vector<int64_t> shape, std::vector<double> values) {
    Tensor t = Tensor::zeros(DType::F32, shape);
    for (size_t i = 0; i < values.size(); ++i)
      t.setDouble(i, values[i]);
    return t;
  }
  static Tensor i64(std::vector<int64_t> shape, std::vector<int64_t> values) {
    Tensor t = Tensor::zeros(DType::I64, shape);
    t.ints = values;
    return t;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string diagnostics;
};

TEST_F(EvaluatorTest, DotGeneralBatchedMatmul) {
  auto result = run(R"mlir(
    func.func @f(%a: tensor<2x2x3xf32>, %b: tensor<2x3x1xf32>) -> tensor<2x2x1xf32> {
      %0 = trn.dot_general %a, %b, batching_dims = [0] x [0],
           contracting_dims = [2] x [1]
           : (tensor<2x2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x2x1xf32>
      return %0 : tensor<2x2x1xf32>
    })mlir",
                    {f32({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}),
                     f32({2, 3, 1}, {1, 1, 1, 7, 8, 9})});
  ASSERT_TRUE(succeeded(result)) << diagnostics;
  EXPECT_EQ((*result)[0].floats, (std::vector<double>{6, 15, 7, 8}));
}

TEST_F(EvaluatorTest, DotGeneralTransposedContraction) {
  // lhs^T rhs: contract dimension 0 of both.
  auto result = run(R"mlir(
    func.func @f(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>) -> tensor<2x2xf32> {
      %0 = trn.dot_general %a, %b, batching_dims = [] x [],
           contracting_dims = [0] x [0]
           : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })mlir",
                    {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {5, 6, 7, 8})});
  ASSERT_TRUE(succeeded(result)) << diagnostics;
  // [[1,3],[2,4]] x [[5,6],[7,8]]
  EXPECT_EQ((*result)[0].floats, (std::vector<double>{26, 30, 38, 44}));
}

TEST_F(EvaluatorTest, SoftmaxAndCrossEntropy) {
  auto result = run(R"mlir(
    func.func @f(%x: tensor<2x2xf32>, %l: tensor<2xi64>)
        -> (tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>) {
      %0 = trn.softmax %x, dim = 1 : tensor<2x2xf32>
      %1 = trn.cross_entropy mean %x, %l : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<f32>
      %g = trn.constant dense<1.0> : tensor<f32>
      %2 = trn.cross_entropy_grad mean %x, %l, %g
           : (tensor<2x2xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x2xf32>
      return %0, %1, %2 : tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
    })mlir",
                    {f32({2, 2}, {0, 0, 0, std::log(3.0)}), i64({2}, {0, 1})});
  ASSERT_TRUE(succeeded(result)) << diagnostics;
  const auto &softmax = (*result)[0].floats;
  EXPECT_FLOAT_EQ(softmax[0], 0.5);
  EXPECT_FLOAT_EQ(softmax[2], 0.25);
  EXPECT_FLOAT_EQ(softmax[3], 0.75);
  // Row losses: log 2 and log(4/3); mean of the two.
  EXPECT_FLOAT_EQ((*result)[1].floats[0],
                  (std::log(2.0) + std::log(4.0 / 3.0)) / 2);
  // d/dlogits = (softmax - onehot) / 2.
  EXPECT_FLOAT_EQ((*result)[2].floats[0], -0.25);
  EXPECT_FLOAT_EQ((*result)[2].floats[3], -0.125);
}

TEST_F(EvaluatorTest, CrossEntropyIgnoreIndexAndBadLabel) {
  const char *source = R"mlir(
    func.func @f(%x: tensor<2x3xf32>, %l: tensor<2xi64>) -> tensor<f32> {
      %0 = trn.cross_entropy mean %x, %l {ignore_index = -1 : i64}
           : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
      return %0 : tensor<f32>
    })mlir";
  auto ignored =
      run(source, {f32({2, 3}, {0, 0, 0, 5, 1, 2}), i64({2}, {1, -1})});
  ASSERT_TRUE(succeeded(ignored)) << diagnostics;
  EXPECT_FLOAT_EQ((*ignored)[0].floats[0], std::log(3.0));

  auto bad = run(source, {f32({2, 3}, {0, 0, 0, 0, 0, 0}), i64({2}, {3, 0})});
  EXPECT_TRUE(failed(bad));
  EXPECT_NE(diagnostics.find("label 3 of row 0 is out of range [0, 3)"),
            std::string::npos)
      << diagnostics;
}

TEST_F(EvaluatorTest, GatherAndScatterAddAreAdjoint) {
  auto result =
      run(R"mlir(
    func.func @f(%t: tensor<3x2xf32>, %i: tensor<4xi64>, %u: tensor<4x2xf32>)
        -> (tensor<4x2xf32>, tensor<3x2xf32>) {
      %0 = trn.gather %t[%i], axis = 0 : (tensor<3x2xf32>, tensor<4xi64>) -> tensor<4x2xf32>
      %1 = trn.scatter_add %t[%i], %u, axis = 0
           : (tensor<3x2xf32>, tensor<4xi64>, tensor<4x2xf32>) -> tensor<3x2xf32>
      return %0, %1 : tensor<4x2xf32>, tensor<3x2xf32>
    })mlir",
          {f32({3, 2}, {0, 1, 10, 11, 20, 21}), i64({4}, {2, 0, 2, 1}),
           f32({4, 2}, {1, 1, 2, 2, 3, 3, 4, 4})});
  ASSERT_TRUE(succeeded(result)) << diagnostics;
  EXPECT_EQ((*result)[0].floats,
            (std::vector<double>{20, 21, 0, 1, 20, 21, 10, 11}));
  // Row 2 receives updates 0 and 2 (1 + 3), row 0 update 1, row 1 update 3.
  EXPECT_EQ((*result)[1].floats, (std::vector<double>{2, 3, 14, 15, 24, 25}));
}

TEST_F(EvaluatorTest, GatherWithBatchDimsPicksLabelLogits) {
  auto result = run(R"mlir(
    func.func @f(%x: tensor<2x3xf32>, %l: tensor<2xi64>) -> tensor<2xf32> {
      %0 = trn.gather %x[%l], axis = 1, batch_dims = 1
           : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    })mlir",
                    {f32({2, 3}, {0, 1, 2, 3, 4, 5}), i64({2}, {2, 0})});
  ASSERT_TRUE(succeeded(result)) << diagnostics;
  EXPECT_EQ((*result)[0].floats, (std::vector<double>{2, 3}));
}

TEST_F(EvaluatorTest, GatherIndexOutOfRangeIsAnError) {
  auto result = run(R"mlir(
    func.func @f(%t: tensor<3x2xf32>, %i: tensor<1xi64>) -> tensor<1x2xf32> {
      %0 = trn.gather %t[%i], axis = 0 : (tensor<3x2xf32>, tensor<1xi64>) -> tensor<1x2xf32>
      return %0 : tensor<1x2xf32>
    })mlir",
                    {f32({3, 2}, {0, 0, 0, 0, 0, 0}), i64({1}, {3})});
  EXPECT_TRUE(failed(result));
  EXPECT_NE(diagnostics.find("index 3 is out of range [0, 3)"),
            std::string::npos)
      << diagnostics;
}

TEST_F(EvaluatorTest, LayerNormHandComputed) {
  auto result = run(R"mlir(
    func.func @f(%x: tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<1xf32>, tensor<1xf32>) {
      %w = trn.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
      %b = trn.constant dense<0.5> : tensor<4xf32>
      %o, %m, %r = trn.layer_norm %x, %w, %b, axis = 1, eps = 0.0
          : (tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>)
          -> (tensor<1x4xf32>, tensor<1xf32>, tensor<1xf32>)
      return %o, %m, %r : tensor<1x4xf32>, tensor<1xf32>, tensor<1xf32>
    })mlir",
                    {f32({1, 4}, {1, 3, 5, 7})});
  ASSERT_TRUE(succeeded(result)) << diagnostics;
  // mean 4, variance 5, rstd 1/sqrt 5.
  double r = 1.0 / std::sqrt(5.0);
  EXPECT_FLOAT_EQ((*result)[1].floats[0], 4.0);
  EXPECT_FLOAT_EQ((*result)[2].floats[0], r);
  EXPECT_FLOAT_EQ((*result)[0].floats[0], -3 * r + 0.5);
  EXPECT_FLOAT_EQ((*result)[0].floats[3], 2 * 3 * r + 0.5);
}

TEST_F(EvaluatorTest, CausalAttentionFirstRowSeesOnlyItself) {
  auto result = run(R"mlir(
    func.func @f(%q: tensor<2x1xf32>, %k: tensor<2x1xf32>, %v: tensor<2x1xf32>)
        -> (tensor<2x1xf32>, tensor<2xf32>) {
      %o, %lse = trn.attention %q, %k, %v, scale = 1.0 causal
          : (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
          -> (tensor<2x1xf32>, tensor<2xf32>)
      return %o, %lse : tensor<2x1xf32>, tensor<2xf32>
    })mlir",
                    {f32({2, 1}, {1, 1}), f32({2, 1}, {0, std::log(3.0)}),
                     f32({2, 1}, {10, 20})});
  ASSERT_TRUE(succeeded(result)) << diagnostics;
  EXPECT_FLOAT_EQ((*result)[0].floats[0], 10.0);
  // Row 1: weights 1/4 and 3/4.
  EXPECT_FLOAT_EQ((*result)[0].floats[1], 17.5);
  EXPECT_FLOAT_EQ((*result)[1].floats[0], 0.0);
  EXPECT_FLOAT_EQ((*result)[1].floats[1], std::log(4.0));
}

TEST_F(EvaluatorTest, RngIsCounterBasedAndStreamsDiffer) {
  const char *source = R"mlir(
    func.func @f(%s: tensor<i64>) -> (tensor<1000xf32>, tensor<1000xf32>, tensor<1000xi1>) {
      %0 = trn.rng_uniform %s, stream = 0 : tensor<i64> -> tensor<1000xf32>
      %1 = trn.rng_uniform %s, stream = 1 : tensor<i64> -> tensor<1000xf32>
      %2 = trn.rng_bernoulli %s, stream = 0, p = 0.25 : tensor<i64> -> tensor<1000xi1>
      return %0, %1, %2 : tensor<1000xf32>, tensor<1000xf32>, tensor<1000xi1>
    })mlir";
  auto result = run(source, {i64({}, {42})});
  ASSERT_TRUE(succeeded(result)) << diagnostics;
  const auto &u0 = (*result)[0].floats, &u1 = (*result)[1].floats;
  double mean = 0;
  int64_t ones = 0, agree = 0;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_GE(u0[i], 0.0);
    EXPECT_LT(u0[i], 1.0);
    mean += u0[i] / 1000;
    ones += (*result)[2].ints[i];
    // Bernoulli draws u < p from the same stream.
    agree += (*result)[2].ints[i] == (u0[i] < 0.25);
  }
  EXPECT_NEAR(mean, 0.5, 0.05);
  EXPECT_NEAR(ones, 250, 50);
  EXPECT_EQ(agree, 1000);
  EXPECT_NE(u0, u1);
  // Counter-based: element i depends only on (seed, stream, i).
  EXPECT_EQ(u0[7], (trnrt::philoxWord(42, 0, 7) >> 8) * 0x1p-24);
}

TEST(Philox, KnownAnswer) {
  // Random123's published known-answer test for philox4x32-10 with zero key
  // and counter gives 0x6627e8d5 as the first word.
  EXPECT_EQ(trnrt::philoxWord(0, 0, 0), 0x6627e8d5u);
}

TEST(Philox, BernoulliThresholdIsExact) {
  // u < p over the 2^24 grid equals u24 < threshold, also for a p that is
  // not a float (0.9f < 0.9, so the grid point 0.9f is kept).
  for (double p : {0.0, 0.1, 0.5, 0.9, 1.0 / 3.0, 0.999999, 1.0, 1.5, -0.5}) {
    uint32_t threshold = trnrt::bernoulliThreshold24(p);
    for (uint32_t k : {0u, 1u, 1677721u, 1677722u, 8388607u, 8388608u,
                       15099494u, 15099495u, 16777215u})
      EXPECT_EQ(k * 0x1p-24 < p, k < threshold) << "p=" << p << " k=" << k;
  }
}

TEST(StoreValue, IntegerSaturationAndNaN) {
  EXPECT_EQ(storeValue(3.9, DType::I32), 3.0);
  EXPECT_EQ(storeValue(-3.9, DType::I32), -3.0);
  EXPECT_EQ(storeValue(1e20, DType::I32), 2147483647.0);
  EXPECT_EQ(storeValue(std::nan(""), DType::I64), 0.0);
  EXPECT_EQ(storeValue(-0.5, DType::I1), 1.0);
  EXPECT_EQ(checkedNumElements({1 << 20, 1 << 20}), -1);
  EXPECT_EQ(checkedNumElements({}), 1);
}

} // namespace
