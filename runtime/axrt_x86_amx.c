/* axrt_x86_amx.c — the "amx" table (axrt_cpu.h): AVX-512's, with a
 * packed dense layer's multiply-adds on the AMX tile unit (Intel Sapphire
 * Rapids and later) in Float32 accuracy.
 *
 * AMX multiplies BFloat16 (8 significant bits) and sums in Float32.  Each
 * float is split into three BFloat16 parts by truncation, x = x0 + x1 + x2
 * exactly (each part the next 8 significant bits of what is left, |x1| <
 * 2^-7 |x|, |x2| < 2^-14 |x|; a part below BFloat16's normal range, for
 * |x| < about 2^-110, is read as 0), and a product a b is taken as the six
 * partial products a_i b_j with i + j <= 2, each exact in Float32; the three
 * left out (a1 b2, a2 b1, a2 b2) are below 2^-20 |a b| together, about
 * 2^-22 on average, of a b's sign.  Measured against Float64, a dense
 * layer's outputs come out as close as AVX-512's FMA sums (test_gemm_edges
 * bounds both at 1e-5 of the largest output; 769 steps: 7e-7 and 1.9e-6).
 * Six tile products for one: a Sapphire Rapids core's 2.4 TFLOP/s of
 * BFloat16 give 400 GFLOP/s of Float32 products, against 217 for
 * AVX-512's two FMA ports.
 *
 * The sums run in a fixed order for each output (reduction blocks of
 * AMX_KC, within one the partial products a0 b0, a0 b1, a0 b2, a1 b0,
 * a1 b1, a2 b0, each over 32 steps), whatever the rows and columns a
 * thread takes: an output's bits do not depend on the threads (not the
 * AVX-512 table's bits).  Infinities in x or the weight give NaN (inf -
 * inf in the split).
 *
 * Linux hands AMX's tile state to a process that asks (arch_prctl); where
 * it refuses, or the CPU lacks AMX-BF16, the table is not offered. */
#define _GNU_SOURCE 1 /* syscall */
#include <stddef.h>

#include "axrt_cpu.h"

#if defined(AXRT_X86_SIMD) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AMX_FN __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-bf16")))

/* Reduction block and rows a block of A takes converted: A's parts
   (AMX_MB x AMX_KC x 3 BFloat16, 576 KB) and one 32-column block of the
   weight's (AMX_KC x 32 x 3, 144 KB) stay in a 2 MB L2. */
#define AMX_KC 768
#define AMX_MB 128
#define PARTS 3

typedef struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

/* A thread's converted blocks: a in 1 KB tiles (a_tile), b[part][column
   tile][k / 2][16 columns][2] (AMX's layout of B), both padded to whole
   tiles; c a 32 x 32 block of sums for the edges.  Allocated on a thread's
   first AMX call and freed when it ends (thread_scratch): as thread-local
   data it would be set up for every thread of a process. */
typedef struct amx_scratch {
    uint16_t a[PARTS * AMX_MB * AMX_KC];
    uint16_t b[PARTS * 2 * AMX_KC * 16];
    float c[32 * 32];
} amx_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_made;

static void make_scratch_key(void) { scratch_key_made = pthread_key_create(&scratch_key, free) == 0; }

/* This thread's scratch, NULL where it cannot be had. */
static amx_scratch *thread_scratch(void)
{
    void *s;
    if (pthread_once(&scratch_once, make_scratch_key) != 0 || !scratch_key_made)
        return NULL;
    s = pthread_getspecific(scratch_key);
    if (!s) {
        if (posix_memalign(&s, 64, sizeof(amx_scratch)) != 0)
            return NULL;
        if (pthread_setspecific(scratch_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    return s;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
static size_t smaller(size_t a, size_t b) { return a < b ? a : b; }

/* The three parts of 16 floats, each truncated to BFloat16 and kept as a
   float (its low 16 bits 0). */
AMX_FN static inline void split3(__m512 x, __m512 part[PARTS])
{
    const __m512i high = _mm512_set1_epi32((int)0xffff0000u);
    for (int p = 0; p < PARTS; p++) {
        part[p] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), high));
        x = _mm512_sub_ps(x, part[p]);
    }
}

/* Tile (part p, rows [16 h, 16 h + 16), steps [32 q, 32 q + 32)) of A's
   parts: 1 KB, contiguous (mp rows and kp steps padded). */
static uint16_t *a_tile(amx_scratch *s, size_t p, size_t h, size_t q, size_t mp, size_t kp)
{
    return s->a + ((p * (mp / 16) + h) * (kp / 32) + q) * 512;
}

/* The lanes of 16 floats from k that lie below kc. */
static __mmask16 lanes_below(size_t k, size_t kc)
{
    return (__mmask16)(k >= kc ? 0 : kc - k >= 16 ? 0xffffu : (1u << (kc - k)) - 1u);
}

/* The high halves of lo's and hi's 32-bit lanes, in order: a part's 32
   BFloat16 (each part's low 16 bits are 0). */
AMX_FN static inline __m512i bf16_halves(__m512 lo, __m512 hi)
{
    const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27,
                                         25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_permutex2var_epi16(_mm512_castps_si512(lo), odd, _mm512_castps_si512(hi));
}

/* Rows [0, mb) of x (ld apart), reduction [0, kc), into s->a's tiles,
   zeros to mp rows and kp steps: a tile row (32 steps) at a time, each
   part one 64-byte store (16 floats at a time, each part narrowed and
   stored alone, R2's 32x784->256 took 51-56 us, now 50-52). */
AMX_FN static void convert_a(amx_scratch *s, const float *x, size_t ld, size_t mb, size_t mp, size_t kc, size_t kp)
{
    for (size_t r = 0; r < mp; r++) {
        const float *row = x + r * ld;
        uint16_t *t0 = a_tile(s, 0, r / 16, 0, mp, kp) + r % 16 * 32;
        const size_t part = (size_t)(a_tile(s, 1, 0, 0, mp, kp) - s->a), step = (size_t)(a_tile(s, 0, 0, 1, mp, kp) - s->a);
        for (size_t k = 0; k < kp; k += 32, t0 += step) {
            const __mmask16 lo_live = r < mb ? lanes_below(k, kc) : 0, hi_live = r < mb ? lanes_below(k + 16, kc) : 0;
            __m512 lo[PARTS], hi[PARTS];
            split3(_mm512_maskz_loadu_ps(lo_live, row + k), lo);
            split3(_mm512_maskz_loadu_ps(hi_live, row + k + 16), hi);
            _mm512_store_si512(t0, bf16_halves(lo[0], hi[0]));
            _mm512_store_si512(t0 + part, bf16_halves(lo[1], hi[1]));
            _mm512_store_si512(t0 + 2 * part, bf16_halves(lo[2], hi[2]));
        }
    }
}

/* Outputs [at, at + 16) of a weight packed for axrt_pack_dense_f32 (in x
   out; a panel of width outputs holds reduction step k's at panel + k *
   width), steps [k0, k0 + kc), into three B tiles' worth of parts, part p
   at b + p * part_stride, pairs of steps interleaved per output (AMX's B
   layout: [kp / 2][16 columns][2]); steps past kc and outputs past out 0. */
AMX_FN static void convert_b(uint16_t *b, size_t part_stride, const float *packed, size_t in, size_t out, size_t at,
                             size_t k0, size_t kc, size_t kp)
{
    const size_t width = at < out ? smaller(AXRT_PANEL, out - at) : 0;
    const float *panel = width ? packed + at * in + k0 * width : packed;
    const __mmask16 cols = lanes_below(0, width);
    for (size_t k = 0; k < kp; k += 2) {
        __m512 even[PARTS], odd[PARTS];
        split3(_mm512_maskz_loadu_ps(k < kc ? cols : 0, panel + k * width), even);
        split3(_mm512_maskz_loadu_ps(k + 1 < kc ? cols : 0, panel + (k + 1) * width), odd);
        for (int p = 0; p < PARTS; p++) {
            const __m512i pair = _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(odd[p]),
                                                                  _mm512_set1_epi32((int)0xffff0000u)),
                                                 _mm512_srli_epi32(_mm512_castps_si512(even[p]), 16));
            _mm512_store_si512(b + p * part_stride + k * 16, pair);
        }
    }
}

/* B's tiles for one 32-column block and reduction block: part p of
   column tile t (0 or 1) at b + p * part + t * tile, kp steps. */
typedef struct b_block {
    const uint16_t *b;
    size_t part, tile;
} b_block;

/* Tiles 4-5: A's part i for rows [32 g, 32 g + 32), steps [k, k + 32);
   tiles 6-7: B's part j, both column tiles, from b (at step k); the four
   products into sums 0-3. */
#define LOAD_A(s, i, g, k, mp, kp)                                       \
    do {                                                                 \
        _tile_loadd(4, a_tile(s, i, 2 * (g), (k) / 32, mp, kp), 64);     \
        _tile_loadd(5, a_tile(s, i, 2 * (g) + 1, (k) / 32, mp, kp), 64); \
    } while (0)
#define LOAD_B(b, j, B)                                            \
    do {                                                           \
        _tile_loadd(6, (b) + (j) * (B).part, 64);                  \
        _tile_loadd(7, (b) + (j) * (B).part + (B).tile, 64);       \
    } while (0)
#define PRODUCTS()                  \
    do {                            \
        _tile_dpbf16ps(0, 4, 6);    \
        _tile_dpbf16ps(1, 4, 7);    \
        _tile_dpbf16ps(2, 5, 6);    \
        _tile_dpbf16ps(3, 5, 7);    \
    } while (0)

/* out (32 x 32, rows ld_out floats apart) = in (likewise, ld_in; NULL:
   0) + A's rows [32 g, 32 g + 32) times both column tiles of B, over kp
   steps: tiles 0-3 the sums, 4-5 A's, 6-7 B's.  ld_in 0 repeats in's
   first row (a bias). */
AMX_FN static void block_products(amx_scratch *s, b_block B, const float *in, size_t ld_in, float *out,
                                  size_t ld_out, size_t g, size_t mp, size_t kp)
{
    if (in) {
        _tile_loadd(0, in, ld_in * 4);
        _tile_loadd(1, in + 16, ld_in * 4);
        _tile_loadd(2, in + 16 * ld_in, ld_in * 4);
        _tile_loadd(3, in + 16 * ld_in + 16, ld_in * 4);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    /* per 32 steps the products (i, j) with i + j <= 2 as a snake, B's
       part held from one of A's parts to the next: A0 with B0 B1 B2, A1
       with B1 B0, A2 with B0: 8 pairs of tiles loaded, not 9 */
    for (size_t k = 0; k < kp; k += 32) {
        const uint16_t *b = B.b + k * 16;
        LOAD_A(s, 0, g, k, mp, kp);
        LOAD_B(b, 0, B);
        PRODUCTS();
        LOAD_B(b, 1, B);
        PRODUCTS();
        LOAD_B(b, 2, B);
        PRODUCTS();
        LOAD_A(s, 1, g, k, mp, kp);
        LOAD_B(b, 1, B);
        PRODUCTS();
        LOAD_B(b, 0, B);
        PRODUCTS();
        LOAD_A(s, 2, g, k, mp, kp);
        PRODUCTS();
    }
    _tile_stored(0, out, ld_out * 4);
    _tile_stored(1, out + 16, ld_out * 4);
    _tile_stored(2, out + 16 * ld_out, ld_out * 4);
    _tile_stored(3, out + 16 * ld_out + 16, ld_out * 4);
}

AMX_FN static void configure_tiles(void)
{
    amx_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    /* (not _tile_loadconfig: GCC 12 drops the stores to cfg before it) */
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

/* ---- constant weights, converted once ----
 * A weight the caller declares constant (axrt_dense_packed_const_ep_f32: the same
 * bits at the same address for the life of the process) is converted on
 * its first call and kept: per reduction block of AMX_KC steps, its 16-
 * column tiles in order, each tile's three parts (B's layout), and one
 * tile of zeros after the last (a 32-column block may start at the last
 * tile).  1.5 times the weight's bytes, up to KEPT_MAX in all; past that a
 * weight is converted every call.  A weight's size and KEPT_SAMPLES of its
 * floats, checked every call, catch another weight later loaded at a freed
 * one's address (a model unloaded and another loaded), which is then
 * converted again. */
#define KEPT_MAX ((size_t)1 << 30)
#define KEPT_SAMPLES 32

typedef struct kept_weight {
    struct kept_weight *next;
    const float *packed;
    size_t in, out, bytes;
    float sample[KEPT_SAMPLES];
    uint16_t *tiles;
} kept_weight;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static kept_weight *kept_list;
static size_t kept_bytes;

static size_t tile_count(size_t out) { return (out + 15) / 16 + 1; }

/* The reduction steps of a kept weight's blocks: whole blocks, then the
   last padded to 32. */
static size_t kept_steps(size_t in) { return in / AMX_KC * AMX_KC + round_up(in % AMX_KC, 32); }

/* Where block (k0, column tile t)'s parts start in w's kept tiles, and
   the distance between its parts. */
static b_block kept_block(const kept_weight *w, size_t k0, size_t t)
{
    const size_t kp = round_up(smaller(AMX_KC, w->in - k0), 32);
    const b_block B = {w->tiles + k0 * tile_count(w->out) * PARTS * 16 + t * PARTS * kp * 16, kp * 16, PARTS * kp * 16};
    return B;
}

static void take_samples(const float *packed, size_t n, float sample[KEPT_SAMPLES])
{
    for (size_t i = 0; i < KEPT_SAMPLES; i++) sample[i] = packed[i * (n - 1) / (KEPT_SAMPLES - 1)];
}

AMX_FN static void convert_weight(kept_weight *w)
{
    for (size_t k0 = 0; k0 < w->in; k0 += AMX_KC) {
        const size_t kc = smaller(AMX_KC, w->in - k0), kp = round_up(kc, 32);
        for (size_t t = 0; t < tile_count(w->out); t++) {
            const b_block B = kept_block(w, k0, t);
            convert_b((uint16_t *)B.b, B.part, w->packed, w->in, w->out, t * 16, k0, kc, kp);
        }
    }
}

/* The kept weight at packed of this size and samples, dropping one kept
   there for another weight; NULL where none.  Under kept_lock. */
static kept_weight *kept_lookup(const float *packed, size_t in, size_t out, const float sample[KEPT_SAMPLES])
{
    kept_weight *w, **link;
    for (link = &kept_list; (w = *link) != NULL; link = &w->next)
        if (w->packed == packed) {
            if (w->in == in && w->out == out && !memcmp(w->sample, sample, KEPT_SAMPLES * sizeof *sample))
                return w;
            *link = w->next, kept_bytes -= w->bytes; /* another weight at a freed one's address */
            free(w->tiles), free(w);
            return NULL;
        }
    return NULL;
}

/* The weight at packed converted and kept; NULL past KEPT_MAX or where
   memory cannot be had.  Under kept_lock. */
AMX_FN static kept_weight *kept_add(const float *packed, size_t in, size_t out, const float sample[KEPT_SAMPLES])
{
    const size_t bytes = kept_steps(in) * tile_count(out) * PARTS * 16 * sizeof(uint16_t);
    kept_weight *w = kept_bytes + bytes <= KEPT_MAX ? calloc(1, sizeof *w) : NULL;
    void *tiles = NULL;
    if (!w || posix_memalign(&tiles, 64, bytes) != 0) {
        free(w);
        return NULL;
    }
    w->packed = packed, w->in = in, w->out = out, w->bytes = bytes, w->tiles = tiles;
    memcpy(w->sample, sample, sizeof w->sample);
    convert_weight(w);
    w->next = kept_list, kept_list = w, kept_bytes += bytes;
    return w;
}

/* The kept form of a constant packed weight, converted now if it is not
   kept yet; NULL where it cannot be kept. */
AMX_FN static const kept_weight *kept_weight_of(const float *packed, size_t in, size_t out)
{
    float sample[KEPT_SAMPLES];
    kept_weight *w;
    take_samples(packed, in * out, sample);
    pthread_mutex_lock(&kept_lock);
    w = kept_lookup(packed, in, out, sample);
    if (!w)
        w = kept_add(packed, in, out, sample);
    pthread_mutex_unlock(&kept_lock);
    return w;
}

/* y rows [r0, r1) x outputs [j0, j1) (j0 a multiple of AXRT_PANEL) of
   x . W^T + bias, W packed (axrt_pack_dense_f32), kept converted where
   constant; no epilogue.  Returns 0, having done nothing, where this
   thread's scratch cannot be had. */
AMX_FN static int amx_dense(const float *x, const float *packed, const float *bias, float *y, size_t in,
                            size_t out, size_t r0, size_t r1, size_t j0, size_t j1, int constant)
{
    amx_scratch *s = thread_scratch();
    const kept_weight *kept = s && constant ? kept_weight_of(packed, in, out) : NULL;
    if (!s)
        return 0;
    configure_tiles();
    for (size_t k0 = 0; k0 < in; k0 += AMX_KC) {
        const size_t kc = smaller(AMX_KC, in - k0), kp = round_up(kc, 32);
        for (size_t m0 = r0; m0 < r1; m0 += AMX_MB) {
            const size_t mb = smaller(AMX_MB, r1 - m0), mp = round_up(mb, 32);
            convert_a(s, x + m0 * in + k0, in, mb, mp, kc, kp);
            for (size_t n0 = j0; n0 < j1; n0 += 32) {
                const size_t nb = smaller(32, j1 - n0);
                b_block B = {s->b, 2 * kp * 16, kp * 16};
                if (kept)
                    B = kept_block(kept, k0, n0 / 16);
                else
                    for (size_t t = 0; t < 2; t++)
                        convert_b(s->b + t * kp * 16, B.part, packed, in, out, n0 + 16 * t, k0, t * 16 < nb ? kc : 0, kp);
                for (size_t g = 0; g * 32 < mb; g++) {
                    const size_t rows = smaller(32, mb - g * 32);
                    float *yb = y + (m0 + g * 32) * out + n0;
                    if (rows == 32 && nb == 32) { /* in place */
                        block_products(s, B, k0 ? yb : bias ? bias + n0 : NULL, k0 ? out : 0, yb, out, g, mp, kp);
                        continue;
                    }
                    memset(s->c, 0, sizeof s->c);
                    for (size_t r = 0; r < rows; r++)
                        for (size_t j = 0; j < nb; j++)
                            s->c[r * 32 + j] = k0 ? yb[r * out + j] : bias ? bias[n0 + j] : 0.0f;
                    block_products(s, B, s->c, 32, s->c, 32, g, mp, kp);
                    for (size_t r = 0; r < rows; r++) memcpy(yb + r * out, s->c + r * 32, nb * sizeof(float));
                }
            }
        }
    }
    _tile_release();
    return 1;
}

/* Whether this process may use AMX-BF16: the CPU has it, and Linux grants
   the tile state (asked once; XFEATURE_XTILEDATA is 18). */
static int amx_usable(void)
{
    static int state; /* 0 unknown, 1 yes, -1 no */
    if (!state) {
        /* (AVX-512's table checks F, DQ and VL; the conversions use BW too) */
        const int vector = axrt_cpu_ops_avx512() && __builtin_cpu_supports("avx512bw");
        unsigned eax, ebx, ecx, edx;
        int amx = 0;
        if (vector && __get_cpuid_max(0, NULL) >= 7) {
            __cpuid_count(7, 0, eax, ebx, ecx, edx);
            amx = (edx >> 22 & 1) && (edx >> 24 & 1); /* AMX-BF16, AMX-TILE */
        }
        state = amx && syscall(SYS_arch_prctl, 0x1023, 18) == 0 ? 1 : -1;
    }
    return state > 0;
}

static axrt_cpu_ops amx_ops;

const axrt_cpu_ops *axrt_cpu_ops_avx512_amx(void)
{
    if (!amx_usable())
        return NULL;
    if (!amx_ops.name) {
        amx_ops = *axrt_cpu_ops_avx512();
        amx_ops.dense_engine = amx_dense;
        amx_ops.name = "amx";
    }
    return &amx_ops;
}

#elif defined(AXRT_X86_SIMD)
const axrt_cpu_ops *axrt_cpu_ops_avx512_amx(void) { return NULL; } /* (no arch_prctl to ask) */
#else
typedef int axrt_x86_amx_unused; /* (an empty unit is not ISO C) */
#endif
