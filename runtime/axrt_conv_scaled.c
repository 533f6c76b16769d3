/* axrt_conv_scaled.c — a groups=1 conv whose input is first multiplied by
 * one scale per input channel (a squeeze-and-excitation's x .* s feeding
 * its projection):
 *
 *   conv(x .* s, W) = conv(x, W'),  W'[oc][t][c] = W[oc][t][c] * s[c]
 *
 * so instead of a pass over the whole input (pixels * c elements read and
 * written) the packed weight (kh * kw * c * oc elements) is scaled into
 * scratch, image by image, and the ordinary packed conv runs on x as it
 * is.  The packed order (axrt.h, axrt_pack_conv2d_f32) has reduction index
 * k = (ky * kw + kx) * c + ci, so weight k of every panel takes s[k % c].
 * Rounding: each product x * s * w is rounded once at (s * w) instead of
 * at (x * s), the same single rounding moved to the other factor. */
#include <stddef.h>

#include "axrt.h"
#include "axrt_cpu.h"

/* The work the parallel-for hook counts for a streamed element: as
 * axrt_fast.inc's STREAM_COST (a split from some 64 Ki elements). */
#define SCALED_STREAM_COST 16.0

typedef struct scale_job {
    const float *packed, *scale;
    float *out;
    size_t k, c, oc;
} scale_job;

/* One panel's kh * kw * c rows of nr weights times scale[row % c]; a full
 * panel's rows have the constant width AXRT_PANEL, so that the compiler
 * vectorises them (-O2 vectorises only loops of a known trip count). */
static void scale_panel(const float *restrict from, const float *restrict scale, float *restrict to, size_t taps,
                        size_t c, size_t nr)
{
    size_t t, ci, col;
    for (t = 0; t < taps; t++)
        for (ci = 0; ci < c; ci++, from += nr, to += nr) {
            const float s = scale[ci];
            if (nr == AXRT_PANEL)
                for (col = 0; col < AXRT_PANEL; col++)
                    to[col] = from[col] * s;
            else
                for (col = 0; col < nr; col++)
                    to[col] = from[col] * s;
        }
}

/* Panels [begin, end) of the packed weight, scaled into out. */
static void scale_panels(void *ctx, size_t begin, size_t end)
{
    const scale_job *j = (const scale_job *)ctx;
    size_t panel;
    for (panel = begin; panel < end; panel++) {
        const size_t j0 = panel * AXRT_PANEL;
        const size_t nr = j->oc - j0 < AXRT_PANEL ? j->oc - j0 : AXRT_PANEL;
        scale_panel(j->packed + j0 * j->k, j->scale, j->out + j0 * j->k, j->k / j->c, j->c, nr);
    }
}

void axrt_scale_packed_conv2d_f32(const float *packed, const float *scale, float *out,
                                  const axrt_conv2d_params *p)
{
    scale_job j;
    const size_t panels = ((size_t)p->oc + AXRT_PANEL - 1) / AXRT_PANEL;
    j.packed = packed;
    j.scale = scale;
    j.out = out;
    j.c = (size_t)p->c;
    j.k = (size_t)p->kh * (size_t)p->kw * j.c;
    j.oc = (size_t)p->oc;
    axrt_parallel_for(scale_panels, &j, panels, (double)j.k * (double)j.oc * SCALED_STREAM_COST, 0);
}

void axrt_conv2d_scaled_f32(const float *x, const float *packed, const float *scale, size_t scale_stride,
                            const float *bias, const float *residual, axrt_act act, float *y, float *scratch,
                            const axrt_conv2d_params *p)
{
    axrt_conv2d_params one = *p;
    const size_t in_image = (size_t)p->h * (size_t)p->w * (size_t)p->c;
    const size_t out_image = (size_t)p->oh * (size_t)p->ow * (size_t)p->oc;
    int n;
    if (scale_stride == 0) {   /* one scale for every image: one weight, one call */
        axrt_scale_packed_conv2d_f32(packed, scale, scratch, p);
        axrt_conv2d_packed_ep_f32(x, scratch, bias, residual, act, y, p);
        return;
    }
    one.n = 1;
    for (n = 0; n < p->n; n++) {
        axrt_scale_packed_conv2d_f32(packed, scale + (size_t)n * scale_stride, scratch, p);
        axrt_conv2d_packed_ep_f32(x + (size_t)n * in_image, scratch, bias,
                                  residual ? residual + (size_t)n * out_image : NULL, act,
                                  y + (size_t)n * out_image, &one);
    }
}
