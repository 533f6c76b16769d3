/* axrt_x86_int8.c — the x86 tiles of the packed int8 GEMM (axrt_q8.h),
 * compiled with __attribute__((target)), so no special flags are needed:
 *   AVX-512 VNNI  up to 6 rows x 64 channels: 24 zmm accumulators, one
 *                 64-byte weight load per 16 channels and group of four k,
 *                 the row's four input bytes broadcast, vpdpbusd; the
 *                 epilogue (requantisation in 64-bit lanes) vectorised too;
 *   AVX2          up to 3 rows x 16 channels: weights widened to int16
 *                 (vpmovsxbw), the four input bytes widened and broadcast,
 *                 vpmaddwd (exact: vpmaddubsw would saturate 255 * 127 * 2
 *                 in int16), pairs summed at the end; the epilogue eight
 *                 channels at a time (64-bit lanes, as the AVX-512 one's).
 * Both give the portable path's integers exactly (int32 sums of exact
 * products, wrapping alike).  Empty (but for a declaration) off x86-64,
 * under -DAXRT_NO_SIMD or without GCC/clang. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "axrt_q8.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
#include <immintrin.h>

static uint32_t load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ---- AVX-512 VNNI ------------------------------------------------------------ */

#define VNNI_TARGET "avx512f,avx512bw,avx512vl,avx512vnni"
#define VNNI_INLINE static inline __attribute__((target(VNNI_TARGET), always_inline))

/* The tile with MR rows and NB blocks of 16 channels, both constants after
 * inlining; the accumulators are named variables c<row><block> (an array
 * would live in memory), those outside MR x NB vanish.  One group of four k:
 * the NB weight vectors, then row by row the broadcast input and its NB dot
 * products (24 accumulators + 4 weights + 1 input of the 32 registers). */
#define VNNI_BLOCKS(OP, r) OP(r, 0) OP(r, 1) OP(r, 2) OP(r, 3)
#define VNNI_ALL(OP) VNNI_BLOCKS(OP, 0) VNNI_BLOCKS(OP, 1) VNNI_BLOCKS(OP, 2) VNNI_BLOCKS(OP, 3) \
    VNNI_BLOCKS(OP, 4) VNNI_BLOCKS(OP, 5)
#define VNNI_DECLARE(r, b) __m512i c##r##b = _mm512_setzero_si512();
/* c += dot(x, w) in place: GCC 12 copies (and spills) the accumulators of
   _mm512_dpbusd_epi32 in a loop like this one; the asm statement does not. */
#define VNNI_DPBUSD(c, x, w) __asm__("vpdpbusd %2, %1, %0" : "+v"(c) : "v"(x), "v"(w))
#define VNNI_DOT(r, b) if (b < NB) VNNI_DPBUSD(c##r##b, xv, w##b);
#define VNNI_STORE(r, b)                                                                             \
    if (r < MR && b < NB)                                                                            \
        _mm512_mask_storeu_epi32(t->acc + (size_t)r * t->ldacc + (size_t)b * AXRT_Q8_BLOCK, m##b, c##r##b);
#define VNNI_ROW(r, load)                                                    \
    if (r < MR) {                                                            \
        const __m512i xv = _mm512_set1_epi32((int)load(a##r));               \
        VNNI_BLOCKS(VNNI_DOT, r)                                             \
    }
#define VNNI_W(b) const __m512i w##b = b < NB ? _mm512_maskz_loadu_epi32(m##b, w + b * bstride) : _mm512_setzero_si512();
#define VNNI_GROUP(load)                                                                   \
    do {                                                                                   \
        VNNI_W(0) VNNI_W(1) VNNI_W(2) VNNI_W(3)                                            \
        VNNI_ROW(0, load) VNNI_ROW(1, load) VNNI_ROW(2, load) VNNI_ROW(3, load)            \
        VNNI_ROW(4, load) VNNI_ROW(5, load)                                                \
        w += step;                                                                         \
    } while (0)
#define VNNI_MASK(b) const __mmask16 m##b = (__mmask16)(b + 1 < NB ? 0xffffu : (1u << wb) - 1u);
#define VNNI_ROW_PTR(r) const uint8_t *a##r = t->rows[s * (size_t)MR + (size_t)(r < MR ? r : 0)];
#define LOAD_FULL(p) load32((p) + 4 * g)
VNNI_INLINE void vnni_tile(const axrt_q8_tile *t, const int MR, const int NB)
{
    const size_t kp = t->nseg * axrt_q8_round4(t->seg_len), full = t->seg_len / 4, rem = t->seg_len % 4;
    /* blocks before the last are full (64 bytes a group); the last has wb
       channels, and is the only one if narrow (vnni_tile_dispatch) */
    const size_t last = t->c0 + (size_t)(NB - 1) * AXRT_Q8_BLOCK;
    const size_t wb = t->out - last < AXRT_Q8_BLOCK ? t->out - last : AXRT_Q8_BLOCK;
    VNNI_MASK(0) VNNI_MASK(1) VNNI_MASK(2) VNNI_MASK(3)
    const int8_t *w = t->packed + t->c0 * kp;
    const size_t bstride = AXRT_Q8_BLOCK * kp, step = NB > 1 ? 64 : wb * 4;
    VNNI_ALL(VNNI_DECLARE)
    for (size_t s = 0; s < t->nseg; s++) {
        VNNI_ROW_PTR(0) VNNI_ROW_PTR(1) VNNI_ROW_PTR(2) VNNI_ROW_PTR(3) VNNI_ROW_PTR(4) VNNI_ROW_PTR(5)
        for (size_t g = 0; g < full; g++)
            VNNI_GROUP(LOAD_FULL);
        w += rem ? step : 0;   /* the tail group: vnni_tail's */
    }
    VNNI_ALL(VNNI_STORE)
}

/* Adds the last group of four k when seg_len % 4 != 0 (then nseg == 1: see
 * axrt_int8.c's conv_segments), its missing input bytes read as 0. */
__attribute__((target(VNNI_TARGET))) static void vnni_tail(const axrt_q8_tile *t)
{
    const size_t kp = axrt_q8_round4(t->seg_len), full = t->seg_len / 4, rem = t->seg_len % 4;
    for (size_t j = 0; j < t->nc; j += AXRT_Q8_BLOCK) {
        const size_t col = t->c0 + j, wb = t->out - col < AXRT_Q8_BLOCK ? t->out - col : AXRT_Q8_BLOCK;
        const __mmask16 m = (__mmask16)((1u << wb) - 1u);
        const __m512i wv = _mm512_maskz_loadu_epi32(m, t->packed + col * kp + full * wb * 4);
        for (size_t r = 0; r < t->mr; r++) {
            int32_t *acc = t->acc + r * t->ldacc + j;
            const __m512i xv = _mm512_set1_epi32((int)axrt_q8_load4(t->rows[r] + 4 * full, rem));
            _mm512_mask_storeu_epi32(acc, m, _mm512_dpbusd_epi32(_mm512_maskz_loadu_epi32(m, acc), xv, wv));
        }
    }
}

#define VNNI_TILE_FN(MR, NB)                                                                         \
    __attribute__((target(VNNI_TARGET))) static void vnni_tile_##MR##_##NB(const axrt_q8_tile *t) \
    {                                                                                                \
        vnni_tile(t, MR, NB);                                                                        \
    }
#define VNNI_TILE_ROW(MR) VNNI_TILE_FN(MR, 1) VNNI_TILE_FN(MR, 2) VNNI_TILE_FN(MR, 3) VNNI_TILE_FN(MR, 4)
VNNI_TILE_ROW(1) VNNI_TILE_ROW(2) VNNI_TILE_ROW(3) VNNI_TILE_ROW(4) VNNI_TILE_ROW(5) VNNI_TILE_ROW(6)
#define VNNI_TILE_ENTRY(MR) {vnni_tile_##MR##_1, vnni_tile_##MR##_2, vnni_tile_##MR##_3, vnni_tile_##MR##_4}

static void vnni_tile_dispatch(const axrt_q8_tile *t)
{
    static void (*const tiles[6][4])(const axrt_q8_tile *) = {
        VNNI_TILE_ENTRY(1), VNNI_TILE_ENTRY(2), VNNI_TILE_ENTRY(3),
        VNNI_TILE_ENTRY(4), VNNI_TILE_ENTRY(5), VNNI_TILE_ENTRY(6),
    };
    const size_t head = (t->nc - 1) / AXRT_Q8_BLOCK * AXRT_Q8_BLOCK;
    if (head && t->nc - head < AXRT_Q8_BLOCK) {
        /* a narrow last block after full ones: two tiles, the blocks' paces differ */
        axrt_q8_tile part = *t;
        part.nc = head;
        vnni_tile_dispatch(&part);
        part = *t;
        part.c0 += head;
        part.nc -= head;
        part.acc += head;
        vnni_tile_dispatch(&part);
        return;
    }
    tiles[t->mr - 1][(t->nc + AXRT_Q8_BLOCK - 1) / AXRT_Q8_BLOCK - 1](t);
    if (t->seg_len % 4)
        vnni_tail(t);
}

/* axrt_requantize lane by lane with per-lane multipliers and shifts:
 * |v| * |mult| in 64-bit lanes (the even lanes, then the odd ones: no
 * widening shuffles), plus half of 2^shift, shifted, truncated to 32 bits and
 * given the product's sign. */
VNNI_INLINE __m512i vnni_requant_lanes(__m512i v, __m512i mult, __m512i shift)
{
    const __m512i one = _mm512_set1_epi64(1), av = _mm512_abs_epi32(v), am = _mm512_abs_epi32(mult);
    const __m512i se = _mm512_and_si512(shift, _mm512_set1_epi64(0xffffffff)), so = _mm512_srli_epi64(shift, 32);
    const __m512i pe = _mm512_mul_epu32(av, am);
    const __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(av, 32), _mm512_srli_epi64(am, 32));
    const __m512i re = _mm512_srlv_epi64(_mm512_add_epi64(pe, _mm512_sllv_epi64(one, _mm512_sub_epi64(se, one))), se);
    const __m512i ro = _mm512_srlv_epi64(_mm512_add_epi64(po, _mm512_sllv_epi64(one, _mm512_sub_epi64(so, one))), so);
    const __m512i r = _mm512_mask_blend_epi32(0xaaaa, re, _mm512_slli_epi64(ro, 32));
    const __m512i neg = _mm512_srai_epi32(_mm512_xor_si512(v, mult), 31);   /* all ones where negative */
    return _mm512_sub_epi32(_mm512_xor_si512(r, neg), neg);
}

/* vnni_requant_lanes where every lane's shift is at least 33 (the usual
 * case: the multiplier is below 2^-2): (|p| + 2^(s-1)) >> s equals
 * ((|p| >> (s-1)) + 1) >> 1, and |p| >> (s-1) is (|p| >> 32) >> (s-33), so
 * the products' high halves suffice and the rest runs on 32-bit lanes. */
VNNI_INLINE __m512i vnni_requant_high(__m512i v, __m512i mult, __m512i shift)
{
    const __m512i av = _mm512_abs_epi32(v), am = _mm512_abs_epi32(mult);
    const __m512i pe = _mm512_mul_epu32(av, am);
    const __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(av, 32), _mm512_srli_epi64(am, 32));
    const __m512i high = _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64(pe, 32), po);
    const __m512i t = _mm512_srlv_epi32(high, _mm512_sub_epi32(shift, _mm512_set1_epi32(33)));
    const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(t, _mm512_set1_epi32(1)), 1);
    const __m512i neg = _mm512_srai_epi32(_mm512_xor_si512(v, mult), 31);
    return _mm512_sub_epi32(_mm512_xor_si512(r, neg), neg);
}

/* axrt_requantize_tflite lane by lane, per-lane multipliers and shifts:
 * the left shift max(0, 31 - shift); the doubling high product
 * (v mult + 2^30) >> 31 (gemmlowp's nudge and truncation are this floor),
 * from the signed 64-bit products of the even lanes, then the odd ones, and
 * INT32_MAX where v == mult == INT32_MIN; then the division by
 * 2^max(0, shift - 31) rounded half away: the floor, plus one where the
 * remainder exceeds gemmlowp's threshold (mask >> 1, one more for negative
 * values). */
/* The steps both widths share, on vectors V of the intrinsics P (_mm512,
 * _mm256), ZERO and SET64 their zero and 64-bit broadcast, BLEND_ODD(a, b)
 * a's even 32-bit lanes with b's odd ones: declares one, min, x (v shifted
 * left), right (the right shift) and h (the doubling high product, not yet
 * saturated). */
#define Q8_TFLITE_HIGH(P, V, ZERO, SET64, BLEND_ODD)                                                    \
    const V zero = ZERO(), one = P##_set1_epi32(1), min = P##_set1_epi32(INT32_MIN);                    \
    const V e = P##_sub_epi32(P##_set1_epi32(31), shift);                                              \
    const V x = P##_sllv_epi32(v, P##_max_epi32(e, zero));                                             \
    const V right = P##_max_epi32(P##_sub_epi32(zero, e), zero), nudge = SET64(1 << 30);               \
    const V pe = P##_add_epi64(P##_mul_epi32(x, mult), nudge);                                         \
    const V po = P##_add_epi64(P##_mul_epi32(P##_srli_epi64(x, 32), P##_srli_epi64(mult, 32)), nudge); \
    V h = BLEND_ODD(P##_srli_epi64(pe, 31), P##_slli_epi64(po, 1));
#define VNNI_BLEND_ODD(a, b) _mm512_mask_blend_epi32(0xaaaa, a, b)
#define AVX2_BLEND_ODD(a, b) _mm256_blend_epi32(a, b, 0xaa)

VNNI_INLINE __m512i vnni_requant_tflite(__m512i v, __m512i mult, __m512i shift)
{
    Q8_TFLITE_HIGH(_mm512, __m512i, _mm512_setzero_si512, _mm512_set1_epi64, VNNI_BLEND_ODD)
    const __mmask16 sat = _mm512_cmpeq_epi32_mask(x, min) & _mm512_cmpeq_epi32_mask(mult, min);
    h = _mm512_mask_mov_epi32(h, sat, _mm512_set1_epi32(INT32_MAX));
    const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, right), one);
    const __m512i threshold = _mm512_sub_epi32(_mm512_srai_epi32(mask, 1), _mm512_srai_epi32(h, 31));
    const __m512i q = _mm512_srav_epi32(h, right);
    return _mm512_mask_add_epi32(q, _mm512_cmpgt_epi32_mask(_mm512_and_si512(h, mask), threshold), q, one);
}

/* axrt_q8_finish_portable, sixteen channels at a time, the same integers
 * and the same float operations (or the same bytes when AXRT_Q8_OUT_BYTES; those
 * narrowed in a register: vpmovdb to memory is slow on Zen 4). */
__attribute__((target(VNNI_TARGET))) static void vnni_finish(const axrt_requant *rq, const int32_t *acc,
                                                             size_t c0, size_t nc, void *y)
{
    const __m512i lo = _mm512_set1_epi32(rq->lo - rq->zp), hi = _mm512_set1_epi32(rq->hi - rq->zp);
    const __m512i zp128 = _mm512_set1_epi32(rq->zp + 128);
    const __m512 scale = _mm512_set1_ps(rq->scale);
    for (size_t j = 0; j < nc; j += 16) {
        const size_t n = nc - j < 16 ? nc - j : 16;
        const __mmask16 m = (__mmask16)((1u << n) - 1u);
        const __m512i v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m, acc + j),
                                           _mm512_maskz_loadu_epi32(m, rq->bias + c0 + j));
        __m512 f;
        if (!rq->mult) {
            f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_maskz_loadu_ps(m, rq->fscale + c0 + j));
        } else {
            const __m512i mult = _mm512_maskz_loadu_epi32(m, rq->mult + c0 + j);
            const __m512i sh = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, rq->shift + c0 + j));
            const __m512i q = rq->flags & AXRT_Q8_TFLITE ? vnni_requant_tflite(v, mult, sh)
                              : _mm512_mask_cmplt_epi32_mask(m, sh, _mm512_set1_epi32(33))
                                  ? vnni_requant_lanes(v, mult, sh) : vnni_requant_high(v, mult, sh);
            const __m512i r = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
            if (rq->flags & AXRT_Q8_OUT_BYTES) {   /* r + zp + 128 is in [0, 255]: the truncation is exact */
                const __m128i b = _mm512_cvtepi32_epi8(_mm512_add_epi32(r, zp128));
                if (n == 16)
                    _mm_storeu_si128((__m128i *)((uint8_t *)y + j), b);
                else
                    _mm_mask_storeu_epi8((uint8_t *)y + j, m, b);
                continue;
            }
            f = _mm512_mul_ps(_mm512_cvtepi32_ps(r), scale);
        }
        _mm512_mask_storeu_ps((float *)y + j, m, f);
    }
}

/* ---- AVX-512: the depthwise sum and the elementwise add and rescale -------------- */

/* dw_sum with NB blocks of 16 channels (a constant after inlining): each
 * tap's bytes widened to int32 lanes, x zero- and w sign-extended, so that
 * vpmaddwd's pair (x, 0) . (w, sign) is x * w exactly. */
#define DW512_ACC(b) __m512i d##b = _mm512_setzero_si512();
#define DW512_MASK(b) const __mmask16 m##b = (__mmask16)(nc >= 16 * (b + 1) ? 0xffffu : nc > 16 * b ? (1u << (nc - 16 * b)) - 1u : 0u);
#define DW512_TAP(b)                                                                                   \
    if (b < NB)                                                                                        \
        d##b = _mm512_add_epi32(d##b, _mm512_madd_epi16(                                               \
            _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m##b, xt + 16 * b)),                             \
            _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m##b, (const uint8_t *)wt + 16 * b))));
#define DW512_STORE(b) if (b < NB) _mm512_mask_storeu_epi32(acc + 16 * b, m##b, d##b);
VNNI_INLINE void vnni_dw_sum_nb(const uint8_t *const *x, const int8_t *w, size_t ldw, size_t taps, size_t nc,
                                int32_t *acc, const int NB)
{
    DW512_ACC(0) DW512_ACC(1) DW512_ACC(2) DW512_ACC(3)
    DW512_MASK(0) DW512_MASK(1) DW512_MASK(2) DW512_MASK(3)
    for (size_t t = 0; t < taps; t++) {
        const uint8_t *xt = x[t];
        const int8_t *wt = w + t * ldw;
        DW512_TAP(0) DW512_TAP(1) DW512_TAP(2) DW512_TAP(3)
    }
    DW512_STORE(0) DW512_STORE(1) DW512_STORE(2) DW512_STORE(3)
}

__attribute__((target(VNNI_TARGET))) static void vnni_dw_sum(const uint8_t *const *x, const int8_t *w, size_t ldw,
                                                             size_t taps, size_t nc, int32_t *acc)
{
    switch ((nc + 15) / 16) {
    case 1: vnni_dw_sum_nb(x, w, ldw, taps, nc, acc, 1); break;
    case 2: vnni_dw_sum_nb(x, w, ldw, taps, nc, acc, 2); break;
    case 3: vnni_dw_sum_nb(x, w, ldw, taps, nc, acc, 3); break;
    default: vnni_dw_sum_nb(x, w, ldw, taps, nc, acc, 4); break;
    }
}

/* One fixed-point scaling, axrt_requantize(v, mult, shift) lane by lane:
 * |v| * |mult| in 64-bit lanes (even lanes, then odd ones), plus the half,
 * shifted, truncated to 32 bits and given the product's sign. */
typedef struct q512_scale {
    __m512i mult, amult, half, shifts;   /* shifts: shift in every lane, for tflite */
    __m128i shift;
    int tflite;                          /* flags has AXRT_Q8_TFLITE: vnni_requant_tflite */
} q512_scale;

VNNI_INLINE q512_scale q512_scale_of(int32_t mult, int32_t shift, int32_t flags)
{
    const q512_scale s = {_mm512_set1_epi32(mult), _mm512_abs_epi32(_mm512_set1_epi32(mult)),
                          _mm512_set1_epi64((long long)((uint64_t)1 << (shift - 1))), _mm512_set1_epi32(shift),
                          _mm_cvtsi32_si128(shift), (flags & AXRT_Q8_TFLITE) != 0};
    return s;
}

VNNI_INLINE __m512i q512_requantize(__m512i v, const q512_scale *s)
{
    if (s->tflite)
        return vnni_requant_tflite(v, s->mult, s->shifts);
    const __m512i av = _mm512_abs_epi32(v);
    const __m512i even = _mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epu32(av, s->amult), s->half), s->shift);
    const __m512i odd = _mm512_srl_epi64(
        _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(av, 32), s->amult), s->half), s->shift);
    const __m512i r = _mm512_mask_blend_epi32(0xaaaa, even, _mm512_slli_epi64(odd, 32));
    const __m512i neg = _mm512_srai_epi32(_mm512_xor_si512(v, s->mult), 31);   /* all ones where negative */
    return _mm512_sub_epi32(_mm512_xor_si512(r, neg), neg);
}

/* Sixteen bytes q + 128 as int32 (q - zp) * 2^left. */
VNNI_INLINE __m512i q512_centred(const uint8_t *x, __m512i zp128, __m128i left)
{
    return _mm512_sll_epi32(_mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)x)), zp128), left);
}

/* Stores sixteen results q, clamped to [lo, hi] after out_zp is added, as
 * bytes q + 128 or as floats (q - out_zp) * scale: ew_store's operations. */
VNNI_INLINE void q512_store(const axrt_ew_q8 *p, __m512i r, void *y, size_t i)
{
    r = _mm512_min_epi32(_mm512_max_epi32(r, _mm512_set1_epi32(p->lo - p->out_zp)), _mm512_set1_epi32(p->hi - p->out_zp));
    if (p->flags & AXRT_Q8_OUT_BYTES)
        _mm_storeu_si128((__m128i *)((uint8_t *)y + i), _mm512_cvtepi32_epi8(_mm512_add_epi32(r, _mm512_set1_epi32(p->out_zp + 128))));
    else
        _mm512_storeu_ps((float *)y + i, _mm512_mul_ps(_mm512_cvtepi32_ps(r), _mm512_set1_ps(p->scale)));
}

static void *ew_at(const axrt_ew_q8 *p, void *y, size_t i)
{
    return (unsigned char *)y + i * ((p->flags & AXRT_Q8_OUT_BYTES) ? 1 : sizeof(float));
}

/* The elementwise int8 add and rescale of axrt_q8_gemm_ops, written once
 * for both vector widths: PFX names the kernels (PFX_add, PFX_rescale),
 * TARGET their target attribute, Q the lane helpers of the width
 * (Q_scale_of, Q_requantize, Q_centred, Q_store), V its integer vector type
 * of W int32 lanes, SET1 and ADD its _set1_epi32 and _add_epi32.  The last
 * n % W elements (a row's last row % W) go to the portable kernels. */
#define Q8_EW_KERNELS(PFX, TARGET, Q, V, W, SET1, ADD)                                                 \
    __attribute__((target(TARGET))) static void PFX##_add(const uint8_t *a, const uint8_t *b, void *y, \
                                                          size_t n, const axrt_ew_q8 *p)               \
    {                                                                                                  \
        if (p->flags & AXRT_Q8_MUL) { /* TFLite's int8 MUL: the portable C */                          \
            axrt_q8_add_portable(a, b, y, n, p);                                                       \
            return;                                                                                    \
        }                                                                                              \
        const Q##_scale sa = Q##_scale_of(p->mult[0], p->shift[0], p->flags);                          \
        const Q##_scale sb = Q##_scale_of(p->mult[1], p->shift[1], p->flags);                          \
        const Q##_scale so = Q##_scale_of(p->out_mult, p->out_shift, p->flags);                        \
        const V za = SET1(p->zp[0] + 128), zb = SET1(p->zp[1] + 128);                                   \
        const __m128i left = _mm_cvtsi32_si128(p->left);                                               \
        size_t i = 0;                                                                                  \
        for (; i + W <= n; i += W) {                                                                   \
            const V va = Q##_requantize(Q##_centred(a + i, za, left), &sa);                            \
            const V vb = Q##_requantize(Q##_centred(b + i, zb, left), &sb);                            \
            Q##_store(p, Q##_requantize(ADD(va, vb), &so), y, i);                                      \
        }                                                                                              \
        axrt_q8_add_portable(a + i, b + i, ew_at(p, y, i), n - i, p);                                  \
    }                                                                                                  \
                                                                                                       \
    __attribute__((target(TARGET))) static void PFX##_rescale(const uint8_t *x, void *y, size_t outer,  \
                                                              size_t row, size_t ld, size_t offset,    \
                                                              const axrt_ew_q8 *p)                     \
    {                                                                                                  \
        const Q##_scale s = Q##_scale_of(p->mult[0], p->shift[0], p->flags);                           \
        const V z = SET1(p->zp[0] + 128);                                                              \
        const __m128i left = _mm_cvtsi32_si128(p->left);                                               \
        for (size_t o = 0; o < outer; o++) {                                                           \
            const uint8_t *xr = x + o * row;                                                           \
            void *yr = ew_at(p, y, o * ld + offset);                                                   \
            size_t j = 0;                                                                              \
            for (; j + W <= row; j += W)                                                               \
                Q##_store(p, Q##_requantize(Q##_centred(xr + j, z, left), &s), yr, j);                 \
            axrt_q8_rescale_portable(xr + j, ew_at(p, yr, j), 1, row - j, row - j, 0, p);              \
        }                                                                                              \
    }

Q8_EW_KERNELS(vnni, VNNI_TARGET, q512, __m512i, 16, _mm512_set1_epi32, _mm512_add_epi32)

const axrt_q8_gemm_ops *axrt_q8_gemm_vnni(void)
{
    static const axrt_q8_gemm_ops ops = {"avx512vnni", 6, 64, vnni_tile_dispatch, vnni_finish,
                                         vnni_dw_sum, vnni_add, vnni_rescale};
    const int ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    return ok ? &ops : NULL;
}

/* ---- AVX2 ---------------------------------------------------------------------- */

#define AVX2_INLINE static inline __attribute__((target("avx2"), always_inline))

/* The tile with MR rows (a constant after inlining) and one block of 16
 * channels: c<r><q> holds row r's channels 4q..4q+3, two partial sums each
 * (named variables, so that they stay in registers: 12 + 3 inputs + 1
 * weight vector of the 16). */
#define AVX2_QUADS(OP, r) OP(r, 0) OP(r, 1) OP(r, 2) OP(r, 3)
#define AVX2_ALL(OP) AVX2_QUADS(OP, 0) AVX2_QUADS(OP, 1) AVX2_QUADS(OP, 2)
#define AVX2_DECLARE(r, q) __m256i c##r##q = _mm256_setzero_si256();
#define AVX2_X(r, load) \
    const __m256i x##r = r < MR ? _mm256_cvtepu8_epi16(_mm_set1_epi32((int)load(a##r))) : _mm256_setzero_si256();
/* c += madd(x, w), the sum in place (an asm statement, as VNNI_DPBUSD) */
#define AVX2_MADD(r, q) \
    if (r < MR) __asm__("vpaddd %1, %0, %0" : "+x"(c##r##q) : "x"(_mm256_madd_epi16(x##r, wq)));
#define AVX2_QUAD(q)                                                                       \
    {                                                                                      \
        const __m256i wq = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + 16 * q))); \
        AVX2_MADD(0, q) AVX2_MADD(1, q) AVX2_MADD(2, q)                                    \
    }
#define AVX2_GROUP(load)                                                                   \
    do {                                                                                   \
        const int8_t *src = wp;                                                            \
        if (wb < AXRT_Q8_BLOCK)                                                            \
            src = memcpy(narrow, wp, step);                                                \
        wp += step;                                                                        \
        AVX2_X(0, load) AVX2_X(1, load) AVX2_X(2, load)                                    \
        AVX2_QUAD(0) AVX2_QUAD(1) AVX2_QUAD(2) AVX2_QUAD(3)                                \
    } while (0)
#define AVX2_ROW_PTR(r) const uint8_t *a##r = t->rows[s * (size_t)MR + (size_t)(r < MR ? r : 0)];
#define LOAD_TAIL(p) axrt_q8_load4((p) + 4 * full, rem)
/* hadd: [c0 c1 c4 c5 | c2 c3 c6 c7]; the permute puts them in order */
#define AVX2_STORE(r)                                                                              \
    if (r < MR) {                                                                                  \
        int32_t sums[16];                                                                          \
        _mm256_storeu_si256((__m256i *)sums, _mm256_permute4x64_epi64(_mm256_hadd_epi32(c##r##0, c##r##1), 0xd8)); \
        _mm256_storeu_si256((__m256i *)(sums + 8),                                                 \
                            _mm256_permute4x64_epi64(_mm256_hadd_epi32(c##r##2, c##r##3), 0xd8));  \
        memcpy(t->acc + (size_t)r * t->ldacc, sums, t->nc * sizeof *sums);                         \
    }
AVX2_INLINE void avx2_tile(const axrt_q8_tile *t, const int MR)
{
    const size_t kp = t->nseg * axrt_q8_round4(t->seg_len), full = t->seg_len / 4, rem = t->seg_len % 4;
    const size_t wb = t->out - t->c0 < AXRT_Q8_BLOCK ? t->out - t->c0 : AXRT_Q8_BLOCK, step = wb * 4;
    const int8_t *wp = t->packed + t->c0 * kp;
    int8_t narrow[64] = {0};   /* a narrow block's group, padded to 16 channels */
    AVX2_ALL(AVX2_DECLARE)
    for (size_t s = 0; s < t->nseg; s++) {
        AVX2_ROW_PTR(0) AVX2_ROW_PTR(1) AVX2_ROW_PTR(2)
        for (size_t g = 0; g < full; g++)
            AVX2_GROUP(LOAD_FULL);
        if (rem)
            AVX2_GROUP(LOAD_TAIL);
    }
    AVX2_STORE(0) AVX2_STORE(1) AVX2_STORE(2)
}

__attribute__((target("avx2"))) static void avx2_tile_1(const axrt_q8_tile *t) { avx2_tile(t, 1); }
__attribute__((target("avx2"))) static void avx2_tile_2(const axrt_q8_tile *t) { avx2_tile(t, 2); }
__attribute__((target("avx2"))) static void avx2_tile_3(const axrt_q8_tile *t) { avx2_tile(t, 3); }

static void avx2_tile_any(const axrt_q8_tile *t)
{
    static void (*const tiles[3])(const axrt_q8_tile *) = {avx2_tile_1, avx2_tile_2, avx2_tile_3};
    tiles[t->mr - 1](t);
}

/* ---- AVX2: the depthwise sum and the elementwise add and rescale ----------------- */

/* acc[k] for k0 <= k < k0 + 8 * NB (NB constant after inlining): as
 * vnni_dw_sum, eight channels a vector. */
#define DW256_ACC(b) __m256i d##b = _mm256_setzero_si256();
#define DW256_TAP(b)                                                                                   \
    if (b < NB)                                                                                        \
        d##b = _mm256_add_epi32(d##b, _mm256_madd_epi16(                                               \
            _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(xt + 8 * b))),                      \
            _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(wt + 8 * b)))));
#define DW256_STORE(b) if (b < NB) _mm256_storeu_si256((__m256i *)(acc + k0 + 8 * b), d##b);
AVX2_INLINE void avx2_dw_sum_nb(const uint8_t *const *x, const int8_t *w, size_t ldw, size_t taps, size_t k0,
                                int32_t *acc, const int NB)
{
    DW256_ACC(0) DW256_ACC(1) DW256_ACC(2) DW256_ACC(3)
    for (size_t t = 0; t < taps; t++) {
        const uint8_t *xt = x[t] + k0;
        const int8_t *wt = w + t * ldw + k0;
        DW256_TAP(0) DW256_TAP(1) DW256_TAP(2) DW256_TAP(3)
    }
    DW256_STORE(0) DW256_STORE(1) DW256_STORE(2) DW256_STORE(3)
}

__attribute__((target("avx2"))) static void avx2_dw_sum(const uint8_t *const *x, const int8_t *w, size_t ldw,
                                                        size_t taps, size_t nc, int32_t *acc)
{
    size_t k0 = 0;
    for (; k0 + 32 <= nc; k0 += 32)
        avx2_dw_sum_nb(x, w, ldw, taps, k0, acc, 4);
    for (; k0 + 8 <= nc; k0 += 8)
        avx2_dw_sum_nb(x, w, ldw, taps, k0, acc, 1);
    for (size_t k = k0; k < nc; k++) {   /* the last nc % 8 channels */
        int32_t sum = 0;
        for (size_t t = 0; t < taps; t++)
            sum += (int32_t)x[t][k] * w[t * ldw + k];
        acc[k] = sum;
    }
}

/* vnni_requant_tflite on eight lanes */
AVX2_INLINE __m256i avx2_requant_tflite(__m256i v, __m256i mult, __m256i shift)
{
    Q8_TFLITE_HIGH(_mm256, __m256i, _mm256_setzero_si256, _mm256_set1_epi64x, AVX2_BLEND_ODD)
    const __m256i sat = _mm256_and_si256(_mm256_cmpeq_epi32(x, min), _mm256_cmpeq_epi32(mult, min));
    h = _mm256_blendv_epi8(h, _mm256_set1_epi32(INT32_MAX), sat);
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
    const __m256i threshold = _mm256_sub_epi32(_mm256_srai_epi32(mask, 1), _mm256_srai_epi32(h, 31));
    const __m256i q = _mm256_srav_epi32(h, right);
    return _mm256_sub_epi32(q, _mm256_cmpgt_epi32(_mm256_and_si256(h, mask), threshold));
}

/* q512_scale, q512_requantize, ... on eight lanes */
typedef struct q256_scale {
    __m256i mult, amult, half, shifts;
    __m128i shift;
    int tflite;
} q256_scale;

AVX2_INLINE q256_scale q256_scale_of(int32_t mult, int32_t shift, int32_t flags)
{
    const q256_scale s = {_mm256_set1_epi32(mult), _mm256_abs_epi32(_mm256_set1_epi32(mult)),
                          _mm256_set1_epi64x((long long)((uint64_t)1 << (shift - 1))), _mm256_set1_epi32(shift),
                          _mm_cvtsi32_si128(shift), (flags & AXRT_Q8_TFLITE) != 0};
    return s;
}

AVX2_INLINE __m256i q256_requantize(__m256i v, const q256_scale *s)
{
    if (s->tflite)
        return avx2_requant_tflite(v, s->mult, s->shifts);
    const __m256i av = _mm256_abs_epi32(v);
    const __m256i even = _mm256_srl_epi64(_mm256_add_epi64(_mm256_mul_epu32(av, s->amult), s->half), s->shift);
    const __m256i odd = _mm256_srl_epi64(
        _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(av, 32), s->amult), s->half), s->shift);
    const __m256i r = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xaa);
    const __m256i neg = _mm256_srai_epi32(_mm256_xor_si256(v, s->mult), 31);
    return _mm256_sub_epi32(_mm256_xor_si256(r, neg), neg);
}

AVX2_INLINE __m256i q256_centred(const uint8_t *x, __m256i zp128, __m128i left)
{
    return _mm256_sll_epi32(_mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)x)), zp128), left);
}

AVX2_INLINE void q256_store(const axrt_ew_q8 *p, __m256i r, void *y, size_t i)
{
    r = _mm256_min_epi32(_mm256_max_epi32(r, _mm256_set1_epi32(p->lo - p->out_zp)), _mm256_set1_epi32(p->hi - p->out_zp));
    if (p->flags & AXRT_Q8_OUT_BYTES) {   /* r + out_zp + 128 in [0, 255]: the packs saturate nothing */
        const __m256i b = _mm256_add_epi32(r, _mm256_set1_epi32(p->out_zp + 128));
        const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
        _mm_storel_epi64((__m128i *)((uint8_t *)y + i), _mm_packus_epi16(h, h));
    } else {
        _mm256_storeu_ps((float *)y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(r), _mm256_set1_ps(p->scale)));
    }
}

Q8_EW_KERNELS(avx2, "avx2", q256, __m256i, 8, _mm256_set1_epi32, _mm256_add_epi32)

/* vnni_requant_lanes on eight lanes */
AVX2_INLINE __m256i avx2_requant_lanes(__m256i v, __m256i mult, __m256i shift)
{
    const __m256i one = _mm256_set1_epi64x(1), av = _mm256_abs_epi32(v), am = _mm256_abs_epi32(mult);
    const __m256i se = _mm256_and_si256(shift, _mm256_set1_epi64x(0xffffffff)), so = _mm256_srli_epi64(shift, 32);
    const __m256i pe = _mm256_mul_epu32(av, am);
    const __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(av, 32), _mm256_srli_epi64(am, 32));
    const __m256i re = _mm256_srlv_epi64(_mm256_add_epi64(pe, _mm256_sllv_epi64(one, _mm256_sub_epi64(se, one))), se);
    const __m256i ro = _mm256_srlv_epi64(_mm256_add_epi64(po, _mm256_sllv_epi64(one, _mm256_sub_epi64(so, one))), so);
    const __m256i r = _mm256_blend_epi32(re, _mm256_slli_epi64(ro, 32), 0xaa);
    const __m256i neg = _mm256_srai_epi32(_mm256_xor_si256(v, mult), 31);
    return _mm256_sub_epi32(_mm256_xor_si256(r, neg), neg);
}

/* axrt_q8_finish_portable, eight channels at a time (the last nc % 8 by it):
 * the same integers and float operations. */
__attribute__((target("avx2"))) static void avx2_finish(const axrt_requant *rq, const int32_t *acc, size_t c0,
                                                        size_t nc, void *y)
{
    const __m256i lo = _mm256_set1_epi32(rq->lo - rq->zp), hi = _mm256_set1_epi32(rq->hi - rq->zp);
    const __m256i zp128 = _mm256_set1_epi32(rq->zp + 128);
    const __m256 scale = _mm256_set1_ps(rq->scale);
    const size_t elem = (rq->flags & AXRT_Q8_OUT_BYTES) ? 1 : sizeof(float);
    size_t j = 0;
    for (; j + 8 <= nc; j += 8) {
        const __m256i v = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(acc + j)),
                                           _mm256_loadu_si256((const __m256i *)(rq->bias + c0 + j)));
        __m256 f;
        if (!rq->mult) {
            f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_loadu_ps(rq->fscale + c0 + j));
        } else {
            const __m256i mult = _mm256_loadu_si256((const __m256i *)(rq->mult + c0 + j));
            const __m256i sh = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(rq->shift + c0 + j)));
            const __m256i q = rq->flags & AXRT_Q8_TFLITE ? avx2_requant_tflite(v, mult, sh)
                                                         : avx2_requant_lanes(v, mult, sh);
            const __m256i r = _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
            if (rq->flags & AXRT_Q8_OUT_BYTES) {   /* r + zp + 128 in [0, 255]: the packs saturate nothing */
                const __m256i b = _mm256_add_epi32(r, zp128);
                const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
                _mm_storel_epi64((__m128i *)((uint8_t *)y + j), _mm_packus_epi16(h, h));
                continue;
            }
            f = _mm256_mul_ps(_mm256_cvtepi32_ps(r), scale);
        }
        _mm256_storeu_ps((float *)y + j, f);
    }
    axrt_q8_finish_portable(rq, acc + j, c0 + j, nc - j, (unsigned char *)y + j * elem);
}

const axrt_q8_gemm_ops *axrt_q8_gemm_avx2(void)
{
    static const axrt_q8_gemm_ops ops = {"avx2", 3, 16, avx2_tile_any, avx2_finish,
                                         avx2_dw_sum, avx2_add, avx2_rescale};
    return __builtin_cpu_supports("avx2") ? &ops : NULL;
}

#else
typedef int axrt_x86_int8_unused; /* ISO C forbids an empty translation unit */
#endif
