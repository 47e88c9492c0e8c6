//===- MatmulForm.cpp - dot_general forms the backend lowers --------------===//

#include "trn/Dialect/Trn/Utils/MatmulForm.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

bool mlir::trn::isMatmulForm(int64_t lhsRank, int64_t rhsRank,
                             ArrayRef<int64_t> lhsBatchingDims,
                             ArrayRef<int64_t> rhsBatchingDims,
                             ArrayRef<int64_t> lhsContractingDims,
                             ArrayRef<int64_t> rhsContractingDims) {
  auto isLeading = [](ArrayRef<int64_t> dims) {
    for (auto [i, d] : llvm::enumerate(dims))
      if (d != static_cast<int64_t>(i))
        return false;
    return true;
  };
  int64_t batchRank = lhsBatchingDims.size();
  return isLeading(lhsBatchingDims) && isLeading(rhsBatchingDims) &&
         static_cast<int64_t>(rhsBatchingDims.size()) == batchRank &&
         lhsRank == batchRank + 2 && rhsRank == batchRank + 2 &&
         lhsContractingDims.size() == 1 && rhsContractingDims.size() == 1;
}
