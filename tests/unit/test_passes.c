/* test_passes.c — pass_shape (shape rules and every error message),
 * pass_dtype (docs/language.md#dtype-rules modes, casts, integer inputs) and pass_memplan
 * (exact small plan, and a property test over random graphs: no two
 * simultaneously live buffers overlap, peak >= lower bound, alignment).
 * Conv and pool output sizes were computed with PyTorch, not with axc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_target.h"
#include "lower.h"
#include "passes.h"
#include "test_support.h"

/* ---- graph building ----------------------------------------------------- */

#define DIMS(...) (const int64_t[]){__VA_ARGS__}, \
    (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define SRCS(...) (const int[]){__VA_ARGS__}, (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int))

static ir_graph *new_graph(const char *name)
{
    ir_graph *g = ir_graph_new(test_ctx_new(NULL, NULL), name, ax_noloc());
    g->target = &cg_target_get(IR_TARGET_c)->facts;
    g->wording = &lower_ax_wording; /* messages as the .ax front end words them */
    return g;
}

static void free_graph(ir_graph *g)
{
    ax_ctx *ctx = g->ctx;
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

#define INPUT(g, name, ...) test_add_source(g, IR_OP_input, name, AXRT_F32, DIMS(__VA_ARGS__))
#define INPUT_T(g, name, t, ...) test_add_source(g, IR_OP_input, name, t, DIMS(__VA_ARGS__))
#define PARAM(g, name, ...) test_add_source(g, IR_OP_param, name, AXRT_F32, DIMS(__VA_ARGS__))
#define NODE(g, op, ...) node_of(g, op, SRCS(__VA_ARGS__))

static int node_of(ir_graph *g, ir_op op, const int *src, int nsrc)
{
    return ir_add(g, op, src, nsrc, ax_noloc());
}

static int scalar(ir_graph *g, double value)
{
    int id = ir_add(g, IR_OP_scalar, NULL, 0, ax_noloc());
    ir_at(g, id)->attrs.scalar = value;
    return id;
}

static void output(ir_graph *g, int id)
{
    ir_add_output(g, id, NULL);
}

static void check_shape(ir_graph *g, int id, const int64_t *dims, int rank)
{
    const ir_node *n = ir_at(g, id);
    assert_int_equal(n->rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(n->shape[i], dims[i]);
}
#define ASSERT_SHAPE(g, id, ...) check_shape(g, id, DIMS(__VA_ARGS__))

/* Runs pass_shape and checks it reported exactly this one error. */
static void expect_shape_error(ir_graph *g, const char *message)
{
    char expected[512];
    snprintf(expected, sizeof expected, "axc: error: %s\n", message);
    assert_int_equal(pass_shape(g), 1);
    assert_string_equal(test_diagnostics(g->ctx), expected);
}

/* A binary op of two fresh inputs; returns the graph (op node is %2). */
static ir_graph *binary_graph(ir_op op, const int64_t *a, int ra, const int64_t *b, int rb)
{
    ir_graph *g = new_graph("m");
    int x = test_add_source(g, IR_OP_input, "a", AXRT_F32, a, ra);
    int y = test_add_source(g, IR_OP_input, "b", AXRT_F32, b, rb);
    output(g, NODE(g, op, x, y));
    return g;
}

/* Dense layer `name` (in => out) on an input of the given shape. */
static ir_graph *dense_graph(const char *name, int64_t in, int64_t out, const int64_t *xs, int rank)
{
    ir_graph *g = new_graph("mlp");
    int x = test_add_source(g, IR_OP_input, "x", AXRT_F32, xs, rank);
    int w = PARAM(g, "weight", out, in);
    int b = PARAM(g, "bias", out);
    int d = NODE(g, IR_OP_dense, x, w, b);
    ir_at(g, d)->name = name;
    output(g, d);
    return g;
}

/* ---- elementwise, dense, matmul ----------------------------------------- */

static void test_dense_shapes_and_errors(void **state)
{
    (void)state;
    ir_graph *g = dense_graph("0", 784, 256, DIMS(3, 5, 784));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 3, 3, 5, 256);
    free_graph(g);

    g = dense_graph("0", 784, 256, DIMS(1, 512));
    expect_shape_error(g, "Dense(784 => 256) expects input [..., 784] but gets [1, 512]");
    assert_int_equal(ir_at(g, 3)->rank, -1);
    free_graph(g);

    g = dense_graph("fc1", 784, 256, DIMS(1, 512));
    expect_shape_error(g, "Dense 'fc1' (784 => 256) expects input [..., 784] but gets [1, 512]");
    free_graph(g);

    g = new_graph("mlp");
    int x = INPUT(g, "x", 2, 4);
    int d = NODE(g, IR_OP_dense, x, PARAM(g, "w", 3, 4), PARAM(g, "b", 4));
    output(g, d);
    expect_shape_error(g, "Dense(4 => 3) expects bias [3] but gets [4]");
    free_graph(g);
}

static void test_one_error_per_mistake(void **state)
{
    (void)state;
    ir_graph *g = dense_graph("0", 784, 256, DIMS(1, 512));
    int relu = NODE(g, IR_OP_relu, 3);
    int sum = NODE(g, IR_OP_add, relu, relu);
    int a = INPUT(g, "a", 2, 3), b = INPUT(g, "b", 4);
    int bad = NODE(g, IR_OP_add, a, b);
    int fine = NODE(g, IR_OP_relu, a);
    output(g, sum);
    output(g, bad);
    output(g, fine);
    assert_int_equal(pass_shape(g), 2);
    assert_string_equal(test_diagnostics(g->ctx),
                        "axc: error: Dense(784 => 256) expects input [..., 784] but gets [1, 512]\n"
                        "axc: error: cannot broadcast [2, 3] and [4] in '+'\n");
    assert_int_equal(ir_at(g, sum)->rank, -1);
    ASSERT_SHAPE(g, fine, 2, 3);
    free_graph(g);
}

static void test_broadcasting(void **state)
{
    (void)state;
    ir_graph *g = binary_graph(IR_OP_add, DIMS(2, 3), DIMS(3));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 2, 2, 3);
    free_graph(g);

    g = binary_graph(IR_OP_mul, DIMS(4, 1, 3), DIMS(2, 1));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 2, 4, 2, 3);
    free_graph(g);

    g = binary_graph(IR_OP_sub, DIMS(1), DIMS(5, 1, 7));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 2, 5, 1, 7);
    free_graph(g);

    g = new_graph("m");
    int x = INPUT(g, "x", 2, 3);
    int two = scalar(g, 2.0);
    int prod = NODE(g, IR_OP_mul, two, x);
    output(g, prod);
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, prod, 2, 3);
    free_graph(g);

    static const struct { ir_op op; const char *text; } errors[] = {
        {IR_OP_add, "cannot broadcast [2, 3] and [4] in '+'"},
        {IR_OP_sub, "cannot broadcast [2, 3] and [4] in '-'"},
        {IR_OP_mul, "cannot broadcast [2, 3] and [4] in '.*'"},
        {IR_OP_div, "cannot broadcast [2, 3] and [4] in './'"},
    };
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        g = binary_graph(errors[i].op, DIMS(2, 3), DIMS(4));
        expect_shape_error(g, errors[i].text);
        free_graph(g);
    }
}

/* Shapes checked against torch.matmul (python3 -c "import torch; ...":
 * [7,1,2,3]x[5,3,4] -> [7,5,2,4], [3]x[2,3,5] -> [2,5], [2,5,3]x[3] -> [2,5],
 * [3]x[3] -> []). */
static void test_matmul(void **state)
{
    (void)state;
    ir_graph *g = binary_graph(IR_OP_matmul, DIMS(7, 1, 2, 3), DIMS(5, 3, 4));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 2, 7, 5, 2, 4);
    free_graph(g);
    g = binary_graph(IR_OP_matmul, DIMS(3), DIMS(2, 3, 5));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 2, 2, 5);
    free_graph(g);
    g = binary_graph(IR_OP_matmul, DIMS(2, 5, 3), DIMS(3));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 2, 2, 5);
    free_graph(g);
    g = binary_graph(IR_OP_matmul, DIMS(3), DIMS(3));
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(ir_at(g, 2)->rank, 0);
    free_graph(g);
    g = binary_graph(IR_OP_matmul, DIMS(2, 3), DIMS(3, 4));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 2, 2, 4);
    free_graph(g);

    g = binary_graph(IR_OP_matmul, DIMS(2, 3), DIMS(4, 5));
    expect_shape_error(g, "matmul of [2, 3] and [4, 5]: inner dimensions 3 and 4 differ");
    free_graph(g);
    g = binary_graph(IR_OP_matmul, DIMS(2, 2, 3), DIMS(5, 3, 4));
    expect_shape_error(g, "matmul of [2, 2, 3] and [5, 3, 4]: batch dimensions [2] and [5] do not broadcast");
    free_graph(g);
    g = new_graph("m");
    output(g, NODE(g, IR_OP_matmul, scalar(g, 1.0), INPUT(g, "b", 3)));
    expect_shape_error(g, "matmul of [] and [3]: operands must have at least one dimension");
    free_graph(g);
}

/* ---- axes, reshape, transpose, concat ----------------------------------- */

static ir_graph *axis_graph(ir_op op, int axis)
{
    ir_graph *g = new_graph("m");
    int x = INPUT(g, "x", 2, 3, 4);
    int r = NODE(g, op, x);
    ir_at(g, r)->attrs.axis = axis;
    output(g, r);
    return g;
}

static void test_axes(void **state)
{
    (void)state;
    ir_graph *g = axis_graph(IR_OP_sum, -1);
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(ir_at(g, 1)->attrs.axis, 2);
    ASSERT_SHAPE(g, 1, 2, 3, 1);
    free_graph(g);
    g = axis_graph(IR_OP_maximum, 0);
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 1, 1, 3, 4);
    free_graph(g);
    g = axis_graph(IR_OP_softmax, -3);
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(ir_at(g, 1)->attrs.axis, 0);
    ASSERT_SHAPE(g, 1, 2, 3, 4);
    free_graph(g);
    g = axis_graph(IR_OP_mean, 3);
    expect_shape_error(g, "mean: dims=3 is out of range for input [2, 3, 4]");
    free_graph(g);
    g = axis_graph(IR_OP_log_softmax, -4);
    expect_shape_error(g, "log_softmax: dims=-4 is out of range for input [2, 3, 4]");
    free_graph(g);
}

static ir_graph *reshape_graph(const int64_t *to, int n)
{
    ir_graph *g = new_graph("m");
    int x = INPUT(g, "x", 2, 3, 4);
    int r = NODE(g, IR_OP_reshape, x);
    ir_at(g, r)->attrs.nnewshape = n;
    memcpy(ir_at(g, r)->attrs.newshape, to, (size_t)n * sizeof *to);
    output(g, r);
    return g;
}

static void test_reshape_and_flatten(void **state)
{
    (void)state;
    ir_graph *g = reshape_graph(DIMS(4, -1));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 1, 4, 6);
    free_graph(g);
    g = reshape_graph(DIMS(24));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 1, 24);
    free_graph(g);
    g = reshape_graph(DIMS(-1, 2, -1));
    expect_shape_error(g, "reshape to (-1, 2, -1): at most one dimension may be -1");
    free_graph(g);
    g = reshape_graph(DIMS(0, 24));
    expect_shape_error(g, "reshape to (0, 24): dimensions must be positive or -1");
    free_graph(g);
    g = reshape_graph(DIMS(5, 5));
    expect_shape_error(g, "cannot reshape [2, 3, 4] (24 elements) to (5, 5)");
    free_graph(g);
    g = reshape_graph(DIMS(5, -1));
    expect_shape_error(g, "cannot reshape [2, 3, 4] (24 elements) to (5, -1)");
    free_graph(g);

    g = new_graph("m");
    int x = INPUT(g, "x", 2, 3, 4, 5);
    int f = NODE(g, IR_OP_reshape, x);
    ir_at(g, f)->attrs.flatten = true;
    output(g, f);
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, f, 2, 60);
    free_graph(g);
    g = new_graph("m");
    f = NODE(g, IR_OP_reshape, INPUT(g, "x", 5));
    ir_at(g, f)->attrs.flatten = true;
    output(g, f);
    expect_shape_error(g, "Flatten() expects input [N, ...] with rank >= 2 but gets [5]");
    free_graph(g);
}

static ir_graph *transpose_graph(const int *perm, int n)
{
    ir_graph *g = new_graph("m");
    int t = NODE(g, IR_OP_transpose, INPUT(g, "x", 2, 3, 4));
    ir_at(g, t)->attrs.nperm = n;
    memcpy(ir_at(g, t)->attrs.perm, perm, (size_t)n * sizeof *perm);
    output(g, t);
    return g;
}

static void test_transpose(void **state)
{
    (void)state;
    ir_graph *g = transpose_graph(SRCS(2, 0, 1));
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, 1, 4, 2, 3);
    free_graph(g);
    g = transpose_graph(SRCS(0, 0, 1));
    expect_shape_error(g, "transpose of [2, 3, 4] by (0, 0, 1): not a permutation of 0..2");
    free_graph(g);
    g = transpose_graph(SRCS(1, 0));
    expect_shape_error(g, "transpose of [2, 3, 4] by (1, 0): not a permutation of 0..2");
    free_graph(g);
    g = transpose_graph(SRCS(0, 3, 1));
    expect_shape_error(g, "transpose of [2, 3, 4] by (0, 3, 1): not a permutation of 0..2");
    free_graph(g);
}

static void test_concat(void **state)
{
    (void)state;
    ir_graph *g = new_graph("m");
    int c = NODE(g, IR_OP_concat, INPUT(g, "a", 2, 3), INPUT(g, "b", 2, 5), INPUT(g, "c", 2, 1));
    ir_at(g, c)->attrs.axis = -1;
    output(g, c);
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, c, 2, 9);
    assert_int_equal(ir_at(g, c)->attrs.axis, 1);
    free_graph(g);

    g = new_graph("m");
    c = NODE(g, IR_OP_concat, INPUT(g, "a", 2, 3), INPUT(g, "b", 4, 5));
    ir_at(g, c)->attrs.axis = 1;
    output(g, c);
    expect_shape_error(g, "concat along dims=1: [2, 3] and [4, 5] differ in dimension 0");
    free_graph(g);
    g = new_graph("m");
    c = NODE(g, IR_OP_concat, INPUT(g, "a", 2, 3), INPUT(g, "b", 2, 3, 4));
    output(g, c);
    expect_shape_error(g, "concat along dims=0: [2, 3] and [2, 3, 4] differ in rank");
    free_graph(g);
    g = new_graph("m");
    c = NODE(g, IR_OP_concat, INPUT(g, "a", 2, 3), INPUT(g, "b", 2, 3));
    ir_at(g, c)->attrs.axis = 2;
    output(g, c);
    expect_shape_error(g, "concat: dims=2 is out of range for input [2, 3]");
    free_graph(g);
}

/* ---- norms, conv, pools ------------------------------------------------- */

static void test_norms(void **state)
{
    (void)state;
    ir_graph *g = new_graph("m");
    int ln = NODE(g, IR_OP_layernorm, INPUT(g, "x", 1, 128, 768), PARAM(g, "w", 768), PARAM(g, "b", 768));
    ir_at(g, ln)->name = "ln1";
    output(g, ln);
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, ln, 1, 128, 768);
    free_graph(g);

    g = new_graph("m");
    ln = NODE(g, IR_OP_layernorm, INPUT(g, "x", 1, 128, 512), PARAM(g, "w", 768), PARAM(g, "b", 768));
    ir_at(g, ln)->name = "ln1";
    output(g, ln);
    expect_shape_error(g, "LayerNorm 'ln1' (768) expects input [..., 768] but gets [1, 128, 512]");
    free_graph(g);

    g = new_graph("m");
    int bn = NODE(g, IR_OP_batchnorm, INPUT(g, "x", 1, 8, 8, 16), PARAM(g, "w", 32), PARAM(g, "b", 32),
                  PARAM(g, "m", 32), PARAM(g, "v", 32));
    ir_at(g, bn)->name = "1";
    output(g, bn);
    expect_shape_error(g, "BatchNorm(32) expects input [..., 32] but gets [1, 8, 8, 16]");
    free_graph(g);

    g = new_graph("m");
    bn = NODE(g, IR_OP_batchnorm, INPUT(g, "x", 1, 16), PARAM(g, "w", 16), PARAM(g, "b", 16),
              PARAM(g, "m", 16), PARAM(g, "v", 15));
    output(g, bn);
    expect_shape_error(g, "BatchNorm(16) expects parameter [16] but gets [15]");
    free_graph(g);
}

typedef struct window_case {
    int64_t h, w, cin, cout;
    int kh, kw, stride[2], pad[4], dilation[2], groups;
    bool same;
    int64_t out_h, out_w;          /* from PyTorch */
    int same_pad[4];               /* expected pads for pad=same */
} window_case;

static ir_graph *conv_graph(const window_case *c)
{
    ir_graph *g = new_graph("m");
    int x = INPUT(g, "x", 1, c->h, c->w, c->cin);
    int w = PARAM(g, "weight", c->cout, c->cin / (c->groups ? c->groups : 1), c->kh, c->kw);
    int conv = NODE(g, IR_OP_conv, x, w, PARAM(g, "bias", c->cout));
    ir_attrs *a = &ir_at(g, conv)->attrs;
    a->kernel[0] = c->kh;
    a->kernel[1] = c->kw;
    memcpy(a->stride, c->stride, sizeof a->stride);
    memcpy(a->pad, c->pad, sizeof a->pad);
    memcpy(a->dilation, c->dilation, sizeof a->dilation);
    a->groups = c->groups;
    a->pad_same = c->same;
    output(g, conv);
    return g;
}

/* Expected sizes from torch.nn.Conv2d on zeros of the NCHW equivalent
 * (python3: nn.Conv2d(cin, cout, k, stride, padding, dilation, groups)(x).shape):
 * A 32x32 k3 s1 p1 -> 32x32; B 224x200 k7 s2 p3 -> 112x100;
 * C 15x17 k(3,5) s(2,3) p(1,2) d(2,1) -> 7x6; D 10x10 k3 groups=4 -> 8x8;
 * E 9x6 k4 d2 padding='same' -> 9x6; F 8x8 k(4,3) padding='same' -> 8x8,
 * whose pads (top 1, bottom 2, left 1, right 1) were confirmed by comparing
 * against F.pad + conv2d.  G is pad=same with stride 2: ceil(H/stride). */
static void test_conv_sizes_match_torch(void **state)
{
    (void)state;
    static const window_case cases[] = {
        {32, 32, 3, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, false, 32, 32, {0}},
        {224, 200, 3, 64, 7, 7, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, false, 112, 100, {0}},
        {15, 17, 4, 6, 3, 5, {2, 3}, {1, 2, 1, 2}, {2, 1}, 1, false, 7, 6, {0}},
        {10, 10, 8, 16, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}, 4, false, 8, 8, {0}},
        {9, 6, 2, 2, 4, 4, {1, 1}, {0}, {2, 2}, 1, true, 9, 6, {3, 3, 3, 3}},
        {8, 8, 2, 2, 4, 3, {1, 1}, {0}, {1, 1}, 1, true, 8, 8, {1, 1, 2, 1}},
        {7, 8, 3, 4, 3, 3, {2, 2}, {0}, {1, 1}, 1, true, 4, 4, {1, 0, 1, 1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const window_case *c = &cases[i];
        ir_graph *g = conv_graph(c);
        assert_int_equal(pass_shape(g), 0);
        ASSERT_SHAPE(g, 3, 1, c->out_h, c->out_w, c->cout);
        if (c->same)
            assert_memory_equal(ir_at(g, 3)->attrs.pad, c->same_pad, sizeof c->same_pad);
        free_graph(g);
    }
}

static void test_conv_errors(void **state)
{
    (void)state;
    window_case c = {32, 32, 3, 64, 3, 3, {1, 1}, {0}, {1, 1}, 1, false, 0, 0, {0}};
    ir_graph *g = conv_graph(&c);
    ir_at(g, 0)->shape[3] = 4;
    expect_shape_error(g, "Conv((3, 3), 3 => 64) expects input [N, H, W, 3] but gets [1, 32, 32, 4]");
    free_graph(g);

    g = conv_graph(&c);
    ir_at(g, 0)->rank = 3;
    ir_at(g, 3)->name = "stem";
    expect_shape_error(g, "Conv 'stem' ((3, 3), 3 => 64) expects input [N, H, W, 3] but gets [1, 32, 32]");
    free_graph(g);

    window_case grouped = {8, 8, 6, 64, 3, 3, {1, 1}, {0}, {1, 1}, 4, false, 0, 0, {0}};
    g = conv_graph(&grouped);
    expect_shape_error(g, "Conv((3, 3), 4 => 64): groups=4 must divide the input channels (6) and the "
                          "output channels (64)");
    free_graph(g);

    window_case small = {4, 4, 3, 8, 5, 5, {1, 1}, {0}, {1, 1}, 1, false, 0, 0, {0}};
    g = conv_graph(&small);
    expect_shape_error(g, "Conv((5, 5), 3 => 8) on input [1, 4, 4, 3] gives an empty output (H' = 0, W' = 0)");
    free_graph(g);

    window_case zero_stride = {8, 8, 3, 8, 3, 3, {0, 1}, {0}, {1, 1}, 1, false, 0, 0, {0}};
    g = conv_graph(&zero_stride);
    expect_shape_error(g, "Conv((3, 3), 3 => 8): kernel, stride and dilation must be positive and "
                          "padding not negative");
    free_graph(g);
}

static ir_graph *pool_graph(ir_op op, const window_case *c)
{
    ir_graph *g = new_graph("m");
    int p = NODE(g, op, INPUT(g, "x", 2, c->h, c->w, 3));
    ir_attrs *a = &ir_at(g, p)->attrs;
    a->kernel[0] = c->kh;
    a->kernel[1] = c->kw;
    memcpy(a->stride, c->stride, sizeof a->stride);
    memcpy(a->pad, c->pad, sizeof a->pad);
    output(g, p);
    return g;
}

/* From torch: MaxPool2d(3, 2, 1) on 112x112 -> 56x56; AvgPool2d(2, 2) on
 * 7x7 -> 3x3; MaxPool2d((3, 2), (1, 2), (1, 0)) on 5x9 -> 5x4; MaxPool2d(2, 2,
 * padding=2) raises "pad should be at most half of kernel size". */
static void test_pools(void **state)
{
    (void)state;
    static const struct { ir_op op; window_case c; } cases[] = {
        {IR_OP_maxpool, {112, 112, 0, 0, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, false, 56, 56, {0}}},
        {IR_OP_meanpool, {7, 7, 0, 0, 2, 2, {2, 2}, {0}, {1, 1}, 1, false, 3, 3, {0}}},
        {IR_OP_maxpool, {5, 9, 0, 0, 3, 2, {1, 2}, {1, 0, 1, 0}, {1, 1}, 1, false, 5, 4, {0}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ir_graph *g = pool_graph(cases[i].op, &cases[i].c);
        assert_int_equal(pass_shape(g), 0);
        ASSERT_SHAPE(g, 1, 2, cases[i].c.out_h, cases[i].c.out_w, 3);
        free_graph(g);
    }
    window_case too_much = {8, 8, 0, 0, 2, 2, {2, 2}, {2, 2, 2, 2}, {1, 1}, 1, false, 0, 0, {0}};
    ir_graph *g = pool_graph(IR_OP_maxpool, &too_much);
    expect_shape_error(g, "MaxPool((2, 2)) has padding (2, 2, 2, 2) but padding must be at most half the kernel");
    free_graph(g);

    g = new_graph("m");
    output(g, NODE(g, IR_OP_meanpool, INPUT(g, "x", 8, 8)));
    ir_at(g, 1)->attrs.kernel[0] = ir_at(g, 1)->attrs.kernel[1] = 2;
    expect_shape_error(g, "MeanPool((2, 2)) expects input [N, H, W, C] but gets [8, 8]");
    free_graph(g);

    g = new_graph("m");
    int gp = NODE(g, IR_OP_globalmeanpool, INPUT(g, "x", 2, 7, 7, 512));
    output(g, gp);
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, gp, 2, 512);
    free_graph(g);
    g = new_graph("m");
    output(g, NODE(g, IR_OP_globalmeanpool, INPUT(g, "x", 2, 512)));
    expect_shape_error(g, "GlobalMeanPool() expects input [N, H, W, C] but gets [2, 512]");
    free_graph(g);
}

/* ---- attention, embedding ----------------------------------------------- */

static ir_graph *mha_graph(const int64_t *qs, const int64_t *ks, const int64_t *vs, int64_t d, int heads)
{
    ir_graph *g = new_graph("m");
    int q = INPUT(g, "q", qs[0], qs[1], qs[2]);
    int k = INPUT(g, "k", ks[0], ks[1], ks[2]);
    int v = INPUT(g, "v", vs[0], vs[1], vs[2]);
    int m = NODE(g, IR_OP_mha, q, k, v, PARAM(g, "in_proj_weight", 3 * d, d),
                 PARAM(g, "in_proj_bias", 3 * d), PARAM(g, "out_proj.weight", d, d), IR_NONE,
                 IR_NONE);
    ir_at(g, m)->attrs.heads = heads;
    ir_at(g, m)->name = "attn";
    output(g, m);
    return g;
}

static void test_mha(void **state)
{
    (void)state;
    ir_graph *g = mha_graph((int64_t[]){2, 10, 64}, (int64_t[]){2, 7, 64}, (int64_t[]){2, 7, 64}, 64, 8);
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, g->outputs[0], 2, 10, 64);
    free_graph(g);
    g = mha_graph((int64_t[]){2, 10, 64}, (int64_t[]){2, 7, 64}, (int64_t[]){2, 7, 64}, 64, 7);
    expect_shape_error(g, "MultiHeadAttention 'attn' (64 => 7): embedding dim 64 is not divisible by 7 heads");
    free_graph(g);
    g = mha_graph((int64_t[]){2, 10, 64}, (int64_t[]){2, 5, 64}, (int64_t[]){2, 6, 64}, 64, 8);
    expect_shape_error(g, "MultiHeadAttention 'attn' (64 => 8): key [2, 5, 64] and value [2, 6, 64] differ in length");
    free_graph(g);
    g = mha_graph((int64_t[]){2, 10, 32}, (int64_t[]){2, 5, 64}, (int64_t[]){2, 5, 64}, 64, 8);
    expect_shape_error(g, "MultiHeadAttention 'attn' (64 => 8) expects query [N, L, 64] but gets [2, 10, 32]");
    free_graph(g);
    g = mha_graph((int64_t[]){2, 10, 64}, (int64_t[]){3, 5, 64}, (int64_t[]){3, 5, 64}, 64, 8);
    expect_shape_error(g, "MultiHeadAttention 'attn' (64 => 8) expects key [2, S, 64] but gets [3, 5, 64]");
    free_graph(g);
}

static void test_embedding(void **state)
{
    (void)state;
    ir_graph *g = new_graph("m");
    int e = NODE(g, IR_OP_embedding, INPUT_T(g, "ids", AXRT_I64, 2, 5), PARAM(g, "weight", 1000, 64));
    output(g, e);
    assert_int_equal(pass_shape(g), 0);
    ASSERT_SHAPE(g, e, 2, 5, 64);
    assert_int_equal(ir_at(g, e)->dtype, AXRT_F32);
    free_graph(g);
    g = new_graph("m");
    output(g, NODE(g, IR_OP_embedding, INPUT(g, "ids", 2, 5), PARAM(g, "weight", 1000, 64)));
    expect_shape_error(g, "Embedding(1000 => 64) expects integer indices but gets Float32[2, 5]");
    free_graph(g);
}

/* ---- dtype -------------------------------------------------------------- */

/* x (dtype t) [1, 4] -> Dense '0' (4 => 3); dense is %3. */
static ir_graph *typed_mlp(axrt_dtype t)
{
    ir_graph *g = new_graph("mlp");
    int x = INPUT_T(g, "x", t, 1, 4);
    int d = NODE(g, IR_OP_dense, x, PARAM(g, "0.weight", 3, 4), PARAM(g, "0.bias", 3));
    ir_at(g, d)->name = "0";
    output(g, d);
    assert_int_equal(pass_shape(g), 0);
    return g;
}

static void assert_cast_after_input(ir_graph *g, axrt_dtype target)
{
    const ir_node *cast = ir_at(g, 1);
    assert_int_equal(cast->op, IR_OP_cast);
    assert_int_equal(cast->src[0], 0);
    assert_int_equal(cast->dtype, target);
    ASSERT_SHAPE(g, 1, 1, 4);
    assert_int_equal(ir_at(g, 4)->op, IR_OP_dense);
    assert_int_equal(ir_at(g, 4)->src[0], 1);
    assert_int_equal(g->inputs[0], 0);
    assert_int_equal(g->outputs[0], 4);
    assert_int_equal(ir_verify(g), 0);
}

static void test_dtype_warn_converts(void **state)
{
    (void)state;
    ir_graph *g = typed_mlp(AXRT_F64);
    assert_int_equal(pass_dtype(g, ELTYPE_WARN), 0);
    assert_string_equal(test_diagnostics(g->ctx),
        "axc: warning: input 'x' is Float64 but model 'mlp' computes in Float32; Dense '0' would "
        "promote every layer to Float64 \xe2\x80\x94 converting 'x' to Float32 at the boundary "
        "(--eltype-mismatch=convert|error|promote)\n");
    assert_int_equal(g->ctx->warnings, 1);
    assert_int_equal(g->nnodes, 5);
    assert_cast_after_input(g, AXRT_F32);
    assert_int_equal(ir_at(g, 0)->dtype, AXRT_F64);
    assert_int_equal(ir_at(g, 4)->dtype, AXRT_F32);
    free_graph(g);
}

static void test_dtype_warning_names_layer_behind_elementwise(void **state)
{
    (void)state;
    ir_graph *g = new_graph("net");
    int x = INPUT_T(g, "x", AXRT_F64, 1, 4);
    int r = NODE(g, IR_OP_relu, x);
    int d = NODE(g, IR_OP_dense, r, PARAM(g, "fc1.weight", 3, 4), IR_NONE);
    ir_at(g, d)->name = "fc1";
    output(g, d);
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(pass_dtype(g, ELTYPE_WARN), 0);
    assert_non_null(strstr(test_diagnostics(g->ctx), "computes in Float32; Dense 'fc1' would promote every layer"));
    assert_int_equal(ir_at(g, 2)->src[0], 1);
    free_graph(g);
}

static void test_dtype_convert_error_promote(void **state)
{
    (void)state;
    ir_graph *g = typed_mlp(AXRT_F64);
    assert_int_equal(pass_dtype(g, ELTYPE_CONVERT), 0);
    assert_string_equal(test_diagnostics(g->ctx), "");
    assert_cast_after_input(g, AXRT_F32);
    free_graph(g);

    g = typed_mlp(AXRT_F64);
    assert_int_equal(pass_dtype(g, ELTYPE_ERROR), 1);
    assert_string_equal(test_diagnostics(g->ctx),
        "axc: error: input 'x' is Float64 but model 'mlp' computes in Float32; Dense '0' would "
        "promote every layer to Float64 (--eltype-mismatch=error)\n");
    free_graph(g);

    g = typed_mlp(AXRT_F64);
    assert_int_equal(pass_dtype(g, ELTYPE_PROMOTE), 0);
    assert_string_equal(test_diagnostics(g->ctx), "");
    assert_int_equal(g->dtype, AXRT_F64);
    assert_int_equal(g->nnodes, 4);
    for (int id = 0; id < g->nnodes; id++)
        assert_int_equal(ir_at(g, id)->dtype, AXRT_F64);
    free_graph(g);
}

static void test_dtype_promote_casts_narrower_inputs(void **state)
{
    (void)state;
    ir_graph *g = new_graph("m");
    int a = INPUT_T(g, "a", AXRT_F32, 2, 3);
    int b = INPUT_T(g, "b", AXRT_F64, 2, 3);
    output(g, NODE(g, IR_OP_add, a, b));
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(pass_dtype(g, ELTYPE_PROMOTE), 0);
    assert_int_equal(g->dtype, AXRT_F64);
    assert_int_equal(ir_at(g, 1)->op, IR_OP_cast);
    assert_int_equal(ir_at(g, 1)->dtype, AXRT_F64);
    assert_int_equal(g->inputs[1], 2);
    assert_int_equal(ir_at(g, 3)->src[0], 1);
    assert_int_equal(ir_at(g, 3)->src[1], 2);
    assert_int_equal(ir_at(g, 3)->dtype, AXRT_F64);
    free_graph(g);
}

static void test_dtype_narrower_and_integer_inputs(void **state)
{
    (void)state;
    ir_graph *g = typed_mlp(AXRT_F16);
    assert_int_equal(pass_dtype(g, ELTYPE_ERROR), 0);
    assert_string_equal(test_diagnostics(g->ctx), "");
    assert_cast_after_input(g, AXRT_F32);
    free_graph(g);

    g = new_graph("lm");
    int ids = INPUT_T(g, "ids", AXRT_I32, 1, 8);
    int e = NODE(g, IR_OP_embedding, ids, PARAM(g, "tok.weight", 100, 16));
    output(g, e);
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(pass_dtype(g, ELTYPE_WARN), 0);
    assert_int_equal(g->nnodes, 3);
    assert_int_equal(ir_at(g, e)->dtype, AXRT_F32);
    assert_int_equal(ir_at(g, ids)->dtype, AXRT_I32);
    free_graph(g);

    g = new_graph("lm");
    ids = INPUT_T(g, "ids", AXRT_I32, 1, 8);
    e = NODE(g, IR_OP_embedding, ids, PARAM(g, "tok.weight", 100, 8));
    output(g, NODE(g, IR_OP_add, e, ids));
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(pass_dtype(g, ELTYPE_WARN), 1);
    assert_string_equal(test_diagnostics(g->ctx),
        "axc: error: input 'ids' is Int32; integer inputs are only accepted as Embedding indices\n");
    free_graph(g);
}

static void test_dtype_model_dtype(void **state)
{
    (void)state;
    /* Float16 (docs/precision.md): a Float32 input is the expected boundary (no
       warning), cast after the input; the output is cast back to Float32 */
    ir_graph *g = typed_mlp(AXRT_F32);
    g->dtype = AXRT_F16;
    assert_int_equal(pass_dtype(g, ELTYPE_WARN), 0);
    assert_string_equal(test_diagnostics(g->ctx), "");
    assert_int_equal(g->nnodes, 6);
    assert_int_equal(ir_at(g, 1)->op, IR_OP_cast);
    assert_int_equal(ir_at(g, 1)->dtype, AXRT_F16);
    assert_int_equal(ir_at(g, 4)->src[0], 1);
    assert_int_equal(ir_at(g, 2)->dtype, AXRT_F16);
    assert_int_equal(ir_at(g, 4)->dtype, AXRT_F16);
    assert_int_equal(g->outputs[0], 5);
    assert_int_equal(ir_at(g, 5)->op, IR_OP_cast);
    assert_int_equal(ir_at(g, 5)->src[0], 4);
    assert_int_equal(ir_at(g, 5)->dtype, AXRT_F32);
    assert_int_equal(ir_verify(g), 0);
    free_graph(g);

    g = typed_mlp(AXRT_F64);
    g->dtype = AXRT_F64;
    assert_int_equal(pass_dtype(g, ELTYPE_WARN), 0);
    assert_int_equal(g->nnodes, 4);
    assert_int_equal(ir_at(g, 1)->dtype, AXRT_F64);
    assert_int_equal(ir_at(g, 3)->dtype, AXRT_F64);
    free_graph(g);
}

/* ---- memory plan -------------------------------------------------------- */

/* pass_grad's refusal of an op without a rule: no .ax model reaches it
 * (every op a user can write has one, fused epilogues come after pass_grad),
 * so a dense node with a fused ReLU stands in for a future op. */
static void test_grad_refuses_op_without_rule(void **state)
{
    (void)state;
    ir_graph *g = new_graph("m");
    int x = INPUT(g, "x", 2, 4), w = PARAM(g, "w", 3, 4);
    int d = NODE(g, IR_OP_dense, x, w, PARAM(g, "b", 3));
    output(g, d);
    assert_int_equal(pass_shape(g), 0);
    ir_at(g, d)->attrs.act = IR_OP_relu;
    int grad = IR_NONE;
    assert_int_equal(pass_grad(g, d, &w, 1, &grad), 1);
    assert_string_equal(test_diagnostics(g->ctx),
                        "axc: error: cannot train through Dense(4 => 3): no gradient rule for 'dense' yet\n");
    free_graph(g);
}

static void test_memplan_chain(void **state)
{
    (void)state;
    /* x[1,100] -> relu -> relu -> relu -> out: 400-byte tensors take 448
     * bytes; the middle relu reads the first while writing, so two buffers. */
    ir_graph *g = new_graph("chain");
    int x = INPUT(g, "x", 1, 100);
    int a = NODE(g, IR_OP_relu, x);
    int b = NODE(g, IR_OP_relu, a);
    int c = NODE(g, IR_OP_relu, b);
    output(g, c);
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(pass_memplan(g), 0);
    assert_int_equal(ir_at(g, x)->offset, -1);
    assert_int_equal(ir_at(g, a)->offset, 0);
    assert_int_equal(ir_at(g, b)->offset, 448);
    assert_int_equal(ir_at(g, c)->offset, -1);
    assert_int_equal(g->arena_bytes, 896);
    ax_buf out = {0};
    pass_memplan_report(g, &out);
    ax_buf_put(&out, "", 1);
    assert_string_equal(out.data,
        "memory plan for chain\n"
        "  peak         896 bytes\n"
        "  lower bound  896 bytes\n"
        "  naive sum    896 bytes\n"
        "  2 arena buffers:\n"
        "  %1    relu  offset 0  size 448  live 1..2\n"
        "  %2    relu  offset 448  size 448  live 2..3\n");
    ax_buf_free(&out);
    free_graph(g);
}

static uint32_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (rng_state >> 8) % n;
}

/* A random DAG over [1, L, d] tensors: unary, binary, attention (which
 * needs scratch), some dead nodes, 1..3 outputs.  Shapes are set directly:
 * the planner only reads sizes. */
/* A live tensor operand: mostly one of the last few nodes, sometimes any. */
static int random_operand(ir_graph *g, int param)
{
    int span = g->nnodes < 4 ? g->nnodes : 4;
    int a = rnd(4) ? g->nnodes - 1 - (int)rnd((uint32_t)span) : (int)rnd((uint32_t)g->nnodes);
    while (a == param || ir_at(g, a)->dead)
        a--;
    return a;
}

static ir_graph *random_dag(void)
{
    ir_graph *g = new_graph("r");
    int nodes = 2 + (int)rnd(40);
    INPUT(g, "x", 1, 1 + rnd(8), 1 + rnd(64));
    int wq = PARAM(g, "w", 3, 3);
    for (int i = 0; i < nodes; i++) {
        int a = random_operand(g, wq), b = random_operand(g, wq);
        uint32_t kind = rnd(10);
        int id = kind < 4 ? NODE(g, IR_OP_relu, a)
               : kind < 9 ? NODE(g, IR_OP_add, a, b)
                          : NODE(g, IR_OP_mha, a, b, b, wq, IR_NONE, wq, IR_NONE, IR_NONE);
        ir_node *n = ir_at(g, id);
        n->rank = 3;
        n->shape[0] = 1;
        n->shape[1] = 1 + rnd(8);
        n->shape[2] = 1 + rnd(64);
        n->attrs.heads = 1;
        n->dead = i + 1 < nodes && rnd(12) == 0;
    }
    output(g, g->nnodes - 1);
    for (int extra = (int)rnd(3); extra > 0; extra--) {
        int id = 2 + (int)rnd((uint32_t)(g->nnodes - 2));
        if (!ir_at(g, id)->dead)
            output(g, id);
    }
    return g;
}

typedef struct placed {
    int64_t offset, size;
    int start, end;
} placed;

static int collect_placed(ir_graph *g, placed *out)
{
    int count = 0;
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        int last = id;
        for (int user = id + 1; user < g->nnodes; user++)
            for (int s = 0; !g->nodes[user].dead && s < g->nodes[user].nsrc; s++)
                if (g->nodes[user].src[s] == id)
                    last = user;
        if (n->offset >= 0)
            out[count++] = (placed){n->offset, (int64_t)ir_nbytes(n), id, last};
        if (n->scratch_offset >= 0)
            out[count++] = (placed){n->scratch_offset, (int64_t)ir_scratch_bytes(n, g), id, id};
    }
    return count;
}

static bool node_is_output(ir_graph *g, int id)
{
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == id)
            return true;
    return false;
}

static void check_plan(ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        bool resident = !n->dead && ir_ops[n->op].kind != IR_SOURCE && !node_is_output(g, id);
        assert_int_equal(n->offset >= 0, resident);
        assert_int_equal(n->scratch_offset >= 0, !n->dead && ir_scratch_bytes(n, g) > 0);
        assert_int_equal(n->offset % 64 == 0 || n->offset == -1, true);
        assert_int_equal(n->scratch_offset % 64 == 0 || n->scratch_offset == -1, true);
    }
    placed *bufs = calloc(2 * (size_t)g->nnodes, sizeof *bufs);
    int count = collect_placed(g, bufs);
    int64_t most_live = 0;
    for (int t = 0; t < g->nnodes; t++) {
        int64_t live = 0;
        for (int k = 0; k < count; k++)
            if (bufs[k].start <= t && t <= bufs[k].end)
                live += bufs[k].size;
        most_live = live > most_live ? live : most_live;
    }
    assert_true((int64_t)g->arena_bytes >= most_live);
    assert_int_equal(g->arena_bytes % 64, 0);
    for (int i = 0; i < count; i++) {
        assert_true(bufs[i].offset + bufs[i].size <= (int64_t)g->arena_bytes);
        for (int j = i + 1; j < count; j++) {
            bool live_together = bufs[i].start <= bufs[j].end && bufs[j].start <= bufs[i].end;
            bool overlap = bufs[i].offset < bufs[j].offset + bufs[j].size &&
                           bufs[j].offset < bufs[i].offset + bufs[i].size;
            assert_false(live_together && overlap);
        }
    }
    free(bufs);
}

static void test_memplan_random_dags(void **state)
{
    (void)state;
    rng_state = 12345;
    int with_scratch = 0;
    for (int trial = 0; trial < 200; trial++) {
        ir_graph *g = random_dag();
        assert_int_equal(pass_memplan(g), 0);
        check_plan(g);
        for (int id = 0; id < g->nnodes; id++)
            with_scratch += ir_at(g, id)->scratch_offset >= 0;
        free_graph(g);
    }
    assert_true(with_scratch > 0);
}


/* Rematerialisation over random graphs with half the planned arena as the
 * budget: the plan stays valid (check_plan), never grows, the IR verifies,
 * and values do get recomputed. */
static void test_remat_random_dags(void **state)
{
    (void)state;
    rng_state = 4242;
    int recomputed = 0, shrunk = 0;
    for (int trial = 0; trial < 200; trial++) {
        ir_graph *g = random_dag();
        assert_int_equal(pass_memplan(g), 0);
        const size_t before = g->arena_bytes;
        pass_remat_stats st;
        assert_int_equal(pass_remat(g, before / 2, &st), 0);
        assert_int_equal(ir_verify(g), 0);
        check_plan(g);
        assert_true(g->arena_bytes <= before);
        assert_int_equal(st.peak_after, g->arena_bytes);
        assert_true(st.recomputed == 0 || st.extra_flops > 0);
        recomputed += st.recomputed;
        shrunk += g->arena_bytes < before;
        free_graph(g);
    }
    assert_true(recomputed > 0 && shrunk > 0);
    print_message("remat: %d values recomputed, %d of 200 plans shrunk\n", recomputed, shrunk);
}

/* A DAG of at most 20 nodes (an input, a param, up to 18 relu/add) with
 * long skips, so values sit idle between their readers; sizes vary. */
static ir_graph *random_small_dag(void)
{
    ir_graph *g = new_graph("s");
    const int nodes = 4 + (int)rnd(15);
    INPUT(g, "x", 1, 4, 16);
    int wq = PARAM(g, "w", 3, 3);
    for (int i = 0; i < nodes; i++) {
        int a = rnd(3) ? g->nnodes - 1 : (int)rnd((uint32_t)g->nnodes);
        int b = (int)rnd((uint32_t)g->nnodes);
        if (a == wq) a = 0;
        if (b == wq) b = 0;
        int id = rnd(2) ? NODE(g, IR_OP_relu, a) : NODE(g, IR_OP_add, a, b);
        ir_node *n = ir_at(g, id);
        n->rank = 3;
        n->shape[0] = 1;
        n->shape[1] = 1 + rnd(8);
        n->shape[2] = 16 * (1 + rnd(4));
    }
    output(g, g->nnodes - 1);
    return g;
}

typedef struct remat_tally {
    int budgets, greedy_fits, greedy_optimal, sqrt_fits, sqrt_optimal;
    double greedy_ratio, sqrt_ratio;   /* sums of extra FLOPs / optimum's, where both fit */
} remat_tally;

/* One budget the optimum reaches: the greedy choice and sqrt(n) never beat
 * the exact solver, and every claimed fit really fits. */
static void compare_at_budget(ir_graph *g, pass_remat_set *s, size_t budget, remat_tally *t)
{
    assert_true(pass_remat_exact(g, s, budget));
    assert_true(pass_remat_eval(g, s, NULL) <= budget);
    const double best = pass_remat_extra_flops(g, s);
    t->budgets++;
    memset(s->chosen, 0, (size_t)s->n * sizeof *s->chosen);
    pass_remat_greedy(g, s, budget);
    if (pass_remat_eval(g, s, NULL) <= budget) {
        const double greedy = pass_remat_extra_flops(g, s);
        assert_true(greedy >= best);
        t->greedy_fits++;
        t->greedy_optimal += greedy == best;
        t->greedy_ratio += best > 0 ? greedy / best : 1;
    }
    pass_remat_sqrt_n(s);
    if (pass_remat_eval(g, s, NULL) <= budget) {
        const double sq = pass_remat_extra_flops(g, s);
        assert_true(sq >= best);
        t->sqrt_fits++;
        t->sqrt_optimal += sq == best;
        t->sqrt_ratio += best > 0 ? sq / best : 1;
    }
    memset(s->chosen, 0, (size_t)s->n * sizeof *s->chosen);
}

/* The pass's choice against the optimum (branch and bound over every
 * recompute set) and against sqrt(n) checkpointing, on random graphs of at
 * most 20 nodes, at the smallest arena any set reaches and halfway between
 * it and the plan without remat.  Then the greedy set is applied: the IR
 * verifies, the plan is valid and the arena is what the choice claimed. */
static void test_remat_against_exact(void **state)
{
    (void)state;
    rng_state = 777;
    remat_tally t = {0};
    int graphs = 0;
    for (int trial = 0; trial < 300; trial++) {
        ir_graph *g = random_small_dag();
        assert_true(g->nnodes <= 20);
        assert_int_equal(pass_memplan(g), 0);
        pass_remat_set s = pass_remat_candidates(g);
        const size_t floor = pass_remat_min_arena(g, &s);
        if (floor < g->arena_bytes) {
            graphs++;
            compare_at_budget(g, &s, floor, &t);
            const size_t mid = (floor + g->arena_bytes) / 2 / 64 * 64;
            compare_at_budget(g, &s, mid, &t);
            pass_remat_greedy(g, &s, mid);
            const size_t claimed = pass_remat_eval(g, &s, NULL);
            pass_remat_apply(g, &s);
            assert_int_equal(ir_verify(g), 0);
            check_plan(g);
            assert_int_equal(g->arena_bytes, claimed);
        }
        pass_remat_set_free(&s);
        free_graph(g);
    }
    assert_true(graphs >= 20 && t.greedy_fits >= t.sqrt_fits);
    print_message("remat on %d graphs, %d budgets: greedy fits %d (optimal %d, extra FLOPs %.3fx the "
                  "optimum's); sqrt(n) fits %d (optimal %d, %.3fx)\n", graphs, t.budgets, t.greedy_fits,
                  t.greedy_optimal, t.greedy_fits ? t.greedy_ratio / t.greedy_fits : 0, t.sqrt_fits,
                  t.sqrt_optimal, t.sqrt_fits ? t.sqrt_ratio / t.sqrt_fits : 0);
}

/* live_until (a value the back end reads after its last IR reader: a
 * gradient consumed by the training step's update) keeps the buffer live:
 * without it the unread relu's bytes are reused by the next node. */
static void test_memplan_live_until(void **state)
{
    (void)state;
    for (int keep = 0; keep < 2; keep++) {
        ir_graph *g = new_graph("keep");
        int x = INPUT(g, "x", 1, 100);
        int unread = NODE(g, IR_OP_relu, x);
        int b = NODE(g, IR_OP_neg, x);
        int c = NODE(g, IR_OP_relu, b);
        output(g, NODE(g, IR_OP_relu, c));
        if (keep) ir_at(g, unread)->live_until = c;
        assert_int_equal(pass_shape(g), 0);
        assert_int_equal(pass_memplan(g), 0);
        if (keep) {
            assert_true(ir_at(g, unread)->offset != ir_at(g, b)->offset);
            assert_true(ir_at(g, unread)->offset != ir_at(g, c)->offset);
            assert_int_equal(g->arena_bytes, 3 * 448);
        } else {
            assert_int_equal(ir_at(g, unread)->offset, ir_at(g, b)->offset);
            assert_int_equal(g->arena_bytes, 2 * 448);
        }
        free_graph(g);
    }
}

/* -O1 and up: every relu overwrites its operand when it dies there, and a
 * reshape of the input has no buffer at all (codegen uses the pointer). */
static void test_memplan_shared_chain(void **state)
{
    (void)state;
    ir_graph *g = new_graph("chain");
    int x = INPUT(g, "x", 1, 100);
    int r = NODE(g, IR_OP_reshape, x);
    ir_at(g, r)->attrs.nnewshape = 2;
    ir_at(g, r)->attrs.newshape[0] = 10;
    ir_at(g, r)->attrs.newshape[1] = 10;
    int a = NODE(g, IR_OP_relu, r);
    int b = NODE(g, IR_OP_relu, a);
    int c = NODE(g, IR_OP_relu, b);
    output(g, NODE(g, IR_OP_relu, c));
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(pass_memplan_with(g, true), 0);
    assert_int_equal(ir_at(g, r)->offset, -1);
    assert_int_equal(ir_at(g, a)->offset, 0);
    assert_int_equal(ir_at(g, b)->offset, 0);
    assert_int_equal(ir_at(g, c)->offset, 0);
    assert_int_equal(g->arena_bytes, 448);
    assert_int_equal(pass_memplan_lower_bound(g), 448);
    ax_buf out = {0};
    pass_memplan_report(g, &out);
    ax_buf_put(&out, "", 1);
    assert_non_null(strstr(out.data, "  naive sum    1344 bytes\n"));
    assert_non_null(strstr(out.data, "      shared by %4    relu (in-place)\n"));
    ax_buf_free(&out);
    free_graph(g);
}

/* Several results (ir.h): chunk's results are written by the chunk, so
 * their buffers are live from it on: apart from each other, and from the
 * relu the chunk reads although the relu dies there (no in-place sharing
 * across a multi-result kernel); the chunk itself has no buffer. */
static void test_memplan_results_live_from_producer(void **state)
{
    (void)state;
    for (int share = 0; share < 2; share++) {
        ir_graph *g = new_graph("parts");
        int x = INPUT(g, "x", 4, 16);
        int a = NODE(g, IR_OP_relu, x);
        int c = NODE(g, IR_OP_chunk, a);
        ir_at(g, c)->attrs.axis = 1;
        ir_at(g, c)->attrs.parts = 2;
        ir_at(g, c)->attrs.nresults = 2;
        int r[2];
        for (int k = 0; k < 2; k++) {
            r[k] = NODE(g, IR_OP_result, c);
            ir_at(g, r[k])->attrs.index = k;
        }
        int y = NODE(g, IR_OP_exp, r[1]);   /* reads result 1 before result 0 */
        output(g, NODE(g, IR_OP_add, y, r[0]));
        assert_int_equal(pass_shape(g), 0);
        ASSERT_SHAPE(g, r[0], 4, 8);
        assert_int_equal(ir_verify(g), 0);
        assert_int_equal(pass_memplan_with(g, share), 0);
        assert_int_equal(ir_at(g, c)->offset, -1);
        const int64_t ra = ir_at(g, a)->offset, r0 = ir_at(g, r[0])->offset, r1 = ir_at(g, r[1])->offset;
        assert_true(ra >= 0 && r0 >= 0 && r1 >= 0);
        assert_true(ra + 256 <= r0 || r0 + 128 <= ra);   /* relu 256 bytes, parts 128 */
        assert_true(ra + 256 <= r1 || r1 + 128 <= ra);
        assert_true(r0 + 128 <= r1 || r1 + 128 <= r0);
        free_graph(g);
    }
}

/* i and j may share bytes while both live only as a planned handover: j
 * reads i, i's value is dead after j, and both sit at the same offset. */
static bool planned_handover(ir_graph *g, const placed *i, const placed *j)
{
    const ir_node *later = ir_at(g, j->start);
    bool reads = false;
    for (int s = 0; s < later->nsrc; s++)
        reads = reads || later->src[s] == i->start;
    return i->offset == j->offset && reads && i->end == j->start && i->size == j->size;
}

/* The shared plan over random graphs: only handovers overlap, the peak is
 * never below the lower bound, and in-place reuse does happen. */
static void test_memplan_shared_random_dags(void **state)
{
    (void)state;
    rng_state = 777;
    int handovers = 0;
    double worst_ratio = 1.0;
    for (int trial = 0; trial < 200; trial++) {
        ir_graph *g = random_dag();
        assert_int_equal(pass_memplan_with(g, true), 0);
        placed *bufs = calloc(2 * (size_t)g->nnodes, sizeof *bufs);
        int count = collect_placed(g, bufs);
        for (int i = 0; i < count; i++) {
            assert_true(bufs[i].offset % 64 == 0);
            assert_true(bufs[i].offset + bufs[i].size <= (int64_t)g->arena_bytes);
            for (int j = i + 1; j < count; j++) {
                bool live_together = bufs[i].start <= bufs[j].end && bufs[j].start <= bufs[i].end;
                bool overlap = bufs[i].offset < bufs[j].offset + bufs[j].size &&
                               bufs[j].offset < bufs[i].offset + bufs[i].size;
                if (live_together && overlap) {
                    assert_true(planned_handover(g, &bufs[i], &bufs[j]));
                    handovers++;
                }
            }
        }
        size_t bound = pass_memplan_lower_bound(g);
        assert_true(g->arena_bytes >= bound);
        if (bound > 0 && (double)g->arena_bytes / (double)bound > worst_ratio)
            worst_ratio = (double)g->arena_bytes / (double)bound;
        free(bufs);
        free_graph(g);
    }
    assert_true(handovers > 0);
    print_message("shared plans: %d in-place handovers; worst peak / lower bound %.3f\n",
                  handovers, worst_ratio);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_shapes_and_errors),
        cmocka_unit_test(test_one_error_per_mistake),
        cmocka_unit_test(test_broadcasting),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_axes),
        cmocka_unit_test(test_reshape_and_flatten),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_conv_sizes_match_torch),
        cmocka_unit_test(test_conv_errors),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_mha),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_dtype_warn_converts),
        cmocka_unit_test(test_dtype_warning_names_layer_behind_elementwise),
        cmocka_unit_test(test_dtype_convert_error_promote),
        cmocka_unit_test(test_dtype_promote_casts_narrower_inputs),
        cmocka_unit_test(test_dtype_narrower_and_integer_inputs),
        cmocka_unit_test(test_dtype_model_dtype),
        cmocka_unit_test(test_grad_refuses_op_without_rule),
        cmocka_unit_test(test_memplan_chain),
        cmocka_unit_test(test_memplan_random_dags),
        cmocka_unit_test(test_remat_random_dags),
        cmocka_unit_test(test_remat_against_exact),
        cmocka_unit_test(test_memplan_shared_chain),
        cmocka_unit_test(test_memplan_live_until),
        cmocka_unit_test(test_memplan_results_live_from_producer),
        cmocka_unit_test(test_memplan_shared_random_dags),
    };
    return cmocka_run_group_tests_name("passes", tests, NULL, NULL);
}
