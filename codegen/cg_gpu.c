/* cg_gpu.c — the CUDA and HIP back ends (docs/gpu.md): one emitter,
 * two dialects.
 *
 * For each fully planned model it writes kernel source specialised to the
 * model (every shape, stride and offset a literal; one kernel per node, each
 * with its epilogue — residual add, then activation — fused in), and host
 * C99 that embeds that source as a string, the parameter block and the
 * launch list, and calls libaxrt_gpu (runtime/gpu/axrt_gpu.h) to compile it
 * at start-up.  Every kernel takes (A arena, P parameters, X0.. inputs,
 * Y0.. outputs) so the runtime launches the whole list with one argument
 * array.  Where a value lives on the device:
 *   input/output  X<i> / Y<i> (the caller's device pointers)
 *   param         P + its offset in the parameter block (256-byte aligned)
 *   scalar        a literal in the kernel
 *   computed      A + node->offset (the same arena plan as the C target;
 *                 <NAME>_DEVICE_ARENA_BYTES), or the output pointer.
 * Kernels: a shared-memory tiled FP32 GEMM (64x64 tiles, 4x4 per thread)
 * for dense and matmul, and conv as an implicit GEMM through the same
 * kernel (A gathered from the NHWC input, no im2col buffer; groups on
 * blockIdx.z); direct depthwise conv and pools (one thread per output);
 * softmax with an online max/sum (one block per row); LayerNorm in one
 * block per row; fused elementwise chains as one indexed loop.  Exact FP32
 * by default (no TF32), so results match the C target within rounding;
 * AXRT_GPU_MATH=bf16 puts every GEMM, conv included, on BFloat16 tensor
 * cores (mma.sync) for sm_80 and later.
 * Float16/BFloat16 models (docs/precision.md) keep their parameters and
 * arena values in the half type: pointers to them are axk_half/axk_bhalf
 * (the prelude), which read as float and round to nearest even on
 * assignment, so every kernel loads and stores through the conversions
 * while its arithmetic, shared tiles and scratch stay float.
 * The dialects differ only in the source prelude, the names and the
 * runtime library's entry points (axrt_gpu.c). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cg_gpu_internal.h"
#include "ir_interp.h"

#define COMMON_PRELUDE                                                                         \
    "#define AXK extern \"C\" __global__ void __launch_bounds__(256)\n"                        \
    "typedef unsigned char u8;\n"                                                              \
    "#define AXK_INF __int_as_float(0x7f800000)\n"                                              \
    "#define AXK_NAN __int_as_float(0x7fc00000)\n"                                              \
    "/* Float16 and BFloat16 bits to float (inputs converted at the boundary) */\n"            \
    "__device__ inline float axk_f16(unsigned short h)\n{\n"                                    \
    "    const unsigned s = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n" \
    "    if (e == 0) { const float f = (float)m * 5.9604644775390625e-8f; return s ? -f : f; }\n" \
    "    if (e == 31) return __int_as_float((int)(s | 0x7f800000u | (m << 13)));\n"              \
    "    return __int_as_float((int)(s | ((e + 112u) << 23) | (m << 13)));\n}\n"                 \
    "__device__ inline float axk_bf16(unsigned short h) { return __int_as_float((int)((unsigned)h << 16)); }\n" \
    "/* float to Float16 / BFloat16 bits, to nearest, ties to even, as the C\n"                  \
    "   runtime's axrt_float_to_half / axrt_float_to_bf16 (runtime/axrt_cpu.h) */\n"           \
    "__device__ inline unsigned short axk_to_f16(float f)\n{\n"                                  \
    "    unsigned u = __float_as_uint(f);\n"                                                      \
    "    const unsigned s = u & 0x80000000u;\n    u ^= s;\n"                                    \
    "    if (u >= 0x47800000u) u = u > 0x7f800000u ? 0x7e00u : 0x7c00u;\n"                       \
    "    else if (u < 0x38800000u) u = __float_as_uint(__uint_as_float(u) + 0.5f) - 0x3f000000u;\n" \
    "    else u = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;\n"                                 \
    "    return (unsigned short)(u | (s >> 16));\n}\n"                                            \
    "__device__ inline unsigned short axk_to_bf16(float f)\n{\n"                                 \
    "    const unsigned u = __float_as_uint(f);\n"                                                \
    "    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);\n"     \
    "    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n}\n"                   \
    "/* Float16 and BFloat16 storage (half models, docs/precision.md): read as\n"                  \
    "   float, assigned from float (rounded once); arithmetic is float */\n"                      \
    "struct axk_half\n{\n    unsigned short bits;\n"                                             \
    "    __device__ operator float() const { return axk_f16(bits); }\n"                           \
    "    __device__ axk_half &operator=(float f) { bits = axk_to_f16(f); return *this; }\n};\n"   \
    "struct axk_bhalf\n{\n    unsigned short bits;\n"                                            \
    "    __device__ operator float() const { return axk_bf16(bits); }\n"                          \
    "    __device__ axk_bhalf &operator=(float f) { bits = axk_to_bf16(f); return *this; }\n};\n" \
    "/* GEMMs on tensor cores (BFloat16 operands, Float32 accumulation) when the\n"                 \
    "   runtime compiles with AXK_MMA_BF16 (AXRT_GPU_MATH=bf16) for sm_80 or later */\n"         \
    "#if defined(AXK_MMA_BF16) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"                \
    "#define AXK_MMA 1\n"                                                                          \
    "__device__ inline unsigned axk_bf16_bits(float f)\n{\n"                                        \
    "    const unsigned u = __float_as_uint(f);\n"                                                 \
    "    return (f != f ? 0x7fc00000u : u + 0x7fffu + ((u >> 16) & 1u)) >> 16;\n}\n"               \
    "__device__ inline unsigned axk_bf16x2(float lo, float hi) { return axk_bf16_bits(lo) | axk_bf16_bits(hi) << 16; }\n" \
    "#ifndef AXK_MMA_16816 /* d[0..3] += A (a0..a3) B (b0, b1), one warp's m16n8k16 */\n"        \
    "#define AXK_MMA_16816(d, a0, a1, a2, a3, b0, b1) \\\n"                                        \
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \" \\\n"             \
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" \\\n"   \
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) \\\n"             \
    "                 : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1))\n"       \
    "#endif\n"                                                                                    \
    "#else\n#define AXK_MMA 0\n#endif\n"

const gpu_dialect cgg_dialects[CGG_DIALECT_COUNT] = {
    {"cuda", "CUDA", "AXRT_GPU_CUDA", "/* CUDA C++ for NVRTC */\n" COMMON_PRELUDE},
    {"hip", "HIP", "AXRT_GPU_HIP", "/* HIP for hiprtc */\n#include <hip/hip_runtime.h>\n" COMMON_PRELUDE},
};

#define BLOCK 256

static int64_t product(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= dims[i];
    return p;
}

/* A float literal: "32.0f", "1e-05f", AXK_INF for infinities. */
static const char *flit(const gk *k, double v)
{
    if (v != v) return "__int_as_float(0x7fc00000)";
    if (v > 3.5e38 || v < -3.5e38) return v > 0 ? "AXK_INF" : "(-AXK_INF)";
    char text[64];
    snprintf(text, sizeof text, "%.9g", v);
    return ax_sprintf(arena_of(k), "%s%sf", text, strpbrk(text, ".e") ? "" : ".0");
}

/* ---- where values live ----------------------------------------------------- */

/* The kernel source's element type of dtype (no <stdint.h> in NVRTC);
 * Float16/BFloat16 are their bits wrapped in axk_half/axk_bhalf, which read
 * as float and round on assignment (the prelude). */
static const char *kernel_type(axrt_dtype dtype)
{
    switch (dtype) {
    case AXRT_F64: return "double";
    case AXRT_F16: return "axk_half";
    case AXRT_BF16: return "axk_bhalf";
    case AXRT_I8: return "signed char";
    case AXRT_I32: return "int";
    case AXRT_I64: return "long long";
    default: return "float";
    }
}

/* x (an element of dtype) as a float expression. */
static const char *to_float(const gk *k, axrt_dtype dtype, const char *x)
{
    if (dtype == AXRT_F32) return x;
    return ax_sprintf(arena_of(k), "(float)(%s)", x);
}

/* The element type of node id's device storage. */
static const char *type_of(const gk *k, int id)
{
    return kernel_type(node_at(k, id)->dtype);
}

/* A float literal of v as a node of dtype holds it: rounded to a half
 * type's nearest value first, as the C target's literals are (scalars,
 * eps, alpha), so both targets compute with the same constants. */
static double rounded(axrt_dtype dtype, double v)
{
    if (dtype != AXRT_F16 && dtype != AXRT_BF16) return v;
    unsigned short bits;
    ir_element_set(&bits, dtype, 0, v);
    return ir_element_get(&bits, dtype, 0);
}

static const char *dlit(const gk *k, axrt_dtype dtype, double v)
{
    return flit(k, rounded(dtype, v));
}

static int io_index(const gk *k, int id, bool *output)
{
    for (int i = 0; i < k->g->ninputs; i++)
        if (k->g->inputs[i] == id) { *output = false; return i; }
    const int out = ir_output_index(k->g, id);
    *output = true;
    return out;
}

/* A float pointer expression for node id's device storage. */
static const char *ptr(const gk *k, int id)
{
    while (node_at(k, id)->op == IR_OP_reshape && node_at(k, id)->offset < 0 &&
           ir_output_index(k->g, id) < 0)
        id = node_at(k, id)->src[0];
    const ir_node *n = node_at(k, id);
    bool output = false;
    if (n->op == IR_OP_input)
        return ax_sprintf(arena_of(k), "X%d", io_index(k, id, &output));
    if (n->op == IR_OP_param)
        return ax_sprintf(arena_of(k), "((const %s *)(P + %zu))", kernel_type(n->dtype), k->param_offset[id]);
    if (n->offset >= 0)
        return ax_sprintf(arena_of(k), "((%s *)(A + %lld))", kernel_type(n->dtype), (long long)n->offset);
    const int out = io_index(k, id, &output);
    if (out >= 0 && output)
        return ax_sprintf(arena_of(k), "Y%d", out);
    ax_die("cg_gpu: %%%d %s has no storage (not planned)", id, ir_ops[n->op].name);
}

/* Operand i of n at element index idx as a float (a literal for a scalar). */
static const char *elem(const gk *k, const ir_node *n, int i, const char *idx)
{
    const ir_node *s = node_at(k, n->src[i]);
    if (s->op == IR_OP_scalar) return dlit(k, s->dtype, s->attrs.scalar);
    return to_float(k, s->dtype, ax_sprintf(arena_of(k), "%s[%s]", ptr(k, n->src[i]), idx));
}

static bool has_operand(const ir_node *n, int i)
{
    return i < n->nsrc && n->src[i] != IR_NONE;
}

/* ---- kernels and launches ----------------------------------------------- */

/* The kernel name's declaration: (arena, parameters, inputs, outputs). */
static void begin_kernel_named(gk *k, const char *name, const char *comment)
{
    k->kernel = name;
    ax_buf_printf(k->src, "\n/* %s */\nAXK %s(u8 *A, const u8 *P", comment, name);
    for (int i = 0; i < k->g->ninputs; i++)
        ax_buf_printf(k->src, ", const %s *X%d", kernel_type(node_at(k, k->g->inputs[i])->dtype), i);
    for (int i = 0; i < k->g->noutputs; i++)
        ax_buf_printf(k->src, ", %s *Y%d", kernel_type(node_at(k, k->g->outputs[i])->dtype), i);
    ax_buf_puts(k->src, ")\n{\n    (void)A; (void)P;\n");
}

/* A kernel named <model>_k<id><suffix> for node id. */
static void begin_kernel_part(gk *k, int id, const char *suffix, const char *what)
{
    begin_kernel_named(k, ax_sprintf(arena_of(k), "%s_k%d%s", k->g->name, id, suffix),
                       ax_sprintf(arena_of(k), "%%%d %s", id, what));
}

static void begin_kernel(gk *k, int id, const char *what)
{
    begin_kernel_part(k, id, "", what);
}

static void launch(gk *k, int64_t gx, int64_t gy, int64_t gz, int block)
{
    ax_buf_printf(&k->launches, "    {\"%s\", {%lldu, %lldu, %lldu}, {%du, 1u, 1u}},\n", k->kernel,
                  (long long)gx, (long long)gy, (long long)gz, block);
    k->nlaunches++;
}

/* Residual add, then activation, on v at output element o. */
static void epilogue(gk *k, const ir_node *n, const char *o)
{
    if (n->attrs.residual != IR_NONE && ir_ops[n->op].flags & IR_EPILOGUE)
        ax_buf_printf(k->src, "    v = v + %s;\n", elem(k, n, n->attrs.residual, o));
    if (n->attrs.act != IR_NONE && ir_ops[n->op].flags & IR_EPILOGUE)
        ax_buf_printf(k->src, "    v = %s;\n",
                      cg_unary_text(arena_of(k), n->attrs.act, "v", AXRT_F32, rounded(n->dtype, n->attrs.alpha)));
}

/* One thread per element of n: "o" is the element, declared and bounded. */
static void begin_elementwise(gk *k, const ir_node *n, const char *what)
{
    begin_kernel(k, (int)(n - k->g->nodes), what);
    ax_buf_printf(k->src, "    const long long o = (long long)blockIdx.x * %d + threadIdx.x;\n"
                          "    if (o >= %lldLL) return;\n", BLOCK, (long long)ir_numel(n));
}

static void end_elementwise(gk *k, const ir_node *n)
{
    epilogue(k, n, "o");
    ax_buf_printf(k->src, "    %s[o] = v;\n}\n", ptr(k, (int)(n - k->g->nodes)));
    launch(k, (ir_numel(n) + BLOCK - 1) / BLOCK, 1, 1, BLOCK);
}

/* i0.. i<rank-1> of element o over dims. */
static void decompose(gk *k, const int64_t *dims, int rank, const char *o)
{
    ax_buf_printf(k->src, "    long long r_ = %s;\n", o);
    for (int d = rank - 1; d >= 0; d--)
        ax_buf_printf(k->src, "    const long long i%d = r_ %% %lldLL; r_ /= %lldLL;\n", d,
                      (long long)dims[d], (long long)dims[d]);
    ax_buf_puts(k->src, "    (void)r_;\n");
}

/* "i0 * 16 + i1": the element of strides at (i0, i1, ...). */
static const char *index_of(const gk *k, const int64_t *strides, int rank)
{
    ax_buf t = {0};
    for (int d = 0; d < rank; d++)
        if (strides[d]) ax_buf_printf(&t, "%si%d * %lldLL", t.len ? " + " : "", d, (long long)strides[d]);
    const char *s = ax_strdup(arena_of(k), t.len ? t.data : "0");
    ax_buf_free(&t);
    return s;
}

/* ---- elementwise families ------------------------------------------------ */

/* Temporary v of a loop program: a load is a<input>, the others t<step>
 * (the loads come first, ir_plan.h). */
static const char *loop_temp(const gk *k, const ir_loop *l, int v)
{
    if (l->ops[v].kind == IR_LOOP_LOAD)
        return ax_sprintf(arena_of(k), "a%d", l->ops[v].arg[0]);
    return ax_sprintf(arena_of(k), "t%d", v - l->ninputs);
}

/* A fused elementwise node's loop program (cg_plan_loop.c), one thread per
 * result element o (its indices decomposed over the program's loops),
 * computed in float. */
static void emit_fused(gk *k, const ir_node *n)
{
    const ir_loop *l = cg_plan_loop(k->g, (int)(n - k->g->nodes));
    begin_elementwise(k, n, "fused elementwise");
    decompose(k, l->dims, l->nloops, "o");
    for (int v = 0; v < l->nops; v++) {
        const ir_loop_op *o = &l->ops[v];
        const char *x = loop_temp(k, l, v), *a = o->arg[0] >= 0 ? loop_temp(k, l, o->arg[0]) : NULL;
        ax_buf_printf(k->src, "    const float %s = ", x);
        if (o->kind == IR_LOOP_LOAD)
            ax_buf_puts(k->src, elem(k, n, o->arg[0], index_of(k, l->in_strides[o->arg[0]], l->nloops)));
        else if (o->kind == IR_LOOP_CONST) ax_buf_puts(k->src, dlit(k, n->dtype, o->real));
        else if (o->kind == IR_LOOP_BINARY)
            ax_buf_puts(k->src, cg_binary_text(arena_of(k), o->op, a, loop_temp(k, l, o->arg[1]), AXRT_F32));
        else if (o->kind == IR_LOOP_DERIV)   /* a unary_grad's: the training step is the C target's */
            ax_die("cg_gpu: a derivative in the loop program of %%%d", l->output);
        else ax_buf_puts(k->src, cg_unary_text(arena_of(k), o->op, a, AXRT_F32, rounded(n->dtype, o->real)));
        ax_buf_puts(k->src, ";\n");
    }
    ax_buf_printf(k->src, "    float v = %s;\n", loop_temp(k, l, l->store));
    end_elementwise(k, n);
}

static void emit_unary(gk *k, const ir_node *n)
{
    begin_elementwise(k, n, ir_ops[n->op].name);
    const char *x = elem(k, n, 0, "o");
    if (n->op == IR_OP_cast)
        ax_buf_printf(k->src, "    float v = %s;\n", x); /* elem converted it */
    else ax_buf_printf(k->src, "    const float x = %s;\n    float v = %s;\n", x,
                       cg_unary_text(arena_of(k), n->op, "x", AXRT_F32, rounded(n->dtype, n->attrs.alpha)));
    end_elementwise(k, n);
}

static void emit_binary(gk *k, const ir_node *n)
{
    int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK];
    cg_broadcast_strides(node_at(k, n->src[0]), n, sa);
    cg_broadcast_strides(node_at(k, n->src[1]), n, sb);
    begin_elementwise(k, n, ir_ops[n->op].name);
    decompose(k, n->shape, n->rank, "o");
    ax_buf_printf(k->src, "    float v = %s;\n",
                  cg_binary_text(arena_of(k), n->op, elem(k, n, 0, index_of(k, sa, n->rank)),
                                 elem(k, n, 1, index_of(k, sb, n->rank)), AXRT_F32));
    end_elementwise(k, n);
}

/* A copy through strides of the source: transpose, slice, reshape. */
static void emit_gather_from(gk *k, const ir_node *n, int from, const int64_t *strides, int64_t offset,
                             const char *what)
{
    begin_elementwise(k, n, what);
    decompose(k, n->shape, n->rank, "o");
    ax_buf_printf(k->src, "    float v = %s[%lldLL + %s];\n", ptr(k, from), (long long)offset,
                  index_of(k, strides, n->rank));
    end_elementwise(k, n);
}

static void emit_gather(gk *k, const ir_node *n, const int64_t *strides, int64_t offset, const char *what)
{
    emit_gather_from(k, n, n->src[0], strides, offset, what);
}

static void contiguous_strides(const ir_node *x, int64_t *strides)
{
    for (int d = x->rank - 1; d >= 0; d--)
        strides[d] = d == x->rank - 1 ? 1 : strides[d + 1] * x->shape[d + 1];
}

static void emit_transpose(gk *k, const ir_node *n)
{
    int64_t xs[IR_MAX_RANK], s[IR_MAX_RANK];
    contiguous_strides(node_at(k, n->src[0]), xs);
    for (int d = 0; d < n->rank; d++) s[d] = xs[n->attrs.perm[d]];
    emit_gather(k, n, s, 0, "transpose");
}

static void emit_slice(gk *k, const ir_node *n)
{
    int64_t xs[IR_MAX_RANK], s[IR_MAX_RANK], offset = 0;
    contiguous_strides(node_at(k, n->src[0]), xs);
    for (int d = 0; d < n->rank; d++) {
        s[d] = xs[d] * n->attrs.step[d];
        offset += n->attrs.begin[d] * xs[d];
    }
    emit_gather(k, n, s, offset, "slice");
}

/* Result k of a chunk: its part of the chunk's operand along the axis
 * (torch.chunk: parts of ceil(size / parts), the last one smaller). */
static void emit_result(gk *k, const ir_node *n)
{
    const ir_node *chunk = node_at(k, n->src[0]);
    const ir_node *x = node_at(k, chunk->src[0]);
    const int axis = chunk->attrs.axis;
    const int64_t size = (x->shape[axis] + chunk->attrs.parts - 1) / chunk->attrs.parts;
    int64_t xs[IR_MAX_RANK];
    contiguous_strides(x, xs);
    emit_gather_from(k, n, chunk->src[0], xs, n->attrs.index * size * xs[axis], "chunk result");
}

static void emit_copy(gk *k, const ir_node *n, int from_id, const char *what)
{
    begin_elementwise(k, n, what);
    ax_buf_printf(k->src, "    float v = %s[o];\n", ptr(k, from_id));
    end_elementwise(k, n);
}

static void emit_concat(gk *k, const ir_node *n)
{
    const int axis = n->attrs.axis;
    const int64_t inner = product(n->shape, axis + 1, n->rank), row = n->shape[axis] * inner;
    begin_elementwise(k, n, "concat");
    ax_buf_printf(k->src, "    const long long outer = o / %lldLL, c = o %% %lldLL;\n    float v;\n",
                  (long long)row, (long long)row);
    int64_t start = 0;
    for (int i = 0; i < n->nsrc; i++) {
        const int64_t part = node_at(k, n->src[i])->shape[axis] * inner;
        ax_buf_printf(k->src, "    %sif (c < %lldLL) v = %s[outer * %lldLL + c - %lldLL];\n",
                      i ? "else " : "", (long long)(start + part), ptr(k, n->src[i]), (long long)part,
                      (long long)start);
        start += part;
    }
    ax_buf_puts(k->src, "    else v = 0.0f;\n");
    end_elementwise(k, n);
}

/* One thread per output element: row idx[o / dim] of the table.  An index
 * outside [0, vocab) gives NaN and sets the arena's index-error word, which
 * the host forward turns into AXRT_ERR_INDEX as the C target returns. */
static void emit_embedding(gk *k, const ir_node *n)
{
    const ir_node *w = node_at(k, n->src[1]);
    const int64_t vocab = w->shape[0], dim = w->shape[1];
    begin_elementwise(k, n, "embedding");
    ax_buf_printf(k->src, "    const long long row = (long long)%s[o / %lldLL];\n"
                          "    const bool inside = row >= 0 && row < %lldLL;\n"
                          "    float v = inside ? %s[row * %lldLL + o %% %lldLL] : AXK_NAN;\n"
                          "    if (!inside) *(volatile int *)(A + %zu) = 1;\n",
                  ptr(k, n->src[0]), (long long)dim, (long long)vocab, ptr(k, n->src[1]), (long long)dim,
                  (long long)dim, k->index_word - 1);
    end_elementwise(k, n);
}

/* Upsample's source along one axis of size in scaled by s (runtime
 * upsample_source): i0 and i1 and the weight f of i1, declared as
 * <p>0, <p>1, <p>f from the output index <p>o. */
static void upsample_source(gk *k, const char *p, int64_t in, int s, int mode)
{
    if (mode == 0) {
        ax_buf_printf(k->src, "    const long long %s0 = %so / %d, %s1 = %s0;\n    const float %sf = 0.0f;\n",
                      p, p, s, p, p, p);
        return;
    }
    if (mode == 2)
        ax_buf_printf(k->src, "    float %ss = %s;\n", p,
                      in * s > 1 ? ax_sprintf(arena_of(k), "(float)%so * %s / %s", p, flit(k, (double)(in - 1)),
                                              flit(k, (double)(in * s - 1)))
                                 : "0.0f");
    else
        ax_buf_printf(k->src, "    float %ss = ((float)%so + 0.5f) / %s - 0.5f;\n", p, p, flit(k, (double)s));
    ax_buf_printf(k->src, "    if (%ss < 0.0f) %ss = 0.0f;\n"
                          "    long long %s0 = (long long)%ss;\n    if (%s0 > %lldLL) %s0 = %lldLL;\n"
                          "    const long long %s1 = %s0 + 1 < %lldLL ? %s0 + 1 : %lldLL;\n"
                          "    const float %sf = %ss - (float)%s0;\n",
                  p, p, p, p, p, (long long)(in - 1), p, (long long)(in - 1), p, p, (long long)in, p,
                  (long long)(in - 1), p, p, p);
}

/* torch.nn.Upsample on NHWC, one thread per output element: nearest, or
 * bilinear from the four neighbours (align_corners as attrs.mode). */
static void emit_upsample(gk *k, const ir_node *n)
{
    const ir_node *x = node_at(k, n->src[0]);
    const int64_t H = x->shape[1], W = x->shape[2], C = x->shape[3], OH = n->shape[1], OW = n->shape[2];
    begin_elementwise(k, n, "upsample");
    ax_buf_printf(k->src, "    const long long c = o %% %lldLL, xo = (o / %lldLL) %% %lldLL, yo = (o / %lldLL) %% %lldLL, b = o / %lldLL;\n",
                  (long long)C, (long long)C, (long long)OW, (long long)(C * OW), (long long)OH,
                  (long long)(C * OW * OH));
    upsample_source(k, "y", H, n->attrs.scale[0], n->attrs.mode);
    upsample_source(k, "x", W, n->attrs.scale[1], n->attrs.mode);
    ax_buf_printf(k->src, "    const %s *r0 = %s + (b * %lldLL + y0) * %lldLL, *r1 = %s + (b * %lldLL + y1) * %lldLL;\n",
                  type_of(k, n->src[0]), ptr(k, n->src[0]), (long long)H, (long long)(W * C), ptr(k, n->src[0]), (long long)H,
                  (long long)(W * C));
    if (n->attrs.mode == 0)
        ax_buf_printf(k->src, "    float v = r0[x0 * %lldLL + c];\n    (void)r1; (void)xf; (void)yf;\n", (long long)C);
    else
        ax_buf_printf(k->src,
                      "    const float top = r0[x0 * %lldLL + c] * (1.0f - xf) + r0[x1 * %lldLL + c] * xf;\n"
                      "    const float bottom = r1[x0 * %lldLL + c] * (1.0f - xf) + r1[x1 * %lldLL + c] * xf;\n"
                      "    float v = top * (1.0f - yf) + bottom * yf;\n",
                      (long long)C, (long long)C, (long long)C, (long long)C);
    end_elementwise(k, n);
}

/* ---- reductions ------------------------------------------------------------ */

static void emit_reduce(gk *k, const ir_node *n)
{
    const ir_node *x = node_at(k, n->src[0]);
    const int axis = n->attrs.axis;
    const int64_t len = x->shape[axis], inner = product(x->shape, axis + 1, x->rank);
    static const char *const init[] = {"0.0f", "-AXK_INF", "AXK_INF", "1.0f"};
    static const char *const step[] = {"acc += e", "acc = (e > acc || e != e) ? e : acc",
                                       "acc = (e < acc || e != e) ? e : acc", "acc *= e"};
    const int kind = n->op == IR_OP_maximum ? 1 : n->op == IR_OP_minimum ? 2 : n->op == IR_OP_prod ? 3 : 0;
    begin_elementwise(k, n, ir_ops[n->op].name);
    ax_buf_printf(k->src,
                  "    const %s *x = %s + (o / %lldLL) * %lldLL + o %% %lldLL;\n"
                  "    float acc = %s;\n"
                  "    for (long long j = 0; j < %lldLL; j++) { const float e = x[j * %lldLL]; %s; }\n"
                  "    float v = acc%s;\n",
                  type_of(k, n->src[0]), ptr(k, n->src[0]), (long long)inner, (long long)(len * inner), (long long)inner,
                  init[kind], (long long)len, (long long)inner, step[kind],
                  n->op == IR_OP_mean ? ax_sprintf(arena_of(k), " / %s", flit(k, (double)len)) : "");
    end_elementwise(k, n);
}

/* torch.argmax over attrs.axis: the first index of the largest element, the
 * first NaN counting as the largest (the C runtime's rule); Int64 indices. */
static void emit_argmax(gk *k, const ir_node *n)
{
    const ir_node *x = node_at(k, n->src[0]);
    const int axis = n->attrs.axis;
    const int64_t len = x->shape[axis], inner = product(x->shape, axis + 1, x->rank);
    begin_elementwise(k, n, "argmax");
    ax_buf_printf(k->src,
                  "    const %s *x = %s + (o / %lldLL) * %lldLL + o %% %lldLL;\n"
                  "    float best = x[0];\n    long long v = 0;\n"
                  "    for (long long j = 1; j < %lldLL && best == best; j++) {\n"
                  "        const float e = x[j * %lldLL];\n"
                  "        if (e > best || e != e) { best = e; v = j; }\n    }\n",
                  type_of(k, n->src[0]), ptr(k, n->src[0]), (long long)inner, (long long)(len * inner), (long long)inner,
                  (long long)len, (long long)inner);
    end_elementwise(k, n);
}

/* Block-wide sum of the float expression into `name` (every thread gets it). */
static void block_sum(gk *k, const char *name, const char *value)
{
    ax_buf_printf(k->src,
                  "    red[threadIdx.x] = %s;\n    __syncthreads();\n"
                  "    for (int s = %d; s > 0; s >>= 1) {\n"
                  "        if ((int)threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];\n"
                  "        __syncthreads();\n    }\n"
                  "    const float %s = red[0];\n    __syncthreads();\n",
                  value, BLOCK / 2, name);
}

/* One block per row of [outer, len, inner]: each thread keeps a running
 * max m and sum s of exp(x - m) (online softmax), the block combines the
 * pairs, then writes. */
static void emit_softmax(gk *k, const ir_node *n)
{
    const int axis = n->attrs.axis;
    const int64_t len = n->shape[axis], inner = product(n->shape, axis + 1, n->rank);
    const int id = (int)(n - k->g->nodes);
    begin_kernel(k, id, ir_ops[n->op].name);
    ax_buf_printf(k->src,
                  "    __shared__ float rm[%d], rs[%d];\n"
                  "    const long long row = blockIdx.x, base = (row / %lldLL) * %lldLL + row %% %lldLL;\n"
                  "    const %s *x = %s + base;\n    %s *y = %s + base;\n"
                  "    float m = -AXK_INF, s = 0.0f;\n"
                  "    for (long long j = threadIdx.x; j < %lldLL; j += %d) {\n"
                  "        const float e = x[j * %lldLL];\n"
                  "        if (e > m) { s = s * expf(m - e) + 1.0f; m = e; } else if (e != -AXK_INF) s += expf(e - m);\n    }\n"
                  "    rm[threadIdx.x] = m; rs[threadIdx.x] = s;\n    __syncthreads();\n"
                  "    for (int h = %d; h > 0; h >>= 1) {\n"
                  "        if ((int)threadIdx.x < h) {\n"
                  "            const float m2 = rm[threadIdx.x + h], s2 = rs[threadIdx.x + h], m1 = rm[threadIdx.x];\n"
                  "            const float mm = m1 > m2 ? m1 : m2;\n"
                  "            if (mm != -AXK_INF) rs[threadIdx.x] = rs[threadIdx.x] * expf(m1 - mm) + s2 * expf(m2 - mm);\n"
                  "            rm[threadIdx.x] = mm;\n        }\n        __syncthreads();\n    }\n"
                  "    const float mx = rm[0], sum = rs[0];\n",
                  BLOCK, BLOCK, (long long)inner, (long long)(len * inner), (long long)inner,
                  type_of(k, n->src[0]), ptr(k, n->src[0]), type_of(k, id), ptr(k, id), (long long)len, BLOCK,
                  (long long)inner, BLOCK / 2);
    const char *x_j = ax_sprintf(arena_of(k), "x[j * %lldLL]", (long long)inner);
    ax_buf_printf(k->src, "    for (long long j = threadIdx.x; j < %lldLL; j += %d)\n        y[j * %lldLL] = %s;\n}\n",
                  (long long)len, BLOCK, (long long)inner,
                  n->op == IR_OP_log_softmax ? ax_sprintf(arena_of(k), "%s - mx - logf(sum)", x_j)
                                             : ax_sprintf(arena_of(k), "expf(%s - mx) / sum", x_j));
    launch(k, product(n->shape, 0, axis) * inner, 1, 1, BLOCK);
}

/* One block per row of the last dim: mean, then variance about it (two
 * sweeps over the row, which stays in L1/L2), then the affine write. */
static void emit_layernorm(gk *k, const ir_node *n)
{
    const int64_t len = n->shape[n->rank - 1];
    const int id = (int)(n - k->g->nodes);
    begin_kernel(k, id, "layernorm");
    ax_buf_printf(k->src,
                  "    __shared__ float red[%d];\n"
                  "    const long long row = blockIdx.x;\n"
                  "    const %s *x = %s + row * %lldLL;\n"
                  "    float acc = 0.0f;\n"
                  "    for (long long j = threadIdx.x; j < %lldLL; j += %d) acc += x[j];\n",
                  BLOCK, type_of(k, n->src[0]), ptr(k, n->src[0]), (long long)len, (long long)len, BLOCK);
    block_sum(k, "total", "acc");
    ax_buf_printf(k->src, "    const float mean = total / %s;\n    acc = 0.0f;\n"
                          "    for (long long j = threadIdx.x; j < %lldLL; j += %d) { const float d = x[j] - mean; acc += d * d; }\n",
                  flit(k, (double)len), (long long)len, BLOCK);
    block_sum(k, "squares", "acc");
    ax_buf_printf(k->src, "    const float inv = 1.0f / sqrtf(squares / %s + %s);\n"
                          "    for (long long j = threadIdx.x; j < %lldLL; j += %d) {\n"
                          "        const long long o = row * %lldLL + j;\n"
                          "        float v = (x[j] - mean) * inv * %s[j] + %s[j];\n",
                  flit(k, (double)len), dlit(k, n->dtype, n->attrs.eps), (long long)len, BLOCK, (long long)len,
                  ptr(k, n->src[1]), ptr(k, n->src[2]));
    epilogue(k, n, "o");
    ax_buf_printf(k->src, "        %s[o] = v;\n    }\n}\n", ptr(k, id));
    launch(k, ir_numel(n) / len, 1, 1, BLOCK);
}

/* torch.nn.GroupNorm on [N, spatial, C], one block per (sample, group):
 * its spatial * C/groups values (element j at (j / cg) * C + j % cg after
 * the group's first), mean, then variance about it, then the affine write
 * (absent weight and bias: 1 and 0).  InstanceNorm is the groups == C case. */
static void emit_groupnorm(gk *k, const ir_node *n)
{
    const int64_t C = n->shape[n->rank - 1], batch = n->shape[0], spatial = ir_numel(n) / batch / C;
    const int groups = n->attrs.groups;
    const int64_t cg = C / groups, count = spatial * cg;
    const int id = (int)(n - k->g->nodes);
    begin_kernel(k, id, "groupnorm");
    ax_buf_printf(k->src,
                  "    __shared__ float red[%d];\n"
                  "    const long long g = blockIdx.x %% %d, base = (blockIdx.x / %d) * %lldLL + g * %lldLL;\n"
                  "    const %s *x = %s + base;\n    %s *y = %s + base;\n"
                  "#define AXK_AT(j) (((j) / %lldLL) * %lldLL + (j) %% %lldLL)\n"
                  "    float acc = 0.0f;\n"
                  "    for (long long j = threadIdx.x; j < %lldLL; j += %d) acc += x[AXK_AT(j)];\n",
                  BLOCK, groups, groups, (long long)(spatial * C), (long long)cg, type_of(k, n->src[0]),
                  ptr(k, n->src[0]), type_of(k, id), ptr(k, id),
                  (long long)cg, (long long)C, (long long)cg, (long long)count, BLOCK);
    block_sum(k, "total", "acc");
    ax_buf_printf(k->src, "    const float mean = total / %s;\n    acc = 0.0f;\n"
                          "    for (long long j = threadIdx.x; j < %lldLL; j += %d) { const float d = x[AXK_AT(j)] - mean; acc += d * d; }\n",
                  flit(k, (double)count), (long long)count, BLOCK);
    block_sum(k, "squares", "acc");
    ax_buf_printf(k->src, "    const float inv = 1.0f / sqrtf(squares / %s + %s);\n"
                          "    for (long long j = threadIdx.x; j < %lldLL; j += %d) {\n"
                          "        const long long ch = g * %lldLL + j %% %lldLL;\n"
                          "        y[AXK_AT(j)] = (x[AXK_AT(j)] - mean) * inv * %s + %s;\n    }\n"
                          "#undef AXK_AT\n}\n",
                  flit(k, (double)count), dlit(k, n->dtype, n->attrs.eps), (long long)count, BLOCK, (long long)cg,
                  (long long)cg,
                  has_operand(n, 1) ? ax_sprintf(arena_of(k), "%s[ch]", ptr(k, n->src[1])) : "1.0f",
                  has_operand(n, 2) ? ax_sprintf(arena_of(k), "%s[ch]", ptr(k, n->src[2])) : "0.0f");
    launch(k, batch * groups, 1, 1, BLOCK);
}

/* torch ConvTranspose2d on NHWC, one thread per output element gathering
 * the input pixels that reach it: iy * stride - pad + ky * dilation == oy. */
static void emit_conv_transpose(gk *k, const ir_node *n)
{
    const ir_node *x = node_at(k, n->src[0]), *w = node_at(k, n->src[1]);
    const ir_attrs *at = &n->attrs;
    const int64_t H = x->shape[1], W = x->shape[2], C = x->shape[3], OH = n->shape[1], OW = n->shape[2];
    const int64_t OC = n->shape[3], og = w->shape[1], KH = w->shape[2], KW = w->shape[3], cg = C / at->groups;
    begin_elementwise(k, n, "conv_transpose");
    ax_buf_printf(k->src,
                  "    const long long oc = o %% %lldLL, ox = (o / %lldLL) %% %lldLL, oy = (o / %lldLL) %% %lldLL, b = o / %lldLL;\n"
                  "    const long long g = oc / %lldLL, oi = oc %% %lldLL;\n"
                  "    float v = %s;\n"
                  "    for (int ky = 0; ky < %lld; ky++) {\n"
                  "        const long long ty = oy + %d - ky * %d;\n"
                  "        if (ty < 0 || ty %% %d != 0 || ty / %d >= %lldLL) continue;\n"
                  "        for (int kx = 0; kx < %lld; kx++) {\n"
                  "            const long long tx = ox + %d - kx * %d;\n"
                  "            if (tx < 0 || tx %% %d != 0 || tx / %d >= %lldLL) continue;\n"
                  "            const %s *xp = %s + ((b * %lldLL + ty / %d) * %lldLL + tx / %d) * %lldLL + g * %lldLL;\n"
                  "            const %s *wp = %s + ((g * %lldLL * %lldLL + oi) * %lldLL + ky) * %lldLL + kx;\n"
                  "            for (int ci = 0; ci < %lld; ci++) v = fmaf(xp[ci], wp[ci * %lldLL], v);\n"
                  "        }\n    }\n",
                  (long long)OC, (long long)OC, (long long)OW, (long long)(OC * OW), (long long)OH,
                  (long long)(OC * OW * OH), (long long)og, (long long)og,
                  has_operand(n, 2) ? ax_sprintf(arena_of(k), "%s[oc]", ptr(k, n->src[2])) : "0.0f",
                  (long long)KH, at->pad[0], at->dilation[0], at->stride[0], at->stride[0], (long long)H,
                  (long long)KW, at->pad[1], at->dilation[1], at->stride[1], at->stride[1], (long long)W,
                  type_of(k, n->src[0]), ptr(k, n->src[0]), (long long)H, at->stride[0], (long long)W, at->stride[1],
                  (long long)C, (long long)cg, type_of(k, n->src[1]), ptr(k, n->src[1]), (long long)cg, (long long)og, (long long)KH, (long long)KW,
                  (long long)cg, (long long)(og * KH * KW));
    end_elementwise(k, n);
}

static void emit_batchnorm(gk *k, const ir_node *n)
{
    const int64_t c = n->shape[n->rank - 1];
    begin_elementwise(k, n, "batchnorm");
    ax_buf_printf(k->src, "    const long long ch = o %% %lldLL;\n"
                          "    float v = (%s[o] - %s[ch]) / sqrtf(%s[ch] + %s) * %s[ch] + %s[ch];\n",
                  (long long)c, ptr(k, n->src[0]), ptr(k, n->src[3]), ptr(k, n->src[4]),
                  dlit(k, n->dtype, n->attrs.eps), ptr(k, n->src[1]), ptr(k, n->src[2]));
    end_elementwise(k, n);
}

/* ---- GEMM ---------------------------------------------------------------- */

/* C[m, n] = sum_k A(m, kk) B(kk, n) over 64x64 tiles of C, 16-deep slices of
 * K through shared memory; each of the 256 threads owns a 4x4 block.
 * a_at/b_at are expressions in (m, kk) / (kk, n) after the batch offsets
 * aoff/boff; the bias (dense) is added per column, then the epilogue. */
typedef struct gemm_shape {
    int64_t M, N, K, batch;
    const char *a_at, *b_at;  /* A(m, kk), B(kk, n) */
    bool b_k_major;           /* B's consecutive elements run along kk */
    const char *bias;         /* a float pointer indexed by n, or NULL */
    const char *out;          /* C, indexed by cbase + m * ldc + n */
    int64_t ldc;              /* C's row stride; 0: N */
} gemm_shape;

/* The tensor-core K step (AXK_MMA: AXRT_GPU_MATH=bf16 on sm_80 and later):
 * warp w computes rows 16 (w % 4).. and columns 32 (w / 4).. of the tile
 * as four m16n8k16 mma.sync, the shared float tiles rounded to BFloat16
 * (PTX ISA fragment layouts), accumulating in Float32. */
#define MMA_STEP                                                                                   \
    "#if AXK_MMA\n"                                                                                \
    "        {\n"                                                                                  \
    "            const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, gq = lane / 4, tq = lane % 4;\n" \
    "            const int am = (warp % 4) * 16;\n"                                                     \
    "            const unsigned a0 = axk_bf16x2(As[tq * 2][am + gq], As[tq * 2 + 1][am + gq]);\n"      \
    "            const unsigned a1 = axk_bf16x2(As[tq * 2][am + gq + 8], As[tq * 2 + 1][am + gq + 8]);\n" \
    "            const unsigned a2 = axk_bf16x2(As[tq * 2 + 8][am + gq], As[tq * 2 + 9][am + gq]);\n"  \
    "            const unsigned a3 = axk_bf16x2(As[tq * 2 + 8][am + gq + 8], As[tq * 2 + 9][am + gq + 8]);\n" \
    "#pragma unroll\n"                                                                            \
    "            for (int j = 0; j < 4; j++) {\n"                                                  \
    "                const int bn = (warp / 4) * 32 + j * 8 + gq;\n"                                \
    "                const unsigned b0 = axk_bf16x2(Bs[tq * 2][bn], Bs[tq * 2 + 1][bn]);\n"          \
    "                const unsigned b1 = axk_bf16x2(Bs[tq * 2 + 8][bn], Bs[tq * 2 + 9][bn]);\n"      \
    "                AXK_MMA_16816(acc[j], a0, a1, a2, a3, b0, b1);\n"                               \
    "            }\n"                                                                              \
    "        }\n"                                                                                  \
    "#else\n"

/* A GEMM of at most GEMV_ROWS rows whose B is read along kk (dense, the
 * attention projections, conv): the 64x64 tiles would give [1, 784] x
 * [784, 256] 4 blocks, each walking K in 49 steps between barriers (an
 * H200 ran a 784-256-10 MLP in 90 us at any batch up to 256).  Here a
 * block's 8 warps take a column each, their 32 lanes strided over the
 * reduction (B's rows read coalesced), every row's sum in a register; the
 * lanes' sums meet in a shared-memory tree (barriers only, which the CPU
 * emulator runs).  Float32 arithmetic, whatever AXRT_GPU_MATH says. */
#define GEMV_ROWS 32

static void emit_gemv(gk *k, const ir_node *n, const gemm_shape *s)
{
    const long long M = s->M, N = s->N, K = s->K, ldc = s->ldc ? s->ldc : s->N;
    ax_buf_printf(k->src,
                  "    __shared__ float red[%lld][%d];\n"
                  "    const int lane = threadIdx.x %% 32;\n"
                  "    const long long n = (long long)blockIdx.x * %d + threadIdx.x / 32;\n"
                  "    float acc[%lld];\n"
                  "    for (int r = 0; r < %lld; r++) acc[r] = 0.0f;\n"
                  "    if (n < %lldLL)\n"
                  "        for (long long kk = lane; kk < %lldLL; kk += 32) {\n"
                  "            const float b = %s;\n"
                  "            for (long long m = 0; m < %lldLL; m++) acc[m] = fmaf(%s, b, acc[m]);\n"
                  "        }\n"
                  "    for (int r = 0; r < %lld; r++) red[r][threadIdx.x] = acc[r];\n"
                  "    for (int half_ = 16; half_ > 0; half_ /= 2) {\n"
                  "        __syncthreads();\n"
                  "        if (lane < half_)\n"
                  "            for (int r = 0; r < %lld; r++) red[r][threadIdx.x] += red[r][threadIdx.x + half_];\n"
                  "    }\n"
                  "    __syncthreads();\n"
                  "    for (long long m = lane; m < %lldLL && n < %lldLL; m += 32) {\n"
                  "        const long long o = cbase + m * %lldLL + n;\n"
                  "        float v = red[m][threadIdx.x - lane]%s%s%s;\n",
                  M, BLOCK, BLOCK / 32, M, M, N, K, s->b_at, M, s->a_at, M, M, M, N, ldc,
                  s->bias ? " + " : "", s->bias ? s->bias : "", s->bias ? "[n]" : "");
    epilogue(k, n, "o");
    ax_buf_printf(k->src, "        %s[o] = v;\n    }\n}\n", s->out);
    launch(k, (N + BLOCK / 32 - 1) / (BLOCK / 32), 1, s->batch, BLOCK);
}

static void emit_gemm(gk *k, const ir_node *n, const gemm_shape *s)
{
    if (s->M <= GEMV_ROWS && s->b_k_major) {
        emit_gemv(k, n, s);
        return;
    }
    const int64_t M = s->M, N = s->N, K = s->K, ldc = s->ldc ? s->ldc : N;
    const char *a_at = s->a_at, *b_at = s->b_at, *bias = s->bias;
    const bool b_k_major = s->b_k_major;
    ax_buf_printf(k->src,
                  "    __shared__ float As[16][68], Bs[16][68];\n"
                  "    const int tx = threadIdx.x %% 16, ty = threadIdx.x / 16;\n"
                  "    const long long m0 = (long long)blockIdx.y * 64, n0 = (long long)blockIdx.x * 64;\n"
                  "    float acc[4][4];\n"
                  "    for (int r = 0; r < 4; r++) for (int c = 0; c < 4; c++) acc[r][c] = 0.0f;\n"
                  "    for (long long k0 = 0; k0 < %lldLL; k0 += 16) {\n"
                  "        for (int i = threadIdx.x; i < 1024; i += 256) {\n"
                  "            const int mm = i / 16, kq = i %% 16;\n"
                  "            const long long m = m0 + mm, kk = k0 + kq;\n"
                  "            As[kq][mm] = (m < %lldLL && kk < %lldLL) ? %s : 0.0f;\n"
                  "        }\n"
                  "        for (int i = threadIdx.x; i < 1024; i += 256) {\n"
                  "            const int nn = %s, kq = %s;\n"
                  "            const long long n = n0 + nn, kk = k0 + kq;\n"
                  "            Bs[kq][nn] = (n < %lldLL && kk < %lldLL) ? %s : 0.0f;\n"
                  "        }\n"
                  "        __syncthreads();\n"
                  "%s"
                  "        for (int kq = 0; kq < 16; kq++) {\n"
                  "            float a[4], b[4];\n"
                  "            for (int r = 0; r < 4; r++) a[r] = As[kq][ty * 4 + r];\n"
                  "            for (int c = 0; c < 4; c++) b[c] = Bs[kq][tx * 4 + c];\n"
                  "            for (int r = 0; r < 4; r++) for (int c = 0; c < 4; c++) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);\n"
                  "        }\n"
                  "#endif\n"
                  "        __syncthreads();\n    }\n"
                  "    for (int r = 0; r < 4; r++) for (int c = 0; c < 4; c++) {\n"
                  "#if AXK_MMA /* acc[r]: the warp's n-tile r, acc[r][c] the mma's c-th output */\n"
                  "        const long long m = m0 + (threadIdx.x / 32 %% 4) * 16 + threadIdx.x %% 32 / 4 + (c >= 2 ? 8 : 0);\n"
                  "        const long long n = n0 + threadIdx.x / 128 * 32 + r * 8 + threadIdx.x %% 4 * 2 + (c & 1);\n"
                  "        (void)tx; (void)ty;\n"
                  "#else\n"
                  "        const long long m = m0 + ty * 4 + r, n = n0 + tx * 4 + c;\n"
                  "#endif\n"
                  "        if (m >= %lldLL || n >= %lldLL) continue;\n"
                  "        const long long o = cbase + m * %lldLL + n;\n"
                  "        float v = acc[r][c]%s%s%s;\n",
                  (long long)K, (long long)M, (long long)K, a_at,
                  b_k_major ? "i / 16" : "i % 64", b_k_major ? "i % 16" : "i / 64",
                  (long long)N, (long long)K, b_at, MMA_STEP, (long long)M, (long long)N, (long long)ldc,
                  bias ? " + " : "", bias ? bias : "", bias ? "[n]" : "");
    epilogue(k, n, "o");
    ax_buf_printf(k->src, "        %s[o] = v;\n    }\n}\n", s->out);
    launch(k, (N + 63) / 64, (M + 63) / 64, s->batch, BLOCK);
}

static void emit_dense(gk *k, const ir_node *n)
{
    const ir_node *x = node_at(k, n->src[0]);
    const int64_t in = x->shape[x->rank - 1], out = n->shape[n->rank - 1], rows = ir_numel(x) / in;
    begin_kernel(k, (int)(n - k->g->nodes), "dense");
    ax_buf_puts(k->src, "    const long long cbase = 0;\n");
    const gemm_shape s = {rows, out, in, 1,
                          ax_sprintf(arena_of(k), "%s[m * %lldLL + kk]", ptr(k, n->src[0]), (long long)in),
                          ax_sprintf(arena_of(k), "%s[n * %lldLL + kk]", ptr(k, n->src[1]), (long long)in), true,
                          has_operand(n, 2) ? ptr(k, n->src[2]) : NULL, ptr(k, (int)(n - k->g->nodes)), 0};
    emit_gemm(k, n, &s);
}

/* torch.matmul: 1-D operands as [1, k] / [k, 1]; batch dims broadcast,
 * decomposed from blockIdx.z. */
static void emit_matmul(gk *k, const ir_node *n)
{
    const cg_matmul_geometry g = cg_matmul_geometry_of(node_at(k, n->src[0]), node_at(k, n->src[1]));
    const int64_t m = g.m, kk = g.k, cols = g.cols;
    const int rank = g.rank;
    begin_kernel(k, (int)(n - k->g->nodes), "matmul");
    decompose(k, g.batch, rank, "(long long)blockIdx.z");
    ax_buf_printf(k->src, "    const long long aoff = %s, boff = %s, cbase = (long long)blockIdx.z * %lldLL;\n",
                  index_of(k, g.a_strides, rank), index_of(k, g.b_strides, rank), (long long)(m * cols));
    const gemm_shape s = {m, cols, kk, product(g.batch, 0, rank),
                          ax_sprintf(arena_of(k), "%s[aoff + m * %lldLL + kk]", ptr(k, n->src[0]), (long long)kk),
                          ax_sprintf(arena_of(k), "%s[boff + kk * %lldLL + n]", ptr(k, n->src[1]), (long long)cols),
                          false, NULL, ptr(k, (int)(n - k->g->nodes)), 0};
    emit_gemm(k, n, &s);
}

/* ---- convolution and pooling (NHWC) ------------------------------------------ */

/* Direct convolution, one thread per output: depthwise convolutions
 * (one input channel per group), where a GEMM's K would be KH * KW. */
static void emit_conv_direct(gk *k, const ir_node *n)
{
    const ir_node *x = node_at(k, n->src[0]), *w = node_at(k, n->src[1]);
    const ir_attrs *at = &n->attrs;
    const int64_t H = x->shape[1], W = x->shape[2], C = x->shape[3], OH = n->shape[1], OW = n->shape[2];
    const int64_t OC = n->shape[3], cig = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    const int64_t ocg = OC / at->groups;
    begin_elementwise(k, n, "conv");
    ax_buf_printf(k->src,
                  "    const long long oc = o %% %lldLL, ow = (o / %lldLL) %% %lldLL, oh = (o / %lldLL) %% %lldLL, b = o / %lldLL;\n"
                  "    const long long g = oc / %lldLL;\n"
                  "    const %s *xb = %s + b * %lldLL + g * %lldLL;\n"
                  "    const %s *wo = %s + oc * %lldLL;\n"
                  "    float v = %s;\n"
                  "    for (int kh = 0; kh < %lld; kh++) {\n"
                  "        const long long ih = oh * %d - %d + kh * %d;\n"
                  "        if (ih < 0 || ih >= %lldLL) continue;\n"
                  "        for (int kw = 0; kw < %lld; kw++) {\n"
                  "            const long long iw = ow * %d - %d + kw * %d;\n"
                  "            if (iw < 0 || iw >= %lldLL) continue;\n"
                  "            const %s *xp = xb + (ih * %lldLL + iw) * %lldLL;\n"
                  "            for (int ci = 0; ci < %lld; ci++) v = fmaf(xp[ci], wo[(ci * %lldLL + kh) * %lldLL + kw], v);\n"
                  "        }\n    }\n",
                  (long long)OC, (long long)OC, (long long)OW, (long long)(OC * OW), (long long)OH,
                  (long long)(OC * OW * OH), (long long)ocg, type_of(k, n->src[0]), ptr(k, n->src[0]),
                  (long long)(H * W * C), (long long)cig, type_of(k, n->src[1]), ptr(k, n->src[1]),
                  (long long)(cig * KH * KW),
                  has_operand(n, 2) ? ax_sprintf(arena_of(k), "%s[oc]", ptr(k, n->src[2])) : "0.0f",
                  (long long)KH, at->stride[0], at->pad[0], at->dilation[0], (long long)H, (long long)KW,
                  at->stride[1], at->pad[1], at->dilation[1], (long long)W, type_of(k, n->src[0]), (long long)W,
                  (long long)C, (long long)cig, (long long)KH, (long long)KW);
    end_elementwise(k, n);
}

/* The implicit-GEMM convolution: per group (blockIdx.z), C[M = N * OH * OW
 * output pixels, ocg output channels] = A[M, K] B[K, ocg] with
 * K = KH * KW * cig ordered (kh, kw, ci), through emit_gemm's tiles (and its
 * tensor-core step).  A is gathered from the NHWC input by <kernel>_a (no
 * im2col buffer; padding reads 0); B(kk, oc) is the plain [OC, cig, KH, KW]
 * weight at oc * K + ci * KH * KW + kh * KW + kw.  The output's rows are
 * NHWC pixels (ldc = OC), so bias, residual and activation are the GEMM's. */
static void emit_conv_gemm(gk *k, const ir_node *n)
{
    const ir_node *x = node_at(k, n->src[0]), *w = node_at(k, n->src[1]);
    const ir_attrs *at = &n->attrs;
    const int64_t H = x->shape[1], W = x->shape[2], C = x->shape[3], OH = n->shape[1], OW = n->shape[2];
    const int64_t OC = n->shape[3], cig = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    const int64_t ocg = OC / at->groups, K = KH * KW * cig;
    const int id = (int)(n - k->g->nodes);
    const char *gather = ax_sprintf(arena_of(k), "%s_k%d_a", k->g->name, id);
    ax_buf_printf(k->src,
                  "\n/* %%%d conv: A(m, kk) of the implicit GEMM, gathered from the NHWC input */\n"
                  "__device__ inline float %s(const %s *x, long long m, long long kk)\n{\n"
                  "    const long long ci = kk %% %lldLL, t = kk / %lldLL, kw = t %% %lldLL, kh = t / %lldLL;\n"
                  "    const long long ow = m %% %lldLL, oh = (m / %lldLL) %% %lldLL, b = m / %lldLL;\n"
                  "    const long long ih = oh * %d - %d + kh * %d, iw = ow * %d - %d + kw * %d;\n"
                  "    if (ih < 0 || ih >= %lldLL || iw < 0 || iw >= %lldLL) return 0.0f;\n"
                  "    return x[((b * %lldLL + ih) * %lldLL + iw) * %lldLL + ci];\n}\n",
                  id, gather, type_of(k, n->src[0]), (long long)cig, (long long)cig, (long long)KW, (long long)KW, (long long)OW,
                  (long long)OW, (long long)OH, (long long)(OW * OH), at->stride[0], at->pad[0],
                  at->dilation[0], at->stride[1], at->pad[1], at->dilation[1], (long long)H, (long long)W,
                  (long long)H, (long long)W, (long long)C);
    begin_kernel(k, id, "conv (implicit GEMM)");
    ax_buf_printf(k->src,
                  "    const long long g = blockIdx.z, cbase = g * %lldLL;\n"
                  "    const %s *xg = %s + g * %lldLL;\n",
                  (long long)ocg, type_of(k, n->src[0]), ptr(k, n->src[0]), (long long)cig);
    const gemm_shape s = {n->shape[0] * OH * OW, ocg, K, at->groups,
                          ax_sprintf(arena_of(k), "%s(xg, m, kk)", gather),
                          ax_sprintf(arena_of(k), "%s[(cbase + n) * %lldLL + kk %% %lldLL * %lldLL + kk / %lldLL]",
                                     ptr(k, n->src[1]), (long long)K, (long long)cig, (long long)(KH * KW),
                                     (long long)cig),
                          true,
                          has_operand(n, 2) ? ax_sprintf(arena_of(k), "(%s + cbase)", ptr(k, n->src[2])) : NULL,
                          ptr(k, id), OC};
    emit_gemm(k, n, &s);
}

/* Convolutions with more than one input channel per group are implicit
 * GEMMs; depthwise ones stay direct. */
static void emit_conv(gk *k, const ir_node *n)
{
    if (node_at(k, n->src[1])->shape[1] == 1 && n->attrs.groups > 1) emit_conv_direct(k, n);
    else emit_conv_gemm(k, n);
}

static void emit_pool(gk *k, const ir_node *n)
{
    const ir_node *x = node_at(k, n->src[0]);
    const ir_attrs *at = &n->attrs;
    const int64_t H = x->shape[1], W = x->shape[2], C = x->shape[3], OH = n->shape[1], OW = n->shape[2];
    const bool max = n->op == IR_OP_maxpool;
    /* meanpool's divisor: the whole window (count_include_pad), or the real
       pixels (exclude_pad), never the rows/columns ceil mode added */
    const int limit_h = (int)H + at->pad[2] - at->ceil_extra[0], limit_w = (int)W + at->pad[3] - at->ceil_extra[1];
    begin_elementwise(k, n, ir_ops[n->op].name);
    ax_buf_printf(k->src,
                  "    const long long c = o %% %lldLL, ow = (o / %lldLL) %% %lldLL, oh = (o / %lldLL) %% %lldLL, b = o / %lldLL;\n"
                  "    float acc = %s; int count = 0;\n"
                  "    for (int kh = 0; kh < %d; kh++) for (int kw = 0; kw < %d; kw++) {\n"
                  "        const long long ih = oh * %d - %d + kh, iw = ow * %d - %d + kw;\n"
                  "        if (ih >= -%d && ih < %d && iw >= -%d && iw < %d%s) count++;\n"
                  "        if (ih < 0 || ih >= %lldLL || iw < 0 || iw >= %lldLL) continue;\n"
                  "        const float e = %s[((b * %lldLL + ih) * %lldLL + iw) * %lldLL + c];\n"
                  "        %s;\n    }\n"
                  "    float v = %s;\n",
                  (long long)C, (long long)C, (long long)OW, (long long)(C * OW), (long long)OH,
                  (long long)(C * OW * OH), max ? "-AXK_INF" : "0.0f", at->kernel[0], at->kernel[1],
                  at->stride[0], at->pad[0], at->stride[1], at->pad[1],
                  at->exclude_pad ? 0 : at->pad[0], at->exclude_pad ? (int)H : limit_h,
                  at->exclude_pad ? 0 : at->pad[1], at->exclude_pad ? (int)W : limit_w, "",
                  (long long)H, (long long)W, ptr(k, n->src[0]), (long long)H, (long long)W, (long long)C,
                  max ? "acc = (e > acc || e != e) ? e : acc" : "acc += e",
                  max ? "acc" : "acc / (float)(count > 0 ? count : 1)");
    end_elementwise(k, n);
}

static void emit_globalpool(gk *k, const ir_node *n)
{
    const ir_node *x = node_at(k, n->src[0]);
    const int64_t hw = x->shape[1] * x->shape[2], C = x->shape[3];
    begin_elementwise(k, n, "globalmeanpool");
    ax_buf_printf(k->src,
                  "    const long long c = o %% %lldLL, b = o / %lldLL;\n    float acc = 0.0f;\n"
                  "    for (long long p = 0; p < %lldLL; p++) acc += %s[(b * %lldLL + p) * %lldLL + c];\n"
                  "    float v = acc / %s;\n",
                  (long long)C, (long long)C, (long long)hw, ptr(k, n->src[0]), (long long)hw, (long long)C,
                  flit(k, (double)hw));
    end_elementwise(k, n);
}

/* ---- attention ----------------------------------------------------------- */

/* The longest key sequence one block's shared scores hold. */
#define MHA_MAX_KEYS 8192

typedef struct mha_dims {
    int64_t batch, lq, lk, d, hd;
} mha_dims;

static mha_dims mha_dims_of(const ir_graph *g, const ir_node *n)
{
    const ir_node *q = &g->nodes[n->src[0]], *kn = &g->nodes[n->src[1]];
    mha_dims m;
    m.d = q->shape[q->rank - 1];
    m.lq = q->shape[q->rank - 2];
    m.lk = kn->shape[kn->rank - 2];
    m.batch = ir_numel(q) / (m.lq * m.d);
    m.hd = m.d / n->attrs.heads;
    return m;
}

/* Scratch: the projected q [batch*lq, d], k and v [batch*lk, d], the heads
 * [batch*lq, d] in the node's dtype (rounded there, as the C target's
 * scratch is), and over MHA_MAX_KEYS keys the Float32 scores
 * [batch*heads*lq, lk] (an even element count before them: 4-byte aligned). */
static const char *mha_part(const gk *k, const ir_node *n, int part)
{
    const mha_dims m = mha_dims_of(k->g, n);
    const int64_t starts[5] = {0, m.batch * m.lq * m.d, m.batch * (m.lq + m.lk) * m.d,
                               m.batch * (m.lq + 2 * m.lk) * m.d, m.batch * (2 * m.lq + 2 * m.lk) * m.d};
    return ax_sprintf(arena_of(k), "((%s *)(A + %lld))", part == 4 ? "float" : kernel_type(n->dtype),
                      (long long)(n->scratch_offset + (int64_t)axrt_dtype_size(n->dtype) * starts[part]));
}

/* x [rows, d] times rows [w_row0, w_row0 + d) of w, plus the bias's same rows. */
static void emit_projection(gk *k, const ir_node *n, const char *suffix, const char *x, int64_t rows,
                            int w_operand, int b_operand, int64_t first, const char *out)
{
    const int64_t d = mha_dims_of(k->g, n).d;
    begin_kernel_part(k, (int)(n - k->g->nodes), suffix, "attention projection");
    ax_buf_puts(k->src, "    const long long cbase = 0;\n");
    const gemm_shape s = {rows, d, d, 1, ax_sprintf(arena_of(k), "%s[m * %lldLL + kk]", x, (long long)d),
                          ax_sprintf(arena_of(k), "%s[%lldLL + n * %lldLL + kk]", ptr(k, n->src[w_operand]),
                                     (long long)(first * d), (long long)d),
                          true,
                          has_operand(n, b_operand) ? ax_sprintf(arena_of(k), "(%s + %lld)", ptr(k, n->src[b_operand]),
                                                                  (long long)first) : NULL,
                          out, 0};
    emit_gemm(k, n, &s);
}

/* One block per (batch, head, query): scores into shared memory, softmax,
 * then the weighted sum of v for the head's columns. */
static void emit_attend(gk *k, const ir_node *n)
{
    const mha_dims m = mha_dims_of(k->g, n);
    const bool masked = has_operand(n, 7);
    begin_kernel_part(k, (int)(n - k->g->nodes), "_att", "attention heads");
    if (m.lk > MHA_MAX_KEYS) /* the scores of each (batch, head, query) in scratch */
        ax_buf_printf(k->src, "    __shared__ float red[%d];\n    float *sc = %s + (long long)blockIdx.x * %lldLL;\n",
                      BLOCK, mha_part(k, n, 4), (long long)m.lk);
    else ax_buf_printf(k->src, "    __shared__ float sc[%lld], red[%d];\n", (long long)m.lk, BLOCK);
    ax_buf_printf(k->src,
                  "    const long long row = blockIdx.x, i = row %% %lldLL, h = (row / %lldLL) %% %d, b = row / %lldLL;\n"
                  "    const %s *q = %s + (b * %lldLL + i) * %lldLL + h * %lldLL;\n"
                  "    const %s *kb = %s + b * %lldLL * %lldLL + h * %lldLL;\n"
                  "    const %s *vb = %s + b * %lldLL * %lldLL + h * %lldLL;\n"
                  "    float mx = -AXK_INF;\n"
                  "    for (long long j = threadIdx.x; j < %lldLL; j += %d) {\n"
                  "        float acc = 0.0f;\n"
                  "        for (int e = 0; e < %lld; e++) acc = fmaf(q[e], kb[j * %lldLL + e], acc);\n"
                  "        sc[j] = %s;\n"
                  "        mx = sc[j] > mx ? sc[j] : mx;\n    }\n"
                  "    red[threadIdx.x] = mx;\n    __syncthreads();\n"
                  "    for (int s = %d; s > 0; s >>= 1) {\n"
                  "        if ((int)threadIdx.x < s && red[threadIdx.x + s] > red[threadIdx.x]) red[threadIdx.x] = red[threadIdx.x + s];\n"
                  "        __syncthreads();\n    }\n"
                  "    mx = red[0];\n    __syncthreads();\n    float acc = 0.0f;\n"
                  "    for (long long j = threadIdx.x; j < %lldLL; j += %d) { sc[j] = expf(sc[j] - mx); acc += sc[j]; }\n",
                  (long long)m.lq, (long long)m.lq, n->attrs.heads,
                  (long long)(m.lq * n->attrs.heads), kernel_type(n->dtype), mha_part(k, n, 0), (long long)m.lq,
                  (long long)m.d, (long long)m.hd, kernel_type(n->dtype), mha_part(k, n, 1), (long long)m.lk,
                  (long long)m.d, (long long)m.hd, kernel_type(n->dtype), mha_part(k, n, 2), (long long)m.lk, (long long)m.d, (long long)m.hd, (long long)m.lk, BLOCK,
                  (long long)m.hd, (long long)m.d,
                  ax_sprintf(arena_of(k), "%s%s ? -AXK_INF : acc * %s", n->attrs.causal ? "j > i" : "false",
                             masked ? ax_sprintf(arena_of(k), " || %s[b * %lldLL + j] == 0.0f", ptr(k, n->src[7]),
                                                 (long long)m.lk) : "",
                             flit(k, 1.0 / sqrt((double)m.hd))),
                  BLOCK / 2, (long long)m.lk, BLOCK);
    block_sum(k, "sum", "acc");
    ax_buf_printf(k->src,
                  "    %s *out = %s + (b * %lldLL + i) * %lldLL + h * %lldLL;\n"
                  "    for (int e = threadIdx.x; e < %lld; e += %d) {\n"
                  "        float o = 0.0f;\n"
                  "        for (long long j = 0; j < %lldLL; j++) o = fmaf(sc[j] / sum, vb[j * %lldLL + e], o);\n"
                  "        out[e] = o;\n    }\n}\n",
                  kernel_type(n->dtype), mha_part(k, n, 3), (long long)m.lq, (long long)m.d, (long long)m.hd,
                  (long long)m.hd, BLOCK,
                  (long long)m.lk, (long long)m.d);
    launch(k, m.batch * n->attrs.heads * m.lq, 1, 1, BLOCK);
}

/* q, k, v, in_proj_weight [3d, d], in_proj_bias?, out_proj.weight [d, d], out_proj.bias?
 * (torch.nn.MultiheadAttention): the three projections, the heads, the output projection. */
static void emit_mha(gk *k, const ir_node *n)
{
    const mha_dims m = mha_dims_of(k->g, n);
    if (n->scratch_offset < 0) ax_die("cg_gpu: mha %%%d has no scratch buffer", (int)(n - k->g->nodes));
    emit_projection(k, n, "_q", ptr(k, n->src[0]), m.batch * m.lq, 3, 4, 0, mha_part(k, n, 0));
    emit_projection(k, n, "_k", ptr(k, n->src[1]), m.batch * m.lk, 3, 4, m.d, mha_part(k, n, 1));
    emit_projection(k, n, "_v", ptr(k, n->src[2]), m.batch * m.lk, 3, 4, 2 * m.d, mha_part(k, n, 2));
    emit_attend(k, n);
    emit_projection(k, n, "_o", mha_part(k, n, 3), m.batch * m.lq, 5, 6, 0, ptr(k, (int)(n - k->g->nodes)));
}

/* ---- dispatch ------------------------------------------------------------ */

/* A chunk's results are gathered from its operand: no kernel of its own. */
static void emit_chunk(gk *k, const ir_node *n)
{
    (void)k, (void)n;
}

/* A reshape is a copy only where it has storage of its own. */
static void emit_reshape(gk *k, const ir_node *n)
{
    const int id = (int)(n - k->g->nodes);
    if (strcmp(ptr(k, id), ptr(k, n->src[0])) != 0) emit_copy(k, n, n->src[0], "reshape");
}

/* The dispatch table, one entry per ir/ops.def row through its family
 * (GPU_<family>), so that an op of a new family is a compile error here
 * until its family gets a kernel or is declared unsupported (NULL: no
 * kernel of this back end's yet, a located error before printing).  The
 * sources hold data and emit nothing. */
typedef void gpu_emit_fn(gk *k, const ir_node *n);
#define GPU_input NULL
#define GPU_param NULL
#define GPU_scalar NULL
#define GPU_cast emit_unary
#define GPU_unary emit_unary
#define GPU_binary emit_binary
#define GPU_reduce emit_reduce
#define GPU_argmax emit_argmax
#define GPU_softmax emit_softmax
#define GPU_reshape emit_reshape
#define GPU_transpose emit_transpose
#define GPU_concat emit_concat
#define GPU_slice emit_slice
#define GPU_chunk emit_chunk
#define GPU_result emit_result
#define GPU_matmul emit_matmul
#define GPU_dense emit_dense
#define GPU_layernorm emit_layernorm
#define GPU_batchnorm emit_batchnorm
#define GPU_conv emit_conv
#define GPU_pool emit_pool
#define GPU_globalpool emit_globalpool
#define GPU_mha emit_mha
#define GPU_embedding emit_embedding
#define GPU_groupnorm emit_groupnorm
#define GPU_upsample emit_upsample
#define GPU_conv_transpose emit_conv_transpose
#define GPU_fused emit_fused
/* unsupported: GRU/LSTM (unrolled first where the target lacks them, so
   only a graph the unrolling could not reach), and the training-only ops
   (the training step is generated for the c target only) */
#define GPU_rnn NULL
#define GPU_unary_grad NULL
#define GPU_conv_grad_weight NULL
#define GPU_pool_grad NULL
#define GPU_slice_grad NULL
#define GPU_embedding_grad NULL
#define GPU_dropout NULL
static gpu_emit_fn *const gpu_emitters[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags) [IR_OP_##name] = GPU_##family,
#include "ops.def"
#undef OP
};

/* The op this back end has no kernel for, or NULL. */
static const char *unsupported(const ir_node *n)
{
    return ir_ops[n->op].kind == IR_SOURCE || gpu_emitters[n->op] ? NULL : ir_ops[n->op].name;
}

const char *cg_gpu_unsupported(const ir_graph *g, const ir_node *n)
{
    (void)g;
    return unsupported(n);
}

static void emit_node(gk *k, int id)
{
    const ir_node *n = node_at(k, id);
    if (!gpu_emitters[n->op]) ax_die("cg_gpu: no kernel for %s (not checked)", ir_ops[n->op].name);
    gpu_emitters[n->op](k, n);
}

/* Outputs whose storage is not their own buffer get a copy kernel. */
static void emit_output_copies(gk *k)
{
    for (int i = 0; i < k->g->noutputs; i++) {
        const int id = k->g->outputs[i];
        const char *from = ptr(k, id), *to = ax_sprintf(arena_of(k), "Y%d", i);
        if (strcmp(from, to) == 0) continue;
        const ir_node *n = node_at(k, id);
        begin_kernel_named(k, ax_sprintf(arena_of(k), "%s_out%d", k->g->name, i),
                           ax_sprintf(arena_of(k), "output %d", i));
        ax_buf_printf(k->src, "    const long long o = (long long)blockIdx.x * %d + threadIdx.x;\n"
                              "    if (o < %lldLL) %s[o] = %s[o];\n}\n",
                      BLOCK, (long long)ir_numel(n), to,
                      n->op == IR_OP_scalar ? ax_sprintf(arena_of(k), "(&%s)", flit(k, n->attrs.scalar)) : from);
        launch(k, (ir_numel(n) + BLOCK - 1) / BLOCK, 1, 1, BLOCK);
    }
}

/* The dtypes the device stores values in: Float32, and Float16/BFloat16
 * (axk_half/axk_bhalf, read as float) for half models. */
static bool device_float(axrt_dtype t)
{
    return t == AXRT_F32 || t == AXRT_F16 || t == AXRT_BF16;
}

/* Every value on the device is of a device_float type but the inputs (and
 * parameters, such as an unrolled RNN's Float64 constants) that a cast
 * converts or an embedding reads as indices, and argmax's Int64 indices
 * (reshaped, converted, read as indices or output): the dtype n or one of
 * its operands has where that does not hold, or NULL. */
static const char *unsupported_dtype(const ir_graph *g, const ir_node *n)
{
    const bool indices = n->dtype == AXRT_I64 && (n->op == IR_OP_argmax || n->op == IR_OP_reshape);
    const bool source = n->op == IR_OP_input || n->op == IR_OP_param;
    if (!device_float(n->dtype) && !indices && (!source || ir_is_output(g, (int)(n - g->nodes))))
        return ir_dtype_name(n->dtype);
    for (int i = 0; i < n->nsrc; i++) {
        const axrt_dtype t = n->src[i] == IR_NONE ? AXRT_F32 : g->nodes[n->src[i]].dtype;
        const bool converts = i == 0 && (n->op == IR_OP_cast || n->op == IR_OP_embedding || indices);
        if (!device_float(t) && !converts) return ir_dtype_name(t);
    }
    return NULL;
}

/* Reports what the GPU back end cannot emit; returns the number of errors. */
int cgg_check_supported(const ir_graph *g, const gpu_dialect *dl)
{
    if (!device_float(g->dtype)) {
        ax_error(g->ctx, g->loc, "the %s target computes in Float32, Float16 or BFloat16, not %s (model '%s')",
                 dl->name, ir_dtype_name(g->dtype), g->name);
        return 1;
    }
    if (g->ninputs + g->noutputs > 32 || g->ninputs < 1 || g->noutputs < 1) {
        ax_error(g->ctx, g->loc, "the %s target needs 1 to 32 inputs and outputs (model '%s')", dl->name, g->name);
        return 1;
    }
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        const char *what = n->dead ? NULL : unsupported(n);
        if (!n->dead && !what) what = unsupported_dtype(g, n);
        if (what) {
            ax_error(g->ctx, n->loc, "the %s target has no kernel for %s yet (use --target=c)", dl->name, what);
            return 1;
        }
    }
    return 0;
}

/* Parameters in one block, each 256-byte aligned. */
static void place_params(gk *k)
{
    k->param_offset = ax_alloc(arena_of(k), sizeof *k->param_offset * (size_t)(k->g->nnodes + 1));
    k->param_bytes = 0;
    for (int id = 0; id < k->g->nnodes; id++) {
        const ir_node *n = node_at(k, id);
        if (n->dead || n->op != IR_OP_param) continue;
        k->param_offset[id] = k->param_bytes;
        k->param_bytes += (ir_nbytes(n) + 255) / 256 * 256;
    }
}

/* Kernel source of one model into src; the launch list stays in k. */
/* The device arena: the plan's, then (with an embedding) the 16-byte-aligned
 * index-error word. */
static void place_index_word(gk *k)
{
    k->device_arena = k->g->arena_bytes;
    for (int id = 0; id < k->g->nnodes; id++)
        if (!node_at(k, id)->dead && node_at(k, id)->op == IR_OP_embedding) {
            const size_t at = (k->g->arena_bytes + 15) / 16 * 16;
            k->index_word = at + 1;
            k->device_arena = at + 16;
            return;
        }
}

void cgg_emit_kernels(gk *k)
{
    place_params(k);
    place_index_word(k);
    ax_buf_printf(k->src, "\n/* ---- model %s ---- */\n", k->g->name);
    for (int id = 0; id < k->g->nnodes; id++) {
        const ir_node *n = node_at(k, id);
        if (!n->dead && ir_ops[n->op].kind != IR_SOURCE) emit_node(k, id);
    }
    emit_output_copies(k);
}

/* The GPU targets keep every parameter as written (no CPU panels). */
void cg_gpu_select(ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++)
        g->nodes[id].layout = IR_LAYOUT_PLAIN;
}

/* Attention keeps its projections and heads in scratch (mha_part). */
size_t cg_gpu_scratch_bytes(const ir_node *n, const ir_graph *g)
{
    if (n->op != IR_OP_mha) return 0;
    const mha_dims m = mha_dims_of(g, n);
    const int64_t scores = m.lk > MHA_MAX_KEYS ? m.batch * n->attrs.heads * m.lq * m.lk : 0;
    return (size_t)(2 * m.batch * (m.lq + m.lk) * m.d) * axrt_dtype_size(n->dtype) + (size_t)scores * sizeof(float);
}

bool cg_gpu_can_inplace(const ir_node *n, const ir_graph *g, int k)
{
    (void)n, (void)g, (void)k;
    return false;
}
