/* pass_memplan.c — places intermediate tensors in one arena by liveness.
 *
 * Arena-resident: every live node that is neither a source (inputs, params
 * and scalars have their own storage) nor a graph output (written straight
 * into the caller's buffer).  A buffer is live from its defining node's index
 * to its last use inclusive; kernels read their operands while writing the
 * result, so a buffer never shares bytes with anything live at its
 * definition, operands included — except where sharing is planned
 * (pass_memplan_with(g, true), -O1 and up):
 *   alias     a reshape never copies: it is its operand's buffer (a reshape
 *             of an input, param or output has no buffer and codegen uses the
 *             operand's pointer), and that buffer lives until the reshape's
 *             last use;
 *   in-place  an op whose kernel reads element i before writing element i
 *             and nothing else (unary ops but cast; add/sub/mul/div, on an
 *             operand of the result's shape, either side; softmax and
 *             log_softmax; a fused_elementwise loop, on an operand it reads
 *             in the result's order; a depthwise conv the backend computes over its
 *             input, ir_depthwise_inplace) overwrites that operand's buffer
 *             when the buffer dies there.
 * A node whose C kernel needs workspace (ir_scratch_bytes > 0, outputs
 * included) also gets a scratch buffer live only at its own index.
 * Placement is first-fit, tried in definition order and in decreasing size;
 * the smaller peak wins.  Offsets and sizes are multiples of 64 so every
 * buffer is 64-byte aligned. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 64

typedef struct mem_buffer {
    int node;         /* the node that defines it */
    bool scratch;
    int start, end;   /* live node indices, inclusive */
    size_t size;      /* rounded up to ARENA_ALIGN */
    int64_t offset;
} mem_buffer;

typedef struct mem_plan {
    mem_buffer *bufs;
    int n;
    int *owner;       /* per node: the buffer holding its value, or -1 */
    size_t naive;     /* bytes if every tensor had a buffer of its own */
} mem_plan;

static size_t align_up(size_t bytes)
{
    return (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
}

static void *checked_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size);
    if (!p)
        ax_out_of_memory(0);
    return p;
}

static bool in_arena(const ir_graph *g, int id)
{
    const ir_node *n = &g->nodes[id];
    return !n->dead && ir_ops[n->op].kind != IR_SOURCE && !ir_is_output(g, id);
}

/* Index of the last live node reading each node (the node itself if none). */
static int *last_uses(const ir_graph *g)
{
    int *last = checked_calloc((size_t)g->nnodes, sizeof *last);
    for (int id = 0; id < g->nnodes; id++) {
        last[id] = id;
        const ir_node *n = &g->nodes[id];
        for (int i = 0; !n->dead && i < n->nsrc; i++)
            if (n->src[i] != IR_NONE)
                last[n->src[i]] = id;
    }
    return last;
}

/* The runtime kernel for n is correct with y == operand k (see the contract
 * at the top of the file; runtime/axrt_kernels.inc). */
static bool kernel_allows_inplace(const ir_graph *g, const ir_node *n, int k)
{
    if (n->op == IR_OP_conv)
        return k == 0 && ir_depthwise_inplace(n, g);
    if (n->op == IR_OP_fused_elementwise)
        return ir_fused_in_order(g, n, k);
    if (!ir_ops[n->op].can_inplace || n->attrs.residual != IR_NONE)
        return false;
    switch (ir_ops[n->op].kind) {
    case IR_UNARY: return n->op != IR_OP_cast;
    case IR_BINARY: return ir_same_shape(&g->nodes[n->src[k]], n);
    default: return k == 0 && (n->op == IR_OP_softmax || n->op == IR_OP_log_softmax);
    }
}

/* Operand i of n is read at n's own element index (a fused loop's operand
 * strides may permute or re-shape the read: ir_fused_in_order). */
static bool read_in_order(const ir_graph *g, const ir_node *n, int i)
{
    if (n->op == IR_OP_fused_elementwise)
        return ir_fused_in_order(g, n, i);
    return ir_same_shape(&g->nodes[n->src[i]], n);
}

/* n (at id) may overwrite operand k's buffer: the buffer dies at id, has
 * n's size, and no other operand reads it through a different shape. */
static bool can_inplace(const ir_graph *g, const mem_plan *p, int id, int k)
{
    const ir_node *n = &g->nodes[id];
    if (k >= n->nsrc || !kernel_allows_inplace(g, n, k) || p->owner[n->src[k]] < 0)
        return false;
    const int own = p->owner[n->src[k]];
    const mem_buffer *b = &p->bufs[own];
    if (b->scratch || b->end != id || ir_nbytes(&g->nodes[n->src[k]]) != ir_nbytes(n))
        return false;
    for (int i = 0; i < n->nsrc; i++)
        if (i != k && n->src[i] != IR_NONE && p->owner[n->src[i]] == own && !read_in_order(g, n, i))
            return false;
    return true;
}

/* The operand whose buffer node id's value may take over: a reshape's
 * operand (alias), else an operand it may overwrite in place (binary ops
 * try both), else -1. */
static int shared_operand(const ir_graph *g, const mem_plan *p, int id)
{
    if (!g->share_buffers)
        return -1;
    if (g->nodes[id].op == IR_OP_reshape)
        return 0;
    for (int k = 0; k < 2; k++)
        if (can_inplace(g, p, id, k))
            return k;
    return -1;
}

static void add_buffer(mem_plan *p, int id, bool scratch, int end, size_t bytes)
{
    p->bufs[p->n++] = (mem_buffer){id, scratch, id, end, align_up(bytes), -1};
    p->naive += align_up(bytes);
}

/* Node id's value: its own buffer, its operand's (alias, in-place), or none
 * (a reshape of a non-arena value). */
static void place_value(const ir_graph *g, mem_plan *p, const int *last, int id)
{
    const ir_node *n = &g->nodes[id];
    const int k = shared_operand(g, p, id);
    if (k >= 0) {
        const int own = p->owner[n->src[k]];
        if (n->op != IR_OP_reshape)
            p->naive += align_up(ir_nbytes(n));
        if (own >= 0) {
            p->owner[id] = own;
            if (last[id] > p->bufs[own].end)
                p->bufs[own].end = last[id];
        }
        return;
    }
    p->owner[id] = p->n;
    add_buffer(p, id, false, last[id], ir_nbytes(n));
}

/* Buffers in order of their first live index (scratch before the result). */
static mem_plan collect_buffers(const ir_graph *g)
{
    mem_plan p = {checked_calloc(2 * (size_t)g->nnodes, sizeof(mem_buffer)), 0,
                  checked_calloc((size_t)g->nnodes, sizeof(int)), 0};
    int *last = last_uses(g);
    for (int id = 0; id < g->nnodes; id++) {
        p.owner[id] = -1;
        const ir_node *n = &g->nodes[id];
        if (n->dead || ir_ops[n->op].kind == IR_SOURCE)
            continue;
        size_t scratch = ir_scratch_bytes(n, g);
        if (scratch > 0)
            add_buffer(&p, id, true, id, scratch);
        if (in_arena(g, id))
            place_value(g, &p, last, id);
    }
    free(last);
    return p;
}

static void free_plan(mem_plan *p)
{
    free(p->bufs);
    free(p->owner);
}

static int by_offset(const void *a, const void *b)
{
    const mem_buffer *x = *(const mem_buffer *const *)a, *y = *(const mem_buffer *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Lowest offset where b fits beside every already placed buffer whose live
 * range meets b's. */
static int64_t first_fit(mem_buffer *const *placed, int nplaced, const mem_buffer *b,
                         const mem_buffer **tmp)
{
    int nconflicts = 0;
    for (int k = 0; k < nplaced; k++)
        if (placed[k]->start <= b->end && placed[k]->end >= b->start)
            tmp[nconflicts++] = placed[k];
    qsort(tmp, (size_t)nconflicts, sizeof *tmp, by_offset);
    int64_t candidate = 0;
    for (int k = 0; k < nconflicts; k++) {
        if (candidate + (int64_t)b->size <= tmp[k]->offset)
            break;
        int64_t end = tmp[k]->offset + (int64_t)tmp[k]->size;
        if (end > candidate)
            candidate = end;
    }
    return candidate;
}

/* Places the buffers in the order given; returns the peak. */
static size_t place_in_order(mem_buffer **order, int n)
{
    const mem_buffer **tmp = checked_calloc((size_t)n, sizeof *tmp);
    size_t peak = 0;
    for (int k = 0; k < n; k++) {
        mem_buffer *b = order[k];
        b->offset = first_fit(order, k, b, tmp);
        if ((size_t)b->offset + b->size > peak)
            peak = (size_t)b->offset + b->size;
    }
    free(tmp);
    return peak;
}

static int by_size_then_start(const void *a, const void *b)
{
    const mem_buffer *x = *(const mem_buffer *const *)a, *y = *(const mem_buffer *const *)b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    return (x->start > y->start) - (x->start < y->start);
}

/* First-fit in definition order and in decreasing size; keeps the better. */
static size_t place_all(mem_plan *p)
{
    mem_buffer **order = checked_calloc((size_t)p->n, sizeof *order);
    int64_t *by_start = checked_calloc((size_t)p->n, sizeof *by_start);
    for (int k = 0; k < p->n; k++)
        order[k] = &p->bufs[k];
    size_t best = place_in_order(order, p->n);
    for (int k = 0; k < p->n; k++)
        by_start[k] = p->bufs[k].offset;
    qsort(order, (size_t)p->n, sizeof *order, by_size_then_start);
    size_t sized = place_in_order(order, p->n);
    if (sized < best)
        best = sized;
    else
        for (int k = 0; k < p->n; k++)
            p->bufs[k].offset = by_start[k];
    free(by_start);
    free(order);
    return best;
}

/* Bytes live at each node index; returns the index with the most (the
 * lower bound no plan can beat) and its total in *most. */
static int peak_pressure(const mem_plan *p, int nnodes, size_t *most)
{
    int64_t *delta = checked_calloc((size_t)nnodes + 1, sizeof *delta);
    for (int k = 0; k < p->n; k++) {
        delta[p->bufs[k].start] += (int64_t)p->bufs[k].size;
        delta[p->bufs[k].end + 1] -= (int64_t)p->bufs[k].size;
    }
    int64_t live = 0, best = 0;
    int at = 0;
    for (int t = 0; t < nnodes; t++) {
        live += delta[t];
        if (live > best) {
            best = live;
            at = t;
        }
    }
    free(delta);
    *most = (size_t)best;
    return at;
}

int pass_memplan_with(ir_graph *g, bool share)
{
    g->share_buffers = share;
    for (int id = 0; id < g->nnodes; id++)
        g->nodes[id].offset = g->nodes[id].scratch_offset = -1;
    mem_plan p = collect_buffers(g);
    g->arena_bytes = align_up(place_all(&p));
    for (int k = 0; k < p.n; k++)
        if (p.bufs[k].scratch)
            g->nodes[p.bufs[k].node].scratch_offset = p.bufs[k].offset;
    for (int id = 0; id < g->nnodes; id++)
        if (p.owner[id] >= 0)
            g->nodes[id].offset = p.bufs[p.owner[id]].offset;
    free_plan(&p);
    return 0;
}

int pass_memplan(ir_graph *g)
{
    return pass_memplan_with(g, false);
}

/* ---- reports -------------------------------------------------------------- */

static void put_node_name(const ir_graph *g, int id, ax_buf *out)
{
    const ir_node *n = &g->nodes[id];
    if (n->name)
        ax_buf_printf(out, "%%%-4d %s '%s'", id, ir_ops[n->op].name, n->name);
    else
        ax_buf_printf(out, "%%%-4d %s", id, ir_ops[n->op].name);
}

/* One buffer, then the nodes sharing it (aliases and in-place results). */
static void report_buffer(const ir_graph *g, const mem_plan *p, int k, ax_buf *out)
{
    const mem_buffer *b = &p->bufs[k];
    ax_buf_puts(out, "  ");
    put_node_name(g, b->node, out);
    ax_buf_printf(out, "%s  offset %lld  size %zu  live %d..%d\n", b->scratch ? " (scratch)" : "",
                  (long long)b->offset, b->size, b->start, b->end);
    for (int id = b->node + 1; !b->scratch && id < g->nnodes; id++) {
        if (p->owner[id] != k)
            continue;
        ax_buf_puts(out, "      shared by ");
        put_node_name(g, id, out);
        ax_buf_puts(out, g->nodes[id].op == IR_OP_reshape ? " (alias)\n" : " (in-place)\n");
    }
}

/* The plan as placed: offsets come from the nodes. */
static mem_plan placed_plan(const ir_graph *g)
{
    mem_plan p = collect_buffers(g);
    for (int k = 0; k < p.n; k++) {
        const ir_node *n = &g->nodes[p.bufs[k].node];
        p.bufs[k].offset = p.bufs[k].scratch ? n->scratch_offset : n->offset;
    }
    return p;
}

void pass_memplan_report(const ir_graph *g, ax_buf *out)
{
    mem_plan p = placed_plan(g);
    size_t bound;
    peak_pressure(&p, g->nnodes, &bound);
    ax_buf_printf(out, "memory plan for %s\n", g->name ? g->name : "?");
    ax_buf_printf(out, "  peak         %zu bytes\n", g->arena_bytes);
    ax_buf_printf(out, "  lower bound  %zu bytes\n", bound);
    ax_buf_printf(out, "  naive sum    %zu bytes\n", p.naive);
    ax_buf_printf(out, "  %d arena buffers:\n", p.n);
    for (int k = 0; k < p.n; k++)
        report_buffer(g, &p, k, out);
    free_plan(&p);
}

size_t pass_memplan_lower_bound(const ir_graph *g)
{
    mem_plan p = placed_plan(g);
    size_t bound;
    peak_pressure(&p, g->nnodes, &bound);
    free_plan(&p);
    return bound;
}

int pass_memplan_check_budget(const ir_graph *g, size_t budget)
{
    if (g->arena_bytes <= budget)
        return 0;
    mem_plan p = placed_plan(g);
    size_t live;
    const int at = peak_pressure(&p, g->nnodes, &live);
    const ir_node *n = &g->nodes[at];
    ax_error(g->ctx, n->loc,
             "model '%s' needs a %zu-byte arena, over the --ram budget of %zu bytes; peak pressure "
             "at %%%d %s%s%s%s: %zu bytes live",
             g->name, g->arena_bytes, budget, at, ir_ops[n->op].name, n->name ? " '" : "",
             n->name ? n->name : "", n->name ? "'" : "", live);
    for (int k = 0; k < p.n; k++) {
        const mem_buffer *b = &p.bufs[k];
        if (b->start > at || b->end < at)
            continue;
        ax_buf line = {0};
        put_node_name(g, b->node, &line);
        ax_note(g->ctx, g->nodes[b->node].loc, "live there: %.*s%s, %zu bytes, live %d..%d",
                (int)line.len, line.data, b->scratch ? " (scratch)" : "", b->size, b->start, b->end);
        ax_buf_free(&line);
    }
    free_plan(&p);
    return 1;
}
