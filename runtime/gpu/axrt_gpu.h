/* axrt_gpu.h — the optional GPU part of the runtime (libaxrt_gpu, not the
 * freestanding core libaxrt): what `axc --target=cuda|hip` host C hands it,
 * and the calls that host C makes (docs/gpu.md).
 *
 * The generated host C embeds the model's kernel source, its parameters (in
 * the layout of the device parameter block) and its launch list.  At init
 * the library opens the driver (libcuda.so.1 / libamdhip64.so) and the
 * run-time compiler (libnvrtc / hiprtc) with dlopen, compiles the source for
 * the device found (or reads it from the compiled-kernel cache: a second
 * start compiles nothing), uploads the parameters once and allocates the
 * compile-time-planned device arena once.  A forward pass allocates
 * nothing: it launches the list in order on the caller's stream.
 *
 * No CUDA or HIP header is needed to build either this library or the
 * generated code.  Environment: AXRT_GPU_CACHE (cache directory; default
 * $XDG_CACHE_HOME/axc or $HOME/.cache/axc; "off" disables it; one others can
 * write is not used, and an entry not the user's own, writable by others,
 * damaged or refused by the driver is compiled again, with a note on stderr),
 * AXRT_GPU_VERBOSE=1 (says on stderr whether it compiled or used the cache),
 * AXRT_GPU_MATH=bf16 (CUDA, sm_80 and later: the GEMMs on tensor cores, BFloat16
 * operands with Float32 accumulation; otherwise exact Float32),
 * AXRT_CUDA_LIB / AXRT_NVRTC_LIB / AXRT_HIP_LIB (library names to open). */
#ifndef AXRT_GPU_H
#define AXRT_GPU_H

#include <stddef.h>

#include "axrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum axrt_gpu_dialect { AXRT_GPU_CUDA, AXRT_GPU_HIP } axrt_gpu_dialect;

/* One kernel launch: every kernel takes (arena, params, inputs..., outputs...). */
typedef struct axrt_gpu_launch {
    const char *kernel;
    unsigned grid[3];
    unsigned block[3];
} axrt_gpu_launch;

typedef struct axrt_gpu_model {
    const char *name;
    axrt_gpu_dialect dialect;
    const char *source;              /* the kernels, CUDA C++ or HIP */
    const unsigned char *params;     /* the device parameter block's bytes */
    size_t param_bytes;
    size_t arena_bytes;              /* <NAME>_DEVICE_ARENA_BYTES */
    int ninputs, noutputs;
    const axrt_tensor_info *inputs, *outputs;
    const size_t *io_bytes;          /* bytes of each input, then each output */
    const axrt_gpu_launch *launches;
    int nlaunches;
    size_t index_word;               /* 1 + the arena offset of the int an Embedding sets
                                        for an index outside [0, vocab); 0: no Embedding */
} axrt_gpu_model;

typedef struct axrt_gpu axrt_gpu;

/* The most inputs plus outputs a model may have on this target. */
#define AXRT_GPU_MAX_IO 32

/* A context for model on device 0, or NULL with a message in err (no
 * driver, no device, the compiler's log). */
axrt_gpu *axrt_gpu_init(const axrt_gpu_model *model, char *err, size_t errlen);
/* io: the device pointers of the inputs, then the outputs; stream: a
 * CUstream/hipStream_t or NULL.  Returns 0, or the driver's error code. */
int axrt_gpu_forward(axrt_gpu *g, const void *const *io, void *stream);
/* Host buffers: copied into the staging buffers allocated at init, run,
 * copied back, synchronised.  Returns 0, the driver's error code (positive),
 * or AXRT_GPU_ERR_INDEX when an Embedding met an index outside [0, vocab)
 * (its rows are NaN; the C target returns AXRT_ERR_INDEX); axrt_gpu_error
 * says which. */
#define AXRT_GPU_ERR_INDEX (-1)
int axrt_gpu_forward_host(axrt_gpu *g, const void *const *inputs, void *const *outputs);
/* After forwards on device pointers: 1 (and the flag cleared) if an
 * Embedding met an index outside [0, vocab) since the last call, 0 if not,
 * -1 if the flag could not be read.  Synchronises the device. */
int axrt_gpu_index_error(axrt_gpu *g);
/* Device time of forward passes (axc run --bench): the host inputs copied
 * in once, warmup forwards, then runs forwards, each between two events
 * (cuEventRecord/hipEventRecord on the default stream); us[i] gets run i's
 * microseconds, copies excluded.  Returns 0, or non-zero with the reason in
 * axrt_gpu_error. */
int axrt_gpu_time_forward(axrt_gpu *g, const void *const *inputs, long warmup, long runs, double *us);
/* The last error's text (a driver call that failed in forward). */
const char *axrt_gpu_error(const axrt_gpu *g);
void axrt_gpu_free(axrt_gpu *g);

/* Whether a device is there: 0 yes, else a message in err (for axc run). */
int axrt_gpu_probe(axrt_gpu_dialect dialect, char *err, size_t errlen);

/* Offline compilation (axc --emit=ptx|hsaco) with NVRTC or hiprtc, no
 * device needed: ptx (CUDA) or a code object (HIP) for arch into *out
 * (malloc'd, *len bytes).  Returns 0, or 1 with the compiler's log or the
 * reason in err. */
int axrt_gpu_compile(axrt_gpu_dialect dialect, const char *source, const char *arch, char **out,
                     size_t *len, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
