/* ir_dump.c — the text form of a graph printed by --emit=ir and compared by
 * golden tests, so it must be stable: one line per live node, operands as
 * %id (`_` for an absent optional operand), attributes only where they differ
 * from a fresh node's defaults, then the type, the arena placement and the
 * source location (file base name, so goldens do not depend on the
 * directory the compiler ran in). */
#include "ir.h"

#include <string.h>

static void put_int_tuple(ax_buf *out, const char *key, const int *v, int n)
{
    ax_buf_printf(out, " %s=(", key);
    for (int i = 0; i < n; i++)
        ax_buf_printf(out, "%s%d", i ? ", " : "", v[i]);
    ax_buf_puts(out, ")");
}

static void put_type(ax_buf *out, const ir_node *n)
{
    char shape[160];
    ax_buf_printf(out, "%s%s", ir_dtype_name(n->dtype),
                  ir_shape_str(n->shape, n->rank, shape, sizeof shape));
}

static void put_newshape(ax_buf *out, const ir_attrs *a)
{
    if (a->flatten && a->nnewshape == 0) {
        ax_buf_puts(out, " flatten");
        return;
    }
    ax_buf_puts(out, " shape=(");
    for (int i = 0; i < a->nnewshape; i++)
        ax_buf_printf(out, "%s%lld", i ? ", " : "", (long long)a->newshape[i]);
    ax_buf_puts(out, ")");
}

/* Kernel geometry of conv and the pools; stride/dilation/pad/groups only
 * when they are not the identity values a fresh node starts with. */
static void put_window_attrs(ax_buf *out, const ir_node *n)
{
    const ir_attrs *a = &n->attrs;
    put_int_tuple(out, "kernel", a->kernel, 2);
    if (a->stride[0] != 1 || a->stride[1] != 1)
        put_int_tuple(out, "stride", a->stride, 2);
    if (a->pad_same)
        ax_buf_puts(out, " pad=same");
    if (a->pad[0] || a->pad[1] || a->pad[2] || a->pad[3])
        put_int_tuple(out, a->pad_same ? "padding" : "pad", a->pad, 4);
    if (a->dilation[0] != 1 || a->dilation[1] != 1)
        put_int_tuple(out, "dilation", a->dilation, 2);
    if (a->groups != 1)
        ax_buf_printf(out, " groups=%d", a->groups);
    if (a->ceil)
        ax_buf_puts(out, " ceil=true");
    if (a->exclude_pad)
        ax_buf_puts(out, " count_include_pad=false");
    if (a->adaptive)
        ax_buf_puts(out, " adaptive=true");
}

/* Operand k of fused node n as %id, followed by its strides over n's dims,
 * @(s0, s1, ...), when they are not plain NumPy broadcasting (a transpose or
 * reshape read through). */
static void put_fused_operand(ax_buf *out, const ir_graph *g, const ir_node *n, int k)
{
    const ir_node *x = &g->nodes[n->src[k]];
    bool broadcast = x->rank <= n->rank;
    int64_t stride = 1;
    for (int d = n->rank - 1; d >= 0 && broadcast; d--) {
        const int xd = d - (n->rank - x->rank);
        const int64_t expected = (xd < 0 || x->shape[xd] == 1) ? 0 : stride;
        broadcast = (xd < 0 || x->shape[xd] == 1 || x->shape[xd] == n->shape[d]) &&
                    (n->shape[d] == 1 || n->attrs.strides[k][d] == expected);
        stride *= xd >= 0 ? x->shape[xd] : 1;
    }
    ax_buf_printf(out, "%%%d", n->src[k]);
    if (broadcast)
        return;
    ax_buf_puts(out, "@(");
    for (int d = 0; d < n->rank; d++)
        ax_buf_printf(out, "%s%lld", d ? ", " : "", (long long)n->attrs.strides[k][d]);
    ax_buf_puts(out, ")");
}

/* Step s of n's fused program as a nested expression over %ids; a step
 * read twice is printed twice, unless as_refs: then a step argument is
 * written $K (step K of the listing form below). */
static void put_fused_step(ax_buf *out, const ir_graph *g, const ir_node *n, int s, bool as_refs)
{
    const ir_fused_step *step = &n->attrs.steps[s];
    if (step->op == IR_OP_scalar) {
        ax_buf_printf(out, "%g", step->value);
        return;
    }
    const int nargs = ir_ops[step->op].kind == IR_BINARY ? 2 : 1;
    ax_buf_printf(out, "%s(", ir_ops[step->op].name);
    for (int a = 0; a < nargs; a++) {
        ax_buf_puts(out, a ? ", " : "");
        if (step->arg[a] >= 0 && as_refs && n->attrs.steps[step->arg[a]].op != IR_OP_scalar)
            ax_buf_printf(out, "$%d", step->arg[a]);
        else if (step->arg[a] >= 0)
            put_fused_step(out, g, n, step->arg[a], as_refs);
        else
            put_fused_operand(out, g, n, IR_FUSED_OPERAND_INDEX(step->arg[a]));
    }
    if (step->op == IR_OP_elu || step->op == IR_OP_leaky_relu)
        ax_buf_printf(out, ", alpha=%g", step->value);
    ax_buf_puts(out, ")");
}

/* A program whose steps share results can expand exponentially as one
 * nested expression (x2 = x1 .* x1, x3 = x2 .* x2, ...): beyond this many
 * printed steps it is written as a listing, "$0=... ; $1=mul($0, $0)". */
#define FUSED_EXPANSION_LIMIT 256

static bool fused_expands_too_far(const ir_node *n)
{
    double size[2 * IR_MAX_FUSED_SRC + 64 + 1];
    int nsteps = n->attrs.nsteps;
    if (nsteps > (int)(sizeof size / sizeof size[0]))
        return true;
    for (int s = 0; s < nsteps; s++) {
        const ir_fused_step *step = &n->attrs.steps[s];
        size[s] = 1;
        if (step->op == IR_OP_scalar)
            continue;
        for (int a = 0; a < (ir_ops[step->op].kind == IR_BINARY ? 2 : 1); a++)
            if (step->arg[a] >= 0 && step->arg[a] < s)
                size[s] += size[step->arg[a]];
    }
    return nsteps > 0 && size[nsteps - 1] > FUSED_EXPANSION_LIMIT;
}

static void put_fused_program(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    const int nsteps = n->attrs.nsteps;
    if (nsteps <= 0)
        return;
    if (!fused_expands_too_far(n)) {
        put_fused_step(out, g, n, nsteps - 1, false);
        return;
    }
    for (int s = 0, first = 1; s < nsteps; s++) {
        if (n->attrs.steps[s].op == IR_OP_scalar)
            continue;
        ax_buf_printf(out, "%s$%d=", first ? "" : " ; ", s);
        put_fused_step(out, g, n, s, true);
        first = 0;
    }
}

/* ---- attributes, one function per ops.def family --------------------------- */

typedef void put_attrs_fn(ax_buf *out, const ir_graph *g, const ir_node *n);

static void put_no_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)out, (void)g, (void)n;
}

static void put_input_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " %s", n->name ? n->name : "?");
}

static void put_param_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " \"%s\"", n->name ? n->name : "?");
}

static void put_scalar_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " %g", n->attrs.scalar);
}

static void put_unary_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    if (n->op == IR_OP_leaky_relu || n->op == IR_OP_elu)
        ax_buf_printf(out, " alpha=%g", n->attrs.alpha);
}

static void put_unary_grad_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " of=%s", ir_ops[n->attrs.of_op].name);
    if (n->attrs.of_op == IR_OP_leaky_relu || n->attrs.of_op == IR_OP_elu)
        ax_buf_printf(out, " alpha=%g", n->attrs.alpha);
}

static void put_axis_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " axis=%d", n->attrs.axis);
}

static void put_transpose_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    put_int_tuple(out, "perm", n->attrs.perm, n->attrs.nperm);
}

static void put_slice_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    const ir_attrs *a = &n->attrs;
    ax_buf_puts(out, " index=[");
    for (int d = 0; d < a->nslice; d++)
        ax_buf_printf(out, "%s%lld:%lld:%lld", d ? ", " : "", (long long)a->begin[d],
                      (long long)a->end[d], (long long)a->step[d]);
    ax_buf_puts(out, "]");
}

static void put_reshape_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    put_newshape(out, &n->attrs);
}

static void put_window(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    put_window_attrs(out, n);
}

static void put_eps_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " eps=%g", n->attrs.eps);
}

static void put_rnn_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    if (n->attrs.reverse)
        ax_buf_printf(out, " reverse=true");
    if (n->attrs.cell)
        ax_buf_printf(out, " cell=true");
    if (n->op == IR_OP_gru && !n->attrs.linear_before_reset)
        ax_buf_printf(out, " linear_before_reset=false");
}

static void put_groups_eps_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " groups=%d eps=%g", n->attrs.groups, n->attrs.eps);
}

static void put_conv_transpose_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    put_window_attrs(out, n);
    if (n->attrs.out_pad[0] || n->attrs.out_pad[1])
        put_int_tuple(out, "output_padding", n->attrs.out_pad, 2);
}

static void put_upsample_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    static const char *const modes[] = {"nearest", "bilinear", "bilinear_align_corners"};
    (void)g;
    ax_buf_printf(out, " scale=(%d, %d) mode=%s", n->attrs.scale[0], n->attrs.scale[1],
                  modes[n->attrs.mode]);
}

static void put_mha_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " heads=%d%s", n->attrs.heads, n->attrs.causal ? " causal" : "");
}

static void put_chunk_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " axis=%d parts=%d results=%d", n->attrs.axis, n->attrs.parts,
                  n->attrs.nresults);
}

static void put_result_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " index=%d", n->attrs.index);
}

static void put_fused_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    ax_buf_puts(out, " [");
    put_fused_program(out, g, n);
    ax_buf_puts(out, "]");
}

/* Families whose attributes print alike share a function. */
#define put_cast_attrs put_no_attrs
#define put_binary_attrs put_no_attrs
#define put_reduce_attrs put_axis_attrs
#define put_argmax_attrs put_axis_attrs
#define put_softmax_attrs put_axis_attrs
#define put_concat_attrs put_axis_attrs
#define put_matmul_attrs put_no_attrs
#define put_dense_attrs put_no_attrs
#define put_layernorm_attrs put_eps_attrs
#define put_groupnorm_attrs put_groups_eps_attrs
#define put_batchnorm_attrs put_eps_attrs
#define put_conv_attrs put_window
#define put_pool_attrs put_window
#define put_globalpool_attrs put_no_attrs
#define put_embedding_attrs put_no_attrs
#define put_conv_grad_weight_attrs put_window
#define put_slice_grad_attrs put_slice_attrs
#define put_embedding_grad_attrs put_no_attrs

static void put_pool_grad_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " of=%s", ir_ops[n->attrs.of_op].name);
    put_window_attrs(out, n);
}

static void put_dropout_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    (void)g;
    ax_buf_printf(out, " p=%g stream=%d", n->attrs.alpha, n->attrs.index);
}

static put_attrs_fn *const put_family_attrs[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags) \
    [IR_OP_##name] = put_##family##_attrs,
#include "ops.def"
#undef OP
};

/* The op's own attributes, then a fused epilogue (residual, act). */
static void put_attrs(ax_buf *out, const ir_graph *g, const ir_node *n)
{
    const ir_attrs *a = &n->attrs;
    put_family_attrs[n->op](out, g, n);
    if (a->residual != IR_NONE && a->residual < n->nsrc)
        ax_buf_printf(out, " residual=%%%d", n->src[a->residual]);
    if (a->act != IR_NONE && (unsigned)a->act < IR_OP_COUNT)
        ax_buf_printf(out, " act=%s", ir_ops[a->act].name);
    if ((a->act == IR_OP_leaky_relu || a->act == IR_OP_elu) && n->op != (ir_op)a->act)
        ax_buf_printf(out, " alpha=%g", a->alpha);
}

/* The op's operands (sources have none); a residual operand is shown as
 * residual=%id. */
static void put_operands(ax_buf *out, const ir_node *n)
{
    for (int i = 0; i < n->nsrc && i != n->attrs.residual; i++) {
        ax_buf_puts(out, i ? ", " : " ");
        if (n->src[i] == IR_NONE)
            ax_buf_puts(out, "_");
        else
            ax_buf_printf(out, "%%%d", n->src[i]);
    }
}

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

/* The statements of a training step's plan sp that run after node id. */
static void put_after(ax_buf *out, int id, const ir_step_plan *sp)
{
    if (sp) {
        ir_step_list_print(&sp->after[id], "step", out);
        ir_step_list_print(sp->after_split ? &sp->after_split[id] : NULL, "split", out);
    }
}

/* Node id's line and its plan; with a training step's plan sp, a node an
 * update computes itself marked so instead, then the statements after it. */
static void put_node(ax_buf *out, const ir_graph *g, int id, const ir_step_plan *sp)
{
    const ir_node *n = &g->nodes[id];
    ax_buf_printf(out, "  %%%d = %s", id, ir_ops[n->op].name);
    put_operands(out, n);
    put_attrs(out, g, n);
    if (n->name && n->op != IR_OP_input && n->op != IR_OP_param)
        ax_buf_printf(out, " layer=\"%s\"", n->name);
    ax_buf_puts(out, " : ");
    put_type(out, n);
    if (n->op == IR_OP_param && n->layout != IR_LAYOUT_PLAIN)
        ax_buf_printf(out, " layout=%s", ir_layout_names[n->layout]);
    if (n->offset >= 0)
        ax_buf_printf(out, " offset=%lld", (long long)n->offset);
    if (n->rows_fused)
        ax_buf_puts(out, " rows_fused");
    if (n->scale_folded)
        ax_buf_puts(out, " scale_folded");
    if (n->inplace_of != IR_NONE && ir_ops[n->op].inplace != IR_INPLACE_ALIAS)
        ax_buf_printf(out, " inplace=%%%d", n->src[n->inplace_of]);
    if (n->scratch_offset >= 0)
        ax_buf_printf(out, " scratch=%lld", (long long)n->scratch_offset);
    if (n->loc.line > 0)
        ax_buf_printf(out, "  @%s:%d:%d", g->ctx && g->ctx->path ? base_name(g->ctx->path) : "",
                      n->loc.line, n->loc.col);
    ax_buf_puts(out, "\n");
    if (sp && sp->fused[id])   /* the split step, no update there, computes it on its own */
        ax_buf_puts(out, sp->after_split ? "      computed by its update below (the split step: these calls)\n"
                                         : "      computed by its update below\n");
    if (n->plan && !(sp && sp->fused[id] && !sp->after_split))   /* the runtime calls the back end chose */
        ir_plan_print(n->plan, out);                              /* (codegen/cg_plan.c) */
    put_after(out, id, sp);
}

static void put_header(ax_buf *out, const ir_graph *g)
{
    ax_buf_printf(out, "model %s(", g->name ? g->name : "?");
    for (int i = 0; i < g->ninputs; i++) {
        const ir_node *in = &g->nodes[g->inputs[i]];
        ax_buf_printf(out, "%s%s: ", i ? ", " : "", in->name ? in->name : "?");
        put_type(out, in);
    }
    ax_buf_printf(out, ") dtype=%s arena=%zu\n", ir_dtype_name(g->dtype), g->arena_bytes);
}

static void put_return(ax_buf *out, const ir_graph *g)
{
    ax_buf_puts(out, "  return");
    for (int i = 0; i < g->noutputs; i++) {
        const char *name = g->output_names[i];
        ax_buf_puts(out, i ? ", " : " ");
        if (name)
            ax_buf_printf(out, "%s = %%%d", name, g->outputs[i]);
        else
            ax_buf_printf(out, "out%d = %%%d", i, g->outputs[i]);
    }
    ax_buf_puts(out, "\n");
}

void ir_dump_step(const ir_graph *g, const ir_step_plan *sp, ax_buf *out)
{
    put_header(out, g);
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead)
            put_node(out, g, id, sp);
        else   /* as the C target runs them: after every node id, live or not */
            put_after(out, id, sp);
    put_return(out, g);
    if (sp) {
        ir_step_list_print(&sp->apply, "apply", out);
        ir_step_list_print(&sp->init, "init", out);
    }
}

void ir_dump(const ir_graph *g, ax_buf *out) { ir_dump_step(g, NULL, out); }
