//===- Passes.td - nc dialect passes -----------------------*- tablegen -*-===//

#ifndef TRN_DIALECT_NC_TRANSFORMS_PASSES_TD
#define TRN_DIALECT_NC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def NCAllocate : Pass<"nc-allocate", "::mlir::func::FuncOp"> {
  let summary = "assign SBUF and PSUM addresses to nc.alloc by liveness";
  let description = [{
    Gives every `nc.alloc` a `start_partition` and a `byte_offset`. A tile is
    live from its allocation to its last use (directly or through a view);
    tiles whose live ranges do not overlap share memory. SBUF tiles occupy all
    partitions from 0 at a first-fit byte range; every PSUM tile takes one of
    the 8 banks. A kernel whose live tiles do not fit is an error naming the
    tile and the bytes in use (spilling is the lowering's job). Addresses
    already present are kept and respected.

    HBM scratch tensors (`nc.hbm_alloc`) get a `byte_offset` in the scratch
    region the same way: live from their allocation to their last use, first
    fit from offset 0, so intermediates that are never live together share
    HBM. nc-insert-sync orders accesses to placed scratch by bytes, not by
    tensor.
  }];
}

def NCInsertSync : Pass<"nc-insert-sync", "::mlir::func::FuncOp"> {
  let summary = "add the semaphores that order the engines' streams";
  let description = [{
    Every stream (Tensor, Vector, Scalar, GpSimd, each DMA queue) gets one
    semaphore that its instructions increment on completion (`nc.signal`).
    An instruction that reads or writes memory another stream's earlier
    instruction writes (or writes memory it reads) waits for that stream's
    semaphore to reach the count of that instruction (`nc.waits`), one wait
    per producing stream. Waits only refer to instructions earlier in program
    order, so the program cannot deadlock.
  }];
}

#endif // TRN_DIALECT_NC_TRANSFORMS_PASSES_TD
