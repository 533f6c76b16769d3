/* test_int8.c — the int8 kernels (runtime/axrt_int8.c): requantisation
 * against an independent rounding of the exact quotient; dense and conv
 * (plain, grouped, depthwise, padded, strided, odd lengths for the SIMD
 * tails) against naive int32 sums written here; and every instruction set
 * this CPU has, forced with axrt_set_isa, bit-identical to the portable C;
 * the int8-stored output (rq.flags: q + 128 in uint8) the same integers;
 * the elementwise add and rescale (concat part, ReLU) against exact sums and
 * on every instruction set against the portable C; the int8 global mean-pool,
 * mean and windowed mean-pool against sums and divisors counted here; the
 * broadcasting add on every instruction set against the plain add on
 * broadcast operands; the byte gather (transpose, slice). */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "axrt.h"

/* round_half_away(p / 2^s) by truncating division and a remainder test. */
static int32_t reference_requantize(int32_t acc, int32_t mult, int s)
{
    const int64_t p = (int64_t)acc * mult, d = (int64_t)1 << s;
    int64_t q = p / d, r = p % d;
    if (2 * (r < 0 ? -r : r) >= d) q += p < 0 ? -1 : 1;
    return (int32_t)q;
}

static uint32_t rng = 12345;
static uint32_t next_random(void) { rng = rng * 1664525u + 1013904223u; return rng >> 8; }

static void test_requantize(void **state)
{
    (void)state;
    for (int i = 0; i < 100000; i++) {
        const int32_t acc = (int32_t)(next_random() * 257u - (1u << 30)); /* wraps, as unsigned */
        const int32_t mult = (int32_t)((1u << 30) + next_random() % (1u << 30));
        const int s = 1 + (int)(next_random() % 62);
        assert_int_equal(axrt_requantize(acc, mult, s), reference_requantize(acc, mult, s));
    }
    assert_int_equal(axrt_requantize(5, 1 << 30, 31), 3);    /* 2.5 -> 3 */
    assert_int_equal(axrt_requantize(-5, 1 << 30, 31), -3);  /* -2.5 -> -3 */
}

static void test_quantize(void **state)
{
    const float x[] = {0.0f, 0.5f, -0.5f, 1.49999994f, 100.0f, -100.0f, 0.25f};
    uint8_t q[7];
    (void)state;
    axrt_quantize_u8(x, q, 7, 0.5f, 3);
    const int want[] = {3, 4, 2, 6, 127, -128, 4};   /* round half away, then + zp, clamped */
    for (int i = 0; i < 7; i++)
        assert_int_equal((int)q[i] - 128, want[i]);
}

/* Every instruction set quantises like the portable C, halves and clamps included. */
static void test_quantize_isas(void **state)
{
    enum { N = 1037 };
    static float x[N];
    static uint8_t want[N], got[N];
    (void)state;
    for (int i = 0; i < N; i++)
        x[i] = i % 7 == 0 ? ((float)(i % 300) - 150.0f) * 0.25f + 0.125f   /* exact halves of 0.25 */
                          : ((float)next_random() / 65536.0f - 128.0f) * 0.37f;
    x[5] = 1e30f; x[6] = -1e30f;
    assert_int_equal(axrt_set_isa("portable"), 0);
    axrt_quantize_u8(x, want, N, 0.25f, -7);
    const char *others[] = {"avx2", "avx512"};
    for (int k = 0; k < 2; k++) {
        if (axrt_set_isa(others[k]) != 0) continue;
        axrt_quantize_u8(x, got, N, 0.25f, -7);
        assert_memory_equal(got, want, N);
    }
    axrt_set_isa(NULL);
}

typedef struct case_data {
    axrt_conv2d_params p;
    uint8_t *x;
    int8_t *w;
    float *fscale;
    int32_t *bias, *mult;
    int8_t *shift;
    axrt_requant rq;
    size_t nx, nw, ny;
} case_data;

static void fill_case(case_data *c)
{
    const axrt_conv2d_params *p = &c->p;
    c->nx = (size_t)p->n * p->h * p->w * p->c;
    c->nw = (size_t)p->oc * p->kh * p->kw * (p->c / p->groups);
    c->ny = (size_t)p->n * p->oh * p->ow * p->oc;
    c->x = malloc(c->nx);
    c->w = malloc(c->nw);
    c->bias = malloc(sizeof(int32_t) * (size_t)p->oc);
    c->mult = malloc(sizeof(int32_t) * (size_t)p->oc);
    c->shift = malloc((size_t)p->oc);
    c->fscale = malloc(sizeof(float) * (size_t)p->oc);
    for (size_t i = 0; i < c->nx; i++) c->x[i] = (uint8_t)next_random();
    for (size_t i = 0; i < c->nw; i++) c->w[i] = (int8_t)((int)(next_random() % 255) - 127);
    for (int o = 0; o < p->oc; o++) {
        c->bias[o] = (int32_t)(next_random() % 20001) - 10000;
        c->mult[o] = (int32_t)((1u << 30) + next_random() % (1u << 30));
        /* mostly 38..41, sometimes 31..33: the AVX-512 epilogue's two routes (below 33 and from 33 up) */
        c->shift[o] = (int8_t)(next_random() % 8 ? 38 + next_random() % 4 : 31 + next_random() % 3);
        c->fscale[o] = (float)(next_random() % 1000 + 1) * 1.1e-6f;
    }
    c->rq = (axrt_requant){c->bias, c->mult, c->shift, c->fscale, 5, -100, 120, 0.125f, 0};
}

static void free_case(case_data *c)
{
    free(c->x); free(c->w); free(c->bias); free(c->mult); free(c->shift); free(c->fscale);
}

/* The conv by its definition, to integers q (before dequantisation). */
static void reference_conv(const case_data *c, int32_t x_zp, float *y)
{
    const axrt_conv2d_params *p = &c->p;
    const int cig = p->c / p->groups, ocg = p->oc / p->groups;
    for (int n = 0; n < p->n; n++)
        for (int oy = 0; oy < p->oh; oy++)
            for (int ox = 0; ox < p->ow; ox++)
                for (int oc = 0; oc < p->oc; oc++) {
                    int64_t acc = c->bias[oc];
                    for (int ky = 0; ky < p->kh; ky++)
                        for (int kx = 0; kx < p->kw; kx++)
                            for (int ci = 0; ci < cig; ci++) {
                                const int iy = oy * p->stride_h - p->pad_top + ky * p->dilation_h;
                                const int ix = ox * p->stride_w - p->pad_left + kx * p->dilation_w;
                                const int inside = iy >= 0 && iy < p->h && ix >= 0 && ix < p->w;
                                const int xv = inside ? c->x[((n * p->h + iy) * p->w + ix) * p->c + (oc / ocg) * cig + ci] : x_zp;
                                acc += (int64_t)xv * c->w[((oc * p->kh + ky) * p->kw + kx) * cig + ci];
                            }
                    if (!c->rq.mult) {   /* float_out: scaled to float */
                        y[((n * p->oh + oy) * p->ow + ox) * p->oc + oc] = (float)(int32_t)acc * c->rq.fscale[oc];
                        continue;
                    }
                    int32_t q = c->rq.zp + reference_requantize((int32_t)acc, c->mult[oc], c->shift[oc]);
                    q = q < c->rq.lo ? c->rq.lo : q > c->rq.hi ? c->rq.hi : q;
                    y[((n * p->oh + oy) * p->ow + ox) * p->oc + oc] = (float)(q - c->rq.zp) * c->rq.scale;
                }
}

static const char *const isas[] = {"portable", "avx2", "avx512"};

/* The conv on every instruction set against the reference; equal bits. */
static void check_conv(axrt_conv2d_params p)
{
    case_data c = {.p = p};
    fill_case(&c);
    float *want = malloc(sizeof(float) * c.ny), *got = malloc(sizeof(float) * c.ny);
    reference_conv(&c, 77, want);
    for (int i = 0; i < 3; i++) {
        if (axrt_set_isa(isas[i]) != 0) { print_message("  (no %s on this CPU)\n", isas[i]); continue; }
        memset(got, 0, sizeof(float) * c.ny);
        uint8_t *patch = malloc(axrt_conv2d_q8_scratch(&c.p));
        axrt_conv2d_q8(c.x, 77, c.w, &c.rq, got, patch, &c.p);
        if (memcmp(got, want, sizeof(float) * c.ny))
            fail_msg("conv %dx%dx%d groups %d differs from the reference on %s (%s)", p.h, p.w, p.c, p.groups,
                     isas[i], axrt_q8_isa_name());
        /* the register-tiled GEMM on packed weights */
        int8_t *packed = malloc(axrt_conv2d_q8_pack(c.w, &c.p, NULL));
        axrt_conv2d_q8_pack(c.w, &c.p, packed);
        memset(got, 0, sizeof(float) * c.ny);
        axrt_conv2d_q8_packed(c.x, 77, packed, &c.rq, got, patch, &c.p);
        if (memcmp(got, want, sizeof(float) * c.ny))
            fail_msg("packed conv %dx%dx%d -> %d, %dx%d groups %d differs from the reference on %s (%s)", p.h, p.w,
                     p.c, p.oc, p.kh, p.kw, p.groups, isas[i], axrt_q8_isa_name());
        free(packed);
        free(patch);
    }
    axrt_set_isa(NULL);
    free(want); free(got);
    free_case(&c);
}

/* A fused residual's layer: the accumulator scaled to float (rq.mult NULL). */
static void test_float_out(void **state)
{
    (void)state;
    /* n h w c oh ow oc kh kw sh sw dh dw pt pl groups */
    const axrt_conv2d_params cases[] = {{1, 6, 5, 32, 6, 5, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                                        {7, 1, 1, 100, 1, 1, 21, 1, 1, 1, 1, 1, 1, 0, 0, 1}};
    for (int k = 0; k < 2; k++) {
        case_data c = {.p = cases[k]};
        fill_case(&c);
        c.rq.mult = NULL;
        float *want = malloc(sizeof(float) * c.ny), *got = malloc(sizeof(float) * c.ny);
        int8_t *packed = malloc(axrt_conv2d_q8_pack(c.w, &c.p, NULL));
        uint8_t *patch = malloc(axrt_conv2d_q8_scratch(&c.p));
        axrt_conv2d_q8_pack(c.w, &c.p, packed);
        reference_conv(&c, 77, want);
        for (int i = 0; i < 3; i++) {
            if (axrt_set_isa(isas[i]) != 0) continue;
            memset(got, 0, sizeof(float) * c.ny);
            axrt_conv2d_q8_packed(c.x, 77, packed, &c.rq, got, patch, &c.p);
            if (memcmp(got, want, sizeof(float) * c.ny))
                fail_msg("float-out conv case %d differs from the reference on %s (%s)", k, isas[i], axrt_q8_isa_name());
        }
        axrt_set_isa(NULL);
        free(want); free(got); free(packed); free(patch);
        free_case(&c);
    }
}

static void test_conv(void **state)
{
    (void)state;
    /* n h w c oh ow oc kh kw sh sw dh dw pt pl groups */
    check_conv((axrt_conv2d_params){1, 7, 6, 13, 7, 6, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1});
    check_conv((axrt_conv2d_params){2, 8, 8, 67, 4, 4, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1});
    check_conv((axrt_conv2d_params){1, 5, 5, 130, 5, 5, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1});
    check_conv((axrt_conv2d_params){1, 6, 6, 24, 6, 6, 24, 3, 3, 1, 1, 1, 1, 1, 1, 24}); /* depthwise */
    check_conv((axrt_conv2d_params){1, 6, 6, 32, 3, 3, 16, 3, 3, 2, 2, 1, 1, 1, 1, 4});  /* grouped */
    /* the packed GEMM's shapes: taps in place (c % 4 == 0), gathered (c % 4 != 0), one tap with
       odd c; channel counts around the 16-wide blocks and 64-wide tiles; pixels not a multiple
       of the tile rows; dilation */
    check_conv((axrt_conv2d_params){1, 9, 7, 64, 9, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1});
    check_conv((axrt_conv2d_params){1, 8, 8, 16, 8, 8, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1});
    check_conv((axrt_conv2d_params){2, 7, 7, 12, 3, 3, 33, 3, 3, 2, 2, 2, 2, 1, 1, 1});
    check_conv((axrt_conv2d_params){1, 11, 10, 3, 6, 5, 17, 5, 5, 2, 2, 1, 1, 2, 2, 1});
    check_conv((axrt_conv2d_params){1, 5, 3, 7, 5, 3, 130, 1, 1, 1, 1, 1, 1, 0, 0, 1});
    check_conv((axrt_conv2d_params){1, 4, 4, 4, 4, 4, 1, 9, 9, 1, 1, 1, 1, 4, 4, 1});  /* 81 taps: gathered */
    /* depthwise: channel blocks of 64 and the vectors' tails (8, 16 lanes), 5x5 strided, dilated */
    check_conv((axrt_conv2d_params){1, 7, 6, 70, 7, 6, 70, 3, 3, 1, 1, 1, 1, 1, 1, 70});
    check_conv((axrt_conv2d_params){2, 9, 8, 13, 4, 4, 13, 5, 5, 2, 2, 1, 1, 2, 2, 13});
    check_conv((axrt_conv2d_params){1, 8, 8, 150, 8, 8, 150, 3, 3, 1, 1, 2, 2, 2, 2, 150});
}

/* Dense is the 1x1 conv over a 1x1 image with `rows` images. */
static void test_dense(void **state)
{
    (void)state;
    const size_t ins[] = {1, 15, 16, 17, 63, 64, 65, 200, 784};
    for (size_t t = 0; t < sizeof ins / sizeof ins[0]; t++) {
        const int in = (int)ins[t], rows = 3 + (int)t, out = 11 + 13 * (int)t;
        case_data c = {.p = {rows, 1, 1, in, 1, 1, out, 1, 1, 1, 1, 1, 1, 0, 0, 1}};
        fill_case(&c);
        float *want = malloc(sizeof(float) * c.ny), *got = malloc(sizeof(float) * c.ny);
        int8_t *packed = malloc(axrt_dense_q8_pack(c.w, (size_t)in, (size_t)out, NULL));
        axrt_dense_q8_pack(c.w, (size_t)in, (size_t)out, packed);
        reference_conv(&c, 0, want);
        for (int i = 0; i < 3; i++) {
            if (axrt_set_isa(isas[i]) != 0) continue;
            axrt_dense_q8(c.x, c.w, &c.rq, got, (size_t)rows, (size_t)in, (size_t)out);
            if (memcmp(got, want, sizeof(float) * c.ny))
                fail_msg("dense in=%d differs from the reference on %s (%s)", in, isas[i], axrt_q8_isa_name());
            memset(got, 0, sizeof(float) * c.ny);
            axrt_dense_q8_packed(c.x, packed, &c.rq, got, (size_t)rows, (size_t)in, (size_t)out);
            if (memcmp(got, want, sizeof(float) * c.ny))
                fail_msg("packed dense %d x %d -> %d differs from the reference on %s (%s)", rows, in, out, isas[i],
                         axrt_q8_isa_name());
        }
        axrt_set_isa(NULL);
        free(want); free(got); free(packed);
        free_case(&c);
    }
}

/* flags: every kernel on every instruction set stores the reference's
 * integers q as q + 128 (the reference's floats are (q - zp) * 0.125, exact). */
static void check_q8_out(axrt_conv2d_params p, bool dense)
{
    case_data c = {.p = p};
    fill_case(&c);
    float *ref = malloc(sizeof(float) * c.ny);
    uint8_t *want = malloc(c.ny), *got = malloc(c.ny), *patch = malloc(axrt_conv2d_q8_scratch(&c.p) + 1);
    reference_conv(&c, dense ? 0 : 77, ref);
    for (size_t i = 0; i < c.ny; i++)
        want[i] = (uint8_t)((int32_t)(ref[i] / c.rq.scale) + c.rq.zp + 128);
    c.rq.flags = 1;
    const size_t in = (size_t)p.c, out = (size_t)p.oc, rows = (size_t)p.n;
    int8_t *packed = malloc(dense ? axrt_dense_q8_pack(c.w, in, out, NULL) : axrt_conv2d_q8_pack(c.w, &c.p, NULL));
    if (dense) axrt_dense_q8_pack(c.w, in, out, packed);
    else axrt_conv2d_q8_pack(c.w, &c.p, packed);
    for (int i = 0; i < 3; i++) {
        if (axrt_set_isa(isas[i]) != 0) continue;
        for (int kind = 0; kind < 2; kind++) {   /* plain, packed */
            memset(got, 0, c.ny);
            if (dense && kind == 0) axrt_dense_q8(c.x, c.w, &c.rq, got, rows, in, out);
            else if (dense) axrt_dense_q8_packed(c.x, packed, &c.rq, got, rows, in, out);
            else if (kind == 0) axrt_conv2d_q8(c.x, 77, c.w, &c.rq, got, patch, &c.p);
            else axrt_conv2d_q8_packed(c.x, 77, packed, &c.rq, got, patch, &c.p);
            if (memcmp(got, want, c.ny))
                fail_msg("%s %s %dx%dx%d -> %d groups %d: int8-stored output differs from the reference on %s (%s)",
                         kind ? "packed" : "plain", dense ? "dense" : "conv", p.h, p.w, p.c, p.oc, p.groups,
                         isas[i], axrt_q8_isa_name());
        }
    }
    axrt_set_isa(NULL);
    free(ref); free(want); free(got); free(patch); free(packed);
    free_case(&c);
}

static void test_q8_out(void **state)
{
    (void)state;
    /* n h w c oh ow oc kh kw sh sw dh dw pt pl groups */
    check_q8_out((axrt_conv2d_params){1, 9, 7, 64, 9, 7, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1}, false);  /* taps in place */
    check_q8_out((axrt_conv2d_params){2, 7, 7, 12, 3, 3, 33, 3, 3, 2, 2, 2, 2, 1, 1, 1}, false);
    check_q8_out((axrt_conv2d_params){1, 11, 10, 3, 6, 5, 17, 5, 5, 2, 2, 1, 1, 2, 2, 1}, false); /* gathered */
    check_q8_out((axrt_conv2d_params){1, 6, 6, 24, 6, 6, 24, 3, 3, 1, 1, 1, 1, 1, 1, 24}, false); /* depthwise */
    check_q8_out((axrt_conv2d_params){1, 6, 6, 32, 3, 3, 16, 3, 3, 2, 2, 1, 1, 1, 1, 4}, false);  /* grouped */
    check_q8_out((axrt_conv2d_params){7, 1, 1, 65, 1, 1, 131, 1, 1, 1, 1, 1, 1, 0, 0, 1}, true);
    check_q8_out((axrt_conv2d_params){3, 1, 1, 784, 1, 1, 10, 1, 1, 1, 1, 1, 1, 0, 0, 1}, true);
}

/* The int8 max-pool against the float one on the dequantised values,
 * quantised again with the same parameters (padded, strided, overlapping,
 * ceil-mode windows that hang over the edge). */
static void test_maxpool_u8(void **state)
{
    (void)state;
    /* n h w c oh ow kh kw sh sw pt pl pb pr */
    const axrt_pool2d_params cases[] = {{1, 8, 8, 6, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0},
                                        {2, 7, 5, 33, 4, 3, 3, 3, 2, 2, 1, 1, 1, 1},
                                        {1, 5, 5, 3, 3, 3, 2, 2, 2, 2, 0, 0, 1, 1},
                                        {1, 6, 6, 16, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1}};
    const float scale = 0.05f;
    const int32_t zp = -9;
    for (int k = 0; k < 4; k++) {
        const axrt_pool2d_params *p = &cases[k];
        const size_t nx = (size_t)p->n * p->h * p->w * p->c, ny = (size_t)p->n * p->oh * p->ow * p->c;
        uint8_t *x = malloc(nx), *got = malloc(ny), *want = malloc(ny);
        float *fx = malloc(sizeof(float) * nx), *fy = malloc(sizeof(float) * ny);
        for (size_t i = 0; i < nx; i++) {
            x[i] = (uint8_t)next_random();
            fx[i] = (float)((int32_t)x[i] - 128 - zp) * scale;
        }
        axrt_maxpool_f32(fx, fy, p);
        axrt_quantize_u8(fy, want, ny, scale, zp);
        axrt_maxpool_u8(x, got, p);
        if (memcmp(got, want, ny))
            fail_msg("int8 max-pool case %d differs from the float one's integers", k);
        free(x); free(got); free(want); free(fx); free(fy);
    }
}

/* The dot product the float ISA names is the one used. */
/* m = mult / 2^shift, mult in [2^30, 2^31) (0 < m < 2^30) */
static void q31(double m, int32_t *mult, int32_t *shift)
{
    int e;
    const double frac = frexp(m, &e);
    int64_t q = llround(frac * 2147483648.0);
    if (q == (int64_t)1 << 31) { q >>= 1; e++; }
    *mult = (int32_t)q;
    *shift = 31 - e;
}

/* axrt_add_q8 against the exact sum of the dequantised operands: within
 * half an output LSB (plus the 2^-20 of the fixed point) wherever the
 * result is not clamped; the bytes the float result dequantises. */
static void test_add_q8(void **state)
{
    (void)state;
    const double sa = 0.031, sb = 0.0123, so = 0.045;
    axrt_ew_q8 p = {{-7, 19}, {0, 0}, {0, 0}, 20, 0, 0, 3, -128, 127, (float)so, 1};
    q31(sa / (2 * sa), &p.mult[0], &p.shift[0]);
    q31(sb / (2 * sa), &p.mult[1], &p.shift[1]);
    q31(2 * sa / (1048576.0 * so), &p.out_mult, &p.out_shift);
    uint8_t a[1024], b[1024], y[1024], direct[256];
    float f[1024];
    for (int i = 0; i < 1024; i++) { a[i] = (uint8_t)i; b[i] = (uint8_t)(next_random() & 255); }
    axrt_add_q8(a, b, y, 1024, &p);     /* through the byte tables */
    axrt_add_q8(a, b, direct, 256, &p); /* without */
    assert_memory_equal(y, direct, 256);
    p.flags = 0;
    axrt_add_q8(a, b, f, 1024, &p);
    for (int i = 0; i < 1024; i++) {
        const double exact = 3 + ((a[i] - 128 + 7) * sa + (b[i] - 128 - 19) * sb) / so;
        const int q = y[i] - 128;
        if (exact > -128 && exact < 127)
            assert_true(fabs(q - exact) <= 0.5 + 1e-4);
        else
            assert_int_equal(q, exact <= -128 ? -128 : 127);
        assert_true(f[i] == (float)(q - 3) * (float)so);
    }
}

/* axrt_rescale_q8: the identity copies every byte (a ReLU's clamp keeps
 * those at or above the zero point), and a concat's part lands at its
 * offset of each row, the other bytes untouched. */
static void test_rescale_q8(void **state)
{
    (void)state;
    axrt_ew_q8 p = {{-20, 0}, {1 << 30, 0}, {30, 0}, 0, 0, 0, -20, -128, 127, 0.5f, 1};
    uint8_t x[1024], y[1024];
    for (int i = 0; i < 1024; i++) x[i] = (uint8_t)i;
    for (size_t n = 256; n <= 1024; n += 768) {   /* without and with the byte table */
        p.lo = -128;
        axrt_rescale_q8(x, y, 1, n, n, 0, &p);
        assert_memory_equal(x, y, n);
        p.lo = -20;   /* ReLU: the clamp at the zero point */
        axrt_rescale_q8(x, y, 1, n, n, 0, &p);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(y[i], x[i] < 108 ? 108 : x[i]);
    }
    uint8_t part[6] = {1, 2, 3, 4, 5, 6}, rows[15];
    memset(rows, 0xee, sizeof rows);
    p.lo = -128;
    axrt_rescale_q8(part, rows, 3, 2, 5, 1, &p);
    const uint8_t want[15] = {0xee, 1, 2, 0xee, 0xee, 0xee, 3, 4, 0xee, 0xee, 0xee, 5, 6, 0xee, 0xee};
    assert_memory_equal(rows, want, 15);
}

/* A random elementwise case: operand scalings below 1 (|v_k| < 2^28, as
 * axc's), the output's anywhere from tiny to far past the clamp, the
 * multipliers' extremes (0, 1, -1, INT32_MIN, INT32_MAX) among them. */
static int32_t random_mult(void)
{
    static const int32_t edges[] = {0, 1, -1, INT32_MIN, INT32_MAX, 1 << 30};
    const uint32_t r = next_random();
    if (r % 8 == 0) return edges[(r >> 3) % 6];
    return (int32_t)((1u << 30) + next_random() % (1u << 30)) * (r % 8 == 1 ? -1 : 1);
}

static axrt_ew_q8 random_ew(void)
{
    axrt_ew_q8 p;
    memset(&p, 0, sizeof p);
    for (int k = 0; k < 2; k++) {
        p.zp[k] = (int32_t)(next_random() % 256) - 128;
        p.mult[k] = random_mult();
        p.shift[k] = 31 + (int32_t)(next_random() % 32);
    }
    p.left = (int32_t)(next_random() % 21);
    p.out_mult = random_mult();
    p.out_shift = 1 + (int32_t)(next_random() % 62);
    p.out_zp = (int32_t)(next_random() % 256) - 128;
    p.lo = -128 + (int32_t)(next_random() % 64);
    p.hi = 127 - (int32_t)(next_random() % 64);
    p.scale = (float)(next_random() % 1000 + 1) * 1.7e-4f;
    p.flags = (int32_t)(next_random() & 1);
    return p;
}

/* axrt_add_q8 and axrt_rescale_q8 on every instruction set against the
 * portable C's, bit for bit: random bytes (0 and 255 among them), lengths
 * around the vector widths and past the byte tables' threshold, a concat's
 * strided rows, in place. */
static void test_ew_isas(void **state)
{
    (void)state;
    enum { N = 1100 };
    static const size_t lens[] = {1, 7, 8, 15, 16, 17, 31, 33, 100, 511, 512, 1099};
    uint8_t a[N], b[N];
    float want[6 * N], got[6 * N];   /* add, rescale, and the strided rows (at most 4 n) */
    for (int round = 0; round < 200; round++) {
        const axrt_ew_q8 p = random_ew();
        const size_t n = lens[round % 12], bytes = n * (p.flags ? 1 : sizeof(float));
        for (size_t i = 0; i < n; i++) {
            const uint32_t r = next_random();
            a[i] = r % 16 == 0 ? 0 : r % 16 == 1 ? 255 : (uint8_t)(r >> 4);
            b[i] = r % 16 == 2 ? 0 : r % 16 == 3 ? 255 : (uint8_t)(r >> 12);
        }
        const size_t row = n % 7 + 1, outer = n / row, ld = row + 3, off = row % 3;
        for (int i = 0; i < 3; i++) {
            if (axrt_set_isa(isas[i]) != 0) continue;
            float *out = i == 0 ? want : got;
            memset(out, 0xa5, sizeof want);
            axrt_add_q8(a, b, out, n, &p);
            axrt_rescale_q8(a, (unsigned char *)out + bytes, 1, n, n, 0, &p);
            axrt_rescale_q8(b, (unsigned char *)out + 2 * bytes, outer, row, ld, off, &p);
            if (i > 0 && memcmp(got, want, sizeof want))
                fail_msg("int8 add/rescale round %d (n %zu, flags %d) differs from the portable C on %s", round, n,
                         p.flags, isas[i]);
            if (p.flags) {   /* in place: y == a */
                uint8_t inplace[N];
                memcpy(inplace, a, n);
                axrt_add_q8(inplace, b, inplace, n, &p);
                if (memcmp(inplace, want, n))
                    fail_msg("int8 add in place, round %d, differs on %s", round, isas[i]);
            }
        }
        axrt_set_isa(NULL);
    }
}

/* axrt_mean_q8 as a global mean-pool ([n, h w, c]) against the sum and
 * requantisation written here: channel counts around its 64-wide blocks,
 * batch 2, bytes and floats. */
static void test_globalmeanpool_q8(void **state)
{
    (void)state;
    static const size_t cs[] = {1, 63, 64, 65, 150};
    for (size_t t = 0; t < sizeof cs / sizeof cs[0]; t++) {
        const size_t c = cs[t], hw = 7 + t * 11, n = 2;
        axrt_ew_q8 p = {{-9 + (int32_t)t, 0}, {0, 0}, {0, 0}, 0, 0, 0, 4, -128, 127, 0.02f, 1};
        q31(0.05 / (hw * 0.02), &p.mult[0], &p.shift[0]);
        uint8_t *x = malloc(n * hw * c), *y = malloc(n * c);
        float *f = malloc(sizeof(float) * n * c);
        for (size_t i = 0; i < n * hw * c; i++) x[i] = (uint8_t)next_random();
        axrt_mean_q8(x, y, n, hw, c, &p);
        p.flags = 0;
        axrt_mean_q8(x, f, n, hw, c, &p);
        for (size_t b = 0; b < n; b++)
            for (size_t k = 0; k < c; k++) {
                int32_t sum = 0;
                for (size_t i = 0; i < hw; i++) sum += x[(b * hw + i) * c + k] - 128 - p.zp[0];
                int32_t q = p.out_zp + reference_requantize(sum, p.mult[0], p.shift[0]);
                q = q < -128 ? -128 : q > 127 ? 127 : q;
                assert_int_equal(y[b * c + k], q + 128);
                assert_true(f[b * c + k] == (float)(q - p.out_zp) * p.scale);
            }
        free(x); free(y); free(f);
    }
}

/* axrt_mean_q8 over the middle axis of [outer, axis, inner] (inner 1: a
 * mean over the channels) against the sum written here. */
static void test_mean_q8(void **state)
{
    (void)state;
    enum { OUTER = 6, AXIS = 13, INNER = 1 };
    uint8_t x[OUTER * AXIS * INNER], y[OUTER * INNER];
    axrt_ew_q8 p = {{5, 0}, {0, 0}, {0, 0}, 0, 0, 0, -7, -128, 127, 0.03f, 1};
    q31(0.04 / (AXIS * 0.03), &p.mult[0], &p.shift[0]);
    for (size_t i = 0; i < sizeof x; i++) x[i] = (uint8_t)next_random();
    axrt_mean_q8(x, y, OUTER, AXIS, INNER, &p);
    for (int o = 0; o < OUTER; o++) {
        int32_t sum = 0;
        for (int i = 0; i < AXIS; i++) sum += x[o * AXIS + i] - 128 - p.zp[0];
        int32_t q = p.out_zp + reference_requantize(sum, p.mult[0], p.shift[0]);
        assert_int_equal(y[o], (q < -128 ? -128 : q > 127 ? 127 : q) + 128);
    }
}

/* The divisor of an output window, counted position by position: those in
 * [0, size) or, counting padding, in [-pad_before, size + pad_after). */
static int counted_positions(int start, int k, int size, int pad_before, int pad_after, bool count_pad)
{
    int count = 0;
    for (int i = start; i < start + k; i++)
        count += count_pad ? i >= -pad_before && i < size + pad_after : i >= 0 && i < size;
    return count;
}

/* One axrt_meanpool_q8 case against the window sums and divisors written
 * here, each divisor's multiplier from q31. */
static void check_meanpool_q8(axrt_pool2d_params p, int div_bottom, int div_right, bool count_pad)
{
    const size_t nx = (size_t)(p.n * p.h * p.w * p.c), ny = (size_t)(p.n * p.oh * p.ow * p.c);
    uint8_t *x = malloc(nx), *y = malloc(ny);
    int32_t window[5 + 2 * 64] = {div_bottom, div_right, count_pad, 1, 64};
    axrt_ew_q8 e = {{-3, 0}, {0, 0}, {0, 0}, 0, 0, 0, 11, -128, 127, 0.02f, 1};
    for (int d = 1; d <= 64; d++) q31(0.05 / (d * 0.02), &window[5 + 2 * (d - 1)], &window[6 + 2 * (d - 1)]);
    for (size_t i = 0; i < nx; i++) x[i] = (uint8_t)next_random();
    axrt_meanpool_q8(x, y, &p, window, &e);
    for (size_t i = 0; i < ny; i++) {
        const int k = (int)(i % (size_t)p.c), ox = (int)(i / (size_t)p.c % (size_t)p.ow);
        const int oy = (int)(i / (size_t)(p.c * p.ow) % (size_t)p.oh), n = (int)(i / (size_t)(p.c * p.ow * p.oh));
        const int y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left;
        const int d = counted_positions(y0, p.kh, p.h, p.pad_top, div_bottom, count_pad) *
                      counted_positions(x0, p.kw, p.w, p.pad_left, div_right, count_pad);
        int32_t sum = 0;
        for (int iy = y0; iy < y0 + p.kh; iy++)
            for (int ix = x0; ix < x0 + p.kw; ix++)
                if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w)
                    sum += x[(((size_t)n * p.h + iy) * p.w + ix) * p.c + k] - 128 - e.zp[0];
        int32_t q = e.out_zp + reference_requantize(sum, window[5 + 2 * (d - 1)], window[6 + 2 * (d - 1)]);
        q = q < -128 ? -128 : q > 127 ? 127 : q;
        if (y[i] != q + 128)
            fail_msg("int8 mean-pool %dx%d stride %d pad %d: output %zu is %d, want %d (divisor %d)", p.kh, p.kw,
                     p.stride_h, p.pad_top, i, y[i] - 128, q, d);
    }
    free(x); free(y);
}

/* Padding counted or not, ceil mode's extra row and column (past the
 * padding that counts), channel counts around the 64-wide blocks. */
static void test_meanpool_q8(void **state)
{
    (void)state;
    /* n h w c oh ow kh kw sh sw top left bottom right */
    check_meanpool_q8((axrt_pool2d_params){2, 8, 8, 5, 5, 5, 3, 3, 2, 2, 1, 1, 2, 2}, 1, 1, false);
    check_meanpool_q8((axrt_pool2d_params){2, 8, 8, 5, 5, 5, 3, 3, 2, 2, 1, 1, 2, 2}, 1, 1, true);
    check_meanpool_q8((axrt_pool2d_params){1, 5, 7, 70, 3, 4, 2, 2, 2, 2, 0, 0, 1, 1}, 0, 1, true);
    check_meanpool_q8((axrt_pool2d_params){1, 6, 6, 64, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1}, 1, 1, true);
    check_meanpool_q8((axrt_pool2d_params){1, 6, 6, 3, 2, 2, 3, 3, 3, 3, 0, 0, 0, 0}, 0, 0, true);
}

/* axrt_add_bcast_q8 on every instruction set against axrt_add_q8 on the
 * operands broadcast here: along the leading dims (the last contiguous:
 * the instruction set's add per row), along the last dim (element by
 * element), both ways at once; bytes and floats, past the tables' threshold. */
static void test_add_bcast_q8(void **state)
{
    (void)state;
    static const int64_t shape[4] = {2, 3, 5, 17};
    static const int64_t b_dims[][4] = {{1, 1, 1, 17}, {2, 3, 5, 1}, {1, 3, 1, 17}, {2, 1, 5, 1}, {2, 3, 5, 17}};
    enum { N = 2 * 3 * 5 * 17 };
    uint8_t a[N], b[N], wide[N];
    float want[N], got[N];
    for (size_t t = 0; t < sizeof b_dims / sizeof b_dims[0]; t++)
        for (int q8 = 0; q8 < 2; q8++) {
            axrt_ew_q8 p = random_ew();
            p.flags = q8;
            int64_t a_strides[4] = {255, 85, 17, 1}, b_strides[4], stride = 1;
            for (int d = 3; d >= 0; d--) {
                b_strides[d] = b_dims[t][d] == 1 ? 0 : stride;
                stride *= b_dims[t][d];
            }
            for (size_t i = 0; i < N; i++) a[i] = (uint8_t)next_random(), b[i] = (uint8_t)next_random();
            for (size_t i = 0; i < N; i++) {   /* b broadcast to the full shape */
                const size_t at[4] = {i / 255, i / 85 % 3, i / 17 % 5, i % 17};
                wide[i] = b[at[0] * b_strides[0] + at[1] * b_strides[1] + at[2] * b_strides[2] + at[3] * b_strides[3]];
            }
            axrt_set_isa("portable");
            axrt_add_q8(a, wide, want, N, &p);
            for (int i = 0; i < 3; i++) {
                if (axrt_set_isa(isas[i]) != 0) continue;
                memset(got, 0xa5, sizeof got);
                axrt_add_bcast_q8(a, a_strides, b, b_strides, got, shape, 4, &p);
                if (memcmp(got, want, q8 ? N : sizeof want))
                    fail_msg("int8 broadcasting add, b dims case %zu (flags %d), differs on %s", t, q8, isas[i]);
            }
            axrt_set_isa(NULL);
        }
}

/* axrt_gather_u8 as a transpose (perm 2, 0, 1 of [3, 4, 5]) and a slice. */
static void test_gather_u8(void **state)
{
    (void)state;
    uint8_t x[60], y[60];
    for (int i = 0; i < 60; i++) x[i] = (uint8_t)(i * 7);
    static const int64_t t_shape[3] = {5, 3, 4}, t_strides[3] = {1, 20, 5};
    axrt_gather_u8(x, y, t_shape, t_strides, 0, 3);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                assert_int_equal(y[(i * 3 + j) * 4 + k], x[(j * 4 + k) * 5 + i]);
    static const int64_t s_shape[2] = {2, 3}, s_strides[2] = {20, 2};
    axrt_gather_u8(x, y, s_shape, s_strides, 25, 2);   /* x[1:3, 1, 0:5:2] of [3, 4, 5] */
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++)
            assert_int_equal(y[i * 3 + k], x[(1 + i) * 20 + 5 + 2 * k]);
}

static void test_dispatch(void **state)
{
    (void)state;
    assert_int_equal(axrt_set_isa("portable"), 0);
    assert_string_equal(axrt_q8_isa_name(), "portable");
    if (axrt_set_isa("avx2") == 0)
        assert_string_equal(axrt_q8_isa_name(), "avx2");
    if (axrt_set_isa("avx512") == 0) {
        const char *name = axrt_q8_isa_name();
        print_message("  avx512 float kernels use the int8 dot '%s'\n", name);
        assert_true(!strcmp(name, "avx512vnni") || !strcmp(name, "avx2"));
    }
    axrt_set_isa(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requantize),
        cmocka_unit_test(test_quantize),
        cmocka_unit_test(test_quantize_isas),
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_float_out),
        cmocka_unit_test(test_q8_out),
        cmocka_unit_test(test_maxpool_u8),
        cmocka_unit_test(test_add_q8),
        cmocka_unit_test(test_rescale_q8),
        cmocka_unit_test(test_ew_isas),
        cmocka_unit_test(test_globalmeanpool_q8),
        cmocka_unit_test(test_mean_q8),
        cmocka_unit_test(test_meanpool_q8),
        cmocka_unit_test(test_add_bcast_q8),
        cmocka_unit_test(test_gather_u8),
        cmocka_unit_test(test_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
