/* seam_main.c — the gradient-exchange seam of a generated training step
 * (axc --train --grad-exchange; docs/distributed.md), for the mpi suite.
 * seam_data.h, written by tests/mpi/run.sh, includes the model's header and
 * defines PREFIX(name) (the model's symbol prefix), BATCH_X / BATCH_T
 * (element counts of one batch of input and target), TARGET_TYPE,
 * CLASSES, STEPS.  Trains two copies of the state on the same batches: one
 * with <name>_train_step, one with <name>_train_grads then
 * <name>_train_apply, and checks that
 *   - ready() is called once per gradient, with offsets that grow and
 *     cover [0, GRAD_BYTES) without a gap (what bucketing relies on);
 *   - the two states are bitwise equal after every step.
 * Prints "RESULT: PASS" or the first difference and "RESULT: FAIL". */
#include <stdio.h>
#include <string.h>

#include "seam_data.h"

#define ALIGNED __attribute__((aligned(64)))
static unsigned char whole[STATE_BYTES] ALIGNED, split[STATE_BYTES] ALIGNED, grads[GRAD_BYTES] ALIGNED;
static float x[BATCH_X];
static TARGET_TYPE target[BATCH_T];

typedef struct handoffs { size_t next; int calls, bad; } handoffs;

static void ready(void *user, size_t offset, size_t bytes)
{
    handoffs *h = user;
    if (offset != h->next) {
        printf("ready(%zu, %zu): expected offset %zu (gradients out of order)\n", offset, bytes, h->next);
        h->bad = 1;
    }
    h->next = offset + bytes;
    h->calls++;
}

int main(void)
{
    unsigned seed = 12345;
    int step, gradients = 0, k;
    PREFIX(state_init)(whole);
    PREFIX(state_init)(split);
    for (k = 0; k < STATE_TENSORS; k++) gradients += PREFIX(grad_offsets)[k] >= 0;
    for (step = 0; step < STEPS; step++) {
        handoffs h = {0, 0, 0};
        long i;
        float a, b;
        for (i = 0; i < BATCH_X; i++) {
            seed = seed * 1103515245u + 12345u;
            x[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
        }
        for (i = 0; i < BATCH_T; i++) {
            seed = seed * 1103515245u + 12345u;
            target[i] = (TARGET_TYPE)((seed >> 8) % CLASSES);
        }
        a = PREFIX(train_step)(whole, x, target, NULL);
        b = PREFIX(train_grads)(split, x, target, grads, ready, &h, NULL);
        PREFIX(train_apply)(split, grads);
        if (h.bad || h.calls != gradients || h.next != GRAD_BYTES) {
            printf("step %d: %d ready() calls (expected %d), covering %zu of %zu bytes\n", step, h.calls,
                   gradients, h.next, (size_t)GRAD_BYTES);
            printf("RESULT: FAIL\n");
            return 1;
        }
        if (memcmp(&a, &b, sizeof a) || memcmp(whole, split, STATE_BYTES)) {
            for (i = 0; i < (long)STATE_BYTES && whole[i] == split[i]; i++) continue;
            printf("step %d: loss %.9g vs %.9g; states differ first at byte %ld\n", step, (double)a, (double)b, i);
            printf("RESULT: FAIL\n");
            return 1;
        }
    }
    printf("%d steps, %d gradients, %zu gradient bytes: the split step equals the whole one bitwise\n", STEPS,
           gradients, (size_t)GRAD_BYTES);
    printf("RESULT: PASS\n");
    return 0;
}
