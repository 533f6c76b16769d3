/* pass_tile.c — tiled inference of a model's first stage under --ram (the
 * patch-based inference of MCUNetV2/TinyEngine): when the peak is set by
 * early wide tensors, the nodes from the input to a narrower tensor E run
 * tile by tile over E's rows, and a concat puts E together.
 *
 * Contract.  The stage is every live non-source node up to E (by index);
 * it reads one input x, params and scalars, and no node after E reads a
 * stage node but E.  The tiled axis is 0 for rank-2 tensors (batch rows:
 * dense, elementwise) and 1 (H) for rank-4 NHWC tensors (conv, pools
 * without ceil mode, elementwise, batchnorm); each stage node must be of
 * that rank and tileable (stage_op_ok).  For tile t, E's rows are split
 * into T near-equal ranges; walking back, each node gets the hull of the
 * rows its readers need (a conv or pool needs its receptive field: the
 * halo), and each copy is the original op over those rows: a conv or pool
 * keeps its padding only at the true borders, and reads a slice of its
 * operand when the operand's range is wider.  So every output element is
 * computed by the same kernel from the same values as before; the halo
 * rows are computed twice (the extra FLOPs).  The tiles come one after the
 * other, so a tile's working set is freed before the next; E's tiles stay
 * until the concat (the stage costs about 2 x E plus one tile's set).
 * pass_tile tries every eligible E and T in {2, 4, 8, 16} and keeps the
 * smallest arena, preferring fewer extra FLOPs among those that fit. */
#include "passes.h"
#include "ir_use.h"

#include <stdlib.h>
#include <string.h>

static const int tile_counts[] = {2, 4, 8, 16};

static bool is_source(const ir_graph *g, int id)
{
    return id == IR_NONE || ir_ops[g->nodes[id].op].kind == IR_SOURCE;
}

static bool is_window(const ir_node *n)
{
    return n->op == IR_OP_conv || n->op == IR_OP_maxpool || n->op == IR_OP_meanpool;
}

/* A param or scalar: the same for every tile. */
static bool is_stage_param(const ir_graph *g, int id)
{
    return is_source(g, id) && (id == IR_NONE || g->nodes[id].op != IR_OP_input);
}

/* n may be computed over a range of rows of axis from the same range (or,
 * for a window op, the receptive field) of its stage operands. */
static bool stage_op_ok(const ir_graph *g, const ir_node *n, int axis)
{
    const int rank = axis == 0 ? 2 : 4;
    if (n->rank != rank || n->nsrc < 1)
        return false;
    if (is_window(n) || n->op == IR_OP_dense || n->op == IR_OP_batchnorm || n->op == IR_OP_layernorm) {
        const bool ok = is_window(n) ? axis == 1 && !n->attrs.ceil && !n->attrs.adaptive
                      : n->op == IR_OP_dense ? axis == 0
                      : n->op == IR_OP_batchnorm ? axis == 1 : n->attrs.axis != axis;
        const int r = n->attrs.residual;
        return ok && !is_stage_param(g, n->src[0]) &&
               (r == IR_NONE || (!is_stage_param(g, n->src[r]) && ir_same_shape(&g->nodes[n->src[r]], n)));
    }
    if (n->op != IR_OP_fused_elementwise && ir_ops[n->op].kind != IR_UNARY && ir_ops[n->op].kind != IR_BINARY)
        return false;
    for (int k = 0; k < n->nsrc; k++) {
        const int s = n->src[k];
        if (s == IR_NONE)
            continue;
        if (is_source(g, s) && g->nodes[s].op != IR_OP_input) {
            if (n->op == IR_OP_fused_elementwise ? n->attrs.strides[k][axis] != 0
                                                 : g->nodes[s].rank == rank && g->nodes[s].shape[axis] != 1)
                return false;
        } else if (!ir_same_shape(&g->nodes[s], n) ||
                   (n->op == IR_OP_fused_elementwise && !ir_fused_in_order(g, n, k))) {
            return false;
        }
    }
    return true;
}

/* The stage ending at e: its input (*x), or false when it is not one. */
static bool stage_ok(const ir_graph *g, const ir_use *u, int e, int axis, int *x)
{
    *x = -1;
    for (int id = 0; id <= e; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->dead || is_source(g, id))
            continue;
        if (ir_has_results(n->op) || !stage_op_ok(g, n, axis) || (id != e && ir_use_is_output(u, id)))
            return false;
        if (id != e && u->last[id] != IR_NONE && u->last[id] > e)
            return false;
        for (int k = 0; k < n->nsrc; k++) {
            const int s = n->src[k];
            if (s != IR_NONE && g->nodes[s].op == IR_OP_input) {
                if (*x >= 0 && *x != s)
                    return false;
                *x = s;
            }
        }
    }
    return *x >= 0 && g->nodes[e].shape[axis] >= 2;
}

/* ---- building a tiled graph ------------------------------------------------ */

typedef struct tile_build {
    const ir_graph *g;
    int e, x, axis, tiles;
    ir_node *nodes;
    int n;
    int *map;            /* original id -> new id (sources, E -> concat, later nodes) */
    int *tile_id;        /* per stage node (and x): its copy in the current tile */
    int64_t *lo, *hi;    /* per stage node (and x): rows of the current tile */
    double flops;        /* of every tile's nodes */
} tile_build;

static void hull(tile_build *b, int s, int64_t lo, int64_t hi)
{
    if (b->lo[s] > b->hi[s]) {
        b->lo[s] = lo;
        b->hi[s] = hi;
    } else {
        b->lo[s] = lo < b->lo[s] ? lo : b->lo[s];
        b->hi[s] = hi > b->hi[s] ? hi : b->hi[s];
    }
}

/* The rows of operand s node id reads to make its rows [lo, hi): the
 * unclipped window for a window op (*pad_lo, *pad_hi: the part outside s). */
static void operand_rows(const tile_build *b, int id, int s, int64_t *lo, int64_t *hi, int *pad_lo, int *pad_hi)
{
    const ir_node *n = &b->g->nodes[id];
    *lo = b->lo[id];
    *hi = b->hi[id];
    *pad_lo = *pad_hi = 0;
    if (!is_window(n))
        return;
    const int64_t size = b->g->nodes[s].shape[b->axis];
    const int64_t reach = (int64_t)(n->attrs.kernel[0] - 1) * (n->op == IR_OP_conv ? n->attrs.dilation[0] : 1) + 1;
    const int64_t first = b->lo[id] * n->attrs.stride[0] - n->attrs.pad[0];
    const int64_t last = (b->hi[id] - 1) * n->attrs.stride[0] - n->attrs.pad[0] + reach;
    *pad_lo = first < 0 ? (int)-first : 0;
    *pad_hi = last > size ? (int)(last - size) : 0;
    *lo = first < 0 ? 0 : first;
    *hi = last > size ? size : last;
}

/* Appends a copy of proto with an operand array of its own. */
static int emit(tile_build *b, const ir_node *proto)
{
    b->nodes[b->n] = *proto;
    ir_own_operands(b->g, &b->nodes[b->n]);
    return b->n++;
}

/* A slice of the current tile's copy of s to rows [lo, hi) (absolute), or
 * the copy itself when its range is exactly that. */
static int rows_of(tile_build *b, int s, int64_t lo, int64_t hi)
{
    if (b->lo[s] == lo && b->hi[s] == hi)
        return b->tile_id[s];
    const ir_node *src = &b->g->nodes[s];
    ir_node sl = *src;
    memset(&sl.attrs, 0, sizeof sl.attrs);
    sl.attrs.act = sl.attrs.residual = IR_NONE;
    sl.op = IR_OP_slice;
    sl.name = NULL;
    ir_set_operands(b->g, &sl, &b->tile_id[s], 1);
    sl.attrs.nslice = src->rank;
    const int64_t base = b->lo[s];
    for (int d = 0; d < src->rank; d++) {
        sl.attrs.begin[d] = d == b->axis ? lo - base : 0;
        sl.attrs.end[d] = d == b->axis ? hi - base : src->shape[d];
        sl.attrs.step[d] = 1;
    }
    sl.shape[b->axis] = hi - lo;
    return emit(b, &sl);
}

/* One tile: E's rows [lo, hi); ranges walked back, copies emitted forward. */
static void build_tile(tile_build *b, int64_t lo, int64_t hi)
{
    const ir_graph *g = b->g;
    for (int id = 0; id <= b->e; id++) {
        b->lo[id] = 1;
        b->hi[id] = 0;
    }
    b->lo[b->e] = lo;
    b->hi[b->e] = hi;
    for (int id = b->e; id >= 0; id--) {
        const ir_node *n = &g->nodes[id];
        if (n->dead || is_source(g, id) || b->lo[id] > b->hi[id])
            continue;
        for (int k = 0; k < n->nsrc; k++) {
            const int s = n->src[k];
            if (s == IR_NONE || (is_source(g, s) && s != b->x))
                continue;
            int64_t slo, shi;
            int plo, phi;
            operand_rows(b, id, s, &slo, &shi, &plo, &phi);
            hull(b, s, slo, shi);
        }
    }
    const int64_t lo_x = b->lo[b->x], hi_x = b->hi[b->x];   /* the tile's rows of the input */
    b->tile_id[b->x] = b->map[b->x];
    b->lo[b->x] = 0;
    b->hi[b->x] = g->nodes[b->x].shape[b->axis];
    b->tile_id[b->x] = rows_of(b, b->x, lo_x, hi_x);
    b->lo[b->x] = lo_x;
    b->hi[b->x] = hi_x;
    for (int id = 0; id <= b->e; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->dead || is_source(g, id) || b->lo[id] > b->hi[id])
            continue;
        ir_node copy = *n;
        ir_own_operands(g, &copy);
        copy.shape[b->axis] = b->hi[id] - b->lo[id];
        for (int k = 0; k < n->nsrc; k++) {
            const int s = n->src[k];
            if (s == IR_NONE || (is_source(g, s) && s != b->x)) {
                copy.src[k] = s == IR_NONE ? IR_NONE : b->map[s];
                continue;
            }
            int64_t slo, shi;
            int plo, phi;
            operand_rows(b, id, s, &slo, &shi, &plo, &phi);
            copy.src[k] = rows_of(b, s, slo, shi);
            if (is_window(n)) {
                copy.attrs.pad[0] = plo;
                copy.attrs.pad[2] = phi;
            }
        }
        b->tile_id[id] = emit(b, &copy);
        b->flops += ir_node_flops(g, &b->nodes[b->tile_id[id]]);
    }
}

/* The whole graph with the stage up to e in `tiles` tiles. */
static tile_build build(const ir_graph *g, int e, int x, int axis, int tiles)
{
    tile_build b = {g, e, x, axis, tiles, NULL, 0, NULL, NULL, NULL, NULL, 0};
    const int stage = e + 1;
    b.nodes = pass_calloc((size_t)(g->nnodes + 2 * tiles * stage + 1), sizeof *b.nodes);
    b.map = pass_calloc((size_t)g->nnodes, sizeof *b.map);
    b.tile_id = pass_calloc((size_t)stage, sizeof *b.tile_id);
    b.lo = pass_calloc((size_t)stage, sizeof *b.lo);
    b.hi = pass_calloc((size_t)stage, sizeof *b.hi);
    for (int id = 0; id < g->nnodes; id++)
        b.map[id] = IR_NONE;
    for (int id = 0; id <= e; id++)
        if (is_source(g, id) || g->nodes[id].dead)
            b.map[id] = emit(&b, &g->nodes[id]);
    for (int id = 0; id <= e; id++)   /* a dead node's operands */
        for (int k = 0; g->nodes[id].dead && k < g->nodes[id].nsrc; k++)
            b.nodes[b.map[id]].src[k] = b.map[g->nodes[id].src[k]] == IR_NONE ? b.map[x] : b.map[g->nodes[id].src[k]];
    ir_node cat = g->nodes[e];
    memset(&cat.attrs, 0, sizeof cat.attrs);
    cat.attrs.act = cat.attrs.residual = IR_NONE;
    cat.op = IR_OP_concat;
    cat.attrs.axis = axis;
    int *parts = pass_calloc((size_t)tiles, sizeof *parts);
    const int64_t rows = g->nodes[e].shape[axis];
    for (int t = 0; t < tiles; t++) {
        build_tile(&b, rows * t / tiles, rows * (t + 1) / tiles);
        parts[t] = b.tile_id[e];
    }
    ir_set_operands(g, &cat, parts, tiles);
    free(parts);
    b.map[e] = emit(&b, &cat);
    for (int id = e + 1; id < g->nnodes; id++) {
        b.map[id] = emit(&b, &g->nodes[id]);
        for (int k = 0; k < g->nodes[id].nsrc; k++) {
            const int s = g->nodes[id].src[k];
            b.nodes[b.map[id]].src[k] = s == IR_NONE ? IR_NONE : b.map[s];
        }
    }
    return b;
}

static void build_free(tile_build *b)
{
    free(b->map);
    free(b->tile_id);
    free(b->lo);
    free(b->hi);
}

/* Replaces t's node array by b's (ids of inputs and outputs remapped). */
static void install(ir_graph *t, const ir_graph *g, tile_build *b, int *inputs, int *outputs)
{
    t->nodes = b->nodes;
    t->nnodes = t->cap = b->n;
    for (int i = 0; i < g->ninputs; i++)
        inputs[i] = b->map[g->inputs[i]];
    for (int i = 0; i < g->noutputs; i++)
        outputs[i] = b->map[g->outputs[i]];
    t->inputs = inputs;
    t->outputs = outputs;
}

/* The arena of the tiled graph and the FLOPs its tiles add. */
static size_t eval_tiling(const ir_graph *g, int e, int x, int axis, int tiles, double *extra)
{
    tile_build b = build(g, e, x, axis, tiles);
    ir_graph t = *g;
    int *in = pass_calloc((size_t)g->ninputs, sizeof *in), *out = pass_calloc((size_t)g->noutputs, sizeof *out);
    install(&t, g, &b, in, out);
    pass_memplan_with(&t, g->share_buffers);
    double stage = 0;
    for (int id = 0; id <= e; id++)
        if (!g->nodes[id].dead && !is_source(g, id))
            stage += ir_node_flops(g, &g->nodes[id]);
    *extra = b.flops - stage;
    free(in);
    free(out);
    free(b.nodes);
    build_free(&b);
    return t.arena_bytes;
}

int pass_tile(ir_graph *g, size_t budget, pass_tile_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->peak_before = stats->peak_after = g->arena_bytes;
    ir_use u = {0};
    ir_use_compute(g, &u);
    size_t best = g->arena_bytes;
    double best_extra = 0;
    for (int e = 0; e < g->nnodes; e++) {
        for (int axis = 0; axis <= 1; axis++) {
            int x;
            if (g->nodes[e].dead || is_source(g, e) || !stage_ok(g, &u, e, axis, &x))
                continue;
            for (size_t k = 0; k < sizeof tile_counts / sizeof *tile_counts; k++) {
                const int tiles = tile_counts[k];
                if (tiles * (axis == 0 ? 2 : 1) > g->nodes[e].shape[axis])
                    break;   /* a 1-row GEMM takes another kernel path: not bit-identical */
                double extra;
                const size_t a = eval_tiling(g, e, x, axis, tiles, &extra);
                const bool fits = a <= budget, best_fits = best <= budget;
                if ((fits && (!best_fits || extra < best_extra || (extra == best_extra && tiles < stats->tiles))) ||
                    (!fits && !best_fits && a < best)) {
                    best = a;
                    best_extra = extra;
                    stats->end = e;
                    stats->input = x;
                    stats->axis = axis;
                    stats->tiles = tiles;
                }
            }
        }
    }
    ir_use_free(&u);
    if (!stats->tiles)
        return 0;
    stats->extra_flops = best_extra;
    stats->end_name = g->nodes[stats->end].name;
    tile_build b = build(g, stats->end, stats->input, stats->axis, stats->tiles);
    free(g->nodes);
    install(g, g, &b, g->inputs, g->outputs);
    build_free(&b);
    pass_memplan_with(g, g->share_buffers);
    stats->peak_after = g->arena_bytes;
    return 0;
}
