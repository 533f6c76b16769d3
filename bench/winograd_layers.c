/* winograd_layers.c — direct (axrt_conv2d_packed_ep_f32) against Winograd
 * F(4x4,3x3) and F(2x2,3x3) (axrt_conv2d_winograd_f32) on the 3x3 stride-1
 * layers of ResNet-18 at 224x224 and smaller images of the same channel
 * counts: the figures behind the cost model of --conv-algo=auto
 * (codegen/cg_c_target.c winograd_choice).  One thread, the ISA the runtime
 * picks (AXRT_ISA forces one); best of 5 rounds of process CPU time.  Not a test.
 * Tensors from the harness's bench_floats (64-byte boundaries, as a model's
 * weights and arena are: malloc's 16 split every 512-bit weight load).
 *   cc -O2 -Iruntime -Ibench bench/winograd_layers.c bench/safetensors.c build/lib/libaxrt.a -lm -lpthread */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "axrt.h"
#include "harness.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);   /* CPU time: the machine may be shared */
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void fill(float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) v[i] = (float)((int)(i * 7919 % 2001) - 1000) / 1000.0f;
}

/* best seconds a call of kind (0 direct, 2 / 4 Winograd F(m,3)) */
static double best_of(int kind, const float *x, const float *wt, const float *bias, float *y, const axrt_conv2d_params *p)
{
    float *packed, *scratch = NULL;
    if (kind) {
        packed = bench_floats(axrt_winograd_packed_elems(p, kind));
        scratch = bench_floats(axrt_winograd_scratch_elems(p, kind));
        axrt_pack_winograd_f32(wt, packed, p, kind);
    } else {
        packed = bench_floats((size_t)p->oc * p->c * 9);
        axrt_pack_conv2d_f32(wt, packed, p);
    }
    double best = 1e9;
    for (int round = 0; round < 5; round++) {
        int calls = 0;
        const double t0 = now();
        do {
            if (kind) axrt_conv2d_winograd_f32(x, packed, bias, NULL, AXRT_ACT_RELU, y, scratch, kind, p);
            else axrt_conv2d_packed_ep_f32(x, packed, bias, NULL, AXRT_ACT_RELU, y, p);
            calls++;
        } while (now() - t0 < 0.05);
        const double each = (now() - t0) / calls;
        if (each < best) best = each;
    }
    free(packed), free(scratch);
    return best;
}

int main(void)
{
    static const int shapes[][2] = {{56, 64}, {28, 128}, {14, 256}, {7, 512}, {28, 64}, {14, 64}, {8, 64},
                                    {56, 32}, {56, 16}, {28, 32}, {14, 128}, {7, 256}};
    printf("ISA %s\n%-14s %10s %10s %10s %8s\n", axrt_isa_name(), "layer", "direct us", "F(2,3) us", "F(4,3) us",
           "F4 gain");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int hw = shapes[s][0], c = shapes[s][1];
        const axrt_conv2d_params p = {1, hw, hw, c, hw, hw, c, 3, 3, 1, 1, 1, 1, 1, 1, 1};
        const size_t nx = (size_t)hw * hw * c, nw = (size_t)c * c * 9;
        float *x = bench_floats(nx), *y = bench_floats(nx), *w = bench_floats(nw);
        float *bias = calloc((size_t)c, sizeof *bias);
        fill(x, nx), fill(w, nw);
        const double d = best_of(0, x, w, bias, y, &p), w2 = best_of(2, x, w, bias, y, &p), w4 = best_of(4, x, w, bias, y, &p);
        char name[32];
        snprintf(name, sizeof name, "%dx%dx%d", hw, hw, c);
        printf("%-14s %10.1f %10.1f %10.1f %8.2f\n", name, d * 1e6, w2 * 1e6, w4 * 1e6, d / w4);
        free(x), free(y), free(w), free(bias);
    }
    return 0;
}
