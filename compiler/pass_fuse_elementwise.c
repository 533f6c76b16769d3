/* pass_fuse_elementwise.c — collapses trees of elementwise nodes into one
 * fused_elementwise node (ir.h ir_fused_step), which the C backend emits as
 * a single loop: each intermediate then costs neither an arena buffer nor a
 * pass over memory.
 *
 * A tree grows from a root (an elementwise node that is not itself merged)
 * down its operands: an operand node is merged when it is elementwise (UNARY
 * but cast, or BINARY) of the root's dtype and shape, is no graph output, and
 * every use of it is by the one node it is merged into (so x .* x merges x
 * once and reads it twice).  Everything else is a leaf: a scalar node becomes
 * a constant of the program, any other node an operand, broadcast to the
 * result.  Trees of fewer than two operations are left alone, as are trees
 * needing more than IR_MAX_SRC operands.  Operands of the result's shape come
 * first, so operand 0 is one the memory plan may overwrite in place. */
#include "passes.h"

#include <string.h>

static bool same_shape(const ir_node *a, const ir_node *b)
{
    return a->rank == b->rank && memcmp(a->shape, b->shape, sizeof a->shape[0] * (size_t)a->rank) == 0;
}

static bool is_elementwise(const ir_node *n)
{
    const ir_kind kind = ir_ops[n->op].kind;
    return !n->dead && ((kind == IR_UNARY && n->op != IR_OP_cast) || kind == IR_BINARY) &&
           (n->dtype == AXRT_F32 || n->dtype == AXRT_F64);
}

/* The one live node using id, or IR_NONE when there are none, several, or id
 * is a graph output. */
static int sole_user(const ir_graph *g, int id)
{
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == id)
            return IR_NONE;
    int user = IR_NONE;
    for (int k = id + 1; k < g->nnodes; k++) {
        const ir_node *n = &g->nodes[k];
        for (int i = 0; !n->dead && i < n->nsrc; i++)
            if (n->src[i] == id) {
                if (user != IR_NONE && user != k)
                    return IR_NONE;
                user = k;
            }
    }
    return user;
}

static bool merges_into(const ir_graph *g, int id, int user)
{
    const ir_node *n = &g->nodes[id], *u = &g->nodes[user];
    return is_elementwise(n) && is_elementwise(u) && n->dtype == u->dtype && same_shape(n, u) &&
           sole_user(g, id) == user;
}

/* The program under construction for one root. */
typedef struct fused_builder {
    const ir_graph *g;
    ir_fused_step steps[2 * IR_MAX_SRC + 64];
    int nsteps, nops;
    int operands[IR_MAX_SRC], noperands;
    int step_of[IR_MAX_SRC + 64];  /* merged node ids and their steps, memo for shared uses */
    int node_of[IR_MAX_SRC + 64];
    int nmerged;
    bool overflow;
} fused_builder;

static int push_step(fused_builder *b, int op, int a0, int a1, double value)
{
    if (b->nsteps == (int)(sizeof b->steps / sizeof b->steps[0])) {
        b->overflow = true;
        return 0;
    }
    b->steps[b->nsteps] = (ir_fused_step){op, {a0, a1}, value};
    return b->nsteps++;
}

static int leaf_arg(fused_builder *b, int id)
{
    const ir_node *n = &b->g->nodes[id];
    if (n->op == IR_OP_scalar)
        return push_step(b, IR_OP_scalar, 0, 0, n->attrs.scalar);
    for (int k = 0; k < b->noperands; k++)
        if (b->operands[k] == id)
            return IR_FUSED_OPERAND(k);
    if (b->noperands == IR_MAX_SRC) {
        b->overflow = true;
        return IR_FUSED_OPERAND(0);
    }
    b->operands[b->noperands] = id;
    return IR_FUSED_OPERAND(b->noperands++);
}

/* The argument computing node id inside the tree whose node `user` reads it. */
static int build_arg(fused_builder *b, int id, int user)
{
    for (int k = 0; k < b->nmerged; k++)
        if (b->node_of[k] == id)
            return b->step_of[k];
    if (user != IR_NONE && !merges_into(b->g, id, user))
        return leaf_arg(b, id);
    const ir_node *n = &b->g->nodes[id];
    int args[2] = {0, 0};
    for (int i = 0; i < n->nsrc && i < 2; i++)
        args[i] = build_arg(b, n->src[i], id);
    const int step = push_step(b, n->op, args[0], args[1], n->attrs.alpha);
    b->nops++;
    if (b->nmerged == (int)(sizeof b->node_of / sizeof b->node_of[0]))
        b->overflow = true;
    else {
        b->node_of[b->nmerged] = id;
        b->step_of[b->nmerged++] = step;
    }
    return step;
}

/* Renumbers operand references so that full-shape operands come first. */
static void order_operands(fused_builder *b, const ir_node *root)
{
    int order[IR_MAX_SRC], new_index[IR_MAX_SRC], n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < b->noperands; k++)
            if (same_shape(&b->g->nodes[b->operands[k]], root) == (pass == 0))
                order[n++] = b->operands[k];
    for (int k = 0; k < b->noperands; k++)
        for (int j = 0; j < n; j++)
            if (order[j] == b->operands[k])
                new_index[k] = j;
    for (int s = 0; s < b->nsteps; s++)
        for (int a = 0; a < 2; a++)
            if (b->steps[s].op != IR_OP_scalar && b->steps[s].arg[a] < 0)
                b->steps[s].arg[a] = IR_FUSED_OPERAND(new_index[IR_FUSED_OPERAND_INDEX(b->steps[s].arg[a])]);
    memcpy(b->operands, order, sizeof order[0] * (size_t)n);
}

/* Rewrites root (keeping its id, shape, dtype and location) as the fused
 * node and kills the nodes merged into it. */
static void rewrite_root(ir_graph *g, int root, fused_builder *b)
{
    order_operands(b, &g->nodes[root]);
    ir_fused_step *steps = ax_alloc(g->ctx->arena, sizeof *steps * (size_t)b->nsteps);
    memcpy(steps, b->steps, sizeof *steps * (size_t)b->nsteps);
    for (int k = 0; k < b->nmerged; k++)
        if (b->node_of[k] != root)
            g->nodes[b->node_of[k]].dead = true;
    ir_node *n = &g->nodes[root];
    n->op = IR_OP_fused_elementwise;
    n->nsrc = b->noperands;
    memcpy(n->src, b->operands, sizeof n->src[0] * (size_t)b->noperands);
    n->attrs.steps = steps;
    n->attrs.nsteps = b->nsteps;
}

/* Scalars whose every reader became a fused program's constant. */
static void kill_unread_scalars(ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++) {
        bool read = false;
        for (int i = 0; i < g->noutputs; i++)
            read |= g->outputs[i] == id;
        for (int k = id + 1; k < g->nnodes && !read; k++)
            for (int i = 0; !g->nodes[k].dead && i < g->nodes[k].nsrc; i++)
                read |= g->nodes[k].src[i] == id;
        if (g->nodes[id].op == IR_OP_scalar && !read)
            g->nodes[id].dead = true;
    }
}

int pass_fuse_elementwise(ir_graph *g)
{
    for (int root = g->nnodes - 1; root >= 0; root--) {
        const int user = sole_user(g, root);
        if (!is_elementwise(&g->nodes[root]) || (user != IR_NONE && merges_into(g, root, user)))
            continue;
        fused_builder b = {.g = g};
        build_arg(&b, root, IR_NONE);
        if (b.nops >= 2 && b.noperands >= 1 && !b.overflow)
            rewrite_root(g, root, &b);
    }
    kill_unread_scalars(g);
    return 0;
}
