/* pass_fuse_gelu.c — GELU written out with erf, as PyTorch's ONNX export of
 * nn.GELU() (opsets before Gelu's 20) and Hugging Face's gelu write it,
 * becomes the one gelu node it computes:
 *
 *   mul(mul(x, add(erf(div(x, √2)), 1)), 0.5)   (torch.onnx: Div Erf Add Mul Mul)
 *   mul(mul(x, 0.5), add(erf(div(x, √2)), 1))   (x * 0.5 * (1 + erf(x / √2)))
 *   = gelu(x) = x · ½ (1 + erf(x / √2))
 *
 * in either operand order of each add and mul, x / √2 also as x · (1/√2),
 * each constant a scalar node equal in float to √2 (1/√2), 1 and ½, every
 * node of the same dtype and shape as x.  Every node between x and the last
 * mul must have that chain as its only use (not a graph output), else the
 * chain stays.  Why: gelu is one vectorised, threaded runtime kernel, or a
 * dense's epilogue (fuse_activation, which runs after this), where the
 * chain became a generated loop calling the C library's erff element by
 * element on one thread (fuse_elementwise): BERT-base's [128, 3072] took
 * 2.4 ms of its layer's 21 ms that way.  gelu rounds differently from the
 * five steps (within the few float ulps of the erf-form GELU). */
#include "passes.h"
#include "ir_use.h"

#include <math.h>

/* Whether id is a scalar node whose value is v in float. */
static bool scalar_is(const ir_graph *g, int id, double v)
{
    return id != IR_NONE && g->nodes[id].op == IR_OP_scalar && (float)g->nodes[id].attrs.scalar == (float)v;
}

/* The operand of the live binary node id (op) that is not the scalar v,
 * else IR_NONE. */
static int other_than(const ir_graph *g, int id, ir_op op, double v)
{
    const ir_node *n = &g->nodes[id];
    if (n->dead || n->op != op || n->nsrc != 2) return IR_NONE;
    if (scalar_is(g, n->src[1], v)) return n->src[0];
    if (op != IR_OP_div && scalar_is(g, n->src[0], v)) return n->src[1];
    return IR_NONE;
}

/* The one node reading id (once), when id is an intermediate value of x's
 * dtype and shape that a quantised file gives no scale (int8 would compute
 * it); else IR_NONE. */
static int only_user(const ir_graph *g, const ir_use *u, int id, int x)
{
    if (ir_use_count(u, id) != 1 || ir_use_is_output(u, id) || !ir_same_shape(&g->nodes[id], &g->nodes[x]) ||
        g->nodes[id].dtype != g->nodes[x].dtype || g->nodes[id].file_scale > 0)
        return IR_NONE;
    return ir_use_sole_user(u, id);
}

/* The operand of the mul id other than `side`, else IR_NONE. */
static int mul_partner(const ir_graph *g, int id, int side)
{
    const ir_node *n = &g->nodes[id];
    if (id == IR_NONE || n->op != IR_OP_mul || n->nsrc != 2) return IR_NONE;
    return n->src[0] == side ? n->src[1] : n->src[1] == side ? n->src[0] : IR_NONE;
}

/* x of the chain whose erf is node e, with the chain's last mul in *last and
 * its nodes other than the last in dead[0 .. *ndead); IR_NONE when e starts
 * none. */
static int gelu_chain(const ir_graph *g, const ir_use *u, int e, int *last, int *dead, int *ndead)
{
    const int scaled = g->nodes[e].src[0];
    int x = other_than(g, scaled, IR_OP_div, sqrt(2.0)), one, m1, half, m2;
    if (x == IR_NONE) x = other_than(g, scaled, IR_OP_mul, 1.0 / sqrt(2.0));
    if (x == IR_NONE || only_user(g, u, scaled, x) != e || (one = only_user(g, u, e, x)) == IR_NONE ||
        other_than(g, one, IR_OP_add, 1.0) != e || (m1 = only_user(g, u, one, x)) == IR_NONE)
        return IR_NONE;
    dead[0] = scaled, dead[1] = e, dead[2] = one, *ndead = 3;
    half = mul_partner(g, m1, one);
    if (half == x) { /* mul(mul(x, 1 + erf), ½) */
        m2 = only_user(g, u, m1, x);
        if (m2 == IR_NONE || other_than(g, m2, IR_OP_mul, 0.5) != m1) return IR_NONE;
        dead[(*ndead)++] = m1, *last = m2;
        return x;
    }
    if (half == IR_NONE || other_than(g, half, IR_OP_mul, 0.5) != x || only_user(g, u, half, x) != m1)
        return IR_NONE; /* else mul(mul(x, ½), 1 + erf) */
    dead[(*ndead)++] = half, *last = m1;
    return x;
}

int pass_fuse_gelu(ir_graph *g)
{
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++) {
        int last, dead[4], ndead, x;
        if (g->nodes[id].dead || g->nodes[id].op != IR_OP_erf ||
            (x = gelu_chain(g, &u, id, &last, dead, &ndead)) == IR_NONE)
            continue;
        ir_node *n = &g->nodes[last];
        int constants[2 * 5], nconstants = 0;
        for (int i = 0; i < ndead; i++) {
            for (int k = 0; k < g->nodes[dead[i]].nsrc; k++) constants[nconstants++] = g->nodes[dead[i]].src[k];
            g->nodes[dead[i]].dead = true;
        }
        constants[nconstants++] = n->src[0], constants[nconstants++] = n->src[1];
        n->op = IR_OP_gelu, n->nsrc = 1, n->src[0] = x, n->src[1] = IR_NONE;
        ir_use_compute(g, &u);
        for (int i = 0; i < nconstants; i++) /* the chain's scalars, when nothing else reads them */
            if (g->nodes[constants[i]].op == IR_OP_scalar && ir_use_count(&u, constants[i]) == 0)
                g->nodes[constants[i]].dead = true;
    }
    ir_use_free(&u);
    return 0;
}
