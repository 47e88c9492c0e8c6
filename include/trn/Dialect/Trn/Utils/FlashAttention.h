//===- FlashAttention.h - when attention is one fused kernel ----*- C++ -*-===//
//
// The NeuronCore backend lowers trn.attention and trn.attention_grad as
// flash-style kernels (scores never reach HBM) when a head's operands fit
// the kernel's limits; otherwise trn-decompose-composites rewrites them into
// primitives. Both sides ask this one predicate, so what the decomposition
// keeps the lowering can always take.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_TRN_UTILS_FLASHATTENTION_H
#define TRN_DIALECT_TRN_UTILS_FLASHATTENTION_H

#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::trn {

/// An attention op seen per head: [heads, queries, headSize] queries,
/// [heads, keys, headSize] keys, [heads, keys, valueSize] values; `seqDim`
/// is where the operands keep their sequence dim (the op's `seq_dim`).
struct AttentionShape {
  int64_t heads = 1, queries = 0, keys = 0, headSize = 0, valueSize = 0;
  int64_t seqDim = 0;
  Type elementType;
};

/// The sequence dim of a trn.attention or trn.attention_grad's operands.
int64_t attentionSeqDim(Operation *attention);

/// The per-head shape of a trn.attention or trn.attention_grad.
AttentionShape attentionShape(Operation *attention);

/// Element type the fused kernel's matmuls use for `attention`: the
/// operands' own, or the type `trn-auto-cast` recorded in the
/// `trn.matmul_type` attribute.
Type attentionMatmulType(Operation *attention);

/// Name of the discardable attribute by which trn-auto-cast asks the fused
/// attention kernels to run their matmuls in a narrower type.
constexpr const char *kMatmulTypeAttr = "trn.matmul_type";

/// Why `attention` (trn.attention or trn.attention_grad) cannot be lowered
/// as one flash-style kernel; empty when it can.
std::string flashAttentionBlocker(Operation *attention);

} // namespace mlir::trn

#endif // TRN_DIALECT_TRN_UTILS_FLASHATTENTION_H
