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
 * step's and rematerialised alike (axc_train_fit_ram): the interpreter
 * then evaluates the copies, so results are those without --ram.
 *
 * With --shuffle each epoch takes the batches in an order drawn from --seed
 * (batch_order); Dropout's counter holds --seed and the step (pass_train_mode).
 *
 * The training graph is shared with the generated C training step (axc
 * --train, train_step.c), and the optimizer's formulas with it through the
 * runtime (axrt_optim_step_*).  The ops without a gradient rule are listed in
 * pass_grad.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "ir_interp.h"
#include "train_dist.h"

const char *const axc_optimizer_names[AXC_OPT_COUNT] = {"sgd", "adam", "adamw", "lion"};

/* Reads all of fd (a regular file of size bytes) into buf; -1 on a short
 * read (the file shrank) or an error. */
static int read_exactly(int fd, uint8_t *buf, size_t size)
{
    size_t done = 0;
    while (done < size) {
        ssize_t n = pread(fd, buf + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { if (n == 0) errno = EIO; return -1; }
        done += (size_t)n;
    }
    return 0;
}

int axc_read_npy_file(ax_ctx *ctx, const char *what, const char *path, tf_tensor *t)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before the
     * file-type check refuses it */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) { axc_fail("%s: cannot read '%s': %s", what, path, strerror(errno)); return AXC_EUSAGE; }
    struct stat st;
    int rc = AXC_OK;
    uint8_t magic[6];
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        axc_fail("%s '%s' is not a regular file (a .npy file is expected)", what, path);
        rc = AXC_EUSAGE;
    } else if (st.st_size < (off_t)sizeof magic || read_exactly(fd, magic, sizeof magic) ||
               memcmp(magic, "\x93NUMPY", sizeof magic)) {
        axc_fail("%s '%s' is not a .npy file (no \\x93NUMPY magic at its start)", what, path);
        rc = AXC_EINPUT;
    }
    if (rc) { close(fd); return rc; }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = ax_alloc(ctx->arena, len + 1);
    if (read_exactly(fd, buf, len)) {
        axc_fail("%s: cannot read '%s': %s", what, path, strerror(errno));
        close(fd);
        return AXC_EUSAGE;
    }
    close(fd);
    char err[256];
    if (tf_npy_parse(buf, len, t, err, sizeof err)) { axc_fail("%s '%s': %s", what, path, err); return AXC_EINPUT; }
    return AXC_OK;
}

bool axc_first_nonfinite(const tf_tensor *t, int64_t *index, double *value)
{
    if (!ir_dtype_is_float(t->dtype)) return false;
    const size_t size = ir_dtypes[t->dtype].size, count = t->nbytes / size;
    double chunk[256];
    for (size_t at = 0; at < count; at += 256) {
        size_t n = count - at < 256 ? count - at : 256;
        tf_convert(chunk, AXRT_F64, t->data + at * size, t->dtype, n);
        for (size_t k = 0; k < n; k++)
            if (!isfinite(chunk[k])) { *index = (int64_t)(at + k); *value = chunk[k]; return true; }
    }
    return false;
}

int axc_train_batches(const tf_tensor *t, const ir_node *n, const char *what, const char *path,
                      axc_batch_file *f)
{
    bool fits = t->rank == n->rank && t->rank > 0 && t->shape[0] > 0 && t->shape[0] % n->shape[0] == 0;
    for (int d = 1; fits && d < n->rank; d++) fits = t->shape[d] == n->shape[d];
    char want[128], got[128];
    if (!fits) {
        ir_shape_str(n->shape, n->rank, want, sizeof want);
        ir_shape_str(t->shape, t->rank, got, sizeof got);
        axc_fail("%s '%s' holds %s but takes whole batches of %s (dim 0 a multiple of %lld)", what, path, got,
                 want, (long long)n->shape[0]);
        return AXC_EINPUT;
    }
    if (ir_dtype_is_float(t->dtype) != ir_dtype_is_float(n->dtype)) {
        axc_fail("%s '%s' holds %s values but %s ones are expected", what, path, ir_dtype_name(t->dtype),
                 ir_dtype_is_float(n->dtype) ? "floating-point" : "integer (Int64 or Int32)");
        return AXC_EINPUT;
    }
    size_t count = 1;
    for (int d = 0; d < t->rank; d++) count *= (size_t)t->shape[d];
    f->path = path;
    f->batches = t->shape[0] / n->shape[0];
    f->tail = 0;
    f->batch_bytes = ir_nbytes(n);
    f->data = malloc(count * ir_dtypes[n->dtype].size + 1);
    if (!f->data) ax_out_of_memory(0);
    tf_convert(f->data, n->dtype, t->data, t->dtype, count);
    return AXC_OK;
}

typedef axc_batch_file batch_file;

/* Under mpirun: this process's part in data-parallel training, else NULL
 * (train_dist.c). */
static axc_dist *dist;

/* Whether t's samples (dims after 0) have node n's shape: only then is a
 * count that is not a multiple of the batch cut or padded (else
 * axc_train_batches names the shapes as given). */
static bool same_sample_shape(const tf_tensor *t, const ir_node *n)
{
    bool same = t->rank == n->rank;
    for (int d = 1; same && d < n->rank; d++) same = t->shape[d] == n->shape[d];
    return same;
}

/* Reads path as batches of node n (dims after 0 equal): the samples past the
 * last whole batch are a smaller last batch (f->tail, as DataLoader's
 * default), or with --drop-last left out (DataLoader(drop_last=True));
 * under mpirun only this rank's shard. */
static int load_batches(ax_ctx *ctx, const axc_opts *o, const ir_node *n, const char *what, const char *path,
                        batch_file *f)
{
    if (dist) return axc_dist_load_batches(dist, n, what, path, f);
    tf_tensor t;
    int rc = axc_read_npy_file(ctx, what, path, &t);
    if (rc) return rc;
    const int64_t batch = n->rank ? n->shape[0] : 1, count = t.rank ? t.shape[0] : 0;
    int64_t tail = 0;
    if (count > 0 && count % batch && same_sample_shape(&t, n)) {
        if (!o->drop_last) {   /* the smaller last batch, padded to a whole one (train_tail.c) */
            tail = count % batch;
            axc_pad_to_batches(ctx, &t, batch);
        } else if (count >= batch) {
            t.nbytes = t.nbytes / (size_t)count * (size_t)(count / batch * batch);
            t.shape[0] = count / batch * batch;
        }
    }
    rc = axc_train_batches(&t, n, what, path, f);
    if (!rc && tail) f->batches--, f->tail = tail;
    return rc;
}

int axc_check_classes(const axc_batch_file *f, const ir_node *target, int64_t classes)
{
    int64_t count = axc_epoch_steps(f) * ir_numel(target);   /* a last batch's padding is class 0 */
    for (int64_t i = 0; i < count; i++) {
        int64_t c = target->dtype == AXRT_I64 ? ((const int64_t *)(const void *)f->data)[i]
                                               : ((const int32_t *)(const void *)f->data)[i];
        if (c < 0 || c >= classes) {
            axc_fail("--target '%s': class index %lld at row %lld is outside 0..%lld (the model has %lld classes)",
                     f->path, (long long)c, (long long)i, (long long)classes - 1, (long long)classes);
            return AXC_EINPUT;
        }
    }
    return AXC_OK;
}

/* ---- optimizers ---------------------------------------------------------- */

axrt_optim axc_optim_from(const axc_opts *o)
{
    static const axrt_optimizer kinds[AXC_OPT_COUNT] = {AXRT_OPT_SGD, AXRT_OPT_ADAM, AXRT_OPT_ADAMW,
                                                        AXRT_OPT_LION};
    axrt_optim h = {kinds[o->optimizer], o->lr, o->momentum, o->weight_decay, o->beta1, o->beta2, o->eps,
                    o->nesterov};
    const bool lion = h.kind == AXRT_OPT_LION;
    if (isnan(h.lr)) h.lr = lion ? 1e-4 : 1e-3;
    if (isnan(h.momentum)) h.momentum = 0;
    if (isnan(h.weight_decay)) h.weight_decay = h.kind == AXRT_OPT_ADAMW ? 0.01 : 0;
    if (isnan(h.beta1)) h.beta1 = 0.9;
    if (isnan(h.beta2)) h.beta2 = lion ? 0.99 : 0.999;
    if (isnan(h.eps)) h.eps = 1e-8;
    return h;
}

/* ---- the training graph ---------------------------------------------------- */

typedef axc_trainer trainer;

/* The trainable parameters: the user's (not derived) float ones. */
static int collect_params(trainer *t)
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
 * loss, then each gradient.  Returns an exit status. */
int axc_build_training_graph(const axc_opts *o, trainer *t)
{
    ir_graph *g = t->g;
    if (g->noutputs != 1) {
        ax_error(g->ctx, g->loc, "'axc %s' needs a model with one output; '%s' has %d",
                 o->train_step ? "--train" : "train", g->name, g->noutputs);
        return AXC_EINPUT;
    }
    int nbn = pass_train_mode(g);
    if (nbn < 0) return AXC_EINPUT;
    t->nstats = 2 * nbn;
    const int y = g->outputs[0];
    const bool ce = o->loss == PASS_LOSS_cross_entropy;
    if (ce && g->nodes[y].rank != 2) {
        char shape[128];
        ir_shape_str(g->nodes[y].shape, g->nodes[y].rank, shape, sizeof shape);
        ax_error(g->ctx, g->loc, "cross_entropy needs logits [batch, classes]; model '%s' returns %s", g->name,
                 shape);
        return AXC_EINPUT;
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
        return AXC_EINPUT;
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
    if (pass_grad(g, loss, t->params, t->nparams, t->grads)) return AXC_EINPUT;
    for (int id = 0; id < g->nnodes; id++)
        if (g->nodes[id].op == IR_OP_param && g->nodes[id].name == pass_dropout_counter_name)
            t->dropout_counter = g->nodes[id].data;
    t->loss = g->noutputs;
    ir_add_output(g, loss, "loss");
    for (int i = 0; i < t->nparams; i++) {
        t->grad_out[i] = t->grads[i] == IR_NONE ? -1 : g->noutputs;
        if (t->grads[i] != IR_NONE) ir_add_output(g, t->grads[i], g->nodes[t->params[i]].name);
    }
    return ir_verify(g) ? AXC_EINPUT : AXC_OK;
}

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

void axc_free_trainer(trainer *t)
{
    for (int i = 0; i < t->nparams && t->m; i++) { free(t->m[i]); free(t->v[i]); }
    free(t->m), free(t->v), free(t->p), free(t->gbuf);
    free(t->params), free(t->grads), free(t->grad_out), free(t->stat_param);
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

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- progress (both executors) ------------------------------------------------ */

void axc_progress_start(axc_progress *p, const axc_opts *o, int64_t batches, long batch, long epochs_done)
{
    /* under mpirun a rank's stdout is a pseudo-terminal whatever mpirun's own is:
     * the scripts' line format there */
    *p = (axc_progress){.tty = isatty(STDOUT_FILENO) == 1 && !axc_dist_launcher(),
                        .scheduled = o->lr_schedule != AXC_SCHED_constant || o->warmup_steps,
                        .total = (long)(o->epochs * batches), .batches = (long)batches, .epochs = o->epochs,
                        .batch = batch, .first_step = epochs_done * (long)batches, .t0 = seconds()};
    p->every = p->total <= 50 ? 1 : p->total / 20;
    p->last_draw = p->t0;
}

/* Off a terminal: every p->every-th step's line (and the first and last),
 * as scripts read them.  On one: the epoch's line, redrawn in place at most
 * five times a second. */
void axc_progress_step(axc_progress *p, long step, double loss, double lr)
{
    const double now = seconds(), rate = (double)(step - p->first_step) / (now - p->t0 + 1e-9);
    p->epoch_loss += loss;
    p->epoch_steps++;
    if (!p->tty) {
        if (step % p->every && step != p->total && step != 1) return;
        printf("step %ld/%ld  epoch %ld/%ld  loss %.6g", step, p->total, (step - 1) / p->batches + 1, p->epochs, loss);
        if (p->scheduled) printf("  lr %.17g", lr);   /* the step's, exactly */
        printf("  %.1f steps/s\n", rate);
        return;
    }
    if (now - p->last_draw < 0.2 && step % p->batches) return;
    p->last_draw = now;
    const double left = (double)(p->total - step) / (rate > 0 ? rate : 1);
    printf("\r\033[Kepoch %ld/%ld  step %ld/%ld  loss %.5g  %.0f samples/s  %ld:%02ld left", (step - 1) / p->batches + 1,
           p->epochs, (step - 1) % p->batches + 1, p->batches, p->epoch_loss / (double)p->epoch_steps,
           rate * (double)p->batch, (long)left / 60, (long)left % 60);
    fflush(stdout);
}

/* The end of 1-based epoch `epoch`: its mean loss, and the validation loss
 * and accuracy when there is a validation set (NaN: none, or no accuracy).
 * Off a terminal only the validation's line is printed. */
void axc_progress_epoch(axc_progress *p, long epoch, double mean_loss, double val_loss, double accuracy)
{
    const double now = seconds(), rate = (double)(epoch * p->batches - p->first_step) / (now - p->t0 + 1e-9);
    const double left = (double)(p->total - epoch * p->batches) / (rate > 0 ? rate : 1);
    p->epoch_loss = 0, p->epoch_steps = 0;
    if (!p->tty && isnan(val_loss)) return;
    printf("%sepoch %ld/%ld  loss %.6g", p->tty ? "\r\033[K" : "", epoch, p->epochs, mean_loss);
    if (!isnan(val_loss)) printf("  val_loss %.6g", val_loss);
    if (!isnan(accuracy)) printf("  val_accuracy %.4f", accuracy);
    if (p->tty) printf("  %.0f samples/s  %ld:%02ld left", rate * (double)p->batch, (long)left / 60, (long)left % 60);
    printf("\n");
    fflush(stdout);
}

void axc_progress_end(axc_progress *p) { (void)p; fflush(stdout); }

/* The batches of 0-based epoch `epoch` in the order they are used: file
 * order, or with --shuffle a Fisher-Yates shuffle whose draw for position i
 * is axrt_mix64(axrt_mix64(seed) ^ (epoch << 32) ^ i) mod (i + 1) (docs/training.md). */
void axc_batch_order(const axc_opts *o, long epoch, int64_t *order, int64_t batches)
{
    for (int64_t i = 0; i < batches; i++) order[i] = i;
    if (!o->shuffle) return;
    for (int64_t i = batches - 1; i > 0; i--) {
        uint64_t r = axrt_mix64(axrt_mix64(o->seed) ^ ((uint64_t)epoch << 32) ^ (uint64_t)i);
        int64_t j = (int64_t)(r % (uint64_t)(i + 1)), swap = order[i];
        order[i] = order[j], order[j] = swap;
    }
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

int axc_train_load_files(ax_ctx *ctx, const axc_opts *o, const trainer *t, int64_t classes, batch_file *files,
                         int64_t *batches)
{
    ir_graph *g = t->g;
    for (int i = 0; i < g->ninputs; i++) {
        const ir_node *n = &g->nodes[g->inputs[i]];
        const char *path = i == g->ninputs - 1 ? o->target_file : NULL;
        for (int k = 0; k < o->ninputs && !path; k++)
            if (!strcmp(o->inputs[k].name, n->name)) path = o->inputs[k].path;
        if (!path) { axc_fail("'axc train' needs --input %s=X.npy (the model's input '%s')", n->name, n->name); return AXC_EUSAGE; }
        int rc = load_batches(ctx, o, n, i == g->ninputs - 1 ? "--target" : "--input", path, &files[i]);
        if (rc) return rc;
        if (files[i].batches != files[0].batches) {
            axc_fail("'%s' holds %lld batches but '%s' holds %lld", files[0].path, (long long)files[0].batches, path,
                     (long long)files[i].batches);
            return AXC_EINPUT;
        }
        if (files[i].tail != files[0].tail) {
            const int64_t b0 = g->nodes[g->inputs[0]].shape[0];
            axc_fail("'%s' holds %lld samples but '%s' holds %lld", files[0].path,
                     (long long)(files[0].batches * b0 + files[0].tail), path,
                     (long long)(files[i].batches * n->shape[0] + files[i].tail));
            return AXC_EINPUT;
        }
    }
    *batches = files[0].batches;
    if (o->loss == PASS_LOSS_cross_entropy)
        return axc_check_classes(&files[g->ninputs - 1], &g->nodes[t->target], classes);
    return AXC_OK;
}

/* The options only the compiled step's loop (train_exec.c) has, or NULL. */
static const char *interp_refusal(const axc_opts *o)
{
    return o->val_target ? "--val-target" : o->checkpoint ? "--checkpoint" : o->resume ? "--resume" : NULL;
}

axc_dist *axc_train_dist(void) { return dist; }

/* Ends this process's part in data-parallel training; rc. */
static int close_dist(int rc)
{
    axc_dist_close(dist);
    dist = NULL;
    return rc;
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
    if ((rc = axc_dist_open(&dist))) return rc;
    if (!o->interp && (rc = axc_train_compiled(ctx, o)) != AXC_TRAIN_FALLBACK) return close_dist(rc);
    const char *why = interp_refusal(o);
    if (why) {
        axc_fail("%s runs on the compiled step only, not on the interpreter", why);
        return close_dist(AXC_EUSAGE);
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
    batch_file *files = NULL;
    if (!rc) {
        t.g = models[0];
        rc = axc_build_training_graph(o, &t);
    }
    if (!rc && (o->ram_budget || o->mem_report)) rc = axc_train_fit_ram(o, &t);
    int64_t batches = 0;
    if (!rc) {
        files = calloc((size_t)t.g->ninputs, sizeof *files);
        if (!files) ax_out_of_memory(0);
        rc = axc_train_load_files(ctx, o, &t, t.g->nodes[t.g->outputs[0]].shape[1], files, &batches);
    }
    axc_train_tail tail = {.samples = rc ? 0 : files[0].tail};
    if (tail.samples) rc = axc_tail_trainer(ctx, o, &t, &tail);
    rc = axc_dist_agree(dist, rc);   /* a rank that could not start stops all */
    if (!rc) rc = run_steps(o, &t, &tail, files);
    if (!rc && axc_dist_rank(dist) == 0) rc = axc_save_weights(o, t.g);
    axc_tail_free(&tail);
    close_dist(rc);
    for (int i = 0; files && i < t.g->ninputs; i++) free(files[i].data);
    free(files);
    axc_free_trainer(&t);
    axc_free_models(models, n);
    return rc;
}
