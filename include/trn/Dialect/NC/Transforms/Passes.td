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
    the 8 banks. Addresses already present are kept and respected.

    When an SBUF tile does not fit, live tiles are spilled to HBM: each is
    stored to a scratch tensor just before the allocation that needs its
    space and reloaded into a new tile just before its next use, which that
    use and the later ones then read (views are rebuilt on the new tile). The
    victims are the tiles needed furthest in the future (Belady's choice),
    tiles that hold no data yet first (they move without a copy), among the
    tiles not needed before the new one's first use. When the tiles that
    stay split the space into holes too small, a window of SBUF covered only
    by free space and such tiles is cleared instead; failing that, a tile
    allocated ahead of its first use moves down to it; failing that, tiles
    its first instruction also reads are moved (stored and reloaded
    elsewhere before it). The kernel records `nc.spilled_tiles` and
    `nc.spilled_bytes`. A tile that does not fit even so (always when one
    instruction's tiles exceed SBUF), and a PSUM tile with all banks taken,
    are errors naming the tile.

    HBM scratch tensors (`nc.hbm_alloc`, spills included) get a `byte_offset` in the scratch
    region the same way: live from their allocation to their last use, first
    fit from offset 0, so intermediates that are never live together share
    HBM. A collective's source stays live until the collective's result is
    first read: the Sync engine reads it while the other engines go on, and
    a tensor written meanwhile in its bytes would wait for the transfer.
    nc-insert-sync orders accesses to placed scratch by bytes, not by
    tensor.
  }];
  let options = [
    Option<"sbufBytes", "sbuf-bytes", "int64_t", "0",
           "SBUF bytes per partition to allocate from (0: all the target's "
           "usable SBUF); smaller values force spilling, for tests">,
  ];
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
