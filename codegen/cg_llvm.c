/* cg_llvm.c — the LLVM back end (docs/llvm.md): the same model, kernel
 * selection (cg_select: ir_node.layout) and memory plan (offsets,
 * scratch_offset, inplace_of) as the C target, built as an LLVM module
 * through the LLVM C API, optimised by the new pass manager with a real
 * TargetMachine, and written as an object file or textual IR; or run
 * in-process by ORC LLJIT (cg_llvm_jit.c).
 *
 * The module defines what the C target's file defines, with the same
 * symbols: <model>_forward (same arguments, returns 0), the
 * <model>_model descriptor (axrt_model) and its tables.  Each heavy node is
 * the same libaxrt call with the same arguments the C target makes: both
 * read the node's kernel-call plan (cg_plan.c), float and int8 alike; a
 * fused_elementwise node's plan is a loop program (cg_plan_loop.c), built
 * as an LLVM loop nest over its result with the runtime's own formulas (axrt_unary.h) written as instructions, which the
 * loop vectoriser handles when no libm call is in the body.  Parameters are
 * [N x i8] constants: they go to the object's read-only data directly.
 * Built only with AXC_HAVE_LLVM (the Makefile defines it when llvm-config
 * exists). */
#ifdef AXC_HAVE_LLVM

#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg_llvm.h"
#include "cg_llvm_tm.h"
#include "ir_interp.h"

/* State while building one model's functions. */
typedef struct lv {
    ir_graph *g;
    LLVMContextRef C;
    LLVMModuleRef M;
    LLVMBuilderRef B;
    LLVMTypeRef i8, i32, i64, size, ptr;
    axrt_dtype dtype;                  /* the node being built's (set_dtype) */
    LLVMTypeRef real, real_ptr;        /* its element: float, double, or i16 for half bits */
    LLVMValueRef forward, arena;
    LLVMValueRef *args;                /* forward's inputs, then outputs */
    LLVMValueRef *globals;             /* per node: a param's or scalar's constant, an int8
                                          layer's axrt_requant */
    LLVMValueRef *qweights;            /* per int8 layer: its int8 weights */
    LLVMValueRef ew[16];               /* the int8 node being built's axrt_ew_q8 entries */
    int64_t *offsets;                  /* the arena offsets in use, and their pointers */
    LLVMValueRef *at_offset;           /* (computed once in forward's entry block) */
    int noffsets;
    bool profile;                      /* cg_request.profile: per-layer counters and hook */
    bool blas;                         /* cg_request.blas: float32 GEMMs call cblas_sgemm */
    LLVMValueRef layers, hook;         /* <model>_profile[] and <model>_layer_hook */
    int nlayers;                       /* profiled layers built so far */
} lv;

static ir_node *node_at(const lv *L, int id) { return &L->g->nodes[id]; }
static ax_arena *arena_of(const lv *L) { return L->g->ctx->arena; }

/* ---- constants and calls ---------------------------------------------------- */

static LLVMValueRef k_size(const lv *L, int64_t v) { return LLVMConstInt(L->size, (unsigned long long)v, 0); }
static LLVMValueRef k_i64(const lv *L, int64_t v) { return LLVMConstInt(L->i64, (unsigned long long)v, 1); }
static LLVMValueRef k_i32(const lv *L, int64_t v) { return LLVMConstInt(L->i32, (unsigned long long)v, 1); }
static bool is_half(axrt_dtype t) { return t == AXRT_F16 || t == AXRT_BF16; }

/* A compute-dtype constant: a half type's bits rounded once to nearest
 * even (the C target's real_literal). */
static LLVMValueRef k_real(const lv *L, double v)
{
    if (!is_half(L->dtype))
        return LLVMConstReal(L->real, v);
    uint16_t bits;
    ir_element_set(&bits, L->dtype, 0, v);
    return LLVMConstInt(L->real, bits, 0);
}
static LLVMValueRef k_null(const lv *L) { return LLVMConstNull(L->ptr); }

/* An LLVM type for one letter of a call signature:
 *   p pointer  z size_t  l int64_t  i int  f float  d double  r the compute type  v void */
static LLVMTypeRef sig_type(const lv *L, char c)
{
    switch (c) {
    case 'p': return L->ptr;
    case 'z': return L->size;
    case 'l': return L->i64;
    case 'i': return L->i32;
    case 'r': return L->real;
    case 'f': return LLVMFloatTypeInContext(L->C);
    case 'd': return LLVMDoubleTypeInContext(L->C);
    case 'v': return LLVMVoidTypeInContext(L->C);
    default: ax_die("cg_llvm: bad signature letter '%c'", c);
    }
}

/* The compute dtype of the calls and loops built next, as the C target's
 * kernel suffix: Float64, Float16, BFloat16, else Float32. */
static void set_dtype(lv *L, axrt_dtype dtype)
{
    L->dtype = dtype == AXRT_F64 || is_half(dtype) ? dtype : AXRT_F32;
    L->real = dtype == AXRT_F64 ? LLVMDoubleTypeInContext(L->C)
              : is_half(dtype)  ? LLVMInt16TypeInContext(L->C)
                                : LLVMFloatTypeInContext(L->C);
    L->real_ptr = LLVMPointerType(L->real, 0);
}

/* Declares (once) and calls the external function name whose signature is
 * sig: the result letter, then one letter per argument.  A half scalar
 * (uint16_t) is passed zero-extended, as C compilers do. */
static LLVMValueRef call(lv *L, const char *name, const char *sig, LLVMValueRef *args)
{
    LLVMTypeRef params[24];
    const unsigned nargs = (unsigned)strlen(sig) - 1;
    for (unsigned i = 0; i < nargs; i++)
        params[i] = sig_type(L, sig[i + 1]);
    LLVMTypeRef type = LLVMFunctionType(sig_type(L, sig[0]), params, nargs, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(L->M, name);
    if (!fn) {
        fn = LLVMAddFunction(L->M, name, type);
        LLVMSetLinkage(fn, LLVMExternalLinkage);
    }
    LLVMValueRef result = LLVMBuildCall2(L->B, type, fn, args, nargs, "");
    for (unsigned i = 0; i < nargs && is_half(L->dtype); i++)
        if (sig[i + 1] == 'r') {
            LLVMAttributeRef zext = LLVMCreateEnumAttribute(L->C, LLVMGetEnumAttributeKindForName("zeroext", 7), 0);
            LLVMAddAttributeAtIndex(fn, i + 1, zext);
            LLVMAddCallSiteAttribute(result, i + 1, zext);
        }
    return result;
}


/* A private read-only global holding init; returns it as i8*. */
static LLVMValueRef const_global(lv *L, LLVMValueRef init, const char *name, unsigned align)
{
    LLVMValueRef gv = LLVMAddGlobal(L->M, LLVMTypeOf(init), name);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
    if (align)
        LLVMSetAlignment(gv, align);
    return LLVMConstBitCast(gv, L->ptr);
}

static LLVMValueRef const_i64s(lv *L, const int64_t *v, int n)
{
    LLVMValueRef items[IR_MAX_RANK];
    for (int i = 0; i < n; i++)
        items[i] = k_i64(L, v[i]);
    return const_global(L, LLVMConstArray(L->i64, items, (unsigned)n), "strides", 8);
}

/* A params struct of the runtime (all int fields) as a constant. */
static LLVMValueRef const_ints(lv *L, const int *v, int n)
{
    LLVMValueRef items[24];
    for (int i = 0; i < n; i++)
        items[i] = k_i32(L, v[i]);
    return const_global(L, LLVMConstArray(L->i32, items, (unsigned)n), "params", 4);
}

/* n int32 values as a constant array (an int8 mean-pool's window). */
static LLVMValueRef const_int32s(lv *L, const int32_t *v, int n)
{
    LLVMValueRef *items = ax_alloc(arena_of(L), sizeof *items * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        items[i] = k_i32(L, v[i]);
    return const_global(L, LLVMConstArray(L->i32, items, (unsigned)n), "window", 4);
}

/* n floats, their bits at bits, as a constant array (an int8 softmax's exponentials). */
static LLVMValueRef const_floats(lv *L, const int64_t *bits, int n)
{
    LLVMTypeRef f32 = LLVMFloatTypeInContext(L->C);
    LLVMValueRef *items = ax_alloc(arena_of(L), sizeof *items * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        const uint32_t b = (uint32_t)bits[i];
        float f;
        memcpy(&f, &b, sizeof f);
        items[i] = LLVMConstReal(f32, (double)f);
    }
    return const_global(L, LLVMConstArray(f32, items, (unsigned)n), "floats", 4);
}

/* ---- where values live (cg_c.c's storage(), as values) ---------------------- */

/* The pointer to arena + offset: one value per offset, as cg_c.c has one
 * expression per offset, so that "same storage" is pointer equality. */
static LLVMValueRef arena_at(lv *L, int64_t offset)
{
    for (int i = 0; i < L->noffsets; i++)
        if (L->offsets[i] == offset)
            return L->at_offset[i];
    ax_die("cg_llvm: arena offset %lld was not planned", (long long)offset);
}

/* Every offset the plan uses, as GEPs in the entry block (they dominate
 * every use). */
static void add_arena_pointers(lv *L)
{
    const size_t cap = 2 * (size_t)L->g->nnodes + 1;
    L->offsets = ax_alloc(arena_of(L), cap * sizeof *L->offsets);
    L->at_offset = ax_alloc(arena_of(L), cap * sizeof *L->at_offset);
    for (int id = 0; id < L->g->nnodes; id++) {
        const ir_node *n = &L->g->nodes[id];
        const int64_t offsets[2] = {n->offset, n->scratch_offset};
        for (int k = 0; k < 2 && !n->dead; k++) {
            bool known = offsets[k] < 0;
            for (int i = 0; i < L->noffsets && !known; i++)
                known = L->offsets[i] == offsets[k];
            if (known)
                continue;
            LLVMValueRef at = k_i64(L, offsets[k]);
            L->offsets[L->noffsets] = offsets[k];
            L->at_offset[L->noffsets++] = LLVMBuildInBoundsGEP2(L->B, L->i8, L->arena, &at, 1, "");
        }
    }
}

static LLVMValueRef storage(lv *L, int id)
{
    const ir_node *n = node_at(L, id);
    switch (n->op) {
    case IR_OP_input:
        for (int i = 0; i < L->g->ninputs; i++)
            if (L->g->inputs[i] == id)
                return L->args[i];
        ax_die("cg_llvm: input %%%d is not a graph input", id);
    case IR_OP_param:
    case IR_OP_scalar:
        return L->globals[id];
    default: break;
    }
    if (n->offset >= 0)
        return arena_at(L, n->offset);
    int out = ir_output_index(L->g, id);
    if (out >= 0)
        return L->args[L->g->ninputs + out];
    if (n->op == IR_OP_reshape)
        return storage(L, n->src[0]);
    ax_die("cg_llvm: %%%d %s has no storage (not planned)", id, ir_ops[n->op].name);
}

static LLVMValueRef operand(lv *L, const ir_node *n, int i)
{
    return i < n->nsrc && n->src[i] != IR_NONE ? storage(L, n->src[i]) : k_null(L);
}

static LLVMValueRef scratch(lv *L, const ir_node *n)
{
    return arena_at(L, n->scratch_offset);
}

static const ir_node *operand_node(const lv *L, const ir_node *n, int i) { return node_at(L, n->src[i]); }

/* ---- parameters and scalars --------------------------------------------------- */

static LLVMValueRef bytes_global(lv *L, const void *data, size_t bytes, const char *name, unsigned align)
{
    return const_global(L, LLVMConstStringInContext(L->C, data, (unsigned)bytes, 1), name, align);
}

/* An int8 layer's weights, packed for the runtime's GEMM as the C target's
 * (cg_quant_packed_weights), and its axrt_requant {bias, mult, shift,
 * fscale, zp, lo, hi, scale, flags}: mult and shift, or fscale when the
 * float epilogue follows (cg_c.c emit_quant_constants). */
static void add_quant_constants(lv *L, int id)
{
    const ir_quant *q = node_at(L, id)->quant;
    const size_t nout = (size_t)q->nout;
    LLVMTypeRef f32 = LLVMFloatTypeInContext(L->C);
    size_t packed_bytes;
    const int8_t *packed = cg_quant_packed_weights(L->g, node_at(L, id), &packed_bytes);
    L->qweights[id] = bytes_global(L, packed, packed_bytes, "qw", 64);
    LLVMValueRef bias = bytes_global(L, q->bias, nout * 4, "qbias", 4);
    LLVMValueRef mult = q->float_out ? k_null(L) : bytes_global(L, q->mult, nout * 4, "qmult", 4);
    LLVMValueRef shift = q->float_out ? k_null(L) : bytes_global(L, q->shift, nout, "qshift", 1);
    LLVMValueRef fscale = q->float_out ? bytes_global(L, q->fscale, nout * 4, "qfscale", 4) : k_null(L);
    LLVMTypeRef types[] = {L->ptr, L->ptr, L->ptr, L->ptr, L->i32, L->i32, L->i32, f32, L->i32};
    LLVMValueRef fields[] = {bias, mult, shift, fscale, k_i32(L, q->float_out ? 0 : q->out_zp),
                             k_i32(L, q->float_out ? 0 : q->lo), k_i32(L, q->float_out ? 0 : q->hi),
                             LLVMConstReal(f32, q->float_out ? 0.0 : (double)q->out_scale), k_i32(L, cg_quant_rq_flags(q))};
    LLVMValueRef rq = LLVMConstNamedStruct(LLVMStructTypeInContext(L->C, types, 9, 0), fields, 9);
    L->globals[id] = const_global(L, rq, "requant", 8);
}

static void add_constants(lv *L)
{
    for (int id = 0; id < L->g->nnodes; id++) {
        const ir_node *n = node_at(L, id);
        if (n->dead)
            continue;
        const char *name = ax_sprintf(arena_of(L), "%s_%c%d", L->g->name, n->op == IR_OP_param ? 'p' : 's', id);
        if (n->quant && n->quant->w)
            add_quant_constants(L, id);
        if (n->op == IR_OP_param && !cg_param_only_quantised(L->g, id)) {
            if (!n->data)
                ax_die("cg_llvm: parameter %s has no data", n->name ? n->name : "?");
            const void *data = n->layout == IR_LAYOUT_PLAIN ? n->data : (const void *)cg_packed_data(arena_of(L), n);
            const size_t nbytes = n->layout == IR_LAYOUT_PLAIN ? ir_nbytes(n) : cg_packed_count(n) * sizeof(float);
            LLVMValueRef bytes = LLVMConstStringInContext(L->C, data, (unsigned)nbytes, 1);
            L->globals[id] = const_global(L, bytes, name, 64);
        } else if (n->op == IR_OP_scalar) {
            set_dtype(L, n->dtype);
            L->globals[id] = const_global(L, k_real(L, n->attrs.scalar), name, 0);
        }
    }
}

/* ---- the calls a plan needs built in place (cg_c.c prints them as C) ------------ */
/* Every node is built from its kernel-call plan (cg_plan.c); these are the
 * generated code's own helpers and the C library's memcpy. */

/* memcpy unless from and to are the same storage (one value per place). */
static void copy(lv *L, const ir_node *n, LLVMValueRef from, LLVMValueRef to)
{
    if (from == to)
        return;
    LLVMBuildMemCpy(L->B, to, 1, from, 1, k_size(L, (int64_t)ir_value_bytes(n)));
}

/* --blas=openblas: y (rows x cols, leading dimension cols) = alpha a b +
 * beta y through cblas_sgemm, row-major, b transposed or not, the first
 * element of each operand at the given element offsets.  Declared as
 * OpenBLAS's cblas.h has it (the enums are ints; blasint is int). */
static void call_sgemm(lv *L, bool b_transposed, int64_t rows, int64_t cols, int64_t k, LLVMValueRef a,
                       int64_t a_offset, LLVMValueRef b, int64_t b_offset, double beta, LLVMValueRef y,
                       int64_t y_offset)
{
    enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
    LLVMTypeRef f32 = LLVMFloatTypeInContext(L->C);
    LLVMValueRef at[3];
    const int64_t offsets[3] = {a_offset, b_offset, y_offset};
    LLVMValueRef bases[3] = {a, b, y};
    for (int i = 0; i < 3; i++) {
        LLVMValueRef bytes = k_i64(L, offsets[i] * (int64_t)sizeof(float));
        at[i] = offsets[i] ? LLVMBuildInBoundsGEP2(L->B, L->i8, bases[i], &bytes, 1, "") : bases[i];
    }
    LLVMValueRef args[] = {k_i32(L, ROW_MAJOR), k_i32(L, NO_TRANS), k_i32(L, b_transposed ? TRANS : NO_TRANS),
                           k_i32(L, rows), k_i32(L, cols), k_i32(L, k), LLVMConstReal(f32, 1.0), at[0],
                           k_i32(L, k), at[1], k_i32(L, b_transposed ? k : cols), LLVMConstReal(f32, beta), at[2],
                           k_i32(L, cols)};
    call(L, "cblas_sgemm", "viiiiiifpipifpi", args);
}

/* cg_c.c's axc_blas_matmul unrolled: one cblas_sgemm per batch index, the
 * batch dims broadcast through the strides (libaxrt's matmul contract). */
static void lv_blas_matmul(lv *L, const ir_node *n, LLVMValueRef y)
{
    const cg_matmul_geometry g = cg_matmul_geometry_of(operand_node(L, n, 0), operand_node(L, n, 1));
    int64_t index[AXRT_MAX_RANK] = {0}, oa = 0, ob = 0, oy = 0;
    for (;;) {
        call_sgemm(L, false, g.m, g.cols, g.k, operand(L, n, 0), oa, operand(L, n, 1), ob, 0.0, y, oy);
        oy += g.m * g.cols;
        int d = g.rank - 1;
        for (; d >= 0; d--) {
            oa += g.a_strides[d], ob += g.b_strides[d];
            if (++index[d] < g.batch[d]) break;
            oa -= g.a_strides[d] * g.batch[d], ob -= g.b_strides[d] * g.batch[d];
            index[d] = 0;
        }
        if (d < 0) return;
    }
}

/* cg_c.c's axc_blas_dense: the bias goes into every row of y first (a rank-1
 * product with a column of ones, exact), then y += x w^T, w [out, in]. */
static void lv_blas_dense(lv *L, const ir_node *n, LLVMValueRef y, int64_t rows, int64_t in, int64_t out)
{
    const bool bias = n->nsrc > 2 && n->src[2] != IR_NONE;
    if (bias) {   /* one column of ones per row count, shared by the layers */
        const char *name = ax_sprintf(arena_of(L), "blas_ones%lld", (long long)rows);
        LLVMValueRef ones = LLVMGetNamedGlobal(L->M, name);
        if (ones) {
            ones = LLVMConstBitCast(ones, L->ptr);
        } else {
            LLVMTypeRef f32 = LLVMFloatTypeInContext(L->C);
            LLVMValueRef *one = ax_alloc(arena_of(L), (size_t)rows * sizeof *one);
            for (int64_t r = 0; r < rows; r++)
                one[r] = LLVMConstReal(f32, 1.0);
            ones = const_global(L, LLVMConstArray(f32, one, (unsigned)rows), name, 4);
        }
        call_sgemm(L, false, rows, out, 1, ones, 0, operand(L, n, 2), 0, 0.0, y, 0);
    }
    call_sgemm(L, true, rows, out, in, operand(L, n, 0), 0, operand(L, n, 1), 0, bias ? 1.0 : 0.0, y, 0);
}

/* ---- loop programs (ir_loop: fused elementwise loops) ---------------------------
 * Built as the plan says (cg_plan_loop.c).  The runtime's formulas (axrt_unary.h) as instructions, one function per
 * UNARY_OP row of ops.def (a missing one does not compile), in the C
 * expressions' evaluation order so that results match the C target's. */

static LLVMValueRef libm(lv *L, const char *name, LLVMValueRef v)
{
    const char *fn = L->dtype == AXRT_F64 ? name : ax_sprintf(arena_of(L), "%sf", name);
    return call(L, fn, "rr", &v);
}

static LLVMValueRef intrinsic(lv *L, const char *name, LLVMValueRef v)
{
    const char *fn = ax_sprintf(arena_of(L), "llvm.%s.%s", name, L->dtype == AXRT_F64 ? "f64" : "f32");
    return call(L, fn, "rr", &v);
}

static LLVMValueRef lt(lv *L, LLVMValueRef a, double b) { return LLVMBuildFCmp(L->B, LLVMRealOLT, a, k_real(L, b), ""); }
static LLVMValueRef gt(lv *L, LLVMValueRef a, double b) { return LLVMBuildFCmp(L->B, LLVMRealOGT, a, k_real(L, b), ""); }
static LLVMValueRef sel(lv *L, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSelect(L->B, c, a, b, ""); }
static LLVMValueRef add(lv *L, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(L->B, a, b, ""); }
static LLVMValueRef mul(lv *L, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(L->B, a, b, ""); }
static LLVMValueRef fdiv(lv *L, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFDiv(L->B, a, b, ""); }
static LLVMValueRef neg(lv *L, LLVMValueRef a) { return LLVMBuildFNeg(L->B, a, ""); }

typedef LLVMValueRef unary_fn(lv *L, LLVMValueRef v, double alpha);

static LLVMValueRef lv_relu(lv *L, LLVMValueRef v, double a) { (void)a; return sel(L, lt(L, v, 0), k_real(L, 0), v); }
static LLVMValueRef lv_relu6(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    return sel(L, lt(L, v, 0), k_real(L, 0), sel(L, gt(L, v, 6), k_real(L, 6), v));
}
static LLVMValueRef lv_sigmoid(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    return fdiv(L, k_real(L, 1), add(L, k_real(L, 1), libm(L, "exp", neg(L, v))));
}
static LLVMValueRef lv_tanh(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "tanh", v); }
static LLVMValueRef lv_swish(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    return fdiv(L, v, add(L, k_real(L, 1), libm(L, "exp", neg(L, v))));
}
static LLVMValueRef lv_gelu(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    LLVMValueRef e = libm(L, "erf", mul(L, v, k_real(L, 0.70710678118654752440)));
    return mul(L, mul(L, k_real(L, 0.5), v), add(L, k_real(L, 1), e));
}
static LLVMValueRef lv_gelu_tanh(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    LLVMValueRef cube = mul(L, mul(L, mul(L, k_real(L, 0.044715), v), v), v);
    LLVMValueRef t = libm(L, "tanh", mul(L, k_real(L, 0.79788456080286535588), add(L, v, cube)));
    return mul(L, mul(L, k_real(L, 0.5), v), add(L, k_real(L, 1), t));
}
static LLVMValueRef lv_softplus(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    LLVMBasicBlockRef from = LLVMGetInsertBlock(L->B); /* libm only below the threshold */
    LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(L->C, L->forward, "softplus");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->C, L->forward, "");
    LLVMBuildCondBr(L->B, gt(L, v, 20), join, slow);
    LLVMPositionBuilderAtEnd(L->B, slow);
    LLVMValueRef s = libm(L, "log1p", libm(L, "exp", v));
    LLVMBuildBr(L->B, join);
    LLVMPositionBuilderAtEnd(L->B, join);
    LLVMValueRef phi = LLVMBuildPhi(L->B, L->real, "");
    LLVMValueRef values[] = {v, s};
    LLVMBasicBlockRef blocks[] = {from, slow};
    LLVMAddIncoming(phi, values, blocks, 2);
    return phi;
}
static LLVMValueRef lv_elu(lv *L, LLVMValueRef v, double a)
{
    return sel(L, gt(L, v, 0), v, mul(L, k_real(L, a), libm(L, "expm1", v)));
}
static LLVMValueRef lv_leaky_relu(lv *L, LLVMValueRef v, double a)
{
    return sel(L, lt(L, v, 0), mul(L, k_real(L, a), v), v);
}
static LLVMValueRef lv_exp(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "exp", v); }
static LLVMValueRef lv_log(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "log", v); }
static LLVMValueRef lv_sqrt(lv *L, LLVMValueRef v, double a) { (void)a; return intrinsic(L, "sqrt", v); }
static LLVMValueRef lv_abs(lv *L, LLVMValueRef v, double a) { (void)a; return intrinsic(L, "fabs", v); }
static LLVMValueRef lv_neg(lv *L, LLVMValueRef v, double a) { (void)a; return neg(L, v); }
static LLVMValueRef lv_erf(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "erf", v); }
static LLVMValueRef le(lv *L, LLVMValueRef a, double b) { return LLVMBuildFCmp(L->B, LLVMRealOLE, a, k_real(L, b), ""); }
static LLVMValueRef ge(lv *L, LLVMValueRef a, double b) { return LLVMBuildFCmp(L->B, LLVMRealOGE, a, k_real(L, b), ""); }
static LLVMValueRef lv_hardswish(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    LLVMValueRef mid = fdiv(L, mul(L, v, add(L, v, k_real(L, 3))), k_real(L, 6));
    return sel(L, le(L, v, -3), k_real(L, 0), sel(L, ge(L, v, 3), v, mid));
}
static LLVMValueRef lv_hardsigmoid(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    LLVMValueRef mid = fdiv(L, add(L, v, k_real(L, 3)), k_real(L, 6));
    return sel(L, le(L, v, -3), k_real(L, 0), sel(L, ge(L, v, 3), k_real(L, 1), mid));
}
static LLVMValueRef lv_mish(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    LLVMValueRef sp = sel(L, gt(L, v, 20), v, libm(L, "log1p", libm(L, "exp", v)));
    return mul(L, v, libm(L, "tanh", sp));
}
static LLVMValueRef lv_selu(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    LLVMValueRef neg_part = mul(L, k_real(L, 1.6732632423543772848), libm(L, "expm1", v));
    return mul(L, k_real(L, 1.0507009873554804934), sel(L, gt(L, v, 0), v, neg_part));
}
static LLVMValueRef lv_reciprocal(lv *L, LLVMValueRef v, double a) { (void)a; return fdiv(L, k_real(L, 1), v); }
static LLVMValueRef lv_sin(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "sin", v); }
static LLVMValueRef lv_cos(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "cos", v); }
static LLVMValueRef lv_tan(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "tan", v); }
static LLVMValueRef lv_asin(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "asin", v); }
static LLVMValueRef lv_acos(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "acos", v); }
static LLVMValueRef lv_atan(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "atan", v); }
static LLVMValueRef lv_sinh(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "sinh", v); }
static LLVMValueRef lv_cosh(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "cosh", v); }
static LLVMValueRef lv_asinh(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "asinh", v); }
static LLVMValueRef lv_acosh(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "acosh", v); }
static LLVMValueRef lv_atanh(lv *L, LLVMValueRef v, double a) { (void)a; return libm(L, "atanh", v); }
static LLVMValueRef lv_floor(lv *L, LLVMValueRef v, double a) { (void)a; return intrinsic(L, "floor", v); }
static LLVMValueRef lv_ceil(lv *L, LLVMValueRef v, double a) { (void)a; return intrinsic(L, "ceil", v); }
static LLVMValueRef lv_round(lv *L, LLVMValueRef v, double a) { (void)a; return intrinsic(L, "rint", v); }
static LLVMValueRef lv_sign(lv *L, LLVMValueRef v, double a)
{
    (void)a;
    return sel(L, gt(L, v, 0), k_real(L, 1), sel(L, lt(L, v, 0), k_real(L, -1), v));
}

static unary_fn *const unary_fns[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags)
#define UNARY_OP(name, flags) [IR_OP_##name] = lv_##name,
#include "ops.def"
#undef OP
};

typedef LLVMValueRef binary_fn(lv *L, LLVMValueRef a, LLVMValueRef b);
static LLVMValueRef lv_binary_add(lv *L, LLVMValueRef a, LLVMValueRef b) { return add(L, a, b); }
static LLVMValueRef lv_binary_sub(lv *L, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(L->B, a, b, ""); }
static LLVMValueRef lv_binary_mul(lv *L, LLVMValueRef a, LLVMValueRef b) { return mul(L, a, b); }
static LLVMValueRef lv_binary_div(lv *L, LLVMValueRef a, LLVMValueRef b) { return fdiv(L, a, b); }
/* libm of two arguments for the graph's dtype (powf / pow). */
static LLVMValueRef libm2(lv *L, const char *name, LLVMValueRef a, LLVMValueRef b)
{
    const char *fn = L->dtype == AXRT_F64 ? name : ax_sprintf(arena_of(L), "%sf", name);
    LLVMValueRef args[] = {a, b};
    return call(L, fn, "rrr", args);
}
static LLVMValueRef lv_binary_pow(lv *L, LLVMValueRef a, LLVMValueRef b) { return libm2(L, "pow", a, b); }
static LLVMValueRef lv_binary_fmod(lv *L, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFRem(L->B, a, b, ""); }
/* axrt_unary.h's clamp_min/clamp_max (and max/min): a when past b or NaN
 * (unordered with itself), else b */
static LLVMValueRef nan_or(lv *L, LLVMRealPredicate past, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef keep = LLVMBuildOr(L->B, LLVMBuildFCmp(L->B, past, a, b, ""),
                                    LLVMBuildFCmp(L->B, LLVMRealUNO, a, a, ""), "");
    return sel(L, keep, a, b);
}
static LLVMValueRef lv_binary_clamp_min(lv *L, LLVMValueRef a, LLVMValueRef b) { return nan_or(L, LLVMRealOGT, a, b); }
static LLVMValueRef lv_binary_clamp_max(lv *L, LLVMValueRef a, LLVMValueRef b) { return nan_or(L, LLVMRealOLT, a, b); }
#define lv_binary_max lv_binary_clamp_min
#define lv_binary_min lv_binary_clamp_max
/* One instruction per BINARY_OP row of ops.def (a missing one does not compile). */
static binary_fn *const binary_fns[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags)
#define BINARY_OP(name, symbol) [IR_OP_##name] = lv_binary_##name,
#include "ops.def"
#undef OP
};

/* sum over d of index[d] * strides[d], as i64. */
static LLVMValueRef linear_index(lv *L, LLVMValueRef *index, const int64_t *strides, int loops)
{
    LLVMValueRef sum = k_i64(L, 0);
    for (int d = 0; d < loops; d++)
        if (strides[d])
            sum = LLVMBuildNSWAdd(L->B, sum, LLVMBuildNSWMul(L->B, index[d], k_i64(L, strides[d]), ""), "");
    return sum;
}

/* Op v of loop program l at loop indices index[], given the values of the
 * ops before it in t[]. */
static LLVMValueRef loop_op(lv *L, const ir_loop *l, int v, LLVMValueRef *x, LLVMValueRef *index, const LLVMValueRef *t)
{
    const ir_loop_op *o = &l->ops[v];
    switch (o->kind) {
    case IR_LOOP_LOAD: {
        LLVMValueRef at = linear_index(L, index, l->in_strides[o->arg[0]], l->nloops);
        return LLVMBuildLoad2(L->B, L->real, LLVMBuildInBoundsGEP2(L->B, L->real, x[o->arg[0]], &at, 1, ""), "");
    }
    case IR_LOOP_CONST: return k_real(L, o->real);
    case IR_LOOP_BINARY:
        if (ir_ops[o->op].kind == IR_BINARY && binary_fns[o->op])
            return binary_fns[o->op](L, t[o->arg[0]], t[o->arg[1]]);
        break;
    case IR_LOOP_UNARY:
        if (o->op < IR_OP_COUNT && unary_fns[o->op])
            return unary_fns[o->op](L, t[o->arg[0]], o->real);
        break;
    case IR_LOOP_DERIV:   /* a unary_grad's: cg_llvm_add_model refuses the training ops first */
        ax_die("cg_llvm: %s' in a loop program: the training step is the C target's", ir_ops[o->op].name);
    }
    ax_die("cg_llvm: %s in a fused loop", ir_ops[o->op].name);
}

/* One result element at loop indices index[]: the ops, then the store. */
static void loop_body(lv *L, const ir_loop *l, LLVMValueRef *x, LLVMValueRef y, LLVMValueRef *index)
{
    LLVMValueRef *t = ax_alloc(arena_of(L), (size_t)l->nops * sizeof *t);
    for (int v = 0; v < l->nops; v++)
        t[v] = loop_op(L, l, v, x, index, t);
    LLVMValueRef o = linear_index(L, index, l->out_strides, l->nloops);
    LLVMBuildStore(L->B, t[l->store], LLVMBuildInBoundsGEP2(L->B, L->real, y, &o, 1, ""));
}

/* Loop d of the nest (and, inside it, the ones after it). */
static void loop_nest(lv *L, const ir_loop *l, LLVMValueRef *x, LLVMValueRef y, LLVMValueRef *index, int d)
{
    if (d == l->nloops) {
        loop_body(L, l, x, y, index);
        return;
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->B);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(L->C, L->forward, "loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->C, L->forward, "loop_end");
    LLVMBuildBr(L->B, body);
    LLVMPositionBuilderAtEnd(L->B, body);
    LLVMValueRef i = LLVMBuildPhi(L->B, L->i64, "i");
    index[d] = i;
    loop_nest(L, l, x, y, index, d + 1);
    LLVMValueRef next = LLVMBuildNSWAdd(L->B, i, k_i64(L, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->B);
    LLVMBuildCondBr(L->B, LLVMBuildICmp(L->B, LLVMIntSLT, next, k_i64(L, l->dims[d]), ""), body, done);
    LLVMValueRef values[] = {k_i64(L, 0), next};
    LLVMBasicBlockRef blocks[] = {pre, latch};
    LLVMAddIncoming(i, values, blocks, 2);
    LLVMPositionBuilderAtEnd(L->B, done);
}

/* A loop program (ir_loop, the plan of a fused_elementwise node) as it is. */
static void build_loop(lv *L, const ir_loop *l)
{
    LLVMValueRef x[IR_LOOP_MAX_INPUTS], index[IR_MAX_RANK];
    if (l->compute != l->dtype)   /* a half unary_grad's: the training step is the C target's */
        ax_die("cg_llvm: the loop program of %%%d converts", l->output);
    set_dtype(L, l->dtype);
    for (int k = 0; k < l->ninputs; k++)
        x[k] = LLVMBuildBitCast(L->B, storage(L, l->input[k]), L->real_ptr, "");
    loop_nest(L, l, x, LLVMBuildBitCast(L->B, storage(L, l->output), L->real_ptr, ""), index, 0);
}

/* ---- per-layer profile (cg_request.profile, docs/cli.md#seeing-inside-a-model) ------------------ */

/* The same globals and calls as cg_c.c's profile: <model>_profile[] (one
 * axrt_layer_profile per profiled node, execution order), <model>_layer_hook,
 * and axc_profile_clock() around every layer, the application's clock; a
 * Linux target (and the JIT) gets a weak default in nanoseconds. */

static LLVMTypeRef tensor_info_type(const lv *L);
static LLVMValueRef const_string(lv *L, const char *s);

/* axrt_layer_profile: {layer, op, axrt_tensor_info out, flops, bytes, ticks, calls} */
enum { PROFILE_TICKS = 5, PROFILE_CALLS = 6 };
static LLVMTypeRef layer_profile_type(const lv *L)
{
    LLVMTypeRef real64 = LLVMDoubleTypeInContext(L->C);
    LLVMTypeRef fields[] = {L->ptr, L->ptr, tensor_info_type(L), real64, real64, L->i64, L->i64};
    return LLVMStructTypeInContext(L->C, fields, 7, 0);
}

static LLVMValueRef layer_profile_entry(lv *L, int id)
{
    const ir_node *n = node_at(L, id);
    const char *layer = cg_layer_name(L->g, id);
    LLVMValueRef dims[AXRT_MAX_RANK];
    for (int d = 0; d < AXRT_MAX_RANK; d++)
        dims[d] = k_i64(L, d < n->rank ? n->shape[d] : 0);
    LLVMValueRef out[] = {const_string(L, layer), k_i32(L, n->dtype), k_i32(L, n->rank),
                          LLVMConstArray(L->i64, dims, AXRT_MAX_RANK)};
    LLVMTypeRef real64 = LLVMDoubleTypeInContext(L->C);
    LLVMValueRef fields[] = {const_string(L, layer), const_string(L, cg_layer_op(L->g, n)),
                             LLVMConstNamedStruct(tensor_info_type(L), out, 4),
                             LLVMConstReal(real64, ir_node_flops(L->g, n)),
                             LLVMConstReal(real64, ir_node_bytes(L->g, n)), k_i64(L, 0), k_i64(L, 0)};
    return LLVMConstNamedStruct(layer_profile_type(L), fields, 7);
}

static void add_profile_globals(lv *L)
{
    const int count = cg_profiled_layers(L->g);
    LLVMValueRef *items = ax_alloc(arena_of(L), ((size_t)count + 1) * sizeof *items);
    int k = 0;
    for (int id = 0; id < L->g->nnodes; id++)
        if (cg_is_profiled(node_at(L, id)))
            items[k++] = layer_profile_entry(L, id);
    if (!count) /* as the C target: an array of one */
        items[k++] = LLVMConstNull(layer_profile_type(L));
    LLVMValueRef table = LLVMConstArray(layer_profile_type(L), items, (unsigned)k);
    L->layers = LLVMAddGlobal(L->M, LLVMTypeOf(table), ax_sprintf(arena_of(L), "%s_profile", L->g->name));
    LLVMSetInitializer(L->layers, table);
    LLVMSetAlignment(L->layers, 8);
    L->hook = LLVMAddGlobal(L->M, L->ptr, ax_sprintf(arena_of(L), "%s_layer_hook", L->g->name));
    LLVMSetInitializer(L->hook, k_null(L));
    LLVMSetAlignment(L->hook, 8);
}

/* uint64_t axc_profile_clock(void), weak: clock_gettime(CLOCK_MONOTONIC) in
 * nanoseconds (struct timespec is two longs on Linux).  Once per module. */
static void add_default_clock(lv *L)
{
    LLVMValueRef fn = LLVMGetNamedFunction(L->M, "axc_profile_clock");
    if (!strstr(LLVMGetTarget(L->M), "linux") || (fn && LLVMCountBasicBlocks(fn)))
        return;
    if (!fn)
        fn = LLVMAddFunction(L->M, "axc_profile_clock", LLVMFunctionType(L->i64, NULL, 0, 0));
    LLVMSetLinkage(fn, LLVMWeakAnyLinkage);
    LLVMPositionBuilderAtEnd(L->B, LLVMAppendBasicBlockInContext(L->C, fn, "entry"));
    LLVMTypeRef timespec_fields[] = {L->size, L->size};
    LLVMTypeRef timespec = LLVMStructTypeInContext(L->C, timespec_fields, 2, 0);
    LLVMValueRef ts = LLVMBuildAlloca(L->B, timespec, "ts");
    LLVMValueRef args[] = {k_i32(L, 1 /* CLOCK_MONOTONIC */), LLVMBuildBitCast(L->B, ts, L->ptr, "")};
    call(L, "clock_gettime", "iip", args);
    LLVMValueRef part[2];
    for (unsigned i = 0; i < 2; i++)
        part[i] = LLVMBuildSExtOrBitCast(
            L->B, LLVMBuildLoad2(L->B, L->size, LLVMBuildStructGEP2(L->B, timespec, ts, i, ""), ""), L->i64, "");
    LLVMBuildRet(L->B, LLVMBuildAdd(L->B, LLVMBuildMul(L->B, part[0], k_i64(L, 1000000000), ""), part[1], ""));
}

static LLVMValueRef profile_clock(lv *L)
{
    return call(L, "axc_profile_clock", "l", NULL);
}

/* &<model>_profile[k].field */
static LLVMValueRef profile_field(lv *L, int k, int field)
{
    LLVMValueRef at[] = {k_i32(L, 0), k_i32(L, k), k_i32(L, field)};
    return LLVMBuildInBoundsGEP2(L->B, LLVMGlobalGetValueType(L->layers), L->layers, at, field < 0 ? 2 : 3, "");
}

static void add_to(lv *L, LLVMValueRef at, LLVMValueRef v)
{
    LLVMBuildStore(L->B, LLVMBuildAdd(L->B, LLVMBuildLoad2(L->B, L->i64, at, ""), v, ""), at);
}

/* Adds the layer's ticks and a call, then hands its output (NULL for a
 * multi-result producer) to the hook, if one is set. */
static void profile_layer_end(lv *L, LLVMValueRef t0, LLVMValueRef y)
{
    const int k = L->nlayers++;
    add_to(L, profile_field(L, k, PROFILE_TICKS), LLVMBuildSub(L->B, profile_clock(L), t0, ""));
    add_to(L, profile_field(L, k, PROFILE_CALLS), k_i64(L, 1));
    LLVMValueRef hook = LLVMBuildLoad2(L->B, L->ptr, L->hook, "hook");
    LLVMBasicBlockRef set = LLVMAppendBasicBlockInContext(L->C, L->forward, "hook");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(L->C, L->forward, "");
    LLVMBuildCondBr(L->B, LLVMBuildICmp(L->B, LLVMIntNE, hook, k_null(L), ""), set, next);
    LLVMPositionBuilderAtEnd(L->B, set);
    LLVMTypeRef params[] = {L->i32, L->ptr, L->ptr};
    LLVMTypeRef type = LLVMFunctionType(LLVMVoidTypeInContext(L->C), params, 3, 0);
    LLVMValueRef args[] = {k_i32(L, k), LLVMBuildBitCast(L->B, profile_field(L, k, -1), L->ptr, ""),
                           y ? y : k_null(L)};
    LLVMBuildCall2(L->B, type, LLVMBuildBitCast(L->B, hook, LLVMPointerType(type, 0), ""), args, 3, "");
    LLVMBuildBr(L->B, next);
    LLVMPositionBuilderAtEnd(L->B, next);
}

/* ---- a node's kernel-call plan (ir_plan.h, chosen by cg_plan.c) as calls ------ */

/* Int8 bytes a: a region of n's scratch the plan names (a conv's receptive
 * field) as an offset from the scratch, named so; else the pointer
 * computed for its offset in the entry block. */
static LLVMValueRef bytes_at(lv *L, const ir_node *n, const ir_arg *a)
{
    for (int i = 0; i < L->noffsets && !a->name; i++)
        if (L->offsets[i] == a->value)
            return L->at_offset[i];
    LLVMValueRef after = k_i64(L, a->value - n->scratch_offset);
    return LLVMBuildInBoundsGEP2(L->B, L->i8, scratch(L, n), &after, 1, a->name ? a->name : "");
}

/* Int8 node n's axrt_ew_q8 entries as constants, one per operand (a
 * concat's own, else entry 0 each), before its calls; axrt_ew_q8 is 12
 * int32, the float scale and an int32: fourteen 4-byte fields. */
static void add_ew_constants(lv *L, const ir_node *n)
{
    const ir_quant *q = n->quant;
    for (int k = 0; q && k < q->nin && k < 16; k++) {
        const axrt_ew_q8 *e = &q->ew[n->op == IR_OP_concat ? k : 0];
        int v[14] = {e->zp[0], e->zp[1], e->mult[0], e->mult[1], e->shift[0], e->shift[1], e->left,
                     e->out_mult, e->out_shift, e->out_zp, e->lo, e->hi, 0, e->flags};
        memcpy(&v[12], &e->scale, sizeof e->scale);
        L->ew[k] = const_ints(L, v, 14);
    }
}

/* count size_t values as a constant array (a chunk's rows). */
static LLVMValueRef const_sizes(lv *L, const int64_t *v, int count)
{
    LLVMValueRef *items = ax_alloc(arena_of(L), sizeof *items * (size_t)(count + 1));
    for (int i = 0; i < count; i++)
        items[i] = k_size(L, v[i]);
    return const_global(L, LLVMConstArray(L->size, items, (unsigned)count), "rows", 8);
}

/* The storage of count nodes as an array of pointers on the stack (a
 * chunk's results). */
static LLVMValueRef pointer_array(lv *L, const int64_t *nodes, int count)
{
    LLVMValueRef ys = LLVMBuildArrayAlloca(L->B, L->ptr, k_i32(L, count), "ys");
    for (int k = 0; k < count; k++) {
        LLVMValueRef at = k_i64(L, k);
        LLVMBuildStore(L->B, storage(L, (int)nodes[k]), LLVMBuildInBoundsGEP2(L->B, L->ptr, ys, &at, 1, ""));
    }
    return LLVMBuildBitCast(L->B, ys, L->ptr, "");
}

/* Argument a of a plan's call of node n as a value; *sig gets its signature letter. */
static LLVMValueRef plan_arg(lv *L, const ir_node *n, const ir_arg *a, char *sig)
{
    int ints[24];
    int32_t *int32s;
    switch (a->kind) {
    case IR_ARG_VALUE: *sig = 'p'; return a->node == IR_NONE ? k_null(L) : storage(L, a->node);
    case IR_ARG_ARENA: *sig = 'p'; return arena_at(L, a->value);
    case IR_ARG_SCALAR: {
        *sig = 'r';
        LLVMValueRef p = LLVMBuildBitCast(L->B, storage(L, a->node), L->real_ptr, "");
        return LLVMBuildLoad2(L->B, L->real, p, "");
    }
    case IR_ARG_SIZE: *sig = 'z'; return k_size(L, a->value);
    case IR_ARG_INT64: *sig = 'l'; return k_i64(L, a->value);
    case IR_ARG_INT:
    case IR_ARG_ACT: *sig = 'i'; return k_i32(L, a->value);
    case IR_ARG_DTYPE: *sig = 'i'; return k_i32(L, a->dtype);
    case IR_ARG_REAL: *sig = 'r'; return k_real(L, a->real);
    case IR_ARG_INTS:
        *sig = 'p';
        for (int i = 0; i < a->count && i < 24; i++)
            ints[i] = (int)a->values[i];
        return const_ints(L, ints, a->count);
    case IR_ARG_INT64S: *sig = 'p'; return const_i64s(L, a->values, a->count);
    case IR_ARG_INT32S:
        *sig = 'p';
        int32s = ax_alloc(arena_of(L), sizeof *int32s * (size_t)(a->count + 1));
        for (int i = 0; i < a->count; i++)
            int32s[i] = (int32_t)a->values[i];
        return const_int32s(L, int32s, a->count);
    case IR_ARG_BYTES: *sig = 'p'; return bytes_at(L, n, a);
    case IR_ARG_FLOAT: *sig = 'f'; return LLVMConstReal(LLVMFloatTypeInContext(L->C), (double)(float)a->real);
    case IR_ARG_QWEIGHTS: *sig = 'p'; return L->qweights[a->node];
    case IR_ARG_REQUANT: *sig = 'p'; return L->globals[a->node];
    case IR_ARG_EW: *sig = 'p'; return L->ew[a->value];
    case IR_ARG_SIZES: *sig = 'p'; return const_sizes(L, a->values, a->count);
    case IR_ARG_FLOATS: *sig = 'p'; return const_floats(L, a->values, a->count);
    case IR_ARG_POINTERS: *sig = 'p'; return pointer_array(L, a->values, a->count);
    case IR_ARG_INT64_VALUE: *sig = 'p'; return storage(L, a->node);
    case IR_ARG_DOUBLE: *sig = 'd'; return LLVMConstReal(LLVMDoubleTypeInContext(L->C), a->real);
    case IR_ARG_STATE: case IR_ARG_STATE_BYTES: case IR_ARG_EMBEDDED: case IR_ARG_OPTIM: case IR_ARG_LOCAL:
    case IR_ARG_GRADS_IN: case IR_ARG_GRADS_OUT: break;   /* a training step's own: no step here yet */
    }
    ax_die("cg_llvm: bad plan argument");
}

/* A call returning a status: forward returns it when it is not 0. */
static void return_on_status(lv *L, LLVMValueRef status)
{
    LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(L->C, L->forward, "index_error");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(L->C, L->forward, "");
    LLVMBuildCondBr(L->B, LLVMBuildICmp(L->B, LLVMIntNE, status, k_i32(L, 0), ""), fail, next);
    LLVMPositionBuilderAtEnd(L->B, fail);
    LLVMBuildRet(L->B, status);
    LLVMPositionBuilderAtEnd(L->B, next);
}

/* The plan's calls in order; the generated C's BLAS helpers (axc_blas_*)
 * are built in place. */
static void build_plan(lv *L, const ir_node *n, const ir_plan *p, LLVMValueRef y)
{
    add_ew_constants(L, n);
    if (p->loop)
        build_loop(L, p->loop);
    for (int c = 0; c < p->ncalls; c++) {
        const ir_call *call_ = &p->calls[c];
        if (!strcmp(call_->kernel, "axc_blas_dense")) {
            lv_blas_dense(L, n, y, call_->args[4].value, call_->args[5].value, call_->args[6].value);
            continue;
        }
        if (!strcmp(call_->kernel, "memcpy")) {   /* the C library's: its intrinsic */
            char letter;
            LLVMValueRef to = plan_arg(L, n, &call_->args[0], &letter), from = plan_arg(L, n, &call_->args[1], &letter);
            if (to != from)
                LLVMBuildMemCpy(L->B, to, 1, from, 1, k_size(L, call_->args[2].value));
            continue;
        }
        if (!strcmp(call_->kernel, "axc_blas_matmul")) {
            lv_blas_matmul(L, n, y);
            continue;
        }
        LLVMValueRef args[IR_CALL_MAX_ARGS];
        char sig[IR_CALL_MAX_ARGS + 2] = {call_->status ? 'i' : 'v'};
        for (int i = 0; i < call_->nargs; i++)
            args[i] = plan_arg(L, n, &call_->args[i], &sig[i + 1]);
        sig[call_->nargs + 1] = 0;
        LLVMValueRef result = call(L, call_->kernel, sig, args);
        if (call_->status)
            return_on_status(L, result);
    }
}

static void emit_node_body(lv *L, int id, LLVMValueRef y)
{
    const ir_node *n = node_at(L, id);
    const cg_plan_context ctx = {.blas = L->blas, .pack_offset = -1};
    const ir_plan *plan = n->plan ? n->plan : cg_plan_node(L->g, id, &ctx);
    if (plan)
        build_plan(L, n, plan, y);
    else if (n->op != IR_OP_result)   /* a result: its chunk's call wrote it; every other op has a rule */
        ax_die("cg_llvm: %s %%%d has no kernel-call plan", ir_ops[n->op].name, id);
}

/* The node's calls, timed when profiled (cg_c.c emit_node). */
static void emit_node(lv *L, int id)
{
    const ir_node *n = node_at(L, id);
    if (ir_runs_in_reader(n)) /* computed inside its reader */
        return;
    LLVMValueRef y = ir_has_results(n->op) ? NULL : storage(L, id); /* a producer has none */
    set_dtype(L, n->dtype);
    LLVMValueRef t0 = L->profile ? profile_clock(L) : NULL;
    emit_node_body(L, id, y);
    if (L->profile)
        profile_layer_end(L, t0, y);
}

/* ---- forward, run and the descriptor ---------------------------------------------- */

static LLVMTypeRef forward_type(const lv *L)
{
    const int n = L->g->ninputs + L->g->noutputs;
    LLVMTypeRef *params = ax_alloc(L->g->ctx->arena, ((size_t)n + 1) * sizeof *params);
    for (int i = 0; i <= n; i++)
        params[i] = L->ptr;
    return LLVMFunctionType(L->i32, params, (unsigned)n + 1, 0);
}

static void build_forward(lv *L)
{
    const int nargs = L->g->ninputs + L->g->noutputs;
    const size_t arena_size = L->g->arena_bytes ? L->g->arena_bytes : 1;
    LLVMTypeRef arena_type = LLVMArrayType(L->i8, (unsigned)arena_size);
    LLVMValueRef static_arena = LLVMAddGlobal(L->M, arena_type, ax_sprintf(arena_of(L), "%s_static_arena", L->g->name));
    LLVMSetInitializer(static_arena, LLVMConstNull(arena_type));
    LLVMSetLinkage(static_arena, LLVMInternalLinkage);
    LLVMSetAlignment(static_arena, 64);

    L->forward = LLVMAddFunction(L->M, ax_sprintf(arena_of(L), "%s_forward", L->g->name), forward_type(L));
    for (int i = 0; i <= nargs; i++) {
        LLVMValueRef p = LLVMGetParam(L->forward, (unsigned)i);
        const char *name = i == nargs ? "arena"
                           : i < L->g->ninputs ? node_at(L, L->g->inputs[i])->name
                                               : L->g->output_names[i - L->g->ninputs];
        LLVMSetValueName2(p, name ? name : "", name ? strlen(name) : 0);
        if (i < nargs)
            L->args[i] = p;
    }
    LLVMAddAttributeAtIndex(L->forward, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(L->C, LLVMGetEnumAttributeKindForName("nounwind", 8), 0));
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(L->C, L->forward, "entry");
    LLVMPositionBuilderAtEnd(L->B, entry);
    LLVMValueRef arena = LLVMGetParam(L->forward, (unsigned)nargs);
    LLVMValueRef is_null = LLVMBuildICmp(L->B, LLVMIntEQ, arena, k_null(L), "");
    L->arena = LLVMBuildSelect(L->B, is_null, LLVMConstBitCast(static_arena, L->ptr), arena, "arena");
    add_arena_pointers(L);
    for (int id = 0; id < L->g->nnodes; id++) {
        const ir_node *n = node_at(L, id);
        if (!n->dead && ir_ops[n->op].kind != IR_SOURCE)
            emit_node(L, id);
    }
    for (int i = 0; i < L->g->noutputs; i++) /* outputs stored elsewhere are copied */
        copy(L, node_at(L, L->g->outputs[i]), storage(L, L->g->outputs[i]), L->args[L->g->ninputs + i]);
    LLVMBuildRet(L->B, k_i32(L, 0));
}

/* static int <m>_run(const void *const *inputs, void *const *outputs, void *arena) */
static LLVMValueRef build_run(lv *L)
{
    LLVMTypeRef pp = LLVMPointerType(L->ptr, 0);
    LLVMTypeRef params[] = {pp, pp, L->ptr};
    LLVMValueRef run = LLVMAddFunction(L->M, ax_sprintf(arena_of(L), "%s_run", L->g->name),
                                       LLVMFunctionType(L->i32, params, 3, 0));
    LLVMSetLinkage(run, LLVMInternalLinkage);
    LLVMPositionBuilderAtEnd(L->B, LLVMAppendBasicBlockInContext(L->C, run, "entry"));
    const int nin = L->g->ninputs, nout = L->g->noutputs;
    LLVMValueRef *args = ax_alloc(arena_of(L), ((size_t)nin + (size_t)nout + 1) * sizeof *args);
    for (int i = 0; i < nin + nout; i++) {
        LLVMValueRef at = k_i64(L, i < nin ? i : i - nin);
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(L->B, L->ptr, LLVMGetParam(run, i < nin ? 0 : 1), &at, 1, "");
        args[i] = LLVMBuildLoad2(L->B, L->ptr, slot, "");
    }
    args[nin + nout] = LLVMGetParam(run, 2);
    LLVMValueRef status = LLVMBuildCall2(L->B, forward_type(L), L->forward, args, (unsigned)(nin + nout + 1), "");
    LLVMBuildRet(L->B, status);
    return run;
}

static LLVMValueRef const_string(lv *L, const char *s)
{
    return const_global(L, LLVMConstStringInContext(L->C, s, (unsigned)strlen(s), 0), "name", 1);
}

/* axrt_tensor_info: {const char *name; axrt_dtype dtype; int rank; int64_t dims[8]} */
static LLVMTypeRef tensor_info_type(const lv *L)
{
    LLVMTypeRef fields[] = {L->ptr, L->i32, L->i32, LLVMArrayType(L->i64, AXRT_MAX_RANK)};
    return LLVMStructTypeInContext(L->C, fields, 4, 0);
}

static LLVMValueRef tensor_infos(lv *L, const int *ids, const char *const *names, int count)
{
    LLVMValueRef *items = ax_alloc(arena_of(L), ((size_t)count + 1) * sizeof *items);
    for (int i = 0; i < count; i++) {
        const ir_node *n = node_at(L, ids[i]);
        LLVMValueRef dims[AXRT_MAX_RANK];
        for (int d = 0; d < AXRT_MAX_RANK; d++)
            dims[d] = k_i64(L, d < n->rank ? n->shape[d] : 0);
        LLVMValueRef fields[] = {const_string(L, names[i] ? names[i] : ""), k_i32(L, n->dtype),
                                 k_i32(L, n->rank), LLVMConstArray(L->i64, dims, AXRT_MAX_RANK)};
        items[i] = LLVMConstNamedStruct(tensor_info_type(L), fields, 4);
    }
    LLVMValueRef array = LLVMConstArray(tensor_info_type(L), items, (unsigned)count);
    return const_global(L, array, "tensors", 8);
}

/* const axrt_model <m>_model = {name, n_inputs, n_outputs, inputs, outputs,
 * arena_bytes, run}; */
static void build_descriptor(lv *L, LLVMValueRef run)
{
    const char **in_names = ax_alloc(arena_of(L), ((size_t)L->g->ninputs + 1) * sizeof *in_names);
    for (int i = 0; i < L->g->ninputs; i++)
        in_names[i] = node_at(L, L->g->inputs[i])->name;
    LLVMTypeRef info_ptr = LLVMPointerType(tensor_info_type(L), 0);
    LLVMTypeRef fields[] = {L->ptr, L->i32, L->i32, info_ptr, info_ptr, L->size, LLVMTypeOf(run)};
    LLVMTypeRef model_type = LLVMStructTypeInContext(L->C, fields, 7, 0);
    LLVMValueRef values[] = {
        const_string(L, L->g->name), k_i32(L, L->g->ninputs), k_i32(L, L->g->noutputs),
        LLVMConstBitCast(tensor_infos(L, L->g->inputs, in_names, L->g->ninputs), info_ptr),
        LLVMConstBitCast(tensor_infos(L, L->g->outputs, L->g->output_names, L->g->noutputs), info_ptr),
        k_size(L, (int64_t)L->g->arena_bytes), run};
    LLVMValueRef model = LLVMAddGlobal(L->M, model_type, ax_sprintf(arena_of(L), "%s_model", L->g->name));
    LLVMSetInitializer(model, LLVMConstNamedStruct(model_type, values, 7));
    LLVMSetGlobalConstant(model, 1);
}

/* ---- the module ------------------------------------------------------------------ */

void cg_llvm_failed(ir_graph *g, const char *what, const char *why)
{
    ax_error(g->ctx, g->loc, "internal: LLVM %s failed: %s", what, why && *why ? why : "(no message)");
}

int cg_llvm_verify_function(ir_graph *g, LLVMValueRef fn)
{
    if (!LLVMVerifyFunction(fn, LLVMReturnStatusAction))
        return 0;
    size_t len;
    const char *name = LLVMGetValueName2(fn, &len);
    char *why = NULL;
    LLVMVerifyModule(LLVMGetGlobalParent(fn), LLVMReturnStatusAction, &why);
    cg_llvm_failed(g, ax_sprintf(g->ctx->arena, "verification of function '%.*s'", (int)len, name), why);
    LLVMDisposeMessage(why);
    return 1;
}

int cg_llvm_add_model(LLVMModuleRef M, LLVMTargetDataRef layout, ir_graph *g, bool profile, bool blas)
{
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (!n->dead && (n->op == IR_OP_unary_grad || n->op == IR_OP_conv_grad_weight || n->op == IR_OP_pool_grad ||
                         n->op == IR_OP_slice_grad || n->op == IR_OP_embedding_grad || n->op == IR_OP_dropout)) {
            ax_error(g->ctx, n->loc, "the %s target has no kernel for %s yet (use --target=c)", "llvm",
                     ir_ops[n->op].name);
            return 1;
        }
    }
    lv L = {.g = g, .M = M, .C = LLVMGetModuleContext(M), .profile = profile, .blas = blas};
    L.B = LLVMCreateBuilderInContext(L.C);
    L.i8 = LLVMInt8TypeInContext(L.C);
    L.i32 = LLVMInt32TypeInContext(L.C);
    L.i64 = LLVMInt64TypeInContext(L.C);
    L.size = LLVMIntPtrTypeInContext(L.C, layout);
    L.ptr = LLVMPointerType(L.i8, 0);
    set_dtype(&L, g->dtype);
    L.globals = ax_alloc(g->ctx->arena, ((size_t)g->nnodes + 1) * sizeof *L.globals);
    L.qweights = ax_alloc(g->ctx->arena, ((size_t)g->nnodes + 1) * sizeof *L.qweights);
    L.args = ax_alloc(g->ctx->arena, ((size_t)g->ninputs + (size_t)g->noutputs + 1) * sizeof *L.args);
    add_constants(&L);
    if (profile) {
        add_profile_globals(&L);
        add_default_clock(&L);
    }
    build_forward(&L);
    LLVMValueRef run = build_run(&L);
    build_descriptor(&L, run);
    LLVMDisposeBuilder(L.B);
    return cg_llvm_verify_function(g, L.forward) || cg_llvm_verify_function(g, run);
}

#endif /* AXC_HAVE_LLVM */
