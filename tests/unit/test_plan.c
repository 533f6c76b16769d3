/* test_plan.c — the kernel-call plan (ir/ir_plan.h, codegen/cg_plan.c):
 * what cg_select records on each node, and how --emit=ir prints it.
 * A dense whose activation the packed kernel has runs it in the kernel's
 * epilogue; one it does not have (leaky_relu) gets the plain packed kernel
 * and an activation call after it; --blas=openblas calls the BLAS helper.
 * The training step's kernels are planned too: unary_grad (ReLU's kernel
 * in Float32, else the derivative's loop program, Float32 temporaries
 * over half operands), embedding_grad (a status call) and Dropout (its
 * counter read as int64_t, its probability a double).
 * A training step's own statements (ir_step_plan, cg_plan_step.c): each
 * parameter's update after its node with the state's offsets, the split
 * step's hand-offs packed in completion order and its apply, clipping by
 * norm before the updates (a shared gradient scaled once), a half
 * parameter's update on its master behind the loss scaling's checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cg_target.h"
#include "passes.h"
#include "train_graph.h"

/* x [2, 8] -> dense (w [4, 8], b [4]) with activation act -> output. */
static ir_graph *dense_model(ax_ctx *ctx, int act, int *dense)
{
    ir_graph *g = ir_graph_new(ctx, "m", ax_noloc());
    g->target = &cg_target_get(IR_TARGET_c)->facts;
    g->dtype = AXRT_F32;
    const int64_t xs[] = {2, 8}, ws[] = {4, 8}, bs[] = {4};
    const int64_t *shapes[] = {xs, ws, bs};
    const int ranks[] = {2, 2, 1};
    int src[3];
    for (int i = 0; i < 3; i++) {
        src[i] = ir_add(g, i ? IR_OP_param : IR_OP_input, NULL, 0, ax_noloc());
        ir_node *n = ir_at(g, src[i]);
        n->name = i == 0 ? "x" : i == 1 ? "w" : "b";
        n->dtype = AXRT_F32;
        n->rank = ranks[i];
        memcpy(n->shape, shapes[i], sizeof(int64_t) * (size_t)ranks[i]);
        if (i) n->data = ax_alloc(ctx->arena, (size_t)ir_numel(n) * sizeof(float));
        else ir_add_input(g, src[i]);
    }
    *dense = ir_add(g, IR_OP_dense, src, 3, ax_noloc());
    ir_at(g, *dense)->attrs.act = act;
    ir_at(g, *dense)->attrs.alpha = 0.25;
    ir_add_output(g, *dense, "y");
    assert_int_equal(pass_shape(g), 0);
    assert_int_equal(pass_dtype(g, ELTYPE_CONVERT), 0);
    assert_int_equal(pass_memplan(g), 0);
    cg_select(g);
    return g;
}

static void test_packed_epilogue_in_the_kernel(void **state)
{
    (void)state;
    ax_ctx *ctx = ax_ctx_new();
    int d;
    ir_graph *g = dense_model(ctx, IR_OP_relu, &d);
    const ir_plan *p = ir_at(g, d)->plan;
    assert_non_null(p);
    assert_int_equal(p->ncalls, 1);   /* no separate activation call */
    assert_string_equal(p->calls[0].kernel, "axrt_dense_packed_const_ep_f32");
    const ir_call *c = &p->calls[0];
    assert_int_equal(c->nargs, 9);
    assert_int_equal(c->args[3].kind, IR_ARG_VALUE);
    assert_int_equal(c->args[3].node, IR_NONE);     /* no residual */
    assert_int_equal(c->args[4].kind, IR_ARG_ACT);
    assert_int_equal(c->args[4].value, AXRT_ACT_RELU);
    assert_int_equal(c->args[6].kind, IR_ARG_SIZE);
    assert_int_equal(c->args[6].value, 2);          /* rows */
    ax_buf out = {0};
    ir_dump(g, &out);
    ax_buf_put(&out, "", 1);
    assert_non_null(strstr(out.data, "      call axrt_dense_packed_const_ep_f32(%0, %1, %2, null, relu, %3, 2, 8, 4)\n"));
    ax_buf_free(&out);
    ir_graph_free_nodes(g);
    ax_ctx_free(ctx);
}

static void test_activation_after_the_kernel(void **state)
{
    (void)state;
    ax_ctx *ctx = ax_ctx_new();
    int d;
    ir_graph *g = dense_model(ctx, IR_OP_leaky_relu, &d);
    const ir_plan *p = ir_at(g, d)->plan;
    assert_non_null(p);
    assert_int_equal(p->ncalls, 2);
    assert_string_equal(p->calls[0].kernel, "axrt_dense_packed_f32");
    assert_string_equal(p->calls[1].kernel, "axrt_leaky_relu_f32");
    const ir_call *act = &p->calls[1];
    assert_int_equal(act->args[0].node, d);   /* in place over the result */
    assert_int_equal(act->args[1].node, d);
    assert_int_equal(act->args[3].kind, IR_ARG_REAL);
    assert_true(act->args[3].real == 0.25);
    ir_graph_free_nodes(g);
    ax_ctx_free(ctx);
}

static void test_blas_helper(void **state)
{
    (void)state;
    ax_ctx *ctx = ax_ctx_new();
    int d;
    ir_graph *g = dense_model(ctx, IR_OP_relu, &d);
    cg_select_blas(g);
    const ir_plan *p = ir_at(g, d)->plan;
    assert_int_equal(p->ncalls, 2);
    assert_string_equal(p->calls[0].kernel, "axc_blas_dense");
    assert_string_equal(p->calls[1].kernel, "axrt_relu_f32");
    ir_graph_free_nodes(g);
    ax_ctx_free(ctx);
}

/* A node of op over src, its dtype and shape set here (no pass needs to
 * run for a plan). */
static int node_of(ir_graph *g, ir_op op, const int *src, int nsrc, axrt_dtype dtype, const int64_t *shape,
                   int rank)
{
    const int id = ir_add(g, op, src, nsrc, ax_noloc());
    ir_node *n = ir_at(g, id);
    n->dtype = dtype;
    n->rank = rank;
    memcpy(n->shape, shape, sizeof(int64_t) * (size_t)rank);
    return id;
}

/* The plan of node id as --emit=ir prints it. */
static char *plan_text(ir_graph *g, int id)
{
    const cg_plan_context ctx = {.pack_offset = -1};
    ax_buf out = {0};
    ir_plan_print(cg_plan_node(g, id, &ctx), &out);
    ax_buf_put(&out, "", 1);
    char *text = ax_strdup(g->ctx->arena, out.data);
    ax_buf_free(&out);
    return text;
}

/* dy * f'(x) of op f in dtype, over [4, 6] operands %0 (dy) and %1 (x). */
static char *unary_grad_plan(ax_ctx *ctx, ir_op f, axrt_dtype dtype)
{
    ir_graph *g = ir_graph_new(ctx, "m", ax_noloc());
    const int64_t shape[] = {4, 6};
    const int src[] = {node_of(g, IR_OP_input, NULL, 0, dtype, shape, 2), node_of(g, IR_OP_input, NULL, 0, dtype, shape, 2)};
    const int d = node_of(g, IR_OP_unary_grad, src, 2, dtype, shape, 2);
    ir_at(g, d)->attrs.of_op = f;
    char *text = plan_text(g, d);
    ir_graph_free_nodes(g);
    return text;
}

static void test_unary_grad(void **state)
{
    (void)state;
    ax_ctx *ctx = ax_ctx_new();
    assert_string_equal(unary_grad_plan(ctx, IR_OP_relu, AXRT_F32), "      call axrt_relu_grad_f32(%0, %1, %2, 24)\n");
    const char *loop = "        t0 = load %0 @(1)\n        t1 = load %1 @(1)\n        t2 = tanh'(t1)\n"
                       "        t3 = mul(t0, t2)\n        store %2 @(1) = t3\n";
    assert_string_equal(unary_grad_plan(ctx, IR_OP_tanh, AXRT_F64),
                        ax_sprintf(ctx->arena, "      loop [24] Float64\n%s", loop));
    assert_string_equal(unary_grad_plan(ctx, IR_OP_tanh, AXRT_F16),
                        ax_sprintf(ctx->arena, "      loop [24] Float16 in Float32\n%s", loop));
    assert_non_null(strstr(unary_grad_plan(ctx, IR_OP_relu, AXRT_F16), "t2 = relu'(t1)"));   /* no half kernel */
    ax_ctx_free(ctx);
}

static void test_embedding_grad_and_dropout(void **state)
{
    (void)state;
    ax_ctx *ctx = ax_ctx_new();
    ir_graph *g = ir_graph_new(ctx, "m", ax_noloc());
    const int64_t idx_shape[] = {3}, dy_shape[] = {3, 5}, table[] = {10, 5}, two[] = {2};
    const int src[] = {node_of(g, IR_OP_input, NULL, 0, AXRT_I64, idx_shape, 1),
                       node_of(g, IR_OP_input, NULL, 0, AXRT_F32, dy_shape, 2)};
    const int e = node_of(g, IR_OP_embedding_grad, src, 2, AXRT_F32, table, 2);
    assert_string_equal(plan_text(g, e), "      call axrt_embedding_grad_f32(%0, Int64, %1, %2, 3, 10, 5) -> status\n");
    const int with_counter[] = {src[1], node_of(g, IR_OP_param, NULL, 0, AXRT_I64, two, 1)};
    const int d = node_of(g, IR_OP_dropout, with_counter, 2, AXRT_F32, dy_shape, 2);
    ir_at(g, d)->attrs.index = 1;
    ir_at(g, d)->attrs.alpha = 0.25;
    assert_string_equal(plan_text(g, d), "      call axrt_dropout_f32(%1, i64:%3, %4, 15, 1, 0.25)\n");
    const int without[] = {src[1], IR_NONE};   /* not a training graph: a copy */
    const int c = node_of(g, IR_OP_dropout, without, 2, AXRT_F32, dy_shape, 2);
    assert_string_equal(plan_text(g, c), "      call memcpy(%5, %1, 60) unless aliased\n");
    ir_graph_free_nodes(g);
    ax_ctx_free(ctx);
}

/* The dense model (its dense at d), with its w (%1) and b (%2) as a
 * step's state tensors ts, both updated after the dense (their "gradient"
 * here: the plan reads only shapes, dtypes and offsets). */
typedef struct step_case {
    ax_ctx *ctx;
    ir_graph *g;
    int d;
    pass_train_tensor ts[2];
    pass_train_step t;
} step_case;

static void step_case_init(step_case *k)
{
    k->ctx = ax_ctx_new();
    k->g = dense_model(k->ctx, IR_OP_relu, &k->d);
    const pass_train_tensor w = {1, k->d, IR_NONE, k->d, 64, {192, 320}, IR_NONE, -1};
    const pass_train_tensor b = {2, k->d, IR_NONE, k->d, 448, {512, 576}, IR_NONE, -1};
    k->ts[0] = w;
    k->ts[1] = b;
    const pass_train_step t = {.tensors = k->ts, .ntensors = 2, .dropout_counter = IR_NONE, .loss_seed = IR_NONE};
    k->t = t;
}

static void test_step_updates_and_split(void **state)
{
    (void)state;
    step_case k;
    step_case_init(&k);
    const int d = k.d;
    k.t.grad_exchange = true;
    const ir_step_plan *p = cg_plan_step(k.g, &k.t);
    assert_int_equal(p->after[d].nops, 2);
    assert_int_equal(p->after[0].nops, 0);
    const ir_call *c = &p->after[d].ops[0].call;
    assert_string_equal(c->kernel, "axrt_optim_step_f32");
    assert_string_equal(p->after[d].ops[0].note, "update 'w'");
    assert_int_equal(c->nargs, 7);
    assert_int_equal(c->args[0].kind, IR_ARG_OPTIM);
    assert_int_equal(c->args[0].value, 0);            /* lr and momentum from the header */
    assert_int_equal(c->args[1].kind, IR_ARG_STATE);
    assert_int_equal(c->args[1].value, 64);
    assert_int_equal(c->args[2].node, d);
    assert_int_equal(c->args[4].value, 320);         /* the second moment */
    assert_int_equal(c->args[5].value, 32);          /* w's elements */
    assert_string_equal(c->args[6].name, "step");
    assert_int_equal(p->grad_bytes, 32 * 4 + 4 * 4);
    assert_int_equal(p->grad_offset[1], 128);        /* b after w: the order they complete */
    const ir_step_list *split = &p->after_split[d];
    assert_int_equal(split->nops, 4);
    assert_int_equal(split->ops[2].call.args[0].kind, IR_ARG_GRADS_OUT);
    assert_int_equal(split->ops[2].call.args[0].value, 128);
    assert_int_equal(split->ops[3].kind, IR_STEP_READY);
    assert_int_equal(split->ops[3].bytes, 16);
    assert_int_equal(p->apply.nops, 2);
    assert_int_equal(p->apply.ops[1].call.args[0].value, 1);   /* the compiled hyperparameters */
    assert_int_equal(p->apply.ops[1].call.args[2].kind, IR_ARG_GRADS_IN);
    assert_int_equal(p->apply.ops[1].call.args[2].value, 128);
    assert_int_equal(p->init.nops, 2);
    assert_int_equal(p->init.ops[1].call.args[0].kind, IR_ARG_STATE_BYTES);
    assert_int_equal(p->init.ops[1].call.args[0].value, 448);
    assert_int_equal(p->init.ops[1].call.args[1].kind, IR_ARG_EMBEDDED);
    ir_graph_free_nodes(k.g);
    ax_ctx_free(k.ctx);
}

static void test_step_clip_norm_and_loss_scale(void **state)
{
    (void)state;
    step_case k;
    step_case_init(&k);
    const int d = k.d;
    k.t.clip_norm = 0.5;
    const ir_step_plan *p = cg_plan_step(k.g, &k.t);
    assert_null(p->after_split);
    assert_int_equal(p->after[d].nops, 3);
    const ir_step_op *clip = &p->after[d].ops[0];
    assert_int_equal(clip->kind, IR_STEP_CLIP_NORM);
    assert_int_equal(clip->count, 2);
    assert_true(clip->scaled[0] && !clip->scaled[1]);   /* one storage, scaled once */
    assert_true(clip->real == 0.5);
    k.t.clip_norm = 0;
    k.ts[0].master = 640;   /* a half parameter's Float32 master, behind the loss scaling */
    k.t.loss_seed = 0;
    p = cg_plan_step(k.g, &k.t);
    assert_int_equal(p->after[d].ops[0].kind, IR_STEP_LOSS_SCALE);
    assert_int_equal(p->after[d].ops[0].count, 1);
    assert_string_equal(p->after[d].ops[0].calls[0].kernel, "axrt_half_all_finite");
    assert_string_equal(p->after[d].ops[1].call.kernel, "axrt_amp_step");
    assert_int_equal(p->after[d].ops[1].call.args[3].value, 640);
    assert_string_equal(p->after[d].ops[1].call.args[9].name, "inv_scale");
    assert_string_equal(p->after[d].ops[2].call.kernel, "axrt_optim_step_f32");
    assert_string_equal(p->init.ops[1].call.kernel, "axrt_cast_f32");
    ir_graph_free_nodes(k.g);
    ax_ctx_free(k.ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packed_epilogue_in_the_kernel),
        cmocka_unit_test(test_activation_after_the_kernel),
        cmocka_unit_test(test_blas_helper),
        cmocka_unit_test(test_unary_grad),
        cmocka_unit_test(test_embedding_grad_and_dropout),
        cmocka_unit_test(test_step_updates_and_split),
        cmocka_unit_test(test_step_clip_norm_and_loss_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
