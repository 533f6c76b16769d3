/* kernel_rates.c — `make bench-kernels`: libaxrt's GEMM-like kernels on the
 * shapes of rows R2, R3, R4 and ResNet-18 (bench/gen_models.py's M2,
 * examples/resnet18.ax), and the grouped convs of RegNet-Y-400MF (8
 * channels a group) and ResNeXt-50 32x4d (4 to 32), each also through the
 * plain conv kernel they ran on before axrt_conv2d_grouped_f32, then
 * ResNeXt's 1x1 convs (most of its time), then the depthwise convs of R7,
 * MobileNetV2 and EfficientNet-B0, then projections whose last panel is
 * narrow (24 and 40 outputs), R5's LayerNorm and a few elementwise shapes
 * (in Gelem/s: an element counted as a flop), and bare reads of two
 * matrix-vector products' weights (their bound, in GB/s), one thread, each as a share of the FMA peak that
 * limits.c measures (AXRT_ISA=avx2: the AVX2 kernels against AVX2's peak,
 * on any machine).  Times are wall time, the best of many runs (a run: one
 * call, or a batch of calls of at least 200 us for short ones): on a shared
 * machine a run that is preempted is dropped as slower.  Every buffer is
 * padded with 64 KiB that are written, so that a kernel's prefetches past
 * the end of a small buffer land on pages that exist (a prefetch of a page
 * never touched costs a page walk each time, which timed 16 x 16 tiles at
 * a third of their speed).
 * A shape runs in rounds, each rated against an FMA peak probe run just
 * before it (the clock of a shared virtual machine moves with the host's
 * load); a line gives the best round's share of the peak and the median
 * round's.
 * Usage: kernel_rates [SECONDS per shape, default 1] [NAME-FILTER] [cold]:
 * with a filter, only the shapes whose name contains it ("" for all); with
 * cold, every timed call runs alone after the caches were flushed, so that
 * its weights come from memory as in a model whose weights exceed the
 * last-level cache (a late layer of MobileNetV2, each layer of MiniLM). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axrt.h"
#include "harness.h"

#define PAD_FLOATS 16384

/* The clock: monotonic wall time.  Per-thread CPU time (used before)
   read whole runs of 200 us and more on this VM as 0 or as a fraction of
   their time, and a best-of-runs picks exactly those; wall time only ever
   reads a run long (preempted), which the best of many runs drops. */
static double thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* limits.c's clock: the same, so that the peak probe and the kernels are
   timed alike. */
double bench_now_ns(void) { return thread_ns(); }

/* count floats in [-0.5, 0.5) (and PAD_FLOATS more), 64-byte aligned,
 * from a linear congruential generator: a hash of the index, period 1000,
 * made rows of x and of a weight repeat each other (768 r and 768 j alike
 * mod 1000), and attention's scores came out in the hundreds, most of
 * softmax's exps subnormal, a microcode assist each: the attention rows
 * rated the assists (R4's at 66 % of the peak, 15 % of it in its softmax;
 * in the model 0.3 %). */
float *bench_floats(size_t count)
{
    const size_t bytes = ((count + PAD_FLOATS) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    static unsigned seed = 12345u; /* one sequence over all calls: no two buffers alike */
    size_t i;
    if (!p) {
        fprintf(stderr, "kernel_rates: out of memory\n");
        exit(1);
    }
    for (i = 0; i < count + PAD_FLOATS; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffffu) / 65536.0f - 0.5f;
    }
    return p;
}

/* One shape's kernel call, prepared. */
typedef struct shape {
    const char *name;
    double flop;
    void (*run)(const struct shape *s);
    axrt_conv2d_params conv, dw, project; /* dw, project: an inverted-residual block's */
    axrt_mha_params mha;
    size_t rows, in, out;
    axrt_act act;
    void (*unary)(const float *x, float *y, size_t n); /* an elementwise shape's function */
    float *x, *w, *bias, *y, *scratch, *w_dw, *w_project;
    float *mid, *dw_out; /* a stem chain's tensors between its kernels, unfused (stem_chain) */
} shape;


static void run_dense(const shape *s)
{
    axrt_dense_packed_const_ep_f32(s->x, s->w, s->bias, NULL, s->act, s->y, s->rows, s->in, s->out);
}

static void run_conv(const shape *s)
{
    axrt_conv2d_packed_ep_f32(s->x, s->w, s->bias, NULL, s->act, s->y, &s->conv);
}

static void run_mha(const shape *s)
{
    const size_t d = (size_t)s->mha.d;
    axrt_mha_flash_f32(s->x, s->x, s->x, NULL, s->w, s->bias, s->w + 3 * d * d, s->bias + 3 * d, s->y, s->scratch,
                       &s->mha, AXRT_MHA_PACKED_CONST);
}

static void run_matmul(const shape *s)
{
    axrt_matmul_f32(s->x, NULL, s->w, NULL, s->y, NULL, 0, s->rows, s->in, s->out);
}

/* y [rows, out] = x [rows, in] . w [in, out], both row-major (attention's
 * scores q k^T, k transposed, and its product with v). */
static shape matmul(const char *name, size_t rows, size_t in, size_t out)
{
    shape s;
    memset(&s, 0, sizeof s);
    s.name = name, s.run = run_matmul, s.rows = rows, s.in = in, s.out = out;
    s.flop = 2.0 * (double)rows * (double)in * (double)out;
    s.x = bench_floats(rows * in), s.w = bench_floats(in * out), s.y = bench_floats(rows * out);
    return s;
}

/* A packed dense layer with activation act (the GEMM epilogue's). */
static shape dense_act(const char *name, size_t rows, size_t in, size_t out, axrt_act act)
{
    shape s;
    float *w = bench_floats(in * out);
    memset(&s, 0, sizeof s);
    s.name = name, s.run = run_dense, s.rows = rows, s.in = in, s.out = out, s.act = act;
    s.flop = 2.0 * (double)rows * (double)in * (double)out;
    s.x = bench_floats(rows * in), s.w = bench_floats(in * out), s.bias = bench_floats(out);
    s.y = bench_floats(rows * out);
    axrt_pack_dense_f32(w, s.w, in, out);
    free(w);
    return s;
}

static shape dense(const char *name, size_t rows, size_t in, size_t out)
{
    return dense_act(name, rows, in, out, AXRT_ACT_RELU);
}

/* OR of n 32-bit words, READ_BLOCK at a time (a constant trip count, so
   that -O2's cheap vectoriser takes it, one clone per vector width): a
   bare read, the bound of a matrix-vector product streaming its weight. */
enum { READ_BLOCK = 1024 };
#if defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
__attribute__((noinline)) static unsigned read_block(const unsigned *restrict p)
{
    unsigned acc = 0;
    for (size_t i = 0; i < READ_BLOCK; i++) acc |= p[i];
    return acc;
}

static void run_read(const shape *s)
{
    const size_t words = s->in * s->out;
    const unsigned *p = (const unsigned *)(const void *)s->w;
    unsigned acc = 0;
    size_t i;
    for (i = 0; i + READ_BLOCK <= words; i += READ_BLOCK) acc |= read_block(p + i);
    for (; i < words; i++) acc |= p[i];
    *(volatile unsigned *)(void *)s->y = acc;
}

/* The bytes of a dense in -> out layer's weight read and nothing else
   (flop 0: printed as GB/s). */
static shape weight_read(const char *name, size_t in, size_t out)
{
    shape s;
    memset(&s, 0, sizeof s);
    s.name = name, s.run = run_read, s.in = in, s.out = out;
    s.w = bench_floats(in * out), s.y = bench_floats(1);
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
    s.name = name, s.run = run_conv, s.act = AXRT_ACT_RELU;
    s.flop = 2.0 * p->oh * p->ow * (double)weights;
    s.x = bench_floats((size_t)hw * (size_t)hw * (size_t)c), s.w = bench_floats(weights);
    s.bias = bench_floats((size_t)oc), s.y = bench_floats((size_t)p->oh * (size_t)p->ow * (size_t)oc);
    w = bench_floats(weights);
    axrt_pack_conv2d_f32(w, s.w, p);
    free(w);
    return s;
}

static void run_unary(const shape *s) { s->unary(s->x, s->y, s->rows); }

/* An elementwise function (axrt_swish_f32, axrt_gelu_f32) over n elements,
   in [-8, 8) as activations before it are (bench_floats' [-0.5, 0.5)
   scaled): "GFLOP/s" counts one an element, so 1 / it is ns an element. */
static shape unary(const char *name, size_t n, void (*fn)(const float *x, float *y, size_t n))
{
    shape s;
    size_t i;
    memset(&s, 0, sizeof s);
    s.name = name, s.run = run_unary, s.unary = fn, s.rows = n, s.flop = (double)n;
    s.x = bench_floats(n), s.y = bench_floats(n);
    for (i = 0; i < n; i++) s.x[i] *= 16.0f;
    return s;
}

static void run_layernorm(const shape *s)
{
    axrt_layernorm_f32(s->x, s->w, s->bias, s->y, s->rows, s->in, 1e-5f);
}

/* R5's LayerNorm of rows x d, rated like the elementwise shapes (an element
   a flop: Gelem/s), into its own y or, in_place, back into x, whose lines the
   statistics pass has just brought to L1 (the cost of storing to lines not in
   L1, which AVX2's loop prefetches). */
static shape layernorm(const char *name, size_t rows, size_t d, int in_place)
{
    shape s;
    memset(&s, 0, sizeof s);
    s.name = name, s.run = run_layernorm, s.rows = rows, s.in = d, s.flop = (double)(rows * d);
    s.x = bench_floats(rows * d), s.w = bench_floats(d), s.bias = bench_floats(d);
    s.y = in_place ? s.x : bench_floats(rows * d);
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

static void run_depthwise(const shape *s)
{
    axrt_conv2d_depthwise_f32(s->x, s->w, s->bias, NULL, s->act, s->y, &s->conv);
}

/* A depthwise conv of c channels, k x k, padding k / 2, with act (ReLU6 as
   MobileNetV2's; none for EfficientNet-B0's, whose swish is a pass over the
   finished row): one multiply-add a tap and output. */
static shape depthwise(const char *name, int hw, int c, int k, int stride, axrt_act act)
{
    shape s = conv(name, hw, 1, c, k, stride, k / 2);
    axrt_conv2d_params *p = &s.conv;
    const size_t weights = (size_t)c * (size_t)k * (size_t)k;
    float *w = bench_floats(weights);
    p->c = c, p->groups = c;
    s.run = run_depthwise, s.act = act;
    s.flop = 2.0 * p->oh * p->ow * (double)weights;
    free(s.x);
    s.x = bench_floats((size_t)hw * (size_t)hw * (size_t)c);
    axrt_pack_depthwise_f32(w, s.w, p);
    free(w);
    return s;
}

static void run_block(const shape *s)
{
    axrt_expand_dw_project_f32(s->x, s->w, s->bias, AXRT_ACT_RELU6, s->w_dw, s->bias, AXRT_ACT_RELU6, s->w_project,
                               s->bias, NULL, AXRT_ACT_NONE, s->y, s->scratch, &s->conv, &s->dw, &s->project);
}

/* MobileNetV2's inverted-residual block on an hw x hw x c input: a 1x1
 * expansion to e channels, a 3x3 depthwise conv of `stride`, a 1x1
 * projection to oc, fused (axrt_expand_dw_project_f32). */
static shape block(const char *name, int hw, int c, int e, int oc, int stride)
{
    shape s = conv(name, hw, c, e, 1, 1, 0);
    axrt_conv2d_params *d = &s.dw, *q = &s.project;
    const int ohw = (hw + 2 - 3) / stride + 1;
    float *w = bench_floats((size_t)e * 9 + (size_t)e * (size_t)oc);
    *d = s.conv, d->c = d->oc = d->groups = e, d->kh = d->kw = 3, d->stride_h = d->stride_w = stride;
    d->pad_top = d->pad_left = 1, d->oh = d->ow = ohw;
    *q = s.conv, q->h = q->w = q->oh = q->ow = ohw, q->c = e, q->oc = oc;
    s.run = run_block;
    s.flop += 2.0 * ohw * ohw * e * (9.0 + oc);
    s.w_dw = bench_floats((size_t)e * 9), s.w_project = bench_floats((size_t)e * (size_t)oc);
    axrt_pack_depthwise_f32(w, s.w_dw, d);
    axrt_pack_conv2d_f32(w + (size_t)e * 9, s.w_project, q);
    free(w), free(s.bias), free(s.y);
    s.bias = bench_floats((size_t)e), s.y = bench_floats((size_t)ohw * (size_t)ohw * (size_t)oc);
    s.scratch = bench_floats(axrt_expand_dw_project_scratch_elems(d));
    return s;
}

/* A stem chain one kernel after the other through whole tensors (mid
 * NULL: fused, axrt_expand_depthwise_f32 or, with a projection,
 * axrt_expand_dw_project_f32). */
static void run_stem_chain(const shape *s)
{
    const int project = s->w_project != NULL;
    if (!s->mid && project)
        axrt_expand_dw_project_f32(s->x, s->w, s->bias, s->act, s->w_dw, s->bias, s->act, s->w_project, s->bias,
                                   NULL, AXRT_ACT_NONE, s->y, s->scratch, &s->conv, &s->dw, &s->project);
    else if (!s->mid)
        axrt_expand_depthwise_f32(s->x, s->w, s->bias, s->act, s->w_dw, s->bias, s->act, s->y, s->scratch, &s->conv,
                                  &s->dw);
    if (!s->mid)
        return;
    axrt_conv2d_packed_ep_f32(s->x, s->w, s->bias, NULL, s->act, s->mid, &s->conv);
    axrt_conv2d_depthwise_f32(s->mid, s->w_dw, s->bias, NULL, s->act, project ? s->dw_out : s->y, &s->dw);
    if (project)
        axrt_conv2d_packed_ep_f32(s->dw_out, s->w_project, s->bias, NULL, AXRT_ACT_NONE, s->y, &s->project);
}

/* MobileNetV2's first layers (stem 3x3/2 224x224x3->32, depthwise 3x3
 * 112x112x32, projection 1x1 ->oc; act ReLU6) or EfficientNet-B0's (the
 * stem and the depthwise conv with swish; oc 0: no projection), fused or
 * one kernel after the other. */
static shape stem_chain(const char *name, axrt_act act, int oc, int fused)
{
    shape s = conv(name, 224, 3, 32, 3, 2, 1);
    axrt_conv2d_params *d = &s.dw, *q = &s.project;
    const size_t pixels = 112 * 112;
    s.run = run_stem_chain, s.act = act;
    *d = s.conv, d->h = d->w = 112, d->c = d->groups = 32, d->stride_h = d->stride_w = 1;
    *q = *d, q->kh = q->kw = 1, q->pad_top = q->pad_left = 0, q->groups = 1, q->oc = oc;
    s.flop += 2.0 * pixels * 32 * (9.0 + oc);
    s.w_dw = bench_floats(32 * 9); /* (weights as bench_floats fills them: only the time counts) */
    if (oc) {
        s.w_project = bench_floats(32 * (size_t)oc);
        free(s.y), s.y = bench_floats(pixels * (size_t)oc);
    }
    free(s.bias), s.bias = bench_floats(32);
    if (fused)
        s.scratch = bench_floats(oc ? axrt_expand_dw_project_scratch_elems(d) : axrt_expand_depthwise_scratch_elems(d));
    else
        s.mid = bench_floats(pixels * 32), s.dw_out = bench_floats(pixels * 32);
    return s;
}

/* Self-attention as a compiled model runs it (axrt_mha_flash_f32, weights
 * packed and constant), x at unit variance (a layer norm's output) and the
 * weights at a trained layer's scale (standard deviation 1 / sqrt(d)):
 * bench_floats' values have a standard deviation of 0.29. */
static shape mha(const char *name, int l, int d, int heads)
{
    shape s;
    const size_t dd = (size_t)d * (size_t)d;
    float *w = bench_floats(4 * dd);
    size_t j;
    int i;
    memset(&s, 0, sizeof s);
    s.mha.n = 1, s.mha.lq = s.mha.lk = l, s.mha.d = d, s.mha.heads = heads, s.mha.causal = 0;
    s.name = name, s.run = run_mha;
    /* the four projections and the two products of every head */
    s.flop = 2.0 * l * 4.0 * (double)dd + 2.0 * 2.0 * l * (double)l * d;
    s.x = bench_floats((size_t)l * (size_t)d), s.w = bench_floats(4 * dd), s.bias = bench_floats(4 * (size_t)d);
    s.y = bench_floats((size_t)l * (size_t)d), s.scratch = bench_floats(axrt_mha_flash_scratch_elems(&s.mha));
    for (j = 0; j < 4 * dd; j++) w[j] *= 3.46f / sqrtf((float)d);
    for (j = 0; j < (size_t)l * (size_t)d; j++) s.x[j] *= 3.46f;
    for (i = 0; i < 4; i++) axrt_pack_dense_f32(w + i * dd, s.w + i * dd, (size_t)d, (size_t)d);
    free(w);
    return s;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rounds a shape is timed in, each after a short FMA peak probe: the
 * clock of a shared (virtual) machine moves with the host's load, so each
 * round's best time is rated against the peak measured next to it. */
#define ROUNDS 5
#define ROUND_PEAK_TRIALS 30

/* A timed run is at least this long (ns): calls of a few microseconds
 * (the depthwise shapes) are timed in batches. */
#define MIN_RUN_NS 200e3

/* Calls a timed run makes: enough for MIN_RUN_NS by the warm-up's time. */
static int calls_per_run(const shape *s)
{
    const double t0 = thread_ns();
    double t;
    int calls = 0;
    do {
        s->run(s);
        calls++;
        t = thread_ns() - t0;
    } while (t < MIN_RUN_NS && calls < 100000);
    return calls;
}

/* A shape's best time of one call in ns (over about
 * `seconds`, at least 3 runs a round), the best round's share of the peak
 * measured next to it and the median round's. */
/* With cold set, every timed call starts after evict_caches() has walked
 * a buffer larger than the last-level cache: the weights then come from
 * memory, as a late layer's do inside a model whose weights exceed the
 * caches (MobileNetV2's 7x7 layers). */
static int cold;
#define EVICT_BYTES (64u << 20)
static void evict_caches(void)
{
    static volatile unsigned char *buf;
    size_t i;
    if (!buf) buf = calloc(EVICT_BYTES, 1);
    if (!buf) return;
    for (i = 0; i < EVICT_BYTES; i += 64) buf[i]++;
}

static void time_shape(const shape *s, double seconds, double *best, double *top, double *median)
{
    double shares[ROUNDS];
    const int calls = calls_per_run(s); /* also the warm-up */
    int round, i;
    *best = 1e300;
    for (round = 0; round < ROUNDS; round++) {
        const double peak = bench_fma_peak_trials_gflops(ROUND_PEAK_TRIALS);
        const double until = thread_ns() + seconds * 1e9 / ROUNDS;
        double round_best = 1e300;
        int runs = 0;
        s->run(s);
        while (runs < 3 || thread_ns() < until) {
            if (cold) evict_caches();
            const double t0 = thread_ns();
            for (i = 0; i < (cold ? 1 : calls); i++) s->run(s);
            const double t = (thread_ns() - t0) / (cold ? 1 : calls);
            if (t < round_best) round_best = t;
            runs++;
        }
        shares[round] = peak > 0 ? s->flop / round_best / peak : 0;
        if (round_best < *best) *best = round_best;
    }
    qsort(shares, ROUNDS, sizeof shares[0], by_value);
    *top = shares[ROUNDS - 1], *median = shares[ROUNDS / 2];
}

/* MobileNetV2's and EfficientNet-B0's layers after the shapes before n:
 * the stem and 1x1 convs on few channels, whose tile set-up is a large share,
 * fused inverted-residual blocks, and depthwise convs.  Returns the count. */
/* Projections whose outputs end in a narrow panel (24 = 16 + 8, 40 = 2 x 16
 * + 8: the AVX-512 tile's 8-wide last panel) next to whole panels (16, 32,
 * 48) on the same pixels and channels, EfficientNet-B0's 56x56x96->24 and
 * 28x28x144->40 as dense calls, and a one-row dense call with such a tail
 * (MobileNetV2's classifier, 1000 = 62 x 16 + 8). */
static int narrow_panel_shapes(shape *shapes, int n)
{
    shapes[n++] = dense("tail dense 3136x144->16", 3136, 144, 16);
    shapes[n++] = dense("tail dense 3136x144->24", 3136, 144, 24);
    shapes[n++] = dense("tail dense 3136x144->32", 3136, 144, 32);
    shapes[n++] = dense("tail dense 3136x144->40", 3136, 144, 40);
    shapes[n++] = dense("tail dense 784x240->40", 784, 240, 40);
    shapes[n++] = dense("tail dense 784x240->48", 784, 240, 48);
    shapes[n++] = dense("tail dense 3136x96->24", 3136, 96, 24);
    shapes[n++] = dense("tail dense 784x144->40", 784, 144, 40);
    shapes[n++] = conv("tail conv 3x3 28x28x64->24", 28, 64, 24, 3, 1, 1);
    shapes[n++] = conv("tail conv 3x3 28x28x64->32", 28, 64, 32, 3, 1, 1);
    shapes[n++] = dense("tail dense 1x1280->1000", 1, 1280, 1000);
    shapes[n++] = weight_read("  its weight read (5.1 MB)", 1280, 1000);
    shapes[n++] = dense("tail dense 1x1280->992", 1, 1280, 992);
    return n;
}

static int mobile_shapes(shape *shapes, int n)
{
    shapes[n++] = conv("M2 stem 3x3/2 224x224x3->32", 224, 3, 32, 3, 2, 1);
    shapes[n] = conv("M3 stem 3x3/2 +swish", 224, 3, 32, 3, 2, 1), shapes[n++].act = AXRT_ACT_SWISH;
    shapes[n] = conv("M5 stem 3x3/2 ->16 +hardswish", 224, 3, 16, 3, 2, 1), shapes[n++].act = AXRT_ACT_HARDSWISH;
    shapes[n] = conv("M5 1x1 112x112x16->16", 112, 16, 16, 1, 1, 0), shapes[n++].act = AXRT_ACT_NONE;
    shapes[n++] = conv("M5 1x1 112x112x16->64", 112, 16, 64, 1, 1, 0);
    shapes[n] = conv("M5 1x1 56x56x24->72 +hardswish", 56, 24, 72, 1, 1, 0), shapes[n++].act = AXRT_ACT_HARDSWISH;
    shapes[n++] = conv("M2 1x1 112x112x16->96", 112, 16, 96, 1, 1, 0);
    shapes[n++] = conv("M3 1x1 56x56x32->192", 56, 32, 192, 1, 1, 0);
    shapes[n] = conv("M3 1x1 56x56x24->144 +swish", 56, 24, 144, 1, 1, 0), shapes[n++].act = AXRT_ACT_SWISH;
    shapes[n++] = conv("M2 1x1 112x112x32->16", 112, 32, 16, 1, 1, 0);
    shapes[n++] = dense("  as dense 12544x32->16", 12544, 32, 16);
    shapes[n++] = conv("M2 1x1 56x56x24->144", 56, 24, 144, 1, 1, 0);
    shapes[n++] = dense("  as dense 3136x24->144", 3136, 24, 144);
    shapes[n++] = stem_chain("M2 stem+dw+1x1, 3 kernels", AXRT_ACT_RELU6, 16, 0);
    shapes[n++] = stem_chain("M2 stem+dw+1x1 fused", AXRT_ACT_RELU6, 16, 1);
    shapes[n++] = stem_chain("M3 stem+dw +swish, 2 kernels", AXRT_ACT_SWISH, 0, 0);
    shapes[n++] = stem_chain("M3 stem+dw +swish fused", AXRT_ACT_SWISH, 0, 1);
    shapes[n++] = block("M2 block 112x112x16 96 /2 24", 112, 16, 96, 24, 2);
    shapes[n++] = block("M2 block 56x56x24 144 24", 56, 24, 144, 24, 1);
    shapes[n++] = block("M2 block 28x28x32 192 32", 28, 32, 192, 32, 1);
    shapes[n++] = block("M2 block 14x14x96 576 96", 14, 96, 576, 96, 1);
    shapes[n++] = conv("M3 1x1 28x28x240->40", 28, 240, 40, 1, 1, 0);
    shapes[n++] = conv("M3 1x1 14x14x480->80", 14, 480, 80, 1, 1, 0);
    shapes[n++] = conv("M2 1x1 7x7x160->960", 7, 160, 960, 1, 1, 0);
    shapes[n++] = conv("M2 1x1 7x7x960->160", 7, 960, 160, 1, 1, 0);
    shapes[n++] = conv("M2 1x1 7x7x960->320", 7, 960, 320, 1, 1, 0);
    shapes[n++] = conv("M2 1x1 7x7x320->1280", 7, 320, 1280, 1, 1, 0);
    shapes[n++] = conv("M3 1x1 7x7x192->1152", 7, 192, 1152, 1, 1, 0);
    shapes[n++] = depthwise("R7 dw 3x3 14x14x384", 14, 384, 3, 1, AXRT_ACT_RELU6);
    /* rows that stay in L1 between output rows: the row kernel's own rate */
    shapes[n++] = depthwise("L1 dw 3x3 56x56x16", 56, 16, 3, 1, AXRT_ACT_RELU6);
    shapes[n++] = depthwise("L1 dw 3x3 28x28x32", 28, 32, 3, 1, AXRT_ACT_RELU6);
    shapes[n++] = depthwise("MV2 dw 3x3/2 112x112x96", 112, 96, 3, 2, AXRT_ACT_RELU6);
    shapes[n++] = depthwise("MV2 dw 3x3 56x56x144", 56, 144, 3, 1, AXRT_ACT_RELU6);
    shapes[n++] = depthwise("MV2 dw 3x3/2 28x28x192", 28, 192, 3, 2, AXRT_ACT_RELU6);
    shapes[n++] = depthwise("MV2 dw 3x3 7x7x960", 7, 960, 3, 1, AXRT_ACT_RELU6);
    shapes[n++] = depthwise("EB0 dw 3x3 112x112x32", 112, 32, 3, 1, AXRT_ACT_NONE);
    shapes[n++] = depthwise("  +relu6 (MV2 dw 3x3 112x112x32)", 112, 32, 3, 1, AXRT_ACT_RELU6);
    shapes[n++] = depthwise("  +swish", 112, 32, 3, 1, AXRT_ACT_SWISH);
    shapes[n++] = unary("swish 3584 (L1), Gelem/s", 3584, axrt_swish_f32);
    shapes[n++] = unary("swish 112x112x32, Gelem/s", 112 * 112 * 32, axrt_swish_f32);
    shapes[n++] = depthwise("EB0 dw 5x5/2 56x56x144", 56, 144, 5, 2, AXRT_ACT_NONE);
    shapes[n++] = depthwise("EB0 dw 5x5 28x28x240", 28, 240, 5, 1, AXRT_ACT_NONE);
    shapes[n++] = depthwise("EB0 dw 5x5 14x14x672", 14, 672, 5, 1, AXRT_ACT_NONE);
    shapes[n++] = depthwise("EB0 dw 5x5/2 14x14x672", 14, 672, 5, 2, AXRT_ACT_NONE);
    shapes[n++] = depthwise("EB0 dw 5x5 7x7x1152", 7, 1152, 5, 1, AXRT_ACT_NONE);
    return narrow_panel_shapes(shapes, n);
}

/* The grouped convs of RegNet-Y-400MF and ResNeXt-50 (each also through the
   plain kernel) and ResNeXt's 1x1 convs, from shapes[n]; returns the count. */
static int grouped_shapes(shape *shapes, int n)
{
    shapes[n++] = gconv("RegNetY 3x3 28x28x104/8", 28, 104, 8, 0);
    shapes[n++] = gconv("  plain kernel", 28, 104, 8, 1);
    shapes[n++] = gconv("RegNetY 3x3 7x7x440/8", 7, 440, 8, 0);
    shapes[n++] = gconv("  plain kernel", 7, 440, 8, 1);
    shapes[n++] = gconv("ResNeXt 3x3 56x56x128/4", 56, 128, 4, 0);
    shapes[n++] = gconv("  plain kernel", 56, 128, 4, 1);
    shapes[n++] = gconv("ResNeXt 3x3 28x28x256/8", 28, 256, 8, 0);
    shapes[n++] = gconv("ResNeXt 3x3 14x14x512/16", 14, 512, 16, 0);
    shapes[n++] = gconv("ResNeXt 3x3 7x7x1024/32", 7, 1024, 32, 0);
    shapes[n++] = conv("ResNeXt 1x1 56x56x256->128", 56, 256, 128, 1, 1, 0);
    shapes[n++] = conv("ResNeXt 1x1 56x56x128->256", 56, 128, 256, 1, 1, 0);
    shapes[n++] = conv("ResNeXt 1x1 28x28x512->256", 28, 512, 256, 1, 1, 0);
    shapes[n++] = conv("ResNeXt 1x1 14x14x1024->512", 14, 1024, 512, 1, 1, 0);
    shapes[n++] = conv("ResNeXt 1x1 7x7x1024->2048", 7, 1024, 2048, 1, 1, 0);
    return n;
}

/* The shapes of rows R1, R2, R5, R4 and R3, then ResNet-18's convolutions at 224 x 224
 * (bench/gen_models.py's M1: each distinct layer once) and at 64 x 64
 * (examples/resnet18.ax), then grouped convs, then mobile_shapes.  Returns
 * the count. */
static int all_shapes(shape *shapes)
{
    int n = 0;
    shapes[n++] = dense("R1 dense 1x784->256", 1, 784, 256);
    shapes[n++] = weight_read("  its weight read (802 KB)", 784, 256);
    shapes[n++] = dense("R2 dense 32x784->256", 32, 784, 256);
    shapes[n++] = dense("R2 dense 32x256->10", 32, 256, 10);
    shapes[n++] = layernorm("R5 layernorm 32x768, Gelem/s", 32, 768, 0);
    shapes[n++] = layernorm("  in place, Gelem/s", 32, 768, 1);
    /* where the matrix unit starts to pay (axrt_fast.inc ENGINE_MIN_*:
       AXRT_ISA=avx512 against amx) */
    shapes[n++] = dense("unit edge 32x512->256", 32, 512, 256);
    shapes[n++] = dense("unit edge 32x256->128", 32, 256, 128);
    shapes[n++] = dense("unit edge 64x128->128", 64, 128, 128);
    shapes[n++] = dense("R4 q/k/v/out 128x768->768", 128, 768, 768);
    shapes[n++] = dense("R4 linear1 128x768->3072", 128, 768, 3072);
    shapes[n++] = dense("R4 linear2 128x3072->768", 128, 3072, 768);
    shapes[n++] = dense("M4 q/k/v/out 128x384->384", 128, 384, 384);
    shapes[n++] = dense("M4 linear1 128x384->1536", 128, 384, 1536);
    shapes[n++] = dense_act("  +gelu (M4 linear1)", 128, 384, 1536, AXRT_ACT_GELU);
    shapes[n++] = unary("gelu 3584 (L1), Gelem/s", 3584, axrt_gelu_f32);
    shapes[n++] = dense("M4 linear2 128x1536->384", 128, 1536, 384);
    shapes[n++] = matmul("R4 scores 128x64.64x128", 128, 64, 128);
    shapes[n++] = matmul("R4 probs.v 128x128.128x64", 128, 128, 64);
    shapes[n++] = mha("R4 attention 128x768/12", 128, 768, 12);
    shapes[n++] = matmul("M4 scores 128x32.32x128", 128, 32, 128);
    shapes[n++] = matmul("M4 probs.v 128x128.128x32", 128, 128, 32);
    shapes[n++] = mha("M4 attention 128x384/12", 128, 384, 12);
    shapes[n++] = conv("R3 conv 3x3 56x56x64", 56, 64, 64, 3, 1, 1);
    shapes[n++] = conv("M1 stem 7x7/2 224x224x3", 224, 3, 64, 7, 2, 3);
    shapes[n++] = conv("M1 3x3/2 56x56x64->128", 56, 64, 128, 3, 2, 1);
    shapes[n++] = conv("M1 1x1/2 56x56x64->128", 56, 64, 128, 1, 2, 0);
    shapes[n++] = conv("M1 3x3 28x28x128", 28, 128, 128, 3, 1, 1);
    shapes[n++] = conv("M1 3x3/2 28x28x128->256", 28, 128, 256, 3, 2, 1);
    shapes[n++] = conv("M1 1x1/2 28x28x128->256", 28, 128, 256, 1, 2, 0);
    shapes[n++] = conv("M1 3x3 14x14x256", 14, 256, 256, 3, 1, 1);
    shapes[n++] = conv("M1 3x3/2 14x14x256->512", 14, 256, 512, 3, 2, 1);
    shapes[n++] = conv("M1 1x1/2 14x14x256->512", 14, 256, 512, 1, 2, 0);
    shapes[n++] = conv("M1 3x3 7x7x512", 7, 512, 512, 3, 1, 1);
    shapes[n++] = conv("RN18 stem 7x7/2 64x64x3", 64, 3, 64, 7, 2, 3);
    shapes[n++] = conv("RN18 3x3 16x16x64", 16, 64, 64, 3, 1, 1);
    shapes[n++] = conv("RN18 3x3/2 16x16x64->128", 16, 64, 128, 3, 2, 1);
    shapes[n++] = conv("RN18 1x1/2 16x16x64->128", 16, 64, 128, 1, 2, 0);
    shapes[n++] = conv("RN18 3x3 8x8x128", 8, 128, 128, 3, 1, 1);
    shapes[n++] = conv("RN18 3x3 4x4x256", 4, 256, 256, 3, 1, 1);
    shapes[n++] = conv("RN18 3x3 2x2x512", 2, 512, 512, 3, 1, 1);
    return mobile_shapes(shapes, grouped_shapes(shapes, n));
}

int main(int argc, char **argv)
{
    const double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    const char *filter = argc > 2 ? argv[2] : "";
    cold = argc > 3 && !strcmp(argv[3], "cold");
    static shape shapes[128];
    const int n = all_shapes(shapes);
    const double peak = bench_fma_peak_gflops();
    int i;
    printf("kernels %s, FMA peak %.1f GFLOP/s; wall time over %.1f s a shape in %d rounds, each rated\n"
           "against a peak probe run next to it: the best round's %% of peak and the median round's\n",
           axrt_isa_name(), peak, seconds, ROUNDS);
    printf("%-28s %10s %10s %8s %8s\n", "shape", "best us", "GFLOP/s", "% peak", "median");
    for (i = 0; i < n; i++) {
        double best, top, median;
        if (!strstr(shapes[i].name, filter))
            continue;
        time_shape(&shapes[i], seconds, &best, &top, &median);
        if (shapes[i].flop == 0) /* a bare read */
            printf("%-28s %10.1f %10.1f GB/s\n", shapes[i].name, best / 1e3,
                   4.0 * (double)(shapes[i].in * shapes[i].out) / best);
        else
            printf("%-28s %10.1f %10.1f %7.1f%% %7.1f%%\n", shapes[i].name, best / 1e3, shapes[i].flop / best,
                   100.0 * top, 100.0 * median);
        fflush(stdout);
    }
    return 0;
}
