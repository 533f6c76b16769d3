/* axrt_optim.c — the optimizers of interface.md §8, one fused loop per
 * parameter tensor (axrt.h axrt_optim_step_*): written once as a template
 * over the element type, used by the generated training step (axc --train)
 * and by `axc train` on the reference interpreter (in double), so the two
 * share their formulas.  Freestanding C99: <math.h> <stddef.h> <stdint.h>. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "axrt.h"

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

#define AXRT_OPTIM_STEP(NAME, T, SQRT)                                                        \
    void NAME(const axrt_optim *h, T *p, const T *g, T *m, T *v, size_t n, int64_t step)      \
    {                                                                                         \
        const T lr = (T)h->lr, wd = (T)h->weight_decay, mu = (T)h->momentum;                  \
        const T b1 = (T)h->beta1, b2 = (T)h->beta2, eps = (T)h->eps;                          \
        const T step_size = (T)(h->lr / one_minus_power(h->beta1, step));                     \
        const T bc2_sqrt = (T)sqrt(one_minus_power(h->beta2, step));                          \
        size_t i;                                                                             \
        for (i = 0; i < n; i++) {                                                             \
            T gi = g[i];                                                                      \
            switch (h->kind) {                                                                \
            case AXRT_OPT_SGD:                                                                \
                gi += wd * p[i];                                                              \
                if (mu != 0) {                                                                \
                    m[i] = step == 1 ? gi : mu * m[i] + gi;                                   \
                    gi = h->nesterov ? gi + mu * m[i] : m[i];                                 \
                }                                                                             \
                p[i] -= lr * gi;                                                              \
                break;                                                                        \
            case AXRT_OPT_ADAM:                                                               \
            case AXRT_OPT_ADAMW:                                                              \
                if (h->kind == AXRT_OPT_ADAMW)                                                \
                    p[i] *= 1 - lr * wd; /* decoupled */                                      \
                else                                                                          \
                    gi += wd * p[i]; /* L2 */                                                 \
                m[i] = b1 * m[i] + (1 - b1) * gi;                                             \
                v[i] = b2 * v[i] + (1 - b2) * gi * gi;                                        \
                p[i] -= step_size * (m[i] / (SQRT(v[i]) / bc2_sqrt + eps));                   \
                break;                                                                        \
            case AXRT_OPT_LION: {                                                             \
                const T c = b1 * m[i] + (1 - b1) * gi;                                        \
                const T u = c > 0 ? (T)1 : c < 0 ? (T)-1 : (T)0;                              \
                p[i] -= lr * (u + wd * p[i]);                                                 \
                m[i] = b2 * m[i] + (1 - b2) * gi;                                             \
                break;                                                                        \
            }                                                                                 \
            }                                                                                 \
        }                                                                                     \
    }

AXRT_OPTIM_STEP(axrt_optim_step_f32, float, sqrtf)
AXRT_OPTIM_STEP(axrt_optim_step_f64, double, sqrt)
