/* axrt_cpu.h — inside libaxrt (not installed as a public header): the table of
 * float32 kernels one instruction set provides, chosen once at run time
 * (axrt_fast.inc: axrt_cpu()).  The portable table is plain C and always
 * there; on x86-64 with GCC or clang, axrt_x86_avx2.c and axrt_x86_avx512.c
 * add tables compiled with __attribute__((target)) (no special flags), each
 * available when the CPU has the instructions.  AXRT_ISA=portable|avx2|avx512
 * in the environment, or axrt_set_isa(), forces one; axrt_isa_name() says
 * which runs.  -DAXRT_NO_SIMD leaves only the portable table.
 *
 * Every table computes what the portable C computes, NaN and infinities
 * included (within the tolerances of tests/unit/test_fastmath.c). */
#ifndef AXRT_CPU_H
#define AXRT_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#include "axrt.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
#define AXRT_X86_SIMD 1
/* rows of the largest register tile (axrt_x86_simd.inc: at most 12) */
#define AXRT_TILE_M_MAX 12
#else
#define AXRT_TILE_M_MAX 6
#endif

/* A short reduction's conv (small_k below): the most pixels one call
 * takes, and the longest reduction (taps x channels) it takes: the 3x3
 * stems on 3 channels have 27. */
#define AXRT_SMALL_K_ROWS 24
#define AXRT_SMALL_K_MAX 32
/* The most floats a small_k call's pixel takes gathered: each of its
   segments rounded up to whole vectors of 16 (so of 8 too). */
#define AXRT_SMALL_K_LD 64

/* Full panels a tile call takes together where a panel is one vector
 * (AVX-512: axrt_x86_simd.inc tile_panels_body instantiates groups of 3, 2
 * and 1); the dense and conv drivers cut their panels to match
 * (axrt_fast.inc dense_panels, CONV_MIN_BLOCK_PANELS). */
#define AXRT_PANEL_GROUP 3

/* One register tile: for r < mr, j < nr,
 *   y[r][j] = init + sum over segments s, p < k of a[s][r][p] * b[s * b_seg + p * ldb + j]
 * where init is y itself when accumulate, else bias[j] (or 0 without bias),
 * and a[s][r] = a[s * AXRT_TILE_M_MAX + r].  Segments are a convolution's
 * taps, each reading other input pixels; a GEMM has one.  When final, the
 * epilogue y = act(y + residual) (residual laid out as y, ldy apart) follows.
 * mr is at most the table's tile_rows, nr at most AXRT_PANEL.  A hint that
 * changes no result: where ahead is not NULL, the ahead_lines 64-byte lines
 * from it will be read soon (a large conv's or a dense call's next weight
 * block), and the tile prefetches them spread over its steps (those of all
 * its panels, in order).  Where panels > 1 (0 counts
 * as 1), the tile repeats for that many consecutive panels, all
 * AXRT_PANEL wide (nr), panel i reading b + i * b_panel and writing
 * y + i * AXRT_PANEL (bias and residual likewise): one call, so that a
 * short reduction (a 1x1 conv's 64 channels) does not pay a call's set-up
 * and drain per panel. */
typedef struct axrt_tile_args {
    size_t mr, nr, nseg, k;
    const float *const *a;
    const float *b;
    size_t ldb, b_seg;
    float *y;
    size_t ldy;
    const float *bias;
    int accumulate, final;
    const float *residual;
    axrt_act act;
    const float *ahead;
    size_t ahead_lines;
    size_t panels, b_panel;
} axrt_tile_args;

typedef void axrt_unary_fn(const float *x, float *y, size_t n);
typedef void axrt_binary_fn(const float *a, const float *b, float *y, size_t n);
typedef void axrt_binary_scalar_b_fn(const float *a, float b, float *y, size_t n);
typedef void axrt_binary_scalar_a_fn(float a, const float *b, float *y, size_t n);

/* Adam's and AdamW's update of n float32 values in place (axrt_optim.c
 * derives the coefficients for the step; AdamW has l2 0, Adam decay 1):
 *   gi = g + l2 p;  p *= decay;  m = b1 m + (1 - b1) gi;
 *   v = b2 v + (1 - b2) gi gi;  p -= step_size (m / (sqrt(v) inv_bc2_sqrt + eps)),
 *   inv_bc2_sqrt = 1 / sqrt(1 - beta2^step) (a product: one division less) */
typedef struct axrt_adam_coef {
    float decay, l2, b1, b2, one_minus_b1, one_minus_b2, step_size, inv_bc2_sqrt, eps;
} axrt_adam_coef;
/* The longest reduction a table's matmul_adam takes (b's column blocks of
   k x 128 floats stay in L1). */
#define AXRT_MATMUL_ADAM_MAX_K 48
typedef void axrt_adam_fn(const axrt_adam_coef *c, float *p, const float *g, float *m, float *v,
                          size_t n);
/* The same coefficients in double (`axc train`'s optimizer step). */
typedef struct axrt_adam_coef_f64 {
    double decay, l2, b1, b2, one_minus_b1, one_minus_b2, step_size, inv_bc2_sqrt, eps;
} axrt_adam_coef_f64;

/* The binary operators, in the order of the tables' arrays. */
enum { AXRT_BIN_ADD, AXRT_BIN_SUB, AXRT_BIN_MUL, AXRT_BIN_DIV, AXRT_BIN_COUNT };

typedef struct axrt_cpu_ops {
    const char *name;          /* "portable", "avx2", "avx512" */
    size_t tile_rows;          /* mr limit of tile, <= AXRT_TILE_M_MAX */
    void (*tile)(const axrt_tile_args *t);
    /* a matrix-vector product over `panels` full panels of a packed dense
       weight (axrt.h) with k inputs, and the tile's epilogue: for i <
       panels * AXRT_PANEL, y[i] = act(bias[i] (0 without bias) + sum over
       p < k of a[p] * W[i][p] + residual[i]); NULL where a table has none */
    void (*row_panels)(const float *a, const float *packed, size_t k, size_t panels, const float *bias,
                       const float *residual, axrt_act act, float *y);
    /* one output row of a depthwise conv on packed weights [kh * kw, c],
       with its epilogue: rows[ky] is the input row (its first pixel) that
       tap row ky reads, NULL for padding; y and residual are the row's
       ow * c outputs.  kh <= AXRT_DWCONV_MAX_KH. */
    void (*depthwise_row)(const float *const *rows, const float *packed, const float *bias,
                          const float *residual, axrt_act act, float *y,
                          const axrt_conv2d_params *p);
    /* softmax of one contiguous line of n > 0 elements */
    void (*softmax_line)(const float *x, float *y, size_t n);
    void (*layernorm)(const float *x, const float *w, const float *bias, float *y, size_t rows,
                      size_t d, float eps);
    axrt_unary_fn *exp, *erf, *gelu, *gelu_tanh, *tanh, *sigmoid, *swish;
    axrt_unary_fn *relu, *relu6, *neg, *abs, *sqrt;
    void (*leaky_relu)(const float *x, float *y, size_t n, float alpha);
    axrt_binary_fn *binary[AXRT_BIN_COUNT];
    axrt_binary_scalar_b_fn *binary_scalar_b[AXRT_BIN_COUNT];
    axrt_binary_scalar_a_fn *binary_scalar_a[AXRT_BIN_COUNT];
    /* one max-pooling window: for j < c, y[j] = the max of x[r * ld + q * c + j]
       over rows r < rows and pixels q < cols (taps in that order from -inf,
       each taken when greater or NaN: NaN and the sign of zero as the scalar) */
    void (*max_window)(const float *x, float *y, size_t rows, size_t cols, size_t ld, size_t c);
    axrt_adam_fn *adam;
    axrt_binary_fn *relu_grad; /* (dy, x, y, n): axrt_relu_grad_f32 */
    /* the training step's conv kernels, as axrt_conv2d_grad_weight_f32 and
       axrt_conv_transpose2d_f32 (axrt.h; sums in another order) */
    void (*conv_grad_weight)(const float *dy, const float *x, float *dw, const axrt_conv2d_params *p);
    void (*conv_transpose)(const float *x, const float *w, const float *bias, float *y,
                           const axrt_conv2d_params *p);
    /* y[j] = 0 + x[0][j] + x[1][j] + ... + x[rows - 1][j] for j < cols (rows
       ld >= cols apart), added in that order: axrt_sum_f32's loop, bit for bit */
    void (*sum_rows)(const float *x, float *y, size_t rows, size_t cols, size_t ld);
    /* y [cols, rows] = x [rows, cols] transposed (row-major, x's rows ldx
       >= cols apart, no overlap) */
    void (*transpose)(const float *x, size_t ldx, float *y, size_t rows, size_t cols);
    /* tile for a row-major B (column j at b + j): as tile, one segment, nr
       up to 2 * AXRT_PANEL; where panels > 1, nr is 2 * AXRT_PANEL and
       panel i reads b + i * b_panel and writes y + i * nr; NULL where tile
       is as fast (gemm then uses tile) */
    void (*tile_wide)(const axrt_tile_args *t);
    /* Adam's (AdamW's) update of p, m, v [m, n] with the gradient
       a [m, k] . b [k, n] (row-major), its sums as the GEMM tile's (one
       multiply-add a term, in order), then as adam, the gradient not
       stored; returns 0, having done nothing,
       where it would not be faster (a not sparse enough: it skips a's
       zeros, as a ReLU's backward leaves them; k above
       AXRT_MATMUL_ADAM_MAX_K) or not exact (b not finite); NULL where a
       table has none */
    int (*matmul_adam)(const axrt_adam_coef *c, const float *a, const float *b, size_t m, size_t k, size_t n,
                       float *p, float *mom, float *v);
    /* whether a GEMM's last two row tiles share their rows evenly where the
       last would have under half of tile_rows (axrt_fast.inc
       row_tile_height): a tile of fewer rows has fewer accumulators than
       FMA latency x throughput and waits on the latency */
    int even_tail;
    /* ---- attention without the scores (axrt_flash.inc) ----
       rows query rows' blocks of n > 0 raw scores s (rows n apart), online
       softmax with scale > 0, for each row i: m' = max(max[i], scale *
       the block's max); s = exp(scale s - m') in place; sum[i] = sum[i]
       exp(max[i] - m') + the sum of s; max[i] = m'; alpha[i] = exp(max[i]
       - m'), the factor for what the row has gathered so far.  While m' is
       -inf (every score so far -inf), s = 0 and alpha[i] = 1, sum[i]
       staying 0. */
    void (*softmax_block)(float *s, size_t rows, size_t n, float scale, float *max, float *sum, float *alpha);
    /* ---- a grouped conv of k = 4 or 8 input and output channels a group
       on the rotated packing (axrt_gconv.inc) ----
       nr / k <= grouped_lanes / k groups at once (nr a multiple of k): for
       r < mr and lane l = g k + o (group g, output o),
         y[r][l] = init + sum over segments s, q < k of
                   a[s][r][l'] * b[s * b_seg + q * ldb + l'],  l' = g k + (o + q) mod k
       (init, the epilogue and a[s][r] as for tile; ldb >= nr).  Any order of
       the sums. */
    size_t grouped_lanes;
    void (*tile_grouped)(const axrt_tile_args *t);
    /* tile over one or two full panels and the narrow panel after them,
       as the packed layout's last: AXRT_PANEL < nr < 3 * AXRT_PANEL, not a
       multiple of AXRT_PANEL; full panel i at b + i * b_panel (steps ldb =
       AXRT_PANEL apart), then the narrow one's nr % AXRT_PANEL outputs,
       steps nr % AXRT_PANEL apart; one segment, panels 1, ahead ignored,
       accumulate 0 (a reduction's first block: the narrow panel of a later
       one lies elsewhere); each output's sums and epilogue as tile's, bit
       for bit.  NULL where
       tile is as fast (the callers then take the panels apart). */
    void (*tile_tail)(const axrt_tile_args *t);
    /* the longest reduction a dense layer of more than one row takes in
       one block (axrt_fast.inc DENSE_K); longer ones go in blocks of at
       most TILE_K steps */
    size_t dense_k;
    /* unary functions that only some tables vectorise (NULL: the portable
       loop, which the portable table leaves out of firmware builds that do
       not call it) */
    axrt_unary_fn *softplus, *mish, *hardswish, *hardsigmoid, *selu, *reciprocal, *log;
    void (*elu)(const float *x, float *y, size_t n, float alpha);
    /* a conv of k = nseg * seg_len <= AXRT_SMALL_K_MAX products an output
       (an image model's stem) on mr <= AXRT_SMALL_K_ROWS pixels, pixel r's
       inputs the nseg segments (its tap rows) of seg_len floats at
       rows[s * AXRT_SMALL_K_ROWS + r] where step is 0, else at rows[s] +
       r * step (pixels read in place, none past pixel mr - 1); times `panels` full panels of the packed weight (axrt.h:
       k x AXRT_PANEL each, one after the other) into y (pixels ldy apart),
       with bias, residual (laid out as y, or NULL) and act; each output's
       sums and epilogue as tile's, bit for bit.  The conv tile's set-up per
       8 pixels cost more than its multiply-adds there.  NULL where a table
       has none. */
    void (*small_k)(const float *const *rows, size_t mr, size_t nseg, size_t seg_len, size_t step, const float *b,
                    size_t panels, const float *bias, const float *residual, axrt_act act, float *y, size_t ldy);
    /* depthwise_row for output rows oy and oy + 1 of a conv of dilation_h
       1: rows: the kh + stride_h input rows they read (NULL: padding); y
       and residual: the two rows' 2 ow c outputs.  Each output's bits as
       depthwise_row's.  Made together, the rows read each input row once
       where one at a time read the shared ones twice (the input rows of a
       wide layer leave L1 between rows: AVX-512's 3x3 rows ran at 81 % of
       the FMA peak from L1, 50 % from L2).  NULL where a table has none. */
    void (*depthwise_row_pair)(const float *const *rows, const float *packed, const float *bias,
                               const float *residual, axrt_act act, float *y, const axrt_conv2d_params *p);
    /* A matrix unit's packed dense product (axrt_x86_amx.c): y rows [r0, r1)
       x outputs [j0, j1) (j0 a multiple of AXRT_PANEL) = x . W^T + bias (or
       without bias), W packed (axrt.h), no epilogue; W kept in the unit's
       form from its first call where constant (axrt_dense_packed_const_ep_f32's
       contract); returns 0, having done nothing, where it cannot run now.
       NULL where a table has none. */
    int (*dense_engine)(const float *x, const float *packed, const float *bias, float *y, size_t in, size_t out,
                        size_t r0, size_t r1, size_t j0, size_t j1, int constant);
} axrt_cpu_ops;

/* The table in use (axrt_fast.inc), for the kernels outside axrt.c. */
const axrt_cpu_ops *axrt_cpu_in_use(void);
/* fn over [0, count) through the parallel-for hook (axrt_set_parallel)
 * when the work (multiply-adds) is worth threads, else on this thread; grain
 * as the hook's (axrt.h; 0: one range a thread). */
void axrt_parallel_for(axrt_range_fn *fn, void *ctx, size_t count, double work, size_t grain);
/* The portable Adam loop (axrt_adam.c), the portable table's, and the
 * same in double (axrt_optim.c's axrt_optim_step_f64). */
/* The portable hardswish loop (axrt_kernels.inc), for tables without a
   vector form of it (Winograd's epilogue on the portable table). */
void axrt_hardswish_f32_portable(const float *x, float *y, size_t n);
void axrt_adam_f32_portable(const axrt_adam_coef *c, float *p, const float *g, float *m, float *v,
                            size_t n);
void axrt_adam_f64(const axrt_adam_coef_f64 *c, double *p, const double *g, double *m, double *v, size_t n);

#ifdef AXRT_X86_SIMD
/* The table, or NULL when this CPU lacks its instructions. */
const axrt_cpu_ops *axrt_cpu_ops_avx2(void);
const axrt_cpu_ops *axrt_cpu_ops_avx512(void);
/* AVX-512's table with the dense products on AMX (axrt_x86_amx.c); NULL
   without AMX-BF16 or the OS's leave to use it. */
const axrt_cpu_ops *axrt_cpu_ops_avx512_amx(void);
#endif

/* The vector instruction set of the table named `name`: the amx table's is
   AVX-512's.  For the kernels outside the tables that pick their own by it
   (Winograd's transforms, Float16/BFloat16, int8). */
static inline const char *axrt_vector_isa(const char *name)
{
    return name[0] == 'a' && name[1] == 'm' && name[2] == 'x' && !name[3] ? "avx512" : name;
}

/* The table's depthwise_row (axrt_fast.inc), for the in-place kernel. */
void axrt_depthwise_row_f32(const float *const *rows, const float *packed, const float *bias,
                            const float *residual, axrt_act act, float *y,
                            const axrt_conv2d_params *p);

/* ---- the half types -----------------------------------------------------
 * Conversions by bit manipulation (freestanding targets lack _Float16):
 * widening is exact; narrowing rounds to nearest, ties to even, overflows to
 * infinity and keeps NaN a (quiet) NaN. */

/* IEEE binary16 bits to float, subnormals, infinities and NaN included. */
static inline float axrt_half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    float magnitude;
    uint32_t bits;
    if (exponent == 0) {
        magnitude = ldexpf((float)mantissa, -24);
        memcpy(&bits, &magnitude, sizeof bits);
        bits |= sign;
    } else if (exponent == 31) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    }
    memcpy(&magnitude, &bits, sizeof bits);
    return magnitude;
}

/* float to binary16 bits (F. Giesen's float_to_half_fast3_rtne): values
 * below 2^-14 are rounded by the FPU itself by adding 0.5f, which lines the
 * half's subnormal bits up with the float's low mantissa bits. */
static inline uint16_t axrt_float_to_half(float f)
{
    const uint32_t f16_overflow = (127u + 16u) << 23, f32_inf = 255u << 23;
    uint32_t bits, sign;
    memcpy(&bits, &f, sizeof bits);
    sign = bits & 0x80000000u;
    bits ^= sign;
    if (bits >= f16_overflow) {
        bits = bits > f32_inf ? 0x7e00u : 0x7c00u;
    } else if (bits < 113u << 23) {
        const float magic = 0.5f;
        uint32_t magic_bits;
        float v;
        memcpy(&v, &bits, sizeof v);
        v += magic;
        memcpy(&bits, &v, sizeof bits);
        memcpy(&magic_bits, &magic, sizeof magic_bits);
        bits -= magic_bits;
    } else {
        const uint32_t mantissa_odd = (bits >> 13) & 1u;
        bits += 0xc8000fffu + mantissa_odd; /* exponent 127 -> 15, round half up/even */
        bits >>= 13;
    }
    return (uint16_t)(bits | (sign >> 16));
}

/* bfloat16 is the upper half of a float. */
static inline float axrt_bf16_to_float(uint16_t b)
{
    const uint32_t bits = (uint32_t)b << 16;
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static inline uint16_t axrt_float_to_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

/* The dense kernel of a half type: y = x w^T + bias, as axrt_dense_f16. */
typedef void axrt_dense_half_fn(const uint16_t *x, const uint16_t *w, const uint16_t *bias,
                                uint16_t *y, size_t rows, size_t in, size_t out);

/* The half-type kernels one instruction set provides (axrt_half.inc picks
 * the table of the instruction set axrt_cpu() uses). */
typedef struct axrt_half_ops {
    const char *name; /* "portable", "avx2+f16c", "avx512+bf16", ... */
    axrt_dense_half_fn *dense_f16, *dense_bf16;
} axrt_half_ops;

#ifdef AXRT_X86_SIMD
/* axrt_x86_half.c: NULL when this CPU lacks the instructions (F16C and
   AVX2+FMA; AVX-512F+BW, with AVX-512 BF16's vdpbf16ps where present). */
const axrt_half_ops *axrt_half_ops_avx2(void);
const axrt_half_ops *axrt_half_ops_avx512(void);
#endif

#endif /* AXRT_CPU_H */
