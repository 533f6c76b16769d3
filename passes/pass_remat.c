/* pass_remat.c — rematerialisation under a memory budget (--ram), for
 * inference graphs: when the planned arena exceeds the budget, values that
 * sit idle across the peak are dropped after their last use before it and
 * recomputed right before their first use after it.
 *
 * Contract.  A value v is a candidate when it is live across the peak node
 * p (defined before p, used after p, not read by p itself), is no graph
 * output, and every operand of v is available where the copy goes: a source
 * (input, param, scalar), a graph output, or a value live there anyway.  So
 * a copy never extends another value's life, and the bytes live at every
 * node stay the same or drop: at p they drop by v's size.  Of the
 * candidates the one with the fewest FLOPs per byte freed (ir_node_flops)
 * is taken; the plan is redone, until it fits or no candidate is left.  A
 * copy is never copied again, so the graph at most doubles.  Copies are
 * ordinary nodes (ir_node.recomputed; their name says "(recomputed)"); this pass runs after every rewrite (it is not in the -O
 * table: the driver runs it after the memory plan), so nothing can hoist a
 * copy back or merge it with its original. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* Last node reading id (graph outputs: past the end); -1 if unused. */
static int last_use(const ir_graph *g, int id)
{
    if (ir_is_output(g, id))
        return g->nnodes;
    for (int u = g->nnodes - 1; u > id; u--)
        for (int k = 0; !g->nodes[u].dead && k < g->nodes[u].nsrc; k++)
            if (g->nodes[u].src[k] == id)
                return u;
    return -1;
}

static bool reads(const ir_node *n, int id)
{
    for (int k = 0; k < n->nsrc; k++)
        if (n->src[k] == id)
            return true;
    return false;
}

/* The first node after p reading v. */
static int first_use_after(const ir_graph *g, int v, int p)
{
    for (int u = p + 1; u < g->nnodes; u++)
        if (!g->nodes[u].dead && reads(&g->nodes[u], v))
            return u;
    return -1;
}

/* Every operand of v is a source, an output or live at node u anyway. */
static bool operands_available(const ir_graph *g, const ir_node *v, int u)
{
    for (int k = 0; k < v->nsrc; k++) {
        const int s = v->src[k];
        if (s == IR_NONE || ir_ops[g->nodes[s].op].kind == IR_SOURCE)
            continue;
        if (last_use(g, s) < u)
            return false;
    }
    return true;
}

/* The cheapest candidate (FLOPs per byte freed) live across p, or -1. */
static int pick_candidate(const ir_graph *g, int p)
{
    int best = -1;
    double best_cost = 0;
    for (int v = 0; v < p; v++) {
        const ir_node *n = &g->nodes[v];
        if (n->dead || n->recomputed || ir_ops[n->op].kind == IR_SOURCE || n->offset < 0 || ir_is_output(g, v) ||
            reads(&g->nodes[p], v) || last_use(g, v) <= p)
            continue;
        const int u = first_use_after(g, v, p);
        if (u < 0 || !operands_available(g, n, u))
            continue;
        const double cost = ir_node_flops(g, n) / (double)ir_nbytes(n);
        if (best < 0 || cost < best_cost) {
            best = v;
            best_cost = cost;
        }
    }
    return best;
}

/* Copies v right before its first use after p; the uses after p read the
 * copy.  Returns the copy's FLOPs. */
static double recompute(ir_graph *g, int v, int p)
{
    const int u = first_use_after(g, v, p);
    const ir_node orig = g->nodes[v];
    const int copy = ir_insert(g, u, orig.op, orig.src, orig.nsrc, orig.loc);
    ir_node *c = &g->nodes[copy];
    c->dtype = orig.dtype;
    c->rank = orig.rank;
    memcpy(c->shape, orig.shape, sizeof c->shape);
    c->attrs = orig.attrs;
    c->recomputed = true;
    c->name = ax_sprintf(g->ctx->arena, "%s (recomputed)", orig.name ? orig.name : ir_ops[orig.op].name);
    for (int id = copy + 1; id < g->nnodes; id++)
        for (int k = 0; k < g->nodes[id].nsrc; k++)
            if (g->nodes[id].src[k] == v)
                g->nodes[id].src[k] = copy;
    return ir_node_flops(g, c);
}

int pass_remat(ir_graph *g, size_t budget, pass_remat_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->peak_before = g->arena_bytes;
    const bool share = g->share_buffers;
    while (g->arena_bytes > budget && g->nnodes > 0) {
        size_t live;
        const int p = pass_memplan_peak(g, &live);
        const int v = pick_candidate(g, p);
        if (v < 0)
            break;
        stats->extra_flops += recompute(g, v, p);
        stats->recomputed++;
        pass_memplan_with(g, share);
    }
    stats->peak_after = g->arena_bytes;
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead && ir_ops[g->nodes[id].op].kind != IR_SOURCE)
            stats->flops += ir_node_flops(g, &g->nodes[id]);
    return 0;
}
