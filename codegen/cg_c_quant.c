/* cg_c_quant.c — the C back end's int8 layers (--quantize=int8: ir_quant,
 * runtime/axrt.h "int8"): their quantised weights, requantisation constants
 * and packed panels as static arrays.  Their kernel calls are their
 * kernel-call plans (cg_plan.c), printed by cg_c.c.  Part of cg_c.c's
 * emitter (cg_c_internal.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cg_c_internal.h"

/* ---- int8 layers (--quantize=int8: ir_quant, runtime/axrt.h "int8") ------- */

/* Whether parameter id is read only by int8 layers (as weights or bias),
 * which read their own int8 copies: then its float data is left out of the
 * file.  An int8 elementwise node (no weights: a .tflite ADD or MUL of a
 * constant) quantises a parameter operand at its door: the data stays. */
bool cg_param_only_quantised(const ir_graph *g, int id)
{
    bool quantised = false;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = &g->nodes[k];
        for (int i = 0; i < n->nsrc && !n->dead; i++) {
            if (n->src[i] != id) continue;
            if (!n->quant || i == 0 || !n->quant->w) return false;
            quantised = true;
        }
    }
    return quantised;
}

static void emit_q_array(emitter *em, const char *ctype_name, const char *what, int id, const void *v,
                         int64_t count, size_t esize)
{
    ax_buf_printf(em->out, "static const union { unsigned char bytes[%lld + 1]; %s values[%lld]; } %s_q%d_%s AXC_WEIGHT_ALIGN = {\n",
                  (long long)(count * (int64_t)esize), ctype_name, (long long)count, em->g->name, id, what);
    cg_bytes_literal(em->out, v, (size_t)count, esize);
    ax_buf_puts(em->out, "};\n");
}

/* A float literal that reads back as exactly v (9 significant digits). */
static const char *float_text(ax_arena *a, float v)
{
    return ax_sprintf(a, "%.8ef", (double)v);
}

axrt_conv2d_params cg_quant_conv_params(const ir_graph *g, const ir_node *n)
{
    const ir_node *x = &g->nodes[n->src[0]], *w = &g->nodes[n->src[1]];
    const ir_attrs *at = &n->attrs;
    return (axrt_conv2d_params){(int)x->shape[0], (int)x->shape[1], (int)x->shape[2], (int)x->shape[3],
                                (int)n->shape[1], (int)n->shape[2], (int)n->shape[3], (int)w->shape[2],
                                (int)w->shape[3], at->stride[0], at->stride[1], at->dilation[0],
                                at->dilation[1], at->pad[0], at->pad[1], at->groups};
}

const int8_t *cg_quant_packed_weights(const ir_graph *g, const ir_node *n, size_t *bytes)
{
    const ir_quant *q = n->quant;
    int8_t *packed;
    if (n->op == IR_OP_dense) {
        const ir_node *x = &g->nodes[n->src[0]];
        const size_t in = (size_t)x->shape[x->rank - 1], out = (size_t)n->shape[n->rank - 1];
        *bytes = axrt_dense_q8_pack(q->w, in, out, NULL);
        packed = ax_alloc(g->ctx->arena, *bytes + 1);
        axrt_dense_q8_pack(q->w, in, out, packed);
    } else {
        const axrt_conv2d_params p = cg_quant_conv_params(g, n);
        *bytes = axrt_conv2d_q8_pack(q->w, &p, NULL);
        packed = ax_alloc(g->ctx->arena, *bytes + 1);
        axrt_conv2d_q8_pack(q->w, &p, packed);
    }
    return packed;
}

int cg_quant_rq_flags(const ir_quant *q)
{
    return (q->out_q8 ? AXRT_Q8_OUT_BYTES : 0) | (q->tflite_rounding ? AXRT_Q8_TFLITE : 0);
}

/* The int8 weights in the layout the runtime's GEMM reads (axrt_*_q8_pack). */
static void emit_packed_weights(emitter *em, const ir_node *n, int id)
{
    size_t bytes;
    const int8_t *packed = cg_quant_packed_weights(em->g, n, &bytes);
    emit_q_array(em, "int8_t", "w", id, packed, (int64_t)bytes, 1);
}

void cgc_emit_quant_constants(emitter *em, int id)
{
    const ir_quant *q = node_at(em, id)->quant;
    ax_buf_printf(em->out, "/* %%%d in int8: weights [%lld] per-channel symmetric, packed for the GEMM; "
                  "input scale %.9g zero %d, output scale %.9g zero %d */\n", id, (long long)q->nw,
                  (double)q->in_scale, q->in_zp, (double)q->out_scale, q->out_zp);
    emit_packed_weights(em, node_at(em, id), id);
    emit_q_array(em, "int32_t", "bias", id, q->bias, q->nout, 4);
    if (q->float_out) {
        emit_q_array(em, "float", "fscale", id, q->fscale, q->nout, 4);
        ax_buf_printf(em->out, "static const axrt_requant %s_q%d_rq = {%s_q%d_bias.values, NULL, NULL, "
                      "%s_q%d_fscale.values, 0, 0, 0, 0.0f, 0};\n", em->g->name, id, em->g->name, id,
                      em->g->name, id);
        return;
    }
    emit_q_array(em, "int32_t", "mult", id, q->mult, q->nout, 4);
    emit_q_array(em, "int8_t", "shift", id, q->shift, q->nout, 1);
    ax_buf_printf(em->out, "static const axrt_requant %s_q%d_rq = {%s_q%d_bias.values, %s_q%d_mult.values, "
                  "%s_q%d_shift.values, NULL, %d, %d, %d, %s, %d};\n", em->g->name, id, em->g->name, id,
                  em->g->name, id, em->g->name, id, q->out_zp, q->lo, q->hi,
                  float_text(arena_of(em), q->out_scale), cg_quant_rq_flags(q));
}
