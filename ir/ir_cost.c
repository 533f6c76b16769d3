/* ir_cost.c — work per node: floating-point operations and bytes moved by
 * one evaluation, for per-layer profiles (GFLOP/s, GB/s) and reports.  One
 * function per ops.def family (cost_<family>), so a new family states its
 * cost.  Counts follow the usual conventions: a multiply-add is 2 FLOPs,
 * a transcendental 1; bytes are every operand read once plus the result
 * written once. */
#include "ir.h"

static const ir_node *src(const ir_graph *g, const ir_node *n, int k)
{
    return k < n->nsrc && n->src[k] != IR_NONE ? &g->nodes[n->src[k]] : NULL;
}

static double numel(const ir_node *n) { return n ? (double)ir_numel(n) : 0; }

static double cost_none(const ir_graph *g, const ir_node *n) { (void)g, (void)n; return 0; }
static double cost_elementwise(const ir_graph *g, const ir_node *n) { (void)g; return numel(n); }
static double cost_reduce(const ir_graph *g, const ir_node *n) { return numel(src(g, n, 0)); }
static double cost_softmax(const ir_graph *g, const ir_node *n) { (void)g; return 4 * numel(n); }
static double cost_norm(const ir_graph *g, const ir_node *n) { (void)g; return 5 * numel(n); }
static double cost_pool(const ir_graph *g, const ir_node *n)
{
    (void)g;
    return numel(n) * n->attrs.kernel[0] * n->attrs.kernel[1];
}
static double cost_globalpool(const ir_graph *g, const ir_node *n) { return numel(src(g, n, 0)); }
static double cost_fused(const ir_graph *g, const ir_node *n) { (void)g; return numel(n) * n->attrs.nsteps; }

/* [.., in] x weight[out, in]: 2 * rows * in * out. */
static double cost_dense(const ir_graph *g, const ir_node *n)
{
    const ir_node *w = src(g, n, 1);
    return w ? 2 * numel(n) * (double)w->shape[1] : 0;
}

/* The result's elements times the shared (reduced) dimension. */
static double cost_matmul(const ir_graph *g, const ir_node *n)
{
    const ir_node *a = src(g, n, 0);
    return a && a->rank > 0 ? 2 * numel(n) * (double)a->shape[a->rank - 1] : 0;
}

/* weight [out, in/groups, kh, kw]: each output element is one dot product. */
static double cost_conv(const ir_graph *g, const ir_node *n)
{
    const ir_node *w = src(g, n, 1);
    return w ? 2 * numel(n) * (double)(w->shape[1] * w->shape[2] * w->shape[3]) : 0;
}

/* weight [in, out/groups, kh, kw]: each input element meets out/groups * kh * kw. */
static double cost_conv_transpose(const ir_graph *g, const ir_node *n)
{
    const ir_node *x = src(g, n, 0), *w = src(g, n, 1);
    return x && w ? 2 * numel(x) * (double)(w->shape[1] * w->shape[2] * w->shape[3]) : 0;
}

/* dW [out, in/groups, kh, kw]: every output pixel (dy's) meets every tap. */
static double cost_conv_grad_weight(const ir_graph *g, const ir_node *n)
{
    const ir_node *dy = src(g, n, 0);
    return dy ? 2 * numel(dy) * (double)(n->shape[1] * n->shape[2] * n->shape[3]) : 0;
}

/* Per step: the input and hidden products of every gate (w_ih [G*H, I],
 * w_hh [G*H, H]); the gate nonlinearities are small beside them. */
static double cost_rnn(const ir_graph *g, const ir_node *n)
{
    const ir_node *wi = src(g, n, 1), *wh = src(g, n, 2);
    if (!wi || !wh || n->rank != 3)
        return 0;
    return 2 * (double)(n->shape[0] * n->shape[1]) * (numel(wi) + numel(wh));
}

/* Projections of q, k, v and the output, scores and their weighted sum. */
static double cost_mha(const ir_graph *g, const ir_node *n)
{
    const ir_node *q = src(g, n, 0), *k = src(g, n, 1);
    if (!q || !k || q->rank < 2)
        return 0;
    const double d = (double)q->shape[q->rank - 1], lq = numel(q) / d, lk = numel(k) / d;
    /* q and out projections over lq rows, k and v over lk rows; scores and
     * the weighted sum: lq x (keys per batch) x d each. */
    return 2 * d * d * (2 * lq + 2 * lk) + 4 * lq * (double)k->shape[k->rank - 2] * d;
}

#define cost_input cost_none
#define cost_param cost_none
#define cost_scalar cost_none
#define cost_cast cost_elementwise
#define cost_unary cost_elementwise
#define cost_binary cost_elementwise
#define cost_argmax cost_reduce
#define cost_reshape cost_none
#define cost_transpose cost_none
#define cost_concat cost_none
#define cost_slice cost_none
#define cost_chunk cost_none
#define cost_result cost_none
#define cost_layernorm cost_norm
#define cost_batchnorm cost_norm
#define cost_groupnorm cost_norm
#define cost_upsample cost_norm
#define cost_embedding cost_none
#define cost_unary_grad cost_elementwise
#define cost_pool_grad cost_elementwise
#define cost_slice_grad cost_none
#define cost_embedding_grad cost_none
#define cost_dropout cost_elementwise

typedef double cost_fn(const ir_graph *g, const ir_node *n);
static cost_fn *const cost_fns[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags) [IR_OP_##name] = cost_##family,
#include "ops.def"
#undef OP
};

double ir_node_flops(const ir_graph *g, const ir_node *n)
{
    double flops = cost_fns[n->op](g, n);
    if (n->attrs.residual != IR_NONE)
        flops += numel(n);
    if (n->attrs.act != IR_NONE)
        flops += numel(n);
    return flops;
}

double ir_node_bytes(const ir_graph *g, const ir_node *n)
{
    double bytes = (double)ir_nbytes(n);
    for (int k = 0; k < n->nsrc; k++)
        if (n->src[k] != IR_NONE)
            bytes += (double)ir_nbytes(&g->nodes[n->src[k]]);
    return bytes;
}
