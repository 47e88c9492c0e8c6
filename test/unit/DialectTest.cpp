//===- DialectTest.cpp - C++ API of the trn dialect ----------------------===//
//
// Builders with result type inference, and the helper the frontend uses to
// type dot_general.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class TrnDialectTest : public ::testing::Test {
protected:
  TrnDialectTest() : builder(&context) {
    context.loadDialect<trn::TrnDialect, func::FuncDialect>();
  }
  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }
  MLIRContext context;
  OpBuilder builder;
};

TEST_F(TrnDialectTest, BuildersInferResultTypes) {
  auto loc = builder.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module.getBody());
  auto function = builder.create<func::FuncOp>(
      loc, "f", builder.getFunctionType({tensor({2, 3, 4})}, {}));
  Block *body = function.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  Value x = body->getArgument(0);

  auto transpose = builder.create<trn::TransposeOp>(
      loc, x, builder.getDenseI64ArrayAttr({2, 0, 1}));
  EXPECT_EQ(transpose.getType(), tensor({4, 2, 3}));

  auto reduce = builder.create<trn::ReduceOp>(
      loc, trn::ReduceKind::max, x, builder.getDenseI64ArrayAttr({0, 2}));
  EXPECT_EQ(reduce.getType(), tensor({3}));

  auto compare =
      builder.create<trn::CompareOp>(loc, trn::ComparisonPredicate::lt, x, x);
  EXPECT_EQ(compare.getType(),
            RankedTensorType::get({2, 3, 4}, builder.getI1Type()));

  auto exp = builder.create<trn::ExpOp>(loc, x);
  EXPECT_EQ(exp.getType(), x.getType());
  builder.create<func::ReturnOp>(loc);
  EXPECT_TRUE(succeeded(verify(module)));
  module->erase();
}

TEST_F(TrnDialectTest, DotGeneralResultType) {
  auto type = trn::DotGeneralOp::inferResultType(
      std::nullopt, tensor({8, 16, 32}), tensor({8, 32, 64}), {0}, {0}, {2},
      {1}, builder.getF32Type());
  ASSERT_TRUE(type);
  EXPECT_EQ(type, tensor({8, 16, 64}));

  // Mismatched contracting sizes give a null type (and no crash).
  auto bad = trn::DotGeneralOp::inferResultType(std::nullopt, tensor({16, 32}),
                                                tensor({31, 64}), {}, {}, {1},
                                                {0}, builder.getF32Type());
  EXPECT_FALSE(bad);
}

TEST_F(TrnDialectTest, InvalidIRIsRejectedWithDiagnostic) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str();
    return success();
  });
  const char *source = R"mlir(
    func.func @f(%x: tensor<2x3xf32>) -> tensor<3x3xf32> {
      %0 = trn.transpose %x, perm = [1, 1] : (tensor<2x3xf32>) -> tensor<3x3xf32>
      return %0 : tensor<3x3xf32>
    })mlir";
  auto module = parseSourceString<ModuleOp>(source, &context);
  EXPECT_FALSE(module);
  EXPECT_NE(diagnostics.find("repeats dimension 1"), std::string::npos)
      << diagnostics;
}

} // namespace
