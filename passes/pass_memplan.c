/* pass_memplan.c — places intermediate tensors in one arena by liveness.
 *
 * Arena-resident: every live node that is neither a source (inputs, params
 * and scalars have their own storage) nor a graph output (written straight
 * into the caller's buffer).  A buffer is live from its defining node's index
 * to its last use inclusive; kernels read their operands while writing the
 * result, so a buffer never shares bytes with anything live at its
 * definition, operands included (a node's live_until extends its last use
 * for a reader outside the IR) — except where sharing is planned
 * (pass_memplan_with(g, true), -O1 and up):
 *   alias     an op whose ops.def inplace column is ALIAS (reshape) never
 *             copies: it is its operand's buffer (a reshape of an input,
 *             param or output has no buffer and codegen uses the operand's
 *             pointer), and that buffer lives until the reshape's last use;
 *   in-place  an op whose column is SAME (its kernel reads element i before
 *             writing element i: unary ops but cast, add/sub/mul/div, softmax,
 *             layernorm, batchnorm, fused loops), on an operand it reads at the
 *             result's own index, or TARGET where the target's can_inplace
 *             allows (the C target: a depthwise conv over its input),
 *             overwrites that operand's buffer when the buffer dies there;
 *             the node's inplace_of records which operand.
 * A node whose kernel needs workspace (the target's scratch_bytes > 0,
 * outputs included) also gets a scratch buffer live only at its own index.
 * The results of a multi-result producer (ir.h) are written by the producer,
 * so their buffers are live from the producer on, apart from its operands.
 * Placement is first-fit, tried in definition order and in decreasing size;
 * the smaller peak wins.  Offsets and sizes are multiples of 64 so every
 * buffer is 64-byte aligned. */
#include "passes.h"
#include "ir_use.h"

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

/* A multi-result producer has no value of its own: its results do. */
static bool in_arena(const ir_graph *g, int id)
{
    const ir_node *n = &g->nodes[id];
    return !n->dead && ir_ops[n->op].kind != IR_SOURCE && !ir_has_results(n->op) &&
           !ir_is_output(g, id) && !ir_runs_in_reader(n);
}

/* Index of the last live node reading each node (the node itself if none). */
static int *last_uses(const ir_graph *g)
{
    int *last = checked_calloc((size_t)g->nnodes + 1, sizeof *last);
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++) {
        last[id] = u.last[id] != IR_NONE ? u.last[id] : id;
        if (g->nodes[id].live_until > last[id])
            last[id] = g->nodes[id].live_until;
    }
    /* a node run in its reader has its operands read there (last to first: a
       fused expansion's operand by the projection its depthwise conv is fused into) */
    for (int id = g->nnodes - 1; id >= 0; id--)
        for (int i = 0; ir_runs_in_reader(&g->nodes[id]) && i < g->nodes[id].nsrc; i++)
            if (g->nodes[id].src[i] != IR_NONE && last[g->nodes[id].src[i]] < last[id])
                last[g->nodes[id].src[i]] = last[id];
    ir_use_free(&u);
    return last;
}

/* Operand i of n is read at n's own element index (a fused loop's operand
 * strides may permute or re-shape the read: ir_fused_in_order). */
static bool read_in_order(const ir_graph *g, const ir_node *n, int i)
{
    if (n->op == IR_OP_fused_elementwise)
        return ir_fused_in_order(g, n, i);
    return ir_same_shape(&g->nodes[n->src[i]], n);
}

/* The kernel for n is correct with y == operand k: ops.def's inplace column
 * decides, the target where the column says TARGET (runtime/axrt.h promises
 * y == x for these kernels). */
static bool kernel_allows_inplace(const ir_graph *g, const ir_node *n, int k)
{
    if (n->attrs.residual != IR_NONE)
        return false;
    switch (ir_ops[n->op].inplace) {
    case IR_INPLACE_NO: case IR_INPLACE_ALIAS: return false;
    case IR_INPLACE_SAME: return read_in_order(g, n, k);
    case IR_INPLACE_TARGET: return g->target && g->target->can_inplace(n, g, k);
    }
    return false;
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
    if (b->scratch || b->end != id || ir_value_bytes(&g->nodes[n->src[k]]) != ir_value_bytes(n))
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
    if (ir_ops[g->nodes[id].op].inplace == IR_INPLACE_ALIAS)
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
            p->naive += align_up(ir_value_bytes(n));
        if (own >= 0) {
            p->owner[id] = own;
            if (last[id] > p->bufs[own].end)
                p->bufs[own].end = last[id];
        }
        return;
    }
    p->owner[id] = p->n;
    add_buffer(p, id, false, last[id], ir_value_bytes(n));
    if (n->op == IR_OP_result)   /* written by its producer, so live from there on: */
        p->bufs[p->n - 1].start = n->src[0];   /* never over the producer's operands */
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

/* Longest live range first (then larger, then earlier): a long-lived value
 * placed low keeps short scratch buffers from pushing it up (an attention's
 * scratch is its largest buffer but lives one node). */
static int by_lifetime_then_size(const void *a, const void *b)
{
    const mem_buffer *x = *(const mem_buffer *const *)a, *y = *(const mem_buffer *const *)b;
    const int lx = x->end - x->start, ly = y->end - y->start;
    if (lx != ly)
        return lx < ly ? 1 : -1;
    return by_size_then_start(a, b);
}

/* First-fit in definition order, then in each order below; keeps the plan
 * with the lowest peak (the first one on ties, so plans that already reach
 * the lower bound keep their offsets). */
static size_t place_all(mem_plan *p)
{
    static int (*const orders[])(const void *, const void *) = {
        by_size_then_start, by_lifetime_then_size,
    };
    mem_buffer **order = checked_calloc((size_t)p->n, sizeof *order);
    int64_t *kept = checked_calloc((size_t)p->n, sizeof *kept);
    for (int k = 0; k < p->n; k++)
        order[k] = &p->bufs[k];
    size_t best = place_in_order(order, p->n);
    for (size_t o = 0; o < sizeof orders / sizeof orders[0]; o++) {
        for (int k = 0; k < p->n; k++)
            kept[k] = p->bufs[k].offset;
        qsort(order, (size_t)p->n, sizeof *order, orders[o]);
        size_t peak = place_in_order(order, p->n);
        if (peak < best)
            best = peak;
        else
            for (int k = 0; k < p->n; k++)
                p->bufs[k].offset = kept[k];
    }
    free(kept);
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

/* inplace_of: the operand whose buffer a node's result took over (alias or
 * in-place; the first such operand), for every back end to read. */
static void record_sharing(ir_graph *g, const mem_plan *p)
{
    for (int id = 0; id < g->nnodes; id++) {
        ir_node *n = &g->nodes[id];
        n->inplace_of = IR_NONE;
        for (int k = 0; k < n->nsrc && p->owner[id] >= 0; k++)
            if (n->src[k] != IR_NONE && p->owner[n->src[k]] == p->owner[id]) {
                n->inplace_of = k;
                break;
            }
    }
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
    record_sharing(g, &p);
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
        ax_buf_puts(out, ir_ops[g->nodes[id].op].inplace == IR_INPLACE_ALIAS ? " (alias)\n"
                                                                            : " (in-place)\n");
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

int pass_memplan_peak(const ir_graph *g, size_t *live)
{
    mem_plan p = placed_plan(g);
    const int at = peak_pressure(&p, g->nnodes, live);
    free_plan(&p);
    return at;
}

/* ---- the plan as a picture ------------------------------------------------ */

/* text safe inside SVG/XML character data and attribute values */
static void put_xml(ax_buf *out, const char *text)
{
    for (const char *c = text ? text : ""; *c; c++) {
        switch (*c) {
        case '&': ax_buf_puts(out, "&amp;"); break;
        case '<': ax_buf_puts(out, "&lt;"); break;
        case '>': ax_buf_puts(out, "&gt;"); break;
        case '"': ax_buf_puts(out, "&quot;"); break;
        default: ax_buf_put(out, c, 1); break;
        }
    }
}

enum { SVG_W = 960, SVG_H = 540, SVG_LEFT = 90, SVG_TOP = 50, SVG_PLOT_W = 840, SVG_PLOT_H = 420 };

/* The x axis spans the computing nodes, first..nnodes-1 (sources come first). */
typedef struct svg_span { int first, count; } svg_span;
static double svg_x(int step, svg_span x) { return SVG_LEFT + (double)SVG_PLOT_W * (step - x.first) / x.count; }
static double svg_y(double bytes, double arena) { return SVG_TOP + SVG_PLOT_H * bytes / arena; }

/* One bar: the buffer's bytes (y) over its live node indices (x). */
static void svg_bar(const ir_graph *g, const mem_buffer *b, int k, double arena, svg_span span, ax_buf *out)
{
    const ir_node *n = &g->nodes[b->node];
    const double x = svg_x(b->start, span), w = svg_x(b->end + 1, span) - x;
    const double y = svg_y((double)b->offset, arena), h = svg_y((double)(b->offset + b->size), arena) - y;
    ax_buf_printf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                       "stroke=\"#333\" stroke-width=\"0.5\"><title>%%%d %s ",
                  x, y, w > 1 ? w : 1, h > 1 ? h : 1,
                  b->scratch ? "#f4a261" : (k % 2 ? "#8ecae6" : "#90be6d"), b->node, ir_ops[n->op].name);
    put_xml(out, n->name);
    ax_buf_printf(out, "%s: %zu bytes at offset %lld, live %d..%d</title></rect>\n",
                  b->scratch ? " (scratch)" : "", b->size, (long long)b->offset, b->start, b->end);
}

static void svg_axes(const ir_graph *g, double arena, svg_span span, ax_buf *out)
{
    ax_buf_printf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", SVG_LEFT,
                  SVG_TOP, SVG_LEFT, SVG_TOP + SVG_PLOT_H);
    ax_buf_printf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", SVG_LEFT,
                  SVG_TOP + SVG_PLOT_H, SVG_LEFT + SVG_PLOT_W, SVG_TOP + SVG_PLOT_H);
    for (int t = 0; t <= 4; t++)
        ax_buf_printf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.0f</text>\n",
                      SVG_LEFT - 6, svg_y(arena * t / 4, arena) + 4, arena * t / 4);
    const int every = span.count > 20 ? span.count / 20 : 1;
    for (int id = span.first; id < g->nnodes; id += every)
        ax_buf_printf(out, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%%%d</text>\n",
                      svg_x(id, span) + 0.5 * SVG_PLOT_W / span.count, SVG_TOP + SVG_PLOT_H + 16, id);
    ax_buf_printf(out, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">schedule (node)"
                       "</text>\n<text x=\"16\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 16 %d)\" "
                       "text-anchor=\"middle\">arena offset (bytes)</text>\n",
                  SVG_LEFT + SVG_PLOT_W / 2, SVG_H - 8, SVG_TOP + SVG_PLOT_H / 2, SVG_TOP + SVG_PLOT_H / 2);
}

void pass_memplan_svg(const ir_graph *g, ax_buf *out)
{
    mem_plan p = placed_plan(g);
    size_t live;
    const int at = g->nnodes ? peak_pressure(&p, g->nnodes, &live) : 0;
    const double arena = g->arena_bytes ? (double)g->arena_bytes : 1;
    svg_span span = {0, 1};
    while (span.first < g->nnodes && ir_ops[g->nodes[span.first].op].kind == IR_SOURCE)
        span.first++;
    if (span.first < g->nnodes)
        span.count = g->nnodes - span.first;
    ax_buf_printf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                       "font-family=\"sans-serif\">\n<title>memory plan of ", SVG_W, SVG_H);
    put_xml(out, g->name);
    ax_buf_printf(out, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", SVG_W, SVG_H);
    ax_buf_puts(out, "<text x=\"90\" y=\"22\" font-size=\"15\">memory plan of ");
    put_xml(out, g->name);
    ax_buf_printf(out, ": arena %zu bytes, %d buffers (bars: bytes over live nodes)</text>\n",
                  g->arena_bytes, p.n);
    for (int k = 0; k < p.n; k++)
        svg_bar(g, &p.bufs[k], k, arena, span, out);
    svg_axes(g, arena, span, out);
    const double px = svg_x(at, span) + 0.5 * SVG_PLOT_W / span.count;
    ax_buf_printf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"red\" "
                       "stroke-dasharray=\"4 3\"/>\n<text x=\"%.1f\" y=\"%d\" font-size=\"12\" fill=\"red\">"
                       "peak: %zu bytes live at %%%d %s ",
                  px, SVG_TOP - 6, px, SVG_TOP + SVG_PLOT_H, px + 4, SVG_TOP - 10, live, at,
                  g->nnodes ? ir_ops[g->nodes[at].op].name : "");
    put_xml(out, g->nnodes ? g->nodes[at].name : "");
    ax_buf_puts(out, "</text>\n</svg>\n");
    free_plan(&p);
}
