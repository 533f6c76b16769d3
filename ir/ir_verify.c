/* ir_verify.c — structural invariants of a graph, checked between passes so
 * that a pass which breaks the IR is caught where it happened rather than as
 * wrong generated code.  Every problem is an internal error reported through
 * the context diagnostics ("internal: IR verification failed: ..."); the
 * function returns how many there were. */
#include "ir.h"

#include <stdarg.h>

typedef struct verifier {
    const ir_graph *g;
    int problems;
} verifier;

static void problem(verifier *v, ax_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(verifier *v, ax_loc loc, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ax_error(v->g->ctx, loc, "internal: IR verification failed: %s", msg);
    v->problems++;
}

static void verify_operands(verifier *v, int id, const ir_node *n)
{
    const ir_opinfo *info = &ir_ops[n->op];
    bool variadic = (info->flags & IR_VARIADIC) != 0;
    int expected = info->max_src + (n->attrs.residual != IR_NONE);
    bool count_ok = variadic ? n->nsrc >= info->min_src && n->nsrc <= info->max_src
                             : n->nsrc == expected;
    if (!count_ok)
        problem(v, n->loc, "%%%d %s has %d operands, expected %d..%d", id, info->name, n->nsrc,
                variadic ? info->min_src : expected, variadic ? info->max_src : expected);
    for (int i = 0; i < n->nsrc; i++) {
        int s = n->src[i];
        if (s == IR_NONE) {
            if (i >= 32 || !(info->optional >> i & 1u))
                problem(v, n->loc, "%%%d %s: required operand %d is missing", id, info->name, i);
        } else if (s < 0 || s >= id) {
            problem(v, n->loc, "%%%d %s: operand %d is %%%d, not defined before use", id,
                    info->name, i, s);
        } else if (v->g->nodes[s].dead) {
            problem(v, n->loc, "%%%d %s: operand %d is the dead node %%%d", id, info->name, i, s);
        }
    }
}

static void verify_shape(verifier *v, int id, const ir_node *n)
{
    if (n->rank < 0 || n->rank > IR_MAX_RANK) {
        problem(v, n->loc, "%%%d %s has rank %d (limit %d)", id, ir_ops[n->op].name, n->rank,
                IR_MAX_RANK);
        return;
    }
    for (int d = 0; d < n->rank; d++)
        if (n->shape[d] <= 0)
            problem(v, n->loc, "%%%d %s: dimension %d is %lld", id, ir_ops[n->op].name, d,
                    (long long)n->shape[d]);
    if ((unsigned)n->dtype >= AXRT_DTYPE_COUNT)
        problem(v, n->loc, "%%%d %s has dtype %d", id, ir_ops[n->op].name, (int)n->dtype);
}

/* attrs.residual: the operand appended after the op's own, of the result's
 * shape and dtype, on an op whose code generator applies epilogues. */
static void verify_residual(verifier *v, int id, const ir_node *n)
{
    const int r = n->attrs.residual;
    if (r == IR_NONE)
        return;
    if (!ir_op_has(n->op, IR_EPILOGUE) || r != ir_ops[n->op].max_src || r >= n->nsrc || n->src[r] == IR_NONE) {
        problem(v, n->loc, "%%%d %s: residual operand %d is not the appended operand", id,
                ir_ops[n->op].name, r);
        return;
    }
    const ir_node *res = &v->g->nodes[n->src[r]];
    bool same = res->rank == n->rank && res->dtype == n->dtype;
    for (int d = 0; same && d < n->rank; d++)
        same = res->shape[d] == n->shape[d];
    if (!same)
        problem(v, n->loc, "%%%d %s: residual %%%d differs from the result in shape or dtype", id,
                ir_ops[n->op].name, n->src[r]);
}

/* A fused loop's operand strides (attrs.strides) stay inside each operand:
 * the farthest element read, sum((dim - 1) * stride), exists. */
static void verify_fused_strides(verifier *v, int id, const ir_node *n)
{
    if (n->op != IR_OP_fused_elementwise)
        return;
    if (!n->attrs.strides || !n->attrs.steps || n->attrs.nsteps <= 0) {
        problem(v, n->loc, "%%%d %s has no program or operand strides", id, ir_ops[n->op].name);
        return;
    }
    for (int k = 0; k < n->nsrc && k < IR_MAX_FUSED_SRC; k++) {
        if (n->src[k] < 0 || n->src[k] >= id)
            continue;
        int64_t last = 0;
        bool negative = false;
        for (int d = 0; d < n->rank; d++) {
            negative |= n->attrs.strides[k][d] < 0;
            last += (n->shape[d] - 1) * n->attrs.strides[k][d];
        }
        if (negative || last >= ir_numel(&v->g->nodes[n->src[k]]))
            problem(v, n->loc, "%%%d %s: operand %d (%%%d) is read outside its %lld elements", id,
                    ir_ops[n->op].name, k, n->src[k], (long long)ir_numel(&v->g->nodes[n->src[k]]));
    }
}

/* Several results (ir.h): only result nodes read a multi-result producer;
 * a result reads one, with an index below its count, and no other live
 * result of that producer has the same index. */
static void verify_results(verifier *v, int id, const ir_node *n)
{
    const ir_graph *g = v->g;
    for (int i = 0; i < n->nsrc; i++) {
        const int s = n->src[i];
        if (s >= 0 && s < id && ir_has_results(g->nodes[s].op) && n->op != IR_OP_result)
            problem(v, n->loc, "%%%d %s reads the multi-result %%%d %s; only result nodes may",
                    id, ir_ops[n->op].name, s, ir_ops[g->nodes[s].op].name);
    }
    if (n->op != IR_OP_result || n->nsrc != 1 || n->src[0] < 0 || n->src[0] >= id)
        return;
    const ir_node *p = &g->nodes[n->src[0]];
    if (!ir_has_results(p->op)) {
        problem(v, n->loc, "%%%d result reads %%%d %s, which has a single value", id, n->src[0],
                ir_ops[p->op].name);
        return;
    }
    if (n->attrs.index < 0 || n->attrs.index >= p->attrs.nresults)
        problem(v, n->loc, "%%%d result: index %d outside the %d results of %%%d", id,
                n->attrs.index, p->attrs.nresults, n->src[0]);
    for (int k = id + 1; k < g->nnodes; k++)
        if (!g->nodes[k].dead && g->nodes[k].op == IR_OP_result && g->nodes[k].nsrc == 1 &&
            g->nodes[k].src[0] == n->src[0] && g->nodes[k].attrs.index == n->attrs.index)
            problem(v, n->loc, "%%%d and %%%d are both result %d of %%%d", id, k, n->attrs.index,
                    n->src[0]);
}

static void verify_node(verifier *v, int id)
{
    const ir_node *n = &v->g->nodes[id];
    if ((unsigned)n->op >= IR_OP_COUNT) {
        problem(v, n->loc, "%%%d has op %d", id, (int)n->op);
        return;
    }
    if (n->dead)
        return;
    verify_operands(v, id, n);
    verify_shape(v, id, n);
    verify_residual(v, id, n);
    verify_fused_strides(v, id, n);
    verify_results(v, id, n);
    if (n->data && n->op != IR_OP_param)
        problem(v, n->loc, "%%%d %s carries data; only params do", id, ir_ops[n->op].name);
    if (n->attrs.act != IR_NONE &&
        ((unsigned)n->attrs.act >= IR_OP_COUNT || ir_ops[n->attrs.act].kind != IR_UNARY))
        problem(v, n->loc, "%%%d %s: fused act %d is not a unary op", id, ir_ops[n->op].name,
                n->attrs.act);
}

/* The signature and return lists point at live nodes of the right kind. */
static void verify_boundary(verifier *v)
{
    const ir_graph *g = v->g;
    if (g->ninputs < 0 || g->noutputs < 0) {
        problem(v, g->loc, "%d inputs and %d outputs", g->ninputs, g->noutputs);
        return;
    }
    for (int i = 0; i < g->ninputs; i++) {
        int id = g->inputs[i];
        if (id < 0 || id >= g->nnodes || g->nodes[id].op != IR_OP_input)
            problem(v, g->loc, "input %d refers to %%%d, not an input node", i, id);
    }
    int input_nodes = 0;
    for (int id = 0; id < g->nnodes; id++)
        input_nodes += g->nodes[id].op == IR_OP_input;
    if (input_nodes != g->ninputs)
        problem(v, g->loc, "%d input nodes but %d signature inputs", input_nodes, g->ninputs);
    if (g->noutputs == 0)
        problem(v, g->loc, "the model returns nothing");
    for (int i = 0; i < g->noutputs; i++) {
        int id = g->outputs[i];
        if (id < 0 || id >= g->nnodes || g->nodes[id].dead)
            problem(v, g->loc, "output %d refers to %%%d, not a live node", i, id);
        else if (ir_has_results(g->nodes[id].op))
            problem(v, g->loc, "output %d is the multi-result %%%d; return its results", i, id);
    }
}

int ir_verify(const ir_graph *g)
{
    verifier v = {g, 0};
    for (int id = 0; id < g->nnodes; id++)
        verify_node(&v, id);
    verify_boundary(&v);
    return v.problems;
}
