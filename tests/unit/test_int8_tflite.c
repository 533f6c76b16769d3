/* test_int8_tflite.c — TensorFlow Lite's requantisation in libaxrt
 * (axrt.h: axrt_fixed_high_mul, axrt_fixed_divide_pot,
 * axrt_requantize_tflite, AXRT_Q8_TFLITE).  The two gemmlowp primitives
 * against references written here from their definitions in gemmlowp's
 * fixedpoint.h, in plain 64-bit arithmetic (the nudged product divided with
 * C's truncation; the quotient by 2^e rounded half away from zero from a
 * truncating division and its remainder), on random operands and on the
 * edges: the one saturating product, halves of either sign, exponents 0
 * and 31, INT32_MIN and INT32_MAX.  A case where TFLite's two roundings and
 * axc's one give different integers (the reason for the mode).  Then the
 * dense and conv epilogues and the elementwise add and rescale with
 * AXRT_Q8_TFLITE on every instruction set this CPU has against the
 * reference, multipliers below and above 1 (left shifts), TFLite's int8
 * MUL (AXRT_Q8_MUL), and the integer AveragePool of a windowed mean-pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "axrt.h"

/* gemmlowp SaturatingRoundingDoublingHighMul, as written there. */
static int32_t reference_high_mul(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN) return INT32_MAX;
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    return (int32_t)((ab + nudge) / (INT64_C(1) << 31));
}

/* gemmlowp RoundingDivideByPOT: x / 2^e rounded to nearest, halves away from zero. */
static int32_t reference_divide_pot(int32_t x, int e)
{
    const int64_t d = INT64_C(1) << e;
    int64_t q = (int64_t)x / d;
    const int64_t r = (int64_t)x % d;
    if (2 * (r < 0 ? -r : r) >= d) q += x < 0 ? -1 : 1;
    return (int32_t)q;
}

/* TFLite's MultiplyByQuantizedMultiplier(x, mult, 31 - shift). */
static int32_t reference_requantize(int32_t x, int32_t mult, int shift)
{
    const int exponent = 31 - shift;
    const int left = exponent > 0 ? exponent : 0, right = exponent > 0 ? 0 : -exponent;
    const int32_t shifted = (int32_t)(uint32_t)((uint64_t)(int64_t)x * ((uint64_t)1 << left));
    return reference_divide_pot(reference_high_mul(shifted, mult), right);
}

static uint32_t rng = 4242;
static uint32_t next_random(void) { rng = rng * 1664525u + 1013904223u; return rng; }
static int32_t random_i32(void) { return (int32_t)(next_random() ^ (next_random() << 16)); }

static void test_high_mul(void **state)
{
    (void)state;
    assert_int_equal(axrt_fixed_high_mul(INT32_MIN, INT32_MIN), INT32_MAX);   /* the one saturation */
    assert_int_equal(axrt_fixed_high_mul(INT32_MIN, INT32_MAX), -INT32_MAX);
    assert_int_equal(axrt_fixed_high_mul(INT32_MAX, INT32_MAX), INT32_MAX - 1);
    assert_int_equal(axrt_fixed_high_mul(1 << 30, 1), 1);      /* 2ab / 2^32 = 0.5: up */
    assert_int_equal(axrt_fixed_high_mul(-(1 << 30), 1), 0);   /* -0.5: up, to 0 */
    assert_int_equal(axrt_fixed_high_mul(-(3 << 29), 2), -1);    /* -1.5: up, to -1 */
    assert_int_equal(axrt_fixed_high_mul((1 << 30) - 1, 1), 0);
    assert_int_equal(axrt_fixed_high_mul(0, INT32_MIN), 0);
    for (int i = 0; i < 200000; i++) {
        int32_t a = random_i32(), b = random_i32();
        if (i % 5 == 0) b = (int32_t)((1u << 30) + next_random() % (1u << 30));   /* a Q31 multiplier */
        if (i % 7 == 0) a = (int32_t)(next_random() % 4096) - 2048;
        assert_int_equal(axrt_fixed_high_mul(a, b), reference_high_mul(a, b));
    }
}

static void test_divide_pot(void **state)
{
    (void)state;
    assert_int_equal(axrt_fixed_divide_pot(5, 1), 3);     /* 2.5 -> 3 */
    assert_int_equal(axrt_fixed_divide_pot(-5, 1), -3);   /* -2.5 -> -3 */
    assert_int_equal(axrt_fixed_divide_pot(-6, 2), -2);   /* -1.5 -> -2 */
    assert_int_equal(axrt_fixed_divide_pot(-7, 2), -2);   /* -1.75 */
    assert_int_equal(axrt_fixed_divide_pot(-5, 2), -1);   /* -1.25 */
    assert_int_equal(axrt_fixed_divide_pot(-4, 0), -4);
    assert_int_equal(axrt_fixed_divide_pot(INT32_MIN, 31), -1);
    assert_int_equal(axrt_fixed_divide_pot(INT32_MIN + 1, 31), -1);   /* -0.99999... */
    assert_int_equal(axrt_fixed_divide_pot(INT32_MAX, 31), 1);
    assert_int_equal(axrt_fixed_divide_pot(-(1 << 29), 30), -1);      /* -0.5 -> -1 */
    assert_int_equal(axrt_fixed_divide_pot(1 << 29, 30), 1);
    assert_int_equal(axrt_fixed_divide_pot(-(1 << 29) + 1, 30), 0);
    for (int i = 0; i < 200000; i++) {
        const int32_t x = i % 3 ? random_i32() : (int32_t)(next_random() % 2001) - 1000;
        const int e = (int)(next_random() % 32);
        assert_int_equal(axrt_fixed_divide_pot(x, e), reference_divide_pot(x, e));
    }
}

static void test_requantize_tflite(void **state)
{
    (void)state;
    /* 2000 * 1322801609 / 2^31 = 1231.955: TFLite rounds it to 1232, then
       1232 / 32 = 38.5 to 39; one rounding of 38.4986 gives 38 */
    assert_int_equal(axrt_requantize_tflite(2000, 1322801609, 36), 39);
    assert_int_equal(axrt_requantize(2000, 1322801609, 36), 38);
    assert_int_equal(axrt_requantize_tflite(-2000, 1322801609, 36), -39);   /* -1232, then -38.5 away from 0 */
    assert_int_equal(axrt_requantize(-2000, 1322801609, 36), -38);
    for (int i = 0; i < 200000; i++) {
        const int32_t acc = i % 4 ? (int32_t)(next_random() % 2000001) - 1000000 : random_i32();
        const int32_t mult = i % 50 ? (int32_t)((1u << 30) + next_random() % (1u << 30)) : 0;
        const int shift = 1 + (int)(next_random() % 62);
        assert_int_equal(axrt_requantize_tflite(acc, mult, shift), reference_requantize(acc, mult, shift));
    }
}

static const char *const isas[] = {"portable", "avx2", "avx512"};

/* A dense layer's epilogue with AXRT_Q8_TFLITE: x [rows, in] bytes, w
 * [out, in], per-channel multipliers and shifts (some below 31: left
 * shifts), on every instruction set, plain and packed, floats and bytes,
 * against the dot products and reference_requantize. */
static void test_dense_tflite(void **state)
{
    enum { ROWS = 5, IN = 37, OUT = 41 };
    static uint8_t x[ROWS * IN], got8[ROWS * OUT], want8[ROWS * OUT];
    static int8_t w[OUT * IN], shift[OUT];
    static int32_t bias[OUT], mult[OUT];
    static float got[ROWS * OUT], want[ROWS * OUT];
    (void)state;
    for (int i = 0; i < ROWS * IN; i++) x[i] = (uint8_t)next_random();
    for (int i = 0; i < OUT * IN; i++) w[i] = (int8_t)((int)(next_random() % 255) - 127);
    for (int o = 0; o < OUT; o++) {
        bias[o] = (int32_t)(next_random() % 200001) - 100000;
        mult[o] = (int32_t)((1u << 30) + next_random() % (1u << 30));
        shift[o] = (int8_t)(o % 5 == 0 ? 29 + next_random() % 2 : 31 + next_random() % 14);
    }
    axrt_requant rq = {bias, mult, shift, NULL, -3, -128, 127, 0.0625f, AXRT_Q8_TFLITE};
    for (int r = 0; r < ROWS; r++)
        for (int o = 0; o < OUT; o++) {
            int32_t acc = bias[o];
            for (int k = 0; k < IN; k++) acc += (int32_t)x[r * IN + k] * w[o * IN + k];
            int32_t q = rq.zp + reference_requantize(acc, mult[o], shift[o]);
            q = q < rq.lo ? rq.lo : q > rq.hi ? rq.hi : q;
            want[r * OUT + o] = (float)(q - rq.zp) * rq.scale;
            want8[r * OUT + o] = (uint8_t)(q + 128);
        }
    int8_t *packed = malloc(axrt_dense_q8_pack(w, IN, OUT, NULL) + 1);
    axrt_dense_q8_pack(w, IN, OUT, packed);
    for (int i = 0; i < 3; i++) {
        if (axrt_set_isa(isas[i]) != 0) { print_message("  (no %s on this CPU)\n", isas[i]); continue; }
        rq.flags = AXRT_Q8_TFLITE;
        axrt_dense_q8(x, w, &rq, got, ROWS, IN, OUT);
        if (memcmp(got, want, sizeof want)) fail_msg("dense (TFLite rounding) differs on %s", isas[i]);
        axrt_dense_q8_packed(x, packed, &rq, got, ROWS, IN, OUT);
        if (memcmp(got, want, sizeof want)) fail_msg("packed dense (TFLite rounding) differs on %s", isas[i]);
        rq.flags = AXRT_Q8_TFLITE | AXRT_Q8_OUT_BYTES;
        axrt_dense_q8_packed(x, packed, &rq, got8, ROWS, IN, OUT);
        if (memcmp(got8, want8, sizeof want8)) fail_msg("packed dense to bytes (TFLite) differs on %s", isas[i]);
    }
    axrt_set_isa(NULL);
    free(packed);
}

/* TFLite's int8 add: both operands to 2^20 (q - zp) rescaled, summed,
 * rescaled to the output (tensorflow/lite/kernels/internal/reference/
 * integer_ops/add.h), with reference_requantize. */
static int32_t reference_add(const axrt_ew_q8 *p, uint8_t a, uint8_t b)
{
    const int32_t va = reference_requantize(((int32_t)a - 128 - p->zp[0]) * (1 << p->left), p->mult[0], p->shift[0]);
    const int32_t vb = reference_requantize(((int32_t)b - 128 - p->zp[1]) * (1 << p->left), p->mult[1], p->shift[1]);
    const int32_t q = p->out_zp + reference_requantize(va + vb, p->out_mult, p->out_shift);
    return q < p->lo ? p->lo : q > p->hi ? p->hi : q;
}

static void test_add_tflite(void **state)
{
    enum { N = 1037 };
    static uint8_t a[N], b[N], got[N], want[N];
    (void)state;
    for (int round = 0; round < 20; round++) {
        axrt_ew_q8 p = {{(int32_t)(next_random() % 41) - 20, (int32_t)(next_random() % 41) - 20},
                        {(int32_t)((1u << 30) + next_random() % (1u << 30)), 1 << 30},
                        {32 + (int32_t)(next_random() % 4), 31}, 20,
                        (int32_t)((1u << 30) + next_random() % (1u << 30)), 48 + (int32_t)(next_random() % 6),
                        (int32_t)(next_random() % 21) - 10, -128, 127, 1.0f, AXRT_Q8_TFLITE | AXRT_Q8_OUT_BYTES};
        const size_t n = round % 2 ? N : 100 + (size_t)round;   /* past and below the byte tables' threshold */
        for (size_t i = 0; i < n; i++) {
            a[i] = (uint8_t)next_random();
            b[i] = (uint8_t)(next_random() >> 8);
            want[i] = (uint8_t)(reference_add(&p, a[i], b[i]) + 128);
        }
        for (int i = 0; i < 3; i++) {
            if (axrt_set_isa(isas[i]) != 0) continue;
            axrt_add_q8(a, b, got, n, &p);
            if (memcmp(got, want, n)) fail_msg("int8 add (TFLite rounding) round %d differs on %s", round, isas[i]);
            /* a rescale (a ReLU with its own output parameters): operand 0 alone */
            axrt_rescale_q8(a, got, 1, n, n, 0, &p);
            for (size_t k = 0; k < n; k++) {
                int32_t q = p.out_zp + reference_requantize(((int32_t)a[k] - 128 - p.zp[0]) * (1 << p.left),
                                                            p.mult[0], p.shift[0]);
                q = q < p.lo ? p.lo : q > p.hi ? p.hi : q;
                if (got[k] != (uint8_t)(q + 128))
                    fail_msg("int8 rescale (TFLite rounding) round %d element %zu differs on %s", round, k, isas[i]);
            }
        }
        axrt_set_isa(NULL);
    }
}

/* TFLite's int8 MUL (AXRT_Q8_MUL through the add kernels, plain and
 * broadcasting): out_zp + the product of the centred operands requantised
 * with two roundings, clamped; every instruction set. */
static void test_mul_tflite(void **state)
{
    enum { N = 600 };
    static uint8_t a[N], b[N], got[N], want[N];
    const int64_t shape[2] = {20, 30}, sa[2] = {30, 1}, sb[2] = {0, 1};   /* b: one row of 30, broadcast */
    const axrt_ew_q8 p = {{-7, 12}, {0, 0}, {0, 0}, 0, 1518500250, 40, 9, -120, 110, 1.0f,
                          AXRT_Q8_TFLITE | AXRT_Q8_OUT_BYTES | AXRT_Q8_MUL};
    (void)state;
    for (int i = 0; i < N; i++) {
        a[i] = (uint8_t)(i % 9 == 0 ? 0 : i % 9 == 1 ? 255 : next_random());
        b[i] = (uint8_t)(next_random() >> 8);
    }
    for (int i = 0; i < N; i++) {
        const int32_t v = ((int32_t)a[i] - 128 - p.zp[0]) * ((int32_t)b[i % 30] - 128 - p.zp[1]);
        int32_t q = p.out_zp + reference_requantize(v, p.out_mult, p.out_shift);
        q = q < p.lo ? p.lo : q > p.hi ? p.hi : q;
        want[i] = (uint8_t)(q + 128);
    }
    for (int i = 0; i < 3; i++) {
        if (axrt_set_isa(isas[i]) != 0) continue;
        axrt_add_bcast_q8(a, sa, b, sb, got, shape, 2, &p);
        if (memcmp(got, want, N)) fail_msg("int8 broadcasting mul (TFLite) differs on %s", isas[i]);
        for (int r = 0; r < 20; r++)   /* the plain kernel, one row at a time */
            axrt_add_q8(a + 30 * r, b, got + 30 * r, 30, &p);
        if (memcmp(got, want, N)) fail_msg("int8 mul (TFLite) differs on %s", isas[i]);
    }
    axrt_set_isa(NULL);
}

/* TFLite's integer AveragePool (input and output parameters equal): the
 * sum of the window's q inside the input over their count, rounded half
 * away from zero, clamped. */
static void test_meanpool_tflite(void **state)
{
    /* n h w c oh ow kh kw sh sw pt pl pb pr */
    const axrt_pool2d_params p = {1, 6, 5, 3, 3, 3, 3, 3, 2, 2, 1, 1, 0, 1};
    const int32_t window[] = {0, 0, 0, 1, 1, 1 << 30, 31};
    uint8_t x[6 * 5 * 3], y[3 * 3 * 3];
    const axrt_ew_q8 e = {{7, 0}, {0, 0}, {0, 0}, 0, 0, 0, 7, -100, 120, 1.0f, AXRT_Q8_TFLITE | AXRT_Q8_OUT_BYTES};
    (void)state;
    for (int i = 0; i < 6 * 5 * 3; i++) x[i] = (uint8_t)(i % 4 == 0 ? 0 : i % 4 == 1 ? 255 : next_random());
    axrt_meanpool_q8(x, y, &p, window, &e);
    for (int oy = 0; oy < 3; oy++)
        for (int ox = 0; ox < 3; ox++)
            for (int c = 0; c < 3; c++) {
                int32_t sum = 0, count = 0;
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        const int iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
                        if (iy < 0 || iy >= 6 || ix < 0 || ix >= 5) continue;
                        sum += (int32_t)x[(iy * 5 + ix) * 3 + c] - 128;
                        count++;
                    }
                int32_t q = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
                q = q < e.lo ? e.lo : q > e.hi ? e.hi : q;
                assert_int_equal((int)y[(oy * 3 + ox) * 3 + c] - 128, q);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_high_mul),
        cmocka_unit_test(test_divide_pot),
        cmocka_unit_test(test_requantize_tflite),
        cmocka_unit_test(test_dense_tflite),
        cmocka_unit_test(test_add_tflite),
        cmocka_unit_test(test_mul_tflite),
        cmocka_unit_test(test_meanpool_tflite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
