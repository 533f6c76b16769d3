/* axrt_x86_avx512.c — the AVX-512 (F, DQ and VL) table of float32 kernels
 * (axrt_cpu.h), instantiated from axrt_x86_simd.inc with 16-float vectors:
 * one vector per panel row, an 8-row register tile, masked tails, 8-float
 * (ymm) half vectors for panels of at most 8 outputs; compiled
 * with __attribute__((target)), so no special flags are needed.  Empty (but
 * for a declaration) off x86-64, under -DAXRT_NO_SIMD or without GCC/clang. */
#include <math.h>
#include <stddef.h>

#include "axrt_cpu.h"

#ifdef AXRT_X86_SIMD
#include <immintrin.h>

#define SIMD_FN __attribute__((target("avx512f,avx512dq,avx512vl,fma")))
#define SIMD_INLINE static inline __attribute__((target("avx512f,avx512dq,avx512vl,fma"), always_inline))
#define SIMD_TILE_M 8
/* depthwise blocks of 14 pixels at stride 1 (axrt_x86_depthwise.inc) */
#define DW_WIDE_PIXELS 14
/* and of 7 pixels of two rows (depthwise_row_pair): 14 accumulators too */
#define DW_PAIR_PIXELS 7
#define SIMD_EVEN_TAIL 0
/* a dense layer's reduction taken whole up to 1024 steps, not 4096 (axrt_cpu.h
   dense_k): on a Zen 5 (1 MiB L2) BERT's 128x3072->768 ran at 90-92 % of
   the FMA peak whole, its weight's 128-column block (1.5 MB) past L2, 96-97 %
   in blocks of 768; MiniLM's 128x1536->384 93 -> 97 % (kernel_rates).  AVX2
   on the same core: level either way. */
#define SIMD_DENSE_K 1024
#define SIMD_NAME "avx512"
#define SIMD_ACCESSOR axrt_cpu_ops_avx512
#define SIMD_SUPPORTED()                                                                    \
    (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&             \
     __builtin_cpu_supports("avx512vl"))

#define VW 16
#define V __m512
#define VI __m512i
#define VM __mmask16
#define VT __mmask16

/* Lanes [0, count) set. */
SIMD_INLINE __mmask16 lane_mask(long count)
{
    return (__mmask16)(count >= 16 ? 0xffffu : count <= 0 ? 0u : (1u << count) - 1u);
}

#define V_SET1 _mm512_set1_ps
#define V_ZERO _mm512_setzero_ps
#define V_LOAD _mm512_loadu_ps
#define V_STORE _mm512_storeu_ps
#define V_TAIL(count) lane_mask((long)(count))
#define V_LOADT(p, t) _mm512_maskz_loadu_ps(t, p)
#define V_LOADT_OR(p, t, fill) _mm512_mask_loadu_ps(fill, t, p)
#define V_STORET(p, t, v) _mm512_mask_storeu_ps(p, t, v)
#define V_ZEROT(v, t) _mm512_maskz_mov_ps(t, v)
#define V_BROADCAST(p) _mm512_set1_ps(*(p))
#define V_ADD _mm512_add_ps
#define V_SUB _mm512_sub_ps
#define V_MUL _mm512_mul_ps
#define V_DIV _mm512_div_ps
#define V_SQRT _mm512_sqrt_ps
#define V_FMA _mm512_fmadd_ps
#define V_FNMA _mm512_fnmadd_ps
#define V_MIN _mm512_min_ps
#define V_MAX _mm512_max_ps
#define V_AND _mm512_and_ps
#define V_ANDNOT _mm512_andnot_ps
#define V_OR _mm512_or_ps
#define V_XOR _mm512_xor_ps
#define V_ROUND(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_CVTI _mm512_cvtps_epi32
#define V_SCALE2 _mm512_scalef_ps /* v * 2^floor(n) */
/* table[low 4 bits of idx's representation], per lane (vpermps) */
#define V_LOOKUP16(idx, table) _mm512_permutexvar_ps(_mm512_castps_si512(idx), table)
#define V_FROMI _mm512_castsi512_ps
#define V_BITS _mm512_castps_si512
#define VI_SET1 _mm512_set1_epi32
#define VI_ADD _mm512_add_epi32
#define VI_SUB _mm512_sub_epi32
#define VI_SRAI _mm512_srai_epi32
#define VI_SLLI _mm512_slli_epi32
#define V_LT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define V_LE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ)
#define V_SELECT(m, t, f) _mm512_mask_blend_ps(m, f, t)
/* a comparison's lanes, as the low VW bits */
#define V_MASK_BITS(m) ((unsigned)(m))
#define V_UNORD(x) _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q)
#define V_SIGNM(x) _mm512_movepi32_mask(_mm512_castps_si512(x))
/* the lanes of x that are not 0 (NaN included), as the low VW bits */
#define V_NONZERO_BITS(x) ((unsigned)_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NEQ_UQ))
#define V_HSUM _mm512_reduce_add_ps
#define V_HMAX _mm512_reduce_max_ps
/* lane i: lane idx[i] of v (idx: VW int32, 64-byte aligned) */
#define V_PERMUTE(v, idx) _mm512_permutexvar_ps(_mm512_load_si512((const void *)(idx)), v)

/* Half vectors (axrt_x86_simd.inc): 8 floats in a ymm; VH_FMA is the VEX
   one (the target's fma: every AVX-512 processor has it), VH_LOADT takes a
   tail mask's low 8 lanes (AVX-512VL). */
#define VH __m256
#define VH_LOW _mm512_castps512_ps256
#define VH_WIDE _mm512_zextps256_ps512
#define VH_LOAD _mm256_loadu_ps
#define VH_LOADT(p, t) _mm256_maskz_loadu_ps((__mmask8)(t), p)
#define VH_BROADCAST(p) _mm256_set1_ps(*(p))
#define VH_FMA _mm256_fmadd_ps
/* tile_tail's narrow panels of 8 (axrt_x86_simd.inc): 8 floats in both
   halves; lanes 8-15 moved to 0-7; the mask of lanes 8-15 */
#define V_HALF_TWICE(p) _mm512_broadcast_f32x8(_mm256_loadu_ps(p))
#define V_HIGH_HALF(v) _mm512_shuffle_f32x4(v, v, 0xee)
#define V_HIGH_LANES ((__mmask16)0xff00u)

#include "axrt_x86_simd.inc"

#else
typedef int axrt_x86_avx512_unused; /* ISO C forbids an empty translation unit */
#endif
