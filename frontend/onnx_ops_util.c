/* onnx_ops_util.c — what the op handlers (onnx_ops_*.c) build with: their
 * outputs defined, constant inputs read as integers and axes, IR nodes made
 * (reshape, transpose, slice, a dense along one axis, a binary op of two
 * values, padding along one axis), and constants folded elementwise with
 * broadcasting (exact in int64 for integer tensors).  The handler families
 * share only these (and the handlers themselves: Dropout is Identity), so
 * that no family calls back into one that calls it. */
#ifdef AXC_ONNX
#include <math.h>
#include <string.h>

#include "onnx_ops.h"

ox_val *ox_def_out(ox_state *s, int i)
{
    return ox_define(s, s->node->output[i]);
}

bool ox_set_node(ox_state *s, int i, int node, bool nhwc)
{
    if (node == IR_NONE) return false;
    ox_val *v = ox_def_out(s, i);
    v->node = node;
    v->nhwc = nhwc;
    return true;
}

bool ox_set_const(ox_state *s, int i, ox_const *c)
{
    if (!c) return false;
    ox_def_out(s, i)->c = c;
    return true;
}

/* Every present input is a constant. */
bool ox_all_const(ox_state *s)
{
    for (int i = 0; i < NIN; i++) {
        ox_val *v = s->node->input[i][0] ? ox_lookup(s, s->node->input[i]) : NULL;
        if (v && !v->c) return false;
    }
    return true;
}

ox_const *ox_fold_new(ox_state *s, bool is_int, int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n) || n > OX_MAX_FOLD) {
            ox_fail(s, "a constant of more than %lld elements or a negative dimension",
                    (long long)OX_MAX_FOLD);
            return NULL;
        }
    }
    return ox_const_new(s, is_int, rank, shape);
}

/* Integer list from a constant input (at most max). */
int ox_const_ints(ox_state *s, ox_val *v, int64_t *out, int max)
{
    if (!v || !v->c) {
        ox_unsupported(s, "a shape, axes or index input that is not a constant");
        return -1;
    }
    if (v->c->count > max) {
        ox_fail(s, "'%s' has %lld values (at most %d)", v->name, (long long)v->c->count, max);
        return -1;
    }
    for (int64_t i = 0; i < v->c->count; i++)
        if (!ox_int_at(s, v->c, i, &out[i])) return -1;
    return (int)v->c->count;
}

bool ox_norm_axis(ox_state *s, int64_t *axis, int rank)
{
    if (*axis < 0) *axis += rank;
    if (*axis < 0 || *axis >= (rank ? rank : 1)) {
        ox_fail(s, "axis out of range for rank %d", rank);
        return false;
    }
    return true;
}

/* n axes normalised in place for rank; one out of range or named twice is
 * an error (the axes of Pad, Resize, CenterCropPad). */
bool ox_norm_axes(ox_state *s, int64_t *axes, int n, int rank)
{
    bool seen[IR_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
        if (!ox_norm_axis(s, &axes[i], rank)) return false;
        if (seen[axes[i]]) {
            ox_fail(s, "axis %lld is repeated in axes", (long long)axes[i]);
            return false;
        }
        seen[axes[i]] = true;
    }
    return true;
}

/* An int64 attribute value v narrowed to the IR's int when lo <= v <= hi
 * (checked before the narrowing: 2^32 + 1 must not become 1). */
bool ox_narrow_int(int64_t v, int lo, int hi, int *out)
{
    if (v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* The first element of constant v as an int64 (a located error when it has
 * none or is not an integer). */
bool ox_const_int0(ox_state *s, ox_val *v, int64_t *out)
{
    if (!v->c->count) {
        ox_fail(s, "'%s' has no value", v->name);
        return false;
    }
    return ox_int_at(s, v->c, 0, out);
}

int64_t ox_numel(const int64_t *shape, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

/* ---- IR building helpers ------------------------------------------------- */

int ox_reshape_to(ox_state *s, int x, const int64_t *shape, int rank)
{
    ir_attrs a = ir_attrs_unset();
    a.nnewshape = rank;
    memcpy(a.newshape, shape, sizeof *shape * (size_t)rank);
    if (rank == 0) {   /* IR reshape needs a rank: keep [1] then it is the same bytes */
        a.nnewshape = 1;
        a.newshape[0] = 1;
    }
    return ox_add(s, IR_OP_reshape, &x, 1, &a);
}

int ox_transpose_perm(ox_state *s, int x, const int *perm, int rank)
{
    return x == IR_NONE ? x : ox_transpose(s, x, perm, rank);
}

/* x with axis moved last (perm into fwd), and the inverse into back. */
int ox_axis_last(ox_state *s, int x, int rank, int axis, int *back)
{
    int perm[IR_MAX_RANK], k = 0;
    for (int i = 0; i < rank; i++)
        if (i != axis) perm[k++] = i;
    perm[k] = axis;
    for (int i = 0; i < rank; i++) back[perm[i]] = i;
    return ox_transpose_perm(s, x, perm, rank);
}

/* x[begin:end:step] along axis: one IR slice. */
int ox_slice_axis(ox_state *s, int x, int axis, int64_t begin, int64_t end, int64_t step)
{
    if (x == IR_NONE) return x;
    ir_attrs a = ir_attrs_unset();
    a.nslice = ir_at(s->g, x)->rank;
    for (int d = 0; d < a.nslice; d++) a.begin[d] = INT64_MIN, a.end[d] = INT64_MAX, a.step[d] = 1;
    a.begin[axis] = begin, a.end[axis] = end, a.step[axis] = step;
    return ox_add(s, IR_OP_slice, &x, 1, &a);
}

/* y = x[..., idx, ...] along axis (idx: m indices in range): exact, an IR
 * slice when idx is a progression with a positive step, else a dense with a
 * one-hot weight [m, D]. */
int ox_select_axis(ox_state *s, int x, int axis, const int64_t *idx, int64_t m)
{
    const ir_node *xn = ir_at(s->g, x);
    int rank = xn->rank;
    int64_t d = xn->shape[axis];
    bool whole = m == d;
    for (int64_t i = 0; whole && i < m; i++) whole = idx[i] == i;
    if (whole) return x;
    int64_t step = m > 1 ? idx[1] - idx[0] : 1;
    bool progression = m >= 1 && step >= 1;
    for (int64_t i = 1; progression && i < m; i++) progression = idx[i] - idx[i - 1] == step;
    if (progression) return ox_slice_axis(s, x, axis, idx[0], idx[0] + (m - 1) * step + 1, step);
    if (m * d > ((int64_t)1 << 22) || m < 1) {
        ox_unsupported(s, "a slice or gather this large (no slice op in the IR yet)");
        return IR_NONE;
    }
    int back[IR_MAX_RANK];
    int t = ox_axis_last(s, x, rank, axis, back);
    if (t == IR_NONE) return IR_NONE;
    double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(m * d));
    for (int64_t i = 0; i < m; i++) w[i * d + idx[i]] = 1.0;
    int64_t wshape[2] = {m, d};
    int src[3] = {t, ox_param(s, w, 2, wshape, NULL), IR_NONE};
    int y = ox_add(s, IR_OP_dense, src, 3, NULL);
    return y == IR_NONE ? y : ox_transpose_perm(s, y, back, rank);
}

int ox_un(ox_state *s, ir_op op, int x)
{
    return x == IR_NONE ? x : ox_add(s, op, &x, 1, NULL);
}

int ox_bin(ox_state *s, ir_op op, int a, int b)
{
    int src[2] = {a, b};
    return a == IR_NONE || b == IR_NONE ? IR_NONE : ox_add(s, op, src, 2, NULL);
}

int ox_scalar_param(ox_state *s, double v)
{
    return ox_scalar(s, v);
}

/* The elementwise max(a, b) or min(a, b): exact, infinities included. */
int ox_max_min(ox_state *s, bool max, int a, int b)
{
    return ox_bin(s, max ? IR_OP_max : IR_OP_min, a, b);
}

/* y = W x along axis (W [m, d], row-major): the dense of ox_select_axis with
 * any weights (Resize's interpolation). */
int ox_weigh_axis(ox_state *s, int x, int axis, const double *w, int64_t m)
{
    const ir_node *xn = ir_at(s->g, x);
    int rank = xn->rank;
    int64_t d = xn->shape[axis];
    if (m * d > ((int64_t)1 << 22) || m < 1) {
        ox_unsupported(s, "a resize this large");
        return IR_NONE;
    }
    int back[IR_MAX_RANK];
    int t = ox_axis_last(s, x, rank, axis, back);
    if (t == IR_NONE) return IR_NONE;
    int64_t wshape[2] = {m, d};
    int src[3] = {t, ox_param(s, w, 2, wshape, NULL), IR_NONE};
    int y = ox_add(s, IR_OP_dense, src, 3, NULL);
    return y == IR_NONE ? y : ox_transpose_perm(s, y, back, rank);
}

/* The constant c laid out to broadcast against an NHWC tensor (rank <= 4). */
static int const_nhwc(ox_state *s, const ox_const *c)
{
    int64_t sh[4] = {1, 1, 1, 1};
    for (int i = 0; i < c->rank; i++) sh[4 - c->rank + i] = c->shape[i];
    int64_t nh[4] = {sh[0], sh[2], sh[3], sh[1]};
    double *v = ax_alloc(s->ctx->arena, sizeof *v * (size_t)(c->count ? c->count : 1));
    for (int64_t n = 0; n < sh[0]; n++)
        for (int64_t ch = 0; ch < sh[1]; ch++)
            for (int64_t h = 0; h < sh[2]; h++)
                for (int64_t w = 0; w < sh[3]; w++)
                    v[((n * sh[2] + h) * sh[3] + w) * sh[1] + ch] = c->v[((n * sh[1] + ch) * sh[2] + h) * sh[3] + w];
    return ox_param(s, v, 4, nh, NULL);
}

bool ox_binary_tensor(ox_state *s, ir_op op, ox_val *a, ox_val *b)
{
    bool nhwc = (!a->c && a->nhwc) || (!b->c && b->nhwc);
    bool keep = nhwc && (a->c ? a->c->rank <= 4 : a->nhwc) && (b->c ? b->c->rank <= 4 : b->nhwc);
    if (a->c && a->c->is_int) ox_unsupported(s, "an integer constant operand");
    if (b->c && b->c->is_int) ox_unsupported(s, "an integer constant operand");
    if ((a->c && a->c->is_int) || (b->c && b->c->is_int)) return false;
    int src[2];
    if (keep) {
        src[0] = a->c ? const_nhwc(s, a->c) : a->node;
        src[1] = b->c ? const_nhwc(s, b->c) : b->node;
    } else {
        src[0] = ox_node(s, a);
        src[1] = ox_node(s, b);
    }
    return ox_set_node(s, 0, ox_add(s, op, src, 2, NULL), keep);
}

/* x with lo and hi elements of value before and after it along axis: a
 * concatenation with constant blocks. */
int ox_pad_axis(ox_state *s, int x, int ax, int64_t lo, int64_t hi, double value)
{
    int src[3], n = 0;
    for (int side = 0; side < 2 && x != IR_NONE; side++) {   /* before, x, after */
        int64_t p = side ? hi : lo;
        if (side == 1) src[n++] = x;
        if (!p) continue;
        if (p < 0 || p > OX_MAX_FOLD) { ox_unsupported(s, "a pad this large"); return IR_NONE; }
        int64_t bs[IR_MAX_RANK];
        int rank = ir_at(s->g, x)->rank;
        memcpy(bs, ir_at(s->g, x)->shape, sizeof bs);
        bs[ax] = p;
        int64_t cnt = 1;
        for (int i = 0; i < rank; i++)
            if (__builtin_mul_overflow(cnt, bs[i], &cnt) || cnt > OX_MAX_FOLD) { ox_unsupported(s, "a pad this large"); return IR_NONE; }
        double *v = ax_alloc(s->ctx->arena, sizeof *v * (size_t)(cnt ? cnt : 1));
        for (int64_t i = 0; i < cnt; i++) v[i] = value;
        src[n++] = ox_param(s, v, rank, bs, NULL);
    }
    if (n <= 1 || x == IR_NONE) return x;
    ir_attrs a = ir_attrs_unset();
    a.axis = ax;
    return ox_add(s, IR_OP_concat, src, n, &a);
}

/* ---- folding ----------------------------------------------------------- */

typedef double (*ox_binary_fn)(double, double);
double ox_fold_add(double a, double b) { return a + b; }
double ox_fold_sub(double a, double b) { return a - b; }
double ox_fold_mul(double a, double b) { return a * b; }
double ox_fold_div(double a, double b) { return a / b; }
double ox_fold_pow(double a, double b) { return pow(a, b); }
double ox_fold_eq(double a, double b) { return a == b; }
double ox_fold_lt(double a, double b) { return a < b; }
double ox_fold_gt(double a, double b) { return a > b; }
double ox_fold_le(double a, double b) { return a <= b; }
double ox_fold_ge(double a, double b) { return a >= b; }
double ox_fold_min(double a, double b) { return a < b ? a : b; }
double ox_fold_max(double a, double b) { return a > b ? a : b; }
double ox_fold_and(double a, double b) { return a != 0 && b != 0; }
double ox_fold_or(double a, double b) { return a != 0 || b != 0; }
double ox_fold_fmod(double a, double b) { return b == 0 ? 0 : fmod(a, b); }
/* Mod with fmod=0 (integers): Python's %, the result has the divisor's sign. */
double ox_fold_mod(double a, double b)
{
    double r = ox_fold_fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* f on integers, exact in int64 (two's complement wrap on overflow, as
 * ONNX runtimes compute; a division by zero gives 0): *r, or false when f
 * has no integer form (Pow with a negative exponent). */
static bool int_binary(ox_binary_fn f, int64_t a, int64_t b, int64_t *r)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    if (f == ox_fold_add) *r = (int64_t)(ua + ub);
    else if (f == ox_fold_sub) *r = (int64_t)(ua - ub);
    else if (f == ox_fold_mul) *r = (int64_t)(ua * ub);
    else if (f == ox_fold_div || f == ox_fold_fmod || f == ox_fold_mod) {
        if (b == 0) *r = 0;
        else if (b == -1) *r = f == ox_fold_div ? (int64_t)(0 - ua) : 0;   /* INT64_MIN / -1 wraps */
        else if (f == ox_fold_div) *r = a / b;
        else {
            *r = a % b;
            if (f == ox_fold_mod && *r != 0 && (*r < 0) != (b < 0)) *r += b;
        }
    } else if (f == ox_fold_pow) {
        if (b < 0) return false;
        uint64_t p = 1;
        for (; ub; ub >>= 1, ua *= ua)
            if (ub & 1) p *= ua;
        *r = (int64_t)p;
    } else if (f == ox_fold_eq) *r = a == b;
    else if (f == ox_fold_lt) *r = a < b;
    else if (f == ox_fold_gt) *r = a > b;
    else if (f == ox_fold_le) *r = a <= b;
    else if (f == ox_fold_ge) *r = a >= b;
    else if (f == ox_fold_min) *r = a < b ? a : b;
    else if (f == ox_fold_max) *r = a > b ? a : b;
    else if (f == ox_fold_and) *r = a != 0 && b != 0;
    else if (f == ox_fold_or) *r = a != 0 || b != 0;
    else return false;
    return true;
}

bool ox_broadcast_shape(ox_state *s, const ox_const *const *c, int n, int64_t *out, int *rank)
{
    *rank = 0;
    for (int k = 0; k < n; k++) *rank = c[k]->rank > *rank ? c[k]->rank : *rank;
    for (int i = 0; i < *rank; i++) {
        out[i] = 1;
        for (int k = 0; k < n; k++) {
            int j = i - (*rank - c[k]->rank);
            int64_t d = j >= 0 ? c[k]->shape[j] : 1;
            if (d != 1 && out[i] != 1 && d != out[i]) {
                ox_fail(s, "shapes of the operands do not broadcast");
                return false;
            }
            if (d != 1) out[i] = d;
        }
    }
    return true;
}

/* Flat index into c of the broadcast result's flat index. */
int64_t ox_bcast_index(const ox_const *c, const int64_t *shape, int rank, int64_t flat)
{
    int64_t idx = 0, stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int64_t coord = flat % shape[i];
        flat /= shape[i];
        int j = i - (rank - c->rank);
        if (j >= 0) {
            if (c->shape[j] != 1) idx += coord * stride;
            stride *= c->shape[j];
        }
    }
    return idx;
}

ox_const *ox_fold_binary(ox_state *s, const ox_const *a, const ox_const *b, ox_binary_fn f,
                             bool logical)
{
    const ox_const *cs[2] = {a, b};
    int64_t shape[IR_MAX_RANK];
    int rank;
    if (!ox_broadcast_shape(s, cs, 2, shape, &rank)) return NULL;
    bool is_int = logical || (a->is_int && b->is_int), exact = a->is_int && b->is_int;
    ox_const *r = ox_fold_new(s, is_int, rank, shape);
    if (!r) return NULL;
    for (int64_t i = 0; i < r->count; i++) {
        int64_t ia = ox_bcast_index(a, shape, rank, i), ib = ox_bcast_index(b, shape, rank, i), x;
        if (exact && int_binary(f, a->iv[ia], b->iv[ib], &x)) ox_set_int(r, i, x);
        else if (!is_int) r->v[i] = f(a->v[ia], b->v[ib]);
        else if (ox_double_to_int(f(a->v[ia], b->v[ib]), &x)) ox_set_int(r, i, x);
        else {
            ox_fail(s, "an integer result out of the int64 range");
            return NULL;
        }
    }
    return r;
}

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_ops_util_left_out;
#endif
