/*===- trnrt.h - the trn runtime C API ----------------------------*- C -*-===*
 *
 * Load a trn artifact, bind inputs, run it on a (simulated) NeuronCore and
 * read outputs and statistics, from C or any language with a C FFI. No
 * exceptions cross this boundary: every call returns a status and, on
 * failure, trnrt_last_error() describes the problem in one line.
 *
 *   trnrt_init_options options;
 *   trnrt_stats stats;
 *   trnrt_runtime *rt;
 *   trnrt_model *model;
 *   trnrt_init_options_default(&options);     (or pass NULL for defaults)
 *   trnrt_init(&options, &rt);
 *   trnrt_load_file(rt, "step.trnart", &model);
 *   trnrt_write_tensor(model, "x", values, count);
 *   trnrt_execute(model);
 *   trnrt_read_tensor(model, "loss", &loss, 1);
 *   trnrt_stats_default(&stats);
 *   trnrt_get_stats(model, &stats);
 *   trnrt_unload(model);
 *   trnrt_close(rt);
 *
 * ABI rules. An embedder built against an older trnrt.h keeps working with a
 * newer runtime library, and one built against a newer header gets a status,
 * not undefined behaviour, from an older library:
 *  - Structs the caller passes in or out that may grow (trnrt_init_options,
 *    trnrt_stats) start with `size_t struct_size`, which the caller sets to
 *    its own sizeof (the inline *_default functions below do, compiled into
 *    the caller). The runtime touches only the bytes inside struct_size.
 *  - Such a struct only grows at its end: a field is never removed,
 *    reordered, resized or given a new meaning. A new field's default is
 *    all-zero bytes, so a caller that never heard of it gets the default.
 *  - Status and enum values are never renumbered; new ones may be added, so
 *    treat any status but TRNRT_OK as a failure.
 *  - trnrt_tensor_info is filled whole and does not grow; a new kind of
 *    information gets a new call.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TRNRT_TRNRT_H
#define TRNRT_TRNRT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum trnrt_status {
  TRNRT_OK = 0,
  TRNRT_INVALID_ARGUMENT = 1, /* a null pointer, an unknown name, a bad size */
  TRNRT_BAD_ARTIFACT = 2,     /* truncated, corrupt, foreign or newer file */
  TRNRT_INVALID_PROGRAM = 3,  /* breaks a hardware rule or cannot complete */
  TRNRT_OUT_OF_MEMORY = 4,    /* the program does not fit in device HBM */
  TRNRT_EXECUTION_ERROR = 5,  /* out-of-bounds access, bad index, deadlock */
  TRNRT_IO_ERROR = 6,         /* the file cannot be read */
  TRNRT_UNSUPPORTED = 7       /* an option or flag newer than this runtime */
} trnrt_status;

typedef struct trnrt_runtime trnrt_runtime;
typedef struct trnrt_model trnrt_model;

/* Element types, as in the artifact. */
typedef enum trnrt_dtype {
  TRNRT_F32 = 0,
  TRNRT_BF16 = 1,
  TRNRT_F16 = 2,
  TRNRT_F8E4M3FN = 3,
  TRNRT_F8E5M2 = 4,
  TRNRT_I1 = 5,
  TRNRT_I32 = 6,
  TRNRT_I64 = 7
} trnrt_dtype;

typedef struct trnrt_tensor_info {
  const char *name; /* valid while the model is loaded */
  trnrt_dtype dtype;
  size_t rank;
  const int64_t *shape; /* rank entries; valid while the model is loaded */
  size_t elements;
} trnrt_tensor_info;

/* The layout of trnrt_stats this header declares. A statistic is added at
 * the end of the struct, with its version noted beside it, and this number
 * goes up by one. */
#define TRNRT_STATS_VERSION 1

typedef struct trnrt_stats {
  size_t struct_size; /* the caller's sizeof(trnrt_stats) */
  uint32_t version;   /* set by trnrt_get_stats: the runtime's version */
  /* Version 1. */
  double device_time_ns;
  double tensor_engine_utilisation; /* 0..1 */
  double mfu;                       /* 0..1 */
  double engine_busy_percent[4];    /* tensor, vector, scalar, gpsimd */
  uint64_t instructions;
  uint64_t matmul_flops;
  uint64_t dma_count;
  uint64_t hbm_to_sbuf_bytes;
  uint64_t sbuf_to_hbm_bytes;
  uint64_t spill_bytes;
} trnrt_stats;

/* The smallest struct_size trnrt_get_stats accepts: struct_size and
 * version, for a caller that only asks which version the runtime has. */
#define TRNRT_STATS_MIN_SIZE (offsetof(trnrt_stats, version) + sizeof(uint32_t))

/* Zeroes *stats and sets struct_size to this header's sizeof(trnrt_stats).
 * Inline, so the size is the caller's, never the library's. */
static inline void trnrt_stats_default(trnrt_stats *stats) {
  memset(stats, 0, sizeof(*stats));
  stats->struct_size = sizeof(*stats);
}

/* Options of trnrt_init, one bit each in trnrt_init_options::flags. */
typedef enum trnrt_init_flags {
  /* Fill fresh memory (SBUF and PSUM before every run; inputs, outputs and
   * scratch at load, outputs and scratch again before every run) with 0xFF:
   * NaN in every float dtype, so reads of data nobody wrote show up. */
  TRNRT_INIT_POISON_MEMORY = 1u << 0,
  /* Time programs without computing values: statistics equal a full run's,
   * tensor contents after a run are undefined (docs/simulator.md). */
  TRNRT_INIT_TIMING_ONLY = 1u << 1
} trnrt_init_flags;

typedef struct trnrt_init_options {
  size_t struct_size; /* the caller's sizeof(trnrt_init_options) */
  uint64_t flags;     /* trnrt_init_flags bits; 0 by default */
  /* Optional from here on: a field beyond the caller's struct_size takes
   * its default. */
  /* Host threads sharing one instruction's work: 0 (the default) = every
   * core, 1 = the caller's thread only. Results do not depend on it. */
  uint64_t threads;
} trnrt_init_options;

/* The smallest struct_size trnrt_init accepts: struct_size and flags. */
#define TRNRT_INIT_OPTIONS_MIN_SIZE                                            \
  (offsetof(trnrt_init_options, flags) + sizeof(uint64_t))

/* Sets every option to its default and struct_size to this header's
 * sizeof(trnrt_init_options). Inline, so the size is the caller's. */
static inline void trnrt_init_options_default(trnrt_init_options *options) {
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
}

/* The message of the last failed call on this thread ("" if none). */
const char *trnrt_last_error(void);

/* Creates a runtime; its options apply to every model it loads. `options`
 * may be NULL for the defaults. A struct_size below
 * TRNRT_INIT_OPTIONS_MIN_SIZE is TRNRT_INVALID_ARGUMENT. Options from a newer
 * header than the runtime's are accepted if they ask for nothing it lacks:
 * a flag bit it does not know, or a nonzero byte beyond its own
 * sizeof(trnrt_init_options) (a field it does not know, set), is
 * TRNRT_UNSUPPORTED. */
trnrt_status trnrt_init(const trnrt_init_options *options,
                        trnrt_runtime **runtime);
void trnrt_close(trnrt_runtime *runtime);

/* Loads and validates an artifact (every hardware rule, and that its
 * semaphores let it complete), then lays it out on a simulated core. A path
 * that is not a regular file (a directory, a device, a FIFO) is refused
 * unread with TRNRT_IO_ERROR; a file over the format's size limit (4 GiB of
 * sections, docs/artifact-format.md) with TRNRT_BAD_ARTIFACT. */
trnrt_status trnrt_load_file(trnrt_runtime *runtime, const char *path,
                             trnrt_model **model);
trnrt_status trnrt_load_memory(trnrt_runtime *runtime, const void *data,
                               size_t size, trnrt_model **model);
void trnrt_unload(trnrt_model *model);

size_t trnrt_input_count(const trnrt_model *model);
size_t trnrt_output_count(const trnrt_model *model);
trnrt_status trnrt_input_info(const trnrt_model *model, size_t index,
                              trnrt_tensor_info *info);
trnrt_status trnrt_output_info(const trnrt_model *model, size_t index,
                               trnrt_tensor_info *info);

/* Writes or reads a whole tensor by name, as doubles (rounded to the
 * tensor's dtype on write); `count` must equal its element count. */
trnrt_status trnrt_write_tensor(trnrt_model *model, const char *name,
                                const double *values, size_t count);
trnrt_status trnrt_read_tensor(const trnrt_model *model, const char *name,
                               double *values, size_t count);

/* The same with raw little-endian bytes of the tensor's dtype (bf16 as its
 * 16-bit pattern, i1 one byte per element); `size` must equal its size in
 * bytes. No conversion, so framework tensors copy in and out exactly. */
trnrt_status trnrt_write_tensor_bytes(trnrt_model *model, const char *name,
                                      const void *bytes, size_t size);
trnrt_status trnrt_read_tensor_bytes(const trnrt_model *model, const char *name,
                                     void *bytes, size_t size);

/* Runs the program once. */
trnrt_status trnrt_execute(trnrt_model *model);
/* Statistics of the last successful execute. Writes only the bytes inside
 * stats->struct_size (at least TRNRT_STATS_MIN_SIZE, else
 * TRNRT_INVALID_ARGUMENT) and sets stats->version to TRNRT_STATS_VERSION as
 * the runtime knows it: a caller with a newer header finds the fields of
 * later versions untouched. */
trnrt_status trnrt_get_stats(const trnrt_model *model, trnrt_stats *stats);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRNRT_TRNRT_H */
