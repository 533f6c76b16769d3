/* axrt_winograd.c — Winograd convolution F(m x m, 3 x 3), m = 4 (6 x 6
 * input tiles) or m = 2 (4 x 4), for float32 NHWC 3x3 stride-1 dilation-1
 * groups-1 convolutions (Lavin and Gray, "Fast Algorithms for Convolutional
 * Neural Networks", 2016; the matrices B^T, G, A^T below are theirs).
 *
 * The filter transform U = G g G^T runs once, when the compiler embeds the
 * weight (axrt_pack_winograd_f32, in double then rounded), stored for each
 * of the alpha^2 positions xi as a packed [c, oc] weight in AXRT_PANEL-wide
 * panels.  A call then takes blocks of output tiles: each block's input
 * tiles are transformed (V = B^T d B, per channel), multiplied by U with the
 * instruction set's GEMM register tile (axrt_cpu.h, one GEMM of
 * [tiles, c] x [c, oc] per xi) and transformed back (A^T M A) straight into
 * y with the bias, residual and activation.  Blocks share out over threads
 * by slots: each slot has its own part of the scratch (its V and M), so a
 * call runs on at most AXRT_WINOGRAD_SLOTS threads; a call of one block
 * splits each of the three steps over the threads instead.
 *
 * Rounding: F(4,3) loses about one decimal digit against direct
 * convolution (its transforms have entries up to 8 and 5); F(2,3) about
 * as much as direct (docs/performance.md has the measured table). */
#include <stddef.h>
#include <string.h>

#include "axrt.h"
#include "axrt_cpu.h"

#define WINO_MAX_ALPHA 6
#define WINO_MAX_M 4
#define WINO_LANES 16

typedef struct wino_mats {
    int m, alpha;
    const float *bt, *at; /* [alpha][alpha], [m][alpha] */
    const double *g;      /* [alpha][3] */
} wino_mats;

static const float bt4[36] = {4, 0, -5, 0, 1, 0, 0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
                              0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1};
static const float at4[24] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};
static const double g4[18] = {1.0 / 4,  0,         0,        -1.0 / 6, -1.0 / 6, -1.0 / 6,
                              -1.0 / 6, 1.0 / 6,   -1.0 / 6, 1.0 / 24, 1.0 / 12, 1.0 / 6,
                              1.0 / 24, -1.0 / 12, 1.0 / 6,  0,        0,        1};
static const float bt2[16] = {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
static const float at2[8] = {1, 1, 1, 0, 0, 1, -1, -1};
static const double g2[12] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};

static wino_mats mats_of(int m)
{
    wino_mats w;
    w.m = m == 2 ? 2 : 4;
    w.alpha = w.m + 2;
    w.bt = m == 2 ? bt2 : bt4;
    w.at = m == 2 ? at2 : at4;
    w.g = m == 2 ? g2 : g4;
    return w;
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* ---- the transforms, one copy per instruction set --------------------------- */

#define WINO_ATTR
#define WINO_SUFFIX portable
#include "axrt_winograd_tf.inc"
#undef WINO_ATTR
#undef WINO_SUFFIX
#ifdef AXRT_X86_SIMD
#define WINO_ATTR __attribute__((target("avx2,fma")))
#define WINO_SUFFIX avx2
#include "axrt_winograd_tf.inc"
#undef WINO_ATTR
#undef WINO_SUFFIX
#define WINO_ATTR __attribute__((target("avx512f,avx512dq,avx2,fma")))
#define WINO_SUFFIX avx512
#include "axrt_winograd_tf.inc"
#undef WINO_ATTR
#undef WINO_SUFFIX
#endif

typedef void input_tile_fn(const wino_mats *w, const float *const *at, float *v, size_t ti, size_t block,
                           size_t c);
typedef void output_tile_fn(const wino_mats *w, const float *mt, size_t ti, size_t block, size_t oc,
                            const float *bias, float *const *out, const float *const *res, axrt_act act_inline);

/* ---- sizes -------------------------------------------------------------------- */

size_t axrt_winograd_packed_elems(const axrt_conv2d_params *p, int m)
{
    const size_t alpha = (size_t)mats_of(m).alpha;
    return alpha * alpha * (size_t)p->c * (size_t)p->oc;
}

static size_t tiles_of(const axrt_conv2d_params *p, int m)
{
    return (size_t)p->n * (((size_t)p->oh + (size_t)m - 1) / (size_t)m) * (((size_t)p->ow + (size_t)m - 1) / (size_t)m);
}

/* Tiles a block: V and M of a block about WINO_BLOCK_BYTES (they stay in
 * L2 between the three steps), a multiple of 12 rows (the widest register
 * tile) where that is at least one, at most all tiles.  Every block reads
 * all of U (alpha^2 c oc floats), so where under 12 tiles fit the budget
 * (many channels: 14x14x256, 28x28x128) a block takes WINO_MIN_BLOCK tiles
 * anyway: U (9.4 MB at 256 channels) then comes from memory once per 24
 * tiles, not once per 5, which measured faster than keeping V and M in L2
 * (docs/performance.md, AVX-512 Zen 4: 14x14x256 1.90 -> 1.61 ms). */
#define WINO_BLOCK_BYTES (384u << 10)
#define WINO_MIN_BLOCK 24
static size_t block_tiles(const axrt_conv2d_params *p, int m)
{
    const size_t alpha = (size_t)mats_of(m).alpha;
    const size_t per_tile = alpha * alpha * ((size_t)p->c + (size_t)p->oc) * sizeof(float);
    size_t b = WINO_BLOCK_BYTES / per_tile;
    b = b >= 12 ? b / 12 * 12 : WINO_MIN_BLOCK;
    return min_sz(b, tiles_of(p, m));
}

static size_t slots_of(const axrt_conv2d_params *p, int m)
{
    const size_t b = block_tiles(p, m), blocks = (tiles_of(p, m) + b - 1) / b;
    return min_sz(blocks, AXRT_WINOGRAD_SLOTS);
}

size_t axrt_winograd_scratch_elems(const axrt_conv2d_params *p, int m)
{
    const size_t alpha = (size_t)mats_of(m).alpha;
    return slots_of(p, m) * block_tiles(p, m) * alpha * alpha * ((size_t)p->c + (size_t)p->oc);
}

/* ---- the filter transform (compile time) ------------------------------------- */

void axrt_pack_winograd_f32(const float *w, float *u, const axrt_conv2d_params *p, int m)
{
    const wino_mats wm = mats_of(m);
    const int alpha = wm.alpha;
    const size_t c = (size_t)p->c, oc = (size_t)p->oc;
    for (size_t o = 0; o < oc; o++) {
        const size_t j0 = o / AXRT_PANEL * AXRT_PANEL, nr = min_sz(AXRT_PANEL, oc - j0);
        for (size_t ci = 0; ci < c; ci++) {
            const float *g = w + (o * c + ci) * 9;
            double t[WINO_MAX_ALPHA][3];
            for (int i = 0; i < alpha; i++)
                for (int x = 0; x < 3; x++)
                    t[i][x] = wm.g[i * 3] * g[x] + wm.g[i * 3 + 1] * g[3 + x] + wm.g[i * 3 + 2] * g[6 + x];
            for (int i = 0; i < alpha; i++)
                for (int j = 0; j < alpha; j++) {
                    const double v = t[i][0] * wm.g[j * 3] + t[i][1] * wm.g[j * 3 + 1] + t[i][2] * wm.g[j * 3 + 2];
                    u[(size_t)(i * alpha + j) * c * oc + j0 * c + ci * nr + (o - j0)] = (float)v;
                }
        }
    }
}

/* ---- the convolution ------------------------------------------------------------ */

typedef struct wino_job {
    const axrt_cpu_ops *cpu;
    wino_mats w;
    input_tile_fn *input_tile;
    output_tile_fn *output_tile;
    const float *x, *u, *bias, *residual;
    axrt_act act;
    float *y, *scratch;
    const axrt_conv2d_params *p;
    size_t tiles_h, tiles_w, tiles, block, blocks, slots;
} wino_job;

/* Tile ti's input pixels (NULL outside the image: padding). */
static void input_pixels(const wino_job *j, size_t ti, const float **at)
{
    const axrt_conv2d_params *p = j->p;
    const size_t per_image = j->tiles_h * j->tiles_w, n = ti / per_image;
    const long y0 = (long)(ti % per_image / j->tiles_w) * j->w.m - p->pad_top;
    const long x0 = (long)(ti % j->tiles_w) * j->w.m - p->pad_left;
    for (int i = 0; i < j->w.alpha; i++)
        for (int k = 0; k < j->w.alpha; k++) {
            const long iy = y0 + i, ix = x0 + k;
            at[i * j->w.alpha + k] = iy < 0 || ix < 0 || iy >= p->h || ix >= p->w
                                         ? NULL
                                         : j->x + (((size_t)n * (size_t)p->h + (size_t)iy) * (size_t)p->w + (size_t)ix) * (size_t)p->c;
        }
}

/* Tile ti's output pixels (NULL past the edge), and the residual's. */
static void output_pixels(const wino_job *j, size_t ti, float **out, const float **res)
{
    const axrt_conv2d_params *p = j->p;
    const size_t per_image = j->tiles_h * j->tiles_w, n = ti / per_image;
    const size_t y0 = ti % per_image / j->tiles_w * (size_t)j->w.m, x0 = ti % j->tiles_w * (size_t)j->w.m;
    for (int i = 0; i < j->w.m; i++)
        for (int k = 0; k < j->w.m; k++) {
            const size_t oy = y0 + (size_t)i, ox = x0 + (size_t)k;
            const size_t at = ((n * (size_t)p->oh + oy) * (size_t)p->ow + ox) * (size_t)p->oc;
            const int inside = oy < (size_t)p->oh && ox < (size_t)p->ow;
            out[i * j->w.m + k] = inside ? j->y + at : NULL;
            res[i * j->w.m + k] = inside && j->residual ? j->residual + at : NULL;
        }
}

/* Block b's V and M in slot's part of the scratch. */
static float *block_v(const wino_job *j, size_t slot)
{
    const size_t a2 = (size_t)(j->w.alpha * j->w.alpha);
    return j->scratch + slot * j->block * a2 * ((size_t)j->p->c + (size_t)j->p->oc);
}
static float *block_m(const wino_job *j, size_t slot)
{
    return block_v(j, slot) + j->block * (size_t)(j->w.alpha * j->w.alpha) * (size_t)j->p->c;
}
static size_t block_count(const wino_job *j, size_t b) { return min_sz(j->block, j->tiles - b * j->block); }

/* Step 1: the input transforms of block b's tiles [lo, hi). */
static void block_inputs(const wino_job *j, size_t slot, size_t b, size_t lo, size_t hi)
{
    const float *at[WINO_MAX_ALPHA * WINO_MAX_ALPHA];
    float *v = block_v(j, slot);
    for (size_t i = lo; i < hi; i++) {
        input_pixels(j, b * j->block + i, at);
        j->input_tile(&j->w, at, v, i, j->block, (size_t)j->p->c);
    }
}

/* Step 2: the GEMMs of positions [lo, hi): M[xi] = V[xi] U[xi], a row tile
 * against all full panels in one tile call (axrt_cpu.h panels: a 64- to
 * 256-step reduction pays the call's set-up and drain once, not per panel). */
static void block_products(const wino_job *j, size_t slot, size_t b, size_t lo, size_t hi)
{
    const size_t c = (size_t)j->p->c, oc = (size_t)j->p->oc, nt = block_count(j, b);
    const size_t full = oc / AXRT_PANEL * AXRT_PANEL;
    const float *v = block_v(j, slot), *rows[AXRT_TILE_M_MAX];
    float *mt = block_m(j, slot);
    axrt_tile_args t;
    memset(&t, 0, sizeof t);
    t.nseg = 1, t.k = c, t.a = rows, t.ldy = oc, t.final = 1, t.act = AXRT_ACT_NONE;
    for (size_t xi = lo; xi < hi; xi++)
        for (size_t r0 = 0; r0 < nt; r0 += t.mr) {
            t.mr = min_sz(j->cpu->tile_rows, nt - r0);
            for (size_t r = 0; r < t.mr; r++) rows[r] = v + (xi * j->block + r0 + r) * c;
            size_t j0 = 0;
            if (full && t.mr > 1) {   /* a one-row tile (tile_row) takes one panel */
                t.nr = t.ldb = AXRT_PANEL, t.panels = full / AXRT_PANEL, t.b_panel = c * AXRT_PANEL;
                t.b = j->u + xi * c * oc, t.y = mt + (xi * j->block + r0) * oc;
                j->cpu->tile(&t);
                t.panels = 0, j0 = full;
            }
            for (; j0 < oc; j0 += AXRT_PANEL) {
                t.nr = t.ldb = min_sz(AXRT_PANEL, oc - j0);
                t.b = j->u + xi * c * oc + j0 * c;
                t.y = mt + (xi * j->block + r0) * oc + j0;
                j->cpu->tile(&t);
            }
        }
}

/* Step 3: the output transforms of block b's tiles [lo, hi), with the epilogue. */
static void block_outputs(const wino_job *j, size_t slot, size_t b, size_t lo, size_t hi)
{
    float *out[WINO_MAX_M * WINO_MAX_M];
    const float *res[WINO_MAX_M * WINO_MAX_M];
    const axrt_act inline_act = j->act == AXRT_ACT_RELU || j->act == AXRT_ACT_RELU6 ? j->act : AXRT_ACT_NONE;
    axrt_unary_fn *late_act = j->act == AXRT_ACT_GELU        ? j->cpu->gelu
                              : j->act == AXRT_ACT_SWISH     ? j->cpu->swish
                              : j->act == AXRT_ACT_HARDSWISH ? (j->cpu->hardswish ? j->cpu->hardswish : axrt_hardswish_f32_portable)
                                                             : NULL;
    const float *mt = block_m(j, slot);
    for (size_t i = lo; i < hi; i++) {
        output_pixels(j, b * j->block + i, out, res);
        j->output_tile(&j->w, mt, i, j->block, (size_t)j->p->oc, j->bias, out, res, inline_act);
        for (int q = 0; late_act && q < j->w.m * j->w.m; q++)
            if (out[q]) late_act(out[q], out[q], (size_t)j->p->oc);
    }
}

/* Slots [begin, end): slot s runs blocks s, s + slots, ... */
static void wino_range(void *ctx, size_t begin, size_t end)
{
    const wino_job *j = ctx;
    for (size_t s = begin; s < end; s++)
        for (size_t b = s; b < j->blocks; b += j->slots) {
            const size_t nt = block_count(j, b);
            block_inputs(j, s, b, 0, nt);
            block_products(j, s, b, 0, (size_t)(j->w.alpha * j->w.alpha));
            block_outputs(j, s, b, 0, nt);
        }
}

/* One block (few tiles, many channels: 14x14x256): its three steps one
 * after the other, each split over the threads (tiles, positions, tiles),
 * so that a single block still runs on every thread.  Each value is computed
 * as wino_range computes it: the same bits for any thread count. */
static void one_inputs(void *ctx, size_t lo, size_t hi) { block_inputs(ctx, 0, 0, lo, hi); }
static void one_products(void *ctx, size_t lo, size_t hi) { block_products(ctx, 0, 0, lo, hi); }
static void one_outputs(void *ctx, size_t lo, size_t hi) { block_outputs(ctx, 0, 0, lo, hi); }
static void wino_one_block(wino_job *j)
{
    const size_t a2 = (size_t)(j->w.alpha * j->w.alpha), c = (size_t)j->p->c, oc = (size_t)j->p->oc;
    const double tile_work = (double)a2 * (double)(c + oc) * 4.0;   /* a transform: about 4 a2 adds per channel */
    axrt_parallel_for(one_inputs, j, j->tiles, (double)j->tiles * tile_work, 0);
    axrt_parallel_for(one_products, j, a2, (double)j->tiles * (double)a2 * (double)c * (double)oc, 0);
    axrt_parallel_for(one_outputs, j, j->tiles, (double)j->tiles * tile_work, 0);
}

void axrt_conv2d_winograd_f32(const float *x, const float *u, const float *bias, const float *residual,
                              axrt_act act, float *y, float *scratch, int m, const axrt_conv2d_params *p)
{
    wino_job j;
    j.cpu = axrt_cpu_in_use();
    j.w = mats_of(m);
    const int four = j.w.m == 4;   /* F(4,3): the transforms written out */
    j.input_tile = four ? input_tile4_portable : input_tile_portable;
    j.output_tile = four ? output_tile4_portable : output_tile_portable;
#ifdef AXRT_X86_SIMD
    if (!strcmp(axrt_vector_isa(j.cpu->name), "avx2")) {
        j.input_tile = four ? input_tile4_avx2 : input_tile_avx2;
        j.output_tile = four ? output_tile4_avx2 : output_tile_avx2;
    } else if (!strcmp(axrt_vector_isa(j.cpu->name), "avx512")) {
        j.input_tile = four ? input_tile4_avx512 : input_tile_avx512;
        j.output_tile = four ? output_tile4_avx512 : output_tile_avx512;
    }
#endif
    j.x = x, j.u = u, j.bias = bias, j.residual = residual, j.act = act, j.y = y, j.scratch = scratch, j.p = p;
    j.tiles_h = ((size_t)p->oh + (size_t)j.w.m - 1) / (size_t)j.w.m;
    j.tiles_w = ((size_t)p->ow + (size_t)j.w.m - 1) / (size_t)j.w.m;
    j.tiles = tiles_of(p, j.w.m);
    j.block = block_tiles(p, j.w.m);
    j.blocks = (j.tiles + j.block - 1) / j.block;
    j.slots = slots_of(p, j.w.m);
    const double alpha = j.w.alpha;
    if (j.blocks == 1) wino_one_block(&j);
    else axrt_parallel_for(wino_range, &j, j.slots, (double)j.tiles * alpha * alpha * p->c * p->oc, 0);
}
