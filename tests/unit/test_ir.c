/* test_ir.c — the IR core: the op table generated from ops.def, graph
 * construction and insertion (id remapping), helpers, the text dump (exact
 * golden text) and the verifier on malformed graphs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lower.h"
#include "ir.h"
#include "ir_use.h"
#include "test_support.h"

/* ---- fixtures ----------------------------------------------------------- */

static void set_shape2(ir_graph *g, int id, int64_t d0, int64_t d1)
{
    ir_node *n = ir_at(g, id);
    n->rank = 2;
    n->shape[0] = d0;
    n->shape[1] = d1;
}

/* ---- op table ----------------------------------------------------------- */

static void test_ops_table_sane(void **state)
{
    (void)state;
    for (int op = 0; op < IR_OP_COUNT; op++) {
        const ir_opinfo *info = &ir_ops[op];
        assert_non_null(info->name);
        assert_true(info->min_src <= info->max_src);
        /* fixed arity fits a node's operand room, an epilogue's residual included */
        assert_true((info->flags & IR_VARIADIC) || info->max_src < IR_SRC_ROOM);
        for (int other = 0; other < op; other++)
            assert_string_not_equal(info->name, ir_ops[other].name);
        switch (info->kind) {
        case IR_SOURCE: assert_int_equal(info->max_src, 0); break;
        case IR_UNARY: case IR_REDUCE: assert_int_equal(info->max_src, 1); break;
        case IR_BINARY: assert_int_equal(info->min_src, 2); assert_int_equal(info->max_src, 2); break;
        default: assert_true(info->max_src >= 1); break;
        }
    }
    assert_string_equal(ir_ops[IR_OP_dense].name, "dense");
    assert_int_equal(ir_ops[IR_OP_dense].kind, IR_LAYER);
    assert_int_equal(ir_ops[IR_OP_dense].min_src, 2);
    assert_int_equal(ir_ops[IR_OP_dense].max_src, 3);
    assert_int_equal(ir_ops[IR_OP_concat].max_src, IR_SRC_UNBOUNDED);
    assert_int_equal(ir_ops[IR_OP_relu].inplace, IR_INPLACE_SAME);
    assert_int_equal(ir_ops[IR_OP_matmul].inplace, IR_INPLACE_NO);
    assert_int_equal(ir_ops[IR_OP_reshape].inplace, IR_INPLACE_ALIAS);
    assert_int_equal(ir_ops[IR_OP_conv].inplace, IR_INPLACE_TARGET);
    assert_true(ir_op_has(IR_OP_concat, IR_VARIADIC) && ir_op_has(IR_OP_fused_elementwise, IR_VARIADIC));
    assert_true(ir_op_has(IR_OP_dense, IR_EPILOGUE) && !ir_op_has(IR_OP_softmax, IR_EPILOGUE));
    assert_true(ir_op_has(IR_OP_gelu, IR_ACT) && !ir_op_has(IR_OP_exp, IR_ACT));
    assert_false(ir_op_has(IR_NONE, IR_ACT));
    assert_int_equal(ir_ops[IR_OP_input].kind, IR_SOURCE);
    ax_ctx *ctx = ax_ctx_new();
    ir_graph *g = ir_graph_new(ctx, "m", ax_noloc());
    assert_string_equal(ir_describe_ctor(g, IR_OP_mha), "mha"); /* no front end: IR names */
    g->wording = &lower_ax_wording;
    assert_string_equal(ir_describe_ctor(g, IR_OP_mha), "MultiHeadAttention");
    assert_string_equal(ir_describe_ctor(g, IR_OP_add), "add");
    assert_string_equal(ir_describe_binary(g, IR_OP_mul), ".*");
    ir_graph_free_nodes(g);
    ax_ctx_free(ctx);
}

/* ---- helpers ------------------------------------------------------------ */

static void test_dtype_names(void **state)
{
    (void)state;
    static const char *const longs[] = {"Float32", "Float64", "Float16", "BFloat16", "Int8", "Int32", "Int64"};
    static const char *const shorts[] = {"f32", "f64", "f16", "bf16", "i8", "i32", "i64"};
    for (int t = 0; t < AXRT_DTYPE_COUNT; t++) {
        axrt_dtype parsed = AXRT_DTYPE_COUNT;
        assert_string_equal(ir_dtype_name((axrt_dtype)t), longs[t]);
        assert_true(ir_dtype_parse(longs[t], &parsed));
        assert_int_equal(parsed, t);
        parsed = AXRT_DTYPE_COUNT;
        assert_true(ir_dtype_parse(shorts[t], &parsed));
        assert_int_equal(parsed, t);
    }
    axrt_dtype unused;
    assert_false(ir_dtype_parse("float32", &unused));
    assert_false(ir_dtype_parse("Float", &unused));
    assert_false(ir_dtype_parse("", &unused));
}

static void test_shape_str_and_sizes(void **state)
{
    (void)state;
    char buf[64];
    int64_t shape[3] = {1, 784, 3};
    assert_string_equal(ir_shape_str(shape, 2, buf, sizeof buf), "[1, 784]");
    assert_string_equal(ir_shape_str(shape, 0, buf, sizeof buf), "[]");
    char tiny[5];
    ir_shape_str(shape, 3, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 4);
    assert_string_equal(tiny, "[1, ");

    ir_node n;
    memset(&n, 0, sizeof n);
    n.rank = 3;
    memcpy(n.shape, shape, sizeof shape);
    n.dtype = AXRT_F64;
    assert_int_equal(ir_numel(&n), 2352);
    assert_int_equal(ir_nbytes(&n), 2352 * 8);
    n.rank = 0;
    assert_int_equal(ir_numel(&n), 1);
}

/* ---- construction ------------------------------------------------------- */

static void test_add_defaults_and_growth(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = ir_graph_new(ctx, "m", ax_noloc());
    int64_t shape[1] = {4};
    int prev = test_add_source(g, IR_OP_input, "x", AXRT_F32, shape, 1);
    for (int i = 0; i < 1000; i++)
        prev = ir_add(g, IR_OP_relu, &prev, 1, ax_noloc());
    assert_int_equal(g->nnodes, 1001);
    const ir_node *last = ir_at(g, prev);
    assert_int_equal(last->src[0], 999);
    assert_int_equal(last->attrs.act, IR_NONE);
    assert_int_equal(last->offset, -1);
    assert_int_equal(last->scratch_offset, -1);
    assert_false(last->dead);
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

static void test_insert_remaps_ids(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = ir_graph_new(ctx, "m", ax_noloc());
    int64_t shape[2] = {2, 3};
    int x = test_add_source(g, IR_OP_input, "x", AXRT_F32, shape, 2);      /* %0 */
    int y = test_add_source(g, IR_OP_input, "y", AXRT_F32, shape, 2);      /* %1 */
    int xy[2] = {x, y};
    int sum = ir_add(g, IR_OP_add, xy, 2, ax_noloc());      /* %2 */
    int opt[3] = {sum, y, IR_NONE};
    int dense = ir_add(g, IR_OP_dense, opt, 3, ax_noloc()); /* %3 */
    ir_add_output(g, dense, NULL);
    ir_add_output(g, sum, NULL);

    int cast = ir_insert(g, 1, IR_OP_cast, &x, 1, ax_noloc());
    assert_int_equal(cast, 1);
    assert_int_equal(g->nnodes, 5);
    assert_int_equal(ir_at(g, 1)->op, IR_OP_cast);
    assert_int_equal(ir_at(g, 1)->src[0], 0);
    assert_int_equal(ir_at(g, 1)->scratch_offset, -1);
    assert_int_equal(g->inputs[0], 0);
    assert_int_equal(g->inputs[1], 2);
    assert_int_equal(ir_at(g, 3)->src[0], 0);
    assert_int_equal(ir_at(g, 3)->src[1], 2);
    assert_int_equal(ir_at(g, 4)->src[0], 3);
    assert_int_equal(ir_at(g, 4)->src[1], 2);
    assert_int_equal(ir_at(g, 4)->src[2], IR_NONE);
    assert_int_equal(g->outputs[0], 4);
    assert_int_equal(g->outputs[1], 3);

    int end = ir_insert(g, g->nnodes, IR_OP_relu, &cast, 1, ax_noloc());
    assert_int_equal(end, 5);
    assert_int_equal(g->outputs[0], 4);
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

/* ax_die aborts: run the violation in a child and check it did not exit 0. */
static void test_add_rejects_forward_reference(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        ax_ctx *ctx = test_ctx_new(NULL, NULL);
        ir_graph *g = ir_graph_new(ctx, "m", ax_noloc());
        int ahead = 0;
        ir_add(g, IR_OP_relu, &ahead, 1, ax_noloc());
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- dump --------------------------------------------------------------- */

static ir_graph *small_graph(ax_ctx *ctx)
{
    ir_graph *g = ir_graph_new(ctx, "mlp", ax_noloc());
    int64_t xs[2] = {1, 784}, ws[2] = {256, 784}, bs[1] = {256};
    int x = test_add_source(g, IR_OP_input, "x", AXRT_F32, xs, 2);
    int w = test_add_source(g, IR_OP_param, "0.weight", AXRT_F32, ws, 2);
    test_add_source(g, IR_OP_param, "0.bias", AXRT_F32, bs, 1);
    ax_loc loc = {2, 5, 17};
    int dense_src[3] = {x, w, IR_NONE};
    int dense = ir_add(g, IR_OP_dense, dense_src, 3, loc);
    ir_at(g, dense)->name = "0";
    ir_at(g, dense)->attrs.act = IR_OP_relu;
    ir_at(g, dense)->offset = 0;
    set_shape2(g, dense, 1, 256);
    int soft = ir_add(g, IR_OP_softmax, &dense, 1, ax_noloc());
    ir_at(g, soft)->attrs.axis = 1;
    ir_at(g, soft)->offset = 1024;
    set_shape2(g, soft, 1, 256);
    int dead = ir_add(g, IR_OP_relu, &soft, 1, ax_noloc());
    ir_at(g, dead)->dead = true;
    int tr = ir_add(g, IR_OP_transpose, &soft, 1, ax_noloc());
    ir_at(g, tr)->attrs.nperm = 2;
    ir_at(g, tr)->attrs.perm[0] = 1;
    set_shape2(g, tr, 256, 1);
    ir_add_output(g, tr, "y");
    g->arena_bytes = 2048;
    return g;
}

static void test_dump_golden(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ctx->path = "models/mlp.ax";
    ir_graph *g = small_graph(ctx);
    ax_buf out = {0};
    ir_dump(g, &out);
    ax_buf_put(&out, "", 1);
    assert_string_equal(out.data,
        "model mlp(x: Float32[1, 784]) dtype=Float32 arena=2048\n"
        "  %0 = input x : Float32[1, 784]\n"
        "  %1 = param \"0.weight\" : Float32[256, 784]\n"
        "  %2 = param \"0.bias\" : Float32[256]\n"
        "  %3 = dense %0, %1, _ act=relu layer=\"0\" : Float32[1, 256] offset=0  @mlp.ax:2:5\n"
        "  %4 = softmax %3 axis=1 : Float32[1, 256] offset=1024\n"
        "  %6 = transpose %4 perm=(1, 0) : Float32[256, 1]\n"
        "  return y = %6\n");
    ax_buf_free(&out);
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

static void test_dump_window_attrs(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = ir_graph_new(ctx, "c", ax_noloc());
    int64_t xs[4] = {1, 8, 8, 4};
    int x = test_add_source(g, IR_OP_input, "img", AXRT_F32, xs, 4);
    int pool = ir_add(g, IR_OP_maxpool, &x, 1, ax_noloc());
    ir_attrs *a = &ir_at(g, pool)->attrs;
    a->kernel[0] = a->kernel[1] = 2;
    a->stride[0] = a->stride[1] = 2;
    a->pad[2] = 1;
    ir_at(g, pool)->rank = 4;
    memcpy(ir_at(g, pool)->shape, (int64_t[4]){1, 4, 4, 4}, 4 * sizeof(int64_t));
    int ln_src[3] = {pool, IR_NONE, IR_NONE};
    int norm = ir_add(g, IR_OP_layernorm, ln_src, 3, ax_noloc());
    ir_at(g, norm)->attrs.eps = 1e-5;
    ir_add_output(g, norm, NULL);
    ax_buf out = {0};
    ir_dump(g, &out);
    ax_buf_put(&out, "", 1);
    assert_non_null(strstr(out.data, "%1 = maxpool %0 kernel=(2, 2) stride=(2, 2) pad=(0, 0, 1, 0) : Float32[1, 4, 4, 4]\n"));
    assert_non_null(strstr(out.data, "%2 = layernorm %1, _, _ eps=1e-05 : Float32[]\n"));
    assert_non_null(strstr(out.data, "  return out0 = %2\n"));
    ax_buf_free(&out);
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

/* ---- verify ------------------------------------------------------------- */

static void test_verify_accepts_good_graph(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = small_graph(ctx);
    assert_int_equal(ir_verify(g), 0);
    assert_int_equal(ctx->errors, 0);
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

static void test_verify_catches_malformed(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = small_graph(ctx);
    ir_at(g, 3)->src[0] = IR_NONE;    /* dense without its input */
    ir_at(g, 4)->nsrc = 2;            /* softmax with two operands */
    ir_at(g, 4)->src[1] = 0;
    ir_at(g, 6)->src[0] = 5;          /* reads the dead node */
    ir_at(g, 1)->shape[1] = 0;        /* non-positive dimension */
    g->outputs[0] = 42;               /* no such node */
    assert_int_equal(ir_verify(g), 5);
    const char *text = test_diagnostics(ctx);
    assert_non_null(strstr(text, "<input>:2:5: error: internal: IR verification failed: %3 dense: required operand 0 is missing\n"));
    assert_non_null(strstr(text, "internal: IR verification failed: %4 softmax has 2 operands, expected 1..1\n"));
    assert_non_null(strstr(text, "internal: IR verification failed: %6 transpose: operand 0 is the dead node %5\n"));
    assert_non_null(strstr(text, "internal: IR verification failed: %1 param: dimension 1 is 0\n"));
    assert_non_null(strstr(text, "internal: IR verification failed: output 0 refers to %42, not a live node\n"));
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

static void test_verify_catches_bad_rank_and_inputs(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = small_graph(ctx);
    ir_at(g, 4)->rank = IR_MAX_RANK + 1;
    g->ninputs = 0;
    assert_int_equal(ir_verify(g), 2);
    const char *text = test_diagnostics(ctx);
    assert_non_null(strstr(text, "%4 softmax has rank 9 (limit 8)"));
    assert_non_null(strstr(text, "1 input nodes but 0 signature inputs"));
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

/* ---- use analysis ------------------------------------------------------- */

/* x feeds add(x, x), a dead relu and mul(add, x); add is also an output, mul
 * the other; an input read by nobody has no users. */
static void test_use_counts_users_and_last(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = ir_graph_new(ctx, "m", ax_noloc());
    int64_t shape[1] = {4};
    int x = test_add_source(g, IR_OP_input, "x", AXRT_F32, shape, 1);           /* %0 */
    int idle = test_add_source(g, IR_OP_input, "idle", AXRT_F32, shape, 1);     /* %1 */
    int sum = ir_add(g, IR_OP_add, (const int[]){x, x}, 2, ax_noloc());          /* %2 */
    int dead = ir_add(g, IR_OP_relu, (const int[]){x}, 1, ax_noloc());          /* %3 */
    ir_at(g, dead)->dead = true;
    int prod = ir_add(g, IR_OP_mul, (const int[]){sum, x}, 2, ax_noloc());      /* %4 */
    ir_add_output(g, sum, "s");
    ir_add_output(g, prod, "p");
    ir_add_output(g, prod, "p2");

    ir_use u = {0};
    ir_use_compute(g, &u);
    assert_int_equal(u.nrefs[x], 3);               /* two slots of add, one of mul */
    assert_int_equal(ir_use_count(&u, x), 3);
    assert_int_equal(ir_use_nusers(&u, x), 2);     /* add and mul, each once; relu is dead */
    assert_int_equal(ir_use_user(&u, x, 0), sum);
    assert_int_equal(ir_use_user(&u, x, 1), prod);
    assert_int_equal(u.last[x], prod);
    assert_int_equal(ir_use_sole_user(&u, x), IR_NONE);
    assert_int_equal(ir_use_count(&u, sum), 2);    /* mul and the return list */
    assert_true(ir_use_is_output(&u, sum));
    assert_int_equal(ir_use_sole_user(&u, sum), IR_NONE);  /* an output has no owner */
    assert_int_equal(ir_use_count(&u, prod), 2);   /* returned twice */
    assert_int_equal(ir_use_nusers(&u, prod), 0);
    assert_int_equal(u.last[prod], IR_NONE);
    assert_true(ir_use_live_after(&u, prod, prod));
    assert_int_equal(ir_use_count(&u, idle), 0);
    assert_int_equal(u.last[idle], IR_NONE);
    assert_false(ir_use_live_after(&u, x, prod));
    assert_true(ir_use_live_after(&u, x, sum));

    /* after a rewrite the analysis is recomputed: mul now reads relu(x) */
    ir_at(g, dead)->dead = false;
    ir_at(g, prod)->src[1] = dead;
    ir_use_compute(g, &u);
    assert_int_equal(u.last[x], dead);
    assert_int_equal(ir_use_sole_user(&u, dead), prod);
    assert_int_equal(ir_use_nusers(&u, x), 2);
    ir_use_free(&u);
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

/* ---- several results ---------------------------------------------------- */

/* x -> chunk -> result 0, result 1: verifies, and --emit=ir shows both
 * sides; then each misuse of a producer is reported. */
static void test_results_verify_and_dump(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = ir_graph_new(ctx, "m", ax_noloc());
    int x = test_add_source(g, IR_OP_input, "x", AXRT_F32, (const int64_t[]){2, 6}, 2);
    int c = ir_add(g, IR_OP_chunk, &x, 1, ax_noloc());
    ir_at(g, c)->attrs.axis = 1;
    ir_at(g, c)->attrs.parts = 2;
    ir_at(g, c)->attrs.nresults = 2;
    ir_at(g, c)->rank = 2;
    memcpy(ir_at(g, c)->shape, (int64_t[2]){2, 6}, sizeof(int64_t[2]));
    int r[2];
    for (int k = 0; k < 2; k++) {
        r[k] = ir_add(g, IR_OP_result, &c, 1, ax_noloc());
        ir_at(g, r[k])->attrs.index = k;
        set_shape2(g, r[k], 2, 3);
        ir_add_output(g, r[k], k ? "b" : "a");
    }
    assert_int_equal(ir_verify(g), 0);
    assert_int_equal(ir_result_node(g, c, 1), r[1]);
    int64_t start, size;
    ir_result_extent(g, ir_at(g, r[1]), &start, &size);
    assert_int_equal(start, 3);
    assert_int_equal(size, 3);
    ax_buf out = {0};
    ir_dump(g, &out);
    ax_buf_put(&out, "", 1);
    assert_non_null(strstr(out.data, "  %1 = chunk %0 axis=1 parts=2 results=2 : Float32[2, 6]\n"));
    assert_non_null(strstr(out.data, "  %3 = result %1 index=1 : Float32[2, 3]\n"));
    ax_buf_free(&out);

    int relu = ir_add(g, IR_OP_relu, &c, 1, ax_noloc());     /* %4 reads the producer */
    set_shape2(g, relu, 2, 6);
    int dup = ir_add(g, IR_OP_result, &c, 1, ax_noloc());    /* %5 a second result 1 */
    ir_at(g, dup)->attrs.index = 1;
    set_shape2(g, dup, 2, 3);
    int bad = ir_add(g, IR_OP_result, &x, 1, ax_noloc());    /* %6 of a single value */
    set_shape2(g, bad, 2, 6);
    int far = ir_add(g, IR_OP_result, &c, 1, ax_noloc());    /* %7 index 2 of 2 */
    ir_at(g, far)->attrs.index = 2;
    set_shape2(g, far, 2, 3);
    ir_add_output(g, c, "whole");
    assert_int_equal(ir_verify(g), 5);
    const char *text = test_diagnostics(ctx);
    assert_non_null(strstr(text, "%4 relu reads the multi-result %1 chunk; only result nodes may\n"));
    assert_non_null(strstr(text, "%3 and %5 are both result 1 of %1\n"));
    assert_non_null(strstr(text, "%6 result reads %0 input, which has a single value\n"));
    assert_non_null(strstr(text, "%7 result: index 2 outside the 2 results of %1\n"));
    assert_non_null(strstr(text, "output 2 is the multi-result %1; return its results\n"));
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_table_sane),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_shape_str_and_sizes),
        cmocka_unit_test(test_add_defaults_and_growth),
        cmocka_unit_test(test_insert_remaps_ids),
        cmocka_unit_test(test_add_rejects_forward_reference),
        cmocka_unit_test(test_dump_golden),
        cmocka_unit_test(test_dump_window_attrs),
        cmocka_unit_test(test_verify_accepts_good_graph),
        cmocka_unit_test(test_verify_catches_malformed),
        cmocka_unit_test(test_verify_catches_bad_rank_and_inputs),
        cmocka_unit_test(test_use_counts_users_and_last),
        cmocka_unit_test(test_results_verify_and_dump),
    };
    return cmocka_run_group_tests_name("ir", tests, NULL, NULL);
}
