/* test_half.c — libaxrt's Float16/BFloat16 kernels (axrt.h _f16, _bf16).
 *
 * Conversions: every binary16 and bfloat16 value widens and narrows back to
 * itself; float -> half rounds to nearest, ties to even (checked against
 * the compiler's _Float16 where it has one, and at every midpoint between
 * neighbouring values), overflows to infinity, keeps NaN a NaN.
 * Dense: on every instruction set this CPU runs (axrt_set_isa: portable C,
 * AVX2+F16C, AVX-512 with vdpbf16ps where present), for awkward sizes, each
 * output equals the exactly computed dot product of the stored inputs
 * rounded once, up to the float accumulation error (K * 2^-24 * sum |x w|)
 * plus one rounding.  Accumulation: all-ones reductions of length 4096 give
 * 4096 exactly; accumulated in the storage type they would stall at 2048
 * (binary16) or 256 (bfloat16). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "axrt.h"

static float f16_to_f32(uint16_t h)
{
    float f;
    axrt_cast_f32(&h, AXRT_F16, &f, 1);
    return f;
}

static float bf16_to_f32(uint16_t h)
{
    float f;
    axrt_cast_f32(&h, AXRT_BF16, &f, 1);
    return f;
}

static uint16_t to_f16(float f)
{
    uint16_t h;
    axrt_cast_f16(&f, AXRT_F32, &h, 1);
    return h;
}

static uint16_t to_bf16(float f)
{
    uint16_t h;
    axrt_cast_bf16(&f, AXRT_F32, &h, 1);
    return h;
}

static int is_nan_f16(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu); }
static int is_nan_bf16(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu); }

static void test_round_trip(void **state)
{
    (void)state;
    for (uint32_t v = 0; v < 65536; v++) {
        const uint16_t h = (uint16_t)v;
        if (is_nan_f16(h))
            assert_true(is_nan_f16(to_f16(f16_to_f32(h))));
        else
            assert_int_equal(to_f16(f16_to_f32(h)), h);
        if (is_nan_bf16(h))
            assert_true(is_nan_bf16(to_bf16(bf16_to_f32(h))));
        else
            assert_int_equal(to_bf16(bf16_to_f32(h)), h);
    }
}

/* The midpoint between h and its successor (same sign, both finite) rounds
 * to whichever of the two is even. */
static void test_ties_to_even(void **state)
{
    (void)state;
    for (uint32_t v = 0; v < 0x7bffu; v++) {
        const float lo = f16_to_f32((uint16_t)v), hi = f16_to_f32((uint16_t)(v + 1));
        const float mid = (float)(((double)lo + (double)hi) / 2); /* exact in float */
        assert_int_equal(to_f16(mid), (v & 1) ? v + 1 : v);
        assert_int_equal(to_f16(-mid), 0x8000u | ((v & 1) ? v + 1 : v));
        assert_int_equal(to_f16(nextafterf(mid, 0.0f)), v);
        assert_int_equal(to_f16(nextafterf(mid, INFINITY)), v + 1);
    }
    for (uint32_t v = 0; v < 0x7f7fu; v++) {
        const float lo = bf16_to_f32((uint16_t)v), hi = bf16_to_f32((uint16_t)(v + 1));
        const float mid = (float)(((double)lo + (double)hi) / 2);
        assert_int_equal(to_bf16(mid), (v & 1) ? v + 1 : v);
    }
    assert_int_equal(to_f16(65519.0f), 0x7bffu);  /* below the midpoint to 65536 */
    assert_int_equal(to_f16(65520.0f), 0x7c00u);  /* the midpoint: to even = infinity */
    assert_int_equal(to_f16(1e30f), 0x7c00u);
    assert_int_equal(to_f16(-INFINITY), 0xfc00u);
    assert_true(is_nan_f16(to_f16(NAN)));
    assert_true(is_nan_bf16(to_bf16(NAN)));
    assert_int_equal(to_bf16(3.4e38f), 0x7f80u);  /* above bfloat16's largest: infinity */
#ifdef __FLT16_MAX__
    for (uint32_t bits = 0; bits < 0x7f800000u; bits += 0x1357u) {
        float f;
        memcpy(&f, &bits, sizeof f);
        _Float16 want = (_Float16)f;
        uint16_t want_bits;
        memcpy(&want_bits, &want, sizeof want_bits);
        assert_int_equal(to_f16(f), want_bits);
    }
#endif
}

typedef void dense_fn(const uint16_t *, const uint16_t *, const uint16_t *, uint16_t *, size_t,
                      size_t, size_t);

/* Deterministic values in [-2, 2), stored in the format. */
static void fill(uint16_t *v, size_t n, uint32_t seed, uint16_t (*narrow)(float))
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = narrow((float)(seed >> 8) / (float)(1u << 24) * 4.0f - 2.0f);
    }
}

static void check_dense(dense_fn *dense, float (*widen)(uint16_t), uint16_t (*narrow)(float),
                        double unit, const char *isa)
{
    static const size_t ins[] = {1, 7, 16, 33, 64, 100, 784};
    static const size_t outs[] = {1, 3, 4, 17};
    static uint16_t x[3 * 784], w[17 * 784], bias[17], y[3 * 17];
    for (size_t a = 0; a < sizeof ins / sizeof ins[0]; a++)
        for (size_t b = 0; b < sizeof outs / sizeof outs[0]; b++) {
            const size_t in = ins[a], out = outs[b], rows = 3;
            fill(x, rows * in, 1u + (uint32_t)in, narrow);
            fill(w, out * in, 7u + (uint32_t)out, narrow);
            fill(bias, out, 11u, narrow);
            dense(x, w, b % 2 ? bias : NULL, y, rows, in, out);
            for (size_t r = 0; r < rows; r++)
                for (size_t o = 0; o < out; o++) {
                    double exact = b % 2 ? widen(bias[o]) : 0.0, magnitude = fabs(exact);
                    for (size_t k = 0; k < in; k++) {
                        const double p = (double)widen(x[r * in + k]) * widen(w[o * in + k]);
                        exact += p;
                        magnitude += fabs(p);
                    }
                    const double got = widen(y[r * out + o]);
                    const double bound = fabs(exact) * unit + (double)(in + 1) * 0x1p-24 * magnitude * (1 + unit);
                    if (!(fabs(got - exact) <= bound + 1e-30))
                        fail_msg("%s: in %zu out %zu row %zu col %zu: %.9g, exact %.9g", isa, in, out, r, o,
                                 got, exact);
                }
        }
}

static void test_dense_every_isa(void **state)
{
    (void)state;
    static const char *const isas[] = {"portable", "avx2", "avx512"};
    int ran = 0;
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (axrt_set_isa(isas[i]) != 0)
            continue; /* this CPU lacks it */
        ran++;
        const char *path = axrt_half_isa_name();
        print_message("  half dense path with AXRT_ISA=%s: %s\n", isas[i], path);
        if (i == 0)
            assert_string_equal(path, "portable");
        check_dense(axrt_dense_f16, f16_to_f32, to_f16, 0x1p-11, path);
        check_dense(axrt_dense_bf16, bf16_to_f32, to_bf16, 0x1p-8, path);
    }
    axrt_set_isa(NULL);
    assert_true(ran >= 1);
}

/* Long reductions of ones: exact only if accumulated in float. */
static void test_float_accumulation(void **state)
{
    (void)state;
    enum { K = 4096 };
    static uint16_t ones[K], y[4];
    uint16_t one16 = to_f16(1.0f), onebf = to_bf16(1.0f);
    for (int pass = 0; pass < 2; pass++) {
        const uint16_t one = pass ? onebf : one16;
        float (*widen)(uint16_t) = pass ? bf16_to_f32 : f16_to_f32;
        for (int k = 0; k < K; k++) ones[k] = one;
        if (pass) axrt_sum_bf16(ones, y, 1, K, 1); else axrt_sum_f16(ones, y, 1, K, 1);
        assert_true(widen(y[0]) == 4096.0f);
        if (pass) axrt_dense_bf16(ones, ones, NULL, y, 1, K, 1); else axrt_dense_f16(ones, ones, NULL, y, 1, K, 1);
        assert_true(widen(y[0]) == 4096.0f);
        if (pass)
            axrt_matmul_bf16(ones, NULL, ones, NULL, y, NULL, 0, 1, K, 1);
        else
            axrt_matmul_f16(ones, NULL, ones, NULL, y, NULL, 0, 1, K, 1);
        assert_true(widen(y[0]) == 4096.0f);
        if (pass) axrt_mean_bf16(ones, y, 1, K, 1); else axrt_mean_f16(ones, y, 1, K, 1);
        assert_true(widen(y[0]) == 1.0f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_ties_to_even),
        cmocka_unit_test(test_dense_every_isa),
        cmocka_unit_test(test_float_accumulation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
