/*===- trnrt.h - the trn runtime C API ----------------------------*- C -*-===*
 *
 * Load a trn artifact, bind inputs, run it on a (simulated) NeuronCore and
 * read outputs and statistics, from C or any language with a C FFI. No
 * exceptions cross this boundary: every call returns a status and, on
 * failure, trnrt_last_error() describes the problem in one line.
 *
 *   trnrt_runtime *rt;
 *   trnrt_model *model;
 *   trnrt_init(&rt);
 *   trnrt_load_file(rt, "step.trnart", &model);
 *   trnrt_write_tensor(model, "x", values, count);
 *   trnrt_execute(model);
 *   trnrt_read_tensor(model, "loss", &loss, 1);
 *   trnrt_unload(model);
 *   trnrt_close(rt);
 *
 *===----------------------------------------------------------------------===*/

#ifndef TRNRT_TRNRT_H
#define TRNRT_TRNRT_H

#include <stddef.h>
#include <stdint.h>

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
  TRNRT_IO_ERROR = 6          /* the file cannot be read */
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

typedef struct trnrt_stats {
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

/* The message of the last failed call on this thread ("" if none). */
const char *trnrt_last_error(void);

trnrt_status trnrt_init(trnrt_runtime **runtime);
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
/* Statistics of the last successful execute. */
trnrt_status trnrt_get_stats(const trnrt_model *model, trnrt_stats *stats);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRNRT_TRNRT_H */
