/* axrt_dwconv.c — depthwise convolution computed over its own input
 * (axrt.h: axrt_dwconv_inplace_*), so a network's widest tensor (MobileNet's
 * expanded channels) needs one arena buffer instead of two.
 *
 * Contract: groups == c == oc, stride 1 and an output the size of the input
 * (oh == h, ow == w), which makes output row oy occupy exactly the bytes of
 * input row oy.  Rows are produced in order; output row oy reads input rows
 * oy - pad_top + ky * dilation_h.  Those above oy are already overwritten and
 * row oy is overwritten by this very row, so before computing row oy its
 * input is copied into a ring of pad_top + 1 rows (slot r mod (pad_top + 1)),
 * which holds rows oy - pad_top .. oy, every overwritten row still needed;
 * rows below oy are read where they lie, untouched.
 * Weights are either PyTorch's [c, 1, kh, kw] or axrt_pack_depthwise_f32's
 * [kh * kw, c] (packed != 0); float32 rows on packed weights are the kernel
 * table's (axrt_cpu.h: vectorised where the CPU allows), the rest the plain
 * loops here.  Freestanding C99: <stddef.h> <string.h> <math.h>. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "axrt.h"
#include "axrt_cpu.h"
#include "axrt_unary.h"

size_t axrt_dwconv_inplace_ring_elems(const axrt_conv2d_params *p)
{
    return ((size_t)p->pad_top + 1) * (size_t)p->w * (size_t)p->c;
}

/* Output row y by the kernel table, where it applies (float32, packed). */
static int dwconv_table_row_f32(const float *const *rows, const float *w, int packed,
                                const float *bias, axrt_act act, float *y,
                                const axrt_conv2d_params *p)
{
    if (packed)
        axrt_depthwise_row_f32(rows, w, bias, NULL, act, y, p);
    return packed;
}

static int dwconv_table_row_f64(const double *const *rows, const double *w, int packed,
                                const double *bias, axrt_act act, double *y,
                                const axrt_conv2d_params *p)
{
    (void)rows, (void)w, (void)packed, (void)bias, (void)act, (void)y, (void)p;
    return 0;
}

/* Defines the kernel for element type T with suffix S; ERF and EXP are libm's
 * erf and exp for T. */
#define DWCONV_INPLACE(T, S, ERF, EXP)                                                         \
    static T dwconv_act_##S(T v, axrt_act act)                                                 \
    {                                                                                          \
        switch (act) {                                                                         \
        case AXRT_ACT_RELU: return v < (T)0 ? (T)0 : v;                                        \
        case AXRT_ACT_RELU6: return v < (T)0 ? (T)0 : (v > (T)6 ? (T)6 : v);                   \
        case AXRT_ACT_GELU: return (T)0.5 * v * ((T)1 + ERF(v * (T)0.70710678118654752440));   \
        case AXRT_ACT_SWISH: return v / ((T)1 + EXP(-v));                                      \
        case AXRT_ACT_HARDSWISH: return AXRT_UNARY_hardswish(v, T, 0);                         \
        default: return v;                                                                     \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* Output row y from the kh input rows (NULL: padding). */                                 \
    static void dwconv_row_##S(const T *const *rows, const T *w, const T *bias, axrt_act act,  \
                               T *y, const axrt_conv2d_params *p, int packed)                  \
    {                                                                                          \
        const size_t c = (size_t)p->c, taps = (size_t)p->kh * (size_t)p->kw;                   \
        const size_t tap_stride = packed ? c : 1, channel_stride = packed ? 1 : taps;          \
        int ox, ky, kx;                                                                        \
        size_t ci;                                                                             \
        for (ox = 0; ox < p->ow; ox++, y += c) {                                               \
            for (ci = 0; ci < c; ci++)                                                         \
                y[ci] = bias ? bias[ci] : (T)0;                                                \
            for (ky = 0; ky < p->kh; ky++)                                                     \
                for (kx = 0; kx < p->kw; kx++) {                                               \
                    const int ix = ox - p->pad_left + kx * p->dilation_w;                      \
                    const T *wt = w + (size_t)(ky * p->kw + kx) * tap_stride;                  \
                    const T *xp;                                                               \
                    if (!rows[ky] || ix < 0 || ix >= p->w)                                     \
                        continue;                                                              \
                    xp = rows[ky] + (size_t)ix * c;                                            \
                    for (ci = 0; ci < c; ci++)                                                 \
                        y[ci] += xp[ci] * wt[ci * channel_stride];                             \
                }                                                                              \
            for (ci = 0; ci < c; ci++)                                                         \
                y[ci] = dwconv_act_##S(y[ci], act);                                            \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    void axrt_dwconv_inplace_##S(T *xy, const T *w, int packed, const T *bias, axrt_act act,   \
                                 T *ring, const axrt_conv2d_params *p)                         \
    {                                                                                          \
        const size_t row_elems = (size_t)p->w * (size_t)p->c;                                  \
        const int slots = p->pad_top + 1;                                                      \
        const T *rows[AXRT_DWCONV_MAX_KH];                                                     \
        int n, oy, ky;                                                                         \
        for (n = 0; n < p->n; n++) {                                                           \
            T *image = xy + (size_t)n * (size_t)p->h * row_elems;                              \
            for (oy = 0; oy < p->oh; oy++) {                                                   \
                T *ring_row = ring + (size_t)(oy % slots) * row_elems;                         \
                memcpy(ring_row, image + (size_t)oy * row_elems, row_elems * sizeof(T));       \
                for (ky = 0; ky < p->kh; ky++) {                                               \
                    const int iy = oy - p->pad_top + ky * p->dilation_h;                       \
                    if (iy < 0 || iy >= p->h)                                                  \
                        rows[ky] = NULL;                                                       \
                    else if (iy <= oy)                                                         \
                        rows[ky] = ring + (size_t)(iy % slots) * row_elems;                    \
                    else                                                                       \
                        rows[ky] = image + (size_t)iy * row_elems;                             \
                }                                                                              \
                if (!dwconv_table_row_##S(rows, w, packed, bias, act,                          \
                                          image + (size_t)oy * row_elems, p))                  \
                    dwconv_row_##S(rows, w, bias, act, image + (size_t)oy * row_elems, p,      \
                                   packed);                                                    \
            }                                                                                  \
        }                                                                                      \
    }

DWCONV_INPLACE(float, f32, erff, expf)
DWCONV_INPLACE(double, f64, erf, exp)
