/* axrt.c — the freestanding core of libaxrt: dtype helpers and the kernels
 * generated C calls (axrt.h).  The kernel bodies live in axrt_kernels.inc,
 * instantiated here for float (_f32) and double (_f64) so that both compute
 * dtypes share one implementation.  The float kernels that have a faster
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
#include <stdlib.h> /* getenv, for AXRT_ISA: x86-64 hosts only */
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
    /* q, k, v, heads, scores, and one head's k transposed (axrt_fast.inc) */
    return 2 * lq * d + 3 * lk * d + lq * lk;
}

/* IEEE binary16 bits to float, subnormals, infinities and NaN included;
 * done by bit manipulation because freestanding targets lack _Float16. */
static float axrt_half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    float magnitude;
    uint32_t bits;
    if (exponent == 0) {
        magnitude = ldexpf((float)mantissa, -24);
        memcpy(&bits, &magnitude, sizeof bits);
        bits |= sign;
    } else if (exponent == 31) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    }
    memcpy(&magnitude, &bits, sizeof bits);
    return magnitude;
}

/* bfloat16 is the upper half of a float. */
static float axrt_bf16_to_float(uint16_t b)
{
    const uint32_t bits = (uint32_t)b << 16;
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

#define AXRT_CAT2(a, b) a##b
#define AXRT_CAT(a, b) AXRT_CAT2(a, b)

#define T float
#define ACC float
#define LOAD(v) (v)
#define STORE(v) (v)
#define FN(name) AXRT_CAT(AXRT_CAT(axrt_, name), _f32)
#define FN_D(name) AXRT_CAT(AXRT_CAT(axrt_, name), _f32_portable)
#define MATH_EXP expf
#define MATH_LOG logf
#define MATH_SQRT sqrtf
#define MATH_TANH tanhf
#define MATH_ERF erff
#define MATH_EXPM1 expm1f
#define MATH_LOG1P log1pf
#define MATH_FABS fabsf
#define MATH_FN(name) name##f
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

#include "axrt_fast.inc"
