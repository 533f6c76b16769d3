/* host_main.c — starts the mlp example through its cuda host C
 * (mlp_init), prints the error or runs one host forward; exit 0 when it
 * ran, 2 when init failed. */
#include <stdio.h>
#include "m.h"
int main(void)
{
    static float x[784], y[10];
    char err[4096];
    axrt_gpu *g = mlp_init(err, sizeof err);
    if (!g) { printf("init failed: %s\n", err); return 2; }
    const int rc = mlp_forward(g, x, y);
    printf("forward: %d\n", rc);
    mlp_free(g);
    return rc ? 1 : 0;
}
