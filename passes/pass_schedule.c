/* pass_schedule.c — reorders the graph to lower the arena's peak where the
 * graph leaves a choice (independent branches).  Greedy list scheduling:
 * sources first (they take no arena), then repeatedly the ready node whose
 * execution frees the most arena bytes net of what it allocates, ties going
 * to the earliest original position (so a chain keeps its order).  Dead
 * nodes go last.  Every node still follows its operands; the pass manager
 * verifies that. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct scheduler {
    ir_graph *g;
    int *remaining;   /* live reads of each node not yet scheduled */
    bool *done;
    int *order;       /* new position -> old id */
    int count;
    /* readiness without rescanning the graph per pick (that was quadratic):
       users[user_start[id] .. user_start[id + 1]) read id, one entry per
       operand slot; pending[id] counts id's operand slots not yet done;
       ready[0..nready) are the live, undone nodes with none pending */
    int *user_start, *users, *pending, *ready, nready;
} scheduler;

static int64_t arena_bytes_of(const ir_graph *g, int id)
{
    const ir_node *n = &g->nodes[id];
    return ir_ops[n->op].kind == IR_SOURCE || ir_is_output(g, id) ? 0 : (int64_t)ir_nbytes(n);
}

static void *checked_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size);
    if (!p)
        ax_out_of_memory(count * size);
    return p;
}

/* The users table (every node's operand slots, dead or alive: readiness
 * is about operands being done, as before). */
static void index_users(scheduler *s)
{
    const ir_graph *g = s->g;
    s->user_start = checked_calloc((size_t)g->nnodes + 2, sizeof(int));
    size_t slots = 0;
    for (int id = 0; id < g->nnodes; id++)
        for (int i = 0; i < g->nodes[id].nsrc; i++)
            if (g->nodes[id].src[i] != IR_NONE) {
                s->user_start[g->nodes[id].src[i] + 1]++;
                slots++;
            }
    for (int id = 0; id < g->nnodes; id++)
        s->user_start[id + 1] += s->user_start[id];
    s->users = checked_calloc(slots + 1, sizeof(int));
    int *fill = checked_calloc((size_t)g->nnodes + 1, sizeof(int));
    for (int id = 0; id < g->nnodes; id++)
        for (int i = 0; i < g->nodes[id].nsrc; i++) {
            int src = g->nodes[id].src[i];
            if (src != IR_NONE) {
                s->users[s->user_start[src] + fill[src]++] = id;
                s->pending[id]++;
            }
        }
    free(fill);
}

static void make_ready(scheduler *s, int id)
{
    if (!s->done[id] && !s->g->nodes[id].dead && s->pending[id] == 0)
        s->ready[s->nready++] = id;
}

/* Arena bytes freed by running id (operands it reads last) minus its own. */
static int64_t net_freed(const scheduler *s, int id)
{
    const ir_node *n = &s->g->nodes[id];
    int64_t freed = -arena_bytes_of(s->g, id);
    for (int i = 0; i < n->nsrc; i++) {
        int src = n->src[i], reads = 0;
        bool first = true;
        for (int j = 0; j < n->nsrc; j++) {
            reads += n->src[j] == src;
            first = first && !(j < i && n->src[j] == src);
        }
        if (src != IR_NONE && first && s->remaining[src] == reads)
            freed += arena_bytes_of(s->g, src);
    }
    return freed;
}

static void take(scheduler *s, int id)
{
    const ir_node *n = &s->g->nodes[id];
    s->done[id] = true;
    s->order[s->count++] = id;
    for (int i = 0; !n->dead && i < n->nsrc; i++)
        if (n->src[i] != IR_NONE)
            s->remaining[n->src[i]]--;
    for (int k = s->user_start[id]; k < s->user_start[id + 1]; k++)
        if (--s->pending[s->users[k]] == 0)
            make_ready(s, s->users[k]);
}

/* The next live compute node to run (the most bytes freed, ties to the
 * earliest id), removed from the ready list; -1 when none is left. */
static int pick(scheduler *s)
{
    int best = -1, at = -1;
    int64_t best_score = 0;
    for (int r = 0; r < s->nready; r++) {
        int id = s->ready[r];
        int64_t score = net_freed(s, id);
        if (best < 0 || score > best_score || (score == best_score && id < best)) {
            best = id;
            best_score = score;
            at = r;
        }
    }
    if (at >= 0)
        s->ready[at] = s->ready[--s->nready];
    return best;
}

/* Moves every node to its new position and renumbers all references. */
static void apply_order(ir_graph *g, const int *order)
{
    int *new_id = malloc((size_t)g->nnodes * sizeof *new_id);
    ir_node *nodes = malloc((size_t)g->cap * sizeof *nodes);
    if (!new_id || !nodes)
        ax_out_of_memory(0);
    for (int pos = 0; pos < g->nnodes; pos++)
        new_id[order[pos]] = pos;
    for (int pos = 0; pos < g->nnodes; pos++) {
        nodes[pos] = g->nodes[order[pos]];
        for (int i = 0; i < nodes[pos].nsrc; i++)
            if (nodes[pos].src[i] != IR_NONE)
                nodes[pos].src[i] = new_id[nodes[pos].src[i]];
    }
    for (int i = 0; i < g->ninputs; i++)
        g->inputs[i] = new_id[g->inputs[i]];
    for (int i = 0; i < g->noutputs; i++)
        g->outputs[i] = new_id[g->outputs[i]];
    free(g->nodes);
    g->nodes = nodes;
    free(new_id);
}

int pass_schedule(ir_graph *g)
{
    const size_t n = (size_t)g->nnodes + 1;
    scheduler s = {g, checked_calloc(n, sizeof(int)), checked_calloc(n, sizeof(bool)),
                   checked_calloc(n, sizeof(int)), 0, NULL, NULL, checked_calloc(n, sizeof(int)),
                   checked_calloc(n, sizeof(int)), 0};
    index_users(&s);
    for (int id = 0; id < g->nnodes; id++)
        for (int i = 0; !g->nodes[id].dead && i < g->nodes[id].nsrc; i++)
            if (g->nodes[id].src[i] != IR_NONE)
                s.remaining[g->nodes[id].src[i]]++;
    /* nodes without operands first: take() queues the others, once each,
       when their last operand is done */
    for (int id = 0; id < g->nnodes; id++)
        if (ir_ops[g->nodes[id].op].kind != IR_SOURCE && s.pending[id] == 0)
            make_ready(&s, id);
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead && ir_ops[g->nodes[id].op].kind == IR_SOURCE)
            take(&s, id);
    for (int id; (id = pick(&s)) >= 0;)
        take(&s, id);
    for (int id = 0; id < g->nnodes; id++)
        if (!s.done[id])
            take(&s, id);
    apply_order(g, s.order);
    free(s.remaining);
    free(s.done);
    free(s.order);
    free(s.user_start);
    free(s.users);
    free(s.pending);
    free(s.ready);
    return 0;
}
