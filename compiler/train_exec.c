/* train_exec.c — `axc train` on the compiled training step (docs/training.md).
 *
 * The step `axc --train` writes (train_step.c, codegen/cg_c_train.c) is
 * generated for the model, built with $CC into a shared object through the
 * run cache (runcache.c, as `axc run` does: a cached build of the same code
 * skips the compiler), loaded with dlopen and called once per batch, the
 * learning rate (and under onecycle the momentum or beta1) of each step set
 * in the state's header through <name>_set_lr / <name>_set_momentum.  A
 * small shim appended to the generated C gives the step and the forward on
 * the state a fixed signature (inputs as an array), whatever the model's
 * inputs.
 *
 * Under mpirun (train_dist.c) the step is generated split at its seam
 * (--grad-exchange): <name>_train_grads hands each gradient to libaxrt_mpi's
 * bucketed exchange as the backward pass completes it, then the mean
 * gradient and loss over the ranks, then <name>_train_apply (docs/distributed.md).
 *
 * The loop's parts that both executors share (batch order, schedule,
 * progress lines) live in train.c; what only this executor has (per-epoch
 * validation, early stopping, checkpoints and --resume, whose state is the
 * generated step's state blob) lives here. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cg.h"
#include "cg_target.h"
#include "driver.h"
#include "train_dist.h"

/* The loaded step: entry points of the shim and the state they work on. */
typedef struct step_exec {
    axc_built built;   /* the step's library (run.c) */
    unsigned char *state;
    size_t state_bytes;
    void (*init)(void *);
    void (*set_lr)(void *, double);
    void (*set_momentum)(void *, double);
    double (*step)(void *, const void *const *);
    int (*forward)(const void *, const void *const *, void *const *);
    /* under mpirun: the step split at its seam (docs/distributed.md) and the
     * gradient buffer libaxrt_mpi exchanges bucket by bucket */
    double (*grads)(void *, const void *const *, void *, axc_dist_ready_fn, void *);
    void (*apply)(void *, const void *);
    unsigned char *grad_buf;
    size_t grad_bytes;
    axc_dist_ready_fn ready;
    void *ready_user;
} step_exec;

/* The shim: axc_exec_step(state, inputs) and axc_exec_forward(state,
 * inputs, outputs) calling the model's entry points with typed arguments. */
static void emit_shim(const ir_graph *step, const pass_train_step *train, ax_buf *c)
{
    const ir_graph *fwd = train->forward;
    ax_buf_printf(c, "\n/* ---- axc train's shim (compiler/train_exec.c) ---- */\n"
                     "double axc_exec_step(void *state, const void *const *in);\n"
                     "double axc_exec_step(void *state, const void *const *in)\n{\n    return (double)%s_train_step(state, ",
                  step->name);
    for (int i = 0; i < step->ninputs; i++)
        ax_buf_printf(c, "(const %s *)in[%d], ", ir_dtypes[step->nodes[step->inputs[i]].dtype].c_type, i);
    ax_buf_printf(c, "NULL);\n}\nint axc_exec_forward(const void *state, const void *const *in, void *const *out);\n"
                     "int axc_exec_forward(const void *state, const void *const *in, void *const *out)\n{\n"
                     "    return %s_forward_state(state, ", step->name);
    for (int i = 0; i < fwd->ninputs; i++)
        ax_buf_printf(c, "(const %s *)in[%d], ", ir_dtypes[fwd->nodes[fwd->inputs[i]].dtype].c_type, i);
    for (int i = 0; i < fwd->noutputs; i++)
        ax_buf_printf(c, "(%s *)out[%d], ", ir_dtypes[fwd->nodes[fwd->outputs[i]].dtype].c_type, i);
    ax_buf_puts(c, "NULL);\n}\n");
    if (!train->grad_exchange) return;
    ax_buf_printf(c, "double axc_exec_grads(void *state, const void *const *in, void *grads, "
                     "void (*ready)(void *, size_t, size_t), void *user);\n"
                     "double axc_exec_grads(void *state, const void *const *in, void *grads, "
                     "void (*ready)(void *, size_t, size_t), void *user)\n{\n    return (double)%s_train_grads(state, ",
                  step->name);
    for (int i = 0; i < step->ninputs; i++)
        ax_buf_printf(c, "(const %s *)in[%d], ", ir_dtypes[step->nodes[step->inputs[i]].dtype].c_type, i);
    ax_buf_puts(c, "grads, ready, user, NULL);\n}\n");
}

/* Writes model.c (the step and the shim) and model.h into x->built.dir. */
static int stage_step(ax_ctx *ctx, const axc_opts *o, ir_graph *step, const pass_train_step *train, step_exec *x)
{
    ax_buf c = {0}, h = {0};
    ir_graph *models[1] = {step};
    cg_request req = {.models = models, .nmodels = 1, .header_name = "model.h",
                      .source_name = axc_source_name(ctx->arena, o), .train = train};
    int rc = cg_target_get(IR_TARGET_c)->emit(&req, &c, &h) ? AXC_EINPUT : AXC_OK;
    if (!rc) emit_shim(step, train, &c);
    if (!rc && (ax_write_file_atomic(ax_sprintf(ctx->arena, "%s/model.c", x->built.dir), c.data, c.len) ||
                ax_write_file_atomic(ax_sprintf(ctx->arena, "%s/model.h", x->built.dir), h.data, h.len))) {
        axc_fail("cannot write into '%s': %s", x->built.dir, strerror(errno));
        rc = AXC_EUSAGE;
    }
    ax_buf_free(&c);
    ax_buf_free(&h);
    return rc;
}

static void *symbol(ax_ctx *ctx, void *dl, const char *prefix, const char *name)
{
    return dlsym(dl, prefix ? ax_sprintf(ctx->arena, "%s_%s", prefix, name) : name);
}

/* The shared object: from the run cache, else built (and then cached once
 * its entry points are found). */
static int load_step(ax_ctx *ctx, const axc_opts *o, const char *home, const char *name, step_exec *x)
{
    int rc = axc_built_load(ctx, o, home, AXC_RUN_CFLAGS, false, &x->built);
    if (rc) return rc;
    void *dl = x->built.dl;
    void *init = symbol(ctx, dl, name, "state_init"), *lr = symbol(ctx, dl, name, "set_lr");
    void *mom = symbol(ctx, dl, name, "set_momentum"), *step = symbol(ctx, dl, NULL, "axc_exec_step");
    void *fwd = symbol(ctx, dl, NULL, "axc_exec_forward");
    void *grads = symbol(ctx, dl, NULL, "axc_exec_grads"), *apply = symbol(ctx, dl, name, "train_apply");
    const bool found = init && lr && mom && step && fwd && (!o->grad_exchange || (grads && apply));
    axc_built_finish(ctx, &x->built, found);
    if (!found) { axc_fail("the generated training step lacks its entry points"); return AXC_EUSAGE; }
    memcpy(&x->init, &init, sizeof init);
    memcpy(&x->set_lr, &lr, sizeof lr);
    memcpy(&x->set_momentum, &mom, sizeof mom);
    memcpy(&x->step, &step, sizeof step);
    memcpy(&x->forward, &fwd, sizeof fwd);
    memcpy(&x->grads, &grads, sizeof grads);
    memcpy(&x->apply, &apply, sizeof apply);
    int (*set_threads)(int) = (int (*)(int))dlsym(dl, "axrt_set_threads");
    if (o->threads && set_threads) set_threads(o->threads);
    return AXC_OK;
}

static int open_step(ax_ctx *ctx, const axc_opts *o, const char *home, ir_graph *step, const pass_train_step *train,
                     step_exec *x)
{
    int rc = axc_built_open(ctx, "train", &x->built);
    if (!rc) rc = stage_step(ctx, o, step, train, x);
    if (!rc) rc = load_step(ctx, o, home, step->name, x);
    if (rc) return rc;
    x->state_bytes = train->state_bytes;
    x->state = aligned_alloc(64, (x->state_bytes + 63) / 64 * 64);
    if (!x->state) ax_out_of_memory(0);
    x->init(x->state);
    axc_dist *d = axc_train_dist();
    if (!d) return AXC_OK;
    /* the gradients in completion order, as <name>_train_grads packs them */
    for (int k = 0; k < train->ntensors; k++) {
        const pass_train_tensor *s = &train->tensors[k];
        if (s->grad != IR_NONE && s->value == IR_NONE && s->after != IR_NONE)
            x->grad_bytes += ir_nbytes(&step->nodes[s->param]);
    }
    x->grad_buf = aligned_alloc(64, (x->grad_bytes + 64) / 64 * 64);
    if (!x->grad_buf) ax_out_of_memory(0);
    return axc_dist_exchange_open(d, x->grad_buf, x->grad_bytes ? x->grad_bytes : 1, step->dtype, &x->ready,
                                  &x->ready_user);
}

static void close_step(ax_ctx *ctx, step_exec *x)
{
    axc_built_close(ctx, &x->built);
    free(x->state);
    free(x->grad_buf);
}

/* ---- the state's tensors ---------------------------------------------------- */

/* The first state tensor holding a NaN or an infinity, or NULL. */
static const char *first_nonfinite_state(const step_exec *x, const ir_graph *g, const pass_train_step *train)
{
    for (int k = 0; k < train->ntensors; k++) {
        const ir_node *p = &g->nodes[train->tensors[k].param];
        tf_tensor t = {.dtype = p->dtype, .data = x->state + train->tensors[k].offset, .nbytes = ir_nbytes(p)};
        int64_t at;
        double value;
        if (axc_first_nonfinite(&t, &at, &value)) return p->name;
    }
    return NULL;
}

/* The trained tensors back into the graph's parameters (for --save-weights). */
static void state_to_graph(const step_exec *x, ir_graph *g, const pass_train_step *train)
{
    for (int k = 0; k < train->ntensors; k++) {
        ir_node *p = &g->nodes[train->tensors[k].param];
        memcpy(p->data, x->state + train->tensors[k].offset, ir_nbytes(p));
    }
}

/* ---- checkpoints -------------------------------------------------------------- */

/* A checkpoint: this magic, the state's size, the epochs done, early
 * stopping's best validation loss and epochs without improvement, then the
 * step's whole state (parameters, moments, step count, Dropout's seed, the
 * learning rate), so a resumed run continues bit for bit. */
static const char checkpoint_magic[8] = {'A', 'X', 'C', 'K', 'P', 'T', '1', '\n'};

typedef struct loop_pos {
    long epochs_done;
    double best_val;       /* early stopping: the best validation loss so far */
    long stale;            /* epochs since it improved */
} loop_pos;

static int write_checkpoint(const axc_opts *o, const step_exec *x, const loop_pos *pos)
{
    const size_t head = sizeof checkpoint_magic + 4 * sizeof(int64_t), len = head + x->state_bytes;
    unsigned char *buf = malloc(len);
    if (!buf) ax_out_of_memory(0);
    int64_t words[4] = {(int64_t)x->state_bytes, pos->epochs_done, 0, pos->stale};
    memcpy(&words[2], &pos->best_val, sizeof(double));
    memcpy(buf, checkpoint_magic, sizeof checkpoint_magic);
    memcpy(buf + sizeof checkpoint_magic, words, sizeof words);
    memcpy(buf + head, x->state, x->state_bytes);
    int bad = ax_write_file_atomic(o->checkpoint, buf, len);
    free(buf);
    if (!bad) return AXC_OK;
    axc_fail("cannot write the checkpoint '%s': %s", o->checkpoint, strerror(errno));
    return AXC_EUSAGE;
}

static int read_checkpoint(ax_ctx *ctx, const axc_opts *o, step_exec *x, loop_pos *pos)
{
    size_t len = 0;
    const size_t head = sizeof checkpoint_magic + 4 * sizeof(int64_t);
    unsigned char *buf = (unsigned char *)ax_read_file_max(ctx->arena, o->resume, head + x->state_bytes + 1, &len);
    if (!buf && errno == EFBIG) {
        axc_fail("--resume '%s' holds a larger training state than this model and optimizer's %zu bytes", o->resume,
                 x->state_bytes);
        return AXC_EINPUT;
    }
    if (!buf) { axc_fail("--resume: cannot read '%s': %s", o->resume, strerror(errno)); return AXC_EUSAGE; }
    int64_t words[4];
    if (len >= head) memcpy(words, buf + sizeof checkpoint_magic, sizeof words);
    if (len < head || memcmp(buf, checkpoint_magic, sizeof checkpoint_magic)) {
        axc_fail("--resume '%s' is not an axc train checkpoint", o->resume);
        return AXC_EINPUT;
    }
    if (words[0] != (int64_t)x->state_bytes || len != head + x->state_bytes || words[1] < 0) {
        axc_fail("--resume '%s' holds a %lld-byte training state, this model and optimizer need %zu bytes",
                 o->resume, (long long)words[0], x->state_bytes);
        return AXC_EINPUT;
    }
    pos->epochs_done = (long)words[1];
    memcpy(&pos->best_val, &words[2], sizeof(double));
    pos->stale = (long)words[3];
    memcpy(x->state, buf + head, x->state_bytes);
    return AXC_OK;
}

/* ---- validation --------------------------------------------------------------- */

/* The loss of one sample's outputs y (n values) against its target (PyTorch's
 * formulas, in double), and whether its argmax is the class (cross_entropy). */
static double sample_loss(int loss, const double *y, int64_t n, const void *target, axrt_dtype tdtype, bool *right)
{
    double sum = 0;
    if (loss == PASS_LOSS_cross_entropy) {
        int64_t cls;
        if (tdtype == AXRT_I64) memcpy(&cls, target, sizeof cls);
        else { int32_t c32; memcpy(&c32, target, sizeof c32); cls = c32; }
        double most = y[0];
        int64_t arg = 0;
        for (int64_t k = 1; k < n; k++)
            if (y[k] > most) most = y[k], arg = k;
        for (int64_t k = 0; k < n; k++) sum += exp(y[k] - most);
        *right = arg == cls;
        return most + log(sum) - y[cls];
    }
    double t[256];
    for (int64_t at = 0; at < n; at += 256) {
        const int64_t m = n - at < 256 ? n - at : 256;
        tf_convert(t, AXRT_F64, (const unsigned char *)target + (size_t)at * ir_dtypes[tdtype].size, tdtype, (size_t)m);
        for (int64_t k = 0; k < m; k++) {
            const double z = y[at + k];
            sum += loss == PASS_LOSS_mse ? (z - t[k]) * (z - t[k]) : fmax(z, 0) - z * t[k] + log1p(exp(-fabs(z)));
        }
    }
    return sum;
}

typedef struct val_set {
    axc_batch_file *files;   /* the model inputs, then the target; the last batch padded with zeros */
    int64_t samples;         /* real samples (the padding is not counted) */
} val_set;

/* The validation loss (PyTorch's mean over the set's elements, or samples for
 * cross_entropy) and accuracy (cross_entropy, else NaN) of the state. */
static void validate(const step_exec *x, const ir_graph *fwd, int loss, const val_set *v, const ir_node *target,
                     double *mean_loss, double *accuracy)
{
    const ir_node *out = &fwd->nodes[fwd->outputs[0]];
    const int64_t batch = out->shape[0], per = ir_numel(out) / batch;
    const int64_t tper = ir_numel(target) / batch;
    const size_t tsize = ir_dtypes[target->dtype].size;
    void **outs = calloc((size_t)fwd->noutputs, sizeof *outs);
    const void **in = calloc((size_t)fwd->ninputs + 1, sizeof *in);
    double *y = malloc(sizeof *y * (size_t)ir_numel(out));
    if (!outs || !in || !y) ax_out_of_memory(0);
    for (int k = 0; k < fwd->noutputs; k++)
        if (!(outs[k] = malloc(ir_nbytes(&fwd->nodes[fwd->outputs[k]]) + 1))) ax_out_of_memory(0);
    double sum = 0;
    int64_t right = 0;
    for (int64_t b = 0; b * batch < v->samples; b++) {
        for (int i = 0; i < fwd->ninputs; i++) in[i] = v->files[i].data + (size_t)b * v->files[i].batch_bytes;
        x->forward(x->state, in, outs);
        tf_convert(y, AXRT_F64, outs[0], out->dtype, (size_t)ir_numel(out));
        const unsigned char *t = v->files[fwd->ninputs].data + (size_t)b * v->files[fwd->ninputs].batch_bytes;
        for (int64_t s = 0; s < batch && b * batch + s < v->samples; s++) {
            bool ok = false;
            sum += sample_loss(loss, y + s * per, per, t + (size_t)(s * tper) * tsize, target->dtype, &ok);
            right += ok;
        }
    }
    const bool ce = loss == PASS_LOSS_cross_entropy;
    *mean_loss = sum / (double)(ce ? v->samples : v->samples * per);
    *accuracy = ce ? (double)right / (double)v->samples : NAN;
    for (int k = 0; k < fwd->noutputs; k++) free(outs[k]);
    free(outs), free((void *)in), free(y);
}

/* A validation file: node n's batches, the last one padded with zeros (the
 * forward on the state treats each sample alone). */
static int load_val_file(ax_ctx *ctx, const ir_node *n, const char *what, const char *path, axc_batch_file *f,
                         int64_t *samples)
{
    tf_tensor t;
    int rc = axc_read_npy_file(ctx, what, path, &t);
    if (rc) return rc;
    *samples = t.rank ? t.shape[0] : 0;
    axc_pad_to_batches(ctx, &t, n->shape[0]);
    return axc_train_batches(&t, n, what, path, f);
}

static int load_val(ax_ctx *ctx, const axc_opts *o, const ir_graph *step, const ir_graph *fwd, val_set *v)
{
    v->files = calloc((size_t)step->ninputs, sizeof *v->files);
    if (!v->files) ax_out_of_memory(0);
    for (int i = 0; i < step->ninputs; i++) {
        const ir_node *n = &step->nodes[step->inputs[i]];
        const bool is_target = i == step->ninputs - 1;
        const char *path = is_target ? o->val_target : NULL;
        for (int k = 0; k < o->nval_inputs && !path; k++)
            if (!strcmp(o->val_inputs[k].name, n->name)) path = o->val_inputs[k].path;
        if (!path) { axc_fail("--val-target needs --val-input %s=X.npy (the model's input '%s')", n->name, n->name); return AXC_EUSAGE; }
        int64_t samples;
        int rc = load_val_file(ctx, n, is_target ? "--val-target" : "--val-input", path, &v->files[i], &samples);
        if (rc) return rc;
        if (i && samples != v->samples) {
            axc_fail("'%s' holds %lld samples but '%s' holds %lld", v->files[0].path, (long long)v->samples, path,
                     (long long)samples);
            return AXC_EINPUT;
        }
        v->samples = samples;
    }
    if (o->loss == PASS_LOSS_cross_entropy)
        return axc_check_classes(&v->files[step->ninputs - 1], &step->nodes[step->inputs[step->ninputs - 1]],
                                 fwd->nodes[fwd->outputs[0]].shape[1]);
    return AXC_OK;
}

/* ---- the loop ------------------------------------------------------------------- */

/* The options the step is compiled with: under onecycle SGD always runs
 * with momentum (the schedule sets it), so the step keeps a momentum buffer. */
static axc_opts step_options(const axc_opts *o)
{
    axc_opts s = *o;
    if (o->lr_schedule == AXC_SCHED_onecycle && o->optimizer == AXC_OPT_sgd && !(o->momentum > 0)) s.momentum = 0.95;
    s.grad_exchange = axc_train_dist() != NULL;   /* under mpirun: the step split at its seam */
    return s;
}

typedef struct run_ctx {
    const axc_opts *o;
    step_exec *x;
    ir_graph *g;              /* the step graph */
    const pass_train_step *train;
    axc_batch_file *files;
    int64_t batches;          /* whole batches */
    int64_t steps;            /* steps per epoch: the whole batches and the smaller last one */
    step_exec *tail_x;        /* the smaller last batch's step (train_tail.c), on x's state, or NULL */
    val_set val;
} run_ctx;

/* Sets the step's learning rate and momentum (beta1) from the schedule. */
static axrt_optim schedule_step(const run_ctx *r, const axrt_optim *base, long done, long total)
{
    const axrt_optim now = axc_scheduled_optim(r->o, base, done, total);
    r->x->set_lr(r->x->state, now.lr);
    r->x->set_momentum(r->x->state, now.kind == AXRT_OPT_SGD ? now.momentum : now.beta1);
    return now;
}

/* Under mpirun: the step's forward and backward, each gradient handed to
 * libaxrt_mpi as it completes (a bucket summed over the ranks while the
 * backward pass goes on), then the mean gradient and the mean loss over the
 * ranks, then the update, identical on every rank.  An exit status. */
static int data_parallel_step(step_exec *x, const void *const *in, double *loss)
{
    *loss = x->grads(x->state, in, x->grad_buf, x->ready, x->ready_user);
    int rc = axc_dist_exchange_finish(axc_train_dist(), loss);
    if (!rc && isfinite(*loss)) x->apply(x->state, x->grad_buf);   /* non-finite: every rank's loss, all stop */
    return rc;
}

/* The inputs of the epoch's k-th step in in: batch order[k], or after the
 * whole batches the smaller last one; the step that takes them (the last
 * batch's own, run on the main step's state). */
static const step_exec *point_inputs(const run_ctx *r, int64_t k, const int64_t *order, const void **in)
{
    const bool last = k == r->batches;
    for (int i = 0; i < r->g->ninputs; i++)
        in[i] = r->files[i].data + (size_t)(last ? r->batches : order[k]) * r->files[i].batch_bytes;
    return last ? r->tail_x : r->x;
}

/* One epoch's steps; the sum of their losses, each weighted by its batch's
 * samples, in *sum.  An exit status. */
static int run_epoch(const run_ctx *r, long epoch, axc_progress *pr, double *sum)
{
    const axc_opts *o = r->o;
    const axrt_optim base = axc_optim_from(o);
    const long total = (long)(o->epochs * r->steps);
    const int64_t batch = r->g->nodes[r->g->inputs[0]].shape[0];
    const void **in = calloc((size_t)r->g->ninputs, sizeof *in);
    int64_t *order = malloc(sizeof *order * (size_t)(r->batches + 1));
    if (!in || !order) ax_out_of_memory(0);
    axc_batch_order(o, epoch, order, r->batches);
    int rc = AXC_OK;
    bool exchange_failed = false;
    *sum = 0;
    for (int64_t k = 0; k < r->steps && !rc; k++) {
        const long step = epoch * (long)r->steps + (long)k + 1;
        const axrt_optim now = schedule_step(r, &base, step - 1, total);
        double loss;
        const step_exec *sx = point_inputs(r, k, order, in);
        if (!r->x->grads) loss = sx->step(r->x->state, in);
        else if ((rc = data_parallel_step(r->x, in, &loss))) {
            exchange_failed = true;   /* a rank died: no collective after it */
            break;
        }
        if (!isfinite(loss)) {   /* and a parameter already non-finite, if one is */
            const char *bad = first_nonfinite_state(r->x, r->g, r->train);
            axc_fail("step %ld: the loss is %g%s%s%s (the weights were not written)", step, loss,
                     bad ? "; parameter '" : "", bad ? bad : "", bad ? "' is non-finite after it" : "");
            rc = AXC_EINPUT;
        } else {
            *sum += loss * (double)(k == r->batches ? r->files[0].tail : batch);
            axc_progress_step(pr, step, loss, now.lr);
        }
    }
    /* a parameter an update made non-finite makes the next loss non-finite;
     * the epoch's last update is checked here (once an epoch: the scan
     * costs about as much as a step of a dense model) */
    const char *bad = rc ? NULL : first_nonfinite_state(r->x, r->g, r->train);
    if (bad) {
        axc_fail("step %ld: the update made parameter '%s' non-finite (try a smaller --lr); the weights were not "
                 "written", (epoch + 1) * (long)r->steps, bad);
        rc = AXC_EINPUT;
    }
    /* under mpirun a running statistic is each rank's own: all stop if one is non-finite */
    if (r->x->grads && !exchange_failed) rc = axc_dist_agree(axc_train_dist(), rc);
    free(order);
    free((void *)in);
    return rc;
}

/* Epochs from pos->epochs_done on, with validation, early stopping and
 * checkpoints. */
static int run_epochs(const run_ctx *r, loop_pos *pos)
{
    const axc_opts *o = r->o;
    const ir_graph *fwd = r->train->forward;
    const ir_node *target = &r->g->nodes[r->g->inputs[r->g->ninputs - 1]];
    const int64_t batch = r->g->nodes[r->g->inputs[0]].shape[0];
    const double samples = (double)(r->batches * batch + r->files[0].tail);
    axc_progress pr;
    axc_progress_start(&pr, o, r->steps, (long)batch, pos->epochs_done);
    int rc = AXC_OK;
    for (long epoch = pos->epochs_done; epoch < o->epochs && !rc; epoch++) {
        double sum;
        if ((rc = run_epoch(r, epoch, &pr, &sum))) break;
        double val_loss = NAN, accuracy = NAN;
        if (r->val.files) validate(r->x, fwd, o->loss, &r->val, target, &val_loss, &accuracy);
        axc_progress_epoch(&pr, epoch + 1, sum / samples, val_loss, accuracy);
        pos->epochs_done = epoch + 1;
        bool stop = false;
        if (r->val.files && o->early_stop) {
            if (!(val_loss >= pos->best_val)) pos->best_val = val_loss, pos->stale = 0;   /* NaN best: the first */
            else stop = ++pos->stale >= o->early_stop;
        }
        if (o->checkpoint && (pos->epochs_done % (o->checkpoint_every ? o->checkpoint_every : 1) == 0 || stop || pos->epochs_done == o->epochs))
            rc = write_checkpoint(o, r->x, pos);
        if (stop && !rc) {
            printf("early stop after epoch %ld: the validation loss has not improved for %ld epochs (best %.6g)\n",
                   epoch + 1, pos->stale, pos->best_val);
            break;
        }
    }
    axc_progress_end(&pr);
    return rc;
}

/* Under mpirun, rank 0's stdout: how much of the exchange the backward pass
 * hid (buckets started during it) and the wait left after it, per step. */
static void print_overlap(const axc_dist *d, double steps)
{
    double wait;
    long in_backward, at_finish;
    axc_dist_exchange_stats(d, &wait, &in_backward, &at_finish);
    printf("exchange: %ld of %ld buckets started during the backward pass; %.3f ms waited after each backward pass\n",
           in_backward, in_backward + at_finish, steps > 0 ? 1e3 * wait / steps : 0.0);
}

static void free_files(axc_batch_file *files, int n)
{
    for (int i = 0; files && i < n; i++) free(files[i].data);
    free(files);
}

/* Under mpirun: the options the compiled step's loop does not take there
 * (refused, on every rank alike), or AXC_TRAIN_FALLBACK for clipping (the
 * split step's update does not clip: the interpreter clips the mean
 * gradient); else AXC_OK. */
static int dist_refusal(const axc_opts *o, const axc_dist *dist)
{
    if (o->clip_grad_norm > 0 || o->clip_grad_value > 0) {
        if (axc_dist_rank(dist) == 0)
            fprintf(stderr, "axc: note: training on the interpreter: under mpirun the compiled step does not clip the "
                            "exchanged gradients (--clip-grad-norm, --clip-grad-value)\n");
        return AXC_TRAIN_FALLBACK;
    }
    const char *refused = o->val_target ? "--val-target" : o->checkpoint ? "--checkpoint" : o->resume ? "--resume" : NULL;
    if (!refused) return AXC_OK;
    axc_fail("%s is not available under mpirun (data-parallel training): train without it, or in one process", refused);
    return AXC_EUSAGE;
}

/* The training files and the validation set of r's step; r->batches and r->steps. */
static int load_data(ax_ctx *ctx, const axc_opts *o, run_ctx *r)
{
    const ir_graph *fwd = r->train->forward;
    pass_trainer view = {.g = r->g, .target = r->g->inputs[r->g->ninputs - 1]};
    r->files = calloc((size_t)r->g->ninputs, sizeof *r->files);
    if (!r->files) ax_out_of_memory(0);
    int rc = axc_train_load_files(ctx, o, &view, fwd->nodes[fwd->outputs[0]].shape[1], r->files, &r->batches);
    if (!rc) r->steps = axc_epoch_steps(&r->files[0]);
    if (!rc && o->val_target) rc = load_val(ctx, o, r->g, fwd, &r->val);
    return rc;
}

/* The smaller last batch's step (train_tail.c): the model at that batch,
 * its own generated step, run on the main step's state. */
typedef struct tail_step {
    axc_train_tail tail;
    pass_train_step train;
    step_exec x;
} tail_step;

static int open_tail(ax_ctx *ctx, const axc_opts *so, const char *home, run_ctx *r, tail_step *ts)
{
    if (!(ts->tail.samples = r->files[0].tail)) return AXC_OK;
    int rc = axc_tail_step_graphs(ctx, so, r->train, &ts->tail, &ts->train);
    if (!rc) rc = open_step(ctx, so, home, ts->tail.models[0], &ts->train, &ts->x);
    free(ts->x.state);   /* it steps the main step's state */
    ts->x.state = NULL;
    if (!rc) r->tail_x = &ts->x;
    return rc;
}

static void close_tail(ax_ctx *ctx, tail_step *ts)
{
    close_step(ctx, &ts->x);
    if (ts->train.forward) ir_graph_free_nodes(ts->train.forward);
    axc_tail_free(&ts->tail);
}

int axc_train_compiled(ax_ctx *ctx, const axc_opts *o)
{
    const char *home = axc_home(ctx->arena);
    if (!home) {
        fprintf(stderr, "axc: note: training on the interpreter: the runtime (include/ and lib/ beside bin/axc) is not found\n");
        return AXC_TRAIN_FALLBACK;
    }
    axc_dist *dist = axc_train_dist();
    int rc = dist ? dist_refusal(o, dist) : AXC_OK;
    if (rc) return rc;
    const axc_opts so = step_options(o);
    ir_graph *models[AXC_MAX_MODELS];
    int n = 0;
    rc = axc_build_models(ctx, &so, models, &n);
    if (!rc && n != 1) {
        axc_fail("'axc %s' trains one model; %s has %d (choose one with --model)", "train", o->input, n);
        rc = AXC_EUSAGE;
    }
    pass_train_step train = {0};
    if (!rc) rc = axc_train_step_graphs(ctx, &so, models, n, &train);
    if (!rc && o->mem_report) pass_train_print_remat(models[0], &train);
    run_ctx r = {.o = o, .g = rc ? NULL : models[0], .train = &train};
    step_exec x = {0};
    tail_step tail = {0};
    r.x = &x;
    if (!rc) rc = load_data(ctx, o, &r);
    if (!rc) rc = open_step(ctx, &so, home, r.g, &train, &x);
    if (!rc) rc = open_tail(ctx, &so, home, &r, &tail);
    rc = axc_dist_agree(dist, rc);   /* a rank that could not start stops all */
    loop_pos pos = {0, NAN, 0};
    if (!rc && o->resume) rc = read_checkpoint(ctx, o, &x, &pos);
    if (!rc) rc = run_epochs(&r, &pos);
    if (!rc && dist) print_overlap(dist, (double)r.batches * (double)o->epochs);
    if (!rc && axc_dist_rank(dist) == 0) {   /* under mpirun rank 0 alone writes */
        state_to_graph(&x, r.g, &train);
        rc = axc_save_weights(o, r.g);
    }
    close_step(ctx, &x);
    close_tail(ctx, &tail);
    free_files(r.files, r.g ? r.g->ninputs : 0);
    free_files(r.val.files, r.g ? r.g->ninputs : 0);
    if (train.forward) ir_graph_free_nodes(train.forward);
    axc_free_models(models, n);
    return rc;
}
