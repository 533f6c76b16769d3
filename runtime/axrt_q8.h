/* axrt_q8.h — inside libaxrt (not installed): the register-tiled int8 GEMM
 * on packed weights (axrt_int8.c drives it, axrt_x86_int8.c adds the AVX2
 * and AVX-512 VNNI tiles, axrt_int8_scalar.c the scalar kernels both end on).
 *
 * Packed weights (axrt_dense_q8_pack, axrt_conv2d_q8_pack): the reduction K
 * of every output channel is split into nseg segments of seg_len bytes (a
 * dense: one segment of `in`; a conv: one per tap when c % 4 == 0, read in
 * place from the input, else one gathered receptive field), each padded with
 * zero weights to a multiple of 4.  Output channels go in blocks of 16 (the
 * last one narrower, wb = out - 16 * block); block b starts at byte
 * 16 * b * kp (kp = nseg * round4(seg_len)) and holds, for each group of four
 * k, its wb channels' four weights: byte (g * wb + j) * 4 + i is channel
 * 16 b + j at k = 4 g + i.  That is vpdpbusd's operand: one 64-byte load per
 * group and block, the four input bytes broadcast. */
#ifndef AXRT_Q8_H
#define AXRT_Q8_H

#include <stddef.h>
#include <stdint.h>

#include "axrt.h"

#define AXRT_Q8_BLOCK 16
/* rows of the largest tile any path uses */
#define AXRT_Q8_MR_MAX 6
/* columns of the widest tile any path uses */
#define AXRT_Q8_NC_MAX 64

/* One tile: acc[r * ldacc + j] = sum over s < nseg, k < seg_len of
 * rows[s * mr + r][k] * w(c0 + j, s, k) for r < mr, j < nc, where c0 is a
 * multiple of 16 and the packed weights have `out` channels. */
typedef struct axrt_q8_tile {
    const uint8_t *const *rows;
    size_t mr, nseg, seg_len;
    const int8_t *packed;
    size_t out, c0, nc;
    int32_t *acc;
    size_t ldacc;
} axrt_q8_tile;

/* y[j] = finish(bias[c0 + j] + acc[j]) for j < nc (axrt.h's requantisation,
 * clamp and dequantisation, or the float scale when rq->mult is NULL; y is
 * uint8_t, q + 128, when rq->flags has AXRT_Q8_OUT_BYTES). */
typedef void axrt_q8_finish_fn(const axrt_requant *rq, const int32_t *acc, size_t c0, size_t nc, void *y);

/* The scalar epilogue (axrt_int8_scalar.c), exactly axrt.h's formula. */
void axrt_q8_finish_portable(const axrt_requant *rq, const int32_t *acc, size_t c0, size_t nc, void *y);

/* A depthwise conv's channel block at one output pixel:
 * acc[k] = sum over t < taps of x[t][k] * w[t * ldw + k] for k < nc, nc at
 * most AXRT_Q8_DW_BLOCK (x[t]: the input pixel tap t reads, or a row of the
 * input zero point; w: tap-major weights). */
#define AXRT_Q8_DW_BLOCK 64
typedef void axrt_q8_dw_sum_fn(const uint8_t *const *x, const int8_t *w, size_t ldw, size_t taps, size_t nc,
                               int32_t *acc);
/* axrt.h's axrt_add_q8 and axrt_rescale_q8 */
typedef void axrt_q8_add_fn(const uint8_t *a, const uint8_t *b, void *y, size_t n, const axrt_ew_q8 *p);
typedef void axrt_q8_rescale_fn(const uint8_t *x, void *y, size_t outer, size_t row, size_t ld, size_t offset,
                                const axrt_ew_q8 *p);

/* The int8 kernels one instruction set provides (the GEMM tile and its
 * epilogue, the depthwise sum, the elementwise add and rescale), all giving
 * the portable C's integers exactly. */
typedef struct axrt_q8_gemm_ops {
    const char *name;
    size_t mr, nc;   /* tile rows and columns (nc a multiple of 16) */
    void (*tile)(const axrt_q8_tile *t);
    axrt_q8_finish_fn *finish;
    axrt_q8_dw_sum_fn *dw_sum;
    axrt_q8_add_fn *add;
    axrt_q8_rescale_fn *rescale;
} axrt_q8_gemm_ops;

/* The portable kernels: the depthwise sum (axrt_int8.c); the add and the
 * rescale (axrt_int8_scalar.c), also the SIMD paths' tails. */
void axrt_q8_dw_sum_portable(const uint8_t *const *x, const int8_t *w, size_t ldw, size_t taps, size_t nc,
                             int32_t *acc);
void axrt_q8_add_portable(const uint8_t *a, const uint8_t *b, void *y, size_t n, const axrt_ew_q8 *p);
void axrt_q8_rescale_portable(const uint8_t *x, void *y, size_t outer, size_t row, size_t ld, size_t offset,
                              const axrt_ew_q8 *p);

static inline size_t axrt_q8_round4(size_t n) { return (n + 3) & ~(size_t)3; }

/* The four bytes p[0..3], those at or past `avail` read as 0. */
static inline uint32_t axrt_q8_load4(const uint8_t *p, size_t avail)
{
    uint32_t v = 0;
    for (size_t i = 0; i < 4 && i < avail; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
/* NULL when the CPU lacks the instructions (AVX2; AVX-512 F+BW+VNNI). */
const axrt_q8_gemm_ops *axrt_q8_gemm_avx2(void);
const axrt_q8_gemm_ops *axrt_q8_gemm_vnni(void);
#endif

#endif /* AXRT_Q8_H */
