/* pass_quant.c — int8 post-training quantisation (interface.md §7), given
 * the value ranges calibration observed (compiler/quantize.c).
 *
 * Which layers: every Float32 dense and conv (depthwise and grouped
 * included) whose weights (and bias) are parameters with data.  Their
 * operand 0 is quantised per tensor, asymmetric, from its observed range
 * (widened to hold 0); weights per output channel, symmetric, to
 * [-127, 127]; the bias to int32 at s_x * s_w with the input zero point
 * folded in; the result requantised by a fixed-point multiplier and shift
 * (runtime/axrt.h "int8") to its own observed range, a fused ReLU/ReLU6
 * becoming the clamp.  A layer with a fused residual add or another fused
 * activation keeps its int32 accumulation but leaves it as float (fscale),
 * and the epilogue runs in float.  A max-pool after an int8 layer shares
 * that layer's output scale and zero point (TFLite's rule) and runs on the
 * integers when its readers take them.  Everything else runs in float on the
 * dequantised values: other pooling, concat, add, ReLU outside a layer
 * (exact on dequantised values for max-pool, concat and ReLU), softmax,
 * LayerNorm and the other activations.  Between int8 layers the value stays int8: a layer
 * whose integer result (no float epilogue) is read only as operand 0 of int8
 * layers quantising with its own output parameters (always so: both come
 * from the same observed range) stores q + 128 in uint8 (out_q8) and its
 * readers skip the quantisation at their door (in_q8) — the same integers
 * as dequantising and quantising again, one byte per element in the arena.
 * The arithmetic is in double here, at compile time, and each formula is
 * written so that tests can mirror it. */
#include <math.h>
#include <string.h>

#include "passes.h"

/* round half away from zero */
static double round_away(double v) { return v < 0 ? -floor(-v + 0.5) : floor(v + 0.5); }

static int32_t clamp_int(double v, double lo, double hi)
{
    return (int32_t)(v < lo ? lo : v > hi ? hi : v);
}

/* Per-tensor asymmetric parameters of the range [lo, hi] widened to hold 0. */
void pass_quant_params(double lo, double hi, float *scale, int32_t *zp)
{
    lo = lo < 0 ? lo : 0;
    hi = hi > 0 ? hi : 0;
    const double s = (float)((hi - lo) / 255);
    *scale = s > 0 && isfinite(s) ? (float)s : 1.0f;
    *zp = clamp_int(round_away(-128 - lo / *scale), -128, 127);
}

/* mult * 2^-shift ~= m, mult in [2^30, 2^31), 1 <= shift <= 62 (0 when m is
 * too small to matter: the result is the zero point). */
static void fixed_point(double m, int32_t *mult, int8_t *shift)
{
    int e;
    double frac = frexp(m, &e);
    int64_t q = (int64_t)round_away(frac * 2147483648.0);
    if (q == ((int64_t)1 << 31)) { q >>= 1; e++; }
    int s = 31 - e;
    if (m <= 0 || s > 62) { *mult = 0; *shift = 1; return; }
    if (s < 1) { q = INT32_MAX; s = 1; }
    *mult = (int32_t)q;
    *shift = (int8_t)s;
}

/* Whether a fused ReLU/ReLU6 (or none) can be the requantisation clamp. */
static bool act_folds(int act)
{
    return act == IR_NONE || act == IR_OP_relu || act == IR_OP_relu6;
}

static bool has_data(const ir_graph *g, const ir_node *n, int k)
{
    if (k >= n->nsrc || n->src[k] == IR_NONE) return k == 2;
    const ir_node *p = &g->nodes[n->src[k]];
    return p->op == IR_OP_param && p->data && p->dtype == AXRT_F32;
}

bool pass_quant_applies(const ir_graph *g, const ir_node *n)
{
    return !n->dead && (n->op == IR_OP_dense || n->op == IR_OP_conv) && n->dtype == AXRT_F32 &&
           g->nodes[n->src[0]].dtype == AXRT_F32 && has_data(g, n, 1) && has_data(g, n, 2);
}

/* Weights of output channel o, reordered for the kernel (conv: [kh, kw, cig]),
 * quantised with their symmetric scale; returns s_w. */
static double quantise_channel(const ir_node *w, int64_t o, int8_t *out, int64_t per)
{
    const float *src = (const float *)w->data + o * per;
    double amax = 0;
    for (int64_t i = 0; i < per; i++)
        amax = fabs(src[i]) > amax ? fabs(src[i]) : amax;
    const double s = amax > 0 ? amax / 127 : 1;
    const int64_t cig = w->rank == 4 ? w->shape[1] : per, taps = per / cig;
    for (int64_t c = 0; c < cig; c++)
        for (int64_t t = 0; t < taps; t++)   /* torch [cig, kh, kw] -> [kh, kw, cig] */
            out[t * cig + c] = (int8_t)clamp_int(round_away(src[c * taps + t] / s), -127, 127);
    return s;
}

static void quantise_node(ir_graph *g, ir_node *n, const double *lo, const double *hi)
{
    ax_arena *a = g->ctx->arena;
    const ir_node *w = &g->nodes[n->src[1]];
    const float *bias = n->nsrc > 2 && n->src[2] != IR_NONE ? g->nodes[n->src[2]].data : NULL;
    ir_quant *q = ax_alloc(a, sizeof *q);
    memset(q, 0, sizeof *q);
    const int x = n->src[0], id = (int)(n - g->nodes);
    pass_quant_params(lo[x], hi[x], &q->in_scale, &q->in_zp);
    pass_quant_params(lo[id], hi[id], &q->out_scale, &q->out_zp);
    q->float_out = n->attrs.residual != IR_NONE || !act_folds(n->attrs.act);
    q->nout = w->shape[0];
    q->nw = ir_numel(w);
    const int64_t per = q->nw / q->nout;
    q->w = ax_alloc(a, (size_t)q->nw);
    q->bias = ax_alloc(a, (size_t)q->nout * sizeof *q->bias);
    q->mult = ax_alloc(a, (size_t)q->nout * sizeof *q->mult);
    q->shift = ax_alloc(a, (size_t)q->nout);
    q->fscale = ax_alloc(a, (size_t)q->nout * sizeof *q->fscale);
    for (int64_t o = 0; o < q->nout; o++) {
        const double sw = quantise_channel(w, o, q->w + o * per, per);
        const double sacc = (double)q->in_scale * sw;
        int64_t wsum = 0;
        for (int64_t i = 0; i < per; i++) wsum += q->w[o * per + i];
        const double b = bias ? round_away(bias[o] / sacc) : 0;
        q->bias[o] = clamp_int(b - (double)(q->in_zp + 128) * (double)wsum, INT32_MIN, INT32_MAX);
        q->fscale[o] = (float)sacc;
        fixed_point(sacc / q->out_scale, &q->mult[o], &q->shift[o]);
    }
    q->lo = n->attrs.act == IR_NONE ? -128 : q->out_zp;
    q->hi = n->attrs.act == IR_OP_relu6 ? clamp_int(q->out_zp + round_away(6 / q->out_scale), -128, 127) : 127;
    n->quant = q;
}

/* Whether max-pool m reads an int8 layer with an integer result: then it
 * shares that layer's output parameters (TFLite's rule) and may run in int8. */
static bool pool_follows_int8(const ir_graph *g, const ir_node *m)
{
    if (m->dead || m->op != IR_OP_maxpool || m->dtype != AXRT_F32)
        return false;
    const ir_node *x = &g->nodes[m->src[0]];
    return pass_quant_applies(g, x) && x->attrs.residual == IR_NONE && act_folds(x->attrs.act);
}

/* The calibrated ranges with every such max-pool's (and the reshapes of it)
 * replaced by its input's: the pool's output and its readers quantise with
 * the producer's scale and zero point. */
static void share_pool_ranges(const ir_graph *g, double *lo, double *hi)
{
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (pool_follows_int8(g, n) || (n->op == IR_OP_reshape && !n->dead)) {   /* a reshape: the same values */
            lo[id] = lo[n->src[0]];
            hi[id] = hi[n->src[0]];
        }
    }
}

/* Whether int8 layer id's integers can be stored as int8: not a graph
 * output, no float epilogue, and every live reader an int8 layer reading it
 * as operand 0 only, with the same scale and zero point. */
static bool keeps_int8(const ir_graph *g, int id)
{
    const ir_quant *q = g->nodes[id].quant;
    if (!q || q->float_out || ir_is_output(g, id))
        return false;
    bool read = false;
    for (int k = id + 1; k < g->nnodes; k++) {
        const ir_node *r = &g->nodes[k];
        for (int i = 0; i < r->nsrc && !r->dead; i++) {
            if (r->src[i] != id) continue;
            if (i != 0 || !r->quant || r->quant->in_scale != q->out_scale || r->quant->in_zp != q->out_zp)
                return false;
            read = true;
        }
    }
    return read;
}

/* The max-pools after int8 layers whose results can stay int8 (last first:
 * a pool reading a pool) run in int8 on q + 128 (ir_quant without weights,
 * in and out the producer's parameters); the others stay float. */
static void quantise_pools(ir_graph *g)
{
    for (int id = g->nnodes - 1; id >= 0; id--) {
        ir_node *m = &g->nodes[id];
        if (!pool_follows_int8(g, m)) continue;
        const ir_quant *x = g->nodes[m->src[0]].quant;
        ir_quant *q = ax_alloc(g->ctx->arena, sizeof *q);
        memset(q, 0, sizeof *q);
        q->in_scale = q->out_scale = x->out_scale;
        q->in_zp = q->out_zp = x->out_zp;
        m->quant = q;
        if (!keeps_int8(g, id))
            m->quant = NULL;
    }
}

/* Marks the int8 layers whose results stay int8 and their readers. */
static void mark_int8_storage(ir_graph *g)
{
    quantise_pools(g);
    for (int id = 0; id < g->nnodes; id++) {
        if (!keeps_int8(g, id)) continue;
        ((ir_quant *)g->nodes[id].quant)->out_q8 = true;
        for (int k = id + 1; k < g->nnodes; k++)
            if (g->nodes[k].quant && !g->nodes[k].dead && g->nodes[k].src[0] == id)
                ((ir_quant *)g->nodes[k].quant)->in_q8 = true;
    }
}

int pass_quant(ir_graph *g, const double *observed_lo, const double *observed_hi)
{
    int count = 0;
    const size_t bytes = sizeof(double) * (size_t)(g->nnodes + 1);
    double *lo = memcpy(ax_alloc(g->ctx->arena, bytes), observed_lo, bytes - sizeof(double));
    double *hi = memcpy(ax_alloc(g->ctx->arena, bytes), observed_hi, bytes - sizeof(double));
    share_pool_ranges(g, lo, hi);
    for (int id = 0; id < g->nnodes; id++) {
        ir_node *n = &g->nodes[id];
        if (!pass_quant_applies(g, n)) continue;
        quantise_node(g, n, lo, hi);
        count++;
    }
    mark_int8_storage(g);
    /* the int8 layers need a byte buffer for their quantised input and
       none of them runs in place: plan again */
    if (count) pass_memplan_with(g, g->share_buffers);
    return count;
}
