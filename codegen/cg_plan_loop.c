/* cg_plan_loop.c — the loop program of a fused elementwise node (ir_loop,
 * ir/ir_plan.h): its plan, decided once here and spelled as it is by the C
 * back end (cg_c_fused.c), the LLVM back end (cg_llvm.c) and the GPU back
 * end (cg_gpu.c, one thread per element, reading the same program); and
 * the training step's unary_grad (dy * f'(x)) as a program of the same
 * kind, which the C back end alone prints (the only one writing a step).
 *
 * A fused_elementwise node (ir.h ir_fused_step) becomes one loop nest over
 * its result: dims of size 1 are dropped and neighbours merged wherever every
 * operand's strides (attrs.strides: broadcasts, transposes and reshapes read
 * through) allow, so a same-shape chain is one flat loop; each operand is
 * loaded at its strides, each step is a temporary, the last one is stored. */
#include "cg_target.h"

_Static_assert(IR_MAX_FUSED_SRC <= IR_LOOP_MAX_INPUTS, "ir_loop holds every operand of a fused node");

/* The loop nest: dims[] and per-operand strides[k][] after dropping size-1
 * dims and merging neighbours; returns the loop count (at least 1). */
static int fused_loops(const ir_node *n, int64_t *dims, int64_t strides[][IR_MAX_RANK])
{
    const int64_t (*full)[IR_MAX_RANK] = n->attrs.strides;
    int loops = 0;
    for (int d = 0; d < n->rank; d++) {
        if (n->shape[d] == 1)
            continue;
        bool merge = loops > 0;
        for (int k = 0; k < n->nsrc && merge; k++)
            merge = strides[k][loops - 1] == full[k][d] * n->shape[d];
        if (merge) {
            dims[loops - 1] *= n->shape[d];
            for (int k = 0; k < n->nsrc; k++)
                strides[k][loops - 1] = full[k][d];
            continue;
        }
        dims[loops] = n->shape[d];
        for (int k = 0; k < n->nsrc; k++)
            strides[k][loops] = full[k][d];
        loops++;
    }
    if (loops == 0) {
        dims[0] = 1;
        for (int k = 0; k < n->nsrc; k++)
            strides[k][0] = 0;
        loops = 1;
    }
    return loops;
}

/* The temporary of a step's argument: an operand's load (the first ninputs
 * ops) or an earlier step's. */
static int step_arg(const ir_loop *l, int arg)
{
    return arg >= 0 ? l->ninputs + arg : IR_FUSED_OPERAND_INDEX(arg);
}

/* The ops: a load per operand, then one per step (ir_fused_step). */
static ir_loop_op *loop_ops(ax_arena *a, const ir_node *n, const ir_loop *l)
{
    ir_loop_op *ops = ax_alloc(a, sizeof *ops * (size_t)(n->nsrc + n->attrs.nsteps));
    for (int k = 0; k < n->nsrc; k++)
        ops[k] = (ir_loop_op){.kind = IR_LOOP_LOAD, .op = IR_OP_COUNT, .arg = {k, -1}};
    for (int s = 0; s < n->attrs.nsteps; s++) {
        const ir_fused_step *step = &n->attrs.steps[s];
        ir_loop_op *o = &ops[n->nsrc + s];
        *o = (ir_loop_op){.op = step->op, .arg = {-1, -1}, .real = step->value};
        if (step->op == IR_OP_scalar) {
            o->kind = IR_LOOP_CONST;
            continue;
        }
        o->kind = ir_ops[step->op].kind == IR_BINARY ? IR_LOOP_BINARY : IR_LOOP_UNARY;
        o->arg[0] = step_arg(l, step->arg[0]);
        if (o->kind == IR_LOOP_BINARY)
            o->arg[1] = step_arg(l, step->arg[1]);
    }
    return ops;
}

const ir_loop *cg_plan_loop(const ir_graph *g, int id)
{
    const ir_node *n = &g->nodes[id];
    if (n->attrs.nsteps < 1)
        ax_die("cg_plan: fused %%%d has no steps", id);
    ir_loop *l = ax_alloc(g->ctx->arena, sizeof *l);
    l->dtype = l->compute = n->dtype;
    l->nloops = fused_loops(n, l->dims, l->in_strides);
    l->ninputs = n->nsrc;
    for (int k = 0; k < n->nsrc; k++)
        l->input[k] = n->src[k];
    l->ops = loop_ops(g->ctx->arena, n, l);
    l->nops = n->nsrc + n->attrs.nsteps;
    l->output = id;
    l->store = l->nops - 1;
    int64_t stride = 1;   /* the result is dense: row-major over the merged dims */
    for (int d = l->nloops - 1; d >= 0; d--) {
        l->out_strides[d] = stride;
        stride *= l->dims[d];
    }
    return l;
}

/* dy (operand 0) * f'(x) (operand 1), f the UNARY_OP row attrs.of_op with
 * its alpha: one flat loop, dy, x and the result sharing one dense shape;
 * a half model's temporaries are Float32 (each result rounded once). */
const ir_loop *cg_plan_derivative_loop(const ir_graph *g, int id)
{
    const ir_node *n = &g->nodes[id];
    ir_loop *l = ax_alloc(g->ctx->arena, sizeof *l);
    ir_loop_op *ops = ax_alloc(g->ctx->arena, sizeof *ops * 4);
    l->dtype = n->dtype;
    l->compute = n->dtype == AXRT_F16 || n->dtype == AXRT_BF16 ? AXRT_F32 : n->dtype;
    l->nloops = 1;
    l->dims[0] = ir_numel(n);
    l->ninputs = 2;
    for (int k = 0; k < 2; k++) {
        l->input[k] = n->src[k];
        l->in_strides[k][0] = 1;
        ops[k] = (ir_loop_op){.kind = IR_LOOP_LOAD, .op = IR_OP_COUNT, .arg = {k, -1}};
    }
    ops[2] = (ir_loop_op){.kind = IR_LOOP_DERIV, .op = n->attrs.of_op, .arg = {1, -1}, .real = n->attrs.alpha};
    ops[3] = (ir_loop_op){.kind = IR_LOOP_BINARY, .op = IR_OP_mul, .arg = {0, 2}};
    l->ops = ops;
    l->nops = 4;
    l->output = id;
    l->store = 3;
    l->out_strides[0] = 1;
    return l;
}
