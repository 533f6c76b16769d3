/* axrt_adam.c — Adam's (and AdamW's) update loop (axrt_cpu.h
 * axrt_adam_fn), written once over the type: the portable kernel table's
 * in float (axrt_fast.inc; the instruction-set tables have their own) and
 * `axc train`'s in double (axrt_optim.c).  A leaf: it calls no kernel and
 * no table, so that the table names it and the optimizers call it, never
 * the other way (docs/internals.md#layers).  Freestanding C99: <math.h>
 * <stddef.h>. */
#include <math.h>
#include <stddef.h>

#include "axrt.h"
#include "axrt_cpu.h"

/* The loops vectorise with the vectoriser's ordinary cost model (-O2's is
 * very cheap) and when sqrt need not set errno, which the project's build
 * asks for this file (-fno-math-errno: the square roots are of non-negative
 * moments, so it never would). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#define AXRT_ADAM_LOOP(NAME, T, COEF, SQRT)                                                   \
    void NAME(const COEF *c, T *p, const T *g, T *m, T *v, size_t n)                          \
    {                                                                                         \
        size_t i;                                                                             \
        for (i = 0; i < n; i++) {                                                             \
            const T gi = g[i] + c->l2 * p[i]; /* adam: L2 */                                  \
            p[i] *= c->decay;                                                                 \
            m[i] = c->b1 * m[i] + c->one_minus_b1 * gi;                                       \
            v[i] = c->b2 * v[i] + c->one_minus_b2 * gi * gi;                                  \
            p[i] -= c->step_size * (m[i] / (SQRT(v[i]) * c->inv_bc2_sqrt + c->eps));          \
        }                                                                                     \
    }

AXRT_ADAM_LOOP(axrt_adam_f32_portable, float, axrt_adam_coef, sqrtf)
AXRT_ADAM_LOOP(axrt_adam_f64, double, axrt_adam_coef_f64, sqrt)
