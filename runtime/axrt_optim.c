/* axrt_optim.c — the optimizers of interface.md §8, one fused loop per
 * parameter tensor (axrt.h axrt_optim_step_*): written once as a template
 * over the element type, used by the generated training step (axc --train)
 * and by `axc train` on the reference interpreter (in double), so the two
 * share their formulas.  Freestanding C99: <math.h> <stddef.h> <stdint.h>. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "axrt.h"

/* The update loops vectorise with the vectoriser's ordinary cost model
 * (-O2's is very cheap); Adam's also needs sqrt not to set errno, which the
 * project's build asks for this file (-fno-math-errno: the square roots are
 * of non-negative moments, so it never would). */
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

/* One loop per optimizer (no branch on the kind inside: the loops vectorise). */
#define AXRT_OPTIM_STEP(NAME, T, SQRT)                                                        \
    void NAME(const axrt_optim *h, T *p, const T *g, T *m, T *v, size_t n, int64_t step)      \
    {                                                                                         \
        const T lr = (T)h->lr, wd = (T)h->weight_decay, mu = (T)h->momentum;                  \
        const T b1 = (T)h->beta1, b2 = (T)h->beta2, eps = (T)h->eps;                          \
        const T step_size = (T)(h->lr / one_minus_power(h->beta1, step));                     \
        const T bc2_sqrt = (T)sqrt(one_minus_power(h->beta2, step));                          \
        const T decay = h->kind == AXRT_OPT_ADAMW ? 1 - lr * wd : (T)1; /* decoupled */       \
        const T l2 = h->kind == AXRT_OPT_ADAMW ? (T)0 : wd;                                   \
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
        case AXRT_OPT_ADAMW:                                                                  \
            for (i = 0; i < n; i++) {                                                         \
                const T gi = g[i] + l2 * p[i]; /* adam: L2 */                                 \
                p[i] *= decay;                                                                \
                m[i] = b1 * m[i] + (1 - b1) * gi;                                             \
                v[i] = b2 * v[i] + (1 - b2) * gi * gi;                                        \
                p[i] -= step_size * (m[i] / (SQRT(v[i]) / bc2_sqrt + eps));                   \
            }                                                                                 \
            break;                                                                            \
        case AXRT_OPT_LION:                                                                   \
            for (i = 0; i < n; i++) {                                                         \
                const T c = b1 * m[i] + (1 - b1) * g[i];                                      \
                const T u = c > 0 ? (T)1 : c < 0 ? (T)-1 : (T)0;                              \
                p[i] -= lr * (u + wd * p[i]);                                                 \
                m[i] = b2 * m[i] + (1 - b2) * g[i];                                           \
            }                                                                                 \
            break;                                                                            \
        }                                                                                     \
    }

AXRT_OPTIM_STEP(axrt_optim_step_f32, float, sqrtf)
AXRT_OPTIM_STEP(axrt_optim_step_f64, double, sqrt)
