/* test_gemm_edges.c — the packed dense and convolution kernels (GEMM tiles,
 * runtime/axrt_fast.inc and axrt_x86_simd.inc) on edge shapes, against a
 * double-precision reference computed here, on every instruction set this
 * CPU has (axrt_set_isa): M, N and K that are not multiples of the register
 * tile, the panel (16) or the reduction block; K = 1; tiny problems; runs
 * of full panels that one tile call takes together (axrt_cpu.h panels)
 * followed by a narrow panel; a second column block of a dense layer (more
 * than 128 outputs); bias, residual and ReLU in the epilogue; grouped
 * convs (axrt_gconv.inc), both packings; last panels of every width, also
 * bit for bit against a whole panel's lanes; runs of whole panels bit for
 * bit against each panel alone; the conv of an input scaled per
 * channel (axrt_conv_scaled.c); convs on few channels whose output rows take
 * several pixel tiles (a tile stepping on from the one before it), strided,
 * padded, rectangular; convs of few products an output (small_k) bit for
 * bit against the ordered float sum.  Bound otherwise: the max error
 * relative to the largest output magnitude, 1e-5. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axrt.h"
#include "conv_ref.h"

#define BOUND 1e-5

static const char *const isas[] = {"portable", "avx2", "avx512", "amx"};

static void fill(float *v, size_t n, float lo, float hi, unsigned seed)
{
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = lo + (hi - lo) * (float)(s >> 8) / 16777216.0f;
    }
}

static float *floats(size_t n, float lo, float hi, unsigned seed)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    fill(v, n, lo, hi, seed);
    return v;
}

/* max |y - ref| / max |ref| (1 where ref is all 0). */
static double rel_error(const float *y, const double *ref, size_t n)
{
    double err = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs((double)y[i] - ref[i]));
        top = fmax(top, fabs(ref[i]));
    }
    return err / (top > 0 ? top : 1);
}

typedef void dense_ep_fn(const float *, const float *, const float *, const float *, axrt_act, float *, size_t,
                         size_t, size_t);

/* One dense shape through fn (axrt_dense_packed_ep_f32 or _const_), with
   and without bias, residual and ReLU. */
static void check_dense_with(dense_ep_fn *fn, size_t rows, size_t in, size_t out)
{
    float *x = floats(rows * in, -1, 1, 1), *w = floats(out * in, -1, 1, 2), *bias = floats(out, -1, 1, 3);
    float *res = floats(rows * out, -2, 2, 4), *packed = floats(out * in, 0, 0, 5), *y = floats(rows * out, 0, 0, 6);
    double *ref = malloc((rows * out > 0 ? rows * out : 1) * sizeof *ref);
    assert_non_null(ref);
    axrt_pack_dense_f32(w, packed, in, out);
    for (int with = 0; with < 2; with++) {
        const axrt_act act = with ? AXRT_ACT_RELU : AXRT_ACT_NONE;
        for (size_t r = 0; r < rows; r++)
            for (size_t o = 0; o < out; o++) {
                double acc = with ? (double)bias[o] + res[r * out + o] : 0;
                for (size_t i = 0; i < in; i++) acc += (double)x[r * in + i] * w[o * in + i];
                ref[r * out + o] = act_ref(acc, act);
            }
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            double err;
            if (axrt_set_isa(isas[i]) != 0) continue; /* not on this CPU */
            fn(x, packed, with ? bias : NULL, with ? res : NULL, act, y, rows, in, out);
            err = rel_error(y, ref, rows * out);
            if (!(err <= BOUND))
                fail_msg("dense%s %s %zux%zu->%zu%s: error %.3g over %.0e", fn == axrt_dense_packed_const_ep_f32 ? " const" : "",
                         isas[i], rows, in, out, with ? " bias+residual+relu" : "", err, BOUND);
        }
    }
    axrt_set_isa(NULL);
    free(x), free(w), free(bias), free(res), free(packed), free(y), free(ref);
}

static void check_dense(size_t rows, size_t in, size_t out) { check_dense_with(axrt_dense_packed_ep_f32, rows, in, out); }

/* check_dense_with(fn) on every (rows, in, out) of the three lists (each
 * ended by 0) whose rows x in x out is at most `most`. */
static void check_dense_grid(dense_ep_fn *fn, const size_t *rows, const size_t *ins, const size_t *outs, size_t most)
{
    for (size_t r = 0; rows[r]; r++)
        for (size_t o = 0; outs[o]; o++)
            for (size_t i = 0; ins[i]; i++)
                if (rows[r] * ins[i] * outs[o] <= most) check_dense_with(fn, rows[r], ins[i], outs[o]);
}

/* Rows 1..13 (every tile height and tail), outputs 1, 15, 16, 17, 40 and
 * 144 (two column blocks, the second 16 wide), reductions 1, 3, 64 and 769
 * (two reduction blocks of unequal length). */
static void test_dense_edges(void **state)
{
    static const size_t rows[] = {1, 2, 3, 5, 6, 7, 11, 13, 0}, outs[] = {1, 15, 16, 17, 40, 144, 0};
    static const size_t ins[] = {1, 3, 64, 769, 0};
    (void)state;
    check_dense_grid(axrt_dense_packed_ep_f32, rows, ins, outs, 2000000);
}

/* Dense calls of the shapes that go to a matrix unit (amx: from 64 rows,
 * 32 with a constant weight, 128 inputs and outputs), the weight converted
 * every call and kept (axrt_dense_packed_const_ep_f32): row blocks of 32 and 128
 * with a partial last one; column blocks of 32 ending in a lone narrow
 * panel (129, 200), a narrow panel (145) or a lone whole one (176: the kept
 * form's tile of zeros); reductions of 143 (a partial 32-step tile), 769
 * and 1600 (one and two blocks past 768). */
static void test_dense_engine_edges(void **state)
{
    static const size_t rows[] = {32, 97, 130, 0}, outs[] = {129, 145, 176, 200, 0}, ins[] = {143, 769, 1600, 0};
    (void)state;
    check_dense_grid(axrt_dense_packed_ep_f32, rows + 1, ins, outs, 12000000);
    check_dense_grid(axrt_dense_packed_const_ep_f32, rows, ins, outs, 12000000);
}

/* A dense call on the matrix unit (amx) gives the same bits at 1, 2 and 3
 * threads: converting the weight every call, split by columns (as many
 * panels as row tiles) and by rows (a many-row call on few panels); with the
 * weight kept (axrt_dense_packed_const_ep_f32), split by 32-row groups (5,
 * 4 and 32 of them; 2 and 3 threads, which divide some and not others) or,
 * one group, by 32-output blocks (a narrow last one), the same bits as the
 * per-call path's where that runs on the unit; with bias, residual and
 * ReLU; and not AVX-512's bits (the unit ran).  Skipped where this CPU
 * or OS has no unit. */
static void test_dense_engine_threads(void **state)
{
    static const size_t shapes[][3] = {{130, 1600, 145}, {128, 128, 384}, {1000, 128, 128}, {32, 256, 200}};
    static const struct {
        dense_ep_fn *fn;
        int threads;
        const char *isa, *what;
    } runs[] = {{axrt_dense_packed_ep_f32, 1, "amx", "1 thread"},
                {axrt_dense_packed_ep_f32, 2, "amx", "2 threads"},
                {axrt_dense_packed_ep_f32, 3, "amx", "3 threads"},
                {axrt_dense_packed_const_ep_f32, 1, "amx", "the kept weight's at 1 thread"},
                {axrt_dense_packed_const_ep_f32, 2, "amx", "the kept weight's at 2 threads"},
                {axrt_dense_packed_const_ep_f32, 3, "amx", "the kept weight's at 3 threads"},
                {axrt_dense_packed_ep_f32, 2, "avx512", "AVX-512's"}};
    enum { RUNS = sizeof runs / sizeof runs[0] };
    (void)state;
    if (axrt_set_isa("amx") != 0) skip();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t rows = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
        float *x = floats(rows * in, -1, 1, 21), *w = floats(out * in, -1, 1, 22), *bias = floats(out, -1, 1, 23);
        float *res = floats(rows * out, -2, 2, 24), *packed = floats(out * in, 0, 0, 25);
        float *y[RUNS];
        axrt_pack_dense_f32(w, packed, in, out);
        for (int t = 0; t < RUNS; t++) {
            y[t] = floats(rows * out, 0, 0, 26);
            assert_int_equal(axrt_set_isa(runs[t].isa), 0);
            assert_int_equal(axrt_set_threads(runs[t].threads), 0);
            runs[t].fn(x, packed, bias, res, AXRT_ACT_RELU, y[t], rows, in, out);
        }
        for (int t = 1; t < RUNS; t++) {
            /* against the same entry's at 1 thread; the kept weight's against
               the per-call one's where that ran on the unit (64 rows or more);
               AVX-512's against the kept weight's, which the unit ran */
            const int ref = t > 3 ? 3 : 0, same = !memcmp(y[ref], y[t], rows * out * sizeof(float));
            if ((t == 3 && rows < 64) || same == (t < RUNS - 1))
                continue;
            fail_msg("amx dense %zux%zu->%zu: %s bits %s %s", rows, in, out, runs[t].what,
                     same ? "equal" : "differ from", runs[ref].what);
        }
        free(x), free(w), free(bias), free(res), free(packed);
        for (int t = 0; t < RUNS; t++) free(y[t]);
    }
    axrt_set_threads(1);
    axrt_set_isa(NULL);
}

/* A kept weight (axrt_dense_packed_const_ep_f32 on amx) whose memory then holds
 * another weight, of the same shape and of another (a model unloaded and
 * another loaded at its address), is converted again: the kept path's
 * bits stay those of the weight converted every call.  Skipped where
 * this CPU or OS has no unit. */
static void test_dense_kept_weight_replaced(void **state)
{
    static const size_t shapes[][2] = {{256, 512}, {256, 512}, {512, 256}}; /* in, out */
    const size_t rows = 64, most = 512 * 256;
    float *x = floats(rows * 512, -1, 1, 31), *w = floats(most, 0, 0, 32), *packed = floats(most, 0, 0, 33);
    float *kept = floats(rows * 512, 0, 0, 34), *fresh = floats(rows * 512, 0, 0, 35);
    (void)state;
    if (axrt_set_isa("amx") != 0) skip();
    for (unsigned s = 0; s < 3; s++) {
        const size_t in = shapes[s][0], out = shapes[s][1];
        fill(w, most, -1, 1, 40 + s);
        axrt_pack_dense_f32(w, packed, in, out);
        axrt_dense_packed_const_ep_f32(x, packed, NULL, NULL, AXRT_ACT_NONE, kept, rows, in, out);
        axrt_dense_packed_ep_f32(x, packed, NULL, NULL, AXRT_ACT_NONE, fresh, rows, in, out);
        if (memcmp(kept, fresh, rows * out * sizeof(float)))
            fail_msg("weight %u (%zux%zu->%zu) at a kept weight's address: the old one's products", s, rows, in,
                     out);
    }
    axrt_set_isa(NULL);
    free(x), free(w), free(packed), free(kept), free(fresh);
}

/* One conv of p's shape (dilation 1), with and without bias, residual and
 * ReLU, on every instruction set. */
static void check_conv_params(const axrt_conv2d_params *pp)
{
    const axrt_conv2d_params p = *pp;
    const int groups = p.groups > 1 ? p.groups : 1;
    const size_t nx = (size_t)p.n * p.h * p.w * p.c, nw = (size_t)p.oc * (p.c / groups) * p.kh * p.kw;
    const size_t ny = (size_t)p.n * p.oh * p.ow * p.oc;
    float *x = floats(nx, -1, 1, 7), *w = floats(nw, -1, 1, 8), *bias = floats((size_t)p.oc, -1, 1, 9);
    float *res = floats(ny, -2, 2, 10), *packed = floats(nw, 0, 0, 11), *y = floats(ny, 0, 0, 12);
    double *ref = malloc(ny * sizeof *ref);
    assert_non_null(ref);
    if (groups > 1) axrt_pack_conv2d_grouped_f32(w, packed, &p);
    else axrt_pack_conv2d_f32(w, packed, &p);
    for (int with = 0; with < 2; with++) {
        const axrt_act act = with ? AXRT_ACT_RELU : AXRT_ACT_NONE;
        conv_ref(x, w, with ? bias : NULL, with ? res : NULL, act, ref, &p);
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            double err;
            if (axrt_set_isa(isas[i]) != 0) continue;
            if (groups > 1) axrt_conv2d_grouped_f32(x, packed, with ? bias : NULL, with ? res : NULL, act, y, &p);
            else axrt_conv2d_packed_ep_f32(x, packed, with ? bias : NULL, with ? res : NULL, act, y, &p);
            err = rel_error(y, ref, ny);
            if (!(err <= BOUND))
                fail_msg("conv %s %dx%dx%dx%d->%d k%dx%d/%dx%d pad %d,%d groups %d%s: error %.3g over %.0e", isas[i],
                         p.n, p.h, p.w, p.c, p.oc, p.kh, p.kw, p.stride_h, p.stride_w, p.pad_top, p.pad_left, groups,
                         with ? " bias+residual+relu" : "", err, BOUND);
        }
    }
    axrt_set_isa(NULL);
    free(x), free(w), free(bias), free(res), free(packed), free(y), free(ref);
}

/* One conv of `groups` groups: n images of h x w x c to oc outputs, k x k
 * taps, stride, padding. */
static void check_conv_groups(int n, int hw, int c, int oc, int k, int stride, int pad, int groups)
{
    axrt_conv2d_params p = {0};
    p.n = n, p.h = p.w = hw, p.c = c, p.oc = oc, p.kh = p.kw = k;
    p.oh = p.ow = (hw + 2 * pad - k) / stride + 1;
    p.stride_h = p.stride_w = stride, p.dilation_h = p.dilation_w = 1, p.pad_top = p.pad_left = pad;
    p.groups = groups;
    check_conv_params(&p);
}

/* A conv of n images of h x w x c to oc outputs, kh x kw taps, strides sy,
 * sx, padding top/left py, px and as much bottom/right (the output as far
 * as the padded input allows). */
static void check_conv_rect(int n, int h, int w, int c, int oc, int kh, int kw, int sy, int sx, int py, int px)
{
    axrt_conv2d_params p = {0};
    p.n = n, p.h = h, p.w = w, p.c = c, p.oc = oc, p.kh = kh, p.kw = kw;
    p.oh = (h + 2 * py - kh) / sy + 1, p.ow = (w + 2 * px - kw) / sx + 1;
    p.stride_h = sy, p.stride_w = sx, p.dilation_h = p.dilation_w = 1, p.pad_top = py, p.pad_left = px;
    p.groups = 1;
    check_conv_params(&p);
}

static void check_conv(int n, int hw, int c, int oc, int k, int stride, int pad)
{
    check_conv_groups(n, hw, c, oc, k, stride, pad, 1);
}

/* 1x1 stride 2 on one channel (K = 1) and on 64; output channels 1, 16,
 * 40 (two full panels and a narrow one) and 64; a 3x3 and a stem-like 7x7
 * stride 2 on 3 channels (a tap row a segment, clipped pixels patched);
 * two images; pixel counts that leave short last tiles; 80 outputs over 36
 * pixels, the columns in two blocks of 48 and 32 (conv_column_block). */
static void test_conv_edges(void **state)
{
    (void)state;
    check_conv(1, 9, 1, 1, 1, 2, 0);
    check_conv(1, 9, 1, 40, 1, 2, 0);
    check_conv(2, 11, 64, 40, 1, 2, 0);
    check_conv(1, 8, 64, 64, 1, 1, 0);
    check_conv(1, 7, 5, 16, 3, 1, 1);
    check_conv(2, 6, 2, 48, 3, 2, 1);
    check_conv(1, 23, 3, 64, 7, 2, 3);
    check_conv(1, 13, 3, 40, 7, 2, 3);
    check_conv(1, 6, 16, 80, 3, 1, 1);
}

/* axrt_conv2d_scaled_f32 (runtime/axrt_conv_scaled.c) against conv_ref of
 * x .* s: n images of hw x hw x c to oc outputs, k x k taps (the packed
 * order's k % c for more than one tap), s per image (stride c) or one for
 * all (stride 0), with bias, residual and ReLU. */
static void check_conv_scaled(int n, int hw, int c, int oc, int k, size_t scale_stride)
{
    axrt_conv2d_params p = {0};
    p.n = n, p.h = p.w = hw, p.c = c, p.oc = oc, p.kh = p.kw = k;
    p.oh = p.ow = hw, p.stride_h = p.stride_w = 1, p.dilation_h = p.dilation_w = 1;
    p.pad_top = p.pad_left = k / 2, p.groups = 1;
    const size_t nx = (size_t)n * hw * hw * c, nw = (size_t)oc * c * k * k, ny = (size_t)n * hw * hw * oc;
    float *x = floats(nx, -1, 1, 21), *w = floats(nw, -1, 1, 22), *bias = floats((size_t)oc, -1, 1, 23);
    float *s = floats((size_t)n * c, 0, 2, 24), *res = floats(ny, -2, 2, 25), *packed = floats(nw, 0, 0, 26);
    float *scratch = floats(nw, 0, 0, 27), *xs = floats(nx, 0, 0, 28), *y = floats(ny, 0, 0, 29);
    double *ref = malloc(ny * sizeof *ref);
    assert_non_null(ref);
    for (size_t i = 0; i < nx; i++)
        xs[i] = x[i] * s[i / ((size_t)hw * hw * c) * scale_stride + i % (size_t)c];
    conv_ref(xs, w, bias, res, AXRT_ACT_RELU, ref, &p);
    axrt_pack_conv2d_f32(w, packed, &p);
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (axrt_set_isa(isas[i]) != 0) continue;
        axrt_conv2d_scaled_f32(x, packed, s, scale_stride, bias, res, AXRT_ACT_RELU, y, scratch, &p);
        const double err = rel_error(y, ref, ny);
        if (!(err <= BOUND))
            fail_msg("scaled conv %s %dx%dx%dx%d->%d k%d stride %zu: error %.3g over %.0e", isas[i], n, hw, hw, c,
                     oc, k, scale_stride, err, BOUND);
    }
    axrt_set_isa(NULL);
    free(x), free(w), free(bias), free(s), free(res), free(packed), free(scratch), free(xs), free(y), free(ref);
}

/* Scales per image and shared; output channels under a panel, two full
 * panels and a narrow one; a 3x3 (nine taps, k % c); one input channel. */
static void test_conv_scaled(void **state)
{
    (void)state;
    check_conv_scaled(2, 7, 24, 40, 1, 24);
    check_conv_scaled(2, 5, 16, 8, 1, 0);
    check_conv_scaled(1, 9, 32, 16, 1, 0);
    check_conv_scaled(2, 6, 5, 20, 3, 5);
    check_conv_scaled(1, 4, 1, 3, 1, 1);
}

/* Convs on few channels whose output rows take several pixel tiles, so
 * that a tile steps on from the one before it in its row
 * (axrt_fast.inc conv_pixels_step) through the middle, to a right edge
 * whose windows cross into the padding (or end before it), and a new row
 * (or image) starts afresh: MobileNetV2's and ResNet's stems on wide odd
 * inputs, one and two images, tile heights that vary (balanced_start),
 * strides 1 to 3 and unequal, rectangular kernels and padding, 1 to 3
 * channels, output channels 24 to 64. */
static void test_conv_stepped_rows(void **state)
{
    (void)state;
    check_conv_rect(1, 37, 37, 3, 32, 3, 3, 2, 2, 1, 1);
    check_conv_rect(2, 9, 67, 3, 40, 3, 3, 2, 2, 1, 1);
    check_conv_rect(2, 13, 61, 3, 64, 7, 7, 2, 2, 3, 3);
    check_conv_rect(1, 11, 50, 2, 24, 5, 5, 3, 3, 2, 2);
    check_conv_rect(2, 5, 40, 1, 16, 3, 3, 1, 1, 1, 1);
    check_conv_rect(1, 8, 45, 3, 48, 3, 5, 1, 2, 1, 2);
    check_conv_rect(1, 6, 53, 3, 32, 3, 3, 2, 2, 0, 0);
}

/* A conv's outputs bit for bit as one float multiply-add a term from the
 * bias, taps in order (ky, kx, channel), padding's zeros included, then
 * the residual added: the SIMD tables' sums (axrt_cpu.h tile and
 * small_k), on avx2 and avx512. */
static void check_conv_bits(int n, int h, int w, int c, int oc, int k, int stride, int pad, int dil_h, int dil_w)
{
    axrt_conv2d_params p = {0};
    p.n = n, p.h = h, p.w = w, p.c = c, p.oc = oc, p.kh = p.kw = k, p.stride_h = p.stride_w = stride;
    p.dilation_h = dil_h, p.dilation_w = dil_w, p.pad_top = p.pad_left = pad, p.groups = 1;
    p.oh = (h + 2 * pad - dil_h * (k - 1) - 1) / stride + 1, p.ow = (w + 2 * pad - dil_w * (k - 1) - 1) / stride + 1;
    const size_t nx = (size_t)n * h * w * c, nw = (size_t)oc * c * k * k, ny = (size_t)n * p.oh * p.ow * oc;
    float *x = floats(nx, -1, 1, 21), *wt = floats(nw, -1, 1, 22), *bias = floats((size_t)oc, -1, 1, 23);
    float *packed = floats(nw, 0, 0, 24), *y = floats(ny, 0, 0, 25), *want = floats(ny, 0, 0, 26);
    float *res = floats(ny, -1, 1, 27);
    axrt_pack_conv2d_f32(wt, packed, &p);
    for (int with = 0; with < 2; with++) {
        for (size_t at = 0; at < ny; at++) {
            const size_t o = at % (size_t)oc, pixel = at / (size_t)oc, ox = pixel % (size_t)p.ow;
            const size_t oy = pixel / (size_t)p.ow % (size_t)p.oh, im = pixel / ((size_t)p.ow * (size_t)p.oh);
            float acc = with ? bias[o] : 0.0f;
            for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++)
                    for (int ci = 0; ci < c; ci++) {
                        const int iy = (int)oy * stride - pad + ky * dil_h, ix = (int)ox * stride - pad + kx * dil_w;
                        const float xv = iy < 0 || iy >= h || ix < 0 || ix >= w
                                             ? 0.0f : x[((im * (size_t)h + (size_t)iy) * (size_t)w + (size_t)ix) * (size_t)c + (size_t)ci];
                        acc = fmaf(xv, wt[((o * (size_t)c + (size_t)ci) * (size_t)k + (size_t)ky) * (size_t)k + (size_t)kx], acc);
                    }
            if (with) acc += res[at];
            want[at] = with && acc < 0 ? 0.0f : acc; /* ReLU as max(0, v) */
        }
        for (size_t i = 1; i < sizeof isas / sizeof isas[0]; i++) { /* isas[0], portable, sums otherwise */
            if (axrt_set_isa(isas[i]) != 0) continue;
            axrt_conv2d_packed_ep_f32(x, packed, with ? bias : NULL, with ? res : NULL,
                                      with ? AXRT_ACT_RELU : AXRT_ACT_NONE, y, &p);
            for (size_t at = 0; at < ny; at++)
                if (memcmp(&y[at], &want[at], sizeof(float)) != 0)
                    fail_msg("conv %s %dx%dx%dx%d->%d k%d/%d pad %d dilation %d,%d%s: output %zu is %.9g, "
                             "the ordered sum %.9g", isas[i], n, h, w, c, oc, k, stride, pad, dil_h, dil_w,
                             with ? " bias+residual+relu" : "", at, y[at], want[at]);
        }
    }
    axrt_set_isa(NULL);
    free(x), free(wt), free(bias), free(packed), free(y), free(want), free(res);
}

/* Convs of few products an output (small_k: rows of 31 and 100 pixels,
 * some read in place in blocks of 24, the rest gathered, padding rows and
 * columns; stride 1, 2 and 3 on 1-3 channels; 16, 32 and 48 outputs, a
 * 2 + 1 panel split on AVX-512; two images; an output of one pixel; 1x1
 * on 16 and 32 channels to 1, 2 and 4 panels, blocks across rows, and on
 * 24, a dense call) and a dilated one (per-tap segments, the conv tile),
 * bit for bit. */
static void test_small_k_bits(void **state)
{
    /* n, h, w, c, oc, k, stride, pad, dilation h, w */
    static const int convs[][10] = {
        {2, 9, 62, 3, 16, 3, 2, 1, 1, 1},  {1, 5, 61, 3, 16, 3, 2, 1, 1, 1},  {1, 7, 100, 3, 32, 3, 1, 1, 1, 1},
        {1, 6, 60, 2, 48, 3, 2, 1, 1, 1},  {1, 8, 90, 1, 16, 5, 3, 2, 1, 1},  {1, 9, 30, 3, 16, 3, 1, 2, 2, 2},
        {1, 12, 40, 3, 32, 3, 2, 1, 2, 1}, {1, 3, 3, 3, 16, 3, 2, 0, 1, 1},   {1, 5, 31, 16, 16, 1, 1, 0, 1, 1},
        {2, 4, 13, 32, 32, 1, 1, 0, 1, 1}, {1, 3, 20, 16, 64, 1, 1, 0, 1, 1}, {1, 4, 13, 24, 16, 1, 1, 0, 1, 1},
    };
    (void)state;
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        const int *v = convs[i];
        check_conv_bits(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
    }
}

/* Grouped convs: 4 and 8 channels a group (the rotated packing, several
 * groups a vector) with group counts that fill whole vectors and leave a
 * part (2, 3, 5, 13 groups), 16 a group and unequal in/out (the
 * group-by-group packing); 3x3 stride 1 and 2, a 1x1; two images; pixel
 * counts that leave short last tiles. */
static void test_grouped_edges(void **state)
{
    (void)state;
    check_conv_groups(1, 7, 8, 8, 3, 1, 1, 2);
    check_conv_groups(1, 9, 12, 12, 3, 2, 1, 3);
    check_conv_groups(2, 6, 20, 20, 3, 1, 1, 5);
    check_conv_groups(1, 11, 128, 128, 3, 1, 1, 32);
    check_conv_groups(1, 5, 104, 104, 3, 2, 1, 13);
    check_conv_groups(1, 7, 32, 32, 3, 1, 1, 2);
    check_conv_groups(1, 8, 40, 40, 1, 1, 0, 5);
    check_conv_groups(1, 6, 64, 64, 3, 1, 1, 8);
    check_conv_groups(1, 7, 48, 96, 3, 1, 1, 4);
    check_conv_groups(1, 6, 24, 36, 3, 1, 1, 3);
}

/* y [rows, out] of a packed dense call (bias, residual, ReLU) on ISA isa;
 * w [out, in]. */
static float *dense_on(const char *isa, const float *x, const float *w, const float *bias, const float *res,
                       size_t rows, size_t in, size_t out, axrt_act act)
{
    float *packed = floats(out * in, 0, 0, 13), *y = floats(rows * out, 0, 0, 14);
    axrt_pack_dense_f32(w, packed, in, out);
    assert_int_equal(axrt_set_isa(isa), 0);
    axrt_dense_packed_ep_f32(x, packed, bias, res, act, y, rows, in, out);
    free(packed);
    return y;
}

/* A narrow last panel (out = 16 + width) takes, lane by lane, the sums of a
 * whole panel: its outputs are bit for bit those of the same weights' first
 * 16 + width rows in a 32-output layer (every ISA; rows > 1, as a one-row
 * call splits a whole panel's sums, axrt_cpu.h row_panels). */
static void check_narrow_bits(size_t rows, size_t in, size_t width)
{
    const size_t out = 16 + width;
    float *x = floats(rows * in, -1, 1, 15), *w = floats(32 * in, -1, 1, 16), *bias = floats(32, -1, 1, 17);
    float *res = floats(rows * 32, -2, 2, 18), *res_narrow = floats(rows * out, 0, 0, 19);
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < out; o++) res_narrow[r * out + o] = res[r * 32 + o];
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        float *narrow, *whole;
        if (axrt_set_isa(isas[i]) != 0) continue;
        narrow = dense_on(isas[i], x, w, bias, res_narrow, rows, in, out, AXRT_ACT_RELU);
        whole = dense_on(isas[i], x, w, bias, res, rows, in, 32, AXRT_ACT_RELU);
        for (size_t r = 0; r < rows; r++)
            for (size_t o = 0; o < out; o++)
                if (memcmp(&narrow[r * out + o], &whole[r * 32 + o], sizeof(float)) != 0)
                    fail_msg("dense %s %zux%zu->%zu: y[%zu][%zu] %.9g, %.9g in a whole panel", isas[i], rows, in,
                             out, r, o, narrow[r * out + o], whole[r * 32 + o]);
        free(narrow), free(whole);
    }
    axrt_set_isa(NULL);
    free(x), free(w), free(bias), free(res), free(res_narrow);
}

/* A tile call's run of whole panels (axrt_cpu.h panels), which AVX-512
 * takes up to three at a time (axrt_x86_simd.inc tile_panels_body): each
 * panel's outputs are bit for bit those of a layer of that panel alone,
 * with bias, residual and act, over two reduction blocks (in > 768). */
static void check_group_bits(size_t rows, size_t in, size_t panels, axrt_act act)
{
    const size_t out = 16 * panels;
    float *x = floats(rows * in, -1, 1, 23), *w = floats(out * in, -1, 1, 24), *bias = floats(out, -1, 1, 25);
    float *res = floats(rows * out, -2, 2, 26), *res_one = floats(rows * 16, 0, 0, 27);
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        float *all;
        if (axrt_set_isa(isas[i]) != 0) continue;
        all = dense_on(isas[i], x, w, bias, res, rows, in, out, act);
        for (size_t j = 0; j < panels; j++) {
            float *one;
            for (size_t r = 0; r < rows; r++) memcpy(&res_one[r * 16], &res[r * out + j * 16], 16 * sizeof(float));
            one = dense_on(isas[i], x, w + j * 16 * in, bias + j * 16, res_one, rows, in, 16, act);
            for (size_t r = 0; r < rows; r++)
                if (memcmp(&one[r * 16], &all[r * out + j * 16], 16 * sizeof(float)) != 0)
                    fail_msg("dense %s %zux%zu->%zu act %d: panel %zu row %zu differs from the panel alone", isas[i],
                             rows, in, out, (int)act, j, r);
            free(one);
        }
        free(all);
    }
    axrt_set_isa(NULL);
    free(x), free(w), free(bias), free(res), free(res_one);
}

/* Runs of 1 to 9 panels (groups of three, two and one; 9 crosses a column
 * block), every epilogue whose form depends on the vectors taken together. */
static void test_panel_groups(void **state)
{
    (void)state;
    for (size_t panels = 1; panels <= 9; panels++) {
        check_group_bits(13, 800, panels, AXRT_ACT_RELU);
        check_group_bits(13, 800, panels, AXRT_ACT_GELU);
        check_group_bits(13, 800, panels, AXRT_ACT_SWISH);
    }
}

/* y [m, n] = a [m, k] . b [k, n], row-major (the wide tile's panels of 32
 * and their tails), against double. */
static void check_matmul(size_t m, size_t k, size_t n)
{
    float *a = floats(m * k, -1, 1, 20), *b = floats(k * n, -1, 1, 21), *y = floats(m * n, 0, 0, 22);
    double *ref = malloc(m * n * sizeof *ref);
    assert_non_null(ref);
    for (size_t r = 0; r < m; r++)
        for (size_t j = 0; j < n; j++) {
            double acc = 0;
            for (size_t p = 0; p < k; p++) acc += (double)a[r * k + p] * b[p * n + j];
            ref[r * n + j] = acc;
        }
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        double err;
        if (axrt_set_isa(isas[i]) != 0) continue;
        axrt_matmul_f32(a, NULL, b, NULL, y, NULL, 0, m, k, n);
        err = rel_error(y, ref, m * n);
        if (!(err <= BOUND)) fail_msg("matmul %s %zux%zu.%zux%zu: error %.3g over %.0e", isas[i], m, k, k, n, err, BOUND);
    }
    axrt_set_isa(NULL);
    free(a), free(b), free(y), free(ref);
}

/* Last panels of every width 1..15 (AVX-512: 1..8 on half vectors, 9..15
 * masked whole ones) after a whole panel: dense calls of 13 rows and of one
 * (the matrix-vector path's tail), a 3x3 conv (the conv tile), against
 * double, and bit for bit against a whole panel; row-major GEMMs of 32 + w
 * and 16 + w columns (the wide tile's narrow panel and its tail). */
static void test_narrow_panels(void **state)
{
    (void)state;
    for (size_t w = 1; w < 16; w++) {
        check_dense(13, 37, 16 + w);
        check_dense(1, 37, 16 + w);
        check_conv(1, 5, 6, 16 + (int)w, 3, 1, 1);
        check_narrow_bits(13, 37, w);
        check_matmul(11, 19, 32 + w);
        check_matmul(11, 19, 16 + w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_edges),
        cmocka_unit_test(test_dense_engine_edges),
        cmocka_unit_test(test_dense_engine_threads),
        cmocka_unit_test(test_dense_kept_weight_replaced),
        cmocka_unit_test(test_conv_edges),
        cmocka_unit_test(test_conv_stepped_rows),
        cmocka_unit_test(test_small_k_bits),
        cmocka_unit_test(test_grouped_edges),
        cmocka_unit_test(test_narrow_panels),
        cmocka_unit_test(test_panel_groups),
        cmocka_unit_test(test_conv_scaled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
