//===- Sync.h - semaphores between engine streams ---------------*- C++ -*-===//
//
// The analysis behind nc-insert-sync: for every instruction of an allocated
// kernel, the semaphore waits that order it after the instructions of other
// streams it conflicts with. The pass stores them as nc.waits/nc.signal
// attributes; the driver hands them to the exporter directly, which saves a
// large kernel millions of uniqued attributes.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_NC_TRANSFORMS_SYNC_H
#define TRN_DIALECT_NC_TRANSFORMS_SYNC_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>

namespace mlir::nc {

/// Streams are numbered like their semaphores: the four compute engines,
/// the sync engine, then DMA queue q as kDmaStreamBase + q.
constexpr int64_t kDmaStreamBase = 5;

/// The stream an instruction runs on, or -1 for ops that are not
/// instructions (allocations, views, the terminator).
int64_t streamOf(Operation *op);

/// Start once semaphore `stream` has counted `count` completions.
struct StreamWait {
  uint32_t stream;
  uint32_t count;
};

/// Walks the instructions of `kernel` in program order and calls
/// `onInstruction(op, stream, waits)` for each, with one wait per other
/// stream for its latest instruction whose memory conflicts with op's (read
/// after write, write after write, write after read), in stream order; every
/// instruction signals its own stream's semaphore. Fails with an error at the
/// offending op (a tile without an address, too many streams).
LogicalResult synchronizeKernel(
    func::FuncOp kernel,
    function_ref<void(Operation *op, int64_t stream, ArrayRef<StreamWait>)>
        onInstruction);

} // namespace mlir::nc

#endif // TRN_DIALECT_NC_TRANSFORMS_SYNC_H
