/* compare.c — one model through the C target (MODEL_model, libaxrt) and the
 * cuda target's kernels on the CPU emulator (MODEL_gpu_model, emu_rt.cpp),
 * on the same deterministic inputs; prints the largest relative error and
 * exits 1 above the tolerance (argv[1], default 1e-4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "axrt_gpu.h"
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
extern const axrt_model CAT(MODEL, _model);
extern const axrt_gpu_model CAT(MODEL, _gpu_model);

static size_t count(const axrt_tensor_info *t)
{
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->dims[d];
    return n;
}

int main(int argc, char **argv)
{
    const axrt_model *c = &CAT(MODEL, _model);
    const axrt_gpu_model *gm = &CAT(MODEL, _gpu_model);
    const double tol = argc > 1 ? atof(argv[1]) : 1e-4;
    void *in[16], *ref[16], *got[16];
    unsigned seed = 12345;
    for (int i = 0; i < c->n_inputs; i++) {
        float *x = malloc(count(&c->inputs[i]) * sizeof *x);
        for (size_t k = 0; k < count(&c->inputs[i]); k++) {
            seed = seed * 1103515245u + 12345u;
            x[k] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        }
        in[i] = x;
    }
    for (int i = 0; i < c->n_outputs; i++) {
        ref[i] = calloc(count(&c->outputs[i]), sizeof(float));
        got[i] = calloc(count(&c->outputs[i]), sizeof(float));
    }
    char err[512];
    if (c->run((const void *const *)in, ref, NULL)) { puts("C target failed"); return 2; }
    axrt_gpu *g = axrt_gpu_init(gm, err, sizeof err);
    if (!g) { printf("init: %s\n", err); return 2; }
    if (axrt_gpu_forward_host(g, (const void *const *)in, got)) { puts("forward failed"); return 2; }
    double worst = 0;
    for (int i = 0; i < c->n_outputs; i++)
        for (size_t k = 0; k < count(&c->outputs[i]); k++) {
            const double a = ((float *)ref[i])[k], b = ((float *)got[i])[k];
            const double e = (a != a && b != b) ? 0 : fabs(a - b) / (fabs(a) > 1 ? fabs(a) : 1);
            if (!(e <= worst)) worst = e;
        }
    printf("max relative error %g\n", worst);
    axrt_gpu_free(g);
    return worst <= tol ? 0 : 1;
}
