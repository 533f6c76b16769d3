/* dnnl_rows.c — the oneDNN system (C API, NHWC / row-major tensors): each row
 * is a list of oneDNN primitives created once at setup and executed in order.
 * Linear layers are inner products whose weights oneDNN reorders at setup to
 * the layout it prefers; activations, residual additions and the attention
 * scale ride on post-ops; BERT's attention is two batched strided matmuls
 * with a softmax between.  Inference BatchNorm is folded into the
 * convolution weights at setup, as in the OpenBLAS system. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <dnnl.h>

#include "harness.h"

#define TRY(call)                                                       \
    do {                                                                \
        dnnl_status_t status_ = (call);                                 \
        if (status_ != dnnl_success) return failure(#call, status_);    \
    } while (0)
#define NEED(ptr) do { if (!(ptr)) return "weights do not match the row"; } while (0)
#define MAX_STEPS 12
#define MAX_ARGS 6

typedef struct step {
    dnnl_primitive_t prim;
    int nargs;
    dnnl_exec_arg_t args[MAX_ARGS];
} step;

/* One row: the primitives in execution order. */
typedef struct net {
    step steps[MAX_STEPS];
    int n;
} net;

/* Post-ops of one primitive: an optional residual addition, then an
 * optional eltwise (alg 0 = none) with parameters alpha and beta. */
typedef struct post {
    dnnl_memory_t residual;
    dnnl_alg_kind_t eltwise;
    float alpha, beta;
} post;

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static const char *failure(const char *call, dnnl_status_t status)
{
    static char message[128];
    snprintf(message, sizeof message, "oneDNN status %d from %.60s", (int)status, call);
    return message;
}

/* The instruction set oneDNN's kernels may use here (ONEDNN_MAX_CPU_ISA
   lowers it), as ONEDNN_MAX_CPU_ISA spells it. */
static const char *dnnl_isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "SSE41";
    case dnnl_cpu_isa_avx: return "AVX";
    case dnnl_cpu_isa_avx2: return "AVX2";
    case dnnl_cpu_isa_avx2_vnni: return "AVX2_VNNI";
    case dnnl_cpu_isa_avx512_core: return "AVX512_CORE";
    case dnnl_cpu_isa_avx512_core_vnni: return "AVX512_CORE_VNNI";
    case dnnl_cpu_isa_avx512_core_bf16: return "AVX512_CORE_BF16";
    case dnnl_cpu_isa_avx512_core_amx: return "AVX512_CORE_AMX";
    default: return "other";
    }
}

const char *bench_dnnl_version(void)
{
    static char text[96];
    const dnnl_version_t *v = dnnl_version();
    snprintf(text, sizeof text, "oneDNN %d.%d.%d (%s), ISA %s", v->major, v->minor, v->patch, v->hash,
             dnnl_isa_name(dnnl_get_effective_cpu_isa()));
    return text;
}

static const char *start_engine(void)
{
    if (engine) return NULL;
    TRY(dnnl_engine_create(&engine, dnnl_cpu, 0));
    TRY(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    return NULL;
}

/* Memory of dims in format tag over data (NULL: a fresh zeroed buffer). */
static const char *tensor(dnnl_memory_t *m, int ndims, const dnnl_dim_t *dims, dnnl_format_tag_t tag,
                          const float *data)
{
    dnnl_memory_desc_t md;
    size_t count = 1;
    for (int i = 0; i < ndims; i++) count *= (size_t)dims[i];
    TRY(dnnl_memory_desc_init_by_tag(&md, ndims, dims, dnnl_f32, tag));
    TRY(dnnl_memory_create(m, &md, engine, data ? (void *)data : bench_floats(count)));
    return NULL;
}

/* A 3-d view with explicit strides into data (head-sliced attention operands). */
static const char *strided(dnnl_memory_t *m, const dnnl_dim_t *dims, const dnnl_dim_t *strides, const float *data)
{
    dnnl_memory_desc_t md;
    TRY(dnnl_memory_desc_init_by_strides(&md, 3, dims, dnnl_f32, strides));
    TRY(dnnl_memory_create(m, &md, engine, (void *)data));
    return NULL;
}

static const dnnl_memory_desc_t *md_of(dnnl_memory_t m)
{
    const dnnl_memory_desc_t *md = NULL;
    dnnl_memory_get_memory_desc(m, &md);
    return md;
}

static const char *make_attr(dnnl_primitive_attr_t *attr, const post *p)
{
    dnnl_post_ops_t ops;
    TRY(dnnl_primitive_attr_create(attr));
    TRY(dnnl_post_ops_create(&ops));
    if (p && p->residual) TRY(dnnl_post_ops_append_binary(ops, dnnl_binary_add, md_of(p->residual)));
    if (p && p->eltwise) TRY(dnnl_post_ops_append_eltwise(ops, 1.0f, p->eltwise, p->alpha, p->beta));
    TRY(dnnl_primitive_attr_set_post_ops(*attr, ops));
    TRY(dnnl_post_ops_destroy(ops));
    return NULL;
}

static const char *describe(dnnl_primitive_desc_t *pd, const void *op_desc, const post *p)
{
    dnnl_primitive_attr_t attr;
    const char *err = make_attr(&attr, p);
    if (err) return err;
    TRY(dnnl_primitive_desc_create(pd, op_desc, attr, engine, NULL));
    TRY(dnnl_primitive_attr_destroy(attr));
    return NULL;
}

/* Appends the primitive of pd with args (plus the residual post-op operand). */
static const char *push(net *n, dnnl_primitive_desc_t pd, const dnnl_exec_arg_t *args, int nargs, const post *p)
{
    if (n->n == MAX_STEPS) return "too many oneDNN steps";
    step *s = &n->steps[n->n++];
    TRY(dnnl_primitive_create(&s->prim, pd));
    TRY(dnnl_primitive_desc_destroy(pd));
    memcpy(s->args, args, (size_t)nargs * sizeof *args);
    s->nargs = nargs;
    if (p && p->residual) s->args[s->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, p->residual};
    return NULL;
}

/* The weights in the layout pd chose, reordered once from `user` in `tag`. */
static const char *chosen_weights(dnnl_memory_t *out, dnnl_primitive_desc_t pd, int ndims, const dnnl_dim_t *dims,
                                  dnnl_format_tag_t tag, const float *user)
{
    dnnl_memory_t src;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t reorder;
    const char *err = tensor(&src, ndims, dims, tag, user);
    if (err) return err;
    TRY(dnnl_memory_create(out, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), engine, DNNL_MEMORY_ALLOCATE));
    TRY(dnnl_reorder_primitive_desc_create(&rpd, md_of(src), engine, md_of(*out), engine, NULL));
    TRY(dnnl_primitive_create(&reorder, rpd));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, *out}};
    TRY(dnnl_primitive_execute(reorder, stream, 2, args));
    TRY(dnnl_stream_wait(stream));
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(src);
    return NULL;
}

/* dst [rows, out] = src [rows, in] w^T + b, then post-ops; w is [out, in]. */
static const char *linear(net *n, dnnl_memory_t src, dnnl_memory_t dst, const float *w, const float *b, int in,
                          int out, const post *p)
{
    const dnnl_memory_desc_t *src_md = md_of(src);
    dnnl_dims_t wdims = {out, in}, bdims = {out};
    dnnl_memory_desc_t w_any;
    dnnl_memory_t bias, weights;
    dnnl_inner_product_desc_t d;
    dnnl_primitive_desc_t pd;
    const char *err = tensor(&bias, 1, bdims, dnnl_a, b);
    if (err) return err;
    TRY(dnnl_memory_desc_init_by_tag(&w_any, 2, wdims, dnnl_f32, dnnl_format_tag_any));
    TRY(dnnl_inner_product_forward_desc_init(&d, dnnl_forward_inference, src_md, &w_any, md_of(bias), md_of(dst)));
    if ((err = describe(&pd, &d, p)) || (err = chosen_weights(&weights, pd, 2, wdims, dnnl_oi, w))) return err;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}};
    return push(n, pd, args, 4, p);
}

static const char *softmax(net *n, dnnl_memory_t src, dnnl_memory_t dst, int axis)
{
    dnnl_softmax_v2_desc_t d;
    dnnl_primitive_desc_t pd;
    TRY(dnnl_softmax_v2_forward_desc_init(&d, dnnl_forward_inference, dnnl_softmax_accurate, md_of(src), md_of(dst), axis));
    const char *err = describe(&pd, &d, NULL);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
    return err ? err : push(n, pd, args, 2, NULL);
}

/* dst = LayerNorm(src) over the last dim d, eps 1e-5, with scale w and shift b. */
static const char *layernorm(net *n, dnnl_memory_t src, dnnl_memory_t dst, const float *w, const float *b, int d)
{
    dnnl_dims_t dims = {d};
    dnnl_memory_t scale, shift;
    dnnl_layer_normalization_desc_t desc;
    dnnl_primitive_desc_t pd;
    const char *err = tensor(&scale, 1, dims, dnnl_a, w);
    if (err || (err = tensor(&shift, 1, dims, dnnl_a, b))) return err;
    TRY(dnnl_layer_normalization_forward_desc_init(&desc, dnnl_forward_inference, md_of(src), NULL, 1e-5f,
                                                   dnnl_use_scale | dnnl_use_shift));
    if ((err = describe(&pd, &desc, NULL))) return err;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, shift}};
    return push(n, pd, args, 4, NULL);
}

/* dst = src x weights (batched over the first dim), then post-ops. */
static const char *matmul(net *n, dnnl_memory_t src, dnnl_memory_t weights, dnnl_memory_t dst, const post *p)
{
    dnnl_matmul_desc_t d;
    dnnl_primitive_desc_t pd;
    TRY(dnnl_matmul_desc_init(&d, md_of(src), md_of(weights), NULL, md_of(dst)));
    const char *err = describe(&pd, &d, p);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
    return err ? err : push(n, pd, args, 3, p);
}

static void run_net(const net *n)
{
    for (int i = 0; i < n->n; i++)
        if (dnnl_primitive_execute(n->steps[i].prim, stream, n->steps[i].nargs, n->steps[i].args) != dnnl_success) {
            fprintf(stderr, "bench: oneDNN primitive %d failed\n", i);
            return;
        }
    dnnl_stream_wait(stream);
}

/* ---- R1, R2: Dense(784 => 256, relu) -> Dense(256 => 10) -> softmax ---- */

static net mlp1, mlp32;

static const char *mlp(net *n, int batch, const bench_tensors *w, const float *x, float *y)
{
    const float *w0, *b0, *w1, *b1;
    NEED(w0 = bench_tensor(w, "0.weight", 256 * 784));
    NEED(b0 = bench_tensor(w, "0.bias", 256));
    NEED(w1 = bench_tensor(w, "1.weight", 10 * 256));
    NEED(b1 = bench_tensor(w, "1.bias", 10));
    dnnl_dims_t in_dims = {batch, 784}, hidden_dims = {batch, 256}, out_dims = {batch, 10};
    dnnl_memory_t src, hidden, logits, dst;
    post relu = {NULL, dnnl_eltwise_relu, 0.0f, 0.0f};
    const char *err = start_engine();
    if (err || (err = tensor(&src, 2, in_dims, dnnl_nc, x)) || (err = tensor(&hidden, 2, hidden_dims, dnnl_nc, NULL)) ||
        (err = tensor(&logits, 2, out_dims, dnnl_nc, NULL)) || (err = tensor(&dst, 2, out_dims, dnnl_nc, y)) ||
        (err = linear(n, src, hidden, w0, b0, 784, 256, &relu)) ||
        (err = linear(n, hidden, logits, w1, b1, 256, 10, NULL)))
        return err;
    return softmax(n, logits, dst, 1);
}

static const char *setup_r1(const bench_tensors *w, const float *x, float *y) { return mlp(&mlp1, 1, w, x, y); }
static const char *setup_r2(const bench_tensors *w, const float *x, float *y) { return mlp(&mlp32, 32, w, x, y); }
static void run_r1(void) { run_net(&mlp1); }
static void run_r2(void) { run_net(&mlp32); }

/* ---- R3: ResNet basic block, 3x3 convolutions 64 => 64 on 56x56 NHWC ---- */

enum { IMG = 56, CH = 64, KS = 3 };

static net res;

/* Folds BatchNorm `bn` into `conv`, `out` channels of `per_out` weights
 * each (oihw): weights and bias come out scaled. */
static const char *fold_conv_bn(float *wf, float *bf, const bench_tensors *w, const char *conv, const char *bn, int out,
                                int per_out)
{
    const float *cw, *g, *beta, *mean, *var;
    NEED(cw = bench_param(w, conv, "weight", out * per_out));
    NEED(g = bench_param(w, bn, "weight", out));
    NEED(beta = bench_param(w, bn, "bias", out));
    NEED(mean = bench_param(w, bn, "running_mean", out));
    NEED(var = bench_param(w, bn, "running_var", out));
    for (int o = 0; o < out; o++) {
        float scale = g[o] / sqrtf(var[o] + 1e-5f);
        bf[o] = beta[o] - mean[o] * scale;
        for (int k = 0; k < per_out; k++) wf[o * per_out + k] = cw[o * per_out + k] * scale;
    }
    return NULL;
}

/* dst = conv3x3(src, pad 1) + bias, then post-ops; NHWC activations. */
static const char *conv(net *n, dnnl_memory_t src, dnnl_memory_t dst, const float *wf, const float *bf, const post *p)
{
    dnnl_dims_t wdims = {CH, CH, KS, KS}, bdims = {CH}, one = {1, 1};
    dnnl_memory_desc_t w_any;
    dnnl_memory_t bias, weights;
    dnnl_convolution_desc_t d;
    dnnl_primitive_desc_t pd;
    const char *err = tensor(&bias, 1, bdims, dnnl_a, bf);
    if (err) return err;
    TRY(dnnl_memory_desc_init_by_tag(&w_any, 4, wdims, dnnl_f32, dnnl_format_tag_any));
    TRY(dnnl_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, md_of(src), &w_any,
                                           md_of(bias), md_of(dst), one, one, one));
    if ((err = describe(&pd, &d, p)) || (err = chosen_weights(&weights, pd, 4, wdims, dnnl_oihw, wf))) return err;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}};
    return push(n, pd, args, 4, p);
}

static const char *setup_r3(const bench_tensors *w, const float *x, float *y)
{
    float *w1 = bench_floats(CH * CH * KS * KS), *w2 = bench_floats(CH * CH * KS * KS);
    float *b1 = bench_floats(CH), *b2 = bench_floats(CH);
    dnnl_dims_t dims = {1, CH, IMG, IMG}; /* logical NCHW, stored NHWC */
    dnnl_memory_t src, hidden, dst;
    const char *err = start_engine();
    if (err || (err = fold_conv_bn(w1, b1, w, "conv1", "bn1", CH, CH * KS * KS)) ||
        (err = fold_conv_bn(w2, b2, w, "conv2", "bn2", CH, CH * KS * KS)) ||
        (err = tensor(&src, 4, dims, dnnl_nhwc, x)) || (err = tensor(&hidden, 4, dims, dnnl_nhwc, NULL)) ||
        (err = tensor(&dst, 4, dims, dnnl_nhwc, y)))
        return err;
    post relu = {NULL, dnnl_eltwise_relu, 0.0f, 0.0f}, add_relu = {src, dnnl_eltwise_relu, 0.0f, 0.0f};
    if ((err = conv(&res, src, hidden, w1, b1, &relu))) return err;
    return conv(&res, hidden, dst, w2, b2, &add_relu);
}

static void run_r3(void) { run_net(&res); }

/* ---- R4: BERT-base encoder layer (post-LN), sequence 128 ---- */

enum { SEQ = 128, D = 768, HEADS = 12, HD = D / HEADS, FF = 3072 };

static net bert;

/* scores = q k^T / sqrt(HD), softmax, ctx = scores v: per head, batched over
 * heads, reading q, k, v in place from the fused projection qkv [SEQ, 3D]. */
static const char *attention(net *n, const float *qkv, float *ctx)
{
    dnnl_dims_t q_dims = {HEADS, SEQ, HD}, q_strides = {HD, 3 * D, 1};
    dnnl_dims_t kt_dims = {HEADS, HD, SEQ}, kt_strides = {HD, 1, 3 * D};
    dnnl_dims_t s_dims = {HEADS, SEQ, SEQ}, ctx_strides = {HD, D, 1};
    dnnl_memory_t q, kt, v, scores, out;
    post scale = {NULL, dnnl_eltwise_linear, 1.0f / sqrtf((float)HD), 0.0f};
    const char *err = strided(&q, q_dims, q_strides, qkv);
    if (err || (err = strided(&kt, kt_dims, kt_strides, qkv + D)) || (err = strided(&v, q_dims, q_strides, qkv + 2 * D)) ||
        (err = tensor(&scores, 3, s_dims, dnnl_abc, NULL)) || (err = strided(&out, q_dims, ctx_strides, ctx)) ||
        (err = matmul(n, q, kt, scores, &scale)) || (err = softmax(n, scores, scores, 2)))
        return err;
    return matmul(n, scores, v, out, NULL);
}

static const char *setup_r4(const bench_tensors *w, const float *x, float *y)
{
    const float *in_w, *in_b, *out_w, *out_b, *w1, *b1, *w2, *b2, *n1w, *n1b, *n2w, *n2b;
    NEED(in_w = bench_tensor(w, "self_attn.in_proj_weight", 3 * D * D));
    NEED(in_b = bench_tensor(w, "self_attn.in_proj_bias", 3 * D));
    NEED(out_w = bench_tensor(w, "self_attn.out_proj.weight", D * D));
    NEED(out_b = bench_tensor(w, "self_attn.out_proj.bias", D));
    NEED(w1 = bench_tensor(w, "linear1.weight", FF * D));
    NEED(b1 = bench_tensor(w, "linear1.bias", FF));
    NEED(w2 = bench_tensor(w, "linear2.weight", D * FF));
    NEED(b2 = bench_tensor(w, "linear2.bias", D));
    NEED(n1w = bench_tensor(w, "norm1.weight", D));
    NEED(n1b = bench_tensor(w, "norm1.bias", D));
    NEED(n2w = bench_tensor(w, "norm2.weight", D));
    NEED(n2b = bench_tensor(w, "norm2.bias", D));
    float *qkv_data = bench_floats(SEQ * 3 * D), *ctx_data = bench_floats(SEQ * D);
    dnnl_dims_t model_dims = {SEQ, D}, qkv_dims = {SEQ, 3 * D}, ff_dims = {SEQ, FF};
    dnnl_memory_t src, qkv, ctx, attn, h, ff, ff2, dst;
    const char *err = start_engine();
    if (err || (err = tensor(&src, 2, model_dims, dnnl_nc, x)) || (err = tensor(&qkv, 2, qkv_dims, dnnl_nc, qkv_data)) ||
        (err = tensor(&ctx, 2, model_dims, dnnl_nc, ctx_data)) || (err = tensor(&attn, 2, model_dims, dnnl_nc, NULL)) ||
        (err = tensor(&h, 2, model_dims, dnnl_nc, NULL)) || (err = tensor(&ff, 2, ff_dims, dnnl_nc, NULL)) ||
        (err = tensor(&ff2, 2, model_dims, dnnl_nc, NULL)) || (err = tensor(&dst, 2, model_dims, dnnl_nc, y)))
        return err;
    post add_x = {src, 0, 0.0f, 0.0f}, gelu = {NULL, dnnl_eltwise_gelu_erf, 0.0f, 0.0f}, add_h = {h, 0, 0.0f, 0.0f};
    if ((err = linear(&bert, src, qkv, in_w, in_b, D, 3 * D, NULL)) || (err = attention(&bert, qkv_data, ctx_data)) ||
        (err = linear(&bert, ctx, attn, out_w, out_b, D, D, &add_x)) || (err = layernorm(&bert, attn, h, n1w, n1b, D)) ||
        (err = linear(&bert, h, ff, w1, b1, D, FF, &gelu)) || (err = linear(&bert, ff, ff2, w2, b2, FF, D, &add_h)))
        return err;
    return layernorm(&bert, ff2, dst, n2w, n2b, D);
}

static void run_r4(void) { run_net(&bert); }

/* ---- R5: LayerNorm(768) over 32 rows; R6: softmax over 10000, 32 rows ---- */

static net ln, sm;

static const char *setup_r5(const bench_tensors *w, const float *x, float *y)
{
    const float *scale, *shift;
    NEED(scale = bench_tensor(w, "0.weight", D));
    NEED(shift = bench_tensor(w, "0.bias", D));
    dnnl_dims_t dims = {32, D};
    dnnl_memory_t src, dst;
    const char *err = start_engine();
    if (err || (err = tensor(&src, 2, dims, dnnl_nc, x)) || (err = tensor(&dst, 2, dims, dnnl_nc, y))) return err;
    return layernorm(&ln, src, dst, scale, shift, D);
}

static const char *setup_r6(const bench_tensors *w, const float *x, float *y)
{
    (void)w;
    dnnl_dims_t dims = {32, 10000};
    dnnl_memory_t src, dst;
    const char *err = start_engine();
    if (err || (err = tensor(&src, 2, dims, dnnl_nc, x)) || (err = tensor(&dst, 2, dims, dnnl_nc, y))) return err;
    return softmax(&sm, src, dst, 1);
}

static void run_r5(void) { run_net(&ln); }
static void run_r6(void) { run_net(&sm); }

/* ---- R7: depthwise 3x3 convolution + BatchNorm + ReLU6, 14x14x384 NHWC ---- */

enum { DW_IMG = 14, DW_CH = 384 };

static net dw;

static const char *setup_r7(const bench_tensors *w, const float *x, float *y)
{
    float *wf = bench_floats(DW_CH * KS * KS), *bf = bench_floats(DW_CH);
    dnnl_dims_t dims = {1, DW_CH, DW_IMG, DW_IMG}, wdims = {DW_CH, 1, 1, KS, KS}, bdims = {DW_CH}, one = {1, 1};
    dnnl_memory_t src, dst, bias, weights;
    dnnl_memory_desc_t w_any;
    dnnl_convolution_desc_t d;
    dnnl_primitive_desc_t pd;
    post relu6 = {NULL, dnnl_eltwise_clip_v2, 0.0f, 6.0f};
    const char *err = start_engine();
    if (err || (err = fold_conv_bn(wf, bf, w, "0", "1", DW_CH, KS * KS)) || (err = tensor(&src, 4, dims, dnnl_nhwc, x)) ||
        (err = tensor(&dst, 4, dims, dnnl_nhwc, y)) || (err = tensor(&bias, 1, bdims, dnnl_a, bf)))
        return err;
    TRY(dnnl_memory_desc_init_by_tag(&w_any, 5, wdims, dnnl_f32, dnnl_format_tag_any));
    TRY(dnnl_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, md_of(src), &w_any,
                                           md_of(bias), md_of(dst), one, one, one));
    if ((err = describe(&pd, &d, &relu6)) || (err = chosen_weights(&weights, pd, 5, wdims, dnnl_goihw, wf))) return err;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}};
    return push(&dw, pd, args, 4, &relu6);
}

static void run_r7(void) { run_net(&dw); }

const bench_impl bench_dnnl_rows[] = {
    {"R1", "onednn", setup_r1, run_r1}, {"R2", "onednn", setup_r2, run_r2},
    {"R3", "onednn", setup_r3, run_r3}, {"R4", "onednn", setup_r4, run_r4},
    {"R5", "onednn", setup_r5, run_r5}, {"R6", "onednn", setup_r6, run_r6},
    {"R7", "onednn", setup_r7, run_r7},
    {0, 0, 0, 0},
};
