/* demo_main.c — a host program using the C that `axc examples/mlp.ax -o mlp.c`
 * generates: no axc at run time, just the header, the generated file and
 * libaxrt.  Feeds a fixed input and prints the class probabilities. */
#include <stdio.h>

#include "mlp.h"

int main(void)
{
    static float x[784], y[10];
    /* a caller with its own memory would pass MLP_ARENA_BYTES of 64-byte aligned scratch */
    for (int i = 0; i < 784; i++) x[i] = (float)((i * 37) % 101) / 100.0f - 0.5f;

    if (mlp_forward(x, y, NULL) != 0) { /* NULL: the static arena inside mlp.c */
        fprintf(stderr, "mlp_forward failed\n");
        return 1;
    }
    float sum = 0;
    int best = 0;
    for (int i = 0; i < 10; i++) {
        printf("class %d: %.6f\n", i, y[i]);
        sum += y[i];
        if (y[i] > y[best]) best = i;
    }
    printf("argmax %d, probabilities sum to %.6f, arena %u bytes\n", best, sum, (unsigned)MLP_ARENA_BYTES);
    return 0;
}
