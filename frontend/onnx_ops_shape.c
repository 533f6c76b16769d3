/* onnx_ops_shape.c — ONNX ops that make or move data without arithmetic:
 * Constant, Shape, Size, Identity, ConstantOfShape, Range (folded at
 * import), Reshape and its kin, Transpose, Concat, Gather, Slice, Split,
 * Expand, Where, Pad, CenterCropPad, DepthToSpace/SpaceToDepth.  Slices and
 * gathers along an axis of a computed tensor are an IR slice or a dense with
 * a 0/1 selection matrix (exact). */
#ifdef AXC_ONNX
#include <math.h>
#include <string.h>

#include "onnx_ops.h"

/* ---- constants and shapes ------------------------------------------------ */

bool op_constant(ox_state *s)
{
    const Onnx__AttributeProto *a;
    if ((a = ox_attr(s, "value")) && a->t) return ox_set_const(s, 0, ox_tensor(s, a->t));
    int64_t one = 1;
    if ((a = ox_attr(s, "value_float")) && a->has_f) {
        ox_const *c = ox_const_new(s, false, 0, &one);
        c->v[0] = a->f;
        return ox_set_const(s, 0, c);
    }
    if ((a = ox_attr(s, "value_int")) && a->has_i) {
        ox_const *c = ox_const_new(s, true, 0, &one);
        ox_set_int(c, 0, a->i);
        return ox_set_const(s, 0, c);
    }
    if ((a = ox_attr(s, "value_floats")) || (a = ox_attr(s, "value_ints"))) {
        bool is_int = a->n_ints > 0 || a->n_floats == 0;
        int64_t n = is_int ? (int64_t)a->n_ints : (int64_t)a->n_floats;
        ox_const *c = ox_fold_new(s, is_int, 1, &n);
        if (!c) return false;
        for (int64_t i = 0; i < n; i++) {
            if (is_int) ox_set_int(c, i, a->ints[i]);
            else c->v[i] = a->floats[i];
        }
        return ox_set_const(s, 0, c);
    }
    ox_unsupported(s, "a Constant without a tensor, float or int value");
    return false;
}

bool op_shape(ox_state *s)
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
    return ox_set_const(s, 0, c);
}

bool op_size(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK];
    int rank = ox_shape(s, x, shape);
    ox_const *c = ox_const_new(s, true, 0, shape);
    ox_set_int(c, 0, ox_numel(shape, rank));
    return ox_set_const(s, 0, c);
}

bool op_identity(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    if (s->node->n_output > 1 && s->node->output[1][0]) {
        ox_unsupported(s, "the mask output of Dropout");
        return false;
    }
    ox_val copy = *x;
    ox_val *y = ox_def_out(s, 0);
    const char *name = y->name;
    *y = copy;
    y->name = name;
    return true;
}

bool op_constant_of_shape(ox_state *s)
{
    bool ok = true;
    ox_val *sh = IN(0);
    int64_t shape[IR_MAX_RANK];
    int rank = ok ? ox_const_ints(s, sh, shape, IR_MAX_RANK) : -1;
    if (rank < 0) return false;
    const Onnx__AttributeProto *a = ox_attr(s, "value");
    ox_const *val = a && a->t ? ox_tensor(s, a->t) : NULL;
    if (a && !val) return false;
    ox_const *c = ox_fold_new(s, val ? val->is_int : false, rank, shape);
    if (!c) return false;
    for (int64_t i = 0; val && val->count && i < c->count; i++) ox_copy_elem(c, i, val, 0);
    return ox_set_const(s, 0, c);
}

bool op_range(ox_state *s)
{
    bool ok = true;
    ox_val *a = IN(0), *b = IN(1), *d = IN(2);
    if (!ok || !a || !b || !d || !ox_all_const(s)) {
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
        ox_const *c = ox_fold_new(s, true, 1, &count);
        if (!c) return false;
        for (int64_t i = 0; i < count; i++) ox_set_int(c, i, (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta));
        return ox_set_const(s, 0, c);
    }
    double start = a->c->v[0], limit = b->c->v[0], delta = d->c->v[0];
    double n = delta == 0 ? -1 : ceil((limit - start) / delta);
    int64_t count = !(n > 0) ? 0 : n > (double)OX_MAX_FOLD ? OX_MAX_FOLD + 1 : (int64_t)n;
    ox_const *c = ox_fold_new(s, false, 1, &count);
    if (!c) return false;
    for (int64_t i = 0; i < count; i++) c->v[i] = start + (double)i * delta;
    return ox_set_const(s, 0, c);
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
        out[0] = ox_numel(in, (int)axis);
        out[1] = ox_numel(in + axis, rin - (int)axis);
        return *rout = 2;
    }
    if (!strcmp(op, "Reshape")) {
        int n = ox_const_ints(s, IN(1), out, IR_MAX_RANK);
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
        if (neg >= 0) out[neg] = known ? ox_numel(in, rin) / known : 0;
        if (ox_numel(out, n) != ox_numel(in, rin)) { ox_fail(s, "cannot reshape %lld elements into that shape", (long long)ox_numel(in, rin)); return -1; }
        return *rout = n;
    }
    int64_t axes[IR_MAX_RANK];
    int na = NIN > 1 ? ox_const_ints(s, IN(1), axes, IR_MAX_RANK) : ox_attr_ints(s, "axes", axes, IR_MAX_RANK);
    if (!ok || (NIN > 1 && na < 0)) return -1;
    if (!strcmp(op, "Unsqueeze")) {
        int r = rin + (na < 0 ? 0 : na);
        if (r > IR_MAX_RANK) { ox_fail(s, "rank over %d", IR_MAX_RANK); return -1; }
        bool is_new[IR_MAX_RANK] = {0};
        for (int i = 0; i < na; i++) {
            if (!ox_norm_axis(s, &axes[i], r)) return -1;
            is_new[axes[i]] = true;
        }
        for (int i = 0, k = 0; i < r; i++) out[i] = is_new[i] ? 1 : in[k++];
        return *rout = r;
    }
    bool drop[IR_MAX_RANK] = {0};   /* Squeeze */
    for (int i = 0; i < na; i++) {
        if (!ox_norm_axis(s, &axes[i], rin)) return -1;
        drop[axes[i]] = true;
    }
    int r = 0;
    for (int i = 0; i < rin; i++)
        if (!(na < 0 ? in[i] == 1 : drop[i])) out[r++] = in[i];
    return *rout = r;
}

bool op_reshape(ox_state *s)
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
        return ox_set_const(s, 0, c);
    }
    return ox_set_node(s, 0, ox_reshape_to(s, ox_node(s, x), out, rout), false);
}

bool op_transpose(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], p[IR_MAX_RANK];
    int rank = ox_shape(s, x, shape), perm[IR_MAX_RANK];
    int np = ox_attr_ints(s, "perm", p, IR_MAX_RANK);
    if (np >= 0 && np != rank) { ox_fail(s, "perm has %d entries for rank %d", np, rank); return false; }
    for (int i = 0; i < rank; i++)
        if (np >= 0 && !ox_narrow_int(p[i], 0, rank - 1, &perm[i])) { ox_fail(s, "perm is not a permutation"); return false; }
        else if (np < 0) perm[i] = rank - 1 - i;
    bool used[IR_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
        if (perm[i] < 0 || perm[i] >= rank || used[perm[i]]) { ox_fail(s, "perm is not a permutation"); return false; }
        used[perm[i]] = true;
    }
    if (x->c) {
        int64_t out[IR_MAX_RANK];
        for (int i = 0; i < rank; i++) out[i] = shape[perm[i]];
        ox_const *c = ox_fold_new(s, x->c->is_int, rank, out);
        if (!c) return false;
        int64_t istride[IR_MAX_RANK];
        for (int64_t i = rank - 1, st = 1; i >= 0; i--) { istride[i] = st; st *= shape[i]; }
        for (int64_t f = 0; f < c->count; f++) {
            int64_t rem = f, src = 0;
            for (int i = rank - 1; i >= 0; i--) { src += (rem % out[i]) * istride[perm[i]]; rem /= out[i]; }
            ox_copy_elem(c, f, x->c, src);
        }
        return ox_set_const(s, 0, c);
    }
    if (x->nhwc && rank == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1)
        return ox_set_node(s, 0, x->node, false);
    return ox_set_node(s, 0, ox_transpose_perm(s, ox_node(s, x), perm, rank), false);
}

bool op_concat(ox_state *s)
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
    if (!ox_norm_axis(s, &axis, rank)) return false;
    if (ox_all_const(s)) {
        int64_t out[IR_MAX_RANK], total = 0, inner = ox_numel(shape + axis + 1, rank - (int)axis - 1), outer = ox_numel(shape, (int)axis);
        memcpy(out, shape, sizeof shape);
        for (int i = 0; i < NIN; i++) {
            if (v[i]->c->rank != rank) { ox_fail(s, "inputs of different ranks"); return false; }
            total += v[i]->c->shape[axis];
        }
        out[axis] = total;
        ox_const *c = ox_fold_new(s, v[0]->c->is_int, rank, out);
        if (!c) return false;
        int64_t k = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int i = 0; i < NIN; i++) {
                int64_t n = v[i]->c->shape[axis] * inner;
                if (o * n + n > v[i]->c->count) { ox_fail(s, "inputs of different shapes"); return false; }
                for (int64_t j = 0; j < n; j++) ox_copy_elem(c, k++, v[i]->c, o * n + j);
            }
        return ox_set_const(s, 0, c);
    }
    int *src = ax_alloc(s->ctx->arena, sizeof *src * (size_t)NIN);
    ir_attrs a = ir_attrs_unset();
    a.axis = nhwc && rank == 4 ? (axis == 1 ? 3 : axis == 0 ? 0 : (int)axis - 1) : (int)axis;
    for (int i = 0; i < NIN; i++)
        if ((src[i] = nhwc ? v[i]->node : ox_node(s, v[i])) == IR_NONE) return false;
    if (NIN == 1) return ox_set_node(s, 0, src[0], nhwc);
    return ox_set_node(s, 0, ox_add(s, IR_OP_concat, src, NIN, &a), nhwc);
}

/* Gather: folded, an embedding (constant table, computed indices), or a
 * selection along an axis (computed data, constant indices). */
bool op_gather(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0), *ix = IN(1);
    if (!ok || !x || !ix) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", 0);
    int rank = ox_shape(s, x, shape);
    if (!ox_norm_axis(s, &axis, rank)) return false;
    if (x->c && !ix->c) {
        if (axis != 0 || rank != 2 || x->c->is_int) { ox_unsupported(s, "a Gather of computed indices other than a float table [vocab, dim] on axis 0"); return false; }
        int src[2] = {ix->node, ox_node(s, x)};
        return ox_set_node(s, 0, ox_add(s, IR_OP_embedding, src, 2, NULL), false);
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
        ox_const *c = ox_fold_new(s, x->c->is_int, rout, out);
        if (!c) return false;
        int64_t inner = ox_numel(shape + axis + 1, rank - (int)axis - 1), outer = ox_numel(shape, (int)axis), k = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < inner; j++) ox_copy_elem(c, k++, x->c, (o * shape[axis] + idx[i]) * inner + j);
        return ox_set_const(s, 0, c);
    }
    int y = ox_select_axis(s, ox_node(s, x), (int)axis, idx, m);
    return y != IR_NONE && ox_set_node(s, 0, ox_reshape_to(s, y, out, rout), false);
}

/* Slice (opset >= 10: starts, ends, axes, steps as inputs; before: attributes). */
bool op_slice(ox_state *s)
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
        n = ox_const_ints(s, IN(1), st, IR_MAX_RANK);
        if (n < 0 || ox_const_ints(s, IN(2), en, IR_MAX_RANK) != n) { if (s->ctx->errors == 0) ox_fail(s, "starts and ends differ in length"); return false; }
        na = NIN > 3 && s->node->input[3][0] ? ox_const_ints(s, IN(3), ax, IR_MAX_RANK) : -1;
        ns = NIN > 4 && s->node->input[4][0] ? ox_const_ints(s, IN(4), sp, IR_MAX_RANK) : -1;
    }
    if (!ok || n < 0 || (na >= 0 && na != n) || (ns >= 0 && ns != n)) { if (s->ctx->errors == 0) ox_fail(s, "bad starts/ends/axes/steps"); return false; }
    int64_t lo[IR_MAX_RANK], step[IR_MAX_RANK], len[IR_MAX_RANK];
    for (int i = 0; i < rank; i++) lo[i] = 0, step[i] = 1, len[i] = shape[i];
    for (int i = 0; i < n; i++) {
        int64_t a = na >= 0 ? ax[i] : i, d;
        if (!ox_norm_axis(s, &a, rank)) return false;
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
        ox_const *c = ox_fold_new(s, x->c->is_int, rank, len);
        if (!c) return false;
        for (int64_t f = 0; f < c->count; f++) {
            int64_t rem = f, src = 0, stride = 1;
            for (int i = rank - 1; i >= 0; i--) { src += (lo[i] + (rem % len[i]) * step[i]) * stride; rem /= len[i]; stride *= shape[i]; }
            ox_copy_elem(c, f, x->c, src);
        }
        return ox_set_const(s, 0, c);
    }
    int y = ox_node(s, x);
    for (int a = 0; a < rank && y != IR_NONE; a++) {
        if (len[a] == shape[a] && step[a] == 1) continue;
        int64_t *idx = ax_alloc(s->ctx->arena, sizeof *idx * (size_t)(len[a] ? len[a] : 1));
        for (int64_t i = 0; i < len[a]; i++) idx[i] = lo[a] + i * step[a];
        y = ox_select_axis(s, y, a, idx, len[a]);
    }
    return ox_set_node(s, 0, y, false);
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

bool op_split(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], axis = ox_attr_int(s, "axis", 0), parts[IR_SRC_ROOM];
    int rank = ox_shape(s, x, shape), nout = (int)s->node->n_output;
    if (!ox_norm_axis(s, &axis, rank) || nout < 1 || nout > IR_SRC_ROOM) return false;
    int np = NIN > 1 && s->node->input[1][0] ? ox_const_ints(s, IN(1), parts, IR_SRC_ROOM) : ox_attr_ints(s, "split", parts, IR_SRC_ROOM);
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
        if (!ox_set_node(s, i, ox_select_axis(s, x0, (int)axis, idx, parts[i]), false)) return false;
    }
    return true;
}

bool op_expand(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    int64_t shape[IR_MAX_RANK];
    int n = ok ? ox_const_ints(s, IN(1), shape, IR_MAX_RANK) : -1;
    if (!ok || !x || n < 0) return false;
    ox_const *ones = ox_fold_new(s, x->c ? x->c->is_int : false, n, shape);
    if (!ones) return false;
    for (int64_t i = 0; i < ones->count; i++) ones->v[i] = x->c && x->c->is_int ? 0 : 0.0;
    if (x->c) return ox_set_const(s, 0, ox_fold_binary(s, x->c, ones, ox_fold_add, false));
    ox_val z = {.name = "zeros", .c = ones, .node = IR_NONE, .nchw = IR_NONE};
    return ox_binary_tensor(s, IR_OP_add, x, &z);
}

bool op_where(ox_state *s)
{
    bool ok = true;
    ox_val *c = IN(0), *a = IN(1), *b = IN(2);
    if (!ok || !c || !a || !b || !ox_all_const(s)) { if (ok) ox_unsupported(s, "a Where of computed tensors"); return false; }
    const ox_const *cs[3] = {c->c, a->c, b->c};
    int64_t shape[IR_MAX_RANK];
    int rank;
    if (!ox_broadcast_shape(s, cs, 3, shape, &rank)) return false;
    ox_const *r = ox_fold_new(s, a->c->is_int && b->c->is_int, rank, shape);
    if (!r) return false;
    for (int64_t i = 0; i < r->count; i++) {
        const ox_const *pick = c->c->v[ox_bcast_index(c->c, shape, rank, i)] != 0 ? a->c : b->c;
        ox_copy_elem(r, i, pick, ox_bcast_index(pick, shape, rank, i));
    }
    return ox_set_const(s, 0, r);
}

/* Pad's axes input (opset 18): the np pads given for those axes, begins
 * then ends, spread over all rank axes (0 for the others); np becomes 2 rank. */
static bool pads_of_axes(ox_state *s, int64_t *pads, int *np, int rank)
{
    bool ok = true;
    int64_t axes[IR_MAX_RANK], full[2 * IR_MAX_RANK] = {0};
    int na = ox_const_ints(s, IN(3), axes, IR_MAX_RANK);
    if (!ok || na < 0) return false;
    if (*np != 2 * na) {
        ox_fail(s, "pads has %d values for %d axes", *np, na);
        return false;
    }
    if (!ox_norm_axes(s, axes, na, rank)) return false;
    for (int i = 0; i < na; i++) full[axes[i]] = pads[i], full[axes[i] + rank] = pads[i + na];
    memcpy(pads, full, sizeof *pads * (size_t)(2 * rank));
    *np = 2 * rank;
    return true;
}

/* Pad, mode constant: concatenations with constant blocks, axis by axis;
 * edge, reflect and wrap (opset 19): gathers of indices. */
bool op_pad(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    const char *mode = ox_attr_str(s, "mode", "constant");
    bool edge = !strcmp(mode, "edge"), reflect = !strcmp(mode, "reflect"), wrap = !strcmp(mode, "wrap");
    if (!edge && !reflect && !wrap && strcmp(mode, "constant")) { ox_unsupported(s, "this Pad mode"); return false; }
    int64_t shape[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
    int rank = ox_shape(s, xv, shape);
    int np = s->opset >= 11 ? ox_const_ints(s, IN(1), pads, 2 * IR_MAX_RANK) : ox_attr_ints(s, "pads", pads, 2 * IR_MAX_RANK);
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
        y = ox_select_axis(s, y, ax, idx, m);
    }
    for (int ax = 0; ax < rank && y != IR_NONE && !edge && !reflect && !wrap; ax++) {
        if (pads[ax] < 0 || pads[ax + rank] < 0) { ox_unsupported(s, "negative pads (cropping)"); return false; }
        y = ox_pad_axis(s, y, ax, pads[ax], pads[ax + rank], value);
    }
    return ox_set_node(s, 0, y, false);
}

/* CenterCropPad (opset 18): per axis (the axes attribute, else all) the
 * centred slice of the target length when it is shorter, else zeros around
 * the input, the odd one after (onnx's reference). */
bool op_center_crop_pad(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0), *sv = IN(1);
    if (!ok || !xv || !sv) return false;
    int64_t shape[IR_MAX_RANK], want[IR_MAX_RANK], axes[IR_MAX_RANK];
    int rank = ox_shape(s, xv, shape), nw = ox_const_ints(s, sv, want, IR_MAX_RANK);
    int na = ox_attr_ints(s, "axes", axes, IR_MAX_RANK);
    if (nw < 0) return false;
    if (na < 0)
        for (na = 0; na < rank; na++) axes[na] = na;
    if (nw != na) { ox_fail(s, "shape has %d values for %d axes", nw, na); return false; }
    if (!ox_norm_axes(s, axes, na, rank)) return false;
    int y = ox_node(s, xv);
    for (int k = 0; k < na && y != IR_NONE; k++) {
        int ax = (int)axes[k];
        int64_t d = shape[ax], t = want[k];
        if (t < 1) { ox_unsupported(s, "a CenterCropPad to an empty axis"); return false; }
        if (t < d) y = ox_slice_axis(s, y, ax, (d - t) / 2, (d - t) / 2 + t, 1);
        else if (t > d) y = ox_pad_axis(s, y, ax, (t - d) / 2, t - d - (t - d) / 2, 0.0);
    }
    return ox_set_node(s, 0, y, false);
}

/* DepthToSpace / SpaceToDepth: reshape, transpose, reshape. */
bool op_depth_space(ox_state *s)
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
    x = ox_reshape_to(s, x, t1, 6);
    x = ox_transpose_perm(s, x, perm, 6);
    return ox_set_node(s, 0, x == IR_NONE ? x : ox_reshape_to(s, x, out, 4), false);
}

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_ops_shape_left_out;
#endif
