/* test_diagnostics.c — the diagnostics no .ax file or command line can
 * reach (defensive checks behind earlier ones), and regression tests for
 * the two size limits: a tensor over 2^40 bytes (pass_shape) and
 * parameters over 4 GiB (pipeline) are located errors, not overflows or
 * out-of-memory aborts.  docs/errors.md points here for the first group;
 * each test asserts the whole message text, which the errors suite reads
 * back from this file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg.h"
#include "driver.h"
#include "ast.h"
#include "passes.h"
#include "test_support.h"

static void assert_reported(ax_ctx *ctx, const char *message)
{
    const char *text = test_diagnostics(ctx);
    if (!strstr(text, message))
        fail_msg("expected \"%s\" in:\n%s", message, text);
}

/* Parses and builds every model of src with default options; returns the
 * status and frees the graphs. */
static int build(ax_ctx *ctx)
{
    static axc_opts opts;   /* zeroed: no -D, no --weights, no --ram */
    ir_graph *models[AXC_MAX_MODELS];
    int n = 0;
    int rc = axc_build_models(ctx, &opts, models, &n);
    axc_free_models(models, n);
    return rc;
}

/* ---- size limits (regressions) ------------------------------------------ */

static void test_tensor_size_limit(void **state)
{
    (void)state;
    /* 2^37 elements of at most 8 bytes: exactly the limit, accepted */
    ax_ctx *ctx = test_ctx_new("limits.ax",
                          "@axiom f(x::Float32[1048576, 131072]) begin\n    relu\nend\n");
    assert_int_equal(build(ctx), AXC_OK);
    test_ctx_free(ctx);
    /* one row more: a located error at the input */
    ctx = test_ctx_new("limits.ax", "@axiom f(x::Float32[1048576, 131073]) begin\n    relu\nend\n");
    assert_int_equal(build(ctx), AXC_EINPUT);
    assert_reported(ctx, "limits.ax:1:10: error: input of shape [1048576, 131073] is too large "
                         "(the limit is 1099511627776 bytes per tensor)");
    test_ctx_free(ctx);
    /* a product past 64 bits: the same error, no wrap-around */
    ctx = test_ctx_new("limits.ax", "const N = 9223372036854775807\n"
                               "@axiom f(x::Float32[N, N]) begin\n    Flatten()\nend\n");
    assert_int_equal(build(ctx), AXC_EINPUT);
    assert_reported(ctx, "limits.ax:2:10: error: input of shape [9223372036854775807, "
                         "9223372036854775807] is too large");
    test_ctx_free(ctx);
}

static void test_parameter_size_limit(void **state)
{
    (void)state;
    /* 2^32 bytes of weight plus the bias: refused before any allocation */
    ax_ctx *ctx = test_ctx_new("limits.ax",
                          "@axiom f(x::Float32[1, 32768]) begin\n    Dense(32768 => 32768)\nend\n");
    assert_int_equal(build(ctx), AXC_EINPUT);
    assert_reported(ctx, "limits.ax:2:5: error: model 'f' has 4295098368 bytes of parameters, over "
                         "the limit of 4294967296 (the largest is '0.weight', 4294967296 bytes)");
    test_ctx_free(ctx);
    /* 40 GB: the same, with the sum computed without overflow */
    ctx = test_ctx_new("limits.ax",
                  "@axiom f(x::Float32[1, 100000]) begin\n    Dense(100000 => 100000)\nend\n");
    assert_int_equal(build(ctx), AXC_EINPUT);
    assert_reported(ctx, "model 'f' has 40000400000 bytes of parameters");
    test_ctx_free(ctx);
}

/* ---- diagnostics behind earlier checks ---------------------------------- */

/* ast_parse refuses text whose offsets would not fit an int (main reads
 * files far smaller; the length is faked, nothing is read). */
static void test_source_too_large(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new("huge.ax", "");
    ctx->src_len = (size_t)INT_MAX / 2 + 1;
    assert_null(ast_parse(ctx));
    assert_reported(ctx, "huge.ax is too large to compile");
    test_ctx_free(ctx);
}

/* Lowering rejects non-positive dimensions in the signature and in layer
 * sizes; pass_shape still checks every source node. */
static void test_source_dimension(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = ir_graph_new(ctx, "f", ax_noloc());
    test_add_source(g, IR_OP_param, "w", AXRT_F32, (const int64_t[]){4, 0}, 2);
    assert_int_equal(pass_shape(g), 1);
    assert_reported(ctx, "param 'w' has non-positive dimension in [4, 0]");
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

/* relu(x) as a graph of dtype model_dtype whose relu computes in op_dtype. */
static ir_graph *relu_graph(ax_ctx *ctx, axrt_dtype model_dtype, axrt_dtype op_dtype)
{
    ir_graph *g = ir_graph_new(ctx, "f", ax_noloc());
    g->dtype = model_dtype;
    int x = test_add_source(g, IR_OP_input, "x", AXRT_F32, (const int64_t[]){1, 4}, 2);
    int y = ir_add(g, IR_OP_relu, (const int[]){x}, 1, ax_noloc());
    assert_int_equal(pass_shape(g), 0);
    ir_at(g, y)->dtype = op_dtype;
    ir_add_output(g, y, "y");
    return g;
}

/* pass_dtype and the pipeline refuse other model dtypes first; the C
 * backend still checks what it is given. */
static void test_backend_dtypes(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ax_buf c = {0}, h = {0};
    ir_graph *g = relu_graph(ctx, AXRT_I32, AXRT_I32);
    cg_request req = {.models = &g, .nmodels = 1, .header_name = "f.h", .source_name = "f.ax"};
    assert_int_not_equal(cg_c_emit(&req, &c, &h), 0);
    assert_reported(ctx, "the C backend computes in Float32, Float64, Float16 or BFloat16, not Int32 "
                         "(model 'f')");
    ir_graph_free_nodes(g);
    g = relu_graph(ctx, AXRT_F32, AXRT_F16);
    req.models = &g;
    assert_int_not_equal(cg_c_emit(&req, &c, &h), 0);
    assert_reported(ctx, "the C backend cannot compute relu in Float16");
    ir_graph_free_nodes(g);
    ax_buf_free(&c);
    ax_buf_free(&h);
    test_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_size_limit),
        cmocka_unit_test(test_parameter_size_limit),
        cmocka_unit_test(test_source_too_large),
        cmocka_unit_test(test_source_dimension),
        cmocka_unit_test(test_backend_dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
