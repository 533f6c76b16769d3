/* cg_kernel_facts.c — what the selection means at one node, for every
 * printer and the plans (cg_target.h): whether an operand is packed, the
 * activation and epilogue the packed kernels apply, whether attention runs
 * the flash kernel, and the runtime's conv parameters.  Pure functions of
 * the node and its operands' recorded layouts: a leaf of codegen/ that the
 * selection (cg_select.c), the plans (cg_plan.c) and the target's facts
 * (cg_c_target.c) read (docs/internals.md#layers). */
#include "cg_target.h"

bool cg_operand_packed(const ir_graph *g, const ir_node *n, int i)
{
    return i < n->nsrc && n->src[i] != IR_NONE && g->nodes[n->src[i]].layout != IR_LAYOUT_PLAIN;
}

int cg_kernel_act(const ir_node *n)
{
    switch (n->attrs.act) {
    case IR_NONE: return AXRT_ACT_NONE;
    case IR_OP_relu: return AXRT_ACT_RELU;
    case IR_OP_relu6: return AXRT_ACT_RELU6;
    case IR_OP_gelu: return AXRT_ACT_GELU;
    case IR_OP_swish: return AXRT_ACT_SWISH;
    case IR_OP_hardswish: return AXRT_ACT_HARDSWISH;
    default: return -1;
    }
}

bool cg_kernel_applies_epilogue(const ir_graph *g, const ir_node *n)
{
    return (n->op == IR_OP_dense || n->op == IR_OP_conv) && !n->quant && cg_operand_packed(g, n, 1) &&
           cg_kernel_act(n) >= 0;
}

bool cg_has_epilogue(const ir_node *n)
{
    return n->attrs.act > 0 && n->attrs.act < IR_OP_COUNT &&
           ir_ops[n->attrs.act].kind == IR_UNARY && n->attrs.act != IR_OP_cast;
}

bool cg_mha_flash(const ir_node *n)
{
    return n->op == IR_OP_mha && n->dtype == AXRT_F32;
}

axrt_conv2d_params cg_conv_params(const ir_graph *g, const ir_node *n)
{
    const ir_node *x = &g->nodes[n->src[0]], *w = &g->nodes[n->src[1]];
    const ir_attrs *a = &n->attrs;
    const axrt_conv2d_params p = {(int)x->shape[0], (int)x->shape[1], (int)x->shape[2], (int)x->shape[3],
                                  (int)n->shape[1], (int)n->shape[2], (int)n->shape[3], (int)w->shape[2],
                                  (int)w->shape[3], a->stride[0], a->stride[1], a->dilation[0], a->dilation[1],
                                  a->pad[0], a->pad[1], a->groups};
    return p;
}
