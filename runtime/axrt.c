/* axrt.c — the freestanding core of libaxrt: dtype helpers and the kernels
 * generated C calls (axrt.h).  The kernel bodies live in axrt_kernels.inc,
 * instantiated here for float (_f32), double (_f64), and the half types
 * (_f16, _bf16: uint16_t storage, float accumulation; the conversions are in
 * axrt_cpu.h) so that every compute dtype shares one implementation.  The float kernels that have a faster
 * variant are instantiated as axrt_<name>_f32_portable; axrt_fast.inc,
 * included last, exports axrt_<name>_f32 through the kernel table of the
 * instruction set in use (axrt_cpu.h; x86 tables in axrt_x86_avx2.c and
 * axrt_x86_avx512.c), and the packed-weight kernels.  Other runtime files
 * (axrt_dwconv.c, axrt_threads.c) hold kernels of their own; axc.mk builds
 * every .c file of the runtime.  Needs only <stddef.h> <stdint.h>
 * <string.h> <math.h>: it builds for firmware. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "axrt.h"
#include "axrt_cpu.h"
#include "axrt_unary.h"

#ifdef AXRT_X86_SIMD
#include <stdio.h>  /* fprintf, for an AXRT_ISA not honoured: x86-64 hosts only */
#include <stdlib.h> /* getenv, for AXRT_ISA: x86-64 hosts only */
#include <cpuid.h>  /* the L2 cache's size (axrt_fast.inc conv_weight_block): x86-64 hosts only */
#endif

size_t axrt_dtype_size(axrt_dtype dtype)
{
    static const unsigned char sizes[AXRT_DTYPE_COUNT] = {
#define AXRT_DTYPE_SIZE(E, name, short_name, ctype, bytes, st, npy, is_float) bytes,
        AXRT_DTYPES(AXRT_DTYPE_SIZE)
#undef AXRT_DTYPE_SIZE
    };
    return (unsigned)dtype < AXRT_DTYPE_COUNT ? sizes[dtype] : 0;
}

size_t axrt_mha_scratch_elems(const axrt_mha_params *p)
{
    const size_t d = (size_t)p->d, lq = (size_t)p->lq, lk = (size_t)p->lk;
    /* q, k, v, heads, scores, and k transposed head by head (axrt_fast.inc) */
    return 2 * lq * d + 3 * lk * d + lq * lk;
}

size_t axrt_mha_flash_scratch_elems(const axrt_mha_params *p)
{
    const size_t d = (size_t)p->d, lq = (size_t)p->lq, lk = (size_t)p->lk;
    const size_t keys = lk < AXRT_FLASH_KEYS ? lk : AXRT_FLASH_KEYS;
    /* q, k, v, heads, k transposed head by head, and one block of scores
       per block of query rows (axrt_flash.inc): never more than
       axrt_mha_scratch_elems */
    return 2 * lq * d + 3 * lk * d + lq * keys;
}

size_t axrt_rnn_scratch_elems(const axrt_rnn_params *p, int gates)
{
    /* the input and hidden gate sums, the state h, and c (LSTM) or r * h (GRU) */
    return 2 * (size_t)gates * (size_t)p->hidden + 2 * (size_t)p->hidden;
}

#define AXRT_CAT2(a, b) a##b
#define AXRT_CAT(a, b) AXRT_CAT2(a, b)

#define T float
#define ACC float
#define LOAD(v) (v)
#define STORE(v) (v)
#define FN(name) AXRT_CAT(AXRT_CAT(axrt_, name), _f32)
#define FN_D(name) AXRT_CAT(AXRT_CAT(axrt_, name), _f32_portable)
#include "axrt_math_float.inc"
#include "axrt_kernels.inc"

#define T double
#define ACC double
#define LOAD(v) (v)
#define STORE(v) (v)
#define FN(name) AXRT_CAT(AXRT_CAT(axrt_, name), _f64)
#define FN_D(name) FN(name)
#define MATH_EXP exp
#define MATH_LOG log
#define MATH_SQRT sqrt
#define MATH_TANH tanh
#define MATH_ERF erf
#define MATH_EXPM1 expm1
#define MATH_LOG1P log1p
#define MATH_FABS fabs
#define MATH_FN(f) f
#include "axrt_kernels.inc"

#define T uint16_t
#define ACC float
#define LOAD(v) axrt_half_to_float(v)
#define STORE(v) axrt_float_to_half(v)
#define FN(name) AXRT_CAT(AXRT_CAT(axrt_, name), _f16)
#define FN_D(name) FN(name)
#define FN_DENSE axrt_dense_f16_portable
#define FN_CONV2D axrt_conv2d_f16_portable
#include "axrt_math_float.inc"
#include "axrt_kernels.inc"

#define T uint16_t
#define ACC float
#define LOAD(v) axrt_bf16_to_float(v)
#define STORE(v) axrt_float_to_bf16(v)
#define FN(name) AXRT_CAT(AXRT_CAT(axrt_, name), _bf16)
#define FN_D(name) FN(name)
#define FN_DENSE axrt_dense_bf16_portable
#define FN_CONV2D axrt_conv2d_bf16_portable
#include "axrt_math_float.inc"
#include "axrt_kernels.inc"

#include "axrt_fast.inc"
#include "axrt_half.inc"
