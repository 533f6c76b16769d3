/* train_graph.c — the training graph shared by `axc train`, `axc --train`
 * and the smaller last batch (docs/training.md): the model, built unfused,
 * in training mode (pass_train_mode) with a `target` input, the loss against
 * it (pass_loss) and the backward graph (pass_grad) appended.  The ops
 * without a gradient rule are listed in pass_grad.c. */
#include <stdlib.h>
#include <string.h>

#include "train_graph.h"

/* The trainable parameters: the user's (not derived) float ones. */
static int collect_params(pass_trainer *t)
{
    ir_graph *g = t->g;
    t->params = calloc((size_t)g->nnodes + 1, sizeof *t->params);
    if (!t->params) ax_out_of_memory(0);
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->op == IR_OP_param && !n->dead && !n->derived && ir_dtype_is_float(n->dtype))
            t->params[t->nparams++] = id;
    }
    return t->nparams;
}

/* Appends target, loss and backward; the outputs become the model's, the
 * loss, then each gradient.  0, or 1 with the problem reported. */
int pass_train_graph(const pass_train_opts *o, pass_trainer *t)
{
    ir_graph *g = t->g;
    if (g->noutputs != 1) {
        ax_error(g->ctx, g->loc, "'axc %s' needs a model with one output; '%s' has %d", o->command, g->name,
                 g->noutputs);
        return 1;
    }
    int nbn = pass_train_mode(g);
    if (nbn < 0) return 1;
    t->nstats = 2 * nbn;
    const int y = g->outputs[0];
    const bool ce = o->loss == PASS_LOSS_cross_entropy;
    if (ce && g->nodes[y].rank != 2) {
        char shape[128];
        ir_shape_str(g->nodes[y].shape, g->nodes[y].rank, shape, sizeof shape);
        ax_error(g->ctx, g->loc, "cross_entropy needs logits [batch, classes]; model '%s' returns %s", g->name,
                 shape);
        return 1;
    }
    t->stat_param = calloc((size_t)t->nstats + 1, sizeof *t->stat_param);
    if (!t->stat_param) ax_out_of_memory(0);
    for (int k = 0; k < t->nstats; k++)
        for (int id = 0; id < g->nnodes; id++)
            if (g->nodes[id].op == IR_OP_param && !g->nodes[id].derived &&
                !strcmp(g->nodes[id].name, g->output_names[1 + k]))
                t->stat_param[k] = id;
    if (!collect_params(t)) {
        ax_error(g->ctx, g->loc, "model '%s' has no trainable parameter: nothing to train", g->name);
        return 1;
    }
    t->target = ir_add(g, IR_OP_input, NULL, 0, g->loc);
    ir_node *tn = &g->nodes[t->target];
    tn->name = "target";
    const bool half = g->dtype == AXRT_F16 || g->dtype == AXRT_BF16;   /* its loss in the output's dtype */
    tn->dtype = ce ? AXRT_I64 : half ? g->nodes[y].dtype : g->dtype;
    tn->rank = ce ? 1 : g->nodes[y].rank;
    memcpy(tn->shape, g->nodes[y].shape, sizeof tn->shape);
    ir_add_input(g, t->target);
    int loss = pass_loss(g, (pass_loss_kind)o->loss, y, t->target);
    t->grads = malloc(sizeof *t->grads * (size_t)t->nparams);
    t->grad_out = malloc(sizeof *t->grad_out * (size_t)t->nparams);
    if (!t->grads || !t->grad_out) ax_out_of_memory(0);
    if (pass_grad(g, loss, t->params, t->nparams, t->grads)) return 1;
    for (int id = 0; id < g->nnodes; id++)
        if (g->nodes[id].op == IR_OP_param && g->nodes[id].name == pass_dropout_counter_name)
            t->dropout_counter = g->nodes[id].data;
    t->loss = g->noutputs;
    ir_add_output(g, loss, "loss");
    for (int i = 0; i < t->nparams; i++) {
        t->grad_out[i] = t->grads[i] == IR_NONE ? -1 : g->noutputs;
        if (t->grads[i] != IR_NONE) ir_add_output(g, t->grads[i], g->nodes[t->params[i]].name);
    }
    return ir_verify(g) ? 1 : 0;
}

void pass_trainer_free(pass_trainer *t)
{
    for (int i = 0; i < t->nparams && t->m; i++) { free(t->m[i]); free(t->v[i]); }
    free(t->m), free(t->v), free(t->p), free(t->gbuf);
    free(t->params), free(t->grads), free(t->grad_out), free(t->stat_param);
}

