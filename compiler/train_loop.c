/* train_loop.c — what both of `axc train`'s loops share (the
 * interpreter's, train.c; the compiled step's, train_exec.c): this
 * process's part in data-parallel training, the training files read as
 * batches (the smaller last batch kept, or left out with --drop-last), the
 * batch order of an epoch, and the progress lines. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "train_dist.h"

typedef axc_batch_file batch_file;

/* Under mpirun: this process's part in data-parallel training, else NULL
 * (train_dist.c). */
static axc_dist *dist;

axc_dist *axc_train_dist(void) { return dist; }

int axc_train_dist_open(void) { return axc_dist_open(&dist); }

int axc_train_dist_close(int rc)
{
    axc_dist_close(dist);
    dist = NULL;
    return rc;
}

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

int axc_train_load_files(ax_ctx *ctx, const axc_opts *o, const pass_trainer *t, int64_t classes, batch_file *files,
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

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
