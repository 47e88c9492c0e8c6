//===- PrecisionTest.cpp - The precision a trn value is computed in -------===//
//
// trn::computePrecision (trn/Dialect/Trn/Utils/Precision.h): the least
// precise float type on a result's backward slice, through trn.fusion
// bodies, trn.matmul_type marks and what --auto-cast narrows; results that
// do not depend on the narrow part keep their own precision.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/Utils/Precision.h"
#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

// r0: an f32 result of a bf16 matmul; r1: f32 throughout, but through a
// fusion whose body rounds to f16; r2: an f32 matmul (auto-cast narrows it);
// r3: elementwise only; r4: i32 from i32.
const char *kGraph = R"mlir(
func.func @step(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %i: tensor<4xi32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4xi32>) {
  %xb = trn.convert %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  %wb = trn.convert %w : tensor<8x8xf32> -> tensor<8x8xbf16>
  %mm = trn.dot_general %xb, %wb, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xf32>
  %r0 = trn.add %mm, %x : tensor<4x8xf32>
  %r1 = trn.fusion(%x : tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %h = trn.convert %a : tensor<4x8xf32> -> tensor<4x8xf16>
    %e = trn.convert %h : tensor<4x8xf16> -> tensor<4x8xf32>
    trn.yield %e : tensor<4x8xf32>
  }
  %r2 = trn.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r3 = trn.exp %x : tensor<4x8xf32>
  %r4 = trn.add %i, %i : tensor<4xi32>
  return %r0, %r1, %r2, %r3, %r4 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xi32>
}
)mlir";

class PrecisionTest : public ::testing::Test {
protected:
  PrecisionTest() {
    context.loadDialect<trn::TrnDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(kGraph, &context);
  }
  Value result(unsigned i) {
    auto function = *module->getOps<func::FuncOp>().begin();
    return function.front().getTerminator()->getOperand(i);
  }
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(PrecisionTest, LeastPreciseTypeOnTheBackwardSlice) {
  ASSERT_TRUE(module);
  trn::ComputePrecision r0 = trn::computePrecision(result(0));
  EXPECT_TRUE(r0.type && r0.type.isBF16());
  EXPECT_FALSE(r0.byAutoCast);
  trn::ComputePrecision r1 = trn::computePrecision(result(1));
  EXPECT_TRUE(r1.type && r1.type.isF16()); // inside the fusion's body
  EXPECT_TRUE(trn::computePrecision(result(2)).type.isF32());
  EXPECT_TRUE(trn::computePrecision(result(3)).type.isF32());
  EXPECT_FALSE(trn::computePrecision(result(4)).type);
}

TEST_F(PrecisionTest, AutoCastNarrowsWhatThePassNarrows) {
  ASSERT_TRUE(module);
  FailureOr<trn::AutoCastAssumption> matmul =
      trn::parseAutoCast(&context, "matmul", "bf16");
  ASSERT_TRUE(succeeded(matmul));
  trn::ComputePrecision r2 = trn::computePrecision(result(2), *matmul);
  EXPECT_TRUE(r2.type && r2.type.isBF16());
  EXPECT_TRUE(r2.byAutoCast);
  EXPECT_TRUE(trn::computePrecision(result(3), *matmul).type.isF32());

  FailureOr<trn::AutoCastAssumption> all =
      trn::parseAutoCast(&context, "all", "bf16");
  ASSERT_TRUE(succeeded(all));
  EXPECT_TRUE(trn::computePrecision(result(3), *all).type.isBF16());
  // Already bf16 in the graph: the cast is not the reason.
  EXPECT_FALSE(trn::computePrecision(result(0), *all).byAutoCast);

  FailureOr<trn::AutoCastAssumption> fp8 =
      trn::parseAutoCast(&context, "matmul", "fp8_e4m3");
  ASSERT_TRUE(succeeded(fp8));
  EXPECT_TRUE(
      isa<Float8E4M3FNType>(trn::computePrecision(result(2), *fp8).type));

  EXPECT_TRUE(failed(trn::parseAutoCast(&context, "some", "bf16")));
  EXPECT_TRUE(failed(trn::parseAutoCast(&context, "matmul", "f16")));
}

TEST_F(PrecisionTest, MatmulTypeMarksCount) {
  const char *graph = R"mlir(
func.func @attn(%q: tensor<1x128x64xf32>, %k: tensor<1x128x64xf32>, %v: tensor<1x128x64xf32>) -> tensor<1x128x64xf32> {
  %o, %lse = trn.attention %q, %k, %v, scale = 0.125 causal {trn.matmul_type = bf16} : (tensor<1x128x64xf32>, tensor<1x128x64xf32>, tensor<1x128x64xf32>) -> (tensor<1x128x64xf32>, tensor<1x128xf32>)
  return %o : tensor<1x128x64xf32>
}
)mlir";
  OwningOpRef<ModuleOp> attention =
      parseSourceString<ModuleOp>(graph, &context);
  ASSERT_TRUE(attention);
  auto function = *attention->getOps<func::FuncOp>().begin();
  Value out = function.front().getTerminator()->getOperand(0);
  EXPECT_TRUE(trn::computePrecision(out).type.isBF16());
}

TEST(PrecisionOrderTest, FewerSignificandBitsIsLessPrecise) {
  MLIRContext context;
  Builder b(&context);
  EXPECT_TRUE(trn::isLessPrecise(b.getBF16Type(), b.getF16Type()));
  EXPECT_TRUE(trn::isLessPrecise(b.getF16Type(), b.getF32Type()));
  EXPECT_TRUE(
      trn::isLessPrecise(b.getFloat8E5M2Type(), b.getFloat8E4M3FNType()));
  EXPECT_FALSE(trn::isLessPrecise(b.getF32Type(), b.getF32Type()));
  EXPECT_TRUE(trn::isLessPrecise(b.getF32Type(), FloatType()));
  EXPECT_FALSE(trn::isLessPrecise(FloatType(), b.getF32Type()));
}

} // namespace
