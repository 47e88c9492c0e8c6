//===- trn-translate.cpp - translations out of trn dialects --------------===//
//
// mlir-translate with trn's translations: --nc-to-artifact writes the binary
// artifact of an nc kernel, --nc-to-program-summary prints its streams.
//
//===----------------------------------------------------------------------===//

#include "trn/Target/NCToProgram.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::nc::registerNCTranslations();
  return mlir::failed(
             mlir::mlirTranslateMain(argc, argv, "trn translation driver\n"))
             ? 1
             : 0;
}
