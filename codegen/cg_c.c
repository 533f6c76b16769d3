/* cg_c.c — the portable C99 backend (docs/cli.md#generated-c).
 *
 * Emits, for fully planned graphs, a header (arena size, forward()
 * prototype, model descriptor) and a source file that embeds every
 * parameter as static const little-endian bytes and calls one libaxrt kernel
 * per node with every size a literal.  Where each value lives:
 *   input      the forward() argument
 *   param      <model>_p<id>.values (a string-initialised union: compilers
 *              ingest multi-megabyte string literals far faster than
 *              initialiser lists)
 *   scalar     static const <model>_s<id>
 *   computed   the arena at node->offset, or, for a graph output that is not
 *              in the arena, the caller's output buffer; a reshape left out
 *              of the arena shares its operand's storage.
 * Outputs whose storage is not their own buffer are copied at the end. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cg_c_internal.h"
#include "cg_target.h"
#include "ir_interp.h"
#include "ir_names.h"

/* ---- names -------------------------------------------------------------- */

/* The names an argument of model g cannot take: the reserved ones
 * (ir_names.h), those already given to an earlier argument, and those
 * starting with the model's own symbol prefix (NAME_p3 is a constant the
 * body reads; an argument of that name would hide it). */
typedef struct argument_names {
    const ir_graph *g;
    const char **taken;
    int ntaken;
} argument_names;

static bool argument_clash(const char *id, const void *user)
{
    const argument_names *an = user;
    if (ir_c_name_reserved(id))
        return true;
    for (int i = 0; i < an->ntaken; i++)
        if (!strcmp(id, an->taken[i]))
            return true;
    return false;
}

static const char *c_identifier(argument_names *an, const char *name)
{
    const char *id = ir_identifier(an->g->ctx->arena, name, "v", an->g->name, argument_clash, an);
    an->taken[an->ntaken++] = id;
    return id;
}

/* forward()'s parameter names: inputs, then outputs, all distinct. */
static void name_arguments(emitter *em)
{
    cg_argument_names(em->g, &em->input_names, &em->output_names);
}

void cg_argument_names(ir_graph *g, const char ***inputs, const char ***outputs)
{
    ax_arena *a = g->ctx->arena;
    argument_names an = {g, ax_alloc(a, sizeof *an.taken * (size_t)(g->ninputs + g->noutputs + 1)), 0};
    const char **in = ax_alloc(a, sizeof *in * (size_t)(g->ninputs + 1));
    const char **out = ax_alloc(a, sizeof *out * (size_t)(g->noutputs + 1));
    for (int i = 0; i < g->ninputs; i++) {
        const char *name = g->nodes[g->inputs[i]].name;
        in[i] = c_identifier(&an, name ? name : "x");
    }
    for (int i = 0; i < g->noutputs; i++)
        out[i] = c_identifier(&an, g->output_names[i] ? g->output_names[i] : "y");
    *inputs = in;
    *outputs = out;
}

/* text with every character that could end a C comment or string, form a
 * trigraph or splice a line replaced by '_': safe in both. */
static const char *literal_text(ax_arena *a, const char *text)
{
    char *s = ax_strdup(a, text ? text : "");
    for (char *c = s; *c; c++)
        if (!isprint((unsigned char)*c) || strchr("*?\\\"", *c))
            *c = '_';
    return s;
}

static const char *shape_text(ax_arena *a, const ir_node *n)
{
    char buf[256];
    return ax_strdup(a, ir_shape_str(n->shape, n->rank, buf, sizeof buf));
}

/* ---- parameters ---------------------------------------------------------- */

static void emit_param_data(emitter *em, int id)
{
    const ir_node *n = node_at(em, id);
    const size_t count = cg_packed_count(n), esize = axrt_dtype_size(n->dtype);
    const ir_layout kind = (ir_layout)n->layout;
    if (!n->data)
        ax_die("cg_c: parameter %s has no data", n->name ? n->name : "?");
    ax_buf_printf(em->out, "/* %s %s %s%s */\n", literal_text(arena_of(em), n->name),
                  ir_dtype_name(n->dtype), shape_text(arena_of(em), n),
                  kind == IR_LAYOUT_PLAIN      ? ""
                  : kind == IR_LAYOUT_WINOGRAD  ? ", Winograd F(4x4,3x3)-transformed, in AXRT_PANEL-wide panels"
                  : kind == IR_LAYOUT_WINOGRAD2 ? ", Winograd F(2x2,3x3)-transformed, in AXRT_PANEL-wide panels"
                                               : ", packed in AXRT_PANEL-wide panels");
    ax_buf_printf(em->out,
                  "static const union { unsigned char bytes[%zu + 1]; %s values[%zu]; } %s_p%d AXC_WEIGHT_ALIGN = {\n",
                  count * esize, ctype(n->dtype), count, cgc_prefix(em), id);
    const void *data = kind == IR_LAYOUT_PLAIN ? n->data : (const void *)cg_packed_data(arena_of(em), n);
    cg_bytes_literal(em->out, data, count, esize);
    ax_buf_puts(em->out, "};\n");
}

static void emit_constants(emitter *em)
{
    for (int id = 0; id < em->g->nnodes; id++) {
        const ir_node *n = node_at(em, id);
        if (n->dead)
            continue;
        if (n->quant && n->quant->w)
            cgc_emit_quant_constants(em, id);
        if (n->op == IR_OP_param && em->body && (em->body->state_const || n->derived) && cgc_state_offset(em, id) >= 0)
            continue;   /* read from the state only (a derived one: the state's header) */
        if (n->op == IR_OP_param && !cg_param_only_quantised(em->g, id))
            emit_param_data(em, id);
        else if (n->op == IR_OP_scalar)
            ax_buf_printf(em->out, "static const %s %s_s%d = %s;\n", ctype(n->dtype),
                          cgc_prefix(em), id, cgc_real_literal(em, n->dtype, n->attrs.scalar));
    }
}

/* ---- a node's kernel-call plan (ir_plan.h, chosen by cg_plan.c) as C ----- */

/* The plan of node id: the one cg_select recorded, or, in a training
 * step's body (whose weights come from the state), cg_plan_train's. */
static const ir_plan *plan_of(const emitter *em, int id)
{
    if (em->body)
        return node_at(em, id)->plan;
    const cg_plan_context ctx = {.blas = em->blas, .pack_offset = -1};
    return node_at(em, id)->plan ? node_at(em, id)->plan : cg_plan_node(em->g, id, &ctx);
}

static const char *const act_names[] = {"AXRT_ACT_NONE", "AXRT_ACT_RELU", "AXRT_ACT_RELU6", "AXRT_ACT_GELU",
                                        "AXRT_ACT_SWISH", "AXRT_ACT_HARDSWISH"};
_Static_assert(sizeof act_names / sizeof act_names[0] == AXRT_ACT_HARDSWISH + 1, "act_names follows axrt_act");

/* Argument a of a call of node n's plan as a C expression. */
static const char *plan_arg_text(const emitter *em, const ir_node *n, const ir_arg *a)
{
    ax_arena *ar = arena_of(em);
    switch (a->kind) {
    case IR_ARG_VALUE: return a->node == IR_NONE ? "NULL" : cgc_storage(em, a->node);
    case IR_ARG_ARENA:
        return ax_sprintf(ar, "(%s *)((unsigned char *)arena + %lld)", ctype(a->dtype), (long long)a->value);
    case IR_ARG_SCALAR:
        if (node_at(em, a->node)->op == IR_OP_scalar)
            return ax_sprintf(ar, "%s_s%d", cgc_prefix(em), a->node);
        return ax_sprintf(ar, "(%s)[0]", cgc_storage(em, a->node));
    case IR_ARG_SIZE:
    case IR_ARG_INT64:
    case IR_ARG_INT: return ax_sprintf(ar, "%lld", (long long)a->value);
    case IR_ARG_ACT: return act_names[a->value];
    case IR_ARG_DTYPE: return ir_dtypes[a->dtype].enum_name;
    case IR_ARG_REAL: return cgc_real_literal(em, n->dtype, a->real);
    case IR_ARG_INTS: return a->type ? ax_sprintf(ar, "&%s", a->name) : a->name;
    case IR_ARG_INT64S:
    case IR_ARG_INT32S:
    case IR_ARG_SIZES:
    case IR_ARG_FLOATS:
    case IR_ARG_POINTERS: return a->name;
    case IR_ARG_BYTES: return ax_sprintf(ar, "(uint8_t *)((unsigned char *)arena + %lld)", (long long)a->value);
    case IR_ARG_FLOAT: return ax_sprintf(ar, "%.8ef", (double)(float)a->real);   /* reads back exactly */
    case IR_ARG_QWEIGHTS: return ax_sprintf(ar, "%s_q%d_w.values", em->g->name, a->node);
    case IR_ARG_REQUANT: return ax_sprintf(ar, "&%s_q%d_rq", em->g->name, a->node);
    case IR_ARG_EW: return ax_sprintf(ar, "&ew[%lld]", (long long)a->value);
    case IR_ARG_INT64_VALUE: return ax_sprintf(ar, "(const int64_t *)(const void *)%s", cgc_storage(em, a->node));
    case IR_ARG_DOUBLE: return cgc_real_text(ar, "double", a->real);
    case IR_ARG_STATE: case IR_ARG_STATE_BYTES: case IR_ARG_EMBEDDED: case IR_ARG_OPTIM: case IR_ARG_LOCAL:
    case IR_ARG_GRADS_IN: case IR_ARG_GRADS_OUT: break;   /* a training step's own (cg_c_train.c) */
    }
    ax_die("cg_c: bad plan argument");
}

/* An int8 node's axrt_ew_q8 table (ir_quant.ew), as `ew`. */
static void emit_ew_table(emitter *em, const ir_arg *a)
{
    ax_buf_puts(em->out, "        static const axrt_ew_q8 ew[] = {");
    for (int k = 0; k < a->count; k++) {
        const axrt_ew_q8 *e = &node_at(em, a->node)->quant->ew[k];
        ax_buf_printf(em->out, "%s\n            {{%d, %d}, {%d, %d}, {%d, %d}, %d, %d, %d, %d, %d, %d, %.8ef, %d}",
                      k ? "," : "", e->zp[0], e->zp[1], e->mult[0], e->mult[1], e->shift[0], e->shift[1], e->left,
                      e->out_mult, e->out_shift, e->out_zp, e->lo, e->hi, (double)e->scale, e->flags);
    }
    ax_buf_puts(em->out, "};\n");
}

static bool is_constant(const ir_arg *a)
{
    return a->kind == IR_ARG_INTS || a->kind == IR_ARG_INT64S || a->kind == IR_ARG_INT32S || a->kind == IR_ARG_EW ||
           a->kind == IR_ARG_SIZES || a->kind == IR_ARG_POINTERS || a->kind == IR_ARG_FLOATS;
}

/* Whether argument i of call c (of calls [from, ...)) names a constant an
 * earlier argument of the block declared. */
static bool declared_before(const ir_plan *p, int from, int c, int i)
{
    const ir_arg *a = &p->calls[c].args[i];
    for (int e = from; e <= c; e++)
        for (int j = 0; j < (e == c ? i : p->calls[e].nargs); j++) {
            const ir_arg *b = &p->calls[e].args[j];
            if (a->kind == IR_ARG_EW ? b->kind == IR_ARG_EW : b->name && is_constant(b) && !strcmp(b->name, a->name))
                return true;
        }
    return false;
}

/* Element k of constant array a as C: a float's bits as its literal (reads back exactly). */
static const char *constant_text(const emitter *em, const ir_arg *a, int k)
{
    if (a->kind != IR_ARG_FLOATS)
        return ax_sprintf(arena_of(em), "%lld", (long long)a->values[k]);
    const uint32_t bits = (uint32_t)a->values[k];
    float f;
    memcpy(&f, &bits, sizeof f);
    return ax_sprintf(arena_of(em), "%.8ef", (double)f);
}

static void declare_constant(emitter *em, const ir_arg *a)
{
    static const char *const element[] = {[IR_ARG_INTS] = "int", [IR_ARG_INT64S] = "int64_t",
                                          [IR_ARG_INT32S] = "int32_t", [IR_ARG_SIZES] = "size_t",
                                          [IR_ARG_FLOATS] = "float"};
    if (a->kind == IR_ARG_EW) {
        emit_ew_table(em, a);
        return;
    }
    if (a->kind == IR_ARG_POINTERS) {   /* the nodes' storage: a local array */
        ax_buf_printf(em->out, "        %s *const %s[%d] = {", ctype(a->dtype), a->name, a->count);
        for (int k = 0; k < a->count; k++)
            ax_buf_printf(em->out, "%s%s", k ? ", " : "", cgc_storage(em, (int)a->values[k]));
        ax_buf_puts(em->out, "};\n");
        return;
    }
    if (a->type)
        ax_buf_printf(em->out, "        static const %s %s = {", a->type, a->name);
    else
        ax_buf_printf(em->out, "        static const %s %s[%d] = {", element[a->kind], a->name, a->count);
    for (int k = 0; k < a->count; k++)
        ax_buf_printf(em->out, "%s%s", k ? ", " : "", constant_text(em, a, k));
    ax_buf_puts(em->out, "};\n");
}

/* The constants of calls [from, to) that they read by address, each
 * declared once in the block that holds the calls: an int8 node's ew table
 * first, then the others in argument order, then the arrays of pointers,
 * then those in an inner block of their own (own_block).  Returns the
 * inner blocks opened. */
static int emit_plan_constants(emitter *em, const ir_plan *p, int from, int to)
{
    int inner = 0;
    for (int round = 0; round < 4; round++)
        for (int c = from; c < to; c++)
            for (int i = 0; i < p->calls[c].nargs; i++) {
                const ir_arg *a = &p->calls[c].args[i];
                const int round_of = a->kind == IR_ARG_EW ? 0 : a->own_block ? 3 : a->kind == IR_ARG_POINTERS ? 2 : 1;
                if (!is_constant(a) || round_of != round || declared_before(p, from, c, i))
                    continue;
                if (a->own_block) {
                    ax_buf_puts(em->out, "    {\n");
                    inner++;
                }
                declare_constant(em, a);
            }
    return inner;
}

static void emit_plan_call(emitter *em, const ir_node *n, const ir_call *c)
{
    const char *indent = c->in_block ? "        " : "    ";
    if (c->unless_aliased && !strcmp(plan_arg_text(em, n, &c->args[0]), plan_arg_text(em, n, &c->args[1])))
        return;
    ax_buf_printf(em->out, "%s%s%s(", indent, c->status ? "status = " : "", c->kernel);
    for (int i = 0; i < c->nargs; i++)
        ax_buf_printf(em->out, "%s%s", !i ? "" : i == c->wrap ? ",\n                  " : ", ",
                      plan_arg_text(em, n, &c->args[i]));
    ax_buf_puts(em->out, ");\n");
    if (c->status)
        ax_buf_printf(em->out, "    if (status != 0)\n        return %s;\n",
                      em->body && em->body->fail_return ? em->body->fail_return : "status");
}

/* The plan's calls; each run of in_block calls (up to one that starts a
 * new_block) in a block with the constants they read. */
static void emit_plan(emitter *em, const ir_node *n, const ir_plan *p)
{
    if (p->loop)
        cgc_emit_loop(em, p->loop);
    for (int c = 0; c < p->ncalls;) {
        int end = c + 1, blocks = 0;
        if (p->calls[c].in_block) {
            while (end < p->ncalls && p->calls[end].in_block && !p->calls[end].new_block)
                end++;
            ax_buf_puts(em->out, "    {\n");
            blocks = 1 + emit_plan_constants(em, p, c, end);
        }
        for (int k = c; k < end; k++)
            emit_plan_call(em, n, &p->calls[k]);
        while (blocks--)
            ax_buf_puts(em->out, "    }\n");
        c = end;
    }
}

/* memcpy of n's bytes unless source and destination are the same storage
 * (an output's copy). */
static void emit_copy(emitter *em, const ir_node *n, const char *from, const char *to)
{
    if (strcmp(from, to) != 0)
        ax_buf_printf(em->out, "    memcpy(%s, %s, %zu);\n", to, from, ir_value_bytes(n));
}

/* ---- forward() and the descriptor ----------------------------------------- */

/* ---- per-layer profile (axc --profile, docs/cli.md#seeing-inside-a-model) -------------------- */

/* The layer as the user wrote it; nodes a pass made have none: op%id. */
const char *cg_layer_name(const ir_graph *g, int id)
{
    const ir_node *n = &g->nodes[id];
    return n->name ? literal_text(g->ctx->arena, n->name)
                   : ax_sprintf(g->ctx->arena, "%s%%%d", ir_ops[n->op].name, id);
}

/* "dense+residual+relu", "fused(exp,add)": the op and what is fused in. */
const char *cg_layer_op(const ir_graph *g, const ir_node *n)
{
    const bool fused = n->op == IR_OP_fused_elementwise;
    ax_buf b = {0};
    /* the rows_fused operands computed inside it (cg_c_fuse_rows), innermost first */
    const int inner = n->nsrc && n->src[0] != IR_NONE && g->nodes[n->src[0]].rows_fused ? n->src[0] : IR_NONE;
    if (inner != IR_NONE && g->nodes[inner].nsrc && g->nodes[g->nodes[inner].src[0]].rows_fused)
        ax_buf_puts(&b, "expand+depthwise+");
    else if (inner != IR_NONE)
        ax_buf_puts(&b, "expand+");
    ax_buf_puts(&b, fused ? "fused(" : ir_ops[n->op].name);
    for (int s = 0; fused && s < n->attrs.nsteps; s++) {
        const int op = n->attrs.steps[s].op;
        ax_buf_printf(&b, "%s%s", s ? "," : "", op == IR_OP_scalar ? "const" : ir_ops[op].name);
    }
    ax_buf_puts(&b, fused ? ")" : "");
    if (n->nsrc && n->src[0] != IR_NONE && g->nodes[n->src[0]].scale_folded)
        ax_buf_puts(&b, "+scale");   /* the input's scale, folded into the weight */
    if (n->attrs.residual != IR_NONE)
        ax_buf_puts(&b, "+residual");
    if (n->attrs.act != IR_NONE)
        ax_buf_printf(&b, "+%s", ir_ops[n->attrs.act].name);
    const char *text = ax_strdup(g->ctx->arena, b.data);
    ax_buf_free(&b);
    return text;
}

/* A layer's FLOPs, those of a rows_fused operand computed inside it included. */
static double layer_flops(const ir_graph *g, const ir_node *n)
{
    double flops = ir_node_flops(g, n);
    for (int at = n->nsrc ? n->src[0] : IR_NONE; at != IR_NONE && g->nodes[at].rows_fused;
         at = g->nodes[at].nsrc ? g->nodes[at].src[0] : IR_NONE)
        flops += ir_node_flops(g, &g->nodes[at]);
    return flops;
}

bool cg_is_profiled(const ir_node *n)
{
    return !n->dead && ir_ops[n->op].kind != IR_SOURCE && !ir_runs_in_reader(n);
}

int cg_profiled_layers(const ir_graph *g)
{
    int count = 0;
    for (int id = 0; id < g->nnodes; id++)
        count += cg_is_profiled(&g->nodes[id]);
    return count;
}

/* The clock declaration (with a weak POSIX default) once per file. */
static void emit_profile_clock(ax_buf *c)
{
    ax_buf_puts(c, "\n/* The application's clock for per-layer profiles (any tick unit); POSIX\n"
                   "   hosts get a weak default in nanoseconds. */\n"
                   "uint64_t axc_profile_clock(void);\n"
                   "#if defined(__unix__) && defined(__GNUC__)\n#include <time.h>\n"
                   "__attribute__((weak)) uint64_t axc_profile_clock(void)\n{\n"
                   "    struct timespec ts;\n    clock_gettime(CLOCK_MONOTONIC, &ts);\n"
                   "    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;\n}\n#endif\n");
}

/* <name>_profile[]: one entry per profiled node, in execution order. */
static void emit_profile_table(emitter *em)
{
    const ir_graph *g = em->g;
    const int count = cg_profiled_layers(g);
    ax_buf_printf(em->out, "\naxrt_layer_profile %s_profile[%d] = {\n", g->name, count ? count : 1);
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (!cg_is_profiled(n))
            continue;
        const char *layer = cg_layer_name(g, id);
        ax_buf_printf(em->out, "    {\"%s\", \"%s\", {\"%s\", %s, %d, {", layer, cg_layer_op(g, n), layer,
                      ir_dtypes[n->dtype].enum_name, n->rank);
        for (int d = 0; d < n->rank; d++)
            ax_buf_printf(em->out, "%s%lld", d ? ", " : "", (long long)n->shape[d]);
        ax_buf_printf(em->out, "%s}}, %s, %s, 0, 0},\n", n->rank ? "" : "0",
                      cgc_real_text(arena_of(em), "double", layer_flops(g, n)),
                      cgc_real_text(arena_of(em), "double", ir_node_bytes(g, n)));
    }
    ax_buf_printf(em->out, "};\naxrt_layer_hook %s_layer_hook = 0;\n", g->name);
}

static void emit_profile_begin(emitter *em)
{
    if (em->profile)
        ax_buf_puts(em->out, "    profile_t0 = axc_profile_clock();\n");
}

/* Adds the layer's ticks, then hands its output (NULL for a multi-result
 * producer) to the hook, if any. */
static void emit_profile_end(emitter *em, const char *y)
{
    if (!em->profile)
        return;
    const char *name = em->g->name;
    const int k = em->nlayers++;
    ax_buf_printf(em->out,
                  "    %s_profile[%d].ticks += axc_profile_clock() - profile_t0;\n"
                  "    %s_profile[%d].calls++;\n"
                  "    if (%s_layer_hook)\n        %s_layer_hook(%d, &%s_profile[%d], %s);\n",
                  name, k, name, k, name, name, k, name, k, y);
}

static void emit_node(emitter *em, int id)
{
    const ir_node *n = node_at(em, id);
    ax_buf_printf(em->out, "    /* %%%d %s", id, ir_ops[n->op].name);
    if (n->name)
        ax_buf_printf(em->out, " \"%s\"", literal_text(arena_of(em), n->name));
    if (n->loc.line > 0)
        ax_buf_printf(em->out, " %s:%d:%d", literal_text(arena_of(em), em->source_name),
                      n->loc.line, n->loc.col);
    ax_buf_puts(em->out, " */\n");
    if (ir_runs_in_reader(n))   /* computed inside its reader */
        return;
    const char *y = ir_has_results(n->op) ? "" : cgc_storage(em, id);
    emit_profile_begin(em);
    const ir_plan *plan = plan_of(em, id);
    if (plan)
        emit_plan(em, n, plan);
    else if (n->op != IR_OP_result)   /* a result: its chunk's call wrote it; every other op has a rule */
        ax_die("cg_c: %s %%%d has no kernel-call plan", ir_ops[n->op].name, id);
    emit_profile_end(em, *y ? y : "0"); /* a producer's results are layers of their own */
}

/* "int NAME_forward(const float *x, float *y, void *arena)" */
static void emit_signature(emitter *em, ax_buf *out)
{
    ax_buf_printf(out, "int %s_forward(", em->g->name);
    for (int i = 0; i < em->g->ninputs; i++)
        ax_buf_printf(out, "const %s *%s, ", ctype(node_at(em, em->g->inputs[i])->dtype),
                      em->input_names[i]);
    for (int i = 0; i < em->g->noutputs; i++)
        ax_buf_printf(out, "%s *%s, ", ctype(node_at(em, em->g->outputs[i])->dtype),
                      em->output_names[i]);
    ax_buf_puts(out, "void *arena)");
}

static bool uses_status(const emitter *em)
{
    for (int id = 0; id < em->g->nnodes; id++)
        if (!em->g->nodes[id].dead &&
            (em->g->nodes[id].op == IR_OP_embedding || em->g->nodes[id].op == IR_OP_embedding_grad))
            return true;
    return false;
}

/* Outputs whose storage is not their own buffer (an input, a param, a
 * scalar, an earlier output, an arena buffer) get copied there. */
static void emit_output_copies(emitter *em)
{
    for (int i = 0; i < em->g->noutputs; i++) {
        const int id = em->g->outputs[i];
        const char *from = cgc_storage(em, id);
        if (strcmp(from, em->output_names[i]) != 0) {
            ax_buf_printf(em->out, "    /* output %s */\n", em->output_names[i]);
            emit_copy(em, node_at(em, id), from, em->output_names[i]);
        }
    }
}

static void emit_forward(emitter *em)
{
    const char *name = em->g->name;
    const size_t arena_size = em->g->arena_bytes ? em->g->arena_bytes : 1;
    if (em->profile)
        emit_profile_table(em);
    ax_buf_printf(em->out,
                  "\n#if defined(__GNUC__)\n"
                  "static unsigned char %s_static_arena[%zu] __attribute__((aligned(64)));\n"
                  "#else\nstatic unsigned char %s_static_arena[%zu];\n#endif\n\n",
                  name, arena_size, name, arena_size);
    emit_signature(em, em->out);
    ax_buf_puts(em->out, "\n{\n");
    if (uses_status(em))
        ax_buf_puts(em->out, "    int status;\n");
    if (em->profile)
        ax_buf_puts(em->out, "    uint64_t profile_t0;\n");
    ax_buf_printf(em->out, "    if (arena == NULL)\n        arena = %s_static_arena;\n", name);
    ax_buf_puts(em->out, "    (void)arena;\n");
    for (int i = 0; i < em->g->ninputs; i++)
        ax_buf_printf(em->out, "    (void)%s;\n", em->input_names[i]);
    for (int id = 0; id < em->g->nnodes; id++) {
        const ir_node *n = node_at(em, id);
        if (!n->dead && ir_ops[n->op].kind != IR_SOURCE)
            emit_node(em, id);
    }
    emit_output_copies(em);
    ax_buf_puts(em->out, "    return 0;\n}\n");
}

/* ---- bodies for another driver (cg_c.h) ----------------------------------- */

static emitter body_emitter(const cg_c_body *b, ax_buf *out)
{
    emitter em = {.g = b->g, .out = out, .source_name = b->source_name, .input_names = b->input_names,
                  .output_names = b->output_names, .body = b, .blas = b->blas};
    return em;
}

void cg_c_emit_body(const cg_c_body *b, ax_buf *out)
{
    emitter em = body_emitter(b, out);
    if (uses_status(&em))
        ax_buf_puts(out, "    int status;\n");
    for (int id = 0; id < b->g->nnodes; id++) {
        const ir_node *n = node_at(&em, id);
        if (!n->dead && ir_ops[n->op].kind != IR_SOURCE && !(b->fused_node && b->fused_node(b, id)))
            emit_node(&em, id);
        if (b->after_node)
            b->after_node(b, id, out);
    }
    emit_output_copies(&em);
}

void cg_c_emit_constants(const cg_c_body *b, ax_buf *out)
{
    emitter em = body_emitter(b, out);
    emit_constants(&em);
}

const char *cg_c_storage(const cg_c_body *b, int id)
{
    emitter em = body_emitter(b, NULL);
    return cgc_storage(&em, id);
}

int cg_c_storage_owner(const cg_c_body *b, int id)
{
    emitter em = body_emitter(b, NULL);
    return cgc_storage_owner(&em, id);
}

static void emit_tensor_infos(emitter *em, const char *what, const int *ids, const char *const *names,
                              int count)
{
    ax_buf_printf(em->out, "\nstatic const axrt_tensor_info %s_%s[%d] = {\n", em->g->name, what,
                  count);
    for (int i = 0; i < count; i++) {
        const ir_node *n = node_at(em, ids[i]);
        ax_buf_printf(em->out, "    {\"%s\", %s, %d, {", literal_text(arena_of(em), names[i]),
                      ir_dtypes[n->dtype].enum_name, n->rank);
        for (int d = 0; d < n->rank; d++)
            ax_buf_printf(em->out, "%s%lld", d ? ", " : "", (long long)n->shape[d]);
        ax_buf_puts(em->out, n->rank ? "}},\n" : "0}},\n");
    }
    ax_buf_puts(em->out, "};\n");
}

static void emit_descriptor(emitter *em)
{
    const char *name = em->g->name;
    ax_buf_printf(em->out,
                  "\nstatic int %s_run(const void *const *inputs, void *const *outputs, void *arena)\n"
                  "{\n    return %s_forward(", name, name);
    for (int i = 0; i < em->g->ninputs; i++)
        ax_buf_printf(em->out, "(const %s *)inputs[%d], ",
                      ctype(node_at(em, em->g->inputs[i])->dtype), i);
    for (int i = 0; i < em->g->noutputs; i++)
        ax_buf_printf(em->out, "(%s *)outputs[%d], ",
                      ctype(node_at(em, em->g->outputs[i])->dtype), i);
    ax_buf_puts(em->out, "arena);\n}\n");
    const char **in_names = ax_alloc(arena_of(em), sizeof *in_names * (size_t)(em->g->ninputs + 1));
    for (int i = 0; i < em->g->ninputs; i++)
        in_names[i] = node_at(em, em->g->inputs[i])->name;
    emit_tensor_infos(em, "inputs", em->g->inputs, in_names, em->g->ninputs);
    emit_tensor_infos(em, "outputs", em->g->outputs, em->g->output_names, em->g->noutputs);
    ax_buf_printf(em->out,
                  "\nconst axrt_model %s_model = {\"%s\", %d, %d, %s_inputs, %s_outputs, "
                  "(size_t)%zu, %s_run};\n",
                  name, name, em->g->ninputs, em->g->noutputs, name, name, em->g->arena_bytes, name);
}

/* ---- checks and the two files --------------------------------------------- */

/* A Float32 node in a half model's training step: its loss, computed in
 * the Float32 of the model's output as autocast computes it
 * (docs/training.md#mixed-precision). */
static bool mixed_ok(const ir_graph *g, const ir_node *n)
{
    return (g->dtype == AXRT_F16 || g->dtype == AXRT_BF16) && n->dtype == AXRT_F32;
}

/* Reports what this backend cannot emit; returns the number of errors. */
int cg_c_check(const ir_graph *g)
{
    int errors = 0;
    if (!ir_dtype_is_float(g->dtype)) {
        ax_error(g->ctx, g->loc, "the C backend computes in Float32, Float64, Float16 or "
                 "BFloat16, not %s (model '%s')", ir_dtype_name(g->dtype), g->name);
        errors++;
    }
    if (g->ninputs < 1 || g->noutputs < 1) {
        ax_error(g->ctx, g->loc, "model '%s' needs at least one input and one output", g->name);
        errors++;
    }
    for (int id = 0; id < g->nnodes && !errors; id++) {
        const ir_node *n = &g->nodes[id];
        if (!n->dead && ir_ops[n->op].kind != IR_SOURCE && n->op != IR_OP_cast &&
            n->op != IR_OP_reshape && n->op != IR_OP_argmax && n->dtype != g->dtype && !mixed_ok(g, n)) {
            /* a reshape copies bytes; argmax yields Int64 whatever the model's dtype */
            ax_error(g->ctx, n->loc, "the C backend cannot compute %s in %s", ir_ops[n->op].name,
                     ir_dtype_name(n->dtype));
            errors++;
        }
    }
    return errors;
}

static void emit_header_model(emitter *em, ax_buf *h)
{
    char upper[256];
    size_t len = 0;
    for (const char *c = em->g->name; *c && len + 1 < sizeof upper; c++)
        upper[len++] = (char)toupper((unsigned char)*c);
    upper[len] = '\0';
    ax_buf_printf(h, "\n/* model %s\n", em->g->name);
    for (int i = 0; i < em->g->ninputs; i++) {
        const ir_node *n = node_at(em, em->g->inputs[i]);
        ax_buf_printf(h, "   input  %s %s%s\n", em->input_names[i], ir_dtype_name(n->dtype),
                      shape_text(arena_of(em), n));
    }
    for (int i = 0; i < em->g->noutputs; i++) {
        const ir_node *n = node_at(em, em->g->outputs[i]);
        ax_buf_printf(h, "   output %s %s%s\n", em->output_names[i], ir_dtype_name(n->dtype),
                      shape_text(arena_of(em), n));
    }
    ax_buf_printf(h, "   arena: %s_ARENA_BYTES bytes, 64-byte aligned; NULL uses a static arena */\n",
                  upper);
    ax_buf_printf(h, "#define %s_ARENA_BYTES ((size_t)%zu)\n", upper, em->g->arena_bytes);
    emit_signature(em, h);
    ax_buf_printf(h, ";\nextern const axrt_model %s_model;\n", em->g->name);
    if (!em->profile)
        return;
    const int count = cg_profiled_layers(em->g);
    ax_buf_printf(h, "/* per-layer profile (axc --profile; axrt.h axrt_layer_profile) */\n"
                     "#define %s_LAYERS %d\nextern axrt_layer_profile %s_profile[%d];\n"
                     "extern axrt_layer_hook %s_layer_hook;\nuint64_t axc_profile_clock(void);\n",
                  upper, count, em->g->name, count ? count : 1, em->g->name);
}

static const char *guard_name(ax_arena *a, const char *header_name)
{
    const char *base = strrchr(header_name, '/');
    char *guard = ax_sprintf(a, "AXC_%s", base ? base + 1 : header_name);
    for (char *c = guard; *c; c++)
        *c = isalnum((unsigned char)*c) ? (char)toupper((unsigned char)*c) : '_';
    return guard;
}

void cg_c_emit_preamble(const cg_request *req, ax_buf *c)
{
    if (req->profile) /* the default clock's clock_gettime under -std=c99 */
        ax_buf_puts(c, "#if defined(__unix__) && !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)\n"
                       "#define _POSIX_C_SOURCE 199309L\n#endif\n");
    ax_buf_printf(c,
                  "/* Generated by axc from %s -- do not edit.\n"
                  "   Code path: C99 calling the libaxrt kernels; float32 dense, conv and attention\n"
                  "   weights pre-packed into AXRT_PANEL-wide panels for the runtime's register-tiled\n"
                  "   GEMM, which runs AVX-512 or AVX2+FMA on x86-64 CPUs that have them and portable C\n"
                  "   elsewhere. */\n"
                  "#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
                  "#include \"%s\"\n\n"
                  "#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && "
                  "__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__\n"
                  "#error \"parameters are embedded as little-endian bytes\"\n#endif\n"
                  "#if AXRT_PANEL != %d\n"
                  "#error \"weights are packed for AXRT_PANEL %d: rebuild with the axc matching this axrt.h\"\n"
                  "#endif\n"
                  "#if defined(__GNUC__)\n#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n#endif\n"
                  "/* weights on cache lines where vector loads read them (a load across two\n"
                  "   lines costs two on x86-64); packed tight on 32-bit microcontrollers */\n"
                  "#if defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__))\n"
                  "#define AXC_WEIGHT_ALIGN __attribute__((aligned(64)))\n#else\n#define AXC_WEIGHT_ALIGN\n#endif\n"
                  "/* before a fused loop's innermost loop, whose iterations are independent (it\n"
                  "   reads an operand it writes only at the element it writes): GCC at -O2 then\n"
                  "   vectorizes loops nested over strided reads (through a transpose: 3-4x faster) */\n"
                  "#if defined(__GNUC__) && !defined(__clang__)\n#define AXC_IVDEP _Pragma(\"GCC ivdep\")\n#else\n"
                  "#define AXC_IVDEP\n#endif\n",
                  literal_text(req->models[0]->ctx->arena, req->source_name), req->header_name,
                  AXRT_PANEL, AXRT_PANEL);
}

/* Whether any model has a float32 node of op (they then call a BLAS helper). */
static bool uses_f32_op(const cg_request *req, ir_op op)
{
    for (int m = 0; m < req->nmodels; m++)
        for (int id = 0; id < req->models[m]->nnodes; id++) {
            const ir_node *n = &req->models[m]->nodes[id];
            if (!n->dead && n->op == op && n->dtype == AXRT_F32)
                return true;
        }
    return false;
}

/* --blas=openblas (docs/performance.md): <cblas.h> and the two helpers that
 * float32 dense and matmul call instead of libaxrt's GEMM, only those used
 * (static, -Wunused-function clean).  Dense weights are [out, in] as
 * written (cg_select_blas keeps them unpacked); the bias goes into y first
 * and cblas_sgemm accumulates onto it. */
void cg_c_emit_blas_helpers(const cg_request *req, ax_buf *c)
{
    ax_buf_puts(c, "\n/* --blas=openblas: link with -lopenblas */\n#include <cblas.h>\n");
    if (uses_f32_op(req, IR_OP_dense))
        ax_buf_puts(c,
            "\nstatic void axc_blas_dense(const float *x, const float *w, const float *bias, float *y,\n"
            "                           int rows, int in, int out)\n{\n"
            "    int r, o;\n"
            "    if (bias)\n"
            "        for (r = 0; r < rows; r++)\n"
            "            for (o = 0; o < out; o++) y[(size_t)r * (size_t)out + (size_t)o] = bias[o];\n"
            "    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f, x, in, w, in,\n"
            "                bias ? 1.0f : 0.0f, y, out);\n}\n");
    if (uses_f32_op(req, IR_OP_matmul))
        ax_buf_puts(c,
            "\n/* The contract of libaxrt's matmul: batch dims broadcast through the strides. */\n"
            "static void axc_blas_matmul(const float *a, const int64_t *a_strides, const float *b,\n"
            "                            const int64_t *b_strides, float *y, const int64_t *batch,\n"
            "                            int rank, int m, int k, int n)\n{\n"
            "    int64_t index[AXRT_MAX_RANK] = {0}, oa = 0, ob = 0;\n"
            "    int d;\n"
            "    for (;;) {\n"
            "        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a + oa, k,\n"
            "                    b + ob, n, 0.0f, y, n);\n"
            "        y += (size_t)m * (size_t)n;\n"
            "        for (d = rank - 1; d >= 0; d--) {\n"
            "            oa += a_strides[d];\n"
            "            ob += b_strides[d];\n"
            "            if (++index[d] < batch[d]) break;\n"
            "            oa -= a_strides[d] * batch[d];\n"
            "            ob -= b_strides[d] * batch[d];\n"
            "            index[d] = 0;\n"
            "        }\n"
            "        if (d < 0) return;\n"
            "    }\n}\n");
}

int cg_c_header(const cg_request *req, ax_buf *h_out)
{
    int errors = 0;
    for (int m = 0; m < req->nmodels; m++) {
        errors += cg_c_check(req->models[m]);
        cg_select(req->models[m]); /* again, for callers that ran the passes by hand */
        if (req->blas)
            cg_select_blas(req->models[m]);
    }
    if (errors || req->nmodels < 1)
        return errors ? errors : 1;
    const char *guard = guard_name(req->models[0]->ctx->arena, req->header_name);
    ax_buf_printf(h_out,
                  "/* Generated by axc from %s -- do not edit. */\n#ifndef %s\n#define %s\n\n"
                  "#include \"axrt.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n",
                  literal_text(req->models[0]->ctx->arena, req->source_name), guard, guard);
    for (int m = 0; m < req->nmodels; m++) {
        emitter em = {.g = req->models[m], .source_name = req->source_name, .profile = req->profile};
        name_arguments(&em);
        emit_header_model(&em, h_out);
    }
    ax_buf_puts(h_out, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
    return 0;
}

int cg_c_emit(const cg_request *req, ax_buf *c_out, ax_buf *h_out)
{
    int errors = cg_c_header(req, h_out);
    if (errors)
        return errors;
    cg_c_emit_preamble(req, c_out);
    if (req->profile)
        emit_profile_clock(c_out);
    if (req->blas)
        cg_c_emit_blas_helpers(req, c_out);
    for (int m = 0; m < req->nmodels; m++) {
        emitter em = {.g = req->models[m], .out = c_out, .source_name = req->source_name,
                      .profile = req->profile, .blas = req->blas};
        name_arguments(&em);
        ax_buf_printf(c_out, "\n/* ---- model %s ---- */\n", em.g->name);
        emit_constants(&em);
        emit_forward(&em);
        emit_descriptor(&em);
    }
    return 0;
}
