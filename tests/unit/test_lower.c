/* test_lower.c — lowering (.ax source → IR) through the real parser:
 * naming rules (chain positions, labels, declared/inline layers, outputs),
 * every constructor's parameters and attributes, functions and partial
 * application, scalars and operators, consts and -D, and every error class
 * with its exact message (diagnostics captured with open_memstream). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"
#include "passes.h"

/* One compilation: context, captured diagnostics, the lowered graph.  Heap
 * allocated because the memory stream keeps the addresses of diag/diag_len. */
typedef struct lowered {
    ax_ctx *ctx;
    char *diag;
    size_t diag_len;
    ir_graph *g;
} lowered;

/* Parses src as "t.ax" and lowers model 0 with the given -D list; lower
 * is skipped when parsing fails (the test then sees g == NULL). */
static lowered *lower_src_defs(const char *src, const ax_define *defs, int ndefs)
{
    lowered *r = calloc(1, sizeof *r);
    r->ctx = ax_ctx_new();
    r->ctx->path = "t.ax";
    r->ctx->src = src;
    r->ctx->src_len = strlen(src);
    r->ctx->diag_out = open_memstream(&r->diag, &r->diag_len);
    ast_file *f = ast_parse(r->ctx);
    if (f) {
        lower_check_defines(r->ctx, f, defs, ndefs);
        r->g = lower_model(r->ctx, f, 0, defs, ndefs);
    }
    fflush(r->ctx->diag_out);
    return r;
}

static lowered *lower_src(const char *src) { return lower_src_defs(src, NULL, 0); }

static void lowered_free(lowered *r)
{
    fclose(r->ctx->diag_out);
    free(r->diag);
    if (r->g) ir_graph_free_nodes(r->g);
    ax_ctx_free(r->ctx);
    free(r);
}

/* Lowers src, which must succeed without diagnostics. */
static lowered *lower_ok(const char *src)
{
    lowered *r = lower_src(src);
    if (!r->g || r->diag_len) fail_msg("lowering failed:\n%s", r->diag ? r->diag : "");
    return r;
}

/* Lowers src, which must fail with a diagnostic containing each of the
 * NULL-terminated messages (the graph is still returned, for pass_shape). */
static void expect_errors(const char *src, ...)
{
    lowered *r = lower_src(src);
    va_list ap;
    va_start(ap, src);
    for (const char *m; (m = va_arg(ap, const char *));)
        if (!strstr(r->diag, m)) fail_msg("expected '%s' in:\n%s", m, r->diag);
    va_end(ap);
    assert_true(r->ctx->errors > 0);
    assert_non_null(r->g);
    lowered_free(r);
}

/* Space-separated names of all param nodes, in graph order. */
static const char *param_names(const ir_graph *g)
{
    static char buf[1024];
    buf[0] = '\0';
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == IR_OP_param)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", buf[0] ? " " : "",
                     g->nodes[i].name);
    return buf;
}

static const ir_node *param(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == IR_OP_param && strcmp(g->nodes[i].name, name) == 0)
            return &g->nodes[i];
    fail_msg("no param '%s' (have: %s)", name, param_names(g));
    return NULL;
}

/* The k-th (0-based) node with op. */
static const ir_node *nth_op(const ir_graph *g, ir_op op, int k)
{
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == op && k-- == 0) return &g->nodes[i];
    fail_msg("no %s node #%d", ir_ops[op].name, k);
    return NULL;
}

static int count_op(const ir_graph *g, ir_op op)
{
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += g->nodes[i].op == op;
    return n;
}

static void assert_shape(const ir_node *n, int rank, const int64_t *shape)
{
    assert_int_equal(n->rank, rank);
    for (int i = 0; i < rank; i++) assert_int_equal(n->shape[i], shape[i]);
}

/* ---- naming ------------------------------------------------------------- */

static void chain_positional_names_count_bare_activations(void **state)
{
    lowered *r = lower_ok("@axiom m(x::Float32[1, 4]) begin\n"
                         "    Dense(4 => 8)\n    relu\n    Dense(8 => 2)\nend\n");
    assert_string_equal(param_names(r->g), "0.weight 0.bias 2.weight 2.bias");
    assert_int_equal(r->g->noutputs, 1);
    assert_string_equal(r->g->output_names[0], "out0");
    assert_string_equal(nth_op(r->g, IR_OP_dense, 1)->name, "2");
    assert_int_equal(r->g->outputs[0], nth_op(r->g, IR_OP_dense, 1) - r->g->nodes);
    lowered_free(r);
}

static void chain_labels_name_layers(void **state)
{
    lowered *r = lower_ok("@axiom m(x::Float32[1, 4]) begin\n"
                         "    fc1 = Dense(4 => 8, activation=relu)\n    Dense(8 => 2)\nend\n");
    assert_string_equal(param_names(r->g), "fc1.weight fc1.bias 1.weight 1.bias");
    assert_string_equal(nth_op(r->g, IR_OP_relu, 0)->name, "fc1");
    /* params sit at the declaration, the compute node at the call */
    assert_int_equal(param(r->g, "fc1.weight")->loc.col, 5);
    assert_int_equal(nth_op(r->g, IR_OP_dense, 0)->loc.col, 11);
    lowered_free(r);
}

static void function_form_names_and_shared_layers(void **state)
{
    lowered *r = lower_ok("@axiom function f(x::Float32[1, 4])\n"
                         "    fc = Dense(4 => 4)\n"
                         "    h = x |> fc |> Dense(4 => 4)\n"
                         "    q = fc(h)\n"
                         "    return Dense(4 => 2)(q), q, x\n"
                         "end\n");
    assert_string_equal(param_names(r->g), "fc.weight fc.bias 0.weight 0.bias 1.weight 1.bias");
    assert_int_equal(count_op(r->g, IR_OP_dense), 4);
    assert_string_equal(nth_op(r->g, IR_OP_dense, 0)->name, "fc");
    assert_string_equal(nth_op(r->g, IR_OP_dense, 2)->name, "fc");
    assert_int_equal(r->g->noutputs, 3);
    assert_string_equal(r->g->output_names[0], "out0");
    assert_string_equal(r->g->output_names[1], "q");
    assert_string_equal(r->g->output_names[2], "x");
    assert_int_equal(r->g->outputs[2], r->g->inputs[0]);
    lowered_free(r);
}

static void rebinding_shadows_values(void **state)
{
    lowered *r = lower_ok("@axiom function f(x::Float32[1, 4])\n"
                         "    h = relu(x)\n    h = sigmoid(h)\n    return h\nend\n");
    const ir_node *s = nth_op(r->g, IR_OP_sigmoid, 0);
    assert_int_equal(s->src[0], nth_op(r->g, IR_OP_relu, 0) - r->g->nodes);
    assert_int_equal(r->g->outputs[0], s - r->g->nodes);
    assert_string_equal(r->g->output_names[0], "h");
    lowered_free(r);
}

/* Every statement naming a new value (t1 = relu(t0) ...): the scope
 * lookups compare a bounded number of names per statement (a linear scan
 * made it quadratic: 4000 statements, about 8 million comparisons). */
static void named_statements_lower_in_linear_work(void **state)
{
    enum { N = 4000 };
    ax_buf src = {0};
    ax_buf_puts(&src, "@axiom function f(x::Float32[1, 4])\n    t0 = relu(x)\n");
    for (int i = 1; i <= N; i++) ax_buf_printf(&src, "    t%d = relu(t%d)\n", i, i - 1);
    ax_buf_printf(&src, "    return t%d\nend\n", N);
    long long before = lower_scope_compares;
    lowered *r = lower_ok(src.data);
    long long compares = lower_scope_compares - before;
    assert_true(compares <= 8LL * N);
    assert_int_equal(r->g->noutputs, 1);
    lowered_free(r);
    ax_buf_free(&src);
}

static void inputs_have_names_types_shapes(void **state)
{
    lowered *r = lower_ok("const L = 16\n"
                         "@axiom backend=cuda dtype=Float16 function f(x::Float32[1, L, 8], "
                         "i::Int64[1, L])\n    return x, i\nend\n");
    assert_int_equal(r->g->ninputs, 2);
    const ir_node *x = &r->g->nodes[r->g->inputs[0]], *i = &r->g->nodes[r->g->inputs[1]];
    assert_string_equal(x->name, "x");
    assert_int_equal(x->dtype, AXRT_F32);
    assert_shape(x, 3, (int64_t[]){1, 16, 8});
    assert_string_equal(i->name, "i");
    assert_int_equal(i->dtype, AXRT_I64);
    assert_int_equal(r->g->backend, IR_TARGET_cuda);
    assert_int_equal(r->g->dtype, AXRT_F16);
    lowered_free(r);
}

/* ---- constructors --------------------------------------------------------- */

static void dense_params_roles_and_bias_false(void **state)
{
    lowered *r = lower_ok("@axiom m(x::Float32[2, 3]) begin\n"
                         "    Dense(3 => 5, bias=false, activation=identity)\n"
                         "    Dense(5 => 7)\nend\n");
    assert_string_equal(param_names(r->g), "0.weight 1.weight 1.bias");
    const ir_node *w = param(r->g, "0.weight");
    assert_shape(w, 2, (int64_t[]){5, 3});
    assert_int_equal(w->role, IR_PARAM_GLOROT);
    assert_int_equal(param(r->g, "1.bias")->role, IR_PARAM_ZEROS);
    const ir_node *d0 = nth_op(r->g, IR_OP_dense, 0);
    assert_int_equal(d0->nsrc, 3);
    assert_int_equal(d0->src[2], IR_NONE);
    assert_int_equal(d0->attrs.act, IR_NONE);
    assert_int_equal(r->g->nnodes, 6); /* input, 3 params, 2 dense: identity adds nothing */
    lowered_free(r);
}

static void conv_attrs(void **state)
{
    lowered *r = lower_ok("@axiom function f(x::Float32[1, 8, 8, 4])\n"
                         "    a = Conv((3, 5), 4 => 8, stride=(2, 1), pad=(1, 2), dilation=2)\n"
                         "    b = Conv(3, 8 => 8, groups=in, pad=(1, 2, 3, 4), bias=false)\n"
                         "    c = Conv((1, 1), 8 => 4, groups=2, pad=same, activation=relu6)\n"
                         "    return x |> a |> b |> c\nend\n");
    assert_shape(param(r->g, "a.weight"), 4, (int64_t[]){8, 4, 3, 5});
    assert_shape(param(r->g, "b.weight"), 4, (int64_t[]){8, 1, 3, 3});
    assert_shape(param(r->g, "c.weight"), 4, (int64_t[]){4, 4, 1, 1});
    assert_string_equal(param_names(r->g), "a.weight a.bias b.weight c.weight c.bias");
    const ir_node *a = nth_op(r->g, IR_OP_conv, 0), *b = nth_op(r->g, IR_OP_conv, 1);
    const ir_node *c = nth_op(r->g, IR_OP_conv, 2);
    assert_int_equal(a->attrs.kernel[0], 3);
    assert_int_equal(a->attrs.kernel[1], 5);
    assert_int_equal(a->attrs.stride[0], 2);
    assert_int_equal(a->attrs.stride[1], 1);
    assert_int_equal(a->attrs.dilation[0], 2);
    assert_int_equal(a->attrs.dilation[1], 2);
    assert_memory_equal(a->attrs.pad, ((int[]){1, 2, 1, 2}), sizeof a->attrs.pad);
    assert_int_equal(a->attrs.groups, 1);
    /* (top, bottom, left, right) as written → attrs (top, left, bottom, right) */
    assert_memory_equal(b->attrs.pad, ((int[]){1, 3, 2, 4}), sizeof b->attrs.pad);
    assert_int_equal(b->attrs.groups, 8);
    assert_int_equal(b->src[2], IR_NONE);
    assert_true(c->attrs.pad_same);
    assert_int_equal(c->attrs.groups, 2);
    assert_int_equal(nth_op(r->g, IR_OP_relu6, 0)->src[0], c - r->g->nodes);
    lowered_free(r);
}

static void pools_flatten_dropout(void **state)
{
    lowered *r = lower_ok("@axiom m(x::Float32[1, 8, 8, 4]) begin\n"
                         "    MaxPool((2, 2))\n    MeanPool(3, stride=1, pad=1)\n"
                         "    Dropout(0.25)\n    GlobalMeanPool()\n    Flatten()\nend\n");
    const ir_node *mx = nth_op(r->g, IR_OP_maxpool, 0), *mn = nth_op(r->g, IR_OP_meanpool, 0);
    assert_int_equal(mx->attrs.stride[0], 2);
    assert_int_equal(mx->attrs.stride[1], 2);
    assert_int_equal(mx->attrs.kernel[1], 2);
    assert_int_equal(mn->attrs.kernel[0], 3);
    assert_int_equal(mn->attrs.stride[0], 1);
    assert_memory_equal(mn->attrs.pad, ((int[]){1, 1, 1, 1}), sizeof mn->attrs.pad);
    const ir_node *gp = nth_op(r->g, IR_OP_globalmeanpool, 0);
    assert_int_equal(gp->src[0], mn - r->g->nodes); /* Dropout is no node */
    assert_string_equal(gp->name, "3");
    const ir_node *fl = nth_op(r->g, IR_OP_reshape, 0);
    assert_true(fl->attrs.flatten);
    assert_int_equal(fl->attrs.nnewshape, 0);
    assert_string_equal(param_names(r->g), "");
    lowered_free(r);
}

static void norms_and_embedding(void **state)
{
    lowered *r = lower_ok("@axiom function f(i::Int32[2, 5], x::Float32[2, 5, 6])\n"
                         "    emb = Embedding(100 => 6)\n    bn = BatchNorm(6, eps=1e-3, activation=relu)\n"
                         "    ln = LayerNorm(6)\n"
                         "    return emb(i), ln(bn(x))\nend\n");
    assert_string_equal(param_names(r->g), "emb.weight bn.weight bn.bias bn.running_mean "
                        "bn.running_var ln.weight ln.bias");
    assert_shape(param(r->g, "emb.weight"), 2, (int64_t[]){100, 6});
    assert_int_equal(param(r->g, "bn.weight")->role, IR_PARAM_ONES);
    assert_int_equal(param(r->g, "bn.bias")->role, IR_PARAM_ZEROS);
    assert_int_equal(param(r->g, "bn.running_mean")->role, IR_PARAM_ZEROS);
    assert_int_equal(param(r->g, "bn.running_var")->role, IR_PARAM_ONES);
    assert_int_equal(param(r->g, "ln.weight")->role, IR_PARAM_ONES);
    const ir_node *bn = nth_op(r->g, IR_OP_batchnorm, 0), *ln = nth_op(r->g, IR_OP_layernorm, 0);
    assert_true(bn->attrs.eps == 1e-3);
    assert_true(ln->attrs.eps == 1e-5);
    assert_int_equal(bn->nsrc, 5);
    assert_int_equal(ln->src[0], nth_op(r->g, IR_OP_relu, 0) - r->g->nodes);
    assert_int_equal(nth_op(r->g, IR_OP_embedding, 0)->src[0], r->g->inputs[0]);
    lowered_free(r);
}

static void multihead_attention(void **state)
{
    lowered *r = lower_ok("@axiom function f(q::Float32[1, 4, 8], kv::Float32[1, 6, 8])\n"
                         "    att = MultiHeadAttention(8 => 2)\n"
                         "    nb = MultiHeadAttention(8 => 4, bias=false, causal=true)\n"
                         "    return att(q, kv, kv), nb(q)\nend\n");
    assert_string_equal(param_names(r->g), "att.in_proj_weight att.in_proj_bias "
                        "att.out_proj.weight att.out_proj.bias nb.in_proj_weight "
                        "nb.out_proj.weight");
    assert_shape(param(r->g, "att.in_proj_weight"), 2, (int64_t[]){24, 8});
    assert_shape(param(r->g, "att.in_proj_bias"), 1, (int64_t[]){24});
    assert_shape(param(r->g, "att.out_proj.weight"), 2, (int64_t[]){8, 8});
    const ir_node *a = nth_op(r->g, IR_OP_mha, 0), *b = nth_op(r->g, IR_OP_mha, 1);
    int qid = r->g->inputs[0], kvid = r->g->inputs[1];
    assert_int_equal(a->nsrc, 8);
    assert_int_equal(a->src[7], IR_NONE); /* no key mask */
    assert_int_equal(a->src[0], qid);
    assert_int_equal(a->src[1], kvid);
    assert_int_equal(a->src[2], kvid);
    assert_int_equal(a->attrs.heads, 2);
    assert_false(a->attrs.causal);
    assert_int_equal(b->src[1], qid);
    assert_int_equal(b->src[2], qid);
    assert_int_equal(b->src[4], IR_NONE);
    assert_int_equal(b->src[6], IR_NONE);
    assert_int_equal(b->attrs.heads, 4);
    assert_true(b->attrs.causal);
    lowered_free(r);
}

/* ---- functions, partial application, operators ----------------------------- */

static void activation_defaults_and_partial_application(void **state)
{
    lowered *r = lower_ok("@axiom m(x::Float32[2, 3]) begin\n"
                         "    Dense(3 => 3, activation=leaky_relu)\n    elu\n"
                         "    leaky_relu(alpha=0.2)\n    softmax(dims=0)\n    log_softmax\n"
                         "    silu\n    identity\nend\n");
    assert_true(nth_op(r->g, IR_OP_leaky_relu, 0)->attrs.alpha == 0.01);
    assert_string_equal(nth_op(r->g, IR_OP_leaky_relu, 0)->name, "0");
    assert_true(nth_op(r->g, IR_OP_elu, 0)->attrs.alpha == 1.0);
    assert_true(nth_op(r->g, IR_OP_leaky_relu, 1)->attrs.alpha == 0.2);
    assert_int_equal(nth_op(r->g, IR_OP_softmax, 0)->attrs.axis, 0);
    assert_int_equal(nth_op(r->g, IR_OP_log_softmax, 0)->attrs.axis, -1);
    const ir_node *sw = nth_op(r->g, IR_OP_swish, 0);
    assert_int_equal(r->g->outputs[0], sw - r->g->nodes); /* identity adds nothing */
    lowered_free(r);
}

static void shape_functions_and_reductions(void **state)
{
    lowered *r = lower_ok("@axiom function f(x::Float32[2, 3, 4])\n"
                         "    a = reshape(x, (6, -1))\n    b = transpose(x, (-1, 0, 1))\n"
                         "    c = concat(x, x, x; dims=1)\n    d = x |> mean(dims=-1)\n"
                         "    e = matmul(x, transpose(x, (0, 2, 1)))\n"
                         "    return a, b, c, d, e, maximum(x, dims=2), sum(x; dims=0)\nend\n");
    const ir_node *a = nth_op(r->g, IR_OP_reshape, 0);
    assert_int_equal(a->attrs.nnewshape, 2);
    assert_int_equal(a->attrs.newshape[0], 6);
    assert_int_equal(a->attrs.newshape[1], -1);
    assert_false(a->attrs.flatten);
    const ir_node *b = nth_op(r->g, IR_OP_transpose, 0);
    assert_int_equal(b->attrs.nperm, 3);
    assert_memory_equal(b->attrs.perm, ((int[]){2, 0, 1}), 3 * sizeof(int));
    const ir_node *c = nth_op(r->g, IR_OP_concat, 0);
    assert_int_equal(c->nsrc, 3);
    assert_int_equal(c->attrs.axis, 1);
    assert_int_equal(nth_op(r->g, IR_OP_mean, 0)->attrs.axis, -1);
    assert_int_equal(nth_op(r->g, IR_OP_maximum, 0)->attrs.axis, 2);
    assert_int_equal(nth_op(r->g, IR_OP_sum, 0)->attrs.axis, 0);
    assert_int_equal(nth_op(r->g, IR_OP_matmul, 0)->src[1],
                     nth_op(r->g, IR_OP_transpose, 1) - r->g->nodes);
    lowered_free(r);
}

static void scalars_and_operators(void **state)
{
    lowered *r = lower_ok("const S = 8\n@axiom function f(x::Float32[2, 3], y::Float32[3])\n"
                         "    a = 2.0 * x\n    b = x / S\n    c = -x\n    d = x + -2.5\n"
                         "    e = x .* y - x ./ y\n    return a, b, c, d, e\nend\n");
    const ir_node *mul = nth_op(r->g, IR_OP_mul, 0);
    const ir_node *s0 = &r->g->nodes[mul->src[0]];
    assert_int_equal(s0->op, IR_OP_scalar);
    assert_int_equal(s0->rank, 0);
    assert_true(s0->attrs.scalar == 2.0);
    const ir_node *div = nth_op(r->g, IR_OP_div, 0);
    assert_true(r->g->nodes[div->src[1]].attrs.scalar == 8.0);
    assert_int_equal(nth_op(r->g, IR_OP_neg, 0)->src[0], r->g->inputs[0]);
    const ir_node *add = nth_op(r->g, IR_OP_add, 0);
    assert_true(r->g->nodes[add->src[1]].attrs.scalar == -2.5); /* a negated literal folds */
    assert_int_equal(count_op(r->g, IR_OP_neg), 1);
    const ir_node *sub = nth_op(r->g, IR_OP_sub, 0);
    assert_int_equal(r->g->nodes[sub->src[0]].op, IR_OP_mul);
    assert_int_equal(r->g->nodes[sub->src[1]].op, IR_OP_div);
    lowered_free(r);
}

/* ---- consts and -D --------------------------------------------------------- */

static void const_values_and_overrides(void **state)
{
    static const char src[] = "const N = 4\nconst M = N * 2 + (N - 2) / 2\nconst H = N / 8\n"
                              "@axiom function f(x::Float32[1, M])\n"
                              "    return x |> Dense(M => N), x * H\nend\n";
    lowered *r = lower_ok(src);
    assert_shape(&r->g->nodes[r->g->inputs[0]], 2, (int64_t[]){1, 9});
    assert_shape(param(r->g, "0.weight"), 2, (int64_t[]){4, 9});
    assert_true(nth_op(r->g, IR_OP_scalar, 0)->attrs.scalar == 0.5);
    lowered_free(r);
    ax_define d = {"N", "6"};
    r = lower_src_defs(src, &d, 1);
    assert_non_null(r->g);
    assert_shape(&r->g->nodes[r->g->inputs[0]], 2, (int64_t[]){1, 14});
    assert_true(nth_op(r->g, IR_OP_scalar, 0)->attrs.scalar == 0.75);
    lowered_free(r);
}

static void bad_define_value_is_an_error(void **state)
{
    ax_define d = {"N", "4x"};
    lowered *r = lower_src_defs("const N = 4\n@axiom m(x::Float32[1, N]) begin\n    relu\nend\n",
                               &d, 1);
    assert_int_equal(r->ctx->errors, 1);
    assert_non_null(strstr(r->diag, "-D N=4x: the value is not a number"));
    lowered_free(r);
}

static void unknown_define_name_warns(void **state)
{
    ax_define d = {"NN", "3"};
    lowered *r = lower_src_defs("const N = 4\n@axiom m(x::Float32[1, N]) begin\n    relu\nend\n",
                               &d, 1);
    assert_non_null(r->g);
    assert_non_null(strstr(r->diag, "warning: -D NN: no const named 'NN' in the file; did you "
                                   "mean 'N'?"));
    lowered_free(r);
}

/* ---- errors ----------------------------------------------------------------- */

static void error_unknown_names_suggest(void **state)
{
    expect_errors("@axiom function f(x::Float32[1, 4])\n    h = x |> Dnse(4 => 4)\n"
                  "    g = sofmax(h)\n    return hh\nend\n",
                  "t.ax:2:14: error: unknown name 'Dnse'; did you mean 'Dense'?",
                  "t.ax:3:9: error: unknown name 'sofmax'; did you mean 'softmax'?",
                  "t.ax:4:12: error: unknown name 'hh'; did you mean 'h'?", NULL);
}

static void error_unknown_keyword_suggests(void **state)
{
    expect_errors("@axiom m(x::Float32[1, 4]) begin\n    Dense(4 => 4, activaton=relu)\n"
                  "    Conv(3, 4 => 4, strid=2)\nend\n",
                  "t.ax:2:19: error: Dense has no keyword 'activaton'; did you mean 'activation'?",
                  "error: Conv has no keyword 'strid'; did you mean 'stride'?", NULL);
}

static void error_positional_arguments(void **state)
{
    expect_errors("@axiom function f(x::Float32[1, 4])\n    a = Dense(4, 4)\n"
                  "    b = Conv(4 => 4)\n    c = Dense(4 => 2, 3)\n    return relu(x, x)\nend\n",
                  "t.ax:2:9: error: Dense expects (in => out)",
                  "t.ax:3:9: error: Conv expects ((kh, kw), in => out)",
                  "t.ax:4:9: error: Dense expects (in => out)",
                  "t.ax:5:12: error: relu expects (x)", NULL);
}

static void error_wrong_kind_of_value(void **state)
{
    expect_errors("@axiom function f(x::Float32[1, 4, 4, 2])\n"
                  "    c = Conv(3, 2 => 2, stride=(1, 2, 3), pad=(1, 2, 3), bias=1)\n"
                  "    d = Dense(2 => 2, activation=exp)\n    k = Dense(2 => 2, activation=relus)\n"
                  "    e = Conv(3, 2 => 4, groups=3)\n"
                  "    return x\nend\n",
                  "stride expects a positive integer or an (h, w) tuple",
                  "pad expects an integer, an (h, w) tuple, a (top, bottom, left, right) tuple or same",
                  "bias expects true or false",
                  "t.ax:3:34: error: activation expects an activation function name (relu, "
                  "gelu, ...), not 'exp'\n",
                  "t.ax:4:34: error: activation expects an activation function name (relu, "
                  "gelu, ...), not 'relus'; did you mean 'relu'?",
                  "groups=3 must divide both in (2) and out (4) channels", NULL);
}

static void error_layer_arguments(void **state)
{
    expect_errors("@axiom function f(x::Float32[1, 4])\n    d = Dense(4 => 4)\n"
                  "    a = MultiHeadAttention(4 => 2)\n    h = relu(x)\n    k = a(x, x, x, x, x)\n"
                  "    v = d\n    w = h(x)\n    u = x |> relu(x)\n    z = d(x, x)\n"
                  "    return x |> d(x)\nend\n",
                  "t.ax:5:9: error: layer 'a' (MultiHeadAttention) expects x, (x, mask), "
                  "(q, k, v) or (q, k, v, mask), got 5 inputs",
                  "t.ax:6:9: error: 'd' is a layer, not a value; apply it: d(x) or x |> d",
                  "t.ax:7:9: error: 'h' is a value, not a layer or function; it cannot be applied",
                  "t.ax:8:14: error: relu(...) applied to a value takes keyword arguments only",
                  "t.ax:9:9: error: layer 'd' (Dense) expects 1 input, got 2",
                  "t.ax:10:17: error: 'd(...)' is not a layer or a function", NULL);
}

static void error_duplicate_layers(void **state)
{
    expect_errors("@axiom function f(x::Float32[1, 4])\n    d = Dense(4 => 4)\n"
                  "    d = Dense(4 => 4)\n    return d(x)\nend\n",
                  "t.ax:3:5: error: duplicate layer name 'd'", NULL);
    expect_errors("@axiom m(x::Float32[1, 4]) begin\n    fc = Dense(4 => 4)\n"
                  "    fc = Dense(4 => 4)\nend\n", "t.ax:3:5: error: duplicate layer name 'fc'",
                  NULL);
}

static void error_operators(void **state)
{
    expect_errors("@axiom function f(x::Float32[1, 4])\n    a = x * x\n    b = x / x\n"
                  "    return a\nend\n",
                  "t.ax:2:9: error: '*' needs a scalar on one side; use '.*' for an elementwise "
                  "product or matmul(a, b) for a matrix product",
                  "t.ax:3:9: error: '/' needs a scalar on one side; use './'", NULL);
}

static void error_model_structure(void **state)
{
    expect_errors("@axiom function f(x::Float32[1, 4])\n    h = relu(x)\nend\n",
                  "t.ax:1:17: error: model 'f' has no return statement", NULL);
    expect_errors("@axiom m(x::Float32[1, 4], y::Float32[1, 4]) begin\n    relu\nend\n",
                  "error: a chain model (begin ... end) takes exactly one input; 'm' has 2", NULL);
    expect_errors("@axiom m(x::Float32[1, 0]) begin\n    relu\nend\n",
                  "t.ax:1:24: error: dimension 1 of input 'x' must be a positive integer", NULL);
    expect_errors("@axiom bakend=cuda dtype=Float31 m(x::Float33[1]) begin\n    relu\nend\n",
                  "error: unknown model option 'bakend'; did you mean 'backend'?",
                  "error: unknown model dtype 'Float31'",
                  "error: unknown element type 'Float33'; did you mean 'Float32'?", NULL);
}

static void error_layer_argument_ranges(void **state)
{
    expect_errors("@axiom function f(x::Float32[1, 4])\n"
                  "    a = MultiHeadAttention(10 => 3)\n    b = Dropout(1.0)\n"
                  "    c = reshape(x, (-1, -1))\n    d = transpose(x, (0, 0))\n"
                  "    e = sum(x)\n    return c\nend\n",
                  "MultiHeadAttention: d (10) must be a multiple of heads (3)",
                  "Dropout probability must be in [0, 1), got 1",
                  "reshape dimensions must be positive integers (one -1 allowed)",
                  "transpose expects a permutation of 0..1",
                  "t.ax:6:9: error: sum needs dims=k or dims=(k0, k1, ...) (the axes)", NULL);
}

static void errors_are_collected(void **state)
{
    lowered *r = lower_src("@axiom function f(x::Float32[1, 4])\n    a = Dnse(4 => 4)\n"
                          "    b = x * x\n    c = relu(x, x)\n    return x\nend\n");
    assert_non_null(r->g);
    assert_int_equal(r->ctx->errors, 3);
    lowered_free(r);
}

/* After a failed chain statement the rest still lowers (its own errors are
 * reported: 'bais'), but on a marked stand-in, so pass_shape reports nothing
 * against Dense(8 => 2), which would mismatch the value before the failure. */
static void failed_chain_statement_does_not_cascade(void **state)
{
    lowered *r = lower_src("@axiom m(x::Float32[1, 4]) begin\n    Dense(4 => 4)\n"
                           "    Dnse(4 => 8)\n    Dense(8 => 2, bais=false)\n"
                           "    Dense(8 => 2)\nend\n");
    assert_int_equal(r->ctx->errors, 2);
    assert_non_null(strstr(r->diag, "t.ax:3:5: error: unknown name 'Dnse'; did you mean 'Dense'?"));
    assert_non_null(strstr(r->diag, "t.ax:4:19: error: Dense has no keyword 'bais'"));
    assert_int_equal(pass_shape(r->g), 0);
    assert_int_equal(r->ctx->errors, 2);
    lowered_free(r);
}

/* An input with a bad element type is a failed value: using it is silent. */
static void failed_input_is_used_silently(void **state)
{
    lowered *r = lower_src("@axiom function f(x::Float33[1, 4])\n    return relu(x)\nend\n");
    assert_int_equal(r->ctx->errors, 1);
    assert_non_null(strstr(r->diag, "t.ax:1:22: error: unknown element type 'Float33'"));
    lowered_free(r);
}

/* A shape error independent of a lowering error is still found. */
static void shape_error_independent_of_lowering_error(void **state)
{
    lowered *r = lower_src("@axiom function f(x::Float32[1, 4])\n    a = Dense(4 => 4, bais=false)\n"
                           "    b = Dense(8 => 2)\n    return a(x), b(x)\nend\n");
    assert_int_equal(r->ctx->errors, 1);
    assert_int_equal(pass_shape(r->g), 1);
    fflush(r->ctx->diag_out);
    assert_non_null(strstr(r->diag, "t.ax:4:18: error: Dense 'b' (8 => 2) expects input [..., 8] "
                                   "but gets [1, 4]"));
    lowered_free(r);
}

static void statement_without_binding_warns(void **state)
{
    lowered *r = lower_src("@axiom function f(x::Float32[1, 4])\n    relu(x)\n    return x\nend\n");
    assert_non_null(r->g);
    assert_non_null(strstr(r->diag, "t.ax:2:5: warning: statement has no effect"));
    assert_int_equal(count_op(r->g, IR_OP_relu), 0);
    lowered_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chain_positional_names_count_bare_activations),
        cmocka_unit_test(chain_labels_name_layers),
        cmocka_unit_test(function_form_names_and_shared_layers),
        cmocka_unit_test(rebinding_shadows_values),
        cmocka_unit_test(named_statements_lower_in_linear_work),
        cmocka_unit_test(inputs_have_names_types_shapes),
        cmocka_unit_test(dense_params_roles_and_bias_false),
        cmocka_unit_test(conv_attrs),
        cmocka_unit_test(pools_flatten_dropout),
        cmocka_unit_test(norms_and_embedding),
        cmocka_unit_test(multihead_attention),
        cmocka_unit_test(activation_defaults_and_partial_application),
        cmocka_unit_test(shape_functions_and_reductions),
        cmocka_unit_test(scalars_and_operators),
        cmocka_unit_test(const_values_and_overrides),
        cmocka_unit_test(bad_define_value_is_an_error),
        cmocka_unit_test(unknown_define_name_warns),
        cmocka_unit_test(error_unknown_names_suggest),
        cmocka_unit_test(error_unknown_keyword_suggests),
        cmocka_unit_test(error_positional_arguments),
        cmocka_unit_test(error_wrong_kind_of_value),
        cmocka_unit_test(error_layer_arguments),
        cmocka_unit_test(error_duplicate_layers),
        cmocka_unit_test(error_operators),
        cmocka_unit_test(error_model_structure),
        cmocka_unit_test(error_layer_argument_ranges),
        cmocka_unit_test(errors_are_collected),
        cmocka_unit_test(failed_chain_statement_does_not_cascade),
        cmocka_unit_test(shape_error_independent_of_lowering_error),
        cmocka_unit_test(failed_input_is_used_silently),
        cmocka_unit_test(statement_without_binding_warns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
