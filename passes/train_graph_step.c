/* train_graph_step.c — the graphs of the generated C training step (`axc
 * --train`, and `axc train`'s compiled loop; docs/training.md).
 *
 * The model (built unfused, as for `axc train`) is copied for inference
 * (the forward on the state), then becomes the training graph train_graph.c
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
 * together), checked against --ram.  A Float16 or BFloat16 parameter is
 * followed in the state by its Float32 master copy, and its moments are
 * Float32 (mixed precision); a Float16 step's updates all run after its last
 * node, once every gradient is known to be finite (loss scaling). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_graph.h"

#define STATE_ALIGN 64

static size_t align_up(size_t n) { return (n + STATE_ALIGN - 1) / STATE_ALIGN * STATE_ALIGN; }

static bool is_half(axrt_dtype d) { return d == AXRT_F16 || d == AXRT_BF16; }

/* A copy of g with its own nodes array (the rest, parameter data included,
 * shared through the context arena). */
static ir_graph *copy_graph(const ir_graph *g)
{
    ir_graph *c = ax_alloc(g->ctx->arena, sizeof *c);
    *c = *g;
    c->nodes = malloc(sizeof *c->nodes * ((size_t)g->cap + 1));
    if (!c->nodes) ax_out_of_memory(0);
    memcpy(c->nodes, g->nodes, sizeof *c->nodes * (size_t)g->nnodes);
    for (int id = 0; id < c->nnodes; id++)
        ir_own_operands(c, &c->nodes[id]);   /* passes on the copy renumber operands */
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

/* Where each update runs: after the later of the node completing its
 * source (gradient or new running statistic) and the last node reading the
 * parameter; the source's live_until keeps its buffer that long.  Under
 * --clip-grad-norm every gradient update waits for the step's last node
 * (the norm is over all gradients).  Redone after rematerialisation, whose
 * copies may read a parameter later. */
static void place_updates(ir_graph *g, pass_train_tensor *ts, int n, bool at_end)
{
    int *last = last_reads(g), end = 0;
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead) end = id;
    for (int k = 0; k < n; k++) {
        pass_train_tensor *s = &ts[k];
        const int source = s->grad != IR_NONE ? s->grad : s->value;
        if (source == IR_NONE) continue;
        g->nodes[source].live_until = 0;
        s->after = last[s->param] > source ? last[s->param] : source;
        if (at_end && s->grad != IR_NONE) s->after = end;
        if (s->after > source) g->nodes[source].live_until = s->after;
    }
    free(last);
}

/* The state's tensors, their offsets and where their updates run (fwd: the
 * inference graph, for each tensor's node there; may be NULL). */
static void lay_out_state(const pass_trainer *t, const int *stat_value, ir_graph *fwd, pass_train_step *train)
{
    ir_graph *g = t->g;
    int *ids = malloc(sizeof *ids * ((size_t)g->nnodes + 1));
    if (!ids) ax_out_of_memory(0);
    const int n = state_params(g, ids), moments = moment_count(&train->optim);
    pass_train_tensor *ts = ax_alloc(g->ctx->arena, sizeof *ts * ((size_t)n + 1));
    size_t at = STATE_ALIGN;   /* the header: step count, Dropout's counter */
    for (int k = 0; k < n; k++) {
        pass_train_tensor *s = &ts[k];
        const ir_node *p = &g->nodes[ids[k]];
        *s = (pass_train_tensor){ids[k], IR_NONE, IR_NONE, IR_NONE, (int64_t)at, {-1, -1},
                               fwd ? find_param(fwd, p->name) : IR_NONE, -1};
        at += align_up(ir_nbytes(p));
        for (int i = 0; i < t->nparams; i++)
            if (t->params[i] == ids[k]) s->grad = t->grads[i];
        for (int i = 0; i < t->nstats; i++)
            if (t->stat_param[i] == ids[k]) s->value = stat_value[i];
        const bool mixed = is_half(p->dtype) && s->grad != IR_NONE;   /* Float32 master and moments */
        const size_t bytes = mixed ? (size_t)ir_numel(p) * sizeof(float) : ir_nbytes(p);
        if (mixed) {
            s->master = (int64_t)at;
            at += align_up(bytes);
        }
        for (int m = 0; m < moments && s->grad != IR_NONE; m++) {
            s->moments[m] = (int64_t)at;
            at += align_up(bytes);
        }
    }
    place_updates(g, ts, n, train->clip_norm > 0 || train->loss_seed != IR_NONE);
    train->tensors = ts;
    train->ntensors = n;
    train->state_bytes = at;
    free(ids);
}

/* The Dropout counter pass_train_mode made (its data, seed and step, comes
 * from the state's header in the generated step), or IR_NONE. */
static int dropout_counter(const ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++)
        if (g->nodes[id].op == IR_OP_param && g->nodes[id].name == pass_dropout_counter_name) return id;
    return IR_NONE;
}

/* The parameter pass_grad seeded the backward with (the loss scale of a
 * Float16 model's step), or IR_NONE. */
static int loss_seed(const ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++)
        if (g->nodes[id].op == IR_OP_param && g->nodes[id].name == pass_loss_seed_name) return id;
    return IR_NONE;
}

static const char *summary(ax_arena *a, const pass_train_opts *o, const axrt_optim *h)
{
    const char *opt = o->optimizer_name;
    if (h->kind == AXRT_OPT_SGD)
        return ax_sprintf(a, "loss %s, optimizer %s (lr %g, momentum %g%s, weight decay %g)", pass_loss_names[o->loss],
                          opt, h->lr, h->momentum, h->nesterov ? ", Nesterov" : "", h->weight_decay);
    return ax_sprintf(a, "loss %s, optimizer %s (lr %g, betas %g %g, weight decay %g%s%.3g)", pass_loss_names[o->loss],
                      opt, h->lr, h->beta1, h->beta2, h->weight_decay, h->kind == AXRT_OPT_LION ? "" : ", eps ",
                      h->kind == AXRT_OPT_LION ? 0.0 : h->eps);
}

/* Room at the end of g's arena for the largest Float32 dense or (ungrouped)
 * conv weight: the C back end packs each such weight there before the
 * packed GEMM (the state's weights change every step, so they cannot be
 * packed at compile time).  0 when g has no such layer. */
static size_t pack_room(const ir_graph *g)
{
    size_t most = 0;
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        const bool packs = n->op == IR_OP_dense || (n->op == IR_OP_conv && n->attrs.groups == 1);
        if (!n->dead && packs && n->dtype == AXRT_F32 && g->nodes[n->src[1]].op == IR_OP_param &&
            ir_nbytes(&g->nodes[n->src[1]]) > most)
            most = ir_nbytes(&g->nodes[n->src[1]]);
    }
    return most ? align_up(most) : 0;
}

/* Appends the pack room to g's arena; returns its offset, or -1 when none. */
static int64_t add_pack_room(ir_graph *g)
{
    const size_t room = pack_room(g);
    if (!room) return -1;
    const int64_t at = (int64_t)g->arena_bytes;
    g->arena_bytes += room;
    return at;
}

/* --ram over the step g: recompute values (pass_remat's choice) until
 * the arena is at most budget (pack room excluded) or nothing more helps;
 * the state's tensors are renumbered and their updates placed again.  The
 * same copies go into mirror (axc train's graph: g's nodes with other
 * outputs; may be NULL), whose new ids go to mirror_ids (room for its
 * nnodes).  Fills train's remat figures. */
static void remat_step(ir_graph *g, size_t budget, pass_train_step *train, ir_graph *mirror, int *mirror_ids)
{
    pass_remat_set s = pass_remat_candidates(g);
    pass_remat_choose(g, &s, budget);
    train->recomputed = pass_remat_copies(g, &s, &train->extra_flops);
    if (train->recomputed) {
        if (mirror) pass_remat_apply_mapped(mirror, &s, mirror_ids);
        int *new_id = malloc(sizeof *new_id * ((size_t)g->nnodes + 1));
        if (!new_id) ax_out_of_memory(0);
        pass_remat_apply_mapped(g, &s, new_id);
        pass_train_tensor *ts = (pass_train_tensor *)train->tensors;
        for (int k = 0; k < train->ntensors; k++) {
            ts[k].param = new_id[ts[k].param];
            if (ts[k].grad != IR_NONE) ts[k].grad = new_id[ts[k].grad];
            if (ts[k].value != IR_NONE) ts[k].value = new_id[ts[k].value];
        }
        if (train->dropout_counter != IR_NONE) train->dropout_counter = new_id[train->dropout_counter];
        if (train->loss_seed != IR_NONE) train->loss_seed = new_id[train->loss_seed];
        free(new_id);
        place_updates(g, ts, train->ntensors, train->clip_norm > 0 || train->loss_seed != IR_NONE);
        pass_memplan_with(g, true);
    }
    pass_remat_set_free(&s);
}

/* --mem-report's baseline: Chen et al.'s sqrt(n) checkpointing over the
 * same candidates (every ceil(sqrt n)-th kept), its arena and extra FLOPs. */
static void sqrt_n_point(const ir_graph *g, size_t room, pass_train_step *train)
{
    pass_remat_set s = pass_remat_candidates(g);
    pass_remat_sqrt_n(&s);
    train->sqrt_n_arena = pass_remat_eval(g, &s, NULL) + room;
    train->sqrt_n_flops = pass_remat_extra_flops(g, &s);
    pass_remat_set_free(&s);
}

/* The step planned with sharing (forward and backward in one arena), fitted
 * to --ram by rematerialisation (remat_step), verified, within --ram:
 * otherwise an error naming the smallest arena reached and its peak. */
static int plan_step(const pass_train_opts *o, ir_graph *g, pass_train_step *train, ir_graph *mirror, int *mirror_ids)
{
    pass_memplan_with(g, true);
    const size_t room = o->blas ? 0 : pack_room(g);
    train->peak_without_remat = g->arena_bytes + room;
    if (o->mem_report) sqrt_n_point(g, room, train);
    if (o->ram_budget && train->peak_without_remat > o->ram_budget)
        remat_step(g, o->ram_budget > room ? o->ram_budget - room : 0, train, mirror, mirror_ids);
    train->step_pack_offset = o->blas ? -1 : add_pack_room(g);
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead && ir_ops[g->nodes[id].op].kind != IR_SOURCE)
            train->flops += ir_node_flops(g, &g->nodes[id]);
    if (ir_verify(g)) return 1;
    if (!o->ram_budget || !pass_memplan_check_budget(g, o->ram_budget)) return 0;
    pass_remat_note_floor(g, train->recomputed, train->peak_without_remat, g->arena_bytes);
    return 1;
}

/* The inference graph planned like the step, verified, within --ram; with
 * --blas=openblas the dense weights go to cblas_sgemm as they lie in the
 * state (no room to pack them). */
static int plan(const pass_train_opts *o, ir_graph *g, int64_t *pack_offset)
{
    pass_memplan_with(g, true);
    *pack_offset = o->blas ? -1 : add_pack_room(g);
    if (ir_verify(g)) return 1;
    if (o->ram_budget && pass_memplan_check_budget(g, o->ram_budget)) return 1;
    return 0;
}

/* Turns t->g (after pass_train_graph) into the step: its one
 * output the loss, the state laid out and the updates placed (fwd: the
 * inference graph, or NULL). */
static void make_step(const pass_train_opts *o, const pass_trainer *t, ir_graph *fwd, pass_train_step *train)
{
    ir_graph *g = t->g;
    int *stat_value = malloc(sizeof *stat_value * ((size_t)t->nstats + 1));
    if (!stat_value) ax_out_of_memory(0);
    for (int k = 0; k < t->nstats; k++) stat_value[k] = g->outputs[1 + k];
    const int loss = g->outputs[t->loss];
    g->noutputs = 0;
    ir_add_output(g, loss, "loss");
    train->forward = fwd;
    train->optim = o->optim;
    train->summary = summary(g->ctx->arena, o, &train->optim);
    train->dropout_counter = dropout_counter(g);
    train->loss_seed = g->dtype == AXRT_F16 ? loss_seed(g) : IR_NONE;
    train->seed = o->seed;
    train->clip_norm = o->clip_norm;
    train->clip_value = o->clip_value;
    train->grad_exchange = o->grad_exchange;
    lay_out_state(t, stat_value, fwd, train);
    free(stat_value);
}

int pass_train_step_graphs(const pass_train_opts *o, ir_graph *g, pass_train_step *train)
{
    ir_graph *fwd = copy_graph(g);
    pass_trainer t = {0};
    t.g = g;
    int rc = pass_train_graph(o, &t);
    if (!rc) {
        make_step(o, &t, fwd, train);
        rc = plan_step(o, g, train, NULL, NULL);
        if (!rc) rc = plan(o, fwd, &train->fwd_pack_offset);
    }
    pass_trainer_free(&t);
    if (rc) { ir_graph_free_nodes(fwd); train->forward = NULL; }
    return rc;
}

void pass_train_print_remat(const ir_graph *step, const pass_train_step *train)
{
    printf("training peak without remat: %zu bytes\ntraining peak with remat: %zu bytes\n"
           "remat extra work: %.0f FLOPs\n", train->peak_without_remat, step->arena_bytes, train->extra_flops);
    pass_remat_print(step, train->peak_without_remat, step->arena_bytes, train->recomputed, train->flops,
                    train->extra_flops);
    const double base = train->flops - train->extra_flops;
    printf("sqrt(n) checkpointing, for comparison: arena %zu bytes, +%.0f FLOPs (+%.1f%%)\n", train->sqrt_n_arena,
           train->sqrt_n_flops, base > 0 ? 100 * train->sqrt_n_flops / base : 0);
}

int pass_train_fit_ram(const pass_train_opts *o, pass_trainer *t)
{
    ir_graph *g = t->g, *step = copy_graph(g);
    pass_trainer view = *t;
    view.g = step;
    pass_train_step train = {0};
    make_step(o, &view, NULL, &train);
    int *ids = malloc(sizeof *ids * ((size_t)g->nnodes + 1));
    if (!ids) ax_out_of_memory(0);
    for (int id = 0; id < g->nnodes; id++) ids[id] = id;
    int rc = plan_step(o, step, &train, g, ids);
    if (!rc && o->mem_report) pass_train_print_remat(step, &train);
    for (int i = 0; i < t->nparams; i++) {
        t->params[i] = ids[t->params[i]];
        if (t->grads[i] != IR_NONE) t->grads[i] = ids[t->grads[i]];
    }
    for (int k = 0; k < t->nstats; k++) t->stat_param[k] = ids[t->stat_param[k]];
    t->target = ids[t->target];
    free(ids);
    ir_graph_free_nodes(step);
    if (!rc && ir_verify(g)) rc = 1;
    return rc;
}
