/* onnx_ops.c — one handler per ONNX op (the table at the end): each reads
 * the current node's inputs and attributes (onnx_internal.h) and defines its
 * outputs, as IR nodes or, when every input is known at import, as folded
 * constants (shape arithmetic).  An attribute or case the IR cannot express
 * is a located "unsupported" error, never an approximation.  Slices and
 * gathers along an axis of a computed tensor are a dense with a 0/1
 * selection matrix (exact) until the IR has a slice op. */
#ifdef AXC_ONNX
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

#define IN(i) ox_input(s, (i), &ok)
#define NIN ((int)s->node->n_input)

static ox_val *def_out(ox_state *s, int i)
{
    return ox_define(s, s->node->output[i]);
}

static bool set_node(ox_state *s, int i, int node, bool nhwc)
{
    if (node == IR_NONE) return false;
    ox_val *v = def_out(s, i);
    v->node = node;
    v->nhwc = nhwc;
    return true;
}

static bool set_const(ox_state *s, int i, ox_const *c)
{
    if (!c) return false;
    def_out(s, i)->c = c;
    return true;
}

/* Every present input is a constant. */
static bool all_const(ox_state *s)
{
    for (int i = 0; i < NIN; i++) {
        ox_val *v = s->node->input[i][0] ? ox_lookup(s, s->node->input[i]) : NULL;
        if (v && !v->c) return false;
    }
    return true;
}

static ox_const *fold_new(ox_state *s, bool is_int, int rank, const int64_t *shape)
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
static int const_ints(ox_state *s, ox_val *v, int64_t *out, int max)
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

static bool norm_axis(ox_state *s, int64_t *axis, int rank)
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
static bool norm_axes(ox_state *s, int64_t *axes, int n, int rank)
{
    bool seen[IR_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
        if (!norm_axis(s, &axes[i], rank)) return false;
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
static bool narrow_int(int64_t v, int lo, int hi, int *out)
{
    if (v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* The first element of constant v as an int64 (a located error when it has
 * none or is not an integer). */
static bool const_int0(ox_state *s, ox_val *v, int64_t *out)
{
    if (!v->c->count) {
        ox_fail(s, "'%s' has no value", v->name);
        return false;
    }
    return ox_int_at(s, v->c, 0, out);
}

static int64_t numel(const int64_t *shape, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

/* ---- IR building helpers ------------------------------------------------- */

static int reshape_to(ox_state *s, int x, const int64_t *shape, int rank)
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

static int transpose_perm(ox_state *s, int x, const int *perm, int rank)
{
    return x == IR_NONE ? x : ox_transpose(s, x, perm, rank);
}

/* x with axis moved last (perm into fwd), and the inverse into back. */
static int axis_last(ox_state *s, int x, int rank, int axis, int *back)
{
    int perm[IR_MAX_RANK], k = 0;
    for (int i = 0; i < rank; i++)
        if (i != axis) perm[k++] = i;
    perm[k] = axis;
    for (int i = 0; i < rank; i++) back[perm[i]] = i;
    return transpose_perm(s, x, perm, rank);
}

/* x[begin:end:step] along axis: one IR slice. */
static int slice_axis(ox_state *s, int x, int axis, int64_t begin, int64_t end, int64_t step)
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
static int select_axis(ox_state *s, int x, int axis, const int64_t *idx, int64_t m)
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
    if (progression) return slice_axis(s, x, axis, idx[0], idx[0] + (m - 1) * step + 1, step);
    if (m * d > ((int64_t)1 << 22) || m < 1) {
        ox_unsupported(s, "a slice or gather this large (no slice op in the IR yet)");
        return IR_NONE;
    }
    int back[IR_MAX_RANK];
    int t = axis_last(s, x, rank, axis, back);
    if (t == IR_NONE) return IR_NONE;
    double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(m * d));
    for (int64_t i = 0; i < m; i++) w[i * d + idx[i]] = 1.0;
    int64_t wshape[2] = {m, d};
    int src[3] = {t, ox_param(s, w, 2, wshape, NULL), IR_NONE};
    int y = ox_add(s, IR_OP_dense, src, 3, NULL);
    return y == IR_NONE ? y : transpose_perm(s, y, back, rank);
}

static int un(ox_state *s, ir_op op, int x)
{
    return x == IR_NONE ? x : ox_add(s, op, &x, 1, NULL);
}

static int bin(ox_state *s, ir_op op, int a, int b)
{
    int src[2] = {a, b};
    return a == IR_NONE || b == IR_NONE ? IR_NONE : ox_add(s, op, src, 2, NULL);
}

static int scalar_param(ox_state *s, double v)
{
    return ox_scalar(s, v);
}

/* The elementwise max(a, b) or min(a, b): exact, infinities included. */
static int max_min(ox_state *s, bool max, int a, int b)
{
    return bin(s, max ? IR_OP_max : IR_OP_min, a, b);
}

/* y = W x along axis (W [m, d], row-major): the dense of select_axis with
 * any weights (Resize's interpolation). */
static int weigh_axis(ox_state *s, int x, int axis, const double *w, int64_t m)
{
    const ir_node *xn = ir_at(s->g, x);
    int rank = xn->rank;
    int64_t d = xn->shape[axis];
    if (m * d > ((int64_t)1 << 22) || m < 1) {
        ox_unsupported(s, "a resize this large");
        return IR_NONE;
    }
    int back[IR_MAX_RANK];
    int t = axis_last(s, x, rank, axis, back);
    if (t == IR_NONE) return IR_NONE;
    int64_t wshape[2] = {m, d};
    int src[3] = {t, ox_param(s, w, 2, wshape, NULL), IR_NONE};
    int y = ox_add(s, IR_OP_dense, src, 3, NULL);
    return y == IR_NONE ? y : transpose_perm(s, y, back, rank);
}

/* ---- folding ----------------------------------------------------------- */

typedef double (*binary_fn)(double, double);
static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
static double f_pow(double a, double b) { return pow(a, b); }
static double f_eq(double a, double b) { return a == b; }
static double f_lt(double a, double b) { return a < b; }
static double f_gt(double a, double b) { return a > b; }
static double f_le(double a, double b) { return a <= b; }
static double f_ge(double a, double b) { return a >= b; }
static double f_min(double a, double b) { return a < b ? a : b; }
static double f_max(double a, double b) { return a > b ? a : b; }
static double f_and(double a, double b) { return a != 0 && b != 0; }
static double f_or(double a, double b) { return a != 0 || b != 0; }
static double f_fmod(double a, double b) { return b == 0 ? 0 : fmod(a, b); }
/* Mod with fmod=0 (integers): Python's %, the result has the divisor's sign. */
static double f_mod(double a, double b)
{
    double r = f_fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* f on integers, exact in int64 (two's complement wrap on overflow, as
 * ONNX runtimes compute; a division by zero gives 0): *r, or false when f
 * has no integer form (Pow with a negative exponent). */
static bool int_binary(binary_fn f, int64_t a, int64_t b, int64_t *r)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    if (f == f_add) *r = (int64_t)(ua + ub);
    else if (f == f_sub) *r = (int64_t)(ua - ub);
    else if (f == f_mul) *r = (int64_t)(ua * ub);
    else if (f == f_div || f == f_fmod || f == f_mod) {
        if (b == 0) *r = 0;
        else if (b == -1) *r = f == f_div ? (int64_t)(0 - ua) : 0;   /* INT64_MIN / -1 wraps */
        else if (f == f_div) *r = a / b;
        else {
            *r = a % b;
            if (f == f_mod && *r != 0 && (*r < 0) != (b < 0)) *r += b;
        }
    } else if (f == f_pow) {
        if (b < 0) return false;
        uint64_t p = 1;
        for (; ub; ub >>= 1, ua *= ua)
            if (ub & 1) p *= ua;
        *r = (int64_t)p;
    } else if (f == f_eq) *r = a == b;
    else if (f == f_lt) *r = a < b;
    else if (f == f_gt) *r = a > b;
    else if (f == f_le) *r = a <= b;
    else if (f == f_ge) *r = a >= b;
    else if (f == f_min) *r = a < b ? a : b;
    else if (f == f_max) *r = a > b ? a : b;
    else if (f == f_and) *r = a != 0 && b != 0;
    else if (f == f_or) *r = a != 0 || b != 0;
    else return false;
    return true;
}

static bool broadcast_shape(ox_state *s, const ox_const *const *c, int n, int64_t *out, int *rank)
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
static int64_t bcast_index(const ox_const *c, const int64_t *shape, int rank, int64_t flat)
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

static ox_const *fold_binary(ox_state *s, const ox_const *a, const ox_const *b, binary_fn f,
                             bool logical)
{
    const ox_const *cs[2] = {a, b};
    int64_t shape[IR_MAX_RANK];
    int rank;
    if (!broadcast_shape(s, cs, 2, shape, &rank)) return NULL;
    bool is_int = logical || (a->is_int && b->is_int), exact = a->is_int && b->is_int;
    ox_const *r = fold_new(s, is_int, rank, shape);
    if (!r) return NULL;
    for (int64_t i = 0; i < r->count; i++) {
        int64_t ia = bcast_index(a, shape, rank, i), ib = bcast_index(b, shape, rank, i), x;
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

/* ---- constants and shapes ------------------------------------------------ */

static bool op_constant(ox_state *s)
{
    const Onnx__AttributeProto *a;
    if ((a = ox_attr(s, "value")) && a->t) return set_const(s, 0, ox_tensor(s, a->t));
    int64_t one = 1;
    if ((a = ox_attr(s, "value_float")) && a->has_f) {
        ox_const *c = ox_const_new(s, false, 0, &one);
        c->v[0] = a->f;
        return set_const(s, 0, c);
    }
    if ((a = ox_attr(s, "value_int")) && a->has_i) {
        ox_const *c = ox_const_new(s, true, 0, &one);
        ox_set_int(c, 0, a->i);
        return set_const(s, 0, c);
    }
    if ((a = ox_attr(s, "value_floats")) || (a = ox_attr(s, "value_ints"))) {
        bool is_int = a->n_ints > 0 || a->n_floats == 0;
        int64_t n = is_int ? (int64_t)a->n_ints : (int64_t)a->n_floats;
        ox_const *c = fold_new(s, is_int, 1, &n);
        if (!c) return false;
        for (int64_t i = 0; i < n; i++) {
            if (is_int) ox_set_int(c, i, a->ints[i]);
            else c->v[i] = a->floats[i];
        }
        return set_const(s, 0, c);
    }
    ox_unsupported(s, "a Constant without a tensor, float or int value");
    return false;
}

static bool op_shape(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK];
    int rank = ox_shape(s, x, shape);
    int64_t start = ox_attr_int(s, "start", 0), end = ox_attr_int(s, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < start ? start : end > rank ? rank : end;
    int64_t n = end - start;
    ox_const *c = ox_const_new(s, true, 1, &n);
    for (int64_t i = 0; i < n; i++) ox_set_int(c, i, shape[start + i]);
    return set_const(s, 0, c);
}

static bool op_size(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK];
    int rank = ox_shape(s, x, shape);
    ox_const *c = ox_const_new(s, true, 0, shape);
    ox_set_int(c, 0, numel(shape, rank));
    return set_const(s, 0, c);
}

static bool op_identity(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    if (s->node->n_output > 1 && s->node->output[1][0]) {
        ox_unsupported(s, "the mask output of Dropout");
        return false;
    }
    ox_val copy = *x;
    ox_val *y = def_out(s, 0);
    const char *name = y->name;
    *y = copy;
    y->name = name;
    return true;
}

static bool op_constant_of_shape(ox_state *s)
{
    bool ok = true;
    ox_val *sh = IN(0);
    int64_t shape[IR_MAX_RANK];
    int rank = ok ? const_ints(s, sh, shape, IR_MAX_RANK) : -1;
    if (rank < 0) return false;
    const Onnx__AttributeProto *a = ox_attr(s, "value");
    ox_const *val = a && a->t ? ox_tensor(s, a->t) : NULL;
    if (a && !val) return false;
    ox_const *c = fold_new(s, val ? val->is_int : false, rank, shape);
    if (!c) return false;
    for (int64_t i = 0; val && val->count && i < c->count; i++) ox_copy_elem(c, i, val, 0);
    return set_const(s, 0, c);
}

static bool op_range(ox_state *s)
{
    bool ok = true;
    ox_val *a = IN(0), *b = IN(1), *d = IN(2);
    if (!ok || !a || !b || !d || !all_const(s)) {
        ox_unsupported(s, "a Range whose bounds are not constants");
        return false;
    }
    ox_val *const bounds[3] = {a, b, d};
    for (int i = 0; i < 3; i++)
        if (!bounds[i]->c->count) { ox_fail(s, "'%s' has no value", bounds[i]->name); return false; }
    if (a->c->is_int && b->c->is_int && d->c->is_int) {   /* exact: max(ceil((limit - start) / delta), 0) */
        int64_t start = a->c->iv[0], limit = b->c->iv[0], delta = d->c->iv[0], count = 0;
        if (delta != 0 && (delta > 0 ? limit > start : limit < start)) {
            uint64_t span = delta > 0 ? (uint64_t)limit - (uint64_t)start : (uint64_t)start - (uint64_t)limit;
            uint64_t step = delta > 0 ? (uint64_t)delta : 0 - (uint64_t)delta;
            uint64_t n = span / step + (span % step != 0);
            count = n > (uint64_t)OX_MAX_FOLD ? OX_MAX_FOLD + 1 : (int64_t)n;
        }
        ox_const *c = fold_new(s, true, 1, &count);
        if (!c) return false;
        for (int64_t i = 0; i < count; i++) ox_set_int(c, i, (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta));
        return set_const(s, 0, c);
    }
    double start = a->c->v[0], limit = b->c->v[0], delta = d->c->v[0];
    double n = delta == 0 ? -1 : ceil((limit - start) / delta);
    int64_t count = !(n > 0) ? 0 : n > (double)OX_MAX_FOLD ? OX_MAX_FOLD + 1 : (int64_t)n;
    ox_const *c = fold_new(s, false, 1, &count);
    if (!c) return false;
    for (int64_t i = 0; i < count; i++) c->v[i] = start + (double)i * delta;
    return set_const(s, 0, c);
}

/* ---- elementwise ---------------------------------------------------------- */

typedef struct unary_row { const char *name; ir_op op; double (*fold)(double); } unary_row;
static double u_relu(double x) { return x > 0 ? x : 0; }
static double u_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double u_neg(double x) { return -x; }
static double u_softplus(double x) { return log1p(exp(x)); }
static double u_not(double x) { return x == 0; }
static double u_recip(double x) { return 1 / x; }
static double u_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }

static const unary_row unary_rows[] = {
    {"Relu", IR_OP_relu, u_relu}, {"Sigmoid", IR_OP_sigmoid, u_sigmoid}, {"Tanh", IR_OP_tanh, tanh},
    {"Exp", IR_OP_exp, exp}, {"Log", IR_OP_log, log}, {"Sqrt", IR_OP_sqrt, sqrt},
    {"Abs", IR_OP_abs, fabs}, {"Neg", IR_OP_neg, u_neg}, {"Erf", IR_OP_erf, erf},
    {"Softplus", IR_OP_softplus, u_softplus}, {"Elu", IR_OP_elu, NULL},
    {"LeakyRelu", IR_OP_leaky_relu, NULL}, {"Floor", IR_OP_floor, floor},
    {"Ceil", IR_OP_ceil, ceil}, {"Not", IR_OP_COUNT, u_not}, {"Reciprocal", IR_OP_reciprocal, u_recip},
    {"Sin", IR_OP_sin, sin}, {"Cos", IR_OP_cos, cos}, {"Tan", IR_OP_tan, tan},
    {"Asin", IR_OP_asin, asin}, {"Acos", IR_OP_acos, acos}, {"Atan", IR_OP_atan, atan},
    {"Sinh", IR_OP_sinh, sinh}, {"Cosh", IR_OP_cosh, cosh}, {"Asinh", IR_OP_asinh, asinh},
    {"Acosh", IR_OP_acosh, acosh}, {"Atanh", IR_OP_atanh, atanh}, {"Round", IR_OP_round, nearbyint},
    {"Sign", IR_OP_sign, u_sign}, {"Mish", IR_OP_mish, NULL}, {"Gelu", IR_OP_gelu, NULL},
};

/* f on an integer, exact in int64 (negation wraps): *r, or false when f
 * has no integer form. */
static bool int_unary(double (*f)(double), int64_t x, int64_t *r)
{
    if (f == u_neg) *r = (int64_t)(0 - (uint64_t)x);
    else if (f == fabs) *r = x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    else if (f == u_relu) *r = x > 0 ? x : 0;
    else if (f == u_sign) *r = x > 0 ? 1 : x < 0 ? -1 : 0;
    else if (f == u_not) *r = x == 0;
    else if (f == floor || f == ceil || f == nearbyint) *r = x;
    else return false;
    return true;
}

/* Gelu (opset 20): approximate "none" is the IR's gelu (erf), "tanh" its
 * gelu_tanh; any other value is refused. */
static ir_op gelu_op(ox_state *s)
{
    const char *approx = ox_attr_str(s, "approximate", "none");
    if (!strcmp(approx, "tanh")) return IR_OP_gelu_tanh;
    if (strcmp(approx, "none")) {
        ox_fail(s, "unsupported: Gelu approximate='%s' (none and tanh only)", approx);
        return IR_OP_COUNT;
    }
    return IR_OP_gelu;
}

static bool op_unary(ox_state *s)
{
    const unary_row *r = NULL;
    for (size_t i = 0; i < sizeof unary_rows / sizeof *unary_rows; i++)
        if (!strcmp(unary_rows[i].name, s->node->op_type)) r = &unary_rows[i];
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    if (x->c && r->fold) {
        bool is_int = x->c->is_int && r->fold != u_sigmoid;
        ox_const *c = fold_new(s, is_int, x->c->rank, x->c->shape);
        if (!c) return false;
        for (int64_t i = 0; i < c->count; i++) {
            int64_t k;
            if (!is_int) c->v[i] = r->fold(x->c->v[i]);
            else if (int_unary(r->fold, x->c->iv[i], &k) || ox_double_to_int(r->fold(x->c->v[i]), &k)) ox_set_int(c, i, k);
            else { ox_fail(s, "an integer result out of the int64 range"); return false; }
        }
        return set_const(s, 0, c);
    }
    if (r->op == IR_OP_COUNT) {
        ox_unsupported(s, "this op on a computed tensor (only folded on constants)");
        return false;
    }
    ir_op op = r->op == IR_OP_gelu ? gelu_op(s) : r->op;
    if (op == IR_OP_COUNT) return false;
    ir_attrs a = ir_attrs_unset();
    a.alpha = ox_attr_float(s, "alpha", r->op == IR_OP_elu ? 1.0 : 0.01);
    int src = x->c ? ox_node(s, x) : x->node;
    return set_node(s, 0, ox_add(s, op, &src, 1, &a), !x->c && x->nhwc);
}

/* Clip(0, 6) -> relu6, Clip(0, inf) -> relu, else min(max(x, lo), hi). */
static bool op_clip(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0), *lo = IN(1), *hi = IN(2);
    if (!ok || !x) return false;
    double min = ox_attr_float(s, "min", -INFINITY), max = ox_attr_float(s, "max", INFINITY);
    if ((lo && !lo->c) || (hi && !hi->c)) {   /* computed bounds */
        int y = ox_node(s, x);
        if (lo) y = max_min(s, true, y, lo->c ? ox_scalar(s, lo->c->v[0]) : ox_node(s, lo));
        if (hi) y = max_min(s, false, y, hi->c ? ox_scalar(s, hi->c->v[0]) : ox_node(s, hi));
        return set_node(s, 0, y, false);
    }
    if (lo) min = lo->c->v[0];
    if (hi) max = hi->c->v[0];
    ir_op op = min == 0 && max == 6 ? IR_OP_relu6 : min == 0 && isinf(max) ? IR_OP_relu : IR_OP_COUNT;
    if (op == IR_OP_COUNT) {   /* min(max(x, lo), hi) of IR ops */
        int y = ox_node(s, x);
        if (!isinf(min)) y = max_min(s, true, y, ox_scalar(s, min));
        if (!isinf(max)) y = max_min(s, false, y, ox_scalar(s, max));
        return set_node(s, 0, y, false);
    }
    int src = ox_node(s, x);
    if (!x->c && x->nhwc) src = x->node;
    return set_node(s, 0, ox_add(s, op, &src, 1, NULL), !x->c && x->nhwc);
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

static bool binary_tensor(ox_state *s, ir_op op, ox_val *a, ox_val *b)
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
    return set_node(s, 0, ox_add(s, op, src, 2, NULL), keep);
}

typedef struct binary_row { const char *name; ir_op op; binary_fn fold; bool logical; } binary_row;
static const binary_row binary_rows[] = {
    {"Add", IR_OP_add, f_add, false}, {"Sub", IR_OP_sub, f_sub, false},
    {"Mul", IR_OP_mul, f_mul, false}, {"Div", IR_OP_div, f_div, false},
    {"Pow", IR_OP_pow, f_pow, false}, {"Equal", IR_OP_COUNT, f_eq, true},
    {"Less", IR_OP_COUNT, f_lt, true}, {"Greater", IR_OP_COUNT, f_gt, true},
    {"LessOrEqual", IR_OP_COUNT, f_le, true}, {"GreaterOrEqual", IR_OP_COUNT, f_ge, true},
    {"And", IR_OP_COUNT, f_and, true}, {"Or", IR_OP_COUNT, f_or, true},
    {"Mod", IR_OP_fmod, f_mod, false},
};

static bool op_binary(ox_state *s)
{
    const binary_row *r = NULL;
    for (size_t i = 0; i < sizeof binary_rows / sizeof *binary_rows; i++)
        if (!strcmp(binary_rows[i].name, s->node->op_type)) r = &binary_rows[i];
    bool ok = true;
    ox_val *a = IN(0), *b = IN(1);
    if (!ok || !a || !b) return false;
    if (ox_attr(s, "broadcast") && ox_attr(s, "axis")) {
        ox_unsupported(s, "opset-1 broadcasting with an axis attribute");
        return false;
    }
    bool python_mod = r->op == IR_OP_fmod && !ox_attr_int(s, "fmod", 0);
    if (a->c && b->c)
        return set_const(s, 0, fold_binary(s, a->c, b->c, r->op == IR_OP_fmod && !python_mod ? f_fmod : r->fold, r->logical));
    if (python_mod) {   /* the IR's fmod is C's: integer Mod is folded only */
        const ox_val *t = a->c ? b : a;
        if (ir_dtype_is_float(ir_at(s->g, t->node)->dtype))
            ox_fail(s, "Mod with fmod=0 on floating-point tensors (ONNX requires fmod=1 for them)");
        else ox_unsupported(s, "Mod of computed integer tensors (integer constants are folded)");
        return false;
    }
    if (r->op == IR_OP_COUNT) {
        ox_unsupported(s, "this op on computed tensors (only folded on constants)");
        return false;
    }
    return binary_tensor(s, r->op, a, b);
}

static bool op_composite(ox_state *s);

/* Sum and Mean of any number of inputs; Min, Max folded or composed. */
static bool op_variadic(ox_state *s)
{
    bool ok = true, mean = !strcmp(s->node->op_type, "Mean");
    bool fold_only = !strcmp(s->node->op_type, "Min") || !strcmp(s->node->op_type, "Max");
    ox_val *acc = IN(0);
    if (!ok || !acc) return false;
    if (all_const(s)) {
        binary_fn f = fold_only ? (s->node->op_type[1] == 'i' ? f_min : f_max) : f_add;
        ox_const *c = acc->c;
        for (int i = 1; i < NIN && c; i++) c = fold_binary(s, c, IN(i)->c, f, false);
        if (c && mean) {
            ox_const *r = fold_new(s, c->is_int, c->rank, c->shape);
            if (!r) return false;
            for (int64_t i = 0; i < c->count; i++) {
                if (c->is_int) ox_set_int(r, i, c->iv[i] / NIN);
                else r->v[i] = c->v[i] / NIN;
            }
            c = r;
        }
        return set_const(s, 0, c);
    }
    if (fold_only) return op_composite(s);
    ox_val cur = *acc;
    for (int i = 1; i < NIN; i++) {
        ox_val *b = IN(i);
        if (!ok || !binary_tensor(s, IR_OP_add, &cur, b)) return false;
        cur = *ox_lookup(s, s->node->output[0]);
    }
    if (NIN == 1) return op_identity(s);
    if (!mean) return true;
    int src[2] = {cur.node, ox_scalar(s, 1.0 / NIN)};
    return set_node(s, 0, ox_add(s, IR_OP_mul, src, 2, NULL), cur.nhwc);
}

/* x wrapped to ONNX integer type to (two's complement, as a C cast to it;
 * a UINT64 keeps its bits in the int64). */
static int64_t cast_int(int64_t x, int64_t to)
{
    switch (to) {
    case 2: return (uint8_t)x;
    case 3: return (int8_t)(uint8_t)x;
    case 4: return (uint16_t)x;
    case 5: return (int16_t)(uint16_t)x;
    case 6: return (int32_t)(uint32_t)x;
    case 12: return (uint32_t)x;
    default: return x;
    }
}

static bool op_cast(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t to = ox_attr_int(s, "to", 1);
    bool to_int = to != 1 && to != 10 && to != 11;
    if (to < 1 || to > 13 || to == 8) {   /* string, complex, bfloat16, float8 (opset 19), int4 (21)... */
        ox_fail(s, "unsupported: Cast to ONNX data type %lld (float, double and integer types only)", (long long)to);
        return false;
    }
    if (x->c) {
        ox_const *c = fold_new(s, to_int, x->c->rank, x->c->shape);
        if (!c) return false;
        for (int64_t i = 0; i < c->count; i++) {
            int64_t k;
            if (!to_int) c->v[i] = to == 11 ? x->c->v[i] : (double)(float)x->c->v[i];
            else if (to == 9) ox_set_int(c, i, x->c->v[i] != 0);
            else if (x->c->is_int || ox_double_to_int(x->c->v[i], &k)) ox_set_int(c, i, cast_int(x->c->is_int ? x->c->iv[i] : k, to));
            else { ox_fail(s, "the value %g is not an integer in the int64 range", x->c->v[i]); return false; }
        }
        return set_const(s, 0, c);
    }
    if (to_int || ir_at(s->g, x->node)->dtype != AXRT_F32) {
        ox_unsupported(s, "a Cast of a computed tensor to or from an integer type");
        return false;
    }
    return op_identity(s);
}

/* ---- data movement ---------------------------------------------------- */

/* Output shape of Reshape/Flatten/Squeeze/Unsqueeze into out; -1 if bad. */
static int reshape_target(ox_state *s, const int64_t *in, int rin, int *rout, int64_t *out)
{
    const char *op = s->node->op_type;
    bool ok = true;
    if (!strcmp(op, "Flatten")) {
        int64_t axis = ox_attr_int(s, "axis", 1);
        if (axis < 0) axis += rin;
        if (axis < 0 || axis > rin) { ox_fail(s, "axis out of range for rank %d", rin); return -1; }
        out[0] = numel(in, (int)axis);
        out[1] = numel(in + axis, rin - (int)axis);
        return *rout = 2;
    }
    if (!strcmp(op, "Reshape")) {
        int n = const_ints(s, IN(1), out, IR_MAX_RANK);
        if (n < 0) return -1;
        int neg = -1;
        int64_t known = 1;
        for (int i = 0; i < n; i++) {
            if (out[i] == 0 && !ox_attr_int(s, "allowzero", 0)) {
                if (i >= rin) { ox_fail(s, "shape copies dimension %d of a rank-%d input", i, rin); return -1; }
                out[i] = in[i];
            }
            if (out[i] == -1 && neg < 0) neg = i;
            else if (out[i] < 0 || __builtin_mul_overflow(known, out[i], &known)) {
                ox_fail(s, "shape has a bad dimension");
                return -1;
            }
        }
        if (neg >= 0) out[neg] = known ? numel(in, rin) / known : 0;
        if (numel(out, n) != numel(in, rin)) { ox_fail(s, "cannot reshape %lld elements into that shape", (long long)numel(in, rin)); return -1; }
        return *rout = n;
    }
    int64_t axes[IR_MAX_RANK];
    int na = NIN > 1 ? const_ints(s, IN(1), axes, IR_MAX_RANK) : ox_attr_ints(s, "axes", axes, IR_MAX_RANK);
    if (!ok || (NIN > 1 && na < 0)) return -1;
    if (!strcmp(op, "Unsqueeze")) {
        int r = rin + (na < 0 ? 0 : na);
        if (r > IR_MAX_RANK) { ox_fail(s, "rank over %d", IR_MAX_RANK); return -1; }
        bool is_new[IR_MAX_RANK] = {0};
        for (int i = 0; i < na; i++) {
            if (!norm_axis(s, &axes[i], r)) return -1;
            is_new[axes[i]] = true;
        }
        for (int i = 0, k = 0; i < r; i++) out[i] = is_new[i] ? 1 : in[k++];
        return *rout = r;
    }
    bool drop[IR_MAX_RANK] = {0};   /* Squeeze */
    for (int i = 0; i < na; i++) {
        if (!norm_axis(s, &axes[i], rin)) return -1;
        drop[axes[i]] = true;
    }
    int r = 0;
    for (int i = 0; i < rin; i++)
        if (!(na < 0 ? in[i] == 1 : drop[i])) out[r++] = in[i];
    return *rout = r;
}

static bool op_reshape(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t in[IR_MAX_RANK], out[IR_MAX_RANK];
    int rin = ox_shape(s, x, in), rout;
    if (reshape_target(s, in, rin, &rout, out) < 0) return false;
    if (x->c) {
        ox_const *c = ox_const_new(s, x->c->is_int, 0, out);
        *c = *x->c;
        c->rank = rout;
        c->node = IR_NONE;
        memcpy(c->shape, out, sizeof *out * (size_t)rout);
        return set_const(s, 0, c);
    }
    return set_node(s, 0, reshape_to(s, ox_node(s, x), out, rout), false);
}

static bool op_transpose(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], p[IR_MAX_RANK];
    int rank = ox_shape(s, x, shape), perm[IR_MAX_RANK];
    int np = ox_attr_ints(s, "perm", p, IR_MAX_RANK);
    if (np >= 0 && np != rank) { ox_fail(s, "perm has %d entries for rank %d", np, rank); return false; }
    for (int i = 0; i < rank; i++)
        if (np >= 0 && !narrow_int(p[i], 0, rank - 1, &perm[i])) { ox_fail(s, "perm is not a permutation"); return false; }
        else if (np < 0) perm[i] = rank - 1 - i;
    bool used[IR_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
        if (perm[i] < 0 || perm[i] >= rank || used[perm[i]]) { ox_fail(s, "perm is not a permutation"); return false; }
        used[perm[i]] = true;
    }
    if (x->c) {
        int64_t out[IR_MAX_RANK];
        for (int i = 0; i < rank; i++) out[i] = shape[perm[i]];
        ox_const *c = fold_new(s, x->c->is_int, rank, out);
        if (!c) return false;
        int64_t istride[IR_MAX_RANK];
        for (int64_t i = rank - 1, st = 1; i >= 0; i--) { istride[i] = st; st *= shape[i]; }
        for (int64_t f = 0; f < c->count; f++) {
            int64_t rem = f, src = 0;
            for (int i = rank - 1; i >= 0; i--) { src += (rem % out[i]) * istride[perm[i]]; rem /= out[i]; }
            ox_copy_elem(c, f, x->c, src);
        }
        return set_const(s, 0, c);
    }
    if (x->nhwc && rank == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1)
        return set_node(s, 0, x->node, false);
    return set_node(s, 0, transpose_perm(s, ox_node(s, x), perm, rank), false);
}

static bool op_concat(ox_state *s)
{
    bool ok = true, nhwc = true;
    int64_t axis = ox_attr_int(s, "axis", 0);
    if (NIN < 1) { ox_fail(s, "a Concat of no inputs"); return false; }
    ox_val **v = ax_alloc(s->ctx->arena, sizeof *v * (size_t)NIN);
    for (int i = 0; i < NIN; i++) {
        if (!(v[i] = IN(i)) || !ok) { if (ok) ox_fail(s, "an absent input"); return false; }
        nhwc &= !v[i]->c && v[i]->nhwc;
    }
    int64_t shape[IR_MAX_RANK];
    int rank = ox_shape(s, v[0], shape);
    if (!norm_axis(s, &axis, rank)) return false;
    if (all_const(s)) {
        int64_t out[IR_MAX_RANK], total = 0, inner = numel(shape + axis + 1, rank - (int)axis - 1), outer = numel(shape, (int)axis);
        memcpy(out, shape, sizeof shape);
        for (int i = 0; i < NIN; i++) {
            if (v[i]->c->rank != rank) { ox_fail(s, "inputs of different ranks"); return false; }
            total += v[i]->c->shape[axis];
        }
        out[axis] = total;
        ox_const *c = fold_new(s, v[0]->c->is_int, rank, out);
        if (!c) return false;
        int64_t k = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int i = 0; i < NIN; i++) {
                int64_t n = v[i]->c->shape[axis] * inner;
                if (o * n + n > v[i]->c->count) { ox_fail(s, "inputs of different shapes"); return false; }
                for (int64_t j = 0; j < n; j++) ox_copy_elem(c, k++, v[i]->c, o * n + j);
            }
        return set_const(s, 0, c);
    }
    int *src = ax_alloc(s->ctx->arena, sizeof *src * (size_t)NIN);
    ir_attrs a = ir_attrs_unset();
    a.axis = nhwc && rank == 4 ? (axis == 1 ? 3 : axis == 0 ? 0 : (int)axis - 1) : (int)axis;
    for (int i = 0; i < NIN; i++)
        if ((src[i] = nhwc ? v[i]->node : ox_node(s, v[i])) == IR_NONE) return false;
    if (NIN == 1) return set_node(s, 0, src[0], nhwc);
    return set_node(s, 0, ox_add(s, IR_OP_concat, src, NIN, &a), nhwc);
}

/* Gather: folded, an embedding (constant table, computed indices), or a
 * selection along an axis (computed data, constant indices). */
static bool op_gather(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0), *ix = IN(1);
    if (!ok || !x || !ix) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", 0);
    int rank = ox_shape(s, x, shape);
    if (!norm_axis(s, &axis, rank)) return false;
    if (x->c && !ix->c) {
        if (axis != 0 || rank != 2 || x->c->is_int) { ox_unsupported(s, "a Gather of computed indices other than a float table [vocab, dim] on axis 0"); return false; }
        int src[2] = {ix->node, ox_node(s, x)};
        return set_node(s, 0, ox_add(s, IR_OP_embedding, src, 2, NULL), false);
    }
    if (!ix->c) { ox_unsupported(s, "a Gather of computed indices from a computed tensor"); return false; }
    int64_t m = ix->c->count, *idx = ax_alloc(s->ctx->arena, sizeof *idx * (size_t)(m ? m : 1));
    for (int64_t i = 0; i < m; i++) {
        if (!ox_int_at(s, ix->c, i, &idx[i])) return false;
        int64_t given = idx[i];
        if (idx[i] < 0) idx[i] += shape[axis];
        if (idx[i] < 0 || idx[i] >= shape[axis]) { ox_fail(s, "index %lld out of range", (long long)given); return false; }
    }
    int64_t out[IR_MAX_RANK];
    int rout = 0;
    for (int i = 0; i < axis; i++) out[rout++] = shape[i];
    for (int i = 0; i < ix->c->rank; i++) out[rout++] = ix->c->shape[i];
    for (int i = (int)axis + 1; i < rank; i++) out[rout++] = shape[i];
    if (rout > IR_MAX_RANK) { ox_fail(s, "rank over %d", IR_MAX_RANK); return false; }
    if (x->c) {
        ox_const *c = fold_new(s, x->c->is_int, rout, out);
        if (!c) return false;
        int64_t inner = numel(shape + axis + 1, rank - (int)axis - 1), outer = numel(shape, (int)axis), k = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < inner; j++) ox_copy_elem(c, k++, x->c, (o * shape[axis] + idx[i]) * inner + j);
        return set_const(s, 0, c);
    }
    int y = select_axis(s, ox_node(s, x), (int)axis, idx, m);
    return y != IR_NONE && set_node(s, 0, reshape_to(s, y, out, rout), false);
}

/* Slice (opset >= 10: starts, ends, axes, steps as inputs; before: attributes). */
static bool op_slice(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
    int rank = ox_shape(s, x, shape), n, na, ns = -1;
    if (s->opset < 10) {
        n = ox_attr_ints(s, "starts", st, IR_MAX_RANK);
        if (ox_attr_ints(s, "ends", en, IR_MAX_RANK) != n) { ox_fail(s, "starts and ends differ in length"); return false; }
        na = ox_attr_ints(s, "axes", ax, IR_MAX_RANK);
    } else {
        n = const_ints(s, IN(1), st, IR_MAX_RANK);
        if (n < 0 || const_ints(s, IN(2), en, IR_MAX_RANK) != n) { if (s->ctx->errors == 0) ox_fail(s, "starts and ends differ in length"); return false; }
        na = NIN > 3 && s->node->input[3][0] ? const_ints(s, IN(3), ax, IR_MAX_RANK) : -1;
        ns = NIN > 4 && s->node->input[4][0] ? const_ints(s, IN(4), sp, IR_MAX_RANK) : -1;
    }
    if (!ok || n < 0 || (na >= 0 && na != n) || (ns >= 0 && ns != n)) { if (s->ctx->errors == 0) ox_fail(s, "bad starts/ends/axes/steps"); return false; }
    int64_t lo[IR_MAX_RANK], step[IR_MAX_RANK], len[IR_MAX_RANK];
    for (int i = 0; i < rank; i++) lo[i] = 0, step[i] = 1, len[i] = shape[i];
    for (int i = 0; i < n; i++) {
        int64_t a = na >= 0 ? ax[i] : i, d;
        if (!norm_axis(s, &a, rank)) return false;
        d = shape[a];
        int64_t k = ns >= 0 ? sp[i] : 1, b = st[i], e = en[i];
        if (k == 0) { ox_fail(s, "a step of 0"); return false; }
        if (k < -INT64_MAX) k = -INT64_MAX;   /* the same slice; -k stays defined */
        if (b < 0) b += d;   /* no overflow: b < 0 <= d */
        if (e < 0) e += d;
        /* ceil((e - b) / k) as (e - b - 1) / k + 1: the sum e - b + k - 1
         * overflows for steps near INT64_MAX */
        if (k > 0) { b = b < 0 ? 0 : b > d ? d : b; e = e < 0 ? 0 : e > d ? d : e; len[a] = e > b ? (e - b - 1) / k + 1 : 0; }
        else { b = b < 0 ? -1 : b > d - 1 ? d - 1 : b; e = e < -1 ? -1 : e > d - 1 ? d - 1 : e; len[a] = b > e ? (b - e - 1) / -k + 1 : 0; }
        lo[a] = b, step[a] = k;
    }
    if (x->c) {
        ox_const *c = fold_new(s, x->c->is_int, rank, len);
        if (!c) return false;
        for (int64_t f = 0; f < c->count; f++) {
            int64_t rem = f, src = 0, stride = 1;
            for (int i = rank - 1; i >= 0; i--) { src += (lo[i] + (rem % len[i]) * step[i]) * stride; rem /= len[i]; stride *= shape[i]; }
            ox_copy_elem(c, f, x->c, src);
        }
        return set_const(s, 0, c);
    }
    int y = ox_node(s, x);
    for (int a = 0; a < rank && y != IR_NONE; a++) {
        if (len[a] == shape[a] && step[a] == 1) continue;
        int64_t *idx = ax_alloc(s->ctx->arena, sizeof *idx * (size_t)(len[a] ? len[a] : 1));
        for (int64_t i = 0; i < len[a]; i++) idx[i] = lo[a] + i * step[a];
        y = select_axis(s, y, a, idx, len[a]);
    }
    return set_node(s, 0, y, false);
}

/* Split from opset 18 names its count of equal parts in num_outputs (the
 * last part smaller when uneven, as without it), and takes either that or
 * the split sizes (np of them, -1 when absent), not both. */
static bool split_count_ok(ox_state *s, int np, int nout)
{
    int64_t want = ox_attr_int(s, "num_outputs", -1);
    if (want < 0) return true;
    if (np >= 0) {
        ox_fail(s, "both split sizes and num_outputs");
        return false;
    }
    if (want != nout) {
        ox_fail(s, "num_outputs is %lld but the node has %d outputs", (long long)want, nout);
        return false;
    }
    return true;
}

static bool op_split(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", 0), parts[IR_SRC_ROOM];
    int rank = ox_shape(s, x, shape), nout = (int)s->node->n_output;
    if (!norm_axis(s, &axis, rank) || nout < 1 || nout > IR_SRC_ROOM) return false;
    int np = NIN > 1 && s->node->input[1][0] ? const_ints(s, IN(1), parts, IR_SRC_ROOM) : ox_attr_ints(s, "split", parts, IR_SRC_ROOM);
    if (s->ctx->errors || !split_count_ok(s, np, nout)) return false;
    if (np < 0) for (int i = 0; i < nout; i++) parts[i] = (shape[axis] + nout - 1) / nout - (i == nout - 1 ? (shape[axis] + nout - 1) / nout * nout - shape[axis] : 0);
    else if (np != nout) { ox_fail(s, "split has %d sizes for %d outputs", np, nout); return false; }
    int64_t sum = 0;
    bool bad = false;
    for (int i = 0; i < nout; i++) bad |= parts[i] < 0 || __builtin_add_overflow(sum, parts[i], &sum);
    if (bad || sum != shape[axis]) {
        if (bad) { ox_fail(s, "split sizes must not be negative"); return false; }
        ox_fail(s, "split sizes sum to %lld, not the axis length %lld", (long long)sum, (long long)shape[axis]);
        return false;
    }
    for (int i = 0; i < nout; i++)
        if (parts[i] == 0) { ox_unsupported(s, "a Split with an empty part (no zero-size tensors in the IR)"); return false; }
    int x0 = ox_node(s, x);
    for (int i = 0, start = 0; i < nout; i++) {
        int64_t *idx = ax_alloc(s->ctx->arena, sizeof *idx * (size_t)(parts[i] > 0 ? parts[i] : 1));
        for (int64_t k = 0; k < parts[i]; k++) idx[k] = start + k;
        start += (int)parts[i];
        if (!set_node(s, i, select_axis(s, x0, (int)axis, idx, parts[i]), false)) return false;
    }
    return true;
}

static bool op_expand(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    int64_t shape[IR_MAX_RANK];
    int n = ok ? const_ints(s, IN(1), shape, IR_MAX_RANK) : -1;
    if (!ok || !x || n < 0) return false;
    ox_const *ones = fold_new(s, x->c ? x->c->is_int : false, n, shape);
    if (!ones) return false;
    for (int64_t i = 0; i < ones->count; i++) ones->v[i] = x->c && x->c->is_int ? 0 : 0.0;
    if (x->c) return set_const(s, 0, fold_binary(s, x->c, ones, f_add, false));
    ox_val z = {.name = "zeros", .c = ones, .node = IR_NONE, .nchw = IR_NONE};
    return binary_tensor(s, IR_OP_add, x, &z);
}

static bool op_where(ox_state *s)
{
    bool ok = true;
    ox_val *c = IN(0), *a = IN(1), *b = IN(2);
    if (!ok || !c || !a || !b || !all_const(s)) { if (ok) ox_unsupported(s, "a Where of computed tensors"); return false; }
    const ox_const *cs[3] = {c->c, a->c, b->c};
    int64_t shape[IR_MAX_RANK];
    int rank;
    if (!broadcast_shape(s, cs, 3, shape, &rank)) return false;
    ox_const *r = fold_new(s, a->c->is_int && b->c->is_int, rank, shape);
    if (!r) return false;
    for (int64_t i = 0; i < r->count; i++) {
        const ox_const *pick = c->c->v[bcast_index(c->c, shape, rank, i)] != 0 ? a->c : b->c;
        ox_copy_elem(r, i, pick, bcast_index(pick, shape, rank, i));
    }
    return set_const(s, 0, r);
}

/* ---- layers ------------------------------------------------------------ */

static bool op_matmul(ox_state *s)
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
        return set_node(s, 0, ox_add(s, IR_OP_dense, src, 3, NULL), false);
    }
    int src[2] = {ox_node(s, a), ox_node(s, b)};
    return set_node(s, 0, ox_add(s, IR_OP_matmul, src, 2, NULL), false);
}

static bool op_gemm(ox_state *s)
{
    bool ok = true;
    ox_val *a = IN(0), *b = IN(1), *c = IN(2);
    if (!ok || !a || !b) return false;
    double alpha = ox_attr_float(s, "alpha", 1), beta = ox_attr_float(s, "beta", 1);
    int64_t ta = ox_attr_int(s, "transA", 0), tb = ox_attr_int(s, "transB", 0);
    if (!b->c || b->c->rank != 2 || (c && !c->c)) {   /* alpha * A' @ B' + beta * C by matmul */
        int perm[2] = {1, 0};
        int x = ox_node(s, a), w = ox_node(s, b);
        if (x != IR_NONE && ta) x = transpose_perm(s, x, perm, 2);
        if (w != IR_NONE && tb) w = transpose_perm(s, w, perm, 2);
        int y = bin(s, IR_OP_matmul, x, w);
        if (alpha != 1) y = bin(s, IR_OP_mul, y, ox_scalar(s, alpha));
        if (c) {
            int cn = ox_node(s, c);
            if (beta != 1) cn = bin(s, IR_OP_mul, cn, ox_scalar(s, beta));
            y = bin(s, IR_OP_add, y, cn);
        }
        return set_node(s, 0, y, false);
    }
    int x = ox_node(s, a);
    if (x == IR_NONE) return false;
    if (ta) {
        int perm[2] = {1, 0};
        x = transpose_perm(s, x, perm, 2);
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
                cc = fold_binary(s, c->c, sc, f_mul, false);
            }
            ox_val cv = {.name = "C", .c = cc, .node = IR_NONE, .nchw = IR_NONE};
            return cc && binary_tensor(s, IR_OP_add, &yv, &cv);
        }
        for (int64_t i = 0; i < n; i++) bias[i] = beta * c->c->v[c->c->count == 1 ? 0 : i];
        src[2] = ox_param(s, bias, 1, bshape, ax_strdup(s->ctx->arena, c->name));
    }
    return set_node(s, 0, ox_add(s, IR_OP_dense, src, 3, NULL), false);
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
            if (!narrow_int(v[i], 1, 1 << 16, &a->stride[o + i])) goto bad;
    } else if (n >= 0) goto bad;
    if ((n = ox_attr_ints(s, "dilations", v, nd)) == nd) {
        for (int i = 0; i < nd; i++)
            if (!narrow_int(v[i], 1, 1 << 16, &a->dilation[o + i])) goto bad;
    } else if (n >= 0) goto bad;
    if (ceil_pad && (a->dilation[0] != 1 || a->dilation[1] != 1)) { ox_unsupported(s, "dilated pooling"); return false; }
    if ((n = ox_attr_ints(s, "pads", v, 2 * nd)) == 2 * nd) {
        for (int i = 0; i < nd; i++)
            if (!narrow_int(v[i], 0, 1 << 16, &a->pad[o + i]) || !narrow_int(v[nd + i], 0, 1 << 16, &a->pad[o + i + 2])) goto bad;
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
    y = transpose_perm(s, y, to_ncl, 4);
    if (y == IR_NONE) return y;
    const ir_node *yn = ir_at(s->g, y);
    int64_t out[3] = {yn->shape[0], yn->shape[1], yn->shape[3]};
    return reshape_to(s, y, out, 3);
}

static bool op_conv(ox_state *s)
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
    if (!narrow_int(ox_attr_int(s, "group", 1), 1, INT32_MAX, &a.groups)) { ox_fail(s, "group out of range"); return false; }
    a.kernel[0] = rank == 4 ? (int)ws[2] : 1, a.kernel[1] = (int)ws[rank - 1];
    int64_t hw[2] = {rank == 4 ? xs[2] : 1, xs[rank - 1]};
    if (!window_attrs(s, &a, hw, NULL, rank - 2)) return false;
    if (rank == 4) {
        int src[3] = {ox_node_nhwc(s, x), ox_node(s, w), b ? ox_node(s, b) : IR_NONE};
        if (src[0] == IR_NONE || src[1] == IR_NONE) return false;
        return set_node(s, 0, ox_add(s, IR_OP_conv, src, 3, &a), true);
    }
    int64_t x4[4] = {xs[0], xs[1], 1, xs[2]}, w4[4] = {w->c->shape[0], w->c->shape[1], 1, w->c->shape[2]};
    ox_val xv = {.name = x->name, .node = reshape_to(s, ox_node(s, x), x4, 4), .nchw = IR_NONE};
    if (xv.node == IR_NONE) return false;
    int src[3] = {ox_node_nhwc(s, &xv), ox_param(s, w->c->v, 4, w4, ax_strdup(s->ctx->arena, w->name)),
                  b ? ox_node(s, b) : IR_NONE};
    int y = src[0] == IR_NONE ? IR_NONE : ox_add(s, IR_OP_conv, src, 3, &a);   /* [N, 1, L', O] */
    return set_node(s, 0, ncl_of_nhwc(s, y), false);
}

/* x with lo and hi elements of value before and after it along axis: a
 * concatenation with constant blocks. */
static int pad_axis(ox_state *s, int x, int ax, int64_t lo, int64_t hi, double value)
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

/* The pads of a (NHWC H and W) written out with value; a's pads cleared. */
static int pad_window(ox_state *s, int x, ir_attrs *a, double value)
{
    x = pad_axis(s, x, 1, a->pad[0], a->pad[2], value);
    x = pad_axis(s, x, 2, a->pad[1], a->pad[3], value);
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

static bool op_pool(ox_state *s)
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
        xv = (ox_val){.name = x->name, .node = reshape_to(s, ox_node(s, x), x4, 4), .nchw = IR_NONE};
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
        y = bin(s, IR_OP_div, num, den);
    } else {
        if (wide) src = pad_window(s, src, &a, max ? -INFINITY : 0.0);
        y = src == IR_NONE ? src : !max && padded && !include_pad ? mean_excluding_pad(s, src, &a)
                                 : ox_add(s, max ? IR_OP_maxpool : IR_OP_meanpool, &src, 1, &a);
    }
    if (nd == 2 || y == IR_NONE) return set_node(s, 0, y, true);
    return set_node(s, 0, ncl_of_nhwc(s, y), false);
}

/* Global pools as two reductions over H and W of the NHWC tensor. */
static bool op_global_pool(ox_state *s)
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
    return set_node(s, 0, y, true);
}

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
    int mean = mean_axes(s, x, axes, na), d = bin(s, IR_OP_sub, x, mean);
    int var = mean_axes(s, bin(s, IR_OP_mul, d, d), axes, na);
    int scale = reshape_to(s, ox_node(s, v[1]), cs, rank), bias = reshape_to(s, ox_node(s, v[2]), cs, rank);
    int norm = bin(s, IR_OP_div, d, un(s, IR_OP_sqrt, bin(s, IR_OP_add, var, scalar_param(s, eps))));
    if (!set_node(s, 0, bin(s, IR_OP_add, bin(s, IR_OP_mul, norm, scale), bias), false)) return false;
    int64_t c[1] = {shape[1]};
    for (int k = 1; k <= 2 && k < (int)s->node->n_output; k++) {
        if (!s->node->output[k][0]) continue;
        int batch = reshape_to(s, k == 1 ? mean : var, c, 1);
        int run = bin(s, IR_OP_add, bin(s, IR_OP_mul, ox_node(s, v[2 + k]), scalar_param(s, momentum)),
                      bin(s, IR_OP_mul, batch, scalar_param(s, 1 - momentum)));
        if (!set_node(s, k, run, false)) return false;
    }
    return true;
}

/* Det of 2x2 matrices (the trailing two dims): a d - b c. */
static bool op_det(ox_state *s)
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
            e[i][j] = reshape_to(s, slice_axis(s, slice_axis(s, x, rank - 2, i, i + 1, 1), rank - 1, j, j + 1, 1),
                                 shape, rank - 2);
    int y = bin(s, IR_OP_sub, bin(s, IR_OP_mul, e[0][0], e[1][1]), bin(s, IR_OP_mul, e[0][1], e[1][0]));
    if (rank == 2 && y != IR_NONE) {   /* one matrix: a scalar (rank 0), not reshape_to's [1] */
        ir_attrs scalar = ir_attrs_unset();
        scalar.nnewshape = 0;
        y = ox_add(s, IR_OP_reshape, &y, 1, &scalar);
    }
    return set_node(s, 0, y, false);
}

static bool op_batchnorm(ox_state *s)
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
    else if (rank >= 2) x = axis_last(s, ox_node(s, v[0]), rank, 1, back);
    else { ox_unsupported(s, "BatchNormalization of a 1-D input"); return false; }
    ir_attrs a = ir_attrs_unset();
    a.eps = ox_attr_float(s, "epsilon", 1e-5);
    int src[5] = {x};
    for (int i = 1; i < 5; i++) src[i] = ox_node(s, v[i]);
    int y = ox_add(s, IR_OP_batchnorm, src, 5, &a);
    if (y == IR_NONE) return false;
    return set_node(s, 0, nhwc ? y : transpose_perm(s, y, back, rank), nhwc);
}

static bool op_softmax(ox_state *s)
{
    bool ok = true, lg = !strcmp(s->node->op_type, "LogSoftmax");
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", s->opset >= 13 ? -1 : 1);
    int rank = ox_shape(s, x, shape), y = ox_node(s, x);
    if (!norm_axis(s, &axis, rank) || y == IR_NONE) return false;
    ir_attrs a = ir_attrs_unset();
    ir_op op = lg ? IR_OP_log_softmax : IR_OP_softmax;
    if (s->opset < 13 && axis != rank - 1) {   /* over the flattened dims from axis */
        int64_t flat[2] = {numel(shape, (int)axis), numel(shape + axis, rank - (int)axis)};
        a.axis = 1;
        y = reshape_to(s, y, flat, 2);
        y = y == IR_NONE ? y : ox_add(s, op, &y, 1, &a);
        return set_node(s, 0, y == IR_NONE ? y : reshape_to(s, y, shape, rank), false);
    }
    a.axis = (int)axis;
    return set_node(s, 0, ox_add(s, op, &y, 1, &a), false);
}

static bool op_layernorm(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0), *w = IN(1), *b = IN(2);
    if (!ok || !x || !w) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", -1);
    int rank = ox_shape(s, x, shape);
    if (!norm_axis(s, &axis, rank)) return false;
    int64_t d = numel(shape + axis, rank - (int)axis), flat[IR_MAX_RANK];
    int64_t ws[IR_MAX_RANK];
    if (ox_shape(s, w, ws) < 1 || numel(ws, ox_shape(s, w, ws)) != d) {
        ox_unsupported(s, "a scale that does not cover the normalised dims exactly");
        return false;
    }
    if (b && numel(ws, ox_shape(s, b, ws)) != d) {
        ox_unsupported(s, "a bias that does not cover the normalised dims exactly");
        return false;
    }
    for (int i = 0; i < axis; i++) flat[i] = shape[i];
    flat[axis] = d;
    ir_attrs a = ir_attrs_unset();
    a.eps = ox_attr_float(s, "epsilon", 1e-5);
    int xn = ox_node(s, x);
    if (axis != rank - 1) xn = reshape_to(s, xn, flat, (int)axis + 1);
    int wn = w->c ? ox_param(s, w->c->v, 1, &d, ax_strdup(s->ctx->arena, w->name)) : reshape_to(s, ox_node(s, w), &d, 1);
    int bn;
    if (!b) {
        double *zeros = ax_alloc(s->ctx->arena, sizeof *zeros * (size_t)d);
        bn = ox_param(s, zeros, 1, &d, NULL);
    } else bn = b->c ? ox_param(s, b->c->v, 1, &d, ax_strdup(s->ctx->arena, b->name)) : reshape_to(s, ox_node(s, b), &d, 1);
    int src[3] = {xn, wn, bn};
    int y = ox_add(s, IR_OP_layernorm, src, 3, &a);
    if (y != IR_NONE && axis != rank - 1) y = reshape_to(s, y, shape, rank);
    if (!set_node(s, 0, y, false)) return false;
    if (s->node->n_output < 2) return true;
    /* Mean and InvStdDev: the statistics, normalised dims kept as 1 */
    ir_attrs r = ir_attrs_unset();
    r.axis = (int)axis;
    int mean = xn == IR_NONE ? xn : ox_add(s, IR_OP_mean, &xn, 1, &r);
    int dev = bin(s, IR_OP_sub, xn, mean), sq = bin(s, IR_OP_mul, dev, dev);
    int var = sq == IR_NONE ? sq : ox_add(s, IR_OP_mean, &sq, 1, &r);
    int inv = bin(s, IR_OP_div, ox_scalar(s, 1.0), un(s, IR_OP_sqrt, bin(s, IR_OP_add, var, ox_scalar(s, a.eps))));
    int64_t kept[IR_MAX_RANK];
    for (int i = 0; i < rank; i++) kept[i] = i < axis ? shape[i] : 1;
    int outs[2] = {mean, inv};
    for (int k = 0; k < 2 && k + 1 < (int)s->node->n_output; k++)
        if (s->node->output[k + 1][0] && !set_node(s, k + 1, outs[k] == IR_NONE ? IR_NONE : reshape_to(s, outs[k], kept, rank), false))
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
    return ok && v ? const_ints(s, v, axes, IR_MAX_RANK) : -1;
}

/* ReduceMean/Sum/Max/Min/Prod (and the L1/L2/log forms) as one single-axis
 * reduction per axis. */
static bool op_reduce(ox_state *s)
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
    if (square) y = bin(s, IR_OP_mul, y, y);
    if (l1) y = un(s, IR_OP_abs, y);
    if (lse) y = un(s, IR_OP_exp, y);
    for (int i = 0; i < na && y != IR_NONE; i++) {
        if (!norm_axis(s, &axes[i], rank)) return false;
        if (reduced[axes[i]]) continue;
        reduced[axes[i]] = true;
        ir_attrs a = ir_attrs_unset();
        a.axis = (int)axes[i];
        y = ox_add(s, ir, &y, 1, &a);
    }
    if (!strcmp(op, "ReduceL2")) y = un(s, IR_OP_sqrt, y);
    if (lse || logsum) y = un(s, IR_OP_log, y);
    if (y == IR_NONE) return false;
    if (ox_attr_int(s, "keepdims", 1)) return set_node(s, 0, y, false);
    int64_t out[IR_MAX_RANK];
    int r = 0;
    for (int i = 0; i < rank; i++)
        if (!reduced[i]) out[r++] = shape[i];
    return set_node(s, 0, reshape_to(s, y, out, r), false);
}

/* ---- composites of IR ops ------------------------------------------------ */

/* Elementwise ops written with the IR's: Softsign, Selu, Celu, HardSigmoid,
 * HardSwish, ThresholdedRelu-free set; Max/Min of tensors; PRelu. */
static bool op_composite(ox_state *s)
{
    bool ok = true;
    const char *op = s->node->op_type;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    bool nhwc = !xv->c && xv->nhwc;
    int x = nhwc ? xv->node : ox_node(s, xv), y = IR_NONE;
    if (x == IR_NONE) return false;
    if (!strcmp(op, "Softsign"))
        y = bin(s, IR_OP_div, x, bin(s, IR_OP_add, un(s, IR_OP_abs, x), scalar_param(s, 1)));
    else if (!strcmp(op, "Selu")) {
        ir_attrs a = ir_attrs_unset();
        a.alpha = ox_attr_float(s, "alpha", 1.67326319217681884765625);
        y = bin(s, IR_OP_mul, ox_add(s, IR_OP_elu, &x, 1, &a), scalar_param(s, ox_attr_float(s, "gamma", 1.05070102214813232421875)));
    } else if (!strcmp(op, "Celu")) {
        double alpha = ox_attr_float(s, "alpha", 1.0);
        ir_attrs a = ir_attrs_unset();
        a.alpha = 1.0;
        int t = bin(s, IR_OP_div, x, scalar_param(s, alpha));
        y = t == IR_NONE ? t : bin(s, IR_OP_mul, ox_add(s, IR_OP_elu, &t, 1, &a), scalar_param(s, alpha));
    } else if (!strcmp(op, "HardSwish")) {   /* x * clamp(x / 6 + 1/2, 0, 1): torch's */
        y = un(s, IR_OP_hardswish, x);
    } else if (!strcmp(op, "HardSigmoid")) {
        double alpha = ox_attr_float(s, "alpha", 0.2), beta = ox_attr_float(s, "beta", 0.5);
        /* clamp(alpha x + beta, 0, 1) = relu6(6 alpha x + 6 beta) / 6 */
        int t = bin(s, IR_OP_add, bin(s, IR_OP_mul, x, scalar_param(s, 6 * alpha)), scalar_param(s, 6 * beta));
        y = bin(s, IR_OP_div, un(s, IR_OP_relu6, t), scalar_param(s, 6));
    } else if (!strcmp(op, "Max") || !strcmp(op, "Min") || !strcmp(op, "PRelu")) {
        y = x;
        nhwc = false;
        y = ox_node(s, xv);
        for (int i = 1; i < NIN && y != IR_NONE; i++) {
            ox_val *b = IN(i);
            if (!ok || !b) return false;
            if (b->c && b->c->is_int) { ox_unsupported(s, "an integer constant operand"); return false; }
            int bn = ox_node(s, b);
            const ir_node *yn = ir_at(s->g, y);
            if (op[0] == 'P' && b->c && b->c->rank == 1 && yn->rank > 2 && b->c->count == yn->shape[1] &&
                b->c->count != yn->shape[yn->rank - 1]) {   /* a slope per channel (old exports) */
                int64_t cs[IR_MAX_RANK];
                for (int k = 0; k < yn->rank - 1; k++) cs[k] = k == 0 ? b->c->count : 1;
                bn = reshape_to(s, bn, cs, yn->rank - 1);
            }
            if (op[0] == 'P')   /* relu(x) - slope * relu(-x) */
                y = bin(s, IR_OP_sub, un(s, IR_OP_relu, y), bin(s, IR_OP_mul, bn, un(s, IR_OP_relu, un(s, IR_OP_neg, y))));
            else y = max_min(s, op[1] == 'a', y, bn);
        }
    }
    return set_node(s, 0, y, nhwc);
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
    int x = nhwc ? ox_node_nhwc(s, xv) : axis_last(s, ox_node(s, xv), rank, 1, back);
    ir_attrs a = ir_attrs_unset();
    a.groups = (int)groups;
    a.eps = ox_attr_float(s, "epsilon", 1e-5);
    int64_t ws[IR_MAX_RANK];
    bool per_group = groups != c && !strcmp(s->node->op_type, "GroupNormalization") && s->opset < 21;
    int src[3] = {x, per_group ? group_weights(s, w, c, groups) : ox_node(s, w),
                  per_group ? group_weights(s, b, c, groups) : ox_node(s, b)};
    for (int i = 1; i < 3; i++)   /* [C] as the IR wants; ONNX's shape rule allows [C, 1, ...] too */
        if (src[i] != IR_NONE && ox_shape(s, i == 1 ? w : b, ws) != 1) src[i] = reshape_to(s, src[i], &c, 1);
    if (src[0] == IR_NONE || src[1] == IR_NONE || src[2] == IR_NONE) return false;
    int y = ox_add(s, IR_OP_groupnorm, src, 3, &a);
    return set_node(s, 0, nhwc ? y : transpose_perm(s, y, back, rank), nhwc);
}

static bool op_instancenorm(ox_state *s) { return channel_norm(s, -1); }

/* GroupNormalization (opset 18; scale and bias per group before opset 21,
 * per channel since): the IR's groupnorm. */
static bool op_groupnorm(ox_state *s) { return channel_norm(s, ox_attr_int(s, "num_groups", 0)); }

/* 1 where t > 0, else 0 (exact: relu(sign(t))). */
static int step_positive(ox_state *s, int t)
{
    return un(s, IR_OP_relu, un(s, IR_OP_sign, t));
}

/* ThresholdedRelu x * [x > alpha]; Shrink [x < -l] (x + b) + [x > l] (x - b). */
static bool op_piecewise(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    bool nhwc = !xv->c && xv->nhwc;
    int x = nhwc ? xv->node : ox_node(s, xv), y;
    if (!strcmp(s->node->op_type, "ThresholdedRelu")) {
        double alpha = ox_attr_float(s, "alpha", 1.0);
        y = bin(s, IR_OP_mul, x, step_positive(s, bin(s, IR_OP_sub, x, scalar_param(s, alpha))));
    } else {
        double l = ox_attr_float(s, "lambd", 0.5), b = ox_attr_float(s, "bias", 0.0);
        int below = step_positive(s, bin(s, IR_OP_sub, scalar_param(s, -l), x));
        int above = step_positive(s, bin(s, IR_OP_sub, x, scalar_param(s, l)));
        y = bin(s, IR_OP_add, bin(s, IR_OP_mul, below, bin(s, IR_OP_add, x, scalar_param(s, b))),
                bin(s, IR_OP_mul, above, bin(s, IR_OP_sub, x, scalar_param(s, b))));
    }
    return set_node(s, 0, y, nhwc);
}

/* Hardmax: 1 at the first maximum along the axis (opset < 13: of the dims
 * flattened from axis), else 0.  eq = [x == max] = 1 - sign(max - x); the
 * running count of eq along the axis (a lower-triangular dense) is 1 only up
 * to the first maximum, so eq * (1 - sign(count - 1)) keeps that one. */
static bool op_hardmax(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", s->opset >= 13 ? -1 : 1);
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (!norm_axis(s, &axis, rank) || x == IR_NONE) return false;
    if (s->opset < 13) {
        int64_t flat[2] = {numel(shape, (int)axis), numel(shape + axis, rank - (int)axis)};
        x = reshape_to(s, x, flat, 2);
        axis = 1;
    }
    if (x == IR_NONE) return false;
    int64_t d = ir_at(s->g, x)->shape[axis];
    ir_attrs a = ir_attrs_unset();
    a.axis = (int)axis;
    int max = ox_add(s, IR_OP_maximum, &x, 1, &a);
    int eq = bin(s, IR_OP_sub, scalar_param(s, 1), un(s, IR_OP_sign, bin(s, IR_OP_sub, max, x)));
    if (eq == IR_NONE || d > 4096) { if (!s->ctx->errors) ox_unsupported(s, "a Hardmax axis this long"); return false; }
    double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(d * d));
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j <= i; j++) w[i * d + j] = 1.0;
    int count = weigh_axis(s, eq, (int)axis, w, d);
    int first = bin(s, IR_OP_sub, scalar_param(s, 1), un(s, IR_OP_sign, bin(s, IR_OP_sub, count, scalar_param(s, 1))));
    int y = bin(s, IR_OP_mul, eq, first);
    return set_node(s, 0, y == IR_NONE ? y : reshape_to(s, y, shape, rank), false);
}

/* ArgMax/ArgMin over one axis: the IR's argmax (Int64, the first index of
 * the largest element, a NaN counting as the largest), of -x for ArgMin;
 * keepdims=0 drops the axis.  select_last_index=1 has no IR op. */
static bool op_argmax(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", 0);
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (!norm_axis(s, &axis, rank) || x == IR_NONE) return false;
    if (ox_attr_int(s, "select_last_index", 0)) {
        ox_unsupported(s, "select_last_index=1 (the last of equal extremes)");
        return false;
    }
    if (!strcmp(s->node->op_type, "ArgMin")) x = un(s, IR_OP_neg, x);
    ir_attrs a = ir_attrs_unset();
    a.axis = (int)axis;
    int y = x == IR_NONE ? IR_NONE : ox_add(s, IR_OP_argmax, &x, 1, &a);
    if (y == IR_NONE) return false;
    if (ox_attr_int(s, "keepdims", 1)) return set_node(s, 0, y, false);
    for (int i = (int)axis; i + 1 < rank; i++) shape[i] = shape[i + 1];
    return set_node(s, 0, reshape_to(s, y, shape, rank - 1), false);
}

/* CumSum along a constant axis: a dense along it with the 0/1 lower (or,
 * reverse=1, upper) triangle, its diagonal left out when exclusive=1. */
static bool op_cumsum(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0), *av = IN(1);
    if (!ok || !xv || !av) return false;
    if (!av->c) { ox_unsupported(s, "a computed axis"); return false; }
    int64_t shape[IR_MAX_RANK], axis;
    if (!const_int0(s, av, &axis)) return false;
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (!norm_axis(s, &axis, rank) || x == IR_NONE) return false;
    const int64_t d = shape[axis];
    if (d > 2048) { ox_unsupported(s, "a CumSum axis longer than 2048"); return false; }
    const bool exclusive = ox_attr_int(s, "exclusive", 0), reverse = ox_attr_int(s, "reverse", 0);
    double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(d * d));
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j < d; j++)
            w[i * d + j] = (reverse ? j > i : j < i) || (j == i && !exclusive);
    return set_node(s, 0, weigh_axis(s, x, (int)axis, w, d), false);
}

/* Trilu: x times a constant 0/1 mask of its last two dims, keeping
 * j - i >= k (upper=1) or j - i <= k (upper=0); k a constant input. */
static bool op_trilu(ox_state *s)
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
    if (kv && !const_int0(s, kv, &k)) return false;   /* exact: k = INT64_MAX keeps nothing (upper) */
    const int64_t rows = shape[rank - 2], cols = shape[rank - 1];
    const bool upper = ox_attr_int(s, "upper", 1);
    double *mask = ax_alloc(s->ctx->arena, sizeof *mask * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) mask[i * cols + j] = upper ? j - i >= k : j - i <= k;
    return set_node(s, 0, bin(s, IR_OP_mul, x, ox_param(s, mask, 2, shape + rank - 2, NULL)), false);
}

/* LpNormalization: x / (sum |x|^p)^(1/p) along axis, p 1 or 2 (no epsilon,
 * as ONNX: a zero line divides by zero). */
static bool op_lpnorm(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", -1), p = ox_attr_int(s, "p", 2);
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    if (!norm_axis(s, &axis, rank) || x == IR_NONE) return false;
    if (p != 1 && p != 2) { ox_fail(s, "LpNormalization with p=%lld (ONNX allows 1 and 2)", (long long)p); return false; }
    ir_attrs a = ir_attrs_unset();
    a.axis = (int)axis;
    int t = p == 1 ? un(s, IR_OP_abs, x) : bin(s, IR_OP_mul, x, x);
    int norm = t == IR_NONE ? t : ox_add(s, IR_OP_sum, &t, 1, &a);
    if (p == 2) norm = un(s, IR_OP_sqrt, norm);
    return set_node(s, 0, bin(s, IR_OP_div, x, norm), false);
}

/* MeanVarianceNormalization: (x - mean) / sqrt(var + 1e-9) over axes. */
static bool op_mvn(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t shape[IR_MAX_RANK], axes[IR_MAX_RANK] = {0, 2, 3};
    int rank = ox_shape(s, xv, shape), x = ox_node(s, xv);
    int na = ox_attr_ints(s, "axes", axes, IR_MAX_RANK);
    if (na < 0) na = 3;
    for (int i = 0; i < na; i++)
        if (!norm_axis(s, &axes[i], rank)) return false;
    int mean = mean_axes(s, x, axes, na), d = bin(s, IR_OP_sub, x, mean);
    int var = mean_axes(s, bin(s, IR_OP_mul, d, d), axes, na);
    int y = bin(s, IR_OP_div, d, un(s, IR_OP_sqrt, bin(s, IR_OP_add, var, scalar_param(s, 1e-9))));
    return set_node(s, 0, y, false);
}

/* LRN: x / (bias + alpha / size * sum of x^2 over the size channels around
 * c)^beta; the window sum is a band dense along the channels. */
static bool op_lrn(ox_state *s)
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
    int sum = weigh_axis(s, bin(s, IR_OP_mul, x, x), 1, w, c);
    int den = bin(s, IR_OP_add, scalar_param(s, bias), bin(s, IR_OP_mul, sum, scalar_param(s, alpha / (double)size)));
    return set_node(s, 0, bin(s, IR_OP_div, x, bin(s, IR_OP_pow, den, scalar_param(s, beta))), false);
}

/* w[0] of a [1, r, c] tensor as [c, r] (a weight transposed for matmul). */
static int rnn_weight_t(ox_state *s, ox_val *w, int64_t r, int64_t c)
{
    int64_t shape[2] = {r, c};
    static const int perm[2] = {1, 0};
    return transpose_perm(s, reshape_to(s, ox_node(s, w), shape, 2), perm, 2);
}

/* RNN (forward, tanh, no sequence_lens or clip) unrolled over the sequence:
 * H_t = tanh(X_t W^T + H_{t-1} R^T + Wb + Rb); Y stacks the H_t, Y_h is the last. */
static bool op_rnn(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0), *w = IN(1), *r = IN(2), *b = IN(3), *lens = IN(4), *h0 = IN(5);
    if (!ok || !xv || !w || !r) return false;
    int64_t xs[IR_MAX_RANK];
    bool batch_first = ox_attr_int(s, "layout", 0) == 1;
    int x = ox_node(s, xv);
    if (ox_shape(s, xv, xs) != 3 || x == IR_NONE) { ox_unsupported(s, "an RNN input that is not 3-D"); return false; }
    int64_t seq = batch_first ? xs[1] : xs[0], batch = batch_first ? xs[0] : xs[1], in = xs[2];
    const Onnx__AttributeProto *act = ox_attr(s, "activations");
    bool plain = !strcmp(ox_attr_str(s, "direction", "forward"), "forward") && !ox_attr(s, "clip") &&
                 (!act || (act->n_strings == 1 && act->strings[0].len == 4 && !memcmp(act->strings[0].data, "Tanh", 4)));
    for (int64_t i = 0; lens && plain && i < (lens->c ? lens->c->count : 0); i++) plain = lens->c->is_int && lens->c->iv[i] == seq;
    if (!plain || (lens && !lens->c)) {   /* sequence_lens only as constants equal to the length */
        ox_unsupported(s, "an RNN that is not forward tanh with full sequences and no clip");
        return false;
    }
    static const int swap01[3] = {1, 0, 2};
    if (batch_first) x = transpose_perm(s, x, swap01, 3);
    int64_t hid = ox_attr_int(s, "hidden_size", 0);
    if (hid < 1 || hid > 1 << 16 || seq < 1 || seq > 4096) { ox_unsupported(s, "this RNN size"); return false; }
    int wt = rnn_weight_t(s, w, hid, in), rt = rnn_weight_t(s, r, hid, hid), bias = IR_NONE;
    if (b) {
        int64_t two[1] = {2 * hid};
        int bb = reshape_to(s, ox_node(s, b), two, 1);
        bias = bin(s, IR_OP_add, slice_axis(s, bb, 0, 0, hid, 1), slice_axis(s, bb, 0, hid, 2 * hid, 1));
    }
    int64_t bh[2] = {batch, hid}, step_shape[4] = {1, 1, batch, hid};
    int h;
    if (h0) h = reshape_to(s, ox_node(s, h0), bh, 2);
    else h = ox_param(s, ax_alloc(s->ctx->arena, sizeof(double) * (size_t)(batch * hid)), 2, bh, NULL);
    int *steps = ax_alloc(s->ctx->arena, sizeof *steps * (size_t)seq);
    for (int64_t t = 0; t < seq && h != IR_NONE; t++) {
        int64_t xt_shape[2] = {batch, in};
        int xt = reshape_to(s, slice_axis(s, x, 0, t, t + 1, 1), xt_shape, 2);
        int pre = bin(s, IR_OP_add, bin(s, IR_OP_matmul, xt, wt), bin(s, IR_OP_matmul, h, rt));
        if (bias != IR_NONE) pre = bin(s, IR_OP_add, pre, bias);
        h = un(s, IR_OP_tanh, pre);
        steps[t] = reshape_to(s, h, step_shape, 4);
        if (steps[t] == IR_NONE) return false;
    }
    if (h == IR_NONE) return false;
    if (s->node->n_output > 0 && s->node->output[0][0]) {
        ir_attrs a = ir_attrs_unset();
        a.axis = 0;
        int y = seq == 1 ? steps[0] : ox_add(s, IR_OP_concat, steps, (int)seq, &a);
        static const int to_batch_first[4] = {2, 0, 1, 3};
        if (batch_first) y = transpose_perm(s, y, to_batch_first, 4);
        if (!set_node(s, 0, y, false)) return false;
    }
    if (s->node->n_output > 1 && s->node->output[1][0]) {
        int64_t hs[3] = {1, batch, hid}, hs_bf[3] = {batch, 1, hid};
        if (!set_node(s, 1, reshape_to(s, h, batch_first ? hs_bf : hs, 3), false)) return false;
    }
    return true;
}

/* ---- GRU, LSTM: the IR's gru/lstm (PyTorch's gate order), one per direction */

/* v's shape is want[0..rank); else a located error naming it. */
static bool rnn_shape_is(ox_state *s, ox_val *v, const char *what, const int64_t *want, int rank)
{
    int64_t got[IR_MAX_RANK];
    bool same = ox_shape(s, v, got) == rank;
    for (int i = 0; same && i < rank; i++) same = got[i] == want[i];
    if (!same) ox_fail(s, "%s '%s' does not have the shape that X, direction and hidden_size imply", what, v->name);
    return same;
}

/* Part p of direction d of an ONNX recurrent tensor, viewed as rows of
 * [dirs, parts, G gates, H, cols], with the gate blocks in PyTorch's order
 * (block k is ONNX block order[k]): [G*H, cols], or [G*H] when cols is 0.
 * Constants are reordered at import; a computed tensor by slices. */
static int rnn_gates(ox_state *s, ox_val *v, int d, int p, int parts, int gates, int64_t hid,
                     int64_t cols, const int *order)
{
    const int64_t c = cols ? cols : 1, block = hid * c, out[2] = {gates * hid, cols};
    const int64_t first = ((int64_t)d * parts + p) * gates;
    if (v->c) {
        double *vals = ax_alloc(s->ctx->arena, sizeof *vals * (size_t)(gates * block));
        for (int k = 0; k < gates; k++)
            memcpy(vals + k * block, v->c->v + (first + order[k]) * block, sizeof *vals * (size_t)block);
        return ox_param(s, vals, cols ? 2 : 1, out, NULL);
    }
    int64_t shape[IR_MAX_RANK], view[2] = {0, block};
    view[0] = numel(shape, ox_shape(s, v, shape)) / block;
    int x = reshape_to(s, ox_node(s, v), view, 2), src[4];
    for (int k = 0; k < gates; k++) src[k] = slice_axis(s, x, 0, first + order[k], first + order[k] + 1, 1);
    ir_attrs a = ir_attrs_unset();
    a.axis = 0;
    for (int k = 0; k < gates; k++)
        if (src[k] == IR_NONE) return IR_NONE;
    return reshape_to(s, ox_add(s, IR_OP_concat, src, gates, &a), out, cols ? 2 : 1);
}

/* Direction d of an initial state [dirs, batch, H] ([batch, dirs, H] in
 * layout 1) as [batch, H]. */
static int rnn_state(ox_state *s, ox_val *v, int d, bool batch_first, int64_t batch, int64_t hid)
{
    if (!v) return IR_NONE;
    const int64_t shape[2] = {batch, hid};
    return reshape_to(s, slice_axis(s, ox_node(s, v), batch_first ? 1 : 0, d, d + 1, 1), shape, 2);
}

/* What of the node the IR's gru/lstm cannot express, or NULL: activations
 * other than the defaults, clip, input_forget, peepholes, sequence_lens
 * other than constants equal to the length. */
static const char *rnn_unsupported(ox_state *s, bool lstm, int dirs, int64_t seq, ox_val *lens)
{
    static const char *const acts[3] = {"Sigmoid", "Tanh", "Tanh"};
    const int nact = lstm ? 3 : 2;
    const Onnx__AttributeProto *act = ox_attr(s, "activations");
    if (act && act->n_strings != (size_t)(nact * dirs)) return "activations other than the defaults";
    for (size_t i = 0; act && i < act->n_strings; i++)
        if (act->strings[i].len != strlen(acts[i % nact]) ||
            memcmp(act->strings[i].data, acts[i % nact], act->strings[i].len))
            return "activations other than the defaults";
    if (ox_attr(s, "clip")) return "clip";
    if (lstm && ox_attr_int(s, "input_forget", 0)) return "input_forget";
    if (lstm && NIN > 7 && s->node->input[7][0]) return "peepholes (input P)";
    if (lens && !lens->c) return "sequence_lens that is not a constant";
    for (int64_t i = 0; lens && i < lens->c->count; i++)
        if (!lens->c->is_int || lens->c->iv[i] != seq) return "sequence_lens shorter than the sequence";
    return NULL;
}

/* The directions' values joined along axis (one direction: itself). */
static int rnn_join(ox_state *s, const int *v, int dirs, int axis)
{
    ir_attrs cat = ir_attrs_unset();
    cat.axis = axis;
    if (dirs == 1 || v[0] == IR_NONE) return v[0];
    return v[1] == IR_NONE ? IR_NONE : ox_add(s, IR_OP_concat, v, 2, &cat);
}

/* Output out (Y_h, Y_c) as [dirs, batch, H] ([batch, dirs, H] in layout
 * 1): each direction's last step of v[d] [batch, seq, H]. */
static bool rnn_last_step(ox_state *s, int out, const int *v, int dirs, const bool *reverse,
                          bool batch_first, const int64_t *bsh)
{
    static const int swap01[3] = {1, 0, 2};
    const int64_t hn[3] = {bsh[0], 1, bsh[2]};
    int last[2];
    for (int d = 0; d < dirs; d++) {
        const int64_t t = reverse[d] ? 0 : bsh[1] - 1;
        last[d] = reshape_to(s, slice_axis(s, v[d], 1, t, t + 1, 1), hn, 3);
    }
    int h = rnn_join(s, last, dirs, 1);
    if (!batch_first) h = transpose_perm(s, h, swap01, 3);
    return set_node(s, out, h, false);
}

/* Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]) from each
 * direction's [batch, seq, H]. */
static bool rnn_sequence(ox_state *s, const int *y, int dirs, bool batch_first, const int64_t *bsh)
{
    static const int seq_first[4] = {1, 2, 0, 3};
    const int64_t step[4] = {bsh[0], bsh[1], 1, bsh[2]};
    int parts[2];
    for (int d = 0; d < dirs; d++) parts[d] = reshape_to(s, y[d], step, 4);
    int all = rnn_join(s, parts, dirs, 2);
    if (!batch_first) all = transpose_perm(s, all, seq_first, 4);
    return set_node(s, 0, all, false);
}

/* Whether the current node's output i is named and read. */
static bool output_wanted(ox_state *s, int i)
{
    return s->node->n_output > (size_t)i && s->node->output[i][0] && ox_value_used(s, s->node->output[i]);
}

/* GRU and LSTM (opsets 7-14): per direction one IR gru/lstm over X as
 * [batch, seq, in], weights put in PyTorch's gate order (GRU z, r, h ->
 * r, z, n; LSTM i, o, f, c -> i, f, g, o). */
static bool op_recurrent(ox_state *s, bool lstm)
{
    bool ok = true;
    ox_val *xv = IN(0), *w = IN(1), *r = IN(2), *b = IN(3), *lens = IN(4), *h0 = IN(5);
    ox_val *c0 = lstm ? IN(6) : NULL;
    if (!ok || !xv || !w || !r) return false;
    static const int gru_order[3] = {1, 0, 2}, lstm_order[4] = {0, 2, 3, 1};
    const int gates = lstm ? 4 : 3, *order = lstm ? lstm_order : gru_order;
    const bool batch_first = ox_attr_int(s, "layout", 0) == 1;
    const char *dir = ox_attr_str(s, "direction", "forward");
    const int dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    int64_t xs[IR_MAX_RANK], hid = ox_attr_int(s, "hidden_size", 0);
    int x = ox_node(s, xv);
    if (x == IR_NONE || ox_shape(s, xv, xs) != 3) { ox_unsupported(s, "a recurrent input that is not 3-D"); return false; }
    const int64_t seq = batch_first ? xs[1] : xs[0], batch = batch_first ? xs[0] : xs[1], in = xs[2];
    const char *why = strcmp(dir, "forward") && strcmp(dir, "reverse") && dirs == 1 ? "this direction"
                      : hid < 1 || hid > 1 << 16 || seq > 1 << 20 ? "this hidden_size or length"
                      : rnn_unsupported(s, lstm, dirs, seq, lens);
    if (why) { ox_unsupported(s, why); return false; }
    const int64_t wsh[3] = {dirs, gates * hid, in}, rsh[3] = {dirs, gates * hid, hid};
    const int64_t bsh[2] = {dirs, 2 * gates * hid}, hsh[3] = {batch_first ? batch : dirs, batch_first ? dirs : batch, hid};
    if (!rnn_shape_is(s, w, "W", wsh, 3) || !rnn_shape_is(s, r, "R", rsh, 3) || (b && !rnn_shape_is(s, b, "B", bsh, 2)) ||
        (h0 && !rnn_shape_is(s, h0, "initial_h", hsh, 3)) || (c0 && !rnn_shape_is(s, c0, "initial_c", hsh, 3)))
        return false;
    static const int swap01[3] = {1, 0, 2};
    if (!batch_first) x = transpose_perm(s, x, swap01, 3);
    int y[2], cells[2];
    bool reverse[2];
    const bool want_c = lstm && output_wanted(s, 2);
    for (int d = 0; d < dirs; d++) {
        int src[7] = {x, rnn_gates(s, w, d, 0, 1, gates, hid, in, order), rnn_gates(s, r, d, 0, 1, gates, hid, hid, order),
                      b ? rnn_gates(s, b, d, 0, 2, gates, hid, 0, order) : IR_NONE,
                      b ? rnn_gates(s, b, d, 1, 2, gates, hid, 0, order) : IR_NONE,
                      rnn_state(s, h0, d, batch_first, batch, hid), rnn_state(s, c0, d, batch_first, batch, hid)};
        if (src[1] == IR_NONE || src[2] == IR_NONE) return false;
        ir_attrs a = ir_attrs_unset();
        reverse[d] = d == 1 || !strcmp(dir, "reverse");
        a.reverse = reverse[d];
        a.linear_before_reset = !lstm && ox_attr_int(s, "linear_before_reset", 0) != 0;
        y[d] = ox_add(s, lstm ? IR_OP_lstm : IR_OP_gru, src, lstm ? 7 : 6, &a);
        a.cell = true;   /* Y_c: the same LSTM again, keeping c (only when read) */
        cells[d] = want_c ? ox_add(s, IR_OP_lstm, src, 7, &a) : IR_NONE;
        if (y[d] == IR_NONE || (want_c && cells[d] == IR_NONE)) return false;
    }
    const int64_t dims[3] = {batch, seq, hid};
    return (!output_wanted(s, 0) || rnn_sequence(s, y, dirs, batch_first, dims)) &&
           (!output_wanted(s, 1) || rnn_last_step(s, 1, y, dirs, reverse, batch_first, dims)) &&
           (!want_c || rnn_last_step(s, 2, cells, dirs, reverse, batch_first, dims));
}

static bool op_gru(ox_state *s) { return op_recurrent(s, false); }
static bool op_lstm(ox_state *s) { return op_recurrent(s, true); }

/* Pad's axes input (opset 18): the np pads given for those axes, begins
 * then ends, spread over all rank axes (0 for the others); np becomes 2 rank. */
static bool pads_of_axes(ox_state *s, int64_t *pads, int *np, int rank)
{
    bool ok = true;
    int64_t axes[IR_MAX_RANK], full[2 * IR_MAX_RANK] = {0};
    int na = const_ints(s, IN(3), axes, IR_MAX_RANK);
    if (!ok || na < 0) return false;
    if (*np != 2 * na) {
        ox_fail(s, "pads has %d values for %d axes", *np, na);
        return false;
    }
    if (!norm_axes(s, axes, na, rank)) return false;
    for (int i = 0; i < na; i++) full[axes[i]] = pads[i], full[axes[i] + rank] = pads[i + na];
    memcpy(pads, full, sizeof *pads * (size_t)(2 * rank));
    *np = 2 * rank;
    return true;
}

/* Pad, mode constant: concatenations with constant blocks, axis by axis;
 * edge, reflect and wrap (opset 19): gathers of indices. */
static bool op_pad(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    const char *mode = ox_attr_str(s, "mode", "constant");
    bool edge = !strcmp(mode, "edge"), reflect = !strcmp(mode, "reflect"), wrap = !strcmp(mode, "wrap");
    if (!edge && !reflect && !wrap && strcmp(mode, "constant")) { ox_unsupported(s, "this Pad mode"); return false; }
    int64_t shape[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
    int rank = ox_shape(s, xv, shape);
    int np = s->opset >= 11 ? const_ints(s, IN(1), pads, 2 * IR_MAX_RANK) : ox_attr_ints(s, "pads", pads, 2 * IR_MAX_RANK);
    if (np >= 0 && s->opset >= 18 && NIN > 3 && s->node->input[3][0] && !pads_of_axes(s, pads, &np, rank)) return false;
    if (np != 2 * rank) { if (!s->ctx->errors) ox_fail(s, "pads has %d values for rank %d", np, rank); return false; }
    ox_val *cv = s->opset >= 11 ? IN(2) : NULL;
    double value = cv && cv->c && cv->c->count ? cv->c->v[0] : ox_attr_float(s, "value", 0);   /* a float pad value */
    if (cv && !cv->c) { ox_unsupported(s, "a computed pad value"); return false; }
    int y = ox_node(s, xv);
    for (int ax = 0; ax < rank && y != IR_NONE && (edge || reflect || wrap); ax++) {   /* a gather of indices */
        int64_t lo = pads[ax], hi = pads[ax + rank], d = shape[ax];
        if (!lo && !hi) continue;
        if (d < 1 || lo < 0 || hi < 0 || lo > OX_MAX_FOLD || hi > OX_MAX_FOLD || d + lo + hi > OX_MAX_FOLD ||
            (reflect && (lo >= d || hi >= d))) { ox_unsupported(s, "these pads"); return false; }
        int64_t m = d + lo + hi;
        int64_t *idx = ax_alloc(s->ctx->arena, sizeof *idx * (size_t)m);
        for (int64_t i = 0; i < m; i++) {
            int64_t k = i - lo;
            if (edge) k = k < 0 ? 0 : k >= d ? d - 1 : k;
            else if (wrap) k = (k % d + d) % d;
            else k = k < 0 ? -k : k >= d ? 2 * (d - 1) - k : k;
            idx[i] = k;
        }
        y = select_axis(s, y, ax, idx, m);
    }
    for (int ax = 0; ax < rank && y != IR_NONE && !edge && !reflect && !wrap; ax++) {
        if (pads[ax] < 0 || pads[ax + rank] < 0) { ox_unsupported(s, "negative pads (cropping)"); return false; }
        y = pad_axis(s, y, ax, pads[ax], pads[ax + rank], value);
    }
    return set_node(s, 0, y, false);
}

/* CenterCropPad (opset 18): per axis (the axes attribute, else all) the
 * centred slice of the target length when it is shorter, else zeros around
 * the input, the odd one after (onnx's reference). */
static bool op_center_crop_pad(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0), *sv = IN(1);
    if (!ok || !xv || !sv) return false;
    int64_t shape[IR_MAX_RANK], want[IR_MAX_RANK], axes[IR_MAX_RANK];
    int rank = ox_shape(s, xv, shape), nw = const_ints(s, sv, want, IR_MAX_RANK);
    int na = ox_attr_ints(s, "axes", axes, IR_MAX_RANK);
    if (nw < 0) return false;
    if (na < 0)
        for (na = 0; na < rank; na++) axes[na] = na;
    if (nw != na) { ox_fail(s, "shape has %d values for %d axes", nw, na); return false; }
    if (!norm_axes(s, axes, na, rank)) return false;
    int y = ox_node(s, xv);
    for (int k = 0; k < na && y != IR_NONE; k++) {
        int ax = (int)axes[k];
        int64_t d = shape[ax], t = want[k];
        if (t < 1) { ox_unsupported(s, "a CenterCropPad to an empty axis"); return false; }
        if (t < d) y = slice_axis(s, y, ax, (d - t) / 2, (d - t) / 2 + t, 1);
        else if (t > d) y = pad_axis(s, y, ax, (t - d) / 2, t - d - (t - d) / 2, 0.0);
    }
    return set_node(s, 0, y, false);
}

/* DepthToSpace / SpaceToDepth: reshape, transpose, reshape. */
static bool op_depth_space(ox_state *s)
{
    bool ok = true, d2s = !strcmp(s->node->op_type, "DepthToSpace");
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    int64_t sh[IR_MAX_RANK], b = ox_attr_int(s, "blocksize", 0), bb, big;
    /* b * b, and the grown dims, checked for overflow (2^62 squared is 0) */
    bool sane = ox_shape(s, xv, sh) == 4 && b >= 1 && !__builtin_mul_overflow(b, b, &bb) &&
                (d2s ? !__builtin_mul_overflow(sh[2], b, &big) && !__builtin_mul_overflow(sh[3], b, &big)
                     : !__builtin_mul_overflow(sh[1], bb, &big));
    if (!sane || (d2s ? sh[1] % bb : (sh[2] % b) || (sh[3] % b))) {
        ox_fail(s, "needs a 4-D input whose dims the blocksize divides");
        return false;
    }
    int64_t n = sh[0], c = sh[1], hh = sh[2], w = sh[3];
    bool crd = !strcmp(ox_attr_str(s, "mode", "DCR"), "CRD");
    int x = ox_node(s, xv);
    int64_t t1[6], out[4];
    int perm[6];
    if (d2s) {
        int64_t c2 = c / bb;
        if (crd) { int64_t v[6] = {n, c2, b, b, hh, w}; int p[6] = {0, 1, 4, 2, 5, 3}; memcpy(t1, v, sizeof v); memcpy(perm, p, sizeof p); }
        else { int64_t v[6] = {n, b, b, c2, hh, w}; int p[6] = {0, 3, 4, 1, 5, 2}; memcpy(t1, v, sizeof v); memcpy(perm, p, sizeof p); }
        int64_t o[4] = {n, c2, hh * b, w * b};
        memcpy(out, o, sizeof o);
    } else {
        int64_t v[6] = {n, c, hh / b, b, w / b, b};
        int p[6] = {0, 3, 5, 1, 2, 4};
        memcpy(t1, v, sizeof v);
        memcpy(perm, p, sizeof p);
        int64_t o[4] = {n, c * b * b, hh / b, w / b};
        memcpy(out, o, sizeof o);
    }
    x = reshape_to(s, x, t1, 6);
    x = transpose_perm(s, x, perm, 6);
    return set_node(s, 0, x == IR_NONE ? x : reshape_to(s, x, out, 4), false);
}

/* Tile: a concatenation of copies along each axis. */
static bool op_tile(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    int64_t rep[IR_MAX_RANK], shape[IR_MAX_RANK];
    if (!ok || !xv) return false;
    int rank = ox_shape(s, xv, shape);
    if (const_ints(s, IN(1), rep, IR_MAX_RANK) != rank) { if (!s->ctx->errors) ox_fail(s, "repeats has the wrong length"); return false; }
    int y = ox_node(s, xv);
    for (int ax = 0; ax < rank && y != IR_NONE; ax++) {
        if (rep[ax] < 1 || rep[ax] > IR_SRC_ROOM) { ox_unsupported(s, "repeats under 1 or over 16"); return false; }
        if (rep[ax] == 1) continue;
        int src[IR_SRC_ROOM];
        for (int i = 0; i < rep[ax]; i++) src[i] = y;
        ir_attrs a = ir_attrs_unset();
        a.axis = ax;
        y = ox_add(s, IR_OP_concat, src, (int)rep[ax], &a);
    }
    return set_node(s, 0, y, false);
}

/* Resize (nearest, linear, cubic; opset 10+) and Upsample (opset 7-9): the
 * IR's upsample where it computes the same (resize_upsample_mode), else one
 * interpolation matrix per resized axis: constant weights applied as a dense
 * when the scales are constants, weights computed by IR ops from the scales
 * when those come at run time (resize_runtime).  Exact for every scale and
 * coordinate mode, as onnx's reference: the length of an axis in the
 * coordinate formulas is in * scale, not the rounded output length. */
typedef struct resize_spec {
    const char *mode, *coord, *nearest;
    double cubic_a;
    bool exclude_outside;
} resize_spec;

/* The input coordinate of output i (of m) along an axis of length in. */
static double resize_coord(const char *mode, int64_t i, double scale, int64_t in, int64_t m)
{
    double len = (double)in * scale;
    if (!strcmp(mode, "half_pixel_symmetric"))   /* half_pixel centred: offset in/2 (1 - m / len) */
        return ((double)i + 0.5 - (double)m / 2) / scale + (double)in / 2 - 0.5;
    if (!strcmp(mode, "asymmetric")) return (double)i / scale;
    if (!strcmp(mode, "align_corners")) return len == 1 ? 0 : (double)i * (double)(in - 1) / (len - 1);
    if (!strcmp(mode, "pytorch_half_pixel")) return len != 1 ? (i + 0.5) / scale - 0.5 : -0.5;
    if (!strcmp(mode, "tf_half_pixel_for_nn")) return (i + 0.5) / scale;
    return (i + 0.5) / scale - 0.5;   /* half_pixel */
}

static int64_t nearest_index(const char *mode, double x)
{
    if (!strcmp(mode, "floor")) return (int64_t)floor(x);
    if (!strcmp(mode, "ceil")) return (int64_t)ceil(x);
    if (!strcmp(mode, "round_prefer_ceil")) return (int64_t)floor(x + 0.5);
    return (int64_t)ceil(x - 0.5);   /* round_prefer_floor */
}

/* Keys' cubic weight of the tap at distance d (0 <= d <= 2) for parameter a. */
static double cubic_weight(double a, double d)
{
    return d <= 1 ? ((a + 2) * d - (a + 3)) * d * d + 1 : ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
}

/* Row i of the interpolation matrix of one axis: in weights at w. */
static void resize_row(const resize_spec *r, int64_t i, double scale, int64_t in, int64_t m, double *w)
{
    double c = resize_coord(r->coord, i, scale, in, m);
    if (!strcmp(r->mode, "nearest")) {
        int64_t k = nearest_index(r->nearest, c);
        w[k < 0 ? 0 : k >= in ? in - 1 : k] = 1;
    } else if (!strcmp(r->mode, "linear")) {
        c = c < 0 ? 0 : c > (double)(in - 1) ? (double)(in - 1) : c;
        int64_t k0 = (int64_t)floor(c), k1 = k0 + 1 < in ? k0 + 1 : in - 1;
        w[k0] += 1 - (c - (double)k0);
        w[k1] += c - (double)k0;
    } else {   /* cubic: taps floor(c) - 1 .. floor(c) + 2, edge-clamped */
        double f = floor(c), t = c - f, sum = 0, cw[4];
        for (int j = 0; j < 4; j++) {
            int64_t k = (int64_t)f + j - 1;
            cw[j] = r->exclude_outside && (k < 0 || k >= in) ? 0 : cubic_weight(r->cubic_a, fabs(t - (j - 1)));
            sum += cw[j];
        }
        for (int j = 0; j < 4; j++) {
            int64_t k = (int64_t)f + j - 1;
            w[k < 0 ? 0 : k >= in ? in - 1 : k] += r->exclude_outside ? cw[j] / sum : cw[j];
        }
    }
}

/* The IR upsample mode that computes this resize of a rank-4 tensor by
 * integer factors s of H and W, or -1.  Nearest: with half_pixel, the source
 * (i + 1/2) / s - 1/2 = floor(i / s) + (r - (s - 1) / 2) / s lies within 1/2
 * of floor(i / s), so either round_prefer_* gives it; asymmetric and
 * tf_half_pixel_for_nn give it with floor.  Linear: half_pixel is
 * align_corners=False, align_corners is itself. */
static int resize_upsample_mode(const resize_spec *r)
{
    bool half = !strcmp(r->coord, "half_pixel") || !strcmp(r->coord, "pytorch_half_pixel");
    if (!strcmp(r->mode, "nearest")) {
        bool round = !strncmp(r->nearest, "round_prefer_", 13);
        bool from_floor = !strcmp(r->coord, "asymmetric") || !strcmp(r->coord, "tf_half_pixel_for_nn");
        return (half && round) || (from_floor && !strcmp(r->nearest, "floor")) ? IR_UPSAMPLE_NEAREST : -1;
    }
    if (strcmp(r->mode, "linear")) return -1;
    return half ? IR_UPSAMPLE_BILINEAR : !strcmp(r->coord, "align_corners") ? IR_UPSAMPLE_BILINEAR_CORNERS : -1;
}

/* The IR upsample of x by the integer factors out / shape of dims 2 and 3
 * (dims 0 and 1 unchanged), or IR_NONE, nothing added, when it is not one. */
static int resize_as_upsample(ox_state *s, ox_val *x, int rank, const int64_t *shape, const int64_t *out,
                              const double *scales, int mode)
{
    if (rank != 4 || mode < 0 || out[0] != shape[0] || out[1] != shape[1] || scales[0] != 1 || scales[1] != 1)
        return IR_NONE;
    ir_attrs a = ir_attrs_unset();
    a.mode = mode;
    for (int d = 0; d < 2; d++) {
        if (out[2 + d] % shape[2 + d] || scales[2 + d] != (double)(out[2 + d] / shape[2 + d])) return IR_NONE;
        a.scale[d] = (int)(out[2 + d] / shape[2 + d]);
    }
    int src = ox_node_nhwc(s, x);
    return src == IR_NONE ? IR_NONE : ox_add(s, IR_OP_upsample, &src, 1, &a);
}

/* A float param of n values v0 + step * k, shaped [n, 1] (column) or [1, n]. */
static int ramp(ox_state *s, int64_t n, double v0, double step, bool column)
{
    double *v = ax_alloc(s->ctx->arena, sizeof *v * (size_t)n);
    for (int64_t k = 0; k < n; k++) v[k] = v0 + step * (double)k;
    int64_t shape[2] = {column ? n : 1, column ? 1 : n};
    return ox_param(s, v, 2, shape, NULL);
}

static int add_c(ox_state *s, int x, double c) { return bin(s, IR_OP_add, x, ox_scalar(s, c)); }
static int mul_c(ox_state *s, int x, double c) { return bin(s, IR_OP_mul, x, ox_scalar(s, c)); }

/* x clamped to [lo, hi]. */
static int clamp_c(ox_state *s, int x, double lo, double hi)
{
    return bin(s, IR_OP_min, bin(s, IR_OP_max, x, ox_scalar(s, lo)), ox_scalar(s, hi));
}

/* [k == j] for integer-valued k [1, m] and the column j = 0..in-1: 0/1 [in, m]. */
static int one_hot(ox_state *s, int k, int64_t in)
{
    int d = un(s, IR_OP_abs, bin(s, IR_OP_sub, k, ramp(s, in, 0, 1, true)));
    return un(s, IR_OP_relu, bin(s, IR_OP_sub, ox_scalar(s, 1), d));
}

/* Keys' cubic weight of the distances d >= 1 (far) or <= 1 (near), by IR ops. */
static int cubic_weight_ir(ox_state *s, int d, double a, bool far)
{
    if (far) return add_c(s, bin(s, IR_OP_mul, add_c(s, bin(s, IR_OP_mul, add_c(s, mul_c(s, d, a), -5 * a), d), 8 * a), d), -4 * a);
    return add_c(s, bin(s, IR_OP_mul, bin(s, IR_OP_mul, add_c(s, mul_c(s, d, a + 2), -(a + 3)), d), d), 1);
}

/* The transposed interpolation matrix [in, m] of one axis whose scale is the
 * computed [1] node sc: resize_row's formulas as IR ops on the coordinates
 * of the m outputs, a [1, m] row. */
static int resize_weights_ir(ox_state *s, const resize_spec *r, int sc, int64_t in, int64_t m)
{
    const char *cm = r->coord;
    int x;
    if (!strcmp(cm, "align_corners") && m == 1) x = ramp(s, 1, 0, 0, false);   /* 0, even where in scale = 1 */
    else if (!strcmp(cm, "align_corners"))   /* i (in - 1) / (in scale - 1) */
        x = bin(s, IR_OP_div, ramp(s, m, 0, (double)(in - 1), false), add_c(s, mul_c(s, sc, (double)in), -1));
    else if (!strcmp(cm, "asymmetric")) x = bin(s, IR_OP_div, ramp(s, m, 0, 1, false), sc);
    else if (!strcmp(cm, "half_pixel_symmetric"))   /* resize_coord's */
        x = add_c(s, bin(s, IR_OP_div, ramp(s, m, 0.5 - (double)m / 2, 1, false), sc), (double)in / 2 - 0.5);
    else {
        x = bin(s, IR_OP_div, ramp(s, m, 0.5, 1, false), sc);
        if (strcmp(cm, "tf_half_pixel_for_nn")) x = add_c(s, x, -0.5);
    }
    if (!strcmp(r->mode, "nearest")) {
        const char *nm = r->nearest;
        int k = !strcmp(nm, "floor") ? un(s, IR_OP_floor, x) : !strcmp(nm, "ceil") ? un(s, IR_OP_ceil, x)
              : !strcmp(nm, "round_prefer_ceil") ? un(s, IR_OP_floor, add_c(s, x, 0.5)) : un(s, IR_OP_ceil, add_c(s, x, -0.5));
        return one_hot(s, clamp_c(s, k, 0, (double)(in - 1)), in);
    }
    if (!strcmp(r->mode, "linear")) {   /* the hat 1 - |x - j| at x clamped into the axis */
        int d = un(s, IR_OP_abs, bin(s, IR_OP_sub, clamp_c(s, x, 0, (double)(in - 1)), ramp(s, in, 0, 1, true)));
        return un(s, IR_OP_relu, bin(s, IR_OP_sub, ox_scalar(s, 1), d));
    }
    int f = un(s, IR_OP_floor, x), t = bin(s, IR_OP_sub, x, f), w = IR_NONE, sum = IR_NONE;
    for (int j = 0; j < 4; j++) {
        int d = j == 0 ? add_c(s, t, 1) : j == 1 ? t : add_c(s, mul_c(s, t, -1), j - 1);
        int c = cubic_weight_ir(s, d, r->cubic_a, j == 0 || j == 3), k = add_c(s, f, j - 1);
        if (r->exclude_outside)   /* times [0 <= k <= in - 1] */
            c = bin(s, IR_OP_mul, c, un(s, IR_OP_relu, un(s, IR_OP_sign, bin(s, IR_OP_mul, add_c(s, k, 0.5),
                                                                            add_c(s, mul_c(s, k, -1), (double)in - 0.5)))));
        int term = bin(s, IR_OP_mul, c, one_hot(s, clamp_c(s, k, 0, (double)(in - 1)), in));
        w = j ? bin(s, IR_OP_add, w, term) : term;
        sum = j ? bin(s, IR_OP_add, sum, c) : c;
    }
    return r->exclude_outside ? bin(s, IR_OP_div, w, sum) : w;
}

/* Resize by scales known only at run time (a graph input, say): the output
 * shape is the one the model declares, the coordinates use the scales' values. */
static int resize_runtime(ox_state *s, const resize_spec *r, ox_val *x, ox_val *sc, int rank, const int64_t *shape)
{
    int64_t out[IR_MAX_RANK], ss[IR_MAX_RANK];
    if (ox_declared_shape(s, s->node->output[0], out) != rank || ox_shape(s, sc, ss) != 1 || ss[0] != rank) {
        ox_unsupported(s, "scales computed at run time without a declared static output shape");
        return IR_NONE;
    }
    int y = ox_node(s, x), scn = ox_node(s, sc);
    for (int ax = 0; ax < rank && y != IR_NONE; ax++) {
        int64_t in = shape[ax], m = out[ax];
        if (in == 1 && m == 1) continue;   /* every coordinate clamps to the one element */
        if (m * in > ((int64_t)1 << 22) || (m == 1 && !strcmp(r->coord, "pytorch_half_pixel"))) {
            ox_unsupported(s, "a run-time resize this large, or to length 1 with pytorch_half_pixel");
            return IR_NONE;
        }
        int wt = resize_weights_ir(s, r, slice_axis(s, scn, 0, ax, ax + 1, 1), in, m), back[IR_MAX_RANK];
        int t = axis_last(s, y, rank, ax, back);
        y = t == IR_NONE ? t : transpose_perm(s, bin(s, IR_OP_matmul, t, wt), back, rank);
    }
    return y;
}

/* The coordinate and nearest modes named are ones resize_coord and
 * nearest_index know (half_pixel_symmetric: opset 19). */
static bool resize_names_ok(ox_state *s, const resize_spec *r)
{
    static const char *const coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    bool coord_ok = false, nearest_ok = false;
    for (size_t i = 0; i < sizeof coords / sizeof *coords; i++) coord_ok |= !strcmp(r->coord, coords[i]);
    for (size_t i = 0; i < sizeof nearest / sizeof *nearest; i++) nearest_ok |= !strcmp(r->nearest, nearest[i]);
    if (!coord_ok || !nearest_ok) {
        ox_fail(s, "unknown coordinate_transformation_mode '%s' or nearest_mode '%s'", r->coord, r->nearest);
        return false;
    }
    return true;
}

/* Resize's axes attribute (opset 18; na of them, -1: absent, every axis in
 * order) into pos: for each of the rank axes its entry of scales or sizes,
 * or -1 when not resized. */
static bool resize_axes(ox_state *s, int na, int64_t *axes, int rank, int *pos)
{
    for (int i = 0; i < rank; i++) pos[i] = na < 0 ? i : -1;
    if (!norm_axes(s, axes, na, rank)) return false;
    for (int k = 0; k < na; k++) pos[axes[k]] = k;
    return true;
}

/* keep_aspect_ratio_policy (opset 18) with sizes: not_larger / not_smaller
 * scale every resized axis by the smallest / largest of their size ratios,
 * the length rounded half up, as onnx's reference; stretch keeps them. */
static bool resize_keep_aspect(ox_state *s, const int *pos, int rank, const int64_t *shape, double *scales,
                               int64_t *out)
{
    const char *policy = s->opset >= 18 ? ox_attr_str(s, "keep_aspect_ratio_policy", "stretch") : "stretch";
    bool larger = !strcmp(policy, "not_larger"), smaller = !strcmp(policy, "not_smaller");
    if (!strcmp(policy, "stretch")) return true;
    if (!larger && !smaller) {
        ox_fail(s, "unknown keep_aspect_ratio_policy '%s'", policy);
        return false;
    }
    double scale = 0;
    bool first = true;
    for (int i = 0; i < rank; i++) {
        if (pos[i] < 0) continue;
        if (first || (larger ? scales[i] < scale : scales[i] > scale)) scale = scales[i];
        first = false;
    }
    for (int i = 0; i < rank; i++) {
        if (pos[i] < 0) continue;
        scales[i] = scale;
        if (!ox_double_to_int(scale * (double)shape[i] + 0.5, &out[i]) || out[i] < 1 || out[i] > ((int64_t)1 << 20)) {
            ox_fail(s, "bad scale or size");
            return false;
        }
    }
    return true;
}

/* antialias=1 (opset 18) widens linear and cubic filters when downscaling:
 * refused there, the same as antialias=0 everywhere else. */
static bool resize_antialias_ok(ox_state *s, const resize_spec *r, int rank, const double *scales)
{
    if (s->opset < 18 || !ox_attr_int(s, "antialias", 0) || !strcmp(r->mode, "nearest")) return true;
    for (int i = 0; i < rank; i++)
        if (scales[i] < 1) {
            ox_unsupported(s, "antialias=1 when downscaling with linear or cubic interpolation");
            return false;
        }
    return true;
}

static bool op_resize(ox_state *s)
{
    bool ok = true, upsample = !strcmp(s->node->op_type, "Upsample");
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], out[IR_MAX_RANK];
    double scales[IR_MAX_RANK];
    int rank = ox_shape(s, x, shape);
    resize_spec r = {.mode = ox_attr_str(s, "mode", "nearest"), .cubic_a = ox_attr_float(s, "cubic_coeff_a", -0.75),
                     .exclude_outside = ox_attr_int(s, "exclude_outside", 0) != 0};
    if (upsample && !strcmp(r.mode, "bilinear")) r.mode = "linear";   /* Upsample-7's other name */
    r.coord = upsample ? "asymmetric" : ox_attr_str(s, "coordinate_transformation_mode", s->opset < 11 ? "asymmetric" : "half_pixel");
    r.nearest = upsample || s->opset < 11 ? "floor" : ox_attr_str(s, "nearest_mode", "round_prefer_floor");
    if ((strcmp(r.mode, "nearest") && strcmp(r.mode, "linear") && strcmp(r.mode, "cubic")) || !strcmp(r.coord, "tf_crop_and_resize")) {
        ox_unsupported(s, "this resize mode (nearest, linear and cubic only, no tf_crop_and_resize)");
        return false;
    }
    if (!resize_names_ok(s, &r)) return false;
    ox_val *sc = NULL, *sz = NULL;
    const Onnx__AttributeProto *attr = upsample ? ox_attr(s, "scales") : NULL;
    if (upsample && !attr) sc = IN(1);
    else if (!upsample && s->opset < 11) sc = IN(1);
    else if (!upsample) { sc = NIN > 2 ? IN(2) : NULL; sz = NIN > 3 ? IN(3) : NULL; }
    if (!ok) return false;
    if (sc && sc->c && sc->c->count == 0) sc = NULL;
    int64_t axes[IR_MAX_RANK];
    int na = upsample || s->opset < 18 ? -1 : ox_attr_ints(s, "axes", axes, IR_MAX_RANK);
    if (sc && !sc->c && !sz) {
        if (na >= 0 || (ox_attr_int(s, "antialias", 0) && strcmp(r.mode, "nearest"))) {
            ox_unsupported(s, "axes or antialias=1 with scales computed at run time");
            return false;
        }
        return set_node(s, 0, resize_runtime(s, &r, x, sc, rank, shape), false);
    }
    int pos[IR_MAX_RANK];   /* the entry of scales or sizes for each axis, or -1 */
    if (!resize_axes(s, na, axes, rank, pos)) return false;
    int want = na >= 0 ? na : rank;
    for (int i = 0; i < rank; i++) {
        int k = pos[i];
        if (k < 0) scales[i] = 1, out[i] = shape[i];
        else if (attr && (int)attr->n_floats == want) scales[i] = attr->floats[k];
        else if (sc && sc->c && sc->c->count == want) scales[i] = sc->c->v[k];
        else if (sz && sz->c && sz->c->count == want) scales[i] = sz->c->v[k] / (double)shape[i];
        else { ox_unsupported(s, "scales or sizes that are not constants of the input's rank"); return false; }
        bool known = k < 0 || (sz && sz->c ? ox_int_at(s, sz->c, k, &out[i]) : ox_double_to_int(floor((double)shape[i] * scales[i]), &out[i]));
        if (!known || !(scales[i] > 0) || out[i] < 1 || out[i] > ((int64_t)1 << 20)) { if (!s->ctx->errors) ox_fail(s, "bad scale or size"); return false; }
    }
    if (sz && !resize_keep_aspect(s, pos, rank, shape, scales, out)) return false;
    if (!resize_antialias_ok(s, &r, rank, scales)) return false;
    int y = resize_as_upsample(s, x, rank, shape, out, scales, resize_upsample_mode(&r));
    if (y != IR_NONE || s->ctx->errors) return set_node(s, 0, y, true);
    y = ox_node(s, x);
    for (int ax = 0; ax < rank && y != IR_NONE; ax++) {
        if (out[ax] == shape[ax] && scales[ax] == 1) continue;
        int64_t in = shape[ax], m = out[ax];
        if (m * in > ((int64_t)1 << 22)) { ox_unsupported(s, "a resize this large"); return false; }
        double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(m * in));
        for (int64_t i = 0; i < m; i++) resize_row(&r, i, scales[ax], in, m, w + i * in);
        y = weigh_axis(s, y, ax, w, m);
    }
    return set_node(s, 0, y, false);
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
            if (!narrow_int(v[i], 1, 1 << 16, &a->stride[o + i])) goto range;
    } else if (n >= 0) goto bad;
    if ((n = ox_attr_ints(s, "dilations", v, nd)) == nd) {
        for (int i = 0; i < nd; i++)
            if (!narrow_int(v[i], 1, 1 << 16, &a->dilation[o + i])) goto range;
    } else if (n >= 0) goto bad;
    if ((n = ox_attr_ints(s, "output_padding", v, nd)) == nd) for (int i = 0; i < nd; i++) op[o + i] = v[i];
    else if (n >= 0) goto bad;
    if ((n = ox_attr_ints(s, "pads", v, 2 * nd)) == 2 * nd) {
        for (int i = 0; i < nd; i++)
            if (!narrow_int(v[i], 0, 1 << 16, &a->pad[o + i]) || !narrow_int(v[nd + i], 0, 1 << 16, &a->pad[o + i + 2])) goto range;
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
static bool op_conv_transpose(ox_state *s)
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
    if (!narrow_int(ox_attr_int(s, "group", 1), 1, INT32_MAX, &a.groups)) { ox_fail(s, "group out of range"); return false; }
    int64_t hw[2] = {rank == 4 ? xs[2] : 1, xs[rank - 1]}, k[2] = {rank == 4 ? ws[2] : 1, ws[rank - 1]};
    if (a.groups < 1 || xs[1] != ws[0] || xs[1] % a.groups) {
        ox_fail(s, "input has %lld channels, the weight %lld, in %d groups", (long long)xs[1], (long long)ws[0], a.groups);
        return false;
    }
    if (!conv_transpose_attrs(s, &a, hw, k, rank - 2)) return false;
    if (rank == 4) {
        int src[3] = {ox_node_nhwc(s, x), ox_node(s, w), b ? ox_node(s, b) : IR_NONE};
        if (src[0] == IR_NONE || src[1] == IR_NONE) return false;
        return set_node(s, 0, ox_add(s, IR_OP_conv_transpose, src, 3, &a), true);
    }
    int64_t x4[4] = {xs[0], xs[1], 1, xs[2]}, w4[4] = {ws[0], ws[1], 1, ws[2]};
    ox_val xv = {.name = x->name, .node = reshape_to(s, ox_node(s, x), x4, 4), .nchw = IR_NONE};
    if (xv.node == IR_NONE) return false;
    int wn = w->c ? ox_param(s, w->c->v, 4, w4, ax_strdup(s->ctx->arena, w->name)) : reshape_to(s, ox_node(s, w), w4, 4);
    int src[3] = {ox_node_nhwc(s, &xv), wn, b ? ox_node(s, b) : IR_NONE};
    int y = src[0] == IR_NONE || src[1] == IR_NONE ? IR_NONE : ox_add(s, IR_OP_conv_transpose, src, 3, &a);   /* [N, 1, L', M] */
    return set_node(s, 0, ncl_of_nhwc(s, y), false);
}


/* ---- the table ------------------------------------------------------------- */

typedef struct op_row { const char *name; ox_handler fn; } op_row;
static const op_row op_rows[] = {
    {"Constant", op_constant}, {"Shape", op_shape}, {"Size", op_size}, {"Identity", op_identity},
    {"Dropout", op_identity}, {"ConstantOfShape", op_constant_of_shape}, {"Range", op_range},
    {"Relu", op_unary}, {"Sigmoid", op_unary}, {"Tanh", op_unary}, {"Exp", op_unary},
    {"Log", op_unary}, {"Sqrt", op_unary}, {"Abs", op_unary}, {"Neg", op_unary}, {"Erf", op_unary},
    {"Softplus", op_unary}, {"Elu", op_unary}, {"LeakyRelu", op_unary}, {"Floor", op_unary},
    {"Ceil", op_unary}, {"Not", op_unary}, {"Reciprocal", op_unary}, {"Clip", op_clip},
    {"Sin", op_unary}, {"Cos", op_unary}, {"Tan", op_unary}, {"Asin", op_unary},
    {"Acos", op_unary}, {"Atan", op_unary}, {"Sinh", op_unary}, {"Cosh", op_unary},
    {"Asinh", op_unary}, {"Acosh", op_unary}, {"Atanh", op_unary}, {"Round", op_unary},
    {"Sign", op_unary}, {"Mish", op_unary}, {"Gelu", op_unary},
    {"Add", op_binary}, {"Sub", op_binary}, {"Mul", op_binary}, {"Div", op_binary},
    {"Pow", op_binary}, {"Equal", op_binary}, {"Less", op_binary}, {"Greater", op_binary},
    {"LessOrEqual", op_binary}, {"GreaterOrEqual", op_binary},
    {"And", op_binary}, {"Or", op_binary}, {"Mod", op_binary},
    {"Sum", op_variadic}, {"Mean", op_variadic}, {"Min", op_variadic}, {"Max", op_variadic},
    {"Cast", op_cast}, {"Reshape", op_reshape}, {"Flatten", op_reshape}, {"Squeeze", op_reshape},
    {"Unsqueeze", op_reshape}, {"Transpose", op_transpose}, {"Concat", op_concat},
    {"Gather", op_gather}, {"Slice", op_slice}, {"Split", op_split}, {"Expand", op_expand},
    {"Where", op_where}, {"MatMul", op_matmul}, {"Gemm", op_gemm}, {"Conv", op_conv},
    {"MaxPool", op_pool}, {"AveragePool", op_pool}, {"GlobalAveragePool", op_global_pool},
    {"GlobalMaxPool", op_global_pool}, {"BatchNormalization", op_batchnorm},
    {"Softmax", op_softmax}, {"LogSoftmax", op_softmax}, {"LayerNormalization", op_layernorm},
    {"ReduceMean", op_reduce}, {"ReduceSum", op_reduce}, {"ReduceMax", op_reduce},
    {"ReduceMin", op_reduce}, {"ReduceL1", op_reduce}, {"ReduceL2", op_reduce},
    {"ReduceSumSquare", op_reduce}, {"ReduceLogSum", op_reduce}, {"ReduceLogSumExp", op_reduce},
    {"ReduceProd", op_reduce}, {"ArgMax", op_argmax}, {"ArgMin", op_argmax},
    {"CumSum", op_cumsum}, {"Trilu", op_trilu}, {"LpNormalization", op_lpnorm},
    {"ThresholdedRelu", op_piecewise}, {"Shrink", op_piecewise}, {"Hardmax", op_hardmax},
    {"MeanVarianceNormalization", op_mvn}, {"RNN", op_rnn}, {"GRU", op_gru}, {"LSTM", op_lstm}, {"LRN", op_lrn}, {"Det", op_det},
    {"Softsign", op_composite}, {"Selu", op_composite}, {"Celu", op_composite},
    {"HardSigmoid", op_composite}, {"HardSwish", op_composite}, {"PRelu", op_composite},
    {"InstanceNormalization", op_instancenorm}, {"GroupNormalization", op_groupnorm}, {"Pad", op_pad}, {"CenterCropPad", op_center_crop_pad}, {"DepthToSpace", op_depth_space},
    {"SpaceToDepth", op_depth_space}, {"Tile", op_tile}, {"Resize", op_resize},
    {"Upsample", op_resize}, {"ConvTranspose", op_conv_transpose},
};

ox_handler ox_find_op(const char *op_type)
{
    for (size_t i = 0; i < sizeof op_rows / sizeof *op_rows; i++)
        if (!strcmp(op_rows[i].name, op_type)) return op_rows[i].fn;
    return ox_find_quant_op(NULL, op_type);   /* onnx_quant.c */
}

/* ---- wording: messages name ONNX nodes and op types ---------------------- */

static const char *onnx_ctor(ir_op op)
{
    switch (op) {
    case IR_OP_dense: return "Gemm";
    case IR_OP_matmul: return "MatMul";
    case IR_OP_conv: return "Conv";
    case IR_OP_layernorm: return "LayerNormalization";
    case IR_OP_batchnorm: return "BatchNormalization";
    case IR_OP_maxpool: return "MaxPool";
    case IR_OP_meanpool: return "AveragePool";
    case IR_OP_embedding: return "Gather";
    case IR_OP_reshape: return "Reshape";
    case IR_OP_transpose: return "Transpose";
    case IR_OP_concat: return "Concat";
    default: return (unsigned)op < IR_OP_COUNT ? ir_ops[op].name : "?";
    }
}

static const char *onnx_binary(ir_op op)
{
    switch (op) {
    case IR_OP_add: return "Add";
    case IR_OP_sub: return "Sub";
    case IR_OP_mul: return "Mul";
    case IR_OP_div: return "Div";
    case IR_OP_max: return "Max";
    case IR_OP_min: return "Min";
    default: return "?";
    }
}

/* "ONNX node Conv 'conv1'" (the importer names every node so). */
static void onnx_layer(const ir_graph *g, const ir_node *n, char *buf, size_t size)
{
    (void)g;
    if (n->name) snprintf(buf, size, "ONNX node %s", n->name);
    else snprintf(buf, size, "%s", onnx_ctor(n->op));
}

const ir_wording onnx_wording = {onnx_layer, onnx_ctor, onnx_binary};

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_ops_left_out;
#endif
