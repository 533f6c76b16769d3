/* kernel_rates.c — `make bench-kernels`: libaxrt's GEMM-like kernels on the
 * shapes of rows R2, R3, R4 and ResNet-18 (bench/gen_models.py's M2,
 * examples/resnet18.ax), and the grouped convs of RegNet-Y-400MF (8
 * channels a group) and ResNeXt-50 32x4d (4 to 32), each also through the
 * plain conv kernel they ran on before axrt_conv2d_grouped_f32, one thread, each as a share of the FMA peak that
 * limits.c measures (AXRT_ISA=avx2: the AVX2 kernels against AVX2's peak,
 * on any machine).  Times are per-thread CPU time, the best of many runs:
 * on a shared machine a run that is preempted does not count the time it
 * waited.  Every buffer is padded with 64 KiB that are written, so that a
 * kernel's prefetches past the end of a small buffer land on pages that
 * exist (a prefetch of a page never touched costs a page walk each time,
 * which timed 16 x 16 tiles at a third of their speed).
 * Usage: kernel_rates [SECONDS per shape, default 1]. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axrt.h"
#include "harness.h"

#define PAD_FLOATS 16384

double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

float *bench_floats(size_t count)
{
    const size_t bytes = ((count + PAD_FLOATS) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    size_t i;
    if (!p) {
        fprintf(stderr, "kernel_rates: out of memory\n");
        exit(1);
    }
    for (i = 0; i < count + PAD_FLOATS; i++) p[i] = (float)((i * 2654435761u) % 1000u) / 1000.0f - 0.5f;
    return p;
}

/* One shape's kernel call, prepared. */
typedef struct shape {
    const char *name;
    double flop;
    void (*run)(const struct shape *s);
    axrt_conv2d_params conv;
    axrt_mha_params mha;
    size_t rows, in, out;
    float *x, *w, *bias, *y, *scratch;
} shape;

static void run_dense(const shape *s)
{
    axrt_dense_packed_ep_f32(s->x, s->w, s->bias, NULL, AXRT_ACT_RELU, s->y, s->rows, s->in, s->out);
}

static void run_conv(const shape *s)
{
    axrt_conv2d_packed_ep_f32(s->x, s->w, s->bias, NULL, AXRT_ACT_RELU, s->y, &s->conv);
}

static void run_mha(const shape *s)
{
    const size_t d = (size_t)s->mha.d;
    axrt_mha_packed_f32(s->x, s->x, s->x, s->w, s->bias, s->w + 3 * d * d, s->bias + 3 * d, s->y, s->scratch,
                        &s->mha);
}

static shape dense(const char *name, size_t rows, size_t in, size_t out)
{
    shape s;
    float *w = bench_floats(in * out);
    memset(&s, 0, sizeof s);
    s.name = name, s.run = run_dense, s.rows = rows, s.in = in, s.out = out;
    s.flop = 2.0 * (double)rows * (double)in * (double)out;
    s.x = bench_floats(rows * in), s.w = bench_floats(in * out), s.bias = bench_floats(out);
    s.y = bench_floats(rows * out);
    axrt_pack_dense_f32(w, s.w, in, out);
    free(w);
    return s;
}

static shape conv(const char *name, int hw, int c, int oc, int k, int stride, int pad)
{
    shape s;
    axrt_conv2d_params *p = &s.conv;
    size_t weights;
    float *w;
    memset(&s, 0, sizeof s);
    p->n = 1, p->h = p->w = hw, p->c = c, p->oc = oc, p->kh = p->kw = k;
    p->oh = p->ow = (hw + 2 * pad - k) / stride + 1;
    p->stride_h = p->stride_w = stride, p->dilation_h = p->dilation_w = 1;
    p->pad_top = p->pad_left = pad, p->groups = 1;
    weights = (size_t)oc * (size_t)c * (size_t)k * (size_t)k;
    s.name = name, s.run = run_conv;
    s.flop = 2.0 * p->oh * p->ow * (double)weights;
    s.x = bench_floats((size_t)hw * (size_t)hw * (size_t)c), s.w = bench_floats(weights);
    s.bias = bench_floats((size_t)oc), s.y = bench_floats((size_t)p->oh * (size_t)p->ow * (size_t)oc);
    w = bench_floats(weights);
    axrt_pack_conv2d_f32(w, s.w, p);
    free(w);
    return s;
}

static void run_gconv(const shape *s)
{
    axrt_conv2d_grouped_f32(s->x, s->w, s->bias, NULL, AXRT_ACT_RELU, s->y, &s->conv);
}

static void run_gconv_plain(const shape *s)
{
    axrt_conv2d_f32(s->x, s->w, s->bias, s->y, &s->conv);
}

/* A 3x3 conv, stride 1, padding 1, of c channels in groups of cg, through
 * the grouped kernel (its packed weight) or the plain one. */
static shape gconv(const char *name, int hw, int c, int cg, int plain)
{
    shape s = conv(name, hw, cg, c, 3, 1, 1);
    axrt_conv2d_params *p = &s.conv;
    const size_t weights = (size_t)c * (size_t)cg * 9;
    float *w = bench_floats(weights);
    p->c = c, p->groups = c / cg;
    s.run = plain ? run_gconv_plain : run_gconv;
    free(s.x);
    s.x = bench_floats((size_t)hw * (size_t)hw * (size_t)c);
    if (!plain) axrt_pack_conv2d_grouped_f32(w, s.w, p);
    free(w);
    return s;
}

static shape mha(const char *name, int l, int d, int heads)
{
    shape s;
    const size_t dd = (size_t)d * (size_t)d;
    float *w = bench_floats(4 * dd);
    int i;
    memset(&s, 0, sizeof s);
    s.mha.n = 1, s.mha.lq = s.mha.lk = l, s.mha.d = d, s.mha.heads = heads, s.mha.causal = 0;
    s.name = name, s.run = run_mha;
    /* the four projections and the two products of every head */
    s.flop = 2.0 * l * 4.0 * (double)dd + 2.0 * 2.0 * l * (double)l * d;
    s.x = bench_floats((size_t)l * (size_t)d), s.w = bench_floats(4 * dd), s.bias = bench_floats(4 * (size_t)d);
    s.y = bench_floats((size_t)l * (size_t)d), s.scratch = bench_floats(axrt_mha_scratch_elems(&s.mha));
    for (i = 0; i < 4; i++) axrt_pack_dense_f32(w + i * dd, s.w + i * dd, (size_t)d, (size_t)d);
    free(w);
    return s;
}

/* The best per-thread CPU time of one call, in ns, over about `seconds`. */
static double best_ns(const shape *s, double seconds)
{
    const double until = thread_ns() + seconds * 1e9;
    double best = 1e300;
    int runs = 0;
    s->run(s); /* warm-up */
    while (runs < 3 || thread_ns() < until) {
        const double t0 = thread_ns();
        s->run(s);
        const double t = thread_ns() - t0;
        if (t < best) best = t;
        runs++;
    }
    return best;
}

int main(int argc, char **argv)
{
    const double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    shape shapes[40];
    int n = 0, i;
    double peak;
    shapes[n++] = dense("R2 dense 32x784->256", 32, 784, 256);
    shapes[n++] = dense("R2 dense 32x256->10", 32, 256, 10);
    shapes[n++] = dense("R4 q/k/v/out 128x768->768", 128, 768, 768);
    shapes[n++] = dense("R4 linear1 128x768->3072", 128, 768, 3072);
    shapes[n++] = dense("R4 linear2 128x3072->768", 128, 3072, 768);
    shapes[n++] = mha("R4 attention 128x768/12", 128, 768, 12);
    shapes[n++] = conv("R3 conv 3x3 56x56x64", 56, 64, 64, 3, 1, 1);
    shapes[n++] = conv("RN18 stem 7x7/2 64x64x3", 64, 3, 64, 7, 2, 3);
    shapes[n++] = conv("RN18 3x3 16x16x64", 16, 64, 64, 3, 1, 1);
    shapes[n++] = conv("RN18 3x3/2 16x16x64->128", 16, 64, 128, 3, 2, 1);
    shapes[n++] = conv("RN18 1x1/2 16x16x64->128", 16, 64, 128, 1, 2, 0);
    shapes[n++] = conv("RN18 3x3 8x8x128", 8, 128, 128, 3, 1, 1);
    shapes[n++] = conv("RN18 3x3 4x4x256", 4, 256, 256, 3, 1, 1);
    shapes[n++] = conv("RN18 3x3 2x2x512", 2, 512, 512, 3, 1, 1);
    shapes[n++] = gconv("RegNetY 3x3 28x28x104/8", 28, 104, 8, 0);
    shapes[n++] = gconv("  plain kernel", 28, 104, 8, 1);
    shapes[n++] = gconv("RegNetY 3x3 7x7x440/8", 7, 440, 8, 0);
    shapes[n++] = gconv("  plain kernel", 7, 440, 8, 1);
    shapes[n++] = gconv("ResNeXt 3x3 56x56x128/4", 56, 128, 4, 0);
    shapes[n++] = gconv("  plain kernel", 56, 128, 4, 1);
    shapes[n++] = gconv("ResNeXt 3x3 28x28x256/8", 28, 256, 8, 0);
    shapes[n++] = gconv("ResNeXt 3x3 14x14x512/16", 14, 512, 16, 0);
    shapes[n++] = gconv("ResNeXt 3x3 7x7x1024/32", 7, 1024, 32, 0);
    peak = bench_fma_peak_gflops();
    printf("kernels %s, FMA peak %.1f GFLOP/s (best of per-thread CPU time over %.1f s a shape)\n",
           axrt_isa_name(), peak, seconds);
    printf("%-28s %12s %10s %8s\n", "shape", "best us", "GFLOP/s", "% peak");
    for (i = 0; i < n; i++) {
        const double ns = best_ns(&shapes[i], seconds), gflops = shapes[i].flop / ns;
        printf("%-28s %12.1f %10.1f %7.1f%%\n", shapes[i].name, ns / 1e3, gflops, peak > 0 ? 100.0 * gflops / peak : 0.0);
        fflush(stdout);
    }
    return 0;
}
