/* train_tail.c — `axc train`'s smaller last batch (docs/training.md#the-training-loop).
 *
 * Without --drop-last a file of N = k*B + r samples (B the model's batch,
 * 0 < r < B) ends every epoch with one batch of its last r samples, as
 * torch.utils.data.DataLoader(drop_last=False) does: the loss is the mean
 * over those r samples and the optimizer steps as usual.  Shapes are
 * compile-time constants, so the model is built a second time with every
 * input's dim 0 set to r (axc_opts.batch_override, applied by pipeline.c
 * before pass_shape infers the rest):
 * - the interpreter (train.c) runs that training graph on the main graph's
 *   parameters (copied in before the step, axc_tail_sync) and applies its
 *   gradients to the main graph with the main optimizer state: the two
 *   graphs have the same parameters, outputs and gradients, checked here;
 * - the compiled loop (train_exec.c) generates a second training step from
 *   it, built through the same run cache, and calls it on the main step's
 *   state: its state layout (header, parameters, moments) is checked equal
 *   to the main step's, so the moments and the step count are shared.
 * A model whose body names the batch (a reshape to [B, ...]) cannot take r:
 * its shape error, or an output whose dim 0 is not r, is refused pointing
 * at --drop-last. */
#include <stdlib.h>
#include <string.h>

#include "cg.h"
#include "driver.h"
#include "onnx.h"

/* One message for every way a model cannot take its last batch. */
static int refuse(const axc_opts *o, int64_t samples, const char *why)
{
    axc_fail("the last batch of %lld samples: '%s' cannot train on it (%s); --drop-last leaves it out",
             (long long)samples, o->input, why);
    return AXC_EINPUT;
}

/* The model at batch `samples` from the same parameters (--weights or
 * --seed), no --mem-report, its warnings and notes not repeated. */
static int build_tail_models(ax_ctx *ctx, const axc_opts *o, const ir_graph *main_fwd, axc_train_tail *tail)
{
    if (onnx_is_model(o->input)) return refuse(o, tail->samples, "an ONNX model's shapes are fixed at import");
    axc_opts s = *o;
    s.batch_override = tail->samples;
    s.seed_given = true;   /* the same --seed; its note was printed once */
    s.mem_report = false;
    const bool quiet = ctx->no_warnings;
    ctx->no_warnings = true;
    int rc = axc_build_models(ctx, &s, tail->models, &tail->nmodels);
    ctx->no_warnings = quiet;
    if (rc || tail->nmodels != 1) return refuse(o, tail->samples, "its shapes do not hold at that batch");
    const ir_graph *g = tail->models[0];
    const ir_node *y = &g->nodes[g->outputs[0]], *want = &main_fwd->nodes[main_fwd->outputs[0]];
    bool same = y->rank == want->rank && y->rank > 0 &&
                y->shape[0] == tail->samples;
    for (int d = 1; same && d < y->rank; d++) same = y->shape[d] == want->shape[d];
    return same ? AXC_OK : refuse(o, tail->samples, "its output's dim 0 is not the batch");
}

/* Whether the tail's training graph has main_t's parameters, statistics,
 * outputs and gradients (the tail's are synced from, and update, main_t's). */
static bool same_training_graph(const pass_trainer *main_t, const pass_trainer *t)
{
    if (t->nparams != main_t->nparams || t->nstats != main_t->nstats || t->loss != main_t->loss ||
        t->g->noutputs != main_t->g->noutputs)
        return false;
    if (!t->dropout_counter != !main_t->dropout_counter) return false;
    for (int i = 0; i < t->nparams; i++) {
        const ir_node *a = &t->g->nodes[t->params[i]], *b = &main_t->g->nodes[main_t->params[i]];
        if (t->grad_out[i] != main_t->grad_out[i] || strcmp(a->name, b->name) || ir_nbytes(a) != ir_nbytes(b))
            return false;
    }
    for (int k = 0; k < t->nstats; k++)
        if (ir_nbytes(&t->g->nodes[t->stat_param[k]]) != ir_nbytes(&main_t->g->nodes[main_t->stat_param[k]]))
            return false;
    return true;
}

int axc_tail_trainer(ax_ctx *ctx, const axc_opts *o, const pass_trainer *main_t, axc_train_tail *tail)
{
    int rc = build_tail_models(ctx, o, main_t->g, tail);
    if (rc) return rc;
    tail->t.g = tail->models[0];
    const pass_train_opts to = axc_train_opts(o);
    if (pass_train_graph(&to, &tail->t)) return refuse(o, tail->samples, "its training graph fails");
    if (!same_training_graph(main_t, &tail->t))
        return refuse(o, tail->samples, "its training graph differs from the whole batches'");
    return AXC_OK;
}

void axc_tail_sync(const pass_trainer *main_t, const axc_train_tail *tail)
{
    const pass_trainer *t = &tail->t;
    for (int i = 0; i < t->nparams; i++) {
        ir_node *to = &t->g->nodes[t->params[i]];
        memcpy(to->data, main_t->g->nodes[main_t->params[i]].data, ir_nbytes(to));
    }
    for (int k = 0; k < t->nstats; k++) {
        ir_node *to = &t->g->nodes[t->stat_param[k]];
        memcpy(to->data, main_t->g->nodes[main_t->stat_param[k]].data, ir_nbytes(to));
    }
    if (t->dropout_counter) memcpy(t->dropout_counter, main_t->dropout_counter, 2 * sizeof *t->dropout_counter);
}

/* Whether two steps' states have one layout: header, tensors, moments. */
static bool same_state_layout(const pass_train_step *a, const pass_train_step *b)
{
    if (a->state_bytes != b->state_bytes || a->ntensors != b->ntensors) return false;
    for (int k = 0; k < a->ntensors; k++) {
        const pass_train_tensor *x = &a->tensors[k], *y = &b->tensors[k];
        if (x->offset != y->offset || x->moments[0] != y->moments[0] || x->moments[1] != y->moments[1]) return false;
    }
    return true;
}

int axc_tail_step_graphs(ax_ctx *ctx, const axc_opts *so, const pass_train_step *main_step, axc_train_tail *tail,
                         pass_train_step *train)
{
    int rc = build_tail_models(ctx, so, main_step->forward, tail);
    if (rc) return rc;
    axc_opts s = *so;
    s.mem_report = false;
    if ((rc = axc_train_step_graphs(ctx, &s, tail->models, tail->nmodels, train)))
        return refuse(so, tail->samples, "its training step fails");
    if (!same_state_layout(main_step, train))
        return refuse(so, tail->samples, "its training state differs from the whole batches' step");
    return AXC_OK;
}

void axc_tail_free(axc_train_tail *tail)
{
    pass_trainer_free(&tail->t);
    axc_free_models(tail->models, tail->nmodels);
    *tail = (axc_train_tail){0};
}

void axc_pad_to_batches(ax_ctx *ctx, tf_tensor *t, int64_t batch)
{
    const int64_t count = t->rank ? t->shape[0] : 0;
    if (count <= 0 || count % batch == 0) return;
    const size_t per = t->nbytes / (size_t)count, padded = (size_t)((count + batch - 1) / batch * batch);
    uint8_t *data = ax_alloc(ctx->arena, per * padded + 1);
    memcpy(data, t->data, t->nbytes);
    memset(data + t->nbytes, 0, per * padded - t->nbytes);
    t->data = data, t->nbytes = per * padded, t->shape[0] = (int64_t)padded;
}
