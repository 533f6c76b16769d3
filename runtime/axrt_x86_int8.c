/* axrt_x86_int8.c — the x86 int8 kernel tables (axrt_q8.h's
 * axrt_q8_gemm_ops), compiled with __attribute__((target)), so no special
 * flags are needed.  The GEMM tiles are one per instruction set, by design:
 *   AVX-512 VNNI  up to 6 rows x 64 channels: 24 zmm accumulators, one
 *                 64-byte weight load per 16 channels and group of four k,
 *                 the row's four input bytes broadcast, vpdpbusd;
 *   AVX2          up to 3 rows x 16 channels: weights widened to int16
 *                 (vpmovsxbw), the four input bytes widened and broadcast,
 *                 vpmaddwd (exact: vpmaddubsw would saturate 255 * 127 * 2
 *                 in int16), pairs summed at the end.
 * The rest of each table (the GEMM epilogue with its requantisation in
 * 64-bit lanes, the depthwise sum, the elementwise add and rescale) is one
 * template over the vector width, axrt_x86_int8_lanes.inc, included below
 * for 16 lanes and for 8 over each width's vocabulary.
 * All give the portable path's integers exactly (int32 sums of exact
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
/* row r of segment s (row 0 for the rows past MR, never read): both tiles */
#define Q8_ROW_PTR(r) const uint8_t *a##r = t->rows[s * (size_t)MR + (size_t)(r < MR ? r : 0)];
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
        Q8_ROW_PTR(0) Q8_ROW_PTR(1) Q8_ROW_PTR(2) Q8_ROW_PTR(3) Q8_ROW_PTR(4) Q8_ROW_PTR(5)
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

/* ---- AVX-512: the epilogue, the depthwise sum, the add and the rescale --------- */

/* Those kernels are axrt_x86_int8_lanes.inc's, written once for both vector
 * widths over the vocabulary defined here (that file describes it); the
 * tiles above and below stay one per instruction set by design (vpdpbusd
 * against vpmaddwd on widened bytes: other instructions, registers and tile
 * shapes). */
static void *q8_ew_at(const axrt_ew_q8 *p, void *y, size_t i)
{
    return (unsigned char *)y + i * ((p->flags & AXRT_Q8_OUT_BYTES) ? 1 : sizeof(float));
}

/* the lanes m of v (each in [0, 255]) as bytes: narrowed in a register
   (vpmovdb to memory is slow on Zen 4), a plain store when all lanes go */
VNNI_INLINE void vnni_store_u8(uint8_t *p, __mmask16 m, __m512i v)
{
    const __m128i b = _mm512_cvtepi32_epi8(v);
    if (m == 0xffff)
        _mm_storeu_si128((__m128i *)p, b);
    else
        _mm_mask_storeu_epi8(p, m, b);
}

#define QV_PFX vnni
#define QV_TARGET VNNI_TARGET
#define QV_INT __m512i
#define QV_FLOAT __m512
#define QV_W 16
#define QV(op) _mm512##op
#define QV_ZERO _mm512_setzero_si512
#define QV_SET64 _mm512_set1_epi64
#define QV_AND _mm512_and_si512
#define QV_XOR _mm512_xor_si512
#define QV_BLEND_ODD(a, b) _mm512_mask_blend_epi32(0xaaaa, a, b)
#define QV_CMP __mmask16
#define QV_CMPEQ _mm512_cmpeq_epi32_mask
#define QV_CMPGT _mm512_cmpgt_epi32_mask
#define QV_BOTH(c, d) ((__mmask16)((c) & (d)))
#define QV_SELECT(c, a, b) _mm512_mask_mov_epi32(a, c, b)
#define QV_INC_WHERE(c, q) _mm512_mask_add_epi32(q, c, q, _mm512_set1_epi32(1))
#define QV_MASK __mmask16
#define QV_MASK_OF(n) ((__mmask16)((n) >= 16 ? 0xffffu : (1u << (n)) - 1u))
#define QV_ALL ((__mmask16)0xffff)
#define QV_COVERED(n) (n)   /* the last channels masked */
#define QV_ANY_BELOW(m, v, k) _mm512_mask_cmplt_epi32_mask(m, v, _mm512_set1_epi32(k))
#define QV_LOAD32(m, p) _mm512_maskz_loadu_epi32(m, p)
#define QV_LOADPS(m, p) _mm512_maskz_loadu_ps(m, p)
#define QV_LOADU8(m, p) _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, p))
#define QV_LOADS8(m, p) _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p))
#define QV_STOREPS(m, p, f) _mm512_mask_storeu_ps(p, m, f)
#define QV_STORE32(m, p, v) _mm512_mask_storeu_epi32(p, m, v)
#define QV_STOREU8(m, p, v) vnni_store_u8(p, m, v)
#include "axrt_x86_int8_lanes.inc"

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
        Q8_ROW_PTR(0) Q8_ROW_PTR(1) Q8_ROW_PTR(2)
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

/* ---- AVX2: the epilogue, the depthwise sum, the add and the rescale ------------ */

/* axrt_x86_int8_lanes.inc over eight lanes.  AVX2 has no byte masks: whole
 * vectors only (QV_MASK unused), the last nc % 8 channels to the scalar code. */
AVX2_INLINE void avx2_store_u8(uint8_t *p, __m256i v)
{
    const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)p, _mm_packus_epi16(h, h));   /* v in [0, 255]: the packs saturate nothing */
}

#define QV_PFX avx2
#define QV_TARGET "avx2"
#define QV_INT __m256i
#define QV_FLOAT __m256
#define QV_W 8
#define QV(op) _mm256##op
#define QV_ZERO _mm256_setzero_si256
#define QV_SET64 _mm256_set1_epi64x
#define QV_AND _mm256_and_si256
#define QV_XOR _mm256_xor_si256
#define QV_BLEND_ODD(a, b) _mm256_blend_epi32(a, b, 0xaa)
#define QV_CMP __m256i
#define QV_CMPEQ _mm256_cmpeq_epi32
#define QV_CMPGT _mm256_cmpgt_epi32
#define QV_BOTH _mm256_and_si256
#define QV_SELECT(c, a, b) _mm256_blendv_epi8(a, b, c)
#define QV_INC_WHERE(c, q) _mm256_sub_epi32(q, c)   /* c's lanes are -1 */
#define QV_MASK int
#define QV_MASK_OF(n) ((void)(n), 0)
#define QV_ALL 0
#define QV_COVERED(n) ((n) / 8 * 8)
#define QV_ANY_BELOW(m, v, k) ((void)(m), _mm256_movemask_epi8(_mm256_cmpgt_epi32(_mm256_set1_epi32(k), v)) != 0)
#define QV_LOAD32(m, p) ((void)(m), _mm256_loadu_si256((const __m256i *)(p)))
#define QV_LOADPS(m, p) ((void)(m), _mm256_loadu_ps(p))
#define QV_LOADU8(m, p) ((void)(m), _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p))))
#define QV_LOADS8(m, p) ((void)(m), _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p))))
#define QV_STOREPS(m, p, f) ((void)(m), _mm256_storeu_ps(p, f))
#define QV_STORE32(m, p, v) ((void)(m), _mm256_storeu_si256((__m256i *)(p), v))
#define QV_STOREU8(m, p, v) ((void)(m), avx2_store_u8(p, v))
#include "axrt_x86_int8_lanes.inc"

const axrt_q8_gemm_ops *axrt_q8_gemm_avx2(void)
{
    static const axrt_q8_gemm_ops ops = {"avx2", 3, 16, avx2_tile_any, avx2_finish,
                                         avx2_dw_sum, avx2_add, avx2_rescale};
    return __builtin_cpu_supports("avx2") ? &ops : NULL;
}

#else
typedef int axrt_x86_int8_unused; /* ISO C forbids an empty translation unit */
#endif
