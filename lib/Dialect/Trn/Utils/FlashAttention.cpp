//===- FlashAttention.cpp - when attention is one fused kernel ------------===//

#include "trn/Dialect/Trn/Utils/FlashAttention.h"

#include "trn/Dialect/Trn/IR/TrnOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::trn;

namespace {
/// Kernel limits (docs/isa.md): a contraction is at most 128 partitions, a
/// PSUM accumulator at most 512 fp32 columns.
constexpr int64_t kMaxContraction = 128;
constexpr int64_t kMaxPsumColumns = 512;
constexpr int64_t kPartitions = 128;
/// SBUF bytes per partition a head's resident operands may take, leaving
/// the rest of the 192 KiB for the per-block tiles and their buffering. The
/// backward's per-block tiles are [128, 128] blocks (its resident operands
/// are most of what it needs): it may keep more, which a head of 8192
/// queries and keys at head size 128 needs (Llama3-70B's sequence; the
/// decomposed backward moves its [S, S] scores through HBM, ~1 GiB per op).
constexpr int64_t kResidentBudget = 96 * 1024;
constexpr int64_t kBackwardResidentBudget = 150 * 1024;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

AttentionShape mlir::trn::attentionShape(Operation *attention) {
  auto q = cast<RankedTensorType>(attention->getOperand(0).getType());
  auto k = cast<RankedTensorType>(attention->getOperand(1).getType());
  auto v = cast<RankedTensorType>(attention->getOperand(2).getType());
  AttentionShape shape;
  int64_t rank = q.getRank();
  shape.seqDim = attentionSeqDim(attention);
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != shape.seqDim)
      shape.heads *= q.getDimSize(d);
  shape.queries = q.getDimSize(shape.seqDim);
  shape.headSize = q.getDimSize(rank - 1);
  shape.keys = k.getDimSize(shape.seqDim);
  shape.valueSize = v.getDimSize(rank - 1);
  shape.elementType = q.getElementType();
  return shape;
}

int64_t mlir::trn::attentionSeqDim(Operation *attention) {
  int64_t rank =
      cast<RankedTensorType>(attention->getOperand(0).getType()).getRank();
  if (auto op = dyn_cast<AttentionOp>(attention))
    return attentionSeqDim(op.getSeqDim(), rank);
  return attentionSeqDim(cast<AttentionGradOp>(attention).getSeqDim(), rank);
}

Type mlir::trn::attentionMatmulType(Operation *attention) {
  if (auto type = attention->getAttrOfType<TypeAttr>(kMatmulTypeAttr))
    return type.getValue();
  return attentionShape(attention).elementType;
}

std::string mlir::trn::flashAttentionBlocker(Operation *attention) {
  if (!isa<AttentionOp, AttentionGradOp>(attention))
    return "not an attention op";
  for (Value operand : attention->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || !type.hasStaticShape())
      return "operands need static shapes";
  }
  AttentionShape shape = attentionShape(attention);
  Type matmulType = attentionMatmulType(attention);
  auto isKernelType = [](Type type) {
    return type.isF32() || type.isBF16() || type.isF16();
  };
  if (!isKernelType(shape.elementType) || !isKernelType(matmulType))
    return "element type is not f32, bf16 or f16";
  if (shape.queries == 0 || shape.keys == 0 || shape.headSize == 0 ||
      shape.valueSize == 0 || shape.heads == 0)
    return "empty operands";
  if (shape.headSize > kMaxContraction)
    return "head size " + std::to_string(shape.headSize) + " exceeds " +
           std::to_string(kMaxContraction);
  bool backward = isa<AttentionGradOp>(attention);
  int64_t maxValueSize = backward ? kMaxContraction : kMaxPsumColumns;
  if (shape.valueSize > maxValueSize)
    return "value size " + std::to_string(shape.valueSize) + " exceeds " +
           std::to_string(maxValueSize);
  int64_t bytes = matmulType.getIntOrFloatBitWidth() / 8;
  int64_t keyChunks = ceilDiv(shape.keys, kPartitions);
  int64_t queryChunks = ceilDiv(shape.queries, kPartitions);
  // Forward: K^T and V stay in SBUF for a head.
  int64_t resident = (shape.keys + keyChunks * shape.valueSize) * bytes;
  if (backward) {
    // Q^T, K^T, V^T and dO^T (a row per partition), Q, K and dO in
    // 128-row chunks, and the fp32 dQ accumulator.
    resident = (2 * shape.queries + 2 * shape.keys) * bytes +
               (queryChunks + keyChunks) * shape.headSize * bytes +
               queryChunks * shape.valueSize * bytes +
               queryChunks * shape.headSize * 4;
  }
  int64_t budget = backward ? kBackwardResidentBudget : kResidentBudget;
  if (resident > budget)
    return "a head's operands take " + std::to_string(resident) +
           " bytes per partition, over the " + std::to_string(budget) +
           "-byte budget";
  return "";
}
