/* count_driver.c — a pass-through CUDA driver for the GPU checks: every
 * call libaxrt_gpu makes goes on to the library named by
 * AXRT_COUNT_NEXT (default libcuda.so.1: the real driver), and the calls
 * that take device memory or load code are counted, so a test can show
 * that a forward allocates nothing (gpu_check.sh, loader.sh with the fake
 * driver).  Load it as AXRT_CUDA_LIB; read the counts with
 * count_driver_counts() through dlopen(path, RTLD_NOLOAD) and dlsym. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct count_driver_calls { long allocs, frees, loads, launches, other; } count_driver_calls;
static count_driver_calls counts;

/* The counts so far (for the test program, through dlsym). */
const count_driver_calls *count_driver_counts(void) { return &counts; }

/* The next library's symbol NAME; a missing one aborts (a test tool). */
static void *next(const char *name)
{
    static void *lib;
    if (!lib) {
        const char *path = getenv("AXRT_COUNT_NEXT");
        lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) { fprintf(stderr, "count_driver: %s\n", dlerror()); abort(); }
    }
    void *f = dlsym(lib, name);
    if (!f) { fprintf(stderr, "count_driver: the driver has no %s\n", name); abort(); }
    return f;
}

/* name forwards to the next library's name, counting in counts.counter */
#define COUNTED(name, counter, params, args)                           \
    int name params                                                     \
    {                                                                   \
        static int (*real_) params;                                     \
        if (!real_) *(void **)&real_ = next(#name);                     \
        counts.counter++;                                               \
        return real_ args;                                              \
    }
#define FORWARD(name, params, args) COUNTED(name, other, params, args)

FORWARD(cuInit, (unsigned a), (a))
FORWARD(cuDeviceGetCount, (int *n), (n))
FORWARD(cuDeviceGetAttribute, (int *v, int attr, int dev), (v, attr, dev))
FORWARD(cuDevicePrimaryCtxRetain, (void **ctx, int dev), (ctx, dev))
FORWARD(cuCtxSetCurrent, (void *ctx), (ctx))
FORWARD(cuMemcpyHtoD_v2, (void *d, const void *s, size_t n), (d, s, n))
FORWARD(cuMemcpyDtoH_v2, (void *d, const void *s, size_t n), (d, s, n))
FORWARD(cuModuleUnload, (void *m), (m))
FORWARD(cuModuleGetFunction, (void **f, void *m, const char *name), (f, m, name))
FORWARD(cuCtxSynchronize, (void), ())
FORWARD(cuEventCreate, (void **e, unsigned flags), (e, flags))
FORWARD(cuEventRecord, (void *e, void *s), (e, s))
FORWARD(cuEventSynchronize, (void *e), (e))
FORWARD(cuEventElapsedTime, (float *ms, void *a, void *b), (ms, a, b))
FORWARD(cuEventDestroy_v2, (void *e), (e))
COUNTED(cuMemAlloc_v2, allocs, (void **p, size_t n), (p, n))
COUNTED(cuMemFree_v2, frees, (void *p), (p))
COUNTED(cuModuleLoadData, loads, (void **m, const void *code), (m, code))
COUNTED(cuLaunchKernel, launches,
        (void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g,
         unsigned s, void *st, void **p, void **x),
        (f, a, b, c, d, e, g, s, st, p, x))
