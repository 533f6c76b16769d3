/* pass_fuse.c — graph rewrites that merge nodes, each applying one identity:
 *
 *   fold_batchnorm   conv(x,W,b) -> batchnorm(g,beta,m,v)  ==  conv(x, W*s, (b-m)*s+beta),
 *                    s = g/sqrt(v+eps) per output channel (the last dim);
 *                    dense likewise (W rows scaled).  Parameter data is rewritten at
 *                    compile time into new, derived params; the user's params stay as
 *                    dead nodes so --save-weights still writes the state_dict.
 *   fold_scale_shift conv/dense(x,W,b) * c == conv/dense(x, W*c, b*c);
 *                    conv/dense(x,W,b) + c == conv/dense(x, W, b+c),
 *                    c a scalar or a param broadcasting over the last dim only.
 *   fuse_residual    add(op(...), r) == op(...) with residual r: y = op(...) + r, when
 *                    r has the result's shape and is defined before op; under
 *                    --quantize not where int8 runs the layer, the add and a
 *                    ReLU/ReLU6 apart (residual_kept_apart).
 *   fuse_activation  act(op(...)) == op(...) with epilogue act (attrs.act), for the
 *                    activations in epilogue_activation().
 *   fuse_spatial_mean mean(mean(x, axis 1), axis 2) (either order), x [N, H, W, C]
 *                    == reshape(globalmeanpool(x), [N, 1, 1, C]): one threaded pass
 *                    over x instead of two (a squeeze-and-excitation's squeeze,
 *                    `mean(x; dims=(1, 2))`).
 *   fuse_expand_depthwise  depthwise_conv(conv1x1(x)) computed row by row: the
 *                    1x1 conv is marked rows_fused and the target's kernel makes
 *                    its rows a few at a time inside the depthwise conv (only
 *                    where the target's fuse_rows says its kernel can and it
 *                    pays), so the expanded tensor never exists whole; and
 *                    conv1x1(that depthwise conv) likewise: the depthwise conv
 *                    is marked rows_fused too and the projection runs band by
 *                    band on its rows (the whole inverted-residual block).
 * A producer is only merged into its consumer when the consumer is its single
 * use and the producer is not a graph output (its value must not be observable
 * unfused).  Each pass returns 0 (rewrites cannot fail). */
#include "passes.h"
#include "ir_use.h"

#include <math.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------------- */

/* id may be merged into its consumer: used once, and not a graph output
 * (u: the use analysis of the graph as it is now). */
static bool single_internal_use(const ir_use *u, int id)
{
    return ir_use_count(u, id) == 1 && !ir_use_is_output(u, id);
}

/* Every reference to from (operands, outputs) now refers to to; from dies. */
static void replace_and_kill(ir_graph *g, int from, int to)
{
    for (int k = 0; k < g->nnodes; k++) {
        ir_node *n = &g->nodes[k];
        for (int i = 0; !n->dead && i < n->nsrc; i++)
            if (n->src[i] == from)
                n->src[i] = to;
    }
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == from)
            g->outputs[i] = to;
    if (g->nodes[from].file_scale > 0) {   /* `to` now computes from's value: its file quantisation */
        g->nodes[to].file_scale = g->nodes[from].file_scale;
        g->nodes[to].file_zp = g->nodes[from].file_zp;
    }
    g->nodes[from].dead = true;
}

static bool is_float_param(const ir_graph *g, int id)
{
    const ir_node *p = &g->nodes[id];
    return (p->op == IR_OP_param || p->op == IR_OP_scalar) &&
           (p->dtype == AXRT_F32 || p->dtype == AXRT_F64) && (p->op == IR_OP_scalar || p->data);
}

static double param_at(const ir_node *p, int64_t i)
{
    if (p->op == IR_OP_scalar)
        return p->attrs.scalar;
    return p->dtype == AXRT_F64 ? ((const double *)p->data)[i] : ((const float *)p->data)[i];
}

static void param_set(ir_node *p, int64_t i, double v)
{
    if (p->dtype == AXRT_F64)
        ((double *)p->data)[i] = v;
    else
        ((float *)p->data)[i] = (float)v;
}

/* A new derived param called "NAME (folded)", shaped like shape_of (or
 * [channels] when shape_of is NULL), inserted at pos; its data is a copy of
 * from's (zeros if from is IR_NONE).  Returns its id; ids >= pos have shifted by one. */
static int new_param(ir_graph *g, int pos, int from, const ir_node *shape_of, int64_t channels,
                     const char *name)
{
    ir_node tmpl = shape_of ? *shape_of : g->nodes[pos];
    int id = ir_insert(g, pos, IR_OP_param, NULL, 0, tmpl.loc);
    ir_node *p = &g->nodes[id];
    p->dtype = g->dtype;
    p->rank = shape_of ? tmpl.rank : 1;
    if (shape_of)
        memcpy(p->shape, tmpl.shape, sizeof p->shape);
    else
        p->shape[0] = channels;
    p->derived = true;
    p->name = from != IR_NONE && g->nodes[from].derived ? name
                                                        : ax_sprintf(g->ctx->arena, "%s (folded)", name);
    p->data = ax_alloc(g->ctx->arena, ir_nbytes(p));
    if (from != IR_NONE)
        memcpy(p->data, g->nodes[from].data, ir_nbytes(p));
    return id;
}

/* Gives the dense/conv at id fresh derived copies of its weight and bias
 * (bias zeros when absent) to rewrite; the copies are inserted right before
 * it, so it and every later node move up by two.  Returns its new id. */
static int own_params(ir_graph *g, int id)
{
    const int w = g->nodes[id].src[1], b = g->nodes[id].src[2];
    const int64_t channels = g->nodes[id].shape[g->nodes[id].rank - 1];
    const char *layer = g->nodes[id].name ? g->nodes[id].name : ir_ops[g->nodes[id].op].name;
    const char *bias_name = b != IR_NONE ? g->nodes[b].name : ax_sprintf(g->ctx->arena, "%s.bias", layer);
    const int new_w = new_param(g, id, w, &g->nodes[w], 0, g->nodes[w].name);
    const int new_b = new_param(g, id + 1, b, b != IR_NONE ? &g->nodes[b] : NULL, channels, bias_name);
    ir_node *n = &g->nodes[id + 2];
    n->src[1] = new_w;
    n->src[2] = new_b;
    return id + 2;
}

/* Scales output channel c of a dense/conv's weight (rows of dim 0) by s[c]
 * and sets bias[c] = bias[c]*s[c] + shift[c]. */
static void scale_channels(ir_graph *g, int id, const double *s, const double *shift)
{
    ir_node *n = &g->nodes[id];
    ir_node *w = &g->nodes[n->src[1]], *b = &g->nodes[n->src[2]];
    const int64_t channels = w->shape[0], per = ir_numel(w) / channels;
    for (int64_t c = 0; c < channels; c++) {
        for (int64_t i = 0; i < per; i++)
            param_set(w, c * per + i, param_at(w, c * per + i) * s[c]);
        param_set(b, c, param_at(b, c) * s[c] + shift[c]);
    }
}

static bool is_linear_producer(const ir_graph *g, const ir_use *u, int id)
{
    const ir_node *n = &g->nodes[id];
    return (n->op == IR_OP_conv || n->op == IR_OP_dense) && n->attrs.act == IR_NONE &&
           n->attrs.residual == IR_NONE && (n->dtype == AXRT_F32 || n->dtype == AXRT_F64) &&
           is_float_param(g, n->src[1]) && (n->src[2] == IR_NONE || is_float_param(g, n->src[2])) &&
           single_internal_use(u, id);
}

/* Removes params and scalars that no live node uses any more (a dead
 * user param keeps its data for --save-weights; dead derived ones are
 * simply dropped). */
static void kill_unused_params(ir_graph *g)
{
    ir_use u = {0};
    ir_use_compute(g, &u);   /* killing a source changes no other node's uses */
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead && (g->nodes[id].op == IR_OP_param || g->nodes[id].op == IR_OP_scalar) &&
            ir_use_count(&u, id) == 0)
            g->nodes[id].dead = true;
    ir_use_free(&u);
}

/* ---- fold_batchnorm ------------------------------------------------------- */

static void fold_one_batchnorm(ir_graph *g, int bn_id)
{
    const ir_node *bn = &g->nodes[bn_id];
    const int64_t channels = bn->shape[bn->rank - 1];
    double *s = ax_alloc(g->ctx->arena, 2 * (size_t)channels * sizeof *s), *shift = s + channels;
    const ir_node *gamma = &g->nodes[bn->src[1]], *beta = &g->nodes[bn->src[2]];
    const ir_node *mean = &g->nodes[bn->src[3]], *var = &g->nodes[bn->src[4]];
    for (int64_t c = 0; c < channels; c++) {
        s[c] = param_at(gamma, c) / sqrt(param_at(var, c) + bn->attrs.eps);
        shift[c] = param_at(beta, c) - param_at(mean, c) * s[c];
    }
    int producer = own_params(g, g->nodes[bn_id].src[0]);
    bn_id += 2;
    scale_channels(g, producer, s, shift);
    replace_and_kill(g, bn_id, producer);
}

static bool batchnorm_foldable(const ir_graph *g, const ir_use *u, int id)
{
    const ir_node *n = &g->nodes[id];
    if (n->dead || n->op != IR_OP_batchnorm || n->attrs.act != IR_NONE || n->attrs.residual != IR_NONE)
        return false;
    for (int i = 1; i < 5; i++)
        if (!is_float_param(g, n->src[i]) || g->nodes[n->src[i]].op != IR_OP_param)
            return false;
    const ir_node *p = &g->nodes[n->src[0]];
    return is_linear_producer(g, u, n->src[0]) && p->shape[p->rank - 1] == n->shape[n->rank - 1] &&
           g->nodes[p->src[1]].shape[0] == n->shape[n->rank - 1];
}

int pass_fold_batchnorm(ir_graph *g)
{
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++)
        if (batchnorm_foldable(g, &u, id)) {
            fold_one_batchnorm(g, id);
            id += 2;
            ir_use_compute(g, &u);
        }
    ir_use_free(&u);
    kill_unused_params(g);
    return 0;
}

/* ---- fold_scale_shift ----------------------------------------------------- */

/* The constant operand of a mul/add at id whose other operand is a linear
 * producer, when the constant is one value or one per output channel. */
static int constant_side(const ir_graph *g, const ir_use *u, int id, int *producer)
{
    const ir_node *n = &g->nodes[id];
    for (int side = 0; side < 2; side++) {
        int p = n->src[side], c = n->src[1 - side];
        if (!is_float_param(g, c) || !is_linear_producer(g, u, p) || !g->nodes[p].rank)
            continue;
        const ir_node *cn = &g->nodes[c], *pn = &g->nodes[p];
        int64_t channels = pn->shape[pn->rank - 1];
        bool per_channel = cn->rank >= 1 && cn->shape[cn->rank - 1] == channels &&
                           ir_numel(cn) == channels && cn->rank <= pn->rank;
        if (ir_numel(cn) == 1 || per_channel) {
            *producer = p;
            return c;
        }
    }
    return IR_NONE;
}

static void fold_one_scale_shift(ir_graph *g, int id, int producer, int c)
{
    const ir_node *cn = &g->nodes[c];
    const int64_t channels = g->nodes[producer].shape[g->nodes[producer].rank - 1];
    const bool is_mul = g->nodes[id].op == IR_OP_mul;
    double *s = ax_alloc(g->ctx->arena, 2 * (size_t)channels * sizeof *s), *shift = s + channels;
    for (int64_t k = 0; k < channels; k++) {
        double v = param_at(cn, ir_numel(cn) == 1 ? 0 : k);
        s[k] = is_mul ? v : 1.0;
        shift[k] = is_mul ? 0.0 : v;
    }
    producer = own_params(g, producer);
    scale_channels(g, producer, s, shift);
    replace_and_kill(g, id + 2, producer);
}

int pass_fold_scale_shift(ir_graph *g)
{
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++) {
        ir_node *n = &g->nodes[id];
        int producer;
        if (n->dead || (n->op != IR_OP_mul && n->op != IR_OP_add))
            continue;
        int c = constant_side(g, &u, id, &producer);
        if (c != IR_NONE && ir_same_shape(&g->nodes[producer], n)) {
            fold_one_scale_shift(g, id, producer, c);
            id += 2;
            ir_use_compute(g, &u);
        }
    }
    ir_use_free(&u);
    kill_unused_params(g);
    return 0;
}

/* ---- epilogues ------------------------------------------------------------- */

/* Which ops take an epilogue and which activations may be one: ops.def's
 * IR_EPILOGUE and IR_ACT flags. */
static bool takes_epilogue(ir_op op) { return ir_op_has(op, IR_EPILOGUE); }
static bool epilogue_activation(ir_op op) { return ir_op_has(op, IR_ACT); }

/* The node reading add when that is its only use, else IR_NONE. */
static int only_reader(const ir_graph *g, const ir_use *u, int add)
{
    if (!single_internal_use(u, add))
        return IR_NONE;
    for (int k = add + 1; k < g->nnodes; k++)
        for (int i = 0; !g->nodes[k].dead && i < g->nodes[k].nsrc; i++)
            if (g->nodes[k].src[i] == add)
                return k;
    return IR_NONE;
}

/* Under --quantize: whether add's residual stays apart from layer p, which
 * int8 runs (pass_quant_applies), because the epilogue p would get folds into
 * int8 (a ReLU/ReLU6, as fuse_activation would fuse it, or none): int8 then
 * runs p, the add and the activation as nodes of their own, and calibration
 * observes each.  Any other activation keeps the residual fused (int8
 * applies that epilogue in float).  A kept add reads p first; it and its
 * activation are marked int8_apart. */
static bool residual_kept_apart(ir_graph *g, const ir_use *u, int add, int p)
{
    if (!pass_quant_applies(g, &g->nodes[p]))
        return false;
    const int act = only_reader(g, u, add);
    const ir_node *a = act == IR_NONE ? NULL : &g->nodes[act];
    const bool fuses = a && epilogue_activation(a->op) && a->dtype == g->nodes[p].dtype;
    if (fuses && a->op != IR_OP_relu && a->op != IR_OP_relu6)
        return false;
    ir_node *n = &g->nodes[add];
    n->src[1] = n->src[0] == p ? n->src[1] : n->src[0];
    n->src[0] = p;
    n->int8_apart = true;
    if (fuses)
        g->nodes[act].int8_apart = true;
    return true;
}

/* int8: under --quantize (residual_kept_apart). */
static void fuse_residual(ir_graph *g, bool int8)
{
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *add = &g->nodes[id];
        if (add->dead || add->op != IR_OP_add)
            continue;
        for (int side = 0; side < 2; side++) {
            int p = add->src[side], r = add->src[1 - side];
            ir_node *pn = &g->nodes[p];
            if (!takes_epilogue(pn->op) || pn->attrs.act != IR_NONE || pn->attrs.residual != IR_NONE ||
                r >= p || r == p || !ir_same_shape(pn, add) || !ir_same_shape(&g->nodes[r], add) ||
                g->nodes[r].dtype != pn->dtype || !single_internal_use(&u, p) ||
                pn->nsrc != ir_ops[pn->op].max_src)
                continue;
            if (int8 && residual_kept_apart(g, &u, id, p))
                break;
            pn->src[pn->nsrc] = r;
            pn->attrs.residual = pn->nsrc++;
            replace_and_kill(g, id, p);
            ir_use_compute(g, &u);
            break;
        }
    }
    ir_use_free(&u);
}

int pass_fuse_residual(ir_graph *g)
{
    fuse_residual(g, false);
    return 0;
}

int pass_fuse_residual_int8(ir_graph *g)
{
    fuse_residual(g, true);
    return 0;
}

int pass_fuse_activation(ir_graph *g)
{
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *act = &g->nodes[id];
        if (act->dead || !epilogue_activation(act->op))
            continue;
        ir_node *p = &g->nodes[act->src[0]];
        if (!takes_epilogue(p->op) || p->attrs.act != IR_NONE || p->dtype != act->dtype ||
            !single_internal_use(&u, act->src[0]))
            continue;
        p->attrs.act = (int)act->op;
        p->attrs.alpha = act->attrs.alpha;
        replace_and_kill(g, id, act->src[0]);
        ir_use_compute(g, &u);
    }
    ir_use_free(&u);
    return 0;
}

/* A live rank-4 mean over axis, in its input's dtype. */
static bool spatial_mean(const ir_graph *g, int id, int axis)
{
    const ir_node *n = &g->nodes[id];
    return !n->dead && n->op == IR_OP_mean && n->rank == 4 && n->attrs.axis == axis &&
           n->dtype == g->nodes[n->src[0]].dtype;
}

int pass_fuse_spatial_mean(ir_graph *g)
{
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++) {
        ir_node *outer = &g->nodes[id];
        const int axis = outer->attrs.axis, first = outer->src[0];
        if (!(spatial_mean(g, id, 1) || spatial_mean(g, id, 2)) || !spatial_mean(g, first, 3 - axis) ||
            !single_internal_use(&u, first))
            continue;
        ir_node *pool = &g->nodes[first];
        const int64_t n = outer->shape[0], c = outer->shape[3];
        pool->op = IR_OP_globalmeanpool;
        pool->rank = 2, pool->shape[0] = n, pool->shape[1] = c;
        outer->op = IR_OP_reshape;
        outer->attrs.nnewshape = 4;
        memcpy(outer->attrs.newshape, outer->shape, 4 * sizeof outer->shape[0]);
    }
    ir_use_free(&u);
    return 0;
}

/* ---- fuse_expand_depthwise ------------------------------------------------ */

/* id is absent, or a param only node user reads. */
static bool own_param_or_none(const ir_graph *g, const ir_use *u, int id)
{
    return id == IR_NONE || (g->nodes[id].op == IR_OP_param && single_internal_use(u, id));
}

/* Each depthwise conv d whose expansion is rows_fused and whose only
 * reader is conv p (its operand 0) is marked rows_fused too where the
 * target computes it band by band inside p (the projection), so that the
 * whole block runs without its expanded tensors. */
static void fuse_projections(ir_graph *g, const ir_use *u)
{
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *p = &g->nodes[id];
        if (p->dead || p->op != IR_OP_conv || p->nsrc < 3)
            continue;
        ir_node *d = &g->nodes[p->src[0]];
        if (d->dead || d->op != IR_OP_conv || d->nsrc != 3 || !g->nodes[d->src[0]].rows_fused ||
            !single_internal_use(u, p->src[0]) || p->attrs.residual == 0)
            continue;
        if (own_param_or_none(g, u, p->src[1]) && own_param_or_none(g, u, p->src[2]) &&
            g->target->fuse_rows(d, p, g))
            d->rows_fused = true;
    }
}

int pass_fuse_expand_depthwise(ir_graph *g)
{
    if (!g->target || !g->target->fuse_rows)
        return 0;
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *d = &g->nodes[id];
        if (d->dead || d->op != IR_OP_conv)
            continue;
        ir_node *e = &g->nodes[d->src[0]];
        if (e->dead || e->op != IR_OP_conv || !single_internal_use(&u, d->src[0]) || d->nsrc != 3 ||
            e->nsrc != 3)
            continue;
        bool owned = true;
        for (int i = 1; i < 3; i++)
            owned = owned && own_param_or_none(g, &u, d->src[i]) && own_param_or_none(g, &u, e->src[i]);
        if (owned && g->target->fuse_rows(e, d, g))
            e->rows_fused = true;
    }
    fuse_projections(g, &u);
    ir_use_free(&u);
    return 0;
}
