//===- trn-opt.cpp - MLIR driver for trn dialects and passes -------------===//
//
// The MlirOptMain driver with every trn dialect and pass registered, plus the
// upstream dialects trn graphs use. It is the tool lit tests run.
//
//===----------------------------------------------------------------------===//

#include "trn/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::trn::registerAllDialects(registry);
  mlir::trn::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "trn optimizer driver\n", registry));
}
