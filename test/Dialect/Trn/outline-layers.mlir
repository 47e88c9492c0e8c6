// RUN: trn-opt %s -split-input-file -trn-outline-layers="min-ops=3" | FileCheck %s

// Three layers of the same three ops, each on the previous one's output and
// its own weight: one function, three calls.
// CHECK-LABEL: func.func @three
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[W0:.*]]: tensor<4xf32>, %[[W1:.*]]: tensor<4xf32>, %[[W2:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[Y0:.*]] = call @three.layer(%[[X]], %[[W0]])
// CHECK-NEXT: %[[Y1:.*]] = call @three.layer(%[[Y0]], %[[W1]])
// CHECK-NEXT: %[[Y2:.*]] = call @three.layer(%[[Y1]], %[[W2]])
// CHECK-NEXT: return %[[Y2]]
// CHECK: func.func private @three.layer(%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>) -> tensor<4xf32> attributes {trn.subroutine}
// CHECK-NEXT: %[[S:.*]] = trn.add %[[A]], %[[B]]
// CHECK-NEXT: %[[P:.*]] = trn.mul %[[S]], %[[S]]
// CHECK-NEXT: %[[E:.*]] = trn.exp %[[P]]
// CHECK-NEXT: return %[[E]]
func.func @three(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>,
                 %w2: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = trn.add %x, %w0 : tensor<4xf32>
  %b0 = trn.mul %a0, %a0 : tensor<4xf32>
  %c0 = trn.exp %b0 : tensor<4xf32>
  %a1 = trn.add %c0, %w1 : tensor<4xf32>
  %b1 = trn.mul %a1, %a1 : tensor<4xf32>
  %c1 = trn.exp %b1 : tensor<4xf32>
  %a2 = trn.add %c1, %w2 : tensor<4xf32>
  %b2 = trn.mul %a2, %a2 : tensor<4xf32>
  %c2 = trn.exp %b2 : tensor<4xf32>
  return %c2 : tensor<4xf32>
}

// -----

// A value one layer's ops make and the return also reads (saved for a
// backward) is a result of every call; a weight shared by every layer is an
// input of each.
// CHECK-LABEL: func.func @saved
// CHECK-NEXT: %[[C0:.*]]:2 = call @saved.layer(%arg0, %arg1)
// CHECK-NEXT: %[[C1:.*]]:2 = call @saved.layer(%[[C0]]#1, %arg1)
// CHECK-NEXT: return %[[C0]]#0, %[[C1]]#0, %[[C1]]#1
// CHECK: func.func private @saved.layer({{.*}}) -> (tensor<4xf32>, tensor<4xf32>)
func.func @saved(%x: tensor<4xf32>, %w: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a0 = trn.add %x, %w : tensor<4xf32>
  %b0 = trn.mul %a0, %a0 : tensor<4xf32>
  %c0 = trn.exp %b0 : tensor<4xf32>
  %a1 = trn.add %c0, %w : tensor<4xf32>
  %b1 = trn.mul %a1, %a1 : tensor<4xf32>
  %c1 = trn.exp %b1 : tensor<4xf32>
  return %b0, %b1, %c1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Blocks whose ops match but whose data flow does not (the second squares
// its weight, not its sum) are not the same layer: nothing is outlined.
// CHECK-LABEL: func.func @other_flow
// CHECK-NOT: call
// CHECK: return
// CHECK-NOT: func.func private
func.func @other_flow(%x: tensor<4xf32>, %w0: tensor<4xf32>,
                      %w1: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = trn.add %x, %w0 : tensor<4xf32>
  %b0 = trn.mul %a0, %a0 : tensor<4xf32>
  %c0 = trn.exp %b0 : tensor<4xf32>
  %a1 = trn.add %c0, %w1 : tensor<4xf32>
  %b1 = trn.mul %w1, %w1 : tensor<4xf32>
  %c1 = trn.exp %b1 : tensor<4xf32>
  %d = trn.add %a1, %c1 : tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// A different op in the middle layer leaves two runs of one layer: nothing
// repeats.
// CHECK-LABEL: func.func @broken
// CHECK-NOT: call
func.func @broken(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>,
                  %w2: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = trn.add %x, %w0 : tensor<4xf32>
  %b0 = trn.mul %a0, %a0 : tensor<4xf32>
  %c0 = trn.exp %b0 : tensor<4xf32>
  %a1 = trn.add %c0, %w1 : tensor<4xf32>
  %b1 = trn.mul %a1, %a1 : tensor<4xf32>
  %c1 = trn.log %b1 : tensor<4xf32>
  %a2 = trn.add %c1, %w2 : tensor<4xf32>
  %b2 = trn.mul %a2, %a2 : tensor<4xf32>
  %c2 = trn.exp %b2 : tensor<4xf32>
  return %c2 : tensor<4xf32>
}

// -----

// Layers of another shape are other layers.
// CHECK-LABEL: func.func @shapes
// CHECK-NOT: call
func.func @shapes(%x: tensor<4xf32>, %w0: tensor<4xf32>, %y: tensor<8xf32>,
                  %w1: tensor<8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %a0 = trn.add %x, %w0 : tensor<4xf32>
  %b0 = trn.mul %a0, %a0 : tensor<4xf32>
  %c0 = trn.exp %b0 : tensor<4xf32>
  %a1 = trn.add %y, %w1 : tensor<8xf32>
  %b1 = trn.mul %a1, %a1 : tensor<8xf32>
  %c1 = trn.exp %b1 : tensor<8xf32>
  return %c0, %c1 : tensor<4xf32>, tensor<8xf32>
}
