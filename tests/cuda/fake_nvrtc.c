/* fake_nvrtc.c — a libnvrtc whose compile fails with a log, for the
 * loader's "NVRTC failure" message test; with -DFAKE_NVRTC_OK, one whose
 * compile succeeds with a fake image (kernel_cache.sh): 4 KiB starting
 * "FAKECUBIN good", or with $FAKE_NVRTC_IMAGE's text instead of "good". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static const char log_text[] = "axc_kernels(1): error: fake NVRTC log for the test";
int nvrtcCreateProgram(void **p, const char *s, const char *n, int k, const char *const *h, const char *const *i)
{ (void)s, (void)n, (void)k, (void)h, (void)i; *p = (void *)1; return 0; }
#ifdef FAKE_NVRTC_OK
int nvrtcCompileProgram(void *p, int n, const char *const *o) { (void)p, (void)n, (void)o; return 0; }
#else
int nvrtcCompileProgram(void *p, int n, const char *const *o) { (void)p, (void)n, (void)o; return 6; }
#endif
int nvrtcGetProgramLogSize(void *p, size_t *n) { (void)p; *n = sizeof log_text; return 0; }
int nvrtcGetProgramLog(void *p, char *l) { (void)p; memcpy(l, log_text, sizeof log_text); return 0; }
#ifdef FAKE_NVRTC_OK
#define FAKE_IMAGE_BYTES 4096
int nvrtcGetCUBINSize(void *p, size_t *n) { (void)p; *n = FAKE_IMAGE_BYTES; return 0; }
int nvrtcGetCUBIN(void *p, char *c)
{
    const char *word = getenv("FAKE_NVRTC_IMAGE");
    (void)p;
    memset(c, 'k', FAKE_IMAGE_BYTES);
    snprintf(c, FAKE_IMAGE_BYTES, "FAKECUBIN %s", word ? word : "good");
    return 0;
}
#else
int nvrtcGetCUBINSize(void *p, size_t *n) { (void)p; *n = 0; return 0; }
int nvrtcGetCUBIN(void *p, char *c) { (void)p, (void)c; return 0; }
#endif
int nvrtcGetPTXSize(void *p, size_t *n) { (void)p; *n = 0; return 0; }
int nvrtcGetPTX(void *p, char *c) { (void)p, (void)c; return 0; }
int nvrtcDestroyProgram(void **p) { *p = 0; return 0; }
const char *nvrtcGetErrorString(int r) { return r == 6 ? "NVRTC_ERROR_COMPILATION" : "NVRTC_SUCCESS"; }
