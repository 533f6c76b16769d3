/* pass_schedule.c — reorders the graph to lower the arena's peak where the
 * graph leaves a choice (independent branches).  Greedy list scheduling:
 * sources first (they take no arena), then repeatedly the ready node whose
 * execution frees the most arena bytes net of what it allocates, ties going
 * to the earliest original position (so a chain keeps its order).  Dead
 * nodes go last.  Every node still follows its operands; the pass manager
 * verifies that.  A layer and the residual add (and ReLU) that int8 runs
 * apart (ir_node.int8_apart, pass_fuse_residual_int8) are one unit, as the
 * fused layer would be: the layer waits for the residual, the add and the
 * ReLU follow it at once, and the unit's bytes are the fused layer's. */
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

/* Whether node id is a residual add or ReLU int8 runs apart: it follows
 * its operand 0 at once (the layer, the add). */
static bool follows(const ir_graph *g, int id) { return !g->nodes[id].dead && g->nodes[id].int8_apart; }

/* The nodes each slot makes wait: the node reading it, and for a residual
 * int8 runs apart, its layer too (its operand 0), as the fused layer did. */
static int waiting(const ir_graph *g, int id, int i)
{
    return follows(g, id) && g->nodes[id].op == IR_OP_add && i == 1 ? g->nodes[id].src[0] : IR_NONE;
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
                const int extra = waiting(g, id, i) != IR_NONE;
                s->user_start[g->nodes[id].src[i] + 1] += 1 + extra;
                slots += 1 + (size_t)extra;
            }
    for (int id = 0; id < g->nnodes; id++)
        s->user_start[id + 1] += s->user_start[id];
    s->users = checked_calloc(slots + 1, sizeof(int));
    int *fill = checked_calloc((size_t)g->nnodes + 1, sizeof(int));
    for (int id = 0; id < g->nnodes; id++)
        for (int i = 0; i < g->nodes[id].nsrc; i++) {
            int src = g->nodes[id].src[i], also = waiting(g, id, i);
            if (src == IR_NONE) continue;
            s->users[s->user_start[src] + fill[src]++] = id;
            s->pending[id]++;
            if (also != IR_NONE) {
                s->users[s->user_start[src] + fill[src]++] = also;
                s->pending[also]++;
            }
        }
    free(fill);
}

static void make_ready(scheduler *s, int id)
{
    if (!s->done[id] && !s->g->nodes[id].dead && s->pending[id] == 0 && !follows(s->g, id))
        s->ready[s->nready++] = id;
}

/* The node following id at once, else IR_NONE. */
static int follower(const scheduler *s, int id)
{
    for (int k = s->user_start[id]; k < s->user_start[id + 1]; k++)
        if (follows(s->g, s->users[k]) && s->g->nodes[s->users[k]].src[0] == id)
            return s->users[k];
    return IR_NONE;
}

/* Arena bytes freed by running id and its followers (operands they read
 * last) minus what the last of them keeps.  A node with followers is a
 * layer (IR_SRC_ROOM operands at most), its followers read one more. */
static int64_t net_freed(const scheduler *s, int id)
{
    const ir_node *n = &s->g->nodes[id];
    int group[IR_SRC_ROOM + 1], last = id, count = n->nsrc;
    const int *src = n->src;
    if (follower(s, id) != IR_NONE && n->nsrc <= IR_SRC_ROOM) {
        memcpy(group, n->src, sizeof *group * (size_t)n->nsrc);
        group[count++] = s->g->nodes[follower(s, id)].src[1];   /* the residual */
        src = group;
    }
    for (int k = follower(s, id); k != IR_NONE; k = follower(s, k))
        last = k;
    int64_t freed = -arena_bytes_of(s->g, last);
    for (int i = 0; i < count; i++) {
        int reads = 0;
        bool first = true;
        for (int j = 0; j < count; j++) {
            reads += src[j] == src[i];
            first = first && !(j < i && src[j] == src[i]);
        }
        if (src[i] != IR_NONE && first && s->remaining[src[i]] == reads)
            freed += arena_bytes_of(s->g, src[i]);
    }
    return freed;
}

/* Schedules id, then its followers. */
static void take(scheduler *s, int id)
{
    for (int at = id; at != IR_NONE; at = s->g->nodes[at].dead ? IR_NONE : follower(s, at)) {
        const ir_node *n = &s->g->nodes[at];
        s->done[at] = true;
        s->order[s->count++] = at;
        for (int i = 0; !n->dead && i < n->nsrc; i++)
            if (n->src[i] != IR_NONE)
                s->remaining[n->src[i]]--;
        for (int k = s->user_start[at]; k < s->user_start[at + 1]; k++)
            if (--s->pending[s->users[k]] == 0)
                make_ready(s, s->users[k]);
    }
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
