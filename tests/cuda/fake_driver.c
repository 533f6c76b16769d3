/* fake_driver.c — a stand-in libcuda.so.1 for the loader's tests (never a
 * driver): FAKE_MODE 1 no device (cuInit: CUDA_ERROR_NO_DEVICE), 2 the
 * toolkit's stub (CUDA_ERROR_STUB_LIBRARY), 3 one sm_80 device that
 * accepts every call (memory is host memory; launches do nothing; every
 * forward between two events takes 0.25 ms; -DFAKE_NO_EVENTS: no event calls;
 * -DFAKE_CHECK_IMAGE: cuModuleLoadData refuses, as a driver does a damaged
 * image (200, CUDA_ERROR_INVALID_IMAGE), any but fake_nvrtc's good one). */
#include <stdlib.h>
#include <string.h>
#ifndef FAKE_MODE
#define FAKE_MODE 3
#endif
int cuInit(unsigned f) { (void)f; return FAKE_MODE == 1 ? 100 : FAKE_MODE == 2 ? 34 : 0; }
int cuDeviceGetCount(int *n) { *n = FAKE_MODE == 3; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int dev) { (void)dev; *v = attr == 75 ? 8 : 0; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; *ctx = (void *)1; return 0; }
int cuCtxSetCurrent(void *ctx) { (void)ctx; return 0; }
int cuMemAlloc_v2(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
int cuMemFree_v2(void *p) { free(p); return 0; }
int cuMemcpyHtoD_v2(void *d, const void *s, size_t n) { memcpy(d, s, n); return 0; }
int cuMemcpyDtoH_v2(void *d, const void *s, size_t n) { memcpy(d, s, n); return 0; }
#ifdef FAKE_CHECK_IMAGE
int cuModuleLoadData(void **m, const void *code)
{
    static const char good[] = "FAKECUBIN good";
    *m = (void *)code;
    return !code ? 1 : memcmp(code, good, sizeof good) ? 200 : 0;
}
#else
int cuModuleLoadData(void **m, const void *code) { *m = (void *)code; return code ? 0 : 1; }
#endif
int cuModuleUnload(void *m) { (void)m; return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) { (void)m; *f = (void *)name; return 0; }
int cuLaunchKernel(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g,
                   unsigned s, void *st, void **p, void **x)
{ (void)f, (void)a, (void)b, (void)c, (void)d, (void)e, (void)g, (void)s, (void)st, (void)p, (void)x; return 0; }
int cuCtxSynchronize(void) { return 0; }
#ifndef FAKE_NO_EVENTS /* events: every forward takes 0.25 ms */
int cuEventCreate(void **e, unsigned f) { (void)f; *e = malloc(1); return *e ? 0 : 2; }
int cuEventRecord(void *e, void *s) { (void)e, (void)s; return 0; }
int cuEventSynchronize(void *e) { (void)e; return 0; }
int cuEventElapsedTime(float *ms, void *a, void *b) { (void)a, (void)b; *ms = 0.25f; return 0; }
int cuEventDestroy_v2(void *e) { free(e); return 0; }
#endif
