/* pass_memplan.c — places intermediate tensors in one arena by liveness.
 *
 * Arena-resident: every live node that is neither a source (inputs, params
 * and scalars have their own storage) nor a graph output (written straight
 * into the caller's buffer).  A node's buffer is live from the node's index
 * to its last use inclusive; kernels read their operands while writing the
 * result, so a buffer never shares bytes with anything live at its
 * definition, operands included.  A node whose C kernel needs workspace
 * (ir_scratch_bytes > 0, outputs included) also gets a scratch buffer live
 * only at its own index.  Placement is greedy first-fit in node order; all
 * offsets and sizes are multiples of 64 so every buffer is 64-byte aligned. */
#include "passes.h"

#include <stdlib.h>

#define ARENA_ALIGN 64

typedef struct mem_buffer {
    int node;
    bool scratch;
    int start, end;   /* live node indices, inclusive */
    size_t size;      /* rounded up to ARENA_ALIGN */
    int64_t offset;
} mem_buffer;

typedef struct mem_plan {
    mem_buffer *bufs;
    int n;
} mem_plan;

static size_t align_up(size_t bytes)
{
    return (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
}

static void *checked_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size);
    if (!p)
        ax_die("out of memory planning the arena");
    return p;
}

static bool is_output(const ir_graph *g, int id)
{
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == id)
            return true;
    return false;
}

static bool in_arena(const ir_graph *g, int id)
{
    const ir_node *n = &g->nodes[id];
    return !n->dead && ir_ops[n->op].kind != IR_SOURCE && !is_output(g, id);
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

/* Buffers in order of their first live index (scratch before the result). */
static mem_plan collect_buffers(const ir_graph *g)
{
    mem_plan p = {checked_calloc(2 * (size_t)g->nnodes, sizeof(mem_buffer)), 0};
    int *last = last_uses(g);
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->dead || ir_ops[n->op].kind == IR_SOURCE)
            continue;
        size_t scratch = ir_scratch_bytes(n, g);
        if (scratch > 0)
            p.bufs[p.n++] = (mem_buffer){id, true, id, id, align_up(scratch), -1};
        if (in_arena(g, id))
            p.bufs[p.n++] = (mem_buffer){id, false, id, last[id], align_up(ir_nbytes(n)), -1};
    }
    free(last);
    return p;
}

static int by_offset(const void *a, const void *b)
{
    const mem_buffer *x = *(const mem_buffer *const *)a, *y = *(const mem_buffer *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Lowest offset where b fits beside every already placed buffer (bufs[0..placed))
 * whose live range meets b's. */
static int64_t first_fit(const mem_plan *p, int placed, const mem_buffer *b, const mem_buffer **tmp)
{
    int nconflicts = 0;
    for (int k = 0; k < placed; k++)
        if (p->bufs[k].start <= b->end && p->bufs[k].end >= b->start)
            tmp[nconflicts++] = &p->bufs[k];
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

static size_t place_all(mem_plan *p)
{
    const mem_buffer **tmp = checked_calloc((size_t)p->n, sizeof *tmp);
    size_t peak = 0;
    for (int k = 0; k < p->n; k++) {
        mem_buffer *b = &p->bufs[k];
        b->offset = first_fit(p, k, b, tmp);
        if ((size_t)b->offset + b->size > peak)
            peak = (size_t)b->offset + b->size;
    }
    free(tmp);
    return peak;
}

/* The most bytes live at any one node index: no plan can do better. */
static size_t live_lower_bound(const mem_plan *p, int nnodes)
{
    int64_t *delta = checked_calloc((size_t)nnodes + 1, sizeof *delta);
    for (int k = 0; k < p->n; k++) {
        delta[p->bufs[k].start] += (int64_t)p->bufs[k].size;
        delta[p->bufs[k].end + 1] -= (int64_t)p->bufs[k].size;
    }
    int64_t live = 0, most = 0;
    for (int t = 0; t < nnodes; t++) {
        live += delta[t];
        if (live > most)
            most = live;
    }
    free(delta);
    return (size_t)most;
}

int pass_memplan(ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++)
        g->nodes[id].offset = g->nodes[id].scratch_offset = -1;
    mem_plan p = collect_buffers(g);
    g->arena_bytes = align_up(place_all(&p));
    for (int k = 0; k < p.n; k++) {
        ir_node *n = &g->nodes[p.bufs[k].node];
        if (p.bufs[k].scratch)
            n->scratch_offset = p.bufs[k].offset;
        else
            n->offset = p.bufs[k].offset;
    }
    free(p.bufs);
    return 0;
}

static void report_buffer(const ir_graph *g, const mem_buffer *b, ax_buf *out)
{
    const ir_node *n = &g->nodes[b->node];
    const char *kind = b->scratch ? " (scratch)" : "";
    int64_t offset = b->scratch ? n->scratch_offset : n->offset;
    if (n->name)
        ax_buf_printf(out, "  %%%-4d %s '%s'%s", b->node, ir_ops[n->op].name, n->name, kind);
    else
        ax_buf_printf(out, "  %%%-4d %s%s", b->node, ir_ops[n->op].name, kind);
    ax_buf_printf(out, "  offset %lld  size %zu  live %d..%d\n", (long long)offset, b->size,
                  b->start, b->end);
}

void pass_memplan_report(const ir_graph *g, ax_buf *out)
{
    mem_plan p = collect_buffers(g);
    size_t naive = 0;
    for (int k = 0; k < p.n; k++)
        naive += p.bufs[k].size;
    ax_buf_printf(out, "memory plan for %s\n", g->name ? g->name : "?");
    ax_buf_printf(out, "  peak         %zu bytes\n", g->arena_bytes);
    ax_buf_printf(out, "  lower bound  %zu bytes\n", live_lower_bound(&p, g->nnodes));
    ax_buf_printf(out, "  naive sum    %zu bytes\n", naive);
    ax_buf_printf(out, "  %d arena buffers:\n", p.n);
    for (int k = 0; k < p.n; k++)
        report_buffer(g, &p.bufs[k], out);
    free(p.bufs);
}
