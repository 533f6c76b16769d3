/* cg_plan_step.c — the training step's own statements as a plan
 * (ir_step_plan, ir/ir_plan.h), decided once for every printer: after which
 * node of the step graph each parameter's update runs (the node the driver
 * chose: passes/train_graph_step.c), with which runtime call and which
 * arguments (the state's offsets, the optimizer, the step's counters), the
 * gradients' clipping and a Float16 step's loss scaling before the updates,
 * the split step's hand-offs (--grad-exchange: the gradients copied to the
 * caller in the order they complete) and its apply, and state_init's
 * initial values.  The C back end prints it (cg_c_train.c); nothing there
 * chooses a call. */
#include <ctype.h>
#include <string.h>

#include "cg_target.h"
#include "ir_use.h"
#include "train_graph.h"

typedef struct step_planner {
    ir_graph *g;
    const pass_train_step *t;
    ir_use use;               /* who reads each node (update_fuses) */
    ir_step_plan *plan;
} step_planner;

static ax_arena *arena_of(const step_planner *P) { return P->g->ctx->arena; }

/* A name as C string and comment contents (PyTorch names are tame;
 * anything else becomes '_'). */
const char *cg_plan_step_name(ax_arena *a, const char *text)
{
    char *s = ax_strdup(a, text ? text : "");
    for (char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
            *c = '_';
    return s;
}

/* ---- building the lists ------------------------------------------------------ */

/* A list's capacity is implied by its length (4, then powers of two), so
 * that appending is amortised constant time without a capacity field. */
static ir_step_op *add_op(step_planner *P, ir_step_list *l, ir_step_kind kind)
{
    const size_t n = (size_t)l->nops;
    if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
        ir_step_op *more = ax_alloc(arena_of(P), sizeof *more * (n < 4 ? 4 : 2 * n));
        if (n)
            memcpy(more, l->ops, sizeof *more * n);
        l->ops = more;
    }
    ir_step_op *op = &l->ops[l->nops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->node = IR_NONE;
    return op;
}

/* A call of kernel, with a comment "NOTE 'NAME'SUFFIX" when note is given. */
static ir_call *add_call(step_planner *P, ir_step_list *l, const char *kernel, const char *note, int param,
                         const char *suffix)
{
    ir_step_op *op = add_op(P, l, IR_STEP_CALL);
    op->call.kernel = kernel;
    if (note)
        op->note = ax_sprintf(arena_of(P), "%s '%s'%s", note,
                              cg_plan_step_name(arena_of(P), P->g->nodes[param].name), suffix);
    return &op->call;
}

static void put_node(ir_call *c, ir_arg_kind kind, int node) { ir_call_arg(c, kind)->node = node; }
static void put_number(ir_call *c, ir_arg_kind kind, int64_t v) { ir_call_arg(c, kind)->value = v; }
static void put_typed(ir_call *c, ir_arg_kind kind, axrt_dtype dtype, int64_t v)
{
    ir_arg *a = ir_call_arg(c, kind);
    a->dtype = dtype;
    a->value = v;
}
static void put_local(ir_call *c, const char *name) { ir_call_arg(c, IR_ARG_LOCAL)->name = name; }

/* ---- the updates (the whole step) --------------------------------------------- */

/* Whether node id lives in the caller's state (a parameter, the Dropout
 * counter, the loss scale). */
static bool in_state(const step_planner *P, int id)
{
    for (int k = 0; k < P->t->ntensors; k++)
        if (P->t->tensors[k].param == id)
            return true;
    return id == P->t->dropout_counter || id == P->t->loss_seed;
}

/* The node whose storage id reads: a reshape without storage of its own
 * reads its operand's. */
static int storage_owner(const ir_graph *g, int id)
{
    while (g->nodes[id].op == IR_OP_reshape && g->nodes[id].offset < 0 && ir_output_index(g, id) < 0)
        id = g->nodes[id].src[0];
    return id;
}

static bool same_storage(const ir_graph *g, int a, int b)
{
    a = storage_owner(g, a);
    b = storage_owner(g, b);
    return a == b || (g->nodes[a].offset >= 0 && g->nodes[a].offset == g->nodes[b].offset &&
                      g->nodes[a].dtype == g->nodes[b].dtype);
}

/* Whether s's update can run inside its gradient's Float32 matmul
 * (axrt_matmul_optim_f32, each block of rows updated while in cache): the
 * gradient is a plain 2-D matmul read by nothing but the update, which runs
 * right after it, and neither operand lives in the state (a parameter the
 * update would change under the matmul). */
static bool update_fuses(const step_planner *P, const pass_train_tensor *s)
{
    const ir_graph *g = P->g;
    if (s->value != IR_NONE || s->grad == IR_NONE || s->after != s->grad || ir_use_count(&P->use, s->grad) ||
        P->t->clip_norm > 0 || P->t->clip_value > 0)   /* the gradient is clipped first */
        return false;
    const ir_node *n = &g->nodes[s->grad], *p = &g->nodes[s->param];
    if (n->op != IR_OP_matmul || n->dead || n->dtype != AXRT_F32 || p->dtype != AXRT_F32 || n->nsrc != 2 ||
        n->rank != 2 || ir_numel(n) != ir_numel(p))
        return false;
    for (int i = 0; i < 2; i++)
        if (g->nodes[n->src[i]].rank != 2 || in_state(P, storage_owner(g, n->src[i])))
            return false;
    return true;
}

/* --clip-grad-norm over the gradients updated after node id (the step's
 * last, where the driver placed every one). */
static void plan_clip_norm(step_planner *P, ir_step_list *l, int id)
{
    int *nodes = ax_alloc(arena_of(P), sizeof *nodes * ((size_t)P->t->ntensors + 1));
    bool *scaled = ax_alloc(arena_of(P), sizeof *scaled * ((size_t)P->t->ntensors + 1));
    int count = 0;
    for (int k = 0; k < P->t->ntensors; k++) {
        const pass_train_tensor *s = &P->t->tensors[k];
        if (s->grad == IR_NONE || s->after != id)
            continue;
        scaled[count] = true;   /* a gradient sharing another's storage is scaled once */
        for (int j = 0; j < count; j++)
            scaled[count] = scaled[count] && !same_storage(P->g, nodes[j], s->grad);
        nodes[count++] = s->grad;
    }
    if (!count)
        return;
    ir_step_op *op = add_op(P, l, IR_STEP_CLIP_NORM);
    op->nodes = nodes;
    op->scaled = scaled;
    op->count = count;
    op->real = P->t->clip_norm;
}

/* A Float16 step's loss scaling before the updates at node id: every half
 * gradient updated there checked finite. */
static void plan_loss_scaling(step_planner *P, ir_step_list *l, int id)
{
    ir_call *calls = ax_alloc(arena_of(P), sizeof *calls * ((size_t)P->t->ntensors + 1));
    int count = 0;
    for (int k = 0; k < P->t->ntensors; k++) {
        const pass_train_tensor *s = &P->t->tensors[k];
        if (s->grad == IR_NONE || s->master < 0 || s->after != id)
            continue;
        ir_call *c = &calls[count++];
        c->kernel = "axrt_half_all_finite";
        put_typed(c, IR_ARG_DTYPE, AXRT_F16, 0);
        put_node(c, IR_ARG_VALUE, s->grad);
        put_number(c, IR_ARG_INT64, ir_numel(&P->g->nodes[s->param]));
    }
    if (!count)
        return;
    ir_step_op *op = add_op(P, l, IR_STEP_LOSS_SCALE);
    op->calls = calls;
    op->count = count;
}

/* The optimizer's moments (or master) arguments of s, of dtype. */
static void put_moments(ir_call *c, const pass_train_tensor *s, axrt_dtype dtype)
{
    put_typed(c, IR_ARG_STATE, dtype, s->moments[0]);
    put_typed(c, IR_ARG_STATE, dtype, s->moments[1]);
}

/* s's update (or running statistic's copy) after its node. */
static void plan_update(step_planner *P, ir_step_list *l, const pass_train_tensor *s)
{
    const ir_node *p = &P->g->nodes[s->param];
    if (s->value != IR_NONE) {
        ir_call *c = add_call(P, l, "memcpy", "running statistic", s->param, "");
        put_typed(c, IR_ARG_STATE, p->dtype, s->offset);
        put_node(c, IR_ARG_VALUE, s->value);
        put_number(c, IR_ARG_SIZE, (int64_t)ir_nbytes(p));
        return;
    }
    ir_call *c;
    if (update_fuses(P, s)) {
        const ir_node *n = &P->g->nodes[s->grad];
        c = add_call(P, l, "axrt_matmul_optim_f32", "update", s->param,
                     ax_sprintf(arena_of(P), " with its gradient, %%%d matmul", s->grad));
        put_number(c, IR_ARG_OPTIM, 0);
        for (int i = 0; i < 2; i++)
            put_node(c, IR_ARG_VALUE, n->src[i]);
        put_node(c, IR_ARG_VALUE, s->grad);
        put_number(c, IR_ARG_INT64, n->shape[0]);
        put_number(c, IR_ARG_INT64, P->g->nodes[n->src[0]].shape[1]);
        put_number(c, IR_ARG_INT64, n->shape[1]);
        put_typed(c, IR_ARG_STATE, p->dtype, s->offset);
        put_moments(c, s, p->dtype);
        put_local(c, "step");
        P->plan->fused[s->grad] = true;
        return;
    }
    if (s->master >= 0) {
        c = add_call(P, l, "axrt_amp_step", "update", s->param, " (Float32 master)");
        put_number(c, IR_ARG_OPTIM, 0);
        put_typed(c, IR_ARG_DTYPE, p->dtype, 0);
        put_typed(c, IR_ARG_STATE, p->dtype, s->offset);
        put_typed(c, IR_ARG_STATE, AXRT_F32, s->master);
        put_node(c, IR_ARG_VALUE, s->grad);
        put_moments(c, s, AXRT_F32);
        put_number(c, IR_ARG_INT64, ir_numel(p));
        put_local(c, "opt_step");
        put_local(c, "inv_scale");
        return;
    }
    if (P->t->clip_value > 0) {
        ir_step_op *op = add_op(P, l, IR_STEP_CLIP_VALUE);
        op->node = s->grad;
        op->real = P->t->clip_value;
    }
    c = add_call(P, l, p->dtype == AXRT_F64 ? "axrt_optim_step_f64" : "axrt_optim_step_f32", "update", s->param, "");
    put_number(c, IR_ARG_OPTIM, 0);
    put_typed(c, IR_ARG_STATE, p->dtype, s->offset);
    put_node(c, IR_ARG_VALUE, s->grad);
    put_moments(c, s, p->dtype);
    put_number(c, IR_ARG_INT64, ir_numel(p));
    put_local(c, "step");
}

/* After node id of the whole step: the clipping, the loss scaling, then
 * the updates the driver placed there. */
static void plan_updates(step_planner *P, int id)
{
    ir_step_list *l = &P->plan->after[id];
    if (P->t->clip_norm > 0)
        plan_clip_norm(P, l, id);
    if (P->t->loss_seed != IR_NONE)
        plan_loss_scaling(P, l, id);
    for (int k = 0; k < P->t->ntensors; k++)
        if (P->t->tensors[k].after == id)
            plan_update(P, l, &P->t->tensors[k]);
}

/* ---- the split step (--grad-exchange; docs/distributed.md) ---------------------- */

/* Each gradient's place in the caller's gradient buffer: packed in the
 * order the step completes them (its `after` node, then tensor order), so
 * that a prefix of the buffer is complete at every hand-off and a caller can
 * exchange it bucket by bucket while the backward pass goes on. */
static void layout_gradients(step_planner *P)
{
    const int n = P->t->ntensors;
    ir_step_plan *plan = P->plan;
    plan->grad_offset = ax_alloc(arena_of(P), sizeof *plan->grad_offset * ((size_t)n + 1));
    for (int k = 0; k < n; k++)
        plan->grad_offset[k] = -1;
    for (int id = 0; id < P->g->nnodes; id++)
        for (int k = 0; k < n; k++) {
            const pass_train_tensor *s = &P->t->tensors[k];
            if (s->after != id || s->grad == IR_NONE || s->value != IR_NONE)
                continue;
            plan->grad_offset[k] = (int64_t)plan->grad_bytes;
            plan->grad_bytes += ir_nbytes(&P->g->nodes[s->param]);
        }
}

/* After node id of the split step: each gradient completed there copied to
 * its place in the caller's buffer and announced; a running statistic
 * written back as in the whole step. */
static void plan_handoffs(step_planner *P, int id)
{
    ir_step_list *l = &P->plan->after_split[id];
    for (int k = 0; k < P->t->ntensors; k++) {
        const pass_train_tensor *s = &P->t->tensors[k];
        const int64_t at = P->plan->grad_offset[k], bytes = (int64_t)ir_nbytes(&P->g->nodes[s->param]);
        if (s->after != id)
            continue;
        if (s->value != IR_NONE) {
            plan_update(P, l, s);
            continue;
        }
        if (at < 0)
            continue;
        ir_call *c = add_call(P, l, "memcpy", "gradient of", s->param, "");
        put_number(c, IR_ARG_GRADS_OUT, at);
        put_node(c, IR_ARG_VALUE, s->grad);
        put_number(c, IR_ARG_SIZE, bytes);
        ir_step_op *op = add_op(P, l, IR_STEP_READY);
        op->offset = at;
        op->bytes = bytes;
    }
}

/* The split step's apply: every update from the caller's gradients, with
 * the compiled hyperparameters. */
static void plan_apply(step_planner *P)
{
    for (int k = 0; k < P->t->ntensors; k++) {
        const pass_train_tensor *s = &P->t->tensors[k];
        if (P->plan->grad_offset[k] < 0)
            continue;
        const ir_node *p = &P->g->nodes[s->param];
        ir_call *c = add_call(P, &P->plan->apply, p->dtype == AXRT_F64 ? "axrt_optim_step_f64" : "axrt_optim_step_f32",
                              NULL, s->param, "");
        put_number(c, IR_ARG_OPTIM, 1);
        put_typed(c, IR_ARG_STATE, p->dtype, s->offset);
        put_typed(c, IR_ARG_GRADS_IN, p->dtype, P->plan->grad_offset[k]);
        put_moments(c, s, p->dtype);
        put_number(c, IR_ARG_INT64, ir_numel(p));
        put_local(c, "step");
    }
}

/* ---- state_init ------------------------------------------------------------------ */

/* Each parameter's compiled values into the state, and a half one's
 * Float32 master from them. */
static void plan_init(step_planner *P)
{
    for (int k = 0; k < P->t->ntensors; k++) {
        const pass_train_tensor *s = &P->t->tensors[k];
        const ir_node *p = &P->g->nodes[s->param];
        ir_call *c = add_call(P, &P->plan->init, "memcpy", NULL, s->param, "");
        put_number(c, IR_ARG_STATE_BYTES, s->offset);
        put_node(c, IR_ARG_EMBEDDED, s->param);
        put_number(c, IR_ARG_SIZE, (int64_t)ir_nbytes(p));
        if (s->master < 0)
            continue;
        c = add_call(P, &P->plan->init, "axrt_cast_f32", NULL, s->param, "");
        P->plan->init.ops[P->plan->init.nops - 1].note = "Float32 master";
        put_node(c, IR_ARG_EMBEDDED, s->param);
        put_typed(c, IR_ARG_DTYPE, p->dtype, 0);
        put_typed(c, IR_ARG_STATE, AXRT_F32, s->master);
        put_number(c, IR_ARG_INT64, ir_numel(p));
    }
}

ir_step_plan *cg_plan_step(ir_graph *g, const pass_train_step *t)
{
    step_planner P = {g, t, {0}, ax_alloc(g->ctx->arena, sizeof *P.plan)};
    memset(P.plan, 0, sizeof *P.plan);
    const size_t nodes = (size_t)g->nnodes + 1;
    P.plan->after = ax_alloc(g->ctx->arena, sizeof *P.plan->after * nodes);
    P.plan->fused = ax_alloc(g->ctx->arena, sizeof *P.plan->fused * nodes);
    memset(P.plan->after, 0, sizeof *P.plan->after * nodes);
    memset(P.plan->fused, 0, sizeof *P.plan->fused * nodes);
    ir_use_compute(g, &P.use);
    for (int id = 0; id < g->nnodes; id++)
        plan_updates(&P, id);
    ir_use_free(&P.use);
    layout_gradients(&P);
    if (t->grad_exchange) {
        P.plan->after_split = ax_alloc(g->ctx->arena, sizeof *P.plan->after_split * nodes);
        memset(P.plan->after_split, 0, sizeof *P.plan->after_split * nodes);
        for (int id = 0; id < g->nnodes; id++)
            plan_handoffs(&P, id);
        plan_apply(&P);
    }
    plan_init(&P);
    return P.plan;
}

int64_t *cg_train_state_offsets(const ir_graph *g, const pass_train_step *t, bool forward)
{
    int64_t *offsets = ax_alloc(g->ctx->arena, sizeof *offsets * ((size_t)g->nnodes + 1));
    for (int id = 0; id < g->nnodes; id++)
        offsets[id] = -1;
    for (int k = 0; k < t->ntensors; k++) {
        const int id = forward ? t->tensors[k].fwd_param : t->tensors[k].param;
        if (id != IR_NONE)
            offsets[id] = t->tensors[k].offset;
    }
    if (!forward && t->dropout_counter != IR_NONE)
        offsets[t->dropout_counter] = CG_TRAIN_HEADER_SEED * (int64_t)sizeof(int64_t);
    if (!forward && t->loss_seed != IR_NONE)
        offsets[t->loss_seed] = CG_TRAIN_HEADER_SCALE * (int64_t)sizeof(int64_t);
    return offsets;
}

/* Each node's plan in g, whose parameters are read from the state. */
static void plan_on_state(ir_graph *g, const pass_train_step *t, bool forward, bool blas)
{
    const cg_plan_context ctx = {blas, forward ? t->fwd_pack_offset : t->step_pack_offset,
                                 cg_train_state_offsets(g, t, forward), false};
    for (int id = 0; id < g->nnodes; id++)
        g->nodes[id].plan = cg_plan_node(g, id, &ctx);
}

const ir_step_plan *cg_plan_train(ir_graph *step, const pass_train_step *t, bool blas)
{
    plan_on_state(step, t, false, blas);
    plan_on_state(t->forward, t, true, blas);
    return cg_plan_step(step, t);
}
