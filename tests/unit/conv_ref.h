/* conv_ref.h — conv2d in double over NHWC (weight [oc, c, kh, kw], any
 * stride and padding; groups: weight [oc, c / groups, kh, kw], 0 taken as 1),
 * then bias, residual and activation: the reference of the unit tests that
 * check the packed, grouped and Winograd kernels. */
#ifndef AXC_TEST_CONV_REF_H
#define AXC_TEST_CONV_REF_H
#include "act_ref.h"

/* bias and residual may be NULL. */
static void conv_ref(const float *x, const float *w, const float *bias, const float *residual, axrt_act act,
                     double *y, const axrt_conv2d_params *p)
{
    const int groups = p->groups > 1 ? p->groups : 1, cg = p->c / groups, og = p->oc / groups;
    for (int n = 0; n < p->n; n++)
        for (int oy = 0; oy < p->oh; oy++)
            for (int ox = 0; ox < p->ow; ox++)
                for (int o = 0; o < p->oc; o++) {
                    const size_t at = (((size_t)n * p->oh + oy) * p->ow + ox) * p->oc + o;
                    double acc = bias ? bias[o] : 0;
                    for (int ky = 0; ky < p->kh; ky++)
                        for (int kx = 0; kx < p->kw; kx++) {
                            const int iy = oy * p->stride_h - p->pad_top + ky, ix = ox * p->stride_w - p->pad_left + kx;
                            if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) continue;
                            for (int c = 0; c < cg; c++)
                                acc += (double)x[(((size_t)n * p->h + iy) * p->w + ix) * p->c + o / og * cg + c] *
                                       w[(((size_t)o * cg + c) * p->kh + ky) * p->kw + kx];
                        }
                    y[at] = act_ref(acc + (residual ? residual[at] : 0), act);
                }
}
#endif
