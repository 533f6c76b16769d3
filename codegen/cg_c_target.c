/* cg_c_target.c — the C target's facts for the middle end (cg_target.h,
 * ir.h ir_target): workspace its kernels need beyond their output
 * (cg_c_scratch_bytes), and which kernels may overwrite their input where
 * ops.def leaves it to the target (cg_c_can_inplace), and which convs run
 * Winograd (cg_conv_winograd, its cost model: cg_select.c records the
 * choice as the weight's layout).  Attention keeps the projected q, k, v, one
 * head's scores and the concatenated heads of one batch element in scratch;
 * a depthwise conv that may run in place keeps a ring of input rows there;
 * a GRU or LSTM its state and gate sums.
 * Sizes come from the runtime itself (axrt_mha_scratch_elems or, for the
 * kernel without the scores, axrt_mha_flash_scratch_elems,
 * axrt_dwconv_inplace_ring_elems) so the two cannot disagree. */
#include "cg_target.h"
#include "ir_use.h"

/* q is [..., lq, d] and k [..., lk, d], as cg_c.c's emit_mha reads them;
 * the kernel reuses the scratch for each batch element, so the batch size
 * does not enter. */
static size_t mha_scratch_bytes(const ir_node *n, const ir_graph *g)
{
    const ir_node *q = &g->nodes[n->src[0]], *k = &g->nodes[n->src[1]];
    axrt_mha_params p = {0};
    p.d = (int)q->shape[q->rank - 1];
    p.lq = (int)q->shape[q->rank - 2];
    p.lk = (int)k->shape[k->rank - 2];
    p.n = 1;
    p.heads = n->attrs.heads;
    return (cg_mha_flash(n) ? axrt_mha_flash_scratch_elems(&p) : axrt_mha_scratch_elems(&p)) *
           axrt_dtype_size(n->dtype);
}

/* gru / lstm: axrt_rnn_scratch_elems of their hidden size. */
static size_t rnn_scratch_bytes(const ir_node *n)
{
    axrt_rnn_params p = {0};
    p.hidden = (int)n->shape[2];
    return axrt_rnn_scratch_elems(&p, n->op == IR_OP_lstm ? 4 : 3) * axrt_dtype_size(n->dtype);
}

/* The runtime's contract (axrt.h, axrt_dwconv.c): a depthwise conv
 * (groups == channels, one filter each), stride 1, output shaped as the
 * input, no residual, computed over its operand 0; and an image of at least
 * DWCONV_INPLACE_RING_SHARE times the ring's rows.  The in-place kernel runs
 * on one thread (its rows in order), where the other splits its rows over
 * threads; on the small images of a network's last stages the memory it
 * saves is small, and its ring of pad_top + 1 rows takes most of it back
 * (EfficientNet-B0's 7x7x1152 5x5: a ring of 3 rows of 7, the arena no
 * larger without it; out of place on a Xeon 37 us on 1 thread and 30 on 2,
 * in place 40 and 42). */
#define DWCONV_INPLACE_RING_SHARE 4
bool cg_c_can_inplace(const ir_node *n, const ir_graph *g, int k)
{
    if (k != 0 || n->op != IR_OP_conv || n->rank != 4 || n->attrs.residual != IR_NONE || n->quant ||
        (n->dtype != AXRT_F32 && n->dtype != AXRT_F64) || g->nodes[n->src[0]].rows_fused)
        return false;
    const ir_node *x = &g->nodes[n->src[0]], *w = &g->nodes[n->src[1]];
    const ir_attrs *a = &n->attrs;
    for (int d = 0; d < 4; d++)
        if (x->shape[d] != n->shape[d])
            return false;
    return x->dtype == n->dtype && a->groups == n->shape[3] && w->shape[1] == 1 &&
           a->stride[0] == 1 && a->stride[1] == 1 && a->kernel[0] <= AXRT_DWCONV_MAX_KH &&
           a->pad[0] >= 0 && a->pad[1] >= 0 && n->shape[1] >= DWCONV_INPLACE_RING_SHARE * (a->pad[0] + 1);
}

/* ---- Winograd (the choice cg_select.c records as the weight's layout) ---- */

/* The cost model of --conv-algo=auto: Winograd F(4,3) does 36 multiply-adds
 * per 16 outputs and channel pair where direct does 144, but its transforms
 * cost about alpha^3 per channel and tile, its weights are 4x larger, and
 * a block of tiles must fill the GEMM register tile: it wins with enough
 * channels and enough tiles (bench/winograd_layers.c measured the thresholds, docs/performance.md).
 * Each call reads all of U (alpha^2 c oc floats, from memory in a whole
 * model) for tiles x alpha^2 c oc multiply-adds: under 16 tiles a weight
 * element serves too few of them.  F(2,3) (16 multiply-adds per 4 outputs, a
 * weight 16/9 of direct's) is not taken: at 7x7x512 (16 tiles), a whole
 * ResNet-18 on one thread of an AVX-512 Xeon, its 16.8 MB from memory took
 * 1.9-2.2 ms a layer where direct's 9.4 MB take 1.3-1.6 (direct's column
 * blocks of three panels, runtime CONV_MIN_BLOCK_PANELS); on AVX2, bound by
 * its multiply-adds, F(2,3) is 3 % ahead (2.37 against 2.45 ms).  At 64 and
 * 256 channels direct was ahead on both.  --conv-algo=winograd2 forces it. */
#define WINOGRAD_MIN_CHANNELS 32
#define WINOGRAD_MIN_TILES 16   /* 14x14 images and up for F(4,3) */
static int64_t winograd_tiles(const ir_node *n, int m)
{
    return n->shape[0] * ((n->shape[1] + m - 1) / m) * ((n->shape[2] + m - 1) / m);
}
static int winograd_choice(const ir_node *x, const ir_node *n)
{
    const int64_t c = x->shape[3], oc = n->shape[3];
    return c >= WINOGRAD_MIN_CHANNELS && oc >= WINOGRAD_MIN_CHANNELS && winograd_tiles(n, 4) >= WINOGRAD_MIN_TILES
               ? 4 : 0;
}

int cg_winograd_m(ir_layout layout)
{
    return layout == IR_LAYOUT_WINOGRAD ? 4 : layout == IR_LAYOUT_WINOGRAD2 ? 2 : 0;
}

int cg_conv_winograd(const ir_graph *g, const ir_node *n)
{
    if (n->op != IR_OP_conv || n->rank != 4 || n->dtype != AXRT_F32 || n->quant || n->nsrc < 2 ||
        g->conv_algo == IR_CONV_DIRECT || (g->ctx && g->ctx->training))
        return 0;
    const ir_node *x = &g->nodes[n->src[0]], *w = &g->nodes[n->src[1]];
    const ir_attrs *a = &n->attrs;
    if (w->op != IR_OP_param || w->rank != 4 || w->shape[2] != 3 || w->shape[3] != 3 || a->groups != 1 ||
        a->stride[0] != 1 || a->stride[1] != 1 || a->dilation[0] != 1 || a->dilation[1] != 1 ||
        a->pad[0] < 0 || a->pad[1] < 0 || a->pad[2] < 0 || a->pad[3] < 0 || x->rank != 4 || x->rows_fused ||
        cg_c_can_inplace(n, g, 0))   /* one channel: the depthwise kernels' */
        return 0;
    return g->conv_algo == IR_CONV_WINOGRAD ? 4 : g->conv_algo == IR_CONV_WINOGRAD2 ? 2 : winograd_choice(x, n);
}

/* A float32 conv on a param weight of kh x kw, no residual, whose fused
 * activation (if any) the packed kernels apply. */
static bool packed_conv(const ir_node *n, const ir_graph *g, int64_t kh, int64_t kw)
{
    const ir_node *w = &g->nodes[n->src[1]];
    return n->op == IR_OP_conv && n->rank == 4 && n->dtype == AXRT_F32 && !n->quant &&
           n->attrs.residual == IR_NONE && w->op == IR_OP_param && w->shape[2] == kh &&
           w->shape[3] == kw && cg_kernel_act(n) >= 0;
}

/* Below this the expanded tensor is a few rows of few pixels, too short
 * for full GEMM tiles, and stays in L2 between the two convs anyway:
 * MobileNetV2 on Zen 4 (per-layer minimums, one thread), fused against
 * unfused: 112x112x96 670 -> 580 us, 28x28x192 147 -> 136 us, 14x14x384
 * 115 -> 111 us, 14x14x576 even, 7x7x960 (188 KB) 159 -> 169 us. */
#define FUSE_ROWS_MIN_BYTES (256u << 10)

/* A 1x1, stride 1, unpadded groups=1 conv. */
static bool pointwise(const ir_node *n)
{
    const ir_attrs *a = &n->attrs;
    return a->groups == 1 && a->stride[0] == 1 && a->stride[1] == 1 && !a->pad[0] && !a->pad[1] && !a->pad[2] &&
           !a->pad[3];
}

/* The expansion's or the projection's packed weight the banded kernels
 * sweep for every pixel tile: as the whole-image conv keeps it in L2
 * (axrt_fast.inc CONV_WEIGHT_CACHED), beyond which that kernel blocks
 * columns instead. */
#define FUSE_ROWS_MAX_WEIGHT (1u << 20)

/* axrt_expand_dw_project_f32's contract: the depthwise conv d of a fused
 * expansion read by a 1x1 projection p (bias, residual and act allowed).
 * The rule: always, the weight bound aside: the projection's tiles are the
 * whole-image conv's, so banding costs nothing but the ring of depthwise
 * rows, and saves writing and reading back the depthwise output. */
static bool fuse_project(const ir_node *d, const ir_node *p, const ir_graph *g)
{
    const ir_node *w = &g->nodes[p->src[1]];
    return g->nodes[d->src[0]].rows_fused && packed_conv(d, g, d->attrs.kernel[0], d->attrs.kernel[1]) &&
           p->op == IR_OP_conv && p->rank == 4 && p->dtype == AXRT_F32 &&
           !p->quant && w->op == IR_OP_param && w->shape[2] == 1 && w->shape[3] == 1 && cg_kernel_act(p) >= 0 &&
           pointwise(p) && p->attrs.residual != 0 && ir_value_bytes(w) <= FUSE_ROWS_MAX_WEIGHT;
}

/* axrt_expand_depthwise_f32's contract: a groups=1 conv of any kernel,
 * stride, padding and dilation (a 1x1 expansion, or a stem: MobileNetV2's
 * and EfficientNet's 3x3/2 on 3 channels) feeding a depthwise conv
 * (groups == channels, one filter each) at most AXRT_DWCONV_MAX_KH tall;
 * not one that runs Winograd (its weight is then transformed, not packed),
 * nor one whose packed weight the whole-image kernel would sweep in column
 * blocks (over FUSE_ROWS_MAX_WEIGHT: each ring row's tiles would read it
 * all from beyond L2); or (fuse_project) that depthwise conv feeding its
 * projection. */
bool cg_c_fuse_rows(const ir_node *e, const ir_node *d, const ir_graph *g)
{
    if (e->attrs.groups > 1)   /* a depthwise conv: cg_c_fuse_rows(expansion, e) said yes before */
        return fuse_project(e, d, g);
    const ir_node *ew = &g->nodes[e->src[1]];
    return packed_conv(e, g, ew->shape[2], ew->shape[3]) && !cg_conv_winograd(g, e) &&
           ir_value_bytes(ew) <= FUSE_ROWS_MAX_WEIGHT &&
           packed_conv(d, g, g->nodes[d->src[1]].shape[2], g->nodes[d->src[1]].shape[3]) &&
           d->attrs.groups == d->shape[3] && d->shape[3] == e->shape[3] &&
           g->nodes[d->src[1]].shape[1] == 1 && d->attrs.kernel[0] <= AXRT_DWCONV_MAX_KH &&
           ir_value_bytes(e) >= FUSE_ROWS_MIN_BYTES;
}

/* axrt_conv2d_scaled_f32's contract: a float32 groups=1 1x1 conv on a
 * param weight (packed: the fusion leaves it this conv's alone) whose fused
 * activation the packed kernels apply, reading x .* s, x of its input's
 * shape.  The rule: the mul's pass reads and writes pixels * c elements
 * per image, the scaling kh * kw * c * oc = c * oc, so it pays where the
 * input pixels outnumber the output channels. */
bool cg_c_fold_input_scale(const ir_node *scale, const ir_node *p, const ir_graph *g)
{
    const ir_node *x = &g->nodes[scale->src[0]], *w = &g->nodes[p->src[1]];
    return p->op == IR_OP_conv && p->rank == 4 && p->dtype == AXRT_F32 && !p->quant && p->attrs.groups == 1 &&
           w->op == IR_OP_param && w->rank == 4 && w->shape[2] == 1 && w->shape[3] == 1 &&
           cg_kernel_act(p) >= 0 && x->rank == 4 && x->dtype == AXRT_F32 && ir_same_shape(x, scale) &&
           x->shape[1] * x->shape[2] > p->shape[3];
}

/* axrt_expand_depthwise_scratch_elems: the rings of expanded rows (the
 * depthwise conv n's input rows); for a projection n whose depthwise conv
 * is rows_fused too, axrt_expand_dw_project_scratch_elems (those rings and
 * the rings of depthwise rows). */
static size_t expand_rings_bytes(const ir_node *n, const ir_graph *g)
{
    const ir_node *d = g->nodes[n->src[0]].rows_fused && g->nodes[g->nodes[n->src[0]].src[0]].rows_fused
                           ? &g->nodes[n->src[0]] : n;
    /* the whole of the conv's params, as the call passes them: the rings
       depend on its stride (depthwise rows in pairs) as well as its size */
    const axrt_conv2d_params p = cg_conv_params(g, d);
    return (d == n ? axrt_expand_depthwise_scratch_elems(&p) : axrt_expand_dw_project_scratch_elems(&p)) *
           sizeof(float);
}

/* Whether node id's value is read by no live node after at (a graph output
 * counts as read later). */
static bool dies_at(const ir_graph *g, int id, int at)
{
    ir_use u = {0};
    ir_use_compute(g, &u);
    const bool dies = !ir_use_live_after(&u, id, at);
    ir_use_free(&u);
    return dies;
}

/* The ring is only reserved where the plan may actually share the input's
 * buffer: buffer sharing on, and the input an arena value dying here. */
static size_t dwconv_ring_bytes(const ir_node *n, const ir_graph *g)
{
    const int at = (int)(n - g->nodes), x = n->src[0];
    if (!g->share_buffers || !cg_c_can_inplace(n, g, 0) ||
        ir_ops[g->nodes[x].op].kind == IR_SOURCE || !dies_at(g, x, at))
        return 0;
    const axrt_conv2d_params p = cg_conv_params(g, n); /* as the call's (expand_rings_bytes) */
    return axrt_dwconv_inplace_ring_elems(&p) * axrt_dtype_size(n->dtype);
}

/* axrt_conv2d_q8's patch: kh * kw * (c / groups) bytes. */
static size_t q8_patch_bytes(const ir_node *n, const ir_graph *g)
{
    const ir_node *w = &g->nodes[n->src[1]];
    return (size_t)(w->shape[1] * w->shape[2] * w->shape[3]);
}

size_t cg_c_scratch_bytes(const ir_node *n, const ir_graph *g)
{
    if (ir_runs_in_reader(n))   /* runs inside its reader, in that one's scratch */
        return 0;
    size_t door = 0;   /* an int8 add/concat/ReLU's operands that arrive float, quantised one after the other */
    for (int k = 0; n->quant && k < n->quant->nin; k++)
        door += n->quant->in_q8_mask >> k & 1 ? 0 : (size_t)ir_numel(&g->nodes[n->src[k]]);
    if (n->quant && n->quant->nin)
        return door;
    if (n->quant)   /* the int8 layer's (or max-pool's) quantised operand 0 (unless it arrives so), then a conv's receptive field */
        return (n->quant->in_q8 ? 0 : (size_t)ir_numel(&g->nodes[n->src[0]])) +
               (n->op == IR_OP_conv ? q8_patch_bytes(n, g) : 0);
    if (n->op == IR_OP_mha)
        return mha_scratch_bytes(n, g);
    if (n->op == IR_OP_conv && g->nodes[n->src[0]].rows_fused)
        return expand_rings_bytes(n, g);
    const int wino_m = cg_conv_winograd(g, n);
    if (wino_m) {   /* Winograd's tiles (runtime/axrt_winograd.c) */
        const axrt_conv2d_params p = cg_conv_params(g, n);
        return axrt_winograd_scratch_elems(&p, wino_m) * sizeof(float);
    }
    if (n->op == IR_OP_conv && g->nodes[n->src[0]].scale_folded)   /* the scaled weight */
        return (size_t)ir_numel(&g->nodes[n->src[1]]) * sizeof(float);
    if (n->op == IR_OP_conv)
        return dwconv_ring_bytes(n, g);
    if (n->op == IR_OP_gru || n->op == IR_OP_lstm)
        return rnn_scratch_bytes(n);
    return 0;
}
