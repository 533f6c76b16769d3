/* pass_shape.c — static shapes for every node, and the attributes that depend
 * on them (normalised axes, reshape's -1, Flatten, pad=same).
 *
 * One shape function per `shape` suffix of ops.def, in a table generated from
 * it, so a new op without a shape rule does not compile.  A shape function
 * returns false after reporting a located error that names the layer and
 * the shapes involved (docs/language.md#diagnostics).  A failed node is marked with
 * IR_FAILED_RANK and every node depending on it is skipped silently, so one
 * mistake gives one error while independent mistakes are all reported; a
 * node lowering already marked so (a value it could not build, after its
 * own error) is skipped the same way. */
#include "passes.h"

#include <limits.h>
#include <stdarg.h>
#include <string.h>

typedef bool (*shape_fn)(ir_graph *g, ir_node *n);

/* ---- helpers ------------------------------------------------------------ */

static ir_node *operand(ir_graph *g, const ir_node *n, int i)
{
    return n->src[i] == IR_NONE ? NULL : &g->nodes[n->src[i]];
}

static const char *shape_text(const ir_node *n, char *buf, size_t size)
{
    return ir_shape_str(n->shape, n->rank, buf, size);
}

/* The largest tensor (and kernel scratch) in bytes; see size_is_sane. */
#define AX_MAX_TENSOR_BYTES ((int64_t)1 << 40)

static bool fail(ir_graph *g, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(ir_graph *g, const ir_node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const ax_context *outer = g->ctx->context;
    g->ctx->context = n->context;   /* names the block instance it was written in */
    ax_vdiag(g->ctx, AX_ERROR, n->loc, fmt, ap);
    g->ctx->context = outer;
    va_end(ap);
    return false;
}

static void set_shape(ir_node *n, const int64_t *shape, int rank)
{
    n->rank = rank;
    for (int i = 0; i < rank; i++)
        n->shape[i] = shape[i];
}

static int64_t dim(const ir_node *n, int i)
{
    return n && i >= 0 && i < n->rank ? n->shape[i] : 0;
}

/* "Dense(784 => 256) expects input [..., 784] but gets [1, 512]" */
static bool fail_expects(ir_graph *g, const ir_node *n, const char *what, const char *expected,
                         const ir_node *got)
{
    char desc[160], shape[160];
    return fail(g, n, "%s expects %s %s but gets %s", ir_describe_layer(g, n, desc, sizeof desc), what,
                expected, shape_text(got, shape, sizeof shape));
}

/* Normalises attrs.axis against rank (negative counts from the end). */
static bool normalise_axis(ir_graph *g, ir_node *n, const ir_node *x, int rank)
{
    int axis = n->attrs.axis;
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank) {
        char shape[160];
        return fail(g, n, "%s: dims=%d is out of range for input %s", ir_ops[n->op].name,
                    n->attrs.axis, shape_text(x, shape, sizeof shape));
    }
    n->attrs.axis = axis;
    return true;
}

/* NumPy broadcasting of two shapes into out; false when they do not. */
static bool broadcast(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out, int *rout)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da != db && da != 1 && db != 1)
            return false;
        out[i] = da == 1 ? db : da;
    }
    *rout = r;
    return true;
}

/* ---- shape functions (named after the ops.def column) ------------------- */

static bool shape_source(ir_graph *g, ir_node *n)
{
    char shape[160];
    for (int i = 0; i < n->rank; i++)
        if (n->shape[i] <= 0)
            return fail(g, n, "%s '%s' has non-positive dimension in %s", ir_ops[n->op].name,
                        n->name ? n->name : "?", shape_text(n, shape, sizeof shape));
    return true;
}

static bool shape_unary(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    set_shape(n, x->shape, x->rank);
    return true;
}

static bool shape_binary(ir_graph *g, ir_node *n)
{
    const ir_node *a = operand(g, n, 0), *b = operand(g, n, 1);
    int64_t out[IR_MAX_RANK];
    int rank;
    if (!broadcast(a->shape, a->rank, b->shape, b->rank, out, &rank)) {
        char sa[160], sb[160];
        return fail(g, n, "cannot broadcast %s and %s in '%s'", shape_text(a, sa, sizeof sa),
                    shape_text(b, sb, sizeof sb), ir_describe_binary(g, n->op));
    }
    set_shape(n, out, rank);
    return true;
}

static bool shape_reduce(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    if (!normalise_axis(g, n, x, x->rank))
        return false;
    set_shape(n, x->shape, x->rank);
    n->shape[n->attrs.axis] = 1;
    return true;
}

static bool shape_softmax(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    if (!normalise_axis(g, n, x, x->rank))
        return false;
    set_shape(n, x->shape, x->rank);
    return true;
}

static void newshape_text(const ir_attrs *a, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < a->nnewshape && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                                 (long long)a->newshape[i]);
    if (used < size)
        snprintf(buf + used, size - used, ")");
}

static bool shape_flatten(ir_graph *g, ir_node *n, const ir_node *x)
{
    if (x->rank < 2) {
        char shape[160];
        return fail(g, n, "Flatten() expects input [N, ...] with rank >= 2 but gets %s",
                    shape_text(x, shape, sizeof shape));
    }
    int64_t out[2] = {x->shape[0], ir_numel(x) / x->shape[0]};
    set_shape(n, out, 2);
    return true;
}

/* keepdims=false: the input's shape without the reduced axes (the reduction
 * before it has checked them, and kept each as 1). */
static bool squeeze_to_newshape(ir_graph *g, ir_node *n, const ir_node *x)
{
    ir_attrs *a = &n->attrs;
    bool drop[IR_MAX_RANK] = {false};
    for (int i = 0; i < a->nsqueeze; i++) {
        int axis = a->squeeze[i] < 0 ? a->squeeze[i] + x->rank : a->squeeze[i];
        if (axis >= 0 && axis < x->rank && x->shape[axis] == 1)
            drop[axis] = true;
    }
    a->nnewshape = 0;
    for (int d = 0; d < x->rank; d++)
        if (!drop[d])
            a->newshape[a->nnewshape++] = x->shape[d];
    a->nsqueeze = 0;
    return true;
}

static bool shape_reshape(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    if (n->attrs.nsqueeze > 0 && !squeeze_to_newshape(g, n, x))
        return false;
    if (n->attrs.flatten && n->attrs.nnewshape == 0)
        return shape_flatten(g, n, x);
    char to[200], from[160];
    newshape_text(&n->attrs, to, sizeof to);
    int unknown = -1;
    int64_t known = 1, resolved[IR_MAX_RANK];
    bool too_many = false;   /* the known dims' product past int64: never the input's count */
    for (int i = 0; i < n->attrs.nnewshape; i++) {
        int64_t d = n->attrs.newshape[i];
        if (d == 0 && n->attrs.zero_copies && i < x->rank)  /* the input's own dim */
            d = x->shape[i];
        resolved[i] = d;
        if (d == -1 && unknown < 0)
            unknown = i;
        else if (d == -1)
            return fail(g, n, "reshape to %s: at most one dimension may be -1", to);
        else if (d <= 0)
            return fail(g, n, "reshape to %s: dimensions must be positive or -1", to);
        else
            too_many |= __builtin_mul_overflow(known, d, &known);
    }
    int64_t total = ir_numel(x);
    if (too_many || (unknown < 0 ? known != total : total % known != 0))
        return fail(g, n, "cannot reshape %s (%lld elements) to %s", shape_text(x, from, sizeof from),
                    (long long)total, to);
    set_shape(n, resolved, n->attrs.nnewshape);
    if (unknown >= 0)
        n->shape[unknown] = total / known;
    return true;
}

static bool shape_transpose(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    const ir_attrs *a = &n->attrs;
    bool seen[IR_MAX_RANK] = {false};
    bool ok = a->nperm == x->rank;
    for (int i = 0; ok && i < a->nperm; i++) {
        int p = a->perm[i];
        ok = p >= 0 && p < x->rank && !seen[p];
        if (ok)
            seen[p] = true;
    }
    if (!ok) {
        char shape[160], perm[160];
        size_t used = (size_t)snprintf(perm, sizeof perm, "(");
        for (int i = 0; i < a->nperm && used < sizeof perm; i++)
            used += (size_t)snprintf(perm + used, sizeof perm - used, "%s%d", i ? ", " : "", a->perm[i]);
        if (used < sizeof perm)
            snprintf(perm + used, sizeof perm - used, ")");
        return fail(g, n, "transpose of %s by %s: not a permutation of 0..%d",
                    shape_text(x, shape, sizeof shape), perm, x->rank - 1);
    }
    n->rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        n->shape[i] = x->shape[a->perm[i]];
    return true;
}

/* A piece of split(x, sizes; dims=axis): the whole of every other axis, and
 * the sizes must add up to the axis. */
static bool slice_from_split(ir_graph *g, ir_node *n, const ir_node *x)
{
    ir_attrs *a = &n->attrs;
    char shape[160];
    if (!normalise_axis(g, n, x, x->rank))
        return false;
    int64_t size = x->shape[a->axis];
    if (a->split_total && a->split_total != size)
        return fail(g, n, "split sizes add up to %lld but dims=%d of %s has %lld", (long long)
                    a->split_total, a->axis, shape_text(x, shape, sizeof shape), (long long)size);
    for (int d = 0; d < x->rank; d++) {
        if (d == a->axis)
            continue;
        a->begin[d] = 0;
        a->end[d] = x->shape[d];
        a->step[d] = 1;
    }
    a->nslice = x->rank;
    a->split_total = 0;
    return true;
}

/* One bound of a slice, as Python's: negative from the end, then clamped. */
static int64_t slice_bound(int64_t v, int64_t size)
{
    if (v == INT64_MIN)
        return 0;
    if (v == INT64_MAX)
        return size;
    if (v < 0)
        v += size;
    return v < 0 ? 0 : v > size ? size : v;
}

static bool shape_slice(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    ir_attrs *a = &n->attrs;
    char shape[160];
    if (a->split_total && !slice_from_split(g, n, x))
        return false;
    if (a->nslice > x->rank)
        return fail(g, n, "%d indices for %s, which has %d dimensions", a->nslice,
                    shape_text(x, shape, sizeof shape), x->rank);
    int64_t out[IR_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        if (d >= a->nslice) {
            a->begin[d] = 0;
            a->end[d] = x->shape[d];
            a->step[d] = 1;
        }
        int64_t b = slice_bound(a->begin[d], x->shape[d]), e = slice_bound(a->end[d], x->shape[d]);
        out[d] = e > b ? (e - b + a->step[d] - 1) / a->step[d] : 0;
        if (out[d] < 1)
            return fail(g, n, "index %d selects nothing of dimension %d of %s", d, d,
                        shape_text(x, shape, sizeof shape));
        a->begin[d] = b;
        a->end[d] = e;
    }
    a->nslice = x->rank;
    set_shape(n, out, x->rank);
    return true;
}

static bool shape_concat(ir_graph *g, ir_node *n)
{
    const ir_node *first = operand(g, n, 0);
    if (!normalise_axis(g, n, first, first->rank))
        return false;
    int axis = n->attrs.axis;
    set_shape(n, first->shape, first->rank);
    for (int i = 1; i < n->nsrc; i++) {
        const ir_node *x = operand(g, n, i);
        char sa[160], sb[160];
        if (x->rank != first->rank)
            return fail(g, n, "concat along dims=%d: %s and %s differ in rank", axis,
                        shape_text(first, sa, sizeof sa), shape_text(x, sb, sizeof sb));
        for (int d = 0; d < x->rank; d++)
            if (d != axis && x->shape[d] != first->shape[d])
                return fail(g, n, "concat along dims=%d: %s and %s differ in dimension %d", axis,
                            shape_text(first, sa, sizeof sa), shape_text(x, sb, sizeof sb), d);
        n->shape[axis] += x->shape[axis];
    }
    return true;
}

/* torch.chunk: parts of ceil(d / parts) along the axis, the last smaller;
 * there may be fewer than asked for (6 in 4 gives 3 of 2), and the lowering
 * bound attrs.nresults names.  The producer keeps its operand's shape. */
static bool shape_chunk(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    if (!normalise_axis(g, n, x, x->rank))
        return false;
    set_shape(n, x->shape, x->rank);
    const int64_t dim = x->shape[n->attrs.axis];
    const int64_t part = (dim + n->attrs.parts - 1) / n->attrs.parts;
    const int64_t count = part > 0 ? (dim + part - 1) / part : 0;
    if (count != n->attrs.nresults) {
        char shape[160];
        return fail(g, n, "chunk(x, %d; dims=%d) of %s gives %lld parts, but %d names are bound",
                    n->attrs.parts, n->attrs.axis, shape_text(x, shape, sizeof shape),
                    (long long)count, n->attrs.nresults);
    }
    return true;
}

/* Result k of a multi-result producer: its part of the operand. */
static bool shape_result(ir_graph *g, ir_node *n)
{
    const ir_node *p = operand(g, n, 0);
    int64_t start, size;
    set_shape(n, p->shape, p->rank);
    ir_result_extent(g, n, &start, &size);
    n->shape[p->attrs.axis] = size;
    n->attrs.axis = p->attrs.axis;
    return true;
}

/* torch.matmul: 1-D operands get a dimension added then removed; the
 * leading (batch) dimensions broadcast. */
static bool shape_matmul(ir_graph *g, ir_node *n)
{
    const ir_node *a = operand(g, n, 0), *b = operand(g, n, 1);
    char sa[160], sb[160];
    shape_text(a, sa, sizeof sa);
    shape_text(b, sb, sizeof sb);
    if (a->rank == 0 || b->rank == 0)
        return fail(g, n, "matmul of %s and %s: operands must have at least one dimension", sa, sb);
    int64_t ka = a->shape[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->shape[0] : b->shape[b->rank - 2];
    if (ka != kb)
        return fail(g, n, "matmul of %s and %s: inner dimensions %lld and %lld differ", sa, sb,
                    (long long)ka, (long long)kb);
    int ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0;
    int64_t out[IR_MAX_RANK + 2];
    int rank;
    if (!broadcast(a->shape, ba, b->shape, bb, out, &rank)) {
        char xa[160], xb[160];
        return fail(g, n, "matmul of %s and %s: batch dimensions %s and %s do not broadcast", sa, sb,
                    ir_shape_str(a->shape, ba, xa, sizeof xa), ir_shape_str(b->shape, bb, xb, sizeof xb));
    }
    if (a->rank >= 2)
        out[rank++] = a->shape[a->rank - 2];
    if (b->rank >= 2)
        out[rank++] = b->shape[b->rank - 1];
    set_shape(n, out, rank);
    return true;
}

static bool shape_dense(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0), *w = operand(g, n, 1), *bias = operand(g, n, 2);
    char expected[64];
    snprintf(expected, sizeof expected, "[..., %lld]", (long long)dim(w, 1));
    if (w->rank != 2 || x->rank < 1 || x->shape[x->rank - 1] != w->shape[1])
        return fail_expects(g, n, "input", expected, x);
    if (bias && (bias->rank != 1 || bias->shape[0] != w->shape[0])) {
        snprintf(expected, sizeof expected, "[%lld]", (long long)w->shape[0]);
        return fail_expects(g, n, "bias", expected, bias);
    }
    set_shape(n, x->shape, x->rank);
    n->shape[x->rank - 1] = w->shape[0];
    return true;
}

/* Shared by layernorm and batchnorm: every parameter is [D], D = last dim. */
static bool shape_norm(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0), *w = operand(g, n, 1);
    char expected[64];
    snprintf(expected, sizeof expected, "[..., %lld]", (long long)dim(w, 0));
    if (x->rank < 1 || w->rank != 1 || x->shape[x->rank - 1] != w->shape[0])
        return fail_expects(g, n, "input", expected, x);
    for (int i = 2; i < n->nsrc; i++) {
        const ir_node *p = operand(g, n, i);
        if (p->rank != 1 || p->shape[0] != w->shape[0]) {
            snprintf(expected, sizeof expected, "[%lld]", (long long)w->shape[0]);
            return fail_expects(g, n, "parameter", expected, p);
        }
    }
    set_shape(n, x->shape, x->rank);
    return true;
}

static bool shape_layernorm(ir_graph *g, ir_node *n) { return shape_norm(g, n); }
static bool shape_batchnorm(ir_graph *g, ir_node *n) { return shape_norm(g, n); }

/* GroupNorm (and InstanceNorm): [N, ..., C] with C a multiple of the groups;
 * weight and bias, where present, [C]. */
static bool shape_groupnorm(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    int64_t c = x->rank >= 2 ? x->shape[x->rank - 1] : 0;
    char expected[64];
    snprintf(expected, sizeof expected, "[N, ..., C] with C a multiple of %d", n->attrs.groups);
    if (x->rank < 2 || c % n->attrs.groups != 0) return fail_expects(g, n, "input", expected, x);
    for (int i = 1; i < 3; i++) {
        const ir_node *p = n->src[i] != IR_NONE ? operand(g, n, i) : NULL;
        snprintf(expected, sizeof expected, "[%lld]", (long long)c);
        if (p && (p->rank != 1 || p->shape[0] != c)) return fail_expects(g, n, "parameter", expected, p);
    }
    set_shape(n, x->shape, x->rank);
    return true;
}

/* Operand k of n, when present, must have shape want[0..rank). */
static bool check_operand_shape(ir_graph *g, ir_node *n, int k, const char *what,
                                const int64_t *want, int rank)
{
    const ir_node *p = k < n->nsrc && n->src[k] != IR_NONE ? operand(g, n, k) : NULL;
    bool same = !p || p->rank == rank;
    for (int i = 0; p && same && i < rank; i++) same = p->shape[i] == want[i];
    if (same) return true;
    char expected[96] = "[";
    for (int i = 0; i < rank; i++)
        snprintf(expected + strlen(expected), sizeof expected - strlen(expected), "%s%lld",
                 i ? ", " : "", (long long)want[i]);
    strcat(expected, "]");
    return fail_expects(g, n, what, expected, p);
}

/* gru, lstm (ops.def): x [N, L, I], w_hh [G*H, H] gives H (G = 3 or 4 gates),
 * w_ih [G*H, I], biases [G*H], initial states [N, H]; the result [N, L, H]. */
static bool shape_rnn(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0), *wh = operand(g, n, 2);
    const int64_t gates = n->op == IR_OP_lstm ? 4 : 3;
    if (x->rank != 3) return fail_expects(g, n, "input", "[N, L, features]", x);
    if (wh->rank != 2 || wh->shape[0] != gates * wh->shape[1])
        return fail_expects(g, n, "weight_hh", gates == 4 ? "[4H, H]" : "[3H, H]", wh);
    const int64_t hid = wh->shape[1], wi[2] = {gates * hid, x->shape[2]}, b[1] = {gates * hid};
    const int64_t state[2] = {x->shape[0], hid}, out[3] = {x->shape[0], x->shape[1], hid};
    if (!check_operand_shape(g, n, 1, "weight_ih", wi, 2) || !check_operand_shape(g, n, 3, "bias_ih", b, 1) ||
        !check_operand_shape(g, n, 4, "bias_hh", b, 1) ||
        !check_operand_shape(g, n, 5, "initial hidden state", state, 2) ||
        !check_operand_shape(g, n, 6, "initial cell state", state, 2))
        return false;
    set_shape(n, out, 3);
    return true;
}

/* One spatial dimension of a window op; pad_same fills pad_lo/pad_hi. */
static int64_t window_out(int64_t size, int k, int stride, int dilation, bool same, int *pad_lo,
                          int *pad_hi)
{
    int64_t span = (int64_t)dilation * (k - 1) + 1;
    if (same) {
        int64_t total = ((size + stride - 1) / stride - 1) * stride + span - size;
        if (total < 0)
            total = 0;
        *pad_lo = (int)(total / 2);
        *pad_hi = (int)(total - total / 2);
    }
    int64_t padded = size + *pad_lo + *pad_hi - span;
    return padded < 0 ? 0 : padded / stride + 1;
}

/* NHWC window geometry shared by conv and the pools: fills out[1..2]. */
static bool window_shape(ir_graph *g, ir_node *n, const ir_node *x, int dilation0, int dilation1,
                         int64_t *out)
{
    ir_attrs *a = &n->attrs;
    char desc[160], shape[160];
    if (a->kernel[0] < 1 || a->kernel[1] < 1 || a->stride[0] < 1 || a->stride[1] < 1 ||
        dilation0 < 1 || dilation1 < 1 || a->pad[0] < 0 || a->pad[1] < 0 || a->pad[2] < 0 ||
        a->pad[3] < 0)
        return fail(g, n, "%s: kernel, stride and dilation must be positive and padding not negative",
                    ir_describe_layer(g, n, desc, sizeof desc));
    out[1] = window_out(x->shape[1], a->kernel[0], a->stride[0], dilation0, a->pad_same, &a->pad[0],
                        &a->pad[2]);
    out[2] = window_out(x->shape[2], a->kernel[1], a->stride[1], dilation1, a->pad_same, &a->pad[1],
                        &a->pad[3]);
    if (out[1] < 1 || out[2] < 1)
        return fail(g, n, "%s on input %s gives an empty output (H' = %lld, W' = %lld)",
                    ir_describe_layer(g, n, desc, sizeof desc), shape_text(x, shape, sizeof shape),
                    (long long)out[1], (long long)out[2]);
    return true;
}

static bool check_conv_channels(ir_graph *g, ir_node *n, const ir_node *x, const ir_node *w)
{
    char desc[160], expected[96];
    int groups = n->attrs.groups;
    int64_t in = x->rank == 4 ? x->shape[3] : 0, out = w->shape[0];
    if (groups < 1 || in % groups != 0 || out % groups != 0)
        return fail(g, n, "%s: groups=%d must divide the input channels (%lld) and the output "
                    "channels (%lld)", ir_describe_layer(g, n, desc, sizeof desc), groups,
                    (long long)in, (long long)out);
    if (w->shape[1] * groups != in) {
        snprintf(expected, sizeof expected, "[N, H, W, %lld]", (long long)(w->shape[1] * groups));
        return fail_expects(g, n, "input", expected, x);
    }
    return true;
}

static bool shape_conv(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0), *w = operand(g, n, 1), *bias = operand(g, n, 2);
    char expected[96];
    if (w->rank != 4)
        return fail_expects(g, n, "weight", "[out, in/groups, kh, kw]", w);
    snprintf(expected, sizeof expected, "[N, H, W, %lld]", (long long)(w->shape[1] * n->attrs.groups));
    if (x->rank != 4)
        return fail_expects(g, n, "input", expected, x);
    if (!check_conv_channels(g, n, x, w))
        return false;
    if (bias && (bias->rank != 1 || bias->shape[0] != w->shape[0])) {
        snprintf(expected, sizeof expected, "[%lld]", (long long)w->shape[0]);
        return fail_expects(g, n, "bias", expected, bias);
    }
    n->attrs.kernel[0] = (int)w->shape[2];
    n->attrs.kernel[1] = (int)w->shape[3];
    int64_t out[4] = {x->shape[0], 0, 0, w->shape[0]};
    if (!window_shape(g, n, x, n->attrs.dilation[0], n->attrs.dilation[1], out))
        return false;
    set_shape(n, out, 4);
    return true;
}

/* AdaptiveMeanPool((h, w)): PyTorch's windows are equal (kernel = stride =
 * input / output) exactly when the output size divides the input's. */
static bool adaptive_window(ir_graph *g, ir_node *n, const ir_node *x)
{
    ir_attrs *a = &n->attrs;
    char shape[160];
    if (x->shape[1] % a->kernel[0] != 0 || x->shape[2] % a->kernel[1] != 0)
        return fail(g, n, "AdaptiveMeanPool((%d, %d)) on input %s: the output size must divide "
                    "the input's height and width (windows of equal size)", a->kernel[0],
                    a->kernel[1], shape_text(x, shape, sizeof shape));
    a->stride[0] = a->kernel[0] = (int)(x->shape[1] / a->kernel[0]);
    a->stride[1] = a->kernel[1] = (int)(x->shape[2] / a->kernel[1]);
    a->adaptive = false;
    return true;
}

/* Ceil mode (PyTorch ceil_mode=True): one more output where a partial window
 * remains, unless it would start in the bottom/right padding; the rows and
 * columns it reads past the input are padding (-inf for max). */
static void ceil_mode_pad(ir_attrs *a, const ir_node *x)
{
    for (int d = 0; d < 2; d++) {
        int64_t size = x->shape[1 + d], lo = a->pad[d], hi = a->pad[2 + d];
        int64_t span = size + lo + hi - a->kernel[d];
        if (span < 0)
            continue;
        int64_t out = (span + a->stride[d] - 1) / a->stride[d] + 1;
        if ((out - 1) * a->stride[d] >= size + lo)
            out--;
        int64_t extra = (out - 1) * a->stride[d] + a->kernel[d] - (size + lo + hi);
        if (extra > 0) {
            a->pad[2 + d] += (int)extra;
            a->ceil_extra[d] += (int)extra;
        }
    }
}

static bool shape_pool(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    if (x->rank != 4)
        return fail_expects(g, n, "input", "[N, H, W, C]", x);
    if (n->attrs.adaptive && !adaptive_window(g, n, x))
        return false;
    bool ceil_mode = n->attrs.ceil && !n->attrs.pad_same;
    if (ceil_mode)
        ceil_mode_pad(&n->attrs, x);
    int64_t out[4] = {x->shape[0], 0, 0, x->shape[3]};
    if (!window_shape(g, n, x, 1, 1, out))
        return false;
    const ir_attrs *a = &n->attrs;
    if (a->pad[0] > a->kernel[0] / 2 || (!ceil_mode && a->pad[2] > a->kernel[0] / 2) ||
        a->pad[1] > a->kernel[1] / 2 || (!ceil_mode && a->pad[3] > a->kernel[1] / 2)) {
        char desc[160];
        return fail(g, n, "%s has padding (%d, %d, %d, %d) but padding must be at most half the "
                    "kernel", ir_describe_layer(g, n, desc, sizeof desc), a->pad[0], a->pad[1], a->pad[2],
                    a->pad[3]);
    }
    set_shape(n, out, 4);
    return true;
}

/* ConvTranspose2d: H' = (H - 1) * stride - 2 * pad + dilation * (kh - 1) + output_padding + 1. */
static bool shape_conv_transpose(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0), *w = operand(g, n, 1);
    const ir_node *bias = n->src[2] != IR_NONE ? operand(g, n, 2) : NULL;
    const ir_attrs *a = &n->attrs;
    char expected[96];
    if (w->rank != 4)
        return fail_expects(g, n, "weight", "[in, out/groups, kh, kw]", w);
    snprintf(expected, sizeof expected, "[N, H, W, %lld]", (long long)w->shape[0]);
    if (x->rank != 4 || x->shape[3] != w->shape[0])
        return fail_expects(g, n, "input", expected, x);
    int64_t out[4] = {x->shape[0], 0, 0, w->shape[1] * a->groups};
    for (int i = 0; i < 2; i++)
        out[1 + i] = (x->shape[1 + i] - 1) * a->stride[i] - a->pad[i] - a->pad[i + 2] +
                     a->dilation[i] * (w->shape[2 + i] - 1) + a->out_pad[i] + 1;
    if (out[1] < 1 || out[2] < 1)
        return fail_expects(g, n, "input", "a size giving a positive output", x);
    if (bias && (bias->rank != 1 || bias->shape[0] != out[3])) {
        snprintf(expected, sizeof expected, "[%lld]", (long long)out[3]);
        return fail_expects(g, n, "bias", expected, bias);
    }
    n->attrs.kernel[0] = (int)w->shape[2];
    n->attrs.kernel[1] = (int)w->shape[3];
    set_shape(n, out, 4);
    return true;
}

static bool shape_upsample(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    if (x->rank != 4)
        return fail_expects(g, n, "input", "[N, H, W, C]", x);
    int64_t out[4] = {x->shape[0], x->shape[1] * n->attrs.scale[0], x->shape[2] * n->attrs.scale[1],
                      x->shape[3]};
    set_shape(n, out, 4);
    return true;
}

static bool shape_globalpool(ir_graph *g, ir_node *n)
{
    const ir_node *x = operand(g, n, 0);
    if (x->rank != 4)
        return fail_expects(g, n, "input", "[N, H, W, C]", x);
    int64_t out[2] = {x->shape[0], x->shape[3]};
    set_shape(n, out, 2);
    return true;
}

/* Projections: in_proj_weight [3d, d], out_proj.weight [d, d], biases [3d], [d]. */
static bool check_mha_params(ir_graph *g, ir_node *n, int64_t d)
{
    static const int param_index[4] = {3, 4, 5, 6};
    const int64_t rows[4] = {3 * d, 3 * d, d, d};
    const int ranks[4] = {2, 1, 2, 1};
    for (int i = 0; i < 4; i++) {
        const ir_node *p = operand(g, n, param_index[i]);
        if (!p)
            continue;
        bool ok = p->rank == ranks[i] && p->shape[0] == rows[i] && (ranks[i] == 1 || p->shape[1] == d);
        if (!ok) {
            char expected[64];
            if (ranks[i] == 2)
                snprintf(expected, sizeof expected, "[%lld, %lld]", (long long)rows[i], (long long)d);
            else
                snprintf(expected, sizeof expected, "[%lld]", (long long)rows[i]);
            return fail_expects(g, n, "parameter", expected, p);
        }
    }
    return true;
}

static bool shape_mha(ir_graph *g, ir_node *n)
{
    const ir_node *q = operand(g, n, 0), *k = operand(g, n, 1), *v = operand(g, n, 2);
    int64_t d = dim(operand(g, n, 3), 1);
    char desc[160], expected[96], sk[160], sv[160];
    if (!check_mha_params(g, n, d))
        return false;
    snprintf(expected, sizeof expected, "[N, L, %lld]", (long long)d);
    if (q->rank != 3 || q->shape[2] != d)
        return fail_expects(g, n, "query", expected, q);
    snprintf(expected, sizeof expected, "[%lld, S, %lld]", (long long)q->shape[0], (long long)d);
    if (k->rank != 3 || k->shape[2] != d || k->shape[0] != q->shape[0])
        return fail_expects(g, n, "key", expected, k);
    if (v->rank != 3 || v->shape[2] != d || v->shape[0] != q->shape[0])
        return fail_expects(g, n, "value", expected, v);
    snprintf(expected, sizeof expected, "[%lld, %lld]", (long long)q->shape[0], (long long)k->shape[1]);
    const ir_node *mask = n->nsrc > 7 && n->src[7] != IR_NONE ? operand(g, n, 7) : NULL;
    if (mask && (mask->rank != 2 || mask->shape[0] != q->shape[0] || mask->shape[1] != k->shape[1]))
        return fail_expects(g, n, "key mask", expected, mask);
    if (k->shape[1] != v->shape[1])
        return fail(g, n, "%s: key %s and value %s differ in length", ir_describe_layer(g, n, desc, sizeof desc),
                    shape_text(k, sk, sizeof sk), shape_text(v, sv, sizeof sv));
    if (n->attrs.heads < 1 || d % n->attrs.heads != 0)
        return fail(g, n, "%s: embedding dim %lld is not divisible by %d heads",
                    ir_describe_layer(g, n, desc, sizeof desc), (long long)d, n->attrs.heads);
    /* The kernel's scratch (axrt_mha_scratch_elems: 2*lq*d + 3*lk*d +
       lq*lk elements) is at most 3*(lq+lk)*(d+lk) elements; bound that
       without overflow, in the runtime's int fields too. */
    const int64_t lq = q->shape[1], lk = k->shape[1];
    int64_t bound = 3 * 8;
    if (lq > INT_MAX || lk > INT_MAX || d > INT_MAX ||
        __builtin_mul_overflow(bound, lq + lk, &bound) || __builtin_mul_overflow(bound, d + lk, &bound) ||
        bound > AX_MAX_TENSOR_BYTES)
        return fail(g, n, "%s: attention over query %s and key %s needs too much scratch memory "
                    "(the limit is %lld bytes)", ir_describe_layer(g, n, desc, sizeof desc), shape_text(q, sk, sizeof sk),
                    shape_text(k, sv, sizeof sv), (long long)AX_MAX_TENSOR_BYTES);
    set_shape(n, q->shape, 3);
    return true;
}

static bool shape_embedding(ir_graph *g, ir_node *n)
{
    const ir_node *idx = operand(g, n, 0), *w = operand(g, n, 1);
    char desc[160], shape[160];
    if (ir_dtype_is_float(idx->dtype))
        return fail(g, n, "%s expects integer indices but gets %s%s",
                    ir_describe_layer(g, n, desc, sizeof desc), ir_dtype_name(idx->dtype),
                    shape_text(idx, shape, sizeof shape));
    if (w->rank != 2)
        return fail_expects(g, n, "weight", "[vocab, dim]", w);
    if (idx->rank + 1 > IR_MAX_RANK)
        return fail(g, n, "%s: indices %s leave no room for the embedding dimension (rank limit %d)",
                    ir_describe_layer(g, n, desc, sizeof desc), shape_text(idx, shape, sizeof shape),
                    IR_MAX_RANK);
    set_shape(n, idx->shape, idx->rank);
    n->shape[n->rank++] = w->shape[1];
    return true;
}

static const shape_fn shape_fns[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags) [IR_OP_##name] = shape_##shape,
#include "ops.def"
#undef OP
};

/* ---- driver ------------------------------------------------------------- */

/* Compute nodes take the dtype of their first float operand (pass_dtype
 * settles the rest), integer results theirs (ir_integer_result); casts keep
 * the target they were created with. */
static void settle_dtype(ir_graph *g, ir_node *n)
{
    if (ir_ops[n->op].kind == IR_SOURCE || n->op == IR_OP_cast)
        return;
    n->dtype = ir_integer_result(g, n);
    if (n->dtype != AXRT_DTYPE_COUNT)
        return;
    n->dtype = g->dtype;
    for (int i = 0; i < n->nsrc; i++) {
        const ir_node *s = operand(g, n, i);
        if (s && ir_dtype_is_float(s->dtype)) {
            n->dtype = s->dtype;
            return;
        }
    }
}

static bool depends_on_failure(ir_graph *g, const ir_node *n)
{
    for (int i = 0; i < n->nsrc; i++) {
        const ir_node *s = operand(g, n, i);
        if (s && s->rank == IR_FAILED_RANK)
            return true;
    }
    return false;
}

/* Every tensor stays under AX_MAX_TENSOR_BYTES: its element count is
 * computed without overflow here, so later shape rules (Flatten, reshape)
 * and the byte sums of the memory plan and parameters cannot overflow
 * either.  A dimension product past 64 bits is thus a located error. */

static bool size_is_sane(ir_graph *g, ir_node *n)
{
    int64_t bytes = 8;   /* the widest dtype, so casts stay in range too */
    for (int i = 0; i < n->rank; i++)
        if (__builtin_mul_overflow(bytes, n->shape[i], &bytes) || bytes > AX_MAX_TENSOR_BYTES) {
            char sh[160];
            return fail(g, n, "%s of shape %s is too large (the limit is %lld bytes per tensor)",
                        ir_ops[n->op].name, shape_text(n, sh, sizeof sh), (long long)AX_MAX_TENSOR_BYTES);
        }
    return true;
}

int pass_shape(ir_graph *g)
{
    return pass_shape_from(g, 0);
}

int pass_shape_from(ir_graph *g, int first)
{
    int errors = 0;
    for (int id = first < 0 ? 0 : first; id < g->nnodes; id++) {
        ir_node *n = &g->nodes[id];
        if (n->dead || n->rank == IR_FAILED_RANK)   /* lowering could not build it */
            continue;
        if (depends_on_failure(g, n)) {
            n->rank = IR_FAILED_RANK;
            continue;
        }
        if (!shape_fns[n->op](g, n) || !size_is_sane(g, n)) {
            n->rank = IR_FAILED_RANK;
            errors++;
            continue;
        }
        settle_dtype(g, n);
    }
    return errors;
}
