/* cg_select.c — kernel selection shared by every back end that calls the
 * runtime's CPU kernels (C today, LLVM next): which parameters are stored
 * pre-packed, recorded on the IR (ir_node.layout) before any printing, so
 * that each printer reads one decision and --emit=ir shows it.
 *
 * A float32 parameter whose every use is the weight of a dense, a groups=1
 * or depthwise (groups = channels, one filter each) conv or an attention is
 * embedded in the panel order of axrt.h (packed at compile time by the
 * runtime's own packing functions), and those nodes call the *_packed_f32
 * kernels.  Shared in any other way, it stays as it is.  A grouped conv's
 * weight (cg_grouped_conv) is packed by axrt_pack_conv2d_grouped_f32 for
 * axrt_conv2d_grouped_f32.  What the choice means at one node is
 * cg_kernel_facts.c's; whether a conv runs Winograd, cg_c_target.c's. */
#include "cg_target.h"

#include <string.h>

/* How user consumes its operand i if that operand is packed. */
static ir_layout layout_of_use(const ir_graph *g, const ir_node *user, int i)
{
    if (user->dtype != AXRT_F32)
        return IR_LAYOUT_PLAIN;
    const bool depthwise = user->op == IR_OP_conv && user->attrs.groups > 1 &&
                           user->attrs.groups == user->shape[3] &&
                           g->nodes[user->src[1]].shape[1] == 1;
    if (user->op == IR_OP_dense && i == 1)
        return IR_LAYOUT_DENSE;
    const int wino_m = user->op == IR_OP_conv && i == 1 ? cg_conv_winograd(g, user) : 0;
    if (wino_m)
        return wino_m == 2 ? IR_LAYOUT_WINOGRAD2 : IR_LAYOUT_WINOGRAD;
    if (user->op == IR_OP_conv && i == 1 && user->attrs.groups == 1)
        return IR_LAYOUT_CONV;
    if (depthwise && i == 1)
        return IR_LAYOUT_DEPTHWISE;
    if (i == 1 && cg_grouped_conv(g, user))
        return IR_LAYOUT_GROUPED;
    if (user->op == IR_OP_mha && i == 3)
        return IR_LAYOUT_MHA_IN;
    if (user->op == IR_OP_mha && i == 5)
        return IR_LAYOUT_MHA_OUT;
    return IR_LAYOUT_PLAIN;
}

/* The one layout all uses of each float32 param agree on, written into
 * layout[] (PLAIN for any other use, a graph output or no use): one sweep
 * over the uses. */
static void agreed_layouts(const ir_graph *g, ir_layout *layout)
{
    enum { UNSEEN = IR_LAYOUT_COUNT };
    for (int id = 0; id < g->nnodes; id++)
        layout[id] = (ir_layout)UNSEEN;
    for (int u = 0; u < g->nnodes; u++) {
        const ir_node *user = &g->nodes[u];
        for (int i = 0; i < user->nsrc && !user->dead; i++) {
            const int s = user->src[i];
            if (s == IR_NONE || g->nodes[s].op != IR_OP_param)
                continue;
            const ir_layout use = layout_of_use(g, user, i);
            layout[s] = layout[s] == (ir_layout)UNSEEN || layout[s] == use ? use : IR_LAYOUT_PLAIN;
        }
    }
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (layout[id] == (ir_layout)UNSEEN || n->op != IR_OP_param || n->dtype != AXRT_F32 ||
            ir_is_output(g, id))
            layout[id] = IR_LAYOUT_PLAIN;
    }
}

/* ---- grouped convs (runtime/axrt_gconv.inc) ---- */

bool cg_grouped_conv(const ir_graph *g, const ir_node *n)
{
    if (n->op != IR_OP_conv || n->dtype != AXRT_F32 || n->attrs.groups <= 1 || n->rank != 4)
        return false;
    const ir_node *x = &g->nodes[n->src[0]];
    const int64_t groups = n->attrs.groups;
    return x->shape[3] / groups >= CG_GROUPED_MIN_CHANNELS && n->shape[3] / groups >= CG_GROUPED_MIN_CHANNELS;
}

/* A weight packed for grouped convs records their groups; convs of another
 * group count sharing it leave it plain. */
static void agree_groups(ir_graph *g, ir_layout *layout)
{
    for (int id = 0; id < g->nnodes; id++)
        g->nodes[id].layout_groups = 0;
    for (int u = 0; u < g->nnodes; u++) {
        const ir_node *user = &g->nodes[u];
        if (user->dead || user->op != IR_OP_conv || user->nsrc < 2)
            continue;
        ir_node *w = &g->nodes[user->src[1]];
        if (layout[user->src[1]] != IR_LAYOUT_GROUPED)
            continue;
        if (w->layout_groups == 0)
            w->layout_groups = user->attrs.groups;
        else if (w->layout_groups != user->attrs.groups)
            layout[user->src[1]] = IR_LAYOUT_PLAIN;
    }
}

/* Attention weights pack only in pairs: an mha runs the packed kernel only
 * when both its in_proj and out_proj weights are packed. */
static void pair_attention(const ir_graph *g, ir_layout *layout)
{
    for (int u = 0; u < g->nnodes; u++) {
        const ir_node *user = &g->nodes[u];
        if (user->dead || user->op != IR_OP_mha)
            continue;
        const int in_w = user->src[3], out_w = user->src[5];
        if (layout[in_w] != IR_LAYOUT_MHA_IN || layout[out_w] != IR_LAYOUT_MHA_OUT) {
            if (layout[in_w] == IR_LAYOUT_MHA_IN) layout[in_w] = IR_LAYOUT_PLAIN;
            if (layout[out_w] == IR_LAYOUT_MHA_OUT) layout[out_w] = IR_LAYOUT_PLAIN;
        }
    }
}

void cg_select(ir_graph *g)
{
    ir_layout *layout = ax_alloc(g->ctx->arena, ((size_t)g->nnodes + 1) * sizeof *layout);
    agreed_layouts(g, layout);
    pair_attention(g, layout);
    agree_groups(g, layout);
    for (int id = 0; id < g->nnodes; id++)
        g->nodes[id].layout = layout[id];
    cg_plan_graph(g, false);
}

/* The conv params a Winograd weight's transform needs (oc, c). */
static axrt_conv2d_params winograd_weight_params(const ir_node *w)
{
    axrt_conv2d_params p = {0};
    p.oc = (int)w->shape[0];
    p.c = (int)w->shape[1];
    p.kh = p.kw = 3;
    return p;
}

size_t cg_packed_count(const ir_node *n)
{
    if (cg_winograd_m((ir_layout)n->layout)) {
        const axrt_conv2d_params p = winograd_weight_params(n);
        return axrt_winograd_packed_elems(&p, cg_winograd_m((ir_layout)n->layout));
    }
    return (size_t)ir_numel(n);
}

float *cg_packed_data(ax_arena *a, const ir_node *n)
{
    const float *w = (const float *)n->data;
    const size_t count = cg_packed_count(n);
    float *packed = ax_alloc(a, count * sizeof *packed + 1);
    if (cg_winograd_m((ir_layout)n->layout)) {
        const axrt_conv2d_params p = winograd_weight_params(n);
        axrt_pack_winograd_f32(w, packed, &p, cg_winograd_m((ir_layout)n->layout));
    } else if (n->layout == IR_LAYOUT_CONV || n->layout == IR_LAYOUT_DEPTHWISE || n->layout == IR_LAYOUT_GROUPED) {
        axrt_conv2d_params p = {0};
        p.oc = (int)n->shape[0];
        p.c = (int)n->shape[1];
        p.kh = (int)n->shape[2];
        p.kw = (int)n->shape[3];
        p.groups = n->layout == IR_LAYOUT_GROUPED ? n->layout_groups : 1;
        if (n->layout == IR_LAYOUT_GROUPED) {
            p.oc = (int)n->shape[0];
            p.c = (int)n->shape[1] * p.groups;
            axrt_pack_conv2d_grouped_f32(w, packed, &p);
        } else if (n->layout == IR_LAYOUT_DEPTHWISE) {
            p.c = p.oc;
            axrt_pack_depthwise_f32(w, packed, &p);
        } else {
            axrt_pack_conv2d_f32(w, packed, &p);
        }
    } else if (n->layout == IR_LAYOUT_MHA_IN) { /* [3d, d]: three [d, d] packs */
        const size_t d = (size_t)n->shape[1];
        for (size_t part = 0; part < 3; part++)
            axrt_pack_dense_f32(w + part * d * d, packed + part * d * d, d, d);
    } else {
        axrt_pack_dense_f32(w, packed, (size_t)n->shape[1], (size_t)n->shape[0]);
    }
    return packed;
}

void cg_select_blas(ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++)
        if (g->nodes[id].layout == IR_LAYOUT_DENSE)
            g->nodes[id].layout = IR_LAYOUT_PLAIN;
    cg_plan_graph(g, true);
}
