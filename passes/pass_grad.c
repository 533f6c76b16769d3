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
 * pass_loss appends the loss of docs/training.md between a model output and
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
    /* mixed precision (a Float16 or BFloat16 model): new nodes take this
     * dtype (the node being differentiated's, or Float32 in the loss)
     * instead of the model's; unused (false) in Float32 and Float64 models */
    bool is_mixed;
    axrt_dtype mixed;
} grad_state;

/* The dtype of the nodes being made: the model's, or in a half model the
 * one grad_state.mixed holds. */
static axrt_dtype made_dtype(const grad_state *s)
{
    return s->is_mixed ? s->mixed : s->g->dtype;
}

static bool is_half(axrt_dtype d) { return d == AXRT_F16 || d == AXRT_BF16; }

/* ---- building nodes ---------------------------------------------------- */

/* A new node of the model's dtype with a resolved shape (copied first: it
 * may be another node's, which adding a node can move). */
static int add_node(grad_state *s, ir_op op, const int *src, int nsrc, const int64_t *shape, int rank)
{
    int64_t dims[IR_MAX_RANK];
    if (rank > 0)
        memcpy(dims, shape, sizeof dims[0] * (size_t)rank);
    int id = s->insert_at >= 0 ? ir_insert(s->g, s->insert_at++, op, src, nsrc, s->g->loc)
                               : ir_add(s->g, op, src, nsrc, s->g->loc);
    ir_node *n = &s->g->nodes[id];
    n->dtype = made_dtype(s);
    n->rank = rank;
    if (rank > 0)
        memcpy(n->shape, dims, sizeof n->shape[0] * (size_t)rank);
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
    const axrt_dtype model = made_dtype(s), held = model == AXRT_F32 ? AXRT_F32 : AXRT_F64;
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

/* Element i of constant c (made by constant()) set to v. */
static void set_constant(grad_state *s, int c, int64_t i, double v)
{
    ir_node *p = &s->g->nodes[s->g->nodes[c].op == IR_OP_param ? c : s->g->nodes[c].src[0]];
    if (p->dtype == AXRT_F32) ((float *)p->data)[i] = (float)v;
    else ((double *)p->data)[i] = v;
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

/* x's dims permuted: result dim d is x's dim perm[d] */
static int permute(grad_state *s, int x, const int *perm)
{
    const int rank = s->g->nodes[x].rank;
    int64_t shape[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) shape[d] = s->g->nodes[x].shape[perm[d]];
    int id = add_node(s, IR_OP_transpose, &x, 1, shape, rank);
    memcpy(s->g->nodes[id].attrs.perm, perm, sizeof *perm * (size_t)rank);
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

static void integer_on_path(grad_state *s, int id);

static void accumulate(grad_state *s, int id, int grad)
{
    if (id == IR_NONE || id >= s->norig || !s->needs[id] || grad == IR_NONE)
        return;
    if (!ir_dtype_is_float(s->g->nodes[id].dtype)) {
        integer_on_path(s, id);
        return;
    }
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

/* An integer value that depends on a parameter (argmax's index, as it is or
 * reshaped) lies between the loss and that parameter: no gradient crosses
 * it (torch's argmax has none), so training through it is a located error
 * naming the op that made the integers. */
static void integer_on_path(grad_state *s, int id)
{
    while (ir_ops[N(id)->op].kind == IR_SHAPE && N(id)->nsrc > 0 && SRC(id, 0) != IR_NONE)
        id = SRC(id, 0);
    if (s->errors++) return;
    ax_error(s->g->ctx, N(id)->loc, "cannot train through %s: its result is %s indices, which carry "
             "no gradient", ir_describe_ctor(s->g, N(id)->op), ir_dtype_name(N(id)->dtype));
}

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

/* x, or its adjoint dx2 (shaped like x2) brought back to x's shape */
static int unpromote(grad_state *s, int dx2, int x2, int x)
{
    int d = unbroadcast(s, dx2, x2);
    return x2 == x ? d : reshape_like(s, d, x);
}

/* y = a @ b, batch dims broadcast: da = dy @ b^T, db = a^T @ dy.  A 1-D
 * operand is promoted as torch.matmul does ([k] -> [1, k] on the left,
 * [k, 1] on the right) and dy gets the dimension the promotion removed. */
static void grad_matmul(grad_state *s, int id)
{
    int a = SRC(id, 0), b = SRC(id, 1), dy = s->adj[id];
    if (!plain(s, id)) return;
    int a2 = a, b2 = b;
    int64_t dy_shape[IR_MAX_RANK];
    int dy_rank = N(dy)->rank;
    memcpy(dy_shape, N(dy)->shape, sizeof dy_shape);
    if (N(b)->rank == 1) {
        b2 = reshape(s, b, (int64_t[]){N(b)->shape[0], 1}, 2);
        dy_shape[dy_rank++] = 1;
    }
    if (N(a)->rank == 1) {
        a2 = reshape(s, a, (int64_t[]){1, N(a)->shape[0]}, 2);
        dy_shape[dy_rank] = dy_rank ? dy_shape[dy_rank - 1] : 1;
        if (dy_rank) dy_shape[dy_rank - 1] = 1;
        dy_rank++;
    }
    int dy2 = dy_rank == N(dy)->rank ? dy : reshape(s, dy, dy_shape, dy_rank);
    if (needs(s, a)) accumulate(s, a, unpromote(s, matmul(s, dy2, swap_last(s, b2)), a2, a));
    if (needs(s, b)) accumulate(s, b, unpromote(s, matmul(s, swap_last(s, a2), dy2), b2, b));
}

/* y = W[idx]: dW's rows idx[i] += dy's rows (embedding_grad: only the rows
 * the batch names are non-zero, no [vocab, vocab] one-hot) */
static void grad_embedding(grad_state *s, int id)
{
    int idx = SRC(id, 0), w = SRC(id, 1);
    if (!needs(s, w)) return;
    const int64_t dim = N(w)->shape[1], rows = ir_numel(N(idx));
    int64_t dy2_shape[2] = {rows, dim};
    int dy2 = N(s->adj[id])->rank == 2 ? s->adj[id] : reshape(s, s->adj[id], dy2_shape, 2);
    int src[2] = {idx, dy2};
    accumulate(s, w, add_node(s, IR_OP_embedding_grad, src, 2, N(w)->shape, 2));
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

/* A node of op over src with node `like_attrs`'s attributes (a conv's or a
 * pool's window, a slice's index) and the given shape. */
static int with_attrs(grad_state *s, ir_op op, const int *src, int nsrc, int like_attrs, const int64_t *shape,
                      int rank)
{
    int id = add_node(s, op, src, nsrc, shape, rank);
    N(id)->attrs = N(like_attrs)->attrs;
    N(id)->attrs.act = IR_NONE, N(id)->attrs.residual = IR_NONE;
    return id;
}

/* dy [.., C] summed over every dim but the last, shaped as the bias b [C]. */
static int bias_grad(grad_state *s, int dy, int b)
{
    const int64_t c = N(dy)->shape[N(dy)->rank - 1];
    int64_t rows_shape[2] = {ir_numel(N(dy)) / c, c};
    int rows = N(dy)->rank == 2 ? dy : reshape(s, dy, rows_shape, 2);
    return reshape_like(s, reduce(s, IR_OP_sum, rows, 0), b);
}

/* Conv (NHWC, weight [O, C/groups, kh, kw], any stride, padding, dilation,
 * groups): dx is the transposed conv of dy through the same weight (its
 * layout is ConvTranspose2d's [in, out/groups, kh, kw] with in = O), its
 * output sized as x; dW is conv_grad_weight; db sums dy. */
static void grad_conv(grad_state *s, int id)
{
    if (!plain(s, id)) return;
    int x = SRC(id, 0), w = SRC(id, 1), b = N(id)->nsrc > 2 ? SRC(id, 2) : IR_NONE, dy = s->adj[id];
    if (needs(s, x)) {
        int src[3] = {dy, w, IR_NONE};
        int t = with_attrs(s, IR_OP_conv_transpose, src, 3, id, N(x)->shape, N(x)->rank);
        ir_attrs *a = &N(t)->attrs;
        for (int k = 0; k < 2; k++)   /* what makes ConvTranspose2d's size x's (for messages and dumps) */
            a->out_pad[k] = (int)(N(x)->shape[1 + k] - ((N(dy)->shape[1 + k] - 1) * a->stride[k] - 2 * a->pad[k] +
                                                        a->dilation[k] * (N(w)->shape[2 + k] - 1) + 1));
        accumulate(s, x, t);
    }
    if (needs(s, w)) {
        int src[2] = {dy, x};
        accumulate(s, w, with_attrs(s, IR_OP_conv_grad_weight, src, 2, id, N(w)->shape, N(w)->rank));
    }
    if (needs(s, b)) accumulate(s, b, bias_grad(s, dy, b));
}

/* ConvTranspose2d (weight [in, out/groups, kh, kw]), the adjoint of a conv:
 * dx is the conv of dy through the same weight and window (sized as x), dW is
 * conv_grad_weight with x in dy's place and dy in x's (its layout is then the
 * transposed conv's own), db sums dy. */
static void grad_conv_transpose(grad_state *s, int id)
{
    if (!plain(s, id)) return;
    int x = SRC(id, 0), w = SRC(id, 1), b = N(id)->nsrc > 2 ? SRC(id, 2) : IR_NONE, dy = s->adj[id];
    if (needs(s, x)) {
        int src[3] = {dy, w, IR_NONE};
        int t = with_attrs(s, IR_OP_conv, src, 3, id, N(x)->shape, N(x)->rank);
        N(t)->attrs.kernel[0] = (int)N(w)->shape[2], N(t)->attrs.kernel[1] = (int)N(w)->shape[3];
        accumulate(s, x, t);
    }
    if (needs(s, w)) {
        int src[2] = {x, dy};
        accumulate(s, w, with_attrs(s, IR_OP_conv_grad_weight, src, 2, id, N(w)->shape, N(w)->rank));
    }
    if (needs(s, b)) accumulate(s, b, bias_grad(s, dy, b));
}

/* MaxPool and MeanPool, any window, stride, padding, ceil mode and divisor:
 * pool_grad routes each window's dy as the forward read it. */
static void grad_pool(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    int src[2] = {s->adj[id], x};
    int t = with_attrs(s, IR_OP_pool_grad, src, 2, id, N(x)->shape, N(x)->rank);
    N(t)->attrs.of_op = (int)N(id)->op;
    accumulate(s, x, t);
}
#define grad_maxpool grad_pool
#define grad_meanpool grad_pool

/* The slice of x's dims [begin, begin + size) along axis, whole elsewhere. */
static int slice_along(grad_state *s, int x, int axis, int64_t begin, int64_t size)
{
    int64_t shape[IR_MAX_RANK];
    memcpy(shape, N(x)->shape, sizeof shape);
    shape[axis] = size;
    int id = add_node(s, IR_OP_slice, &x, 1, shape, N(x)->rank);
    ir_attrs *a = &N(id)->attrs;
    for (int d = 0; d < N(x)->rank; d++)
        a->begin[d] = d == axis ? begin : 0, a->end[d] = d == axis ? begin + size : N(x)->shape[d], a->step[d] = 1;
    a->nslice = N(x)->rank;
    return id;
}

/* concat: each operand's part of dy */
static void grad_concat(grad_state *s, int id)
{
    const int axis = N(id)->attrs.axis;
    int64_t at = 0;
    for (int k = 0; k < N(id)->nsrc; k++) {
        int x = SRC(id, k);
        if (needs(s, x)) accumulate(s, x, slice_along(s, s->adj[id], axis, at, N(x)->shape[axis]));
        at += N(x)->shape[axis];
    }
}

/* slice (any begin, end, step per dim): dy put back where it came from */
static void grad_slice(grad_state *s, int id)
{
    int x = SRC(id, 0), dy = s->adj[id];
    if (needs(s, x)) accumulate(s, x, with_attrs(s, IR_OP_slice_grad, &dy, 1, id, N(x)->shape, N(x)->rank));
}

/* A chunk result is a slice along the producer's axis; the producer passes
 * the sum of its results' adjoints (its own, of its operand's shape) on. */
static void grad_result(grad_state *s, int id)
{
    int p = SRC(id, 0), dy = s->adj[id];
    if (!needs(s, p)) return;
    int64_t start, size;
    ir_result_extent(s->g, N(id), &start, &size);
    int t = add_node(s, IR_OP_slice_grad, &dy, 1, N(p)->shape, N(p)->rank);
    ir_attrs *a = &N(t)->attrs;
    for (int d = 0; d < N(p)->rank; d++) a->begin[d] = d == N(p)->attrs.axis ? start : 0, a->step[d] = 1;
    for (int d = 0; d < N(p)->rank; d++) a->end[d] = a->begin[d] + N(id)->shape[d];
    a->nslice = N(p)->rank;
    accumulate(s, p, t);
}

static void grad_chunk(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (needs(s, x)) accumulate(s, x, s->adj[id]);
}

/* Dropout's mask is a pure function of its counter (ops.def): the same op on
 * dy applies the forward's mask and scale. */
static void grad_dropout(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    int src[2] = {s->adj[id], SRC(id, 1)};
    accumulate(s, x, with_attrs(s, IR_OP_dropout, src, 2, id, N(x)->shape, N(x)->rank));
}

/* maximum/minimum over an axis (dim kept): dy shared evenly among the
 * elements equal to the result (torch.amax/amin), found as 1 + sign(x - y)
 * (maximum) or 1 - sign(x - y) (minimum), which is 1 there and 0 elsewhere. */
static void grad_extremum(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    int diff = binary(s, IR_OP_sub, x, id);
    int sg = like(s, IR_OP_sign, diff, IR_NONE, diff);
    int hit = binary(s, N(id)->op == IR_OP_maximum ? IR_OP_add : IR_OP_sub, scalar(s, 1), sg);
    int count = reduce(s, IR_OP_sum, hit, N(id)->attrs.axis);
    accumulate(s, x, binary(s, IR_OP_mul, hit, binary(s, IR_OP_div, s->adj[id], count)));
}
#define grad_maximum grad_extremum
#define grad_minimum grad_extremum

/* The binary ops that pick one operand per element: max(a, b) / min(a, b)
 * (torch.maximum/minimum) and clamp_min(x, lo) / clamp_max(x, hi) (torch.clamp
 * is the two in turn).  dy goes to the winner: b where sign(b - a) (min,
 * clamp_max: sign(a - b)) is 1, a where it is -1.  On a tie (0) clamp gives a
 * all of it (as torch: x within its bound, the bound included) and max/min
 * half to each (as torch.maximum).  b's share is relu(sign) for clamp and
 * 0.5 + 0.5 sign for max/min.  (A NaN operand's gradient is not considered.) */
static void grad_pick(grad_state *s, int id)
{
    const int op = N(id)->op;
    const bool larger = op == IR_OP_max || op == IR_OP_clamp_min;
    int a = SRC(id, 0), b = SRC(id, 1), dy = s->adj[id];
    int lead = larger ? binary(s, IR_OP_sub, b, a) : binary(s, IR_OP_sub, a, b);
    int sign = like(s, IR_OP_sign, lead, IR_NONE, lead);
    int b_wins = op == IR_OP_max || op == IR_OP_min
                     ? binary(s, IR_OP_add, scalar(s, 0.5), binary(s, IR_OP_mul, scalar(s, 0.5), sign))
                     : like(s, IR_OP_relu, sign, IR_NONE, lead);
    if (needs(s, a))
        accumulate(s, a, unbroadcast(s, binary(s, IR_OP_mul, dy, binary(s, IR_OP_sub, scalar(s, 1), b_wins)), a));
    if (needs(s, b))
        accumulate(s, b, unbroadcast(s, binary(s, IR_OP_mul, dy, b_wins), b));
}
#define grad_clamp_min grad_pick
#define grad_clamp_max grad_pick
#define grad_max grad_pick
#define grad_min grad_pick

/* y = a .^ b: da = dy b a^(b - 1), db = dy y log(a) (NaN for a < 0, as torch) */
static void grad_pow(grad_state *s, int id)
{
    int a = SRC(id, 0), b = SRC(id, 1), dy = s->adj[id];
    if (needs(s, a)) {
        int lower = binary(s, IR_OP_pow, a, binary(s, IR_OP_sub, b, scalar(s, 1)));
        accumulate(s, a, unbroadcast(s, binary(s, IR_OP_mul, binary(s, IR_OP_mul, dy, b), lower), a));
    }
    if (needs(s, b)) {
        int log_a = like(s, IR_OP_log, a, IR_NONE, a);
        accumulate(s, b, unbroadcast(s, binary(s, IR_OP_mul, binary(s, IR_OP_mul, dy, id), log_a), b));
    }
}

static int linear(grad_state *s, int x, int w, int b);

/* One axis of a bilinear Upsample (in -> in * scale) as a dense weight
 * [in, in * scale]: column o holds output o's weights on the inputs
 * (ir_upsample_source, either align_corners), so a dense through it sums an
 * output row's dy back onto the inputs it was read from. */
static int upsample_matrix(grad_state *s, int64_t in, int scale, int mode)
{
    const int64_t out = in * scale;
    int64_t shape[2] = {in, out};
    double *m = calloc((size_t)(in * out), sizeof *m);
    if (!m) ax_out_of_memory(0);
    for (int64_t o = 0; o < out; o++) {
        int64_t i0, i1;
        double f;
        ir_upsample_source(o, in, scale, mode, &i0, &i1, &f);
        m[i0 * out + o] += 1 - f;
        m[i1 * out + o] += f;
    }
    int c = constant(s, shape, 2, 0, false);
    for (int64_t i = 0; i < in * out; i++) set_constant(s, c, i, m[i]);
    free(m);
    return c;
}

/* Bilinear Upsample is y = A_h x A_w^T per image and channel (A an axis's
 * interpolation matrix), so dx = A_h^T dy A_w: dy [N, oh, ow, C] through a
 * dense on its columns, then one on its rows, transposed back to x's layout. */
static void grad_upsample_bilinear(grad_state *s, int id, int x)
{
    static const int cols_last[4] = {0, 1, 3, 2}, rows_last[4] = {0, 3, 2, 1}, back[4] = {0, 3, 1, 2};
    const int mode = N(id)->attrs.mode;
    int aw = upsample_matrix(s, N(x)->shape[2], N(id)->attrs.scale[1], mode);
    int ah = upsample_matrix(s, N(x)->shape[1], N(id)->attrs.scale[0], mode);
    int cols = linear(s, permute(s, s->adj[id], cols_last), aw, IR_NONE);   /* [N, oh, C, w] */
    int rows = linear(s, permute(s, cols, rows_last), ah, IR_NONE);         /* [N, w, C, h] */
    accumulate(s, x, permute(s, rows, back));
}

/* y = prod(x) along the axis (dim kept): dx_i = dy times the product of the
 * others, zeros included as torch: with z = [x == 0] (1 - sign|x|) and q the
 * product of x + z (of the non-zero elements), dx = dy q ((1 - z) [no zero in
 * the row] / (x + z) + z [exactly one zero]); two zeros or more give 0. */
static void grad_prod(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    const int axis = N(id)->attrs.axis;
    int z = binary(s, IR_OP_sub, scalar(s, 1), like(s, IR_OP_sign, like(s, IR_OP_abs, x, IR_NONE, x), IR_NONE, x));
    int safe = binary(s, IR_OP_add, x, z);
    int zeros = reduce(s, IR_OP_sum, z, axis);
    int none = binary(s, IR_OP_sub, scalar(s, 1), like(s, IR_OP_sign, zeros, IR_NONE, zeros));
    int off_one = like(s, IR_OP_abs, binary(s, IR_OP_sub, zeros, scalar(s, 1)), IR_NONE, zeros);
    int one = like(s, IR_OP_relu, binary(s, IR_OP_sub, scalar(s, 1), off_one), IR_NONE, zeros);
    int kept = binary(s, IR_OP_mul, binary(s, IR_OP_div, binary(s, IR_OP_sub, scalar(s, 1), z), safe), none);
    int others = binary(s, IR_OP_add, kept, binary(s, IR_OP_mul, z, one));
    int scale = binary(s, IR_OP_mul, s->adj[id], reduce(s, IR_OP_prod, safe, axis));
    accumulate(s, x, binary(s, IR_OP_mul, scale, others));
}

/* y = fmod(a, b) (C's, torch.fmod): da = dy, db = -dy trunc(a / b), the
 * quotient taken as round((a - y) / b), a - y being a multiple of b. */
static void grad_fmod(grad_state *s, int id)
{
    int a = SRC(id, 0), b = SRC(id, 1), dy = s->adj[id];
    if (needs(s, a)) accumulate(s, a, unbroadcast(s, dy, a));
    if (!needs(s, b)) return;
    int q = binary(s, IR_OP_div, binary(s, IR_OP_sub, a, id), b);
    int t = binary(s, IR_OP_mul, dy, like(s, IR_OP_round, q, IR_NONE, q));
    accumulate(s, b, unbroadcast(s, like(s, IR_OP_neg, t, IR_NONE, t), b));
}

/* Upsample, nearest: each input pixel's dy is the sum over the block it was
 * copied to, a mean pool of dy (window = stride = scale) times the block's
 * size; bilinear: grad_upsample_bilinear. */
static void grad_upsample(grad_state *s, int id)
{
    int x = SRC(id, 0);
    if (!needs(s, x)) return;
    if (N(id)->attrs.mode != IR_UPSAMPLE_NEAREST) { grad_upsample_bilinear(s, id, x); return; }
    const int sh = N(id)->attrs.scale[0], sw = N(id)->attrs.scale[1];
    int dy = s->adj[id];
    int pool = add_node(s, IR_OP_meanpool, &dy, 1, N(x)->shape, N(x)->rank);
    ir_attrs *a = &N(pool)->attrs;
    a->kernel[0] = a->stride[0] = sh, a->kernel[1] = a->stride[1] = sw;
    a->dilation[0] = a->dilation[1] = 1;
    memset(a->pad, 0, sizeof a->pad);
    accumulate(s, x, binary(s, IR_OP_mul, pool, scalar(s, (double)(sh * sw))));
}

/* Ops without a rule yet, each named (a new ops.def row must be added to
 * one list or the other, or the table below does not compile). */
#define grad_input grad_none
#define grad_param grad_none
#define grad_scalar grad_none
#define grad_groupnorm grad_missing   /* pass_train_mode rewrites it into ops */
#define grad_batchnorm grad_missing   /* pass_train_mode rewrites it into ops */
#define grad_mha grad_missing         /* likewise */
#define grad_gru grad_missing        /* pass_train_mode unrolls it into ops */
#define grad_lstm grad_missing       /* likewise */
#define grad_argmax grad_missing     /* Int64 indices: integer_on_path stops before it */
#define grad_fused_elementwise grad_missing
#define grad_unary_grad grad_missing
#define grad_conv_grad_weight grad_missing
#define grad_pool_grad grad_missing
#define grad_slice_grad grad_missing
#define grad_embedding_grad grad_missing

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
    grad_state s = {g, NULL, NULL, g->nnodes, 0, -1, false, AXRT_F32};
    s.adj = malloc(sizeof *s.adj * (size_t)s.norig);
    s.needs = calloc((size_t)s.norig, sizeof *s.needs);
    if (!s.adj || !s.needs) ax_out_of_memory(0);
    for (int i = 0; i < s.norig; i++) s.adj[i] = IR_NONE;
    mark_needs(&s, wrt, nwrt);
    int64_t shape[IR_MAX_RANK];
    memcpy(shape, g->nodes[loss].shape, sizeof shape);
    const bool half = is_half(g->dtype);
    s.is_mixed = half, s.mixed = g->nodes[loss].dtype;
    s.adj[loss] = constant(&s, shape, g->nodes[loss].rank, 1, false);
    g->nodes[g->nodes[s.adj[loss]].op == IR_OP_param ? s.adj[loss] : g->nodes[s.adj[loss]].src[0]].name =
        pass_loss_seed_name;
    for (int id = loss; id >= 0 && !s.errors; id--) {
        if (g->nodes[id].dead || s.adj[id] == IR_NONE || !s.needs[id]) continue;
        if (half) s.mixed = ir_dtype_is_float(g->nodes[id].dtype) ? g->nodes[id].dtype : g->dtype;
        grad_rules[g->nodes[id].op](&s, id);
    }
    for (int i = 0; i < nwrt; i++) grads[i] = s.adj[wrt[i]];
    free(s.adj);
    free(s.needs);
    return s.errors;
}

/* ---- losses ------------------------------------------------------------ */

const char *const pass_loss_names[PASS_LOSS_COUNT] = {"mse", "cross_entropy", "bce_with_logits"};
const char *const pass_loss_seed_name = "<loss seed>";

/* The mean over every element of x, as a [1] node. */
static int mean_all(grad_state *s, int x)
{
    int64_t flat[2] = {1, ir_numel(N(x))}, one[1] = {1};
    int m = reduce(s, IR_OP_mean, reshape(s, x, flat, 2), 1);
    return reshape(s, m, one, 1);
}

int pass_loss(ir_graph *g, pass_loss_kind kind, int y, int target)
{
    grad_state s = {g, NULL, NULL, g->nnodes, 0, -1, false, AXRT_F32};
    grad_state *sp = &s;
    s.is_mixed = is_half(g->dtype), s.mixed = g->nodes[y].dtype;   /* the loss in the output's Float32, as autocast */
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

/* [B, L, H*hd] -> [B, H, L, hd] (or [B, H, hd, L] with keys_last) */
static int split_heads(grad_state *s, int x, int64_t heads, bool keys_last)
{
    const int64_t b = N(x)->shape[0], l = N(x)->shape[1], hd = N(x)->shape[2] / heads;
    int64_t four[4] = {b, l, heads, hd}, shape[4] = {b, heads, keys_last ? hd : l, keys_last ? l : hd};
    int r = reshape(s, x, four, 4);
    int t = add_node(s, IR_OP_transpose, &r, 1, shape, 4);
    int perm[4] = {0, 2, keys_last ? 3 : 1, keys_last ? 1 : 3};
    memcpy(N(t)->attrs.perm, perm, sizeof perm);
    N(t)->attrs.nperm = 4;
    return t;
}

/* Rows [part d, (part + 1) d) of w (in_proj's q, k or v block), or IR_NONE. */
static int proj_part(grad_state *s, int w, int part, int64_t d)
{
    return w == IR_NONE ? IR_NONE : slice_along(s, w, 0, part * d, d);
}

static int linear(grad_state *s, int x, int w, int b)
{
    int src[3] = {x, w, b};
    int64_t shape[IR_MAX_RANK];
    memcpy(shape, N(x)->shape, sizeof shape);
    shape[N(x)->rank - 1] = N(w)->shape[0];
    return add_node(s, IR_OP_dense, src, 3, shape, N(x)->rank);
}

/* A derived [lq, lk] constant: 0 where query i sees key j (j <= i), -inf after. */
static int causal_mask(grad_state *s, int64_t lq, int64_t lk)
{
    int64_t shape[2] = {lq, lk};
    int c = constant(s, shape, 2, 0, false);
    for (int64_t i = 0; i < lq * lk; i++)
        if (i % lk > i / lk) set_constant(s, c, i, -INFINITY);
    return c;
}

/* A key padding mask [N, S] as scores' additive bias [N, 1, 1, S]:
 * log(sign|mask|), 0 for a token and -inf for padding (0), as eval_mha's
 * -inf scores; a query with every key masked then gets NaN, as there. */
static int key_bias(grad_state *s, int mask)
{
    int x = mask;
    if (N(mask)->dtype != s->g->dtype) x = like(s, IR_OP_cast, mask, IR_NONE, mask);
    int keep = like(s, IR_OP_sign, like(s, IR_OP_abs, x, IR_NONE, x), IR_NONE, x);
    int64_t shape[4] = {N(mask)->shape[0], 1, 1, N(mask)->shape[1]};
    return reshape(s, like(s, IR_OP_log, keep, IR_NONE, keep), shape, 4);
}

/* MultiheadAttention node m written out in dense, matmul, softmax, reshape
 * and transpose before it (eval_mha's steps; a key padding mask through
 * key_bias), m itself becoming the output projection, so that their rules
 * give its gradient. */
static void train_mha(grad_state *s, int m)
{
    const int mask = N(m)->nsrc > 7 ? SRC(m, 7) : IR_NONE;
    s->insert_at = m;
    const int q = SRC(m, 0), k = SRC(m, 1), v = SRC(m, 2), in_w = SRC(m, 3), in_b = SRC(m, 4);
    const int64_t d = N(q)->shape[2], heads = N(m)->attrs.heads, lq = N(q)->shape[1], lk = N(k)->shape[1];
    const bool causal = N(m)->attrs.causal;
    int qh = split_heads(s, linear(s, q, proj_part(s, in_w, 0, d), proj_part(s, in_b, 0, d)), heads, false);
    int kt = split_heads(s, linear(s, k, proj_part(s, in_w, 1, d), proj_part(s, in_b, 1, d)), heads, true);
    int vh = split_heads(s, linear(s, v, proj_part(s, in_w, 2, d), proj_part(s, in_b, 2, d)), heads, false);
    int scores = binary(s, IR_OP_mul, matmul(s, qh, kt), scalar(s, 1 / sqrt((double)(d / heads))));
    if (causal) scores = binary(s, IR_OP_add, scores, causal_mask(s, lq, lk));
    if (mask != IR_NONE) scores = binary(s, IR_OP_add, scores, key_bias(s, mask));
    int p = like(s, IR_OP_softmax, scores, IR_NONE, scores);
    N(p)->attrs.axis = 3;
    int ctx = matmul(s, p, vh);   /* [B, H, lq, hd] */
    int64_t bl_shape[4] = {N(q)->shape[0], lq, heads, d / heads}, flat[3] = {N(q)->shape[0], lq, d};
    int t = add_node(s, IR_OP_transpose, &ctx, 1, bl_shape, 4);
    int perm[4] = {0, 2, 1, 3};
    memcpy(N(t)->attrs.perm, perm, sizeof perm);
    N(t)->attrs.nperm = 4;
    int joined = reshape(s, t, flat, 3);
    const int at = s->insert_at;
    ir_node *n = N(at);
    const int out_w = n->src[5], out_b = n->src[6];
    n->op = IR_OP_dense;
    n->nsrc = 3;
    n->src[0] = joined, n->src[1] = out_w, n->src[2] = out_b;
    s->insert_at = -1;
}

/* [a, b, c, d] transposed to [a, c, b, d] */
static int swap_middle(grad_state *s, int x)
{
    static const int perm[4] = {0, 2, 1, 3};
    return permute(s, x, perm);
}

/* GroupNorm node gn ([N, ..., C], groups G) written out before it: x as
 * [N, G, S * C/G] rows normalised with their biased variance, back to x's
 * layout, then gn itself becomes the affine step (weight, bias optional). */
static void train_groupnorm(grad_state *s, int gn)
{
    s->insert_at = gn;
    const int x = SRC(gn, 0), w = SRC(gn, 1), b = SRC(gn, 2);
    const int64_t n = N(x)->shape[0], c = N(x)->shape[N(x)->rank - 1], groups = N(gn)->attrs.groups;
    const int64_t sp = ir_numel(N(x)) / (n * c), cg = c / groups;
    const double eps = N(gn)->attrs.eps;   /* gn moves as nodes are inserted before it */
    int64_t four[4] = {n, sp, groups, cg}, rows[3] = {n, groups, sp * cg}, back[4] = {n, groups, sp, cg};
    int r = reshape(s, swap_middle(s, reshape(s, x, four, 4)), rows, 3);
    int xc = binary(s, IR_OP_sub, r, reduce(s, IR_OP_mean, r, 2));
    int var = reduce(s, IR_OP_mean, binary(s, IR_OP_mul, xc, xc), 2);
    int sd = like(s, IR_OP_sqrt, binary(s, IR_OP_add, var, scalar(s, eps)), IR_NONE, var);
    int xhat = binary(s, IR_OP_mul, xc, like(s, IR_OP_reciprocal, sd, IR_NONE, sd));
    int normed = reshape_like(s, swap_middle(s, reshape(s, xhat, back, 4)), x);
    int scaled = w != IR_NONE && b != IR_NONE ? binary(s, IR_OP_mul, normed, w) : normed;
    const int other = b == IR_NONE ? (w == IR_NONE ? scalar(s, 1) : w) : b;
    ir_node *node = N(s->insert_at);
    node->op = b == IR_NONE ? IR_OP_mul : IR_OP_add;
    node->nsrc = 2;
    node->src[0] = scaled, node->src[1] = other;
    s->insert_at = -1;
}

/* n nodes joined along axis by one concat (n itself when alone). */
static int concat_many(grad_state *s, int *items, int n, int axis)
{
    if (n == 1)
        return items[0];
    int64_t shape[IR_MAX_RANK];
    memcpy(shape, N(items[0])->shape, sizeof shape);
    for (int k = 1; k < n; k++) shape[axis] += N(items[k])->shape[axis];
    int c = add_node(s, IR_OP_concat, items, n, shape, N(items[0])->rank);
    N(c)->attrs.axis = axis;
    return c;
}

/* Columns [part h, (part + 1) h) of a [N, gates h] gate block. */
static int gate(grad_state *s, int block, int part, int64_t h)
{
    return slice_along(s, block, 1, part * h, h);
}

static int sigmoid_of(grad_state *s, int x) { return like(s, IR_OP_sigmoid, x, IR_NONE, x); }
static int tanh_of(grad_state *s, int x) { return like(s, IR_OP_tanh, x, IR_NONE, x); }

/* What a GRU/LSTM step reads of its node (read before nodes are inserted
 * before it, which moves it). */
typedef struct rnn_cell {
    int w_hh, b_hh;
    int64_t hid;
    bool linear_before_reset;
} rnn_cell;

/* One torch.nn.GRU step (gates r, z, n; eval_rnn's gru_step) on the input's
 * gate row gi and the state h: the new h. */
static int gru_cell(grad_state *s, const rnn_cell *rc, int gi, int h)
{
    const int w_hh = rc->w_hh, b_hh = rc->b_hh;
    const int64_t hid = rc->hid;
    int gh = linear(s, h, w_hh, b_hh);
    int r = sigmoid_of(s, binary(s, IR_OP_add, gate(s, gi, 0, hid), gate(s, gh, 0, hid)));
    int z = sigmoid_of(s, binary(s, IR_OP_add, gate(s, gi, 1, hid), gate(s, gh, 1, hid)));
    int hn = rc->linear_before_reset
             ? binary(s, IR_OP_mul, r, gate(s, gh, 2, hid))
             : linear(s, binary(s, IR_OP_mul, r, h), proj_part(s, w_hh, 2, hid), proj_part(s, b_hh, 2, hid));
    int n = tanh_of(s, binary(s, IR_OP_add, gate(s, gi, 2, hid), hn));
    return binary(s, IR_OP_add, n, binary(s, IR_OP_mul, z, binary(s, IR_OP_sub, h, n)));   /* (1-z) n + z h */
}

/* One torch.nn.LSTM step (gates i, f, g, o): c and h updated. */
static void lstm_cell(grad_state *s, const rnn_cell *rc, int gi, int *h, int *c)
{
    const int64_t hid = rc->hid;
    int gh = linear(s, *h, rc->w_hh, rc->b_hh), pre[4];
    for (int k = 0; k < 4; k++) pre[k] = binary(s, IR_OP_add, gate(s, gi, k, hid), gate(s, gh, k, hid));
    int i = sigmoid_of(s, pre[0]), f = sigmoid_of(s, pre[1]), g = tanh_of(s, pre[2]), o = sigmoid_of(s, pre[3]);
    *c = binary(s, IR_OP_add, binary(s, IR_OP_mul, f, *c), binary(s, IR_OP_mul, i, g));
    *h = binary(s, IR_OP_mul, o, tanh_of(s, *c));
}

/* GRU or LSTM node rnn written out step by step before it (dense, slice,
 * sigmoid, tanh, mul, add: eval_rnn's recurrence unrolled over the sequence,
 * in reverse for attrs.reverse), each step's h (or c, attrs.cell) joined by
 * concat; rnn itself becomes a reshape of that, so that those ops' rules give
 * the gradient through time (backpropagation through time). */
static void train_rnn(grad_state *s, int rnn)
{
    s->insert_at = rnn;
    const bool lstm = N(rnn)->op == IR_OP_lstm, reverse = N(rnn)->attrs.reverse, cell = N(rnn)->attrs.cell;
    const int x = SRC(rnn, 0), h0 = N(rnn)->nsrc > 5 ? SRC(rnn, 5) : IR_NONE;
    const int c0 = lstm && N(rnn)->nsrc > 6 ? SRC(rnn, 6) : IR_NONE;
    const int64_t batch = N(x)->shape[0], len = N(x)->shape[1], hid = N(rnn)->shape[2], gates = (lstm ? 4 : 3) * hid;
    const int w_ih = SRC(rnn, 1), b_ih = N(rnn)->nsrc > 3 ? SRC(rnn, 3) : IR_NONE;
    const rnn_cell rc = {SRC(rnn, 2), N(rnn)->nsrc > 4 ? SRC(rnn, 4) : IR_NONE, hid, N(rnn)->attrs.linear_before_reset};
    int64_t state_shape[2] = {batch, hid}, row_shape[2] = {batch, gates}, out_shape[3] = {batch, 1, hid};
    int all = linear(s, x, w_ih, b_ih);   /* every step's input projection */
    int h = h0 != IR_NONE ? h0 : constant(s, state_shape, 2, 0, false);
    int c = c0 != IR_NONE ? c0 : lstm ? constant(s, state_shape, 2, 0, false) : IR_NONE;
    int *outs = malloc(sizeof *outs * (size_t)len);
    if (!outs) ax_out_of_memory(0);
    for (int64_t k = 0; k < len; k++) {
        const int64_t t = reverse ? len - 1 - k : k;
        int gi = reshape(s, slice_along(s, all, 1, t, 1), row_shape, 2);
        if (lstm) lstm_cell(s, &rc, gi, &h, &c);
        else h = gru_cell(s, &rc, gi, h);
        outs[t] = reshape(s, cell ? c : h, out_shape, 3);
    }
    int joined = concat_many(s, outs, (int)len, 1);
    free(outs);
    ir_node *n = N(s->insert_at);
    n->op = IR_OP_reshape;
    n->nsrc = 1;
    n->src[0] = joined;
    memcpy(n->attrs.newshape, n->shape, sizeof n->attrs.newshape);
    n->attrs.nnewshape = n->rank;
    s->insert_at = -1;
}

/* The name of the dropout counter parameter (pass_train_mode). */
const char *const pass_dropout_counter_name = "<dropout counter>";

/* Every Dropout reads one Int64 [2] counter (seed, step: 0, 0 here; the
 * trainer sets them), made before the first, and gets its own stream. */
static void train_dropout(grad_state *s, int id, int *counter, int stream)
{
    if (*counter == IR_NONE) {
        s->insert_at = id;
        int64_t two[1] = {2};
        int c = add_node(s, IR_OP_param, NULL, 0, two, 1);
        ir_node *n = N(c);
        n->dtype = AXRT_I64;
        n->derived = true;
        n->name = pass_dropout_counter_name;
        n->role = IR_PARAM_ZEROS;
        n->data = ax_alloc(s->g->ctx->arena, 2 * sizeof(int64_t));
        memset(n->data, 0, 2 * sizeof(int64_t));
        *counter = c;
        id = s->insert_at;
        s->insert_at = -1;
    }
    N(id)->src[1] = *counter;
    N(id)->attrs.index = stream;
}

int pass_unroll_rnn(ir_graph *g)
{
    grad_state s = {g, NULL, NULL, g->nnodes, 0, -1, false, AXRT_F32};
    int count = 0;
    for (int id = 0; id < g->nnodes; id++) {
        if (g->nodes[id].dead || (g->nodes[id].op != IR_OP_gru && g->nodes[id].op != IR_OP_lstm)) continue;
        const int before = g->nnodes;
        train_rnn(&s, id);
        id += g->nnodes - before;   /* past the rewritten node */
        count++;
    }
    return count;
}

int pass_train_mode(ir_graph *g)
{
    pass_unroll_rnn(g);
    grad_state s = {g, NULL, NULL, g->nnodes, 0, -1, false, AXRT_F32};
    int count = 0, counter = IR_NONE, streams = 0;
    for (int id = 0; id < g->nnodes; id++) {
        const int before = g->nnodes;
        if (g->nodes[id].dead) continue;
        if (g->nodes[id].op == IR_OP_mha) train_mha(&s, id);
        if (g->nodes[id].op == IR_OP_dropout) train_dropout(&s, id, &counter, streams++);
        if (g->nodes[id].op == IR_OP_groupnorm) train_groupnorm(&s, id);
        if (g->nodes[id].op != IR_OP_batchnorm) {
            id += g->nnodes - before;
            continue;
        }
        if (g->nodes[id].attrs.act != IR_NONE || g->nodes[id].attrs.residual != IR_NONE) {
            grad_missing(&s, id);
            return -1;
        }
        train_batchnorm(&s, id);
        id += g->nnodes - before;   /* past the rewritten node */
        count++;
    }
    return count;
}
