/* axrt_x86_avx2.c — the AVX2+FMA table of float32 kernels (axrt_cpu.h),
 * instantiated from axrt_x86_simd.inc with 8-float vectors; compiled with
 * __attribute__((target)), so no special flags are needed.  Empty (but for a
 * declaration) off x86-64, under -DAXRT_NO_SIMD or without GCC/clang. */
#include <math.h>
#include <stddef.h>

#include "axrt_cpu.h"

#ifdef AXRT_X86_SIMD
#include <immintrin.h>

#define SIMD_FN __attribute__((target("avx2,fma")))
#define SIMD_INLINE static inline __attribute__((target("avx2,fma"), always_inline))
#define SIMD_TILE_M 6
/* 32 or 128 rows (R2, BERT) end in 4 + 4 rows rather than 6 + 2: a 2-row
   tile has 4 accumulators, half the 8 that FMA latency x 2 ports needs */
#define SIMD_DENSE_K 4096 /* axrt_cpu.h dense_k (axrt_fast.inc DENSE_K) */
#define SIMD_EVEN_TAIL 1
#define SIMD_NAME "avx2"
#define SIMD_ACCESSOR axrt_cpu_ops_avx2
#define SIMD_SUPPORTED() (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))

#define VW 8
#define V __m256
#define VI __m256i
#define VM __m256
#define VT __m256i

/* Lanes [0, count) set. */
SIMD_INLINE __m256i lane_mask(long count)
{
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(count > 8 ? 8 : count < 0 ? 0 : count)), index);
}

SIMD_INLINE float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

SIMD_INLINE float hmax8(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

#define V_SET1 _mm256_set1_ps
#define V_ZERO _mm256_setzero_ps
#define V_LOAD _mm256_loadu_ps
#define V_STORE _mm256_storeu_ps
#define V_TAIL(count) lane_mask((long)(count))
#define V_LOADT(p, t) _mm256_maskload_ps(p, t)
#define V_LOADT_OR(p, t, fill) _mm256_blendv_ps(fill, _mm256_maskload_ps(p, t), _mm256_castsi256_ps(t))
#define V_STORET(p, t, v) _mm256_maskstore_ps(p, t, v)
#define V_ZEROT(v, t) _mm256_and_ps(v, _mm256_castsi256_ps(t))
#define V_BROADCAST(p) _mm256_broadcast_ss(p)
#define V_ADD _mm256_add_ps
#define V_SUB _mm256_sub_ps
#define V_MUL _mm256_mul_ps
#define V_DIV _mm256_div_ps
#define V_SQRT _mm256_sqrt_ps
#define V_FMA _mm256_fmadd_ps
#define V_FNMA _mm256_fnmadd_ps
#define V_MIN _mm256_min_ps
#define V_MAX _mm256_max_ps
#define V_AND _mm256_and_ps
#define V_ANDNOT _mm256_andnot_ps
#define V_OR _mm256_or_ps
#define V_XOR _mm256_xor_ps
#define V_ROUND(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_CVTI _mm256_cvtps_epi32
#define V_FROMI _mm256_castsi256_ps
#define V_BITS _mm256_castps_si256
#define VI_SET1 _mm256_set1_epi32
#define VI_ADD _mm256_add_epi32
#define VI_SUB _mm256_sub_epi32
#define VI_SRAI _mm256_srai_epi32
#define VI_SLLI _mm256_slli_epi32
#define V_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define V_LE(a, b) _mm256_cmp_ps(a, b, _CMP_LE_OQ)
/* a comparison's lanes, as the low VW bits */
#define V_MASK_BITS(m) ((unsigned)_mm256_movemask_ps(m))
#define V_SELECT(m, t, f) _mm256_blendv_ps(f, t, m)
#define V_UNORD(x) _mm256_cmp_ps(x, x, _CMP_UNORD_Q)
#define V_SIGNM(x) (x) /* blendv reads the sign bit */
#define V_HSUM hsum8
#define V_HMAX hmax8
/* lane i: table's lane picked by the low 3 bits of idx's lane i representation */
#define V_LOOKUP8(idx, table) _mm256_permutevar8x32_ps(table, _mm256_castps_si256(idx))
/* lane i: lane idx[i] of v (idx: VW int32, 32-byte aligned) */
#define V_PERMUTE(v, idx) _mm256_permutevar8x32_ps(v, _mm256_load_si256((const __m256i *)(const void *)(idx)))

#include "axrt_x86_simd.inc"

#else
typedef int axrt_x86_avx2_unused; /* ISO C forbids an empty translation unit */
#endif
