//===- InitAll.cpp - register every trn dialect and pass -----------------===//

#include "trn/InitAll.h"

#include "trn/Conversion/Passes.h"
#include "trn/Dialect/Dist/IR/DistDialect.h"
#include "trn/Dialect/NC/IR/NCDialect.h"
#include "trn/Dialect/NC/Transforms/Passes.h"
#include "trn/Dialect/Trn/IR/TrnDialect.h"
#include "trn/Dialect/Trn/Transforms/Passes.h"
#include "trn/Partition/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::trn::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::trn::TrnDialect, mlir::nc::NCDialect,
                  mlir::dist::DistDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect,
                  mlir::scf::SCFDialect>();
}

void mlir::trn::registerAllPasses() {
  mlir::registerTransformsPasses();
  mlir::nc::registerNCPasses();
  mlir::trn::registerTrnPasses();
  mlir::trn::registerTrnConversionPasses();
  mlir::trn::partition::registerPartitionPasses();
}
