/* alloc_main.c — a model's forward through libaxrt_gpu, with the driver
 * behind count_driver.c (AXRT_CUDA_LIB): after one warm-up forward, 10 more
 * must allocate no device memory and load no code.  Prints the counts;
 * exit 0 when none, 1 when a forward allocated, 2 when the start failed. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "axrt_gpu.h"
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
extern const axrt_gpu_model CAT(MODEL, _gpu_model);
extern const axrt_model CAT(gpu_, CAT(MODEL, _model)); /* the GPU file's generic descriptor */

typedef struct count_driver_calls { long allocs, frees, loads, launches, other; } count_driver_calls;

static size_t bytes_of(const axrt_tensor_info *t)
{
    size_t n = t->dtype == AXRT_F64 || t->dtype == AXRT_I64 ? 8 : 4;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->dims[d];
    return n;
}

int main(void)
{
    const axrt_model *desc = &CAT(gpu_, CAT(MODEL, _model));
    void *in[16], *out[16];
    for (int i = 0; i < desc->n_inputs; i++) in[i] = calloc(1, bytes_of(&desc->inputs[i]));
    for (int i = 0; i < desc->n_outputs; i++) out[i] = calloc(1, bytes_of(&desc->outputs[i]));
    char err[512];
    axrt_gpu *g = axrt_gpu_init(&CAT(MODEL, _gpu_model), err, sizeof err);
    if (!g) { printf("init: %s\n", err); return 2; }
    void *lib = dlopen(getenv("AXRT_CUDA_LIB"), RTLD_NOW | RTLD_NOLOAD);
    const count_driver_calls *(*counts)(void) = NULL;
    if (lib) *(void **)&counts = dlsym(lib, "count_driver_counts");
    if (!counts) { puts("AXRT_CUDA_LIB is not count_driver.c"); return 2; }
    if (axrt_gpu_forward_host(g, (const void *const *)in, out)) { printf("forward: %s\n", axrt_gpu_error(g)); return 2; }
    const count_driver_calls before = *counts();
    for (int r = 0; r < 10; r++)
        if (axrt_gpu_forward_host(g, (const void *const *)in, out)) { printf("forward: %s\n", axrt_gpu_error(g)); return 2; }
    const count_driver_calls after = *counts();
    printf("start and first forward: %ld allocations, %ld modules loaded; 10 forwards: %ld allocations, "
           "%ld frees, %ld modules loaded, %ld launches\n", before.allocs, before.loads,
           after.allocs - before.allocs, after.frees - before.frees, after.loads - before.loads,
           after.launches - before.launches);
    axrt_gpu_free(g);
    return after.allocs == before.allocs && after.loads == before.loads && after.frees == before.frees ? 0 : 1;
}
