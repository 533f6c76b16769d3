/* lower_slice.c — slicing and splitting (docs/language.md#more-operators), PyTorch semantics
 * on any axis: x[a:b, :, i] (0-based, end exclusive, negative from the end,
 * positive steps; an integer index drops its dimension), and
 * `a, b = chunk(x, n; dims=k)` / `a, b, c = split(x, (s0, s1, s2); dims=k)`
 * bound to as many names as pieces.  Each piece is one IR_OP_slice node
 * whose bounds pass_shape resolves against the input's shape. */
#include <string.h>

#include "lower_internal.h"

/* An integer constant into *out; what names it in the error. */
static bool index_int(lower_state *st, const ast_node *e, const char *what, int64_t *out)
{
    lower_num v;
    if (!lower_eval_num(st, e, &v)) return false;
    if (!v.is_int) {
        ax_error(st->ctx, e->loc, "%s must be an integer constant", what);
        return false;
    }
    *out = v.i;
    return true;
}

/* One item of x[...] into dimension d of attrs; *drop for an integer index. */
static bool index_item(lower_state *st, const ast_node *item, int d, ir_attrs *attrs, bool *drop)
{
    int64_t i;
    *drop = item->kind != AST_SLICE;
    attrs->begin[d] = INT64_MIN;
    attrs->end[d] = INT64_MAX;
    attrs->step[d] = 1;
    if (*drop) {
        if (!index_int(st, item, "an index", &i)) return false;
        attrs->begin[d] = i;
        attrs->end[d] = i == -1 ? INT64_MAX : i + 1;
        return true;
    }
    if (item->lhs && !index_int(st, item->lhs, "a slice bound", &attrs->begin[d])) return false;
    if (item->rhs && !index_int(st, item->rhs, "a slice bound", &attrs->end[d])) return false;
    if (item->step && !index_int(st, item->step, "a slice step", &attrs->step[d])) return false;
    if (attrs->step[d] < 1) {
        ax_error(st->ctx, item->step->loc, "a slice step must be a positive integer (as in "
                 "PyTorch, which has no negative steps)");
        return false;
    }
    return true;
}

int lower_index_value(lower_state *st, const ast_node *e)
{
    ir_attrs attrs = ir_attrs_unset(), squeeze = ir_attrs_unset();
    if (e->nargs > IR_MAX_RANK) {
        ax_error(st->ctx, e->loc, "at most %d indices", IR_MAX_RANK);
        return IR_NONE;
    }
    int x = lower_expr(st, e->callee);
    bool ok = x != IR_NONE;
    for (int d = 0; d < e->nargs; d++) {
        bool drop;
        ok = index_item(st, e->args[d], d, &attrs, &drop) && ok;
        if (drop) squeeze.squeeze[squeeze.nsqueeze++] = d;
    }
    if (!ok) return IR_NONE;
    attrs.nslice = e->nargs;
    int id = lower_add(st, IR_OP_slice, &x, 1, &attrs, e->loc, NULL);
    return squeeze.nsqueeze ? lower_add(st, IR_OP_reshape, &id, 1, &squeeze, e->loc, NULL) : id;
}

/* dims=k of split (default 0, as PyTorch's dim). */
static bool split_axis(lower_state *st, const lower_args *a, int *axis)
{
    *axis = 0;
    for (int i = 0; i < a->nkw; i++) {
        int64_t v;
        if (strcmp(a->kw[i]->name, "dims") != 0) {
            ax_error(st->ctx, a->kw[i]->loc, "%s has no keyword '%s'; did you mean 'dims'?",
                     "split", a->kw[i]->name);
            return false;
        }
        if (!index_int(st, a->kw[i]->lhs, "dims", &v)) return false;
        if (v < -IR_MAX_RANK || v >= IR_MAX_RANK) {
            ax_error(st->ctx, a->kw[i]->lhs->loc, "dims expects an integer axis in [-%d, %d)",
                     IR_MAX_RANK, IR_MAX_RANK);
            return false;
        }
        *axis = (int)v;
    }
    return true;
}

/* The pieces of split(x, sizes): begin/end along the axis, the sizes' sum
 * for pass_shape to check against the axis. */
static bool split_pieces(lower_state *st, const ast_stmt *s, const lower_args *a, ir_attrs *pieces)
{
    const ast_node *how = a->pos[1];
    int64_t n, total = 0, start = 0;
    if (how->kind != AST_TUPLE || how->nargs != s->ntargets) {
        ax_error(st->ctx, how->loc, "split expects a tuple of %d sizes, one per name", s->ntargets);
        return false;
    }
    for (int i = 0; i < s->ntargets; i++) {
        if (!index_int(st, how->args[i], "a split size", &n)) return false;
        if (n < 1) {
            ax_error(st->ctx, how->args[i]->loc, "split sizes must be positive");
            return false;
        }
        pieces[i].begin[pieces[i].axis] = start;
        pieces[i].end[pieces[i].axis] = start += n;
        pieces[i].step[pieces[i].axis] = 1;
        total += n;
    }
    for (int i = 0; i < s->ntargets; i++) pieces[i].split_total = total;
    return true;
}

void lower_split(lower_state *st, const ast_stmt *s)
{
    const ast_node *v = s->value;
    bool ok = false;
    int x = IR_NONE, axis;
    ir_attrs *pieces = ax_alloc(st->ctx->arena, sizeof *pieces * (size_t)s->ntargets);
    lower_args a;
    lower_split_args(st, v, &a);
    if (a.npos != 2) {
        ax_error(st->ctx, v->loc, "%s expects %s", "split", "(x, (s0, s1, ...); dims=k)");
    } else if (split_axis(st, &a, &axis)) {
        for (int i = 0; i < s->ntargets; i++) {
            pieces[i] = ir_attrs_unset();
            pieces[i].axis = axis;
        }
        ok = split_pieces(st, s, &a, pieces);
        x = lower_expr(st, a.pos[0]);
    }
    for (int i = 0; i < s->ntargets; i++) {
        int id = ok && x != IR_NONE ? lower_add(st, IR_OP_slice, &x, 1, &pieces[i], v->loc, NULL)
                                    : IR_NONE;
        lower_scope_bind(st, s->targets[i]->name, id, NULL);
    }
}
