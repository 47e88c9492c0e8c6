//===- IsaTableTest.cpp - the nc dialect agrees with trnrt/Isa.def --------===//
//
// The nc dialect's enums (NCBase.td) and ops spell the instruction set the
// runtime reads from trnrt/Isa.def. TableGen cannot read a .def, so this test
// keeps the two in step: the same values in the same order under the same
// names, and an nc op for every opcode the emitter produces.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/NC/IR/NCOps.h"

#include "trnrt/Isa.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

namespace {

template <typename NcEnum, typename RuntimeEnum, typename NcName,
          typename RuntimeName>
void expectSameEnum(unsigned ncMax, unsigned runtimeCount, NcName ncName,
                    RuntimeName runtimeName) {
  ASSERT_EQ(ncMax + 1, runtimeCount)
      << "the nc enum has " << ncMax + 1 << " values, Isa.def " << runtimeCount;
  for (unsigned value = 0; value < runtimeCount; ++value)
    EXPECT_EQ(ncName(NcEnum(value)).str(),
              std::string(runtimeName(RuntimeEnum(value))))
        << "value " << value;
}

TEST(IsaTable, AluOpsMatchTheDialect) {
  expectSameEnum<mlir::nc::AluOp, trnrt::AluOp>(
      mlir::nc::getMaxEnumValForAluOp(), trnrt::kNumAluOps,
      [](mlir::nc::AluOp op) { return mlir::nc::stringifyAluOp(op); },
      trnrt::aluOpName);
}

TEST(IsaTable, ActivationFunctionsMatchTheDialect) {
  expectSameEnum<mlir::nc::ActivationFunc, trnrt::ActivationFunc>(
      mlir::nc::getMaxEnumValForActivationFunc(), trnrt::kNumActivationFuncs,
      [](mlir::nc::ActivationFunc f) {
        return mlir::nc::stringifyActivationFunc(f);
      },
      trnrt::activationFuncName);
}

TEST(IsaTable, CompareOpsMatchTheDialect) {
  expectSameEnum<mlir::nc::CompareOp, trnrt::CompareOp>(
      mlir::nc::getMaxEnumValForCompareOp(), trnrt::kNumCompareOps,
      [](mlir::nc::CompareOp op) { return mlir::nc::stringifyCompareOp(op); },
      trnrt::compareOpName);
}

TEST(IsaTable, MemoriesMatchTheDialect) {
  // The runtime spells memories in capitals ("SBUF") in its messages.
  ASSERT_EQ(mlir::nc::getMaxEnumValForMemorySpace(),
            unsigned(trnrt::Memory::Psum));
  for (unsigned value = 0; value <= unsigned(trnrt::Memory::Psum); ++value)
    EXPECT_EQ(
        mlir::StringRef(trnrt::memoryName(trnrt::Memory(value))).lower(),
        mlir::nc::stringifyMemorySpace(mlir::nc::MemorySpace(value)).str());
}

TEST(IsaTable, EveryOpcodeHasAnNcOp) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::nc::NCDialect>();
  for (unsigned value = 0; value < trnrt::kNumOpcodes; ++value) {
    auto opcode = trnrt::Opcode(value);
    if (opcode == trnrt::Opcode::Nop) // only waits and signals: no nc op
      continue;
    std::string name = std::string("nc.") + trnrt::opcodeName(opcode);
    EXPECT_TRUE(
        mlir::RegisteredOperationName::lookup(name, &context).has_value())
        << name << " is not an nc op";
  }
}

} // namespace
