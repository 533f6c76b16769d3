/* print_ax.c — `--emit=ax` (docs/onnx.md): an imported model (ONNX) printed
 * as an equivalent `.ax` source in function form, one statement per IR node
 * of the unoptimised graph, with every layer declared where it is used (l<id>)
 * and its parameters renamed l<id>.weight, l<id>.bias, ... so that
 * --save-weights writes the safetensors file the printed source loads.
 * `axc` on the printed model computes what the imported one does.  Nodes the
 * language has no construct for are refused, each with a located error that
 * names the node: constant tensors read as values (the language has number
 * literals, not tensor literals; parameters live in layers only), pools in
 * ceil mode or excluding padding, multi-result chunks, fused nodes. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir_names.h"
#include "print_ax.h"

typedef struct ax_printer {
    ir_graph *g;
    ax_buf *out;
    const char **names;   /* per node: its value's name in the source, or NULL */
    bool ok;
} ax_printer;

/* Reports that node n cannot be written as .ax, and why. */
static void refuse(ax_printer *p, const ir_node *n, const char *why)
{
    char layer[160];
    ax_error(p->g->ctx, n->loc, "--emit=ax cannot write %s as .ax: %s",
             ir_describe_layer(p->g, n, layer, sizeof layer), why);
    p->ok = false;
}

/* A name the printed source uses for something else: a function or layer
 * (every IR op name is one, or is not printed), a keyword, or the t<id>/l<id>
 * names of values and layers. */
static bool taken(const char *id)
{
    static const char *const words[] = {"function", "begin", "end", "return", "const", "for", "in", "true",
                                        "false", "Dense", "Conv", "ConvTranspose", "BatchNorm", "LayerNorm",
                                        "GroupNorm", "MaxPool", "MeanPool", "Upsample", "GlobalMeanPool",
                                        "nearest", "bilinear"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcmp(id, words[i])) return true;
    for (int op = 0; op < IR_OP_COUNT; op++)
        if (!strcmp(id, ir_ops[op].name)) return true;
    return (id[0] == 't' || id[0] == 'l') && id[1] && strspn(id + 1, "0123456789") == strlen(id + 1);
}

/* The identifiers handed out for the function's arguments and results. */
typedef struct used_names {
    const char **names;
    int n;
} used_names;

static bool name_clash(const char *id, const void *user)
{
    const used_names *u = user;
    if (taken(id)) return true;
    for (int i = 0; u && i < u->n; i++)
        if (!strcmp(id, u->names[i])) return true;
    return false;
}

/* name as an identifier of the language by the shared rule (ir_names.h):
 * injective over the names recorded in u (NULL: the model's name). */
static const char *identifier(ax_arena *a, const char *name, used_names *u)
{
    const char *id = ir_identifier(a, name, "_", NULL, name_clash, u);
    if (u) u->names[u->n++] = id;
    return id;
}

/* name for a comment: printable ASCII only (a newline would end the comment). */
static const char *printable(ax_arena *a, const char *name)
{
    char *c = ax_strdup(a, name);
    for (char *q = c; *q; q++)
        if (*q < 0x20 || *q > 0x7e) *q = '?';
    return c;
}

static const char *operand(ax_printer *p, const ir_node *n, int k)
{
    return p->names[n->src[k]];
}

/* A number literal the lexer reads as a float. */
static const char *literal(ax_printer *p, double v)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.9g", v);
    if (!strpbrk(buf, ".eE")) strcat(buf, ".0");
    return ax_sprintf(p->g->ctx->arena, v < 0 ? "(%s)" : "%s", buf);
}

static void put_ints(ax_buf *out, const int64_t *v, int n)
{
    ax_buf_puts(out, "(");
    for (int i = 0; i < n; i++) ax_buf_printf(out, "%s%lld", i ? ", " : "", (long long)v[i]);
    ax_buf_puts(out, n == 1 ? ",)" : ")");
}

static void put_pair(ax_buf *out, const char *key, const int *v)
{
    ax_buf_printf(out, ", %s=(%d, %d)", key, v[0], v[1]);
}

/* Parameter operands 1.. of a layer node renamed LAYER.<field>. */
static bool own_params(ax_printer *p, const ir_node *n, const char *layer, const char *const *fields)
{
    for (int k = 1; k < n->nsrc && fields[k - 1]; k++) {
        if (n->src[k] == IR_NONE) continue;
        ir_node *w = ir_at(p->g, n->src[k]);
        if (w->op != IR_OP_param) {
            refuse(p, n, "its parameters are computed, and a .ax layer owns its parameters");
            return false;
        }
        w->name = ax_sprintf(p->g->ctx->arena, "%s.%s", layer, fields[k - 1]);
    }
    return true;
}

/* `lN = Ctor(...)` for layer node n, its parameters renamed; false if refused. */
static bool declare_layer(ax_printer *p, const ir_node *n, const char *layer)
{
    static const char *const dense[] = {"weight", "bias", NULL}, *const bn[] = {"weight", "bias", "running_mean", "running_var", NULL};
    const ir_attrs *a = &n->attrs;
    ax_buf *o = p->out;
    const ir_node *w = n->nsrc > 1 && n->src[1] != IR_NONE ? ir_at(p->g, n->src[1]) : NULL;
    bool bias = n->nsrc > 2 && n->src[2] != IR_NONE;
    if ((n->op == IR_OP_dense || n->op == IR_OP_conv || n->op == IR_OP_conv_transpose || n->op == IR_OP_batchnorm ||
         n->op == IR_OP_layernorm || n->op == IR_OP_groupnorm) &&
        !own_params(p, n, layer, n->op == IR_OP_batchnorm ? bn : dense))
        return false;
    switch (n->op) {
    case IR_OP_dense:
        ax_buf_printf(o, "    %s = Dense(%lld => %lld, bias=%s)\n", layer, (long long)w->shape[1], (long long)w->shape[0],
                      bias ? "true" : "false");
        return true;
    case IR_OP_conv:
    case IR_OP_conv_transpose: {
        bool t = n->op == IR_OP_conv_transpose;
        int64_t cin = t ? w->shape[0] : w->shape[1] * a->groups, cout = t ? w->shape[1] * a->groups : w->shape[0];
        ax_buf_printf(o, "    %s = %s((%d, %d), %lld => %lld", layer, t ? "ConvTranspose" : "Conv", a->kernel[0],
                      a->kernel[1], (long long)cin, (long long)cout);
        put_pair(o, "stride", a->stride);
        put_pair(o, "dilation", a->dilation);
        if (t) put_pair(o, "output_padding", a->out_pad);
        if (t) put_pair(o, "pad", a->pad);   /* symmetric: checked by the caller */
        else ax_buf_printf(o, ", pad=(%d, %d, %d, %d)", a->pad[0], a->pad[2], a->pad[1], a->pad[3]);
        ax_buf_printf(o, ", groups=%d, bias=%s)\n", a->groups, bias ? "true" : "false");
        return true;
    }
    case IR_OP_batchnorm:
        ax_buf_printf(o, "    %s = BatchNorm(%lld, eps=%s)\n", layer, (long long)w->shape[0], literal(p, a->eps));
        return true;
    case IR_OP_layernorm:
        ax_buf_printf(o, "    %s = LayerNorm(%lld, eps=%s)\n", layer, (long long)w->shape[0], literal(p, a->eps));
        return true;
    case IR_OP_groupnorm:
        if (!w || !bias) { refuse(p, n, "a GroupNorm without weight or bias"); return false; }
        ax_buf_printf(o, "    %s = GroupNorm(%d, %lld, eps=%s)\n", layer, a->groups, (long long)w->shape[0], literal(p, a->eps));
        return true;
    case IR_OP_maxpool:
    case IR_OP_meanpool:
        ax_buf_printf(o, "    %s = %s((%d, %d)", layer, n->op == IR_OP_maxpool ? "MaxPool" : "MeanPool", a->kernel[0], a->kernel[1]);
        put_pair(o, "stride", a->stride);
        ax_buf_printf(o, ", pad=(%d, %d, %d, %d))\n", a->pad[0], a->pad[2], a->pad[1], a->pad[3]);
        return true;
    case IR_OP_upsample:
        ax_buf_printf(o, "    %s = Upsample((%d, %d), mode=%s%s)\n", layer, a->scale[0], a->scale[1],
                      a->mode == IR_UPSAMPLE_NEAREST ? "nearest" : "bilinear",
                      a->mode == IR_UPSAMPLE_BILINEAR_CORNERS ? ", align_corners=true" : "");
        return true;
    default:
        return false;
    }
}

/* Why node n has no .ax statement, or NULL when it has one. */
static const char *unwritable(const ir_node *n)
{
    const ir_attrs *a = &n->attrs;
    if (n->op == IR_OP_param) return NULL;   /* checked where it is read */
    if (n->op == IR_OP_conv_transpose && (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3]))
        return "asymmetric padding (ConvTranspose takes pad=(h, w))";
    if ((n->op == IR_OP_maxpool || n->op == IR_OP_meanpool) && (a->ceil || a->exclude_pad || a->adaptive))
        return "a pool in ceil mode, excluding padding or adaptive";
    if (a->act != IR_NONE || a->residual != IR_NONE) return "a fused epilogue";
    switch (n->op) {
    case IR_OP_input: case IR_OP_scalar: case IR_OP_dense: case IR_OP_conv: case IR_OP_conv_transpose:
    case IR_OP_batchnorm: case IR_OP_layernorm: case IR_OP_groupnorm: case IR_OP_maxpool: case IR_OP_meanpool:
    case IR_OP_upsample: case IR_OP_globalmeanpool: case IR_OP_matmul: case IR_OP_transpose: case IR_OP_reshape:
    case IR_OP_concat: case IR_OP_slice: case IR_OP_softmax: case IR_OP_log_softmax: case IR_OP_sum:
    case IR_OP_mean: case IR_OP_maximum: case IR_OP_minimum: case IR_OP_prod: case IR_OP_argmax:
        return NULL;
    default:
        return ir_ops[n->op].kind == IR_UNARY && n->op != IR_OP_cast ? NULL
             : ir_ops[n->op].kind == IR_BINARY ? NULL : "the language has no construct for this op";
    }
}

/* Every operand that is a parameter must be owned by a layer: refuse others. */
static bool no_bare_params(ax_printer *p, const ir_node *n)
{
    bool layer = n->op == IR_OP_dense || n->op == IR_OP_conv || n->op == IR_OP_conv_transpose ||
                 n->op == IR_OP_batchnorm || n->op == IR_OP_layernorm || n->op == IR_OP_groupnorm;
    for (int k = 0; k < (layer ? 1 : n->nsrc); k++)   /* a layer's operands 1.. are its own */
        if (n->src[k] != IR_NONE && ir_at(p->g, n->src[k])->op == IR_OP_param) {
            refuse(p, n, "it reads a constant tensor, and the language has no tensor constants "
                         "(only number literals; parameters belong to layers)");
            return false;
        }
    for (int k = 1; layer && k < n->nsrc; k++)   /* each parameter read by this node only */
        for (int j = 0; n->src[k] != IR_NONE && j < p->g->nnodes; j++) {
            const ir_node *u = ir_at(p->g, j);
            for (int m = 0; u != n && !u->dead && m < u->nsrc; m++)
                if (u->src[m] == n->src[k]) { refuse(p, n, "a parameter shared with another node"); return false; }
        }
    return true;
}

/* The expression of non-layer node n. */
static const char *expression(ax_printer *p, const ir_node *n)
{
    ax_arena *ar = p->g->ctx->arena;
    ax_buf b = {0};
    const ir_attrs *a = &n->attrs;
    const char *x = n->nsrc ? operand(p, n, 0) : NULL;
    switch (n->op) {
    case IR_OP_matmul: ax_buf_printf(&b, "matmul(%s, %s)", x, operand(p, n, 1)); break;
    case IR_OP_globalmeanpool: ax_buf_printf(&b, "%s |> GlobalMeanPool()", x); break;
    case IR_OP_transpose:
        ax_buf_printf(&b, "transpose(%s, (", x);
        for (int i = 0; i < a->nperm; i++) ax_buf_printf(&b, "%s%d", i ? ", " : "", a->perm[i]);
        ax_buf_puts(&b, a->nperm == 1 ? ",))" : "))");
        break;
    case IR_OP_reshape: ax_buf_printf(&b, "reshape(%s, ", x); put_ints(&b, n->shape, n->rank); ax_buf_puts(&b, ")"); break;
    case IR_OP_concat:
        ax_buf_puts(&b, "concat(");
        for (int k = 0; k < n->nsrc; k++) ax_buf_printf(&b, "%s%s", k ? ", " : "", operand(p, n, k));
        ax_buf_printf(&b, "; dims=%d)", a->axis);
        break;
    case IR_OP_slice:
        ax_buf_printf(&b, "%s[", x);
        for (int d = 0; d < n->rank; d++) {
            int64_t lo = d < a->nslice ? a->begin[d] : INT64_MIN, hi = d < a->nslice ? a->end[d] : INT64_MAX;
            int64_t st = d < a->nslice ? a->step[d] : 1;
            ax_buf_puts(&b, d ? ", " : "");
            if (lo != INT64_MIN) ax_buf_printf(&b, "%lld", (long long)lo);
            ax_buf_puts(&b, ":");
            if (hi != INT64_MAX) ax_buf_printf(&b, "%lld", (long long)hi);
            if (st != 1) ax_buf_printf(&b, ":%lld", (long long)st);
        }
        ax_buf_puts(&b, "]");
        break;
    case IR_OP_softmax: case IR_OP_log_softmax: case IR_OP_sum: case IR_OP_mean: case IR_OP_maximum:
    case IR_OP_minimum: case IR_OP_prod: case IR_OP_argmax:
        ax_buf_printf(&b, "%s(%s; dims=%d)", ir_ops[n->op].name, x, a->axis);
        break;
    default:
        if (ir_ops[n->op].kind == IR_UNARY && (n->op == IR_OP_elu || n->op == IR_OP_leaky_relu))
            ax_buf_printf(&b, "%s(%s; alpha=%s)", ir_ops[n->op].name, x, literal(p, a->alpha));
        else if (ir_ops[n->op].kind == IR_UNARY) ax_buf_printf(&b, "%s(%s)", ir_ops[n->op].name, x);
        else {
            static const char *const infix[IR_OP_COUNT] = {[IR_OP_add] = "+", [IR_OP_sub] = "-", [IR_OP_mul] = ".*",
                                                           [IR_OP_div] = "./", [IR_OP_pow] = ".^"};
            if (infix[n->op]) ax_buf_printf(&b, "(%s %s %s)", x, infix[n->op], operand(p, n, 1));
            else ax_buf_printf(&b, "%s(%s, %s)", ir_ops[n->op].name, x, operand(p, n, 1));
        }
    }
    const char *s = ax_strdup(ar, b.data ? b.data : "");
    ax_buf_free(&b);
    return s;
}

static void print_node(ax_printer *p, int id)
{
    ir_node *n = ir_at(p->g, id);
    const char *why = unwritable(n);
    if (why) { refuse(p, n, why); return; }
    if (!no_bare_params(p, n)) return;
    if (n->op == IR_OP_scalar && !isfinite(n->attrs.scalar)) refuse(p, n, "a number the language has no literal for (inf, nan)");
    if (n->op == IR_OP_scalar) { p->names[id] = literal(p, n->attrs.scalar); return; }
    const char *v = ax_sprintf(p->g->ctx->arena, "t%d", id), *layer = ax_sprintf(p->g->ctx->arena, "l%d", id);
    if (declare_layer(p, n, layer)) ax_buf_printf(p->out, "    %s = %s(%s)\n", v, layer, operand(p, n, 0));
    else if (p->ok) ax_buf_printf(p->out, "    %s = %s\n", v, expression(p, n));
    p->names[id] = v;
}

int print_ax_model(ir_graph *g, ax_buf *out)
{
    ax_printer p = {g, out, ax_alloc(g->ctx->arena, sizeof(char *) * (size_t)(g->nnodes ? g->nnodes : 1)), true};
    used_names used = {ax_alloc(g->ctx->arena, sizeof(char *) * (size_t)(g->ninputs + g->noutputs + 1)), 0};
    ax_buf_printf(out, "# %s as .ax (axc --emit=ax); parameters: the --save-weights file\n", printable(g->ctx->arena, g->name));
    ax_buf_printf(out, "@axiom function %s(", identifier(g->ctx->arena, g->name, NULL));
    for (int i = 0; i < g->ninputs; i++) {
        ir_node *in = ir_at(g, g->inputs[i]);
        char shape[128];
        if (in->rank == 0) refuse(&p, in, "a rank-0 input (a tensor type of the language has at least one dimension)");
        p.names[g->inputs[i]] = identifier(g->ctx->arena, in->name ? in->name : "x", &used);
        ax_buf_printf(out, "%s%s::%s%s", i ? ", " : "", p.names[g->inputs[i]], ir_dtype_name(in->dtype),
                      ir_shape_str(in->shape, in->rank, shape, sizeof shape));
    }
    ax_buf_puts(out, ")\n");
    for (int i = 0; i < g->ninputs; i++)   /* names that had to change */
        if (ir_at(g, g->inputs[i])->name && strcmp(p.names[g->inputs[i]], ir_at(g, g->inputs[i])->name))
            ax_buf_printf(out, "    # %s: ONNX input '%s'\n", p.names[g->inputs[i]],
                          printable(g->ctx->arena, ir_at(g, g->inputs[i])->name));
    for (int id = 0; id < g->nnodes; id++)
        if (!ir_at(g, id)->dead && ir_at(g, id)->op != IR_OP_input && ir_at(g, id)->op != IR_OP_param) print_node(&p, id);
    for (int i = 0; i < g->noutputs && p.ok; i++) {
        const char *name = identifier(g->ctx->arena, g->output_names[i] ? g->output_names[i] : ax_sprintf(g->ctx->arena, "out%d", i), &used);
        bool renamed = g->output_names[i] && strcmp(name, g->output_names[i]);
        ax_buf_printf(out, "    %s = %s%s%s%s\n", name, p.names[g->outputs[i]], renamed ? "   # ONNX output '" : "",
                      renamed ? printable(g->ctx->arena, g->output_names[i]) : "", renamed ? "'" : "");
        p.names[g->outputs[i]] = name;
    }
    ax_buf_puts(out, "    return ");
    for (int i = 0; i < g->noutputs && p.ok; i++) ax_buf_printf(out, "%s%s", i ? ", " : "", p.names[g->outputs[i]]);
    ax_buf_puts(out, "\nend\n");
    return p.ok ? 0 : -1;
}
