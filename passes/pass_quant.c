/* pass_quant.c — int8 post-training quantisation (docs/precision.md#int8-post-training-quantisation), given
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
 * and the epilogue runs in float; a residual add with a ReLU/ReLU6 or none
 * was never fused into the layer (pass_fuse_residual_int8): the add and the
 * ReLU run in int8 as nodes of their own.  At -O0 too, a conv's BatchNorm is
 * folded and a layer's ReLU/ReLU6 fused before calibration (pipeline_table.c),
 * so that the integers do not depend on -O.  Data
 * movement after an int8 result (a max-pool, reshape/Flatten, transpose,
 * slice, chunk and its results) shares the producer's output scale and zero
 * point (TFLite's rule) and moves the bytes when its readers take them.
 * An add (broadcasting or not), a concat, and a ReLU/ReLU6 run in int8
 * (axrt_ew_q8) when an operand comes from an int8 node (a ReLU: its only
 * operand): the add with TFLite's fixed-point rescaling of each operand to
 * its own observed output range, the concat requantising each operand to its
 * output range (a copy where the parameters agree), the ReLU sharing its
 * operand's scale and zero point (a clamp: exact); a float operand is
 * quantised at the door with its own observed range.  A global mean-pool, a
 * mean over one dim and a windowed mean-pool (MeanPool, AdaptiveMeanPool)
 * of an int8 result whose readers are int8 nodes run in int8 too (TFLite's
 * integer mean: the exact sum rescaled by s_in / (count s_out) to its own
 * observed range, a windowed pool's count its window's divisor as the float
 * op counts it).  In a model imported from .tflite a sigmoid, a tanh and a
 * softmax over the last axis run in int8 too, on tables made at compile time
 * (pass_quant_table.c: LiteRT's own arithmetic).  Everything
 * else runs in float on the dequantised values: softmax, LayerNorm, the
 * other activations and binary ops, matmul, attention and the fused
 * elementwise loops.  Between int8 nodes the value stays int8: a node
 * whose integer result (no float epilogue) is read only by int8 nodes
 * quantising that operand with its own output parameters (always so: both
 * come from the same observed range) stores q + 128 in uint8 (out_q8) and
 * its readers skip the quantisation at their door (in_q8, in_q8_mask) — the
 * same integers as dequantising and quantising again, one byte per element.
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
    double s = amax > 0 ? amax / 127 : 1;
    if (w->file_wscale)   /* a quantised model's own scale: its integers come back exactly */
        s = w->file_wscale[w->nfile_wscale == 1 ? 0 : o];
    const int64_t cig = w->rank == 4 ? w->shape[1] : per, taps = per / cig;
    const double qmin = w->file_wscale ? -128 : -127;
    for (int64_t c = 0; c < cig; c++)
        for (int64_t t = 0; t < taps; t++)   /* torch [cig, kh, kw] -> [kh, kw, cig] */
            out[t * cig + c] = (int8_t)clamp_int(round_away(src[c * taps + t] / s), qmin, 127);
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
    /* TFLite's CONV_2D and DEPTHWISE_CONV_2D requantise with two roundings;
       its FULLY_CONNECTED (LiteRT's reference kernel) with one, as axc:
       measured against LiteRT 2.3 (docs/tflite.md) */
    q->tflite_rounding = g->tflite_arith && n->op == IR_OP_conv;
    n->quant = q;
}

/* ---- add, concat, ReLU/ReLU6 -------------------------------------------------- */

/* Whether node id already computes integers (an int8 node without float epilogue). */
static bool int8_result(const ir_graph *g, int id)
{
    const ir_quant *q = g->nodes[id].quant;
    return q && !q->float_out;
}

/* Whether n moves or picks its operand's values without computing new ones
 * (a max-pool, reshape, transpose, slice, chunk or a chunk's result) and
 * that operand is an int8 result: then n shares the operand's parameters
 * (TFLite's rule) and may run in int8, the same integers as quantising its
 * float result. */
static bool shares_params(const ir_graph *g, const ir_node *n)
{
    static const ir_op moves[] = {IR_OP_maxpool, IR_OP_reshape, IR_OP_transpose, IR_OP_slice, IR_OP_chunk,
                                  IR_OP_result};
    if (n->dead || n->dtype != AXRT_F32 || n->quant)
        return false;
    for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++)
        if (n->op == moves[i])
            return int8_result(g, n->src[0]);
    return false;
}

/* The int8 nodes that cannot quantise their operand at the door: a reshape
 * (a view of its operand's buffer), a chunk and its results (written by the
 * chunk, into the results' own buffers). */
static bool needs_int8_operand(ir_op op)
{
    return op == IR_OP_reshape || op == IR_OP_chunk || op == IR_OP_result;
}

/* The means in int8: an exact int32 sum rescaled once to the output range. */
static bool is_mean(ir_op op)
{
    return op == IR_OP_globalmeanpool || op == IR_OP_meanpool || op == IR_OP_mean;
}

static bool is_activation(const ir_graph *g, int id)
{
    const ir_node *p = &g->nodes[id];
    return p->dtype == AXRT_F32 && p->op != IR_OP_param && p->op != IR_OP_scalar;
}

/* Whether operand id of an int8 elementwise node is quantised data: an
 * activation, or in a model imported from .tflite a constant the file
 * quantises (its float data is (q - zp) * scale: quantised at the door
 * with the file's scale and zero point, its integers come back exactly). */
static bool ew_operand(const ir_graph *g, int id)
{
    const ir_node *p = &g->nodes[id];
    return is_activation(g, id) ||
           (g->tflite_arith && p->op == IR_OP_param && p->data && p->dtype == AXRT_F32 && p->file_scale > 0);
}

/* Whether n is a sigmoid, tanh or softmax over its last axis of a model
 * imported from .tflite: TFLite's table arithmetic (pass_quant_table.c). */
static bool is_table_op(const ir_graph *g, const ir_node *n)
{
    return g->tflite_arith && (n->op == IR_OP_sigmoid || n->op == IR_OP_tanh ||
                               (n->op == IR_OP_softmax && n->attrs.axis == n->rank - 1));
}

/* Whether n runs in int8 as an elementwise node: a ReLU/ReLU6 or a mean
 * (pool) of an int8 result; an add (broadcasting or not) or a concat,
 * every operand a Float32 activation and one at least an int8 result.  In
 * a model imported from .tflite every int8 tensor is TFLite's integers:
 * these and a mul run in int8 whatever their operands' producers (a
 * model input's QUANTIZE, a constant), as TFLite computes them. */
static bool ew_applies(const ir_graph *g, const ir_node *n)
{
    if (n->dead || n->dtype != AXRT_F32 || n->quant)
        return false;
    if (n->op == IR_OP_relu || n->op == IR_OP_relu6 || is_mean(n->op))
        return int8_result(g, n->src[0]) || (g->tflite_arith && is_activation(g, n->src[0]));
    if (is_table_op(g, n))
        return is_activation(g, n->src[0]);
    if (n->op != IR_OP_concat && n->op != IR_OP_add && !(n->op == IR_OP_mul && g->tflite_arith))
        return false;
    bool from_int8 = g->tflite_arith;
    for (int k = 0; k < n->nsrc; k++) {
        if (!ew_operand(g, n->src[k])) return false;
        from_int8 |= int8_result(g, n->src[k]);
    }
    return from_int8;
}

static void ew_fixed_point(double m, int32_t *mult, int32_t *shift)
{
    int8_t s;
    fixed_point(m, mult, &s);
    *shift = s;
}

/* The runtime's parameters of n (axrt.h axrt_ew_q8): an add's TFLite
 * rescaling (2^20, each operand to twice the larger scale, the sum to the
 * output's); a concat's part k or a ReLU: operand to output scale; a global
 * mean-pool or a mean: its sum of `count` values to the output scale (a
 * windowed mean-pool's multipliers: meanpool_window). */
static void ew_params(const ir_node *n, ir_quant *q, double count)
{
    for (int k = 0; k < (n->op == IR_OP_concat ? q->nin : 1); k++) {
        axrt_ew_q8 *e = &q->ew[k];
        e->out_zp = q->out_zp;
        e->scale = q->out_scale;
        e->lo = n->op == IR_OP_relu || n->op == IR_OP_relu6 ? q->out_zp : -128;
        e->hi = n->op == IR_OP_relu6 ? clamp_int(q->out_zp + round_away(6 / q->out_scale), -128, 127) : 127;
        if (n->op == IR_OP_mul) {   /* TFLite's int8 MUL */
            e->zp[0] = q->in_zps[0];
            e->zp[1] = q->in_zps[1];
            e->flags |= AXRT_Q8_MUL;
            ew_fixed_point((double)q->in_scales[0] * q->in_scales[1] / q->out_scale, &e->out_mult, &e->out_shift);
            continue;
        }
        if (n->op != IR_OP_add) {
            e->zp[0] = q->in_zps[k];
            ew_fixed_point((double)q->in_scales[k] / (count * q->out_scale), &e->mult[0], &e->shift[0]);
            continue;
        }
        const double twice_max = 2.0 * (q->in_scales[0] > q->in_scales[1] ? q->in_scales[0] : q->in_scales[1]);
        for (int i = 0; i < 2; i++) {
            e->zp[i] = q->in_zps[i];
            ew_fixed_point(q->in_scales[i] / twice_max, &e->mult[i], &e->shift[i]);
        }
        e->left = 20;
        ew_fixed_point(twice_max / (1048576.0 * q->out_scale), &e->out_mult, &e->out_shift);
    }
}

/* A windowed mean-pool's axrt_meanpool_q8 window: how its divisors count
 * (the float op's: count_include_pad, ceil mode's extra padding never
 * counted), the smallest and how many, and per divisor d from it the Q31
 * multiplier and shift of s_in / (d s_out). */
static void meanpool_window(const ir_graph *g, const ir_node *n, ir_quant *q)
{
    const axrt_pool2d_params p = ir_pool2d_params(g, n);
    const ir_attrs *a = &n->attrs;
    const int32_t bottom = a->pad[2] - a->ceil_extra[0], right = a->pad[3] - a->ceil_extra[1];
    const int32_t count_pad = !a->exclude_pad;
    int32_t dmin = INT32_MAX, dmax = 1;
    for (int oy = 0; oy < p.oh; oy++)
        for (int ox = 0; ox < p.ow; ox++) {
            const int32_t d = axrt_meanpool_divisor(&p, oy, ox, bottom, right, count_pad);
            dmin = d < dmin ? d : dmin;
            dmax = d > dmax ? d : dmax;
        }
    dmin = dmin < 1 ? 1 : dmin > dmax ? dmax : dmin;
    q->nwindow = 5 + 2 * (dmax - dmin + 1);
    q->window = ax_alloc(g->ctx->arena, sizeof *q->window * (size_t)q->nwindow);
    const int32_t head[] = {bottom, right, count_pad, dmin, dmax - dmin + 1};
    memcpy(q->window, head, sizeof head);
    for (int32_t d = dmin; d <= dmax; d++)
        ew_fixed_point((double)q->in_scale / ((double)d * q->out_scale), &q->window[5 + 2 * (d - dmin)],
                       &q->window[6 + 2 * (d - dmin)]);
}

/* A model imported from .tflite: TFLite's reference arithmetic
 * (AXRT_Q8_TFLITE) for an add, a concat's part and a ReLU/ReLU6 (its
 * fixed-point rescaling), a mean (its MEAN: the sum rescaled by the
 * multiplier of s_in / (count s_out), two roundings), and a windowed
 * mean-pool whose input and output parameters agree (TFLite's integer
 * AveragePool; one whose parameters differ keeps axc's arithmetic). */
static void ew_tflite(const ir_node *n, ir_quant *q)
{
    if (n->op == IR_OP_meanpool && (q->in_scale != q->out_scale || q->in_zp != q->out_zp))
        return;
    q->tflite_rounding = true;
    for (int k = 0; k < (n->op == IR_OP_concat ? q->nin : 1); k++)
        q->ew[k].flags |= AXRT_Q8_TFLITE;
}

/* A table op's table (is_table_op): a softmax's exponentials of beta times
 * its operand, a sigmoid's or tanh's results. */
static void quantise_table(ir_graph *g, ir_node *n, ir_quant *q, double beta)
{
    if (n->op == IR_OP_softmax) {
        q->exp_table = ax_alloc(g->ctx->arena, sizeof *q->exp_table * 256);
        pass_quant_exp_table(q->in_scale, (float)beta, q->exp_table);
        return;
    }
    q->lookup = ax_alloc(g->ctx->arena, sizeof *q->lookup * 256);
    pass_quant_lookup_table(n->op, q->in_scale, q->in_zp, q->out_scale, q->out_zp, q->lookup);
}

/* n's ir_quant: each operand's parameters from its (final) range, the
 * output's from its own (a ReLU's: its operand's, shared); beta: a
 * softmax's (pass_quant_fold_beta). */
static void quantise_ew(ir_graph *g, ir_node *n, double *lo, double *hi, double beta)
{
    ax_arena *a = g->ctx->arena;
    const int id = (int)(n - g->nodes);
    ir_quant *q = memset(ax_alloc(a, sizeof *q), 0, sizeof *q);
    q->nin = n->nsrc;
    q->in_scales = ax_alloc(a, sizeof *q->in_scales * (size_t)q->nin);
    q->in_zps = ax_alloc(a, sizeof *q->in_zps * (size_t)q->nin);
    for (int k = 0; k < q->nin; k++)
        pass_quant_params(lo[n->src[k]], hi[n->src[k]], &q->in_scales[k], &q->in_zps[k]);
    if (n->op == IR_OP_relu || n->op == IR_OP_relu6) {
        lo[id] = lo[n->src[0]];
        hi[id] = hi[n->src[0]];
    }
    pass_quant_params(lo[id], hi[id], &q->out_scale, &q->out_zp);
    q->in_scale = q->in_scales[0];
    q->in_zp = q->in_zps[0];
    q->lo = -128;
    q->hi = 127;
    const size_t count = n->op == IR_OP_concat ? (size_t)q->nin : 1;
    q->ew = memset(ax_alloc(a, sizeof *q->ew * count), 0, sizeof *q->ew * count);
    ew_params(n, q, is_mean(n->op) ? (double)(ir_numel(&g->nodes[n->src[0]]) / ir_numel(n)) : 1);
    if (n->op == IR_OP_meanpool)
        meanpool_window(g, n, q);
    if (g->tflite_arith)
        ew_tflite(n, q);
    if (is_table_op(g, n))
        quantise_table(g, n, q, beta);
    n->quant = q;
}

/* ---- int8 storage between int8 nodes ------------------------------------------- */

/* The parameters int8 node r quantises its operand i with; false when r
 * does not read operand i as an int8 activation. */
static bool reads_int8(const ir_node *r, int i, float *scale, int32_t *zp)
{
    const ir_quant *q = r->quant;
    if (!q || i >= 32 || (q->nin ? i >= q->nin : i != 0))   /* in_q8_mask's 32 bits */
        return false;
    *scale = q->nin ? q->in_scales[i] : q->in_scale;
    *zp = q->nin ? q->in_zps[i] : q->in_zp;
    return true;
}

/* Whether int8 node id's integers can be stored as int8: not a graph
 * output, no float epilogue, and every live reader an int8 node reading it
 * as an activation with the same scale and zero point. */
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
            float s;
            int32_t zp;
            if (!reads_int8(r, i, &s, &zp) || s != q->out_scale || zp != q->out_zp)
                return false;
            read = true;
        }
    }
    return read;
}

/* A shares_params node (ir_quant without weights or operands of its own:
 * in and out the operand's parameters). */
static void quantise_shared(ir_graph *g, ir_node *n, double *lo, double *hi)
{
    const int id = (int)(n - g->nodes);
    lo[id] = lo[n->src[0]];
    hi[id] = hi[n->src[0]];
    ir_quant *q = memset(ax_alloc(g->ctx->arena, sizeof *q), 0, sizeof *q);
    pass_quant_params(lo[id], hi[id], &q->out_scale, &q->out_zp);
    q->in_scale = q->out_scale;
    q->in_zp = q->out_zp;
    n->quant = q;
}

/* The int8 nodes that only pay where their result stays int8 (the data
 * movement of shares_params: the float op on the dequantised values gives
 * the same values; a mean (pool): one rounding fewer in float) run in float
 * otherwise, those that need_int8_operand also where their operand's
 * result does not stay int8.  Last first, until nothing changes: each
 * decision reads its readers' final ones. */
static void drop_float_ended(ir_graph *g)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (int id = g->nnodes - 1; id >= 0; id--) {
            ir_node *n = &g->nodes[id];
            if (!n->quant || n->quant->w || (n->quant->nin && !is_mean(n->op)))
                continue;
            if (keeps_int8(g, id) && (!needs_int8_operand(n->op) || keeps_int8(g, n->src[0])))
                continue;
            if (n->file_scale > 0 && is_mean(n->op))
                continue;   /* a quantised model file rounds this mean to its integers: so do we */
            n->quant = NULL;
            changed = true;
        }
    }
}

/* Marks the int8 nodes whose results stay int8 and their readers. */
static void mark_int8_storage(ir_graph *g)
{
    drop_float_ended(g);
    for (int id = 0; id < g->nnodes; id++) {
        if (!keeps_int8(g, id)) continue;
        ir_quant *q = (ir_quant *)g->nodes[id].quant;
        q->out_q8 = true;
        for (int k = 0; q->ew && k < (g->nodes[id].op == IR_OP_concat ? q->nin : 1); k++)
            q->ew[k].flags |= AXRT_Q8_OUT_BYTES;
        for (int k = id + 1; k < g->nnodes; k++) {
            ir_quant *r = (ir_quant *)g->nodes[k].quant;
            for (int i = 0; r && !g->nodes[k].dead && i < g->nodes[k].nsrc; i++)
                if (g->nodes[k].src[i] == id && (i == 0 || r->nin)) {
                    r->in_q8_mask |= (uint32_t)1 << i;
                    r->in_q8 = r->in_q8_mask & 1;
                }
        }
    }
}

/* Whether n's range and its activation operands' are known (a quantised
 * model file gives NaN for the values it leaves float; calibration observes
 * every live value). */
static bool ranged(const ir_graph *g, const ir_node *n, const double *lo)
{
    const int id = (int)(n - g->nodes);
    if (isnan(lo[id])) return false;
    for (int k = 0; k < n->nsrc; k++)
        if (n->src[k] != IR_NONE && is_activation(g, n->src[k]) && isnan(lo[n->src[k]])) return false;
    return true;
}

int pass_quant(ir_graph *g, const double *observed_lo, const double *observed_hi)
{
    int count = 0;
    const size_t bytes = sizeof(double) * (size_t)(g->nnodes + 1);
    double *lo = memcpy(ax_alloc(g->ctx->arena, bytes), observed_lo, bytes - sizeof(double));
    double *hi = memcpy(ax_alloc(g->ctx->arena, bytes), observed_hi, bytes - sizeof(double));
    for (int id = 0; id < g->nnodes; id++) {   /* in order: every operand's range is final */
        ir_node *n = &g->nodes[id];
        const double beta = pass_quant_fold_beta(g, n, lo);
        if (!ranged(g, n, lo)) {
            continue;   /* a quantised model file leaves this value float */
        } else if (pass_quant_applies(g, n)) {
            quantise_node(g, n, lo, hi);
            count++;
        } else if (ew_applies(g, n)) {
            quantise_ew(g, n, lo, hi, beta);
        } else if (shares_params(g, n)) {
            quantise_shared(g, n, lo, hi);
        } else if ((n->op == IR_OP_reshape || n->op == IR_OP_transpose) && !n->dead) {
            lo[id] = lo[n->src[0]];   /* the same values: the same range */
            hi[id] = hi[n->src[0]];
        }
    }
    mark_int8_storage(g);
    /* the int8 nodes need a byte buffer for their quantised input and
       none of the layers runs in place: plan again (an elementwise int8
       node too, where a model has no int8 layer) */
    bool any = count > 0;
    for (int id = 0; id < g->nnodes && !any; id++)
        any = g->nodes[id].quant != NULL;
    if (any) pass_memplan_with(g, g->share_buffers);
    return count;
}
