/* compare.c — one model through the C target (MODEL_model, libaxrt) and the
 * cuda target's kernels on the CPU emulator (MODEL_gpu_model, emu_rt.cpp),
 * on the same deterministic inputs; prints the largest relative error and
 * exits 1 above the tolerance.
 * Usage: cmp [TOL [NAME=LO,HI[,SPECIAL...]]...]  (TOL default 1e-4)
 * The error of an element is |c - gpu| / max(1, |c|); with TOL written
 * scale:TOL (half models), / max(1, max |c| over its output): two correct
 * half implementations may round an intermediate differently, which an
 * output's near-cancelling sums do not scale down (tests/half/run.py). 
 * Input NAME is uniform in [LO, HI] (integers: LO..HI inclusive; default
 * -1, 1 and 0..1), its first elements the SPECIALs (numbers, nan, inf,
 * -inf), as the op corpus's `# >>> input` lines; the other inputs' elements
 * are in [-1, 1).  Each input is written in its own dtype.  Where the C
 * target refuses the inputs (AXRT_ERR_INDEX: an Embedding index outside
 * [0, vocab)), the GPU forward must refuse them too (AXRT_GPU_ERR_INDEX). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "axrt_gpu.h"
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
extern const axrt_model CAT(MODEL, _model);
extern const axrt_gpu_model CAT(MODEL, _gpu_model);
extern const axrt_model CAT(gpu_, CAT(MODEL, _model)); /* the GPU file's generic descriptor */

static size_t count(const axrt_tensor_info *t)
{
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->dims[d];
    return n;
}

typedef struct spec { double lo, hi, specials[16]; int nspecials; } spec;

/* The NAME=... argument for input name, or the default range. */
static spec spec_of(const char *name, axrt_dtype dtype, int argc, char **argv)
{
    spec s = {-1, 1, {0}, 0};
    if (dtype == AXRT_I8 || dtype == AXRT_I32 || dtype == AXRT_I64) s.lo = 0;
    for (int a = 2; a < argc; a++) {
        const size_t len = strlen(name);
        if (strncmp(argv[a], name, len) != 0 || argv[a][len] != '=') continue;
        char *p = argv[a] + len + 1;
        s.lo = strtod(p, &p);
        s.hi = strtod(p + (*p == ','), &p);
        while (*p == ',' && s.nspecials < 16) s.specials[s.nspecials++] = strtod(p + 1, &p);
    }
    return s;
}

/* Element k of an output: Float32, or argmax's Int64 indices. */
static double output_at(const axrt_tensor_info *t, const void *data, size_t k)
{
    return t->dtype == AXRT_I64 ? (double)((const int64_t *)data)[k] : ((const float *)data)[k];
}

/* n values of input t (its dtype) as the spec says. */
static void *make_input(const axrt_tensor_info *t, const spec *s, unsigned *seed)
{
    const size_t n = count(t), size = t->dtype == AXRT_F64 || t->dtype == AXRT_I64 ? 8 : 4;
    unsigned char *data = calloc(n ? n : 1, size);
    float *as_float = malloc((n ? n : 1) * sizeof *as_float);
    const int integer = t->dtype == AXRT_I8 || t->dtype == AXRT_I32 || t->dtype == AXRT_I64;
    for (size_t k = 0; k < n; k++) {
        *seed = *seed * 1103515245u + 12345u;
        const double u = (double)((*seed >> 8) & 0xffff) / 65536.0;
        double v = integer ? s->lo + floor(u * (s->hi - s->lo + 1)) : s->lo + u * (s->hi - s->lo);
        if (k < (size_t)s->nspecials) v = s->specials[k];
        as_float[k] = (float)v;
        switch (t->dtype) {
        case AXRT_F64: ((double *)data)[k] = v; break;
        case AXRT_I8: ((int8_t *)data)[k] = (int8_t)v; break;
        case AXRT_I32: ((int32_t *)data)[k] = (int32_t)v; break;
        case AXRT_I64: ((int64_t *)data)[k] = (int64_t)v; break;
        default: ((float *)data)[k] = (float)v; break;
        }
    }
    if (t->dtype == AXRT_F16) axrt_cast_f16(as_float, AXRT_F32, (uint16_t *)data, n);
    if (t->dtype == AXRT_BF16) axrt_cast_bf16(as_float, AXRT_F32, (uint16_t *)data, n);
    free(as_float);
    return data;
}

int main(int argc, char **argv)
{
    const axrt_model *c = &CAT(MODEL, _model);
    const axrt_gpu_model *gm = &CAT(MODEL, _gpu_model);
    const int by_scale = argc > 1 && strncmp(argv[1], "scale:", 6) == 0;
    const double tol = argc > 1 ? atof(argv[1] + (by_scale ? 6 : 0)) : 1e-4;
    void *in[16], *ref[16], *got[16];
    unsigned seed = 12345;
    for (int i = 0; i < c->n_inputs; i++) {
        const spec s = spec_of(c->inputs[i].name, c->inputs[i].dtype, argc, argv);
        in[i] = make_input(&c->inputs[i], &s, &seed);
    }
    for (int i = 0; i < c->n_outputs; i++) {
        ref[i] = calloc(count(&c->outputs[i]), sizeof(int64_t));
        got[i] = calloc(count(&c->outputs[i]), sizeof(int64_t));
    }
    char err[512];
    const int c_rc = c->run((const void *const *)in, ref, NULL);
    if (c_rc && c_rc != AXRT_ERR_INDEX) { puts("C target failed"); return 2; }
    axrt_gpu *g = axrt_gpu_init(gm, err, sizeof err);
    if (!g) { printf("init: %s\n", err); return 2; }
    const int gpu_rc = axrt_gpu_forward_host(g, (const void *const *)in, got);
    if (c_rc) {
        const int generic_rc = CAT(gpu_, CAT(MODEL, _model)).run((const void *const *)in, got, NULL);
        printf("both refuse the indices: C %d, GPU %d, its descriptor %d\n", c_rc, gpu_rc, generic_rc);
        return gpu_rc == AXRT_GPU_ERR_INDEX && generic_rc == AXRT_ERR_INDEX ? 0 : 1;
    }
    if (gpu_rc) { printf("forward failed (%d)\n", gpu_rc); return 2; }
    double worst = 0;
    for (int i = 0; i < c->n_outputs; i++) {
        double scale = 1;
        for (size_t k = 0; by_scale && k < count(&c->outputs[i]); k++) {
            const double a = fabs(output_at(&c->outputs[i], ref[i], k));
            if (a > scale && a <= 1e300) scale = a;
        }
        for (size_t k = 0; k < count(&c->outputs[i]); k++) {
            const double a = output_at(&c->outputs[i], ref[i], k), b = output_at(&c->outputs[i], got[i], k);
            const double at = by_scale ? scale : fabs(a) > 1 ? fabs(a) : 1;
            double e = fabs(a - b) / at;
            if (a == b || (a != a && b != b)) e = 0;                 /* infinities, NaN on both */
            else if (a != a || b != b || isinf(a) || isinf(b)) e = INFINITY; /* on one side only */
            if (e > worst) worst = e;
        }
    }
    printf("max relative error %g\n", worst);
    axrt_gpu_free(g);
    return worst <= tol ? 0 : 1;
}
