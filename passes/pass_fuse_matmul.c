/* pass_fuse_matmul.c — absorbs a transposed second operand of matmul into
 * the dense kernel, which reads its weight as [out, in] rows:
 *
 *   matmul(x, transpose(W, (1, 0))) = dense(x, W)   (no bias), W 2-D [n, k]
 *
 * since (x Wᵀ)[..., o] = Σ_j x[..., j] W[o, j] = dense(x, W)[..., o], for x
 * of any rank ≥ 1 (matmul's batch dims of x are dense's rows; a 1-D x is one
 * row, and both give [n]).  The transpose is no longer computed; when W is a
 * parameter the backend packs it at compile time and runs the packed GEMM
 * (codegen: a dense weight param is packed).  A transpose with other users
 * stays for them.  The runtime has no matmul reading a transposed operand
 * (runtime/axrt.h axrt_matmul: batch strides only), so transposes of a 3-D
 * or higher operand, or of the first operand, are not absorbed here. */
#include "passes.h"
#include "ir_use.h"

/* The 2-D W of matmul node n's second operand transpose(W, (1, 0)), else IR_NONE. */
static int transposed_weight(const ir_graph *g, const ir_node *n)
{
    if (n->dead || n->op != IR_OP_matmul || n->attrs.residual != IR_NONE || n->attrs.act != IR_NONE)
        return IR_NONE;
    const ir_node *t = &g->nodes[n->src[1]];
    if (t->op != IR_OP_transpose || t->rank != 2 || t->attrs.perm[0] != 1 || t->attrs.perm[1] != 0)
        return IR_NONE;
    const ir_node *w = &g->nodes[t->src[0]];
    return w->dtype == n->dtype && g->nodes[n->src[0]].dtype == n->dtype ? t->src[0] : IR_NONE;
}

int pass_fuse_matmul_transposed(ir_graph *g)
{
    ir_use u = {0};
    for (int id = 0; id < g->nnodes; id++) {
        const int w = transposed_weight(g, &g->nodes[id]);
        if (w == IR_NONE)
            continue;
        ir_node *n = &g->nodes[id];
        const int transpose = n->src[1];
        n->op = IR_OP_dense;
        n->nsrc = 3;
        n->src[1] = w;
        n->src[2] = IR_NONE;
        ir_use_compute(g, &u);
        if (ir_use_count(&u, transpose) == 0)
            g->nodes[transpose].dead = true;
    }
    ir_use_free(&u);
    return 0;
}
