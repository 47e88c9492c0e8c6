// Pipeline transfers export as send and recv instructions on the Sync
// stream, naming the one mesh axis (as a bit), the peer's index along it
// and the tag; the validator accepts them.
// RUN: trn-opt %s -nc-allocate -nc-insert-sync | trn-translate --nc-to-program-summary | FileCheck %s
// RUN: trn-opt %s -nc-allocate -nc-insert-sync | trn-translate --nc-to-artifact -o %t.trnart

// CHECK: sync[0] recv hbm:f32@0 p32x1 [1:1] axes(2) peer(0) tag(3)
// CHECK: sync[1] send <- hbm:f32@0 p32x1 [1:1] axes(2) peer(0) tag(4)
func.func @relay(%x: !nc.hbm<4x8xf32> {nc.name = "x", nc.kind = "output"})
    attributes {nc.mesh_axes = ["dp", "pp"], nc.mesh_sizes = array<i64: 2, 2>} {
  nc.recv %x from 0 axes = ["pp"] tag = 3 : !nc.hbm<4x8xf32>
  nc.send %x to 0 axes = ["pp"] tag = 4 : !nc.hbm<4x8xf32>
  return
}
