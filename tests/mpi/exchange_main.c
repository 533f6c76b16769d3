/* exchange_main.c — a generated training step split at its seam (axc
 * --train --grad-exchange) driven over MPI with libaxrt_mpi: the mpi suite's
 * check of the bucketed exchange and bench/ddp.py's program.
 * exchange_data.h (written by the caller) includes the model's header and
 * defines PREFIX(name), STATE_BYTES, GRAD_BYTES, STATE_TENSORS, BATCH (the
 * model's, i.e. each rank's), SAMPLE (Float32 elements of one input
 * sample) and CLASSES (cross_entropy targets).
 *
 *   exchange STEPS MODE BUCKET_BYTES PRINT
 * MODE: whole     <name>_train_step alone (one process: the reference)
 *       local     grads then apply, no exchange (one rank's compute)
 *       blocking  grads, then every bucket exchanged after the backward
 *       buckets   grads with ready() = axrt_mpi_exchange_ready: buckets go
 *                 out while the backward pass runs (DDP's overlap)
 * Step s's global batch is N x BATCH samples drawn from (s, sample index),
 * whatever N is; rank r trains on its r-th block.  Rank 0 prints
 *   steps/s <rate> wait_ms <per step> ready_ms <per step> buckets <in backward> <at finish>
 * and, with PRINT, every state tensor element ("name[i] value"). */
#define _POSIX_C_SOURCE 200112L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axrt_mpi.h"
#include "exchange_data.h"

#define ALIGNED __attribute__((aligned(64)))
static unsigned char state[STATE_BYTES] ALIGNED, grads[GRAD_BYTES] ALIGNED;
static float x[BATCH * SAMPLE];
static int64_t target[BATCH];

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void fill_batch(long step, long first)
{
    for (long i = 0; i < BATCH; i++) {
        const uint64_t sample = mix((uint64_t)step * 1000003u + (uint64_t)(first + i));
        for (long k = 0; k < SAMPLE; k++)
            x[i * SAMPLE + k] = (float)(mix(sample + (uint64_t)k) >> 40) / 16777216.0f - 0.5f;
        target[i] = (int64_t)(mix(sample ^ 0xabcdefu) % CLASSES);
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 5) { fprintf(stderr, "usage: exchange STEPS whole|local|blocking|buckets BUCKET_BYTES PRINT\n"); return 2; }
    const long steps = atol(argv[1]), warm = 2;
    const char *mode = argv[2];
    const int print = atoi(argv[4]);
    if (axrt_mpi_init()) { fprintf(stderr, "%s\n", axrt_mpi_error()); return 1; }
    const int rank = axrt_mpi_rank(), size = axrt_mpi_size();
    axrt_mpi_exchange *ex = axrt_mpi_exchange_open(grads, GRAD_BYTES, AXRT_F32, (size_t)atol(argv[3]));
    if (!ex) { fprintf(stderr, "%s\n", axrt_mpi_error()); return 1; }
    PREFIX(state_init)(state);
    double t0 = 0;
    for (long s = 0; s < warm + steps; s++) {
        if (s == warm) t0 = now();
        fill_batch(s, (long)rank * BATCH);
        if (!strcmp(mode, "whole")) {
            (void)PREFIX(train_step)(state, x, target, NULL);
            continue;
        }
        const int buckets = !strcmp(mode, "buckets");
        (void)PREFIX(train_grads)(state, x, target, grads, buckets ? axrt_mpi_exchange_ready : NULL, ex, NULL);
        if (strcmp(mode, "local")) {
            if (!buckets) axrt_mpi_exchange_ready(ex, 0, GRAD_BYTES);
            if (axrt_mpi_exchange_finish(ex)) { fprintf(stderr, "rank %d: %s\n", rank, axrt_mpi_error()); return 1; }
        }
        PREFIX(train_apply)(state, grads);
    }
    const double seconds = now() - t0;
    const axrt_mpi_stats st = axrt_mpi_exchange_stats(ex);
    if (rank == 0) {
        printf("ranks %d steps/s %.1f wait_ms %.4f ready_ms %.4f buckets %ld %ld\n", size, (double)steps / seconds,
               1e3 * st.wait_seconds / (double)(warm + steps), 1e3 * st.ready_seconds / (double)(warm + steps),
               st.buckets_in_backward, st.buckets_at_finish);
        for (int k = 0; print && k < STATE_TENSORS; k++) {
            const axrt_tensor_info *t = &PREFIX(state_tensors)[k];
            const float *v = (const float *)(const void *)(state + PREFIX(state_offsets)[k]);
            long count = 1;
            for (int d = 0; d < t->rank; d++) count *= (long)t->dims[d];
            for (long i = 0; i < count; i++) printf("%s[%ld] %.9g\n", t->name, i, (double)v[i]);
        }
    }
    axrt_mpi_exchange_close(ex);
    axrt_mpi_finalize();
    return 0;
}
