/* ir_fused.c — queries on a fused_elementwise node's operand strides
 * (ir.h attrs.strides) shared by the memory plan and the backends. */
#include "ir.h"

bool ir_fused_in_order(const ir_graph *g, const ir_node *n, int k)
{
    if (n->op != IR_OP_fused_elementwise || k < 0 || k >= n->nsrc || !n->attrs.strides ||
        ir_numel(&g->nodes[n->src[k]]) != ir_numel(n))
        return false;
    int64_t row_major = 1;
    for (int d = n->rank - 1; d >= 0; d--) {
        if (n->shape[d] != 1 && n->attrs.strides[k][d] != row_major)
            return false;
        row_major *= n->shape[d];
    }
    return true;
}
