/* cg_scratch.c — workspace the C backend's kernels need beyond their
 * output (ir.h: ir_scratch_bytes).  Only attention needs any: the runtime's
 * axrt_mha_* keeps the projected q, k, v, one head's scores and the
 * concatenated heads of one batch element there.  The size comes from the
 * runtime itself (axrt_mha_scratch_elems) so the two cannot disagree. */
#include "ir.h"

/* q is [..., lq, d] and k [..., lk, d], as cg_c.c's emit_mha reads them;
 * the kernel reuses the scratch for each batch element, so the batch size
 * does not enter. */
size_t ir_scratch_bytes(const ir_node *n, const ir_graph *g)
{
    if (n->op != IR_OP_mha)
        return 0;
    const ir_node *q = &g->nodes[n->src[0]], *k = &g->nodes[n->src[1]];
    axrt_mha_params p = {0};
    p.d = (int)q->shape[q->rank - 1];
    p.lq = (int)q->shape[q->rank - 2];
    p.lk = (int)k->shape[k->rank - 2];
    p.n = 1;
    p.heads = n->attrs.heads;
    return axrt_mha_scratch_elems(&p) * axrt_dtype_size(n->dtype);
}
