/* axrt.h — the axc runtime: the descriptor every generated model exports and
 * the kernels generated C calls.  The core is freestanding C99: it needs only
 * <stddef.h>, <stdint.h>, <string.h> and <math.h>, so it builds for firmware.
 * This header is the whole runtime: the optional parts docs/cli.md#runtime allows
 * (OpenBLAS-backed GEMM, a CUDA loader, timing) are not written yet. */
#ifndef AXRT_H
#define AXRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AXRT_MAX_RANK 8

/* The element types, one row each, in the order of docs/language.md#types-and-layout:
 *   X(ENUM, name, short name, C storage type, bytes, safetensors code,
 *     .npy descr (0: none), is_float)
 * The runtime expands it into axrt_dtype and axrt_dtype_size, the compiler
 * into its names, C types and file codes, so a new dtype is one row here. */
#define AXRT_DTYPES(X)                                               \
    X(F32, "Float32", "f32", float, 4, "F32", "<f4", 1)              \
    X(F64, "Float64", "f64", double, 8, "F64", "<f8", 1)             \
    X(F16, "Float16", "f16", uint16_t, 2, "F16", "<f2", 1)           \
    X(BF16, "BFloat16", "bf16", uint16_t, 2, "BF16", 0, 1)           \
    X(I8, "Int8", "i8", int8_t, 1, "I8", "|i1", 0)                   \
    X(I32, "Int32", "i32", int32_t, 4, "I32", "<i4", 0)              \
    X(I64, "Int64", "i64", int64_t, 8, "I64", "<i8", 0)

typedef enum axrt_dtype {
#define AXRT_DTYPE_ENUM(E, name, short_name, ctype, bytes, st, npy, is_float) AXRT_##E,
    AXRT_DTYPES(AXRT_DTYPE_ENUM)
#undef AXRT_DTYPE_ENUM
    AXRT_DTYPE_COUNT
} axrt_dtype;

/* One input or output of a compiled model. */
typedef struct axrt_tensor_info {
    const char *name;
    axrt_dtype dtype;
    int rank;
    int64_t dims[AXRT_MAX_RANK];
} axrt_tensor_info;

/* A compiled model, as exported by generated code (`<name>_model`). */
typedef struct axrt_model {
    const char *name;
    int n_inputs;
    int n_outputs;
    const axrt_tensor_info *inputs;
    const axrt_tensor_info *outputs;
    size_t arena_bytes; /* scratch bytes one call needs (64-byte aligned) */
    /* inputs in signature order, outputs in return order; arena may be NULL
       to use a static arena inside the generated file (not reentrant). */
    int (*run)(const void *const *inputs, void *const *outputs, void *arena);
} axrt_model;

/* Per-layer profile of code generated with `axc --profile` (docs/cli.md
 * #seeing-inside-a-model): `<name>_profile[<NAME>_LAYERS]` holds one entry per executed layer
 * in execution order; each forward pass adds the ticks of the
 * application's clock, `uint64_t axc_profile_clock(void)` (a weak default
 * on POSIX hosts counts nanoseconds; a firmware provides its cycle counter),
 * around every layer.  `<name>_layer_hook`, when set, is called after each
 * layer with its output (axc run --dump-dir).  Profiled code keeps these
 * counters in globals, so it is not reentrant. */
typedef struct axrt_layer_profile {
    const char *layer;    /* as written in the model ("fc1", "layer1.0.conv1", "0") */
    const char *op;       /* the op and what is fused into it: "dense+residual+relu" */
    axrt_tensor_info out; /* the layer's output (name = layer) */
    double flops, bytes;  /* work of one call */
    uint64_t ticks;       /* clock ticks spent, summed over calls */
    uint64_t calls;
} axrt_layer_profile;
typedef void (*axrt_layer_hook)(int index, const axrt_layer_profile *layer, const void *output);

/* Size in bytes of one element of dtype (0 for an unknown value). */
size_t axrt_dtype_size(axrt_dtype dtype);


/* ---- kernels ------------------------------------------------------------
 * What generated C calls, one set per compute dtype: suffix _f32 (float),
 * _f64 (double), _f16 and _bf16 (uint16_t bits, below).  Tensors are dense, row-major.  Sizes are element counts.
 * Kernels whose ir op may run in place (ops.def "inplace") accept y == x;
 * all others need y distinct from every input.  Only kernels that can fail
 * return a status (0 = success, see axrt_status). */
typedef enum axrt_status {
    AXRT_OK = 0,
    AXRT_ERR_INDEX = 1 /* an embedding index outside [0, vocab) */
} axrt_status;

/* conv2d over NHWC input, weight in PyTorch layout [out, in/groups, kh, kw]. */
typedef struct axrt_conv2d_params {
    int n, h, w, c;           /* input */
    int oh, ow, oc;           /* output */
    int kh, kw;
    int stride_h, stride_w;
    int dilation_h, dilation_w;
    int pad_top, pad_left;    /* bottom/right padding follows from oh, ow */
    int groups;
} axrt_conv2d_params;

/* max/mean pooling over NHWC; padding counts as -inf (max) or zero (mean,
 * included in the divisor as PyTorch's count_include_pad=True). */
typedef struct axrt_pool2d_params {
    int n, h, w, c;
    int oh, ow;
    int kh, kw;
    int stride_h, stride_w;
    int pad_top, pad_left, pad_bottom, pad_right;
} axrt_pool2d_params;

/* torch.nn.MultiheadAttention(d, heads, batch_first=True), kdim = vdim = d. */
typedef struct axrt_mha_params {
    int n;          /* batch */
    int lq, lk;     /* query length, key/value length */
    int d, heads;
    int causal;     /* query i sees keys j <= i */
} axrt_mha_params;

/* Scratch elements (of the compute dtype) axrt_mha_* needs. */
size_t axrt_mha_scratch_elems(const axrt_mha_params *p);

/* One layer and direction of torch.nn.GRU / torch.nn.LSTM, batch_first. */
typedef struct axrt_rnn_params {
    int n, l;                 /* batch, sequence length */
    int in, hidden;           /* features of x, of h */
    int reverse;              /* run from the last step to the first */
    int linear_before_reset;  /* gru: r * (W_hn h + b_hn) (PyTorch); 0: W_hn (r * h) + b_hn (ONNX) */
    int cell;                 /* lstm: y holds each step's c instead of h */
} axrt_rnn_params;

/* Scratch elements (of the compute dtype) axrt_gru_* (gates 3) and
   axrt_lstm_* (gates 4) need; the batch size does not enter. */
size_t axrt_rnn_scratch_elems(const axrt_rnn_params *p, int gates);

#define AXRT_DECLARE_UNARY(T, S, op) void axrt_##op##_##S(const T *x, T *y, size_t n);
#define AXRT_DECLARE_BINARY(T, S, op)                                                    \
    void axrt_##op##_##S(const T *a, const T *b, T *y, size_t n);                        \
    void axrt_##op##_scalar_b_##S(const T *a, T b, T *y, size_t n);                      \
    void axrt_##op##_scalar_a_##S(T a, const T *b, T *y, size_t n);                      \
    void axrt_##op##_bcast_##S(const T *a, const int64_t *a_strides, const T *b,         \
                               const int64_t *b_strides, T *y, const int64_t *shape, int rank);

/* Dropout's counter-based generator (the IR's dropout op, docs/training.md):
 * whether element i of dropout layer `stream` at training step `step` is
 * kept, drop probability p; a pure function of its arguments, so a backward
 * recomputes the forward's mask instead of storing it (splitmix64's mixer). */
static inline uint64_t axrt_mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline int axrt_dropout_keep(uint64_t seed, uint64_t stream, uint64_t step, uint64_t i, double p)
{
    const uint64_t h = axrt_mix64(axrt_mix64(axrt_mix64(axrt_mix64(seed) ^ stream) ^ step) ^ i);
    return (double)(h >> 11) * (1.0 / 9007199254740992.0) >= p;
}

/* Every kernel of one compute dtype T, with name suffix S. */
#define AXRT_DECLARE_KERNELS(T, S)                                                       \
    AXRT_DECLARE_UNARY(T, S, relu) AXRT_DECLARE_UNARY(T, S, relu6)                       \
    AXRT_DECLARE_UNARY(T, S, sigmoid) AXRT_DECLARE_UNARY(T, S, tanh)                     \
    AXRT_DECLARE_UNARY(T, S, swish) AXRT_DECLARE_UNARY(T, S, gelu)                       \
    AXRT_DECLARE_UNARY(T, S, gelu_tanh) AXRT_DECLARE_UNARY(T, S, softplus)               \
    AXRT_DECLARE_UNARY(T, S, exp) AXRT_DECLARE_UNARY(T, S, log)                          \
    AXRT_DECLARE_UNARY(T, S, sqrt) AXRT_DECLARE_UNARY(T, S, abs)                         \
    AXRT_DECLARE_UNARY(T, S, neg) AXRT_DECLARE_UNARY(T, S, erf)                          \
    AXRT_DECLARE_UNARY(T, S, hardswish) AXRT_DECLARE_UNARY(T, S, hardsigmoid)            \
    AXRT_DECLARE_UNARY(T, S, mish) AXRT_DECLARE_UNARY(T, S, selu)                        \
    AXRT_DECLARE_UNARY(T, S, reciprocal)                                                 \
    AXRT_DECLARE_UNARY(T, S, sin) AXRT_DECLARE_UNARY(T, S, cos) AXRT_DECLARE_UNARY(T, S, tan)\
    AXRT_DECLARE_UNARY(T, S, asin) AXRT_DECLARE_UNARY(T, S, acos) AXRT_DECLARE_UNARY(T, S, atan)\
    AXRT_DECLARE_UNARY(T, S, sinh) AXRT_DECLARE_UNARY(T, S, cosh) AXRT_DECLARE_UNARY(T, S, asinh)\
    AXRT_DECLARE_UNARY(T, S, acosh) AXRT_DECLARE_UNARY(T, S, atanh) AXRT_DECLARE_UNARY(T, S, floor)\
    AXRT_DECLARE_UNARY(T, S, ceil) AXRT_DECLARE_UNARY(T, S, round) AXRT_DECLARE_UNARY(T, S, sign)\
    void axrt_elu_##S(const T *x, T *y, size_t n, T alpha);                              \
    void axrt_leaky_relu_##S(const T *x, T *y, size_t n, T alpha);                       \
    AXRT_DECLARE_BINARY(T, S, add) AXRT_DECLARE_BINARY(T, S, sub)                        \
    AXRT_DECLARE_BINARY(T, S, mul) AXRT_DECLARE_BINARY(T, S, div)                        \
    AXRT_DECLARE_BINARY(T, S, pow) AXRT_DECLARE_BINARY(T, S, fmod)                       \
    AXRT_DECLARE_BINARY(T, S, max) AXRT_DECLARE_BINARY(T, S, min)                        \
    AXRT_DECLARE_BINARY(T, S, clamp_min) AXRT_DECLARE_BINARY(T, S, clamp_max)            \
    /* x holds n elements of dtype from (any axrt_dtype) */                              \
    void axrt_cast_##S(const void *x, axrt_dtype from, T *y, size_t n);                  \
    /* reductions and softmax over the middle axis of [outer, axis, inner] */            \
    void axrt_sum_##S(const T *x, T *y, size_t outer, size_t axis, size_t inner);        \
    void axrt_mean_##S(const T *x, T *y, size_t outer, size_t axis, size_t inner);       \
    void axrt_maximum_##S(const T *x, T *y, size_t outer, size_t axis, size_t inner);    \
    void axrt_minimum_##S(const T *x, T *y, size_t outer, size_t axis, size_t inner);    \
    void axrt_prod_##S(const T *x, T *y, size_t outer, size_t axis, size_t inner);       \
    /* torch.argmax: the first index of the largest (a NaN counts as largest) */          \
    void axrt_argmax_##S(const T *x, int64_t *y, size_t outer, size_t axis, size_t inner); \
    void axrt_softmax_##S(const T *x, T *y, size_t outer, size_t axis, size_t inner);    \
    void axrt_log_softmax_##S(const T *x, T *y, size_t outer, size_t axis, size_t inner); \
    /* y = x permuted: y's dim i is x's dim perm[i]; x_shape has rank dims */            \
    /* y[i] = x[offset + sum_d i_d * strides[d]] over y_shape (slicing) */              \
    void axrt_gather_strided_##S(const T *x, T *y, const int64_t *y_shape,               \
                                 const int64_t *strides, int64_t offset, int rank);      \
    void axrt_transpose_##S(const T *x, T *y, const int64_t *x_shape, const int *perm,   \
                            int rank);                                                   \
    /* copies x as [outer, x_row] into columns [y_offset, y_offset + x_row) of y as      \
       [outer, y_row]: one operand of a concat */                                        \
    void axrt_concat_part_##S(const T *x, T *y, size_t outer, size_t x_row, size_t y_row, \
                              size_t y_offset);                                          \
    /* several results: x as [outer, x_row] cut into nparts column blocks, part k of    \
       rows[k] columns (the sum is x_row) written to ys[k] as [outer, rows[k]] */        \
    void axrt_split_##S(const T *x, T *const *ys, size_t outer, size_t x_row,            \
                        size_t nparts, const size_t *rows);                              \
    /* y[batch][m, n] = a[batch][m, :] . b[batch][:, n]; batch index i of y reads        \
       a + sum(i_j * a_batch_strides[j]) (stride 0 = broadcast), same for b */           \
    void axrt_matmul_##S(const T *a, const int64_t *a_batch_strides, const T *b,         \
                         const int64_t *b_batch_strides, T *y, const int64_t *batch_shape, \
                         int batch_rank, size_t m, size_t k, size_t n);                  \
    /* y[r, o] = x[r, :] . w[o, :] + bias[o] (bias may be NULL) */                       \
    void axrt_dense_##S(const T *x, const T *w, const T *bias, T *y, size_t rows,         \
                        size_t in, size_t out);                                          \
    void axrt_layernorm_##S(const T *x, const T *w, const T *bias, T *y, size_t rows,     \
                            size_t d, T eps);                                            \
    /* torch.nn.GroupNorm on x [n, spatial, c]: groups of c/groups channels;    \
       w and bias may be NULL (1 and 0: InstanceNorm without affine) */            \
    void axrt_groupnorm_##S(const T *x, const T *w, const T *bias, T *y, size_t n,        \
                            size_t spatial, size_t c, size_t groups, T eps);             \
    /* torch.nn.ConvTranspose2d on NHWC: w [c, oc/groups, kh, kw]; p->c, h, w the   \
       input, p->oh, ow, oc the output; bias may be NULL */                           \
    void axrt_conv_transpose2d_##S(const T *x, const T *w, const T *bias, T *y,          \
                                   const axrt_conv2d_params *p);                        \
    /* GRU / LSTM layer over x [n, l, in] -> y [n, l, hidden] (h of every step);       \
       w_ih [G*hidden, in], w_hh [G*hidden, hidden] with PyTorch's gate order (r, z, n;  \
       i, f, g, o); biases, h0 and c0 ([n, hidden]) may be NULL (zeros); p->cell: y    \
       holds c instead (LSTM); scratch holds                                             \
       axrt_rnn_scratch_elems(p, G) elements */                                          \
    void axrt_gru_##S(const T *x, const T *w_ih, const T *w_hh, const T *b_ih,            \
                      const T *b_hh, const T *h0, T *y, T *scratch,                       \
                      const axrt_rnn_params *p);                                          \
    void axrt_lstm_##S(const T *x, const T *w_ih, const T *w_hh, const T *b_ih,           \
                       const T *b_hh, const T *h0, const T *c0, T *y, T *scratch,         \
                       const axrt_rnn_params *p);                                         \
    /* torch.nn.Upsample on NHWC x [n, h, w, c] -> y [n, h*sh, w*sw, c]; mode 0       \
       nearest, 1 bilinear, 2 bilinear with align_corners (the IR's upsample modes) */  \
    void axrt_upsample_##S(const T *x, T *y, size_t n, size_t h, size_t w, size_t c,    \
                           size_t sh, size_t sw, size_t mode);                          \
    void axrt_batchnorm_##S(const T *x, const T *w, const T *bias, const T *mean,         \
                            const T *var, T *y, size_t rows, size_t c, T eps);           \
    void axrt_conv2d_##S(const T *x, const T *w, const T *bias, T *y,                     \
                         const axrt_conv2d_params *p);                                   \
    void axrt_maxpool_##S(const T *x, T *y, const axrt_pool2d_params *p);                \
    void axrt_meanpool_##S(const T *x, T *y, const axrt_pool2d_params *p);               \
    /* mean pooling dividing by the real pixels (count_pad 0) or by the window    */    \
    /* clipped to the input plus div_pad_bottom/right (ceil mode, count_pad 1)     */    \
    void axrt_meanpool_counted_##S(const T *x, T *y, const axrt_pool2d_params *p,        \
                                   int div_pad_bottom, int div_pad_right, int count_pad); \
    void axrt_globalmeanpool_##S(const T *x, T *y, size_t n, size_t hw, size_t c);       \
    /* q [n, lq, d], k and v [n, lk, d]; biases may be NULL; scratch holds               \
       axrt_mha_scratch_elems(p) elements */                                             \
    void axrt_mha_##S(const T *q, const T *k, const T *v, const T *in_w, const T *in_b,   \
                      const T *out_w, const T *out_b, T *y, T *scratch,                  \
                      const axrt_mha_params *p);                                         \
    /* the same with key_mask [n, lk]: key j of batch element b is never attended   \
       where key_mask[b * lk + j] == 0 (padding) */                                    \
    void axrt_mha_masked_##S(const T *q, const T *k, const T *v, const T *key_mask,      \
                             const T *in_w, const T *in_b, const T *out_w, const T *out_b, \
                             T *y, T *scratch, const axrt_mha_params *p);              \
    /* y[i, :] = w[idx[i], :] for n indices of dtype AXRT_I8, AXRT_I32 or AXRT_I64 */      \
    int axrt_embedding_##S(const void *idx, axrt_dtype idx_dtype, const T *w, T *y,       \
                           size_t n, size_t vocab, size_t dim);                                  \
    /* The training step's backward kernels (the IR's *_grad ops): a conv's     \
       weight gradient [oc, c/groups, kh, kw] from dy (p->o*) and x (p->n, h, w, c) */ \
    void axrt_conv2d_grad_weight_##S(const T *dy, const T *x, T *dw,                   \
                                     const axrt_conv2d_params *p);                     \
    /* dx of maxpool (is_max) or meanpool, divisors as axrt_meanpool_counted's */      \
    void axrt_pool2d_grad_##S(const T *dy, const T *x, T *dx, const axrt_pool2d_params *p, \
                              int is_max, int div_pad_bottom, int div_pad_right,       \
                              int count_pad);                                          \
    /* x_count zeros, then dy scattered as axrt_gather_strided reads (a slice's dx) */ \
    void axrt_scatter_strided_##S(const T *dy, T *x, size_t x_count,                   \
                                  const int64_t *dy_shape, const int64_t *strides,     \
                                  int64_t offset, int rank);                           \
    /* dw [vocab, dim] = 0, then dw[idx[i], :] += dy[i, :] (indices as embedding's) */  \
    int axrt_embedding_grad_##S(const void *idx, axrt_dtype idx_dtype, const T *dy,     \
                                T *dw, size_t n, size_t vocab, size_t dim);            \
    /* y = x * keep / (1 - p), keep from axrt_dropout_keep(counter[0] (seed),          \
       stream, counter[1] (step), i, p) */                                              \
    void axrt_dropout_##S(const T *x, const int64_t *counter, T *y, size_t n,          \
                          uint64_t stream, double p);

AXRT_DECLARE_KERNELS(float, f32)
AXRT_DECLARE_KERNELS(double, f64)
/* The half types (docs/precision.md): IEEE binary16 (_f16) and bfloat16
 * (_bf16), stored as their bits in uint16_t (scalar parameters such as eps
 * and alpha too); every kernel widens to float, accumulates in float and
 * rounds each result once, to nearest, ties to even. */
AXRT_DECLARE_KERNELS(uint16_t, f16)
AXRT_DECLARE_KERNELS(uint16_t, bf16)

/* ---- instruction set ------------------------------------------------------
 * The float32 kernels run on one instruction set, chosen on first use: the
 * best this CPU has ("avx512", "avx2" on x86-64; "portable" C everywhere).
 * On x86-64 hosts the environment variable AXRT_ISA=portable|avx2|avx512
 * forces one (an unknown name, or a set this CPU lacks, gives one line on
 * stderr naming the set used instead).  axrt_set_isa forces one from code
 * (NULL: the best again); it returns 0, or -1 (nothing changed) for a name
 * unknown or unsupported here.  Not to be called while kernels run on other threads. */
int axrt_set_isa(const char *name);
/* The name of the instruction set the kernels use ("portable", "avx2", ...). */
const char *axrt_isa_name(void);
/* The path the half-type dense kernels take with it: "portable",
   "avx2+f16c", "avx512+f16c", "avx512+bf16" (vdpbf16ps). */
const char *axrt_half_isa_name(void);

/* ---- threads --------------------------------------------------------------
 * The float32 dense, convolution and depthwise kernels split their work
 * through a parallel-for hook: fn(ctx, begin, end) over consecutive ranges
 * covering [0, count), possibly at once on several threads, all done when
 * the hook returns.  grain, where not 0, is a run of items the kernel can
 * start anywhere at little cost (a range may then be cut into runs of that
 * many, so that a thread done early can take over the rest of another's);
 * 0: cut the items into as few ranges as there are threads.  Without a hook
 * (the default, and on firmware) they run on the calling thread.  Results
 * do not depend on the split. */
typedef void axrt_range_fn(void *ctx, size_t begin, size_t end);
typedef void axrt_parallel_fn(axrt_range_fn *fn, void *ctx, size_t count, size_t grain);
void axrt_set_parallel(axrt_parallel_fn *parallel); /* NULL: the calling thread */
/* Host part (axrt_threads.c, POSIX threads; the freestanding core needs no
 * threads): run the kernels on n threads, the caller's included (n <= 1:
 * the calling thread only).  Returns 0, or -1 where threads are unavailable
 * (then nothing changes).  Not to be called while kernels run. */
int axrt_set_threads(int n);
int axrt_threads(void);

/* ---- pre-packed float32 weights ----------------------------------------
 * The compiler packs dense, conv and attention weights at compile time into
 * the order the GEMM micro-kernel streams them: column panels of
 * AXRT_PANEL outputs; panel j holds outputs [AXRT_PANEL*j, AXRT_PANEL*j + w)
 * with w = min(AXRT_PANEL, out - AXRT_PANEL*j) and stores, for each reduction
 * index k in turn, its w weights.  A packed tensor has exactly as many
 * elements as the original.  The kernels compute what their unpacked
 * namesakes compute, vectorised where the instruction set allows. */
#define AXRT_PANEL 16

/* w [out, in] (torch Linear) -> packed, reduction index k = input index. */
void axrt_pack_dense_f32(const float *w, float *packed, size_t in, size_t out);
void axrt_dense_packed_f32(const float *x, const float *packed, const float *bias, float *y,
                           size_t rows, size_t in, size_t out);
/* y = x w^T + bias as axrt_dense_f32, w [out, in] read as stored (not
 * packed), through scratch of rows * (in + out) floats: for weights that
 * change on every call (the training step), where packing them would cost
 * more than the product. */
void axrt_dense_unpacked_f32(const float *x, const float *w, const float *bias, float *y,
                             size_t rows, size_t in, size_t out, float *scratch);
/* w [oc, c, kh, kw] with groups == 1 -> packed, k = (ky * kw + kx) * c + ci. */
void axrt_pack_conv2d_f32(const float *w, float *packed, const axrt_conv2d_params *p);
void axrt_conv2d_packed_f32(const float *x, const float *packed, const float *bias, float *y,
                            const axrt_conv2d_params *p);
/* The epilogue the packed dense and conv kernels can apply while the result
   is still in registers: y = act(op(...) + residual), residual (or NULL)
   laid out as y and distinct from it.  Swish gives the bits axrt_swish_f32
   gives on the result, hardswish (MobileNetV3's) axrt_hardswish_f32's. */
typedef enum axrt_act {
    AXRT_ACT_NONE = 0,
    AXRT_ACT_RELU,
    AXRT_ACT_RELU6,
    AXRT_ACT_GELU,
    AXRT_ACT_SWISH,
    AXRT_ACT_HARDSWISH
} axrt_act;
void axrt_dense_packed_ep_f32(const float *x, const float *packed, const float *bias,
                              const float *residual, axrt_act act, float *y, size_t rows,
                              size_t in, size_t out);
/* axrt_dense_packed_ep_f32 for a constant weight, the same bits at the same
   address for the life of the process (a compiled model's: the generated
   code's dense layers call this): a table with a matrix unit (amx) keeps
   the weight in the unit's form from its first call on (1.5 times its
   bytes, up to 1 GiB in all). */
void axrt_dense_packed_const_ep_f32(const float *x, const float *packed, const float *bias,
                                    const float *residual, axrt_act act, float *y, size_t rows,
                                    size_t in, size_t out);
void axrt_conv2d_packed_ep_f32(const float *x, const float *packed, const float *bias,
                               const float *residual, axrt_act act, float *y,
                               const axrt_conv2d_params *p);
/* The packed conv (groups 1, weight packed by axrt_pack_conv2d_f32) of x
   multiplied by one scale per input channel, y = act(conv(x .* s) + bias +
   residual), without that product (axrt_conv_scaled.c): the packed weight
   is scaled into scratch (kh * kw * c * oc floats) and the conv runs on x.
   s for image i starts at scale + i * scale_stride (0: one s for all images,
   c floats). */
void axrt_conv2d_scaled_f32(const float *x, const float *packed, const float *scale, size_t scale_stride,
                            const float *bias, const float *residual, axrt_act act, float *y, float *scratch,
                            const axrt_conv2d_params *p);
/* Packed weight (axrt_pack_conv2d_f32 order) with reduction index k
   multiplied by scale[k % c] into out (as many floats). */
void axrt_scale_packed_conv2d_f32(const float *packed, const float *scale, float *out,
                                  const axrt_conv2d_params *p);
/* Grouped conv (1 < groups, not depthwise; axrt_gconv.inc): w [oc, c/groups,
   kh, kw] -> packed group by group, each as axrt_pack_conv2d_f32 packs a
   conv of c/groups inputs and oc/groups outputs, or, with 4 or 8 inputs
   and outputs a group, rotated in blocks of 16 channels (axrt_gconv.inc);
   the same bytes for every instruction set; the kernel computes what
   axrt_conv2d_f32 computes, with the packed kernels' epilogue. */
void axrt_pack_conv2d_grouped_f32(const float *w, float *packed, const axrt_conv2d_params *p);
void axrt_conv2d_grouped_f32(const float *x, const float *packed, const float *bias,
                             const float *residual, axrt_act act, float *y,
                             const axrt_conv2d_params *p);
/* ---- Winograd convolution (axrt_winograd.c) ----
   F(m x m, 3 x 3), m = 4 or 2, of a float32 NHWC conv with kh = kw = 3,
   stride 1, dilation 1, groups 1, any padding: w [oc, c, 3, 3] -> u, the
   transformed filters (axrt_winograd_packed_elems(p, m) floats; done at
   compile time); the conv then as axrt_conv2d_packed_ep_f32 (the same
   epilogue) with scratch of axrt_winograd_scratch_elems(p, m) floats, on at
   most AXRT_WINOGRAD_SLOTS threads. */
#define AXRT_WINOGRAD_SLOTS 4
size_t axrt_winograd_packed_elems(const axrt_conv2d_params *p, int m);
size_t axrt_winograd_scratch_elems(const axrt_conv2d_params *p, int m);
void axrt_pack_winograd_f32(const float *w, float *u, const axrt_conv2d_params *p, int m);
void axrt_conv2d_winograd_f32(const float *x, const float *u, const float *bias, const float *residual,
                              axrt_act act, float *y, float *scratch, int m, const axrt_conv2d_params *p);
/* ---- end of Winograd ---- */
/* Depthwise conv (groups == c == oc): w [c, 1, kh, kw] -> packed [kh * kw, c]. */
void axrt_pack_depthwise_f32(const float *w, float *packed, const axrt_conv2d_params *p);
void axrt_conv2d_depthwise_f32(const float *x, const float *packed, const float *bias,
                               const float *residual, axrt_act act, float *y,
                               const axrt_conv2d_params *p);
/* as axrt_mha_f32; in_w [3d, d] packed as three [d, d] dense packs one after
   the other (q, k, v), out_w [d, d] packed as a dense weight */
void axrt_mha_packed_f32(const float *q, const float *k, const float *v, const float *in_w,
                         const float *in_b, const float *out_w, const float *out_b, float *y,
                         float *scratch, const axrt_mha_params *p);
void axrt_mha_packed_masked_f32(const float *q, const float *k, const float *v,
                                const float *key_mask, const float *in_w, const float *in_b,
                                const float *out_w, const float *out_b, float *y, float *scratch,
                                const axrt_mha_params *p);

/* ---- attention without the [lq, lk] scores (axrt_flash.inc) ---------------
 * What axrt_mha_packed_masked_f32 computes (key_mask may be NULL), with the
 * scores, softmax and product with v of each head taken one key block at a
 * time (online softmax: a running max and sum per query row, the partial
 * product rescaled when the max grows), so that scratch holds one block of
 * scores per block of query rows instead of all lq x lk of them.  Rows in
 * blocks of at most AXRT_FLASH_ROWS (split over the threads; results do not depend
 * on their number), keys in blocks of AXRT_FLASH_KEYS.  packed: in_w and
 * out_w packed as for axrt_mha_packed_f32; AXRT_MHA_PACKED_CONST: packed,
 * and constant as for axrt_dense_packed_const_ep_f32 (a compiled model's);
 * 0: as stored (as axrt_mha_f32). */
#define AXRT_MHA_PACKED_CONST 2
#define AXRT_FLASH_ROWS 24
#define AXRT_FLASH_KEYS 128
size_t axrt_mha_flash_scratch_elems(const axrt_mha_params *p);
void axrt_mha_flash_f32(const float *q, const float *k, const float *v, const float *key_mask,
                        const float *in_w, const float *in_b, const float *out_w, const float *out_b,
                        float *y, float *scratch, const axrt_mha_params *p, int packed);

/* A groups=1 conv (pe: a 1x1 expansion, or any kernel, stride, padding
   and dilation, as a stem's 3x3/2; weight packed as axrt_pack_conv2d_f32)
   whose result only a depthwise conv (pd, kh <= AXRT_DWCONV_MAX_KH, weight
   packed as axrt_pack_depthwise_f32) reads, the pair computed without the
   expanded tensor: its output rows are made a few at a time, each with
   the conv tiles of axrt_conv2d_packed_ep_f32, into rings in scratch
   (axrt_expand_depthwise_scratch_elems(pd) floats; one ring per band of
   output rows, AXRT_EXPAND_DW_BANDS bands split over the threads).  y is bit for bit what axrt_conv2d_packed_ep_f32 then
   axrt_conv2d_depthwise_f32 give, for every thread count. */
#define AXRT_EXPAND_DW_BANDS 4
size_t axrt_expand_depthwise_scratch_elems(const axrt_conv2d_params *pd);
void axrt_expand_depthwise_f32(const float *x, const float *expand, const float *expand_bias,
                               axrt_act expand_act, const float *dw, const float *dw_bias,
                               axrt_act dw_act, float *y, float *scratch,
                               const axrt_conv2d_params *pe, const axrt_conv2d_params *pd);

/* The whole inverted-residual block: axrt_expand_depthwise_f32's pair, then
   a 1x1 projection (pp: groups 1, stride 1, no padding, weight packed as
   axrt_pack_conv2d_f32) of the depthwise output with its bias, residual
   (may be NULL; not x) and act, band by band: the depthwise rows are
   made into a ring of a few rows, and each of the projection's pixel tiles
   runs as soon as its rows are there, so neither the expanded tensor nor
   the depthwise output exists whole.  scratch:
   axrt_expand_dw_project_scratch_elems(pd) floats (one expansion ring and
   one ring of depthwise rows per band, AXRT_EXPAND_DW_BANDS bands of the
   projection's tiles split over the threads).  y is bit for bit what the
   three kernels give one after the other, for every thread count. */
size_t axrt_expand_dw_project_scratch_elems(const axrt_conv2d_params *pd);
void axrt_expand_dw_project_f32(const float *x, const float *expand, const float *expand_bias,
                                axrt_act expand_act, const float *dw, const float *dw_bias, axrt_act dw_act,
                                const float *project, const float *project_bias, const float *residual,
                                axrt_act project_act, float *y, float *scratch, const axrt_conv2d_params *pe,
                                const axrt_conv2d_params *pd, const axrt_conv2d_params *pp);

/* Depthwise conv overwriting its own input xy (axrt_dwconv.c): groups == c ==
   oc, stride 1, oh == h, ow == w, kh <= AXRT_DWCONV_MAX_KH.  w is [c, 1, kh, kw],
   or [kh * kw, c] when packed != 0; ring holds axrt_dwconv_inplace_ring_elems(p)
   elements; bias may be NULL; act is applied last. */
#define AXRT_DWCONV_MAX_KH 16
size_t axrt_dwconv_inplace_ring_elems(const axrt_conv2d_params *p);
void axrt_dwconv_inplace_f32(float *xy, const float *w, int packed, const float *bias,
                             axrt_act act, float *ring, const axrt_conv2d_params *p);
void axrt_dwconv_inplace_f64(double *xy, const double *w, int packed, const double *bias,
                             axrt_act act, double *ring, const axrt_conv2d_params *p);

/* ---- int8 (axc --quantize=int8; axrt_int8.c) --------------------------------
 * Activations quantised per tensor, asymmetric: q = clamp(round_half_away(x /
 * scale) + zp, -128, 127), held as q + 128 in uint8; weights int8 [-127, 127],
 * symmetric per output channel; int32 accumulation; requantisation
 * q_out = zp + axrt_requantize(acc, mult[o], shift[o]) clamped to [lo, hi]
 * (ReLU/ReLU6 folded into lo/hi), then dequantised to float, or
 * (AXRT_Q8_OUT_BYTES) stored as q + 128 in uint8 for the next int8 layer.
 * The same integers on every instruction set and on Cortex-M.  y is float,
 * or uint8_t when rq->flags has AXRT_Q8_OUT_BYTES.  With AXRT_Q8_TFLITE
 * (a model imported from .tflite) every axrt_requantize below is
 * axrt_requantize_tflite instead, and the kernels compute what TensorFlow
 * Lite's reference kernels compute. */
void axrt_quantize_u8(const float *x, uint8_t *q, size_t n, float scale, int32_t zp);
/* round_half_away(acc * mult / 2^shift), 1 <= shift <= 62 */
int32_t axrt_requantize(int32_t acc, int32_t mult, int shift);
/* gemmlowp's fixed-point primitives as TensorFlow Lite uses them
   (gemmlowp's fixedpoint header): SaturatingRoundingDoublingHighMul,
   the high 32 bits of 2 a b rounded half up (INT32_MAX for
   a == b == INT32_MIN), and RoundingDivideByPOT, x / 2^exponent rounded
   half away from zero (0 <= exponent <= 31). */
int32_t axrt_fixed_high_mul(int32_t a, int32_t b);
int32_t axrt_fixed_divide_pot(int32_t x, int exponent);
/* TensorFlow Lite's MultiplyByQuantizedMultiplier (two roundings) for the
   multiplier mult / 2^shift of axrt_requantize, mult in [0, 2^31) as
   TFLite's QuantizeMultiplier makes it and shift = 31 - its exponent:
   axrt_fixed_divide_pot(axrt_fixed_high_mul(acc * 2^max(0, 31 - shift),
   mult), max(0, shift - 31)), the left shift wrapping as TFLite's int32
   product does; 1 <= shift <= 62. */
int32_t axrt_requantize_tflite(int32_t acc, int32_t mult, int shift);
/* axrt_requant.flags and axrt_ew_q8.flags */
#define AXRT_Q8_OUT_BYTES 1   /* y is uint8_t, q + 128 */
#define AXRT_Q8_TFLITE 2      /* TensorFlow Lite's reference arithmetic (see each kernel) */
#define AXRT_Q8_MUL 4         /* axrt_ew_q8 of axrt_add_q8 and axrt_add_bcast_q8: the product */
typedef struct axrt_requant {
    const int32_t *bias;  /* [out] round(b / (s_x s_w)) - (zp_x + 128) * sum of the channel's w */
    const int32_t *mult;  /* [out] multipliers; NULL: y = acc * fscale[o] (float epilogue follows) */
    const int8_t *shift;  /* [out] */
    const float *fscale;  /* [out] s_x * s_w, read when mult is NULL */
    int32_t zp, lo, hi;   /* output zero point and clamp */
    float scale;          /* output scale */
    int32_t flags;        /* AXRT_Q8_OUT_BYTES (needs mult), AXRT_Q8_TFLITE */
} axrt_requant;
/* x [rows, in] (quantised, + 128), w [out, in] */
void axrt_dense_q8(const uint8_t *x, const int8_t *w, const axrt_requant *rq, void *y, size_t rows,
                   size_t in, size_t out);
/* x NHWC (quantised, + 128; padding reads x_zp = zp_x + 128), w [oc, kh, kw, c / groups];
   patch holds axrt_conv2d_q8_scratch(p) bytes (one receptive field) */
size_t axrt_conv2d_q8_scratch(const axrt_conv2d_params *p);
void axrt_conv2d_q8(const uint8_t *x, int32_t x_zp, const int8_t *w, const axrt_requant *rq, void *y,
                    uint8_t *patch, const axrt_conv2d_params *p);
/* The same on weights packed for the register-tiled GEMM (the layout:
   libaxrt's internals): *_pack writes the packed bytes (packed may be NULL)
   and returns their count; a grouped conv's stay in the plain layout. */
size_t axrt_dense_q8_pack(const int8_t *w, size_t in, size_t out, int8_t *packed);
size_t axrt_conv2d_q8_pack(const int8_t *w, const axrt_conv2d_params *p, int8_t *packed);
void axrt_q8_pack(const int8_t *w, size_t out, size_t nseg, size_t seg_len, int8_t *packed);
void axrt_dense_q8_packed(const uint8_t *x, const int8_t *packed, const axrt_requant *rq, void *y,
                          size_t rows, size_t in, size_t out);
void axrt_conv2d_q8_packed(const uint8_t *x, int32_t x_zp, const int8_t *packed, const axrt_requant *rq,
                           void *y, uint8_t *patch, const axrt_conv2d_params *p);
/* Max-pool of int8 values (q + 128) with the input's scale and zero point:
   the same integers as quantising the float max-pool of the dequantised
   values (dequantisation is increasing), padding never chosen. */
void axrt_maxpool_u8(const uint8_t *x, uint8_t *y, const axrt_pool2d_params *p);
/* Elementwise int8 (add, a concat's part, a ReLU/ReLU6 not fused into a
   layer): operand k (q_k + 128 in uint8) scaled in fixed point,
   v_k = axrt_requantize((q_k - zp[k]) * 2^left, mult[k], shift[k]); a
   rescale (concat, ReLU) gives q = out_zp + v_0, an add
   q = out_zp + axrt_requantize(v_0 + v_1, out_mult, out_shift) (TFLite's
   add: left = 20, mult[k] / 2^shift[k] = s_k / (2 max(s_0, s_1)), the
   output's = 2 max(s_0, s_1) / (2^20 s_out)); q clamped to [lo, hi], then
   dequantised to float (scale) or, AXRT_Q8_OUT_BYTES, stored as q + 128.
   AXRT_Q8_TFLITE: axrt_requantize_tflite for axrt_requantize (TFLite's
   add is then exact).  AXRT_Q8_MUL: the add kernels multiply instead,
   q = out_zp + axrt_requantize((q_0 - zp[0]) (q_1 - zp[1]), out_mult,
   out_shift) (TFLite's int8 MUL: out_mult / 2^out_shift = s_0 s_1 / s_out;
   portable C on every instruction set).  Integer arithmetic only: the same
   integers everywhere. */
typedef struct axrt_ew_q8 {
    int32_t zp[2], mult[2], shift[2], left;
    int32_t out_mult, out_shift, out_zp, lo, hi;
    float scale;
    int32_t flags;   /* AXRT_Q8_OUT_BYTES, AXRT_Q8_TFLITE */
} axrt_ew_q8;
/* y[i] = a[i] + b[i] (n elements; y may be a or b when AXRT_Q8_OUT_BYTES) */
void axrt_add_q8(const uint8_t *a, const uint8_t *b, void *y, size_t n, const axrt_ew_q8 *p);
/* y[o * ld + offset + j] = rescaled x[o * row + j] for o < outer, j < row
   (a concat's part; a ReLU: outer 1, ld = row, offset 0; y may be x then) */
void axrt_rescale_q8(const uint8_t *x, void *y, size_t outer, size_t row, size_t ld, size_t offset,
                     const axrt_ew_q8 *p);
/* The mean of int8 values over the middle axis of x [outer, axis, inner]
   (TFLite's integer mean; a mean over one dim, kept as 1, and a global
   mean-pool: x [n, h w, c]), x as q + 128: y [outer, inner] =
   out_zp + axrt_requantize(S, mult[0], shift[0]) with S = the exact int32
   sum over `axis` of (q - zp[0]) and mult[0] / 2^shift[0] =
   s_in / (axis s_out); clamped to [lo, hi], dequantised (scale) or, AXRT_Q8_OUT_BYTES,
   stored as q + 128.  Integer arithmetic only (axis * 255 < 2^31). */
void axrt_mean_q8(const uint8_t *x, void *y, size_t outer, size_t axis, size_t inner, const axrt_ew_q8 *p);
/* The divisor of mean-pool p's window at output (oy, ox), as the float
   kernels count it (axrt_meanpool_counted_*): the window clipped to the
   input, or with count_pad to the input and its padding, of which only
   div_pad_bottom rows and div_pad_right columns after the input count
   (ceil mode's extra ones do not). */
int axrt_meanpool_divisor(const axrt_pool2d_params *p, int oy, int ox, int div_pad_bottom, int div_pad_right,
                          int count_pad);
/* Windowed mean pooling of int8 values (x, y NHWC, q + 128): each output
   is out_zp + axrt_requantize(S, mult_d, shift_d), S the exact int32 sum of
   (q - zp[0]) over the window's pixels inside the input (the padding is 0,
   the zero point) and d its divisor (axrt_meanpool_divisor with window[0],
   window[1], window[2] as div_pad_bottom, div_pad_right, count_pad);
   mult_d = window[5 + 2 (d - window[3])], shift_d the int32 after it, for
   the window[4] divisors from window[3] on (mult_d / 2^shift_d =
   s_in / (d s_out)).  Clamped to [lo, hi], dequantised (scale) or, AXRT_Q8_OUT_BYTES,
   stored as q + 128.  Integer arithmetic only. */
void axrt_meanpool_q8(const uint8_t *x, void *y, const axrt_pool2d_params *p, const int32_t *window,
                      const axrt_ew_q8 *e);
/* TensorFlow Lite's int8 LOGISTIC and TANH (a model imported from .tflite):
   y[i] = table[x[i]] (x as q + 128; the compiler's table of the 256
   results, TFLite's own), stored as axrt_ew_q8 p says (dequantised with
   scale and out_zp, or AXRT_Q8_OUT_BYTES). */
void axrt_lookup_q8(const uint8_t *x, void *y, size_t n, const int32_t *table, const axrt_ew_q8 *p);
/* TensorFlow Lite's int8 SOFTMAX over rows of len values (x as q + 128):
   per row, with m its largest byte and e(b) = exp_table[255 - m + b] (the
   compiler's table, exp_table[255 - v] = expf(-s_in beta v)), the float sum
   S of e over the row in order, then each output
   q = round_half_away(e(b) * (1 / (S * scale))) + out_zp clamped to
   [lo, hi], stored as axrt_lookup_q8 stores.  Float32 operations in
   TFLite's order: the same integers wherever float is IEEE single. */
void axrt_softmax_q8(const uint8_t *x, void *y, size_t rows, size_t len, const float *exp_table,
                     const axrt_ew_q8 *p);
/* axrt_add_q8 with NumPy broadcasting: y [shape] (rank dims, contiguous),
   element i of a at sum_d i_d * a_strides[d] (0 along a broadcast dim), b
   alike; the same integers as axrt_add_q8 on the broadcast operands. */
void axrt_add_bcast_q8(const uint8_t *a, const int64_t *a_strides, const uint8_t *b, const int64_t *b_strides,
                       void *y, const int64_t *shape, int rank, const axrt_ew_q8 *p);
/* Bytes moved as axrt_gather_strided_f32 moves floats (an int8 transpose:
   y[i] = x[offset + sum_d i_d * strides[d]] over y_shape). */
void axrt_gather_u8(const uint8_t *x, uint8_t *y, const int64_t *y_shape, const int64_t *strides, int64_t offset,
                    int rank);
/* The int8 dot product in use: "portable", "avx2" or "avx512vnni". */
const char *axrt_q8_isa_name(void);

/* ---- training (axc --train and axc train; docs/training.md) ----
 * One optimizer step over one parameter tensor in place: p and g hold n
 * values, m and v its moments (zero before step 1; v used by adam/adamw
 * only, m by sgd with momentum, adam, adamw and lion; NULL where unused),
 * step is 1-based.  torch.optim.SGD/Adam/AdamW semantics (sgd: L2 weight
 * decay, momentum buffer = g at step 1, Nesterov; adam: L2; adamw: decoupled
 * decay), Lion: u = sign(b1 m + (1 - b1) g), p -= lr (u + wd p), then
 * m = b2 m + (1 - b2) g.  Arithmetic in the tensor's type; the bias
 * corrections in double. */
typedef enum axrt_optimizer { AXRT_OPT_SGD, AXRT_OPT_ADAM, AXRT_OPT_ADAMW, AXRT_OPT_LION } axrt_optimizer;
typedef struct axrt_optim {
    axrt_optimizer kind;
    double lr, momentum, weight_decay, beta1, beta2, eps;
    int nesterov;
} axrt_optim;
void axrt_optim_step_f32(const axrt_optim *h, float *p, const float *g, float *m, float *v, size_t n,
                         int64_t step);
void axrt_optim_step_f64(const axrt_optim *h, double *p, const double *g, double *m, double *v, size_t n,
                         int64_t step);
/* Mixed precision (axc --train of a Float16 or BFloat16 model): the half
 * gradient g (half: AXRT_F16 or AXRT_BF16) converted to float and multiplied
 * by inv_scale (1 / the loss scale; 1 without scaling), applied by
 * axrt_optim_step_f32 to the float master copy (moments m, v, float), then
 * the half parameter p = the master rounded to nearest even. */
void axrt_amp_step(const axrt_optim *h, axrt_dtype half, uint16_t *p, float *master, const uint16_t *g, float *m,
                   float *v, size_t n, int64_t step, float inv_scale);
/* 1 when none of the n half values (AXRT_F16 or AXRT_BF16) is inf or NaN. */
int axrt_half_all_finite(axrt_dtype half, const uint16_t *x, size_t n);
/* ReLU's backward: y = dy * (x > 0 ? 1 : 0) elementwise (y may be dy). */
void axrt_relu_grad_f32(const float *dy, const float *x, float *y, size_t n);
/* g [m, n] = a [m, k] . b [k, n] (row-major), then axrt_optim_step_f32 on
 * p [m, n] (moments mom, v) with it: a block of rows at a time, each updated
 * while its gradient is still in cache (axc --train fuses a weight's
 * gradient matmul with its update this way).  p, mom and v end as the step
 * leaves them; g is room for the gradient: Adam's (AdamW's) update of a
 * ReLU layer's weight, whose a (the masked output gradient) is mostly 0,
 * may run without it on a CPU with AVX-512 (each gradient row computed
 * from a's non-zero terms, a column block at a time, and updated at once),
 * leaving g as it was; else g ends as axrt_matmul_f32 leaves it. */
void axrt_matmul_optim_f32(const axrt_optim *h, const float *a, const float *b, float *g, size_t m,
                           size_t k, size_t n, float *p, float *mom, float *v, int64_t step);

#ifdef __cplusplus
}
#endif
#endif /* AXRT_H */
