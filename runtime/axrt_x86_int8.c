/* axrt_x86_int8.c — the x86 tiles of the packed int8 GEMM (axrt_q8.h),
 * compiled with __attribute__((target)), so no special flags are needed:
 *   AVX-512 VNNI  up to 6 rows x 64 channels: 24 zmm accumulators, one
 *                 64-byte weight load per 16 channels and group of four k,
 *                 the row's four input bytes broadcast, vpdpbusd; the
 *                 epilogue (requantisation in 64-bit lanes) vectorised too;
 *   AVX2          up to 3 rows x 16 channels: weights widened to int16
 *                 (vpmovsxbw), the four input bytes widened and broadcast,
 *                 vpmaddwd (exact: vpmaddubsw would saturate 255 * 127 * 2
 *                 in int16), pairs summed at the end; the portable epilogue.
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
 * inlining, so that acc lives in registers. */
VNNI_INLINE void vnni_tile(const axrt_q8_tile *t, const int MR, const int NB)
{
    const size_t kp = t->nseg * axrt_q8_round4(t->seg_len), full = t->seg_len / 4, rem = t->seg_len % 4;
    const int8_t *wp[4];
    size_t step[4];
    __mmask16 m[4];
    for (int b = 0; b < NB; b++) {
        const size_t col = t->c0 + (size_t)b * AXRT_Q8_BLOCK;
        const size_t wb = t->out - col < AXRT_Q8_BLOCK ? t->out - col : AXRT_Q8_BLOCK;
        wp[b] = t->packed + col * kp;
        step[b] = wb * 4;
        m[b] = (__mmask16)((1u << wb) - 1u);
    }
    __m512i acc[6][4];
    for (int r = 0; r < MR; r++)
        for (int b = 0; b < NB; b++)
            acc[r][b] = _mm512_setzero_si512();
#define VNNI_GROUP(xload)                                                          \
    do {                                                                           \
        __m512i w[4];                                                              \
        for (int b = 0; b < NB; b++) {                                             \
            w[b] = _mm512_maskz_loadu_epi32(m[b], wp[b]);                          \
            wp[b] += step[b];                                                      \
        }                                                                          \
        for (int r = 0; r < MR; r++) {                                             \
            const __m512i xv = _mm512_set1_epi32((int)(xload));                    \
            for (int b = 0; b < NB; b++)                                           \
                acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], xv, w[b]);              \
        }                                                                          \
    } while (0)
    for (size_t s = 0; s < t->nseg; s++) {
        const uint8_t *a[6];
        for (int r = 0; r < MR; r++)
            a[r] = t->rows[s * (size_t)MR + (size_t)r];
        for (size_t g = 0; g < full; g++)
            VNNI_GROUP(load32(a[r] + 4 * g));
        if (rem)
            VNNI_GROUP(axrt_q8_load4(a[r] + 4 * full, rem));
    }
#undef VNNI_GROUP
    for (int r = 0; r < MR; r++)
        for (int b = 0; b < NB; b++)
            _mm512_mask_storeu_epi32(t->acc + (size_t)r * t->ldacc + (size_t)b * AXRT_Q8_BLOCK, m[b], acc[r][b]);
}

#define VNNI_TILE_FN(MR, NB)                                                                         \
    __attribute__((target(VNNI_TARGET))) static void vnni_tile_##MR##_##NB(const axrt_q8_tile *t) \
    {                                                                                                \
        vnni_tile(t, MR, NB);                                                                        \
    }
#define VNNI_TILE_ROW(MR) VNNI_TILE_FN(MR, 1) VNNI_TILE_FN(MR, 2) VNNI_TILE_FN(MR, 3) VNNI_TILE_FN(MR, 4)
VNNI_TILE_ROW(1) VNNI_TILE_ROW(2) VNNI_TILE_ROW(3) VNNI_TILE_ROW(4) VNNI_TILE_ROW(5) VNNI_TILE_ROW(6)
#define VNNI_TILE_ENTRY(MR) {vnni_tile_##MR##_1, vnni_tile_##MR##_2, vnni_tile_##MR##_3, vnni_tile_##MR##_4}

static void vnni_tile_any(const axrt_q8_tile *t)
{
    static void (*const tiles[6][4])(const axrt_q8_tile *) = {
        VNNI_TILE_ENTRY(1), VNNI_TILE_ENTRY(2), VNNI_TILE_ENTRY(3),
        VNNI_TILE_ENTRY(4), VNNI_TILE_ENTRY(5), VNNI_TILE_ENTRY(6),
    };
    tiles[t->mr - 1][(t->nc + AXRT_Q8_BLOCK - 1) / AXRT_Q8_BLOCK - 1](t);
}

/* round_half_away(|v| * |mult| / 2^shift) in 64-bit lanes, truncated to 32
 * bits (axrt_requantize before its sign): eight lanes of av, am, sh. */
VNNI_INLINE __m256i vnni_requant_half(__m256i av, __m256i am, __m256i sh)
{
    const __m512i s = _mm512_cvtepu32_epi64(sh);
    const __m512i p = _mm512_mul_epu32(_mm512_cvtepu32_epi64(av), _mm512_cvtepu32_epi64(am));
    const __m512i half = _mm512_sllv_epi64(_mm512_set1_epi64(1), _mm512_sub_epi64(s, _mm512_set1_epi64(1)));
    return _mm512_cvtepi64_epi32(_mm512_srlv_epi64(_mm512_add_epi64(p, half), s));
}

/* axrt_q8_finish_portable, sixteen channels at a time, the same integers
 * and the same float operations. */
__attribute__((target(VNNI_TARGET))) static void vnni_finish(const axrt_requant *rq, const int32_t *acc,
                                                             size_t c0, size_t nc, float *y)
{
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
            const __mmask16 neg = _mm512_cmplt_epi32_mask(_mm512_xor_si512(v, mult), _mm512_setzero_si512());
            const __m512i av = _mm512_abs_epi32(v), am = _mm512_abs_epi32(mult);
            const __m256i lo = vnni_requant_half(_mm512_castsi512_si256(av), _mm512_castsi512_si256(am),
                                                 _mm512_castsi512_si256(sh));
            const __m256i hi = vnni_requant_half(_mm512_extracti64x4_epi64(av, 1), _mm512_extracti64x4_epi64(am, 1),
                                                 _mm512_extracti64x4_epi64(sh, 1));
            __m512i r = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
            r = _mm512_mask_sub_epi32(r, neg, _mm512_setzero_si512(), r);
            r = _mm512_min_epi32(_mm512_max_epi32(r, _mm512_set1_epi32(rq->lo - rq->zp)),
                                 _mm512_set1_epi32(rq->hi - rq->zp));
            f = _mm512_mul_ps(_mm512_cvtepi32_ps(r), _mm512_set1_ps(rq->scale));
        }
        _mm512_mask_storeu_ps(y + j, m, f);
    }
}

const axrt_q8_gemm_ops *axrt_q8_gemm_vnni(void)
{
    static const axrt_q8_gemm_ops ops = {"avx512vnni", 6, 64, vnni_tile_any, vnni_finish};
    const int ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    return ok ? &ops : NULL;
}

/* ---- AVX2 ---------------------------------------------------------------------- */

#define AVX2_INLINE static inline __attribute__((target("avx2"), always_inline))

/* The tile with MR rows (a constant after inlining) and one block of 16
 * channels: acc[r][q] holds channels 4q..4q+3, two partial sums each. */
AVX2_INLINE void avx2_tile(const axrt_q8_tile *t, const int MR)
{
    const size_t kp = t->nseg * axrt_q8_round4(t->seg_len), full = t->seg_len / 4, rem = t->seg_len % 4;
    const size_t wb = t->out - t->c0 < AXRT_Q8_BLOCK ? t->out - t->c0 : AXRT_Q8_BLOCK, step = wb * 4;
    const int8_t *wp = t->packed + t->c0 * kp;
    int8_t narrow[64] = {0};   /* a narrow block's group, padded to 16 channels */
    __m256i acc[3][4];
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < 4; q++)
            acc[r][q] = _mm256_setzero_si256();
#define AVX2_GROUP(xload)                                                                       \
    do {                                                                                        \
        const int8_t *src = wp;                                                                 \
        if (wb < AXRT_Q8_BLOCK)                                                                 \
            src = memcpy(narrow, wp, step);                                                     \
        wp += step;                                                                             \
        __m256i w[4];                                                                           \
        for (int q = 0; q < 4; q++)                                                             \
            w[q] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + 16 * q)));      \
        for (int r = 0; r < MR; r++) {                                                          \
            const __m256i xv = _mm256_cvtepu8_epi16(_mm_set1_epi32((int)(xload)));             \
            for (int q = 0; q < 4; q++)                                                         \
                acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(xv, w[q]));           \
        }                                                                                       \
    } while (0)
    for (size_t s = 0; s < t->nseg; s++) {
        const uint8_t *a[3];
        for (int r = 0; r < MR; r++)
            a[r] = t->rows[s * (size_t)MR + (size_t)r];
        for (size_t g = 0; g < full; g++)
            AVX2_GROUP(load32(a[r] + 4 * g));
        if (rem)
            AVX2_GROUP(axrt_q8_load4(a[r] + 4 * full, rem));
    }
#undef AVX2_GROUP
    for (int r = 0; r < MR; r++) {
        /* hadd: [c0 c1 c4 c5 | c2 c3 c6 c7]; the permute puts them in order */
        const __m256i s01 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xd8);
        const __m256i s23 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][2], acc[r][3]), 0xd8);
        int32_t sums[16];
        _mm256_storeu_si256((__m256i *)sums, s01);
        _mm256_storeu_si256((__m256i *)(sums + 8), s23);
        memcpy(t->acc + (size_t)r * t->ldacc, sums, t->nc * sizeof *sums);
    }
}

__attribute__((target("avx2"))) static void avx2_tile_1(const axrt_q8_tile *t) { avx2_tile(t, 1); }
__attribute__((target("avx2"))) static void avx2_tile_2(const axrt_q8_tile *t) { avx2_tile(t, 2); }
__attribute__((target("avx2"))) static void avx2_tile_3(const axrt_q8_tile *t) { avx2_tile(t, 3); }

static void avx2_tile_any(const axrt_q8_tile *t)
{
    static void (*const tiles[3])(const axrt_q8_tile *) = {avx2_tile_1, avx2_tile_2, avx2_tile_3};
    tiles[t->mr - 1](t);
}

const axrt_q8_gemm_ops *axrt_q8_gemm_avx2(void)
{
    static const axrt_q8_gemm_ops ops = {"avx2", 3, 16, avx2_tile_any, axrt_q8_finish_portable};
    return __builtin_cpu_supports("avx2") ? &ops : NULL;
}

#else
typedef int axrt_x86_int8_unused; /* ISO C forbids an empty translation unit */
#endif
