/* pass_fuse_scale.c — folds a per-channel scale of a conv's input into the
 * conv's weight (a squeeze-and-excitation's x .* s feeding its 1x1
 * projection):
 *
 *   conv(x .* s, W) == conv(x, W'),  W'[o][c][ky][kx] = W[o][c][ky][kx] * s[c]
 *
 * with s one value per channel of x (the same for every image, or one per
 * image: [N, 1, 1, C]).  s is computed while the model runs, so the weight
 * is scaled then, per image, by the target's kernel (ir_target
 * fold_input_scale, which also says where that pays: the C target scales
 * a packed weight of c * oc elements instead of a pass over pixels * c).
 * The mul is marked scale_folded (its operand 0 made x) and left in the
 * graph, so the interpreter and every other reader still see x .* s; it
 * gets no buffer and no code.  Only a mul whose one reader is the conv (as
 * its input) and not a graph output, and a weight param that conv alone
 * reads (so the back end packs it for that conv).  Not in a training
 * graph (the backward reads x .* s and its weight as written), nor under
 * int8 or --ram (pipeline_table.c). */
#include "passes.h"
#include "ir_use.h"

/* Which operand of rank-4 mul m is one value per channel of the other (side
 * 0 or 1), the other having m's shape; -1 when neither. */
static int channel_scale_side(const ir_graph *g, const ir_node *m)
{
    const int64_t c = m->rank == 4 ? m->shape[3] : 0;
    for (int side = 0; c && side < 2; side++) {
        const ir_node *s = &g->nodes[m->src[side]], *x = &g->nodes[m->src[1 - side]];
        if (!ir_same_shape(x, m) || s->dtype != m->dtype || x->dtype != m->dtype || !s->rank ||
            s->shape[s->rank - 1] != c)
            continue;
        const bool per_image = s->rank == 4 && s->shape[0] == m->shape[0] && s->shape[1] == 1 && s->shape[2] == 1;
        if (ir_numel(s) == c || per_image)
            return side;
    }
    return -1;
}

/* Conv p's input, a mul only p reads, may be folded into p's weight, a
 * param only p reads. */
static bool foldable_input(const ir_graph *g, const ir_use *u, int id)
{
    const ir_node *p = &g->nodes[id];
    if (p->dead || p->op != IR_OP_conv || p->nsrc < 2 || p->src[0] == IR_NONE)
        return false;
    const ir_node *m = &g->nodes[p->src[0]], *w = &g->nodes[p->src[1]];
    return !m->dead && m->op == IR_OP_mul && !m->scale_folded && ir_use_count(u, p->src[0]) == 1 &&
           !ir_use_is_output(u, p->src[0]) && w->op == IR_OP_param && ir_use_count(u, p->src[1]) == 1 &&
           !ir_use_is_output(u, p->src[1]);
}

/* Puts mul m's operands in the other order (x .* s == s .* x exactly). */
static void swap_operands(ir_node *m)
{
    const int t = m->src[0];
    m->src[0] = m->src[1];
    m->src[1] = t;
}

int pass_fuse_input_scale(ir_graph *g)
{
    if (!g->target || !g->target->fold_input_scale || (g->ctx && g->ctx->training))
        return 0;
    ir_use u = {0};
    ir_use_compute(g, &u);   /* marking a mul changes no node's uses */
    for (int id = 0; id < g->nnodes; id++) {
        if (!foldable_input(g, &u, id))
            continue;
        ir_node *m = &g->nodes[g->nodes[id].src[0]];
        const int side = channel_scale_side(g, m);
        if (side < 0)
            continue;
        if (side == 0)
            swap_operands(m);
        if (g->target->fold_input_scale(m, &g->nodes[id], g))
            m->scale_folded = true;
        else if (side == 0)   /* as it was: an unfolded mul's code does not change */
            swap_operands(m);
    }
    ir_use_free(&u);
    return 0;
}
