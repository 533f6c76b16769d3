/* tensorfile.h — the two tensor file formats of docs/cli.md#files, read from
 * untrusted bytes with every offset and size bounds-checked.
 *
 *  safetensors: u64-LE header length, JSON header {name: {dtype, shape,
 *               data_offsets}} (+ optional "__metadata__"), raw LE data.
 *  .npy:        NumPy format 1.0/2.0 (3.0 accepted as 2.0), little-endian
 *               <f4 <f8 <f2 <i4 <i8 |i1, C order only.
 *
 * Parsers never allocate more than a bounded multiple of the input size and
 * report the first problem as a one-line message in err (no "error:" prefix,
 * e.g. "tensor 'fc.weight': data_offsets [0, 40] exceed the data section (32 bytes)"). */
#ifndef AX_TENSORFILE_H
#define AX_TENSORFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "axrt.h"
#include "ax.h"

typedef struct tf_tensor {
    const char *name;            /* safetensors only (arena copy) */
    axrt_dtype dtype;
    int rank;
    int64_t shape[AXRT_MAX_RANK];
    const uint8_t *data;         /* points into the parsed buffer; may be unaligned */
    size_t nbytes;
} tf_tensor;

/* Limits that keep hostile files from exhausting memory. */
#define TF_MAX_HEADER_BYTES (100u << 20) /* safetensors JSON header */
#define TF_MAX_TENSORS 1000000

/* Parses a safetensors file held in buf[0..len).  On success returns 0 and
 * sets *out (array in header order, allocated in the arena) and *n.  On
 * failure returns -1 with a message in err. */
int tf_safetensors_parse(ax_arena *a, const uint8_t *buf, size_t len,
                         tf_tensor **out, int *n, char *err, size_t errlen);
/* Appends a safetensors file holding tensors t[0..n) to out.  Names and
 * data are taken as given (data: nbytes raw little-endian bytes). */
void tf_safetensors_write(ax_buf *out, const tf_tensor *t, int n);

/* Parses a .npy file; on success 0 and *out (data points into buf). */
int tf_npy_parse(const uint8_t *buf, size_t len, tf_tensor *out, char *err, size_t errlen);
/* The header alone: buf holds the file's first len bytes (the whole header),
 * file_size is the file's; *out gets dtype and shape (data NULL) and
 * *data_offset where the data starts, checked to fill the rest of the file
 * exactly.  For readers of part of the data (axc train's shards). */
int tf_npy_parse_header(const uint8_t *buf, size_t len, size_t file_size, tf_tensor *out, size_t *data_offset,
                        char *err, size_t errlen);
/* Appends a version 1.0 .npy file (C order, little-endian) to out. */
void tf_npy_write(ax_buf *out, const tf_tensor *t);

/* Element conversion between dtypes (F16/BF16 included, round to nearest
 * even when narrowing floats, truncation toward zero float->int).  dst and
 * src may be unaligned; n elements. */
void tf_convert(void *dst, axrt_dtype dst_type, const void *src, axrt_dtype src_type, size_t n);

/* "F32" <-> AXRT_F32 ... (safetensors spelling); false / NULL when unknown. */
bool tf_dtype_from_st(const char *s, axrt_dtype *out);
const char *tf_dtype_to_st(axrt_dtype d);

#endif
