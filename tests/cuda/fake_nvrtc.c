/* fake_nvrtc.c — a libnvrtc whose compile fails with a log, for the
 * loader's "NVRTC failure" message test. */
#include <string.h>
static const char log_text[] = "axc_kernels(1): error: fake NVRTC log for the test";
int nvrtcCreateProgram(void **p, const char *s, const char *n, int k, const char *const *h, const char *const *i)
{ (void)s, (void)n, (void)k, (void)h, (void)i; *p = (void *)1; return 0; }
int nvrtcCompileProgram(void *p, int n, const char *const *o) { (void)p, (void)n, (void)o; return 6; }
int nvrtcGetProgramLogSize(void *p, size_t *n) { (void)p; *n = sizeof log_text; return 0; }
int nvrtcGetProgramLog(void *p, char *l) { (void)p; memcpy(l, log_text, sizeof log_text); return 0; }
int nvrtcGetCUBINSize(void *p, size_t *n) { (void)p; *n = 0; return 0; }
int nvrtcGetCUBIN(void *p, char *c) { (void)p, (void)c; return 0; }
int nvrtcGetPTXSize(void *p, size_t *n) { (void)p; *n = 0; return 0; }
int nvrtcGetPTX(void *p, char *c) { (void)p, (void)c; return 0; }
int nvrtcDestroyProgram(void **p) { *p = 0; return 0; }
const char *nvrtcGetErrorString(int r) { return r == 6 ? "NVRTC_ERROR_COMPILATION" : "NVRTC_SUCCESS"; }
