//===- DistBase.td - dist dialect, attributes and enums ----*- tablegen -*-===//
//
// The `dist` dialect: device meshes, per-dimension shardings and collectives
// (docs/partitioning.md).
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_DIST_IR_DISTBASE_TD
#define TRN_DIALECT_DIST_IR_DISTBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::mlir::dist";
  let summary = "device meshes, tensor shardings and collectives";
  let description = [{
    The `dist` dialect describes how a training step is spread over
    NeuronCores, GSPMD/Shardy style. A `dist.mesh` names the axes of the
    device grid and their sizes (`dp`, `pp`, `tp`, ...). A
    `#dist.sharding<@mesh, [{"tp"}, {} ]>` says, per tensor dimension, which
    mesh axes split it (major axis first; `{}` means replicated along it), and
    which axes hold partial sums still to be reduced (`partial = {"tp"}`).
    Collectives work on each rank's local tensor and name mesh axes, never
    ranks: the replica groups (the ranks that differ only along those axes)
    are bound when a program is loaded, so one program serves every rank of
    a mesh and, along axes it does not name, any degree.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The sharding of a function argument or result, or of an op's results
    /// (an array attribute, one sharding per result).
    static constexpr ::llvm::StringLiteral getShardingAttrName() {
      return "dist.sharding";
    }
    /// On a function: it is the program every rank runs (dist-spmd's
    /// output); its shardings say how global tensors map to local ones.
    static constexpr ::llvm::StringLiteral getSpmdAttrName() {
      return "dist.spmd";
    }
    /// On a `dist.spmd` function: the mesh axes over which the program is
    /// one replica's step (their degree is bound when it is loaded).
    static constexpr ::llvm::StringLiteral getReplicaAxesAttrName() {
      return "dist.replica_axes";
    }
    /// On an op or a pipeline fragment: its pipeline stage (an i64, the
    /// index along the pipeline axis).
    static constexpr ::llvm::StringLiteral getStageAttrName() {
      return "dist.stage";
    }
    /// On an op or a pipeline fragment: "forward" or "backward" (run once
    /// per microbatch) or "update" (once per step, after the microbatches).
    static constexpr ::llvm::StringLiteral getPhaseAttrName() {
      return "dist.phase";
    }
    /// On a pipeline fragment: the `dist.pipeline` it is part of.
    static constexpr ::llvm::StringLiteral getPipelineAttrName() {
      return "dist.pipeline";
    }
    /// On a fragment's argument or result: a #dist.port, where the runtime
    /// takes it from or puts it.
    static constexpr ::llvm::StringLiteral getPortAttrName() {
      return "dist.port";
    }
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the ranks' values", [
      I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>, I32EnumAttrCase<"mean", 3>]> {
  let cppNamespace = "::mlir::dist";
}

def Dist_ShardingAttr : AttrDef<Dist_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "how a tensor is split over the axes of a mesh";
  let description = [{
    `#dist.sharding<@mesh, [{"dp"}, {}, {"tp"} ], partial = {"tp"}>`: one
    list of mesh axes per tensor dimension (the dimension is split over
    them, the first the most major; an empty list replicates it) and the axes
    along which the value is a partial sum not reduced yet. An axis appears
    at most once in a sharding. Axes named nowhere replicate the tensor.

    A dimension may be split block-wise: `3x{"tp"}` views it as 3 equal
    blocks and splits each block over the axes, so a rank holds its chunk of
    every block (a fused QKV projection's output features `[3, H*D]` split on
    the heads; the merged `[B*H]` of a batched matmul split on H). Its local
    size is the same as a contiguous split's.
  }];
  let parameters = (ins "FlatSymbolRefAttr":$mesh,
                        "ArrayAttr":$dims,
                        "ArrayAttr":$partial,
                        OptionalArrayRefParameter<"int64_t">:$blocks);
  let builders = [
    AttrBuilder<(ins "FlatSymbolRefAttr":$mesh, "ArrayAttr":$dims,
                     "ArrayAttr":$partial), [{
      return $_get($_ctxt, mesh, dims, partial, ::llvm::ArrayRef<int64_t>{});
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The axes that split dimension `dim`.
    ::llvm::SmallVector<::llvm::StringRef> axesOf(unsigned dim) const;
    /// How many blocks dimension `dim` is viewed as (1: split contiguously).
    int64_t blocksOf(unsigned dim) const;
    /// Whether no dimension is split and nothing is partial.
    bool isReplicated() const;
  }];
}

def Dist_PortAttr : AttrDef<Dist_Dialect, "Port"> {
  let mnemonic = "port";
  let summary = "where a pipeline fragment's argument or result goes";
  let description = [{
    On the arguments and results of a pipeline fragment (a function with
    `dist.pipeline`), `#dist.port<"stash", 3>` says how the runtime binds
    it. Arguments:

    - `"argument", N`: the step's argument N, once per step (a parameter,
      an optimizer state, a hyperparameter);
    - `"microbatch", N`: the current microbatch's slice of the step's
      argument N (split on its first dimension);
    - `"stash", K`: result K of the same stage's forward fragment for the
      same microbatch (an activation kept for the backward);
    - `"accumulator", K`: the running sum K of a per-microbatch value (zeros
      before the first microbatch, then what the previous microbatch's
      fragment returned as `"accumulator", K`); an update fragment gets the
      sum over every microbatch.

    Results: `"stash", K`, `"accumulator", K` and `"result", N` (the step's
    result N; a parameter used by several stages is returned by each of
    them, the same value).
  }];
  let parameters = (ins StringRefParameter<"the kind">:$kind,
                        "int64_t":$index);
  let assemblyFormat = "`<` $kind `,` $index `>`";
  let genVerifyDecl = 1;
}

#endif // TRN_DIALECT_DIST_IR_DISTBASE_TD
