/* tests/train/amp.py's harness for the generated mixed-precision step
 * (axc --train of a Float16 or BFloat16 model; docs/training.md#mixed-precision).
 *   amp_main curve X.bin T.bin SAMPLES BATCH EPOCHS PARAMS.bin
 *       trains EPOCHS passes over the batches of X.bin (float [SAMPLES, 64])
 *       and T.bin (int64 [SAMPLES]), printing "loss STEP VALUE" per step, then
 *       the header's loss-scaling words ("scale S growth G skipped K"), and
 *       writes the state's parameters (each tensor's bytes in table order).
 *   amp_main overflow X.bin BATCH
 *       one step on the first batch of X.bin times 1000 (gradients overflow
 *       Float16), then 2000 steps with lr 0 on zeros: prints the header words
 *       and whether the parameters (and their Float32 masters) changed after
 *       each phase. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m.h"

#define BATCH_MAX 64

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(*len + 1);
    if (!data || fread(data, 1, *len, f) != *len) { fclose(f); free(data); return NULL; }
    fclose(f);
    return data;
}

static void print_words(const void *state)
{
    const int64_t *words = state;
    float scale;
    memcpy(&scale, (const unsigned char *)state + 40, sizeof scale);
    printf("scale %.1f growth %lld skipped %lld steps %lld\n", scale, (long long)words[6], (long long)words[7],
           (long long)words[0]);
}

static int curve(char **argv, void *state)
{
    size_t xl, tl;
    float *x = (float *)(void *)read_file(argv[2], &xl);
    int64_t *t = (int64_t *)(void *)read_file(argv[3], &tl);
    const long samples = atol(argv[4]), batch = atol(argv[5]), epochs = atol(argv[6]);
    if (!x || !t || xl != (size_t)samples * 64 * sizeof(float) || tl != (size_t)samples * sizeof(int64_t)) return 1;
    long step = 0;
    for (long e = 0; e < epochs; e++)
        for (long b = 0; b + batch <= samples; b += batch)
            printf("loss %ld %.9g\n", ++step, (double)m_train_step(state, x + b * 64, t + b, NULL));
    print_words(state);
    FILE *f = fopen(argv[7], "wb");
    for (int k = 0; f && k < M_STATE_TENSORS; k++) {
        size_t n = 1;
        for (int d = 0; d < m_state_tensors[k].rank; d++) n *= (size_t)m_state_tensors[k].dims[d];
        fwrite((unsigned char *)state + m_state_offsets[k], 2, n, f);
    }
    free(x);
    free(t);
    return f ? fclose(f) != 0 : 1;
}

static int overflow(char **argv, void *state)
{
    static unsigned char before[M_STATE_BYTES];
    static float big[BATCH_MAX * 64], zeros[BATCH_MAX * 64];
    static int64_t t[BATCH_MAX];
    size_t xl;
    float *x = (float *)(void *)read_file(argv[2], &xl);
    const long batch = atol(argv[3]);
    if (!x || batch > BATCH_MAX || xl < (size_t)batch * 64 * sizeof(float)) return 1;
    for (long i = 0; i < batch * 64; i++) big[i] = x[i] * 1000;
    memcpy(before, state, M_STATE_BYTES);
    printf("overflow loss %.9g\n", (double)m_train_step(state, big, t, NULL));
    printf("tensors unchanged %d\n", !memcmp(before + 64, (unsigned char *)state + 64, M_STATE_BYTES - 64));
    print_words(state);
    m_set_lr(state, 0);
    for (int s = 0; s < 2000; s++) {
        m_train_step(state, zeros, t, NULL);
        if (s == 1998) print_words(state);
    }
    print_words(state);
    free(x);
    return 0;
}

int main(int argc, char **argv)
{
    static unsigned char state[M_STATE_BYTES] __attribute__((aligned(64)));
    m_state_init(state);
    if (argc == 8 && !strcmp(argv[1], "curve")) return curve(argv, state);
    if (argc == 4 && !strcmp(argv[1], "overflow")) return overflow(argv, state);
    fprintf(stderr, "usage: amp_main curve X T SAMPLES BATCH EPOCHS PARAMS | overflow X BATCH\n");
    return 2;
}
