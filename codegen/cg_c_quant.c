/* cg_c_quant.c — the C back end's int8 layers (--quantize=int8: ir_quant,
 * runtime/axrt.h "int8"): their quantised weights, requantisation constants
 * and packed panels as static arrays, and the kernel calls of int8 dense,
 * conv, elementwise ops, pools and concat.  Part of cg_c.c's emitter
 * (cg_c_internal.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cg_c_internal.h"

/* ---- int8 layers (--quantize=int8: ir_quant, runtime/axrt.h "int8") ------- */

/* Whether parameter id is read only by int8 layers, which read their own
 * int8 copies: then its float data is left out of the file. */
bool cg_param_only_quantised(const ir_graph *g, int id)
{
    bool quantised = false;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = &g->nodes[k];
        for (int i = 0; i < n->nsrc && !n->dead; i++) {
            if (n->src[i] != id) continue;
            if (!n->quant || i == 0) return false;
            quantised = true;
        }
    }
    return quantised;
}

static void emit_q_array(emitter *em, const char *ctype_name, const char *what, int id, const void *v,
                         int64_t count, size_t esize)
{
    ax_buf_printf(em->out, "static const union { unsigned char bytes[%lld + 1]; %s values[%lld]; } %s_q%d_%s = {\n",
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
                  float_text(arena_of(em), q->out_scale), q->out_q8);
}

/* Operand 0 of an int8 node as bytes: as it arrives when it is int8
 * (in_q8), else quantised into the node's scratch first. */
const char *cgc_quantized_input(emitter *em, const ir_node *n)
{
    if (n->quant->in_q8) return cgc_operand(em, n, 0);
    const char *qx = ax_sprintf(arena_of(em), "(uint8_t *)((unsigned char *)arena + %lld)", (long long)n->scratch_offset);
    ax_buf_printf(em->out, "    axrt_quantize_u8(%s, %s, %lld, %s, %d);\n", cgc_operand(em, n, 0), qx,
                  (long long)ir_numel(cgc_operand_node(em, n, 0)), float_text(arena_of(em), n->quant->in_scale),
                  n->quant->in_zp);
    return qx;
}

/* Quantises operand 0 into the node's scratch (unless it arrives int8:
 * in_q8), then the int8 kernel; a conv's receptive field follows in the
 * scratch. */
void cgc_emit_quant_layer(emitter *em, const ir_node *n, const char *y)
{
    const ir_quant *q = n->quant;
    const ir_node *x = cgc_operand_node(em, n, 0);
    const int id = (int)(n - em->g->nodes);
    const int64_t patch_at = n->scratch_offset + (q->in_q8 ? 0 : ir_numel(x));
    if (n->scratch_offset < 0 && (!q->in_q8 || n->op == IR_OP_conv))
        ax_die("cg_c: int8 layer %%%d has no scratch buffer", id);
    const char *qx = cgc_quantized_input(em, n);
    if (n->op == IR_OP_dense) {
        const int64_t in = x->shape[x->rank - 1];
        ax_buf_printf(em->out, "    axrt_dense_q8_packed(%s, %s_q%d_w.values, &%s_q%d_rq, %s, %lld, %lld, %lld);\n",
                      qx, em->g->name, id, em->g->name, id, y, (long long)(ir_numel(x) / in),
                      (long long)in, (long long)n->shape[n->rank - 1]);
        return;
    }
    const axrt_conv2d_params p = cg_quant_conv_params(em->g, n);
    ax_buf_printf(em->out,
                  "    {\n        static const axrt_conv2d_params params = "
                  "{%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d};\n",
                  p.n, p.h, p.w, p.c, p.oh, p.ow, p.oc, p.kh, p.kw, p.stride_h, p.stride_w,
                  p.dilation_h, p.dilation_w, p.pad_top, p.pad_left, p.groups);
    ax_buf_printf(em->out, "        axrt_conv2d_q8_packed(%s, %d, %s_q%d_w.values, &%s_q%d_rq, %s, "
                  "(uint8_t *)((unsigned char *)arena + %lld), &params);\n    }\n",
                  qx, q->in_zp + 128, em->g->name, id, em->g->name, id, y, (long long)patch_at);
}

static void emit_int32_array(ax_buf *out, const char *name, const int32_t *v, int n)
{
    ax_buf_printf(out, "        static const int32_t %s[%d] = {", name, n);
    for (int i = 0; i < n; i++)
        ax_buf_printf(out, "%s%ld", i ? ", " : "", (long)v[i]);
    ax_buf_puts(out, "};\n");
}

/* The kernel call of an int8 add (broadcasting or not), ReLU, mean (pool)
 * or concat n on its quantised operands qx, inside the block holding ew[]. */
static void emit_quant_ew_call(emitter *em, const ir_node *n, const char *const *qx, const char *y)
{
    const ir_quant *q = n->quant;
    const long long count = (long long)ir_numel(n);
    const ir_node *x = cgc_operand_node(em, n, 0);
    if (n->op == IR_OP_add && ir_same_shape(x, n) && ir_same_shape(cgc_operand_node(em, n, 1), n)) {
        ax_buf_printf(em->out, "        axrt_add_q8(%s, %s, %s, %lld, &ew[0]);\n", qx[0], qx[1], y, count);
    } else if (n->op == IR_OP_add) {
        int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK];
        cg_broadcast_strides(x, n, sa);
        cg_broadcast_strides(cgc_operand_node(em, n, 1), n, sb);
        cgc_emit_int64_array(em->out, "a_strides", sa, n->rank);
        cgc_emit_int64_array(em->out, "b_strides", sb, n->rank);
        cgc_emit_int64_array(em->out, "shape", n->shape, n->rank);
        ax_buf_printf(em->out, "        axrt_add_bcast_q8(%s, a_strides, %s, b_strides, %s, shape, %d, &ew[0]);\n",
                      qx[0], qx[1], y, n->rank);
    } else if (n->op == IR_OP_globalmeanpool) {
        ax_buf_printf(em->out, "        axrt_globalmeanpool_q8(%s, %s, %lld, %lld, %lld, &ew[0]);\n", qx[0], y,
                      (long long)x->shape[0], (long long)(x->shape[1] * x->shape[2]), (long long)x->shape[3]);
    } else if (n->op == IR_OP_mean) {
        const int axis = n->attrs.axis;
        ax_buf_printf(em->out, "        axrt_mean_q8(%s, %s, %lld, %lld, %lld, &ew[0]);\n", qx[0], y,
                      (long long)cgc_product(x->shape, 0, axis), (long long)x->shape[axis],
                      (long long)cgc_product(x->shape, axis + 1, x->rank));
    } else if (n->op == IR_OP_meanpool) {
        emit_int32_array(em->out, "window", q->window, q->nwindow);
        cgc_emit_pool_params(em, x->shape, n->shape, &n->attrs);
        ax_buf_printf(em->out, "        axrt_meanpool_q8(%s, %s, &params, window, &ew[0]);\n    }\n", qx[0], y);
    } else if (n->op != IR_OP_concat) {
        ax_buf_printf(em->out, "        axrt_rescale_q8(%s, %s, 1, %lld, %lld, 0, &ew[0]);\n", qx[0], y, count, count);
    }
    const int axis = n->attrs.axis;
    const int64_t outer = cgc_product(n->shape, 0, axis), inner = cgc_product(n->shape, axis + 1, n->rank);
    int64_t offset = 0;
    for (int k = 0; n->op == IR_OP_concat && k < q->nin; k++) {
        const int64_t row = cgc_operand_node(em, n, k)->shape[axis] * inner;
        ax_buf_printf(em->out, "        axrt_rescale_q8(%s, %s, %lld, %lld, %lld, %lld, &ew[%d]);\n", qx[k], y,
                      (long long)outer, (long long)row, (long long)(n->shape[axis] * inner), (long long)offset, k);
        offset += row;
    }
}

/* An int8 add, concat, ReLU or mean (pool) (ir_quant with nin operands): each
 * operand that arrives float is quantised into the node's scratch, one after
 * the other, then the runtime's elementwise int8 kernel (axrt.h axrt_ew_q8). */
void cgc_emit_quant_ew(emitter *em, const ir_node *n, const char *y)
{
    const ir_quant *q = n->quant;
    const char *qx[16];
    int64_t at = n->scratch_offset;
    for (int k = 0; k < q->nin; k++) {
        if (q->in_q8_mask >> k & 1) {
            qx[k] = cgc_operand(em, n, k);
            continue;
        }
        if (n->scratch_offset < 0)
            ax_die("cg_c: int8 %s %%%d has no scratch buffer", ir_ops[n->op].name, (int)(n - em->g->nodes));
        qx[k] = ax_sprintf(arena_of(em), "(uint8_t *)((unsigned char *)arena + %lld)", (long long)at);
        ax_buf_printf(em->out, "    axrt_quantize_u8(%s, %s, %lld, %s, %d);\n", cgc_operand(em, n, k), qx[k],
                      (long long)ir_numel(cgc_operand_node(em, n, k)), float_text(arena_of(em), q->in_scales[k]),
                      q->in_zps[k]);
        at += ir_numel(cgc_operand_node(em, n, k));
    }
    const int parts = n->op == IR_OP_concat ? q->nin : 1;
    ax_buf_puts(em->out, "    {\n        static const axrt_ew_q8 ew[] = {");
    for (int k = 0; k < parts; k++) {
        const axrt_ew_q8 *e = &q->ew[k];
        ax_buf_printf(em->out, "%s\n            {{%d, %d}, {%d, %d}, {%d, %d}, %d, %d, %d, %d, %d, %d, %s, %d}",
                      k ? "," : "", e->zp[0], e->zp[1], e->mult[0], e->mult[1], e->shift[0], e->shift[1], e->left,
                      e->out_mult, e->out_shift, e->out_zp, e->lo, e->hi, float_text(arena_of(em), e->scale),
                      e->out_q8);
    }
    ax_buf_puts(em->out, "};\n");
    emit_quant_ew_call(em, n, qx, y);
    ax_buf_puts(em->out, "    }\n");
}
