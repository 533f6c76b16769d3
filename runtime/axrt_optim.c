/* axrt_optim.c — the optimizers of docs/training.md, one fused loop per
 * parameter tensor (axrt.h axrt_optim_step_*): written once as a template
 * over the element type, used by the generated training step (axc --train)
 * and by `axc train` on the reference interpreter (in double), so the two
 * share their formulas.  Float32 Adam goes through the kernel table in use
 * (axrt_cpu.h), double Adam to axrt_adam.c's loop.  Freestanding C99:
 * <math.h> <stddef.h> <stdint.h>. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "axrt.h"
#include "axrt_cpu.h"

/* The update loops vectorise with the vectoriser's ordinary cost model
 * (-O2's is very cheap).  Adam's loop itself is axrt_adam.c's. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* 1 - beta^step in double, by repeated squaring (no pow: exact for small
 * steps, and nothing beyond sqrt from libm on a microcontroller). */
static double one_minus_power(double beta, int64_t step)
{
    double result = 1, base = beta;
    for (int64_t e = step; e > 0; e >>= 1) {
        if (e & 1)
            result *= base;
        base *= base;
    }
    return 1 - result;
}

/* Adam's (AdamW's) coefficients for the step, in T: each computed in double
 * and rounded once, as torch.optim computes them in Python.  (1 - b2 taken
 * in float from b2 = 0.999f is 0.00099998713, 1.3e-5 below 0.001: every
 * second moment, and so every Float32 step, came out 6.4e-6 too large, a
 * bias that accumulated over the steps; PyTorch's Float32 is off by one
 * rounding of 0.001.) */
#define AXRT_ADAM_COEF(NAME, T, COEF)                                                         \
    static COEF NAME(const axrt_optim *h, int64_t step)                                       \
    {                                                                                         \
        const int adamw = h->kind == AXRT_OPT_ADAMW;                                          \
        const COEF c = {adamw ? (T)(1 - h->lr * h->weight_decay) : (T)1, /* decoupled */     \
                        adamw ? (T)0 : (T)h->weight_decay, (T)h->beta1, (T)h->beta2,          \
                        (T)(1 - h->beta1), (T)(1 - h->beta2),                                 \
                        (T)(h->lr / one_minus_power(h->beta1, step)),                         \
                        (T)(1 / sqrt(one_minus_power(h->beta2, step))), (T)h->eps};           \
        return c;                                                                             \
    }

AXRT_ADAM_COEF(adam_coef_f32_of, float, axrt_adam_coef)
AXRT_ADAM_COEF(adam_coef_f64_of, double, axrt_adam_coef_f64)

/* float: through the kernel table in use (vectorised where the CPU can). */
static void adam_f32_dispatch(const axrt_adam_coef *c, float *p, const float *g, float *m, float *v,
                              size_t n)
{
#ifdef AXRT_X86_SIMD
    axrt_cpu_in_use()->adam(c, p, g, m, v, n);
#else /* (the portable table names no adam there: firmware that never trains links none) */
    axrt_adam_f32_portable(c, p, g, m, v, n);
#endif
}

/* One loop per optimizer (no branch on the kind inside: the loops vectorise). */
#define AXRT_OPTIM_STEP(NAME, T, ADAM_COEF, COEF_OF, ADAM)                                    \
    void NAME(const axrt_optim *h, T *p, const T *g, T *m, T *v, size_t n, int64_t step)      \
    {                                                                                         \
        const T lr = (T)h->lr, wd = (T)h->weight_decay, mu = (T)h->momentum;                  \
        const T b1 = (T)h->beta1, b2 = (T)h->beta2;                                           \
        const T one_minus_b1 = (T)(1 - h->beta1), one_minus_b2 = (T)(1 - h->beta2);           \
        const T first = step == 1 ? (T)0 : mu;                                                \
        const T g_part = h->nesterov ? (T)1 : (T)0, m_part = h->nesterov ? mu : (T)1;         \
        size_t i;                                                                             \
        switch (h->kind) {                                                                    \
        case AXRT_OPT_SGD:                                                                    \
            if (mu == 0) {                                                                    \
                for (i = 0; i < n; i++) p[i] -= lr * (g[i] + wd * p[i]);                      \
                break;                                                                        \
            }                                                                                 \
            for (i = 0; i < n; i++) { /* the buffer is g at step 1 */                         \
                const T gi = g[i] + wd * p[i];                                                \
                m[i] = first * m[i] + gi;                                                     \
                p[i] -= lr * (g_part * gi + m_part * m[i]); /* Nesterov: g + mu m, else m */  \
            }                                                                                 \
            break;                                                                            \
        case AXRT_OPT_ADAM:                                                                   \
        case AXRT_OPT_ADAMW: {                                                                \
            const ADAM_COEF c = COEF_OF(h, step);                                             \
            ADAM(&c, p, g, m, v, n);                                                          \
            break;                                                                            \
        }                                                                                     \
        case AXRT_OPT_LION:                                                                   \
            for (i = 0; i < n; i++) {                                                         \
                const T c = b1 * m[i] + one_minus_b1 * g[i];                                  \
                const T u = c > 0 ? (T)1 : c < 0 ? (T)-1 : (T)0;                              \
                p[i] -= lr * (u + wd * p[i]);                                                 \
                m[i] = b2 * m[i] + one_minus_b2 * g[i];                                       \
            }                                                                                 \
            break;                                                                            \
        }                                                                                     \
    }

AXRT_OPTIM_STEP(axrt_optim_step_f32, float, axrt_adam_coef, adam_coef_f32_of, adam_f32_dispatch)
AXRT_OPTIM_STEP(axrt_optim_step_f64, double, axrt_adam_coef_f64, adam_coef_f64_of, axrt_adam_f64)

/* Rows of the gradient a fused step computes before updating them: about
 * this many bytes, so that they are updated while still in L1. */
#define GRAD_BLOCK_BYTES 16384

void axrt_matmul_optim_f32(const axrt_optim *h, const float *a, const float *b, float *g, size_t m,
                           size_t k, size_t n, float *p, float *mom, float *v, int64_t step)
{
    const size_t tile = axrt_cpu_in_use()->tile_rows, row_bytes = n * sizeof(float);
    const size_t tiles = row_bytes ? GRAD_BLOCK_BYTES / (tile * row_bytes) : 1;
    const size_t rows = tile * (tiles ? tiles : 1);
    size_t r0;
    if ((h->kind == AXRT_OPT_ADAM || h->kind == AXRT_OPT_ADAMW) && axrt_cpu_in_use()->matmul_adam) {
        const axrt_adam_coef c = adam_coef_f32_of(h, step);
        if (axrt_cpu_in_use()->matmul_adam(&c, a, b, m, k, n, p, mom, v))
            return;
    }
    for (r0 = 0; r0 < m; r0 += rows) {
        const size_t mr = m - r0 < rows ? m - r0 : rows, at = r0 * n;
        axrt_matmul_f32(a + r0 * k, NULL, b, NULL, g + at, NULL, 0, mr, k, n);
        axrt_optim_step_f32(h, p + at, g + at, mom ? mom + at : NULL, v ? v + at : NULL, mr * n, step);
    }
}

/* ---- mixed precision (docs/training.md#mixed-precision) ---- */

#define AMP_CHUNK 256

void axrt_amp_step(const axrt_optim *h, axrt_dtype half, uint16_t *p, float *master, const uint16_t *g, float *m,
                   float *v, size_t n, int64_t step, float inv_scale)
{
    float grad[AMP_CHUNK];
    for (size_t at = 0; at < n; at += AMP_CHUNK) {
        const size_t k = n - at < AMP_CHUNK ? n - at : AMP_CHUNK;
        axrt_cast_f32(g + at, half, grad, k);
        for (size_t i = 0; i < k && inv_scale != 1.0f; i++)
            grad[i] *= inv_scale;
        axrt_optim_step_f32(h, master + at, grad, m ? m + at : NULL, v ? v + at : NULL, k, step);
        if (half == AXRT_F16)
            axrt_cast_f16(master + at, AXRT_F32, p + at, k);
        else
            axrt_cast_bf16(master + at, AXRT_F32, p + at, k);
    }
}

int axrt_half_all_finite(axrt_dtype half, const uint16_t *x, size_t n)
{
    const uint16_t exponent = half == AXRT_F16 ? 0x7c00u : 0x7f80u;   /* all ones: inf or NaN */
    for (size_t i = 0; i < n; i++)
        if ((x[i] & exponent) == exponent)
            return 0;
    return 1;
}
