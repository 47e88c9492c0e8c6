//===- InsertSync.cpp - semaphores between engine streams ----------------===//
//
// Stores the waits of synchronizeKernel (Sync.h) on every instruction as
// nc.waits and its own stream's semaphore as nc.signal.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/NC/IR/NCOps.h"
#include "trn/Dialect/NC/Transforms/Passes.h"
#include "trn/Dialect/NC/Transforms/Sync.h"

#include "mlir/IR/Builders.h"

namespace mlir::nc {
#define GEN_PASS_DEF_NCINSERTSYNC
#include "trn/Dialect/NC/Transforms/Passes.h.inc"
} // namespace mlir::nc

using namespace mlir;
using namespace mlir::nc;

namespace {

struct NCInsertSyncPass : nc::impl::NCInsertSyncBase<NCInsertSyncPass> {
  void runOnOperation() override;
};

} // namespace

void NCInsertSyncPass::runOnOperation() {
  func::FuncOp kernel = getOperation();
  if (kernel.isExternal())
    return;
  OpBuilder builder(kernel.getContext());
  StringAttr signalName = builder.getStringAttr(NCDialect::getSignalAttrName());
  StringAttr waitsName = builder.getStringAttr(NCDialect::getWaitsAttrName());
  SmallVector<Attribute> waitAttrs;
  auto annotate = [&](Operation *op, int64_t stream,
                      ArrayRef<StreamWait> waits) {
    waitAttrs.clear();
    for (StreamWait wait : waits)
      waitAttrs.push_back(
          builder.getDenseI64ArrayAttr({static_cast<int64_t>(wait.stream),
                                        static_cast<int64_t>(wait.count)}));
    // The two attributes are set at once: every change of an op's
    // discardable attributes makes (and keeps, in the context) a new
    // dictionary.
    NamedAttrList attributes(op->getDiscardableAttrDictionary());
    attributes.set(signalName, builder.getI64IntegerAttr(stream));
    if (waitAttrs.empty())
      attributes.erase(waitsName);
    else
      attributes.set(waitsName, builder.getArrayAttr(waitAttrs));
    op->setDiscardableAttrs(attributes.getDictionary(op->getContext()));
  };
  if (failed(synchronizeKernel(kernel, annotate)))
    signalPassFailure();
}
