/* axrt_int8_scalar.c — the int8 kernels in plain C that every instruction
 * set's table ends on (axrt_q8.h: the portable table's entries, the SIMD
 * paths' tails): the GEMM epilogue, the elementwise add and rescale; and
 * axrt.h's requantisation helpers.  A leaf: it calls no table, so that
 * axrt_int8.c's table names it and axrt_x86_int8.c's kernels call it, never
 * the other way (docs/internals.md#layers).  Freestanding C99. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "axrt.h"
#include "axrt_q8.h"
#include "axrt_q8_arith.h"

int32_t axrt_requantize(int32_t acc, int32_t mult, int shift) { return axrt_q8_requantize(acc, mult, shift); }

int32_t axrt_fixed_high_mul(int32_t a, int32_t b) { return axrt_q8_fixed_high_mul(a, b); }

int32_t axrt_fixed_divide_pot(int32_t x, int exponent) { return axrt_q8_fixed_divide_pot(x, exponent); }

int32_t axrt_requantize_tflite(int32_t acc, int32_t mult, int shift)
{
    return axrt_q8_requantize_tflite(acc, mult, shift);
}

void axrt_q8_finish_portable(const axrt_requant *rq, const int32_t *acc, size_t c0, size_t nc, void *y)
{
    for (size_t j = 0; j < nc; j++)
        axrt_q8_finish_one(rq, rq->bias[c0 + j] + acc[j], c0 + j, y, j);
}

void axrt_q8_add_portable(const uint8_t *a, const uint8_t *b, void *y, size_t n, const axrt_ew_q8 *p)
{
    int32_t ta[256], tb[256];
    const bool table = n >= AXRT_Q8_EW_TABLE_MIN && !(p->flags & AXRT_Q8_MUL);
    if (table) {
        axrt_q8_ew_table(p, 0, ta);
        axrt_q8_ew_table(p, 1, tb);
    }
    for (size_t i = 0; i < n; i++)
        axrt_q8_ew_store(p, axrt_q8_ew_binary(p, a[i], b[i], table ? ta : NULL, table ? tb : NULL), y, i);
}

void axrt_q8_rescale_portable(const uint8_t *x, void *y, size_t outer, size_t row, size_t ld, size_t offset,
                              const axrt_ew_q8 *p)
{
    int32_t t[256];   /* the clamped result of each byte */
    const bool table = outer * row >= AXRT_Q8_EW_TABLE_MIN;
    for (int v = 0; table && v < 256; v++)
        t[v] = axrt_q8_clamp((int64_t)p->out_zp + axrt_q8_ew_scaled(p, 0, (uint8_t)v), p->lo, p->hi);
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < row; j++) {
            const uint8_t v = x[o * row + j];
            const int32_t q = table ? t[v] : axrt_q8_clamp((int64_t)p->out_zp + axrt_q8_ew_scaled(p, 0, v), p->lo, p->hi);
            axrt_q8_ew_store(p, q, y, o * ld + offset + j);
        }
}
