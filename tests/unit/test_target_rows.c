/* test_target_rows.c — each row of the back-end table (codegen/cg_targets.c)
 * is complete, and an op a target has no kernel for is a located error
 * naming the op and the target (cg_target_check, run before any printer),
 * never an internal error.  No .ax file reaches these ops on those targets
 * (GRU/LSTM are unrolled for the GPU; the training-only ops appear in the
 * training step, which only the c target writes), so docs/errors.md points
 * here; each test asserts the whole message text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cg_target.h"
#include "test_support.h"

static void assert_reported(ax_ctx *ctx, const char *message)
{
    const char *text = test_diagnostics(ctx);
    if (!strstr(text, message))
        fail_msg("expected \"%s\" in:\n%s", message, text);
}

/* A graph for target holding one node of op at line 3, column 5 (its
 * operands: the input, as many as op needs at least). */
static ir_graph *one_op(ax_ctx *ctx, ir_target_id target, ir_op op)
{
    ir_graph *g = ir_graph_new(ctx, "f", ax_noloc());
    g->target = &cg_target_get(target)->facts;
    int x = test_add_source(g, IR_OP_input, "x", AXRT_F32, (const int64_t[]){1, 4}, 2);
    int src[8] = {x, x, x, x, x, x, x, x};
    ir_add(g, op, src, ir_ops[op].min_src, (ax_loc){3, 5, 7});
    return g;
}

/* Every row: its facts name its own target, it selects kernels, it has a
 * printer or says why not; only the c target writes a training step. */
static void test_rows_complete(void **state)
{
    (void)state;
    for (int t = 0; t < IR_TARGET_COUNT; t++) {
        const cg_target *row = cg_target_get((ir_target_id)t);
        assert_int_equal(row->facts.id, t);
        assert_non_null(row->select);
        assert_true(row->emit || row->missing);
        assert_int_equal(row->train_step, t == IR_TARGET_c);
    }
}

/* What each target lacks, through the check the driver runs before it
 * prints: located at the node, naming the op and the target. */
static void test_unsupported_located(void **state)
{
    (void)state;
    static const struct {
        ir_target_id target;
        ir_op op;
        const char *message;
    } lacks[] = {
        {IR_TARGET_cuda, IR_OP_gru, "m.ax:3:5: error: the cuda target has no kernel for gru yet (use --target=c)"},
        {IR_TARGET_hip, IR_OP_lstm, "m.ax:3:5: error: the hip target has no kernel for lstm yet (use --target=c)"},
        {IR_TARGET_cuda, IR_OP_dropout, "the cuda target has no kernel for dropout yet (use --target=c)"},
        {IR_TARGET_llvm, IR_OP_unary_grad, "the llvm target has no kernel for unary_grad yet (use --target=c)"},
    };
    for (size_t i = 0; i < sizeof lacks / sizeof lacks[0]; i++) {
        ax_ctx *ctx = test_ctx_new("m.ax", NULL);
        ir_graph *g = one_op(ctx, lacks[i].target, lacks[i].op);
        assert_int_equal(cg_target_check(g), 1);
        assert_reported(ctx, lacks[i].message);
        ir_graph_free_nodes(g);
        test_ctx_free(ctx);
    }
}

/* The c target has a kernel for every op; the GPU dispatch table
 * (generated from ir/ops.def) declares exactly the RNN and training-only
 * ops unsupported, and the check passes every other op. */
static void test_gpu_table(void **state)
{
    (void)state;
    for (int op = 0; op < IR_OP_COUNT; op++) {
        ax_ctx *ctx = test_ctx_new("m.ax", NULL);
        ir_graph *g = one_op(ctx, IR_TARGET_c, (ir_op)op);
        assert_int_equal(cg_target_check(g), 0);
        const char *name = ir_ops[op].name;
        const bool lacks = op == IR_OP_gru || op == IR_OP_lstm || op == IR_OP_dropout ||
                           strstr(name, "_grad") != NULL;
        g->target = &cg_target_get(IR_TARGET_cuda)->facts;
        if (cg_target_check(g) != lacks)
            fail_msg("the cuda target %s %s", lacks ? "accepts" : "refuses", name);
        ir_graph_free_nodes(g);
        test_ctx_free(ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_complete),
        cmocka_unit_test(test_unsupported_located),
        cmocka_unit_test(test_gpu_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
