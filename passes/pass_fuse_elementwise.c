/* pass_fuse_elementwise.c — collapses trees of elementwise nodes into one
 * fused_elementwise node (ir.h ir_fused_step), which the C backend emits as
 * a single loop: each intermediate then costs neither an arena buffer nor a
 * pass over memory.
 *
 * A tree grows from a root (a tree node that is not itself merged) down its
 * operands.  Tree nodes are the elementwise ones (UNARY but cast, BINARY) and
 * the views, reshape and transpose, all Float32 or Float64.  An operand node
 * is merged when it is a tree node of its user's dtype, is no graph output,
 * every use of it is by that one user (so x .* x merges x once and reads it
 * twice), and it has the user's shape or the user is a view (so no merged
 * node is ever computed twice for one result element).  Everything else is a
 * leaf: a scalar node becomes a constant of the program, any other node an
 * operand, read through every view and broadcast on its path to the root:
 *   broadcast   operand a of c = a ⊕ b, at c's index i, is a at i with the
 *               broadcast dims zeroed: its strides gain 0 for those dims;
 *   transpose   y = transpose(x, perm) has y[i] = x[i permuted back]: y's
 *               stride along dim d is x's along perm[d];
 *   reshape     y = reshape(x, s) is the same elements in the same row-major
 *               order; x's strided view is re-expressed over s wherever
 *               every group of merged or split dims is evenly strided
 *               (PyTorch's view rule).  Where it is not (e.g. a broadcast
 *               [N, C] read as [N*C]), the reshape is left opaque: it is a
 *               leaf, and the build of that tree starts over.
 * So each operand's read is one set of strides over the result's dims
 * (attrs.strides): an elementwise op commutes with any re-indexing.  Trees
 * doing less than two pieces of work (elementwise ops and transposes; a
 * reshape moves no data) are left alone, as are trees needing more than
 * IR_MAX_FUSED_SRC operands.  Operands read in the result's own order come first,
 * so operand 0 is one the memory plan may overwrite in place. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#define MAX_MERGED (IR_MAX_FUSED_SRC + 64)

/* The compute dtypes the back ends have kernels for. */
static bool computes_in_kernel_dtype(const ir_node *n) { return n->dtype == AXRT_F32 || n->dtype == AXRT_F64; }

static bool is_elementwise(const ir_node *n)
{
    const ir_kind kind = ir_ops[n->op].kind;
    return !n->dead && !n->int8_apart && ((kind == IR_UNARY && n->op != IR_OP_cast) || kind == IR_BINARY) &&
           computes_in_kernel_dtype(n);
}

static bool is_view(const ir_node *n)
{
    return !n->dead && (n->op == IR_OP_reshape || n->op == IR_OP_transpose) && computes_in_kernel_dtype(n);
}

static bool is_tree_node(const ir_node *n) { return is_elementwise(n) || is_view(n); }

/* Who may read each node: every node that read it in the graph as given,
 * plus each fused root that was given it as an operand since.  Entries go
 * stale (a merged node dies, a root stops reading a merged node), so
 * sole_user rechecks each one; the lists keep the pass linear where a scan
 * of the whole graph per node made it quadratic. */
typedef struct user_lists {
    int **ids;
    int *n, *cap;
} user_lists;

static void add_user(user_lists *u, int id, int user)
{
    if (u->n[id] && u->ids[id][u->n[id] - 1] == user)
        return;
    if (u->n[id] == u->cap[id]) {
        int cap = u->cap[id] ? 2 * u->cap[id] : 2;
        int *grown = realloc(u->ids[id], (size_t)cap * sizeof *grown);
        if (!grown)
            ax_out_of_memory((size_t)cap * sizeof *grown);
        u->ids[id] = grown;
        u->cap[id] = cap;
    }
    u->ids[id][u->n[id]++] = user;
}

static void add_users_of(user_lists *u, const ir_graph *g, int user)
{
    const ir_node *n = &g->nodes[user];
    for (int i = 0; !n->dead && i < n->nsrc; i++)
        if (n->src[i] >= 0 && n->src[i] < g->nnodes)
            add_user(u, n->src[i], user);
}

static user_lists user_lists_new(const ir_graph *g)
{
    size_t n = (size_t)g->nnodes + 1;
    user_lists u = {calloc(n, sizeof *u.ids), calloc(n, sizeof *u.n), calloc(n, sizeof *u.cap)};
    if (!u.ids || !u.n || !u.cap)
        ax_out_of_memory(0);
    for (int k = 0; k < g->nnodes; k++)
        add_users_of(&u, g, k);
    return u;
}

static void user_lists_free(user_lists *u, const ir_graph *g)
{
    for (int k = 0; k < g->nnodes; k++)
        free(u->ids[k]);
    free(u->ids);
    free(u->n);
    free(u->cap);
}

/* The one live node using id, or IR_NONE when there are none, several, or id
 * is a graph output. */
static int sole_user(const ir_graph *g, const user_lists *u, int id)
{
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == id)
            return IR_NONE;
    int user = IR_NONE;
    for (int e = 0; e < u->n[id]; e++) {
        const int k = u->ids[id][e];
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

/* opaque[id]: a reshape found not expressible as strides (see the top). */
static bool merges_into(const ir_graph *g, const user_lists *users, const bool *opaque, int id, int user)
{
    const ir_node *n = &g->nodes[id], *u = &g->nodes[user];
    return is_tree_node(n) && is_tree_node(u) && !opaque[id] && !opaque[user] &&
           n->dtype == u->dtype && (is_view(u) || ir_same_shape(n, u)) && sole_user(g, users, id) == user;
}

/* ---- strided views: a tensor's elements as read at another shape's index */

typedef struct strided_view {
    int rank;
    int64_t shape[IR_MAX_RANK];
    int64_t strides[IR_MAX_RANK];
} strided_view;

static strided_view row_major_view(const ir_node *n)
{
    strided_view v = {.rank = n->rank};
    int64_t stride = 1;
    for (int d = n->rank - 1; d >= 0; d--) {
        v.shape[d] = n->shape[d];
        v.strides[d] = stride;
        stride *= n->shape[d];
    }
    return v;
}

/* v broadcast (NumPy) to the shape of elementwise node n. */
static strided_view broadcast_view(const strided_view *v, const ir_node *n)
{
    strided_view out = {.rank = n->rank};
    for (int d = 0; d < n->rank; d++) {
        const int sd = d - (n->rank - v->rank);
        out.shape[d] = n->shape[d];
        out.strides[d] = (sd < 0 || v->shape[sd] == 1) ? 0 : v->strides[sd];
    }
    return out;
}

static strided_view transposed_view(const strided_view *v, const ir_node *transpose)
{
    strided_view out = {.rank = v->rank};
    for (int d = 0; d < v->rank; d++) {
        out.shape[d] = v->shape[transpose->attrs.perm[d]];
        out.strides[d] = v->strides[transpose->attrs.perm[d]];
    }
    return out;
}

/* v re-read at reshape's shape, walking both shapes from the last dim in
 * chunks of v's dims that are evenly strided (PyTorch computeStride): each
 * chunk's elements are split over the new dims covering exactly as many
 * elements.  False when some chunk boundary falls inside a new dim. */
static bool reshaped_view(const strided_view *v, const ir_node *reshape, strided_view *out)
{
    *out = (strided_view){.rank = reshape->rank};
    memcpy(out->shape, reshape->shape, sizeof out->shape[0] * (size_t)reshape->rank);
    if (v->rank == 0)
        return true;   /* one element: every stride 0 */
    int view_d = reshape->rank - 1;
    int64_t base = v->strides[v->rank - 1], chunk = 1, covered = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        chunk *= v->shape[d];
        if (d > 0 && (v->shape[d - 1] == 1 || v->strides[d - 1] == chunk * base))
            continue;
        while (view_d >= 0 && (covered < chunk || out->shape[view_d] == 1)) {
            out->strides[view_d] = covered * base;
            covered *= out->shape[view_d--];
        }
        if (covered != chunk)
            return false;
        if (d > 0) {
            base = v->strides[d - 1];
            chunk = covered = 1;
        }
    }
    return view_d == -1;
}

/* ---- building one tree's program -------------------------------------- */

/* The program under construction for one root. */
typedef struct fused_builder {
    const ir_graph *g;
    const user_lists *users;
    const bool *opaque;
    ir_fused_step steps[2 * IR_MAX_FUSED_SRC + 64];
    int nsteps, work;
    int operands[IR_MAX_FUSED_SRC], noperands;
    int64_t strides[IR_MAX_FUSED_SRC][IR_MAX_RANK];
    int step_of[MAX_MERGED];  /* merged node ids and their args, memo for shared uses */
    int node_of[MAX_MERGED];
    int nmerged;
    int path[MAX_MERGED];     /* the merged nodes from the root down to the one being built */
    int depth;
    int failed_view;          /* a reshape a leaf could not be read through, or IR_NONE */
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

/* How leaf id is read at the root's index: its row-major view carried up
 * through every merged node on the path (see the top of the file).  False,
 * naming the reshape in failed_view, where a reshape cannot carry it. */
static bool leaf_strides(fused_builder *b, int id, int64_t *strides)
{
    strided_view v = row_major_view(&b->g->nodes[id]);
    for (int j = b->depth - 1; j >= 0; j--) {
        const ir_node *n = &b->g->nodes[b->path[j]];
        strided_view up;
        if (n->op == IR_OP_transpose)
            up = transposed_view(&v, n);
        else if (n->op != IR_OP_reshape)
            up = broadcast_view(&v, n);
        else if (!reshaped_view(&v, n, &up)) {
            b->failed_view = b->path[j];
            return false;
        }
        v = up;
    }
    memcpy(strides, v.strides, sizeof v.strides[0] * (size_t)v.rank);
    return true;
}

/* Operand k reads the root's element o at step o (in place is safe). */
static bool reads_in_order(const fused_builder *b, const ir_node *root, int k)
{
    int64_t row_major = 1;
    for (int d = root->rank - 1; d >= 0; d--) {
        if (root->shape[d] != 1 && b->strides[k][d] != row_major)
            return false;
        row_major *= root->shape[d];
    }
    return ir_numel(&b->g->nodes[b->operands[k]]) == ir_numel(root);
}

static int leaf_arg(fused_builder *b, int id)
{
    const ir_node *n = &b->g->nodes[id];
    const int rank = b->g->nodes[b->path[0]].rank;
    if (n->op == IR_OP_scalar)
        return push_step(b, IR_OP_scalar, 0, 0, n->attrs.scalar);
    int64_t strides[IR_MAX_RANK] = {0};
    if (!leaf_strides(b, id, strides))
        return IR_FUSED_OPERAND(0);
    for (int k = 0; k < b->noperands; k++)
        if (b->operands[k] == id && memcmp(b->strides[k], strides, sizeof strides[0] * (size_t)rank) == 0)
            return IR_FUSED_OPERAND(k);
    if (b->noperands == IR_MAX_FUSED_SRC) {
        b->overflow = true;
        return IR_FUSED_OPERAND(0);
    }
    memcpy(b->strides[b->noperands], strides, sizeof strides);
    b->operands[b->noperands] = id;
    return IR_FUSED_OPERAND(b->noperands++);
}

static void remember_merged(fused_builder *b, int id, int arg)
{
    if (b->nmerged == MAX_MERGED) {
        b->overflow = true;
        return;
    }
    b->node_of[b->nmerged] = id;
    b->step_of[b->nmerged++] = arg;
}

/* The argument computing node id inside the tree whose node `user` reads it
 * (IR_NONE for the root); a view is its operand's argument. */
static int build_arg(fused_builder *b, int id, int user)
{
    for (int k = 0; k < b->nmerged; k++)
        if (b->node_of[k] == id)
            return b->step_of[k];
    if (user != IR_NONE && !merges_into(b->g, b->users, b->opaque, id, user))
        return leaf_arg(b, id);
    if (b->depth == MAX_MERGED) {
        b->overflow = true;
        return 0;
    }
    b->path[b->depth++] = id;
    const ir_node *n = &b->g->nodes[id];
    int args[2] = {0, 0};
    for (int i = 0; i < n->nsrc && i < 2; i++)
        args[i] = build_arg(b, n->src[i], id);
    b->depth--;
    int arg = args[0];
    if (!is_view(n))
        arg = push_step(b, n->op, args[0], args[1], n->attrs.alpha);
    b->work += n->op != IR_OP_reshape;
    remember_merged(b, id, arg);
    return arg;
}

/* Renumbers operand references so that operands read in order come first. */
static void order_operands(fused_builder *b, const ir_node *root)
{
    int order[IR_MAX_FUSED_SRC], new_index[IR_MAX_FUSED_SRC], n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < b->noperands; k++)
            if (reads_in_order(b, root, k) == (pass == 0)) {
                new_index[k] = n;
                order[n++] = k;
            }
    int operands[IR_MAX_FUSED_SRC];
    int64_t strides[IR_MAX_FUSED_SRC][IR_MAX_RANK];
    for (int j = 0; j < n; j++) {
        operands[j] = b->operands[order[j]];
        memcpy(strides[j], b->strides[order[j]], sizeof strides[j]);
    }
    for (int s = 0; s < b->nsteps; s++)
        for (int a = 0; a < 2; a++)
            if (b->steps[s].op != IR_OP_scalar && b->steps[s].arg[a] < 0)
                b->steps[s].arg[a] = IR_FUSED_OPERAND(new_index[IR_FUSED_OPERAND_INDEX(b->steps[s].arg[a])]);
    memcpy(b->operands, operands, sizeof operands[0] * (size_t)n);
    memcpy(b->strides, strides, sizeof strides[0] * (size_t)n);
}

/* Rewrites root (keeping its id, shape, dtype and location) as the fused
 * node and kills the nodes merged into it. */
static void rewrite_root(ir_graph *g, int root, fused_builder *b)
{
    order_operands(b, &g->nodes[root]);
    ir_fused_step *steps = ax_alloc(g->ctx->arena, sizeof *steps * (size_t)b->nsteps);
    memcpy(steps, b->steps, sizeof *steps * (size_t)b->nsteps);
    int64_t (*strides)[IR_MAX_RANK] = ax_alloc(g->ctx->arena, sizeof *strides * (size_t)b->noperands);
    memcpy(strides, b->strides, sizeof *strides * (size_t)b->noperands);
    for (int k = 0; k < b->nmerged; k++)
        if (b->node_of[k] != root)
            g->nodes[b->node_of[k]].dead = true;
    ir_node *n = &g->nodes[root];
    n->op = IR_OP_fused_elementwise;
    n->nsrc = b->noperands;
    memcpy(n->src, b->operands, sizeof n->src[0] * (size_t)b->noperands);
    n->attrs.steps = steps;
    n->attrs.nsteps = b->nsteps;
    n->attrs.strides = (const int64_t (*)[IR_MAX_RANK])strides;
}

/* Scalars whose every reader became a fused program's constant. */
static void kill_unread_scalars(ir_graph *g)
{
    bool *read = calloc((size_t)g->nnodes + 1, sizeof *read);
    if (!read)
        ax_out_of_memory(0);
    for (int i = 0; i < g->noutputs; i++)
        read[g->outputs[i]] = true;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; !g->nodes[k].dead && i < g->nodes[k].nsrc; i++)
            if (g->nodes[k].src[i] >= 0 && g->nodes[k].src[i] < k)
                read[g->nodes[k].src[i]] = true;
    for (int id = 0; id < g->nnodes; id++)
        if (g->nodes[id].op == IR_OP_scalar && !read[id])
            g->nodes[id].dead = true;
    free(read);
}

/* Builds root's tree, marking opaque each reshape a leaf cannot be read
 * through and starting over, until a build succeeds; rewrites root when the
 * tree is worth a loop. */
static void fuse_tree(ir_graph *g, user_lists *users, bool *opaque, int root)
{
    for (;;) {
        fused_builder b = {.g = g, .users = users, .opaque = opaque, .failed_view = IR_NONE};
        build_arg(&b, root, IR_NONE);
        if (b.failed_view != IR_NONE) {
            opaque[b.failed_view] = true;
            if (b.failed_view == root)
                return;
            continue;
        }
        if (b.work >= 2 && b.nsteps >= 1 && b.noperands >= 1 && !b.overflow) { /* views alone: no program */
            rewrite_root(g, root, &b);
            add_users_of(users, g, root);
        }
        return;
    }
}

int pass_fuse_elementwise(ir_graph *g)
{
    bool *opaque = calloc((size_t)g->nnodes + 1, sizeof *opaque);
    if (!opaque)
        ax_out_of_memory(0);
    user_lists users = user_lists_new(g);
    for (int root = g->nnodes - 1; root >= 0; root--) {
        const int user = sole_user(g, &users, root);
        if (is_tree_node(&g->nodes[root]) && !opaque[root] &&
            (user == IR_NONE || !merges_into(g, &users, opaque, root, user)))
            fuse_tree(g, &users, opaque, root);
    }
    user_lists_free(&users, g);
    free(opaque);
    kill_unread_scalars(g);
    return 0;
}
