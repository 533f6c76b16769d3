/* onnx_ops_layers.c — the ONNX ops that are the IR's layers: MatMul, Gemm
 * (a dense), Conv and ConvTranspose (1-D as 2-D of height 1, on NHWC),
 * MaxPool/AveragePool (padding written out where the IR's window cannot
 * say it) and the global pools. */
#ifdef AXC_ONNX
#include <math.h>
#include <string.h>

#include "onnx_ops.h"

/* ---- layers ------------------------------------------------------------ */

bool op_matmul(ox_state *s)
{
    bool ok = true;
    ox_val *a = IN(0), *b = IN(1);
    if (!ok || !a || !b) return false;
    if (b->c && b->c->rank == 2 && !a->c) {   /* x @ W: dense with W transposed */
        int64_t k = b->c->shape[0], n = b->c->shape[1], wshape[2] = {n, k};
        double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(k * n > 0 ? k * n : 1));
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < n; j++) w[j * k + i] = b->c->v[i * n + j];
        int src[3] = {ox_node(s, a), ox_param(s, w, 2, wshape, ax_strdup(s->ctx->arena, b->name)), IR_NONE};
        return ox_set_node(s, 0, ox_add(s, IR_OP_dense, src, 3, NULL), false);
    }
    int src[2] = {ox_node(s, a), ox_node(s, b)};
    return ox_set_node(s, 0, ox_add(s, IR_OP_matmul, src, 2, NULL), false);
}

bool op_gemm(ox_state *s)
{
    bool ok = true;
    ox_val *a = IN(0), *b = IN(1), *c = IN(2);
    if (!ok || !a || !b) return false;
    double alpha = ox_attr_float(s, "alpha", 1), beta = ox_attr_float(s, "beta", 1);
    int64_t ta = ox_attr_int(s, "transA", 0), tb = ox_attr_int(s, "transB", 0);
    if (!b->c || b->c->rank != 2 || (c && !c->c)) {   /* alpha * A' @ B' + beta * C by matmul */
        int perm[2] = {1, 0};
        int x = ox_node(s, a), w = ox_node(s, b);
        if (x != IR_NONE && ta) x = ox_transpose_perm(s, x, perm, 2);
        if (w != IR_NONE && tb) w = ox_transpose_perm(s, w, perm, 2);
        int y = ox_bin(s, IR_OP_matmul, x, w);
        if (alpha != 1) y = ox_bin(s, IR_OP_mul, y, ox_scalar(s, alpha));
        if (c) {
            int cn = ox_node(s, c);
            if (beta != 1) cn = ox_bin(s, IR_OP_mul, cn, ox_scalar(s, beta));
            y = ox_bin(s, IR_OP_add, y, cn);
        }
        return ox_set_node(s, 0, y, false);
    }
    int x = ox_node(s, a);
    if (x == IR_NONE) return false;
    if (ta) {
        int perm[2] = {1, 0};
        x = ox_transpose_perm(s, x, perm, 2);
    }
    int64_t r = b->c->shape[0], k = b->c->shape[1], n = tb ? r : k, kk = tb ? k : r, wshape[2] = {n, kk};
    double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(n * kk > 0 ? n * kk : 1));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < kk; j++) w[i * kk + j] = alpha * (tb ? b->c->v[i * k + j] : b->c->v[j * k + i]);
    int src[3] = {x, ox_param(s, w, 2, wshape, ax_strdup(s->ctx->arena, b->name)), IR_NONE};
    if (c) {
        int64_t bshape[1] = {n};
        double *bias = ax_alloc(s->ctx->arena, sizeof *bias * (size_t)(n ? n : 1));
        if (c->c->count != 1 && c->c->count != n) {
            int y = ox_add(s, IR_OP_dense, src, 3, NULL);
            if (y == IR_NONE) return false;
            ox_val yv = {.name = "gemm", .node = y, .nchw = IR_NONE};
            ox_const *cc = c->c;
            if (beta != 1) {
                ox_const *sc = ox_const_new(s, false, 0, bshape);
                sc->v[0] = beta;
                cc = ox_fold_binary(s, c->c, sc, ox_fold_mul, false);
            }
            ox_val cv = {.name = "C", .c = cc, .node = IR_NONE, .nchw = IR_NONE};
            return cc && ox_binary_tensor(s, IR_OP_add, &yv, &cv);
        }
        for (int64_t i = 0; i < n; i++) bias[i] = beta * c->c->v[c->c->count == 1 ? 0 : i];
        src[2] = ox_param(s, bias, 1, bshape, ax_strdup(s->ctx->arena, c->name));
    }
    return ox_set_node(s, 0, ox_add(s, IR_OP_dense, src, 3, NULL), false);
}

/* pads, strides, dilations and auto_pad of a 2-D window op over spatial
 * dims hw (kernel in a->kernel) into a; SAME_* padding is computed here.
 * ceil_mode=1 (pools) becomes extra padding at the end: *ceil_pad. */
static bool window_attrs(ox_state *s, ir_attrs *a, const int64_t *hw, bool *ceil_pad, int nd)
{
    int o = 2 - nd;   /* a 1-D op is a 2-D one of height 1 */
    int64_t v[8];
    const char *auto_pad = ox_attr_str(s, "auto_pad", "NOTSET");
    int n;
    if ((n = ox_attr_ints(s, "strides", v, nd)) == nd) {
        for (int i = 0; i < nd; i++)
            if (!ox_narrow_int(v[i], 1, 1 << 16, &a->stride[o + i])) goto bad;
    } else if (n >= 0) goto bad;
    if ((n = ox_attr_ints(s, "dilations", v, nd)) == nd) {
        for (int i = 0; i < nd; i++)
            if (!ox_narrow_int(v[i], 1, 1 << 16, &a->dilation[o + i])) goto bad;
    } else if (n >= 0) goto bad;
    if (ceil_pad && (a->dilation[0] != 1 || a->dilation[1] != 1)) { ox_unsupported(s, "dilated pooling"); return false; }
    if ((n = ox_attr_ints(s, "pads", v, 2 * nd)) == 2 * nd) {
        for (int i = 0; i < nd; i++)
            if (!ox_narrow_int(v[i], 0, 1 << 16, &a->pad[o + i]) || !ox_narrow_int(v[nd + i], 0, 1 << 16, &a->pad[o + i + 2])) goto bad;
    } else if (n >= 0) goto bad;
    for (int i = 0; i < 4; i++) if (a->pad[i] < 0 || a->pad[i] > 1 << 16) goto bad;
    for (int i = 0; i < 2; i++) if (a->stride[i] < 1 || a->dilation[i] < 1 || a->stride[i] > 1 << 16 || a->dilation[i] > 1 << 16) goto bad;
    bool upper = !strcmp(auto_pad, "SAME_UPPER"), lower = !strcmp(auto_pad, "SAME_LOWER");
    for (int d = o; d < 2 && (upper || lower); d++) {
        int64_t span = (int64_t)a->dilation[d] * (a->kernel[d] - 1) + 1;
        int64_t total = ((hw[d] + a->stride[d] - 1) / a->stride[d] - 1) * a->stride[d] + span - hw[d];
        if (total < 0) total = 0;
        a->pad[d] = (int)(upper ? total / 2 : total - total / 2);
        a->pad[d + 2] = (int)(total - a->pad[d]);
    }
    if (ceil_pad) *ceil_pad = false;
    if (ox_attr_int(s, "ceil_mode", 0)) {
        if (!ceil_pad) goto bad;
        for (int d = o; d < 2; d++) {
            int64_t padded = hw[d] + a->pad[d] + a->pad[d + 2] - a->kernel[d];
            if (padded < 0) continue;
            int64_t out = (padded + a->stride[d] - 1) / a->stride[d] + 1;
            if ((out - 1) * a->stride[d] >= hw[d] + a->pad[d]) out--;   /* last window starts inside */
            int64_t extra = (out - 1) * a->stride[d] + a->kernel[d] - (hw[d] + a->pad[d] + a->pad[d + 2]);
            if (extra > 0) {
                a->pad[d + 2] += (int)extra;
                *ceil_pad = true;
            }
        }
    }
    return true;
bad:
    ox_unsupported(s, "window attributes of another rank than the op's or out of range (strides, dilations, pads)");
    return false;
}

/* The [N, C, L] tensor of an NHWC result [N, 1, L, C] (1-D window ops). */
static int ncl_of_nhwc(ox_state *s, int y)
{
    if (y == IR_NONE) return y;
    static const int to_ncl[4] = {0, 3, 1, 2};
    y = ox_transpose_perm(s, y, to_ncl, 4);
    if (y == IR_NONE) return y;
    const ir_node *yn = ir_at(s->g, y);
    int64_t out[3] = {yn->shape[0], yn->shape[1], yn->shape[3]};
    return ox_reshape_to(s, y, out, 3);
}

bool op_conv(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0), *w = IN(1), *b = IN(2);
    if (!ok || !x || !w) return false;
    int64_t xs[IR_MAX_RANK];
    int rank = ox_shape(s, x, xs);
    int64_t ws[IR_MAX_RANK];
    int wrank = ox_shape(s, w, ws);
    if ((rank == 3 && (!w->c || (b && !b->c))) || wrank != rank || (rank != 4 && rank != 3)) {
        ox_unsupported(s, "a Conv that is not 1-D or 2-D, or a 1-D one whose weights are not constants");
        return false;
    }
    ir_attrs a = ir_attrs_unset();
    if (!ox_narrow_int(ox_attr_int(s, "group", 1), 1, INT32_MAX, &a.groups)) { ox_fail(s, "group out of range"); return false; }
    a.kernel[0] = rank == 4 ? (int)ws[2] : 1, a.kernel[1] = (int)ws[rank - 1];
    int64_t hw[2] = {rank == 4 ? xs[2] : 1, xs[rank - 1]};
    if (!window_attrs(s, &a, hw, NULL, rank - 2)) return false;
    if (rank == 4) {
        int src[3] = {ox_node_nhwc(s, x), ox_node(s, w), b ? ox_node(s, b) : IR_NONE};
        if (src[0] == IR_NONE || src[1] == IR_NONE) return false;
        return ox_set_node(s, 0, ox_add(s, IR_OP_conv, src, 3, &a), true);
    }
    int64_t x4[4] = {xs[0], xs[1], 1, xs[2]}, w4[4] = {w->c->shape[0], w->c->shape[1], 1, w->c->shape[2]};
    ox_val xv = {.name = x->name, .node = ox_reshape_to(s, ox_node(s, x), x4, 4), .nchw = IR_NONE};
    if (xv.node == IR_NONE) return false;
    int src[3] = {ox_node_nhwc(s, &xv), ox_param(s, w->c->v, 4, w4, ax_strdup(s->ctx->arena, w->name)),
                  b ? ox_node(s, b) : IR_NONE};
    int y = src[0] == IR_NONE ? IR_NONE : ox_add(s, IR_OP_conv, src, 3, &a);   /* [N, 1, L', O] */
    return ox_set_node(s, 0, ncl_of_nhwc(s, y), false);
}

/* The pads of a (NHWC H and W) written out with value; a's pads cleared. */
static int pad_window(ox_state *s, int x, ir_attrs *a, double value)
{
    x = ox_pad_axis(s, x, 1, a->pad[0], a->pad[2], value);
    x = ox_pad_axis(s, x, 2, a->pad[1], a->pad[3], value);
    memset(a->pad, 0, sizeof a->pad);
    return x;
}

/* AveragePool excluding padding from the divisor: the mean over the window
 * divided by the mean of ones over the same window. */
static int mean_excluding_pad(ox_state *s, int x, const ir_attrs *a)
{
    const ir_node *xn = ir_at(s->g, x);
    int64_t shape[4] = {1, xn->shape[1], xn->shape[2], 1};
    double *ones = ax_alloc(s->ctx->arena, sizeof *ones * (size_t)(shape[1] * shape[2]));
    for (int64_t i = 0; i < shape[1] * shape[2]; i++) ones[i] = 1.0;
    int src[2] = {ox_add(s, IR_OP_meanpool, &x, 1, a), ox_param(s, ones, 4, shape, NULL)};
    if (src[0] == IR_NONE) return IR_NONE;
    src[1] = ox_add(s, IR_OP_meanpool, &src[1], 1, a);
    return src[1] == IR_NONE ? IR_NONE : ox_add(s, IR_OP_div, src, 2, NULL);
}

bool op_pool(ox_state *s)
{
    bool ok = true, max = !strcmp(s->node->op_type, "MaxPool"), ceil_pad;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    if (s->node->n_output > 1 && s->node->output[1][0]) { ox_unsupported(s, "the Indices output"); return false; }
    ir_attrs a = ir_attrs_unset();
    int64_t k[3], xs[IR_MAX_RANK];
    int rank = ox_shape(s, x, xs), nd = rank - 2;
    if ((rank != 4 && rank != 3) || ox_attr_ints(s, "kernel_shape", k, 2) != nd) { ox_unsupported(s, "a pool that is not 1-D or 2-D"); return false; }
    if (ox_attr_int(s, "storage_order", 0)) { ox_unsupported(s, "storage_order=1"); return false; }
    if (nd == 1) k[1] = k[0], k[0] = 1;
    if (k[0] < 1 || k[1] < 1 || k[0] > 1 << 16 || k[1] > 1 << 16) { ox_fail(s, "bad kernel_shape"); return false; }
    a.kernel[0] = (int)k[0], a.kernel[1] = (int)k[1];
    int64_t hw[2] = {nd == 2 ? xs[2] : 1, xs[rank - 1]};
    if (!window_attrs(s, &a, hw, &ceil_pad, nd)) return false;
    bool padded = a.pad[0] || a.pad[1] || a.pad[2] || a.pad[3];
    bool include_pad = ox_attr_int(s, "count_include_pad", 0);
    if (!max && include_pad && ceil_pad) { ox_unsupported(s, "AveragePool with ceil_mode=1 and count_include_pad=1"); return false; }
    bool wide = a.pad[0] > a.kernel[0] / 2 || a.pad[2] > a.kernel[0] / 2 || a.pad[1] > a.kernel[1] / 2 ||
                a.pad[3] > a.kernel[1] / 2;   /* more than the IR's pools take: padded here */
    ox_val xv = *x;
    if (nd == 1) {
        int64_t x4[4] = {xs[0], xs[1], 1, xs[2]};
        xv = (ox_val){.name = x->name, .node = ox_reshape_to(s, ox_node(s, x), x4, 4), .nchw = IR_NONE};
        if (xv.node == IR_NONE) return false;
    }
    int src = ox_node_nhwc(s, &xv), y;
    if (src == IR_NONE) return false;
    if (wide && !max && padded && !include_pad) {   /* window sums of x over window sums of ones */
        const ir_node *xn = ir_at(s->g, src);
        int64_t shape[4] = {1, xn->shape[1], xn->shape[2], 1};
        double *ones = ax_alloc(s->ctx->arena, sizeof *ones * (size_t)(shape[1] * shape[2]));
        for (int64_t i = 0; i < shape[1] * shape[2]; i++) ones[i] = 1.0;
        ir_attrs b = a;
        int num = pad_window(s, src, &a, 0.0), den = pad_window(s, ox_param(s, ones, 4, shape, NULL), &b, 0.0);
        num = num == IR_NONE ? num : ox_add(s, IR_OP_meanpool, &num, 1, &a);
        den = den == IR_NONE ? den : ox_add(s, IR_OP_meanpool, &den, 1, &b);
        y = ox_bin(s, IR_OP_div, num, den);
    } else {
        if (wide) src = pad_window(s, src, &a, max ? -INFINITY : 0.0);
        y = src == IR_NONE ? src : !max && padded && !include_pad ? mean_excluding_pad(s, src, &a)
                                 : ox_add(s, max ? IR_OP_maxpool : IR_OP_meanpool, &src, 1, &a);
    }
    if (nd == 2 || y == IR_NONE) return ox_set_node(s, 0, y, true);
    return ox_set_node(s, 0, ncl_of_nhwc(s, y), false);
}

/* Global pools as two reductions over H and W of the NHWC tensor. */
bool op_global_pool(ox_state *s)
{
    bool ok = true, max = !strcmp(s->node->op_type, "GlobalMaxPool");
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int y = ox_node_nhwc(s, x);
    for (int axis = 1; axis <= 2 && y != IR_NONE; axis++) {
        ir_attrs a = ir_attrs_unset();
        a.axis = axis;
        y = ox_add(s, max ? IR_OP_maximum : IR_OP_mean, &y, 1, &a);
    }
    return ox_set_node(s, 0, y, true);
}

/* ConvTranspose's strides, dilations and pads over nd spatial dims (1-D as
 * 2-D of height 1) into a.  Pads are explicit, or follow from output_shape
 * or auto_pad as onnx's reference computes them: total = stride (in - 1) +
 * output_padding + dilation (k - 1) + 1 - out, the odd one at the end for
 * SAME_UPPER, at the start otherwise; a negative end pad (an output_shape
 * past the natural size) is more output padding. */
static bool conv_transpose_attrs(ox_state *s, ir_attrs *a, const int64_t *in, const int64_t *k, int nd)
{
    int o = 2 - nd, n;
    int64_t v[8], op[2] = {0, 0}, want[IR_MAX_RANK];
    if ((n = ox_attr_ints(s, "strides", v, nd)) == nd) {
        for (int i = 0; i < nd; i++)
            if (!ox_narrow_int(v[i], 1, 1 << 16, &a->stride[o + i])) goto range;
    } else if (n >= 0) goto bad;
    if ((n = ox_attr_ints(s, "dilations", v, nd)) == nd) {
        for (int i = 0; i < nd; i++)
            if (!ox_narrow_int(v[i], 1, 1 << 16, &a->dilation[o + i])) goto range;
    } else if (n >= 0) goto bad;
    if ((n = ox_attr_ints(s, "output_padding", v, nd)) == nd) for (int i = 0; i < nd; i++) op[o + i] = v[i];
    else if (n >= 0) goto bad;
    if ((n = ox_attr_ints(s, "pads", v, 2 * nd)) == 2 * nd) {
        for (int i = 0; i < nd; i++)
            if (!ox_narrow_int(v[i], 0, 1 << 16, &a->pad[o + i]) || !ox_narrow_int(v[nd + i], 0, 1 << 16, &a->pad[o + i + 2])) goto range;
    } else if (n >= 0) goto bad;
    const char *auto_pad = ox_attr_str(s, "auto_pad", "NOTSET");
    bool upper = !strcmp(auto_pad, "SAME_UPPER"), same = upper || !strcmp(auto_pad, "SAME_LOWER");
    int nshape = ox_attr_ints(s, "output_shape", want, IR_MAX_RANK);
    if (nshape >= 0 && nshape != nd && nshape != nd + 2) goto bad;
    for (int i = 0; i < nshape; i++)
        if (want[i] < 0 || want[i] > INT32_MAX) goto range;   /* natural - want stays defined */
    for (int d = o; d < 2; d++) {
        if (a->stride[d] < 1 || a->stride[d] > 1 << 16 || a->dilation[d] < 1 || a->dilation[d] > 1 << 16 ||
            op[d] < 0 || op[d] > 1 << 16 || a->pad[d] < 0 || a->pad[d + 2] < 0 || a->pad[d] > 1 << 16 || a->pad[d + 2] > 1 << 16) {
            ox_fail(s, "bad strides, dilations, pads, output_padding or output_shape");
            return false;
        }
        int64_t natural = a->stride[d] * (in[d] - 1) + op[d] + a->dilation[d] * (k[d] - 1) + 1, lo, hi;
        if (nshape >= 0 || same) {
            int64_t total = natural - (nshape >= 0 ? want[nshape - 2 + d] : in[d] * a->stride[d]);
            int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);   /* floor */
            lo = upper ? half : total - half;
            hi = total - lo;
            if (lo < 0 || total > 1 << 16) {
                ox_unsupported(s, "an output_shape or auto_pad that needs negative padding at the start");
                return false;
            }
        } else lo = a->pad[d], hi = a->pad[d + 2];
        a->pad[d] = (int)lo;
        a->pad[d + 2] = hi < 0 ? 0 : (int)hi;
        a->out_pad[d] = (int)(op[d] - (hi < 0 ? hi : 0));
    }
    return true;
bad:
    ox_unsupported(s, "window attributes of another rank than the op's (strides, dilations, pads, output_shape)");
    return false;
range:
    ox_fail(s, "bad strides, dilations, pads, output_padding or output_shape");
    return false;
}

/* ConvTranspose, 1-D or 2-D: the IR's conv_transpose (torch's
 * ConvTranspose2d; weight [C, M/group, kh, kw] as ONNX's) on NHWC. */
bool op_conv_transpose(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0), *w = IN(1), *b = IN(2);
    if (!ok || !x || !w) return false;
    int64_t xs[IR_MAX_RANK], ws[IR_MAX_RANK];
    int rank = ox_shape(s, x, xs), wrank = ox_shape(s, w, ws);
    if ((rank != 4 && rank != 3) || wrank != rank) {
        ox_unsupported(s, "a ConvTranspose that is not 1-D or 2-D");
        return false;
    }
    ir_attrs a = ir_attrs_unset();
    if (!ox_narrow_int(ox_attr_int(s, "group", 1), 1, INT32_MAX, &a.groups)) { ox_fail(s, "group out of range"); return false; }
    int64_t hw[2] = {rank == 4 ? xs[2] : 1, xs[rank - 1]}, k[2] = {rank == 4 ? ws[2] : 1, ws[rank - 1]};
    if (a.groups < 1 || xs[1] != ws[0] || xs[1] % a.groups) {
        ox_fail(s, "input has %lld channels, the weight %lld, in %d groups", (long long)xs[1], (long long)ws[0], a.groups);
        return false;
    }
    if (!conv_transpose_attrs(s, &a, hw, k, rank - 2)) return false;
    if (rank == 4) {
        int src[3] = {ox_node_nhwc(s, x), ox_node(s, w), b ? ox_node(s, b) : IR_NONE};
        if (src[0] == IR_NONE || src[1] == IR_NONE) return false;
        return ox_set_node(s, 0, ox_add(s, IR_OP_conv_transpose, src, 3, &a), true);
    }
    int64_t x4[4] = {xs[0], xs[1], 1, xs[2]}, w4[4] = {ws[0], ws[1], 1, ws[2]};
    ox_val xv = {.name = x->name, .node = ox_reshape_to(s, ox_node(s, x), x4, 4), .nchw = IR_NONE};
    if (xv.node == IR_NONE) return false;
    int wn = w->c ? ox_param(s, w->c->v, 4, w4, ax_strdup(s->ctx->arena, w->name)) : ox_reshape_to(s, ox_node(s, w), w4, 4);
    int src[3] = {ox_node_nhwc(s, &xv), wn, b ? ox_node(s, b) : IR_NONE};
    int y = src[0] == IR_NONE || src[1] == IR_NONE ? IR_NONE : ox_add(s, IR_OP_conv_transpose, src, 3, &a);   /* [N, 1, L', M] */
    return ox_set_node(s, 0, ncl_of_nhwc(s, y), false);
}

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_ops_layers_left_out;
#endif
