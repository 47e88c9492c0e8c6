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

mlir::trn::MatmulColumnBlocking
mlir::trn::matmulColumnBlocking(int64_t k, int64_t n, int64_t inBytes) {
  // The Tensor Engine's tile sizes: K per matmul, fp32 columns per bank.
  constexpr int64_t kTileK = 128, kBankColumns = 512;
  int64_t kTiles = (k + kTileK - 1) / kTileK;
  MatmulColumnBlocking blocking;
  blocking.wideBlocks =
      n > kBankColumns && kTiles * 2 * kBankColumns * inBytes <= 128 * 1024;
  blocking.blockWidth = blocking.wideBlocks ? 2 * kBankColumns : kBankColumns;
  blocking.residentPanel = blocking.wideBlocks ||
                           kTiles * blocking.blockWidth * inBytes <= 96 * 1024;
  return blocking;
}

bool mlir::trn::matmulYieldsWholeRows(int64_t k, int64_t n, int64_t inBytes) {
  MatmulColumnBlocking blocking = matmulColumnBlocking(k, n, inBytes);
  return n <= blocking.blockWidth && blocking.residentPanel;
}
