/* axrt_q8_arith.h — inside libaxrt (not installed): the scalar int8
 * arithmetic of axrt.h's formulas (requantisation, gemmlowp's fixed point
 * for AXRT_Q8_TFLITE, the clamp, the GEMM epilogue of one channel, the
 * elementwise add's scaled operands), inline so that the portable kernels
 * (axrt_int8.c) and the scalar kernels every instruction set ends on
 * (axrt_int8_scalar.c) compute the same integers from one formula, in their
 * loops without a call.  axrt.h's axrt_requantize and fixed-point helpers
 * are these (axrt_int8_scalar.c). */
#ifndef AXRT_Q8_ARITH_H
#define AXRT_Q8_ARITH_H

#include <stddef.h>
#include <stdint.h>

#include "axrt.h"

static inline int32_t axrt_q8_clamp(int64_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : v > hi ? hi : (int32_t)v;
}

static inline int32_t axrt_q8_requantize(int32_t acc, int32_t mult, int shift)
{
    const int64_t p = (int64_t)acc * mult;
    const uint64_t mag = p < 0 ? (uint64_t)0 - (uint64_t)p : (uint64_t)p;
    const int64_t r = (int64_t)((mag + ((uint64_t)1 << (shift - 1))) >> shift);
    return (int32_t)(p < 0 ? -r : r);
}

static inline int32_t axrt_q8_fixed_high_mul(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN)
        return INT32_MAX;
    const int64_t ab = (int64_t)a * b;
    const int64_t nudge = ab >= 0 ? (int64_t)1 << 30 : 1 - ((int64_t)1 << 30);
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));   /* C's division truncates, as gemmlowp's */
}

static inline int32_t axrt_q8_fixed_divide_pot(int32_t x, int exponent)
{
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask, threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    /* x >> exponent: an arithmetic shift (floor), as gemmlowp assumes */
    const int32_t floor_div = x < 0 ? -(int32_t)((~(uint32_t)x) >> exponent) - 1 : (int32_t)((uint32_t)x >> exponent);
    return floor_div + (remainder > threshold ? 1 : 0);
}

static inline int32_t axrt_q8_requantize_tflite(int32_t acc, int32_t mult, int shift)
{
    const int exponent = 31 - shift;
    const int left = exponent > 0 ? exponent : 0, right = exponent > 0 ? 0 : -exponent;
    const int32_t x = (int32_t)((uint32_t)acc << left);   /* TFLite's x * (1 << left) in int32 */
    return axrt_q8_fixed_divide_pot(axrt_q8_fixed_high_mul(x, mult), right);
}

/* axrt_q8_requantize, or TFLite's (flags has AXRT_Q8_TFLITE). */
static inline int32_t axrt_q8_requantize_as(int32_t flags, int32_t acc, int32_t mult, int shift)
{
    return flags & AXRT_Q8_TFLITE ? axrt_q8_requantize_tflite(acc, mult, shift)
                                  : axrt_q8_requantize(acc, mult, shift);
}

/* Stores output channel o of accumulator acc as y[i]: requantised, clamped
 * and dequantised to float, or kept as q + 128 (AXRT_Q8_OUT_BYTES), or (rq->mult
 * NULL) scaled to float directly. */
static inline void axrt_q8_finish_one(const axrt_requant *rq, int32_t acc, size_t o, void *y, size_t i)
{
    if (!rq->mult) {
        ((float *)y)[i] = (float)acc * rq->fscale[o];
        return;
    }
    const int32_t q = axrt_q8_clamp((int64_t)rq->zp + axrt_q8_requantize_as(rq->flags, acc, rq->mult[o], rq->shift[o]),
                                    rq->lo, rq->hi);
    if (rq->flags & AXRT_Q8_OUT_BYTES)
        ((uint8_t *)y)[i] = (uint8_t)(q + 128);
    else
        ((float *)y)[i] = (float)(q - rq->zp) * rq->scale;
}

/* Stores q (already clamped) as element i of y: q + 128, or dequantised. */
static inline void axrt_q8_ew_store(const axrt_ew_q8 *p, int32_t q, void *y, size_t i)
{
    if (p->flags & AXRT_Q8_OUT_BYTES)
        ((uint8_t *)y)[i] = (uint8_t)(q + 128);
    else
        ((float *)y)[i] = (float)(q - p->out_zp) * p->scale;
}

/* Operand k's byte x (q + 128) in the fixed-point scale of p. */
static inline int32_t axrt_q8_ew_scaled(const axrt_ew_q8 *p, int k, uint8_t x)
{
    const int32_t centred = (int32_t)x - 128 - p->zp[k];   /* |.| <= 255: << 20 fits */
    return axrt_q8_requantize_as(p->flags, centred * ((int32_t)1 << p->left), p->mult[k], p->shift[k]);
}

/* Operand k's scaled value for each of the 256 bytes (axrt_q8_ew_scaled
 * depends on the byte alone: the same integers, one table read per element). */
#define AXRT_Q8_EW_TABLE_MIN 512   /* below this many elements the 256 entries cost more than they save */
static inline void axrt_q8_ew_table(const axrt_ew_q8 *p, int k, int32_t *t)
{
    for (int v = 0; v < 256; v++)
        t[v] = axrt_q8_ew_scaled(p, k, (uint8_t)v);
}

/* The clamped result q of an add (AXRT_Q8_MUL: a product) of bytes a and b,
 * the add's scaled operands from the byte tables ta, tb (NULL: computed). */
static inline int32_t axrt_q8_ew_binary(const axrt_ew_q8 *p, uint8_t a, uint8_t b, const int32_t *ta,
                                        const int32_t *tb)
{
    int32_t v;
    if (p->flags & AXRT_Q8_MUL)   /* |.| <= 255 * 255 */
        v = ((int32_t)a - 128 - p->zp[0]) * ((int32_t)b - 128 - p->zp[1]);
    else
        v = ta ? ta[a] + tb[b] : axrt_q8_ew_scaled(p, 0, a) + axrt_q8_ew_scaled(p, 1, b);
    return axrt_q8_clamp((int64_t)p->out_zp + axrt_q8_requantize_as(p->flags, v, p->out_mult, p->out_shift), p->lo,
                         p->hi);
}

#endif /* AXRT_Q8_ARITH_H */
