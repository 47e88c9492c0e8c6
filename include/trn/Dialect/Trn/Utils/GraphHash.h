//===- GraphHash.h - canonical hash of a trn graph --------------*- C++ -*-===//
//
// The graph half of a compile-cache key (trn/Cache/Key.h): XXH3-128 over a
// versioned canonical form of a module. The form keeps what changes the
// compiled program and nothing else:
//
//  * kept: every op name in order, operand wiring by position (a block
//    argument index or an (op index, result index) pair), successors, result
//    and block argument types, every attribute (inherent/properties and
//    discardable; constants by a digest of their raw data), the function
//    type and the argument and result attributes (trn.role, trn.name,
//    trn.aliases), nested regions and blocks;
//  * ignored: SSA value names, locations, whitespace and comments, pretty vs
//    generic printing, and the names of the module's top-level symbols
//    (functions are numbered in order and symbol references to them become
//    those numbers).
//
// The hash is exactly the XXH3-128 of canonicalForm(): diffing the canonical
// forms of two graphs explains a cache miss.
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_TRN_UTILS_GRAPHHASH_H
#define TRN_DIALECT_TRN_UTILS_GRAPHHASH_H

#include "trn/Support/Hash128.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>

namespace mlir::trn {

/// The first line of every canonical form; bump it whenever the form changes
/// so that keys from an older form never match.
constexpr const char *kGraphHashVersion = "trn-graph-v1";

/// What a hash covered, for benchmarks and diagnostics.
struct GraphHashStats {
  uint64_t operations = 0;     ///< ops visited, the root included
  uint64_t canonicalBytes = 0; ///< bytes fed to XXH3
};

/// Canonical hash of a module (the key trn-cc uses).
Hash128 hashGraph(ModuleOp module, GraphHashStats *stats = nullptr);

/// Canonical hash of one function on its own (its symbol name is ignored).
Hash128 hashGraph(func::FuncOp function, GraphHashStats *stats = nullptr);

/// The text whose XXH3-128 is hashGraph(): one line per op and per block,
/// with constants shown as digests of their raw data.
std::string canonicalForm(ModuleOp module);
std::string canonicalForm(func::FuncOp function);

} // namespace mlir::trn

#endif // TRN_DIALECT_TRN_UTILS_GRAPHHASH_H
