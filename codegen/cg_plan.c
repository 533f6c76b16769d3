/* cg_plan.c — the kernel-call plan of each node (ir/ir_plan.h), decided once
 * after kernel selection (cg_select: the parameters' layouts) for every back
 * end that calls the runtime's CPU kernels.  The C back end prints the plan
 * as text, the LLVM back end builds the same calls, --emit=ir shows it; no
 * back end chooses a kernel of a planned node itself.
 *
 * A node's plan is its kernel's call (a block of calls where the kernel
 * reads constants: its params struct, strides), then its epilogue (the
 * residual add, then the fused activation) unless the kernel applies that
 * itself.  A fused elementwise node's plan is a loop program
 * (cg_plan_loop.c) before that epilogue, as is a unary_grad's (the
 * derivative's loop).  Every op that runs has a rule here.
 * An int8 node (ir_quant) follows the int8 rules below, whatever its op.
 * A new kernel is a row of cg_kernels.def and a rule below. */
#include "cg_target.h"

#include <string.h>

typedef enum cg_kernel_id {
#define KERNEL(id, name, suffixed) CG_K_##id,
#include "cg_kernels.def"
#undef KERNEL
    CG_K_COUNT
} cg_kernel_id;

static const struct {
    const char *name;
    bool suffixed;
} cg_kernels[CG_K_COUNT] = {
#define KERNEL(id, name, suffixed) [CG_K_##id] = {name, suffixed},
#include "cg_kernels.def"
#undef KERNEL
};

typedef struct planner {
    ir_graph *g;
    const ir_node *n;
    ir_plan *plan;
    int capacity;             /* of plan->calls */
    const cg_plan_context *ctx;
} planner;

static ax_arena *arena_of(const planner *P) { return P->g->ctx->arena; }
static const ir_node *operand_node(const planner *P, int i) { return &P->g->nodes[P->n->src[i]]; }
static int self_id(const planner *P) { return (int)(P->n - P->g->nodes); }

/* The runtime's kernel-name suffix of a compute dtype: f64, f16, bf16, else f32. */
static const char *suffix_of(axrt_dtype dtype)
{
    return dtype == AXRT_F64 ? "f64" : dtype == AXRT_F16 ? "f16" : dtype == AXRT_BF16 ? "bf16" : "f32";
}

static int64_t product(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= dims[i];
    return p;
}

/* ---- building calls --------------------------------------------------------- */

static ir_call *named_call(planner *P, const char *name)
{
    if (P->plan->ncalls == P->capacity) {   /* a concat: a call per operand */
        ir_call *more = ax_alloc(arena_of(P), sizeof *more * (size_t)P->capacity * 2);
        memcpy(more, P->plan->calls, sizeof *more * (size_t)P->capacity);
        P->plan->calls = more;
        P->capacity *= 2;
    }
    ir_call *c = &P->plan->calls[P->plan->ncalls++];
    c->kernel = name;
    return c;
}

/* A call of kernel k in dtype's variant. */
static ir_call *kernel_call(planner *P, cg_kernel_id k, axrt_dtype dtype)
{
    const char *name = cg_kernels[k].name;
    return named_call(P, cg_kernels[k].suffixed ? ax_sprintf(arena_of(P), "%s_%s", name, suffix_of(dtype)) : name);
}

/* axrt_<op><variant>_<dtype>: a kernel named after its op (ops.def). */
static ir_call *op_call(planner *P, int op, const char *variant, axrt_dtype dtype)
{
    return named_call(P, ax_sprintf(arena_of(P), "axrt_%s%s_%s", ir_ops[op].name, variant, suffix_of(dtype)));
}

static ir_arg *next_arg(ir_call *c, ir_arg_kind kind) { return ir_call_arg(c, kind); }

static void arg_value(ir_call *c, int node) { next_arg(c, IR_ARG_VALUE)->node = node; }
static void arg_scalar(ir_call *c, int node) { next_arg(c, IR_ARG_SCALAR)->node = node; }
static void arg_size(ir_call *c, int64_t v) { next_arg(c, IR_ARG_SIZE)->value = v; }
static void arg_int64(ir_call *c, int64_t v) { next_arg(c, IR_ARG_INT64)->value = v; }
static void arg_int(ir_call *c, int64_t v) { next_arg(c, IR_ARG_INT)->value = v; }
static void arg_act(ir_call *c, int act) { next_arg(c, IR_ARG_ACT)->value = act; }
static void arg_dtype(ir_call *c, axrt_dtype dtype) { next_arg(c, IR_ARG_DTYPE)->dtype = dtype; }
static void arg_real(ir_call *c, double v) { next_arg(c, IR_ARG_REAL)->real = v; }
static void arg_arena(ir_call *c, axrt_dtype dtype, int64_t offset)
{
    ir_arg *a = next_arg(c, IR_ARG_ARENA);
    a->dtype = dtype;
    a->value = offset;
}

/* Operand i of the node (a null pointer where absent). */
static void arg_operand(planner *P, ir_call *c, int i)
{
    arg_value(c, i < P->n->nsrc ? P->n->src[i] : IR_NONE);
}

/* A constant array the kernel reads by address: ints (the runtime's params
 * struct `type`, or int[] for NULL) or int64_t; the C back end declares it
 * as `name` in the call's block. */
static void arg_array(planner *P, ir_call *c, ir_arg_kind kind, const char *name, const char *type,
                      const int64_t *values, int count)
{
    ir_arg *a = next_arg(c, kind);
    int64_t *copy = ax_alloc(arena_of(P), sizeof *copy * (size_t)(count + 1));
    memcpy(copy, values, sizeof *copy * (size_t)count);
    a->values = copy;
    a->count = count;
    a->name = name;
    a->type = type;
    c->in_block = true;
}

/* ---- rules, by op family ------------------------------------------------------ */

/* bias, residual, act of a packed kernel that takes an epilogue: n's when
 * the kernel applies it (cg_kernel_applies_epilogue), else none. */
static void epilogue_args(planner *P, ir_call *c)
{
    const ir_node *n = P->n;
    const bool applies = cg_kernel_applies_epilogue(P->g, n);
    arg_operand(P, c, 2);
    arg_value(c, applies && n->attrs.residual != IR_NONE ? n->src[n->attrs.residual] : IR_NONE);
    arg_act(c, applies ? cg_kernel_act(n) : AXRT_ACT_NONE);
}

/* Whether Float32 layer n reads its weight (operand 1) from the training
 * state, whose values change every step, with pack room in the arena
 * (cg_plan_context): the weight is then packed there each step. */
static bool weight_from_state(const planner *P)
{
    const ir_node *n = P->n;
    return P->ctx->pack_offset >= 0 && P->ctx->state_offset && n->dtype == AXRT_F32 &&
           P->ctx->state_offset[n->src[1]] >= 0;
}

/* A dense reading its weight from the training state computes from it
 * unpacked when the batch fills a panel and x^T and y^T fit the pack room:
 * transposing them costs less than packing w. */
static bool unpacked_fits(const planner *P, int64_t rows, int64_t in, int64_t out)
{
    const int64_t room = (int64_t)P->g->arena_bytes - P->ctx->pack_offset;
    return rows >= AXRT_PANEL && rows * (in + out) * (int64_t)sizeof(float) <= room;
}

static void plan_dense(planner *P)
{
    const ir_node *n = P->n, *x = operand_node(P, 0);
    const int64_t in = x->shape[x->rank - 1], out = n->shape[n->rank - 1], rows = ir_numel(x) / in;
    const bool packed = cg_operand_packed(P->g, n, 1), ep = cg_kernel_applies_epilogue(P->g, n);
    const bool from_state = !(P->ctx->blas && n->dtype == AXRT_F32 && !packed) && weight_from_state(P);
    const bool unpacked = from_state && unpacked_fits(P, rows, in, out);
    if (from_state && !unpacked) {
        ir_call *pack = kernel_call(P, CG_K_pack_dense, n->dtype);
        arg_operand(P, pack, 1);
        arg_arena(pack, AXRT_F32, P->ctx->pack_offset);
        arg_size(pack, in);
        arg_size(pack, out);
    }
    ir_call *c = P->ctx->blas && n->dtype == AXRT_F32 && !packed ? kernel_call(P, CG_K_blas_dense, n->dtype)
                 : unpacked  ? kernel_call(P, CG_K_dense_unpacked, n->dtype)
                 : from_state ? kernel_call(P, CG_K_dense_packed, n->dtype)
                 : ep         ? kernel_call(P, CG_K_dense_packed_const_ep, n->dtype)
                              : kernel_call(P, packed ? CG_K_dense_packed : CG_K_dense, n->dtype);
    arg_operand(P, c, 0);
    if (from_state && !unpacked) arg_arena(c, AXRT_F32, P->ctx->pack_offset);
    else arg_operand(P, c, 1);
    if (ep && !from_state && !(P->ctx->blas && n->dtype == AXRT_F32 && !packed))
        epilogue_args(P, c);
    else
        arg_operand(P, c, 2);
    arg_value(c, self_id(P));
    arg_size(c, rows);
    arg_size(c, in);
    arg_size(c, out);
    if (unpacked) arg_arena(c, AXRT_F32, P->ctx->pack_offset);
}

/* torch.matmul (cg_matmul_geometry): the batch strides in a block, or null
 * pointers without batch dims. */
static void plan_matmul(planner *P)
{
    const ir_node *n = P->n;
    const cg_matmul_geometry m = cg_matmul_geometry_of(operand_node(P, 0), operand_node(P, 1));
    ir_call *c = kernel_call(P, P->ctx->blas && n->dtype == AXRT_F32 ? CG_K_blas_matmul : CG_K_matmul, n->dtype);
    c->in_block = true;
    arg_operand(P, c, 0);
    if (m.rank) arg_array(P, c, IR_ARG_INT64S, "a_strides", NULL, m.a_strides, m.rank);
    else arg_value(c, IR_NONE);
    arg_operand(P, c, 1);
    if (m.rank) arg_array(P, c, IR_ARG_INT64S, "b_strides", NULL, m.b_strides, m.rank);
    else arg_value(c, IR_NONE);
    arg_value(c, self_id(P));
    if (m.rank) arg_array(P, c, IR_ARG_INT64S, "batch", NULL, m.batch, m.rank);
    else arg_value(c, IR_NONE);
    arg_int(c, m.rank);
    arg_size(c, m.m);
    arg_size(c, m.k);
    arg_size(c, m.cols);
}

/* axrt_conv2d_params of a conv from x to an output shaped like y with a
 * kh x kw kernel and at's strides (1 for the in-place kernel), dilation,
 * padding and groups. */
static void arg_conv_params(planner *P, ir_call *c, const char *name, const ir_node *x, const ir_node *y,
                            const ir_node *w, const ir_attrs *at, bool unit_stride)
{
    const int64_t p[16] = {x->shape[0], x->shape[1], x->shape[2], x->shape[3], y->shape[1], y->shape[2],
                           y->shape[3], w->shape[2], w->shape[3], unit_stride ? 1 : at->stride[0],
                           unit_stride ? 1 : at->stride[1], at->dilation[0], at->dilation[1], at->pad[0],
                           at->pad[1], at->groups};
    arg_array(P, c, IR_ARG_INTS, name, "axrt_conv2d_params", p, 16);
}

/* Depthwise conv n whose operand, a 1x1 conv, is rows_fused: both in one
 * call, the rings of expanded rows in n's scratch. */
static void plan_expand_depthwise(planner *P)
{
    const ir_node *n = P->n, *e = operand_node(P, 0);
    const ir_node *x = &P->g->nodes[e->src[0]], *ew = &P->g->nodes[e->src[1]], *w = operand_node(P, 1);
    if (n->scratch_offset < 0 || !cg_kernel_applies_epilogue(P->g, n) || !cg_kernel_applies_epilogue(P->g, e))
        ax_die("cg_plan: a row-fused expansion without its rings or packed kernels");
    ir_call *c = kernel_call(P, CG_K_expand_depthwise, n->dtype);
    for (int i = 0; i < 3; i++)
        arg_value(c, i < e->nsrc ? e->src[i] : IR_NONE);
    arg_act(c, cg_kernel_act(e));
    arg_operand(P, c, 1);
    arg_operand(P, c, 2);
    arg_act(c, cg_kernel_act(n));
    arg_value(c, self_id(P));
    arg_arena(c, AXRT_F32, n->scratch_offset);
    arg_conv_params(P, c, "params", x, e, ew, &e->attrs, false);
    arg_conv_params(P, c, "dw_params", e, n, w, &n->attrs, false);
}

/* Projection n whose operand, a depthwise conv, is rows_fused with its own
 * expansion: the whole block in one call (axrt_expand_dw_project_f32), the
 * rings in n's scratch. */
static void plan_expand_dw_project(planner *P)
{
    const ir_node *n = P->n, *d = operand_node(P, 0), *e = &P->g->nodes[d->src[0]];
    const ir_node *x = &P->g->nodes[e->src[0]], *ew = &P->g->nodes[e->src[1]], *dw = &P->g->nodes[d->src[1]];
    if (n->scratch_offset < 0 || !cg_kernel_applies_epilogue(P->g, n) || !cg_kernel_applies_epilogue(P->g, d) ||
        !cg_kernel_applies_epilogue(P->g, e))
        ax_die("cg_plan: a row-fused block without its rings or packed kernels");
    ir_call *c = kernel_call(P, CG_K_expand_dw_project, n->dtype);
    for (int i = 0; i < 3; i++)
        arg_value(c, i < e->nsrc ? e->src[i] : IR_NONE);
    arg_act(c, cg_kernel_act(e));
    arg_value(c, d->src[1]);
    arg_value(c, d->nsrc > 2 ? d->src[2] : IR_NONE);
    arg_act(c, cg_kernel_act(d));
    arg_operand(P, c, 1);
    epilogue_args(P, c);
    arg_value(c, self_id(P));
    arg_arena(c, AXRT_F32, n->scratch_offset);
    arg_conv_params(P, c, "params", x, e, ew, &e->attrs, false);
    arg_conv_params(P, c, "dw_params", e, d, dw, &d->attrs, false);
    arg_conv_params(P, c, "pw_params", d, n, operand_node(P, 1), &n->attrs, false);
}

/* Conv n whose input is a scale_folded mul x .* s (pass_fuse_input_scale):
 * one call on x, its packed weight scaled by s into n's scratch, s per
 * image where it is [N, 1, 1, C] with N > 1, else one for all. */
static void plan_conv_scaled(planner *P)
{
    const ir_node *n = P->n, *m = operand_node(P, 0), *s = &P->g->nodes[m->src[1]];
    if (n->scratch_offset < 0 || !cg_kernel_applies_epilogue(P->g, n))
        ax_die("cg_plan: a conv with a folded input scale without its scratch or packed kernel");
    ir_call *c = kernel_call(P, CG_K_conv2d_scaled, n->dtype);
    arg_value(c, m->src[0]);
    arg_operand(P, c, 1);
    arg_value(c, m->src[1]);
    arg_size(c, s->rank == 4 && s->shape[0] > 1 ? s->shape[3] : 0);
    epilogue_args(P, c);
    arg_value(c, self_id(P));
    c->wrap = c->nargs;
    arg_arena(c, AXRT_F32, n->scratch_offset);
    arg_conv_params(P, c, "params", &P->g->nodes[m->src[0]], n, operand_node(P, 1), &n->attrs, false);
}

/* A depthwise conv the memory plan put over its own input
 * (cg_c_can_inplace): the in-place kernel, its ring of input rows in n's
 * scratch, the packed kernels' epilogue rule. */
static void plan_dwconv_inplace(planner *P)
{
    const ir_node *n = P->n;
    if (n->scratch_offset < 0)
        ax_die("cg_plan: in-place depthwise conv without its ring buffer");
    ir_call *c = kernel_call(P, CG_K_dwconv_inplace, n->dtype);
    arg_value(c, self_id(P));
    arg_operand(P, c, 1);
    arg_int(c, cg_operand_packed(P->g, n, 1));
    arg_operand(P, c, 2);
    arg_act(c, cg_kernel_applies_epilogue(P->g, n) ? cg_kernel_act(n) : AXRT_ACT_NONE);
    arg_arena(c, n->dtype, n->scratch_offset);
    arg_conv_params(P, c, "params", operand_node(P, 0), n, operand_node(P, 1), &n->attrs, true);
}

/* ---- Winograd (runtime/axrt_winograd.c) ---- A conv whose weight is
 * stored transformed (IR_LAYOUT_WINOGRAD or _WINOGRAD2: cg_conv_winograd): one call, its
 * epilogue inside, the tiles' V and M in n's scratch. */
static void plan_conv_winograd(planner *P)
{
    const ir_node *n = P->n;
    if (n->scratch_offset < 0)
        ax_die("cg_plan: Winograd conv %%%d has no scratch buffer", self_id(P));
    ir_call *c = kernel_call(P, CG_K_conv2d_winograd, n->dtype);
    arg_operand(P, c, 0);
    arg_operand(P, c, 1);
    epilogue_args(P, c);
    arg_value(c, self_id(P));
    c->wrap = c->nargs;
    arg_arena(c, AXRT_F32, n->scratch_offset);
    arg_int(c, cg_winograd_m((ir_layout)operand_node(P, 1)->layout));
    arg_conv_params(P, c, "params", operand_node(P, 0), n, operand_node(P, 1), &n->attrs, false);
}
/* ---- end of Winograd ---- */

static void plan_conv(planner *P)
{
    const ir_node *n = P->n;
    if (n->inplace_of == 0) {
        plan_dwconv_inplace(P);
        return;
    }
    if (operand_node(P, 0)->scale_folded) {
        plan_conv_scaled(P);
        return;
    }
    if (operand_node(P, 0)->rows_fused && P->g->nodes[operand_node(P, 0)->src[0]].rows_fused) {
        plan_expand_dw_project(P);
        return;
    }
    if (operand_node(P, 0)->rows_fused) {
        plan_expand_depthwise(P);
        return;
    }
    /* a grouped conv's own kernel (runtime/axrt_gconv.inc), as depthwise's */
    const bool grouped = operand_node(P, 1)->layout == IR_LAYOUT_GROUPED;
    const bool depthwise = operand_node(P, 1)->layout == IR_LAYOUT_DEPTHWISE;
    const bool ep = cg_kernel_applies_epilogue(P->g, n);
    if (weight_from_state(P) && n->attrs.groups == 1 && !ep) {
        /* packed into the pack room each step (passes/train_graph_step.c) */
        ir_call *pack = kernel_call(P, CG_K_pack_conv2d, n->dtype);
        arg_operand(P, pack, 1);
        arg_arena(pack, AXRT_F32, P->ctx->pack_offset);
        arg_conv_params(P, pack, "params", operand_node(P, 0), n, operand_node(P, 1), &n->attrs, false);
        ir_call *c = kernel_call(P, CG_K_conv2d_packed, n->dtype);
        arg_operand(P, c, 0);
        arg_arena(c, AXRT_F32, P->ctx->pack_offset);
        arg_operand(P, c, 2);
        arg_value(c, self_id(P));
        arg_conv_params(P, c, "params", operand_node(P, 0), n, operand_node(P, 1), &n->attrs, false);
        return;
    }
    if (cg_winograd_m((ir_layout)operand_node(P, 1)->layout)) {
        plan_conv_winograd(P);
        return;
    }
    ir_call *c = grouped     ? kernel_call(P, CG_K_conv2d_grouped, n->dtype)
                 : depthwise ? kernel_call(P, CG_K_conv2d_depthwise, n->dtype)
                 : ep      ? kernel_call(P, CG_K_conv2d_packed_ep, n->dtype)
                           : kernel_call(P, cg_operand_packed(P->g, n, 1) ? CG_K_conv2d_packed : CG_K_conv2d, n->dtype);
    arg_operand(P, c, 0);
    arg_operand(P, c, 1);
    if (grouped || depthwise || ep)
        epilogue_args(P, c);
    else
        arg_operand(P, c, 2);
    arg_value(c, self_id(P));
    arg_conv_params(P, c, "params", operand_node(P, 0), n, operand_node(P, 1), &n->attrs, false);
}

static void plan_norm(planner *P)
{
    const ir_node *n = P->n;
    const int64_t last = n->shape[n->rank - 1], rows = ir_numel(n) / last;
    const bool layernorm = n->op == IR_OP_layernorm;
    ir_call *c = kernel_call(P, layernorm ? CG_K_layernorm : CG_K_batchnorm, n->dtype);
    for (int i = 0; i < (layernorm ? 3 : 5); i++)
        arg_operand(P, c, i);
    arg_value(c, self_id(P));
    arg_size(c, rows);
    arg_size(c, last);
    arg_real(c, n->attrs.eps);
}

/* A kernel over [outer, axis, inner] around attrs.axis of shape_of's shape
 * (softmax, a reduction, argmax), in dtype's variant. */
static void plan_axis(planner *P, const ir_node *shape_of, axrt_dtype dtype)
{
    const int axis = P->n->attrs.axis;
    ir_call *c = op_call(P, P->n->op, "", dtype);
    arg_operand(P, c, 0);
    arg_value(c, self_id(P));
    arg_size(c, product(shape_of->shape, 0, axis));
    arg_size(c, shape_of->shape[axis]);
    arg_size(c, product(shape_of->shape, axis + 1, shape_of->rank));
}

/* ---- attention without the scores (axrt_mha_flash_f32) ---- */

/* The runtime's axrt_mha_params of mha node n: batch, lq, lk, d, heads, causal. */
static void mha_params(const ir_graph *g, const ir_node *n, int64_t p[6])
{
    const ir_node *q = &g->nodes[n->src[0]], *k = &g->nodes[n->src[1]];
    const int64_t d = q->shape[q->rank - 1], lq = q->shape[q->rank - 2];
    p[0] = ir_numel(q) / (lq * d), p[1] = lq, p[2] = k->shape[k->rank - 2], p[3] = d;
    p[4] = n->attrs.heads, p[5] = n->attrs.causal ? 1 : 0;
}

/* axrt_mha_flash_f32(q, k, v, key_mask or NULL, in_w, in_b, out_w, out_b,
 * y, scratch, params, packed): packed weights are the compiled model's
 * constants (AXRT_MHA_PACKED_CONST). */
static void plan_mha_flash(planner *P, bool masked, bool packed)
{
    const ir_node *n = P->n;
    int64_t p[6];
    ir_call *c = kernel_call(P, CG_K_mha_flash, n->dtype);
    for (int i = 0; i < 3; i++) arg_operand(P, c, i);
    if (masked) arg_operand(P, c, 7);
    else arg_value(c, IR_NONE);
    for (int i = 3; i < 7; i++) arg_operand(P, c, i);
    arg_value(c, self_id(P));
    c->wrap = c->nargs;
    arg_arena(c, n->dtype, n->scratch_offset);
    mha_params(P->g, n, p);
    arg_array(P, c, IR_ARG_INTS, "params", "axrt_mha_params", p, 6);
    arg_int(c, packed ? AXRT_MHA_PACKED_CONST : 0);
}

/* ---- end of attention without the scores ---- */

/* q [..., lq, d], k and v [..., lk, d]: leading dims are the batch; the
 * key mask, if any, follows v. */
static void plan_mha(planner *P)
{
    const ir_node *n = P->n, *q = operand_node(P, 0), *k = operand_node(P, 1);
    const int64_t d = q->shape[q->rank - 1], lq = q->shape[q->rank - 2];
    if (n->scratch_offset < 0)
        ax_die("cg_plan: mha %%%d has no scratch buffer", self_id(P));
    const bool masked = n->nsrc > 7 && n->src[7] != IR_NONE, packed = cg_operand_packed(P->g, n, 3);
    if (cg_mha_flash(n)) {
        plan_mha_flash(P, masked, packed);
        return;
    }
    ir_call *c = kernel_call(P, masked ? (packed ? CG_K_mha_packed_masked : CG_K_mha_masked)
                                       : packed ? CG_K_mha_packed : CG_K_mha, n->dtype);
    for (int i = 0; i < 7; i++) {
        if (i == 3 && masked) arg_operand(P, c, 7);
        arg_operand(P, c, i);
    }
    arg_value(c, self_id(P));
    c->wrap = c->nargs;
    arg_arena(c, n->dtype, n->scratch_offset);
    const int64_t p[6] = {ir_numel(q) / (lq * d), lq, k->shape[k->rank - 2], d, n->attrs.heads, n->attrs.causal ? 1 : 0};
    arg_array(P, c, IR_ARG_INTS, "params", "axrt_mha_params", p, 6);
}

/* axrt_<op>_<dtype>(x, y, count[, alpha]) */
static void unary_call(planner *P, int op, int x, int y)
{
    ir_call *c = op_call(P, op, "", P->n->dtype);
    arg_value(c, x);
    arg_value(c, y);
    arg_size(c, ir_numel(P->n));
    if (op == IR_OP_elu || op == IR_OP_leaky_relu)
        arg_real(c, P->n->attrs.alpha);
}

static void plan_unary(planner *P)
{
    unary_call(P, P->n->op, P->n->src[0], self_id(P));
}

/* Same shapes, a one-element operand (its value passed), or broadcast
 * through strides. */
static void plan_binary(planner *P)
{
    const ir_node *n = P->n, *a = operand_node(P, 0), *b = operand_node(P, 1);
    const int64_t count = ir_numel(n);
    ir_call *c;
    if (ir_same_shape(a, n) && ir_same_shape(b, n)) {
        c = op_call(P, n->op, "", n->dtype);
        arg_operand(P, c, 0);
        arg_operand(P, c, 1);
    } else if (ir_same_shape(a, n) && ir_numel(b) == 1) {
        c = op_call(P, n->op, "_scalar_b", n->dtype);
        arg_operand(P, c, 0);
        arg_scalar(c, n->src[1]);
    } else if (ir_same_shape(b, n) && ir_numel(a) == 1) {
        c = op_call(P, n->op, "_scalar_a", n->dtype);
        arg_scalar(c, n->src[0]);
        arg_operand(P, c, 1);
    } else {
        int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK];
        cg_broadcast_strides(a, n, sa);
        cg_broadcast_strides(b, n, sb);
        c = op_call(P, n->op, "_bcast", n->dtype);
        arg_operand(P, c, 0);
        arg_array(P, c, IR_ARG_INT64S, "a_strides", NULL, sa, n->rank);
        arg_operand(P, c, 1);
        arg_array(P, c, IR_ARG_INT64S, "b_strides", NULL, sb, n->rank);
        arg_value(c, self_id(P));
        arg_array(P, c, IR_ARG_INT64S, "shape", NULL, n->shape, n->rank);
        arg_int(c, n->rank);
        return;
    }
    arg_value(c, self_id(P));
    arg_size(c, count);
}

/* The epilogue the kernel leaves to separate calls: the residual add, then
 * the activation, in place over the finished result (the memory plan keeps
 * the residual operand live, so it never shares the result's bytes). */
static void plan_epilogue(planner *P)
{
    const ir_node *n = P->n;
    const int y = self_id(P);
    if (cg_kernel_applies_epilogue(P->g, n))
        return;
    if (n->attrs.residual != IR_NONE) {
        ir_call *c = op_call(P, IR_OP_add, "", n->dtype);
        arg_value(c, y);
        arg_value(c, n->src[n->attrs.residual]);
        arg_value(c, y);
        arg_size(c, ir_numel(n));
    }
    if (cg_has_epilogue(n))
        unary_call(P, n->attrs.act, y, y);
}

/* An index out of range fails forward() with the kernel's status. */
/* axrt_embedding and its gradient (pass_grad's embedding_grad, op_call):
 * the indices (operand 0) and their dtype, operand 1, the result, then the
 * count of indices and the [vocab, dim] of table; its status tells an
 * index out of range (forward() returns it, a training step NaN). */
static void plan_embedding_call(planner *P, ir_call *c, const ir_node *table)
{
    c->status = true;
    arg_operand(P, c, 0);
    arg_dtype(c, operand_node(P, 0)->dtype);
    arg_operand(P, c, 1);
    arg_value(c, self_id(P));
    arg_size(c, ir_numel(operand_node(P, 0)));
    arg_size(c, table->shape[0]);
    arg_size(c, table->shape[1]);
}

static void plan_embedding(planner *P)
{
    plan_embedding_call(P, kernel_call(P, CG_K_embedding, P->n->dtype), operand_node(P, 1));
}

static void plan_groupnorm(planner *P)
{
    const ir_node *n = P->n;
    const int64_t c = n->shape[n->rank - 1], batch = n->shape[0];
    ir_call *k = kernel_call(P, CG_K_groupnorm, n->dtype);
    for (int i = 0; i < 3; i++)
        arg_operand(P, k, i);
    arg_value(k, self_id(P));
    arg_size(k, batch);
    arg_size(k, ir_numel(n) / batch / c);
    arg_size(k, c);
    arg_size(k, n->attrs.groups);
    arg_real(k, n->attrs.eps);
}

/* gru / lstm: x [N, L, I] -> y [N, L, H]; the state and gate sums in the
 * node's scratch (axrt_rnn_scratch_elems). */
static void plan_rnn(planner *P)
{
    const ir_node *n = P->n, *x = operand_node(P, 0);
    if (n->scratch_offset < 0)
        ax_die("cg_plan: %s %%%d has no scratch buffer", ir_ops[n->op].name, self_id(P));
    ir_call *c = op_call(P, n->op, "", n->dtype);
    for (int i = 0; i < (n->op == IR_OP_lstm ? 7 : 6); i++)
        arg_operand(P, c, i);
    arg_value(c, self_id(P));
    c->wrap = c->nargs;
    arg_arena(c, n->dtype, n->scratch_offset);
    const int64_t p[7] = {x->shape[0], x->shape[1], x->shape[2], n->shape[2], n->attrs.reverse ? 1 : 0,
                          n->attrs.linear_before_reset ? 1 : 0, n->attrs.cell ? 1 : 0};
    arg_array(P, c, IR_ARG_INTS, "params", "axrt_rnn_params", p, 7);
}

static void plan_conv_transpose(planner *P)
{
    ir_call *c = kernel_call(P, CG_K_conv_transpose2d, P->n->dtype);
    for (int i = 0; i < 3; i++)
        arg_operand(P, c, i);
    arg_value(c, self_id(P));
    arg_conv_params(P, c, "params", operand_node(P, 0), P->n, operand_node(P, 1), &P->n->attrs, false);
}

static void plan_upsample(planner *P)
{
    const ir_node *n = P->n, *x = operand_node(P, 0);
    ir_call *c = kernel_call(P, CG_K_upsample, n->dtype);
    arg_operand(P, c, 0);
    arg_value(c, self_id(P));
    for (int d = 0; d < 4; d++)
        arg_size(c, x->shape[d]);
    arg_size(c, n->attrs.scale[0]);
    arg_size(c, n->attrs.scale[1]);
    arg_size(c, n->attrs.mode);
}

/* A max- or mean-pool; a mean-pool whose divisor is not the whole window
 * (exclude_pad, ceil mode's extra cells) counts the cells it covers. */
static void plan_pool(planner *P)
{
    const ir_node *n = P->n;
    const ir_attrs *at = &n->attrs;
    const bool counted = n->op == IR_OP_meanpool && (at->exclude_pad || at->ceil_extra[0] || at->ceil_extra[1]);
    ir_call *c = counted ? kernel_call(P, CG_K_meanpool_counted, n->dtype) : op_call(P, n->op, "", n->dtype);
    arg_operand(P, c, 0);
    arg_value(c, self_id(P));
    const axrt_pool2d_params q = ir_pool2d_params(P->g, n);
    const int64_t p[14] = {q.n, q.h, q.w, q.c, q.oh, q.ow, q.kh, q.kw, q.stride_h, q.stride_w, q.pad_top,
                           q.pad_left, q.pad_bottom, q.pad_right};
    arg_array(P, c, IR_ARG_INTS, "params", "axrt_pool2d_params", p, 14);
    if (counted) {
        arg_int(c, at->pad[2] - at->ceil_extra[0]);
        arg_int(c, at->pad[3] - at->ceil_extra[1]);
        arg_int(c, !at->exclude_pad);
    }
}

static void plan_globalpool(planner *P)
{
    const ir_node *x = operand_node(P, 0);
    ir_call *c = op_call(P, P->n->op, "", P->n->dtype);
    arg_operand(P, c, 0);
    arg_value(c, self_id(P));
    arg_size(c, x->shape[0]);
    arg_size(c, x->shape[1] * x->shape[2]);
    arg_size(c, x->shape[3]);
}

static void plan_transpose(planner *P)
{
    const ir_node *n = P->n, *x = operand_node(P, 0);
    int64_t perm[IR_MAX_RANK];
    for (int i = 0; i < n->rank; i++)
        perm[i] = n->attrs.perm[i];
    ir_call *c = op_call(P, n->op, "", n->dtype);
    arg_operand(P, c, 0);
    arg_value(c, self_id(P));
    arg_array(P, c, IR_ARG_INT64S, "x_shape", NULL, x->shape, x->rank);
    arg_array(P, c, IR_ARG_INTS, "perm", NULL, perm, n->rank);
    arg_int(c, n->rank);
}

/* y[i] = x[offset + sum_d i_d * strides[d]] */
static void plan_slice(planner *P)
{
    const ir_node *n = P->n, *x = operand_node(P, 0);
    int64_t strides[IR_MAX_RANK];
    const int64_t offset = ir_slice_strides(&n->attrs, x->shape, x->rank, strides);
    ir_call *c = kernel_call(P, CG_K_gather_strided, n->dtype);
    arg_operand(P, c, 0);
    arg_value(c, self_id(P));
    arg_array(P, c, IR_ARG_INT64S, "y_shape", NULL, n->shape, n->rank);
    arg_array(P, c, IR_ARG_INT64S, "strides", NULL, strides, n->rank);
    arg_int64(c, offset);
    arg_int(c, n->rank);
}

/* One call per operand: its rows into y's columns from offset. */
static void plan_concat(planner *P)
{
    const ir_node *n = P->n;
    const int axis = n->attrs.axis;
    const int64_t outer = product(n->shape, 0, axis), inner = product(n->shape, axis + 1, n->rank);
    int64_t offset = 0;
    for (int i = 0; i < n->nsrc; i++) {
        const int64_t row = operand_node(P, i)->shape[axis] * inner;
        ir_call *c = kernel_call(P, CG_K_concat_part, n->dtype);
        arg_operand(P, c, i);
        arg_value(c, self_id(P));
        arg_size(c, outer);
        arg_size(c, row);
        arg_size(c, n->shape[axis] * inner);
        arg_size(c, offset);
        offset += row;
    }
}

/* A multi-result producer (ir.h) writes all its results in one call: the
 * kernel takes their storage as an array of pointers, in result order
 * (axrt_split: [outer, x_row] cut into column blocks of rows[k]). */
static void plan_chunk(planner *P)
{
    const ir_node *n = P->n;
    const int id = self_id(P), axis = n->attrs.axis, parts = n->attrs.nresults;
    const int64_t outer = product(n->shape, 0, axis), inner = product(n->shape, axis + 1, n->rank);
    int64_t *rows = ax_alloc(arena_of(P), sizeof *rows * (size_t)(parts + 1));
    int64_t *ys = ax_alloc(arena_of(P), sizeof *ys * (size_t)(parts + 1));
    for (int k = 0; k < parts; k++) {
        ys[k] = ir_result_node(P->g, id, k);
        if (ys[k] == IR_NONE)
            ax_die("cg_plan: %%%d chunk has no result %d", id, k);
        rows[k] = P->g->nodes[ys[k]].shape[axis] * inner;
    }
    ir_call *c = kernel_call(P, CG_K_split, n->dtype);
    arg_operand(P, c, 0);
    arg_array(P, c, IR_ARG_POINTERS, "ys", NULL, ys, parts);
    c->args[c->nargs - 1].dtype = n->dtype;
    arg_size(c, outer);
    arg_size(c, n->shape[axis] * inner);
    arg_size(c, parts);
    arg_array(P, c, IR_ARG_SIZES, "rows", NULL, rows, parts);
}

/* A copy of the node's bytes from operand 0, left out where the two are the
 * same storage (a reshape that shares its operand's). */
static void plan_copy(planner *P)
{
    ir_call *c = kernel_call(P, CG_K_copy, P->n->dtype);
    c->unless_aliased = true;
    arg_value(c, self_id(P));
    arg_operand(P, c, 0);
    arg_size(c, (int64_t)ir_value_bytes(P->n));
}
#define plan_reshape plan_copy

static void plan_cast(planner *P)
{
    const ir_node *x = operand_node(P, 0);
    if (x->dtype == P->n->dtype) {
        plan_copy(P);
        return;
    }
    ir_call *c = kernel_call(P, CG_K_cast, P->n->dtype);
    arg_operand(P, c, 0);
    arg_dtype(c, x->dtype);
    arg_value(c, self_id(P));
    arg_size(c, ir_numel(P->n));
}

static void plan_softmax(planner *P) { plan_axis(P, P->n, P->n->dtype); }
static void plan_reduce(planner *P) { plan_axis(P, operand_node(P, 0), P->n->dtype); }
/* Int64 indices from the operand's dtype's kernel. */
static void plan_argmax(planner *P) { plan_axis(P, operand_node(P, 0), operand_node(P, 0)->dtype); }
#define plan_layernorm plan_norm
#define plan_batchnorm plan_norm

/* ---- int8 layers (--quantize=int8: ir_quant, runtime/axrt.h "int8") ---------
 * Each operand that arrives float is quantised into the node's scratch
 * first, one after the other (its bytes then stand for it); then the int8
 * kernel on the node's constants (packed weights, axrt_requant, its
 * axrt_ew_q8 table).  ctx->float_io (int8 calibration's emulation,
 * compiler/quantize.c): every operand arrives float, the scratch starts at
 * 0 (no memory plan yet), no epilogue (the emulation applies it). */

/* A call of int8 kernel k (cg_kernels.def's KERNEL_HOST rows: no dtype suffix). */
static ir_call *int8_call(planner *P, cg_kernel_id k) { return kernel_call(P, k, AXRT_F32); }

static int64_t scratch_base(const planner *P, const char *what)
{
    if (P->ctx->float_io)
        return 0;
    if (P->n->scratch_offset < 0)
        ax_die("cg_plan: int8 %s %%%d has no scratch buffer", what, self_id(P));
    return P->n->scratch_offset;
}

static void arg_bytes(ir_call *c, int64_t offset, int64_t count)
{
    ir_arg *a = next_arg(c, IR_ARG_BYTES);
    a->value = offset;
    a->count = (int)count;
}

static void arg_node_constant(ir_call *c, ir_arg_kind kind, int node, int64_t entry, int entries)
{
    ir_arg *a = next_arg(c, kind);
    a->node = node;
    a->value = entry;
    a->count = entries;
}

/* Operand k as int8 bytes into *qx: as it arrives when arrives_q8, else
 * quantised with scale and zp into the scratch at *at (-1: its start), which
 * moves past it. */
static void quantised_operand(planner *P, int k, bool arrives_q8, double scale, int zp, int64_t *at, ir_arg *qx)
{
    if (arrives_q8 && !P->ctx->float_io) {
        *qx = (ir_arg){.kind = IR_ARG_VALUE, .node = P->n->src[k]};
        return;
    }
    if (*at < 0)
        *at = scratch_base(P, ir_ops[P->n->op].name);
    const int64_t count = ir_numel(operand_node(P, k));
    ir_call *c = int8_call(P, CG_K_quantize_u8);
    arg_operand(P, c, k);
    arg_bytes(c, *at, count);
    arg_size(c, count);
    next_arg(c, IR_ARG_FLOAT)->real = scale;
    arg_int(c, zp);
    *qx = (ir_arg){.kind = IR_ARG_BYTES, .node = IR_NONE, .value = *at, .count = (int)count};
    *at += count;
}

static void arg_copy(ir_call *c, const ir_arg *a) { *next_arg(c, a->kind) = *a; }

/* A dense or conv: the register-tiled GEMM on the packed weights; a conv's
 * receptive field follows the quantised input in the scratch. */
static void plan_quant_layer(planner *P)
{
    const ir_node *n = P->n;
    const ir_quant *q = n->quant;
    int64_t at = -1;
    ir_arg qx;
    quantised_operand(P, 0, q->in_q8, q->in_scale, q->in_zp, &at, &qx);
    if (at < 0 && n->op == IR_OP_conv)
        at = scratch_base(P, "conv");
    const bool dense = n->op == IR_OP_dense;
    ir_call *c = int8_call(P, dense ? CG_K_dense_q8_packed : CG_K_conv2d_q8_packed);
    arg_copy(c, &qx);
    if (!dense) arg_int(c, q->in_zp + 128);
    arg_node_constant(c, IR_ARG_QWEIGHTS, self_id(P), 0, 0);
    arg_node_constant(c, IR_ARG_REQUANT, self_id(P), 0, 0);
    arg_value(c, self_id(P));
    if (dense) {
        const ir_node *x = operand_node(P, 0);
        const int64_t in = x->shape[x->rank - 1];
        arg_size(c, ir_numel(x) / in);
        arg_size(c, in);
        arg_size(c, n->shape[n->rank - 1]);
        return;
    }
    const axrt_conv2d_params p = cg_conv_params(P->g, n);
    arg_bytes(c, at, (int64_t)axrt_conv2d_q8_scratch(&p));
    c->args[c->nargs - 1].name = "patch";   /* a region of the scratch, by that name */
    arg_conv_params(P, c, "params", operand_node(P, 0), n, operand_node(P, 1), &n->attrs, false);
}

/* axrt_pool2d_params of pool n, in a block of its own when own_block. */
static void arg_pool_params(planner *P, ir_call *c, bool own_block)
{
    const axrt_pool2d_params q = ir_pool2d_params(P->g, P->n);
    const int64_t p[14] = {q.n, q.h, q.w, q.c, q.oh, q.ow, q.kh, q.kw, q.stride_h, q.stride_w, q.pad_top,
                           q.pad_left, q.pad_bottom, q.pad_right};
    arg_array(P, c, IR_ARG_INTS, "params", "axrt_pool2d_params", p, 14);
    c->args[c->nargs - 1].own_block = own_block;
}

/* The one kernel of an int8 add, mean or mean-pool on qx (entry 0 of the
 * node's axrt_ew_q8); false for a rescale (ReLU, concat).  A global
 * mean-pool is the mean over the middle axis of [n, h w, c]. */
static bool quant_ew_kernel(planner *P, const ir_arg *qx)
{
    const ir_node *n = P->n, *x = operand_node(P, 0);
    const bool binary = n->op == IR_OP_add || n->op == IR_OP_mul;   /* a product: AXRT_Q8_MUL */
    const cg_kernel_id k = binary ? (ir_same_shape(x, n) && ir_same_shape(operand_node(P, 1), n)
                                  ? CG_K_add_q8 : CG_K_add_bcast_q8)
                           : n->op == IR_OP_globalmeanpool || n->op == IR_OP_mean ? CG_K_mean_q8
                           : n->op == IR_OP_meanpool ? CG_K_meanpool_q8
                                                     : CG_K_COUNT;
    if (k == CG_K_COUNT)
        return false;
    ir_call *c = int8_call(P, k);
    c->in_block = true;
    arg_copy(c, &qx[0]);
    if (k == CG_K_add_q8) {
        arg_copy(c, &qx[1]);
        arg_value(c, self_id(P));
        arg_size(c, ir_numel(n));
    } else if (binary) {
        int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK];
        cg_broadcast_strides(x, n, sa);
        cg_broadcast_strides(operand_node(P, 1), n, sb);
        arg_array(P, c, IR_ARG_INT64S, "a_strides", NULL, sa, n->rank);
        arg_copy(c, &qx[1]);
        arg_array(P, c, IR_ARG_INT64S, "b_strides", NULL, sb, n->rank);
        arg_value(c, self_id(P));
        arg_array(P, c, IR_ARG_INT64S, "shape", NULL, n->shape, n->rank);
        arg_int(c, n->rank);
    } else if (n->op == IR_OP_meanpool) {
        arg_value(c, self_id(P));
        arg_pool_params(P, c, true);
        const int count = n->quant->nwindow;
        int64_t *window = ax_alloc(arena_of(P), sizeof *window * (size_t)(count + 1));
        for (int i = 0; i < count; i++)
            window[i] = n->quant->window[i];
        arg_array(P, c, IR_ARG_INT32S, "window", NULL, window, count);
    } else {   /* [outer, axis, inner]: a global mean-pool's [n, h w, c] */
        const int axis = n->op == IR_OP_mean ? n->attrs.axis : 1;
        const int64_t len = n->op == IR_OP_mean ? x->shape[axis] : x->shape[1] * x->shape[2];
        const int64_t outer = product(x->shape, 0, axis);
        arg_value(c, self_id(P));
        arg_size(c, outer);
        arg_size(c, len);
        arg_size(c, ir_numel(x) / outer / len);
    }
    arg_node_constant(c, IR_ARG_EW, self_id(P), 0, n->op == IR_OP_concat ? n->quant->nin : 1);
    return true;
}

/* The one kernel of a sigmoid, tanh or softmax with a table (a model
 * imported from .tflite: ir_quant lookup or exp_table) on qx; false for
 * other nodes.  The table is a constant of the call, as TFLite's. */
static bool quant_table_kernel(planner *P, const ir_arg *qx)
{
    const ir_node *n = P->n;
    const ir_quant *q = n->quant;
    if (!q->lookup && !q->exp_table)
        return false;
    int64_t table[256];
    for (int v = 0; v < 256; v++) {
        uint32_t bits = 0;
        if (q->exp_table)
            memcpy(&bits, &q->exp_table[v], sizeof bits);
        table[v] = q->exp_table ? (int64_t)bits : q->lookup[v];
    }
    ir_call *c = int8_call(P, q->exp_table ? CG_K_softmax_q8 : CG_K_lookup_q8);
    arg_copy(c, qx);
    arg_value(c, self_id(P));
    if (q->exp_table) {
        const int64_t len = n->shape[n->rank - 1];
        arg_size(c, ir_numel(n) / len);
        arg_size(c, len);
        arg_array(P, c, IR_ARG_FLOATS, "exp_table", NULL, table, 256);
    } else {
        arg_size(c, ir_numel(n));
        arg_array(P, c, IR_ARG_INT32S, "table", NULL, table, 256);
    }
    arg_node_constant(c, IR_ARG_EW, self_id(P), 0, 1);
    return true;
}

/* An int8 add, concat, ReLU or mean (pool) (ir_quant with nin operands):
 * the runtime's elementwise int8 kernels (axrt.h axrt_ew_q8); a ReLU and
 * each part of a concat is a rescale into y's columns. */
static void plan_quant_ew(planner *P)
{
    const ir_node *n = P->n;
    const ir_quant *q = n->quant;
    ir_arg qx[16];
    if (q->nin > 16)
        ax_die("cg_plan: int8 %s %%%d has %d operands", ir_ops[n->op].name, self_id(P), q->nin);
    int64_t at = -1;
    for (int k = 0; k < q->nin; k++)
        quantised_operand(P, k, q->in_q8_mask >> k & 1, q->in_scales[k], q->in_zps[k], &at, &qx[k]);
    if (quant_table_kernel(P, qx) || quant_ew_kernel(P, qx))
        return;
    const bool concat = n->op == IR_OP_concat;
    const int axis = concat ? n->attrs.axis : 0;
    const int64_t inner = concat ? product(n->shape, axis + 1, n->rank) : ir_numel(n);
    int64_t offset = 0;
    for (int k = 0; k < (concat ? q->nin : 1); k++) {
        const int64_t row = concat ? operand_node(P, k)->shape[axis] * inner : inner;
        ir_call *c = int8_call(P, CG_K_rescale_q8);
        c->in_block = true;
        arg_copy(c, &qx[k]);
        arg_value(c, self_id(P));
        arg_size(c, concat ? product(n->shape, 0, axis) : 1);
        arg_size(c, row);
        arg_size(c, concat ? n->shape[axis] * inner : inner);
        arg_size(c, offset);
        arg_node_constant(c, IR_ARG_EW, self_id(P), k, concat ? q->nin : 1);
        offset += row;
    }
}

/* axrt_gather_u8 of the bytes of src into dst over y_shape by strides from
 * offset, in a block of its own. */
static void gather_u8_call(planner *P, const ir_arg *src, int dst, const int64_t *y_shape, const int64_t *strides,
                           int64_t offset, int rank)
{
    ir_call *c = int8_call(P, CG_K_gather_u8);
    c->in_block = c->new_block = true;
    arg_copy(c, src);
    arg_value(c, dst);
    arg_array(P, c, IR_ARG_INT64S, "y_shape", NULL, y_shape, rank);
    arg_array(P, c, IR_ARG_INT64S, "strides", NULL, strides, rank);
    arg_int64(c, offset);
    arg_int(c, rank);
}

/* An int8 max-pool, transpose, slice or chunk (ir_quant without weights):
 * bytes picked or moved, the operand quantised first unless it arrives so
 * (a chunk's always does: each result's columns gathered). */
static void plan_quant_moves(planner *P)
{
    const ir_node *n = P->n, *x = operand_node(P, 0);
    const int id = self_id(P);
    if (n->op == IR_OP_chunk) {
        const int axis = n->attrs.axis;
        const int64_t outer = product(n->shape, 0, axis), inner = product(n->shape, axis + 1, n->rank);
        const ir_arg src = {.kind = IR_ARG_VALUE, .node = n->src[0]};
        int64_t offset = 0;
        for (int k = 0; k < n->attrs.nresults; k++) {
            const int r = ir_result_node(P->g, id, k);
            if (r == IR_NONE)
                ax_die("cg_plan: %%%d chunk has no result %d", id, k);
            const int64_t shape[] = {outer, P->g->nodes[r].shape[axis] * inner}, strides[] = {n->shape[axis] * inner, 1};
            gather_u8_call(P, &src, r, shape, strides, offset, 2);
            offset += shape[1];
        }
        return;
    }
    int64_t at = -1;
    ir_arg qx;
    quantised_operand(P, 0, n->quant->in_q8, n->quant->in_scale, n->quant->in_zp, &at, &qx);
    int64_t strides[IR_MAX_RANK], offset = 0;
    if (n->op == IR_OP_maxpool) {
        ir_call *c = int8_call(P, CG_K_maxpool_u8);
        c->in_block = true;
        arg_copy(c, &qx);
        arg_value(c, id);
        arg_pool_params(P, c, false);
        return;
    }
    if (n->op == IR_OP_transpose)
        cg_transpose_strides(x, n, strides);
    else
        offset = ir_slice_strides(&n->attrs, x->shape, x->rank, strides);
    gather_u8_call(P, &qx, id, n->shape, strides, offset, n->rank);
}

static void plan_quant(planner *P)
{
    const ir_quant *q = P->n->quant;
    if (q->w)
        plan_quant_layer(P);
    else if (q->nin)
        plan_quant_ew(P);
    else
        plan_quant_moves(P);
    if (q->float_out && !P->ctx->float_io)
        plan_epilogue(P);
}
/* ---- end of int8 layers ---- */

/* A fused elementwise node: its loop program (cg_plan_loop.c). */
static void plan_fused(planner *P) { P->plan->loop = cg_plan_loop(P->g, self_id(P)); }

/* ---- training kernels (the step graph's, pass_grad) ---- */

/* dW of a conv: operand 0 dy (the forward's y), operand 1 its x. */
static void plan_conv_grad_weight(planner *P)
{
    ir_call *c = op_call(P, IR_OP_conv, "2d_grad_weight", P->n->dtype);
    arg_operand(P, c, 0);
    arg_operand(P, c, 1);
    arg_value(c, self_id(P));
    arg_conv_params(P, c, "params", operand_node(P, 1), operand_node(P, 0), P->n, &P->n->attrs, false);
}

/* dx of the pool attrs.of_op from dy (operand 0), dividing as the forward's
 * kernels do; the params are the forward's (x is shaped like n). */
static void plan_pool_grad(planner *P)
{
    const ir_node *n = P->n, *dy = operand_node(P, 0);
    const ir_attrs *at = &n->attrs;
    ir_call *c = named_call(P, ax_sprintf(arena_of(P), "axrt_pool2d_grad_%s", suffix_of(n->dtype)));
    arg_operand(P, c, 0);
    arg_operand(P, c, 1);
    arg_value(c, self_id(P));
    const int64_t p[14] = {n->shape[0], n->shape[1], n->shape[2], n->shape[3], dy->shape[1], dy->shape[2],
                           at->kernel[0], at->kernel[1], at->stride[0], at->stride[1], at->pad[0], at->pad[1],
                           at->pad[2], at->pad[3]};
    arg_array(P, c, IR_ARG_INTS, "params", "axrt_pool2d_params", p, 14);
    arg_int(c, at->of_op == IR_OP_maxpool);
    arg_int(c, at->pad[2] - at->ceil_extra[0]);
    arg_int(c, at->pad[3] - at->ceil_extra[1]);
    arg_int(c, !at->exclude_pad);
}

/* dx of a slice: dy scattered where the slice read (x shaped like n). */
static void plan_slice_grad(planner *P)
{
    const ir_node *n = P->n, *dy = operand_node(P, 0);
    int64_t strides[IR_MAX_RANK];
    const int64_t offset = ir_slice_strides(&n->attrs, n->shape, n->rank, strides);
    ir_call *c = named_call(P, ax_sprintf(arena_of(P), "axrt_scatter_strided_%s", suffix_of(n->dtype)));
    arg_operand(P, c, 0);
    arg_value(c, self_id(P));
    arg_size(c, ir_numel(n));
    arg_array(P, c, IR_ARG_INT64S, "dy_shape", NULL, dy->shape, dy->rank);
    arg_array(P, c, IR_ARG_INT64S, "strides", NULL, strides, dy->rank);
    arg_int64(c, offset);
    arg_int(c, dy->rank);
}

/* dy (operand 0) * f'(x) (operand 1): Float32 ReLU's the runtime's
 * vectorised kernel (no branch per element), every other a loop program
 * of the derivative (cg_plan_loop.c). */
static void plan_unary_grad(planner *P)
{
    const ir_node *n = P->n;
    if (n->attrs.of_op != IR_OP_relu || n->dtype != AXRT_F32) {
        P->plan->loop = cg_plan_derivative_loop(P->g, self_id(P));
        return;
    }
    ir_call *c = kernel_call(P, CG_K_relu_grad, n->dtype);
    arg_operand(P, c, 0);
    arg_operand(P, c, 1);
    arg_value(c, self_id(P));
    arg_size(c, ir_numel(n));
}

/* The [vocab, dim] table's gradient from the indices and dy (operand 1). */
static void plan_embedding_grad(planner *P)
{
    plan_embedding_call(P, op_call(P, IR_OP_embedding_grad, "", P->n->dtype), P->n);
}

/* Dropout with its counter (operand 1, Int64 [2]: seed, step; a training
 * graph's) draws its mask from it, stream attrs.index, probability alpha;
 * without one it is a copy. */
static void plan_dropout(planner *P)
{
    const ir_node *n = P->n;
    if (n->src[1] == IR_NONE) {
        plan_copy(P);
        return;
    }
    ir_call *c = op_call(P, IR_OP_dropout, "", n->dtype);
    arg_operand(P, c, 0);
    ir_arg *counter = next_arg(c, IR_ARG_INT64_VALUE);
    counter->node = n->src[1];
    arg_value(c, self_id(P));
    arg_size(c, ir_numel(n));
    arg_int64(c, n->attrs.index);
    next_arg(c, IR_ARG_DOUBLE)->real = n->attrs.alpha;
}

/* The sources and a producer's results: nothing to run (a chunk's one call
 * writes its results). */
#define plan_input NULL
#define plan_param NULL
#define plan_scalar NULL
#define plan_result NULL

/* The rule of each op, from ops.def's family column. */
typedef void plan_fn(planner *P);
static plan_fn *const plan_fns[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags) [IR_OP_##name] = plan_##family,
#include "ops.def"
#undef OP
};

const ir_plan *cg_plan_node(ir_graph *g, int id, const cg_plan_context *ctx)
{
    const ir_node *n = &g->nodes[id];
    plan_fn *rule = plan_fns[n->op];
    const bool moves_bytes = n->op == IR_OP_reshape || n->op == IR_OP_cast;   /* any dtype, int8 too */
    const bool int8 = n->quant && !moves_bytes && n->op != IR_OP_result;     /* a result: its chunk's */
    if ((!rule && !int8) || n->dead || ir_runs_in_reader(n))
        return NULL;
    ir_plan *plan = ax_alloc(g->ctx->arena, sizeof *plan);
    planner P = {.g = g, .n = n, .plan = plan, .capacity = 3, .ctx = ctx};
    plan->calls = ax_alloc(g->ctx->arena, sizeof *plan->calls * (size_t)P.capacity);
    if (int8) {
        plan_quant(&P);
        return plan;
    }
    rule(&P);
    plan_epilogue(&P);
    return plan;
}

void cg_plan_graph(ir_graph *g, bool blas)
{
    const cg_plan_context ctx = {.blas = blas, .pack_offset = -1};
    for (int id = 0; id < g->nnodes; id++)
        g->nodes[id].plan = cg_plan_node(g, id, &ctx);
}
