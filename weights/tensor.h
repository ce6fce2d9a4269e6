/* SPDX-License-Identifier: MIT */
/* tensor.h - tensors in memory and the weight-file formats patc reads and
 * writes: .safetensors (read and write) and .npy (read), plus seeded
 * synthetic weights.
 *
 * Every reader validates the whole file before trusting any byte of it and
 * reports problems as one message that names the file and the tensor.  Data
 * read is converted to f32 in C order; NaN and Inf are refused.  Readers take
 * their bytes from a TensorSrc: an open file read by ranges (pread: a tensor
 * costs its header and its own bytes, not the whole checkpoint's) or a
 * memory image (so that they can be fuzzed directly).
 */
#ifndef PATC_TENSOR_H
#define PATC_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* TENSOR_MAX_RANK: at least a nest's loops (PIR_MAX_LOOPS), the rank of the
 * packed values --emit=weights writes; the readers take up to
 * TENSOR_READ_RANK. */
enum { TENSOR_MAX_RANK = 24, TENSOR_READ_RANK = 8, TENSOR_NAME_MAX = 256, TENSOR_ERR_MAX = 512 };

/* Storage types of safetensors files, defined once: X(enum, name, bytes). */
#define TENSOR_DTYPES(X)                                                      \
	X(F64, "F64", 8) X(F32, "F32", 4) X(F16, "F16", 2) X(BF16, "BF16", 2)  \
	X(I64, "I64", 8) X(I32, "I32", 4) X(I16, "I16", 2) X(I8, "I8", 1)      \
	X(U64, "U64", 8) X(U32, "U32", 4) X(U16, "U16", 2) X(U8, "U8", 1)      \
	X(BOOL, "BOOL", 1) X(F8_E4M3, "F8_E4M3", 1) X(F8_E5M2, "F8_E5M2", 1)

typedef enum TensorDtype {
#define X(e, name, bytes) DT_##e,
	TENSOR_DTYPES(X)
#undef X
	DT_COUNT
} TensorDtype;

extern const char *const tensor_dtype_names[DT_COUNT];
extern const int tensor_dtype_bytes[DT_COUNT];

/* A dense f32 tensor in C order; data is malloc'd and owned. */
typedef struct Tensor {
	char name[TENSOR_NAME_MAX];
	TensorDtype stored; /* the dtype it was stored as */
	int rank;
	int64_t shape[TENSOR_MAX_RANK];
	int64_t count; /* product of shape */
	float *data;
} Tensor;

void tensor_free(Tensor *t);

/* ---- where a reader's bytes come from (safetensors.c) ---- */

/* A tensor file: an open file read by ranges, or a memory image (mem not
 * NULL).  len is the file's size (fstat's), which every check of the
 * readers trusts; a file that is shorter when read (it shrank, or changed)
 * is an error, not a crash. */
typedef struct TensorSrc {
	const char *file; /* names the file in messages */
	const uint8_t *mem;
	int fd;
	uint64_t len;
} TensorSrc;

/* Opens path for reading by ranges: only a regular file (a FIFO would
 * block, a device be endless); false with err set ("cannot read: ..."). */
bool tensor_src_open(TensorSrc *s, const char *path, char err[TENSOR_ERR_MAX]);
/* A memory image of len bytes, named file in messages. */
TensorSrc tensor_src_mem(const uint8_t *buf, size_t len, const char *file);
void tensor_src_close(TensorSrc *s);
/* Reads n bytes at off into buf; false with err set where they are not
 * all there (a read error, or the file ended early). */
bool tensor_src_read(const TensorSrc *s, uint64_t off, void *buf, size_t n, char err[TENSOR_ERR_MAX]);

/* ---- safetensors (safetensors.c) ---- */

/* Reads tensor `name` from a .safetensors image.  `file` names the file in
 * messages.  The whole header is validated: length within the file,
 * well-formed JSON, known dtypes, offsets inside the data, non-overlapping,
 * byte sizes equal to product(shape) * dtype size. */
bool st_read_mem(const uint8_t *buf, size_t len, const char *file, const char *name, Tensor *out,
                 char err[TENSOR_ERR_MAX]);
bool st_read_file(const char *path, const char *name, Tensor *out, char err[TENSOR_ERR_MAX]);
/* The same from a source: reads the 8-byte length and the header, then the
 * tensor's own byte range only. */
bool st_read_src(const TensorSrc *src, const char *name, Tensor *out, char err[TENSOR_ERR_MAX]);

/* The tensors a .safetensors file holds (validated as st_read_mem does):
 * names and shapes, in header order.  Free with st_list_free. */
typedef struct StInfo {
	char name[TENSOR_NAME_MAX];
	TensorDtype dtype;
	int rank;
	int64_t shape[TENSOR_MAX_RANK];
} StInfo;
bool st_list_file(const char *path, StInfo **out, int *n, char err[TENSOR_ERR_MAX]);
bool st_list_src(const TensorSrc *src, StInfo **out, int *n, char err[TENSOR_ERR_MAX]); /* (the header only) */

/* One tensor to write: raw little-endian bytes of the given dtype. */
typedef struct StWrite {
	const char *name;
	TensorDtype dtype;
	int rank;
	int64_t shape[TENSOR_MAX_RANK];
	const void *data; /* product(shape) * dtype bytes */
} StWrite;

/* Writes a .safetensors file atomically (temporary file, then rename) with
 * the given tensors and string metadata (`__metadata__`). */
bool st_write_file(const char *path, const StWrite *t, int n, const char *const *meta_keys,
                   const char *const *meta_values, int nmeta, char err[TENSOR_ERR_MAX]);

/* ---- npy (npy.c) ---- */

/* Reads a .npy image: versions 1 to 3, little-endian f4 or f2, C or
 * Fortran order (converted to C order). */
bool npy_read_mem(const uint8_t *buf, size_t len, const char *file, Tensor *out,
                  char err[TENSOR_ERR_MAX]);
bool npy_read_file(const char *path, Tensor *out, char err[TENSOR_ERR_MAX]);
bool npy_read_src(const TensorSrc *src, Tensor *out, char err[TENSOR_ERR_MAX]);

/* ---- half precision (fp16.c) ---- */
float fp16_to_f32(uint16_t h);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);  /* round to nearest even */
uint16_t f32_to_bf16(float f);  /* round to nearest even */

/* ---- synthetic weights (synth.c) ---- */

/* The kinds of seeded synthetic weight, defined once. */
#define SYNTH_KINDS(X)                                                        \
	X(PLAIN, "plain")  /* i.i.d. normal */                                \
	X(ROWS, "rows")    /* a log-normal scale per output row */            \
	X(COLS, "cols")    /* a log-normal scale per input column */          \
	X(HEADS, "heads")  /* a log-normal scale per group x group block */

typedef enum SynthKind {
#define X(e, name) SYNTH_##e,
	SYNTH_KINDS(X)
#undef X
	SYNTH_COUNT
} SynthKind;

extern const char *const synth_kind_names[SYNTH_COUNT];

/* Fills w (M x K, C order) deterministically from seed: normal values of
 * standard deviation 1/sqrt(K) times the kind's scale. */
void synth_weights(float *w, int64_t M, int64_t K, uint64_t seed, SynthKind kind, int64_t group);

/* Formats a message into err (sanitised as below); returns false, so a
 * reader can `return tensor_fail(err, ...)`. */
bool tensor_fail(char err[TENSOR_ERR_MAX], const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* (A name or string read from a file, or asked for, is quoted in a
 * message by util_quote, support/util.h: cut to its first 64 characters,
 * control bytes and invalid UTF-8 as \xNN.) */

/* Replaces control characters in a message (names read from files may hold
 * them) so it prints on one line. */
void tensor_sanitize(char *msg);

/* Checks a tensor for NaN and Inf; on failure names the first bad element. */
bool tensor_check_finite(const Tensor *t, const char *file, char err[TENSOR_ERR_MAX]);

#endif
