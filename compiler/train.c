/* train.c — `axc train` (docs/training.md).
 *
 * Builds the model unfused (pipeline.c skips the optimising passes for
 * training), appends the loss against a new `target` input (pass_loss) and
 * the backward graph (pass_grad), and then, batch by batch in file order for
 * --epochs passes, evaluates loss and gradients on the reference interpreter
 * and applies the optimizer to the parameters' data in place, with
 * torch.optim's semantics, its settings for the step from --lr-schedule and
 * --warmup-steps (train_schedule.c), its gradients clipped first when asked
 * (--clip-grad-norm, --clip-grad-value).  Progress lines go to stdout; the trained
 * parameters (PyTorch names) go to --save-weights only when every step was
 * finite, so a run that diverges leaves the last good file untouched.
 *
 * Under --ram (or with --mem-report) the graph is planned as the generated
 * step's and rematerialised alike (pass_train_fit_ram): the interpreter
 * then evaluates the copies, so results are those without --ram.
 *
 * With --shuffle each epoch takes the batches in an order drawn from --seed
 * (batch_order); Dropout's counter holds --seed and the step (pass_train_mode).
 *
 * The training graph (passes/train_graph.c) is shared with the generated C
 * training step (axc --train, passes/train_graph_step.c), and the
 * optimizer's formulas with it through the runtime (axrt_optim_step_*).
 * What both loops share (batches, their order, progress, the process's
 * part under mpirun) is in train_loop.c, the data files' checks in
 * train_data.c.  The ops without a gradient rule are listed in
 * pass_grad.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "ir_interp.h"
#include "train_dist.h"

typedef axc_batch_file batch_file;

typedef pass_trainer trainer;

static void alloc_state(trainer *t)
{
    size_t most = 1;
    t->m = calloc((size_t)t->nparams, sizeof *t->m);
    t->v = calloc((size_t)t->nparams, sizeof *t->v);
    if (!t->m || !t->v) ax_out_of_memory(0);
    for (int i = 0; i < t->nparams; i++) {
        size_t n = (size_t)ir_numel(&t->g->nodes[t->params[i]]);
        if (n > most) most = n;
        t->m[i] = calloc(n + 1, sizeof **t->m);
        t->v[i] = calloc(n + 1, sizeof **t->v);
        if (!t->m[i] || !t->v[i]) ax_out_of_memory(0);
    }
    t->p = malloc(most * sizeof *t->p);
    t->gbuf = malloc(most * sizeof *t->gbuf);
    if (!t->p || !t->gbuf) ax_out_of_memory(0);
}

/* The first gradient output holding a NaN or an infinity, or NULL. */
static const char *first_nonfinite(const trainer *t, void *const *out)
{
    for (int i = 0; i < t->nparams; i++) {
        if (t->grad_out[i] < 0) continue;
        const ir_node *gn = &t->g->nodes[t->grads[i]];
        tf_convert(t->gbuf, AXRT_F64, out[t->grad_out[i]], gn->dtype, (size_t)ir_numel(gn));
        for (int64_t k = 0; k < ir_numel(gn); k++)
            if (!isfinite(t->gbuf[k])) return t->g->nodes[t->params[i]].name;
    }
    return NULL;
}

/* clip_grad_norm_'s factor for this step's gradients: --clip-grad-norm /
 * (total + 1e-6) where that is below 1, else 1, total being the L2 norm of
 * every gradient's L2 norm (PyTorch's order of summation). */
static double clip_norm_scale(const axc_opts *o, const trainer *t, void *const *out)
{
    if (!(o->clip_grad_norm > 0)) return 1;
    double squares = 0;
    for (int i = 0; i < t->nparams; i++) {
        if (t->grad_out[i] < 0) continue;
        const ir_node *gn = &t->g->nodes[t->grads[i]];
        size_t n = (size_t)ir_numel(gn);
        tf_convert(t->gbuf, AXRT_F64, out[t->grad_out[i]], gn->dtype, n);
        double tensor_squares = 0;
        for (size_t k = 0; k < n; k++) tensor_squares += t->gbuf[k] * t->gbuf[k];
        const double tensor_norm = sqrt(tensor_squares);
        squares += tensor_norm * tensor_norm;
    }
    const double coef = o->clip_grad_norm / (sqrt(squares) + 1e-6);
    return coef < 1 ? coef : 1;
}

/* The update of every parameter with settings h, each gradient first
 * scaled by scale (clip_grad_norm_) or clamped to +-clip_grad_value
 * (clip_grad_value_). */
static void apply_updates(const axc_opts *o, const trainer *t, const axrt_optim *h, void *const *out,
                          long step, double scale)
{
    const double clamp = o->clip_grad_value;
    for (int i = 0; i < t->nparams; i++) {
        if (t->grad_out[i] < 0) continue;
        ir_node *p = &t->g->nodes[t->params[i]];
        size_t n = (size_t)ir_numel(p);
        tf_convert(t->gbuf, AXRT_F64, out[t->grad_out[i]], p->dtype, n);
        if (scale < 1)
            for (size_t k = 0; k < n; k++) t->gbuf[k] *= scale;
        if (clamp > 0)
            for (size_t k = 0; k < n; k++) t->gbuf[k] = fmin(fmax(t->gbuf[k], -clamp), clamp);
        tf_convert(t->p, AXRT_F64, p->data, p->dtype, n);
        axrt_optim_step_f64(h, t->p, t->gbuf, t->m[i], t->v[i], n, step);
        tf_convert(p->data, p->dtype, t->p, AXRT_F64, n);
    }
}

/* The first parameter the last update made non-finite (an overflow in
 * p - lr * g, a huge --lr), or NULL: such weights are never written. */
static const char *first_nonfinite_param(const trainer *t)
{
    for (int i = 0; i < t->nparams; i++) {
        const ir_node *p = &t->g->nodes[t->params[i]];
        size_t n = (size_t)ir_numel(p);
        tf_convert(t->p, AXRT_F64, p->data, p->dtype, n);
        for (size_t k = 0; k < n; k++)
            if (!isfinite(t->p[k])) return p->name;
    }
    return NULL;
}

/* The interpreter's loop: the tensors of every step and where it is. */
typedef struct interp_run {
    const axc_opts *o;
    trainer *t;
    const axc_train_tail *tail;   /* the smaller last batch's graph (tail->samples 0: none) */
    batch_file *files;
    int64_t batches, steps;       /* whole batches; steps per epoch (the last batch too) */
    const void **in;
    void **out;
    int64_t *order;
} interp_run;

/* The graph that runs 1-based step `step` (the main one, or the smaller last
 * batch's with the main parameters copied in) with its inputs in r->in. */
static ir_graph *step_graph(const interp_run *r, long step)
{
    trainer *t = r->t;
    const int64_t k = (step - 1) % r->steps;
    if (k == 0) axc_batch_order(r->o, (step - 1) / r->steps, r->order, r->batches);
    const bool last = k == r->batches;   /* the smaller last batch, after the whole ones */
    const int64_t b = last ? r->batches : r->order[k];
    if (t->dropout_counter) t->dropout_counter[0] = (int64_t)r->o->seed, t->dropout_counter[1] = step;
    for (int i = 0; i < t->g->ninputs; i++) r->in[i] = r->files[i].data + (size_t)b * r->files[i].batch_bytes;
    if (!last) return t->g;
    axc_tail_sync(t, r->tail);
    return r->tail->t.g;
}

/* One step: forward and backward of its graph, the update of the main
 * graph's parameters from its gradients; its loss in *loss.  An exit status. */
static int interp_step(const interp_run *r, const axrt_optim *h, long step, long total, double *loss, double *lr)
{
    const axc_opts *o = r->o;
    trainer *t = r->t;
    void **out = r->out;
    ir_graph *g = step_graph(r, step);
    if (ir_interp_run(g, r->in, out)) ax_die("axc train: the interpreter failed at step %ld", step);
    tf_convert(loss, AXRT_F64, out[t->loss], g->nodes[g->outputs[t->loss]].dtype, 1);
    int rc;
    axc_dist *dist = axc_train_dist();
    if (dist && (rc = axc_dist_reduce(dist, t, out, loss, step))) return rc;   /* the mean over the ranks */
    const char *bad = first_nonfinite(t, out);
    if (!isfinite(*loss) || bad) {
        axc_fail("step %ld: the loss is %g; the first non-finite gradient is %s%s%s (the weights were not written)",
                 step, *loss, bad ? "'" : "", bad ? bad : "none", bad ? "'" : "");
        return AXC_EINPUT;
    }
    const axrt_optim now = axc_scheduled_optim(o, h, step - 1, total);
    *lr = now.lr;
    apply_updates(o, t, &now, out, step, clip_norm_scale(o, t, out));
    if ((bad = first_nonfinite_param(t))) {
        axc_fail("step %ld: the update made parameter '%s' non-finite (the loss was %g; try a smaller --lr); "
                 "the weights were not written", step, bad, *loss);
        return AXC_EINPUT;
    }
    for (int k = 0; k < t->nstats; k++) {   /* running statistics, as computed */
        ir_node *p = &t->g->nodes[t->stat_param[k]];
        memcpy(p->data, out[1 + k], ir_nbytes(p));
    }
    return AXC_OK;
}

/* The steps: batches in file (or --shuffle's) order, the smaller last batch
 * after them, --epochs times.  Each epoch's loss printed is the mean over its
 * samples (each batch's mean loss weighted by its samples). */
static int run_steps(const axc_opts *o, trainer *t, const axc_train_tail *tail, batch_file *files)
{
    ir_graph *g = t->g;
    const axrt_optim h = axc_optim_from(o);
    const int64_t batch = g->nodes[g->inputs[0]].shape[0];
    interp_run r = {o, t, tail, files, files[0].batches, axc_epoch_steps(&files[0]), NULL, NULL, NULL};
    r.in = calloc((size_t)g->ninputs, sizeof *r.in);
    r.out = calloc((size_t)g->noutputs, sizeof *r.out);
    r.order = malloc(sizeof *r.order * (size_t)(r.batches + 1));
    if (!r.in || !r.out || !r.order) ax_out_of_memory(0);
    for (int k = 0; k < g->noutputs; k++)
        if (!(r.out[k] = malloc(ir_nbytes(&g->nodes[g->outputs[k]]) + 1))) ax_out_of_memory(0);
    alloc_state(t);
    const long total = (long)(o->epochs * r.steps);
    const double samples = (double)(r.batches * batch + tail->samples);
    axc_progress pr;
    axc_progress_start(&pr, o, r.steps, (long)batch, 0);
    double epoch_loss = 0, loss = 0, lr = 0;
    int rc = AXC_OK;
    for (long step = 1; step <= total && !rc; step++) {
        if (!(rc = interp_step(&r, &h, step, total, &loss, &lr))) axc_progress_step(&pr, step, loss, lr);
        epoch_loss += loss * (double)((step - 1) % r.steps == r.batches ? tail->samples : batch);
        if (!rc && step % r.steps == 0)
            axc_progress_epoch(&pr, step / r.steps, epoch_loss / samples, NAN, NAN), epoch_loss = 0;
    }
    axc_progress_end(&pr);
    for (int k = 0; k < g->noutputs; k++) free(r.out[k]);
    free(r.out);
    free(r.order);
    free((void *)r.in);
    return rc;
}

/* The options only the compiled step's loop (train_exec.c) has, or NULL. */
static const char *interp_refusal(const axc_opts *o)
{
    return o->val_target ? "--val-target" : o->checkpoint ? "--checkpoint" : o->resume ? "--resume" : NULL;
}

int axc_train(ax_ctx *ctx, const axc_opts *o)
{
    ir_graph *models[AXC_MAX_MODELS];
    int n = 0;
    axc_output outs[2] = {{"--save-weights", o->save_weights}, {"--checkpoint", o->checkpoint}};
    int rc = axc_check_outputs(o, outs, o->checkpoint ? 2 : 1);
    if (rc) return rc;
    /* under mpirun both executors exchange the gradients (train_dist.c): the
     * compiled step at its seam, bucket by bucket; the interpreter after
     * each backward pass */
    if ((rc = axc_train_dist_open())) return rc;
    if (!o->interp && (rc = axc_train_compiled(ctx, o)) != AXC_TRAIN_FALLBACK) return axc_train_dist_close(rc);
    const char *why = interp_refusal(o);
    if (why) {
        axc_fail("%s runs on the compiled step only, not on the interpreter", why);
        return axc_train_dist_close(AXC_EUSAGE);
    }
    rc = axc_build_models(ctx, o, models, &n);
    if (!rc && n != 1) {
        axc_fail("'axc %s' trains one model; %s has %d (choose one with --model)", "train", o->input, n);
        rc = AXC_EUSAGE;
    }
    if (!rc && (models[0]->dtype == AXRT_F16 || models[0]->dtype == AXRT_BF16)) {   /* no Float32 masters here */
        ax_error(models[0]->ctx, models[0]->loc, "mixed-precision training (model '%s' has %s parameters) runs on the "
                 "compiled step only, not on the interpreter", models[0]->name, ir_dtype_name(models[0]->dtype));
        rc = AXC_EUSAGE;
    }
    trainer t = {0};
    const pass_train_opts to = axc_train_opts(o);
    batch_file *files = NULL;
    if (!rc) {
        t.g = models[0];
        rc = pass_train_graph(&to, &t) ? AXC_EINPUT : AXC_OK;
    }
    if (!rc && (o->ram_budget || o->mem_report)) rc = pass_train_fit_ram(&to, &t) ? AXC_EINPUT : AXC_OK;
    int64_t batches = 0;
    if (!rc) {
        files = calloc((size_t)t.g->ninputs, sizeof *files);
        if (!files) ax_out_of_memory(0);
        rc = axc_train_load_files(ctx, o, &t, t.g->nodes[t.g->outputs[0]].shape[1], files, &batches);
    }
    axc_train_tail tail = {.samples = rc ? 0 : files[0].tail};
    if (tail.samples) rc = axc_tail_trainer(ctx, o, &t, &tail);
    rc = axc_dist_agree(axc_train_dist(), rc);   /* a rank that could not start stops all */
    if (!rc) rc = run_steps(o, &t, &tail, files);
    if (!rc && axc_dist_rank(axc_train_dist()) == 0) rc = axc_save_weights(o, t.g);
    axc_tail_free(&tail);
    axc_train_dist_close(rc);
    for (int i = 0; files && i < t.g->ninputs; i++) free(files[i].data);
    free(files);
    pass_trainer_free(&t);
    axc_free_models(models, n);
    return rc;
}
