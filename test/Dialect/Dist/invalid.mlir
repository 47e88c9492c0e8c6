// RUN: trn-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'dist.mesh' op axis "tp" appears twice}}
dist.mesh @mesh <tp = 2, tp = 4>

// -----

// expected-error @+1 {{'dist.mesh' op axis "tp" has size 0; sizes are positive}}
dist.mesh @mesh <dp = 2, tp = 0>

// -----

// expected-error @+1 {{'dist.mesh' op axis name "2d" is not an identifier}}
dist.mesh @mesh <"2d" = 2>

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.all_reduce' op names axis "pp", which @mesh does not have}}
  %0 = dist.all_reduce sum %x on @mesh axes = ["pp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.all_reduce' op names @nowhere, which is not a dist.mesh}}
  %0 = dist.all_reduce sum %x on @nowhere axes = ["tp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.all_reduce' op names axis "tp" twice}}
  %0 = dist.all_reduce sum %x on @mesh axes = ["tp", "tp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.all_reduce' op names no mesh axis}}
  %0 = dist.all_reduce sum %x on @mesh axes = [] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x48xf32> {
  // expected-error @+1 {{'dist.all_gather' op result dimension 1 must be the input's times the group size 4 (16 x 4 = 64), got 48}}
  %0 = dist.all_gather %x on @mesh axes = ["tp"] dim = 1 : tensor<8x16xf32> -> tensor<8x48xf32>
  return %0 : tensor<8x48xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8x16xf32>) -> tensor<9x64xf32> {
  // expected-error @+1 {{'dist.all_gather' op changes dimension 0 from 8 to 9}}
  %0 = dist.all_gather %x on @mesh axes = ["tp"] dim = 1 : tensor<8x16xf32> -> tensor<9x64xf32>
  return %0 : tensor<9x64xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x64xbf16> {
  // expected-error @+1 {{'dist.all_gather' op changes the element type from 'f32' to 'bf16'}}
  %0 = dist.all_gather %x on @mesh axes = ["tp"] dim = 1 : tensor<8x16xf32> -> tensor<8x64xbf16>
  return %0 : tensor<8x64xbf16>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'dist.all_gather' op dimension 2 is out of range for rank 2}}
  %0 = dist.all_gather %x on @mesh axes = ["tp"] dim = 2 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<6x16xf32>) -> tensor<1x16xf32> {
  // expected-error @+1 {{'dist.reduce_scatter' op input dimension 0 must be the result's times the group size 4 (1 x 4 = 4), got 6}}
  %0 = dist.reduce_scatter sum %x on @mesh axes = ["tp"] dim = 0 : tensor<6x16xf32> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'dist.all_to_all' op splits and concatenates the same dimension; that is no exchange}}
  %0 = dist.all_to_all %x on @mesh axes = ["tp"] split_dim = 1 concat_dim = 1 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8x16xf32>) -> tensor<32x4xf32> {
  // expected-error @+1 {{'dist.all_to_all' op input dimension 1 must be the result's times the group size 2 (4 x 2 = 8), got 16}}
  %0 = dist.all_to_all %x on @mesh axes = ["dp"] split_dim = 1 concat_dim = 0 : tensor<8x16xf32> -> tensor<32x4xf32>
  return %0 : tensor<32x4xf32>
}

// -----

dist.mesh @mesh <pp = 4>
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.collective_permute' op shift 0 sends every value to itself; drop the op}}
  %0 = dist.collective_permute %x on @mesh axes = ["pp"] shift = 0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'dist.sharding_constraint' op sharding has 1 dimensions but the tensor has rank 2}}
  %0 = dist.sharding_constraint %x <@mesh, [{"tp"}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'dist.sharding_constraint' op sharding names axis "pp", which @mesh does not have}}
  %0 = dist.sharding_constraint %x <@mesh, [{"pp"}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{mesh axis "tp" appears twice in a sharding (an axis splits at most one dimension or sums one partial value)}}
  %0 = dist.sharding_constraint %x <@mesh, [{"tp"}, {}], partial = {"tp"}> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
// expected-error @+1 {{'dist.sharding' of argument 0 has 1 dimensions but the tensor has rank 2}}
func.func @f(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{"tp"}]>}) {
  return
}

// -----

dist.mesh @mesh <dp = 2, tp = 4>
// expected-error @+1 {{'dist.sharding' of result 0 names axis "pp", which @mesh does not have}}
func.func @f() -> (tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [{"pp"}]>}) {
  %0 = trn.constant dense<0.0> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// expected-error @+1 {{'dist.sharding' of argument 0 names @gone, which is not a dist.mesh}}
func.func @f(%x: tensor<8xf32> {dist.sharding = #dist.sharding<@gone, [{"tp"}]>}) {
  return
}

// -----

dist.mesh @mesh <tp = 4>
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.sharding' on an op is a list of one sharding per result (1)}}
  %0 = trn.exp %a {dist.sharding = #dist.sharding<@mesh, [{"tp"}]>} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh <tp = 4>
// expected-error @+1 {{unknown dist argument attribute 'dist.shard'}}
func.func @f(%x: tensor<8xf32> {dist.shard = 1}) {
  return
}

// -----

dist.mesh @mesh <tp = 4>
func.func @f(%x: tensor<6x16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'dist.all_slice' op input dimension 0 must be the result's times the group size 4 (2 x 4 = 8), got 6}}
  %0 = dist.all_slice %x on @mesh axes = ["tp"] dim = 0 : tensor<6x16xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

dist.mesh @mesh <tp = 2>
// expected-error @+1 {{'dist.sharding' of argument 0 splits dimension 0 (size 10) into 3 blocks, which do not divide it}}
func.func @blocks(%x: tensor<10xf32> {dist.sharding = #dist.sharding<@mesh, [3x{"tp"}]>}) {
  return
}

// -----

dist.mesh @mesh <tp = 2>
// expected-error @+1 {{dimension 0 is split into 3 blocks over no mesh axis; write {} for a whole dimension}}
func.func @blocks(%x: tensor<12xf32> {dist.sharding = #dist.sharding<@mesh, [3x{}]>}) {
  return
}

// -----

dist.mesh @mesh <dp = 2, pp = 2>
func.func @self(%x: tensor<4xf32>) attributes {dist.stage = 1 : i64} {
  // expected-error @+1 {{'dist.send' op names its own stage 1 as the peer}}
  dist.send %x to 1 on @mesh axis = "pp" tag = 0 : tensor<4xf32>
  return
}

// -----

dist.mesh @mesh <dp = 2, pp = 2>
func.func @far() -> tensor<4xf32> {
  // expected-error @+1 {{'dist.recv' op names stage 2 of axis "pp", which has 2}}
  %x = dist.recv from 2 on @mesh axis = "pp" tag = 0 : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

dist.mesh @mesh <dp = 2>
func.func @noAxis(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op names axis "pp", which @mesh does not have}}
  dist.send %x to 1 on @mesh axis = "pp" tag = 0 : tensor<4xf32>
  return
}

// -----

dist.mesh @mesh <pp = 2>
// expected-error @+1 {{'dist.pipeline' op has an unknown schedule "zigzag" (expected gpipe or 1f1b)}}
dist.pipeline @step on @mesh axis = "pp" microbatches = 2 schedule = "zigzag" {function_type = () -> ()}

// -----

dist.mesh @mesh <pp = 2>
// expected-error @+1 {{'dist.pipeline' op needs at least one microbatch, not 0}}
dist.pipeline @step on @mesh axis = "pp" microbatches = 0 schedule = "1f1b" {function_type = () -> ()}

// -----

dist.mesh @mesh <pp = 2>
// expected-error @+1 {{'dist.pipeline' op has 1 argument attribute dictionaries for 0 arguments}}
dist.pipeline @step on @mesh axis = "pp" microbatches = 1 schedule = "1f1b" {function_type = () -> (), arg_attrs = [{}]}

// -----

// expected-error @+1 {{unknown port kind "parameter" (expected argument, microbatch, stash, accumulator or result)}}
func.func @port(%x: tensor<4xf32> {dist.port = #dist.port<"parameter", 0>}) {
  return
}

// -----

// expected-error @+1 {{a fragment's argument cannot be a "result" port}}
func.func @port(%x: tensor<4xf32> {dist.port = #dist.port<"result", 0>}) {
  return
}

// -----

// expected-error @+1 {{a fragment's result cannot be a "microbatch" port}}
func.func @port(%x: tensor<4xf32>) -> (tensor<4xf32> {dist.port = #dist.port<"microbatch", 0>}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'dist.phase' is "forward", "backward" or "update"}}
func.func @phase() attributes {dist.phase = "sideways"} {
  return
}

// -----

// expected-error @+1 {{'dist.stage' is a pipeline stage index (an integer >= 0)}}
func.func @stage() attributes {dist.stage = -1 : i64} {
  return
}
