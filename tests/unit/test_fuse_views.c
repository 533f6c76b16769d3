/* test_fuse_views.c — transposes and reshapes absorbed into their consumers
 * (pass_fuse_matmul.c, pass_fuse_elementwise.c), on graphs built by hand so
 * that cases the language cannot write (a transposed parameter) are covered:
 *   - matmul(x, transpose(W)) of a param W becomes dense(x, W) and the C
 *     backend calls the packed dense kernel, with no transpose left;
 *   - a transpose with another user stays for it;
 *   - a fused loop's operand strides for a transposed and a reshaped read,
 *     and which of them the memory plan may overwrite in place;
 *   - the loop program the plan makes of such a loop (ir_loop), and its
 *     innermost loop marked independent in the C (AXC_IVDEP);
 *   - a reshape of a broadcast read stays opaque (no strided view);
 *   - GELU written out with erf (pass_fuse_gelu.c), in PyTorch's ONNX form
 *     after a dense, becomes the dense's gelu epilogue (no erff loop left);
 *     in Hugging Face's form (x · (1/√2), ½ on x) one gelu node; a chain
 *     whose erf is also an output, or whose ½ is 0.4, stays. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cg_target.h"
#include "passes.h"
#include "pipeline_table.h"

typedef struct model {
    ax_ctx *ctx;
    ir_graph *g;
} model;

static model model_new(void)
{
    model m;
    m.ctx = ax_ctx_new();
    m.g = ir_graph_new(m.ctx, "views", ax_noloc());
    m.g->target = &cg_target_get(IR_TARGET_c)->facts;
    m.g->dtype = AXRT_F32;
    return m;
}

static int leaf(model *m, ir_op op, int rank, const int64_t *shape)
{
    const int id = ir_add(m->g, op, NULL, 0, ax_noloc());
    ir_node *n = ir_at(m->g, id);
    n->dtype = AXRT_F32;
    n->rank = rank;
    memcpy(n->shape, shape, sizeof *shape * (size_t)rank);
    if (op == IR_OP_input) {
        n->name = "x";
        ir_add_input(m->g, id);
    } else {
        n->name = "w";
        n->data = ax_alloc(m->ctx->arena, ir_nbytes(n));
        for (int64_t i = 0; i < ir_numel(n); i++)
            ((float *)n->data)[i] = (float)i / 8.0f;
    }
    return id;
}

static int node(model *m, ir_op op, int a, int b)
{
    const int src[2] = {a, b};
    return ir_add(m->g, op, src, b == IR_NONE ? 1 : 2, ax_noloc());
}

static int transpose2(model *m, int x)
{
    const int id = node(m, IR_OP_transpose, x, IR_NONE);
    ir_at(m->g, id)->attrs.perm[0] = 1;
    ir_at(m->g, id)->attrs.perm[1] = 0;
    ir_at(m->g, id)->attrs.nperm = 2;
    return id;
}

static int reshape(model *m, int x, int rank, const int64_t *shape)
{
    const int id = node(m, IR_OP_reshape, x, IR_NONE);
    memcpy(ir_at(m->g, id)->attrs.newshape, shape, sizeof *shape * (size_t)rank);
    ir_at(m->g, id)->attrs.nnewshape = rank;
    return id;
}

static int scalar(model *m, double value)
{
    const int id = ir_add(m->g, IR_OP_scalar, NULL, 0, ax_noloc());
    ir_at(m->g, id)->attrs.scalar = value;
    ir_at(m->g, id)->dtype = AXRT_F32;
    return id;
}

static void output(model *m, int id)
{
    ir_add_output(m->g, id, m->g->noutputs ? "out1" : "out0");
}

static void optimise(model *m)
{
    assert_int_equal(pass_shape(m->g), 0);
    assert_int_equal(pass_dtype(m->g, ELTYPE_CONVERT), 0);
    assert_int_equal(axc_optimise(m->ctx, m->g, 2), 0);
}

static char *emit_c(model *m)
{
    ax_buf c = {0}, h = {0};
    ir_graph *models[1] = {m->g};
    cg_request req = {.models = models, .nmodels = 1, .header_name = "views.h", .source_name = "views.ax"};
    assert_int_equal(cg_c_emit(&req, &c, &h), 0);
    ax_buf_free(&h);
    char *text = ax_strdup(m->ctx->arena, c.data);
    ax_buf_free(&c);
    return text;
}

/* How many live nodes do op (pass_schedule renumbers nodes, so tests look
 * nodes up by op, not by the ids they were built with). */
static int live_count(const model *m, ir_op op)
{
    int count = 0;
    for (int id = 0; id < m->g->nnodes; id++)
        count += !m->g->nodes[id].dead && m->g->nodes[id].op == op;
    return count;
}

/* The one live node doing op. */
static const ir_node *live_node(const model *m, ir_op op)
{
    assert_int_equal(live_count(m, op), 1);
    for (int id = 0;; id++)
        if (!m->g->nodes[id].dead && m->g->nodes[id].op == op)
            return &m->g->nodes[id];
}

static void test_transposed_param_becomes_packed_dense(void **state)
{
    (void)state;
    model m = model_new();
    const int x = leaf(&m, IR_OP_input, 2, (int64_t[]){3, 5});
    const int w = leaf(&m, IR_OP_param, 2, (int64_t[]){7, 5});
    const int t = transpose2(&m, w);
    output(&m, node(&m, IR_OP_matmul, x, t));
    optimise(&m);
    const ir_node *n = live_node(&m, IR_OP_dense);
    assert_int_equal(m.g->nodes[n->src[0]].op, IR_OP_input);
    assert_int_equal(m.g->nodes[n->src[1]].op, IR_OP_param);
    assert_int_equal(n->src[2], IR_NONE);
    assert_int_equal(live_count(&m, IR_OP_transpose), 0);
    assert_int_equal(live_count(&m, IR_OP_matmul), 0);
    const char *c = emit_c(&m);
    assert_non_null(strstr(c, "axrt_dense_packed"));
    assert_null(strstr(c, "axrt_transpose"));
    ir_graph_free_nodes(m.g);
    ax_ctx_free(m.ctx);
}

static void test_transpose_with_another_user_stays(void **state)
{
    (void)state;
    model m = model_new();
    const int x = leaf(&m, IR_OP_input, 2, (int64_t[]){3, 5});
    const int w = leaf(&m, IR_OP_param, 2, (int64_t[]){7, 5});
    const int t = transpose2(&m, w);
    const int y = node(&m, IR_OP_matmul, x, t);
    output(&m, y);
    output(&m, t);
    optimise(&m);
    assert_int_equal(live_count(&m, IR_OP_dense), 1);
    assert_int_equal(live_count(&m, IR_OP_transpose), 1);
    ir_graph_free_nodes(m.g);
    ax_ctx_free(m.ctx);
}

/* f's plan, a loop program (codegen/cg_plan_loop.c): two loops [3, 2], x
 * loaded at (1, 3), exp, the constant 1, add, stored densely. */
static void check_transposed_loop_program(const model *m, const ir_node *f)
{
    const ir_loop *l = cg_plan_loop(m->g, (int)(f - m->g->nodes));
    assert_int_equal(l->nloops, 2);
    assert_int_equal(l->dims[0], 3);
    assert_int_equal(l->dims[1], 2);
    assert_int_equal(l->ninputs, 1);
    assert_int_equal(l->in_strides[0][0], 1);
    assert_int_equal(l->in_strides[0][1], 3);
    assert_int_equal(l->nops, 4);
    const ir_loop_kind kinds[] = {IR_LOOP_LOAD, IR_LOOP_UNARY, IR_LOOP_CONST, IR_LOOP_BINARY};
    for (int v = 0; v < 4; v++)
        assert_int_equal(l->ops[v].kind, kinds[v]);
    assert_int_equal(l->ops[1].op, IR_OP_exp);
    assert_int_equal(l->ops[1].arg[0], 0);
    assert_true(l->ops[2].real == 1.0);
    assert_int_equal(l->ops[3].op, IR_OP_add);
    assert_int_equal(l->ops[3].arg[0], 1);
    assert_int_equal(l->ops[3].arg[1], 2);
    assert_int_equal(l->store, 3);
    assert_int_equal(l->out_strides[0], 2);
    assert_int_equal(l->out_strides[1], 1);
}

/* exp(transpose(x)) + 1 over x [2, 3]: one loop reading x with strides
 * (1, 3) over [3, 2], which is not the result's order; its loop program. */
static void test_transposed_read_strides(void **state)
{
    (void)state;
    model m = model_new();
    const int x = leaf(&m, IR_OP_input, 2, (int64_t[]){2, 3});
    const int e = node(&m, IR_OP_exp, transpose2(&m, x), IR_NONE);
    output(&m, node(&m, IR_OP_add, e, scalar(&m, 1.0)));
    optimise(&m);
    const ir_node *f = live_node(&m, IR_OP_fused_elementwise);
    assert_int_equal(f->nsrc, 1);
    assert_int_equal(m.g->nodes[f->src[0]].op, IR_OP_input);
    assert_int_equal(f->attrs.strides[0][0], 1);
    assert_int_equal(f->attrs.strides[0][1], 3);
    assert_false(ir_fused_in_order(m.g, f, 0));
    check_transposed_loop_program(&m, f);
    /* the innermost loop marked independent (GCC -O2 vectorizes it so), the outer one not */
    const char *c = emit_c(&m);
    assert_non_null(strstr(c, "#define AXC_IVDEP _Pragma(\"GCC ivdep\")"));
    assert_non_null(strstr(c, "            AXC_IVDEP\n            for (i1 = 0; i1 < 2; i1++, o++) {"));
    assert_null(strstr(c, "AXC_IVDEP\n        for (i0"));
    ir_graph_free_nodes(m.g);
    ax_ctx_free(m.ctx);
}

/* reshape(tanh(x), (3, 4)) .* 2 over x [2, 6]: the reshape is read through
 * and x is read in the result's order (strides (4, 1) over [3, 4]). */
static void test_reshaped_read_in_order(void **state)
{
    (void)state;
    model m = model_new();
    const int x = leaf(&m, IR_OP_input, 2, (int64_t[]){2, 6});
    const int r = reshape(&m, node(&m, IR_OP_tanh, x, IR_NONE), 2, (int64_t[]){3, 4});
    output(&m, node(&m, IR_OP_mul, r, scalar(&m, 2.0)));
    optimise(&m);
    const ir_node *f = live_node(&m, IR_OP_fused_elementwise);
    assert_int_equal(live_count(&m, IR_OP_reshape), 0);
    assert_int_equal(f->rank, 2);
    assert_int_equal(f->attrs.strides[0][0], 4);
    assert_int_equal(f->attrs.strides[0][1], 1);
    assert_true(ir_fused_in_order(m.g, f, 0));
    ir_graph_free_nodes(m.g);
    ax_ctx_free(m.ctx);
}

/* reshape(exp(x + b), (6,)) - 1 with b [3] broadcast over x [2, 3]: b has
 * strides (0, 1) over [2, 3], which no single stride over [6] expresses, so
 * the reshape stays and only exp(x + b) is fused. */
static void test_broadcast_reshape_stays_opaque(void **state)
{
    (void)state;
    model m = model_new();
    const int x = leaf(&m, IR_OP_input, 2, (int64_t[]){2, 3});
    const int b = leaf(&m, IR_OP_param, 1, (int64_t[]){3});
    const int e = node(&m, IR_OP_exp, node(&m, IR_OP_add, x, b), IR_NONE);
    output(&m, node(&m, IR_OP_sub, reshape(&m, e, 1, (int64_t[]){6}), scalar(&m, 1.0)));
    optimise(&m);
    assert_int_equal(live_count(&m, IR_OP_reshape), 1);
    assert_int_equal(live_count(&m, IR_OP_sub), 1);
    const ir_node *f = live_node(&m, IR_OP_fused_elementwise);
    assert_int_equal(f->rank, 2);
    assert_int_equal(f->attrs.nsteps, 2);
    ir_graph_free_nodes(m.g);
    ax_ctx_free(m.ctx);
}

/* x · ½ (1 + erf(x / √2)) of node x: PyTorch's ONNX order (torch: Div, Erf,
 * Add, Mul by x, Mul by ½), else Hugging Face's (x · (1/√2); (x · ½) · (1 +
 * erf)), with half as the ½; *erf_id gets the erf node. */
static int gelu_chain_of(model *m, int x, int torch_order, double half, int *erf_id)
{
    const int scaled = torch_order ? node(m, IR_OP_div, x, scalar(m, 1.4142135623730951))
                                   : node(m, IR_OP_mul, scalar(m, 0.7071067811865476), x);
    const int e = *erf_id = node(m, IR_OP_erf, scaled, IR_NONE);
    const int one = torch_order ? node(m, IR_OP_add, e, scalar(m, 1.0)) : node(m, IR_OP_add, scalar(m, 1.0), e);
    if (torch_order) return node(m, IR_OP_mul, node(m, IR_OP_mul, x, one), scalar(m, half));
    return node(m, IR_OP_mul, node(m, IR_OP_mul, scalar(m, half), x), one);
}

static void test_gelu_chain_becomes_epilogue(void **state)
{
    (void)state;
    model m = model_new();
    int e;
    const int x = leaf(&m, IR_OP_input, 2, (int64_t[]){3, 5});
    const int w = leaf(&m, IR_OP_param, 2, (int64_t[]){7, 5});
    output(&m, gelu_chain_of(&m, node(&m, IR_OP_matmul, x, transpose2(&m, w)), 1, 0.5, &e));
    optimise(&m);
    assert_int_equal(live_node(&m, IR_OP_dense)->attrs.act, IR_OP_gelu);
    assert_int_equal(live_count(&m, IR_OP_erf) + live_count(&m, IR_OP_mul) + live_count(&m, IR_OP_div), 0);
    assert_int_equal(live_count(&m, IR_OP_fused_elementwise) + live_count(&m, IR_OP_scalar), 0);
    const char *c = emit_c(&m);
    assert_non_null(strstr(c, "AXRT_ACT_GELU"));
    assert_null(strstr(c, "erff"));
    ir_graph_free_nodes(m.g);
    ax_ctx_free(m.ctx);
}

/* Hugging Face's form becomes gelu(x); a chain whose erf is an output too,
 * or whose ½ is not ½, stays (pass_fuse_gelu alone). */
static void test_gelu_chain_forms(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        model m = model_new();
        int e;
        const int x = leaf(&m, IR_OP_input, 2, (int64_t[]){4, 6});
        const int y = gelu_chain_of(&m, x, 0, variant == 2 ? 0.4 : 0.5, &e);
        output(&m, y);
        if (variant == 1) output(&m, e);
        assert_int_equal(pass_shape(m.g), 0);
        assert_int_equal(pass_fuse_gelu(m.g), 0);
        assert_int_equal(live_count(&m, IR_OP_gelu), variant == 0);
        assert_int_equal(live_count(&m, IR_OP_erf), variant != 0);
        if (variant == 0) {
            assert_int_equal(m.g->nodes[y].op, IR_OP_gelu);
            assert_int_equal(m.g->nodes[y].src[0], x);
            assert_int_equal(live_count(&m, IR_OP_mul) + live_count(&m, IR_OP_add) + live_count(&m, IR_OP_scalar), 0);
        }
        ir_graph_free_nodes(m.g);
        ax_ctx_free(m.ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transposed_param_becomes_packed_dense),
        cmocka_unit_test(test_transpose_with_another_user_stays),
        cmocka_unit_test(test_transposed_read_strides),
        cmocka_unit_test(test_reshaped_read_in_order),
        cmocka_unit_test(test_broadcast_reshape_stays_opaque),
        cmocka_unit_test(test_gelu_chain_becomes_epilogue),
        cmocka_unit_test(test_gelu_chain_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
