/* train_step.c — `axc --train` (interface.md §8): the graphs of the
 * generated C training step.
 *
 * The model (built unfused, as for `axc train`) is copied for inference
 * (the forward on the state), then becomes the training graph train.c
 * builds (training mode, loss, backward), whose one output is now the loss:
 * the gradients and the running statistics' new values are consumed inside
 * the step.  Every user parameter lives in the caller's state (64-byte
 * header with the step count, then each tensor and its optimizer moments,
 * 64-byte aligned).  Each update runs after the later of the node that
 * completes its gradient and the last node reading the parameter (through
 * reshapes, which share its storage), so gradients do not all stay live to
 * the end; the gradient's live_until keeps its buffer that long.  Dropout
 * draws its masks from the header's seed and step in progress (what `axc
 * train` gives its counter), so both train alike; the inference copy has no
 * counter, and its Dropout is the identity.  Both
 * graphs then get the shared memory plan (forward and backward planned
 * together), checked against --ram. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg.h"
#include "driver.h"

#define STATE_ALIGN 64

static size_t align_up(size_t n) { return (n + STATE_ALIGN - 1) / STATE_ALIGN * STATE_ALIGN; }

/* A copy of g with its own nodes array (the rest, parameter data included,
 * shared through the context arena). */
static ir_graph *copy_graph(const ir_graph *g)
{
    ir_graph *c = ax_alloc(g->ctx->arena, sizeof *c);
    *c = *g;
    c->nodes = malloc(sizeof *c->nodes * ((size_t)g->cap + 1));
    if (!c->nodes) ax_out_of_memory(0);
    memcpy(c->nodes, g->nodes, sizeof *c->nodes * (size_t)g->nnodes);
    c->inputs = ax_alloc(g->ctx->arena, sizeof *c->inputs * ((size_t)g->ninputs + 1));
    memcpy(c->inputs, g->inputs, sizeof *c->inputs * (size_t)g->ninputs);
    c->outputs = ax_alloc(g->ctx->arena, sizeof *c->outputs * ((size_t)g->noutputs + 1));
    c->output_names = ax_alloc(g->ctx->arena, sizeof *c->output_names * ((size_t)g->noutputs + 1));
    memcpy(c->outputs, g->outputs, sizeof *c->outputs * (size_t)g->noutputs);
    memcpy(c->output_names, g->output_names, sizeof *c->output_names * (size_t)g->noutputs);
    c->inputs_cap = g->ninputs, c->outputs_cap = g->noutputs;
    return c;
}

/* The user's parameters in node order: the state's tensors. */
static int state_params(const ir_graph *g, int *ids)
{
    int n = 0;
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *p = &g->nodes[id];
        if (p->op == IR_OP_param && !p->dead && !p->derived && ir_dtype_is_float(p->dtype)) ids[n++] = id;
    }
    return n;
}

static int find_param(const ir_graph *g, const char *name)
{
    for (int id = 0; id < g->nnodes; id++)
        if (g->nodes[id].op == IR_OP_param && !g->nodes[id].derived && !strcmp(g->nodes[id].name, name)) return id;
    return IR_NONE;
}

/* Per node: the last node reading it, a reshape's reads counted as its
 * operand's (it shares the operand's storage); IR_NONE when none. */
static int *last_reads(const ir_graph *g)
{
    int *root = malloc(sizeof *root * ((size_t)g->nnodes + 1)), *last = malloc(sizeof *last * ((size_t)g->nnodes + 1));
    if (!root || !last) ax_out_of_memory(0);
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        last[id] = IR_NONE;
        root[id] = n->op == IR_OP_reshape && !n->dead ? root[n->src[0]] : id;
        for (int k = 0; k < n->nsrc && !n->dead; k++)
            if (n->src[k] != IR_NONE) last[root[n->src[k]]] = id;
    }
    free(root);
    return last;
}

/* Moments per optimizer: SGD with momentum and Lion one, Adam(W) two. */
static int moment_count(const axrt_optim *h)
{
    if (h->kind == AXRT_OPT_SGD) return h->momentum != 0;
    return h->kind == AXRT_OPT_LION ? 1 : 2;
}

/* The state's tensors, their offsets and where their updates run. */
static void lay_out_state(const axc_trainer *t, const int *stat_value, ir_graph *fwd, cg_train *train)
{
    ir_graph *g = t->g;
    int *ids = malloc(sizeof *ids * ((size_t)g->nnodes + 1));
    int *last = last_reads(g);
    if (!ids) ax_out_of_memory(0);
    const int n = state_params(g, ids), moments = moment_count(&train->optim);
    cg_train_tensor *ts = ax_alloc(g->ctx->arena, sizeof *ts * ((size_t)n + 1));
    size_t at = STATE_ALIGN;   /* the header: step count, Dropout's counter */
    for (int k = 0; k < n; k++) {
        cg_train_tensor *s = &ts[k];
        const ir_node *p = &g->nodes[ids[k]];
        *s = (cg_train_tensor){ids[k], IR_NONE, IR_NONE, IR_NONE, (int64_t)at, {-1, -1},
                               find_param(fwd, p->name)};
        at += align_up(ir_nbytes(p));
        for (int i = 0; i < t->nparams; i++)
            if (t->params[i] == ids[k]) s->grad = t->grads[i];
        for (int i = 0; i < t->nstats; i++)
            if (t->stat_param[i] == ids[k]) s->value = stat_value[i];
        const int source = s->grad != IR_NONE ? s->grad : s->value;
        if (source == IR_NONE) continue;
        for (int m = 0; m < moments && s->grad != IR_NONE; m++) {
            s->moments[m] = (int64_t)at;
            at += align_up(ir_nbytes(p));
        }
        s->after = last[ids[k]] > source ? last[ids[k]] : source;
        if (s->after > source) g->nodes[source].live_until = s->after;
    }
    train->tensors = ts;
    train->ntensors = n;
    train->state_bytes = at;
    free(ids);
    free(last);
}

/* The Dropout counter pass_train_mode made (its data, seed and step, comes
 * from the state's header in the generated step), or IR_NONE. */
static int dropout_counter(const ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++)
        if (g->nodes[id].op == IR_OP_param && g->nodes[id].name == pass_dropout_counter_name) return id;
    return IR_NONE;
}

static const char *summary(ax_arena *a, const axc_opts *o, const axrt_optim *h)
{
    const char *opt = axc_optimizer_names[o->optimizer];
    if (h->kind == AXRT_OPT_SGD)
        return ax_sprintf(a, "loss %s, optimizer %s (lr %g, momentum %g%s, weight decay %g)", pass_loss_names[o->loss],
                          opt, h->lr, h->momentum, h->nesterov ? ", Nesterov" : "", h->weight_decay);
    return ax_sprintf(a, "loss %s, optimizer %s (lr %g, betas %g %g, weight decay %g%s%.3g)", pass_loss_names[o->loss],
                      opt, h->lr, h->beta1, h->beta2, h->weight_decay, h->kind == AXRT_OPT_LION ? "" : ", eps ",
                      h->kind == AXRT_OPT_LION ? 0.0 : h->eps);
}

/* Room at the end of g's arena for the largest Float32 dense weight: the
 * C back end packs each dense weight there before the packed GEMM (the
 * state's weights change every step, so they cannot be packed at compile
 * time).  Returns its offset, or -1 when g has no such dense. */
static int64_t add_pack_room(ir_graph *g)
{
    size_t most = 0;
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (!n->dead && n->op == IR_OP_dense && n->dtype == AXRT_F32 && g->nodes[n->src[1]].op == IR_OP_param &&
            ir_nbytes(&g->nodes[n->src[1]]) > most)
            most = ir_nbytes(&g->nodes[n->src[1]]);
    }
    if (!most) return -1;
    const int64_t at = (int64_t)g->arena_bytes;
    g->arena_bytes += align_up(most);
    return at;
}

/* Both graphs planned with sharing (forward and backward in one arena),
 * verified, within --ram; with --blas=openblas the dense weights go to
 * cblas_sgemm as they lie in the state (no room to pack them). */
static int plan(const axc_opts *o, ir_graph *g, int64_t *pack_offset)
{
    pass_memplan_with(g, true);
    *pack_offset = o->blas ? -1 : add_pack_room(g);
    if (ir_verify(g)) return AXC_EINPUT;
    if (o->ram_budget && pass_memplan_check_budget(g, o->ram_budget)) return AXC_EINPUT;
    return AXC_OK;
}

int axc_train_step_graphs(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int n, cg_train *train)
{
    if (n != 1) {
        axc_fail("'axc %s' trains one model; %s has %d (choose one with --model)", "--train", o->input, n);
        return AXC_EUSAGE;
    }
    ir_graph *g = models[0];
    if (g->target->id != IR_TARGET_c) {
        axc_fail("--train writes C (the c target), not %s", ir_targets[g->target->id].name);
        return AXC_EUSAGE;
    }
    if (g->dtype != AXRT_F32 && g->dtype != AXRT_F64) {
        ax_error(g->ctx, g->loc, "the training step computes in Float32 or Float64, not %s (model '%s')",
                 ir_dtype_name(g->dtype), g->name);
        return AXC_EINPUT;
    }
    ir_graph *fwd = copy_graph(g);
    axc_trainer t = {0};
    t.g = g;
    int rc = axc_build_training_graph(o, &t);
    if (!rc) {
        int *stat_value = malloc(sizeof *stat_value * ((size_t)t.nstats + 1));
        if (!stat_value) ax_out_of_memory(0);
        for (int k = 0; k < t.nstats; k++) stat_value[k] = g->outputs[1 + k];
        const int loss = g->outputs[t.loss];
        g->noutputs = 0;
        ir_add_output(g, loss, "loss");
        train->forward = fwd;
        train->optim = axc_optim_from(o);
        train->summary = summary(ctx->arena, o, &train->optim);
        train->dropout_counter = dropout_counter(g);
        train->seed = o->seed;
        lay_out_state(&t, stat_value, fwd, train);
        free(stat_value);
        rc = plan(o, g, &train->step_pack_offset);
        if (!rc) rc = plan(o, fwd, &train->fwd_pack_offset);
    }
    axc_free_trainer(&t);
    if (rc) { ir_graph_free_nodes(fwd); train->forward = NULL; }
    return rc;
}
