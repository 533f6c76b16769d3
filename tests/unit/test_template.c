/* test_template.c — the kernel template (runtime/axrt_kernels.inc) takes a
 * storage type T and an accumulation type ACC.  Here it is instantiated a
 * third time, under the prefix tbf16_, for bfloat16 storage (the bits in a
 * uint16_t) with float accumulation: LOAD widens bf16 to float, STORE rounds
 * float to bf16 to nearest, ties to even.  The bf16 kernels are checked
 * against libaxrt's float kernels run on the same bf16-representable inputs:
 * every output may differ from the float one only by the single rounding of
 * STORE (half a bf16 ulp: 2^-8 relative at most), which holds only if the
 * intermediates (dot products, means, variances, softmax sums) stay in
 * float.  A long all-ones dot product makes that visible: accumulated in
 * bf16 it would stall at 256. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "axrt.h"
#include "axrt_unary.h"

/* ---- the bf16 <-> float conversions --------------------------------------- */

static float bf16_to_f32(uint16_t b)
{
    const uint32_t bits = (uint32_t)b << 16;
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* Round to nearest, ties to even; NaN stays a (quiet) NaN. */
static uint16_t f32_to_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (f != f) return (uint16_t)((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

/* The template's cast kernel names these two (axrt.c has them static):
 * route them through libaxrt's exported float cast. */
static float axrt_half_to_float(uint16_t h)
{
    float f;
    axrt_cast_f32(&h, AXRT_F16, &f, 1);
    return f;
}

static float axrt_bf16_to_float(uint16_t b)
{
    float f;
    axrt_cast_f32(&b, AXRT_BF16, &f, 1);
    return f;
}

/* ---- the third instantiation ---------------------------------------------- */

#define AXRT_CAT2(a, b) a##b
#define AXRT_CAT(a, b) AXRT_CAT2(a, b)
#define T uint16_t
#define ACC float
#define LOAD(v) bf16_to_f32(v)
#define STORE(v) f32_to_bf16(v)
#define FN(name) AXRT_CAT(tbf16_, name)
#define FN_D(name) FN(name)
#define MATH_EXP expf
#define MATH_LOG logf
#define MATH_SQRT sqrtf
#define MATH_TANH tanhf
#define MATH_ERF erff
#define MATH_EXPM1 expm1f
#define MATH_LOG1P log1pf
#define MATH_FABS fabsf
#define MATH_FN(name) name##f
#include "axrt_kernels.inc"

/* ---- helpers --------------------------------------------------------------- */

/* n pseudo-random bf16 values in [-scale, scale], and the same as floats. */
static void random_bf16(uint16_t *b, float *f, size_t n, float scale, uint32_t seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        b[i] = f32_to_bf16(scale * ((float)(seed >> 8) / 8388608.0f - 1.0f));
        f[i] = bf16_to_f32(b[i]);
    }
}

/* Each bf16 output within half a bf16 ulp, 2^-8 relative (plus 1e-5 for the float path's own rounding)
 * of the float kernel's output. */
static void expect_close(const char *what, const uint16_t *got, const float *want, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const float g = bf16_to_f32(got[i]);
        const float tol = ldexpf(fabsf(want[i]), -8) + 1e-5f;
        if (!(fabsf(g - want[i]) <= tol))
            fail_msg("%s[%zu]: bf16 kernel %.9g, float kernel %.9g", what, i, (double)g,
                     (double)want[i]);
    }
}

/* ---- tests ----------------------------------------------------------------- */

static void test_conversions(void **state)
{
    (void)state;
    assert_int_equal(f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(f32_to_bf16(bf16_to_f32(0x3f81)), 0x3f81);
    /* 1 + 2^-8 is the tie between 0x3f80 and 0x3f81: to even, 0x3f80 */
    assert_int_equal(f32_to_bf16(1.0f + ldexpf(1.0f, -8)), 0x3f80);
    assert_int_equal(f32_to_bf16(1.0f + 3 * ldexpf(1.0f, -8)), 0x3f82);
    assert_true(isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

static void test_dense(void **state)
{
    enum { ROWS = 3, IN = 37, OUT = 5 };
    uint16_t xb[ROWS * IN], wb[OUT * IN], bb[OUT], yb[ROWS * OUT];
    float xf[ROWS * IN], wf[OUT * IN], bf[OUT], yf[ROWS * OUT];
    (void)state;
    random_bf16(xb, xf, ROWS * IN, 2.0f, 1);
    random_bf16(wb, wf, OUT * IN, 0.5f, 2);
    random_bf16(bb, bf, OUT, 1.0f, 3);
    tbf16_dense(xb, wb, bb, yb, ROWS, IN, OUT);
    axrt_dense_f32(xf, wf, bf, yf, ROWS, IN, OUT);
    expect_close("dense", yb, yf, ROWS * OUT);
}

/* 1000 ones summed: 1000 in float (and in bf16, which holds it), 256 if the
 * running sum were rounded to bf16 at each step. */
static void test_dense_accumulates_in_float(void **state)
{
    enum { IN = 1000 };
    uint16_t x[IN], w[IN], y[1];
    size_t i;
    (void)state;
    for (i = 0; i < IN; i++) x[i] = w[i] = f32_to_bf16(1.0f);
    tbf16_dense(x, w, NULL, y, 1, IN, 1);
    assert_true(bf16_to_f32(y[0]) == 1000.0f);
}

static void test_layernorm(void **state)
{
    enum { ROWS = 4, D = 24 };
    uint16_t xb[ROWS * D], wb[D], bb[D], yb[ROWS * D];
    float xf[ROWS * D], wf[D], bf[D], yf[ROWS * D];
    (void)state;
    random_bf16(xb, xf, ROWS * D, 3.0f, 4);
    random_bf16(wb, wf, D, 1.5f, 5);
    random_bf16(bb, bf, D, 0.5f, 6);
    tbf16_layernorm(xb, wb, bb, yb, ROWS, D, f32_to_bf16(1e-5f));
    axrt_layernorm_f32(xf, wf, bf, yf, ROWS, D, bf16_to_f32(f32_to_bf16(1e-5f)));
    expect_close("layernorm", yb, yf, ROWS * D);
}

static void test_softmax(void **state)
{
    enum { OUTER = 2, AXIS = 9, INNER = 3, N = OUTER * AXIS * INNER };
    uint16_t xb[N], yb[N];
    float xf[N], yf[N];
    (void)state;
    random_bf16(xb, xf, N, 6.0f, 7);
    tbf16_softmax(xb, yb, OUTER, AXIS, INNER);
    axrt_softmax_f32(xf, yf, OUTER, AXIS, INNER);
    expect_close("softmax", yb, yf, N);
}

static void test_unary(void **state)
{
    enum { N = 64 };
    uint16_t xb[N], yb[N];
    float xf[N], yf[N];
    (void)state;
    random_bf16(xb, xf, N, 4.0f, 8);
    tbf16_gelu(xb, yb, N);
    axrt_gelu_f32(xf, yf, N);
    expect_close("gelu", yb, yf, N);
    tbf16_sigmoid(xb, yb, N);
    axrt_sigmoid_f32(xf, yf, N);
    expect_close("sigmoid", yb, yf, N);
    tbf16_relu(xb, yb, N);
    axrt_relu_f32(xf, yf, N);
    expect_close("relu", yb, yf, N);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_dense_accumulates_in_float),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_unary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
