/* pass_remat.c — rematerialisation under a memory budget (--ram): values are
 * dropped after their early uses and recomputed before their late ones, so
 * the arena fits.  The machinery works on any graph (inference, and a
 * training step whose backward half reads forward activations late).
 *
 * Contract.  A candidate is a live value that is no source, no graph output,
 * no multi-result producer or result, no copy, not read by the back end
 * after its last IR reader (live_until: a training step's gradient, which
 * its update reads), and whose readers leave a
 * gap: between two consecutive readers u_i < u_{i+1} at least one other node
 * runs.  Its split is the reader after the widest gap (the first such on a
 * tie).  A recompute set S (pass_remat_set) is applied so:
 *   - each v in S gets one copy (ir_node.recomputed, "(recomputed)" in its
 *     name), placed right before node place(v) = min(split(v), place(w) for
 *     every w in S whose operand is v) — so a chain of dropped values is
 *     recomputed forward as one segment, as checkpointing does;
 *   - every node at or after place(v), copies included, reads the copy, the
 *     earlier readers the original;
 *   - a copy reads the newest version of each operand.  An operand that is
 *     no candidate (its readers leave no gap: an intermediate of the
 *     forward, like the ReLU between a Dense and its residual add) and that
 *     would otherwise have to live from its last reader until the copy is
 *     recomputed with it (implied, placed likewise): a dropped segment is
 *     recomputed from its checkpoints, as Chen et al.'s checkpointing does.
 *     Any other operand not in S lives until the copy (the memory plan sees
 *     that).
 * The copies are ordinary nodes; the plan is redone on the result.  The
 * extra FLOPs of S are the sum of its members' and implied values' FLOPs
 * (ir_node_flops).
 * pass_remat picks S greedily (most bytes of arena freed per FLOP, then a
 * pass dropping members the budget no longer needs) or, where that fits
 * worse or not at all, as checkpoints every k-th candidate for the k with
 * the fewest extra FLOPs that fits (pruned likewise); pass_remat_sqrt_n is
 * Chen et al.'s sqrt(n) checkpointing over the candidates; pass_remat_exact
 * is branch and bound over every subset (the optimum, for few candidates).
 * The driver runs pass_remat after every rewrite (it is not in the -O
 * table), so nothing can hoist a copy back or merge it with its original. */
#include "passes.h"
#include "ir_use.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *pass_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size);
    if (!p)
        ax_out_of_memory(0);
    return p;
}

/* The reader of id after the widest gap between consecutive readers, or -1
 * when no gap is wider than one node. */
static int split_of(const ir_use *u, int id)
{
    int best = -1, widest = 1;
    for (int k = 1; k < ir_use_nusers(u, id); k++) {
        const int gap = ir_use_user(u, id, k) - ir_use_user(u, id, k - 1);
        if (gap > widest) {
            widest = gap;
            best = ir_use_user(u, id, k);
        }
    }
    return best;
}

static bool may_recompute(const ir_graph *g, const ir_use *u, int id)
{
    const ir_node *n = &g->nodes[id];
    return !n->dead && !n->recomputed && n->live_until <= 0 && ir_ops[n->op].kind != IR_SOURCE && !ir_has_results(n->op) &&
           n->op != IR_OP_result && !ir_use_is_output(u, id);
}

pass_remat_set pass_remat_candidates(const ir_graph *g)
{
    pass_remat_set s = {0};
    s.ids = pass_calloc((size_t)g->nnodes, sizeof *s.ids);
    s.split = pass_calloc((size_t)g->nnodes, sizeof *s.split);
    s.chosen = pass_calloc((size_t)g->nnodes, sizeof *s.chosen);
    s.flops = pass_calloc((size_t)g->nnodes, sizeof *s.flops);
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++) {
        const int split = may_recompute(g, &u, id) ? split_of(&u, id) : -1;
        if (split < 0)
            continue;
        s.ids[s.n] = id;
        s.split[s.n] = split;
        s.flops[s.n++] = ir_node_flops(g, &g->nodes[id]);
    }
    ir_use_free(&u);
    return s;
}

void pass_remat_set_free(pass_remat_set *s)
{
    free(s->ids);
    free(s->split);
    free(s->chosen);
    free(s->flops);
    memset(s, 0, sizeof *s);
}

/* ---- applying a set --------------------------------------------------------- */

/* The graph being built: nodes, and per original node its new id and the
 * new id of its copy (-1 until emitted). */
typedef struct remat_build {
    const ir_graph *g;   /* the graph copied (its arena holds the copies' operands) */
    ir_node *nodes;
    int n;
    int *new_id, *copy_id, *place;   /* place: per original node, -1 when not copied */
    int *copies, ncopies;            /* the copied nodes (S and implied), by place, then id */
} remat_build;

/* A value that is no candidate yet may be recomputed with a copy reading it
 * (not one reading a parameter: in a training step the parameter's update
 * waits for its last reader, and the gradient with it). */
static bool may_imply(const ir_graph *g, int v, const int *last)
{
    const ir_node *n = &g->nodes[v];
    if (n->dead || n->recomputed || n->live_until > 0 || ir_ops[n->op].kind == IR_SOURCE ||
        ir_has_results(n->op) || n->op == IR_OP_result || n->op == IR_OP_reshape)
        return false;
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return false;
    for (int i = 0; i < n->nsrc; i++)   /* a late read of a parameter would hold back */
        if (n->src[i] != IR_NONE && g->nodes[n->src[i]].op == IR_OP_param)   /* its update */
            return false;
    return last[v] >= 0;
}

/* Index of the last node reading each node (-1 if none). */
static int *last_readers(const ir_graph *g)
{
    int *last = pass_calloc((size_t)g->nnodes, sizeof *last);
    for (int id = 0; id < g->nnodes; id++)
        last[id] = -1;
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead)
            for (int i = 0; i < g->nodes[id].nsrc; i++)
                if (g->nodes[id].src[i] != IR_NONE)
                    last[g->nodes[id].src[i]] = id;
    return last;
}

/* place(v) for every chosen v: its split, pulled forward to the place of
 * any copy reading it (readers come later, so walk backwards); operands a
 * copy would keep alive past their last reader are implied (the contract).
 * Fills b->place and b->copies. */
static void compute_places(const ir_graph *g, const pass_remat_set *s, remat_build *b)
{
    int *place = b->place, *last = last_readers(g), *candidate = pass_calloc((size_t)g->nnodes, sizeof *candidate);
    for (int id = 0; id < g->nnodes; id++)
        place[id] = -1;
    for (int k = 0; k < s->n; k++) {
        candidate[s->ids[k]] = 1;
        if (s->chosen[k])
            place[s->ids[k]] = s->split[k];
    }
    for (int id = g->nnodes - 1; id >= 0; id--) {
        if (place[id] < 0)
            continue;
        const ir_node *w = &g->nodes[id];
        for (int i = 0; i < w->nsrc; i++) {
            const int v = w->src[i];
            if (v == IR_NONE)
                continue;
            if (place[v] < 0 && !candidate[v] && last[v] < place[id] && may_imply(g, v, last))
                place[v] = place[id];
            else if (place[v] >= 0 && place[id] < place[v])
                place[v] = place[id];
        }
    }
    b->ncopies = 0;   /* counting sort by place; ids ascend within a place */
    int *start = pass_calloc((size_t)g->nnodes + 1, sizeof *start);
    for (int id = 0; id < g->nnodes; id++)
        if (place[id] >= 0) {
            start[place[id] + 1]++;
            b->ncopies++;
        }
    for (int pos = 0; pos < g->nnodes; pos++)
        start[pos + 1] += start[pos];
    for (int id = 0; id < g->nnodes; id++)
        if (place[id] >= 0)
            b->copies[start[place[id]]++] = id;
    free(start);
    free(candidate);
    free(last);
}

/* The version of original node v a node placed at pos reads. */
static int version_at(const remat_build *b, int v, int pos)
{
    if (v == IR_NONE)
        return IR_NONE;
    return b->place[v] >= 0 && pos >= b->place[v] ? b->copy_id[v] : b->new_id[v];
}

static void emit(remat_build *b, const ir_node *orig, int pos, bool dead)
{
    ir_node *n = &b->nodes[b->n++];
    *n = *orig;
    ir_own_operands(b->g, n);   /* the copy and the original renumber theirs apart */
    for (int i = 0; i < n->nsrc; i++)
        n->src[i] = dead ? (n->src[i] == IR_NONE ? IR_NONE : b->new_id[n->src[i]]) : version_at(b, n->src[i], pos);
}

/* Fills b->nodes (room for g->nnodes + copies) with g and the copies.
 * Copies are emitted before node pos in ascending original id, so a copy's
 * copied operands (placed no later, lower ids) come first. */
static void build(const ir_graph *g, remat_build *b)
{
    b->n = 0;
    int next = 0;
    for (int pos = 0; pos < g->nnodes; pos++) {
        for (; next < b->ncopies && b->place[b->copies[next]] == pos; next++) {
            const int v = b->copies[next];
            b->copy_id[v] = b->n;
            emit(b, &g->nodes[v], pos, false);
            b->nodes[b->copy_id[v]].recomputed = true;
        }
        b->new_id[pos] = b->n;
        emit(b, &g->nodes[pos], pos, g->nodes[pos].dead);
    }
    for (int id = 0; id < b->n; id++)   /* live_until names a node: renumber it */
        if (b->nodes[id].live_until > 0)
            b->nodes[id].live_until = b->new_id[b->nodes[id].live_until];
}

static remat_build build_new(const ir_graph *g, const pass_remat_set *s)
{
    remat_build b = {0};
    b.g = g;
    b.new_id = pass_calloc((size_t)g->nnodes, sizeof *b.new_id);
    b.copy_id = pass_calloc((size_t)g->nnodes, sizeof *b.copy_id);
    b.place = pass_calloc((size_t)g->nnodes, sizeof *b.place);
    b.copies = pass_calloc((size_t)g->nnodes, sizeof *b.copies);
    compute_places(g, s, &b);
    b.nodes = pass_calloc((size_t)(g->nnodes + b.ncopies), sizeof *b.nodes);
    build(g, &b);
    return b;
}

static void build_free(remat_build *b)
{
    free(b->new_id);
    free(b->copy_id);
    free(b->place);
    free(b->copies);
}

int pass_remat_copies(const ir_graph *g, const pass_remat_set *s, double *extra_flops)
{
    remat_build b = {0};
    b.place = pass_calloc((size_t)g->nnodes, sizeof *b.place);
    b.copies = pass_calloc((size_t)g->nnodes, sizeof *b.copies);
    compute_places(g, s, &b);
    double sum = 0;
    for (int k = 0; k < b.ncopies; k++)
        sum += ir_node_flops(g, &g->nodes[b.copies[k]]);
    if (extra_flops)
        *extra_flops = sum;
    build_free(&b);
    return b.ncopies;
}

double pass_remat_extra_flops(const ir_graph *g, const pass_remat_set *s)
{
    double sum;
    pass_remat_copies(g, s, &sum);
    return sum;
}

size_t pass_remat_eval(const ir_graph *g, const pass_remat_set *s, size_t *lower_bound)
{
    remat_build b = build_new(g, s);
    ir_graph t = *g;
    t.nodes = b.nodes;
    t.nnodes = t.cap = b.n;
    t.inputs = pass_calloc((size_t)g->ninputs, sizeof *t.inputs);
    t.outputs = pass_calloc((size_t)g->noutputs, sizeof *t.outputs);
    for (int i = 0; i < g->ninputs; i++)
        t.inputs[i] = b.new_id[g->inputs[i]];
    for (int i = 0; i < g->noutputs; i++)
        t.outputs[i] = b.new_id[g->outputs[i]];
    pass_memplan_with(&t, g->share_buffers);
    if (lower_bound)
        *lower_bound = pass_memplan_lower_bound(&t);
    free(t.inputs);
    free(t.outputs);
    free(b.nodes);
    build_free(&b);
    return t.arena_bytes;
}

void pass_remat_apply(ir_graph *g, const pass_remat_set *s)
{
    pass_remat_apply_mapped(g, s, NULL);
}

void pass_remat_apply_mapped(ir_graph *g, const pass_remat_set *s, int *new_id)
{
    remat_build b = build_new(g, s);
    if (new_id)
        memcpy(new_id, b.new_id, (size_t)g->nnodes * sizeof *new_id);
    for (int k = 0; k < b.ncopies; k++) {
        ir_node *n = &b.nodes[b.copy_id[b.copies[k]]];
        n->name = ax_sprintf(g->ctx->arena, "%s (recomputed)", n->name ? n->name : ir_ops[n->op].name);
    }
    for (int i = 0; i < g->ninputs; i++)
        g->inputs[i] = b.new_id[g->inputs[i]];
    for (int i = 0; i < g->noutputs; i++)
        g->outputs[i] = b.new_id[g->outputs[i]];
    free(g->nodes);
    g->nodes = b.nodes;
    g->nnodes = g->cap = b.n;
    build_free(&b);
    pass_memplan_with(g, g->share_buffers);
}

/* ---- choosing a set ------------------------------------------------------- */

/* The greedy step: the unchosen candidate freeing the most arena bytes per
 * FLOP; when none frees arena bytes, the one lowering the most bytes live at
 * once (the first-fit arena may need two drops to move).  -1: none helps. */
static int greedy_step(const ir_graph *g, pass_remat_set *s, size_t arena, size_t bound)
{
    int best = -1;
    bool best_frees_arena = false;
    double best_score = 0;
    for (int k = 0; k < s->n; k++) {
        if (s->chosen[k])
            continue;
        s->chosen[k] = true;
        size_t lb;
        const size_t a = pass_remat_eval(g, s, &lb);
        s->chosen[k] = false;
        const bool frees = a < arena;
        if (!frees && !(a == arena && lb < bound))
            continue;
        const double score = s->flops[k] / (double)(frees ? arena - a : bound - lb);
        if (best < 0 || (frees && !best_frees_arena) || (frees == best_frees_arena && score < best_score)) {
            best = k;
            best_frees_arena = frees;
            best_score = score;
        }
    }
    return best;
}

/* Drops members, costliest first, while the set still fits. */
static void prune(const ir_graph *g, pass_remat_set *s, size_t budget)
{
    for (;;) {
        int drop = -1;
        for (int k = 0; k < s->n; k++) {
            if (!s->chosen[k] || (drop >= 0 && s->flops[k] <= s->flops[drop]))
                continue;
            s->chosen[k] = false;
            if (pass_remat_eval(g, s, NULL) <= budget)
                drop = k;
            s->chosen[k] = true;
        }
        if (drop < 0)
            return;
        s->chosen[drop] = false;
    }
}

void pass_remat_greedy(const ir_graph *g, pass_remat_set *s, size_t budget)
{
    size_t bound;
    size_t arena = pass_remat_eval(g, s, &bound);
    while (arena > budget) {
        const int k = greedy_step(g, s, arena, bound);
        if (k < 0)
            break;
        s->chosen[k] = true;
        arena = pass_remat_eval(g, s, &bound);
    }
    if (arena <= budget)
        prune(g, s, budget);
}

/* Every step-th candidate kept (a checkpoint), the rest recomputed. */
static void checkpoint_every(pass_remat_set *s, int step)
{
    for (int k = 0; k < s->n; k++)
        s->chosen[k] = (k + 1) % step != 0;
}

void pass_remat_sqrt_n(pass_remat_set *s)
{
    checkpoint_every(s, (int)ceil(sqrt((double)s->n)));
}

/* Checkpoints every step-th candidate for each step, keeps the fitting
 * choice with the fewest extra FLOPs, then prunes it; when none fits, the
 * one with the smallest arena.  Returns whether it fits; *arena its arena. */
static bool checkpoint_sweep(const ir_graph *g, pass_remat_set *s, size_t budget, bool *best, size_t *arena)
{
    bool fits = false;
    double best_flops = 0;
    *arena = SIZE_MAX;
    for (int step = 2; step <= s->n + 1; step++) {
        checkpoint_every(s, step);
        const size_t a = pass_remat_eval(g, s, NULL);
        const double flops = a <= budget ? pass_remat_extra_flops(g, s) : 0;
        if (a <= budget ? !fits || flops < best_flops : !fits && a < *arena) {
            memcpy(best, s->chosen, (size_t)s->n * sizeof *best);
            fits = a <= budget;
            best_flops = flops;
            *arena = a;
        }
    }
    memcpy(s->chosen, best, (size_t)s->n * sizeof *best);
    if (fits) {
        prune(g, s, budget);
        memcpy(best, s->chosen, (size_t)s->n * sizeof *best);
    }
    return fits;
}

void pass_remat_choose(const ir_graph *g, pass_remat_set *s, size_t budget)
{
    pass_remat_greedy(g, s, budget);
    const size_t greedy_arena = pass_remat_eval(g, s, NULL);
    const bool greedy_fits = greedy_arena <= budget;
    bool *greedy = pass_calloc((size_t)s->n, sizeof *greedy), *swept = pass_calloc((size_t)s->n, sizeof *swept);
    memcpy(greedy, s->chosen, (size_t)s->n * sizeof *greedy);
    const double greedy_flops = pass_remat_extra_flops(g, s);
    size_t swept_arena;
    const bool sweep_fits = checkpoint_sweep(g, s, budget, swept, &swept_arena);
    const bool take_sweep = sweep_fits ? !greedy_fits || pass_remat_extra_flops(g, s) < greedy_flops
                                       : !greedy_fits && swept_arena < greedy_arena;
    memcpy(s->chosen, take_sweep ? swept : greedy, (size_t)s->n * sizeof *s->chosen);
    free(greedy);
    free(swept);
}

/* Branch and bound: candidate k in or out; a branch whose FLOPs already
 * reach the best fitting set's is cut. */
typedef struct exact_search {
    const ir_graph *g;
    pass_remat_set *s;
    size_t budget;
    bool *best;
    double best_flops;
    bool found;
    long evaluated;
} exact_search;

static void exact_visit(exact_search *e, int k, double flops)
{
    if (e->found && flops >= e->best_flops)
        return;
    if (k == e->s->n) {   /* flops: the chosen copies'; implied ones may add */
        e->evaluated++;
        const double actual = pass_remat_extra_flops(e->g, e->s);
        if ((!e->found || actual < e->best_flops) && pass_remat_eval(e->g, e->s, NULL) <= e->budget) {
            memcpy(e->best, e->s->chosen, (size_t)e->s->n * sizeof *e->best);
            e->best_flops = actual;
            e->found = true;
        }
        return;
    }
    exact_visit(e, k + 1, flops);
    e->s->chosen[k] = true;
    exact_visit(e, k + 1, flops + e->s->flops[k]);
    e->s->chosen[k] = false;
}

bool pass_remat_exact(const ir_graph *g, pass_remat_set *s, size_t budget)
{
    if (s->n > PASS_REMAT_EXACT_MAX)
        return false;
    exact_search e = {g, s, budget, pass_calloc((size_t)s->n, sizeof(bool)), 0, false, 0};
    memset(s->chosen, 0, (size_t)s->n * sizeof *s->chosen);
    exact_visit(&e, 0, 0);
    if (e.found)
        memcpy(s->chosen, e.best, (size_t)s->n * sizeof *s->chosen);
    free(e.best);
    return e.found;
}

size_t pass_remat_min_arena(const ir_graph *g, pass_remat_set *s)
{
    size_t best = (size_t)-1;
    if (s->n > PASS_REMAT_EXACT_MAX)
        return best;
    for (unsigned long mask = 0; mask < (1ul << s->n); mask++) {
        for (int k = 0; k < s->n; k++)
            s->chosen[k] = (mask >> k) & 1;
        const size_t a = pass_remat_eval(g, s, NULL);
        best = a < best ? a : best;
    }
    memset(s->chosen, 0, (size_t)s->n * sizeof *s->chosen);
    return best;
}

int pass_remat(ir_graph *g, size_t budget, pass_remat_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->peak_before = g->arena_bytes;
    if (g->arena_bytes > budget) {
        pass_remat_set s = pass_remat_candidates(g);
        pass_remat_choose(g, &s, budget);
        stats->recomputed = pass_remat_copies(g, &s, &stats->extra_flops);
        if (stats->recomputed)
            pass_remat_apply(g, &s);
        pass_remat_set_free(&s);
    }
    stats->peak_after = g->arena_bytes;
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead && ir_ops[g->nodes[id].op].kind != IR_SOURCE)
            stats->flops += ir_node_flops(g, &g->nodes[id]);
    return 0;
}
