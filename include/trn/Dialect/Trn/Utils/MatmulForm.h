//===- MatmulForm.h - dot_general forms the backend lowers ------*- C++ -*-===//
//
// The NeuronCore lowering takes trn.dot_general with leading batch dims and
// one free and one contracting dim per operand; trn-assign-layouts keeps
// dot_generals in that form when it folds transposes into them. Both ask
// this one predicate.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_TRN_UTILS_MATMULFORM_H
#define TRN_DIALECT_TRN_UTILS_MATMULFORM_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"

namespace mlir::trn {

/// Whether a dot_general with operands of these ranks and dimension numbers
/// has the form the backend lowers: batching dims [0, b) in order on both
/// sides, rank b + 2 on both, one contracting dim.
bool isMatmulForm(int64_t lhsRank, int64_t rhsRank,
                  ArrayRef<int64_t> lhsBatchingDims,
                  ArrayRef<int64_t> rhsBatchingDims,
                  ArrayRef<int64_t> lhsContractingDims,
                  ArrayRef<int64_t> rhsContractingDims);

/// How the NeuronCore lowering blocks the result columns of a matmul with
/// contraction size `k`, `n` result columns and `inBytes`-byte operands.
/// Column blocks are two PSUM banks wide (1024 fp32 columns) when such a
/// moving panel (every K tile of the block) fits in 128 KiB per partition:
/// each M block's stationary tiles then serve twice the columns, which
/// halves the re-reads of lhs that bound large matmuls by DMA. Otherwise
/// blocks are one bank wide and the panel stays resident when it takes at
/// most 96 KiB (room for the stationary and result tiles).
struct MatmulColumnBlocking {
  int64_t blockWidth = 0;
  bool wideBlocks = false;
  bool residentPanel = false;
};
MatmulColumnBlocking matmulColumnBlocking(int64_t k, int64_t n,
                                          int64_t inBytes);

/// Whether every M block of the matmul's result comes out whole: its `n`
/// columns are one column block computed against a resident panel. An
/// epilogue then sees whole rows and may reduce along them (a layer norm
/// after a projection and its residual).
bool matmulYieldsWholeRows(int64_t k, int64_t n, int64_t inBytes);

} // namespace mlir::trn

#endif // TRN_DIALECT_TRN_UTILS_MATMULFORM_H
