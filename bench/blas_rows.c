/* blas_rows.c — the "plain C + OpenBLAS" system: every matrix product is one
 * cblas_sgemm (convolutions through im2col), everything else a straight C
 * loop, built with -O3 -march=native -ffast-math.  It is the baseline a
 * careful programmer writes by hand in an afternoon.  Inference BatchNorm is
 * folded into the convolution weights at setup, as deployment code does. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define NEED(ptr) do { if (!(ptr)) return "weights do not match the row"; } while (0)

void bench_blas_threads(int n)
{
    openblas_set_num_threads(n);
}

/* The build, and the core whose kernels it runs (OPENBLAS_CORETYPE forces one). */
const char *bench_blas_version(void)
{
    static char text[256];
    snprintf(text, sizeof text, "%s, core %s", openblas_get_config(), openblas_get_corename());
    return text;
}

/* y[r, :] = x[r, :] w^T + b, with w [out, in] as PyTorch stores it. */
static void linear(const float *x, const float *w, const float *b, float *y, int rows, int in, int out)
{
    for (int r = 0; r < rows; r++) memcpy(y + (size_t)r * out, b, (size_t)out * sizeof *y);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f, x, in, w, in, 1.0f, y, out);
}

static void relu(float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

static void gelu(float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = 0.5f * y[i] * (1.0f + erff(y[i] * 0.70710678f));
}

static void softmax_rows(const float *x, float *y, int rows, int n)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n, max = xr[0], sum = 0.0f;
        for (int i = 1; i < n; i++) max = xr[i] > max ? xr[i] : max;
        for (int i = 0; i < n; i++) sum += yr[i] = expf(xr[i] - max);
        float inv = 1.0f / sum;
        for (int i = 0; i < n; i++) yr[i] *= inv;
    }
}

/* y = LayerNorm(x + residual) (residual may be NULL), eps 1e-5, over rows of d. */
static void layernorm_rows(const float *x, const float *residual, const float *w, const float *b, float *y,
                           int rows, int d)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * d, *rr = residual ? residual + (size_t)r * d : NULL;
        float *yr = y + (size_t)r * d, mean = 0.0f, var = 0.0f;
        for (int i = 0; i < d; i++) mean += yr[i] = xr[i] + (rr ? rr[i] : 0.0f);
        mean /= (float)d;
        for (int i = 0; i < d; i++) var += (yr[i] - mean) * (yr[i] - mean);
        float inv = 1.0f / sqrtf(var / (float)d + 1e-5f);
        for (int i = 0; i < d; i++) yr[i] = (yr[i] - mean) * inv * w[i] + b[i];
    }
}

/* ---- R1, R2: Dense(784 => 256, relu) -> Dense(256 => 10) -> softmax ---- */

typedef struct mlp_row {
    const float *w0, *b0, *w1, *b1, *x;
    float *hidden, *logits, *y;
    int batch;
} mlp_row;

static mlp_row mlp1 = {.batch = 1}, mlp32 = {.batch = 32};

static const char *mlp_setup(mlp_row *m, const bench_tensors *w, const float *x, float *y)
{
    NEED(m->w0 = bench_tensor(w, "0.weight", 256 * 784));
    NEED(m->b0 = bench_tensor(w, "0.bias", 256));
    NEED(m->w1 = bench_tensor(w, "1.weight", 10 * 256));
    NEED(m->b1 = bench_tensor(w, "1.bias", 10));
    m->x = x;
    m->y = y;
    m->hidden = bench_floats((size_t)m->batch * 256);
    m->logits = bench_floats((size_t)m->batch * 10);
    return NULL;
}

static void mlp_run(const mlp_row *m)
{
    linear(m->x, m->w0, m->b0, m->hidden, m->batch, 784, 256);
    relu(m->hidden, (size_t)m->batch * 256);
    linear(m->hidden, m->w1, m->b1, m->logits, m->batch, 256, 10);
    softmax_rows(m->logits, m->y, m->batch, 10);
}

static const char *setup_r1(const bench_tensors *w, const float *x, float *y) { return mlp_setup(&mlp1, w, x, y); }
static const char *setup_r2(const bench_tensors *w, const float *x, float *y) { return mlp_setup(&mlp32, w, x, y); }
static void run_r1(void) { mlp_run(&mlp1); }
static void run_r2(void) { mlp_run(&mlp32); }

/* ---- R3: ResNet basic block, 3x3 convolutions 64 => 64 on 56x56 NHWC ---- */

enum { IMG = 56, CH = 64, KS = 3, PIXELS = IMG * IMG, PATCH = KS * KS * CH };

typedef struct conv_bn {
    float *w;     /* [CH][KS][KS][CH]: output channel, then the im2col column order */
    float *bias;  /* the folded BatchNorm shift */
} conv_bn;

static struct {
    conv_bn c1, c2;
    const float *x;
    float *cols, *h, *y;
} res;

/* Folds BatchNorm `bn` into conv weights `conv` [o][c][kh][kw], reordered to [o][kh][kw][c]. */
static const char *fold_conv_bn(conv_bn *f, const bench_tensors *w, const char *conv, const char *bn)
{
    const float *cw, *g, *beta, *mean, *var;
    NEED(cw = bench_param(w, conv, "weight", CH * PATCH));
    NEED(g = bench_param(w, bn, "weight", CH));
    NEED(beta = bench_param(w, bn, "bias", CH));
    NEED(mean = bench_param(w, bn, "running_mean", CH));
    NEED(var = bench_param(w, bn, "running_var", CH));
    f->w = bench_floats(CH * PATCH);
    f->bias = bench_floats(CH);
    for (int o = 0; o < CH; o++) {
        float scale = g[o] / sqrtf(var[o] + 1e-5f);
        f->bias[o] = beta[o] - mean[o] * scale;
        for (int c = 0; c < CH; c++)
            for (int k = 0; k < KS * KS; k++) f->w[(o * KS * KS + k) * CH + c] = cw[(o * CH + c) * KS * KS + k] * scale;
    }
    return NULL;
}

/* cols[pixel][kh][kw][c] = x at (pixel + (kh-1, kw-1)), zero outside (pad 1). */
static void im2col_3x3(const float *x, float *cols)
{
    for (int oy = 0; oy < IMG; oy++)
        for (int ox = 0; ox < IMG; ox++)
            for (int kh = 0; kh < KS; kh++)
                for (int kw = 0; kw < KS; kw++) {
                    int iy = oy + kh - 1, ix = ox + kw - 1;
                    float *dst = cols + ((size_t)(oy * IMG + ox) * KS * KS + kh * KS + kw) * CH;
                    if (iy < 0 || iy >= IMG || ix < 0 || ix >= IMG) memset(dst, 0, CH * sizeof *dst);
                    else memcpy(dst, x + (size_t)(iy * IMG + ix) * CH, CH * sizeof *dst);
                }
}

/* y = relu(conv(x) + bias (+ residual)); residual may be NULL. */
static void conv_bn_relu(const conv_bn *f, const float *x, const float *residual, float *y)
{
    im2col_3x3(x, res.cols);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, PIXELS, CH, PATCH, 1.0f, res.cols, PATCH, f->w, PATCH,
                0.0f, y, CH);
    for (int p = 0; p < PIXELS; p++)
        for (int c = 0; c < CH; c++) {
            float v = y[p * CH + c] + f->bias[c] + (residual ? residual[p * CH + c] : 0.0f);
            y[p * CH + c] = v > 0.0f ? v : 0.0f;
        }
}

static const char *setup_r3(const bench_tensors *w, const float *x, float *y)
{
    const char *err = fold_conv_bn(&res.c1, w, "conv1", "bn1");
    if (!err) err = fold_conv_bn(&res.c2, w, "conv2", "bn2");
    res.x = x;
    res.y = y;
    res.cols = bench_floats((size_t)PIXELS * PATCH);
    res.h = bench_floats((size_t)PIXELS * CH);
    return err;
}

static void run_r3(void)
{
    conv_bn_relu(&res.c1, res.x, NULL, res.h);
    conv_bn_relu(&res.c2, res.h, res.x, res.y);
}

/* ---- R4: BERT-base encoder layer (post-LN), sequence 128 ---- */

enum { SEQ = 128, D = 768, HEADS = 12, HD = D / HEADS, FF = 3072 };

static struct {
    const float *in_w, *in_b, *out_w, *out_b, *w1, *b1, *w2, *b2, *n1w, *n1b, *n2w, *n2b, *x;
    float *qkv, *scores, *ctx, *attn, *h, *ff, *ff2, *y;
} bert;

static const char *setup_r4(const bench_tensors *w, const float *x, float *y)
{
    NEED(bert.in_w = bench_tensor(w, "self_attn.in_proj_weight", 3 * D * D));
    NEED(bert.in_b = bench_tensor(w, "self_attn.in_proj_bias", 3 * D));
    NEED(bert.out_w = bench_tensor(w, "self_attn.out_proj.weight", D * D));
    NEED(bert.out_b = bench_tensor(w, "self_attn.out_proj.bias", D));
    NEED(bert.w1 = bench_tensor(w, "linear1.weight", FF * D));
    NEED(bert.b1 = bench_tensor(w, "linear1.bias", FF));
    NEED(bert.w2 = bench_tensor(w, "linear2.weight", D * FF));
    NEED(bert.b2 = bench_tensor(w, "linear2.bias", D));
    NEED(bert.n1w = bench_tensor(w, "norm1.weight", D));
    NEED(bert.n1b = bench_tensor(w, "norm1.bias", D));
    NEED(bert.n2w = bench_tensor(w, "norm2.weight", D));
    NEED(bert.n2b = bench_tensor(w, "norm2.bias", D));
    bert.x = x;
    bert.y = y;
    bert.qkv = bench_floats(SEQ * 3 * D);
    bert.scores = bench_floats(SEQ * SEQ);
    bert.ctx = bench_floats(SEQ * D);
    bert.attn = bench_floats(SEQ * D);
    bert.h = bench_floats(SEQ * D);
    bert.ff = bench_floats(SEQ * FF);
    bert.ff2 = bench_floats(SEQ * D);
    return NULL;
}

/* ctx[:, head] = softmax(q k^T / sqrt(HD)) v for each head, q k v read from qkv. */
static void attention_heads(void)
{
    for (int hd = 0; hd < HEADS; hd++) {
        const float *q = bert.qkv + hd * HD, *k = q + D, *v = q + 2 * D;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, SEQ, SEQ, HD, 1.0f / sqrtf((float)HD), q, 3 * D, k,
                    3 * D, 0.0f, bert.scores, SEQ);
        softmax_rows(bert.scores, bert.scores, SEQ, SEQ);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, SEQ, HD, SEQ, 1.0f, bert.scores, SEQ, v, 3 * D, 0.0f,
                    bert.ctx + hd * HD, D);
    }
}

static void run_r4(void)
{
    linear(bert.x, bert.in_w, bert.in_b, bert.qkv, SEQ, D, 3 * D);
    attention_heads();
    linear(bert.ctx, bert.out_w, bert.out_b, bert.attn, SEQ, D, D);
    layernorm_rows(bert.attn, bert.x, bert.n1w, bert.n1b, bert.h, SEQ, D);
    linear(bert.h, bert.w1, bert.b1, bert.ff, SEQ, D, FF);
    gelu(bert.ff, (size_t)SEQ * FF);
    linear(bert.ff, bert.w2, bert.b2, bert.ff2, SEQ, FF, D);
    layernorm_rows(bert.ff2, bert.h, bert.n2w, bert.n2b, bert.y, SEQ, D);
}

/* ---- R5: LayerNorm(768) over 32 rows; R6: softmax over 10000, 32 rows ---- */

static struct { const float *w, *b, *x; float *y; } ln;
static struct { const float *x; float *y; } sm;

static const char *setup_r5(const bench_tensors *w, const float *x, float *y)
{
    NEED(ln.w = bench_tensor(w, "0.weight", D));
    NEED(ln.b = bench_tensor(w, "0.bias", D));
    ln.x = x;
    ln.y = y;
    return NULL;
}

static void run_r5(void) { layernorm_rows(ln.x, NULL, ln.w, ln.b, ln.y, 32, D); }

static const char *setup_r6(const bench_tensors *w, const float *x, float *y)
{
    (void)w;
    sm.x = x;
    sm.y = y;
    return NULL;
}

static void run_r6(void) { softmax_rows(sm.x, sm.y, 32, 10000); }

const bench_impl bench_blas_rows[] = {
    {"R1", "openblas", setup_r1, run_r1}, {"R2", "openblas", setup_r2, run_r2},
    {"R3", "openblas", setup_r3, run_r3}, {"R4", "openblas", setup_r4, run_r4},
    {"R5", "openblas", setup_r5, run_r5}, {"R6", "openblas", setup_r6, run_r6},
    {0, 0, 0, 0},
};
