/* test_winograd.c — Winograd convolution (runtime/axrt_winograd.c) against
 * a double-precision direct convolution computed here, on every
 * instruction set this CPU has (axrt_set_isa): F(4,3) and F(2,3); odd
 * spatial sizes that leave partial tiles, padding 0 and 1, channel counts
 * that leave a masked tail and narrow panels, several images and blocks;
 * bias, residual and each activation in the epilogue.  Bound: the max
 * error relative to the largest output magnitude, 2e-6 for F(2,3) and 3e-5
 * for F(4,3) (its transforms scale the rounding up; measured up to 3e-7
 * and 6e-6 on these shapes). */
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

static void fill(float *v, size_t n, float lo, float hi, unsigned seed)
{
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = lo + (hi - lo) * (float)(s >> 8) / 16777216.0f;
    }
}

#include "conv_ref.h"

/* max |y - ref| / max |ref| */
static double rel_error(const float *y, const double *ref, size_t n)
{
    double most = 0, err = 0;
    for (size_t i = 0; i < n; i++) {
        most = fmax(most, fabs(ref[i]));
        err = fmax(err, fabs(y[i] - ref[i]));
        if (isnan(y[i])) return INFINITY;
    }
    return most > 0 ? err / most : err;
}

static const char *const isas[] = {"portable", "avx2", "avx512"};

static void check_shape(int n, int h, int w, int c, int oc, int pad, axrt_act act, int with_residual)
{
    axrt_conv2d_params p = {n, h, w, c, h + 2 * pad - 2, w + 2 * pad - 2, oc, 3, 3, 1, 1, 1, 1, pad, pad, 1};
    const size_t nx = (size_t)n * h * w * c, ny = (size_t)n * p.oh * p.ow * oc, nw = (size_t)oc * c * 9;
    float *x = malloc(nx * sizeof *x), *wt = malloc(nw * sizeof *wt), *bias = malloc((size_t)oc * sizeof *bias);
    float *res = malloc(ny * sizeof *res), *y = malloc(ny * sizeof *y);
    double *ref = malloc(ny * sizeof *ref);
    fill(x, nx, -1, 1, (unsigned)(h * 7 + c)), fill(wt, nw, -0.3f, 0.3f, (unsigned)(oc + 5));
    fill(bias, (size_t)oc, -0.5f, 0.5f, 9), fill(res, ny, -2, 2, 11);
    conv_ref(x, wt, bias, with_residual ? res : NULL, act, ref, &p);
    for (int m = 2; m <= 4; m += 2) {
        float *u = malloc(axrt_winograd_packed_elems(&p, m) * sizeof *u);
        float *scratch = malloc((axrt_winograd_scratch_elems(&p, m) + 1) * sizeof *scratch);
        axrt_pack_winograd_f32(wt, u, &p, m);
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (axrt_set_isa(isas[i]) != 0) continue;   /* not on this CPU */
            for (size_t k = 0; k < ny; k++) y[k] = NAN;
            axrt_conv2d_winograd_f32(x, u, bias, with_residual ? res : NULL, act, y, scratch, m, &p);
            const double err = rel_error(y, ref, ny), bound = m == 4 ? 3e-5 : 2e-6;
            if (!(err <= bound))
                fail_msg("F(%d,3) %s: %dx%dx%dx%d -> %d pad %d act %d residual %d: relative error %g > %g", m,
                         isas[i], n, h, w, c, oc, pad, (int)act, with_residual, err, bound);
            if (getenv("WINO_VERBOSE"))
                printf("  F(%d,3) %-8s %dx%dx%dx%d->%d pad %d: %.3g\n", m, isas[i], n, h, w, c, oc, pad, err);
        }
        free(u), free(scratch);
    }
    axrt_set_isa(NULL);
    free(x), free(wt), free(bias), free(res), free(y), free(ref);
}

/* Partial tiles at the right and bottom edges, padding 0 and 1. */
static void test_partial_tiles(void **state)
{
    (void)state;
    check_shape(1, 7, 9, 16, 16, 1, AXRT_ACT_NONE, 0);
    check_shape(1, 11, 6, 16, 32, 0, AXRT_ACT_RELU, 0);
    check_shape(2, 5, 5, 8, 8, 1, AXRT_ACT_NONE, 1);
    check_shape(1, 3, 3, 4, 4, 0, AXRT_ACT_NONE, 0);   /* one output pixel */
}

/* Channel counts off the 16-lane chunks and panels, many blocks. */
static void test_channels(void **state)
{
    (void)state;
    check_shape(1, 13, 14, 19, 37, 1, AXRT_ACT_RELU6, 1);
    check_shape(3, 30, 17, 3, 5, 1, AXRT_ACT_NONE, 0);
    check_shape(1, 28, 28, 64, 48, 1, AXRT_ACT_RELU, 1);
}

/* GELU, swish and hardswish (applied after the output transform; the
   portable table's hardswish a loop of winograd's own). */
static void test_activations(void **state)
{
    (void)state;
    check_shape(1, 9, 10, 24, 20, 1, AXRT_ACT_GELU, 1);
    check_shape(1, 9, 10, 24, 20, 0, AXRT_ACT_SWISH, 0);
    check_shape(1, 9, 10, 24, 20, 1, AXRT_ACT_HARDSWISH, 1);
}

/* The same bits on 1, 2 and 3 threads: one block (16 tiles, its three
 * steps split over the threads) and many blocks (slots). */
static void check_threads(int h, int c, int oc)
{
    axrt_conv2d_params p = {1, h, h, c, h, h, oc, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    const size_t nx = (size_t)h * h * c, ny = (size_t)h * h * oc, nw = (size_t)oc * c * 9;
    float *x = malloc(nx * sizeof *x), *wt = malloc(nw * sizeof *wt), *bias = malloc((size_t)oc * sizeof *bias);
    float *y1 = malloc(ny * sizeof *y1), *yn = malloc(ny * sizeof *yn);
    fill(x, nx, -1, 1, 3), fill(wt, nw, -0.3f, 0.3f, 4), fill(bias, (size_t)oc, -0.5f, 0.5f, 5);
    float *u = malloc(axrt_winograd_packed_elems(&p, 4) * sizeof *u);
    float *scratch = malloc((axrt_winograd_scratch_elems(&p, 4) + 1) * sizeof *scratch);
    axrt_pack_winograd_f32(wt, u, &p, 4);
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (axrt_set_isa(isas[i]) != 0) continue;
        axrt_set_threads(1);
        axrt_conv2d_winograd_f32(x, u, bias, NULL, AXRT_ACT_RELU, y1, scratch, 4, &p);
        for (int threads = 2; threads <= 3; threads++) {
            axrt_set_threads(threads);
            axrt_conv2d_winograd_f32(x, u, bias, NULL, AXRT_ACT_RELU, yn, scratch, 4, &p);
            if (memcmp(y1, yn, ny * sizeof *y1))
                fail_msg("%s %dx%dx%d->%d: %d threads differ from 1", isas[i], h, h, c, oc, threads);
        }
    }
    axrt_set_threads(1), axrt_set_isa(NULL);
    free(x), free(wt), free(bias), free(y1), free(yn), free(u), free(scratch);
}

static void test_threads(void **state)
{
    (void)state;
    check_threads(14, 96, 80);   /* 16 tiles: one block */
    check_threads(40, 64, 48);   /* 100 tiles: several blocks */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_tiles),
        cmocka_unit_test(test_channels),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
