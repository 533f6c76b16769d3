/* rtc_main.c — the cuda suite's batch compile (run.sh rtc_batch): one
 * source file through libaxrt_gpu's axrt_gpu_compile, the call `axc
 * --emit=ptx|hsaco` and the runtime make, so that the kernels of many op
 * cases (names prefixed by their model, one prelude) pay NVRTC's or
 * hiprtc's start-up once.
 * Usage: rtc cuda|hip ARCH IN OUT; exit 1 with the compiler's log on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axrt_gpu.h"

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) s = realloc(s, cap *= 2);
    }
    fclose(f);
    if (s) s[n] = 0;
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 5) { fprintf(stderr, "usage: rtc cuda|hip ARCH IN OUT\n"); return 2; }
    char *src = read_all(argv[3]), *code = NULL, err[1 << 16];
    size_t len = 0;
    if (!src) { fprintf(stderr, "rtc: cannot read %s\n", argv[3]); return 2; }
    const axrt_gpu_dialect dialect = strcmp(argv[1], "hip") ? AXRT_GPU_CUDA : AXRT_GPU_HIP;
    if (axrt_gpu_compile(dialect, src, argv[2], &code, &len, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    FILE *o = fopen(argv[4], "wb");
    if (!o || fwrite(code, 1, len, o) != len || fclose(o)) { fprintf(stderr, "rtc: cannot write %s\n", argv[4]); return 2; }
    return 0;
}
