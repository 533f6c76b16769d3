/* pass_grad.c — reverse-mode differentiation on the IR, and the losses.
 *
 * pass_grad appends to a graph the nodes that compute the gradient of a
 * scalar loss node with respect to chosen nodes (parameters).  It walks the
 * graph backwards from the loss, keeping per node the id of its adjoint
 * (d loss / d node, a node of the node's shape), and applies each visited
 * node's gradient rule, which adds to its operands' adjoints.  The rules
 * form one table indexed by op, generated from ops.def: every row needs a
 * grad_<name> function here (UNARY_OP rows share grad_unary, whose
 * per-op derivative is ir_interp.c's deriv_<name> table, itself generated
 * from those rows), so an op added without a rule does not compile; ops not
 * differentiable yet are listed explicitly as grad_missing, which reports a
 * located error naming the layer.
 *
 * The backward is written in existing IR ops (matmul, transpose, sum, mul,
 * ...) plus unary_grad, so the interpreter evaluates it as any graph; the
 * new nodes get resolved shapes and dtypes here (no pass_shape rerun).
 * Constants it needs (ones to broadcast with, an identity matrix for
 * one-hot rows) are `derived` parameters: never part of the state_dict.
 *
 * pass_loss appends the loss of interface.md §8 between a model output and
 * a new target input, written in the same ops, so its gradient comes from
 * the same rules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct grad_state {
    ir_graph *g;
    int *adj;        /* per node id: its adjoint's node id, or IR_NONE */
    bool *needs;     /* per original node id: depends on a wrt node */
    int norig;       /* nodes before the backward was appended */
    int errors;
    int insert_at;   /* >= 0: new nodes go there (pass_train_mode), else at the end */
} grad_state;

/* ---- building nodes ---------------------------------------------------- */

/* A new node of the model's dtype with a resolved shape. */
static int add_node(grad_state *s, ir_op op, const int *src, int nsrc, const int64_t *shape, int rank)
{
    int id = s->insert_at >= 0 ? ir_insert(s->g, s->insert_at++, op, src, nsrc, s->g->loc)
                               : ir_add(s->g, op, src, nsrc, s->g->loc);
    ir_node *n = &s->g->nodes[id];
    n->dtype = s->g->dtype;
    n->rank = rank;
    if (rank > 0)
        memcpy(n->shape, shape, sizeof n->shape[0] * (size_t)rank);
    return id;
}

static int like(grad_state *s, ir_op op, int a, int b, int shape_of)
{
    int src[2] = {a, b};
    const ir_node *t = &s->g->nodes[shape_of];
    int64_t shape[IR_MAX_RANK];
    memcpy(shape, t->shape, sizeof shape);
    return add_node(s, op, src, b == IR_NONE ? 1 : 2, shape, t->rank);
}

static int binary(grad_state *s, ir_op op, int a, int b)
{
    /* the broadcast shape of a and b */
    const ir_node *x = &s->g->nodes[a], *y = &s->g->nodes[b];
    int rank = x->rank > y->rank ? x->rank : y->rank;
    int64_t shape[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        int dx = d - (rank - x->rank), dy = d - (rank - y->rank);
        int64_t sx = dx >= 0 ? x->shape[dx] : 1, sy = dy >= 0 ? y->shape[dy] : 1;
        shape[d] = sx > sy ? sx : sy;
    }
    int src[2] = {a, b};
    return add_node(s, op, src, 2, shape, rank);
}

static int scalar(grad_state *s, double v)
{
    int id = add_node(s, IR_OP_scalar, NULL, 0, NULL, 0);
    s->g->nodes[id].attrs.scalar = v;
    return id;
}

/* A derived parameter of shape filled with value (identity: 1 on the
 * diagonal of a square matrix, 0 elsewhere), held as float or double; for
 * another model dtype a Float64 one cast to it. */
static int constant(grad_state *s, const int64_t *shape, int rank, double value, bool identity)
{
    const axrt_dtype model = s->g->dtype, held = model == AXRT_F32 ? AXRT_F32 : AXRT_F64;
    int id = add_node(s, IR_OP_param, NULL, 0, shape, rank);
    ir_node *n = &s->g->nodes[id];
    n->dtype = held;
    n->derived = true;
    n->name = identity ? "<grad identity>" : "<grad constant>";
    n->role = IR_PARAM_ZEROS;
    const int64_t count = ir_numel(n);
    void *data = ax_alloc(s->g->ctx->arena, (size_t)count * ir_dtypes[held].size + 1);
    for (int64_t i = 0; i < count; i++) {
        double v = identity ? (i / shape[1] == i % shape[1] ? 1 : 0) : value;
        if (held == AXRT_F32) ((float *)data)[i] = (float)v;
        else ((double *)data)[i] = v;
    }
    n->data = data;
    if (held == model) return id;
    int c = add_node(s, IR_OP_cast, &id, 1, shape, rank);
    return c;
}

static int reshape(grad_state *s, int x, const int64_t *shape, int rank)
{
    int id = add_node(s, IR_OP_reshape, &x, 1, shape, rank);
    ir_attrs *a = &s->g->nodes[id].attrs;
    memcpy(a->newshape, shape, sizeof a->newshape[0] * (size_t)rank);
    a->nnewshape = rank;
    return id;
}

static int reshape_like(grad_state *s, int x, int shape_of)
{
    const ir_node *t = &s->g->nodes[shape_of];
    int64_t shape[IR_MAX_RANK];
    memcpy(shape, t->shape, sizeof shape);
    return reshape(s, x, shape, t->rank);
}

/* sum (or mean) over axis, the dim kept as 1 */
static int reduce(grad_state *s, ir_op op, int x, int axis)
{
    const ir_node *n = &s->g->nodes[x];
    int64_t shape[IR_MAX_RANK];
    memcpy(shape, n->shape, sizeof shape);
    int rank = n->rank;
    shape[axis] = 1;
    int id = add_node(s, op, &x, 1, shape, rank);
    s->g->nodes[id].attrs.axis = axis;
    return id;
}

/* x with its last two dims swapped */
static int swap_last(grad_state *s, int x)
{
    const ir_node *n = &s->g->nodes[x];
    int rank = n->rank;
    int64_t shape[IR_MAX_RANK];
    int perm[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) { perm[d] = d; shape[d] = n->shape[d]; }
    perm[rank - 2] = rank - 1, perm[rank - 1] = rank - 2;
    shape[rank - 2] = n->shape[rank - 1], shape[rank - 1] = n->shape[rank - 2];
    int id = add_node(s, IR_OP_transpose, &x, 1, shape, rank);
    memcpy(s->g->nodes[id].attrs.perm, perm, sizeof perm);
    s->g->nodes[id].attrs.nperm = rank;
    return id;
}

static int matmul(grad_state *s, int a, int b)
{
    const ir_node *x = &s->g->nodes[a], *y = &s->g->nodes[b];
    int rank = x->rank > y->rank ? x->rank : y->rank;
    int64_t shape[IR_MAX_RANK];
    for (int d = 0; d < rank - 2; d++) {
        int dx = d - (rank - x->rank), dy = d - (rank - y->rank);
        int64_t sx = dx >= 0 ? x->shape[dx] : 1, sy = dy >= 0 ? y->shape[dy] : 1;
        shape[d] = sx > sy ? sx : sy;
    }
    shape[rank - 2] = x->shape[x->rank - 2];
    shape[rank - 1] = y->shape[y->rank - 1];
    int src[2] = {a, b};
    return add_node(s, IR_OP_matmul, src, 2, shape, rank);
}

/* The adjoint dy of a broadcast result summed back to operand x's shape. */
static int unbroadcast(grad_state *s, int dy, int x)
{
    const int rank = s->g->nodes[dy].rank, xr = s->g->nodes[x].rank;
    int id = dy;
    for (int d = 0; d < rank; d++) {
        int xd = d - (rank - xr);
        int64_t out = s->g->nodes[dy].shape[d];
        if (out != 1 && (xd < 0 || s->g->nodes[x].shape[xd] == 1))
            id = reduce(s, IR_OP_sum, id, d);
    }
    return ir_same_shape(&s->g->nodes[id], &s->g->nodes[x]) ? id : reshape_like(s, id, x);
}

/* dy (a reduction's keep-dim adjoint) broadcast to x's shape. */
static int expand(grad_state *s, int dy, int x)
{
    const ir_node *n = &s->g->nodes[x];
    int64_t shape[IR_MAX_RANK];
    memcpy(shape, n->shape, sizeof shape);
    int ones = constant(s, shape, n->rank, 1, false);
    return binary(s, IR_OP_mul, dy, ones);
}

/* ---- adjoints ---------------------------------------------------------- */

static void accumulate(grad_state *s, int id, int grad)
{
    if (id == IR_NONE || id >= s->norig || !s->needs[id] || grad == IR_NONE)
        return;
    if (!ir_dtype_is_float(s->g->nodes[id].dtype))
        return;
    s->adj[id] = s->adj[id] == IR_NONE ? grad : binary(s, IR_OP_add, s->adj[id], grad);
}

static bool needs(const grad_state *s, int id) { return id != IR_NONE && s->needs[id]; }

/* ---- the rules: each adds node id's adjoint into its operands' --------- */

typedef void grad_fn(grad_state *s, int id);

static void grad_none(grad_state *s, int id) { (void)s, (void)id; }

static void grad_missing(grad_state *s, int id)
{
    char what[160];
    ir_describe_layer(s->g, &s->g->nodes[id], what, sizeof what);
    ax_error(s->g->ctx, s->g->nodes[id].loc, "cannot train through %s: no gradient rule for '%s' yet",
             what, ir_ops[s->g->nodes[id].op].name);
    s->errors++;
}

#define N(id) (&s->g->nodes[id])
#define SRC(id, k) (s->g->nodes[id].src[k])

static void grad_unary(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    int d = like(s, IR_OP_unary_grad, s->adj[id], x, x);
    N(d)->attrs.of_op = (int)N(id)->op;
    N(d)->attrs.alpha = N(id)->attrs.alpha;
    accumulate(s, x, d);
}

static void grad_cast(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    int c = like(s, IR_OP_cast, s->adj[id], IR_NONE, x);
    N(c)->dtype = N(x)->dtype;
    accumulate(s, x, c);
}

static void grad_add(grad_state *s, int id)
{
    accumulate(s, SRC(id, 0), needs(s, SRC(id, 0)) ? unbroadcast(s, s->adj[id], SRC(id, 0)) : IR_NONE);
    accumulate(s, SRC(id, 1), needs(s, SRC(id, 1)) ? unbroadcast(s, s->adj[id], SRC(id, 1)) : IR_NONE);
}

static void grad_sub(grad_state *s, int id)
{
    int a = SRC(id, 0), b = SRC(id, 1), dy = s->adj[id];
    if (needs(s, a)) accumulate(s, a, unbroadcast(s, dy, a));
    if (needs(s, b)) accumulate(s, b, unbroadcast(s, like(s, IR_OP_neg, dy, IR_NONE, dy), b));
}

static void grad_mul(grad_state *s, int id)
{
    int a = SRC(id, 0), b = SRC(id, 1), dy = s->adj[id];
    if (needs(s, a)) accumulate(s, a, unbroadcast(s, binary(s, IR_OP_mul, dy, b), a));
    if (needs(s, b)) accumulate(s, b, unbroadcast(s, binary(s, IR_OP_mul, dy, a), b));
}

/* y = a / b: da = dy / b, db = -dy * y / b */
static void grad_div(grad_state *s, int id)
{
    int a = SRC(id, 0), b = SRC(id, 1), dy = s->adj[id];
    if (needs(s, a)) accumulate(s, a, unbroadcast(s, binary(s, IR_OP_div, dy, b), a));
    if (needs(s, b)) {
        int t = binary(s, IR_OP_div, binary(s, IR_OP_mul, dy, id), b);
        accumulate(s, b, unbroadcast(s, like(s, IR_OP_neg, t, IR_NONE, t), b));
    }
}

static void grad_sum(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (needs(s, x)) accumulate(s, x, expand(s, s->adj[id], x));
}

static void grad_mean(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    double len = (double)N(x)->shape[N(id)->attrs.axis];
    accumulate(s, x, expand(s, binary(s, IR_OP_mul, s->adj[id], scalar(s, 1 / len)), x));
}

/* y = softmax(x): dx = y * (dy - sum(dy * y)) along the axis */
static void grad_softmax(grad_state *s, int id)
{
    int x = SRC(id, 0), dy = s->adj[id];
    if (!needs(s, x)) return;
    int dot = reduce(s, IR_OP_sum, binary(s, IR_OP_mul, dy, id), N(id)->attrs.axis);
    accumulate(s, x, binary(s, IR_OP_mul, id, binary(s, IR_OP_sub, dy, dot)));
}

/* y = log_softmax(x): dx = dy - exp(y) * sum(dy) along the axis */
static void grad_log_softmax(grad_state *s, int id)
{
    int x = SRC(id, 0), dy = s->adj[id];
    if (!needs(s, x)) return;
    int total = reduce(s, IR_OP_sum, dy, N(id)->attrs.axis);
    int p = like(s, IR_OP_exp, id, IR_NONE, id);
    accumulate(s, x, binary(s, IR_OP_sub, dy, binary(s, IR_OP_mul, p, total)));
}

static void grad_reshape(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (needs(s, x)) accumulate(s, x, reshape_like(s, s->adj[id], x));
}

static void grad_transpose(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    const ir_attrs *a = &N(id)->attrs;
    int inverse[IR_MAX_RANK];
    for (int d = 0; d < a->nperm; d++) inverse[a->perm[d]] = d;
    int t = like(s, IR_OP_transpose, s->adj[id], IR_NONE, x);
    memcpy(N(t)->attrs.perm, inverse, sizeof inverse);
    N(t)->attrs.nperm = N(x)->rank;
    accumulate(s, x, t);
}

/* Rejects a node carrying a fused epilogue (the passes that fuse them do
 * not run before training). */
static bool plain(grad_state *s, int id)
{
    if (N(id)->attrs.act == IR_NONE && N(id)->attrs.residual == IR_NONE) return true;
    grad_missing(s, id);
    return false;
}

/* y = x @ W^T + b over rows: dx = dy @ W, dW = dy2^T @ x2, db = colsum(dy2) */
static void grad_dense(grad_state *s, int id)
{
    if (!plain(s, id)) return;
    int x = SRC(id, 0), w = SRC(id, 1), b = N(id)->nsrc > 2 ? SRC(id, 2) : IR_NONE, dy = s->adj[id];
    if (needs(s, x)) accumulate(s, x, matmul(s, dy, w));
    int64_t rows = ir_numel(N(id)) / N(w)->shape[0];
    int64_t dy2_shape[2] = {rows, N(w)->shape[0]}, x2_shape[2] = {rows, N(w)->shape[1]};
    int dy2 = N(dy)->rank == 2 ? dy : reshape(s, dy, dy2_shape, 2);
    if (needs(s, w)) {
        int x2 = N(x)->rank == 2 ? x : reshape(s, x, x2_shape, 2);
        accumulate(s, w, matmul(s, swap_last(s, dy2), x2));
    }
    if (needs(s, b)) accumulate(s, b, reshape_like(s, reduce(s, IR_OP_sum, dy2, 0), b));
}

/* y = a @ b (rank >= 2, batch dims broadcast): da = dy @ b^T, db = a^T @ dy */
static void grad_matmul(grad_state *s, int id)
{
    int a = SRC(id, 0), b = SRC(id, 1), dy = s->adj[id];
    if (N(a)->rank < 2 || N(b)->rank < 2) { grad_missing(s, id); return; }
    if (!plain(s, id)) return;
    if (needs(s, a)) accumulate(s, a, unbroadcast(s, matmul(s, dy, swap_last(s, b)), a));
    if (needs(s, b)) accumulate(s, b, unbroadcast(s, matmul(s, swap_last(s, a), dy), b));
}

/* y = W[idx]: dW = onehot(idx)^T @ dy (rows of idx's flattening) */
static void grad_embedding(grad_state *s, int id)
{
    int idx = SRC(id, 0), w = SRC(id, 1);
    if (!needs(s, w)) return;
    const int64_t vocab = N(w)->shape[0], dim = N(w)->shape[1], rows = ir_numel(N(idx));
    int64_t eye_shape[2] = {vocab, vocab}, flat_shape[1] = {rows}, dy2_shape[2] = {rows, dim};
    int eye = constant(s, eye_shape, 2, 0, true);
    int flat = N(idx)->rank == 1 ? idx : reshape(s, idx, flat_shape, 1);
    N(flat)->dtype = N(idx)->dtype;
    int src[2] = {flat, eye};
    int64_t hot_shape[2] = {rows, vocab};
    int hot = add_node(s, IR_OP_embedding, src, 2, hot_shape, 2);
    int dy2 = reshape(s, s->adj[id], dy2_shape, 2);
    accumulate(s, w, matmul(s, swap_last(s, hot), dy2));
}

/* LayerNorm over the last dim, recomputing x^ = (x - mean) * rstd:
 * dw = sum dy x^, db = sum dy (over the leading dims), and with g = dy w,
 * dx = rstd (g - mean(g) - x^ mean(g x^)) along the last dim. */
static void grad_layernorm(grad_state *s, int id)
{
    if (!plain(s, id)) return;
    int x = SRC(id, 0), w = SRC(id, 1), b = SRC(id, 2), dy = s->adj[id];
    const int last = N(x)->rank - 1;
    int xc = binary(s, IR_OP_sub, x, reduce(s, IR_OP_mean, x, last));
    int var = reduce(s, IR_OP_mean, binary(s, IR_OP_mul, xc, xc), last);
    int sd = like(s, IR_OP_sqrt, binary(s, IR_OP_add, var, scalar(s, N(id)->attrs.eps)), IR_NONE, var);
    int rstd = like(s, IR_OP_reciprocal, sd, IR_NONE, sd);
    int xhat = binary(s, IR_OP_mul, xc, rstd);
    if (needs(s, w)) accumulate(s, w, unbroadcast(s, binary(s, IR_OP_mul, dy, xhat), w));
    if (needs(s, b)) accumulate(s, b, unbroadcast(s, dy, b));
    if (!needs(s, x)) return;
    int gx = binary(s, IR_OP_mul, dy, w);
    int m1 = reduce(s, IR_OP_mean, gx, last);
    int m2 = reduce(s, IR_OP_mean, binary(s, IR_OP_mul, gx, xhat), last);
    int inner = binary(s, IR_OP_sub, binary(s, IR_OP_sub, gx, m1), binary(s, IR_OP_mul, xhat, m2));
    accumulate(s, x, binary(s, IR_OP_mul, rstd, inner));
}

/* [N, H, W, C] -> [N, C] mean: dx = dy / (H W) at every pixel */
static void grad_globalmeanpool(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    const int64_t *xs = N(x)->shape;
    int64_t shape[4] = {xs[0], 1, 1, xs[3]};
    int dy = binary(s, IR_OP_mul, s->adj[id], scalar(s, 1.0 / (double)(xs[1] * xs[2])));
    accumulate(s, x, expand(s, reshape(s, dy, shape, 4), x));
}

/* Mean pooling in non-overlapping windows that tile the input (stride =
 * kernel, no padding, sizes divisible, as LeNet-5's): each input pixel gets
 * its window's dy / (kh kw), spread through a [N, OH, kh, OW, kw, C] view. */
static void grad_meanpool(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    const ir_attrs *a = &N(id)->attrs;
    const int64_t *xs = N(x)->shape, *ys = N(id)->shape;
    bool tiles = a->stride[0] == a->kernel[0] && a->stride[1] == a->kernel[1] && ys[1] * a->kernel[0] == xs[1] &&
                 ys[2] * a->kernel[1] == xs[2];
    for (int k = 0; k < 4; k++) tiles = tiles && a->pad[k] == 0;
    if (!tiles) { grad_missing(s, id); return; }
    int64_t view[6] = {ys[0], ys[1], 1, ys[2], 1, ys[3]};
    int64_t full[6] = {ys[0], ys[1], a->kernel[0], ys[2], a->kernel[1], ys[3]};
    int dy = binary(s, IR_OP_mul, s->adj[id], scalar(s, 1.0 / (double)(a->kernel[0] * a->kernel[1])));
    int spread = binary(s, IR_OP_mul, reshape(s, dy, view, 6), constant(s, full, 6, 1, false));
    accumulate(s, x, reshape_like(s, spread, x));
}

/* Ops without a rule yet, each named (a new ops.def row must be added to
 * one list or the other, or the table below does not compile). */
#define grad_input grad_none
#define grad_param grad_none
#define grad_scalar grad_none
#define grad_maximum grad_missing
#define grad_minimum grad_missing
#define grad_prod grad_missing
#define grad_pow grad_missing
#define grad_fmod grad_missing
#define grad_max grad_missing
#define grad_min grad_missing
#define grad_groupnorm grad_missing
#define grad_upsample grad_missing
#define grad_conv_transpose grad_missing
#define grad_concat grad_missing
#define grad_slice grad_missing
#define grad_chunk grad_missing
#define grad_result grad_missing
#define grad_batchnorm grad_missing
#define grad_conv grad_missing
#define grad_maxpool grad_missing
#define grad_mha grad_missing
#define grad_fused_elementwise grad_missing
#define grad_unary_grad grad_missing

static grad_fn *const grad_rules[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags) [IR_OP_##name] = grad_##name,
#define UNARY_OP(name, flags) [IR_OP_##name] = grad_unary,
#include "ops.def"
#undef OP
};

bool pass_grad_has_rule(ir_op op)
{
    return (unsigned)op < IR_OP_COUNT && grad_rules[op] != grad_missing;
}

/* Marks every node that depends on a wrt node. */
static void mark_needs(grad_state *s, const int *wrt, int nwrt)
{
    for (int i = 0; i < nwrt; i++) s->needs[wrt[i]] = true;
    for (int id = 0; id < s->norig; id++) {
        const ir_node *n = N(id);
        if (n->dead) continue;
        for (int k = 0; k < n->nsrc; k++)
            if (n->src[k] != IR_NONE && s->needs[n->src[k]]) s->needs[id] = true;
    }
}

int pass_grad(ir_graph *g, int loss, const int *wrt, int nwrt, int *grads)
{
    grad_state s = {g, NULL, NULL, g->nnodes, 0, -1};
    s.adj = malloc(sizeof *s.adj * (size_t)s.norig);
    s.needs = calloc((size_t)s.norig, sizeof *s.needs);
    if (!s.adj || !s.needs) ax_out_of_memory(0);
    for (int i = 0; i < s.norig; i++) s.adj[i] = IR_NONE;
    mark_needs(&s, wrt, nwrt);
    int64_t shape[IR_MAX_RANK];
    memcpy(shape, g->nodes[loss].shape, sizeof shape);
    s.adj[loss] = constant(&s, shape, g->nodes[loss].rank, 1, false);
    for (int id = loss; id >= 0 && !s.errors; id--)
        if (!g->nodes[id].dead && s.adj[id] != IR_NONE && s.needs[id]) grad_rules[g->nodes[id].op](&s, id);
    for (int i = 0; i < nwrt; i++) grads[i] = s.adj[wrt[i]];
    free(s.adj);
    free(s.needs);
    return s.errors;
}

/* ---- losses ------------------------------------------------------------ */

const char *const pass_loss_names[PASS_LOSS_COUNT] = {"mse", "cross_entropy", "bce_with_logits"};

/* The mean over every element of x, as a [1] node. */
static int mean_all(grad_state *s, int x)
{
    int64_t flat[2] = {1, ir_numel(N(x))}, one[1] = {1};
    int m = reduce(s, IR_OP_mean, reshape(s, x, flat, 2), 1);
    return reshape(s, m, one, 1);
}

int pass_loss(ir_graph *g, pass_loss_kind kind, int y, int target)
{
    grad_state s = {g, NULL, NULL, g->nnodes, 0, -1};
    grad_state *sp = &s;
    if (kind == PASS_LOSS_mse) {
        int d = binary(sp, IR_OP_sub, y, target);
        return mean_all(sp, binary(sp, IR_OP_mul, d, d));
    }
    if (kind == PASS_LOSS_bce_with_logits) {
        /* max(z, 0) - z t + log(1 + exp(-|z|)) = softplus(z) - z t */
        int sp_z = like(sp, IR_OP_softplus, y, IR_NONE, y);
        return mean_all(sp, binary(sp, IR_OP_sub, sp_z, binary(sp, IR_OP_mul, y, target)));
    }
    /* cross_entropy: -mean over the batch of log_softmax(z)[class], the
     * class picked by a one-hot row (an identity matrix's row) */
    const int64_t classes = g->nodes[y].shape[1];
    int64_t eye_shape[2] = {classes, classes};
    int src[2] = {target, constant(sp, eye_shape, 2, 0, true)};
    int hot = add_node(sp, IR_OP_embedding, src, 2, g->nodes[y].shape, 2);
    int ls = like(sp, IR_OP_log_softmax, y, IR_NONE, y);
    g->nodes[ls].attrs.axis = 1;
    int picked = binary(sp, IR_OP_mul, hot, ls);
    int total = mean_all(sp, picked);
    return binary(sp, IR_OP_mul, total, scalar(sp, -(double)classes));
}

/* ---- training mode --------------------------------------------------------- */

/* BatchNorm node bn in training mode, its nodes inserted before it: batch
 * statistics over every dim but the last (biased variance), then bn itself
 * becomes the final add.  The running statistics' new values (momentum 0.1,
 * the variance's from the unbiased one) become outputs named after them. */
static void train_batchnorm(grad_state *s, int bn)
{
    s->insert_at = bn;
    const int x = SRC(bn, 0), w = SRC(bn, 1), b = SRC(bn, 2), rm = SRC(bn, 3), rv = SRC(bn, 4);
    const double eps = N(bn)->attrs.eps;
    const int64_t c = N(x)->shape[N(x)->rank - 1], m = ir_numel(N(x)) / c;
    int64_t rows_shape[2] = {m, c}, c_shape[1] = {c};
    int rows = reshape(s, x, rows_shape, 2);
    int mean = reduce(s, IR_OP_mean, rows, 0);
    int xc = binary(s, IR_OP_sub, rows, mean);
    int var = reduce(s, IR_OP_mean, binary(s, IR_OP_mul, xc, xc), 0);
    int sd = like(s, IR_OP_sqrt, binary(s, IR_OP_add, var, scalar(s, eps)), IR_NONE, var);
    int xhat = binary(s, IR_OP_mul, xc, like(s, IR_OP_reciprocal, sd, IR_NONE, sd));
    int scaled = reshape_like(s, binary(s, IR_OP_mul, xhat, w), x);
    int new_mean = binary(s, IR_OP_add, binary(s, IR_OP_mul, rm, scalar(s, 0.9)),
                          binary(s, IR_OP_mul, reshape(s, mean, c_shape, 1), scalar(s, 0.1)));
    double unbiased = m > 1 ? 0.1 * (double)m / (double)(m - 1) : 0.1;
    int new_var = binary(s, IR_OP_add, binary(s, IR_OP_mul, rv, scalar(s, 0.9)),
                         binary(s, IR_OP_mul, reshape(s, var, c_shape, 1), scalar(s, unbiased)));
    const int at = s->insert_at;   /* bn, moved past the inserted nodes */
    ir_node *n = N(at);
    n->op = IR_OP_add;
    n->nsrc = 2;
    n->src[0] = scaled, n->src[1] = b;
    ir_add_output(s->g, new_mean, N(rm)->name);
    ir_add_output(s->g, new_var, N(rv)->name);
    s->insert_at = -1;
}

int pass_train_mode(ir_graph *g)
{
    grad_state s = {g, NULL, NULL, g->nnodes, 0, -1};
    int count = 0;
    for (int id = 0; id < g->nnodes; id++) {
        if (g->nodes[id].dead || g->nodes[id].op != IR_OP_batchnorm) continue;
        if (g->nodes[id].attrs.act != IR_NONE || g->nodes[id].attrs.residual != IR_NONE) {
            grad_missing(&s, id);
            return -1;
        }
        const int before = g->nnodes;
        train_batchnorm(&s, id);
        id += g->nnodes - before;   /* past the rewritten node */
        count++;
    }
    return count;
}
