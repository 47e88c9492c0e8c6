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

} // namespace mlir::trn

#endif // TRN_DIALECT_TRN_UTILS_MATMULFORM_H
