/* attention_rates.c — `make bench-attention`: libaxrt's attention with and
 * without the [lq, lk] scores (axrt_mha_packed_masked_f32 against
 * axrt_mha_flash_f32, runtime/axrt_flash.inc) on the MiniLM (d 384) and
 * BERT-base (d 768) shapes, 12 heads, seq 128 (rows R4, M4), 512 and 2048,
 * self-attention with the projections; and R6's softmax (32 rows of 10000)
 * against a copy of the same bytes, the bandwidth of the level its working
 * set lives in (input and output, 2.56 MB: L3 on most cores).  One thread;
 * per-thread CPU time, the best of repeated runs (a preempted run does not
 * count the time it waited).  Reports, never judges.
 * Usage: attention_rates [SECONDS per shape, default 1]. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axrt.h"

static double thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static float *floats(size_t count, unsigned seed)
{
    float *p = aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64 + 65536);
    if (!p) {
        fprintf(stderr, "attention_rates: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    return p;
}

typedef void run_fn(void *ctx);

/* Best time of fn over about `seconds`, in ns. */
static double best_ns(run_fn *fn, void *ctx, double seconds)
{
    double best = 1e300, spent = 0;
    int runs = 0;
    while (spent < seconds * 1e9 || runs < 3) {
        const double t0 = thread_ns();
        fn(ctx);
        const double t = thread_ns() - t0;
        spent += t, runs++;
        if (t < best) best = t;
    }
    return best;
}

typedef struct mha_case {
    axrt_mha_params p;
    float *x, *in_w, *in_b, *out_w, *out_b, *y, *scratch;
} mha_case;

static void run_scores(void *ctx)
{
    mha_case *c = ctx;
    axrt_mha_packed_masked_f32(c->x, c->x, c->x, NULL, c->in_w, c->in_b, c->out_w, c->out_b, c->y, c->scratch, &c->p);
}

static void run_flash(void *ctx)
{
    mha_case *c = ctx;
    axrt_mha_flash_f32(c->x, c->x, c->x, NULL, c->in_w, c->in_b, c->out_w, c->out_b, c->y, c->scratch, &c->p, 1);
}

static void attention_row(int seq, int d, double seconds)
{
    mha_case c;
    const size_t n = (size_t)seq * (size_t)d;
    float *w = floats(4 * (size_t)d * (size_t)d, 3);
    /* projections 8 L d^2, scores and product 4 L^2 d (multiply-adds x 2) */
    const double flop = 8.0 * seq * (double)d * d + 4.0 * seq * (double)seq * d;
    double scores_ns, flash_ns;
    c.p.n = 1, c.p.lq = c.p.lk = seq, c.p.d = d, c.p.heads = 12, c.p.causal = 0;
    c.x = floats(n, 1), c.in_b = floats(3 * (size_t)d, 4), c.out_b = floats((size_t)d, 5), c.y = floats(n, 6);
    c.in_w = floats(3 * (size_t)d * (size_t)d, 7), c.out_w = floats((size_t)d * (size_t)d, 8);
    for (int part = 0; part < 4; part++)
        axrt_pack_dense_f32(w + (size_t)part * d * d, (part < 3 ? c.in_w + (size_t)part * d * d : c.out_w), (size_t)d,
                            (size_t)d);
    c.scratch = floats(axrt_mha_scratch_elems(&c.p), 9);
    scores_ns = best_ns(run_scores, &c, seconds);
    flash_ns = best_ns(run_flash, &c, seconds);
    printf("| attention d %d, 12 heads, seq %d | %.3f ms (%.1f GFLOP/s, scratch %.2f MB) | %.3f ms (%.1f GFLOP/s, "
           "scratch %.2f MB) | %.2f |\n",
           d, seq, scores_ns / 1e6, flop / scores_ns, axrt_mha_scratch_elems(&c.p) * 4e-6, flash_ns / 1e6,
           flop / flash_ns, axrt_mha_flash_scratch_elems(&c.p) * 4e-6, scores_ns / flash_ns);
    free(w), free(c.x), free(c.in_w), free(c.in_b), free(c.out_w), free(c.out_b), free(c.y), free(c.scratch);
}

typedef struct softmax_case {
    float *x, *y;
} softmax_case;

enum { SOFTMAX_ROWS = 32, SOFTMAX_COLS = 10000 };

static void run_softmax(void *ctx)
{
    softmax_case *c = ctx;
    axrt_softmax_f32(c->x, c->y, SOFTMAX_ROWS, SOFTMAX_COLS, 1);
}

static void run_copy(void *ctx)
{
    softmax_case *c = ctx;
    memcpy(c->y, c->x, sizeof(float) * SOFTMAX_ROWS * SOFTMAX_COLS);
}

static void softmax_row(double seconds)
{
    softmax_case c;
    const double bytes = 2.0 * sizeof(float) * SOFTMAX_ROWS * SOFTMAX_COLS;
    double softmax_ns, copy_ns;
    c.x = floats((size_t)SOFTMAX_ROWS * SOFTMAX_COLS, 11), c.y = floats((size_t)SOFTMAX_ROWS * SOFTMAX_COLS, 12);
    for (size_t i = 0; i < (size_t)SOFTMAX_ROWS * SOFTMAX_COLS; i++) c.x[i] *= 20.0f;
    softmax_ns = best_ns(run_softmax, &c, seconds);
    copy_ns = best_ns(run_copy, &c, seconds);
    printf("\nR6 softmax 32 x 10000: %.1f us, %.1f GB/s (input read once, output written once: %.2f MB); "
           "memcpy of the same bytes %.1f us, %.1f GB/s; softmax at %.0f %% of it\n",
           softmax_ns / 1e3, bytes / softmax_ns, bytes / 1e6, copy_ns / 1e3, bytes / copy_ns,
           100.0 * copy_ns / softmax_ns);
    free(c.x), free(c.y);
}

int main(int argc, char **argv)
{
    const double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    static const int shapes[][2] = {{128, 384}, {128, 768}, {512, 384}, {512, 768}, {2048, 384}, {2048, 768}};
    axrt_set_threads(1);
    printf("ISA %s, one thread\n\n| shape | with the scores | without (flash) | speed-up |\n|---|---|---|---|\n",
           axrt_isa_name());
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) attention_row(shapes[i][0], shapes[i][1], seconds);
    softmax_row(seconds);
    return 0;
}
