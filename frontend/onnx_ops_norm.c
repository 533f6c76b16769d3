/* onnx_ops_norm.c — normalisations, reductions and ops along one axis:
 * BatchNormalization (training mode too), Det, Softmax/LogSoftmax,
 * LayerNormalization, the Reduce* family, InstanceNormalization,
 * GroupNormalization, Hardmax, ArgMax/ArgMin, CumSum, Trilu,
 * LpNormalization, MeanVarianceNormalization, LRN. */
#ifdef AXC_ONNX
#include <math.h>
#include <string.h>

#include "onnx_ops.h"

/* The mean of x over axes (each kept as 1). */
static int mean_axes(ox_state *s, int x, const int64_t *axes, int na)
{
    for (int i = 0; i < na && x != IR_NONE; i++) {
        ir_attrs a = ir_attrs_unset();
        a.axis = (int)axes[i];
        x = ox_add(s, IR_OP_mean, &x, 1, &a);
    }
    return x;
}

/* BatchNormalization with training_mode=1 (opset 14+): normalised by the
 * batch's own mean and biased variance over every axis but 1; the running
 * statistics out are input * momentum + batch * (1 - momentum). */
static bool batchnorm_training(ox_state *s, ox_val **v)
{
    int64_t shape[IR_MAX_RANK], cs[IR_MAX_RANK];
    int rank = ox_shape(s, v[0], shape), x = ox_node(s, v[0]);
    if (rank < 2 || x == IR_NONE) { ox_unsupported(s, "BatchNormalization of a 1-D input"); return false; }
    double eps = ox_attr_float(s, "epsilon", 1e-5), momentum = ox_attr_float(s, "momentum", 0.9);
    int64_t axes[IR_MAX_RANK];
    int na = 0;
    for (int i = 0; i < rank; i++) {
        cs[i] = i == 1 ? shape[1] : 1;
        if (i != 1) axes[na++] = i;
    }
    int mean = mean_axes(s, x, axes, na), d = ox_bin(s, IR_OP_sub, x, mean);
    int var = mean_axes(s, ox_bin(s, IR_OP_mul, d, d), axes, na);
    int scale = ox_reshape_to(s, ox_node(s, v[1]), cs, rank), bias = ox_reshape_to(s, ox_node(s, v[2]), cs, rank);
    int norm = ox_bin(s, IR_OP_div, d, ox_un(s, IR_OP_sqrt, ox_bin(s, IR_OP_add, var, ox_scalar_param(s, eps))));
    if (!ox_set_node(s, 0, ox_bin(s, IR_OP_add, ox_bin(s, IR_OP_mul, norm, scale), bias), false)) return false;
    int64_t c[1] = {shape[1]};
    for (int k = 1; k <= 2 && k < (int)s->node->n_output; k++) {
        if (!s->node->output[k][0]) continue;
        int batch = ox_reshape_to(s, k == 1 ? mean : var, c, 1);
        int run = ox_bin(s, IR_OP_add, ox_bin(s, IR_OP_mul, ox_node(s, v[2 + k]), ox_scalar_param(s, momentum)),
                      ox_bin(s, IR_OP_mul, batch, ox_scalar_param(s, 1 - momentum)));
        if (!ox_set_node(s, k, run, false)) return false;
    }
    return true;
}

/* Det of 2x2 matrices (the trailing two dims): a d - b c. */
bool op_det(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK];
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (rank < 2 || shape[rank - 1] != 2 || shape[rank - 2] != 2 || x == IR_NONE) {
        ox_unsupported(s, "Det of matrices that are not 2x2");
        return false;
    }
    int e[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            e[i][j] = ox_reshape_to(s, ox_slice_axis(s, ox_slice_axis(s, x, rank - 2, i, i + 1, 1), rank - 1, j, j + 1, 1),
                                 shape, rank - 2);
    int y = ox_bin(s, IR_OP_sub, ox_bin(s, IR_OP_mul, e[0][0], e[1][1]), ox_bin(s, IR_OP_mul, e[0][1], e[1][0]));
    if (rank == 2 && y != IR_NONE) {   /* one matrix: a scalar (rank 0), not ox_reshape_to's [1] */
        ir_attrs scalar = ir_attrs_unset();
        scalar.nnewshape = 0;
        y = ox_add(s, IR_OP_reshape, &y, 1, &scalar);
    }
    return ox_set_node(s, 0, y, false);
}

bool op_batchnorm(ox_state *s)
{
    bool ok = true;
    ox_val *v[5];
    for (int i = 0; i < 5; i++)
        if (!(v[i] = IN(i)) || !ok) { if (ok) ox_fail(s, "an absent input"); return false; }
    if (s->node->n_output > 1 || ox_attr_int(s, "training_mode", 0)) return batchnorm_training(s, v);
    int64_t shape[IR_MAX_RANK];
    int rank = ox_shape(s, v[0], shape), x, back[IR_MAX_RANK];
    bool nhwc = rank == 4;
    if (nhwc) x = ox_node_nhwc(s, v[0]);
    else if (rank >= 2) x = ox_axis_last(s, ox_node(s, v[0]), rank, 1, back);
    else { ox_unsupported(s, "BatchNormalization of a 1-D input"); return false; }
    ir_attrs a = ir_attrs_unset();
    a.eps = ox_attr_float(s, "epsilon", 1e-5);
    int src[5] = {x};
    for (int i = 1; i < 5; i++) src[i] = ox_node(s, v[i]);
    int y = ox_add(s, IR_OP_batchnorm, src, 5, &a);
    if (y == IR_NONE) return false;
    return ox_set_node(s, 0, nhwc ? y : ox_transpose_perm(s, y, back, rank), nhwc);
}

bool op_softmax(ox_state *s)
{
    bool ok = true, lg = !strcmp(s->node->op_type, "LogSoftmax");
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", s->opset >= 13 ? -1 : 1);
    int rank = ox_shape(s, x, shape), y = ox_node(s, x);
    if (!ox_norm_axis(s, &axis, rank) || y == IR_NONE) return false;
    ir_attrs a = ir_attrs_unset();
    ir_op op = lg ? IR_OP_log_softmax : IR_OP_softmax;
    if (s->opset < 13 && axis != rank - 1) {   /* over the flattened dims from axis */
        int64_t flat[2] = {ox_numel(shape, (int)axis), ox_numel(shape + axis, rank - (int)axis)};
        a.axis = 1;
        y = ox_reshape_to(s, y, flat, 2);
        y = y == IR_NONE ? y : ox_add(s, op, &y, 1, &a);
        return ox_set_node(s, 0, y == IR_NONE ? y : ox_reshape_to(s, y, shape, rank), false);
    }
    a.axis = (int)axis;
    return ox_set_node(s, 0, ox_add(s, op, &y, 1, &a), false);
}

bool op_layernorm(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0), *w = IN(1), *b = IN(2);
    if (!ok || !x || !w) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", -1);
    int rank = ox_shape(s, x, shape);
    if (!ox_norm_axis(s, &axis, rank)) return false;
    int64_t d = ox_numel(shape + axis, rank - (int)axis), flat[IR_MAX_RANK];
    int64_t ws[IR_MAX_RANK];
    if (ox_shape(s, w, ws) < 1 || ox_numel(ws, ox_shape(s, w, ws)) != d) {
        ox_unsupported(s, "a scale that does not cover the normalised dims exactly");
        return false;
    }
    if (b && ox_numel(ws, ox_shape(s, b, ws)) != d) {
        ox_unsupported(s, "a bias that does not cover the normalised dims exactly");
        return false;
    }
    for (int i = 0; i < axis; i++) flat[i] = shape[i];
    flat[axis] = d;
    ir_attrs a = ir_attrs_unset();
    a.eps = ox_attr_float(s, "epsilon", 1e-5);
    int xn = ox_node(s, x);
    if (axis != rank - 1) xn = ox_reshape_to(s, xn, flat, (int)axis + 1);
    int wn = w->c ? ox_param(s, w->c->v, 1, &d, ax_strdup(s->ctx->arena, w->name)) : ox_reshape_to(s, ox_node(s, w), &d, 1);
    int bn;
    if (!b) {
        double *zeros = ax_alloc(s->ctx->arena, sizeof *zeros * (size_t)d);
        bn = ox_param(s, zeros, 1, &d, NULL);
    } else bn = b->c ? ox_param(s, b->c->v, 1, &d, ax_strdup(s->ctx->arena, b->name)) : ox_reshape_to(s, ox_node(s, b), &d, 1);
    int src[3] = {xn, wn, bn};
    int y = ox_add(s, IR_OP_layernorm, src, 3, &a);
    if (y != IR_NONE && axis != rank - 1) y = ox_reshape_to(s, y, shape, rank);
    if (!ox_set_node(s, 0, y, false)) return false;
    if (s->node->n_output < 2) return true;
    /* Mean and InvStdDev: the statistics, normalised dims kept as 1 */
    ir_attrs r = ir_attrs_unset();
    r.axis = (int)axis;
    int mean = xn == IR_NONE ? xn : ox_add(s, IR_OP_mean, &xn, 1, &r);
    int dev = ox_bin(s, IR_OP_sub, xn, mean), sq = ox_bin(s, IR_OP_mul, dev, dev);
    int var = sq == IR_NONE ? sq : ox_add(s, IR_OP_mean, &sq, 1, &r);
    int inv = ox_bin(s, IR_OP_div, ox_scalar(s, 1.0), ox_un(s, IR_OP_sqrt, ox_bin(s, IR_OP_add, var, ox_scalar(s, a.eps))));
    int64_t kept[IR_MAX_RANK];
    for (int i = 0; i < rank; i++) kept[i] = i < axis ? shape[i] : 1;
    int outs[2] = {mean, inv};
    for (int k = 0; k < 2 && k + 1 < (int)s->node->n_output; k++)
        if (s->node->output[k + 1][0] && !ox_set_node(s, k + 1, outs[k] == IR_NONE ? IR_NONE : ox_reshape_to(s, outs[k], kept, rank), false))
            return false;
    return true;
}

/* The axes of a Reduce* node into axes: the optional input (ReduceSum from
 * opset 13, every other Reduce* from opset 18), else the attribute; -1 when
 * absent.  An axes attribute where the input replaced it is refused, not
 * ignored. */
static int reduce_axes(ox_state *s, int64_t *axes)
{
    bool ok = true;
    if (s->opset < (!strcmp(s->node->op_type, "ReduceSum") ? 13 : 18)) return ox_attr_ints(s, "axes", axes, IR_MAX_RANK);
    if (ox_attr(s, "axes")) {
        ox_fail(s, "an axes attribute at opset %lld, where axes is an input", (long long)s->opset);
        return -1;
    }
    ox_val *v = NIN > 1 ? IN(1) : NULL;
    return ok && v ? ox_const_ints(s, v, axes, IR_MAX_RANK) : -1;
}

/* ReduceMean/Sum/Max/Min/Prod (and the L1/L2/log forms) as one single-axis
 * reduction per axis. */
bool op_reduce(ox_state *s)
{
    bool ok = true;
    const char *op = s->node->op_type;
    bool square = !strcmp(op, "ReduceL2") || !strcmp(op, "ReduceSumSquare");
    bool l1 = !strcmp(op, "ReduceL1"), lse = !strcmp(op, "ReduceLogSumExp"), logsum = !strcmp(op, "ReduceLogSum");
    ir_op ir = !strcmp(op, "ReduceMean") ? IR_OP_mean : !strcmp(op, "ReduceMax") ? IR_OP_maximum
             : !strcmp(op, "ReduceMin") ? IR_OP_minimum : !strcmp(op, "ReduceProd") ? IR_OP_prod : IR_OP_sum;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], axes[IR_MAX_RANK];
    int rank = ox_shape(s, x, shape);
    int na = reduce_axes(s, axes);
    if (s->ctx->errors) return false;
    if (na <= 0) {   /* absent or empty: every axis, or none with noop_with_empty_axes */
        if (ox_attr_int(s, "noop_with_empty_axes", 0)) return op_identity(s);
        na = rank;
        for (int i = 0; i < rank; i++) axes[i] = i;
    }
    bool reduced[IR_MAX_RANK] = {0};
    int y = ox_node(s, x);
    if (square) y = ox_bin(s, IR_OP_mul, y, y);
    if (l1) y = ox_un(s, IR_OP_abs, y);
    if (lse) y = ox_un(s, IR_OP_exp, y);
    for (int i = 0; i < na && y != IR_NONE; i++) {
        if (!ox_norm_axis(s, &axes[i], rank)) return false;
        if (reduced[axes[i]]) continue;
        reduced[axes[i]] = true;
        ir_attrs a = ir_attrs_unset();
        a.axis = (int)axes[i];
        y = ox_add(s, ir, &y, 1, &a);
    }
    if (!strcmp(op, "ReduceL2")) y = ox_un(s, IR_OP_sqrt, y);
    if (lse || logsum) y = ox_un(s, IR_OP_log, y);
    if (y == IR_NONE) return false;
    if (ox_attr_int(s, "keepdims", 1)) return ox_set_node(s, 0, y, false);
    int64_t out[IR_MAX_RANK];
    int r = 0;
    for (int i = 0; i < rank; i++)
        if (!reduced[i]) out[r++] = shape[i];
    return ox_set_node(s, 0, ox_reshape_to(s, y, out, r), false);
}

/* GroupNormalization-18's scale or bias v, one value per group, as the [c]
 * param of one value per channel the IR's groupnorm takes (a constant). */
static int group_weights(ox_state *s, ox_val *v, int64_t c, int64_t groups)
{
    if (!v->c || v->c->count != groups) {
        ox_unsupported(s, "a per-group scale or bias that is not a constant of num_groups values");
        return IR_NONE;
    }
    double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)c);
    for (int64_t ch = 0; ch < c; ch++) w[ch] = v->c->v[ch / (c / groups)];
    return ox_param(s, w, 1, &c, NULL);
}

/* InstanceNormalization, and GroupNormalization with groups of channels:
 * the IR's groupnorm (one group per channel for InstanceNormalization), on
 * the channels-last tensor (NHWC for rank 4, C moved last otherwise). */
static bool channel_norm(ox_state *s, int64_t groups)
{
    bool ok = true;
    ox_val *xv = IN(0), *w = IN(1), *b = IN(2);
    if (!ok || !xv || !w || !b) return false;
    int64_t shape[IR_MAX_RANK];
    int rank = ox_shape(s, xv, shape), back[IR_MAX_RANK];
    if (rank < 3) { ox_unsupported(s, "an input of rank under 3"); return false; }
    if (shape[1] > INT32_MAX) { ox_unsupported(s, "this many channels"); return false; }
    int64_t c = shape[1];
    if (groups < 0) groups = c;
    if (groups < 1 || c % groups) {
        ox_fail(s, "num_groups %lld does not divide the %lld channels", (long long)groups, (long long)c);
        return false;
    }
    bool nhwc = rank == 4;
    int x = nhwc ? ox_node_nhwc(s, xv) : ox_axis_last(s, ox_node(s, xv), rank, 1, back);
    ir_attrs a = ir_attrs_unset();
    a.groups = (int)groups;
    a.eps = ox_attr_float(s, "epsilon", 1e-5);
    int64_t ws[IR_MAX_RANK];
    bool per_group = groups != c && !strcmp(s->node->op_type, "GroupNormalization") && s->opset < 21;
    int src[3] = {x, per_group ? group_weights(s, w, c, groups) : ox_node(s, w),
                  per_group ? group_weights(s, b, c, groups) : ox_node(s, b)};
    for (int i = 1; i < 3; i++)   /* [C] as the IR wants; ONNX's shape rule allows [C, 1, ...] too */
        if (src[i] != IR_NONE && ox_shape(s, i == 1 ? w : b, ws) != 1) src[i] = ox_reshape_to(s, src[i], &c, 1);
    if (src[0] == IR_NONE || src[1] == IR_NONE || src[2] == IR_NONE) return false;
    int y = ox_add(s, IR_OP_groupnorm, src, 3, &a);
    return ox_set_node(s, 0, nhwc ? y : ox_transpose_perm(s, y, back, rank), nhwc);
}

bool op_instancenorm(ox_state *s) { return channel_norm(s, -1); }

/* GroupNormalization (opset 18; scale and bias per group before opset 21,
 * per channel since): the IR's groupnorm. */
bool op_groupnorm(ox_state *s) { return channel_norm(s, ox_attr_int(s, "num_groups", 0)); }

/* Hardmax: 1 at the first maximum along the axis (opset < 13: of the dims
 * flattened from axis), else 0.  eq = [x == max] = 1 - sign(max - x); the
 * running count of eq along the axis (a lower-triangular dense) is 1 only up
 * to the first maximum, so eq * (1 - sign(count - 1)) keeps that one. */
bool op_hardmax(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", s->opset >= 13 ? -1 : 1);
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (!ox_norm_axis(s, &axis, rank) || x == IR_NONE) return false;
    if (s->opset < 13) {
        int64_t flat[2] = {ox_numel(shape, (int)axis), ox_numel(shape + axis, rank - (int)axis)};
        x = ox_reshape_to(s, x, flat, 2);
        axis = 1;
    }
    if (x == IR_NONE) return false;
    int64_t d = ir_at(s->g, x)->shape[axis];
    ir_attrs a = ir_attrs_unset();
    a.axis = (int)axis;
    int max = ox_add(s, IR_OP_maximum, &x, 1, &a);
    int eq = ox_bin(s, IR_OP_sub, ox_scalar_param(s, 1), ox_un(s, IR_OP_sign, ox_bin(s, IR_OP_sub, max, x)));
    if (eq == IR_NONE || d > 4096) { if (!s->ctx->errors) ox_unsupported(s, "a Hardmax axis this long"); return false; }
    double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(d * d));
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j <= i; j++) w[i * d + j] = 1.0;
    int count = ox_weigh_axis(s, eq, (int)axis, w, d);
    int first = ox_bin(s, IR_OP_sub, ox_scalar_param(s, 1), ox_un(s, IR_OP_sign, ox_bin(s, IR_OP_sub, count, ox_scalar_param(s, 1))));
    int y = ox_bin(s, IR_OP_mul, eq, first);
    return ox_set_node(s, 0, y == IR_NONE ? y : ox_reshape_to(s, y, shape, rank), false);
}

/* ArgMax/ArgMin over one axis: the IR's argmax (Int64, the first index of
 * the largest element, a NaN counting as the largest), of -x for ArgMin;
 * keepdims=0 drops the axis.  select_last_index=1 has no IR op. */
bool op_argmax(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", 0);
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (!ox_norm_axis(s, &axis, rank) || x == IR_NONE) return false;
    if (ox_attr_int(s, "select_last_index", 0)) {
        ox_unsupported(s, "select_last_index=1 (the last of equal extremes)");
        return false;
    }
    if (!strcmp(s->node->op_type, "ArgMin")) x = ox_un(s, IR_OP_neg, x);
    ir_attrs a = ir_attrs_unset();
    a.axis = (int)axis;
    int y = x == IR_NONE ? IR_NONE : ox_add(s, IR_OP_argmax, &x, 1, &a);
    if (y == IR_NONE) return false;
    if (ox_attr_int(s, "keepdims", 1)) return ox_set_node(s, 0, y, false);
    for (int i = (int)axis; i + 1 < rank; i++) shape[i] = shape[i + 1];
    return ox_set_node(s, 0, ox_reshape_to(s, y, shape, rank - 1), false);
}

/* CumSum along a constant axis: a dense along it with the 0/1 lower (or,
 * reverse=1, upper) triangle, its diagonal left out when exclusive=1. */
bool op_cumsum(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0), *av = IN(1);
    if (!ok || !xv || !av) return false;
    if (!av->c) { ox_unsupported(s, "a computed axis"); return false; }
    int64_t shape[IR_MAX_RANK], axis;
    if (!ox_const_int0(s, av, &axis)) return false;
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (!ox_norm_axis(s, &axis, rank) || x == IR_NONE) return false;
    const int64_t d = shape[axis];
    if (d > 2048) { ox_unsupported(s, "a CumSum axis longer than 2048"); return false; }
    const bool exclusive = ox_attr_int(s, "exclusive", 0), reverse = ox_attr_int(s, "reverse", 0);
    double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(d * d));
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j < d; j++)
            w[i * d + j] = (reverse ? j > i : j < i) || (j == i && !exclusive);
    return ox_set_node(s, 0, ox_weigh_axis(s, x, (int)axis, w, d), false);
}

/* Trilu: x times a constant 0/1 mask of its last two dims, keeping
 * j - i >= k (upper=1) or j - i <= k (upper=0); k a constant input. */
bool op_trilu(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0), *kv = IN(1);
    if (!ok || !xv) return false;
    if (kv && !kv->c) { ox_unsupported(s, "a computed k"); return false; }
    int64_t shape[IR_MAX_RANK];
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (rank < 2) { ox_fail(s, "Trilu needs a tensor of rank 2 or more, not %d", rank); return false; }
    if (x == IR_NONE) return false;
    int64_t k = 0;
    if (kv && !ox_const_int0(s, kv, &k)) return false;   /* exact: k = INT64_MAX keeps nothing (upper) */
    const int64_t rows = shape[rank - 2], cols = shape[rank - 1];
    const bool upper = ox_attr_int(s, "upper", 1);
    double *mask = ax_alloc(s->ctx->arena, sizeof *mask * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) mask[i * cols + j] = upper ? j - i >= k : j - i <= k;
    return ox_set_node(s, 0, ox_bin(s, IR_OP_mul, x, ox_param(s, mask, 2, shape + rank - 2, NULL)), false);
}

/* LpNormalization: x / (sum |x|^p)^(1/p) along axis, p 1 or 2 (no epsilon,
 * as ONNX: a zero line divides by zero). */
bool op_lpnorm(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", -1), p = ox_attr_int(s, "p", 2);
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (!ox_norm_axis(s, &axis, rank) || x == IR_NONE) return false;
    if (p != 1 && p != 2) { ox_fail(s, "LpNormalization with p=%lld (ONNX allows 1 and 2)", (long long)p); return false; }
    ir_attrs a = ir_attrs_unset();
    a.axis = (int)axis;
    int t = p == 1 ? ox_un(s, IR_OP_abs, x) : ox_bin(s, IR_OP_mul, x, x);
    int norm = t == IR_NONE ? t : ox_add(s, IR_OP_sum, &t, 1, &a);
    if (p == 2) norm = ox_un(s, IR_OP_sqrt, norm);
    return ox_set_node(s, 0, ox_bin(s, IR_OP_div, x, norm), false);
}

/* MeanVarianceNormalization: (x - mean) / sqrt(var + 1e-9) over axes. */
bool op_mvn(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK], axes[IR_MAX_RANK] = {0, 2, 3};
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    int na = ox_attr_ints(s, "axes", axes, IR_MAX_RANK);
    if (na < 0) na = 3;
    for (int i = 0; i < na; i++)
        if (!ox_norm_axis(s, &axes[i], rank)) return false;
    int mean = mean_axes(s, x, axes, na), d = ox_bin(s, IR_OP_sub, x, mean);
    int var = mean_axes(s, ox_bin(s, IR_OP_mul, d, d), axes, na);
    int y = ox_bin(s, IR_OP_div, d, ox_un(s, IR_OP_sqrt, ox_bin(s, IR_OP_add, var, ox_scalar_param(s, 1e-9))));
    return ox_set_node(s, 0, y, false);
}

/* LRN: x / (bias + alpha / size * sum of x^2 over the size channels around
 * c)^beta; the window sum is a band dense along the channels. */
bool op_lrn(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK], size = ox_attr_int(s, "size", 0);
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (rank < 3 || size < 1 || x == IR_NONE || shape[1] > 4096) { ox_unsupported(s, "this LRN input or size"); return false; }
    double alpha = ox_attr_float(s, "alpha", 1e-4), beta = ox_attr_float(s, "beta", 0.75), bias = ox_attr_float(s, "bias", 1.0);
    int64_t c = shape[1], lo = (size - 1) / 2, hi = size - 1 - lo;
    double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(c * c));
    for (int64_t i = 0; i < c; i++)
        for (int64_t j = i - lo < 0 ? 0 : i - lo; j <= i + hi && j < c; j++) w[i * c + j] = 1.0;
    int sum = ox_weigh_axis(s, ox_bin(s, IR_OP_mul, x, x), 1, w, c);
    int den = ox_bin(s, IR_OP_add, ox_scalar_param(s, bias), ox_bin(s, IR_OP_mul, sum, ox_scalar_param(s, alpha / (double)size)));
    return ox_set_node(s, 0, ox_bin(s, IR_OP_div, x, ox_bin(s, IR_OP_pow, den, ox_scalar_param(s, beta))), false);
}

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_ops_norm_left_out;
#endif
