/* A user's driver for examples' mlp.ax compiled with `axc mlp.ax -o mlp.c`:
 * checks the descriptor mlp_model against the signature, runs the model
 * through mlp_forward (static arena) and through mlp_model.run (own arena),
 * and prints both outputs, one value per line, for compare_driver.py.
 * The input is x[i] = 2 sin(i), which the suite also feeds to `axc run`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mlp.h"

static int check_descriptor(void)
{
    const axrt_model *m = &mlp_model;
    if (m->n_inputs != 1 || m->n_outputs != 1 || m->inputs[0].dtype != AXRT_F32 ||
        m->inputs[0].rank != 2 || m->inputs[0].dims[0] != 1 || m->inputs[0].dims[1] != 784 ||
        m->outputs[0].rank != 2 || m->outputs[0].dims[1] != 10 ||
        m->arena_bytes != MLP_ARENA_BYTES) {
        printf("descriptor does not describe mlp(x::Float32[1, 784]) -> [1, 10]\n");
        return 1;
    }
    return 0;
}

int main(void)
{
    static float x[784], y_forward[10], y_run[10];
    for (int i = 0; i < 784; i++) x[i] = (float)(2.0 * sin((double)i));
    if (check_descriptor() != 0) return 1;
    if (mlp_forward(x, y_forward, NULL) != 0) { printf("mlp_forward failed\n"); return 1; }

    /* 64-byte aligned arena of MLP_ARENA_BYTES (at least 1 byte to allocate). */
    size_t bytes = (MLP_ARENA_BYTES + 63) / 64 * 64 + 64;
    unsigned char *block = malloc(bytes);
    if (block == NULL) return 1;
    void *arena = block + (64 - (size_t)((uintptr_t)block % 64)) % 64;
    const void *inputs[1] = {x};
    void *outputs[1] = {y_run};
    int status = mlp_model.run(inputs, outputs, arena);
    free(block);
    if (status != 0) { printf("mlp_model.run failed\n"); return 1; }
    for (int i = 0; i < 10; i++) printf("%.9g %.9g\n", y_forward[i], y_run[i]);
    return 0;
}
