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
} scheduler;

static int64_t arena_bytes_of(const ir_graph *g, int id)
{
    const ir_node *n = &g->nodes[id];
    return ir_ops[n->op].kind == IR_SOURCE || ir_is_output(g, id) ? 0 : (int64_t)ir_nbytes(n);
}

static bool ready(const scheduler *s, int id)
{
    const ir_node *n = &s->g->nodes[id];
    for (int i = 0; i < n->nsrc; i++)
        if (n->src[i] != IR_NONE && !s->done[n->src[i]])
            return false;
    return true;
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
}

/* The next live compute node to run, or -1 when none is left. */
static int pick(const scheduler *s)
{
    int best = -1;
    int64_t best_score = 0;
    for (int id = 0; id < s->g->nnodes; id++) {
        if (s->done[id] || s->g->nodes[id].dead || !ready(s, id))
            continue;
        int64_t score = net_freed(s, id);
        if (best < 0 || score > best_score) {
            best = id;
            best_score = score;
        }
    }
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
    scheduler s = {g, calloc((size_t)g->nnodes + 1, sizeof(int)),
                   calloc((size_t)g->nnodes + 1, sizeof(bool)),
                   calloc((size_t)g->nnodes + 1, sizeof(int)), 0};
    if (!s.remaining || !s.done || !s.order)
        ax_out_of_memory(0);
    for (int id = 0; id < g->nnodes; id++)
        for (int i = 0; !g->nodes[id].dead && i < g->nodes[id].nsrc; i++)
            if (g->nodes[id].src[i] != IR_NONE)
                s.remaining[g->nodes[id].src[i]]++;
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
    return 0;
}
