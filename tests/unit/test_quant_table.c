/* test_quant_table.c — TFLite's int8 LOGISTIC, TANH and SOFTMAX tables
 * (passes/pass_quant_table.c) and the kernels that read them
 * (runtime/axrt.h axrt_lookup_q8, axrt_softmax_q8), against the formulas
 * written otherwise, in double: the logistic as (1 + tanh(x / 2)) / 2, the
 * quotient by s_out instead of the product by its float inverse, the softmax
 * as exp(beta s_in (q - max)) over the row's sum.  float32 and double agree
 * on every integer except where the double value lies within 1e-3 of a
 * rounding boundary (half an integer): there 1 apart is allowed, and such
 * places must be rare.  The exact table (LiteRT's own, float32 step by
 * step) is checked against LiteRT itself by the tflite suite. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>

#include <cmocka.h>

#include "passes.h"

/* round half away of v + zp clamped to int8, and whether v is near a boundary. */
static int32_t reference_q8(double v, int32_t zp, int *near)
{
    const double r = v < 0 ? -floor(-v + 0.5) : floor(v + 0.5);
    *near = fabs(fabs(v - trunc(v)) - 0.5) < 1e-3;
    const double q = r + zp;
    return q < -128 ? -128 : q > 127 ? 127 : (int32_t)q;
}

/* Whether got and want agree as the header says; counts the near places. */
static void agree(int32_t got, int32_t want, int near, int *nears)
{
    if (near && got != want) {
        assert_true(got - want == 1 || want - got == 1);
        (*nears)++;
        return;
    }
    assert_int_equal(got, want);
}

static void test_lookup_tables(void **state)
{
    (void)state;
    static const struct { float s_in; int32_t zp_in; float s_out; int32_t zp_out; } cases[] = {
        {0.05f, 3, 1.0f / 256, -128}, {0.1f, -20, 1.0f / 256, -128}, {0.25f, 0, 1.0f / 256, -128},
        {0.02f, 5, 1.0f / 128, 0}, {0.1f, 0, 1.0f / 128, 0}, {0.03f, 17, 0.01f, 9}};
    int nears = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int tanh_op = 0; tanh_op < 2; tanh_op++) {
            int32_t table[256];
            pass_quant_lookup_table(tanh_op ? IR_OP_tanh : IR_OP_sigmoid, cases[c].s_in, cases[c].zp_in,
                                    cases[c].s_out, cases[c].zp_out, table);
            for (int v = -128; v < 128; v++) {
                const double x = (double)cases[c].s_in * (v - cases[c].zp_in);
                const double f = tanh_op ? tanh(x) : (1 + tanh(x / 2)) / 2;
                int near;
                const int32_t want = reference_q8(f / cases[c].s_out, cases[c].zp_out, &near);
                agree(table[v + 128], want, near, &nears);
            }
        }
    assert_true(nears <= 12);   /* of 3,072 entries */
}

static void test_exp_table(void **state)
{
    (void)state;
    static const float scales[] = {0.05f, 0.1f, 0.25f}, betas[] = {1.0f, 0.7f, 2.0f};
    for (int c = 0; c < 3; c++) {
        float table[256];
        pass_quant_exp_table(scales[c], betas[c], table);
        for (int v = 0; v < 256; v++) {
            const double arg = (double)scales[c] * betas[c] * v, want = exp(-arg);
            /* the argument's two float roundings (2^-24 each) and expf's */
            assert_true(fabs(table[255 - v] - want) <= (arg * 1.2e-7 + 1.2e-7) * want + 1e-44);
        }
    }
}

/* axrt_softmax_q8 on rows of 16 bytes (random windows, one constant row),
 * dequantised and as bytes, against the double formula; axrt_lookup_q8. */
static void test_kernels(void **state)
{
    (void)state;
    enum { ROWS = 64, LEN = 16 };
    static uint8_t x[ROWS * LEN], bytes[ROWS * LEN];
    static float y[ROWS * LEN], table[256];
    uint32_t rng = 35;
    for (int r = 0; r < ROWS; r++) {
        rng = rng * 1664525u + 1013904223u;
        const int width = 1 + (int)(rng >> 8) % 60, low = (int)(rng >> 20) % (256 - width);
        for (int j = 0; j < LEN; j++) {
            rng = rng * 1664525u + 1013904223u;
            x[r * LEN + j] = (uint8_t)(r == 0 ? 77 : low + (int)(rng >> 16) % width);
        }
    }
    const float s_in = 0.1f, beta = 0.7f, s_out = 1.0f / 256;
    pass_quant_exp_table(s_in, beta, table);
    axrt_ew_q8 p = {.out_zp = -128, .lo = -128, .hi = 127, .scale = s_out};
    axrt_softmax_q8(x, y, ROWS, LEN, table, &p);
    p.flags = AXRT_Q8_OUT_BYTES;
    axrt_softmax_q8(x, bytes, ROWS, LEN, table, &p);
    int nears = 0;
    for (int r = 0; r < ROWS; r++) {
        int m = 0;
        double sum = 0;
        for (int j = 0; j < LEN; j++) m = x[r * LEN + j] > m ? x[r * LEN + j] : m;
        for (int j = 0; j < LEN; j++) sum += exp((double)beta * s_in * (x[r * LEN + j] - m));
        for (int j = 0; j < LEN; j++) {
            int near;
            const int32_t want = reference_q8(exp((double)beta * s_in * (x[r * LEN + j] - m)) / sum / s_out, -128,
                                              &near);
            agree((int32_t)bytes[r * LEN + j] - 128, want, near, &nears);
            assert_true(y[r * LEN + j] == (float)bytes[r * LEN + j] * s_out);   /* (q - zp) s_out */
        }
    }
    assert_true(nears <= 8);   /* of 1,024 outputs */
    int32_t lookup[256];
    for (int v = 0; v < 256; v++) lookup[v] = 127 - v;
    axrt_lookup_q8(x, bytes, ROWS * LEN, lookup, &p);
    for (int i = 0; i < ROWS * LEN; i++) assert_int_equal(bytes[i], 255 - x[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_tables),
        cmocka_unit_test(test_exp_table),
        cmocka_unit_test(test_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
