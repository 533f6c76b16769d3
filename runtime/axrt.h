/* axrt.h — the axc runtime: the descriptor every generated model exports and
 * the kernels generated C calls.  The core is freestanding C99: it needs only
 * <stddef.h>, <stdint.h>, <string.h> and <math.h>, so it builds for firmware.
 * Optional parts (OpenBLAS GEMM, CUDA loader, timing) live in other headers. */
#ifndef AXRT_H
#define AXRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AXRT_MAX_RANK 8

/* Element types, in the order of language.md §4. */
typedef enum axrt_dtype {
    AXRT_F32 = 0,
    AXRT_F64,
    AXRT_F16,
    AXRT_BF16,
    AXRT_I8,
    AXRT_I32,
    AXRT_I64,
    AXRT_DTYPE_COUNT
} axrt_dtype;

/* One input or output of a compiled model. */
typedef struct axrt_tensor_info {
    const char *name;
    axrt_dtype dtype;
    int rank;
    int64_t dims[AXRT_MAX_RANK];
} axrt_tensor_info;

/* A compiled model, as exported by generated code (`<name>_model`). */
typedef struct axrt_model {
    const char *name;
    int n_inputs;
    int n_outputs;
    const axrt_tensor_info *inputs;
    const axrt_tensor_info *outputs;
    size_t arena_bytes; /* scratch bytes one call needs (64-byte aligned) */
    /* inputs in signature order, outputs in return order; arena may be NULL
       to use a static arena inside the generated file (not reentrant). */
    int (*run)(const void *const *inputs, void *const *outputs, void *arena);
} axrt_model;

/* Size in bytes of one element of dtype (0 for an unknown value). */
size_t axrt_dtype_size(axrt_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif /* AXRT_H */
